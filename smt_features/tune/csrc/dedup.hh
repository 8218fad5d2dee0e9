// Step 1 of the line search (one line per slope) behind its exact pre-filter; see sweep.hh.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "common.hh"

namespace mertk {

// A[j] = a[first + row[j] - first] for a sentence's n positions, BM[] the maxima of blocks of BLOCK (the
// last one padded with -inf), `top` the largest, `low` the smallest; false when a row lies outside
// first..first+n. Max and min pick one of their operands: no rounding, so both versions give the same.
inline bool GatherScalar(const double *a, const int32_t *row, int64_t first, int64_t n, double *A, double *BM,
                         double &top, double &low) {
  uint64_t outside = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t off = (int64_t)row[j] - first;
    const bool o = (uint64_t)off >= (uint64_t)n;
    outside |= o;
    A[j] = a[first + (o ? 0 : off)];
  }
  const int64_t nb = (n + BLOCK - 1) / BLOCK;
  double l0 = INF, l1 = INF, l2 = INF, l3 = INF;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    l0 = A[j] < l0 ? A[j] : l0;
    l1 = A[j + 1] < l1 ? A[j + 1] : l1;
    l2 = A[j + 2] < l2 ? A[j + 2] : l2;
    l3 = A[j + 3] < l3 ? A[j + 3] : l3;
  }
  for (; j < n; ++j) l0 = A[j] < l0 ? A[j] : l0;
  low = std::min(std::min(l0, l1), std::min(l2, l3));
  for (int64_t q = n; q < nb * BLOCK; ++q) A[q] = -INF;
  top = -INF;
  for (int64_t b = 0; b < nb; ++b) {
    const double *x = A + b * BLOCK;
    const double u0 = std::max(x[0], x[1]), u1 = std::max(x[2], x[3]);
    const double u2 = std::max(x[4], x[5]), u3 = std::max(x[6], x[7]);
    BM[b] = std::max(std::max(u0, u1), std::max(u2, u3));
    top = BM[b] > top ? BM[b] : top;
  }
  return outside == 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) inline bool GatherAvx2(const double *a, const int32_t *row, int64_t first, int64_t n,
                                                       double *A, double *BM, double &top, double &low) {
  const __m256i vfirst = _mm256_set1_epi32((int32_t)first), vlast = _mm256_set1_epi32((int32_t)(n - 1));
  const __m256i zero = _mm256_setzero_si256();
  __m256i bad = zero;
  __m256d vmin = _mm256_set1_pd(INF), vtop = _mm256_set1_pd(-INF);
  const double *base = a + first;
  int64_t j = 0, b = 0;
  for (; j + BLOCK <= n; j += BLOCK, ++b) {
    __m256i off = _mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + j)), vfirst);
    const __m256i o = _mm256_or_si256(_mm256_cmpgt_epi32(zero, off), _mm256_cmpgt_epi32(off, vlast));
    bad = _mm256_or_si256(bad, o);
    off = _mm256_andnot_si256(o, off);
    const __m256d x0 = _mm256_i32gather_pd(base, _mm256_castsi256_si128(off), 8);
    const __m256d x1 = _mm256_i32gather_pd(base, _mm256_extracti128_si256(off, 1), 8);
    _mm256_storeu_pd(A + j, x0);
    _mm256_storeu_pd(A + j + 4, x1);
    const __m256d m = _mm256_max_pd(x0, x1);
    vtop = _mm256_max_pd(vtop, m);
    vmin = _mm256_min_pd(vmin, _mm256_min_pd(x0, x1));
    const __m128d h = _mm_max_pd(_mm256_castpd256_pd128(m), _mm256_extractf128_pd(m, 1));
    BM[b] = _mm_cvtsd_f64(_mm_max_sd(h, _mm_unpackhi_pd(h, h)));
  }
  double t[4], l[4];
  _mm256_storeu_pd(t, vtop);
  _mm256_storeu_pd(l, vmin);
  top = std::max(std::max(t[0], t[1]), std::max(t[2], t[3]));
  low = std::min(std::min(l[0], l[1]), std::min(l[2], l[3]));
  bool ok = _mm256_testz_si256(bad, bad) != 0;
  if (j < n) {  // the last, partial block
    double bm = -INF;
    for (int64_t q = j; q < n; ++q) {
      const int64_t off = (int64_t)row[q] - first;
      const bool o = (uint64_t)off >= (uint64_t)n;
      ok &= !o;
      A[q] = base[o ? 0 : off];
      bm = A[q] > bm ? A[q] : bm;
      low = A[q] < low ? A[q] : low;
    }
    for (int64_t q = n; q < j + BLOCK; ++q) A[q] = -INF;
    BM[b] = bm;
    top = bm > top ? bm : top;
  }
  return ok;
}
#endif

// Step 1 behind the pre-filter (see the top): the kept lines in ka/kb/krow, sentence s's at
// kstart[s]..kstart[s+1]. amin/amax: the lowest and highest line of step 1 over all sentences (the
// reference's aa.min()/aa.max()). Returns the number of lines of step 1. tol = inf keeps every row.
inline int64_t Dedup(Work &w, const double *a, const Plan &plan, const int64_t *offsets, int64_t S, double tol,
                     double &amin, double &amax) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  auto gather = avx2 ? GatherAvx2 : GatherScalar;
#else
  auto gather = GatherScalar;
#endif
  const int64_t N = offsets[S];
  int64_t longest = 0;
  for (int64_t s = 0; s < S; ++s) longest = std::max(longest, offsets[s + 1] - offsets[s]);
  if ((int64_t)w.ka.size() < N) {  // grown once, then reused through raw pointers
    w.ka.resize(N);
    w.kb.resize(N);
    w.krow.resize(N);
  }
  if ((int64_t)w.A.size() < longest + BLOCK) {
    w.A.resize(longest + BLOCK);
    w.BM.resize(longest / BLOCK + 2);
    w.mask.resize(longest / BLOCK + 2);
  }
  w.kstart.resize(S + 1);
  double *ka = w.ka.data(), *kb = w.kb.data(), *A = w.A.data(), *BM = w.BM.data();
  int64_t *krow = w.krow.data(), *kstart = w.kstart.data();
  uint8_t *mask = w.mask.data();
  int64_t lines = 0, k = 0;
  double hi_a = -INF, lo_a = INF;
  for (int64_t s = 0; s < S; ++s) {
    kstart[s] = k;
    const int64_t first = offsets[s], n = offsets[s + 1] - first;
    if (n <= 0) continue;
    if (s + 1 < S) {  // the next sentence's intercepts (read in slope order, random within it) and slopes (read
                      // where a row passes): fetch them now
      for (const double *v : {a, plan.b}) {
        const char *p0 = reinterpret_cast<const char *>(v + offsets[s + 1]);
        const char *p1 = reinterpret_cast<const char *>(v + offsets[s + 2]);
        for (const char *p = p0; p < p1; p += 64) __builtin_prefetch(p);
      }
    }
    const int32_t *row = plan.row + first;
    const uint32_t *group = plan.group + first;
    const int64_t groups = plan.groups[s];
    double top, low;  // the highest and the lowest intercept
    if (!gather(a, row, first, n, A, BM, top, low) || groups < 1 || groups > n) throw std::invalid_argument("plan");
    const int64_t nb = (n + BLOCK - 1) / BLOCK;
    lines += groups;
    hi_a = top > hi_a ? top : hi_a;
    if (groups < n && low < lo_a) {  // the lowest group maximum (at least `low`: needed only below lo_a)
      low = INF;
      for (int64_t j = 0; j < n;) {
        const int64_t e = j + group[j];
        if (e <= j || e > n) throw std::invalid_argument("plan");
        double gm = A[j];
        for (++j; j < e; ++j) gm = A[j] > gm ? A[j] : gm;
        low = gm < low ? gm : low;
      }
    }
    lo_a = low < lo_a ? low : lo_a;
    // the rows within tol of the running maximum from either side (blocks below it skipped), as bit masks
    if (tol == INF) {
      std::memset(mask, 0xff, (std::size_t)nb);
    } else {
      std::memset(mask, 0, (std::size_t)nb);
      double run = -INF;
      for (int64_t b = 0; b < nb; ++b) {
        if (BM[b] < run - tol) continue;
        unsigned m = 0;
        for (int j = 0; j < BLOCK; ++j) {
          const double x = A[b * BLOCK + j];
          m |= (unsigned)(x >= run - tol) << j;
          run = x > run ? x : run;
        }
        mask[b] |= (uint8_t)m;
      }
      run = -INF;
      for (int64_t b = nb; b-- > 0;) {
        if (BM[b] < run - tol) continue;
        unsigned m = 0;
        for (int j = BLOCK; j-- > 0;) {
          const double x = A[b * BLOCK + j];
          m |= (unsigned)(x >= run - tol) << j;
          run = x > run ? x : run;
        }
        mask[b] |= (uint8_t)m;
      }
    }
    // step 1 among the rows that pass: per slope the highest, the lowest row among equals
    bool open = false;
    for (int64_t b = 0; b < nb; ++b) {
      unsigned m = mask[b];
      while (m) {
        const int64_t j = b * BLOCK + __builtin_ctz(m);
        m &= m - 1;
        if (j >= n) break;
        const double bv = plan.b[first + j], av = A[j];
        const int64_t r = row[j];
        if (open && kb[k - 1] == bv) {
          if (av > ka[k - 1] || (av == ka[k - 1] && r < krow[k - 1])) {
            ka[k - 1] = av;
            krow[k - 1] = r;
          }
        } else {
          ka[k] = av;
          kb[k] = bv;
          krow[k] = r;
          ++k;
          open = true;
        }
      }
    }
  }
  kstart[S] = k;
  amin = lo_a;
  amax = hi_a;
  return lines;
}

}  // namespace mertk

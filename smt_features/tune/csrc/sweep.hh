// The line search of MERT for all sentences at once: envelopes and the summed BLEU statistics of every
// γ interval, as smt_features/tune/envelope.py (the reference) computes them, bit for bit.
//
// The reference's steps, and what is done here:
//   1. one line per (sentence, slope): the highest, the lowest row among equal ones;
//   2. the "staircase" filter: lines lifted by sentence (fl(a + s * big), big = 2 (max a - min a) + 1,
//      over the lines of step 1) are kept where they reach the running maximum from the left or from
//      the right (numpy's maximum.accumulate over all sentences);
//   3. peeling, in simultaneous rounds, of points on or below the chord of their neighbours (a sentence's
//      rounds do not depend on the other sentences, so each is peeled on its own);
//   4. thresholds (a_l - a_r) / (b_r - b_l) sorted stably, and the cumulative statistics of the intervals
//      (exact in any order: the statistics are integers, which the caller checks).
// Same operations on the same doubles (built with -ffp-contract=off: no fused multiply-add).
//
// Speed: step 1 runs behind a pre-filter (Dedup). Step 2 can keep a row only if its lifted intercept
// reaches a running maximum of the lifted intercepts; rounding is monotone and below `tol`, so a row
// more than `tol` below the running maximum of the raw intercepts (before it in slope order, or after
// it) is dropped by step 2 whatever big is, and the maxima themselves are kept: step 2 sees the same
// running maxima among the rows that pass. A row of a group of equal slopes that ties with the group's
// highest passes whenever that one does, so step 1 among the rows that pass picks the same line. Blocks
// of rows whose highest intercept is below the running maximum are skipped.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace mertk {

const int NUM_STATS = 9;
const int BLOCK = 8;
const double INF = std::numeric_limits<double>::infinity();

// The rows of each sentence sorted by slope (sort_rows() makes it; one flat buffer, 8-byte aligned):
//   row[N] int32 (the pool row at each position) | b[N] double (its slope) | group[N] uint32 (at the first
//   position of a group of equal slopes the group's size, else 0) | groups[S] int64 (groups per sentence)
inline std::size_t Align8(std::size_t x) { return (x + 7) & ~std::size_t(7); }
inline std::size_t PlanBytes(int64_t N, int64_t S) {
  return Align8(4 * (std::size_t)N) + 8 * (std::size_t)N + Align8(4 * (std::size_t)N) + 8 * (std::size_t)S;
}
struct Plan {
  const int32_t *row;
  const double *b;
  const uint32_t *group;
  const int64_t *groups;
  Plan(const void *buf, int64_t N) {
    const char *p = static_cast<const char *>(buf);
    row = reinterpret_cast<const int32_t *>(p);
    p += Align8(4 * (std::size_t)N);
    b = reinterpret_cast<const double *>(p);
    p += 8 * (std::size_t)N;
    group = reinterpret_cast<const uint32_t *>(p);
    p += Align8(4 * (std::size_t)N);
    groups = reinterpret_cast<const int64_t *>(p);
  }
};

struct SweepOut {
  int64_t num_intervals = 0;
  bool empty_range = false;
  std::vector<int64_t> idx;         // the intervals that may win (in order)
  std::vector<double> cum, cl, cr;  // their summed statistics (k x 9) and bounds
};

// log of a non-negative integer-valued statistic, cached (for the approximate BLEU only)
struct LogTable {
  std::vector<double> t;
  double operator()(double x) {
    if (x >= 0 && x < 1e7) {
      const std::size_t i = (std::size_t)x;
      if ((double)i == x) {
        if (i >= t.size()) {
          const std::size_t old = t.size();
          t.resize(std::max<std::size_t>(i + 1, 2 * old));
          for (std::size_t j = old; j < t.size(); ++j) t[j] = std::log((double)j);
        }
        return t[i];
      }
    }
    return std::log(x);
  }
};

// log of bleu_from_stats / 100 (-inf for BLEU 0), up to the last bits of log
inline double ApproxLogBleu(const double *s, LogTable &lg) {
  double logp = 0.0;
  for (int n = 0; n < 4; ++n) {
    const double m = s[2 * n], t = s[2 * n + 1];
    if (!(m > 0)) return -INF;
    logp += lg(m) - (t > 0 ? lg(t) : 0.0);
  }
  const double t1 = s[1], r = s[8];
  return logp / 4.0 + (t1 > 0 ? std::min(0.0, 1.0 - r / t1) : 0.0);
}

// Buffers reused between calls (one set per thread), so that no call pays page faults for fresh ones.
struct Work {
  std::vector<double> A, BM, ka, kb, delta, logb, g;
  std::vector<int64_t> krow, kstart, hull, hstart, cur, nxt;
  std::vector<char> keep, below, valid;
  std::vector<uint8_t> mask;
  std::vector<uint64_t> key, key2;
  std::vector<int32_t> ev, ev2;
  std::vector<int64_t> count;
  double tol = INF;  // the last call's pre-filter tolerance (a first guess for the next call)
  LogTable lg;
};

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

// Steps 2 and 3: the envelope's lines of each sentence in w.hull (sentence s's at hstart[s]..hstart[s+1]),
// as indices into ka/kb/krow; their statistics rows are prefetched.
inline void Envelopes(Work &w, int64_t S, int64_t lines, double amin, double amax, const double *stats) {
  const int64_t K = w.kstart[S];
  const double *ka = w.ka.data(), *kb = w.kb.data();
  const int64_t *kstart = w.kstart.data(), *krow = w.krow.data();
  w.keep.assign(K, 1);
  char *keep = w.keep.data();
  if (lines >= 3) {  // 2. the staircase filter
    const double big = 2.0 * (amax - amin) + 1.0;
    double run = -INF;
    for (int64_t s = 0; s < S; ++s) {
      const double lift = (double)s * big;
      for (int64_t k = kstart[s]; k < kstart[s + 1]; ++k) {
        const double fwd = ka[k] + lift;
        run = fwd > run ? fwd : run;
        keep[k] = fwd >= run;
      }
    }
    run = -INF;
    for (int64_t s = S - 1; s >= 0; --s) {
      const double lift = (double)s * big;
      for (int64_t k = kstart[s + 1] - 1; k >= kstart[s]; --k) {
        const double bwd = ka[k] - lift;
        run = bwd > run ? bwd : run;
        keep[k] |= bwd >= run;
      }
    }
  }
  w.hull.clear();
  w.hstart.resize(S + 1);
  std::vector<int64_t> &cur = w.cur;
  for (int64_t s = 0; s < S; ++s) {  // 3. peeling
    w.hstart[s] = (int64_t)w.hull.size();
    cur.clear();
    for (int64_t k = kstart[s]; k < kstart[s + 1]; ++k)
      if (keep[k]) cur.push_back(k);
    while (cur.size() >= 3) {
      const std::size_t n = cur.size();
      w.below.assign(n, 0);
      bool any = false;
      for (std::size_t j = 1; j + 1 < n; ++j) {
        const int64_t i0 = cur[j - 1], i1 = cur[j], i2 = cur[j + 1];
        const double lhs = (ka[i1] - ka[i0]) * (kb[i2] - kb[i0]);
        const double rhs = (ka[i2] - ka[i0]) * (kb[i1] - kb[i0]);
        if (lhs <= rhs) {
          w.below[j] = 1;
          any = true;
        }
      }
      if (!any) break;
      w.nxt.clear();
      for (std::size_t j = 0; j < n; ++j)
        if (!w.below[j]) w.nxt.push_back(cur[j]);
      cur.swap(w.nxt);
    }
    for (int64_t k : cur) {
      const double *st = stats + krow[k] * NUM_STATS;
      __builtin_prefetch(st);
      __builtin_prefetch(st + NUM_STATS - 1);
      w.hull.push_back(k);
    }
  }
  w.hstart[S] = (int64_t)w.hull.size();
}

// A double's bits as an unsigned key in the same order (-0.0 and 0.0 equal, NaN last as numpy sorts it).
inline uint64_t SortKey(double g) {
  if (g == 0.0) g = 0.0;
  if (std::isnan(g)) g = std::numeric_limits<double>::quiet_NaN();
  uint64_t u;
  std::memcpy(&u, &g, sizeof(u));
  return (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
}

// Event ids 0..E-1 in increasing key order, equal keys in id order (a stable LSD radix sort, 11-bit digits).
inline void SortEvents(Work &w, int64_t E) {
  const int BITS = 11, BUCKETS = 1 << BITS;
  w.ev.resize(E);
  w.ev2.resize(E);
  w.key2.resize(E);
  w.count.resize(BUCKETS + 1);
  for (int64_t e = 0; e < E; ++e) w.ev[e] = (int32_t)e;
  uint64_t *key = w.key.data(), *key2 = w.key2.data();
  int32_t *ev = w.ev.data(), *ev2 = w.ev2.data();
  int64_t *count = w.count.data();
  uint64_t diff = 0;
  for (int64_t e = 1; e < E; ++e) diff |= key[e] ^ key[0];
  for (int shift = 0; shift < 64; shift += BITS) {
    if (((diff >> shift) & (BUCKETS - 1)) == 0) continue;  // every key has the same digit here
    std::fill(count, count + BUCKETS + 1, 0);
    for (int64_t e = 0; e < E; ++e) ++count[((key[e] >> shift) & (BUCKETS - 1)) + 1];
    for (int d = 0; d < BUCKETS; ++d) count[d + 1] += count[d];
    for (int64_t e = 0; e < E; ++e) {
      const int64_t p = count[(key[e] >> shift) & (BUCKETS - 1)]++;
      key2[p] = key[e];
      ev2[p] = ev[e];
    }
    std::swap(key, key2);
    std::swap(ev, ev2);
  }
  if (ev != w.ev.data()) std::memcpy(w.ev.data(), ev, (std::size_t)E * sizeof(int32_t));
}

// The whole line search but the choice: see the top of this file and SweepOut.
inline void Sweep(Work &w, const double *a, const Plan &plan, const int64_t *offsets, int64_t S,
                  const double *stats, double lo, double hi, double min_interval, double margin, SweepOut &out) {
  // the pre-filter with the last call's tolerance; again when it was too small for this call
  double amin, amax;
  int64_t lines = Dedup(w, a, plan, offsets, S, w.tol, amin, amax);
  // rounding of a + lift (|lift| <= S * big) is far below this
  const double mag = std::max(std::fabs(amin), std::fabs(amax)) + (double)S * (2.0 * (amax - amin) + 1.0);
  const double need = std::isfinite(mag) ? std::ldexp(mag, -48) : INF;
  if (lines < 3 && w.tol != INF) {  // no staircase filter at all: every line
    w.tol = INF;
    lines = Dedup(w, a, plan, offsets, S, INF, amin, amax);
  } else if (w.tol < need) {
    w.tol = 2 * need;
    lines = Dedup(w, a, plan, offsets, S, w.tol, amin, amax);
  } else if (w.tol > 64 * need) {
    w.tol = 2 * need;  // a tighter filter next time
  }
  Envelopes(w, S, lines, amin, amax, stats);
  // 4. thresholds and statistic changes, in (sentence, slope) order
  const double *ka = w.ka.data(), *kb = w.kb.data();
  const int64_t *krow = w.krow.data(), *hull = w.hull.data(), *hstart = w.hstart.data();
  double initial[NUM_STATS] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  int64_t E = 0;
  for (int64_t s = 0; s < S; ++s) E += std::max<int64_t>(0, hstart[s + 1] - hstart[s] - 1);
  w.key.resize(E);
  w.g.resize(E);
  w.delta.resize((std::size_t)E * NUM_STATS);
  int64_t e = 0;
  for (int64_t s = 0; s < S; ++s) {
    if (hstart[s] == hstart[s + 1]) continue;
    const double *prev = stats + krow[hull[hstart[s]]] * NUM_STATS;
    for (int q = 0; q < NUM_STATS; ++q) initial[q] += prev[q];
    for (int64_t h = hstart[s]; h + 1 < hstart[s + 1]; ++h, ++e) {
      const int64_t l = hull[h], r = hull[h + 1];
      const double *next = stats + krow[r] * NUM_STATS;
      w.g[e] = (ka[l] - ka[r]) / (kb[r] - kb[l]);
      w.key[e] = SortKey(w.g[e]);
      double *d = &w.delta[(std::size_t)e * NUM_STATS];
      for (int q = 0; q < NUM_STATS; ++q) d[q] = next[q] - prev[q];
      prev = next;
    }
  }
  const double *g = w.g.data();
  SortEvents(w, E);
  // the intervals: bounds, validity, approximate log BLEU
  const int64_t M = E + 1;
  out.num_intervals = M;
  w.logb.resize(M);
  w.valid.resize(M);
  const int32_t *ev = w.ev.data();
  auto bounds = [&](int64_t t, double &L, double &R) {
    const double left = t == 0 ? -INF : g[ev[t - 1]], right = t == E ? INF : g[ev[t]];
    // np.maximum / np.minimum (a NaN threshold, from an overflow, propagates as there)
    L = std::isnan(left) ? left : (left > lo ? left : lo);
    R = std::isnan(right) ? right : (right < hi ? right : hi);
  };
  double c[NUM_STATS];
  std::memcpy(c, initial, sizeof(c));
  bool any_valid = false;
  for (int64_t t = 0; t < M; ++t) {
    if (t > 0) {
      const double *d = &w.delta[(std::size_t)ev[t - 1] * NUM_STATS];
      for (int q = 0; q < NUM_STATS; ++q) c[q] += d[q];
    }
    double L, R;
    bounds(t, L, R);
    const double width = R - L;
    w.valid[t] = (width > min_interval) || (std::isinf(width) && width > 0);
    any_valid |= w.valid[t] != 0;
    w.logb[t] = ApproxLogBleu(c, w.lg);
  }
  if (!any_valid) {
    for (int64_t t = 0; t < M; ++t) {
      double L, R;
      bounds(t, L, R);
      w.valid[t] = (R - L) >= 0;
      any_valid |= w.valid[t] != 0;
    }
    if (!any_valid) {
      out.empty_range = true;
      return;
    }
  }
  double best = -INF;
  for (int64_t t = 0; t < M; ++t)
    if (w.valid[t] && w.logb[t] > best) best = w.logb[t];
  // BLEU = 100 exp(logb): candidates within 1e-9 + margin BLEU points of the best
  const double floor_bleu = 100.0 * std::exp(best) - 1e-9 - margin;
  const double floor_log = floor_bleu > 0 ? std::log(floor_bleu / 100.0) : -INF;
  std::memcpy(c, initial, sizeof(c));
  for (int64_t t = 0; t < M; ++t) {
    if (t > 0) {
      const double *d = &w.delta[(std::size_t)ev[t - 1] * NUM_STATS];
      for (int q = 0; q < NUM_STATS; ++q) c[q] += d[q];
    }
    if (!w.valid[t] || (w.logb[t] < floor_log && floor_bleu > 0)) continue;
    double L, R;
    bounds(t, L, R);
    out.idx.push_back(t);
    out.cum.insert(out.cum.end(), c, c + NUM_STATS);
    out.cl.push_back(L);
    out.cr.push_back(R);
  }
}

}  // namespace mertk

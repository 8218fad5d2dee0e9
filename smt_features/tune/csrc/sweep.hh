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
#include <cstring>
#include <limits>
#include <vector>

#include "common.hh"
#include "dedup.hh"

namespace mertk {

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

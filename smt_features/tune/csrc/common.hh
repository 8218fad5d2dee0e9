// What the compiled line search's parts share: constants, the plan (rows sorted by slope), the output,
// the approximate BLEU and the reused buffers. See sweep.hh for the algorithm.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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

}  // namespace mertk

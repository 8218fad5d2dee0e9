// Compiled stack search of smt_features.decode.decoder.Decoder._search, calling KenLM directly.
//
// The Python side (smt_features/fast_search.py) registers translation options once (their
// weighted stateless score, future score, score bound, target word ids, per-LM model words and
// per-position LM bounds, all computed by Decoder._make_option) and, per sentence, passes the
// option ids of every source span in the order Decoder.collect_options gives them. This file
// re-implements the search loop statement by statement: the same expansion order, future-cost
// table, distortion-limit rule, recombination (coverage, last source end, LM state), histogram
// and threshold pruning, early discarding, bound pruning with word-by-word abandoning, LM caches
// (per state and phrase, per state and word, </s> per state), state numbering, statistics and
// recombination arcs, with the same floating-point operations in the same order, so that scores,
// feature values and n-best lists are bit-identical to the Python search. With a lexicalized
// reordering feature (Params::use_lr) it follows smt_features/decode/stack_search_lr.py: the span's
// orientation adds the previous option's forward value to the span's base and each option's own
// backward value to its stateless score; the recombination key adds the start of the last source
// phrase and the id of its option's forward values.
//
// Built by third_party/build_search.sh (needs -DKENLM_MAX_ORDER to match the KenLM libraries).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "lm/model.hh"
#include "lm/state.hh"
#include "lm/virtual_interface.hh"
#include "util/exception.hh"

#include "flat_map.hh"

namespace smtsearch {

typedef lm::ngram::State LMState;
const double NEG_INF = -std::numeric_limits<double>::infinity();
const int MAX_WORDS = 512;  // coverage bitsets of up to 8 x 64 bits

// ------------------------------------------------------------------ options and the core

struct OptRec {
  double sl, fut, ub;  // O_SL, O_FUT, O_UB
  uint32_t tid;        // O_TID
  uint32_t off;        // first entry of this option in the per-word pools
  uint32_t nw;         // number of target words
  bool has_lr;         // O_LR is not None
  double lr[6];        // O_LR: six lexicalized-reordering log values
  int32_t fid;         // O_FID: id of lr[3..5] (0 without them)
};

enum Orientation { MONO = 0, SWAP = 1, DISC = 2 };

// smt_features.model.reordering.orientation
inline int OrientationOf(int prev_start, int prev_end, int start, int end) {
  if (prev_end < 0) return start == 0 ? MONO : DISC;
  if (start == prev_end + 1) return MONO;
  if (end + 1 == prev_start) return SWAP;
  return DISC;
}

class Core {
 public:
  explicit Core(double ln10) : ln10_(ln10) {}

  // load_method: util::LoadMethod (0 lazy, 1 populate-or-lazy, 2 populate-or-read, 3 read, 4 parallel read)
  void AddModel(const std::string &path, int load_method) {
    lm::ngram::Config config;
    config.messages = nullptr;  // no "faster if you build a binary" note, no progress bar
    config.load_method = static_cast<util::LoadMethod>(load_method);
    std::unique_ptr<lm::base::Model> m(lm::ngram::LoadVirtual(path.c_str(), config));
    if (m->StateSize() != sizeof(LMState))
      throw std::runtime_error("unexpected KenLM state size for " + path +
                               " (was KenLM built with the same KENLM_MAX_ORDER?)");
    eos_.push_back(m->BaseVocabulary().Index("</s>"));
    models_.push_back(std::move(m));
  }

  std::size_t NumLMs() const { return models_.size(); }

  std::vector<std::unique_ptr<lm::base::Model>> models_;
  std::vector<lm::WordIndex> eos_;
  std::vector<OptRec> opts_;
  std::vector<uint32_t> wids_;       // O_WIDS, per word
  std::vector<lm::WordIndex> lmw_;   // O_LMW as model word indices, per word x LM
  std::vector<double> rest_;         // O_REST, per word
  double ln10_;
};

// ------------------------------------------------------------------ search data

struct Params {
  int stack;
  double beam, ed;
  int dl;
  double w_d;
  std::vector<double> w_lms;
  bool keep_arcs;
  bool use_lr = false;
  double w_lr[6] = {0, 0, 0, 0, 0, 0};
};

struct Stats {
  long long expanded = 0, created = 0, recombined = 0, discarded = 0, pruned = 0, lm_misses = 0,
            lm_states = 0, bounded = 0, abandoned = 0;
};

// A hypothesis (the Python list H_*), its coverage kept apart (templated width).
struct Hyp {
  double total, score, dval;
  int32_t last, sid, prev, opt, start;
  int32_t arc_first, arc_last, arc_next;  // arcs: a singly linked list in insertion order
};

enum Status { FOUND = 0, NO_HYPOTHESIS = 1, EMPTY_FINALS = 2 };

struct Result {
  std::vector<Hyp> hyps;
  std::vector<double> hyp_lm;  // n_lm values per hypothesis (H_LM)
  std::vector<int32_t> finals;
  Stats stats;
  Status status = NO_HYPOTHESIS;
};

template <int W>
struct Cov {
  uint64_t w[W];
  Cov() {
    for (int i = 0; i < W; ++i) w[i] = 0;
  }
  bool Test(int i) const { return (w[i >> 6] >> (i & 63)) & 1ULL; }
  void Set(int i) { w[i >> 6] |= 1ULL << (i & 63); }
  bool Intersects(const Cov &o) const {
    for (int i = 0; i < W; ++i)
      if (w[i] & o.w[i]) return true;
    return false;
  }
  Cov Or(const Cov &o) const {
    Cov r;
    for (int i = 0; i < W; ++i) r.w[i] = w[i] | o.w[i];
    return r;
  }
  bool operator==(const Cov &o) const {
    for (int i = 0; i < W; ++i)
      if (w[i] != o.w[i]) return false;
    return true;
  }
  int FirstZero() const {
    for (int i = 0; i < W; ++i) {
      uint64_t z = ~w[i];
      if (z) return i * 64 + __builtin_ctzll(z);
    }
    return W * 64;
  }
  uint64_t Hash() const {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < W; ++i) h = mix64(h ^ w[i]) + 0x632be59bd9b4e019ULL;
    return h;
  }
};

template <int W>
struct CovHash {
  uint64_t operator()(const Cov<W> &c) const { return c.Hash(); }
};

template <int W>
struct RKey {  // recombination key: coverage, last source end, LM state id (+ reordering: start, forward id)
  Cov<W> cov;
  int32_t sid = 0;
  int32_t last = 0;
  int32_t start = 0;
  int32_t fid = 0;
  bool operator==(const RKey &o) const {
    return sid == o.sid && last == o.last && start == o.start && fid == o.fid && cov == o.cov;
  }
};

template <int W>
struct RKeyHash {
  uint64_t operator()(const RKey<W> &k) const {
    return mix64(k.cov.Hash() ^ ((uint64_t)(uint32_t)k.sid << 20) ^ (uint64_t)(uint32_t)k.last ^
                 ((uint64_t)(uint32_t)k.start << 40) ^ ((uint64_t)(uint32_t)k.fid << 50));
  }
};

// ------------------------------------------------------------------ the search

template <int W>
class Searcher {
 public:
  Searcher(const Core &core, int n, const Params &P, Result &R)
      : core_(core), n_(n), n_lm_((int)core.NumLMs()), P_(P), R_(R), hyps_(R.hyps), hyp_lm_(R.hyp_lm) {}

  void Run(const std::vector<int32_t> &spans_flat) {
    const int n = n_;
    const int n_lm = n_lm_;
    ReadSpans(spans_flat);
    FutureCostTable();
    for (int i = 0; i < n; ++i) full_.Set(i);

    // LM states: the begin state is id 0
    tmp_states_.resize(n_lm);
    tmp_raws_.resize(n_lm);
    walk_raws_.resize(n_lm);
    lmraw_.resize(n_lm);
    for (int li = 0; li < n_lm; ++li) core_.models_[li]->BeginSentenceWrite(&tmp_states_[li]);
    Intern();

    // stacks
    const int S = P_.stack;
    const std::size_t tolerated = (std::size_t)(2 * S - 1);
    const double beam = P_.beam;
    const double ed = P_.ed;
    const bool use_ed = ed != NEG_INF;
    const int dl = P_.dl;
    const double w_d = P_.w_d;
    const bool keep_arcs = P_.keep_arcs;
    const bool use_lr = P_.use_lr;
    stacks_.assign(n + 1, std::vector<int32_t>());
    maps_.clear();
    for (int k = 0; k <= n; ++k) maps_.emplace_back(16);
    best_.assign(n + 1, NEG_INF);
    thr_.assign(n + 1, NEG_INF);

    // root: [fc_span[0][n - 1], 0.0, 0, -1, 0, None, None, (), 0.0, None, -1]
    for (int li = 0; li < n_lm; ++li) lmraw_[li] = 0.0;
    int32_t root = NewHyp(fc_[0 * n + (n - 1)], 0.0, Cov<W>(), -1, 0, -1, -1, 0.0, -1);
    AddToStack(0, root);
    best_[0] = hyps_[root].total;
    Stats &st = R_.stats;

    for (int k = 0; k < n; ++k) {
      if (stacks_[k].empty()) continue;
      std::vector<int32_t> hs = Prune(k);
      for (int32_t hidx : hs) {
        ++st.expanded;
        const double score = hyps_[hidx].score;
        const Cov<W> cov = covs_[hidx];
        const int last = hyps_[hidx].last;
        const int32_t sid = hyps_[hidx].sid;
        const int prev_start = hyps_[hidx].start;
        const OptRec *prev_opt = hyps_[hidx].opt >= 0 ? &core_.opts_[hyps_[hidx].opt] : nullptr;
        const uint64_t sid_base = (uint64_t)(uint32_t)sid << 32;
        const int first_gap = cov.FirstZero();
        for (int start = first_gap; start < n; ++start) {
          if (cov.Test(start)) continue;
          const int d = start - last - 1;
          const bool leftmost = start == first_gap;
          if (dl >= 0) {
            if (d > dl) break;  // further starts jump further
            if (-d > dl) continue;
            if (!leftmost && start - first_gap + 1 > dl) break;
          }
          const int absd = d >= 0 ? d : -d;
          const double base = score - w_d * (double)absd;
          const double dval = -(double)absd;
          for (const Span &sp : spans_from_[start]) {
            if (cov.Intersects(sp.mask)) break;  // longer spans overlap too
            if (dl >= 0 && !leftmost && sp.end - first_gap + 1 > dl) break;
            int ori = MONO;
            double sbase = base;  // base with the previous option's forward reordering value
            double w_b = 0.0;
            if (use_lr) {
              ori = OrientationOf(prev_start, last, start, sp.end);
              if (prev_opt != nullptr && prev_opt->has_lr) sbase = base + P_.w_lr[3 + ori] * prev_opt->lr[3 + ori];
              w_b = P_.w_lr[ori];
            }
            const Cov<W> new_cov = cov.Or(sp.mask);
            const double fc = Future(new_cov);
            const int k2 = k + sp.slen;
            const bool complete = new_cov == full_;
            double need = thr_[k2] - sbase - fc;
            for (uint32_t oi = sp.ob; oi < sp.oe; ++oi) {
              const POpt &o = popts_[oi];
              if (use_ed) {  // options sorted by future score
                if (o.fut < need + ed) {
                  ++st.discarded;
                  break;
                }
                if (o.ub < need) {
                  ++st.bounded;
                  continue;
                }
              } else if (o.ub < need) {  // options sorted by this bound
                ++st.bounded;
                break;
              }
              const OptRec &orec = core_.opts_[o.oid];
              const double slb = (use_lr && orec.has_lr) ? o.sl + w_b * orec.lr[ori] : o.sl;
              const uint64_t key = sid_base + o.tid;
              int32_t pe;
              const int32_t *found = lm_cache_.Find(key);
              if (found) {
                pe = *found;
              } else {
                ++st.lm_misses;
                pe = Walk(sid, o, need - slb);
                if (pe < 0) {
                  ++st.abandoned;
                  continue;
                }
                lm_cache_.Insert(key, pe);
              }
              const int32_t nsid = pc_sid_[pe];
              double gain = slb + pc_w_[pe];
              if (complete) {
                Eos(nsid);
                gain += eos_w_[nsid];
              }
              if (gain < need) {
                ++st.discarded;
                continue;
              }
              const double new_score = sbase + gain;
              const double total = new_score + fc;
              if (complete) {
                for (int li = 0; li < n_lm; ++li)
                  lmraw_[li] = pc_raw_[(std::size_t)pe * n_lm + li] + eos_raw_[(std::size_t)nsid * n_lm + li];
              } else {
                for (int li = 0; li < n_lm; ++li) lmraw_[li] = pc_raw_[(std::size_t)pe * n_lm + li];
              }
              RKey<W> rk;
              rk.cov = new_cov;
              rk.sid = nsid;
              rk.last = sp.end;
              if (use_lr) {
                rk.start = start;
                rk.fid = orec.fid;
              }
              const int32_t *posp = maps_[k2].Find(rk);
              if (posp == nullptr) {
                ++st.created;
                int32_t h = NewHyp(total, new_score, new_cov, sp.end, nsid, hidx, o.oid, dval, start);
                AddToStack(k2, h);
                if (total > best_[k2]) {
                  best_[k2] = total;
                  if (total + beam > thr_[k2]) {
                    thr_[k2] = total + beam;
                    need = thr_[k2] - sbase - fc;
                  }
                }
                if (stacks_[k2].size() > tolerated) {
                  Prune(k2);
                  need = thr_[k2] - sbase - fc;
                }
              } else {
                const int32_t pos = *posp;
                const int32_t old = stacks_[k2][pos];
                ++st.recombined;
                if (total > hyps_[old].total) {
                  int32_t h = NewHyp(total, new_score, new_cov, sp.end, nsid, hidx, o.oid, dval, start);
                  if (keep_arcs) {  // the new one takes over the old one's arcs, then the old one
                    Hyp &oh = hyps_[old];
                    Hyp &nh = hyps_[h];
                    nh.arc_first = oh.arc_first;
                    nh.arc_last = oh.arc_last;
                    oh.arc_first = oh.arc_last = -1;
                    oh.arc_next = -1;
                    if (nh.arc_first < 0) {
                      nh.arc_first = old;
                    } else {
                      hyps_[nh.arc_last].arc_next = old;
                    }
                    nh.arc_last = old;
                  }
                  stacks_[k2][pos] = h;
                  if (total > best_[k2]) {
                    best_[k2] = total;
                    if (total + beam > thr_[k2]) {
                      thr_[k2] = total + beam;
                      need = thr_[k2] - sbase - fc;
                    }
                  }
                } else if (keep_arcs) {
                  int32_t loser = NewHyp(total, new_score, new_cov, sp.end, nsid, hidx, o.oid, dval, start);
                  Hyp &oh = hyps_[old];
                  if (oh.arc_first < 0) {
                    oh.arc_first = loser;
                  } else {
                    hyps_[oh.arc_last].arc_next = loser;
                  }
                  oh.arc_last = loser;
                }
              }
            }
          }
        }
      }
    }
    st.lm_states = (long long)num_states_;
    if (stacks_[n].empty()) {
      R_.status = NO_HYPOTHESIS;
      return;
    }
    R_.finals = Prune(n);
    R_.status = R_.finals.empty() ? EMPTY_FINALS : FOUND;
  }

 private:
  struct POpt {
    double ub, fut, sl;
    uint32_t tid;
    int32_t oid;
  };
  struct Span {
    int end, slen;
    Cov<W> mask;
    uint32_t ob, oe;  // range in popts_
  };

  void ReadSpans(const std::vector<int32_t> &flat) {
    const int n = n_;
    spans_from_.assign(n, std::vector<Span>());
    std::size_t i = 0;
    const std::size_t num_opts = core_.opts_.size();
    while (i < flat.size()) {
      if (i + 3 > flat.size()) throw std::invalid_argument("truncated span list");
      int start = flat[i], end = flat[i + 1], cnt = flat[i + 2];
      i += 3;
      if (start < 0 || end < start || end >= n || cnt < 0 || i + (std::size_t)cnt > flat.size())
        throw std::invalid_argument("bad span in span list");
      Span sp;
      sp.end = end;
      sp.slen = end - start + 1;
      for (int b = start; b <= end; ++b) sp.mask.Set(b);
      sp.ob = (uint32_t)popts_.size();
      for (int c = 0; c < cnt; ++c, ++i) {
        int32_t id = flat[i];
        if (id < 0 || (std::size_t)id >= num_opts) throw std::invalid_argument("unknown option id");
        const OptRec &r = core_.opts_[id];
        POpt p;
        p.ub = r.ub;
        p.fut = r.fut;
        p.sl = r.sl;
        p.tid = r.tid;
        p.oid = id;
        popts_.push_back(p);
      }
      sp.oe = (uint32_t)popts_.size();
      if (cnt > 0) {
        std::vector<Span> &row = spans_from_[start];
        if (!row.empty() && row.back().end >= end) throw std::invalid_argument("spans out of order");
        row.push_back(sp);
      }
    }
  }

  // Decoder.future_cost_table
  void FutureCostTable() {
    const int n = n_;
    fc_.assign((std::size_t)n * n, NEG_INF);
    for (int i = 0; i < n; ++i) {
      for (const Span &sp : spans_from_[i]) {
        double best = popts_[sp.ob].fut;
        for (uint32_t oi = sp.ob + 1; oi < sp.oe; ++oi)
          if (popts_[oi].fut > best) best = popts_[oi].fut;
        double &cell = fc_[(std::size_t)i * n + sp.end];
        if (best > cell) cell = best;
      }
    }
    for (int length = 2; length <= n; ++length) {
      for (int i = 0; i + length - 1 < n; ++i) {
        const int j = i + length - 1;
        double best = fc_[(std::size_t)i * n + j];
        for (int k = i; k < j; ++k) {
          const double s = fc_[(std::size_t)i * n + k] + fc_[(std::size_t)(k + 1) * n + j];
          if (s > best) best = s;
        }
        fc_[(std::size_t)i * n + j] = best;
      }
    }
  }

  double Future(const Cov<W> &cov) {
    const int32_t *f = fc_cache_.Find(cov);
    if (f) return fc_vals_[*f];
    const int n = n_;
    double total = 0.0;
    int i = 0;
    while (i < n) {
      if (cov.Test(i)) {
        ++i;
        continue;
      }
      int j = i;
      while (j + 1 < n && !cov.Test(j + 1)) ++j;
      total += fc_[(std::size_t)i * n + j];
      i = j + 1;
    }
    fc_cache_.Insert(cov, (int32_t)fc_vals_.size());
    fc_vals_.push_back(total);
    return total;
  }

  // ---- LM states, interned per sentence in order of first appearance

  uint64_t StateHash(const LMState *s) const {
    uint64_t h = 0x51ed270b27a5c3d1ULL;
    for (int li = 0; li < n_lm_; ++li) h = mix64(h ^ lm::ngram::hash_value(s[li]));
    return h;
  }

  bool StatesEqual(const LMState *a, const LMState *b) const {
    for (int li = 0; li < n_lm_; ++li)
      if (!(a[li] == b[li])) return false;
    return true;
  }

  // id of the tuple in tmp_states_ (added when new)
  int32_t Intern() {
    const int n_lm = n_lm_;
    if (n_lm == 0) {
      if (num_states_ == 0) num_states_ = 1;
      return 0;
    }
    if ((num_states_ + 1) * 2 > state_slots_.size()) {
      std::size_t cap = state_slots_.empty() ? 256 : state_slots_.size() * 2;
      state_slots_.assign(cap, -1);
      for (int32_t id = 0; id < (int32_t)num_states_; ++id) {
        std::size_t i = StateHash(&states_[(std::size_t)id * n_lm]) & (cap - 1);
        while (state_slots_[i] >= 0) i = (i + 1) & (cap - 1);
        state_slots_[i] = id;
      }
    }
    const std::size_t mask = state_slots_.size() - 1;
    std::size_t i = StateHash(tmp_states_.data()) & mask;
    while (true) {
      int32_t id = state_slots_[i];
      if (id < 0) break;
      if (StatesEqual(&states_[(std::size_t)id * n_lm], tmp_states_.data())) return id;
      i = (i + 1) & mask;
    }
    int32_t id = (int32_t)num_states_++;
    state_slots_[i] = id;
    states_.insert(states_.end(), tmp_states_.begin(), tmp_states_.end());
    return id;
  }

  // word_step: one target word after state sid (cached per state and word)
  int32_t WordStep(int32_t sid, uint32_t word, uint64_t wkey) {
    const int n_lm = n_lm_;
    const double ln10 = core_.ln10_;
    double wsum = 0.0;
    for (int li = 0; li < n_lm; ++li) {
      const LMState &in = states_[(std::size_t)sid * n_lm + li];
      const double lp =
          (double)core_.models_[li]->BaseScore(&in, core_.lmw_[(std::size_t)word * n_lm + li], &tmp_states_[li]) * ln10;
      tmp_raws_[li] = lp;
      wsum += P_.w_lms[li] * lp;
    }
    const int32_t nsid = Intern();
    const int32_t e = (int32_t)wc_w_.size();
    wc_w_.push_back(wsum);
    wc_sid_.push_back(nsid);
    wc_raw_.insert(wc_raw_.end(), tmp_raws_.begin(), tmp_raws_.end());
    word_cache_.Insert(wkey, e);
    return e;
  }

  // The LM transition of an option's phrase after state sid, walked word by word and abandoned
  // (returns -1) as soon as the exact prefix plus the bound of the rest falls below need_lm.
  int32_t Walk(int32_t sid, const POpt &o, double need_lm) {
    const int n_lm = n_lm_;
    const OptRec &r = core_.opts_[o.oid];
    double acc = 0.0;
    int32_t s = sid;
    for (uint32_t i = 0; i < r.nw; ++i) {
      const uint32_t word = r.off + i;
      const uint64_t wkey = ((uint64_t)(uint32_t)s << 32) + core_.wids_[word];
      const int32_t *f = word_cache_.Find(wkey);
      const int32_t we = f ? *f : WordStep(s, word, wkey);
      acc += wc_w_[we];
      if (i == 0) {
        for (int li = 0; li < n_lm; ++li) walk_raws_[li] = wc_raw_[(std::size_t)we * n_lm + li];
      } else {
        for (int li = 0; li < n_lm; ++li) walk_raws_[li] = walk_raws_[li] + wc_raw_[(std::size_t)we * n_lm + li];
      }
      s = wc_sid_[we];
      if (acc + core_.rest_[word] < need_lm) return -1;
    }
    if (r.nw == 0)
      for (int li = 0; li < n_lm; ++li) walk_raws_[li] = 0.0;
    const int32_t pe = (int32_t)pc_w_.size();
    pc_w_.push_back(acc);
    pc_sid_.push_back(s);
    pc_raw_.insert(pc_raw_.end(), walk_raws_.begin(), walk_raws_.end());
    return pe;
  }

  void Eos(int32_t sid) {
    const int n_lm = n_lm_;
    if ((std::size_t)sid >= eos_done_.size()) {
      std::size_t sz = std::max<std::size_t>((std::size_t)sid + 1, eos_done_.size() * 2);
      eos_done_.resize(sz, 0);
      eos_w_.resize(sz, 0.0);
      eos_raw_.resize(sz * n_lm, 0.0);
    }
    if (eos_done_[sid]) return;
    const double ln10 = core_.ln10_;
    double e = 0.0;
    LMState scratch;
    for (int li = 0; li < n_lm; ++li) {
      const double r =
          (double)core_.models_[li]->BaseScore(&states_[(std::size_t)sid * n_lm + li], core_.eos_[li], &scratch) * ln10;
      eos_raw_[(std::size_t)sid * n_lm + li] = r;
      e += P_.w_lms[li] * r;
    }
    eos_w_[sid] = e;
    eos_done_[sid] = 1;
  }

  // ---- hypotheses and stacks

  int32_t NewHyp(double total, double score, const Cov<W> &cov, int last, int32_t sid, int32_t prev, int32_t opt,
                 double dval, int start) {
    Hyp h;
    h.total = total;
    h.score = score;
    h.dval = dval;
    h.last = last;
    h.sid = sid;
    h.prev = prev;
    h.opt = opt;
    h.start = start;
    h.arc_first = h.arc_last = h.arc_next = -1;
    const int32_t idx = (int32_t)hyps_.size();
    hyps_.push_back(h);
    covs_.push_back(cov);
    hyp_lm_.insert(hyp_lm_.end(), lmraw_.begin(), lmraw_.end());
    return idx;
  }

  RKey<W> KeyOf(int32_t h) const {
    RKey<W> k;
    k.cov = covs_[h];
    k.sid = hyps_[h].sid;
    k.last = hyps_[h].last;
    if (P_.use_lr) {
      k.start = hyps_[h].start;
      k.fid = hyps_[h].opt >= 0 ? core_.opts_[hyps_[h].opt].fid : 0;
    }
    return k;
  }

  void AddToStack(int k, int32_t h) {
    maps_[k].Insert(KeyOf(h), (int32_t)stacks_[k].size());
    stacks_[k].push_back(h);
  }

  // Decoder._search.prune: sort (stable) by total, keep at most `stack` above best + beam.
  std::vector<int32_t> Prune(int k) {
    std::vector<int32_t> &stk = stacks_[k];
    std::vector<int32_t> sorted(stk);
    const std::vector<Hyp> &hyps = hyps_;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&hyps](int32_t a, int32_t b) { return hyps[a].total > hyps[b].total; });
    const double cut = best_[k] + P_.beam;
    const std::size_t S = (std::size_t)P_.stack;
    std::size_t m = 0;
    while (m < sorted.size() && m < S && hyps_[sorted[m]].total > cut) ++m;
    if (m < sorted.size()) {
      R_.stats.pruned += (long long)(sorted.size() - m);
      if (m == S && hyps_[sorted[m - 1]].total > thr_[k]) thr_[k] = hyps_[sorted[m - 1]].total;
      sorted.resize(m);
      stk.clear();
      maps_[k].Clear();
      for (int32_t h : sorted) AddToStack(k, h);
    }
    return sorted;
  }

  const Core &core_;
  const int n_;
  const int n_lm_;
  const Params &P_;
  Result &R_;
  std::vector<Hyp> &hyps_;
  std::vector<double> &hyp_lm_;
  std::vector<Cov<W>> covs_;

  std::vector<std::vector<Span>> spans_from_;
  std::vector<POpt> popts_;
  std::vector<double> fc_;
  Cov<W> full_;
  FlatMap<Cov<W>, CovHash<W>> fc_cache_{64};
  std::vector<double> fc_vals_;

  std::vector<LMState> states_;
  std::size_t num_states_ = 0;
  std::vector<int32_t> state_slots_;
  std::vector<LMState> tmp_states_;
  std::vector<double> tmp_raws_, walk_raws_, lmraw_;

  FlatMap<uint64_t, U64Hash> word_cache_{1024};
  std::vector<double> wc_w_, wc_raw_;
  std::vector<int32_t> wc_sid_;
  FlatMap<uint64_t, U64Hash> lm_cache_{1024};
  std::vector<double> pc_w_, pc_raw_;
  std::vector<int32_t> pc_sid_;
  std::vector<char> eos_done_;
  std::vector<double> eos_w_, eos_raw_;

  std::vector<std::vector<int32_t>> stacks_;
  std::vector<FlatMap<RKey<W>, RKeyHash<W>>> maps_;
  std::vector<double> best_, thr_;
};

void RunSearch(const Core &core, int n, const std::vector<int32_t> &spans, const Params &P, Result &R) {
  if (n <= 64) {
    Searcher<1>(core, n, P, R).Run(spans);
  } else if (n <= 128) {
    Searcher<2>(core, n, P, R).Run(spans);
  } else if (n <= 256) {
    Searcher<4>(core, n, P, R).Run(spans);
  } else if (n <= MAX_WORDS) {
    Searcher<8>(core, n, P, R).Run(spans);
  } else {
    throw std::invalid_argument("sentence longer than the compiled search supports");
  }
}

// ------------------------------------------------------------------ n-best (Decoder._nbest)

struct PathOut {
  double score;
  std::vector<int32_t> nodes;  // last first, root excluded
};

struct VecHash {
  std::size_t operator()(const std::vector<uint32_t> &v) const {
    uint64_t h = 0x2545f4914f6cdd1dULL ^ v.size();
    for (uint32_t x : v) h = mix64(h ^ x);
    return (std::size_t)h;
  }
};

void Chain(const std::vector<Hyp> &hyps, int32_t h, std::vector<int32_t> &out) {
  while (hyps[h].prev >= 0) {
    out.push_back(h);
    h = hyps[h].prev;
  }
}

void NBest(const Core &core, const Result &R, int nbest, bool distinct, long long max_paths,
           std::vector<PathOut> &out) {
  struct Entry {
    double neg;
    long long counter;
    int32_t path;
    int32_t dev;
  };
  struct Later {  // heapq order: (-score, counter)
    bool operator()(const Entry &a, const Entry &b) const {
      return a.neg > b.neg || (a.neg == b.neg && a.counter > b.counter);
    }
  };
  const std::vector<Hyp> &hyps = R.hyps;
  std::vector<std::vector<int32_t>> paths;
  std::priority_queue<Entry, std::vector<Entry>, Later> heap;
  long long counter = 0;
  for (int32_t f : R.finals) {
    paths.emplace_back();
    Chain(hyps, f, paths.back());
    heap.push(Entry{-hyps[f].score, counter++, (int32_t)paths.size() - 1, 0});
  }
  std::unordered_set<std::vector<uint32_t>, VecHash> seen;
  long long popped = 0;
  std::vector<uint32_t> key;
  while (!heap.empty() && (long long)out.size() < nbest && popped < max_paths) {
    const Entry e = heap.top();
    heap.pop();
    ++popped;
    const double score = -e.neg;
    std::vector<int32_t> nodes;
    nodes.swap(paths[e.path]);
    bool take = true;
    if (distinct) {
      key.clear();
      for (std::size_t i = nodes.size(); i-- > 0;) {
        const OptRec &r = core.opts_[hyps[nodes[i]].opt];
        key.insert(key.end(), core.wids_.begin() + r.off, core.wids_.begin() + r.off + r.nw);
      }
      take = seen.insert(key).second;
    }
    for (std::size_t i = (std::size_t)e.dev; i < nodes.size(); ++i) {
      const Hyp &hn = hyps[nodes[i]];
      if (hn.arc_first < 0) continue;
      const double base = score - hn.score;
      for (int32_t a = hn.arc_first; a >= 0; a = hyps[a].arc_next) {
        std::vector<int32_t> nn(nodes.begin(), nodes.begin() + i);
        Chain(hyps, a, nn);
        paths.push_back(std::move(nn));
        heap.push(Entry{-(base + hyps[a].score), counter++, (int32_t)paths.size() - 1, (int32_t)i + 1});
      }
    }
    if (take) out.push_back(PathOut{score, std::move(nodes)});
  }
}

}  // namespace smtsearch

// =================================================================== Python bindings

namespace {

using smtsearch::Core;

struct CoreObject {
  PyObject_HEAD Core *core;
};

bool SetPyError() {  // translate the current C++ exception
  try {
    throw;
  } catch (const std::bad_alloc &) {
    PyErr_NoMemory();
  } catch (const std::invalid_argument &e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const util::Exception &e) {
    PyErr_SetString(PyExc_OSError, e.what());
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
  return false;
}

void Core_dealloc(CoreObject *self) {
  delete self->core;
  self->core = nullptr;
  Py_TYPE(self)->tp_free((PyObject *)self);
}

PyObject *Core_new(PyTypeObject *type, PyObject *, PyObject *) {
  CoreObject *self = (CoreObject *)type->tp_alloc(type, 0);
  if (self) self->core = nullptr;
  return (PyObject *)self;
}

// Core(lm_paths: sequence of str, ln10: float)
int Core_init(CoreObject *self, PyObject *args, PyObject *kwds) {
  static const char *kwlist[] = {"lm_paths", "ln10", "load_methods", nullptr};
  PyObject *paths, *methods_obj = nullptr;
  double ln10;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "Od|O", const_cast<char **>(kwlist), &paths, &ln10, &methods_obj))
    return -1;
  PyObject *seq = PySequence_Fast(paths, "lm_paths must be a sequence of str");
  if (!seq) return -1;
  std::vector<std::string> p;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(seq, i), &len);
    if (!s) {
      Py_DECREF(seq);
      return -1;
    }
    p.emplace_back(s, (std::size_t)len);
  }
  Py_DECREF(seq);
  std::vector<int> methods(p.size(), 2);  // KenLM's default: populate or read
  if (methods_obj && methods_obj != Py_None) {
    PyObject *mseq = PySequence_Fast(methods_obj, "load_methods must be a sequence of int");
    if (!mseq) return -1;
    bool ok = (std::size_t)PySequence_Fast_GET_SIZE(mseq) == p.size();
    for (std::size_t i = 0; ok && i < p.size(); ++i) {
      long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(mseq, (Py_ssize_t)i));
      ok = !(v == -1 && PyErr_Occurred()) && v >= 0 && v <= 4;
      methods[i] = (int)v;
    }
    Py_DECREF(mseq);
    if (!ok) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "load_methods: one int in 0..4 per LM path");
      return -1;
    }
  }
  try {
    std::unique_ptr<Core> core(new Core(ln10));
    for (std::size_t i = 0; i < p.size(); ++i) core->AddModel(p[i], methods[i]);
    delete self->core;
    self->core = core.release();
  } catch (...) {
    SetPyError();
    return -1;
  }
  return 0;
}

bool CheckCore(CoreObject *self) {
  if (!self->core) {
    PyErr_SetString(PyExc_RuntimeError, "Core not initialised");
    return false;
  }
  return true;
}

// order(lm) -> int
PyObject *Core_order(CoreObject *self, PyObject *args) {
  int li;
  if (!PyArg_ParseTuple(args, "i", &li) || !CheckCore(self)) return nullptr;
  if (li < 0 || (std::size_t)li >= self->core->NumLMs()) {
    PyErr_SetString(PyExc_IndexError, "no such LM");
    return nullptr;
  }
  return PyLong_FromLong(self->core->models_[li]->Order());
}

// probe(lm, words, begin) -> [log10 p(w_i | ...)], words in sequence after <s> (begin) or the null context
PyObject *Core_probe(CoreObject *self, PyObject *args) {
  int li, begin;
  PyObject *words;
  if (!PyArg_ParseTuple(args, "iOp", &li, &words, &begin) || !CheckCore(self)) return nullptr;
  if (li < 0 || (std::size_t)li >= self->core->NumLMs()) {
    PyErr_SetString(PyExc_IndexError, "no such LM");
    return nullptr;
  }
  PyObject *seq = PySequence_Fast(words, "words must be a sequence of str");
  if (!seq) return nullptr;
  const lm::base::Model &m = *self->core->models_[li];
  smtsearch::LMState a, b;
  if (begin)
    m.BeginSentenceWrite(&a);
  else
    m.NullContextWrite(&a);
  PyObject *out = PyList_New(0);
  for (Py_ssize_t i = 0; out && i < PySequence_Fast_GET_SIZE(seq); ++i) {
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(seq, i), &len);
    if (!s) {
      Py_CLEAR(out);
      break;
    }
    float lp = m.BaseScore(&a, m.BaseVocabulary().Index(StringPiece(s, (std::size_t)len)), &b);
    a = b;
    PyObject *f = PyFloat_FromDouble((double)lp);
    if (!f || PyList_Append(out, f) < 0) Py_CLEAR(out);
    Py_XDECREF(f);
  }
  Py_DECREF(seq);
  return out;
}

PyObject *Core_num_options(CoreObject *self, PyObject *) {
  if (!CheckCore(self)) return nullptr;
  return PyLong_FromSize_t(self->core->opts_.size());
}

PyObject *Core_clear_options(CoreObject *self, PyObject *) {
  if (!CheckCore(self)) return nullptr;
  Core &c = *self->core;
  c.opts_.clear();
  c.wids_.clear();
  c.lmw_.clear();
  c.rest_.clear();
  Py_RETURN_NONE;
}

bool AsDouble(PyObject *o, double &out) {
  out = PyFloat_AsDouble(o);
  return !(out == -1.0 && PyErr_Occurred());
}

// O_LR (None or six floats) and O_FID (int) of an option
bool ReadReordering(PyObject *lr, PyObject *fid, smtsearch::OptRec &r) {
  long f = PyLong_AsLong(fid);
  if (f == -1 && PyErr_Occurred()) return false;
  if (f < 0 || f > 0x7fffffffL) {
    PyErr_SetString(PyExc_ValueError, "reordering id out of range");
    return false;
  }
  r.fid = (int32_t)f;
  r.has_lr = lr != Py_None;
  for (int i = 0; i < 6; ++i) r.lr[i] = 0.0;
  if (!r.has_lr) return true;
  if (!PyTuple_Check(lr) || PyTuple_GET_SIZE(lr) != 6) {
    PyErr_SetString(PyExc_ValueError, "option: reordering values must be None or six floats");
    return false;
  }
  for (int i = 0; i < 6; ++i)
    if (!AsDouble(PyTuple_GET_ITEM(lr, i), r.lr[i])) return false;
  return true;
}

// add_options([(tid, sl, fut, ub, wids, rest, lm_words_per_lm, lr, fid), ...]); ids continue from num_options()
PyObject *Core_add_options(CoreObject *self, PyObject *args) {
  PyObject *lst;
  if (!PyArg_ParseTuple(args, "O", &lst) || !CheckCore(self)) return nullptr;
  Core &c = *self->core;
  const std::size_t n_lm = c.NumLMs();
  PyObject *seq = PySequence_Fast(lst, "options must be a sequence");
  if (!seq) return nullptr;
  const std::size_t opts0 = c.opts_.size(), words0 = c.wids_.size();
  bool ok = true;
  try {
    for (Py_ssize_t i = 0; ok && i < PySequence_Fast_GET_SIZE(seq); ++i) {
      PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
      if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 9) {
        PyErr_SetString(PyExc_TypeError, "an option is (tid, sl, fut, ub, wids, rest, lm_words, lr, fid)");
        ok = false;
        break;
      }
      smtsearch::OptRec r;
      long tid = PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
      if (tid == -1 && PyErr_Occurred()) { ok = false; break; }
      if (tid < 0 || tid > 0xffffffffL) {
        PyErr_SetString(PyExc_ValueError, "phrase id out of range");
        ok = false;
        break;
      }
      r.tid = (uint32_t)tid;
      if (!ReadReordering(PyTuple_GET_ITEM(t, 7), PyTuple_GET_ITEM(t, 8), r)) {
        ok = false;
        break;
      }
      if (!AsDouble(PyTuple_GET_ITEM(t, 1), r.sl) || !AsDouble(PyTuple_GET_ITEM(t, 2), r.fut) ||
          !AsDouble(PyTuple_GET_ITEM(t, 3), r.ub)) {
        ok = false;
        break;
      }
      PyObject *wids = PyTuple_GET_ITEM(t, 4), *rest = PyTuple_GET_ITEM(t, 5), *lmws = PyTuple_GET_ITEM(t, 6);
      if (!PyTuple_Check(wids) || !PyTuple_Check(rest) || !PyTuple_Check(lmws) ||
          PyTuple_GET_SIZE(rest) != PyTuple_GET_SIZE(wids) || (std::size_t)PyTuple_GET_SIZE(lmws) != n_lm) {
        PyErr_SetString(PyExc_ValueError, "option: wids, rest and lm_words do not fit together");
        ok = false;
        break;
      }
      const Py_ssize_t nw = PyTuple_GET_SIZE(wids);
      r.off = (uint32_t)c.wids_.size();
      r.nw = (uint32_t)nw;
      for (Py_ssize_t w = 0; ok && w < nw; ++w) {
        long wid = PyLong_AsLong(PyTuple_GET_ITEM(wids, w));
        double rv;
        if ((wid == -1 && PyErr_Occurred()) || !AsDouble(PyTuple_GET_ITEM(rest, w), rv)) {
          ok = false;
          break;
        }
        if (wid < 0 || wid > 0xffffffffL) {
          PyErr_SetString(PyExc_ValueError, "word id out of range");
          ok = false;
          break;
        }
        c.wids_.push_back((uint32_t)wid);
        c.rest_.push_back(rv);
        for (std::size_t li = 0; li < n_lm; ++li) {
          PyObject *ws = PyTuple_GET_ITEM(lmws, li);
          if (!PyTuple_Check(ws) || PyTuple_GET_SIZE(ws) != nw) {
            PyErr_SetString(PyExc_ValueError, "option: lm_words do not fit the target phrase");
            ok = false;
            break;
          }
          Py_ssize_t len;
          const char *s = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(ws, w), &len);
          if (!s) {
            ok = false;
            break;
          }
          c.lmw_.push_back(c.models_[li]->BaseVocabulary().Index(StringPiece(s, (std::size_t)len)));
        }
      }
      if (ok) c.opts_.push_back(r);
    }
  } catch (...) {
    SetPyError();
    ok = false;
  }
  Py_DECREF(seq);
  if (!ok) {  // leave the registry as it was
    c.opts_.resize(opts0);
    c.wids_.resize(words0);
    c.rest_.resize(words0);
    c.lmw_.resize(words0 * n_lm);
    return nullptr;
  }
  return PyLong_FromSize_t(c.opts_.size());
}

// Emission of hypotheses to Python: prev before the node itself.
struct Emitter {
  const smtsearch::Result &R;
  std::size_t n_lm;
  bool arcs;
  std::vector<int32_t> out_idx;
  std::vector<int32_t> order;
  Emitter(const smtsearch::Result &r, std::size_t nl, bool a) : R(r), n_lm(nl), arcs(a), out_idx(r.hyps.size(), -1) {}

  void Visit(int32_t h) {
    // iterative: walk up to the first emitted ancestor, then emit downwards
    std::vector<int32_t> up;
    while (h >= 0 && out_idx[h] < 0) {
      up.push_back(h);
      h = R.hyps[h].prev;
    }
    for (std::size_t i = up.size(); i-- > 0;) {
      out_idx[up[i]] = (int32_t)order.size();
      order.push_back(up[i]);
    }
    if (arcs) {
      for (std::size_t i = up.size(); i-- > 0;)
        for (int32_t a = R.hyps[up[i]].arc_first; a >= 0; a = R.hyps[a].arc_next) Visit(a);
    }
  }

  PyObject *Build() const {
    PyObject *lst = PyList_New((Py_ssize_t)order.size());
    if (!lst) return nullptr;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int32_t h = order[i];
      const smtsearch::Hyp &hy = R.hyps[h];
      PyObject *lm;
      if (hy.prev < 0) {
        lm = PyTuple_New(0);
      } else {
        lm = PyTuple_New((Py_ssize_t)n_lm);
        for (std::size_t li = 0; lm && li < n_lm; ++li)
          PyTuple_SET_ITEM(lm, li, PyFloat_FromDouble(R.hyp_lm[(std::size_t)h * n_lm + li]));
      }
      PyObject *arc_list;
      if (arcs && hy.arc_first >= 0) {
        arc_list = PyList_New(0);
        for (int32_t a = hy.arc_first; arc_list && a >= 0; a = R.hyps[a].arc_next) {
          PyObject *v = PyLong_FromLong(out_idx[a]);
          if (!v || PyList_Append(arc_list, v) < 0) Py_CLEAR(arc_list);
          Py_XDECREF(v);
        }
      } else {
        Py_INCREF(Py_None);
        arc_list = Py_None;
      }
      PyObject *t = nullptr;
      if (lm && arc_list)
        t = Py_BuildValue("(ddiiiiOdiO)", hy.total, hy.score, (int)hy.last, (int)hy.sid,
                          hy.prev >= 0 ? (int)out_idx[hy.prev] : -1, (int)hy.opt, lm, hy.dval, (int)hy.start,
                          arc_list);
      Py_XDECREF(lm);
      Py_XDECREF(arc_list);
      if (!t) {
        Py_DECREF(lst);
        return nullptr;
      }
      PyList_SET_ITEM(lst, i, t);
    }
    return lst;
  }
};

// search(n, spans, stack, beam, ed, dl, w_d, w_lms, keep_arcs, nbest, distinct, max_paths, graph, w_lr)
//   w_lr: None (no lexicalized reordering) or its six weights
//   spans: flat [start, end, count, option ids..., ...] in Decoder.collect_options order
//   -> (status, nodes, finals, paths, stats)
//   nodes: [(total, score, last, sid, prev, opt, lm, dist, start, arcs|None)], prev before node
//   graph: export every final and everything reachable (prev, arcs) as the Python search keeps it;
//          else the best path and the n-best paths only.
PyObject *Core_search(CoreObject *self, PyObject *args) {
  int n, stack, dl, keep_arcs, nbest, distinct, graph;
  double beam, ed, w_d;
  long long max_paths;
  PyObject *spans_obj, *wlms_obj, *wlr_obj;
  if (!PyArg_ParseTuple(args, "iOiddidOpipLpO", &n, &spans_obj, &stack, &beam, &ed, &dl, &w_d, &wlms_obj,
                        &keep_arcs, &nbest, &distinct, &max_paths, &graph, &wlr_obj) ||
      !CheckCore(self))
    return nullptr;
  Core &c = *self->core;
  if (n < 1 || n > smtsearch::MAX_WORDS) {
    PyErr_Format(PyExc_ValueError, "sentence length %d outside 1..%d", n, smtsearch::MAX_WORDS);
    return nullptr;
  }
  if (stack < 1) {
    PyErr_SetString(PyExc_ValueError, "stack size must be >= 1");
    return nullptr;
  }
  smtsearch::Params P;
  P.stack = stack;
  P.beam = beam;
  P.ed = ed;
  P.dl = dl;
  P.w_d = w_d;
  P.keep_arcs = keep_arcs != 0;
  P.use_lr = wlr_obj != Py_None;
  if (P.use_lr) {
    PyObject *seq = PySequence_Fast(wlr_obj, "w_lr must be None or six floats");
    if (!seq) return nullptr;
    bool ok = PySequence_Fast_GET_SIZE(seq) == 6;
    for (Py_ssize_t i = 0; ok && i < 6; ++i) ok = AsDouble(PySequence_Fast_GET_ITEM(seq, i), P.w_lr[i]);
    Py_DECREF(seq);
    if (!ok) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "w_lr must be None or six floats");
      return nullptr;
    }
  }
  {
    PyObject *seq = PySequence_Fast(wlms_obj, "w_lms must be a sequence of float");
    if (!seq) return nullptr;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
      double v;
      if (!AsDouble(PySequence_Fast_GET_ITEM(seq, i), v)) {
        Py_DECREF(seq);
        return nullptr;
      }
      P.w_lms.push_back(v);
    }
    Py_DECREF(seq);
    if (P.w_lms.size() != c.NumLMs()) {
      PyErr_SetString(PyExc_ValueError, "one LM weight per LM expected");
      return nullptr;
    }
  }
  std::vector<int32_t> spans;
  {
    PyObject *seq = PySequence_Fast(spans_obj, "spans must be a sequence of int");
    if (!seq) return nullptr;
    const Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    spans.reserve((std::size_t)len);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < len; ++i) {
      long v = PyLong_AsLong(items[i]);
      if (v == -1 && PyErr_Occurred()) {
        Py_DECREF(seq);
        return nullptr;
      }
      spans.push_back((int32_t)v);
    }
    Py_DECREF(seq);
  }

  smtsearch::Result R;
  std::vector<smtsearch::PathOut> paths;
  try {
    smtsearch::RunSearch(c, n, spans, P, R);
    if (R.status == smtsearch::FOUND && nbest > 0) smtsearch::NBest(c, R, nbest, distinct != 0, max_paths, paths);
  } catch (...) {
    SetPyError();
    return nullptr;
  }

  const smtsearch::Stats &s = R.stats;
  PyObject *stats = Py_BuildValue("(LLLLLLLLL)", s.expanded, s.created, s.recombined, s.discarded, s.pruned,
                                  s.lm_misses, s.lm_states, s.bounded, s.abandoned);
  if (!stats) return nullptr;
  if (R.status != smtsearch::FOUND) {
    PyObject *res = Py_BuildValue("(iOOON)", (int)R.status, Py_None, Py_None, Py_None, stats);
    return res;
  }
  Emitter em(R, c.NumLMs(), graph != 0);
  if (graph) {
    for (int32_t f : R.finals) em.Visit(f);
  } else {
    em.Visit(R.finals[0]);
    for (const smtsearch::PathOut &p : paths)
      for (int32_t h : p.nodes) em.Visit(h);
  }
  PyObject *nodes = em.Build();
  PyObject *finals = nodes ? PyList_New(0) : nullptr;
  if (finals) {
    const std::size_t nf = graph ? R.finals.size() : 1;
    for (std::size_t i = 0; i < nf; ++i) {
      PyObject *v = PyLong_FromLong(em.out_idx[R.finals[i]]);
      if (!v || PyList_Append(finals, v) < 0) {
        Py_XDECREF(v);
        Py_CLEAR(finals);
        break;
      }
      Py_DECREF(v);
    }
  }
  PyObject *plist = finals ? PyList_New((Py_ssize_t)paths.size()) : nullptr;
  for (std::size_t i = 0; plist && i < paths.size(); ++i) {
    PyObject *idx = PyTuple_New((Py_ssize_t)paths[i].nodes.size());
    for (std::size_t j = 0; idx && j < paths[i].nodes.size(); ++j)
      PyTuple_SET_ITEM(idx, j, PyLong_FromLong(em.out_idx[paths[i].nodes[j]]));
    PyObject *t = idx ? Py_BuildValue("(dN)", paths[i].score, idx) : nullptr;
    if (!t) {
      Py_CLEAR(plist);
      break;
    }
    PyList_SET_ITEM(plist, i, t);
  }
  if (!plist) {
    Py_XDECREF(nodes);
    Py_XDECREF(finals);
    Py_DECREF(stats);
    return nullptr;
  }
  return Py_BuildValue("(iNNNN)", (int)R.status, nodes, finals, plist, stats);
}

PyMethodDef Core_methods[] = {
    {"order", (PyCFunction)Core_order, METH_VARARGS, "order(lm) -> n-gram order of that model"},
    {"probe", (PyCFunction)Core_probe, METH_VARARGS,
     "probe(lm, words, begin) -> log10 scores of the words in sequence after <s> (begin) or the null context"},
    {"num_options", (PyCFunction)Core_num_options, METH_NOARGS, "number of registered options"},
    {"clear_options", (PyCFunction)Core_clear_options, METH_NOARGS, "forget every registered option"},
    {"add_options", (PyCFunction)Core_add_options, METH_VARARGS,
     "add_options([(tid, sl, fut, ub, wids, rest, lm_words_per_lm, lr, fid)]) -> number of options"},
    {"search", (PyCFunction)Core_search, METH_VARARGS,
     "search(n, spans, stack, beam, ed, dl, w_d, w_lms, keep_arcs, nbest, distinct, max_paths, graph, w_lr)"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject CoreType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyModuleDef search_module = {PyModuleDef_HEAD_INIT, "_search",
                             "Compiled stack search of smt_features.decode.decoder (see smt_features/decode/fast_search.py).", -1,
                             nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__search(void) {
  CoreType.tp_name = "smt_features._search.Core";
  CoreType.tp_basicsize = sizeof(CoreObject);
  CoreType.tp_flags = Py_TPFLAGS_DEFAULT;
  CoreType.tp_doc = "Core(lm_paths, ln10, load_methods=None): KenLM models and registered translation options";
  CoreType.tp_new = Core_new;
  CoreType.tp_init = (initproc)Core_init;
  CoreType.tp_dealloc = (destructor)Core_dealloc;
  CoreType.tp_methods = Core_methods;
  if (PyType_Ready(&CoreType) < 0) return nullptr;
  PyObject *m = PyModule_Create(&search_module);
  if (!m) return nullptr;
  Py_INCREF(&CoreType);
  if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0 ||
      PyModule_AddIntConstant(m, "MAX_WORDS", smtsearch::MAX_WORDS) < 0 ||
      PyModule_AddIntConstant(m, "KENLM_MAX_ORDER", KENLM_MAX_ORDER) < 0 ||
      PyModule_AddIntConstant(m, "ABI_VERSION", 3) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}

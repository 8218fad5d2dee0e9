"""The Python stack search of one sentence (:class:`StackSearch`): Koehn's beam search as Moses's "normal" search.

* **Hypotheses** live in stacks indexed by the number of covered source
  words. Two hypotheses with the same coverage (a bitmask ``int``), the
  same end of the last source phrase and the same LM state are
  **recombined**: the better one stays, the other becomes one of its
  *arcs* (kept for n-best extraction). A hypothesis is ranked by its score
  plus the future cost of each uncovered gap.
* **Pruning** as Moses ``HypothesisStackNormal``: a hypothesis below the
  stack's threshold is discarded on arrival; the threshold is
  ``best + ln(beam-threshold)`` (default ``ln 1e-5``) and, after histogram
  pruning, the score of the ``stack``-th best. A stack is cut to ``stack``
  hypotheses lazily (when it exceeds ``2 × stack − 1``) and before it is
  expanded.
* **Distortion limit** (``-1`` = none) as Moses checks it: the jump from
  the previous phrase to the new one is at most the limit, and a phrase
  that does not start at the first gap must end close enough to that gap
  (``end + 1 - first_gap ≤ limit``) to be able to jump back.
* **Early discarding** (Moses's ``early-discarding-threshold``, off by
  default like Moses): before scoring an option in context, skip it when
  ``score + option future score + future cost`` is already below the
  target stack's threshold plus ``ln(threshold)``; the options of a span
  are sorted, so the rest of the span is skipped too.
* **Bound pruning** (exact): a span's options are visited by decreasing score
  bound (:mod:`smt_features.decode.search_tables`) and the loop stops at the first
  that cannot reach the target stack's threshold; an uncached LM score is computed
  word by word and abandoned as soon as the exact prefix plus the bound of the
  rest falls short. Results are those of the plain loop (``bound_pruning=False``).

The loop works on integers: coverage bitmasks, a per-sentence id for each
distinct LM state, per-weights ids for target phrases and words; LM transitions
are cached per ``(state id, phrase id)`` and per ``(state id, word id)``,
``</s>`` scores per state, future costs per coverage.
"""
from __future__ import annotations

from smt_features.decode.hypothesis import (
    H_ARCS, H_COV, H_LAST, H_SCORE, H_SID, H_TOTAL, NEG_INF, O_FUT, O_LMW, O_REST, O_SL, O_TID, O_UB, O_WIDS,
    TID_STRIDE,
)
from smt_features.decode.options import SearchOptions
from smt_features.decode.search_tables import SearchTables, future_cost_table
from smt_features.model.features import LN10


class StackSearch:
    """The search of one sentence; :meth:`run` returns ``(best final hypothesis or None, final hypotheses, stats)``."""

    def __init__(self, tables: SearchTables, lms: list, options: SearchOptions, words: list[str],
                 keep_arcs: bool) -> None:
        self.n = n = len(words)
        self.keep_arcs = keep_arcs
        self.stats = {"expanded": 0, "created": 0, "recombined": 0, "discarded": 0, "pruned": 0, "lm_misses": 0}
        if n == 0:
            return
        spans = tables.collect_options(words)
        self.fc_span = future_cost_table(n, spans)
        self.full = (1 << n) - 1
        # spans_from[start] = [(end, mask, length, [(bound, future, phrase id, stateless score, option)])]
        self.spans_from = [[(j, ((1 << (j - i + 1)) - 1) << i, j - i + 1,
                             [(o[O_UB], o[O_FUT], o[O_TID], o[O_SL], o) for o in opts]) for j, opts in row]
                           for i, row in enumerate(spans)]
        self.fc_cache: dict[int, float] = {}
        self._init_lm(lms, tables.w_lms)
        self.S = options.stack_size
        self.tolerated = 2 * self.S - 1
        self.beam = options.beam_width
        self.ed = options.early_discarding_width
        self.dl = options.distortion_limit
        self.w_d = tables.w_dist
        self.stacks: list[dict] = [dict() for _ in range(n + 1)]
        self.best = [NEG_INF] * (n + 1)
        self.thr = [NEG_INF] * (n + 1)
        self.endbits = max(1, n.bit_length())
        # expanded, created, recombined, discarded, lm_misses, bounded, abandoned
        self.counts = [0] * 7

    # ------------------------------------------------------------------ language-model states
    def _init_lm(self, lms: list, w_lms: list[float]) -> None:
        """LM states interned per sentence; transitions cached per (state, phrase) and, below that, per
        (state, word): phrases that share a prefix share the KenLM queries of that prefix."""
        self.lms = lms
        self.n_lm = len(lms)
        self.w_lms = w_lms
        begin = tuple(lm.begin_state() for lm in lms)
        self.state_ids: dict = {begin: 0}
        self.states: list = [begin]
        self.lm_cache: dict[int, tuple] = {}
        self.eos_cache: dict[int, tuple] = {}
        self.word_cache: dict[int, tuple] = {}
        self.lm_models = [lm.scorer.model for lm in lms]
        if lms:
            import kenlm  # the LMs' scorers already imported it

            self.new_state = kenlm.State
        else:
            self.new_state = None

    def word_step(self, sid: int, i: int, opt: tuple) -> tuple:
        """``(weighted ln p, raw ln p per LM, next state id)`` of word ``i`` of ``opt`` after state ``sid``."""
        st = self.states[sid]
        raws = []
        outs = []
        wsum = 0.0
        w_lms = self.w_lms
        for li in range(self.n_lm):
            out = self.new_state()
            lp = self.lm_models[li].BaseScore(st[li], opt[O_LMW][li][i], out) * LN10
            raws.append(lp)
            outs.append(out)
            wsum += w_lms[li] * lp
        key = tuple(outs)
        nsid = self.state_ids.get(key)
        if nsid is None:
            nsid = self.state_ids[key] = len(self.states)
            self.states.append(key)
        t = (wsum, tuple(raws), nsid)
        self.word_cache[sid * TID_STRIDE + opt[O_WIDS][i]] = t
        return t

    def phrase_step(self, sid: int, key: int, opt: tuple, need_lm: float) -> tuple | None:
        """Walk ``opt``'s words after state ``sid`` (cached per state and word), giving up (None) as soon as the
        exact prefix plus the bound of the rest cannot reach ``need_lm``; only complete walks are cached."""
        n_lm = self.n_lm
        rest = opt[O_REST]
        word_get = self.word_cache.get
        s_ = sid
        acc = 0.0
        raws = None
        for i, wid in enumerate(opt[O_WIDS]):
            t = word_get(s_ * TID_STRIDE + wid)
            if t is None:
                t = self.word_step(s_, i, opt)
            acc += t[0]
            if raws is None:
                raws = t[1]
            elif n_lm == 1:
                raws = (raws[0] + t[1][0],)
            else:
                raws = tuple(a + b for a, b in zip(raws, t[1]))
            s_ = t[2]
            if acc + rest[i] < need_lm:
                return None
        tr = self.lm_cache[key] = (acc, raws if raws is not None else (0.0,) * n_lm, s_)
        return tr

    def end_of_sentence(self, sid: int) -> tuple:
        st = self.states[sid]
        raws = tuple(self.lms[li].end_score(st[li]) for li in range(self.n_lm))
        e = (sum(w * r for w, r in zip(self.w_lms, raws)), raws)
        self.eos_cache[sid] = e
        return e

    # ------------------------------------------------------------------ future costs and stacks
    def future(self, cov: int) -> float:
        """The future cost of the gaps of coverage ``cov`` (cached)."""
        n = self.n
        fc_span = self.fc_span
        total = 0.0
        i = 0
        while i < n:
            if cov >> i & 1:
                i += 1
                continue
            j = i
            while j + 1 < n and not (cov >> (j + 1) & 1):
                j += 1
            total += fc_span[i][j]
            i = j + 1
        self.fc_cache[cov] = total
        return total

    def prune(self, k: int) -> list:
        """Cut stack ``k`` to the hypotheses above its threshold, at most ``stack``; returns them, best first."""
        stk = self.stacks[k]
        hyps = sorted(stk.values(), key=lambda h: -h[H_TOTAL])
        cut = self.best[k] + self.beam
        keep = []
        S = self.S
        for h in hyps:
            if len(keep) >= S or not h[H_TOTAL] > cut:
                break
            keep.append(h)
        if len(keep) < len(hyps):
            self.stats["pruned"] += len(hyps) - len(keep)
            if len(keep) == S and keep[-1][H_TOTAL] > self.thr[k]:
                self.thr[k] = keep[-1][H_TOTAL]
            stk.clear()
            key_of = self.key_of
            for h in keep:
                stk[key_of(h)] = h
        return keep

    def key_of(self, h: list) -> int:
        """The recombination key of ``h``: LM state id, end of the last source phrase, coverage."""
        return (((h[H_SID] << self.endbits) | h[H_LAST]) << self.n) | h[H_COV]

    def place(self, k2: int, rkey: int, new_h: list) -> None:
        """Put ``new_h`` into stack ``k2``: a new hypothesis, or recombined with the one of the same ``rkey``."""
        stk = self.stacks[k2]
        total = new_h[H_TOTAL]
        old = stk.get(rkey)
        counts = self.counts
        if old is None:
            counts[1] += 1
            stk[rkey] = new_h
            self._raise_best(k2, total)
            if len(stk) > self.tolerated:
                self.prune(k2)
        elif total > old[H_TOTAL]:
            counts[2] += 1
            if self.keep_arcs:
                arcs = old[H_ARCS] or []
                old[H_ARCS] = None
                arcs.append(old)
                new_h[H_ARCS] = arcs
            stk[rkey] = new_h
            self._raise_best(k2, total)
        else:
            counts[2] += 1
            if self.keep_arcs:
                if old[H_ARCS] is None:
                    old[H_ARCS] = [new_h]
                else:
                    old[H_ARCS].append(new_h)

    def _raise_best(self, k: int, total: float) -> None:
        if total > self.best[k]:
            self.best[k] = total
            if total + self.beam > self.thr[k]:
                self.thr[k] = total + self.beam

    # ------------------------------------------------------------------ expansion
    def run(self) -> tuple[list | None, list, dict]:
        n = self.n
        if n == 0:
            return None, [], self.stats
        root = [self.fc_span[0][n - 1], 0.0, 0, -1, 0, None, None, (), 0.0, None, -1]
        self.stacks[0][0] = root
        self.best[0] = root[H_TOTAL]
        for k in range(n):
            if not self.stacks[k]:
                continue
            for h in self.prune(k):
                self.expand(k, h)
        c = self.counts
        self.stats.update(expanded=c[0], created=c[1], recombined=c[2], discarded=c[3], lm_misses=c[4],
                          lm_states=len(self.states), bounded=c[5], abandoned=c[6])
        if not self.stacks[n]:
            return None, [], self.stats
        finals = self.prune(n)
        return finals[0], finals, self.stats

    def expand(self, k: int, h: list) -> None:
        """Extend ``h`` (in stack ``k``) by every span the distortion limit allows."""
        self.counts[0] += 1
        n = self.n
        dl = self.dl
        cov = h[H_COV]
        last = h[H_LAST]
        score = h[H_SCORE]
        first_gap = (~cov & (cov + 1)).bit_length() - 1
        for start in range(first_gap, n):
            if cov >> start & 1:
                continue
            d = start - last - 1
            leftmost = start == first_gap
            if dl >= 0:
                if d > dl:
                    break  # further starts jump further
                if -d > dl:
                    continue
                if not leftmost and start - first_gap + 1 > dl:
                    break  # cannot come back to the first gap from here or further right
            base = score - self.w_d * (d if d >= 0 else -d)
            dval = -float(d if d >= 0 else -d)
            for end, mask, slen, packed in self.spans_from[start]:
                if cov & mask:
                    break  # longer spans overlap too
                if dl >= 0 and not leftmost and end - first_gap + 1 > dl:
                    break
                self.extend(h, k + slen, cov | mask, start, end, base, dval, packed)

    def extend(self, h: list, k2: int, new_cov: int, start: int, end: int, base: float, dval: float,
               packed: list) -> None:
        """Add ``h`` + each option of one span to stack ``k2`` (``base``: ``h``'s score with the jump's cost)."""
        fc = self.fc_cache.get(new_cov)
        if fc is None:
            fc = self.future(new_cov)
        complete = new_cov == self.full
        thr = self.thr
        sid = h[H_SID]
        sid_base = sid * TID_STRIDE
        use_ed = self.ed != NEG_INF
        ed = self.ed
        lm_get = self.lm_cache.get
        eos_get = self.eos_cache.get
        counts = self.counts
        # an option survives only if its score in context, base + sl + lm, plus fc
        # reaches the stack threshold: lm >= need - sl, with
        need = thr[k2] - base - fc
        for ub, fut, tid, sl, opt in packed:
            if use_ed:  # options sorted by future score
                if fut < need + ed:
                    counts[3] += 1
                    break
                if ub < need:
                    counts[5] += 1
                    continue
            elif ub < need:  # options sorted by this bound
                counts[5] += 1
                break  # exact: the rest of the span cannot do better
            key = sid_base + tid
            tr = lm_get(key)
            if tr is None:
                counts[4] += 1
                tr = self.phrase_step(sid, key, opt, need - sl)
                if tr is None:
                    counts[6] += 1
                    continue
            nsid = tr[2]
            gain = sl + tr[0]
            if complete:
                e = eos_get(nsid)
                if e is None:
                    e = self.end_of_sentence(nsid)
                gain += e[0]
            if gain < need:
                counts[3] += 1
                continue
            new_score = base + gain
            total = new_score + fc
            lmraw = tr[1]
            if complete:
                lmraw = tuple(a + b for a, b in zip(lmraw, e[1]))
            rkey = (((nsid << self.endbits) | end) << self.n) | new_cov
            self.place(k2, rkey, [total, new_score, new_cov, end, nsid, h, opt, lmraw, dval, None, start])
            need = thr[k2] - base - fc

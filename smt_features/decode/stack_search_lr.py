"""The Python stack search with a lexicalized reordering feature (:class:`ReorderingStackSearch`).

The same search as :class:`smt_features.decode.stack_search.StackSearch` (used when the model has no
such feature, so its results stay as they were), with Moses's ``msd-bidirectional-fe`` scores
(:mod:`smt_features.model.reordering`) added when a phrase is placed:

* the orientation of the new span w.r.t. the hypothesis's last span fixes, for the whole span, the
  *forward* value taken from the previous option (added to ``base`` with the distortion cost) and
  which *backward* value of each new option counts (added to its stateless score);
* the recombination key adds the start of the last source phrase and the id of the last option's
  forward values (:data:`smt_features.decode.hypothesis.O_FID`), Moses's reordering-state comparison.

The compiled core (``csrc/search.cpp``) does the same operations in the same order.
"""
from __future__ import annotations

from smt_features.decode.hypothesis import (
    H_COV, H_LAST, H_OPT, H_SID, H_START, NEG_INF, O_FID, O_LR, TID_STRIDE,
)
from smt_features.decode.stack_search import StackSearch
from smt_features.model.reordering import orientation


class ReorderingStackSearch(StackSearch):
    """:class:`StackSearch` plus the lexicalized reordering feature of ``tables.reordering``."""

    def __init__(self, tables, lms, options, words, keep_arcs) -> None:
        super().__init__(tables, lms, options, words, keep_arcs)
        self.w_lr = tables.w_lr

    def key_of(self, h: list) -> int:
        """LM state id, start and end of the last source phrase, its option's forward-values id, coverage."""
        fid = h[H_OPT][O_FID] if h[H_OPT] is not None else 0
        eb = self.endbits
        return (((((((fid << 32) | h[H_SID]) << eb) | h[H_START]) << eb) | h[H_LAST]) << self.n) | h[H_COV]

    def extend(self, h: list, k2: int, new_cov: int, start: int, end: int, base: float, dval: float,
               packed: list) -> None:
        """As :meth:`StackSearch.extend`, with the reordering values of the span's orientation."""
        ori = orientation(h[H_START], h[H_LAST], start, end)
        w_lr = self.w_lr
        prev = h[H_OPT]
        if prev is not None and prev[O_LR] is not None:
            base = base + w_lr[3 + ori] * prev[O_LR][3 + ori]
        w_b = w_lr[ori]
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
        eb = self.endbits
        need = thr[k2] - base - fc
        for ub, fut, tid, sl, opt in packed:
            if use_ed:
                if fut < need + ed:
                    counts[3] += 1
                    break
                if ub < need:
                    counts[5] += 1
                    continue
            elif ub < need:
                counts[5] += 1
                break
            lr = opt[O_LR]
            slb = sl if lr is None else sl + w_b * lr[ori]
            key = sid_base + tid
            tr = lm_get(key)
            if tr is None:
                counts[4] += 1
                tr = self.phrase_step(sid, key, opt, need - slb)
                if tr is None:
                    counts[6] += 1
                    continue
            nsid = tr[2]
            gain = slb + tr[0]
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
            rkey = (((((((opt[O_FID] << 32) | nsid) << eb) | start) << eb) | end) << self.n) | new_cov
            self.place(k2, rkey, [total, new_score, new_cov, end, nsid, h, opt, lmraw, dval, None, start])
            need = thr[k2] - base - fc

"""Translation options for one weight vector (:class:`SearchTables`): what the Python and the compiled search read.

* **Translation options** are collected once per sentence for every source
  span of at most ``max_phrase_length`` words that the phrase table holds.
  A single word with no entry is copied through (unknown word, see
  :mod:`smt_features.model.features`). Each source phrase's options are scored
  once per weight vector (stateless features, LM isolation estimate), sorted by
  their *future score* ``Σ λ·h_stateless + λ_LM · ln p_LM(phrase alone)``
  and cut to the ``table-limit`` best — the criterion Moses uses for
  ``table-limit`` — then cached here.
* **Future costs** (Moses's "estimated scores", :func:`future_cost_table`): the
  best option future score of each span, then for every span ``[i, j]`` the best
  of itself and any split ``[i, k] + [k+1, j]`` (dynamic programming).
* **Score bounds** (for exact bound pruning): each option carries an upper bound
  of its score in any context — its stateless score plus, per target word, the
  LM weight times an upper bound of ``ln p(word | history)`` (for the first
  ``order - 1`` words the best probability of any n-gram ending in the word, read
  from the ARPA file beside the KenLM binary; for later words the exact value,
  their history lying inside the phrase), plus, with a lexicalized reordering
  feature, the most its own (backward) reordering value can add.
* **Lexicalized reordering** (:mod:`smt_features.model.reordering`): each option
  carries its pair's six log values and an id of its three forward values
  (equal values, equal ids: the recombination key of the searches).

A new weight vector gets new tables (``Decoder.set_weights``); the compiled core
notices by identity and forgets the options it registered.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from smt_features.decode.hypothesis import NEG_INF, O_FUT, O_UB
from smt_features.decode.options import SearchOptions
from smt_features.decode.table import PhraseTable


class SearchTables:
    """Options (tuples in the ``O_*`` layout of :mod:`smt_features.decode.hypothesis`) cached per source phrase
    for the weights ``weights``, with the weights the searches need (``w_dist``, ``w_lms``) and the ids of target
    phrases and words."""

    def __init__(self, *, size: int, stateless: list, lms: list, weights: list[float], w_dist: float,
                 w_lms: list[float], table: PhraseTable, options: SearchOptions, table_limit: int,
                 reordering=None, w_lr: list[float] | None = None) -> None:
        self.size = size
        self.stateless = stateless  # [(feature, offset)]
        self.lms = lms
        self.weights = weights
        self.w_dist = w_dist
        self.w_lms = w_lms
        self.table = table
        self.options = options
        self.table_limit = table_limit
        self.option_cache: dict[tuple[str, ...], list[tuple]] = {}
        self.unknown_cache: dict[str, tuple] = {}
        self.bound_cache: dict[tuple[str, ...], list[tuple]] = {}  # options_for's lists, by upper bound
        self.phrase_ids: dict[tuple[str, ...], int] = {}
        self.word_ids: dict[str, int] = {}
        self.reordering = reordering  # a LexicalReorderingFeature or None
        self.w_lr = w_lr  # its six weights (None without it)
        self.fwd_ids: dict = {None: 0}

    def make_option(self, src: tuple[str, ...], tgt: tuple[str, ...], scores) -> tuple:
        return self._complete_option(src, tgt, scores, self._rank_values(src, tgt, scores))

    def _rank_values(self, src: tuple[str, ...], tgt: tuple[str, ...], scores) -> tuple:
        """What ranks an option before the table limit: ``(vec, sl, lm_words, fut)``, its stateless feature
        values, their weighted sum and its future score (``sl`` + each LM's weight × its isolated score)."""
        vec = [0.0] * self.size
        for f, off in self.stateless:
            vals = f.phrase_values(src, tgt, scores)
            vec[off:off + len(vals)] = vals
        sl = math.fsum(wi * vi for wi, vi in zip(self.weights, vec) if vi)
        lm_words = tuple(lm.lm_words(tgt) for lm in self.lms)
        fut = sl
        for lm, wl, words in zip(self.lms, self.w_lms, lm_words):
            if wl:
                fut += wl * lm.null_phrase_score(words)
        return vec, sl, lm_words, fut

    def _complete_option(self, src: tuple[str, ...], tgt: tuple[str, ...], scores, ranked: tuple) -> tuple:
        """The option of a pair kept by the table limit: its rank values, then its score bounds, lexicalized
        reordering values and ids (in the ``O_*`` layout)."""
        vec, sl, lm_words, fut = ranked
        pos_bounds = [0.0] * len(tgt)  # weighted LM bound of each target position
        bounded = self.options.bound_pruning
        for lm, wl, words in zip(self.lms, self.w_lms, lm_words):
            if wl > 0:  # ln p <= bound <= 0 (and ln p(</s>) <= 0), so wl * ln p <= wl * bound
                for i, b in enumerate(lm.position_upper_bounds(words)):
                    pos_bounds[i] += wl * b
            elif wl:  # a negative LM weight: no bound
                bounded = False
        lr = fid = None
        if self.reordering is not None:
            lr = self.reordering.scores(src, tgt) if scores is not None else None
            fid = self.fwd_ids.get(None if lr is None else lr[3:])
            if fid is None:
                fid = self.fwd_ids[lr[3:]] = len(self.fwd_ids)
        if bounded:
            ub = sl + sum(pos_bounds)
            if self.reordering is not None:
                ub += self.reordering.backward_bound(self.w_lr, lr)
            rest = [0.0] * len(tgt)
            for i in range(len(tgt) - 2, -1, -1):
                rest[i] = rest[i + 1] + pos_bounds[i + 1]
        else:
            ub = math.inf
            rest = [math.inf] * len(tgt)
        tid = self.phrase_ids.get(tgt)
        if tid is None:
            tid = self.phrase_ids[tgt] = len(self.phrase_ids)
        wids = []
        for word in tgt:
            wid = self.word_ids.get(word)
            if wid is None:
                wid = self.word_ids[word] = len(self.word_ids)
            wids.append(wid)
        return (tid, tgt, sl, tuple(vec), fut, lm_words, ub, tuple(wids), tuple(rest), lr, fid or 0)

    def options_for(self, src: tuple[str, ...]) -> list[tuple]:
        """The ranked, table-limited options of a source phrase (cached); ``[]`` if the table lacks it. Every
        entry is ranked by its future score; only the ``table_limit`` best are completed (bounds, reordering,
        ids), as the others are cut."""
        opts = self.option_cache.get(src)
        if opts is not None:
            return opts
        entries = self.table.get(src)
        if not entries:
            opts = []
        else:
            ranked = [self._rank_values(src, tgt, scores) for tgt, scores in entries]
            futures = [fut for *_, fut in ranked]
            order = sorted(range(len(entries)), key=lambda i: -futures[i])  # stable: ties keep file order
            limit = self.table_limit
            if limit:
                order = order[:limit]
            opts = [self._complete_option(src, entries[i][0], entries[i][1], ranked[i]) for i in order]
        self.option_cache[src] = opts
        return opts

    def options_by_bound(self, src: tuple[str, ...]) -> list[tuple]:
        """:meth:`options_for`'s list ordered by the upper bound of each option's score (cached)."""
        opts = self.bound_cache.get(src)
        if opts is None:
            opts = self.bound_cache[src] = sorted(self.options_for(src), key=lambda o: -o[O_UB])
        return opts

    def unknown_option(self, word: str) -> tuple:
        opt = self.unknown_cache.get(word)
        if opt is None:
            opt = self.unknown_cache[word] = self.make_option((word,), (word,), None)
        return opt

    def collect_options(self, words: Sequence[str]) -> list[list[tuple[int, list[tuple]]]]:
        """``spans[start] = [(end, options), …]`` for every span that has options (unknown words included).

        Each span's options are ordered for the search: by the upper bound of their score in
        context (so the search can stop at the first one that cannot reach a stack), or, with
        early discarding, by their future score (so it stops at the first one discarded).
        """
        ranked = self.options_for if self.options.early_discarding_threshold > 0 else self.options_by_bound
        n = len(words)
        maxlen = min(self.options.max_phrase_length, max(self.table.max_src_len, 1))
        spans: list[list[tuple[int, list[tuple]]]] = []
        for i in range(n):
            row = []
            for j in range(i, min(n, i + maxlen)):
                opts = ranked(tuple(words[i:j + 1]))
                if j == i and not opts:
                    opts = [self.unknown_option(words[i])]
                if opts:
                    row.append((j, opts))
            spans.append(row)
        return spans


def future_cost_table(n: int, spans) -> list[list[float]]:
    """``fc[i][j]``: best estimated score of covering ``[i, j]`` (Moses's ``CalcEstimatedScore``)."""
    fc = [[NEG_INF] * n for _ in range(n)]
    for i, row in enumerate(spans):
        for j, opts in row:
            best = max(o[O_FUT] for o in opts)
            if best > fc[i][j]:
                fc[i][j] = best
    for length in range(2, n + 1):
        for i in range(0, n - length + 1):
            j = i + length - 1
            best = fc[i][j]
            for k in range(i, j):
                s = fc[i][k] + fc[k + 1][j]
                if s > best:
                    best = s
            fc[i][j] = best
    return fc

"""Phrase-based stack decoding: Koehn's beam search, as Moses's default ("normal") search.

Search
------
* **Translation options** are collected once per sentence for every source
  span of at most ``max_phrase_length`` words that the phrase table holds.
  A single word with no entry is copied through (unknown word, see
  :mod:`smt_features.model.features`). Each source phrase's options are scored
  once per decoder (stateless features, LM isolation estimate), sorted by
  their *future score* ``Σ λ·h_stateless + λ_LM · ln p_LM(phrase alone)``
  and cut to the ``table-limit`` best — the criterion Moses uses for
  ``table-limit`` — then cached.
* **Future costs** (Moses's "estimated scores"): the best option future
  score of each span, then for every span ``[i, j]`` the best of itself and
  any split ``[i, k] + [k+1, j]`` (dynamic programming). A hypothesis is
  ranked by its score plus the future cost of each uncovered gap.
* **Hypotheses** live in stacks indexed by the number of covered source
  words. Two hypotheses with the same coverage (a bitmask ``int``), the
  same end of the last source phrase and the same LM state are
  **recombined**: the better one stays, the other becomes one of its
  *arcs* (kept for n-best extraction).
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
* **n-best lists** follow the recombination arcs (Moses's trellis paths):
  replacing a hypothesis of a path by one of its arcs changes the total by
  the difference of their scores, since everything after them is the same.

Speed
-----
The search loop works on integers: coverage bitmasks, a per-sentence id for
each distinct LM state, a per-decoder id for each distinct target phrase and
word; LM transitions are cached per ``(state id, phrase id)`` and per
``(state id, word id)``, ``</s>`` scores per state, future costs per
coverage; options are tuples of precomputed numbers.

**Bound pruning** (exact, ``bound_pruning``): each option carries an upper
bound of its score in any context — its stateless score plus, per target
word, the LM weight times an upper bound of ``ln p(word | history)`` (for
the first ``order - 1`` words the best probability of any n-gram ending in
the word, read from the ARPA file beside the KenLM binary; for later words
the exact value, their history lying inside the phrase). A span's options
are visited by decreasing bound and the loop stops at the first that cannot
reach the target stack's threshold; an uncached LM score is computed word
by word and abandoned as soon as the exact prefix plus the bound of the
rest falls short. Results are those of the plain loop (``bound_pruning=False``).

``decode_corpus`` spreads sentences over worker processes forked after
loading (copy on write), keeping the input order.
"""
from __future__ import annotations

import gc
import heapq
import logging
import math
import multiprocessing
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from smt_features.model.features import (
    LN10, DistortionFeature, Feature, FeatureSet, KenLMFeature, PhrasePenaltyFeature, PhraseTableFeature,
    UnknownWordPenaltyFeature, WordPenaltyFeature,
)

log = logging.getLogger(__name__)

NEG_INF = float("-inf")

# Option tuple fields: target-phrase id, target words, weighted stateless score, stateless values,
# future score (stateless + LM estimate), LM-side words per LM, upper bound of the weighted score in context
# (O_REST[i]: bound of the weighted LM score of the words after position i)
O_TID, O_TGT, O_SL, O_VEC, O_FUT, O_LMW, O_UB, O_WIDS, O_REST = range(9)
# Hypothesis list fields
H_TOTAL, H_SCORE, H_COV, H_LAST, H_SID, H_PREV, H_OPT, H_LM, H_DIST, H_ARCS, H_START = range(11)
_TID_STRIDE = 1 << 32  # cache keys: state id * stride + phrase (or word) id


# =============================================================================== options

@dataclass
class SearchOptions:
    """Search settings; defaults are Moses's (``stack 200``, ``beam-threshold 1e-5``,
    ``distortion-limit 6`` from train-model.perl, table limit 20)."""

    stack_size: int = 200
    beam_threshold: float = 1e-5
    distortion_limit: int = 6
    table_limit: int = 20
    max_phrase_length: int = 20
    early_discarding_threshold: float = 0.0
    nbest_factor: int = 20
    #: skip options whose score bound cannot reach the target stack (exact; off = plain Moses loop)
    bound_pruning: bool = True
    #: tighten those bounds with per-word maxima read from the LM's ARPA file (exact)
    lm_upper_bounds: bool = True
    #: 'python', 'compiled' (smt_features.decode.fast_search; error if not built) or 'auto' (compiled when
    #: built and the model is supported, else Python); both give identical results
    search: str = "auto"

    def __post_init__(self) -> None:
        if self.stack_size < 1:
            raise ValueError("stack size must be >= 1")
        if not (0.0 <= self.beam_threshold <= 1.0):
            raise ValueError("beam-threshold is a probability ratio in [0, 1] (0 = no beam)")
        if self.early_discarding_threshold < 0.0:
            raise ValueError("early-discarding-threshold is a probability ratio >= 0 (0 = off)")
        if self.max_phrase_length < 1:
            raise ValueError("max-phrase-length must be >= 1")
        if self.table_limit < 0:
            raise ValueError("table-limit must be >= 0 (0 = no limit)")
        if self.search not in ("python", "compiled", "auto"):
            raise ValueError(f"search must be 'python', 'compiled' or 'auto', got {self.search!r}")

    @property
    def beam_width(self) -> float:
        """``ln(beam-threshold)`` (Moses's ``TransformScore``); ``-inf`` = no threshold pruning."""
        return math.log(self.beam_threshold) if self.beam_threshold > 0 else NEG_INF

    @property
    def early_discarding_width(self) -> float:
        return (math.log(self.early_discarding_threshold) if self.early_discarding_threshold > 0
                else NEG_INF)


# =============================================================================== phrase table

class PhraseTable:
    """A Moses phrase table in memory: ``source tuple → [(target tuple, scores tuple), …]``.

    Everything is kept (file order); the decoder ranks and cuts each
    source phrase's list to the table limit when it first needs it.
    """

    def __init__(self, entries: dict[tuple[str, ...], list[tuple[tuple[str, ...], tuple[float, ...]]]],
                 num_scores: int, path: str | None = None) -> None:
        self.entries = entries
        self.num_scores = num_scores
        self.path = path
        self.max_src_len = max((len(s) for s in entries), default=0)
        self.num_pairs = sum(len(v) for v in entries.values())

    @classmethod
    def load(cls, path: str | Path) -> "PhraseTable":
        """Read a table with the strict reader of :mod:`nmt.formats.phrase_table`."""
        from nmt.formats.phrase_table import PhraseTableReader

        reader = PhraseTableReader(path, keep_raw=False, intern=True)
        entries: dict[tuple[str, ...], list] = {}
        get = entries.get
        for e in reader:
            bucket = get(e.src)
            if bucket is None:
                entries[e.src] = [(e.tgt, e.scores)]
            else:
                bucket.append((e.tgt, e.scores))
        return cls(entries, reader.num_scores or 0, str(path))

    @classmethod
    def from_entries(cls, entries: Iterable) -> "PhraseTable":
        """From ``PhraseEntry`` objects or ``(src, tgt, scores)`` tuples (phrases as tuples or strings)."""
        table: dict[tuple[str, ...], list] = {}
        num = None
        for e in entries:
            src, tgt, scores = e[0], e[1], e[2]
            src = tuple(src.split()) if isinstance(src, str) else tuple(src)
            tgt = tuple(tgt.split()) if isinstance(tgt, str) else tuple(tgt)
            scores = tuple(float(s) for s in scores)
            if num is None:
                num = len(scores)
            elif len(scores) != num:
                raise ValueError(f"{len(scores)} scores for {' '.join(src)!r} but earlier entries have {num}")
            table.setdefault(src, []).append((tgt, scores))
        return cls(table, num or 0)

    def get(self, src: tuple[str, ...]):
        return self.entries.get(src)

    def __len__(self) -> int:
        return self.num_pairs


# =============================================================================== results

@dataclass
class Translation:
    """One translation: target tokens, model score ``Σ λ·h`` and the feature values ``h``.

    ``values`` is flat in the decoder's :class:`FeatureSet` layout
    (``decoder.features.split(values)`` gives ``{name: values}``).
    ``segments`` lists ``(src_start, src_end, target phrase)`` in target order.
    """

    tokens: list[str]
    score: float
    values: list[float]
    segments: list[tuple[int, int, tuple[str, ...]]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


@dataclass
class DecodeResult:
    """Best translation and (when asked) the n-best list of one sentence."""

    sent_id: int
    best: Translation
    nbest: list[Translation] = field(default_factory=list)
    seconds: float = 0.0
    stats: dict[str, int] = field(default_factory=dict)


# =============================================================================== decoder

class Decoder:
    """A phrase-based decoder over a log-linear model.

    ``features``: the model's features in order (one
    :class:`PhraseTableFeature`, any stateless features, at most one
    :class:`DistortionFeature`, any number of :class:`KenLMFeature`);
    ``weights``: ``{feature name: [λ…]}`` or a flat list in feature order;
    ``table``: the phrase table of the translation-model feature.
    """

    def __init__(self, features: FeatureSet | Sequence[Feature], weights: Mapping[str, Sequence[float]] | Sequence[float],
                 table: PhraseTable, options: SearchOptions | None = None) -> None:
        self.features = features if isinstance(features, FeatureSet) else FeatureSet(features)
        self.options = options or SearchOptions()
        self.table = table
        tms = self.features.of_kind(PhraseTableFeature)
        if len(tms) != 1:
            raise ValueError(f"the decoder needs exactly one phrase-table feature, got {len(tms)}")
        self.tm: PhraseTableFeature = tms[0]  # type: ignore[assignment]
        if table.num_scores and table.num_scores != self.tm.num_values:
            raise ValueError(f"{self.tm.name} declares {self.tm.num_values} features but the table "
                             f"{table.path or ''} has {table.num_scores} score columns")
        dist = self.features.of_kind(DistortionFeature)
        if len(dist) > 1:
            raise ValueError("at most one Distortion feature")
        self.distortion: DistortionFeature | None = dist[0] if dist else None  # type: ignore[assignment]
        self.lms: list[KenLMFeature] = self.features.of_kind(KenLMFeature)  # type: ignore[assignment]
        for f in self.features:
            if f.stateful and not isinstance(f, (DistortionFeature, KenLMFeature)):
                raise ValueError(f"stateful feature {f.name} ({type(f).__name__}) is not supported by the decoder")
        self._stateless = [(f, self.features.offsets[i]) for i, f in enumerate(self.features) if not f.stateful]
        self._lm_offsets = [self.features.offsets[self.features.index(lm.name)] for lm in self.lms]
        self._dist_offset = (self.features.offsets[self.features.index(self.distortion.name)]
                             if self.distortion is not None else None)
        if self.options.lm_upper_bounds and self.options.bound_pruning:
            for lm in self.lms:
                if not lm.load_upper_bounds():
                    log.info("%s: no ARPA file beside %s; bounding ln p(w|h) by 0", lm.name, lm.path)
        self.set_weights(weights)
        from smt_features.decode import fast_search  # the compiled search core, when built (else None)

        self._fast = fast_search.attach(self)

    @property
    def search_kind(self) -> str:
        """``'compiled'`` when decode() runs the compiled search core, else ``'python'``."""
        return "compiled" if self._fast is not None else "python"

    # ------------------------------------------------------------------ weights and caches
    def set_weights(self, weights: Mapping[str, Sequence[float]] | Sequence[float]) -> None:
        """Set ``λ`` (clears the option caches, whose ranking depends on it)."""
        if isinstance(weights, Mapping):
            vec = self.features.weight_vector(weights)
        else:
            vec = [float(w) for w in weights]
            if len(vec) != self.features.size:
                raise ValueError(f"{len(vec)} weights for {self.features.size} feature values")
        self.weights = vec
        self._w_dist = vec[self._dist_offset] if self._dist_offset is not None else 0.0
        self._w_lms = [vec[o] for o in self._lm_offsets]
        self._opt_cache: dict[tuple[str, ...], list[tuple]] = {}
        self._unk_cache: dict[str, tuple] = {}
        self._tids: dict[tuple[str, ...], int] = {}
        self._wids: dict[str, int] = {}

    def weight_dict(self) -> dict[str, list[float]]:
        return self.features.split(self.weights)

    # ------------------------------------------------------------------ translation options
    def _make_option(self, src: tuple[str, ...], tgt: tuple[str, ...], scores) -> tuple:
        vec = [0.0] * self.features.size
        for f, off in self._stateless:
            vals = f.phrase_values(src, tgt, scores)
            vec[off:off + len(vals)] = vals
        w = self.weights
        sl = math.fsum(wi * vi for wi, vi in zip(w, vec) if vi)
        lm_words = tuple(lm.lm_words(tgt) for lm in self.lms)
        fut = sl
        pos_bounds = [0.0] * len(tgt)  # weighted LM bound of each target position
        bounded = self.options.bound_pruning
        for lm, wl, words in zip(self.lms, self._w_lms, lm_words):
            if wl:
                fut += wl * lm.score_phrase(lm.null_state(), words)[0]
                if wl > 0:  # ln p <= bound <= 0 (and ln p(</s>) <= 0), so wl * ln p <= wl * bound
                    for i, b in enumerate(lm.position_upper_bounds(words)):
                        pos_bounds[i] += wl * b
                else:  # a negative LM weight: no bound
                    bounded = False
        if bounded:
            ub = sl + sum(pos_bounds)
            rest = [0.0] * len(tgt)
            for i in range(len(tgt) - 2, -1, -1):
                rest[i] = rest[i + 1] + pos_bounds[i + 1]
        else:
            ub = math.inf
            rest = [math.inf] * len(tgt)
        tid = self._tids.get(tgt)
        if tid is None:
            tid = self._tids[tgt] = len(self._tids)
        wids = []
        for word in tgt:
            wid = self._wids.get(word)
            if wid is None:
                wid = self._wids[word] = len(self._wids)
            wids.append(wid)
        return (tid, tgt, sl, tuple(vec), fut, lm_words, ub, tuple(wids), tuple(rest))

    def options_for(self, src: tuple[str, ...]) -> list[tuple]:
        """The ranked, table-limited options of a source phrase (cached); ``[]`` if the table lacks it."""
        opts = self._opt_cache.get(src)
        if opts is not None:
            return opts
        entries = self.table.get(src)
        if not entries:
            opts = []
        else:
            made = [self._make_option(src, tgt, scores) for tgt, scores in entries]
            made.sort(key=lambda o: -o[O_FUT])  # stable: ties keep file order
            limit = self.options.table_limit if self.tm.table_limit is None else self.tm.table_limit
            opts = made[:limit] if limit else made
        self._opt_cache[src] = opts
        return opts

    def unknown_option(self, word: str) -> tuple:
        opt = self._unk_cache.get(word)
        if opt is None:
            opt = self._unk_cache[word] = self._make_option((word,), (word,), None)
        return opt

    def collect_options(self, words: Sequence[str]) -> list[list[tuple[int, list[tuple]]]]:
        """``spans[start] = [(end, options), …]`` for every span that has options (unknown words included).

        Each span's options are ordered for the search: by the upper bound of their score in
        context (so the search can stop at the first one that cannot reach a stack), or, with
        early discarding, by their future score (so it stops at the first one discarded).
        """
        by_fut = self.options.early_discarding_threshold > 0
        n = len(words)
        maxlen = min(self.options.max_phrase_length, max(self.table.max_src_len, 1))
        spans: list[list[tuple[int, list[tuple]]]] = []
        for i in range(n):
            row = []
            for j in range(i, min(n, i + maxlen)):
                opts = self.options_for(tuple(words[i:j + 1]))
                if j == i and not opts:
                    opts = [self.unknown_option(words[i])]
                if opts:
                    row.append((j, opts if by_fut else sorted(opts, key=lambda o: -o[O_UB])))
            spans.append(row)
        return spans

    @staticmethod
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

    # ------------------------------------------------------------------ search
    def translate(self, words: Sequence[str] | str) -> Translation:
        """The best translation of one tokenized sentence."""
        return self.decode(words).best

    def decode(self, words: Sequence[str] | str, nbest: int = 0, distinct: bool = False,
               sent_id: int = 0) -> DecodeResult:
        """Decode one sentence (tokens or a space-separated string); ``nbest > 0`` also extracts an n-best list."""
        if isinstance(words, str):
            words = words.split()
        words = list(words)
        if self._fast is not None:  # identical results; None = a sentence it leaves to Python
            result = self._fast.decode(words, nbest, distinct, sent_id)
            if result is not None:
                return result
        t0 = time.perf_counter()
        final, stats = self._search(words, keep_arcs=nbest > 0)
        if final is None:
            best = self._empty_translation(len(words) == 0)
            result = DecodeResult(sent_id, best, [best] if nbest > 0 and not words else [], 0.0, stats)
        else:
            best = self._path_translation(self._chain(final), final[H_SCORE])
            result = DecodeResult(sent_id, best, [], 0.0, stats)
            if nbest > 0:
                result.nbest = self._nbest(self._final_hyps, nbest, distinct)
        result.seconds = time.perf_counter() - t0
        return result

    def _empty_translation(self, empty_input: bool) -> Translation:
        values = [0.0] * self.features.size
        score = 0.0
        if empty_input:  # the empty sentence: p(</s> | <s>)
            for lm, off, wl in zip(self.lms, self._lm_offsets, self._w_lms):
                v = lm.end_score(lm.begin_state())
                values[off] = v
                score += wl * v
        else:
            log.warning("no complete hypothesis survived the search; returning an empty translation")
            score = NEG_INF
        return Translation([], score, values, [])

    def _search(self, words: list[str], keep_arcs: bool):
        n = len(words)
        self._final_hyps = []
        stats = {"expanded": 0, "created": 0, "recombined": 0, "discarded": 0, "pruned": 0, "lm_misses": 0}
        if n == 0:
            return None, stats
        opts_o = self.options
        spans = self.collect_options(words)
        fc_span = self.future_cost_table(n, spans)
        full = (1 << n) - 1
        # spans_from[start] = [(end, mask, opts, length, early_cut)]
        # spans_from[start] = [(end, mask, length, [(bound, future, phrase id, stateless score, option)])]
        spans_from = []
        for i, row in enumerate(spans):
            spans_from.append([(j, ((1 << (j - i + 1)) - 1) << i, j - i + 1,
                                [(o[O_UB], o[O_FUT], o[O_TID], o[O_SL], o) for o in opts]) for j, opts in row])

        fc_cache: dict[int, float] = {}

        def future(cov: int) -> float:
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
            fc_cache[cov] = total
            return total

        # ---- language-model states (interned per sentence)
        lms = self.lms
        n_lm = len(lms)
        w_lms = self._w_lms
        begin = tuple(lm.begin_state() for lm in lms)
        state_ids: dict = {begin: 0}
        states: list = [begin]
        lm_cache: dict[int, tuple] = {}
        eos_cache: dict[int, tuple] = {}

        # Transitions are cached per (state, phrase) and, below that, per (state, word): phrases
        # that share a prefix share the KenLM queries of that prefix.
        word_cache: dict[int, tuple] = {}
        word_get = word_cache.get
        lm_models = [lm._model for lm in lms]
        new_state = lms[0]._State if lms else None

        def word_step(sid: int, i: int, opt: tuple) -> tuple:
            st = states[sid]
            raws = []
            outs = []
            wsum = 0.0
            for li in range(n_lm):
                out = new_state()
                lp = lm_models[li].BaseScore(st[li], opt[O_LMW][li][i], out) * LN10
                raws.append(lp)
                outs.append(out)
                wsum += w_lms[li] * lp
            key = tuple(outs)
            nsid = state_ids.get(key)
            if nsid is None:
                nsid = state_ids[key] = len(states)
                states.append(key)
            t = (wsum, tuple(raws), nsid)
            word_cache[sid * _TID_STRIDE + opt[O_WIDS][i]] = t
            return t

        def end_of_sentence(sid: int) -> tuple:
            st = states[sid]
            raws = tuple(lms[li].end_score(st[li]) for li in range(n_lm))
            e = (sum(w * r for w, r in zip(w_lms, raws)), raws)
            eos_cache[sid] = e
            return e

        # ---- stacks
        S = opts_o.stack_size
        tolerated = 2 * S - 1
        beam = opts_o.beam_width
        ed = opts_o.early_discarding_width
        use_ed = ed != NEG_INF
        dl = opts_o.distortion_limit
        w_d = self._w_dist
        stacks: list[dict] = [dict() for _ in range(n + 1)]
        best = [NEG_INF] * (n + 1)
        thr = [NEG_INF] * (n + 1)
        endbits = max(1, n.bit_length())

        def prune(k: int) -> list:
            stk = stacks[k]
            hyps = sorted(stk.values(), key=lambda h: -h[H_TOTAL])
            cut = best[k] + beam
            keep = []
            for h in hyps:
                if len(keep) >= S or not h[H_TOTAL] > cut:
                    break
                keep.append(h)
            if len(keep) < len(hyps):
                stats["pruned"] += len(hyps) - len(keep)
                if len(keep) == S and keep[-1][H_TOTAL] > thr[k]:
                    thr[k] = keep[-1][H_TOTAL]
                stk.clear()
                for h in keep:
                    stk[(((h[H_SID] << endbits) | h[H_LAST]) << n) | h[H_COV]] = h
            return keep

        root = [fc_span[0][n - 1], 0.0, 0, -1, 0, None, None, (), 0.0, None, -1]
        stacks[0][0] = root
        best[0] = root[H_TOTAL]
        lm_get = lm_cache.get
        eos_get = eos_cache.get
        fc_get = fc_cache.get
        n_created = n_recomb = n_disc = n_miss = n_exp = n_bound = n_abandon = 0

        for k in range(n):
            if not stacks[k]:
                continue
            hyps = prune(k)
            for h in hyps:
                n_exp += 1
                score = h[H_SCORE]
                cov = h[H_COV]
                last = h[H_LAST]
                sid = h[H_SID]
                sid_base = sid * _TID_STRIDE
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
                    base = score - w_d * (d if d >= 0 else -d)
                    dval = -float(d if d >= 0 else -d)
                    for end, mask, slen, packed in spans_from[start]:
                        if cov & mask:
                            break  # longer spans overlap too
                        if dl >= 0 and not leftmost and end - first_gap + 1 > dl:
                            break
                        new_cov = cov | mask
                        fc = fc_get(new_cov)
                        if fc is None:
                            fc = future(new_cov)
                        k2 = k + slen
                        stk = stacks[k2]
                        complete = new_cov == full
                        # an option survives only if its score in context, base + sl + lm, plus fc
                        # reaches the stack threshold: lm >= need - sl, with
                        need = thr[k2] - base - fc
                        for ub, fut, tid, sl, opt in packed:
                            if use_ed:  # options sorted by future score
                                if fut < need + ed:
                                    n_disc += 1
                                    break
                                if ub < need:
                                    n_bound += 1
                                    continue
                            elif ub < need:  # options sorted by this bound
                                n_bound += 1
                                break  # exact: the rest of the span cannot do better
                            key = sid_base + tid
                            tr = lm_get(key)
                            if tr is None:
                                # walk the phrase word by word (cached per state and word), giving up
                                # as soon as the exact prefix plus the bound of the rest cannot
                                # reach the threshold; only complete walks are cached
                                n_miss += 1
                                need_lm = need - sl
                                rest = opt[O_REST]
                                s_ = sid
                                acc = 0.0
                                raws = None
                                for i, wid in enumerate(opt[O_WIDS]):
                                    t = word_get(s_ * _TID_STRIDE + wid)
                                    if t is None:
                                        t = word_step(s_, i, opt)
                                    acc += t[0]
                                    if raws is None:
                                        raws = t[1]
                                    elif n_lm == 1:
                                        raws = (raws[0] + t[1][0],)
                                    else:
                                        raws = tuple(a + b for a, b in zip(raws, t[1]))
                                    s_ = t[2]
                                    if acc + rest[i] < need_lm:
                                        break
                                else:
                                    tr = lm_cache[key] = (acc, raws if raws is not None else (0.0,) * n_lm, s_)
                                if tr is None:
                                    n_abandon += 1
                                    continue
                            nsid = tr[2]
                            gain = sl + tr[0]
                            if complete:
                                e = eos_get(nsid)
                                if e is None:
                                    e = end_of_sentence(nsid)
                                gain += e[0]
                            if gain < need:
                                n_disc += 1
                                continue
                            new_score = base + gain
                            total = new_score + fc
                            lmraw = tr[1]
                            if complete:
                                lmraw = tuple(a + b for a, b in zip(lmraw, e[1]))
                            rkey = (((nsid << endbits) | end) << n) | new_cov
                            old = stk.get(rkey)
                            if old is None:
                                n_created += 1
                                stk[rkey] = [total, new_score, new_cov, end, nsid, h, opt, lmraw, dval, None, start]
                                if total > best[k2]:
                                    best[k2] = total
                                    if total + beam > thr[k2]:
                                        thr[k2] = total + beam
                                        need = thr[k2] - base - fc
                                if len(stk) > tolerated:
                                    prune(k2)
                                    need = thr[k2] - base - fc
                            elif total > old[H_TOTAL]:
                                n_recomb += 1
                                new_h = [total, new_score, new_cov, end, nsid, h, opt, lmraw, dval, None, start]
                                if keep_arcs:
                                    arcs = old[H_ARCS] or []
                                    old[H_ARCS] = None
                                    arcs.append(old)
                                    new_h[H_ARCS] = arcs
                                stk[rkey] = new_h
                                if total > best[k2]:
                                    best[k2] = total
                                    if total + beam > thr[k2]:
                                        thr[k2] = total + beam
                                        need = thr[k2] - base - fc
                            else:
                                n_recomb += 1
                                if keep_arcs:
                                    loser = [total, new_score, new_cov, end, nsid, h, opt, lmraw, dval, None, start]
                                    if old[H_ARCS] is None:
                                        old[H_ARCS] = [loser]
                                    else:
                                        old[H_ARCS].append(loser)
        stats.update(expanded=n_exp, created=n_created, recombined=n_recomb, discarded=n_disc,
                     lm_misses=n_miss, lm_states=len(states), bounded=n_bound,
                     abandoned=n_abandon)
        if not stacks[n]:
            return None, stats
        finals = prune(n)
        self._final_hyps = finals
        return finals[0], stats

    # ------------------------------------------------------------------ paths
    @staticmethod
    def _chain(h: list) -> list[list]:
        """Hypotheses of the path ending in ``h``, last first (the empty root excluded)."""
        nodes = []
        while h[H_PREV] is not None:
            nodes.append(h)
            h = h[H_PREV]
        return nodes

    def _path_translation(self, nodes: list[list], score: float) -> Translation:
        values = [0.0] * self.features.size
        tokens: list[str] = []
        segments = []
        dist_off = self._dist_offset
        for h in reversed(nodes):
            opt = h[H_OPT]
            for i, v in enumerate(opt[O_VEC]):
                if v:
                    values[i] += v
            if dist_off is not None:
                values[dist_off] += h[H_DIST]
            for off, v in zip(self._lm_offsets, h[H_LM]):
                values[off] += v
            tokens.extend(opt[O_TGT])
            segments.append((h[H_START], h[H_LAST], opt[O_TGT]))
        return Translation(tokens, score, values, segments)

    def _nbest(self, finals: list[list], n: int, distinct: bool) -> list[Translation]:
        """Up to ``n`` best derivations (``distinct``: best per target string), best first."""
        heap: list = []
        counter = 0
        for h in finals:
            heap.append((-h[H_SCORE], counter, tuple(self._chain(h)), 0))
            counter += 1
        heapq.heapify(heap)
        out: list[Translation] = []
        seen: set[tuple[str, ...]] = set()
        max_paths = n * max(1, self.options.nbest_factor) if distinct else n
        popped = 0
        while heap and len(out) < n and popped < max_paths:
            neg, _, nodes, dev = heapq.heappop(heap)
            popped += 1
            score = -neg
            tr = self._path_translation(list(nodes), score)
            key = tuple(tr.tokens)
            if not distinct or key not in seen:
                seen.add(key)
                out.append(tr)
            # deviations: replace node i (i >= dev) by one of its arcs
            for i in range(dev, len(nodes)):
                arcs = nodes[i][H_ARCS]
                if not arcs:
                    continue
                base = score - nodes[i][H_SCORE]
                for a in arcs:
                    new_nodes = nodes[:i] + tuple(self._chain(a))
                    heapq.heappush(heap, (-(base + a[H_SCORE]), counter, new_nodes, i + 1))
                    counter += 1
        return out

    # ------------------------------------------------------------------ reporting
    def nbest_features(self, values: Sequence[float]) -> list[tuple[str, list[float]]]:
        """``[(name, values)]`` of the tuneable features in Moses's n-best order."""
        out = []
        for f in self.features.nbest_order():
            sl = self.features.slice(f.name)
            out.append((f.name, list(values[sl])))
        return out

    def score_values(self, values: Sequence[float]) -> float:
        return FeatureSet.dot(self.weights, values)


# =============================================================================== building from moses.ini

def build_decoder(config, *, table: PhraseTable | None = None, options: SearchOptions | None = None,
                  table_limit: int | None = None, lm_scorers: Mapping[str, object] | None = None) -> Decoder:
    """A :class:`Decoder` from a :class:`smt_features.model.moses_ini.MosesConfig`.

    Loads the phrase table (unless ``table`` is given) and the KenLM models
    (unless ``lm_scorers`` maps a feature name to a scorer). Search options
    come from the config's sections unless ``options`` is given;
    ``table_limit`` overrides the feature line's ``table-limit``.
    """
    from nmt.data.io import DataError
    from smt_features.model.moses_ini import MosesIniError, check_feature_files

    src = config.path or "<moses.ini>"
    # a missing table or LM is named at its moses.ini line, before anything is loaded
    check_feature_files(config, only={
        fl.name for fl in config.features
        if (fl.type.startswith("PhraseDictionary") and table is None)
        or (fl.type == "KENLM" and (lm_scorers or {}).get(fl.name) is None)})
    if options is None:
        options = search_options_from_config(config)
    features: list[Feature] = []
    n_tables = 0
    tm_path = None
    tm_line = 0
    for fl in config.features:
        tuneable_arg = fl.get("tuneable")
        tuneable = None if tuneable_arg is None else tuneable_arg == "true"
        extra = {k: v for k, v in fl.args.items() if k != "name"}
        if fl.type.startswith("PhraseDictionary"):
            n_tables += 1
            if n_tables > 1:
                raise MosesIniError(src, fl.line_no, "only one phrase table is supported")
            limit = table_limit if table_limit is not None else int(fl.get("table-limit", str(options.table_limit)))
            f: Feature = PhraseTableFeature(fl.name, int(fl.get("num-features")), tuneable is not False,
                                            path=fl.get("path"), table_limit=limit, args=extra, kind=fl.type)
            tm_path = fl.get("path")
            tm_line = fl.line_no
        elif fl.type == "KENLM":
            scorer = (lm_scorers or {}).get(fl.name)
            path = _resolve(fl.get("path"), config)
            try:
                f = KenLMFeature(scorer, name=fl.name, path=path if scorer is None else fl.get("path"),
                                 order=int(fl.get("order")) if fl.get("order") else None,
                                 tuneable=tuneable is not False, args=extra)
            except (OSError, RuntimeError, ValueError) as err:
                detail = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
                raise MosesIniError(src, fl.line_no, f"cannot load KenLM model {path}: {detail}") from None
        elif fl.type == "Distortion":
            f = DistortionFeature(fl.name, 1, tuneable is not False, extra)
        elif fl.type == "WordPenalty":
            f = WordPenaltyFeature(fl.name, 1, tuneable is not False, extra)
        elif fl.type == "PhrasePenalty":
            f = PhrasePenaltyFeature(fl.name, 1, tuneable is not False, extra)
        elif fl.type == "UnknownWordPenalty":
            f = UnknownWordPenaltyFeature(fl.name, 1, tuneable is True, extra)
        else:
            raise MosesIniError(src, fl.line_no, f"feature type {fl.type!r} is not supported by this decoder")
        features.append(f)
    if n_tables == 0:
        raise MosesIniError(src, 0, "no PhraseDictionary feature")
    fs = FeatureSet(features)
    weights = {}
    for f in fs:
        if f.name in config.weights:
            weights[f.name] = config.weights[f.name]
        elif isinstance(f, UnknownWordPenaltyFeature):
            weights[f.name] = f.default_weights()
        else:
            raise MosesIniError(src, 0, f"no weights for feature {f.name} in [weight]")
    if table is None:
        path = _resolve(tm_path, config)
        table = PhraseTable.load(path)
        if not len(table):
            raise DataError(f"{path}: empty phrase table (no phrase pairs)")
    tm = fs.of_kind(PhraseTableFeature)[0]
    if table.num_scores and table.num_scores != tm.num_values:
        raise MosesIniError(src, tm_line, f"{tm.name} declares num-features={tm.num_values} but the phrase table "
                                          f"{table.path or ''} has {table.num_scores} score(s) per line")
    return Decoder(fs, weights, table, options)


def _resolve(path: str | None, config) -> str:
    """A relative path is taken from the working directory, else from the moses.ini's folder."""
    if path is None:
        return ""
    p = Path(path)
    if p.is_absolute() or p.exists() or not config.path:
        return str(p)
    cand = Path(config.path).parent / p
    return str(cand) if cand.exists() else str(p)


def search_options_from_config(config, **overrides) -> SearchOptions:
    """:class:`SearchOptions` from a moses.ini's one-value sections, then ``overrides`` (``None`` = keep)."""
    values = dict(
        stack_size=config.int_option("stack", 200),
        beam_threshold=config.float_option("beam-threshold", 1e-5),
        distortion_limit=config.int_option("distortion-limit", 6),
        max_phrase_length=config.int_option("max-phrase-length", 20),
        early_discarding_threshold=config.float_option("early-discarding-threshold", 0.0),
    )
    values.update({k: v for k, v in overrides.items() if v is not None})
    return SearchOptions(**values)


# =============================================================================== corpus decoding

_WORKER: tuple | None = None


def _worker_decode(item: tuple[int, str]) -> DecodeResult:
    assert _WORKER is not None
    decoder, nbest, distinct = _WORKER
    sent_id, line = item
    return decoder.decode(line.split(), nbest=nbest, distinct=distinct, sent_id=sent_id)


def decode_corpus(decoder: Decoder, lines: Iterable[str], *, threads: int = 1, nbest: int = 0,
                  distinct: bool = False, chunksize: int = 2) -> Iterator[DecodeResult]:
    """Decode tokenized sentences in order; ``threads > 1`` forks that many worker processes.

    The workers are forked after the model was loaded, so they share it
    (copy on write); results come back in input order.
    """
    global _WORKER
    items = ((i, line) for i, line in enumerate(lines))
    if threads <= 1:
        for i, line in items:
            yield decoder.decode(line.split(), nbest=nbest, distinct=distinct, sent_id=i)
        return
    if "fork" not in multiprocessing.get_all_start_methods():
        raise RuntimeError("--threads > 1 needs the 'fork' start method (Linux/macOS)")
    _WORKER = (decoder, nbest, distinct)
    ctx = multiprocessing.get_context("fork")
    # Move the loaded model out of the collector's reach before forking: a full collection in a
    # worker would otherwise touch (and so copy) every page of the shared phrase table.
    gc.collect()
    gc.freeze()
    try:
        with ctx.Pool(threads) as pool:
            yield from pool.imap(_worker_decode, items, chunksize=chunksize)
    finally:
        _WORKER = None
        gc.unfreeze()


"""The phrase-based decoder (:class:`Decoder`): a log-linear model, its weights, and decoding one sentence.

The pieces live beside it: search options (:mod:`~smt_features.decode.options`),
the phrase table in memory (:mod:`~smt_features.decode.table`), translation options
and future costs per weight vector (:mod:`~smt_features.decode.search_tables`),
the Python stack search (:mod:`~smt_features.decode.stack_search`), the compiled
search core (:mod:`~smt_features.decode.fast_search`, identical results), building
a decoder from a moses.ini (:mod:`~smt_features.decode.load`) and decoding a corpus
in forked workers (:mod:`~smt_features.decode.corpus`).

**n-best lists** follow the recombination arcs (Moses's trellis paths):
replacing a hypothesis of a path by one of its arcs changes the total by
the difference of their scores, since everything after them is the same.
"""
from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Mapping, Sequence

from smt_features.decode import fast_search
from smt_features.decode.hypothesis import (
    H_ARCS, H_DIST, H_LAST, H_LM, H_OPT, H_SCORE, H_START, NEG_INF, O_LR, O_TGT, O_VEC, DecodeResult, Translation,
    chain,
)
from smt_features.decode.options import SearchOptions
from smt_features.decode.search_tables import SearchTables, future_cost_table
from smt_features.decode.stack_search import StackSearch
from smt_features.decode.stack_search_lr import ReorderingStackSearch
from smt_features.decode.table import PhraseTable
from smt_features.model.features import (
    DistortionFeature, Feature, FeatureSet, PhraseTableFeature,
)
from smt_features.model.kenlm_feature import KenLMFeature
from smt_features.model.reordering import LexicalReorderingFeature

log = logging.getLogger(__name__)


class Decoder:
    """A phrase-based decoder over a log-linear model.

    ``features``: the model's features in order (one
    :class:`PhraseTableFeature`, any stateless features, at most one
    :class:`DistortionFeature`, at most one :class:`LexicalReorderingFeature`,
    any number of :class:`KenLMFeature`);
    ``weights``: ``{feature name: [λ…]}`` or a flat list in feature order;
    ``table``: the phrase table of the translation-model feature.

    Public surface the compiled core uses: ``options``, ``features``, ``lms``,
    ``table``, ``tables`` (the :class:`SearchTables` of the current weights),
    :meth:`python_search`, ``final_hyps``, :meth:`path_translation` and
    :meth:`empty_translation`; ``compiled`` is the core in use (None = Python search).
    """

    future_cost_table = staticmethod(future_cost_table)

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
        lrs = self.features.of_kind(LexicalReorderingFeature)
        if len(lrs) > 1:
            raise ValueError("at most one LexicalReordering feature")
        self.reordering: LexicalReorderingFeature | None = lrs[0] if lrs else None  # type: ignore[assignment]
        self._lr_offset = (self.features.offsets[self.features.index(self.reordering.name)]
                           if self.reordering is not None else None)
        for f in self.features:
            if f.stateful and not isinstance(f, (DistortionFeature, KenLMFeature, LexicalReorderingFeature)):
                raise ValueError(f"stateful feature {f.name} ({type(f).__name__}) is not supported by the decoder")
        self._stateless = [(f, self.features.offsets[i]) for i, f in enumerate(self.features) if not f.stateful]
        self._lm_offsets = [self.features.offsets[self.features.index(lm.name)] for lm in self.lms]
        self._dist_offset = (self.features.offsets[self.features.index(self.distortion.name)]
                             if self.distortion is not None else None)
        if self.options.lm_upper_bounds and self.options.bound_pruning:
            for lm in self.lms:
                if not lm.load_upper_bounds():
                    log.info("%s: no ARPA file beside %s; bounding ln p(w|h) by 0", lm.name, lm.path)
        self.final_hyps: list[list] = []
        self.set_weights(weights)
        self.compiled = fast_search.attach(self)  # the compiled search core, when built (else None)

    @property
    def search_kind(self) -> str:
        """``'compiled'`` when decode() runs the compiled search core, else ``'python'``."""
        return "compiled" if self.compiled is not None else "python"

    # ------------------------------------------------------------------ weights and options
    def set_weights(self, weights: Mapping[str, Sequence[float]] | Sequence[float]) -> None:
        """Set ``λ`` (new :class:`SearchTables`: the options' ranking depends on it)."""
        if isinstance(weights, Mapping):
            vec = self.features.weight_vector(weights)
        else:
            vec = [float(w) for w in weights]
            if len(vec) != self.features.size:
                raise ValueError(f"{len(vec)} weights for {self.features.size} feature values")
        self.weights = vec
        limit = self.options.table_limit if self.tm.table_limit is None else self.tm.table_limit
        self.tables = SearchTables(
            size=self.features.size, stateless=self._stateless, lms=self.lms, weights=vec,
            w_dist=vec[self._dist_offset] if self._dist_offset is not None else 0.0,
            w_lms=[vec[o] for o in self._lm_offsets], table=self.table, options=self.options, table_limit=limit,
            reordering=self.reordering,
            w_lr=vec[self._lr_offset:self._lr_offset + 6] if self._lr_offset is not None else None)

    def weight_dict(self) -> dict[str, list[float]]:
        return self.features.split(self.weights)

    def options_for(self, src: tuple[str, ...]) -> list[tuple]:
        """The ranked, table-limited options of a source phrase (cached); ``[]`` if the table lacks it."""
        return self.tables.options_for(src)

    def unknown_option(self, word: str) -> tuple:
        return self.tables.unknown_option(word)

    def collect_options(self, words: Sequence[str]) -> list[list[tuple[int, list[tuple]]]]:
        """``spans[start] = [(end, options), …]`` (see :meth:`SearchTables.collect_options`)."""
        return self.tables.collect_options(words)

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
        if self.compiled is not None:  # identical results; None = a sentence it leaves to Python
            result = self.compiled.decode(words, nbest, distinct, sent_id)
            if result is not None:
                return result
        t0 = time.perf_counter()
        final, stats = self.python_search(words, keep_arcs=nbest > 0)
        if final is None:
            best = self.empty_translation(len(words) == 0)
            result = DecodeResult(sent_id, best, [best] if nbest > 0 and not words else [], 0.0, stats)
        else:
            best = self.path_translation(chain(final), final[H_SCORE])
            result = DecodeResult(sent_id, best, [], 0.0, stats)
            if nbest > 0:
                result.nbest = self._nbest(self.final_hyps, nbest, distinct)
        result.seconds = time.perf_counter() - t0
        return result

    def python_search(self, words: list[str], keep_arcs: bool):
        """The Python stack search: ``(best final hypothesis or None, stats)``; the final hypotheses (best
        first) are left in ``final_hyps``."""
        self.final_hyps = []
        search = ReorderingStackSearch if self.reordering is not None else StackSearch
        final, finals, stats = search(self.tables, self.lms, self.options, words, keep_arcs).run()
        self.final_hyps = finals
        return final, stats

    def empty_translation(self, empty_input: bool) -> Translation:
        """The translation of the empty sentence (``empty_input``), else of a search that found none."""
        values = [0.0] * self.features.size
        score = 0.0
        if empty_input:  # the empty sentence: p(</s> | <s>)
            for lm, off, wl in zip(self.lms, self._lm_offsets, self.tables.w_lms):
                v = lm.end_score(lm.begin_state())
                values[off] = v
                score += wl * v
        else:
            log.warning("no complete hypothesis survived the search; returning an empty translation")
            score = NEG_INF
        return Translation([], score, values, [])

    # ------------------------------------------------------------------ paths
    def path_translation(self, nodes: list[list], score: float) -> Translation:
        """The :class:`Translation` of a path (its hypotheses, last first) of total ``score``."""
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
        if self._lr_offset is not None:
            steps = [(h[H_START], h[H_LAST], h[H_OPT][O_LR]) for h in reversed(nodes)]
            for i, v in enumerate(LexicalReorderingFeature.path_values(steps)):
                values[self._lr_offset + i] += v
        return Translation(tokens, score, values, segments)

    def _nbest(self, finals: list[list], n: int, distinct: bool) -> list[Translation]:
        """Up to ``n`` best derivations (``distinct``: best per target string), best first."""
        heap: list = []
        counter = 0
        for h in finals:
            heap.append((-h[H_SCORE], counter, tuple(chain(h)), 0))
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
            tr = self.path_translation(list(nodes), score)
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
                    new_nodes = nodes[:i] + tuple(chain(a))
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

"""The language-model feature ``LM0`` (Moses's ``KENLM``): KenLM states, phrase scores, upper bounds.

The feature interface is :class:`smt_features.model.features.Feature`; this is its stateful
language-model implementation, in natural log (KenLM's log10 × ln 10).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from smt_features.model.features import LN10, Feature
from smt_features.train.kenlm_bounds import arpa_upper_bounds, bounds_path, read_bounds

log = logging.getLogger(__name__)


class KenLMFeature(Feature):
    """``LM0``: a KenLM n-gram model queried through :class:`smt_features.model.kenlm.KenLMScorer`.

    States are ``kenlm.State`` objects (hashable; KenLM minimises them, which
    helps recombination). Everything is in natural log.
    """

    kind = "KENLM"
    stateful = True
    default_weight = 0.5

    def __init__(self, scorer: Any = None, name: str | None = "LM0", path: str | None = None,
                 order: int | None = None, tuneable: bool = True, args: Mapping[str, str] | None = None,
                 map_unk: str | None = None, arpa_path: str | None = None, load: str | None = None) -> None:
        super().__init__(name, 1, tuneable, args)
        if scorer is None:
            if path is None:
                raise ValueError("KenLMFeature needs a scorer or a path")
            from smt_features.model.kenlm import DEFAULT_LOAD, DEFAULT_MAP_UNK, KenLMScorer

            scorer = KenLMScorer(path, map_unk=DEFAULT_MAP_UNK if map_unk is None else (map_unk or None),
                                 load=load or DEFAULT_LOAD)
        self.scorer = scorer
        self.path = path if path is not None else str(getattr(scorer, "path", ""))
        self.order = order if order is not None else scorer.order
        self._model = scorer.model
        import kenlm  # the scorer already imported it

        self._State = kenlm.State
        self._scratch = (kenlm.State(), kenlm.State())
        self._map_unk = getattr(scorer, "map_unk", None)
        self._arpa_path = arpa_path
        self._upper: dict[str, float] | None = None
        self._upper_default = 0.0
        self._probe: Any = None  # log10 scores from the null context, by another copy of this model

    def use_null_context_scorer(self, probe: Any) -> None:
        """Score words after the null context with ``probe(words) -> [log10 p]`` (the compiled search core's
        copy of this model, checked to score alike) instead of the Python model: a lazily mapped model
        that is not queried keeps none of its file in memory."""
        self._probe = probe

    def null_context_log10(self, words: Sequence[str]) -> list[float]:
        """``log10 p`` of each model-side word of ``words`` in sequence after the null context."""
        if self._probe is not None:
            return list(self._probe(words))
        base = self._model.BaseScore
        out, cur = [], self.null_state()
        for w in words:
            nxt = self._State()
            out.append(base(cur, w, nxt))
            cur = nxt
        return out

    def null_phrase_score(self, words: Sequence[str]) -> float:
        """``ln p(words | null context)`` for model-side ``words``: :meth:`score_phrase` from the null state
        (the same sum of log10 scores, then × ln 10)."""
        if not words:
            return 0.0
        total = 0.0
        for v in self.null_context_log10(words):
            total += v
        return total * LN10

    # -- upper bounds (used by the decoder to skip hopeless options before querying the LM)
    def find_arpa(self) -> Path | None:
        """The ARPA file beside the model (``X.binary`` → ``X.arpa`` / ``X.arpa.gz``), if any."""
        if self._arpa_path:
            return Path(self._arpa_path)
        p = Path(self.path)
        if p.suffix in (".arpa", ".gz") and "arpa" in p.name:
            return p
        for cand in (p.with_suffix(".arpa"), p.with_suffix(".arpa.gz")):
            if cand.is_file():
                return cand
        return None

    def load_upper_bounds(self) -> bool:
        """Read per-word upper bounds of ``ln p(w | any history)``: from the model's sidecar ``X.ubounds``
        (:mod:`smt_features.train.kenlm_bounds`; a file the size of the vocabulary) when it is there and
        not stale, else from its ARPA file (time in proportion to the ARPA file).

        Returns False (bounds stay 0, i.e. ``ln p ≤ 0``) when there is neither.
        """
        if self._upper is not None:
            return True
        arpa = self.find_arpa()
        arpa = arpa if arpa is not None and arpa.is_file() else None
        got = read_bounds(bounds_path(self.path), arpa)
        if got is None and arpa is not None:
            got = arpa_upper_bounds(arpa)
            log.info("%s: upper bounds read from %s; `smt-kenlm bounds --arpa %s` writes them once to %s for a "
                     "faster start", self.name, arpa, arpa, bounds_path(self.path))
        if got is None:
            return False
        bounds, max_backoff = got
        slack = max(0.0, max_backoff) * max(0, self.order - 1)
        self._upper = {w: v + slack for w, v in bounds.items()}
        self._upper_default = self._upper.get("<unk>", 0.0)
        return True

    def word_upper_bound(self, word: str) -> float:
        """An upper bound of ``ln p(word | h)`` over every history ``h`` (0 without bounds)."""
        if self._upper is None:
            return 0.0
        return self._upper.get(word, self._upper_default)

    def position_upper_bounds(self, words: Sequence[str]) -> list[float]:
        """Per word of a phrase, an upper bound of its ``ln p`` after any state: a bound for the
        first ``order - 1`` words (their history reaches outside the phrase), the exact value
        after that (the history lies inside the phrase)."""
        if not words:
            return []
        n_open = min(len(words), max(0, self.order - 1))
        out = [min(self.word_upper_bound(w), 0.0) for w in words[:n_open]]
        if len(words) > n_open:
            out.extend(v * LN10 for v in self.null_context_log10(words)[n_open:])
        return out

    def phrase_upper_bound(self, words: Sequence[str]) -> float:
        """Upper bound of ``ln p(words | state)`` over all states (sum of :meth:`position_upper_bounds`)."""
        return sum(self.position_upper_bounds(words))

    def word_scores(self, state, words: Sequence[str]) -> list[float]:
        """``ln p`` of each word of ``words`` after ``state``."""
        base = self._model.BaseScore
        out = []
        cur = state
        for w in words:
            nxt = self._State()
            out.append(base(cur, w, nxt) * LN10)
            cur = nxt
        return out

    # -- words as the model sees them (the scorer's <unk> rewrite)
    def lm_words(self, tgt: Sequence[str]) -> tuple[str, ...]:
        m = self._map_unk
        if m is None:
            return tuple(tgt)
        return tuple(m if w == "<unk>" else w for w in tgt)

    def begin_state(self):
        return self.scorer.begin_state()

    def null_state(self):
        return self.scorer.null_state()

    def score_phrase(self, state, words: Sequence[str]):
        """``(ln p(words | state), new_state)`` for model-side ``words`` (see :meth:`lm_words`)."""
        base = self._model.BaseScore
        a_tmp, b_tmp = self._scratch
        total = 0.0
        cur = state
        last = len(words) - 1
        for i, w in enumerate(words):
            if i == last:
                out = self._State()
            else:
                out = a_tmp if cur is not a_tmp else b_tmp
            total += base(cur, w, out)
            cur = out
        if last < 0:
            return 0.0, state
        return total * LN10, cur

    def end_score(self, state) -> float:
        """``ln p(</s> | state)``."""
        return self._model.BaseScore(state, "</s>", self._scratch[0]) * LN10

    def estimate(self, tgt: Sequence[str]) -> float:
        """``ln p`` of the phrase alone, from an empty context (Moses's future-cost LM estimate)."""
        if not tgt:
            return 0.0
        return self.null_phrase_score(self.lm_words(tgt))

    def __getstate__(self):  # KenLM models do not pickle; workers fork instead
        raise TypeError("KenLMFeature cannot be pickled; decode in forked worker processes")

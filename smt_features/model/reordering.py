"""The lexicalized reordering feature ``LexicalReordering0`` (Moses's ``wbe-msd-bidirectional-fe-allff``): six scores.

The table (``reordering-table.wbe-msd-bidirectional-fe.gz``) holds per phrase pair six probabilities::

    src ||| tgt ||| p_prev(m) p_prev(s) p_prev(d) p_next(m) p_next(s) p_next(d)

and the feature works as Moses's decoder does (``LRModel``, ``PhraseBasedReorderingState``, ``LRState``):

* each probability enters as ``max(ln p, -100)`` (Moses's ``TransformScore`` then ``FloorScore``);
* the **orientation** of a phrase on source span ``[s, e]`` after the previous phrase ``[ps, pe]`` is
  *monotone* when ``s == pe + 1``, *swap* when ``e + 1 == ps``, else *discontinuous*; the first phrase
  of a sentence is monotone iff ``s == 0`` (Moses's ``m_useFirstBackwardScore``, true by default);
* **backward** (prev) values ``0..2``: the new phrase pair's own probability of its orientation;
* **forward** (next) values ``3..5``: the *previous* phrase pair's probability of that orientation,
  counted when the next phrase is placed (nothing for the first phrase, nothing at the end of the
  sentence: Moses scores only when a phrase is applied);
* a pair absent from the table adds nothing (Moses without ``default-scores``); so does an unknown
  word's copy;
* nothing enters the future cost (Moses's feature has no isolation score);
* **recombination**: two hypotheses merge only if they have the same previous source range and (for the
  forward part) the same next-probabilities of their last phrase pair (absent ≠ present), as Moses's
  ``PhraseBasedReorderingState`` compares them.

The table is read like a phrase table (``src ||| tgt ||| scores``), so its binarized sidecar
(``smt-binarize-table``) and ``smt-filter-table`` serve it too.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from smt_features.model.features import LOWEST_SCORE, Feature

MONO, SWAP, DISC = 0, 1, 2
NUM_VALUES = 6
#: the parts of Moses's ``type=`` this feature implements (``wbe``/``phr`` and ``allff`` are optional)
TYPE_PARTS = ("msd", "bidirectional", "fe")


def orientation(prev_start: int, prev_end: int, start: int, end: int) -> int:
    """``MONO``, ``SWAP`` or ``DISC`` of span ``[start, end]`` after ``[prev_start, prev_end]`` (``-1, -1``: none)."""
    if prev_end < 0:
        return MONO if start == 0 else DISC
    if start == prev_end + 1:
        return MONO
    if end + 1 == prev_start:
        return SWAP
    return DISC


def check_type(value: str | None) -> str | None:
    """Why Moses's ``type=`` value is not the model implemented here, or None when it is."""
    if value is None:
        return "needs type= (e.g. type=wbe-msd-bidirectional-fe-allff)"
    parts = value.split("-")
    if parts and parts[0] in ("wbe", "phr"):
        parts = parts[1:]
    if parts and parts[-1] == "allff":
        parts = parts[:-1]
    if tuple(parts) != TYPE_PARTS:
        return (f"type={value} is not supported; only msd-bidirectional-fe "
                "(type=wbe-msd-bidirectional-fe-allff) is implemented")
    return None


def log_scores(probs: Sequence[float]) -> tuple[float, ...]:
    """``max(ln p, -100)`` of each probability (``-100`` for ``p <= 0``), as Moses loads the table."""
    log = math.log
    return tuple(max(log(p), LOWEST_SCORE) if p > 0.0 else LOWEST_SCORE for p in probs)


class LexicalReorderingFeature(Feature):
    """``LexicalReordering0``: six values per derivation (see the module docstring).

    ``table`` answers ``get(src) -> [(tgt, probabilities), …] | None`` (a
    :class:`smt_features.decode.table.PhraseTable` or its binarized form).
    """

    kind = "LexicalReordering"
    stateful = True
    default_weight = 0.3

    def __init__(self, name: str | None = "LexicalReordering0", num_values: int = NUM_VALUES,
                 tuneable: bool = True, args: Mapping[str, str] | None = None, table=None,
                 path: str | None = None) -> None:
        if num_values != NUM_VALUES:
            raise ValueError(f"{self.kind}: msd-bidirectional-fe has {NUM_VALUES} values, not {num_values}")
        super().__init__(name, num_values, tuneable, args)
        self.table = table
        self.path = path
        self._by_src: dict[tuple[str, ...], dict[tuple[str, ...], tuple[float, ...]]] = {}

    def scores(self, src: tuple[str, ...], tgt: tuple[str, ...]) -> tuple[float, ...] | None:
        """The six log values of the pair, or None when the table does not have it."""
        by_tgt = self._by_src.get(src)
        if by_tgt is None:
            entries = self.table.get(src) if self.table is not None else None
            by_tgt = {}
            for t, probs in entries or ():
                if t not in by_tgt:  # the first line of a pair wins
                    by_tgt[t] = log_scores(probs)
            self._by_src[src] = by_tgt
        return by_tgt.get(tgt)

    @staticmethod
    def backward_bound(w: Sequence[float], lr: Sequence[float] | None) -> float:
        """The most the pair's own (backward) value can add to the score: ``max_o w[o] * lr[o]`` (0 without scores)."""
        if lr is None:
            return 0.0
        return max(w[MONO] * lr[MONO], w[SWAP] * lr[SWAP], w[DISC] * lr[DISC])

    @staticmethod
    def path_values(steps: Sequence[tuple[int, int, Sequence[float] | None]]) -> list[float]:
        """The six values of a derivation: ``steps`` are ``(start, end, scores or None)`` in target order."""
        out = [0.0] * NUM_VALUES
        ps, pe, plr = -1, -1, None
        for start, end, lr in steps:
            o = orientation(ps, pe, start, end)
            if lr is not None:
                out[o] += lr[o]
            if plr is not None:
                out[3 + o] += plr[3 + o]
            ps, pe, plr = start, end, lr
        return out

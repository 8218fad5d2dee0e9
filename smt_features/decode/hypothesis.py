"""Hypothesis and result types of the stack search: the option and hypothesis tuple layouts, Translation, DecodeResult.

Both searches (the Python one of :mod:`smt_features.decode.stack_search` and the
compiled core behind :mod:`smt_features.decode.fast_search`) share these layouts:

* a **translation option** is a tuple indexed by the ``O_*`` constants: target-phrase
  id, target words, weighted stateless score, stateless values, future score
  (stateless + LM estimate), LM-side words per LM, upper bound of the weighted
  score in context, target word ids, ``O_REST[i]``: the bound of the weighted
  LM score of the words after position ``i``, then the pair's six lexicalized-reordering
  log values (``O_LR``, None when the model has no such feature or the table lacks the pair)
  and the id of its three forward values (``O_FID``, 0 for None; equal values, equal ids);
* a **hypothesis** is a list indexed by the ``H_*`` constants: total (score +
  future cost), score, coverage bitmask, end of the last source phrase, LM state
  id, previous hypothesis, option, raw LM values, distortion value,
  recombination arcs, start of the last source phrase.
"""
from __future__ import annotations

from dataclasses import dataclass, field

NEG_INF = float("-inf")

O_TID, O_TGT, O_SL, O_VEC, O_FUT, O_LMW, O_UB, O_WIDS, O_REST, O_LR, O_FID = range(11)
H_TOTAL, H_SCORE, H_COV, H_LAST, H_SID, H_PREV, H_OPT, H_LM, H_DIST, H_ARCS, H_START = range(11)
#: cache keys of LM transitions: state id * stride + phrase (or word) id
TID_STRIDE = 1 << 32


def chain(h: list) -> list[list]:
    """Hypotheses of the path ending in ``h``, last first (the empty root excluded)."""
    nodes = []
    while h[H_PREV] is not None:
        nodes.append(h)
        h = h[H_PREV]
    return nodes


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

"""Orientation counts → smoothed msd-bidirectional-fe probabilities, as Moses ``lexical-reordering-score``.

Moses (``phrase-extract/lexical-reordering/score.cpp``, ``reordering_classes.cpp``) adds a smoothing
value ``s_i`` to each of the three counts of a phrase pair and direction, and normalizes:
``p_i = (c_i + s_i) / sum_j (c_j + s_j)``. ``train-model.perl``'s default ``-reordering-smooth 0.5``
is *constant* smoothing, ``s_i = 0.5``. A trailing ``u`` (``0.5u``, Moses's ``--SmoothWithCounts``)
smooths with the global orientation distribution instead: ``s_i = w * (C_i + 0.1) / sum_j C_j`` with
``C`` the corpus-wide counts of that direction. Values are printed as ``%f``
(:func:`nmt.core.formats.reordering_table.format_line`).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from nmt.core.formats.reordering_table import format_scores


@dataclass(frozen=True)
class Smoothing:
    """``weight`` and whether it is spread by the global counts (``0.5u``) or constant (``0.5``)."""

    weight: float = 0.5
    with_counts: bool = False

    @classmethod
    def parse(cls, text: str) -> "Smoothing":
        """``"0.5"`` / ``"0.5u"`` → Smoothing; ValueError for anything else or a weight <= 0."""
        raw = str(text).strip()
        with_counts = raw.endswith("u")
        number = raw[:-1] if with_counts else raw
        try:
            weight = float(number)
        except ValueError:
            raise ValueError(f"smoothing {text!r}: expected a number, optionally followed by 'u' "
                             "(e.g. 0.5 or 0.5u)") from None
        if not (weight > 0.0) or weight == float("inf"):
            raise ValueError(f"smoothing {text!r}: must be a positive number")
        return cls(weight, with_counts)

    def values(self, global_counts: Sequence[int]) -> tuple[float, ...]:
        """The six additive smoothing values (prev m s d, next m s d) for the given corpus counts."""
        if not self.with_counts:
            return (self.weight,) * 6
        out: list[float] = []
        for k in (0, 3):
            total = float(sum(global_counts[k:k + 3]))
            if total <= 0:
                raise ValueError("smoothing with counts: no phrase pair occurrences in the corpus")
            out += [self.weight * (c + 0.1) / total for c in global_counts[k:k + 3]]
        return tuple(out)


def probabilities(counts: Sequence[float], smoothing: Sequence[float]) -> list[float]:
    """Six counts (prev m s d, next m s d) → six probabilities, Moses's arithmetic and order."""
    out: list[float] = []
    for k in (0, 3):
        scores = [counts[k + i] + smoothing[k + i] for i in range(3)]
        total = 0.0
        for s in scores:
            total += s
        out += [s / total for s in scores]
    return out


def score_lines(pairs: Iterable[tuple[str, Sequence[int]]], smoothing: Sequence[float]) -> Iterator[str]:
    """``("src ||| tgt ||| ", counts)`` in table order → table lines (``%f `` values, ``\\n``)."""
    for key, counts in pairs:
        yield key + format_scores(probabilities(counts, smoothing)) + "\n"

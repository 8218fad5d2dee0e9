"""Moses lexicalized reordering tables (``msd-bidirectional-fe``): line format, writer, strict reader, check.

One line per phrase pair, in ``LC_ALL=C`` byte order of ``src ||| tgt ||| `` (the phrase table's order)::

    src words ||| tgt words ||| p_prev(m) p_prev(s) p_prev(d) p_next(m) p_next(s) p_next(d)

Probabilities, not logs (Moses takes the log when it loads the table), each printed as C's ``%f``
followed by one space, exactly as Moses's ``lexical-reordering-score`` writes them (so a line ends in
``" \\n"``). The table of ``wbe-msd-bidirectional-fe`` is named :data:`TABLE_NAME` (``.gz``).
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from nmt.core.io import DataError, atomic_write, iter_lines

PathLike = str | os.PathLike[str]
SEP = " ||| "
TABLE_NAME = "reordering-table.wbe-msd-bidirectional-fe.gz"
#: the six scores of ``msd-bidirectional-fe``, in file order
SCORE_NAMES = ("prev_mono", "prev_swap", "prev_disc", "next_mono", "next_swap", "next_disc")
#: a triple printed with ``%f`` (6 decimals) sums to 1 within 3 × 5e-7
SUM_TOLERANCE = 1e-5


class ReorderingEntry(NamedTuple):
    src: str
    tgt: str
    scores: tuple[float, ...]


def format_scores(probs: Sequence[float]) -> str:
    """The scores field as Moses prints it: ``%f`` and one space per value (so a trailing space)."""
    return "".join(f"{p:f} " for p in probs)


def format_line(src: str, tgt: str, probs: Sequence[float]) -> str:
    """One table line as Moses prints it."""
    return f"{src}{SEP}{tgt}{SEP}{format_scores(probs)}\n"


def write_reordering_table(lines: Iterable[str], path: PathLike) -> int:
    """Write formatted lines atomically (``.gz`` by suffix); returns the number of lines."""
    n = 0
    with atomic_write(path) as fh:
        for line in lines:
            fh.write(line)
            n += 1
    return n


def parse_line(line: str, num_scores: int | None = None) -> ReorderingEntry:
    """``src ||| tgt ||| scores`` → entry; ValueError saying what is wrong."""
    fields = line.split(" |||")
    if len(fields) != 3:
        raise ValueError(f"expected 3 fields separated by ' ||| ', found {len(fields)}")
    src, tgt, raw = fields[0].strip(), fields[1].strip(), fields[2]
    if not src or not tgt:
        raise ValueError(f"empty {'source' if not src else 'target'} phrase")
    try:
        scores = tuple(float(x) for x in raw.split())
    except ValueError:
        raise ValueError(f"scores {raw.strip()!r}: not all numbers") from None
    if not scores or (num_scores is not None and len(scores) != num_scores):
        raise ValueError(f"{len(scores)} scores, expected {num_scores or 'at least 1'}")
    for s in scores:
        if not (math.isfinite(s) and 0.0 <= s <= 1.0):  # %f prints a probability under 5e-7 as 0.000000
            raise ValueError(f"score {s!r} is not a probability in [0, 1]")
    return ReorderingEntry(src, tgt, scores)


def iter_reordering_table(path: PathLike, num_scores: int | None = 6) -> Iterator[ReorderingEntry]:
    """Stream the entries of ``path`` (plain or ``.gz``); :class:`DataError` ``FILE:LINE`` on a bad line.

    Every line must have ``num_scores`` scores (``None``: as many as the first line), each a
    probability; with six (``msd-bidirectional``) each triple must sum to 1.
    """
    expected = num_scores
    for line_no, line in enumerate(iter_lines(path), start=1):
        try:
            entry = parse_line(line, expected)
            if expected is None:
                expected = len(entry.scores)
            if len(entry.scores) % 3 == 0:
                for k in range(0, len(entry.scores), 3):
                    total = sum(entry.scores[k:k + 3])
                    if abs(total - 1.0) > SUM_TOLERANCE:
                        raise ValueError(f"scores {k + 1}-{k + 3} sum to {total:.6f}, not 1")
        except ValueError as err:
            raise DataError(path, line_no, str(err)) from None
        yield entry


@dataclass
class ReorderingTableCheck:
    path: str
    lines: int
    sources: int
    num_scores: int
    min_scores: tuple[float, ...]
    max_scores: tuple[float, ...]
    sorted: bool
    duplicates: int

    def summary(self) -> str:
        names = SCORE_NAMES if self.num_scores == len(SCORE_NAMES) else [f"s{k}" for k in range(self.num_scores)]
        cols = ", ".join(f"{n} [{lo:g}, {hi:g}]" for n, lo, hi in zip(names, self.min_scores, self.max_scores))
        return (f"{self.path}: {self.lines} lines, {self.sources} source phrases, {self.num_scores} scores "
                f"({cols}), {'sorted' if self.sorted else 'NOT sorted'}, {self.duplicates} duplicate pairs")


def check_reordering_table(path: PathLike, num_scores: int | None = 6) -> ReorderingTableCheck:
    """Read the whole table strictly and sum it up; ``sorted``: ``LC_ALL=C`` order of ``src ||| tgt ||| ``."""
    n = sources = dups = 0
    lows: list[float] = []
    highs: list[float] = []
    prev_key: bytes | None = None
    prev_src = None
    is_sorted = True
    for entry in iter_reordering_table(path, num_scores):
        n += 1
        key = f"{entry.src}{SEP}{entry.tgt}{SEP}".encode()
        if prev_key is not None:
            if key == prev_key:
                dups += 1
            elif key < prev_key:
                is_sorted = False
        prev_key = key
        if entry.src != prev_src:
            sources += 1
            prev_src = entry.src
        if not lows:
            lows, highs = list(entry.scores), list(entry.scores)
        else:
            lows = [min(a, b) for a, b in zip(lows, entry.scores)]
            highs = [max(a, b) for a, b in zip(highs, entry.scores)]
    return ReorderingTableCheck(str(path), n, sources, len(lows), tuple(lows), tuple(highs), is_sorted, dups)

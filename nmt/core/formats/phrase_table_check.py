"""Reading a whole phrase table strictly and summing it up (lines, sources, score ranges, sortedness)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from nmt.core.formats.phrase_table import MOSES_SCORE_NAMES, PathLike
from nmt.core.formats.phrase_table_reader import PhraseTableReader


@dataclass
class PhraseTableCheck:
    path: str
    lines: int
    sources: int
    num_scores: int
    min_scores: tuple[float, ...]
    max_scores: tuple[float, ...]
    sorted: bool
    max_src_len: int = 0
    max_tgt_len: int = 0
    skipped: int = 0
    score_names: tuple[str, ...] = field(default_factory=tuple)

    @property
    def min_score(self) -> float:
        return min(self.min_scores) if self.min_scores else math.nan

    @property
    def max_score(self) -> float:
        return max(self.max_scores) if self.max_scores else math.nan

    def summary(self) -> str:
        cols = ", ".join(f"{n} [{lo:g}, {hi:g}]" for n, lo, hi in
                         zip(self.score_names or [f"s{i}" for i in range(self.num_scores)],
                             self.min_scores, self.max_scores))
        return (f"{self.path}: {self.lines} lines, {self.sources} source phrases, "
                f"{self.num_scores} scores ({cols}), max phrase lengths {self.max_src_len}/"
                f"{self.max_tgt_len}, {'sorted' if self.sorted else 'NOT sorted'}")


def check_phrase_table(path: PathLike, *, skip_bad: bool = False) -> PhraseTableCheck:
    """Read the whole table strictly (raises :class:`PhraseTableError`) and return statistics.

    ``sorted`` tells whether the lines are in ``LC_ALL=C`` byte order.
    """
    reader = PhraseTableReader(path, skip_bad=skip_bad, keep_raw=True)
    sources: set[str] = set()
    lows: list[float] = []
    highs: list[float] = []
    is_sorted = True
    prev = None
    max_src = max_tgt = 0
    n = 0
    for entry in reader:
        n += 1
        raw = entry.raw
        if prev is not None and raw < prev:
            is_sorted = False
        prev = raw
        sources.add(raw[:raw.find("|||")])
        max_src = max(max_src, len(entry.src))
        max_tgt = max(max_tgt, len(entry.tgt))
        if not lows:
            lows = list(entry.scores)
            highs = list(entry.scores)
        else:
            for k, s in enumerate(entry.scores):
                if s < lows[k]:
                    lows[k] = s
                elif s > highs[k]:
                    highs[k] = s
    n_scores = reader.num_scores or 0
    names = MOSES_SCORE_NAMES[:n_scores] if n_scores >= 4 else ()
    if names and n_scores > 4:
        names = names + tuple(f"extra{k}" for k in range(n_scores - 4))
    return PhraseTableCheck(str(path), n, len(sources), n_scores, tuple(lows), tuple(highs), is_sorted,
                            max_src, max_tgt, reader.n_skipped, tuple(names))

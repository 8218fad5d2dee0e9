"""The source phrases of a phrase table with the most target options (the phrases of Cho et al. Fig. 4-5).

A source phrase's count is its number of lines in the Moses table (``SRC ||| TGT ||| scores ...``), i.e. its
target options. Only phrases of ``min_words``..``max_words`` words that start with a letter are kept; ties keep
the table's order. ``smt-frequent-phrases`` writes them one a line, the ``--phrases`` input of ``smt-report``.
"""
from __future__ import annotations

import collections
from pathlib import Path

from nmt.core.io import iter_lines


def frequent_source_phrases(table: str | Path, limit: int, min_words: int = 2, max_words: int = 4) -> list[str]:
    """The ``limit`` source phrases of ``table`` (plain or .gz) with the most lines, most first."""
    counts: collections.Counter[str] = collections.Counter()
    for line in iter_lines(table, allow_empty=True):
        src = line.split(" ||| ", 1)[0]
        if min_words <= len(src.split()) <= max_words and src[0].isalpha():
            counts[src] += 1
    return [phrase for phrase, _ in counts.most_common(limit)]

"""Filtering a Moses phrase table to the source phrases of some input (Moses's ``filter-model-given-input.pl``).

The table is streamed once with the strict reader (a bad line is refused as
``FILE:LINE``); a line is kept when its source phrase (words joined by single
spaces) occurs as a contiguous word sequence of an input line. Kept lines are
written exactly as read (same bytes, same order); memory holds the input's
phrases of at most ``max_phrase_length`` words, never the table.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nmt.core.io import atomic_write, iter_lines
from nmt.core.formats.phrase_table_reader import PhraseTableReader


@dataclass
class FilterStats:
    lines_read: int
    lines_kept: int
    input_phrases: int


def input_phrases(inputs: Sequence[str | os.PathLike[str]], max_phrase_length: int = 0) -> set[tuple[str, ...]]:
    """Every word n-gram (as a tuple) of the input lines, up to ``max_phrase_length`` words (0: any length)."""
    phrases: set[tuple[str, ...]] = set()
    for path in inputs:
        for line in iter_lines(path, allow_empty=True):
            words = tuple(line.split())
            n = len(words)
            longest = n if max_phrase_length <= 0 else min(n, max_phrase_length)
            for i in range(n):
                for j in range(i + 1, min(n, i + longest) + 1):
                    phrases.add(words[i:j])
    return phrases


def filter_table(table: str | os.PathLike[str], inputs: Sequence[str | os.PathLike[str]],
                 output: str | os.PathLike[str], *, max_phrase_length: int = 7,
                 progress: bool = False) -> FilterStats:
    """Write the lines of ``table`` whose source phrase occurs in ``inputs`` to ``output`` (atomically;
    gzip when it ends in ``.gz``)."""
    from tqdm import tqdm

    phrases = input_phrases(inputs, max_phrase_length)
    reader = PhraseTableReader(table, keep_raw=True, source_filter=phrases.__contains__)
    kept = 0
    bar = tqdm(desc=f"filtering {Path(table).name}", unit=" kept", disable=not progress, mininterval=1.0)
    with atomic_write(output, "wb") as fh:
        for e in reader:
            fh.write(e.raw.encode("utf-8") + b"\n")
            kept += 1
            bar.update(1)
    bar.close()
    return FilterStats(reader.n_read, kept, len(phrases))

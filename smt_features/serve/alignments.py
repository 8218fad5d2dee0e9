"""The word alignment inside each phrase pair of a Moses table (its 4th field), looked up by pair
(:class:`PhraseAlignments`): what Moses reports as ``word-align`` (``-print-alignment-info``).

The decoder's tables keep only the scores, so the alignments are read once from the text table with the strict
reader and held compactly: a sorted array of 64-bit keys (blake2b of ``source TAB target``) with the points of
each pair packed two bytes each (phrases are at most 255 words) — about 14 bytes a pair plus 2 a point. A pair
the table lacks, or a table without the field, has no points.
"""
from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nmt.core.formats.phrase_table_reader import PhraseTableReader


def pair_key(src: Sequence[str], tgt: Sequence[str]) -> int:
    """The 64-bit key of a phrase pair."""
    text = (" ".join(src) + "\t" + " ".join(tgt)).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


class PhraseAlignments:
    """``lookup(src, tgt)`` → the pair's alignment points ``[(i, j), …]`` (0-based inside the phrases)."""

    def __init__(self, keys: np.ndarray, starts: np.ndarray, blob: bytes, path: str = "") -> None:
        self.keys, self.starts, self.blob, self.path = keys, starts, blob, path

    @classmethod
    def read(cls, table: str | Path) -> "PhraseAlignments":
        """Read the alignment field of every pair of a Moses phrase table (plain or .gz)."""
        keys, starts, blob = array("Q"), array("Q"), bytearray()
        for e in PhraseTableReader(table, keep_raw=False):
            keys.append(pair_key(e.src, e.tgt))
            starts.append(len(blob))
            for i, j in e.alignment:
                if i < 256 and j < 256:
                    blob += bytes((i, j))
        k = np.frombuffer(keys, dtype=np.uint64) if keys else np.zeros(0, np.uint64)
        s = np.frombuffer(starts, dtype=np.uint64) if starts else np.zeros(0, np.uint64)
        ends = np.append(s[1:], np.uint64(len(blob))) if len(s) else s
        order = np.argsort(k, kind="stable")
        return cls(k[order], np.stack([s[order], ends[order]], 1) if len(s) else np.zeros((0, 2), np.uint64),
                   bytes(blob), str(table))

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, src: Sequence[str], tgt: Sequence[str]) -> list[tuple[int, int]]:
        """The alignment points of the pair, sorted by source then target word as Moses's ``AlignmentInfo`` keeps
        them (``[]`` when the table lacks the pair or has no alignment)."""
        key = np.uint64(pair_key(src, tgt))
        at = int(np.searchsorted(self.keys, key))
        if at >= len(self.keys) or self.keys[at] != key:
            return []
        lo, hi = (int(x) for x in self.starts[at])
        b = self.blob[lo:hi]
        return sorted((b[m], b[m + 1]) for m in range(0, len(b), 2))

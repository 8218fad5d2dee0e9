"""The decoder's in-memory phrase table (:class:`PhraseTable`): every pair of a Moses table by source phrase.

Files are read by the ground floor's strict reader (:mod:`nmt.core.formats.phrase_table_reader`);
this class only holds the entries the way the search looks them up.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from nmt.core.formats.phrase_table_reader import PhraseTableReader
from smt_features.model.binary_table import BinaryPhraseTable, sidecar_path

log = logging.getLogger(__name__)


class PhraseTable:
    """A Moses phrase table in memory: ``source tuple → [(target tuple, scores tuple), …]``.

    Everything is kept (file order); the decoder ranks and cuts each
    source phrase's list to the table limit when it first needs it.
    """

    def __init__(self, entries: dict[tuple[str, ...], list[tuple[tuple[str, ...], tuple[float, ...]]]],
                 num_scores: int, path: str | None = None) -> None:
        self.entries = entries
        self.num_scores = num_scores
        self.path = path
        self.max_src_len = max((len(s) for s in entries), default=0)
        self.num_pairs = sum(len(v) for v in entries.values())

    @classmethod
    def load(cls, path: str | Path) -> "PhraseTable":
        """Read a table with the strict reader of :mod:`nmt.core.formats.phrase_table_reader` (words interned, file
        order kept)."""
        reader = PhraseTableReader(path, keep_raw=False, intern=True)
        entries: dict[tuple[str, ...], list] = {}
        get = entries.get
        for e in reader:
            bucket = get(e.src)
            if bucket is None:
                entries[e.src] = [(e.tgt, e.scores)]
            else:
                bucket.append((e.tgt, e.scores))
        return cls(entries, reader.num_scores or 0, str(path))

    @classmethod
    def from_entries(cls, entries: Iterable) -> "PhraseTable":
        """From ``PhraseEntry`` objects or ``(src, tgt, scores)`` tuples (phrases as tuples or strings)."""
        table: dict[tuple[str, ...], list] = {}
        num = None
        for e in entries:
            src, tgt, scores = e[0], e[1], e[2]
            src = tuple(src.split()) if isinstance(src, str) else tuple(src)
            tgt = tuple(tgt.split()) if isinstance(tgt, str) else tuple(tgt)
            scores = tuple(float(s) for s in scores)
            if num is None:
                num = len(scores)
            elif len(scores) != num:
                raise ValueError(f"{len(scores)} scores for {' '.join(src)!r} but earlier entries have {num}")
            table.setdefault(src, []).append((tgt, scores))
        return cls(table, num or 0)

    def get(self, src: tuple[str, ...]):
        return self.entries.get(src)

    def __len__(self) -> int:
        return self.num_pairs


def load_phrase_table(path: str | Path) -> "PhraseTable | BinaryPhraseTable":
    """The decoder's table of ``path``: its binarized sidecar ``path.bin`` (memory-mapped) when there is one,
    else the text table read into memory. A sidecar not built from ``path`` as it is now is refused
    (``DataError``: rebuild it with ``smt-binarize-table``)."""
    side = sidecar_path(path)
    if side.exists():
        table = BinaryPhraseTable(side, source=path)
        log.info("phrase table %s: using its binarized form %s (%d pairs)", path, side, len(table))
        return table
    return PhraseTable.load(path)

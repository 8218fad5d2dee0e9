"""The phrase step's corpus read as streams: one checking pass, compact lengths, then chunks of lines.

Memory does not grow with the corpus: :func:`scan_corpus` keeps two integers a pair
(:class:`PairLengths`, ``array('I')``: 8 bytes a pair), the alignment file is checked and copied line by
line (:func:`check_alignment`, :func:`write_normalized_alignment`), and the lexical tables and the phrase
extraction read ``src`` / ``tgt`` / alignment lines back in lockstep, ``chunk_lines`` at a time
(:func:`iter_chunks`). Messages name the file and line as the strict readers of :mod:`nmt.core.io` do.
"""
from __future__ import annotations

import logging
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from tqdm import tqdm

from nmt.core.io import DataError, atomic_write, iter_lines, iter_parallel

from smt_features.train.align import EFLOMAL_MAX_TOKENS, Links, PathLike, format_pharaoh, parse_pharaoh

log = logging.getLogger(__name__)

#: One chunk: source lines, target lines and Pharaoh alignment lines (text, as read).
Chunk = tuple[list[str], list[str], list[str]]


class PairLengths:
    """``(source, target)`` token counts of every pair, 8 bytes a pair; a read-only sequence of tuples."""

    def __init__(self) -> None:
        self.src = array("I")
        self.tgt = array("I")

    def append(self, src_len: int, tgt_len: int) -> None:
        self.src.append(src_len)
        self.tgt.append(tgt_len)

    def __len__(self) -> int:
        return len(self.src)

    def __getitem__(self, k: int) -> tuple[int, int]:
        return self.src[k], self.tgt[k]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.src, self.tgt)


def _check_separator(path: PathLike, line_no: int, line: str) -> None:
    if "|||" in line:
        tok = next(t for t in line.split() if "|||" in t)
        raise DataError(path, line_no, f"token {tok!r} contains '|||', the phrase table's field "
                                       "separator (escape '|' when tokenizing)")


def scan_corpus(src_path: PathLike, tgt_path: PathLike) -> PairLengths:
    """One strict pass over the parallel files: the checks of the in-memory reader, lengths kept.

    Raises :class:`DataError` (file and line) on invalid UTF-8, an empty line, a token holding ``|||``
    and files of different length.
    """
    lengths = PairLengths()
    with tqdm(unit=" pairs", desc="read corpus", disable=None, mininterval=1.0) as bar:
        for k, (s, t) in enumerate(iter_parallel(src_path, tgt_path), start=1):
            _check_separator(src_path, k, s)
            _check_separator(tgt_path, k, t)
            lengths.append(len(s.split()), len(t.split()))
            if k % 10000 == 0:
                bar.update(10000)
        bar.update(len(lengths) % 10000)
    return lengths


@dataclass
class LinkSummary:
    """What the alignment of a corpus says about it: pairs without links, and whether any link exists."""

    bare: array = field(default_factory=lambda: array("I"))   # 0-based pairs with words but no link
    links: int = 0

    def add(self, k: int, links: Links, src_len: int, tgt_len: int) -> None:
        self.links += len(links)
        if src_len and tgt_len and not links:
            self.bare.append(k)


def check_alignment(path: PathLike, lengths: PairLengths) -> LinkSummary:
    """Check a Pharaoh file against the corpus lengths (line count, ranges), streaming."""
    summary = LinkSummary()
    n = len(lengths)
    line_no = 0
    for line_no, line in enumerate(iter_lines(path, allow_empty=True), start=1):
        if line_no > n:
            raise DataError(path, line_no, f"more alignment lines than the {n} sentence pairs")
        sl, tl = lengths[line_no - 1]
        try:
            links = parse_pharaoh(line, sl, tl)
        except ValueError as err:
            raise DataError(path, line_no, str(err)) from None
        summary.add(line_no - 1, links, sl, tl)
    if line_no != n:
        raise DataError(path, line_no + 1, f"{line_no} alignment lines for {n} sentence pairs")
    return summary


def write_normalized_alignment(path: PathLike, out_path: PathLike) -> None:
    """Copy a checked Pharaoh file as :func:`~smt_features.train.align.write_alignments` writes it, atomically."""
    with atomic_write(out_path) as fh:
        for line in iter_lines(path, allow_empty=True):
            fh.write(format_pharaoh(parse_pharaoh(line)))
            fh.write("\n")


def _long_unaligned(s: str, t: str, a: str) -> bool:
    return not a.strip() and (len(s.split()) >= EFLOMAL_MAX_TOKENS or len(t.split()) >= EFLOMAL_MAX_TOKENS)


def iter_chunks(src_path: PathLike, tgt_path: PathLike, aligned_path: PathLike, chunk_lines: int, *,
                skip_long_unaligned: bool = False) -> Iterator[Chunk]:
    """``chunk_lines`` pairs at a time: ``(src lines, tgt lines, alignment lines)`` of checked files.

    ``skip_long_unaligned`` empties the pairs eflomal could not align (a side of
    :data:`~smt_features.train.align.EFLOMAL_MAX_TOKENS` tokens or more and no link): they then add
    nothing to the lexical tables or the phrase table.
    """
    if chunk_lines < 1:
        raise ValueError("chunk_lines must be >= 1")
    triples = zip(iter_parallel(src_path, tgt_path), iter_lines(aligned_path, allow_empty=True))
    while True:
        src: list[str] = []
        tgt: list[str] = []
        ali: list[str] = []
        for (s, t), a in islice(triples, chunk_lines):
            if skip_long_unaligned and _long_unaligned(s, t, a):
                s = t = ""
            src.append(s)
            tgt.append(t)
            ali.append(a)
        if not src:
            return
        yield src, tgt, ali


def iter_pairs(chunks: Iterable[Chunk]) -> Iterator[tuple[list[str], list[str], Links]]:
    """Token lists and links of every pair of ``chunks``."""
    for src, tgt, ali in chunks:
        for s, t, a in zip(src, tgt, ali):
            yield s.split(), t.split(), parse_pharaoh(a)

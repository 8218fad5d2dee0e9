"""Word-based orientations (msd) of every extracted phrase pair, as Moses ``extract --model wbe-msd``.

For a phrase pair with source span ``[sF, eF]`` and target span ``[sE, eE]`` (inclusive; Moses
``phrase-extract/extract-main.cpp``, ``getOrientWordModel`` with ``REO_MSD``):

* previous (the pair before, in target order): ``L = aligned(sF-1, sE-1)``, ``R = aligned(eF+1, sE-1)``;
* next (the pair after): ``L = aligned(eF+1, eE+1)``, ``R = aligned(sF-1, eE+1)``;

``L and not R`` is *monotone*, ``R and not L`` is *swap*, anything else (neither, or both) is
*discontinuous* ("other"). ``aligned(i, j)`` is a link of the alignment, and also true at the two
sentence corners ``(-1, -1)`` and ``(len_src, len_tgt)`` (Moses's ``isAligned``); any other position
outside the sentence is not aligned.

Every phrase pair of the phrase table gets one orientation per occurrence: the spans are those of
:func:`smt_features.train.spans.extract_spans` (which includes the pairs extended over unaligned
source words), the same extraction as the phrase table's. Chunks of sentence pairs are counted into
temp files of ``src ||| tgt ||| <TAB>pm ps pd nm ns nd`` lines (one per distinct pair of the chunk).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from smt_features.train.external_sort import open_temp
from smt_features.train.spans import DEFAULT_MAX_PHRASE_LENGTH, Span, extract_spans

PathLike = str | os.PathLike[str]
SEP = " ||| "
MONO, SWAP, DISC = 0, 1, 2
ORIENTATION_NAMES = ("mono", "swap", "other")


def _aligned(links: set[tuple[int, int]], n_f: int, n_e: int, fi: int, ei: int) -> bool:
    """Moses's ``isAligned``: a link, or one of the two sentence corners."""
    if fi == -1 and ei == -1:
        return True
    if fi == n_f and ei == n_e:
        return True
    return (fi, ei) in links


def _msd(left: bool, right: bool) -> int:
    if left and not right:
        return MONO
    if right and not left:
        return SWAP
    return DISC


def orientation(span: Span, links: set[tuple[int, int]], n_f: int, n_e: int) -> tuple[int, int]:
    """``(previous, next)`` orientation (:data:`MONO`, :data:`SWAP` or :data:`DISC`) of one phrase pair."""
    sf, ef, se, ee = span
    prev = _msd(_aligned(links, n_f, n_e, sf - 1, se - 1), _aligned(links, n_f, n_e, ef + 1, se - 1))
    nxt = _msd(_aligned(links, n_f, n_e, ef + 1, ee + 1), _aligned(links, n_f, n_e, sf - 1, ee + 1))
    return prev, nxt


def sentence_orientations(n_f: int, n_e: int, alignment: Sequence[tuple[int, int]],
                          max_phrase_length: int = DEFAULT_MAX_PHRASE_LENGTH,
                          ) -> list[tuple[Span, int, int]]:
    """Every extracted span of one sentence pair with its ``(previous, next)`` orientation."""
    links = set(alignment)
    return [(span, *orientation(span, links, n_f, n_e))
            for span in extract_spans(n_f, n_e, alignment, max_phrase_length)]


def count_orientations(sentences: Iterable[tuple[Sequence[str], Sequence[str], Sequence[tuple[int, int]]]],
                       max_phrase_length: int = DEFAULT_MAX_PHRASE_LENGTH) -> tuple[dict[str, list[int]], int]:
    """``{"src ||| tgt ||| ": [pm, ps, pd, nm, ns, nd]}`` over sentence pairs, and the occurrences."""
    counts: dict[str, list[int]] = {}
    n_occ = 0
    for src, tgt, alignment in sentences:
        for (sf, ef, se, ee), prev, nxt in sentence_orientations(len(src), len(tgt), alignment, max_phrase_length):
            key = " ".join(src[sf:ef + 1]) + SEP + " ".join(tgt[se:ee + 1]) + SEP
            row = counts.get(key)
            if row is None:
                row = counts[key] = [0, 0, 0, 0, 0, 0]
            row[prev] += 1
            row[3 + nxt] += 1
            n_occ += 1
    return counts, n_occ


def write_chunk(counts: dict[str, list[int]], path: PathLike, compress: bool = False) -> None:
    """One chunk's counts as ``key<TAB>pm ps pd nm ns nd`` lines (unsorted: GNU sort orders them)."""
    with open_temp(path, "w", compress) as fh:
        fh.writelines(f"{key}\t{' '.join(map(str, row))}\n" for key, row in counts.items())


def merge_sorted(lines: Iterator[str]) -> Iterator[tuple[str, list[int]]]:
    """Sorted chunk lines → ``(key, summed counts)`` per distinct key, in the lines' order."""
    key = None
    total: list[int] = []
    for line in lines:
        k, _, rest = line.rstrip("\n").partition("\t")
        row = [int(x) for x in rest.split(" ")]
        if k == key:
            for i, c in enumerate(row):
                total[i] += c
            continue
        if key is not None:
            yield key, total
        key, total = k, row
    if key is not None:
        yield key, total


def chunk_path(work: Path, k: int) -> Path:
    """The ``k``-th chunk file of the temp folder ``work``."""
    return work / f"orient.{k:06d}"

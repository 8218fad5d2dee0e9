"""Word alignments: Pharaoh ``i-j`` lines, symmetrization (Koehn's heuristics) and corpus checks.

Links are ``(i, j)`` points: 0-based source index ``i``, target index ``j``. The aligner that makes the
two directional alignments symmetrized here is :mod:`smt_features.train.aligner` (eflomal).

Both eflomal outputs use source-target order (eflomal README). The forward
direction gives each target word at most one source word (Koehn's
``e2f``, e = target/English, f = source/foreign); the reverse direction gives
each source word at most one target word (``f2e``).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator, Sequence

from nmt.core.io import DataError, atomic_write, iter_lines, iter_parallel
from nmt.core.pools import can_fork, fork_pool

log = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]
Link = tuple[int, int]
Links = list[Link]

SYMMETRIZATIONS = ("intersection", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and")

# Koehn's neighbourhood in (d_e, d_f) = (target, source) offsets, in the order of the
# pseudo code on the Moses "Training Step 3: Align Words" page.
_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


#: eflomal leaves a sentence pair with this many tokens (or more) on a side unaligned.
EFLOMAL_MAX_TOKENS = 1024
#: Moses ``clean-corpus-n.perl``'s default length ratio: pairs beyond it are mentioned in the log.
CLEAN_CORPUS_RATIO = 9.0
#: How many line numbers a log message lists.
LISTED_LINES = 5


def some_lines(indices: Sequence[int]) -> str:
    """``"2, 7, 9"`` (1-based) for the first :data:`LISTED_LINES` 0-based indices, ``", ..."`` beyond."""
    shown = ", ".join(str(k + 1) for k in indices[:LISTED_LINES])
    return shown + (", ..." if len(indices) > LISTED_LINES else "")


def long_pairs(lengths: Sequence[tuple[int, int]], limit: int = EFLOMAL_MAX_TOKENS) -> list[int]:
    """0-based indices of the pairs with ``limit`` or more tokens on a side."""
    return [k for k, (sl, tl) in enumerate(lengths) if sl >= limit or tl >= limit]


def report_long_and_uneven(lengths: Sequence[tuple[int, int]], where: PathLike = "the corpus",
                           ratio: float = CLEAN_CORPUS_RATIO) -> list[int]:
    """Log the pairs whose sides differ in length by more than ``ratio`` (Moses ``clean-corpus-n``
    would drop them; they are kept here, but usually are misaligned lines). Returns their indices."""
    uneven = [k for k, (sl, tl) in enumerate(lengths) if sl and tl and max(sl, tl) > ratio * min(sl, tl)]
    if uneven:
        log.warning("%s: %d sentence pair(s) with a length ratio above %g (line(s) %s): kept, but check that "
                    "the files are line-aligned (Moses clean-corpus-n would drop them)", where, len(uneven),
                    ratio, some_lines(uneven))
    return uneven


def report_unaligned(links: Sequence[Links], lengths: Sequence[tuple[int, int]],
                     where: PathLike = "the corpus") -> list[int]:
    """Log the pairs with words on both sides but not one alignment link (they give no phrase pairs)."""
    bare = [k for k, (a, (sl, tl)) in enumerate(zip(links, lengths)) if sl and tl and not a]
    report_bare(bare, where)
    return bare


def report_bare(bare: Sequence[int], where: PathLike = "the corpus") -> None:
    """Log the 0-based pairs ``bare`` that have words on both sides but no alignment link."""
    if bare:
        log.warning("%s: %d sentence pair(s) without any alignment link (line(s) %s): they give no phrase pairs",
                    where, len(bare), some_lines(bare))


# --------------------------------------------------------------------------- Pharaoh format

def parse_pharaoh(line: str, src_len: int | None = None, tgt_len: int | None = None) -> Links:
    """``"0-0 1-2"`` → ``[(0, 0), (1, 2)]``; checks the ranges when lengths are given."""
    links = []
    for tok in line.split():
        a, dash, b = tok.partition("-")
        if not (dash and a.isdigit() and b.isdigit() and a.isascii() and b.isascii()):
            raise ValueError(f"bad alignment point {tok!r} (expected i-j)")
        i, j = int(a), int(b)
        if (src_len is not None and i >= src_len) or (tgt_len is not None and j >= tgt_len):
            raise ValueError(f"alignment point {tok} out of range for lengths {src_len}, {tgt_len}")
        links.append((i, j))
    return links


def format_pharaoh(links: Iterable[Link]) -> str:
    return " ".join(f"{i}-{j}" for i, j in links)


def write_alignments(path: PathLike, alignments: Iterable[Iterable[Link]]) -> int:
    """Write one Pharaoh line per sentence, atomically; returns the number of lines."""
    n = 0
    with atomic_write(path) as fh:
        for links in alignments:
            fh.write(format_pharaoh(links))
            fh.write("\n")
            n += 1
    return n


def read_alignments(path: PathLike, lengths: Sequence[tuple[int, int]] | None = None) -> list[Links]:
    """Read a Pharaoh file; with ``lengths`` (src, tgt) per line, check line count and ranges."""
    out = []
    for line_no, line in enumerate(iter_lines(path, allow_empty=True), start=1):
        if lengths is not None and line_no > len(lengths):
            raise DataError(path, line_no, f"more alignment lines than the {len(lengths)} sentence pairs")
        sl, tl = lengths[line_no - 1] if lengths is not None else (None, None)
        try:
            out.append(parse_pharaoh(line, sl, tl))
        except ValueError as err:
            raise DataError(path, line_no, str(err)) from None
    if lengths is not None and len(out) != len(lengths):
        raise DataError(path, len(out) + 1, f"{len(out)} alignment lines for {len(lengths)} sentence pairs")
    return out


# --------------------------------------------------------------------------- symmetrization

def symmetrize(forward: Iterable[Link], reverse: Iterable[Link], src_len: int, tgt_len: int,
               method: str = "grow-diag-final-and") -> Links:
    """Combine two directional alignments (both ``(src, tgt)`` points) into one.

    ``forward`` is Koehn's ``e2f`` (each target word linked to ≤ 1 source
    word: eflomal's forward links), ``reverse`` is ``f2e``. Methods, after
    Koehn's pseudo code (Moses manual, "Training Step 3: Align Words"):

    * ``intersection``, ``union``;
    * ``grow-diag``: start from the intersection; repeat until nothing is
      added: scan target word ``e`` = 0…, source word ``f`` = 0… and for
      every current point, add each of its 8 neighbours (order ``(-1,0),
      (0,-1), (1,0), (0,1), (-1,-1), (-1,1), (1,-1), (1,1)`` in (e, f)) that
      is in the union and whose target or source word is still unaligned;
    * ``grow-diag-final``: then ``FINAL(e2f)``, ``FINAL(f2e)``: scan e, f and
      add each point of that direction whose target *or* source word is
      unaligned;
    * ``grow-diag-final-and``: the same with target *and* source word unaligned.

    Points added during a scan are seen by the rest of that scan (the pseudo
    code reads the current alignment). Returns points sorted by (src, tgt).
    """
    if method not in SYMMETRIZATIONS:
        raise ValueError(f"unknown symmetrization {method!r}; choose from {SYMMETRIZATIONS}")
    fwd = set(forward)
    rev = set(reverse)
    for i, j in fwd | rev:
        if not (0 <= i < src_len and 0 <= j < tgt_len):
            raise ValueError(f"alignment point {i}-{j} out of range for lengths {src_len}, {tgt_len}")
    if method == "intersection":
        return sorted(fwd & rev)
    union = fwd | rev
    if method == "union":
        return sorted(union)

    n_e, n_f = tgt_len, src_len
    rows = [0] * n_e          # rows[e]: bit f set when (f, e) is in the alignment
    e_aligned = [0] * n_e
    f_aligned = [0] * n_f
    for f, e in fwd & rev:
        rows[e] |= 1 << f
        e_aligned[e] += 1
        f_aligned[f] += 1

    # Only union points not yet in the alignment can ever be added; when none of them
    # has an unaligned word, a further scan cannot add anything (same result, less work).
    candidates = {(f, e) for f, e in union if not rows[e] >> f & 1}
    while any(not e_aligned[e] or not f_aligned[f] for f, e in candidates):   # GROW-DIAG
        added = False
        for e in range(n_e):
            last = -1
            while True:
                rest = rows[e] >> (last + 1)
                if not rest:
                    break
                f = last + (rest & -rest).bit_length()   # next aligned f > last
                last = f
                for de, df in _NEIGHBOURS:
                    e_new, f_new = e + de, f + df
                    if (f_new, e_new) in candidates and (not e_aligned[e_new] or not f_aligned[f_new]):
                        rows[e_new] |= 1 << f_new
                        e_aligned[e_new] += 1
                        f_aligned[f_new] += 1
                        candidates.discard((f_new, e_new))
                        added = True
        if not added:
            break

    if method != "grow-diag":
        both = method == "grow-diag-final-and"
        for direction in (fwd, rev):               # FINAL(e2f); FINAL(f2e)
            for f, e in sorted(direction, key=lambda p: (p[1], p[0])):
                if rows[e] >> f & 1:
                    continue
                if (not e_aligned[e] and not f_aligned[f]) if both else \
                        (not e_aligned[e] or not f_aligned[f]):
                    rows[e] |= 1 << f
                    e_aligned[e] += 1
                    f_aligned[f] += 1

    points = []
    for e in range(n_e):
        m = rows[e]
        f = 0
        while m:
            if m & 1:
                points.append((f, e))
            m >>= 1
            f += 1
    points.sort()
    return points


def symmetrize_chunk(args: tuple) -> list[Links]:
    fwd, rev, lengths, method = args
    return [symmetrize(a, b, sl, tl, method) for a, b, (sl, tl) in zip(fwd, rev, lengths)]


def symmetrize_corpus(forward: Sequence[Links], reverse: Sequence[Links],
                      lengths: Sequence[tuple[int, int]], method: str = "grow-diag-final-and",
                      processes: int = 1) -> list[Links]:
    """:func:`symmetrize` for every sentence; ``processes`` > 1 splits the corpus over a pool."""
    if not (len(forward) == len(reverse) == len(lengths)):
        raise ValueError(f"{len(forward)} forward, {len(reverse)} reverse alignments "
                         f"for {len(lengths)} sentence pairs")
    n = len(lengths)
    if processes <= 1 or n < 2000 or not can_fork():
        return symmetrize_chunk((forward, reverse, lengths, method))
    step = (n + processes - 1) // processes
    chunks = [(forward[k:k + step], reverse[k:k + step], lengths[k:k + step], method)
              for k in range(0, n, step)]
    out: list[Links] = []
    with fork_pool(processes) as pool:
        for part in pool.map(symmetrize_chunk, chunks):
            out.extend(part)
    return out


def read_tokenized_parallel(src_path: PathLike, tgt_path: PathLike) -> tuple[list[list[str]], list[list[str]]]:
    """Tokenized parallel files (space-separated tokens) → two lists of token lists.

    Strict (:func:`nmt.core.io.iter_parallel`): invalid UTF-8, empty lines and
    files of different length raise :class:`nmt.core.io.DataError`.
    """
    src, tgt = [], []
    for s, t in iter_parallel(src_path, tgt_path):
        src.append(s.split())
        tgt.append(t.split())
    return src, tgt


__all__ = [
    "EFLOMAL_MAX_TOKENS", "long_pairs", "report_long_and_uneven", "report_unaligned", "SYMMETRIZATIONS",
    "format_pharaoh", "parse_pharaoh", "read_alignments", "read_tokenized_parallel", "symmetrize",
    "symmetrize_corpus", "write_alignments",
]

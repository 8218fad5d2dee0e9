"""The Moses phrase-table line: its format, and writing lines and whole tables.

Line format, exactly as Moses ``consolidate`` writes it (train-model.perl
default, ``phrase-extract/consolidate-main.cpp``)::

    src ||| tgt ||| p(f|e) lex(f|e) p(e|f) lex(e|f) ||| 0-0 1-1 ||| c(tgt) c(src) c(pair) ||| |||

* ``f`` is the source (input) phrase, ``e`` the target: the four scores are
  the inverse phrase translation probability φ(f|e), the inverse lexical
  weighting lex(f|e), the direct phrase translation probability φ(e|f) and
  the direct lexical weighting lex(e|f) (Moses manual, "Training Step 6:
  Score Phrases"). Scores are probabilities; the decoder takes ``ln``.
* The alignment field lists ``src-tgt`` word pairs inside the phrase pair,
  written target position by target position (Moses's order).
* The counts field is ``count(tgt) count(src) count(pair)``.
* The two trailing fields (sparse features, key-value properties) are empty.
* Numbers are printed like C++ ``ostream`` defaults: ``%g``, 6 significant
  digits.

A table is sorted as ``LC_ALL=C sort`` sorts it (byte order of the UTF-8
line), which groups the lines of one source phrase together.

The strict streaming reader is :mod:`nmt.core.formats.phrase_table_reader`, its
whole-table check :mod:`nmt.core.formats.phrase_table_check`, the in-memory
loader :mod:`nmt.core.formats.phrase_table_load`. Readers keep the raw line
(:attr:`PhraseEntry.raw`) so a rescoring tool can add a score column with
:func:`append_scores` leaving every other byte as it was.
"""
from __future__ import annotations

import gzip
import os
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from nmt.core.io import DataError, atomic_write

PathLike = str | os.PathLike[str]

SEP = " ||| "
#: Fields Moses writes: src, tgt, scores, alignment, counts, sparse, properties.
MOSES_NUM_FIELDS = 7
MIN_FIELDS = 3
#: Column names of the four scores train-model.perl writes, in file order.
MOSES_SCORE_NAMES = ("p(f|e)", "lex(f|e)", "p(e|f)", "lex(e|f)")
#: Index of the direct phrase translation probability φ(e|f).
DIRECT_PHRASE_PROB = 2
#: gzip level of written tables (``gzip``'s default; Moses pipes through ``gzip``).
GZIP_LEVEL = 6


class PhraseTableError(DataError):
    """A malformed phrase-table line; the message names the file and the 1-based line."""

    def __init__(self, path: PathLike, line: int, message: str) -> None:
        super().__init__(path, line, message)

    def __reduce__(self):  # picklable across processes
        return (type(self), (self.path, self.line, self.detail))


class PhraseEntry(NamedTuple):
    """One phrase pair. ``scores`` are probabilities in file order."""

    src: tuple[str, ...]
    tgt: tuple[str, ...]
    scores: tuple[float, ...]
    alignment: tuple[tuple[int, int], ...] = ()
    counts: tuple[float, ...] = ()
    line_no: int = 0
    raw: str | None = None


def format_score(value: float) -> str:
    """A number as C++ ``ostream << float`` prints it (``%g``, 6 significant digits)."""
    return "%g" % value


def _check_phrase(words: Sequence[str], side: str) -> None:
    if not words:
        raise ValueError(f"empty {side} phrase")
    for w in words:
        if not w or "|||" in w or len(w.split()) != 1 or w != w.strip():
            raise ValueError(f"bad {side} token {w!r} (empty, whitespace or '|||')")


def format_entry(entry: PhraseEntry | Sequence, *, validate: bool = True) -> str:
    """The Moses line (without ``\\n``) of a phrase pair.

    ``entry`` is a :class:`PhraseEntry` or a tuple ``(src, tgt, scores,
    alignment, counts)``. The alignment is written in the order given.
    """
    src, tgt, scores, alignment, counts = entry[:5]
    if validate:
        _check_phrase(src, "source")
        _check_phrase(tgt, "target")
        if not scores:
            raise ValueError("no scores")
        for s in scores:
            if not (0.0 < s <= 1.0):
                raise ValueError(f"score {s!r} of {' '.join(src)!r} ||| {' '.join(tgt)!r} not in (0, 1]")
        for i, j in alignment:
            if not (0 <= i < len(src) and 0 <= j < len(tgt)):
                raise ValueError(f"alignment point {i}-{j} out of range for phrase lengths "
                                 f"{len(src)}, {len(tgt)}")
    # Moses: " ||| " + "0-0 1-1 " + "||| " -> "||| 0-0 1-1 ||| ", and " ||| ||| " when empty.
    align_text = "".join(f"{i}-{j} " for i, j in alignment)
    return (" ".join(src) + SEP + " ".join(tgt) + SEP
            + " ".join(["%g" % s for s in scores]) + SEP + align_text + "||| "
            + " ".join(["%g" % c for c in counts]) + " ||| |||")


def write_phrase_table(entries: Iterable[PhraseEntry | Sequence], path: PathLike, *,
                       validate: bool = True) -> int:
    """Write ``entries`` to ``path`` (gzip if it ends in ``.gz``), sorted, atomically.

    Lines are sorted by their UTF-8 bytes (``LC_ALL=C sort``; for ``str``
    this equals code point order), which groups each source phrase. Returns
    the number of lines. Raises ``ValueError`` on an entry that cannot be
    written as a valid line (empty phrase, token with whitespace or ``|||``,
    score outside (0, 1], alignment point out of range) or on duplicate
    phrase pairs.
    """
    lines = [format_entry(e, validate=validate) for e in entries]
    return write_phrase_table_lines(lines, path, validate=validate)


def write_phrase_table_lines(lines: list[str], path: PathLike, *, validate: bool = True) -> int:
    """Sort already formatted lines (in place) and write them atomically; see :func:`write_phrase_table`."""
    lines.sort()
    if validate:
        prev_key = None
        for line in lines:
            cut = line.find(SEP, line.find(SEP) + 1)
            key = line[:cut]
            if key == prev_key:
                raise ValueError(f"duplicate phrase pair {key!r}")
            prev_key = key
    chunks = (encode_lines(lines[k:k + 100000], gz=is_gzip_path(path)) for k in range(0, len(lines), 100000))
    write_encoded(chunks, path)
    return len(lines)


def is_gzip_path(path: PathLike) -> bool:
    return str(path).endswith(".gz")


def encode_lines(lines: Sequence[str], *, gz: bool) -> bytes:
    """Lines as UTF-8 bytes (``\\n`` after each); with ``gz`` one complete gzip member.

    Members can be written one after another (:func:`write_encoded`): a
    multi-member gzip file is one stream to ``gzip -d``, zlib and Python.
    """
    if not lines:
        return b""
    data = ("\n".join(lines) + "\n").encode("utf-8")
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0) if gz else data


def write_encoded(chunks: Iterable[bytes], path: PathLike) -> None:
    """Write chunks from :func:`encode_lines` (gzip members for a ``.gz`` path, compressed there at gzip's
    default level 6) to ``path`` atomically, as they are."""
    with atomic_write(path, "wb", compress=False) as fh:
        for chunk in chunks:
            fh.write(chunk)


def split_fields(line: str) -> list[str]:
    """The ``|||``-separated fields of a line, stripped of surrounding spaces."""
    return [f.strip() for f in line.split("|||")]


def append_scores(raw: str, values: Sequence[float]) -> str:
    """``raw`` with ``values`` appended to its scores field; every other byte unchanged.

    Works on the line as read (no ``\\n``). The new numbers are printed with
    :func:`format_score`.
    """
    first = raw.find("|||")
    second = raw.find("|||", first + 3) if first >= 0 else -1
    if second < 0:
        raise ValueError(f"not a phrase-table line (fewer than 3 fields): {raw!r}")
    third = raw.find("|||", second + 3)
    extra = " ".join(format_score(v) for v in values)
    if third < 0:  # scores are the last field
        end = len(raw.rstrip())
        return raw[:end] + " " + extra + raw[end:]
    end = second + 3 + len(raw[second + 3:third].rstrip())
    return raw[:end] + " " + extra + raw[end:]

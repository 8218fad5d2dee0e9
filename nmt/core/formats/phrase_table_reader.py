"""The strict, streaming reader of Moses phrase tables (plain or ``.gz``), naming FILE:LINE of a bad line."""
from __future__ import annotations

import logging
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from nmt.core.io import GZIP_ERRORS, open_text
from nmt.core.formats.phrase_table import (MIN_FIELDS, MOSES_NUM_FIELDS, PathLike, PhraseEntry, PhraseTableError,
                                           split_fields)

log = logging.getLogger("nmt.formats.phrase_table")  # the name the warnings have always carried

#: How many skipped lines are reported one by one with ``skip_bad=True``.
MAX_LOGGED_SKIPS = 10


@dataclass
class _Expect:
    n_fields: int | None = None
    n_scores: int | None = None


class PhraseTableReader:
    """Iterator over the :class:`PhraseEntry` lines of a Moses phrase table.

    Strict by default: the first malformed line raises
    :class:`PhraseTableError` naming the file and line. With
    ``skip_bad=True`` bad lines are skipped, counted in :attr:`n_skipped`
    (line numbers of the first ones in :attr:`skipped_lines`) and logged.

    Checks: number of ``|||`` fields (3 to 7, and the same on every line);
    non-empty source and target phrases; every score a finite number in
    (0, 1] (``check_range``); the same number of scores on every line;
    alignment points ``i-j`` inside the phrase lengths; counts that are
    non-negative numbers; valid UTF-8.

    ``source_filter(src)`` returning false drops the lines of that source
    phrase right after the source field is read (their other fields are not
    parsed, only their layout is checked: the field and score counts, which
    the table's first line fixes for every line; counted in :attr:`n_filtered`). ``keep_raw=False`` drops
    :attr:`PhraseEntry.raw`; ``keep_counts=False``
    skips (and does not check) the counts field; ``intern=True`` interns the
    words and shares identical phrase tuples between entries (for tables
    held in memory).
    """

    def __init__(self, path: PathLike, *, skip_bad: bool = False, keep_raw: bool = True,
                 check_range: bool = True, intern: bool = False, keep_counts: bool = True,
                 source_filter: Callable[[tuple[str, ...]], bool] | None = None) -> None:
        self.path = str(path)
        self.keep_counts = keep_counts
        self.source_filter = source_filter
        self.n_filtered = 0      # lines dropped by ``source_filter`` (their other fields unchecked)
        self.skip_bad = skip_bad
        self.keep_raw = keep_raw
        self.check_range = check_range
        self.intern = intern
        self.n_read = 0          # lines read, good or bad
        self.n_entries = 0       # entries yielded
        self.n_skipped = 0
        self.skipped_lines: list[int] = []
        self._expect = _Expect()
        self._align_cache: dict[str, tuple[tuple[tuple[int, int], ...], int, int]] = {}
        self._last_src_text: str | None = None
        self._last_src: tuple[str, ...] = ()
        self._last_keep = True
        self._tgt_cache: dict[str, tuple[str, ...]] = {}
        self._gen = self._generate()

    def __iter__(self) -> "PhraseTableReader":
        return self

    def __next__(self) -> PhraseEntry:
        return next(self._gen)

    @property
    def num_scores(self) -> int | None:
        """Number of scores per line (known after the first good line)."""
        return self._expect.n_scores

    def _generate(self) -> Iterator[PhraseEntry]:
        line_no = 0
        with open_text(self.path, "rb") as fh:
            try:
                for raw_bytes in fh:
                    line_no += 1
                    self.n_read = line_no
                    try:
                        entry = self.parse_line(raw_bytes, line_no)
                        if entry is None:
                            self.n_filtered += 1
                            continue
                    except PhraseTableError as err:
                        if not self.skip_bad:
                            raise
                        self.n_skipped += 1
                        if len(self.skipped_lines) < 1000:
                            self.skipped_lines.append(line_no)
                        if self.n_skipped <= MAX_LOGGED_SKIPS:
                            log.warning("skipping bad line: %s", err)
                        continue
                    self.n_entries += 1
                    yield entry
            except (OSError, *GZIP_ERRORS) as err:  # truncated / corrupt gzip
                raise PhraseTableError(self.path, line_no + 1, f"cannot read file (corrupt or truncated gzip "
                                                                f"stream: {err})") from None
        if self.n_skipped:
            log.warning("%s: skipped %d bad line(s) of %d", self.path, self.n_skipped, line_no)

    def _fail(self, line_no: int, message: str) -> PhraseTableError:
        return PhraseTableError(self.path, line_no, message)

    def _parse_alignment(self, text: str, line_no: int) -> tuple[tuple[tuple[int, int], ...], int, int]:
        """(points, max source index, max target index) of an alignment field, cached by its text."""
        hit = self._align_cache.get(text)
        if hit is not None:
            return hit
        points = []
        max_i = max_j = -1
        for tok in text.split():
            a, dash, b = tok.partition("-")
            if not (dash and a.isdigit() and b.isdigit() and a.isascii() and b.isascii()):
                raise self._fail(line_no, f"alignment point {tok!r} is not of the form i-j")
            i, j = int(a), int(b)
            max_i = max(max_i, i)
            max_j = max(max_j, j)
            points.append((i, j))
        result = (tuple(points), max_i, max_j)
        if len(self._align_cache) < 200000:
            self._align_cache[text] = result
        return result

    def parse_line(self, raw_bytes: bytes, line_no: int) -> PhraseEntry | None:
        """One line (bytes, with or without its newline) as an entry; ``None`` for a bad line skipped with
        ``skip_bad``, else :class:`PhraseTableError` naming ``FILE:line_no``."""
        if raw_bytes.endswith(b"\n"):
            raw_bytes = raw_bytes[:-1]
        try:
            line = raw_bytes.decode("utf-8")
        except UnicodeDecodeError as err:
            raise self._fail(line_no, f"invalid UTF-8 byte(s) {raw_bytes[err.start:err.end]!r} "
                                      f"at byte {err.start} of the line") from None
        fields = line.split("|||")
        n_fields = len(fields)
        if not (MIN_FIELDS <= n_fields <= MOSES_NUM_FIELDS):
            raise self._fail(line_no, f"expected {MIN_FIELDS} to {MOSES_NUM_FIELDS} '|||'-separated "
                                      f"fields, found {n_fields}")
        exp = self._expect
        if exp.n_fields is not None and n_fields != exp.n_fields:
            raise self._fail(line_no, f"{n_fields} fields, but earlier lines have {exp.n_fields}")
        src_text = fields[0]
        if src_text == self._last_src_text:      # tables are grouped by source: share the tuple
            src = self._last_src
        else:
            words = src_text.split()
            if not words:
                raise self._fail(line_no, "empty source phrase")
            src = tuple([sys.intern(w) for w in words]) if self.intern else tuple(words)
            self._last_src_text, self._last_src = src_text, src
            self._last_keep = self.source_filter is None or bool(self.source_filter(src))
        if not self._last_keep:
            # a line left unparsed still fixes (or must match) the table's layout: the score count of the
            # table is that of its first line, whichever lines a filter keeps
            n_scores = len(fields[2].split())
            if exp.n_scores is None:
                exp.n_fields, exp.n_scores = n_fields, n_scores
            elif n_scores != exp.n_scores:
                raise self._fail(line_no, f"{n_scores} scores, but earlier lines have {exp.n_scores}")
            return None
        tgt_text = fields[1]
        tgt = self._tgt_cache.get(tgt_text) if self.intern else None
        if tgt is None:
            words = tgt_text.split()
            if not words:
                raise self._fail(line_no, "empty target phrase")
            if self.intern:
                tgt = tuple([sys.intern(w) for w in words])
                if len(self._tgt_cache) < 2_000_000:
                    self._tgt_cache[tgt_text] = tgt
            else:
                tgt = tuple(words)
        score_toks = fields[2].split()
        if not score_toks:
            raise self._fail(line_no, "no scores")
        try:
            scores = tuple([float(tok) for tok in score_toks])
        except ValueError:
            bad = next(t for t in score_toks if not _is_float(t))
            raise self._fail(line_no, f"score {bad!r} is not a number") from None
        for tok, value in zip(score_toks, scores):
            if not (0.0 < value <= 1.0) and (self.check_range or not math.isfinite(value)):
                if not math.isfinite(value):
                    raise self._fail(line_no, f"score {tok!r} is not a finite number")
                raise self._fail(line_no, f"score {tok!r} is not a probability in (0, 1]")
            if "_" in tok:
                raise self._fail(line_no, f"score {tok!r} is not a number")
        if exp.n_scores is not None and len(scores) != exp.n_scores:
            raise self._fail(line_no, f"{len(scores)} scores, but earlier lines have {exp.n_scores}")
        alignment: tuple[tuple[int, int], ...] = ()
        if n_fields > 3:
            alignment, max_i, max_j = self._parse_alignment(fields[3].strip(), line_no)
            if max_i >= len(src) or max_j >= len(tgt):
                bad = next(f"{i}-{j}" for i, j in alignment if i >= len(src) or j >= len(tgt))
                raise self._fail(line_no, f"alignment point {bad} out of range for a {len(src)}-word "
                                          f"source and {len(tgt)}-word target phrase")
        counts: tuple[float, ...] = ()
        if n_fields > 4 and self.keep_counts:
            count_toks = fields[4].split()
            try:
                counts = tuple([float(tok) for tok in count_toks])
            except ValueError:
                bad = next(t for t in count_toks if not _is_float(t))
                raise self._fail(line_no, f"count {bad!r} is not a number") from None
            for tok, value in zip(count_toks, counts):
                if not (value >= 0 and math.isfinite(value)) or "_" in tok:
                    raise self._fail(line_no, f"count {tok!r} is not a non-negative number")
        if exp.n_fields is None:
            exp.n_fields = n_fields
        if exp.n_scores is None:
            exp.n_scores = len(scores)
        return PhraseEntry(src, tgt, scores, alignment, counts, line_no, line if self.keep_raw else None)


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def iter_phrase_table(path: PathLike, *, skip_bad: bool = False, keep_raw: bool = True,
                      check_range: bool = True) -> PhraseTableReader:
    """Stream the entries of a Moses phrase table (plain or ``.gz``); see :class:`PhraseTableReader`.

    The returned reader is an iterator; after exhausting it, ``n_skipped``
    tells how many bad lines ``skip_bad=True`` skipped.
    """
    return PhraseTableReader(path, skip_bad=skip_bad, keep_raw=keep_raw, check_range=check_range)


def iter_raw_fields(path: PathLike) -> Iterator[tuple[int, str, list[str]]]:
    """Yield ``(line_no, raw_line, fields)`` after the strict checks of :func:`iter_phrase_table`."""
    for entry in PhraseTableReader(path, keep_raw=True):
        assert entry.raw is not None
        yield entry.line_no, entry.raw, split_fields(entry.raw)

"""Strict, streaming reader and writer for Moses phrase tables.

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

Readers keep the raw line (:attr:`PhraseEntry.raw`) so a rescoring tool can
add a score column with :func:`append_scores` leaving every other byte as it
was.
"""
from __future__ import annotations

import gzip
import logging
import math
import os
import sys
import zlib
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from nmt.data.io import DataError, atomic_write

log = logging.getLogger(__name__)

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
#: How many skipped lines are reported one by one with ``skip_bad=True``.
MAX_LOGGED_SKIPS = 10


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


def format_number(value: float) -> str:
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
    """Write chunks from :func:`encode_lines` to ``path`` atomically.

    ``nmt.data.io.atomic_write`` would gzip a ``.gz`` path itself (at level
    9, 7x slower than gzip's default 6 for a 4 % smaller table), so the
    bytes, compressed here, go atomically to ``<path>.partial``, which is
    then renamed into place.
    """
    target = str(path)
    tmp = f"{target}.partial" if is_gzip_path(target) else target
    with atomic_write(tmp, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)
    if tmp != target:
        os.replace(tmp, target)


def _open_binary(path: PathLike):
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")


def split_fields(line: str) -> list[str]:
    """The ``|||``-separated fields of a line, stripped of surrounding spaces."""
    return [f.strip() for f in line.split("|||")]


def append_scores(raw: str, values: Sequence[float]) -> str:
    """``raw`` with ``values`` appended to its scores field; every other byte unchanged.

    Works on the line as read (no ``\\n``). The new numbers are printed with
    :func:`format_number`.
    """
    first = raw.find("|||")
    second = raw.find("|||", first + 3) if first >= 0 else -1
    if second < 0:
        raise ValueError(f"not a phrase-table line (fewer than 3 fields): {raw!r}")
    third = raw.find("|||", second + 3)
    extra = " ".join(format_number(v) for v in values)
    if third < 0:  # scores are the last field
        end = len(raw.rstrip())
        return raw[:end] + " " + extra + raw[end:]
    end = second + 3 + len(raw[second + 3:third].rstrip())
    return raw[:end] + " " + extra + raw[end:]


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
        with _open_binary(self.path) as fh:
            try:
                for raw_bytes in fh:
                    line_no += 1
                    self.n_read = line_no
                    try:
                        entry = self._parse(raw_bytes, line_no)
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
            except (EOFError, OSError, zlib.error) as err:  # truncated / corrupt gzip
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

    def _parse(self, raw_bytes: bytes, line_no: int) -> PhraseEntry | None:
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


@dataclass
class PhraseTableStats:
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


def check_phrase_table(path: PathLike, *, skip_bad: bool = False) -> PhraseTableStats:
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
    return PhraseTableStats(str(path), n, len(sources), n_scores, tuple(lows), tuple(highs), is_sorted,
                            max_src, max_tgt, reader.n_skipped, tuple(names))


def _weighted_log_score(scores: Sequence[float], weights: Sequence[float]) -> float:
    total = 0.0
    for w, s in zip(weights, scores):
        if w:
            total += w * math.log(s)
    return total


def load_phrase_table(path: PathLike, table_limit: int | None = 20,
                      weights: Sequence[float] | None = None, *,
                      skip_bad: bool = False, keep_counts: bool = False,
                      sources: Container[tuple[str, ...]] | None = None) -> dict[tuple[str, ...], list[PhraseEntry]]:
    """Load a table into ``{src tuple: [entries, best first]}``, keeping ``table_limit`` per source.

    Entries are ranked by ``Σ weights[i] · ln(scores[i])``. The default
    weights rank by the direct phrase probability φ(e|f) alone (column 3),
    as the classic Pharaoh/Moses ``ttable-limit`` did. Moses's own
    pre-pruning ranks by the full weighted "future score" of the target
    phrase (all table scores with their tuned weights, plus word penalty and
    an LM estimate), so pass the tuned translation-model weights to get close
    to it; the LM part is not available here. Ties keep file order.
    ``table_limit`` of ``None`` or ``0`` keeps everything (Moses: 0 = no
    limit). To save memory the entries have no ``raw`` line (``None``) and,
    unless ``keep_counts``, no counts (``()``); identical phrases share one
    tuple of interned words.

    ``sources`` (e.g. the set of all source n-grams of a test set, as
    Moses's ``filter-model-given-input.pl`` uses) keeps only those source
    phrases; the lines of the others are skipped unparsed, which is much
    faster and smaller for a whole Multi30k table.
    """
    source_filter = None if sources is None else sources.__contains__
    reader = PhraseTableReader(path, skip_bad=skip_bad, keep_raw=False, intern=True, keep_counts=keep_counts,
                               source_filter=source_filter)
    limit = table_limit or 0
    table: dict[tuple[str, ...], list[tuple[float, int, PhraseEntry]]] = {}
    w: Sequence[float] | None = None
    for entry in reader:
        if w is None:
            n = len(entry.scores)
            if weights is None:
                if n <= DIRECT_PHRASE_PROB:
                    raise PhraseTableError(path, entry.line_no, f"only {n} scores; pass weights explicitly")
                w = [0.0] * n
                w[DIRECT_PHRASE_PROB] = 1.0
            else:
                w = list(weights)
                if len(w) != n:
                    raise ValueError(f"{len(w)} weights for a table with {n} scores ({path})")
        key = -_weighted_log_score(entry.scores, w)
        bucket = table.get(entry.src)
        if bucket is None:
            table[entry.src] = [(key, entry.line_no, entry)]
        else:
            bucket.append((key, entry.line_no, entry))
            if limit and len(bucket) >= 4 * limit:
                bucket.sort(key=lambda x: (x[0], x[1]))
                del bucket[limit:]
    out: dict[tuple[str, ...], list[PhraseEntry]] = {}
    for src, bucket in table.items():
        bucket.sort(key=lambda x: (x[0], x[1]))
        if limit:
            del bucket[limit:]
        out[src] = [e for _, _, e in bucket]
    return out

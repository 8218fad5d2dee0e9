"""Strict readers and atomic writers for line-aligned text (plain or ``.gz``).

Every reader decodes UTF-8 strictly, one line at a time, so a bad byte or an
empty line is reported with the file and its exact 1-based line number.
Only the line terminator (``\\n`` or ``\\r\\n``) is removed; a ``\\r`` inside a
line is kept.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import sys
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

PathLike = str | os.PathLike[str]

#: what reading a truncated or corrupt gzip stream raises
GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)


class DataError(ValueError):
    """Malformed input; the message names the file and the 1-based line.

    ``DataError(path, line, message)`` formats ``"<path>:<line>: <message>"`` (the compilers' form);
    a single ready-made message of that form is accepted too.
    """

    def __init__(self, path: PathLike, line: int | None = None, message: str | None = None) -> None:
        self.path: str | None = str(path) if line is not None else None
        self.line = line
        self.detail = message
        super().__init__(str(path) if line is None else f"{path}:{line}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:
        if self.line is None:
            return (type(self), (str(self),))
        return (type(self), (self.path, self.line, self.detail))


def _is_gzip(path: PathLike) -> bool:
    return str(path).endswith(".gz")


def open_text(path: PathLike, mode: str = "rt") -> IO[Any]:
    """Open a plain or ``.gz`` file (by suffix) as UTF-8 text, or binary with ``b`` in mode.

    Text mode uses ``newline="\\n"``: lines end only at ``\\n`` and nothing is
    translated, so a ``\\r`` inside a line survives (strip ``\\r\\n`` yourself,
    or use :func:`iter_lines`).
    """
    if "b" in mode:
        return gzip.open(path, mode) if _is_gzip(path) else open(path, mode)
    if "t" not in mode:
        mode += "t"
    if _is_gzip(path):
        return gzip.open(path, mode, encoding="utf-8", newline="\n")
    return open(path, mode, encoding="utf-8", newline="\n")


def _strip_newline(raw: bytes) -> bytes:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    return raw


def _decode(path: PathLike, raw: bytes, line_no: int, file_offset: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        bad = raw[err.start:err.end]
        where = "decompressed file" if _is_gzip(path) else "file"
        raise DataError(path, line_no, f"invalid UTF-8 byte(s) {bad!r} at byte {err.start} of the line "
                                       f"(offset {file_offset + err.start} in the {where})") from None
    if line_no == 1 and text.startswith("\ufeff"):
        text = text[1:]
    return text


def iter_lines(path: PathLike, *, allow_empty: bool = False) -> Iterator[str]:
    """Yield the lines of ``path`` without their terminator, streaming.

    Raises :class:`DataError` (file, line, byte offset) on invalid UTF-8, and
    on an empty or whitespace-only line unless ``allow_empty``. A UTF-8 byte
    order mark at the start of the file is dropped.
    """
    line_no = 0
    offset = 0
    with open_text(path, "rb") as fh:
        try:
            for raw in fh:
                line_no += 1
                text = _decode(path, _strip_newline(raw), line_no, offset)
                offset += len(raw)
                if not allow_empty and not text.strip():
                    raise DataError(path, line_no, "empty line (every line must hold a sentence)")
                yield text
        except GZIP_ERRORS as err:
            raise DataError(path, line_no + 1, f"corrupt or truncated gzip stream: {err}") from None


def read_lines(path: PathLike, *, allow_empty: bool = False) -> list[str]:
    """All lines of ``path`` (see :func:`iter_lines`)."""
    return list(iter_lines(path, allow_empty=allow_empty))


def count_lines(path: PathLike) -> int:
    """Number of lines (a last line without ``\\n`` counts).

    A truncated or corrupt ``.gz`` raises :class:`DataError` at the line where the stream broke: the
    data is read in the pieces the decompressor returns (``read1``), so every line decompressed before
    the break is counted (a plain ``read(1 MiB)`` would lose the block the error interrupts).
    """
    count = 0
    last = b"\n"
    with open_text(path, "rb") as fh:
        read = getattr(fh, "read1", fh.read)
        try:
            for chunk in iter(lambda: read(1 << 20), b""):
                count += chunk.count(b"\n")
                last = chunk[-1:]
        except GZIP_ERRORS as err:
            raise DataError(path, count + 1, f"corrupt or truncated gzip stream: {err}") from None
    return count + (last != b"\n")


def _length_mismatch(src_path: PathLike, tgt_path: PathLike, src_count: int, tgt_count: int) -> DataError:
    shorter = src_path if src_count < tgt_count else tgt_path
    return DataError(shorter, min(src_count, tgt_count) + 1,
                     f"parallel files differ in length: {src_path} has {src_count} lines, "
                     f"{tgt_path} has {tgt_count} lines")


def check_parallel_lengths(src_path: PathLike, tgt_path: PathLike) -> int:
    """The common line count of two aligned files; :class:`DataError` if they differ."""
    src_count, tgt_count = count_lines(src_path), count_lines(tgt_path)
    if src_count != tgt_count:
        raise _length_mismatch(src_path, tgt_path, src_count, tgt_count)
    return src_count


def iter_parallel(src_path: PathLike, tgt_path: PathLike, *,
                  allow_empty: bool = False) -> Iterator[tuple[str, str]]:
    """Yield ``(src, tgt)`` line pairs; files of different length raise :class:`DataError`.

    The error names both files and both line counts, so nothing is silently
    shifted or dropped. Empty lines are reported per file (see :func:`iter_lines`).
    """
    src_lines = iter_lines(src_path, allow_empty=allow_empty)
    tgt_lines = iter_lines(tgt_path, allow_empty=allow_empty)
    line_no = 0
    while True:
        src = next(src_lines, None)
        tgt = next(tgt_lines, None)
        if src is None and tgt is None:
            return
        if src is None or tgt is None:
            src_count = line_no if src is None else count_lines(src_path)
            tgt_count = line_no if tgt is None else count_lines(tgt_path)
            raise _length_mismatch(src_path, tgt_path, src_count, tgt_count)
        line_no += 1
        yield src, tgt


def read_parallel(src_path: PathLike, tgt_path: PathLike, *,
                  allow_empty: bool = False) -> list[tuple[str, str]]:
    """All line pairs of two aligned files (see :func:`iter_parallel`)."""
    return list(iter_parallel(src_path, tgt_path, allow_empty=allow_empty))


def read_tsv_pairs(path: PathLike, *, src_col: int = 0, tgt_col: int = 1) -> list[tuple[str, str]]:
    """Sentence pairs from a tab-separated file (e.g. Tatoeba ``english<TAB>french[<TAB>attribution]``).

    A line with too few fields or an empty sentence field raises :class:`DataError`.
    """
    return list(iter_tsv_pairs(path, src_col=src_col, tgt_col=tgt_col))


def iter_tsv_pairs(path: PathLike, *, src_col: int = 0, tgt_col: int = 1) -> Iterator[tuple[str, str]]:
    """:func:`read_tsv_pairs`, streaming."""
    needed = max(src_col, tgt_col) + 1
    for line_no, line in enumerate(iter_lines(path), start=1):
        fields = line.split("\t")
        if len(fields) < needed:
            raise DataError(path, line_no, f"expected at least {needed} tab-separated fields, found {len(fields)}")
        src, tgt = fields[src_col], fields[tgt_col]
        for col, text in ((src_col, src), (tgt_col, tgt)):
            if not text.strip():
                raise DataError(path, line_no, f"field {col + 1} is empty")
        yield src, tgt


def _new_file_mode(target: Path) -> int:
    """Permissions for the replacement: the old file's, else 0o666 minus the umask."""
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def remove_stale_temp_files(folder: PathLike, names: Iterable[str] | None = None) -> list[Path]:
    """Delete the temp files :func:`atomic_write` leaves in ``folder`` when its process is killed
    mid-write (``.NAME.XXXXXXXX.tmp``); with ``names``, only those of files so named. The finished
    files (and links) are never touched. Returns what was removed."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    if names is None:
        pattern = re.compile(r"\..+\.tmp")
    else:
        pattern = re.compile(r"\.(?:%s)\.[a-z0-9_]{8}\.tmp" % "|".join(re.escape(n) for n in names))
    removed = []
    for path in folder.iterdir():
        if pattern.fullmatch(path.name) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "w", encoding: str = "utf-8",
                 compresslevel: int = 6, compress: bool | None = None) -> Iterator[IO[Any]]:
    """Write ``path`` all at once: a temp file in the same folder, fsync, ``os.replace``.

    ``mode`` is ``"w"``/``"wt"`` (text, ``\\n`` line ends) or ``"wb"``. A ``.gz``
    suffix writes a gzip stream at ``compresslevel`` (6: gzip's own default, several times
    faster than 9 for a few percent in size). On an exception the temp file is removed
    and an existing ``path`` is left untouched. Parent folders are created. ``compress``
    overrides the suffix rule (``False``: write the bytes as given, e.g. gzip members).
    """
    if mode not in ("w", "wt", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w', 'wt' or 'wb', not {mode!r}")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    raw = os.fdopen(fd, "wb")
    stream: IO[Any] = raw
    try:
        gz = None
        if _is_gzip(target) if compress is None else compress:
            gz = gzip.GzipFile(filename=target.name[:-3], mode="wb", fileobj=raw, mtime=0,
                               compresslevel=compresslevel)
            stream = gz
        if mode != "wb":
            stream = io.TextIOWrapper(stream, encoding=encoding, newline="\n")
        yield stream
        if isinstance(stream, io.TextIOWrapper):
            stream.flush()
            stream.detach()
        if gz is not None:
            gz.close()  # writes the gzip trailer; leaves ``raw`` open
        raw.flush()
        os.fsync(raw.fileno())
        raw.close()
        os.chmod(tmp_name, _new_file_mode(target))
        os.replace(tmp_name, target)
    except BaseException:
        for handle in (stream, raw):
            with contextlib.suppress(Exception):
                handle.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def fsync_dir(folder: PathLike) -> None:
    """Flush ``folder``'s entries (the renames :func:`atomic_write` made there) to disk; best effort."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_output(path: PathLike, text: str) -> None:
    """Write a command's text result: to stdout for ``-``, else atomically to ``path``."""
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    with atomic_write(path) as fh:
        fh.write(text)

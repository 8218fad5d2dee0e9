"""Reading a phrase table in windows of lines: counting its lines, parsing any line range strictly.

Window ``k`` holds lines ``k·W + 1 … (k + 1)·W`` of the file (see :class:`~smt_features.neural.rescore_config.Plan`).
"""
from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field as dc_field

from nmt.core.io import DataError, count_lines, open_text
from nmt.core.formats.phrase_table import PhraseTableError
from nmt.core.formats.phrase_table_reader import PhraseTableReader

from smt_features.neural.rescore_config import Plan


def count_table_lines(path: str) -> int:
    """Number of lines of a table (see :func:`nmt.core.io.count_lines`); a truncated or corrupt ``.gz``
    raises :class:`PhraseTableError` at the line where the stream broke."""
    try:
        return count_lines(path)
    except PhraseTableError:
        raise
    except DataError as err:
        raise PhraseTableError(path, err.line or 1, f"cannot read file ({err.detail})") from None


class TableLines:
    """Parses lines of a table one by one through the strict reader, from any line on.

    The reader's consistency checks (same number of fields and scores on every
    line) are primed with the table's first good line, so a shard that starts
    in the middle judges its lines exactly as a run over the whole table does.
    """

    def __init__(self, path: str, skip_bad: bool):
        self.path = path
        self.reader = PhraseTableReader(path, skip_bad=skip_bad, keep_raw=True)
        self._primed = False

    def _prime(self) -> None:
        self._primed = True
        with open_text(self.path, "rb") as fh:
            try:
                for line_no, raw in enumerate(fh, 1):
                    try:
                        if self.reader.parse_line(raw, line_no) is not None:
                            return
                    except PhraseTableError:
                        continue
            except (EOFError, OSError, zlib.error):
                return  # reported by the real pass

    def parse(self, raw: bytes, line_no: int):
        """The :class:`~nmt.core.formats.phrase_table.PhraseEntry` of a raw line (with its ``\\n``), or raises."""
        if not self._primed:
            self._prime()
        return self.reader.parse_line(raw, line_no)

    def raw_lines(self, first: int, last: int) -> Iterator[tuple[int, bytes]]:
        """``(line_no, bytes incl. the newline)`` for lines ``first…last`` (1-based, inclusive)."""
        line_no = 0
        with open_text(self.path, "rb") as fh:
            try:
                for raw in fh:
                    line_no += 1
                    if line_no < first:
                        continue
                    if line_no > last:
                        return
                    yield line_no, raw
            except (EOFError, OSError, zlib.error) as err:  # truncated / corrupt gzip
                raise PhraseTableError(self.path, line_no + 1, f"cannot read file (corrupt or truncated gzip "
                                                               f"stream: {err})") from None
        if line_no < last:
            raise PhraseTableError(self.path, line_no + 1, f"file ended at line {line_no}; expected {last} lines "
                                                           "(did it change while being read?)")


@dataclass
class Window:
    index: int
    raws: list  # raw line text without the newline
    newline: list  # whether each kept line ended with '\n'
    srcs: list
    tgts: list
    line_nos: list = dc_field(default_factory=list)
    lines: int = 0  # physical lines read
    skipped: list = dc_field(default_factory=list)  # (line_no, message)


def read_windows(lines: TableLines, plan: Plan, windows: list[int], skip_bad: bool) -> Iterator[Window]:
    """Parsed windows ``windows`` (ascending) of the table, reading the file once."""
    if not windows:
        return
    wanted = set(windows)
    first = plan.window_lines(windows[0])[0]
    last = plan.window_lines(windows[-1])[1]
    current: Window | None = None
    for line_no, raw in lines.raw_lines(first, last):
        w = (line_no - 1) // plan.window
        if w not in wanted:
            continue
        if current is None or current.index != w:
            if current is not None:
                yield current
            current = Window(w, [], [], [], [])
        current.lines += 1
        try:
            entry = lines.parse(raw, line_no)
        except PhraseTableError as err:
            if not skip_bad:
                raise
            current.skipped.append((line_no, err.detail))
            continue
        current.raws.append(entry.raw)
        current.line_nos.append(line_no)
        current.newline.append(raw.endswith(b"\n"))
        current.srcs.append(entry.src)
        current.tgts.append(entry.tgt)
    if current is not None:
        yield current

"""Ship the columns smt-rescore appended, not the whole table (a GPU machine's 64 MiB return limit).

    table_columns.py extract RESCORED.gz K COLS.xz      the last K scores of every line, as written
    table_columns.py attach TABLE.gz COLS.xz OUT.gz     TABLE's lines with those scores appended

``attach`` inserts the shipped text where :func:`nmt.core.formats.phrase_table.append_scores` puts new scores (after the
scores field's last value), so ``attach(TABLE, extract(rescore(TABLE)))`` is byte for byte ``rescore(TABLE)``'s
text (gzip members aside). Every line of both inputs is checked: a count mismatch or a line with fewer than 3
fields stops with ``FILE:LINE``. The output is written atomically.
"""
from __future__ import annotations

import gzip
import lzma
import sys

from nmt.core.io import DataError, atomic_write


def _fields_end(raw: str, path: str, line_no: int) -> int:
    """Index just past the scores field's last value."""
    first = raw.find("|||")
    second = raw.find("|||", first + 3) if first >= 0 else -1
    if second < 0:
        raise DataError(f"{path}:{line_no}: not a phrase-table line (fewer than 3 fields)")
    third = raw.find("|||", second + 3)
    if third < 0:
        return len(raw.rstrip())
    return second + 3 + len(raw[second + 3:third].rstrip())


def extract(table: str, k: int, out: str) -> int:
    with gzip.open(table, "rt", encoding="utf-8", newline="\n") as fh, lzma.open(out, "wt", encoding="utf-8") as dst:
        for n, line in enumerate(fh, 1):
            raw = line.rstrip("\n")
            values = raw[:_fields_end(raw, table, n)].split()[-k:]
            dst.write(" ".join(values) + "\n")
    return 0


def attach(table: str, cols: str, out: str) -> int:
    with gzip.open(table, "rt", encoding="utf-8", newline="\n") as fh, \
            lzma.open(cols, "rt", encoding="utf-8") as extra, atomic_write(out, "w") as dst:
        n = 0
        for n, line in enumerate(fh, 1):
            values = extra.readline()
            if not values:
                raise DataError(f"{cols}:{n}: ends before {table} (line {n})")
            raw, nl = (line[:-1], "\n") if line.endswith("\n") else (line, "")
            end = _fields_end(raw, table, n)
            dst.write(raw[:end] + " " + values.rstrip("\n") + raw[end:] + nl)
        if extra.readline():
            raise DataError(f"{cols}:{n + 1}: more lines than {table} ({n})")
    return 0


def main(argv: list[str]) -> int:
    try:
        if len(argv) == 4 and argv[0] == "extract":
            return extract(argv[1], int(argv[2]), argv[3])
        if len(argv) == 4 and argv[0] == "attach":
            return attach(argv[1], argv[2], argv[3])
    except DataError as err:
        print(f"table_columns.py: {err}", file=sys.stderr)
        return 2
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

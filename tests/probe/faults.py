"""Faulty versions of a good line-aligned text, shared by the case lists.

Each fault is ``(label, content, line)``: the file's bytes and the 1-based line the message must name
(``None``: the file alone, e.g. an empty file).
"""
from __future__ import annotations

GOOD_SRC = ["s1 s2 s3", "s4 s5", "s6 s7 s8", "s9 s10"]
GOOD_TGT = ["t1 t2 t3", "t4 t5", "t6 t7 t8", "t9 t10"]


def text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


#: faults of one file of sentences (the other side stays good)
LINE_FAULTS: list[tuple[str, bytes, int | None]] = [
    ("non-utf8", text(GOOD_SRC[:2]).encode() + b"s6 \xff\xfe s8\n" + text(GOOD_SRC[3:]).encode(), 3),
    ("empty-line", text(GOOD_SRC[:1] + [""] + GOOD_SRC[2:]).encode(), 2),
    ("empty-file", b"", None),
]

#: text that is unusual but valid: must be read, not refused
CRLF_BOM = ("\ufeff" + "\r\n".join(GOOD_SRC) + "\r\n").encode("utf-8")
LONG_LINE = text(GOOD_SRC[:1] + [" ".join(["s1"] * 5000)] + GOOD_SRC[2:])

#: a short side: the aligned file has fewer lines (message names the shorter file at its first missing line)
SHORT = text(GOOD_TGT[:3])

#: a --config YAML that does not parse: the message must name the file and the line of the fault
MALFORMED_YAML = ("threads: 1\nbeam_size: 5\nbad: indent: here\n", 3)


def truncated(data: bytes) -> bytes:
    """The first half of a file (a copy cut short, e.g. a checkpoint of a killed transfer)."""
    return data[: len(data) // 2]


def missing_or_directory(prog: str, label: str, name: str, argv_with, outputs) -> list:
    """Cases ``LABEL-missing`` and ``LABEL-directory``: a path argument that does not exist, or is a folder.

    ``argv_with(ws, path)`` builds the command's arguments with ``path`` in the argument's place; the
    message must name ``name`` (the missing file) or the folder."""
    from . import Case

    return [Case(prog, f"{label}-missing", lambda ws: argv_with(ws, ws.missing(name)),
                 where=lambda ws: (name, None), outputs=outputs),
            Case(prog, f"{label}-directory", lambda ws: argv_with(ws, ws.folder("adir")),
                 where=lambda ws: ("adir", None), outputs=outputs)]

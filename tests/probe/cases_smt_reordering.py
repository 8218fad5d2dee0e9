"""Probe cases of smt-train-reordering (see ``tests/probe/__init__.py``): the corpus and alignment faults."""
from __future__ import annotations

from . import Case
from .cases_smt_train_decode import CORPUS_FAULTS, TRAIN_SRC, TRAIN_TGT
from .faults import missing_or_directory, text

CASES: list[Case] = []
PROG = "smt-train-reordering"
#: one link per word pair of the diagonal (every training line has 2 or 3 words)
ALIGN = "\n".join(" ".join(f"{k}-{k}" for k in range(min(len(s.split()), len(t.split()))))
                  for s, t in zip(TRAIN_SRC, TRAIN_TGT)) + "\n"


def _cases() -> None:
    src_ok = lambda ws: ws.file("reo.src", text(TRAIN_SRC))  # noqa: E731
    tgt_ok = lambda ws: ws.file("reo.tgt", text(TRAIN_TGT))  # noqa: E731
    align_ok = lambda ws: ws.file("reo.align", ALIGN)  # noqa: E731
    out = lambda ws: ws.output("reordering-table.wbe-msd-bidirectional-fe.gz")  # noqa: E731
    outs = lambda ws: [out(ws)]  # noqa: E731

    def args(ws, src=None, tgt=None, align=None, *extra):
        return ["--src", str(src or src_ok(ws)), "--tgt", str(tgt or tgt_ok(ws)), "--alignment",
                str(align or align_ok(ws)), "--out", str(out(ws)), "--processes", "1", *extra]

    for label, content, line in CORPUS_FAULTS:
        name = f"reo.src.{label}"
        CASES.append(Case(PROG, f"src-{label}", lambda ws, name=name, content=content: args(ws, ws.file(name, content)),
                          where=lambda ws, name=name, line=line: (name, line), outputs=outs))
    CASES.append(Case(PROG, "misaligned", lambda ws: args(ws, tgt=ws.file("reo.tgt.short", text(TRAIN_TGT[:9]))),
                      where=lambda ws: ("reo.tgt.short", 10), outputs=outs))
    CASES.append(Case(PROG, "alignment-out-of-range",
                      lambda ws: args(ws, align=ws.file("reo.align.bad", "0-0\n0-0\n0-0 5-2\n" + "0-0\n" * 7)),
                      where=lambda ws: ("reo.align.bad", 3), outputs=outs))
    CASES.append(Case(PROG, "alignment-not-pharaoh",
                      lambda ws: args(ws, align=ws.file("reo.align.junk", "0-0\n0:1\n" + "0-0\n" * 8)),
                      where=lambda ws: ("reo.align.junk", 2), outputs=outs))
    CASES.append(Case(PROG, "alignment-short", lambda ws: args(ws, align=ws.file("reo.align.short", "0-0\n" * 8)),
                      where=lambda ws: ("reo.align.short", 9), outputs=outs))
    CASES.append(Case(PROG, "alignment-long", lambda ws: args(ws, align=ws.file("reo.align.long", "0-0\n" * 11)),
                      where=lambda ws: ("reo.align.long", 11), outputs=outs))
    CASES.extend(missing_or_directory(PROG, "src", "nope.src", lambda ws, path: args(ws, path), outs))
    CASES.extend(missing_or_directory(PROG, "alignment", "nope.align",
                                      lambda ws, path: args(ws, align=path), outs))
    CASES.append(Case(PROG, "output-is-input", lambda ws: ["--src", str(src_ok(ws)), "--tgt", str(tgt_ok(ws)),
                                                            "--alignment", str(align_ok(ws)), "--out",
                                                            str(align_ok(ws))],
                      where=lambda ws: ("reo.align", None)))


_cases()

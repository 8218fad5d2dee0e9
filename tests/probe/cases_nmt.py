"""Probe cases of the ``nmt-*`` commands (see ``tests/probe/__init__.py``)."""
from __future__ import annotations

from . import Case
from .faults import GOOD_SRC, GOOD_TGT, LINE_FAULTS, SHORT, text

CASES: list[Case] = []


def _score_cases() -> None:
    def base(ws):
        return ["--model", str(ws.model), "--checkpoint", "last", "--threads", "1"]

    src_ok = lambda ws: ws.file("score.src", text(GOOD_SRC))  # noqa: E731
    tgt_ok = lambda ws: ws.file("score.tgt", text(GOOD_TGT))  # noqa: E731
    out = lambda ws: ws.output("scores.txt")  # noqa: E731
    for label, content, line in LINE_FAULTS:
        name = f"score.src.{label}"
        CASES.append(Case(
            "nmt-score", f"src-{label}",
            lambda ws, name=name, content=content: [*base(ws), "--src", str(ws.file(name, content)),
                                                     "--tgt", str(tgt_ok(ws)), "--output", str(out(ws))],
            where=lambda ws, name=name, line=line: (name, line), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        "nmt-score", "misaligned",
        lambda ws: [*base(ws), "--src", str(src_ok(ws)), "--tgt", str(ws.file("score.tgt.short", SHORT)),
                    "--output", str(out(ws))],
        where=lambda ws: ("score.tgt.short", 4), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        "nmt-score", "src-missing",
        lambda ws: [*base(ws), "--src", str(ws.missing("nope.src")), "--tgt", str(tgt_ok(ws)), "--output",
                    str(out(ws))],
        where=lambda ws: ("nope.src", None), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        "nmt-score", "src-directory",
        lambda ws: [*base(ws), "--src", str(ws.folder("adir")), "--tgt", str(tgt_ok(ws)), "--output",
                    str(out(ws))],
        where=lambda ws: ("adir", None), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        "nmt-score", "output-is-input",
        lambda ws: [*base(ws), "--src", str(src_ok(ws)), "--tgt", str(tgt_ok(ws)), "--output", str(tgt_ok(ws))],
        where=lambda ws: ("score.tgt", None)))


def _evaluate_cases() -> None:
    out = lambda ws: ws.output("eval.json")  # noqa: E731
    CASES.append(Case(
        "nmt-evaluate", "empty-hyp-and-ref",
        lambda ws: ["--hyp", str(ws.file("eval.empty.hyp", "")), "--ref", str(ws.file("eval.empty.ref", "")),
                    "--json", str(out(ws))],
        where=lambda ws: ("eval.empty.hyp", None), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        "nmt-evaluate", "count-mismatch",
        lambda ws: ["--hyp", str(ws.file("eval.hyp", text(GOOD_TGT))), "--ref", str(ws.file("eval.ref3", SHORT)),
                    "--json", str(out(ws))],
        where=lambda ws: ("eval.ref3", 4), outputs=lambda ws: [out(ws)]))


_score_cases()
_evaluate_cases()

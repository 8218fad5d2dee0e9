"""Probe cases of smt-rescore, smt-rescore-sharded, smt-inspect-phrases, smt-rerank and smt-report (see ``tests/probe/__init__.py``)."""
from __future__ import annotations

from . import Case

CASES: list[Case] = []

#: a good 4-score table line and damaged ones: (label, line text, 1-based line of the damage)
TABLE_HEAD = "a ||| x ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"
TABLE_FAULTS = [
    ("too-few-fields", "b ||| y\n"),
    ("tabs-not-bars", "b\ty\t0.5 0.5 0.5 0.5\n"),
    ("score-count", "b ||| y ||| 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"),
    ("zero-prob", "b ||| y ||| 0.5 0.5 0 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"),
    ("prob-above-1", "b ||| y ||| 0.5 0.5 1.7 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"),
    ("bad-alignment", "b ||| y ||| 0.5 0.5 0.5 0.5 ||| 0-7 ||| 1 1 1 ||| |||\n"),
    ("empty-phrase", " ||| y ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"),
]


def _rescore_cases() -> None:
    def base(ws):
        return ["--model", str(ws.model), "--checkpoint", "last", "--threads", "1", "--progress", "false"]

    out = lambda ws: ws.output("rescored.gz")  # noqa: E731
    for label, bad in TABLE_FAULTS:
        name = f"table.{label}"
        CASES.append(Case(
            "smt-rescore", f"table-{label}",
            lambda ws, name=name, bad=bad: [*base(ws), "--table", str(ws.file(name, TABLE_HEAD + bad)),
                                            "--output", str(out(ws))],
            where=lambda ws, name=name: (name, 2), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        "smt-rescore", "table-truncated-gz",
        lambda ws: [*base(ws), "--table", str(ws.truncated_gz("trunc.gz", TABLE_HEAD * 400)),
                    "--output", str(out(ws))],
        where=lambda ws: ("trunc.gz", None), outputs=lambda ws: [out(ws)]))


_rescore_cases()

"""Probe cases of smt-train-phrases, smt-kenlm, smt-decode and smt-tune (see ``tests/probe/__init__.py``)."""
from __future__ import annotations

from . import Case

CASES: list[Case] = []


def _kenlm_cases() -> None:
    CASES.append(Case(
        "smt-kenlm", "eval-non-utf8",
        lambda ws: ["eval", "--model", str(ws.arpa), "--text", str(ws.file("kenlm.bad", b"x y\nx \xff y\n"))],
        where=lambda ws: ("kenlm.bad", 2)))



_kenlm_cases()

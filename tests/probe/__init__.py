"""The bad-input probe: every command that reads user files, fed the faults users meet.

One :class:`Case` is one command run on one fault. Its expected outcome is the toolkit's error
convention (``nmt/core/errors.py``): exit status 2, one message ``PROG: FILE:LINE: what is wrong`` on
stderr (``FILE`` alone where no line applies), no traceback, no output file left behind, every
input unchanged. ``tests/test_bad_input.py`` runs the cases in-process; ``benchmarks/bad_input_probe.py``
runs them as the installed console scripts and prints the fault × command table.

Cases live in ``cases_nmt.py`` (``nmt-*`` commands), ``cases_smt_train_decode.py`` (phrase training,
KenLM, decoding, tuning), ``cases_smt_reordering.py`` (the reordering table) and ``cases_smt_neural.py``
(rescoring, reranking, inspection, reports).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .workspace import Workspace

__all__ = ["Case", "Outcome", "Workspace", "judge", "all_cases"]


@dataclass(frozen=True)
class Case:
    """One command on one fault.

    ``argv`` builds the arguments (after the program name) from the workspace; ``where`` names the
    file (its base name) and, where one applies, the 1-based line the message must point at;
    ``outputs`` lists paths that must not exist afterwards (nothing partial left behind).
    ``status`` is the expected exit status (2: bad input; 0: unusual but valid input, read correctly);
    ``env`` gives the environment variables the command runs with (e.g. ``MT_DATA``).
    """

    prog: str
    fault: str
    argv: Callable[[Workspace], list[str]]
    where: Callable[[Workspace], tuple[str, int | None]] | None = None
    outputs: Callable[[Workspace], list[Path]] = lambda ws: []
    status: int = 2
    env: Callable[[Workspace], dict[str, str]] = lambda ws: {}

    @property
    def id(self) -> str:
        return f"{self.prog}:{self.fault}"


@dataclass
class Outcome:
    """What one run did, and what is wrong with it (``problems`` empty = the convention held)."""

    case: Case
    status: int
    stderr: str
    problems: list[str] = field(default_factory=list)

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr

    @property
    def verdict(self) -> str:
        if not self.problems:
            return "ok"
        if self.status == -1:
            return "hang"
        if self.traceback:
            return "traceback"
        if self.status == 0:
            return "silent"
        return "unclear"


def digest(paths: list[Path]) -> dict[Path, str]:
    """sha256 of each existing file (to check that inputs are left unchanged)."""
    out = {}
    for p in paths:
        if p.is_file():
            out[p] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def judge(case: Case, ws: Workspace, status: int, stderr: str, before: dict[Path, str]) -> Outcome:
    """Check one run against the error convention."""
    outcome = Outcome(case, status, stderr)
    problems = outcome.problems
    if outcome.traceback:
        problems.append("traceback on stderr")
    if status != case.status:
        problems.append(f"exit status {status}, expected {case.status}")
    lines = [ln for ln in stderr.splitlines() if ln.startswith(f"{case.prog}: ")]
    if not lines and case.status != 0:  # a refusal says who refuses; valid unusual input needs no message
        problems.append(f"no line starting with '{case.prog}: ' on stderr")
    if case.where is not None and lines:
        name, line = case.where(ws)
        pattern = re.escape(name) + (f":{line}:" if line is not None else r"(:\d+)?:")
        if not any(re.search(pattern, ln) for ln in lines):
            want = f"{name}:{line}:" if line is not None else name
            problems.append(f"message does not name {want}: {lines[-1][:200]!r}")
    for path in case.outputs(ws):
        if path.exists():
            problems.append(f"left behind {path.name}")
    for leftover in ws.temp_leftovers():
        problems.append(f"left behind temp file {leftover.name}")
    after = digest(list(before))
    for path, sha in before.items():
        if after.get(path) != sha:
            problems.append(f"input {path.name} changed or removed")
    return outcome


def all_cases() -> list[Case]:
    from .cases_nmt import CASES as NMT
    from .cases_smt_neural import CASES as SMT_NEURAL
    from .cases_smt_reordering import CASES as SMT_REORDERING
    from .cases_smt_train_decode import CASES as SMT_TRAIN_DECODE

    return [*NMT, *SMT_TRAIN_DECODE, *SMT_REORDERING, *SMT_NEURAL]

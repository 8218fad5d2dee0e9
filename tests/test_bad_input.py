"""The bad-input probe (``tests/probe``): every command, every fault, one kind of answer.

Each case must exit with status 2, print ``PROG: FILE:LINE: what is wrong`` (no traceback), leave no
output or temp file behind and leave its inputs unchanged. ``benchmarks/bad_input_probe.py`` runs the
same cases as console scripts and prints the table.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.probe import Workspace, all_cases
from tests.probe.runner import run_in_process

CASES = all_cases()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Workspace:
    return Workspace(Path(tmp_path_factory.mktemp("probe")))


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_reported_cleanly(case, workspace: Workspace) -> None:
    outcome = run_in_process(case, workspace)
    assert not outcome.problems, f"{case.id}: {outcome.problems}\n--- stderr ---\n{outcome.stderr[-3000:]}"


def test_case_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))

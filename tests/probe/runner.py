"""Run a probe case in this process (the tests) or as the installed console script (the benchmark)."""
from __future__ import annotations

import contextlib
import importlib
import io
import os
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path

from . import Case, Outcome, Workspace, digest, judge

ROOT = Path(__file__).resolve().parents[2]


@cache
def entry_points() -> dict[str, str]:
    """Console-script name → ``module:function`` from pyproject.toml."""
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]["scripts"]


def main_of(prog: str):
    module, func = entry_points()[prog].split(":")
    return getattr(importlib.import_module(module), func)


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_in_process(case: Case, ws: Workspace) -> Outcome:
    """Call the command's ``cli_main`` with stderr captured (what its console script does)."""
    argv = case.argv(ws)
    ws.reset_outputs()
    before = digest(ws.input_files())
    err = io.StringIO()
    with _environment(case.env(ws)), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main_of(case.prog)(argv)
        except SystemExit as exit_:  # a command without the error wrapper
            status = exit_.code if isinstance(exit_.code, int) else 1
            if not isinstance(exit_.code, int) and exit_.code is not None:
                print(exit_.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - what a console script would print
            import traceback

            traceback.print_exc(file=sys.stderr)
            status = 1
    return judge(case, ws, int(status or 0), err.getvalue(), before)


def run_as_script(case: Case, ws: Workspace, bin_dir: Path, timeout: float = 600) -> Outcome:
    """Run the installed console script in a subprocess, as a user would."""
    argv = case.argv(ws)
    ws.reset_outputs()
    before = digest(ws.input_files())
    try:
        proc = subprocess.run([str(bin_dir / case.prog), *argv], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=ws.root, env={**os.environ, **case.env(ws)})
    except subprocess.TimeoutExpired as err:
        stderr = err.stderr.decode("utf-8", "replace") if isinstance(err.stderr, bytes) else (err.stderr or "")
        outcome = judge(case, ws, -1, stderr, before)
        outcome.problems.insert(0, f"no answer within {timeout:g} s (killed)")
        return outcome
    return judge(case, ws, proc.returncode, proc.stderr, before)

"""Run a benchmark's commands from a copy of this checkout's HEAD, so that editing the checkout meanwhile changes
nothing: ``git archive HEAD`` plus the built extension modules in ``OUT/src-COMMIT``, first on ``PYTHONPATH``
(the venv's entry points then import the copy: the editable install's finder comes after ``sys.path``)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def snapshot(out: Path, env: dict[str, str], rev: str = "HEAD") -> str:
    """Export ``rev`` (default HEAD) into ``out/src-COMMIT`` (once) and put it first on ``env['PYTHONPATH']``;
    returns the commit. The built extension modules are this checkout's (an older ``rev`` whose C++ sources differ
    would run today's compiled code: compare such commits only where those sources are the same)."""
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.strip()
    if dirty and rev == "HEAD":
        print(f"snapshot: note: uncommitted changes are not in the snapshot of {commit[:10]}", flush=True)
    dst = out / f"src-{commit[:10]}"
    if not dst.exists():
        tmp = out / f".src-{commit[:10]}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", commit], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        for so in REPO.glob("smt_features/**/_*.so"):
            shutil.copy2(so, tmp / so.relative_to(REPO))
        tmp.rename(dst)
    env["PYTHONPATH"] = str(dst) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return commit

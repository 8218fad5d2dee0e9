"""recipes/phrase_score/compare_scores.py: how far a score column moved between two rescorings of one table."""
from __future__ import annotations

import gzip
import math
import subprocess
import sys
from pathlib import Path

from tests import ROOT

SCRIPT = ROOT / "recipes" / "phrase_score" / "compare_scores.py"
PAIRS = [("a", "x"), ("a", "y z"), ("a", "w"), ("b", "x"), ("b", "v u"), ("c", "s")]


def _table(path: Path, rows: list[tuple[str, str, float]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for src, tgt, rnn in rows:
            fh.write(f"{src} ||| {tgt} ||| 0.5 0.5 0.5 0.5 {rnn!r} ||| 0-0 ||| 2 2 1\n")
    return path


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)


def test_differences_in_nats_and_changed_best_targets(tmp_path: Path) -> None:
    base = [0.5, 0.2, 0.1, 0.4, 0.3, 0.9]
    # ln moves: 0, ln 2 ("a y z" doubles but stays below "a x"), 0, 0, 0.05 (below the threshold), 0
    moved = [0.5, 0.4, 0.1, 0.4, 0.3 * math.exp(0.05), 0.9]
    a = _table(tmp_path / "a.gz", [(s, t, p) for (s, t), p in zip(PAIRS, base)])
    b = _table(tmp_path / "b.gz", [(s, t, p) for (s, t), p in zip(PAIRS, moved)])
    out = _run(str(a), str(b), "--column", "4", "--name", "bf16")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("bf16: 6 pairs, 3 source phrases")
    mean = (math.log(2.0) + 0.05) / 6
    assert f"mean **{mean:.4f}** nats, largest **{math.log(2.0):.4f}**" in out.stdout
    assert "1 pairs (16.67 %) moved by more than 0.1" in out.stdout
    assert "best target per source changed: **0** of 2 sources" in out.stdout  # "c" has one option
    # "a y z" now above "a x": one of the two sources changes its best target
    b2 = _table(tmp_path / "b2.gz", [(s, t, p) for (s, t), p in zip(PAIRS, [0.5, 0.6, 0.1, 0.4, 0.3, 0.9])])
    out = _run(str(a), str(b2), "--column", "4", "--threshold", "0.5")
    assert out.returncode == 0, out.stderr
    assert "best target per source changed: **1** of 2 sources with ≥ 2 options (50.00 %)" in out.stdout
    assert "1 pairs (16.67 %) moved by more than 0.5" in out.stdout  # ln(0.6 / 0.2) = 1.10


def test_tables_that_do_not_match_are_refused_with_file_and_line(tmp_path: Path) -> None:
    a = _table(tmp_path / "a.gz", [(s, t, 0.5) for s, t in PAIRS])
    other = _table(tmp_path / "o.gz", [(s, t if i != 3 else "q", 0.5) for i, (s, t) in enumerate(PAIRS)])
    out = _run(str(a), str(other), "--column", "4")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"compare_scores.py: {other}:4: the pair differs from line 4 of {a}")
    short = _table(tmp_path / "s.gz", [(s, t, 0.5) for s, t in PAIRS[:4]])
    out = _run(str(a), str(short), "--column", "4")
    assert out.returncode == 2
    assert out.stderr.startswith(f"compare_scores.py: {a}:5: this table has more lines than the other")
    out = _run(str(a), str(a), "--column", "5")
    assert out.returncode == 2
    assert out.stderr.startswith(f"compare_scores.py: {a}:1: 5 scores; --column 5 needs at least 6")

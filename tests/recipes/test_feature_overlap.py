"""recipes/phrase_score/feature_overlap.py: R² and top-1 agreement of an appended score column."""
from __future__ import annotations

import gzip
import math
import subprocess
import sys
from pathlib import Path

from tests import ROOT

SCRIPT = ROOT / "recipes" / "phrase_score" / "feature_overlap.py"


def _table(path: Path, rows: list[tuple[str, str, list[float]]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for src, tgt, scores in rows:
            fh.write(f"{src} ||| {tgt} ||| {' '.join(f'{s:g}' for s in scores)} ||| 0-0 ||| 2 2 1\n")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)


def test_a_column_rebuilt_from_the_tables_features_has_r2_one(tmp_path: Path) -> None:
    rows = []
    for i, (src, tgt) in enumerate([("a", "x"), ("a", "y z"), ("a", "w"), ("b", "x"), ("b", "v u t"), ("c", "s")]):
        p = [0.1 + 0.1 * i, 0.5, 0.9 - 0.1 * i, 0.3 + 0.05 * i]
        rnn = math.exp(2 * math.log(p[2]) - 0.5 * len(tgt.split()))  # ln rnn = 2 ln φ(e|f) − 0.5 |e|: a linear fit
        rows.append((src, tgt, p + [rnn]))
    table = tmp_path / "t.gz"
    _table(table, rows)
    out = _run(str(table), "--column", "4")
    assert out.returncode == 0, out.stderr
    assert "6 pairs, 3 source phrases" in out.stdout
    assert "R² of the fit on all predictors: **1.000** over all pairs, **1.000** within" in out.stdout
    # φ(e|f) decreases with i: "a x" and "b x" are its best targets, and the column agrees on both
    assert "the same as φ(e|f)'s: 2 of 2 sources (100.0 %)" in out.stdout


def test_an_unrelated_column_and_disagreeing_best_targets(tmp_path: Path) -> None:
    rnn = [0.9, 0.01, 0.5, 0.02, 0.7, 0.3]  # best of "a": "a x"; of "b": "b v u t" (φ(e|f) prefers "b x")
    rows = [(s, t, [0.2, 0.5, 0.9 - 0.1 * i, 0.4, rnn[i]])
            for i, (s, t) in enumerate([("a", "x"), ("a", "y"), ("a", "w"), ("b", "x"), ("b", "v u t"), ("c", "s")])]
    table = tmp_path / "t.gz"
    _table(table, rows)
    out = _run(str(table), "--column", "4", "--name", "RNN")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("RNN: 6 pairs")
    assert "1 of 2 sources (50.0 %)" in out.stdout


def test_bad_input_names_the_file_and_line(tmp_path: Path) -> None:
    table = tmp_path / "t.gz"
    _table(table, [("a", "x", [0.5, 0.5, 0.5, 0.5, 0.5])])
    with gzip.open(table, "at", encoding="utf-8") as fh:
        fh.write("b ||| y ||| 0.5 0.5 0.5 0.5\n")  # one score fewer
    out = _run(str(table), "--column", "4")
    assert out.returncode == 2
    assert out.stderr.startswith(f"feature_overlap.py: {table}:2:") and "Traceback" not in out.stderr
    short = tmp_path / "s.gz"
    _table(short, [("a", "x", [0.5, 0.5, 0.5, 0.5])])
    out = _run(str(short), "--column", "4")
    assert out.returncode == 2 and f"{short}:1:" in out.stderr

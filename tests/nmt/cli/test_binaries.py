"""Tiny end-to-end CPU runs of every nmt console script, as a user would call them."""
from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nmt.core.io import read_lines

BIN = Path(sys.executable).parent


def run(*args: str) -> subprocess.CompletedProcess:
    exe = BIN / args[0]
    if not exe.exists():
        pytest.skip(f"{exe} not installed (pip install -e .)")
    proc = subprocess.run([str(exe), *args[1:]], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_translate_score_evaluate_end_to_end(toy_data: Path, tmp_path: Path) -> None:
    model = tmp_path / "model"
    run("nmt-train", "--data-dir", str(toy_data), "--out-dir", str(model), "--preset", "tiny", "--optimizer", "adam",
        "--lr", "0.03", "--batch-size", "16", "--max-epochs", "12", "--progress", "false")
    src = toy_data / "val.tok.en"
    hyp = tmp_path / "hyp.fr"
    run("nmt-translate", "--model", str(model), "--input", str(src), "--output", str(hyp), "--tokenized", "true",
        "--detokenize", "false", "--beam-size", "3")
    hyps = read_lines(hyp, allow_empty=True)
    assert len(hyps) == len(read_lines(src))
    nbest = tmp_path / "nbest.txt"
    run("nmt-translate", "--model", str(model), "--input", str(src), "--output", str(nbest), "--tokenized", "true",
        "--detokenize", "false", "--beam-size", "3", "--nbest", "3")
    lines = read_lines(nbest)
    assert len(lines) == 3 * len(hyps) and lines[0].startswith("0 ||| ") and lines[-1].count(" ||| ") == 3
    # the 1-best of the n-best list is the plain translation
    assert lines[0].split(" ||| ")[1] == hyps[0]
    scores = tmp_path / "scores.txt"
    run("nmt-score", "--model", str(model), "--src", str(src), "--tgt", str(toy_data / "val.tok.fr"),
        "--output", str(scores))
    values = [float(v) for v in read_lines(scores)]
    assert len(values) == len(hyps) and all(v < 0 for v in values)
    probs = run("nmt-score", "--model", str(model), "--src", str(src), "--tgt", str(toy_data / "val.tok.fr"),
                "--probabilities", "true").stdout.split()
    assert math.isclose(float(probs[0]), math.exp(values[0]), rel_tol=1e-4)
    out = run("nmt-evaluate", "--hyp", str(hyp), "--ref", str(toy_data / "val.tok.fr"), "--name", "toy").stdout
    assert "BLEU = " in out and "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in out and "chrF2 = " in out


def test_vocabulary_mismatch_is_refused(toy_data: Path, tmp_path: Path) -> None:
    model = tmp_path / "model"
    run("nmt-train", "--data-dir", str(toy_data), "--out-dir", str(model), "--preset", "tiny", "--max-updates", "2",
        "--progress", "false")
    shutil.copyfile(toy_data / "vocab.fr.tsv", model / "src_vocab.tsv")  # the wrong side's vocabulary
    proc = subprocess.run([str(BIN / "nmt-score"), "--model", str(model), "--checkpoint", "last", "--src",
                           str(toy_data / "val.tok.en"), "--tgt", str(toy_data / "val.tok.fr")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "model/vocabulary mismatch" in proc.stderr


def test_misaligned_input_names_files(toy_data: Path, tmp_path: Path) -> None:
    model = tmp_path / "model"
    run("nmt-train", "--data-dir", str(toy_data), "--out-dir", str(model), "--preset", "tiny", "--max-updates", "2",
        "--progress", "false")
    short = tmp_path / "short.fr"
    short.write_text("t1 t2\n", encoding="utf-8")
    proc = subprocess.run([str(BIN / "nmt-score"), "--model", str(model), "--checkpoint", "last", "--src",
                           str(toy_data / "val.tok.en"), "--tgt", str(short)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0 and "short.fr" in proc.stderr and "val.tok.en" in proc.stderr


def test_evaluate_detokenizes_moses_output(tmp_path: Path, capsys) -> None:
    from nmt.cli.evaluate import cli_main as evaluate_main

    hyp, ref, out = tmp_path / "h.tok", tmp_path / "r.txt", tmp_path / "h.detok"
    hyp.write_text("Deux hommes sont dehors .\nL&apos; homme court , vite .\n", encoding="utf-8")
    ref.write_text("Deux hommes sont dehors.\nL'homme court, vite.\n", encoding="utf-8")
    assert evaluate_main(["--hyp", str(hyp), "--ref", str(ref), "--detokenize", "fr", "--detok-out", str(out)]) == 0
    assert "BLEU = 100.00" in capsys.readouterr().out
    assert out.read_text(encoding="utf-8") == ref.read_text(encoding="utf-8")
    assert evaluate_main(["--hyp", str(hyp), "--ref", str(ref)]) == 0
    assert "BLEU = 100.00" not in capsys.readouterr().out      # tokenized output scores lower: detok matters

"""Every recipe's --quick run, end to end as a user calls it (CPU, CI scale). The recipes that read
the real corpora skip when ``$MT_DATA`` (default ``../shared/data``) does not hold them."""
from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MT_DATA = Path(os.environ.get("MT_DATA", ROOT.parent / "shared" / "data"))
ENV = {**os.environ, "MT_DATA": str(MT_DATA), "PYTHON": sys.executable, "BIN": str(Path(sys.executable).parent),
       "OMP_NUM_THREADS": "1"}


def run(*args: str, timeout: int = 600) -> str:
    proc = subprocess.run(["bash", *args], capture_output=True, text=True, env=ENV, timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    return proc.stdout


def need(*paths: str) -> None:
    missing = [p for p in paths if not (MT_DATA / p).exists()]
    if missing:
        pytest.skip(f"corpus files not found under {MT_DATA}: {missing}")


def need_tools() -> None:
    from smt_features.kenlm_lm import KenLMNotFoundError, find_kenlm_binary

    try:
        find_kenlm_binary("lmplz")
    except KenLMNotFoundError as err:
        pytest.skip(str(err))


def test_reverse_copy_quick(tmp_path: Path) -> None:
    out = run("recipes/reverse_copy/run.sh", "--quick", "--threads", "1", "--work", str(tmp_path))
    res = json.loads((tmp_path / "results.json").read_text())
    assert set(res["models"]) == {"lstm", "mogrifier"}
    for model in res["models"].values():
        first, last = model["curve"][0][1], model["curve"][-1][1]
        assert last < first                                    # it learns something in 40 steps
        assert all(0 < v["cross_entropy"] < 10 for v in model["final"].values())
    assert (tmp_path / "cross_entropy_vs_length.png").stat().st_size > 1000
    assert "| mogrifier (r=5) |" in out


@pytest.mark.slow
def test_ptb_lm_on_multi30k_french_quick(tmp_path: Path) -> None:
    need("multi30k/train.fr.gz", "multi30k/val.fr.gz")
    need_tools()
    run("recipes/ptb_lm/run.sh", "--quick", "--corpus", "multi30k-fr", "--models", "lstm-1x128", "--threads", "1",
        "--work", str(tmp_path))
    table = (tmp_path / "table.md").read_text()
    assert "| kenlm | sentence |" in table and "| lstm-1x128 | sentence |" in table
    valid = json.loads((tmp_path / "lstm-1x128" / "valid.json").read_text())
    assert valid["num_tokens"] == 15_395 and valid["num_oov"] == 0   # Multi30k val: 14,381 words + 1,014 </s>


@pytest.mark.slow
def test_sentence_completion_quick(tmp_path: Path) -> None:
    need("msr-sentence-completion/Holmes_Training_Data.tar.xz", "msr-sentence-completion/testing_data.csv")
    need_tools()
    out = run("recipes/sentence_completion/run.sh", "--quick", "--models", "lstm-1x128", "--threads", "1",
              "--work", str(tmp_path))
    acc = json.loads((tmp_path / "accuracy.json").read_text())
    assert set(acc) == {"kenlm-5gram", "lstm-1x128"}
    assert all(v["questions"] == 1040 and 0 <= v["accuracy"] <= 100 for v in acc.values())
    assert len((tmp_path / "text" / "novels.txt").read_text().split()) == 2
    assert "69.2 %" in out


@pytest.mark.slow
def test_smt_baseline_and_rnn_rescoring_quick(tmp_path: Path) -> None:
    """smt_baseline.sh runs inside rnn_rescore.sh: Baseline, +RNN and +RNN+WP rows, one MERT run each."""
    need("multi30k/train.en.gz", "multi30k/val.en.gz", "multi30k/test_2016_flickr.fr.gz")
    need_tools()
    smt, rnn = tmp_path / "smt", tmp_path / "rnn"
    out = run("recipes/multi30k_enfr/rnn_rescore.sh", "--quick", "--mert-runs", "1", "--threads", "1",
              "--smt-work", str(smt), "--work", str(rnn), timeout=900)
    scores = (smt / "scores.md").read_text()
    assert "| test_2016_flickr |" in scores and "| test_2017_flickr |" in scores
    assert "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in scores
    bleu = float(re.search(r"\| test_2016_flickr \| ([0-9.]+) ±", scores).group(1))
    assert 1.0 < bleu < 100.0
    assert (smt / "tune.1" / "moses.tuned.ini").is_file() and "MERT run 1" in out
    # the rescored table: 4 + 2 scores per line, its moses.ini, WP fixed at 0 in +RNN
    with gzip.open(rnn / "phrase-table.rnn.gz", "rt", encoding="utf-8") as fh:
        first = fh.readline().split(" ||| ")
    assert len(first[2].split()) == 6
    tuned = (rnn / "rnn.tune.1" / "moses.tuned.ini").read_text()
    assert "num-features=6" in tuned and re.search(r"^TranslationModel0=( \S+){5} 0$", tuned, re.M)
    table = (rnn / "scores.md").read_text()
    for system in ("Baseline", "+RNN", "+RNN+WP"):
        assert f"| {system} | test_2016_flickr |" in table
    records = json.loads((rnn / "results" / "rnn_wp.json").read_text())
    assert {r["set"] for r in records} == {"test_2016_flickr", "test_2017_flickr"} and records[0]["system"] == "+RNN+WP"


@pytest.mark.slow
def test_multi30k_nmt_quick_tiny(tmp_path: Path) -> None:
    """The README's main job, with training cut to 20 updates (the full --quick run is `make run`)."""
    need("multi30k/train.en.gz", "multi30k/test_2017_flickr.fr.gz")
    out = run("recipes/multi30k_enfr/run.sh", "--quick", "--work", str(tmp_path), "--", "--max-updates", "20",
              "--threads", "1")
    for split in ("test_2016_flickr", "test_2017_flickr"):
        res = json.loads((tmp_path / f"{split}.scores.json").read_text())
        assert res["num_sentences"] == 1000 and 0.0 <= res["bleu"] <= 100.0
    assert "BLEU" in out

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
def test_multi30k_table_quick(tmp_path: Path) -> None:
    """run.sh --table --quick: smt_baseline.sh → rnn_rescore.sh → ptb_lm (Multi30k French LMs) → lm_rerank.sh →
    report, one MERT run; every row of the table, the rescored table's 6 scores, the report with its figures."""
    need("multi30k/train.en.gz", "multi30k/val.en.gz", "multi30k/test_2016_flickr.fr.gz")
    need_tools()
    out = run("recipes/multi30k_enfr/run.sh", "--table", "--quick", "--mert-runs", "1", "--threads", "1",
              "--work", str(tmp_path), timeout=1500)
    smt, rnn, rerank = tmp_path / "smt", tmp_path / "rnn", tmp_path / "rerank"
    assert (smt / "tune.1" / "moses.tuned.ini").is_file() and "MERT run 1" in out
    with gzip.open(rnn / "phrase-table.rnn.gz", "rt", encoding="utf-8") as fh:
        first = fh.readline().split(" ||| ")
    assert len(first[2].split()) == 6                              # 4 Moses scores + p_rnn(e|f) + WP
    tuned = (rnn / "rnn.tune.1" / "moses.tuned.ini").read_text()
    assert "num-features=6" in tuned and re.search(r"^TranslationModel0=( \S+){5} 0$", tuned, re.M)
    # the LM lists carry the new features; +all also the encoder–decoder's
    with gzip.open(rerank / "rnnwp.1" / "val.nbest.feat.gz", "rt", encoding="utf-8") as fh:
        line = fh.readline()
    assert all(f" {name}= " in line for name in ("LSTM0", "RMN0", "MOG0", "RNN0"))
    valid = json.loads((tmp_path / "lm" / "lstm-1x128" / "valid.json").read_text())
    assert valid["num_tokens"] == 15_395 and valid["num_oov"] == 0   # Multi30k val: 14,381 words + 1,014 </s>
    table = (rerank / "scores.md").read_text()
    for system in ("Baseline", "+RNN", "+RNN+WP", "+LSTM-LM", "+RMN-LM", "+Mogrifier-LM", "+all"):
        row = re.search(rf"^\| {re.escape(system)} \| ([0-9.]+) ± ", table, re.M)
        assert row and 0.0 <= float(row.group(1)) <= 100.0, system
    assert "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in table
    records = json.loads((rerank / "results" / "all.json").read_text())
    assert {r["set"] for r in records} == {"val", "test_2016_flickr", "test_2017_flickr"}
    report = (tmp_path / "report" / "report.md").read_text()
    assert "| +Mogrifier-LM |" in report and "phrase_map.png" in report and "attention_sent0.png" in report
    assert (tmp_path / "report" / "report.html").is_file() and "total:" in (tmp_path / "wall_time.txt").read_text()


@pytest.mark.slow
def test_wmt_small_quick(tmp_path: Path) -> None:
    need("europarl-v7-excerpt/europarl-v7.20k.en.gz", "newstest/newstest2012.en", "newstest/newstest2013.fr")
    need_tools()
    run("recipes/wmt_small/run.sh", "--quick", "--mert-runs", "1", "--threads", "1", "--work", str(tmp_path),
        timeout=900)
    table = (tmp_path / "rnn" / "scores.md").read_text()
    assert "| BLEU | newstest2012 | newstest2013 | runs |" in table
    for system in ("Baseline", "+RNN", "+RNN+WP"):
        assert re.search(rf"^\| {re.escape(system)} \| [0-9.]+ ± ", table, re.M), system
    # references are the unescaped, detokenized newstest text (no Moses escapes left)
    ref = (tmp_path / "smt" / "text" / "newstest2013.ref.fr").read_text(encoding="utf-8")
    assert "&apos;" not in ref and "&quot;" not in ref and " ' " not in ref[:20000]


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

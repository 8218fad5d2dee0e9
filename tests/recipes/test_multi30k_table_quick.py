"""recipes/multi30k_enfr/run.sh --table --quick, built row group by row group: one test per stage on one shared
work folder (a module fixture; ``make test`` runs ``--dist loadfile``, so this file's tests run in one process,
in order). Each test asks for the rows it checks, so any one of them also runs alone."""
from __future__ import annotations

import gzip
import json
import re

import pytest
import yaml

from tests.recipes.helpers import QuickExperiment, check_baseline, need, need_tools, run, table_row

M30K_ROWS = ("Baseline", "+RNN", "+RNN+WP", "+LSTM-LM", "+RMN-LM", "+Mogrifier-LM", "+all", "+RNNsearch",
             "+all+RNNsearch")


@pytest.fixture(scope="module")
def m30k_table(tmp_path_factory: pytest.TempPathFactory) -> QuickExperiment:
    """run.sh --table --quick (smt_baseline.sh → rnn_rescore.sh → ptb_lm (the experiment's French LMs) →
    lm_rerank.sh → report, one MERT run), built row group by row group by the tests below."""
    need("multi30k/train.en.gz", "multi30k/val.en.gz", "multi30k/test_2016_flickr.fr.gz")
    need_tools()
    return QuickExperiment(tmp_path_factory.mktemp("multi30k_table_quick"), "recipes/multi30k_enfr/run.sh",
                           "--table")


@pytest.mark.slow
def test_multi30k_table_quick_baseline(m30k_table: QuickExperiment) -> None:
    """The Baseline row: the quick phrase-based system translates, well above the untranslated source on both
    test sets, and its table carries sacreBLEU's signature."""
    out = m30k_table.run("Baseline")
    smt = m30k_table.work / "smt"
    assert (smt / "tune.1" / "moses.tuned.ini").is_file() and "MERT run 1" in out
    for split in ("test_2016_flickr", "test_2017_flickr"):
        check_baseline(smt, split, min_bleu_gain=10.0)
    table = (m30k_table.work / "scores.md").read_text()
    table_row(table, "Baseline")
    assert "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in table


@pytest.mark.slow
def test_phrase_score_ablation_quick(m30k_table: QuickExperiment) -> None:
    """recipes/phrase_score/run.sh --quick on the quick Baseline, the row with both models (p(e|f), p(f|e),
    length-normalised): its two models trained, the table filtered and rescored (4 Moses scores + 2 + WP), one
    MERT run with WP fixed at 0, the summary; a second call reuses the models and the table."""
    m30k_table.run("Baseline")
    work = m30k_table.work / "phrase_score"
    args = ("recipes/phrase_score/run.sh", "recipes/phrase_score/multi30k.yaml", "--quick", "--experiment-work",
            str(m30k_table.work), "--work", str(work), "--threads", "1", "--rows", "both_norm")
    run(*args, "--mert-runs", "1")
    row = work / "both_norm"
    with gzip.open(row / "phrase-table.rnn.gz", "rt", encoding="utf-8") as fh:
        scores = [float(x) for x in fh.readline().split(" ||| ")[2].split()]
    assert len(scores) == 7 and all(0.0 < x <= 1.0 for x in scores[4:])  # p_rnn normalised, WP = exp(-unknown)
    tuned = (row / "rnn.tune.1" / "moses.tuned.ini").read_text()
    assert "num-features=7" in tuned and re.search(r"^TranslationModel0=( \S+){6} 0$", tuned, re.M)
    table = (work / "scores.md").read_text()
    table_row(table, "Baseline")
    table_row(table, "+RNN(both_norm)")
    assert "### test_2016_flickr: each system against Baseline, MERT run(s) 1 joined" in table  # nmt-significance
    assert re.search(r"^\| \+RNN\(both_norm\) \| 1 \| .+ \| [01]\.[0-9]{4} \| .+ \| [01]\.[0-9]{4} \|$", table, re.M)
    stamps = [(p, p.stat().st_mtime_ns) for p in (work / "models" / "default" / "train.done",
                                                   work / "models" / "reverse" / "train.done",
                                                   row / "phrase-table.rnn.gz")]
    run(*args, "--stop-after", "rescore")
    assert [(p, p.stat().st_mtime_ns) for p, _ in stamps] == stamps


@pytest.mark.slow
def test_multi30k_table_quick_rnn_row(m30k_table: QuickExperiment) -> None:
    """+RNN: the rescored table's 6 scores and the tuned moses.ini that reads them, WP's weight fixed at 0."""
    m30k_table.run("Baseline +RNN")
    rnn = m30k_table.work / "rnn"
    with gzip.open(rnn / "phrase-table.rnn.gz", "rt", encoding="utf-8") as fh:
        first = fh.readline().split(" ||| ")
    assert len(first[2].split()) == 6                              # 4 Moses scores + p_rnn(e|f) + WP
    tuned = (rnn / "rnn.tune.1" / "moses.tuned.ini").read_text()
    assert "num-features=6" in tuned and re.search(r"^TranslationModel0=( \S+){5} 0$", tuned, re.M)
    assert not (rnn / "rnnwp.tune.1").exists()
    table = (m30k_table.work / "scores.md").read_text()
    for system in M30K_ROWS[:2]:
        table_row(table, system)
    assert "| +RNN+WP |" not in table


@pytest.mark.slow
def test_multi30k_table_quick_rnn_wp_row(m30k_table: QuickExperiment) -> None:
    """+RNN+WP: the same rescored table, MERT tuning WP's weight too."""
    m30k_table.run("Baseline +RNN +RNN+WP")
    tuned = (m30k_table.work / "rnn" / "rnnwp.tune.1" / "moses.tuned.ini").read_text()
    assert "num-features=6" in tuned and re.search(r"^TranslationModel0=( \S+){6}$", tuned, re.M)
    assert not re.search(r"^TranslationModel0=( \S+){5} 0$", tuned, re.M)
    table = (m30k_table.work / "scores.md").read_text()
    for system in M30K_ROWS[:3]:
        table_row(table, system)


@pytest.mark.slow
def test_multi30k_table_quick_lstm_row(m30k_table: QuickExperiment) -> None:
    """+LSTM-LM: the three French LMs trained on the experiment's own text and evaluated on the dev lines MERT
    uses, and the Baseline's n-best lists with their three features."""
    m30k_table.run(" ".join(M30K_ROWS[:4]))
    work = m30k_table.work
    valid = json.loads((work / "lm" / "lstm-1x128" / "valid.json").read_text())
    # --quick: perplexity on the 40 val lines MERT tunes on (smt_quick.dev_lines): 554 words + 40 </s>
    assert valid["num_tokens"] == 594 and valid["num_oov"] == 0
    for model in ("rm+tM-g", "mogrifier"):
        assert json.loads((work / "lm" / model / "test.json").read_text())["num_tokens"] > 0
    with gzip.open(work / "rerank" / "baseline.1" / "val.nbest.feat.gz", "rt", encoding="utf-8") as fh:
        line = fh.readline()
    assert all(f" {name}= " in line for name in ("LSTM0", "RMN0", "MOG0")) and " RNN0= " not in line
    # the row's tuned weights use the LSTM's feature and not the other two (dropped: smt-rerank --drop)
    weights = (work / "rerank" / "lstm.1" / "weights").read_text()
    assert "LSTM0" in weights and "RMN0" not in weights and "MOG0" not in weights
    table_row((work / "scores.md").read_text(), "+LSTM-LM")


@pytest.mark.slow
def test_multi30k_table_quick_rmn_and_mogrifier_rows(m30k_table: QuickExperiment) -> None:
    """+RMN-LM and +Mogrifier-LM: tuned on the same Baseline lists (not decoded again)."""
    m30k_table.run(" ".join(M30K_ROWS[:6]))
    work = m30k_table.work
    for row, name in (("rmn", "RMN0"), ("mog", "MOG0")):
        weights = (work / "rerank" / f"{row}.1" / "weights").read_text()
        assert name in weights and "LSTM0" not in weights
    table = (work / "scores.md").read_text()
    for system in M30K_ROWS[:6]:
        table_row(table, system)


@pytest.mark.slow
def test_multi30k_table_quick_all_row(m30k_table: QuickExperiment) -> None:
    """+all: the +RNN+WP system's n-best lists with the three LMs' and the encoder–decoder's features."""
    m30k_table.run(" ".join(M30K_ROWS[:7]))
    with gzip.open(m30k_table.work / "rerank" / "rnnwp.1" / "val.nbest.feat.gz", "rt", encoding="utf-8") as fh:
        line = fh.readline()
    assert all(f" {name}= " in line for name in ("LSTM0", "RMN0", "MOG0", "RNN0"))
    table_row((m30k_table.work / "scores.md").read_text(), "+all")


@pytest.mark.slow
def test_multi30k_table_quick_rnnsearch_rows_and_report(m30k_table: QuickExperiment) -> None:
    """+RNNsearch and +all+RNNsearch, then the whole table's results and the report with its figures."""
    m30k_table.run(" ".join(M30K_ROWS), report=True)
    work = m30k_table.work
    rerank = work / "rerank"
    # +RNNsearch: Baseline's lists with the RNNsearch model's ln p(hyp | source), trained on the prepared pairs
    with gzip.open(rerank / "baseline.rnnsearch.1" / "val.nbest.feat.gz", "rt", encoding="utf-8") as fh:
        line = fh.readline()
    assert " RNNS0= " in line and " LSTM0= " not in line
    # ... made from the Baseline's lists of the LM rows, not decoded again: the same hypotheses and features
    assert not (rerank / "baseline.rnnsearch.1" / "val.1best").exists()
    with gzip.open(rerank / "baseline.1" / "val.nbest.feat.gz", "rt", encoding="utf-8") as fh:
        base = [line.split(" ||| ") for line in fh]
    with gzip.open(rerank / "baseline.rnnsearch.1" / "val.nbest.feat.gz", "rt", encoding="utf-8") as fh:
        derived = [line.split(" ||| ") for line in fh]
    assert len(derived) == len(base)
    for (sent, hyp, feats, _), (sent2, hyp2, feats2, _) in zip(base, derived):
        assert (sent2, hyp2) == (sent, hyp)
        assert feats2.split(" RNNS0= ")[0] == feats.split(" LSTM0= ")[0]
    # +all+RNNsearch: the +all lists (not decoded again) with RNNsearch's feature added
    with gzip.open(rerank / "rnnwp.rnnsearch.1" / "val.nbest.feat.gz", "rt", encoding="utf-8") as fh:
        line = fh.readline()
    assert all(f" {name}= " in line for name in ("LSTM0", "RMN0", "MOG0", "RNN0", "RNNS0"))
    assert yaml.safe_load((work / "rnnsearch" / "model" / "config.yaml").read_text())["arch"] == "rnnsearch"
    table = (work / "scores.md").read_text()
    for system in M30K_ROWS:
        table_row(table, system)
    results = [json.loads(f.read_text()) for f in sorted((work / "results").glob("*.json"))]
    assert sorted(records[0]["system"] for records in results) == sorted(M30K_ROWS)   # one file per row
    for records in results:
        assert {r["set"] for r in records} == {"val", "test_2016_flickr", "test_2017_flickr"}
    report = (work / "report" / "report.md").read_text()
    assert "| +Mogrifier-LM |" in report and "phrase_map.png" in report and "attention_sent0.png" in report
    assert (work / "report" / "report.html").is_file() and "total:" in (work / "wall_time.txt").read_text()

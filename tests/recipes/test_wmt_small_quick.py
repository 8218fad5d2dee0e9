"""recipes/wmt_small/run.sh --quick (the paper's news setting at CI scale), stage by stage on one shared work
folder (a module fixture; ``make test`` runs ``--dist loadfile``)."""
from __future__ import annotations

import gzip
import re

import pytest

from tests.recipes.helpers import QuickExperiment, check_baseline, need, need_tools

@pytest.fixture(scope="module")
def wmt_small(tmp_path_factory: pytest.TempPathFactory) -> QuickExperiment:
    need("europarl-v7-excerpt/europarl-v7.20k.en.gz", "newstest/newstest2012.en", "newstest/newstest2013.fr")
    need_tools()
    return QuickExperiment(tmp_path_factory.mktemp("wmt_small_quick"), "recipes/wmt_small/run.sh")


@pytest.mark.slow
def test_wmt_small_quick_baseline(wmt_small: QuickExperiment) -> None:
    """The news setting's data and Baseline: newstest references unescaped and detokenized, and the quick
    system well above the untranslated source on newstest2013."""
    wmt_small.run("Baseline")
    check_baseline(wmt_small.work / "smt", "newstest2013", min_bleu_gain=5.0)
    # references are the unescaped, detokenized newstest text (no Moses escapes left)
    ref = (wmt_small.work / "smt" / "text" / "newstest2013.ref.fr").read_text(encoding="utf-8")
    assert "&apos;" not in ref and "&quot;" not in ref and " ' " not in ref[:20000]


@pytest.mark.slow
def test_wmt_small_quick_rnn_row(wmt_small: QuickExperiment) -> None:
    """+RNN on news: the phrase model trained on the quick table (read as a stream), the table rescored (its 4
    Moses scores, p_rnn and the WP column), MERT and the row in rnn/scores.md beside the Baseline."""
    wmt_small.run("Baseline +RNN")
    table = (wmt_small.work / "rnn" / "scores.md").read_text()
    for system in ("Baseline", "+RNN"):
        assert re.search(rf"^\| {re.escape(system)} \| [0-9.]+ ± ", table, re.M), system
    assert "+RNN+WP" not in table
    with gzip.open(wmt_small.work / "rnn" / "phrase-table.rnn.gz", "rt", encoding="utf-8") as fh:
        scores = [float(x) for x in fh.readline().split(" ||| ")[2].split()]
    assert len(scores) == 6 and all(0.0 < x <= 1.0 for x in scores)
    assert "stream_buffer: 4000" in (wmt_small.work / "rnn" / "phrase_model" / "config.yaml").read_text()


@pytest.mark.slow
def test_wmt_small_quick_rnn_wp_row_and_report(wmt_small: QuickExperiment) -> None:
    """+RNN+WP on news (the +RNN table's WP column weighted), then the report over the three rows. The neural LM
    and RNNsearch rows run the same experiment.sh / lm_rerank.sh code that the Multi30k quick table tests row by
    row; the suite's budget leaves them out here."""
    wmt_small.run("Baseline +RNN +RNN+WP", report=True)
    table = (wmt_small.work / "rnn" / "scores.md").read_text()
    assert "| BLEU | newstest2012 | newstest2013 | runs |" in table
    for system in ("Baseline", "+RNN", "+RNN+WP"):
        assert re.search(rf"^\| {re.escape(system)} \| [0-9.]+ ± ", table, re.M), system
    scores = (wmt_small.work / "scores.md").read_text()
    assert set(re.findall(r"^\| ([^|]+?) \| [0-9.]+ ± ", scores, re.M)) == {"Baseline", "+RNN", "+RNN+WP"}
    # each row tested against the Baseline on newstest2013 (paired approximate randomization, nmt-significance)
    assert "### newstest2013: each system against Baseline, MERT run(s) 1 joined" in scores
    for system in ("+RNN", "+RNN+WP"):
        assert re.search(rf"^\| {re.escape(system)} \| 1 \| [0-9.]+ ± 0\.00 \| [+-][0-9.]+ \| [01]\.[0-9]{{4}} \| "
                         r"[0-9.]+ ± [0-9.]+ \| [+-][0-9.]+ \| [01]\.[0-9]{4} \|$", scores, re.M), system
    assert "ar:200|seed:12345" in scores
    report = (wmt_small.work / "report" / "report.md").read_text()
    assert "newstest2013: each system against Baseline over 1 MERT run(s)" in report  # results/significance

"""smt-report: md + html + png from a fake experiment folder; robust to missing pieces."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from smt_features.report.build import build_report
from smt_features.report.figures import rmn_attention
from smt_features.report.phrase_map import phrase_summaries
from smt_features.report.projection import pca_2d, tsne_2d
from smt_features.cli.report import cli_main as report_main

SIG = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.0"


def _fake_experiment(root: Path) -> Path:
    exp = root / "exp"
    (exp / "results").mkdir(parents=True)
    recs = [
        {"system": "Baseline", "set": "dev", "bleu": 30.0, "chrf": 55.0, "signature": SIG, "run": 1},
        {"system": "Baseline", "set": "dev", "bleu": 31.0, "chrf": 56.0, "signature": SIG, "run": 2},
        {"system": "Baseline", "set": "test", "bleu": 28.25, "signature": SIG, "run": 1},
        {"system": "+RNN", "set": "dev", "bleu": 32.5, "run": 1},
    ]
    (exp / "results" / "a.json").write_text(json.dumps(recs[:3]), encoding="utf-8")
    (exp / "results" / "b.json").write_text(json.dumps(recs[3]), encoding="utf-8")
    (exp / "results" / "broken.json").write_text("{not json", encoding="utf-8")
    (exp / "perplexity").mkdir()
    (exp / "perplexity" / "lstm.json").write_text(json.dumps(
        {"name": "lstm on test", "arch": "lstm", "text": "/x/test.txt", "ppl": 123.456, "num_tokens": 1000,
         "num_sentences": 50, "num_oov": 3, "total_logprob": -4815.9, "nll_per_token": 4.8159}), encoding="utf-8")
    (exp / "perplexity" / "kenlm.json").write_text(json.dumps(
        {"name": "kenlm 5-gram", "model": "lm.binary", "text": "test.txt", "map_unk": "_unk_", "ppl": 150.5,
         "num_tokens": 1000, "num_sentences": 50, "num_oov": 3, "total_logprob": -5014.0}), encoding="utf-8")
    hist = [{"step": 1, "epoch": 0, "lr": 0.1}, {"step": 10, "epoch": 0, "train_loss": 3.0},
            {"step": 20, "epoch": 0, "train_loss": 2.5}, {"step": 20, "epoch": 0, "dev_loss": 2.7, "dev_ppl": 14.9}]
    (exp / "models" / "encdec").mkdir(parents=True)
    (exp / "models" / "encdec" / "history.json").write_text(json.dumps(hist), encoding="utf-8")
    (root / "elsewhere" / "lm_lstm").mkdir(parents=True)  # a symlinked model folder
    (root / "elsewhere" / "lm_lstm" / "history.json").write_text(json.dumps(hist), encoding="utf-8")
    (exp / "models" / "lm_lstm").symlink_to(root / "elsewhere" / "lm_lstm", target_is_directory=True)
    (exp / "attention").mkdir()
    np.save(exp / "attention" / "rmn_sent0.npy", np.random.default_rng(0).random((4, 3)))
    (exp / "attention" / "rmn_sent0.txt").write_text("a b c d\n", encoding="utf-8")
    (exp / "figures").mkdir()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    fig.savefig(exp / "figures" / "mean attention.png")
    plt.close(fig)
    (exp / "figures" / "mean attention.txt").write_text("Fig. 3 of the RMN paper\n", encoding="utf-8")
    return exp


def test_report_from_fake_experiment(tmp_path: Path) -> None:
    exp = _fake_experiment(tmp_path)
    out = tmp_path / "report"
    assert report_main(["--experiment-dir", str(exp), "--out", str(out)]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    # BLEU: mean ± sample s.d. over runs, single runs as they are; rows in the canonical order
    for text in (md, page):
        assert "30.50 ± 0.71 (n=2)" in text
        assert "28.25" in text and "32.50" in text
        assert "55.50 ± 0.71 (n=2)" in text  # chrF
        assert SIG in text
        assert "123.46" in text and "150.50" in text and "4.8159" in text and "5.0140" in text
    assert md.index("| Baseline") < md.index("| +RNN")
    assert "broken.json" in md  # noted, not fatal
    # the HTML is self-contained (inline CSS) and every image it references exists beside it
    assert "<style>" in page and "<link" not in page
    imgs = re.findall(r'<img src="([^"]+)"', page)
    assert {"curve_encdec.png", "curve_lm_lstm.png", "attention_rmn_sent0.png"} <= set(imgs)
    fig_name = next(n for n in imgs if n.startswith("fig_"))
    assert "Fig. 3 of the RMN paper" in page and "Fig. 3 of the RMN paper" in md and fig_name.endswith(".png")
    for name in imgs:
        assert (out / name).is_file() and (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for name in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert (out / name).is_file()
    assert "No phrase map" in md
    assert "No examples.json" in md


def test_significance_tables_from_the_summary(tmp_path: Path) -> None:
    """results/significance/SET.json (nmt-significance's JSON, as summarize.py writes it) becomes a table per set:
    the joined score, Δ and p of each system against the first; a broken file is noted, not fatal."""
    from nmt.translation.significance import paired_test

    refs = [f"a small cat {i} sat on the mat ." for i in range(30)]
    worse = [r.replace("cat", "dog").replace("mat", "rug") if i % 2 else r for i, r in enumerate(refs)]
    result = paired_test([("Baseline", [worse, worse]), ("+RNN", [refs, worse])], refs, trials=50, confidence=20)
    exp = tmp_path / "exp"
    (exp / "results" / "significance").mkdir(parents=True)
    from dataclasses import asdict

    (exp / "results" / "significance" / "test_2016_flickr.json").write_text(json.dumps(asdict(result)),
                                                                            encoding="utf-8")
    (exp / "results" / "significance" / "test_2017_flickr.json").write_text('{"scores": 1}', encoding="utf-8")
    (exp / "results" / "a.json").write_text(json.dumps([{"system": "Baseline", "set": "test_2016_flickr",
                                                          "bleu": 1.0}]), encoding="utf-8")
    out = tmp_path / "report"
    assert report_main(["--experiment-dir", str(exp), "--out", str(out)]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    base, rnn = result.of("BLEU")
    row = (f"| +RNN | {rnn.mean - base.mean:+.2f} (p {rnn.p_value_mean:.4f}) | {rnn.joined:.2f} ± {rnn.ci95:.2f} | "
           f"{rnn.joined - base.joined:+.2f} (p {rnn.p_value:.4f}) |")
    assert row in md
    assert "| System | BLEU mean over runs, Δ (p) | BLEU runs joined | BLEU joined Δ (p) | chrF2 mean" in md
    assert "test_2016_flickr: each system against Baseline over 2 MERT run(s) (paired approximate" in md
    assert "ar:50|seed:12345" in md and "ar:50|seed:12345" in page and f"{rnn.p_value:.4f}" in page
    assert "significance/test_2017_flickr.json: unreadable" in md


def test_examples_section_lists_each_system(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "examples.json").write_text(json.dumps({"title": "test, run 1", "examples": [
        {"id": 7, "source": "a dog .", "reference": "Un chien.", "outputs": {"Baseline": "Un chat.",
                                                                             "+all": "Un chien."}}]}),
        encoding="utf-8")
    paths = build_report(exp, tmp_path / "out")
    md = paths["md"].read_text(encoding="utf-8")
    assert "## Translation examples" in md and "| 7 | source | a dog . |" in md and "|  | +all | Un chien. |" in md
    assert "<td class=\"t\">+all</td><td class=\"t\">Un chien.</td>" in paths["html"].read_text(encoding="utf-8")


def test_report_of_an_empty_folder_has_notes(tmp_path: Path) -> None:
    exp = tmp_path / "empty"
    exp.mkdir()
    paths = build_report(exp, tmp_path / "out")
    md = paths["md"].read_text(encoding="utf-8")
    assert "No BLEU results" in md and "No perplexity results" in md and "No training histories" in md
    assert "<img" not in paths["html"].read_text(encoding="utf-8")


def test_pca_2d() -> None:
    rng = np.random.default_rng(0)
    x = np.outer(rng.normal(size=20), [3.0, 0, 0, 0]) + 0.01 * rng.normal(size=(20, 4))
    pts, ratios = pca_2d(x)
    assert pts.shape == (20, 2) and ratios[0] > 0.99
    assert np.allclose(np.abs(pts[:, 0]), np.abs(x[:, 0] - x[:, 0].mean()), atol=0.1)


def test_phrase_map_with_a_tiny_model(tmp_path: Path) -> None:
    import torch

    from tests.toy_corpus import make_toy_data
    from nmt.cli.train import cli_main as nmt_train

    torch.set_num_threads(1)
    data = make_toy_data(tmp_path / "data", n_train=60, n_dev=6)
    model = tmp_path / "encdec"
    assert nmt_train(["--data-dir", str(data), "--out-dir", str(model), "--preset", "tiny", "--max-updates", "2",
                      "--progress", "false"]) == 0
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "phrases.txt").write_text("s1 s2\ns3\ns4 s5 s6\ns1\n", encoding="utf-8")
    out = tmp_path / "out"
    assert report_main(["--experiment-dir", str(exp), "--out", str(out), "--phrase-model", str(model)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert 'src="phrase_map.png"' in page and (out / "phrase_map.png").is_file()
    assert "PCA" in page and "not t-SNE" in page
    out2 = tmp_path / "out2"
    assert report_main(["--experiment-dir", str(exp), "--out", str(out2), "--phrase-model", str(model),
                        "--projection", "tsne"]) == 0
    assert "t-SNE" in (out2 / "report.md").read_text(encoding="utf-8") and (out2 / "phrase_map.png").is_file()
    c = phrase_summaries(model, [["s1", "s2"], ["s3"]])
    assert c.shape[0] == 2 and np.all(np.abs(c) <= 1)


def test_rmn_attention_figures(tmp_path: Path) -> None:
    import torch

    from nmt.cli.lm_train import cli_main as lm_train

    torch.set_num_threads(1)
    text = tmp_path / "train.txt"
    text.write_text("".join(f"w{i % 5} w{(i + 1) % 5} w{(i + 2) % 5}\n" for i in range(40)), encoding="utf-8")
    lm = tmp_path / "rmn"
    assert lm_train(["--train", str(text), "--valid", str(text), "--arch", "rm", "--memory-size", "3", "--emb-dim", "8",
                     "--hidden-dim", "8", "--out-dir", str(lm), "--threads", "1", "--progress", "false",
                     "--max-updates", "2", "--batch-size", "8"]) == 0
    arr, labels = rmn_attention(lm, ["w1", "w2", "w3", "w4"])
    assert arr.shape == (5, 3) and labels == ["<s>", "w1", "w2", "w3", "w4"]
    assert np.allclose(arr.sum(axis=1), 1.0, atol=1e-5)
    sents = tmp_path / "sents.txt"
    sents.write_text("w1 w2 w3\nw0 w4\n", encoding="utf-8")
    exp = tmp_path / "exp"
    exp.mkdir()
    out = tmp_path / "out"
    assert report_main(["--experiment-dir", str(exp), "--out", str(out), "--rmn-model", str(lm),
                        "--attention-sentences", str(sents)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    for name in ("attention_sent0.png", "attention_sent1.png"):
        assert f'src="{name}"' in page and (out / name).is_file()


def test_tsne_separates_clusters() -> None:
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(size=(15, 5)), rng.normal(size=(15, 5)) + 20.0])
    y = tsne_2d(x, iterations=300)
    assert y.shape == (30, 2) and np.all(np.isfinite(y))
    a, b = y[:15], y[15:]
    within = max(np.linalg.norm(a - a.mean(0), axis=1).max(), np.linalg.norm(b - b.mean(0), axis=1).max())
    assert np.linalg.norm(a.mean(0) - b.mean(0)) > 2 * within
    assert np.array_equal(y, tsne_2d(x, iterations=300))  # deterministic


def test_screenshot_in_headless_chromium(tmp_path: Path) -> None:
    import shutil

    if not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")):
        if os.environ.get("CI"):  # scripts/setup.sh installs it: under CI a missing browser is a failure
            pytest.fail("no chromium on PATH (scripts/setup.sh: apt-get install chromium)")
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium)")
    exp = _fake_experiment(tmp_path)
    shot = tmp_path / "shot.png"
    assert report_main(["--experiment-dir", str(exp), "--out", str(tmp_path / "r"), "--screenshot", str(shot),
                        "--screenshot-size", "900,1400"]) == 0
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.shape[:2] == (1400, 900)
    assert img[..., :3].std() > 0.05        # not a blank page: text, tables and figures drawn

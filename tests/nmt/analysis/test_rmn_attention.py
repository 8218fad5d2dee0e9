"""RMN attention analysis (Tran et al. 2016, Fig. 3-4): nmt.analysis.rmn_attention and nmt-lm-attention."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.refusal import refused
import torch

from nmt.analysis.rmn_attention import mean_by_distance, plot_heatmap, sentence_attention
from nmt.cli.lm_attention import cli_main as attention_main
from nmt.cli.lm_train import cli_main as train_main
from nmt.data.vocab import Vocabulary
from nmt.lm.loading import LoadedLM, load_language_model
from nmt.models.lm import build_lm

WORDS = "the cat sat on a mat and dog ran to red hat".split()


def _sentences(n: int, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[WORDS[i] for i in rng.integers(0, len(WORDS), rng.integers(1, 14))] for _ in range(n)]


def _loaded(arch: str = "rm", memory: int = 4) -> LoadedLM:
    torch.manual_seed(0)
    vocab = Vocabulary.build(_sentences(20), None)
    model = build_lm(arch, len(vocab), emb_dim=8, hidden_dim=8, memory_size=memory).eval()
    return LoadedLM(model, vocab, {"arch": arch, "data": {"regime": "sentence"}}, Path("mem"))


@pytest.mark.parametrize("arch", ["rm", "rmr"])
def test_weights_are_distributions_over_the_words_read_so_far(arch: str) -> None:
    loaded = _loaded(arch)
    sents = _sentences(12, seed=1)
    items = sentence_attention(loaded, sents, max_tokens=30)   # several batches of mixed lengths
    for sent, it in zip(sents, items):
        assert it.words == sent and it.inputs[0] == "<s>" and it.weights.shape == (len(sent) + 1, 4)
        np.testing.assert_allclose(it.weights.sum(1), 1.0, atol=1e-6)
        for t in range(it.weights.shape[0]):
            assert np.all(it.weights[t, t + 1:] == 0.0)        # slots before the sentence are empty
            assert np.all(it.weights[t, :t + 1] > 0.0)
    # batching does not change a sentence's weights
    alone = sentence_attention(loaded, [sents[3]])[0]
    np.testing.assert_allclose(alone.weights, items[3].weights, atol=1e-6)


def test_mean_by_distance_averages_full_memory_steps_only() -> None:
    loaded = _loaded()
    items = sentence_attention(loaded, _sentences(10, seed=2))
    mean, steps = mean_by_distance(items)
    rows = [it.weights[t] for it in items for t in range(it.weights.shape[0]) if t >= 3]
    assert steps == len(rows)
    np.testing.assert_allclose(mean, np.mean(rows, 0))
    assert mean.sum() == pytest.approx(1.0)


def test_non_rmn_model_is_refused() -> None:
    vocab = Vocabulary.build(_sentences(5), None)
    lstm = LoadedLM(build_lm("lstm", len(vocab), emb_dim=8, hidden_dim=8).eval(), vocab, {"arch": "lstm"}, Path("x"))
    with pytest.raises(ValueError, match="no memory block"):
        sentence_attention(lstm, _sentences(2))


def test_cli_writes_the_figures(tmp_path: Path, capsys) -> None:
    text = tmp_path / "train.txt"
    text.write_text("\n".join(" ".join(s) for s in _sentences(60, seed=3)) + "\n", encoding="utf-8")
    model = tmp_path / "rm"
    assert train_main(["--arch", "rm", "--memory-size", "5", "--emb-dim", "8", "--hidden-dim", "8",
                       "--train", str(text), "--valid", str(text), "--max-epochs", "1", "--threads", "1",
                       "--progress", "false", "--out-dir", str(model)]) == 0
    out = tmp_path / "att"
    assert attention_main(["--model", f"RM={model}", f"again={model}", "--text", str(text), "--samples", "2",
                           "--out-dir", str(out), "--threads", "1", "--save-arrays"]) == 0
    record = json.loads((out / "attention.json").read_text())
    assert list(record["models"]) == ["RM", "again"]
    assert record["models"]["RM"]["mean_attention"] == record["models"]["again"]["mean_attention"]
    assert len(record["sampled_lines"]) == 2 and record["models"]["RM"]["memory_size"] == 5
    assert sum(record["models"]["RM"]["mean_attention"]) == pytest.approx(1.0, abs=1e-4)
    for png in ["mean_attention.png"] + [f"heatmap_RM_{i}.png" for i in record["sampled_lines"]]:
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    arrays = np.load(out / "attention_RM.npz")
    assert arrays["offsets"][-1] == arrays["weights"].shape[0] == sum(len(s) + 1 for s in _sentences(60, seed=3))
    loaded = load_language_model(model)
    first = sentence_attention(loaded, [_sentences(60, seed=3)[0]])[0]
    np.testing.assert_allclose(arrays["weights"][:arrays["offsets"][1]], first.weights, atol=1e-6)
    assert refused(capsys, "--model", attention_main(["--text", str(text)]))


def test_heatmap_png(tmp_path: Path) -> None:
    item = sentence_attention(_loaded(), [WORDS[:6]])[0]
    path = plot_heatmap(item, tmp_path / "h.png", title="x")
    assert path.stat().st_size > 1000

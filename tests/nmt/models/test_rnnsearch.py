"""RNNsearch (Bahdanau et al., 2015): appendix A by hand, attention over real words, forward = steps, nmt-train."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from nmt.training.checkpoint import load_checkpoint
from nmt.cli.train import cli_main as train_main
from nmt.cli.translate import cli_main as translate_main
from nmt.data.batching import pair_batch
from nmt.models.rnnsearch import RNNsearchConfig, build_model, config_with_preset
from nmt.scoring import PairScorer

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _sig(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _paper_gru(x_w: np.ndarray, h: np.ndarray, p: dict, pre: str) -> np.ndarray:
    """Appendix A's gated unit as written there: h = (1 − z) ∘ h_prev + z ∘ h̃. ``x_w`` = (W_z x, W_r x, W x)
    already including any context terms and biases."""
    z = _sig(x_w[0] + p[pre + "Uz"] @ h)
    r = _sig(x_w[1] + p[pre + "Ur"] @ h)
    cand = np.tanh(x_w[2] + p[pre + "U"] @ (r * h))
    return (1 - z) * h + z * cand


def test_appendix_a_by_hand() -> None:
    """Every equation of appendix A recomputed in numpy from independently drawn paper-named matrices
    (biases included) on a 2-word source (+ EOS), then loaded into the model: s_0 = tanh(W_s ←h_1),
    e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j), c_i = Σ α_ij h_j, the decoder unit with C c_i in both gates and
    the candidate, t̃_i = U_o s_{i−1} + V_o E y_{i−1} + C_o c_i, maxout over pairs, softmax(W_o t_i).
    Our gated unit keeps Cho (2014)'s z (= the paper's 1 − z), so its update-gate parameters are the
    paper's negated: the check covers that mapping too."""
    E, H, A, L, Vs, Vt = 3, 4, 3, 2, 7, 6
    rng = np.random.default_rng(5)
    p = {}
    for d in ("f", "b", "d"):  # forward encoder, backward encoder, decoder
        for g in ("z", "r", ""):
            p[f"{d}W{g}"] = rng.normal(0, 0.7, (H, E))
            p[f"{d}U{g}"] = rng.normal(0, 0.7, (H, H))
            p[f"{d}b{g}"] = rng.normal(0, 0.3, H)
            if d == "d":
                p[f"dC{g}"] = rng.normal(0, 0.7, (H, 2 * H))
    p.update(Ebar=rng.normal(0, 1, (Vs, E)), E=rng.normal(0, 1, (Vt, E)), Ws=rng.normal(0, 0.7, (H, H)),
             bs=rng.normal(0, 0.3, H), Wa=rng.normal(0, 0.7, (A, H)), Ua=rng.normal(0, 0.7, (A, 2 * H)),
             ba=rng.normal(0, 0.3, A), va=rng.normal(0, 3, A), Uo=rng.normal(0, 0.7, (2 * L, H)),
             bo=rng.normal(0, 0.3, 2 * L), Vo=rng.normal(0, 0.7, (2 * L, E)), Co=rng.normal(0, 0.7, (2 * L, 2 * H)),
             Wo=rng.normal(0, 1, (Vt, L)), bWo=rng.normal(0, 0.3, Vt))
    p["Ebar"][0] = 0
    p["E"][0] = 0
    src, tgt_in, tgt_out = [5, 4, 3], [2, 4, 5], [4, 5, 3]  # "w1 w2 </s>", "<s> y1 y2" → "y1 y2 </s>"

    def enc(d: str, words: list[int]) -> list[np.ndarray]:
        h, out = np.zeros(H), []
        for w in words:
            x = p["Ebar"][w]
            h = _paper_gru([p[f"{d}W{g}"] @ x + p[f"{d}b{g}"] for g in ("z", "r", "")], h, p, d)
            out.append(h)
        return out

    fwd, bwd = enc("f", src), enc("b", src[::-1])[::-1]
    ann = np.stack([np.concatenate([f, b]) for f, b in zip(fwd, bwd)])  # h_j = [→h_j; ←h_j]
    s = np.tanh(p["Ws"] @ bwd[0] + p["bs"])  # s_0 = tanh(W_s ←h_1)
    hand_lp, hand_alpha = [], []
    for y_prev, y in zip(tgt_in, tgt_out):
        e = np.array([p["va"] @ np.tanh(p["Wa"] @ s + p["Ua"] @ h_j + p["ba"]) for h_j in ann])
        alpha = np.exp(e - e.max()) / np.exp(e - e.max()).sum()
        c = alpha @ ann
        ey = p["E"][y_prev]
        t_tilde = p["Uo"] @ s + p["Vo"] @ ey + p["Co"] @ c + p["bo"]
        t = np.array([max(t_tilde[2 * j], t_tilde[2 * j + 1]) for j in range(L)])
        logits = p["Wo"] @ t + p["bWo"]
        hand_lp.append(logits[y] - np.log(np.exp(logits).sum()))
        hand_alpha.append(alpha)
        s = _paper_gru([p[f"dW{g}"] @ ey + p[f"dC{g}"] @ c + p[f"db{g}"] for g in ("z", "r", "")], s, p, "d")

    model = build_model(RNNsearchConfig(emb_dim=E, hidden_dim=H, align_dim=A, maxout_units=L), Vs, Vt).double()
    model.eval()
    T = lambda a: torch.from_numpy(np.asarray(a, dtype=np.float64))  # noqa: E731
    with torch.no_grad():
        for d, W, unit, C in (("f", model.fwd_W, model.fwd_unit, None), ("b", model.bwd_W, model.bwd_unit, None),
                              ("d", model.dec_W, model.dec_unit, model.dec_C)):
            W.weight.copy_(T(np.concatenate([-p[f"{d}Wz"], p[f"{d}Wr"], p[f"{d}W"]])))  # z negated
            W.bias.copy_(T(np.concatenate([-p[f"{d}bz"], p[f"{d}br"], p[f"{d}b"]])))
            unit.U_zr.weight.copy_(T(np.concatenate([-p[f"{d}Uz"], p[f"{d}Ur"]])))
            unit.U.weight.copy_(T(p[f"{d}U"]))
            if C is not None:
                C.weight.copy_(T(np.concatenate([-p["dCz"], p["dCr"], p["dC"]])))
        for mod, w, b in ((model.src_embed, "Ebar", None), (model.tgt_embed, "E", None), (model.init_state, "Ws", "bs"),
                          (model.att_W, "Wa", None), (model.att_U, "Ua", "ba"), (model.out_s, "Uo", "bo"),
                          (model.out_y, "Vo", None), (model.out_c, "Co", None), (model.out_vocab, "Wo", "bWo")):
            mod.weight.copy_(T(p[w]))
            if b is not None:
                mod.bias.copy_(T(p[b]))
        model.att_v.weight.copy_(T(p["va"][None]))
        forced = torch.log_softmax(model(torch.tensor([src]), torch.tensor([tgt_in])), -1)[0].numpy()
        state = model.start(torch.tensor([src]))
        for i, y_prev in enumerate(tgt_in):
            lp, state = model.step(torch.tensor([y_prev]), state)
            np.testing.assert_allclose(state["attn"][0].numpy(), hand_alpha[i], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(lp[0, tgt_out[i]].item(), hand_lp[i], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(forced[np.arange(3), tgt_out], hand_lp, rtol=1e-9, atol=1e-10)
    alphas = np.stack(hand_alpha)  # the check has teeth: the weights are not uniform and move between steps
    assert np.abs(alphas - 1 / 3).max() > 0.05 and np.ptp(alphas, axis=0).max() > 0.05


def _random_model(seed: int = 0):
    torch.manual_seed(seed)
    model = build_model(config_with_preset("rnnsearch-tiny"), 20, 22).double().eval()
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for prm in model.parameters():
            prm.copy_(torch.randn(prm.shape, generator=gen, dtype=prm.dtype) * 0.5)
    return model


SRCS = [[5, 6, 7], [8, 9], [4, 5, 6, 7, 8, 9, 11, 12]]
TGTS = [[4, 5], [6, 7, 8, 9, 13], [10]]


def test_padding_is_ignored_and_attention_sums_to_one() -> None:
    model = _random_model()
    b = pair_batch(SRCS, TGTS)
    assert bool((b["src"] == 0).any())  # the batch is padded
    with torch.no_grad():
        together = model.pair_log_probs(b["src"], b["tgt_in"], b["tgt_out"])
        alone = [model.pair_log_probs(*(pair_batch([s], [t])[k] for k in ("src", "tgt_in", "tgt_out")))
                 for s, t in zip(SRCS, TGTS)]
        torch.testing.assert_close(together, torch.cat(alone), rtol=1e-10, atol=1e-10)
        state = model.start(b["src"])
        _, state = model.step(b["tgt_in"][:, 0], state)
    attn = state["attn"]
    torch.testing.assert_close(attn.sum(1), torch.ones(3, dtype=attn.dtype))
    assert bool((attn[b["src"] == 0] == 0).all()) and bool((attn[b["src"] != 0] > 0).all())


def test_forward_equals_repeated_steps() -> None:
    model = _random_model(3)
    b = pair_batch(SRCS, TGTS)
    with torch.no_grad():
        forced = torch.log_softmax(model(b["src"], b["tgt_in"]), -1)
        state, steps = model.start(b["src"]), []
        for i in range(b["tgt_in"].shape[1]):
            lp, state = model.step(b["tgt_in"][:, i], state)
            steps.append(lp)
            rows = torch.tensor([2, 0, 1])  # the search's generic reordering of rows keeps every row's state
            state = {k: v.index_select(0, rows) for k, v in state.items()}
            state = {k: v.index_select(0, torch.argsort(rows)) for k, v in state.items()}
    torch.testing.assert_close(torch.stack(steps, 1), forced, rtol=1e-10, atol=1e-10)


def test_init_follows_appendix_b() -> None:
    torch.manual_seed(0)
    model = build_model(RNNsearchConfig(emb_dim=20, hidden_dim=40, align_dim=30, maxout_units=30), 500, 600)
    model.requires_grad_(False)
    for unit in (model.fwd_unit, model.bwd_unit, model.dec_unit):
        for k in range(2):
            block = unit.U_zr.weight[k * 40:(k + 1) * 40]
            torch.testing.assert_close(block @ block.T, torch.eye(40), atol=1e-5, rtol=0)
        torch.testing.assert_close(unit.U.weight @ unit.U.weight.T, torch.eye(40), atol=1e-5, rtol=0)
    assert abs(float(model.att_U.weight.std()) - 0.001) < 2e-4 and abs(float(model.att_W.weight.std()) - 0.001) < 2e-4
    assert abs(float(model.out_vocab.weight.std()) - 0.01) < 1e-3
    assert float(model.att_v.weight.abs().max()) == 0.0
    assert all(float(m.bias.abs().max()) == 0.0 for m in model.modules() if getattr(m, "bias", None) is not None)


def _train(data: Path, out: Path, *extra: str) -> int:
    return train_main(["--data-dir", str(data), "--out-dir", str(out), "--arch", "rnnsearch", "--preset",
                       "rnnsearch-tiny", "--optimizer", "adam", "--lr", "0.01", "--batch-size", "16",
                       "--max-updates", "6", "--progress", "false", "--threads", "1", *extra])


def test_nmt_train_rnnsearch_then_pair_scorer(toy_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "m"
    assert _train(toy_data, out) == 0
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["arch"] == "rnnsearch" and cfg["model"]["align_dim"] == 24
    state = load_checkpoint(out / "checkpoint_last.pt")  # weights_only=True
    assert state["config"]["arch"] == "rnnsearch" and state["train_state"]["step"] == 6
    scorer = PairScorer.load(out, which="last", max_tokens=12)
    assert type(scorer.model).__name__ == "RNNsearch"
    for name, tensor in scorer.model.state_dict().items():
        assert torch.equal(tensor, state["model"][name]), name
    src = [["s1", "s2"], ["s3", "s4", "zzz", "s1"], ["s1", "s2"]]
    tgt = [["t1", "t2"], ["t3", "t4", "t0", "yyy"], ["t2", "t1", "t5"]]
    scores = scorer.score_pairs(src, tgt)  # window scoring (batched by target length)
    vs, vt = scorer.src_vocab, scorer.tgt_vocab
    b = pair_batch([vs.encode(s) for s in src], [vt.encode(t) for t in tgt])
    with torch.no_grad():
        ref = scorer.model.pair_log_probs(b["src"], b["tgt_in"], b["tgt_out"]).tolist()
    for got, want in zip(scores, ref):
        assert math.isclose(got.log_prob, want, rel_tol=1e-5) and got.log_prob < 0
    # nmt-translate drives it through the batched beam search (start/step): its n-best ln p = the scorer's
    (tmp_path / "in.txt").write_text("s1 s2\ns3 s4 s5 s1\n", encoding="utf-8")
    assert translate_main(["--model", str(out), "--checkpoint", "last", "--input", str(tmp_path / "in.txt"),
                           "--output", str(tmp_path / "out.txt"), "--tokenized", "true", "--detokenize", "false",
                           "--nbest", "2", "--beam-size", "3", "--len-penalty", "0", "--threads", "1"]) == 0
    lines = (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines()
    assert [line.split(" ||| ")[0] for line in lines] == ["0", "0", "1", "1"]
    checked = 0
    for line in lines:
        i, text, _, total = line.split(" ||| ")
        words, source = text.split(), [["s1", "s2"], ["s3", "s4", "s5", "s1"]][int(i)]
        if len(words) < 2 * len(source) + 10:  # ended with EOS, not cut at the length limit
            want = scorer.score_pairs([source], [words])[0].log_prob if words else \
                scorer.empty_target_log_probs([source])[0]
            assert math.isclose(want, float(total), rel_tol=1e-4, abs_tol=1e-4)
            checked += 1
    assert checked >= 2
    # PairScorer.generate: several sources in one batched search = each source searched alone
    sources = [["s3", "s4", "s5", "s1"], ["s1", "s2"], ["s2"]]
    together = scorer.generate(sources, nbest=2, beam_size=3, batch_size=2)
    alone = [scorer.generate([s], nbest=2, beam_size=3)[0] for s in sources]
    assert [[w for w, _ in hyps] for hyps in together] == [[w for w, _ in hyps] for hyps in alone]
    for hyps_t, hyps_a in zip(together, alone):
        assert len(hyps_t) == 2 and all(math.isclose(a[1], b[1], rel_tol=1e-5) for a, b in zip(hyps_t, hyps_a))


def test_nmt_train_refuses_options_of_the_other_arch(toy_data: Path, tmp_path: Path, capsys) -> None:
    assert _train(toy_data, tmp_path / "a", "--cell", "torch") == 2
    assert "--cell is an option of --arch rnnenc" in capsys.readouterr().err
    assert _train(toy_data, tmp_path / "b", "--preset", "tiny") == 2
    assert "unknown --preset 'tiny' for --arch rnnsearch" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_pair_scorer_attention_is_the_beams(toy_data: Path, tmp_path: Path) -> None:
    """PairScorer.attention (teacher-forced) over nmt-translate's 1-best = the attention its beam search recorded
    (nmt-translate --attention); a model without attention is refused."""
    import json

    out = tmp_path / "m"
    assert _train(toy_data, out) == 0
    (tmp_path / "in.txt").write_text("s1 s2\ns3 s4 s5 s1\n", encoding="utf-8")
    assert translate_main(["--model", str(out), "--checkpoint", "last", "--input", str(tmp_path / "in.txt"),
                           "--output", str(tmp_path / "out.txt"), "--tokenized", "true", "--detokenize", "false",
                           "--beam-size", "3", "--threads", "1", "--attention", str(tmp_path / "att.jsonl")]) == 0
    records = [json.loads(line) for line in (tmp_path / "att.jsonl").read_text(encoding="utf-8").splitlines()]
    scorer = PairScorer.load(out, which="last")
    srcs = [r["source"][:-1] for r in records]
    tgts = [r["target"][:-1] if r["target"][-1:] == ["</s>"] else r["target"] for r in records]
    got = scorer.attention(srcs, tgts, batch_size=1)
    for rec, rows in zip(records, got):
        want = rec["attention"]
        assert len(rows) >= len(want) and all(len(r) == len(rec["source"]) for r in rows)
        for a, b in zip(rows, want):
            assert np.allclose(a, b, atol=1e-5)
        assert all(math.isclose(sum(r), 1.0, rel_tol=1e-6) for r in rows)
    for a, b in zip(got, scorer.attention(srcs, tgts, batch_size=8)):  # batching (padding) changes nothing
        assert np.allclose(a, b, atol=1e-6)
    rnnenc = tmp_path / "enc"
    assert train_main(["--data-dir", str(toy_data), "--out-dir", str(rnnenc), "--preset", "tiny", "--max-updates", "1",
                       "--progress", "false", "--threads", "1"]) == 0
    with pytest.raises(ValueError, match="does not attend"):
        PairScorer.load(rnnenc, which="last").attention([["s1"]], [["t1"]])

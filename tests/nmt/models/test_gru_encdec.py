"""The gated unit's equations, scoring vs teacher-forced loss, beam search vs scoring."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nmt.data.batching import pair_batch
from nmt.models.gru_encdec import GatedUnit, GRUEncDecConfig, build_model, config_with_preset
from nmt.scoring import PairScorer
from nmt.translation.search import beam_search
from nmt.translation.data import TranslationDataConfig, TranslationTask


def test_gated_unit_matches_equations_5_to_8() -> None:
    torch.manual_seed(0)
    H, B = 5, 3
    unit = GatedUnit(H)
    Wx = torch.randn(B, 3 * H)  # [W_z x; W_r x; W x]
    h = torch.randn(B, H)
    U_z, U_r = unit.U_zr.weight[:H], unit.U_zr.weight[H:]
    z = torch.sigmoid(Wx[:, :H] + h @ U_z.T)
    r = torch.sigmoid(Wx[:, H:2 * H] + h @ U_r.T)
    candidate = torch.tanh(Wx[:, 2 * H:] + (r * h) @ unit.U.weight.T)  # reset before U (eq. 8)
    expected = z * h + (1 - z) * candidate
    torch.testing.assert_close(unit(Wx, h), expected)


def test_init_follows_paper() -> None:
    torch.manual_seed(0)
    model = build_model(GRUEncDecConfig(emb_dim=20, hidden_dim=40, maxout_units=30, output_rank=10), 500, 600)
    U = model.encoder.unit.U.weight
    torch.testing.assert_close(U @ U.T, torch.eye(40), atol=1e-5, rtol=0)
    w = model.out_vocab.weight
    w = w.detach()
    assert abs(float(w.std()) - 0.01) < 0.001 and abs(float(w.mean())) < 0.001
    assert float(model.encoder.W.bias.abs().max()) == 0.0


@pytest.mark.parametrize("cell", ["faithful", "torch"])
def test_score_pairs_equals_teacher_forced_loss(toy_data, cell) -> None:
    torch.manual_seed(0)
    task = TranslationTask(TranslationDataConfig(data_dir=str(toy_data)))
    model = build_model(config_with_preset("tiny", cell=cell), len(task.src_vocab), len(task.tgt_vocab)).eval()
    idx = list(range(10))
    batch = task.make_batch(idx)
    nll, ntok = task.loss(model, batch)
    src = [task.src_vocab.decode(task.train_src[i]) for i in idx]
    tgt = [task.tgt_vocab.decode(task.train_tgt[i]) for i in idx]
    scores = PairScorer(model, task.src_vocab, task.tgt_vocab, max_tokens=20).score_pairs(src, tgt)
    assert sum(s.tgt_tokens for s in scores) == ntok
    assert math.isclose(-sum(s.log_prob for s in scores), float(nll), rel_tol=1e-5)


def test_unknown_words_scored_through_unk_and_counted(toy_data) -> None:
    task = TranslationTask(TranslationDataConfig(data_dir=str(toy_data)))
    model = build_model(config_with_preset("tiny"), len(task.src_vocab), len(task.tgt_vocab))
    scorer = PairScorer(model, task.src_vocab, task.tgt_vocab)
    (score,) = scorer.score_pairs([["s1", "zzz"]], [["t1", "yyy", "xxx"]])
    assert (score.src_unk, score.tgt_unk, score.tgt_tokens) == (1, 2, 4)
    with pytest.raises(ValueError, match="empty"):
        scorer.score_pairs([[]], [["t1"]])


def test_beam_search_scores_agree_with_scorer(toy_data) -> None:
    torch.manual_seed(0)
    task = TranslationTask(TranslationDataConfig(data_dir=str(toy_data)))
    model = build_model(config_with_preset("tiny", init_std=0.5), len(task.src_vocab), len(task.tgt_vocab)).eval()
    batch = pair_batch(task.train_src[:4], task.train_tgt[:4])
    nbest = beam_search(model, batch["src"], beam_size=4, nbest=3, len_penalty=0.0, max_len_b=3)
    scorer = PairScorer(model, task.src_vocab, task.tgt_vocab)
    for i, hyps in enumerate(nbest):
        assert len(hyps) == 3
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        src_words = task.src_vocab.decode(task.train_src[i])
        for hyp in hyps:
            if len(hyp.tokens) < 2 * len(src_words) + 3 and hyp.tokens:  # ended with EOS
                (ref,) = scorer.score_pairs([src_words], [task.tgt_vocab.decode(hyp.tokens)])
                assert math.isclose(ref.log_prob, hyp.log_prob, rel_tol=1e-4, abs_tol=1e-4)


def test_beam_one_is_greedy(toy_data) -> None:
    torch.manual_seed(1)
    task = TranslationTask(TranslationDataConfig(data_dir=str(toy_data)))
    # a wide init so that no two words tie, as they nearly do at the paper's N(0, 0.01²)
    model = build_model(config_with_preset("tiny", init_std=0.5), len(task.src_vocab), len(task.tgt_vocab)).eval()
    batch = pair_batch(task.train_src[:3], task.train_tgt[:3])
    (hyps,) = beam_search(model, batch["src"][:1], beam_size=1)
    c = model.encode(batch["src"][:1])
    h = model.init_decoder(c)
    prev, greedy = torch.tensor([2]), []
    for _ in range(len(hyps[0].tokens) + 1):
        logp, h = model.decode_step(prev, h, c)
        prev = logp.argmax(-1)
        greedy.append(int(prev))
    assert greedy[:-1] == hyps[0].tokens or greedy == hyps[0].tokens


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _hand_gated_step(x_proj: np.ndarray, h: np.ndarray, U_zr: np.ndarray, U: np.ndarray, hidden: int) -> np.ndarray:
    """Eq. 5–8 in numpy: ``x_proj`` = [W_z x (+C_z c); W_r x (+C_r c); W x (+C c)] with biases."""
    H = hidden
    z = _sigmoid(x_proj[:H] + U_zr[:H] @ h)                 # update gate
    r = _sigmoid(x_proj[H:2 * H] + U_zr[H:] @ h)            # reset gate
    cand = np.tanh(x_proj[2 * H:] + U @ (r * h))             # reset before U (eq. 8)
    return z * h + (1 - z) * cand


def test_decoder_matches_hand_computed_cho_equations() -> None:
    """Cho et al. (2014) appendix A.1, decoder side, recomputed by hand in numpy from the model's own
    parameters (every one drawn at random, biases included, so no term can hide behind a zero):
    c = tanh(V h_N), s0 = h'_0 = tanh(V' c); gates and candidate read e(y_{i-1}), h'_{i-1} and C_z c,
    C_r c, C c; s'_i = O_h h'_i + O_y e(y_{i-1}) + O_c c, maxout over consecutive pairs, then
    softmax(G_l (G_r s)). Compared with decode_step (beam search's path) and the teacher-forced
    decode / pair_log_probs (training's path)."""
    E, H, K, P, R, V_src, V_tgt = 3, 4, 3, 2, 2, 7, 6
    torch.manual_seed(0)
    model = build_model(GRUEncDecConfig(emb_dim=E, hidden_dim=H, maxout_units=K, maxout_pool=P, output_rank=R),
                        V_src, V_tgt).double().eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.8)
    w = {name: p.detach().numpy().copy() for name, p in model.named_parameters()}

    src = [5, 4, 6, 3]                          # ... EOS
    tgt_in = [2, 4, 5, 3]                       # BOS y1 y2 y3
    tgt_out = [4, 5, 3, 5]
    # encoder (eq. 5-8) and c = tanh(V h_N)
    h = np.zeros(H)
    for tok in src:
        x = w["src_embed.weight"][tok]
        h = _hand_gated_step(w["encoder.W.weight"] @ x + w["encoder.W.bias"], h,
                             w["encoder.unit.U_zr.weight"], w["encoder.unit.U.weight"], H)
    c = np.tanh(w["summary.weight"] @ h + w["summary.bias"])
    s = np.tanh(w["dec_init.weight"] @ c + w["dec_init.bias"])          # s0 = tanh(V' c)
    C_zrc = w["context_proj.weight"] @ c                                  # [C_z c; C_r c; C c]
    O_c_c = w["out_c.weight"] @ c
    hand_logp, hand_states = [], []
    for prev in tgt_in:
        e = w["tgt_embed.weight"][prev]                                   # e(y_{i-1})
        s = _hand_gated_step(w["decoder.W.weight"] @ e + w["decoder.W.bias"] + C_zrc, s,
                             w["decoder.unit.U_zr.weight"], w["decoder.unit.U.weight"], H)
        pre = w["out_h.weight"] @ s + w["out_h.bias"] + w["out_y.weight"] @ e + O_c_c    # 2K values
        maxout = np.array([max(pre[2 * i], pre[2 * i + 1]) for i in range(K)])            # pairs
        logits = w["out_vocab.weight"] @ (w["out_rank.weight"] @ maxout) + w["out_vocab.bias"]
        logits = logits - logits.max()
        hand_logp.append(logits - np.log(np.exp(logits).sum()))
        hand_states.append(s)
    hand_logp = np.stack(hand_logp)

    src_t, tgt_t = torch.tensor([src]), torch.tensor([tgt_in])
    with torch.no_grad():
        c_model = model.encode(src_t)
        np.testing.assert_allclose(c_model[0].numpy(), c, rtol=1e-10, atol=1e-12)
        h_model = model.init_decoder(c_model)
        np.testing.assert_allclose(h_model[0].numpy(),
                                   np.tanh(w["dec_init.weight"] @ c + w["dec_init.bias"]), rtol=1e-10, atol=1e-12)
        for i, prev in enumerate(tgt_in):                  # beam search's one-step path
            logp, h_model = model.decode_step(torch.tensor([prev]), h_model, c_model)
            np.testing.assert_allclose(h_model[0].numpy(), hand_states[i], rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(logp[0].numpy(), hand_logp[i], rtol=1e-9, atol=1e-10)
        forced = torch.log_softmax(model(src_t, tgt_t), -1)[0].numpy()   # training's path
        np.testing.assert_allclose(forced, hand_logp, rtol=1e-9, atol=1e-10)
        pair = model.pair_log_probs(src_t, tgt_t, torch.tensor([tgt_out]))
    assert float(pair[0]) == pytest.approx(sum(hand_logp[i, t] for i, t in enumerate(tgt_out)), rel=1e-10)
    assert np.ptp(hand_logp) > 0.5       # the distributions are far from uniform: the check has teeth

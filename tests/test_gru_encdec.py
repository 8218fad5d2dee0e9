"""The gated unit's equations, scoring vs teacher-forced loss, beam search vs scoring."""
from __future__ import annotations

import math

import pytest
import torch

from nmt.data.batching import pair_batch
from nmt.models.gru_encdec import GatedUnit, GRUEncDecConfig, build_model, config_with_preset
from nmt.scoring import PairScorer
from nmt.search import beam_search
from nmt.translation_data import TranslationDataConfig, TranslationTask


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

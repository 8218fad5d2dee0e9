"""Neural LMs: LSTM, RM / RMR (Tran et al. 2016), Mogrifier LSTM (Melis et al. 2020).

Tiny sizes throughout; the whole file runs in seconds on CPU.
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from nmt.data.special import BOS, EOS, PAD
from nmt.models.lm import ARCHITECTURES, PRESETS, build_config, build_lm, resolve
from nmt.models.lm.base import make_lm_batch, token_log_probs
from nmt.models.lm.lstm import LSTMConfig, LSTMLM
from nmt.models.lm.mogrifier import MogrifierConfig, MogrifierLayerFunction, MogrifierLM
from nmt.models.lm.rmn import RMLM, RMNConfig, RMRLM

pytestmark = pytest.mark.usefixtures("one_torch_thread")


V = 31
SMALL = {"emb_dim": 12, "hidden_dim": 16}
ARCHS = ["lstm", "rm", "rmr", "mogrifier"]


def small(arch: str, **kw):
    extra = {"memory_size": 5} if arch in ("rm", "rmr") else {}
    if arch == "mogrifier":
        extra = {"rounds": 5}
    torch.manual_seed(0)
    return build_lm(arch, V, **{**SMALL, **extra, **kw}).eval()


def sentences(bsz=4, max_len=9, seed=1):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_len + 1, (bsz,), generator=g)
    lengths[0] = max_len
    tokens = torch.randint(4, V, (bsz, max_len), generator=g)
    tokens = tokens.masked_fill(torch.arange(max_len) >= lengths.unsqueeze(1), PAD)
    return tokens, lengths


# ----------------------------------------------------------------------------- batches


def test_make_lm_batch():
    tokens = torch.tensor([[5, 6, 7], [8, 0, 0]])
    inputs, targets, lengths = make_lm_batch(tokens, torch.tensor([3, 1]))
    assert inputs.tolist() == [[BOS, 5, 6, 7], [BOS, 8, PAD, PAD]]
    assert targets.tolist() == [[5, 6, 7, EOS], [8, EOS, PAD, PAD]]
    assert lengths.tolist() == [4, 2]
    # default lengths: non-PAD count; empty sentence → just EOS
    inputs, targets, lengths = make_lm_batch(torch.tensor([[0, 0]]))
    assert inputs.tolist() == [[BOS, PAD, PAD]] and targets.tolist() == [[EOS, PAD, PAD]]


# ----------------------------------------------------------------------------- registry


@pytest.mark.parametrize("name", sorted(ARCHITECTURES) + sorted(PRESETS))
def test_registry_builds_every_arch_and_preset(name):
    model = build_lm(name, V)
    arch, _ = resolve(name)
    assert isinstance(model, ARCHITECTURES[arch][0])
    logits, state = model(torch.randint(4, V, (2, 3)))
    assert logits.shape == (2, 3, V)
    assert model.num_parameters() > 0


def test_registry_overrides_and_errors():
    arch, cfg = build_config("rmn-paper-small", memory_size=7)
    assert arch == "rmr" and cfg.memory_size == 7 and cfg.hidden_dim == 128
    assert build_lm("lstm-3x128", V).cfg.num_layers == 3
    assert PRESETS["rm-tM-l"]["temporal"] is False and PRESETS["rm-tM-l"]["composition"] == "linear"
    with pytest.raises(KeyError):
        build_lm("transformer", V)
    with pytest.raises(ValueError):
        build_lm("lstm", V, memory_size=3)
    with pytest.raises(ValueError):
        build_lm("rm", V, composition="sum")
    m = LSTMLM.from_config({"hidden_dim": 8, "emb_dim": 8}, V)
    assert m.cfg.hidden_dim == 8
    with pytest.raises(ValueError):
        LSTMLM.from_config({"rounds": 2}, V)


def test_init_options():
    m = build_lm("lstm", V, **SMALL, num_layers=2, init="uniform", init_range=0.05)
    h = m.cfg.hidden_dim
    for name, p in m.named_parameters():
        if name.startswith("rnn.bias_ih"):
            assert torch.all(p[h:2 * h] == 1.0)
        elif name.startswith("rnn.bias_hh"):
            assert torch.all(p[h:2 * h] == 0.0)
        else:
            assert p.abs().max() <= 0.05
    tied = build_lm("lstm", V, emb_dim=8, hidden_dim=16, tie_embeddings=True)
    assert tied.output.decoder.weight is tied.embedding.weight
    assert tied(torch.randint(4, V, (2, 3)))[0].shape == (2, 3, V)


# ----------------------------------------------------------------------------- Mogrifier


def reference_mogrifier_layer(kinds, zigzag, x, h, c, w_ih, w_hh, b, gates):
    """Paper eq. 1–2 with 2σ, then a textbook LSTM step; plain autograd, one step at a time."""
    outs, cells = [], []
    for t in range(x.size(0)):
        xt, hc, x_orig, h_orig = x[t], h, x[t], h
        for gates_x, (m, bias) in zip(kinds, gates):
            if gates_x:
                xt = 2 * torch.sigmoid((hc if zigzag else h_orig) @ m.t() + bias) * xt
            else:
                hc = 2 * torch.sigmoid((xt if zigzag else x_orig) @ m.t() + bias) * hc
        i, f, g, o = (xt @ w_ih.t() + hc @ w_hh.t() + b).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(h)
        cells.append(c)
    return torch.stack(outs), torch.stack(cells)


@pytest.mark.parametrize("zigzag", [True, False])
@pytest.mark.parametrize("rounds", [0, 1, 2, 5])
def test_mogrifier_layer_function_matches_paper_equations_and_gradcheck(zigzag, rounds):
    torch.manual_seed(rounds)
    steps, bsz, m_dim, hid = 4, 3, 5, 6
    kinds = tuple(i % 2 == 1 for i in range(1, rounds + 1))
    dd = dict(dtype=torch.double, requires_grad=True)
    x = torch.randn(steps, bsz, m_dim, **dd)
    h0, c0 = torch.randn(bsz, hid, **dd), torch.randn(bsz, hid, **dd)
    w_ih, w_hh, b = torch.randn(4 * hid, m_dim, **dd), torch.randn(4 * hid, hid, **dd), torch.randn(4 * hid, **dd)
    gates = [(torch.randn(m_dim if k else hid, hid if k else m_dim, **dd), torch.randn(m_dim if k else hid, **dd))
             for k in kinds]
    flat = [p for g in gates for p in g]

    def fn(x, h0, c0, w_ih, w_hh, b, *gp):
        params = []
        for j in range(len(kinds)):
            params += [(0.5 * gp[2 * j]).t().contiguous(), 0.5 * gp[2 * j + 1]]
        w_cat_t = torch.cat([w_ih, w_hh], 1).t().contiguous()
        return MogrifierLayerFunction.apply(kinds, zigzag, x, h0, c0, w_cat_t, b, *params)

    out, cells = fn(x, h0, c0, w_ih, w_hh, b, *flat)
    ref_out, ref_cells = reference_mogrifier_layer(kinds, zigzag, x, h0, c0, w_ih, w_hh, b, gates)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(cells, ref_cells)
    assert torch.autograd.gradcheck(fn, (x, h0, c0, w_ih, w_hh, b, *flat))


def test_mogrifier_r0_reproduces_lstm_exactly():
    cfg = dict(emb_dim=12, hidden_dim=16, num_layers=2)
    torch.manual_seed(0)
    lstm = LSTMLM(LSTMConfig(**cfg), V).eval()
    mog = MogrifierLM(MogrifierConfig(**cfg, rounds=0), V).eval()
    mog.load_state_dict(lstm.state_dict())  # same parameter names, strict
    tokens, lengths = sentences()
    inputs, _, in_len = make_lm_batch(tokens, lengths)
    for kw in ({}, {"lengths": in_len}):
        l1, (h1, c1) = lstm(inputs, **kw)
        l2, (h2, c2) = mog(inputs, **kw)
        assert torch.equal(l1, l2) and torch.equal(h1, h2) and torch.equal(c1, c2)
    assert torch.equal(lstm.score_sentences(tokens, lengths), mog.score_sentences(tokens, lengths))
    # the Mogrifier's own time loop with r = 0 is the same LSTM (up to float rounding)
    mog._force_loop = True
    for kw in ({}, {"lengths": in_len}):
        l1, (h1, c1) = lstm(inputs, **kw)
        l2, (h2, c2) = mog(inputs, **kw)
        valid = torch.arange(inputs.size(1)) < in_len.unsqueeze(1) if kw else torch.ones_like(inputs, dtype=bool)
        torch.testing.assert_close(l2[valid], l1[valid], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close((h2, c2), (h1, c1), atol=1e-5, rtol=1e-5)
    # and so are its gradients
    mog.train(), lstm.train()
    g1 = torch.autograd.grad(lstm(inputs)[0].square().sum(), list(lstm.parameters()))
    g2 = torch.autograd.grad(mog(inputs)[0].square().sum(), list(mog.parameters()))
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("zigzag", [True, False])
@pytest.mark.parametrize("rank", [0, 3])
def test_mogrifier_model_matches_reference(zigzag, rank):
    torch.manual_seed(0)
    model = MogrifierLM(MogrifierConfig(emb_dim=8, hidden_dim=10, num_layers=2, rounds=4, rank=rank,
                                        zigzag=zigzag, init="default"), V).eval()
    with torch.no_grad():  # non-zero gate biases, so that they are exercised
        for rounds in model.mogrifier:
            for gate in rounds:
                gate.bias.normal_(0, 0.3)
                assert (gate.rank == rank) and (gate.matrix().shape[0] == gate.bias.shape[0])
    tokens = torch.randint(4, V, (3, 6))
    logits, (h_n, c_n) = model(tokens)
    x = model.embedding(tokens).transpose(0, 1)
    for layer in range(2):
        rnn = model.rnn
        gates = [(g.matrix(), g.bias) for g in model.mogrifier[layer]]
        b = getattr(rnn, f"bias_ih_l{layer}") + getattr(rnn, f"bias_hh_l{layer}")
        zero = torch.zeros(3, 10)
        x, cells = reference_mogrifier_layer((True, False, True, False), zigzag, x, zero, zero,
                                             getattr(rnn, f"weight_ih_l{layer}"),
                                             getattr(rnn, f"weight_hh_l{layer}"), b, gates)
        torch.testing.assert_close(h_n[layer], x[-1])
        torch.testing.assert_close(c_n[layer], cells[-1])
    torch.testing.assert_close(logits, model.output(x.transpose(0, 1)))


def test_mogrifier_lowrank_parameter_count():
    full = MogrifierLM(MogrifierConfig(emb_dim=20, hidden_dim=30, rounds=3, rank=0), V)
    low = MogrifierLM(MogrifierConfig(emb_dim=20, hidden_dim=30, rounds=3, rank=4), V)
    lstm = LSTMLM(LSTMConfig(emb_dim=20, hidden_dim=30), V)
    # rounds 1, 3 gate x (Q: 30 → 20), round 2 gates h (R: 20 → 30); plus biases
    assert full.num_parameters() - lstm.num_parameters() == 3 * 600 + 20 + 30 + 20
    assert low.num_parameters() - lstm.num_parameters() == 3 * 4 * 50 + 20 + 30 + 20


# ----------------------------------------------------------------------------- RMN


def reference_memory_block(mb, h, ctx_tokens, n_hist):
    """RMN memory block, one step at a time, from the paper's equations (sentence mode:
    slots before the sentence and PAD slots are left out of the softmax)."""
    bsz, steps, dim = h.shape
    outs, atts = [], torch.zeros(bsz, steps, mb.n)
    for b in range(bsz):
        row = []
        for t in range(steps):
            pos = t + n_hist                       # position of the current word in ctx
            words = [(k, ctx_tokens[b, pos - k]) for k in range(mb.n)
                     if pos - k >= 0 and ctx_tokens[b, pos - k] != PAD]
            ht = h[b, t]
            if ctx_tokens[b, pos] == PAD or not words:
                row.append(None)
                continue
            scores = torch.stack([mb.mem_in.weight[w] @ ht + (mb.temporal_in[k] @ ht if mb.temporal_in is not None
                                                                 else 0.0) for k, w in words])
            p = torch.softmax(scores, 0)
            s = sum(p[j] * (mb.mem_out.weight[w] + (mb.temporal_out[k] if mb.temporal_out is not None else 0))
                    for j, (k, w) in enumerate(words))
            for j, (k, _) in enumerate(words):
                atts[b, t, k] = p[j]
            d = dim
            if mb.composition == "gating":
                ws, wb = mb.gate_s.weight, mb.gate_s.bias
                us, ub = mb.gate_h.weight, mb.gate_h.bias
                z = torch.sigmoid(ws[:d] @ s + wb[:d] + us[:d] @ ht + ub[:d])
                r = torch.sigmoid(ws[d:2 * d] @ s + wb[d:2 * d] + us[d:] @ ht + ub[d:])
                cand = torch.tanh(ws[2 * d:] @ s + wb[2 * d:] + mb.cand_h(r * ht))
                row.append((1 - z) * ht + z * cand)
            else:
                row.append(s + mb.lin_h.weight @ ht)
        outs.append(row)
    return outs, atts


@pytest.mark.parametrize("composition", ["gating", "linear"])
@pytest.mark.parametrize("temporal", [True, False])
def test_memory_block_matches_paper_equations(composition, temporal):
    model = small("rm", composition=composition, temporal=temporal, temporal_output=temporal, memory_size=4)
    tokens, lengths = sentences(bsz=3, max_len=7)
    h = torch.randn(3, 7, SMALL["hidden_dim"])
    valid = tokens != PAD
    history = torch.full((3, 3), PAD)
    history[1] = torch.tensor([PAD, 9, 10])  # a partly filled rolling memory
    out, p = model.memory(h, tokens, valid, history)
    ref_out, ref_att = reference_memory_block(model.memory, h, torch.cat([history, tokens], 1), 3)
    torch.testing.assert_close(p.flip(-1), ref_att)
    for b in range(3):
        for t in range(7):
            if ref_out[b][t] is not None:
                torch.testing.assert_close(out[b, t], ref_out[b][t])


@pytest.mark.parametrize("arch", ["rm", "rmr"])
def test_rmn_attention_sums_to_one_and_masks_future_and_padding(arch):
    n = 5
    model = small(arch, memory_size=n)
    tokens, lengths = sentences(bsz=4, max_len=9)
    inputs, _, in_len = make_lm_batch(tokens, lengths)
    _, _, att = model(inputs, lengths=in_len, return_attention=True)
    bsz, steps = inputs.shape
    assert att.shape == (bsz, steps, n)
    for b in range(bsz):
        for t in range(steps):
            row = att[b, t]
            if t < in_len[b]:
                assert math.isclose(row.sum().item(), 1.0, rel_tol=1e-6)
                assert torch.all(row[t + 1:] == 0)            # slots before the sentence start
                assert torch.all(row[: t + 1] > 0)            # every available word is attended
            else:
                assert torch.all(row == 0)                    # padding query
    # padding inside the window (left-padded row) gets exactly zero weight
    left = torch.tensor([[PAD, PAD, BOS, 7, 8, 9]])
    _, _, att = model(left, return_attention=True)
    assert torch.all(att[0, :2] == 0)
    assert torch.all(att[0, 3, 2:] == 0) and torch.all(att[0, 5, 4:] == 0)
    torch.testing.assert_close(att[0, 2:].sum(-1), torch.ones(4))


@pytest.mark.parametrize("arch", ARCHS)
def test_causality_future_tokens_do_not_change_past_outputs(arch):
    model = small(arch)
    tokens = torch.randint(4, V, (2, 10))
    logits, _ = model(tokens)
    for k in (3, 7, 9):
        changed = tokens.clone()
        changed[:, k] = (changed[:, k] + 5) % (V - 4) + 4
        other, _ = model(changed)
        torch.testing.assert_close(other[:, :k], logits[:, :k], atol=0, rtol=0)
        assert not torch.allclose(other[:, k], logits[:, k])
    if arch in ("rm", "rmr"):
        _, _, att = model(tokens, return_attention=True)
        changed = tokens.clone()
        changed[:, 6] = 5
        _, _, att2 = model(changed, return_attention=True)
        assert torch.equal(att[:, :6], att2[:, :6])


# ----------------------------------------------------------------------------- scoring / states


@pytest.mark.parametrize("arch", ARCHS)
def test_score_sentences_equals_steps_and_cross_entropy(arch):
    model = small(arch, num_layers=2)
    tokens, lengths = sentences(bsz=5, max_len=8)
    with torch.no_grad():
        scores = model.score_sentences(tokens, lengths)
        # 1) incremental step() from BOS, one row at a time
        for b in range(tokens.size(0)):
            n = int(lengths[b])
            targets = tokens[b, :n].tolist() + [EOS]
            prev, state, total = torch.tensor([BOS]), None, 0.0
            for tgt in targets:
                logp, state = model.step(prev, state)
                assert math.isclose(logp.exp().sum().item(), 1.0, rel_tol=1e-5)
                total += logp[0, tgt].item()
                prev = torch.tensor([tgt])
            assert math.isclose(scores[b].item(), total, rel_tol=1e-5, abs_tol=1e-4)
        # 2) teacher-forced cross-entropy over the padded batch
        inputs, targets, in_len = make_lm_batch(tokens, lengths)
        logits, _ = model(inputs)
        nll = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=PAD, reduction="none")
        torch.testing.assert_close(-nll.view(len(tokens), -1).sum(1), scores, atol=1e-4, rtol=1e-5)
        # 3) batched step() over all rows at once (padding rows keep running; masked out)
        prev, state = torch.full((len(tokens),), BOS), None
        total = torch.zeros(len(tokens))
        for t in range(targets.size(1)):
            logp, state = model.step(prev, state)
            total += logp.gather(1, targets[:, t:t + 1]).squeeze(1) * (t < in_len).float()
            prev = inputs[:, t + 1] if t + 1 < inputs.size(1) else prev
        torch.testing.assert_close(total, scores, atol=1e-4, rtol=1e-5)
        assert torch.all(scores < 0)


@pytest.mark.parametrize("arch", ARCHS)
def test_stream_state_continues_exactly(arch):
    """Two windows with the carried (detached) state = one pass over the whole stream."""
    model = small(arch, num_layers=2)
    stream = torch.randint(4, V, (3, 12))
    full, _ = model(stream)
    first, state = model(stream[:, :5])
    state = model.detach_state(state)
    second, _ = model(stream[:, 5:], state)
    torch.testing.assert_close(torch.cat([first, second], 1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_lengths_give_the_state_after_the_last_real_token(arch):
    model = small(arch, num_layers=2)
    tokens, lengths = sentences(bsz=3, max_len=7)
    if arch == "mogrifier":
        model._force_loop = True
    inputs, _, in_len = make_lm_batch(tokens, lengths)
    _, state = model(inputs, lengths=in_len)
    nxt = torch.randint(4, V, (3, 1))
    logits, _ = model(nxt, state)
    for b in range(3):
        _, st_b = model(inputs[b:b + 1, : in_len[b]])
        ref, _ = model(nxt[b:b + 1], st_b)
        torch.testing.assert_close(logits[b:b + 1], ref, atol=1e-5, rtol=1e-5)


def test_reorder_state_selects_rows():
    model = small("rmr")
    tokens = torch.randint(4, V, (3, 4))
    _, state = model(tokens)
    idx = torch.tensor([2, 0])
    sub = model.reorder_state(state, idx)
    _, ref = model(tokens[idx])
    torch.testing.assert_close(sub["lower"], ref["lower"])
    assert torch.equal(sub["memory"], ref["memory"])


# ----------------------------------------------------------------------------- training


VARIANTS = [
    ("lstm", {}), ("lstm", {"num_layers": 2, "tie_embeddings": True, "dropout_hidden": 0.1}),
    ("rm", {}), ("rm", {"composition": "linear", "temporal": False}),
    ("rmr", {"temporal_output": True, "num_layers": 2}),
    ("mogrifier", {}), ("mogrifier", {"rank": 3, "num_layers": 2}), ("mogrifier", {"zigzag": False}),
]


@pytest.mark.parametrize("arch,kw", VARIANTS)
def test_gradient_reaches_every_parameter(arch, kw):
    model = small(arch, **kw).train()
    tokens, lengths = sentences()
    loss = -model.score_sentences(tokens, lengths).sum()
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("arch", ARCHS)
def test_a_few_sgd_steps_lower_the_loss(arch):
    model = small(arch, dropout_emb=0.0).train()
    corpus = torch.tensor([[5, 6, 7, 8, 9, 10], [11, 12, 13, 5, 6, 0], [7, 7, 8, 8, 0, 0]])
    lengths = torch.tensor([6, 5, 4])
    inputs, targets, in_len = make_lm_batch(corpus, lengths)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        logits, _ = model(inputs, lengths=in_len)
        loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=PAD)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses          # ln 31 = 3.43 → about 2.0
    assert max(b - a for a, b in zip(losses, losses[1:])) < 0.05, losses  # and steadily


def test_token_log_probs_is_natural_log():
    logits = torch.zeros(1, 2, 4)
    lp = token_log_probs(logits, torch.tensor([[1, 2]]))
    torch.testing.assert_close(lp, torch.full((1, 2), -math.log(4)))


def test_classes_are_registered():
    assert ARCHITECTURES["rm"] == (RMLM, RMNConfig) and ARCHITECTURES["rmr"] == (RMRLM, RMNConfig)
    assert ARCHITECTURES["mogrifier"][0] is MogrifierLM and ARCHITECTURES["lstm"][0] is LSTMLM

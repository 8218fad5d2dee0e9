"""The fused faithful gated recurrence (hand-written BPTT) against autograd and the plain loop."""
from __future__ import annotations

import pytest
import torch

from nmt.models.gru_encdec import build_model, config_with_preset
from nmt.models.gru_recurrence import GatedRecurrenceFunction, gated_recurrence, gated_recurrence_loop


def _inputs(B: int, T: int, H: int, dtype: torch.dtype, masked: bool, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    proj = torch.randn(B, T, 3 * H, generator=g, dtype=dtype)
    h0 = torch.randn(B, H, generator=g, dtype=dtype)
    U_zr = torch.randn(2 * H, H, generator=g, dtype=dtype) * 0.5
    U = torch.randn(H, H, generator=g, dtype=dtype) * 0.5
    mask = None
    if masked:
        lengths = torch.tensor([T, max(1, T - 2), 1][:B] + [T] * max(0, B - 3))
        mask = torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)
    return [t.requires_grad_() for t in (proj, h0, U_zr, U)], mask


@pytest.mark.parametrize("masked", [False, True])
def test_gradcheck_float64(masked: bool) -> None:
    (proj, h0, U_zr, U), mask = _inputs(3, 4, 3, torch.float64, masked)
    assert torch.autograd.gradcheck(lambda *a: GatedRecurrenceFunction.apply(*a, mask), (proj, h0, U_zr, U))


@pytest.mark.parametrize("masked", [False, True])
def test_matches_plain_loop(masked: bool) -> None:
    (proj, h0, U_zr, U), mask = _inputs(4, 7, 16, torch.float32, masked, seed=1)
    fused = gated_recurrence(proj, h0, U_zr, U, mask)
    plain = gated_recurrence_loop(proj, h0, U_zr, U, mask)
    torch.testing.assert_close(fused, plain, rtol=1e-5, atol=1e-6)
    weights = torch.randn_like(fused)
    g_fused = torch.autograd.grad((fused * weights).sum(), (proj, h0, U_zr, U))
    g_plain = torch.autograd.grad((plain * weights).sum(), (proj, h0, U_zr, U))
    for a, b in zip(g_fused, g_plain):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_model_fused_equals_plain_loop() -> None:
    """Whole model (masked encoder + context-fed decoder): loss and every parameter gradient."""
    torch.manual_seed(0)
    model = build_model(config_with_preset("tiny"), 50, 60)
    src = torch.tensor([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0], [11, 3, 0, 0, 0]])
    tgt_in = torch.tensor([[2, 12, 13, 14], [2, 15, 16, 0], [2, 17, 0, 0]])
    grads, losses = [], []
    for fused in (True, False):
        model.encoder.unit.fused = model.decoder.unit.fused = fused
        model.zero_grad()
        loss = model(src, tgt_in).logsumexp(-1).sum()
        loss.backward()
        losses.append(loss.detach())
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    torch.testing.assert_close(losses[0], losses[1], rtol=1e-5, atol=1e-6)
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], rtol=1e-5, atol=1e-7, msg=name)


def test_no_grad_forward_is_bitwise_the_plain_loop() -> None:
    (proj, h0, U_zr, U), mask = _inputs(3, 5, 8, torch.float32, True, seed=2)
    with torch.no_grad():
        assert torch.equal(gated_recurrence(proj, h0, U_zr, U, mask), gated_recurrence_loop(proj, h0, U_zr, U, mask))
        assert torch.equal(gated_recurrence(proj, h0, U_zr, U), gated_recurrence_loop(proj, h0, U_zr, U))

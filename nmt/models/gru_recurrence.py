"""The faithful gated unit (Cho et al., 2014, eq. 5–8) over a whole sequence, with hand-written BPTT.

Given precomputed input projections ``P_t = [W_z x_t; W_r x_t; W x_t]`` (+ bias, + the
decoder's context terms), shape [B, 3H] per step::

    z   = σ(P_z + U_z h)
    r   = σ(P_r + U_r h)
    h̃   = tanh(P_h + U (r ⊙ h))
    h_t = z ⊙ h + (1 − z) ⊙ h̃          (computed as h̃ + z ⊙ (h − h̃))

and, with a mask [B, T] (True = real token), ``h_t = h_{t−1}`` where the mask is False.

:class:`GatedRecurrenceFunction` runs the forward pass without recording an autograd
graph, into preallocated [T, B, ·] buffers (one ``addmm`` for ``[U_z; U_r]`` and one for
``U`` per step), and walks back through time by hand: per step only the gradients w.r.t.
``P_t`` and ``h_{t−1}``; the recurrent weight gradients are formed at the end with ONE
matmul each over all ``T·B`` rows. The per-step forward ops are the same ops, in the same
order, as :class:`nmt.models.gru_encdec.GatedUnit`, so the outputs match the plain loop
bit for bit. :func:`gated_recurrence_loop` is that plain autograd loop, kept for tests and
the benchmark.
"""
from __future__ import annotations

import torch
from torch import Tensor


class GatedRecurrenceFunction(torch.autograd.Function):
    """Inputs: ``proj`` [B, T, 3H], ``h0`` [B, H], ``U_zr`` [2H, H], ``U`` [H, H], ``mask`` [B, T] bool or None.

    Output: all states [B, T, H] (the last state is ``states[:, -1]``: masked steps carry ``h``).
    """

    @staticmethod
    def forward(ctx, proj: Tensor, h0: Tensor, U_zr: Tensor, U: Tensor, mask: Tensor | None) -> Tensor:
        B, T, H3 = proj.shape
        H = H3 // 3
        new = proj.new_empty
        hs = new(T + 1, B, H)        # h_0 … h_T
        zr = new(T, B, 2 * H)        # σ gates z, r
        cand = new(T, B, H)          # h̃
        rh = new(T, B, H)            # r ⊙ h_{t−1}, the input of U
        tmp = new(B, H)
        hs[0].copy_(h0)
        U_zr_t, U_t = U_zr.t(), U.t()
        p_t = proj.unbind(1)
        hs_t, zr_t, cand_t, rh_t = hs.unbind(0), zr.unbind(0), cand.unbind(0), rh.unbind(0)
        m_t = mask.unsqueeze(-1).unbind(1) if mask is not None else None
        addmm, sigmoid, mul, tanh = torch.addmm, torch.sigmoid, torch.mul, torch.tanh
        h = hs_t[0]
        for t in range(T):
            p = p_t[t]
            g = sigmoid(addmm(p[:, :2 * H], h, U_zr_t), out=zr_t[t])
            z, r = g[:, :H], g[:, H:]
            x = mul(r, h, out=rh_t[t])
            c = tanh(addmm(p[:, 2 * H:], x, U_t), out=cand_t[t])
            d = torch.sub(h, c, out=tmp).mul_(z)
            if m_t is None:
                h = torch.add(c, d, out=hs_t[t + 1])
            else:
                h = torch.where(m_t[t], torch.add(c, d, out=tmp), h, out=hs_t[t + 1])
        ctx.has_mask = mask is not None
        ctx.save_for_backward(hs, zr, cand, rh, U_zr, U, mask if mask is not None else proj.new_empty(0))
        return hs[1:].transpose(0, 1)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, d_states: Tensor):
        hs, zr, cand, rh, U_zr, U, mask = ctx.saved_tensors
        T, B, H = cand.shape
        dP = hs.new_empty(T, B, 3 * H)   # gradient w.r.t. proj, time-major
        d_out = d_states.transpose(0, 1)  # [T, B, H] view
        dh = hs.new_zeros(B, H)
        m = mask.unsqueeze(-1).to(hs.dtype) if ctx.has_mask else None  # [B, T, 1]
        # every factor that does not depend on the incoming gradient, for all steps at once
        z_all = zr[:, :, :H]
        omz = 1 - z_all                                   # ∂h_t/∂h̃
        dtanh = 1 - cand * cand                           # tanh'
        sg = zr * (1 - zr)                                # σ' of z and r
        hmc_sz = (hs[:-1] - cand).mul_(sg[:, :, :H])      # ∂h_t/∂z · σ'(z)
        h_sr = hs[:-1] * sg[:, :, H:]                     # ∂(r⊙h)/∂r · σ'(r)
        r_all = zr[:, :, H:]
        z_t, r_t, omz_t, dtanh_t, hmc_sz_t, h_sr_t = (v.unbind(0) for v in (z_all, r_all, omz, dtanh, hmc_sz, h_sr))
        dP_t, d_out_t = dP.unbind(0), d_out.unbind(0)
        mm, addmm, mul = torch.mm, torch.addmm, torch.mul
        for t in range(T - 1, -1, -1):
            dh = dh + d_out_t[t]
            if m is not None:
                mt = m[:, t]
                carry = dh * (1 - mt)     # flows straight to h_{t−1} where the step was padding
                dh = dh * mt
            dp = dP_t[t]
            d_a = mul(dh, omz_t[t], out=dp[:, 2 * H:]).mul_(dtanh_t[t])   # through (1 − z) and tanh
            d_rh = mm(d_a, U)
            mul(dh, hmc_sz_t[t], out=dp[:, :H])                           # through z
            mul(d_rh, h_sr_t[t], out=dp[:, H:2 * H])                      # through r
            dh_prev = addmm(dh * z_t[t], dp[:, :2 * H], U_zr).addcmul_(d_rh, r_t[t])
            if m is not None:
                dh_prev = dh_prev.add_(carry)
            dh = dh_prev
        flat = T * B
        d_U_zr = mm(dP[:, :, :2 * H].reshape(flat, 2 * H).t(), hs[:-1].reshape(flat, H))
        d_U = mm(dP[:, :, 2 * H:].reshape(flat, H).t(), rh.reshape(flat, H))
        return dP.transpose(0, 1), dh, d_U_zr, d_U, None


def gated_recurrence(proj: Tensor, h0: Tensor, U_zr: Tensor, U: Tensor, mask: Tensor | None = None) -> Tensor:
    """All states [B, T, H] of the faithful gated unit over ``proj`` [B, T, 3H] (fused, hand-written BPTT)."""
    if proj.shape[1] == 0:
        return proj.new_empty(proj.shape[0], 0, h0.shape[1])
    # Under autocast (bf16/fp16) the recurrence itself runs in float32: the hand-written backward
    # needs one dtype for its buffers and weights, and the state is the numerically touchy part.
    dtype = torch.float32 if proj.dtype in (torch.bfloat16, torch.float16) or torch.is_autocast_enabled(
        proj.device.type) else proj.dtype
    with torch.autocast(device_type=proj.device.type, enabled=False):
        return GatedRecurrenceFunction.apply(proj.to(dtype), h0.to(dtype), U_zr.to(dtype), U.to(dtype), mask)


def gated_recurrence_loop(proj: Tensor, h0: Tensor, U_zr: Tensor, U: Tensor, mask: Tensor | None = None) -> Tensor:
    """The same as :func:`gated_recurrence`, as a plain Python loop recorded op by op by autograd."""
    H = h0.shape[1]
    h = h0
    outputs = []
    for t in range(proj.shape[1]):
        p = proj[:, t]
        g = torch.sigmoid(torch.addmm(p[:, :2 * H], h, U_zr.t()))
        z, r = g[:, :H], g[:, H:]
        c = torch.tanh(torch.addmm(p[:, 2 * H:], r * h, U.t()))
        h_new = c + z * (h - c)
        if mask is not None:
            h_new = torch.where(mask[:, t:t + 1], h_new, h)
        outputs.append(h_new)
        h = h_new
    if not outputs:
        return proj.new_empty(proj.shape[0], 0, H)
    return torch.stack(outputs, 1)

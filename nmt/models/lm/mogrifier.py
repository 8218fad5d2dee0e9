"""Mogrifier LSTM language model (Melis, Kočiský & Blunsom, ICLR 2020).

Before each LSTM step the input ``x`` and the previous output ``h_prev`` gate
each other for ``r`` rounds (paper eq. 1–2), with ``x^{-1} = x``, ``h^0 = h_prev``::

    x^i = 2σ(Q^i h^{i-1}) ⊙ x^{i-2}     for odd  i ∈ [1 … r]
    h^i = 2σ(R^i x^{i-1}) ⊙ h^{i-2}     for even i ∈ [1 … r]

and the LSTM step then reads the highest-indexed ``x↑``, ``h↑`` (the cell
``c_prev`` is not gated; the new ``h`` is the LSTM's output). ``r = 0`` is the
plain LSTM. ``Q^i``/``R^i`` are full matrices or, with ``rank = k > 0``,
products ``Q^i_left Q^i_right`` of rank ``k``. Each gate has a bias (zero at
init), as in the authors' released code (DeepMind ``lamb``: ``x *= 2σ(affine(h))``).

``zigzag = False`` is the paper's "no zigzag" ablation as we read it: the
rounds no longer feed each other — every ``x``-gate reads the original
``h_prev`` and every ``h``-gate the original ``x``::

    x↑ = x ⊙ Π_{odd i} 2σ(Q^i h_prev),   h↑ = h_prev ⊙ Π_{even i} 2σ(R^i x)

Implementation: the LSTM weights live in an ``nn.LSTM`` (same parameter
names as :class:`~nmt.models.lm.lstm.LSTMLM`, so an LSTM checkpoint loads
into a Mogrifier); with ``r = 0`` the fused ``nn.LSTM`` kernel runs, hence
outputs identical to the LSTM. With ``r > 0`` each layer runs
:class:`MogrifierLayerFunction`, a time loop with hand-written BPTT: the
gate matrices (low-rank products multiplied out, the factor ½ of
``2σ(a) = 1 + tanh(a/2)`` folded in) are formed once per call, each step
costs ``r`` × (addmm, tanh, addcmul) plus one fused gate matmul over
``[x↑; h↑]`` and the LSTM point-wise ops, written into preallocated buffers
without autograd bookkeeping.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from nmt.core.config import field
from nmt.models.lm.base import run_lstm
from nmt.models.lm.lstm import LSTMConfig, LSTMLM


@dataclass
class MogrifierConfig(LSTMConfig):
    rounds: int = field(5, help="mogrifier rounds r (0 = plain LSTM)")
    rank: int = field(0, help="rank k of the factorised Q^i, R^i (0 = full rank)")
    zigzag: bool = field(True, help="alternate x/h updates (paper); false = the 'no zigzag' ablation")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rounds < 0 or self.rank < 0:
            raise ValueError("rounds and rank must be >= 0")


# Mogrifier paper: two-layer ("d2") models, r = 5 rounds, low-rank Q/R, tied embeddings. Sizes,
# the rank k and the dropouts were tuned per dataset in the paper and are not reproduced here
# (k = 32 is a placeholder). ``mogrifier-1x128`` matches the RMN paper's size for comparisons.
_PAPER = {"arch": "mogrifier", "num_layers": 2, "rounds": 5, "rank": 32, "zigzag": True,
          "tie_embeddings": True, "init": "default"}
PRESETS: dict[str, dict] = {
    "mogrifier-paper": dict(_PAPER),
    "mogrifier-paper-fullrank": {**_PAPER, "rank": 0},
    "mogrifier-paper-nozigzag": {**_PAPER, "zigzag": False},
    "mogrifier-1x128": {"arch": "mogrifier", "emb_dim": 128, "hidden_dim": 128, "num_layers": 1, "rounds": 5,
                        "rank": 0, "init": "uniform"},
}


class MogrifierGate(nn.Module):
    """An affine map ``in_dim → out_dim``, full (``weight`` [out, in]) or rank-k
    (``left`` [out, k] @ ``right`` [k, in]); plus a bias [out]."""

    def __init__(self, in_dim: int, out_dim: int, rank: int):
        super().__init__()
        self.rank = rank if 0 < rank < min(in_dim, out_dim) else 0
        if self.rank:
            self.left = nn.Parameter(torch.empty(out_dim, self.rank))
            self.right = nn.Parameter(torch.empty(self.rank, in_dim))
        else:
            self.weight = nn.Parameter(torch.empty(out_dim, in_dim))
        self.bias = nn.Parameter(torch.zeros(out_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # PyTorch's Linear default (kaiming-uniform, a=√5 ⇒ U(±1/√fan_in)); for the
        # factorised form each factor gets U(±1/√fan_in) of its own input.
        with torch.no_grad():
            if self.rank:
                bound_r = 1.0 / self.right.size(1) ** 0.5
                bound_l = 1.0 / self.rank ** 0.5
                self.right.uniform_(-bound_r, bound_r)
                self.left.uniform_(-bound_l, bound_l)
            else:
                bound = 1.0 / self.weight.size(1) ** 0.5
                self.weight.uniform_(-bound, bound)
            self.bias.zero_()

    def matrix(self) -> Tensor:
        return self.left @ self.right if self.rank else self.weight


class MogrifierLM(LSTMLM):
    """State: ``(h, c)``, each [num_layers, B, hidden_dim], as :class:`LSTMLM`."""

    config_class = MogrifierConfig
    arch = "mogrifier"

    def __init__(self, cfg: MogrifierConfig, vocab_size: int):
        super().__init__(cfg, vocab_size)
        gates = nn.ModuleList()
        for layer in range(cfg.num_layers):
            in_dim = cfg.emb_dim if layer == 0 else cfg.hidden_dim
            rounds = nn.ModuleList()
            for i in range(1, cfg.rounds + 1):
                if i % 2 == 1:  # Q^i: h -> gate on x
                    rounds.append(MogrifierGate(cfg.hidden_dim, in_dim, cfg.rank))
                else:           # R^i: x -> gate on h
                    rounds.append(MogrifierGate(in_dim, cfg.hidden_dim, cfg.rank))
            gates.append(rounds)
        self.mogrifier = gates if cfg.rounds > 0 else None
        self.reset_parameters()
        self._force_loop = False  # tests: run the Python loop even when rounds == 0

    def reset_parameters(self) -> None:
        super().reset_parameters()  # uniform init covers the gate matrices too
        gates = getattr(self, "mogrifier", None)
        if gates is not None:
            for rounds in gates:
                for gate in rounds:
                    if self.cfg.init == "default":
                        gate.reset_parameters()
                    with torch.no_grad():
                        gate.bias.zero_()

    # ------------------------------------------------------------------ recurrence
    def recurrent(self, x: Tensor, state: tuple[Tensor, Tensor], lengths: Tensor | None
                  ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        if self.cfg.rounds == 0 and not self._force_loop:
            return run_lstm(self.rnn, x, state, lengths)  # the LSTM, bit for bit
        steps = x.size(1)
        ragged = lengths is not None and bool((lengths < steps).any())
        h0, c0 = state
        inp = x.transpose(0, 1).contiguous()  # time-major [T, B, in]
        h_last, c_last = [], []
        for layer in range(self.cfg.num_layers):
            if layer > 0 and self.cfg.dropout_hidden > 0 and self.training:
                inp = nn.functional.dropout(inp, self.cfg.dropout_hidden, True)
            out, hs, cs = self._layer(layer, inp, h0[layer], c0[layer], ragged)
            if ragged:
                idx = (lengths.clamp(min=1) - 1).to(out.device)
                rows = torch.arange(out.size(1), device=out.device)
                h_last.append(out[idx, rows])
                c_last.append(cs[idx, rows])
            else:
                h_last.append(hs)
                c_last.append(cs)
            inp = out
        return inp.transpose(0, 1), (torch.stack(h_last), torch.stack(c_last))

    def _layer(self, layer: int, x: Tensor, h: Tensor, c: Tensor, keep_cells: bool
               ) -> tuple[Tensor, Tensor, Tensor]:
        """One layer over time. ``x`` [T, B, in] → (outputs [T, B, H], h_T, c_T or all c [T, B, H])."""
        rnn = self.rnn
        w_cat_t = torch.cat([getattr(rnn, f"weight_ih_l{layer}"), getattr(rnn, f"weight_hh_l{layer}")], 1).t()
        bias = getattr(rnn, f"bias_ih_l{layer}") + getattr(rnn, f"bias_hh_l{layer}")
        kinds: list[bool] = []
        params: list[Tensor] = []
        if self.mogrifier is not None:
            for i, gate in enumerate(self.mogrifier[layer], start=1):
                kinds.append(i % 2 == 1)  # odd rounds gate x, even rounds gate h
                # 2σ(a) = 1 + tanh(a/2): fold the ½ into the matrix and bias once per call
                params += [(0.5 * gate.matrix()).t(), 0.5 * gate.bias]
        out, cells = MogrifierLayerFunction.apply(tuple(kinds), bool(self.cfg.zigzag), x.contiguous(),
                                                  h.contiguous(), c.contiguous(), w_cat_t.contiguous(),
                                                  bias, *[p.contiguous() for p in params])
        return out, out[-1], (cells if keep_cells else cells[-1])


class MogrifierLayerFunction(torch.autograd.Function):
    """One Mogrifier-LSTM layer over a whole sequence, with hand-written BPTT.

    Forward runs without autograd bookkeeping into preallocated buffers (the
    values every round produced, gate activations, cells); backward walks the
    steps in reverse with a handful of tensor ops per step and forms every
    weight gradient with one matmul over all ``T·B`` rows at the end.

    Inputs: ``kinds`` (per round: True = gates x, False = gates h), ``zigzag``,
    ``x`` [T, B, in], ``h0``, ``c0`` [B, H], ``w_cat_t`` [in + H, 4H] (= [W_ih W_hh]^T,
    gate order i, f, g, o), ``bias`` [4H], then per round ``m_t`` [src, dst] and
    ``b`` [dst] with the round computing ``v ← v ⊙ (1 + tanh(src @ m_t + b))``
    (i.e. 2σ with the ½ folded in). Outputs: ``h`` [T, B, H] and ``c`` [T, B, H].
    """

    @staticmethod
    def forward(ctx, kinds: tuple[bool, ...], zigzag: bool, x: Tensor, h0: Tensor, c0: Tensor,
                w_cat_t: Tensor, bias: Tensor, *round_params: Tensor) -> tuple[Tensor, Tensor]:
        steps, bsz, in_dim = x.shape
        hid = h0.size(1)
        n_x = sum(kinds)
        n_h = len(kinds) - n_x
        new = x.new_empty
        xv = new(steps, n_x, bsz, in_dim)       # x after each x-round
        hv = new(steps, n_h, bsz, hid)          # h_prev after each h-round
        us = [new(steps, bsz, in_dim if k else hid) for k in kinds]  # tanh(a) per round
        xh = new(steps, bsz, in_dim + hid)      # [x↑; h↑], input of the gate matmul
        act = new(steps, bsz, 4 * hid)          # σ(i), σ(f), tanh(g), σ(o)
        cells = new(steps, bsz, hid)
        tcs = new(steps, bsz, hid)              # tanh(c)
        out = new(steps, bsz, hid)
        pre = new(bsz, 4 * hid)
        g_sl = slice(2 * hid, 3 * hid)
        addmm, addcmul, mul, tanh, sigmoid, cat = (torch.addmm, torch.addcmul, torch.mul, torch.tanh,
                                                   torch.sigmoid, torch.cat)
        # per-step views, made once (indexing inside the loop costs more than the math)
        x_t, xh_t, act_t, cells_t, tcs_t, out_t = (v.unbind(0) for v in (x, xh, act, cells, tcs, out))
        a_i, a_f, a_g, a_o = (act[..., k * hid:(k + 1) * hid].unbind(0) for k in range(4))
        xv_t = [v.unbind(0) for v in xv.unbind(1)]
        hv_t = [v.unbind(0) for v in hv.unbind(1)]
        plan = []  # per round: (gates x?, matrix, bias, tanh(a) per step, gated value per step)
        kx = kh = 0
        for j, k in enumerate(kinds):
            plan.append((k, round_params[2 * j], round_params[2 * j + 1], us[j].unbind(0),
                         xv_t[kx] if k else hv_t[kh]))
            kx, kh = kx + k, kh + (not k)
        pre_g = pre[:, g_sl]
        h, c = h0, c0
        for t in range(steps):
            x_orig = xc = x_t[t]
            h_orig = hc = h
            for gates_x, m_t, b, u_s, v_s in plan:
                u = u_s[t]
                if gates_x:
                    addmm(b, hc if zigzag else h_orig, m_t, out=u).tanh_()
                    xc = addcmul(xc, xc, u, out=v_s[t])
                else:
                    addmm(b, xc if zigzag else x_orig, m_t, out=u).tanh_()
                    hc = addcmul(hc, hc, u, out=v_s[t])
            addmm(bias, cat([xc, hc], 1, out=xh_t[t]), w_cat_t, out=pre)
            sigmoid(pre, out=act_t[t])
            tanh(pre_g, out=a_g[t])
            c = mul(a_f[t], c, out=cells_t[t]).addcmul_(a_i[t], a_g[t])
            h = mul(a_o[t], tanh(c, out=tcs_t[t]), out=out_t[t])
        ctx.kinds, ctx.zigzag = kinds, zigzag
        ctx.save_for_backward(x, h0, c0, w_cat_t, xv, hv, xh, act, cells, tcs, out, *round_params, *us)
        return out, cells

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, d_out: Tensor, d_cells: Tensor):
        kinds, zigzag = ctx.kinds, ctx.zigzag
        n_r = len(kinds)
        saved = ctx.saved_tensors
        x, h0, c0, w_cat_t, xv, hv, xh, act, cells, tcs, out = saved[:11]
        round_params = saved[11:11 + 2 * n_r]
        us = saved[11 + 2 * n_r:]
        steps, bsz, in_dim = x.shape
        hid = h0.size(1)
        new = x.new_empty
        dg_all = new(steps, bsz, 4 * hid)             # d pre-activation of the LSTM gates
        da_all = [torch.empty_like(u) for u in us]    # d pre-activation of each round
        w_cat = w_cat_t.t().contiguous()                       # contiguous: faster per-step mm
        m_ts = [round_params[2 * j].t().contiguous() for j in range(n_r)]  # [dst, src]
        # index (into xv / hv) of the value each round reads and gates; -1 = the step's original
        src_idx, dst_idx = [], []
        kx = kh = 0
        for k in kinds:
            if k:
                src_idx.append(kh - 1 if zigzag else -1)
                dst_idx.append(kx - 1)
                kx += 1
            else:
                src_idx.append(kx - 1 if zigzag else -1)
                dst_idx.append(kh - 1)
                kh += 1
        i_sl, f_sl, g_sl = slice(0, hid), slice(hid, 2 * hid), slice(2 * hid, 3 * hid)
        # Everything that does not depend on the incoming gradient, for all steps at once:
        der = torch.addcmul(act, act, act, value=-1.0)             # σ' = s(1 − s) (i, f, o)
        g_all = act[..., g_sl]
        der[..., g_sl] = 1.0 - g_all * g_all                        # tanh' = 1 − g²
        c_prev_all = torch.cat([c0.unsqueeze(0), cells[:-1]], 0)
        h_prev_all = torch.cat([h0.unsqueeze(0), out[:-1]], 0)
        k_all = act[..., 3 * hid:] * (1.0 - tcs * tcs)                # dc += dh ⊙ o ⊙ (1 − tanh²c)
        zd_all = torch.cat([g_all, c_prev_all, act[..., i_sl]], -1).mul_(der[..., :3 * hid])  # di, df, dg per dc
        od_all = tcs * der[..., 3 * hid:]                           # do per dh
        p_all = []                                                   # d pre-act per d(gated value)
        for j, k in enumerate(kinds):
            if k:
                old = xv[:, dst_idx[j]] if dst_idx[j] >= 0 else x
            else:
                old = hv[:, dst_idx[j]] if dst_idx[j] >= 0 else h_prev_all
            p_all.append(old * (1.0 - us[j] * us[j]))
        dxh_all = new(steps, bsz, in_dim + hid)                      # d[x; h_prev] per step
        # per-step views, made once
        d_out_t, d_cells_t, k_t, od_t, a_f = (v.unbind(0) for v in (d_out, d_cells, k_all, od_all,
                                                                    act[..., f_sl]))
        zd_t = zd_all.view(steps, bsz, 3, hid).unbind(0)
        up3_t = dg_all[..., :3 * hid].view(steps, bsz, 3, hid).unbind(0)
        upo_t = dg_all[..., 3 * hid:].unbind(0)
        dg_t = dg_all.unbind(0)
        dxh_t = dxh_all.unbind(0)
        dxc_t = dxh_all[..., :in_dim].unbind(0)
        dhc_t = dxh_all[..., in_dim:].unbind(0)
        plan = [(kinds[j], m_ts[j], p_all[j].unbind(0), us[j].unbind(0), da_all[j].unbind(0))
                for j in range(n_r - 1, -1, -1)]
        dh = torch.zeros_like(h0)
        dc = torch.zeros_like(c0)
        mul, mm = torch.mul, torch.mm
        for t in range(steps - 1, -1, -1):
            dh = dh + d_out_t[t]
            dct = (dc + d_cells_t[t]).addcmul_(dh, k_t[t])
            mul(dct.unsqueeze(1), zd_t[t], out=up3_t[t])
            mul(dh, od_t[t], out=upo_t[t])
            dc = dct * a_f[t]
            mm(dg_t[t], w_cat, out=dxh_t[t])
            dxc, dhc = dxc_t[t], dhc_t[t]
            d_x_orig = d_h_orig = None  # no zigzag: gradient into the step's original x / h
            for gates_x, m_t, p_s, u_s, da_s in plan:
                da = da_s[t]
                if gates_x:
                    mul(dxc, p_s[t], out=da)
                    dxc.addcmul_(dxc, u_s[t])
                    if zigzag:
                        dhc.addmm_(da, m_t)
                    else:
                        d_h_orig = mm(da, m_t) if d_h_orig is None else d_h_orig.addmm_(da, m_t)
                else:
                    mul(dhc, p_s[t], out=da)
                    dhc.addcmul_(dhc, u_s[t])
                    if zigzag:
                        dxc.addmm_(da, m_t)
                    else:
                        d_x_orig = mm(da, m_t) if d_x_orig is None else d_x_orig.addmm_(da, m_t)
            if d_x_orig is not None:
                dxc.add_(d_x_orig)
            if d_h_orig is not None:
                dhc.add_(d_h_orig)
            dh = dhc
        dx_all = dxh_all[..., :in_dim]
        rows = steps * bsz
        d_w_cat_t = xh.view(rows, -1).t().mm(dg_all.view(rows, -1))
        d_bias = dg_all.view(rows, -1).sum(0)
        d_rounds: list[Tensor] = []
        for j, k in enumerate(kinds):
            if k:
                src = hv[:, src_idx[j]] if src_idx[j] >= 0 else h_prev_all
            else:
                src = xv[:, src_idx[j]] if src_idx[j] >= 0 else x
            da = da_all[j].view(rows, -1)
            d_rounds += [src.reshape(rows, -1).t().mm(da), da.sum(0)]
        return (None, None, dx_all, dh, dc, d_w_cat_t, d_bias, *d_rounds)

"""Recurrent Memory Networks (Tran, Bisazza & Monz, NAACL 2016): RM and RMR.

Memory Block (MB) at step t, over the ``n`` most recent input words
``x_{t-n+1} … x_t`` (the current one included) and the LSTM output ``h_t``:

* two embedding tables of the history, input memory ``m_i = M x_i`` and
  output memory ``c_i = C x_i`` (both [V, d], d = LSTM size);
* attention ``p_t = softmax(M_{t} h_t)`` over the memory slots, with the
  temporal matrix (``+tM``) ``p_t = softmax((M_{t} + T) h_t)``; ``T`` ∈ R^{n×d}
  is indexed by relative distance (row 0 = the current word), so a word at the
  same distance always meets the same row — the released code's convention;
* ``s_t = Σ_i p_{t,i} c_i``;
* composition: ``gating`` (``-g``), the GRU-like coupling of eq. 4–7::

      z = σ(W_z s + U_z h),  r = σ(W_r s + U_r h),
      ĥ = tanh(W s + U (r ⊙ h)),  h' = (1 − z) ⊙ h + z ⊙ ĥ

  or ``linear`` (``-l``): ``h' = s + H h`` (the released ``MemBlock``: a bias-free
  linear map of ``h`` plus ``s``, as in end-to-end memory networks).

Architectures: **RM** puts the MB on top of the LSTM stack and predicts from
``h'``; **RMR** adds one more LSTM on top of the MB (whose output feeds it) and
predicts from that LSTM.

Early steps (t < n) attend only to the t available words; padding and positions
before the sentence are masked out (their weight is exactly 0), and nothing
after t is ever visible. All steps are computed at once, no loop over t: one
embedding lookup of the context ``[history; tokens]`` per table, one batched
matmul ``h · M_ctxᵀ`` from which each step's band of n slots is gathered, and
one batched matmul of the scattered band of weights with ``C_ctx`` (the band
costs O(T·(T+n)) per row instead of O(T·n), a good trade at sentence
lengths, where a well-shaped matmul beats n·T tiny ones). The state carries the last n−1 token ids, so a
continued ``forward`` (stream mode, ``step``) sees a rolling memory across
windows; sentence-level training starts every batch from ``state=None``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor, nn

from nmt.core.config import field
from nmt.data.special import PAD
from nmt.models.lm.base import (INITS, LanguageModel, OutputLayer, State, TokenDropout, init_lstm_, length_mask,
                                run_lstm)

COMPOSITIONS = ("gating", "linear")


@dataclass
class RMNConfig:
    emb_dim: int = field(128, help="word embedding size (input of the bottom LSTM)")
    hidden_dim: int = field(128, help="LSTM size d; also the size of the memory embeddings M, C")
    num_layers: int = field(1, help="LSTM layers below the memory block (paper: 1 for its LMs, "
                                         "3 for sentence completion)")
    memory_size: int = field(15, help="n: words in the memory block, the current one included (paper: 15)")
    temporal: bool = field(True, help="temporal matrix T on the attention (+tM); false = -tM")
    temporal_output: bool = field(False, help="also add a temporal matrix to the output memory C (the released "
                                              "code does; not in the paper's equations)")
    composition: str = field("gating", help="'gating' (-g, GRU-like, eq. 4-7) or 'linear' (-l, s + H h)")
    dropout_emb: float = field(0.0, help="dropout on the input embeddings (paper's LMs: none)")
    dropout_hidden: float = field(0.0, help="dropout between LSTM layers and, in RMR, before the top LSTM")
    dropout_out: float = field(0.0, help="dropout before the softmax layer")
    tie_embeddings: bool = field(False, help="share input embedding and softmax weights")
    init: str = field("uniform", help="'uniform' (U(-init_range, init_range), released code) or 'default'")
    init_range: float = field(0.05, help="bound of the uniform init")
    forget_bias: float = field(1.0, help="initial forget-gate bias of the LSTMs")

    def __post_init__(self) -> None:
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.composition not in COMPOSITIONS:
            raise ValueError(f"composition must be one of {COMPOSITIONS}, got {self.composition!r}")
        if self.memory_size < 1 or self.num_layers < 1:
            raise ValueError("memory_size and num_layers must be >= 1")
        for name in ("dropout_emb", "dropout_hidden", "dropout_out"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must lie in [0, 1)")


_PAPER = {"emb_dim": 128, "hidden_dim": 128, "num_layers": 1, "memory_size": 15, "init": "uniform",
          "init_range": 0.05}

# RMN paper: d = 128, n = 15, one LSTM below the MB, U(-0.05, 0.05), no dropout. The paper's best
# LM is RM with the temporal matrix and gating, "RM(+tM-g)" (Penn Treebank: 123.5 test perplexity vs
# 126.1 for a 3-layer LSTM), hence ``rm-paper`` (= ``rm+tM-g``). ``rmn-paper-small`` is an older name
# kept so existing configs and resumed runs build what they always built: RMR(+tM-g), = ``rmr-paper``
# (not the paper's best LM).
# Sentence completion (MSR challenge, paper §6): the paper's 69.2 % is a unidirectional RM(+tM-g) with
# three LSTM layers below the memory block and dropout 0.3: ``rm-paper-msr``. Dropout placement (the
# embeddings, between the LSTM layers, before the softmax) is ours; d and n are the LM setting's.
_PAPER_MSR = {**_PAPER, "num_layers": 3, "dropout_emb": 0.3, "dropout_hidden": 0.3, "dropout_out": 0.3}
PRESETS: dict[str, dict] = {
    "rm-paper": {"arch": "rm", **_PAPER, "temporal": True, "composition": "gating"},
    "rmr-paper": {"arch": "rmr", **_PAPER, "temporal": True, "composition": "gating"},
    "rmn-paper-small": {"arch": "rmr", **_PAPER, "temporal": True, "composition": "gating"},  # legacy alias
    "rm-paper-msr": {"arch": "rm", **_PAPER_MSR, "temporal": True, "composition": "gating"},
    # the ablation grid, in the paper's names: ±tM (temporal matrix), -g gating / -l linear
    **{f"{arch}{sign}tM-{comp[0]}": {"arch": arch, **_PAPER, "temporal": sign == "+", "composition": comp}
       for arch in ("rm", "rmr") for sign in ("+", "-") for comp in COMPOSITIONS},
}


class MemoryBlock(nn.Module):
    """The MB: ``(h [B, T, d], tokens, valid, history) → (h' [B, T, d], p [B, T, n])``.

    ``p`` is ordered oldest → newest (slot n−1 = the current word)."""

    def __init__(self, vocab_size: int, dim: int, memory_size: int, temporal: bool, temporal_output: bool,
                 composition: str):
        super().__init__()
        self.n = memory_size
        self.composition = composition
        self.mem_in = nn.Embedding(vocab_size, dim)    # M
        self.mem_out = nn.Embedding(vocab_size, dim)   # C
        # temporal matrices, row k = relative distance k (0 = current word)
        self.temporal_in = nn.Parameter(torch.zeros(memory_size, dim)) if temporal else None
        self.temporal_out = nn.Parameter(torch.zeros(memory_size, dim)) if temporal_output else None
        if composition == "gating":
            self.gate_s = nn.Linear(dim, 3 * dim)  # [W_z; W_r; W] s
            self.gate_h = nn.Linear(dim, 2 * dim)  # [U_z; U_r] h
            self.cand_h = nn.Linear(dim, dim)      # U (r ⊙ h)
        else:
            self.lin_h = nn.Linear(dim, dim, bias=False)  # H h

    def forward(self, h: Tensor, tokens: Tensor, valid: Tensor, history: Tensor) -> tuple[Tensor, Tensor]:
        n = self.n
        bsz, steps, _ = h.shape
        ctx = torch.cat([history, tokens], 1)                       # [B, n-1+T]
        ctx_valid = torch.cat([history != PAD, valid], 1)
        # slot j of step t is context position t + j (oldest j = 0 … current j = n-1)
        idx = (torch.arange(steps, device=h.device).unsqueeze(1)
               + torch.arange(n, device=h.device)).expand(bsz, steps, n)
        # M_{t} h_t for all t with one batched matmul against the whole context, then the
        # band of the n slots of each step is gathered (cheap for sentence lengths)
        scores = torch.bmm(h, self.mem_in(ctx).transpose(1, 2)).gather(2, idx)  # [B, T, n]
        if self.temporal_in is not None:
            scores = scores + torch.matmul(h, self.temporal_in.flip(0).t())  # + T h_t
        masked = ~ctx_valid.unsqueeze(1).expand(bsz, steps, -1).gather(2, idx) | ~valid.unsqueeze(-1)
        empty = masked.all(-1, keepdim=True)                         # rows with nothing to attend to
        scores = scores.masked_fill(masked & ~empty, float("-inf"))
        p = torch.softmax(scores, -1).masked_fill(masked, 0.0)      # exact zeros, no NaN
        band = p.new_zeros(bsz, steps, ctx.size(1)).scatter(2, idx, p)  # p: bf16 under autocast
        s = torch.bmm(band, self.mem_out(ctx))                       # Σ_i p_i c_i: [B, T, d]
        if self.temporal_out is not None:
            s = s + torch.matmul(p, self.temporal_out.flip(0))
        if self.composition == "gating":
            wz, wr, wc = self.gate_s(s).chunk(3, -1)
            uz, ur = self.gate_h(h).chunk(2, -1)
            z = torch.sigmoid(wz + uz)
            r = torch.sigmoid(wr + ur)
            cand = torch.tanh(wc + self.cand_h(r * h))
            out = torch.lerp(h, cand.to(h.dtype), z.to(h.dtype))   # (1 − z) h + z ĥ; h is fp32 when the LSTM left bf16
        else:
            out = s + self.lin_h(h)
        return out, p


class RecurrentMemoryLM(LanguageModel):
    """Shared body of RM and RMR. State: ``{"lower": (h, c), "upper": (h, c) (RMR only),
    "memory": LongTensor[B, n-1]}`` (the last n−1 token ids; PAD = empty slot)."""

    config_class = RMNConfig
    has_top_lstm: ClassVar[bool] = False

    def __init__(self, cfg: RMNConfig, vocab_size: int):
        super().__init__(cfg, vocab_size)
        self.embedding = nn.Embedding(vocab_size, cfg.emb_dim)
        self.drop_emb = TokenDropout(cfg.dropout_emb)
        self.lstm = nn.LSTM(cfg.emb_dim, cfg.hidden_dim, cfg.num_layers, batch_first=True,
                            dropout=cfg.dropout_hidden if cfg.num_layers > 1 else 0.0)
        self.memory = MemoryBlock(vocab_size, cfg.hidden_dim, cfg.memory_size, cfg.temporal,
                                  cfg.temporal_output, cfg.composition)
        if self.has_top_lstm:
            self.drop_mid = TokenDropout(cfg.dropout_hidden)
            self.top = nn.LSTM(cfg.hidden_dim, cfg.hidden_dim, 1, batch_first=True)
        self.drop_out = TokenDropout(cfg.dropout_out)
        self.output = OutputLayer(cfg.hidden_dim, vocab_size, self.embedding if cfg.tie_embeddings else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        cfg = self.cfg
        with torch.no_grad():
            if cfg.init == "uniform":
                for p in self.parameters():
                    p.uniform_(-cfg.init_range, cfg.init_range)
            else:
                for p in (self.memory.temporal_in, self.memory.temporal_out):
                    if p is not None:
                        p.uniform_(-cfg.init_range, cfg.init_range)
        init_lstm_(self.lstm, cfg.init, cfg.init_range, cfg.forget_bias)
        if self.has_top_lstm:
            init_lstm_(self.top, cfg.init, cfg.init_range, cfg.forget_bias)

    def init_state(self, batch_size: int) -> dict[str, State]:
        cfg = self.cfg
        dev, dtype = self.device, self.embedding.weight.dtype
        z = torch.zeros(cfg.num_layers, batch_size, cfg.hidden_dim, device=dev, dtype=dtype)
        state: dict[str, State] = {"lower": (z, z.clone())}
        if self.has_top_lstm:
            z1 = torch.zeros(1, batch_size, cfg.hidden_dim, device=dev, dtype=dtype)
            state["upper"] = (z1, z1.clone())
        state["memory"] = torch.full((batch_size, cfg.memory_size - 1), PAD, dtype=torch.long, device=dev)
        return state

    def forward(self, tokens: Tensor, state: State = None, *, lengths: Tensor | None = None,
                return_attention: bool = False):
        """``(logits [B, T, V], state)``, plus attention [B, T, n] with ``return_attention``
        (slot k = the word k positions back, k = 0 the current word)."""
        bsz, steps = tokens.shape
        if state is None:
            state = self.init_state(bsz)
        valid = tokens != PAD
        if lengths is not None:
            valid = valid & length_mask(lengths.to(tokens.device), steps)
        x = self.drop_emb(self.embedding(tokens))
        h, lower = run_lstm(self.lstm, x, state["lower"], lengths)
        history = state["memory"]
        y, p = self.memory(h, tokens, valid, history)
        new_state: dict[str, State] = {"lower": lower}
        if self.has_top_lstm:
            y, new_state["upper"] = run_lstm(self.top, self.drop_mid(y), state["upper"], lengths)
        new_state["memory"] = self._next_history(history, tokens, lengths)
        logits = self.output(self.drop_out(y))
        if return_attention:
            return logits, new_state, p.flip(-1)
        return logits, new_state

    def _next_history(self, history: Tensor, tokens: Tensor, lengths: Tensor | None) -> Tensor:
        keep = history.size(1)
        ctx = torch.cat([history, tokens], 1)
        if lengths is None:
            return ctx[:, ctx.size(1) - keep:]
        idx = lengths.to(tokens.device).unsqueeze(1) + torch.arange(keep, device=tokens.device)
        return ctx.gather(1, idx)


class RMLM(RecurrentMemoryLM):
    """RM: LSTM stack → memory block → softmax."""

    arch = "rm"
    has_top_lstm = False


class RMRLM(RecurrentMemoryLM):
    """RMR: LSTM stack → memory block → LSTM → softmax."""

    arch = "rmr"
    has_top_lstm = True

"""The RNN Encoder–Decoder of Cho et al. (2014), with the paper's gated hidden unit.

Equations (paper §2.3 and appendix A), natural log everywhere:

* gated unit (eq. 5–8): ``r = σ(W_r x + U_r h)``, ``z = σ(W_z x + U_z h)``,
  ``h̃ = tanh(W x + U (r ⊙ h))``, ``h = z ⊙ h_prev + (1 − z) ⊙ h̃``.
  The reset gate multiplies ``h`` *before* ``U`` — unlike cuDNN and
  ``torch.nn.GRU``, which compute ``r ⊙ (U h + b)``. ``cell="torch"`` swaps in
  ``torch.nn.GRU`` for speed (a documented deviation).
* encoder summary ``c = tanh(V h_N)``; decoder start ``h'_0 = tanh(V' c)``.
* decoder: the same unit, whose gates and candidate also read ``c``
  (``C_z c``, ``C_r c``, ``C c``), input ``e(y_{t−1})``.
* deep output with maxout: ``s' = O_h h'_t + O_y e(y_{t−1}) + O_c c``,
  ``s_i = max(s'_{2i−1}, s'_{2i})`` (500 units pooling 2 in the paper), then the
  rank-100 factorised output matrix ``G = G_l G_r`` and a softmax.
* rank-100 factorised input matrices = 100-d word embeddings.
* init: N(0, 0.01²) for every weight, orthogonal recurrent matrices, zero biases.

Padding id is 0; sequences are right-padded.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.core.config import field
from nmt.data.special import PAD
from nmt.models.encdec_base import PairScoringModel, preset_config
from nmt.models.gru_recurrence import gated_recurrence, gated_recurrence_loop


@dataclass
class GRUEncDecConfig:
    emb_dim: int = field(100, help="word embedding size = rank of the factorised input matrices (paper: 100)")
    hidden_dim: int = field(1000, help="recurrent units in encoder and decoder (paper: 1000)")
    maxout_units: int = field(500, help="maxout units of the deep output layer (paper: 500)")
    maxout_pool: int = field(2, help="inputs pooled by each maxout unit (paper: 2)")
    output_rank: int = field(100, help="rank of the factorised output matrix G = G_l G_r (paper: 100)")
    cell: str = field("faithful", help="'faithful' (reset gate before U, eq. 8) or 'torch' (torch.nn.GRU, faster, "
                                       "reset after U)")
    init_std: float = field(0.01, help="std of the N(0, std²) weight init (paper: 0.01)")
    dropout: float = field(0.0, help="dropout on embeddings and the maxout output (paper: none)")


PRESETS: dict[str, dict] = {
    "cho2014": {},  # the paper's sizes
    "cpu-base": {"hidden_dim": 500, "maxout_units": 250},
    "cpu-small": {"hidden_dim": 256, "maxout_units": 256, "emb_dim": 100},
    "tiny": {"hidden_dim": 32, "maxout_units": 16, "emb_dim": 16, "output_rank": 16},
}


def _orthogonal_(weight: Tensor, blocks: int) -> None:
    """Orthogonal init of each square [H, H] block of a stacked recurrent matrix."""
    hidden = weight.shape[1]
    with torch.no_grad():
        for i in range(blocks):
            nn.init.orthogonal_(weight[i * hidden:(i + 1) * hidden])


class GatedUnit(nn.Module):
    """One step of the gated hidden unit (eq. 5–8); input projections are precomputed.

    ``x_proj`` holds ``[W_z x; W_r x; W x]`` (+ context terms for the decoder),
    shape [B, 3H]. ``U_zr`` is stacked ``[U_z; U_r]``.
    """

    def __init__(self, hidden: int):
        super().__init__()
        self.hidden = hidden
        self.U_zr = nn.Linear(hidden, 2 * hidden, bias=False)
        self.U = nn.Linear(hidden, hidden, bias=False)
        self.fused = True  # sequence(): fused autograd Function (True) or the plain autograd loop

    def forward(self, x_proj: Tensor, h: Tensor) -> Tensor:
        H = self.hidden
        zr = torch.sigmoid(torch.addmm(x_proj[:, :2 * H], h, self.U_zr.weight.t()))
        z, r = zr[:, :H], zr[:, H:]
        candidate = torch.tanh(torch.addmm(x_proj[:, 2 * H:], r * h, self.U.weight.t()))
        return candidate + z * (h - candidate)  # = z ⊙ h + (1 − z) ⊙ h̃

    def sequence(self, proj: Tensor, h0: Tensor, mask: Tensor | None) -> Tensor:
        """All states [B, T, H] over ``proj`` [B, T, 3H]; ``mask`` [B, T] (False = padding, h carried).

        ``fused`` (default) runs :class:`~nmt.models.gru_recurrence.GatedRecurrenceFunction`
        (graph-free forward, hand-written BPTT); ``fused = False`` records the plain loop op by op.
        """
        fn = gated_recurrence if self.fused else gated_recurrence_loop
        return fn(proj, h0, self.U_zr.weight, self.U.weight, mask)


class _Recurrence(nn.Module):
    """Runs a gated unit (faithful) or ``torch.nn.GRU`` over precomputed input projections."""

    def __init__(self, in_dim: int, hidden: int, cell: str):
        super().__init__()
        self.cell_kind = cell
        self.hidden = hidden
        if cell == "faithful":
            self.W = nn.Linear(in_dim, 3 * hidden)
            self.unit = GatedUnit(hidden)
        elif cell == "torch":
            self.gru = nn.GRU(in_dim, hidden, batch_first=True)
        else:
            raise ValueError(f"unknown cell {cell!r}: expected 'faithful' or 'torch'")

    def init_weights(self, std: float) -> None:
        if self.cell_kind == "faithful":
            nn.init.normal_(self.W.weight, 0.0, std)
            nn.init.zeros_(self.W.bias)
            _orthogonal_(self.unit.U_zr.weight, 2)
            nn.init.orthogonal_(self.unit.U.weight)
        else:
            nn.init.normal_(self.gru.weight_ih_l0, 0.0, std)
            _orthogonal_(self.gru.weight_hh_l0, 3)
            nn.init.zeros_(self.gru.bias_ih_l0)
            nn.init.zeros_(self.gru.bias_hh_l0)

    def run(self, inputs: Tensor, h0: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
        """inputs [B, T, in]; mask [B, T] (True = real token). Returns (all states [B,T,H], last real state)."""
        if self.cell_kind == "torch":
            if mask is None:
                states, last = self.gru(inputs, h0.unsqueeze(0))
                return states, last.squeeze(0)
            lengths = mask.sum(1).cpu()
            packed = nn.utils.rnn.pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
            out, last = self.gru(packed, h0.unsqueeze(0))
            states, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=inputs.shape[1])
            return states, last.squeeze(0)
        proj = self.W(inputs)  # [B, T, 3H], one matmul for all steps
        if inputs.shape[1] == 0:
            return proj.new_empty(inputs.shape[0], 0, self.hidden), h0
        states = self.unit.sequence(proj, h0, mask)
        return states, states[:, -1]  # padded steps carry h, so the last column is the last real state

    def step(self, x: Tensor, h: Tensor) -> Tensor:
        """One step for a single input vector per row: x [B, in], h [B, H]."""
        if self.cell_kind == "torch":
            return self.gru(x.unsqueeze(1), h.unsqueeze(0))[1].squeeze(0)
        return self.unit(self.W(x), h)


class GRUEncoderDecoder(PairScoringModel):
    """Cho et al. (2014) RNN Encoder–Decoder with a fixed-length summary ``c``."""

    def __init__(self, cfg: GRUEncDecConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        if cfg.maxout_units <= 0 or cfg.maxout_pool <= 0:
            raise ValueError("maxout_units and maxout_pool must be positive")
        self.cfg = cfg
        self.src_vocab_size = src_vocab_size
        self.tgt_vocab_size = tgt_vocab_size
        E, H = cfg.emb_dim, cfg.hidden_dim
        self.src_embed = nn.Embedding(src_vocab_size, E, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, E, padding_idx=PAD)
        self.encoder = _Recurrence(E, H, cfg.cell)
        self.summary = nn.Linear(H, H)  # V
        self.dec_init = nn.Linear(H, H)  # V'
        # decoder input e(y) (and c for the torch cell, which has no separate context matrices)
        self.decoder = _Recurrence(E if cfg.cell == "faithful" else E + H, H, cfg.cell)
        self.context_proj = nn.Linear(H, 3 * H, bias=False) if cfg.cell == "faithful" else None  # [C_z; C_r; C]
        self.out_h = nn.Linear(H, cfg.maxout_units * cfg.maxout_pool)  # O_h (bias here)
        self.out_y = nn.Linear(E, cfg.maxout_units * cfg.maxout_pool, bias=False)  # O_y
        self.out_c = nn.Linear(H, cfg.maxout_units * cfg.maxout_pool, bias=False)  # O_c
        self.out_rank = nn.Linear(cfg.maxout_units, cfg.output_rank, bias=False)  # G_r
        self.out_vocab = nn.Linear(cfg.output_rank, tgt_vocab_size)  # G_l
        self.dropout = nn.Dropout(cfg.dropout)
        self.reset_parameters()

    @classmethod
    def from_config(cls, cfg: GRUEncDecConfig, src_vocab_size: int, tgt_vocab_size: int) -> "GRUEncoderDecoder":
        return cls(cfg, src_vocab_size, tgt_vocab_size)

    def reset_parameters(self) -> None:
        std = self.cfg.init_std
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
        for emb in (self.src_embed, self.tgt_embed):
            with torch.no_grad():
                emb.weight[PAD].zero_()
        self.encoder.init_weights(std)
        self.decoder.init_weights(std)

    # -- encoder ---------------------------------------------------------------------------------
    def encode(self, src: Tensor) -> Tensor:
        """src [B, S] (PAD-padded) → summary c [B, H]."""
        mask = src != PAD
        x = self.dropout(self.src_embed(src))
        h0 = x.new_zeros(src.shape[0], self.cfg.hidden_dim)
        _, last = self.encoder.run(x, h0, mask if not bool(mask.all()) else None)
        return torch.tanh(self.summary(last))

    def init_decoder(self, c: Tensor) -> Tensor:
        return torch.tanh(self.dec_init(c))

    # -- decoder ---------------------------------------------------------------------------------
    def _maxout_logits(self, h: Tensor, y_emb: Tensor, c_out: Tensor) -> Tensor:
        s = self.out_h(h) + self.out_y(y_emb) + c_out
        s = s.view(*s.shape[:-1], self.cfg.maxout_units, self.cfg.maxout_pool).amax(-1)
        return self.out_vocab(self.out_rank(self.dropout(s)))

    def decode(self, c: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced decoder: tgt_in [B, T] starting with BOS → logits [B, T, V]."""
        y = self.dropout(self.tgt_embed(tgt_in))
        h0 = self.init_decoder(c)
        T = tgt_in.shape[1]
        if self.cfg.cell == "faithful":
            states = self._decode_faithful(y, c, h0)
        else:
            inp = torch.cat([y, c.unsqueeze(1).expand(-1, T, -1)], -1)
            states, _ = self.decoder.run(inp, h0, None)
        return self._maxout_logits(states, y, self.out_c(c).unsqueeze(1))

    def _decode_faithful(self, y: Tensor, c: Tensor, h0: Tensor) -> Tensor:
        assert self.context_proj is not None
        rec = self.decoder
        proj = rec.W(y) + self.context_proj(c).unsqueeze(1)  # all input and context terms at once
        return rec.unit.sequence(proj, h0, None)

    def decode_step(self, prev: Tensor, h: Tensor, c: Tensor, c_cache: tuple[Tensor, Tensor] | None = None
                    ) -> tuple[Tensor, Tensor]:
        """One decoder step: prev tokens [B], state [B, H], summary [B, H] → (log-probs [B, V], new state).

        ``c_cache`` = ``precompute_context(c)`` avoids recomputing the context terms at every step.
        """
        y = self.tgt_embed(prev)
        ctx, c_out = c_cache if c_cache is not None else self.precompute_context(c)
        if self.cfg.cell == "faithful":
            h = self.decoder.unit(self.decoder.W(y) + ctx, h)
        else:
            h = self.decoder.step(torch.cat([y, c], -1), h)
        return F.log_softmax(self._maxout_logits(h, y, c_out), -1), h

    def precompute_context(self, c: Tensor) -> tuple[Tensor, Tensor]:
        ctx = self.context_proj(c) if self.context_proj is not None else c.new_zeros(0)
        return ctx, self.out_c(c)

    # -- the step interface of nmt.translation.search.StepModel (no "attn": the summary c is fixed) ---------------
    def start(self, src: Tensor) -> dict[str, Tensor]:
        """src [B, S] → decoder state {"h", "c_out", and "ctx" (faithful cell) or "c" (torch cell)}, rows = dim 0."""
        c = self.encode(src)
        ctx, c_out = self.precompute_context(c)
        state = {"h": self.init_decoder(c), "c_out": c_out}
        state.update({"ctx": ctx} if self.cfg.cell == "faithful" else {"c": c})
        return state

    def step(self, prev: Tensor, state: dict[str, Tensor]) -> tuple[Tensor, dict[str, Tensor]]:
        """prev [N] → (log-probs [N, V], the state with the new "h"); the same arithmetic as decode_step."""
        y = self.tgt_embed(prev)
        if self.cfg.cell == "faithful":
            h = self.decoder.unit(self.decoder.W(y) + state["ctx"], state["h"])
        else:
            h = self.decoder.step(torch.cat([y, state["c"]], -1), state["h"])
        return F.log_softmax(self._maxout_logits(h, y, state["c_out"]), -1), {**state, "h": h}

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Logits [B, T, V] of the target given the source (teacher forcing)."""
        return self.decode(self.encode(src), tgt_in)



def build_model(cfg: GRUEncDecConfig, src_vocab_size: int, tgt_vocab_size: int) -> GRUEncoderDecoder:
    return GRUEncoderDecoder.from_config(cfg, src_vocab_size, tgt_vocab_size)


def config_with_preset(preset: str | None, **overrides) -> GRUEncDecConfig:
    return preset_config(GRUEncDecConfig(), PRESETS, "cho2014", preset, **overrides)

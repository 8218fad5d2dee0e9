"""RNNsearch (Bahdanau, Cho & Bengio, 2015): the encoder–decoder that learns to align (soft attention).

Equations of the paper's appendix A (arXiv 1409.0473; biases omitted there, present here and
initialised to zero), natural log everywhere:

* encoder (A.2.1): a bidirectional RNN of gated units over the shared word embedding ``Ē x_i``;
  the annotation of word ``j`` is ``h_j = [→h_j; ←h_j]`` (size 2n).
* decoder start: ``s_0 = tanh(W_s ←h_1)``.
* alignment model: ``e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j)`` (``U_a h_j`` computed once per sentence),
  ``α_ij = exp(e_ij) / Σ_k exp(e_ik)`` over the non-PAD source positions, ``c_i = Σ_j α_ij h_j``.
* decoder (A.2.2): ``s_i = (1 − z_i) ∘ s_{i−1} + z_i ∘ s̃_i``,
  ``s̃_i = tanh(W E y_{i−1} + U[r_i ∘ s_{i−1}] + C c_i)``,
  ``z_i = σ(W_z E y_{i−1} + U_z s_{i−1} + C_z c_i)``, ``r_i = σ(W_r E y_{i−1} + U_r s_{i−1} + C_r c_i)``.
* deep output with maxout: ``t̃_i = U_o s_{i−1} + V_o E y_{i−1} + C_o c_i``,
  ``t_i = [max(t̃_{i,2j−1}, t̃_{i,2j})]_{j=1..l}``, ``p(y_i | s_i, y_{i−1}, c_i) ∝ exp(y_iᵀ W_o t_i)``.
  The readout reads ``s_{i−1}`` as the appendix writes it (GroundHog's decoder does the same: it
  prepends the initial state and drops the last one before the readout).

The gated unit is :class:`nmt.models.gru_encdec.GatedUnit` (and its fused recurrence), which keeps
Cho et al. (2014)'s convention ``h = z ∘ h_prev + (1 − z) ∘ h̃``: its ``z`` is the paper's ``1 − z_i``,
i.e. its update-gate parameters (``W_z``, ``U_z``, ``C_z``, bias) are the paper's negated
(``σ(−a) = 1 − σ(a)``). The model family is the same, and so is the initial distribution (the
init below is symmetric about zero). ``tests/nmt/models/test_rnnsearch.py`` checks the equations as written
above against this mapping.

Init (appendix B.1): recurrent matrices ``U, U_z, U_r`` (encoder both ways, decoder) random
orthogonal; ``W_a`` and ``U_a`` N(0, 0.001²); ``v_a`` and every bias zero; every other weight
N(0, 0.01²). Padding id is 0; sequences are right-padded. Sizes: ``m`` = ``emb_dim``, ``n`` =
``hidden_dim``, ``n'`` = ``align_dim``, ``l`` = ``maxout_units``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.core.config import field
from nmt.data.special import PAD
from nmt.models.encdec_base import PairScoringModel, preset_config
from nmt.models.gru_encdec import GatedUnit


@dataclass
class RNNsearchConfig:
    emb_dim: int = field(620, help="word embedding size m (paper: 620)")
    hidden_dim: int = field(1000, help="gated units n of each encoder direction and of the decoder (paper: 1000)")
    align_dim: int = field(1000, help="hidden size n' of the alignment model (paper: 1000)")
    maxout_units: int = field(500, help="maxout units l of the deep output (paper: 500)")
    maxout_pool: int = field(2, help="inputs pooled by each maxout unit (paper: 2)")
    init_std: float = field(0.01, help="std of the N(0, std²) init of the other weights (paper: 0.01)")
    align_init_std: float = field(0.001, help="std of the N(0, std²) init of W_a and U_a (paper: 0.001)")
    dropout: float = field(0.0, help="dropout on embeddings and the maxout output (paper: none)")


PRESETS: dict[str, dict] = {
    "rnnsearch-paper": {},  # the paper's sizes
    "rnnsearch-cpu-base": {"emb_dim": 256, "hidden_dim": 500, "align_dim": 500, "maxout_units": 250},
    "rnnsearch-cpu-small": {"emb_dim": 128, "hidden_dim": 256, "align_dim": 256, "maxout_units": 256},
    "rnnsearch-tiny": {"emb_dim": 16, "hidden_dim": 32, "align_dim": 24, "maxout_units": 16},
}


def _stacked_orthogonal_(weight: Tensor) -> None:
    """Each square [H, H] block of a stacked recurrent matrix [k·H, H] random orthogonal."""
    hidden = weight.shape[1]
    with torch.no_grad():
        for lo in range(0, weight.shape[0], hidden):
            nn.init.orthogonal_(weight[lo:lo + hidden])


class RNNsearch(PairScoringModel):
    """Bahdanau et al. (2015) RNNsearch; the same training/scoring methods as GRUEncoderDecoder, plus start/step."""

    arch = "rnnsearch"

    def __init__(self, cfg: RNNsearchConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        if cfg.maxout_units <= 0 or cfg.maxout_pool <= 0:
            raise ValueError("maxout_units and maxout_pool must be positive")
        self.cfg = cfg
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        E, H, A, MP = cfg.emb_dim, cfg.hidden_dim, cfg.align_dim, cfg.maxout_units * cfg.maxout_pool
        self.src_embed = nn.Embedding(src_vocab_size, E, padding_idx=PAD)  # Ē, shared by both directions
        self.tgt_embed = nn.Embedding(tgt_vocab_size, E, padding_idx=PAD)  # E
        self.fwd_W = nn.Linear(E, 3 * H)  # [→W_z; →W_r; →W] (+ bias)
        self.fwd_unit = GatedUnit(H)  # [→U_z; →U_r], →U
        self.bwd_W = nn.Linear(E, 3 * H)
        self.bwd_unit = GatedUnit(H)
        self.init_state = nn.Linear(H, H)  # W_s
        self.att_W = nn.Linear(H, A, bias=False)  # W_a
        self.att_U = nn.Linear(2 * H, A)  # U_a (+ bias)
        self.att_v = nn.Linear(A, 1, bias=False)  # v_a
        self.dec_W = nn.Linear(E, 3 * H)  # [W_z; W_r; W] (+ bias)
        self.dec_C = nn.Linear(2 * H, 3 * H, bias=False)  # [C_z; C_r; C]
        self.dec_unit = GatedUnit(H)  # [U_z; U_r], U
        self.out_s = nn.Linear(H, MP)  # U_o (+ bias)
        self.out_y = nn.Linear(E, MP, bias=False)  # V_o
        self.out_c = nn.Linear(2 * H, MP, bias=False)  # C_o
        self.out_vocab = nn.Linear(cfg.maxout_units, tgt_vocab_size)  # W_o (+ bias)
        self.dropout = nn.Dropout(cfg.dropout)
        self.reset_parameters()

    @classmethod
    def from_config(cls, cfg: RNNsearchConfig, src_vocab_size: int, tgt_vocab_size: int) -> "RNNsearch":
        return cls(cfg, src_vocab_size, tgt_vocab_size)

    def reset_parameters(self) -> None:
        """Appendix B.1: orthogonal U's, N(0, 0.001²) W_a/U_a, zero v_a and biases, N(0, 0.01²) the rest."""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, self.cfg.init_std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
        for unit in (self.fwd_unit, self.bwd_unit, self.dec_unit):
            _stacked_orthogonal_(unit.U_zr.weight)
            _stacked_orthogonal_(unit.U.weight)
        nn.init.normal_(self.att_W.weight, 0.0, self.cfg.align_init_std)
        nn.init.normal_(self.att_U.weight, 0.0, self.cfg.align_init_std)
        nn.init.zeros_(self.att_v.weight)
        with torch.no_grad():
            self.src_embed.weight[PAD].zero_()
            self.tgt_embed.weight[PAD].zero_()

    # -- encoder ---------------------------------------------------------------------------------
    def annotate(self, src: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """src [B, S] → (annotations h_j [B, S, 2H], ←h_1 [B, H], mask [B, S] True on real tokens)."""
        mask = src != PAD
        full = bool(mask.all())
        x = self.dropout(self.src_embed(src))
        h0 = x.new_zeros(src.shape[0], self.cfg.hidden_dim)
        fwd = self.fwd_unit.sequence(self.fwd_W(x), h0, None if full else mask)
        # the backward RNN reads each row's real words last to first: reverse within the row's length
        lengths = mask.sum(1, keepdim=True)
        pos = torch.arange(src.shape[1], device=src.device).unsqueeze(0)
        rev = torch.where(pos < lengths, lengths - 1 - pos, pos)  # an involution: reverses back too
        x_rev = x.gather(1, rev.unsqueeze(-1).expand_as(x))
        bwd_rev = self.bwd_unit.sequence(self.bwd_W(x_rev), h0, None if full else mask)
        bwd = bwd_rev.gather(1, rev.unsqueeze(-1).expand_as(bwd_rev))
        return torch.cat([fwd, bwd], -1), bwd[:, 0], mask

    def encode(self, src: Tensor) -> Tensor:
        """A fixed-length vector per source [B, H]: ←h_1, the backward state the decoder starts from."""
        return self.annotate(src)[1]

    def start(self, src: Tensor) -> dict[str, Tensor]:
        """The step interface's start: {"s": s_0 [B,H], "ann" [B,S,2H], "keys": U_a h_j [B,S,A], "mask" [B,S]}."""
        ann, back_first, mask = self.annotate(src)
        return {"s": torch.tanh(self.init_state(back_first)), "ann": ann, "keys": self.att_U(ann), "mask": mask}

    # -- decoder ---------------------------------------------------------------------------------
    def attend(self, s_prev: Tensor, state: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """(c_i [N, 2H], α_i [N, S]) from s_{i−1} [N, H]: softmax of v_aᵀ tanh(W_a s + U_a h_j) over real j."""
        e = self.att_v(torch.tanh(state["keys"] + self.att_W(s_prev).unsqueeze(1))).squeeze(-1)
        alpha = torch.softmax(e.masked_fill(~state["mask"], float("-inf")), -1)
        return torch.bmm(alpha.unsqueeze(1), state["ann"]).squeeze(1), alpha

    def _readout(self, s_prev: Tensor, y_emb: Tensor, c: Tensor) -> Tensor:
        """Logits W_o t_i of t̃_i = U_o s_{i−1} + V_o E y_{i−1} + C_o c_i, maxout over consecutive pairs."""
        t = self.out_s(s_prev) + self.out_y(y_emb) + self.out_c(c)
        t = t.view(*t.shape[:-1], self.cfg.maxout_units, self.cfg.maxout_pool).amax(-1)
        return self.out_vocab(self.dropout(t))

    def step(self, prev: Tensor, state: dict[str, Tensor]) -> tuple[Tensor, dict[str, Tensor]]:
        """prev y_{i−1} [N] → (ln p(y_i) [N, V], the state with s_i and "attn" α_i [N, S])."""
        y = self.tgt_embed(prev)
        s_prev = state["s"]
        c, alpha = self.attend(s_prev, state)
        log_probs = F.log_softmax(self._readout(s_prev, y, c), -1)
        s = self.dec_unit(self.dec_W(y) + self.dec_C(c), s_prev)
        return log_probs, {**state, "s": s, "attn": alpha}

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Logits [B, T, V] of the target given the source (teacher forcing; tgt_in starts with BOS)."""
        state = self.start(src)
        y = self.dropout(self.tgt_embed(tgt_in))
        y_proj = self.dec_W(y)  # W E y_{i−1} for every step at once
        s, T = state["s"], tgt_in.shape[1]
        prev_states, contexts = [], []
        for i in range(T):
            c, _ = self.attend(s, state)
            prev_states.append(s)
            contexts.append(c)
            if i + 1 < T:  # s_T is not needed: the last readout reads s_{T−1}
                s = self.dec_unit(y_proj[:, i] + self.dec_C(c), s)
        return self._readout(torch.stack(prev_states, 1), y, torch.stack(contexts, 1))



def build_model(cfg: RNNsearchConfig, src_vocab_size: int, tgt_vocab_size: int) -> RNNsearch:
    return RNNsearch.from_config(cfg, src_vocab_size, tgt_vocab_size)


def config_with_preset(preset: str | None, **overrides) -> RNNsearchConfig:
    return preset_config(RNNsearchConfig(), PRESETS, "rnnsearch-paper", preset, **overrides)

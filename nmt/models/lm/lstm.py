"""Multi-layer LSTM language model (the baseline of both LM papers).

``x_t = E w_t`` → dropout → L stacked LSTM layers (dropout between layers) →
dropout → ``softmax(W h_t + b)``. LSTM gates as in ``torch.nn.LSTM``
(order i, f, g, o); the forget-gate bias starts at 1 (``b_ih + b_hh``).
Init ``uniform`` draws every weight from U(−0.05, 0.05) as in the RMN paper's
released code; ``default`` keeps PyTorch's initialisation.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from nmt.core.config import field
from nmt.models.lm.base import (INITS, LanguageModel, OutputLayer, State, TokenDropout, init_lstm_,
                                run_lstm)


@dataclass
class LSTMConfig:
    emb_dim: int = field(128, help="word embedding size")
    hidden_dim: int = field(128, help="LSTM units per layer")
    num_layers: int = field(1, help="stacked LSTM layers")
    dropout_emb: float = field(0.0, help="dropout on the input embeddings")
    dropout_hidden: float = field(0.0, help="dropout between LSTM layers")
    dropout_out: float = field(0.0, help="dropout on the last LSTM output, before the softmax layer")
    tie_embeddings: bool = field(False, help="share input embedding and softmax weights (a projection is added "
                                             "if hidden_dim != emb_dim)")
    init: str = field("uniform", help="'uniform' (U(-init_range, init_range), RMN paper) or 'default' (PyTorch)")
    init_range: float = field(0.05, help="bound of the uniform init")
    forget_bias: float = field(1.0, help="initial forget-gate bias")

    def __post_init__(self) -> None:
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.num_layers < 1 or self.hidden_dim < 1 or self.emb_dim < 1:
            raise ValueError("emb_dim, hidden_dim and num_layers must be positive")
        for name in ("dropout_emb", "dropout_hidden", "dropout_out"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must lie in [0, 1)")


# LSTM baselines at the RMN paper's size (d = 128; its released code: U(-0.05, 0.05), no dropout)
PRESETS: dict[str, dict] = {
    f"lstm-{n}x128": {"arch": "lstm", "emb_dim": 128, "hidden_dim": 128, "num_layers": n, "init": "uniform"}
    for n in (1, 2, 3)
}


class LSTMLM(LanguageModel):
    """State: ``(h, c)``, each [num_layers, B, hidden_dim] (``nn.LSTM`` layout)."""

    config_class = LSTMConfig
    arch = "lstm"

    def __init__(self, cfg: LSTMConfig, vocab_size: int):
        super().__init__(cfg, vocab_size)
        self.embedding = nn.Embedding(vocab_size, cfg.emb_dim)
        self.drop_emb = TokenDropout(cfg.dropout_emb)
        self.rnn = nn.LSTM(cfg.emb_dim, cfg.hidden_dim, cfg.num_layers, batch_first=True,
                           dropout=cfg.dropout_hidden if cfg.num_layers > 1 else 0.0)
        self.drop_out = TokenDropout(cfg.dropout_out)
        self.output = OutputLayer(cfg.hidden_dim, vocab_size, self.embedding if cfg.tie_embeddings else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        cfg = self.cfg
        if cfg.init == "uniform":
            with torch.no_grad():
                for p in self.parameters():
                    p.uniform_(-cfg.init_range, cfg.init_range)
        init_lstm_(self.rnn, cfg.init, cfg.init_range, cfg.forget_bias)

    def init_state(self, batch_size: int) -> tuple[Tensor, Tensor]:
        z = torch.zeros(self.cfg.num_layers, batch_size, self.cfg.hidden_dim, device=self.device,
                        dtype=self.embedding.weight.dtype)
        return z, z.clone()

    def recurrent(self, x: Tensor, state: tuple[Tensor, Tensor], lengths: Tensor | None
                  ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """The LSTM stack on embedded inputs [B, T, emb_dim] → ([B, T, H], state)."""
        return run_lstm(self.rnn, x, state, lengths)

    def forward(self, tokens: Tensor, state: State = None, *, lengths: Tensor | None = None
                ) -> tuple[Tensor, State]:
        if state is None:
            state = self.init_state(tokens.size(0))
        x = self.drop_emb(self.embedding(tokens))
        h, state = self.recurrent(x, state, lengths)
        return self.output(self.drop_out(h)), state

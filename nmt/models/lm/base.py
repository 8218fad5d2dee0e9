"""One interface for every neural language model of the toolkit.

Id conventions (from :mod:`nmt.data.special`): ``PAD=0, UNK=1, BOS=2, EOS=3``.
A sentence ``w1 … wn`` is modelled as the input ``BOS w1 … wn`` and the target
``w1 … wn EOS``; rows are right-padded with ``PAD``. Log-probabilities are
natural logs everywhere (DESIGN.md, "Units").

Every model implements ``forward(tokens[B, T], state=None, *, lengths=None)
-> (logits[B, T, V], new_state)``; ``step``, ``score_sentences``,
``detach_state`` and ``num_parameters`` are shared and rest on ``forward``, so
a model only has to make ``forward`` continue exactly from a returned state.
"""
from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmt.data.special import BOS, EOS, PAD
from nmt.training.precision import lstm_needs_fp32, note_fallback

State = Any  # a tensor, or tuples / lists / dicts of tensors (model specific)


# --------------------------------------------------------------------------- batches


def make_lm_batch(tokens: Tensor, lengths: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(inputs, targets, input_lengths)`` for sentences ``w1 … wn`` (right-padded with PAD).

    ``tokens`` [B, L] holds the words only (no BOS/EOS); ``lengths`` [B] the word
    counts ``n`` (default: the non-PAD count). ``inputs`` = ``BOS w1 … wn`` and
    ``targets`` = ``w1 … wn EOS``, both [B, L+1] and PAD beyond ``n+1``.
    """
    if tokens.dim() != 2:
        raise ValueError(f"tokens must be [B, L], got shape {tuple(tokens.shape)}")
    bsz, length = tokens.shape
    if lengths is None:
        lengths = (tokens != PAD).sum(1)
    lengths = lengths.to(device=tokens.device, dtype=torch.long)
    if bool((lengths < 0).any()) or bool((lengths > length).any()):
        raise ValueError("lengths must lie in [0, tokens.size(1)]")
    pos = torch.arange(length + 1, device=tokens.device).unsqueeze(0)  # [1, L+1]
    bos = tokens.new_full((bsz, 1), BOS)
    pad = tokens.new_full((bsz, 1), PAD)
    inputs = torch.cat([bos, tokens], 1)
    inputs = inputs.masked_fill(pos > lengths.unsqueeze(1), PAD)
    targets = torch.cat([tokens, pad], 1)
    targets = targets.masked_fill(pos >= lengths.unsqueeze(1), PAD)
    targets = targets.scatter(1, lengths.unsqueeze(1), EOS)
    return inputs, targets, lengths + 1


def length_mask(lengths: Tensor, max_len: int) -> Tensor:
    """Bool [B, max_len], True on the first ``lengths[b]`` positions."""
    return torch.arange(max_len, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def token_log_probs(logits: Tensor, targets: Tensor) -> Tensor:
    """ln p(target) per position, [B, T] (no masking); computed in float32 at least."""
    bsz, steps, vocab = logits.shape
    nll = F.cross_entropy(logits.reshape(-1, vocab).float(), targets.reshape(-1), reduction="none")
    return -nll.view(bsz, steps)


# --------------------------------------------------------------------------- helpers


def detach_state(state: State) -> State:
    """The same structure with every tensor detached (truncated BPTT in stream mode)."""
    if isinstance(state, Tensor):
        return state.detach()
    if isinstance(state, dict):
        return {k: detach_state(v) for k, v in state.items()}
    if isinstance(state, tuple) and hasattr(state, "_fields"):  # namedtuple
        return type(state)(*(detach_state(v) for v in state))
    if isinstance(state, (list, tuple)):
        return type(state)(detach_state(v) for v in state)
    return state


def select_state(state: State, index: Tensor) -> State:
    """Reorder / select batch rows of a state (beam search): tensors are indexed on
    their batch dimension, which is dim 1 for ``[layers, B, H]`` LSTM states and dim 0
    otherwise. Models whose states differ override :meth:`LanguageModel.reorder_state`."""
    if isinstance(state, Tensor):
        return state.index_select(1 if state.dim() == 3 else 0, index)
    if isinstance(state, dict):
        return {k: select_state(v, index) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(select_state(v, index) for v in state)
    return state


def concat_states(states: list[State]) -> State:
    """States of several batches as one, rows in the given order: the batch dimension of
    :func:`select_state` (dim 1 of ``[layers, B, H]`` tensors, else dim 0)."""
    first = states[0]
    if isinstance(first, Tensor):
        return torch.cat(states, 1 if first.dim() == 3 else 0)
    if isinstance(first, dict):
        return {k: concat_states([s[k] for s in states]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # namedtuple
        return type(first)(*(concat_states(list(parts)) for parts in zip(*states)))
    if isinstance(first, (list, tuple)):
        return type(first)(concat_states(list(parts)) for parts in zip(*states))
    return first


def run_lstm(lstm: nn.LSTM, x: Tensor, state: tuple[Tensor, Tensor] | None,
             lengths: Tensor | None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Run a batch-first ``nn.LSTM``; with ``lengths`` the returned state is the one
    after each row's last real token (packed sequence), outputs beyond are zero.

    Under bf16 autocast on a CPU without oneDNN's bf16 LSTM kernel the recurrence runs in
    float32 (outputs and state float32), see :mod:`nmt.training.precision`."""
    if lstm_needs_fp32(x.device):
        note_fallback()
        with torch.autocast(device_type="cpu", enabled=False):
            fp32_state = None if state is None else tuple(s.float() for s in state)
            return _run_lstm(lstm, x.float(), fp32_state, lengths)
    return _run_lstm(lstm, x, state, lengths)


def _run_lstm(lstm: nn.LSTM, x: Tensor, state: tuple[Tensor, Tensor] | None,
              lengths: Tensor | None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    steps = x.size(1)
    if lengths is not None and bool((lengths < steps).any()):
        packed = pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        out, new_state = lstm(packed, state)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=steps)
        return out, new_state
    return lstm(x, state)


def init_lstm_(lstm: nn.LSTM, init: str, init_range: float, forget_bias: float) -> None:
    """``uniform``: every weight U(−r, r); ``default``: PyTorch's. Then the forget-gate
    bias is set so that ``b_ih + b_hh = forget_bias`` (gate order i, f, g, o)."""
    hidden = lstm.hidden_size
    with torch.no_grad():
        for name, p in lstm.named_parameters():
            if init == "uniform":
                p.uniform_(-init_range, init_range)
            if name.startswith("bias_ih"):
                p[hidden:2 * hidden].fill_(forget_bias)
            elif name.startswith("bias_hh"):
                p[hidden:2 * hidden].zero_()


INITS = ("uniform", "default")


class TokenDropout(nn.Module):
    """Plain (element-wise) dropout; a named module so configs show where it sits."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training) if self.p > 0 else x


class OutputLayer(nn.Module):
    """Softmax layer ``W h + b``, optionally tied to the input embedding
    (Press & Wolf 2017); when tied and the hidden size differs, a linear
    projection ``hidden → emb`` (no bias) is put in front."""

    def __init__(self, in_dim: int, vocab_size: int, embedding: nn.Embedding | None = None):
        super().__init__()
        self.proj: nn.Module | None = None
        if embedding is not None:
            emb_dim = embedding.embedding_dim
            if in_dim != emb_dim:
                self.proj = nn.Linear(in_dim, emb_dim, bias=False)
            self.decoder = nn.Linear(emb_dim, vocab_size)
            self.decoder.weight = embedding.weight
        else:
            self.decoder = nn.Linear(in_dim, vocab_size)

    def forward(self, h: Tensor) -> Tensor:
        if self.proj is not None:
            h = self.proj(h)
        return self.decoder(h)


# --------------------------------------------------------------------------- the interface


class LanguageModel(nn.Module, abc.ABC):
    """Base class of the LMs. Subclasses set ``config_class`` / ``arch`` and implement
    ``forward`` and ``init_state``."""

    config_class: ClassVar[type]
    arch: ClassVar[str] = ""

    def __init__(self, cfg: Any, vocab_size: int):
        super().__init__()
        if vocab_size <= EOS:
            raise ValueError(f"vocab_size must exceed the 4 special ids, got {vocab_size}")
        self.cfg = cfg
        self.vocab_size = vocab_size

    # ---- construction
    @classmethod
    def from_config(cls, cfg: Any, vocab_size: int) -> "LanguageModel":
        """Build from a config dataclass instance or a mapping of its fields."""
        if isinstance(cfg, dict):
            names = {f.name for f in dataclasses.fields(cls.config_class)}
            unknown = sorted(set(cfg) - names)
            if unknown:
                raise ValueError(f"unknown option(s) {unknown} for {cls.config_class.__name__}")
            cfg = cls.config_class(**cfg)
        elif not isinstance(cfg, cls.config_class):
            raise TypeError(f"{cls.__name__} expects a {cls.config_class.__name__}, got {type(cfg).__name__}")
        return cls(cfg, vocab_size)

    # ---- to implement
    @abc.abstractmethod
    def forward(self, tokens: Tensor, state: State = None, *, lengths: Tensor | None = None
                ) -> tuple[Tensor, State]:  # pragma: no cover - abstract
        """Logits [B, T, V] and the state after the last (real) token."""

    @abc.abstractmethod
    def init_state(self, batch_size: int) -> State:  # pragma: no cover - abstract
        """The zero state for ``batch_size`` rows."""

    # ---- shared
    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @staticmethod
    def detach_state(state: State) -> State:
        return detach_state(state)

    def reorder_state(self, state: State, index: Tensor) -> State:
        """Select batch rows of ``state`` (beam search bookkeeping)."""
        return select_state(state, index)

    def step(self, prev_tokens: Tensor, state: State = None) -> tuple[Tensor, State]:
        """One incremental step: ``prev_tokens`` [B] (BOS first) → ``(log_probs[B, V], state)``."""
        logits, state = self.forward(prev_tokens.unsqueeze(1), state)
        return F.log_softmax(logits[:, 0].float(), dim=-1), state

    def score_sentences(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """ln p(w1 … wn EOS | BOS) per row, [B] (natural log; EOS counted, PAD ignored).

        ``tokens`` [B, L] are the words only, right-padded with PAD; ``lengths`` the
        word counts (default: non-PAD count). Each row starts from a fresh state
        (sentence-level LM). Call ``model.eval()`` first for deterministic scores.
        """
        inputs, targets, in_lengths = make_lm_batch(tokens, lengths)
        logits, _ = self.forward(inputs, None, lengths=in_lengths)
        logp = token_log_probs(logits, targets)
        return logp.masked_fill(~length_mask(in_lengths, inputs.size(1)), 0.0).sum(1)

    def num_parameters(self, trainable_only: bool = False) -> int:
        """Distinct parameters (tied weights counted once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def extra_repr(self) -> str:
        return f"arch={self.arch!r}, vocab_size={self.vocab_size}"

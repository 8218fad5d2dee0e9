"""Batched beam search for the encoder–decoders (RNNenc, RNNsearch) over one step interface.

Scores are natural-log probabilities; a finished hypothesis (ending in EOS) is
ranked by ``score / length ** len_penalty`` with length counting EOS
(``len_penalty=0`` ranks by raw log-probability).

The step interface (:class:`StepModel`) every generating model implements:

* ``start(src)``: ``src`` LongTensor [B, S], PAD(=0)-padded, EOS included. Runs the encoder ONCE per
  batch and returns the decoder state as ``dict[str, Tensor]`` whose every tensor has the row as dim 0
  (e.g. ``{"h": [B, H], "ctx": [B, S, 2H], "keys": [B, S, A], "mask": [B, S]}`` — whatever the model needs).
* ``step(prev, state)``: ``prev`` LongTensor [N] (the previous target token of each row; BOS first) →
  ``(log_probs [N, V] natural log, new_state)``. A model that attends puts ``"attn"``: [N, S] in the new
  state (weights summing to 1 over the non-PAD source positions of the row).

The search reorders and retires rows generically with
``{k: v.index_select(0, rows) for k, v in state.items()}``, so a state may hold nothing but row tensors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor


@runtime_checkable
class StepModel(Protocol):
    """A model the beam search can drive: encoder once per batch, then one target step at a time."""

    def start(self, src: Tensor) -> dict[str, Tensor]:
        """src [B, S] (PAD-padded, EOS included) → decoder state, every tensor's dim 0 = the row."""
        ...

    def step(self, prev: Tensor, state: dict[str, Tensor]) -> tuple[Tensor, dict[str, Tensor]]:
        """prev [N] → (log-probs [N, V], natural log; the new state, with "attn" [N, S] if the model attends)."""
        ...

from nmt.data.special import BOS, EOS
from nmt.models.gru_encdec import GRUEncoderDecoder


@dataclass
class Hypothesis:
    tokens: list[int]  # without BOS/EOS
    log_prob: float  # ln p(tokens + EOS | source)
    score: float  # length-normalised score used for ranking


@torch.no_grad()
def beam_search(model: GRUEncoderDecoder, src: torch.Tensor, *, beam_size: int = 5, nbest: int = 1,
                len_penalty: float = 1.0, max_len_a: float = 2.0, max_len_b: int = 10) -> list[list[Hypothesis]]:
    """Translate a PAD-padded source batch [B, S] (EOS included); returns the n-best per sentence."""
    if nbest > beam_size:
        raise ValueError(f"nbest ({nbest}) cannot exceed beam_size ({beam_size})")
    model.eval()
    B, K = src.shape[0], beam_size
    src_len = (src != 0).sum(1)
    max_len = (max_len_a * src_len.float() + max_len_b).long().clamp(min=1).tolist()
    c = model.encode(src).repeat_interleave(K, 0)
    h = model.init_decoder(c)
    cache = model.precompute_context(c)
    scores = torch.full((B, K), float("-inf"))
    scores[:, 0] = 0.0
    history = torch.empty(B, K, 0, dtype=torch.long)
    prev = torch.full((B * K,), BOS, dtype=torch.long)
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    done = [False] * B

    for t in range(max(max_len)):
        log_probs, h = model.decode_step(prev, h, c, cache)
        V = log_probs.shape[-1]
        cand = (scores.view(-1, 1) + log_probs).view(B, K * V)
        top_scores, top_idx = cand.topk(min(2 * K, K * V), dim=1)
        beam_idx, tokens = top_idx // V, top_idx % V
        is_eos = tokens == EOS
        for b, j in is_eos.nonzero().tolist():
            if not done[b] and j < K and top_scores[b, j] > float("-inf"):
                # an EOS among the best K candidates ends a hypothesis
                finished[b].append(_ended(history[b, beam_idx[b, j]].tolist(), float(top_scores[b, j]), t + 1,
                                          len_penalty))
        alive_scores = top_scores.masked_fill(is_eos, float("-inf"))
        keep_scores, keep = alive_scores.topk(K, dim=1)
        new_beam = beam_idx.gather(1, keep)
        new_tokens = tokens.gather(1, keep)
        history = torch.cat([history.gather(1, new_beam.unsqueeze(-1).expand(-1, -1, history.shape[2])),
                             new_tokens.unsqueeze(-1)], 2)
        scores = keep_scores
        flat = (new_beam + torch.arange(B).unsqueeze(1) * K).view(-1)
        h = h[flat]
        prev = new_tokens.view(-1)
        for b in range(B):
            if done[b]:
                continue
            if len(finished[b]) >= K:
                done[b] = True
            elif t + 1 >= max_len[b]:  # out of length budget: close the live hypotheses as they are
                for k in range(K):
                    if scores[b, k] > float("-inf"):
                        finished[b].append(_ended(history[b, k].tolist(), float(scores[b, k]), t + 1, len_penalty))
                done[b] = True
            if done[b]:
                scores[b] = float("-inf")
        if all(done):
            break
    for b in range(B):
        if not finished[b]:  # cannot happen unless max_len is 0; keep the contract anyway
            finished[b].append(Hypothesis([], float("-inf"), float("-inf")))
        finished[b].sort(key=lambda hyp: hyp.score, reverse=True)
        finished[b] = finished[b][:nbest]
    return finished


def _ended(tokens: list[int], log_prob: float, length: int, len_penalty: float) -> Hypothesis:
    return Hypothesis(tokens, log_prob, log_prob / (length ** len_penalty) if len_penalty else log_prob)

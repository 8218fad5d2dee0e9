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

from nmt.data.special import BOS, EOS, PAD


@dataclass
class Hypothesis:
    tokens: list[int]  # without BOS/EOS
    log_prob: float  # ln p(tokens + EOS | source)
    score: float  # length-normalised score used for ranking
    attn: list[list[float]] | None = None  # with attention=True: one row per target token (+ EOS) over the source


@dataclass
class _Ended:
    """The finished hypotheses of one batch, as flat tensors (one entry per hypothesis)."""

    sent: list[Tensor]  # sentence of the batch
    last: list[Tensor]  # step of the last real token (-1: none) ...
    beam: list[Tensor]  # ... and its beam there (as kept at that step)
    score: list[Tensor]  # ln p
    eos: list[Tensor]  # ended with EOS (else: closed by the length budget)
    order: list[Tensor]  # rank among the hypotheses ended at the same step (ties keep this order)

    def add(self, sent: Tensor, last: int, beam: Tensor, score: Tensor, eos: bool, order: Tensor) -> None:
        self.sent.append(sent)
        self.last.append(torch.full_like(sent, last))
        self.beam.append(beam)
        self.score.append(score)
        self.eos.append(torch.full_like(sent, int(eos)))
        self.order.append(order)


@torch.no_grad()
def beam_search(model: StepModel, src: Tensor, *, beam_size: int = 5, nbest: int = 1, len_penalty: float = 1.0,
                max_len_a: float = 2.0, max_len_b: int = 10, attention: bool = False) -> list[list[Hypothesis]]:
    """Translate a PAD-padded source batch [B, S] (EOS included); returns the n-best per sentence.

    Beams are rows [n·K] of one decoder state; each step ranks the K·V continuations of a sentence
    with one top-k, retires hypotheses ending in EOS (among the best K) with tensor masks, and drops
    sentences whose search is over (K hypotheses ended, or ``max_len_a·|src| + max_len_b`` steps
    taken: the live hypotheses are then closed as they are) from the batch. Back-pointers are kept as
    tensors and the hypotheses read back once at the end. ``attention=True`` also returns each
    hypothesis's attention rows (the model's state must hold "attn").
    """
    if nbest > beam_size:
        raise ValueError(f"nbest ({nbest}) cannot exceed beam_size ({beam_size})")
    if isinstance(model, torch.nn.Module):
        model.eval()
    B, K, inf, dev = src.shape[0], beam_size, float("-inf"), src.device
    src_len = (src != PAD).sum(1)
    max_len = (max_len_a * src_len.float() + max_len_b).long().clamp(min=1)
    state = {k: v.repeat_interleave(K, 0) for k, v in model.start(src).items()}
    alive = torch.arange(B, device=dev)  # the batch's sentences still searched, one per K rows
    scores = torch.full((B, K), inf, device=dev)
    scores[:, 0] = 0.0
    n_ended = torch.zeros(B, dtype=torch.long, device=dev)
    prev = torch.full((B * K,), BOS, dtype=torch.long, device=dev)
    back_tok: list[Tensor] = []  # per step [B, K]: the token of each kept beam ...
    back_beam: list[Tensor] = []  # ... and the beam of the step before it continues
    back_attn: list[Tensor] = []  # per step [B, K, S]: attention of each beam row before the top-k
    ended = _Ended([], [], [], [], [], [])
    t = 0
    while alive.numel():
        log_probs, state = model.step(prev, state)
        n, V = alive.numel(), log_probs.shape[-1]
        if attention:
            if "attn" not in state:
                raise ValueError("this model's decoder state has no attention ('attn'): it does not attend")
            full = torch.zeros(B, K, src.shape[1], device=dev)
            full[alive] = state["attn"].view(n, K, -1).float()
            back_attn.append(full)
        cand = (scores.view(-1, 1) + log_probs).view(n, K * V)
        top_scores, top_idx = cand.topk(min(2 * K, K * V), dim=1)
        beam_idx, tokens = top_idx // V, top_idx % V
        is_eos = tokens == EOS
        eos_best = is_eos[:, :K] & (top_scores[:, :K] > inf)  # an EOS among the best K ends a hypothesis
        if bool(eos_best.any()):
            r, j = eos_best.nonzero(as_tuple=True)
            ended.add(alive[r], t - 1, beam_idx[r, j], top_scores[r, j], True, j)
            n_ended += eos_best.sum(1)
        scores, keep = top_scores.masked_fill(is_eos, inf).topk(K, dim=1)
        new_beam, new_tokens = beam_idx.gather(1, keep), tokens.gather(1, keep)
        back_tok.append(torch.zeros(B, K, dtype=torch.long, device=dev).index_copy_(0, alive, new_tokens))
        back_beam.append(torch.zeros(B, K, dtype=torch.long, device=dev).index_copy_(0, alive, new_beam))
        full_count = n_ended >= K
        over = ~full_count & (max_len <= t + 1)  # out of length budget: close the live hypotheses as they are
        if bool(over.any()):
            r, k = (over.unsqueeze(1) & (scores > inf)).nonzero(as_tuple=True)
            ended.add(alive[r], t, k, scores[r, k], False, k + K)
        rows = new_beam + (torch.arange(n, device=dev) * K).unsqueeze(1)
        done = full_count | over
        if bool(done.any()):
            still = (~done).nonzero().squeeze(1)
            alive, scores, n_ended, max_len = alive[still], scores[still], n_ended[still], max_len[still]
            rows, new_tokens = rows[still], new_tokens[still]
        rows = rows.view(-1)
        state = {k: v.index_select(0, rows) for k, v in state.items()}
        prev = new_tokens.reshape(-1)
        t += 1
    return _read_back(ended, back_tok, back_beam, back_attn, src_len, B, nbest, len_penalty)


def _read_back(ended: _Ended, back_tok: list[Tensor], back_beam: list[Tensor], back_attn: list[Tensor],
               src_len: Tensor, B: int, nbest: int, len_penalty: float) -> list[list[Hypothesis]]:
    """Follow the back-pointers of every ended hypothesis at once; the n-best of each sentence, best first."""
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    if ended.sent:
        sent, last, beam = torch.cat(ended.sent), torch.cat(ended.last), torch.cat(ended.beam)
        eos = torch.cat(ended.eos).bool()
        T = len(back_tok)
        toks = torch.zeros(sent.numel(), T, dtype=torch.long, device=sent.device)
        attn = torch.zeros(sent.numel(), T + 1, back_attn[0].shape[-1], device=sent.device) if back_attn else None
        if attn is not None:  # the EOS row: the attention of the beam that produced EOS, one step after `last`
            has = eos.nonzero().squeeze(1)
            attn[has, last[has] + 1] = torch.stack(back_attn)[last[has] + 1, sent[has], beam[has]]
        cur = beam.clone()
        for s in range(T - 1, -1, -1):
            on = last >= s
            if not bool(on.any()):
                continue
            toks[:, s] = torch.where(on, back_tok[s][sent, cur], toks[:, s])
            before = back_beam[s][sent, cur]
            if attn is not None:
                attn[on, s] = back_attn[s][sent[on], before[on]]
            cur = torch.where(on, before, cur)
        rows = zip(sent.tolist(), last.tolist(), eos.tolist(), torch.cat(ended.score).tolist(),
                   torch.cat(ended.order).tolist(), toks.tolist(), range(sent.numel()))
        keyed: list[list[tuple]] = [[] for _ in range(B)]
        for b, end, has_eos, log_prob, order, tok_row, i in rows:
            length = end + 2 if has_eos else end + 1  # counting EOS
            score = log_prob / (length ** len_penalty) if len_penalty else log_prob
            step = end + 1 if has_eos else end  # the step it ended at: ties keep the order they ended in
            keyed[b].append((-score, step, order, i, tok_row[:end + 1], log_prob, score, length))
        lens = src_len.tolist()
        for b in range(B):
            for *_, i, tokens, log_prob, score, length in sorted(keyed[b])[:nbest]:
                rows_attn = attn[i, :length, :lens[b]].tolist() if attn is not None else None
                finished[b].append(Hypothesis(tokens, log_prob, score, rows_attn))
    for b in range(B):
        if not finished[b]:  # cannot happen unless max_len is 0; keep the contract anyway
            finished[b].append(Hypothesis([], float("-inf"), float("-inf")))
    return finished

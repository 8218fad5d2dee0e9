"""Scoring text with a language model: per-token natural-log probabilities per line, and perplexity.

Sentence regime: each line from a fresh state (``start`` first); stream regime: the lines as one
stream with the state carried (see :mod:`nmt.lm.data`). Accounting as :mod:`nmt.core.perplexity`.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch import Tensor

from nmt.data.vocab import Vocabulary
from nmt.lm.data import REGIMES, sentence_batch, stream_matrix
from nmt.models.lm import LanguageModel
from nmt.data.special import BOS
from nmt.models.lm.base import make_lm_batch
from nmt.core.perplexity import PerplexityAccumulator, PerplexityResult


def length_batches(sentences: Sequence[Sequence[int]], *, start: int = BOS, max_tokens: int = 2000
                   ) -> Iterator[tuple[list[int], Tensor, Tensor, Tensor]]:
    """Sentences sorted by length and cut into batches of at most ``max_tokens`` padded inputs:
    ``(indices into sentences, inputs [B, T] starting with start, targets, input lengths)``."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    i = 0
    while i < len(order):
        j = i + 1
        while j < len(order) and (len(sentences[order[j]]) + 1) * (j + 1 - i) <= max_tokens:
            j += 1
        idx = order[i:j]
        batch = sentence_batch([sentences[k] for k in idx])
        inputs, targets, in_len = make_lm_batch(batch["tokens"], batch["lengths"])
        inputs[:, 0] = start
        yield idx, inputs, targets, in_len
        i = j


@torch.no_grad()
def sentence_token_logprobs(model: LanguageModel, sentences: Sequence[Sequence[int]], *, start: int = BOS,
                            max_tokens: int = 2000) -> list[np.ndarray]:
    """ln p of each word and of ``</s>`` per sentence (``n + 1`` values), each from a fresh state.

    ``start`` is the first context symbol (``<s>`` for sentence-trained models,
    ``</s>`` for stream-trained ones). Sentences are batched by length; results
    come back in input order. Call ``model.eval()`` first.
    """
    out: list[np.ndarray | None] = [None] * len(sentences)
    for idx, inputs, targets, in_len in length_batches(sentences, start=start, max_tokens=max_tokens):
        logits, _ = model(inputs, None, lengths=in_len)
        logp = torch.log_softmax(logits.float(), -1).gather(2, targets.unsqueeze(-1)).squeeze(-1)
        logp = logp.double().cpu().numpy()
        for row, k in enumerate(idx):
            out[k] = logp[row, :int(in_len[row])].copy()
    return out  # type: ignore[return-value]


@torch.no_grad()
def stream_token_logprobs(model: LanguageModel, sentences: Sequence[Sequence[int]], *, window: int = 256,
                          carry: bool = True) -> list[np.ndarray]:
    """ln p of each word and ``</s>`` per line, reading the lines as one stream (``</s>`` first),
    with the state carried across lines; one row, so nothing is cut. The result does not depend on
    ``window`` (the models continue exactly from a carried state). ``carry=False``: every block of
    ``window`` tokens starts from a zero state (fairseq-eval-lm's ``--tokens-per-sample`` blocks; the
    block's first input is still the token before it). Call ``model.eval()`` first."""
    inputs, targets = stream_matrix(sentences, 1)
    pieces = []
    state = None
    for lo in range(0, inputs.size(1), window):
        logits, state = model(inputs[:, lo:lo + window], state if carry else None)
        tgt = targets[:, lo:lo + window]
        pieces.append(torch.log_softmax(logits.float(), -1).gather(2, tgt.unsqueeze(-1)).squeeze(-1)[0])
    flat = torch.cat(pieces).double().cpu().numpy()
    out, pos = [], 0
    for s in sentences:
        out.append(flat[pos:pos + len(s) + 1].copy())
        pos += len(s) + 1
    return out


def token_logprobs(model: LanguageModel, sentences: Sequence[Sequence[int]], regime: str, *, start: int = BOS,
                   window: int = 256, max_tokens: int = 2000, block: int = 0) -> list[np.ndarray]:
    """Per-line ln p (words and ``</s>``) in ``regime``; ``block`` > 0 (stream regime only): a zero
    state every ``block`` tokens instead of the carried state."""
    if regime == "sentence":
        if block:
            raise ValueError("block applies to the stream regime only")
        return sentence_token_logprobs(model, sentences, start=start, max_tokens=max_tokens)
    if regime == "stream":
        if block:
            return stream_token_logprobs(model, sentences, window=block, carry=False)
        return stream_token_logprobs(model, sentences, window=window)
    raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")


def perplexity(logprobs: Sequence[np.ndarray], words: Sequence[Sequence[str]], vocab: Vocabulary
               ) -> PerplexityResult:
    """By the project's accounting: N = words + one ``</s>`` per line, OOVs included and counted."""
    acc = PerplexityAccumulator()
    for lp, ws in zip(logprobs, words):
        if len(lp) != len(ws) + 1:
            raise RuntimeError(f"{len(lp)} log-probabilities for {len(ws)} words + </s>")
        acc.add(math.fsum(lp.tolist()), len(ws), vocab.unk_count(ws))
    return acc.result()

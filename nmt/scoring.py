"""Batched log-probabilities of given pairs: ``score_pairs(src, tgt) -> ln p(tgt | src)``.

Phrase-table rescoring and ``nmt-score`` build on this. Pairs are sorted by
length into batches of at most ``max_tokens`` padded target tokens, each distinct
source within a batch is encoded once, and results come back in input order.
Natural log; EOS is counted, BOS is not.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from nmt.data.batching import pad
from nmt.data.vocab import Vocabulary
from nmt.models.gru_encdec import BOS, EOS, PAD, UNK, GRUEncoderDecoder


@dataclass
class PairScore:
    log_prob: float  # ln p(tgt | src), EOS included
    tgt_tokens: int  # predicted tokens incl. EOS
    src_unk: int  # source words unknown to the network
    tgt_unk: int  # target words unknown to the network


class PairScorer:
    def __init__(self, model: GRUEncoderDecoder, src_vocab: Vocabulary, tgt_vocab: Vocabulary,
                 max_tokens: int = 4000, device: str = "cpu"):
        self.model = model.eval()
        self.src_vocab = src_vocab
        self.tgt_vocab = tgt_vocab
        self.max_tokens = max_tokens
        self.device = device

    @torch.no_grad()
    def _score_batch(self, src_ids: list[tuple[int, ...]], tgt_ids: list[list[int]]) -> np.ndarray:
        unique_src = list(dict.fromkeys(src_ids))
        where = {s: i for i, s in enumerate(unique_src)}
        c = self.model.encode(pad(unique_src, suffix=EOS).to(self.device))
        c = c[torch.as_tensor([where[s] for s in src_ids], device=self.device)]
        tgt_in = pad(tgt_ids, prefix=BOS).to(self.device)
        tgt_out = pad(tgt_ids, suffix=EOS).to(self.device)
        logits = self.model.decode(c, tgt_in)
        nll = F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=PAD, reduction="none")
        return (-nll.sum(1)).double().cpu().numpy()

    def score_pairs(self, src_batch: Sequence[Sequence[str]], tgt_batch: Sequence[Sequence[str]]
                    ) -> list[PairScore]:
        """Score tokenized pairs; returns one ``PairScore`` per pair, in input order."""
        if len(src_batch) != len(tgt_batch):
            raise ValueError(f"score_pairs: {len(src_batch)} sources but {len(tgt_batch)} targets")
        src_ids = [tuple(self.src_vocab.encode(list(s))) for s in src_batch]
        tgt_ids = [self.tgt_vocab.encode(list(t)) for t in tgt_batch]
        for i, (s, t) in enumerate(zip(src_batch, tgt_batch)):
            if not s or not t:
                raise ValueError(f"score_pairs: pair {i} has an empty side")
        order = sorted(range(len(src_ids)), key=lambda i: (len(tgt_ids[i]), len(src_ids[i]), src_ids[i]))
        log_probs = np.zeros(len(src_ids))
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (len(tgt_ids[order[end]]) + 1) * (end + 1 - start) <= self.max_tokens:
                end += 1
            idx = order[start:end]
            log_probs[idx] = self._score_batch([src_ids[i] for i in idx], [tgt_ids[i] for i in idx])
            start = end
        return [PairScore(float(log_probs[i]), len(tgt_ids[i]) + 1, src_ids[i].count(UNK), tgt_ids[i].count(UNK))
                for i in range(len(src_ids))]

"""The Scorer interface: ``score_pairs(src, tgt) -> ln p(tgt | src)`` per pair.

``nmt-score``, phrase-table rescoring and rerankers build on it. The work is
done by :class:`nmt.rescoring_engine.RescoringEngine` (each distinct source
encoded once, length-sorted batches of at most ``max_tokens`` padded target
tokens, softmax on real tokens only); results come back in input order.
Natural log; EOS is counted, BOS is not; unknown words are scored as ``<unk>``
and counted.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nmt.data.vocab import Vocabulary
from nmt.models.gru_encdec import GRUEncoderDecoder
from nmt.rescoring_engine import RescoringEngine


@dataclass
class PairScore:
    log_prob: float  # ln p(tgt | src), EOS included
    tgt_tokens: int  # predicted tokens incl. EOS
    src_unk: int  # source words unknown to the network
    tgt_unk: int  # target words unknown to the network


class PairScorer:
    def __init__(self, model: GRUEncoderDecoder, src_vocab: Vocabulary, tgt_vocab: Vocabulary,
                 max_tokens: int = 4000, device: str = "cpu"):
        self.engine = RescoringEngine(model, src_vocab, tgt_vocab, max_tokens=max_tokens, device=device)

    def score_pairs(self, src_batch: Sequence[Sequence[str]], tgt_batch: Sequence[Sequence[str]]
                    ) -> list[PairScore]:
        """Score tokenized pairs; one ``PairScore`` per pair, in input order."""
        scores = self.engine.score(src_batch, tgt_batch)
        return [PairScore(float(lp), len(t) + 1, int(su), int(tu))
                for lp, t, su, tu in zip(scores.log_prob, tgt_batch, scores.src_unk, scores.tgt_unk)]

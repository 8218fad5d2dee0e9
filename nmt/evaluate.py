"""BLEU and chrF with sacreBLEU on detokenised text, reported with their signatures."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sacrebleu


@dataclass
class EvalResult:
    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    num_sentences: int

    def format(self, name: str = "") -> str:
        label = f"{name}: " if name else ""
        return (f"{label}BLEU = {self.bleu:.2f} ({self.bleu_signature}) | chrF2 = {self.chrf:.2f} "
                f"({self.chrf_signature}) | {self.num_sentences} sentences")


def evaluate(hypotheses: Sequence[str], references: Sequence[str]) -> EvalResult:
    """Corpus BLEU (13a, mixed case) and chrF2 of detokenised hypotheses against raw references."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("no sentences to evaluate (sacreBLEU needs at least one)")
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    b = bleu.corpus_score(list(hypotheses), [list(references)])
    c = chrf.corpus_score(list(hypotheses), [list(references)])
    return EvalResult(b.score, c.score, str(bleu.get_signature()), str(chrf.get_signature()), len(hypotheses))

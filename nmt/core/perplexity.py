"""One token accounting for the perplexity of every language model in the project.

The convention (DESIGN.md, "Units"), the same for KenLM and the neural LMs:

* log-probabilities are natural logs;
* every word of a sentence is counted, plus one ``</s>`` per sentence:
  ``N = words + sentences``; ``<s>`` is context only and is not counted;
* words outside the model's vocabulary (OOVs) are *included*: they are scored
  with the probability the model gives its unknown word and counted in ``N``
  (for KenLM see :func:`kenlm_perplexity`); how many there were is reported
  in ``num_oov``;
* ``ppl = exp(-Σ ln p / N)``.

This is what KenLM's ``query`` prints as "Perplexity including OOVs" and what
Mikolov's PTB figures use (82,430 test tokens = 78,669 words + 3,761 ``</s>``).

A line of text is one sentence; words are separated by ASCII whitespace
(space, tab, CR, VT, FF), exactly as KenLM splits them. An empty line is a
sentence of zero words and still contributes its ``</s>`` (as in ``query``).
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Protocol, Sequence

LN10 = math.log(10.0)

# KenLM's word separators (util/spaces.cc kSpaces: \t \n \v \f \r and space);
# the same set bytes.split() uses, which the kenlm Python module relies on.
_KENLM_SPACES = re.compile(r"[ \t\n\r\x0b\x0c]+")

UNK_NOTE_INCLUDED = "OOVs included, scored with p(<unk>)"


def split_words(line: str) -> list[str]:
    """Split one sentence into words the way KenLM does (ASCII whitespace only)."""
    return [w for w in _KENLM_SPACES.split(line) if w]


@dataclass(frozen=True)
class PerplexityResult:
    """Corpus-level perplexity with its token accounting stated.

    ``total_logprob`` is Σ ln p over the ``num_tokens`` counted tokens (words
    and one ``</s>`` per sentence; OOV words included). ``ppl`` is
    ``exp(-total_logprob / num_tokens)``.
    """

    total_logprob: float
    num_tokens: int
    num_sentences: int
    num_oov: int
    ppl: float

    @property
    def num_words(self) -> int:
        """Counted tokens that are words (``num_tokens`` less one ``</s>`` per sentence)."""
        return self.num_tokens - self.num_sentences

    @property
    def nll_per_token(self) -> float:
        """Cross-entropy in nats per token: ``-total_logprob / num_tokens`` (= ln ppl)."""
        return -self.total_logprob / self.num_tokens

    @property
    def bits_per_token(self) -> float:
        return self.nll_per_token / math.log(2.0)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["num_words"] = self.num_words
        d["nll_per_token"] = self.nll_per_token
        return d


def perplexity_from_logprobs(total_logprob: float, num_tokens: int, *, num_sentences: int = 0,
                             num_oov: int = 0) -> PerplexityResult:
    """Build a :class:`PerplexityResult` from a natural-log total over ``num_tokens`` tokens.

    ``num_tokens`` must already follow the convention of this module (words +
    one ``</s>`` per sentence); :class:`PerplexityAccumulator` does the counting
    for callers that score sentence by sentence.
    """
    if num_tokens <= 0:
        raise ValueError(f"perplexity needs at least one token, got num_tokens={num_tokens}")
    if num_sentences < 0 or num_oov < 0 or num_sentences > num_tokens:
        raise ValueError(f"inconsistent counts: tokens={num_tokens} sentences={num_sentences} oov={num_oov}")
    if total_logprob > 1e-9 * max(1.0, abs(total_logprob)):
        raise ValueError(f"a total log-probability must be <= 0, got {total_logprob}")
    try:
        ppl = math.exp(-total_logprob / num_tokens)
    except OverflowError:
        ppl = math.inf
    return PerplexityResult(total_logprob=float(total_logprob), num_tokens=int(num_tokens),
                            num_sentences=int(num_sentences), num_oov=int(num_oov), ppl=ppl)


class PerplexityAccumulator:
    """Sums sentence log-probabilities and counts tokens by the project's convention.

    ``add(ln_p_sentence, num_words)`` expects ``ln_p_sentence`` to include the
    ``</s>`` prediction, and counts ``num_words + 1`` tokens.
    """

    def __init__(self) -> None:
        self.total_logprob = 0.0
        self.num_tokens = 0
        self.num_sentences = 0
        self.num_oov = 0

    def add(self, sentence_logprob: float, num_words: int, num_oov: int = 0) -> None:
        self.total_logprob += sentence_logprob
        self.num_tokens += num_words + 1
        self.num_sentences += 1
        self.num_oov += num_oov

    def result(self) -> PerplexityResult:
        return perplexity_from_logprobs(self.total_logprob, self.num_tokens,
                                        num_sentences=self.num_sentences, num_oov=self.num_oov)


class _TokenScorer(Protocol):  # what kenlm_perplexity needs (smt_features.model.kenlm.KenLMScorer)
    def token_scores(self, tokens: Sequence[str]) -> list[tuple[float, int, bool]]: ...


def kenlm_perplexity(scorer: _TokenScorer, lines: Iterable[str]) -> PerplexityResult:
    """Perplexity of a KenLM model on ``lines`` (one sentence each), by this module's convention.

    Each line is split like KenLM splits it; every word and one ``</s>`` per
    line are scored and counted (``N = words + sentences``; ``<s>`` is context,
    not counted). An OOV word is scored exactly as KenLM scores it: as the
    word ``<unk>``, i.e. the ARPA unigram probability of ``<unk>`` times the
    back-off weights of the current context (``query``'s "including OOVs").
    It is counted in ``N`` and in ``num_oov``. The scorer applies its own
    ``map_unk`` rewrite first, so a literal ``<unk>`` in PTB-style text is the
    ordinary in-vocabulary word the model was trained with, not an OOV.
    """
    acc = PerplexityAccumulator()
    for line in lines:
        words = split_words(line)
        scores = scorer.token_scores(words)
        if len(scores) != len(words) + 1:
            raise RuntimeError(f"scorer returned {len(scores)} scores for {len(words)} words + </s>")
        acc.add(math.fsum(s[0] for s in scores), len(words), sum(1 for s in scores if s[2]))
    return acc.result()


def format_result(res: PerplexityResult, name: str, unk: str = UNK_NOTE_INCLUDED) -> str:
    """One line: the perplexity, N and what it counts, and the treatment of unknown words."""
    return (f"{name}: ppl {res.ppl:.2f} over N={res.num_tokens:,} tokens "
            f"({res.num_words:,} words + {res.num_sentences:,} </s>; <s> not counted), "
            f"{res.num_oov:,} OOV ({unk}), sum ln p = {res.total_logprob:.2f}")

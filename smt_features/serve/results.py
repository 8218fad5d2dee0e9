"""What the Python API returns for a sentence (:class:`SentenceResult`): the 1-best, the n-best list with each
feature's values and weights, the phrase segmentation and word alignment, RNNsearch's attention; as JSON-ready
dicts (:meth:`SentenceResult.to_dict`). Scores are natural logs; positions are 0-based token indices of the
tokenized source (``source_tokens``) and target (``tokens``), ends inclusive (Moses's convention)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FeatureScore:
    """One feature group of a hypothesis: its values ``h``, weights ``λ`` and ``Σ λ·h``."""

    name: str
    values: list[float]
    weights: list[float]
    tuneable: bool = True  # False: left out of Moses's n-best lines (UnknownWordPenalty0), still in the total

    @property
    def contribution(self) -> float:
        return math.fsum(w * v for w, v in zip(self.weights, self.values))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "values": self.values, "weights": self.weights,
                "contribution": self.contribution, "tuneable": self.tuneable}


@dataclass
class Segment:
    """One phrase of a derivation, in target order: source words ``src_start..src_end`` → target words
    ``tgt_start..tgt_end`` (``tgt_end = tgt_start - 1`` for an empty target phrase)."""

    src_start: int
    src_end: int
    tgt_start: int
    tgt_end: int
    source: list[str]
    target: list[str]
    alignment: list[tuple[int, int]] = field(default_factory=list)  # (i, j) inside the phrase pair

    def to_dict(self) -> dict[str, Any]:
        return {"src_start": self.src_start, "src_end": self.src_end, "tgt_start": self.tgt_start,
                "tgt_end": self.tgt_end, "source": " ".join(self.source), "target": " ".join(self.target)}


@dataclass
class Hypothesis:
    """One translation of the n-best list: raw text, target tokens (as decoded: tokenized, truecased), total
    score ``Σ λ·h`` under the system's final weights (the reranking weights for a reranked system), features,
    and the derivation's segments."""

    text: str
    tokens: list[str]
    total: float
    features: list[FeatureScore]
    segments: list[Segment]

    @property
    def word_alignment(self) -> list[tuple[int, int]]:
        """``(source word, target word)`` points of the whole sentence, phrase by phrase in target order."""
        return [(s.src_start + i, s.tgt_start + j) for s in self.segments for i, j in s.alignment]

    def to_dict(self, *, scores: bool = True, trace: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "tokens": self.tokens, "total": self.total}
        if scores:
            out["features"] = [f.to_dict() for f in self.features]
        if trace:
            out["segments"] = [s.to_dict() for s in self.segments]
            out["word_alignment"] = [list(p) for p in self.word_alignment]
        return out


@dataclass
class Attention:
    """RNNsearch's attention over the 1-best (teacher-forced): ``rows[t][s]`` = α of target token ``t`` (the
    last row: ``</s>``) over source token ``s`` (the last column: ``</s>``)."""

    model: str
    source: list[str]
    target: list[str]
    rows: list[list[float]]

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "source": self.source, "target": self.target,
                "rows": [[round(a, 6) for a in row] for row in self.rows]}


@dataclass
class SentenceResult:
    """The translation of one raw sentence: ``translation`` (raw text) = ``nbest[0].text``."""

    source: str
    source_tokens: list[str]
    nbest: list[Hypothesis]
    attention: Attention | None = None
    options: dict[str, Any] = field(default_factory=dict)  # the request's nbest / scores / trace: to_dict's defaults

    @property
    def best(self) -> Hypothesis:
        return self.nbest[0]

    @property
    def translation(self) -> str:
        return self.nbest[0].text

    def to_dict(self, *, nbest: int | None = None, scores: bool | None = None, trace: bool | None = None
                ) -> dict[str, Any]:
        """JSON-ready: the 1-best (with its features / trace when asked) and, with ``nbest > 1``, the list
        (defaults: the options the sentence was translated with)."""
        nbest = self.options.get("nbest", 1) if nbest is None else nbest
        scores = self.options.get("scores", False) if scores is None else scores
        trace = self.options.get("trace", False) if trace is None else trace
        out: dict[str, Any] = {"source": self.source, "source_tokens": self.source_tokens,
                               "translation": self.translation, "total": self.best.total}
        best = self.best.to_dict(scores=scores, trace=trace)
        out.update({k: v for k, v in best.items() if k not in ("text", "total")})
        if nbest > 1:
            out["nbest"] = [h.to_dict(scores=scores, trace=trace) for h in self.nbest[:nbest]]
        if self.attention is not None:
            out["attention"] = self.attention.to_dict()
        return out

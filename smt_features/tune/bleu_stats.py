"""BLEU sufficient statistics on tokenized text, as Moses's MERT computes them.

MERT needs BLEU of millions of candidate 1-best selections, so each
hypothesis is reduced once to a vector of sufficient statistics and corpus
BLEU is computed from their sum. The layout is Moses's ``BleuScorer`` one
(:data:`NUM_STATS` = 9 integers)::

    [m1, t1, m2, t2, m3, t3, m4, t4, r]

``m_n`` = clipped n-gram matches with the reference(s), ``t_n`` = n-grams in
the hypothesis (so ``t1`` is its length), ``r`` = the effective reference
length (``closest`` to the hypothesis length, ties to the shorter; or
``shortest`` / ``average``; with one reference all three are its length).

**Units and scope.** Everything here works on *tokenized* text: tokens are
the space-separated words exactly as given (no further tokenization, case
kept) — Moses MERT scores the tokenized n-best lists the same way and it is
much faster than re-tokenizing. BLEU is returned in **percent (0–100)**.
With the same tokens it equals sacreBLEU's ``corpus_score`` with
``tokenize='none'`` (whenever every n-gram order has at least one match;
with a zero count Moses/this module give 0 where sacreBLEU's default
``exp`` smoothing gives a small positive number). The figures reported for a
system are computed separately, by sacreBLEU on *detokenized* output
(:mod:`nmt.translation.evaluate`); tokenized dev BLEU is only MERT's objective.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

ORDER = 4
NUM_STATS = 2 * ORDER + 1
REF_LENGTH_POLICIES = ("closest", "shortest", "average")


def _ngrams(tokens: Sequence[str], n: int) -> Iterator[tuple[str, ...]]:
    """The n-grams of ``tokens`` as tuples, in order (made in C by ``zip``)."""
    return zip(*(tokens[i:] for i in range(n)))


def ngram_counts(tokens: Sequence[str], order: int = ORDER) -> Counter:
    """Counts of all n-grams (tuples) of ``tokens`` for n = 1..``order``."""
    counts: Counter = Counter()
    for n in range(1, min(order, len(tokens)) + 1):
        counts.update(_ngrams(tokens, n))
    return counts


def _split(text: str | Sequence[str]) -> list[str]:
    return text.split() if isinstance(text, str) else list(text)


class Reference:
    """One sentence's reference(s): n-gram counts (max over references, for clipping) and lengths.

    ``refs`` is one tokenized string or a list of tokenized strings (several references).
    """

    __slots__ = ("counts", "lengths", "order")

    def __init__(self, refs: str | Sequence[str], order: int = ORDER) -> None:
        ref_list = [refs.split()] if isinstance(refs, str) else [r.split() for r in refs]
        if not ref_list:
            raise ValueError("a sentence needs at least one reference")
        self.order = order
        self.lengths = [len(r) for r in ref_list]
        counts = ngram_counts(ref_list[0], order)
        for r in ref_list[1:]:
            counts |= ngram_counts(r, order)  # element-wise max
        self.counts = counts

    def effective_length(self, hyp_len: int, policy: str = "closest") -> float:
        if len(self.lengths) == 1:
            return float(self.lengths[0])
        if policy == "closest":
            return float(min(self.lengths, key=lambda r: (abs(r - hyp_len), r)))
        if policy == "shortest":
            return float(min(self.lengths))
        if policy == "average":
            return float(sum(self.lengths)) / len(self.lengths)
        raise ValueError(f"reference length policy must be one of {REF_LENGTH_POLICIES}, not {policy!r}")


def sentence_stats(hyp: str | Sequence[str], ref: Reference, ref_length: str = "closest") -> np.ndarray:
    """The 9 sufficient statistics of one hypothesis (``float64`` holding integers, except an
    ``average`` reference length)."""
    tokens = _split(hyp)
    n_tok = len(tokens)
    ref_counts = ref.counts
    row: list[float] = []
    for n in range(1, ref.order + 1):
        matches = 0
        if n <= n_tok:
            grams = Counter(_ngrams(tokens, n))
            for gram in grams.keys() & ref_counts.keys():  # the n-grams the reference has (clipped counts)
                c, rc = grams[gram], ref_counts[gram]
                matches += c if c < rc else rc
        row += (matches, max(n_tok - n + 1, 0))
    row.append(ref.effective_length(n_tok, ref_length))
    return np.array(row, dtype=np.float64)


class BleuScorer:
    """Sufficient statistics against a fixed set of references (one entry per sentence).

    ``references[i]`` is a tokenized string, or a list of tokenized strings
    (several references for sentence ``i``). ``ref_length``: ``closest`` (Moses's and sacreBLEU's
    default), ``shortest`` or ``average``.
    """

    def __init__(self, references: Sequence[str] | Sequence[Sequence[str]], *,
                 ref_length: str = "closest", order: int = ORDER) -> None:
        if ref_length not in REF_LENGTH_POLICIES:
            raise ValueError(f"ref_length must be one of {REF_LENGTH_POLICIES}, not {ref_length!r}")
        if order != ORDER:
            raise ValueError("only 4-gram BLEU is supported")
        self.refs = [Reference(r, order) for r in references]
        self.ref_length = ref_length

    def __len__(self) -> int:
        return len(self.refs)

    def stats(self, sent_id: int, hyp: str | Sequence[str]) -> np.ndarray:
        return sentence_stats(hyp, self.refs[sent_id], self.ref_length)

    def corpus_stats(self, hyps: Sequence[str | Sequence[str]]) -> np.ndarray:
        """Summed statistics of one hypothesis per sentence."""
        if len(hyps) != len(self.refs):
            raise ValueError(f"{len(hyps)} hypotheses but {len(self.refs)} references")
        total = np.zeros(NUM_STATS)
        for i, h in enumerate(hyps):
            total += self.stats(i, h)
        return total


def bleu_from_stats(stats: np.ndarray | Sequence[float]) -> np.ndarray | float:
    """Corpus BLEU in percent from summed statistics ``(..., 9)`` (vectorised over leading axes).

    Moses's formula: ``BP · exp(¼ Σ log(m_n / t_n))`` with
    ``BP = min(1, exp(1 − r / t1))``; 0 when any ``m_n`` is 0 (no smoothing).
    """
    s = np.asarray(stats, dtype=np.float64)
    scalar = s.ndim == 1
    s = np.atleast_2d(s)
    m = s[..., 0:2 * ORDER:2]
    t = s[..., 1:2 * ORDER:2]
    r = s[..., 2 * ORDER]
    ok = np.all(m > 0, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.where(ok[..., None], np.log(np.where(m > 0, m, 1.0)) - np.log(np.where(t > 0, t, 1.0)), 0.0)
        log_bleu = logp.mean(axis=-1)
        hyp_len = t[..., 0]
        bp = np.where(hyp_len > 0, np.minimum(0.0, 1.0 - r / np.where(hyp_len > 0, hyp_len, 1.0)), 0.0)
    out = np.where(ok, 100.0 * np.exp(log_bleu + bp), 0.0)
    return float(out[0]) if scalar else out


def sentence_bleu(stats: np.ndarray | Sequence[float], smooth: float = 1.0) -> np.ndarray | float:
    """Smoothed sentence BLEU in percent (Lin & Och 2004 "BLEU+1" for ``smooth=1``), vectorised.

    ``p_1 = m1 / t1`` and ``p_n = (m_n + smooth) / (t_n + smooth)`` for n > 1;
    brevity penalty as in :func:`bleu_from_stats`. ``smooth=0`` is unsmoothed.
    """
    s = np.asarray(stats, dtype=np.float64)
    scalar = s.ndim == 1
    s = np.atleast_2d(s)
    m = s[..., 0:2 * ORDER:2].copy()
    t = s[..., 1:2 * ORDER:2].copy()
    m[..., 1:] += smooth
    t[..., 1:] += smooth
    r = s[..., 2 * ORDER]
    ok = np.all(m > 0, axis=-1) & np.all(t > 0, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.log(np.where(m > 0, m, 1.0)) - np.log(np.where(t > 0, t, 1.0))
        hyp_len = s[..., 1]
        bp = np.minimum(0.0, 1.0 - r / np.where(hyp_len > 0, hyp_len, 1.0))
        out = np.where(ok, 100.0 * np.exp(logp.mean(axis=-1) + bp), 0.0)
    return float(out[0]) if scalar else out


def corpus_bleu(hyps: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]], *,
                ref_length: str = "closest") -> float:
    """Tokenized corpus BLEU (percent) of ``hyps`` against ``refs`` (one tokenized string each, or lists)."""
    scorer = BleuScorer(refs, ref_length=ref_length)
    return float(bleu_from_stats(scorer.corpus_stats(hyps)))


def stats_matrix(scorer: BleuScorer, items: Iterable[tuple[int, str]]) -> np.ndarray:
    """Statistics ``(n, 9)`` of ``(sent_id, hypothesis)`` pairs."""
    rows = [scorer.stats(i, h) for i, h in items]
    return np.array(rows, dtype=np.float64).reshape(len(rows), NUM_STATS)

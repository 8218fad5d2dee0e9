"""PRO, pairwise ranking optimisation (Hopkins & May 2011), on the merged pool, as Moses's ``pro`` + megam.

For each dev sentence, ``samples`` (Γ = 5000) candidate pairs are drawn
uniformly with replacement (seeded); pairs whose sentence BLEU+1 differs by
at most ``min_diff`` (α = 0.05, BLEU as a fraction) are dropped, and the
``keep`` (Ξ = 50) pairs with the largest difference are kept. Each kept pair
``(a, b)`` gives two examples, ``h_a − h_b`` with label ``sign(BLEU_a − BLEU_b)``
and its negation. A logistic regression without bias (Moses runs ``megam
-fvals -maxi 30 -nobias binary``) is fitted by Newton's method (at most
``max_iterations`` = 30 steps, a small L2 term ``l2`` so separable data has a
finite optimum). The result is normalised to Σ|λ| = 1 and interpolated with
the (normalised) current weights: ``ψ·w_pro + (1 − ψ)·w_current``, ψ =
``interpolation`` = 0.1 (Hopkins & May §5.4.3; ``mert-moses.pl
--historic-interpolation``, which applies it from iteration 4 on -- the
caller decides, ``interpolation=1`` is none). Sentence BLEU+1 is Moses's
``smoothedSentenceBleu``: +1 on the matches and n-grams of *every* order,
no smoothing of the brevity penalty. Features in ``fixed`` keep their weight
(their column is left out of the regression).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from smt_features.tune.blas import single_blas_thread
from smt_features.tune.bleu_stats import ORDER
from smt_features.tune.mert import normalise_l1
from smt_features.tune.pool import NBestPool, PoolArrays, optimizer_inputs


@dataclass
class ProOptions:
    """Options of :func:`pro` (the paper's and Moses's settings; see the module docstring)."""

    samples: int = 5000
    min_diff: float = 0.05
    keep: int = 50
    interpolation: float = 0.1
    max_iterations: int = 30
    l2: float = 1e-4
    seed: int = 1
    fixed: Sequence[str | int] = ()
    impl: str = "fast"  # 'fast' (vectorised sampling) or 'reference' (per sentence): the same pairs


@dataclass
class ProResult:
    weights: np.ndarray
    bleu: float  # corpus BLEU (percent) of the pool's 1-bests under ``weights``
    init_bleu: float
    pairs: int  # kept pairs (each gives two examples)
    seconds: float


def bleu_plus_one(stats: np.ndarray) -> np.ndarray:
    """Moses's ``smoothedSentenceBleu`` (smoothing 1, every order; a fraction) of each row of ``stats``."""
    m = stats[:, 0:2 * ORDER:2] + 1.0
    t = stats[:, 1:2 * ORDER:2] + 1.0
    logbleu = (np.log(m) - np.log(t)).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        brevity = 1.0 - stats[:, 2 * ORDER] / stats[:, 1]
    brevity = np.where(np.isfinite(brevity), brevity, -np.inf)
    return np.exp(logbleu + np.minimum(brevity, 0.0))


def sample_pairs_reference(arrays: PoolArrays, opts: ProOptions,
                           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The kept pairs' feature differences ``(n, D)`` and labels ``(n,)`` (both directions), sentence by
    sentence (the reference of :func:`sample_pairs`)."""
    bleu = bleu_plus_one(arrays.stats)
    diffs, labels = [], []
    for s in range(arrays.num_sentences):
        lo, hi = int(arrays.offsets[s]), int(arrays.offsets[s + 1])
        if hi - lo < 2:
            continue
        a = rng.integers(lo, hi, size=opts.samples)
        b = rng.integers(lo, hi, size=opts.samples)
        gap = bleu[a] - bleu[b]
        ok = np.flatnonzero(np.abs(gap) > opts.min_diff)
        if ok.size == 0:
            continue
        top = ok[np.argsort(-np.abs(gap[ok]), kind="stable")[:opts.keep]]
        d = arrays.features[a[top]] - arrays.features[b[top]]
        y = np.sign(gap[top])
        diffs += [d, -d]
        labels += [y, -y]
    if not diffs:
        return np.zeros((0, arrays.features.shape[1])), np.zeros(0)
    return np.concatenate(diffs), np.concatenate(labels)


#: sentences handled together by :func:`sample_pairs` (bounds its arrays: CHUNK × samples draws)
CHUNK = 64


def sample_pairs(arrays: PoolArrays, opts: ProOptions, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """:func:`sample_pairs_reference`, the same arrays: the draws are made sentence by sentence (the generator's
    stream), everything else for :data:`CHUNK` sentences at once. Per sentence the pairs that differ by more
    than ``min_diff`` are ranked by decreasing difference, ties in draw order (the reference's stable sort),
    and the first ``keep`` kept; rows come out as there, each sentence's pairs then their negations."""
    bleu = bleu_plus_one(arrays.stats)
    offsets = arrays.offsets.tolist()
    sents = [s for s in range(arrays.num_sentences) if offsets[s + 1] - offsets[s] >= 2]
    dim = arrays.features.shape[1]
    xs, ys = [], []
    for c in range(0, len(sents), CHUNK):
        x, y = _chunk_pairs(arrays, bleu, offsets, sents[c:c + CHUNK], opts, rng)
        xs.append(x)
        ys.append(y)
    if not xs:
        return np.zeros((0, dim)), np.zeros(0)
    return np.concatenate(xs), np.concatenate(ys)


def _chunk_pairs(arrays: PoolArrays, bleu: np.ndarray, offsets: list[int], sents: list[int], opts: ProOptions,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The examples of the sentences ``sents`` (see :func:`sample_pairs`)."""
    dim = arrays.features.shape[1]
    a = np.empty((len(sents), opts.samples), dtype=np.int64)
    b = np.empty_like(a)
    for i, s in enumerate(sents):
        a[i] = rng.integers(offsets[s], offsets[s + 1], size=opts.samples)
        b[i] = rng.integers(offsets[s], offsets[s + 1], size=opts.samples)
    gap = bleu[a] - bleu[b]
    key = np.where(np.abs(gap) > opts.min_diff, -np.abs(gap), np.inf)
    keep = min(opts.keep, opts.samples)
    if keep < opts.samples:  # the `keep` smallest keys of each row, ties in draw order: a partition first
        kth = np.partition(key, keep - 1, axis=1)[:, keep - 1:keep]
        cand_row, cand_col = np.nonzero(key <= kth)
        rank = np.lexsort((cand_col, key[cand_row, cand_col], cand_row))
        cand_row, cand_col = cand_row[rank], cand_col[rank]
        first = np.searchsorted(cand_row, np.arange(len(sents)))
        pos = np.arange(len(cand_row)) - first[cand_row]
        take = pos < keep
        rows, cols = cand_row[take], cand_col[take]
    else:
        cols = np.argsort(key, axis=1, kind="stable")
        rows = np.repeat(np.arange(len(sents)), cols.shape[1])
        cols = cols.ravel()
    chosen = np.isfinite(key[rows, cols])
    rows, cols = rows[chosen], cols[chosen]
    if len(rows) == 0:
        return np.zeros((0, dim)), np.zeros(0)
    d = arrays.features[a[rows, cols]] - arrays.features[b[rows, cols]]
    y = np.sign(gap[rows, cols])
    # per sentence: its pairs, then their negations (the reference's [d, -d] blocks)
    counts = np.bincount(rows, minlength=len(sents))
    starts = np.concatenate(([0], np.cumsum(2 * counts)[:-1]))
    within = np.arange(len(rows)) - np.concatenate(([0], np.cumsum(counts)[:-1]))[rows]
    where = starts[rows] + within
    x = np.empty((2 * len(rows), dim))
    labels = np.empty(2 * len(rows))
    x[where], x[where + counts[rows]] = d, -d
    labels[where], labels[where + counts[rows]] = y, -y
    return x, labels


def logistic_regression(x: np.ndarray, y: np.ndarray, max_iterations: int = 30, l2: float = 1e-4) -> np.ndarray:
    """Weights of ``P(y = +1 | x) = σ(w·x)`` (no bias, labels ±1) by Newton's method with an L2 term."""
    n, dim = x.shape
    w = np.zeros(dim)
    reg = l2 * max(n, 1)
    for _ in range(max_iterations):
        margin = y * (x @ w)
        p = 1.0 / (1.0 + np.exp(np.clip(margin, -500, 500)))  # σ(−margin)
        grad = -(x * (y * p)[:, None]).sum(axis=0) + reg * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + reg * np.eye(dim)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return w


def pro(pool: NBestPool | PoolArrays, init_weights: Sequence[float], options: ProOptions | None = None, *,
        feature_names: Sequence[str] | None = None) -> ProResult:
    """PRO over the pool, interpolated with ``init_weights`` (see the module docstring)."""
    with single_blas_thread():
        return _pro(pool, init_weights, options, feature_names=feature_names)


def _pro(pool: NBestPool | PoolArrays, init_weights: Sequence[float], options: ProOptions | None = None, *,
         feature_names: Sequence[str] | None = None) -> ProResult:
    opts = options or ProOptions()
    t0 = time.perf_counter()
    arrays, _, w0, fixed = optimizer_inputs(pool, init_weights, opts.fixed, feature_names)
    dim = arrays.features.shape[1]
    free = np.array([i for i in range(dim) if i not in fixed], dtype=np.int64)
    if free.size == 0:
        raise ValueError("every feature is fixed: nothing to tune")
    if opts.impl not in ("fast", "reference"):
        raise ValueError(f"impl must be fast or reference, not {opts.impl!r}")
    rng = np.random.default_rng(opts.seed)
    x, y = (sample_pairs_reference if opts.impl == "reference" else sample_pairs)(arrays, opts, rng)
    init_bleu = arrays.bleu(w0)
    if len(y) == 0:  # no pair differs enough: keep the weights
        return ProResult(w0, init_bleu, init_bleu, 0, time.perf_counter() - t0)
    scale_free = not any(w0[i] != 0.0 for i in fixed)
    learned = w0.copy()
    learned[free] = logistic_regression(x[:, free], y, opts.max_iterations, opts.l2)
    if scale_free:
        new = opts.interpolation * normalise_l1(learned) + (1 - opts.interpolation) * normalise_l1(w0)
        new = normalise_l1(new)
    else:  # a fixed weight sets the scale: interpolate the free weights as they are
        new = w0.copy()
        new[free] = opts.interpolation * learned[free] + (1 - opts.interpolation) * w0[free]
    return ProResult(new, arrays.bleu(new), init_bleu, len(y) // 2, time.perf_counter() - t0)

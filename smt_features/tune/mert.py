"""The MERT optimiser (Och 2003) on a candidate pool: Moses's ``SimpleOptimizer`` with random restarts.

* :func:`mert` — Moses's ``SimpleOptimizer`` ("powell"): from a start point,
  line-search (:func:`smt_features.tune.envelope.line_search`) along every
  coordinate direction (plus ``random_directions`` random unit directions per
  round), move to the best point found, repeat until BLEU improves by less
  than ``tol``; run from the given weights and from ``restarts`` random points
  (uniform in per-feature ranges, default ``[-1, 1]``), keep the best. Weights
  are rescaled to ``Σ|λ| = 1`` after each move and at the end (scaling does not
  change any 1-best). Fixed features keep their weight (their direction
  component is 0; a fixed non-zero weight sets the scale, so nothing is
  rescaled then; features fixed at 0 -- a feature switched off -- do not stop
  the rescaling). Deterministic for a given ``seed``. ``workers`` > 1 climbs
  the starts in that many forked processes, with the same result (without
  random directions each start's climb is independent of the others).
* :func:`optimise` — the same from plain Python lists, for a reranker.

The candidates are an :class:`smt_features.tune.pool.NBestPool`. BLEU is in
percent (0–100) throughout, computed on tokenized text (see
:mod:`smt_features.tune.bleu_stats`).
"""
from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from smt_features.model.weights import value_indices
from smt_features.tune.blas import single_blas_thread
from smt_features.tune.envelope import INF, line_search
from smt_features.tune.kernel import CompiledLineSearch, compiled_line_search
from smt_features.tune.pool import NBestPool, PoolArrays


@dataclass
class MertOptions:
    """Options of :func:`mert` (see the module docstring)."""

    restarts: int = 20
    random_directions: int = 0
    seed: int = 1
    tol: float = 1e-3
    max_rounds: int = 100
    min_interval: float = 1e-4
    edge_step: float = 0.1
    normalise: bool = True
    fixed: Sequence[str | int] = ()
    ranges: Mapping[str | int, tuple[float, float]] | None = None
    default_range: tuple[float, float] = (-1.0, 1.0)
    clip_to_ranges: bool = False
    progress: bool = False
    workers: int = 1  # processes climbing the starts (the same result for any number)
    kernel: str = "auto"  # line search: compiled kernel when built ('auto'), 'compiled' or 'python' (same result)


@dataclass
class MertResult:
    weights: np.ndarray
    bleu: float
    feature_names: list[str]
    init_bleu: float  # at the given initial weights
    start_bleus: list[float]  # reached from each start (0: the initial weights, then extra, then random)
    best_start: int
    line_searches: int
    seconds: float

    def weight_dict(self) -> dict[str, float]:
        return {n: float(w) for n, w in zip(self.feature_names, self.weights)}


def normalise_l1(weights: np.ndarray) -> np.ndarray:
    """``weights / Σ|weights|`` (unchanged when all are 0)."""
    total = float(np.abs(weights).sum())
    return weights / total if total > 0 else weights


def mert(pool: NBestPool | PoolArrays, init_weights: Sequence[float] | Mapping[str, float],
         options: MertOptions | None = None, *, feature_names: Sequence[str] | None = None,
         extra_starts: Sequence[Sequence[float]] = ()) -> MertResult:
    """Optimise BLEU of the pool's 1-bests over the weights (see the module docstring)."""
    opts = options or MertOptions()
    t0 = time.perf_counter()
    if isinstance(pool, NBestPool):
        arrays = pool.arrays()
        names = list(pool.feature_names or [])
    else:
        arrays = pool
        names = list(feature_names or [f"F{i}" for i in range(arrays.features.shape[1])])
    dim = arrays.features.shape[1]
    if len(names) != dim:
        raise ValueError(f"{len(names)} feature names for {dim} features")
    if isinstance(init_weights, Mapping):
        unknown = set(init_weights) - set(names)
        if unknown:
            raise ValueError(f"initial weights for unknown features {sorted(unknown)}; features: {' '.join(names)}")
        missing = [n for n in names if n not in init_weights]
        if missing:
            raise ValueError(f"no initial weight for {missing}")
        w0 = np.array([init_weights[n] for n in names], dtype=np.float64)
    else:
        w0 = np.asarray(init_weights, dtype=np.float64).copy()
        if w0.shape != (dim,):
            raise ValueError(f"{w0.size} initial weights for {dim} features")
    fixed = value_indices(opts.fixed, names)
    free = [i for i in range(dim) if i not in fixed]
    if not free:
        raise ValueError("every feature is fixed: nothing to tune")
    lo_b = np.full(dim, opts.default_range[0])
    hi_b = np.full(dim, opts.default_range[1])
    for key, (lo, hi) in (opts.ranges or {}).items():
        if lo > hi:
            raise ValueError(f"range of {key}: {lo} > {hi}")
        for i in value_indices([key], names):
            lo_b[i], hi_b[i] = lo, hi
    # BLEU does not change when all weights are scaled, so runs are normalised (Σ|λ| = 1) -- unless a fixed
    # feature has a non-zero weight, which then sets the scale (a feature fixed at 0 stays 0 under scaling)
    scale_free = not any(w0[i] != 0.0 for i in fixed)
    rescale = opts.normalise and scale_free and not opts.clip_to_ranges
    with single_blas_thread():
        init_bleu = arrays.bleu(w0)
    rng = np.random.default_rng(opts.seed)
    starts = [w0]
    for extra in extra_starts:
        w = np.asarray(extra, dtype=np.float64).copy()
        if w.shape != (dim,):
            raise ValueError(f"an extra start has {w.size} weights for {dim} features")
        w[fixed] = w0[fixed]
        starts.append(w)
    for _ in range(opts.restarts):
        w = w0.copy()
        w[free] = rng.uniform(lo_b[free], hi_b[free])
        starts.append(w)
    climb = _Climb(arrays, opts, free, lo_b, hi_b, rescale, rng, compiled_line_search(arrays, opts.kernel))
    workers = max(1, opts.workers) if opts.random_directions == 0 else 1  # random directions share one rng
    with single_blas_thread():
        climbed = _climb_all(climb, starts, workers, opts.progress)
    results = [(score, point) for score, point, _ in climbed]
    n_ls = sum(n for _, _, n in climbed)
    best_i = max(range(len(results)), key=lambda i: (results[i][0], -i))
    score, point = results[best_i]
    if opts.normalise and scale_free:
        point = normalise_l1(point)
        with single_blas_thread():
            score = arrays.bleu(point)
    return MertResult(point, score, names, init_bleu, [r[0] for r in results], best_i, n_ls,
                      time.perf_counter() - t0)


_CLIMB: "_Climb | None" = None  # the climb a forked worker runs (set in the parent just before the fork)


def _climb_all(climb: "_Climb", starts: list[np.ndarray], workers: int,
               progress: bool) -> list[tuple[float, np.ndarray, int]]:
    """Every start's climb, in start order: here, or in ``workers`` forked processes."""
    global _CLIMB
    pool = None
    climbed: Iterable[tuple[float, np.ndarray, int]]
    if workers > 1 and len(starts) > 1:
        # the sort orders are cached before the fork, once for every worker (the kernel sorts in `workers`
        # threads: it releases the GIL)
        if climb.fast is None:
            for k in climb.free:
                climb.arrays.coordinate_order(k)
        else:
            with ThreadPoolExecutor(min(workers, len(climb.free))) as threads:
                list(threads.map(climb.fast.plan, climb.free))
        _CLIMB = climb
        pool = multiprocessing.get_context("fork").Pool(min(workers, len(starts)))
        climbed = pool.imap(_climb_in_worker, starts)
    else:
        climbed = map(climb, starts)
    if progress:
        from tqdm import tqdm

        climbed = tqdm(climbed, total=len(starts), desc="mert restarts", leave=False, mininterval=1.0)
    try:
        return list(climbed)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
            _CLIMB = None


def _climb_in_worker(start: np.ndarray) -> tuple[float, np.ndarray, int]:
    assert _CLIMB is not None
    return _CLIMB(start)


class _Climb:
    """One start's coordinate ascent: ``(BLEU, point, line searches)`` (see :func:`mert`).

    With ``fast`` (the compiled kernel) every line search and BLEU gives the same numbers as the
    reference's; the model scores of an accepted point are also reused as the next round's
    intercepts (the same ``features @ point`` product)."""

    def __init__(self, arrays: PoolArrays, opts: MertOptions, free: list[int], lo_b: np.ndarray,
                 hi_b: np.ndarray, rescale: bool, rng: np.random.Generator,
                 fast: CompiledLineSearch | None = None):
        self.arrays, self.opts, self.free, self.lo_b, self.hi_b = arrays, opts, free, lo_b, hi_b
        self.rescale, self.rng, self.fast = rescale, rng, fast
        self.dim = arrays.features.shape[1]
        self.free_arr = np.array(free)
        self._bufs: tuple[np.ndarray, np.ndarray] | None = None

    def _score(self, point: np.ndarray, avoid: np.ndarray | None = None) -> tuple[float, np.ndarray | None]:
        """BLEU of the 1-bests under ``point`` and, with the kernel, the model scores ``features @ point``
        (written into whichever of two buffers is not ``avoid``: no fresh pages for every product)."""
        if self.fast is None:
            return self.arrays.bleu(point), None
        if self._bufs is None:
            self._bufs = (np.empty(len(self.arrays.features)), np.empty(len(self.arrays.features)))
        out = self._bufs[1] if avoid is self._bufs[0] else self._bufs[0]
        scores = np.matmul(self.arrays.features, point, out=out)
        return self.fast.bleu_of_scores(scores), scores

    def __call__(self, start: np.ndarray) -> tuple[float, np.ndarray, int]:
        arrays, opts, free, lo_b, hi_b, dim = self.arrays, self.opts, self.free, self.lo_b, self.hi_b, self.dim
        n_ls = 0
        point = normalise_l1(start) if self.rescale else start.copy()
        if opts.clip_to_ranges:
            point[free] = np.clip(point[free], lo_b[free], hi_b[free])
        score, scores = self._score(point)
        for _round in range(opts.max_rounds):
            a = arrays.features @ point if scores is None else scores
            best_score, best_point = -INF, None
            directions: list[tuple[np.ndarray, int]] = []
            for k in free:
                d = np.zeros(dim)
                d[k] = 1.0
                directions.append((d, k))
            for _ in range(opts.random_directions):
                d = np.zeros(dim)
                v = self.rng.normal(size=len(free))
                d[self.free_arr] = v / np.linalg.norm(v)
                directions.append((d, -1))
            for d, k in directions:
                if k >= 0:  # coordinate direction: slopes are a feature column, its sort order is cached
                    b = arrays.features[:, k]
                    order = arrays.coordinate_order(k) if self.fast is None else None
                else:
                    b, order = arrays.features @ d, None
                lo, hi = -INF, INF
                if opts.clip_to_ranges:
                    lo, hi = _gamma_bounds(point, d, lo_b, hi_b)
                if self.fast is None:
                    res = line_search(arrays, a, b, order=order, lo=lo, hi=hi, min_interval=opts.min_interval,
                                      edge_step=opts.edge_step)
                elif k >= 0:
                    res = self.fast.coordinate_search(a, k, lo=lo, hi=hi, min_interval=opts.min_interval,
                                                      edge_step=opts.edge_step)
                else:
                    res = self.fast.line_search(a, b, lo=lo, hi=hi, min_interval=opts.min_interval,
                                                edge_step=opts.edge_step)
                n_ls += 1
                if res.bleu > best_score:
                    best_score, best_point = res.bleu, point + res.gamma * d
            assert best_point is not None
            new_point = normalise_l1(best_point) if self.rescale else best_point
            new_score, new_scores = self._score(new_point, avoid=scores)  # the real score (no drift from the sweep)
            if new_score - score > opts.tol:
                point, score, scores = new_point, new_score, new_scores
            else:
                if new_score > score:
                    point, score = new_point, new_score
                break
        return score, point, n_ls


def _gamma_bounds(point: np.ndarray, d: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray) -> tuple[float, float]:
    """The γ range keeping ``point + γ·d`` inside the box (features with ``d = 0`` do not bound it)."""
    lo, hi = -INF, INF
    for i in np.flatnonzero(d):
        g1 = (lo_b[i] - point[i]) / d[i]
        g2 = (hi_b[i] - point[i]) / d[i]
        lo = max(lo, min(g1, g2))
        hi = min(hi, max(g1, g2))
    return min(lo, 0.0), max(hi, 0.0)  # the point is inside the box (up to rounding)


def optimise(nbest_lists: Sequence[Sequence[Any]], references: Sequence[str] | Sequence[Sequence[str]],
             init_weights: Sequence[float] | Mapping[str, float], *, feature_names: Sequence[str] | None = None,
             restarts: int = 20, random_directions: int = 0, seed: int = 1, fixed: Sequence[str | int] = (),
             ranges: Mapping[str | int, tuple[float, float]] | None = None, ref_length: str = "closest",
             **options: Any) -> tuple[np.ndarray | dict[str, float], float]:
    """MERT on given n-best lists; returns ``(weights, tokenized corpus BLEU in percent)``.

    ``nbest_lists[i]`` holds sentence ``i``'s candidates, each either an
    :class:`nmt.core.formats.nbest.NBestEntry` (its features are used as the
    n-best file gives them) or a pair ``(hypothesis, feature values)``;
    ``references[i]`` is the tokenized reference (or a list of them).
    ``init_weights`` is a sequence in feature order, or a mapping from
    feature name (then the weights come back as a mapping too). Further
    keyword options: the fields of :class:`MertOptions`.
    """
    pool = NBestPool.from_lists(nbest_lists, references, ref_length=ref_length, feature_names=feature_names)
    opts = MertOptions(restarts=restarts, random_directions=random_directions, seed=seed, fixed=fixed,
                       ranges=ranges, **options)
    result = mert(pool, init_weights, opts)
    if isinstance(init_weights, Mapping):
        return result.weight_dict(), result.bleu
    return result.weights, result.bleu

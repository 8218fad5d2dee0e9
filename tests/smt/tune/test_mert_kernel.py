"""MERT's compiled line search (smt_features.tune.kernel) against the numpy reference (envelope.py, mert.py):
the same γ, BLEU, intervals and, through whole MERT runs, bit-identical weights — on random pools (ties,
integer features, ranges, random directions, forked workers) and on a real pool (tests/data/mert).

Needs the extension: ``bash third_party/build_mert.sh`` (skipped otherwise, except the fallback tests).
"""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from smt_features.tune import kernel
from smt_features.tune.envelope import line_search
from smt_features.tune.mert import MertOptions, mert
from smt_features.tune.pool import PoolArrays
from tests import TEST_DATA

DATA = TEST_DATA / "mert"
BUILT = kernel.available()
needs_ext = pytest.mark.skipif(not BUILT, reason=f"compiled MERT kernel not built: run `{kernel.BUILD_COMMAND}`")


def real_pool() -> tuple[PoolArrays, list[str]]:
    with gzip.open(DATA / "m30k_pool.txt.gz", "rt", encoding="utf-8") as fh:
        names = fh.readline().lstrip("# ").split()
        sent, feats, stats = [], [], []
        for line in fh:
            s, f, st = line.split(" ||| ")
            sent.append(int(s))
            feats.append([float(v) for v in f.split()])
            stats.append([float(v) for v in st.split()])
    sent_a = np.array(sent)
    offsets = np.concatenate(([0], np.cumsum(np.bincount(sent_a))))
    return PoolArrays(np.array(feats), np.array(stats), sent_a, offsets), names


def random_pool(seed: int, n_sent: int = 40, max_cand: int = 60, dim: int = 5) -> PoolArrays:
    """Random pools with what makes envelopes hard: integer features (equal slopes), duplicated rows
    (equal lines), a constant feature, sentences with one candidate, and BLEU statistics of all sizes."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_cand, size=n_sent)
    sizes[rng.integers(n_sent)] = 1
    n = int(sizes.sum())
    feats = rng.normal(size=(n, dim)) * rng.choice([0.1, 1.0, 30.0], size=dim)
    feats[:, 0] = -rng.integers(3, 12, size=n)  # word-penalty-like: many ties
    feats[:, 1] = np.round(feats[:, 1], 1)  # coarse values: ties too
    if dim > 4:
        feats[:, 4] = 1.0  # constant
    dup = rng.random(n) < 0.1
    feats[1:][dup[1:]] = feats[:-1][dup[1:]]  # copies of the previous row (across sentences too)
    stats = np.zeros((n, 9))
    length = rng.integers(1, 25, size=n)
    for k in range(4):
        stats[:, 2 * k + 1] = np.maximum(length - k, 0)
        stats[:, 2 * k] = rng.binomial(stats[:, 2 * k + 1].astype(int), rng.uniform(0.1, 0.9))
    stats[:, 8] = rng.integers(5, 20, size=n)
    return PoolArrays(feats, stats, np.repeat(np.arange(n_sent), sizes), np.concatenate(([0], np.cumsum(sizes))))


def same_result(r1, r2) -> None:
    assert (r1.gamma, r1.bleu, r1.num_intervals, r1.interval) == (r2.gamma, r2.bleu, r2.num_intervals, r2.interval)


def same_mert(a, b) -> None:
    assert np.array_equal(a.weights, b.weights), (a.weights, b.weights)
    assert (a.bleu, a.init_bleu, a.start_bleus, a.best_start, a.line_searches) == \
        (b.bleu, b.init_bleu, b.start_bleus, b.best_start, b.line_searches)


@needs_ext
@pytest.mark.parametrize("seed", range(8))
def test_line_searches_equal_the_reference_on_random_pools(seed):
    arrays = random_pool(seed)
    fast = kernel.compiled_line_search(arrays, "compiled")
    rng = np.random.default_rng(seed)
    dim = arrays.features.shape[1]
    for trial in range(18):
        point = rng.normal(size=dim) * rng.choice([1e-3, 1.0, 1e3])
        if trial % 4 == 0:
            point[rng.integers(dim)] = 0.0
        a = arrays.features @ point
        if trial % 3 == 1:  # coarse intercepts: equal lines, equal lifted values, collinear triples
            a = np.round(a, 0 if trial % 2 else 1)
        lo, hi = (-np.inf, np.inf) if trial % 3 else (-rng.uniform(0, 2), rng.uniform(0, 2))
        for k in range(dim):
            ref = line_search(arrays, a, arrays.features[:, k], order=arrays.coordinate_order(k), lo=lo, hi=hi)
            same_result(ref, fast.coordinate_search(a, k, lo=lo, hi=hi))
        d = rng.normal(size=dim)
        b = arrays.features @ d
        same_result(line_search(arrays, a, b, lo=lo, hi=hi, min_interval=0.0),
                    fast.line_search(a, b, lo=lo, hi=hi, min_interval=0.0))
        assert fast.bleu(point) == arrays.bleu(point)
        assert np.array_equal(fast.one_best_of_scores(arrays.features @ point), arrays.one_best(point))


@needs_ext
def test_tiny_and_degenerate_pools():
    # fewer than three lines in all (no staircase filter), one sentence, one candidate per sentence
    for sizes in ([1], [2], [1, 1], [1, 2], [3], [2, 1, 1]):
        n = sum(sizes)
        feats = np.arange(n * 2, dtype=float).reshape(n, 2) % 3
        stats = np.tile([3, 5, 2, 4, 1, 3, 1, 2, 5], (n, 1)).astype(float)
        stats[:, 0] += np.arange(n)
        arrays = PoolArrays(feats, stats, np.repeat(np.arange(len(sizes)), sizes),
                            np.concatenate(([0], np.cumsum(sizes))))
        fast = kernel.compiled_line_search(arrays, "compiled")
        a = feats @ np.array([0.3, -0.7])
        for k in range(2):
            same_result(line_search(arrays, a, feats[:, k], order=arrays.coordinate_order(k)),
                        fast.coordinate_search(a, k))
        with pytest.raises(ValueError, match="empty search range"):
            fast.coordinate_search(a, 0, lo=1.0, hi=0.5)


@needs_ext
@pytest.mark.parametrize("seed", range(4))
def test_mert_weights_equal_the_reference_on_random_pools(seed):
    arrays = random_pool(100 + seed, n_sent=30, dim=5)
    init = np.random.default_rng(seed).normal(size=5)
    variants = [dict(restarts=4), dict(restarts=3, random_directions=2),
                dict(restarts=3, fixed=[1]),
                dict(restarts=3, clip_to_ranges=True, ranges={0: (-0.5, 0.5), 2: (0.0, 1.0)})]
    for v in variants:
        ref = mert(arrays, init, MertOptions(seed=seed, kernel="python", **v))
        same_mert(ref, mert(arrays, init, MertOptions(seed=seed, kernel="compiled", **v)))
    forked = mert(arrays, init, MertOptions(seed=seed, kernel="compiled", restarts=4, workers=2))
    same_mert(mert(arrays, init, MertOptions(seed=seed, kernel="python", restarts=4)), forked)


@needs_ext
def test_mert_weights_equal_the_reference_on_a_real_pool():
    arrays, names = real_pool()
    assert len(names) == 14 and arrays.num_sentences == 25 and len(arrays.features) == 7487
    init = np.full(14, 1.0 / 14)
    for seed in (1, 2):
        ref = mert(arrays, init, MertOptions(seed=seed, restarts=6, kernel="python"), feature_names=names)
        fast = mert(arrays, init, MertOptions(seed=seed, restarts=6, kernel="compiled"), feature_names=names)
        same_mert(ref, fast)
        assert ref.bleu > ref.init_bleu  # a real optimisation happened


def test_fallback_to_the_reference():
    arrays = random_pool(3, n_sent=10)
    assert kernel.compiled_line_search(arrays, "python") is None
    # non-integer statistics (--ref-length average) are summed in numpy's order only by the reference
    arrays.stats[:, 8] += 0.5
    assert kernel.compiled_line_search(arrays, "auto") is None
    with pytest.raises(kernel.CompiledKernelUnavailable, match="not integers"):
        kernel.compiled_line_search(arrays, "compiled")
    with pytest.raises(Exception, match="kernel must be one of"):
        kernel.compiled_line_search(arrays, "fast")
    init = np.full(5, 0.2)
    a = mert(arrays, init, MertOptions(restarts=2, kernel="auto"))
    same_mert(mert(arrays, init, MertOptions(restarts=2, kernel="python")), a)


@needs_ext
def test_kernel_refuses_inconsistent_inputs():
    arrays = random_pool(4, n_sent=5)
    fast = kernel.compiled_line_search(arrays, "compiled")
    plan = fast.plan(0)
    with pytest.raises(ValueError):
        fast.ext.sweep(np.zeros(3), plan, fast.offsets, fast.stats, -np.inf, np.inf, 1e-4, 1e-6)
    bad = bytearray(plan)
    bad[8:12] = (10 ** 6).to_bytes(4, "little")  # a row outside its sentence
    with pytest.raises(ValueError, match="own rows"):
        fast.ext.sweep(np.zeros(len(arrays.features)), bytes(bad), fast.offsets, fast.stats, -np.inf, np.inf,
                       1e-4, 1e-6)
    with pytest.raises(TypeError, match="float64"):
        fast.ext.sweep(np.zeros(len(arrays.features), dtype=np.float32), plan, fast.offsets, fast.stats,
                       -np.inf, np.inf, 1e-4, 1e-6)


@needs_ext
def test_lines_that_the_lift_makes_equal():
    """The staircase filter compares fl(a + s·big): with big ~4e6 and 30 sentences, intercepts 1e-9 apart
    round to the same lifted value, so the reference keeps lines an exact comparison would drop."""
    rng = np.random.default_rng(7)
    sizes = np.full(30, 12)
    n = int(sizes.sum())
    feats = rng.integers(-6, 6, size=(n, 2)).astype(float)
    stats = np.tile([6, 9, 4, 8, 2, 7, 1, 6, 9], (n, 1)).astype(float)
    stats[:, 0] = rng.integers(1, 9, size=n)
    stats[:, 2] = rng.integers(1, 8, size=n)
    arrays = PoolArrays(feats, stats, np.repeat(np.arange(30), sizes), np.concatenate(([0], np.cumsum(sizes))))
    fast = kernel.compiled_line_search(arrays, "compiled")
    for trial in range(20):
        a = 1000.0 + rng.integers(0, 4, size=n) * 1e-9 * rng.choice([1.0, 3.0])
        a[rng.integers(12)] = 2e6  # sentence 0 sets big
        a[12 + rng.integers(12)] = -2e6
        for k in range(2):
            ref = line_search(arrays, a, feats[:, k], order=arrays.coordinate_order(k))
            same_result(ref, fast.coordinate_search(a, k))


def test_optimisers_run_blas_on_one_thread():
    """OpenBLAS's threaded gemv rounds some rows differently: the optimisers' products run on one thread."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from smt_features.tune.blas import single_blas_thread

    np.ones((3, 3)) @ np.ones(3)  # BLAS loaded
    with single_blas_thread():
        blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        assert blas and all(i["num_threads"] == 1 for i in blas)

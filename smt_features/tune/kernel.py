"""MERT's compiled line search (``csrc/mert_kernel.cpp``): the same γ and BLEU as :mod:`~smt_features.tune.envelope`.

The numpy line search (:func:`smt_features.tune.envelope.line_search`) stays the
reference and the fallback. The kernel, built by ``third_party/build_mert.sh``
into ``smt_features/tune/_mert_kernel*.so``, computes the envelopes of all
sentences and the summed BLEU statistics of every γ interval with the same
floating-point operations on the same values (no fused multiply-add; the
statistics are integers, so their sums are exact in any order). It returns
only the intervals whose BLEU, computed with libm, is within ``MARGIN`` of
the best; their BLEU is then computed by numpy's
:func:`~smt_features.tune.bleu_stats.bleu_from_stats` and the interval chosen
by :func:`~smt_features.tune.envelope.pick_interval`, as in the reference. So
the result is bit-identical to the reference's (``tests/test_mert_kernel.py``
compares them on random and real pools), while numpy's own log/exp may
differ from libm's in the last bits.

``kernel='auto'`` (the default of :class:`smt_features.tune.mert.MertOptions`)
uses the kernel when it is built and the pool's statistics are integers
below 2^40 (always, except ``--ref-length average`` with several
references); ``'compiled'`` fails when it cannot; ``'python'`` never uses it.
"""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

from nmt.core.errors import UsageError
from smt_features.tune.bleu_stats import NUM_STATS, bleu_from_stats
from smt_features.tune.envelope import INF, LineSearchResult, pick_interval

log = logging.getLogger(__name__)

ABI_VERSION = 1
BUILD_COMMAND = "bash third_party/build_mert.sh"
KERNELS = ("auto", "compiled", "python")
#: intervals whose libm BLEU is this close (BLEU points) to the best are re-scored by numpy; the two
#: differ by ~1e-13, so every interval the reference could pick is among them
MARGIN = 1e-6
_MAX_EXACT = float(2 ** 40)


class CompiledKernelUnavailable(UsageError):
    """``kernel='compiled'`` was asked for but cannot be used."""


def load_extension() -> tuple[Any, str | None]:
    """``(module, None)`` when ``smt_features.tune._mert_kernel`` imports and is current, else ``(None, why)``."""
    try:
        from smt_features.tune import _mert_kernel
    except ImportError as err:
        return None, f"cannot import smt_features.tune._mert_kernel: {err}"
    if getattr(_mert_kernel, "ABI_VERSION", None) != ABI_VERSION:
        return None, "smt_features.tune._mert_kernel is from another version of this code; rebuild it"
    return _mert_kernel, None


def available() -> bool:
    """True when the compiled kernel is built and importable."""
    return load_extension()[0] is not None


def exact_stats_reason(stats: np.ndarray) -> str | None:
    """Why summing ``stats`` in another order could change a bit (None: integers, sums far below 2^53)."""
    if stats.size and not np.array_equal(stats, np.rint(stats)):
        return "the BLEU statistics are not integers (--ref-length average)"
    if stats.size and float(np.abs(stats).max()) * len(stats) >= _MAX_EXACT:
        return "the BLEU statistics are too large for exact sums"
    return None


class CompiledLineSearch:
    """The kernel bound to one pool's arrays (:class:`smt_features.tune.pool.PoolArrays`)."""

    def __init__(self, arrays: Any, ext: Any) -> None:
        self.arrays, self.ext = arrays, ext
        self.offsets = np.ascontiguousarray(arrays.offsets, dtype=np.int64)
        self.stats = np.ascontiguousarray(arrays.stats, dtype=np.float64)
        if self.stats.shape != (len(arrays.features), NUM_STATS) or int(self.offsets[-1]) != len(arrays.features):
            raise ValueError("pool arrays of inconsistent sizes")
        if not np.array_equal(arrays.sent, np.repeat(np.arange(len(self.offsets) - 1), np.diff(self.offsets))):
            raise ValueError("the pool's rows are not grouped by sentence in offset order")
        self._plans: dict[int, bytes] = {}

    def plan(self, k: int) -> bytes:
        """The rows sorted by (sentence, feature ``k``) as the kernel takes them (cached): 16 bytes a row,
        its slope, its row and the size of its group of equal slopes."""
        plan = self._plans.get(k)
        if plan is None:
            plan = self.ext.sort_rows(np.ascontiguousarray(self.arrays.features[:, k], dtype=np.float64),
                                      self.offsets)
            self._plans[k] = plan
        return plan

    def coordinate_search(self, a: np.ndarray, k: int, *, lo: float = -INF, hi: float = INF,
                          min_interval: float = 1e-4, edge_step: float = 0.1) -> LineSearchResult:
        """As :func:`smt_features.tune.envelope.line_search` along feature ``k`` (slopes ``features[:, k]``)."""
        return self._sweep(a, self.plan(k), lo, hi, min_interval, edge_step)

    def line_search(self, a: np.ndarray, b: np.ndarray, *, lo: float = -INF, hi: float = INF,
                    min_interval: float = 1e-4, edge_step: float = 0.1) -> LineSearchResult:
        """As :func:`smt_features.tune.envelope.line_search` with slopes ``b`` (any direction)."""
        plan = self.ext.sort_rows(np.ascontiguousarray(b, dtype=np.float64), self.offsets)
        return self._sweep(a, plan, lo, hi, min_interval, edge_step)

    def _sweep(self, a: np.ndarray, plan: bytes, lo: float, hi: float, min_interval: float,
               edge_step: float) -> LineSearchResult:
        n, empty, idx, cum, cl, cr = self.ext.sweep(np.ascontiguousarray(a, dtype=np.float64), plan, self.offsets,
                                                    self.stats, float(lo), float(hi), float(min_interval), MARGIN)
        if empty:
            raise ValueError(f"empty search range [{lo}, {hi}]")
        cum_a = np.frombuffer(cum, dtype=np.float64).reshape(-1, NUM_STATS)
        cl_a = np.frombuffer(cl, dtype=np.float64)
        cr_a = np.frombuffer(cr, dtype=np.float64)
        return pick_interval(bleu_from_stats(cum_a), cl_a, cr_a, np.ones(len(cl_a), dtype=bool), int(n),
                             min_interval=min_interval, edge_step=edge_step)

    def one_best_of_scores(self, scores: np.ndarray) -> np.ndarray:
        """Row of each sentence's first highest score (as :meth:`PoolArrays.one_best` on ``features @ w``)."""
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        return np.frombuffer(self.ext.segment_argmax(scores, self.offsets), dtype=np.int64)

    def bleu_of_scores(self, scores: np.ndarray) -> float:
        """Corpus BLEU (percent) of those 1-bests: :meth:`PoolArrays.bleu` given the model scores."""
        return float(bleu_from_stats(self.stats[self.one_best_of_scores(scores)].sum(axis=0)))

    def bleu(self, weights: np.ndarray) -> float:
        """As :meth:`PoolArrays.bleu`."""
        return self.bleu_of_scores(self.arrays.features @ weights)


def compiled_line_search(arrays: Any, kernel: str = "auto") -> CompiledLineSearch | None:
    """The compiled line search for ``arrays`` per ``kernel`` (``auto``/``compiled``/``python``), or None."""
    if kernel not in KERNELS:
        raise UsageError(f"kernel must be one of {', '.join(KERNELS)}, not {kernel!r}")
    if kernel == "python":
        return None
    ext, why = load_extension()
    if ext is None:
        why = f"the compiled MERT kernel is not built ({why}); build it with `{BUILD_COMMAND}`"
    else:
        why = exact_stats_reason(np.asarray(arrays.stats))
    if why is not None:
        if kernel == "compiled":
            raise CompiledKernelUnavailable(f"kernel='compiled' but {why}")
        log.info("%s; using the numpy line search", why)
        return None
    return CompiledLineSearch(arrays, ext)

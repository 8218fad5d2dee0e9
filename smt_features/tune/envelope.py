"""Och's exact line search: the upper envelope of each sentence's score lines and the BLEU sweep over it.

Along ``λ + γ·d`` every candidate's model score is a line ``a + b·γ`` (``a = h·λ``,
``b = h·d``); the 1-best of a sentence as a function of γ is the upper envelope of its
lines. The envelopes of all sentences are computed together with numpy
(sort by sentence and slope, keep the highest line of equal slopes, then
peel points that are not on the upper convex hull of ``(b, a)`` until none
is left), their breakpoints merged and swept in order while the summed
BLEU statistics are updated incrementally; the γ interval with the highest
BLEU wins and γ is its midpoint (the unbounded end intervals: the
breakpoint ∓ ``edge_step``). Intervals narrower than ``min_interval``
are skipped (as Moses's ``min_int``); among intervals with the same BLEU
the one closest to γ = 0 is taken, and γ = 0 if it lies inside it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from smt_features.tune.bleu_stats import NUM_STATS, bleu_from_stats

INF = math.inf


@dataclass
class LineSearchResult:
    gamma: float
    bleu: float
    num_intervals: int
    interval: tuple[float, float]


def sort_rows(sent: np.ndarray, b: np.ndarray, sent_small: np.ndarray | None = None) -> np.ndarray:
    """Row indices sorted by (sentence, b); order among equal ``(sentence, b)`` is unspecified.

    A quicksort on ``b`` followed by a stable (radix, for ``uint16`` ids) sort
    on the sentence id — several times faster than ``np.lexsort``.
    """
    o1 = np.argsort(b)
    key = (sent_small if sent_small is not None else sent)[o1]
    return o1[np.argsort(key, kind="stable")]


@dataclass
class SortedRows:
    """Rows sorted by (sentence, slope) with what does not depend on the intercepts.

    For a coordinate direction (slope = one feature column) this is computed
    once per optimisation and reused by every line search along it.
    """

    order: np.ndarray  # rows sorted by (sentence, b)
    s: np.ndarray  # sentence of each sorted row (float64, for the staircase lift)
    b: np.ndarray  # slopes in sorted order
    starts: np.ndarray | None  # first position of each (sentence, slope) group; None if no ties
    gid: np.ndarray | None

    @classmethod
    def build(cls, sent: np.ndarray, b: np.ndarray, order: np.ndarray) -> "SortedRows":
        s = sent[order]
        bb = b[order]
        n = len(order)
        new_group = np.empty(n, dtype=bool)
        if n:
            new_group[0] = True
            np.not_equal(s[1:], s[:-1], out=new_group[1:])
            new_group[1:] |= bb[1:] != bb[:-1]
        starts = np.flatnonzero(new_group)
        if len(starts) < n:
            return cls(order, s.astype(np.float64), bb, starts, np.cumsum(new_group) - 1)
        return cls(order, s.astype(np.float64), bb, None, None)


def upper_envelope(sent: np.ndarray, a: np.ndarray, b: np.ndarray, order: np.ndarray | SortedRows | None = None
                   ) -> np.ndarray:
    """Rows on the upper envelope of the lines ``a + b·γ`` of each sentence.

    Returns row indices grouped by sentence, by increasing slope within a
    sentence (so the first row of a sentence wins as γ → −∞). ``order``
    sorts the rows by (sentence, b) (:func:`sort_rows`, or a prepared
    :class:`SortedRows`). Of lines with the same slope only the highest is
    kept (the lowest row among equal ones); lines touching the envelope in a
    single point are dropped.
    """
    if not isinstance(order, SortedRows):
        order = SortedRows.build(sent, b, sort_rows(sent, b) if order is None else order)
    idx = order.order
    if len(idx) == 0:
        return idx
    s, bb = order.s, order.b
    aa = a[idx]
    # 1. one line per (sentence, slope): the highest, lowest row among equals
    if order.starts is not None:
        gid = order.gid
        gmax = np.maximum.reduceat(aa, order.starts)
        rowkey = np.where(aa >= gmax[gid], idx, np.iinfo(np.int64).max)
        pos = np.flatnonzero(idx == np.minimum.reduceat(rowkey, order.starts)[gid])
        idx, s, aa, bb = idx[pos], s[pos], aa[pos], bb[pos]
    # 2. staircase filter: a line lower than some line of smaller slope *and* some line of larger
    #    slope is below their chord, so not on the hull. Keep running maxima from either side,
    #    for all sentences at once by lifting sentence s by s·big (rounding is monotone, so a true
    #    running maximum is never dropped).
    if len(idx) >= 3:
        big = 2.0 * float(aa.max() - aa.min()) + 1.0
        lift = s * big
        fwd = aa + lift
        keep = fwd >= np.maximum.accumulate(fwd)
        bwd = aa - lift
        keep |= bwd >= np.maximum.accumulate(bwd[::-1])[::-1]
        pos = np.flatnonzero(keep)  # then gather: much faster than four boolean masks
        idx, s, aa, bb = idx[pos], s[pos], aa[pos], bb[pos]
    # 3. peel points below the segment joining their neighbours until the chains are concave
    while len(idx) >= 3:
        sm = s[1:-1]
        same = (sm == s[:-2]) & (sm == s[2:])
        ai, aj, ak = aa[:-2], aa[1:-1], aa[2:]
        bi, bj, bk = bb[:-2], bb[1:-1], bb[2:]
        below = same & ((aj - ai) * (bk - bi) <= (ak - ai) * (bj - bi))
        if not below.any():
            break
        keep = np.ones(len(idx), dtype=bool)
        keep[1:-1] = ~below
        pos = np.flatnonzero(keep)
        idx, s, aa, bb = idx[pos], s[pos], aa[pos], bb[pos]
    return idx


def line_search(arrays: Any, a: np.ndarray, b: np.ndarray, *, order: np.ndarray | SortedRows | None = None,
                lo: float = -INF, hi: float = INF, min_interval: float = 1e-4, edge_step: float = 0.1
                ) -> LineSearchResult:
    """Exact line search: the γ in ``[lo, hi]`` maximising corpus BLEU of the 1-bests of ``a + γ·b``.

    ``a`` are the candidates' scores at the origin, ``b`` their slopes
    (``features @ direction``); ``arrays`` is a :class:`smt_features.tune.pool.PoolArrays`.
    """
    sent = arrays.sent
    if order is None:
        order = arrays.sort_rows(b)
    hull = upper_envelope(sent, a, b, order)
    hs = sent[hull]
    ha = a[hull]
    hb = b[hull]
    first = np.empty(len(hull), dtype=bool)
    first[0] = True
    first[1:] = hs[1:] != hs[:-1]
    stats = arrays.stats
    initial = stats[hull[first]].sum(axis=0)
    cont = ~first[1:]  # consecutive hull lines of the same sentence
    left_rows = hull[:-1][cont]
    right_rows = hull[1:][cont]
    with np.errstate(divide="ignore", invalid="ignore"):
        g = (ha[:-1][cont] - ha[1:][cont]) / (hb[1:][cont] - hb[:-1][cont])
    ev = np.argsort(g, kind="stable")
    g = g[ev]
    delta = stats[right_rows[ev]] - stats[left_rows[ev]]
    cum = np.empty((len(g) + 1, NUM_STATS))
    cum[0] = initial
    np.cumsum(delta, axis=0, out=cum[1:])
    cum[1:] += initial
    bleu = bleu_from_stats(cum)
    left = np.concatenate(([-INF], g))
    right = np.concatenate((g, [INF]))
    cl = np.maximum(left, lo)
    cr = np.minimum(right, hi)
    width = cr - cl
    valid = (width > min_interval) | (np.isinf(width) & (width > 0))
    if not valid.any():
        valid = width >= 0
        if not valid.any():
            raise ValueError(f"empty search range [{lo}, {hi}]")
    return pick_interval(bleu, cl, cr, valid, len(g) + 1, min_interval=min_interval, edge_step=edge_step)


def pick_interval(bleu: np.ndarray, cl: np.ndarray, cr: np.ndarray, valid: np.ndarray, num_intervals: int, *,
                  min_interval: float, edge_step: float) -> LineSearchResult:
    """The line search's choice among intervals ``[cl, cr]`` with corpus BLEU ``bleu`` (percent).

    The best-BLEU ``valid`` interval (within 1e-9), ties to the one nearest γ = 0 (then the first);
    γ = 0 if it lies inside, its midpoint, or its finite end ∓ ``edge_step`` when it is unbounded.
    The compiled kernel (:mod:`smt_features.tune.kernel`) calls this on the intervals that can win.
    """
    best = np.max(bleu[valid])
    tied = valid & (bleu >= best - 1e-9)
    dist = np.where((cl <= 0) & (cr >= 0), 0.0, np.minimum(np.abs(cl), np.abs(cr)))
    cand = np.flatnonzero(tied)
    k = int(cand[np.argmin(dist[cand])])
    L, R = float(cl[k]), float(cr[k])
    half = 0.5 * min_interval
    if L + half <= 0.0 <= R - half:
        gamma = 0.0
    elif math.isinf(L) and math.isinf(R):
        gamma = 0.0
    elif math.isinf(L):
        gamma = R - edge_step
    elif math.isinf(R):
        gamma = L + edge_step
    else:
        gamma = 0.5 * (L + R)
    return LineSearchResult(gamma, float(bleu[k]), num_intervals, (L, R))

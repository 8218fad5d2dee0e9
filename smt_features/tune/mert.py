"""Minimum error rate training (Och 2003) on accumulated n-best lists, as Moses's ``mert`` does it.

Pieces
------
* :class:`NBestPool` — every distinct candidate seen so far for each dev
  sentence (n-best lists of all iterations merged; a candidate is the same
  when its hypothesis string *and* its feature vector are equal), with its
  feature vector and its BLEU sufficient statistics
  (:mod:`smt_features.tune.bleu_stats`, tokenized text). Feature names come from
  the n-best lines: a group ``Name= v1 v2 v3`` gives ``Name_0, Name_1,
  Name_2``, a one-value group ``Name= v`` gives ``Name`` (the labels
  :meth:`nmt.formats.nbest.NBestEntry.value_names` uses), so a feature added
  later (another ``TranslationModel0`` column, a reranker's neural-LM score)
  is tuned with no code change.
* :func:`line_search` — Och's exact line search. Along ``λ + γ·d`` every
  candidate's model score is a line ``a + b·γ`` (``a = h·λ``, ``b = h·d``);
  the 1-best of a sentence as a function of γ is the upper envelope of its
  lines. The envelopes of all sentences are computed together with numpy
  (sort by sentence and slope, keep the highest line of equal slopes, then
  peel points that are not on the upper convex hull of ``(b, a)`` until none
  is left), their breakpoints merged and swept in order while the summed
  BLEU statistics are updated incrementally; the γ interval with the highest
  BLEU wins and γ is its midpoint (the unbounded end intervals: the
  breakpoint ∓ ``edge_step``). Intervals narrower than ``min_interval``
  are skipped (as Moses's ``min_int``); among intervals with the same BLEU
  the one closest to γ = 0 is taken, and γ = 0 if it lies inside it.
* :func:`mert` — Moses's ``SimpleOptimizer`` ("powell"): from a start point,
  line-search along every coordinate direction (plus ``random_directions``
  random unit directions per round), move to the best point found, repeat
  until BLEU improves by less than ``tol``; run from the given weights and
  from ``restarts`` random points (uniform in per-feature ranges, default
  ``[-1, 1]``), keep the best. Weights are rescaled to ``Σ|λ| = 1`` after
  each move and at the end (scaling does not change any 1-best). Fixed
  features keep their weight (their direction component is 0; a fixed
  non-zero weight sets the scale, so nothing is rescaled then; features fixed
  at 0 -- a feature switched off -- do not stop the rescaling).
  Deterministic for a given ``seed``.
* :func:`optimise` — the same from plain Python lists, for a reranker.

BLEU is in percent (0–100) throughout, computed on tokenized text (see
:mod:`smt_features.tune.bleu_stats`).
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from smt_features.tune.bleu_stats import NUM_STATS, BleuScorer, bleu_from_stats

log = logging.getLogger(__name__)

INF = math.inf


# =============================================================================== the pool

def layout_names(layout: Sequence[tuple[str, int]]) -> list[str]:
    """``[("LM0", 1), ("TM0", 2)]`` → ``["LM0", "TM0_0", "TM0_1"]``."""
    out: list[str] = []
    for name, k in layout:
        out.extend([name] if k == 1 else [f"{name}_{i}" for i in range(k)])
    return out


def _layout_of(features: Sequence[tuple[str, Sequence[float]]]) -> list[tuple[str, int]]:
    return [(name, len(values)) for name, values in features]


@dataclass
class PoolArrays:
    """Flat arrays of a pool (candidates of sentence ``s`` are rows ``offsets[s]:offsets[s+1]``)."""

    features: np.ndarray  # (N, D) float64
    stats: np.ndarray  # (N, 9) float64
    sent: np.ndarray  # (N,) int64
    offsets: np.ndarray  # (S + 1,) int64
    _coord_order: dict[int, "SortedRows"] = field(default_factory=dict)
    _sent_small: np.ndarray | None = None

    @property
    def num_sentences(self) -> int:
        return len(self.offsets) - 1

    @property
    def sent_small(self) -> np.ndarray:
        """Sentence ids as ``uint16`` when they fit (numpy radix-sorts those)."""
        if self._sent_small is None:
            self._sent_small = self.sent.astype(np.uint16 if self.num_sentences <= 65536 else np.uint32)
        return self._sent_small

    def sort_rows(self, b: np.ndarray) -> np.ndarray:
        return sort_rows(self.sent, b, self.sent_small)

    def coordinate_order(self, k: int) -> "SortedRows":
        """Rows sorted by (sentence, feature ``k``) — cached: it does not depend on λ."""
        order = self._coord_order.get(k)
        if order is None:
            b = self.features[:, k]
            order = SortedRows.build(self.sent, b, self.sort_rows(b))
            self._coord_order[k] = order
        return order

    def one_best(self, weights: np.ndarray) -> np.ndarray:
        """Row index of each sentence's highest-scoring candidate (ties: the earliest row)."""
        return _segment_argmax(self.features @ weights, self.sent, self.offsets)

    def bleu(self, weights: np.ndarray) -> float:
        return float(bleu_from_stats(self.stats[self.one_best(weights)].sum(axis=0)))


def _segment_argmax(scores: np.ndarray, sent: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    starts = offsets[:-1]
    gmax = np.maximum.reduceat(scores, starts)
    is_max = scores >= gmax[sent]
    c = np.cumsum(is_max)
    before = np.concatenate(([0], c))[starts]
    first = is_max & (c - before[sent] == 1)
    return np.flatnonzero(first)


class NBestPool:
    """Distinct candidates per dev sentence with features and BLEU statistics.

    ``references``: one tokenized reference string per sentence (or a list
    of strings for several references). ``feature_names`` may be given;
    otherwise they come from the first n-best entry added.
    """

    def __init__(self, references: Sequence[str] | Sequence[Sequence[str]], *, ref_length: str = "closest",
                 feature_names: Sequence[str] | None = None) -> None:
        self.references = list(references)
        self.scorer = BleuScorer(self.references, ref_length=ref_length)
        self.num_sentences = len(self.scorer)
        self.layout: list[tuple[str, int]] | None = None
        self.feature_names: list[str] | None = list(feature_names) if feature_names is not None else None
        self._keys: list[dict[tuple[str, tuple[float, ...]], int]] = [{} for _ in range(self.num_sentences)]
        self._hyps: list[list[str]] = [[] for _ in range(self.num_sentences)]
        self._feats: list[list[tuple[float, ...]]] = [[] for _ in range(self.num_sentences)]
        self._stats: list[list[np.ndarray]] = [[] for _ in range(self.num_sentences)]
        self._stats_by_hyp: list[dict[str, np.ndarray]] = [{} for _ in range(self.num_sentences)]
        self._arrays: PoolArrays | None = None

    # ------------------------------------------------------------------ adding
    @property
    def num_features(self) -> int:
        if self.feature_names is None:
            raise ValueError("the pool has no candidates yet (feature names unknown)")
        return len(self.feature_names)

    def __len__(self) -> int:
        return sum(len(h) for h in self._hyps)

    def sizes(self) -> list[int]:
        return [len(h) for h in self._hyps]

    def add(self, sent_id: int, hypothesis: str | Sequence[str], features: Sequence[float]) -> bool:
        """Add one candidate; returns ``False`` when the same (string, features) is already there."""
        if not 0 <= sent_id < self.num_sentences:
            raise ValueError(f"sentence id {sent_id} outside the {self.num_sentences} references")
        hyp = hypothesis if isinstance(hypothesis, str) else " ".join(hypothesis)
        hyp = " ".join(hyp.split())
        feats = tuple(float(v) for v in features)
        if self.feature_names is None:
            self.feature_names = [f"F{i}" for i in range(len(feats))]
        if len(feats) != len(self.feature_names):
            raise ValueError(f"sentence {sent_id}: {len(feats)} feature values, expected "
                             f"{len(self.feature_names)} ({' '.join(self.feature_names)})")
        if not all(math.isfinite(v) for v in feats):
            raise ValueError(f"sentence {sent_id}: non-finite feature value in {feats}")
        key = (hyp, feats)
        keys = self._keys[sent_id]
        if key in keys:
            return False
        keys[key] = len(self._hyps[sent_id])
        stats = self._stats_by_hyp[sent_id].get(hyp)
        if stats is None:
            stats = self.scorer.stats(sent_id, hyp)
            self._stats_by_hyp[sent_id][hyp] = stats
        self._hyps[sent_id].append(hyp)
        self._feats[sent_id].append(feats)
        self._stats[sent_id].append(stats)
        self._arrays = None
        return True

    def _check_layout(self, layout: list[tuple[str, int]], where: str) -> None:
        if self.layout is None:
            names = layout_names(layout)
            if self.feature_names is not None and self.feature_names != names:
                raise ValueError(f"{where}: features {names} differ from the pool's {self.feature_names}")
            self.layout = layout
            self.feature_names = names
        elif layout != self.layout:
            raise ValueError(f"{where}: feature labels/sizes {layout} differ from the pool's {self.layout}")

    def add_entry(self, entry: Any, where: str = "n-best") -> bool:
        """Add an :class:`nmt.formats.nbest.NBestEntry` (anything with ``sent_id``, ``tokens``, ``features``)."""
        self._check_layout(_layout_of(entry.features), f"{where}:{getattr(entry, 'line_no', '?')}")
        values = [v for _, vals in entry.features for v in vals]
        return self.add(entry.sent_id, entry.tokens, values)

    def add_entries(self, entries: Iterable[Any], where: str = "n-best") -> int:
        return sum(self.add_entry(e, where) for e in entries)

    def add_nbest_file(self, path: str | Path) -> tuple[int, int]:
        """Merge a Moses n-best file; returns ``(lines read, new candidates)``."""
        from nmt.formats.nbest import iter_nbest

        read = new = 0
        for entry in iter_nbest(path):
            read += 1
            new += self.add_entry(entry, str(path))
        return read, new

    # ------------------------------------------------------------------ views
    def missing_sentences(self) -> list[int]:
        return [i for i, h in enumerate(self._hyps) if not h]

    def arrays(self) -> PoolArrays:
        if self._arrays is None:
            missing = self.missing_sentences()
            if missing:
                raise ValueError(f"{len(missing)} sentence(s) have no candidates (first: {missing[:5]})")
            sizes = np.array(self.sizes(), dtype=np.int64)
            offsets = np.concatenate(([0], np.cumsum(sizes)))
            feats = np.array([f for per in self._feats for f in per], dtype=np.float64).reshape(-1, self.num_features)
            stats = np.array([s for per in self._stats for s in per], dtype=np.float64).reshape(-1, NUM_STATS)
            sent = np.repeat(np.arange(self.num_sentences, dtype=np.int64), sizes)
            self._arrays = PoolArrays(feats, stats, sent, offsets)
        return self._arrays

    def hypotheses(self, rows: Sequence[int]) -> list[str]:
        a = self.arrays()
        out = []
        for r in rows:
            s = int(a.sent[r])
            out.append(self._hyps[s][int(r - a.offsets[s])])
        return out

    def one_best(self, weights: Sequence[float]) -> list[str]:
        """The 1-best hypothesis of every sentence under ``weights``."""
        return self.hypotheses(self.arrays().one_best(np.asarray(weights, dtype=np.float64)))

    def bleu(self, weights: Sequence[float]) -> float:
        """BLEU (percent) of the 1-best selection under ``weights``."""
        return self.arrays().bleu(np.asarray(weights, dtype=np.float64))


# =============================================================================== line search

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


def line_search(arrays: PoolArrays, a: np.ndarray, b: np.ndarray, *, order: np.ndarray | SortedRows | None = None,
                lo: float = -INF, hi: float = INF, min_interval: float = 1e-4, edge_step: float = 0.1
                ) -> LineSearchResult:
    """Exact line search: the γ in ``[lo, hi]`` maximising corpus BLEU of the 1-bests of ``a + γ·b``.

    ``a`` are the candidates' scores at the origin, ``b`` their slopes
    (``features @ direction``).
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
    return LineSearchResult(gamma, float(bleu[k]), len(g) + 1, (L, R))


# =============================================================================== optimiser

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


def _index_of(key: str | int, names: Sequence[str]) -> int:
    if isinstance(key, (int, np.integer)):
        if not 0 <= int(key) < len(names):
            raise ValueError(f"feature index {key} out of range (0..{len(names) - 1})")
        return int(key)
    if key in names:
        return names.index(key)
    # a group name ("TranslationModel0") is not a single feature
    raise ValueError(f"unknown feature {key!r}; features: {' '.join(names)}")


def _expand_keys(keys: Iterable[str | int], names: Sequence[str]) -> list[int]:
    """Indices of features; a group name (``TranslationModel0``) selects all its ``_i`` values."""
    out: list[int] = []
    for key in keys:
        if isinstance(key, str) and key not in names:
            group = [i for i, n in enumerate(names) if n.rsplit("_", 1)[0] == key]
            if group:
                out.extend(group)
                continue
        out.append(_index_of(key, names))
    return sorted(set(out))


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
    fixed = _expand_keys(opts.fixed, names)
    free = [i for i in range(dim) if i not in fixed]
    if not free:
        raise ValueError("every feature is fixed: nothing to tune")
    lo_b = np.full(dim, opts.default_range[0])
    hi_b = np.full(dim, opts.default_range[1])
    for key, (lo, hi) in (opts.ranges or {}).items():
        if lo > hi:
            raise ValueError(f"range of {key}: {lo} > {hi}")
        for i in _expand_keys([key], names):
            lo_b[i], hi_b[i] = lo, hi
    # BLEU does not change when all weights are scaled, so runs are normalised (Σ|λ| = 1) -- unless a fixed
    # feature has a non-zero weight, which then sets the scale (a feature fixed at 0 stays 0 under scaling)
    scale_free = not any(w0[i] != 0.0 for i in fixed)
    rescale = opts.normalise and scale_free and not opts.clip_to_ranges
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
    free_arr = np.array(free)
    n_ls = 0
    results: list[tuple[float, np.ndarray]] = []
    iterator: Iterable = enumerate(starts)
    if opts.progress:
        from tqdm import tqdm

        iterator = tqdm(iterator, total=len(starts), desc="mert restarts", leave=False, mininterval=1.0)
    for si, start in iterator:
        point = normalise_l1(start) if rescale else start.copy()
        if opts.clip_to_ranges:
            point[free] = np.clip(point[free], lo_b[free], hi_b[free])
        score = arrays.bleu(point)
        for _round in range(opts.max_rounds):
            a = arrays.features @ point
            best_score, best_point = -INF, None
            directions: list[tuple[np.ndarray, int]] = []
            for k in free:
                d = np.zeros(dim)
                d[k] = 1.0
                directions.append((d, k))
            for _ in range(opts.random_directions):
                d = np.zeros(dim)
                v = rng.normal(size=len(free))
                d[free_arr] = v / np.linalg.norm(v)
                directions.append((d, -1))
            for d, k in directions:
                if k >= 0:  # coordinate direction: slopes are a feature column, its sort order is cached
                    b, order = arrays.features[:, k], arrays.coordinate_order(k)
                else:
                    b, order = arrays.features @ d, None
                lo, hi = -INF, INF
                if opts.clip_to_ranges:
                    lo, hi = _gamma_bounds(point, d, lo_b, hi_b)
                res = line_search(arrays, a, b, order=order, lo=lo, hi=hi, min_interval=opts.min_interval,
                                  edge_step=opts.edge_step)
                n_ls += 1
                if res.bleu > best_score:
                    best_score, best_point = res.bleu, point + res.gamma * d
            assert best_point is not None
            new_point = normalise_l1(best_point) if rescale else best_point
            new_score = arrays.bleu(new_point)  # the real score (no float drift from the sweep)
            if new_score - score > opts.tol:
                point, score = new_point, new_score
            else:
                if new_score > score:
                    point, score = new_point, new_score
                break
        results.append((score, point))
    best_i = max(range(len(results)), key=lambda i: (results[i][0], -i))
    score, point = results[best_i]
    if opts.normalise and scale_free:
        point = normalise_l1(point)
        score = arrays.bleu(point)
    return MertResult(point, score, names, init_bleu, [r[0] for r in results], best_i, n_ls,
                      time.perf_counter() - t0)


def _gamma_bounds(point: np.ndarray, d: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray) -> tuple[float, float]:
    """The γ range keeping ``point + γ·d`` inside the box (features with ``d = 0`` do not bound it)."""
    lo, hi = -INF, INF
    for i in np.flatnonzero(d):
        g1 = (lo_b[i] - point[i]) / d[i]
        g2 = (hi_b[i] - point[i]) / d[i]
        lo = max(lo, min(g1, g2))
        hi = min(hi, max(g1, g2))
    return min(lo, 0.0), max(hi, 0.0)  # the point is inside the box (up to rounding)


# =============================================================================== plain-Python entry point

def optimise(nbest_lists: Sequence[Sequence[Any]], references: Sequence[str] | Sequence[Sequence[str]],
             init_weights: Sequence[float] | Mapping[str, float], *, feature_names: Sequence[str] | None = None,
             restarts: int = 20, random_directions: int = 0, seed: int = 1, fixed: Sequence[str | int] = (),
             ranges: Mapping[str | int, tuple[float, float]] | None = None, ref_length: str = "closest",
             **options: Any) -> tuple[np.ndarray | dict[str, float], float]:
    """MERT on given n-best lists; returns ``(weights, tokenized corpus BLEU in percent)``.

    ``nbest_lists[i]`` holds sentence ``i``'s candidates, each either an
    :class:`nmt.formats.nbest.NBestEntry` (its features are used as the
    n-best file gives them) or a pair ``(hypothesis, feature values)``;
    ``references[i]`` is the tokenized reference (or a list of them).
    ``init_weights`` is a sequence in feature order, or a mapping from
    feature name (then the weights come back as a mapping too). Further
    keyword options: the fields of :class:`MertOptions`.
    """
    if len(nbest_lists) != len(references):
        raise ValueError(f"{len(nbest_lists)} n-best lists but {len(references)} references")
    pool = NBestPool(references, ref_length=ref_length, feature_names=feature_names)
    for i, cands in enumerate(nbest_lists):
        for c in cands:
            if hasattr(c, "features") and hasattr(c, "tokens"):
                pool._check_layout(_layout_of(c.features), f"sentence {i}")
                pool.add(i, c.tokens, [v for _, vals in c.features for v in vals])
            else:
                hyp, feats = c
                pool.add(i, hyp, feats)
    opts = MertOptions(restarts=restarts, random_directions=random_directions, seed=seed, fixed=fixed,
                       ranges=ranges, **options)
    result = mert(pool, init_weights, opts)
    if isinstance(init_weights, Mapping):
        return result.weight_dict(), result.bleu
    return result.weights, result.bleu

"""The candidate pool of MERT: every distinct n-best candidate per dev sentence, as flat numpy arrays.

:class:`NBestPool` holds every distinct candidate seen so far for each dev
sentence (n-best lists of all iterations merged; a candidate is the same
when its hypothesis string *and* its feature vector are equal), with its
feature vector and its BLEU sufficient statistics
(:mod:`smt_features.tune.bleu_stats`, tokenized text). Feature names come from
the n-best lines: a group ``Name= v1 v2 v3`` gives ``Name_0, Name_1,
Name_2``, a one-value group ``Name= v`` gives ``Name``
(:func:`smt_features.model.weights.value_names`), so a feature added
later (another ``TranslationModel0`` column, a reranker's neural-LM score)
is tuned with no code change. :class:`PoolArrays` is its flat view for the
line search (:mod:`smt_features.tune.envelope`).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from smt_features.model.weights import layout_of, value_indices, value_names
from smt_features.tune.bleu_stats import NUM_STATS, BleuScorer, bleu_from_stats
from smt_features.tune.envelope import SortedRows, sort_rows


@dataclass
class PoolArrays:
    """Flat arrays of a pool (candidates of sentence ``s`` are rows ``offsets[s]:offsets[s+1]``)."""

    features: np.ndarray  # (N, D) float64
    stats: np.ndarray  # (N, 9) float64
    sent: np.ndarray  # (N,) int64
    offsets: np.ndarray  # (S + 1,) int64
    _coord_order: dict[int, SortedRows] = field(default_factory=dict)
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

    def coordinate_order(self, k: int) -> SortedRows:
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
        self._built: PoolArrays | None = None  # the arrays as last built (new candidates are merged into them)
        self._pending: list[tuple[int, tuple[float, ...], np.ndarray]] = []

    @classmethod
    def from_lists(cls, nbest_lists: Sequence[Sequence[Any]], references: Sequence[str] | Sequence[Sequence[str]], *,
                   ref_length: str = "closest", feature_names: Sequence[str] | None = None) -> "NBestPool":
        """The pool of given n-best lists: ``nbest_lists[i]`` holds sentence ``i``'s candidates, each an
        :class:`nmt.core.formats.nbest.NBestEntry` (its features as the n-best file gives them, layout checked) or a
        pair ``(hypothesis, feature values)``; ``references[i]`` is its tokenized reference (or a list of them)."""
        if len(nbest_lists) != len(references):
            raise ValueError(f"{len(nbest_lists)} n-best lists but {len(references)} references")
        pool = cls(references, ref_length=ref_length, feature_names=feature_names)
        for i, cands in enumerate(nbest_lists):
            for c in cands:
                if hasattr(c, "features") and hasattr(c, "tokens"):
                    pool.check_layout(layout_of(c.features), f"sentence {i}")
                    pool.add(i, c.tokens, [v for _, vals in c.features for v in vals])
                else:
                    hyp, feats = c
                    pool.add(i, hyp, feats)
        return pool

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
        hyp = hypothesis if isinstance(hypothesis, str) else " ".join(hypothesis)
        return self._add(sent_id, " ".join(hyp.split()), tuple(float(v) for v in features))

    def _add(self, sent_id: int, hyp: str, feats: tuple[float, ...]) -> bool:
        """:meth:`add` of a hypothesis already normalised (single spaces) and a tuple of floats."""
        if not 0 <= sent_id < self.num_sentences:
            raise ValueError(f"sentence id {sent_id} outside the {self.num_sentences} references")
        if self.feature_names is None:
            self.feature_names = [f"F{i}" for i in range(len(feats))]
        if len(feats) != len(self.feature_names):
            raise ValueError(f"sentence {sent_id}: {len(feats)} feature values, expected "
                             f"{len(self.feature_names)} ({' '.join(self.feature_names)})")
        if not all(map(math.isfinite, feats)):
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
        self._pending.append((sent_id, feats, stats))
        self._arrays = None
        return True

    def check_layout(self, layout: list[tuple[str, int]], where: str) -> None:
        """Take the layout of the first candidates; refuse a different one later."""
        if self.layout is None:
            names = value_names(layout)
            if self.feature_names is not None and self.feature_names != names:
                raise ValueError(f"{where}: features {names} differ from the pool's {self.feature_names}")
            self.layout = layout
            self.feature_names = names
        elif layout != self.layout:
            raise ValueError(f"{where}: feature labels/sizes {layout} differ from the pool's {self.layout}")

    def add_entry(self, entry: Any, where: str = "n-best") -> bool:
        """Add an :class:`nmt.core.formats.nbest.NBestEntry` (anything with ``sent_id``, ``tokens``, ``features``)."""
        self.check_layout(layout_of(entry.features), f"{where}:{getattr(entry, 'line_no', '?')}")
        values = [v for _, vals in entry.features for v in vals]
        return self.add(entry.sent_id, entry.tokens, values)

    def add_entries(self, entries: Iterable[Any], where: str = "n-best") -> int:
        return sum(self.add_entry(e, where) for e in entries)

    def add_nbest_file(self, path: str | Path) -> tuple[int, int]:
        """Merge a Moses n-best file; returns ``(lines read, new candidates)``."""
        from nmt.core.formats.nbest import iter_nbest

        read = new = 0
        add = self._add
        for entry in iter_nbest(path):  # every line has line 1's feature labels and sizes (checked there)
            if not read:
                self.check_layout(layout_of(entry.features), f"{path}:{entry.line_no}")
            read += 1
            new += add(entry.sent_id, " ".join(entry.tokens), tuple([v for _, vals in entry.features for v in vals]))
        return read, new

    # ------------------------------------------------------------------ views
    def missing_sentences(self) -> list[int]:
        return [i for i, h in enumerate(self._hyps) if not h]

    def arrays(self) -> PoolArrays:
        """The flat arrays: rows grouped by sentence, each sentence's in the order they were added. Only the
        candidates added since the last call are converted; they are merged after each sentence's earlier
        rows (a stable sort by sentence of the earlier rows followed by the new ones)."""
        if self._arrays is None:
            missing = self.missing_sentences()
            if missing:
                raise ValueError(f"{len(missing)} sentence(s) have no candidates (first: {missing[:5]})")
            sizes = np.array(self.sizes(), dtype=np.int64)
            offsets = np.concatenate(([0], np.cumsum(sizes)))
            sent = np.repeat(np.arange(self.num_sentences, dtype=np.int64), sizes)
            new_sent = np.array([p[0] for p in self._pending], dtype=np.int64)
            new_feats = np.array([p[1] for p in self._pending], dtype=np.float64).reshape(-1, self.num_features)
            new_stats = np.array([p[2] for p in self._pending], dtype=np.float64).reshape(-1, NUM_STATS)
            old = self._built
            if old is None:
                all_sent, feats, stats = new_sent, new_feats, new_stats
            else:
                all_sent = np.concatenate((old.sent, new_sent))
                feats = np.concatenate((old.features, new_feats))
                stats = np.concatenate((old.stats, new_stats))
            order = np.argsort(all_sent.astype(np.uint32), kind="stable")
            self._arrays = PoolArrays(feats[order], stats[order], sent, offsets)
            self._built, self._pending = self._arrays, []
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


def optimizer_inputs(pool: "NBestPool | PoolArrays", init_weights: Sequence[float], fixed: Iterable[str | int],
                     feature_names: Sequence[str] | None = None) -> tuple[PoolArrays, list[str], np.ndarray, list[int]]:
    """What a pool optimiser (kbMIRA, PRO) starts from: the pool's arrays, its value names (``feature_names``
    or ``F0…`` for bare arrays), a float64 copy of ``init_weights`` (one per value, else ValueError) and the
    indices of the ``fixed`` values."""
    arrays = pool.arrays() if isinstance(pool, NBestPool) else pool
    names = list(pool.feature_names or []) if isinstance(pool, NBestPool) else \
        list(feature_names or [f"F{i}" for i in range(arrays.features.shape[1])])
    dim = arrays.features.shape[1]
    w = np.asarray(init_weights, dtype=np.float64).copy()
    if w.shape != (dim,):
        raise ValueError(f"{w.size} initial weights for {dim} features")
    return arrays, names, w, value_indices(fixed, names)

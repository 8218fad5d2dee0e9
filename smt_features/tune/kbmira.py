"""k-best batch MIRA (Cherry & Foster 2012) on the merged candidate pool, as Moses's ``kbmira``.

For ``passes`` epochs (Moses ``-J``, 60) the dev sentences are visited in a
shuffled order (seeded; Moses shuffles with ``srand(-r)``). For each sentence,
with the current weights ``w`` and the sentence-level BLEU of every
candidate against the background pseudo-document ``bg``
(:func:`background_bleu`):

* hope = argmax ``w·h + BLEU``, fear = argmax ``w·h − BLEU``, model = argmax ``w·h``;
* if hope ≠ fear: ``Δ = BLEU(hope) − BLEU(fear)``, ``loss = Δ − w·(h_hope − h_fear)``;
  when ``loss > 0``: ``w += η (h_hope − h_fear)`` with ``η = min(C, loss / ‖h_hope − h_fear‖²)``
  (``C`` = 0.01, Moses ``-C``); then the pseudo-document decays and takes the
  hope's statistics: ``bg = decay·bg + stats(hope)`` (``decay`` = 0.999, Moses
  ``-D``; ``model_bg``: the model 1-best's, Moses ``--model-bg``).

The weights returned are the *averaged* ones (the mean of ``w`` after every
update, Moses's ``AvgWeightVector``) of the epoch whose average had the best
corpus BLEU on the pool, then — as ``mert-moses.pl`` does with ``kbmira``'s
output — divided by the sum of the absolute dense weights (Σ|λ| = 1). The
start ``w`` is the current weights (``--dense-init``). ``bg`` starts at
Moses's ``[4, 4, 3, 3, 2, 2, 1, 1, 4]`` (no zero counts). Features in
``fixed`` are not updated (Moses's ``kbmira`` has no such option); when one
of them has a non-zero weight it sets the scale and nothing is rescaled.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from smt_features.tune.blas import single_blas_thread
from smt_features.tune.bleu_stats import ORDER
from smt_features.tune.pool import NBestPool, PoolArrays, optimizer_inputs

IMPLS = ("fast", "reference")
#: Moses's initial background pseudo-document (``kbmira.cpp``): 4..1 matches and n-grams, length 4
INITIAL_BACKGROUND = np.array([4, 4, 3, 3, 2, 2, 1, 1, 4], dtype=np.float64)


@dataclass
class KbMiraOptions:
    """Options of :func:`kbmira` (Moses's defaults; see the module docstring)."""

    c: float = 0.01
    decay: float = 0.999
    passes: int = 60
    seed: int = 1
    shuffle: bool = True
    model_bg: bool = False
    normalise: bool = True
    fixed: Sequence[str | int] = ()
    impl: str = "fast"  # 'fast' or 'reference' (the plain loop it reproduces: the same numbers, slower)


@dataclass
class KbMiraResult:
    weights: np.ndarray
    bleu: float  # corpus BLEU (percent) of the pool's 1-bests under ``weights``
    init_bleu: float
    best_epoch: int  # 1-based; 0: no epoch beat BLEU 0, the start weights are returned
    updates: int
    epoch_bleus: list[float]
    seconds: float


def background_bleu(stats: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """Moses's ``sentenceLevelBackgroundBleu`` of each row of ``stats`` (n, 9): BLEU of ``stats + bg``
    (unsmoothed, as a fraction) times the summed reference length (Chiang et al. 2008's scaling)."""
    s = stats + bg
    m = s[:, 0:2 * ORDER:2]
    t = s[:, 1:2 * ORDER:2]
    with np.errstate(divide="ignore", invalid="ignore"):
        logbleu = (np.log(m) - np.log(t)).mean(axis=1)
        brevity = 1.0 - s[:, 2 * ORDER] / s[:, 1]
    logbleu = logbleu + np.minimum(brevity, 0.0)
    return np.exp(logbleu) * s[:, 2 * ORDER]


def kbmira(pool: NBestPool | PoolArrays, init_weights: Sequence[float], options: KbMiraOptions | None = None, *,
           feature_names: Sequence[str] | None = None) -> KbMiraResult:
    """Batch MIRA over the pool from ``init_weights`` (see the module docstring)."""
    with single_blas_thread():
        return _kbmira(pool, init_weights, options, feature_names=feature_names)


def _kbmira(pool: NBestPool | PoolArrays, init_weights: Sequence[float], options: KbMiraOptions | None = None, *,
            feature_names: Sequence[str] | None = None) -> KbMiraResult:
    opts = options or KbMiraOptions()
    t0 = time.perf_counter()
    arrays, _, w, fixed = optimizer_inputs(pool, init_weights, opts.fixed, feature_names)
    dim = arrays.features.shape[1]
    mask = np.ones(dim)
    mask[fixed] = 0.0
    if not mask.any():
        raise ValueError("every feature is fixed: nothing to tune")
    if opts.impl not in IMPLS:
        raise ValueError(f"impl must be one of {', '.join(IMPLS)}, not {opts.impl!r}")
    scale_free = not any(w[i] != 0.0 for i in fixed)
    w0_fixed = w[fixed].copy()
    rng = np.random.default_rng(opts.seed)
    init_bleu = arrays.bleu(w)
    passes = _passes_reference if opts.impl == "reference" else _passes
    best_w, best_epoch, n_updates, epoch_bleus = passes(arrays, w, mask, fixed, w0_fixed, opts, rng)
    if opts.normalise and scale_free:
        norm = float(np.abs(best_w).sum())
        if norm > 0:
            best_w = best_w / norm
    return KbMiraResult(best_w, arrays.bleu(best_w), init_bleu, best_epoch, n_updates, epoch_bleus,
                        time.perf_counter() - t0)


def _passes_reference(arrays: PoolArrays, w: np.ndarray, mask: np.ndarray, fixed: list[int], w0_fixed: np.ndarray,
                      opts: KbMiraOptions, rng: np.random.Generator) -> tuple[np.ndarray, int, int, list[float]]:
    """The passes over the pool, plainly (the reference of :func:`_passes`): ``(best averaged weights, its
    pass, updates, BLEU of each pass's average)``."""
    bg = INITIAL_BACKGROUND.copy()
    feats, stats, offsets = arrays.features, arrays.stats, arrays.offsets
    total = np.zeros(len(w))  # Σ of w after each update
    n_updates = 0
    best_bleu, best_w, best_epoch = 0.0, w.copy(), 0
    epoch_bleus: list[float] = []
    order = np.arange(arrays.num_sentences)
    for epoch in range(1, opts.passes + 1):
        if opts.shuffle:
            order = rng.permutation(arrays.num_sentences)
        for s in order:
            lo, hi = offsets[s], offsets[s + 1]
            h = feats[lo:hi]
            score = h @ w
            bleu = background_bleu(stats[lo:hi], bg)
            hope = int(np.argmax(score + bleu))
            fear = int(np.argmax(score - bleu))
            if hope == fear:
                continue
            diff = (h[hope] - h[fear]) * mask
            loss = (bleu[hope] - bleu[fear]) - float(diff @ w)
            sq = float(diff @ diff)
            if loss > 0 and sq > 0:
                w = w + min(opts.c, loss / sq) * diff
                total += w
                n_updates += 1
            src = stats[lo + int(np.argmax(score))] if opts.model_bg else stats[lo + hope]
            bg = opts.decay * bg + src
        avg = total / n_updates if n_updates else w.copy()
        avg[fixed] = w0_fixed  # exact (the average of a constant drifts by rounding)
        epoch_bleu = arrays.bleu(avg)
        epoch_bleus.append(epoch_bleu)
        if epoch_bleu > best_bleu:
            best_bleu, best_w, best_epoch = epoch_bleu, avg.copy(), epoch
    return best_w, best_epoch, n_updates, epoch_bleus


def _passes(arrays: PoolArrays, w: np.ndarray, mask: np.ndarray, fixed: list[int], w0_fixed: np.ndarray,
            opts: KbMiraOptions, rng: np.random.Generator) -> tuple[np.ndarray, int, int, list[float]]:
    """:func:`_passes_reference` with the same numpy operations on the same arrays, so the same numbers, but
    less work around them: per-sentence views made once, :func:`background_bleu` inlined (one error-state
    context for all of it; ``mean`` as the sum / 4 it is), and each pass's BLEU through the compiled
    1-best selection when it is built."""
    from smt_features.tune.kernel import compiled_line_search

    fast = compiled_line_search(arrays, "auto")
    bleu_of = arrays.bleu if fast is None else fast.bleu
    bg = INITIAL_BACKGROUND.copy()
    offsets = arrays.offsets.tolist()
    hs = [arrays.features[offsets[s]:offsets[s + 1]] for s in range(arrays.num_sentences)]
    sts = [arrays.stats[offsets[s]:offsets[s + 1]] for s in range(arrays.num_sentences)]
    total = np.zeros(len(w))
    n_updates = 0
    best_bleu, best_w, best_epoch = 0.0, w.copy(), 0
    epoch_bleus: list[float] = []
    order = np.arange(arrays.num_sentences)
    argmax, log, exp, minimum, add_reduce = np.argmax, np.log, np.exp, np.minimum, np.add.reduce
    c, decay, model_bg, n2 = opts.c, opts.decay, opts.model_bg, 2 * ORDER
    with np.errstate(divide="ignore", invalid="ignore"):
        for epoch in range(1, opts.passes + 1):
            if opts.shuffle:
                order = rng.permutation(arrays.num_sentences)
            for s in order.tolist():
                h, st = hs[s], sts[s]
                score = h @ w
                sb = st + bg  # background_bleu, inlined
                logbleu = add_reduce(log(sb[:, 0:n2:2]) - log(sb[:, 1:n2:2]), axis=1) / 4
                logbleu = logbleu + minimum(1.0 - sb[:, n2] / sb[:, 1], 0.0)
                bleu = exp(logbleu) * sb[:, n2]
                hope = int(argmax(score + bleu))
                fear = int(argmax(score - bleu))
                if hope == fear:
                    continue
                diff = (h[hope] - h[fear]) * mask
                loss = (bleu[hope] - bleu[fear]) - float(diff @ w)
                sq = float(diff @ diff)
                if loss > 0 and sq > 0:
                    w = w + min(c, loss / sq) * diff
                    total += w
                    n_updates += 1
                bg = decay * bg + (st[int(argmax(score))] if model_bg else st[hope])
            avg = total / n_updates if n_updates else w.copy()
            avg[fixed] = w0_fixed
            epoch_bleu = bleu_of(avg)
            epoch_bleus.append(epoch_bleu)
            if epoch_bleu > best_bleu:
                best_bleu, best_w, best_epoch = epoch_bleu, avg.copy(), epoch
    return best_w, best_epoch, n_updates, epoch_bleus

"""One optimisation step of ``smt-tune`` on the merged pool: MERT, k-best batch MIRA or PRO (``--optimizer``);
and one optimisation of a fixed pool (``smt-rerank --tune --optimizer``, :func:`optimise_fixed_pool`).

* ``mert`` (default): :func:`smt_features.tune.mert.mert` from the current
  weights plus ``--restarts`` random points (Moses ``mert``);
* ``kbmira``: :func:`smt_features.tune.kbmira.kbmira` from the current
  weights (Moses ``kbmira``: C = 0.01, decay 0.999, 60 passes);
* ``pro``: :func:`smt_features.tune.pro.pro`, interpolated with the current
  weights from iteration 4 on (Moses ``pro`` + megam: Γ = 5000, α = 0.05, Ξ = 50;
  ``--historic-interpolation`` ψ = 0.1 as ``mert-moses.pl``'s option of that name).

Iteration ``i`` seeds the optimiser with :func:`smt_features.tune.start.iteration_seed`.
The record (``iterations.json``, under the optimiser's name) and the log line
are made here; the MERT ones are exactly those of before.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from smt_features.tune.kbmira import KbMiraOptions, kbmira
from smt_features.tune.mert import MertOptions, mert
from smt_features.tune.options import TuneConfig
from smt_features.tune.pool import NBestPool
from smt_features.tune.pro import ProOptions, pro
from smt_features.tune.start import iteration_seed

OPTIMIZERS = {"mert": "MERT", "kbmira": "kbMIRA", "pro": "PRO"}
#: ``--optimizer-impl``: auto (MERT's compiled line search when built, else its numpy one; kbMIRA's and PRO's
#: fast loops), compiled (MERT: an error when the kernel cannot be used), reference (the plain numpy code the
#: others reproduce: the same weights, slower; for comparisons)
IMPLS = ("auto", "compiled", "reference")


def mert_kernel(impl: str) -> str:
    """:class:`MertOptions` ``kernel`` for an ``--optimizer-impl``."""
    if impl not in IMPLS:
        raise ValueError(f"--optimizer-impl must be one of {', '.join(IMPLS)}, not {impl!r}")
    return "python" if impl == "reference" else impl


def loop_impl(impl: str) -> str:
    """kbMIRA's / PRO's ``impl`` for an ``--optimizer-impl``."""
    mert_kernel(impl)
    return "reference" if impl == "reference" else "fast"


@dataclass
class StepResult:
    weights: np.ndarray
    record: dict[str, Any]  # the iteration's record (without the weights)
    message: str  # the log line, without the "iteration i: " prefix


def record_key(cfg: TuneConfig) -> str:
    """The key of an iteration's optimiser record in ``iterations.json`` (``mert`` for MERT, as before)."""
    return cfg.optimizer


def optimise_step(cfg: TuneConfig, pool: NBestPool, current: np.ndarray, iteration: int,
                  ranges: dict[str, tuple[float, float]], *, mert_fn: Callable[..., Any] = mert) -> StepResult:
    """Run ``cfg.optimizer`` on the pool from ``current`` (see the module docstring); ``mert_fn``: the
    MERT function (the loop passes its own name, so a test can replace it there)."""
    seed = iteration_seed(cfg.seed, iteration)
    if cfg.optimizer == "mert":
        opts = MertOptions(restarts=cfg.restarts, random_directions=cfg.random_directions, seed=seed,
                           fixed=cfg.fixed, ranges=ranges, clip_to_ranges=cfg.clip_to_ranges, tol=cfg.tol,
                           progress=sys.stderr.isatty(), workers=cfg.threads, kernel=mert_kernel(cfg.optimizer_impl))
        res = mert_fn(pool, current, opts)
        rec = {"bleu": res.bleu, "init_bleu": res.init_bleu, "best_start": res.best_start,
               "line_searches": res.line_searches, "seconds": round(res.seconds, 3)}
        msg = (f"MERT BLEU {res.bleu:.2f} on the pool of {len(pool)} candidates ({res.init_bleu:.2f} at the "
               f"current weights; best of {len(res.start_bleus)} starts: #{res.best_start}) | "
               f"{res.line_searches} line searches, {res.seconds:.1f} s")
        return StepResult(res.weights, rec, msg)
    if cfg.optimizer == "kbmira":
        kres = kbmira(pool, current, KbMiraOptions(seed=seed, fixed=cfg.fixed, impl=loop_impl(cfg.optimizer_impl)))
        rec = {"bleu": kres.bleu, "init_bleu": kres.init_bleu, "best_epoch": kres.best_epoch,
               "updates": kres.updates, "seconds": round(kres.seconds, 3)}
        msg = (f"kbMIRA BLEU {kres.bleu:.2f} on the pool of {len(pool)} candidates ({kres.init_bleu:.2f} at the "
               f"current weights; averaged weights of pass {kres.best_epoch}) | {kres.updates} updates, "
               f"{kres.seconds:.1f} s")
        return StepResult(kres.weights, rec, msg)
    if cfg.optimizer == "pro":
        psi = cfg.historic_interpolation if iteration > 3 and cfg.historic_interpolation > 0 else 1.0
        pres = pro(pool, current, ProOptions(seed=seed, fixed=cfg.fixed, interpolation=psi,
                                             impl=loop_impl(cfg.optimizer_impl)))
        rec = {"bleu": pres.bleu, "init_bleu": pres.init_bleu, "pairs": pres.pairs,
               "interpolation": psi, "seconds": round(pres.seconds, 3)}
        msg = (f"PRO BLEU {pres.bleu:.2f} on the pool of {len(pool)} candidates ({pres.init_bleu:.2f} at the "
               f"current weights) | {pres.pairs} pairs, {pres.seconds:.1f} s")
        return StepResult(pres.weights, rec, msg)
    raise ValueError(f"unknown optimizer {cfg.optimizer!r}; known: {' '.join(OPTIMIZERS)}")


def optimise_fixed_pool(pool: NBestPool, init: Sequence[float], optimizer: str = "mert", *, seed: int = 1,
                        restarts: int = 20, impl: str = "auto") -> tuple[np.ndarray, float]:
    """One optimisation of a pool that no decoder extends (``smt-rerank --tune``): MERT from ``init`` plus
    ``restarts`` random points, kbMIRA from ``init`` (Moses ``kbmira`` in batch mode), or PRO (pure, no
    interpolation: there is no earlier iteration); ``impl`` as ``--optimizer-impl``; returns ``(weights,
    tokenized corpus BLEU in percent)``."""
    if optimizer == "mert":
        res = mert(pool, init, MertOptions(restarts=restarts, seed=seed, kernel=mert_kernel(impl)))
        return res.weights, res.bleu
    if optimizer == "kbmira":
        kres = kbmira(pool, init, KbMiraOptions(seed=seed, impl=loop_impl(impl)))
        return kres.weights, kres.bleu
    if optimizer == "pro":
        pres = pro(pool, init, ProOptions(seed=seed, interpolation=1.0, impl=loop_impl(impl)))
        return pres.weights, pres.bleu
    raise ValueError(f"unknown optimizer {optimizer!r}; known: {' '.join(OPTIMIZERS)}")

"""Seeded starting points of ``smt-tune``: the first iteration's random weights and each iteration's seed.

Moses's ``mert`` takes ``-r SEED`` (the random seed), ``-n NTRY`` (random
restarts besides the ``--ifile`` starting point(s)) and ``-m NRANDOM`` (random
directions per round); ``mert-moses.pl --predictable-seeds`` passes the run
number as the seed. ``smt-tune --seed N`` does the same per experiment run:

* the random restarts (MERT) or the shuffling / sampling (kbMIRA, PRO) of
  iteration ``i`` use seed ``N + i`` (:func:`iteration_seed`); without
  ``--seed`` they use ``1 + i``, as before;
* the first iteration decodes from a random point drawn from ``N``
  (:func:`random_start`): every tuneable weight uniform in its ``--ranges``
  interval (default ``[-1, 1]``, as MERT's restarts), ``--fixed`` weights and
  non-tuneable features (``UnknownWordPenalty0``, ``tuneable=false``) kept,
  then Σ|λ| = 1 over the drawn weights. Without ``--seed`` the first
  iteration starts from the moses.ini's weights (byte-identical to before).

The drawn start is recorded in ``iterations.json`` before the first decode,
so a resumed run continues from the same point.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from smt_features.model.weights import Weights, value_indices, value_names

DEFAULT_SEED = 1
#: the first iteration's draw uses its own stream (iteration seeds are ``seed + i``, i >= 1)
START_STREAM = 0x5EED


def iteration_seed(seed: int | None, iteration: int) -> int:
    """The seed of iteration ``iteration``'s optimiser run: ``seed + iteration`` (no seed: ``1 + iteration``)."""
    return (DEFAULT_SEED if seed is None else seed) + iteration


def tuneable_groups(base: Any) -> list[str]:
    """The weight groups of a moses.ini that tuning changes (in ``[weight]`` order).

    A feature line's ``tuneable=true|false`` decides; without it every feature is tuneable except
    ``UnknownWordPenalty`` (Moses leaves it out of the n-best lists). A weight group without a
    feature line counts as tuneable.
    """
    kinds = {f.name: f for f in base.features}
    out = []
    for name in base.weights:
        line = kinds.get(name)
        if line is None:
            out.append(name)
            continue
        flag = line.get("tuneable")
        if flag is None:
            tuneable = line.type != "UnknownWordPenalty"
        else:
            tuneable = flag.strip().lower() in ("true", "1", "yes")
        if tuneable:
            out.append(name)
    return out


def random_start(weights: Mapping[str, Sequence[float]], groups: Sequence[str], seed: int, *,
                 fixed: Sequence[str] = (), ranges: Mapping[str, tuple[float, float]] | None = None,
                 default_range: tuple[float, float] = (-1.0, 1.0)) -> Weights:
    """``weights`` with every value of ``groups`` (except ``fixed``) drawn uniformly in its range from ``seed``.

    Names in ``fixed`` and ``ranges`` are value names (``TranslationModel0_2``) or group names, as
    MERT's options. The drawn values are rescaled to Σ|λ| = 1 (scale never changes a 1-best).
    """
    layout = [(g, len(weights[g])) for g in groups]
    names = value_names(layout)
    vec = np.array(Weights(weights).to_vector(layout), dtype=np.float64)
    keep = set(value_indices([f for f in fixed if _known(f, names)], names))
    lo = np.full(len(names), default_range[0])
    hi = np.full(len(names), default_range[1])
    for key, (a, b) in (ranges or {}).items():
        if _known(key, names):
            for i in value_indices([key], names):
                lo[i], hi[i] = a, b
    free = np.array([i for i in range(len(names)) if i not in keep], dtype=np.int64)
    rng = np.random.default_rng([START_STREAM, seed])
    if free.size:
        drawn = rng.uniform(lo[free], hi[free])
        total = float(np.abs(drawn).sum())
        vec[free] = drawn / total if total > 0 and not keep else drawn
    return Weights.from_vector(vec, layout, base=weights)


def _known(key: str, names: Sequence[str]) -> bool:
    try:
        value_indices([key], names)
    except (KeyError, ValueError):
        return False
    return True

"""ln p(target | source) of many pairs over the targets' prefix trees, one tree per source (n-best lists).

:func:`prefix_pair_log_probs` gives what teacher forcing gives (``pair_log_probs``: the target's tokens
and ``</s>``, natural log) for any model of the beam search's step interface
(:class:`nmt.translation.search.StepModel`: RNNenc, RNNsearch), with every target prefix shared by
pairs of the same source read once (:mod:`nmt.models.prefix_tree`), up to floating-point rounding.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from nmt.data.batching import pad
from nmt.data.special import BOS, EOS
from nmt.models.prefix_tree import PrefixTree, concat_rows, select_rows, tree_log_probs


@torch.no_grad()
def prefix_pair_log_probs(model, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]], *,
                          sources_per_tree: int = 32, max_rows: int = 2000) -> list[float]:
    """ln p(tgt | src) incl. ``</s>`` of each pair (id sequences; sources without EOS, which is added),
    in input order; ``sources_per_tree`` distinct sources per tree (and per encoder call), at most
    ``max_rows`` tree nodes per decoder step. Call ``model.eval()`` first."""
    if len(src_ids) != len(tgt_ids):
        raise ValueError(f"{len(src_ids)} sources but {len(tgt_ids)} targets")
    where: dict[tuple[int, ...], int] = {}
    source_of = [where.setdefault(tuple(s), len(where)) for s in src_ids]
    distinct = list(where)
    groups: list[list[int]] = [[] for _ in distinct]
    for i, k in enumerate(source_of):
        groups[k].append(i)
    device = next(model.parameters()).device
    out = [0.0] * len(src_ids)

    def step(prev, state):  # the attention weights of the step are not carried to the next one
        log_probs, new_state = model.step(prev, state)
        new_state.pop("attn", None)
        return log_probs, new_state

    for lo in range(0, len(distinct), max(1, sources_per_tree)):
        ks = range(lo, min(lo + max(1, sources_per_tree), len(distinct)))
        pairs = [i for k in ks for i in groups[k]]
        root_state = model.start(pad([distinct[k] for k in ks], suffix=EOS).to(device))
        root_state.pop("attn", None)
        tree = PrefixTree.build([tgt_ids[i] for i in pairs], BOS, roots=[source_of[i] for i in pairs])
        values = tree_log_probs(tree, step, root_state, select_rows, concat_rows, max_rows=max_rows, device=device)
        for i, v in zip(pairs, values):
            out[i] = math.fsum(v.tolist())
    return out

"""Scoring many sequences over their prefix tree with a step model: each shared prefix read once.

The hypotheses of an n-best list share long prefixes: on a news 100-best list the 978,766 predicted
tokens of its distinct hypotheses are 439,696 nodes of their prefix tree. :class:`PrefixTree` holds the
sequences (one tree per root key: one per source sentence for an encoder–decoder, a single one for a
language model) and :func:`tree_log_probs` reads it level by level with the model's one-step interface,
the nodes of a depth batched, each continuing from its parent's state: every prefix is read once and
every next-token distribution computed once, for all the sequences that share it.

The values are those of reading each sequence on its own (teacher forcing) up to floating-point
rounding: the models compute the same operations, in other batch shapes.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from nmt.data.special import EOS

State = Any
StepFn = Callable[[Tensor, State], tuple[Tensor, State]]  # (prev [N], state) -> (ln p [N, V], state)


@dataclass
class PrefixTree:
    """Node v continues ``parent[v]`` with ``token[v]`` (a root: ``parent`` -1, ``token`` the first input)."""

    parent: list[int] = field(default_factory=list)
    token: list[int] = field(default_factory=list)
    children: list[list[int]] = field(default_factory=list)
    ends: list[bool] = field(default_factory=list)  # a sequence ends here (EOS is predicted)
    roots: list[int] = field(default_factory=list)  # root nodes, in order of their keys' first appearance
    paths: list[list[int]] = field(default_factory=list)  # per sequence: its prefixes' nodes, its root first

    def _node(self, parent: int, token: int) -> int:
        self.parent.append(parent)
        self.token.append(token)
        self.children.append([])
        self.ends.append(False)
        if parent >= 0:
            self.children[parent].append(len(self.parent) - 1)
        return len(self.parent) - 1

    @classmethod
    def build(cls, sequences: Sequence[Sequence[int]], first: int,
              roots: Sequence[Hashable] | None = None) -> "PrefixTree":
        """The tree of ``sequences`` (token ids, no BOS/EOS); sequence i under the root of key ``roots[i]``
        (default: one root for all); every root's input is ``first``."""
        tree = cls()
        root_of: dict[Hashable, int] = {}
        index: dict[tuple[int, int], int] = {}
        for i, seq in enumerate(sequences):
            key = roots[i] if roots is not None else 0
            node = root_of.get(key)
            if node is None:
                node = root_of[key] = tree._node(-1, first)
                tree.roots.append(node)
            path = [node]
            for tok in seq:
                tok = int(tok)
                child = index.get((node, tok))
                if child is None:
                    child = index[(node, tok)] = tree._node(node, tok)
                node = child
                path.append(node)
            tree.ends[node] = True
            tree.paths.append(path)
        return tree

    def predictions(self) -> int:
        """Next-token probabilities the tree needs: one per child and one per sequence end."""
        return len(self.parent) - len(self.roots) + sum(self.ends)


def tree_log_probs(tree: PrefixTree, step: StepFn, root_state: State, select: Callable[[State, Tensor], State],
                   concat: Callable[[list[State]], State], *, max_rows: int = 2000,
                   device: torch.device | str = "cpu") -> list[np.ndarray]:
    """ln p of each token and of EOS per sequence (``n + 1`` values, natural log), in sequence order.

    ``root_state``: the state before each root's input, row r for ``tree.roots[r]`` (None: the model's
    fresh state, the same for every root); ``select(state, rows)`` / ``concat(states)`` pick and join rows
    of a state; at most ``max_rows`` nodes go through one ``step``."""
    logp_at: dict[tuple[int, int], float] = {}
    level = list(tree.roots)
    prev_state, prev_row = root_state, None  # prev_row: node -> its row in prev_state (None: the roots)
    while level:
        states, row_of = [], {}
        for lo in range(0, len(level), max_rows):
            nodes = level[lo:lo + max_rows]
            if prev_row is None:
                state = None if prev_state is None else select(prev_state, torch.arange(lo, lo + len(nodes),
                                                                                        device=device))
            else:
                state = select(prev_state, torch.tensor([prev_row[tree.parent[v]] for v in nodes], device=device))
            prev = torch.tensor([tree.token[v] for v in nodes], dtype=torch.long, device=device)
            log_probs, new_state = step(prev, state)
            rows, tokens, keys = [], [], []
            for r, v in enumerate(nodes):
                for tok in [tree.token[c] for c in tree.children[v]] + ([EOS] if tree.ends[v] else []):
                    rows.append(r)
                    tokens.append(tok)
                    keys.append((v, tok))
            values = log_probs[torch.tensor(rows, device=device), torch.tensor(tokens, device=device)]
            logp_at.update(zip(keys, values.double().cpu().tolist()))
            keep = [r for r, v in enumerate(nodes) if tree.children[v]]
            if keep:
                for r in keep:
                    row_of[nodes[r]] = len(row_of)
                states.append(select(new_state, torch.tensor(keep, device=device)))
        level = [c for v in level for c in tree.children[v]]
        if states:
            prev_state, prev_row = concat(states), row_of
    out = []
    for path in tree.paths:
        nexts = [tree.token[v] for v in path[1:]] + [EOS]
        out.append(np.array([logp_at[(v, t)] for v, t in zip(path, nexts)], dtype=np.float64))
    return out


def select_rows(state: dict[str, Tensor], rows: Tensor) -> dict[str, Tensor]:
    """Rows of a step-interface state (every tensor's dim 0 is the row)."""
    return {k: v.index_select(0, rows) for k, v in state.items()}


def concat_rows(states: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    """Step-interface states of several batches as one, rows in order."""
    return {k: torch.cat([s[k] for s in states]) for k in states[0]}

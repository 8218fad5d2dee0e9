"""Sentence-regime token log-probabilities with shared prefixes scored once (n-best lists).

The hypotheses of an n-best list share long prefixes: on a news 100-best list the 978,766 predicted
tokens of its distinct hypotheses are 439,696 nodes of their prefix tree. Here the sentences are put in
a prefix tree, read by the model level by level (the nodes of one depth batched, each continuing from
its parent's state): every prefix is read once and every distribution computed once, for all the
sentences that share it. ``max_run`` > 1 reads unbranched runs of up to that many nodes as one
sequence (fewer calls, more padding: runs of one level are padded to the same length); 1, token by
token with no padding, was the fastest measured (docs/rerank_report.md).

The result is :func:`nmt.lm.scoring.sentence_token_logprobs`'s (``n + 1`` natural-log values per
sentence: its words and ``</s>``, from a fresh state with ``start`` first); the models continue exactly
from a returned state, so the two differ only in floating-point rounding (other batch shapes, the
sequence read in pieces).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from nmt.data.special import BOS, EOS, PAD
from nmt.models.lm import LanguageModel
from nmt.models.lm.base import concat_states


@dataclass
class PrefixTree:
    """Node 0 is the empty prefix (its input is ``start``); node v > 0 adds ``token[v]`` to ``parent[v]``."""

    parent: list[int] = field(default_factory=lambda: [-1])
    token: list[int] = field(default_factory=lambda: [BOS])
    children: list[list[int]] = field(default_factory=lambda: [[]])
    ends: list[bool] = field(default_factory=lambda: [False])  # a sentence ends here (</s> is predicted)
    paths: list[list[int]] = field(default_factory=list)  # per sentence: its prefixes' nodes, empty one first

    @classmethod
    def build(cls, sentences: Sequence[Sequence[int]], start: int = BOS) -> "PrefixTree":
        tree = cls(token=[start])
        index: dict[tuple[int, int], int] = {}
        for sent in sentences:
            node, path = 0, [0]
            for tok in sent:
                tok = int(tok)
                child = index.get((node, tok))
                if child is None:
                    child = index[(node, tok)] = len(tree.parent)
                    tree.parent.append(node)
                    tree.token.append(tok)
                    tree.children.append([])
                    tree.ends.append(False)
                    tree.children[node].append(child)
                node = child
                path.append(node)
            tree.ends[node] = True
            tree.paths.append(path)
        return tree

    def chains(self, max_run: int = 1) -> list[list[list[int]]]:
        """The unbranched runs of nodes, grouped by depth (level 0: the run from the empty prefix); a run
        ends at a node with no child or several, or after ``max_run`` nodes (runs of one level are padded
        to the same length), and the next runs start at its children."""
        levels: list[list[list[int]]] = []
        starts = [0]
        while starts:
            level, next_starts = [], []
            for node in starts:
                run = [node]
                while len(self.children[run[-1]]) == 1 and len(run) < max_run:
                    run.append(self.children[run[-1]][0])
                level.append(run)
                next_starts.extend(self.children[run[-1]])
            levels.append(level)
            starts = next_starts
        return levels


def _batches(runs: list[list[int]], max_tokens: int) -> list[list[int]]:
    """Indices of ``runs`` (by decreasing length) cut into batches of at most ``max_tokens`` padded tokens."""
    order = sorted(range(len(runs)), key=lambda i: -len(runs[i]))
    out, i = [], 0
    while i < len(order):
        width = len(runs[order[i]])
        j = i + 1
        while j < len(order) and width * (j + 1 - i) <= max_tokens:
            j += 1
        out.append(order[i:j])
        i = j
    return out


@torch.no_grad()
def prefix_token_logprobs(model: LanguageModel, sentences: Sequence[Sequence[int]], *, start: int = BOS,
                          max_tokens: int = 2000, max_run: int = 1) -> list[np.ndarray]:
    """ln p of each word and of ``</s>`` per sentence (``n + 1`` values), each from a fresh state, with
    every shared prefix read once (see the module docstring). Call ``model.eval()`` first."""
    if not sentences:
        return []
    tree = PrefixTree.build(sentences, start)
    logp_at: dict[tuple[int, int], float] = {}  # (node, next token) -> ln p
    device = model.device
    prev_state = None  # the previous level's end states, one row per run, and where each run sits
    prev_row: dict[int, int] = {}  # last node of a previous-level run -> its row
    for level in tree.chains(max_run):
        level_states, level_row = [], {}
        for batch in _batches(level, max_tokens):
            runs = [level[i] for i in batch]
            width = len(runs[0])
            inputs = torch.full((len(runs), width), PAD, dtype=torch.long)
            for r, run in enumerate(runs):
                inputs[r, :len(run)] = torch.tensor([tree.token[v] for v in run])
            lengths = torch.tensor([len(run) for run in runs])
            state = None
            if prev_state is not None:
                rows = torch.tensor([prev_row[tree.parent[run[0]]] for run in runs], device=device)
                state = model.reorder_state(prev_state, rows)
            logits, new_state = model(inputs.to(device), state, lengths=lengths.to(device))
            logp = torch.log_softmax(logits.float(), -1)
            where, keys = [], []
            for r, run in enumerate(runs):
                for pos, v in enumerate(run):
                    targets = [tree.token[c] for c in tree.children[v]] + ([EOS] if tree.ends[v] else [])
                    for tgt in targets:
                        where.append((r, pos, tgt))
                        keys.append((v, tgt))
            idx = torch.tensor(where, device=device).t()
            values = logp[idx[0], idx[1], idx[2]].double().cpu().tolist()
            logp_at.update(zip(keys, values))
            for r, run in enumerate(runs):
                if tree.children[run[-1]]:
                    level_row[run[-1]] = len(level_row)
            keep = [r for r, run in enumerate(runs) if tree.children[run[-1]]]
            if keep:
                level_states.append(model.reorder_state(new_state, torch.tensor(keep, device=device)))
        if not level_states:
            break
        prev_state, prev_row = concat_states(level_states), level_row
    out = []
    for sent, path in zip(sentences, tree.paths):
        nexts = [int(t) for t in sent] + [EOS]
        out.append(np.array([logp_at[(v, t)] for v, t in zip(path, nexts)], dtype=np.float64))
    return out

"""Sentence-regime token log-probabilities of many sentences over their prefix tree (n-best lists).

:func:`prefix_token_logprobs` gives :func:`nmt.lm.scoring.sentence_token_logprobs`'s values (``n + 1``
natural-log values per sentence: its words and ``</s>``, from a fresh state with ``start`` first) with
every shared prefix read once (:mod:`nmt.models.prefix_tree`), up to floating-point rounding.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from nmt.data.special import BOS
from nmt.models.lm import LanguageModel
from nmt.models.lm.base import concat_states
from nmt.models.prefix_tree import PrefixTree, tree_log_probs


@torch.no_grad()
def prefix_token_logprobs(model: LanguageModel, sentences: Sequence[Sequence[int]], *, start: int = BOS,
                          max_tokens: int = 2000) -> list[np.ndarray]:
    """ln p of each word and of ``</s>`` per sentence, each from a fresh state, over the sentences'
    prefix tree; at most ``max_tokens`` tree nodes per step. Call ``model.eval()`` first."""
    if not sentences:
        return []
    tree = PrefixTree.build(sentences, start)
    return tree_log_probs(tree, model.step, None, model.reorder_state, concat_states, max_rows=max_tokens,
                          device=model.device)

"""Sentence scoring over the prefix tree (nmt.lm.prefix_scoring) = the plain sentence scoring, per token."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from nmt.data.special import BOS, EOS
from nmt.lm.prefix_scoring import prefix_token_logprobs
from nmt.models.prefix_tree import PrefixTree
from nmt.lm.scoring import sentence_token_logprobs
from nmt.models.lm import build_lm
from nmt.models.lm.base import concat_states, select_state

pytestmark = pytest.mark.usefixtures("one_torch_thread")

V = 29


def model_of(arch: str, **kw):
    extra = {"memory_size": 4} if arch in ("rm", "rmr") else {"rounds": 5} if arch == "mogrifier" else {}
    torch.manual_seed(0)
    return build_lm(arch, V, emb_dim=10, hidden_dim=12, **{**extra, **kw}).eval()


def nbest_like(seed: int = 0) -> list[list[int]]:
    """Sentences as an n-best list has them: shared prefixes, duplicates, one the prefix of another,
    an empty one, branches at every depth."""
    g = np.random.default_rng(seed)
    stems = [list(g.integers(4, V, size=n)) for n in (6, 9, 3)]
    out = []
    for stem in stems:
        for _ in range(7):
            cut = int(g.integers(0, len(stem) + 1))
            out.append(stem[:cut] + list(g.integers(4, V, size=int(g.integers(0, 4)))))
        out.append(list(stem))
        out.append(list(stem))  # a duplicate
    out.append([])
    return out


def test_prefix_tree_has_one_node_per_distinct_prefix():
    sents = nbest_like()
    tree = PrefixTree.build(sents, BOS)
    prefixes = {tuple(s[:k]) for s in sents for k in range(len(s) + 1)}
    assert len(tree.parent) == len(prefixes)
    for s, path in zip(sents, tree.paths):
        assert len(path) == len(s) + 1 and path[0] == 0 and tree.ends[path[-1]]
        assert [tree.token[v] for v in path[1:]] == s
    assert tree.roots == [0] and tree.predictions() == len(prefixes) - 1 + len(set(map(tuple, sents)))


@pytest.mark.parametrize("arch,kw", [("lstm", {}), ("lstm", {"num_layers": 2}), ("rm", {}), ("rmr", {"num_layers": 2}),
                                     ("mogrifier", {})])
@pytest.mark.parametrize("max_tokens", [7, 1000])
def test_prefix_scores_equal_sentence_scores(arch, kw, max_tokens):
    model = model_of(arch, **kw)
    sents = nbest_like(seed=len(arch) + max_tokens)
    for start in (BOS, EOS):
        ref = sentence_token_logprobs(model, sents, start=start, max_tokens=50)
        got = prefix_token_logprobs(model, sents, start=start, max_tokens=max_tokens)  # 7: many batches a level
        assert len(got) == len(sents)
        for r, g in zip(ref, got):
            assert g.shape == r.shape
            np.testing.assert_allclose(g, r, atol=2e-5, rtol=1e-5)
    assert prefix_token_logprobs(model, []) == []


def test_concat_states_inverts_a_split():
    model = model_of("rmr", num_layers=2)
    _, state = model(torch.randint(4, V, (5, 3)))
    parts = [select_state(state, torch.tensor([0, 1])), select_state(state, torch.tensor([2, 3, 4]))]
    joined = concat_states(parts)
    for key in state:
        a, b = joined[key], state[key]
        for x, y in zip(a if isinstance(a, tuple) else [a], b if isinstance(b, tuple) else [b]):
            assert torch.equal(x, y)

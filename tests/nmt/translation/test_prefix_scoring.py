"""ln p(target | source) over the targets' prefix trees (nmt.translation.prefix_scoring) = teacher forcing."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from nmt.data.batching import pair_batch
from nmt.models import gru_encdec, rnnsearch
from nmt.translation.prefix_scoring import prefix_pair_log_probs

pytestmark = pytest.mark.usefixtures("one_torch_thread")
V_SRC, V_TGT = 30, 25


def models():
    torch.manual_seed(1)
    yield gru_encdec.build_model(gru_encdec.config_with_preset("tiny", init_std=0.5, cell="faithful"), V_SRC, V_TGT)
    yield gru_encdec.build_model(gru_encdec.config_with_preset("tiny", init_std=0.5, cell="torch"), V_SRC, V_TGT)
    yield rnnsearch.build_model(rnnsearch.config_with_preset("rnnsearch-tiny", init_std=0.5, align_init_std=0.5),
                                V_SRC, V_TGT)


def nbest_pairs(seed: int = 0) -> tuple[list[list[int]], list[list[int]]]:
    """Per source an n-best-like list: shared prefixes, a duplicate, an empty target; sources repeated
    out of order, and one target under two sources (scored under each)."""
    g = np.random.default_rng(seed)
    sources = [list(g.integers(4, V_SRC, size=n)) for n in (5, 2, 8, 1)]
    srcs, tgts = [], []
    for rep in range(2):
        for s in sources:
            stem = list(g.integers(4, V_TGT, size=6))
            for _ in range(4):
                srcs.append(s)
                tgts.append(stem[:int(g.integers(0, 7))] + list(g.integers(4, V_TGT, size=int(g.integers(0, 3)))))
            srcs += [s, s]
            tgts += [stem, stem]
    srcs.append(sources[1])
    tgts.append(tgts[0])
    return srcs, tgts


@pytest.mark.parametrize("model", list(models()), ids=["rnnenc-faithful", "rnnenc-torch", "rnnsearch"])
@pytest.mark.parametrize("sources_per_tree,max_rows", [(1, 3), (2, 1000), (100, 7)])
def test_tree_scores_equal_teacher_forcing(model, sources_per_tree, max_rows):
    model.eval()
    srcs, tgts = nbest_pairs(seed=sources_per_tree)
    batch = pair_batch(srcs, tgts)
    with torch.no_grad():
        ref = model.pair_log_probs(batch["src"], batch["tgt_in"], batch["tgt_out"]).double().tolist()
    got = prefix_pair_log_probs(model, srcs, tgts, sources_per_tree=sources_per_tree, max_rows=max_rows)
    np.testing.assert_allclose(got, ref, atol=1e-4, rtol=1e-5)
    assert prefix_pair_log_probs(model, [], []) == []
    with pytest.raises(ValueError, match="2 sources but 1 targets"):
        prefix_pair_log_probs(model, srcs[:2], tgts[:1])

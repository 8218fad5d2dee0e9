"""nmt-translate --quantize-output int8: the output layer alone becomes int8 (the rest stays fp32), its logits
stay close to the fp32 ones, the search still runs on it, and a model without the layer is refused."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from nmt.core.errors import UsageError
from nmt.models import gru_encdec, rnnsearch
from nmt.translation.quantize import quantize_output_layer
from nmt.translation.search import beam_search

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _models():
    torch.manual_seed(3)
    yield rnnsearch.build_model(rnnsearch.config_with_preset("rnnsearch-tiny"), 30, 40).eval()
    yield gru_encdec.build_model(gru_encdec.config_with_preset("tiny"), 30, 40).eval()


@pytest.mark.parametrize("model", list(_models()), ids=["rnnsearch", "rnnenc"])
def test_only_the_output_layer_is_int8_and_close(model) -> None:
    x = torch.randn(64, model.out_vocab.in_features)
    with torch.no_grad():
        before = model.out_vocab(x)
        fp32_params = {n: p.clone() for n, p in model.named_parameters() if not n.startswith("out_vocab.")}
    quantize_output_layer(model)
    assert type(model.out_vocab).__module__.startswith("torch.ao.nn.quantized.dynamic")
    assert all(not n.startswith("out_vocab.") for n, _ in model.named_parameters())   # packed int8, not a Parameter
    for n, p in model.named_parameters():                     # every other layer untouched, fp32
        assert p.dtype == torch.float32 and torch.equal(p, fp32_params[n])
    with torch.no_grad():
        after = model.out_vocab(x)
    assert after.dtype == torch.float32 and after.shape == before.shape
    scale = before.abs().max().item()
    assert 0 < (after - before).abs().max().item() <= 0.05 * scale        # rounded, and only a little


def test_the_search_runs_on_the_quantized_model() -> None:
    model = next(_models())
    src = torch.tensor([[5, 6, 7, 3], [8, 9, 3, 0]])
    quantize_output_layer(model)
    hyps = beam_search(model, src, beam_size=3, nbest=2, len_penalty=1.0)
    assert [len(h) for h in hyps] == [2, 2] and all(h.log_prob < 0 for hs in hyps for h in hs)


def test_a_model_without_an_output_layer_is_refused() -> None:
    with pytest.raises(UsageError, match="no linear output layer 'out_vocab'"):
        quantize_output_layer(nn.Sequential(nn.Linear(3, 3)))

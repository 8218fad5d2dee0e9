"""Dynamic int8 quantisation of a translation model's output layer, a speed option of ``nmt-translate``.

The output layer ``out_vocab`` (``[N, R] · [R, V]`` for every hypothesis of every step) is most of the
beam search's time on a CPU (59 % of ``nmt-translate`` for an ``rnnsearch-cpu-small`` with 11,441 target
words, measured). ``quantize_output_layer`` swaps it for PyTorch's dynamically quantised linear layer
(``torch.ao.quantization.quantize_dynamic``, fbgemm/x86 kernels): weights int8 per output row (per-channel
scales), the input quantised per call from its own range, int32 accumulation, fp32 output. Every other
layer stays fp32. The logits change by rounding (about 0.06 at most on a 256 × 11,441 layer), so the
1-bests can change: the BLEU change is measured in docs/gru_encdec.md. ``torch.ao.quantization`` is
deprecated upstream in favour of ``torchao``; it is present in the pinned torch (2.13, 2.14).
"""
from __future__ import annotations

import warnings

from torch import nn

from nmt.core.errors import UsageError

OUTPUT_LAYER = "out_vocab"  # the name of the output projection in every translation model of nmt.models


def quantize_output_layer(model: nn.Module) -> nn.Module:
    """``model`` with its ``out_vocab`` linear layer int8-quantised in place (inference only)."""
    layer = getattr(model, OUTPUT_LAYER, None)
    if not isinstance(layer, nn.Linear):
        raise UsageError(f"--quantize-output: {type(model).__name__} has no linear output layer "
                         f"'{OUTPUT_LAYER}' to quantise")
    try:
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic
    except ImportError as err:  # a torch without the (deprecated) eager-mode quantisation
        raise UsageError(f"--quantize-output int8 needs torch.ao.quantization, which this torch lacks ({err})") from None
    model.eval()
    with warnings.catch_warnings():  # torch's deprecation notices of this API (named in the module docstring)
        warnings.simplefilter("ignore")
        quantize_dynamic(model, {OUTPUT_LAYER: per_channel_dynamic_qconfig}, inplace=True)
    return model

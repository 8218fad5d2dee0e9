"""Mixed precision (``--amp``): which autocast modes a device can run, asked once per process.

The one CPU hazard: under ``torch.autocast("cpu", dtype=torch.bfloat16)`` a fused ``nn.LSTM``
runs oneDNN's bf16 LSTM primitive, which exists only on CPUs with native bf16 (AVX-512 BF16 /
AMX). Elsewhere (e.g. AVX2-only AMD EPYC, or any machine run with ``ONEDNN_MAX_CPU_ISA=AVX2``)
it raises ``RuntimeError: could not create a primitive descriptor for the LSTM forward
propagation primitive``. :func:`cpu_bf16_lstm_supported` tries a tiny bf16 LSTM (forward and
backward) once and caches the answer; :func:`lstm_needs_fp32` tells
:func:`nmt.models.lm.base.run_lstm` to run the recurrence in float32 there (the rest of the
model stays under bf16 autocast), as :func:`nmt.models.gru_recurrence.gated_recurrence` always
does for the GRU. :func:`check_amp` refuses, before any work starts, the modes a device
cannot run at all (fp16 on CPU, bf16 on a GPU without bf16).
"""
from __future__ import annotations

import functools

import torch

from nmt.core.errors import UsageError

AMP_DTYPES = {"none": None, "bf16": torch.bfloat16, "fp16": torch.float16}

#: the note shown wherever the fallback is reported (gpu_check rows, docs)
LSTM_FP32_NOTE = "LSTM recurrence in fp32 (no bf16 LSTM kernel on this CPU)"

_fallbacks = 0


@functools.lru_cache(maxsize=None)
def cpu_bf16_lstm_supported() -> bool:
    """Whether a fused ``nn.LSTM`` runs (forward and backward) under bf16 autocast on this CPU."""
    try:
        # own RNG stream (the caller's seeded runs must not depend on whether we probed), autograd on
        # even inside inference_mode / no_grad, autocast on even if the caller has it off
        with torch.random.fork_rng(devices=[]), torch.inference_mode(False), torch.enable_grad():
            torch.manual_seed(0)
            lstm = torch.nn.LSTM(8, 8, batch_first=True)
            x = torch.ones(2, 3, 8, requires_grad=True)
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                out, _ = lstm(x)
            out.float().sum().backward()
        return bool(torch.isfinite(x.grad).all())
    except RuntimeError:
        return False


def lstm_needs_fp32(device: torch.device | str) -> bool:
    """True where a fused LSTM on ``device`` must leave autocast and run in float32 (bf16 autocast on
    a CPU without the bf16 LSTM kernel)."""
    if torch.device(device).type != "cpu" or not torch.is_autocast_enabled("cpu"):
        return False
    if torch.get_autocast_dtype("cpu") != torch.bfloat16:
        return False
    return not cpu_bf16_lstm_supported()


def note_fallback() -> None:
    global _fallbacks
    _fallbacks += 1


def fallback_count() -> int:
    """How many LSTM calls ran in float32 instead of bf16 in this process (for reports)."""
    return _fallbacks


def amp_problem(device: torch.device | str, amp: str) -> str | None:
    """Why ``amp`` cannot run on ``device`` (None: it can; bf16 LSTMs on CPU fall back, see above)."""
    if amp not in AMP_DTYPES:
        return f"unknown amp mode {amp!r}; expected one of {', '.join(sorted(AMP_DTYPES))}"
    dev = torch.device(device)
    if amp == "fp16" and dev.type != "cuda":
        return "--amp fp16 needs a CUDA device (use bf16 on CPU)"
    if amp == "bf16" and dev.type == "cuda" and torch.cuda.is_available() and not torch.cuda.is_bf16_supported():
        return f"--amp bf16: GPU {torch.cuda.get_device_name(dev)} has no bf16 support (use fp16 or none)"
    return None


def check_amp(device: torch.device | str, amp: str) -> None:
    """Raise :class:`UsageError` if ``amp`` cannot run on ``device`` (call before work starts)."""
    problem = amp_problem(device, amp)
    if problem is not None:
        raise UsageError(problem)


def describe_bf16(device: torch.device | str) -> str:
    """One line for logs: how bf16 autocast runs on ``device``."""
    dev = torch.device(device)
    if dev.type != "cpu":
        return "bf16: " + ("ok" if amp_problem(dev, "bf16") is None else "unsupported")
    return "bf16 LSTM on CPU: " + ("native" if cpu_bf16_lstm_supported() else "fp32 fallback")

"""Checkpoint averaging: one checkpoint whose parameters are the element-wise mean of several saved ones.

The post-hoc counterpart of the running average in :mod:`nmt.training.weight_average` (fairseq's
``scripts/average_checkpoints.py``; Vaswani et al., 2017, average the last checkpoints the same way). Every
input must be the same model: the same task, architecture, model config, vocabularies and parameter
names, shapes and dtypes. Floating-point tensors are summed in float64 and divided by the number of
inputs (so the order of the inputs does not matter beyond the last bit); other tensors (integer buffers)
must be equal in every input. The result keeps the last input's config, vocabularies and training state
and records what it averages (``"averaged_from"``); it has no optimizer or RNG state, so it is a model to
load with ``--model FILE`` (``nmt-translate``, ``nmt-score``, ``smt-rescore``, ``nmt-lm-eval`` …), not a
run to resume.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmt.core import config as C
from nmt.core.errors import UsageError
from nmt.core.paths import CHECKPOINT_HELP, resolve_checkpoint
from nmt.training.checkpoint import load_checkpoint, save_checkpoint

log = logging.getLogger("nmt.average_checkpoints")

#: what must be equal in every input (besides the parameters' names, shapes and dtypes)
_SAME_CONFIG = ("task", "arch", "model")


@dataclass
class AverageConfig:
    inputs: list[str] = C.field([], help="the checkpoints to average: files, or with --model the names of its "
                                "checkpoints (best, last, epochN)", required=True)
    model: str = C.field("", help="model folder the --inputs names are looked up in (" + CHECKPOINT_HELP + ")")
    output: str = C.field("", help="the averaged checkpoint to write (an existing file is refused); load it "
                          "with --model FILE. Put it in the model folder: the loaders find the vocabularies "
                          "beside it", required=True)


def input_paths(cfg: AverageConfig) -> list[Path]:
    """The checkpoint files ``cfg.inputs`` name (resolved in ``cfg.model`` when given), at least two, distinct."""
    paths = [resolve_checkpoint(cfg.model, name) if cfg.model else resolve_checkpoint(name) for name in cfg.inputs]
    if len(paths) < 2:
        raise UsageError(f"--inputs: averaging needs at least two checkpoints, got {len(paths)}")
    seen: set[Path] = set()
    for p in paths:
        if p.resolve() in seen:
            raise UsageError(f"--inputs: {p} is named twice")
        seen.add(p.resolve())
    return paths


def _vocab_identity(vocab: Any) -> Any:
    """What makes two checkpoints' vocabularies the same: each side's fingerprint, not the path it was read from
    (a model folder copied or moved elsewhere and trained on keeps its fingerprints, not its paths)."""
    if not isinstance(vocab, dict):
        return vocab
    return {side: v.get("fingerprint", v) if isinstance(v, dict) else v for side, v in vocab.items()}


def _check_same_model(first: Path, ref: dict[str, Any], path: Path, state: dict[str, Any]) -> None:
    for key in _SAME_CONFIG:
        if state.get("config", {}).get(key) != ref.get("config", {}).get(key):
            raise UsageError(f"{path}: not the same model as {first} (its config's {key!r} differs)")
    if _vocab_identity(state.get("vocab")) != _vocab_identity(ref.get("vocab")):
        raise UsageError(f"{path}: not the same model as {first} (its vocabularies differ)")
    params, ref_params = state.get("model"), ref["model"]
    if not isinstance(params, dict) or list(params) != list(ref_params):
        raise UsageError(f"{path}: not the same model as {first} (its parameter names differ)")
    for name, tensor in params.items():
        other = ref_params[name]
        if not isinstance(tensor, torch.Tensor) or tensor.shape != other.shape or tensor.dtype != other.dtype:
            raise UsageError(f"{path}: not the same model as {first} (parameter {name}: "
                             f"{getattr(tensor, 'dtype', type(tensor).__name__)} {tuple(getattr(tensor, 'shape', ()))}"
                             f" against {other.dtype} {tuple(other.shape)})")
        if not tensor.is_floating_point() and not torch.equal(tensor, other):
            raise UsageError(f"{path}: not the same model as {first} (integer tensor {name} differs)")


def average_states(paths: list[Path]) -> dict[str, Any]:
    """The averaged checkpoint of ``paths`` (see the module docstring); one input in memory at a time."""
    first = load_checkpoint(paths[0])
    if not isinstance(first.get("model"), dict):
        raise UsageError(f"{paths[0]}: no model parameters in this checkpoint")
    sums = {k: v.double().clone() if v.is_floating_point() else v for k, v in first["model"].items()}
    steps = [first.get("train_state", {}).get("step")]
    last = first
    for path in paths[1:]:
        state = load_checkpoint(path)
        _check_same_model(paths[0], first, path, state)
        for name, tensor in state["model"].items():
            if tensor.is_floating_point():
                sums[name] += tensor.double()
        steps.append(state.get("train_state", {}).get("step"))
        last = state
    n = len(paths)
    averaged = {k: (v / n).to(first["model"][k].dtype) if v.is_floating_point() else v for k, v in sums.items()}
    out = {key: value for key, value in last.items() if key not in ("model", "optimizer", "rng", "cuda_rng",
                                                                     "average")}
    out["model"] = averaged
    out["averaged_from"] = [{"path": str(p), "step": s} for p, s in zip(paths, steps)]
    return out


def average_checkpoints(cfg: AverageConfig) -> dict[str, Any]:
    """Write the average of ``cfg.inputs`` to ``cfg.output`` (atomically; an existing output or one that is
    an input is refused). Returns a summary: output, inputs, their update steps, parameter count."""
    output = Path(cfg.output)
    paths = input_paths(cfg)
    if output.exists():
        raise UsageError(f"--output {output}: exists; refusing to overwrite it (remove it or name another file)")
    state = average_states(paths)
    save_checkpoint(state, output)
    n_params = sum(t.numel() for t in state["model"].values() if t.is_floating_point())
    log.info("averaged %d checkpoints (%d parameters) -> %s", len(paths), n_params, output)
    return {"output": str(output), "inputs": [str(p) for p in paths],
            "steps": [e["step"] for e in state["averaged_from"]], "parameters": n_params}

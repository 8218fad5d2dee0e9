"""Neural language models chosen by name (``--arch``), with named presets.

``ARCHITECTURES``: name → (model class, config dataclass); ``PRESETS``: name →
dict of config values plus the ``"arch"`` it belongs to. ``build_lm`` takes an
architecture *or* a preset name; keyword overrides win over the preset.

Only torch and the small dataclass helpers are imported here.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from nmt.models.lm.base import LanguageModel, make_lm_batch
from nmt.models.lm.lstm import PRESETS as LSTM_PRESETS
from nmt.models.lm.lstm import LSTMConfig, LSTMLM
from nmt.models.lm.mogrifier import PRESETS as MOGRIFIER_PRESETS
from nmt.models.lm.mogrifier import MogrifierConfig, MogrifierLM
from nmt.models.lm.rmn import PRESETS as RMN_PRESETS
from nmt.models.lm.rmn import RMLM, RMNConfig, RMRLM

ARCHITECTURES: dict[str, tuple[type[LanguageModel], type]] = {
    "lstm": (LSTMLM, LSTMConfig),
    "rm": (RMLM, RMNConfig),
    "rmr": (RMRLM, RMNConfig),
    "mogrifier": (MogrifierLM, MogrifierConfig),
}

PRESETS: dict[str, dict[str, Any]] = {**LSTM_PRESETS, **RMN_PRESETS, **MOGRIFIER_PRESETS}


def resolve(name: str) -> tuple[str, dict[str, Any]]:
    """``(architecture, config values)`` for an architecture or preset name."""
    if name in ARCHITECTURES:
        return name, {}
    if name in PRESETS:
        values = dict(PRESETS[name])
        return values.pop("arch"), values
    raise KeyError(f"unknown LM architecture or preset {name!r}; architectures: {sorted(ARCHITECTURES)}, "
                   f"presets: {sorted(PRESETS)}")


def build_config(name: str, **overrides: Any) -> tuple[str, Any]:
    """``(architecture, config instance)`` for a name plus overrides (unknown keys raise)."""
    arch, values = resolve(name)
    _, cfg_cls = ARCHITECTURES[arch]
    values.update(overrides)
    names = {f.name for f in dataclasses.fields(cfg_cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for {arch!r} ({cfg_cls.__name__}); known: {sorted(names)}")
    return arch, cfg_cls(**values)


def build_lm(arch: str, vocab_size: int, **overrides: Any) -> LanguageModel:
    """Build a language model from an architecture or preset name, e.g.
    ``build_lm("rmr", 10000, memory_size=10)`` or ``build_lm("rm-paper", 10000)`` (the RMN paper's best LM,
    RM(+tM−g))."""
    arch, cfg = build_config(arch, **overrides)
    model_cls, _ = ARCHITECTURES[arch]
    return model_cls.from_config(cfg, vocab_size)


__all__ = ["ARCHITECTURES", "PRESETS", "build_lm", "build_config", "resolve", "LanguageModel",
           "make_lm_batch"]

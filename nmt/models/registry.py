"""The encoder–decoder architectures by name: rnnenc (Cho et al., 2014) and rnnsearch (Bahdanau et al., 2015).

Each architecture has a config dataclass, named presets and a builder. ``nmt-train --arch``
picks one (default: from ``--preset``, ``rnnsearch-*`` presets being RNNsearch, the others
RNNenc); a checkpoint records it under ``config["arch"]`` (absent = rnnenc, so RNNenc runs
and their ``config.yaml`` stay as they were) and :mod:`nmt.translation.model_io` rebuilds it from there.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from torch import nn

from nmt.core.config import field
from nmt.models import gru_encdec, rnnsearch


@dataclass(frozen=True)
class Arch:
    name: str
    config_class: type
    presets: dict[str, dict]
    build: Callable[[Any, int, int], nn.Module]
    default_preset: str


ARCHS: dict[str, Arch] = {
    "rnnenc": Arch("rnnenc", gru_encdec.GRUEncDecConfig, gru_encdec.PRESETS, gru_encdec.build_model, "cpu-small"),
    "rnnsearch": Arch("rnnsearch", rnnsearch.RNNsearchConfig, rnnsearch.PRESETS, rnnsearch.build_model,
                      "rnnsearch-cpu-small"),
}
DEFAULT_ARCH = "rnnenc"


@dataclass
class ArchConfig:
    arch: str | None = field(None, help="rnnenc (Cho et al. 2014, fixed-length summary) or rnnsearch (Bahdanau et "
                                        "al. 2015, attention); default: rnnsearch for the rnnsearch-* presets, "
                                        "else rnnenc")
    align_dim: int | None = field(None, help="rnnsearch: hidden size n' of the alignment model (paper: 1000)")
    align_init_std: float | None = field(None, help="rnnsearch: std of the N(0, std²) init of W_a, U_a "
                                                    "(paper: 0.001)")


def arch_of_preset(preset: str | None) -> str:
    """The architecture a preset name belongs to (unknown names: the default)."""
    for name, arch in ARCHS.items():
        if preset in arch.presets:
            return name
    return DEFAULT_ARCH


def get_arch(name: str) -> Arch:
    if name not in ARCHS:
        raise ValueError(f"unknown arch {name!r}; known: {sorted(ARCHS)}")
    return ARCHS[name]


def model_fields(name: str) -> set[str]:
    return {f.name for f in dataclasses.fields(get_arch(name).config_class)}


def all_presets() -> list[str]:
    return sorted(p for arch in ARCHS.values() for p in arch.presets)


def build_from_config(name: str, model_config: dict[str, Any], src_vocab_size: int, tgt_vocab_size: int
                      ) -> nn.Module:
    """The model of a checkpoint's recorded arch and model config (untrained weights)."""
    arch = get_arch(name)
    return arch.build(arch.config_class(**model_config), src_vocab_size, tgt_vocab_size)


def resolve_model_config(preset: str, preset_given: bool, args: Any, yaml_values: dict[str, Any]
                         ) -> tuple[str, str, Any]:
    """(arch, preset, model config) of nmt-train's flags: ``--arch`` (or the preset's arch), the preset (a
    defaulted ``--preset`` becomes the arch's default) and the model flags over it. A model option of the
    other architecture given on the command line or in the YAML is a UsageError."""
    from nmt.core import config as C
    from nmt.core.errors import UsageError

    arch_cfg = C.build(ArchConfig, args, yaml_values)
    name = arch_cfg.arch or arch_of_preset(preset if preset_given else None)
    if name not in ARCHS:
        raise UsageError(f"unknown --arch {name!r}; known: {', '.join(sorted(ARCHS))}")
    arch = ARCHS[name]
    if not preset_given and preset not in arch.presets:
        preset = arch.default_preset
    if preset not in arch.presets:
        raise UsageError(f"unknown --preset {preset!r} for --arch {name}; known: {', '.join(sorted(arch.presets))}")
    own = model_fields(name)
    given_yaml = {k.replace("-", "_") for k in yaml_values}
    for other in ARCHS.values():
        for f in dataclasses.fields(other.config_class):
            if f.name not in own and (getattr(args, f.name, None) is not None or f.name in given_yaml):
                raise UsageError(f"--{f.name.replace('_', '-')} is an option of --arch {other.name}, not of "
                                 f"--arch {name}")
    return name, preset, C.build(arch.config_class, args, yaml_values, base=arch.presets[preset])

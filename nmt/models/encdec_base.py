"""What the encoder–decoder families (RNNenc, RNNsearch) share: ln p(target | source) of pairs, the parameter
count, and configs from named presets."""
from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import torch.nn.functional as F
from torch import Tensor, nn

from nmt.data.special import PAD

C = TypeVar("C")


class PairScoringModel(nn.Module):
    """A model whose ``forward(src, tgt_in)`` gives logits [B, T, V]; adds the pair score and parameter count."""

    def pair_log_probs(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        """ln p(target | source) per pair [B], summed over target tokens incl. EOS, PAD ignored."""
        logits = self.forward(src, tgt_in)
        nll = F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=PAD, reduction="none")
        return -nll.sum(1)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def preset_config(config: C, presets: dict[str, dict[str, Any]], default: str, preset: str | None,
                  **overrides: Any) -> C:
    """``config`` with preset ``preset`` (``default`` when None) applied, then the overrides that are not None."""
    if preset is not None and preset not in presets:
        raise ValueError(f"unknown preset {preset!r}; known: {sorted(presets)}")
    values = dict(presets.get(preset or default, {}))
    values.update({k: v for k, v in overrides.items() if v is not None})
    return dataclasses.replace(config, **values)  # type: ignore[type-var]

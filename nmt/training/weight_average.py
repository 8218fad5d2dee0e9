"""The running mean of a model's parameters (weight averaging), checkpointed and swapped in for evaluation."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn


class ParameterAverage:
    """The mean of a model's parameters over the updates since :meth:`start` (nothing before it)."""

    def __init__(self) -> None:
        self.params: dict[str, torch.Tensor] | None = None
        self.count = 0

    @property
    def started(self) -> bool:
        return self.params is not None

    def start(self, model: nn.Module) -> None:
        """The average of one update: the current parameters."""
        with torch.no_grad():
            self.params = {k: p.detach().clone() for k, p in model.named_parameters()}
        self.count = 1

    def add(self, model: nn.Module) -> None:
        """Fold the current parameters into the running mean."""
        assert self.params is not None, "start() first"
        params = dict(model.named_parameters())
        with torch.no_grad():
            self.count += 1
            weight = 1.0 / self.count
            for k, p in params.items():
                self.params[k].lerp_(p.detach(), weight)

    def to_checkpoint(self) -> dict[str, Any]:
        assert self.params is not None
        return {"count": self.count, "params": {k: v.detach().cpu() for k, v in self.params.items()}}

    def load(self, saved: dict[str, Any], device: torch.device) -> None:
        """Restore what :meth:`to_checkpoint` wrote."""
        self.params = {k: v.to(device) for k, v in saved["params"].items()}
        self.count = int(saved["count"])

    @contextlib.contextmanager
    def swapped_in(self, model: nn.Module) -> Iterator[None]:
        """The average in ``model``'s parameters for the block (no-op before :meth:`start`)."""
        if self.params is None:
            yield
            return
        params = dict(model.named_parameters())
        with torch.no_grad():
            backup = {k: p.detach().clone() for k, p in params.items()}
            for k, p in params.items():
                p.copy_(self.params[k])
        try:
            yield
        finally:
            with torch.no_grad():
                for k, p in params.items():
                    p.copy_(backup[k])

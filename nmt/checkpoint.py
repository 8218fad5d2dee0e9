"""Atomic checkpoints: model, optimizer, RNG states, data position and the resolved config."""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nmt.data.io import atomic_write


def save_checkpoint(state: dict[str, Any], path: str | Path) -> None:
    """Write ``state`` with ``torch.save`` atomically (temp file in the same folder, fsync, rename)."""
    with atomic_write(path, "wb") as fh:
        torch.save(state, fh)


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # a truncated or foreign file
        raise ValueError(f"{path}: not a readable checkpoint ({exc})") from exc


def rng_state() -> dict[str, Any]:
    return {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])

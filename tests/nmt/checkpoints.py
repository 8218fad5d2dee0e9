"""Checking that two nmt checkpoints hold the same training state (exact resume, DDP, streamed data)."""
from __future__ import annotations

from pathlib import Path


def assert_same_checkpoint(a: Path, b: Path) -> None:
    """Two checkpoints hold bit-identical training state: step, parameters, optimizer state, lr."""
    import torch

    from nmt.training.checkpoint import load_checkpoint

    sa, sb = load_checkpoint(a), load_checkpoint(b)
    assert sa["train_state"]["step"] == sb["train_state"]["step"]
    for name, tensor in sa["model"].items():
        assert torch.equal(tensor, sb["model"][name]), name
    for (ka, va), (kb, vb) in zip(sa["optimizer"]["state"].items(), sb["optimizer"]["state"].items()):
        assert ka == kb
        for key in va:
            assert torch.equal(va[key], vb[key]), (ka, key)
    assert sa["optimizer"]["param_groups"][0]["lr"] == sb["optimizer"]["param_groups"][0]["lr"]

"""DistributedDataParallel (gloo, CPU): 2 processes under torchrun agree with 1 process at the same
global batch, and checkpoints move between world sizes.

Each rank trains on a disjoint slice of every global batch and the loss is normalised by the global
token count, so the two runs differ only in the order of float reductions: per-update losses agree to
~1e-7 relative (asserted: 1e-5), parameters after 10 Adam updates to ~4e-6 absolute (asserted: rtol 1e-4,
atol 1e-5); see docs/training.md. Dropout is 0 (the ranks draw their own masks).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from nmt.training.checkpoint import load_checkpoint
from nmt.cli.lm_train import cli_main as lm_train_main
from nmt.cli.train import cli_main as train_main
from nmt.training.distributed import rows_of, shard
from tests import ROOT

LOSS_RTOL = 1e-5      # per-update training / dev losses (nats per token)
PARAM_RTOL, PARAM_ATOL = 1e-4, 1e-5


def _torchrun(module: str, args: list[str], nproc: int = 2) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc),
           "-m", module, *args]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


def _history(out: Path, key: str) -> list[tuple[int, float]]:
    return [(h["step"], h[key]) for h in json.loads((out / "history.json").read_text()) if key in h]


def _assert_losses_close(a: Path, b: Path) -> float:
    worst = 0.0
    for key in ("train_loss", "dev_loss"):
        ha, hb = _history(a, key), _history(b, key)
        assert [s for s, _ in ha] == [s for s, _ in hb] and ha, key
        for (_, x), (_, y) in zip(ha, hb):
            assert abs(x - y) <= LOSS_RTOL * abs(x), (key, x, y)
            worst = max(worst, abs(x - y) / abs(x))
    return worst


def _assert_params_close(a: Path, b: Path) -> None:
    sa, sb = load_checkpoint(a), load_checkpoint(b)
    assert sa["train_state"]["step"] == sb["train_state"]["step"]
    assert sa["train_state"]["epoch"] == sb["train_state"]["epoch"]
    assert sa["train_state"]["batch_in_epoch"] == sb["train_state"]["batch_in_epoch"]
    for name, tensor in sa["model"].items():
        torch.testing.assert_close(sb["model"][name], tensor, rtol=PARAM_RTOL, atol=PARAM_ATOL, msg=name)


def test_shards_are_disjoint_and_cover_the_batch() -> None:
    import numpy as np

    batch = np.array([7, 3, 9, 4, 1])
    parts = [shard(batch, r, 2) for r in range(2)]
    assert [p.tolist() for p, _ in parts] == [[7, 3, 9], [4, 1]] and all(w == 1.0 for _, w in parts)
    # fewer examples than ranks: the rank without one takes part with weight 0
    assert [(p.tolist(), w) for p, w in (shard(batch[:1], r, 2) for r in range(2))] == [([7], 1.0), ([7], 0.0)]
    assert [rows_of(5, r, 2) for r in range(2)] == [(0, 3), (3, 5)]


@pytest.mark.slow
def test_translation_two_processes_match_one_and_resume_with_one(toy_data: Path, tmp_path: Path) -> None:
    common = ["--data-dir", str(toy_data), "--preset", "tiny", "--dropout", "0", "--optimizer", "adam", "--lr",
              "0.01", "--batch-size", "16", "--progress", "false", "--threads", "1", "--log-every", "1",
              "--eval-every", "3", "--save-every", "6"]
    one, two = tmp_path / "one", tmp_path / "two"
    train_main([*common, "--out-dir", str(one), "--max-updates", "10"])
    one10 = tmp_path / "one10.pt"
    one10.write_bytes((one / "checkpoint_last.pt").read_bytes())
    # 2 processes, the same global batches of 16 (8 per process)
    _torchrun("nmt.cli.train", [*common, "--out-dir", str(two), "--max-updates", "10"])
    _assert_params_close(one10, two / "checkpoint_last.pt")
    assert _assert_losses_close(one, two) < LOSS_RTOL
    # the 2-process checkpoint resumed by 1 process (no rank-specific state; the data position is global)
    train_main([*common, "--out-dir", str(one), "--max-updates", "14", "--resume"])
    train_main([*common, "--out-dir", str(two), "--max-updates", "14", "--resume"])
    _assert_params_close(one / "checkpoint_last.pt", two / "checkpoint_last.pt")
    _assert_losses_close(one, two)
    log = (two / "train.log").read_text()
    assert "resumed" in log and log.count("ppl") == 4   # one log (rank 0 only): evaluations 3, 6, 9, 12


@pytest.mark.slow
def test_lm_stream_state_moves_between_world_sizes(tmp_path: Path) -> None:
    """Stream regime: each rank carries the state of its rows; the checkpoint holds all rows."""
    from tests.nmt.lm.test_lm_cli import make_corpus

    corpus = make_corpus(tmp_path / "data")
    common = ["--train", str(corpus["train"]), "--valid", str(corpus["valid"]), "--arch", "lstm", "--num-layers",
              "2", "--emb-dim", "8", "--hidden-dim", "8", "--threads", "1", "--progress", "false", "--optimizer",
              "sgd", "--lr", "0.5", "--loss-norm", "sequence", "--clip-norm", "5", "--regime", "stream", "--bptt",
              "6", "--batch-size", "3", "--max-epochs", "2", "--log-every", "1", "--eval-every", "10",
              "--save-every", "7"]
    one, mixed = tmp_path / "one", tmp_path / "mixed"
    lm_train_main([*common, "--out-dir", str(one), "--max-updates", "60"])
    lm_train_main([*common, "--out-dir", str(mixed), "--max-updates", "13"])      # 1 process, mid-epoch
    assert load_checkpoint(mixed / "checkpoint_last.pt")["lm_stream"]["state"] is not None
    _torchrun("nmt.cli.lm_train", [*common, "--out-dir", str(mixed), "--max-updates", "60", "--resume"])
    state = load_checkpoint(mixed / "checkpoint_last.pt")
    assert state["train_state"]["epoch"] == 1 and state["train_state"]["batch_in_epoch"] > 0
    h, _ = state["lm_stream"]["state"]
    assert h.shape[1] == 3                                                        # all rows, gathered
    _assert_params_close(one / "checkpoint_last.pt", mixed / "checkpoint_last.pt")
    _assert_losses_close(one, mixed)
    summary = json.loads((mixed / "summary.json").read_text())
    assert summary["this_run"]["processes"] == 2

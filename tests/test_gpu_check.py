"""benchmarks/gpu_check.py: the CPU dry run completes and prints the one table; --device cuda
without a GPU fails clearly."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def dry_run():
    return subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--steps", "2", "--threads", "1"],
                          capture_output=True, text=True, env=ENV, timeout=120)


def test_dry_run_prints_table(dry_run):
    out = dry_run.stdout
    assert dry_run.returncode in (0, 1), dry_run.stderr[-3000:]  # 1 = some row failed (next test says which)
    assert "[DRY RUN]" in out
    header = next(line for line in out.splitlines() if line.startswith("task"))
    for col in ("arch", "device", "dtype", "steps", "throughput", "loss"):
        assert col in header
    rows = [line.split() for line in out.splitlines() if line.startswith(("train ", "rescore "))]
    train = {(r[1], r[3]) for r in rows if r[0] == "train"}
    for arch in ("encdec-faithful", "encdec-torch", "lstm", "rm", "rmr", "mogrifier"):
        assert (arch, "fp32") in train and (arch, "bf16") in train, arch
    rescore = {r[3]: r for r in rows if r[0] == "rescore"}
    assert set(rescore) == {"fp32", "bf16", "fp16"}
    assert float(rescore["fp32"][5]) > 0
    assert "skipped: fp16 needs CUDA" in out


def test_dry_run_all_rows_ok(dry_run):
    failed = [line for line in dry_run.stdout.splitlines() if "FAILED" in line or "NON-FINITE" in line]
    assert dry_run.returncode == 0 and not failed, "\n".join(failed) or dry_run.stderr[-3000:]
    for line in dry_run.stdout.splitlines():
        if line.startswith("train "):
            r = line.split()
            assert r[2] == "cpu" and float(r[5]) > 0 and float(r[7]) > 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_gpu_fails_clearly():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--device", "cuda"], capture_output=True, text=True,
                          env=ENV, timeout=120)
    assert proc.returncode == 2
    assert "no CUDA GPU" in proc.stderr
    assert "task" not in proc.stdout

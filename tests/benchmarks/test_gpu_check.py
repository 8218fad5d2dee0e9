"""benchmarks/gpu_check.py: the CPU dry run completes and prints the one table; --device cuda
without a GPU fails clearly; bf16 works on every CPU (the LSTM falls back to fp32 where oneDNN
has no bf16 LSTM kernel, and the rows say so)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from tests import ROOT

SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
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


def _check_rows_ok(proc) -> None:
    """Every row ran (or was skipped, saying why), finite; bf16 LSTM rows name the fp32 fallback iff the
    header says this CPU takes it. Holds on every CPU, with or without a bf16 LSTM kernel."""
    out = proc.stdout
    failed = [line for line in out.splitlines() if "FAILED" in line or "NON-FINITE" in line]
    assert proc.returncode == 0 and not failed, "\n".join(failed) or proc.stderr[-3000:]
    header = out.splitlines()[0]
    assert "bf16 LSTM on CPU: native" in header or "bf16 LSTM on CPU: fp32 fallback" in header, header
    fallback = "fp32 fallback" in header
    for line in out.splitlines():
        r = line.split()
        if line.startswith("train "):
            if "skipped:" in line:
                assert line.split("skipped:")[1].strip(), line  # a skipped row says why
                continue
            assert r[2] == "cpu" and float(r[5]) > 0 and float(r[7]) > 0, line
            uses_lstm = r[1] in ("lstm", "rm", "rmr") and r[3] == "bf16"
            assert ("LSTM recurrence in fp32" in line) == (fallback and uses_lstm), line
        elif line.startswith("rescore ") and "skipped:" in line:
            assert line.split("skipped:")[1].strip(), line


def test_dry_run_all_rows_ok(dry_run):
    _check_rows_ok(dry_run)


def test_bf16_without_native_lstm_kernel_falls_back_to_fp32():
    """An AVX2-only CPU (e.g. AMD EPYC without AVX-512), emulated: ONEDNN_MAX_CPU_ISA=AVX2 removes
    oneDNN's bf16 LSTM kernel on any x86 CPU. The bf16 rows still train, with the LSTM in fp32."""
    env = {**ENV, "ONEDNN_MAX_CPU_ISA": "AVX2"}
    probe = subprocess.run([sys.executable, "-c", "from nmt.training.precision import cpu_bf16_lstm_supported as s; "
                            "print(s())"], capture_output=True, text=True, env=env, timeout=120)
    assert probe.returncode == 0, probe.stderr[-3000:]
    proc = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--steps", "2", "--threads", "1", "--only",
                           "lstm,rm,rmr,mogrifier", "--amp", "bf16"], capture_output=True, text=True, env=env,
                          timeout=120)
    _check_rows_ok(proc)
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("train ")]
    assert {(r[1], r[3]) for r in rows} == {(a, "bf16") for a in ("lstm", "rm", "rmr", "mogrifier")}
    native = probe.stdout.strip() == "True"   # an ISA oneDNN cannot be limited to AVX2 (not x86)
    assert ("fp32 fallback" in proc.stdout.splitlines()[0]) == (not native)


def test_probe_does_not_touch_the_rng():
    from nmt.training.precision import cpu_bf16_lstm_supported

    cpu_bf16_lstm_supported.cache_clear()
    torch.manual_seed(5)
    before = torch.get_rng_state()
    cpu_bf16_lstm_supported()
    assert torch.equal(torch.get_rng_state(), before)
    with torch.inference_mode():  # callable from inside scoring code too
        cpu_bf16_lstm_supported.cache_clear()
        assert isinstance(cpu_bf16_lstm_supported(), bool)


def test_lstm_under_bf16_autocast_runs_on_every_cpu():
    from nmt.models.lm import build_lm

    torch.manual_seed(0)
    model = build_lm("rm", 20, emb_dim=8, hidden_dim=8, memory_size=3)
    tokens = torch.randint(4, 20, (2, 5))
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        logits, state = model(tokens, lengths=torch.tensor([5, 3]))
    logits.float().sum().backward()
    ref, _ = model(tokens, lengths=torch.tensor([5, 3]))
    assert torch.isfinite(logits.float()).all()
    torch.testing.assert_close(logits.float(), ref, atol=0.1, rtol=0.05)


def test_amp_checks_refuse_before_work():
    from nmt.core.errors import UsageError
    from nmt.training.precision import amp_problem, check_amp

    assert amp_problem("cpu", "bf16") is None and amp_problem("cpu", "none") is None
    with pytest.raises(UsageError, match="fp16 needs a CUDA"):
        check_amp("cpu", "fp16")
    with pytest.raises(UsageError, match="unknown amp"):
        check_amp("cpu", "fp8")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_gpu_fails_clearly():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--device", "cuda"], capture_output=True, text=True,
                          env=ENV, timeout=120)
    assert proc.returncode == 2
    assert "no CUDA GPU" in proc.stderr
    assert "task" not in proc.stdout

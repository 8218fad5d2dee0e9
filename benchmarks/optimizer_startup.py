"""``nmt-train --optimizer-impl native`` against ``torch`` (torch.optim), alternated in one run: wall time per
run and whether the two runs' weights are equal.

    .venv/bin/python benchmarks/optimizer_startup.py [--reps 4] [--updates 20] [--optimizer adadelta]

Each run is a fresh ``nmt-train`` process (``--preset tiny --threads 1``) on the tests' toy corpus, so the time is
mostly start-up: ``import torch`` and, with torch.optim, its ``torch._dynamo`` import (docs/architecture.md).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.toy_corpus import make_toy_data  # noqa: E402

IMPLS = ("native", "torch")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--updates", type=int, default=20)
    ap.add_argument("--optimizer", default="adadelta", choices=("adadelta", "adam", "sgd"))
    args = ap.parse_args()
    exe = Path(sys.executable).parent / "nmt-train"
    with tempfile.TemporaryDirectory() as tmp:
        data = make_toy_data(Path(tmp) / "data")
        times: dict[str, list[float]] = {impl: [] for impl in IMPLS}
        for rep in range(args.reps):
            for impl in IMPLS:
                out = Path(tmp) / f"{impl}{rep}"
                cmd = [str(exe), "--data-dir", str(data), "--out-dir", str(out), "--preset", "tiny", "--optimizer",
                       args.optimizer, "--max-updates", str(args.updates), "--progress", "false", "--threads", "1",
                       "--optimizer-impl", impl]
                start = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                times[impl].append(time.perf_counter() - start)
        last = {impl: torch.load(Path(tmp) / f"{impl}{args.reps - 1}" / "checkpoint_last.pt",
                                 weights_only=True)["model"] for impl in IMPLS}
        equal = all(torch.equal(last["native"][k], last["torch"][k]) for k in last["native"])
    print(f"| --optimizer-impl | wall per run (s) | median |\n|---|---|---:|")
    for impl in IMPLS:
        print(f"| {impl} | {', '.join(f'{t:.2f}' for t in times[impl])} | {statistics.median(times[impl]):.2f} |")
    ratio = statistics.median(times["native"]) / statistics.median(times["torch"])
    print(f"native / torch (medians): {ratio:.2f}; last runs' {len(last['native'])} weight tensors equal: {equal}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())

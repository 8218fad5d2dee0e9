"""Training throughput (target tokens/s) of the faithful gated unit vs ``torch.nn.GRU``, same run.

The cells train on the same Multi30k batches at equal sizes; the runs are
interleaved (faithful, torch, faithful, torch, ...) so that machine noise hits
all alike, and the ratio faithful/torch is printed. "faithful" is the fused
path (:mod:`nmt.models.gru_recurrence`, hand-written BPTT); ``--with-plain``
adds the old plain autograd loop ("plain") as a third interleaved cell.

    .venv/bin/python benchmarks/gru_cell_throughput.py --data-dir work/multi30k_enfr_quick/data --with-plain
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

# the machine is shared: spinning OpenMP threads collapse under load
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from nmt.data.batching import bucketed_batches  # noqa: E402
from nmt.models.gru_encdec import config_with_preset, build_model  # noqa: E402
from nmt.training.config import OptimConfig, build_optimizer  # noqa: E402
from nmt.translation.data import TranslationDataConfig, TranslationTask  # noqa: E402


def tokens_per_second(cell: str, preset: str, task: TranslationTask, batches, rounds_of: int) -> float:
    """``cell``: 'faithful' (fused), 'plain' (faithful, plain autograd loop) or 'torch'."""
    torch.manual_seed(0)
    model = build_model(config_with_preset(preset, cell="torch" if cell == "torch" else "faithful"),
                        len(task.src_vocab), len(task.tgt_vocab))
    if cell == "plain":
        model.encoder.unit.fused = model.decoder.unit.fused = False
    opt = build_optimizer(OptimConfig(), model.parameters())
    tokens, start = 0, 0.0
    for i, idx in enumerate(batches[:rounds_of + 2]):
        if i == 2:  # two warm-up updates
            tokens, start = 0, time.perf_counter()
        batch = task.make_batch(idx)
        nll, ntok = task.loss(model, batch)
        opt.zero_grad()
        (nll / ntok).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens += ntok
    return tokens / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", required=True, help="folder written by nmt-prepare")
    ap.add_argument("--presets", nargs="+", default=["cpu-small", "cpu-base"])
    ap.add_argument("--updates", type=int, default=30, help="timed updates per measurement")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved measurements per cell")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--with-plain", action="store_true", help="also time the faithful cell's plain autograd loop")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    task = TranslationTask(TranslationDataConfig(data_dir=args.data_dir, dev_max_pairs=1))
    batches = bucketed_batches(task.train_lengths(), batch_size=64, seed=1, epoch=0)
    cells = ["plain", "faithful", "torch"] if args.with_plain else ["faithful", "torch"]
    head = f"{'preset':<10}"
    if args.with_plain:
        head += f" {'plain tok/s':>12}"
    head += f" {'faithful tok/s':>15} {'torch.nn.GRU tok/s':>19}"
    if args.with_plain:
        head += f" {'plain/torch':>12}"
    print(head + f" {'ratio':>7}", flush=True)
    for preset in args.presets:
        runs: dict[str, list[float]] = {cell: [] for cell in cells}
        for _ in range(args.repeats):
            for cell in runs:
                runs[cell].append(tokens_per_second(cell, preset, task, batches, args.updates))
        med = {cell: statistics.median(v) for cell, v in runs.items()}
        f, t = med["faithful"], med["torch"]
        line = f"{preset:<10}"
        if args.with_plain:
            line += f" {med['plain']:>12.0f}"
        line += f" {f:>15.0f} {t:>19.0f}"
        if args.with_plain:
            line += f" {med['plain'] / t:>12.2f}"
        print(line + f" {f / t:>7.2f}", flush=True)


if __name__ == "__main__":
    main()

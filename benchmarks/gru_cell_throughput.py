"""Training throughput (target tokens/s) of the faithful gated unit vs ``torch.nn.GRU``, same run.

Both cells train on the same Multi30k batches at equal sizes; the runs are
interleaved (faithful, torch, faithful, torch, ...) so that machine noise hits
both alike, and the ratio faithful/torch is printed.

    .venv/bin/python benchmarks/gru_cell_throughput.py --data-dir work/multi30k_enfr_quick/data
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from nmt.data.batching import bucketed_batches
from nmt.models.gru_encdec import config_with_preset, build_model
from nmt.train import OptimConfig, build_optimizer
from nmt.translation_data import TranslationDataConfig, TranslationTask


def tokens_per_second(cell: str, preset: str, task: TranslationTask, batches, rounds_of: int) -> float:
    torch.manual_seed(0)
    model = build_model(config_with_preset(preset, cell=cell), len(task.src_vocab), len(task.tgt_vocab))
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
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    task = TranslationTask(TranslationDataConfig(data_dir=args.data_dir, dev_max_pairs=1))
    batches = bucketed_batches(task.train_lengths(), batch_size=64, seed=1, epoch=0)
    print(f"{'preset':<10} {'faithful tok/s':>15} {'torch.nn.GRU tok/s':>19} {'ratio':>7}")
    for preset in args.presets:
        runs: dict[str, list[float]] = {"faithful": [], "torch": []}
        for _ in range(args.repeats):
            for cell in runs:
                runs[cell].append(tokens_per_second(cell, preset, task, batches, args.updates))
        f, t = statistics.median(runs["faithful"]), statistics.median(runs["torch"])
        print(f"{preset:<10} {f:>15.0f} {t:>19.0f} {f / t:>7.2f}")


if __name__ == "__main__":
    main()

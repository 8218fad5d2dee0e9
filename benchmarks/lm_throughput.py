"""Training throughput of the neural LMs, as ratios to an LSTM measured in the same run.

One train step = forward + cross-entropy + backward on a batch of B×T tokens
(default 20×35, vocabulary 10 000, d = 128, 2 intra-op threads, CPU).
The models are measured round-robin (so background load hits all alike) and
the best of ``--reps`` steps is reported, with the median next to it.

    .venv/bin/python benchmarks/lm_throughput.py            # the reference setting
    .venv/bin/python benchmarks/lm_throughput.py --vocab 50 # ≈ the recurrent core alone

Reference: ``lstm-1x128``; "cost ×" = step time / reference step time.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nmt.models.lm import build_lm  # noqa: E402

REFERENCE = "lstm-1x128"


def models(dim: int, vocab: int) -> dict[str, torch.nn.Module]:
    common = {"emb_dim": dim, "hidden_dim": dim}
    return {
        REFERENCE: build_lm("lstm", vocab, **common, num_layers=1),
        "lstm-3x128": build_lm("lstm", vocab, **common, num_layers=3),
        "rm (n=15, +tM-g)": build_lm("rm-paper", vocab, **common),
        "rmr (n=15, +tM-g)": build_lm("rmr-paper", vocab, **common),
        "mogrifier (r=5, full rank)": build_lm("mogrifier", vocab, **common, num_layers=1, rounds=5, rank=0),
        "mogrifier (r=5, rank 16)": build_lm("mogrifier", vocab, **common, num_layers=1, rounds=5, rank=16),
        "mogrifier (r=5, no zigzag)": build_lm("mogrifier", vocab, **common, num_layers=1, rounds=5,
                                               zigzag=False),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--bptt", type=int, default=35)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    zoo = models(args.dim, args.vocab)
    x = torch.randint(4, args.vocab, (args.batch, args.bptt))
    y = torch.randint(4, args.vocab, (args.batch, args.bptt))

    def step(model: torch.nn.Module) -> float:
        t0 = time.perf_counter()
        model.zero_grad(set_to_none=True)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1))
        loss.backward()
        return time.perf_counter() - t0

    for model in zoo.values():
        model.train()
        for _ in range(args.warmup):
            step(model)
    times: dict[str, list[float]] = {name: [] for name in zoo}
    for _ in range(args.reps):
        for name, model in zoo.items():
            times[name].append(step(model))

    tokens = args.batch * args.bptt
    ref_best = min(times[REFERENCE])
    ref_med = statistics.median(times[REFERENCE])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch}x{args.bptt} tokens, "
          f"vocab {args.vocab}, d={args.dim}, best/median of {args.reps} train steps (fwd+bwd); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'model':28s} {'params':>9s} {'ms/step':>8s} {'median':>8s} {'tokens/s':>9s} "
          f"{'cost x':>7s} {'(median)':>8s}")
    for name, model in zoo.items():
        best, med = min(times[name]), statistics.median(times[name])
        print(f"{name:28s} {model.num_parameters():9d} {best * 1e3:8.1f} {med * 1e3:8.1f} {tokens / best:9.0f} "
              f"{best / ref_best:7.2f} {med / ref_med:8.2f}")


if __name__ == "__main__":
    main()

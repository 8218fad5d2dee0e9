#!/usr/bin/env python3
"""Reverse copy with recurrent encoder–decoders, LSTM vs Mogrifier LSTM (in the spirit of Melis et
al. 2020, §4.3): the source is a sequence of i.i.d. uniform tokens, the target the same sequence
reversed, then ``</s>``. The encoder and the decoder are each a language model of ``nmt.models.lm``
(``lstm`` or ``mogrifier``, same sizes); the encoder's state after the last source token starts the
decoder, which reads ``<s>`` + the reversed sequence (teacher forcing). No attention: everything
goes through the fixed-size state, so the task gets harder with length.

    reverse_copy.py --out-dir DIR [--archs lstm mogrifier] [--steps 3000] [--min-len 5 --max-len 60]
                    [--vocab 100] [--dim 128] [--rounds 5] [--batch 64] [--seed 1] [--threads 2] [--quick]

Writes ``DIR/results.json`` (per model: parameters, training curve, validation cross-entropy in
nats per target token, ``</s>`` included, and exact-match accuracy of greedy decoding, per source
length), ``DIR/results.md`` and ``DIR/cross_entropy_vs_length.png``. Training: Adam (lr 2e-3),
gradient norm clipped at 1, a fresh random batch every step (lengths uniform in [min, max]); the
validation set is fixed (``--eval-per-length`` sequences at each length of ``--eval-lengths``).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.core.io import atomic_write
from nmt.data.special import BOS, EOS, PAD
from nmt.models.lm import build_lm
from nmt.training.optimizers import Adam

FIRST = 4  # ids 0-3 are PAD UNK BOS EOS


class RecurrentEncoderDecoder(nn.Module):
    def __init__(self, arch: str, vocab: int, dim: int, rounds: int):
        super().__init__()
        extra = {"rounds": rounds} if arch == "mogrifier" else {}
        self.encoder = build_lm(arch, vocab, emb_dim=dim, hidden_dim=dim, num_layers=1, **extra)
        self.decoder = build_lm(arch, vocab, emb_dim=dim, hidden_dim=dim, num_layers=1, **extra)

    def encode(self, src: Tensor, src_len: Tensor):
        _, state = self.encoder(src, None, lengths=src_len)
        return state

    def forward(self, src: Tensor, src_len: Tensor, tgt_in: Tensor) -> Tensor:
        logits, _ = self.decoder(tgt_in, self.encode(src, src_len))
        return logits

    @torch.no_grad()
    def greedy(self, src: Tensor, src_len: Tensor, steps: int) -> Tensor:
        state = self.encode(src, src_len)
        tok = torch.full((src.size(0),), BOS, dtype=torch.long)
        out = []
        for _ in range(steps):
            logits, state = self.decoder(tok[:, None], state)
            tok = logits[:, -1].argmax(-1)
            out.append(tok)
        return torch.stack(out, 1)


def make_batch(rng: np.random.Generator, lengths: np.ndarray, vocab: int) -> tuple[Tensor, ...]:
    """(src [B, L], src_len, tgt_in [B, L+1], tgt_out [B, L+1]) right-padded with PAD."""
    bsz, width = len(lengths), int(lengths.max())
    src = torch.full((bsz, width), PAD, dtype=torch.long)
    tgt_in = torch.full((bsz, width + 1), PAD, dtype=torch.long)
    tgt_out = torch.full((bsz, width + 1), PAD, dtype=torch.long)
    for i, n in enumerate(lengths):
        seq = torch.as_tensor(rng.integers(FIRST, vocab, int(n)), dtype=torch.long)
        rev = seq.flip(0)
        src[i, :n] = seq
        tgt_in[i, 0] = BOS
        tgt_in[i, 1:n + 1] = rev
        tgt_out[i, :n] = rev
        tgt_out[i, n] = EOS
    return src, torch.as_tensor(lengths, dtype=torch.long), tgt_in, tgt_out


def evaluate(model: RecurrentEncoderDecoder, sets: dict[int, tuple[Tensor, ...]]) -> dict[int, dict[str, float]]:
    model.eval()
    out = {}
    with torch.no_grad():
        for n, (src, src_len, tgt_in, tgt_out) in sets.items():
            logits = model(src, src_len, tgt_in)
            ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1), ignore_index=PAD)
            pred = model.greedy(src, src_len, n + 1)
            exact = (pred == tgt_out).all(1).float().mean()
            out[n] = {"cross_entropy": round(float(ce), 5), "exact_match": round(float(exact), 4)}
    model.train()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--archs", nargs="+", default=["lstm", "mogrifier"], choices=["lstm", "mogrifier"])
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--min-len", type=int, default=5)
    p.add_argument("--max-len", type=int, default=60)
    p.add_argument("--vocab", type=int, default=100, help="distinct tokens of the sequences")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--rounds", type=int, default=5, help="Mogrifier rounds r")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--eval-lengths", type=int, nargs="*", help="default: 6 lengths from min to max")
    p.add_argument("--eval-per-length", type=int, default=200)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="CI scale: 40 steps, lengths 3-12, d = 32")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.min_len, args.max_len, args.dim, args.eval_per_length, args.eval_every = 40, 3, 12, 32, 20, 20
    if not 1 <= args.min_len <= args.max_len:
        p.error("need 1 <= --min-len <= --max-len")
    torch.set_num_threads(args.threads)
    vocab = FIRST + args.vocab
    lengths = args.eval_lengths or sorted({int(round(x)) for x in np.linspace(args.min_len, args.max_len, 6)})
    eval_rng = np.random.default_rng(10_000 + args.seed)
    eval_sets = {n: make_batch(eval_rng, np.full(args.eval_per_length, n), vocab) for n in lengths}
    out = Path(args.out_dir)
    results: dict = {"settings": {k: v for k, v in vars(args).items() if k != "out_dir"}, "models": {}}
    for arch in args.archs:
        torch.manual_seed(args.seed)
        rng = np.random.default_rng(args.seed)   # the same training batches for every model
        model = RecurrentEncoderDecoder(arch, vocab, args.dim, args.rounds)
        opt = Adam(model.parameters(), lr=args.lr)
        curve, evals = [], []
        t0 = time.perf_counter()
        tokens = 0
        for step in range(1, args.steps + 1):
            src, src_len, tgt_in, tgt_out = make_batch(rng, rng.integers(args.min_len, args.max_len + 1, args.batch),
                                                       vocab)
            logits = model(src, src_len, tgt_in)
            loss = F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1), ignore_index=PAD)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            tokens += int((tgt_out != PAD).sum())
            if step % max(1, args.steps // 50) == 0:
                curve.append([step, round(loss.item(), 5)])
            if step % args.eval_every == 0 or step == args.steps:
                ev = evaluate(model, eval_sets)
                evals.append({"step": step, "by_length": ev})
                print(f"{arch} step {step}: train {loss.item():.4f} nats/token; valid CE by length "
                      + " ".join(f"{n}:{v['cross_entropy']:.3f}" for n, v in ev.items()), flush=True)
        seconds = time.perf_counter() - t0
        results["models"][arch] = {"parameters": sum(q.numel() for q in model.parameters()),
                                   "train_seconds": round(seconds, 1), "train_tokens_per_s": round(tokens / seconds),
                                   "curve": curve, "evals": evals, "final": evals[-1]["by_length"]}
    with atomic_write(out / "results.json") as fh:
        json.dump(results, fh, indent=1)
    lines = [f"Reverse copy, {args.vocab} token types, lengths {args.min_len}-{args.max_len}, d = {args.dim}, "
             f"{args.steps} steps of {args.batch}; validation cross-entropy (nats per target token incl. </s>) / "
             "exact match of greedy decoding, by source length", "",
             "| model | params | " + " | ".join(f"len {n}" for n in lengths) + " | train tok/s |",
             "|---|---|" + "---|" * len(lengths) + "---|"]
    for arch, res in results["models"].items():
        cells = [f"{res['final'][n]['cross_entropy']:.3f} / {100 * res['final'][n]['exact_match']:.0f}%" for n in lengths]
        name = f"mogrifier (r={args.rounds})" if arch == "mogrifier" else arch
        lines.append(f"| {name} | {res['parameters']:,} | " + " | ".join(cells) + f" | {res['train_tokens_per_s']:,} |")
    table = "\n".join(lines) + "\n"
    with atomic_write(out / "results.md") as fh:
        fh.write(table)
    print(table)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for arch, res in results["models"].items():
        ax.plot(lengths, [res["final"][n]["cross_entropy"] for n in lengths], marker="o", label=arch)
    ax.set_xlabel("sequence length")
    ax.set_ylabel("validation cross-entropy (nats/token)")
    ax.set_title(f"reverse copy, {args.steps} steps", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "cross_entropy_vs_length.png", dpi=110)
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())

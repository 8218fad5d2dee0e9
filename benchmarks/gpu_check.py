"""One prepared check for a machine with an accelerator: train steps of every architecture and
phrase-pair rescoring throughput, printed as ONE table.

    .venv/bin/python benchmarks/gpu_check.py --device cuda                 # fp32 + bf16 autocast rows
    .venv/bin/python benchmarks/gpu_check.py --device cuda --amp bf16     # bf16 autocast rows only
    .venv/bin/python benchmarks/gpu_check.py --dry-run                    # same code on CPU, tiny, < 60 s

Rows:

* ``train``: ``--steps`` optimizer steps (Adam, grad-norm clip 1) of the RNN Encoder–Decoder
  (``cell=faithful`` and ``cell=torch``, preset ``--encdec-preset``) on a synthetic
  copy-reversed task, and of the LMs ``lstm``, ``rm``, ``rmr``, ``mogrifier`` (d =
  ``--lm-dim``) on a synthetic stream with a learnable next-word rule. Throughput =
  target tokens (EOS included, padding excluded) per second over the steps after
  ``--warmup``; loss = mean cross-entropy (nats/token) of the last step, so it should
  fall clearly below ln V on a working device.
* ``rescore``: :class:`nmt.translation.rescoring_engine.RescoringEngine` over ``--pairs`` synthetic
  phrase pairs (1–7 words each) with a randomly initialised encoder–decoder, per amp
  mode (none = fp32, bf16, fp16; fp16 needs CUDA). Throughput in pairs/s (best of
  ``--repeats`` after one warm-up call); the "loss" column holds the mean ln p per pair
  and "max|Δ|" its largest deviation from the fp32 scores of the same run.

The data are synthetic (random ids; no corpus needed on the device machine) so the
figures are throughput and "does the loss fall" checks, not quality results.
bf16 (see :mod:`nmt.training.precision`): on a CPU without oneDNN's bf16 LSTM kernel (no AVX-512 BF16 /
AMX, e.g. AVX2-only AMD EPYC) the fused LSTM of ``lstm``, ``rm``, ``rmr`` runs its recurrence in
fp32 inside the bf16 row, and the row's note says so; the header line says which path this
CPU takes. On a GPU without bf16, ``--amp bf16`` exits with status 2 before any row runs and
``--amp both`` prints the bf16 rows as ``skipped: <why>``.

``--device cuda`` without a visible GPU exits with status 2 and a clear message. A row that
raises is printed as ``FAILED <error>`` (the other rows still run) and the exit status is 1,
as it is for a non-finite loss or score.
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import time

import torch
import torch.nn.functional as F

from nmt.data.special import BOS, EOS, PAD, SPECIALS
from nmt.data.vocab import Vocabulary
from nmt.models.gru_encdec import build_model, config_with_preset
from nmt.models.lm import build_lm, make_lm_batch
from nmt.training.precision import AMP_DTYPES as AMP
from nmt.training.optimizers import Adam
from nmt.training.precision import LSTM_FP32_NOTE, amp_problem, describe_bf16, fallback_count
from nmt.translation.rescoring_engine import RescoringEngine

LM_ARCHS = ("lstm", "rm", "rmr", "mogrifier")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default: cuda)")
    p.add_argument("--amp", choices=["none", "bf16", "both"], default="both",
                   help="training autocast: none (fp32), bf16, or both = one row each (default)")
    p.add_argument("--steps", type=int, default=300, help="training steps per architecture")
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the throughput")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seq-len", type=int, default=35, help="LM: tokens per row (BPTT length)")
    p.add_argument("--vocab", type=int, default=10000, help="vocabulary size (source = target = LM)")
    p.add_argument("--encdec-preset", default="cpu-small", help="preset of nmt.models.gru_encdec.PRESETS")
    p.add_argument("--max-src-len", type=int, default=20, help="encoder–decoder: sentence lengths 3..N")
    p.add_argument("--lm-dim", type=int, default=256, help="LM embedding = hidden size")
    p.add_argument("--lm-layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--pairs", type=int, default=50000, help="rescoring: synthetic phrase pairs")
    p.add_argument("--max-tokens", type=int, default=8000, help="rescoring: padded target tokens per batch")
    p.add_argument("--rescore-amp", default="none,bf16,fp16", help="comma list of amp modes for rescoring")
    p.add_argument("--repeats", type=int, default=3, help="rescoring: timed calls (best taken)")
    p.add_argument("--only", default="", help="comma list of row names to run (default: all), e.g. "
                                             "'encdec-faithful,mogrifier,rescore'")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = leave torch's default)")
    p.add_argument("--dry-run", action="store_true",
                   help="CPU, tiny sizes, few steps: checks that the script runs (< 60 s)")
    args = p.parse_args(argv)
    if args.dry_run:
        args.device = "cpu"
        args.steps = min(args.steps, 4)
        args.warmup = 1 if args.steps > 1 else 0
        args.batch_size, args.seq_len, args.vocab = 8, 12, 200
        args.encdec_preset, args.max_src_len = "tiny", 6
        args.lm_dim, args.lm_layers = 16, 1
        args.pairs, args.max_tokens, args.repeats = 300, 500, 1
    args.warmup = min(args.warmup, max(args.steps - 1, 0))
    return args


def fail(message: str) -> None:
    print(f"gpu_check: {message}", file=sys.stderr, flush=True)
    sys.exit(2)


def check_device(device: str) -> torch.device:
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            fail(f"--device {device} but torch sees no CUDA GPU (torch {torch.__version__}, "
                     f"built with CUDA {torch.version.cuda}); use a CUDA build of torch on a GPU machine, "
                     f"or --dry-run / --device cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            fail(f"{device} requested but only {torch.cuda.device_count()} GPU(s) visible")
    elif dev.type != "cpu":
        fail(f"unsupported device {device!r} (cuda or cpu)")
    return dev


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def autocast(dev: torch.device, amp: str):
    dtype = AMP[amp]
    return torch.autocast(device_type=dev.type, dtype=dtype, enabled=dtype is not None)


# ----------------------------------------------------------------------------------- data


def encdec_batch(gen: torch.Generator, args, dev) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Source: random words; target: the source reversed (+ EOS). Right-padded with PAD."""
    B, V = args.batch_size, args.vocab
    lens = torch.randint(3, args.max_src_len + 1, (B,), generator=gen)
    S = int(lens.max())
    src = torch.randint(4, V, (B, S), generator=gen)
    pos = torch.arange(S).unsqueeze(0)
    src = src.masked_fill(pos >= lens.unsqueeze(1), PAD)
    tgt = torch.zeros(B, S + 1, dtype=torch.long)
    for b in range(B):
        n = int(lens[b])
        tgt[b, :n] = src[b, :n].flip(0)
        tgt[b, n] = EOS
    tgt_in = torch.cat([torch.full((B, 1), BOS, dtype=torch.long), tgt[:, :-1]], 1)
    tgt_in = tgt_in.masked_fill(tgt_in == EOS, PAD)
    ntok = int((tgt != PAD).sum())
    return src.to(dev), tgt_in.to(dev), tgt.to(dev), ntok


def lm_batch(gen: torch.Generator, args, dev) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Rows of words where each next word is (3·prev + 1) mod V' with probability 0.8, else random."""
    B, T, V = args.batch_size, args.seq_len, args.vocab
    words = torch.empty(B, T, dtype=torch.long)
    words[:, 0] = torch.randint(4, V, (B,), generator=gen)
    for t in range(1, T):
        follow = (3 * (words[:, t - 1] - 4) + 1) % (V - 4) + 4
        rand = torch.randint(4, V, (B,), generator=gen)
        keep = torch.rand(B, generator=gen) < 0.8
        words[:, t] = torch.where(keep, follow, rand)
    inputs, targets, _ = make_lm_batch(words)
    return inputs.to(dev), targets.to(dev), int((targets != PAD).sum())


# ----------------------------------------------------------------------------------- training


def failed_row(row: str, name: str, dev, amp: str, exc: BaseException, unit: str) -> dict:
    msg = " ".join(str(exc).split())[:100]
    return {"row": row, "arch": name, "device": str(dev), "dtype": "fp32" if amp == "none" else amp, "steps": 0,
            "rate": float("nan"), "unit": unit, "loss": float("nan"), "note": f"FAILED {type(exc).__name__}: {msg}"}


def skipped_row(row: str, name: str, dev, amp: str, why: str, unit: str) -> dict:
    return {"row": row, "arch": name, "device": str(dev), "dtype": "fp32" if amp == "none" else amp, "steps": 0,
            "rate": float("nan"), "unit": unit, "loss": float("nan"), "note": f"skipped: {why}"}


def train_rows(name: str, model: torch.nn.Module, loss_fn, make_batch, args, dev, amp: str) -> dict:
    problem = amp_problem(dev, amp)
    if problem is not None:
        return skipped_row("train", name, dev, amp, problem, "tok/s")
    fallbacks = fallback_count()
    try:
        row = _train_rows(name, model, loss_fn, make_batch, args, dev, amp)
    except Exception as exc:  # one broken row must not hide the others
        return failed_row("train", name, dev, amp, exc, "tok/s")
    if fallback_count() > fallbacks:
        row["note"] += f"; {LSTM_FP32_NOTE}"
    return row


def _train_rows(name: str, model: torch.nn.Module, loss_fn, make_batch, args, dev, amp: str) -> dict:
    model.to(dev).train()
    opt = Adam(model.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(args.seed)
    batches = [make_batch(gen) for _ in range(min(args.steps, 16))]  # data prep kept out of the timing
    tokens, loss_value, t0 = 0, float("nan"), None
    for step in range(args.steps):
        if step == args.warmup:
            sync(dev)
            t0 = time.perf_counter()
            tokens = 0
        *batch, ntok = batches[step % len(batches)]
        with autocast(dev, amp):
            loss = loss_fn(model, *batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens += ntok
        if step == args.steps - 1:
            loss_value = float(loss.detach())
    sync(dev)
    seconds = time.perf_counter() - t0 if t0 is not None else float("nan")
    timed_steps = args.steps - args.warmup
    return {"row": "train", "arch": name, "device": str(dev), "dtype": "fp32" if amp == "none" else amp,
            "steps": timed_steps, "rate": tokens / seconds if seconds > 0 else float("nan"), "unit": "tok/s",
            "loss": loss_value, "note": f"ln V = {math.log(args.vocab):.2f}"}


def encdec_loss(model, src, tgt_in, tgt_out):
    logits = model(src, tgt_in)
    return F.cross_entropy(logits.float().transpose(1, 2), tgt_out, ignore_index=PAD)


def lm_loss(model, inputs, targets):
    logits, _ = model(inputs)
    return F.cross_entropy(logits.float().transpose(1, 2), targets, ignore_index=PAD)


# ----------------------------------------------------------------------------------- rescoring


def rescore_rows(args, dev) -> list[dict]:
    rng = random.Random(args.seed)
    words = [f"w{i}" for i in range(args.vocab - len(SPECIALS))]
    vocab = Vocabulary(list(SPECIALS) + words)
    torch.manual_seed(args.seed)
    model = build_model(config_with_preset(args.encdec_preset, cell="faithful"), len(vocab), len(vocab))
    srcs = [[rng.choice(words) for _ in range(rng.randint(1, 7))] for _ in range(args.pairs)]
    tgts = [[rng.choice(words) for _ in range(rng.randint(1, 7))] for _ in range(args.pairs)]
    rows, reference = [], None
    modes = [m.strip() for m in args.rescore_amp.split(",") if m.strip()]
    for amp in modes:
        label = "fp32" if amp == "none" else amp
        problem = amp_problem(dev, amp)
        if problem is not None:
            why = "fp16 needs CUDA" if amp == "fp16" and dev.type != "cuda" else problem
            rows.append(skipped_row("rescore", "encdec-faithful", dev, amp, why, "pairs/s"))
            continue
        try:
            engine = RescoringEngine(model, vocab, vocab, max_tokens=args.max_tokens, device=str(dev), amp=amp)
            engine.score(srcs[:min(len(srcs), 200)], tgts[:min(len(tgts), 200)])  # warm-up
            best, scores = float("inf"), None
            for _ in range(args.repeats):
                sync(dev)
                t0 = time.perf_counter()
                scores = engine.score(srcs, tgts)
                sync(dev)
                best = min(best, time.perf_counter() - t0)
        except Exception as exc:
            rows.append(failed_row("rescore", "encdec-faithful", dev, amp, exc, "pairs/s"))
            continue
        logp = torch.as_tensor(scores.log_prob)
        if reference is None and amp == "none":
            reference = logp
        note = "" if reference is None or amp == "none" else \
            f"max|Δ| vs fp32 = {float((logp - reference).abs().max()):.3g}"
        finite = bool(torch.isfinite(logp).all())
        if not finite:
            note = (note + "; " if note else "") + "NON-FINITE scores"
        rows.append({"row": "rescore", "arch": "encdec-faithful", "device": str(dev), "dtype": label,
                     "steps": args.repeats, "rate": args.pairs / best, "unit": "pairs/s",
                     "loss": float(logp.mean()), "note": note})
    return rows


# ----------------------------------------------------------------------------------- main


def format_table(rows: list[dict]) -> str:
    head = f"{'task':8} {'arch':16} {'device':8} {'dtype':5} {'steps':>5} {'throughput':>12} {'unit':7} " \
           f"{'loss':>9}  note"
    lines = [head, "-" * len(head)]
    for r in rows:
        rate = "n/a" if math.isnan(r["rate"]) else f"{r['rate']:.1f}"
        loss = "n/a" if math.isnan(r["loss"]) else f"{r['loss']:.4f}"
        lines.append(f"{r['row']:8} {r['arch']:16} {r['device']:8} {r['dtype']:5} {r['steps']:>5} {rate:>12} "
                     f"{r['unit']:7} {loss:>9}  {r['note']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    dev = check_device(args.device)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    amps = ["none", "bf16"] if args.amp == "both" else [args.amp]
    if args.amp == "bf16" and amp_problem(dev, "bf16") is not None:  # asked for bf16 only: stop before any work
        fail(amp_problem(dev, "bf16"))
    gpu = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"gpu_check: torch {torch.__version__}, device {dev} ({gpu}), steps {args.steps} "
          f"(warm-up {args.warmup} untimed), batch {args.batch_size}, vocab {args.vocab}, {describe_bf16(dev)}"
          + (" [DRY RUN]" if args.dry_run else ""), flush=True)
    rows: list[dict] = []
    V = args.vocab
    for cell in ("faithful", "torch"):
        name = f"encdec-{cell}"
        if only and name not in only:
            continue
        for amp in amps:
            torch.manual_seed(args.seed)
            model = build_model(config_with_preset(args.encdec_preset, cell=cell), V, V)
            rows.append(train_rows(name, model, encdec_loss, lambda g: encdec_batch(g, args, dev), args, dev, amp))
            print(f"  done {name} {amp}", file=sys.stderr, flush=True)
    for arch in LM_ARCHS:
        if only and arch not in only:
            continue
        for amp in amps:
            torch.manual_seed(args.seed)
            model = build_lm(arch, V, emb_dim=args.lm_dim, hidden_dim=args.lm_dim, num_layers=args.lm_layers)
            rows.append(train_rows(arch, model, lm_loss, lambda g: lm_batch(g, args, dev), args, dev, amp))
            print(f"  done {arch} {amp}", file=sys.stderr, flush=True)
    if not only or "rescore" in only:
        rows.extend(rescore_rows(args, dev))
    print(format_table(rows), flush=True)
    bad = [r for r in rows if r["note"].startswith("FAILED") or "NON-FINITE" in r["note"]
           or (r["row"] == "train" and not math.isfinite(r["loss"]))]
    if bad:
        print(f"gpu_check: {len(bad)} row(s) failed or gave non-finite loss/scores: "
              + ", ".join(f"{r['row']} {r['arch']} {r['dtype']}" for r in bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

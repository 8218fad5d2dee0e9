"""nmt-lm-train's run: the LM training options, the vocabulary, the checks before anything is written, summary.json.

The entry point is :mod:`nmt.cli.lm_train`; the trainer :mod:`nmt.training.trainer`.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import yaml

from nmt.core import config as C
from nmt.training import distributed
from nmt.training.checkpoint import load_checkpoint
from nmt.core.io import atomic_write
from nmt.data.vocab import Vocabulary, load_vocab
from nmt.core.errors import UsageError
from nmt.lm.data import LOSS_NORMS, LMDataConfig, check_word_vocab, iter_sentences
from nmt.lm.task import build_task
from nmt.core.run_checks import clear_run, refuse_out_dir_inputs, refuse_trained_out_dir
from nmt.training.trainer import Trainer
from nmt.training.config import LoopConfig, OptimConfig


@dataclass
class LMOptimConfig(OptimConfig):
    optimizer: str = C.field("sgd", help="sgd (RMN paper), adam (Mogrifier paper, with --adam-beta1 0) or adadelta")
    lr: float | None = C.field(1.0, help="learning rate (RMN paper: SGD 1.0; with adam e.g. 0.002)")
    clip_norm: float = C.field(5.0, help="clip the global gradient norm to this (RMN paper 5, Mogrifier 10; 0 = off)")
    loss_norm: str = C.field("token", help="gradient of the mean loss per 'token' (nmt.training.trainer), or per "
                                           "'sequence' (Σ nll / rows: the Torch-era convention of Zaremba's and the "
                                           "RMN code, which their lr 1 / clip 5 refer to; clipping then applies to "
                                           "that gradient)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.loss_norm not in LOSS_NORMS:
            raise ValueError(f"loss_norm must be one of {LOSS_NORMS}, got {self.loss_norm!r}")


@dataclass
class LMLoopConfig(LoopConfig):
    out_dir: str = C.field("work/lm", help="folder for checkpoints, logs, the vocabulary and the resolved config")
    batch_size: int = C.field(20, help="sentences per batch (sentence regime; RMN paper 20) or stream rows B "
                                       "(stream regime); with N processes (torchrun) the global batch")
    max_tokens: int | None = C.field(None, help="sentence regime: also cap (words + 1) x sentences per batch")
    max_epochs: int = C.field(15, help="stop after this many epochs (RMN paper 15)")
    patience: int = C.field(0, help="early stopping: evaluations without dev improvement before stopping "
                                    "(0 = off)")


def arch_name(argv: list[str] | None) -> str:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config")
    pre.add_argument("--arch")
    known, _ = pre.parse_known_args(argv)
    if known.arch:
        return known.arch
    if known.config:
        values = C.load_yaml(known.config)
        if values.get("arch"):
            return str(values["arch"])
    return LMDataConfig.arch


def _vocabulary(data: LMDataConfig, out: Path, resume: bool, write: bool = True) -> tuple[Vocabulary, str, str]:
    """(vocabulary, path in the model folder, how it was obtained); ``write``: save a built
    vocabulary to ``--vocab`` (rank 0 only under DDP)."""
    copy = out / "vocab.tsv"
    if data.vocab and Path(data.vocab).is_file():
        vocab = check_word_vocab(load_vocab(data.vocab), data.vocab)
        how = f"loaded from {data.vocab}"
    elif not data.vocab and resume and copy.is_file():
        vocab = check_word_vocab(load_vocab(copy), copy)
        how = f"loaded from {copy} (resume)"
    else:
        limit = None if data.vocab_from_full_train else data.max_train_sentences
        train_path = data.resolve_text("train")
        vocab = Vocabulary.build(iter_sentences(train_path, limit), max_size=data.vocab_size,
                                 min_count=data.vocab_min_count)
        how = f"built from {train_path}" + (f" (first {limit} lines)" if limit else "")
        if data.vocab and write:
            vocab.save(data.vocab)
            how += f", saved to {data.vocab}"
    return vocab, str(copy), how


def run_lm_training(ctx: distributed.DistContext, name: str, arch: str, model_cls, data: LMDataConfig, model_cfg,
         optim: LMOptimConfig, loop: LMLoopConfig, config_file: str | None = None) -> int:
    torch.set_num_threads(loop.threads)
    # everything is read and checked before anything is written: a refused run leaves no --out-dir behind
    out = Path(loop.out_dir)
    refuse_trained_out_dir(out, resume=loop.resume, overwrite=loop.overwrite)
    inputs = {"--train": data.train, "--valid": data.valid, "--test": data.test, "--config": config_file}
    own_copy = bool(data.vocab) and Path(data.vocab).resolve() == (out / "vocab.tsv").resolve()
    refuse_out_dir_inputs(out, {**inputs, "--vocab": None if own_copy else data.vocab}, extra=["vocab.tsv"])
    try:
        with ctx.main_first():  # rank 0 may build and save --vocab; the others then read it
            vocab, vocab_path, vocab_how = _vocabulary(data, out, loop.resume, write=ctx.is_main)
        torch.manual_seed(loop.seed)
        task = build_task(data, vocab, batch_size=loop.batch_size, max_tokens=loop.max_tokens, seed=loop.seed,
                          vocab_path=vocab_path, loss_norm=optim.loss_norm)
    except ValueError as err:  # (a missing file reaches the error wrapper: PATH: No such file or directory)
        raise UsageError(str(err)) from None
    if ctx.is_main:
        if loop.overwrite:
            for path in clear_run(out, [*inputs.values(), data.vocab]):
                print(f"nmt-lm-train: --overwrite: removed {path}", file=sys.stderr)
        out.mkdir(parents=True, exist_ok=True)
    model = model_cls.from_config(model_cfg, len(vocab))
    data_dict = {k: v for k, v in dataclasses.asdict(data).items() if k != "stream_buffer" or v is not None}
    resolved = {"task": "lm", "arch": arch, "data": data_dict, "model": dataclasses.asdict(model_cfg),
                "optim": dataclasses.asdict(optim), "loop": dataclasses.asdict(loop),
                "vocab": {"path": vocab_path, "size": len(vocab), "fingerprint": vocab.fingerprint()}}
    last_path = out / "checkpoint_last.pt"
    if loop.resume and last_path.exists():  # refuse a mismatched resume before anything in the folder is rewritten
        saved_ckpt = load_checkpoint(last_path)
        saved = saved_ckpt.get("config", {})
        try:
            if saved.get("task") != "lm" or saved.get("arch") != arch or saved.get("model") != resolved["model"]:
                raise ValueError(f"model differs from the checkpoint's (checkpoint {saved.get('arch')} "
                                 f"{saved.get('model')}, now {arch} {resolved['model']})")
            task.check_compatible(saved_ckpt)  # the trainer's restore() loads the task's state itself
        except ValueError as err:
            raise UsageError(f"cannot resume from {last_path}: {err}") from None
        del saved_ckpt
    if ctx.is_main:
        copy = Path(vocab_path)
        if not (data.vocab and Path(data.vocab).resolve() == copy.resolve()):
            vocab.save(copy)
        with atomic_write(out / "config.yaml") as fh:
            yaml.safe_dump(resolved, fh, sort_keys=False, allow_unicode=True)
    ctx.barrier()

    trainer = Trainer(model, task, loop, optim, resolved)
    if ctx.is_main:
        procs = f"; {ctx.world} processes ({ctx.backend})" if ctx.enabled else ""
        print(f"nmt-lm-train: {arch} ({name}), {model.num_parameters():,} parameters; vocabulary {len(vocab):,} "
              f"({vocab_how}); {task.num_lines:,} training lines ({task.num_dropped} dropped by --max-len), "
              f"{task.train_tokens:,} tokens incl. </s>; {len(task.dev):,} validation lines; regime {data.regime}, "
              f"{task.num_batches} batches per epoch{procs}", file=sys.stderr)
    start = time.perf_counter()
    state = trainer.train()
    if not ctx.is_main:
        return 0
    seconds = time.perf_counter() - start
    eval_seconds = trainer.eval_seconds
    trained_tokens = trainer.run_tokens
    train_seconds = max(seconds - eval_seconds, 1e-9)
    rate = trained_tokens / train_seconds
    best = min((h for h in state.history if "dev_loss" in h), key=lambda h: h["dev_loss"], default=None)
    previous = out / "summary.json"
    throughput = round(rate, 1)
    if not trained_tokens and previous.is_file():  # a resume with nothing left to do keeps the measured rate
        throughput = json.loads(previous.read_text(encoding="utf-8")).get("train_tokens_per_s")
    summary = {"arch": arch, "preset": name, "regime": data.regime, "num_parameters": model.num_parameters(),
               "vocab_size": len(vocab), "train_lines": task.num_lines, "train_tokens": task.train_tokens,
               "epochs": state.epoch, "updates": state.step,
               "best_dev_loss": best["dev_loss"] if best else None,
               "best_dev_ppl": best["dev_ppl"] if best else None, "dev_tokens": best["dev_tokens"] if best else None,
               "train_tokens_per_s": throughput,
               "this_run": {"tokens": trained_tokens, "seconds": round(seconds, 2),
                            "eval_seconds": round(eval_seconds, 2), "train_tokens_per_s": round(rate, 1),
                            "threads": loop.threads, "processes": ctx.world}}
    with atomic_write(out / "summary.json") as fh:
        json.dump(summary, fh, indent=1)
    ppl = f"{best['dev_ppl']:.2f} over {best['dev_tokens']:,} tokens" if best else "n/a"
    print(f"nmt-lm-train: {state.step} updates, {state.epoch} epochs; best dev ppl {ppl}; "
          f"{trained_tokens:,} tokens in {train_seconds:.0f} s of training = {rate:,.0f} tokens/s "
          f"(+{eval_seconds:.0f} s validation)", file=sys.stderr)
    return 0

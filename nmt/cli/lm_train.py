"""``nmt-lm-train``: train a neural language model (LSTM, RM/RMR, Mogrifier) on a text corpus.

The model flags depend on ``--arch`` (an architecture or preset of
``nmt.models.lm``; ``--arch X --help`` lists them; the defaults shown are the
architecture's, a preset's own values apply unless a flag is given). LM defaults differ from
``nmt-train``'s: SGD, lr 1, clip 5, batches of 20 (the RMN paper's). The loss
is nats per token, tokens = words + one ``</s>`` per line (``<s>`` not counted),
the accounting of every LM of the project (``smt_features.perplexity``).

Learning-rate schedules, Adam's betas and sequence-normalised gradients are
applied by a step pre-hook on the trainer's optimizer (``nmt.train`` has no
schedule of its own): the learning rate is a pure function of the trainer's
state (epoch, dev history), so a resumed run follows the same schedule.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml
from torch import nn

from nmt import config as C
from nmt.checkpoint import load_checkpoint
from nmt.data.io import atomic_write
from nmt.data.vocab import Vocabulary, load_vocab
from nmt.lm_data import LMDataConfig, LMTask, build_task, check_word_vocab, read_sentences
from nmt.models.lm import ARCHITECTURES, resolve
from nmt.train import LoopConfig, OptimConfig, Trainer, TrainState

log = logging.getLogger("nmt.lm_train")

SCHEDULES = ("constant", "epoch", "plateau")
LOSS_NORMS = ("token", "sequence")


@dataclass
class LMOptimConfig(OptimConfig):
    optimizer: str = C.field("sgd", help="sgd (RMN paper), adam (Mogrifier paper, with --adam-beta1 0) or adadelta")
    lr: float | None = C.field(1.0, help="learning rate (RMN paper: SGD 1.0; with adam e.g. 0.002)")
    clip_norm: float = C.field(5.0, help="clip the global gradient norm to this (RMN paper 5, Mogrifier 10; 0 = off)")
    lr_schedule: str = C.field("constant", help="'constant'; 'epoch': lr * lr_decay^max(0, epoch - lr_decay_start) "
                                                "with 1-based epochs (RMN paper: decay 0.5 after the 4th); "
                                                "'plateau': lr * lr_decay^(dev evaluations that did not improve)")
    lr_decay: float = C.field(0.5, help="factor of the 'epoch' and 'plateau' schedules")
    lr_decay_start: int = C.field(4, help="'epoch' schedule: epochs 1..N run at the full lr")
    loss_norm: str = C.field("token", help="gradient of the mean loss per 'token' (nmt.train), or per 'sequence' "
                                           "(Σ nll / rows: the Torch-era convention of Zaremba's and the RMN "
                                           "code, which their lr 1 / clip 5 refer to; clipping then applies to "
                                           "that gradient)")
    adam_beta1: float = C.field(0.9, help="Adam beta1 (Mogrifier paper: 0)")
    adam_beta2: float = C.field(0.999, help="Adam beta2")
    weight_decay: float = C.field(0.0, help="L2 weight decay of the optimizer")

    def __post_init__(self) -> None:
        if self.lr_schedule not in SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {SCHEDULES}, got {self.lr_schedule!r}")
        if self.loss_norm not in LOSS_NORMS:
            raise ValueError(f"loss_norm must be one of {LOSS_NORMS}, got {self.loss_norm!r}")

    def base(self) -> OptimConfig:
        """The plain :class:`OptimConfig` for the trainer."""
        names = {f.name for f in dataclasses.fields(OptimConfig)}
        return OptimConfig(**{k: v for k, v in dataclasses.asdict(self).items() if k in names})


@dataclass
class LMLoopConfig(LoopConfig):
    out_dir: str = C.field("work/lm", help="folder for checkpoints, logs, the vocabulary and the resolved config")
    batch_size: int = C.field(20, help="sentences per batch (sentence regime; RMN paper 20) or stream rows B "
                                       "(stream regime)")
    max_tokens: int | None = C.field(None, help="sentence regime: also cap (words + 1) x sentences per batch")
    max_epochs: int = C.field(15, help="stop after this many epochs (RMN paper 15)")
    patience: int = C.field(0, help="early stopping: evaluations without dev improvement before stopping "
                                    "(0 = off)")


def scheduled_lr(cfg: LMOptimConfig, base_lr: float, state: TrainState) -> float:
    """The learning rate for the next update: a function of the trainer's state only."""
    if cfg.lr_schedule == "epoch":
        return base_lr * cfg.lr_decay ** max(0, state.epoch + 1 - cfg.lr_decay_start)
    if cfg.lr_schedule == "plateau":
        best, bad = math.inf, 0
        for h in state.history:
            if "dev_loss" in h:
                if h["dev_loss"] < best - 1e-6:
                    best = h["dev_loss"]
                else:
                    bad += 1
        return base_lr * cfg.lr_decay ** bad
    return base_lr


def install_optimizer_hook(trainer: Trainer, task: LMTask, cfg: LMOptimConfig) -> None:
    """Before every optimizer step: set lr (schedule), Adam betas and weight decay; with
    ``loss_norm=sequence`` scale the gradient from per-token to per-row and clip it."""
    optimizer = trainer.optimizer
    base_lr = optimizer.param_groups[0]["lr"]
    params = [p for g in optimizer.param_groups for p in g["params"]]

    def hook(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        st = trainer.state  # looked up each time: restore() replaces the object
        lr = scheduled_lr(cfg, base_lr, st)
        for group in opt.param_groups:
            group["lr"] = lr
            group["weight_decay"] = cfg.weight_decay
            if "betas" in group:
                group["betas"] = (cfg.adam_beta1, cfg.adam_beta2)
        last = next((h["lr"] for h in reversed(st.history) if "lr" in h), None)
        if last != lr:  # recorded in the (checkpointed) history, so resumed runs log the same
            st.history.append({"step": st.step, "epoch": st.epoch, "lr": lr})
            log.info("update %d epoch %d: learning rate %.6g", st.step + 1, st.epoch + 1, lr)
        if cfg.loss_norm == "sequence":
            scale = task.last_tokens / max(task.last_rows, 1)
            with torch.no_grad():
                for p in params:
                    if p.grad is not None:
                        p.grad.mul_(scale)
            if cfg.clip_norm > 0:
                nn.utils.clip_grad_norm_(params, cfg.clip_norm)

    optimizer.register_step_pre_hook(hook)


def _arch_name(argv: list[str] | None) -> str:
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


def _vocabulary(data: LMDataConfig, out: Path, resume: bool) -> tuple[Vocabulary, str, str]:
    """(vocabulary, path in the model folder, how it was obtained)."""
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
        vocab = Vocabulary.build(read_sentences(train_path, limit), max_size=data.vocab_size,
                                 min_count=data.vocab_min_count)
        how = f"built from {train_path}" + (f" (first {limit} lines)" if limit else "")
        if data.vocab:
            vocab.save(data.vocab)
            how += f", saved to {data.vocab}"
    return vocab, str(copy), how


def cli_main(argv: list[str] | None = None) -> int:
    name = _arch_name(argv)
    try:
        arch, preset_values = resolve(name)
    except KeyError as err:
        raise SystemExit(f"nmt-lm-train: {err.args[0]}") from None
    model_cls, model_cfg_cls = ARCHITECTURES[arch]
    classes = [LMDataConfig, model_cfg_cls, LMOptimConfig, LMLoopConfig]
    args, yaml_values = C.parse_args(classes, argv, description=__doc__)
    try:
        data = C.build(LMDataConfig, args, yaml_values)
        model_cfg = C.build(model_cfg_cls, args, yaml_values, base=preset_values)
        optim = C.build(LMOptimConfig, args, yaml_values)
        loop = C.build(LMLoopConfig, args, yaml_values)
    except (ValueError, TypeError) as err:
        raise SystemExit(f"nmt-lm-train: {err}") from None
    torch.set_num_threads(loop.threads)

    out = Path(loop.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        vocab, vocab_path, vocab_how = _vocabulary(data, out, loop.resume)
        torch.manual_seed(loop.seed)
        task = build_task(data, vocab, batch_size=loop.batch_size, max_tokens=loop.max_tokens, seed=loop.seed,
                          vocab_path=vocab_path)
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f"nmt-lm-train: {err}") from None
    model = model_cls.from_config(model_cfg, len(vocab))
    resolved = {"task": "lm", "arch": arch, "data": dataclasses.asdict(data), "model": dataclasses.asdict(model_cfg),
                "optim": dataclasses.asdict(optim), "loop": dataclasses.asdict(loop),
                "vocab": {"path": vocab_path, "size": len(vocab), "fingerprint": vocab.fingerprint()}}
    last_path = out / "checkpoint_last.pt"
    resume_from = load_checkpoint(last_path) if loop.resume and last_path.exists() else None
    if resume_from is not None:  # refuse a mismatched resume before anything in the folder is rewritten
        saved = resume_from.get("config", {})
        try:
            if saved.get("task") != "lm" or saved.get("arch") != arch or saved.get("model") != resolved["model"]:
                raise ValueError(f"model differs from the checkpoint's (checkpoint {saved.get('arch')} "
                                 f"{saved.get('model')}, now {arch} {resolved['model']})")
            task.load_extras(resume_from)
        except ValueError as err:
            raise SystemExit(f"nmt-lm-train: cannot resume from {last_path}: {err}") from None
    copy = Path(vocab_path)
    if not (data.vocab and Path(data.vocab).resolve() == copy.resolve()):
        vocab.save(copy)
    with atomic_write(out / "config.yaml") as fh:
        yaml.safe_dump(resolved, fh, sort_keys=False, allow_unicode=True)

    trainer_optim = optim.base()
    if optim.loss_norm == "sequence":
        trainer_optim.clip_norm = 0.0  # clipped by the hook, after the per-row scaling
    trainer = Trainer(model, task, loop, trainer_optim, resolved)
    task.bind_position(lambda: (trainer.state.epoch, trainer.state.batch_in_epoch))
    install_optimizer_hook(trainer, task, optim)

    eval_seconds = 0.0
    evaluate = trainer.evaluate

    def timed_evaluate() -> dict[str, float]:
        nonlocal eval_seconds
        t0 = time.perf_counter()
        try:
            return evaluate()
        finally:
            eval_seconds += time.perf_counter() - t0

    trainer.evaluate = timed_evaluate  # type: ignore[method-assign]
    trained_tokens = 0
    loss = task.loss

    def counting_loss(m: nn.Module, batch: dict[str, Any]) -> tuple[torch.Tensor, int]:
        nonlocal trained_tokens
        nll, ntok = loss(m, batch)
        if m.training:
            trained_tokens += ntok
        return nll, ntok

    task.loss = counting_loss  # type: ignore[method-assign]

    print(f"nmt-lm-train: {arch} ({name}), {model.num_parameters():,} parameters; vocabulary {len(vocab):,} "
          f"({vocab_how}); {len(task.train):,} training lines ({task.num_dropped} dropped by --max-len), "
          f"{task.train_tokens:,} tokens incl. </s>; {len(task.dev):,} validation lines; regime {data.regime}, "
          f"{task.num_batches} batches per epoch", file=sys.stderr)
    start = time.perf_counter()
    state = trainer.train()
    seconds = time.perf_counter() - start
    train_seconds = max(seconds - eval_seconds, 1e-9)
    rate = trained_tokens / train_seconds
    best = min((h for h in state.history if "dev_loss" in h), key=lambda h: h["dev_loss"], default=None)
    previous = out / "summary.json"
    throughput = round(rate, 1)
    if not trained_tokens and previous.is_file():  # a resume with nothing left to do keeps the measured rate
        throughput = json.loads(previous.read_text(encoding="utf-8")).get("train_tokens_per_s")
    summary = {"arch": arch, "preset": name, "regime": data.regime, "num_parameters": model.num_parameters(),
               "vocab_size": len(vocab), "train_lines": len(task.train), "train_tokens": task.train_tokens,
               "epochs": state.epoch, "updates": state.step,
               "best_dev_loss": best["dev_loss"] if best else None,
               "best_dev_ppl": best["dev_ppl"] if best else None, "dev_tokens": best["dev_tokens"] if best else None,
               "train_tokens_per_s": throughput,
               "this_run": {"tokens": trained_tokens, "seconds": round(seconds, 2),
                            "eval_seconds": round(eval_seconds, 2), "train_tokens_per_s": round(rate, 1),
                            "threads": loop.threads}}
    with atomic_write(out / "summary.json") as fh:
        json.dump(summary, fh, indent=1)
    ppl = f"{best['dev_ppl']:.2f} over {best['dev_tokens']:,} tokens" if best else "n/a"
    print(f"nmt-lm-train: {state.step} updates, {state.epoch} epochs; best dev ppl {ppl}; "
          f"{trained_tokens:,} tokens in {train_seconds:.0f} s of training = {rate:,.0f} tokens/s "
          f"(+{eval_seconds:.0f} s validation)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

"""One trainer for translation models and LMs: checkpoints, exact resume, early stopping.

A *task* supplies the data and the loss (see ``TrainingTask``); the trainer owns
the loop. Everything needed to continue exactly — model, optimizer, RNG states,
epoch and position inside the epoch, early-stopping counters, history — is in
``checkpoint_last.pt``, written atomically every ``save_every`` updates.
Losses are natural-log per target token (nats).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from nmt import checkpoint as ckpt
from nmt.config import field
from nmt.data.batching import bucketed_batches
from nmt.data.io import atomic_write

log = logging.getLogger("nmt.train")


@dataclass
class OptimConfig:
    optimizer: str = field("adadelta", help="adadelta (paper: rho 0.95, eps 1e-6), adam or sgd")
    lr: float | None = field(None, help="learning rate (default: 1.0 adadelta, 1e-3 adam, 1.0 sgd)")
    adadelta_rho: float = field(0.95, help="Adadelta decay rho (paper: 0.95)")
    adadelta_eps: float = field(1e-6, help="Adadelta epsilon (paper: 1e-6)")
    clip_norm: float = field(1.0, help="clip the global gradient norm to this (0 = off)")


@dataclass
class LoopConfig:
    out_dir: str = field("work/model", help="folder for checkpoints, logs and the resolved config")
    batch_size: int = field(64, help="examples per update (paper: 64 phrase pairs)")
    max_tokens: int | None = field(None, help="also cap padded target tokens per batch")
    max_epochs: int = field(10, help="stop after this many epochs")
    max_updates: int | None = field(None, help="stop after this many updates")
    save_every: int = field(500, help="write checkpoint_last.pt every N updates (and at each epoch end)")
    eval_every: int = field(0, help="evaluate on dev every N updates (0 = at each epoch end)")
    patience: int = field(3, help="early stopping: evaluations without dev improvement before stopping (0 = off)")
    seed: int = field(1, help="random seed (init, batching, dropout)")
    threads: int = field(2, help="torch intra-op threads")
    resume: bool = field(False, help="continue from out_dir/checkpoint_last.pt")
    log_every: int = field(100, help="write a log line every N updates")
    progress: bool = field(True, help="show a tqdm progress bar")


class TrainingTask(Protocol):
    """What the trainer needs from a task (translation pairs, LM sentences, ...)."""

    def train_lengths(self) -> list[int]: ...

    def make_batch(self, indices: np.ndarray) -> dict[str, torch.Tensor]: ...

    def loss(self, model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
        """(summed negative log-likelihood in nats, number of predicted tokens)."""
        ...

    def dev_batches(self) -> list[dict[str, torch.Tensor]]: ...

    def checkpoint_extras(self) -> dict[str, Any]: ...


def build_optimizer(cfg: OptimConfig, params) -> torch.optim.Optimizer:
    name = cfg.optimizer.lower()
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=cfg.lr or 1.0, rho=cfg.adadelta_rho, eps=cfg.adadelta_eps)
    if name == "adam":
        return torch.optim.Adam(params, lr=cfg.lr or 1e-3)
    if name == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr or 1.0)
    raise ValueError(f"unknown optimizer {cfg.optimizer!r}: adadelta, adam or sgd")


@dataclass
class TrainState:
    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_dev: float = math.inf
    bad_evals: int = 0
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def _setup_logging(out_dir: Path) -> logging.Handler:
    """Send the ``nmt`` logger to ``out_dir/train.log`` (the caller removes the handler when done)."""
    handler = logging.FileHandler(out_dir / "train.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger("nmt")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    return handler


class Trainer:
    def __init__(self, model: nn.Module, task: TrainingTask, loop: LoopConfig, optim: OptimConfig,
                 resolved_config: dict[str, Any]):
        self.model = model
        self.task = task
        self.loop = loop
        self.optim_cfg = optim
        self.config = resolved_config
        self.out_dir = Path(loop.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.optimizer = build_optimizer(optim, model.parameters())
        self.state = TrainState()
        self.lengths = task.train_lengths()

    # -- checkpoints -----------------------------------------------------------------------------
    @property
    def last_path(self) -> Path:
        return self.out_dir / "checkpoint_last.pt"

    def save(self, path: Path) -> None:
        ckpt.save_checkpoint({
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "rng": ckpt.rng_state(),
            "train_state": dataclasses.asdict(self.state),
            "config": self.config,
            **self.task.checkpoint_extras(),
        }, path)
        with atomic_write(self.out_dir / "history.json") as fh:
            json.dump(self.state.history, fh, indent=1)

    def restore(self) -> None:
        state = ckpt.load_checkpoint(self.last_path)
        saved = state.get("config", {}).get("model")
        if saved is not None and saved != self.config.get("model"):
            raise ValueError(f"{self.last_path}: model config differs from the checkpoint's "
                             f"(checkpoint {saved}, now {self.config.get('model')})")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        ckpt.set_rng_state(state["rng"])
        self.state = TrainState(**state["train_state"])
        log.info("resumed from %s at update %d (epoch %d, batch %d)", self.last_path, self.state.step,
                 self.state.epoch, self.state.batch_in_epoch)

    # -- evaluation ------------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        was_training = self.model.training
        self.model.eval()
        total, tokens = 0.0, 0
        for batch in self.task.dev_batches():
            nll, n = self.task.loss(self.model, batch)
            total += float(nll)
            tokens += n
        self.model.train(was_training)
        loss = total / max(tokens, 1)
        return {"dev_loss": loss, "dev_ppl": math.exp(min(loss, 50.0)), "dev_tokens": tokens}

    def _eval_and_maybe_stop(self) -> bool:
        metrics = self.evaluate()
        st = self.state
        improved = metrics["dev_loss"] < st.best_dev - 1e-6
        if improved:
            st.best_dev = metrics["dev_loss"]
            st.bad_evals = 0
        else:
            st.bad_evals += 1
        st.history.append({"step": st.step, "epoch": st.epoch, **metrics})
        log.info("update %d epoch %d dev loss %.4f nats/token ppl %.2f over %d tokens%s", st.step, st.epoch,
                 metrics["dev_loss"], metrics["dev_ppl"], metrics["dev_tokens"], " (best)" if improved else "")
        if improved:
            self.save(self.out_dir / "checkpoint_best.pt")
        return self.loop.patience > 0 and st.bad_evals >= self.loop.patience

    # -- the loop --------------------------------------------------------------------------------
    def train(self) -> TrainState:
        handler = _setup_logging(self.out_dir)
        try:
            return self._train()
        finally:
            logging.getLogger("nmt").removeHandler(handler)
            handler.close()

    def _train(self) -> TrainState:
        torch.set_num_threads(self.loop.threads)
        if self.loop.resume and self.last_path.exists():
            self.restore()
        elif self.loop.resume:
            log.info("--resume given but %s does not exist: starting fresh", self.last_path)
        st, loop = self.state, self.loop
        self.model.train()
        stop = False
        while st.epoch < loop.max_epochs and not stop:
            batches = bucketed_batches(self.lengths, batch_size=loop.batch_size, max_tokens=loop.max_tokens,
                                       seed=loop.seed, epoch=st.epoch)
            bar = tqdm(total=len(batches), initial=st.batch_in_epoch, desc=f"epoch {st.epoch + 1}",
                       unit="batch", disable=not loop.progress, dynamic_ncols=True)
            window_tokens, window_loss, window_start = 0, 0.0, time.perf_counter()
            while st.batch_in_epoch < len(batches):
                if loop.max_updates is not None and st.step >= loop.max_updates:
                    stop = True  # e.g. resumed from a checkpoint already at the limit
                    break
                batch = self.task.make_batch(batches[st.batch_in_epoch])
                nll, ntok = self.task.loss(self.model, batch)
                self.optimizer.zero_grad(set_to_none=True)
                (nll / ntok).backward()
                if self.optim_cfg.clip_norm > 0:
                    nn.utils.clip_grad_norm_(self.model.parameters(), self.optim_cfg.clip_norm)
                self.optimizer.step()
                st.step += 1
                st.batch_in_epoch += 1
                window_tokens += ntok
                window_loss += float(nll.detach())
                elapsed = time.perf_counter() - window_start
                bar.update(1)
                if st.step % loop.log_every == 0 or st.batch_in_epoch == len(batches):
                    rate = window_tokens / max(elapsed, 1e-9)
                    train_loss = window_loss / max(window_tokens, 1)
                    bar.set_postfix(loss=f"{train_loss:.3f}", tok_s=f"{rate:.0f}")
                    log.info("update %d epoch %d train loss %.4f nats/token %.0f tgt tokens/s", st.step,
                             st.epoch + 1, train_loss, rate)
                    st.history.append({"step": st.step, "epoch": st.epoch, "train_loss": train_loss,
                                       "tokens_per_s": rate})
                    window_tokens, window_loss, window_start = 0, 0.0, time.perf_counter()
                if loop.eval_every and st.step % loop.eval_every == 0:
                    stop = self._eval_and_maybe_stop()
                    window_start = time.perf_counter()  # keep evaluation time out of tokens/s
                at_limit = loop.max_updates is not None and st.step >= loop.max_updates
                stop = stop or at_limit
                if st.batch_in_epoch == len(batches):
                    break  # the epoch-end work below runs once, then the next epoch's batches are drawn
                if st.step % loop.save_every == 0 or stop:
                    self.save(self.last_path)
                if stop:
                    break
            bar.close()
            if st.batch_in_epoch == len(batches):
                st.epoch += 1
                st.batch_in_epoch = 0
                if not loop.eval_every:
                    stop = self._eval_and_maybe_stop() or stop
                self.save(self.last_path)
        log.info("training finished at update %d, epoch %d; best dev loss %.4f", st.step, st.epoch, st.best_dev)
        return st

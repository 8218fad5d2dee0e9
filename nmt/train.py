"""One trainer for translation models and LMs: checkpoints, exact resume, early stopping, DDP.

A *task* supplies the data and the loss (see ``TrainingTask``); the trainer owns
the loop: batch order, loss normalisation, gradient clipping, the learning-rate
schedule, weight averaging, evaluation and checkpoints. Everything needed to
continue exactly — model, optimizer, RNG states, epoch and position inside the
epoch, early-stopping counters, history, the running parameter average, the
task's own state (``checkpoint_extras``) — is in ``checkpoint_last.pt``,
written atomically every ``save_every`` updates. Losses are natural-log per
target token (nats).

Under ``torchrun`` (see :mod:`nmt.distributed` and ``docs/training.md``) the
model is wrapped in DistributedDataParallel, each rank trains on a disjoint
slice of every global batch, and rank 0 writes checkpoints and logs.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from nmt import checkpoint as ckpt
from nmt import distributed
from nmt.config import field
from nmt.data.batching import bucketed_batches
from nmt.data.io import atomic_write, remove_stale_temp_files

log = logging.getLogger("nmt.train")

SCHEDULES = ("constant", "epoch", "plateau")
AVERAGING = ("none", "on_stall")


@dataclass
class OptimConfig:
    optimizer: str = field("adadelta", help="adadelta (paper: rho 0.95, eps 1e-6), adam or sgd")
    lr: float | None = field(None, help="learning rate (default: 1.0 adadelta, 1e-3 adam, 1.0 sgd)")
    adadelta_rho: float = field(0.95, help="Adadelta decay rho (paper: 0.95)")
    adadelta_eps: float = field(1e-6, help="Adadelta epsilon (paper: 1e-6)")
    clip_norm: float = field(1.0, help="clip the global gradient norm to this (0 = off)")
    adam_beta1: float = field(0.9, help="Adam beta1 (Mogrifier paper: 0)")
    adam_beta2: float = field(0.999, help="Adam beta2")
    weight_decay: float = field(0.0, help="L2 weight decay of the optimizer")
    lr_schedule: str = field("constant", help="'constant'; 'epoch': lr * lr_decay^max(0, epoch - lr_decay_start) "
                                              "with 1-based epochs (RMN paper: SGD lr 1 halved after the 4th); "
                                              "'plateau': lr * lr_decay^(dev evaluations that did not improve)")
    lr_decay: float = field(0.5, help="factor of the 'epoch' and 'plateau' schedules")
    lr_decay_start: int = field(4, help="'epoch' schedule: epochs 1..N run at the full lr")

    def __post_init__(self) -> None:
        if self.lr_schedule not in SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {SCHEDULES}, got {self.lr_schedule!r}")


@dataclass
class LoopConfig:
    out_dir: str = field("work/model", help="folder for checkpoints, logs and the resolved config")
    batch_size: int = field(64, help="examples per update (paper: 64 phrase pairs); with N processes "
                                     "(torchrun) the global batch, each process takes 1/N of it")
    max_tokens: int | None = field(None, help="also cap padded target tokens per batch")
    max_epochs: int = field(10, help="stop after this many epochs")
    max_updates: int | None = field(None, help="stop after this many updates")
    save_every: int = field(500, help="write checkpoint_last.pt every N updates (and at each epoch end)")
    eval_every: int = field(0, help="evaluate on dev every N updates (0 = at each epoch end)")
    patience: int = field(3, help="early stopping: evaluations without dev improvement before stopping (0 = off)")
    average: str = field("none", help="'none' or 'on_stall': once a dev evaluation does not improve, keep a "
                                      "running mean of the parameters after every update, used for evaluation "
                                      "and checkpoint_best (Mogrifier paper)")
    seed: int = field(1, help="random seed (init, batching, dropout)")
    threads: int = field(2, help="torch intra-op threads")
    device: str = field("cpu", help="cpu or cuda (under torchrun: process r uses cuda:LOCAL_RANK, nccl)")
    resume: bool = field(False, help="continue from out_dir/checkpoint_last.pt")
    overwrite: bool = field(False, help="out_dir holds a trained model: delete that run's checkpoints, history and "
                                        "logs and train anew (without it or --resume such an out_dir is refused)")
    log_every: int = field(100, help="write a log line every N updates")
    progress: bool = field(True, help="show a tqdm progress bar")

    def __post_init__(self) -> None:
        if self.average not in AVERAGING:
            raise ValueError(f"average must be one of {AVERAGING}, got {self.average!r}")


class TrainingTask(Protocol):
    """What the trainer needs from a task (translation pairs, LM sentences, ...).

    Optional hooks, used when the task has them:

    * ``batches_for_epoch(epoch) -> list[np.ndarray | Any]``: the task's own batch
      plan (deterministic in ``epoch``); each item is handed to ``make_batch``.
      Without it the trainer plans ``bucketed_batches(train_lengths(), ...)``.
    * ``train_lengths() -> list[int]``: example lengths for that default plan.
    * ``load_extras(checkpoint)``: restore what ``checkpoint_extras`` saved
      (called by :meth:`Trainer.restore`).
    * ``shard_batch(item, rank, world) -> (part, weight)``: this rank's part of a
      planned item under DDP (default :func:`nmt.distributed.shard`, for index arrays).

    Under DDP ``checkpoint_extras`` is called on every rank (it may gather), only
    rank 0's result is written.
    """

    def make_batch(self, indices: np.ndarray | Any) -> dict[str, Any]: ...

    def loss(self, model: nn.Module, batch: dict[str, Any]
             ) -> tuple[torch.Tensor, int] | tuple[torch.Tensor, int, float]:
        """(summed negative log-likelihood in nats, number of predicted tokens[, normaliser]).

        The gradient is that of ``nll / normaliser`` (default: the token count)."""
        ...

    def dev_batches(self) -> list[dict[str, Any]]: ...

    def checkpoint_extras(self) -> dict[str, Any]: ...


def initial_lr(cfg: OptimConfig) -> float:
    if cfg.lr is not None:
        return cfg.lr
    return 1e-3 if cfg.optimizer.lower() == "adam" else 1.0


def build_optimizer(cfg: OptimConfig, params) -> torch.optim.Optimizer:
    name = cfg.optimizer.lower()
    lr = initial_lr(cfg)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, rho=cfg.adadelta_rho, eps=cfg.adadelta_eps,
                                    weight_decay=cfg.weight_decay)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, betas=(cfg.adam_beta1, cfg.adam_beta2), weight_decay=cfg.weight_decay)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=cfg.weight_decay)
    raise ValueError(f"unknown optimizer {cfg.optimizer!r}: adadelta, adam or sgd")


@dataclass
class TrainState:
    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_dev: float = math.inf
    bad_evals: int = 0
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def scheduled_lr(cfg: OptimConfig, base_lr: float, state: TrainState) -> float:
    """The learning rate for the next update: a function of the trainer's state only (so a
    resumed run follows the same schedule)."""
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
        self.dist = distributed.context()
        self.device = self.dist.device if self.dist.enabled else torch.device(loop.device)
        self.model = model.to(self.device)
        self.task = task
        self.loop = loop
        self.optim_cfg = optim
        self.config = resolved_config
        self.out_dir = Path(loop.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self.dist.enabled:  # the module forward/backward of training; evaluation uses self.model
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.train_model: nn.Module = nn.parallel.DistributedDataParallel(model, device_ids=ids)
        else:
            self.train_model = model
        self.optimizer = build_optimizer(optim, model.parameters())
        self.base_lr = initial_lr(optim)
        self.state = TrainState()
        self.lengths = None if hasattr(task, "batches_for_epoch") else task.train_lengths()
        self.average: dict[str, torch.Tensor] | None = None  # running mean of the parameters
        self.average_count = 0
        self.run_tokens = 0        # training tokens of this run (all ranks)
        self.eval_seconds = 0.0    # spent in evaluate() in this run

    # -- checkpoints -----------------------------------------------------------------------------
    @property
    def last_path(self) -> Path:
        return self.out_dir / "checkpoint_last.pt"

    def save(self, path: Path, *, with_average: bool = True) -> None:
        extras = self.task.checkpoint_extras()  # every rank: the task may gather rank-local state
        if self.dist.is_main:
            state = {
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "rng": ckpt.rng_state(),
                "train_state": dataclasses.asdict(self.state),
                "config": self.config,
                **extras,
            }
            if self.device.type == "cuda":
                state["cuda_rng"] = torch.cuda.get_rng_state(self.device)
            if with_average and self.average is not None:
                state["average"] = {"count": self.average_count,
                                    "params": {k: v.detach().cpu() for k, v in self.average.items()}}
            ckpt.save_checkpoint(state, path)
            with atomic_write(self.out_dir / "history.json") as fh:
                json.dump(self.state.history, fh, indent=1)
        self.dist.barrier()

    def restore(self) -> None:
        state = ckpt.load_checkpoint(self.last_path)
        saved = state.get("config", {}).get("model")
        if saved is not None and saved != self.config.get("model"):
            raise ValueError(f"{self.last_path}: model config differs from the checkpoint's "
                             f"(checkpoint {saved}, now {self.config.get('model')})")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self._apply_optimizer_settings()  # this run's betas / weight decay win over the checkpoint's
        ckpt.set_rng_state(state["rng"])
        if "cuda_rng" in state and self.device.type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        self.state = TrainState(**state["train_state"])
        avg = state.get("average")
        if avg is not None:
            self.average = {k: v.to(self.device) for k, v in avg["params"].items()}
            self.average_count = int(avg["count"])
        load_extras = getattr(self.task, "load_extras", None)
        if load_extras is not None:
            load_extras(state)
        log.info("resumed from %s at update %d (epoch %d, batch %d)", self.last_path, self.state.step,
                 self.state.epoch, self.state.batch_in_epoch)

    # -- optimizer settings ----------------------------------------------------------------------
    def _apply_optimizer_settings(self) -> None:
        for group in self.optimizer.param_groups:
            group["weight_decay"] = self.optim_cfg.weight_decay
            if "betas" in group:
                group["betas"] = (self.optim_cfg.adam_beta1, self.optim_cfg.adam_beta2)

    def _set_lr(self) -> None:
        """The scheduled lr for the next update; changes are recorded in the (checkpointed) history."""
        st = self.state
        lr = scheduled_lr(self.optim_cfg, self.base_lr, st)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        last = next((h["lr"] for h in reversed(st.history) if "lr" in h), None)
        if last != lr:
            st.history.append({"step": st.step, "epoch": st.epoch, "lr": lr})
            log.info("update %d epoch %d: learning rate %.6g", st.step + 1, st.epoch + 1, lr)

    # -- weight averaging ------------------------------------------------------------------------
    def _update_average(self) -> None:
        if self.loop.average != "on_stall":
            return
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            if self.average is None:
                if self.state.bad_evals < 1:
                    return
                self.average = {k: p.detach().clone() for k, p in params.items()}
                self.average_count = 1
                st = self.state
                st.history.append({"step": st.step, "epoch": st.epoch, "average": "started"})
                log.info("update %d: dev loss stalled, averaging the parameters from now on", st.step)
                return
            self.average_count += 1
            weight = 1.0 / self.average_count
            for k, p in params.items():
                self.average[k].lerp_(p.detach(), weight)

    @contextlib.contextmanager
    def averaged_weights(self) -> Iterator[None]:
        """Swap the running average into the model for the block (no-op without one)."""
        if self.average is None:
            yield
            return
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            backup = {k: p.detach().clone() for k, p in params.items()}
            for k, p in params.items():
                p.copy_(self.average[k])
        try:
            yield
        finally:
            with torch.no_grad():
                for k, p in params.items():
                    p.copy_(backup[k])

    # -- evaluation ------------------------------------------------------------------------------
    def evaluate(self) -> dict[str, float]:
        """Dev loss of the current weights; under DDP computed on rank 0 and broadcast."""
        start = time.perf_counter()
        try:
            metrics = self._evaluate_here() if self.dist.is_main else None
            return self.dist.broadcast_object(metrics)
        finally:
            self.eval_seconds += time.perf_counter() - start

    @torch.no_grad()
    def _evaluate_here(self) -> dict[str, float]:
        was_training = self.model.training
        self.model.eval()
        total, tokens = 0.0, 0
        for batch in self.task.dev_batches():
            out = self.task.loss(self.model, distributed.to_device(batch, self.device))
            total += float(out[0])
            tokens += int(out[1])
        self.model.train(was_training)
        loss = total / max(tokens, 1)
        return {"dev_loss": loss, "dev_ppl": math.exp(min(loss, 50.0)), "dev_tokens": tokens}

    def _eval_and_maybe_stop(self) -> bool:
        with self.averaged_weights():
            metrics = self.evaluate()
            st = self.state
            improved = metrics["dev_loss"] < st.best_dev - 1e-6
            if improved:
                st.best_dev = metrics["dev_loss"]
                st.bad_evals = 0
            else:
                st.bad_evals += 1
            st.history.append({"step": st.step, "epoch": st.epoch, **metrics,
                               **({"averaged": self.average_count} if self.average is not None else {})})
            log.info("update %d epoch %d dev loss %.4f nats/token ppl %.2f over %d tokens%s%s", st.step, st.epoch,
                     metrics["dev_loss"], metrics["dev_ppl"], metrics["dev_tokens"],
                     f" (average of {self.average_count} updates)" if self.average is not None else "",
                     " (best)" if improved else "")
            if improved:
                self.save(self.out_dir / "checkpoint_best.pt", with_average=False)
        return self.loop.patience > 0 and st.bad_evals >= self.loop.patience

    # -- the loop --------------------------------------------------------------------------------
    def epoch_batches(self, epoch: int) -> list[Any]:
        """The global batch plan of ``epoch`` (the same on every rank)."""
        plan = getattr(self.task, "batches_for_epoch", None)
        if plan is not None:
            return list(plan(epoch))
        if self.lengths is None:
            self.lengths = self.task.train_lengths()
        return bucketed_batches(self.lengths, batch_size=self.loop.batch_size, max_tokens=self.loop.max_tokens,
                                seed=self.loop.seed, epoch=epoch)

    def _local_part(self, item: Any) -> tuple[Any, float]:
        if not self.dist.enabled:
            return item, 1.0
        shard = getattr(self.task, "shard_batch", None)
        if shard is not None:
            return shard(item, self.dist.rank, self.dist.world)
        return distributed.shard(item, self.dist.rank, self.dist.world)

    def _update(self, item: Any) -> tuple[float, int]:
        """One optimizer update on the planned global batch ``item``: (Σ nll, tokens) over all ranks."""
        part, weight = self._local_part(item)
        batch = distributed.to_device(self.task.make_batch(part), self.device)
        out = self.task.loss(self.train_model, batch)
        nll, ntok = out[0], int(out[1])
        norm = out[2] if len(out) > 2 else ntok
        if weight == 0.0:  # an empty slice of a small batch: take part in the all-reduce, add nothing
            nll, ntok, norm = nll * 0.0, 0, 0
        if self.dist.enabled:
            total_nll, total_tok, total_norm = self.dist.all_reduce_sum([float(nll.detach()), ntok, norm])
            scaled = nll / (total_norm / self.dist.world)  # DDP averages the ranks' gradients
            total_tok = int(round(total_tok))
        else:
            total_nll, total_tok = float(nll.detach()), ntok
            scaled = nll / norm
        self.optimizer.zero_grad(set_to_none=True)
        scaled.backward()
        if self.optim_cfg.clip_norm > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.optim_cfg.clip_norm)
        self._set_lr()
        self.optimizer.step()
        self._update_average()
        return total_nll, total_tok

    def train(self) -> TrainState:
        handler = _setup_logging(self.out_dir) if self.dist.is_main else None
        try:
            return self._train()
        finally:
            if handler is not None:
                logging.getLogger("nmt").removeHandler(handler)
                handler.close()

    def _train(self) -> TrainState:
        torch.set_num_threads(self.loop.threads)
        self._apply_optimizer_settings()
        if self.loop.resume and self.dist.is_main:
            for path in remove_stale_temp_files(self.out_dir):  # left by a killed run's atomic writes
                log.info("removed %s (an unfinished write of an interrupted run)", path.name)
        if self.loop.resume and self.last_path.exists():
            self.restore()
        elif self.loop.resume:
            log.info("--resume given but %s does not exist: starting fresh", self.last_path)
        if self.dist.enabled and not self.dist.is_main:
            # rank 0 continues the checkpointed RNG stream; the others draw their own (dropout masks)
            torch.manual_seed(self.loop.seed * 1_000_003 + self.dist.rank * 7_919 + self.state.step)
        st, loop = self.state, self.loop
        self.model.train()
        stop = False
        while st.epoch < loop.max_epochs and not stop:
            batches = self.epoch_batches(st.epoch)
            bar = tqdm(total=len(batches), initial=st.batch_in_epoch, desc=f"epoch {st.epoch + 1}",
                       unit="batch", disable=not (loop.progress and self.dist.is_main), dynamic_ncols=True)
            window_tokens, window_loss, window_start = 0, 0.0, time.perf_counter()
            while st.batch_in_epoch < len(batches):
                if loop.max_updates is not None and st.step >= loop.max_updates:
                    stop = True  # e.g. resumed from a checkpoint already at the limit
                    break
                nll, ntok = self._update(batches[st.batch_in_epoch])
                st.step += 1
                st.batch_in_epoch += 1
                window_tokens += ntok
                window_loss += nll
                self.run_tokens += ntok
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

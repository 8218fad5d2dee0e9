"""One trainer for translation models and LMs: checkpoints, exact resume, early stopping, DDP.

Its options, the optimiser and the learning-rate schedule are in :mod:`nmt.training.config`, the
running parameter average in :mod:`nmt.training.weight_average`.

A *task* supplies the data and the loss (see ``TrainingTask``); the trainer owns
the loop: batch order, loss normalisation, gradient clipping, the learning-rate
schedule, weight averaging, evaluation and checkpoints. Everything needed to
continue exactly — model, optimizer, RNG states, epoch and position inside the
epoch, early-stopping counters, history, the running parameter average, the
task's own state (``checkpoint_extras``) — is in ``checkpoint_last.pt``,
written atomically every ``save_every`` updates. Losses are natural-log per
target token (nats).

Under ``torchrun`` (see :mod:`nmt.training.distributed` and ``docs/training.md``) the
model is wrapped in DistributedDataParallel, each rank trains on a disjoint
slice of every global batch, and rank 0 writes checkpoints and logs.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from nmt.training import checkpoint as ckpt
from nmt.training import distributed
from nmt.data.batching import bucketed_batches
from nmt.core.io import atomic_write, remove_stale_temp_files
from nmt.core.logs import add_file_log, remove_file_log
from nmt.core.paths import epoch_checkpoint_name
from nmt.training.config import LoopConfig, OptimConfig, TrainState, build_optimizer, initial_lr, scheduled_lr
from nmt.training.weight_average import ParameterAverage

log = logging.getLogger("nmt.train")


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
      planned item under DDP (default :func:`nmt.training.distributed.shard`, for index arrays).

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
        self.average = ParameterAverage()  # running mean of the parameters (loop.average)
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
            if with_average and self.average.started:
                state["average"] = self.average.to_checkpoint()
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
            self.average.load(avg, self.device)
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
        if not self.average.started:
            if self.state.bad_evals < 1:
                return
            self.average.start(self.model)
            st = self.state
            st.history.append({"step": st.step, "epoch": st.epoch, "average": "started"})
            log.info("update %d: dev loss stalled, averaging the parameters from now on", st.step)
            return
        self.average.add(self.model)

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
        with self.average.swapped_in(self.model):
            metrics = self.evaluate()
            st = self.state
            improved = metrics["dev_loss"] < st.best_dev - 1e-6
            if improved:
                st.best_dev = metrics["dev_loss"]
                st.bad_evals = 0
            else:
                st.bad_evals += 1
            st.history.append({"step": st.step, "epoch": st.epoch, **metrics,
                               **({"averaged": self.average.count} if self.average.started else {})})
            log.info("update %d epoch %d dev loss %.4f nats/token ppl %.2f over %d tokens%s%s", st.step, st.epoch,
                     metrics["dev_loss"], metrics["dev_ppl"], metrics["dev_tokens"],
                     f" (average of {self.average.count} updates)" if self.average.started else "",
                     " (best)" if improved else "")
            if improved:
                self.save(self.out_dir / "checkpoint_best.pt", with_average=False)
        return self.loop.patience > 0 and st.bad_evals >= self.loop.patience

    # -- the loop --------------------------------------------------------------------------------
    def epoch_batches(self, epoch: int) -> list[Any]:
        """The global batch plan of ``epoch`` (the same on every rank)."""
        plan = getattr(self.task, "batches_for_epoch", None)
        if plan is not None:
            batches = plan(epoch)  # a lazy Sequence (a streamed epoch) is walked in order, not copied
            return batches if isinstance(batches, Sequence) else list(batches)
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
        handler = add_file_log(self.out_dir / "train.log") if self.dist.is_main else None
        try:
            return self._train()
        finally:
            if handler is not None:
                remove_file_log(handler)

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
                if loop.keep_epochs:  # before checkpoint_last: a kill between the two redoes the epoch's end
                    self.save(self.out_dir / epoch_checkpoint_name(st.epoch))
                self.save(self.last_path)
        log.info("training finished at update %d, epoch %d; best dev loss %.4f", st.step, st.epoch, st.best_dev)
        return st

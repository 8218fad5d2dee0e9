"""Training options and the learning rate: OptimConfig, LoopConfig, the optimiser they build, the schedule.

The trainer (:mod:`nmt.training.trainer`) takes an :class:`OptimConfig` and a :class:`LoopConfig`;
:class:`TrainState` holds the counters it checkpoints, of which the learning rate
(:func:`scheduled_lr`) is a pure function, so a resumed run follows the same schedule.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import torch

from nmt.core.config import field
from nmt.training import optimizers

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
    optimizer_impl: str = field("native", help="'native' (nmt.training.optimizers: torch.optim's update, bit for "
                                               "bit on the CPU, without its 2-3 s import of torch._dynamo) or "
                                               "'torch' (torch.optim)")

    def __post_init__(self) -> None:
        if self.lr_schedule not in SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {SCHEDULES}, got {self.lr_schedule!r}")
        if self.optimizer_impl not in optimizers.IMPLS:
            raise ValueError(f"optimizer_impl must be one of {optimizers.IMPLS}, got {self.optimizer_impl!r}")


@dataclass
class LoopConfig:
    out_dir: str = field("work/model", help="folder for checkpoints, logs and the resolved config")
    batch_size: int = field(64, help="examples per update (paper: 64 phrase pairs); with N processes "
                                     "(torchrun) the global batch, each process takes 1/N of it")
    max_tokens: int | None = field(None, help="also cap padded target tokens per batch")
    max_epochs: int = field(10, help="stop after this many epochs")
    max_updates: int | None = field(None, help="stop after this many updates")
    save_every: int = field(500, help="write checkpoint_last.pt every N updates (and at each epoch end)")
    keep_epochs: bool = field(False, help="also keep the end of every epoch N as checkpoint_epochN.pt (fairseq's "
                                          "checkpointN.pt; load it with --checkpoint epochN)")
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


def initial_lr(cfg: OptimConfig) -> float:
    if cfg.lr is not None:
        return cfg.lr
    return 1e-3 if cfg.optimizer.lower() == "adam" else 1.0


def build_optimizer(cfg: OptimConfig, params) -> optimizers.Optimizer | torch.optim.Optimizer:
    """The configured optimiser over ``params``: :mod:`nmt.training.optimizers` (``optimizer_impl`` native) or
    ``torch.optim`` (torch); both have the same update, hyper-parameters and checkpoint format."""
    name = cfg.optimizer.lower()
    lr = initial_lr(cfg)
    impl = optimizers if cfg.optimizer_impl == "native" else torch.optim
    if name == "adadelta":
        return impl.Adadelta(params, lr=lr, rho=cfg.adadelta_rho, eps=cfg.adadelta_eps, weight_decay=cfg.weight_decay)
    if name == "adam":
        return impl.Adam(params, lr=lr, betas=(cfg.adam_beta1, cfg.adam_beta2), weight_decay=cfg.weight_decay)
    if name == "sgd":
        return impl.SGD(params, lr=lr, weight_decay=cfg.weight_decay)
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

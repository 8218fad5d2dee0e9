"""DistributedDataParallel plumbing for ``nmt-train`` / ``nmt-lm-train`` under ``torchrun``.

:func:`init` reads the torchrun environment (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT``) and joins the process group:
``nccl`` when the run asks for ``--device cuda`` and CUDA is available (rank r
uses ``cuda:LOCAL_RANK``), ``gloo`` on CPU. Without those variables (a plain
``nmt-train``), or with ``WORLD_SIZE=1``, it is a no-op and every helper below
behaves as in a single process, so the same code path serves both.

Data parallelism in the trainer (:mod:`nmt.training.trainer`): every rank draws the same
*global* batch plan; rank ``r`` of ``W`` takes the disjoint slice
:func:`shard` ``(spec, r, W)`` of every global batch, the token count (and the
loss normaliser) are summed over ranks, and each rank back-propagates
``nll_r · W / norm_global`` so that DDP's gradient *average* equals the
single-process gradient of ``Σ nll / norm`` over the whole batch. Checkpoints
and logs are written by rank 0 only; the data position in a checkpoint is global,
so a run may resume with another number of processes.
"""
from __future__ import annotations

import contextlib
import datetime
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

# generous: rank 0 validates while the other ranks wait in a collective
TIMEOUT = datetime.timedelta(minutes=60)


@dataclass
class DistContext:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    backend: str | None = None
    device: torch.device = torch.device("cpu")

    @property
    def enabled(self) -> bool:
        """More than one process: gradients, counts and checkpoints need the collectives below."""
        return self.world > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    # ---- collectives (no-ops in a single process)
    def barrier(self) -> None:
        if self.enabled:
            if self.backend == "nccl":
                dist.barrier(device_ids=[self.local_rank])
            else:
                dist.barrier()

    def all_reduce_sum(self, values: list[float]) -> list[float]:
        """Sum each number over the ranks (float64, so token counts stay exact)."""
        if not self.enabled:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t.tolist()

    def broadcast_object(self, obj: Any, src: int = 0) -> Any:
        """``obj`` of rank ``src`` on every rank (picklable)."""
        if not self.enabled:
            return obj
        box = [obj if self.rank == src else None]
        dist.broadcast_object_list(box, src=src, device=self.device if self.backend == "nccl" else None)
        return box[0]

    def all_gather_object(self, obj: Any) -> list[Any]:
        """``[obj of rank 0, obj of rank 1, …]`` on every rank (picklable; move tensors to CPU first)."""
        if not self.enabled:
            return [obj]
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    @contextlib.contextmanager
    def main_first(self) -> Iterator[None]:
        """Rank 0 runs the block first (e.g. writes a file), the others after it."""
        if not self.is_main:
            self.barrier()
        try:
            yield
        finally:
            if self.is_main:
                self.barrier()


_CONTEXT: DistContext | None = None


def context() -> DistContext:
    """The context set by :func:`init`, else a single-process one."""
    return _CONTEXT if _CONTEXT is not None else DistContext()


def from_env() -> tuple[int, int, int] | None:
    """``(rank, world, local_rank)`` from the torchrun variables, or None outside torchrun."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return None
    return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))


def init(device: str = "cpu") -> DistContext:
    """Join the torchrun process group (no-op without torchrun or with one process)."""
    global _CONTEXT
    env = from_env()
    want_cuda = str(device).startswith("cuda")
    if env is None or env[1] <= 1:
        _CONTEXT = DistContext(device=torch.device(device))
        return _CONTEXT
    rank, world, local_rank = env
    if want_cuda:
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda was given but CUDA is not available")
        dev = torch.device("cuda", local_rank)
        torch.cuda.set_device(dev)
        backend = "nccl"
    else:
        dev = torch.device("cpu")
        backend = "gloo"
    if not dist.is_initialized():
        kwargs: dict[str, Any] = {"backend": backend, "timeout": TIMEOUT}
        if backend == "nccl":
            kwargs["device_id"] = dev
        dist.init_process_group(**kwargs)
    _CONTEXT = DistContext(rank=rank, world=world, local_rank=local_rank, backend=backend, device=dev)
    return _CONTEXT


def shutdown() -> None:
    """Leave the process group (end of a CLI run)."""
    global _CONTEXT
    if _CONTEXT is not None and _CONTEXT.enabled and dist.is_initialized():
        dist.destroy_process_group()
    _CONTEXT = None


def shard(spec: Any, rank: int, world: int) -> tuple[Any, float]:
    """Rank ``rank``'s part of a global batch of example indices: ``(part, weight)``.

    The contiguous slice ``rank`` of ``np.array_split(spec, world)``; the slices
    are disjoint and cover the batch. A rank whose slice is empty (a batch with
    fewer examples than ranks) gets the batch's first example with weight 0: it
    still runs forward/backward (DDP needs every rank in each gradient
    all-reduce) but contributes neither gradient nor tokens.
    """
    arr = np.asarray(spec)
    part = np.array_split(arr, world)[rank]
    if len(part) == 0:
        return arr[:1], 0.0
    return part, 1.0


def rows_of(n: int, rank: int, world: int) -> tuple[int, int]:
    """``[lo, hi)`` of the contiguous slice ``rank`` of ``n`` rows (as :func:`shard` cuts them)."""
    sizes = [len(p) for p in np.array_split(np.arange(n), world)]
    lo = sum(sizes[:rank])
    return lo, lo + sizes[rank]


def to_device(obj: Any, device: torch.device | str) -> Any:
    """``obj`` with every tensor (inside dicts, lists, tuples, namedtuples) moved to ``device``."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(to_device(v, device) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(v, device) for v in obj)
    return obj

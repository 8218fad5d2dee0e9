"""Where a model folder keeps its checkpoints (torch-free, so smt_features can use it at import)."""
from __future__ import annotations

import errno
import re
from pathlib import Path

#: the ``--checkpoint`` values every command that loads a model folder takes
CHECKPOINT_HELP = ("which checkpoint of a model folder: best, last, epochN (the end of epoch N, kept by "
                   "nmt-train --keep-epochs) or auto (best if present, else last)")
_EPOCH = re.compile(r"epoch([1-9][0-9]*)")


def epoch_checkpoint_name(epoch: int) -> str:
    """The file name of the checkpoint kept at the end of (1-based) ``epoch``."""
    return f"checkpoint_epoch{epoch}.pt"


def resolve_checkpoint(model: str | Path, which: str = "auto") -> Path:
    """The checkpoint file of ``model`` (a folder or a file).

    ``which`` is ``best``, ``last``, ``epochN`` (``checkpoint_epochN.pt``, written at the end of
    epoch N by ``--keep-epochs``) or ``auto`` (best if present, else last: short runs that never
    evaluated have only ``checkpoint_last.pt``).
    """
    path = Path(model)
    if path.is_dir():
        if which == "auto":
            which = "best" if (path / "checkpoint_best.pt").exists() else "last"
        epoch = _EPOCH.fullmatch(which)
        if epoch is not None:
            path = path / epoch_checkpoint_name(int(epoch.group(1)))
        elif which in ("best", "last"):
            path = path / f"checkpoint_{which}.pt"
        else:
            raise ValueError(f"checkpoint must be best, last, epochN or auto, not {which!r}")
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "checkpoint not found", str(path))
    return path

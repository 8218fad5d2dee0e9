"""Where a model folder keeps its checkpoints (torch-free, so smt_features can use it at import)."""
from __future__ import annotations

import errno
from pathlib import Path


def resolve_checkpoint(model: str | Path, which: str = "auto") -> Path:
    """The checkpoint file of ``model`` (a folder or a file).

    ``which`` is ``best``, ``last`` or ``auto`` (best if present, else last: short runs that
    never evaluated have only ``checkpoint_last.pt``).
    """
    path = Path(model)
    if path.is_dir():
        if which == "auto":
            which = "best" if (path / "checkpoint_best.pt").exists() else "last"
        if which not in ("best", "last"):
            raise ValueError(f"checkpoint must be best, last or auto, not {which!r}")
        path = path / f"checkpoint_{which}.pt"
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "checkpoint not found", str(path))
    return path

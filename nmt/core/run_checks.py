"""Checks the ``nmt-*`` commands make before anything is written (output folders, empty inputs).

* :func:`refuse_trained_out_dir`: a training command whose ``--out-dir`` already holds a trained
  model continues it only with ``--resume``; ``--overwrite`` replaces it (:func:`clear_run`).
  Without either the run is refused: writing a new ``checkpoint_last.pt`` and ``history.json``
  next to the old run's ``checkpoint_best.pt`` would mix two runs in one folder.
* :func:`require_lines`: an empty input file is refused with its name (there is nothing to do,
  and an empty result would hide the mistake further down a pipeline).
"""
from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

from nmt.core.io import DataError, remove_stale_temp_files
from nmt.core.errors import UsageError, refuse_overwriting_inputs

#: the files a training run writes into its --out-dir (besides the vocabulary copies)
RUN_FILES = ("checkpoint_last.pt", "checkpoint_best.pt", "history.json", "train.log", "config.yaml",
             "summary.json")
#: the epoch ends a run keeps with --keep-epochs (nmt.core.paths.epoch_checkpoint_name)
EPOCH_CHECKPOINTS = "checkpoint_epoch*.pt"
#: the files that make a folder "a trained model"
MODEL_FILES = ("checkpoint_last.pt", "checkpoint_best.pt", "history.json")


def check_out_dir_path(out: Path) -> None:
    """``--out-dir`` must be a folder or not exist yet."""
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "--out-dir is a file, not a folder", str(out))


def refuse_trained_out_dir(out: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse to train into a folder that holds another run unless ``resume`` or ``overwrite``."""
    check_out_dir_path(out)
    if resume and overwrite:
        raise UsageError("give --resume (continue the run in --out-dir) or --overwrite (replace it), not both")
    if overwrite or not out.is_dir():
        return
    found = [name for name in MODEL_FILES if (out / name).exists()]
    if not found:
        return
    if not resume:
        raise UsageError(f"{out}: holds a trained model ({', '.join(found)}); give --resume to continue it, "
                         f"--overwrite to replace it, or another --out-dir")
    if "checkpoint_last.pt" not in found:
        raise UsageError(f"{out}: --resume needs checkpoint_last.pt, but the folder holds only {', '.join(found)} "
                         f"of another run; give --overwrite to replace it, or another --out-dir")


def refuse_out_dir_inputs(out: Path, inputs: dict[str, str | os.PathLike[str] | None],
                          extra: Iterable[str] = ()) -> None:
    """Refuse when a file the run writes into ``out`` is one of the ``inputs`` (flag → path)."""
    outputs = {f"--out-dir file {name}": str(out / name) for name in (*RUN_FILES, *extra)}
    refuse_overwriting_inputs(outputs=outputs, inputs=inputs)


def clear_run(out: Path, inputs: Iterable[str | os.PathLike[str] | None] = ()) -> list[Path]:
    """``--overwrite``: delete the previous run's files in ``out`` (never one of ``inputs``);
    returns what was removed."""
    keep = set()
    for path in inputs:
        if path not in (None, "", "-") and Path(path).exists():
            keep.add(Path(path).resolve())
    removed = []
    kept_epochs = sorted(p.name for p in out.glob(EPOCH_CHECKPOINTS)) if out.is_dir() else []
    for name in (*RUN_FILES, *kept_epochs):
        path = out / name
        if path.is_file() and path.resolve() not in keep:
            path.unlink()
            removed.append(path)
    if out.is_dir():
        removed += remove_stale_temp_files(out)
    return removed


def require_lines(path: str | os.PathLike[str], count: int, what: str = "lines") -> None:
    """Refuse an empty input file (``count`` lines read from ``path``)."""
    if count == 0:
        raise DataError(f"{path}: empty file (no {what})")

"""What ``nmt-prepare`` wrote into a data folder: the names of its train / dev / test splits.

``nmt-prepare`` names every split's files after the split (``<split>.tok.<lang>``): a registry split keeps its
name (``val``), a plain-file PREFIX gives its basename (``--dev data/dev`` → ``dev.tok.en``). It records which
split plays which part in ``prepare.json`` (``"roles": {"train": …, "dev": …, "test": […]}``); the commands that
take ``--data-dir`` read the names from there. A folder whose prepare.json has no roles (an older nmt-prepare) or
that has no prepare.json (files written by hand) keeps today's names: ``train`` and ``val``.
Torch-free: imported by ``--data-dir`` commands before any model is built.
"""
from __future__ import annotations

import errno
import json
from dataclasses import dataclass
from pathlib import Path

from nmt.core.io import DataError

PREPARE_JSON = "prepare.json"
DEFAULT_TRAIN, DEFAULT_DEV = "train", "val"


@dataclass(frozen=True)
class SplitNames:
    """The split names of a data folder and where they came from (for error messages)."""
    train: str
    dev: str | None
    test: tuple[str, ...]
    source: str  # "DATA/prepare.json" when recorded there, else a note on the default names

    def origin(self, role: str) -> str:
        """``the dev split 'dev' named by DATA/prepare.json`` (or the default name's note)."""
        name = getattr(self, role)
        return f"the {role} split {name!r} {self.source}"


def roles_of(train: str, evals: list[str], has_dev: bool) -> dict[str, object]:
    """prepare.json's ``roles`` entry: ``evals`` are the eval split names in order, the dev split first if any."""
    return {"train": train, "dev": evals[0] if has_dev else None, "test": evals[1:] if has_dev else list(evals)}


def split_names(data_dir: str | Path) -> SplitNames:
    """The split names recorded in ``data_dir/prepare.json``, or ``train``/``val`` where it records none."""
    path = Path(data_dir) / PREPARE_JSON
    if not path.is_file():
        return SplitNames(DEFAULT_TRAIN, DEFAULT_DEV, (), f"(the default name: no {path})")
    try:
        stats = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(f"{path}: not the JSON that nmt-prepare writes ({err})") from None
    roles = stats.get("roles") if isinstance(stats, dict) else None
    if not isinstance(roles, dict):
        return SplitNames(DEFAULT_TRAIN, DEFAULT_DEV, (),
                          f"(the default name: {path} records no split roles, written by an older nmt-prepare)")
    train, dev, test = roles.get("train"), roles.get("dev"), roles.get("test") or []
    if not isinstance(train, str) or not (dev is None or isinstance(dev, str)) or not isinstance(test, list):
        raise DataError(f"{path}: \"roles\" must be {{\"train\": NAME, \"dev\": NAME or null, \"test\": [NAME, ...]}},"
                        f" not {roles!r}")
    return SplitNames(train, dev, tuple(str(t) for t in test), f"named by {path}")


def missing_split_file(path: str | Path, names: SplitNames, role: str, option: str) -> FileNotFoundError:
    """The error for a split file that is not in the data folder: the file, and which split it was for."""
    return FileNotFoundError(errno.ENOENT, f"no such file ({names.origin(role)}; rerun nmt-prepare, "
                                           f"or give the file as {option} FILE)", str(path))

"""Atomic checkpoints: model, optimizer, RNG states, data position and the resolved config.

Checkpoints hold plain data only — dicts, lists, tuples, tensors, str/int/float/bool/None —
so that ``torch.load(path, weights_only=True)`` reads them and loading a checkpoint someone
sent you cannot run code. :func:`save_checkpoint` converts what is not plain (numpy
scalars, paths) and refuses anything else; the numpy RNG state is stored as a dict and
restored exactly by :func:`set_rng_state`.

:func:`load_checkpoint` reads with ``weights_only=True``. A checkpoint of the older format
(pickled numpy RNG state, …) or any file that holds other Python objects is refused unless
the caller trusts it: ``trust=True`` or the environment variable ``RNNSMT_TRUST_CHECKPOINTS=1``
(then it is read with ``weights_only=False`` and a warning is logged).
"""
from __future__ import annotations

import enum
import logging
import os
import pickle
import random
import warnings
import zipfile
from collections import OrderedDict
from pathlib import Path, PurePath
from typing import Any

import numpy as np
import torch

from nmt.core.io import atomic_write
from nmt.core.errors import UsageError

log = logging.getLogger("nmt.checkpoint")

TRUST_ENV = "RNNSMT_TRUST_CHECKPOINTS"
_PLAIN_SCALARS = (str, int, float, bool, type(None))


def to_plain(obj: Any, where: str = "checkpoint") -> Any:
    """``obj`` with numpy scalars made Python numbers and paths made strings; tensors, dicts, lists,
    tuples and str/int/float/bool/None are kept. Anything else is a TypeError naming where it is
    (it would make the checkpoint unreadable with ``weights_only=True``)."""
    if isinstance(obj, torch.Tensor) or type(obj) in _PLAIN_SCALARS:
        return obj
    if isinstance(obj, np.generic) and not isinstance(obj, (np.void, np.object_)):
        return obj.item()
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, dict):
        if type(obj) not in (dict, OrderedDict):  # e.g. a defaultdict
            out: dict[Any, Any] = {}
        else:
            out = type(obj)()
        for key, value in obj.items():
            out[to_plain(key, where)] = to_plain(value, f"{where}[{key!r}]")
        metadata = getattr(obj, "_metadata", None)  # a module's state_dict carries its versions here
        if metadata is not None and isinstance(out, OrderedDict):
            out._metadata = metadata  # type: ignore[attr-defined]
        return out
    if isinstance(obj, list):
        return [to_plain(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, tuple) and type(obj) is tuple:
        return tuple(to_plain(v, f"{where}[{i}]") for i, v in enumerate(obj))
    if isinstance(obj, torch.Size):
        return obj
    if isinstance(obj, enum.Enum):
        return to_plain(obj.value, where)
    for base in (int, float, str):  # subclasses lose their class
        if isinstance(obj, base):
            return base(obj)
    raise TypeError(f"{where}: a {type(obj).__name__} cannot go into a checkpoint (only tensors, dicts, lists, "
                    "tuples and str/int/float/bool/None load with torch.load(weights_only=True))")


def save_checkpoint(state: dict[str, Any], path: str | Path) -> None:
    """Write ``state`` (made plain by :func:`to_plain`) with ``torch.save`` atomically (temp file in the
    same folder, fsync, rename)."""
    plain = to_plain(state)
    with atomic_write(path, "wb") as fh:
        torch.save(plain, fh)


def trusted_by_env() -> bool:
    return os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes")


def _unreadable(path: Path, exc: BaseException) -> UsageError:
    detail = str(exc).split("\n", 1)[0].strip() or type(exc).__name__
    return UsageError(f"{path}: not a readable checkpoint (truncated, corrupt or not a checkpoint file: {detail})")


def load_checkpoint(path: str | Path, *, trust: bool | None = None) -> dict[str, Any]:
    """The checkpoint at ``path``, read with ``torch.load(weights_only=True)``.

    A file that only loads with ``weights_only=False`` (the older checkpoint format, or
    a pickle of other objects) is refused with a :class:`~nmt.core.errors.UsageError` unless
    ``trust`` is true (default: ``$RNNSMT_TRUST_CHECKPOINTS=1``). A truncated or foreign
    file is a UsageError naming the file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    if path.is_dir():
        raise UsageError(f"{path}: is a folder, not a checkpoint file")
    if trust is None:
        trust = trusted_by_env()
    try:
        with warnings.catch_warnings():  # torch's note on a foreign pickle protocol: the error below says more
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "weights only load failed" not in str(exc).lower():
            raise _unreadable(path, exc) from None
        if not trust:
            kind = "an older rnnsmt checkpoint format" if zipfile.is_zipfile(path) else "a plain pickle"
            raise UsageError(
                f"{path}: refusing to load: it holds Python objects beyond tensors and plain containers "
                f"({kind}, or a file from elsewhere), and loading it could run code. If you trust where it comes "
                f"from, set {TRUST_ENV}=1 (or pass trust=True); a --resume then writes the safe format") from None
        log.warning("%s: loading with weights_only=False (%s=1 / trust=True): this can run code stored in the file",
                    path, TRUST_ENV)
        try:
            state = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as exc2:  # a truncated or foreign file
            raise _unreadable(path, exc2) from None
    except Exception as exc:  # a truncated, empty or foreign file
        raise _unreadable(path, exc) from None
    if not isinstance(state, dict):
        raise UsageError(f"{path}: not a checkpoint (holds a {type(state).__name__}, not a dict)")
    return state


def rng_state() -> dict[str, Any]:
    """The torch, Python and numpy RNG states in plain form (numpy's as a dict of a str, a tensor and numbers)."""
    name, keys, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    numpy_state = {"bit_generator": str(name), "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64).copy()),
                   "pos": int(pos), "has_gauss": int(has_gauss), "cached_gaussian": float(cached_gaussian)}
    return {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": numpy_state}


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore :func:`rng_state` (also the older form with numpy's state tuple)."""
    torch.set_rng_state(state["torch"])
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    np_state = state["numpy"]
    if isinstance(np_state, dict):
        keys = np_state["keys"]
        keys = keys.numpy() if isinstance(keys, torch.Tensor) else np.asarray(keys)
        np_state = (np_state["bit_generator"], keys.astype(np.uint32), int(np_state["pos"]),
                    int(np_state["has_gauss"]), float(np_state["cached_gaussian"]))
    np.random.set_state(np_state)

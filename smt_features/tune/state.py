"""The resume file of ``smt-tune``: ``iterations.json``, every finished step, rewritten atomically."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from nmt.core.io import atomic_write
from smt_features.tune.options import TuneConfig

STATE_FILE = "iterations.json"
STATE_VERSION = 1
#: options that must not change when a run is resumed
RESUME_KEYS = ("moses_ini", "dev_src", "dev_ref", "nbest", "seed", "restarts", "random_directions", "ref_length",
               "fixed", "ranges", "clip_to_ranges", "optimizer",
               "historic_interpolation")


class RunState:
    """``iterations.json``: the options and one record per iteration (its weights, decode and MERT run)."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    @classmethod
    def load_or_new(cls, path: Path, cfg: TuneConfig) -> "RunState":
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != STATE_VERSION:
                raise ValueError(f"{path}: unknown state version {data.get('version')}")
            saved = data.get("config", {})
            now = asdict(cfg)
            changed = [k for k in RESUME_KEYS if k in saved and _resume_value(k, saved[k]) != _resume_value(k, now[k])]
            if changed:
                raise ValueError(f"{path}: cannot resume, options changed since the run started: "
                                 + ", ".join(f"{k} {saved[k]!r} -> {asdict(cfg)[k]!r}" for k in changed))
            data["config"] = asdict(cfg)
            return cls(path, data)
        return cls(path, {"version": STATE_VERSION, "config": asdict(cfg), "iterations": []})

    @property
    def iterations(self) -> list[dict[str, Any]]:
        return self.data["iterations"]

    def save(self) -> None:
        with atomic_write(self.path) as fh:
            json.dump(self.data, fh, indent=1, ensure_ascii=False)
            fh.write("\n")


def _resume_value(key: str, value: Any) -> Any:
    """No ``--seed`` and ``--seed 1`` resume alike: both use seed 1 + i, and the first iteration's
    weights (random with a seed) are in the record before anything else is."""
    return 1 if key == "seed" and value is None else value

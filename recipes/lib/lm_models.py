"""Train a recipe's neural LMs one after the other in the calling process: ``nmt-lm-train``'s ``cli_main`` per
model, each with its own seed (the same checkpoints as one process per model). torch's start-up is then paid
once per recipe stage, not once per model (the optimisers, :mod:`nmt.training.optimizers`, import no
``torch._dynamo``). Used by ``ptb_lm/train_models.py`` and ``sentence_completion/train_and_answer.py``."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from nmt.cli.lm_train import cli_main as lm_train


def train_models(config: str | Path, work: Path, models: Sequence[str], *, suffix: str = "", threads: int = 2,
                 flags: Sequence[str] = ()) -> int:
    """``nmt-lm-train --config CONFIG:NAME<SUFFIX> --out-dir WORK/NAME --resume --threads N FLAGS`` for each NAME
    in order; the first non-zero exit status, or 0."""
    for name in models:
        print(f"== {name}{suffix}", flush=True)
        status = lm_train(["--config", f"{config}:{name}{suffix}", "--out-dir", str(work / name), "--resume",
                           "--threads", str(threads), *flags])
        if status:
            return status
    return 0


def split_at_dashes(argv: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """``(options, rest)``: the script's own options, and what follows the first ``--`` (passed on as it is)."""
    given = list(sys.argv[1:] if argv is None else argv)
    cut = given.index("--") if "--" in given else len(given)
    return given[:cut], given[cut + 1:]


def training_parser(description: str) -> argparse.ArgumentParser:
    """The options of a script that trains a recipe's LMs with :func:`train_models` (``--config``, ``--work``,
    ``--models``, ``--suffix``, ``--threads``); the script adds its own."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--config", required=True, help="the recipe's config.yaml (a section per model)")
    p.add_argument("--work", required=True, type=Path, help="the models go to WORK/NAME")
    p.add_argument("--models", required=True, help="the config sections to train, in order (space-separated)")
    p.add_argument("--suffix", default="", help="appended to each section name (-quick)")
    p.add_argument("--threads", type=int, default=2)
    return p

"""Train the recipe's neural LMs one after the other, then evaluate them, all in one process: torch's start-up
(2.6-3.4 s on a slow 2-core CPU) and its optimiser's (torch._dynamo, ~2 s) are paid once, not once per model
and again per evaluation.

    recipes/ptb_lm/train_models.py --config CFG --work DIR --models "NAME ..." [--suffix=-quick] [--threads N]
                                   [-- further nmt-lm-train flags]

For each NAME: ``nmt-lm-train --config CFG:NAME<SUFFIX> --out-dir DIR/NAME --resume --threads N [flags]`` (its
own seed: the same checkpoints as one process per model); then ``evaluate.py``'s nmt-lm-eval calls of every
model. Stops at the first failing call with its exit status.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evaluate import main as evaluate_models  # recipes/ptb_lm/evaluate.py, beside this script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from lm_models import train_models  # noqa: E402  (recipes/lib/lm_models.py)


def main(argv: list[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    cut = given.index("--") if "--" in given else len(given)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="the recipe's config.yaml (a section per model)")
    p.add_argument("--work", required=True, type=Path, help="the models go to WORK/NAME")
    p.add_argument("--models", required=True, help="the config sections to train, in order (space-separated)")
    p.add_argument("--suffix", default="", help="appended to each section name (-quick)")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(given[:cut])
    train_flags = given[cut + 1:]
    models = args.models.split()
    status = train_models(args.config, args.work, models, suffix=args.suffix, threads=args.threads,
                          flags=train_flags)
    if status:
        return status
    pairs = [flag for name in models for flag in ("--model", str(args.work / name), "--name", name)]
    return evaluate_models([*pairs, "--threads", str(args.threads)]) if models else 0


if __name__ == "__main__":
    sys.exit(main())

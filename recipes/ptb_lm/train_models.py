"""Train the recipe's neural LMs one after the other, then evaluate them, all in one process: torch's start-up
(2.6-3.4 s on a slow 2-core CPU) is paid once, not once per model and again per evaluation.

    recipes/ptb_lm/train_models.py --config CFG --work DIR --models "NAME ..." [--suffix=-quick] [--threads N]
                                   [-- further nmt-lm-train flags]

For each NAME: ``nmt-lm-train --config CFG:NAME<SUFFIX> --out-dir DIR/NAME --resume --threads N [flags]`` (its
own seed: the same checkpoints as one process per model); then ``evaluate.py``'s nmt-lm-eval calls of every
model. Stops at the first failing call with its exit status.
"""
from __future__ import annotations

import sys
from pathlib import Path

from evaluate import main as evaluate_models  # recipes/ptb_lm/evaluate.py, beside this script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from lm_models import split_at_dashes, train_models, training_parser  # noqa: E402  (recipes/lib/lm_models.py)


def main(argv: list[str] | None = None) -> int:
    options, train_flags = split_at_dashes(argv)
    args = training_parser(__doc__.split("\n\n")[0]).parse_args(options)
    models = args.models.split()
    status = train_models(args.config, args.work, models, suffix=args.suffix, threads=args.threads,
                          flags=train_flags)
    if status:
        return status
    pairs = [flag for name in models for flag in ("--model", str(args.work / name), "--name", name)]
    return evaluate_models([*pairs, "--threads", str(args.threads)]) if models else 0


if __name__ == "__main__":
    sys.exit(main())

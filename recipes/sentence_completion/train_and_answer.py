"""Train the recipe's neural LMs, then answer the questions with KenLM and them, all in one process: torch
starts once (as ``ptb_lm/train_models.py``), not once per model and again for ``answer.py``.

    recipes/sentence_completion/train_and_answer.py --config CFG --work DIR --models "NAME ..." [--suffix=-quick]
        [--threads N] --train-text TRAIN --valid-text VALID [--max-epochs N] -- ANSWER.PY FLAGS

Each NAME: ``nmt-lm-train --config CFG:NAME<SUFFIX> --out-dir DIR/NAME --resume --threads N --train TRAIN
--valid VALID [--max-epochs N]`` (recipes/lib/lm_models.py); then ``answer.py``'s ``main`` with ANSWER.PY FLAGS
(``--questions``, ``--answers``, ``--model kenlm-5gram=…``, …) followed by ``--model NAME=DIR/NAME`` of each
trained model, in order. Stops at the first failing step with its exit status.
"""
from __future__ import annotations

import sys
from pathlib import Path

from answer import main as answer  # recipes/sentence_completion/answer.py, beside this script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from lm_models import split_at_dashes, train_models, training_parser  # noqa: E402  (recipes/lib/lm_models.py)


def main(argv: list[str] | None = None) -> int:
    options, answer_flags = split_at_dashes(argv)
    p = training_parser(__doc__.split("\n\n")[0])
    p.add_argument("--train-text", required=True, help="the training sentences (nmt-lm-train --train)")
    p.add_argument("--valid-text", required=True, help="the validation sentences (nmt-lm-train --valid)")
    p.add_argument("--max-epochs", type=int, help="nmt-lm-train --max-epochs (default: the config's)")
    args = p.parse_args(options)
    models = args.models.split()
    flags = ["--train", args.train_text, "--valid", args.valid_text]
    if args.max_epochs is not None:
        flags += ["--max-epochs", str(args.max_epochs)]
    status = train_models(args.config, args.work, models, suffix=args.suffix, threads=args.threads, flags=flags)
    if status:
        return status
    print("== answering the questions", flush=True)
    trained = [flag for name in models for flag in ("--model", f"{name}={args.work / name}")]
    return answer([*answer_flags, *trained])


if __name__ == "__main__":
    sys.exit(main())

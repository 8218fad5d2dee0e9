"""``nmt-lm-eval``: perplexity of a text with a trained neural LM, by the project's one accounting.

The accounting (N = words + one ``</s>`` per line, natural logs, OOVs as ``<unk>``, the regimes) is
:mod:`nmt.lm.evaluation`'s.
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command
from nmt.lm.evaluation import LMEvalConfig, evaluate_text


@command("nmt-lm-eval")
def cli_main(argv: list[str] | None = None) -> int:
    evaluate_text(C.parse(LMEvalConfig, argv, description=__doc__))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

"""``nmt-lm-score``: ln p(line) of each line with a trained neural LM, one value per line (natural log).

The value includes the ``</s>`` that ends the line (``<s>`` is context only);
an empty line gets ln p(</s> | <s>). Every input line gives exactly one output
line, in order. By default each line is scored independently from a fresh state
(what an n-best feature needs); ``--regime stream`` carries the state across
lines. ``--per-token`` appends a tab and the ln p of every word and of ``</s>``.
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command
from nmt.lm.evaluation import LMScoreConfig, score_lines


@command("nmt-lm-score")
def cli_main(argv: list[str] | None = None) -> int:
    score_lines(C.parse(LMScoreConfig, argv, description=__doc__))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

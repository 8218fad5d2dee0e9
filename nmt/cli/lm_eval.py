"""``nmt-lm-eval``: perplexity of a text with a trained neural LM, by the project's one accounting.

N = words + one ``</s>`` per line (``<s>`` not counted), natural logs, OOVs
included (scored as ``<unk>``); the same N as ``smt-kenlm eval``. An empty
line is a sentence of zero words: it is scored as just ``</s>`` and counts one
token. ``--regime sentence`` scores each line from a fresh state (first context
``<s>``; ``</s>`` for a stream-trained model); ``--regime stream`` reads the
file as one stream with the state carried across lines (cross-sentence context:
not comparable with sentence-level figures such as KenLM's).
"""
from __future__ import annotations

import sys

from nmt import config as C
from nmt.errors import command
from nmt.lm_evaluation import LMEvalConfig, evaluate_text


@command("nmt-lm-eval")
def cli_main(argv: list[str] | None = None) -> int:
    evaluate_text(C.parse(LMEvalConfig, argv, description=__doc__))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

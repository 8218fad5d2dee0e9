"""``nmt-evaluate``: BLEU and chrF (sacreBLEU) of detokenised output against raw references."""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command
from nmt.translation.evaluate import EvaluateConfig, evaluate_files


@command("nmt-evaluate")
def cli_main(argv: list[str] | None = None) -> int:
    evaluate_files(C.parse(EvaluateConfig, argv, description=__doc__))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

"""``smt-inspect-phrases``: a phrase table's best targets beside the RNN Encoder–Decoder's (Cho et al. 2014, Tables 2–3).

Example::

    smt-inspect-phrases --table work/smt/model/phrase-table.gz --model work/model \\
        --sources phrases.txt --top 10 --generate 5 --output inspect.md

See :mod:`smt_features.neural.inspect_phrases` for what the Markdown report holds.
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.io import write_output
from nmt.core.errors import command
from nmt.core.logs import setup_logging

from smt_features.neural.inspect_phrases import InspectConfig, inspect_phrases


@command("smt-inspect-phrases")
def cli_main(argv: list[str] | None = None) -> int:
    """Entry point of ``smt-inspect-phrases``."""
    cfg = C.parse(InspectConfig, argv, description=__doc__.splitlines()[0])
    setup_logging()
    text = inspect_phrases(cfg)  # bad input: exit 2 with FILE:LINE via @command
    write_output(cfg.output, text)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

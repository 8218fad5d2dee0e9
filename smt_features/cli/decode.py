"""``smt-decode``: translate tokenized text with the phrase-based stack decoder.

Example::

    smt-decode --moses-ini work/smt/moses.ini --input test.tok.en --output out.tok.fr \\
        --n-best-list nbest.txt 100 distinct --threads 2

``-f FILE`` is Moses's spelling of ``--moses-ini FILE``; ``--config YAML[:SECTION]``
gives the options as a YAML file. The run is :mod:`smt_features.decode.run`.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence

from nmt.core.errors import command
from nmt.core.logs import setup_logging
from smt_features.decode.run import parse_decode_args, run


@command("smt-decode")
def cli_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``smt-decode``."""
    cfg, nbest = parse_decode_args(argv, description=__doc__.split("\n\n")[0])
    setup_logging()
    run(cfg, nbest)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(cli_main())

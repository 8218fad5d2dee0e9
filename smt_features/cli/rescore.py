"""``smt-rescore``: append RNN Encoder–Decoder scores to every pair of a Moses phrase table.

Example::

    smt-rescore --table work/smt/model/phrase-table.gz --model work/model \\
        --reverse-model work/model-rev --wp-column --output work/smt/model/phrase-table.rnn.gz

Appends ``p(e|f)`` (and ``p(f|e)``, and ``exp(-unknown words)``) as
probabilities clamped into ``[--floor, 1]``; see ``docs/rescore.md``.
"""
from __future__ import annotations

import os
import sys

from nmt.core import config as C
from nmt.core.errors import command
from nmt.core.logs import setup_logging

from smt_features.neural.rescore import rescore_table
from smt_features.neural.rescore_config import RescoreConfig


@command("smt-rescore")
def cli_main(argv: list[str] | None = None) -> int:
    """Entry point of ``smt-rescore``."""
    # torch is imported later (lazily): idle OpenMP threads then sleep instead of spinning, which matters
    # on a machine shared with other jobs (3x on a loaded 2-core box); set OMP_WAIT_POLICY to override.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    cfg = C.parse(RescoreConfig, argv, description=__doc__.splitlines()[0])
    setup_logging(verbose=True)
    rescore_table(cfg)  # bad input (PhraseTableError FILE:LINE, a refused output, a missing file): exit 2
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

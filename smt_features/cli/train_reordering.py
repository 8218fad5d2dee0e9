"""``smt-train-reordering``: Moses's msd-bidirectional-fe lexicalized reordering table from an aligned corpus.

The step is :func:`smt_features.train.reordering_step.train_reordering` (its docstring: the stages and
memory bounds; the line format is :mod:`nmt.core.formats.reordering_table`). Example::

    smt-train-reordering --src train.tok.en --tgt train.tok.fr --alignment model/aligned.grow-diag-final-and \\
        --out model/reordering-table.wbe-msd-bidirectional-fe.gz
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command
from smt_features.train.reordering_step import TrainReorderingConfig, run


@command("smt-train-reordering")
def cli_main(argv: list[str] | None = None) -> int:
    """Entry point of ``smt-train-reordering``."""
    run(C.parse(TrainReorderingConfig, argv, description=__doc__.splitlines()[0]))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

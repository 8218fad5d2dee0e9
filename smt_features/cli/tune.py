"""``smt-tune``: MERT (or kbMIRA, PRO) of a moses.ini's weights on a dev set, the loop of Moses's ``mert-moses.pl``.

The loop is :mod:`smt_features.tune.loop`. Example::

    smt-tune --moses-ini model/moses.ini --dev-src data/val.tok.en --dev-ref data/val.tok.fr \\
        --work-dir work/tune --nbest 100 --threads 2
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command
from nmt.core.logs import setup_logging
from smt_features.tune.loop import tune
from smt_features.tune.options import TuneConfig


@command("smt-tune")
def cli_main(argv: list[str] | None = None) -> int:
    """Entry point of ``smt-tune``."""
    cfg = C.parse(TuneConfig, argv, description=__doc__.splitlines()[0])
    setup_logging(verbose=True, fmt="%(message)s")  # a no-op where logging is already set up
    try:
        result = tune(cfg)
    except KeyboardInterrupt:
        print("smt-tune: interrupted; rerun with --resume to continue", file=sys.stderr)
        return 130
    print(f"smt-tune: {result.iterations} iteration(s), {result.stop_reason}; wrote {result.tuned_ini}")
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

"""``smt-serve``: serve a finished system over HTTP: JSON (``POST /translate``), Moses-compatible XML-RPC
(``POST /RPC2``, method ``translate``), a web page (``GET /``), ``GET /health`` and ``GET /info``.

Examples::

    smt-serve --work work/experiment/multi30k --system +all+RNNsearch --run 1 --port 8080
    smt-serve --moses-ini tune.1/moses.tuned.ini --truecase-model en=data/truecase-model.en fr=data/truecase-model.fr

Raw text in, raw text out; the run is :mod:`smt_features.serve.server`, the routes :mod:`smt_features.serve.app`
(``docs/serve.md``).
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command
from nmt.core.logs import setup_logging
from smt_features.serve.server import ServeConfig, run


@command("smt-serve")
def cli_main(argv: list[str] | None = None) -> int:
    """Entry point of ``smt-serve``."""
    cfg = C.parse(ServeConfig, argv, description=__doc__.split("\n\n")[0])
    setup_logging(cfg.verbose)
    return run(cfg)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(cli_main())

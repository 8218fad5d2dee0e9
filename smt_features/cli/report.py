"""``smt-report``: ``report.md`` + ``report.html`` + PNG figures from an experiment folder.

See :mod:`smt_features.report.build` (and ``docs/rerank_report.md``) for the input layout; every piece
is optional and a missing one leaves its section out with a note.
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command
from smt_features.report.build import ReportConfig, run_report


@command("smt-report")
def cli_main(argv: list[str] | None = None) -> int:
    """Entry point of ``smt-report``."""
    return run_report(C.parse(ReportConfig, argv, description=__doc__))


if __name__ == "__main__":
    sys.exit(cli_main())

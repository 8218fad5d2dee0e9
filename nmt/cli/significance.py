"""``nmt-significance``: is a system better than the baseline over its optimiser runs? Paired approximate
randomization (or bootstrap) with sacreBLEU on the runs joined (Clark et al., 2011)."""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command
from nmt.translation.significance import SignificanceConfig, significance_files


@command("nmt-significance")
def cli_main(argv: list[str] | None = None) -> int:
    significance_files(C.parse(SignificanceConfig, argv, description=__doc__))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

"""``nmt-average-checkpoints``: one checkpoint with the mean parameters of several saved ones (e.g. the ends of
epochs kept by ``nmt-train --keep-epochs``); see :mod:`nmt.training.average_checkpoints`."""
from __future__ import annotations

import json
import sys

from nmt.core import config as C
from nmt.core.errors import command
from nmt.training.average_checkpoints import AverageConfig, average_checkpoints


@command("nmt-average-checkpoints")
def cli_main(argv: list[str] | None = None) -> int:
    print(json.dumps(average_checkpoints(C.parse(AverageConfig, argv, description=__doc__)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

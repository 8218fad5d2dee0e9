"""``smt-rescore-sharded``: run ``smt-rescore`` as N line-range shards and merge them in order.

Takes ``smt-rescore``'s options (same flags, same ``--config YAML[:SECTION]`` keys) plus ``--shards N``,
``--launcher``, ``--keep-parts`` and ``--dry-run``; see :mod:`smt_features.neural.sharded`. Example::

    smt-rescore-sharded --shards 4 --output pt.rnn.gz --table pt.gz --model work/model --threads 1 --resume
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command

from smt_features.neural.rescore_config import RescoreConfig
from smt_features.neural.sharded import LaunchConfig, rescore_sharded


@command("smt-rescore-sharded")
def cli_main(argv: list[str] | None = None) -> int:
    """Entry point of ``smt-rescore-sharded``."""
    args, yaml_values = C.parse_args([LaunchConfig, RescoreConfig], argv, description=__doc__.splitlines()[0])
    launch = C.build(LaunchConfig, args, yaml_values, source=str(args.config))
    cfg = C.build(RescoreConfig, args, yaml_values, source=str(args.config))
    rescore_sharded(cfg, launch)  # bad input (a shard's FILE:LINE, a refused output): exit 2 via @command
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

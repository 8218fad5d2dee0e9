"""``nmt-synthetic-corpus``: write a seeded synthetic parallel corpus (Zipfian words, gold alignment), streamed."""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command
from nmt.data.synthetic import SyntheticConfig, write_corpus


@command("nmt-synthetic-corpus")
def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(SyntheticConfig, argv, description=__doc__)
    for role, path in write_corpus(cfg).items():
        print(f"{role}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

"""``nmt-combine-enfr``: the combined real En–Fr corpus (Multi30k + Tatoeba + Europarl) as plain split files."""
from __future__ import annotations

import json
import sys

from nmt.core import config as C
from nmt.data.combine_corpus import CombineConfig, combine
from nmt.core.errors import command


@command("nmt-combine-enfr")
def cli_main(argv: list[str] | None = None) -> int:
    print(json.dumps(combine(C.parse(CombineConfig, argv, description=__doc__)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

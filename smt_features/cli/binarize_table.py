"""``smt-binarize-table``: write the binarized, memory-mapped form of a Moses phrase table (``T.gz`` → ``T.gz.bin``).

Example: ``smt-binarize-table --table work/model/phrase-table.gz`` (writes ``phrase-table.gz.bin``
beside it; ``smt-decode`` then uses it instead of reading the table into memory). The moses.ini
keeps ``path=phrase-table.gz``. See :mod:`smt_features.model.binary_table` and docs/decoder.md.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from nmt.core import config as C
from nmt.core.errors import command, refuse_overwriting_inputs
from smt_features.model.binary_table import binarize_table, sidecar_path


@dataclass
class BinarizeTableConfig:
    table: str = C.field("", help="Moses phrase table (plain or .gz)", required=True)
    output: str = C.field("", help="binarized table ('' = TABLE.bin, the sidecar smt-decode looks for)")
    progress: bool = C.field(True, help="show a tqdm progress bar on stderr")


@command("smt-binarize-table")
def cli_main(argv: list[str] | None = None) -> int:
    args, values = C.parse_args([BinarizeTableConfig], argv, __doc__.splitlines()[0])
    cfg = C.build(BinarizeTableConfig, args, values)
    output = cfg.output or str(sidecar_path(cfg.table))
    refuse_overwriting_inputs({"--output": output}, {"--table": cfg.table})
    h = binarize_table(cfg.table, output, progress=cfg.progress)
    print(f"smt-binarize-table: {output}: {h['num_pairs']} pairs, {h['num_groups']} source phrases, "
          f"{h['num_scores']} scores", file=sys.stderr)
    return 0

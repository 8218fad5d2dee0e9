"""``smt-filter-table``: keep the lines of a Moses phrase table whose source phrase occurs in the input(s).

Example: ``smt-filter-table --table model/phrase-table.gz --input dev.tok.en test.tok.en
--output filtered/phrase-table.gz`` (Moses's ``filter-model-given-input.pl``: lines byte-identical,
same order). See :mod:`smt_features.model.table_filter` and docs/decoder.md.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from nmt.core import config as C
from nmt.core.errors import command, refuse_overwriting_inputs
from smt_features.model.table_filter import filter_table


@dataclass
class FilterTableConfig:
    table: str = C.field("", help="Moses phrase table (plain or .gz)", required=True)
    input: list[str] = C.field([], help="tokenized input file(s), one sentence per line", required=True)
    output: str = C.field("", help="filtered table (gzip when it ends in .gz)", required=True)
    max_phrase_length: int = C.field(7, help="longest input phrase looked for, in words (0 = any length)")
    progress: bool = C.field(True, help="show a tqdm progress bar on stderr")


@command("smt-filter-table")
def cli_main(argv: list[str] | None = None) -> int:
    args, values = C.parse_args([FilterTableConfig], argv, __doc__.splitlines()[0])
    cfg = C.build(FilterTableConfig, args, values)
    refuse_overwriting_inputs({"--output": cfg.output}, {"--table": cfg.table, **{
        f"--input {p}": p for p in cfg.input}})
    s = filter_table(cfg.table, cfg.input, cfg.output, max_phrase_length=cfg.max_phrase_length,
                     progress=cfg.progress)
    print(f"smt-filter-table: kept {s.lines_kept} of {s.lines_read} lines ({s.input_phrases} input phrases)",
          file=sys.stderr)
    return 0

"""``smt-binarize-table``: write the binarized, memory-mapped form of a Moses phrase table (``T.gz`` → ``T.gz.bin``).

Example: ``smt-binarize-table --table work/model/phrase-table.gz`` (writes ``phrase-table.gz.bin``
beside it; ``smt-decode`` then uses it instead of reading the table into memory). The moses.ini
keeps ``path=phrase-table.gz``. See :mod:`smt_features.model.binary_table` and docs/decoder.md.

``smt-binarize-table --table T --check`` writes nothing: it reads the whole sidecar against the
checksum in its header and checks that it is current for ``T`` (exit status 2 naming the file when
not). ``smt-decode`` checks only the header and the table's size and content stamp when it opens a
sidecar (hashing the whole sidecar would cost start-up time), so run ``--check`` after copying one.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from nmt.core import config as C
from nmt.core.errors import command, refuse_overwriting_inputs
from smt_features.model.binary_table import binarize_table, check_current, read_header, sidecar_path, verify_payload


@dataclass
class BinarizeTableConfig:
    table: str = C.field("", help="Moses phrase table (plain or .gz)", required=True)
    output: str = C.field("", help="binarized table ('' = TABLE.bin, the sidecar smt-decode looks for)")
    progress: bool = C.field(True, help="show a tqdm progress bar on stderr")
    check: bool = C.field(False, help="write nothing; verify the sidecar (OUTPUT, default TABLE.bin): read it whole "
                                      "against the checksum in its header (smt-decode does not, to start fast: "
                                      "it checks only the header and the table's size and content stamp) and "
                                      "check it is current for TABLE; exit status 2 naming the file when not")


@command("smt-binarize-table")
def cli_main(argv: list[str] | None = None) -> int:
    args, values = C.parse_args([BinarizeTableConfig], argv, __doc__.splitlines()[0])
    cfg = C.build(BinarizeTableConfig, args, values)
    output = cfg.output or str(sidecar_path(cfg.table))
    if cfg.check:
        header = read_header(output)
        verify_payload(output, header)
        check_current(output, cfg.table, header)
        print(f"smt-binarize-table: {output}: OK ({header['num_pairs']} pairs, checksum and source stamp match "
              f"{cfg.table})", file=sys.stderr)
        return 0
    refuse_overwriting_inputs({"--output": output}, {"--table": cfg.table})
    h = binarize_table(cfg.table, output, progress=cfg.progress)
    print(f"smt-binarize-table: {output}: {h['num_pairs']} pairs, {h['num_groups']} source phrases, "
          f"{h['num_scores']} scores", file=sys.stderr)
    return 0

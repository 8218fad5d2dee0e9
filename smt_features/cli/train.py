"""``smt-train-phrases``: word alignment (eflomal), symmetrization, phrase extraction and scoring.

The step is :func:`smt_features.train.phrase_model.train_phrases` (its docstring: outputs, input format);
with ``--lm`` the command also writes ``OUT_DIR/moses.ini``. Example::

    smt-train-phrases --src train.tok.en --tgt train.tok.fr --out-dir work/smt/model [--config f.yaml:SECTION]
"""
from __future__ import annotations

import sys
from pathlib import Path

from nmt.core import config as C
from nmt.core.errors import command
from nmt.core.formats.reordering_table import TABLE_NAME
from nmt.core.logs import setup_logging
from smt_features.model.moses_ini_build import default_config
from smt_features.train.phrase_model import TrainPhrasesConfig, train_phrases


@command("smt-train-phrases")
def cli_main(argv: list[str] | None = None) -> int:
    """Entry point of ``smt-train-phrases``."""
    cfg = C.parse(TrainPhrasesConfig, argv, description=__doc__.splitlines()[0])
    setup_logging(verbose=True)
    train_phrases(cfg)
    if cfg.lm:
        out = Path(cfg.out_dir)
        reordering = str((out / TABLE_NAME).resolve()) if cfg.reordering else None
        default_config(str((out / "phrase-table.gz").resolve()), str(Path(cfg.lm).resolve()),
                       lm_order=cfg.lm_order, reordering_table=reordering).write(out / "moses.ini")
        print(f"[smt-train-phrases] wrote {out / 'moses.ini'} (train-model.perl's default weights)")
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

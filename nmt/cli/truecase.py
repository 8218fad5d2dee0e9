"""Console script ``nmt-truecase``: Moses truecasing — train a model, truecase a file, detruecase a file.

    nmt-truecase --train train.tok.en --model truecase-model.en
    nmt-truecase --model truecase-model.en --input test.tok.en --output test.tc.en
    nmt-truecase --detruecase --input hyp.tc.fr --output hyp.tok.fr

The model is Moses's ``train-truecaser.perl`` format (see :mod:`nmt.data.truecase`).
"""
from __future__ import annotations

import json
import sys

from nmt.core import config as C
from nmt.data.truecase_run import TruecaseConfig, run
from nmt.core.errors import command


@command("nmt-truecase")
def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(TruecaseConfig, argv, description=__doc__.splitlines()[0])
    print(json.dumps(run(cfg)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

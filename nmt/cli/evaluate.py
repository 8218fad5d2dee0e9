"""``nmt-evaluate``: BLEU and chrF (sacreBLEU) of detokenised output against raw references."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

from nmt import config as C
from nmt.data.io import read_lines
from nmt.evaluate import evaluate


@dataclass
class EvaluateConfig:
    hyp: str = C.field("", help="detokenised system output, one sentence per line")
    ref: str = C.field("", help="raw reference file (plain or .gz)")
    name: str = C.field("", help="label printed before the scores")
    json: str | None = C.field(None, help="also write the scores and signatures to this JSON file")


def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(EvaluateConfig, argv, description=__doc__)
    if not cfg.hyp or not cfg.ref:
        raise SystemExit("nmt-evaluate: --hyp and --ref are required")
    result = evaluate(read_lines(cfg.hyp, allow_empty=True), read_lines(cfg.ref))
    print(result.format(cfg.name))
    if cfg.json:
        from nmt.data.io import atomic_write

        with atomic_write(cfg.json) as fh:
            json.dump(asdict(result), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

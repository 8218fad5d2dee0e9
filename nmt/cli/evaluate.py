"""``nmt-evaluate``: BLEU and chrF (sacreBLEU) of detokenised output against raw references."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

from nmt import config as C
from nmt.data.io import read_lines
from nmt.evaluate import evaluate
from nmt.errors import command


@dataclass
class EvaluateConfig:
    hyp: str = C.field("", help="detokenised system output, one sentence per line")
    ref: str = C.field("", help="raw reference file (plain or .gz)")
    detokenize: str = C.field("", help="LANG: the hypothesis is Moses-tokenized (e.g. smt-decode output); "
                                       "detokenize it as LANG (sacremoses, Moses entities unescaped) before "
                                       "scoring; written to --detok-out if given")
    detok_out: str = C.field("", help="with --detokenize: also write the detokenized hypothesis here")
    name: str = C.field("", help="label printed before the scores")
    json: str | None = C.field(None, help="also write the scores and signatures to this JSON file")


@command("nmt-evaluate")
def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(EvaluateConfig, argv, description=__doc__)
    if not cfg.hyp or not cfg.ref:
        raise SystemExit("nmt-evaluate: --hyp and --ref are required")
    hyps = read_lines(cfg.hyp, allow_empty=True)
    if cfg.detokenize:
        from nmt.data.io import write_output
        from nmt.data.tokenize import MosesTokenizer

        detok = MosesTokenizer(cfg.detokenize)
        hyps = [detok.detokenize(h.split()) for h in hyps]
        if cfg.detok_out:
            write_output(cfg.detok_out, "".join(h + "\n" for h in hyps))
    elif cfg.detok_out:
        raise SystemExit("nmt-evaluate: --detok-out needs --detokenize LANG")
    result = evaluate(hyps, read_lines(cfg.ref))
    print(result.format(cfg.name))
    if cfg.json:
        from nmt.data.io import atomic_write

        with atomic_write(cfg.json) as fh:
            json.dump(asdict(result), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

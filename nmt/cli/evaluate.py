"""``nmt-evaluate``: BLEU and chrF (sacreBLEU) of detokenised output against raw references."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

from nmt import config as C
from nmt.data.io import DataError, read_lines
from nmt.evaluate import evaluate
from nmt.errors import command, refuse_overwriting_inputs


@dataclass
class EvaluateConfig:
    hyp: str = C.field("", help="detokenised system output, one sentence per line", required=True)
    ref: str = C.field("", help="raw reference file (plain or .gz)", required=True)
    detokenize: str = C.field("", help="LANG: the hypothesis is Moses-tokenized (e.g. smt-decode output); "
                                       "detokenize it as LANG (sacremoses, Moses entities unescaped) before "
                                       "scoring; written to --detok-out if given")
    detok_out: str = C.field("", help="with --detokenize: also write the detokenized hypothesis here")
    name: str = C.field("", help="label printed before the scores")
    json: str | None = C.field(None, help="also write the scores and signatures to this JSON file")


@command("nmt-evaluate")
def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(EvaluateConfig, argv, description=__doc__)
    if cfg.detok_out and not cfg.detokenize:
        raise SystemExit("nmt-evaluate: --detok-out needs --detokenize LANG")
    refuse_overwriting_inputs(outputs={"--json": cfg.json, "--detok-out": cfg.detok_out},
                              inputs={"--hyp": cfg.hyp, "--ref": cfg.ref})
    if cfg.json and cfg.detok_out:
        refuse_overwriting_inputs(outputs={"--json": cfg.json}, inputs={"--detok-out": cfg.detok_out})
    hyps = read_lines(cfg.hyp, allow_empty=True)  # an empty line is an (empty) translation
    refs = read_lines(cfg.ref)
    if not hyps and not refs:
        raise DataError(f"{cfg.hyp}: empty file, and so is {cfg.ref} (nothing to evaluate)")
    if len(hyps) != len(refs):
        shorter = cfg.hyp if len(hyps) < len(refs) else cfg.ref
        raise DataError(shorter, min(len(hyps), len(refs)) + 1,
                        f"{len(hyps)} hypotheses in {cfg.hyp} but {len(refs)} references in {cfg.ref} "
                        "(one line each per sentence)")
    if cfg.detokenize:
        from nmt.data.tokenize import MosesTokenizer

        detok = MosesTokenizer(cfg.detokenize)
        hyps = [detok.detokenize(h.split()) for h in hyps]
    result = evaluate(hyps, refs)
    if cfg.detok_out:
        from nmt.data.io import write_output

        write_output(cfg.detok_out, "".join(h + "\n" for h in hyps))
    print(result.format(cfg.name))
    if cfg.json:
        from nmt.data.io import atomic_write

        with atomic_write(cfg.json) as fh:
            json.dump(asdict(result), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

"""``nmt-score``: ln p(target | source) of each given pair with a trained encoder–decoder, one per line."""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import torch

from nmt.core import config as C
from nmt.core.io import DataError, read_parallel, write_output
from nmt.translation.model_io import load_translation_model
from nmt.scoring import PairScorer
from nmt.core.errors import command, refuse_overwriting_inputs
from nmt.core.paths import CHECKPOINT_HELP


@dataclass
class ScoreConfig:
    model: str = C.field("work/model", help="model folder (or checkpoint file) written by nmt-train")
    checkpoint: str = C.field("auto", help=CHECKPOINT_HELP)
    src: str = C.field("", help="tokenized source sentences/phrases, one per line", required=True)
    tgt: str = C.field("", help="tokenized target sentences/phrases, line-aligned with --src", required=True)
    output: str = C.field("-", help="one score per line ('-' = stdout)")
    probabilities: bool = C.field(False, help="print p(target | source) instead of the natural log")
    max_tokens: int = C.field(4000, help="padded target tokens per batch")
    threads: int = C.field(2, help="torch threads")


@command("nmt-score")
def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(ScoreConfig, argv, description=__doc__)
    refuse_overwriting_inputs(outputs={"--output": cfg.output},
                              inputs={"--src": cfg.src, "--tgt": cfg.tgt, "--model": cfg.model})
    torch.set_num_threads(cfg.threads)
    pairs = read_parallel(cfg.src, cfg.tgt)
    if not pairs:
        raise DataError(f"{cfg.src}: empty file, and so is {cfg.tgt} (no pairs to score)")
    loaded = load_translation_model(cfg.model, which=cfg.checkpoint)
    scorer = PairScorer(loaded.model, loaded.src_vocab, loaded.tgt_vocab, max_tokens=cfg.max_tokens)
    scores = scorer.score_pairs([s.split() for s, _ in pairs], [t.split() for _, t in pairs])
    values = [math.exp(s.log_prob) if cfg.probabilities else s.log_prob for s in scores]
    text = "".join(f"{v:.6g}\n" if cfg.probabilities else f"{v:.6f}\n" for v in values)
    write_output(cfg.output, text)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

"""``nmt-lm-score``: ln p(line) of each line with a trained neural LM, one value per line (natural log).

The value includes the ``</s>`` that ends the line (``<s>`` is context only);
an empty line gets ln p(</s> | <s>). Every input line gives exactly one output
line, in order. By default each line is scored independently from a fresh state
(what an n-best feature needs); ``--regime stream`` carries the state across
lines. ``--per-token`` appends a tab and the ln p of every word and of ``</s>``.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import torch

from nmt import config as C
from nmt.data.io import write_output
from nmt.lm_data import REGIMES, encode_all, read_sentences
from nmt.lm_loading import load_language_model
from nmt.lm_scoring import token_logprobs
from nmt.errors import command, refuse_overwriting_inputs
from nmt.run_checks import require_lines


@dataclass
class LMScoreConfig:
    model: str = C.field("work/lm", help="model folder (or checkpoint file) written by nmt-lm-train")
    checkpoint: str = C.field("auto", help="which checkpoint of a model folder: best, last or auto (best if present)")
    vocab: str | None = C.field(None, help="vocabulary (default: the model folder's vocab.tsv)")
    text: str = C.field("", help="tokenized sentences, one per line (plain or .gz)", required=True)
    output: str = C.field("-", help="one score per line ('-' = stdout)")
    regime: str = C.field("sentence", help="'sentence': every line from a fresh state; 'stream': the lines as one "
                                           "stream, state carried")
    per_token: bool = C.field(False, help="after the total, a tab and the ln p of each word and of </s>")
    window: int = C.field(256, help="stream regime: tokens per forward call (does not change the result)")
    max_tokens: int = C.field(2000, help="sentence regime: padded tokens per batch")
    threads: int = C.field(2, help="torch intra-op threads")


@command("nmt-lm-score")
def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(LMScoreConfig, argv, description=__doc__)
    if cfg.regime not in REGIMES:
        raise SystemExit(f"nmt-lm-score: --regime must be one of {REGIMES}")
    refuse_overwriting_inputs(outputs={"--output": cfg.output},
                              inputs={"--text": cfg.text, "--vocab": cfg.vocab, "--model": cfg.model})
    torch.set_num_threads(cfg.threads)
    try:
        loaded = load_language_model(cfg.model, which=cfg.checkpoint, vocab=cfg.vocab)
    except ValueError as err:  # (a missing file reaches the error wrapper: PATH: No such file or directory)
        raise SystemExit(f"nmt-lm-score: {err}") from None
    words = read_sentences(cfg.text)
    require_lines(cfg.text, len(words), "sentences to score")
    logprobs = token_logprobs(loaded.model, encode_all(loaded.vocab, words), cfg.regime, start=loaded.start,
                              window=cfg.window, max_tokens=cfg.max_tokens)
    lines = []
    for lp in logprobs:
        line = f"{math.fsum(lp.tolist()):.6f}"
        if cfg.per_token:
            line += "\t" + " ".join(f"{v:.6f}" for v in lp)
        lines.append(line + "\n")
    text = "".join(lines)
    write_output(cfg.output, text)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())

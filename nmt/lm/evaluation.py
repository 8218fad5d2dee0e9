"""A text under a trained neural LM: its perplexity (nmt-lm-eval's run) and per-line ln p (nmt-lm-score's run).

N = words + one ``</s>`` per line (``<s>`` not counted), natural logs, OOVs
included (scored as ``<unk>``); the same N as ``smt-kenlm eval``. An empty
line is a sentence of zero words: it is scored as just ``</s>`` and counts one
token. ``--regime sentence`` scores each line from a fresh state (first context
``<s>``; ``</s>`` for a stream-trained model); ``--regime stream`` reads the
file as one stream with the state carried across lines (cross-sentence context:
not comparable with sentence-level figures such as KenLM's).

nmt-lm-score's value includes the ``</s>`` that ends the line (``<s>`` is context only);
an empty line gets ln p(</s> | <s>). Every input line gives exactly one output
line, in order. By default each line is scored independently from a fresh state
(what an n-best feature needs); ``--regime stream`` carries the state across
lines. ``--per-token`` appends a tab and the ln p of every word and of ``</s>``.

The entry points are :mod:`nmt.cli.lm_eval` and :mod:`nmt.cli.lm_score`.
"""
from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from nmt.core import config as C
from nmt.core.io import atomic_write, write_output
from nmt.core.errors import UsageError, refuse_overwriting_inputs
from nmt.core.paths import CHECKPOINT_HELP
from nmt.lm.data import REGIMES, UNK_NOTE, encode_all, read_sentences
from nmt.lm.loading import load_language_model
from nmt.lm.scoring import perplexity, token_logprobs
from nmt.core.perplexity import format_result
from nmt.core.run_checks import require_lines


@dataclass
class LMEvalConfig:
    model: str = C.field("work/lm", help="model folder (or checkpoint file) written by nmt-lm-train")
    checkpoint: str = C.field("auto", help=CHECKPOINT_HELP)
    vocab: str | None = C.field(None, help="vocabulary (default: the model folder's vocab.tsv); must be the one "
                                           "the model was trained with")
    text: str | None = C.field(None, help="text to score, one tokenized sentence per line (plain or .gz)")
    split: str | None = C.field(None, help="instead of --text: train, valid or test of the model's training data "
                                           "config (its --corpus or explicit files)")
    max_sentences: int | None = C.field(None, help="score only the first N lines (stated in the output)")
    regime: str | None = C.field(None, help="'sentence' (every line from a fresh state) or 'stream' (one stream, "
                                            "state carried); default: the regime the model was trained in")
    window: int = C.field(256, help="stream regime: tokens per forward call (does not change the result)")
    block: int = C.field(0, help="stream regime: start from a zero state every N tokens (fairseq-eval-lm's "
                                 "--tokens-per-sample blocks; a model trained with --carry-state false); "
                                 "0 = the state is carried across the whole text")
    max_tokens: int = C.field(2000, help="sentence regime: padded tokens per batch")
    name: str = C.field("", help="label of the result line (default: model and text names)")
    json: str | None = C.field(None, help="also write the result as JSON here")
    threads: int = C.field(2, help="torch intra-op threads")


def evaluate_text(cfg: LMEvalConfig) -> None:
    """Score ``cfg.text`` (or ``cfg.split``): the result line on stdout, the regime and speed on stderr, ``cfg.json``."""
    torch.set_num_threads(cfg.threads)
    try:
        loaded = load_language_model(cfg.model, which=cfg.checkpoint, vocab=cfg.vocab)
        if cfg.text and cfg.split:
            raise ValueError("give --text or --split, not both")
        if cfg.split:
            text = loaded.data_config().resolve_text(cfg.split)
        elif cfg.text:
            text = cfg.text
        else:
            raise ValueError("--text or --split is required")
        regime = cfg.regime or loaded.regime
        if regime not in REGIMES:
            raise ValueError(f"--regime must be one of {REGIMES}, got {regime!r}")
        if cfg.block < 0 or (cfg.block and regime != "stream"):
            raise ValueError("--block takes a positive token count and needs --regime stream")
    except ValueError as err:  # (a missing file reaches the error wrapper: PATH: No such file or directory)
        raise UsageError(str(err)) from None
    refuse_overwriting_inputs(outputs={"--json": cfg.json},
                              inputs={"--text": text, "--vocab": cfg.vocab, "--model": cfg.model})
    words = read_sentences(text, cfg.max_sentences)
    if not words and cfg.max_sentences != 0:
        require_lines(text, 0, "sentences to score")
    t0 = time.perf_counter()
    logprobs = token_logprobs(loaded.model, encode_all(loaded.vocab, words), regime, start=loaded.start,
                              window=cfg.window, max_tokens=cfg.max_tokens, block=cfg.block)
    seconds = time.perf_counter() - t0
    res = perplexity(logprobs, words, loaded.vocab)
    empty = sum(1 for w in words if not w)
    name = cfg.name or f"{loaded.config['arch']} {Path(cfg.model).name} on {Path(text).name}"
    how = ("each line from a fresh state" if regime == "sentence" else
           f"one stream, a zero state every {cfg.block} tokens" if cfg.block else
           "one stream, state carried across lines")
    limit = f", first {cfg.max_sentences} lines only" if cfg.max_sentences else ""
    print(format_result(res, name, unk=UNK_NOTE))
    print(f"  regime {regime} ({how}{limit}); {empty} empty line(s), each scored as just </s>; "
          f"{res.num_tokens / seconds:,.0f} tokens/s scoring", file=sys.stderr)
    if cfg.json:
        record = {"name": name, "model": str(loaded.path), "arch": loaded.config["arch"],
                  "num_parameters": loaded.model.num_parameters(), "text": str(text), "split": cfg.split,
                  "regime": regime, "block": cfg.block, "max_sentences": cfg.max_sentences, "empty_lines": empty, "unk": UNK_NOTE,
                  "seconds": round(seconds, 3), **res.to_dict()}
        Path(cfg.json).parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(cfg.json) as fh:
            json.dump(record, fh, indent=1)


@dataclass
class LMScoreConfig:
    model: str = C.field("work/lm", help="model folder (or checkpoint file) written by nmt-lm-train")
    checkpoint: str = C.field("auto", help=CHECKPOINT_HELP)
    vocab: str | None = C.field(None, help="vocabulary (default: the model folder's vocab.tsv)")
    text: str = C.field("", help="tokenized sentences, one per line (plain or .gz)", required=True)
    output: str = C.field("-", help="one score per line ('-' = stdout)")
    regime: str = C.field("sentence", help="'sentence': every line from a fresh state; 'stream': the lines as one "
                                           "stream, state carried")
    per_token: bool = C.field(False, help="after the total, a tab and the ln p of each word and of </s>")
    window: int = C.field(256, help="stream regime: tokens per forward call (does not change the result)")
    max_tokens: int = C.field(2000, help="sentence regime: padded tokens per batch")
    threads: int = C.field(2, help="torch intra-op threads")


def score_lines(cfg: LMScoreConfig) -> None:
    """ln p of every line of ``cfg.text`` (with ``cfg.per_token`` also of every token), one line each to ``cfg.output``."""
    if cfg.regime not in REGIMES:
        raise UsageError(f"--regime must be one of {REGIMES}")
    refuse_overwriting_inputs(outputs={"--output": cfg.output},
                              inputs={"--text": cfg.text, "--vocab": cfg.vocab, "--model": cfg.model})
    torch.set_num_threads(cfg.threads)
    try:
        loaded = load_language_model(cfg.model, which=cfg.checkpoint, vocab=cfg.vocab)
    except ValueError as err:  # (a missing file reaches the error wrapper: PATH: No such file or directory)
        raise UsageError(str(err)) from None
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

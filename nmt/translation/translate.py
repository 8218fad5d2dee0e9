"""Translating text with a trained encoder–decoder: tokenize, beam search in length-sorted batches, detokenize."""
from __future__ import annotations

import json
from dataclasses import dataclass

import torch
from tqdm import tqdm

from nmt.core import config as C
from nmt.data.batching import bucketed_batches, pad
from nmt.core.io import DataError
from nmt.data.special import BOS, EOS, EOS_TOKEN
from nmt.data.tokenize import MosesTokenizer
from nmt.core.errors import UsageError
from nmt.core.paths import CHECKPOINT_HELP
from nmt.translation.model_io import load_translation_model
from nmt.translation.quantize import quantize_output_layer
from nmt.translation.search import StepModel, beam_search


@dataclass
class TranslateConfig:
    model: str = C.field("work/model", help="model folder (or checkpoint file) written by nmt-train")
    checkpoint: str = C.field("auto", help=CHECKPOINT_HELP)
    input: str = C.field("-", help="source sentences, one per line ('-' = stdin)")
    output: str = C.field("-", help="translations, one per line ('-' = stdout); with nbest > 1 a Moses n-best list")
    src_lang: str = C.field("en", help="source language for Moses tokenization")
    tgt_lang: str = C.field("fr", help="target language for Moses detokenization")
    tokenized: bool = C.field(False, help="input is already Moses-tokenized (else it is tokenized here)")
    lowercase: bool = C.field(False, help="lowercase the input (must match how the model's data was prepared)")
    detokenize: bool = C.field(True, help="detokenize the output (Moses detokenizer)")
    beam_size: int = C.field(5, help="beam size")
    nbest: int = C.field(1, help="hypotheses per sentence")
    len_penalty: float = C.field(1.0, help="rank by log p / length**len_penalty (0 = raw log-probability)")
    batch_size: int = C.field(32, help="sentences per batch (sentences are sorted by length; output in input order)")
    max_tokens: int = C.field(0, help="also cap a batch at this many padded source tokens, sentences x longest "
                                      "incl. EOS (0 = no cap; one long sentence still makes a batch alone)")
    attention: str = C.field("", help="write the 1-best's attention matrix of each sentence to this file, JSON "
                                      "lines (models that attend, e.g. RNNsearch; refused for RNNenc)")
    max_input_len: int = C.field(1000, help="refuse an input line of more tokens than this, naming it (decoding "
                                            "runs up to 2 x length + 10 steps; 0 = no limit)")
    threads: int = C.field(2, help="torch threads")
    quantize_output: str = C.field("none", choices=["none", "int8"],
                                   help="int8: the output layer dynamically quantised to int8 (faster on a CPU; "
                                        "the 1-bests can change, docs/gru_encdec.md); none: fp32 as trained")


def tokenize_lines(cfg: TranslateConfig, lines: list[str], path: str = "input") -> list[list[str]]:
    """Tokens of each input line (Moses-tokenized unless ``cfg.tokenized``); a line longer than
    ``cfg.max_input_len`` tokens is a :class:`DataError` at ``path`` and its line number."""
    src_tok = MosesTokenizer(cfg.src_lang, lowercase=cfg.lowercase)
    tokens = [line.split() if cfg.tokenized else src_tok.tokenize(line) for line in lines]
    if cfg.max_input_len > 0:
        for line_no, toks in enumerate(tokens, start=1):
            if len(toks) > cfg.max_input_len:
                raise DataError(path, line_no, f"{len(toks)} tokens, more than --max-input-len {cfg.max_input_len}: "
                                               "split the line, or raise --max-input-len (0 = no limit)")
    return tokens


def translate_lines(cfg: TranslateConfig, lines: list[str], progress: bool = True, *,
                    tokens: list[list[str]] | None = None,
                    attention_out: list[dict] | None = None) -> list[list[tuple[str, float]]]:
    """Translate raw (or tokenized) lines; returns per line the n-best (text, ln p) pairs.

    With ``cfg.attention`` set, ``attention_out`` receives one record per line (input order):
    ``{"line", "source", "target", "attention"}``, the 1-best's rows (target tokens + EOS) over the
    source tokens + EOS."""
    for flag, value, least in (("--batch-size", cfg.batch_size, 1), ("--beam-size", cfg.beam_size, 1),
                               ("--max-tokens", cfg.max_tokens, 0)):
        if value < least:
            raise UsageError(f"{flag} {value}: must be at least {least}")
    if tokens is None:
        tokens = tokenize_lines(cfg, lines)
    torch.set_num_threads(cfg.threads)
    loaded = load_translation_model(cfg.model, which=cfg.checkpoint)
    if cfg.quantize_output == "int8":
        quantize_output_layer(loaded.model)
    if cfg.attention:
        _check_attends(loaded.model, cfg)
    tgt_tok = MosesTokenizer(cfg.tgt_lang)
    ids = [loaded.src_vocab.encode(t) for t in tokens]
    batches = bucketed_batches([len(x) + 1 for x in ids], batch_size=cfg.batch_size,
                               max_tokens=cfg.max_tokens or None, shuffle=False)
    results: list[list[tuple[str, float]]] = [[] for _ in ids]
    records: list[dict | None] = [None] * len(ids)
    for idx in tqdm(batches, desc="translate", unit="batch", disable=not progress):
        idx = idx.tolist()
        src = pad([ids[i] for i in idx], suffix=EOS)
        for i, hyps in zip(idx, beam_search(loaded.model, src, beam_size=cfg.beam_size, nbest=cfg.nbest,
                                            len_penalty=cfg.len_penalty, attention=bool(cfg.attention))):
            for hyp in hyps:
                words = loaded.tgt_vocab.decode(hyp.tokens)
                text = tgt_tok.detokenize(words) if cfg.detokenize else " ".join(words)
                results[i].append((text, hyp.log_prob))
            if cfg.attention:
                best, target = hyps[0], loaded.tgt_vocab.decode(hyps[0].tokens)
                rows = best.attn or []
                records[i] = {"line": i + 1, "source": tokens[i] + [EOS_TOKEN],
                              "target": target + [EOS_TOKEN] * (len(rows) > len(target)),
                              "attention": [[round(a, 6) for a in row] for row in rows]}
    if attention_out is not None:
        attention_out.extend(r for r in records if r is not None)
    return results


def _check_attends(model, cfg: TranslateConfig) -> None:
    """Refuse --attention for a model whose decoder state has no "attn" (e.g. RNNenc's fixed summary)."""
    if cfg.attention == cfg.output:
        raise UsageError(f"--attention {cfg.attention}: the same file as --output")
    attends = False
    if isinstance(model, StepModel):
        model.eval()
        with torch.no_grad():
            _, state = model.step(torch.tensor([BOS]), model.start(torch.tensor([[EOS]])))
        attends = "attn" in state
    if not attends:
        raise UsageError(f"--attention {cfg.attention}: the model in {cfg.model} does not attend "
                         f"({type(model).__name__}: its decoder state has no attention weights); attention "
                         "matrices come from an attention model such as RNNsearch")


def write_attention(fh, records: list[dict]) -> None:
    """One JSON object per line: the 1-best's attention matrix (rows = target tokens, columns = source tokens)."""
    for rec in records:
        fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def write_translations(fh, results: list[list[tuple[str, float]]], nbest: int) -> None:
    """One translation per line, or with ``nbest`` > 1 a Moses n-best list (``i ||| text ||| RNN= ln p ||| ln p``)."""
    for i, hyps in enumerate(results):
        if nbest == 1:
            fh.write(hyps[0][0] + "\n")
        else:
            for text, log_prob in hyps:
                fh.write(f"{i} ||| {text} ||| RNN= {log_prob:.6f} ||| {log_prob:.6f}\n")

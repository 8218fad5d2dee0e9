"""``nmt-prepare``: read a parallel corpus, tokenize it, build vocabularies.

Writes into ``out_dir`` for every split ``<split>.<lang>`` (raw text) and
``<split>.tok.<lang>`` (tokens or SentencePiece pieces, space-joined), line
by line aligned with each other; ``vocab.<lang>.tsv`` or ``sp.<lang>.model``
from the kept training pairs; ``prepare.json`` (counts) and ``config.yaml``.
Only the training split is filtered (empty pairs, length); dev and test are
kept whole and must have no empty lines.
"""
from __future__ import annotations

import itertools
import json
import logging
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmt import config as nmt_config
from nmt.config import field
from nmt.data.corpora import Split, get_split
from nmt.data.io import DataError, atomic_write, check_parallel_lengths, iter_parallel, read_tsv_pairs
from nmt.data.special import UNK
from nmt.data.tokenize import MosesTokenizer
from nmt.data.vocab import SentencePieceVocab, Vocabulary

log = logging.getLogger(__name__)

TOKENIZERS = ("moses", "sentencepiece")
Pair = tuple[str, str]


@dataclass
class PrepareConfig:
    corpus: str = field("multi30k", help="corpus name from the registry (nmt.data.corpora.list_corpora())")
    src_lang: str = field("en", help="source language")
    tgt_lang: str = field("fr", help="target language")
    train_split: str = field("train", help="training split; 'corpus:split' takes it from another corpus")
    dev_split: str = field("val", help="dev split ('corpus:split' allowed; '' for none); gives the OOV rates")
    test_splits: list[str] = field(["test_2016_flickr", "test_2017_flickr"],
                                   help="test splits ('corpus:split' allowed), never filtered")
    out_dir: str = field("work/data", help="output folder")
    lowercase: bool = field(False, help="lowercase before tokenizing (raw files stay cased)")
    max_len: int = field(80, help="drop training pairs with more tokens than this on either side")
    min_len: int = field(1, help="drop training pairs with fewer tokens than this on either side")
    src_vocab_size: int = field(15000, help="source vocabulary: most frequent words kept (plus 4 specials)")
    tgt_vocab_size: int = field(15000, help="target vocabulary: most frequent words kept (plus 4 specials)")
    max_train_pairs: int | None = field(None, help="use only the first N training pairs (None = all)")
    tokenizer: str = field("moses", help="'moses' (words + vocab.<lang>.tsv) or 'sentencepiece' (sp.<lang>.model)")
    sp_vocab_size: int = field(8000, help="SentencePiece vocabulary size per language")
    download: bool = field(False, help="download missing corpus files into the cache ($MT_CACHE), sha256-checked "
                                       "(also RNNSMT_DOWNLOAD=1); off: a missing corpus is an error")


def _validate(cfg: PrepareConfig) -> None:
    if cfg.tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {TOKENIZERS}, not {cfg.tokenizer!r}")
    if cfg.src_lang == cfg.tgt_lang:
        raise ValueError(f"source and target language are both {cfg.src_lang!r}")
    if not 0 <= cfg.min_len <= cfg.max_len:
        raise ValueError(f"need 0 <= min_len <= max_len, got min_len={cfg.min_len}, max_len={cfg.max_len}")
    names = [_split_name(s) for s in [cfg.train_split, cfg.dev_split, *cfg.test_splits] if s]
    if len(set(names)) != len(names):
        raise ValueError(f"split names must differ (they name the output files): {names}")


def _split_name(spec: str) -> str:
    return spec.rpartition(":")[2]


def _resolve(cfg: PrepareConfig, spec: str) -> Split:
    corpus, _, split = spec.rpartition(":")
    return get_split(corpus or cfg.corpus, split, allow_download=True if cfg.download else None)


def iter_split_pairs(split: Split, src_lang: str, tgt_lang: str, *, allow_empty: bool = False) -> Iterator[Pair]:
    """Raw ``(src, tgt)`` pairs of a registry split; pre-tokenized text is unescaped and detokenized."""
    missing = [lang for lang in (src_lang, tgt_lang) if lang not in split.languages]
    if missing:
        raise ValueError(f"{split.corpus}/{split.name} has languages {split.languages}, not {missing}")
    if "tsv" in split.files:
        pairs: Iterator[Pair] = iter(read_tsv_pairs(split.files["tsv"], src_col=split.columns[src_lang],
                                                    tgt_col=split.columns[tgt_lang]))
    else:
        pairs = iter_parallel(split.files[src_lang], split.files[tgt_lang], allow_empty=allow_empty)
    if not split.pretokenized:
        return pairs
    src_tok, tgt_tok = MosesTokenizer(src_lang), MosesTokenizer(tgt_lang)
    return ((src_tok.detokenize(s.split()), tgt_tok.detokenize(t.split())) for s, t in pairs)


def _files_of(split: Split) -> str:
    return " and ".join(str(p) for p in split.files.values())


def _read_train(cfg: PrepareConfig, split: Split) -> list[Pair]:
    pairs = iter_split_pairs(split, cfg.src_lang, cfg.tgt_lang, allow_empty=True)
    if cfg.max_train_pairs is None:
        return list(pairs)
    if "tsv" not in split.files:  # reading stops early, so check the alignment here
        check_parallel_lengths(split.files[cfg.src_lang], split.files[cfg.tgt_lang])
    return list(itertools.islice(pairs, cfg.max_train_pairs))


def _write_split(out: Path, name: str, langs: tuple[str, str], raw: list[Pair],
                 tokens: list[tuple[list[str], list[str]]]) -> list[str]:
    written = []
    for side, lang in enumerate(langs):
        for path, lines in ((out / f"{name}.{lang}", (pair[side] for pair in raw)),
                            (out / f"{name}.tok.{lang}", (" ".join(toks[side]) for toks in tokens))):
            with atomic_write(path) as fh:
                for line in lines:
                    fh.write(line + "\n")
            written.append(path.name)
    return written


def _train_sentencepiece(cfg: PrepareConfig, out: Path, pairs: list[Pair]) -> dict[str, SentencePieceVocab]:
    models = {}
    with tempfile.TemporaryDirectory(dir=out, prefix=".sp-") as tmp:
        for side, lang in enumerate((cfg.src_lang, cfg.tgt_lang)):
            text_file = Path(tmp) / f"train.{lang}"
            with open(text_file, "w", encoding="utf-8", newline="\n") as fh:
                for pair in pairs:
                    if pair[side].strip():
                        fh.write((pair[side].lower() if cfg.lowercase else pair[side]) + "\n")
            model = SentencePieceVocab.train([text_file], Path(tmp) / f"sp.{lang}", cfg.sp_vocab_size)
            model.save(out / f"sp.{lang}.model")
            models[lang] = SentencePieceVocab.load(out / f"sp.{lang}.model")
    return models


def _tokenizers(cfg: PrepareConfig, sp_models: dict[str, SentencePieceVocab]) -> list[Callable[[str], list[str]]]:
    if cfg.tokenizer == "moses":
        return [MosesTokenizer(lang, lowercase=cfg.lowercase).tokenize for lang in (cfg.src_lang, cfg.tgt_lang)]
    lower = (lambda s: s.lower()) if cfg.lowercase else (lambda s: s)
    return [lambda s, m=sp_models[lang]: m.pieces(lower(s)) for lang in (cfg.src_lang, cfg.tgt_lang)]


def prepare_parallel(cfg: PrepareConfig) -> dict[str, Any]:
    """Prepare ``cfg.out_dir`` (see the module docstring); returns the statistics written to prepare.json."""
    _validate(cfg)
    out = Path(cfg.out_dir)
    langs = (cfg.src_lang, cfg.tgt_lang)
    stats: dict[str, Any] = {"corpus": cfg.corpus, "src_lang": cfg.src_lang, "tgt_lang": cfg.tgt_lang,
                             "tokenizer": cfg.tokenizer, "splits": {}, "vocab": {}, "files": []}

    train_name = _split_name(cfg.train_split)
    train_split = _resolve(cfg, cfg.train_split)
    pairs = _read_train(cfg, train_split)
    if not pairs:
        raise DataError(f"{_files_of(train_split)}: empty (no training pairs)")
    # every split is read (and checked) before anything is written: a bad file leaves no partial output
    eval_specs = ([cfg.dev_split] if cfg.dev_split else []) + list(cfg.test_splits)
    eval_raw = {}
    for spec in eval_specs:
        split = _resolve(cfg, spec)
        eval_raw[spec] = list(iter_split_pairs(split, cfg.src_lang, cfg.tgt_lang))
        if not eval_raw[spec]:
            raise DataError(f"{_files_of(split)}: empty (no {split.name} pairs)")
    out.mkdir(parents=True, exist_ok=True)
    sp_models = _train_sentencepiece(cfg, out, pairs) if cfg.tokenizer == "sentencepiece" else {}
    tokenize = _tokenizers(cfg, sp_models)

    dropped = {"empty": 0, "too_short": 0, "too_long": 0}
    kept_raw: list[Pair] = []
    kept_tok: list[tuple[list[str], list[str]]] = []
    for src, tgt in pairs:
        if not src.strip() or not tgt.strip():
            dropped["empty"] += 1
            continue
        toks = (tokenize[0](src), tokenize[1](tgt))
        lengths = (len(toks[0]), len(toks[1]))
        if max(lengths) > cfg.max_len:
            dropped["too_long"] += 1
        elif min(lengths) < cfg.min_len:
            dropped["too_short"] += 1
        else:
            kept_raw.append((src, tgt))
            kept_tok.append(toks)
    if not kept_raw:
        raise ValueError(f"no training pairs left in {cfg.corpus}/{cfg.train_split} after filtering: {dropped}")
    stats["files"] += _write_split(out, train_name, langs, kept_raw, kept_tok)
    stats["splits"][train_name] = {
        "pairs_read": len(pairs), "dropped": dropped, "kept": len(kept_raw),
        "dropped_why": {"empty": "empty or whitespace-only line on either side",
                        "too_short": f"fewer than {cfg.min_len} tokens on either side",
                        "too_long": f"more than {cfg.max_len} tokens on either side"},
        "tokens": {lang: sum(len(t[side]) for t in kept_tok) for side, lang in enumerate(langs)}}
    log.info("%s: read %d pairs, kept %d (dropped %d empty, %d too short, %d too long)", train_name,
             len(pairs), len(kept_raw), dropped["empty"], dropped["too_short"], dropped["too_long"])

    vocabs: dict[str, Vocabulary | SentencePieceVocab] = dict(sp_models)
    for side, lang in enumerate(langs):
        if cfg.tokenizer == "moses":
            size = cfg.src_vocab_size if side == 0 else cfg.tgt_vocab_size
            vocabs[lang] = Vocabulary.build((t[side] for t in kept_tok), max_size=size)
            vocabs[lang].save(out / f"vocab.{lang}.tsv")
        file_name = f"vocab.{lang}.tsv" if cfg.tokenizer == "moses" else f"sp.{lang}.model"
        stats["files"].append(file_name)
        stats["vocab"][lang] = {"file": file_name, "size": len(vocabs[lang]),
                                "fingerprint": vocabs[lang].fingerprint()}

    for spec in eval_specs:
        name = _split_name(spec)
        raw = eval_raw[spec]
        toks = [(tokenize[0](s), tokenize[1](t)) for s, t in raw]
        stats["files"] += _write_split(out, name, langs, raw, toks)
        split_stats: dict[str, Any] = {"pairs": len(raw), "tokens": {}, "oov_rate": {}}
        for side, lang in enumerate(langs):
            n_tokens = sum(len(t[side]) for t in toks)
            n_unk = sum(vocabs[lang].index(tok) == UNK for t in toks for tok in t[side])
            split_stats["tokens"][lang] = n_tokens
            split_stats["oov_rate"][lang] = round(n_unk / n_tokens, 6) if n_tokens else 0.0
        stats["splits"][name] = split_stats
        if spec == cfg.dev_split:
            stats["dev_oov_rate"] = split_stats["oov_rate"]
        log.info("%s: %d pairs, %s tokens, OOV rate %s", name, len(raw),
                 "/".join(str(split_stats["tokens"][lang]) for lang in langs),
                 "/".join(f"{split_stats['oov_rate'][lang]:.2%}" for lang in langs))

    nmt_config.save(cfg, out / "config.yaml")
    stats["files"] += ["config.yaml", "prepare.json"]
    with atomic_write(out / "prepare.json") as fh:
        json.dump(stats, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    return stats

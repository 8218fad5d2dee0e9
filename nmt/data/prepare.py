"""``nmt-prepare``: read a parallel corpus, tokenize it, build vocabularies — streamed, memory-bounded.

Writes into ``out_dir`` for every split ``<split>.<lang>`` (raw text) and
``<split>.tok.<lang>`` (tokens or SentencePiece pieces, space-joined), line
by line aligned with each other; ``vocab.<lang>.tsv`` or ``sp.<lang>.model``
from the kept training pairs; ``prepare.json`` (counts, and the split names by role: ``"roles"``, read by
the ``--data-dir`` commands through ``nmt.data.prepared``) and ``config.yaml``.
Only the training split is filtered (empty pairs, length); dev and test are
kept whole (or their first ``--max-eval-pairs`` pairs) and must have no empty lines.

The corpus is a registry name, a corpus declaration (``corpus.yaml``), or plain files
``--train PREFIX --dev PREFIX --test PREFIX ...`` (``PREFIX.LANG`` or ``PREFIX.LANG.gz``; the
split is named by PREFIX's basename). Every split is read once to check it (nothing is written if
one is malformed), then streamed: read → tokenize (``--workers`` processes, order kept) → filter →
write, with the vocabulary counted on the way; memory holds one chunk per worker and the
vocabulary's types, not the corpus (``--sp-sample-lines`` bounds SentencePiece training too).
"""
from __future__ import annotations

import itertools
import json
import logging
import random
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml
from tqdm import tqdm

from nmt.core.config import field
from nmt.data.corpora import Split, get_split, prefix_split
from nmt.data.prepared import roles_of
from nmt.core.io import DataError, atomic_write, check_parallel_lengths, iter_parallel, iter_tsv_pairs
from nmt.data.special import UNK
from nmt.data.tokenize import MosesTokenizer
from nmt.data.vocab import SentencePieceVocab, Vocabulary
from nmt.core.errors import UsageError
from nmt.data.parallel_tokenize import tokenize_stream
from nmt.data.prepare_truecase import model_name as truecase_model_name, truecase_train_split

log = logging.getLogger("nmt.prepare")  # the name its log lines have always carried (nmt-prepare)

TOKENIZERS = ("moses", "sentencepiece")
Pair = tuple[str, str]
#: options added after config.yaml's format was fixed: written there only when not at their default,
#: so the registry path's outputs stay byte-identical
_LATER_FIELDS = ("train", "dev", "test", "workers", "sp_sample_lines", "truecase", "max_eval_pairs")


@dataclass
class PrepareConfig:
    corpus: str = field("multi30k", help="corpus name from the registry (nmt.data.corpora.list_corpora()) or a "
                                         "corpus declaration file (corpus.yaml, see docs/data.md)")
    src_lang: str = field("en", help="source language (also --src)")
    tgt_lang: str = field("fr", help="target language (also --tgt)")
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
    max_eval_pairs: int | None = field(None, help="use only the first N pairs of each dev and test split (None = "
                                                  "all), e.g. for a quick run that scores only N lines of them")
    tokenizer: str = field("moses", choices=TOKENIZERS, help="'moses' (words + vocab.<lang>.tsv) or 'sentencepiece' (sp.<lang>.model)")
    sp_vocab_size: int = field(8000, help="SentencePiece vocabulary size per language")
    download: bool = field(False, help="download missing corpus files into the cache ($MT_CACHE), sha256-checked "
                                       "(also RNNSMT_DOWNLOAD=1); off: a missing corpus is an error")
    train: str | None = field(None, help="plain files: training PREFIX (PREFIX.<lang> or PREFIX.<lang>.gz); "
                                         "replaces --corpus and the *_split options")
    dev: str | None = field(None, help="plain files: dev PREFIX (with --train)")
    test: list[str] = field([], help="plain files: test PREFIXes (with --train)")
    workers: int = field(1, help="tokenizer processes (the output is the same for any number)")
    sp_sample_lines: int | None = field(None, help="SentencePiece: train on a seeded uniform sample of N lines "
                                                   "per language (None = all kept-before-filtering lines)")
    truecase: bool = field(False, help="Moses truecasing: train truecase-model.<lang> on each tokenized training "
                                       "side, truecase every split's tokens before the vocabulary (moses only)")


def _split_name(spec: str) -> str:
    return spec.rpartition(":")[2]


def _validate(cfg: PrepareConfig) -> None:
    if cfg.tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {TOKENIZERS}, not {cfg.tokenizer!r}")
    if cfg.src_lang == cfg.tgt_lang:
        raise ValueError(f"source and target language are both {cfg.src_lang!r}")
    if not 0 <= cfg.min_len <= cfg.max_len:
        raise ValueError(f"need 0 <= min_len <= max_len, got min_len={cfg.min_len}, max_len={cfg.max_len}")
    if cfg.truecase and cfg.tokenizer != "moses":
        raise UsageError("--truecase needs --tokenizer moses (Moses truecasing works on Moses tokens)")
    if cfg.workers < 1 or (cfg.sp_sample_lines is not None and cfg.sp_sample_lines < 1):
        raise UsageError("--workers and --sp-sample-lines must be >= 1")
    if cfg.max_eval_pairs is not None and cfg.max_eval_pairs < 1:
        raise UsageError("--max-eval-pairs must be >= 1 (or unset: every pair)")
    if not cfg.train:
        if cfg.dev or cfg.test:
            raise UsageError("--dev and --test name plain-file PREFIXes: give --train PREFIX too")
        names = [_split_name(s) for s in [cfg.train_split, cfg.dev_split, *cfg.test_splits] if s]
        if len(set(names)) != len(names):
            raise ValueError(f"split names must differ (they name the output files): {names}")
        return
    prefixes = [cfg.train, *([cfg.dev] if cfg.dev else []), *cfg.test]
    names = [Path(p).name for p in prefixes]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise UsageError(f"PREFIX basenames name the output files and must differ: {clash} in {prefixes}")


def _resolve(cfg: PrepareConfig, spec: str) -> Split:
    corpus, _, split = spec.rpartition(":")
    return get_split(corpus or cfg.corpus, split, allow_download=True if cfg.download else None)


def _splits(cfg: PrepareConfig) -> tuple[tuple[str, Split], list[tuple[str, Split]]]:
    """(train name, split), [(eval name, split)] in the order they are written."""
    langs = (cfg.src_lang, cfg.tgt_lang)
    if cfg.train:
        evals = [prefix_split(p, langs) for p in ([cfg.dev] if cfg.dev else []) + list(cfg.test)]
        train = prefix_split(cfg.train, langs)
        return (train.name, train), [(s.name, s) for s in evals]
    specs = ([cfg.dev_split] if cfg.dev_split else []) + list(cfg.test_splits)
    return ((_split_name(cfg.train_split), _resolve(cfg, cfg.train_split)),
            [(_split_name(s), _resolve(cfg, s)) for s in specs])


def _raw_pairs(split: Split, src_lang: str, tgt_lang: str, allow_empty: bool) -> Iterator[Pair]:
    missing = [lang for lang in (src_lang, tgt_lang) if lang not in split.languages]
    if missing:
        raise ValueError(f"{split.corpus}/{split.name} has languages {split.languages}, not {missing}")
    if "tsv" in split.files:
        return iter_tsv_pairs(split.files["tsv"], src_col=split.columns[src_lang], tgt_col=split.columns[tgt_lang])
    return iter_parallel(split.files[src_lang], split.files[tgt_lang], allow_empty=allow_empty)


def iter_split_pairs(split: Split, src_lang: str, tgt_lang: str, *, allow_empty: bool = False) -> Iterator[Pair]:
    """Raw ``(src, tgt)`` pairs of a split, streamed; pre-tokenized text is unescaped and detokenized."""
    pairs = _raw_pairs(split, src_lang, tgt_lang, allow_empty)
    if not split.pretokenized:
        return pairs
    src_tok, tgt_tok = MosesTokenizer(src_lang), MosesTokenizer(tgt_lang)
    return ((src_tok.detokenize(s.split()), tgt_tok.detokenize(t.split())) for s, t in pairs)


def _files_of(split: Split) -> str:
    return " and ".join(str(p) for p in split.files.values())


def _train_pairs(cfg: PrepareConfig, split: Split) -> Iterator[Pair]:
    pairs = iter_split_pairs(split, cfg.src_lang, cfg.tgt_lang, allow_empty=True)
    return pairs if cfg.max_train_pairs is None else itertools.islice(pairs, cfg.max_train_pairs)


def _check(cfg: PrepareConfig, split: Split, *, train: bool) -> int:
    """Read the split once (no detokenizing, nothing kept) so that a bad file fails before any write."""
    pairs = _raw_pairs(split, cfg.src_lang, cfg.tgt_lang, allow_empty=train)
    limit = cfg.max_train_pairs if train else cfg.max_eval_pairs
    if limit is not None:
        if "tsv" not in split.files:  # reading stops early, so check the alignment here
            check_parallel_lengths(split.files[cfg.src_lang], split.files[cfg.tgt_lang])
        pairs = itertools.islice(pairs, limit)
    n = sum(1 for _ in pairs)
    if not n:
        raise DataError(f"{_files_of(split)}: empty (no {'training' if train else split.name} pairs)")
    return n


def _train_sentencepiece(cfg: PrepareConfig, out: Path, pairs: Iterator[Pair]) -> dict[str, Path]:
    """Train one model per language on the training text (all of it, or a seeded sample of N lines)."""
    langs = (cfg.src_lang, cfg.tgt_lang)
    paths = {}
    with tempfile.TemporaryDirectory(dir=out, prefix=".sp-") as tmp, ExitStack() as stack:
        files = [stack.enter_context(open(Path(tmp) / f"train.{lang}", "w", encoding="utf-8", newline="\n"))
                 for lang in langs]
        n, rng = cfg.sp_sample_lines, random.Random(0)
        samples: list[list[tuple[int, str]]] = [[], []]
        seen = [0, 0]
        for pair in pairs:
            for side in (0, 1):
                if not pair[side].strip():
                    continue
                line = pair[side].lower() if cfg.lowercase else pair[side]
                if n is None:
                    files[side].write(line + "\n")
                elif seen[side] < n:  # reservoir sampling: each line kept with probability n / seen
                    samples[side].append((seen[side], line))
                else:
                    slot = rng.randrange(seen[side] + 1)
                    if slot < n:
                        samples[side][slot] = (seen[side], line)
                seen[side] += 1
        for side in (0, 1):
            files[side].writelines(line + "\n" for _, line in sorted(samples[side]))
            files[side].close()
        for lang in langs:
            model = SentencePieceVocab.train([Path(tmp) / f"train.{lang}"], Path(tmp) / f"sp.{lang}",
                                             cfg.sp_vocab_size)
            model.save(out / f"sp.{lang}.model")
            paths[lang] = out / f"sp.{lang}.model"
    return paths


def _split_writers(stack: ExitStack, out: Path, name: str, langs: tuple[str, str]) -> tuple[list[Any], list[str]]:
    """Open the split's four files (atomic: all are dropped if the split fails); raw src, tok src, raw tgt, tok tgt."""
    names = [n for lang in langs for n in (f"{name}.{lang}", f"{name}.tok.{lang}")]
    return [stack.enter_context(atomic_write(out / n)) for n in names], names


def _write_train(cfg: PrepareConfig, out: Path, name: str, split: Split, n_pairs: int,
                 tokenizer: dict[str, Any]) -> tuple[dict[str, Any], list[str], list[Counter[str]]]:
    langs = (cfg.src_lang, cfg.tgt_lang)
    dropped = {"empty": 0, "too_short": 0, "too_long": 0}
    counts: list[Counter[str]] = [Counter(), Counter()]
    n_tokens, kept = [0, 0], 0
    with ExitStack() as stack:
        fh, names = _split_writers(stack, out, name, langs)
        pairs = tqdm(_train_pairs(cfg, split), total=n_pairs, unit=" pairs", desc=name, disable=None)
        for (src, tgt), toks in tokenize_stream(pairs, tokenizer, cfg.workers):
            if toks is None:
                dropped["empty"] += 1
                continue
            lengths = (len(toks[0]), len(toks[1]))
            if max(lengths) > cfg.max_len:
                dropped["too_long"] += 1
            elif min(lengths) < cfg.min_len:
                dropped["too_short"] += 1
            else:
                kept += 1
                for side, raw in enumerate((src, tgt)):
                    fh[2 * side].write(raw + "\n")
                    fh[2 * side + 1].write(" ".join(toks[side]) + "\n")
                    counts[side].update(toks[side])
                    n_tokens[side] += lengths[side]
        if not kept:
            where = f"{cfg.corpus}/{cfg.train_split}" if not cfg.train else _files_of(split)
            raise ValueError(f"no training pairs left in {where} after filtering: {dropped}")
    stats = {
        "pairs_read": n_pairs, "dropped": dropped, "kept": kept,
        "dropped_why": {"empty": "empty or whitespace-only line on either side",
                        "too_short": f"fewer than {cfg.min_len} tokens on either side",
                        "too_long": f"more than {cfg.max_len} tokens on either side"},
        "tokens": {lang: n_tokens[side] for side, lang in enumerate(langs)}}
    log.info("%s: read %d pairs, kept %d (dropped %d empty, %d too short, %d too long)", name,
             n_pairs, kept, dropped["empty"], dropped["too_short"], dropped["too_long"])
    return stats, names, counts


def _write_eval(cfg: PrepareConfig, out: Path, name: str, split: Split, n_pairs: int, tokenizer: dict[str, Any],
                vocabs: dict[str, Any], truecasers: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    langs = (cfg.src_lang, cfg.tgt_lang)
    n_tokens, n_unk = [0, 0], [0, 0]
    with ExitStack() as stack:
        fh, names = _split_writers(stack, out, name, langs)
        pairs = tqdm(itertools.islice(iter_split_pairs(split, *langs), n_pairs), total=n_pairs, unit=" pairs",
                     desc=name, disable=None)
        for pair, toks in tokenize_stream(pairs, tokenizer, cfg.workers, keep_empty=True):
            if truecasers:
                toks = tuple(truecasers[lang](" ".join(toks[side])).split() for side, lang in enumerate(langs))
            for side, lang in enumerate(langs):
                fh[2 * side].write(pair[side] + "\n")
                fh[2 * side + 1].write(" ".join(toks[side]) + "\n")
                n_tokens[side] += len(toks[side])
                n_unk[side] += sum(vocabs[lang].index(tok) == UNK for tok in toks[side])
    split_stats: dict[str, Any] = {"pairs": n_pairs, "tokens": {}, "oov_rate": {}}
    for side, lang in enumerate(langs):
        split_stats["tokens"][lang] = n_tokens[side]
        split_stats["oov_rate"][lang] = round(n_unk[side] / n_tokens[side], 6) if n_tokens[side] else 0.0
    log.info("%s: %d pairs, %s tokens, OOV rate %s", name, n_pairs,
             "/".join(str(split_stats["tokens"][lang]) for lang in langs),
             "/".join(f"{split_stats['oov_rate'][lang]:.2%}" for lang in langs))
    return split_stats, names


def _save_config(cfg: PrepareConfig, path: Path) -> None:
    defaults = PrepareConfig()
    values = {f.name: getattr(cfg, f.name) for f in fields(cfg)
              if f.name not in _LATER_FIELDS or getattr(cfg, f.name) != getattr(defaults, f.name)}
    with atomic_write(path) as fh:
        yaml.safe_dump(values, fh, sort_keys=False, allow_unicode=True)


def prepare_parallel(cfg: PrepareConfig) -> dict[str, Any]:
    """Prepare ``cfg.out_dir`` (see the module docstring); returns the statistics written to prepare.json."""
    _validate(cfg)
    out = Path(cfg.out_dir)
    langs = (cfg.src_lang, cfg.tgt_lang)
    stats: dict[str, Any] = {"corpus": cfg.corpus if not cfg.train else "plain files", "src_lang": cfg.src_lang,
                             "tgt_lang": cfg.tgt_lang, "tokenizer": cfg.tokenizer, "splits": {}, "vocab": {},
                             "files": []}
    (train_name, train_split), evals = _splits(cfg)
    # which split is which: the --data-dir commands find the files by these names (nmt.data.prepared)
    stats["roles"] = roles_of(train_name, [name for name, _ in evals], bool(cfg.dev if cfg.train else cfg.dev_split))
    if cfg.train:
        stats["inputs"] = {n: {k: str(p) for k, p in s.files.items()} for n, s in [(train_name, train_split), *evals]}
    # every split is read (and checked) before anything is written: a bad file leaves no partial output
    n_train = _check(cfg, train_split, train=True)
    n_eval = [_check(cfg, split, train=False) for _, split in evals]
    out.mkdir(parents=True, exist_ok=True)
    sp_paths = (_train_sentencepiece(cfg, out, _train_pairs(cfg, train_split))
                if cfg.tokenizer == "sentencepiece" else {})
    tokenizer = {"kind": cfg.tokenizer, "langs": langs, "lowercase": cfg.lowercase,
                 "sp_models": {lang: str(p) for lang, p in sp_paths.items()}}

    train_stats, names, counts = _write_train(cfg, out, train_name, train_split, n_train, tokenizer)
    stats["files"] += names
    stats["splits"][train_name] = train_stats
    truecasers: dict[str, Any] = {}
    if cfg.truecase:
        truecasers, counts = truecase_train_split(out, train_name, langs)
        stats["truecase"] = {lang: truecase_model_name(lang) for lang in langs}
        stats["files"] += list(stats["truecase"].values())

    vocabs: dict[str, Vocabulary | SentencePieceVocab] = {lang: SentencePieceVocab.load(p)
                                                          for lang, p in sp_paths.items()}
    for side, lang in enumerate(langs):
        if cfg.tokenizer == "moses":
            size = cfg.src_vocab_size if side == 0 else cfg.tgt_vocab_size
            vocabs[lang] = Vocabulary.build(counts[side], max_size=size)
            vocabs[lang].save(out / f"vocab.{lang}.tsv")
        file_name = f"vocab.{lang}.tsv" if cfg.tokenizer == "moses" else f"sp.{lang}.model"
        stats["files"].append(file_name)
        stats["vocab"][lang] = {"file": file_name, "size": len(vocabs[lang]),
                                "fingerprint": vocabs[lang].fingerprint()}

    for (name, split), n_pairs in zip(evals, n_eval):
        split_stats, names = _write_eval(cfg, out, name, split, n_pairs, tokenizer, vocabs, truecasers)
        stats["files"] += names
        stats["splits"][name] = split_stats
        if (name, split) == evals[0] and (cfg.dev if cfg.train else cfg.dev_split):
            stats["dev_oov_rate"] = split_stats["oov_rate"]

    _save_config(cfg, out / "config.yaml")
    stats["files"] += ["config.yaml", "prepare.json"]
    with atomic_write(out / "prepare.json") as fh:
        json.dump(stats, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    return stats

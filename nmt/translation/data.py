"""Training data for the encoder–decoder: sentence pairs or the unique pairs of a phrase table."""
from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

from nmt.training import distributed
from nmt.core.config import field
from nmt.data.batching import pair_batch, bucketed_batches
from nmt.core.io import DataError, read_parallel
from nmt.training.pair_stream import PairStream, StreamBatch, sentence_pairs_in_order, unique_pairs_in_order
from nmt.data.special import PAD
from nmt.data.prepared import DEFAULT_DEV, DEFAULT_TRAIN, PREPARE_JSON, missing_split_file, split_names
from nmt.data.vocab import Vocabulary, load_vocab


@dataclass
class TranslationDataConfig:
    data_dir: str | None = field(None, help="folder written by nmt-prepare (fills the paths below)")
    src_lang: str = field("en", help="source language code")
    tgt_lang: str = field("fr", help="target language code")
    train_src: str | None = field(None, help="tokenized training source file (default: DATA_DIR/TRAIN.tok.SRC, "
                                                "TRAIN the training split named in DATA_DIR/prepare.json, else train)")
    train_tgt: str | None = field(None, help="tokenized training target file (default: DATA_DIR/TRAIN.tok.TGT)")
    dev_src: str | None = field(None, help="tokenized dev source file (default: DATA_DIR/DEV.tok.SRC, DEV the "
                                              "dev split named in DATA_DIR/prepare.json, else val)")
    dev_tgt: str | None = field(None, help="tokenized dev target file (default: DATA_DIR/DEV.tok.TGT)")
    src_vocab: str | None = field(None, help="source vocabulary (default: DATA_DIR/vocab.SRC.tsv)")
    tgt_vocab: str | None = field(None, help="target vocabulary (default: DATA_DIR/vocab.TGT.tsv)")
    phrase_table: str | None = field(None, help="train on the unique pairs of this Moses phrase table instead "
                                                "of sentence pairs (frequencies ignored, as in the paper)")
    phrase_pairs: str = field("unique", help="with --phrase-table: 'unique' (the paper: each unique pair once per "
                                             "epoch, counts ignored) or 'count' (each pair as often as it was "
                                             "extracted, the joint count c(e,f) of the table's counts field: pairs "
                                             "sampled by count)")
    reverse: bool = field(False, help="train the reverse direction: the model reads the target side (--tgt files, "
                                      "a table's second field) and predicts the source side, p(source | target), "
                                      "for smt-rescore --reverse-model; the vocabularies follow their sides")
    stream_buffer: int | None = field(None, help="read the training pairs (the train files, or the unique pairs of "
                                                 "--phrase-table) as a stream each epoch and shuffle them in "
                                                 "windows of N pairs (memory bounded by N, not by the corpus; "
                                                 "default: all pairs in memory)")
    max_len: int = field(80, help="drop training pairs longer than this many tokens on either side")
    dev_max_pairs: int | None = field(None, help="use only the first N dev pairs for validation")
    preset: str = field("cpu-small", help="model preset: cho2014 (paper sizes), cpu-base, cpu-small, tiny; "
                                          "--arch rnnsearch: rnnsearch-paper, rnnsearch-cpu-base, "
                                          "rnnsearch-cpu-small, rnnsearch-tiny")

    def resolved_paths(self) -> dict[str, str]:
        base = Path(self.data_dir) if self.data_dir else None
        if base is not None and not base.is_dir():
            if base.exists():
                raise NotADirectoryError(errno.ENOTDIR, "--data-dir is a file, not a folder written by nmt-prepare",
                                         str(base))
            raise FileNotFoundError(errno.ENOENT, "no such --data-dir (a folder written by nmt-prepare)", str(base))
        names = split_names(base) if base is not None else None
        train, dev = (names.train, names.dev) if names is not None else (DEFAULT_TRAIN, DEFAULT_DEV)
        defaults = {
            "train_src": f"{train}.tok.{self.src_lang}", "train_tgt": f"{train}.tok.{self.tgt_lang}",
            "dev_src": f"{dev}.tok.{self.src_lang}", "dev_tgt": f"{dev}.tok.{self.tgt_lang}",
            "src_vocab": f"vocab.{self.src_lang}.tsv", "tgt_vocab": f"vocab.{self.tgt_lang}.tsv",
        }
        out: dict[str, str] = {}
        for key, name in defaults.items():
            value = getattr(self, key)
            if value is None:
                if base is None:
                    if key.startswith("train") and self.phrase_table:
                        continue
                    raise ValueError(f"--{key.replace('_', '-')} is required when --data-dir is not given")
                assert names is not None
                role = key.partition("_")[0] if key.startswith(("train", "dev")) else None
                if role == "train" and self.phrase_table:
                    role = None  # trains on the table's pairs: the folder's training split is not read
                if role == "dev" and names.dev is None:
                    raise DataError(f"{base / PREPARE_JSON}: nmt-prepare wrote no dev split into this --data-dir "
                                    f"(rerun it with --dev PREFIX, or give --{key.replace('_', '-')} FILE)")
                path = base / name
                if role is not None and not path.is_file():
                    raise missing_split_file(path, names, role, f"--{key.replace('_', '-')}")
                value = str(path)
            out[key] = value
        if self.reverse:  # the model's input side is the target language: swap every src/tgt path
            out = {swap_side(key): value for key, value in out.items()}
        return out


def swap_side(key: str) -> str:
    """``train_src`` <-> ``train_tgt``, ``src_vocab`` <-> ``tgt_vocab``, …"""
    return key.replace("src", "\0").replace("tgt", "src").replace("\0", "tgt")


def read_tokenized_pairs(src_path: str, tgt_path: str) -> list[tuple[list[str], list[str]]]:
    return [(s.split(), t.split()) for s, t in read_parallel(src_path, tgt_path)]


def unique_phrase_pairs(table_path: str, *, with_counts: bool = False
                        ) -> list[tuple[list[str], list[str]]] | tuple[list[tuple[list[str], list[str]]], list[int]]:
    """Unique (source, target) phrase pairs of a Moses table, in table order; counts are ignored.

    ``with_counts``: also each pair's joint count c(e,f), the third value of the table's counts field (Moses's
    ``count(e) count(f) count(e,f)``), rounded to an integer ≥ 1; a line without it stops with its line number.
    Read with the strict phrase-table reader: a malformed line stops with its line number.
    """
    from nmt.core.formats.phrase_table_reader import iter_phrase_table

    seen: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
    pairs, counts = [], []
    for entry in iter_phrase_table(table_path, keep_raw=False):
        key = (entry.src, entry.tgt)
        if key not in seen:
            seen.add(key)
            pairs.append((list(entry.src), list(entry.tgt)))
            if with_counts:
                if len(entry.counts) < 3:
                    raise DataError(f"{table_path}:{entry.line_no}: --phrase-pairs count needs the counts field "
                                    "'c(e) c(f) c(e,f)' (Moses's 5th field); this line has "
                                    f"{len(entry.counts)} count(s)")
                counts.append(max(1, int(round(entry.counts[2]))))
    return (pairs, counts) if with_counts else pairs


class TranslationTask:
    """Encoded pairs + the teacher-forced loss of the encoder–decoder."""

    def __init__(self, cfg: TranslationDataConfig, dev_batch_size: int = 64, *,
                 batching: tuple[int, int | None, int] | None = None):
        """``batching``: the trainer's ``(batch_size, max_tokens, seed)``, needed by ``--stream-buffer``."""
        self.cfg = cfg
        self.paths = cfg.resolved_paths()
        self.src_vocab: Vocabulary = load_vocab(self.paths["src_vocab"])
        self.tgt_vocab: Vocabulary = load_vocab(self.paths["tgt_vocab"])
        self._stream: PairStream | None = None
        self._position: dict[str, int] | None = None
        if cfg.phrase_pairs not in ("unique", "count"):
            raise ValueError(f"--phrase-pairs must be 'unique' or 'count', not {cfg.phrase_pairs!r}")
        if cfg.phrase_pairs == "count" and not cfg.phrase_table:
            raise ValueError("--phrase-pairs count needs --phrase-table (sentence pairs have no counts)")
        if cfg.stream_buffer is not None:
            if cfg.phrase_pairs != "unique":
                raise ValueError("--stream-buffer trains on the unique pairs (each once an epoch); "
                                 "drop --phrase-pairs count, or --stream-buffer")
            self._init_stream(cfg, batching)
            self._init_dev(cfg, dev_batch_size)
            return
        repeats: list[int] | None = None
        if cfg.phrase_table:
            if cfg.phrase_pairs == "count":
                raw, repeats = unique_phrase_pairs(cfg.phrase_table, with_counts=True)
            else:
                raw = unique_phrase_pairs(cfg.phrase_table)
            if cfg.reverse:
                raw = [(t, s) for s, t in raw]
            where = cfg.phrase_table
        else:
            raw = read_tokenized_pairs(self.paths["train_src"], self.paths["train_tgt"])
            where = self.paths["train_src"]
            if not raw:
                raise DataError(f"{where}: empty file, and so is {self.paths['train_tgt']} (no training pairs)")
        if not raw:
            raise DataError(f"{where}: no phrase pairs to train on")
        keep = [len(s) <= cfg.max_len and len(t) <= cfg.max_len for s, t in raw]
        kept = [pair for pair, k in zip(raw, keep) if k]
        self.num_dropped = len(raw) - len(kept)
        if not kept:
            raise DataError(f"{where}: all {len(raw)} training pairs have more than --max-len {cfg.max_len} tokens "
                            "on a side; nothing left to train on")
        self.train_src = [self.src_vocab.encode(s) for s, _ in kept]
        self.train_tgt = [self.tgt_vocab.encode(t) for _, t in kept]
        self.num_unique = len(kept)
        if repeats is not None:  # pairs sampled by count: pair i appears c(e,f) times in every epoch
            reps = [r for r, k in zip(repeats, keep) if k]
            self.train_src = [ids for ids, r in zip(self.train_src, reps) for _ in range(r)]
            self.train_tgt = [ids for ids, r in zip(self.train_tgt, reps) for _ in range(r)]
        self.num_train = len(self.train_src)
        self._init_dev(cfg, dev_batch_size)

    def _init_stream(self, cfg: TranslationDataConfig, batching: tuple[int, int | None, int] | None) -> None:
        if batching is None:
            raise ValueError("--stream-buffer: TranslationTask needs batching=(batch_size, max_tokens, seed)")
        batch_size, max_tokens, seed = batching
        where, pairs = cfg.phrase_table, None
        if not where:  # sentence pairs of the train files, in file order (with --reverse the paths are swapped)
            where, tgt_path = self.paths["train_src"], self.paths["train_tgt"]
            def pairs(counts):
                return sentence_pairs_in_order(where, tgt_path, cfg.max_len, counts)
        elif cfg.reverse:  # the table's unique pairs in table order, each read target -> source
            table = where
            def pairs(counts):
                return ((tgt, src) for src, tgt in unique_pairs_in_order(table, cfg.max_len, counts))
        self._stream = PairStream(where, self.src_vocab.encode, self.tgt_vocab.encode,
                                  max_len=cfg.max_len, buffer=cfg.stream_buffer, batch_size=batch_size,
                                  max_tokens=max_tokens, seed=seed, pairs=pairs, plain_first_window=pairs is not None)
        if self._stream.num_unique == 0:
            raise DataError(f"{where}: no phrase pairs to train on" if cfg.phrase_table else
                            f"{where}: empty file, and so is {self.paths['train_tgt']} (no training pairs)")
        if self._stream.num_pairs == 0:
            raise DataError(f"{where}: all {self._stream.num_unique} training pairs have more than "
                            f"--max-len {cfg.max_len} tokens on a side; nothing left to train on")
        self.num_dropped, self.num_train = self._stream.num_dropped, self._stream.num_pairs
        self.train_src, self.train_tgt = [], []  # not held: batches come from the stream
        # the trainer's optional hooks exist only in this mode (the default plan stays the trainer's)
        self.batches_for_epoch = self._stream.plan
        self.shard_batch = self._shard_stream_batch
        self.load_extras = self._load_stream_extras

    def _init_dev(self, cfg: TranslationDataConfig, dev_batch_size: int) -> None:
        # (with --reverse the paths are swapped already: dev_src is the target-language file)
        dev = read_tokenized_pairs(self.paths["dev_src"], self.paths["dev_tgt"])
        if not dev:
            raise DataError(f"{self.paths['dev_src']}: empty file, and so is {self.paths['dev_tgt']} "
                            "(no dev pairs for validation)")
        if cfg.dev_max_pairs:
            dev = dev[:cfg.dev_max_pairs]
        self.dev_src = [self.src_vocab.encode(s) for s, _ in dev]
        self.dev_tgt = [self.tgt_vocab.encode(t) for _, t in dev]
        self.dev_batch_size = dev_batch_size
        self._dev_batches: list[dict[str, torch.Tensor]] | None = None

    def train_lengths(self) -> list[int]:
        return [max(len(s), len(t)) for s, t in zip(self.train_src, self.train_tgt)]

    def make_batch(self, indices: np.ndarray | StreamBatch) -> dict[str, torch.Tensor]:
        if isinstance(indices, StreamBatch):
            assert self._stream is not None
            src, tgt = self._stream.pairs(indices)
            self._position = {"epoch": indices.epoch, "batches": indices.number + 1,
                              "pairs_consumed": self._stream.pairs_consumed(indices)}
            return pair_batch(src, tgt)
        return pair_batch([self.train_src[i] for i in indices], [self.train_tgt[i] for i in indices])

    def dev_batches(self) -> list[dict[str, torch.Tensor]]:
        if self._dev_batches is None:
            lengths = [max(len(s), len(t)) for s, t in zip(self.dev_src, self.dev_tgt)]
            order = bucketed_batches(lengths, batch_size=self.dev_batch_size, shuffle=False)
            self._dev_batches = [pair_batch([self.dev_src[i] for i in b], [self.dev_tgt[i] for i in b])
                                 for b in order]
        return self._dev_batches

    @staticmethod
    def loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
        logits = model(batch["src"], batch["tgt_in"])
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["tgt_out"].reshape(-1),
                              ignore_index=PAD, reduction="sum")
        return nll, int((batch["tgt_out"] != PAD).sum())

    def checkpoint_extras(self) -> dict[str, Any]:
        extras: dict[str, Any] = {
            "vocab": {"src": {"path": self.paths["src_vocab"], "fingerprint": self.src_vocab.fingerprint()},
                      "tgt": {"path": self.paths["tgt_vocab"], "fingerprint": self.tgt_vocab.fingerprint()}}}
        if self._stream is not None:  # the data position: pairs of the epoch consumed by the last update
            extras["pair_stream"] = {"buffer": self._stream.buffer, "pairs": self._stream.num_pairs,
                                     "batches": self._stream.num_batches, "position": self._position}
        return extras

    def _shard_stream_batch(self, item: StreamBatch, rank: int, world: int) -> tuple[StreamBatch, float]:
        part, weight = distributed.shard(item.indices, rank, world)
        return item._replace(indices=part), weight

    def _load_stream_extras(self, checkpoint: dict[str, Any]) -> None:
        """Refuse a resume whose stream would not give the same batches as the checkpointed run's."""
        assert self._stream is not None
        saved = checkpoint.get("pair_stream")
        now = {"buffer": self._stream.buffer, "pairs": self._stream.num_pairs, "batches": self._stream.num_batches}
        if saved is None or {k: saved.get(k) for k in now} != now:
            raise ValueError(f"--stream-buffer {self._stream.buffer}: the checkpoint's data stream differs "
                             f"(checkpoint {saved and {k: saved.get(k) for k in now}}, now {now}); resume with the "
                             "same table, --stream-buffer, --max-len and batch settings")
        self._position = saved.get("position")

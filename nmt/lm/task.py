"""The language models' training task (:class:`LMTask`, the :class:`~nmt.training.trainer.TrainingTask` of
``nmt-lm-train``).
The trainer (:mod:`nmt.training.trainer`) asks the task for its batch plan
(:meth:`LMTask.batches_for_epoch`: sentence-index arrays, or
:class:`StreamWindow` items in order for the stream regime) and hands each item
back to ``make_batch``. ``loss`` returns ``(nll, tokens, normaliser)``: the
normaliser is the token count, or the number of rows with ``loss_norm =
sequence`` (the Torch-era ``Σ nll / rows`` gradient). Under DDP each rank takes
a contiguous slice of the rows of every stream window (:meth:`LMTask.shard_batch`)
and carries the state of its rows only; checkpoints hold the state of all rows
(gathered), so a run resumes with any number of processes.

The regimes and the accounting are described in :mod:`nmt.lm.data`. With ``--stream-buffer`` the
training text stays on disk (:mod:`nmt.lm.stream`: lazily read stream rows, or windows of sentences
planned as :class:`~nmt.training.pair_stream.StreamBatch` items).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.training import distributed
from nmt.data.batching import bucketed_batches
from nmt.core.io import DataError
from nmt.data.special import PAD
from nmt.data.vocab import Vocabulary
from nmt.lm.data import (LOSS_NORMS, LMDataConfig, encode_all, read_sentences, sentence_batch, sentence_batches,
                         stream_matrix)
from nmt.lm.stream import StreamRows, iter_words, sentence_stream
from nmt.training.pair_stream import PairStream, StreamBatch
from nmt.models.lm.base import detach_state, make_lm_batch, select_state


class StreamWindow(NamedTuple):
    """Stream regime plan item: window ``index`` of ``epoch``, rows ``[lo, hi)`` (``hi`` None = all)."""
    epoch: int
    index: int
    lo: int = 0
    hi: int | None = None


def cat_state(states: Sequence[Any]) -> Any:
    """Concatenate states of consecutive row blocks (the inverse of
    :func:`~nmt.models.lm.base.select_state`: batch dim 1 for 3-d tensors, else 0)."""
    first = states[0]
    if isinstance(first, Tensor):
        return torch.cat(list(states), 1 if first.dim() == 3 else 0)
    if isinstance(first, dict):
        return {k: cat_state([s[k] for s in states]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(cat_state([s[i] for s in states]) for i in range(len(first))))
    if isinstance(first, (list, tuple)):
        return type(first)(cat_state([s[i] for s in states]) for i in range(len(first)))
    return first


class LMTask:
    """The :class:`~nmt.training.trainer.TrainingTask` of the language models (see the module docstring)."""

    def __init__(self, cfg: LMDataConfig, vocab: Vocabulary, train: list[list[int]] | None, dev: list[list[int]],
                 *, batch_size: int, max_tokens: int | None = None, seed: int = 1, vocab_path: str = "",
                 loss_norm: str = "token"):
        """``train`` None: read the training text ``cfg.resolve_text("train")`` from disk (``--stream-buffer``)."""
        if loss_norm not in LOSS_NORMS:
            raise ValueError(f"loss_norm must be one of {LOSS_NORMS}, got {loss_norm!r}")
        self.cfg = cfg
        self.vocab = vocab
        self.vocab_path = vocab_path
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.seed = seed
        self.regime = cfg.regime
        self.loss_norm = loss_norm
        self.num_dropped = 0
        self._plan_cache: tuple[int, list[Any]] | None = None
        self._sentences: PairStream | None = None
        self._rows_reader: StreamRows | None = None
        if train is None:
            self._init_from_disk(cfg, vocab)
        elif cfg.regime == "sentence":
            if cfg.max_len is not None:
                kept = [s for s in train if len(s) <= cfg.max_len]
                self.num_dropped = len(train) - len(kept)
                train = kept
            if not train:
                raise ValueError("no training sentences (check --train and --max-len)")
            self.train = train
            self.train_len = [len(s) for s in train]
            self._num_batches = len(self.batches_for_epoch(0))
        else:
            if max_tokens is not None:
                raise ValueError("--max-tokens has no meaning in the stream regime (batches are B x BPTT)")
            self.train = train
            self.stream_in, self.stream_tgt = stream_matrix(train, batch_size)
            self._num_batches = math.ceil(self.stream_in.size(1) / cfg.bptt)
            self._num_rows = self.stream_in.size(0)
        if self.regime == "stream":
            world = distributed.context().world
            if self._num_rows < world:
                raise ValueError(f"stream regime: {self._num_rows} rows cannot be shared by {world} "
                                 "processes (raise --batch-size)")
        if train is not None:
            self.num_lines = len(self.train)
            self.train_tokens = sum(len(s) + 1 for s in self.train)
        self.dev = dev
        self._dev_batches: list[dict[str, Any]] | None = None
        # stream regime: the carried state (of this rank's rows), and the (epoch, window) it continues into
        self._carried: dict[str, Any] = {"train": None, "dev": None}
        self._carried_next: tuple[int, int] | None = None
        self._current: tuple[int | None, int] = (None, 0)

    def _init_from_disk(self, cfg: LMDataConfig, vocab: Vocabulary) -> None:
        """``--stream-buffer``: the training text stays on disk (:mod:`nmt.lm.stream`)."""
        path = cfg.resolve_text("train")
        self.train = []  # not held
        if cfg.regime == "stream":
            if self.max_tokens is not None:
                raise ValueError("--max-tokens has no meaning in the stream regime (batches are B x BPTT)")
            self._rows_reader = rows = StreamRows(path, vocab.encode, self.batch_size, cfg.bptt,
                                                  cfg.max_train_sentences)
            self._num_batches, self._num_rows = rows.num_windows, rows.rows
            self.num_lines, self.train_tokens = rows.num_lines, rows.total
            return
        stream = self._sentences = sentence_stream(
            path, vocab.encode, buffer=cfg.stream_buffer or 1, batch_size=self.batch_size,
            max_tokens=self.max_tokens, seed=self.seed, limit=cfg.max_train_sentences, max_len=cfg.max_len,
            equal_length=cfg.equal_length)
        if stream.num_pairs == 0:
            raise ValueError("no training sentences (check --train and --max-len)")
        self.num_dropped, self.num_lines, self._num_batches = stream.num_dropped, stream.num_pairs, stream.num_batches
        self.train_tokens = stream.counts["tokens"]

    # ---- batch plan
    @property
    def num_batches(self) -> int:
        """Training batches per epoch (the same every epoch)."""
        return self._num_batches

    def batches_for_epoch(self, epoch: int) -> list[Any]:
        """The planned batches of ``epoch`` (the trainer's batch-plan hook): sentence-index arrays, or
        the stream's windows in order (:class:`StreamWindow`)."""
        if self._plan_cache is not None and self._plan_cache[0] == epoch:
            return self._plan_cache[1]
        plan: Any
        if self._sentences is not None:
            plan = self._sentences.plan(epoch)
        elif self.regime == "stream":
            plan = [StreamWindow(epoch, k) for k in range(self._num_batches)]
        else:
            plan = sentence_batches(self.train_len, batch_size=self.batch_size, max_tokens=self.max_tokens,
                                    seed=self.seed, epoch=epoch, shuffle=True, equal_length=self.cfg.equal_length)
        self._plan_cache = (epoch, plan)
        return plan

    def shard_batch(self, item: Any, rank: int, world: int) -> tuple[Any, float]:
        """DDP: this rank's part of a planned batch (sentences, or rows of a stream window)."""
        if isinstance(item, StreamWindow):
            lo, hi = distributed.rows_of(self._num_rows, rank, world)
            return item._replace(lo=lo, hi=hi), 1.0
        if isinstance(item, StreamBatch):
            part, weight = distributed.shard(item.indices, rank, world)
            return item._replace(indices=part), weight
        return distributed.shard(item, rank, world)

    def _rows(self) -> tuple[int, int]:
        ctx = distributed.context()
        return distributed.rows_of(self._num_rows, ctx.rank, ctx.world)

    def make_batch(self, item: Any) -> dict[str, Any]:
        if isinstance(item, StreamBatch):
            assert self._sentences is not None
            return sentence_batch(self._sentences.pairs(item)[0])
        if self.regime == "sentence":
            return sentence_batch([self.train[i] for i in item])
        if not isinstance(item, StreamWindow):
            raise TypeError(f"stream regime: make_batch takes a StreamWindow of batches_for_epoch(), got {item!r}")
        epoch, k = item.epoch, item.index
        if k > 0 and self._carried_next != (epoch, k):
            raise RuntimeError(f"stream regime: window {k} of epoch {epoch + 1} needs the state carried from window "
                               f"{k - 1}, but the task holds the state for {self._carried_next}; on resume, load "
                               "it with LMTask.load_extras(checkpoint)")
        self._current = (epoch, k)
        if self._rows_reader is not None:
            inputs, targets = self._rows_reader.window(k, item.lo, item.hi)
            return {"kind": "train", "window": k, "inputs": inputs, "targets": targets}
        lo, hi = k * self.cfg.bptt, (k + 1) * self.cfg.bptt
        rows = slice(item.lo, item.hi)
        return {"kind": "train", "window": k, "inputs": self.stream_in[rows, lo:hi],
                "targets": self.stream_tgt[rows, lo:hi]}

    def dev_batches(self) -> list[dict[str, Any]]:
        if self._dev_batches is None:
            if not self.dev:
                raise ValueError("no validation sentences")
            if self.regime == "sentence":
                order = bucketed_batches([len(s) for s in self.dev], batch_size=self.cfg.eval_batch_size,
                                         shuffle=False)
                self._dev_batches = [sentence_batch([self.dev[i] for i in b]) for b in order]
            else:
                inputs, targets = stream_matrix(self.dev, self.cfg.eval_streams)
                L = self.cfg.bptt
                self._dev_batches = [{"kind": "dev", "window": k, "inputs": inputs[:, k * L:(k + 1) * L],
                                      "targets": targets[:, k * L:(k + 1) * L]}
                                     for k in range(math.ceil(inputs.size(1) / L))]
        return self._dev_batches

    # ---- loss
    def loss(self, model: nn.Module, batch: dict[str, Any]) -> tuple[Tensor, int, int]:
        """(Σ −ln p in nats, predicted tokens = words + </s>, gradient normaliser: tokens, or rows with
        ``loss_norm = sequence``)."""
        if batch["kind"] == "sentence":
            inputs, targets, in_len = make_lm_batch(batch["tokens"], batch["lengths"])
            logits, _ = model(inputs, None, lengths=in_len)
            ntok = int(in_len.sum())
            rows = inputs.size(0)
        else:
            kind = batch["kind"]
            state = self._carried[kind] if batch["window"] > 0 and self.cfg.carry_state else None
            if state is not None:
                state = distributed.to_device(state, batch["inputs"].device)
            logits, new_state = model(batch["inputs"], state)
            self._carried[kind] = detach_state(new_state)
            targets = batch["targets"]
            ntok = int((targets != PAD).sum())
            rows = targets.size(0)
            if kind == "train":
                epoch, k = self._current
                self._carried_next = (epoch, k + 1) if epoch is not None else None
        nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1),
                              ignore_index=PAD, reduction="sum")
        return nll, ntok, (rows if self.loss_norm == "sequence" else ntok)

    # ---- checkpoints
    def checkpoint_extras(self) -> dict[str, Any]:
        """Vocabulary fingerprint, and in the stream regime the carried state of *all* rows (gathered
        from the ranks under DDP: a collective, called on every rank)."""
        extras: dict[str, Any] = {"vocab": {"path": self.vocab_path, "fingerprint": self.vocab.fingerprint(),
                                            "size": len(self.vocab)}}
        if self.regime == "stream":
            state = self._carried["train"]
            ctx = distributed.context()
            if ctx.enabled:
                parts = ctx.all_gather_object(distributed.to_device(state, "cpu") if state is not None else None)
                state = None if any(p is None for p in parts) else cat_state(parts)
            extras["lm_stream"] = {"next": self._carried_next, "state": state}
        if self._sentences is not None:
            extras["lm_sentence_stream"] = self._sentence_stream_key()
        return extras

    def _sentence_stream_key(self) -> dict[str, int]:
        assert self._sentences is not None
        return {"buffer": self._sentences.buffer, "sentences": self._sentences.num_pairs,
                "batches": self._sentences.num_batches}

    def check_compatible(self, checkpoint: dict[str, Any]) -> None:
        """Refuse a checkpoint trained with another vocabulary (ValueError)."""
        saved = checkpoint.get("vocab", {}).get("fingerprint")
        if saved is not None and saved != self.vocab.fingerprint():
            raise ValueError(f"model/vocabulary mismatch: the checkpoint was trained with vocabulary {saved}, "
                             f"this run has {self.vocab.fingerprint()}")

    def load_extras(self, checkpoint: dict[str, Any]) -> None:
        """Restore what :meth:`checkpoint_extras` saved (the trainer's ``restore`` calls it): the carried
        stream state, of this rank's rows under DDP."""
        self.check_compatible(checkpoint)
        if self._sentences is not None and checkpoint.get("lm_sentence_stream") != self._sentence_stream_key():
            raise ValueError(f"--stream-buffer {self._sentences.buffer}: the checkpoint's data stream differs "
                             f"(checkpoint {checkpoint.get('lm_sentence_stream')}, now "
                             f"{self._sentence_stream_key()}); resume with the same text, --stream-buffer, "
                             "--max-len and batch settings")
        if self.regime == "stream" and "lm_stream" in checkpoint:
            nxt = checkpoint["lm_stream"]["next"]
            self._carried_next = tuple(nxt) if nxt is not None else None
            state = checkpoint["lm_stream"]["state"]
            if state is not None and distributed.context().enabled:
                lo, hi = self._rows()
                state = select_state(state, torch.arange(lo, hi))
            self._carried["train"] = state


def build_task(cfg: LMDataConfig, vocab: Vocabulary, *, batch_size: int, max_tokens: int | None, seed: int,
               vocab_path: str = "", loss_norm: str = "token") -> LMTask:
    """The task of ``cfg``; with ``--stream-buffer`` the training text stays on disk (dev is in memory)."""
    streamed = cfg.stream_buffer is not None
    train_path = cfg.resolve_text("train")
    train = None
    if streamed:
        if next(iter_words(train_path, 1), None) is None:
            raise DataError(f"{train_path}: empty file (no training sentences)")
    else:
        train = read_sentences(train_path, cfg.max_train_sentences)
    dev = read_sentences(valid_path := cfg.resolve_text("valid"), cfg.max_valid_sentences)
    for path, lines, what in ((train_path, train, "training"), (valid_path, dev, "validation")):
        if lines is not None and not lines:
            raise DataError(f"{path}: empty file (no {what} sentences)")
    return LMTask(cfg, vocab, None if train is None else encode_all(vocab, train), encode_all(vocab, dev),
                  batch_size=batch_size, max_tokens=max_tokens, seed=seed, vocab_path=vocab_path,
                  loss_norm=loss_norm)

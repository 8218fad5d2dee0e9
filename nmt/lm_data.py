"""Language-model data, the LM training task, and sentence/stream scoring.

Two regimes (``--regime``):

* ``sentence`` (RMN paper): each line is a sentence, modelled as
  ``<s> w1 … wn`` → ``w1 … wn </s>`` from a fresh state; full backprop
  through the sentence. Training batches hold sentences of *equal length*
  (``--equal-length``, the RMN paper's buckets of 20 same-length sentences):
  no padding, the last batch of a length may be smaller.
* ``stream`` (Zaremba et al. 2014, Mogrifier paper): the corpus is one token
  stream ``</s> w1 … </s> w1' … </s>`` (one ``</s>`` after each line; a ``</s>``
  is also the first context), cut into ``batch_size`` contiguous rows and read in
  windows of ``bptt`` tokens, in order; the hidden state is carried from window to
  window (detached: truncated BPTT) and reset at the start of each epoch.

Accounting (``nmt.perplexity``, the project's one convention): the
loss is in nats per predicted token, tokens = words + one ``</s>`` per line,
``<s>`` (or the stream's leading ``</s>``) is context only. An empty line is a
sentence of zero words: it predicts only ``</s>`` and counts one token; it is
never dropped. The literal ``<unk>`` of PTB is the vocabulary word ``<unk>``
(id 1): trained and scored like any other word. Words outside the vocabulary
map to it too (counted as OOVs in the evaluation report).

The trainer (:mod:`nmt.train`) asks the task for its batch plan
(:meth:`LMTask.batches_for_epoch`: sentence-index arrays, or
:class:`StreamWindow` items in order for the stream regime) and hands each item
back to ``make_batch``. ``loss`` returns ``(nll, tokens, normaliser)``: the
normaliser is the token count, or the number of rows with ``loss_norm =
sequence`` (the Torch-era ``Σ nll / rows`` gradient). Under DDP each rank takes
a contiguous slice of the rows of every stream window (:meth:`LMTask.shard_batch`)
and carries the state of its rows only; checkpoints hold the state of all rows
(gathered), so a run resumes with any number of processes.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt import distributed
from nmt.paths import resolve_checkpoint
from nmt.checkpoint import load_checkpoint
from nmt.config import field
from nmt.data.batching import bucketed_batches
from nmt.data.io import DataError, iter_lines
from nmt.data.vocab import Vocabulary, load_vocab
from nmt.models.lm import ARCHITECTURES, LanguageModel
from nmt.models.lm.base import BOS, EOS, PAD, detach_state, make_lm_batch, select_state
from nmt.perplexity import PerplexityAccumulator, PerplexityResult, split_words

REGIMES = ("sentence", "stream")
LOSS_NORMS = ("token", "sequence")
UNK_NOTE = ("OOVs included, scored with p(<unk>); the text's literal <unk> is the vocabulary word <unk>, "
            "trained and scored like any other word")


@dataclass
class LMDataConfig:
    corpus: str | None = field(None, help="registry corpus (ptb, wikitext-2, fr-mono, multi30k, ...) that fills "
                                          "--train/--valid/--test from its splits ($MT_DATA)")
    lang: str | None = field(None, help="side of a parallel registry corpus (e.g. fr for multi30k: raw, untokenized "
                                        "text; for a prepared, tokenized file give --train/--valid instead)")
    train_split: str = field("train", help="registry split used for training")
    valid_split: str = field("valid", help="registry split used for validation (multi30k: val)")
    test_split: str = field("test", help="registry split used by nmt-lm-eval --split test (multi30k: "
                                         "test_2016_flickr)")
    train: str | None = field(None, help="training text, one tokenized sentence per line (plain or .gz); wins over "
                                         "--corpus")
    valid: str | None = field(None, help="validation text (dev loss, early stopping); wins over --corpus")
    test: str | None = field(None, help="test text (recorded for nmt-lm-eval --split test); wins over --corpus")
    max_train_sentences: int | None = field(None, help="train on the first N lines of the training text only")
    max_valid_sentences: int | None = field(None, help="validate on the first N lines of the validation text only")
    vocab: str | None = field(None, help="word vocabulary (token<TAB>count); built from the training text and "
                                         "saved there if the file is missing; always copied into the model folder "
                                         "as vocab.tsv")
    vocab_size: int | None = field(None, help="keep the K most frequent training words (besides <pad> <unk> <s> "
                                              "</s>); default all")
    vocab_min_count: int = field(1, help="drop training words seen fewer times when building the vocabulary")
    vocab_from_full_train: bool = field(True, help="build the vocabulary from the whole training file even with "
                                                   "--max-train-sentences (keeps PTB's 10k words in quick runs)")
    arch: str = field("lstm-1x128", help="architecture or preset name of nmt.models.lm (lstm, rm, rmr, mogrifier, "
                                         "lstm-3x128, rm+tM-g, rmr-tM-g, mogrifier-1x128, ...)")
    regime: str = field("sentence", help="'sentence' (state reset per line, equal-length batches; RMN paper) or "
                                         "'stream' (corpus as one stream, B x BPTT windows, state carried; "
                                         "Zaremba / Mogrifier)")
    equal_length: bool = field(True, help="sentence regime: every training batch holds sentences of one length "
                                          "(RMN paper); false = the trainer's length-bucketed, padded batches")
    max_len: int | None = field(None, help="sentence regime: drop training lines longer than this many words "
                                           "(never applied to validation or evaluation)")
    bptt: int = field(35, help="stream regime: window length L in tokens (truncated BPTT)")
    carry_state: bool = field(True, help="stream regime: carry the state from each window into the next "
                                         "(Zaremba / Mogrifier); false = every window of --bptt tokens starts "
                                         "from a zero state, as fairseq's language_modeling blocks "
                                         "(--sample-break-mode none) do, in training and validation")
    eval_streams: int = field(1, help="stream regime: rows the validation stream is cut into (1 = exact, "
                                      "the same figure nmt-lm-eval gives)")
    eval_batch_size: int = field(64, help="sentence regime: sentences per validation batch")

    def __post_init__(self) -> None:
        if self.regime not in REGIMES:
            raise ValueError(f"regime must be one of {REGIMES}, got {self.regime!r}")
        if self.bptt < 1 or self.eval_streams < 1 or self.eval_batch_size < 1:
            raise ValueError("bptt, eval_streams and eval_batch_size must be >= 1")

    def resolve_text(self, split: str) -> str:
        """The file of ``split`` (train, valid or test): the explicit path, else the registry's."""
        if split not in ("train", "valid", "test"):
            raise ValueError(f"split must be train, valid or test, got {split!r}")
        explicit = getattr(self, split)
        if explicit:
            return str(explicit)
        if not self.corpus:
            raise ValueError(f"--{split} is required when --corpus is not given")
        return str(registry_text(self.corpus, getattr(self, f"{split}_split"), self.lang))


def registry_text(corpus: str, split: str, lang: str | None = None) -> Path:
    """The monolingual text file of ``corpus``/``split`` (one side of a parallel corpus with ``lang``)."""
    from nmt.data.corpora import get_split

    files = get_split(corpus, split).files
    if "text" in files:
        return files["text"]
    if "tsv" in files:
        raise ValueError(f"{corpus}: TSV corpora are not supported as LM text; extract one column first")
    if lang is None or lang not in files:
        raise ValueError(f"{corpus} is parallel ({sorted(files)}): choose a side with --lang")
    return files[lang]


def read_sentences(path: str | Path, limit: int | None = None) -> list[list[str]]:
    """Words of each line (split as KenLM splits them); empty lines are kept as ``[]``."""
    out: list[list[str]] = []
    for line in iter_lines(path, allow_empty=True):
        if limit is not None and len(out) >= limit:
            break
        out.append(split_words(line))
    return out


def encode_all(vocab: Vocabulary, sentences: Sequence[Sequence[str]]) -> list[list[int]]:
    return [vocab.encode(s) for s in sentences]


def num_oov(vocab: Vocabulary, sentences: Sequence[Sequence[str]]) -> int:
    return sum(vocab.unk_count(s) for s in sentences)


def check_word_vocab(vocab: Any, path: str | Path) -> Vocabulary:
    if not isinstance(vocab, Vocabulary):
        raise ValueError(f"{path}: the LMs need a word vocabulary (token<TAB>count), not a SentencePiece model: "
                         "perplexities are per word")
    return vocab


# --------------------------------------------------------------------------- batch plans


def sentence_batches(lengths: Sequence[int], *, batch_size: int, max_tokens: int | None = None, seed: int = 0,
                     epoch: int = 0, shuffle: bool = True, equal_length: bool = True) -> list[np.ndarray]:
    """Batches of sentence indices, deterministic in ``(lengths, seed, epoch)``.

    ``equal_length``: sentences are grouped by length; each group (shuffled
    within) is cut into batches of ``batch_size`` (fewer if ``max_tokens`` /
    (length + 1) is smaller); the batch order is shuffled. The number of
    batches does not depend on the epoch. Otherwise the trainer's
    :func:`~nmt.data.batching.bucketed_batches` (mixed lengths, padded).
    """
    if not equal_length:
        return bucketed_batches(lengths, batch_size=batch_size, max_tokens=max_tokens, seed=seed, epoch=epoch,
                                shuffle=shuffle)
    lengths_arr = np.asarray(lengths, dtype=np.int64)
    rng = np.random.default_rng([seed, epoch])
    batches: list[np.ndarray] = []
    for length in np.unique(lengths_arr):
        idx = np.flatnonzero(lengths_arr == length)
        if shuffle:
            idx = rng.permutation(idx)
        per = batch_size
        if max_tokens:
            per = max(1, min(per, max_tokens // (int(length) + 1)))
        batches.extend(idx[i:i + per] for i in range(0, len(idx), per))
    if shuffle and batches:
        perm = rng.permutation(len(batches))
        batches = [batches[i] for i in perm]
    return batches


def stream_matrix(sentences: Sequence[Sequence[int]], rows: int) -> tuple[Tensor, Tensor]:
    """``(inputs, targets)`` [rows, C] of the stream ``</s> s1 </s> s2 </s> …``.

    The ``T = words + lines`` predicted tokens are cut into ``rows`` contiguous
    pieces of ``C = ceil(T / rows)``; the last row is padded with PAD (its PAD
    targets are ignored), so every token is predicted exactly once."""
    ids = [EOS]
    for s in sentences:
        ids.extend(s)
        ids.append(EOS)
    total = len(ids) - 1
    if total < 1:
        raise ValueError("the stream is empty")
    rows = max(1, min(rows, total))
    width = math.ceil(total / rows)
    flat = torch.full((rows * width + 1,), PAD, dtype=torch.long)
    flat[:len(ids)] = torch.as_tensor(ids, dtype=torch.long)
    inputs = flat[:-1].view(rows, width).clone()
    targets = flat[1:].view(rows, width).clone()
    # a row's first input is the previous row's last token: keep it (it is real context), but an input
    # position whose target is PAD is padding too
    inputs[targets == PAD] = PAD
    return inputs, targets


# --------------------------------------------------------------------------- the task


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
    """The :class:`~nmt.train.TrainingTask` of the language models (see the module docstring)."""

    def __init__(self, cfg: LMDataConfig, vocab: Vocabulary, train: list[list[int]], dev: list[list[int]], *,
                 batch_size: int, max_tokens: int | None = None, seed: int = 1, vocab_path: str = "",
                 loss_norm: str = "token"):
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
        if cfg.regime == "sentence":
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
            world = distributed.context().world
            if self.stream_in.size(0) < world:
                raise ValueError(f"stream regime: {self.stream_in.size(0)} rows cannot be shared by {world} "
                                 "processes (raise --batch-size)")
        self.train_tokens = sum(len(s) + 1 for s in self.train)
        self.dev = dev
        self._dev_batches: list[dict[str, Any]] | None = None
        # stream regime: the carried state (of this rank's rows), and the (epoch, window) it continues into
        self._carried: dict[str, Any] = {"train": None, "dev": None}
        self._carried_next: tuple[int, int] | None = None
        self._current: tuple[int | None, int] = (None, 0)

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
        plan: list[Any]
        if self.regime == "stream":
            plan = [StreamWindow(epoch, k) for k in range(self._num_batches)]
        else:
            plan = sentence_batches(self.train_len, batch_size=self.batch_size, max_tokens=self.max_tokens,
                                    seed=self.seed, epoch=epoch, shuffle=True, equal_length=self.cfg.equal_length)
        self._plan_cache = (epoch, plan)
        return plan

    def shard_batch(self, item: Any, rank: int, world: int) -> tuple[Any, float]:
        """DDP: this rank's part of a planned batch (sentences, or rows of a stream window)."""
        if isinstance(item, StreamWindow):
            lo, hi = distributed.rows_of(self.stream_in.size(0), rank, world)
            return item._replace(lo=lo, hi=hi), 1.0
        return distributed.shard(item, rank, world)

    def _rows(self) -> tuple[int, int]:
        ctx = distributed.context()
        return distributed.rows_of(self.stream_in.size(0), ctx.rank, ctx.world)

    def make_batch(self, item: Any) -> dict[str, Any]:
        if self.regime == "sentence":
            return self._sentence_batch([self.train[i] for i in item])
        if not isinstance(item, StreamWindow):
            raise TypeError(f"stream regime: make_batch takes a StreamWindow of batches_for_epoch(), got {item!r}")
        epoch, k = item.epoch, item.index
        if k > 0 and self._carried_next != (epoch, k):
            raise RuntimeError(f"stream regime: window {k} of epoch {epoch + 1} needs the state carried from window "
                               f"{k - 1}, but the task holds the state for {self._carried_next}; on resume, load "
                               "it with LMTask.load_extras(checkpoint)")
        self._current = (epoch, k)
        lo, hi = k * self.cfg.bptt, (k + 1) * self.cfg.bptt
        rows = slice(item.lo, item.hi)
        return {"kind": "train", "window": k, "inputs": self.stream_in[rows, lo:hi],
                "targets": self.stream_tgt[rows, lo:hi]}

    @staticmethod
    def _sentence_batch(sents: Sequence[Sequence[int]]) -> dict[str, Any]:
        lengths = torch.tensor([len(s) for s in sents], dtype=torch.long)
        tokens = torch.full((len(sents), max(1, int(lengths.max()))), PAD, dtype=torch.long)
        for i, s in enumerate(sents):
            if s:
                tokens[i, :len(s)] = torch.as_tensor(s, dtype=torch.long)
        return {"kind": "sentence", "tokens": tokens, "lengths": lengths}

    def dev_batches(self) -> list[dict[str, Any]]:
        if self._dev_batches is None:
            if not self.dev:
                raise ValueError("no validation sentences")
            if self.regime == "sentence":
                order = bucketed_batches([len(s) for s in self.dev], batch_size=self.cfg.eval_batch_size,
                                         shuffle=False)
                self._dev_batches = [self._sentence_batch([self.dev[i] for i in b]) for b in order]
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
        return extras

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
    train = read_sentences(train_path := cfg.resolve_text("train"), cfg.max_train_sentences)
    dev = read_sentences(valid_path := cfg.resolve_text("valid"), cfg.max_valid_sentences)
    for path, lines, what in ((train_path, train, "training"), (valid_path, dev, "validation")):
        if not lines:
            raise DataError(f"{path}: empty file (no {what} sentences)")
    return LMTask(cfg, vocab, encode_all(vocab, train), encode_all(vocab, dev), batch_size=batch_size,
                  max_tokens=max_tokens, seed=seed, vocab_path=vocab_path, loss_norm=loss_norm)


# --------------------------------------------------------------------------- scoring


def length_batches(sentences: Sequence[Sequence[int]], *, start: int = BOS, max_tokens: int = 2000
                   ) -> Iterator[tuple[list[int], Tensor, Tensor, Tensor]]:
    """Sentences sorted by length and cut into batches of at most ``max_tokens`` padded inputs:
    ``(indices into sentences, inputs [B, T] starting with start, targets, input lengths)``."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    i = 0
    while i < len(order):
        j = i + 1
        while j < len(order) and (len(sentences[order[j]]) + 1) * (j + 1 - i) <= max_tokens:
            j += 1
        idx = order[i:j]
        batch = LMTask._sentence_batch([sentences[k] for k in idx])
        inputs, targets, in_len = make_lm_batch(batch["tokens"], batch["lengths"])
        inputs[:, 0] = start
        yield idx, inputs, targets, in_len
        i = j


@torch.no_grad()
def sentence_token_logprobs(model: LanguageModel, sentences: Sequence[Sequence[int]], *, start: int = BOS,
                            max_tokens: int = 2000) -> list[np.ndarray]:
    """ln p of each word and of ``</s>`` per sentence (``n + 1`` values), each from a fresh state.

    ``start`` is the first context symbol (``<s>`` for sentence-trained models,
    ``</s>`` for stream-trained ones). Sentences are batched by length; results
    come back in input order. Call ``model.eval()`` first.
    """
    out: list[np.ndarray | None] = [None] * len(sentences)
    for idx, inputs, targets, in_len in length_batches(sentences, start=start, max_tokens=max_tokens):
        logits, _ = model(inputs, None, lengths=in_len)
        logp = torch.log_softmax(logits.float(), -1).gather(2, targets.unsqueeze(-1)).squeeze(-1)
        logp = logp.double().cpu().numpy()
        for row, k in enumerate(idx):
            out[k] = logp[row, :int(in_len[row])].copy()
    return out  # type: ignore[return-value]


@torch.no_grad()
def stream_token_logprobs(model: LanguageModel, sentences: Sequence[Sequence[int]], *, window: int = 256,
                          carry: bool = True) -> list[np.ndarray]:
    """ln p of each word and ``</s>`` per line, reading the lines as one stream (``</s>`` first),
    with the state carried across lines; one row, so nothing is cut. The result does not depend on
    ``window`` (the models continue exactly from a carried state). ``carry=False``: every block of
    ``window`` tokens starts from a zero state (fairseq-eval-lm's ``--tokens-per-sample`` blocks; the
    block's first input is still the token before it). Call ``model.eval()`` first."""
    inputs, targets = stream_matrix(sentences, 1)
    pieces = []
    state = None
    for lo in range(0, inputs.size(1), window):
        logits, state = model(inputs[:, lo:lo + window], state if carry else None)
        tgt = targets[:, lo:lo + window]
        pieces.append(torch.log_softmax(logits.float(), -1).gather(2, tgt.unsqueeze(-1)).squeeze(-1)[0])
    flat = torch.cat(pieces).double().cpu().numpy()
    out, pos = [], 0
    for s in sentences:
        out.append(flat[pos:pos + len(s) + 1].copy())
        pos += len(s) + 1
    return out


def token_logprobs(model: LanguageModel, sentences: Sequence[Sequence[int]], regime: str, *, start: int = BOS,
                   window: int = 256, max_tokens: int = 2000, block: int = 0) -> list[np.ndarray]:
    """Per-line ln p (words and ``</s>``) in ``regime``; ``block`` > 0 (stream regime only): a zero
    state every ``block`` tokens instead of the carried state."""
    if regime == "sentence":
        if block:
            raise ValueError("block applies to the stream regime only")
        return sentence_token_logprobs(model, sentences, start=start, max_tokens=max_tokens)
    if regime == "stream":
        if block:
            return stream_token_logprobs(model, sentences, window=block, carry=False)
        return stream_token_logprobs(model, sentences, window=window)
    raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")


def perplexity(logprobs: Sequence[np.ndarray], words: Sequence[Sequence[str]], vocab: Vocabulary
               ) -> PerplexityResult:
    """By the project's accounting: N = words + one ``</s>`` per line, OOVs included and counted."""
    acc = PerplexityAccumulator()
    for lp, ws in zip(logprobs, words):
        if len(lp) != len(ws) + 1:
            raise RuntimeError(f"{len(lp)} log-probabilities for {len(ws)} words + </s>")
        acc.add(math.fsum(lp.tolist()), len(ws), vocab.unk_count(ws))
    return acc.result()


# --------------------------------------------------------------------------- loading


@dataclass
class LoadedLM:
    model: LanguageModel
    vocab: Vocabulary
    config: dict[str, Any]
    path: Path

    @property
    def regime(self) -> str:
        return self.config.get("data", {}).get("regime", "sentence")

    @property
    def start(self) -> int:
        """First context symbol of an independent sentence: what the model was trained with."""
        return EOS if self.regime == "stream" else BOS

    def data_config(self) -> LMDataConfig:
        names = {f.name for f in dataclasses.fields(LMDataConfig)}
        return LMDataConfig(**{k: v for k, v in self.config.get("data", {}).items() if k in names})


def load_language_model(path: str | Path, *, which: str = "auto", vocab: str | None = None,
                        device: str = "cpu", trust: bool | None = None) -> LoadedLM:
    """Load ``path`` (a checkpoint, or a model folder and ``which``: best, last or auto) in eval mode.

    The vocabulary defaults to the model folder's ``vocab.tsv``; one whose
    fingerprint differs from the checkpoint's is refused. ``trust``: see
    :func:`nmt.checkpoint.load_checkpoint` (default ``$RNNSMT_TRUST_CHECKPOINTS``)."""
    ckpt_path = resolve_checkpoint(path, which)
    state = load_checkpoint(ckpt_path, trust=trust)
    config = state.get("config", {})
    if config.get("task") != "lm":
        raise ValueError(f"{ckpt_path}: not a language-model checkpoint (task {config.get('task')!r})")
    recorded = state["vocab"]
    candidates = [vocab] if vocab else [str(ckpt_path.parent / "vocab.tsv"), recorded.get("path", "")]
    existing = [c for c in candidates if c and Path(c).is_file()]
    if not existing:
        raise FileNotFoundError(f"{ckpt_path}: vocabulary not found (tried {candidates})")
    voc = check_word_vocab(load_vocab(existing[0]), existing[0])
    if voc.fingerprint() != recorded["fingerprint"]:
        raise ValueError(f"{existing[0]}: model/vocabulary mismatch: this vocabulary (fingerprint {voc.fingerprint()}, "
                         f"{len(voc)} entries) is not the vocabulary {ckpt_path} was trained with (fingerprint "
                         f"{recorded['fingerprint']}, {recorded.get('size', '?')} entries)")
    model_cls, _ = ARCHITECTURES[config["arch"]]
    model = model_cls.from_config(dict(config["model"]), len(voc))
    model.load_state_dict(state["model"])
    model.to(device).eval()
    return LoadedLM(model, voc, config, ckpt_path)

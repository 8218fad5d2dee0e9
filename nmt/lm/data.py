"""Language-model data: the data config, reading and encoding the text, and the batch tensors.

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

Accounting (``nmt.core.perplexity``, the project's one convention): the
loss is in nats per predicted token, tokens = words + one ``</s>`` per line,
``<s>`` (or the stream's leading ``</s>``) is context only. An empty line is a
sentence of zero words: it predicts only ``</s>`` and counts one token; it is
never dropped. The literal ``<unk>`` of PTB is the vocabulary word ``<unk>``
(id 1): trained and scored like any other word. Words outside the vocabulary
map to it too (counted as OOVs in the evaluation report).

The training task that uses them is :mod:`nmt.lm.task`; scoring is :mod:`nmt.lm.scoring`; loading a
trained model is :mod:`nmt.lm.loading`.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from nmt.core.config import field
from nmt.data.batching import bucketed_batches
from nmt.core.io import iter_lines
from nmt.data.vocab import Vocabulary
from nmt.data.special import EOS, PAD
from nmt.core.perplexity import split_words


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
    stream_buffer: int | None = field(None, help="read the training text from disk each epoch instead of holding "
                                                 "it (nmt.lm.stream): sentence regime: shuffle and batch within "
                                                 "windows of N sentences; stream regime: the B rows are read "
                                                 "lazily, same batches as in memory (N unused). Default: in memory")

    def __post_init__(self) -> None:
        if self.regime not in REGIMES:
            raise ValueError(f"regime must be one of {REGIMES}, got {self.regime!r}")
        if self.bptt < 1 or self.eval_streams < 1 or self.eval_batch_size < 1:
            raise ValueError("bptt, eval_streams and eval_batch_size must be >= 1")
        if self.stream_buffer is not None and self.stream_buffer < 1:
            raise ValueError(f"--stream-buffer must be at least 1 (got {self.stream_buffer})")

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
    return list(iter_sentences(path, limit))


def iter_sentences(path: str | Path, limit: int | None = None) -> Iterator[list[str]]:
    """:func:`read_sentences`, one line at a time."""
    for n, line in enumerate(iter_lines(path, allow_empty=True)):
        if limit is not None and n >= limit:
            break
        yield split_words(line)


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


def sentence_batch(sents: Sequence[Sequence[int]]) -> dict[str, Any]:
    """Sentences of ids as one padded batch: ``{"kind": "sentence", "tokens" [B, T], "lengths" [B]}``."""
    lengths = torch.tensor([len(s) for s in sents], dtype=torch.long)
    tokens = torch.full((len(sents), max(1, int(lengths.max()))), PAD, dtype=torch.long)
    for i, s in enumerate(sents):
        if s:
            tokens[i, :len(s)] = torch.as_tensor(s, dtype=torch.long)
    return {"kind": "sentence", "tokens": tokens, "lengths": lengths}

"""An LM training text read from disk (``nmt-lm-train --stream-buffer N``): memory bounded by a setting, not the text.

* stream regime (:class:`StreamRows`): the rows of :func:`nmt.lm.data.stream_matrix` —
  the token stream ``</s> s1 </s> s2 </s> …`` cut into ``B`` contiguous rows of
  ``C = ceil(T / B)`` tokens — read lazily, each row by its own reader from its own
  offset in the file. One pass at start counts the lines and tokens and keeps a
  sparse index (byte offset and token position of every 1024th line); a reader
  seeks to the index entry before its position and reads on. Every window is
  exactly the in-memory window (same batches, same losses); memory is ``B`` readers
  plus one window of ``B x BPTT`` ids. ``N`` is not used (any value turns it on).
* sentence regime (:func:`sentence_stream`): the sentences (after ``--max-len``) in
  file order, cut into windows of ``N`` sentences, batched within a window by
  :func:`nmt.lm.data.sentence_batches` seeded by ``(seed, epoch, window)`` — the
  machinery of :class:`nmt.training.pair_stream.PairStream` (a pair with an empty target
  side), exact resume included. With ``N`` >= the number of sentences the batches
  are those of the in-memory path.

Lines are read strictly (invalid UTF-8 or a corrupt ``.gz`` stops with ``FILE:LINE``),
decoded as :func:`nmt.core.io.iter_lines` does (a BOM dropped, ``\\n`` / ``\\r\\n``
stripped, empty lines kept) and split by :func:`nmt.core.perplexity.split_words`.
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import torch
from torch import Tensor

from nmt.core.io import GZIP_ERRORS, DataError, open_text
from nmt.data.special import EOS, PAD
from nmt.lm.data import sentence_batches
from nmt.training.pair_stream import PairStream
from nmt.core.perplexity import split_words

INDEX_EVERY = 1024  # lines between two entries of the sparse line index


def _words(path: str | Path, raw: bytes, line_no: int) -> list[str]:
    """The words of one raw line (``line_no`` 1-based), decoded strictly."""
    if raw.endswith(b"\n"):
        raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(path, line_no, f"invalid UTF-8 byte(s) {raw[err.start:err.end]!r} at byte {err.start} "
                                       "of the line") from None
    if line_no == 1 and text.startswith("\ufeff"):
        text = text[1:]
    return split_words(text)


def iter_words(path: str | Path, limit: int | None = None, start: tuple[int, int] = (0, 0)
               ) -> Iterator[tuple[int, list[str]]]:
    """``(byte offset, words)`` of each line from ``start = (byte offset, 0-based line)``, at most ``limit``
    lines of the file in all."""
    offset, line = start
    with open_text(path, "rb") as fh:
        if offset:
            fh.seek(offset)
        try:
            for raw in fh:
                if limit is not None and line >= limit:
                    return
                line += 1
                yield offset, _words(path, raw, line)
                offset += len(raw)
        except GZIP_ERRORS as err:
            raise DataError(path, line + 1, f"corrupt or truncated gzip stream: {err}") from None


class StreamRows:
    """The ``rows`` x ``width`` training stream of ``path``, windows of ``bptt`` columns read lazily."""

    def __init__(self, path: str | Path, encode: Callable[[list[str]], list[int]], rows: int, bptt: int,
                 limit: int | None = None):
        self.path, self.encode, self.bptt, self.limit = str(path), encode, bptt, limit
        self._index: list[tuple[int, int, int]] = []  # (byte offset, 0-based line, stream position of its 1st id)
        pos, lines = 1, 0                             # position 0 is the leading </s>
        for offset, words in iter_words(path, limit):
            if lines % INDEX_EVERY == 0:
                self._index.append((offset, lines, pos))
            pos += len(words) + 1
            lines += 1
        self.num_lines, self.total = lines, pos - 1   # total: predicted tokens (words + one </s> per line)
        if self.total < 1:
            raise ValueError("the stream is empty")
        self.rows = max(1, min(rows, self.total))
        self.width = math.ceil(self.total / self.rows)
        self.num_windows = math.ceil(self.width / bptt)
        self._readers: dict[int, Iterator[int]] = {}
        self._pending: dict[int, list[int]] = {}      # ids read ahead of each row (the next window's first input)
        self._next: tuple[int, int, int] | None = None

    def _ids_from(self, p: int) -> Iterator[int]:
        """The stream's ids from position ``p`` to its end."""
        if p == 0:
            yield EOS
            p = 1
        j = bisect.bisect_right([pos for _, _, pos in self._index], p) - 1
        offset, line, pos = self._index[max(j, 0)]
        for _, words in iter_words(self.path, self.limit, (offset, line)):
            if pos + len(words) + 1 > p:
                ids = self.encode(words)
                ids.append(EOS)
                yield from ids[max(0, p - pos):]
            pos += len(words) + 1

    def window(self, k: int, lo: int = 0, hi: int | None = None) -> tuple[Tensor, Tensor]:
        """``(inputs, targets)`` of window ``k``, rows ``[lo, hi)``: the in-memory matrices' columns
        ``[k*bptt, (k+1)*bptt)``."""
        hi = self.rows if hi is None else hi
        if self._next != (k, lo, hi):  # a fresh start (new epoch, resume): one reader per row, at its position
            self.close()
            for r in range(lo, hi):
                self._readers[r] = self._ids_from(r * self.width + k * self.bptt)
                self._pending[r] = []
        n = min(self.bptt, self.width - k * self.bptt)
        inputs = torch.full((hi - lo, n), PAD, dtype=torch.long)
        targets = torch.full((hi - lo, n), PAD, dtype=torch.long)
        for r in range(lo, hi):
            got = self._pending[r]
            got.extend(next(self._readers[r], PAD) for _ in range(n + 1 - len(got)))
            inputs[r - lo] = torch.as_tensor(got[:n])
            targets[r - lo] = torch.as_tensor(got[1:n + 1])
            self._pending[r] = got[n:]
        inputs[targets == PAD] = PAD
        self._next = (k + 1, lo, hi)
        return inputs, targets

    def close(self) -> None:
        for reader in self._readers.values():
            reader.close()  # type: ignore[attr-defined]
        self._readers, self._pending, self._next = {}, {}, None


def lm_sentences(path: str | Path, limit: int | None, max_len: int | None, counts: dict[str, int] | None = None
                 ) -> Iterator[tuple[list[str], tuple[()]]]:
    """The lines of ``path`` as ``(words, ())`` pairs, those longer than ``max_len`` dropped; ``counts``
    receives ``unique`` (lines read), ``dropped`` and ``tokens`` (words + one ``</s>`` per line kept)."""
    read = dropped = tokens = 0
    for _, words in iter_words(path, limit):
        read += 1
        if max_len is not None and len(words) > max_len:
            dropped += 1
        else:
            tokens += len(words) + 1
            yield words, ()
    if counts is not None:
        counts.update(unique=read, dropped=dropped, tokens=tokens)


def sentence_stream(path: str | Path, encode: Callable[[list[str]], list[int]], *, buffer: int,
                    batch_size: int, max_tokens: int | None, seed: int, limit: int | None,
                    max_len: int | None, equal_length: bool) -> PairStream:
    """The sentence regime's training sentences as a :class:`~nmt.training.pair_stream.PairStream` (windows of
    ``buffer`` sentences, batches of :func:`nmt.lm.data.sentence_batches`)."""
    return PairStream(str(path), encode, lambda _: [], max_len=max_len or 0, buffer=buffer, batch_size=batch_size,
                      max_tokens=max_tokens, seed=seed, pairs=partial(lm_sentences, path, limit, max_len),
                      batcher=partial(sentence_batches, equal_length=equal_length), plain_first_window=True)

"""Training pairs read as a stream: shuffle windows of N pairs, length-bucketed batches, exact resume.

``nmt-train --stream-buffer N`` trains without holding the training pairs in
memory. The source of pairs is a function re-run every epoch: the unique pairs of
a phrase table (``--phrase-table``, :func:`unique_pairs_in_order`), the sentence
pairs of two aligned files (:func:`sentence_pairs_in_order`), or the sentences of
an LM text (``nmt-lm-train --stream-buffer``, :mod:`nmt.lm.stream`, target side
empty, its own batcher). A table is read with the strict reader
(:func:`nmt.core.formats.phrase_table_reader.iter_phrase_table`: a bad line stops
with ``FILE:LINE``) every epoch. A Moses table is sorted by source phrase, so the
lines of one source are adjacent and uniqueness is checked per source group (no
global set; an unsorted table is refused at its first out-of-order line). The
unique pairs that pass ``--max-len`` are cut, in table order, into windows of N
pairs; each window is cut into length-bucketed batches by
:func:`nmt.data.batching.bucketed_batches` seeded by ``(seed, epoch, window)``
and its batch order shuffled. Mixing is therefore within a window of N
consecutive unique pairs (sources close in sort order): pick N as large as
memory allows.

A first pass (at start) counts the pairs and the batches of every window; a
window's batch count depends only on its lengths, not on the seed, so every
epoch has the same number of batches and the trainer's ``batch_in_epoch`` is a
data position: on resume the stream skips the windows before it (reading, not
encoding) and rebuilds the same window with the same seed, giving identical
batches. Memory is one window (flat int32 arrays) plus one int per window.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from nmt.data.batching import bucketed_batches
from nmt.core.io import DataError

Encode = Callable[[list[str]], list[int]]
Pairs = Callable[[dict[str, int] | None], Iterator[tuple[Sequence[str], Sequence[str]]]]
Batcher = Callable[..., list[np.ndarray]]


class StreamBatch(NamedTuple):
    """One planned batch: positions ``indices`` inside window ``window`` of ``epoch``; ``number``: its index
    in the epoch."""
    epoch: int
    window: int
    number: int
    indices: np.ndarray


def unique_pairs_in_order(table: str, max_len: int, counts: dict[str, int] | None = None
                          ) -> Iterator[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The unique (source, target) pairs of a source-sorted table in table order, at most ``max_len`` tokens a
    side. ``counts`` (if given) receives ``unique`` and ``dropped``."""
    from nmt.core.formats.phrase_table_reader import iter_phrase_table

    group: set[tuple[str, ...]] = set()
    prev_key: str | None = None
    prev_src: tuple[str, ...] | None = None
    unique = dropped = 0
    for entry in iter_phrase_table(table, keep_raw=False):
        if entry.src != prev_src:
            key = " ".join(entry.src) + " |||"
            if prev_key is not None and key < prev_key:
                raise DataError(f"{table}:{entry.line_no}: table not sorted by source phrase (LC_ALL=C sort "
                                "order; --stream-buffer needs the lines of one source adjacent)")
            prev_key, prev_src = key, entry.src
            group = set()
        if entry.tgt in group:
            continue
        group.add(entry.tgt)
        unique += 1
        if len(entry.src) > max_len or len(entry.tgt) > max_len:
            dropped += 1
        else:
            yield entry.src, entry.tgt
    if counts is not None:
        counts["unique"], counts["dropped"] = unique, dropped


def sentence_pairs_in_order(src_path: str, tgt_path: str, max_len: int, counts: dict[str, int] | None = None
                            ) -> Iterator[tuple[list[str], list[str]]]:
    """The tokenized sentence pairs of two aligned files in file order, at most ``max_len`` tokens a side
    (strict reader: FILE:LINE on a bad line or a length mismatch). ``counts`` receives ``unique`` (pairs
    read) and ``dropped``."""
    from nmt.core.io import iter_parallel

    read = dropped = 0
    for s, t in iter_parallel(src_path, tgt_path):
        read += 1
        src, tgt = s.split(), t.split()
        if len(src) > max_len or len(tgt) > max_len:
            dropped += 1
        else:
            yield src, tgt
    if counts is not None:
        counts["unique"], counts["dropped"] = read, dropped


class _Window:
    """The encoded pairs of one window as flat int32 arrays, and its planned batches."""

    def __init__(self, src: list[list[int]], tgt: list[list[int]]):
        self.src_off = np.cumsum([0] + [len(s) for s in src], dtype=np.int64)
        self.tgt_off = np.cumsum([0] + [len(t) for t in tgt], dtype=np.int64)
        self.src = np.fromiter((i for s in src for i in s), dtype=np.int32, count=int(self.src_off[-1]))
        self.tgt = np.fromiter((i for t in tgt for i in t), dtype=np.int32, count=int(self.tgt_off[-1]))
        self.lengths = [max(len(s), len(t)) for s, t in zip(src, tgt)]

    def pair(self, i: int) -> tuple[list[int], list[int]]:
        return (self.src[self.src_off[i]:self.src_off[i + 1]].tolist(),
                self.tgt[self.tgt_off[i]:self.tgt_off[i + 1]].tolist())


class PairStream:
    """The streamed pairs of ``table``: counts (first pass) and the batch plan of every epoch.

    ``pairs``: the source of pairs, called with a counts dict (or None) once per read (default: the unique
    pairs of the phrase table ``table``; otherwise ``table`` only names the data in messages). ``batcher``:
    the planner of a window's batches, called like :func:`~nmt.data.batching.bucketed_batches`.
    ``plain_first_window``: seed window 0 with ``epoch`` alone (the others with ``(epoch, window)``), so
    a window holding every pair plans the in-memory batches of every epoch (new sources; a table's
    stream keeps its seeding)."""

    def __init__(self, table: str, encode_src: Encode, encode_tgt: Encode, *, max_len: int, buffer: int,
                 batch_size: int, max_tokens: int | None, seed: int, pairs: Pairs | None = None,
                 batcher: Batcher = bucketed_batches, plain_first_window: bool = False):
        if buffer < 1:
            raise ValueError(f"--stream-buffer must be at least 1 (got {buffer})")
        self.table, self.max_len, self.buffer = table, max_len, buffer
        self.read_pairs: Pairs = pairs or (lambda counts: unique_pairs_in_order(table, max_len, counts))
        self.batcher, self.plain_first_window = batcher, plain_first_window
        self.encode_src, self.encode_tgt = encode_src, encode_tgt
        self.batch_size, self.max_tokens, self.seed = batch_size, max_tokens, seed
        counts: dict[str, int] = {"unique": 0, "dropped": 0}
        self.window_batches: list[int] = []   # number of batches of each window (the same every epoch)
        self.num_pairs = 0
        lengths: list[int] = []
        for src, tgt in self.read_pairs(counts):
            lengths.append(max(len(src), len(tgt)))
            self.num_pairs += 1
            if len(lengths) == buffer:
                self.window_batches.append(self._count_batches(lengths))
                lengths = []
        if lengths:
            self.window_batches.append(self._count_batches(lengths))
        self.num_unique, self.num_dropped = counts["unique"], counts["dropped"]
        self.counts = counts  # what the source of pairs counted (its own keys too)
        self.first_batch = np.cumsum([0] + self.window_batches).tolist()  # epoch index of each window's first batch
        self._reader: Iterator[tuple[int, _Window]] | None = None
        self._next_window = 0        # the window the open reader yields next
        self._current: tuple[int, int, _Window, list[np.ndarray]] | None = None  # epoch, window, data, batches

    def _batches(self, data: _Window, epoch: int, w: int) -> list[np.ndarray]:
        return self.batcher(data.lengths, batch_size=self.batch_size, max_tokens=self.max_tokens,
                            seed=self.seed, epoch=epoch if w == 0 and self.plain_first_window else (epoch << 32) | w)

    def _count_batches(self, lengths: list[int]) -> int:
        return len(self.batcher(lengths, batch_size=self.batch_size, max_tokens=self.max_tokens, shuffle=False))

    @property
    def num_batches(self) -> int:
        return self.first_batch[-1]

    def _windows(self, start: int) -> Iterator[tuple[int, _Window]]:
        """Windows ``start``, ``start + 1``, ... of a fresh read of the table (those before ``start`` are skipped
        without encoding)."""
        skip = start * self.buffer
        src: list[list[int]] = []
        tgt: list[list[int]] = []
        w = start
        for k, (s, t) in enumerate(self.read_pairs(None)):
            if k < skip:
                continue
            src.append(self.encode_src(list(s)))
            tgt.append(self.encode_tgt(list(t)))
            if len(src) == self.buffer:
                yield w, _Window(src, tgt)
                src, tgt, w = [], [], w + 1
        if src:
            yield w, _Window(src, tgt)

    def window(self, epoch: int, w: int) -> tuple[_Window, list[np.ndarray]]:
        """Window ``w`` of ``epoch`` and its batches (reading on from the open stream, or re-reading the table)."""
        cur = self._current
        if cur is not None and cur[1] == w:  # a window's pairs are the same every epoch, only its batches differ
            if cur[0] != epoch:
                self._current = (epoch, w, cur[2], self._batches(cur[2], epoch, w))
            return self._current[2], self._current[3]
        if self._reader is None or w < self._next_window:
            self._reader, self._next_window = self._windows(w), w
        cur = self._current = None  # release the previous window before reading the next
        for got, data in self._reader:
            self._next_window = got + 1
            if got == w:
                batches = self._batches(data, epoch, w)
                if len(batches) != self.window_batches[w]:
                    raise DataError(f"{self.table}: changed while training (window {w} has {len(batches)} "
                                    f"batches, {self.window_batches[w]} at start)")
                self._current = (epoch, w, data, batches)
                return data, batches
        raise DataError(f"{self.table}: changed while training (window {w} of {len(self.window_batches)} missing)")

    def plan(self, epoch: int) -> "EpochPlan":
        return EpochPlan(self, epoch)

    def pairs_consumed(self, item: StreamBatch) -> int:
        """Pairs of the epoch handed out up to and including ``item`` (the data position)."""
        _, batches = self.window(item.epoch, item.window)
        j = item.number - self.first_batch[item.window]
        return item.window * self.buffer + sum(len(b) for b in batches[:j + 1])

    def pairs(self, item: StreamBatch) -> tuple[list[list[int]], list[list[int]]]:
        data, _ = self.window(item.epoch, item.window)
        got = [data.pair(int(i)) for i in item.indices]
        return [s for s, _ in got], [t for _, t in got]


class EpochPlan(Sequence):
    """The batches of one epoch, built lazily window by window (the trainer walks them in order)."""

    def __init__(self, stream: PairStream, epoch: int):
        self.stream, self.epoch = stream, epoch

    def __len__(self) -> int:
        return self.stream.num_batches

    def __getitem__(self, i: Any) -> StreamBatch:  # type: ignore[override]
        if isinstance(i, slice):
            raise TypeError("EpochPlan: index one batch at a time")
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        w = bisect.bisect_right(self.stream.first_batch, i) - 1
        _, batches = self.stream.window(self.epoch, w)
        return StreamBatch(self.epoch, w, i, batches[i - self.stream.first_batch[w]])

"""Decoding sentences in order, in worker processes forked after the model was loaded (:class:`DecodingPool`,
:func:`decode_corpus`)."""
from __future__ import annotations

import gc
import itertools
import multiprocessing
import signal
from collections.abc import Iterable, Iterator, Sequence

from nmt.core.pools import ordered_map

from smt_features.decode.decoder import Decoder
from smt_features.decode.hypothesis import DecodeResult

_WORKER: Decoder | None = None
#: Chunks of sentences handed to the pool per worker ahead of the one being read: enough to keep every worker busy,
#: few enough that an error (or a reader that stops) leaves little work for close() to finish.
CHUNKS_AHEAD_PER_WORKER = 32


def _set_worker(decoder: Decoder, ignore_interrupt: bool = False) -> None:
    """A worker's initializer: the decoder it inherited at the fork (not pickled); ``ignore_interrupt``: SIGINT and
    SIGTERM (a Ctrl-C, or a service manager's stop, sent to the whole process group) are the parent's to handle."""
    global _WORKER
    _WORKER = decoder
    if ignore_interrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _worker_decode(item: tuple[int, str, int, bool]) -> DecodeResult:
    assert _WORKER is not None
    sent_id, line, nbest, distinct = item
    return _WORKER.decode(line.split(), nbest=nbest, distinct=distinct, sent_id=sent_id)


def _worker_decode_chunk(items: list[tuple[int, str, int, bool]]) -> list[DecodeResult]:
    return [_worker_decode(item) for item in items]


class DecodingPool:
    """``threads`` worker processes forked once, after the model was loaded, so they share it (copy on write);
    ``threads <= 1`` decodes in this process. :meth:`decode` may be called many times (and from several threads
    at once: the workers take the sentences of every call from one queue); close the pool when done.
    ``ignore_interrupt``: the workers ignore SIGINT and SIGTERM (a server finishes its work when its process group
    is told to stop: a worker killed while waiting for work would leave the pool's queue locked). Leaving the pool
    on an error closes it after the few chunks handed to it (:mod:`nmt.core.pools`: ``Pool.terminate()`` can hang
    for ever when a worker is killed while writing its n-best list); only a ``KeyboardInterrupt`` terminates it,
    unless ``ignore_interrupt``."""

    def __init__(self, decoder: Decoder, threads: int = 1, *, ignore_interrupt: bool = False) -> None:
        self.decoder = decoder
        self.threads = max(1, int(threads))
        self.ignore_interrupt = ignore_interrupt
        self._pool = None
        if self.threads > 1:
            if "fork" not in multiprocessing.get_all_start_methods():
                raise RuntimeError("--threads > 1 needs the 'fork' start method (Linux/macOS)")
            # Move the loaded model out of the collector's reach before forking: a full collection in a
            # worker would otherwise touch (and so copy) every page of the shared phrase table.
            gc.collect()
            gc.freeze()
            try:
                self._pool = multiprocessing.get_context("fork").Pool(
                    self.threads, initializer=_set_worker, initargs=(decoder, ignore_interrupt))
            finally:
                gc.unfreeze()  # the workers keep their frozen copy; this process collects as before

    def decode(self, lines: Iterable[str], *, nbest: int | Sequence[int] = 0, distinct: bool | Sequence[bool] = False,
               chunksize: int = 2, first_id: int = 0) -> Iterator[DecodeResult]:
        """Decode tokenized sentences (ids ``first_id``, ``first_id + 1``, …), results in input order; ``nbest`` and
        ``distinct``: one for every sentence, or one per sentence."""
        sizes = itertools.repeat(nbest) if isinstance(nbest, int) else iter(nbest)
        kinds = itertools.repeat(distinct) if isinstance(distinct, bool) else iter(distinct)
        items = ((first_id + i, line, next(sizes), next(kinds)) for i, line in enumerate(lines))
        if self._pool is None:
            for i, line, n, d in items:
                yield self.decoder.decode(line.split(), nbest=n, distinct=d, sent_id=i)
            return
        size = max(1, chunksize)
        chunks = iter(lambda: list(itertools.islice(items, size)), [])
        for results in ordered_map(self._pool, _worker_decode_chunk, chunks, CHUNKS_AHEAD_PER_WORKER * self.threads):
            yield from results

    def close(self) -> None:
        """Stop the worker processes (after the work already queued)."""
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None

    def __enter__(self) -> "DecodingPool":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None and exc[0] is KeyboardInterrupt and not self.ignore_interrupt:
            self._pool.terminate()  # the user asked to stop now; an error closes after the chunks in flight
            self._pool.join()
            self._pool = None
        self.close()


def decode_corpus(decoder: Decoder, lines: Iterable[str], *, threads: int = 1, nbest: int = 0,
                  distinct: bool = False, chunksize: int = 2) -> Iterator[DecodeResult]:
    """Decode tokenized sentences in order; ``threads > 1`` forks that many worker processes
    (:class:`DecodingPool`) for this call; results come back in input order."""
    with DecodingPool(decoder, threads) as pool:
        yield from pool.decode(lines, nbest=nbest, distinct=distinct, chunksize=chunksize)

"""Decoding a corpus in order, in worker processes forked after the model was loaded (:func:`decode_corpus`)."""
from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Iterable, Iterator

from smt_features.decode.decoder import Decoder
from smt_features.decode.hypothesis import DecodeResult

_WORKER: tuple | None = None


def _worker_decode(item: tuple[int, str]) -> DecodeResult:
    assert _WORKER is not None
    decoder, nbest, distinct = _WORKER
    sent_id, line = item
    return decoder.decode(line.split(), nbest=nbest, distinct=distinct, sent_id=sent_id)


def decode_corpus(decoder: Decoder, lines: Iterable[str], *, threads: int = 1, nbest: int = 0,
                  distinct: bool = False, chunksize: int = 2) -> Iterator[DecodeResult]:
    """Decode tokenized sentences in order; ``threads > 1`` forks that many worker processes.

    The workers are forked after the model was loaded, so they share it
    (copy on write); results come back in input order.
    """
    global _WORKER
    items = ((i, line) for i, line in enumerate(lines))
    if threads <= 1:
        for i, line in items:
            yield decoder.decode(line.split(), nbest=nbest, distinct=distinct, sent_id=i)
        return
    if "fork" not in multiprocessing.get_all_start_methods():
        raise RuntimeError("--threads > 1 needs the 'fork' start method (Linux/macOS)")
    _WORKER = (decoder, nbest, distinct)
    ctx = multiprocessing.get_context("fork")
    # Move the loaded model out of the collector's reach before forking: a full collection in a
    # worker would otherwise touch (and so copy) every page of the shared phrase table.
    gc.collect()
    gc.freeze()
    try:
        with ctx.Pool(threads) as pool:
            yield from pool.imap(_worker_decode, items, chunksize=chunksize)
    finally:
        _WORKER = None
        gc.unfreeze()

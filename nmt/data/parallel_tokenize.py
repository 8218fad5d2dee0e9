"""Tokenize a stream of sentence pairs in chunks, in worker processes, in order, memory-bounded.

``tokenize_stream(pairs, spec, workers)`` yields ``(pair, tokens)`` in the input order, whatever the
number of workers (the output is the same for any number): ``tokens`` is ``(src_tokens, tgt_tokens)``,
or ``None`` for a pair with an empty side (unless ``keep_empty``). At most ``2 × workers`` chunks are in
flight, so memory is bounded by the chunk size, not by the corpus. ``spec`` describes the tokenizers
(picklable): ``{"kind": "moses"|"sentencepiece", "langs": (src, tgt), "lowercase": bool,
"sp_models": {lang: path}}``.
"""
from __future__ import annotations

import functools
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from nmt.core.pools import fork_pool, ordered_map
from nmt.data.tokenize import MosesTokenizer
from nmt.data.vocab import SentencePieceVocab

CHUNK_PAIRS = 1000
Pair = tuple[str, str]
Tokens = tuple[list[str], list[str]]

_TOKENIZE: list[Callable[[str], list[str]]] = []  # this process's tokenizers (src, tgt)


def make_tokenizers(spec: dict[str, Any]) -> list[Callable[[str], list[str]]]:
    """The (src, tgt) tokenize functions that ``spec`` describes."""
    langs, lowercase = spec["langs"], spec["lowercase"]
    if spec["kind"] == "moses":
        return [MosesTokenizer(lang, lowercase=lowercase).tokenize for lang in langs]
    models = {lang: SentencePieceVocab.load(path) for lang, path in spec["sp_models"].items()}
    lower = (lambda s: s.lower()) if lowercase else (lambda s: s)
    return [lambda s, m=models[lang]: m.pieces(lower(s)) for lang in langs]


def _init(spec: dict[str, Any]) -> None:
    _TOKENIZE[:] = make_tokenizers(spec)


def _chunk(pairs: list[Pair], keep_empty: bool) -> list[Tokens | None]:
    src_tok, tgt_tok = _TOKENIZE
    return [None if not keep_empty and (not s.strip() or not t.strip()) else (src_tok(s), tgt_tok(t))
            for s, t in pairs]


def _chunks(pairs: Iterable[Pair]) -> Iterator[list[Pair]]:
    it = iter(pairs)
    while chunk := list(itertools.islice(it, CHUNK_PAIRS)):
        yield chunk


def tokenize_stream(pairs: Iterable[Pair], spec: dict[str, Any], workers: int = 1, *,
                    keep_empty: bool = False) -> Iterator[tuple[Pair, Tokens | None]]:
    """See the module docstring."""
    if workers <= 1:
        _init(spec)
        for chunk in _chunks(pairs):
            yield from zip(chunk, _chunk(chunk, keep_empty))
        return
    in_flight: deque[list[Pair]] = deque()  # the chunks whose tokens ordered_map has not yet given back

    def chunks() -> Iterator[list[Pair]]:
        for chunk in _chunks(pairs):
            in_flight.append(chunk)
            yield chunk

    with fork_pool(workers, initializer=_init, initargs=(spec,), method=None) as pool:  # the platform's start method
        for tokens in ordered_map(pool, functools.partial(_chunk, keep_empty=keep_empty), chunks(), 2 * workers):
            yield from zip(in_flight.popleft(), tokens)

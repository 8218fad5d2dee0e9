"""``tokenize_stream``: the same pairs and tokens in the input order for any number of workers."""
from __future__ import annotations

import pytest

from nmt.data import parallel_tokenize
from nmt.data.parallel_tokenize import tokenize_stream

SPEC = {"kind": "moses", "langs": ("en", "fr"), "lowercase": False, "sp_models": {}}


def _pairs(n: int) -> list[tuple[str, str]]:
    pairs = [(f"The cat {i}, it sat.", f"Le chat {i}, il s'est assis.") for i in range(n)]
    pairs[7] = ("", "Vide.")
    pairs[30] = ("Empty.", "   ")
    return pairs


@pytest.mark.parametrize("keep_empty", [False, True])
def test_workers_give_the_serial_stream_over_many_chunks(monkeypatch: pytest.MonkeyPatch, keep_empty: bool) -> None:
    monkeypatch.setattr(parallel_tokenize, "CHUNK_PAIRS", 3)  # 15 chunks: more than the 4 in flight
    pairs = _pairs(44)
    serial = list(tokenize_stream(iter(pairs), SPEC, 1, keep_empty=keep_empty))
    parallel = list(tokenize_stream(iter(pairs), SPEC, 2, keep_empty=keep_empty))
    assert parallel == serial
    assert [pair for pair, _ in serial] == pairs
    assert serial[5][1] == (["The", "cat", "5", ",", "it", "sat", "."],
                            ["Le", "chat", "5", ",", "il", "s&apos;", "est", "assis", "."])
    empty = [i for i, (_, tokens) in enumerate(serial) if tokens is None]
    assert empty == ([] if keep_empty else [7, 30])


def test_an_early_stop_leaves_the_pool() -> None:
    stream = tokenize_stream(iter(_pairs(5000)), SPEC, 2)
    assert next(stream)[0] == ("The cat 0, it sat.", "Le chat 0, il s'est assis.")
    stream.close()  # the generator's pool is closed and joined: the tasks in flight finish, no hang

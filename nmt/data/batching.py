"""Length-bucketed batching, deterministic in (seed, epoch) so training resumes exactly."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from nmt.data.special import BOS, EOS, PAD


def bucketed_batches(lengths: Sequence[int], *, batch_size: int, max_tokens: int | None = None,
                     seed: int = 0, epoch: int = 0, shuffle: bool = True) -> list[np.ndarray]:
    """Split example indices into batches of similar length.

    Examples are sorted by length (random tie-breaking), cut into batches of at
    most ``batch_size`` examples and, if given, at most ``max_tokens`` padded
    tokens; the batch order is then shuffled. The result depends only on
    ``(lengths, seed, epoch)``.
    """
    n = len(lengths)
    if n == 0:
        return []
    rng = np.random.default_rng([seed, epoch])
    lengths_arr = np.asarray(lengths, dtype=np.int64)
    tiebreak = rng.random(n) if shuffle else np.arange(n, dtype=np.float64)
    order = np.lexsort((tiebreak, lengths_arr))
    batches: list[np.ndarray] = []
    start = 0
    while start < n:
        end = min(start + batch_size, n)
        if max_tokens is not None:
            # shrink until padded size (longest × count) fits; always keep at least one example
            while end - start > 1 and int(lengths_arr[order[end - 1]]) * (end - start) > max_tokens:
                end -= 1
        batches.append(order[start:end])
        start = end
    if shuffle:
        perm = rng.permutation(len(batches))
        batches = [batches[i] for i in perm]
    return batches


def pad(seqs: Sequence[Sequence[int]], *, prefix: int | None = None, suffix: int | None = None) -> torch.Tensor:
    """Right-pad integer sequences with PAD, optionally adding a prefix/suffix symbol."""
    extra = (prefix is not None) + (suffix is not None)
    width = max(len(s) for s in seqs) + extra
    out = torch.full((len(seqs), width), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        row = ([prefix] if prefix is not None else []) + list(s) + ([suffix] if suffix is not None else [])
        out[i, :len(row)] = torch.as_tensor(row, dtype=torch.long)
    return out


def pair_batch(src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
    """Tensors for teacher forcing: src (with EOS), tgt_in (BOS + y), tgt_out (y + EOS)."""
    return {
        "src": pad(src, suffix=EOS),
        "tgt_in": pad(tgt, prefix=BOS),
        "tgt_out": pad(tgt, suffix=EOS),
    }

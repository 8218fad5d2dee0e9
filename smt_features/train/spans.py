"""Phrase-pair span extraction from one word-aligned sentence pair, as Moses ``extract`` does it.

Extraction (Och & Ney / Koehn; Moses ``phrase-extract/extract-main.cpp``):
for every target span ``e1..e2`` of at most ``max_phrase_length`` words,
project it onto the source through the alignment (``f1..f2`` = first and
last aligned source word); keep it if it has an alignment point, the source
span is at most ``max_phrase_length`` long and no source word in ``f1..f2``
is aligned outside ``e1..e2`` (consistency); then also emit every source span
obtained by extending ``f1`` leftwards and ``f2`` rightwards over
*unaligned* source words (within the length limit). Unaligned target words
at the span edges are covered because every target span is tried. Each
extracted occurrence counts 1.

The corpus-scale version of the same loop, which also counts occurrences and their lexical weights,
is :func:`smt_features.train.phrase_counts.count_sentence`.
"""
from __future__ import annotations

from collections.abc import Sequence

DEFAULT_MAX_PHRASE_LENGTH = 7

Span = tuple[int, int, int, int]  # src_start, src_end, tgt_start, tgt_end (inclusive)


def extract_spans(src_len: int, tgt_len: int, alignment: Sequence[tuple[int, int]],
                  max_phrase_length: int = DEFAULT_MAX_PHRASE_LENGTH) -> list[Span]:
    """All phrase-pair spans consistent with ``alignment`` (``(src, tgt)`` points).

    Returns ``(src_start, src_end, tgt_start, tgt_end)`` with inclusive ends,
    in Moses's order (target start, target end, source start downwards,
    source end upwards).
    """
    if max_phrase_length < 1:
        raise ValueError("max_phrase_length must be >= 1")
    aligned_to_t: list[list[int]] = [[] for _ in range(tgt_len)]
    aligned_count_s = [0] * src_len
    for i, j in set(alignment):
        if not (0 <= i < src_len and 0 <= j < tgt_len):
            raise ValueError(f"alignment point {i}-{j} out of range for lengths {src_len}, {tgt_len}")
        aligned_to_t[j].append(i)
        aligned_count_s[i] += 1
    spans: list[Span] = []
    limit = max_phrase_length
    for start_e in range(tgt_len):
        used = aligned_count_s[:]
        min_f, max_f = src_len, -1
        for end_e in range(start_e, min(tgt_len, start_e + limit)):
            for fi in aligned_to_t[end_e]:
                if fi < min_f:
                    min_f = fi
                if fi > max_f:
                    max_f = fi
                used[fi] -= 1
            if max_f < 0:
                continue                       # no alignment point yet
            if max_f - min_f >= limit:
                break                          # source span only grows with end_e
            if any(used[fi] > 0 for fi in range(min_f, max_f + 1)):
                continue                       # a source word links outside e1..e2
            start_f = min_f
            while start_f >= 0 and start_f > max_f - limit and \
                    (start_f == min_f or aligned_count_s[start_f] == 0):
                end_f = max_f
                while end_f < src_len and end_f < start_f + limit and \
                        (end_f == max_f or aligned_count_s[end_f] == 0):
                    spans.append((start_f, end_f, start_e, end_e))
                    end_f += 1
                start_f -= 1
    return spans


def phrase_alignment(span: Span, alignment: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Points of ``alignment`` inside ``span``, relative to it, target-major (Moses order)."""
    sf, ef, se, ee = span
    pts = [(i - sf, j - se) for i, j in set(alignment) if sf <= i <= ef and se <= j <= ee]
    pts.sort(key=lambda p: (p[1], p[0]))
    return tuple(pts)


def extract_phrase_pairs(src: Sequence[str], tgt: Sequence[str], alignment: Sequence[tuple[int, int]],
                         max_phrase_length: int = DEFAULT_MAX_PHRASE_LENGTH,
                         ) -> list[tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[int, int], ...]]]:
    """Phrase pairs ``(src words, tgt words, within-phrase alignment)`` of one sentence pair."""
    out = []
    for span in extract_spans(len(src), len(tgt), alignment, max_phrase_length):
        sf, ef, se, ee = span
        out.append((tuple(src[sf:ef + 1]), tuple(tgt[se:ee + 1]), phrase_alignment(span, alignment)))
    return out

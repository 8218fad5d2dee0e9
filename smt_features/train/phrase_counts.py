"""Phrase-pair occurrence counting over a word-aligned corpus, with each pair's lexical weights.

Memory and cores: occurrences are counted in a dict keyed by the string
``"src ||| tgt ||| alignment"`` (about 1.2 M keys, ~0.7 GB peak for
Multi30k); the lexical weights are computed during extraction from
per-sentence word factors (:class:`smt_features.train.lexical.LexicalTable`).
Extraction runs on ``processes`` forked workers (sentence ranges, merged).
For memory bounded by a setting instead of the corpus, the streamed path
(:mod:`smt_features.train.extract_stream`) counts sentence ranges with the same
:func:`count_sentence` and sorts them on disk.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from nmt.core.formats.phrase_table import SEP
from nmt.core.pools import can_fork, fork_pool

from smt_features.train.align import Links
from smt_features.train.lexical import LexicalTable
from smt_features.train.spans import DEFAULT_MAX_PHRASE_LENGTH

#: Below this size the extraction stays in one process (a pool costs more than it saves).
PARALLEL_MIN_SENTENCES = 1000


@dataclass
class ExtractionCounts:
    """Phrase-pair statistics of a corpus.

    ``phrases`` maps ``"src ||| tgt ||| alignment"`` (alignment
    target-major, as Moses prints it) to its number of occurrences, and
    ``lex`` maps the same key to ``complex(lex(e|f), lex(f|e))`` under that
    alignment (a complex number holds the two floats in one small object:
    about 90 MB less than tuples for a Multi30k table). ``lexical`` holds the
    word translation tables.
    """

    lexical: LexicalTable
    phrases: dict = field(default_factory=dict)
    lex: dict = field(default_factory=dict)
    sentences: int = 0
    occurrences: int = 0

    def update(self, other: "ExtractionCounts") -> None:
        phrases = self.phrases
        for key, c in other.phrases.items():
            phrases[key] = phrases.get(key, 0) + c
        for key, value in other.lex.items():
            self.lex.setdefault(key, value)
        self.sentences += other.sentences
        self.occurrences += other.occurrences


def count_sentence(src: Sequence[str], tgt: Sequence[str], alignment: Sequence[tuple[int, int]],
                   counts: ExtractionCounts, max_phrase_length: int = DEFAULT_MAX_PHRASE_LENGTH) -> None:
    """Add one sentence pair's phrase occurrences (with their lexical weights) to ``counts``.

    Consistency makes every link of a word inside a phrase pair lie inside
    it, so a phrase's lex(e|f) is the product, over its target positions, of
    per-sentence factors (mean w(e|f) over the word's links, or w(e|NULL)),
    multiplied left to right exactly as Moses's ``score`` does; likewise
    lex(f|e) over source positions.
    """
    n_f, n_e = len(src), len(tgt)
    links = set(alignment)
    aligned_to_t: list[list[int]] = [[] for _ in range(n_e)]
    aligned_to_s: list[list[int]] = [[] for _ in range(n_f)]
    for i, j in links:
        if not (0 <= i < n_f and 0 <= j < n_e):
            raise ValueError(f"alignment point {i}-{j} out of range for lengths {n_f}, {n_e}")
        aligned_to_t[j].append(i)
        aligned_to_s[i].append(j)
    for lst in aligned_to_t:
        lst.sort()
    for lst in aligned_to_s:
        lst.sort()
    counts.sentences += 1
    if not links:
        return
    factor_e = counts.lexical.target_factors(src, tgt, aligned_to_t)
    factor_f = counts.lexical.source_factors(src, tgt, aligned_to_s)
    phrases = counts.phrases
    lexd = counts.lex
    aligned_count_s = [len(x) for x in aligned_to_s]
    limit = max_phrase_length
    n_occ = 0
    for start_e in range(n_e):
        used = aligned_count_s[:]
        min_f, max_f = n_f, -1
        tgt_words: list[str] = []
        points: list[tuple[int, int]] = []      # (src index, tgt offset), target-major
        lex_e = 1.0
        for end_e in range(start_e, min(n_e, start_e + limit)):
            tgt_words.append(tgt[end_e])
            lex_e *= factor_e[end_e]
            off = end_e - start_e
            for fi in aligned_to_t[end_e]:
                if fi < min_f:
                    min_f = fi
                if fi > max_f:
                    max_f = fi
                used[fi] -= 1
                points.append((fi, off))
            if max_f < 0:
                continue
            if max_f - min_f >= limit:
                break
            bad = False
            for fi in range(min_f, max_f + 1):
                if used[fi] > 0:
                    bad = True
                    break
            if bad:
                continue
            tgt_text = " ".join(tgt_words)
            start_f = min_f
            while start_f >= 0 and start_f > max_f - limit and \
                    (start_f == min_f or aligned_count_s[start_f] == 0):
                align_text = " ".join([f"{fi - start_f}-{off}" for fi, off in points])
                tail = SEP + tgt_text + SEP + align_text
                lex_f = 1.0
                for fi in range(start_f, max_f + 1):
                    lex_f *= factor_f[fi]
                end_f = max_f
                while end_f < n_f and end_f < start_f + limit and \
                        (end_f == max_f or aligned_count_s[end_f] == 0):
                    if end_f > max_f:
                        lex_f *= factor_f[end_f]
                    key = " ".join(src[start_f:end_f + 1]) + tail
                    c = phrases.get(key)
                    if c is None:
                        phrases[key] = 1
                        lexd[key] = complex(lex_e, lex_f)
                    else:
                        phrases[key] = c + 1
                    n_occ += 1
                    end_f += 1
                start_f -= 1
    counts.occurrences += n_occ


# Module globals for fork()ed workers (set by the parent right before the pool starts).
_SHARED: dict = {}


def _count_range(args: tuple[int, int]) -> ExtractionCounts:
    lo, hi = args
    src, tgt, links, max_len, lexical = (_SHARED["src"], _SHARED["tgt"], _SHARED["links"],
                                         _SHARED["max_len"], _SHARED["lexical"])
    counts = ExtractionCounts(lexical)
    for k in range(lo, hi):
        count_sentence(src[k], tgt[k], links[k], counts, max_len)
    counts.lexical = None  # type: ignore[assignment]  # the parent has it; do not pickle it back
    return counts


def even_ranges(n: int, parts: int) -> list[tuple[int, int]]:
    step = max(1, (n + parts - 1) // parts)
    return [(k, min(n, k + step)) for k in range(0, n, step)]


def count_corpus(src_sents: Sequence[Sequence[str]], tgt_sents: Sequence[Sequence[str]],
                 alignments: Sequence[Links], max_phrase_length: int = DEFAULT_MAX_PHRASE_LENGTH,
                 processes: int = 1, lexical: LexicalTable | None = None) -> ExtractionCounts:
    """Word translation tables, then phrase-pair occurrences and lexical weights, over a corpus.

    With ``processes`` > 1 the extraction runs on contiguous parts of the
    corpus in forked worker processes, merged afterwards.
    """
    if not (len(src_sents) == len(tgt_sents) == len(alignments)):
        raise ValueError(f"{len(src_sents)} source, {len(tgt_sents)} target sentences and "
                         f"{len(alignments)} alignments")
    if max_phrase_length < 1:
        raise ValueError("max_phrase_length must be >= 1")
    if lexical is None:
        lexical = LexicalTable.from_corpus(src_sents, tgt_sents, alignments)
    n = len(src_sents)
    if processes <= 1 or n < PARALLEL_MIN_SENTENCES or not can_fork():
        total = ExtractionCounts(lexical)
        for s, t, a in zip(src_sents, tgt_sents, alignments):
            count_sentence(s, t, a, total, max_phrase_length)
        return total
    _SHARED.update(src=src_sents, tgt=tgt_sents, links=alignments, max_len=max_phrase_length,
                   lexical=lexical)
    try:
        with fork_pool(processes) as pool:
            parts = pool.imap_unordered(_count_range, even_ranges(n, processes))
            total = next(parts)
            for part in parts:
                if len(part.phrases) > len(total.phrases):
                    part, total = total, part
                total.update(part)
    finally:
        _SHARED.clear()
    total.lexical = lexical
    return total

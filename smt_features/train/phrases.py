"""Phrase extraction and scoring, as Moses ``train-model.perl`` does it by default.

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

Scoring (Moses ``score`` + ``consolidate``, no smoothing), with f = source
and e = target:

* φ(e|f) = count(f, e) / count(f) and φ(f|e) = count(f, e) / count(e),
  counts over extracted occurrences;
* lexical weighting (Koehn, Och & Marcu 2003):
  lex(e|f, a) = Π_j [ 1/|{i: (i, j) ∈ a}| · Σ_{(i, j) ∈ a} w(e_j|f_i) ], and
  w(e_j|NULL) for a target word without links; lex(f|e) symmetrically.
  Word translation tables from the symmetrized alignment of the whole
  corpus (Moses ``get_lexical``): w(e|f) = c(f, e) / c(f), w(f|e) =
  c(f, e) / c(e), where an unaligned word counts as aligned to ``NULL``.
  They are written as ``lex.f2e`` (``e f w(e|f)``) and ``lex.e2f``
  (``f e w(f|e)``) with ``%.7f`` like Moses, but the scores use the exact
  values (Moses reads the rounded file back, so its lex columns can differ
  in the last printed digit for rare words);
* the alignment ``a`` of a phrase pair is its most frequent within-phrase
  alignment (ties: the larger one in Moses's comparison order). Like Moses,
  lex(e|f) and the alignment field use the best alignment as a target→source
  map, lex(f|e) the best as a source→target map (they differ only on ties).

Output columns (Moses order): ``φ(f|e) lex(f|e) φ(e|f) lex(e|f)``, the
alignment, and ``count(e) count(f) count(f, e)``; see
:mod:`nmt.formats.phrase_table`. Scores are computed in double precision
(Moses divides in ``float``; the printed 6 digits agree except at rare
rounding boundaries) and every one of them is in (0, 1].

Memory and cores: occurrences are counted in a dict keyed by the string
``"src ||| tgt ||| alignment"`` (about 1.2 M keys, ~0.7 GB peak for
Multi30k); the lexical weights are computed during extraction from
per-sentence word factors. Extraction runs on ``processes`` forked workers
(sentence ranges, merged), scoring and gzip compression on ``processes``
workers (ranges of the sorted keys, written in order as gzip members).

The literal word ``NULL`` stands for the empty word in the lexical tables,
as in Moses (a real token ``NULL`` would share its statistics).
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from nmt.data.io import atomic_write

from smt_features.train.align import Links, can_fork, fork_pool
from nmt.formats.phrase_table import SEP, PhraseEntry, encode_lines, is_gzip_path, write_encoded

log = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]
NULL = "NULL"
DEFAULT_MAX_PHRASE_LENGTH = 7
#: Below these sizes the work stays in one process (a pool costs more than it saves).
PARALLEL_MIN_SENTENCES = 1000
PARALLEL_MIN_KEYS = 20000

Span = tuple[int, int, int, int]  # src_start, src_end, tgt_start, tgt_end (inclusive)


# --------------------------------------------------------------------------- extraction

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


# --------------------------------------------------------------------------- lexical tables

def count_word_alignments(src: Sequence[str], tgt: Sequence[str], alignment: Sequence[tuple[int, int]],
                          word_pairs: dict, f_totals: dict, e_totals: dict) -> None:
    """Moses ``get_lexical`` counts of one sentence pair (``NULL`` for unaligned words)."""
    n_f, n_e = len(src), len(tgt)
    f_aligned = [False] * n_f
    e_aligned = [False] * n_e
    for i, j in set(alignment):
        if not (0 <= i < n_f and 0 <= j < n_e):
            raise ValueError(f"alignment point {i}-{j} out of range for lengths {n_f}, {n_e}")
        f_aligned[i] = e_aligned[j] = True
        f, e = src[i], tgt[j]
        word_pairs[(f, e)] = word_pairs.get((f, e), 0) + 1
        f_totals[f] = f_totals.get(f, 0) + 1
        e_totals[e] = e_totals.get(e, 0) + 1
    for j in range(n_e):
        if not e_aligned[j]:
            e = tgt[j]
            word_pairs[(NULL, e)] = word_pairs.get((NULL, e), 0) + 1
            e_totals[e] = e_totals.get(e, 0) + 1
            f_totals[NULL] = f_totals.get(NULL, 0) + 1
    for i in range(n_f):
        if not f_aligned[i]:
            f = src[i]
            word_pairs[(f, NULL)] = word_pairs.get((f, NULL), 0) + 1
            f_totals[f] = f_totals.get(f, 0) + 1
            e_totals[NULL] = e_totals.get(NULL, 0) + 1


class LexicalTable:
    """Word translation probabilities from alignment counts (Moses ``get_lexical``)."""

    def __init__(self, word_pairs: dict, f_totals: dict, e_totals: dict) -> None:
        self.word_pairs = word_pairs
        self.f_totals = f_totals
        self.e_totals = e_totals
        #: w(e|f) = c(f, e) / c(f)   (lex.f2e)
        self.e_given_f = {fe: c / f_totals[fe[0]] for fe, c in word_pairs.items()}
        #: w(f|e) = c(f, e) / c(e)   (lex.e2f)
        self.f_given_e = {fe: c / e_totals[fe[1]] for fe, c in word_pairs.items()}

    @classmethod
    def from_corpus(cls, src_sents: Sequence[Sequence[str]], tgt_sents: Sequence[Sequence[str]],
                    alignments: Sequence[Links]) -> "LexicalTable":
        word_pairs: dict = {}
        f_totals: dict = {}
        e_totals: dict = {}
        for s, t, a in zip(src_sents, tgt_sents, alignments):
            count_word_alignments(s, t, a, word_pairs, f_totals, e_totals)
        return cls(word_pairs, f_totals, e_totals)

    def target_factors(self, src: Sequence[str], tgt: Sequence[str],
                       t2s: Sequence[Sequence[int]]) -> list[float]:
        """Per target word: mean w(e|f) over its links (ascending source index), or w(e|NULL)."""
        table = self.e_given_f
        out = []
        for j, links in enumerate(t2s):
            e = tgt[j]
            if not links:
                out.append(table[(NULL, e)])
            else:
                total = 0.0
                for i in links:
                    total += table[(src[i], e)]
                out.append(total / len(links))
        return out

    def source_factors(self, src: Sequence[str], tgt: Sequence[str],
                       s2t: Sequence[Sequence[int]]) -> list[float]:
        """Per source word: mean w(f|e) over its links (ascending target index), or w(f|NULL)."""
        table = self.f_given_e
        out = []
        for i, links in enumerate(s2t):
            f = src[i]
            if not links:
                out.append(table[(f, NULL)])
            else:
                total = 0.0
                for j in links:
                    total += table[(f, tgt[j])]
                out.append(total / len(links))
        return out

    def lex_e_given_f(self, src: Sequence[str], tgt: Sequence[str], t2s: Sequence[Sequence[int]]) -> float:
        """lex(e|f) of a phrase pair under the target→source map ``t2s`` (Moses ``score``)."""
        score = 1.0
        for x in self.target_factors(src, tgt, t2s):
            score *= x
        return score

    def lex_f_given_e(self, src: Sequence[str], tgt: Sequence[str], s2t: Sequence[Sequence[int]]) -> float:
        """lex(f|e) of a phrase pair under the source→target map ``s2t`` (Moses ``score --Inverse``)."""
        score = 1.0
        for x in self.source_factors(src, tgt, s2t):
            score *= x
        return score

    def write(self, f2e_path: PathLike, e2f_path: PathLike) -> None:
        """Moses's ``lex.f2e`` (``e f w(e|f)``) and ``lex.e2f`` (``f e w(f|e)``), ``%.7f``, sorted."""
        keys = sorted(self.word_pairs)
        with atomic_write(f2e_path) as fh:
            fh.writelines(f"{e} {f} {self.e_given_f[(f, e)]:.7f}\n" for f, e in keys)
        with atomic_write(e2f_path) as fh:
            fh.writelines(f"{f} {e} {self.f_given_e[(f, e)]:.7f}\n" for f, e in keys)


# --------------------------------------------------------------------------- counting

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


def _ranges(n: int, parts: int) -> list[tuple[int, int]]:
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
            parts = pool.imap_unordered(_count_range, _ranges(n, processes))
            total = next(parts)
            for part in parts:
                if len(part.phrases) > len(total.phrases):
                    part, total = total, part
                total.update(part)
    finally:
        _SHARED.clear()
    total.lexical = lexical
    return total


# --------------------------------------------------------------------------- scoring

def _maps(align_text: str, n_src: int, n_tgt: int) -> tuple[tuple[tuple[int, ...], ...],
                                                            tuple[tuple[int, ...], ...]]:
    """Target→source and source→target maps of a within-phrase alignment string."""
    t2s: list[list[int]] = [[] for _ in range(n_tgt)]
    s2t: list[list[int]] = [[] for _ in range(n_src)]
    for tok in align_text.split():
        a, _, b = tok.partition("-")
        i, j = int(a), int(b)
        t2s[j].append(i)
        s2t[i].append(j)
    return (tuple(tuple(sorted(x)) for x in t2s), tuple(tuple(sorted(x)) for x in s2t))


def _best_variant(prefix: str, variants: list[tuple[str, int]], lexd: dict) -> tuple[int, str, float, float]:
    """Total count, best alignment text, lex(e|f) and lex(f|e) of one phrase pair.

    Moses picks the alignment with the highest count, ties broken by the
    larger alignment (as a target→source vector of sets for the direct
    score and the alignment field, as a source→target one for the inverse
    score).
    """
    if len(variants) == 1:
        text, count = variants[0]
        pair = lexd[prefix + text]
        return count, text, pair.real, pair.imag
    src_text, _, rest = prefix.partition(SEP)
    n_src = src_text.count(" ") + 1
    n_tgt = rest[:-len(SEP)].count(" ") + 1
    count = 0
    best_t = best_s = None
    for text, c in variants:
        count += c
        m_t, m_s = _maps(text, n_src, n_tgt)
        if best_t is None or (c, m_t) > best_t[:2]:
            best_t = (c, m_t, text)
        if best_s is None or (c, m_s) > best_s[:2]:
            best_s = (c, m_s, text)
    assert best_t is not None and best_s is not None
    return count, best_t[2], lexd[prefix + best_t[2]].real, lexd[prefix + best_s[2]].imag


def _phrase_totals(keys: Sequence[str], phrases: dict) -> tuple[dict, dict]:
    src_totals: dict = {}
    tgt_totals: dict = {}
    s_get = src_totals.get
    t_get = tgt_totals.get
    for key in keys:
        c = phrases[key]
        p1 = key.index(SEP)
        p2 = key.index(SEP, p1 + 5)
        s = key[:p1]
        t = key[p1 + 5:p2]
        src_totals[s] = s_get(s, 0) + c
        tgt_totals[t] = t_get(t, 0) + c
    return src_totals, tgt_totals


def _iter_groups(keys: Sequence[str], phrases: dict, lo: int, hi: int
                 ) -> Iterator[tuple[str, str, str, list[tuple[str, int]]]]:
    """``(prefix, src, tgt, [(alignment, count), ...])`` for the sorted ``keys[lo:hi]``."""
    k = lo
    while k < hi:
        key = keys[k]
        p1 = key.index(SEP)
        p2 = key.index(SEP, p1 + 5)
        cut = p2 + 5
        prefix = key[:cut]
        variants = [(key[cut:], phrases[key])]
        k += 1
        while k < hi and keys[k].startswith(prefix):
            variants.append((keys[k][cut:], phrases[keys[k]]))
            k += 1
        yield prefix, key[:p1], key[p1 + 5:p2], variants


def _group_start(keys: Sequence[str], k: int) -> int:
    """First index >= k that starts a new phrase pair in the sorted ``keys``."""
    if k <= 0 or k >= len(keys):
        return min(max(k, 0), len(keys))
    prev = keys[k - 1]
    p1 = prev.index(SEP)
    prefix = prev[:prev.index(SEP, p1 + 5) + 5]
    while k < len(keys) and keys[k].startswith(prefix):
        k += 1
    return k


def _score_lines_range(args: tuple[int, int]) -> list[str]:
    lo, hi = args
    keys, phrases, lexd, src_totals, tgt_totals = (
        _SHARED["keys"], _SHARED["phrases"], _SHARED["lex"], _SHARED["src_totals"], _SHARED["tgt_totals"])
    out = []
    append = out.append
    for prefix, src, tgt, variants in _iter_groups(keys, phrases, lo, hi):
        count, align_text, lex_e, lex_f = _best_variant(prefix, variants, lexd)
        c_src = src_totals[src]
        c_tgt = tgt_totals[tgt]
        p_fe = count / c_tgt
        p_ef = count / c_src
        if not (0.0 < lex_e <= 1.0 and 0.0 < lex_f <= 1.0):
            raise ValueError(f"lexical weight outside (0, 1] for {prefix!r}: {lex_f!r} {lex_e!r}")
        # Moses consolidate: "src ||| tgt ||| p(f|e) lex(f|e) p(e|f) lex(e|f) ||| align ||| c(e) c(f) c(f,e) ||| |||"
        append("%s%g %g %g %g ||| %s||| %g %g %g ||| |||" % (
            prefix, p_fe, lex_f, p_ef, lex_e, align_text + " " if align_text else "", c_tgt, c_src, count))
    return out


def _prepare_scoring(counts: ExtractionCounts) -> list[str]:
    keys = sorted(counts.phrases)
    src_totals, tgt_totals = _phrase_totals(keys, counts.phrases)
    _SHARED.update(keys=keys, phrases=counts.phrases, lex=counts.lex, src_totals=src_totals,
                   tgt_totals=tgt_totals)
    return keys


def _score_ranges(keys: Sequence[str], parts: int) -> list[tuple[int, int]]:
    n = len(keys)
    bounds = sorted({_group_start(keys, lo) for lo, _ in _ranges(n, parts)} | {n})
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if a < b]


def score_phrase_lines(counts: ExtractionCounts, processes: int = 1) -> list[str]:
    """Score every phrase pair; returns Moses table lines, already in byte order."""
    try:
        keys = _prepare_scoring(counts)
        n = len(keys)
        if processes <= 1 or n < PARALLEL_MIN_KEYS or not can_fork():
            return _score_lines_range((0, n))
        lines: list[str] = []
        with fork_pool(processes) as pool:
            for part in pool.imap(_score_lines_range, _score_ranges(keys, processes)):
                lines.extend(part)
        return lines
    finally:
        _SHARED.clear()


def _score_encode_range(args: tuple[int, int, bool]) -> tuple[int, bytes]:
    lo, hi, gz = args
    lines = _score_lines_range((lo, hi))
    return len(lines), encode_lines(lines, gz=gz)


def write_scored_table(counts: ExtractionCounts, path: PathLike, processes: int = 1) -> int:
    """Score every phrase pair and write the table (sorted, ``.gz`` by suffix, atomic).

    Workers score and compress contiguous ranges of the sorted pairs; the
    parent writes the parts in order (for ``.gz``: one gzip member per
    part). Returns the number of lines.
    """
    gz = is_gzip_path(path)
    n_lines = 0

    def parts(results):
        nonlocal n_lines
        for n, data in results:
            n_lines += n
            yield data

    try:
        keys = _prepare_scoring(counts)
        chunks = max(1, len(keys) // 100000)
        if processes <= 1 or len(keys) < PARALLEL_MIN_KEYS or not can_fork():
            ranges = _score_ranges(keys, chunks)
            write_encoded(parts(map(_score_encode_range, [(a, b, gz) for a, b in ranges])), path)
        else:
            ranges = _score_ranges(keys, max(chunks, 2 * processes))
            with fork_pool(processes) as pool:
                write_encoded(parts(pool.imap(_score_encode_range, [(a, b, gz) for a, b in ranges])), path)
    finally:
        _SHARED.clear()
    return n_lines


def score_phrase_counts(counts: ExtractionCounts) -> Iterator[PhraseEntry]:
    """Score every phrase pair (serially); yields :class:`PhraseEntry` in table order."""
    keys = sorted(counts.phrases)
    src_totals, tgt_totals = _phrase_totals(keys, counts.phrases)
    for prefix, src, tgt, variants in _iter_groups(keys, counts.phrases, 0, len(keys)):
        count, align_text, lex_e, lex_f = _best_variant(prefix, variants, counts.lex)
        c_src, c_tgt = src_totals[src], tgt_totals[tgt]
        alignment = tuple((int(a), int(b)) for a, _, b in (t.partition("-") for t in align_text.split()))
        yield PhraseEntry(tuple(src.split(" ")), tuple(tgt.split(" ")),
                          (count / c_tgt, lex_f, count / c_src, lex_e), alignment,
                          (float(c_tgt), float(c_src), float(count)))


# --------------------------------------------------------------------------- whole step

@dataclass
class PhraseTableStats:
    sentences: int
    occurrences: int
    distinct_pairs: int
    lines: int
    count_seconds: float      # word translation tables + extraction
    score_seconds: float      # sorting, scoring, compressing and writing the table


def build_phrase_table(src_sents: Sequence[Sequence[str]], tgt_sents: Sequence[Sequence[str]],
                       alignments: Sequence[Links], out_path: PathLike, *,
                       max_phrase_length: int = DEFAULT_MAX_PHRASE_LENGTH, processes: int = 1,
                       lex_f2e: PathLike | None = None, lex_e2f: PathLike | None = None,
                       ) -> PhraseTableStats:
    """Extract, score and write a Moses phrase table (``.gz`` by suffix), plus the lexical tables."""
    for sents, side in ((src_sents, "source"), (tgt_sents, "target")):
        for k, toks in enumerate(sents):
            for tok in toks:
                if "|||" in tok:
                    raise ValueError(f"{side} sentence {k + 1}: token {tok!r} contains '|||' "
                                     f"(escape '|' when tokenizing)")
    t0 = time.perf_counter()
    lexical = LexicalTable.from_corpus(src_sents, tgt_sents, alignments)
    counts = count_corpus(src_sents, tgt_sents, alignments, max_phrase_length, processes, lexical)
    if not counts.phrases:  # an empty .gz would not even be valid gzip; a decoder cannot use it anyway
        raise ValueError(f"no phrase pair could be extracted from {len(src_sents)} sentence pair(s) "
                         "(no alignment links, or an empty corpus): no phrase table written")
    if lex_f2e is not None and lex_e2f is not None:
        lexical.write(lex_f2e, lex_e2f)
    t1 = time.perf_counter()
    n = write_scored_table(counts, out_path, processes)
    t2 = time.perf_counter()
    return PhraseTableStats(len(src_sents), counts.occurrences, len(counts.phrases), n, t1 - t0, t2 - t1)

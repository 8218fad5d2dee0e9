"""Phrase-pair scoring (Moses ``score`` + ``consolidate``) and writing the scored, sorted table.

Scoring (no smoothing), with f = source and e = target:

* φ(e|f) = count(f, e) / count(f) and φ(f|e) = count(f, e) / count(e),
  counts over extracted occurrences (:mod:`smt_features.train.phrase_counts`);
* lex(e|f) and lex(f|e) as :mod:`smt_features.train.lexical` defines them;
* the alignment ``a`` of a phrase pair is its most frequent within-phrase
  alignment (ties: the larger one in Moses's comparison order). Like Moses,
  lex(e|f) and the alignment field use the best alignment as a target→source
  map, lex(f|e) the best as a source→target map (they differ only on ties).

Output columns (Moses order): ``φ(f|e) lex(f|e) φ(e|f) lex(e|f)``, the
alignment, and ``count(e) count(f) count(f, e)``; see
:mod:`nmt.core.formats.phrase_table`. Scores are computed in double precision
(Moses divides in ``float``; the printed 6 digits agree except at rare
rounding boundaries) and every one of them is in (0, 1].

Scoring and gzip compression run on ``processes`` forked workers (ranges of the sorted keys, written
in order as gzip members).
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from nmt.core.formats.phrase_table import SEP, PhraseEntry, encode_lines, is_gzip_path, write_encoded
from nmt.core.pools import can_fork, fork_pool, ordered_map

from smt_features.train.phrase_counts import ExtractionCounts, even_ranges

PathLike = str | os.PathLike[str]
#: Below this many distinct keys the scoring stays in one process (a pool costs more than it saves).
PARALLEL_MIN_KEYS = 20000

# Module globals for fork()ed workers (set by the parent right before the pool starts).
_SHARED: dict = {}


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


def choose_alignments(n_src: int, n_tgt: int, variants: Sequence[tuple[str, int]]) -> tuple[int, str, str]:
    """Total count, and the alignment texts Moses picks for the direct and the inverse side.

    Moses picks the alignment with the highest count, ties broken by the
    larger alignment (as a target→source vector of sets for the direct
    score and the alignment field, as a source→target one for the inverse
    score).
    """
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
    return count, best_t[2], best_s[2]


def _best_variant(prefix: str, variants: list[tuple[str, int]], lexd: dict) -> tuple[int, str, float, float]:
    """Total count, best alignment text, lex(e|f) and lex(f|e) of one phrase pair (:func:`choose_alignments`)."""
    if len(variants) == 1:
        text, count = variants[0]
        pair = lexd[prefix + text]
        return count, text, pair.real, pair.imag
    src_text, _, rest = prefix.partition(SEP)
    count, text_t, text_s = choose_alignments(src_text.count(" ") + 1, rest[:-len(SEP)].count(" ") + 1, variants)
    return count, text_t, lexd[prefix + text_t].real, lexd[prefix + text_s].imag


def format_line(prefix: str, p_fe: float, lex_f: float, p_ef: float, lex_e: float, align_text: str,
                c_tgt: int, c_src: int, count: int) -> str:
    """One table line (no ``\\n``); ``prefix`` is ``"src ||| tgt ||| "``. Checks the lexical weights."""
    if not (0.0 < lex_e <= 1.0 and 0.0 < lex_f <= 1.0):
        raise ValueError(f"lexical weight outside (0, 1] for {prefix!r}: {lex_f!r} {lex_e!r}")
    # Moses consolidate: "src ||| tgt ||| p(f|e) lex(f|e) p(e|f) lex(e|f) ||| align ||| c(e) c(f) c(f,e) ||| |||"
    return "%s%g %g %g %g ||| %s||| %g %g %g ||| |||" % (
        prefix, p_fe, lex_f, p_ef, lex_e, align_text + " " if align_text else "", c_tgt, c_src, count)


def table_parts(n_keys: int, processes: int) -> int:
    """Into how many ranges of the ``n_keys`` sorted keys the table is cut (one gzip member each)."""
    chunks = max(1, n_keys // 100000)
    if processes <= 1 or n_keys < PARALLEL_MIN_KEYS or not can_fork():
        return chunks
    return max(chunks, 2 * processes)


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
        append(format_line(prefix, count / c_tgt, lex_f, count / c_src, lex_e, align_text, c_tgt, c_src, count))
    return out


def _prepare_scoring(counts: ExtractionCounts) -> list[str]:
    keys = sorted(counts.phrases)
    src_totals, tgt_totals = _phrase_totals(keys, counts.phrases)
    _SHARED.update(keys=keys, phrases=counts.phrases, lex=counts.lex, src_totals=src_totals,
                   tgt_totals=tgt_totals)
    return keys


def _score_ranges(keys: Sequence[str], parts: int) -> list[tuple[int, int]]:
    n = len(keys)
    bounds = sorted({_group_start(keys, lo) for lo, _ in even_ranges(n, parts)} | {n})
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
        jobs = [(a, b, gz) for a, b in _score_ranges(keys, table_parts(len(keys), processes))]
        if processes <= 1 or len(keys) < PARALLEL_MIN_KEYS or not can_fork():
            write_encoded(parts(map(_score_encode_range, jobs)), path)
        else:
            with fork_pool(processes) as pool:
                write_encoded(parts(ordered_map(pool, _score_encode_range, jobs, 2 * processes)), path)
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

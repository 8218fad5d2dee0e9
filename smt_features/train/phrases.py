"""The phrase-table step: lexical tables, extraction and scoring of a corpus into a Moses phrase table.

The stages, one module each, follow Moses ``train-model.perl``'s defaults:
span extraction (:mod:`smt_features.train.spans`), the word translation tables and lexical weights
(:mod:`smt_features.train.lexical`), occurrence counting over the corpus
(:mod:`smt_features.train.phrase_counts`), scoring and writing the table
(:mod:`smt_features.train.phrase_scoring`).
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

from smt_features.train.align import Links
from smt_features.train.corpus_stream import iter_chunks, iter_pairs
from smt_features.train.extract_stream import StreamOptions, write_streamed_table, write_table_from_chunks
from smt_features.train.lexical import LexicalTable
from smt_features.train.phrase_counts import count_corpus
from smt_features.train.phrase_scoring import write_scored_table
from smt_features.train.spans import DEFAULT_MAX_PHRASE_LENGTH

PathLike = str | os.PathLike[str]


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
                       stream: StreamOptions | None = None) -> PhraseTableStats:
    """Extract, score and write a Moses phrase table (``.gz`` by suffix), plus the lexical tables.

    ``stream`` selects the streamed path (:mod:`smt_features.train.extract_stream`: temp files, GNU
    ``sort``, memory bounded by its options); same table bytes as the in-memory default.
    """
    for sents, side in ((src_sents, "source"), (tgt_sents, "target")):
        for k, toks in enumerate(sents):
            for tok in toks:
                if "|||" in tok:
                    raise ValueError(f"{side} sentence {k + 1}: token {tok!r} contains '|||' "
                                     f"(escape '|' when tokenizing)")
    t0 = time.perf_counter()
    lexical = LexicalTable.from_corpus(src_sents, tgt_sents, alignments)
    if stream is not None:
        t_lex = time.perf_counter() - t0
        st = write_streamed_table(src_sents, tgt_sents, alignments, lexical, out_path,
                                  max_phrase_length=max_phrase_length, processes=processes, opts=stream)
        if not st.keys:
            raise ValueError(f"no phrase pair could be extracted from {len(src_sents)} sentence pair(s) "
                             "(no alignment links, or an empty corpus): no phrase table written")
        if lex_f2e is not None and lex_e2f is not None:
            lexical.write(lex_f2e, lex_e2f)
        count_s = t_lex + st.extract_seconds
        return PhraseTableStats(len(src_sents), st.occurrences, st.keys, st.lines, count_s,
                                time.perf_counter() - t0 - count_s)
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


def build_phrase_table_from_files(src_path: PathLike, tgt_path: PathLike, aligned_path: PathLike,
                                  out_path: PathLike, *, stream: StreamOptions,
                                  max_phrase_length: int = DEFAULT_MAX_PHRASE_LENGTH, processes: int = 1,
                                  lex_f2e: PathLike | None = None, lex_e2f: PathLike | None = None,
                                  skip_long_unaligned: bool = False) -> PhraseTableStats:
    """:func:`build_phrase_table` on the streamed path, reading checked files (one pass for the lexical
    tables, one for extraction) ``stream.chunk_lines`` pairs at a time: no corpus list is built.

    The files must have been checked (:func:`smt_features.train.corpus_stream.scan_corpus` and
    :func:`~smt_features.train.corpus_stream.check_alignment`); same bytes as :func:`build_phrase_table`.
    """
    def chunks():
        return iter_chunks(src_path, tgt_path, aligned_path, stream.chunk_lines,
                           skip_long_unaligned=skip_long_unaligned)

    t0 = time.perf_counter()
    lexical = LexicalTable.from_pairs(iter_pairs(chunks()))
    t_lex = time.perf_counter() - t0
    st = write_table_from_chunks(chunks(), lexical, out_path, max_phrase_length=max_phrase_length,
                                 processes=processes, opts=stream)
    if not st.keys:
        raise ValueError(f"no phrase pair could be extracted from {st.sentences} sentence pair(s) "
                         "(no alignment links, or an empty corpus): no phrase table written")
    if lex_f2e is not None and lex_e2f is not None:
        lexical.write(lex_f2e, lex_e2f)
    count_s = t_lex + st.extract_seconds
    return PhraseTableStats(st.sentences, st.occurrences, st.keys, st.lines, count_s,
                            time.perf_counter() - t0 - count_s)

"""The phrase table the Moses way, in memory bounded by settings: extract to disk in chunks, sort, score as streams.

Same table, byte for byte, as the in-memory path (:func:`smt_features.train.phrase_scoring.write_scored_table`),
in the steps of Moses ``train-model.perl``:

1. *extract*: chunks of ``chunk_lines`` pairs, read as a stream (corpus lists, or the files themselves
   through :mod:`smt_features.train.corpus_stream`), two per forked worker in flight, are counted with
   :func:`~smt_features.train.phrase_counts.count_sentence` and written as temp files of
   ``src ||| tgt ||| alignment<TAB>count<TAB>lex(e|f) lex(f|e)`` lines (one per distinct key of the chunk;
   the lexical weights as exact ``repr`` floats);
2. *direct* (``extract.sorted``): GNU ``sort`` by key; a stream of source-phrase groups gives count(f),
   each pair's count, its alignment (Moses's choice among its variants), lex(e|f) and lex(f|e): the
   half table ``half.f2e`` (in table order) and ``inv`` lines ``tgt<TAB>src<TAB>count``;
3. *inverse* (``extract.inv.sorted``): ``inv`` sorted by target phrase gives count(e): ``half.e2f``;
4. *consolidate*: ``half.e2f`` sorted back into table order and merged line by line with ``half.f2e``
   into the table, cut into gzip members where the in-memory path cuts them, written atomically.

Memory: one chunk's counts per worker, one source (or target) phrase's pairs, one gzip member's lines
(about 100k keys), ``sort -S``; the word translation tables (bounded by vocabulary², built before) are
the caller's. Temp files live in a ``.phrase-extract.*`` folder in ``tmp_dir`` (default: the table's
folder), removed on success and on failure.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from nmt.core.formats.phrase_table import SEP, encode_lines, is_gzip_path, write_encoded
from nmt.core.pools import can_fork, fork_pool, ordered_map

from smt_features.train.align import Links, parse_pharaoh
from smt_features.train.external_sort import SortOptions, open_temp, sorted_lines
from smt_features.train.lexical import LexicalTable
from smt_features.train.phrase_counts import ExtractionCounts, count_sentence, even_ranges
from smt_features.train.phrase_scoring import choose_alignments, format_line, table_parts

PathLike = str | os.PathLike[str]
DEFAULT_CHUNK_LINES = 5000


@dataclass(frozen=True)
class StreamOptions:
    """The streamed path's knobs: sentence pairs per extract chunk and ``sort``'s options."""

    chunk_lines: int = DEFAULT_CHUNK_LINES
    sort: SortOptions = SortOptions()


@dataclass
class StreamStats:
    sentences: int = 0
    occurrences: int = 0
    keys: int = 0          # distinct phrase pair + alignment keys
    lines: int = 0
    pairs: int = 0         # distinct phrase pairs (= table lines)
    extract_seconds: float = 0.0


# Module globals for fork()ed workers (set by the parent right before the pool starts).
_SHARED: dict = {}

#: One extraction task's pairs: source, target, links; a side is a token list or a line of text, links a
#: list of points or a Pharaoh line (:mod:`smt_features.train.corpus_stream` reads files as text).
ChunkData = tuple[Sequence, Sequence, Sequence]


def _extract_chunk(args: tuple[ChunkData, str]) -> tuple[int, int]:
    """Count one chunk's sentences and write their keys to ``path``; returns (sentences, occurrences)."""
    (src, tgt, links), path = args
    max_len, lexical, compress = _SHARED["max_len"], _SHARED["lexical"], _SHARED["compress"]
    counts = ExtractionCounts(lexical)
    for s, t, a in zip(src, tgt, links):
        count_sentence(s.split() if isinstance(s, str) else s, t.split() if isinstance(t, str) else t,
                       parse_pharaoh(a) if isinstance(a, str) else a, counts, max_len)
    lexd = counts.lex
    with open_temp(path, "w", compress) as fh:
        fh.writelines(f"{key}\t{c}\t{lexd[key].real!r} {lexd[key].imag!r}\n" for key, c in counts.phrases.items())
    return counts.sentences, counts.occurrences


def list_chunks(src_sents: Sequence[Sequence[str]], tgt_sents: Sequence[Sequence[str]],
                alignments: Sequence[Links], chunk_lines: int) -> Iterator[ChunkData]:
    """Corpus lists cut into chunks of ``chunk_lines`` pairs."""
    for lo in range(0, len(src_sents), chunk_lines):
        hi = lo + chunk_lines
        yield src_sents[lo:hi], tgt_sents[lo:hi], alignments[lo:hi]


def extract_chunks(chunks: Iterable[ChunkData], lexical: LexicalTable, max_phrase_length: int,
                   processes: int, work: Path, opts: StreamOptions) -> tuple[list[Path], StreamStats]:
    """Step 1: the chunk files (in corpus order) and the sentence / occurrence counts.

    ``chunks`` is read as a stream: at most two chunks per worker are in flight.
    """
    if opts.chunk_lines < 1:
        raise ValueError("chunk_lines must be >= 1")
    suffix = ".gz" if opts.sort.compress else ""
    paths: list[Path] = []

    def tasks() -> Iterator[tuple[ChunkData, str]]:
        for k, chunk in enumerate(chunks):
            paths.append(work / f"extract.{k:06d}{suffix}")
            yield chunk, str(paths[-1])

    _SHARED.update(max_len=max_phrase_length, lexical=lexical, compress=opts.sort.compress)
    stats = StreamStats()
    bar = tqdm(unit=" pairs", desc="extract phrases", disable=None)
    try:
        with ExitStack() as stack:
            pool = stack.enter_context(fork_pool(processes)) if processes > 1 and can_fork() else None
            results: Iterator[tuple[int, int]] = map(_extract_chunk, tasks()) if pool is None else \
                ordered_map(pool, _extract_chunk, tasks(), 2 * processes)
            for s, o in results:
                stats.sentences += s
                stats.occurrences += o
                bar.update(s)
    finally:
        bar.close()
        _SHARED.clear()
    return paths, stats


def _pairs(lines: Iterator[str]) -> Iterator[tuple[str, str, str, int, list[tuple[str, int, str]]]]:
    """``(prefix, src, tgt, n_keys, [(alignment, count, lex), ...])`` per phrase pair of the sorted keys."""
    prefix = src = tgt = None
    variants: list[tuple[str, int, str]] = []
    last_key = None
    n_keys = 0
    for line in lines:
        key, c, lex = line.rstrip("\n").split("\t")
        if key == last_key:  # the same key from another chunk: add its count, keep the first lexical weights
            text, count, lex0 = variants[-1]
            variants[-1] = (text, count + int(c), lex0)
            continue
        last_key = key
        p1 = key.index(SEP)
        cut = key.index(SEP, p1 + 5) + 5
        if key[:cut] != prefix:
            if prefix is not None:
                yield prefix, src, tgt, n_keys, variants
            prefix, src, tgt, variants, n_keys = key[:cut], key[:p1], key[p1 + 5:cut - 5], [], 0
        variants.append((key[cut:], int(c), lex))
        n_keys += 1
    if prefix is not None:
        yield prefix, src, tgt, n_keys, variants


def _score_pair(src: str, tgt: str, variants: list[tuple[str, int, str]]) -> tuple[int, str, str, str]:
    """Count, alignment text, lex(e|f) and lex(f|e) (as ``repr`` text) of one pair, as the in-memory path."""
    if len(variants) == 1:
        text, count, lex = variants[0]
        lex_e, lex_f = lex.split(" ")
        return count, text, lex_e, lex_f
    count, text_t, text_s = choose_alignments(src.count(" ") + 1, tgt.count(" ") + 1,
                                              [(t, c) for t, c, _ in variants])
    by_text = {t: lex for t, _, lex in variants}
    return count, text_t, by_text[text_t].split(" ")[0], by_text[text_s].split(" ")[1]


def score_direct(chunks: list[Path], work: Path, opts: StreamOptions, stats: StreamStats) -> tuple[Path, Path]:
    """Step 2: ``half.f2e`` (``prefix, count, c(f), keys, alignment, lex(e|f), lex(f|e)``) and ``inv``."""
    half, inv = work / "half.f2e", work / "inv"
    compress = opts.sort.compress
    with sorted_lines(chunks, opts.sort, compressed_input=compress, stable=True) as lines, \
            open_temp(half, "w", False) as out, open_temp(inv, "w", False) as inv_out:
        group: list[tuple] = []
        group_src = None
        c_src = 0

        def flush() -> None:
            out.writelines(f"{p}\t{n}\t{c_src}\t{nk}\t{t}\t{le}\t{lf}\n" for p, n, nk, t, le, lf in group)

        for prefix, src, tgt, n_keys, variants in _pairs(lines):
            if src != group_src:
                flush()
                group, group_src, c_src = [], src, 0
            count, text, lex_e, lex_f = _score_pair(src, tgt, variants)
            c_src += count
            group.append((prefix, count, n_keys, text, lex_e, lex_f))
            inv_out.write(f"{tgt}\t{src}\t{count}\n")
            stats.keys += n_keys
            stats.pairs += 1
        flush()
    return half, inv


def score_inverse(inv: Path, work: Path, opts: StreamOptions) -> Path:
    """Step 3: ``half.e2f`` lines ``src ||| tgt ||| <TAB>c(e)``, grouped by target phrase."""
    half = work / "half.e2f"
    with sorted_lines([inv], opts.sort) as lines, open_temp(half, "w", False) as out:
        group: list[str] = []
        group_tgt = None
        c_tgt = 0
        for line in lines:
            tgt, src, c = line.rstrip("\n").split("\t")
            if tgt != group_tgt:
                out.writelines(f"{s}{SEP}{group_tgt}{SEP}\t{c_tgt}\n" for s in group)
                group, group_tgt, c_tgt = [], tgt, 0
            group.append(src)
            c_tgt += int(c)
        out.writelines(f"{s}{SEP}{group_tgt}{SEP}\t{c_tgt}\n" for s in group)
    return half


def tqdm_lines(lines: Iterator[str], bar: tqdm, every: int = 10000) -> Iterator[str]:
    """``lines``, updating ``bar`` every ``every`` lines."""
    k = 0
    for k, line in enumerate(lines, 1):
        if k % every == 0:
            bar.update(every)
        yield line
    bar.update(k % every)


def consolidate(half_f2e: Path, half_e2f: Path, out_path: PathLike, processes: int, opts: StreamOptions,
                stats: StreamStats) -> None:
    """Step 4: merge the halves into the table, one gzip member per range of the in-memory path."""
    gz = is_gzip_path(out_path)
    starts = [lo for lo, _ in even_ranges(stats.keys, table_parts(stats.keys, processes))]

    def members() -> Iterator[bytes]:
        lines: list[str] = []
        k = key_index = 0
        with open_temp(half_f2e, "r", False) as direct, sorted_lines([half_e2f], opts.sort) as inverse, \
                tqdm(total=stats.pairs, unit=" lines", desc="consolidate", disable=None) as bar:
            for d_line in tqdm_lines(direct, bar):
                prefix, count, c_src, n_keys, text, lex_e, lex_f = d_line.rstrip("\n").split("\t")
                i_line = next(inverse, None)
                if i_line is None or not i_line.startswith(prefix + "\t"):
                    raise RuntimeError(f"consolidate: the halves disagree at {prefix!r} / {i_line!r}")
                c_tgt = int(i_line[len(prefix) + 1:])
                boundary = False
                while k < len(starts) and starts[k] <= key_index:
                    boundary = True
                    k += 1
                if boundary and lines:
                    yield encode_lines(lines, gz=gz)
                    lines = []
                stats.lines += 1
                n, cs = int(count), int(c_src)
                lines.append(format_line(prefix, n / c_tgt, float(lex_f), n / cs, float(lex_e), text, c_tgt, cs, n))
                key_index += int(n_keys)
            if next(inverse, None) is not None:
                raise RuntimeError("consolidate: the inverse half has more lines than the direct half")
        if lines:
            yield encode_lines(lines, gz=gz)

    write_encoded(members(), out_path)


def write_streamed_table(src_sents: Sequence[Sequence[str]], tgt_sents: Sequence[Sequence[str]],
                         alignments: Sequence[Links], lexical: LexicalTable, out_path: PathLike, *,
                         max_phrase_length: int, processes: int = 1, opts: StreamOptions = StreamOptions(),
                         ) -> StreamStats:
    """Steps 1–4 of corpus lists into ``out_path`` (see :func:`write_table_from_chunks`)."""
    for sents, side in ((src_sents, "source"), (tgt_sents, "target")):
        for k, toks in enumerate(sents):
            for tok in toks:
                if "\t" in tok or "\n" in tok:
                    raise ValueError(f"{side} sentence {k + 1}: token {tok!r} contains a tab or a newline")
    return write_table_from_chunks(list_chunks(src_sents, tgt_sents, alignments, max(1, opts.chunk_lines)),
                                   lexical, out_path, max_phrase_length=max_phrase_length, processes=processes,
                                   opts=opts)


def write_table_from_chunks(chunks: Iterable[ChunkData], lexical: LexicalTable, out_path: PathLike, *,
                            max_phrase_length: int, processes: int = 1, opts: StreamOptions = StreamOptions(),
                            ) -> StreamStats:
    """Steps 1–4 of a stream of chunks into ``out_path`` (``.gz`` by suffix, atomic); temp files removed
    whatever happens. The same bytes whatever the chunk size."""
    parent = Path(opts.sort.tmp_dir or Path(out_path).parent)
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".phrase-extract.", dir=parent))
    sort_opts = SortOptions(opts.sort.buffer, str(work), max(1, processes), opts.sort.compress)
    opts = StreamOptions(opts.chunk_lines, sort_opts)
    try:
        t0 = time.perf_counter()
        chunk_files, stats = extract_chunks(chunks, lexical, max_phrase_length, processes, work, opts)
        stats.extract_seconds = time.perf_counter() - t0
        half_f2e, inv = score_direct(chunk_files, work, opts, stats)
        for path in chunk_files:
            path.unlink()
        half_e2f = score_inverse(inv, work, opts)
        inv.unlink()
        if stats.keys:
            consolidate(half_f2e, half_e2f, out_path, processes, opts, stats)
        return stats
    finally:
        shutil.rmtree(work, ignore_errors=True)

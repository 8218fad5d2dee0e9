"""The ``smt-train-reordering`` step: Moses's msd-bidirectional-fe lexicalized reordering table, streamed.

As ``train-model.perl`` steps 5 and 7 (``extract … orientation --model wbe-msd``, ``LC_ALL=C sort``,
``lexical-reordering-score extract.o.sorted 0.5 … --model "wbe msd wbe-msd-bidirectional-fe"``), in
memory bounded by settings instead of by the corpus:

1. the tokenized ``--src``/``--tgt`` files and the Pharaoh ``--alignment`` are read as streams, in
   chunks of ``--chunk-lines`` sentence pairs, each counted
   (:func:`smt_features.train.reordering.count_orientations`, on ``--processes`` forked workers, at
   most two chunks per worker in flight) into a temp file;
2. GNU ``sort`` (``-S --sort-buffer``, spill files in ``--tmp-dir``) merges them into table order and
   each phrase pair's counts are scored as a stream
   (:mod:`smt_features.train.reordering_scoring`) into the ``.gz`` table, written atomically.

Bad input (FILE:LINE) is found before the table is written; the temp folder
(``.reordering-extract.*``) is removed whatever happens.
"""
from __future__ import annotations

import errno
import itertools
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from nmt.core.config import field
from nmt.core.io import DataError, iter_lines, iter_parallel
from nmt.core.errors import UsageError, refuse_overwriting_inputs
from nmt.core.formats.reordering_table import TABLE_NAME, check_reordering_table, write_reordering_table
from nmt.core.pools import can_fork, fork_pool, ordered_map

from smt_features.train.align import parse_pharaoh
from smt_features.train.external_sort import SortOptions, check_size, sorted_lines
from smt_features.train.reordering import chunk_path, count_orientations, merge_sorted, write_chunk
from smt_features.train.reordering_scoring import Smoothing, score_lines
from smt_features.train.spans import DEFAULT_MAX_PHRASE_LENGTH

Sentence = tuple[list[str], list[str], list[tuple[int, int]]]


@dataclass
class TrainReorderingConfig:
    src: str = field("", help="tokenized source-language training file (plain or .gz)", required=True)
    tgt: str = field("", help="tokenized target-language training file, line-aligned with --src", required=True)
    alignment: str = field("", help="Pharaoh alignment of --src/--tgt (e.g. smt-train-phrases's "
                                    "aligned.grow-diag-final-and)", required=True)
    out: str = field("", help=f"the table to write (Moses's name: {TABLE_NAME})", required=True)
    max_phrase_length: int = field(DEFAULT_MAX_PHRASE_LENGTH, help="longest phrase (words) on either side "
                                                                   "(as the phrase table's)")
    smoothing: str = field("0.5", help="added to each orientation count (train-model.perl's "
                                       "-reordering-smooth); a trailing 'u' (0.5u) spreads it by the corpus-wide "
                                       "orientation distribution")
    sort_buffer: str = field("1G", help="memory of GNU sort (sort -S: e.g. 500M, 2G)")
    chunk_lines: int = field(5000, help="sentence pairs counted per temp file (memory per worker)")
    tmp_dir: str = field("", help="folder for the temp files (default: the folder of --out)")
    processes: int = field(2, help="worker processes for the extraction (and sort --parallel)")
    check: bool = field(False, help="re-read the written table with the strict reader and print its statistics")


@dataclass
class ReorderingStats:
    sentences: int = 0
    occurrences: int = 0
    pairs: int = 0
    seconds: float = 0.0


def _check_input(path: str, flag: str) -> None:
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"{flag} is a directory, not a file", path)
    if not p.is_file():
        raise FileNotFoundError(errno.ENOENT, f"{flag}: no such file", path)


def read_sentences(cfg: TrainReorderingConfig) -> Iterator[Sentence]:
    """``(src tokens, tgt tokens, links)`` per line of the three files, checked strictly (FILE:LINE)."""
    links_lines = iter_lines(cfg.alignment, allow_empty=True)
    line_no = 0
    for line_no, (s, t) in enumerate(iter_parallel(cfg.src, cfg.tgt), start=1):
        src, tgt = s.split(), t.split()
        for path, toks in ((cfg.src, src), (cfg.tgt, tgt)):
            for tok in toks:
                if "|||" in tok:
                    raise DataError(path, line_no, f"token {tok!r} contains '|||', the table's field separator "
                                                   "(escape '|' when tokenizing)")
        a = next(links_lines, None)
        if a is None:
            raise DataError(cfg.alignment, line_no, f"the alignment ends before the corpus (line {line_no} of "
                                                    f"{cfg.src} has no alignment line)")
        try:
            links = parse_pharaoh(a, len(src), len(tgt))
        except ValueError as err:
            raise DataError(cfg.alignment, line_no, str(err)) from None
        yield src, tgt, links
    if next(links_lines, None) is not None:
        raise DataError(cfg.alignment, line_no + 1, f"more alignment lines than the {line_no} sentence pairs")
    if line_no == 0:
        raise DataError(f"{cfg.src}: no sentence pairs: --src and --tgt are empty (no table written)")


def _count_chunk(args: tuple[list[Sentence], str, int]) -> tuple[int, int, list[int]]:
    """Count one chunk into ``path``; returns (sentences, occurrences, the chunk's six total counts)."""
    sentences, path, max_len = args
    counts, n_occ = count_orientations(sentences, max_len)
    write_chunk(counts, path)
    totals = [sum(col) for col in zip(*counts.values())] if counts else [0] * 6
    return len(sentences), n_occ, totals


def extract(cfg: TrainReorderingConfig, work: Path, stats: ReorderingStats) -> tuple[list[Path], list[int]]:
    """Step 1: chunk files of counts; returns them and the corpus-wide six orientation counts."""
    sentences = read_sentences(cfg)
    chunks = iter(lambda: list(itertools.islice(sentences, cfg.chunk_lines)), [])
    paths: list[Path] = []
    totals = [0] * 6

    def tasks() -> Iterator[tuple[list[Sentence], str, int]]:
        for k, chunk in enumerate(chunks):
            path = chunk_path(work, k)
            paths.append(path)
            yield chunk, str(path), cfg.max_phrase_length

    def add(result: tuple[int, int, list[int]]) -> None:
        n, occ, tot = result
        stats.sentences += n
        stats.occurrences += occ
        for i, c in enumerate(tot):
            totals[i] += c
        bar.update(n)

    with tqdm(unit=" pairs", desc="extract orientations", disable=None) as bar:
        if cfg.processes <= 1 or not can_fork():
            for task in tasks():
                add(_count_chunk(task))
        else:
            with fork_pool(cfg.processes) as pool:  # at most 2 chunks per worker read ahead: memory bounded
                for result in ordered_map(pool, _count_chunk, tasks(), 2 * cfg.processes):
                    add(result)
    return paths, totals


def check_config(cfg: TrainReorderingConfig) -> Smoothing:
    if cfg.max_phrase_length < 1:
        raise UsageError("--max-phrase-length must be >= 1")
    if cfg.chunk_lines < 1:
        raise UsageError("--chunk-lines must be >= 1")
    if cfg.processes < 1:
        raise UsageError("--processes must be >= 1")
    try:
        check_size(cfg.sort_buffer)
    except ValueError as e:
        raise UsageError(f"--sort-buffer: {e}") from None
    try:
        smoothing = Smoothing.parse(cfg.smoothing)
    except ValueError as e:
        raise UsageError(f"--smoothing: {e}") from None
    if cfg.tmp_dir and Path(cfg.tmp_dir).exists() and not Path(cfg.tmp_dir).is_dir():
        raise UsageError(f"{cfg.tmp_dir}: --tmp-dir exists and is not a folder")
    if Path(cfg.out).is_dir():
        raise UsageError(f"{cfg.out}: --out is a folder; give the table's file name ({TABLE_NAME})")
    for flag, path in (("--src", cfg.src), ("--tgt", cfg.tgt), ("--alignment", cfg.alignment)):
        _check_input(path, flag)
    refuse_overwriting_inputs({"--out": cfg.out}, {"--src": cfg.src, "--tgt": cfg.tgt, "--alignment": cfg.alignment})
    return smoothing


def train_reordering(cfg: TrainReorderingConfig) -> ReorderingStats:
    """Steps 1–2 into ``cfg.out`` (atomic; nothing written on bad input); returns the statistics."""
    smoothing = check_config(cfg)
    t0 = time.perf_counter()
    parent = Path(cfg.tmp_dir or Path(cfg.out).resolve().parent)
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".reordering-extract.", dir=parent))
    stats = ReorderingStats()
    try:
        paths, totals = extract(cfg, work, stats)
        values = smoothing.values(totals) if stats.occurrences else smoothing.values([1] * 6)
        opts = SortOptions(cfg.sort_buffer, str(work), cfg.processes)
        with sorted_lines(paths, opts) as lines, \
                tqdm(total=None, unit=" lines", desc="score reordering", disable=None) as bar:
            def counted(pairs):
                for item in pairs:
                    stats.pairs += 1
                    if stats.pairs % 10000 == 0:
                        bar.update(10000)
                    yield item
            write_reordering_table(score_lines(counted(merge_sorted(lines)), values), cfg.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stats.seconds = time.perf_counter() - t0
    return stats


def run(cfg: TrainReorderingConfig) -> None:
    """The command: train, report, and with ``--check`` re-read the table."""
    stats = train_reordering(cfg)
    print(f"[smt-train-reordering] {stats.sentences} sentence pairs, {stats.occurrences} phrase pair occurrences, "
          f"{stats.pairs} table lines -> {cfg.out} ({stats.seconds:.1f} s)", flush=True)
    if cfg.check:
        print(check_reordering_table(cfg.out).summary())

"""Phrase-table rescoring with the RNN Encoder–Decoder (Cho et al., 2014, §3.1).

Every line of a Moses phrase table gets new score columns appended after its
existing scores (see ``docs/rescore.md``):

1. ``p(e|f)`` from the encoder–decoder: the probability of the target phrase
   given the source phrase, in the table's direction (``--model``);
2. with ``--reverse-model``, ``p(f|e)`` from a model trained target→source;
3. with ``--wp-column``, the paper's word-penalty-like feature for words
   unknown to the network, written as ``exp(−n)`` where ``n`` is the number of
   source + target words outside the (forward) network's vocabularies, so
   that Moses, which takes ``ln`` of every phrase-table score, sees ``−n``.

Scores are probabilities (the format's unit) clamped into ``[floor, 1]``
(default floor ``exp(−100) ≈ 3.72e-44``: ``ln`` = −100, Moses's
``LOWEST_SCORE``, the value Moses itself gives ``ln 0``) so every score stays a valid
probability in ``(0, 1]`` for Moses. Every other byte of every line is kept.

How the work is cut (all of it deterministic, so the bytes written do not
depend on how the run is split):

* **windows**: the table's lines are cut into fixed ranges of ``window``
  lines counted from the top of the file (window ``k`` = lines
  ``k·W + 1 … (k + 1)·W``). A window is parsed, scored as one unit (each
  distinct source encoded once, pairs sorted by target length into batches of
  ``max_tokens``) and written back in the original line order as one gzip
  member (for ``.gz`` output). Memory is bounded by the window, not the table.
* **processes**: with ``processes > 1``, whole windows go to worker processes
  (each loads the model) and come back in order.
* **shards**: ``--shard i/N`` takes windows ``⌊i·n/N⌋ … ⌊(i+1)·n/N⌋ − 1`` of
  the ``n`` windows (the lines are counted once); the shard outputs
  concatenated (``cat``) are byte-identical to the single run.
* **chunks** (``--resume``): ``chunk_lines`` (a multiple of ``window``) lines
  are committed at a time as ``OUT.parts/chunk-NNNNNN[.gz]`` (temp file +
  ``fsync`` + rename), with a stats record beside each and
  ``OUT.parts/progress.json`` holding the settings. A rerun with ``--resume``
  after a crash (even ``kill -9``) keeps the committed chunks, redoes the
  rest, and concatenates the chunks into ``OUT`` (the same bytes as an
  uninterrupted run).
The work is split by job: the settings and the plan (:mod:`~smt_features.neural.rescore_config`), reading
windows (:mod:`~smt_features.neural.table_windows`), the scorers (:mod:`~smt_features.neural.scorer_pool`,
which reach the models through :mod:`nmt.scoring` only and import torch inside functions), the output
(:mod:`~smt_features.neural.rescore_output`) and its lock (:mod:`~smt_features.neural.output_lock`);
this module runs them.
"""
from __future__ import annotations

import collections
import logging
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from nmt.core.config import check_required
from nmt.core.io import remove_stale_temp_files
from nmt.core.errors import UsageError
from nmt.core.paths import resolve_checkpoint

from smt_features.neural.output_lock import OutputLock, remove_stale_temps
from smt_features.neural.rescore_config import (TEST_DELAY_ENV, Plan, RescoreConfig, RescoreStats, appended_columns,
                                                check_paths, make_plan, output_paths, parse_shard, run_settings)
from smt_features.neural.rescore_output import (ChunkWriter, assemble, encode_member, format_window, peak_rss_mib,
                                                prepare_parts, write_progress, write_skipped, write_summary)
from smt_features.neural.scorer_pool import EngineSpec, InlineScorer, PoolScorer, build_scorers, check_models
from smt_features.neural.table_windows import TableLines, count_table_lines, read_windows

log = logging.getLogger(__name__)


def rescore_table(cfg: RescoreConfig) -> RescoreStats:
    """Rescore ``cfg.table`` into ``cfg.output`` (see the module docstring); returns the counts."""
    t_start = time.perf_counter()
    check_required(cfg)  # --table, --model, --output
    if cfg.processes < 1 or cfg.threads < 1 or cfg.max_tokens < 1:
        raise ValueError("--processes, --threads and --max-tokens must be positive")
    if not (0.0 < cfg.floor < 1.0):
        raise ValueError("--floor must be in (0, 1)")
    if cfg.amp not in ("none", "bf16", "fp16"):
        raise ValueError(f"--amp must be none, bf16 or fp16, not {cfg.amp!r}")
    shard = parse_shard(cfg.shard)
    ckpts = [resolve_checkpoint(cfg.model, cfg.checkpoint)]
    if cfg.reverse_model:
        ckpts.append(resolve_checkpoint(cfg.reverse_model, cfg.checkpoint))
    check_paths(cfg, ckpts)
    if os.path.getsize(cfg.table) == 0:
        raise UsageError(f"{cfg.table}: empty phrase table (no lines to rescore)")
    with OutputLock(cfg.output):
        return _rescore_locked(cfg, shard, ckpts, t_start)


def _rescore_locked(cfg: RescoreConfig, shard: tuple[int, int], ckpts: list[Path], t_start: float) -> RescoreStats:
    remove_stale_temps(cfg.output)
    remove_stale_temp_files(output_paths(cfg.output)["parts"])  # chunk temp files (the lock makes them stale)
    spec = EngineSpec(cfg.model, cfg.reverse_model, cfg.checkpoint, cfg.max_tokens, cfg.device, cfg.amp,
                      cfg.softmax_block, cfg.threads)
    scorer = None
    if cfg.processes > 1:  # start the workers (and their model loading) first, while the table is counted
        scorer = PoolScorer(replace(spec, threads=max(1, cfg.threads // cfg.processes)), cfg.processes)
    columns = appended_columns(cfg)
    try:
        total = count_table_lines(cfg.table)
        if total == 0:
            raise UsageError(f"{cfg.table}: empty phrase table (no lines to rescore)")
        plan = make_plan(total, cfg.window, cfg.chunk_lines, shard)
        paths = output_paths(cfg.output)
        gz = cfg.output.endswith(".gz")
        paths["output"].parent.mkdir(parents=True, exist_ok=True)

        stats = RescoreStats()
        chunks = plan.chunks()
        done: set[int] = set()
        settings = run_settings(cfg, plan, shard, ckpts)
        if cfg.resume:
            done = prepare_parts(paths["parts"], settings, chunks, gz, stats)
        elif paths["parts"].exists():
            raise ValueError(f"{paths['parts']} holds an interrupted run: rerun with --resume, or remove it")

        log.info("%s: %d lines; this %s: windows %d-%d (%d lines), %d chunk(s)%s", cfg.table, total,
                 f"shard {shard[0]}/{shard[1]}" if shard[1] > 1 else "run", plan.first_window, plan.end_window - 1,
                 plan.lines, len(chunks), f", {len(done)} already done" if done else "")
        todo_windows = [w for c, w0, w1 in chunks if c not in done for w in range(w0, w1)]
        if todo_windows:
            if cfg.processes == 1:
                engines = build_scorers(spec)
                check_models(*engines)
                scorer = InlineScorer(engines)
            else:  # the workers load their own copies; check the models here with a copy of the main process
                check = build_scorers(replace(spec, threads=1))
                check_models(*check)
                del check
        _run_windows(cfg, plan, chunks, done, todo_windows, scorer, paths, gz, stats, settings)
    finally:
        if scorer is not None:
            scorer.close()
    stats.seconds = time.perf_counter() - t_start
    write_summary(cfg, paths, stats, columns, settings)
    if cfg.moses_ini and not cfg.shard:
        ini_out = write_rescored_ini(cfg.moses_ini, cfg.output, len(columns), cfg.moses_ini_out)
        log.info("decoder configuration for %s: %s", cfg.output, ini_out)
    log.info("%d pairs written (%d scored in this run, %.0f pairs/s over %.1f s); %d bad line(s) skipped; "
             "columns appended: %s; peak RSS %.0f MiB", stats.pairs, stats.pairs_this_run,
             stats.pairs_this_run / max(stats.seconds, 1e-9), stats.seconds, stats.skipped, ", ".join(columns),
             peak_rss_mib())
    log.info("words unknown to the network, scored as <unk>: %d source + %d target tokens, in %d of %d pairs",
             stats.src_unk, stats.tgt_unk, stats.unk_pairs, stats.pairs)
    if stats.clamped or stats.clamped_reverse:
        log.info("scores raised to the floor %g: %d forward, %d reverse", cfg.floor, stats.clamped,
                 stats.clamped_reverse)
    return stats


def write_rescored_ini(moses_ini: str, table: str, new_columns: int, out: str = "") -> str:
    """Write the decoder configuration of a rescored table (``out`` or ``TABLE.moses.ini``); returns its path."""
    from smt_features.model.moses_ini import read_moses_ini
    from smt_features.model.moses_ini_build import with_rescored_table

    target = out or f"{table}.moses.ini"
    cfg = with_rescored_table(read_moses_ini(moses_ini), os.path.abspath(table), new_columns)
    cfg.write(target)
    return target


def _run_windows(cfg: RescoreConfig, plan: Plan, chunks: list, done: set[int], todo_windows: list[int], scorer,
                 paths: dict[str, Path], gz: bool, stats: RescoreStats, settings: dict) -> None:
    from tqdm import tqdm

    delay = float(os.environ.get(TEST_DELAY_ENV, "0") or 0)
    writer = ChunkWriter(paths, gz)
    todo_lines = sum(plan.window_lines(w)[1] - plan.window_lines(w)[0] + 1 for w in todo_windows)
    bar = tqdm(total=todo_lines, unit="pairs", unit_scale=True, dynamic_ncols=True, smoothing=0.1,
               disable=not cfg.progress, desc="smt-rescore", file=sys.stderr)
    end_window_of_chunk = {c: w1 - 1 for c, _, w1 in chunks}
    skipped_all: list = []
    in_flight: collections.deque = collections.deque()
    max_in_flight = 1 if cfg.processes == 1 else 2 * cfg.processes
    pairs_run = 0

    def finish_one() -> None:
        nonlocal pairs_run
        window, get = in_flight.popleft()
        result = get()
        text, counts = format_window(window, result, cfg)
        c = plan.chunk_of(window.index)
        if cfg.resume and writer.chunk != c:
            writer.start_chunk(c)
        writer.write(encode_member(text, gz), counts, window.skipped)
        stats.add(counts)
        skipped_all.extend(window.skipped)
        pairs_run += counts["pairs"]
        bar.update(window.lines)  # tqdm shows the rate (pairs/s, counting lines) and the ETA
        if cfg.resume and window.index == end_window_of_chunk[c]:
            writer.end_chunk()
            write_progress(paths["parts"], settings, chunks, done | set(writer.done))
        if delay:
            time.sleep(delay)

    try:
        if not cfg.resume:
            writer.open_single()
        lines = TableLines(cfg.table, cfg.skip_bad)
        for window in read_windows(lines, plan, todo_windows, cfg.skip_bad):
            in_flight.append((window, scorer.submit(window.srcs, window.tgts)))
            while len(in_flight) >= max_in_flight:
                finish_one()
        while in_flight:
            finish_one()
        stats.pairs_this_run = pairs_run
        bar.close()
        if cfg.resume:
            assemble(paths, chunks, gz, stats)
        else:
            writer.commit()
            stats.skipped_lines = skipped_all
            if cfg.skip_bad:
                write_skipped(paths["skipped"], skipped_all)
    except BaseException:
        bar.close()
        writer.abort()
        raise


# -- direct use ------------------------------------------------------------------------------------------
def rescore(table: str, model: str, output: str, **options: Any) -> RescoreStats:
    """``rescore_table(RescoreConfig(table=..., model=..., output=..., **options))``."""
    return rescore_table(RescoreConfig(table=table, model=model, output=output, **options))


def wp_value(unknown_words: int) -> float:
    """The WP column for ``unknown_words`` source + target words unknown to the network: ``exp(−n)``."""
    return math.exp(-unknown_words)

"""The output of ``smt-rescore``: formatting a scored window, writing it whole or chunk by chunk (resume).

Without ``--resume`` the windows go into one temp file committed as ``OUT`` at the end; with it,
each chunk is committed as ``OUT.parts/chunk-NNNNNN[.gz]`` (+ its stats record), and the chunks are
concatenated into ``OUT`` once all are there. Every commit is :func:`nmt.core.io.atomic_write`'s.
"""
from __future__ import annotations

import json
import logging
import shutil
import zlib
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from nmt.core.io import atomic_write, fsync_dir
from nmt.core.formats.phrase_table import append_scores

from smt_features.neural.rescore_config import GZIP_LEVEL, RescoreConfig, RescoreStats, chunk_name
from smt_features.neural.table_windows import Window

log = logging.getLogger(__name__)


def encode_member(lines: list[str], gz: bool) -> bytes:
    """The output bytes of one window: UTF-8 text, as one gzip member for ``.gz`` output (mtime 0)."""
    if not lines:
        return b""
    data = "".join(lines).encode("utf-8")
    if not gz:
        return data
    comp = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
    return comp.compress(data) + comp.flush()


def format_window(window: Window, result: dict[str, Any], cfg: RescoreConfig) -> tuple[list[str], dict]:
    """Output lines of a window (scores appended) and its counts."""
    floor = cfg.floor
    cols = []
    stats: dict[str, int] = {"lines": window.lines, "pairs": len(window.raws), "skipped": len(window.skipped),
                             "sources": int(result.get("sources", 0))}
    for key in ("log_prob", "rev_log_prob"):
        values = result.get(key)
        if values is not None and np.isnan(values).any():
            line_no = window.line_nos[int(np.flatnonzero(np.isnan(values))[0])]
            raise ValueError(f"{cfg.table}:{line_no}: the {'reverse ' if key[0] == 'r' else ''}model scored "
                             "NaN (a broken checkpoint?)")
    log_prob, rev_log_prob = result["log_prob"], result.get("rev_log_prob")
    if cfg.length_normalize:  # ln p / N, N = the tokens the model predicts: the other side's words + </s>
        log_prob = log_prob / np.array([len(t) + 1 for t in window.tgts], dtype=np.float64)
        if rev_log_prob is not None:
            rev_log_prob = rev_log_prob / np.array([len(s) + 1 for s in window.srcs], dtype=np.float64)
    p = np.exp(log_prob)
    stats["clamped"] = int((p < floor).sum())
    cols.append(np.clip(p, floor, 1.0))
    if rev_log_prob is not None:
        pr = np.exp(rev_log_prob)
        stats["clamped_reverse"] = int((pr < floor).sum())
        cols.append(np.clip(pr, floor, 1.0))
    unk = result["src_unk"] + result["tgt_unk"]
    stats["src_unk"] = int(result["src_unk"].sum())
    stats["tgt_unk"] = int(result["tgt_unk"].sum())
    stats["unk_pairs"] = int((unk > 0).sum())
    if cfg.wp_column:
        cols.append(np.exp(-unk.astype(np.float64)))
    rows = np.stack(cols, 1).tolist() if cols else [[] for _ in window.raws]
    out = [append_scores(raw, vals) + ("\n" if nl else "") for raw, vals, nl in zip(window.raws, rows, window.newline)]
    return out, stats


def prepare_parts(parts: Path, settings: dict, chunks: list, gz: bool, stats: RescoreStats) -> set[int]:
    """Check/create ``OUT.parts``; returns the ids of committed chunks (their counts added to ``stats``)."""
    progress = parts / "progress.json"
    done: set[int] = set()
    if progress.exists():
        old = json.loads(progress.read_text(encoding="utf-8"))
        differ = sorted(k for k in set(old.get("settings", {})) | set(settings)
                        if old.get("settings", {}).get(k) != settings.get(k))
        if differ:
            raise ValueError(f"{parts}: an interrupted run with other settings ({', '.join(differ)}); "
                             f"remove {parts} to start over")
        for c, _, _ in chunks:
            data, meta = parts / chunk_name(c, gz), parts / f"chunk-{c:06d}.json"
            if data.exists() and meta.exists():
                done.add(c)
                record = json.loads(meta.read_text(encoding="utf-8"))
                stats.add(record)
        stats.chunks_reused = len(done)
        log.info("resuming: %d of %d chunk(s) already committed in %s", len(done), len(chunks), parts)
    else:
        parts.mkdir(parents=True, exist_ok=True)
    write_progress(parts, settings, chunks, done)
    return done


class _Aborted(Exception):
    """Thrown into an open :func:`~nmt.core.io.atomic_write` to drop its temp file."""


class ChunkWriter:
    """Where window members go: one temp file for the whole output, or one committed file per chunk.

    Each file is an open :func:`~nmt.core.io.atomic_write` (a temp file beside its target): ``commit``
    fsyncs and renames it into place, ``abort`` removes it."""

    def __init__(self, paths: dict[str, Path], gz: bool):
        self.paths, self.gz = paths, gz
        self.fh: Any = None
        self._writing: Any = None  # the open atomic_write
        self.chunk: int | None = None
        self.chunk_stats: dict[str, int] = {}
        self.chunk_skipped: list = []
        self.done: list[int] = []

    def _open(self, target: Path) -> None:
        self._writing = atomic_write(target, "wb", compress=False)  # the members are gzip streams already
        self.fh = self._writing.__enter__()

    def commit(self) -> None:
        """Commit the open file (fsync + rename onto its target)."""
        writing, self._writing, self.fh = self._writing, None, None
        writing.__exit__(None, None, None)

    def open_single(self) -> None:
        self._open(self.paths["output"])

    def start_chunk(self, c: int) -> None:
        self.chunk = c
        self.chunk_stats = {}
        self.chunk_skipped = []
        self._open(self.paths["parts"] / chunk_name(c, self.gz))

    def write(self, data: bytes, counts: dict, skipped: list) -> None:
        if data:
            self.fh.write(data)
        for k, v in counts.items():
            self.chunk_stats[k] = self.chunk_stats.get(k, 0) + v
        self.chunk_skipped.extend(skipped)

    def end_chunk(self) -> None:
        c = self.chunk
        parts = self.paths["parts"]
        record = dict(self.chunk_stats, skipped_lines=self.chunk_skipped)
        with atomic_write(parts / f"chunk-{c:06d}.json") as fh:
            json.dump(record, fh)
        self.commit()  # the commit point of the chunk
        fsync_dir(parts)
        self.done.append(c)

    def abort(self) -> None:
        if self._writing is not None:
            writing, self._writing, self.fh = self._writing, None, None
            err = _Aborted()
            writing.__exit__(type(err), err, None)


def write_progress(parts: Path, settings: dict, chunks: list, done: set[int] | list[int]) -> None:
    """``OUT.parts/progress.json``: the settings a resume must match, and the committed chunks."""
    with atomic_write(parts / "progress.json") as fh:
        json.dump({"settings": settings, "chunks": len(chunks), "done": sorted(done)}, fh, indent=1)


def write_skipped(path: Path, skipped: list) -> None:
    with atomic_write(path) as fh:
        for line_no, message in skipped:
            fh.write(f"{line_no}\t{message}\n")


def assemble(paths: dict[str, Path], chunks: list, gz: bool, stats: RescoreStats) -> None:
    """Concatenate the committed chunks into the output (atomically), then drop ``OUT.parts``."""
    parts = paths["parts"]
    skipped: list = []
    with atomic_write(paths["output"], "wb", compress=False) as fh:
        for c, _, _ in chunks:
            with open(parts / chunk_name(c, gz), "rb") as part:
                shutil.copyfileobj(part, fh, 1 << 20)
            record = json.loads((parts / f"chunk-{c:06d}.json").read_text(encoding="utf-8"))
            skipped.extend(tuple(x) for x in record.get("skipped_lines", []))
    if json.loads((parts / "progress.json").read_text(encoding="utf-8"))["settings"].get("skip_bad"):
        write_skipped(paths["skipped"], skipped)
    stats.skipped_lines = skipped
    shutil.rmtree(parts)


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (MiB; worker processes not included)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def write_summary(cfg: RescoreConfig, paths: dict[str, Path], stats: RescoreStats, columns: list[str],
                   settings: dict) -> None:
    summary = {"config": asdict(cfg), "settings": settings, "columns_appended": columns,
               "stats": {k: v for k, v in asdict(stats).items() if k != "skipped_lines"},
               "pairs_per_second_this_run": stats.pairs_this_run / max(stats.seconds, 1e-9),
               "peak_rss_mib": peak_rss_mib(),
               "units": "probabilities in [floor, 1]; WP = exp(-unknown words)"}
    with atomic_write(paths["summary"]) as fh:
        json.dump(summary, fh, indent=1)

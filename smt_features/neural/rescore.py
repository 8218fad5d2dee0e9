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

The torch part lives in :mod:`nmt.rescoring_engine`; this module imports
``nmt`` modules that need torch only inside functions.
"""
from __future__ import annotations

import collections
import contextlib
import gzip
import hashlib
import json
import logging
import math
import os
import shutil
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field as dc_field, replace
from pathlib import Path
from typing import Any

import numpy as np

from nmt.config import field
from nmt.data.io import DataError, atomic_write, count_lines, remove_stale_temp_files
from nmt.errors import UsageError, refuse_overwriting_inputs
from nmt.paths import resolve_checkpoint
from nmt.formats.phrase_table import PhraseTableError, PhraseTableReader, append_scores

log = logging.getLogger(__name__)

#: gzip level of written tables (as :mod:`nmt.formats.phrase_table` and Moses's pipes).
GZIP_LEVEL = 6
#: Version of the ``OUT.parts`` layout; a resume refuses other versions.
PARTS_VERSION = 1
#: Default floor of the written probabilities: exp(−100), whose ln is Moses's ``LOWEST_SCORE`` (−100), the value
#: Moses itself gives ``ln 0``.
LOWEST_PROB = math.exp(-100.0)
#: Testing hook: seconds to sleep after each window (lets a test kill a run mid-way).
TEST_DELAY_ENV = "SMT_RESCORE_TEST_WINDOW_DELAY"


@dataclass
class RescoreConfig:
    table: str = field("", help="Moses phrase table to rescore (plain or .gz), 'src ||| tgt ||| scores ...'")
    model: str = field("", help="encoder-decoder trained source->target (model folder or checkpoint), "
                                "scores p(target | source)")
    reverse_model: str = field("", help="optional encoder-decoder trained target->source: adds p(source | target)")
    checkpoint: str = field("auto", help="checkpoint of a model folder: best, last, or auto (best if present, "
                                         "else last)")
    output: str = field("", help="rescored table (gzip if it ends in .gz); with --shard the shard's part")
    max_tokens: int = field(2000, help="padded target tokens (incl. EOS) per batch")
    window: int = field(20000, help="lines read ahead, sorted by length and scored together (memory bound)")
    chunk_lines: int = field(100000, help="lines per committed chunk with --resume (a multiple of --window)")
    threads: int = field(2, help="torch intra-op threads, shared among --processes")
    processes: int = field(1, help="worker processes, each scoring whole windows (results merged in order)")
    device: str = field("cpu", help="cpu or cuda[:i]")
    amp: str = field("none", help="autocast: none, bf16 (CPU or GPU) or fp16 (GPU)")
    shard: str = field("", help="'i/N': rescore only the i-th of N line-range shards (0-based)")
    resume: bool = field(False, help="commit the output chunk by chunk under OUTPUT.parts/ and continue an "
                                     "interrupted run")
    wp_column: bool = field(False, help="append the WP feature exp(-n), n = source+target words unknown to "
                                        "the network")
    skip_bad: bool = field(False, help="drop malformed lines (counted, listed in OUTPUT.skipped) instead of "
                                       "stopping at the first")
    floor: float = field(LOWEST_PROB, help="smallest probability written (scores are clamped into [floor, 1]); "
                                           "default exp(-100): Moses's floor LOWEST_SCORE = -100 for ln")
    softmax_block: int = field(64, help="rows of the output layer computed at a time on CPU (cache blocking)")
    progress: bool = field(True, help="show a tqdm progress bar (pairs/s, ETA) on stderr")
    moses_ini: str = field("", help="moses.ini of the input table: also write OUTPUT's config (path and "
                                    "num-features updated, each new score weighted 0.2) to --moses-ini-out")
    moses_ini_out: str = field("", help="where --moses-ini's updated copy goes (default: OUTPUT.moses.ini)")


@dataclass
class RescoreStats:
    lines: int = 0  # physical lines of the shard's range that were read this run or before
    pairs: int = 0  # pairs scored and written
    skipped: int = 0
    src_unk: int = 0  # source tokens unknown to the (forward) network
    tgt_unk: int = 0
    unk_pairs: int = 0  # pairs with at least one unknown word
    clamped: int = 0  # forward scores raised to the floor
    clamped_reverse: int = 0
    sources: int = 0  # distinct sources encoded (summed over windows)
    pairs_this_run: int = 0
    chunks_reused: int = 0
    seconds: float = 0.0
    skipped_lines: list = dc_field(default_factory=list)  # (line, message), this run's part

    def add(self, other: dict) -> None:
        for key in ("lines", "pairs", "skipped", "src_unk", "tgt_unk", "unk_pairs", "clamped", "clamped_reverse",
                    "sources"):
            setattr(self, key, getattr(self, key) + int(other.get(key, 0)))


# -- plan ----------------------------------------------------------------------------------------------
def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` → ``(i, N)`` with ``0 ≤ i < N``; empty → ``(0, 1)``."""
    if not text:
        return 0, 1
    try:
        i_text, n_text = text.split("/")
        i, n = int(i_text), int(n_text)
    except ValueError:
        raise ValueError(f"--shard must look like i/N (e.g. 0/4), not {text!r}") from None
    if not (n >= 1 and 0 <= i < n):
        raise ValueError(f"--shard {text}: need 0 <= i < N")
    return i, n


@dataclass
class Plan:
    total_lines: int
    window: int
    windows_per_chunk: int
    first_window: int  # of this shard
    end_window: int  # exclusive

    def window_lines(self, w: int) -> tuple[int, int]:
        """1-based inclusive line range of window ``w``."""
        return w * self.window + 1, min((w + 1) * self.window, self.total_lines)

    def chunk_of(self, w: int) -> int:
        return w // self.windows_per_chunk

    @property
    def lines(self) -> int:
        if self.end_window <= self.first_window:
            return 0
        return self.window_lines(self.end_window - 1)[1] - self.window_lines(self.first_window)[0] + 1

    def chunks(self) -> list[tuple[int, int, int]]:
        """(chunk id, first window, end window) of the chunks that overlap this shard."""
        out = []
        w = self.first_window
        while w < self.end_window:
            c = self.chunk_of(w)
            end = min((c + 1) * self.windows_per_chunk, self.end_window)
            out.append((c, w, end))
            w = end
        return out


def make_plan(total_lines: int, window: int, chunk_lines: int, shard: tuple[int, int]) -> Plan:
    if window < 1:
        raise ValueError("--window must be positive")
    if chunk_lines < window or chunk_lines % window:
        raise ValueError(f"--chunk-lines ({chunk_lines}) must be a positive multiple of --window ({window})")
    n_windows = -(-total_lines // window)
    i, n = shard
    return Plan(total_lines, window, chunk_lines // window, i * n_windows // n, (i + 1) * n_windows // n)


# -- reading -------------------------------------------------------------------------------------------
def _open_binary(path: str):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def count_table_lines(path: str) -> int:
    """Number of lines of a table (see :func:`nmt.data.io.count_lines`); a truncated or corrupt ``.gz``
    raises :class:`PhraseTableError` at the line where the stream broke."""
    try:
        return count_lines(path)
    except PhraseTableError:
        raise
    except DataError as err:
        raise PhraseTableError(path, err.line or 1, f"cannot read file ({err.detail})") from None


class TableLines:
    """Parses lines of a table one by one through the strict reader, from any line on.

    The reader's consistency checks (same number of fields and scores on every
    line) are primed with the table's first good line, so a shard that starts
    in the middle judges its lines exactly as a run over the whole table does.
    """

    def __init__(self, path: str, skip_bad: bool):
        self.path = path
        self.reader = PhraseTableReader(path, skip_bad=skip_bad, keep_raw=True)
        self._primed = False

    def _prime(self) -> None:
        self._primed = True
        with _open_binary(self.path) as fh:
            try:
                for line_no, raw in enumerate(fh, 1):
                    try:
                        if self.reader._parse(raw, line_no) is not None:
                            return
                    except PhraseTableError:
                        continue
            except (EOFError, OSError, zlib.error):
                return  # reported by the real pass

    def parse(self, raw: bytes, line_no: int):
        """The :class:`~nmt.formats.phrase_table.PhraseEntry` of a raw line (with its ``\\n``), or raises."""
        if not self._primed:
            self._prime()
        return self.reader._parse(raw, line_no)

    def raw_lines(self, first: int, last: int) -> Iterator[tuple[int, bytes]]:
        """``(line_no, bytes incl. the newline)`` for lines ``first…last`` (1-based, inclusive)."""
        line_no = 0
        with _open_binary(self.path) as fh:
            try:
                for raw in fh:
                    line_no += 1
                    if line_no < first:
                        continue
                    if line_no > last:
                        return
                    yield line_no, raw
            except (EOFError, OSError, zlib.error) as err:  # truncated / corrupt gzip
                raise PhraseTableError(self.path, line_no + 1, f"cannot read file (corrupt or truncated gzip "
                                                               f"stream: {err})") from None
        if line_no < last:
            raise PhraseTableError(self.path, line_no + 1, f"file ended at line {line_no}; expected {last} lines "
                                                           "(did it change while being read?)")


@dataclass
class Window:
    index: int
    raws: list  # raw line text without the newline
    newline: list  # whether each kept line ended with '\n'
    srcs: list
    tgts: list
    line_nos: list = dc_field(default_factory=list)
    lines: int = 0  # physical lines read
    skipped: list = dc_field(default_factory=list)  # (line_no, message)


def read_windows(lines: TableLines, plan: Plan, windows: list[int], skip_bad: bool) -> Iterator[Window]:
    """Parsed windows ``windows`` (ascending) of the table, reading the file once."""
    if not windows:
        return
    wanted = set(windows)
    first = plan.window_lines(windows[0])[0]
    last = plan.window_lines(windows[-1])[1]
    current: Window | None = None
    for line_no, raw in lines.raw_lines(first, last):
        w = (line_no - 1) // plan.window
        if w not in wanted:
            continue
        if current is None or current.index != w:
            if current is not None:
                yield current
            current = Window(w, [], [], [], [])
        current.lines += 1
        try:
            entry = lines.parse(raw, line_no)
        except PhraseTableError as err:
            if not skip_bad:
                raise
            current.skipped.append((line_no, err.detail))
            continue
        current.raws.append(entry.raw)
        current.line_nos.append(line_no)
        current.newline.append(raw.endswith(b"\n"))
        current.srcs.append(entry.src)
        current.tgts.append(entry.tgt)
    if current is not None:
        yield current


# -- scoring -------------------------------------------------------------------------------------------
@dataclass
class EngineSpec:
    """What a scoring process needs to build its engines (picklable)."""

    model: str
    reverse_model: str
    which: str
    max_tokens: int
    device: str
    amp: str
    softmax_block: int
    threads: int


def _build_engines(spec: EngineSpec):
    import torch

    from nmt.rescoring_engine import RescoringEngine

    torch.set_num_threads(max(1, spec.threads))
    kw = dict(max_tokens=spec.max_tokens, device=spec.device, amp=spec.amp, softmax_block=spec.softmax_block)
    engines = []
    for model in (spec.model, spec.reverse_model):
        if not model:
            engines.append(None)
            continue
        ckpt = str(resolve_checkpoint(model, spec.which))
        with naming_checkpoint(ckpt):
            engines.append(RescoringEngine.load(ckpt, **kw))
    return engines[0], engines[1]


def _score_job(engines, srcs: list, tgts: list) -> dict[str, Any]:
    fwd, rev = engines
    out = fwd.score(srcs, tgts)
    result = {"log_prob": out.log_prob, "src_unk": out.src_unk, "tgt_unk": out.tgt_unk, "sources": out.num_sources}
    if rev is not None:
        result["rev_log_prob"] = rev.score(tgts, srcs).log_prob
    return result


_WORKER_ENGINES = None


def _worker_init(spec: EngineSpec) -> None:
    global _WORKER_ENGINES
    _WORKER_ENGINES = _build_engines(spec)


def _noop() -> None:
    return None


def _worker_score(srcs: list, tgts: list) -> dict[str, Any]:
    return _score_job(_WORKER_ENGINES, srcs, tgts)


class _InlineScorer:
    def __init__(self, engines):
        self.engines = engines

    def submit(self, srcs, tgts):
        result = _score_job(self.engines, srcs, tgts)
        return lambda: result

    def close(self):
        pass


class _PoolScorer:
    def __init__(self, spec: EngineSpec, processes: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.pool = ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_worker_init, initargs=(spec,))
        for _ in range(processes):  # workers start (and load the models) on submission: start them all now
            self.pool.submit(_noop)

    def submit(self, srcs, tgts):
        return self.pool.submit(_worker_score, srcs, tgts).result

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


# -- writing -------------------------------------------------------------------------------------------
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
    p = np.exp(result["log_prob"])
    stats["clamped"] = int((p < floor).sum())
    cols.append(np.clip(p, floor, 1.0))
    if "rev_log_prob" in result:
        pr = np.exp(result["rev_log_prob"])
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


def _temp_in(folder: Path, name: str):
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    return os.fdopen(fd, "wb"), tmp


def _commit(fh, tmp: str, target: Path) -> None:
    fh.flush()
    os.fsync(fh.fileno())
    fh.close()
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def _settings(cfg: RescoreConfig, plan: Plan, shard: tuple[int, int], ckpts: list[Path]) -> dict[str, Any]:
    """What determines the output bytes (a resume must match them all)."""
    st = os.stat(cfg.table)
    return {"version": PARTS_VERSION, "table": os.path.abspath(cfg.table), "table_size": st.st_size,
            "table_mtime_ns": st.st_mtime_ns, "total_lines": plan.total_lines, "shard": list(shard),
            "checkpoints": [{"path": str(p.resolve()), "sha256": _sha256(p)} for p in ckpts],
            "window": cfg.window, "chunk_lines": cfg.chunk_lines, "max_tokens": cfg.max_tokens,
            "floor": cfg.floor, "wp_column": cfg.wp_column, "skip_bad": cfg.skip_bad, "amp": cfg.amp,
            "device_type": cfg.device.split(":")[0], "softmax_block": cfg.softmax_block,
            "gzip": cfg.output.endswith(".gz")}


def output_paths(output: str) -> dict[str, Path]:
    out = Path(output)
    return {"output": out, "parts": Path(f"{output}.parts"), "skipped": Path(f"{output}.skipped"),
            "summary": Path(f"{output}.rescore.json")}


def _chunk_name(c: int, gz: bool) -> str:
    return f"chunk-{c:06d}" + (".gz" if gz else "")


# -- the output lock and stale temp files ----------------------------------------------------------------
class OutputLock:
    """An exclusive, non-blocking lock on one output: ``flock`` on ``OUTPUT.lock`` beside it.

    Two runs writing the same output (its temp files, its ``OUTPUT.parts/`` chunks) would corrupt each
    other; the second one is refused with :class:`~nmt.errors.UsageError` naming the holder (the pid and
    host the holder wrote into the lock file). The operating system drops the lock when its holder
    exits, even on ``kill -9``, so a crashed run never blocks the next one. On release the lock file is
    removed (while still locked; a run that opened the old file notices and opens the new one).
    """

    def __init__(self, output: str | os.PathLike, prog: str = "smt-rescore") -> None:
        self.output = str(output)
        self.path = Path(f"{output}.lock")
        self.prog = prog
        self.fd: int | None = None

    def acquire(self) -> "OutputLock":
        import fcntl
        import socket

        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self._holder(fd)
                os.close(fd)
                raise UsageError(f"{self.output}: another run is writing this output ({holder}; lock file "
                                 f"{self.path}); wait for it to finish or stop it") from None
            except BaseException:
                os.close(fd)
                raise
            try:  # the previous holder may have removed the file between our open and our flock
                current = os.stat(self.path)
            except FileNotFoundError:
                current = None
            if current is not None and os.path.samestat(os.fstat(fd), current):
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid={os.getpid()} host={socket.gethostname()} prog={self.prog} "
                     f"since={time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode())
        self.fd = fd
        return self

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        except OSError:
            text = ""
        info = dict(item.split("=", 1) for item in text.split() if "=" in item)
        if "pid" not in info:
            return "held by another process that has not yet written its pid"
        where = f"pid {info['pid']} on host {info.get('host', '?')}"
        if info.get("prog"):
            where = f"{info['prog']}, {where}"
        return f"held by {where}" + (f" since {info['since']}" if info.get("since") else "")

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "OutputLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def remove_stale_temps(output: str | os.PathLike, sidecars: tuple[str, ...] = (".rescore.json", ".skipped")
                       ) -> list[Path]:
    """Delete the temp files a killed run left for ``output`` (``.NAME.XXXXXXXX.tmp`` beside it, NAME the
    output's name or one of its ``sidecars``); no other file is touched. Call it holding the output's
    :class:`OutputLock` (a live run's temp files are never stale then). Returns what was removed."""
    out = Path(output)
    removed = remove_stale_temp_files(out.parent, names=[out.name] + [out.name + s for s in sidecars])
    if removed:
        log.info("removed %d stale temp file(s) of %s left by an interrupted run: %s", len(removed), out,
                 ", ".join(p.name for p in removed))
    return removed


@contextlib.contextmanager
def naming_checkpoint(ckpt: str | os.PathLike) -> Iterator[None]:
    """Inside: a plain ``ValueError`` from loading ``ckpt`` (e.g. its vocabulary does not match it) becomes a
    :class:`~nmt.errors.UsageError` whose message starts with the checkpoint's path (``FILE: ...``)."""
    from nmt.data.io import DataError

    try:
        yield
    except (DataError, UsageError):
        raise
    except ValueError as err:
        text = str(err)
        head = text.split(": ", 1)[0].rstrip(":0123456789")
        if head and os.path.exists(head):  # already names its file (the checkpoint, or the vocabulary at fault)
            raise
        raise UsageError(f"{ckpt}: {text}") from None


def _check_paths(cfg: RescoreConfig, ckpts: list[Path]) -> None:
    """Refuse inputs that are not files and outputs that would overwrite an input, before anything is written."""
    import errno

    if not os.path.exists(cfg.table):
        raise FileNotFoundError(errno.ENOENT, "no such phrase table", cfg.table)
    if os.path.isdir(cfg.table):
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a phrase table", cfg.table)
    if cfg.moses_ini and not os.path.isfile(cfg.moses_ini):
        raise (IsADirectoryError(errno.EISDIR, "is a folder, not a moses.ini", cfg.moses_ini)
               if os.path.isdir(cfg.moses_ini) else FileNotFoundError(errno.ENOENT, "no such moses.ini",
                                                                       cfg.moses_ini))
    if os.path.isdir(cfg.output):
        raise IsADirectoryError(errno.EISDIR, "--output is a folder; give the rescored table's file name",
                                cfg.output)
    paths = output_paths(cfg.output)
    outputs: dict[str, Any] = {"--output": cfg.output, "--output's summary": paths["summary"],
                               "--output's lock": f"{cfg.output}.lock"}
    if cfg.skip_bad:
        outputs["--output's skipped-line list"] = paths["skipped"]
    if cfg.moses_ini and not cfg.shard:
        outputs["--moses-ini-out"] = cfg.moses_ini_out or f"{cfg.output}.moses.ini"
    inputs: dict[str, Any] = {"--table": cfg.table, "--moses-ini": cfg.moses_ini or None}
    for flag, ckpt in zip(("--model", "--reverse-model"), ckpts):
        inputs[flag] = ckpt
        for vocab in sorted(ckpt.parent.glob("*_vocab.*")):
            inputs[f"{flag}'s vocabulary {vocab.name}"] = vocab
    refuse_overwriting_inputs(outputs, inputs)


# -- the run -------------------------------------------------------------------------------------------
def _check_models(fwd, rev) -> None:
    if rev is None:
        return
    same = fwd.src_vocab.fingerprint() == rev.src_vocab.fingerprint() and \
        fwd.tgt_vocab.fingerprint() == rev.tgt_vocab.fingerprint()
    if same and fwd.src_vocab.fingerprint() != fwd.tgt_vocab.fingerprint():
        raise ValueError("--reverse-model has the same source/target vocabularies as --model: it scores the same "
                         "direction; train it target->source")
    if fwd.src_vocab.fingerprint() != rev.tgt_vocab.fingerprint() or \
            fwd.tgt_vocab.fingerprint() != rev.src_vocab.fingerprint():
        log.warning("--reverse-model's vocabularies are not those of --model swapped; check it was trained "
                    "target->source on the same data")


def appended_columns(cfg: RescoreConfig) -> list[str]:
    """Names of the scores ``cfg`` appends to every line, in order."""
    return ["p_rnn(e|f)"] + (["p_rnn(f|e)"] if cfg.reverse_model else []) + (["WP=exp(-unk)"] if cfg.wp_column
                                                                             else [])


def rescore_table(cfg: RescoreConfig) -> RescoreStats:
    """Rescore ``cfg.table`` into ``cfg.output`` (see the module docstring); returns the counts."""
    t_start = time.perf_counter()
    if not cfg.table or not cfg.model or not cfg.output:
        raise UsageError("--table, --model and --output are required")
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
    _check_paths(cfg, ckpts)
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
        scorer = _PoolScorer(replace(spec, threads=max(1, cfg.threads // cfg.processes)), cfg.processes)
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
        settings = _settings(cfg, plan, shard, ckpts)
        if cfg.resume:
            done = _prepare_parts(paths["parts"], settings, chunks, gz, stats)
        elif paths["parts"].exists():
            raise ValueError(f"{paths['parts']} holds an interrupted run: rerun with --resume, or remove it")

        log.info("%s: %d lines; this %s: windows %d-%d (%d lines), %d chunk(s)%s", cfg.table, total,
                 f"shard {shard[0]}/{shard[1]}" if shard[1] > 1 else "run", plan.first_window, plan.end_window - 1,
                 plan.lines, len(chunks), f", {len(done)} already done" if done else "")
        todo_windows = [w for c, w0, w1 in chunks if c not in done for w in range(w0, w1)]
        if todo_windows:
            if cfg.processes == 1:
                engines = _build_engines(spec)
                _check_models(*engines)
                scorer = _InlineScorer(engines)
            else:  # the workers load their own copies; check the models here with a copy of the main process
                check = _build_engines(replace(spec, threads=1))
                _check_models(*check)
                del check
        _run_windows(cfg, plan, chunks, done, todo_windows, scorer, paths, gz, stats, settings)
    finally:
        if scorer is not None:
            scorer.close()
    stats.seconds = time.perf_counter() - t_start
    _write_summary(cfg, paths, stats, columns, settings)
    if cfg.moses_ini and not cfg.shard:
        ini_out = write_rescored_ini(cfg.moses_ini, cfg.output, len(columns), cfg.moses_ini_out)
        log.info("decoder configuration for %s: %s", cfg.output, ini_out)
    log.info("%d pairs written (%d scored in this run, %.0f pairs/s over %.1f s); %d bad line(s) skipped; "
             "columns appended: %s; peak RSS %.0f MiB", stats.pairs, stats.pairs_this_run,
             stats.pairs_this_run / max(stats.seconds, 1e-9), stats.seconds, stats.skipped, ", ".join(columns),
             _peak_rss_mib())
    log.info("words unknown to the network, scored as <unk>: %d source + %d target tokens, in %d of %d pairs",
             stats.src_unk, stats.tgt_unk, stats.unk_pairs, stats.pairs)
    if stats.clamped or stats.clamped_reverse:
        log.info("scores raised to the floor %g: %d forward, %d reverse", cfg.floor, stats.clamped,
                 stats.clamped_reverse)
    return stats


def write_rescored_ini(moses_ini: str, table: str, new_columns: int, out: str = "") -> str:
    """Write the decoder configuration of a rescored table (``out`` or ``TABLE.moses.ini``); returns its path."""
    from smt_features.model.moses_ini import read_moses_ini, with_rescored_table

    target = out or f"{table}.moses.ini"
    cfg = with_rescored_table(read_moses_ini(moses_ini), os.path.abspath(table), new_columns)
    cfg.write(target)
    return target


def _prepare_parts(parts: Path, settings: dict, chunks: list, gz: bool, stats: RescoreStats) -> set[int]:
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
            data, meta = parts / _chunk_name(c, gz), parts / f"chunk-{c:06d}.json"
            if data.exists() and meta.exists():
                done.add(c)
                record = json.loads(meta.read_text(encoding="utf-8"))
                stats.add(record)
        stats.chunks_reused = len(done)
        log.info("resuming: %d of %d chunk(s) already committed in %s", len(done), len(chunks), parts)
    else:
        parts.mkdir(parents=True, exist_ok=True)
    with atomic_write(progress) as fh:
        json.dump({"settings": settings, "chunks": len(chunks), "done": sorted(done)}, fh, indent=1)
    return done


class _ChunkWriter:
    """Where window members go: one temp file for the whole output, or one committed file per chunk."""

    def __init__(self, cfg: RescoreConfig, paths: dict[str, Path], gz: bool):
        self.cfg, self.paths, self.gz = cfg, paths, gz
        self.fh = None
        self.tmp = None
        self.chunk: int | None = None
        self.chunk_stats: dict[str, int] = {}
        self.chunk_skipped: list = []
        self.done: list[int] = []

    def open_single(self) -> None:
        self.fh, self.tmp = _temp_in(self.paths["output"].parent, self.paths["output"].name)

    def start_chunk(self, c: int) -> None:
        self.chunk = c
        self.chunk_stats = {}
        self.chunk_skipped = []
        self.fh, self.tmp = _temp_in(self.paths["parts"], _chunk_name(c, self.gz))

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
        _commit(self.fh, self.tmp, parts / _chunk_name(c, self.gz))  # the commit point of the chunk
        _fsync_dir(parts)
        self.fh = self.tmp = None
        self.done.append(c)

    def abort(self) -> None:
        if self.fh is not None:
            try:
                self.fh.close()
            finally:
                if self.tmp and os.path.exists(self.tmp):
                    os.unlink(self.tmp)
            self.fh = self.tmp = None


def _run_windows(cfg: RescoreConfig, plan: Plan, chunks: list, done: set[int], todo_windows: list[int], scorer,
                 paths: dict[str, Path], gz: bool, stats: RescoreStats, settings: dict) -> None:
    from tqdm import tqdm

    delay = float(os.environ.get(TEST_DELAY_ENV, "0") or 0)
    writer = _ChunkWriter(cfg, paths, gz)
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
            with atomic_write(paths["parts"] / "progress.json") as fh:
                json.dump({"settings": settings, "chunks": len(chunks),
                           "done": sorted(done | set(writer.done))}, fh, indent=1)
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
            _assemble(paths, chunks, gz, stats)
        else:
            _commit(writer.fh, writer.tmp, paths["output"])
            writer.fh = writer.tmp = None
            stats.skipped_lines = skipped_all
            if cfg.skip_bad:
                _write_skipped(paths["skipped"], skipped_all)
    except BaseException:
        bar.close()
        writer.abort()
        raise


def _write_skipped(path: Path, skipped: list) -> None:
    with atomic_write(path) as fh:
        for line_no, message in skipped:
            fh.write(f"{line_no}\t{message}\n")


def _assemble(paths: dict[str, Path], chunks: list, gz: bool, stats: RescoreStats) -> None:
    """Concatenate the committed chunks into the output (atomically), then drop ``OUT.parts``."""
    parts = paths["parts"]
    fh, tmp = _temp_in(paths["output"].parent, paths["output"].name)
    skipped: list = []
    try:
        for c, _, _ in chunks:
            with open(parts / _chunk_name(c, gz), "rb") as part:
                shutil.copyfileobj(part, fh, 1 << 20)
            record = json.loads((parts / f"chunk-{c:06d}.json").read_text(encoding="utf-8"))
            skipped.extend(tuple(x) for x in record.get("skipped_lines", []))
        _commit(fh, tmp, paths["output"])
    except BaseException:
        fh.close()
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if json.loads((parts / "progress.json").read_text(encoding="utf-8"))["settings"].get("skip_bad"):
        _write_skipped(paths["skipped"], skipped)
    stats.skipped_lines = skipped
    shutil.rmtree(parts)


def _peak_rss_mib() -> float:
    """Peak resident memory of this process so far (MiB; worker processes not included)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _write_summary(cfg: RescoreConfig, paths: dict[str, Path], stats: RescoreStats, columns: list[str],
                   settings: dict) -> None:
    summary = {"config": asdict(cfg), "settings": settings, "columns_appended": columns,
               "stats": {k: v for k, v in asdict(stats).items() if k != "skipped_lines"},
               "pairs_per_second_this_run": stats.pairs_this_run / max(stats.seconds, 1e-9),
               "peak_rss_mib": _peak_rss_mib(),
               "units": "probabilities in [floor, 1]; WP = exp(-unknown words)"}
    with atomic_write(paths["summary"]) as fh:
        json.dump(summary, fh, indent=1)


# -- direct use ------------------------------------------------------------------------------------------
def rescore(table: str, model: str, output: str, **options: Any) -> RescoreStats:
    """``rescore_table(RescoreConfig(table=..., model=..., output=..., **options))``."""
    return rescore_table(RescoreConfig(table=table, model=model, output=output, **options))


def wp_value(unknown_words: int) -> float:
    """The WP column for ``unknown_words`` source + target words unknown to the network: ``exp(−n)``."""
    return math.exp(-unknown_words)

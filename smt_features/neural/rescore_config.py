"""``smt-rescore``'s settings: the config, the counts, the plan of windows/chunks/shards, the output paths.

How the work is cut is described in :mod:`smt_features.neural.rescore`.
"""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field as dc_field
from pathlib import Path
from typing import Any

from nmt.core.config import field
from nmt.core.errors import refuse_overwriting_inputs
from nmt.core.paths import CHECKPOINT_HELP

#: gzip level of written tables (as :mod:`nmt.core.formats.phrase_table` and Moses's pipes).
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
    table: str = field("", required=True, help="Moses phrase table to rescore (plain or .gz), 'src ||| tgt ||| scores ...'")
    model: str = field("", required=True, help="encoder-decoder trained source->target (model folder or checkpoint), "
                                "scores p(target | source)")
    reverse_model: str = field("", help="optional encoder-decoder trained target->source: adds p(source | target)")
    checkpoint: str = field("auto", help=CHECKPOINT_HELP)
    output: str = field("", required=True, help="rescored table (gzip if it ends in .gz); with --shard the shard's part")
    max_tokens: int = field(2000, help="padded target tokens (incl. EOS) per batch")
    window: int = field(20000, help="lines read ahead, sorted by length and scored together (memory bound)")
    chunk_lines: int = field(100000, help="lines per committed chunk with --resume (a multiple of --window)")
    threads: int = field(2, help="torch intra-op threads, shared among --processes")
    processes: int = field(1, help="worker processes, each scoring whole windows (results merged in order)")
    device: str = field("cpu", help="cpu or cuda[:i]")
    amp: str = field("none", help="autocast: none, bf16 (CPU or GPU) or fp16 (GPU); bf16 cost the Multi30k +RNN row "
                                  "its gain on test_2017 (docs/rescore.md): none for tables that are tuned")
    shard: str = field("", help="'i/N': rescore only the i-th of N line-range shards (0-based)")
    resume: bool = field(False, help="commit the output chunk by chunk under OUTPUT.parts/ and continue an "
                                     "interrupted run")
    length_normalize: bool = field(False, help="write exp(ln p / N) instead of p, N = the predicted tokens "
                                               "(target words + </s>; for --reverse-model source words + </s>): the "
                                               "per-token geometric mean, so that the feature does not simply "
                                               "favour short phrases")
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


def appended_columns(cfg: RescoreConfig) -> list[str]:
    """Names of the scores ``cfg`` appends to every line, in order."""
    norm = "^(1/N)" if cfg.length_normalize else ""
    return ([f"p_rnn(e|f){norm}"] + ([f"p_rnn(f|e){norm}"] if cfg.reverse_model else [])
            + (["WP=exp(-unk)"] if cfg.wp_column else []))


# -- what determines the output, and where it goes --------------------------------------------------------
def sha256_prefix(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def run_settings(cfg: RescoreConfig, plan: Plan, shard: tuple[int, int], ckpts: list[Path]) -> dict[str, Any]:
    """What determines the output bytes (a resume must match them all)."""
    st = os.stat(cfg.table)
    return {"version": PARTS_VERSION, "table": os.path.abspath(cfg.table), "table_size": st.st_size,
            "table_mtime_ns": st.st_mtime_ns, "total_lines": plan.total_lines, "shard": list(shard),
            "checkpoints": [{"path": str(p.resolve()), "sha256": sha256_prefix(p)} for p in ckpts],
            "window": cfg.window, "chunk_lines": cfg.chunk_lines, "max_tokens": cfg.max_tokens,
            "floor": cfg.floor, "wp_column": cfg.wp_column, "length_normalize": cfg.length_normalize, "skip_bad": cfg.skip_bad, "amp": cfg.amp,
            "device_type": cfg.device.split(":")[0], "softmax_block": cfg.softmax_block,
            "gzip": cfg.output.endswith(".gz")}


def output_paths(output: str) -> dict[str, Path]:
    out = Path(output)
    return {"output": out, "parts": Path(f"{output}.parts"), "skipped": Path(f"{output}.skipped"),
            "summary": Path(f"{output}.rescore.json")}


def chunk_name(c: int, gz: bool) -> str:
    return f"chunk-{c:06d}" + (".gz" if gz else "")


def check_paths(cfg: RescoreConfig, ckpts: list[Path]) -> None:
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

"""Alignment heat-maps of translations (Bahdanau et al. 2015, Fig. 3) from ``nmt-translate --attention`` files.

``nmt-translate --attention FILE`` writes one JSON object per input line::

    {"line": 3, "source": ["the", "cat", "</s>"], "target": ["le", "chat", "</s>"],
     "attention": [[α_11, α_12, α_13], [α_21, …], [α_31, …]]}

(rows = the 1-best's target tokens + ``</s>`` when the hypothesis ended, columns = the source
tokens + ``</s>``, each row summing to 1). This module reads such a file strictly
(:func:`read_attention_records`: every record is checked, a fault is a :class:`DataError` at
``FILE:LINE``) and draws one record as the paper's Fig. 3 (:func:`render_alignment`: source words
along the top, target words down the side, grey scale from 0 = black to 1 = white).
:func:`plot_attention_file` is ``nmt-plot-attention``'s run: ``DIR/attention.LINE.png`` per chosen
record, every PNG rendered before the first is written, each written atomically.
"""
from __future__ import annotations

import contextlib
import html
import io
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from nmt.core import config as C
from nmt.core.io import DataError, atomic_write, iter_lines
from nmt.core.errors import UsageError, refuse_overwriting_inputs
from nmt.core.run_checks import check_out_dir_path

#: a row of weights may differ from 1 by this much (the file rounds each weight to 6 decimals)
ROW_SUM_TOLERANCE = 1e-3
#: records plotted when neither --lines nor --max-sentences is given
DEFAULT_SENTENCES = 3


@dataclass
class PlotAttentionConfig:
    attention: str = C.field("", help="JSON-lines file written by nmt-translate --attention", required=True)
    out_dir: str = C.field("", help="folder for attention.LINE.png (created if needed)", required=True)
    lines: list[int] = C.field([], help="input line numbers to plot (the records' \"line\"; default: the "
                                        "first records of the file)")
    max_sentences: int | None = C.field(None, help=f"without --lines: plot the first N records (default: "
                                                   f"{DEFAULT_SENTENCES})")
    dpi: int = C.field(100, help="resolution of the PNGs")


@dataclass
class AlignmentRecord:
    line: int             # the input line translated (the record's "line")
    file_line: int        # where the record is in the attention file
    source: list[str]     # source tokens + </s>
    target: list[str]     # 1-best target tokens (+ </s> when it ended)
    weights: np.ndarray   # [len(target), len(source)] float64, rows summing to 1


def _tokens(path: str, line_no: int, rec: dict, key: str) -> list[str]:
    value = rec.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(t, str) and t for t in value):
        raise DataError(path, line_no, f'"{key}" must be a non-empty list of non-empty strings')
    return value


def parse_record(path: str, line_no: int, text: str) -> AlignmentRecord:
    """One line of the attention file, checked: keys, types, shape (rows = target tokens, columns =
    source tokens incl. ``</s>``), weights in [0, 1], rows summing to 1 within ``ROW_SUM_TOLERANCE``."""
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(path, line_no, f"not a JSON object: {err.msg} (column {err.colno})") from None
    if not isinstance(rec, dict):
        raise DataError(path, line_no, f"not a JSON object but a {type(rec).__name__}")
    missing = [k for k in ("line", "source", "target", "attention") if k not in rec]
    if missing:
        raise DataError(path, line_no, f"missing key(s) {', '.join(missing)} (expected line, source, target, "
                                       "attention as written by nmt-translate --attention)")
    number = rec["line"]
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise DataError(path, line_no, f'"line" must be a positive integer, not {number!r}')
    source, target = _tokens(path, line_no, rec, "source"), _tokens(path, line_no, rec, "target")
    rows = rec["attention"]
    if not isinstance(rows, list) or len(rows) != len(target):
        size = len(rows) if isinstance(rows, list) else type(rows).__name__
        raise DataError(path, line_no, f'"attention" has {size} rows, expected {len(target)} (one per target '
                                       "token)")
    for i, row in enumerate(rows, start=1):
        if not isinstance(row, list) or len(row) != len(source):
            size = len(row) if isinstance(row, list) else type(row).__name__
            raise DataError(path, line_no, f"attention row {i} has {size} weights, expected {len(source)} "
                                           f"(the {len(source) - 1} source tokens + </s>)")
        if not all(isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a) and 0 <= a <= 1
                   for a in row):
            raise DataError(path, line_no, f"attention row {i}: every weight must be a number in [0, 1]")
        total = math.fsum(row)
        if abs(total - 1.0) > ROW_SUM_TOLERANCE:
            raise DataError(path, line_no, f"attention row {i} sums to {total:.6g}, not 1 "
                                           f"(within {ROW_SUM_TOLERANCE:g})")
    return AlignmentRecord(number, line_no, list(source), list(target), np.asarray(rows, dtype=np.float64))


def read_attention_records(path: str | Path, lines: Sequence[int] = (), first: int = DEFAULT_SENTENCES
                           ) -> list[AlignmentRecord]:
    """Check every record of ``path``; return those of the input ``lines`` (in that order), or
    without ``lines`` the ``first`` records of the file. A line asked for that no record holds, a
    record number seen twice, or an empty file is refused naming the file."""
    path = str(path)
    wanted = set(lines)
    kept: dict[int, AlignmentRecord] = {}
    seen: dict[int, int] = {}
    count = 0
    for line_no, text in enumerate(iter_lines(path, allow_empty=True), start=1):
        if not text.strip():
            raise DataError(path, line_no, "empty line (expected one JSON record per line)")
        rec = parse_record(path, line_no, text)
        if rec.line in seen:
            raise DataError(path, line_no, f'"line": {rec.line} again (first at line {seen[rec.line]})')
        seen[rec.line] = line_no
        count += 1
        if (rec.line in wanted) if wanted else count <= first:
            kept[rec.line] = rec
    if count == 0:
        raise DataError(f"{path}: empty (no attention records)")
    absent = [n for n in lines if n not in seen]
    if absent:
        have = sorted(seen)
        span = f"{have[0]}" if len(have) == 1 else f"{have[0]}..{have[-1]}"
        raise UsageError(f"{path}: no record of input line {', '.join(map(str, absent))} (--lines; the file "
                         f"holds {len(have)} records, input lines {span})")
    return [kept[n] for n in lines] if lines else list(kept.values())


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def render_alignment(rec: AlignmentRecord, *, title: str = "", dpi: int = 100) -> bytes:
    """The PNG bytes of one record in the style of Bahdanau et al. (2015), Fig. 3: source words
    along the top (x), the translation down the side (y), α_ij in grey scale (0 black, 1 white)."""
    plt = _plt()
    rows, cols = rec.weights.shape
    fig, ax = plt.subplots(figsize=(max(3.0, 0.32 * cols + 1.8), max(3.0, 0.32 * rows + 1.6)))
    try:
        ax.imshow(rec.weights, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest", aspect="equal")
        ax.xaxis.tick_top()
        ax.xaxis.set_label_position("top")
        ax.set_xticks(range(cols))
        # the tokens as read (the Moses tokenizer escapes & < > ' " as XML entities)
        ax.set_xticklabels([html.unescape(w) for w in rec.source], rotation=90, fontsize=8, parse_math=False)
        ax.set_yticks(range(rows))
        ax.set_yticklabels([html.unescape(w) for w in rec.target], fontsize=8, parse_math=False)
        ax.tick_params(length=0)
        if title:
            ax.set_xlabel(title, fontsize=9, labelpad=8, parse_math=False)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    return buf.getvalue()


def plot_attention_file(cfg: PlotAttentionConfig) -> list[Path]:
    """``nmt-plot-attention``: check ``cfg.attention``, render the chosen records, then write
    ``cfg.out_dir/attention.LINE.png`` for each (atomically; nothing is written when any check fails)."""
    C.check_required(cfg)
    if cfg.lines and cfg.max_sentences is not None:
        raise UsageError("give --lines or --max-sentences, not both")
    first = DEFAULT_SENTENCES if cfg.max_sentences is None else cfg.max_sentences
    if first < 1:
        raise UsageError(f"--max-sentences {first}: must be at least 1")
    if cfg.dpi < 10:
        raise UsageError(f"--dpi {cfg.dpi}: must be at least 10")
    bad = [n for n in cfg.lines if n < 1]
    if bad:
        raise UsageError(f"--lines {bad[0]}: line numbers start at 1")
    lines = list(dict.fromkeys(cfg.lines))
    out = Path(cfg.out_dir)
    check_out_dir_path(out)
    records = read_attention_records(cfg.attention, lines, first)
    targets = [out / f"attention.{rec.line}.png" for rec in records]
    refuse_overwriting_inputs(outputs={f"--out-dir file {t.name}": t for t in targets},
                              inputs={"--attention": cfg.attention})
    name = Path(cfg.attention).name
    pngs = [render_alignment(rec, title=f"{name}, input line {rec.line}", dpi=cfg.dpi) for rec in records]
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    try:
        for target, png in zip(targets, pngs):
            with atomic_write(target, "wb") as fh:
                fh.write(png)
            written.append(target)
    except BaseException:  # e.g. a full disk: take back this run's PNGs, leave nothing partial
        for target in written:
            target.unlink(missing_ok=True)
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    print(f"wrote {len(targets)} alignment plot(s) to {out}: " + " ".join(t.name for t in targets), file=sys.stderr)
    return targets

"""The phrase table ``smt-tune`` decodes with: filtered once to the dev set's phrases (``mert-moses.pl``'s filtering).

With ``--filter-table true`` (the default) the tuning loop streams the moses.ini's
``PhraseDictionaryMemory`` table once through :func:`smt_features.model.table_filter.filter_table`
(every source phrase of any length that occurs in ``--dev-src``) into
``WORK/filtered/<table name>`` (a ``LexicalReordering`` table too, into
``WORK/filtered/<feature name>.<table name>``), and every iteration's decoder reads that small table instead of
the whole one. The decoder only ever looks up phrases of the dev sentences, so the translations,
n-best lists and tuned weights are the same; ``moses.tuned.ini`` keeps the original table's path.
A resumed run reuses the filtered table (it is written atomically).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from nmt.core.io import open_text
from smt_features.model.table_filter import filter_table
from smt_features.tune.decoding import absolute_paths
from smt_features.tune.options import TuneConfig

log = logging.getLogger("smt_features.tune")
FILTER_DIR = "filtered"


def decoding_model(cfg: TuneConfig, base: Any, work: Path) -> tuple[Any, str | None]:
    """``(config, moses.ini path)`` the decoder runs with: ``(base, None)`` unless a table was filtered, else a
    copy of ``base`` whose phrase table is the filtered one (and, for ``--weights-mode override``, that copy
    written to ``WORK/filtered/moses.ini``)."""
    if not cfg.filter_table:
        return base, None
    out_cfg = absolute_paths(base)
    lines = [fl for fl in out_cfg.features if fl.type == "PhraseDictionaryMemory" and fl.get("path")]
    if len(lines) != 1 or not Path(lines[0].get("path")).is_file():
        log.info("--filter-table: no single PhraseDictionaryMemory text table to filter; decoding with the "
                 "moses.ini as it is")
        return base, None
    table = Path(lines[0].get("path"))
    out = work / FILTER_DIR / table.name
    if out.exists():
        log.info("--filter-table: reusing %s", out)
    else:
        t0 = time.perf_counter()
        stats = filter_table(table, [cfg.dev_src], out, max_phrase_length=0)
        log.info("--filter-table: kept %d of %d lines of %s for the dev set (%.1f s): %s", stats.lines_kept,
                 stats.lines_read, table, time.perf_counter() - t0, out)
    if not _has_lines(out):
        log.info("--filter-table: no line of %s matches the dev set; decoding with the whole table", table)
        return base, None
    lines[0].args["path"] = str(out.resolve())
    for fl in out_cfg.features:  # a lexicalized reordering table has the same line shape: filtered alike
        lr_table = Path(fl.get("path") or "")
        if fl.type == "LexicalReordering" and lr_table.is_file():
            lr_out = work / FILTER_DIR / f"{fl.name}.{lr_table.name}"
            if not lr_out.exists():
                filter_table(lr_table, [cfg.dev_src], lr_out, max_phrase_length=0)
            if _has_lines(lr_out):
                fl.args["path"] = str(lr_out.resolve())
    if cfg.weights_mode != "override":
        return out_cfg, None
    ini = work / FILTER_DIR / "moses.ini"
    out_cfg.write(ini)
    return out_cfg, str(ini)


def _has_lines(path: Path) -> bool:
    with open_text(path) as fh:
        return bool(fh.read(1))

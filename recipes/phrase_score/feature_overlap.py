"""How much of a phrase-score column the phrase table's own features already tell (issue 23: why it adds little).

    feature_overlap.py TABLE.gz --column K [--base 4] [--name "RNN ln p(e|f)"]

TABLE.gz is a Moses phrase table with the score column K (0-based) appended by ``smt-rescore``. Everything is in the
log-linear model's units: natural logs of the probabilities (Moses takes ``ln`` when it loads a table), and the
phrase lengths. Printed (Markdown):

* the Pearson correlation of ``ln`` column K with each predictor: ``ln`` of the first ``--base`` scores (Moses's
  order: φ(f|e), lex(f|e), φ(e|f), lex(e|f)), the target and source lengths |e| and |f|, and ``ln c(e,f)`` when the
  table has counts;
* R² of the least-squares fit of ``ln`` column K on all of them (with an intercept): over all pairs, and *within
  source phrases* (every variable minus its mean over the pairs of the same source, i.e. over the competing
  translation options of one source phrase, which is what a decoder chooses between);
* how often column K's best target for a source equals φ(e|f)'s best (sources with at least 2 options; ties count
  as agreement when the sets of best targets meet).

An R² near 1 means the log-linear model could already rebuild the column from features it has (up to the weights
MERT picks); the residual is what the column can add. Bad input: ``feature_overlap.py: FILE:LINE: …``, exit 2.
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from nmt.core.formats.phrase_table_reader import iter_phrase_table
from nmt.core.io import DataError

BASE_NAMES = ["ln φ(f|e)", "ln lex(f|e)", "ln φ(e|f)", "ln lex(e|f)"]


def read(path: str, column: int, base: int) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """(y [n], X [n, p], predictor names, source group id [n]) from the table."""
    ys, rows, groups = [], [], []
    group_of: dict[tuple[str, ...], int] = {}
    has_counts: bool | None = None
    for e in iter_phrase_table(path, keep_raw=False):
        if column >= len(e.scores) or base > len(e.scores):
            raise DataError(f"{path}:{e.line_no}: {len(e.scores)} scores; --column {column} and --base {base} "
                            f"need at least {max(column + 1, base)}")
        if has_counts is None:
            has_counts = len(e.counts) >= 3
        row = [math.log(v) for v in e.scores[:base]] + [float(len(e.tgt)), float(len(e.src))]
        if has_counts:
            if len(e.counts) < 3 or e.counts[2] <= 0:
                raise DataError(f"{path}:{e.line_no}: expected counts c(e) c(f) c(e,f) > 0 like the first line")
            row.append(math.log(e.counts[2]))
        ys.append(math.log(e.scores[column]))
        rows.append(row)
        groups.append(group_of.setdefault(e.src, len(group_of)))
    if not ys:
        raise DataError(f"{path}:1: no phrase pairs")
    names = (BASE_NAMES[:base] if base <= 4 else [f"ln score {i}" for i in range(base)]) + ["|e|", "|f|"]
    if has_counts:
        names.append("ln c(e,f)")
    return np.array(ys), np.array(rows), names, np.array(groups)


def r_squared(y: np.ndarray, X: np.ndarray) -> float:
    """R² of the least-squares fit of y on X plus an intercept (1 − residual SS / total SS)."""
    A = np.column_stack([X, np.ones(len(y))])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    total = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - A @ coef) ** 2).sum()) / total if total > 0 else float("nan")


def demean(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each row minus the mean of its group (columns independently)."""
    count = np.bincount(groups).astype(float)
    v = values.reshape(len(values), -1)
    means = np.stack([np.bincount(groups, weights=v[:, j]) / count for j in range(v.shape[1])], 1)
    return (v - means[groups]).reshape(values.shape)


def top1_agreement(y: np.ndarray, ref: np.ndarray, groups: np.ndarray) -> tuple[int, int]:
    """(sources whose best targets by y and by ref meet, sources with ≥ 2 options)."""
    order = np.argsort(groups, kind="stable")
    bounds = np.flatnonzero(np.diff(groups[order])) + 1
    agree = total = 0
    for idx in np.split(order, bounds):
        if len(idx) < 2:
            continue
        total += 1
        best_y = set(idx[y[idx] == y[idx].max()])
        best_r = set(idx[ref[idx] == ref[idx].max()])
        agree += bool(best_y & best_r)
    return agree, total


def report(y: np.ndarray, X: np.ndarray, names: list[str], groups: np.ndarray, label: str) -> str:
    lines = [f"{label}: {len(y):,} pairs, {int(groups.max()) + 1:,} source phrases", "",
             "| predictor | Pearson r with the column |", "|---|---:|"]
    for j, name in enumerate(names):
        x = X[:, j]
        r = float(np.corrcoef(y, x)[0, 1]) if x.std() > 0 and y.std() > 0 else float("nan")
        cell = name.replace("|", "\\|")  # a pipe inside a Markdown table cell
        lines.append(f"| {cell} | {r:.3f} |")
    yd, Xd = demean(y, groups), demean(X, groups)
    keep = np.bincount(groups)[groups] >= 2  # sources with one option have nothing to choose
    agree, total = top1_agreement(y, X[:, names.index("ln φ(e|f)")], groups) if "ln φ(e|f)" in names else (0, 0)
    lines += ["", f"- R² of the fit on all predictors: **{r_squared(y, X):.3f}** over all pairs, "
                  f"**{r_squared(yd[keep], Xd[keep]):.3f}** within source phrases ({int(keep.sum()):,} pairs of "
                  f"sources with ≥ 2 options)"]
    if total:
        lines.append(f"- best target per source the same as φ(e|f)'s: {agree:,} of {total:,} sources "
                     f"({100.0 * agree / total:.1f} %)")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="feature_overlap.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table")
    ap.add_argument("--column", type=int, required=True, help="0-based score column to explain")
    ap.add_argument("--base", type=int, default=4, help="the table's own scores used as predictors (the first N)")
    ap.add_argument("--name", default="", help="label of the column in the report")
    args = ap.parse_args(argv)
    if args.column < 0 or args.base < 0 or args.column < args.base:
        print("feature_overlap.py: --column must be at least --base (an appended column)", file=sys.stderr)
        return 2
    try:
        y, X, names, groups = read(args.table, args.column, args.base)
    except (DataError, OSError) as err:
        print(f"feature_overlap.py: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(report(y, X, names, groups, args.name or f"column {args.column} of {args.table}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

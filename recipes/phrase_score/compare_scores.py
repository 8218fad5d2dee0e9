"""How far one score column moved between two rescorings of the same phrase table (e.g. ``smt-rescore --amp bf16``
against fp32, or two builds of one model).

    compare_scores.py TABLE_A.gz TABLE_B.gz --column K [--threshold 0.1]

Both tables must list the same phrase pairs in the same order (the same input table rescored twice). Moses's scores
are probabilities; they are compared as natural logs (nats), as the log-linear model sees them. Printed (Markdown):

* the number of pairs and of source phrases;
* the mean and the largest |Δ ln| of column K, and the pairs moved by more than ``--threshold`` nats;
* the source phrases whose best target by column K differs between the tables (of the sources with at least 2
  options; ties count as the same best when the two sets of best targets meet): what could change a decoder's
  choice if the column were the only score.

Bad input (pairs that differ, a missing column, one table longer): ``compare_scores.py: FILE:LINE: …``, exit 2.
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys

import numpy as np

from nmt.core.formats.phrase_table_reader import iter_phrase_table
from nmt.core.io import DataError

from feature_overlap import top1_agreement  # noqa: E402  (the script's own folder is on sys.path)


def read_pair(path_a: str, path_b: str, column: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ln column K of A [n], of B [n], source group id [n]) of two tables listing the same pairs."""
    a, b, groups = [], [], []
    group_of: dict[tuple[str, ...], int] = {}
    missing = object()
    for ea, eb in itertools.zip_longest(iter_phrase_table(path_a, keep_raw=False),
                                        iter_phrase_table(path_b, keep_raw=False), fillvalue=missing):
        if ea is missing or eb is missing:
            longer, entry = (path_a, ea) if eb is missing else (path_b, eb)
            raise DataError(f"{longer}:{entry.line_no}: this table has more lines than the other")
        for path, e in ((path_a, ea), (path_b, eb)):
            if column >= len(e.scores):
                raise DataError(f"{path}:{e.line_no}: {len(e.scores)} scores; --column {column} needs "
                                f"at least {column + 1}")
            if e.scores[column] <= 0:
                raise DataError(f"{path}:{e.line_no}: score {column} is {e.scores[column]:g}, not a probability > 0")
        if ea.src != eb.src or ea.tgt != eb.tgt:
            raise DataError(f"{path_b}:{eb.line_no}: the pair differs from line {ea.line_no} of {path_a} "
                            f"(the tables must list the same pairs in the same order)")
        a.append(math.log(ea.scores[column]))
        b.append(math.log(eb.scores[column]))
        groups.append(group_of.setdefault(ea.src, len(group_of)))
    if not a:
        raise DataError(f"{path_a}:1: no phrase pairs")
    return np.array(a), np.array(b), np.array(groups)


def report(a: np.ndarray, b: np.ndarray, groups: np.ndarray, threshold: float, label: str) -> str:
    diff = np.abs(a - b)
    moved = int((diff > threshold).sum())
    same, total = top1_agreement(a, b, groups)
    lines = [f"{label}: {len(a):,} pairs, {int(groups.max()) + 1:,} source phrases", "",
             f"- |Δ ln p|: mean **{diff.mean():.4f}** nats, largest **{diff.max():.4f}**; "
             f"{moved:,} pairs ({100.0 * moved / len(a):.2f} %) moved by more than {threshold:g}"]
    if total:
        lines.append(f"- best target per source changed: **{total - same:,}** of {total:,} sources with ≥ 2 options "
                     f"({100.0 * (total - same) / total:.2f} %)")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="compare_scores.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table_a")
    ap.add_argument("table_b")
    ap.add_argument("--column", type=int, required=True, help="0-based score column to compare")
    ap.add_argument("--threshold", type=float, default=0.1, help="nats: count the pairs moved by more than this")
    ap.add_argument("--name", default="", help="label of the comparison in the report")
    args = ap.parse_args(argv)
    if args.column < 0 or not args.threshold >= 0:
        print("compare_scores.py: --column and --threshold must not be negative", file=sys.stderr)
        return 2
    try:
        a, b, groups = read_pair(args.table_a, args.table_b, args.column)
    except (DataError, OSError) as err:
        print(f"compare_scores.py: {err}", file=sys.stderr)
        return 2
    label = args.name or f"column {args.column}, {args.table_a} against {args.table_b}"
    sys.stdout.write(report(a, b, groups, args.threshold, label))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The MERT optimiser with 1 vs N worker processes on a real candidate pool, alternated, in the same run.

    .venv/bin/python benchmarks/mert_workers.py --refs WORK/smt/text/val.fr \\
        --nbest WORK/smt/tune.1/run1.best100.out WORK/smt/tune.1/run2.best100.out [--workers 2] [--reps 2]

Prints each run's wall time and BLEU, whether every run found the same weights, and the wall-time ratio
N workers / 1 worker per repetition (machines are shared: read the ratio, not the seconds).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from smt_features.tune.mert import MertOptions, mert
from smt_features.tune.pool import NBestPool


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refs", required=True, help="tokenized dev references, one line per sentence")
    ap.add_argument("--nbest", nargs="+", required=True, help="Moses n-best lists of that dev set")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--restarts", type=int, default=20)
    args = ap.parse_args()
    with open(args.refs, encoding="utf-8") as fh:
        pool = NBestPool(fh.read().splitlines(), ref_length="closest")
    for path in args.nbest:
        pool.add_nbest_file(path)
    arrays, names = pool.arrays(), list(pool.feature_names or [])
    init = np.full(len(names), 1.0 / len(names))
    print(f"pool: {len(pool)} candidates, {len(names)} features, {args.restarts} restarts")
    runs: dict[int, list[tuple[float, np.ndarray]]] = {1: [], args.workers: []}
    for rep in range(args.reps):
        for workers in (1, args.workers):
            t0 = time.perf_counter()
            res = mert(arrays, init, MertOptions(restarts=args.restarts, seed=11, workers=workers), feature_names=names)
            runs[workers].append((time.perf_counter() - t0, res.weights))
            print(f"rep {rep + 1}, {workers} worker(s): {runs[workers][-1][0]:.1f} s, BLEU {res.bleu:.4f}", flush=True)
    first = runs[1][0][1]
    print("same weights in every run:", all(np.array_equal(first, w) for r in runs.values() for _, w in r))
    for rep in range(args.reps):
        print(f"rep {rep + 1}: {args.workers} workers / 1 worker wall time = "
              f"{runs[args.workers][rep][0] / runs[1][rep][0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

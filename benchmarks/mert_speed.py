"""MERT's compiled line search against the numpy reference on a real candidate pool, alternated, same run.

    .venv/bin/python benchmarks/mert_speed.py --refs SYS/text/val.fr --nbest TUNE/run1.best100.out ... \\
        [--points 5] [--restarts 20] [--workers 2] [--reps 2] [--init-from TUNE/iterations.json]

(1) Line searches: from ``--points`` random points, one along every feature (the sort orders prepared
first), with the reference (``envelope.line_search``) and the kernel (``kernel.CompiledLineSearch``),
alternating point by point; CPU ms per line search and whether every result (γ, BLEU, interval) is the
same. (2) Whole MERT runs (``--restarts`` random starts, ``--workers`` processes) with ``kernel='python'``
and ``kernel='compiled'``, alternated ``--reps`` times: wall and CPU seconds (the workers' included) and
whether the weights are identical. (3) kbMIRA and PRO, ``impl='reference'`` and ``'fast'``, alternated
``--reps`` times in one process: CPU seconds and identical weights. The pool's start point: the weights of
the last iteration of ``--init-from`` (an smt-tune ``iterations.json``), else 1/D each. Machines are shared: read the ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np

from smt_features.model.weights import Weights
from smt_features.tune.blas import single_blas_thread
from smt_features.tune.envelope import line_search
from smt_features.tune.kbmira import KbMiraOptions, kbmira
from smt_features.tune.kernel import compiled_line_search
from smt_features.tune.mert import MertOptions, mert
from smt_features.tune.pool import NBestPool
from smt_features.tune.pro import ProOptions, pro


def cpu_seconds() -> float:
    """CPU seconds of this process and its waited-for children."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refs", required=True, help="tokenized dev references, one line per sentence")
    ap.add_argument("--nbest", nargs="+", required=True, help="Moses n-best lists of that dev set")
    ap.add_argument("--points", type=int, default=5)
    ap.add_argument("--restarts", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--init-from", default="", help="smt-tune iterations.json: start from its last weights")
    args = ap.parse_args()
    with open(args.refs, encoding="utf-8") as fh:
        pool = NBestPool(fh.read().splitlines())
    for path in args.nbest:
        pool.add_nbest_file(path)
    arrays, names = pool.arrays(), list(pool.feature_names or [])
    dim = len(names)
    init = np.full(dim, 1.0 / dim)
    if args.init_from:
        state = json.loads(open(args.init_from, encoding="utf-8").read())
        init = np.array(Weights(state["iterations"][-1]["weights"]).to_vector(pool.layout or []), dtype=np.float64)
    print(f"pool: {len(pool)} candidates of {arrays.num_sentences} sentences, {dim} features; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    fast = compiled_line_search(arrays, "compiled")
    for k in range(dim):  # both sides' sort orders, prepared before timing
        arrays.coordinate_order(k)
        fast.plan(k)
    rng = np.random.default_rng(0)
    spent = {"reference": 0.0, "compiled": 0.0}
    same, n = True, 0
    with single_blas_thread():
        for _ in range(args.points):
            a = arrays.features @ (init + 0.1 * rng.normal(size=dim))
            for k in range(dim):
                t = time.process_time()
                r1 = line_search(arrays, a, arrays.features[:, k], order=arrays.coordinate_order(k))
                spent["reference"] += time.process_time() - t
                t = time.process_time()
                r2 = fast.coordinate_search(a, k)
                spent["compiled"] += time.process_time() - t
                same &= (r1.gamma, r1.bleu, r1.interval) == (r2.gamma, r2.bleu, r2.interval)
                n += 1
    print(f"line searches: {n} per side; CPU ms each: reference {1e3 * spent['reference'] / n:.2f}, compiled "
          f"{1e3 * spent['compiled'] / n:.2f} (ratio {spent['compiled'] / spent['reference']:.3f}); "
          f"same results: {same}", flush=True)
    runs: dict[str, list[tuple[float, float, np.ndarray]]] = {"python": [], "compiled": []}
    for rep in range(args.reps):
        for kernel in ("python", "compiled"):
            t0, c0 = time.perf_counter(), cpu_seconds()
            res = mert(arrays, init, MertOptions(restarts=args.restarts, seed=11, workers=args.workers,
                                                 kernel=kernel), feature_names=names)
            runs[kernel].append((time.perf_counter() - t0, cpu_seconds() - c0, res.weights))
            w, c, _ = runs[kernel][-1]
            print(f"rep {rep + 1}, MERT kernel={kernel}: {w:.1f} s wall, {c:.1f} s CPU, {res.line_searches} line "
                  f"searches, BLEU {res.bleu:.4f} (load {os.getloadavg()[0]:.1f})", flush=True)
    first = runs["python"][0][2]
    print("same weights in every MERT run:", all(np.array_equal(first, r[2]) for v in runs.values() for r in v))
    for rep in range(args.reps):
        (wp, cp, _), (wc, cc, _) = runs["python"][rep], runs["compiled"][rep]
        print(f"rep {rep + 1}: compiled / reference: wall {wc / wp:.3f}, CPU {cc / cp:.3f}")
    for name, run in (("kbMIRA", lambda impl: kbmira(arrays, init, KbMiraOptions(seed=3, impl=impl))),
                      ("PRO", lambda impl: pro(arrays, init, ProOptions(seed=3, impl=impl)))):
        took: dict[str, list[float]] = {"reference": [], "fast": []}
        weights = []
        for _ in range(args.reps):
            for impl in ("reference", "fast"):
                t = time.process_time()
                weights.append(run(impl).weights)
                took[impl].append(time.process_time() - t)
        print(f"{name}: CPU s reference {' '.join(f'{x:.2f}' for x in took['reference'])}, fast "
              f"{' '.join(f'{x:.2f}' for x in took['fast'])}; same weights: "
              f"{all(np.array_equal(weights[0], w) for w in weights)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

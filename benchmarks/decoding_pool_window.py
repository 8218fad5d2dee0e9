"""DecodingPool.decode (a bounded window of 2-sentence chunks, nmt.core.pools.ordered_map) against the unbounded
``Pool.imap`` it replaced, alternated in one run on one forked pool: seconds per pass and the same n-best lists.

    .venv/bin/python benchmarks/decoding_pool_window.py --moses-ini TUNE/moses.tuned.ini --input SYS/text/val.en \\
        [--sentences 300] [--nbest 100] [--threads 2] [--reps 5]

The window bounds what an error or a reader that stops leaves the pool to finish (the pool is closed and joined,
never terminated: CPython gh-96995); this measures what it costs. Machines are shared: read the ratio.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--moses-ini", required=True)
    ap.add_argument("--input", required=True, help="tokenized source sentences (the decoder's input)")
    ap.add_argument("--sentences", type=int, default=300)
    ap.add_argument("--nbest", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    from smt_features.decode.corpus import CHUNKS_AHEAD_PER_WORKER, DecodingPool, _worker_decode
    from smt_features.decode.load import build_decoder
    from smt_features.model.moses_ini import read_moses_ini

    decoder = build_decoder(read_moses_ini(args.moses_ini))
    with open(args.input, encoding="utf-8") as fh:
        lines = [line.strip() for _, line in zip(range(args.sentences), fh)]

    def unbounded(pool: DecodingPool) -> list:  # the code before: every sentence handed to the pool at once
        items = ((i, line, args.nbest, False) for i, line in enumerate(lines))
        return list(pool._pool.imap(_worker_decode, items, chunksize=2))

    def windowed(pool: DecodingPool) -> list:
        return list(pool.decode(lines, nbest=args.nbest, chunksize=2))

    runs = {"Pool.imap (before)": unbounded, f"ordered_map, {CHUNKS_AHEAD_PER_WORKER} chunks/worker": windowed}
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    outputs = {}
    with DecodingPool(decoder, args.threads) as pool:
        unbounded(pool)  # warm-up: the workers' caches
        for _ in range(args.reps):
            for name, run in runs.items():
                t0 = time.perf_counter()
                results = run(pool)
                seconds[name].append(time.perf_counter() - t0)
                outputs[name] = [(r.best.text, [h.text for h in r.nbest]) for r in results]
    same = len({repr(v) for v in outputs.values()}) == 1
    print(f"{len(lines)} sentences, {args.nbest}-best, {args.threads} processes, {args.reps} alternated passes; "
          f"same output: {same}")
    means = {name: statistics.mean(ts) for name, ts in seconds.items()}
    for name, ts in seconds.items():
        print(f"{name}: {', '.join(f'{t:.2f}' for t in ts)} s; mean {means[name]:.2f} s, "
              f"{len(lines) / means[name]:.1f} sentences/s")
    before, after = means.values()
    print(f"ratio of means (after / before): {after / before:.3f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

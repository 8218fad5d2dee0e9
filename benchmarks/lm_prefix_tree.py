"""Neural-LM features of n-best lists: plain sentence scoring against prefix-tree scoring, same run.

    .venv/bin/python benchmarks/lm_prefix_tree.py --nbest LIST.nbest[.gz] ... --lm DIR ... \\
        [--limit 5000] [--reps 2] [--threads 2] [--tree-size 1024] [--max-run 1]

The distinct hypotheses of the lists (as smt-rerank scores them), scored by each LM with
``nmt.scoring.LMScorer`` (smt-rerank's batch size 256, max tokens 4000) plain and with ``prefix_tree``,
alternated ``--reps`` times: seconds, predicted tokens against prefix-tree nodes, the speed ratio and
the largest difference of a sentence's ln p. Machines are shared: read the ratios.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from nmt.core.formats.nbest import iter_nbest  # noqa: E402
from nmt.lm.data import encode_all  # noqa: E402
from nmt.lm.prefix_scoring import PrefixTree  # noqa: E402
from nmt.scoring import LMScorer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nbest", nargs="+", required=True)
    ap.add_argument("--lm", nargs="+", required=True, help="nmt-lm-train model folders")
    ap.add_argument("--limit", type=int, default=0, help="the first N distinct hypotheses only (0: all)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tree-size", type=int, default=1024)
    ap.add_argument("--max-run", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    hyps = list(dict.fromkeys(tuple(e.tokens) for path in args.nbest for e in iter_nbest(path)))
    if args.limit:
        hyps = hyps[:args.limit]
    sents = [list(h) for h in hyps]
    tokens = sum(len(h) + 1 for h in hyps)
    print(f"{len(hyps)} distinct hypotheses, {tokens} predicted tokens (words + </s>); load average "
          f"{os.getloadavg()[0]:.2f}; {args.threads} thread(s)")
    print("| LM | plain s | prefix tree s | ratio | tree nodes + ends | max abs diff of a sentence's ln p |")
    print("|---|---:|---:|---:|---:|---:|")
    for path in args.lm:
        plain = LMScorer.load(path, batch_size=256, max_tokens=4000)
        tree = LMScorer(plain.loaded, batch_size=256, max_tokens=4000, prefix_tree=True, tree_size=args.tree_size)
        ids = encode_all(plain.vocab, sents)
        nodes = 0
        for lo in range(0, len(ids), args.tree_size):
            t = PrefixTree.build(ids[lo:lo + args.tree_size], plain.loaded.start)
            nodes += len(t.parent) - 1 + sum(t.ends)
        times: dict[str, list[float]] = {"plain": [], "tree": []}
        for _ in range(args.reps):
            for name, scorer in (("plain", plain), ("tree", tree)):
                start = time.perf_counter()
                values = scorer.score_sentences(sents)
                times[name].append(time.perf_counter() - start)
                if name == "plain":
                    ref = np.array(values)
                else:
                    diff = float(np.abs(np.array(values) - ref).max())
        a, b = min(times["plain"]), min(times["tree"])
        print(f"| {os.path.basename(path.rstrip('/'))} | {a:.1f} | {b:.1f} | {a / b:.2f} | {nodes} | {diff:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

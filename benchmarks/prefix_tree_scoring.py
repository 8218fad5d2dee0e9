"""smt-rerank's neural features of n-best lists: plain scoring against prefix-tree scoring, same run.

    .venv/bin/python benchmarks/prefix_tree_scoring.py --nbest LIST.nbest[.gz] [--lm DIR ...] \\
        [--encdec DIR --src SRC.tok] [--sentences 100] [--reps 2] [--threads 2]

The distinct hypotheses of the list's first ``--sentences`` source sentences (per encoder–decoder: the
distinct (id, hypothesis) pairs), as smt-rerank scores them: each LM with ``nmt.scoring.LMScorer``
(batch size 256, max tokens 4000) plain and with ``prefix_tree``, each encoder–decoder with
``PairScorer.score_pairs`` in calls of 256 pairs (max tokens 4000) and with ``PairScorer.tree_log_probs``,
alternated ``--reps`` times: the best seconds of each, the predictions made (plain: every token and
``</s>``; tree: one per tree edge and sequence end), the speed ratio, and the largest difference of a
hypothesis's ln p. Machines are shared: read the ratios.
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
from nmt.models.prefix_tree import PrefixTree  # noqa: E402
from nmt.scoring import LMScorer, PairScorer  # noqa: E402


def timed(fn, reps: int) -> tuple[float, np.ndarray]:
    best, values = float("inf"), None
    for _ in range(reps):
        start = time.perf_counter()
        values = np.array(fn(), dtype=np.float64)
        best = min(best, time.perf_counter() - start)
    return best, values


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nbest", required=True)
    ap.add_argument("--lm", nargs="*", default=[], help="nmt-lm-train model folders")
    ap.add_argument("--encdec", nargs="*", default=[], help="nmt-train model folders (need --src)")
    ap.add_argument("--src", default="", help="tokenized source sentences, line i = n-best id i")
    ap.add_argument("--sentences", type=int, default=0, help="the first N source sentences only (0: all)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    entries = [e for e in iter_nbest(args.nbest) if not args.sentences or e.sent_id < args.sentences]
    hyps = [list(h) for h in dict.fromkeys(tuple(e.tokens) for e in entries)]
    pairs = list(dict.fromkeys((e.sent_id, tuple(e.tokens)) for e in entries))
    print(f"{len(entries)} n-best lines of {len({e.sent_id for e in entries})} sentences: {len(hyps)} distinct "
          f"hypotheses, {len(pairs)} distinct (id, hypothesis) pairs; load average {os.getloadavg()[0]:.2f}; "
          f"{args.threads} thread(s)")
    print("| model | plain s | prefix tree s | ratio | predictions plain / tree | max abs diff of ln p |")
    print("|---|---:|---:|---:|---:|---:|")
    for path in args.lm:
        plain = LMScorer.load(path, batch_size=256, max_tokens=4000)
        tree = LMScorer(plain.loaded, batch_size=256, max_tokens=4000, prefix_tree=True)
        ids = encode_all(plain.vocab, hyps)
        nodes = sum(PrefixTree.build(ids[lo:lo + tree.tree_size], plain.loaded.start).predictions()
                    for lo in range(0, len(ids), tree.tree_size))
        a, ref = timed(lambda: plain.score_sentences(hyps), args.reps)
        b, got = timed(lambda: tree.score_sentences(hyps), args.reps)
        print(f"| LM {os.path.basename(path.rstrip('/'))} | {a:.1f} | {b:.1f} | {a / b:.2f} | "
              f"{sum(len(h) + 1 for h in hyps)} / {nodes} | {np.abs(got - ref).max():.1e} |")
    if args.encdec:
        sources = [line.split() for line in open(args.src, encoding="utf-8").read().splitlines()]
        srcs = [sources[i] for i, _ in pairs]
        tgts = [list(h) for _, h in pairs]
        for path in args.encdec:
            scorer = PairScorer.load(path, max_tokens=4000)
            ids = [scorer.tgt_vocab.encode(t) for t in tgts]
            nodes = PrefixTree.build(ids, 0, roots=[i for i, _ in pairs]).predictions()

            def plain_pairs() -> list[float]:
                full = [k for k, t in enumerate(tgts) if t]
                out = [0.0] * len(tgts)
                for lo in range(0, len(full), 256):
                    chunk = full[lo:lo + 256]
                    for k, r in zip(chunk, scorer.score_pairs([srcs[k] for k in chunk], [tgts[k] for k in chunk])):
                        out[k] = r.log_prob
                empty = [k for k, t in enumerate(tgts) if not t]
                for k, v in zip(empty, scorer.empty_target_log_probs([srcs[k] for k in empty]) if empty else []):
                    out[k] = v
                return out

            a, ref = timed(plain_pairs, args.reps)
            b, got = timed(lambda: scorer.tree_log_probs(srcs, tgts), args.reps)
            print(f"| encoder–decoder {os.path.basename(path.rstrip('/'))} | {a:.1f} | {b:.1f} | {a / b:.2f} | "
                  f"{sum(len(t) + 1 for t in tgts)} / {nodes} | {np.abs(got - ref).max():.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

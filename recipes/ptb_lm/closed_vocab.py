#!/usr/bin/env python3
"""Give a corpus PTB's closed vocabulary: words seen fewer than ``--min-count`` times in the training
text become ``<unk>`` in the training, validation and test text (Mikolov's PTB preprocessing).

    closed_vocab.py --min-count 2 TRAIN VALID TEST --out-dir DIR

Writes ``DIR/train.txt``, ``valid.txt``, ``test.txt`` (atomically) and prints the vocabulary size
and the number of tokens replaced per file. Every model of the table then sees the same words and
no OOV: the neural LMs learn ``<unk>`` as an ordinary word, KenLM reads it as ``_unk_``.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from nmt.core.io import atomic_write, iter_lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("valid")
    parser.add_argument("test")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--min-count", type=int, default=2)
    args = parser.parse_args(argv)
    counts = Counter(w for line in iter_lines(args.train) for w in line.split())
    keep = {w for w, c in counts.items() if c >= args.min_count}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, path in (("train", args.train), ("valid", args.valid), ("test", args.test)):
        replaced = total = 0
        with atomic_write(out / f"{name}.txt") as fh:
            for line in iter_lines(path):
                words = line.split()
                total += len(words)
                mapped = [w if w in keep else "<unk>" for w in words]
                replaced += sum(1 for w, m in zip(words, mapped) if w != m)
                fh.write(" ".join(mapped) + "\n")
        print(f"{name}: {replaced:,} of {total:,} words -> <unk> ({path})")
    print(f"vocabulary: {len(keep):,} words seen >= {args.min_count} times in {args.train} (+ <unk>)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

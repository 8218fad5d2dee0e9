#!/usr/bin/env python
"""Data selection by bilingual cross-entropy difference (Moore & Lewis 2010; Axelrod et al. 2011).

Every pair (s, t) of the pool gets

    score = [H_in(s) − H_out(s)] + [H_in(t) − H_out(t)]

where H_in is the per-word cross-entropy (log10, words + </s>) under an n-gram LM of the
in-domain text (here newstest2012+2013, as Cho et al. 2014 used it) and H_out under an LM of a
random sample of the pool of the same number of sentences. The lowest-scoring pairs are kept
until ``--words`` words of the ``--count-side`` (whitespace tokens of the raw text) are reached;
they are written in pool order. ``--monolingual`` uses the source side only (Moore & Lewis).

Text seen by the LMs: lowercased, split into ``\\w+`` runs and single punctuation marks; words
seen fewer than ``--min-count`` times in the in-domain text become ``__oov__`` in both LMs and
in the scored pool (the common in-domain vocabulary of Moore & Lewis). LMs: modified Kneser–Ney
by the toolkit's ``smt_features.train.kenlm_build.estimate_arpa`` (lmplz, ``--discount_fallback``, the
in-domain text is small), queried with the ``kenlm`` module.

Outputs: OUT_SRC, OUT_TGT, WORK/select.json (settings, counts, threshold), WORK/lm.{in,out}.{src,tgt}.{txt,arpa,binary}.
A rerun with the same settings and outputs present does nothing.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
from collections import Counter
from itertools import islice
from pathlib import Path

import numpy as np

TOKEN = re.compile(r"\w+|[^\w\s]")
OOV = "__oov__"
_STATE: dict = {}


def normalize(line: str, vocab: set[str] | None = None) -> str:
    toks = TOKEN.findall(line.lower())
    if vocab is not None:
        toks = [t if t in vocab else OOV for t in toks]
    return " ".join(toks)


def _lines(path: str | Path):
    with open(path, encoding="utf-8", errors="replace", newline="\n") as fh:
        for line in fh:
            yield line.rstrip("\n")


def _pairs(src: str | Path, tgt: str | Path):
    return zip(_lines(src), _lines(tgt))


def _write(path: Path, lines) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line + "\n")


def _train_lm(text: Path, prefix: Path, order: int) -> Path:
    """ARPA (lmplz) then KenLM binary (loads quietly and fast in every worker); returns the binary."""
    from smt_features.train.kenlm_build import build_binary, estimate_arpa

    arpa = prefix.with_name(prefix.name + ".arpa")
    estimate_arpa(text, arpa, order=order, discount_fallback=True, memory="1G")
    return build_binary(arpa, prefix.with_name(prefix.name + ".binary"))


def _init_worker(arpas: dict[str, str], vocabs: dict[str, list[str]], sides: list[str]) -> None:
    import kenlm

    _STATE["lm"] = {k: kenlm.Model(v) for k, v in arpas.items()}
    _STATE["vocab"] = {k: set(v) for k, v in vocabs.items()}
    _STATE["sides"] = sides


def _score_chunk(chunk: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lm, vocab, sides = _STATE["lm"], _STATE["vocab"], _STATE["sides"]
    scores = np.empty(len(chunk), dtype=np.float64)
    n_src = np.empty(len(chunk), dtype=np.int64)
    n_tgt = np.empty(len(chunk), dtype=np.int64)
    for i, (s, t) in enumerate(chunk):
        n_src[i], n_tgt[i] = len(s.split()), len(t.split())
        if not n_src[i] or not n_tgt[i]:
            scores[i] = math.inf
            continue
        total = 0.0
        for side, text in (("src", s), ("tgt", t)):
            if side not in sides:
                continue
            norm = normalize(text, vocab[side])
            n = len(norm.split()) + 1
            total += (lm[f"out.{side}"].score(norm, bos=True, eos=True)
                      - lm[f"in.{side}"].score(norm, bos=True, eos=True)) / n
        scores[i] = total
    return scores, n_src, n_tgt


def _chunks(pairs, size: int):
    while chunk := list(islice(pairs, size)):
        yield chunk


def _reservoir(pairs, k: int, seed: int) -> tuple[list[tuple[str, str]], int]:
    rng = random.Random(seed)
    sample: list[tuple[str, str]] = []
    n = 0
    for n, pair in enumerate(pairs, 1):
        if len(sample) < k:
            sample.append(pair)
        else:
            j = rng.randrange(n)
            if j < k:
                sample[j] = pair
    return sample, n


def select(args: argparse.Namespace) -> dict:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    out_src, out_tgt = Path(args.out_src), Path(args.out_tgt)
    settings = {k: getattr(args, k) for k in ("pool_src", "pool_tgt", "in_src", "in_tgt", "words", "count_side",
                                              "order", "min_count", "seed", "monolingual")}
    record_path = work / "select.json"
    if record_path.is_file() and out_src.is_file() and out_tgt.is_file():
        old = json.loads(record_path.read_text(encoding="utf-8"))
        if old.get("settings") == settings:
            print(f"select_data: {record_path} has these settings and the outputs exist: nothing to do")
            return old
    t0 = time.time()
    sides = ["src"] if args.monolingual else ["src", "tgt"]
    in_pairs = list(_pairs(args.in_src, args.in_tgt))
    if not in_pairs:
        raise ValueError(f"{args.in_src}: no in-domain text")
    vocabs: dict[str, list[str]] = {}
    for side_i, side in enumerate(("src", "tgt")):
        counts = Counter(tok for pair in in_pairs for tok in normalize(pair[side_i]).split())
        vocabs[side] = sorted(w for w, c in counts.items() if c >= args.min_count)
    sample, pool_size = _reservoir(_pairs(args.pool_src, args.pool_tgt), len(in_pairs), args.seed)
    if pool_size == 0:
        raise ValueError(f"{args.pool_src}: empty pool")
    arpas: dict[str, str] = {}
    for name, pairs in (("in", in_pairs), ("out", sample)):
        for side_i, side in enumerate(("src", "tgt")):
            if side not in sides:
                continue
            vocab = set(vocabs[side])
            text = work / f"lm.{name}.{side}.txt"
            _write(text, (normalize(p[side_i], vocab) for p in pairs))
            arpas[f"{name}.{side}"] = str(_train_lm(text, work / f"lm.{name}.{side}", args.order))
    print(f"select_data: LMs on {len(in_pairs)} in-domain pairs and a sample of {len(sample)} of the "
          f"{pool_size:,} pool pairs ({time.time() - t0:.0f} s); scoring the pool", flush=True)

    scores = np.empty(pool_size, dtype=np.float64)
    counts = {"src": np.empty(pool_size, dtype=np.int64), "tgt": np.empty(pool_size, dtype=np.int64)}
    init = (arpas, vocabs, sides)
    pos = 0
    chunks = _chunks(_pairs(args.pool_src, args.pool_tgt), args.chunk)
    if args.processes > 1:
        import multiprocessing as mp

        pool = mp.get_context("spawn").Pool(args.processes, initializer=_init_worker, initargs=init)
        results = pool.imap(_score_chunk, chunks)
    else:
        pool = None
        _init_worker(*init)
        results = map(_score_chunk, chunks)
    last = time.time()
    try:
        for sc, ns, nt in results:
            end = pos + len(sc)
            scores[pos:end], counts["src"][pos:end], counts["tgt"][pos:end] = sc, ns, nt
            pos = end
            if time.time() - last > 60:
                last = time.time()
                print(f"select_data: scored {pos:,} / {pool_size:,} pairs", file=sys.stderr, flush=True)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    if pos != pool_size:
        raise ValueError(f"{args.pool_src} / {args.pool_tgt}: {pos} pairs scored, {pool_size} counted "
                         "(the two sides differ in length?)")

    size = counts["src"] + counts["tgt"] if args.count_side == "both" else counts[args.count_side]
    order = np.argsort(scores, kind="stable")
    order = order[np.isfinite(scores[order])]
    csum = np.cumsum(size[order])
    k = int(np.searchsorted(csum, args.words, side="right")) if args.words > 0 else len(order)
    keep = np.zeros(pool_size, dtype=bool)
    keep[order[:k]] = True
    threshold = float(scores[order[k - 1]]) if k else None

    from nmt.core.io import atomic_write

    selected = (p for i, p in enumerate(_pairs(args.pool_src, args.pool_tgt)) if keep[i])
    with atomic_write(out_src, compress=False) as fs, atomic_write(out_tgt, compress=False) as ft:
        for s, t in selected:
            fs.write(s + "\n")
            ft.write(t + "\n")
    record = {
        "settings": settings,
        "method": "bilingual cross-entropy difference (Axelrod et al. 2011)" if not args.monolingual
                  else "cross-entropy difference on the source side (Moore & Lewis 2010)",
        "pool_pairs": pool_size, "selected_pairs": int(k),
        "selected_words": {"src": int(counts["src"][keep].sum()), "tgt": int(counts["tgt"][keep].sum())},
        "pool_words": {"src": int(counts["src"].sum()), "tgt": int(counts["tgt"].sum())},
        "threshold": threshold, "vocab": {s: len(v) for s, v in vocabs.items()},
        "seconds": round(time.time() - t0, 1),
    }
    with atomic_write(record_path) as fh:
        fh.write(json.dumps(record, indent=2) + "\n")
    print(f"select_data: kept {k:,} of {pool_size:,} pairs, {record['selected_words']['src']:,} / "
          f"{record['selected_words']['tgt']:,} words src / tgt (threshold {threshold}); {record_path}")
    return record


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pool-src", required=True)
    p.add_argument("--pool-tgt", required=True)
    p.add_argument("--in-src", required=True, help="in-domain source text (raw)")
    p.add_argument("--in-tgt", required=True, help="in-domain target text (raw)")
    p.add_argument("--out-src", required=True)
    p.add_argument("--out-tgt", required=True)
    p.add_argument("--work", required=True, help="folder for the LMs and select.json")
    p.add_argument("--words", type=int, required=True, help="keep pairs up to this many words (0: all)")
    p.add_argument("--count-side", choices=("src", "tgt", "both"), default="src")
    p.add_argument("--order", type=int, default=4, help="n-gram order of the four LMs (Moore & Lewis: 4)")
    p.add_argument("--min-count", type=int, default=2, help="in-domain vocabulary: words seen this often")
    p.add_argument("--seed", type=int, default=1, help="seed of the out-of-domain sample")
    p.add_argument("--monolingual", action="store_true", help="source side only (Moore & Lewis)")
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--chunk", type=int, default=20000, help="pairs per scoring task")
    args = p.parse_args(argv)
    try:
        select(args)
    except (OSError, ValueError, RuntimeError) as err:
        print(f"select_data: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

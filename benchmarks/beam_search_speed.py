"""Time the beam search alone (model loaded, batches built), split into the model's time and the search's own.

The search is ``nmt.translation.search.beam_search`` (``nmt.search.beam_search`` in a checkout from before
the ground floor's rooms, issue 24; both are found).

For any checkout: run it with that checkout first on the path, from a folder that holds no ``nmt``
(``python -m`` or a cwd of this repository would put this checkout first)::

    cd /tmp && PYTHONPATH=OLD_CHECKOUT python REPO/benchmarks/beam_search_speed.py --model M --input test.tok.en
    cd /tmp && PYTHONPATH=REPO python REPO/benchmarks/beam_search_speed.py --model M --input test.tok.en

Prints sentences/s (wall), CPU seconds, and how much of the CPU went to the model (encoder and decoder
steps: ``encode``/``init_decoder``/``precompute_context``/``decode_step`` or ``start``/``step``) versus
the search's own work (top-k, bookkeeping), with the checkout's ``nmt`` path. Input: tokenized, one
sentence per line; batches of ``--batch-size`` length-sorted sentences as nmt-translate builds them.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the nmt-* commands (nmt/cli/__init__.py), before torch

import torch  # noqa: E402

import nmt  # noqa: E402
from nmt.data.batching import pad  # noqa: E402
from nmt.data.special import EOS  # noqa: E402
try:
    from nmt.translation.model_io import load_translation_model  # noqa: E402
    from nmt.translation.search import beam_search  # noqa: E402
except ImportError:  # a checkout from before the rooms
    from nmt.model_io import load_translation_model  # noqa: E402
    from nmt.search import beam_search  # noqa: E402

MODEL_METHODS = ("encode", "init_decoder", "precompute_context", "decode_step", "start", "step")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="model folder written by nmt-train")
    ap.add_argument("--input", required=True, help="tokenized source sentences, one per line")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--beam-size", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load_translation_model(args.model, which="auto")
    model, in_model, depth = loaded.model, [0.0], [0]
    for name in MODEL_METHODS:  # outermost calls only: start() calling encode() is counted once
        if hasattr(model, name):
            setattr(model, name, _timed(getattr(model, name), in_model, depth))
    with open(args.input, encoding="utf-8") as fh:
        ids = [loaded.src_vocab.encode(line.split()) for line in fh]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    batches = [pad([ids[i] for i in order[s:s + args.batch_size]], suffix=EOS)
               for s in range(0, len(order), args.batch_size)]
    wall, cpu = time.perf_counter(), time.process_time()
    words = sum(len(hyps[0].tokens) for src in batches for hyps in beam_search(model, src, beam_size=args.beam_size))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = len(ids)
    print(f"{nmt.__path__[0]}: threads {args.threads}, batch {args.batch_size}, beam {args.beam_size}: {n} sentences "
          f"(mean 1-best {words / n:.2f} tokens) in {wall:.2f} s wall = {n / wall:.1f} sentences/s; CPU {cpu:.2f} s "
          f"= model {in_model[0]:.2f} + search {cpu - in_model[0]:.2f}")


def _timed(fn, total: list[float], depth: list[int]):
    def wrapper(*args, **kwargs):
        depth[0] += 1
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                total[0] += time.process_time() - start
    return wrapper


if __name__ == "__main__":
    main()

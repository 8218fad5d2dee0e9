"""Decoding speed of the phrase-based stack decoder, against a reference loop measured in the same run.

Variants (all at the same stack size, table limit and distortion limit):

* ``plain``   — the search loop without bound pruning: every option of every
  reachable span is scored in context, as Moses's normal search does
  (the same-run reference);
* ``bounded`` — the default: options whose upper-bound score cannot reach
  the target stack are skipped (exact: same translations and scores);
* ``early``   — ``bounded`` plus Moses's early discarding at threshold 1
  (a heuristic, off by default in Moses and here).

Each runs the compiled search core (``smt_features/decode/fast_search.py``, built by
``third_party/build_search.sh``) unless its name ends in ``-py`` (the Python
search loop, e.g. ``plain-py``, the pure-Python reference); both give identical
results, which the benchmark checks (``same output``).

For each variant: sentences/s (wall clock and CPU, model loading
excluded), the mean model score (a search-quality check: ``plain`` and
``bounded`` must agree), and optionally BLEU/chrF of the detokenized output
against raw references. Then ``--threads`` processes for the chosen
variants, and a cProfile summary of the hot functions. Moses's published
figures for the same setting (TARGETS.md: 23 sentences/s on 1 thread, 47 on
2, distance-based reordering; 15 and 31 with msd-bidirectional-fe lexicalized
reordering, used when the moses.ini has it; stack 200, table limit 20,
distortion limit 6, 1,000 sentences) are printed for orientation; they were measured on a
different run, so the ratio to them is indicative only.

    .venv/bin/python benchmarks/decoder_speed.py --moses-ini /tmp/m30k_dec/moses.ini \\
        --input /tmp/m30k/test_2016_flickr.tok.en --sentences 200 \\
        --references /tmp/m30k/test_2016_flickr.fr --json /tmp/m30k_dec/speed.json
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import resource
import statistics
import sys
import time

# TARGETS.md, 1,000 test_2016_flickr sentences at the same settings: distance reordering only, and with
# msd-bidirectional-fe lexicalized reordering (picked when the moses.ini has a LexicalReordering feature)
MOSES_SENT_PER_S_BY_MODEL = {"distance": {1: 23.0, 2: 47.0}, "lexicalized": {1: 15.0, 2: 31.0}}
MOSES_LOAD = "4.6 s, ~0.8 GB"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_variant(decoder, lines, options, threads=1, fast=None):
    from smt_features.decode.corpus import decode_corpus

    decoder.options = options
    decoder.compiled = fast  # None = the Python search loop
    decoder.set_weights(decoder.weights)  # clear option caches (their order depends on the options)
    t0, c0 = time.perf_counter(), time.process_time()
    results = list(decode_corpus(decoder, lines, threads=threads))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return results, wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--moses-ini", "-f", required=True, help="moses.ini")
    ap.add_argument("--input", required=True, help="tokenized source text")
    ap.add_argument("--sentences", type=int, default=200, help="first N sentences of --input")
    ap.add_argument("--references", default="", help="raw (detokenized) references for BLEU, line-aligned")
    ap.add_argument("--target-lang", default="fr", help="language of the detokenizer")
    ap.add_argument("--variants", nargs="+", default=["plain-py", "bounded-py", "plain", "bounded", "early"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--threads-variants", nargs="+", default=["bounded-py", "bounded", "early"],
                    help="variants also timed with each --threads value > 1")
    ap.add_argument("--profile-sentences", type=int, default=20, help="0 = no profile")
    ap.add_argument("--stack", type=int, default=200)
    ap.add_argument("--table-limit", type=int, default=20)
    ap.add_argument("--distortion-limit", type=int, default=6)
    ap.add_argument("--json", default="", help="also write the figures here")
    args = ap.parse_args()

    from smt_features.decode.load import build_decoder
    from smt_features.decode.options import SearchOptions
    from smt_features.model.moses_ini import read_moses_ini

    t0 = time.perf_counter()
    ini = read_moses_ini(args.moses_ini)
    decoder = build_decoder(ini, table_limit=args.table_limit)
    load_s = time.perf_counter() - t0
    load_rss = rss_mb()
    reordering = "lexicalized" if any(f.type == "LexicalReordering" for f in ini.features) else "distance"
    moses_speed = MOSES_SENT_PER_S_BY_MODEL[reordering]
    with open(args.input, encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for _, line in zip(range(args.sentences), fh)]
    print(f"model: {args.moses_ini}; {len(decoder.table)} phrase pairs; loaded in {load_s:.1f} s, "
          f"max RSS {load_rss:.0f} MB (Moses: {MOSES_LOAD})")
    print(f"{len(lines)} sentences, stack {args.stack}, table limit {args.table_limit}, "
          f"distortion limit {args.distortion_limit}; Moses's figures for the {reordering} model: "
          f"{moses_speed[1]:g} / {moses_speed[2]:g} sent/s on 1 / 2 threads")

    fast = decoder.compiled
    if fast is None and any(not v.endswith("-py") for v in args.variants):
        sys.exit("the compiled search core is not available (bash third_party/build_search.sh); "
                 "run only -py variants")

    def options(variant: str) -> SearchOptions:
        base = variant.removesuffix("-py")
        return SearchOptions(stack_size=args.stack, distortion_limit=args.distortion_limit,
                             table_limit=args.table_limit, bound_pruning=base != "plain",
                             early_discarding_threshold=1.0 if base == "early" else 0.0)

    def core(variant: str):
        return None if variant.endswith("-py") else fast

    refs = None
    if args.references:
        with open(args.references, encoding="utf-8") as fh:
            refs = [line.rstrip("\n") for _, line in zip(range(len(lines)), fh)]
    record: dict = {"config": args.moses_ini, "sentences": len(lines), "load_seconds": round(load_s, 2),
                    "load_max_rss_mb": round(load_rss), "stack": args.stack, "table_limit": args.table_limit,
                    "distortion_limit": args.distortion_limit, "variants": {}}
    outputs: dict[str, list] = {}
    print(f"\n{'variant':<9} {'proc':>4} {'sent/s':>7} {'sent/cpu-s':>10} {'mean score':>11} "
          f"{'vs plain':>8} {'vs Moses':>8} {'BLEU':>6} {'chrF':>6}")
    base_speed = None
    for variant in args.variants:
        results, wall, cpu = run_variant(decoder, lines, options(variant), fast=core(variant))
        outputs[variant] = results
        speed = len(lines) / wall
        if variant == "plain-py" or base_speed is None:
            base_speed = base_speed or speed
        mean = statistics.fmean(r.best.score for r in results)
        bleu = chrf = None
        if refs is not None:
            from nmt.data.tokenize import MosesTokenizer
            from nmt.translation.evaluate import evaluate

            detok = MosesTokenizer(args.target_lang)
            ev = evaluate([detok.detokenize(r.best.tokens) for r in results], refs)
            bleu, chrf = ev.bleu, ev.chrf
            record.setdefault("bleu_signature", ev.bleu_signature)
        record["variants"][variant] = {"threads": {1: {"sent_per_s": round(speed, 3),
                                                       "sent_per_cpu_s": round(len(lines) / cpu, 3)}},
                                       "mean_model_score": mean, "bleu": bleu, "chrf": chrf,
                                       "lm_misses": sum(r.stats.get("lm_misses", 0) for r in results),
                                       "created": sum(r.stats.get("created", 0) for r in results)}
        print(f"{variant:<9} {1:>4} {speed:>7.2f} {len(lines) / cpu:>10.2f} {mean:>11.4f} "
              f"{speed / base_speed:>8.2f} {speed / moses_speed[1]:>8.3f} "
              f"{'' if bleu is None else f'{bleu:6.2f}'} {'' if chrf is None else f'{chrf:6.2f}'}", flush=True)
    for a_name, b_name in (("plain-py", "bounded-py"), ("plain", "bounded"), ("bounded-py", "bounded"),
                           ("plain-py", "plain")):
        if a_name in outputs and b_name in outputs:
            diff = sum(1 for a, b in zip(outputs[a_name], outputs[b_name])
                       if a.best.tokens != b.best.tokens or abs(a.best.score - b.best.score) > 1e-9)
            print(f"{a_name} vs {b_name}: {diff} sentence(s) with a different best translation or score (expected 0)")
            record[f"{a_name}_vs_{b_name}_differences"] = diff
    for variant in args.threads_variants:
        for threads in args.threads:
            if threads <= 1 or variant not in args.variants:
                continue
            results, wall, _ = run_variant(decoder, lines, options(variant), threads=threads, fast=core(variant))
            speed = len(lines) / wall
            same = all(a.best.tokens == b.best.tokens for a, b in zip(results, outputs[variant]))
            record["variants"][variant]["threads"][threads] = {"sent_per_s": round(speed, 3), "same_output": same}
            print(f"{variant:<9} {threads:>4} {speed:>7.2f} {'':>10} {'':>11} {speed / base_speed:>8.2f} "
                  f"{speed / moses_speed.get(threads, moses_speed[1]):>8.3f}  (same output: {same})",
                  flush=True)
    if args.profile_sentences:
        decoder.compiled = fast
        decoder.options = options("bounded")
        decoder.set_weights(decoder.weights)
        prof = cProfile.Profile()
        prof.enable()
        for line in lines[:args.profile_sentences]:
            decoder.decode(line.split())
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
        text = buf.getvalue()
        start = text.find("   ncalls")
        print(f"\ncProfile, variant bounded ({'compiled' if fast else 'python'} search), {args.profile_sentences} "
              "sentences (top functions by own time):")
        print(text[start:].rstrip())
        record["profile_top"] = text[start:].strip().splitlines()[:14]
    record["max_rss_mb"] = round(rss_mb())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Phrase-table rescoring throughput against this machine's roofline, measured in the same run.

    .venv/bin/python benchmarks/rescore_throughput.py --model MODEL_DIR \\
        --table /tmp/smt_phrases/final/phrase-table.gz --lines 20000 [--rss-model TINY_MODEL_DIR]
    .venv/bin/python benchmarks/rescore_throughput.py --peak-only [--model MODEL_DIR]   # the roofline alone

What it prints:

* **roofline**: FLOPs per pair counted from the model config (forward only:
  encoder recurrence over the source + EOS, summary, decoder start, context
  terms; per target token incl. EOS the decoder input projection and
  recurrence, the deep output with maxout, ``G_r`` and the output layer over
  the whole target vocabulary), averaged over the pairs of the table, divided
  into the machine's **peak** fp32 matrix-multiply rate with ``--threads``
  threads: the best ``torch.mm`` rate (into a preallocated output, median of 3)
  over several large shapes (``--peak-shapes``, default 1024³, 2048³ and
  4096 × 1024 × 4096) and the output-layer shape ``[max_tokens × R] · [R × V]``,
  measured before, between and after the runs, the best of all taken (other
  jobs may share the cores). A roofline is what the machine can do, not what
  the tool's own shapes get: a skinny output layer (small R) runs well below
  peak, and a "roofline" taken at that shape can be beaten (it scored 104 % on
  one machine). The output-layer rate is printed beside the peak, as a share of it.
  Two counts are shown: the encoder
  charged to every pair (the definition of the roofline) and the encoder
  charged once per distinct source per window (the work the tool actually
  does). The rate at the shape the tool really uses (blocks of
  ``softmax_block`` rows, which stay in cache) is printed too.
* **measured**: pairs/s of whole ``smt-rescore`` runs (read, parse, score,
  format, gzip, write, and loading the model) for each ``processes × threads`` layout
  (same total threads), and of the scoring engine alone; ratio = measured ÷
  roofline.
* **where the engine's time goes** (``--profile``): the engine once more under ``torch.profiler``, the
  self CPU time of the matrix products (``addmm``, ``mm``, ``bmm``) against everything else
  (element-wise gates, exp/log of the softmax, gathers, copies), and the ratio the engine could reach
  if every matrix product ran at the peak rate while the rest took what it takes now:
  ``ratio / (ratio + share of the rest)`` — the ceiling the rest leaves.
* **memory**: peak RSS (``VmHWM``) of a fresh process running ``smt-rescore`` on the first
  ``--lines`` lines and on that table repeated ``--rss-scale`` times (default
  10×): memory is bounded by the window, not the table.

Keep it short on a shared 2-core machine: ``--lines 20000`` takes about a
minute per layout with a ``cpu-small`` model; use a tiny model for the RSS runs.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as smt-rescore does (before torch is imported)

import torch  # noqa: E402

from nmt.translation.model_io import load_translation_model  # noqa: E402
from nmt.translation.rescoring_engine import RescoringEngine, flops_per_pair  # noqa: E402
from nmt.core.formats.phrase_table_reader import iter_phrase_table  # noqa: E402
from nmt.core.paths import resolve_checkpoint  # noqa: E402
from smt_features.neural.rescore import rescore_table  # noqa: E402
from smt_features.neural.rescore_config import RescoreConfig, make_plan  # noqa: E402
from smt_features.neural.table_windows import TableLines, read_windows  # noqa: E402


def head_table(src: str, dst: Path, lines: int, repeat: int = 1) -> int:
    """The first ``lines`` lines of ``src`` (repeated ``repeat`` times) into ``dst`` (gzip level 1)."""
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rb") as fh:
        head = []
        for raw in fh:
            head.append(raw if raw.endswith(b"\n") else raw + b"\n")
            if len(head) >= lines:
                break
    data = b"".join(head)
    with gzip.open(dst, "wb", compresslevel=1) as out:
        for _ in range(repeat):
            out.write(data)
    return len(head) * repeat


def mm_rate(m: int, k: int, n: int, threads: int, seconds: float = 0.7) -> float:
    """Median FLOP/s of ``torch.mm`` [m × k] · [k × n] into a preallocated output."""
    torch.set_num_threads(threads)
    a, b = torch.randn(m, k), torch.randn(k, n)
    out = torch.empty(m, n)
    torch.mm(a, b, out=out)
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        it = 0
        while time.perf_counter() - start < seconds:
            torch.mm(a, b, out=out)
            it += 1
        rates.append(2.0 * m * k * n * it / (time.perf_counter() - start))
    return statistics.median(rates)


DEFAULT_PEAK_SHAPES = "1024x1024x1024,2048x2048x2048,4096x1024x4096"


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """``"MxKxN,..."`` → [(m, k, n), ...] (``torch.mm`` of [m × k] · [k × n])."""
    shapes = []
    for item in text.split(","):
        if item.strip():
            dims = tuple(int(d) for d in item.lower().split("x"))
            if len(dims) != 3 or min(dims) < 1:
                raise SystemExit(f"rescore_throughput: bad --peak-shapes item {item!r} (want MxKxN)")
            shapes.append(dims)
    return shapes


def shape_name(shape: tuple[int, int, int]) -> str:
    m, k, n = shape
    return f"[{m} x {k}] x [{k} x {n}]"


class GemmPeak:
    """Best fp32 ``torch.mm`` rate per shape over repeated measurements; the peak is the best of all."""

    def __init__(self, shapes: list[tuple[int, int, int]], threads: int, seconds: float = 0.5):
        self.shapes, self.threads, self.seconds = shapes, threads, seconds
        self.rates: dict[tuple[int, int, int], list[float]] = {s: [] for s in shapes}

    def measure(self) -> None:
        for shape in self.shapes:
            self.rates[shape].append(mm_rate(*shape, self.threads, self.seconds))

    def best(self, shape: tuple[int, int, int]) -> float:
        return max(self.rates[shape])

    @property
    def peak(self) -> tuple[float, tuple[int, int, int]]:
        shape = max(self.shapes, key=self.best)
        return self.best(shape), shape

    def report(self, label: dict | None = None) -> str:
        rate, shape = self.peak
        lines = [f"fp32 GEMM rates, {self.threads} thread(s), best of {len(next(iter(self.rates.values())))} "
                 f"measurement(s), GFLOP/s:"]
        for s in self.shapes:
            tag = (label or {}).get(s, "")
            lines.append(f"  {shape_name(s):34} {self.best(s) / 1e9:8.1f}  ({self.best(s) / rate:4.0%} of peak)"
                         f"{'  ' + tag if tag else ''}")
        lines.append(f"peak: {rate / 1e9:.1f} GFLOP/s at {shape_name(shape)}")
        return "\n".join(lines)

    def figures(self) -> dict:
        rate, shape = self.peak
        return {"peak_gflops": rate / 1e9, "peak_shape": list(shape),
                "gemm_gflops": {"x".join(map(str, s)): self.best(s) / 1e9 for s in self.shapes},
                "gemm_gflops_all": {"x".join(map(str, s)): [r / 1e9 for r in v] for s, v in self.rates.items()}}


def peak_rss_of_run(table: Path, model: str, out: Path, args) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of a fresh process rescoring ``table``.

    The child reports its own ``VmHWM`` (/proc/self/status): the high-water
    mark of its address space after ``exec``. ``ru_maxrss`` would not do: the
    kernel carries the forked copy of this (large) benchmark process across
    ``exec`` into it.
    """
    code = ("import re; from smt_features.neural.rescore import rescore_table; "
            "from smt_features.neural.rescore_config import RescoreConfig; "
            f"rescore_table(RescoreConfig(table={str(table)!r}, model={model!r}, output={str(out)!r}, "
            f"threads={args.threads}, window={args.window}, chunk_lines={args.window * 5}, "
            f"max_tokens={args.max_tokens}, progress=False)); "
            "print('VmHWM', re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1))")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"RSS run on {table} failed: {proc.stderr[-2000:]}")
    kib = int(proc.stdout.split("VmHWM")[-1].split()[0])
    return kib / 1024.0, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (required unless --peak-only)")
    ap.add_argument("--table", default=None, help="phrase table (required unless --peak-only)")
    ap.add_argument("--lines", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=2, help="total threads (the roofline's too)")
    ap.add_argument("--layouts", default="1x2,2x1", help="processes x threads-per-process, comma-separated")
    ap.add_argument("--max-tokens", type=int, default=2000)
    ap.add_argument("--window", type=int, default=5000)
    ap.add_argument("--softmax-block", type=int, default=64)
    ap.add_argument("--rss-model", default=None, help="model for the RSS runs (default --model; a tiny one is "
                                                      "faster and has the same vocabulary-sized buffers)")
    ap.add_argument("--rss-scale", type=int, default=10)
    ap.add_argument("--skip-rss", action="store_true")
    ap.add_argument("--profile", action="store_true",
                    help="also profile the engine: matrix products against the rest, and the ceiling the rest leaves")
    ap.add_argument("--json", default=None, help="also write the figures here")
    ap.add_argument("--peak-shapes", default=DEFAULT_PEAK_SHAPES,
                    help=f"MxKxN,... large fp32 GEMMs for the machine's peak (default {DEFAULT_PEAK_SHAPES}); "
                         "the output-layer shape is always added when a model is given")
    ap.add_argument("--peak-seconds", type=float, default=0.5, help="seconds per timed repeat of each GEMM shape")
    ap.add_argument("--peak-only", action="store_true",
                    help="only measure and print the GEMM peak (the roofline's rate); --model optional "
                         "(adds its output-layer shape), no table needed")
    args = ap.parse_args(argv)
    shapes = parse_shapes(args.peak_shapes)
    if args.peak_only:
        return peak_only(args, shapes)
    if not args.model or not args.table:
        ap.error("--model and --table are required (or use --peak-only)")

    tmp = Path(tempfile.mkdtemp(prefix="rescore_bench."))
    head = tmp / "head.gz"
    n = head_table(args.table, head, args.lines)
    loaded = load_translation_model(resolve_checkpoint(args.model, "auto"))
    cfg, V = loaded.model.cfg, len(loaded.tgt_vocab)
    src_words = tgt_words = 0
    for e in iter_phrase_table(head):
        src_words += len(e.src)
        tgt_words += len(e.tgt)
    src_len, tgt_len = src_words / n, tgt_words / n
    fig: dict = {"lines": n, "model": str(loaded.path), "config": cfg.__dict__, "tgt_vocab": V,
                 "avg_src_words": src_len, "avg_tgt_words": tgt_len, "threads": args.threads}
    print(f"table: first {n} lines of {args.table}; avg words src {src_len:.2f}, tgt {tgt_len:.2f} "
          f"(+ EOS each); model {loaded.path} (E={cfg.emb_dim} H={cfg.hidden_dim} M={cfg.maxout_units}x"
          f"{cfg.maxout_pool} R={cfg.output_rank} V={V}, cell={cfg.cell})")
    print(f"load average now: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")

    # -- roofline: the machine's peak GEMM rate ------------------------------------------------------------
    out_shape = (args.max_tokens, cfg.output_rank, V)
    block_shape = (args.softmax_block, cfg.output_rank + 1, V)
    gemm = GemmPeak(list(dict.fromkeys(shapes + [out_shape])), args.threads, args.peak_seconds)
    block_rates: list[float] = []

    def measure_roof() -> None:  # measured between the runs too: the roofline takes the best (a stricter ratio)
        gemm.measure()
        block_rates.append(mm_rate(*block_shape, args.threads))

    measure_roof()
    fpp = flops_per_pair(cfg, V, src_len, tgt_len, encoder_per_pair=True)
    softmax_share = (tgt_len + 1) * 2 * cfg.output_rank * V / fpp
    print(f"FLOPs per pair (encoder per pair): {fpp / 1e6:.2f} M ({softmax_share:.0%} in the output layer)")

    # -- the engine alone (windows parsed beforehand) ---------------------------------------------------------
    torch.set_num_threads(args.threads)
    engine = RescoringEngine(loaded.model, loaded.src_vocab, loaded.tgt_vocab, max_tokens=args.max_tokens,
                             softmax_block=args.softmax_block)
    plan = make_plan(n, args.window, args.window, (0, 1))
    windows = list(read_windows(TableLines(str(head), False), plan, list(range(plan.end_window)), False))
    engine.score(windows[0].srcs[:64], windows[0].tgts[:64])  # warm-up
    start = time.perf_counter()
    sources = 0
    for w in windows:
        sources += engine.score(w.srcs, w.tgts).num_sources
    engine_s = time.perf_counter() - start
    pps_src = n / sources
    fpp_shared = flops_per_pair(cfg, V, src_len, tgt_len, encoder_per_pair=False, pairs_per_source=pps_src)
    rows = [("engine only (1 process)", args.threads, n / engine_s)]
    if args.profile:
        fig["profile"] = profile_engine(engine, windows)
    del engine, windows
    measure_roof()

    # -- whole runs ------------------------------------------------------------------------------------------
    for layout in args.layouts.split(","):
        procs, threads = (int(x) for x in layout.split("x"))
        out = tmp / f"out.{layout}.gz"
        start = time.perf_counter()
        rescore_table(RescoreConfig(table=str(head), model=args.model, output=str(out), threads=procs * threads,
                                    processes=procs, window=args.window, chunk_lines=args.window,
                                    max_tokens=args.max_tokens, softmax_block=args.softmax_block, progress=False))
        rows.append((f"smt-rescore {procs} process(es) x {threads} thread(s)", procs * threads,
                     n / (time.perf_counter() - start)))
        measure_roof()
    rate, _ = gemm.peak
    rate_out, rate_block = gemm.best(out_shape), max(block_rates)
    print(gemm.report({out_shape: "<- output layer"}))
    print(f"the tool's block {shape_name(block_shape)}: {rate_block / 1e9:.1f} GFLOP/s ({rate_block / rate:.0%} of peak)")
    print(f"roofline: {rate / fpp:.0f} pairs/s (peak {rate / 1e9:.1f} GFLOP/s; at the output-layer rate it would "
          f"be {rate_out / fpp:.0f})")
    fig.update(gemm.figures(), mm_gflops=rate_out / 1e9, mm_gflops_all=[r / 1e9 for r in gemm.rates[out_shape]],
               mm_gflops_block=rate_block / 1e9, flops_per_pair=fpp, roofline_pairs_per_s=rate / fpp)
    print(f"distinct sources per window: {sources} for {n} pairs ({pps_src:.2f} pairs per source); FLOPs per pair "
          f"with each source encoded once: {fpp_shared / 1e6:.2f} M -> roofline {rate / fpp_shared:.0f} pairs/s")
    print()
    print("| run | pairs/s | roofline pairs/s | ratio | ratio (encoder once per source) |")
    print("|---|---:|---:|---:|---:|")
    fig["runs"] = []
    for name, _, pps in rows:
        print(f"| {name} | {pps:.0f} | {rate / fpp:.0f} | {pps / (rate / fpp):.0%} | "
              f"{pps / (rate / fpp_shared):.0%} |")
        fig["runs"].append({"run": name, "pairs_per_s": pps, "ratio": pps / (rate / fpp),
                            "ratio_shared_encoder": pps / (rate / fpp_shared)})
    fig.update(flops_per_pair_shared=fpp_shared, pairs_per_source=pps_src)
    if args.profile:
        prof = fig["profile"]
        ratio = n / engine_s / (rate / fpp)
        rest = 1.0 - prof["gemm_share"]
        prof["ceiling_ratio"] = ratio / (ratio + rest)
        print()
        print(f"engine profile (self CPU time, torch.profiler): matrix products {prof['gemm_share']:.0%} "
              f"({', '.join(f'{k} {v:.0%}' for k, v in prof['gemm_ops'].items())}), the rest {rest:.0%} "
              f"(largest: {', '.join(f'{k} {v:.0%}' for k, v in prof['top_rest'].items())}); with every matrix "
              f"product at the peak rate and the rest as now the engine would reach {prof['ceiling_ratio']:.0%} "
              f"of the roofline (now {ratio:.0%})")

    # -- memory -------------------------------------------------------------------------------------------------
    if not args.skip_rss:
        rss_model = args.rss_model or args.model
        big = tmp / "big.gz"
        n_big = head_table(args.table, big, args.lines, repeat=args.rss_scale)
        small_rss, small_s = peak_rss_of_run(head, rss_model, tmp / "rss_small.gz", args)
        big_rss, big_s = peak_rss_of_run(big, rss_model, tmp / "rss_big.gz", args)
        print()
        print(f"peak RSS (fresh process, model {rss_model}, window {args.window}): {n} lines {small_rss:.0f} MiB "
              f"({small_s:.0f} s); {n_big} lines {big_rss:.0f} MiB ({big_s:.0f} s); ratio {big_rss / small_rss:.2f}")
        fig.update(rss_mib_small=small_rss, rss_mib_big=big_rss, rss_lines_big=n_big)
    if args.json:
        Path(args.json).write_text(json.dumps(fig, indent=1, default=str), encoding="utf-8")
    for p in sorted(tmp.glob("*"), reverse=True):
        p.unlink()
    tmp.rmdir()
    return 0


GEMM_OPS = ("aten::addmm", "aten::mm", "aten::bmm")


def profile_engine(engine: RescoringEngine, windows: list) -> dict:
    """Self CPU time shares of the engine's ops over ``windows`` (one more scoring pass, under the profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for w in windows:
            engine.score(w.srcs, w.tgts)
    self_us = {e.key: e.self_cpu_time_total for e in prof.key_averages()}
    total = sum(self_us.values())
    gemm = {k: self_us.get(k, 0.0) / total for k in GEMM_OPS if self_us.get(k)}
    rest = sorted(((k, v / total) for k, v in self_us.items() if k not in GEMM_OPS), key=lambda kv: -kv[1])
    return {"gemm_share": sum(gemm.values()), "gemm_ops": gemm, "top_rest": dict(rest[:5]),
            "profiled_cpu_s": total / 1e6}


def peak_only(args, shapes: list[tuple[int, int, int]]) -> int:
    """``--peak-only``: the GEMM peak alone (plus the output-layer shape of ``--model`` if given)."""
    label: dict = {}
    if args.model:
        loaded = load_translation_model(resolve_checkpoint(args.model, "auto"))
        out_shape = (args.max_tokens, loaded.model.cfg.output_rank, len(loaded.tgt_vocab))
        shapes = list(dict.fromkeys(shapes + [out_shape]))
        label[out_shape] = "<- output layer"
    print(f"load average now: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; torch {torch.__version__}")
    gemm = GemmPeak(shapes, args.threads, args.peak_seconds)
    gemm.measure()
    gemm.measure()
    print(gemm.report(label))
    if args.json:
        Path(args.json).write_text(json.dumps({"threads": args.threads, **gemm.figures()}, indent=1),
                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Load on smt-serve against batch decoding of the same system, measured in the same run.

For each ``--system`` of the experiment in ``--work`` (run ``--run``):

1. **batch**: the raw test sentences tokenized (and truecased) as the server does, then ``smt-decode`` over the
   file with ``--threads`` processes: sentences/s of its decoding (model loading excluded, its ``--stats-json``)
   and the peak memory of its process tree (as the server's, below); for a reranked row also the batch chain of the recipe (``smt-decode --n-best-list N`` →
   ``smt-rerank`` features → ``smt-rerank --weights --one-best``): sentences/s over its whole wall time (model
   loading included). The batch decode runs before and after the server, and its mean is the reference;
2. **server**: ``smt-serve`` on the same system (same ``--threads``), then 1, 8 and 32 concurrent clients
   (``--clients``), each posting one sentence at a time (``POST /translate``) until the sentences are done:
   sentences/s over the wall time, p50 / p95 latency, failed requests (a non-200 answer, or none), the CPU time
   of the server's process tree per sentence (a figure the machine's other load does not inflate, unlike a share
   of the cores; batch: smt-decode's, loading included), and the peak memory of the server's process tree (sampled every 0.2 s: the largest sum of RSS, and of PSS, which counts
   the pages the forked decoder workers share with the server once);
3. the server's translations against the batch's (Baseline: ``smt-decode``'s detruecased, detokenized 1-best;
   reranked: the chain's), as a count of identical lines.

Goals (issue 26): the server at 8 clients ≥ 80% of batch smt-decode's sentences/s; 0 failed requests.

    .venv/bin/python benchmarks/serve_load.py --work /work/exp/m30k --system Baseline --system +all+RNNsearch \\
        --run 1 --threads 2 --json serve_load.json
"""
from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DEFAULT_TEST = Path(os.environ.get("MT_DATA", ROOT.parent / "shared" / "data")) / "multi30k" / "test_2016_flickr.en.gz"


def read_raw(path: Path, limit: int) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in fh if line.strip()]
    return lines[:limit] if limit else lines


def run_timed(cmd: list[str]) -> tuple[float, "TreeMemory"]:
    """``(wall seconds, the peak memory of its process tree)`` of a command (which must succeed)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    memory = TreeMemory(proc.pid)
    watch = threading.Thread(target=memory.watch, args=(proc,), daemon=True)
    watch.start()
    _, err = proc.communicate()
    watch.join()
    if proc.returncode != 0:
        raise SystemExit(f"serve_load: {' '.join(cmd)} failed ({proc.returncode}): {err[-2000:]}")
    return time.perf_counter() - t0, memory


def batch_decode(files, tokens: Path, out: Path, threads: int) -> dict:
    stats = out.with_suffix(".stats.json")
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, memory = run_timed([str(BIN / "smt-decode"), "--moses-ini", str(files.moses_ini), "--input", str(tokens),
                              "--output", str(out), "--threads", str(threads), "--progress", "false",
                              "--stats-json", str(stats)])
    s = json.loads(stats.read_text())
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime  # loading included
    return {"sentences_per_s": s["sentences_per_second"], "load_s": s["load_seconds"], "wall_s": round(wall, 2),
            "cpu_ms_per_sentence": round(1000 * cpu / s["sentences"], 1),
            "peak_rss_mb": round(memory.peak_rss / 1024), "peak_pss_mb": round(memory.peak_pss / 1024)}


def batch_chain(files, tokens: Path, tmp: Path, threads: int, prefix_tree: bool) -> tuple[dict, list[list[str]]]:
    """The recipe's chain for a reranked row; returns its figures and its tokenized 1-best."""
    nb, feat, best = tmp / "chain.nbest", tmp / "chain.feat.gz", tmp / "chain.best"
    t0 = time.perf_counter()
    run_timed([str(BIN / "smt-decode"), "--moses-ini", str(files.moses_ini), "--input", str(tokens), "--output",
               str(tmp / "chain.1best"), "--n-best-list", str(nb), str(files.nbest_size), "--threads", str(threads),
               "--progress", "false"])
    models = (["--lm", *files.lm] if files.lm else []) + (["--kenlm", *files.kenlm] if files.kenlm else []) + \
        (["--encdec", *files.encdec] if files.encdec else [])
    run_timed([str(BIN / "smt-rerank"), "--nbest", str(nb), "--src", str(tokens), "--output", str(feat), *models,
               "--threads", "1", "--checkpoint", files.checkpoint, *(["--prefix-tree"] if prefix_tree else [])])
    run_timed([str(BIN / "smt-rerank"), "--nbest", str(feat), "--src", str(tokens), "--weights",
                        str(files.rerank_weights), "--one-best", str(best)])
    wall = time.perf_counter() - t0
    lines = best.read_text(encoding="utf-8").split("\n")[:-1]
    return ({"sentences_per_s": round(len(lines) / wall, 3), "wall_s": round(wall, 2),
             "note": "smt-decode n-best + smt-rerank (features, then weights); model loading included"},
            [line.split() for line in lines])


class TreeMemory:
    """Peak memory of a process and its children, sampled from /proc; and their CPU time (:meth:`cpu_seconds`)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_rss, self.peak_pss = pid, 0, 0

    def _pids(self) -> list[int]:
        out = [self.pid]
        try:
            for task in Path(f"/proc/{self.pid}/task").iterdir():
                out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
        return out

    def sample(self) -> None:
        rss = pss = 0
        for pid in self._pids():
            try:
                for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
            except OSError:
                continue
        self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the process and its living children have used so far."""
        total = 0
        for pid in self._pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        return total / os.sysconf("SC_CLK_TCK")

    def watch(self, proc: subprocess.Popen) -> None:
        """Sample every 0.1 s until ``proc`` ends."""
        while proc.poll() is None:
            self.sample()
            time.sleep(0.1)


async def clients(url: str, sentences: list[str], n_clients: int, memory: TreeMemory) -> dict:
    import aiohttp

    latencies: list[float] = []
    failures: list[str] = []
    answers: list[str | None] = [None] * len(sentences)
    nxt = iter(range(len(sentences)))

    async def client(session: aiohttp.ClientSession) -> None:
        for i in nxt:
            t0 = time.perf_counter()
            try:
                async with session.post(url + "/translate", json={"text": sentences[i]}) as resp:
                    data = await resp.json()
                    if resp.status != 200:
                        failures.append(f"{resp.status}: {data.get('error')}")
                        continue
                    answers[i] = data["translations"][0]["translation"]
            except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as err:
                failures.append(f"{type(err).__name__}: {err}")
                continue
            latencies.append(time.perf_counter() - t0)

    async def sampler(stop: asyncio.Event) -> None:
        while not stop.is_set():
            memory.sample()
            await asyncio.sleep(0.2)

    stop = asyncio.Event()
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=n_clients), timeout=timeout) as session:
        watch = asyncio.create_task(sampler(stop))
        t0, cpu0 = time.perf_counter(), memory.cpu_seconds()
        await asyncio.gather(*(client(session) for _ in range(n_clients)))
        wall, cpu = time.perf_counter() - t0, memory.cpu_seconds() - cpu0
        stop.set()
        await watch
    return {"clients": n_clients, "sentences": len(sentences), "sentences_per_s": round(len(latencies) / wall, 3),
            "p50_s": percentile(latencies, 50), "p95_s": percentile(latencies, 95), "failed": len(failures),
            "cpu_ms_per_sentence": round(1000 * cpu / max(1, len(latencies)), 1),
            "failures": failures[:5], "answers": answers}


def percentile(values: list[float], p: int) -> float:
    """The ``p``-th percentile (statistics.quantiles, exclusive method); 0 without values."""
    if len(values) < 2:
        return round(values[0], 3) if values else 0.0
    return round(statistics.quantiles(values, n=100)[p - 1], 3)


def start_server(args, system: str, prefix_tree: bool) -> tuple[subprocess.Popen, str]:
    cmd = [str(BIN / "smt-serve"), "--work", str(args.work), "--system", system, "--run", str(args.run), "--port", "0",
           "--threads", str(args.threads), "--max-sentences", "64", "--prefix-tree", str(prefix_tree).lower()]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "smt-serve: serving" in line:
            return proc, line.split(" on ")[1].split("/ ")[0].rstrip("/")
    raise SystemExit(f"serve_load: smt-serve did not start: {' '.join(cmd)}")


def serve(args, system: str, raw: list[str], reference: list[str], prefix_tree: bool) -> dict:
    """The server's passes at every ``--clients`` count: their figures, its peak memory and exit status."""
    proc, url = start_server(args, system, prefix_tree)
    memory = TreeMemory(proc.pid)
    out: dict = {"prefix_tree": prefix_tree, "passes": []}
    try:
        asyncio.run(clients(url, raw[:1], 1, memory))  # warm-up
        for n in args.clients:
            res = asyncio.run(clients(url, raw, n, memory))
            res["same_as_batch"] = sum(a == b for a, b in zip(res.pop("answers"), reference))
            out["passes"].append(res)
            print(f"[serve_load] {system} (prefix tree {prefix_tree}): {n} client(s): {res['sentences_per_s']} "
                  f"sentences/s, p50 {res['p50_s']} s, p95 {res['p95_s']} s, {res['failed']} failed, "
                  f"{res['same_as_batch']}/{len(raw)} as batch", file=sys.stderr, flush=True)
    finally:
        proc.terminate()
        out["exit"] = proc.wait(timeout=300)
    out["peak_rss_mb"], out["peak_pss_mb"] = round(memory.peak_rss / 1024), round(memory.peak_pss / 1024)
    return out


def measure(args, system: str, raw: list[str], tmp: Path) -> dict:
    from smt_features.serve.layout import from_work
    from smt_features.serve.text import TextPipeline

    files = from_work(args.work, system, args.run)
    text = TextPipeline(files.src_lang, files.tgt_lang, lowercase=files.lowercase, truecase=files.truecase)
    tokens = tmp / f"{system}.tok"
    tokens.write_text("".join(" ".join(text.source_tokens(s)) + "\n" for s in raw), encoding="utf-8")
    out: dict = {"system": system, "run": args.run, "sentences": len(raw), "threads": args.threads}
    before = batch_decode(files, tokens, tmp / "before.out", args.threads)
    if files.reranked:
        out["batch_chain"], best = batch_chain(files, tokens, tmp, args.threads, args.prefix_tree != "false")
    else:
        best = [line.split() for line in (tmp / "before.out").read_text(encoding="utf-8").split("\n")[:-1]]
    reference = [text.target_text(b) for b in best]
    variants = {"true": [True], "false": [False], "both": [False, True]}[args.prefix_tree] if files.reranked else [True]
    out["servers"] = [serve(args, system, raw, reference, tree) for tree in variants]
    after = batch_decode(files, tokens, tmp / "after.out", args.threads)
    out["batch_decode"] = {"before": before, "after": after,
                           "sentences_per_s": round((before["sentences_per_s"] + after["sentences_per_s"]) / 2, 3)}
    for server in out["servers"]:
        at8 = next((r for r in server["passes"] if r["clients"] == 8), None)
        if at8:
            server["at8_over_batch_decode"] = round(at8["sentences_per_s"] / out["batch_decode"]["sentences_per_s"], 3)
    return out


def table(results: list[dict]) -> str:
    rows = ["| system | clients | sentences/s | p50 latency (s) | p95 latency (s) | failed | same as batch | "
            "CPU ms / sentence | peak RSS / PSS (MB) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    goals = []
    for r in results:
        for server in r["servers"]:
            name = r["system"] + (f" (prefix tree {str(server['prefix_tree']).lower()})" if len(r["servers"]) > 1
                                  else "")
            for s in server["passes"]:
                rows.append(f"| {name} | {s['clients']} | {s['sentences_per_s']:.2f} | {s['p50_s']:.3f} | "
                            f"{s['p95_s']:.3f} | {s['failed']} | {s['same_as_batch']}/{s['sentences']} | "
                            f"{s['cpu_ms_per_sentence']} | {server['peak_rss_mb']} / {server['peak_pss_mb']} |")
            goals.append(f"- {name}: server at 8 clients / batch smt-decode = {server.get('at8_over_batch_decode')} "
                         f"(goal ≥ 0.8); failed requests: {sum(s['failed'] for s in server['passes'])} (goal 0); "
                         f"server exit status {server['exit']}")
        b = r["batch_decode"]
        rows.append(f"| {r['system']} | batch smt-decode | {b['sentences_per_s']:.2f} (before {b['before']['sentences_per_s']:.2f}, "
                    f"after {b['after']['sentences_per_s']:.2f}; loading excluded) | | | | | "
                    f"{b['before']['cpu_ms_per_sentence']} (loading incl.) | "
                    f"{b['before']['peak_rss_mb']} / {b['before']['peak_pss_mb']} |")
        if "batch_chain" in r:
            rows.append(f"| {r['system']} | batch chain | {r['batch_chain']['sentences_per_s']:.2f} (decode + rerank, "
                        "loading included) | | | | | | |")
    return "\n".join(rows) + "\n\n" + "\n".join(goals)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="an experiment's work folder")
    ap.add_argument("--system", action="append", help="rows to measure (repeat; default Baseline)")
    ap.add_argument("--run", type=int, default=1)
    ap.add_argument("--test", type=Path, default=DEFAULT_TEST, help="raw source sentences (plain or .gz)")
    ap.add_argument("--sentences", type=int, default=0, help="the first N sentences (0 = all)")
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--threads", type=int, default=2, help="decoder processes, batch and server alike")
    ap.add_argument("--prefix-tree", choices=("true", "false", "both"), default="true",
                    help="a reranked row's neural features over each n-best list's prefix tree (smt-serve "
                         "--prefix-tree, its default; the batch chain's smt-rerank alike); both: the server twice")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    raw = read_raw(args.test, args.sentences)
    results = []
    with tempfile.TemporaryDirectory(prefix="serve_load.") as tmp:
        for system in args.system or ["Baseline"]:
            results.append(measure(args, system, raw, Path(tmp)))
    load = os.getloadavg()
    print(f"# smt-serve load: {args.work}, run {args.run}, {len(raw)} sentences of {args.test.name}, "
          f"{args.threads} decoder processes; load average at the end {load[0]:.1f}\n")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({"work": str(args.work), "test": str(args.test), "load_average": load,
                                         "results": results}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

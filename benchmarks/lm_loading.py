"""Decoder start-up, peak memory and speed against the KenLM file's size: lazy vs populated loading, same run.

    .venv/bin/python benchmarks/lm_loading.py --moses-ini SYS/model/moses.ini --input SYS/text/test_2016_flickr.en \\
        --dev-src SYS/text/val.en --dev-ref SYS/text/val.fr --lms A.binary B.binary ... --work OUT \\
        [--lines 100] [--threads 1] [--reps 2] [--conditions before,populate,lazy] [--stages decode,tune]

One system (``--moses-ini``: its phrase table, reordering table and weights) with each KenLM binary of
``--lms`` in turn as ``LM0`` (``X.binary``; its bounds sidecar ``X.ubounds`` and ARPA file ``X.arpa`` when
beside it). Conditions:

* ``before`` — what the decoder did before lazy loading: the binary read at start by both copies (the Python
  ``kenlm`` model and the compiled core: ``--lm-load populate``) and the per-word bounds parsed from the
  ARPA file (no ``X.ubounds``); needs ``X.arpa``;
* ``read`` — read into allocated memory at start (``--lm-load read``), bounds from ``X.ubounds``;
* ``populate`` — mapped and read at start (``MAP_POPULATE``), bounds from ``X.ubounds``;
* ``lazy`` — mapped, pages read as touched (the default), bounds from ``X.ubounds``.

Stages, as ``benchmarks/scaling.py`` runs them: ``decode`` = ``smt-decode`` of the first ``--lines`` input
sentences (start-up included); ``tune`` = ``smt-tune``, 1 iteration, 20-best, 2 restarts, on the first
``--lines`` dev sentences. Each run is under ``/usr/bin/time -v`` (peak RSS of the largest process) with
the decoder's own load time and sentences/s from ``--stats-json``; PSS and anonymous memory are sampled
from ``/proc/PID/smaps_rollup`` every 0.2 s (a mapped file's pages are page cache, shared: RSS counts them
once per mapping, PSS splits them). Every LM file is read once first (a warm
page cache for every condition), or, with ``--cold``, every LM file is dropped from the page cache before
each run (``posix_fadvise(DONTNEED)``: start-up then includes reading from disk); runs alternate
(``--reps``): LM × condition in the same order each rep. ``--snapshot``: the commands run from a copy of
HEAD (``benchmarks/snapshot.py``).
Writes ``OUT/lm_loading.json`` and ``OUT/lm_loading.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from snapshot import snapshot

VENV_BIN = Path(sys.executable).parent
ENV = dict(os.environ)
CONDITIONS = ("before", "read", "populate", "lazy")


def model_dir(work: Path, lm: Path, cond: str) -> Path | None:
    """``work/NAME/COND/`` with ``model.binary`` (a link to ``lm``) and the bounds source of ``cond``."""
    arpa, side = lm.with_suffix(".arpa"), lm.with_suffix(".ubounds")
    d = work / lm.stem / cond
    if cond == "before" and not arpa.is_file():
        return None
    if cond != "before" and not side.is_file():
        raise SystemExit(f"lm_loading: {side} missing (write it: smt-kenlm bounds --arpa {arpa})")
    d.mkdir(parents=True, exist_ok=True)
    links = {"model.binary": lm, **({"model.arpa": arpa} if cond == "before" else {"model.ubounds": side})}
    for name, target in links.items():
        if not (d / name).exists():
            (d / name).symlink_to(target.resolve())
    return d


def write_ini(base: str, lm_path: Path, out: Path) -> Path:
    """``base`` with LM0's path replaced (other paths made absolute by the decoder's rules: kept as given)."""
    text = Path(base).read_text(encoding="utf-8")
    new, n = re.subn(r"^(KENLM .*?path=)(\S+)", lambda m: m.group(1) + str(lm_path), text, flags=re.M)
    if n != 1:
        raise SystemExit(f"lm_loading: {base}: expected one KENLM line, found {n}")
    out.write_text(new, encoding="utf-8")
    return out


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _sample(pid: int, peaks: dict[str, float]) -> None:
    """Largest Rss / Pss / Anonymous (MiB, /proc/PID/smaps_rollup) of any process of the tree so far."""
    for p in _tree(pid):
        try:
            text = Path(f"/proc/{p}/smaps_rollup").read_text()
        except OSError:
            continue
        for key in ("Rss", "Pss", "Anonymous"):
            m = re.search(rf"^{key}:\s+(\d+) kB", text, re.M)
            if m:
                peaks[key] = max(peaks.get(key, 0.0), int(m.group(1)) / 1024)


def timed(cmd: list[str], log: Path) -> dict[str, float]:
    """Run ``cmd`` under /usr/bin/time -v: wall seconds, peak RSS (MiB) of its largest process, and, sampled
    every 0.2 s from /proc, the largest process's peak PSS (shared pages split between their mappings)
    and anonymous memory (not file-backed: what the process holds itself)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(["/usr/bin/time", "-v", *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=ENV)
    peaks: dict[str, float] = {}
    while proc.poll() is None:
        _sample(proc.pid, peaks)
        time.sleep(0.2)
    out = proc.stdout.read() if proc.stdout else ""
    wall = time.perf_counter() - t0
    log.write_text(" ".join(shlex.quote(c) for c in cmd) + "\n" + out, encoding="utf-8")
    if proc.returncode != 0:
        raise SystemExit(f"lm_loading: failed (exit {proc.returncode}); see {log}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out)
    return {"wall_s": round(wall, 2), "max_rss_mib": round(int(rss.group(1)) / 1024, 1) if rss else float("nan"),
            "peak_pss_mib": round(peaks.get("Pss", float("nan")), 1),
            "peak_anon_mib": round(peaks.get("Anonymous", float("nan")), 1)}


def drop_cache(lms: list[Path]) -> None:
    """Evict the LM files (binary, ARPA, bounds) from the page cache."""
    for lm in lms:
        for f in (lm, lm.with_suffix(".arpa"), lm.with_suffix(".ubounds")):
            if f.is_file():
                fd = os.open(f, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)


def head(src: str, dst: Path, n: int) -> Path:
    with open(src, encoding="utf-8") as fh:
        dst.write_text("".join(line for _, line in zip(range(n), fh)), encoding="utf-8")
    return dst


def run_one(a: argparse.Namespace, work: Path, lm: Path, cond: str, stage: str, rep: int) -> dict[str, object] | None:
    d = model_dir(work, lm, cond)
    if d is None:
        return None
    ini = write_ini(a.moses_ini, d / "model.binary", d / "moses.ini")
    load = {"before": "populate"}.get(cond, cond)
    run = d / f"{stage}.{rep}"
    run.mkdir(exist_ok=True)
    if stage == "decode":
        stats = run / "stats.json"
        cmd = [str(VENV_BIN / "smt-decode"), "-f", str(ini), "--input", str(work / "input.txt"), "--output",
               str(run / "out.txt"), "--threads", str(a.threads), "--lm-load", load, "--progress", "false",
               "--stats-json", str(stats)]
        r = timed(cmd, run / "log.txt")
        s = json.loads(stats.read_text(encoding="utf-8"))
        r.update(load_s=s["load_seconds"], sent_per_s=s["sentences_per_second"])
    else:
        tune = run / "tune"
        cmd = [str(VENV_BIN / "smt-tune"), "--moses-ini", str(ini), "--dev-src", str(work / "dev.en"), "--dev-ref",
               str(work / "dev.fr"), "--work-dir", str(tune), "--nbest", "20", "--max-iterations", "1",
               "--restarts", "2", "--threads", str(a.threads), f"--decoder-flags=--lm-load {load}"]
        r = timed(cmd, run / "log.txt")
        first = (tune / "run1.decode.log").read_text(encoding="utf-8", errors="replace")
        m = re.search(r"loaded .* in ([\d.]+) s", first)
        r.update(load_s=float(m.group(1)) if m else float("nan"))
    return {"lm": str(lm), "lm_mb": round(lm.stat().st_size / 1e6, 1), "condition": cond, "stage": stage, "rep": rep,
            "load_avg": round(os.getloadavg()[0], 1), **r}


def markdown(rows: list[dict[str, object]]) -> str:
    keys = sorted({(r["stage"], r["lm_mb"], r["condition"]) for r in rows},
                  key=lambda k: (k[0], k[1], CONDITIONS.index(str(k[2]))))
    out = ["| stage | LM binary MB | condition | start-up s | peak RSS MiB | peak PSS MiB | peak anonymous MiB | "
           "wall s | decode sent/s | runs |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for stage, mb, cond in keys:
        rs = [r for r in rows if (r["stage"], r["lm_mb"], r["condition"]) == (stage, mb, cond)]
        med = lambda k: sorted(float(r[k]) for r in rs)[len(rs) // 2]  # noqa: E731
        sps = f"{med('sent_per_s'):.2f}" if stage == "decode" else ""
        out.append(f"| {stage} | {mb} | {cond} | {med('load_s'):.2f} | {med('max_rss_mib'):.0f} | "
                   f"{med('peak_pss_mib'):.0f} | {med('peak_anon_mib'):.0f} | {med('wall_s'):.1f} | {sps} | "
                   f"{len(rs)} |")
    return "\n".join(out) + "\n\n(medians over the runs)\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--moses-ini", required=True)
    p.add_argument("--input", required=True, help="tokenized source text to decode")
    p.add_argument("--dev-src", default="", help="tokenized dev source (tune stage)")
    p.add_argument("--dev-ref", default="", help="tokenized dev reference (tune stage)")
    p.add_argument("--lms", nargs="+", required=True, help="KenLM binaries X.binary (X.ubounds, X.arpa beside)")
    p.add_argument("--work", required=True)
    p.add_argument("--lines", type=int, default=100)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--conditions", default=",".join(CONDITIONS))
    p.add_argument("--stages", default="decode,tune")
    p.add_argument("--cold", action="store_true", help="drop the LM files from the page cache before every run")
    p.add_argument("--snapshot", action="store_true", help="run the commands from a copy of HEAD "
                                                           "(benchmarks/snapshot.py)")
    a = p.parse_args(argv)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    commit = snapshot(work, ENV) if a.snapshot else None
    head(a.input, work / "input.txt", a.lines)
    stages = [s for s in a.stages.split(",") if s]
    if "tune" in stages:
        if not (a.dev_src and a.dev_ref):
            raise SystemExit("lm_loading: the tune stage needs --dev-src and --dev-ref")
        head(a.dev_src, work / "dev.en", a.lines)
        head(a.dev_ref, work / "dev.fr", a.lines)
    lms = [Path(x) for x in a.lms]
    for lm in lms if not a.cold else []:  # a warm page cache for every condition
        for f in (lm, lm.with_suffix(".arpa"), lm.with_suffix(".ubounds")):
            if f.is_file():
                subprocess.run(["cat", str(f)], stdout=subprocess.DEVNULL, check=True)
    rows: list[dict[str, object]] = []
    for rep in range(1, a.reps + 1):
        for stage in stages:
            for lm in lms:
                for cond in [c for c in a.conditions.split(",") if c]:
                    if a.cold:
                        drop_cache(lms)
                    r = run_one(a, work, lm, cond, stage, rep)
                    if r is not None:
                        rows.append(r)
                        print(json.dumps(r), flush=True)
    (work / "lm_loading.json").write_text(json.dumps({"argv": sys.argv[1:] if argv is None else argv, "commit": commit,
                                                      "runs": rows}, indent=1) + "\n", encoding="utf-8")
    table = markdown(rows)
    (work / "lm_loading.md").write_text(table, encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

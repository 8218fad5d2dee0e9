"""``smt-tune`` with the reference optimiser code and with the fast one (and Moses's ``mert-moses.pl``), same run.

    .venv/bin/python benchmarks/tune_speed.py --moses-ini SYS/model/moses.ini --dev-src SYS/text/val.en \\
        --dev-ref SYS/text/val.fr --work OUT [--seed 1] [--nbest 100] [--threads 2] [--optimizer mert] \\
        [--order reference,auto] [--reps 1] [--moses-dir /work/moses] [--tune-flags "..."]

Each run is ``smt-tune --optimizer-impl IMPL`` (``reference``: the numpy code; ``auto``: the compiled MERT
line search / the fast kbMIRA and PRO loops) in ``OUT/IMPL[.REP]``, one after the other in ``--order``
(alternate them with ``--reps 2``: the machine is shared, compare within a run). Reported per run, from
smt-tune's own ``iterations.json``: wall time (measured here, the whole command), the time in the decoder,
in merging the n-best lists and in the optimiser, the optimiser's share of the wall time, iterations and
the last dev BLEU; then whether every run ended with the same weights (``moses.tuned.ini`` byte for byte
and every iteration's weights) and the wall-time ratios. With ``--moses-dir`` (a Moses build with
``bin/moses``, ``bin/mert`` … and ``scripts/training/mert-moses.pl``) Moses's MERT tunes the same
moses.ini on the same dev set in ``OUT/moses`` (n-best and threads alike, ``--predictable-seeds``) and
its wall time is reported beside. ``OUT/tune_speed.json`` keeps everything; ``OUT/tune_speed.md`` the table.
With ``--snapshot`` the smt-tune runs use a copy of this checkout's HEAD (``git archive``, plus its built
extension modules) in ``OUT/src-COMMIT`` on ``PYTHONPATH``, so editing the checkout meanwhile changes nothing;
``--baseline-commit C`` adds a copy of commit ``C`` and runs every ``--order`` entry from both, alternating (labels
``IMPL@COMMIT``, and the ratio of HEAD's wall time to ``C``'s): a change measured against the code before it.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from snapshot import snapshot

VENV_BIN = Path(sys.executable).parent
ENV = dict(os.environ)


def load() -> str:
    """The 1-minute load average (the machine is shared)."""
    return f"{os.getloadavg()[0]:.1f}"


def tune_command(a: argparse.Namespace, impl: str, work: Path) -> list[str]:
    return [str(VENV_BIN / "smt-tune"), "--moses-ini", a.moses_ini, "--dev-src", a.dev_src, "--dev-ref", a.dev_ref,
            "--work-dir", str(work), "--seed", str(a.seed), "--nbest", str(a.nbest), "--threads", str(a.threads),
            "--optimizer", a.optimizer, "--optimizer-impl", impl, *shlex.split(a.tune_flags)]


def run_tune(a: argparse.Namespace, impl: str, work: Path, env: dict[str, str] = ENV,
             label: str = "") -> dict[str, object]:
    """One smt-tune run and its time split (seconds) from its iterations.json."""
    if (work / "iterations.json").exists():
        raise SystemExit(f"tune_speed: {work} holds a run already; choose another --work")
    cmd = tune_command(a, impl, work)
    before = load()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    wall = time.perf_counter() - t0
    (work.parent / f"{work.name}.log").write_text(proc.stdout, encoding="utf-8")
    if proc.returncode != 0:
        raise SystemExit(f"tune_speed: smt-tune failed (exit {proc.returncode}), see {work.parent / work.name}.log")
    state = json.loads((work / "iterations.json").read_text(encoding="utf-8"))
    its = state["iterations"]
    decode = sum(r.get("decode", {}).get("seconds", 0.0) for r in its)
    read = sum(r.get("decode", {}).get("read_seconds", 0.0) for r in its)
    opt = sum(r.get(a.optimizer, {}).get("seconds", 0.0) for r in its)
    return {"impl": impl, "label": label or impl, "work": str(work),
            "command": " ".join(shlex.quote(c) for c in cmd), "wall_s": round(wall, 1),
            "decode_s": round(decode, 1), "read_s": round(read, 1), "optimiser_s": round(opt, 1),
            "optimiser_share": round(opt / wall, 4), "other_s": round(wall - decode - read - opt, 1),
            "iterations": len(its), "stop": state["final"]["stop_reason"], "dev_bleu": state["final"]["dev_bleu"],
            "per_iteration": [{"pool": r.get("decode", {}).get("pool"), "decode_s": r.get("decode", {}).get("seconds"),
                               "read_s": r.get("decode", {}).get("read_seconds"),
                               "optimiser_s": r.get(a.optimizer, {}).get("seconds")} for r in its],
            "weights": [r.get(a.optimizer, {}).get("weights") for r in its],
            "load_before": before, "load_after": load()}


def run_moses(a: argparse.Namespace, work: Path) -> dict[str, object]:
    """Moses's mert-moses.pl on the same moses.ini, dev set, n-best size and threads."""
    moses = Path(a.moses_dir)
    script = moses / "scripts" / "training" / "mert-moses.pl"
    for need in (moses / "bin" / "moses", moses / "bin" / "mert", moses / "bin" / "extractor", script):
        if not need.exists():
            return {"impl": "moses", "status": f"not available: {need} missing"}
    work.mkdir(parents=True, exist_ok=False)
    cmd = ["perl", str(script), str(Path(a.dev_src).resolve()), str(Path(a.dev_ref).resolve()),
           str(moses / "bin" / "moses"), str(Path(a.moses_ini).resolve()), f"--mertdir={moses / 'bin'}",
           f"--rootdir={moses / 'scripts'}", f"--working-dir={work.resolve()}", f"--nbest={a.nbest}",
           f"--decoder-flags=-threads {a.threads} -v 0", f"--threads={a.threads}", "--predictable-seeds",
           *shlex.split(a.moses_flags)]
    before = load()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    (work / "mert-moses.log").write_text(proc.stdout, encoding="utf-8")
    runs = sorted(work.glob("run*.moses.ini"))
    return {"impl": "moses", "status": "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})",
            "work": str(work), "command": " ".join(shlex.quote(c) for c in cmd), "wall_s": round(wall, 1),
            "iterations": len(runs), "load_before": before, "load_after": load()}


def markdown(runs: list[dict[str, object]], same: bool | None) -> str:
    rows = ["| run | wall s | decode s | n-best merge s | optimiser s | optimiser share | iterations | last dev BLEU "
            "| load before/after |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in runs:
        if r.get("impl") == "moses":
            rows.append(f"| Moses mert-moses.pl ({r['status']}) | {r.get('wall_s', '—')} | | | | | "
                        f"{r.get('iterations', '—')} | | {r.get('load_before', '')}/{r.get('load_after', '')} |")
            continue
        bleu = r["dev_bleu"][-1] if r["dev_bleu"] else float("nan")
        rows.append(f"| smt-tune --optimizer-impl {r['label']} | {r['wall_s']} | {r['decode_s']} | {r['read_s']} | "
                    f"{r['optimiser_s']} | {100 * r['optimiser_share']:.1f}% | {r['iterations']} | {bleu:.2f} | "
                    f"{r['load_before']}/{r['load_after']} |")
    if same is not None:
        rows.append(f"\nSame weights in every smt-tune run (each iteration's, and moses.tuned.ini byte for byte): "
                    f"**{same}**")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--moses-ini", required=True)
    p.add_argument("--dev-src", required=True)
    p.add_argument("--dev-ref", required=True)
    p.add_argument("--work", required=True, help="output folder (one sub-folder per run)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--nbest", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--optimizer", default="mert", choices=("mert", "kbmira", "pro"))
    p.add_argument("--order", default="reference,auto", help="the smt-tune runs, comma-separated --optimizer-impl")
    p.add_argument("--reps", type=int, default=1, help="repeat --order this many times (alternating)")
    p.add_argument("--tune-flags", default="", help="more smt-tune flags (one string)")
    p.add_argument("--moses-dir", default="", help="a Moses build to run mert-moses.pl from (after the smt-tune runs)")
    p.add_argument("--moses-flags", default="", help="more mert-moses.pl flags (one string)")
    p.add_argument("--snapshot", action="store_true", help="run smt-tune from a copy of HEAD (see above)")
    p.add_argument("--baseline-commit", default="",
                   help="with --snapshot: also run every --order entry from a copy of this commit, alternating with "
                        "HEAD's (labels IMPL@COMMIT): a change measured against the code before it, same run")
    a = p.parse_args(argv)
    out = Path(a.work)
    out.mkdir(parents=True, exist_ok=True)
    if a.baseline_commit and not a.snapshot:
        p.error("--baseline-commit needs --snapshot")
    commit = snapshot(out, ENV) if a.snapshot else None
    sources = [("", ENV)]  # (label suffix, environment of the smt-tune runs)
    if a.baseline_commit:
        base_env = dict(os.environ)
        base = snapshot(out, base_env, a.baseline_commit)
        sources = [(f"@{base[:10]}", base_env), (f"@{str(commit)[:10]}", ENV)]
    impls = [x for x in a.order.split(",") if x]
    runs: list[dict[str, object]] = []
    plan = [(impl, suffix, env) for impl in impls for suffix, env in sources]
    for rep in range(a.reps):
        for impl, suffix, env in plan:
            label = impl + suffix
            work = out / (label if a.reps == 1 else f"{label}.{rep + 1}")
            print(f"tune_speed: smt-tune --optimizer-impl {label} -> {work} (load {load()})", flush=True)
            runs.append(run_tune(a, impl, work, env, label))
            r = runs[-1]
            print(f"tune_speed:   {r['wall_s']} s wall, decode {r['decode_s']} s, merge {r['read_s']} s, "
                  f"optimiser {r['optimiser_s']} s ({100 * float(r['optimiser_share']):.1f}%), "
                  f"{r['iterations']} iterations", flush=True)
    tuned = [(Path(str(r["work"])) / "moses.tuned.ini").read_bytes() for r in runs]
    same = all(t == tuned[0] for t in tuned) and all(r["weights"] == runs[0]["weights"] for r in runs)
    if a.moses_dir:
        print(f"tune_speed: Moses mert-moses.pl -> {out / 'moses'} (load {load()})", flush=True)
        runs.append(run_moses(a, out / "moses"))
        print(f"tune_speed:   {runs[-1].get('wall_s', '—')} s wall ({runs[-1]['status']})", flush=True)
    ratios = {}
    if len(sources) == 2:  # HEAD against the baseline commit, per --optimizer-impl (sums over the reps)
        for impl in impls:
            walls = [sum(float(r["wall_s"]) for r in runs if r.get("label") == impl + suffix) for suffix, _ in sources]
            ratios[f"{impl}: HEAD / baseline commit wall"] = round(walls[1] / walls[0], 3)
    by_impl = {str(r["impl"]): float(r["wall_s"]) for r in runs if "wall_s" in r}
    if "reference" in by_impl and "auto" in by_impl:
        ratios["auto / reference wall"] = round(by_impl["auto"] / by_impl["reference"], 3)
    if "moses" in by_impl and by_impl["moses"] > 0:
        for impl in ("auto", "reference"):
            if impl in by_impl:
                ratios[f"{impl} / Moses wall"] = round(by_impl[impl] / by_impl["moses"], 3)
    result = {"argv": sys.argv[1:] if argv is None else argv, "commit": commit, "runs": runs, "same_weights": same,
              "ratios": ratios}
    (out / "tune_speed.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    table = markdown(runs, same) + "".join(f"\n{k}: {v}" for k, v in ratios.items()) + "\n"
    (out / "tune_speed.md").write_text(table, encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python
"""The bad-input probe as a user meets it: every case of ``tests/probe`` run as the installed console
script, then the fault × command table with counts (tracebacks, silent results, unclear messages,
leftovers).

    .venv/bin/python benchmarks/bad_input_probe.py [--work DIR] [--json OUT.json] [--only PROG ...] [--timeout S]
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository, for the tests package (never tests/ itself: its nmt/ would shadow nmt)

from tests.probe import Workspace, all_cases  # noqa: E402
from tests.probe.runner import run_as_script  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", help="workspace folder (default: a new temp folder)")
    parser.add_argument("--json", help="write every outcome here")
    parser.add_argument("--only", nargs="*", help="commands to probe (default: all)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one run may take before it counts as a hang")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="probe-"))
    ws = Workspace(work)
    bin_dir = Path(sys.executable).parent
    cases = [c for c in all_cases() if not args.only or c.prog in args.only]
    outcomes = []
    for i, case in enumerate(cases, 1):
        outcome = run_as_script(case, ws, bin_dir, timeout=args.timeout)
        outcomes.append(outcome)
        mark = "ok" if not outcome.problems else f"{outcome.verdict}: {'; '.join(outcome.problems)}"
        print(f"[{i}/{len(cases)}] {case.id}: {mark}", file=sys.stderr, flush=True)
    by_fault: dict[str, dict[str, str]] = collections.defaultdict(dict)
    for o in outcomes:
        by_fault[o.case.fault][o.case.prog] = o.verdict
    progs = sorted({o.case.prog for o in outcomes})
    print("| fault | " + " | ".join(progs) + " |")
    print("|---|" + "---|" * len(progs))
    for fault in sorted(by_fault):
        print(f"| {fault} | " + " | ".join(by_fault[fault].get(p, "") for p in progs) + " |")
    counts = collections.Counter(o.verdict for o in outcomes)
    leftovers = sum(any(p.startswith("left behind") or p.startswith("input ") for p in o.problems) for o in outcomes)
    print(f"\n{len(outcomes)} runs: {counts['ok']} ok, {counts['traceback']} tracebacks, {counts['silent']} silent "
          f"(exit 0), {counts['hang']} hangs, {counts['unclear']} other problems; {leftovers} with files left behind or inputs changed")
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{"case": o.case.id, "status": o.status, "verdict": o.verdict, "problems": o.problems,
              "stderr_tail": o.stderr[-500:]} for o in outcomes], indent=1), encoding="utf-8")
    return 0 if counts["ok"] == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())

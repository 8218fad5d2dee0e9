"""Measure the import graph of nmt/ and smt_features/: wrong-way arrows, cycles, floor crossings, file sizes.

Reads the code with grimp (import-linter's graph builder), imports inside functions included, for any
checkout: ``python benchmarks/import_graph.py [REPO_DIR] [--json OUT]`` (default: this repository).
Reports, in the units of the architecture issue:
  - arrows ``nmt`` → ``smt_features`` (module pairs),
  - import cycles: strongly connected groups of modules (size ≥ 2),
  - file pairs crossing the floors (an ``smt_features`` module importing an ``nmt`` module) and which
    ``nmt`` modules they reach (the basics vs the neural face ``nmt.scoring``),
  - the largest files (lines) and how many exceed 400 lines,
  - the rooms of each floor (the direct children of ``nmt`` and ``smt_features``, packages or single modules):
    modules per room, the arrows between rooms (room pairs with at least one direct import), and the floors
    (the longest chain of arrows, counted in rooms; each room's floor, 1 = the bottom),
  - the import-linter contracts of the checkout's pyproject.toml: how many are kept and broken.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import grimp

# the torch-free basics both floors share: nmt/core/ since the ground floor has rooms (issue 24); before it,
# the flat modules named here, kept so that an older checkout is measured in the same units
BASICS = ("nmt.core", "nmt.data.io", "nmt.config", "nmt.errors", "nmt.formats", "nmt.perplexity", "nmt.paths", "nmt.logs",
          "nmt.data.special")


def strongly_connected(graph: grimp.ImportGraph, modules: list[str]) -> list[list[str]]:
    """Tarjan's algorithm over direct imports; groups of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in modules_set:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    modules_set = set(modules)
    for m in sorted(modules):
        if m not in index:
            visit(m)
    return groups


def room_of(module: str) -> str:
    """The room of ``module``: its floor's direct child (``nmt.lm.task`` -> ``nmt.lm``; ``nmt.scoring`` itself)."""
    return ".".join(module.split(".")[:2])


def rooms(graph: grimp.ImportGraph, floor: str) -> dict:
    """The rooms of ``floor``: modules per room, the arrows between rooms, and the floors of the room graph."""
    mods = sorted(m for m in graph.modules if m.startswith(floor + "."))
    size = Counter(room_of(m) for m in mods)
    arrows = sorted({(room_of(a), room_of(b)) for a in mods for b in graph.find_modules_directly_imported_by(a)
                     if b.startswith(floor + ".") and room_of(a) != room_of(b)})
    below: dict[str, list[str]] = {r: [] for r in size}
    for a, b in arrows:
        below[a].append(b)

    @functools.lru_cache(maxsize=None)
    def level(room: str, seen: frozenset = frozenset()) -> int:
        if room in seen:  # a cycle between rooms: no floors can be drawn through it
            raise ValueError(f"rooms of {floor} import each other in a circle through {room}")
        return 1 + max((level(b, seen | {room}) for b in below[room]), default=0)

    try:
        levels = {r: level(r) for r in sorted(size)}
    except ValueError:
        levels = {}
    return {
        "rooms": dict(sorted(size.items(), key=lambda kv: (-levels.get(kv[0], 0), kv[0]))),
        "arrows": [f"{a} -> {b}" for a, b in arrows],
        "floors": max(levels.values(), default=0),
        "floor_of_room": levels,
    }


def contracts(repo: Path) -> dict:
    """Kept and broken import-linter contracts of ``repo`` (``lint-imports`` run there, on its own code)."""
    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.exists():
        return {"error": f"{exe} missing"}
    env = dict(os.environ, PYTHONPATH=str(repo), COLUMNS="1000")  # one line per contract
    proc = subprocess.run([str(exe), "--no-cache"], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    found = re.search(r"Contracts: (\d+) kept, (\d+) broken", proc.stdout)
    if not found:
        return {"error": (proc.stdout + proc.stderr)[-500:]}
    names = re.findall(r"^(.+?) (KEPT|BROKEN)$", proc.stdout, flags=re.M)
    return {"kept": int(found.group(1)), "broken": int(found.group(2)),
            "contracts": [f"{status}: {name}" for name, status in names]}


def measure(repo: Path) -> dict:
    sys.path.insert(0, str(repo))
    graph = grimp.build_graph("nmt", "smt_features", cache_dir=None)
    mods = sorted(m for m in graph.modules if m.split(".")[0] in ("nmt", "smt_features"))
    # package __init__ files that only hold a docstring do not count as a module that imports
    wrong = sorted((a, b) for a in mods if a.startswith("nmt")
                   for b in graph.find_modules_directly_imported_by(a) if b.startswith("smt_features"))
    crossing = sorted((a, b) for a in mods if a.startswith("smt_features")
                      for b in graph.find_modules_directly_imported_by(a) if b.startswith("nmt"))
    reached = Counter(b for _, b in crossing)
    face = sorted({b for b in reached if not b.startswith(BASICS) and b != "nmt"})
    sizes = []
    for m in mods:
        rel = Path(*m.split("."))
        path = repo / (str(rel) + ".py") if (repo / (str(rel) + ".py")).exists() else repo / rel / "__init__.py"
        if path.exists():
            sizes.append((sum(1 for _ in path.open(encoding="utf-8")), str(path.relative_to(repo))))
    sizes.sort(reverse=True)
    return {
        "repo": str(repo),
        "modules": len(mods),
        "arrows_nmt_to_smt_features": [f"{a} -> {b}" for a, b in wrong],
        "cycles": strongly_connected(graph, mods),
        "crossing_file_pairs": len(crossing),
        "crossing_smt_files": len({a for a, _ in crossing}),
        "nmt_modules_reached": dict(sorted(reached.items())),
        "nmt_modules_reached_beyond_basics": face,
        "crossing_pairs_beyond_basics": [f"{a} -> {b}" for a, b in crossing if b in face],
        "largest_files": sizes[:10],
        "files_over_400_lines": [f"{p} ({n})" for n, p in sizes if n > 400],
        "smt_features_files": sum(1 for _, p in sizes if p.startswith("smt_features")),
        "rooms": {floor: rooms(graph, floor) for floor in ("nmt", "smt_features")},
        "contracts": contracts(repo),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    result = measure(Path(args.repo).resolve())
    print(f"{result['repo']}: {result['modules']} modules")
    print(f"arrows nmt -> smt_features: {len(result['arrows_nmt_to_smt_features'])}")
    for a in result["arrows_nmt_to_smt_features"]:
        print(f"  {a}")
    print(f"import cycles (strongly connected groups): {len(result['cycles'])}")
    for c in result["cycles"]:
        print(f"  {' <-> '.join(c)}")
    print(f"file pairs crossing the floors (smt_features -> nmt): {result['crossing_file_pairs']} "
          f"from {result['crossing_smt_files']} smt_features files")
    for mod, n in result["nmt_modules_reached"].items():
        print(f"  {n:3d} -> {mod}")
    beyond = result["crossing_pairs_beyond_basics"]
    print(f"file pairs reaching nmt beyond the basics ({', '.join(BASICS)}): {len(beyond)}")
    for pair in beyond:
        print(f"  {pair}")
    print("largest files: " + ", ".join(f"{p} ({n})" for n, p in result["largest_files"]))
    print(f"files over 400 lines: {len(result['files_over_400_lines'])}")
    for floor, r in result["rooms"].items():
        print(f"{floor}: {len(r['rooms'])} rooms, {len(r['arrows'])} arrows between rooms, {r['floors']} floors "
              "(room: modules, floor; 1 = the bottom)")
        print("  " + ", ".join(f"{room} {n} ({r['floor_of_room'].get(room, '?')})" for room, n in r["rooms"].items()))
    c = result["contracts"]
    if "error" in c:
        print(f"import-linter contracts: not measured ({c['error']})")
    else:
        print(f"import-linter contracts: {c['kept']} kept, {c['broken']} broken")
        for line in c["contracts"]:
            print(f"  {line}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure the import graph of nmt/ and smt_features/: wrong-way arrows, cycles, floor crossings, file sizes.

Reads the code with grimp (import-linter's graph builder), imports inside functions included, for any
checkout: ``python benchmarks/import_graph.py [REPO_DIR] [--json OUT]`` (default: this repository).
Reports, in the units of the architecture issue:
  - arrows ``nmt`` → ``smt_features`` (module pairs),
  - import cycles: strongly connected groups of modules (size ≥ 2),
  - file pairs crossing the floors (an ``smt_features`` module importing an ``nmt`` module) and which
    ``nmt`` modules they reach (the basics vs the neural face ``nmt.scoring``),
  - the largest files (lines) and how many exceed 400 lines.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import grimp

BASICS = ("nmt.data.io", "nmt.config", "nmt.errors", "nmt.formats", "nmt.perplexity", "nmt.paths", "nmt.logs",
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
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

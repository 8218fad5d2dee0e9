"""The layering contracts of pyproject.toml ([tool.importlinter]), checked with import-linter."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.exists():
        pytest.fail(f"{exe} missing: import-linter is a dev dependency (make setup installs it)")
    proc = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout and "KEPT" in proc.stdout


def _private_names_reached_across_modules(root: Path) -> list[str]:
    """``from our.module import _name`` and ``imported._name`` where ``_name`` is not a module of its own."""
    import ast

    def is_module(dotted: str) -> bool:
        p = root / Path(*dotted.split("."))
        return p.with_suffix(".py").exists() or (p / "__init__.py").exists() or any(p.parent.glob(p.name + ".*.so"))

    def ours(module: str) -> bool:
        return module.split(".")[0] in ("nmt", "smt_features")

    found = []
    for path in sorted([*root.glob("nmt/**/*.py"), *root.glob("smt_features/**/*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and ours(node.module):
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and not is_module(f"{node.module}.{alias.name}"):
                        found.append(f"{path.relative_to(root)}:{node.lineno}: from {node.module} import {alias.name}")
                    imported.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                imported.update(a.asname or a.name.split(".")[0] for a in node.names if ours(a.name))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in imported):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_private_name_is_used_across_modules(tmp_path: Path) -> None:
    assert _private_names_reached_across_modules(ROOT) == []
    # the check itself sees both forms
    (tmp_path / "nmt").mkdir()
    (tmp_path / "nmt" / "a.py").write_text("def _helper():\n    pass\n")
    (tmp_path / "nmt" / "b.py").write_text("from nmt.a import _helper\nfrom nmt import a\na._helper()\n")
    assert len(_private_names_reached_across_modules(tmp_path)) == 2

"""Read a recipe's config.yaml for its shell script: one value, or a section as command-line flags.

    config_value.py FILE[:SECTION] KEY [KEY...]   the value at SECTION.KEY.KEY... (a list: one item a line;
                                                  null: nothing)
    config_value.py --flags FILE:SECTION          the section as flags: --key value (one word a line;
                                                  true: the bare flag, false: nothing, a list: its items)
Recipes call it through ``config_value`` of ``recipes/lib/common.sh``; a missing file, section or key
stops with ``config_value.py: FILE: no KEY in SECTION`` (exit 1).
"""
from __future__ import annotations

import sys
from typing import Any

import yaml


def _lookup(spec: str, keys: list[str]) -> Any:
    path, _, section = spec.partition(":")
    with open(path, encoding="utf-8") as fh:
        value: Any = yaml.safe_load(fh)
    where = "the file"
    for key in ([section] if section else []) + keys:
        if not isinstance(value, dict) or key not in value:
            raise SystemExit(f"config_value.py: {path}: no {key} in {where}")
        value, where = value[key], key
    return value


def _flags(section: dict) -> list[str]:
    words: list[str] = []
    for key, value in section.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            words += [flag, *map(str, value)]
        elif value is not False:
            words += [flag, str(value)]
    return words


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--flags":
        words = _flags(_lookup(argv[1], []))
    elif len(argv) >= 2 and not argv[0].startswith("-"):
        value = _lookup(argv[0], argv[1:])
        words = [str(v) for v in value] if isinstance(value, list) else [] if value is None else [str(value)]
    else:
        raise SystemExit(__doc__.split("\n\n")[1])
    sys.stdout.write("".join(f"{w}\n" for w in words))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

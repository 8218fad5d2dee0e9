"""Read a recipe's config.yaml for its shell script: one value, or a section as command-line flags.

    config_value.py FILE[:SECTION] KEY [KEY...]   the value at SECTION.KEY.KEY... (a list: one item a line;
                                                  null: nothing)
    config_value.py --flags FILE:SECTION          the section as flags: --key value (one word a line;
                                                  true: the bare flag, false: nothing, a list: its items)
    config_value.py --dump FILE                   every node of FILE for ``config_load`` of common.sh
                                                  (NUL-separated records; see `_dump`)
Recipes call it through ``config_value`` of ``recipes/lib/common.sh``; a missing file, section or key
stops with ``config_value.py: FILE: no KEY in SECTION`` (exit 1). After ``config_load FILE`` the shell
answers the same questions from memory, without a Python process per value.
"""
from __future__ import annotations

import sys
from typing import Any, Iterator

import yaml

# _dump's record separators: between a node's keys, and the mark of a mapping's own record
KEY_SEP = "\x1f"
MAPPING = "\x1e"


def _load(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except OSError as exc:
        raise SystemExit(f"config_value.py: {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else path
        raise SystemExit(f"config_value.py: {where}: not YAML ({getattr(exc, 'problem', None) or exc})") from None


def _lookup(spec: str, keys: list[str]) -> Any:
    path, _, section = spec.partition(":")
    value = _load(path)
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


def _words(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [] if value is None else [str(value)]


def _lines(words: list[str]) -> str:
    return "".join(f"{w}\n" for w in words)


def _nodes(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(key path, what config_value prints) for every node under `value`. A mapping's own record is MAPPING,
    then "=" and what --flags prints for it, or "?" when --flags is config_value.py's to answer (a key that
    is not a string). Only string keys have records: a lookup's keys are strings."""
    if isinstance(value, dict):
        plain = all(isinstance(key, str) for key in value)
        yield path, MAPPING + ("=" + _lines(_flags(value)) if plain else "?")
        for key, child in value.items():
            if isinstance(key, str):
                yield from _nodes(child, path + KEY_SEP + key)
    else:
        yield path, _lines(_words(value))


def _dump(path: str) -> str:
    """Records KEYPATH NUL TEXT NUL for the whole file (KEYPATH: FILE, then KEY_SEP and each key), then
    KEY_SEP "end" NUL NUL: the reader knows the dump is whole."""
    records = [f"{key}\0{text}\0" for key, text in _nodes(_load(path), path)]
    return "".join(records) + f"{KEY_SEP}end\0\0"


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--dump":
        sys.stdout.write(_dump(argv[1]))
        return 0
    if len(argv) == 2 and argv[0] == "--flags":
        words = _flags(_lookup(argv[1], []))
    elif len(argv) >= 2 and not argv[0].startswith("-"):
        words = _words(_lookup(argv[0], argv[1:]))
    else:
        raise SystemExit(__doc__.split("\n\n")[1])
    sys.stdout.write(_lines(words))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The Python steps of device_batch.sh (a machine with no install of this package: python3 -m entry points).

    device_tools.py bin DIR              DIR/<console script> for each entry point of pyproject.toml
    device_tools.py xz-to-gz SRC DST     decompress an xz file into a gzip one (level 1)
    device_tools.py models CONFIG        the names of CONFIG's `models`, one a line
    device_tools.py columns SUMMARY      how many columns smt-rescore appended (its .rescore.json)
"""
from __future__ import annotations

import gzip
import json
import lzma
import os
import shutil
import sys
import tomllib

import yaml


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "bin":
        with open("pyproject.toml", "rb") as fh:
            scripts = tomllib.load(fh)["project"]["scripts"]
        os.makedirs(argv[1], exist_ok=True)
        for name, target in scripts.items():
            module, func = target.split(":")
            path = os.path.join(argv[1], name)
            with open(path, "w", encoding="utf-8") as out:
                out.write(f"#!/usr/bin/env bash\nexec python3 -c 'import sys; from {module} import {func}; "
                          f"sys.exit({func}(sys.argv[1:]))' \"$@\"\n")
            os.chmod(path, 0o755)
    elif len(argv) == 3 and argv[0] == "xz-to-gz":
        with lzma.open(argv[1]) as src, gzip.open(argv[2], "wb", 1) as dst:
            shutil.copyfileobj(src, dst)
    elif len(argv) == 2 and argv[0] == "models":
        with open(argv[1], encoding="utf-8") as fh:
            print(*yaml.safe_load(fh)["models"], sep="\n")
    elif len(argv) == 2 and argv[0] == "columns":
        with open(argv[1], encoding="utf-8") as fh:
            print(len(json.load(fh)["columns_appended"]))
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Copy a moses.ini with one weight changed (e.g. a feature score's weight set to 0 before MERT).

    set_weight.py IN.ini OUT.ini FEATURE INDEX VALUE     e.g. TranslationModel0 -1 0   (INDEX: Python, -1 = last)

Reads and writes through ``smt_features.model.moses_ini`` (``read_moses_ini``, ``MosesConfig.write``), so
every other line is written as that module formats it.
"""
from __future__ import annotations

import sys

from smt_features.model.moses_ini import read_moses_ini


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        raise SystemExit(__doc__.split("\n\n")[1])
    src, dst, feature, index, value = argv
    cfg = read_moses_ini(src)
    if feature not in cfg.weights:
        raise SystemExit(f"set_weight.py: {src}: no weights of {feature}")
    cfg.weights[feature][int(index)] = float(value)
    cfg.write(dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``nmt-evaluate`` on several Moses-tokenized French outputs in one process (common.sh ``evaluate_outputs``):
``import sacremoses`` (its detokenizer; about 0.6 s on a slow 2-core CPU) and the interpreter's start are paid
once per recipe step instead of once per set. Each set is ``nmt-evaluate``'s own ``cli_main`` with ``--hyp HYP
[--detruecase] --detokenize fr --detok-out OUT --ref REF --name NAME --json JSON``: the same printed line, files
and error messages as one ``nmt-evaluate`` call per set.

    evaluate_sets.py [--detruecase] HYP OUT REF NAME JSON [HYP OUT REF NAME JSON ...]

Stops at the first set that fails, with its exit status (the sets before it are written).
"""
from __future__ import annotations

import sys
from collections.abc import Sequence

from nmt.cli.evaluate import cli_main as nmt_evaluate

FIELDS = 5  # HYP OUT REF NAME JSON


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    detruecase = ["--detruecase"] if args[:1] == ["--detruecase"] else []
    sets = args[len(detruecase):]
    if not sets or len(sets) % FIELDS:
        print(f"evaluate_sets.py: expected [--detruecase] then groups of HYP OUT REF NAME JSON, got {len(sets)} "
              f"argument(s)", file=sys.stderr)
        return 2
    for i in range(0, len(sets), FIELDS):
        hyp, out, ref, name, json_out = sets[i:i + FIELDS]
        status = nmt_evaluate(["--hyp", hyp, *detruecase, "--detokenize", "fr", "--detok-out", out, "--ref", ref,
                               "--name", name, "--json", json_out])
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Valid and test perplexity of trained LMs: ``nmt-lm-eval`` on each split (and, for a stream-trained model,
again with the sentences independent), all in one process so that torch starts once, not 2-4 times per model.

    recipes/ptb_lm/evaluate.py --model DIR --name NAME [--model DIR --name NAME ...] [--threads N]

Writes DIR/valid.json, DIR/test.json (+ DIR/{valid,test}.sentence.json for a stream-trained model) for each
model, in the order given, and prints nmt-lm-eval's lines, exactly as the separate calls did; stops at the first
failing call, with its exit status.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from nmt.cli.lm_eval import cli_main as lm_eval


def runs(model: Path, name: str, threads: int, regime: str) -> list[list[str]]:
    """The nmt-lm-eval argument lists, in the recipe's order."""
    out = []
    for split in ("valid", "test"):
        common = ["--model", str(model), "--split", split, "--threads", str(threads)]
        out.append([*common, "--name", f"{name} {split}", "--json", str(model / f"{split}.json")])
        if regime == "stream":
            out.append([*common, "--regime", "sentence", "--name", f"{name} {split} (sentences independent)",
                        "--json", str(model / f"{split}.sentence.json")])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, type=Path, action="append", help="an nmt-lm-train folder (repeatable)")
    p.add_argument("--name", required=True, action="append", help="the model's name in the output lines (one per "
                                                                    "--model, in the same order)")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    if len(args.name) != len(args.model):
        p.error(f"{len(args.model)} --model but {len(args.name)} --name: give one name per model")
    regimes = []
    for model in args.model:  # every model checked before any is evaluated
        config = model / "config.yaml"
        if not config.is_file():
            print(f"evaluate.py: {config}: not found (train the model first)", file=sys.stderr)
            return 2
        regimes.append((yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("data", {}).get("regime",
                                                                                                      "sentence"))
    for model, name, regime in zip(args.model, args.name, regimes):
        for call in runs(model, name, args.threads, regime):
            status = lm_eval(call)
            if status:
                return status
    return 0


if __name__ == "__main__":
    sys.exit(main())

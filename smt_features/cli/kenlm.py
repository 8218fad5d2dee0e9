"""``smt-kenlm train|eval|bounds``: estimate (text → ARPA → binary) or evaluate a KenLM model, or write its bounds.

Each sub-command takes ``--config YAML[:SECTION]`` and the flags of its config
(:class:`smt_features.train.kenlm_build.KenLMTrainConfig`, :class:`smt_features.model.kenlm.KenLMEvalConfig`,
:class:`smt_features.train.kenlm_bounds.KenLMBoundsConfig`).
"""
from __future__ import annotations

import argparse
import sys

from nmt.core import config as C
from nmt.core.errors import command
from nmt.core.logs import setup_logging
from smt_features.model.kenlm import KenLMEvalConfig, evaluate_lm
from smt_features.train.kenlm_bounds import KenLMBoundsConfig, bounds_command
from smt_features.train.kenlm_build import KenLMTrainConfig, train_lm

SUBCOMMANDS = {"train": (KenLMTrainConfig, train_lm, "lmplz (modified Kneser-Ney) then build_binary"),
               "eval": (KenLMEvalConfig, evaluate_lm, "perplexity of a text (N = words + one </s> per sentence)"),
               "bounds": (KenLMBoundsConfig, bounds_command, "the decoder's per-word LM bounds from an ARPA file, "
                                                             "written once to X.ubounds (a faster decoder start)")}


@command("smt-kenlm")
def cli_main(argv: list[str] | None = None) -> int:
    """``smt-kenlm train|eval|bounds``: estimate (text → ARPA → binary) or evaluate a KenLM model, or write its bounds."""
    parser = argparse.ArgumentParser(prog="smt-kenlm", description=cli_main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (cls, _, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--config", help="YAML file (or FILE:SECTION) with option: value lines, same names as the "
                       "flags; flags given on the command line win")
        C.add_dataclass_args(p, cls)
    args = parser.parse_args(argv)
    cls, run, _ = SUBCOMMANDS[args.command]
    setup_logging(verbose=True, fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = C.build(cls, args, C.load_yaml(args.config) if args.config else {}, source=str(args.config))
    return run(cfg, config_path=args.config)


if __name__ == "__main__":
    sys.exit(cli_main())

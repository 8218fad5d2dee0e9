"""Rewrite the names of nmt's flat modules and of the flat tests (before issue 24's rooms) to their new places.

For a branch started before the move: merge it, then ``python scripts/rooms_imports.py --tree`` (every tracked
source and text file but the few that name the old modules on purpose, :data:`KEEP`), or give files. It rewrites
dotted names (``nmt.lm_task`` -> ``nmt.lm.task``, ``from nmt import config`` -> ``from nmt.core import
config``), paths (``nmt/train.py`` -> ``nmt/training/trainer.py``, ``tests/test_mert.py`` ->
``tests/smt/tune/test_mert.py``) and the test helpers' imports (``from conftest import refused`` -> ``from
tests.refusal import refused``). Logger names are left alone (they are what log lines show). A new test
module still has to be moved into the folder of its room by hand (``git mv``), and a moved test that finds
``tests/data`` through ``Path(__file__)`` must use ``tests.TEST_DATA`` instead. ``--check``: list the files
that would change, change nothing (exit status 1 if any).
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: files that name the old modules on purpose: two benchmarks that measure a checkout from before the move,
#: this rewrite and its test
KEEP = {"benchmarks/beam_search_speed.py", "benchmarks/import_graph.py", "scripts/rooms_imports.py",
        "tests/scripts/test_rooms_imports.py"}
SUFFIXES = (".py", ".md", ".sh", ".toml", ".yaml", ".yml", ".txt")

#: old module under nmt. -> its room
MODULES = {
    "config": "core.config", "errors": "core.errors", "logs": "core.logs", "paths": "core.paths",
    "perplexity": "core.perplexity", "run_checks": "core.run_checks", "data.io": "core.io", "formats": "core.formats",
    "prepare": "data.prepare", "prepare_truecase": "data.prepare_truecase", "truecase_run": "data.truecase_run",
    "combine_corpus": "data.combine_corpus", "synthetic": "data.synthetic",
    "train": "training.trainer", "train_config": "training.config", "checkpoint": "training.checkpoint",
    "precision": "training.precision", "distributed": "training.distributed",
    "weight_average": "training.weight_average", "pair_stream": "training.pair_stream",
    **{f"lm_{x}": f"lm.{x}" for x in ("task", "data", "stream", "loading", "scoring", "evaluation", "training")},
    "translation_data": "translation.data", "translation_training": "translation.training",
    "translate": "translation.translate", "rescoring_engine": "translation.rescoring_engine",
    "model_io": "translation.model_io", "search": "translation.search", "evaluate": "translation.evaluate",
}
#: old test module (tests/NAME.py) -> its folder under tests/
TESTS = {
    **dict.fromkeys(["test_data_io", "test_perplexity", "test_phrase_table"], "nmt/core"),
    **dict.fromkeys(["test_corpora", "test_tokenize_vocab", "test_prepare", "test_truecase", "test_synthetic"],
                    "nmt/data"),
    **dict.fromkeys(["test_gru_encdec", "test_gru_recurrence", "test_rnnsearch", "test_lm_models"], "nmt/models"),
    **dict.fromkeys(["test_train", "test_checkpoint_security", "test_ddp", "test_stream_data"], "nmt/training"),
    "test_lm_cli": "nmt/lm", "test_batched_search": "nmt/translation", "test_fairseq_plugin": "nmt/fairseq_plugin",
    **dict.fromkeys(["test_rmn_attention", "test_plot_attention"], "nmt/analysis"),
    **dict.fromkeys(["test_binaries", "test_nothing_lost_nmt"], "nmt/cli"),
    **dict.fromkeys(["test_align", "test_phrases", "test_phrase_inputs_stream", "test_kenlm", "test_reordering_table"],
                    "smt/train"),
    **dict.fromkeys(["test_binary_table", "test_nbest_ini"], "smt/model"),
    **dict.fromkeys(["test_decoder", "test_fast_search", "test_lexical_reordering"], "smt/decode"),
    **dict.fromkeys(["test_mert", "test_tune_loop", "test_tune_optimizers"], "smt/tune"),
    **dict.fromkeys(["test_rescore", "test_rescore_safety", "test_rerank", "rescore_fixtures"], "smt/neural"),
    "test_report": "smt/report", "test_smt_valid_odd_input": "smt/cli",
    **dict.fromkeys(["test_recipes", "test_wmt14_recipe"], "recipes"), "test_gpu_check": "benchmarks",
    "serve/serve_fixtures": "smt/serve",
    **{f"serve/test_serve_{x}": "smt/serve" for x in ("api", "http", "load", "page", "process")},
}
#: what tests/conftest.py gave before, and where it is now
HELPERS = {"refused": "tests.refusal", "make_toy_data": "tests.toy_corpus", "SRC_WORDS": "tests.toy_corpus",
           "DICTIONARY": "tests.toy_corpus", "assert_same_checkpoint": "tests.nmt.checkpoints",
           "teacher_forced_log_probs": "tests.smt.neural.rescore_fixtures"}


def _alternation(names) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


DOTTED = re.compile(r"(?<![\w.])nmt\.(" + _alternation(MODULES) + r")(?!\w)")
FROM_NMT = re.compile(r"\bfrom nmt import (" + _alternation(m for m in MODULES if "." not in m) + r")\b")
SLASHED = re.compile(r"(?<![\w/])nmt/(" + _alternation(m.replace(".", "/") for m in MODULES) + r")(\.py|/)")
TEST_PATH = re.compile(r"(?<![\w/])tests/(" + _alternation(TESTS) + r")\.py\b")
TEST_IMPORT = re.compile(r"^(\s*)from (" + _alternation(n.split("/")[-1] for n in TESTS) + r") import ", re.M)
PROBE = re.compile(r"^(\s*)from probe(\.\w+)? import ", re.M)
CONFTEST = re.compile(r"^(\s*)from conftest import ([\w, ]+)$", re.M)


def _folder_of(module: str) -> str:
    return next(folder for name, folder in TESTS.items() if name.split("/")[-1] == module)


def _helpers(m: re.Match) -> str:
    indent, names = m.group(1), [n.strip() for n in m.group(2).split(",")]
    by_module: dict[str, list[str]] = {}
    for name in names:
        by_module.setdefault(HELPERS.get(name, "tests.conftest"), []).append(name)
    return "\n".join(f"{indent}from {mod} import {', '.join(ns)}" for mod, ns in by_module.items())


def rewrite_line(line: str) -> str:
    if "getLogger(" in line or "logger=" in line:
        return line
    line = FROM_NMT.sub(lambda m: "from nmt.{} import {}".format(*MODULES[m.group(1)].rsplit(".", 1)), line)
    line = DOTTED.sub(lambda m: "nmt." + MODULES[m.group(1)], line)
    line = SLASHED.sub(lambda m: "nmt/" + MODULES[m.group(1).replace("/", ".")].replace(".", "/") + m.group(2), line)
    return TEST_PATH.sub(lambda m: f"tests/{TESTS[m.group(1)]}/{m.group(1).split('/')[-1]}.py", line)


def rewrite(text: str) -> str:
    text = "".join(rewrite_line(line) for line in text.splitlines(keepends=True))
    text = CONFTEST.sub(_helpers, text)
    text = PROBE.sub(lambda m: f"{m.group(1)}from tests.probe{m.group(2) or ''} import ", text)
    return TEST_IMPORT.sub(
        lambda m: f"{m.group(1)}from tests.{_folder_of(m.group(2)).replace('/', '.')}.{m.group(2)} import ", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--tree", action="store_true", help="every tracked source and text file of the repository "
                        "(but KEEP), besides the files given")
    parser.add_argument("--check", action="store_true", help="list the files that would change; change nothing")
    args = parser.parse_args(argv)
    files = list(args.files)
    if args.tree:
        tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        files += [str(ROOT / f) for f in tracked.split("\n") if f.endswith(SUFFIXES) and f not in KEEP
                  and not f.startswith("tests/data/")]
    changed = []
    for name in files:
        path = Path(name)
        if not path.is_file():
            continue
        try:
            old = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(old)
        if new != old:
            changed.append(name)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for name in changed:
        print(name)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())

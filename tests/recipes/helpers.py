"""What the recipe tests share: running a recipe as a user does, the corpus and tool checks, the baseline's
quality floor, and :class:`QuickExperiment` (one --quick experiment built stage by stage by several tests)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests import ROOT

MT_DATA = Path(os.environ.get("MT_DATA", ROOT.parent / "shared" / "data"))
ENV = {**os.environ, "MT_DATA": str(MT_DATA), "PYTHON": sys.executable, "BIN": str(Path(sys.executable).parent),
       "OMP_NUM_THREADS": "1"}


def run(*args: str, timeout: int = 600) -> str:
    proc = subprocess.run(["bash", *args], capture_output=True, text=True, env=ENV, timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    return proc.stdout


def need(*paths: str) -> None:
    missing = [p for p in paths if not (MT_DATA / p).exists()]
    if missing:
        pytest.skip(f"corpus files not found under {MT_DATA}: {missing}")


def copy_through(work: Path, split: str) -> tuple[float, float, int]:
    """sacreBLEU (BLEU, chrF) of the *untranslated* source against the reference the recipe scored
    with (``WORK/text/SPLIT.ref.fr``, the raw French, its first N lines), computed here: the floor a
    translation pipeline must clear. The source is the raw English of ``WORK/data/SPLIT.en``
    (``nmt-prepare``'s copy), line-aligned with the raw French of ``WORK/data/SPLIT.fr``."""
    import sacrebleu

    ref = (work / "text" / f"{split}.ref.fr").read_text(encoding="utf-8").splitlines()
    src = (work / "data" / f"{split}.en").read_text(encoding="utf-8").splitlines()[:len(ref)]
    assert (work / "data" / f"{split}.fr").read_text(encoding="utf-8").splitlines()[:len(ref)] == ref
    assert len(src) == len(ref) > 0
    return (sacrebleu.corpus_bleu(src, [ref]).score, sacrebleu.corpus_chrf(src, [ref]).score, len(ref))


def check_baseline(smt: Path, split: str, min_bleu_gain: float) -> float:
    """The tuned phrase-based baseline (MERT run 1) on SPLIT: its recorded BLEU is what sacreBLEU gives
    its detokenized output here, and it beats a copy-through of the source by ``min_bleu_gain`` BLEU
    (and by chrF). Returns the baseline's BLEU."""
    import sacrebleu

    copy_bleu, copy_chrf, n = copy_through(smt, split)
    res = json.loads((smt / "tune.1" / f"{split}.scores.json").read_text())
    hyp = (smt / "tune.1" / f"{split}.fr").read_text(encoding="utf-8").splitlines()
    ref = (smt / "text" / f"{split}.ref.fr").read_text(encoding="utf-8").splitlines()
    assert res["num_sentences"] == len(hyp) == n
    assert res["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyp, [ref]).score, abs=1e-6)
    assert res["bleu"] > copy_bleu + min_bleu_gain, (split, res["bleu"], copy_bleu)
    assert res["chrf"] > copy_chrf, (split, res["chrf"], copy_chrf)
    return res["bleu"]


def need_tools() -> None:
    from smt_features.train.kenlm_build import KenLMNotFoundError, find_kenlm_binary

    try:
        find_kenlm_binary("lmplz")
    except KenLMNotFoundError as err:
        pytest.skip(str(err))


class QuickExperiment:
    """One experiment recipe's --quick work folder, shared by the tests of its stages (a module fixture).

    ``run(systems)`` calls the recipe with ``--systems``: the first call builds what those rows need, a later
    call with more rows reuses every finished step (the recipes' EMS-style reuse) and adds the rest. Each
    test asks for the rows it checks, so any one of them also runs alone (it then builds its stages itself).
    The tests of one experiment are one file, and ``make test`` runs ``--dist loadfile``: they run in one
    process, in file order, on one folder. (``--dist loadgroup`` with ``xdist_group`` marks did not group
    them with pytest 9.2 and pytest-xdist 3.8: the tests of a group ran on both workers.)"""

    def __init__(self, work: Path, *recipe: str):
        self.work, self.recipe = work, recipe

    def run(self, systems: str, *, report: bool = False, timeout: int = 900) -> str:
        """The recipe with ``--systems SYSTEMS`` (and ``--no-report`` unless ``report``: the last stage makes it)."""
        return run(*self.recipe, "--quick", "--mert-runs", "1", "--threads", "1", "--work", str(self.work),
                   "--systems", systems, *(() if report else ("--no-report",)), timeout=timeout)


def table_row(table: str, system: str) -> float:
    row = re.search(rf"^\| {re.escape(system)} \| ([0-9.]+) ± ", table, re.M)
    assert row and 0.0 <= float(row.group(1)) <= 100.0, system
    return float(row.group(1))

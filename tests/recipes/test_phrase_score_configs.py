"""recipes/phrase_score/*.yaml: every row the ablation lists exists, names trained models, and carries flags
that nmt-train and smt-rescore accept (run.sh would otherwise fail hours in, after the models trained)."""
from __future__ import annotations

import re
import shlex

import pytest
import yaml

from nmt.core import config as C
from nmt.models.gru_encdec import GRUEncDecConfig
from nmt.models.registry import ArchConfig
from nmt.training.config import LoopConfig, OptimConfig
from nmt.translation.data import TranslationDataConfig
from smt_features.neural.rescore_config import RescoreConfig
from tests import ROOT

CONFIGS = sorted((ROOT / "recipes" / "phrase_score").glob("*.yaml"))
TRAIN_CLASSES = [TranslationDataConfig, ArchConfig, GRUEncDecConfig, OptimConfig, LoopConfig]


def test_there_are_configs() -> None:
    assert {p.name for p in CONFIGS} >= {"multi30k.yaml", "news.yaml"}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_rows_name_models_and_valid_flags(path) -> None:
    cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    listed = [(name, "") for key in ("rows", "rows_more") for name in cfg["ablation"].get(key, [])]
    listed += [(name, "_quick") for name in cfg["ablation"].get("rows_quick", [])]
    assert listed
    for name, suffix in listed:
        rows, models = cfg["rows" + suffix], cfg["models" + suffix]
        assert name in rows, f"{path.name}: ablation lists row {name!r}, rows{suffix} has none"
        row = rows[name]
        for key in ("model", "reverse_model"):
            if key in row:
                assert row[key] in models, f"{path.name}: row {name} names model {row[key]!r}, not in models{suffix}"
        rescore = ["--table", "t", "--model", "m", "--output", "o", *shlex.split(row.get("rescore", ""))]
        args, _ = C.parse_args([RescoreConfig], rescore)  # argparse exits on an unknown flag or a bad value
        C.build(RescoreConfig, args, {})
        if "average" in row:  # checkpoint names of the model folder(s), at least two, each once
            names = row["average"].split()
            assert len(names) >= 2 and len(set(names)) == len(names), f"{path.name}: row {name}: average {names}"
            assert all(re.fullmatch(r"best|last|epoch[1-9][0-9]*", n) for n in names), f"{path.name}: row {name}"
            epochs = [int(n[5:]) for n in names if n.startswith("epoch")]
            if epochs:  # kept by the model's training, and within its epochs
                train = models[row["model"]].get("train", "")
                assert "--keep-epochs true" in train, f"{path.name}: row {name}"
                assert max(epochs) <= int(re.search(r"--max-epochs (\d+)", train).group(1)), f"{path.name}: row {name}"
    for name, model in {**cfg["models"], **cfg.get("models_quick", {})}.items():
        assert model["vocab"] == "full" or int(model["vocab"]) > 0, name
        args, _ = C.parse_args(TRAIN_CLASSES, ["--data-dir", "d", *shlex.split(model.get("train", ""))])
        C.build(LoopConfig, args, {})
        C.build(OptimConfig, args, {})


def test_a_misspelt_flag_is_caught(capsys) -> None:
    with pytest.raises(SystemExit):
        C.parse_args([RescoreConfig], ["--table", "t", "--model", "m", "--output", "o", "--checkpont", "last"])

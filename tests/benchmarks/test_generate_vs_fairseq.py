"""benchmarks/generate_vs_fairseq.py on a toy RNNsearch: its export (fairseq dictionaries + checkpoint of the same
weights), then nmt-translate and fairseq-generate (beam 5, batch 32, the script's flags) give the same 1-best for
every sentence. Skips without fairseq, fails under CI (tests/nmt/fairseq_plugin's ``missing()`` convention)."""
from __future__ import annotations

import importlib.util
import sys

import pytest
import torch
from tests import ROOT
from tests.nmt.fairseq_plugin.test_fairseq_plugin import SKIP_REASON, missing
from tests.toy_corpus import DICTIONARY

from nmt.cli.train import cli_main as train_main

SCRIPT = ROOT / "benchmarks" / "generate_vs_fairseq.py"


@pytest.fixture(scope="module")
def bench():
    try:
        import fairseq.models  # noqa: F401
        import nmt.fairseq_plugin  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install
        missing(f"{SKIP_REASON} ({type(exc).__name__}: {exc})")
    spec = importlib.util.spec_from_file_location("generate_vs_fairseq", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    for tool in ("fairseq-generate", "fairseq-preprocess"):
        if not (module.BIN / tool).exists():
            missing(f"{tool} not found next to {sys.executable}")
    return module


def test_export_and_both_generators_agree(bench, toy_data, tmp_path, one_torch_thread):
    model = tmp_path / "m"
    assert train_main(["--data-dir", str(toy_data), "--out-dir", str(model), "--arch", "rnnsearch", "--preset",
                       "rnnsearch-tiny", "--optimizer", "adam", "--lr", "0.02", "--batch-size", "16",
                       "--max-updates", "150", "--eval-every", "150", "--save-every", "150", "--progress", "false",
                       "--threads", "1"]) == 0
    src = (toy_data / "val.tok.en").read_text(encoding="utf-8").split("\n")[:12]
    work = tmp_path / "work"
    exp = bench.export(model, work, src)
    assert exp.arch == "rnnsearch_tiny"
    # the fairseq checkpoint holds our weights under core.<name>; its dictionaries keep our word ids
    ours_state = torch.load(exp.model_checkpoint, map_location="cpu", weights_only=True)["model"]
    fs_state = torch.load(exp.checkpoint, map_location="cpu", weights_only=False)["model"]
    assert set(fs_state) == {f"core.{k}" for k in ours_state}
    assert all(torch.equal(fs_state[f"core.{k}"], v) for k, v in ours_state.items())
    tgt_words = (work / "dict.tgt.txt").read_text(encoding="utf-8").split("\n")
    assert [w.split()[0] for w in tgt_words if w] == \
        [line.split("\t")[0] for line in (model / "tgt_vocab.tsv").read_text(encoding="utf-8").splitlines()[4:]]

    ours = bench.run_ours(model, work / f"test.{bench.SRC}", work / "ours.txt", 1)
    theirs = bench.run_fairseq(exp, len(src), 1)
    assert ours.hyps == theirs.hyps
    assert ours.own > 0 and theirs.own > 0 and ours.wall > ours.own
    # not a degenerate model (e.g. every 1-best the same): many sentences translated word for word
    right = sum(h.split() == [DICTIONARY[w] for w in s.split()] for h, s in zip(ours.hyps, src))
    assert len(set(ours.hyps)) >= 6 and right >= 5, list(zip(src, ours.hyps))

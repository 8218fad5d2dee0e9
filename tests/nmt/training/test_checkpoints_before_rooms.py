"""Checkpoints written before ``nmt/`` was laid out in rooms (tests/data/checkpoints_before_rooms, see its
README) still load with ``torch.load(weights_only=True)``, score what they scored then, and resume."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from nmt.cli.train import cli_main as train_main
from nmt.scoring import LMScorer, PairScorer
from tests import TEST_DATA

pytestmark = pytest.mark.usefixtures("one_torch_thread")

OLD = TEST_DATA / "checkpoints_before_rooms"


def _lines(name: str) -> list[list[str]]:
    return [line.split() for line in (OLD / "data" / name).read_text(encoding="utf-8").splitlines()[:4]]


SRC = _lines("val.tok.en") + [["s1", "zzz"]]  # the last pair has an unknown word on each side
TGT = _lines("val.tok.fr") + [["t1", "yyy"]]

# printed by the code of commit ff6575e (before the move) for these pairs and checkpoints
PAIR_LOG_PROBS = [-15.969911336898804, -13.259869813919067, -16.858413696289062, -9.650013327598572,
                  -9.758559226989746]
PAIR_COUNTS = [(5, 0, 0), (5, 0, 0), (7, 0, 0), (4, 0, 0), (3, 1, 1)]  # (tgt_tokens, src_unk, tgt_unk)
NBEST = [[((), -1.4773882627487183), (("t4",), -3.351412534713745)],
         [((), -1.4445183277130127), (("t4",), -3.314486503601074)]]
LM_LOG_PROBS = [-12.912652134895325, -12.407837510108948, -16.82609224319458, -9.554336428642273,
                -7.957850933074951]
LM_TOKEN_LOG_PROBS = [-2.9234108924865723, -2.493971347808838, -3.1391372680664062, -2.7580597400665283,
                      -1.59807288646698]


def close(values) -> pytest.approx:
    return pytest.approx(values, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("model, task", [("encdec", "translation"), ("lm", "lm")])
def test_plain_data_only(model: str, task: str) -> None:
    state = torch.load(OLD / model / "checkpoint_last.pt", weights_only=True)
    assert {"model", "optimizer", "rng", "train_state", "config", "vocab"} <= set(state)
    assert state["config"]["task"] == task


def test_translation_model_scores_as_before() -> None:
    scorer = PairScorer.load(OLD / "encdec")
    scores = scorer.score_pairs(SRC, TGT)
    assert [s.log_prob for s in scores] == close(PAIR_LOG_PROBS)
    assert [(s.tgt_tokens, s.src_unk, s.tgt_unk) for s in scores] == PAIR_COUNTS
    nbest = scorer.generate(SRC[:2], nbest=2, beam_size=3)
    assert [[words for words, _ in hyps] for hyps in nbest] == [[words for words, _ in hyps] for hyps in NBEST]
    assert [[lp for _, lp in hyps] for hyps in nbest] == [close([lp for _, lp in hyps]) for hyps in NBEST]


def test_language_model_scores_as_before() -> None:
    scorer = LMScorer.load(OLD / "lm")
    assert scorer.score_sentences(TGT) == close(LM_LOG_PROBS)
    assert scorer.token_logprobs(TGT[:1])[0].tolist() == close(LM_TOKEN_LOG_PROBS)


def test_translation_training_resumes(tmp_path: Path) -> None:
    """nmt-train --resume continues the old run (model, Adam state, RNG, data position) from update 12 to 16;
    the dev loss at 16 and the parameters are those the code before the move reached from the same checkpoint."""
    out = tmp_path / "encdec"
    shutil.copytree(OLD / "encdec", out)
    assert train_main(["--data-dir", str(OLD / "data"), "--preset", "tiny", "--optimizer", "adam", "--lr", "0.01",
                       "--batch-size", "16", "--max-updates", "16", "--save-every", "16", "--eval-every", "16",
                       "--patience", "0", "--seed", "1", "--threads", "1", "--out-dir", str(out),
                       "--progress", "false", "--resume"]) == 0
    state = torch.load(out / "checkpoint_last.pt", weights_only=True)
    assert state["train_state"]["step"] == 16
    dev = [(h["step"], h["dev_loss"]) for h in state["train_state"]["history"] if "dev_loss" in h]
    assert dev == [(12, close(2.676327632023738)), (16, close(2.5234178396371694))]  # 12: the old run's
    assert state["train_state"]["best_dev"] == close(2.5234178396371694)
    assert sum(float(v.double().sum()) for v in state["model"].values()) == close(18.133685457636602)

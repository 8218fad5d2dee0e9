"""Checkpoints load with torch.load(weights_only=True); old-format, truncated and foreign files are refused."""
from __future__ import annotations

import logging
import pickle
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.nmt.checkpoints import assert_same_checkpoint
from tests.toy_corpus import make_toy_data

from nmt.training import checkpoint as ckpt
from nmt.training.checkpoint import TRUST_ENV, load_checkpoint, save_checkpoint
from nmt.cli.lm_train import cli_main as lm_train_main
from nmt.cli.translate import cli_main as translate_main
from nmt.cli.train import cli_main as train_main
from nmt.core.errors import UsageError
from nmt.lm.loading import load_language_model
from nmt.translation.model_io import load_translation_model


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(TRUST_ENV, raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def encdec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("encdec")
    data = make_toy_data(root / "data", n_train=60, n_dev=8)
    out = root / "m"
    assert train_main(["--data-dir", str(data), "--out-dir", str(out), "--preset", "tiny", "--optimizer", "adam",
                       "--batch-size", "16", "--progress", "false", "--threads", "1", "--max-updates", "6",
                       "--eval-every", "3", "--save-every", "3", "--average", "on_stall"]) == 0
    return out


def _lm_corpus(root: Path) -> dict[str, Path]:
    rng = random.Random(0)
    root.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, n in (("train", 60), ("valid", 8)):
        paths[split] = root / f"{split}.txt"
        paths[split].write_text("\n".join(" ".join(f"w{rng.randrange(8)}" for _ in range(rng.randint(1, 6)))
                                          for _ in range(n)) + "\n", encoding="utf-8")
    return paths


@pytest.fixture(scope="module", params=["sentence", "stream"])
def lm(request, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp(f"lm-{request.param}")
    corpus = _lm_corpus(root / "data")
    out = root / "m"
    assert lm_train_main(["--train", str(corpus["train"]), "--valid", str(corpus["valid"]), "--arch", "lstm",
                          "--emb-dim", "8", "--hidden-dim", "8", "--out-dir", str(out), "--threads", "1",
                          "--progress", "false", "--optimizer", "adam", "--batch-size", "4", "--bptt", "5",
                          "--regime", request.param, "--max-updates", "6", "--save-every", "3"]) == 0
    return out


def _checkpoints(folder: Path) -> list[Path]:
    found = sorted(folder.glob("checkpoint_*.pt"))
    assert found
    return found


def test_encdec_checkpoints_load_with_weights_only(encdec: Path) -> None:
    for path in _checkpoints(encdec):
        state = torch.load(path, map_location="cpu", weights_only=True)
        assert state["config"]["task"] == "translation"
        assert isinstance(state["rng"]["numpy"], dict)
    assert load_translation_model(encdec).model is not None


def test_lm_checkpoints_load_with_weights_only(lm: Path) -> None:
    for path in _checkpoints(lm):
        state = torch.load(path, map_location="cpu", weights_only=True)
        assert state["config"]["task"] == "lm"
    assert load_language_model(lm).model is not None


def test_rng_state_round_trip_is_exact(tmp_path: Path) -> None:
    np.random.seed(3)
    random.seed(3)
    torch.manual_seed(3)
    np.random.standard_normal()  # leaves a cached gaussian in numpy's legacy state
    path = tmp_path / "rng.pt"
    save_checkpoint({"rng": ckpt.rng_state()}, path)
    expected = (np.random.standard_normal(4), np.random.randint(0, 1 << 30, 5), random.random(), torch.rand(3))
    np.random.seed(99)
    random.seed(99)
    torch.manual_seed(99)
    ckpt.set_rng_state(torch.load(path, weights_only=True)["rng"])
    again = (np.random.standard_normal(4), np.random.randint(0, 1 << 30, 5), random.random(), torch.rand(3))
    assert np.array_equal(expected[0], again[0]) and np.array_equal(expected[1], again[1])
    assert expected[2] == again[2] and torch.equal(expected[3], again[3])


def test_save_makes_plain_and_refuses_objects(tmp_path: Path) -> None:
    path = tmp_path / "c.pt"
    save_checkpoint({"x": np.float64(0.5), "p": tmp_path, "n": [np.int64(2)]}, path)
    assert torch.load(path, weights_only=True) == {"x": 0.5, "p": str(tmp_path), "n": [2]}
    with pytest.raises(TypeError, match=r"checkpoint\['bad'\]"):
        save_checkpoint({"bad": object()}, tmp_path / "d.pt")
    assert not (tmp_path / "d.pt").exists()


def _old_format(new: Path, dest: Path) -> Path:
    """What the previous version wrote: numpy's RNG state as its tuple (an ndarray and a str)."""
    state = torch.load(new, map_location="cpu", weights_only=True)
    state["rng"]["numpy"] = np.random.get_state()
    torch.save(state, dest)
    return dest


def test_old_format_is_refused_unless_trusted(encdec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    old = _old_format(encdec / "checkpoint_last.pt", tmp_path / "old.pt")
    with pytest.raises(UsageError, match=TRUST_ENV) as info:
        load_checkpoint(old)
    assert str(old) in str(info.value) and "refusing" in str(info.value)
    with caplog.at_level(logging.WARNING, logger="nmt.checkpoint"):
        state = load_checkpoint(old, trust=True)
    assert str(old) in caplog.text and "weights_only=False" in caplog.text
    ckpt.set_rng_state(state["rng"])  # the old tuple form still restores
    monkeypatch.setenv(TRUST_ENV, "1")
    assert load_checkpoint(old)["train_state"]["step"] == 6


def test_plain_pickle_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "pickled.pt"
    with open(path, "wb") as fh:
        pickle.dump({"model": np.zeros(3)}, fh)
    with pytest.raises(UsageError, match="refusing") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("content", ["truncated", "text", "empty"])
def test_unreadable_file_names_the_file(content: str, encdec: Path, tmp_path: Path) -> None:
    path = tmp_path / "checkpoint_last.pt"
    if content == "truncated":
        data = (encdec / "checkpoint_last.pt").read_bytes()
        path.write_bytes(data[:len(data) // 2])
    elif content == "text":
        path.write_text("hello world\n")
    else:
        path.write_bytes(b"")
    for trust in (False, True):
        with pytest.raises(UsageError, match="not a readable checkpoint") as info:
            load_checkpoint(path, trust=trust)
        assert str(path) in str(info.value)


def test_cli_refuses_old_checkpoint_without_traceback(encdec: Path, tmp_path: Path, capsys) -> None:
    model = tmp_path / "model"
    model.mkdir()
    for vocab in encdec.glob("*_vocab.*"):
        (model / vocab.name).write_bytes(vocab.read_bytes())
    old = _old_format(encdec / "checkpoint_last.pt", model / "checkpoint_last.pt")
    src = tmp_path / "in.txt"
    src.write_text("a b\n", encoding="utf-8")
    capsys.readouterr()
    code = translate_main(["--model", str(model), "--input", str(src), "--output", str(tmp_path / "out.txt")])
    err = capsys.readouterr().err
    assert code == 2 and str(old) in err and TRUST_ENV in err and "Traceback" not in err


def test_resume_from_old_format_only_when_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    data = make_toy_data(tmp_path / "data", n_train=60, n_dev=8)

    def run(out: Path, updates: int, *extra: str) -> int:
        return train_main(["--data-dir", str(data), "--out-dir", str(out), "--preset", "tiny", "--dropout", "0.1",
                           "--optimizer", "adam", "--batch-size", "16", "--progress", "false", "--threads", "1",
                           "--save-every", "2", "--max-updates", str(updates), *extra])

    full, split = tmp_path / "full", tmp_path / "split"
    assert run(full, 6) == 0
    assert run(split, 3) == 0
    last = split / "checkpoint_last.pt"
    _old_format(last, tmp_path / "old.pt").replace(last)
    capsys.readouterr()
    assert run(split, 6, "--resume") == 2
    err = capsys.readouterr().err
    assert str(last) in err and TRUST_ENV in err and "Traceback" not in err
    monkeypatch.setenv(TRUST_ENV, "1")
    assert run(split, 6, "--resume") == 0
    monkeypatch.delenv(TRUST_ENV)
    assert_same_checkpoint(full / "checkpoint_last.pt", last)  # the resumed run writes the new format
    torch.load(last, weights_only=True)

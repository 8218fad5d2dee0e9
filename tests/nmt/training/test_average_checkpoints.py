"""nmt-average-checkpoints: the mean of saved checkpoints, loadable as a model; what it refuses."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from nmt.cli.average_checkpoints import cli_main as average_main
from nmt.cli.train import cli_main as train_main
from nmt.core.errors import UsageError
from nmt.training.average_checkpoints import average_states
from nmt.training.checkpoint import load_checkpoint, save_checkpoint
from nmt.translation.model_io import load_translation_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _state(weight: list[float], half: list[float], count: int, step: int) -> dict:
    return {"model": {"w": torch.tensor(weight, dtype=torch.float32), "h": torch.tensor(half, dtype=torch.float16),
                      "n": torch.tensor([count])},
            "optimizer": {"state": {}}, "rng": {}, "average": {"count": 3},
            "train_state": {"step": step}, "config": {"task": "translation", "arch": "rnnenc", "model": {"d": 2}},
            "vocab": {"src": {"fingerprint": "a"}, "tgt": {"fingerprint": "b"}}}


def test_the_mean_of_each_float_tensor_in_its_own_dtype(tmp_path: Path) -> None:
    paths = []
    for k, (w, h, step) in enumerate([([1.0, 2.0], [0.5], 10), ([2.0, 4.0], [1.5], 20), ([0.0, 3.0], [1.0], 30)]):
        paths.append(tmp_path / f"c{k}.pt")
        save_checkpoint(_state(w, h, 7, step), paths[-1])
    out = average_states(paths)
    assert torch.equal(out["model"]["w"], torch.tensor([1.0, 3.0])) and out["model"]["w"].dtype == torch.float32
    assert torch.equal(out["model"]["h"], torch.tensor([1.0], dtype=torch.float16))
    assert torch.equal(out["model"]["n"], torch.tensor([7]))            # an integer buffer: kept as it is
    assert [e["step"] for e in out["averaged_from"]] == [10, 20, 30] and out["train_state"] == {"step": 30}
    assert not {"optimizer", "rng", "average"} & set(out)                 # a model to load, not a run to resume


@pytest.mark.parametrize("change, what", [
    (lambda s: s["model"].update(n=torch.tensor([8])), "integer tensor n differs"),
    (lambda s: s["model"].update(w=torch.zeros(3)), "parameter w"),
    (lambda s: s["model"].pop("h"), "parameter names differ"),
    (lambda s: s["config"]["model"].update(d=3), "'model' differs"),
    (lambda s: s["vocab"]["tgt"].update(fingerprint="c"), "vocabularies differ"),
])
def test_a_different_model_is_refused(tmp_path: Path, change, what: str) -> None:
    save_checkpoint(_state([1.0, 2.0], [0.5], 7, 1), tmp_path / "a.pt")
    other = _state([1.0, 2.0], [0.5], 7, 2)
    change(other)
    save_checkpoint(other, tmp_path / "b.pt")
    with pytest.raises(UsageError, match=what):
        average_states([tmp_path / "a.pt", tmp_path / "b.pt"])


def test_vocabularies_are_compared_by_fingerprint_not_path(tmp_path: Path) -> None:
    """A model folder copied elsewhere and trained on: its new checkpoints name the copied vocabulary files, the
    old ones the originals; the same fingerprints are the same vocabularies."""
    a, b = _state([1.0, 2.0], [0.5], 7, 1), _state([3.0, 2.0], [0.5], 7, 2)
    a["vocab"]["src"]["path"], b["vocab"]["src"]["path"] = "/old/src_vocab.tsv", "/copy/src_vocab.tsv"
    save_checkpoint(a, tmp_path / "a.pt")
    save_checkpoint(b, tmp_path / "b.pt")
    assert torch.equal(average_states([tmp_path / "a.pt", tmp_path / "b.pt"])["model"]["w"], torch.tensor([2.0, 2.0]))


def test_epoch_ends_averaged_and_loaded_as_a_model(toy_data: Path, tmp_path: Path, capsys) -> None:
    """Two epoch ends kept by nmt-train --keep-epochs, averaged by name in the model folder: the file loads
    with the translation loader (vocabularies found beside it) and holds the mean of the two."""
    model = tmp_path / "model"
    assert train_main(["--data-dir", str(toy_data), "--out-dir", str(model), "--preset", "tiny", "--batch-size", "16",
                       "--max-epochs", "2", "--keep-epochs", "true", "--progress", "false", "--threads", "1"]) == 0
    out = model / "checkpoint_avg12.pt"
    assert average_main(["--model", str(model), "--inputs", "epoch1", "epoch2", "--output", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["inputs"] == [str(model / "checkpoint_epoch1.pt"), str(model / "checkpoint_epoch2.pt")]
    e1, e2 = (load_checkpoint(model / f"checkpoint_epoch{k}.pt")["model"] for k in (1, 2))
    loaded = load_translation_model(out)
    assert loaded.path == out
    for name, tensor in loaded.model.state_dict().items():
        if tensor.is_floating_point():
            assert torch.equal(tensor, ((e1[name].double() + e2[name].double()) / 2).float()), name
    assert not torch.equal(e1["src_embed.weight"], e2["src_embed.weight"])  # the two really differ
    # never overwritten: a second call is refused and leaves the file as it was
    before = out.read_bytes()
    assert average_main(["--model", str(model), "--inputs", "epoch1", "epoch2", "--output", str(out)]) == 2
    assert "exists; refusing to overwrite" in capsys.readouterr().err and out.read_bytes() == before

"""nmt.training.optimizers against torch.optim: the same parameters bit for bit after many CPU updates (with
weight decay, a changing lr and a missing gradient), checkpoints that move both ways, and no torch._dynamo."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from nmt.training import optimizers
from tests import ROOT

CASES = [
    ("SGD", dict(lr=0.7), dict(lr=0.7)),
    ("SGD", dict(lr=0.5, weight_decay=1e-2), dict(lr=0.5, weight_decay=1e-2)),
    ("Adadelta", dict(lr=1.0, rho=0.95, eps=1e-6), dict(lr=1.0, rho=0.95, eps=1e-6)),
    ("Adadelta", dict(lr=0.5, rho=0.9, eps=1e-5, weight_decay=1e-3), dict(lr=0.5, rho=0.9, eps=1e-5, weight_decay=1e-3)),
    ("Adam", dict(lr=2e-3, betas=(0.0, 0.999)), dict(lr=2e-3, betas=(0.0, 0.999))),
    ("Adam", dict(lr=1e-2, betas=(0.9, 0.98), eps=1e-7, weight_decay=1e-2),
     dict(lr=1e-2, betas=(0.9, 0.98), eps=1e-7, weight_decay=1e-2)),
]


def _model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Embedding(11, 6), torch.nn.LSTM(6, 5, batch_first=True))


def _train(model: torch.nn.Module, opt, steps: range, seed: int) -> None:
    emb, lstm = model
    for i in steps:
        gen = torch.Generator().manual_seed(seed * 1000 + i)
        x = torch.randint(0, 11, (3, 4), generator=gen)
        out, _ = lstm(emb(x))
        loss = out.pow(2).mean() * (i + 1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if i % 3 == 2:
            emb.weight.grad = None                                 # a parameter without a gradient this update
        for group in opt.param_groups:
            group["lr"] = group["lr"] * 0.9                        # the trainer's schedule changes lr in place
        opt.step()


@pytest.mark.parametrize("name,native_kw,torch_kw", CASES)
def test_bit_identical_to_torch_optim(name: str, native_kw: dict, torch_kw: dict) -> None:
    ours, theirs = _model(1), _model(1)
    _train(ours, getattr(optimizers, name)(ours.parameters(), **native_kw), range(12), seed=5)
    _train(theirs, getattr(torch.optim, name)(theirs.parameters(), **torch_kw), range(12), seed=5)
    for (key, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert torch.equal(a, b), key


@pytest.mark.parametrize("name,native_kw,torch_kw", CASES)
def test_checkpoints_move_both_ways(name: str, native_kw: dict, torch_kw: dict) -> None:
    """6 updates in one implementation, its state dict loaded by the other, 6 more: the same parameters as 12
    updates in torch.optim alone."""
    reference = _model(2)
    _train(reference, getattr(torch.optim, name)(reference.parameters(), **torch_kw), range(12), seed=7)
    for first, second in ((optimizers, torch.optim), (torch.optim, optimizers)):
        model = _model(2)
        kw = native_kw if first is optimizers else torch_kw
        opt = getattr(first, name)(model.parameters(), **kw)
        _train(model, opt, range(6), seed=7)
        saved = opt.state_dict()
        lr = saved["param_groups"][0]["lr"]
        other = getattr(second, name)(model.parameters(), **(torch_kw if second is torch.optim else native_kw))
        other.load_state_dict(saved)
        assert other.param_groups[0]["lr"] == lr
        _train(model, other, range(6, 12), seed=7)
        for (key, a), (_, b) in zip(model.state_dict().items(), reference.state_dict().items()):
            assert torch.equal(a, b), (first.__name__, key)


def test_refuses_another_optimizers_state() -> None:
    model = _model(3)
    adam = optimizers.Adam(model.parameters())
    _train(model, adam, range(2), seed=1)
    with pytest.raises(ValueError, match="lacks"):
        optimizers.Adadelta(model.parameters()).load_state_dict(adam.state_dict())


def test_refuses_settings_it_does_not_implement() -> None:
    model = _model(4)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _train(model, sgd, range(2), seed=1)
    with pytest.raises(ValueError, match="momentum"):
        optimizers.SGD(model.parameters(), lr=0.1).load_state_dict(sgd.state_dict())


def test_training_does_not_import_dynamo() -> None:
    """The point of the module: a training step loads no torch._dynamo (torch.optim's does)."""
    code = ("import sys, torch\n"
            "from nmt.training.optimizers import Adam\n"
            "m = torch.nn.Linear(3, 2); opt = Adam(m.parameters())\n"
            "m(torch.ones(1, 3)).sum().backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)\n"
            "opt.step(); opt.zero_grad(); print('torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False"]


def test_nmt_train_does_not_import_dynamo(tmp_path) -> None:
    """A whole nmt-train run (the trainer, clipping, checkpoints) stays free of torch._dynamo: 2-3.5 s per process."""
    from tests.toy_corpus import make_toy_data

    data = make_toy_data(tmp_path / "data")
    code = ("import sys\n"
            "from nmt.cli.train import cli_main\n"
            f"status = cli_main(['--data-dir', {str(data)!r}, '--out-dir', {str(tmp_path / 'm')!r}, '--preset', 'tiny',"
            " '--max-updates', '2', '--progress', 'false', '--threads', '1'])\n"
            "print(status, 'torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0", "False"]
    assert (tmp_path / "m" / "checkpoint_last.pt").is_file()


def test_build_optimizer_picks_the_implementation() -> None:
    from nmt.training.config import OptimConfig, build_optimizer

    params = list(_model(5).parameters())
    for name, cls in (("adadelta", "Adadelta"), ("adam", "Adam"), ("sgd", "SGD")):
        assert type(build_optimizer(OptimConfig(optimizer=name), params)) is getattr(optimizers, cls)
        assert type(build_optimizer(OptimConfig(optimizer=name, optimizer_impl="torch"), params)) \
            is getattr(torch.optim, cls)
    with pytest.raises(ValueError, match="optimizer_impl"):
        OptimConfig(optimizer_impl="fused")

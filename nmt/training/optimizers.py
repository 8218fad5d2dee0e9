"""The three update rules the presets use — SGD, Adadelta (Zeiler, 2012) and Adam (Kingma & Ba, 2015) — with
``torch.optim``'s surface and checkpoint format, without importing ``torch._dynamo``.

Why not ``torch.optim`` itself: its ``Optimizer`` imports ``torch._dynamo`` on the first
``add_param_group`` and again in every ``step``. That import takes 1.6–3.5 s on our 2-core CI machines, in
every training process (``nmt-train``, ``nmt-lm-train``, the recipes' helpers); see ``docs/training.md``.

Each ``step`` performs the same tensor operations, in the same order, as ``torch.optim``'s single-tensor
path (the one it takes for CPU tensors), so on the CPU the parameters after any number of updates are
bit-identical to ``torch.optim``'s (``tests/nmt/training/test_optimizers.py``). On CUDA, ``torch.optim``
takes its multi-tensor path; the rules are the same. ``--optimizer-impl torch`` uses ``torch.optim``.

``state_dict()`` is ``torch.optim``'s format (``state`` keyed by parameter index, with ``step`` a float32
scalar tensor and the same buffer names; ``param_groups`` with ``params`` as indices), so checkpoints move
both ways between the two implementations.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

IMPLS = ("native", "torch")


class Optimizer(ABC):
    """One parameter group; ``param_groups[0]`` holds the hyper-parameters (``lr`` may be changed between
    steps, as the trainer's schedule does), ``state`` the per-parameter buffers."""

    buffers: tuple[str, ...] = ()
    #: torch.optim's settings that this rule is (momentum 0, no AMSGrad, ...): written into ``state_dict()`` so
    #: that torch.optim loads it, and checked when loading one of torch.optim's
    torch_settings: dict[str, Any] = {"maximize": False, "foreach": None, "differentiable": False}

    def __init__(self, params: Iterable[Tensor], **defaults: Any):
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        if any(not isinstance(p, Tensor) for p in params):
            raise TypeError("optimizer params must be tensors")
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = [{"params": params, **defaults}]
        self.state: dict[Tensor, dict[str, Tensor]] = {}

    def _state(self, p: Tensor) -> dict[str, Tensor]:
        """The parameter's buffers, made (zeros, ``step`` 0) on its first update, as torch.optim does."""
        st = self.state.get(p)
        if st is None:
            st = {"step": torch.tensor(0.0, dtype=torch.float32)}
            for name in self.buffers:
                st[name] = torch.zeros_like(p, memory_format=torch.preserve_format)
            self.state[p] = st
        return st

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_()
                    p.grad.requires_grad_(False)
                    p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
                self._update(p, p.grad, group)

    @abstractmethod
    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        """One parameter's update from its gradient, in place, under ``group``'s hyper-parameters."""

    # -- checkpoints: torch.optim's format ---------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            settings = {k: v for k, v in group.items() if k != "params"}
            groups.append({**settings, **self.torch_settings, "params": ids})
        state = {index[id(p)]: dict(st) for p, st in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, saved: dict[str, Any]) -> None:
        """Loads this class's or ``torch.optim``'s state dict of the same optimiser over the same parameters:
        the buffers are cast to each parameter's device and dtype (``step`` stays a float32 scalar)."""
        groups = saved["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        params = [p for g in self.param_groups for p in g["params"]]
        if [len(g["params"]) for g in groups] != [len(g["params"]) for g in self.param_groups]:
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        for group in groups:
            other = {k: group[k] for k, v in self.torch_settings.items() if k in group and group[k] != v}
            if other:
                raise ValueError(f"loaded optimizer state has settings {other} that {type(self).__name__} "
                                 f"does not implement (it is {self.torch_settings})")
        self.state = {}
        for key, st in saved["state"].items():
            p = params[int(key)]
            missing = [name for name in ("step", *self.buffers) if name not in st]
            if missing:
                raise ValueError(f"loaded optimizer state lacks {missing}: not a {type(self).__name__} state")
            self.state[p] = {name: (value.to(dtype=torch.float32, device="cpu") if name == "step"
                                    else value.to(device=p.device, dtype=p.dtype))
                             for name, value in st.items() if isinstance(value, Tensor)}
        for mine, theirs in zip(self.param_groups, groups):
            mine.update({k: v for k, v in theirs.items() if k != "params" and k in self.defaults})


class SGD(Optimizer):
    """θ ← θ − lr (g + weight_decay θ): plain SGD, no momentum (the RMN paper's setting)."""

    torch_settings = {**Optimizer.torch_settings, "momentum": 0, "dampening": 0, "nesterov": False, "fused": None}

    def __init__(self, params: Iterable[Tensor], lr: float, weight_decay: float = 0.0):
        super().__init__(params, lr=lr, weight_decay=weight_decay)

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        p.add_(grad, alpha=-group["lr"])

    def load_state_dict(self, saved: dict[str, Any]) -> None:
        saved = {**saved, "state": {}}  # torch.optim writes {"momentum_buffer": None} per parameter
        super().load_state_dict(saved)


class Adadelta(Optimizer):
    """Zeiler (2012), Algorithm 1, with lr scaling the step (1.0 in the paper):
    E[g²] ← ρ E[g²] + (1−ρ) g²;  Δ = −√(E[Δ²] + ε) / √(E[g²] + ε) · g;  E[Δ²] ← ρ E[Δ²] + (1−ρ) Δ²;  θ ← θ + lr Δ."""

    buffers = ("square_avg", "acc_delta")
    torch_settings = {**Optimizer.torch_settings, "capturable": False}

    def __init__(self, params: Iterable[Tensor], lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0):
        super().__init__(params, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        st = self._state(p)
        rho, eps = group["rho"], group["eps"]
        st["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        square_avg, acc_delta = st["square_avg"], st["acc_delta"]
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        p.add_(delta, alpha=-group["lr"])


class Adam(Optimizer):
    """Kingma & Ba (2015), Algorithm 1 (L2 weight decay added to the gradient, as torch.optim.Adam):
    m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;  θ ← θ − lr/(1−β₁ᵗ) · m / (√v/√(1−β₂ᵗ) + ε)."""

    buffers = ("exp_avg", "exp_avg_sq")
    torch_settings = {**Optimizer.torch_settings, "amsgrad": False, "capturable": False, "fused": None,
                      "decoupled_weight_decay": False}

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(params, lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        st = self._state(p)
        beta1, beta2 = group["betas"]
        st["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = st["step"].item()
        step_size = group["lr"] / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(group["eps"])
        p.addcdiv_(exp_avg, denom, value=-step_size)

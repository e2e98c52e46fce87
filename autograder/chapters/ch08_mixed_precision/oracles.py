"""Oracles for 08_mixed_precision: what a step and a trained checkerboard model must give, and the judgments.

The step's oracle is the same MLP in float64, without autocast: its loss and gradients at the case's
weights, from which the judge computes the SGD update (plain, or clipped). bfloat16 keeps 8 significant
bits, so an update is compared in relative L2 norm. The checkerboard's oracle is the guide's target board.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder.chapters.ch08_mixed_precision.inputs import Case, low_dtype, outputs64
from autograder.judging.authoring import fail, nonfinite, show

# Over 300 random cases the reference solution's update error had a median of 0.5 % and a maximum of
# 12 % (a ReLU flipping near zero); every targeted mistake is off by a factor of 4 or more, an error
# of at least 75 %.
UPDATE_RTOL = 0.35
LOSS_RTOL = 0.03

STEP_HINT = ("Let the scaler apply the update: scaler.step(optimizer) unscales the gradients and skips the "
             "step when they hold inf or NaN; then scaler.update() adjusts the scale.")


def reference_step(case: Case) -> tuple[float, dict[str, Tensor]]:
    """The MSE loss and its gradients at the case's weights: float64, no autocast."""
    params = {name: t.double().requires_grad_(True) for name, t in case.params.items()}
    loss = F.mse_loss(outputs64(replace(case, params=params)), case.targets.double())
    grads = torch.autograd.grad(loss, list(params.values()))
    return float(loss.detach()), dict(zip(params, grads, strict=True))


def grad_norm(grads: dict[str, Tensor]) -> float:
    return math.sqrt(sum(float((g**2).sum()) for g in grads.values()))


def checker(width: int, height: int, freq: int) -> Tensor:
    """The guide's target: a [height, width] board of 0/1 squares, `freq` squares across."""
    h = torch.arange(width).reshape([1, width]).mul(freq / width / 2.0).fmod(1.0).gt(0.5)
    v = torch.arange(height).reshape([height, 1]).mul(freq / height / 2.0).fmod(1.0).gt(0.5)
    return h.logical_xor(v).float()


def _flat(tensors: dict[str, Tensor], names: list[str]) -> Tensor:
    return torch.cat([tensors[n].detach().double().reshape(-1) for n in names])


def expect_finite_parameters(after: dict[str, Tensor], case: Case, device: str,
                             max_grad_norm: float | None = None) -> dict[str, Tensor]:
    """The parameters after the step: the model's own names, float32 and finite."""
    names = list(case.params)
    if set(after) != set(names) or any(after[n].dtype != torch.float32 for n in names):
        fail(case.describe(device, max_grad_norm), {}, "float32 parameters " + ", ".join(names),
             {n: str(t.dtype) for n, t in after.items()}, "the model's parameters changed name or dtype",
             "Leave the model's parameters in float32: autocast casts inside the forward pass only; never "
             "call model.half() or model.to(dtype).")
    for name in names:
        found = nonfinite(after[name])
        if found is not None:
            fail(case.describe(device, max_grad_norm), {}, "finite parameters after a step with finite gradients",
                 f"{name} = {show(after[name])}", f"{name} holds {found} after the step", STEP_HINT)
    return after


def expect_update(after: dict[str, Tensor], case: Case, want: dict[str, Tensor], device: str, problem: str,
                  hint: str, max_grad_norm: float | None = None) -> None:
    """The parameters moved by `want` (judge's float64 update), within UPDATE_RTOL in relative L2 norm."""
    names = list(case.params)
    expect_finite_parameters(after, case, device, max_grad_norm)
    got = _flat(after, names) - _flat(case.params, names)
    expected = _flat(want, names)
    error = float((got - expected).norm() / expected.norm())
    if not error <= UPDATE_RTOL:
        fail(case.describe(device, max_grad_norm), {}, expected, got,
             f"{problem}: the update (parameters after minus before, all parameters flattened) is "
             f"{float(got.norm()) / float(expected.norm()):.4g} times as large as expected and off by "
             f"{error:.0%} (tolerance {UPDATE_RTOL:.0%} for {str(low_dtype(device)).removeprefix('torch.')})",
             hint)


def expect_loss(returned: Any, returned_type: str, case: Case, device: str, hint: str) -> None:
    """The returned loss: a Python float within LOSS_RTOL of the float64 oracle's MSE."""
    loss, _ = reference_step(case)
    if not isinstance(returned, float):
        fail(case.describe(device), {}, f"a Python float close to {loss:.6g}", returned_type,
             f"returned a {returned_type}, not a float", hint)
    if not abs(returned - loss) <= LOSS_RTOL * abs(loss):
        found = f"the returned loss is {returned}, not a finite number: " if not math.isfinite(returned) else ""
        fail(case.describe(device), {"inputs": case.inputs, "targets": case.targets}, loss, returned,
             f"{found}the returned loss is not the MSE of the model's outputs (float64 oracle; tolerance "
             f"{LOSS_RTOL:.0%})", hint)

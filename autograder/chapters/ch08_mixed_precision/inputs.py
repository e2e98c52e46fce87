"""Inputs for 08_mixed_precision: one training step's case, drawn from the check's `rng`, and the guide's grid.

A Case is what the judge hands the student's amp_train_step through the harness: an MLP's weights, a
batch, SGD's learning rate and a GradScaler's settings. It sends them as a StepCase record (the harness
builds the model, optimizer and scaler from it in the student's process) and names them in messages.

Three variants make the right and the wrong steps differ measurably (the checks replay both on the same case):
near_case puts the targets just off the model's outputs, so that the 16-bit rounding of the outputs moves the
loss and the update by percents; odd_scale_case starts the scaler at a scale that is not a power of two, so that
a backward pass of the scaled loss rounds differently from one of the unscaled loss; overflow_case makes the
gradients large and the scale huge, so that the scaled gradients overflow and the step must be skipped.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TypedDict

import torch
from torch import Tensor

SIZE, FREQ, STEPS = 16, 4, 300  # train_checkerboard: a 16x16 grid, a 4x4 board, 300 steps


def low_dtype(device: str) -> torch.dtype:
    """The autocast dtype this course uses: bfloat16 on CPU, float16 on CUDA."""
    return torch.float16 if device == "cuda" else torch.bfloat16


class StepCase(TypedDict):
    sizes: list[int]  # the MLP's layer widths
    params: dict[str, Tensor]  # its weights, by parameter name
    inputs: Tensor
    targets: Tensor
    lr: float
    scaler: dict[str, float]  # GradScaler(device, **scaler)


@dataclass
class Case:
    """One step's inputs: an MLP's weights, a batch, SGD's learning rate and a GradScaler's settings."""

    sizes: list[int]
    params: dict[str, Tensor]
    inputs: Tensor
    targets: Tensor
    lr: float
    scaler: dict[str, float] = field(default_factory=dict)

    def record(self) -> StepCase:
        """The case as the harness takes it."""
        return StepCase(sizes=self.sizes, params=self.params, inputs=self.inputs, targets=self.targets, lr=self.lr,
                        scaler=self.scaler)

    def call(self, device: str, max_grad_norm: float | None = None) -> str:
        clip = "" if max_grad_norm is None else f", max_grad_norm={max_grad_norm:.4g}"
        return (f"amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type={device!r}, "
                f"dtype=torch.{str(low_dtype(device)).removeprefix('torch.')}{clip})")

    def describe(self, device: str, max_grad_norm: float | None = None) -> str:
        """The call with its objects spelled out, for failure messages."""
        return (f"{self.call(device, max_grad_norm)}\n  model = MLP {self.sizes} (Linear, ReLU, ...) with the "
                f"judge's weights\n  optimizer = torch.optim.SGD(model.parameters(), lr={self.lr:g})\n"
                f"  scaler = torch.amp.GradScaler({device!r}, init_scale={self.scaler['init_scale']:g}, "
                f"backoff_factor={self.scaler['backoff_factor']:g}, growth_interval="
                f"{self.scaler['growth_interval']})\n  loss_fn = F.mse_loss")


def make_case(rng: torch.Generator) -> Case:
    def size(low: int, high: int) -> int:
        return int(torch.randint(low, high, (), generator=rng))

    sizes = [size(3, 9), size(16, 33), size(16, 33), size(2, 6)]
    params: dict[str, Tensor] = {}
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        params[f"{2 * i}.weight"] = torch.randn(fan_out, fan_in, generator=rng) / fan_in**0.5
        params[f"{2 * i}.bias"] = torch.randn(fan_out, generator=rng) * 0.1
    batch = size(8, 17)
    scaler = {"init_scale": float(2 ** size(8, 13)), "growth_factor": 2.0, "backoff_factor": 0.25,
              "growth_interval": 1000}
    return Case(sizes, params, torch.randn(batch, sizes[0], generator=rng),
                torch.randn(batch, sizes[-1], generator=rng), lr=0.05, scaler=scaler)


def outputs64(case: Case) -> Tensor:
    """The MLP's outputs at the case's weights and inputs, in float64."""
    h = case.inputs.double()
    layers = len(case.sizes) - 1
    for i in range(layers):
        h = h @ case.params[f"{2 * i}.weight"].double().T + case.params[f"{2 * i}.bias"].double()
        if i < layers - 1:
            h = h.relu()
    return h


NEAR = 0.01  # near_case: the targets' distance from the outputs (outputs are about 0.5 in size)


def near_case(rng: torch.Generator) -> Case:
    """A case whose targets are the float64 outputs plus NEAR * noise: the loss is made of small residuals, which
    rounding the outputs to 16 bits (autocast) changes by percents."""
    case = make_case(rng)
    noise = torch.randn(case.targets.shape, generator=rng, dtype=torch.float64)
    case.targets = (outputs64(case) + NEAR * noise).float()
    return case


def odd_scale_case(rng: torch.Generator) -> Case:
    """A case whose scaler starts at 2**k * (1 + m/128), m odd from 65 to 127: exact in float32, far from a power
    of two (the nearer, the fewer gradients round differently when scaled)."""
    case = make_case(rng)
    k, m = int(torch.randint(8, 13, (), generator=rng)), 2 * int(torch.randint(32, 64, (), generator=rng)) + 1
    case.scaler = {**case.scaler, "init_scale": 2.0**k * (1 + m / 128)}
    return case


OVERFLOW_SCALE = 2.0**127  # float32's largest power of two: any gradient of 2 or more overflows when scaled
OVERFLOW_TARGETS = 1e4  # the targets' size in overflow_case: its gradients are in the hundreds or more


def overflow_case(rng: torch.Generator) -> Case:
    """A case with targets far from the outputs (large gradients) and the scale at OVERFLOW_SCALE."""
    case = make_case(rng)
    case.targets = case.targets * OVERFLOW_TARGETS
    case.scaler = {**case.scaler, "init_scale": OVERFLOW_SCALE}
    return case


def grid(width: int, height: int) -> Tensor:
    """The guide's input: [2, height, width] coordinates in [0, 1)."""
    h = torch.arange(width).unsqueeze(0).repeat([height, 1]).div(width)
    v = torch.arange(height).unsqueeze(1).repeat([1, width]).div(height)
    return torch.stack([h, v], 0)

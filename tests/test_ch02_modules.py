"""Chapter 02: the solution earns full marks, the release 0, and each named
wrong implementation loses points on the check written to catch it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit import (
    TRAINING,
    assert_caught,
    grade_fast,
    write_submission,
)

CH = "02_modules"
# These checks train models: a call takes about a second on a busy machine, so allow more than
# the 5 s per call of tests.kit.FAST (real grading allows 20 s).


def affine(init: str = "nn.Parameter(torch.rand(1))", forward: str = "self.a * x + self.b") -> str:
    return f'''
class AffineScalar(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = {init}
        self.b = {init}

    def forward(self, x):
        return {forward}
'''


def regressor(name: str = "linear", forward: str = "self.linear(x.unsqueeze(1)).squeeze(1)") -> str:
    return f'''
class LinearRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.{name} = nn.Linear(1, 1)

    def forward(self, x):
        return {forward}
'''


def mlp(layers: str) -> str:
    return f"def make_mlp(in_features, hidden_features, out_features):\n    return nn.Sequential({layers})\n"


def train(optimizer: str = "torch.optim.SGD(model.parameters(), lr=lr)", steps: str = "steps",
          zero_grad: str = "optimizer.zero_grad()", result: str = "loss.item()") -> str:
    return f'''
def train(model, x, y, steps=1000, lr=0.01):
    optimizer = {optimizer}
    losses = []
    for _ in range({steps}):
        {zero_grad}
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return {result}
'''


MUTANTS = {
    # name: (cell, code, the check meant to catch it, a phrase its message must contain)
    "plain tensors, not nn.Parameter": ("AffineScalar", affine(init="torch.rand(1, requires_grad=True)"),
                                        "check_affine_parameters_registered", "parameters() is empty"),
    "parameters of shape []": ("AffineScalar", affine(init="nn.Parameter(torch.rand(()))"),
                               "check_affine_parameters_registered", "'a': []"),
    "a and b swapped": ("AffineScalar", affine(forward="self.b * x + self.a"), "check_affine_forward",
                        "values differ"),
    "no squeeze": ("LinearRegressor", regressor(forward="self.linear(x.unsqueeze(1))"),
                   "check_linear_regressor_forward", "squeeze(1)"),
    "Linear not named linear": ("LinearRegressor", regressor(name="fc", forward="self.fc(x[:, None])[:, 0]"),
                                "check_linear_regressor_structure", "submodule `linear`"),
    "missing ReLU": ("make_mlp", mlp("nn.Linear(in_features, hidden_features), "
                                     "nn.Linear(hidden_features, out_features)"),
                     "check_make_mlp_guide_layers", "collapse"),
    "the guide's sizes hard-coded": ("make_mlp", mlp("nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)"),
                                     "check_make_mlp_other_sizes", "differ in names or shapes"),
    "no zero_grad": ("train", train(zero_grad="pass"), "check_train_fits_line", "did not fit"),
    "steps and lr ignored": ("train", train(optimizer="torch.optim.SGD(model.parameters(), lr=0.01)",
                                            steps="1000"),
                             "check_train_follows_steps_and_lr", "did not fit"),
    "initial loss returned": ("train", train(result="losses[0].item()"), "check_train_returns_final_loss",
                              "not the loss at the end"),
    "loss tensor returned": ("train", train(result="loss"), "check_train_returns_final_loss", "not float"),
    "only a and b optimised": ("train", train(optimizer="torch.optim.SGD([model.a, model.b], lr=lr)"),
                               "check_train_any_module", "has no attribute 'a'"),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_wrong_implementation_loses_points_where_expected(tmp_path: Path, name: str) -> None:
    cell, code, check, phrase = MUTANTS[name]
    # The other answer cells stay as released: their checks fail fast, which keeps this test quick.
    g = grade_fast(write_submission(tmp_path, CH, {cell: code}), limits=TRAINING)
    assert_caught(g, name, check, phrase)

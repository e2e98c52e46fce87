"""Chapter 01: the solution earns full marks, the release 0, and each named
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

CH = "01_basics"
# These checks train models: a call takes about a second on a busy machine, so allow more than
# the 5 s per call of tests.kit.FAST (real grading allows 20 s).


BACKWARD = '''
def grad_of(fn, x):
    x.requires_grad_(True)
    fn(x).backward()
    return x.grad
'''
FLAG_LEFT_ON = '''
def grad_of(fn, x):
    x.requires_grad_(True)
    return torch.autograd.grad(fn(x), x)[0]
'''
FINITE_DIFFERENCES = '''
def grad_of(fn, x):
    eps = 1e-3
    flat = x.detach().reshape(-1)
    grad = torch.zeros_like(flat)
    for i in range(flat.numel()):
        step = torch.zeros_like(flat)
        step[i] = eps
        grad[i] = (fn((flat + step).reshape(x.shape)) - fn((flat - step).reshape(x.shape))) / (2 * eps)
    return grad.reshape(x.shape)
'''
FLOAT32_ALWAYS = '''
def grad_of(fn, x):
    x_ = x.detach().float().requires_grad_(True)
    return torch.autograd.grad(fn(x_), x_)[0]
'''

INTERPOLATE = '''
def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
    features = x[: degree + 1].unsqueeze(1) ** torch.arange(degree, -1, -1)
    return torch.linalg.solve(features, y[: degree + 1])
'''


def fit(powers: str = "torch.arange(degree, -1, -1)", optimizer: str = "torch.optim.Adam([w], lr=lr)",
        steps: str = "steps", result: str = "w.detach()") -> str:
    """The reference fit_polynomial with one piece swapped out."""
    return f'''
def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
    features = x.unsqueeze(1) ** {powers}
    w = torch.zeros(features.shape[1], requires_grad=True)
    opt = {optimizer}
    for _ in range({steps}):
        loss = F.mse_loss(features @ w, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {result}
'''


MUTANTS = {
    # name: (cell, code, the check meant to catch it, a phrase its message must contain)
    "backward() fills x.grad": ("grad_of", BACKWARD, "check_grad_of_leaves_x_grad_alone", "x.grad"),
    "requires_grad left on": ("grad_of", FLAG_LEFT_ON, "check_grad_of_keeps_requires_grad",
                              "x.requires_grad is True"),
    "finite differences": ("grad_of", FINITE_DIFFERENCES, "check_grad_of_analytic", "values differ"),
    "float32 gradient": ("grad_of", FLOAT32_ALWAYS, "check_grad_of_matches_torch_func", "dtype torch.float32"),
    "lowest power first": ("fit_polynomial", fit(result="w.detach().flip(0)"), "check_fit_polynomial_guide_example",
                           "reverse order"),
    "one coefficient short": ("fit_polynomial", fit(powers="torch.arange(degree - 1, -1, -1)"),
                              "check_fit_polynomial_degrees_1_and_3", "instead of [2]"),
    "too few steps": ("fit_polynomial", fit(steps="100"), "check_fit_polynomial_random_quadratics", "values differ"),
    "lr ignored": ("fit_polynomial", fit(optimizer="torch.optim.Adam([w], lr=0.1)"),
                   "check_fit_polynomial_uses_steps_and_lr", "values differ"),
    "through degree + 1 samples": ("fit_polynomial", INTERPOLATE, "check_fit_polynomial_noisy_data",
                                   "values differ"),
    "SGD instead of Adam": ("fit_polynomial", fit(optimizer="torch.optim.SGD([w], lr=lr)"),
                            "check_fit_polynomial_uses_steps_and_lr", "plain SGD"),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_wrong_implementation_loses_points_where_expected(tmp_path: Path, name: str) -> None:
    cell, code, check, phrase = MUTANTS[name]
    # The other answer cell stays as released: its checks fail fast, which keeps this test quick.
    g = grade_fast(write_submission(tmp_path, CH, {cell: code}), limits=TRAINING)
    assert_caught(g, name, check, phrase)

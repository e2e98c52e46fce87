"""Hidden checks for 07_numerical_stability: softmax and softmax_cross_entropy.

Oracles are torch's own softmax and log_softmax computed in float64 in the
judge. Random inputs come from `rng`, seeded by the grading's secret seed.
"""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from autograder.expect import CheckFailure, expect_tensor
from autograder.remote import Student

# -- the seam: typed adapters to the student's functions ----------------------


def run_softmax(student: Student, logits: Tensor, dim: int | None = None) -> Tensor:
    return student.call("softmax", logits) if dim is None else student.call("softmax", logits, dim=dim)


def run_xent(student: Student, labels: Tensor, logits: Tensor, dim: int | None = None) -> Tensor:
    if dim is None:
        return student.call("softmax_cross_entropy", labels, logits)
    return student.call("softmax_cross_entropy", labels, logits, dim=dim)


# -- oracles -------------------------------------------------------------------


def softmax_oracle(logits: Tensor, dim: int = -1) -> Tensor:
    return torch.softmax(logits.double(), dim).to(logits.dtype)


def xent_oracle(labels: Tensor, logits: Tensor, dim: int = -1) -> Tensor:
    return (-(labels.double() * torch.log_softmax(logits.double(), dim)).sum(dim)).to(logits.dtype)


TOL = {torch.float64: (1e-10, 1e-12), torch.float32: (1e-5, 1e-6), torch.bfloat16: (2e-2, 1e-2)}

OVERFLOW_HINT = ("exp() of a logit above about 88.7 overflows float32 to inf, and inf / inf is nan. "
                 "Subtract the maximum along `dim` (logits.amax(dim, keepdim=True)) before exp. "
                 "The guide's torch.reduce_max does not exist.")
ROWWISE_HINT = ("Take the maximum along `dim` with keepdim=True, one per row. A single global "
                "max (logits.max()) makes exp underflow to 0 for rows far below the others: 0 / 0 = nan.")
DIM_HINT = "Use the `dim` argument everywhere: in the max, the exp normalisation and the sum."
LOG_HINT = ("log(softmax(x)) is log(0) = -inf when a probability underflows. Compute log-softmax "
            "directly: (x - max) - logsumexp(x - max, dim), then -sum(labels * that, dim).")
GRAD_HINT = ("Build the result from differentiable torch operations on the inputs; avoid .detach(), "
             ".data, .numpy() and Python loops over .item() values.")


def _random_logits(rng: Tensor | torch.Generator, shape: list[int], scale: float = 3.0,
                   dtype: torch.dtype = torch.float32) -> Tensor:
    return (torch.randn(shape, generator=rng, dtype=torch.float64) * scale).to(dtype)


def _random_labels(rng: torch.Generator, shape: list[int], dim: int = -1) -> Tensor:
    return torch.softmax(torch.randn(shape, generator=rng, dtype=torch.float64) * 2, dim).float()


def _shape(rng: torch.Generator, rank: int) -> list[int]:
    return [int(n) for n in torch.randint(2, 7, (rank,), generator=rng)]


def _expect(got: Tensor, want: Tensor, call: str, inputs: dict[str, Tensor], hint: str, device: str) -> None:
    rtol, atol = TOL[want.dtype]
    expect_tensor(got, want, call=call, inputs=inputs, hint=hint, rtol=rtol, atol=atol, device=device)


def _gradcheck(student: Student, name: str, args: tuple, kwargs: dict, wrt: int, hint: str) -> None:
    """torch.autograd.gradcheck in float64: central differences against the backward pass."""
    fn = student.differentiable(name, args, kwargs, wrt)
    x = args[wrt].detach().double().requires_grad_(True)
    try:
        # Expected error of central differences here: about eps**2 = 1e-12, well under atol.
        torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-7, rtol=1e-5)
    except RuntimeError as e:
        raise CheckFailure(
            f"Call: {name} with {list(x.shape)} float64 input (gradcheck, central differences, eps=1e-6)\n"
            f"Problem:  your backward pass disagrees with the numerical gradient.\n"
            f"{str(e).strip()[:1200]}\nHint:     {hint}"
        ) from None


# -- softmax -------------------------------------------------------------------


@pytest.mark.task("softmax")
@pytest.mark.points(1)
@pytest.mark.visible
def check_softmax_guide_example(student: Student, device: str) -> None:
    """softmax([1000., 0.]) is [1., 0.], as in the notebook's visible check"""
    x = torch.tensor([1000.0, 0.0])
    _expect(run_softmax(student, x), torch.tensor([1.0, 0.0]), "softmax(logits)", {"logits": x},
            OVERFLOW_HINT, device)


@pytest.mark.task("softmax")
@pytest.mark.points(2)
def check_softmax_random_batches(student: Student, rng: torch.Generator, device: str) -> None:
    """softmax matches torch.softmax on random [B, C] batches (default dim and dim=1)"""
    for trial in range(6):
        x = _random_logits(rng, _shape(rng, 2))
        dim = None if trial % 2 == 0 else 1
        call = "softmax(logits)" if dim is None else "softmax(logits, dim=1)"
        _expect(run_softmax(student, x, dim), softmax_oracle(x), call, {"logits": x}, "", device)


@pytest.mark.task("softmax")
@pytest.mark.points(2)
def check_softmax_other_dims(student: Student, rng: torch.Generator, device: str) -> None:
    """softmax normalises along the `dim` it is given, for tensors of rank 1 to 4"""
    for rank in (1, 2, 3, 4):
        x = _random_logits(rng, _shape(rng, rank))
        for dim in sorted({0, rank - 1, -rank}):
            _expect(run_softmax(student, x, dim), softmax_oracle(x, dim), f"softmax(logits, dim={dim})",
                    {"logits": x}, DIM_HINT, device)


@pytest.mark.task("softmax")
@pytest.mark.points(2)
def check_softmax_rows_far_apart(student: Student, rng: torch.Generator, device: str) -> None:
    """rows on very different scales each get their own maximum (no 0/0)"""
    for _ in range(3):
        b, c = _shape(rng, 2)
        offsets = -1000.0 * torch.arange(b, dtype=torch.float64).unsqueeze(1)
        x = (_random_logits(rng, [b, c]).double() + offsets).float()
        _expect(run_softmax(student, x, 1), softmax_oracle(x, 1), "softmax(logits, dim=1)",
                {"logits": x}, ROWWISE_HINT, device)


@pytest.mark.task("softmax")
@pytest.mark.points(1)
def check_softmax_huge_and_infinite_logits(student: Student, device: str) -> None:
    """logits of 1e4 and 1e30 do not overflow, and -inf entries get probability 0"""
    inf = float("inf")
    x = torch.tensor([[1e4, 0.0, -1e4], [1e30, 1e30, -1e30], [89.0, 88.0, 0.0], [-inf, 0.0, 1.0]])
    _expect(run_softmax(student, x, -1), softmax_oracle(x), "softmax(logits, dim=-1)", {"logits": x},
            OVERFLOW_HINT, device)


@pytest.mark.task("softmax")
@pytest.mark.points(1)
def check_softmax_keeps_dtype(student: Student, rng: torch.Generator, device: str) -> None:
    """the result has the input's dtype and accuracy: float64 and bfloat16"""
    for dtype in (torch.float64, torch.bfloat16):
        x = _random_logits(rng, _shape(rng, 2), scale=30.0, dtype=dtype)
        _expect(run_softmax(student, x, -1), softmax_oracle(x), "softmax(logits, dim=-1)",
                {"logits": x}, "Compute in the input's dtype and return that dtype.", device)


@pytest.mark.task("softmax")
@pytest.mark.points(1)
def check_softmax_gradient(student: Student, rng: torch.Generator, device: str) -> None:
    """the gradient passes gradcheck in float64 and matches torch.softmax's"""
    x = _random_logits(rng, [3, 4], dtype=torch.float64)
    g = torch.randn([3, 4], generator=rng, dtype=torch.float64)
    _, grads = student.vjp("softmax", (x,), {"dim": 0}, wrt=(0,), grad_output=g)
    xr = x.clone().requires_grad_(True)
    (want,) = torch.autograd.grad(torch.softmax(xr, 0), xr, g)
    _expect(grads[0], want, "gradient of softmax(logits, dim=0) with a random output gradient",
            {"logits": x, "grad_output": g}, GRAD_HINT, device)
    _gradcheck(student, "softmax", (x,), {"dim": 1}, 0, GRAD_HINT)


# -- softmax_cross_entropy -----------------------------------------------------


@pytest.mark.task("softmax_cross_entropy")
@pytest.mark.points(2)
@pytest.mark.visible
def check_xent_guide_example(student: Student, device: str) -> None:
    """labels [0.5, 0.5], logits [1000., 0.] give 500 and the gradient [0.5, -0.5]"""
    labels, logits = torch.tensor([0.5, 0.5]), torch.tensor([1000.0, 0.0])
    inputs = {"labels": labels, "logits": logits}
    value, grads = student.vjp("softmax_cross_entropy", (labels, logits), {}, wrt=(1,))
    _expect(value, torch.tensor(500.0), "softmax_cross_entropy(labels, logits)", inputs, LOG_HINT, device)
    _expect(grads[0], torch.tensor([0.5, -0.5]), "gradient with respect to logits", inputs, LOG_HINT, device)


@pytest.mark.task("softmax_cross_entropy")
@pytest.mark.points(2)
def check_xent_random_batches(student: Student, rng: torch.Generator, device: str) -> None:
    """matches -sum(labels * log_softmax(logits)) on random [B, C] batches"""
    for trial in range(6):
        shape = _shape(rng, 2)
        labels, logits = _random_labels(rng, shape), _random_logits(rng, shape)
        dim = None if trial % 2 == 0 else 1
        call = "softmax_cross_entropy(labels, logits" + (")" if dim is None else ", dim=1)")
        _expect(run_xent(student, labels, logits, dim), xent_oracle(labels, logits), call,
                {"labels": labels, "logits": logits}, "The result has `dim` reduced: shape [B].", device)


@pytest.mark.task("softmax_cross_entropy")
@pytest.mark.points(1)
def check_xent_other_dims(student: Student, rng: torch.Generator, device: str) -> None:
    """reduces exactly the `dim` it is given, for rank-3 inputs"""
    shape = _shape(rng, 3)
    for dim in (0, 1, -1):
        labels, logits = _random_labels(rng, shape, dim), _random_logits(rng, shape)
        _expect(run_xent(student, labels, logits, dim), xent_oracle(labels, logits, dim),
                f"softmax_cross_entropy(labels, logits, dim={dim})", {"labels": labels, "logits": logits},
                DIM_HINT, device)


@pytest.mark.task("softmax_cross_entropy")
@pytest.mark.points(2)
def check_xent_extreme_logits(student: Student, device: str) -> None:
    """stays finite and exact for logits of 1e4 and 1e30 and rows far apart"""
    logits = torch.tensor([[1e4, 0.0, -1e4], [1e30, 0.0, -1e30], [0.0, 1.0, 2.0], [-5000.0, -5001.0, -7000.0]])
    labels = torch.tensor([[0.2, 0.3, 0.5], [0.5, 0.25, 0.25], [1.0, 0.0, 0.0], [0.1, 0.1, 0.8]])
    _expect(run_xent(student, labels, logits, 1), xent_oracle(labels, logits, 1),
            "softmax_cross_entropy(labels, logits, dim=1)", {"labels": labels, "logits": logits},
            LOG_HINT, device)


@pytest.mark.task("softmax_cross_entropy")
@pytest.mark.points(2)
def check_xent_gradient(student: Student, rng: torch.Generator, device: str) -> None:
    """the gradient passes gradcheck in float64 and stays finite for huge logits"""
    labels = _random_labels(rng, [3, 4]).double()
    logits = _random_logits(rng, [3, 4], dtype=torch.float64)
    _gradcheck(student, "softmax_cross_entropy", (labels, logits), {"dim": 1}, 1, GRAD_HINT)
    big = torch.tensor([[1e4, 0.0, -1e4], [1e30, 0.0, 1.0]])
    soft = torch.tensor([[0.2, 0.3, 0.5], [0.5, 0.25, 0.25]])
    g = torch.tensor([1.0, 2.0])
    _, grads = student.vjp("softmax_cross_entropy", (soft, big), {"dim": 1}, wrt=(1,), grad_output=g)
    bigr = big.double().requires_grad_(True)
    (want,) = torch.autograd.grad(xent_oracle(soft, bigr, 1), bigr, g.double())
    _expect(grads[0], want.float(), "gradient of softmax_cross_entropy(labels, logits, dim=1)",
            {"labels": soft, "logits": big, "grad_output": g}, LOG_HINT, device)


@pytest.mark.task("softmax_cross_entropy")
@pytest.mark.points(1)
def check_xent_keeps_dtype(student: Student, rng: torch.Generator, device: str) -> None:
    """the result has the logits' dtype and accuracy: float64 and bfloat16"""
    for dtype in (torch.float64, torch.bfloat16):
        shape = _shape(rng, 2)
        labels = _random_labels(rng, shape).to(dtype)
        logits = _random_logits(rng, shape, scale=30.0, dtype=dtype)
        _expect(run_xent(student, labels, logits, -1), xent_oracle(labels, logits),
                "softmax_cross_entropy(labels, logits, dim=-1)", {"labels": labels, "logits": logits},
                "Compute in the logits' dtype and return that dtype.", device)

"""Hidden checks for 01_basics: grad_of and fit_polynomial.

grad_of runs in the child through the harness (autograder/chapters/ch01_basics/harness.py),
which builds the function by name and reports the autograd state of x (or of each input of a
tuple) after the call.
The judge computes every expected gradient itself: analytic formulas, and
torch.func.grad on its own copy of the function table, in float64. Polynomial
fits are judged against the true coefficients, or the float64 least-squares
solution for noisy data. Random inputs come from `rng`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypedDict

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder.judging.authoring import StudentApi, answer, check, expect_tensor, fail, failure, harness, show

# -- the API: what the notebook asks for, as the judge calls it -----------------


class GradOf(TypedDict):
    grad: Any  # what the student's grad_of returned
    requires_grad: Any  # x.requires_grad after the call (a tuple of them for a tuple x)
    x_grad: Any  # x.grad after the call (a tuple of them for a tuple x)


class Hvp(TypedDict):
    hvp: Any  # what the student's hessian_vector_product returned
    requires_grad: bool  # x.requires_grad after the call
    x_grad: Tensor | None  # x.grad after the call
    hvp_requires_grad: bool  # whether the result still carries an autograd graph


class Api(StudentApi):
    @harness()
    def grad_of(self, name: str, x: Tensor | tuple[Tensor, ...], w: Tensor,
                requires_grad: bool | tuple[bool, ...] = False,
                grad: Tensor | tuple[Tensor | None, ...] | None = None) -> GradOf:
        """The student's grad_of(FUNCTIONS[name], x), or grad_of(SEVERAL[name], x) for a tuple x, with each
        input's requires_grad and .grad set up beforehand."""

    @answer
    def fit_polynomial(self, x: Tensor, y: Tensor, degree: int = 2, steps: int = 1000, lr: float = 0.1) -> Tensor:
        """The degree + 1 coefficients of the polynomial fitted to y(x), highest power first."""

    @harness()
    def hessian_vector_product(self, name: str, x: Tensor, w: Tensor, v: Tensor, requires_grad: bool = False,
                               grad: Tensor | None = None) -> Hvp:
        """The student's hessian_vector_product(FUNCTIONS[name], x, v), with x's autograd state set up."""


# -- oracles -------------------------------------------------------------------

Fn = Callable[[Tensor, Tensor], Tensor]

# The same functions as the harness's table, with the text students see in messages.
FUNCTIONS: dict[str, tuple[str, Fn]] = {
    "neg_square": ("-(x * x).sum()", lambda x, w: -(x * x).sum()),
    "sum_of_squares": ("(x * x).sum()", lambda x, w: (x * x).sum()),
    "sin_dot": ("(w * torch.sin(x)).sum()", lambda x, w: (w * torch.sin(x)).sum()),
    "logsumexp": ("torch.logsumexp(x.reshape(-1), 0)", lambda x, w: torch.logsumexp(x.reshape(-1), 0)),
    "cube_mean": ("(x ** 3).mean()", lambda x, w: (x**3).mean()),
    "softplus_dot": ("(w * F.softplus(x)).sum()", lambda x, w: (w * F.softplus(x)).sum()),
    "norm_of_tanh": ("torch.linalg.vector_norm(torch.tanh(x) * w)",
                     lambda x, w: torch.linalg.vector_norm(torch.tanh(x) * w)),
    "row_logsumexp": ("torch.logsumexp(x * w, dim=-1).sum()", lambda x, w: torch.logsumexp(x * w, dim=-1).sum()),
    "quadratic_form": ("0.5 * x @ (w @ x)", lambda x, w: 0.5 * x @ (w @ x)),
    "linear_dot": ("(w * x).sum()", lambda x, w: (w * x).sum()),
    "scaled_sum": ("3 * x.sum()", lambda x, w: 3 * x.sum()),
    "relu_dot": ("(w * torch.relu(x)).sum()", lambda x, w: (w * torch.relu(x)).sum()),
    "first_squared_plus_linear": ("x.reshape(-1)[0] ** 2 + (w * x).sum()",
                                  lambda x, w: x.reshape(-1)[0] ** 2 + (w * x).sum()),
}

# The harness's SEVERAL table, for grad_of on a tuple of inputs, with the text students see in messages.
SEVERAL: dict[str, tuple[str, Callable[..., Tensor]]] = {
    "product": ("lambda a, b: (a * b).sum()", lambda a, b: (a * b).sum()),
    "one_input": ("lambda a: (a * a).sum()", lambda a: (a * a).sum()),
    "sin_times_plus_square": ("lambda a, b, c: (torch.sin(a) * b).sum() + (c * c).sum()",
                              lambda a, b, c: (torch.sin(a) * b).sum() + (c * c).sum()),
    "logsumexp_matvec": ("lambda m, v: torch.logsumexp(m @ v, 0)", lambda m, v: torch.logsumexp(m @ v, 0)),
    "mixed_dtypes": ("lambda a, b: (a.to(b.dtype) ** 2).sum() * b.mean()",
                     lambda a, b: (a.to(b.dtype) ** 2).sum() * b.mean()),
    "second_unused": ("lambda a, b: (a * a).sum()", lambda a, b: (a * a).sum()),
    "only_middle_used": ("lambda a, b, c: torch.tanh(b).sum()", lambda a, b, c: torch.tanh(b).sum()),
    "first_unused_float64": ("lambda a, b: torch.logsumexp(b, 0)", lambda a, b: torch.logsumexp(b, 0)),
}

# Gradients worked out by hand.
ANALYTIC: dict[str, Fn] = {
    "neg_square": lambda x, w: -2 * x,
    "sum_of_squares": lambda x, w: 2 * x,
    "sin_dot": lambda x, w: w * torch.cos(x),
    "logsumexp": lambda x, w: torch.softmax(x.reshape(-1), 0).reshape(x.shape),
}


def analytic_grad(name: str, x: Tensor, w: Tensor) -> Tensor:
    return ANALYTIC[name](x.double(), w.double()).to(x.dtype)


def func_grad(name: str, x: Tensor, w: Tensor) -> Tensor:
    fn = FUNCTIONS[name][1]
    return torch.func.grad(lambda t: fn(t, w.double()))(x.double()).to(x.dtype)


def several_grads(name: str, xs: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    """The gradient with respect to each input, by torch.func.grad in float64 (zeros for an unused one), each
    in its own input's dtype."""
    fn = SEVERAL[name][1]
    grads = torch.func.grad(fn, argnums=tuple(range(len(xs))))(*(t.double() for t in xs))
    return tuple(g.to(t.dtype) for g, t in zip(grads, xs, strict=True))


def poly_features(x: Tensor, degree: int) -> Tensor:
    """[N, degree + 1] float64 powers of x, highest first."""
    return x.double().unsqueeze(1) ** torch.arange(degree, -1, -1, dtype=torch.float64)


def least_squares(x: Tensor, y: Tensor, degree: int) -> Tensor:
    return torch.linalg.lstsq(poly_features(x, degree), y.double().unsqueeze(1)).solution.squeeze(1)


GRAD_TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-10, 1e-12)}
# A fit passes when every coefficient is within FIT_ATOL + FIT_RTOL * |expected|. Adam with the
# default lr=0.1 and 1000 steps gets within about 1e-4 on these problems; 100 steps do not.
FIT_RTOL, FIT_ATOL = 1e-2, 1e-2
# Coefficient sizes that 100 Adam steps at lr=0.1 never reach (each step moves about lr) and 1000 always
# do: over 100 seeds each, a fit that ignores `steps` fails every time and the reference passes every time.
FAR = (12.0, 16.0)

GRAD_HINT = ("Differentiate with autograd (torch.autograd.grad, for one) on a detached copy of x that requires "
             "grad. A tensor x gets one tensor of x's shape back; do not approximate with finite differences.")
SEVERAL_HINT = ("For a tuple x = (a, b, ...), call fn(a, b, ...) (fn(*x), on detached copies that require grad) "
                "and return a tuple of the same length: the gradient with respect to each input, in its shape "
                "and dtype. torch.autograd.grad takes a tuple of inputs and returns a tuple.")
UNUSED_HINT = ("An input fn does not use has a gradient of zeros. torch.autograd.grad raises for such an input "
               "unless you pass allow_unused=True, and then it gives None in its place: replace that None by "
               "zeros of the input's shape, dtype and device (torch.zeros_like), or ask for them with "
               "materialize_grads=True.")
REQUIRES_GRAD_HINT = ("Do not call x.requires_grad_() on the caller's tensor. Differentiate with respect to "
                      "a detached copy instead: x_ = x.detach().requires_grad_(True).")
X_GRAD_HINT = ("loss.backward() writes into x.grad, adding to whatever was there. torch.autograd.grad returns "
               "the gradient instead, and leaves x.grad alone: use it on a detached copy of x.")
FIT_HINT = ("Fit by minimising the mean squared error of features @ w with torch.optim.Adam([w], lr=lr) for "
            "`steps` steps, calling zero_grad() before each backward(). Use the `steps` and `lr` arguments.")
STEPS_LR_HINT = ("Pass lr to torch.optim.Adam and take exactly `steps` steps. Adam moves each coefficient by "
                 "about lr per step, so 500 steps at lr=2.0 reach these large coefficients; plain SGD at "
                 "lr=2.0 diverges.")
NOISY_HINT = ("y is a polynomial plus noise, so the expected coefficients are the least-squares fit to all the "
              "samples: what minimising the mean squared error over every sample converges to. If you fit on "
              "x / s, the coefficient of t^k is s^k times that of x^k, and Adam, about lr per step, may not reach "
              "it in `steps` steps: divide by the standard deviation of x, not by a larger spread.")
DEGREE_HINT = "Return degree + 1 coefficients: one for each power x^degree, ..., x^1, x^0."
ORDER_HINT = ("Your coefficients are in reverse order. Return the highest power first: for 5x^2 + 3 that is "
              "[5, 0, 3] (torch.arange(degree, -1, -1) gives the powers in that order).")


def _shape(rng: torch.Generator, rank: int) -> list[int]:
    return [int(n) for n in torch.randint(2, 6, (rank,), generator=rng)]


def _randn(rng: torch.Generator, shape: list[int], dtype: torch.dtype = torch.float32) -> Tensor:
    return torch.randn(shape, generator=rng, dtype=torch.float64).to(dtype)


def _describe(name: str) -> str:
    return f"grad_of(f, x) with f = lambda x: {FUNCTIONS[name][0]}"


def _describe_several(name: str, n: int) -> str:
    names = "abc"[:n] if name != "logsumexp_matvec" else "mv"
    return f"grad_of(f, ({', '.join(names)}{',' * (n == 1)})) with f = {SEVERAL[name][0]}"


def _expect_several(out: GradOf, name: str, xs: tuple[Tensor, ...], device: str, hint: str = SEVERAL_HINT) -> None:
    """A tuple of len(xs) gradients, each matching torch.func.grad within its dtype's tolerance."""
    call = _describe_several(name, len(xs))
    names = "abc" if name != "logsumexp_matvec" else "mv"
    inputs = dict(zip(names, xs, strict=False))
    want = several_grads(name, xs)
    got = out["grad"]
    if not isinstance(got, tuple) or len(got) != len(xs):
        what = (f"a {type(got).__name__} of {len(got)}" if isinstance(got, (list, tuple)) else
                "one tensor" if isinstance(got, Tensor) else show(got))
        raise failure(call=call, inputs=[f"{k} = {show(v)}" for k, v in inputs.items()],
                      expected=f"a tuple of {len(xs)} gradient{'s' * (len(xs) != 1)}, one per input", got=what,
                      problem=f"not a tuple of {len(xs)}: a tuple of inputs gets a tuple of gradients back.",
                      hint=hint)
    for i, (g, wg, t) in enumerate(zip(got, want, xs, strict=True)):
        rtol, atol = GRAD_TOL[t.dtype]
        if g is None:
            raise failure(call=call, inputs=[f"{k} = {show(v)}" for k, v in inputs.items()],
                          expected=f"zeros of shape {list(t.shape)} ({t.dtype}) for input {i}, which f does not "
                                   "use", got="None", problem=f"None in place of input {i}'s gradient.",
                          hint=UNUSED_HINT)
        expect_tensor(g, wg, call=f"{call}, its gradient number {i}", inputs=inputs, hint=hint, rtol=rtol,
                      atol=atol, device=device)


def _expect_grad(out: GradOf, want: Tensor, name: str, x: Tensor, w: Tensor, device: str) -> None:
    rtol, atol = GRAD_TOL[x.dtype]
    inputs = {"x": x, "w": w} if re.search(r"\bw\b", FUNCTIONS[name][0]) else {"x": x}
    if isinstance(out["grad"], (tuple, list)):
        fail(_describe(name), inputs, want, out["grad"],
             f"a {type(out['grad']).__name__} for a single tensor x: only a tuple x gets a tuple back.", GRAD_HINT)
    expect_tensor(out["grad"], want, call=_describe(name), inputs=inputs, hint=GRAD_HINT, rtol=rtol, atol=atol,
                  device=device)


def _coefficients(rng: torch.Generator, degree: int, low: float, high: float) -> Tensor:
    """degree + 1 coefficients with random signs and magnitudes in [low, high], each in its own band (growing
    from the highest power to x^0), so that no polynomial's coefficients read the same reversed."""
    bands = degree + 1
    width = (high - low) / bands
    offsets = torch.arange(bands, dtype=torch.float64) + 0.6 * torch.rand(bands, generator=rng, dtype=torch.float64)
    return (low + width * offsets) * (torch.randint(0, 2, (bands,), generator=rng) * 2 - 1)


def _samples(coefficients: Tensor, radius: float, n: int = 200) -> tuple[Tensor, Tensor]:
    """n evenly spaced points x in [-radius, radius], in a fixed spread-out order, and y = the polynomial
    at x, both float32.

    A fixed grid fixes how well each fit is conditioned, so whether a mistake (plain SGD, for one)
    diverges does not depend on the seed; the coefficients are random.
    """
    x = torch.linspace(-radius, radius, n, dtype=torch.float64)[torch.arange(n) * 67 % n]  # 67: prime to n
    y = poly_features(x, len(coefficients) - 1) @ coefficients
    return x.float(), y.float()


def _expect_coefficients(got: Any, want: Tensor, call: str, x: Tensor, y: Tensor, device: str,
                         hint: str = FIT_HINT) -> None:
    want = want.float()
    inputs = {"x": x, "y": y}
    if isinstance(got, Tensor) and got.shape != want.shape:
        fail(call, inputs, want, got, f"shape {list(got.shape)} instead of {list(want.shape)}", DEGREE_HINT)
    if isinstance(got, Tensor) and not torch.isclose(got.double(), want.double(), FIT_RTOL, FIT_ATOL).all() \
            and torch.isclose(got.double(), want.flip(0).double(), FIT_RTOL, FIT_ATOL).all():
        fail(call, inputs, want, got, "the right coefficients, in reverse order (lowest power first)", ORDER_HINT)
    expect_tensor(got, want, call=call, inputs=inputs, hint=hint, rtol=FIT_RTOL, atol=FIT_ATOL, device=device)


# -- grad_of ---------------------------------------------------------------------


@check(task="grad_of", points=1, visible=True)
def check_grad_of_guide_example(api: Api, device: str) -> None:
    """the guide's -x*x has gradient -2 at x = 1, (x * x).sum() has gradient 2x, and the notebook's pair
    (a * b).sum() has gradients (b, a)"""
    x, w = torch.tensor(1.0), torch.tensor(0.0)
    _expect_grad(api.grad_of("neg_square", x, w), torch.tensor(-2.0), "neg_square", x, w, device)
    x, w = torch.tensor([1.0, 2.0, 3.0]), torch.zeros(3)
    _expect_grad(api.grad_of("sum_of_squares", x, w), 2 * x, "sum_of_squares", x, w, device)
    pair = (torch.tensor([1.0, 2.0]), torch.tensor([3.0, -1.0]))
    _expect_several(api.grad_of.using(hint=SEVERAL_HINT)("product", pair, w), "product", pair, device)


@check(task="grad_of", points=1)
def check_grad_of_analytic(api: Api, rng: torch.Generator, device: str) -> None:
    """matches hand-derived gradients for scalar, vector, matrix and rank-3 inputs"""
    for rank in (0, 1, 2, 3):
        for name in ("sum_of_squares", "sin_dot", "logsumexp"):
            shape = _shape(rng, rank)
            x, w = _randn(rng, shape), _randn(rng, shape)
            _expect_grad(api.grad_of(name, x, w), analytic_grad(name, x, w), name, x, w, device)


@check(task="grad_of", points=1)
def check_grad_of_matches_torch_func(api: Api, rng: torch.Generator, device: str) -> None:
    """matches torch.func.grad on other functions, in float32 and float64, keeping x's dtype"""
    for dtype in (torch.float32, torch.float64):
        for rank, name in ((1, "cube_mean"), (2, "softplus_dot"), (3, "norm_of_tanh"), (3, "row_logsumexp")):
            shape = _shape(rng, rank)
            x, w = _randn(rng, shape, dtype), _randn(rng, shape, dtype)
            _expect_grad(api.grad_of(name, x, w), func_grad(name, x, w), name, x, w, device)


def _several_inputs(rng: torch.Generator, name: str) -> tuple[Tensor, ...]:
    """Random inputs for SEVERAL[name]: shapes and dtypes that differ between inputs where the function allows."""
    n, k = (int(v) for v in torch.randint(2, 6, (2,), generator=rng))
    f64 = torch.float64
    shapes: dict[str, list[tuple[list[int], torch.dtype]]] = {
        "product": [([n, k], torch.float32)] * 2,
        "one_input": [([n, k], f64)],
        "sin_times_plus_square": [([n], torch.float32), ([n], torch.float32), ([k, n, 2], f64)],
        "logsumexp_matvec": [([n, k], f64), ([k], f64)],
        "mixed_dtypes": [([n, k], torch.float32), ([k], f64)],
        "second_unused": [([n], torch.float32), ([k, 2], f64)],
        "only_middle_used": [([n], f64), ([k, n], torch.float32), ([], torch.float32)],
        "first_unused_float64": [([n, k], f64), ([k], torch.float32)],
    }
    return tuple(_randn(rng, shape, dtype) for shape, dtype in shapes[name])


@check(task="grad_of", points=2)
def check_grad_of_several_inputs(api: Api, rng: torch.Generator, device: str) -> None:
    """a tuple of one, two or three inputs, of different shapes and dtypes, gets a tuple of their gradients back,
    each matching torch.func.grad in its input's shape and dtype"""
    w = torch.zeros(())
    for name in ("one_input", "product", "sin_times_plus_square", "logsumexp_matvec", "mixed_dtypes"):
        xs = _several_inputs(rng, name)
        _expect_several(api.grad_of.using(hint=SEVERAL_HINT)(name, xs, w), name, xs, device)


@check(task="grad_of", points=1)
def check_grad_of_unused_inputs(api: Api, rng: torch.Generator, device: str) -> None:
    """an input fn does not use gets zeros of its shape and dtype, not None and not an error"""
    w = torch.zeros(())
    for name in ("second_unused", "only_middle_used", "first_unused_float64"):
        xs = _several_inputs(rng, name)
        _expect_several(api.grad_of.using(hint=UNUSED_HINT)(name, xs, w), name, xs, device, UNUSED_HINT)


def _state(xs: tuple[Tensor, ...], flags: tuple[bool, ...], stale: tuple[Tensor | None, ...]) -> list[str]:
    return [f"{n} = {show(t)} with {n}.requires_grad = {r}, {n}.grad = {show(g)}"
            for n, t, r, g in zip("abc", xs, flags, stale, strict=False)]


@check(task="grad_of", points=1)
def check_grad_of_keeps_requires_grad(api: Api, rng: torch.Generator, device: str) -> None:
    """x.requires_grad is the same after the call as before, False or True, for a tensor and for each input of
    a tuple"""
    for before in (False, True):
        x = _randn(rng, _shape(rng, 2))
        out = api.grad_of("sum_of_squares", x, x, requires_grad=before)
        if out["requires_grad"] != before:
            raise failure(call=_describe("sum_of_squares"), inputs=[f"x = {show(x)} with x.requires_grad = {before}"],
                          expected=f"x.requires_grad is still {before} after the call",
                          got=f"x.requires_grad is {out['requires_grad']}",
                          problem="grad_of changed the caller's tensor.", hint=REQUIRES_GRAD_HINT)
        _expect_grad(out, 2 * x, "sum_of_squares", x, x, device)
    xs, flags = _several_inputs(rng, "sin_times_plus_square"), (False, True, False)
    out = api.grad_of.using(hint=SEVERAL_HINT)("sin_times_plus_square", xs, torch.zeros(()), requires_grad=flags)
    if out["requires_grad"] != flags:
        raise failure(call=_describe_several("sin_times_plus_square", 3), inputs=_state(xs, flags, (None,) * 3),
                      expected=f"requires_grad still {flags} after the call", got=f"{out['requires_grad']}",
                      problem="grad_of changed the caller's tensors.", hint=REQUIRES_GRAD_HINT)
    _expect_several(out, "sin_times_plus_square", xs, device)


@check(task="grad_of", points=1)
def check_grad_of_leaves_x_grad_alone(api: Api, rng: torch.Generator, device: str) -> None:
    """x.grad stays None, or keeps the gradient it held, and the result does not include it, for a tensor and
    for each input of a tuple"""
    cases = [(False, None), (True, None), (True, _randn(rng, [4, 3]))]
    for requires_grad, stale in cases:
        x, w = _randn(rng, [4, 3]), _randn(rng, [4, 3])
        out = api.grad_of("sin_dot", x, w, requires_grad=requires_grad, grad=stale)
        after = out["x_grad"]
        kept = after is None if stale is None else isinstance(after, Tensor) and torch.equal(after, stale)
        if not kept:
            raise failure(call=_describe("sin_dot"),
                          inputs=[f"x = {show(x)} with x.requires_grad = {requires_grad}, x.grad = {show(stale)}",
                                  f"w = {show(w)}"],
                          expected=f"x.grad is still {show(stale)} after the call", got=f"x.grad is {show(after)}",
                          problem="grad_of wrote into the caller's x.grad.", hint=X_GRAD_HINT)
        _expect_grad(out, analytic_grad("sin_dot", x, w), "sin_dot", x, w, device)
    xs = _several_inputs(rng, "product")
    stale_a = _randn(rng, list(xs[0].shape))
    stale_pair: tuple[Tensor | None, ...] = (stale_a, None)
    out = api.grad_of.using(hint=SEVERAL_HINT)("product", xs, torch.zeros(()), requires_grad=(True, True),
                                               grad=stale_pair)
    after_pair = out["x_grad"]
    kept_pair = (isinstance(after_pair, tuple) and isinstance(after_pair[0], Tensor)
                 and torch.equal(after_pair[0], stale_a) and after_pair[1] is None)
    if not kept_pair:
        raise failure(call=_describe_several("product", 2), inputs=_state(xs, (True, True), stale_pair),
                      expected=f"a.grad = {show(stale_a)} and b.grad = None after the call",
                      got=f"a.grad = {show(after_pair[0])} and b.grad = {show(after_pair[1])}",
                      problem="grad_of wrote into the caller's .grad.", hint=X_GRAD_HINT)
    _expect_several(out, "product", xs, device)


# -- fit_polynomial --------------------------------------------------------------


@check(task="fit_polynomial", points=1, visible=True)
def check_fit_polynomial_guide_example(api: Api, rng: torch.Generator, device: str) -> None:
    """y = 5x^2 + 3 gives coefficients close to [5, 0, 3]"""
    want = torch.tensor([5.0, 0.0, 3.0], dtype=torch.float64)
    x, y = _samples(want, radius=2.0)
    _expect_coefficients(api.fit_polynomial(x, y), want, "fit_polynomial(x, y)", x, y, device)


@check(task="fit_polynomial", points=2)
def check_fit_polynomial_random_quadratics(api: Api, rng: torch.Generator, device: str) -> None:
    """recovers random quadratics (coefficients up to 8 in size) with the default steps and lr"""
    for _ in range(2):
        want = _coefficients(rng, 2, 3.0, 8.0)
        x, y = _samples(want, radius=2.0)
        _expect_coefficients(api.fit_polynomial(x, y), want, "fit_polynomial(x, y)", x, y, device)


@check(task="fit_polynomial", points=2)
def check_fit_polynomial_degrees_1_and_3(api: Api, rng: torch.Generator, device: str) -> None:
    """degree 1 gives 2 coefficients and degree 3 gives 4, highest power first"""
    want = _coefficients(rng, 1, *FAR)
    x, y = _samples(want, radius=2.0)
    _expect_coefficients(api.fit_polynomial(x, y, degree=1), want, "fit_polynomial(x, y, degree=1)", x, y, device)
    want = _coefficients(rng, 3, 1.0, 4.0)
    x, y = _samples(want, radius=2.0)
    _expect_coefficients(api.fit_polynomial(x, y, degree=3, steps=2000), want,
                         "fit_polynomial(x, y, degree=3, steps=2000)", x, y, device)


@check(task="fit_polynomial", points=1)
def check_fit_polynomial_noisy_data(api: Api, rng: torch.Generator, device: str) -> None:
    """on noisy samples, reaches the least-squares coefficients"""
    x, y = _samples(_coefficients(rng, 2, *FAR), radius=2.0)
    y = y + 0.5 * torch.randn(y.shape, generator=rng)
    _expect_coefficients(api.fit_polynomial(x, y), least_squares(x, y, 2), "fit_polynomial(x, y)", x, y, device,
                         NOISY_HINT)


def adam_replay(x: Tensor, y: Tensor, degree: int, lr: float, steps: int) -> Tensor:
    """The judge's own run of the stated method, in float64: torch.optim.Adam at `lr` from zeros, `steps` steps on
    the mean squared error of the polynomial in x; its coefficients, highest power first."""
    features, target = poly_features(x, degree), y.double()
    w = torch.zeros(degree + 1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([w], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(features @ w, target).backward()
        opt.step()
    return w.detach()


# The replay's inputs: x = +1 and -1, half each. Its mean is 0 and its spread 1 however it is measured (standard
# deviation, max |x|, half the range), so centring and scaling, which the notebook allows, leave the fit as it
# is: every form of the stated method walks the replay's path. y = A x + B with A and B far beyond steps * lr,
# so every gradient keeps its sign, and Adam, starting at zeros or at numbers below 0.01, moves each coefficient
# by about lr a step. One step more or less, another rate, another optimiser, a closed form: each lands at least
# 0.05 away (lr >= 0.2 between the two nearest), and REPLAY_ATOL leaves room for a start below 0.01.
REPLAY_POINTS = 2000
REPLAY_RTOL, REPLAY_ATOL = 1e-3, 0.03


def _steps(n: int) -> str:
    return f"{n} step{'s' * (n != 1)}"


def _replay_failure(got: Tensor, x: Tensor, y: Tensor, lr: float, steps: int) -> str:
    """What the student's coefficients match instead of the replay: the likely method, for the message."""
    def near(w: Tensor) -> bool:
        return bool(torch.isclose(got.double(), w, REPLAY_RTOL, REPLAY_ATOL).all())
    if near(least_squares(x, y, 1)):
        return ("they are the least-squares coefficients, which Adam does not reach in these few steps: a closed "
                "form (torch.linalg.lstsq, solve, pinv) or an optimiser run past the steps given")
    if near(adam_replay(x, y, 1, 0.1, steps)):
        return f"they match Adam at lr=0.1, the default, not the lr={lr} given"
    for n in range(4 * steps + 2):
        if n != steps and near(adam_replay(x, y, 1, lr, n)):
            return f"they match {_steps(n)} of Adam at lr={lr}, not the {steps} asked"
    return "another optimiser, another rate or another number of steps"


@check(task="fit_polynomial", points=2)
def check_fit_polynomial_uses_steps_and_lr(api: Api, rng: torch.Generator, device: str) -> None:
    """takes exactly `steps` steps of Adam at `lr`: the judge replays Adam (1, 2 and a few more steps at random
    rates), and lr=2.0 reaches coefficients of size 100 to 200 in 500 steps"""
    x = torch.tensor([1.0, -1.0]).repeat(REPLAY_POINTS // 2)
    slope, intercept = (float(v) for v in torch.empty(2).uniform_(40.0, 80.0, generator=rng))
    y = slope * x + intercept
    for steps in (1, 2, int(torch.randint(5, 25, (1,), generator=rng))):
        lr = round(float(torch.empty(()).uniform_(0.2, 0.5, generator=rng)), 3)
        call = f"fit_polynomial(x, y, degree=1, steps={steps}, lr={lr})"
        got, want = api.fit_polynomial(x, y, degree=1, steps=steps, lr=lr), adam_replay(x, y, 1, lr, steps)
        inputs = [f"x = {REPLAY_POINTS // 2} times [1, -1] (mean 0, spread 1: centring and scaling change nothing)",
                  f"y = {slope:.3f} x + {intercept:.3f}"]
        if not isinstance(got, Tensor) or got.shape != want.shape:
            raise failure(call=call, inputs=inputs, expected=f"2 coefficients, about {show(want.float())}",
                          got=show(got), problem="not the 2 coefficients of a line", hint=DEGREE_HINT)
        if not torch.isclose(got.double(), want, REPLAY_RTOL, REPLAY_ATOL).all():
            raise failure(call=call, inputs=inputs,
                          expected=f"{show(want.float())}: the coefficients after {_steps(steps)} of "
                                   f"torch.optim.Adam at lr={lr} from zeros (the judge's own Adam)",
                          got=show(got), problem=f"not {_steps(steps)} of Adam at lr={lr}: "
                                                 f"{_replay_failure(got, x, y, lr, steps)}.", hint=STEPS_LR_HINT)
    want = _coefficients(rng, 1, 100.0, 200.0)
    x, y = _samples(want, radius=1.0)
    _expect_coefficients(api.fit_polynomial(x, y, degree=1, steps=500, lr=2.0), want,
                         "fit_polynomial(x, y, degree=1, steps=500, lr=2.0)", x, y, device, STEPS_LR_HINT)


# -- hessian_vector_product (stretch: bonus) ----------------------------------------


def hvp_oracle(name: str, x: Tensor, w: Tensor, v: Tensor) -> Tensor:
    """H(x) @ v in float64, forward-over-reverse with torch.func (never the Hessian itself)."""
    fn = FUNCTIONS[name][1]
    w64 = w.double()

    def at(t: Tensor) -> Tensor:
        return fn(t, w64)

    hv = torch.func.jvp(torch.func.grad(at), (x.double(),), (v.double(),))[1]  # (value, tangent)
    return hv.to(x.dtype)


# float32 Hessian-vector products round a little more than gradients (two passes, sums of products).
HVP_TOL = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-9, 1e-11)}
HVP_HINT = ("H @ v is the gradient, with respect to x, of the dot product of the gradient with v. Take the first "
            "gradient with torch.autograd.grad(..., create_graph=True) on x_ = x.detach().requires_grad_(True), "
            "so that it can be differentiated again, then differentiate its dot product with v.")
CONSTANT_HINT = ("When the gradient does not depend on x (a linear fn), the first torch.autograd.grad returns a "
                 "tensor with no grad_fn, and differentiating it again raises. The Hessian is 0 then: check "
                 "g.requires_grad and return zeros of x's shape, dtype and device.")
GRAPH_HINT = ("Only the first torch.autograd.grad needs create_graph=True. Return a plain tensor: the second "
              "differentiation without create_graph, or .detach() the result.")
LARGE_HINT = ("Never build the Hessian (torch.func.hessian, torch.autograd.functional.hessian or a loop over "
              "coordinates): for n entries it has n * n numbers and needs n backward passes. Two passes of "
              "autograd give H @ v for the cost of about two gradients.")
HVP_LARGE = 200_000  # entries of x: its Hessian would hold 4e10 numbers (160 GB in float32)


def _describe_hvp(name: str) -> str:
    return f"hessian_vector_product(f, x, v) with f = lambda x: {FUNCTIONS[name][0]}"


def _expect_hvp(out: Hvp, want: Tensor, name: str, x: Tensor, w: Tensor, v: Tensor, device: str,
                hint: str = HVP_HINT) -> None:
    rtol, atol = HVP_TOL[x.dtype]
    inputs = {"x": x, "v": v, "w": w} if re.search(r"\bw\b", FUNCTIONS[name][0]) else {"x": x, "v": v}
    expect_tensor(out["hvp"], want, call=_describe_hvp(name), inputs=inputs, hint=hint, rtol=rtol, atol=atol,
                  device=device)


@check(task="hessian_vector_product", points=1, visible=True)
def check_hvp_quadratic_form(api: Api, rng: torch.Generator, device: str) -> None:
    """on 0.5 * x @ A @ x, H @ v is the symmetric part of A times v, even for a non-symmetric A or a large x"""
    a = torch.tensor([[2.0, 1.0, 0.0], [3.0, 4.0, -1.0], [0.0, 1.0, 1.0]])
    x, v = torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.0, 0.0, -1.0])
    hvp = api.hessian_vector_product.using(hint=HVP_HINT)
    _expect_hvp(hvp("quadratic_form", x, a, v), 0.5 * (a + a.T) @ v, "quadratic_form", x, a, v, device)
    # Far from 0 the gradient is large while H stays small: differencing gradients loses the digits.
    x = torch.tensor([1000.0, -2000.0, 500.0])
    _expect_hvp(hvp("quadratic_form", x, a, v), 0.5 * (a + a.T) @ v, "quadratic_form", x, a, v, device)
    n = int(torch.randint(4, 9, (1,), generator=rng))
    a, x, v = _randn(rng, [n, n]), _randn(rng, [n]), _randn(rng, [n])
    _expect_hvp(hvp("quadratic_form", x, a, v), hvp_oracle("quadratic_form", x, a, v), "quadratic_form", x, a, v,
                device)


@check(task="hessian_vector_product", points=1)
def check_hvp_matches_torch_func(api: Api, rng: torch.Generator, device: str) -> None:
    """matches forward-over-reverse torch.func on curved functions, ranks 0 to 3, float32 and float64"""
    hvp = api.hessian_vector_product.using(hint=HVP_HINT)
    for dtype in (torch.float32, torch.float64):
        for rank, name in ((0, "sin_dot"), (1, "logsumexp"), (1, "cube_mean"), (2, "softplus_dot"),
                           (3, "norm_of_tanh"), (3, "row_logsumexp")):
            shape = _shape(rng, rank)
            x, w, v = (_randn(rng, shape, dtype) for _ in range(3))
            _expect_hvp(hvp(name, x, w, v), hvp_oracle(name, x, w, v), name, x, w, v, device)


@check(task="hessian_vector_product", points=1)
def check_hvp_constant_gradient(api: Api, rng: torch.Generator, device: str) -> None:
    """gives zeros where the gradient does not depend on x (linear, piecewise linear), and the one curved entry"""
    for dtype in (torch.float32, torch.float64):
        for name in ("linear_dot", "scaled_sum", "relu_dot", "first_squared_plus_linear"):
            shape = _shape(rng, 2)
            x, w, v = (_randn(rng, shape, dtype) for _ in range(3))
            out = api.hessian_vector_product.using(hint=CONSTANT_HINT)(name, x, w, v)
            _expect_hvp(out, hvp_oracle(name, x, w, v), name, x, w, v, device, CONSTANT_HINT)


@check(task="hessian_vector_product", points=1)
def check_hvp_leaves_x_alone(api: Api, rng: torch.Generator, device: str) -> None:
    """x.requires_grad and x.grad are as before the call, and the result carries no autograd graph"""
    hvp = api.hessian_vector_product.using(hint=HVP_HINT)
    for requires_grad, stale in ((False, None), (True, None), (True, _randn(rng, [4, 3]))):
        x, w, v = (_randn(rng, [4, 3]) for _ in range(3))
        out = hvp("sin_dot", x, w, v, requires_grad=requires_grad, grad=stale)
        state = f"x = {show(x)} with x.requires_grad = {requires_grad}, x.grad = {show(stale)}"
        kept = out["x_grad"] is None if stale is None else isinstance(out["x_grad"], Tensor) and torch.equal(
            out["x_grad"], stale)
        if out["requires_grad"] != requires_grad or not kept:
            raise failure(call=_describe_hvp("sin_dot"), inputs=[state, f"v = {show(v)}"],
                          expected=f"x.requires_grad = {requires_grad} and x.grad = {show(stale)} after the call",
                          got=f"x.requires_grad = {out['requires_grad']} and x.grad = {show(out['x_grad'])}",
                          problem="hessian_vector_product changed the caller's tensor.",
                          hint=REQUIRES_GRAD_HINT + " " + X_GRAD_HINT)
        if out["hvp_requires_grad"]:
            raise failure(call=_describe_hvp("sin_dot"), inputs=[state, f"v = {show(v)}"],
                          expected="a result with requires_grad=False", got="a result with requires_grad=True",
                          problem="the result still holds the graph of both passes (memory the caller cannot free).",
                          hint=GRAPH_HINT)
        _expect_hvp(out, hvp_oracle("sin_dot", x, w, v), "sin_dot", x, w, v, device)


@check(task="hessian_vector_product", points=1)
def check_hvp_large_input(api: Api, rng: torch.Generator, device: str) -> None:
    """works on x with 200 000 entries, whose Hessian would need 160 GB: H is never built"""
    x, w, v = (_randn(rng, [HVP_LARGE]) for _ in range(3))
    want = (-w.double() * torch.sin(x.double()) * v.double()).float()  # sin_dot's Hessian is diagonal
    _expect_hvp(api.hessian_vector_product.using(hint=LARGE_HINT)("sin_dot", x, w, v), want, "sin_dot", x, w, v,
                device, LARGE_HINT)

"""Hidden checks for 07_numerical_stability: softmax, softmax_cross_entropy, log_softmax and robust_loss.

Oracles are torch's own softmax and log_softmax computed in float64 in the
judge. Every check runs fixed hard cases (shapes with equal and size-1 axes,
every dim, huge logits) so that each classic mistake fails the same checks
under any seed; random values come from `rng`, seeded by the grading's secret
seed. softmax_cross_entropy runs through the harness
(autograder/chapters/ch07_numerical_stability/harness.py) with the kit's softmax in
place of the student's, so a softmax bug costs points in softmax only.

log_softmax is a torch.autograd.Function with its own backward. The notebook's
rule, no library softmax, and the Function's shape are read by the judge from
the source (autograder/judging/static/rules.py): rule checks, each voiding its
task when broken.

robust_loss is the NaN hunt: graded from outcomes only. The judge sends its own
predictions and targets (rows at distance 0, tiny, 1 and huge) and compares the
value and the gradient with respect to the predictions with its float64
reference; in its own training steps it backpropagates the student's gradient
through its own model and compares the weights.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

import torch
from torch import Tensor

from autograder.judging.authoring import (
    StudentApi,
    Submission,
    Use,
    answer,
    check,
    expect_tensor,
    fail,
    failure,
    harness,
    listed,
    names_used,
    nonfinite,
    only_raises_not_implemented,
    output_shape_checked,
    subclasses,
    task_code,
    unreadable,
)

# -- the API: what the notebook asks for, as the judge calls it -----------------

# The notebook's examples: calls every working implementation answers.
SOFTMAX_EXAMPLE = (torch.tensor([1000.0, 0.0]),)
XENT_EXAMPLE = (torch.tensor([0.5, 0.5]), torch.tensor([1000.0, 0.0]))
LOG_SOFTMAX_EXAMPLE = (torch.tensor([1000.0, 0.0]),)
ROBUST_EXAMPLE = (torch.tensor([[0.3, 0.4], [3.0, 4.0], [0.0, 0.0]]), torch.zeros(3, 2))


class Api(StudentApi):
    @answer(example=SOFTMAX_EXAMPLE)
    def softmax(self, logits: Tensor, dim: int = -1) -> Tensor:
        """Probabilities along `dim`, computed without overflow."""

    @harness("xent", example=XENT_EXAMPLE)
    def softmax_cross_entropy(self, labels: Tensor, logits: Tensor, dim: int = -1) -> Tensor:
        """-sum(labels * log_softmax(logits)) along `dim`; the harness runs it with the kit's softmax."""

    @answer(example=LOG_SOFTMAX_EXAMPLE)
    def log_softmax(self, logits: Tensor, dim: int = -1) -> Tensor:
        """Log-probabilities along `dim`, through the student's torch.autograd.Function."""

    @answer(example=ROBUST_EXAMPLE)
    def robust_loss(self, pred: Tensor, target: Tensor) -> Tensor:
        """Mean over rows of d**2 / 2 (d < 1) or log(d) + 1/2, d the distance along the last axis."""


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
DIM_HINT = ("Use the `dim` argument everywhere, with keepdim=True: in the max, the exp normalisation and the "
            "sum. Without keepdim the reduced tensor lines up with the wrong axis when sizes are equal.")
LOG_HINT = ("log(softmax(x)) is log(0) = -inf when a probability underflows. Compute log-softmax "
            "directly: (x - max) - logsumexp(x - max, dim), then -sum(labels * that, dim).")
GRAD_HINT = ("Build the result from differentiable torch operations on the inputs; avoid .detach(), "
             ".data, .numpy() and Python loops over .item() values.")
DTYPE_HINT = "Compute in the input's dtype and return that dtype: no .float() or .double() copies."

# Shapes with unequal, equal and size-1 axes: a reduction without keepdim, or along the wrong axis,
# fails on some of them whatever the seed.
BATCH_SHAPES = ([4, 7], [7, 4], [5, 5], [1, 6], [6, 1], [3, 2])
BATCH_HINT = ("The result has `dim` reduced: shape [B]. Inside, keep `dim` in every reduction you subtract "
              "(keepdim=True): [B, C] - [B] lines up the wrong axes, an error when B != C and a wrong answer when "
              "B == C.")
DIM_SHAPES = ([6], [3, 5], [4, 4], [2, 3, 4], [3, 3, 3], [2, 3, 1, 4])
SCALE = 3.0  # random logits ~ N(0, 9): their rows span less than 40, far from any overflow


def _random_logits(rng: torch.Generator, shape: list[int], scale: float = SCALE,
                   dtype: torch.dtype = torch.float32) -> Tensor:
    return (torch.randn(shape, generator=rng, dtype=torch.float64) * scale).to(dtype)


def _random_labels(rng: torch.Generator, shape: list[int], dim: int = -1) -> Tensor:
    return torch.softmax(torch.randn(shape, generator=rng, dtype=torch.float64) * 2, dim).float()


def _dims(rank: int) -> list[int]:
    """Every axis, and the first one counted from the end as well."""
    return [*range(rank), -rank] if rank > 1 else [0, -1]


def _expect(got: Tensor | None, want: Tensor, call: str, inputs: dict[str, Tensor], hint: str, device: str) -> None:
    rtol, atol = TOL[want.dtype]
    expect_tensor(got, want, call=call, inputs=inputs, hint=hint, rtol=rtol, atol=atol, device=device)


def _expect_softmax(got: Tensor, x: Tensor, dim: int, call: str, hint: str, device: str) -> None:
    """softmax along `dim`; when the result is softmax along another axis, says that `dim` was ignored."""
    want = softmax_oracle(x, dim)
    rtol, atol = TOL[want.dtype]
    if isinstance(got, Tensor) and got.shape == want.shape and got.dtype == want.dtype and x.dim() > 1:
        g = got.detach().double()
        if not bool(torch.isclose(g, want.double(), rtol=rtol, atol=atol).all()):
            for other in range(x.dim()):
                if other != dim % x.dim() and bool(torch.isclose(g, softmax_oracle(x, other).double(),
                                                                  rtol=rtol, atol=atol).all()):
                    fail(call, {"logits": x}, want, got,
                         f"the result is softmax along dim={other}, not along dim={dim}: the `dim` argument "
                         "was not used", DIM_HINT)
    _expect(got, want, call, {"logits": x}, hint, device)


# Huge logits, a tie at 1e30 (where logsumexp adds log 2), a row at exp's edge, and -inf entries.
EXTREME_SOFTMAX = torch.tensor([[1e4, 0.0, -1e4], [1e30, 1e30, -1e30], [89.0, 88.0, 0.0], [-float("inf"), 0.0, 1.0]])
LSE_PROBLEM = ("your softmax is exp(x - logsumexp(x)): right on paper, but float32 rounds logsumexp(x) to the "
               "spacing of x. At [1e30, 1e30, ...] the log 2 that logsumexp adds to 1e30 is lost, so both top "
               "entries get exp(0) = 1 instead of 0.5; near -3000 the rounding (about 1e-4) becomes a relative "
               "error of about 1e-4 in every probability, where a shift by the maximum is exact to about 1e-7.")
LSE_HINT = ("Shift by the maximum, logits.amax(dim, keepdim=True): x - max is exact in float32 (the maximum is one "
            "of the stored logits), while x - logsumexp(x) subtracts a rounded number, off by up to half the "
            "spacing of float32 at |x| (2e-4 at 3000, 4e22 at 1e30).")


def _softmax_mistake(got: Tensor, x: Tensor, dim: int) -> tuple[str, str, str] | None:
    """(mistake id, problem, hint) of the named wrong form `got` equals on the extreme logits `x`, else None."""
    if not (isinstance(got, Tensor) and got.shape == x.shape and got.dtype == x.dtype):
        return None
    with torch.no_grad():
        e, top = torch.exp(x), torch.exp(x - x.max())
        forms = {
            "no shift": (e / e.sum(dim, keepdim=True), "nothing is subtracted before exp: the textbook formula "
                         "as written, which gives nan once a logit passes 88.7.", OVERFLOW_HINT),
            "global max": (top / top.sum(dim, keepdim=True), "one maximum for the whole tensor: rows far below it "
                           "have exp = 0 in every entry, and 0 / 0 is nan.", ROWWISE_HINT),
            "logsumexp shift": (torch.exp(x - torch.logsumexp(x, dim, keepdim=True)), LSE_PROBLEM, LSE_HINT),
        }
    have = got.detach().double()
    for name, (wrong, problem, hint) in forms.items():
        if bool(torch.isclose(have, wrong.double(), rtol=1e-6, atol=1e-12, equal_nan=True).all()):
            return name, problem, hint
    return None


def _expect_extreme_softmax(got: Tensor, x: Tensor, dim: int, hint: str, device: str) -> None:
    """softmax of extreme logits; a wrong answer that one of the classic wrong forms gives is named."""
    want, call = softmax_oracle(x, dim), f"softmax(logits, dim={dim})"
    rtol, atol = TOL[want.dtype]
    if (isinstance(got, Tensor) and got.shape == want.shape and got.dtype == want.dtype
            and not bool(torch.isclose(got.detach().double(), want.double(), rtol=rtol, atol=atol).all())):
        named = _softmax_mistake(got, x, dim)
        if named:
            fail(call, {"logits": x}, want, got, named[1], named[2], mistake=named[0])
    _expect(got, want, call, {"logits": x}, hint, device)


def _gradcheck(fn: Callable[[Tensor], Tensor], x: Tensor, name: str, hint: str) -> None:
    """torch.autograd.gradcheck of `fn` at `x` in float64: central differences against the backward pass."""
    x = x.detach().double().requires_grad_(True)
    try:
        # Expected error of central differences here: about eps**2 = 1e-12, well under atol.
        torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-7, rtol=1e-5)
    except RuntimeError as e:
        raise failure(call=f"{name} with {list(x.shape)} float64 input (gradcheck, central differences, eps=1e-6)",
                      problem="your backward pass disagrees with the numerical gradient.",
                      detail=str(e).strip()[:1200], hint=hint) from None


# -- the rule of the notebook: no library softmax, read from the code ---------------------

# Every library function (or module, method) that computes a softmax, its log or a cross entropy for you.
# A name holding one of these among its words counts too (judging/static/rules.py): torch._log_softmax,
# cross_entropy_loss, nn.AdaptiveLogSoftmaxWithLoss; attention (F.scaled_dot_product_attention,
# nn.MultiheadAttention) is a softmax.
LIBRARY_SHORTCUTS = ("softmax", "log_softmax", "softmin", "gumbel_softmax", "Softmax", "LogSoftmax", "Softmin",
                     "Softmax2d", "cross_entropy", "CrossEntropyLoss", "nll_loss", "NLLLoss", "distributions",
                     "attention")
RULE_HINT = ("Build it from tensor operations (amax or max, exp, sum, log, torch.logsumexp) and write every call "
             "out by name. The rule is read from your code: the task's cell and every answer cell it uses.")


EXAMPLES = {"softmax": SOFTMAX_EXAMPLE, "softmax_cross_entropy": XENT_EXAMPLE, "log_softmax": LOG_SOFTMAX_EXAMPLE}


def rule_breaks(submission: Submission, task: str) -> tuple[list[Use], list[Use]]:
    """What breaks the rule in the code `task` reaches: (library softmaxes it names, names the judge cannot read).
    softmax_cross_entropy runs with the kit's softmax (harness.py), so its reach stops at `softmax`: a library
    softmax there costs the softmax task alone."""
    code = task_code(submission, task, stop={"softmax"} if task == "softmax_cross_entropy" else set())
    return names_used(code, LIBRARY_SHORTCUTS), unreadable(code)


def expect_by_hand(api: Api, task: str) -> None:
    """The rule that only the source can show: the task's code (its cell and the answer cells it reaches) names
    no library softmax, and nothing the judge cannot read (rule_breaks). Read before anything runs, so that an
    error or a hang of the student's code cannot stand in for the verdict (an error voids no check)."""
    used, hidden = rule_breaks(api.student.submission, task)
    if used:
        raise failure(call=f"the judge's reading of the code of `{task}`",
                      expected="no torch.softmax, log_softmax, cross_entropy or other library softmax",
                      got=listed(used), problem="the exercise is to compute it yourself; this notebook's rule "
                      "forbids the library's versions, so none of this exercise's checks counts.",
                      hint=RULE_HINT, breaks_rule=True)
    if hidden:
        raise failure(call=f"the judge's reading of the code of `{task}`",
                      expected="every function called by its name", got=listed(hidden),
                      problem="the judge cannot read which function this calls, so it cannot tell that the rule "
                      "is kept; the notebook asks for every call written out.", hint=RULE_HINT, breaks_rule=True)


def expect_runs(api: Api, task: str, device: str = "cpu") -> None:
    """The task answers the notebook's example, correctly where a cheap oracle exists: a stub or a wrong answer
    earns no point for keeping a rule."""
    got = getattr(api, task)(*EXAMPLES[task])
    hint = "The rule's point needs the right answer on the notebook's example too."
    if task == "softmax":
        (x,) = SOFTMAX_EXAMPLE
        _expect(got, softmax_oracle(x), "softmax on the notebook's example", {"logits": x}, hint, device)
    elif task == "softmax_cross_entropy":
        labels, logits = XENT_EXAMPLE
        _expect(got, xent_oracle(labels, logits), "softmax_cross_entropy on the notebook's example",
                {"labels": labels, "logits": logits}, hint, device)


@check(task="softmax", points=1, rule=True)
def check_softmax_by_hand(api: Api, device: str) -> None:
    """rule: built by hand, with no library softmax (read from your code)"""
    expect_by_hand(api, "softmax")
    expect_runs(api, "softmax", device)


@check(task="softmax_cross_entropy", points=1, rule=True)
def check_xent_by_hand(api: Api, device: str) -> None:
    """rule: built by hand, with no library softmax or cross entropy (read from your code)"""
    expect_by_hand(api, "softmax_cross_entropy")
    expect_runs(api, "softmax_cross_entropy", device)


# -- softmax -------------------------------------------------------------------


@check(task="softmax", points=1, visible=True)
def check_softmax_guide_example(api: Api, device: str) -> None:
    """softmax([1000., 0.]) is [1., 0.], as in the notebook's visible check"""
    x = torch.tensor([1000.0, 0.0])
    _expect(api.softmax(x), torch.tensor([1.0, 0.0]), "softmax(logits)", {"logits": x},
            OVERFLOW_HINT, device)


@check(task="softmax", points=1)
def check_softmax_random_batches(api: Api, rng: torch.Generator, device: str) -> None:
    """softmax matches torch.softmax on [B, C] batches, square and with size-1 axes (default dim and dim=1)"""
    for trial, shape in enumerate(BATCH_SHAPES):
        x = _random_logits(rng, shape)
        dim = None if trial % 2 == 0 else 1
        call = "softmax(logits)" if dim is None else "softmax(logits, dim=1)"
        _expect_softmax(api.softmax(x) if dim is None else api.softmax(x, dim=dim), x, -1, call, DIM_HINT, device)


@check(task="softmax", points=1)
def check_softmax_other_dims(api: Api, rng: torch.Generator, device: str) -> None:
    """softmax normalises along the `dim` it is given, every axis of tensors of rank 1 to 4, and keeps the input's
    dtype and accuracy: float64 and bfloat16"""
    for shape in DIM_SHAPES:
        x = _random_logits(rng, shape)
        for dim in _dims(len(shape)):
            _expect_softmax(api.softmax(x, dim=dim), x, dim, f"softmax(logits, dim={dim})", DIM_HINT, device)
    for dtype in (torch.float64, torch.bfloat16):
        x = _random_logits(rng, [4, 6], dtype=dtype)
        _expect_softmax(api.softmax(x, dim=-1), x, -1, "softmax(logits, dim=-1)", DTYPE_HINT, device)


@check(task="softmax", points=1)
def check_softmax_huge_and_infinite_logits(api: Api, rng: torch.Generator, device: str) -> None:
    """rows far apart each get their own maximum (no 0/0), logits of 1e4 and 1e30 do not overflow, and -inf
    entries get probability 0"""
    # The fixed rows first: on them the classic wrong forms give different answers, each named.
    _expect_extreme_softmax(api.softmax(EXTREME_SOFTMAX, dim=-1), EXTREME_SOFTMAX, -1, OVERFLOW_HINT, device)
    for (b, c), dim in (([4, 5], 1), ([3, 6], 1), ([5, 3], 0)):
        offsets = -1000.0 * torch.arange(b, dtype=torch.float64).unsqueeze(1)
        x = (_random_logits(rng, [b, c]).double() + offsets).float()
        x = x if dim == 1 else x.T.contiguous()
        _expect_extreme_softmax(api.softmax(x, dim=dim), x, dim, ROWWISE_HINT, device)


@check(task="softmax", points=1)
def check_softmax_gradient(api: Api, rng: torch.Generator, device: str) -> None:
    """the gradient passes gradcheck in float64 and matches torch.softmax's"""
    x = _random_logits(rng, [3, 4], dtype=torch.float64)
    g = torch.randn([3, 4], generator=rng, dtype=torch.float64)
    call = "softmax(logits, dim=0)"
    _expect_softmax(api.softmax(x, dim=0), x, 0, call, DIM_HINT, device)  # the value first
    with output_shape_checked():
        _, grads = api.softmax.vjp(g, wrt=(0,))(x, dim=0)
    xr = x.clone().requires_grad_(True)
    (want,) = torch.autograd.grad(torch.softmax(xr, 0), xr, g)
    _expect(grads[0], want, f"gradient of {call} with a random output gradient",
            {"logits": x, "grad_output": g}, GRAD_HINT, device)
    _gradcheck(api.softmax.differentiable(0)(x, dim=1), x, api.softmax.name, GRAD_HINT)


# -- softmax_cross_entropy -----------------------------------------------------


def _xent_call(dim: int | None) -> str:
    return "softmax_cross_entropy(labels, logits" + (")" if dim is None else f", dim={dim})")


@check(task="softmax_cross_entropy", points=1, visible=True)
def check_xent_guide_example(api: Api, device: str) -> None:
    """labels [0.5, 0.5], logits [1000., 0.] give 500 and the gradient [0.5, -0.5]"""
    labels, logits = torch.tensor([0.5, 0.5]), torch.tensor([1000.0, 0.0])
    inputs = {"labels": labels, "logits": logits}
    _expect(api.softmax_cross_entropy(labels, logits), torch.tensor(500.0), _xent_call(None), inputs, LOG_HINT,
            device)
    with output_shape_checked():
        _, grads = api.softmax_cross_entropy.vjp(None, wrt=(1,))(labels, logits)
    _expect(grads[0], torch.tensor([0.5, -0.5]), "gradient with respect to logits", inputs, LOG_HINT, device)


@check(task="softmax_cross_entropy", points=1)
def check_xent_random_batches(api: Api, rng: torch.Generator, device: str) -> None:
    """matches -sum(labels * log_softmax(logits)) on [B, C] batches, square and with size-1 axes"""
    for trial, shape in enumerate(BATCH_SHAPES):
        labels, logits = _random_labels(rng, shape), _random_logits(rng, shape)
        dim = None if trial % 2 == 0 else 1
        xent = api.softmax_cross_entropy.using(hint=BATCH_HINT)  # an error on [B, C] - [B] gets it too
        _expect(xent(labels, logits) if dim is None else xent(labels, logits, dim=dim), xent_oracle(labels, logits),
                _xent_call(dim),
                {"labels": labels, "logits": logits}, BATCH_HINT, device)


@check(task="softmax_cross_entropy", points=1)
def check_xent_other_dims(api: Api, rng: torch.Generator, device: str) -> None:
    """reduces exactly the `dim` it is given, every axis of rank-3 inputs, and keeps the logits' dtype and accuracy:
    float64 and bfloat16"""
    for shape in ([2, 3, 4], [3, 3, 3]):
        for dim in _dims(3):
            labels, logits = _random_labels(rng, shape, dim), _random_logits(rng, shape)
            _expect(api.softmax_cross_entropy(labels, logits, dim=dim), xent_oracle(labels, logits, dim),
                    _xent_call(dim), {"labels": labels, "logits": logits}, DIM_HINT, device)
    for dtype in (torch.float64, torch.bfloat16):
        labels = _random_labels(rng, [4, 6]).to(dtype)
        logits = _random_logits(rng, [4, 6], dtype=dtype)
        _expect(api.softmax_cross_entropy(labels, logits, dim=-1), xent_oracle(labels, logits), _xent_call(-1),
                {"labels": labels, "logits": logits}, "Compute in the logits' dtype and return that dtype.", device)


@check(task="softmax_cross_entropy", points=1)
def check_xent_extreme_logits(api: Api, device: str) -> None:
    """stays finite and exact for logits of 1e4 and 1e30 and rows far apart"""
    logits = torch.tensor([[1e4, 0.0, -1e4], [1e30, 0.0, -1e30], [0.0, 1.0, 2.0], [-5000.0, -5001.0, -7000.0]])
    labels = torch.tensor([[0.2, 0.3, 0.5], [0.5, 0.25, 0.25], [1.0, 0.0, 0.0], [0.1, 0.1, 0.8]])
    _expect(api.softmax_cross_entropy(labels, logits, dim=1), xent_oracle(labels, logits, 1), _xent_call(1),
            {"labels": labels, "logits": logits}, LOG_HINT, device)


@check(task="softmax_cross_entropy", points=1)
def check_xent_gradient(api: Api, rng: torch.Generator, device: str) -> None:
    """the gradient passes gradcheck in float64 and stays finite for huge logits"""
    labels = _random_labels(rng, [3, 4]).double()
    logits = _random_logits(rng, [3, 4], dtype=torch.float64)
    _expect(api.softmax_cross_entropy(labels, logits, dim=1), xent_oracle(labels, logits, 1), _xent_call(1),
            {"labels": labels, "logits": logits}, DIM_HINT, device)  # the value first
    _gradcheck(api.softmax_cross_entropy.differentiable(1)(labels, logits, dim=1), logits,
               api.softmax_cross_entropy.name, GRAD_HINT)
    big = torch.tensor([[1e4, 0.0, -1e4], [1e30, 0.0, 1.0]])
    soft = torch.tensor([[0.2, 0.3, 0.5], [0.5, 0.25, 0.25]])
    g = torch.tensor([1.0, 2.0])
    inputs = {"labels": soft, "logits": big, "grad_output": g}
    _expect(api.softmax_cross_entropy(soft, big, dim=1), xent_oracle(soft, big, 1), _xent_call(1), inputs, LOG_HINT,
            device)
    with output_shape_checked():
        _, grads = api.softmax_cross_entropy.vjp(g, wrt=(1,))(soft, big, dim=1)
    bigr = big.double().requires_grad_(True)
    (want,) = torch.autograd.grad(xent_oracle(soft, bigr, 1), bigr, g.double())
    _expect(grads[0], want.float(), f"gradient of {_xent_call(1)}", inputs, LOG_HINT, device)


# -- log_softmax: a torch.autograd.Function with its own backward ----------------------

# The gradient of log_softmax mixes every entry along `dim`: bfloat16's 8 bits lose more than in the value.
GRAD_TOL = {**TOL, torch.bfloat16: (5e-2, 5e-2)}
INF = float("inf")
# Huge logits, -inf entries, rows far apart and a row at exp's edge: the value and the gradient stay finite.
EXTREME_LOGITS = torch.tensor([[1e4, 0.0, -1e4, 1.0], [1e30, 1e30, -1e30, 0.0], [89.0, 88.0, 0.0, -89.0],
                               [-INF, 0.0, 1.0, -INF], [-5000.0, -5001.0, -7000.0, -5000.5]])

LOG_SOFTMAX_HINT = ("Compute in log space with one shift per row along `dim`: (x - m) - log(sum(exp(x - m), dim, "
                    "keepdim=True)) with m = x.amax(dim, keepdim=True). log(softmax(x)) is log(0) = -inf for "
                    "entries far below the maximum, exp(x) without the shift overflows, and x - logsumexp(x) "
                    "rounds away the small term for huge logits: in float32, 1e30 + log 2 is 1e30.")
BACKWARD_HINT = ("out_i = x_i - logsumexp(x), so d out_i / d x_j = [i == j] - softmax(x)_j. backward receives "
                 "grad_output g and returns sum_i g_i * d out_i / d x_j: a reduction of g along `dim` "
                 "(keepdim=True) appears. softmax(x) = exp(out), so the saved output is all you need. Return one "
                 "gradient per forward input: None for `dim`.")
STABLE_BACKWARD_HINT = ("Compute the backward from the saved output: exp(out) is softmax(x), between 0 and 1 for "
                        "any logits. Recomputing exp(x) / sum(exp(x)) from the input overflows for logits above "
                        "88.7 and gives 0/0 for rows far below 0.")
OWN_BACKWARD_HINT = ("Write `class LogSoftmax(torch.autograd.Function)` with static forward(ctx, logits, dim) and "
                     "backward(ctx, grad_output); save one tensor with ctx.save_for_backward (the output), keep "
                     "`dim` on ctx, and have log_softmax return LogSoftmax.apply(logits, dim). Build the forward "
                     "from amax, exp, sum and log (or torch.logsumexp), not torch.log_softmax or torch.softmax.")


def log_softmax_oracle(logits: Tensor, dim: int = -1) -> Tensor:
    return torch.log_softmax(logits.double(), dim).to(logits.dtype)


def log_softmax_grad_oracle(logits: Tensor, grad_output: Tensor, dim: int = -1) -> Tensor:
    """torch.log_softmax's vector-Jacobian product in float64, in the logits' dtype."""
    x = logits.detach().double().requires_grad_(True)
    (grad,) = torch.autograd.grad(torch.log_softmax(x, dim), x, grad_output.double())
    return grad.to(logits.dtype)


def _log_softmax_call(dim: int) -> str:
    return f"log_softmax(logits, dim={dim})"


def _expect_log_softmax(api: Api, x: Tensor, dim: int, hint: str, device: str) -> None:
    want = log_softmax_oracle(x, dim)
    rtol, atol = TOL[want.dtype]
    expect_tensor(api.log_softmax(x, dim=dim), want, call=_log_softmax_call(dim), inputs={"logits": x},
                  hint=hint, rtol=rtol, atol=atol, device=device)


def _backward_mistake(got: Tensor | None, want: Tensor, x: Tensor, g: Tensor, dim: int) -> str:
    """What a wrong gradient (not `want`) is instead, for the classic mistakes; else ''."""
    if not (isinstance(got, Tensor) and got.shape == x.shape) or x.dim() == 0:
        return ""
    p = torch.softmax(x.double(), dim)
    g, have = g.double(), got.detach().double()
    rtol, atol = GRAD_TOL[x.dtype]
    if bool(torch.isclose(have, want.double(), rtol=rtol, atol=atol).all()):
        return ""
    guesses = {
        "grad_output - softmax: that is the gradient only when grad_output sums to 1 along `dim` (a cross "
        "entropy's labels); in general softmax is weighted by the sum of grad_output along `dim`": g - p,
        "grad_output * (1 - softmax): only the diagonal of the Jacobian; every output along `dim` also depends on "
        "every other logit there": g * (1 - p),
        "softmax * sum(grad_output) - grad_output: the sign is flipped": p * g.sum(dim, keepdim=True) - g,
    }
    for other in range(x.dim()):
        if other != dim % x.dim():
            guesses[f"the sum of grad_output is taken along dim={other}, not along dim={dim}"] = (
                g - p * g.sum(other, keepdim=True))
    for problem, wrong in guesses.items():
        if bool(torch.isclose(have, wrong, rtol=rtol, atol=atol).all()):
            return f"your backward computes {problem}."
    return ""


def _expect_log_softmax_grad(api: Api, x: Tensor, g: Tensor, dim: int, hint: str, device: str) -> None:
    call = f"gradient of {_log_softmax_call(dim)} for a grad_output"
    inputs = {"logits": x, "grad_output": g}
    with output_shape_checked():
        _, grads = api.log_softmax.vjp(g, wrt=(0,))(x, dim=dim)
    want = log_softmax_grad_oracle(x, g, dim)
    mistake = _backward_mistake(grads[0], want, x, g, dim)
    if mistake:
        fail(call, inputs, want, grads[0], mistake, BACKWARD_HINT)
    rtol, atol = GRAD_TOL[want.dtype]
    expect_tensor(grads[0], want, call=call, inputs=inputs, hint=hint, rtol=rtol, atol=atol, device=device)


@check(task="log_softmax", points=1, visible=True)
def check_log_softmax_values(api: Api, rng: torch.Generator, device: str) -> None:
    """log_softmax matches torch.log_softmax along every dim, for huge and -inf logits, in float64 and bfloat16"""
    x = torch.tensor([1000.0, 0.0])
    _expect_log_softmax(api, x, -1, LOG_SOFTMAX_HINT, device)
    for shape in DIM_SHAPES:
        x = _random_logits(rng, shape)
        for dim in _dims(len(shape)):
            _expect_log_softmax(api, x, dim, DIM_HINT, device)
    for x, dim in ((EXTREME_LOGITS, 1), (EXTREME_LOGITS.T.contiguous(), 0)):
        _expect_log_softmax(api, x, dim, LOG_SOFTMAX_HINT, device)
    for dtype in (torch.float64, torch.bfloat16):
        _expect_log_softmax(api, _random_logits(rng, [4, 6], dtype=dtype), -1, DTYPE_HINT, device)


@check(task="log_softmax", points=2)
def check_log_softmax_gradient(api: Api, rng: torch.Generator, device: str) -> None:
    """the backward matches torch.log_softmax's for random grad_outputs along every dim, and passes gradcheck"""
    for shape in DIM_SHAPES:
        x = _random_logits(rng, shape)
        for dim in _dims(len(shape)):
            g = torch.randn(shape, generator=rng)
            _expect_log_softmax_grad(api, x, g, dim, BACKWARD_HINT, device)
    x = _random_logits(rng, [3, 4], dtype=torch.float64)
    _gradcheck(api.log_softmax.differentiable(0)(x, dim=0), x, f"{api.log_softmax.name}(dim=0)", BACKWARD_HINT)


@check(task="log_softmax", points=1)
def check_log_softmax_gradient_extremes(api: Api, rng: torch.Generator, device: str) -> None:
    """the gradient stays finite and exact for huge and -inf logits and rows far apart; float64 and bfloat16 too"""
    for x, dim in ((EXTREME_LOGITS, 1), (EXTREME_LOGITS.T.contiguous(), 0)):
        g = torch.randn(x.shape, generator=rng)
        _expect_log_softmax_grad(api, x, g, dim, STABLE_BACKWARD_HINT, device)
    for dtype in (torch.float64, torch.bfloat16):
        x = _random_logits(rng, [4, 6], dtype=dtype)
        g = torch.randn([4, 6], generator=rng, dtype=torch.float64).to(dtype)
        _expect_log_softmax_grad(api, x, g, -1, DTYPE_HINT, device)


@check(task="log_softmax", points=1, rule=True)
def check_log_softmax_own_backward(api: Api, rng: torch.Generator) -> None:
    """rule: your torch.autograd.Function, applied, saving one tensor, no library softmax (read from your code)"""
    expect_by_hand(api, "log_softmax")
    code = task_code(api.student.submission, "log_softmax")
    entries = [n for _, n in code.walk() if isinstance(n, ast.FunctionDef) and n.name == "log_softmax"]
    # As released, or missing (a notebook that did not load): run it, so that the stub or the load error is the
    # verdict, not a broken rule.
    if all(only_raises_not_implemented(n) for n in entries):
        expect_runs(api, "log_softmax")
    functions = subclasses(code, "torch.autograd.Function")
    where = "the judge's reading of the code of `log_softmax`"
    defined = [(cell, c) for cell, c in functions
               if {"forward", "backward"} <= {f.name for f in c.body if isinstance(f, ast.FunctionDef)}]
    if not defined:
        raise failure(call=where, expected="class LogSoftmax(torch.autograd.Function) with forward and backward",
                      got=", ".join(c.name for _, c in functions) or "no subclass of torch.autograd.Function",
                      problem="autograd would differentiate your forward's operations: the backward is not your "
                      "own.", hint=OWN_BACKWARD_HINT, breaks_rule=True)
    names = {c.name for _, c in defined}
    applied = [n for _, n in code.walk() if isinstance(n, ast.Attribute) and n.attr == "apply"
               and isinstance(n.value, ast.Name) and n.value.id in names]
    if not applied:
        raise failure(call=where, expected=f"log_softmax returning {sorted(names)[0]}.apply(logits, dim)",
                      got="no .apply of your Function", problem="the Function is defined but never used.",
                      hint=OWN_BACKWARD_HINT, breaks_rule=True)
    saves = [n for _, c in defined for n in ast.walk(c) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "save_for_backward"]
    if len(saves) != 1 or len(saves[0].args) != 1 or saves[0].keywords:
        got = "; ".join(ast.unparse(n) for n in saves) or "no ctx.save_for_backward"
        raise failure(call=where, expected="one ctx.save_for_backward(...) of one tensor", got=got,
                      problem="the backward must work from one saved tensor, as the exercise states.",
                      hint=OWN_BACKWARD_HINT, breaks_rule=True)
    saved = saves[0].args[0]
    forward = next(f for _, c in defined for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "forward")
    inputs = {a.arg for a in forward.args.args} - {"ctx"}
    if isinstance(saved, ast.Name) and saved.id in inputs:
        raise failure(call=where, expected="the output (or softmax, computed from it) saved",
                      got=f"the logits saved: ctx.save_for_backward({saved.id})", problem="your backward "
                      "recomputes from the input what the forward already computed.",
                      hint=OWN_BACKWARD_HINT, breaks_rule=True)
    expect_runs(api, "log_softmax")


# -- robust_loss: find and fix the NaN, graded from outcomes ------------------------------------------------------

NAN_PROBLEM = ("the gradient is {bad} at the rows where pred equals target (distance 0), where the loss is finite "
               "and its true gradient is 0. Backward multiplies derivatives: sqrt'(0) = 1 / (2 sqrt 0) = inf and "
               "log'(0) = inf, and inf * 0 = nan. Clamping the sqrt's output, or a torch.where around the sqrt or "
               "the log, leaves the nan: autograd still runs the backward of the operation on its bad input (the "
               "clamp or the where passes it a 0, and 0 * inf = nan).")
NAN_HINT = ("Give each dangerous operation a safe input in every row, before the call: log(torch.where(far, sq, "
            "1.0)), then select with the same condition. The quadratic branch needs only the square of the "
            "distance, not a sqrt.")
ROBUST_HINT = ("The loss is the mean over rows of d**2 / 2 where d < 1 and log(d) + 1/2 where d >= 1, d the "
               "Euclidean distance along the last axis; its gradient with respect to pred is (pred - target) / "
               "rows where d < 1 and (pred - target) / (d**2 * rows) beyond.")
ROBUST_TOL = {torch.float64: (1e-9, 1e-12), torch.float32: (1e-5, 1e-7)}


def robust_reference(pred: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """The loss and its gradient with respect to pred, in float64 with the safe input, in pred's dtype."""
    p = pred.detach().double().requires_grad_(True)
    sq = (p - target.double()).pow(2).sum(-1)
    near = sq < 1
    loss = torch.where(near, 0.5 * sq, 0.5 * torch.log(torch.where(near, 1.0, sq)) + 0.5).mean()
    (grad,) = torch.autograd.grad(loss, p)
    return loss.detach().to(pred.dtype), grad.to(pred.dtype)


def _robust_points(rng: torch.Generator, shape: list[int], dtype: torch.dtype = torch.float32,
                   zeros: int = 0) -> tuple[Tensor, Tensor]:
    """(pred, target) of `shape`: distances spread from 1e-3 to 1e3, rows at distance 0.1, exactly 1 and 10 (both
    pieces under any seed), and `zeros` rows (of the flattened leading axes) where pred equals target."""
    target = torch.randn(shape, generator=rng, dtype=torch.float64)
    direction = torch.randn(shape, generator=rng, dtype=torch.float64)
    direction = direction / direction.pow(2).sum(-1, keepdim=True).sqrt()
    rows = direction.shape[:-1].numel()
    scale = 10.0 ** (torch.rand(direction.shape[:-1], generator=rng, dtype=torch.float64) * 6 - 3)
    scale.view(-1)[rows // 2] = 1.0
    scale.view(-1)[-2:] = torch.tensor([0.1, 10.0], dtype=torch.float64)[-rows:]
    scale.view(-1)[:zeros] = 0.0
    pred = target + direction * scale.unsqueeze(-1)
    pred, target = pred.to(dtype), target.to(dtype)
    flat = pred.view(-1, shape[-1])
    flat[:zeros] = target.view(-1, shape[-1])[:zeros]  # exactly equal after the cast too
    return pred, target


def _expect_robust(api: Api, pred: Tensor, target: Tensor, call: str, device: str) -> None:
    """robust_loss(pred, target): its value, then its gradient with respect to pred, against the reference."""
    want, want_grad = robust_reference(pred, target)
    rtol, atol = ROBUST_TOL[pred.dtype]
    inputs = {"pred": pred, "target": target}
    with output_shape_checked():
        got, grads = api.robust_loss.vjp(None, wrt=(0,))(pred, target)
    expect_tensor(got, want, call=call, inputs=inputs, hint=ROBUST_HINT, rtol=rtol, atol=atol, device=device)
    grad = grads[0]
    if isinstance(grad, Tensor) and grad.shape == pred.shape:
        same = (pred == target).all(-1)
        bad = nonfinite(grad[same]) if bool(same.any()) else None
        if bad is not None:
            fail(f"gradient of {call} with respect to pred", inputs, want_grad, grad,
                 NAN_PROBLEM.format(bad="nan" if "nan" in bad else "inf"), NAN_HINT, mistake="nan at distance 0")
    expect_tensor(grad, want_grad, call=f"gradient of {call} with respect to pred", inputs=inputs,
                  hint=ROBUST_HINT, rtol=rtol, atol=atol, device=device)


@check(task="robust_loss", points=1, visible=True)
def check_robust_loss_example(api: Api, device: str) -> None:
    """the notebook's example: rows at distance 0.5, 5 and 0, value and a finite gradient"""
    pred, target = ROBUST_EXAMPLE
    _expect_robust(api, pred, target, "robust_loss(pred, target)", device)


@check(task="robust_loss", points=1)
def check_robust_loss_values(api: Api, rng: torch.Generator, device: str) -> None:
    """matches the textbook loss on random rows from distance 1e-3 to 1e3, one at exactly 1, in float32 and
    float64, for [B, D], [B, T, D] and [B, 1] inputs"""
    for shape, dtype in (([8, 3], torch.float32), ([3, 4, 2], torch.float32), ([6, 1], torch.float32),
                         ([7, 5], torch.float64)):
        pred, target = _robust_points(rng, shape, dtype)
        _expect_robust(api, pred, target, f"robust_loss(pred, target) on {dtype} {shape}", device)


@check(task="robust_loss", points=1)
def check_robust_loss_zero_distance(api: Api, rng: torch.Generator, device: str) -> None:
    """rows where pred equals target (any values, not only zeros) get a finite gradient, exactly 0"""
    for shape, dtype, zeros in (([6, 3], torch.float32, 2), ([2, 3, 4], torch.float32, 3),
                                ([5, 2], torch.float64, 5)):
        pred, target = _robust_points(rng, shape, dtype, zeros=zeros)
        _expect_robust(api, pred, target, f"robust_loss(pred, target) on {dtype} {shape}", device)


@check(task="robust_loss", points=1)
def check_robust_loss_gradient(api: Api, rng: torch.Generator, device: str) -> None:
    """the gradient passes gradcheck in float64 away from distance 0 and 1"""
    pred, target = _robust_points(rng, [5, 3], torch.float64)
    _expect_robust(api, pred, target, "robust_loss(pred, target) on float64 [5, 3]", device)
    d = (pred - target).pow(2).sum(-1).sqrt()
    keep = ((d - 1).abs() > 1e-3) & (d > 1e-3)
    _gradcheck(api.robust_loss.differentiable(0)(pred[keep], target[keep]), pred[keep], api.robust_loss.name,
               ROBUST_HINT)


ROBUST_STEPS = 4


def _padded_batch(rng: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """The judge's model weight, inputs and targets: the last two rows are padding, zeros in both."""
    weight = torch.randn(3, 5, generator=rng) * 0.5
    inputs, targets = torch.randn(8, 5, generator=rng), torch.randn(8, 3, generator=rng) * 2
    inputs[6:], targets[6:] = 0.0, 0.0
    return weight, inputs, targets


@check(task="robust_loss", points=1)
def check_robust_loss_training_step(api: Api, rng: torch.Generator, device: str) -> None:
    """in the judge's own SGD steps on a padded batch (rows at distance 0), the weights stay finite and follow the
    float64 reference step for step"""
    weight, inputs, targets = _padded_batch(rng)
    mine, theirs = weight.double().clone(), weight.clone()
    for step in range(ROBUST_STEPS):
        call = f"robust_loss(inputs @ weight.T, targets) in training step {step + 1} of {ROBUST_STEPS}"
        pred = inputs @ theirs.T  # the padding rows predict exactly 0, their target
        inputs_shown = {"pred": pred, "target": targets}
        with output_shape_checked():
            got, grads = api.robust_loss.vjp(None, wrt=(0,))(pred, targets)
        want, want_grad = robust_reference(inputs.double() @ mine.T, targets.double())
        expect_tensor(got, want.float(), call=call, inputs=inputs_shown, hint=ROBUST_HINT, rtol=1e-4, atol=1e-6,
                      device=device)
        grad = grads[0]
        if not isinstance(grad, Tensor) or grad.shape != pred.shape:
            fail(f"gradient of {call}", inputs_shown, want_grad.float(), grad, "no gradient of pred's shape came "
                 "back: build the loss from differentiable operations on pred.", ROBUST_HINT)
        bad = nonfinite(grad)
        if bad is not None:
            fail(f"gradient of {call}", inputs_shown, want_grad.float(), grad,
                 NAN_PROBLEM.format(bad="nan" if "nan" in bad else "inf") + f" One SGD step later every weight "
                 f"is {'nan' if 'nan' in bad else 'inf'}.", NAN_HINT, mistake="nan at distance 0")
        theirs = theirs - 0.1 * grad.detach().float().T @ inputs
        mine = mine - 0.1 * want_grad.T @ inputs.double()
    expect_tensor(theirs, mine.float(), call=f"the weight after {ROBUST_STEPS} SGD steps (lr 0.1) on the judge's "
                  "padded batch", inputs={"inputs": inputs, "targets": targets}, hint=ROBUST_HINT, rtol=1e-4,
                  atol=1e-5, device=None)

"""Hidden checks for 04_overloaded_ops: row_sum, pairwise_sq_distances, the operator puzzles and the stretch
Dual.

Oracles run in the judge in float64: torch.sum for row_sum and
torch.cdist(x, y) ** 2 for pairwise_sq_distances. "Vectorized" is measured on
the judge's clock (autograder/judging/timing.py): a loop pays a fixed cost per
row in any library, so on many short rows it takes many times as long as the
vectorized reference, timed in the same interleaved run. A loop over the shorter
axis runs one step on the timed inputs, so the same checks also read the no-loop
rule from the code the task runs (loops_read). The operators a call
issues (a trace made in the student's process) only shape the failure message.
"No torch.cdist" is read from the source of the code the task reaches (its cell,
and the other answer cells' code it uses or that runs at load), and so is each
puzzle's rule (one expression over the stated operations: puzzles.py,
autograder/judging/static/rules.py puzzle_breaks). Random inputs come from `rng`,
seeded by the grading's secret seed.
"""

from __future__ import annotations

import ast
from typing import Any, TypedDict

import torch
from torch import Tensor

from autograder.chapters.ch04_overloaded_ops.harness import EXPRESSIONS, expression
from autograder.chapters.ch04_overloaded_ops.puzzles import PUZZLES
from autograder.judging.authoring import (
    RecordProperty,
    Remote,
    RemoteObject,
    Spec,
    Speed,
    StudentApi,
    StudentError,
    Submission,
    Use,
    answer,
    check,
    compare_speed,
    dotted,
    expect_puzzle_random,
    expect_puzzle_rule,
    expect_tensor,
    expect_within,
    failure,
    harness,
    listed,
    names_used,
    operations_growth,
    output_shape_checked,
    python_loops,
    randint,
    reference_process,
    summarize,
    task_code,
    unreadable,
)

# -- the API: what the notebook asks for, as the judge calls it -----------------

class DualResult(TypedDict, total=False):
    type: str  # "Dual" or the type the expression gave instead
    value: Tensor
    tangent: Tensor


# The notebook's examples: calls every working implementation answers.
ROW_SUM_EXAMPLE = (torch.rand(500, 10),)
PAIRWISE_EXAMPLE = (torch.tensor([[0.0, 0.0], [1.0, 1.0]]), torch.tensor([[1.0, 0.0], [0.0, 0.0], [3.0, 4.0]]))


class Api(StudentApi):
    @answer(example=ROW_SUM_EXAMPLE)
    def row_sum(self, x: Tensor) -> Tensor:
        """The column totals of an [N, D] matrix: shape [D]."""

    @answer(example=PAIRWISE_EXAMPLE)
    def pairwise_sq_distances(self, x: Tensor, y: Tensor) -> Tensor:
        """[N, M] squared Euclidean distances between the rows of x [N, D] and y [M, D]."""

    # The operator puzzles (puzzles.py): one expression each.
    @answer(example=PUZZLES["running_diff"].example)
    def running_diff(self, x: Tensor) -> Tensor:
        """x[..., i + 1] - x[..., i] along the last axis."""

    @answer(example=PUZZLES["column_means"].example)
    def column_means(self, x: Tensor) -> Tensor:
        """The mean of each column of an [N, D] matrix, through @."""

    @answer(example=PUZZLES["band"].example)
    def band(self, x: Tensor, lo: float, hi: float) -> Tensor:
        """x where lo <= x <= hi, 0 elsewhere."""

    @answer(example=PUZZLES["reverse"].example)
    def reverse(self, x: Tensor) -> Tensor:
        """x with its first axis reversed."""

    @answer(example=PUZZLES["polynomial"].example)
    def polynomial(self, c: Tensor, x: Tensor) -> Tensor:
        """sum_k c[k] x**k for every entry of x [N]."""

    @answer(example=PUZZLES["exactly_one_positive"].example)
    def exactly_one_positive(self, x: Tensor, y: Tensor) -> Tensor:
        """A bool mask: exactly one of x, y is positive."""

    @answer(example=PUZZLES["running_total"].example)
    def running_total(self, x: Tensor) -> Tensor:
        """The running totals along the last axis, through a matrix product."""

    @answer(example=PUZZLES["repeat_each"].example)
    def repeat_each(self, x: Tensor, k: int) -> Tensor:
        """Each row of x repeated k times in a row."""

    @harness()
    def row_sum_of_view(self, view: str, base: Tensor) -> Tensor:
        """The student's row_sum of VIEWS[view](base), a non-contiguous view taken in the student's process
        (the wire sends contiguous copies)."""

    @answer
    def Dual(self, value: Tensor, tangent: Tensor) -> RemoteObject:
        """Stretch: a value and its tangent; operators apply the chain rule."""

    @harness()
    def dual_eval(self, case: str, values: list[Tensor], tangents: list[Tensor], constants: list[Tensor]
                  ) -> DualResult:
        """The kit's expression `case` (operators only) run on the student's Dual for each (value, tangent)."""


def run_row_sum_on_view(api: Api, base: Tensor, view: str, how: str) -> Tensor:
    """row_sum of a view of `base` taken in the student's process; a failure says which view."""
    try:
        return api.row_sum_of_view(view, base)
    except StudentError as e:
        every = api.row_sum.on_every_call(e)
        raise every or e.restated(f"row_sum(x) with {how}, a non-contiguous view of base = "
                                  f"{summarize(base)}, failed.\n{e}\nHint:     {STRIDE_HINT}") from None


# -- oracles -------------------------------------------------------------------


def row_sum_oracle(x: Tensor) -> Tensor:
    return x.sum(0) if not x.dtype.is_floating_point else x.double().sum(0).to(x.dtype)


def pairwise_oracle(x: Tensor, y: Tensor) -> Tensor:
    return (torch.cdist(x.double(), y.double()) ** 2).to(x.dtype)


def pairwise_atol(x: Tensor, y: Tensor, rel: float) -> float:
    """Absolute tolerance for ||x_i||^2 + ||y_j||^2 - 2 x_i.y_j: `rel` times the largest squared norms.

    The expanded formula cancels large terms, so its rounding error scales with
    the squared norms, not with the (possibly small) distance.
    """
    norms = x.double().pow(2).sum(1).amax() + y.double().pow(2).sum(1).amax()
    return rel * max(float(norms), 1.0)


ROW_SUM_TOL = {torch.float64: (1e-12, 1e-12), torch.float32: (1e-5, 1e-4), torch.int64: (0.0, 0.0)}
# Relative tolerance, and the factor of the squared norms used as absolute tolerance.
PAIRWISE_TOL = {torch.float64: 1e-10, torch.float32: 1e-5}

AXIS_HINT = ("Sum over the rows means reducing dim=0: an [N, D] matrix gives one total per column, shape [D]. "
             "Name the dim: x.sum(dim=0).")
DTYPE_HINT = ("Keep the input's dtype by computing with operations on the inputs themselves: a buffer made with "
              "torch.zeros(...) and no dtype= is float32 whatever x is, and .float() throws away float64's precision.")
STRIDE_HINT = ("x may be a transposed or sliced view whose memory is not laid out row after row: .view() fails "
               "on it and raw-memory tricks read the wrong numbers. Reduce with x.sum(dim=0), which handles "
               "any strides.")
SHAPE_HINT = ("Keep every axis even when its size is 1: avoid squeeze() without a dim, and index with slices, "
              "not integers.")
LOOP_HINT = ("Every step of a Python loop costs a fixed overhead, whether it issues a tensor operation (x[i], "
             "torch.unbind, a comprehension) or works in numpy or on Python numbers: a loop over rows pays it once "
             "per row. Use one reduction, x.sum(dim=0), or, for distances, broadcasting and a matrix product.")
SQUARED_HINT = ("Return squared Euclidean distances: sum over the last axis of (x_i - y_j) ** 2, or "
                "||x_i||^2 + ||y_j||^2 - 2 x_i . y_j; no square root, and mind the sign of the cross term.")
GRAD_HINT = ("Build the result from differentiable torch operations on x and y; avoid .detach(), .data, "
             ".numpy(), .item() and in-place writes into a buffer you made yourself.")

# The library's own distance functions, which this exercise builds by hand: names its cell may not mention.
LIBRARY_DISTANCES = frozenset({"cdist", "_cdist_forward", "_euclidean_dist", "pdist", "_pdist_forward"})


def _sizes(rng: torch.Generator, n: int, low: int, high: int) -> list[int]:
    return [int(s) for s in torch.randint(low, high, (n,), generator=rng)]


def _expect(got: Tensor | None, want: Tensor, call: str, inputs: dict[str, Tensor], hint: str, device: str,
            rtol: float, atol: float) -> None:
    expect_tensor(got, want, call=call, inputs=inputs, hint=hint, rtol=rtol, atol=atol, dtype_hint=DTYPE_HINT,
                  device=device)


def _expect_row_sum(api: Api, x: Tensor, hint: str, device: str) -> None:
    rtol, atol = ROW_SUM_TOL[x.dtype]
    _expect(api.row_sum(x), row_sum_oracle(x), "row_sum(x)", {"x": x}, hint, device, rtol, atol)


def _expect_pairwise(api: Api, x: Tensor, y: Tensor, hint: str, device: str) -> None:
    rel = PAIRWISE_TOL[x.dtype]
    _expect(api.pairwise_sq_distances(x, y), pairwise_oracle(x, y), "pairwise_sq_distances(x, y)", {"x": x, "y": y},
            hint, device, rel, pairwise_atol(x, y, rel))


# -- vectorized and fast, on the judge's clock (autograder/judging/timing.py) ---------------

# Timed inputs hold small integers (as float32): their sums and squared distances are exact in float32 in any
# order, so every correct form matches the oracle exactly. Many rows of one number, and as many columns: a loop
# over either pays its fixed cost per step tens of thousands of times, while one vectorized call pays it once;
# one number per row keeps making the inputs, and the reference's own work, small beside that.
ROWS = 32768
ROW_SUM_TIMED: list[list[Spec]] = [[randint(-100, 100, ROWS, 1, dtype="float32")],
                                   [randint(-100, 100, 1, ROWS, dtype="float32")]]
ROW_SUM_TIMED_SHOWN = f"[{ROWS}, 1] and [1, {ROWS}] matrices"
POINTS = 16384
PAIRWISE_TIMED: list[list[Spec]] = [
    [randint(-8, 8, POINTS, 1, dtype="float32"), randint(-8, 8, 2, 1, dtype="float32")],
    [randint(-8, 8, 2, 1, dtype="float32"), randint(-8, 8, POINTS, 1, dtype="float32")]]
PAIRWISE_TIMED_SHOWN = f"x [{POINTS}, 1] against y [2, 1], and x [2, 1] against y [{POINTS}, 1]"
# Squared norms of those points are at most 8 ** 2: the float32 tolerance of the other checks for them.
PAIRWISE_TIMED_ATOL = PAIRWISE_TOL[torch.float32] * 2 * 8 ** 2

# The vectorized references, timed in a clean process beside the student's code.
REFERENCE = """
def row_sum_reference(x):
    return x.sum(dim=0)


def pairwise_reference(x, y):
    return ((x ** 2).sum(dim=1, keepdim=True) + (y ** 2).sum(dim=1) - 2 * x @ y.T).clamp_min(0)
"""


# The bar: the most time a call may take against the vectorized reference's. Measured through compare_speed by
# benchmarks/timing_stability.py (docs/architecture.md's benchmarks have the figures behind it): every correct form
# stays far below it, and every loop (torch, numpy, Python, in chunks of rows) far above it. One bar serves
# "vectorized" and "fast" alike: a bar tight enough to ask more speed would fail correct forms on a busy machine.
AT_MOST = 8.0
GROWS = "the time grows with the number of rows, as a loop's does."


def _timed(fn: Remote[..., Any], reference: str, specs: list[list[Spec]], oracle: Any, rng: torch.Generator,
           rtol: float, atol: float) -> Speed:
    """`fn` against REFERENCE's function `reference` on inputs that the calls take from `specs` in turn."""
    with reference_process(fn.student, REFERENCE) as ref:
        return compare_speed(fn, fn.run_by(ref, reference), specs, oracle, rng, count=10, rounds=15,
                             warmup=2, rtol=rtol, atol=atol, subtract_making=False, at_most=AT_MOST)


# Library functions that iterate over a tensor's rows or columns, or over any Python iterable (judging/static/
# rules.py names_used: a name holding one among its words counts too, torch.unsafe_split, x.__iter__). Honest
# vectorized code names none of them; numpy's own reductions (np.add.reduce, .sum(axis=0)) stay allowed.
LOOPING = ("unbind", "split", "hsplit", "vsplit", "dsplit", "chunk", "tolist", "iter", "next", "itertools",
           "apply_along_axis", "apply_over_axes", "nditer", "ndenumerate", "ndindex", "vectorize", "frompyfunc",
           "fromiter")
LOOP_RULE_HINT = ("Write the whole computation as vectorized tensor operations, with no Python loop of any length "
                  "(not even over the shorter axis): x.sum(dim=0) for row_sum; broadcasting, or norms and x @ y.T, "
                  "for distances. The rule is read from your code: the task's cell and every answer cell it uses.")


def loops_read(submission: Submission, task: str) -> list[Use]:
    """Where the code `task` can reach loops, as the judge reads it (nothing runs): Python loops, iterating builtins
    and recursion (python_loops), the LOOPING library functions, functools.reduce, and whatever the judge cannot
    read (a loop could hide there)."""
    code = task_code(submission, task)
    reduce = [Use(cell, node.lineno, f"{ast.unparse(node)}: functools.reduce iterates over its argument")
              for cell, node in code.walk() if isinstance(node, (ast.Name, ast.Attribute))
              and dotted(node, code.imported) == "functools.reduce"]
    return sorted({*python_loops(code), *names_used(code, LOOPING), *reduce, *unreadable(code)},
                  key=lambda u: (u.cell, u.line, u.text))


def expect_no_loop(api: Api, task: str, axes: str) -> None:
    """The notebook's "no loop" rule, read from the code, after the timing (which names what a loop over the long
    axis spends its time on): timing shows a loop only where it runs many steps, and one over the shorter axis
    runs a single step on the timed inputs."""
    found = loops_read(api.student.submission, task)
    if found:
        raise failure(call=f"the judge's reading of the code of `{task}` (its cell and the answer cells it uses)",
                      expected=f"no loop over {axes}, in any library, and every function called by its name",
                      got=listed(found), problem="the notebook's rule forbids a loop of any length, whichever axis "
                      "it runs over and however few its steps.", hint=LOOP_RULE_HINT)


def library_distances(submission: Submission, task: str) -> list[str]:
    """Where the code `task` can reach names one of LIBRARY_DISTANCES: as an attribute, an import, a name bound to
    one in any reached cell (names_used resolves them), a string of its own, or code the judge cannot read past.
    The judge's read of the source (nothing runs)."""
    code = task_code(submission, task)
    strings = [Use(cell, node.lineno, node.value) for cell, node in code.walk()
               if isinstance(node, ast.Constant) and node.value in LIBRARY_DISTANCES]
    found = sorted({*names_used(code, LIBRARY_DISTANCES), *strings, *unreadable(code)},
                   key=lambda u: (u.cell != task, u.cell, u.line))
    return [f"{u.text} (line {u.line}{'' if u.cell == task else f' of cell {u.cell!r}'})" for u in found]


# -- row_sum -------------------------------------------------------------------


@check(task="row_sum", points=1, visible=True)
def check_row_sum_guide_example(api: Api, rng: torch.Generator, device: str) -> None:
    """the guide's x = torch.rand([500, 10]) gives its 10 column totals"""
    _expect_row_sum(api, torch.rand(500, 10, generator=rng), AXIS_HINT, device)


@check(task="row_sum", points=1)
def check_row_sum_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random [N, D] matrices (N != D; float32, float64, int64; one row or one column) give [D] in their dtype"""
    for _ in range(3):
        n, d = _sizes(rng, 2, 2, 64)
        n = n if n != d else d + 1
        _expect_row_sum(api, torch.randn(n, d, generator=rng), AXIS_HINT, device)
    n, d = _sizes(rng, 2, 2, 40)
    _expect_row_sum(api, torch.randn(n, d + 40, generator=rng, dtype=torch.float64), DTYPE_HINT, device)
    _expect_row_sum(api, torch.randint(-1000, 1000, (n, d + 40), generator=rng), DTYPE_HINT, device)
    for shape in ((1, d), (n, 1), (1, 1)):
        _expect_row_sum(api, torch.randn(*shape, generator=rng), SHAPE_HINT, device)


@check(task="row_sum", points=1)
def check_row_sum_non_contiguous(api: Api, rng: torch.Generator, device: str) -> None:
    """a transposed matrix and a strided slice (views, not copies) are summed correctly"""
    n, d = _sizes(rng, 2, 3, 30)
    views = {"transpose": (torch.randn(d + 31, n, generator=rng), "x = base.T", lambda t: t.T),
             "every_other_row": (torch.randn(2 * n, d + 33, generator=rng), "x = base[::2, 1:]", lambda t: t[::2, 1:])}
    for view, (base, how, take) in views.items():
        x = take(base)
        _expect_row_sum(api, x.contiguous(), STRIDE_HINT, device)  # the same numbers, laid out plainly
        rtol, atol = ROW_SUM_TOL[x.dtype]
        _expect(run_row_sum_on_view(api, base, view, how), row_sum_oracle(x), f"row_sum(x) with {how}, a view",
                {"base": base, "x": x}, STRIDE_HINT, device, rtol, atol)


# -- pairwise_sq_distances -----------------------------------------------------


@check(task="pairwise_sq_distances", points=1, visible=True)
def check_pairwise_small_example(api: Api, device: str) -> None:
    """x = [[0, 0], [1, 1]], y = [[1, 0], [0, 0], [3, 4]] give [[1, 0, 25], [1, 2, 13]]"""
    x, y = torch.tensor([[0.0, 0.0], [1.0, 1.0]]), torch.tensor([[1.0, 0.0], [0.0, 0.0], [3.0, 4.0]])
    _expect_pairwise(api, x, y, SQUARED_HINT, device)


@check(task="pairwise_sq_distances", points=2)
def check_pairwise_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random float32 clouds, centred and off-centre, match torch.cdist(x, y) ** 2"""
    for offset in (0.0, 0.0, 5.0):
        n, m, d = _sizes(rng, 3, 2, 40)
        x = torch.randn(n, d, generator=rng) + offset
        y = torch.randn(m + 40, d, generator=rng) + offset
        _expect_pairwise(api, x, y, SQUARED_HINT, device)


@check(task="pairwise_sq_distances", points=1)
def check_pairwise_float64(api: Api, rng: torch.Generator, device: str) -> None:
    """float64 inputs give a float64 result, accurate to float64"""
    n, m, d = _sizes(rng, 3, 2, 30)
    x = torch.randn(n, d, generator=rng, dtype=torch.float64) * 3
    y = torch.randn(m, d, generator=rng, dtype=torch.float64) * 3
    _expect_pairwise(api, x, y, DTYPE_HINT, device)


@check(task="pairwise_sq_distances", points=1)
def check_pairwise_edge_shapes(api: Api, rng: torch.Generator, device: str) -> None:
    """one point on either side, and points with one coordinate, keep the [N, M] shape"""
    n, m, d = _sizes(rng, 3, 2, 12)
    for (rows, cols, dims) in ((1, m, d), (n, 1, d), (1, 1, d), (n, m, 1)):
        x, y = torch.randn(rows, dims, generator=rng), torch.randn(cols, dims, generator=rng)
        _expect_pairwise(api, x, y, SHAPE_HINT, device)


@check(task="pairwise_sq_distances", points=1)
def check_pairwise_gradient(api: Api, rng: torch.Generator, device: str) -> None:
    """the gradients with respect to x and y match those of the squared distances"""
    n, m, d = _sizes(rng, 3, 2, 9)
    x, y = torch.randn(n, d, generator=rng), torch.randn(m, d, generator=rng)
    g = torch.randn(n, m, generator=rng)
    _expect_pairwise(api, x, y, SQUARED_HINT, device)  # the value first
    with output_shape_checked():
        _, grads = api.pairwise_sq_distances.vjp(g, wrt=(0, 1))(x, y)
    x64, y64 = x.double().requires_grad_(True), y.double().requires_grad_(True)
    want = torch.autograd.grad(((x64[:, None] - y64[None]) ** 2).sum(-1), (x64, y64), g.double())
    atol = 1e-4 * (1.0 + float(x.abs().max() + y.abs().max()) * float(g.abs().sum(1).max()))
    for which, got, w in zip("xy", grads, want, strict=True):
        _expect(got, w.float(), f"gradient of pairwise_sq_distances(x, y) with respect to {which}",
                {"x": x, "y": y, "grad_output": g}, GRAD_HINT, device, 1e-4, atol)


@check(task="pairwise_sq_distances", points=2)
def check_pairwise_vectorized(api: Api, rng: torch.Generator, record_property: RecordProperty) -> None:
    """no torch.cdist in its cell, vectorized: 16384 points against 2 (both ways) in at most 8x the time of the
    expansion with x @ y.T, and no loop in its code (read from it)"""
    library = library_distances(api.student.submission, "pairwise_sq_distances")
    if library:
        raise failure(call="the code of pairwise_sq_distances (its cell and the answer cells it uses), as written",
                      expected="the distances built from overloaded operators (-, *, **, @) and broadcasting",
                      got=f"it names {', '.join(library)}",
                      problem="torch.cdist and its relatives are the library's distance functions, which this "
                              "exercise asks you to write yourself (the grader uses cdist as its reference).",
                      hint="((x[:, None, :] - y[None, :, :]) ** 2).sum(-1), or the expansion "
                           "||x_i||^2 + ||y_j||^2 - 2 x_i . y_j with x @ y.T.")
    speed = _timed(api.pairwise_sq_distances, "pairwise_reference", PAIRWISE_TIMED, pairwise_oracle, rng,
                   PAIRWISE_TOL[torch.float32], PAIRWISE_TIMED_ATOL)
    small = (torch.randn(4, 3, generator=rng), torch.randn(5, 3, generator=rng))
    large = (torch.randn(64, 24, generator=rng), torch.randn(80, 24, generator=rng))
    expect_within(speed, AT_MOST, f"pairwise_sq_distances on {PAIRWISE_TIMED_SHOWN}",
                  "the expansion with x @ y.T", GROWS, LOOP_HINT, record_property,
                  lambda: operations_growth(api.pairwise_sq_distances, small, large,
                                            ("x [4, 3], y [5, 3]", "x [64, 24], y [80, 24]")))
    expect_no_loop(api, "pairwise_sq_distances", "the rows of x or of y")


# -- speed (row_sum only, as the contract asks) and large clouds --------------------


@check(task="row_sum", points=1, speed=True)
def check_row_sum_speed(api: Api, rng: torch.Generator, record_property: RecordProperty) -> None:
    """vectorized and fast: on [32768, 1] and [1, 32768] matrices at most 8x the time of x.sum(dim=0), and no
    loop in its code (read from it)"""
    speed = _timed(api.row_sum, "row_sum_reference", ROW_SUM_TIMED, row_sum_oracle, rng, *ROW_SUM_TOL[torch.float32])
    small, large = (torch.randn(4, 3, generator=rng),), (torch.randn(64, 24, generator=rng),)
    expect_within(speed, AT_MOST, f"row_sum on {ROW_SUM_TIMED_SHOWN}", "x.sum(dim=0)", GROWS, LOOP_HINT,
                  record_property, lambda: operations_growth(api.row_sum, small, large, ("x [4, 3]", "x [64, 24]")))
    expect_no_loop(api, "row_sum", "the rows or the columns")


# pairwise_sq_distances has no speed check: the contract asks for broadcasting and no loop (checked by
# check_pairwise_vectorized, on many points against few, where a loop's cost per row shows), not for a speed,
# and where the [N, M, D] work dominates, the broadcast difference runs several times slower than the
# expansion. Its points grade large, off-centre clouds instead, where the expansion's cancellation matters.
@check(task="pairwise_sq_distances", points=2)
def check_pairwise_large_clouds(api: Api, rng: torch.Generator, device: str) -> None:
    """100-200 points in 16-64 dimensions, centred and far from the origin, match torch.cdist(x, y) ** 2"""
    for offset in (0.0, 10.0):
        n, m = _sizes(rng, 2, 100, 201)
        d = _sizes(rng, 1, 16, 65)[0]
        x = torch.randn(n, d, generator=rng) + offset
        y = torch.randn(m, d, generator=rng) + offset
        _expect_pairwise(api, x, y, SQUARED_HINT, device)


# -- the operator puzzles (puzzles.py) -------------------------------------------------------------------
# Each puzzle has a rule check (one expression over the stated operations, read from its cell; its point also
# needs the notebook's example right) and a check on random shapes drawn from `rng`.


@check(task="running_diff", points=1, rule=True)
def check_running_diff_rule(api: Api, device: str) -> None:
    """rule: one expression over operators, indexing, .shape, .T, .device, torch.arange; and the example"""
    expect_puzzle_rule(api, PUZZLES["running_diff"], device)


@check(task="running_diff", points=1)
def check_running_diff_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random tensors of rank 1 to 3, and one entry (an empty result), along the last axis"""
    expect_puzzle_random(api, PUZZLES["running_diff"], rng, device)


@check(task="column_means", points=1, rule=True)
def check_column_means_rule(api: Api, device: str) -> None:
    """rule: one expression over operators, indexing, .shape, .T, .device, torch.arange; and the example"""
    expect_puzzle_rule(api, PUZZLES["column_means"], device)


@check(task="column_means", points=1)
def check_column_means_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random [N, D] matrices with N != D, one row, and one column"""
    expect_puzzle_random(api, PUZZLES["column_means"], rng, device)


@check(task="band", points=1, rule=True)
def check_band_rule(api: Api, device: str) -> None:
    """rule: one expression over operators, indexing, .shape, .T, .device, torch.arange; and the example"""
    expect_puzzle_rule(api, PUZZLES["band"], device)


@check(task="band", points=1)
def check_band_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random tensors of rank 1 to 3 whose entries include lo and hi"""
    expect_puzzle_random(api, PUZZLES["band"], rng, device)


@check(task="reverse", points=1, rule=True)
def check_reverse_rule(api: Api, device: str) -> None:
    """rule: one expression over operators, indexing, .shape, .T, .device, torch.arange; and the example"""
    expect_puzzle_rule(api, PUZZLES["reverse"], device)


@check(task="reverse", points=1)
def check_reverse_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random tensors of rank 1 to 3, and one entry, reversed along the first axis"""
    expect_puzzle_random(api, PUZZLES["reverse"], rng, device)


@check(task="polynomial", points=1, rule=True)
def check_polynomial_rule(api: Api, device: str) -> None:
    """rule: one expression over operators, indexing, .shape, .T, .device, torch.arange; and the example"""
    expect_puzzle_rule(api, PUZZLES["polynomial"], device)


@check(task="polynomial", points=1)
def check_polynomial_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random coefficients (K from 1 to 6) at random points in [-1.5, 1.5]"""
    expect_puzzle_random(api, PUZZLES["polynomial"], rng, device)


@check(task="exactly_one_positive", points=1, rule=True)
def check_exactly_one_positive_rule(api: Api, device: str) -> None:
    """rule: one expression over operators, indexing, .shape, .T, .device, torch.arange; and the example"""
    expect_puzzle_rule(api, PUZZLES["exactly_one_positive"], device)


@check(task="exactly_one_positive", points=1)
def check_exactly_one_positive_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random integers from -2 to 2 (zeros included), same shapes and [N, 1] against [M]"""
    expect_puzzle_random(api, PUZZLES["exactly_one_positive"], rng, device)


@check(task="running_total", points=1, rule=True)
def check_running_total_rule(api: Api, device: str) -> None:
    """rule: one expression over operators, indexing, .shape, .T, .device, torch.arange; and the example"""
    expect_puzzle_rule(api, PUZZLES["running_total"], device)


@check(task="running_total", points=1)
def check_running_total_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random whole numbers of rank 1 to 3 (exact sums in float32), and one entry per row"""
    expect_puzzle_random(api, PUZZLES["running_total"], rng, device)


@check(task="repeat_each", points=1, rule=True)
def check_repeat_each_rule(api: Api, device: str) -> None:
    """rule: one expression over operators, indexing, .shape, .T, .device, torch.arange; and the example"""
    expect_puzzle_rule(api, PUZZLES["repeat_each"], device)


@check(task="repeat_each", points=1)
def check_repeat_each_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random tensors of rank 1 to 3 with N != k, k = 1, and a single row"""
    expect_puzzle_random(api, PUZZLES["repeat_each"], rng, device)


# -- Dual (stretch, bonus) ------------------------------------------------------------
# The kit's expressions (autograder/chapters/ch04_overloaded_ops/harness.py), written with operators only, run on the
# student's Dual in its process; the oracle runs the same expressions on PyTorch's forward-mode dual tensors
# (torch.autograd.forward_ad) in float64 in the judge.

REFLECTED_HINT = ("When the left operand is a number or a tensor, Python calls your reflected method with that "
                  "operand as `other`: d.__rsub__(c) must compute c - d, d.__rtruediv__(c) c / d, d.__rmatmul__(w) "
                  "w @ d. Reusing __sub__, __truediv__ or __matmul__ there swaps the operands.")
RULES_HINT = ("value: the operator on the values; tangent: (u + w)' = u' + w', (u w)' = u' w + u w', "
              "(u / w)' = (u' w - u w') / w**2, (u**p)' = p u**(p-1) u'. A tensor or number is a constant with "
              "tangent zero.")
MATMUL_HINT = ("(u @ w)' = u' @ w + u @ w': keep each factor on its side, matrices do not commute. For w @ d with a "
               "tensor w, Tensor.__matmul__ gives up and Python calls d.__rmatmul__(w), which must compute w @ d.")
BROADCAST_HINT = ("The tangent must have the shape of the value. A constant added to a Dual can broadcast the value "
                  "to a larger shape: give the tangent that shape too (add the constant's zero tangent, or "
                  "tangent.expand_as(value)).")
DUAL_TYPE_HINT = ("Every operator returns a new Dual(value, tangent). With a number or tensor on the left, Python "
                  "tries the left operand first and then your reflected method (__radd__, __rsub__, __rmul__, "
                  "__rtruediv__, __rmatmul__); return NotImplemented only for operands you cannot handle.")
DUAL_TOL = {torch.float64: (1e-9, 1e-9), torch.float32: (1e-4, 1e-4)}


def dual_oracle(case: str, values: list[Tensor], tangents: list[Tensor], constants: list[Tensor]
                ) -> tuple[Tensor, Tensor]:
    """The expression's value and forward-mode derivative, by PyTorch's dual tensors in float64."""
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        duals = [fwAD.make_dual(v.double(), t.double()) for v, t in zip(values, tangents, strict=True)]
        out = fwAD.unpack_dual(expression(case)(*duals, *(c.double() for c in constants)))
        tangent = out.tangent if out.tangent is not None else torch.zeros_like(out.primal)
        return out.primal.to(values[0].dtype), tangent.to(values[0].dtype)


def _expect_dual(api: Api, case: str, values: list[Tensor], tangents: list[Tensor], constants: list[Tensor],
                 hint: str, device: str) -> None:
    args, body = EXPRESSIONS[case]
    names = [a.strip() for a in args.split(",")]
    shown = {**{f"{n}.value": v for n, v in zip(names, values, strict=False)},
             **{f"{n}.tangent": t for n, t in zip(names, tangents, strict=False)},
             **dict(zip(names[len(values):], constants, strict=True))}
    duals = ", ".join(f"{n} = Dual({n}.value, {n}.tangent)" for n in names[:len(values)])
    call = f"{duals}; out = {body}"
    api.Dual(values[0], tangents[0])  # constructing it directly first gives the clearest message when it is missing
    try:
        got = api.dual_eval.using(call=call, hint=hint)(case, values, tangents, constants)
    except StudentError as e:
        if "unsupported operand type" not in str(e):
            raise
        raise e.restated(str(e).split("\nHint:")[0] + f"\nHint:     {DUAL_TYPE_HINT}") from None
    if got.get("type") != "Dual":
        raise failure(call=call, inputs=[f"{n} = {summarize(t)}" for n, t in shown.items()],
                      expected="a Dual", got=f"a {got.get('type')}", problem=f"{body} did not give a Dual.",
                      hint=DUAL_TYPE_HINT)
    want_value, want_tangent = dual_oracle(case, values, tangents, constants)
    rtol, atol = DUAL_TOL[values[0].dtype]
    scale = 1.0 + float(want_tangent.abs().max()) if want_tangent.numel() else 1.0
    expect_tensor(got.get("value"), want_value, call=call + "; out.value", inputs=shown, hint=hint, rtol=rtol,
                  atol=atol, device=device)
    expect_tensor(got.get("tangent"), want_tangent, call=call + "; out.tangent (expected: torch.autograd.forward_ad)",
                  inputs=shown, hint=BROADCAST_HINT if got["tangent"].shape != want_tangent.shape else hint,
                  rtol=rtol, atol=atol * scale, device=device)


def _pair(rng: torch.Generator, *shape: int, dtype: torch.dtype = torch.float32, positive: bool = False
          ) -> tuple[Tensor, Tensor]:
    """A value (in [0.5, 2.5) when positive) and a random tangent of the same shape."""
    value = (torch.rand(*shape, generator=rng, dtype=dtype) * 2 + 0.5 if positive
             else torch.randn(*shape, generator=rng, dtype=dtype))
    return value, torch.randn(*shape, generator=rng, dtype=dtype)


@check(task="Dual", points=1, visible=True)
def check_dual_polynomial(api: Api, rng: torch.Generator, device: str) -> None:
    """3 * d * d - 2 * d + 1 and -d + d * 0.5 give the value and its derivative"""
    n = _sizes(rng, 1, 2, 9)[0]
    for case in ("polynomial", "negation"):
        x, t = _pair(rng, n)
        _expect_dual(api, case, [x], [t], [], RULES_HINT, device)


@check(task="Dual", points=1)
def check_dual_constants_on_the_left(api: Api, rng: torch.Generator, device: str) -> None:
    """1 - d + 2 / d and c - d * c + c / d: numbers and tensors on the left reach the reflected operators"""
    n = _sizes(rng, 1, 2, 9)[0]
    x, t = _pair(rng, n, positive=True)
    _expect_dual(api, "numbers_on_the_left", [x], [t], [], REFLECTED_HINT, device)
    x, t = _pair(rng, n, positive=True)
    _expect_dual(api, "tensors_on_the_left", [x], [t], [torch.randn(n, generator=rng)], REFLECTED_HINT, device)


@check(task="Dual", points=1)
def check_dual_quotients_and_powers(api: Api, rng: torch.Generator, device: str) -> None:
    """d / e - e / (d * e + 3) and d ** 3 - d ** 0.5 + d ** -2, in float32 and float64"""
    for dtype in (torch.float32, torch.float64):
        n = _sizes(rng, 1, 2, 9)[0]
        (x, t), (y, s) = _pair(rng, n, dtype=dtype, positive=True), _pair(rng, n, dtype=dtype, positive=True)
        _expect_dual(api, "quotient", [x, y], [t, s], [], RULES_HINT, device)
        _expect_dual(api, "powers", [x], [t], [], RULES_HINT, device)


@check(task="Dual", points=1)
def check_dual_broadcasting(api: Api, rng: torch.Generator, device: str) -> None:
    """[N, 1] against [M] broadcasts to [N, M], value and tangent alike, with constants and Duals"""
    n, m = _sizes(rng, 2, 2, 7)
    m += 7  # N != M
    (x, t), (y, s) = _pair(rng, n, 1), _pair(rng, m)
    _expect_dual(api, "broadcast_constant", [x], [t], [torch.randn(m, generator=rng)], RULES_HINT, device)
    _expect_dual(api, "broadcast_duals", [x, y], [t, s], [], RULES_HINT, device)
    _expect_dual(api, "broadcast_tensor_left", [y], [s], [torch.randn(n, m, generator=rng)], RULES_HINT, device)


@check(task="Dual", points=1)
def check_dual_matrix_products(api: Api, rng: torch.Generator, device: str) -> None:
    """d @ w, w @ d, d @ e, d @ (w @ d) and a small layer, square and not, in the right order"""
    n, k, m = _sizes(rng, 3, 2, 6)
    k, m = k + 6, m + 12  # n, k, m all different
    x, t = _pair(rng, n, n)
    _expect_dual(api, "matmul_left", [x], [t], [torch.randn(n, n, generator=rng)], MATMUL_HINT, device)  # square
    x, t = _pair(rng, n, k)
    _expect_dual(api, "matmul_right", [x], [t], [torch.randn(k, m, generator=rng)], MATMUL_HINT, device)
    _expect_dual(api, "matmul_left", [x], [t], [torch.randn(m, n, generator=rng)], MATMUL_HINT, device)
    (y, s), (z, r) = _pair(rng, k, m), _pair(rng, n, n)
    _expect_dual(api, "matmul_duals", [x, y], [t, s], [], MATMUL_HINT, device)
    _expect_dual(api, "matmul_duals", [z, x], [r, t], [], MATMUL_HINT, device)
    v, u = _pair(rng, n)
    _expect_dual(api, "quadratic_form", [v], [u], [torch.randn(n, n, generator=rng)], MATMUL_HINT, device)
    _expect_dual(api, "layer", [x], [t], [torch.randn(k, m, generator=rng), torch.randn(m, generator=rng)],
                 MATMUL_HINT, device)

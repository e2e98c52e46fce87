"""The operator puzzles of 04_overloaded_ops: their inputs, oracles and the named mistakes the judge recognises.

Each puzzle is a function whose body is one expression over Python's operators, indexing and slicing, .shape,
.T and torch.arange (read from the source by autograder/judging/static/rules.py, puzzle_breaks). Inputs are drawn from
the grading's seeded `rng`; oracles run in the judge, written with torch's own functions (flip, diff, sum,
cumsum, logical_xor, repeat_interleave), not with the puzzles' expressions. A mistake is a wrong answer that
students often give: when the student's output equals one, the failure names it.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from autograder.judging.authoring import Puzzle, PuzzleRule, expect_tensor, fail, mistake_id

# What a puzzle may use besides operators, indexing, slicing, constants and its parameters.
OPERATIONS = frozenset({"torch.arange", ".shape", ".T", ".device"})
ALLOWED_SHOWN = ("Python's operators (+ - * / // % ** @, comparisons, & | ^ ~), indexing and slicing (None and "
                 "... included), .shape, .T, .device and torch.arange")
RULE = PuzzleRule(OPERATIONS, f"one `return <expression>` using only {ALLOWED_SHOWN}",
            "Write the body as one `return <expression>` using only " + ALLOWED_SHOWN + ": no other torch "
            "function or tensor method (.sum, .flip, torch.where, ...), no helper names or variables, no loop, "
            "comprehension, lambda or `if` expression.")
EXAMPLE_NOTE = "The rule's point needs the right answer on the notebook's example too."


def same(got: Any, want: Tensor) -> bool:
    """`got` is a tensor of `want`'s shape and dtype, equal to it within 1e-5."""
    return (isinstance(got, Tensor) and got.shape == want.shape and got.dtype == want.dtype
            and bool(torch.isclose(got.double(), want.double(), rtol=1e-5, atol=1e-5).all()))


def compare(api: Any, p: Puzzle, args: tuple[Any, ...], device: str | None, example: bool) -> None:
    """The output on `args` against the oracle; a wrong one that equals a known mistake is failed as that one."""
    hint = f"{EXAMPLE_NOTE} {p.hint}" if example else p.hint
    got = getattr(api, p.name).using(call=p.call, hint=hint)(*args)
    want = p.oracle(*args)
    inputs = dict(zip(p.params, args, strict=True))
    if not same(got, want):
        for what, mistake in p.mistakes(*args):
            if same(got, mistake):
                fail(p.call, inputs, want, got, f"the result matches a common mistake: {what}.", hint,
                     mistake_id(p, what))
    expect_tensor(got, want, call=p.call, inputs=inputs, hint=hint, rtol=p.rtol, atol=p.atol, device=device)


def _size(rng: torch.Generator, low: int, high: int) -> int:
    return int(torch.randint(low, high, (), generator=rng))


def _shape(rng: torch.Generator, rank: int, low: int = 1, high: int = 7) -> list[int]:
    return [_size(rng, low, high) for _ in range(rank)]


# -- running_diff: differences of neighbours along the last axis ------------------------------------------------


def _running_diff_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    shapes = [[_size(rng, 2, 12)], [_size(rng, 2, 6), _size(rng, 7, 12)], [*_shape(rng, 2, 2, 5), _size(rng, 5, 9)],
              [1]]
    return [(torch.randn(*s, generator=rng),) for s in shapes]


RUNNING_DIFF = Puzzle(
    "running_diff", ("x",), (torch.tensor([[1.0, 4.0, 9.0, 16.0], [2.0, 2.0, 5.0, 3.0]]),),
    lambda x: torch.diff(x, dim=-1), _running_diff_calls,
    "Along the last axis, x[..., 1:] and x[..., :-1] are the same tensor shifted by one; out[..., i] is "
    "x[..., i + 1] - x[..., i]. `...` stands for every leading axis, whatever the rank.", RULE, compare,
    lambda x: [("the differences along the first axis, not the last (x[1:] - x[:-1]): slice the last axis, "
                "x[..., 1:]", x[1:] - x[:-1]),
               ("each entry minus the next one (x[..., :-1] - x[..., 1:]): the sign is flipped",
                -torch.diff(x, dim=-1))],
)


# -- column_means: the mean of each column, through a matrix product -------------------------------------------


def _column_means_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    n, d = _size(rng, 2, 20), _size(rng, 2, 9)
    n = n if n != d else n + 1
    return [(torch.randn(n, d, generator=rng),), (torch.randn(1, d, generator=rng),),
            (torch.randn(n, 1, generator=rng),)]


COLUMN_MEANS = Puzzle(
    "column_means", ("x",), (torch.tensor([[1.0, 2.0, 0.0], [3.0, 6.0, 0.0]]),),
    lambda x: x.double().mean(0).float(), _column_means_calls,
    "A row vector of N ones times x, (ones @ x), adds up the rows: shape [D]. Make the ones from x itself so "
    "they have x's dtype (x[:, 0] * 0 + 1, or x[:, 0] ** 0), then divide by N = x.shape[0].", RULE, compare,
    lambda x: [("the mean of each row, shape [N] (x @ ones / D): the ones vector goes on the left, with N entries",
                x.mean(1)),
               ("the column sums, not their means: divide by N = x.shape[0]", x.sum(0))],
    rtol=1e-5, atol=1e-5,
)


# -- band: keep the entries between lo and hi --------------------------------------------------------------------


def _band_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    for rank in (1, 2, 3):
        x = torch.randint(-6, 7, _shape(rng, rank, 2, 7), generator=rng).float() / 2  # lo and hi occur in x
        lo = float(torch.randint(-6, 1, (), generator=rng)) / 2
        calls.append((x, lo, lo + float(torch.randint(1, 6, (), generator=rng)) / 2))
    return calls


BAND = Puzzle(
    "band", ("x", "lo", "hi"),
    (torch.tensor([-2.0, -1.0, 0.0, 0.5, 1.0, 3.0]), -1.0, 1.0),
    lambda x, lo, hi: torch.where((x >= lo) & (x <= hi), x, torch.zeros_like(x)), _band_calls,
    "A comparison gives a bool mask; & combines two masks elementwise (with parentheses: & binds tighter than "
    "<=); multiplying x by a bool mask keeps x where the mask is True and gives 0 elsewhere. Both bounds count "
    "as inside.", RULE, compare,
    lambda x, lo, hi: [("the bool mask, not the entries of x: multiply x by the mask", (x >= lo) & (x <= hi)),
                       ("entries equal to lo or hi were zeroed: the bounds are inside (>= and <=, not > and <)",
                        x * ((x > lo) & (x < hi))),
                       ("x unchanged: | keeps an entry when either bound holds, & when both do", x.clone())],
)


# -- reverse: the first axis backwards ---------------------------------------------------------------------------


def _reverse_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    return [(torch.randn(*s, generator=rng),) for s in ([_size(rng, 2, 12)], _shape(rng, 2, 2, 8),
                                                       _shape(rng, 3, 2, 5), [1])]


REVERSE = Puzzle(
    "reverse", ("x",), (torch.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]),),
    lambda x: torch.flip(x, (0,)), _reverse_calls,
    "PyTorch refuses a negative step (x[::-1] raises ValueError), but indexing with an integer tensor picks the "
    "rows it lists, in its order: build the indices N-1, N-2, ..., 0 from torch.arange and x.shape[0].", RULE,
    compare,
    lambda x: [("the last axis reversed, not the first: index the first axis", torch.flip(x, (-1,))),
               ("x[0] stayed first and the rest reversed (indices 0, -1, -2, ...): subtract from N - 1, not from 0",
                x[-torch.arange(x.shape[0])])],
)


# -- polynomial: sum_k c[k] x**k for every x ---------------------------------------------------------------------


def _polynomial_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    for k in (_size(rng, 2, 7), _size(rng, 2, 7), 1):
        calls.append((torch.randn(k, generator=rng), torch.rand(_size(rng, 2, 12), generator=rng) * 3 - 1.5))
    return calls


def _poly(c: Tensor, x: Tensor) -> Tensor:
    """sum_k c[k] x**k in float64, term by term."""
    c64, x64 = c.double(), x.double()
    return sum((c64[k] * x64 ** k for k in range(c.shape[0])), torch.zeros_like(x64)).to(x.dtype)


POLYNOMIAL = Puzzle(
    "polynomial", ("c", "x"), (torch.tensor([1.0, -2.0, 3.0]), torch.tensor([0.0, 1.0, 2.0])),
    _poly, _polynomial_calls,
    "Broadcast x [N] as a column against the powers 0..K-1 as a row: x[:, None] ** torch.arange(K) is the "
    "[N, K] table of x_i ** k. A matrix product with c sums c[k] x_i ** k over k.", RULE, compare,
    lambda c, x: [("c read from the highest power down (c[0] x**(K-1) + ...): c[k] multiplies x**k, c[0] is the "
                   "constant", _poly(c.flip(0), x)),
                  ("the powers start at 1, not 0 (c[0] x + c[1] x**2 + ...): torch.arange(K) starts at 0",
                   _poly(torch.cat([c.new_zeros(1), c]), x))],
    rtol=1e-4, atol=1e-4,
)


# -- exactly_one_positive: the xor of two masks -----------------------------------------------------------------


def _exactly_one_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    for shape in ([_size(rng, 6, 14)], _shape(rng, 2, 3, 7)):
        calls.append(tuple(torch.randint(-2, 3, shape, generator=rng).float() for _ in range(2)))  # zeros occur
    n, m = _size(rng, 2, 6), _size(rng, 6, 9)
    column, row = torch.randint(-2, 3, (n, 1), generator=rng), torch.randint(-2, 3, (m,), generator=rng)
    calls.append((column.float(), row.float()))
    return calls


EXACTLY_ONE = Puzzle(
    "exactly_one_positive", ("x", "y"),
    (torch.tensor([-1.0, 0.0, 2.0, 3.0, 0.0, -2.0]), torch.tensor([1.0, 2.0, -1.0, 4.0, 0.0, 0.0])),
    lambda x, y: torch.logical_xor(x > 0, y > 0), _exactly_one_calls,
    "x > 0 and y > 0 are two bool masks (0 is not positive). Exactly one of two bools is True when they differ: "
    "compare the masks with != (or ^), or spell it with &, | and ~. The result is a bool tensor of the "
    "broadcast shape.", RULE, compare,
    lambda x, y: [("True where either is positive, both included: | is 'at least one'", (x > 0) | (y > 0)),
                  ("True only where both are positive: & is 'both'", (x > 0) & (y > 0)),
                  ("the sign test x * y < 0, which misses the zeros: 0 is not positive, so (0, 2) has exactly one "
                   "positive", x * y < 0)],
)


# -- running_total: cumsum by a triangular matrix product ---------------------------------------------------------


def _running_total_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    # small whole numbers, so that every order of summation gives the same float32 totals
    shapes = [[_size(rng, 2, 12)], [_size(rng, 2, 6), _size(rng, 6, 12)], [*_shape(rng, 2, 2, 4), _size(rng, 4, 9)],
              [3, 1]]
    return [(torch.randint(-9, 10, s, generator=rng).float(),) for s in shapes]


def _upper(n: int) -> Tensor:
    return torch.ones(n, n).triu()


RUNNING_TOTAL = Puzzle(
    "running_total", ("x",), (torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, -1.0, 0.0, 2.0]]),),
    lambda x: torch.cumsum(x, dim=-1), _running_total_calls,
    "out[..., j] adds x[..., i] for every i <= j: x @ M with an [N, N] matrix M holding 1 where i <= j (row "
    "index <= column index, the diagonal included) and 0 elsewhere. Build M from torch.arange and a comparison; "
    "a bool M must become x's float dtype before @ (multiply it by 1.0).", RULE, compare,
    lambda x: [("the totals from the end (out[j] adds x[i] for i >= j): the ones of M belong where row <= column",
                x @ _upper(x.shape[-1]).T),
               ("each total misses its own entry (i < j): the diagonal of M belongs in",
                x @ _upper(x.shape[-1]).triu(1))],
)


# -- repeat_each: repeat_interleave by arange arithmetic ------------------------------------------------------


def _repeat_each_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    for rank in (1, 2, 3):
        k = _size(rng, 2, 5)
        n = _size(rng, 2, 7)
        n = n if n != k else n + 1  # N != k, so that // N and // k differ
        calls.append((torch.randn(n, *_shape(rng, rank - 1, 1, 4), generator=rng), k))
    calls.append((torch.randn(_size(rng, 2, 6), generator=rng), 1))
    calls.append((torch.randn(1, 3, generator=rng), _size(rng, 2, 5)))
    return calls


def _repeat_each_mistakes(x: Tensor, k: int) -> list[tuple[str, Tensor]]:
    rows = torch.arange(x.shape[0] * k)
    found = [("the whole of x repeated k times (rows 0, 1, 2, 0, 1, 2, ...), not each row k times in a row (0, 0, "
              "1, 1, ...): divide the row numbers by k instead of taking them modulo N", x[rows % x.shape[0]])]
    if k <= x.shape[0]:  # otherwise this index is out of range and raises
        found.append(("the row numbers divided by N = x.shape[0], not by k", x[rows // x.shape[0]]))
    return found


REPEAT_EACH = Puzzle(
    "repeat_each", ("x", "k"), (torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), 2),
    lambda x, k: torch.repeat_interleave(x, k, dim=0), _repeat_each_calls,
    "Row r of the result is row r // k of x: index x with the N * k numbers torch.arange(x.shape[0] * k) "
    "divided by k (integer division, //).", RULE, compare,
    lambda x, k: _repeat_each_mistakes(x, k),
)


PUZZLES: dict[str, Puzzle] = {p.name: p for p in (RUNNING_DIFF, COLUMN_MEANS, BAND, REVERSE, POLYNOMIAL, EXACTLY_ONE,
                                                  RUNNING_TOTAL, REPEAT_EACH)}

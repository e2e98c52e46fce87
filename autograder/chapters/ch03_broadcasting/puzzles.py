"""The broadcasting puzzles of 03_broadcasting: their inputs, oracles and the named mistakes the judge recognises,
declared as a table (judging/puzzles.py).

Each puzzle is a function whose body is one expression over operators, indexing (None, slices), its parameters
and the few operations its own rule allows (read from the source by puzzle_breaks). Inputs are drawn from the
grading's seeded `rng`; oracles run in the judge, with torch's own functions. A wrong answer that matches a named
mistake gets that mistake's hint.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from autograder.judging.authoring import Puzzle, PuzzleRule, expect_tensor, mistake_id

# The chapter's tolerance by dtype; other dtypes are exact.
TOL = {torch.float64: (1e-10, 1e-12), torch.float32: (1e-5, 1e-5)}

PUZZLE_RULE_HINT = ("Write the body as one `return <expression>` using operators, indexing (x[:, None], "
                    "x[None]), the puzzle's parameters and only the operations its text allows: no loop, "
                    "comprehension, helper variable, or other torch function.")


def _rule(*operations: str) -> PuzzleRule:
    """The operations the puzzle allows besides operators, indexing (None, slices) and its parameters."""
    return PuzzleRule(frozenset(operations),
                f"one `return <expression>` using operators, indexing and {', '.join(sorted(operations))}",
                PUZZLE_RULE_HINT, "the puzzle's rule is broken, so none of its checks counts.")


def sizes(rng: torch.Generator, n: int, low: int = 2, high: int = 7) -> list[int]:
    return [int(s) for s in torch.randint(low, high, (n,), generator=rng)]


def _ints(rng: torch.Generator, *shape: int) -> Tensor:
    """Small whole numbers as floats: sums of them are exact whatever the order."""
    return torch.randint(-9, 10, shape, generator=rng).float()


def compare(api: Any, p: Puzzle, args: tuple[Any, ...], device: str | None, example: bool) -> None:
    """The answer must equal the oracle's; where it equals one of the named mistakes instead, the hint names that
    one. The notebook's example is told as any other call."""
    got = getattr(api, p.name)(*args)
    want = p.oracle(*args)
    hint, mistake = p.hint, None
    for because, wrong in p.mistakes(*args):
        if isinstance(got, Tensor) and got.shape == wrong.shape and got.dtype == wrong.dtype \
                and not torch.equal(wrong, want) \
                and torch.allclose(got.cpu().double(), wrong.double(), equal_nan=True):
            hint, mistake = because, mistake_id(p, because)
            break
    # A number is shown in the call, a tensor by its name and among the inputs.
    call = f"{p.name}({', '.join(k if isinstance(a, Tensor) else str(a) for k, a in zip(p.params, args, strict=True))})"
    shown = {k: a for k, a in zip(p.params, args, strict=True) if isinstance(a, Tensor)}
    rtol, atol = TOL.get(want.dtype, (0.0, 0.0))
    expect_tensor(got, want, call=call, inputs=shown, hint=hint, rtol=rtol, atol=atol, device=device, mistake=mistake)


# -- times_table --------------------------------------------------------------------------------------------------

TIMES_HINT = "Make a column 1..n (arange with a None axis) and a row 1..n and multiply them: [n, 1] * [n] is [n, n]."
TIMES_OFF = "Entry [0, 0] is 1 * 1: count from 1, torch.arange(1, n + 1), not from 0."


def _times_table(n: int) -> Tensor:
    return torch.tensor([[(i + 1) * (j + 1) for j in range(n)] for i in range(n)], dtype=torch.int64).view(n, n)


def _times_mistakes(n: int) -> list[tuple[str, Tensor]]:
    i = torch.arange(n)
    return [(TIMES_OFF, i[:, None] * i), (TIMES_OFF, i[:, None] * i + 1)]


TIMES_TABLE = Puzzle("times_table", ("n",), (3,), _times_table,
                     lambda rng: [(n,) for n in [1, *sizes(rng, 2, 2, 13)]], TIMES_HINT,
                     _rule("torch.arange", ".shape"), compare, _times_mistakes)


# -- outer_sum ------------------------------------------------------------------------------------------------------

OUTER_HINT = ("Give x a trailing axis and leave y as it is: x[:, None] is [N, 1], y is [M] read as [1, M], and "
              "their sum is [N, M].")
OUTER_SWAPPED = "The result is transposed: row i belongs to x[i], so x takes the new trailing axis, not y."


def _outer_sum(x: Tensor, y: Tensor) -> Tensor:
    return (x.double().unsqueeze(1) + y.double().unsqueeze(0)).to(x.dtype)


def _outer_sum_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    """N and M of 1, equal and random; float32 and int64."""
    calls: list[tuple[Any, ...]] = []
    for n, m in [(1, 4), (3, 1), (4, 4), tuple(sizes(rng, 2, 2, 9))]:
        calls += [(_ints(rng, n), _ints(rng, m)), (torch.randint(-9, 10, (n,), generator=rng),
                                                   torch.randint(-9, 10, (m,), generator=rng))]
    return calls


OUTER_SUM = Puzzle("outer_sum", ("x", "y"), (torch.tensor([0.0, 10.0]), torch.tensor([1.0, 2.0, 3.0])), _outer_sum,
                   _outer_sum_calls, OUTER_HINT, _rule(".shape"), compare,
                   lambda x, y: [(OUTER_SWAPPED, _outer_sum(y, x))])


# -- lower_mask -----------------------------------------------------------------------------------------------------

LOWER_HINT = ("Compare a column of row numbers with a row of column numbers: torch.arange(n)[:, None] is the "
              "row i of each entry, torch.arange(n) its column j; the comparison broadcasts to [n, n] booleans.")
LOWER_UPPER = "This is the upper triangle (j >= i): swap the two sides of the comparison, or which one gets None."
LOWER_STRICT = "The diagonal is missing: entry [i, i] is True too, so the comparison is j <= i, not j < i."


def _lower_mask(n: int) -> Tensor:
    return torch.tril(torch.ones(n, n, dtype=torch.bool))


def _lower_mistakes(n: int) -> list[tuple[str, Tensor]]:
    i = torch.arange(n)
    return [(LOWER_UPPER, i[:, None] <= i), (LOWER_STRICT, i[None] < i[:, None]), (LOWER_UPPER, i[:, None] < i)]


LOWER_MASK = Puzzle("lower_mask", ("n",), (3,), _lower_mask, lambda rng: [(n,) for n in [1, 2, *sizes(rng, 2, 3, 13)]],
                    LOWER_HINT, _rule("torch.arange", ".shape"), compare, _lower_mistakes)


# -- one_hot --------------------------------------------------------------------------------------------------------

ONE_HOT_HINT = ("Compare each index with every class number: idx[:, None] is [N, 1], torch.arange(c) is [c], and "
                "== broadcasts them to [N, c] booleans.")
ONE_HOT_SWAPPED = ("The result is [c, N], one column per index: the index takes the new trailing axis "
                   "(idx[:, None]) so that row i belongs to idx[i].")


def _one_hot(idx: Tensor, c: int) -> Tensor:
    return torch.nn.functional.one_hot(idx, c).bool()


def _one_hot_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    """N and c of 1, equal and random; classes repeated and unused."""
    return [(torch.randint(0, c, (n,), generator=rng), c)
            for n, c in [(1, 1), (4, 4), (1, 5), tuple(sizes(rng, 2, 2, 10))]]


ONE_HOT = Puzzle("one_hot", ("idx", "c"), (torch.tensor([2, 0]), 3), _one_hot, _one_hot_calls, ONE_HOT_HINT,
                 _rule("torch.arange", ".shape", ".device"), compare,
                 lambda idx, c: [(ONE_HOT_SWAPPED, _one_hot(idx, c).T)])


# -- rescale_rows ---------------------------------------------------------------------------------------------------

RESCALE_HINT = ("Take each row's smallest and largest entry with .amin(dim=1, keepdim=True) and "
                ".amax(dim=1, keepdim=True): [N, 1] columns that stretch along each row; then (x - low) / "
                "(high - low).")
RESCALE_COLUMNS = ("Each column was rescaled, not each row: amin and amax over dim=0 give one value per column. "
                   "Rows need dim=1.")
RESCALE_NO_KEEPDIM = ("The row minima and maxima lost their axis: x.amin(dim=1) is [N], which lines up with the "
                      "columns (the rule matches from the right). Keep it as [N, 1] with keepdim=True.")


def _rescale_rows(x: Tensor) -> Tensor:
    x64 = x.double()
    low, high = x64.min(1, keepdim=True).values, x64.max(1, keepdim=True).values
    return ((x64 - low) / (high - low)).to(x.dtype)


def _rescale_mistakes(x: Tensor) -> list[tuple[str, Tensor]]:
    low, high = x.amin(0, keepdim=True), x.amax(0, keepdim=True)
    mistakes = [(RESCALE_COLUMNS, (x - low) / (high - low))]
    if x.shape[0] == x.shape[1]:
        mistakes.append((RESCALE_NO_KEEPDIM, (x - x.amin(1)) / (x.amax(1) - x.amin(1))))
    return mistakes


def _distinct_rows(rng: torch.Generator, n: int, d: int, dtype: torch.dtype) -> Tensor:
    """[n, d] with d >= 2 different entries in every row: a random permutation of 0 .. d-1 per row, scaled and
    shifted by a random amount per row, plus noise below the gaps."""
    order = torch.argsort(torch.rand(n, d, generator=rng), dim=1).to(dtype)
    scale = torch.rand(n, 1, generator=rng, dtype=dtype) * 4 + 0.5
    shift = torch.randn(n, 1, generator=rng, dtype=dtype) * 3
    return (order + torch.rand(n, d, generator=rng, dtype=dtype) * 0.5) * scale + shift


def _rescale_rows_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    """N == D first (a lost axis still runs), N = 1, D = 2 and random; float32 and float64."""
    return [(_distinct_rows(rng, n, d, dtype),) for n, d in [(4, 4), (1, 4), (5, 2), tuple(sizes(rng, 2, 2, 9))]
            for dtype in (torch.float32, torch.float64)]


RESCALE_ROWS = Puzzle("rescale_rows", ("x",), (torch.tensor([[1.0, 3.0, 5.0], [4.0, 2.0, 0.0]]),), _rescale_rows,
                      _rescale_rows_calls, RESCALE_HINT, _rule(".amin", ".amax", ".shape"), compare, _rescale_mistakes)


# -- pairwise_l1 ----------------------------------------------------------------------------------------------------

L1_HINT = ("Give x a middle axis and y a leading one: x[:, None] - y[None] is [N, M, D], every difference of a "
           "row of x and a row of y; take .abs() and sum over the last axis, dim=-1.")
L1_SWAPPED = ("The result is [M, N], transposed: row i belongs to x[i], so the difference is x[:, None] - y[None], "
              "not y[:, None] - x[None].")
L1_WRONG_AXIS = "The sum ran over the wrong axis: the features are the last axis of x[:, None] - y[None], dim=-1."
L1_ABS_LATE = "The absolute value comes before the sum: |x - y| summed, not |sum of x - y|."


def _pairwise_l1(x: Tensor, y: Tensor) -> Tensor:
    return torch.cdist(x.double(), y.double(), p=1).to(x.dtype)


def _l1_mistakes(x: Tensor, y: Tensor) -> list[tuple[str, Tensor]]:
    diff = x[:, None] - y[None]
    return [(L1_SWAPPED, _pairwise_l1(y, x)), (L1_WRONG_AXIS, diff.abs().sum(0)),
            (L1_WRONG_AXIS, diff.abs().sum(1)), (L1_ABS_LATE, diff.sum(-1).abs())]


def _pairwise_l1_calls(rng: torch.Generator) -> list[tuple[Any, ...]]:
    """N, M and D of 1, all equal and random."""
    return [(_ints(rng, n, d), _ints(rng, m, d))
            for n, m, d in [(1, 3, 2), (3, 1, 2), (2, 3, 1), (4, 4, 4), tuple(sizes(rng, 3, 2, 8))]]


PAIRWISE_L1 = Puzzle("pairwise_l1", ("x", "y"),
                     (torch.tensor([[0.0, 0.0], [1.0, 2.0]]), torch.tensor([[1.0, 1.0], [0.0, 3.0], [2.0, 2.0]])),
                     _pairwise_l1, _pairwise_l1_calls, L1_HINT, _rule(".abs", ".sum", ".shape"), compare,
                     _l1_mistakes)


PUZZLES: dict[str, Puzzle] = {p.name: p for p in (TIMES_TABLE, OUTER_SUM, LOWER_MASK, ONE_HOT, RESCALE_ROWS,
                                                  PAIRWISE_L1)}

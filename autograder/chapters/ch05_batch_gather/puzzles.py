"""The indexing puzzles of 05_batch_gather: their inputs and oracles, declared as a table (judging/puzzles.py).

Each puzzle is a function whose body is one expression over indexing, arithmetic, torch.arange, torch.gather,
.shape, .device and reshaping (read from the source by puzzle_breaks). Inputs are drawn from the grading's seeded
`rng`; oracles run in the judge, as loops over the rows or with torch's own functions (diagonal, roll).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from autograder.judging.authoring import Puzzle, PuzzleRule, expect_tensor


def random_tensor(rng: torch.Generator, shape: list[int], dtype: torch.dtype) -> Tensor:
    if dtype.is_floating_point:
        return torch.randn(shape, generator=rng, dtype=torch.float64).to(dtype)
    return torch.randint(-100, 100, shape, generator=rng, dtype=dtype)


RULE = PuzzleRule(frozenset({"torch.arange", "torch.gather", ".shape", ".device", ".view", ".reshape", ".flatten"}),
            "one `return <expression>` using indexing, arithmetic, torch.arange, torch.gather, .shape, .device, "
            ".view, .reshape and .flatten",
            "Write the body as one `return` of an expression: no loop, comprehension, lambda or helper "
            "function, and no library function beyond the allowed ones (no torch.diagonal, torch.roll, "
            "torch.take_along_dim, .sum, batch_gather). Row numbers come from torch.arange.")


def _rows(x: Tensor) -> range:
    return range(x.shape[0])


def _values(rng: torch.Generator, shape: list[int], trial: int) -> Tensor:
    return random_tensor(rng, shape, (torch.float32, torch.int64, torch.float64)[trial % 3])


def _ints(rng: torch.Generator, low: int, high: int, *shape: int) -> Tensor:
    return torch.randint(low, high, shape, generator=rng)


Call = Callable[[torch.Generator, int, int, int, int], tuple[Tensor, ...]]


def _draw(make: Call) -> Callable[[torch.Generator], list[tuple[Tensor, ...]]]:
    """Six calls `make(rng, B, N, D, trial)` of random shapes (B from 1 to 6 and N from 2 to 7, never equal, so
    that mixing them up fails)."""
    def draw(rng: torch.Generator) -> list[tuple[Tensor, ...]]:
        calls = []
        for trial in range(6):
            b = int(torch.randint(1, 7, (1,), generator=rng))
            n = b + 1 + int(torch.randint(0, 3, (1,), generator=rng))
            d = int(torch.randint(1, 4, (1,), generator=rng))
            calls.append(make(rng, b, n, d, trial))
        return calls
    return draw


def _last_valid_call(rng: torch.Generator, b: int, n: int, d: int, trial: int) -> tuple[Tensor, ...]:
    lengths = _ints(rng, 1, n + 1, b)
    lengths[0] = n  # a full row, and (B > 1) a row of length 1
    if b > 1:
        lengths[1] = 1
    return _values(rng, [b, n, d], trial), lengths


def _compare(api: Any, p: Puzzle, args: tuple[Any, ...], device: str | None, example: bool) -> None:
    shapes = ", ".join(f"{name} {list(a.shape)}" for name, a in zip(p.params, args, strict=True))
    call = f"{p.name} on the notebook's example" if example else f"{p.name} on random inputs ({shapes})"
    got = getattr(api, p.name).using(hint=p.hint)(*args)
    # Indexing copies values: exact, whatever the dtype.
    expect_tensor(got, p.oracle(*args), call=call, inputs=dict(zip(p.params, args, strict=True)), hint=p.hint,
                  rtol=0.0, atol=0.0, device=device)


PUZZLES = {p.name: p for p in (
    Puzzle("pick_per_row", ("x", "idx"), (torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([1, 0])),
           lambda x, idx: torch.stack([x[i, idx[i]] for i in _rows(x)]),
           _draw(lambda rng, b, n, d, trial: (_values(rng, [b, n], trial), _ints(rng, 0, n, b))),
           "Pair each row number with its index: x[rows, idx] with rows = torch.arange(B), shape [B].", RULE,
           _compare),
    Puzzle("last_valid", ("x", "lengths"), (torch.arange(12.0).reshape(2, 3, 2), torch.tensor([2, 1])),
           lambda x, lengths: torch.stack([x[i, int(lengths[i]) - 1] for i in _rows(x)]), _draw(_last_valid_call),
           "Row i's last real entry is at position lengths[i] - 1, not lengths[i] and not -1.", RULE, _compare),
    Puzzle("batch_diagonal", ("m",), (torch.arange(8.0).reshape(2, 2, 2),),
           lambda m: torch.diagonal(m, dim1=1, dim2=2), _draw(lambda rng, b, n, d, trial: (
               _values(rng, [b, n, n], trial),)),
           "The diagonal pairs position i with position i on both inner axes: index the last two axes with the "
           "same arange(N), keep the batch axis with `:`.", RULE, _compare),
    Puzzle("roll_rows", ("x", "shifts"), (torch.arange(6.0).reshape(2, 3), torch.tensor([1, -1])),
           lambda x, shifts: torch.stack([torch.roll(x[i], int(shifts[i])) for i in _rows(x)]),
           _draw(lambda rng, b, n, d, trial: (_values(rng, [b, n], trial), _ints(rng, -2 * n, 2 * n, b))),
           "Entry j of the rolled row comes from position (j - shift) % N: subtract the shift (a roll by +1 moves "
           "the last entry to the front), and wrap with % N, since shifts may be negative or beyond N.", RULE,
           _compare),
    Puzzle("pick_pair_sum", ("x", "a", "b"),
           (torch.arange(6.0).reshape(2, 3), torch.tensor([0, 2]), torch.tensor([2, 2])),
           lambda x, a, b: torch.stack([x[i, a[i]] + x[i, b[i]] for i in _rows(x)]),
           _draw(lambda rng, b, n, d, trial: (_values(rng, [b, n], trial), _ints(rng, 0, n, b),
                                              _ints(rng, 0, n, b))),
           "Two picks per row, each x[rows, a] with rows = torch.arange(B): one for a, one for b.", RULE, _compare),
    Puzzle("permute_rows", ("x", "perm"), (torch.arange(8.0).reshape(2, 2, 2), torch.tensor([[1, 0], [0, 0]])),
           lambda x, perm: torch.stack([x[i, perm[i]] for i in _rows(x)]),
           _draw(lambda rng, b, n, d, trial: (_values(rng, [b, n, d], trial), torch.stack(
               [torch.randperm(n, generator=rng) for _ in range(b)]))),
           "Row numbers of shape [B, 1] broadcast against perm [B, N]: x[rows, perm] keeps the trailing axis D. "
           "x[:, perm] pairs every batch with every permutation.", RULE, _compare),
)}

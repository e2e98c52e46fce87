"""One-expression puzzles, declared as data: a chapter writes a table of Puzzle and keeps its @check functions,
which call expect_puzzle_rule and expect_puzzle_random (as GPU MODE's reference kernels share one
make_match_reference).

A puzzle's rule (its body is one `return <expression>` over operators, indexing, its parameters and the
operations `PuzzleRule.allowed` names) is read from the task's own cell, and what the code it reaches binds its
names to, by static.rules.puzzle_breaks; a break voids every check of the task (breaks_rule). Its answers are
compared with the oracle by the chapter's own `compare`, since chapters tell a wrong answer differently (named
mistakes as a problem or as the hint, tolerances, how a call is shown).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

from autograder.judging.api import StudentApi
from autograder.judging.expect import failure
from autograder.judging.static.rules import listed, puzzle_breaks, released_stub, task_code


@dataclass(frozen=True)
class PuzzleRule:
    """What a puzzle may use besides operators, indexing, slicing, constants and its parameters, and how a
    break's failure states the rule."""

    allowed: frozenset[str]
    stated: str  # the failure's "expected" line: one `return <expression>` using ...
    hint: str
    problem: str = "the puzzle's rule is broken, so none of this puzzle's checks counts."


class Compare(Protocol):
    """The chapter's comparison of the student's answer on `args` with the oracle; `example` is True for the
    notebook's example, run after the rule. `device` is None when no argument is a tensor (the puzzle makes its
    own)."""

    def __call__(self, api: Any, p: Puzzle, args: tuple[Any, ...], device: str | None, example: bool) -> None: ...


def no_mistakes(*args: Any) -> list[tuple[str, Tensor]]:
    return []


@dataclass(frozen=True)
class Puzzle:
    name: str  # the function the answer cell defines
    params: tuple[str, ...]
    example: tuple[Any, ...]  # the notebook's call
    oracle: Callable[..., Tensor]  # runs in the judge, written with torch's own functions
    draw: Callable[[torch.Generator], Iterable[tuple[Any, ...]]]  # the random calls of the hidden check
    hint: str
    rule: PuzzleRule
    compare: Compare
    # Wrong answers students often give, for these arguments: (what it is, its output); `compare` names the one
    # a wrong answer matches.
    mistakes: Callable[..., list[tuple[str, Tensor]]] = no_mistakes
    rtol: float = 1e-5
    atol: float = 1e-6

    @property
    def call(self) -> str:
        """The call by its parameters' names, e.g. "band(x, lo, hi)"."""
        return f"{self.name}({', '.join(self.params)})"


def mistake_id(p: Puzzle, what: str) -> str:
    """A stable id of one of the puzzle's named mistakes, for the class report to group failures by."""
    return f"{p.name}/" + re.sub(r"[^a-z0-9]+", "-", what.lower()).strip("-")[:60]


def expect_puzzle(api: StudentApi, p: Puzzle, args: tuple[Any, ...], device: str | None, example: bool = False
                  ) -> None:
    """The student's `p` on `args` against its oracle, by the chapter's comparison; on `device` only where an
    argument is a tensor (a puzzle like 03's lower_mask(n) makes its own)."""
    on = device if any(isinstance(a, Tensor) for a in args) else None
    p.compare(api, p, args, on, example)


def expect_puzzle_rule(api: StudentApi, p: Puzzle, device: str | None) -> None:
    """The rule, read from the puzzle's own cell before anything runs (a break voids its checks); then the
    notebook's example, answered right (a stub earns no point for keeping the rule). The untouched stub runs
    first, so that its NotImplementedError is the verdict rather than a broken rule."""
    code = task_code(api.student.submission, p.name)
    if released_stub(code, p.name):
        getattr(api, p.name)(*p.example)
    breaks = puzzle_breaks(code, p.name, p.rule.allowed)
    if breaks:
        raise failure(call=f"the judge's reading of the code of `{p.name}`", expected=p.rule.stated,
                      got=listed(breaks), problem=p.rule.problem, hint=p.rule.hint, breaks_rule=True)
    expect_puzzle(api, p, p.example, device, example=True)


def expect_puzzle_random(api: StudentApi, p: Puzzle, rng: torch.Generator, device: str | None) -> None:
    """The student's `p` against its oracle on every call `p.draw` makes from the grading's `rng`."""
    for args in p.draw(rng):
        expect_puzzle(api, p, args, device)

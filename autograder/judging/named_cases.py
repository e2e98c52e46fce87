"""The vocabulary in which a chapter's cases.py declares its named cases: @wrong, @right and @cell.

A decorator reads the function's body as an answer cell's code and records it (DeclaredCase); nothing here knows a
chapter. Loading a chapter's cases, checking them against it and building each case's cells is the course
layer's (autograder/course/cases.py, whose docstring describes the vocabulary in full).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

# The students of the example class (examples/submitted/, autograder/course/examples.py) whose notebook a case
# can be declared for: ben makes one common mistake per chapter; dev's mistakes come with a stray exit, and cleo
# and eve hand in odd notebooks in the chapters where dev does.
ExampleStudent = Literal["ben", "dev"]


class CaseError(ValueError):
    """A case does not fit its chapter (or its function is not one); the message says which and where."""


@dataclass(frozen=True)
class DeclaredCase:
    """A case as its decorator records it, before it is checked against its chapter."""

    kind: Literal["wrong", "right", "cell"]
    name: str  # the case's name; for a @cell, its function's
    code: str  # the function's body, dedented: an answer cell's code
    where: str  # file:line of its decorator, for error messages
    module: str  # the module that declares it
    cell: str | None = None  # the answer cell it replaces; None: the one whose name the code defines
    edits: str | DeclaredCase | None = None  # its code is an edit of this cell's reference code, or of this case's
    also: tuple[DeclaredCase, ...] = ()  # other cells it replaces
    fails: dict[str, str] = field(default_factory=dict)  # wrong: check -> a phrase its message must contain
    only: str = ""  # right: the pytest -k selection that grades it
    points: float = 0.0  # right: the points of the checks `only` selects, all of them earned
    bonus: float = 0.0  # right: their bonus points, all of them earned
    devices: tuple[str, ...] = ("cpu", "cuda")  # wrong: the devices whose grading can show its mistake
    example: ExampleStudent | None = None  # wrong, cell: the example class's student whose notebook holds its cells


def _body(fn: Callable[..., Any]) -> tuple[str, str]:
    """(the function's body after its docstring, dedented; the file:line of its decorator)."""
    try:
        lines, first = inspect.getsourcelines(fn)
        path = inspect.getsourcefile(fn)
    except (OSError, TypeError) as e:
        raise CaseError(f"{fn.__qualname__}: a case is a function whose source can be read ({e})") from None
    source = textwrap.dedent("".join(lines)).splitlines(keepends=True)  # its decorators, then the function
    func = ast.parse("".join(source)).body[0]
    if not isinstance(func, ast.FunctionDef):
        raise CaseError(f"{path}:{first}: a case is a function")
    where = f"{path}:{first}"  # its decorator's line
    if func.args.args or func.args.vararg or func.args.kwarg or func.args.kwonlyargs or func.args.posonlyargs:
        raise CaseError(f"{where}: a case is a function without arguments, its body an answer cell's code")
    body, start = list(func.body), func.lineno + 1  # the code starts on the line after the header
    if body[0].lineno == func.lineno:
        raise CaseError(f"{where}: put {fn.__name__}'s code on the lines after its header")
    if ast.get_docstring(func, clean=False) is not None:  # the case's description, no part of the cell
        start = (body.pop(0).end_lineno or func.lineno) + 1
    if not body:
        raise CaseError(f"{where}: {fn.__name__} has no code, only a docstring")
    return textwrap.dedent("".join(source[start - 1:func.end_lineno])).strip("\n") + "\n", where


def _declare(kind: Literal["wrong", "right", "cell"], name: str | None, **fields: Any
             ) -> Callable[[Callable[..., Any]], DeclaredCase]:
    def declare(fn: Callable[..., Any]) -> DeclaredCase:
        code, where = _body(fn)
        if name is not None and not (isinstance(name, str) and name.strip()):
            raise CaseError(f"{where}: a case needs a name")
        edits = fields.get("edits")
        if edits is not None:
            if not (isinstance(edits, DeclaredCase) or (isinstance(edits, str) and edits.strip())):
                raise CaseError(f"{where}: edits= names an answer cell, or is a case or @cell declared above")
            if fields.get("cell") is not None:
                raise CaseError(f"{where}: edits= names the cell it replaces: leave out cell=")
        return DeclaredCase(kind, fn.__name__ if name is None else name, code, where, fn.__module__, **fields)

    return declare


def _student(example: ExampleStudent | None, declaration: str) -> ExampleStudent | None:
    if example is not None and example not in get_args(ExampleStudent):
        raise CaseError(f"{declaration}: example= names a student of the example class: "
                        f"{' or '.join(get_args(ExampleStudent))}")
    return example


def wrong(name: str, *, fails: dict[str, str], cell: str | None = None, edits: str | DeclaredCase | None = None,
          also: Sequence[DeclaredCase] = (), devices: Sequence[str] = ("cpu", "cuda"),
          example: ExampleStudent | None = None
          ) -> Callable[[Callable[..., Any]], DeclaredCase]:
    """A named wrong implementation: each check in `fails` must fail on it, its message containing the phrase,
    when graded on each of `devices` (a mistake that one device's grading cannot show names the others).
    `example="ben"`: the example class's ben makes this mistake in this chapter (see ExampleStudent)."""
    if not set(devices) <= {"cpu", "cuda"} or not devices:
        raise CaseError(f"wrong({name!r}): devices= names cpu and/or cuda")
    return _declare("wrong", name, fails=dict(fails), cell=cell, edits=edits, also=tuple(also),
                    devices=tuple(devices), example=_student(example, f"wrong({name!r})"))


def right(name: str, *, only: str, points: float = 0.0, bonus: float = 0.0, cell: str | None = None,
          edits: str | DeclaredCase | None = None, also: Sequence[DeclaredCase] = ()
          ) -> Callable[[Callable[..., Any]], DeclaredCase]:
    """A correct form: the checks `only` selects are worth `points` and `bonus`, and it earns them all."""
    return _declare("right", name, only=only, points=float(points), bonus=float(bonus), cell=cell, edits=edits,
                    also=tuple(also))


def cell(grade_id: str | None = None, *, edits: str | DeclaredCase | None = None, example: ExampleStudent | None = None
         ) -> Callable[[Callable[..., Any]], DeclaredCase]:
    """An answer cell's code that is no case on its own: for a case that replaces several cells (`also=`), the
    code that several cases edit (`edits=`), or a cell the example class's `example` student hands in."""
    return _declare("cell", None, cell=grade_id, edits=edits, example=_student(example, f"cell({grade_id!r})"))

"""A chapter's named wrong and correct implementations, written as real code in its folder's cases.py.

Each is a function, never called, whose body is the code of an answer cell:

    @wrong("backward() fills x.grad", fails={"check_grad_of_leaves_x_grad_alone": "x.grad"})
    def backward_fills_x_grad():
        def grad_of(fn, x):
            x.requires_grad_(True)
            fn(x).backward()
            return x.grad

The body, dedented, replaces that cell of the reference solution; a docstring first describes the case and is
no part of the cell. The cell is the one answer cell whose name the body defines at its top level, or the one
`cell=` names; `also=` adds other cells, each a function decorated with @cell (or another case). The functions
stay unannotated, so that a type checker leaves the student-like code in them alone; ruff lints it as any code
(cases.py imports what the notebook's imports cell does; a name that another answer cell defines needs
`# noqa: F821`), and tests/chapters/test_every_chapter.py checks that each name a case reads is one its notebook
gives it.

- @wrong: a named wrong implementation. Each check in `fails` must fail on it, its message containing the
  phrase given; `python -m autograder selftest` and tests/chapters/test_every_chapter.py grade it so.
- @right: a correct form other than the reference. Graded by the checks `only` selects (pytest -k), it earns
  all of their `points` and their whole `bonus`, as tests/chapters/test_every_chapter.py asserts.

Loading a chapter's cases checks them against the chapter before anything is graded: each cell is one of its
answer cells, each check in `fails` one that its checks module declares, each cell's code compiles, and no
two cases share a name. A CaseError says what is wrong and where.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
import importlib.util
import inspect
import itertools
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Literal

from autograder.judging.chapter import Chapter
from autograder.judging.plugin import declared_checks
from autograder.judging.registry import CHAPTERS, CHAPTERS_DIR

CASES = "cases.py"  # in a chapter's folder: never shipped to Gradescope (autograder/course/bundle.py)


class CaseError(ValueError):
    """A case does not fit its chapter (or its function is not one); the message says which and where."""


@dataclass(frozen=True)
class Declared:
    """A case as its decorator records it, before it is checked against its chapter."""

    kind: Literal["wrong", "right", "cell"]
    name: str  # the case's name; for a @cell, its function's
    code: str  # the function's body, dedented: an answer cell's code
    where: str  # file:line of its decorator, for error messages
    module: str  # the module that declares it
    cell: str | None = None  # the answer cell it replaces; None: the one whose name the code defines
    also: tuple[Declared, ...] = ()  # other cells it replaces
    fails: dict[str, str] = field(default_factory=dict)  # wrong: check -> a phrase its message must contain
    only: str = ""  # right: the pytest -k selection that grades it
    points: float = 0.0  # right: the points of the checks `only` selects, all of them earned
    bonus: float = 0.0  # right: their bonus points, all of them earned


@dataclass(frozen=True)
class Mutant:
    """A named wrong implementation: fails each check in `fails`, with its phrase."""

    chapter: str
    name: str
    cells: dict[str, str]  # answer cell (grade_id) -> the code replacing the reference
    fails: dict[str, str]  # check that must fail -> a phrase its message must contain

    kind: ClassVar[str] = "wrong"

    @property
    def id(self) -> str:
        return f"{self.chapter}/{self.kind}/{self.name}"


@dataclass(frozen=True)
class CorrectForm:
    """A correct implementation unlike the reference: graded by `only`, it earns `points` and `bonus` whole."""

    chapter: str
    name: str
    cells: dict[str, str]  # answer cell (grade_id) -> the code replacing the reference
    only: str  # pytest -k selection of the checks that grade it
    points: float  # what those checks are worth (score == max_score == points)
    bonus: float  # their bonus points (bonus == bonus_max == bonus)

    kind: ClassVar[str] = "right"

    @property
    def id(self) -> str:
        return f"{self.chapter}/{self.kind}/{self.name}"


@dataclass(frozen=True)
class Cases:
    """A chapter's cases, each kind in the order its cases.py declares them."""

    wrong: tuple[Mutant, ...] = ()
    right: tuple[CorrectForm, ...] = ()


# -- declaring -----------------------------------------------------------------------------------------------


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
             ) -> Callable[[Callable[..., Any]], Declared]:
    def declare(fn: Callable[..., Any]) -> Declared:
        code, where = _body(fn)
        if name is not None and not (isinstance(name, str) and name.strip()):
            raise CaseError(f"{where}: a case needs a name")
        return Declared(kind, fn.__name__ if name is None else name, code, where, fn.__module__, **fields)

    return declare


def wrong(name: str, *, fails: dict[str, str], cell: str | None = None, also: Sequence[Declared] = ()
          ) -> Callable[[Callable[..., Any]], Declared]:
    """A named wrong implementation: each check in `fails` must fail on it, its message containing the phrase."""
    return _declare("wrong", name, fails=dict(fails), cell=cell, also=tuple(also))


def right(name: str, *, only: str, points: float = 0.0, bonus: float = 0.0, cell: str | None = None,
          also: Sequence[Declared] = ()) -> Callable[[Callable[..., Any]], Declared]:
    """A correct form: the checks `only` selects are worth `points` and `bonus`, and it earns them all."""
    return _declare("right", name, only=only, points=float(points), bonus=float(bonus), cell=cell,
                    also=tuple(also))


def cell(grade_id: str | None = None) -> Callable[[Callable[..., Any]], Declared]:
    """An answer cell's code that is no case on its own, for a case that replaces several cells (`also=`)."""
    return _declare("cell", None, cell=grade_id)


# -- loading ------------------------------------------------------------------------------------------------


def defined_names(code: str) -> set[str]:
    """The names a cell's code binds at its top level: functions, classes, assignments and imports."""
    names: set[str] = set()
    for node in ast.parse(code).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _cells(chapter: Chapter, case: Declared) -> dict[str, str]:
    """The cells a case replaces, each checked against the chapter."""
    try:
        compile(case.code, case.where, "exec")
    except SyntaxError as e:
        raise CaseError(f"{case.where}: {case.name!r}: its code does not compile once dedented ({e.msg}, line "
                        f"{e.lineno} of the cell)") from None
    grade_id = case.cell
    if grade_id is None:
        found = sorted(defined_names(case.code) & set(chapter.answers))
        if len(found) != 1:
            defines = f"the answer cells {', '.join(found)}" if found else "no answer cell"
            raise CaseError(f"{case.where}: {case.name!r} defines {defines}: name the cell it replaces with "
                            f"cell= (one of: {', '.join(chapter.answers)})")
        grade_id = found[0]
    elif grade_id not in chapter.answers:
        raise CaseError(f"{case.where}: {case.name!r} replaces cell {grade_id!r}, which {chapter.id} does not "
                        f"have (its answer cells: {', '.join(chapter.answers)})")
    cells = {grade_id: case.code}
    for other in case.also:
        for grade_id, code in _cells(chapter, other).items():
            if grade_id in cells:
                raise CaseError(f"{case.where}: {case.name!r} replaces cell {grade_id!r} twice (also=)")
            cells[grade_id] = code
    return cells


def _checks_module(chapter: Chapter) -> ModuleType:
    if chapter.folder.parent == CHAPTERS_DIR:
        return importlib.import_module(f"autograder.chapters.{chapter.folder.name}.checks")
    return _module_at(chapter.checks, f"_cases_checks_{chapter.folder.name}")


def _module_at(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CaseError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect reads the cases' source through it
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


_LOADED = itertools.count()  # names the modules loaded from a path of one's own


def load(chapter: Chapter, path: Path | None = None) -> Cases:
    """The cases `path` declares (default: the chapter folder's cases.py; none if it has none), each checked
    against the chapter; CaseError for the first that does not fit."""
    path = path or chapter.folder / CASES
    if not path.is_file():
        return Cases()
    if path == chapter.folder / CASES and chapter.folder.parent == CHAPTERS_DIR:
        module = importlib.import_module(f"autograder.chapters.{chapter.folder.name}.cases")
    else:
        module = _module_at(path, f"_cases_{chapter.folder.name}_{next(_LOADED)}")
    declared = [v for v in vars(module).values()
                if isinstance(v, Declared) and v.module == module.__name__ and v.kind != "cell"]
    checks = declared_checks(_checks_module(chapter))
    wrong: list[Mutant] = []
    right: list[CorrectForm] = []
    names: set[str] = set()
    for case in declared:
        if case.name in names:
            raise CaseError(f"{case.where}: another case of {chapter.id} is named {case.name!r}")
        names.add(case.name)
        cells = _cells(chapter, case)
        if case.kind == "wrong":
            if not case.fails:
                raise CaseError(f"{case.where}: {case.name!r} names no check that must fail on it (fails=)")
            for check, phrase in case.fails.items():
                if check not in checks:
                    near = difflib.get_close_matches(check, checks, n=1)
                    raise CaseError(f"{case.where}: {case.name!r} must fail {check!r}, which "
                                    f"{chapter.checks_name} does not declare"
                                    + (f" (did you mean {near[0]!r}?)" if near else ""))
                if not (isinstance(phrase, str) and phrase):
                    raise CaseError(f"{case.where}: {case.name!r}: {check} needs a phrase its message must contain")
            wrong.append(Mutant(chapter.id, case.name, cells, dict(case.fails)))
        else:
            if not case.only.strip():
                raise CaseError(f"{case.where}: {case.name!r} needs only=, the checks that grade it (pytest -k)")
            if case.points < 0 or case.bonus < 0 or case.points + case.bonus == 0:
                raise CaseError(f"{case.where}: {case.name!r} must be worth some points or bonus (points=, bonus=)")
            right.append(CorrectForm(chapter.id, case.name, cells, case.only, case.points, case.bonus))
    return Cases(tuple(wrong), tuple(right))


@functools.cache
def cases(chapter: str) -> Cases:
    """The registered chapter's cases, from its folder's cases.py."""
    return load(CHAPTERS[chapter])


def mutants(chapter: str) -> list[Mutant]:
    """The chapter's named wrong implementations, in the order its cases.py declares them."""
    return list(cases(chapter).wrong)


def correct_forms(chapter: str) -> list[CorrectForm]:
    """The chapter's correct forms other than the reference, in the order its cases.py declares them."""
    return list(cases(chapter).right)


def all_mutants() -> list[Mutant]:
    """Every registered chapter's named wrong implementations, chapter by chapter."""
    return [m for chapter in CHAPTERS for m in mutants(chapter)]


def mutant(chapter: str, name: str) -> Mutant:
    """The chapter's named wrong implementation `name`."""
    found = [m for m in mutants(chapter) if m.name == name]
    if not found:
        raise KeyError(f"{chapter} has no wrong implementation named {name!r}")
    return found[0]

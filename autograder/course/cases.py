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

A case that is the reference with small changes says so with `edits=`, and its body holds only what differs:

    @wrong("product rule without u w'", fails={"check_dual_polynomial": "(u w)' = u' w + u w'"}, edits="Dual")
    def product_rule_without_u_w():
        class Dual:
            def __mul__(self, other):
                o = Dual.lift(other)
                if o is NotImplemented:
                    return o
                return Dual.make(self.value * o.value, self.tangent * o.value)

`edits=` names the answer cell whose reference code is edited (autograder/course/reference.py), or another
case or @cell declared above, whose (edited) code is edited in turn: several wrong forms of one compact
variant edit it, not the reference. The edit is applied to the code's syntax tree (see `edit`): each top-level
def or class of the body replaces the one of that name (a new one is appended); a class whose name the code
already defines is merged member by member instead: each method or class-level assignment replaces the member
of that name (a new one is appended), and `del name` in it removes that member (`del name` at the top level
removes a top-level definition). The cell's code is then `ast.unparse` of the result: the base's docstrings
stay, its comments go. A name that the body reads and the base defines, and each name a `del` removes, needs
`# noqa: F821` as a name of another cell does.

- @wrong: a named wrong implementation. Each check in `fails` must fail on it, its message containing the
  phrase given; `python -m autograder selftest` and tests/chapters/test_every_chapter.py grade it so.
- @right: a correct form other than the reference. Graded by the checks `only` selects (pytest -k), it earns
  all of their `points` and their whole `bonus`, as tests/chapters/test_every_chapter.py asserts.

Loading a chapter's cases checks them against the chapter before anything is graded: each cell is one of its
answer cells, each check in `fails` one that its checks module declares, each cell's code compiles, each edit
removes only what its base has, and no two cases share a name. A CaseError says what is wrong and where.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
import importlib.util
import itertools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import ClassVar

from autograder import CHECKOUT
from autograder.course.reference import solution_cells
from autograder.judging.chapter import Chapter
from autograder.judging.named_cases import CaseError, DeclaredCase
from autograder.judging.plugin import declared_checks
from autograder.judging.registry import CHAPTERS, CHAPTERS_DIR

CASES = "cases.py"  # in a chapter's folder: never shipped to Gradescope (autograder/course/bundle.py)


@dataclass(frozen=True)
class Mutant:
    """A named wrong implementation: fails each check in `fails`, with its phrase."""

    chapter: str
    name: str
    cells: dict[str, str]  # answer cell (grade_id) -> the code replacing the reference
    fails: dict[str, str]  # check that must fail -> a phrase its message must contain
    devices: tuple[str, ...] = ("cpu", "cuda")  # where its mistake shows (float16 for dtype=bfloat16: CPU only)

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
    # a student of the example class -> the answer cells (grade_id -> code) that the cases and @cells declared
    # with example=<student> replace in their notebook (autograder/course/examples.py)
    examples: dict[str, dict[str, str]] = field(default_factory=dict)


# -- editing ------------------------------------------------------------------------------------------------


def _key(node: ast.stmt) -> str | None:
    """The name a definition binds: a def's, a class's, or that of an assignment to one plain name."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def _deleted(node: ast.Delete, where: str) -> list[str]:
    if not all(isinstance(t, ast.Name) for t in node.targets):
        raise CaseError(f"{ast.unparse(node)!r}: `del` in an edit removes definitions of {where} by name")
    return [t.id for t in node.targets if isinstance(t, ast.Name)]


def _index(body: list[ast.stmt], name: str, where: str) -> int | None:
    """Where in `body` the definition of `name` stands; None if it has none, CaseError if several."""
    found = [i for i, node in enumerate(body) if _key(node) == name]
    if len(found) > 1:
        raise CaseError(f"{where} defines {name} {len(found)} times: an edit cannot tell which it replaces")
    return found[0] if found else None


def _merge(body: list[ast.stmt], changes: list[ast.stmt], where: str, members: bool) -> None:
    """Apply `changes` to `body` in place: each definition replaces the one of its name (or is appended), `del`
    removes one; at the top level (members=False) a class whose name `body` defines as a class is merged."""
    kinds = "methods, class-level assignments and `del`" if members else "defs, classes and `del`"
    for node in changes:
        if isinstance(node, ast.Delete):
            for name in _deleted(node, where):
                i = _index(body, name, where)
                if i is None:
                    raise CaseError(f"cannot delete {name}: {where} has no {name}")
                del body[i]
            continue
        key = _key(node)
        if key is None or not (members or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))):
            raise CaseError(f"an edit of {where} holds only {kinds}, not {ast.unparse(node).splitlines()[0]!r}")
        i = _index(body, key, where)
        if isinstance(node, ast.ClassDef) and not members:
            base = body[i] if i is not None else None
            if isinstance(base, ast.ClassDef):
                _merge_class(base, node)
                continue
            if any(isinstance(m, ast.Delete) for m in node.body):
                raise CaseError(f"cannot delete from class {key}: {where} has no class {key}")
        if i is None:
            body.append(node)
        else:
            body[i] = node


def _merge_class(base: ast.ClassDef, changes: ast.ClassDef) -> None:
    """Merge the members of `changes` into `base`, the class of that name; their headers must be the same."""
    if any([ast.dump(n) for n in getattr(base, part)] != [ast.dump(n) for n in getattr(changes, part)]
           for part in ("bases", "keywords", "decorator_list")):
        args = ", ".join(ast.unparse(n) for n in [*base.bases, *base.keywords])
        header = "".join(f"@{ast.unparse(d)} " for d in base.decorator_list) + f"class {base.name}({args}):"
        raise CaseError(f"class {base.name}: an edit changes its members, not its header: write it as "
                        f"{header.replace('()', '')!r}, or delete the class and define it anew")
    _merge(base.body, changes.body, f"class {base.name}", members=True)
    if not base.body:
        base.body.append(ast.Pass())


def edit(base: str, changes: str) -> str:
    """`base` (an answer cell's code) edited by `changes`, both code: each top-level def or class of `changes`
    replaces the one of that name in `base` or is appended; a class that `base` defines is merged member by
    member instead (each method or class-level assignment replaces the member of that name or is appended; `del
    name` removes one); `del name` at the top level removes a definition. The result is `ast.unparse` of the
    edited tree. CaseError if `changes` holds other statements, or deletes what `base` does not have."""
    tree = ast.parse(base)
    _merge(tree.body, ast.parse(changes).body, "the cell", members=False)
    return ast.unparse(tree) + "\n"


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


def _cell(chapter: Chapter, case: DeclaredCase, reference: Callable[[], Mapping[str, str]]) -> tuple[str, str]:
    """The answer cell a case's own code replaces, and the code replacing it: the case's, or its edit applied."""
    try:
        compile(case.code, case.where, "exec")
    except SyntaxError as e:
        raise CaseError(f"{case.where}: {case.name!r}: its code does not compile once dedented ({e.msg}, line "
                        f"{e.lineno} of the cell)") from None
    if isinstance(case.edits, DeclaredCase):
        grade_id, base = _cell(chapter, case.edits, reference)
        edited = f"{'@cell' if case.edits.kind == 'cell' else 'case'} {case.edits.name!r}"
    elif case.edits is not None:
        grade_id, edited = case.edits, f"the reference of cell {case.edits!r}"
        if grade_id not in chapter.answers:
            raise CaseError(f"{case.where}: {case.name!r} edits cell {grade_id!r}, which {chapter.id} does not "
                            f"have (its answer cells: {', '.join(chapter.answers)})")
        if grade_id not in reference():
            raise CaseError(f"{case.where}: {case.name!r} edits cell {grade_id!r}, which the reference solution "
                            f"of {chapter.id} does not have")
        base = reference()[grade_id]
    elif case.cell is None:
        found = sorted(defined_names(case.code) & set(chapter.answers))
        if len(found) != 1:
            defines = f"the answer cells {', '.join(found)}" if found else "no answer cell"
            raise CaseError(f"{case.where}: {case.name!r} defines {defines}: name the cell it replaces with "
                            f"cell= (one of: {', '.join(chapter.answers)})")
        return found[0], case.code
    elif case.cell not in chapter.answers:
        raise CaseError(f"{case.where}: {case.name!r} replaces cell {case.cell!r}, which {chapter.id} does not "
                        f"have (its answer cells: {', '.join(chapter.answers)})")
    else:
        return case.cell, case.code
    try:
        return grade_id, edit(base, case.code)
    except CaseError as e:
        raise CaseError(f"{case.where}: {case.name!r} edits {edited}: {e}") from None


def _cells(chapter: Chapter, case: DeclaredCase, reference: Callable[[], Mapping[str, str]]) -> dict[str, str]:
    """The cells a case replaces, each checked against the chapter."""
    grade_id, code = _cell(chapter, case, reference)
    cells = {grade_id: code}
    for other in case.also:
        for grade_id, code in _cells(chapter, other, reference).items():
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


def load(chapter: Chapter, path: Path | None = None, root: Path = CHECKOUT) -> Cases:
    """The cases `path` declares (default: the chapter folder's cases.py; none if it has none), each checked
    against the chapter; CaseError for the first that does not fit. Edits read the reference solution from the
    source notebook of the course at `root`."""
    path = path or chapter.folder / CASES
    if not path.is_file():
        return Cases()
    if path == chapter.folder / CASES and chapter.folder.parent == CHAPTERS_DIR:
        module = importlib.import_module(f"autograder.chapters.{chapter.folder.name}.cases")
    else:
        module = _module_at(path, f"_cases_{chapter.folder.name}_{next(_LOADED)}")
    found = [v for v in vars(module).values() if isinstance(v, DeclaredCase) and v.module == module.__name__]
    declared = [v for v in found if v.kind != "cell"]
    checks = declared_checks(_checks_module(chapter))

    @functools.cache
    def reference() -> dict[str, str]:  # read once, and only for a case that edits it
        try:
            return solution_cells(chapter.id, root)
        except OSError as e:
            raise CaseError(f"{path}: its edits need {chapter.id}'s reference solution, which cannot be read "
                            f"({e})") from None

    wrong: list[Mutant] = []
    right: list[CorrectForm] = []
    names: set[str] = set()
    for case in declared:
        if case.name in names:
            raise CaseError(f"{case.where}: another case of {chapter.id} is named {case.name!r}")
        names.add(case.name)
        cells = _cells(chapter, case, reference)
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
            wrong.append(Mutant(chapter.id, case.name, cells, dict(case.fails), case.devices))
        else:
            if not case.only.strip():
                raise CaseError(f"{case.where}: {case.name!r} needs only=, the checks that grade it (pytest -k)")
            if case.points < 0 or case.bonus < 0 or case.points + case.bonus == 0:
                raise CaseError(f"{case.where}: {case.name!r} must be worth some points or bonus (points=, bonus=)")
            right.append(CorrectForm(chapter.id, case.name, cells, case.only, case.points, case.bonus))
    examples: dict[str, dict[str, str]] = {}
    for case in found:
        if case.example is not None:
            handed_in = examples.setdefault(case.example, {})
            cells = _cells(chapter, case, reference)
            if set(cells) & set(handed_in):
                raise CaseError(f"{case.where}: {case.name!r} replaces a cell of {case.example}'s example "
                                f"notebook that another case declared for {case.example} replaces")
            handed_in.update(cells)
    return Cases(tuple(wrong), tuple(right), examples)


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

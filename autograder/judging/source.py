"""The judge's own reading of a task's code, for rules that only the source can show.

Some rules of an exercise are about how it is written, not what it returns:
07's softmax is built by hand, not with torch.softmax; 08's step uses torch.amp,
not the deprecated torch.cuda.amp. Nothing measured inside the student's process
can show them honestly, so the judge reads the code itself, with `ast` (nothing
is run). A rule is checked on the code the task can reach: its own answer cell and
every definition it uses from other answer cells, transitively. It costs that task alone
(a check declared `@check(..., rule=True)`, autograder/judging/plugin.py).

Names the judge cannot read (an attribute looked up by a computed string, exec,
__import__) would hide a forbidden call, so where a rule applies they break it
too; the notebook states both.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from autograder.judging.notebook import Submission
from autograder.judging.scan import folded

DYNAMIC_LOOKUPS = {"getattr", "setattr", "delattr", "hasattr", "attrgetter", "methodcaller"}
RUNS_STRINGS = {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "import_module"}
NAMESPACES = {"__dict__", "__getattribute__", "__builtins__", "__globals__"}


@dataclass(frozen=True)
class Use:
    cell: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"cell '{self.cell}', line {self.line}: {self.text}"


@dataclass(frozen=True)
class TaskCode:
    """The code a task can reach, parsed: (cell id, tree) of its own cell, then of the definitions it uses from
    other answer cells."""

    task: str
    cells: tuple[tuple[str, ast.Module], ...]

    def walk(self) -> Iterator[tuple[str, ast.AST]]:
        for cell, tree in self.cells:
            for node in ast.walk(tree):
                yield cell, node


def _binds(node: ast.stmt) -> set[str]:
    """Names a top-level statement binds (def, class, assignment, import)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {a.asname or a.name.split(".")[0] for a in node.names}
    return set()


def _loaded(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def task_code(submission: Submission, task: str, stop: AbstractSet[str] = frozenset()) -> TaskCode:
    """The task's own cell, whole, and from the other answer cells every top-level definition of a name it
    loads, transitively, except the names in `stop` (ones the grading replaces). A cell that does not parse is
    left out: it fails to load, and every check of its task fails with it."""
    trees: dict[str, ast.Module] = {}
    for cell in submission.cells:
        try:
            trees[cell["id"]] = ast.parse(cell["source"])
        except (SyntaxError, ValueError):
            continue
    if task not in trees:
        return TaskCode(task, ())
    taken: dict[str, list[ast.stmt]] = {task: list(trees[task].body)}
    todo: list[ast.AST] = [trees[task]]
    while todo:
        wanted = _loaded(todo.pop()) - stop
        for name, tree in trees.items():
            if name == task:
                continue
            for node in tree.body:
                if wanted & _binds(node) and node not in taken.setdefault(name, []):
                    taken[name].append(node)
                    todo.append(node)
    return TaskCode(task, tuple((name, ast.Module(body=body, type_ignores=[])) for name, body in taken.items()
                                if body))


def _imported(code: TaskCode) -> dict[str, str]:
    """Names bound by imports in the reached cells -> the dotted name each stands for."""
    names: dict[str, str] = {}
    for _, node in code.walk():
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                names[a.asname or a.name] = f"{node.module or ''}.{a.name}"
    return names


def _lookup_names(node: ast.Call) -> list[str | None]:
    """The attribute names a getattr-like call looks up (None: computed at run time)."""
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name in {"attrgetter", "methodcaller"}:
        args = node.args[:1] if name == "methodcaller" else node.args
        return [folded(a) for a in args]
    if name in DYNAMIC_LOOKUPS and len(node.args) > 1:
        return [folded(node.args[1])]
    return []


def names_used(code: TaskCode, names: Iterable[str]) -> list[Use]:
    """Every place the reached code names one of `names`: as an attribute of anything (torch.softmax,
    x.softmax, F.cross_entropy), an import (from torch import softmax), or a getattr-like lookup with a name
    built from constants (getattr(torch, "soft" + "max")). The student's own functions of that name are not
    counted (07's softmax cell defines `softmax`)."""
    wanted = set(names)
    imported = _imported(code)
    found: list[Use] = []
    for cell, node in code.walk():
        hits: list[str] = []
        if isinstance(node, ast.Attribute) and node.attr in wanted:
            hits.append(ast.unparse(node))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            hits += [f"import {a.name}" for a in node.names
                     if wanted & set(f"{module}.{a.name}".split("."))]
        elif isinstance(node, ast.Name) and node.id in imported and wanted & set(imported[node.id].split(".")):
            hits.append(f"{node.id} (imported as {imported[node.id]})")
        elif isinstance(node, ast.Call):
            for looked in _lookup_names(node):
                if looked is not None and wanted & set(looked.split(".")):
                    hits.append(ast.unparse(node))
        found += [Use(cell, getattr(node, "lineno", 0), _short(text)) for text in hits]
    return _unique(found)


def unreadable(code: TaskCode) -> list[Use]:
    """Places where the reached code names something the judge cannot read: an attribute looked up by a name
    computed at run time (except on the student's own `self`), code run from strings, imports by name, and
    namespaces used as dictionaries."""
    found: list[Use] = []
    for cell, node in code.walk():
        text = None
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            looked = _lookup_names(node)
            own = bool(node.args) and isinstance(node.args[0], ast.Name) and node.args[0].id in {"self", "cls"}
            if any(n is None for n in looked) and not own:
                text = f"{ast.unparse(node)}: an attribute name computed at run time"
            elif name in RUNS_STRINGS:
                text = f"{ast.unparse(node)}: code or names from strings"
        elif isinstance(node, ast.Attribute) and node.attr in NAMESPACES:
            text = f"{ast.unparse(node)}: a namespace used as a dictionary"
        if text:
            found.append(Use(cell, getattr(node, "lineno", 0), _short(text)))
    return _unique(found)


def subclasses(code: TaskCode, base: str) -> list[tuple[str, ast.ClassDef]]:
    """(cell, class) for every class in the reached code deriving from `base` (a dotted name such as
    torch.autograd.Function), however it was imported."""
    imported = _imported(code)
    found = []
    for cell, node in code.walk():
        if isinstance(node, ast.ClassDef):
            for b in node.bases:
                root = b
                attrs: list[str] = []
                while isinstance(root, ast.Attribute):
                    attrs.insert(0, root.attr)
                    root = root.value
                if isinstance(root, ast.Name) and ".".join([imported.get(root.id, root.id), *attrs]) == base:
                    found.append((cell, node))
    return found


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _unique(uses: list[Use]) -> list[Use]:
    return sorted(set(uses), key=lambda u: (u.cell, u.line, u.text))


def listed(uses: list[Use], most: int = 5) -> str:
    """Uses as lines for a message, the first `most` of them."""
    more = len(uses) - most
    return "; ".join(str(u) for u in uses[:most]) + (f"; and {more} more" if more > 0 else "")

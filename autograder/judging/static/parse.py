"""Reading student code without running it: the cells' syntax trees, constant strings, the names imports bind.

The review flags (review.py) and the rules only the source can show (rules.py, and the chapters' own rules on
top of it) read the same cells the same way: one parser, one string folder, one alias resolver, here.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator

# Calls that look an attribute up by a name given as a value: what they reach is only as readable as that name.
DYNAMIC = {"getattr", "setattr", "delattr", "hasattr", "attrgetter", "methodcaller"}
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Levels of syntax the judge reads (the course's own code nests at most 19). Its readers recurse once or a few
# times a level, so deeper code (1 + 1 + ... a thousand times) would overflow Python's stack in the judge while
# the child, which only compiles it, runs it.
MAX_DEPTH = 100
TOO_DEEP = f"code nested more than {MAX_DEPTH} levels deep, which the judge does not read"


class TooDeep(Exception):
    """Code nested deeper than the judge reads (MAX_DEPTH)."""


def parse_cell(source: str) -> ast.Module:
    """The cell's syntax tree. SyntaxError when it does not parse (it fails to load in the child as well);
    TooDeep when it nests past MAX_DEPTH, which the judge does not read (the child may still run it)."""
    try:
        tree = ast.parse(source)
    except ValueError as e:  # null bytes
        raise SyntaxError(str(e)) from None
    except (RecursionError, MemoryError):  # building the tree recursed too deep here: compile() may not
        raise TooDeep from None
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TooDeep
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return _annotations_read(tree)


def _annotations_read(tree: ast.Module) -> ast.Module:
    """The tree with each string in an annotation replaced by the expression it spells (`x: "torch.nn.Softmax"`
    becomes `x: torch.nn.Softmax`). Python evaluates such strings when asked (typing.get_type_hints,
    functools.singledispatch's register), so what they name is used as surely as a name written out; a string
    that is no expression stays a string (evaluating it would fail as well)."""
    for node in ast.walk(tree):
        for holder, attr in _annotation_slots(node):
            annotation = getattr(holder, attr)
            if annotation is not None:
                setattr(holder, attr, _StringsRead().visit(annotation))
    return tree


def _annotation_slots(node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    if isinstance(node, ast.arg):
        yield node, "annotation"
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield node, "returns"
    elif isinstance(node, ast.AnnAssign):
        yield node, "annotation"


# Marks a Name read in an annotation: what it is bound to may be a string that Python evaluates as code.
IN_ANNOTATION = "_judge_in_annotation"


def in_annotation(node: ast.AST) -> bool:
    return bool(getattr(node, IN_ANNOTATION, False))


def spelled(text: str, where: ast.AST) -> ast.expr | None:
    """The expression a string spells, placed where the string is (a message names that line); None when it
    spells none (evaluating it would fail as well)."""
    try:
        expression = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for part in ast.walk(expression):
        ast.copy_location(part, where)
    return expression


class _StringsRead(ast.NodeTransformer):
    """Strings within an annotation (list["torch.nn.Softmax"] too, and strings built from constants:
    "torch.nn." + "Softmax") parsed as the expressions they spell; each Name left marked IN_ANNOTATION."""

    def visit(self, node: ast.AST) -> ast.AST:
        text = folded(node)
        if text is not None:
            expression = spelled(text, node)
            return node if expression is None else self.visit(expression)
        if isinstance(node, ast.Name):
            setattr(node, IN_ANNOTATION, True)
        return super().visit(node)


@functools.lru_cache(maxsize=1)  # the review and the rule checks of one grading read the same cells
def parse_cells(sources: tuple[tuple[str, str], ...]) -> tuple[dict[str, ast.Module], tuple[str, ...]]:
    """(trees of the cells that parse, by id; ids of the cells too deep to read). A cell that does not parse is
    left out: it fails to load in the child too. The trees are shared: never changed."""
    trees: dict[str, ast.Module] = {}
    unread: list[str] = []
    for cell, source in sources:
        try:
            trees[cell] = parse_cell(source)
        except SyntaxError:
            continue
        except TooDeep:
            unread.append(cell)
    return trees, tuple(unread)


def walk(trees: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node of the trees."""
    for tree in trees:
        yield from ast.walk(tree)


def chain(node: ast.AST) -> tuple[ast.AST, list[str]]:
    """(root, [attr, ...]) of an attribute chain a.b.c: (Name a, [b, c])."""
    attrs: list[str] = []
    while isinstance(node, ast.Attribute):
        attrs.insert(0, node.attr)
        node = node.value
    return node, attrs


def folded(node: ast.AST) -> str | None:
    """The value of a string built from constants only ("a" + "b", f"{'a'}b", "".join(["a", "b"])), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        value = node.value
        return value.decode("latin-1") if isinstance(value, bytes) else value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = folded(node.left), folded(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = [folded(v.value if isinstance(v, ast.FormattedValue) else v) for v in node.values]
        return "".join(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
            and len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple))):
        sep, parts = folded(node.func.value), [folded(e) for e in node.args[0].elts]
        return sep.join(parts) if sep is not None and all(p is not None for p in parts) else None  # type: ignore[arg-type]
    return None


# -- names and what they stand for ----------------------------------------------------------------------------


def import_names(node: ast.AST) -> dict[str, str]:
    """Names an import statement binds -> the dotted name each stands for."""
    names: dict[str, str] = {}
    if isinstance(node, ast.Import):
        for a in node.names:
            names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
    elif isinstance(node, ast.ImportFrom):
        for a in node.names:
            names[a.asname or a.name] = f"{node.module or ''}.{a.name}"
    return names


def attribute_path(node: ast.AST) -> tuple[ast.AST, list[str]]:
    """chain, reading getattr with a constant name as an attribute: getattr(a.b, "c").d -> (Name a, [b, c, d])."""
    attrs: list[str] = []
    while True:
        node, more = chain(node)
        attrs[:0] = more
        name = folded(node.args[1]) if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                                        and node.func.id == "getattr" and len(node.args) >= 2) else None
        if not isinstance(node, ast.Call) or name is None:
            return node, attrs
        attrs.insert(0, name)
        node = node.args[0]


def aliases(nodes: Iterable[ast.AST]) -> dict[str, str]:
    """Import-bound names, and names assigned from them (t = torch; s = sys; amp = getattr(torch.cuda, "amp")),
    -> dotted names, from every node of the cells (walk)."""
    origin: dict[str, str] = {}
    assigned: list[tuple[str, ast.Name, list[str]]] = []  # (target, root, attrs) of every x = a.b.c
    for node in nodes:
        origin.update(import_names(node))
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            root, attrs = attribute_path(node.value)
            if isinstance(root, ast.Name):
                assigned.append((node.targets[0].id, root, attrs))
    for _ in range(3):  # aliases of aliases
        for target, root, attrs in assigned:
            if root.id in origin:
                origin[target] = ".".join([origin[root.id], *attrs])
    return origin


def dotted(node: ast.AST, origin: dict[str, str]) -> str | None:
    """The dotted name an expression stands for, its aliases (aliases) resolved: torch.cuda.amp, an alias of it,
    getattr(torch.cuda, "amp"); else None."""
    if isinstance(node, ast.Name):
        return origin.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = dotted(node.value, origin)
        return f"{base}.{node.attr}" if base else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2):
        base, attr = dotted(node.args[0], origin), folded(node.args[1])
        return f"{base}.{attr}" if base and attr else None
    return None


def bound_by(node: ast.AST) -> list[str]:
    """The names one node binds: an assignment's target, except ... as x, a match capture, a parameter, a def or
    a class, an import."""
    if isinstance(node, ast.Name):
        return [node.id] if isinstance(node.ctx, (ast.Store, ast.Del)) else []
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, DEFINITIONS):
        return [node.name]
    return list(import_names(node))


def scope_bindings(tree: ast.AST, classes: bool = False) -> Iterator[tuple[str, ast.AST, ast.expr | None]]:
    """(name, binding node, value) of every name a module binds in its own scope: at its top level (not in the
    bodies of its functions, lambdas and classes, which are scopes of their own), and in any function that
    declares the name `global`; with `classes`, in the bodies of its classes too (a method's annotations are
    evaluated there). `value` is what a plain assignment (x = ..., x: T = ...) binds, else None."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            if not isinstance(node, ast.Lambda):
                yield node.name, node, None
                declared = {n for g in ast.walk(node) if isinstance(g, ast.Global) for n in g.names}
                for inner in ast.walk(node) if declared else ():
                    yield from ((name, inner, None) for name in bound_by(inner) if name in declared
                                and inner is not node)
            # what the definition runs in this scope: decorators, defaults, annotations, bases
            if isinstance(node, ast.ClassDef):
                todo += [*node.decorator_list, *node.bases, *node.keywords, *(node.body if classes else [])]
            elif isinstance(node, ast.Lambda):
                todo.append(node.args)
            else:
                todo += [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and node.value is not None:
                yield targets[0].id, node, node.value
                todo.append(node.value)
                continue
        yield from ((name, node, None) for name in bound_by(node) if not isinstance(node, ast.arg))
        todo.extend(ast.iter_child_nodes(node))


def binding_counts(nodes: Iterable[ast.AST]) -> dict[str, int]:
    """How many times each name is bound, from every node of the cells (walk); class statements are left out
    (an own class's name is judged by what else binds it)."""
    counts: dict[str, int] = {}
    for node in nodes:
        if not isinstance(node, ast.ClassDef):
            for name in bound_by(node):
                counts[name] = counts.get(name, 0) + 1
    return counts


def constant_loops(nodes: Iterable[ast.AST]) -> dict[str, tuple[str, ...]]:
    """Names bound only as the target of loops over constant strings -> those strings, from every node of the
    cells (walk): for name in ("amax", "exp"): getattr(torch, name) looks up those two names."""
    nodes = list(nodes)
    loops: dict[str, tuple[str, ...]] = {}
    counts: dict[str, int] = {}  # bindings as the target of such a loop
    for node in nodes:
        if (isinstance(node, ast.For) and isinstance(node.target, ast.Name)
                and isinstance(node.iter, (ast.Tuple, ast.List, ast.Set))):
            values = [folded(e) for e in node.iter.elts]
            if all(isinstance(v, str) for v in values):
                name = node.target.id
                loops[name] = loops.get(name, ()) + tuple(v for v in values if v is not None)
                counts[name] = counts.get(name, 0) + 1
    stores = binding_counts(nodes)
    return {k: v for k, v in loops.items() if stores.get(k) == counts[k]}

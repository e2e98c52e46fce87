"""The judge's own reading of 08's answer cells: the rules that only the source can show.

Each rule reads one task's cell (api.student.submission.cells, each {"id": task, "source": code}) with `ast`;
nothing is run, and a rule costs only the check of that task that states it:

- deprecated_amp: the task's cell uses torch.cuda.amp or torch.cpu.amp (the deprecated namespaces), through any
  import, attribute chain, alias (from any answer cell or the imports cell) or getattr with a constant name;
- backward_inside_autocast: a .backward() call (or torch.autograd.backward) sits inside a `with` autocast block
  of the cell;
- unguarded_autocast: train_checkerboard enters a `with` autocast block that its use_amp flag does not switch
  off (by an `if`, a conditional expression, an early exit, or the block's `enabled=` argument).

Names are resolved as far as the code spells them; what only running could tell is given the benefit of the doubt.
"""

from __future__ import annotations

import ast
from typing import Any

DEPRECATED = ("torch.cuda.amp", "torch.cpu.amp")
UNKNOWN = object()  # a value the reading cannot fold


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _cell(submission: Any, task: str) -> ast.Module | None:
    for c in submission.cells:
        if c["id"] == task:
            return _parse(c["source"])
    return None


def _constant_string(node: ast.AST) -> str | None:
    """The value of a string made of constants ("a", "a" + "b"), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _constant_string(node.left), _constant_string(node.right)
        return left + right if left is not None and right is not None else None
    return None


def _dotted(node: ast.AST, origin: dict[str, str]) -> str | None:
    """The dotted name an expression stands for (torch.cuda.amp, an alias of it, getattr(torch.cuda, "amp")),
    else None."""
    if isinstance(node, ast.Name):
        return origin.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, origin)
        return f"{base}.{node.attr}" if base else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2):
        base, attr = _dotted(node.args[0], origin), _constant_string(node.args[1])
        return f"{base}.{attr}" if base and attr else None
    return None


def _origin(parsed: list[ast.Module | None]) -> dict[str, str]:
    """Names bound by imports, and by assignments from dotted names, in any of the trees -> what they stand for."""
    trees = [t for t in parsed if t is not None]
    origin: dict[str, str] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    origin[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    origin[a.asname or a.name] = f"{node.module}.{a.name}"
    for _ in range(3):  # aliases of aliases
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    dotted = _dotted(node.value, origin)
                    if dotted and dotted.split(".")[0] in {n.split(".")[0] for n in origin.values()}:
                        origin[node.targets[0].id] = dotted
    return origin


def _under(dotted: str, prefixes: tuple[str, ...]) -> str | None:
    return next((p for p in prefixes if dotted == p or dotted.startswith(p + ".")), None)


def deprecated_amp(submission: Any, task: str) -> list[tuple[int, str]]:
    """(line, what the code names) of each use of torch.cuda.amp or torch.cpu.amp in the task's cell."""
    origin = _origin([_parse(c["source"]) for c in submission.cells] + [_parse(submission.chapter.preamble)])
    tree = _cell(submission, task)
    found: dict[int, str] = {}
    for node in ast.walk(tree) if tree else []:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            names = [d for d in [_dotted(node, origin)] if d]
        for name in names:
            line = getattr(node, "lineno", 0)
            if _under(name, DEPRECATED) and line not in found:
                found[line] = name
    return sorted(found.items())


def _is_autocast(node: ast.AST, origin: dict[str, str]) -> bool:
    """A call of torch.autocast, torch.amp.autocast, torch.cuda.amp.autocast, ... (any name ending in autocast)."""
    if not isinstance(node, ast.Call):
        return False
    dotted = _dotted(node.func, origin)
    return dotted is not None and dotted.split(".")[-1] == "autocast"


def _enabled_arg(call: ast.Call) -> ast.AST | None:
    """The `enabled` argument of an autocast call (keyword, or third positional), if given."""
    for kw in call.keywords:
        if kw.arg == "enabled":
            return kw.value
    return call.args[2] if len(call.args) > 2 else None


def backward_inside_autocast(submission: Any, task: str) -> list[int]:
    """The lines of the task's cell where .backward() or torch.autograd.backward runs inside an autocast block
    (a `with torch.autocast(...)` not given enabled=False)."""
    tree = _cell(submission, task)
    if tree is None:
        return []
    origin = _origin([tree, _parse(submission.chapter.preamble)])
    lines: list[int] = []

    def visit(node: ast.AST, inside: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside = False  # a function defined in the block runs where it is called
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                visit(item.context_expr, inside)
                if _is_autocast(item.context_expr, origin):
                    enabled = _enabled_arg(item.context_expr)  # type: ignore[arg-type]
                    inside = not (isinstance(enabled, ast.Constant) and enabled.value is False)
            for statement in node.body:
                visit(statement, inside)
            return
        if isinstance(node, ast.Call) and inside:
            dotted = _dotted(node.func, origin) or ""
            if (isinstance(node.func, ast.Attribute) and node.func.attr == "backward") or \
                    dotted == "torch.autograd.backward":
                lines.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(tree, False)
    return sorted(set(lines))


# -- use_amp in train_checkerboard -------------------------------------------------------------------


def _fold(node: ast.AST, env: dict[str, Any]) -> Any:
    """The value of an expression given the flag-derived names in env, or UNKNOWN."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id, UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = _fold(node.operand, env)
        return UNKNOWN if value is UNKNOWN else not value
    if isinstance(node, ast.BoolOp):
        values = [_fold(v, env) for v in node.values]
        stop = (lambda v: not v) if isinstance(node.op, ast.And) else bool
        for v in values:  # short-circuit: a known deciding value decides, wherever it stands
            if v is not UNKNOWN and stop(v):
                return v
        return UNKNOWN if any(v is UNKNOWN for v in values) else values[-1]
    if isinstance(node, ast.IfExp):
        test = _fold(node.test, env)
        return UNKNOWN if test is UNKNOWN else _fold(node.body if test else node.orelse, env)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _fold(node.left, env), _fold(node.comparators[0], env)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        op = node.ops[0]
        if isinstance(op, (ast.Is, ast.Eq)):
            return left == right
        if isinstance(op, (ast.IsNot, ast.NotEq)):
            return left != right
    return UNKNOWN


def _mentions(node: ast.AST, tainted: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in tainted for n in ast.walk(node))


def _flag_env(function: ast.FunctionDef, flag: str) -> tuple[dict[str, Any], set[str]]:
    """(values with the flag False, names derived from the flag) for the function's plain assignments."""
    env: dict[str, Any] = {flag: False}
    tainted = {flag}
    assigned: dict[str, list[ast.AST]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name) \
                and node.value is not None:
            assigned.setdefault(node.target.id, []).append(node.value)
    for _ in range(3):
        for name, values in assigned.items():
            if name != flag and any(_mentions(v, tainted) for v in values):
                tainted.add(name)
                folded = [_fold(v, env) for v in values]  # one value if every assignment gives it
                same = all(v is not UNKNOWN for v in folded) and all(v == folded[0] for v in folded)
                env[name] = folded[0] if same else UNKNOWN
    return env, tainted


def _terminates(body: list[ast.stmt]) -> bool:
    last = body[-1] if body else None
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    return isinstance(last, ast.If) and _terminates(last.body) and _terminates(last.orelse)


def _switched_off(test: ast.AST, branch: str, env: dict[str, Any], tainted: set[str]) -> bool:
    """Whether, with the flag False, a branch ("body" or "orelse") of a test is skipped, or may be (a test that
    depends on the flag in a way the reading cannot fold)."""
    if not _mentions(test, tainted):
        return False
    value = _fold(test, env)
    return value is UNKNOWN or (not value if branch == "body" else bool(value))


def unguarded_autocast(submission: Any, task: str, function: str, position: int) -> list[int]:
    """The lines of `with <autocast>(...)` blocks in `function` (its own body, not nested defs) that run when its
    flag parameter (the one at `position`) is False."""
    tree = _cell(submission, task)
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)} if tree else {}
    for node in tree.body if tree else []:  # train_checkerboard = other_def
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in defs:
            defs.update({t.id: defs[node.value.id] for t in node.targets if isinstance(t, ast.Name)})
    fn = defs.get(function)
    positional = [*fn.args.posonlyargs, *fn.args.args] if fn else []
    if fn is None or len(positional) <= position:
        return []
    origin = _origin([tree, _parse(submission.chapter.preamble)])
    env, tainted = _flag_env(fn, positional[position].arg)
    lines: list[int] = []

    def block(statements: list[ast.stmt], guarded: bool) -> None:
        for statement in statements:
            visit(statement, guarded)
            if isinstance(statement, ast.If) and (
                    (_switched_off(statement.test, "orelse", env, tainted) and _terminates(statement.body)) or
                    (_switched_off(statement.test, "body", env, tainted) and _terminates(statement.orelse))):
                guarded = True  # an early exit taken when the flag is False: what follows runs only when it is True

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return
        if isinstance(node, (ast.If, ast.While)):
            visit(node.test, guarded)
            block(node.body, guarded or _switched_off(node.test, "body", env, tainted))
            block(node.orelse, guarded or _switched_off(node.test, "orelse", env, tainted))
            return
        if isinstance(node, ast.IfExp):
            visit(node.test, guarded)
            visit(node.body, guarded or _switched_off(node.test, "body", env, tainted))
            visit(node.orelse, guarded or _switched_off(node.test, "orelse", env, tainted))
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and _is_autocast(call, origin) and not guarded and not any(
                        _mentions(a, tainted) and _fold(a, env) in (UNKNOWN, False)
                        for a in [*call.args, *(kw.value for kw in call.keywords)]):
                    lines.append(node.lineno)
        for field in ("body", "orelse", "finalbody", "handlers"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], (ast.stmt,
                                                                                          ast.excepthandler)):
                block(statements, guarded)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.stmt, ast.excepthandler)):
                visit(child, guarded)

    block(fn.body, False)
    return sorted(set(lines))

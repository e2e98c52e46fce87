"""08's rules that only the source can show, on the kit's reading of a task's code (task_code, and its aliases).

Nothing is run, and a rule costs only the check of that task that states it:

- deprecated_amp: the task's cell, or a helper function or class of another answer cell that it uses, names
  torch.cuda.amp or torch.cpu.amp (the deprecated namespaces): through an import, an attribute chain, an alias
  (from any code the task reaches, or the imports cell), getattr with a constant name, or a string naming the
  module, or getattr(torch, <computed>).amp; not in a function nothing reaches, nor in the handler of an
  old-PyTorch error after a try that cannot raise it on the judge's PyTorch (_cannot_fail); another task's own
  function, and what other cells run when they load, are their tasks' business;
- backward_inside_autocast: .backward() (or torch.autograd.backward, or a function of the cells that calls it)
  runs inside an autocast block of the cell: a `with ...autocast(...)` not given enabled=False, or what follows
  an enter_context(...autocast(...)) or torch.set_autocast_enabled(..., True); an autocast value is also a name
  bound to one, a branch of a conditional expression, or a call of a factory of the reached code (with_factories);
- unguarded_autocast: train_checkerboard enters an autocast block (itself, or through a function of its cell)
  that its use_amp flag does not switch off, by an `if`, a conditional expression, an early exit, or the
  block's `enabled=` argument.

Names are resolved as far as the code spells them; what only running could tell is given the benefit of the doubt.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable, Iterator

import torch

from autograder.judging.authoring import Submission, TaskCode, Use, dotted, folded, names_used, task_code, unreadable

DEPRECATED = ("torch.cuda.amp", "torch.cpu.amp")
# The amp namespace of a device module picked at run time: the deprecated ones for "cuda" and "cpu"; the current
# API (torch.amp) needs no such lookup, so the judge counts it as what it could be.
COMPUTED_AMP = "getattr(torch, <a name computed at run time>).amp, which is torch.cuda.amp or torch.cpu.amp"
UNKNOWN = object()  # a value the reading cannot fold
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")  # a string that names a module


def _defs(code: TaskCode) -> dict[str, ast.AST]:
    """Top-level functions and classes of the reached code, by name."""
    return {n.name: n for _, tree in code.cells for n in tree.body if isinstance(n, DEFS)}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _under(name: str, prefixes: tuple[str, ...]) -> str | None:
    return next((p for p in prefixes if name == p or name.startswith(p + ".")), None)


def deprecated_amp(submission: Submission, task: str) -> list[tuple[str, int, str]]:
    """(cell, line, what the code names) of each use of torch.cuda.amp or torch.cpu.amp in the code the task
    reaches, other tasks' own functions left to their tasks."""
    others = {c["id"] for c in submission.cells} - {task}
    code = task_code(submission, task, stop=others)
    found: dict[tuple[str, int], str] = {}
    for cell, node in _written_for(code):
        for name in _named(node, code.imported):
            key = (cell, getattr(node, "lineno", 0))
            if (_under(name, DEPRECATED) or name == COMPUTED_AMP) and key not in found:
                found[key] = name
    return sorted((cell, line, name) for (cell, line), name in found.items())


# What current PyTorch raises where only an old one lacks the current API: a handler for these, after a try that
# cannot raise them on the PyTorch it is graded with, is a fallback the step never takes.
OLD_TORCH_ERRORS = {"AttributeError", "ImportError", "ModuleNotFoundError", "TypeError"}
CURRENT = ("torch.amp", "torch.autocast")
MISSING = object()  # a name the judge's PyTorch lacks


def _in_torch(name: str) -> object:
    """What a dotted name under torch is in the judge's own PyTorch (the one the step is graded with), or MISSING."""
    found: object = torch
    for part in name.split(".")[1:]:
        found = getattr(found, part, MISSING)
    return found


def _fits(call: ast.Call, target: object, plain: set[str]) -> bool:
    """Whether the call, given the judge's arguments as they are (constants, parameters of the step it never
    rebinds, torch's own names), fits the signature of `target`: it cannot raise TypeError by its arguments."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return False
    values = [*call.args, *(kw.value for kw in call.keywords)]
    if not all(isinstance(v, ast.Constant) or (isinstance(v, ast.Name) and v.id in plain)
               or (isinstance(v, ast.Attribute) and _in_torch(dotted(v, {}) or "") is not MISSING
                   and (dotted(v, {}) or "").startswith("torch.")) for v in values):
        return False
    if not callable(target):
        return False
    try:
        inspect.signature(target).bind(*call.args, **{kw.arg: kw.value for kw in call.keywords if kw.arg})
    except (TypeError, ValueError):
        return False
    return True


def _cannot_fail(body: list[ast.stmt], origin: dict[str, str], plain: set[str]) -> bool:
    """Whether a try's body only uses the current API in ways that raise none of OLD_TORCH_ERRORS on the judge's
    PyTorch: imports of names it has, and `name = <call>` (or the call alone, or returned) of a function it has
    with arguments that fit. Anything else (a raise, a name it lacks, an argument it does not take) may take the
    handler, so the handler is read."""
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            if not all(_under(name, CURRENT) and _in_torch(name) is not MISSING for name in _named(statement, {})):
                return False
            continue
        value = statement.value if isinstance(statement, (ast.Assign, ast.Expr, ast.Return)) else None
        if isinstance(statement, ast.Assign) and not all(isinstance(t, ast.Name) for t in statement.targets):
            return False  # setting an attribute runs the student's code (a property may raise)
        name = dotted(value.func, origin) if isinstance(value, ast.Call) else None
        if not isinstance(value, ast.Call) or name is None or not _under(name, CURRENT) \
                or _in_torch(name) is MISSING or not _fits(value, _in_torch(name), plain):
            return False
    return bool(body)


def _written_for(code: TaskCode) -> Iterator[tuple[str, ast.AST]]:
    """(cell, node) of the code that runs as the task: the task's own cell when it loads (its top-level
    statements), its function, and the functions and classes of any cell it reaches by name from them; but not
    a function or class of its cell that nothing reaches (a constructor the step never calls), nor a fallback for
    old PyTorch (an `except AttributeError` or the like after a try that cannot raise it on the PyTorch it is
    graded with), which never runs. What other cells run when they load is their tasks' business (it still lends
    the task its aliases)."""
    defs: dict[str, list[tuple[str, ast.AST]]] = {}
    start: list[tuple[str, ast.AST]] = []
    for cell, tree in code.cells:
        for statement in tree.body:
            if isinstance(statement, DEFS):
                defs.setdefault(statement.name, []).append((cell, statement))
            elif cell == code.task:
                start.append((cell, statement))
    start += defs.get(code.task, [])
    seen: set[int] = set()
    while start:
        cell, reached = start.pop()
        if id(reached) in seen:
            continue
        seen.add(id(reached))
        for node in _runs(reached, code.imported, _judges_arguments(reached, code.task)):
            yield cell, node
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                start += defs.get(node.id, [])


def _judges_arguments(node: ast.AST, task: str) -> set[str]:
    """The parameters of the task's function that it never rebinds: they hold what the judge passes."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != task:
        return set()
    a = node.args
    params = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    return params - {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}


def _runs(statement: ast.AST, origin: dict[str, str], plain: set[str]) -> Iterator[ast.AST]:
    """The nodes of a statement, but for the handlers of old-PyTorch fallbacks after a try that cannot raise
    what they handle."""
    todo = [statement]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.Try) and _cannot_fail(node.body, origin, plain):
            fallbacks = [h for h in node.handlers if h.type is not None and _names(h.type) <= OLD_TORCH_ERRORS]
            todo += [child for child in ast.iter_child_nodes(node) if child not in fallbacks]
        else:
            todo += list(ast.iter_child_nodes(node))


def _named(node: ast.AST, origin: dict[str, str]) -> list[str]:
    """The dotted names one node names: an import's modules, an expression's name, a string naming a module
    (import_module("torch.cuda.amp"), sys.modules["torch.cuda.amp"])."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module:
        names = [f"{node.module}.{a.name}" for a in node.names]
    elif isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
        names = [d for d in [dotted(node, origin)] if d]
    if isinstance(node, ast.Attribute) and node.attr == "amp" and isinstance(node.value, ast.Call) \
            and dotted(node.value.func, origin) == "getattr" and len(node.value.args) >= 2 \
            and dotted(node.value.args[0], origin) == "torch" and folded(node.value.args[1]) is None:
        names.append(COMPUTED_AMP)  # getattr(torch, device_type).amp: torch.cuda.amp or torch.cpu.amp
    if isinstance(node, ast.Call):
        names += [s for s in (folded(a) for a in node.args) if s and _MODULE.fullmatch(s)]
    elif isinstance(node, ast.Subscript):
        names += [s for s in [folded(node.slice)] if s and _MODULE.fullmatch(s)]
    return names


def with_factories(origin: dict[str, str], nodes: list[ast.AST]) -> dict[str, str]:
    """`origin` with every autocast factory of the reached code (`nodes`) read as torch.autocast itself, so that
    `with mixed(...)` is an autocast block: a function or method that returns an autocast value (a call, a name
    bound to one, a conditional expression with one as a branch) or yields inside an autocast block (a
    @contextmanager), a class with __enter__ that makes one, an instance of a class whose __call__ returns one,
    a lambda returning one, functools.partial of one; transitively. A method is kept under ".name":
    `self.mixed()` is read by its last name."""
    origin = dict(origin)
    functions = [n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    classes = [n for n in nodes if isinstance(n, ast.ClassDef)]
    assigned = [(t.id, n.value) for n in nodes if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name)]
    while True:
        bound = _bound(nodes)
        found = {f.name for f in functions if _makes_autocast(f, origin, bound)}
        found |= {c.name for c in classes if any(isinstance(m, ast.FunctionDef) and m.name == "__enter__"
                                                 for m in c.body)
                  and any(_autocast_call(n, origin) is not None for n in ast.walk(c))}
        found |= {name for name, value in assigned
                  if (isinstance(value, ast.Lambda) and _is_autocast(value.body, origin, bound))
                  or (isinstance(value, ast.Call) and (dotted(value.func, origin) or "").endswith("partial")
                      and value.args and _is_autocast(value.args[0], origin, bound, called=False))}
        callable_ = {c.name for c in classes if any(isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                                                    and m.name == "__call__" and _makes_autocast(m, origin, bound)
                                                    for m in c.body)}
        found |= {name for name, value in assigned if isinstance(value, ast.Call)
                  and isinstance(value.func, ast.Name) and value.func.id in callable_}  # mixed = Mixed()
        new = {key: "torch.autocast" for name in found for key in (name, "." + name) if key not in origin}
        if not new:
            return origin
        origin.update(new)


def _makes_autocast(function: ast.FunctionDef | ast.AsyncFunctionDef, origin: dict[str, str],
                    bound: dict[str, list[ast.expr]]) -> bool:
    """Whether a function returns an autocast value, or yields inside an autocast block."""
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None and _is_autocast(node.value, origin, bound):
            return True
        if isinstance(node, (ast.With, ast.AsyncWith)) \
                and any(_is_autocast(i.context_expr, origin, bound) for i in node.items) \
                and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for s in node.body for n in ast.walk(s)):
            return True
    return False


def _bound(nodes: list[ast.AST]) -> dict[str, list[ast.expr]]:
    """Each name -> the values assigned to it (x = ..., x: T = ..., (x := ...)) in the reached code."""
    bound: dict[str, list[ast.expr]] = {}
    for node in nodes:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.NamedExpr)) else []
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and isinstance(value, ast.expr):
                bound.setdefault(target.id, []).append(value)
    return bound


def _branches(node: ast.AST, origin: dict[str, str], bound: dict[str, list[ast.expr]],
              depth: int = 0) -> list[ast.Call | None]:
    """The autocast calls an expression may stand for, None for a value that is none: a branch of a conditional
    expression each, every value a name is bound to."""
    if isinstance(node, ast.IfExp):
        return [*_branches(node.body, origin, bound, depth), *_branches(node.orelse, origin, bound, depth)]
    if isinstance(node, ast.NamedExpr):
        return _branches(node.value, origin, bound, depth)
    if isinstance(node, ast.Name) and node.id in bound and depth < 8:
        return [c for value in bound[node.id] for c in _branches(value, origin, bound, depth + 1)]
    return [_autocast_call(node, origin)]


def _is_autocast(node: ast.AST, origin: dict[str, str], bound: dict[str, list[ast.expr]],
                 called: bool = True) -> bool:
    """Whether an expression may be an autocast value (or, not called, the autocast function itself)."""
    if not called:
        return (dotted(node, origin) or "").split(".")[-1] == "autocast"
    return any(c is not None for c in _branches(node, origin, bound))


def _autocast_call(node: ast.AST | None, origin: dict[str, str]) -> ast.Call | None:
    """A call of torch.autocast, torch.amp.autocast, torch.cuda.amp.autocast, ... (any name ending in autocast),
    or of an autocast factory (with_factories)."""
    if isinstance(node, ast.Call):
        name = dotted(node.func, origin)
        last = (name or "").split(".")[-1] if name is not None else \
            node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if last == "autocast" or origin.get("." + last) == "torch.autocast":
            return node
    return None


def _enabled_arg(call: ast.Call) -> ast.AST | None:
    """The `enabled` argument of an autocast call (keyword, or third positional), if given."""
    for kw in call.keywords:
        if kw.arg == "enabled":
            return kw.value
    return call.args[2] if len(call.args) > 2 else None


def _switch(statement: ast.stmt, origin: dict[str, str],
            autocasts: Callable[[ast.AST], list[ast.Call]]) -> tuple[bool, ast.Call] | None:
    """(on, call) when a statement switches autocast on or off for the statements after it:
    stack.enter_context(<an autocast value, as `autocasts` reads it>), torch.set_autocast_enabled(..., True/False)."""
    call = statement.value if isinstance(statement, (ast.Expr, ast.Assign)) else None
    if not isinstance(call, ast.Call):
        return None
    if isinstance(call.func, ast.Attribute) and call.func.attr == "enter_context" and call.args:
        found = autocasts(call.args[0])
        on = [c for c in found if _autocast_on(c)] or found
        return (True, on[0]) if on else None
    if (dotted(call.func, origin) or "").split(".")[-1] == "set_autocast_enabled" and call.args:
        last = call.args[-1]
        return (not (isinstance(last, ast.Constant) and last.value is False), call)
    return None


def _autocast_on(call: ast.Call) -> bool:
    """Whether an autocast call, or a set_autocast_enabled, switches autocast on: not given a constant False."""
    setter = (dotted(call.func, {}) or "").split(".")[-1] == "set_autocast_enabled"
    flag = (call.args[-1] if call.args else None) if setter else _enabled_arg(call)
    return not (isinstance(flag, ast.Constant) and flag.value is False)


def _calls_backward(defs: dict[str, ast.AST], origin: dict[str, str]) -> set[str]:
    """The functions (by name) whose body calls .backward() or torch.autograd.backward, or such a function."""

    def direct(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Call) and ((isinstance(n.func, ast.Attribute) and n.func.attr == "backward")
                                                or dotted(n.func, origin) == "torch.autograd.backward")
                   for n in ast.walk(node))

    found = {name for name, node in defs.items() if direct(node)}
    for _ in range(len(defs)):
        more = {name for name, node in defs.items() if _names(node) & found} - found
        if not more:
            break
        found |= more
    return found


def backward_inside_autocast(submission: Submission, task: str) -> list[int]:
    """The lines of the task's cell where backward runs inside an autocast block: .backward(),
    torch.autograd.backward, or a call of a function of the cells that (in turn) calls one of them."""
    code = task_code(submission, task)
    tree = code.own
    if tree is None:
        return []
    defs = _defs(code)
    defs.update({n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))})
    nodes = [node for _, node in code.walk()]
    origin = with_factories(code.imported, nodes)
    bound = _bound(nodes)
    backward = _calls_backward(defs, origin)
    lines: list[int] = []

    def block(statements: list[ast.stmt], inside: bool) -> None:
        for statement in statements:
            visit(statement, inside)
            switch = _switch(statement, origin, lambda n: [c for c in _branches(n, origin, bound) if c is not None])
            if switch is not None:
                inside = switch[0] and _autocast_on(switch[1])

    def visit(node: ast.AST, inside: bool) -> None:
        if isinstance(node, (*DEFS, ast.Lambda)):
            inside = False  # a function defined in the block runs where it is called
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                visit(item.context_expr, inside)
                branches = _branches(item.context_expr, origin, bound)
                if any(c is not None for c in branches):  # inside if any branch may be: a nullcontext one keeps it
                    inside = any(inside if c is None else _autocast_on(c) for c in branches)
            block(node.body, inside)
            return
        if isinstance(node, ast.Call) and inside:
            func = node.func
            if ((isinstance(func, ast.Attribute) and func.attr == "backward")
                    or dotted(func, origin) == "torch.autograd.backward"
                    or (isinstance(func, ast.Name) and func.id in backward)):
                lines.append(node.lineno)
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                block(value, inside)
            elif isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.AST):
                        visit(child, inside)
            elif isinstance(value, ast.AST) and field != "ctx":
                visit(value, inside)

    block(tree.body, False)
    return sorted(set(lines))


# -- use_amp in train_checkerboard -------------------------------------------------------------------


def _fold(node: ast.AST, env: dict[str, object]) -> object:
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
    return bool(_names(node) & tainted)


def _flag_env(function: ast.AST, flags: dict[str, object]) -> tuple[dict[str, object], set[str]]:
    """(values with the flags as given, names derived from the flags) for the function's plain assignments."""
    env, tainted = dict(flags), set(flags)
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
            if name not in flags and any(_mentions(v, tainted) for v in values):
                tainted.add(name)
                values_folded = [_fold(v, env) for v in values]  # one value if every assignment gives it
                same = all(v is not UNKNOWN for v in values_folded) and \
                    all(v == values_folded[0] for v in values_folded)
                env[name] = values_folded[0] if same else UNKNOWN
    return env, tainted


def _terminates(body: list[ast.stmt]) -> bool:
    last = body[-1] if body else None
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    return isinstance(last, ast.If) and _terminates(last.body) and _terminates(last.orelse)


def _switched_off(test: ast.AST, branch: str, env: dict[str, object], tainted: set[str]) -> bool:
    """Whether, with the flag False, a branch ("body" or "orelse") of a test is skipped, or may be (a test that
    depends on the flag in a way the reading cannot fold)."""
    if not _mentions(test, tainted):
        return False
    value = _fold(test, env)
    return value is UNKNOWN or (not value if branch == "body" else bool(value))


def _unguarded(function: ast.FunctionDef | ast.AsyncFunctionDef, flags: dict[str, object], origin: dict[str, str],
               helpers: dict[str, ast.AST], known: dict[str, bool]) -> Iterator[int]:
    """The lines in the function's body where autocast is entered while the flags have their given values (a flag
    of UNKNOWN value guards whatever it tests): `with` blocks, enter_context, set_autocast_enabled, and calls of
    helpers that do so whatever their own arguments."""
    env, tainted = _flag_env(function, flags)

    def may_switch_on(call: ast.Call) -> bool:
        """An autocast call (or set_autocast_enabled) that is on whatever the flags: none of its arguments depends
        on them in a way that could switch it off."""
        return _autocast_on(call) and not any(
            _mentions(a, tainted) and (_fold(a, env) is UNKNOWN or _fold(a, env) is False)
            for a in [*call.args, *(kw.value for kw in call.keywords)])

    def helper_enters(name: str) -> bool:
        node = helpers.get(name)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        if name not in known:
            known[name] = False  # while it is read: a recursive call adds nothing
            params = [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]
            flags = {**dict.fromkeys(tainted, UNKNOWN), **dict.fromkeys(params, UNKNOWN)}  # none known: lenient
            known[name] = any(True for _ in _unguarded(node, flags, origin, helpers, known))
        return known[name]

    hot: dict[str, ast.Call] = {}  # names bound, where the flags do not switch it off, to an autocast that is on

    def entered(node: ast.AST) -> list[ast.Call]:
        """The autocast calls an unguarded expression may stand for: a conditional expression's branches that the
        flags do not switch off, a name bound to one where they did not."""
        if isinstance(node, ast.IfExp):
            return [*(entered(node.body) if not _switched_off(node.test, "body", env, tainted) else []),
                    *(entered(node.orelse) if not _switched_off(node.test, "orelse", env, tainted) else [])]
        if isinstance(node, ast.NamedExpr):
            return entered(node.value)
        if isinstance(node, ast.Name) and node.id in hot:
            return [hot[node.id]]
        call = _autocast_call(node, origin)
        return [call] if call is not None else []

    def block(statements: list[ast.stmt], guarded: bool) -> Iterator[int]:
        for statement in statements:
            yield from visit(statement, guarded)
            switch = _switch(statement, origin, entered)
            if switch is not None and switch[0] and not guarded and may_switch_on(switch[1]):
                yield statement.lineno
            if isinstance(statement, ast.If) and (
                    (_switched_off(statement.test, "orelse", env, tainted) and _terminates(statement.body)) or
                    (_switched_off(statement.test, "body", env, tainted) and _terminates(statement.orelse))):
                guarded = True  # an early exit taken when the flag is False: what follows runs only when it is True

    def visit(node: ast.AST, guarded: bool) -> Iterator[int]:
        if isinstance(node, (*DEFS, ast.Lambda)):
            return  # read where it is called
        if isinstance(node, (ast.If, ast.While)):
            yield from visit(node.test, guarded)
            yield from block(node.body, guarded or _switched_off(node.test, "body", env, tainted))
            yield from block(node.orelse, guarded or _switched_off(node.test, "orelse", env, tainted))
            return
        if isinstance(node, ast.IfExp):
            yield from visit(node.test, guarded)
            yield from visit(node.body, guarded or _switched_off(node.test, "body", env, tainted))
            yield from visit(node.orelse, guarded or _switched_off(node.test, "orelse", env, tainted))
            return
        if isinstance(node, (ast.With, ast.AsyncWith)) and not guarded \
                and any(may_switch_on(call) for item in node.items for call in entered(item.context_expr)):
            yield node.lineno
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None and not guarded:
            on = [call for call in entered(node.value) if may_switch_on(call)]
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            hot.update({t.id: on[0] for t in targets if on and isinstance(t, ast.Name)})
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not guarded \
                and helper_enters(node.func.id):
            yield node.lineno
        for value in (v for _, v in ast.iter_fields(node)):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield from block(value, guarded)
            elif isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.AST):
                        yield from visit(child, guarded)
            elif isinstance(value, ast.AST):
                yield from visit(value, guarded)

    yield from block(function.body, False)


def unguarded_autocast(submission: Submission, task: str, function: str, position: int) -> list[int]:
    """The lines of `function` (defined in the task's cell) where autocast is entered when its flag parameter (the
    one at `position`) is False: a `with ...autocast(...)` block, an enter_context or set_autocast_enabled, or a
    call of a function of the cell (or one nested in it) that enters autocast whatever its arguments."""
    code = task_code(submission, task)
    tree = code.own
    if tree is None:
        return []
    defs: dict[str, ast.AST] = {n.name: n for n in tree.body if isinstance(n, DEFS)}
    for node in tree.body:  # train_checkerboard = other_def
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in defs:
            defs.update({t.id: defs[node.value.id] for t in node.targets if isinstance(t, ast.Name)})
    fn = defs.get(function)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    positional = [*fn.args.posonlyargs, *fn.args.args]
    if len(positional) <= position:
        return []
    helpers = {**defs, **{n.name: n for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                          and n is not fn}}
    origin = with_factories(code.imported, [node for _, node in code.walk()])
    return sorted(set(_unguarded(fn, {positional[position].arg: False}, origin, helpers, {function: False})))


def _binds(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds (assignments, imports, with ... as, for targets)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def grad_scaler_uses(submission: Submission, task: str = "LossScaler") -> list[Use]:
    """Where the code that runs as `task` names GradScaler (subclassing it, holding or making one, under any name
    or path: torch.amp.GradScaler, torch.cuda.amp.GradScaler, grad_scaler, an alias, getattr with a constant), and
    what the judge cannot read there. That code is the task's cell, the functions and classes of other answer cells
    it reaches, and the statements of other cells that bind a name it uses; the rest of what other cells run when
    they load (a demo of torch.amp.GradScaler beside amp_train_step) is not the task's."""
    code = task_code(submission, task)
    runs = [(cell, [s for s in tree.body if cell == task or isinstance(s, DEFS)]) for cell, tree in code.cells]
    loaded = {name for _, body in runs for s in body for name in _names(s)}
    kept = tuple((cell, ast.Module(body=[s for s in tree.body if cell == task or isinstance(s, DEFS)
                                         or _binds(s) & loaded], type_ignores=[])) for cell, tree in code.cells)
    owned = TaskCode(code.task, kept, code.unread, code.preamble, code.sources)
    return sorted({*names_used(owned, ("GradScaler", "grad_scaler")), *unreadable(owned)},
                  key=lambda u: (u.cell != task, u.cell, u.line))

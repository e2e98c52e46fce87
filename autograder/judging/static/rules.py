"""The judge's own reading of a task's code, for rules that only the source can show.

Some rules of an exercise are about how it is written, not what it returns:
07's softmax is built by hand, not with torch.softmax; 08's step uses torch.amp,
not the deprecated torch.cuda.amp. Nothing measured inside the student's process
can show them honestly, so the judge reads the code itself, with `ast` (nothing
is run). A rule is checked on the code the task can reach: its own answer cell
whole; the code of the other answer cells that runs when they load (everything
but the bodies of functions and methods, which run only when called: a line
there can patch torch or fill a table the task reads); and every function or
class it uses from other answer cells, transitively. It costs that task alone (a
check declared `@check(..., rule=True)`, autograder/judging/plugin.py).

A string that Python evaluates as code is read as the code it spells: one in an
annotation, or bound to a name read in one (functools.singledispatch's register
and typing.get_type_hints evaluate them, and keep what they name).

Names the judge cannot read (an attribute looked up by a computed string, exec,
__import__, a star import, the tools that find objects by a name in a string,
and every construct the review flags, autograder/judging/static/review.py) would
hide a forbidden call, so where a rule applies they break it too; the notebook
states both.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from autograder.judging.notebook import Submission
from autograder.judging.static.parse import (
    DEFINITIONS,
    DYNAMIC,
    TOO_DEEP,
    aliases,
    attribute_path,
    chain,
    constant_loops,
    folded,
    import_names,
    in_annotation,
    parse_cells,
    scope_bindings,
    spelled,
)
from autograder.judging.static.review import scan_cells

RUNS_STRINGS = {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "import_module"}
NAMESPACES = {"__dict__", "__getattribute__", "__getattr__", "__builtins__", "__globals__", "__annotations__"}
MATCH_ARGS = "__match_args__"  # the attribute names a class pattern looks up, as strings
# Modules, and names anywhere, that find an object from a name in a string or data (beyond what the review scan
# flags: gc, inspect, importlib, pickle, ...), run code from strings (cProfile.run, doctest, sympy's parser, the
# benchmark Timer's stmt, typing's evaluation of annotations), or list every function of a library to pick one by
# behaviour.
RESOLVER_MODULES = {"pydoc", "pkgutil", "runpy", "code", "codeop", "timeit", "shelve", "types", "unittest", "logging",
                    "string", "cProfile", "profile", "doctest", "sympy", "pkg_resources", "torch.utils.benchmark",
                    "torch.load", "torch.serialization", "torch.jit", "torch.hub", "torch.package",
                    "torch.utils.cpp_extension", "torch.overrides", "numpy.load"}
RESOLVERS = {"getattr_static", "getmembers", "resolve_name", "locate", "run_path", "run_module", "get_type_hints",
             "ForwardRef", "CompilationUnit", "load_inline", "get_overridable_functions", "get_testing_overrides",
             "get_ignored_functions", "load", "loads", "get_annotations", "_evaluate", "_eval_type", "_type_convert"}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@dataclass(frozen=True)
class Use:
    cell: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"cell '{self.cell}', line {self.line}: {self.text}"


@dataclass(frozen=True)
class TaskCode:
    """The code a task can reach, parsed: (cell id, tree) of its own cell, then of what it reaches in the other
    answer cells; the answer cells nested too deeply to read (parse.parse_cell); the chapter's preamble."""

    task: str
    cells: tuple[tuple[str, ast.Module], ...]
    unread: tuple[str, ...] = ()
    preamble: str = ""
    sources: tuple[tuple[str, str], ...] = ()  # every answer cell: (id, source)

    @property
    def own(self) -> ast.Module | None:
        """The task's own cell, whole; None when it does not parse or is too deep to read."""
        return next((tree for cell, tree in self.cells if cell == self.task), None)

    @functools.cached_property
    def lines(self) -> set[tuple[str, int]]:
        """(cell, line) of every line the reached code spans."""
        return {(cell, line) for cell, tree in self.cells for node in tree.body
                for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)}

    @functools.cached_property
    def nodes(self) -> list[tuple[str, ast.AST]]:
        """Every node of the reached code, and of the code that strings it names in annotations spell (x: KIND,
        KIND = "torch.nn." + "Softmax": Python evaluates such a string when asked, as a written one)."""
        written = [(cell, node) for cell, tree in self.cells for node in ast.walk(tree)]
        spelled_too = [(cell, part) for cell, node in written
                       if isinstance(node, ast.Name) and in_annotation(node)
                       for _, value in self.annotation_bindings.get(node.id, ()) if value is not None
                       for text in _strings(value)
                       for expression in [spelled(text, node)] if expression is not None
                       for part in ast.walk(expression)]
        return written + spelled_too

    @functools.cached_property
    def annotation_bindings(self) -> dict[str, list[tuple[ast.AST, ast.expr | None]]]:
        """As bindings, with the bindings of class bodies: the scopes where an annotation's names are looked up."""
        found: dict[str, list[tuple[ast.AST, ast.expr | None]]] = {}
        for _, tree in self.cells:
            for name, node, value in scope_bindings(tree, classes=True):
                found.setdefault(name, []).append((node, value))
        return found

    @functools.cached_property
    def bindings(self) -> dict[str, list[tuple[ast.AST, ast.expr | None]]]:
        """Every binding of each name in the module scope of the reached code and the preamble (parse.
        scope_bindings): (the binding node, the value a plain assignment binds, else None)."""
        try:
            preamble = [ast.parse(self.preamble)]
        except SyntaxError:
            preamble = []
        found: dict[str, list[tuple[ast.AST, ast.expr | None]]] = {}
        for tree in [*preamble, *(tree for _, tree in self.cells)]:
            for name, node, value in scope_bindings(tree):
                found.setdefault(name, []).append((node, value))
        return found

    def unbound_but_by_own(self, name: str) -> bool:
        """Nothing binds the global name but the student's own defs and classes, if anything (a builtin)."""
        return all(isinstance(node, DEFINITIONS) for node, _ in self.bindings.get(name, ()))

    def meanings(self, name: str, seen: frozenset[str] = frozenset()) -> set[str | None]:
        """What a global name can stand for when the code runs, from each of its bindings: the dotted name an
        import binds or an assignment aliases (lower = torch.tril), the name itself where nothing binds it (a
        builtin); None for anything else (a value, a def or class of the student's own)."""
        if name not in self.bindings:
            return {name}
        found: set[str | None] = set()
        for node, value in self.bindings[name]:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.add(import_names(node)[name])
            elif value is not None and isinstance(root := attribute_path(value)[0], ast.Name) \
                    and root.id not in seen | {name}:
                attrs = attribute_path(value)[1]
                found |= {None if m is None else ".".join([m, *attrs]) for m in self.meanings(root.id, seen | {name})}
            else:
                found.add(None)
        return found

    def walk(self) -> Iterator[tuple[str, ast.AST]]:
        yield from self.nodes

    @functools.cached_property
    def imported(self) -> dict[str, str]:
        """Names bound by imports in the reached cells and the preamble (and names assigned from them) -> the
        dotted name each stands for."""
        try:
            preamble = list(ast.walk(ast.parse(self.preamble)))
        except SyntaxError:
            preamble = []
        return aliases([*preamble, *(node for _, node in self.nodes)])

    @functools.cached_property
    def own_lookups(self) -> set[int]:
        """ids of the getattr-like calls on a method's own self (its first parameter, never rebound) in a class
        whose bases are all classes of the reached code: its attributes are the student's, whatever the name
        (a base from a library would bring the library's methods, Tensor.softmax among them)."""
        classes = {node.name: node for _, node in self.nodes if isinstance(node, ast.ClassDef)}
        pure: set[str] = set()
        for _ in classes:
            pure |= {name for name, c in classes.items() if not c.keywords and all(
                isinstance(b, ast.Name) and (b.id == "object" or b.id in pure) for b in c.bases)}
        found: set[int] = set()
        for name in pure:
            for method in classes[name].body:
                if not isinstance(method, ast.FunctionDef) or method.name == "__new__" or any(
                        isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list):
                    continue
                first = [a.arg for a in [*method.args.posonlyargs, *method.args.args]][:1]
                stored = {n.id for n in ast.walk(method) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
                if first and first[0] not in stored:
                    found |= {id(call) for call in _same_scope(method) if isinstance(call, ast.Call) and call.args
                              and isinstance(call.args[0], ast.Name) and call.args[0].id == first[0]}
        return found

    @functools.cached_property
    def loops(self) -> dict[str, tuple[str, ...]]:
        return constant_loops(node for _, node in self.nodes)


def _statement(node: ast.expr) -> ast.stmt:
    return ast.copy_location(ast.Expr(value=node), node)


def _strings(value: ast.expr) -> list[str]:
    """The strings a value bound to a name read in an annotation makes Python evaluate as code: the value's own
    (KIND = "torch.nn." + "Softmax"), or those in a type expression (KIND = list["torch.nn.Softmax"])."""
    text = folded(value)
    if text is not None:
        return [text]
    return [t for n in ast.walk(value) for t in [folded(n)] if t is not None] if _type_expression(value) else []


TYPE_MAKERS = {"TypeVar", "NewType", "ParamSpec", "TypeVarTuple"}  # what they make names no class to evaluate


def _unread_annotation(code: TaskCode, name: str) -> bool:
    """The name, read in an annotation, is bound to a value the judge cannot read: neither a string it reads as
    code (_strings), nor a type expression, an import, a def or a class. Python may evaluate it as code."""
    for node, value in code.annotation_bindings.get(name, ()):
        if isinstance(node, (ast.Import, ast.ImportFrom, *DEFINITIONS)):
            continue
        func = value.func if isinstance(value, ast.Call) else None
        maker = (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) in TYPE_MAKERS
        if value is None or not (folded(value) is not None or _type_expression(value) or maker):
            return True
    return False


def _type_expression(node: ast.expr) -> bool:
    """An annotation that only names types (`torch.optim.Optimizer`, `list[Tensor] | None`, a string): looking
    names up runs no code of the student's, so it is no use of what it names. Anything else (a call, a lambda)
    runs when the definition loads, and is read as code."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _type_expression(node.value)
    if isinstance(node, ast.Subscript):
        return _type_expression(node.value) and _type_expression(node.slice)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_type_expression(e) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _type_expression(node.left) and _type_expression(node.right)
    return False


# Decorators that never read the annotations of what they decorate. Any other may (functools.singledispatch's
# register evaluates them, string annotations included, and keeps the classes they name): under it, annotations
# that only name types are read as code too.
BLIND_DECORATORS = {"torch.no_grad", "torch.inference_mode", "torch.enable_grad", "staticmethod", "classmethod",
                    "property", "functools.wraps", "functools.cache", "functools.lru_cache",
                    "functools.cached_property"}


def _reads_annotations(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    text = _unparsed(target)
    return text not in BLIND_DECORATORS and not text.endswith((".setter", ".getter", ".deleter"))


def _load_time(node: ast.stmt) -> list[ast.stmt]:
    """What a definition runs when its cell loads: a function's decorators, defaults and annotations (but those
    that only name types, unless a decorator may read them); a class's decorators, bases and keywords, and its
    body but for the bodies of its methods."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        annotations = [arg.annotation for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                       if arg is not None and arg.annotation is not None] + ([node.returns] if node.returns else [])
        read = any(_reads_annotations(d) for d in node.decorator_list)
        parts = [*node.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None),
                 *(n for n in annotations if read or not _type_expression(n))]
        return [_statement(p) for p in parts]
    if isinstance(node, ast.ClassDef):
        head = [_statement(p) for p in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]]
        return head + [s for item in node.body for s in _load_time(item)]
    return [node]


def _same_scope(function: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of the functions, lambdas or classes it defines."""
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def _loaded(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def task_code(submission: Submission, task: str, stop: AbstractSet[str] = frozenset()) -> TaskCode:
    """The task's own cell, whole; from the other answer cells, the code that runs when they load; and every
    top-level function or class, in any answer cell, that binds a name the reached code loads (its own name, or a
    global it declares) or the task's own name (which a later cell may define again), transitively. The names in
    `stop` (ones the grading replaces while the task runs) are not followed from code that runs when the task is
    called; they are from code that runs at load, which sees the student's own. A cell that does not parse is
    left out: it fails to load, and every check of its task fails with it."""
    sources = tuple((cell["id"], cell["source"]) for cell in submission.cells)
    trees, unread = parse_cells(sources)
    preamble = submission.chapter.preamble
    if task not in trees:
        return TaskCode(task, (), unread, preamble, sources)
    taken: dict[str, list[ast.stmt]] = {task: list(trees[task].body)}
    at_load: list[ast.AST] = []
    definitions: dict[str, list[tuple[str, ast.stmt]]] = {}
    for name, tree in trees.items():
        for node in tree.body:
            at_load += _load_time(node)
            if name != task:
                taken.setdefault(name, []).extend(_load_time(node))
            if isinstance(node, DEFINITIONS):  # by its name, and by each global it binds when it runs
                for bound in {node.name} | {n for g in ast.walk(node) if isinstance(g, ast.Global) for n in g.names}:
                    definitions.setdefault(bound, []).append((name, node))

    def follow(wanted: set[str], todo: list[ast.AST], followed: set[str]) -> None:
        while wanted or todo:
            wanted = (wanted | {n for t in todo for n in _loaded(t)}) - followed
            found = [(where, node) for name in wanted for where, node in definitions.get(name, [])]
            for where, node in found:
                if where != task and all(node is not t for t in taken.get(where, [])):  # own cell: taken whole
                    taken.setdefault(where, []).append(node)
            todo = [node for _, node in found]
            followed |= wanted
            wanted = set()

    followed: set[str] = set()
    follow(set(), at_load, followed)  # what runs at load, and what it calls: the student's own names
    follow({task}, [trees[task]], followed | set(stop))  # what runs when the task is called
    return TaskCode(task, tuple((name, ast.Module(body=body, type_ignores=[])) for name, body in taken.items()
                                if body), unread, preamble, sources)


def _words(name: str) -> tuple[str, ...]:
    """A name's words, lower case: AdaptiveLogSoftmaxWithLoss, _adaptive_log_softmax_with_loss -> adaptive log
    softmax with loss."""
    return tuple(w.lower() for w in _WORD.findall(name))


def _names(wanted: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    return tuple(_words(n) for n in wanted)


@functools.lru_cache(maxsize=4096)
def _names_one(name: str, wanted: tuple[tuple[str, ...], ...]) -> bool:
    """Whether `name` is one of the wanted names or holds one among its words (torch._log_softmax,
    cross_entropy_loss, nn.AdaptiveLogSoftmaxWithLoss for softmax, cross_entropy)."""
    words = _words(name)
    return any(words[i:i + len(w)] == w for w in wanted for i in range(len(words) - len(w) + 1))


def _called(node: ast.Call, imported: dict[str, str]) -> str:
    """The name of the function a call calls, through the names imports and aliases bind (from operator import
    attrgetter as ag: ag is attrgetter)."""
    func = node.func
    if isinstance(func, ast.Name):
        return imported.get(func.id, func.id).split(".")[-1]
    return func.attr if isinstance(func, ast.Attribute) else ""


def _lookup_names(node: ast.Call, loops: dict[str, tuple[str, ...]], imported: dict[str, str]) -> list[str | None]:
    """The attribute names a getattr-like call looks up (None: computed at run time); a name that only loops over
    constant strings (for name in ("amax", "exp"): getattr(torch, name)) looks each of them up."""
    name = _called(node, imported)
    if name in {"attrgetter", "methodcaller"}:
        args = node.args[:1] if name == "methodcaller" else node.args
    elif name in DYNAMIC and len(node.args) > 1:
        args = node.args[1:2]
    else:
        return []
    return [v for a in args for v in (loops[a.id] if isinstance(a, ast.Name) and a.id in loops else [folded(a)])]


def names_used(code: TaskCode, names: Iterable[str]) -> list[Use]:
    """Every place the reached code names one of `names`, or a name holding one among its words: as an attribute
    of anything (torch.softmax, x.softmax, F.cross_entropy, torch._log_softmax), an import (from torch import
    softmax), or a getattr-like lookup with a name built from constants (getattr(torch, "soft" + "max")). The
    student's own functions of that name are not counted (07's softmax cell defines `softmax`); an attribute of
    the student's own objects is, since the judge cannot tell it from a tensor's."""
    wanted = _names(names)
    imported, loops = code.imported, code.loops

    def named(dotted: str) -> bool:
        return any(_names_one(part, wanted) for part in re.split(r"[.:]", dotted))

    found: list[Use] = []
    for cell, node in code.walk():
        hits: list[str] = []
        if isinstance(node, ast.Attribute) and _names_one(node.attr, wanted):
            hits.append(_unparsed(node))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            hits += [f"import {a.name}" for a in node.names if named(f"{module}.{a.name}")]
        elif isinstance(node, ast.Name) and node.id in imported and named(imported[node.id]):
            hits.append(f"{node.id} (imported as {imported[node.id]})")
        elif isinstance(node, ast.Call):
            hits += [_unparsed(node) for looked in _lookup_names(node, loops, imported)
                     if looked is not None and named(looked)]
        elif isinstance(node, ast.MatchClass):  # case object(softmax=f) looks f up as an attribute
            hits += [f"case ...({a}=...)" for a in node.kwd_attrs if _names_one(a, wanted)]
        found += [Use(cell, getattr(node, "lineno", 0), _short(text)) for text in hits]
    return _unique(found)


def unreadable(code: TaskCode) -> list[Use]:
    """Places where the reached code names something the judge cannot read: an attribute looked up by a name
    computed at run time (except on the student's own `self`), code run from strings, imports by name, star
    imports, namespaces used as dictionaries, tools that find objects by a name in a string or data, every
    construct the review scan flags, and cells nested too deeply to read."""
    imported, loops = code.imported, code.loops
    found = [Use(cell, 1, f"the whole cell: {TOO_DEEP}") for cell in code.unread]
    for cell, node in code.walk():
        text = None
        if isinstance(node, ast.Call):
            name = _called(node, imported)
            looked = _lookup_names(node, loops, imported)
            if any(n is None for n in looked) and id(node) not in code.own_lookups:
                text = f"{_unparsed(node)}: an attribute name computed at run time"
            elif name in RUNS_STRINGS:
                text = f"{_unparsed(node)}: code or names from strings"
        elif isinstance(node, ast.Name) and in_annotation(node) and _unread_annotation(code, node.id):
            text = f"{node.id} in an annotation: bound to a value the judge cannot read, which Python may evaluate"
        elif isinstance(node, ast.Attribute) and node.attr in NAMESPACES:
            text = f"{_unparsed(node)}: a namespace used as a dictionary"
        elif MATCH_ARGS in {getattr(node, "id", None), getattr(node, "attr", None)}:
            text = f"{MATCH_ARGS}: attribute names a match looks up, from strings"
        elif (isinstance(node, ast.Attribute) and node.attr in RESOLVERS) or (
                isinstance(node, ast.Name) and imported.get(node.id, "").split(".")[-1] in RESOLVERS):
            text = f"{_unparsed(node)}: finds an object by a name in a string or data"
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            text = f"from {node.module} import *: binds names the judge cannot list"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            paths = [f"{module}.{a.name}".lstrip(".") for a in node.names]
            if any(_within(p, RESOLVER_MODULES) for p in paths):
                text = f"{_unparsed(node)}: a module that finds objects by names in strings"
        elif isinstance(node, ast.Attribute):
            root, attrs = chain(node)
            if isinstance(root, ast.Name) and root.id in imported and _within(
                    ".".join([imported[root.id], *attrs]), RESOLVER_MODULES):
                text = f"{_unparsed(node)}: finds objects by names in strings"
        if text:
            found.append(Use(cell, getattr(node, "lineno", 0), _short(text)))
    flags = scan_cells([{"id": cell, "source": source} for cell, source in code.sources], code.preamble)
    found += [Use(f.cell, f.line, _short(f"{f.construct}: {f.why}")) for f in flags if (f.cell, f.line) in code.lines]
    first: dict[tuple[str, int], Use] = {}
    for use in _unique(found):  # one reason a line is enough
        first.setdefault((use.cell, use.line), use)
    return list(first.values())


def _within(dotted: str, modules: AbstractSet[str]) -> bool:
    parts = dotted.split(".")
    return any(".".join(parts[:i]) in modules for i in range(1, len(parts) + 1))


def subclasses(code: TaskCode, base: str) -> list[tuple[str, ast.ClassDef]]:
    """(cell, class) for every class in the reached code deriving from `base` (a dotted name such as
    torch.autograd.Function), however it was imported."""
    imported = code.imported
    found = []
    for cell, node in code.walk():
        if isinstance(node, ast.ClassDef):
            for b in node.bases:
                root, attrs = chain(b)
                if isinstance(root, ast.Name) and ".".join([imported.get(root.id, root.id), *attrs]) == base:
                    found.append((cell, node))
    return found


def _unparsed(node: ast.AST) -> str:
    return ast.unparse(node)


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _unique(uses: list[Use]) -> list[Use]:
    return sorted(set(uses), key=lambda u: (u.cell, u.line, u.text))


def listed(uses: list[Use], most: int = 5) -> str:
    """Uses as lines for a message, the first `most` of them."""
    more = len(uses) - most
    return "; ".join(str(u) for u in uses[:most]) + (f"; and {more} more" if more > 0 else "")


# Loops: Python iterating over its data, one step at a time, where a rule asks for one vectorized call.
LOOP_SYNTAX = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Builtins that iterate over their argument (given a tensor: over its rows), or hand an iterator on.
ITERATING_BUILTINS = frozenset({"sum", "map", "filter", "zip", "enumerate", "list", "tuple", "set", "frozenset",
                                "dict", "iter", "next", "sorted", "reversed", "min", "max", "any", "all"})
SIZES = frozenset({"shape", "size", "ndim", "dim", "stride", "numel"})  # what a tensor says of its layout


def _sizes(node: ast.expr) -> bool:
    """An expression that cannot be a tensor: constants, shapes and sizes (x.shape[1:], x.size(0)), len() and
    range(), and containers or arithmetic of them. Iterating over it is no loop over a tensor's rows."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_sizes(e) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return _sizes(node.left) and _sizes(node.right)
    if isinstance(node, ast.UnaryOp):
        return _sizes(node.operand)
    if isinstance(node, ast.Starred):
        return _sizes(node.value)
    if isinstance(node, ast.Subscript):
        return _sizes(node.value)
    if isinstance(node, ast.Attribute):
        return node.attr in SIZES
    if isinstance(node, ast.Call):
        func = node.func
        return (isinstance(func, ast.Name) and func.id in {"len", "range"}) or (
            isinstance(func, ast.Attribute) and func.attr in SIZES)
    return False


def _iterated(call: ast.Call, name: str) -> list[ast.expr]:
    """The arguments a builtin call iterates over: min and max of two or more compare them; map and filter iterate
    over all but the function; zip over all; the others over their first."""
    args = call.args
    if name in {"min", "max"}:
        return args if len(args) == 1 or any(isinstance(a, ast.Starred) for a in args) else []
    if name in {"map", "filter"}:
        return args[1:]
    return args if name == "zip" else args[:1]


def _bodies(tree: ast.AST) -> Iterator[ast.AST]:
    """The outermost function and lambda bodies in a tree: the code that runs when they are called."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from node.body
        elif isinstance(node, ast.Lambda):
            yield node.body
        else:
            todo.extend(ast.iter_child_nodes(node))


def python_loops(code: TaskCode, builtins: AbstractSet[str] = ITERATING_BUILTINS) -> list[Use]:
    """Where the reached code loops in Python. In the code that runs when the task is called (the bodies of its
    functions and lambdas; a cell's top level runs once, when it loads, before any input exists): a for or while
    statement, a comprehension or generator expression, * unpacking, and a call of an iterating builtin (sum, map,
    zip, list, ...), unless what they iterate over cannot be a tensor (a shape, a range, constants). Anywhere: an
    iterating builtin named without being called (bound or passed on, to iterate later), and a function that
    calls itself, directly or through others (recursion loops too). Library functions that iterate (unbind,
    tolist, numpy's apply_along_axis, ...) are the rule's own list: names_used finds them."""
    own = {node.name for _, node in code.walk() if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found: list[Use] = []

    def use(cell: str, node: ast.AST, why: str) -> None:
        text = _unparsed(node).split("\n")[0].rstrip(":")
        found.append(Use(cell, getattr(node, "lineno", 0), _short(f"{text}: {why}")))

    for cell, tree in code.cells:
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for body in _bodies(tree):
            for node in ast.walk(body):
                if isinstance(node, LOOP_SYNTAX):  # a for over range(n) too: one step per row or column
                    use(cell, node, "a Python loop")
                elif isinstance(node, ast.Starred) and isinstance(node.ctx, ast.Load) and not _sizes(node.value):
                    use(cell, node, "* unpacking iterates over its items")
                elif isinstance(node, ast.Assign) and not _sizes(node.value) and any(
                        isinstance(t, ast.Starred) for target in node.targets for t in ast.walk(target)):
                    use(cell, node, "* unpacking iterates over its items")  # first, *rest = x
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in builtins \
                        and node.func.id not in own and not all(_sizes(a) for a in _iterated(node, node.func.id)):
                    use(cell, node, f"builtin {node.func.id} iterates over its argument")
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in builtins \
                    and node.id not in own and id(node) not in called:
                use(cell, node, f"builtin {node.id}, passed on to iterate later")
    found += _recursion(code)
    return _unique(found)


def _recursion(code: TaskCode) -> list[Use]:
    """A Use for each function of the reached code that calls itself by its name, directly or through others."""
    functions = [(cell, node) for cell, node in code.walk()
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    calls: dict[str, set[str]] = {}
    for _, f in functions:
        calls.setdefault(f.name, set()).update(n for body in f.body for n in _loaded(body))
    found = []
    for cell, f in functions:
        seen, todo = set(), list(calls[f.name] & calls.keys())
        while todo and f.name not in seen:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo += calls[name] & calls.keys()
        if f.name in seen:
            found.append(Use(cell, f.lineno, f"def {f.name}: calls itself (recursion loops too)"))
    return found


# Puzzles (Tensor-Puzzles' form): a function whose body is one expression over a stated set of operations.
NOT_ONE_EXPRESSION = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.IfExp,
                      ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)


def _body(function: ast.FunctionDef) -> list[ast.stmt]:
    return function.body[1:] if ast.get_docstring(function) is not None else function.body


def released_stub(code: TaskCode, name: str) -> bool:
    """`name` is defined once in the task's own cell by a body that, after a docstring and comments, only raises
    NotImplementedError: the task as released, not attempted. A rule check runs it first, so that "not
    implemented" is the verdict rather than a broken rule; code that merely raises it somewhere is not a stub."""
    own = [n for cell, n in code.walk() if cell == code.task and isinstance(n, ast.FunctionDef) and n.name == name]
    return len(own) == 1 and only_raises_not_implemented(own[0])


def only_raises_not_implemented(function: ast.FunctionDef) -> bool:
    """The function's body, after a docstring, is one `raise NotImplementedError(...)`: a stub as released."""
    body = _body(function)
    raised = body[0].exc if len(body) == 1 and isinstance(body[0], ast.Raise) else None
    raised = raised.func if isinstance(raised, ast.Call) else raised
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def puzzle_breaks(code: TaskCode, name: str, allowed: AbstractSet[str]) -> list[Use]:
    """Where the puzzle `name` (a function of the task's own cell) breaks its rule: its body, after a docstring, is
    one `return <expression>`, with no lambda, comprehension, conditional expression or walrus; every function it
    calls and every attribute it reads is allowed. `allowed` holds dotted names of module functions
    ("torch.arange"), method and attribute names with a leading dot (".shape", ".sum") and plain names ("len",
    an earlier puzzle). Operators, indexing, slicing, constants and the function's parameters are always
    allowed. A global name is judged by every binding of it in the reached code (TaskCode.meanings): bound to
    different things, it breaks the rule. A missing function is a break; so is anything `unreadable` anywhere in
    the reached code (a patched library operation among it)."""
    own = [(cell, n) for cell, n in code.walk() if cell == code.task and isinstance(n, ast.FunctionDef)
           and n.name == name]
    if len(own) != 1:
        return [Use(code.task, 1, f"{len(own)} definitions of {name} in its cell (one is the puzzle)")]
    cell, function = own[0]
    found: list[Use] = []
    body = _body(function)
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        found.append(Use(cell, function.lineno, f"{name}: the body is not one `return <expression>`"))
    params = {a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]}
    inner: set[int] = set()  # the parts of a module's dotted name already judged whole (torch.nn.functional)
    a = function.args  # annotations are not operations: `x: torch.Tensor` is fine; defaults run, so they count
    read = [*function.body, *a.defaults, *(d for d in a.kw_defaults if d is not None), *function.decorator_list]
    for node in (n for part in read for n in ast.walk(part)):
        text = None
        if isinstance(node, (*NOT_ONE_EXPRESSION, *DEFINITIONS)):
            text = f"{_unparsed(node)}: not allowed in a puzzle"
        elif isinstance(node, ast.Attribute) and id(node) not in inner:
            root, attrs = chain(node)
            if isinstance(root, ast.Name) and root.id not in params and not code.unbound_but_by_own(root.id):
                inner |= {id(n) for n in ast.walk(node.value) if isinstance(n, (ast.Attribute, ast.Name))}
                text = _meant(code, root.id, code.meanings(root.id), attrs, allowed)
            elif f".{node.attr}" not in allowed:
                text = f".{node.attr}: not among the allowed operations"
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in params \
                and id(node) not in inner:
            # A bare name stands for what every binding of it at load makes it (`from torch import diff`, `lower =
            # torch.tril` in any reached cell), and is judged as that.
            if code.unbound_but_by_own(node.id):
                text = None if node.id in allowed else f"{node.id}: not among the allowed operations and names"
            else:
                text = _meant(code, node.id, code.meanings(node.id), [], allowed)
        if text:
            found.append(Use(cell, getattr(node, "lineno", function.lineno), _short(text)))
    # Code the judge cannot read anywhere the task reaches (a library's operation patched at load among it) may
    # change what an allowed operation does.
    return _unique(found + unreadable(code))


def _meant(code: TaskCode, name: str, meant: set[str | None], attrs: list[str], allowed: AbstractSet[str]
           ) -> str | None:
    """Why a global name (with `attrs` read from it) breaks a puzzle's rule: what its bindings make it is not one
    allowed operation, or they make it different things; None when it is one."""
    known = sorted(m for m in meant if m is not None)
    if len(meant) == 1 and known:
        dotted = ".".join([known[0], *attrs])
        shown = dotted if attrs else f"{name} = {dotted}"
        return None if dotted in allowed else f"{shown}: not among the allowed operations"
    count = len(code.bindings.get(name, ()))
    if count < 2:
        return f"{name}: not among the allowed operations and names"
    listed = ", ".join(known + (["a value"] if None in meant else []))
    return f"{name}: bound {count} times at load (to {listed}): which one runs is not read"

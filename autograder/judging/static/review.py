"""The judge's own static read of a submission's answer cells: constructs that reach into other code.

Student code shares its interpreter with the child runtime and the chapter's
harness. No point rests on anything recorded in that process (every check's
evidence is the judge's oracle, its clock, the kernel's limits or its own read of
the source), so reaching in gains nothing; but an instructor wants to know when a
submission tries. Reaching in takes constructs that code for this course never
needs: frames, the module table, the garbage collector, ctypes, introspection of
other code's objects (__closure__, __globals__, ...), private torch internals,
patching libraries, attribute names the judge cannot read (getattr with a computed
name, exec, __import__). This module parses the answer cells with `ast` (nothing
is run) and flags each such construct with its cell and line. String constants
naming them are flagged too, so that getattr(sys, "_getframe") or "_get" + "frame"
do not slip through.

A flag is for review and costs no point: the flags go in the results, above the
checks, in the summary and in the class report's review list. Ordinary Python on
the student's own objects never flags (self.__dict__ in __getstate__, private
attributes and protocol methods such as __torch_function__ of classes the cells
define, dataclasses, functools, typing): tests/judging/test_review_flags.py keeps
a corpus of such idioms.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from autograder.judging.notebook import Submission
from autograder.judging.static.parse import (
    DYNAMIC,
    TOO_DEEP,
    aliases,
    binding_counts,
    bound_by,
    chain,
    constant_loops,
    folded,
    parse_cells,
    walk,
)

# Modules that only serve to reach other code's objects, frames or memory.
MODULES = {
    "gc": "the garbage collector, which hands out every object in the process, the grader's too",
    "ctypes": "raw memory access", "_ctypes": "raw memory access",
    "inspect": "frame and source introspection",
    "importlib": "importing modules by computed names",
    "builtins": "the builtins shared with the grader's code", "__builtin__": "the builtins shared with the grader",
    "__main__": "the grader's main module",
    "autograder": "the grader itself", "__harness__": "the grader's harness", "kit": "the grader's harness",
    "marshal": "code objects from bytes", "pickle": "unpickling calls functions named in the data",
    "_pickle": "unpickling calls functions named in the data", "copyreg": "unpickling hooks",
    "dill": "unpickling calls functions named in the data", "cloudpickle": "unpickling calls functions by name",
    "pdb": "a debugger: frames of other code", "bdb": "a debugger: frames of other code",
    "trace": "tracing other code's frames",
}
# Module names distinctive enough to flag inside strings too.
STRING_MODULES = {"ctypes", "_ctypes", "importlib", "builtins", "__builtin__", "__main__", "marshal", "copyreg",
                  "_pickle"}
# Attributes that expose frames, closures, namespaces and class internals.
INTROSPECTION = {
    "f_locals", "f_globals", "f_back", "f_code", "f_builtins", "f_trace", "tb_frame", "tb_next", "gi_frame",
    "gi_code", "cr_frame", "cr_code", "ag_frame", "cell_contents", "__closure__", "__globals__", "__code__",
    "__builtins__", "__dict__", "__subclasses__", "__bases__", "__base__", "__mro__", "__self__", "__func__",
    "__defaults__", "__kwdefaults__", "__traceback__", "__getattribute__", "__setattr__",
    "__delattr__", "__import__", "__loader__", "__spec__", "__reduce__", "__reduce_ex__", "__getattr__", "__get__",
}
# Of those, what ordinary code reads on its own objects and classes (__getstate__, __setattr__, frozen dataclasses).
OWN_INTROSPECTION = {"__dict__", "__subclasses__", "__bases__", "__base__", "__mro__", "__self__",
                     "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__reduce__", "__reduce_ex__"}
# Names that walk the call stack (whose frames hold the grader's objects) or find objects by reference.
FRAMES = {"_getframe", "_current_frames", "_current_exceptions", "settrace", "setprofile", "gettrace", "getprofile",
          "walk_stack", "walk_tb", "get_referrers", "get_referents", "get_objects"}
# Names that switch off torch's dispatch modes (other code's operator traces).
DISPATCH = {"_disable_current_modes", "_python_dispatch", "_get_current_dispatch_mode", "_pop_mode", "_push_mode",
            "_pop_mode_temporarily", "_pop_torch_dispatch_stack", "_len_torch_dispatch_stack",
            "_DisableTorchDispatch", "_ExcludeDispatchKeyGuard", "_DisableTorchFunction",
            "_DisableTorchFunctionSubclass"}
GRADER = {"autograder", "__harness__"}
INTERNALS = FRAMES | DISPATCH | GRADER
# sys attributes that reach modules, frames or the import system.
SYS = {"modules", "meta_path", "path_hooks", "path_importer_cache", "addaudithook", "exc_info", "exception",
       "last_traceback", "last_exc", "last_value", "__dict__"}
# Underscore names that are public API.
PRIVATE_OK = {"_replace", "_asdict", "_fields", "_make", "_field_defaults", "_exit"}
# Call names that run or reach code by strings, or hand out namespaces.
CALLS = {
    "exec": "runs code from a string", "eval": "runs code from a string", "compile": "compiles code from a string",
    "__import__": "imports a module by name", "globals": "a namespace as a dict", "locals": "a namespace as a dict",
    "vars": "an object's namespace as a dict", "breakpoint": "a debugger",
}
LIBRARY_SETTINGS = ("torch.backends.",)  # library attributes that ordinary code sets (cudnn.benchmark, tf32)
UNBOUND = "a method taken from its class, which then runs with any object as self"
MAX_FLAGS = 20  # flags a report lists; it counts them all
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GRADER_NAME = re.compile(r"\b(autograder|__harness__|kit)\.[A-Za-z_]|^\s*(autograder|__harness__)\s*$")


@dataclass(frozen=True)
class Flag:
    cell: str
    line: int
    construct: str
    why: str

    def __str__(self) -> str:
        return f"cell '{self.cell}', line {self.line}: {self.construct} ({self.why})"


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _private(name: str) -> bool:
    return name.startswith("_") and not _dunder(name) and name not in PRIVATE_OK


def _string_why(text: str) -> str | None:
    """Why a string constant is flagged: it names an internal (as a whole identifier), else None."""
    if _GRADER_NAME.search(text):
        return "a string naming the grader's modules or harness"
    for token in _IDENT.findall(text):
        if token in FRAMES | DISPATCH | INTROSPECTION | STRING_MODULES:
            return f"a string naming {token}, as getattr, __import__ or a namespace lookup would use it"
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self, cell: str, aliases: set[str], bound: set[str], own: Own, docstrings: set[int],
                 origin: dict[str, str]) -> None:
        self.cell = cell
        self.aliases = aliases  # names bound to modules or to objects imported from them
        self.bound = bound  # every name the cells bind themselves
        self.classes = own.classes
        self.own = own
        self.docstrings = docstrings
        self.origin = origin  # alias -> dotted name it stands for
        self.flags: list[Flag] = []
        # Per function scope: the names that are the student's own instance or class there (a method's first
        # parameter, never rebound).
        self.scopes: list[frozenset[str]] = [frozenset()]
        self.methods: set[int] = set()  # ids of the functions defined directly in a class body
        self.called_on_own: set[int] = set()  # ids of Own.method in Own.method(self, ...)

    def flag(self, node: ast.AST, why: str, construct: str | None = None) -> None:
        text = construct or ast.unparse(node)
        text = text if len(text) <= 60 else text[:57] + "..."
        self.flags.append(Flag(self.cell, getattr(node, "lineno", 0), text, why))

    # -- imports -----------------------------------------------------------
    def _module_why(self, dotted: str) -> str | None:
        parts = dotted.split(".")
        if parts[0] in MODULES:
            return MODULES[parts[0]]
        if parts[0] == "torch" and any(_private(p) for p in parts[1:]):
            return "private torch internals, among them the switches of the grader's operation tracing"
        if parts[:2] == ["torch", "library"]:
            return "custom operators, which hide their inner operations from the grader's trace"
        return None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            why = self._module_why(alias.name)
            if why:
                self.flag(node, why)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        why = self._module_why(module)
        for alias in node.names:
            name = alias.name
            why = why or self._module_why(f"{module}.{name}")
            if module == "sys" and (name in SYS or name in INTERNALS or name == "*"):
                why = why or "the interpreter's module table or frames"
            if name in INTERNALS or name in INTROSPECTION:
                why = why or self._attribute_why(ast.Constant(None), [], name)
        if why:
            self.flag(node, why)

    # -- attributes ----------------------------------------------------------
    def _own_root(self, root: ast.AST) -> bool:
        """The student's own objects: a method's self or cls (its first parameter, never rebound), super(), a
        class the cells define (or a name bound only to one), a name bound only to an instance of one, a call of
        one, type() of any of these."""
        if isinstance(root, ast.Name):
            return root.id in self.scopes[-1] or root.id in self.classes or root.id in self.own.instances
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Name):
            if root.func.id == "type" and len(root.args) == 1:
                return self._own_root(root.args[0])
            return root.func.id == "super" or root.func.id in self.classes
        return False

    def _own_class(self, node: ast.AST) -> bool:
        """An own class itself (not an instance): its name, or type() of an own object."""
        if isinstance(node, ast.Name):
            return node.id in self.classes
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
                and len(node.args) == 1 and self._own_root(node.args[0]))

    def _unbound(self, node: ast.Attribute) -> bool:
        """Own.method, a plain method taken from its class (it then runs with any object as self), other than
        called on the student's own object (Base.__init__(self))."""
        return (node.attr in self.own.methods and self._own_class(node.value) and id(node) not in self.called_on_own
                and isinstance(node.ctx, ast.Load))

    def _attribute_why(self, root: ast.AST, attrs: list[str], name: str) -> str | None:
        """Why reading attribute `name` of root.attrs... is flagged, else None."""
        own = self._own_root(root) and not (name == "__dict__" and self._own_class(root))  # a class's: its methods
        if name in INTROSPECTION and not (name in OWN_INTROSPECTION and own):
            return "introspection of frames, closures or namespaces, where the grader's records live"
        if name in FRAMES:
            return "the call stack or objects found by reference, which reach the grader's objects"
        if name in DISPATCH:
            return "torch's dispatch-mode switches, on which the grader's operation counting relies"
        if name in GRADER:
            return "the grader itself"
        dotted = ".".join([self.origin.get(root.id, root.id), *attrs]) if isinstance(root, ast.Name) else ""
        if name in SYS and (dotted == "sys" or dotted.endswith(".sys")):
            return "the interpreter's module table or exceptions' frames, which reach the grader's runtime"
        if f"{dotted}.{name}".startswith("torch.library"):
            return "custom operators, which hide their inner operations from the grader's trace"
        library = isinstance(root, ast.Name) and root.id in self.aliases  # a module: never the student's object
        if _private(name) and (library or name not in self.own.private) and not self._own_root(root):
            return "a private attribute of an object your code did not define (hooks, records, internals)"
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        root, attrs = chain(node.value)
        why = self._attribute_why(root, attrs, node.attr)
        if why:
            self.flag(node, why)
        elif self._unbound(node):
            self.flag(node, UNBOUND)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.bound:
            return
        if node.id in CALLS:
            self.flag(node, CALLS[node.id])
        elif node.id in DYNAMIC:  # calls are read in visit_Call; here it is passed around
            self.flag(node, "an attribute lookup passed around as a function, whose names the judge cannot read")
        elif node.id in {"__builtins__", "autograder", "__harness__", "kit"}:
            self.flag(node, "the grader's namespaces")

    def visit_Call(self, node: ast.Call) -> None:
        if self._string(node):  # "".join([...constants])
            return
        func = node.func
        if isinstance(func, ast.Attribute) and node.args and self._own_root(node.args[0]):
            self.called_on_own.add(id(func))
        if self._on_own_object(node):  # vars(self), object.__setattr__(self, ...) in a frozen dataclass
            for arg in [*node.args, *node.keywords]:
                self.visit(arg)
            return
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in DYNAMIC and not (isinstance(func, ast.Name) and func.id in self.bound):
            self._dynamic(node, name)
            for arg in node.args:
                self.visit(arg)
            for kw in node.keywords:
                self.visit(kw)
            if isinstance(func, ast.Attribute):
                self.visit(func.value)
            return
        self.generic_visit(node)

    def _on_own_object(self, node: ast.Call) -> bool:
        func, first = node.func, node.args[0] if node.args else None
        if first is None or not self._own_root(first) or self._own_class(first):  # vars(Own) holds its methods
            return False
        if isinstance(func, ast.Name):
            return func.id == "vars" and func.id not in self.bound
        return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "object"
                and func.attr in {"__setattr__", "__getattribute__", "__delattr__"})

    def _dynamic(self, node: ast.Call, name: str) -> None:
        """getattr(obj, "x") is read like obj.x; a name the judge cannot read is flagged."""
        if name in {"attrgetter", "methodcaller"}:
            names = [folded(a) for a in node.args[:1 if name == "methodcaller" else None]]
            obj: ast.AST | None = None
        else:
            names = [folded(node.args[1])] if len(node.args) > 1 else [None]
            obj = node.args[0] if node.args else None
            looked = node.args[1] if len(node.args) > 1 else None
            if isinstance(looked, ast.Name) and looked.id in self.own.loops:
                names = list(self.own.loops[looked.id])  # for name in ("weight", "bias"): getattr(m, name)
            if (isinstance(looked, ast.Attribute) and looked.attr == "name" and isinstance(looked.value, ast.Name)
                    and looked.value.id in self.own.field_loops):
                names = list(self.own.fields)  # for f in dataclasses.fields(self): getattr(other, f.name)
        for attr in names:
            if attr is None:
                if not (obj is not None and self._safe_dynamic(obj, node.args[1])):
                    self.flag(node, "an attribute name computed at run time, which the judge cannot read")
                return
            root, attrs = chain(obj) if obj is not None else (ast.Constant(None), [])
            for part in attr.split("."):
                why = self._attribute_why(root, attrs, part)
                if why:
                    self.flag(node, why)
                    return
            if name in {"getattr", "attrgetter"} and attr in self.own.methods and (obj is None or self._own_class(obj)):
                self.flag(node, UNBOUND)
                return
            if name in {"setattr", "delattr"} and obj is not None and self._patches(obj, attr):
                self.flag(node, self._patches(obj, attr) or "")
                return

    def _safe_dynamic(self, obj: ast.AST, name: ast.AST) -> bool:
        """getattr(self, name): an attribute of the student's own object, whatever its name. (Not delegation,
        getattr(self.inner, name) in __getattr__: wrapping sys, W(sys).modules would reach sys.modules.)"""
        return self._own_root(obj)

    # -- assignments ------------------------------------------------------------
    def _patches(self, obj: ast.AST, attr: str) -> str | None:
        """Why setting obj.attr patches code that is not the student's, else None."""
        root, attrs = chain(obj)
        if _dunder(attr) and attr not in {"__doc__"}:
            return "replaces a special attribute (class, call, code) of an object"
        if isinstance(root, ast.Name) and root.id in self.aliases:
            dotted = ".".join([self.origin.get(root.id, root.id), *attrs, attr])
            if not dotted.startswith(LIBRARY_SETTINGS):
                return "patches a library that the grader's code uses too"
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id == "type":
            return "patches the class of an object your code did not define"
        return None

    def _targets(self, targets: list[ast.expr]) -> None:
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
                    why = self._patches(node.value, node.attr)
                    if why:
                        self.flag(node, why)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._targets(node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._targets([node.target])
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._targets([node.target])
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._targets(node.targets)
        self.generic_visit(node)

    # -- definitions and strings -------------------------------------------------
    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name == "__torch_dispatch__":  # runs under every aten operator, the harness's too
            self.flag(node, "a dispatch hook, which can hide operations from the grader's trace",
                      f"def {node.name}")
        rebound = {name for statement in node.body for name in _bindings(statement)}
        selves = self.scopes[-1] - set(_params(node)) - rebound
        first = [p.arg for p in [*node.args.posonlyargs, *node.args.args]][:1]
        if id(node) in self.methods and first and not _decorated(node, "staticmethod") and node.name != "__new__":
            selves |= set(first) - rebound
        self.scopes.append(frozenset(selves))
        self.generic_visit(node)
        self.scopes.pop()

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.scopes.append(self.scopes[-1] - set(_params(node)))
        self.generic_visit(node)
        self.scopes.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.methods |= {id(item) for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._definition(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._definition(node)

    def _string(self, node: ast.expr) -> bool:
        """Flag a constant string (folded) that names an internal; True if the node was one."""
        text = folded(node)
        if text is None:
            return False
        why = None if id(node) in self.docstrings else _string_why(text)
        if why:
            self.flag(node, why)
        return True

    def visit_Compare(self, node: ast.Compare) -> None:
        """if __name__ == "__main__": the script guard names no module to reach."""
        parts = [node.left, *node.comparators]
        if (len(parts) == 2 and any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts)
                and any(isinstance(p, ast.Constant) and p.value == "__main__" for p in parts)):
            return
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        for attr in node.kwd_attrs:
            why = self._attribute_why(ast.Constant(None), [], attr)
            if why:
                self.flag(node, why, f"case ...({attr}=...)")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        self._string(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if not self._string(node):
            self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        if not self._string(node):
            self.generic_visit(node)


def _bound(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(every name the code binds other than by import, the classes it defines)."""
    bound: set[str] = set()
    classes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            if isinstance(node, ast.ClassDef):
                classes.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound, classes


@dataclass(frozen=True)
class Own:
    """What the cells define themselves: their classes (and names bound only to them), instances (names bound
    only to a call of one), the private attribute names they set or define, loop variables that only run over
    constant strings or over a dataclass's own fields, and the names of the plain methods of their classes."""

    classes: set[str]
    private: set[str]
    loops: dict[str, tuple[str, ...]]
    instances: set[str] = field(default_factory=set)
    methods: set[str] = field(default_factory=set)
    fields: tuple[str, ...] = ()  # the names annotated in their class bodies (a dataclass's fields)
    field_loops: set[str] = field(default_factory=set)  # names bound only by: for f in fields(self)


# Methods that Python calls with a class as their first argument, whatever the caller passes.
CLASS_METHODS = {"__new__", "__init_subclass__", "__class_getitem__"}


def _decorated(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    return any((isinstance(d, ast.Name) and d.id == name) or (isinstance(d, ast.Attribute) and d.attr == name)
               for d in node.decorator_list)


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[str]:
    a = node.args
    return [p.arg for p in [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg] if p is not None]


def _bindings(node: ast.AST) -> set[str]:
    return {name for n in ast.walk(node) for name in bound_by(n)}


def _is_class_expr(node: ast.AST, classes: set[str]) -> bool:
    """An own class: its name, type(self) or self.__class__ (self as written: the scanner checks it)."""
    if isinstance(node, ast.Name):
        return node.id in classes
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
        return len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in {"self", "cls"}
    return (isinstance(node, ast.Attribute) and node.attr == "__class__" and isinstance(node.value, ast.Name)
            and node.value.id in {"self", "cls"})


def _constructs(node: ast.AST, classes: set[str]) -> bool:
    """A call that makes an instance of an own class: Own(...), cls(...), type(self)(...), Own.__new__(Own),
    object.__new__(cls), super().__new__(cls)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if _is_class_expr(func, classes | {"cls"}):
        return True
    return (isinstance(func, ast.Attribute) and func.attr == "__new__" and bool(node.args)
            and _is_class_expr(node.args[0], classes | {"cls"}))


def _own(nodes: Iterable[ast.AST], classes: set[str]) -> Own:
    """Own, from every node of the cells (walk)."""
    nodes = list(nodes)
    stores = binding_counts(nodes)
    private, methods, annotated = _members(nodes)
    assigned = [(node.targets[0].id, node.value) for node in nodes  # name = value, one name
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)]
    own = {c for c in classes if c not in stores}  # a class name bound to something else too is not
    for _ in range(3):  # Alias = OwnClass, cls = type(self), and aliases of those: every binding an own class
        own |= _bound_only(assigned, stores, _is_class_expr, own)
    instances = _bound_only(assigned, stores, _constructs, own)
    return Own(own, private, constant_loops(nodes), instances - own, methods, tuple(sorted(annotated)),
               _field_loops(nodes, set(classes), stores))


def _bound_only(assigned: list[tuple[str, ast.expr]], stores: dict[str, int],
                to: Callable[[ast.AST, set[str]], bool], classes: set[str]) -> set[str]:
    """The names every binding of which assigns them a value that `to` accepts (given the own classes)."""
    found = {name for name, value in assigned if to(value, classes)}
    return {n for n in found if stores.get(n) == sum(1 for m, v in assigned if m == n and to(v, classes))}


def _members(nodes: list[ast.AST]) -> tuple[set[str], set[str], set[str]]:
    """(the private attribute names the cells set or define in class bodies, the names of their classes' plain
    methods, the names annotated in their class bodies)."""
    private: set[str] = set()
    methods: set[str] = set()
    annotated: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr):
            private.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            annotated |= {item.target.id for item in node.body
                          if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}
            for item in node.body:
                private |= {n for n in _defined(item) if _private(n)}
                if (isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name not in CLASS_METHODS
                        and not item.decorator_list):  # a plain method: self is whatever the caller passes
                    methods.add(item.name)
    return private, methods, annotated


def _defined(item: ast.stmt) -> list[str]:
    """The names a statement of a class body defines: a method's, or an assignment's plain targets."""
    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [item.name]
    return [t.id for t in getattr(item, "targets", [getattr(item, "target", None)]) if isinstance(t, ast.Name)]


def _field_loops(nodes: list[ast.AST], classes: set[str], stores: dict[str, int]) -> set[str]:
    """Names bound only as the target of loops over an own dataclass's fields (for f in fields(self))."""
    over_fields: dict[str, int] = {}
    for node in nodes:
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) and _fields_of_own(
                node.iter, classes):
            over_fields[node.target.id] = over_fields.get(node.target.id, 0) + 1
    return {k for k, n in over_fields.items() if stores.get(k) == n}


def _fields_of_own(node: ast.AST, classes: set[str]) -> bool:
    """dataclasses.fields(self), fields(type(self)), fields(OwnClass)."""
    return (isinstance(node, ast.Call) and len(node.args) == 1 and (
        (isinstance(node.func, ast.Name) and node.func.id == "fields")
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "fields"))
        and (_is_class_expr(node.args[0], classes)
             or (isinstance(node.args[0], ast.Name) and node.args[0].id in {"self", "cls"})))


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


@functools.lru_cache(maxsize=64)
def _scan(sources: tuple[tuple[str, str], ...], preamble: str) -> tuple[Flag, ...]:
    trees, unread = parse_cells(sources)  # a cell that does not parse fails to load anyway: nothing to forge
    order = {cell: i for i, (cell, _) in enumerate(sources)}
    flags = [Flag(cell, 1, "the whole cell", TOO_DEEP) for cell in unread] + scan_trees(trees, preamble)
    return tuple(sorted(flags, key=lambda f: (order[f.cell], f.line)))


def scan_trees(trees: Mapping[str, ast.Module], preamble: str = "") -> list[Flag]:
    """The flags of parsed cells (parse_cell), by cell id."""
    try:
        extra: list[ast.AST] = [ast.parse(preamble)]
    except SyntaxError:
        extra = []
    origin = aliases(walk([*trees.values(), *extra]))
    import_bound = set(origin)
    bound: set[str] = set()
    classes: set[str] = set()
    for tree in trees.values():
        b, c = _bound(tree)
        bound |= b
        classes |= c
    own = _own(walk(trees.values()), classes - import_bound)
    flags: list[Flag] = []
    for cell, tree in trees.items():
        scanner = _Scanner(cell, import_bound, bound - import_bound, own, _docstrings(tree), origin)
        scanner.visit(tree)
        flags += scanner.flags
    seen: dict[tuple[str, int, str], Flag] = {}
    for f in flags:  # one flag per reason and line: a.b.c and a.b are one construct
        seen.setdefault((f.cell, f.line, f.why), f)
    return list(seen.values())


def scan_cells(cells: list[dict[str, str]], preamble: str = "") -> list[Flag]:
    """Every construct in the answer cells that reaches into grader internals, in cell and line order."""
    return list(_scan(tuple((c["id"], c["source"]) for c in cells), preamble))


def scan_submission(submission: Submission) -> list[Flag]:
    """scan_cells for a notebook.Submission (its answer cells, with its chapter's preamble)."""
    return scan_cells(submission.cells, submission.chapter.preamble)


def _listed(flags: list[Flag], most: int) -> str:
    more = len(flags) - most
    return "\n".join(f"  {f}" for f in flags[:most]) + (f"\n  ... and {more} more" if more > 0 else "")


def note(flags: list[Flag]) -> str:
    """The plain statement for the student and the instructor, above the checks (the first MAX_FLAGS flags)."""
    return ("Review: your answer cells use constructs that reach into other code (the grader's, torch's "
            "internals, frames or namespaces). A flag costs no points: every score here comes from the judge's "
            "own evidence. (An exercise whose stated rule the judge checks by reading your code, as in 07, "
            "cannot be read past a flagged line its code reaches; that rule's check says so.) Your instructor "
            "will read the flagged lines:\n" + _listed(flags, MAX_FLAGS))

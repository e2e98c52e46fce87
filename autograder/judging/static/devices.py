"""The judge's reading of where the answer cells make their tensors: lines that would fail on a GPU grading.

A grading on a GPU puts the inputs on the GPU. Code that makes a tensor of its own on the CPU there (torch.arange(n)
or torch.zeros(...) without device=, torch.tensor(...) of Python numbers), reads an input with .numpy(), or names
a device ("cpu", .cuda()) mixes devices and raises, though it passes every check on a CPU-only machine. This module
reads the cells with `ast` (nothing is run) and finds those lines, so that a CPU-only grading can say what a GPU
would do. It decides no point: the evidence is the judge's reading, not a run, and on a GPU runner the device checks
run the code itself (autograder/judging/judge.py adds the note on CPU gradings only).

Where it looks: the functions that take a tensor (a parameter annotated as a tensor, a Module or a list of them, or
one the body reads as a tensor: x.shape, x[...], x.device) or a `device` parameter, each with its own parameters;
a Module's __init__, where a tensor stored as a plain attribute is one that .to(device) leaves behind. A function
of plain numbers (times_table(n), or a helper nested in a function of tensors) has no input device: its tensors are
fine on the CPU.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from autograder.judging.notebook import Submission
from autograder.judging.static.parse import aliases, dotted, parse_cells, walk

# Factories that make a tensor on the default device (the CPU) unless given device=.
FACTORIES = {"arange", "zeros", "ones", "empty", "full", "eye", "linspace", "logspace", "rand", "randn", "randint",
             "randperm", "tensor", "as_tensor", "from_numpy", "tril_indices", "triu_indices", "bartlett_window",
             "hann_window", "hamming_window"}
# What reading a parameter this way says: it is a tensor (or a Module holding them).
TENSOR_ATTRIBUTES = {"shape", "device", "dtype", "ndim", "dim", "size", "numel", "to", "float", "double", "long",
                     "int", "bool", "half", "view", "reshape", "sum", "mean", "max", "min", "amax", "amin", "abs",
                     "exp", "log", "unsqueeze", "squeeze", "flatten", "permute", "transpose", "T", "mT", "gather",
                     "expand", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor", "clone", "detach",
                     "numpy", "tolist", "item", "requires_grad", "grad", "parameters", "cpu", "cuda", "type_as"}
TENSOR_TYPES = ("Tensor", "Module", "Parameter", "Sequential")
MODULE_BASES = {"Module", "nn.Module", "torch.nn.Module"}
KEPT = {"Parameter", "register_buffer", "register_parameter"}  # what Module.to() moves
GPU_RAISES = "mixing it with the inputs (on the GPU) raises \"Expected all tensors to be on the same device\""
MAX_NOTES = 10  # lines a note lists; it counts them all


@dataclass(frozen=True)
class DeviceNote:
    cell: str
    line: int
    code: str  # the call, as written (shortened)
    gpu: str  # what happens on a GPU grading, and the fix

    def __str__(self) -> str:
        return f"cell '{self.cell}', line {self.line}: {self.code}: {self.gpu}"


def _short(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _annotated_tensor(arg: ast.arg) -> bool:
    return arg.annotation is not None and any(t in ast.unparse(arg.annotation) for t in TENSOR_TYPES)


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = node.args
    return [p for p in [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg] if p is not None]


def _tensor_params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The parameters that hold tensors: annotated so, or read as one in the body (x.shape, x[...], x @ w, or
    combined with a tensor the code makes: idx == torch.arange(c)). A number passed to calls and combined with
    numbers (n in torch.arange(1, n + 1)) is not one."""
    read: set[str] = set()
    sizes = {a.id for sub in ast.walk(node) if isinstance(sub, ast.Call) and _factory_call(sub)
             for a in sub.args if isinstance(a, ast.Name)}  # torch.arange(n): n is a number
    for sub in ast.walk(node):
        attribute = isinstance(sub, ast.Attribute) and sub.attr in TENSOR_ATTRIBUTES
        if (attribute or isinstance(sub, ast.Subscript)) and isinstance(sub.value, ast.Name):  # type: ignore[attr-defined]
            read.add(sub.value.id)  # type: ignore[attr-defined]
        elif isinstance(sub, (ast.BinOp, ast.Compare)):
            sides = [sub.left, sub.right] if isinstance(sub, ast.BinOp) else [sub.left, *sub.comparators]
            if any(_makes_tensor(side) for side in sides):
                read |= {side.id for side in sides if isinstance(side, ast.Name) and side.id not in sizes}
    names = []
    for p in _params(node):
        unannotated = p.annotation is None
        if p.arg not in {"self", "cls", "ctx"} and (_annotated_tensor(p) or (unannotated and p.arg in read)):
            names.append(p.arg)
    return names


def _factory_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FACTORIES


def _makes_tensor(node: ast.AST) -> bool:
    return any(_factory_call(n) for n in ast.walk(node))


def _device_param(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    return next((p.arg for p in _params(node) if p.arg in {"device", "dev"}), None)


def _scalar(node: ast.Call) -> bool:
    """torch.tensor(a Python number): a 0-dim tensor, which CUDA operators take from the CPU."""
    if len(node.args) != 1:
        return False
    arg = node.args[0]
    if isinstance(arg, ast.UnaryOp):
        arg = arg.operand
    if isinstance(arg, ast.Constant):
        return isinstance(arg.value, (int, float, bool))
    return ((isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id in {"float", "int", "bool"})
            or (isinstance(arg, ast.Attribute) and arg.attr in {"inf", "nan", "pi", "e"}))


def _device_string(node: ast.AST) -> str | None:
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, str) and value.split(":")[0] in {"cpu", "cuda"}:
        return value
    return None


class _Reader(ast.NodeVisitor):
    def __init__(self, cell: str, origin: dict[str, str]) -> None:
        self.cell = cell
        self.origin = origin
        self.notes: list[DeviceNote] = []
        self.inputs: list[str] = []  # tensor parameters of the function read
        self.devices: list[str] = []  # and its `device` parameter
        self.parents: dict[int, ast.AST] = {}
        self.module_init = False  # in the __init__ of an nn.Module subclass

    def note(self, node: ast.AST, gpu: str) -> None:
        self.notes.append(DeviceNote(self.cell, getattr(node, "lineno", 0), _short(node), gpu))

    def visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            self.parents[id(child)] = node
        super().visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        module = any(ast.unparse(b) in MODULE_BASES or dotted(b, self.origin) == "torch.nn.Module"
                     for b in node.bases)
        for item in node.body:
            self.parents[id(item)] = node
            if module and isinstance(item, ast.FunctionDef) and item.name == "__init__":
                self.module_init = True
                self.visit(item)
                self.module_init = False
            else:
                self.visit(item)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A function is read with its own parameters: a helper nested in one that takes a tensor (grid(w, h) in
        train_checkerboard(..., device)) makes what its caller may move."""
        outer = self.inputs, self.devices, self.module_init
        device = _device_param(node)
        self.inputs, self.devices = _tensor_params(node), [device] if device else []
        self.module_init = self.module_init and node.name == "__init__"
        self.generic_visit(node)
        self.inputs, self.devices, self.module_init = outer

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def _fix(self) -> str:
        if self.devices:
            return f"device={self.devices[-1]}"
        return f"device={self.inputs[-1]}.device" if self.inputs else "device=x.device"

    def _moved(self, node: ast.Call) -> bool:
        """The call's result moved at once: torch.arange(n).to(x.device), kept by Parameter(...) or
        register_buffer(...) (which Module.to moves), or made like another tensor."""
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr in {"to", "type_as"}:
            return True
        if isinstance(parent, ast.Call) and node in parent.args:
            name = parent.func.attr if isinstance(parent.func, ast.Attribute) else getattr(parent.func, "id", "")
            return name in KEPT
        return False

    def visit_Call(self, node: ast.Call) -> None:
        name = dotted(node.func, self.origin) or ""
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        for value in [*node.args, *keywords.values()]:
            where = _device_string(value)
            moved = isinstance(node.func, ast.Attribute) and node.func.attr == "to" and value in node.args
            if where and (moved or value is keywords.get("device")):
                self.note(node, f"names the device \"{where}\" where the inputs' is wanted: on a GPU grading "
                                f"{GPU_RAISES}, and without a GPU \"cuda\" raises. Use {self._fix()}.")
        if isinstance(node.func, ast.Attribute) and node.func.attr == "cuda" and not node.args and self._in_code():
            self.note(node, f".cuda() is hard-coded: without a GPU it raises, and with inputs on another device "
                            f"{GPU_RAISES}. Use .to({self._fix().removeprefix('device=')}).")
        if isinstance(node.func, ast.Attribute) and node.func.attr == "numpy" and self._in_code() \
                and not self._on_host(node.func.value):
            self.note(node, "numpy() reads CPU memory only: on a GPU grading the inputs are on the GPU and it raises "
                            "\"can't convert cuda:0 device type tensor to numpy\". Keep the work in torch "
                            "operations, on the inputs' device.")
        if name.startswith("torch.") and name.split(".", 1)[1] in FACTORIES and "device" not in keywords:
            self._factory(node, name)
        self.generic_visit(node)

    def _in_code(self) -> bool:
        return bool(self.inputs or self.devices or self.module_init)

    def _on_host(self, node: ast.AST) -> bool:
        """x.cpu(), x.detach().cpu(), x.to("cpu"): already copied to the host (numpy of that is fine)."""
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            node.func.attr == "cpu" or (node.func.attr == "to" and any(_device_string(a) == "cpu" for a in node.args)))

    def _factory(self, node: ast.Call, name: str) -> None:
        if self._moved(node) or (name == "torch.tensor" and _scalar(node)) or name == "torch.from_numpy":
            return
        if self.module_init and not self.inputs:
            parent = self.parents.get(id(node))
            if isinstance(parent, ast.Assign) and any(isinstance(t, ast.Attribute) for t in parent.targets):
                self.note(node, "a plain tensor attribute of a Module stays on the CPU when .to(device) moves the "
                                f"Module, and on a GPU grading {GPU_RAISES}. Register it: "
                                "self.register_buffer(name, tensor), or nn.Parameter.")
            return
        if self.inputs or self.devices:
            self.note(node, f"makes its tensor on the CPU; on a GPU grading {GPU_RAISES}. "
                            f"Pass {self._fix()} (or make it with a *_like function).")


@functools.lru_cache(maxsize=64)
def _read(sources: tuple[tuple[str, str], ...], preamble: str) -> tuple[DeviceNote, ...]:
    trees, _ = parse_cells(sources)  # a cell that does not parse, or nests too deep, is reported elsewhere
    try:
        extra: list[ast.AST] = [ast.parse(preamble)]
    except SyntaxError:
        extra = []
    origin = aliases(walk([*trees.values(), *extra]))
    notes: list[DeviceNote] = []
    for cell, tree in trees.items():
        reader = _Reader(cell, origin)
        reader.visit(tree)
        notes += reader.notes
    seen: dict[tuple[str, int, str], DeviceNote] = {}
    for n in notes:  # one note per line and call
        seen.setdefault((n.cell, n.line, n.code), n)
    return tuple(seen.values())


def read_cells(cells: list[dict[str, str]], preamble: str = "") -> list[DeviceNote]:
    """The lines of the answer cells that would mix devices on a GPU grading, in cell and line order."""
    return list(_read(tuple((c["id"], c["source"]) for c in cells), preamble))


def read_submission(submission: Submission) -> list[DeviceNote]:
    return read_cells(submission.cells, submission.chapter.preamble)


def note(found: list[DeviceNote]) -> str:
    """The note above the checks of a CPU-only grading (the first MAX_NOTES lines)."""
    more = len(found) - MAX_NOTES
    lines = "\n".join(f"  {n}" for n in found[:MAX_NOTES]) + (f"\n  ... and {more} more" if more > 0 else "")
    return ("Device note (no points: this grading ran on a CPU only, so these lines were read, not run on a GPU). "
            "A course may grade on a GPU, with the inputs already there; these lines would fail then:\n" + lines)

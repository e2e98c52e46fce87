"""Every point earned honestly: code that reaches into the grader earns nothing from what was observed
inside its own process, and every report says so.

The issue's two attacks. A loop batch_gather computed its answers during the untimed request that made
the timed inputs, and switched off the dispatch mode that counts its operations: on the code before the
fix it earned the op-count and the speed checks (+7). A float32 amp_train_step rewrote the harness's
autocast and backward records through the caller's frame: it earned the autocast and the scaled-backward
checks (+4). Now the timed inputs are made inside the timed request, the judge decides both with its own clock
and replays, and autograder/judging/static/review.py (the judge's own read of the cells) flags the reaching lines for
review without costing a point.
"""

from __future__ import annotations

import glob
from pathlib import Path

import pytest

from autograder.course.nbgrader.gradebook import feedback_html
from autograder.judging.notebook import load_submission
from autograder.judging.registry import CHAPTERS
from autograder.judging.report import gradescope, text
from autograder.judging.static.review import scan_cells, scan_submission
from benchmarks.timing_stability import FORMS
from tests.kit import ROOT, by_name, grade_fast, solution_cells, solved

GATHER_ATTACK = '''
import sys
from torch.utils._python_dispatch import _disable_current_modes


def _loop(tensor, indices):
    return torch.stack([tensor[i][indices[i]] for i in range(tensor.size(0))])


_answers = {}
_child = sys.modules["autograder.sandbox.runtime.child"].Child
_prepare = getattr(_child, "prepare", None)  # the untimed request that made the inputs, before the fix


def _precompute(self, req):
    reply = _prepare(self, req)
    for args in self.prepared:
        _answers[args[0].data_ptr()] = _loop(*args)
    return reply


if _prepare is not None:
    _child.prepare = _precompute


def batch_gather(tensor, indices):
    answer = _answers.pop(tensor.data_ptr(), None)
    if answer is not None:
        return answer
    with _disable_current_modes():
        return _loop(tensor, indices)
'''

AMP_ATTACK = '''
import sys


def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                   max_grad_norm=None):
    loss = loss_fn(model(inputs), targets)  # float32: no autocast, no scaler
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    optimizer.zero_grad()
    low = str(dtype).removeprefix("torch.")
    seen = sys._getframe(1).f_locals  # the harness's observe_step: its records
    for record in seen.get("forward", []):
        record.update(dtype=low, autocast=True)
    for record in seen.get("loss_calls") or getattr(loss_fn, "calls", []):
        record.update(autocast=True)
    for record in seen.get("loss_backward") or getattr(loss_fn, "backward", []):
        record.update(grad=scaler.get_scale(), autocast=False)
    return loss.item()
'''


def test_the_loop_that_precomputed_and_hid_its_operations_earns_nothing(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, "05_batch_gather", batch_gather=GATHER_ATTACK), only="vectorized or speed")
    assert g.score == 0 and g.max_score == 7, [(r.name, r.output) for r in g.results]  # +7 before the fix
    # The judge's clock sees the loop, whatever it hid from the operation trace.
    assert "took more than 8x the time" in by_name(g)["check_batch_gather_speed"].output
    assert any("torch.utils._python_dispatch" in flag for flag in g.integrity), g.integrity


def test_the_float32_step_that_rewrote_the_harness_records_earns_nothing(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, "08_mixed_precision", amp_train_step=AMP_ATTACK),
                   only="forward_under_autocast or backward_scaled or update_matches")
    checks = by_name(g)
    # +4 before; now the judge replays the step (chapter 08's checks), so the rewritten records earn nothing.
    for name, mistake in (("check_amp_forward_under_autocast", "float32"),
                          ("check_amp_backward_scaled_outside_autocast", "the loss was not scaled")):
        assert checks[name].status == "failed" and mistake in checks[name].output, checks[name].output
    assert checks["check_amp_update_matches_sgd"].status == "passed"  # checks of outcomes still count
    # Every report says so plainly: results.json, the text summary and the feedback page.
    result = gradescope(g)
    assert result["extra_data"]["integrity"] == g.integrity and g.integrity
    assert "Review:" in result["output"] and "costs no points" in result["output"]
    assert "Review:" in text(g)
    assert "costs no points" in feedback_html(result)


def test_a_flagged_submission_keeps_its_honestly_verified_points(tmp_path: Path) -> None:
    code = "import gc\n" + solution_cells("05_batch_gather")["batch_gather"]
    g = grade_fast(solved(tmp_path, "05_batch_gather", batch_gather=code), only="device or notebook_example")
    assert g.score == g.max_score, [(r.name, r.output) for r in g.results if r.status != "passed"]  # no deduction
    assert g.integrity and "cell 'batch_gather', line 1: import gc" in g.integrity[0]


DEPRECATED_QUIET = '''
import warnings


def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                   max_grad_norm=None):
    warnings.simplefilter("ignore")  # hides torch's deprecation warning from the harness
    with torch.cuda.amp.autocast(enabled=False):
        loss = loss_fn(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return loss.item()
'''


def test_the_deprecated_api_is_read_from_the_code_not_only_from_warnings(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, "08_mixed_precision", amp_train_step=DEPRECATED_QUIET), only="current_api")
    out = by_name(g)["check_amp_uses_current_api"].output
    assert "torch.cuda.amp in cell 'amp_train_step', line 8" in out, out


# -- the scanner on its own: no ordinary code flagged, every reach flagged ------------------

ORDINARY = {
    "layers by name": '''
class MLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self._count = len(sizes) - 1
        for i in range(self._count):
            setattr(self, f"layer{i}", nn.Linear(sizes[i], sizes[i + 1]))

    def forward(self, x):
        for i in range(self._count):
            x = getattr(self, f"layer{i}")(x)
        return x
''',
    "amp with settings and a named tuple": '''
from collections import namedtuple
import functools
import warnings

Step = namedtuple("Step", "loss scale")
torch.backends.cudnn.benchmark = True


def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                   max_grad_norm=None):
    """Uses the autograder's favourite API: torch.amp."""
    warnings.filterwarnings("ignore", category=UserWarning)
    with torch.amp.autocast(device_type, dtype=dtype):
        loss = functools.partial(loss_fn)(model(inputs), targets)
    scaler.scale(loss).backward()
    if max_grad_norm is not None and hasattr(model, "parameters"):
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    step = Step(loss.item(), scaler.get_scale())._replace(scale=0.0)
    print(f"loss {step.loss:.3f} of type {type(step).__name__}; the autograder checks this.")
    return step.loss
''',
    "numpy and errors": '''
import numpy as np
import os


def row_sum(x):
    if x.dim() != 2:
        raise ValueError(f"expected [N, D], got {tuple(x.shape)} ({x.__class__.__name__})")
    dtype = getattr(torch, "float64") if x.dtype == torch.float64 else x.dtype
    return torch.from_numpy(np.asarray(x.detach().numpy().sum(0))).to(dtype) if os.environ.get("NP") else x.sum(0)
''',
}


def _honest_sources() -> dict[str, tuple[list[dict[str, str]], str]]:
    """Every reference solution, example submission and release, the benchmark's forms and ORDINARY."""
    found: dict[str, tuple[list[dict[str, str]], str]] = {}
    for path in sorted(glob.glob(str(ROOT / "source/*/*.ipynb")) + glob.glob(str(ROOT / "examples/**/*.ipynb"),
                                                                             recursive=True)
                       + glob.glob(str(ROOT / "release/*/*.ipynb"))):
        sub = load_submission(Path(path))
        found[path] = (sub.cells, sub.chapter.preamble)
    for chapter, cells in FORMS.items():
        preamble = CHAPTERS[chapter].preamble
        for cell, forms in cells.items():
            for form, (_, code) in forms.items():
                found[f"{chapter} {form}"] = ([{"id": cell, "source": code}], preamble)
    for name, code in ORDINARY.items():
        found[name] = ([{"id": "cell", "source": code}], "import torch\nimport torch.nn as nn\n")
    return found


def test_no_ordinary_code_is_flagged() -> None:
    sources = _honest_sources()
    assert len(sources) > 40
    flagged = {name: [str(f) for f in scan_cells(cells, preamble)] for name, (cells, preamble) in sources.items()}
    assert not any(flagged.values()), {k: v for k, v in flagged.items() if v}


GETTER = "class K:\n    def get(self, name):\n        return getattr(self, name)\n\n\n"
REACHES = {
    "frames": "f = sys._getframe(1)",
    "frame locals": "import inspect\nx = inspect.currentframe().f_back.f_locals",
    "garbage collector": "import gc\nobjs = gc.get_objects()",
    "ctypes": "import ctypes",
    "module table": "c = sys.modules['autograder.sandbox.runtime.child']",
    "module table through os": "import os\nc = os.sys.modules",
    "from sys import": "from sys import modules",
    "dispatch switch": "from torch.utils._python_dispatch import _disable_current_modes",
    "private torch": "g = torch._C._DisableTorchDispatch()",
    # getattr on `self` is read as the student's own object: not where `self` is any argument
    "self as a plain function's argument": "def get(self, name):\n    return getattr(self, name)\n\n\n"
                                           "f = get(sys, input())",
    "cls rebound": "cls = sys\nf = getattr(cls, input())",
    "a method taken from its class": GETTER + "f = K.get(sys, input())",
    "a method taken by getattr": GETTER + "f = getattr(K, 'get')(sys, input())",
    "a method from its class's namespace": GETTER + "f = vars(K)['get'](sys, input())",
    "a bound method's function": GETTER + "f = K().get.__func__(sys, input())",
    "a class name bound again by a match": "class K:\n    pass\n\n\nmatch sys:\n    case K:\n        pass\n"
                                           "f = getattr(K, input())",
    "a parameter named like a class": "class K:\n    pass\n\n\ndef f(K):\n    return getattr(K, input())\n\n\n"
                                      "x = f(sys)",
    "self bound by except": "class K:\n    def m(self):\n        try:\n            raise ValueError()\n"
                            "        except ValueError as self:\n            return getattr(self, input())",
    # delegation stays flagged: a wrapper of sys reads sys.modules through an attribute that names no internal
    "delegation to a module": "class W:\n    def __init__(self, target):\n        self.target = target\n\n"
                              "    def __getattr__(self, name):\n        return getattr(self.target, name)\n\n\n"
                              "m = W(sys).modules",
    "delegation reached by a computed name": "class W:\n    def __init__(self, target):\n        self.target = target\n"
                                             "\n    def __getattr__(self, name):\n"
                                             "        return getattr(self.target, name)\n"
                                             "\n\nf = getattr(W(sys), input())",
    "a dataclass field named like an internal": "import dataclasses\n\n\n@dataclasses.dataclass\nclass D:\n"
                                                "    _getframe: int = 0\n\n\n"
                                                "f = [getattr(sys, x.name) for x in dataclasses.fields(D)]",
    "__main__ compared with another name": "x = 1 if sys.argv[0] == '__main__' else 0",
    "private torch named like the cell's own attributes": "class X:\n    _C = None\n    _nn = None\n\n\n"
                                                          "f = torch._C._nn",
    "getattr constant": "f = getattr(sys, '_getframe')",
    "getattr concatenated": "f = getattr(sys, '_get' + 'frame')",
    "getattr joined": "f = getattr(sys, ''.join(['_get', 'frame']))",
    "getattr computed": "name = input()\nf = getattr(sys, name)",
    "getattr passed around": "look = getattr\nf = look(sys, 'x')",
    "attrgetter": "import operator\nf = operator.attrgetter('__globals__')",
    "closure cells": "c = loss_fn.__closure__[0].cell_contents",
    "function globals": "g = amp_train_step.__globals__",
    "match on a closure": "match loss_fn:\n    case object(__closure__=cells):\n        pass",
    "patched builtin": "import builtins\nbuiltins.isinstance = lambda *a: True",
    "builtins dict": "__builtins__['isinstance'] = lambda *a: True",
    "patched torch": "torch.is_autocast_enabled = lambda *a: True",
    "patched torch by setattr": "setattr(torch, 'is_autocast_enabled', lambda *a: True)",
    "patched torch by alias": "t = torch\nt.is_autocast_enabled = lambda *a: True",
    "patched class": "nn.Module.__call__ = lambda self, *a: None",
    "patched class of an object": "def f(model):\n    type(model).forward = lambda self, x: x",
    "patched warnings": "import warnings\nwarnings.showwarning = lambda *a, **k: None",
    "exec": "exec('x = 1')",
    "eval": "y = eval('1 + 1')",
    "compile": "code = compile('x', 'f', 'eval')",
    "__import__": "s = __import__('sys')",
    "importlib": "import importlib\ns = importlib.import_module('sys')",
    "vars": "vars(torch)['x'] = 1",
    "globals": "g = globals()",
    "module dict": "d = torch.__dict__",
    "hooks": "def f(model):\n    model._forward_hooks.clear()",
    "private autograd class": "def f(loss):\n    return loss.grad_fn._forward_cls",
    "traceback frames": "try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame",
    "exc_info": "t = sys.exc_info()",
    "generator frame": "g = (x for x in []).gi_frame",
    "dispatch hook": "class T(torch.Tensor):\n    @classmethod\n"
                     "    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n        return func(*args)",
    "custom operator": "op = torch.library.custom_op('mylib::f', mutates_args=())",
    "custom operator import": "from torch import library",
    "format string": "s = '{0.__globals__}'.format(f)",
    "pickle": "import pickle",
    "settrace": "import threading\nthreading.settrace(print)",
    "subclasses": "subs = object.__subclasses__()",
    "grader module": "import autograder",
    "harness name": "kit.observe_step",
    "harness string": "name = 'kit.observe_step'",
}


@pytest.mark.parametrize("reach", REACHES)
def test_every_reach_into_the_grader_is_flagged_with_its_line(reach: str) -> None:
    code = "import sys\n\n" + REACHES[reach]
    flags = scan_cells([{"id": "cell", "source": code}], "import torch\nimport torch.nn as nn\n")
    assert flags, f"{reach} was not flagged"
    lines = len(code.splitlines())
    assert all(3 <= f.line <= lines and f.cell == "cell" and f.why for f in flags), [str(f) for f in flags]


def test_the_scan_of_a_notebook_is_the_scan_of_its_answer_cells(tmp_path: Path) -> None:
    sub = load_submission(solved(tmp_path, "05_batch_gather", batch_gather=GATHER_ATTACK))
    lines = [(f.line, f.construct) for f in scan_submission(sub)]
    assert (3, "from torch.utils._python_dispatch import _disable_current...") in lines, lines
    assert (11, "sys.modules") in lines, lines

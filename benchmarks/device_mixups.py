"""Which mechanism catches the device mix-ups the first GPU run found, each put back one at a time, without a GPU.

The first GPU run (H200, 2026-11-26, commit 36a871d) failed on tensors the kit's own code made on the CPU while the
inputs were on the GPU. That commit fixed them on the CPU side; this script reads its diff (the cases whose code
changed, line by line; 03's one_hot solution; 08's scaler_run harness), puts each old line back in today's code,
and asks every mechanism whether it sees it, and whether it stays quiet on today's (fixed) line:

- static: the judge's reading of the code (autograder/judging/static/devices.py), as a CPU grading notes it;
- fakegpu: the form graded on tests/devices/fakegpu.py's second device, as tests/devices/test_fake_gpu.py grades it
  (a wrong form must still fail its checks with its phrase, a correct one keep its points, a solution all of them,
  and no result may come back on the CPU);
- call: the task's function called once on fakegpu inputs (no grading);
- fake: the same call under FakeTensorMode with "cuda" inputs (torch's fake tensors: no data);
- meta: the same call with inputs on the meta device (no data).

    PYTHONPATH=. .venv/bin/python benchmarks/device_mixups.py [--only static,call,fake,meta]

Prints one row per mix-up: for each mechanism, "caught" (the old line flagged, today's not), "missed", "false"
(today's line flagged too) or "n/a" (the mechanism cannot run that code: no data, or a harness).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from autograder import CHECKOUT
from autograder.course import selftest
from autograder.course.cases import CorrectForm, Mutant, load
from autograder.judging.judge import GradeOptions
from autograder.judging.registry import CHAPTERS
from autograder.judging.static.devices import read_cells
from tests.devices import fakegpu
from tests.kit import solution_cells

FIXED = "36a871d"  # the commit that fixed them on the CPU side
CASE_FILES = ["01_basics", "03_broadcasting", "04_overloaded_ops", "05_batch_gather"]


@dataclasses.dataclass
class MixUp:
    chapter: str
    where: str  # "wrong: <case>", "right: <case>", "solution: <cell>", "harness"
    old: str
    new: str
    task: str  # the function a direct call runs

    @property
    def id(self) -> str:
        return f"{self.chapter} {self.where}: {self.old.strip()[:60]}"


def _show(rev: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(CHECKOUT), "show", f"{rev}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def _case_sources(text: str) -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.decorator_list:
            d = node.decorator_list[0]
            if (isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.args
                    and isinstance(d.args[0], ast.Constant)):
                found[(d.func.id, str(d.args[0].value))] = ast.get_source_segment(text, node) or ""
    return found


def _task(source: str) -> str:
    inner = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)]
    return inner[1].name if len(inner) > 1 else inner[0].name


def mixups() -> list[MixUp]:
    found = []
    for chapter in CASE_FILES:
        path = f"autograder/chapters/{CHAPTERS[chapter].folder.name}/cases.py"
        before, after = _case_sources(_show(f"{FIXED}^", path)), _case_sources(_show(FIXED, path))
        for (kind, name), new in after.items():
            old = before.get((kind, name))
            if old is None or old == new:
                continue
            for a, b in zip(old.splitlines(), new.splitlines(), strict=True):
                if a != b:
                    found.append(MixUp(chapter, f"{kind}: {name}", a, b, _task(new)))
    found.append(MixUp("03_broadcasting", "solution: one_hot", "    return idx[:, None] == torch.arange(c)",
                       "    return idx[:, None] == torch.arange(c, device=idx.device)", "one_hot"))
    found.append(MixUp("08_mixed_precision", "harness", '    inputs, targets = case["inputs"], case["targets"]',
                       '    inputs, targets = case["inputs"].cpu(), case["targets"].cpu()', "scaler_run"))
    return found


# -- the code of one mix-up, old or new, in today's kit --------------------------------------------------------------


def _replace_in_case(text: str, case: tuple[str, str], line: str, by: str) -> str:
    source = _case_sources(text)[case]
    if line not in source:
        raise LookupError(f"{case}: {line.strip()!r} is not in today's code")
    return text.replace(source, source.replace(line, by, 1), 1)


def form(m: MixUp, old: bool) -> tuple[Mutant | CorrectForm | None, dict[str, str], Path | None]:
    """(the case as declared, the answer cells graded, a harness file) with the old or today's line."""
    ch = CHAPTERS[m.chapter]
    cells = solution_cells(m.chapter)
    if m.where == "harness":
        text = ch.harness_source() if ch.harness else ""
        path = Path(tempfile.mkdtemp()) / "harness.py"
        path.write_text(text.replace(m.new, m.old, 1) if old else text)
        return None, cells, path
    if m.where.startswith("solution: "):
        cell = m.where.removeprefix("solution: ")
        return None, {**cells, cell: cells[cell].replace(m.new, m.old, 1) if old else cells[cell]}, None
    kind, name = m.where.split(": ", 1)
    text = (ch.folder / "cases.py").read_text()
    if old:
        text = _replace_in_case(text, (kind, name), m.new, m.old)
    path = Path(tempfile.mkdtemp()) / "cases.py"
    path.write_text(text)
    declared = load(ch, path)
    forms: list[Mutant | CorrectForm] = [*declared.wrong, *declared.right]
    case = next(c for c in forms if c.name == name)
    return case, {**cells, **case.cells}, None


# -- the mechanisms: True when they flag the code ----------------------------------------------------------------------


def static(m: MixUp, old: bool) -> bool | None:
    case, cells, harness = form(m, old)
    if harness is not None:
        return bool(read_cells([{"id": "harness", "source": harness.read_text()}], CHAPTERS[m.chapter].preamble))
    wanted = case.cells if case is not None else {m.where.removeprefix("solution: "): ""}
    return bool(read_cells([{"id": k, "source": v} for k, v in cells.items() if k in wanted],
                           CHAPTERS[m.chapter].preamble))


def graded(m: MixUp, old: bool) -> bool | None:
    case, cells, harness = form(m, old)
    registry = dict(CHAPTERS)
    if harness is not None:
        registry[m.chapter] = dataclasses.replace(CHAPTERS[m.chapter], harness=harness)
    strays: list[str] = []
    outputs: list[str] = []

    def grader(notebook: Path, device: str, only: str | None) -> Any:
        options = GradeOptions("cpu", selftest.SEED, fakegpu.LIMITS, only=fakegpu.selection(only))
        g, findings = fakegpu.grade_on_fake_gpu(notebook, options, registry)
        strays.extend(s for s in findings.strays if not s.startswith(tuple(fakegpu.ON_THE_CPU)))
        outputs.extend(r.output for r in g.results)
        return g

    if isinstance(case, Mutant):  # its declared failures, but those the emulation leaves out (then: every check,
        # and none may fail on a device error)
        fails = {k: v for k, v in case.fails.items() if k not in fakegpu.LEFT_OUT}
        row = selftest.mutant_row(dataclasses.replace(case, cells=cells, fails=fails), "cpu", grader)
        mixed = not fails and any(p in text for text in outputs for p in DEVICE_ERRORS)
        return not row.ok or bool(strays) or mixed
    only = case.only if isinstance(case, CorrectForm) else ("loss_scaler" if harness is not None else None)
    g = selftest._graded(grader, m.chapter, cells, "cpu", only)
    return isinstance(g, str) or any(r.status == "failed" for r in g.results) or bool(strays)


def _inputs(task: str, make: Callable[[torch.Tensor], torch.Tensor]) -> tuple[Any, ...]:
    g = torch.Generator().manual_seed(0)
    if task == "fit_polynomial":
        x = torch.randn(16, generator=g)
        return make(x), make(3 * x**2 + 1), 2, 5, 0.1
    if task == "additive_scores":
        return (make(torch.randn(2, 3, 5, generator=g)), make(torch.randn(2, 4, 5, generator=g)),
                make(torch.tensor([2, 4])), make(torch.randn(6, 5, generator=g)),
                make(torch.randn(6, 5, generator=g)), make(torch.randn(6, generator=g)))
    if task == "one_hot":
        return make(torch.tensor([0, 3, 1, 4])), 5
    if task in ("column_means", "causal_mask"):
        return (make(torch.randn(4, 3, generator=g)),)
    if task == "batch_gather":
        return make(torch.randn(2, 5, 3, generator=g)), make(torch.randint(0, 5, (2, 4), generator=g))
    raise LookupError(task)


def _called(m: MixUp, old: bool, run: Callable[[Callable[..., Any], str], bool | None]) -> bool | None:
    """None when the code cannot run so (a harness; the mechanism's own limits). In a forked process, as every
    run of the cells: what they change in torch stays there."""
    _, cells, harness = form(m, old)
    if harness is not None:
        return None

    def call() -> bool | None:
        namespace: dict[str, Any] = {}
        exec(CHAPTERS[m.chapter].preamble, namespace)
        for source in cells.values():
            exec(source, namespace)
        return run(namespace[m.task], m.task)

    return _in_child(call)


DEVICE_ERRORS = ("same device", "expected device", "device type tensor to numpy")


def _verdict(call: Callable[[], Any], on_device: Callable[[torch.Tensor], bool]) -> bool | None:
    """True: a device error, or a result off the inputs' device; None: another error (the mechanism cannot run
    that code)."""
    try:
        out = call()
    except Exception as e:  # what the mechanism says, whatever it raises
        return True if any(p in str(e) for p in DEVICE_ERRORS) else None
    return isinstance(out, torch.Tensor) and not on_device(out)


def on_fakegpu(m: MixUp, old: bool) -> bool | None:
    def run(fn: Callable[..., Any], task: str) -> bool | None:
        with fakegpu.on_fake_gpu():
            args = _inputs(task, lambda t: t.to(fakegpu.NAME))
            return _verdict(lambda: fn(*args), lambda t: isinstance(t, fakegpu.OnGpu))
    return _called(m, old, run)


def _in_child(call: Callable[[], bool | None]) -> bool | None:
    """call() in a forked process; one that dies says n/a (fake CUDA tensors abort the process where autograd or
    a matmul needs CUDA's device guard: "PyTorch is not linked with support for cuda devices")."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.write(write, {True: b"1", False: b"0", None: b"-"}[call()])
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    return {b"1": True, b"0": False}.get(answer)


def fake_tensors(m: MixUp, old: bool) -> bool | None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    def run(fn: Callable[..., Any], task: str) -> bool | None:
        with FakeTensorMode(allow_non_fake_inputs=True):
            # .to("cuda") needs CUDA's device guard, which the CPU build lacks: made there, values unknown
            args = _inputs(task, lambda t: torch.empty(t.shape, dtype=t.dtype, device="cuda"))
            return _verdict(lambda: fn(*args), lambda t: t.device.type == "cuda")
    return _called(m, old, run)


def meta(m: MixUp, old: bool) -> bool | None:
    def run(fn: Callable[..., Any], task: str) -> bool | None:
        args = _inputs(task, lambda t: t.to("meta"))
        return _verdict(lambda: fn(*args), lambda t: t.device.type == "meta")
    return _called(m, old, run)


MECHANISMS: dict[str, Callable[[MixUp, bool], bool | None]] = {
    "static": static, "fakegpu": graded, "call": on_fakegpu, "fake": fake_tensors, "meta": meta}


def verdict(flags_old: bool | None, flags_new: bool | None) -> str:
    if flags_old is None or flags_new is None:
        return "n/a"
    if flags_new:
        return "false"
    return "caught" if flags_old else "missed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(MECHANISMS), help="mechanisms, comma-separated")
    chosen = parser.parse_args().only.split(",")
    torch.set_num_threads(1)
    found = mixups()
    totals: dict[str, dict[str, int]] = {name: {} for name in chosen}
    seconds: dict[str, float] = dict.fromkeys(chosen, 0.0)
    print(f"{len(found)} mix-ups fixed by {FIXED}, put back one at a time\n")
    print(" | ".join(["mix-up", *chosen]))
    for m in found:
        row = []
        for name in chosen:
            started = time.perf_counter()
            v = verdict(MECHANISMS[name](m, True), MECHANISMS[name](m, False))
            seconds[name] += time.perf_counter() - started
            totals[name][v] = totals[name].get(v, 0) + 1
            row.append(v)
        print(" | ".join([m.id, *row]), flush=True)
    print()
    for name in chosen:
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(totals[name].items()))
              + f"  ({seconds[name]:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

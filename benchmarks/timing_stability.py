"""Do the clock's checks hold on a noisy machine, for every correct form? N gradings of each form in FORMS
(several correct vectorized forms, and loops in torch, numpy and plain Python), each grading with a fresh secret
seed and only its cell's timed checks (CHECKS), beside a process spinning on one core.

    .venv/bin/python benchmarks/timing_stability.py --chapter 04_overloaded_ops --runs 50
    .venv/bin/python benchmarks/timing_stability.py --chapter 05_batch_gather --runs 50
    .venv/bin/python benchmarks/timing_stability.py --chapter 05_batch_gather --transfer

Every grading of a vectorized form must pass every timed check of its cell, and every grading of a loop fail
them. It prints the pass count of each form on each check, with the measured ratios (the form's time over the
reference's). --transfer measures instead what share of the reference's time per call, in each timed check of
the chapter, is sending its outputs back whole to the judge (the rest is making the inputs and the call).
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from autograder.chapters.ch04_overloaded_ops import checks as ch04
from autograder.chapters.ch05_batch_gather import checks as ch05
from autograder.course.cases import correct_forms, mutant
from autograder.course.reference import source_path
from autograder.judging.judge import GradeOptions, grade
from autograder.judging.notebook import load_submission
from autograder.judging.student import Student
from autograder.judging.timing import input_sets, reference_process
from autograder.sandbox.limits import Limits
from tests.kit import solution_cells, write_submission, zygote

# chapter -> answer cell -> form name -> (vectorized?, code); "solution" is the source notebook's.
FORMS: dict[str, dict[str, dict[str, tuple[bool, str]]]] = {
    "04_overloaded_ops": {
        "row_sum": {
            "solution x.sum(dim=0)": (True, ""),
            "torch.einsum": (True, 'def row_sum(x):\n    return torch.einsum("nd->d", x)\n'),
            "ones @ x": (True, "def row_sum(x):\n    return x.new_ones(x.shape[0]) @ x\n"),
            "x.T.sum(-1)": (True, "def row_sum(x):\n    return x.T.sum(-1)\n"),
            "slicing loop": (False, "def row_sum(x):\n    z = torch.zeros_like(x[0])\n    for i in range(x.shape[0]):\n"
                                    "        z = z + x[i]\n    return z\n"),
            "builtin sum over rows": (False, "def row_sum(x):\n    return sum(x)\n"),
            "loop over 4-row chunks": (False, "def row_sum(x):\n    return sum(c.sum(0) for c in torch.split(x, 4))\n"),
            "column loop": (False, mutant("04_overloaded_ops", "column loop").cells["row_sum"]),
            "numpy row loop": (False, mutant("04_overloaded_ops", "numpy row loop").cells["row_sum"]),
            "python numbers loop": (False, mutant("04_overloaded_ops", "python numbers loop").cells["row_sum"]),
        },
        "pairwise_sq_distances": {
            "solution expansion": (True, ""),
            "broadcast difference": (True, """
def pairwise_sq_distances(x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
"""),
            "einsum expansion": (True, """
def pairwise_sq_distances(x, y):
    sq = torch.einsum("nd,nd->n", x, x)[:, None] + torch.einsum("md,md->m", y, y) - 2 * torch.einsum("nd,md->nm", x, y)
    return sq.clamp_min(0)
"""),
            "loop over x": (False, mutant("04_overloaded_ops", "distance loop").cells["pairwise_sq_distances"]),
            "loop over y": (False, mutant("04_overloaded_ops", "distance loop over y").cells["pairwise_sq_distances"]),
            "numpy rows": (False, mutant("04_overloaded_ops", "distance rows in numpy").cells["pairwise_sq_distances"]),
        },
    },
    "05_batch_gather": {
        "batch_gather": {
            "solution flat offsets": (True, ""),
            "advanced indexing": (True, '''
def batch_gather(tensor, indices):
    rows = torch.arange(tensor.shape[0], device=indices.device).reshape([-1] + [1] * (indices.dim() - 1))
    return tensor[rows, indices]
'''),
            "torch.gather": (True, '''
def batch_gather(tensor, indices):
    b, rest = tensor.shape[0], tensor.shape[2:]
    idx = indices.long().reshape(b, -1, *[1] * len(rest)).expand(b, -1, *rest)
    return torch.gather(tensor, 1, idx).reshape(*indices.shape, *rest)
'''),
            "take_along_dim": (True, '''
def batch_gather(tensor, indices):
    b, rest = tensor.shape[0], tensor.shape[2:]
    idx = indices.long().reshape(b, -1, *[1] * len(rest)).expand(b, -1, *rest)
    return torch.take_along_dim(tensor, idx, dim=1).reshape(*indices.shape, *rest)
'''),
            "flat index_select": (True, '''
def batch_gather(tensor, indices):
    b, n, rest = tensor.shape[0], tensor.shape[1], tensor.shape[2:]
    offsets = (torch.arange(b, device=indices.device) * n).reshape([-1] + [1] * (indices.dim() - 1))
    flat = (indices + offsets).reshape(-1)
    return tensor.reshape(b * n, *rest).index_select(0, flat).reshape(*indices.shape, *rest)
'''),
            "one-hot bmm": (True, '''
def batch_gather(tensor, indices):
    b, n, rest = tensor.shape[0], tensor.shape[1], tensor.shape[2:]
    onehot = torch.nn.functional.one_hot(indices.long(), n).to(tensor.dtype).reshape(b, -1, n)
    return torch.bmm(onehot, tensor.reshape(b, n, -1)).reshape(*indices.shape, *rest)
'''),
            "torch.vmap": (True, '''
def batch_gather(tensor, indices):
    return torch.vmap(lambda t, i: t[i])(tensor, indices)
'''),
            "guide's loop": (False, '''
def batch_gather(tensor, indices):
    output = []
    for i in range(tensor.size(0)):
        output += [tensor[i][indices[i]]]
    return torch.stack(output)
'''),
            "zip loop": (False, '''
def batch_gather(tensor, indices):
    return torch.stack([t[i] for t, i in zip(tensor, indices)])
'''),
            "scripted loop": (False, mutant("05_batch_gather", "scripted loop").cells["batch_gather"]),
            "numpy loop": (False, mutant("05_batch_gather", "numpy loop").cells["batch_gather"]),
            "python numbers loop": (False, mutant("05_batch_gather", "python numbers loop").cells["batch_gather"]),
        },
        "batch_scatter_add": {
            "solution index_add": (True, ""),
            **{form.name: (True, form.cells["batch_scatter_add"]) for form in correct_forms("05_batch_gather")
               if "batch_scatter_add" in form.cells},
            "loop over rows": (False, mutant("05_batch_gather", "loop over rows").cells["batch_scatter_add"]),
            "numpy loop over rows": (False, mutant("05_batch_gather", "numpy loop over rows")
                                     .cells["batch_scatter_add"]),
        },
    },
}

# answer cell -> the timed checks that grade it (a pytest -k selection)
CHECKS = {"row_sum": "check_row_sum_speed",
          "pairwise_sq_distances": "check_pairwise_vectorized",
          "batch_gather": "check_batch_gather_speed",
          "batch_scatter_add": "check_scatter_add_vectorized"}

# chapter -> (reference code, [(function, input specs, constants)]): the timed checks' references and inputs.
TIMED: dict[str, tuple[str, list[tuple[str, Any, tuple[int, ...]]]]] = {
    "04_overloaded_ops": (ch04.REFERENCE, [("row_sum_reference", ch04.ROW_SUM_TIMED, ()),
                                           ("pairwise_reference", ch04.PAIRWISE_TIMED, ())]),
    "05_batch_gather": (ch05.REFERENCE, [("gather_reference", ch05.GATHER_TIMED, ()),
                                         ("scatter_reference", ch05.SCATTER_TIMED, (ch05.SCATTER_SLOTS,))]),
}


def transfer(chapter: str, rounds: int = 30, count: int = 20) -> None:
    """For each timed reference of the chapter: its fastest request as the checks time it, the same calls
    answering one number each instead of their outputs, and input making alone (per call)."""
    code, timed = TIMED[chapter]
    wrappers = "".join(f"\ndef {name}_one(*args):\n    return {name}(*args).reshape(-1)[:1].clone()\n"
                       for name, _, _ in timed)
    student = Student(load_submission(source_path(chapter)), "cpu", Limits(), time.monotonic() + 600, zygote())
    try:
        with reference_process(student, code + wrappers) as ref:
            for name, specs, constants in timed:
                sets = input_sets(specs)
                fastest: dict[str | None, float] = {}
                for target in (None, name, f"{name}_one"):
                    for r in range(rounds):
                        with student.control.frozen():
                            started = time.perf_counter()
                            ref.timed_run(target, sets, r, count, constants=constants)
                            seconds = (ref.arrived - started) / count
                        fastest[target] = min(fastest.get(target, seconds), seconds)
                full, one = fastest[name], fastest[f"{name}_one"]
                print(f"  {name}: {full * 1e6:.0f} us per call as the check times it (making its inputs "
                      f"{fastest[None] * 1e6:.0f} us included), {one * 1e6:.0f} us answering one number instead: "
                      f"sending the outputs back is {max(full - one, 0.0) / full:.0%} of it", flush=True)
    finally:
        student.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapter", choices=sorted(FORMS), default="04_overloaded_ops")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-hog", action="store_true", help="leave the machine quiet")
    parser.add_argument("--transfer", action="store_true", help="measure the share of sending outputs back instead")
    args = parser.parse_args()
    torch.set_num_threads(1)
    hog = None if args.no_hog else subprocess.Popen([sys.executable, "-c", "while True: pass"])
    if args.transfer:
        try:
            transfer(args.chapter)
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
        return
    passed: dict[tuple[str, str], int] = {}
    ratios: dict[tuple[str, str], list[float]] = {}
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for run in range(args.runs):
                for cell, forms in FORMS[args.chapter].items():
                    for form, (vectorized, code) in forms.items():
                        cells = {**solution_cells(args.chapter), **({cell: code} if code else {})}
                        path = write_submission(Path(tmp), args.chapter, cells, name="form.ipynb")
                        options = GradeOptions(seed=secrets.randbits(62), only=CHECKS[cell])
                        g = grade(path, options=options, zygote=zygote())
                        for r in g.results:
                            key = (form, r.nodeid.split("::")[-1])
                            passed[key] = passed.get(key, 0) + (r.status == "passed")
                            head = r.output.split("x its time (fastest")
                            if len(head) > 1:
                                ratios.setdefault(key, []).append(float(head[0].rsplit(" ", 1)[-1]))
                            if (r.status == "passed") != vectorized:
                                print(f"  run {run}: {form} {r.status} {key[1]}: {r.output.splitlines()[:2]}",
                                      flush=True)
                print(f"run {run + 1} done, {time.monotonic() - started:.0f} s", flush=True)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    print(f"{args.chapter}: {args.runs} gradings of each form, timed checks of its cell only, "
          f"{'with' if hog else 'without'} a CPU hog, {time.monotonic() - started:.0f} s")
    print(f"  {'form':24s} {'kind':10s} {'check':30s} passed  its time / the reference's (min / median / max)")
    for forms in FORMS[args.chapter].values():
        for form, (vectorized, _) in forms.items():
            for (name, check), count in passed.items():
                if name == form:
                    values = sorted(ratios.get((name, check), []))
                    spread = f"{values[0]:.2g} / {values[len(values) // 2]:.2g} / {values[-1]:.2g}" if values else "-"
                    kind = "vectorized" if vectorized else "loop"
                    print(f"  {form:24s} {kind:10s} {check:30s} {count:3d}/{args.runs:<3d} {spread}")


if __name__ == "__main__":
    main()

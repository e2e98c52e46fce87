"""Do the speed checks hold on a noisy machine, for every correct form? N speed-only gradings of each
form in FORMS (several correct vectorized forms, and loops), each grading with a fresh secret seed,
beside a process spinning on one core.

    .venv/bin/python benchmarks/timing_stability.py --chapter 04_overloaded_ops --runs 50
    .venv/bin/python benchmarks/timing_stability.py --chapter 05_batch_gather --runs 50

Every grading of a vectorized form must pass every speed check, and every grading of a loop fail them.
It prints the pass count of each form on each speed check.
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.course.cases import mutant
from autograder.judging.judge import grade
from tests.kit import solution_cells, write_submission, zygote

# chapter -> answer cell -> form name -> (vectorized?, code); "solution" is the source notebook's.
FORMS: dict[str, dict[str, dict[str, tuple[bool, str]]]] = {
    "04_overloaded_ops": {"row_sum": {
        "solution x.sum(dim=0)": (True, ""),
        "torch.einsum": (True, 'def row_sum(x):\n    return torch.einsum("nd->d", x)\n'),
        "ones @ x": (True, "def row_sum(x):\n    return x.new_ones(x.shape[0]) @ x\n"),
        "x.T.sum(-1)": (True, "def row_sum(x):\n    return x.T.sum(-1)\n"),
        "slicing loop": (False, "def row_sum(x):\n    z = torch.zeros_like(x[0])\n    for i in range(x.shape[0]):\n"
                                "        z = z + x[i]\n    return z\n"),
        "builtin sum over rows": (False, "def row_sum(x):\n    return sum(x)\n"),
    }},
    "05_batch_gather": {"batch_gather": {
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
    }},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapter", choices=sorted(FORMS), default="04_overloaded_ops")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-hog", action="store_true", help="leave the machine quiet")
    args = parser.parse_args()
    hog = None if args.no_hog else subprocess.Popen([sys.executable, "-c", "while True: pass"])
    passed: dict[tuple[str, str], int] = {}
    ratios: dict[tuple[str, str], list[str]] = {}
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for run in range(args.runs):
                for cell, forms in FORMS[args.chapter].items():
                    for form, (vectorized, code) in forms.items():
                        cells = {**solution_cells(args.chapter), **({cell: code} if code else {})}
                        path = write_submission(Path(tmp), args.chapter, cells, name="form.ipynb")
                        for r in grade(path, only="speed", seed=secrets.randbits(62), zygote=zygote()).results:
                            key = (form, r.nodeid.split("::")[-1])
                            passed[key] = passed.get(key, 0) + (r.status == "passed")
                            head = r.output.split("x (median")
                            ratios.setdefault(key, []).append(head[0].rsplit(" ", 1)[-1] if len(head) > 1 else "?")
                            if (r.status == "passed") != vectorized:
                                print(f"  run {run}: {form} {r.status} {key[1]}: {r.output.splitlines()[:1]}",
                                      flush=True)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    print(f"{args.chapter}: {args.runs} gradings of each form, speed checks only, "
          f"{'with' if hog else 'without'} a CPU hog, {time.monotonic() - started:.0f} s")
    print(f"  {'form':24s} {'kind':10s} {'check':28s} passed  measured speed-ups (min / median / max)")
    for forms in FORMS[args.chapter].values():
        for form, (vectorized, _) in forms.items():
            for (name, check), count in passed.items():
                if name == form:
                    values = sorted(float(v) for v in ratios[(name, check)] if v != "?")
                    spread = f"{values[0]:.1f} / {values[len(values) // 2]:.1f} / {values[-1]:.1f}" if values else "-"
                    kind = "vectorized" if vectorized else "loop"
                    print(f"  {form:24s} {kind:10s} {check:28s} {count:3d}/{args.runs:<3d} {spread}")


if __name__ == "__main__":
    main()

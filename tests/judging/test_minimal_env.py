"""GPU runners have torch, numpy and pytest only: grading and the self-test must not need anything else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.kit import ROOT, solved

# Importing any of these fails in the subprocess, as on a runner without the notebook stack.
ABSENT = ["nbformat", "nbclient", "nbgrader", "jupyter_client", "jupyter_core", "IPython", "ipykernel",
          "traitlets", "hypothesis", "matplotlib", "rich", "tqdm", "sqlalchemy", "alembic", "pyseccomp", "seccomp"]
# None in sys.modules is how Python marks a module as not importable: `import` raises ModuleNotFoundError and
# importlib.util.find_spec answers None, as for a package that is not installed (torch._dynamo probes with it).
BLOCKER = f"""
import runpy, sys
sys.modules.update(dict.fromkeys({ABSENT!r}))
"""
CLI = BLOCKER + 'runpy.run_module("autograder", run_name="__main__", alter_sys=True)\n'


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_grading_needs_only_torch_numpy_and_pytest(tmp_path: Path) -> None:
    done = _run(CLI, "grade", str(solved(tmp_path, "07_numerical_stability")), "--seed", "1")
    assert done.returncode == 0, done.stderr
    assert "22 / 22" in done.stdout, done.stdout
    assert "seccomp filter (libseccomp's Python binding is not installed)" in done.stdout, done.stdout


def test_the_selftest_needs_only_torch_numpy_and_pytest() -> None:
    done = _run(BLOCKER + "import autograder.course.selftest, autograder.cli\n"
                "from autograder.course.cases import all_mutants; all_mutants()\n")
    assert done.returncode == 0, done.stderr

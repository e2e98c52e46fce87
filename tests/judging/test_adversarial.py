"""An adversarial corpus: one submission per attack on the grader.

Every attack must earn no undeserved points and still get a complete result.
Most attacks pair a trick with a wrong softmax (it returns zeros), so any
point it earns on softmax would be undeserved; softmax_cross_entropy keeps the
reference code and must still score its 10 points.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import torch

from autograder.chapters.ch07_numerical_stability.checks import Api
from autograder.judging.api import StudentApi, answer
from autograder.judging.expect import CheckFailure
from autograder.judging.notebook import load_submission
from autograder.judging.student import Student
from autograder.judging.timing import compare_speed, randn, reference_process
from tests import forked
from tests.kit import FAST, ROOT, by_name, check_count, grade_fast, solved, task_scores, zygote

CH = "07_numerical_stability"
WRONG = "\ndef softmax(logits, dim=-1):\n    return torch.zeros_like(logits)\n"


ATTACKS = {
    "sys.exit at import": "import sys\nsys.exit(0)\n" + WRONG,
    "SystemExit inside a check": "def softmax(logits, dim=-1):\n    raise SystemExit(0)\n",
    "KeyboardInterrupt inside a check": "def softmax(logits, dim=-1):\n    raise KeyboardInterrupt\n",
    "patched torch comparisons": WRONG + """
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, **k: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *a, **k: None
torch.Tensor.__eq__ = lambda self, other: True
""",
    "tensor subclass equal to everything": """
class Liar(torch.Tensor):
    def __eq__(self, other):
        return True
def softmax(logits, dim=-1):
    return torch.zeros_like(logits).as_subclass(Liar)
""",
    "object equal to everything": """
class Anything:
    def __eq__(self, other):
        return True
    def __array__(self, *a, **k):
        raise TypeError
def softmax(logits, dim=-1):
    return Anything()
""",
    "fake results on stdout": WRONG + """
import json
print(json.dumps({"score": 20, "max_score": 20, "tests": []}))
print("13 passed in 0.1s")
""",
    "network connection": """
import socket
def softmax(logits, dim=-1):
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    return torch.softmax(logits, dim)
""",
    "fork bomb": """
import os
def softmax(logits, dim=-1):
    while True:
        try:
            os.fork()
        except OSError:
            pass
""",
    "edits the notebook's check cells": WRONG,  # check cells are also replaced below
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack_earns_nothing_and_grading_completes(tmp_path: Path, attack: str) -> None:
    path = solved(tmp_path, CH, softmax=ATTACKS[attack])
    if attack == "edits the notebook's check cells":
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["metadata"].get("nbgrader", {}).get("grade"):
                cell["source"] = "print('all checks passed')"
        path.write_text(json.dumps(nb))
    started = time.monotonic()
    g = grade_fast(path)
    assert time.monotonic() - started < 90
    assert len(g.results) == check_count(CH) and g.max_score == 22
    # Patching torch at load is a line every exercise's rule reads (07's notebook says so): the cross entropy too.
    kept = 0 if attack == "patched torch comparisons" else 1  # robust_loss has no rule read from the code
    assert task_scores(g) == {"softmax": 0, "softmax_cross_entropy": 6 * kept, "log_softmax": 5 * kept,
                              "robust_loss": 5}, [r.output for r in g.results]


def test_reading_secrets_from_disk_env_or_parent_is_blocked(tmp_path: Path) -> None:
    targets = [ROOT / "autograder" / "checks" / f"ch{CH}.py", ROOT / "solutions" / CH / f"{CH}.ipynb",
               ROOT / "source" / CH / f"{CH}.ipynb", ROOT / "tests" / "kit.py"]
    probe = f"""
import os
def softmax(logits, dim=-1):
    seen = []
    for p in {[str(t) for t in targets]!r} + [f"/proc/{{os.getppid()}}/environ", f"/proc/{{os.getppid()}}/mem"]:
        try:
            seen.append(f"GOT-FILE {{p}} {{len(open(p, 'rb').read(100))}}")
        except Exception as e:
            seen.append(f"blocked {{type(e).__name__}}")
    seen.append("ENV " + " ".join(f"{{k}}={{v}}" for k, v in os.environ.items()))
    raise RuntimeError("; ".join(seen))
"""
    g = grade_fast(solved(tmp_path, CH, softmax=probe), seed=987654321, only="check_softmax_guide_example")
    out = g.results[0].output
    if os.geteuid() == 0:  # the isolation needs root; elsewhere the result lists it as off
        assert "GOT-FILE" not in out, out
    assert "987654321" not in out and "ENV" in out


def test_writing_to_the_result_path_or_outside_scratch_has_no_effect(tmp_path: Path) -> None:
    out_file = tmp_path / "results.json"
    attack = WRONG + f"""
for target in [{str(out_file)!r}, {str(ROOT / "README.md")!r}]:
    try:
        open(target, "w").write('{{"score": 20, "max_score": 20}}')
    except OSError:
        pass
"""
    path = solved(tmp_path, CH, softmax=attack)
    readme = (ROOT / "README.md").read_text()
    done = forked.run("autograder", "grade", str(path), "--out", str(out_file), cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(out_file.read_text())
    assert result["score"] == 16  # softmax (6) lost, the rest earned
    assert (ROOT / "README.md").read_text() == readme


def test_conftest_and_pth_files_beside_the_notebook_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")
    (tmp_path / "evil.pth").write_text("import os; os.environ['PWNED'] = '1'\n")
    g = grade_fast(solved(tmp_path, CH, softmax=WRONG))
    assert task_scores(g) == {"softmax": 0, "softmax_cross_entropy": 6, "log_softmax": 5, "robust_loss": 5}


# -- timing attacks: against the timing machinery directly ----------------------

SLOW_AND_PATCHED_CLOCKS = """
import time
time.perf_counter = lambda: 0.0
time.time = lambda: 0.0
time.monotonic = lambda: 0.0
if torch.cuda.is_available():
    torch.cuda.Event = None
def softmax(logits, dim=-1):
    return torch.stack([torch.softmax(row, 0) for row in logits])
"""
MEMOIZED_BY_SHAPE = """
_cache = {}
def softmax(logits, dim=-1):
    key = (tuple(logits.shape), logits.data_ptr())
    if key not in _cache:
        _cache[key] = torch.softmax(logits, dim)
    return _cache[key]
"""
FAST_REFERENCE = "def reference_softmax(logits, dim=-1):\n    return torch.softmax(logits, dim)\n"


class Reference(StudentApi):
    @answer
    def reference_softmax(self, logits: torch.Tensor, dim: int = -1) -> torch.Tensor: ...


def _speed(tmp_path: Path, code: str) -> float:
    sub = load_submission(solved(tmp_path, CH, softmax=code))
    student = Student(sub, "cpu", FAST, time.monotonic() + 120, zygote())
    try:
        with reference_process(student, FAST_REFERENCE) as ref:
            speed = compare_speed(Api(student).softmax, Reference(ref).reference_softmax, [randn(256, 32)],
                                  lambda x: torch.softmax(x.double(), -1).float(), torch.Generator().manual_seed(0))
        return speed.speedup
    finally:
        student.close()


def test_patched_clocks_cannot_hide_slow_code(tmp_path: Path) -> None:
    assert _speed(tmp_path, SLOW_AND_PATCHED_CLOCKS) < 1.0  # the judge's clock sees the loop


def test_outputs_memoized_across_calls_fail_the_timed_run(tmp_path: Path) -> None:
    # Fresh inputs every round: a cache keyed on shape and storage address returns stale answers
    # whenever an address is reused, and the judge's comparison of the outputs catches it; if none is reused the
    # cache never hits.
    try:
        speedup = _speed(tmp_path, MEMOIZED_BY_SHAPE)
    except CheckFailure as e:
        assert "wrong results during the timed run" in str(e)
    else:
        assert speedup < 5, "a memo that never hits cannot make the code faster than torch.softmax"


def test_each_attack_result_names_a_cause(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, softmax=ATTACKS["tensor subclass equal to everything"]),
                   only="check_softmax_guide_example")
    assert "subclass" in by_name(g)["check_softmax_guide_example"].output

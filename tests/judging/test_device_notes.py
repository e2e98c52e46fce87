"""A CPU-only grading says which lines would fail on a GPU (issue 38), and costs no point for them.

The judge reads the answer cells (autograder/judging/static/devices.py): a tensor made on the CPU where the input's
device is wanted, .numpy() on an input, a hard-coded .cuda() or "cpu". One student form per pattern gets the note
naming its cell and line; forms that make their tensors on the input's device get none; the score is the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.judging.static.devices import read_cells
from tests.kit import grade_fast, solution_cells, solved

PREAMBLE = "import torch\nimport torch.nn as nn\nimport numpy as np\n"

# (the pattern, the cell, the line the note names, a phrase of the note)
NOTED = [
    ("arange without device", "def one_hot(idx, c):\n    return idx[:, None] == torch.arange(c)\n", 2,
     "makes its tensor on the CPU"),
    ("zeros without device", "def fit(x: torch.Tensor, y: torch.Tensor):\n    w = x.sum()\n"
     "    b = torch.zeros(x.shape[1], requires_grad=True)\n    return x @ b + w\n", 3, "device=y.device"),
    ("tensor of Python numbers", "def gather(t, i):\n    rows = t.tolist()\n"
     "    return torch.tensor([r[0] for r in rows], dtype=t.dtype)\n", 3, "makes its tensor on the CPU"),
    ("numpy on an input", "def gather(t, i):\n    a = t.numpy()\n    return torch.from_numpy(a[0])\n", 2,
     "numpy() reads CPU memory only"),
    ("hard-coded cuda", "def gather(t, i):\n    rows = torch.arange(t.shape[0], device=t.device)\n"
     "    return t[rows.cuda(), i]\n", 3, ".cuda() is hard-coded"),
    ("hard-coded cpu", "def mask(x):\n    return torch.ones(x.shape, device=\"cpu\") * x\n", 2,
     'names the device "cpu"'),
    ("moved to the cpu", "def mask(x):\n    return (x > 0).to(\"cpu\")\n", 2, 'names the device "cpu"'),
    ("plain tensor attribute", "class Norm(nn.Module):\n    def __init__(self, n: int):\n        super().__init__()\n"
     "        self.mean = torch.zeros(n)\n\n    def forward(self, x):\n        return x - self.mean\n", 4,
     "register_buffer"),
]

CLEAN = [
    ("device=x.device", "def one_hot(idx, c):\n    return idx[:, None] == torch.arange(c, device=idx.device)\n"),
    ("*_like and new_*", "def f(x):\n    return torch.zeros_like(x) + x.new_ones(x.shape) + torch.rand_like(x)\n"),
    ("a function of numbers", "def times_table(n):\n    r = torch.arange(1, n + 1)\n    return r[:, None] * r\n"),
    ("a device parameter", "def make(n, device):\n    return torch.arange(n, device=device)\n"),
    ("moved at once", "def f(x):\n    return x + torch.arange(x.shape[0]).to(x.device)\n"),
    ("a scalar", "def f(x):\n    return torch.where(x > 0, x, torch.tensor(float('-inf')))\n"),
    ("registered state", "class Norm(nn.Module):\n    def __init__(self, n: int):\n        super().__init__()\n"
     "        self.register_buffer('mean', torch.zeros(n))\n        self.w = nn.Parameter(torch.ones(n))\n"),
    ("numpy of a host copy", "def f(x):\n    return torch.from_numpy(x.detach().cpu().numpy() * 2).to(x.device)\n"),
]


def _read(source: str) -> list[str]:
    return [str(n) for n in read_cells([{"id": "answer", "source": source}], PREAMBLE)]


@pytest.mark.parametrize(("pattern", "source", "line", "phrase"), NOTED, ids=[n[0] for n in NOTED])
def test_a_tensor_off_the_inputs_device_is_noted_with_its_line(pattern: str, source: str, line: int,
                                                                phrase: str) -> None:
    notes = _read(source)
    assert notes and all(n.startswith(f"cell 'answer', line {line}: ") for n in notes), notes
    assert any(phrase in n for n in notes), notes
    assert any("GPU" in n for n in notes)


@pytest.mark.parametrize(("form", "source"), CLEAN, ids=[c[0] for c in CLEAN])
def test_tensors_made_on_the_inputs_device_get_no_note(form: str, source: str) -> None:
    assert _read(source) == []


def test_an_alias_of_torch_is_read_too() -> None:
    assert _read("import torch as T\n\ndef f(x):\n    return x + T.arange(x.shape[0])\n")


def test_a_cpu_grading_notes_the_line_and_costs_no_point(tmp_path: Path) -> None:
    """03's one_hot with torch.arange(c): full marks on the CPU, and the note names the line."""
    reference = grade_fast(solved(tmp_path, "03_broadcasting"), only="one_hot")
    cell = ('def one_hot(idx, c):\n    """[N] integers -> [N, c] bool."""\n'
            "    return idx[:, None] == torch.arange(c)\n")
    path = solved(tmp_path, "03_broadcasting", one_hot=cell)
    g = grade_fast(path, only="one_hot")
    assert (g.score, g.max_score) == (reference.score, reference.max_score) == (3, 3)
    assert not any("Device note" in n for n in reference.notes)
    note = next(n for n in g.notes if n.startswith("Device note"))
    assert "cell 'one_hot', line 3: torch.arange(c)" in note and "no points" in note
    # On a GPU runner the device checks decide: no note (here, without a GPU, they are skipped).
    assert not any("Device note" in n for n in grade_fast(path, only="one_hot", device="cuda").notes)


def test_the_references_get_no_note() -> None:
    """The solutions as a student would hand them in (all eight, read as a grading reads them)."""
    from autograder.judging.registry import CHAPTERS

    for chapter in CHAPTERS:
        cells = [{"id": k, "source": v} for k, v in solution_cells(chapter).items()]
        assert read_cells(cells, CHAPTERS[chapter].preamble) == [], chapter


def test_a_device_note_alone_does_not_make_a_zero_an_error_row(tmp_path: Path) -> None:
    """grade-all's summary calls a 0 with notes an error (the notebook did not load, a cell raised): advice is
    not one."""
    from autograder.course.batch import row
    from autograder.judging.judge import Grade
    from autograder.judging.report import gradescope
    from autograder.judging.results import SubmissionStatus

    def status(g: Grade) -> SubmissionStatus:
        result = gradescope(g)
        result["extra_data"]["student"] = "ada"
        return row(result)["status"]

    note = "Device note (no points...):\n  cell 'one_hot', line 3: torch.arange(c): makes its tensor on the CPU"
    g = Grade(tmp_path / "a.ipynb", "03_broadcasting", "cpu", notes=[note], device_note=note)
    assert status(g) is SubmissionStatus.GRADED
    g.notes.insert(0, "Answer cell 'one_hot' raised ValueError: boom")
    assert status(g) is SubmissionStatus.ERROR

"""A chapter is added as docs/authoring.md says: write its notebook, add its folder.

A toy chapter, 99_toy, made that way in a scratch folder (its folder ch99_toy/ with its CONFIG, its declared
API and checks, and a harness, the optional piece), is registered from its notebook's metadata, loaded as a
registry of its own (registry.load, as the installed chapters are) and graded end to end through the real
sandbox with that registry: the solution earns every point, a wrong answer loses them with a message that
says why, the stub says "not implemented"; `build` (the command, on that scratch course folder) makes its
release, its answer key and its example class. Nothing of the kit is patched.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from autograder.judging.chapter import Chapter
from autograder.judging.registry import CHAPTERS, RegistryError, derive, load, write_registry
from tests.kit import FAST, grade_fast

ID = "99_toy"

# 1. The notebook: nbgrader's metadata says which cells are answers, which cell imports, what each task is worth.
CELLS = [
    ("markdown", {"grade_id": "intro", "locked": True}, "# Double it\nWrite `double(x)`, which returns 2 * x."),
    ("code", {"grade_id": "imports", "locked": True}, "import torch"),
    ("code", {"grade_id": "double", "solution": True},
     "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
    ("code", {"grade_id": "check_double", "grade": True, "locked": True, "points": 3},
     "assert torch.equal(double(torch.tensor([1.0, 2.0])), torch.tensor([2.0, 4.0]))"),
]


def notebook_json(answer: str | None = None, cells_spec: list[Any] = CELLS,
                  answers: dict[str, str] | None = None) -> dict[str, Any]:
    """The source notebook, or a student's copy whose answer cell holds `answer` (or each of `answers`)."""
    answers = {"double": answer} if answer is not None else answers or {}
    cells = []
    for kind, meta, source, *kit in cells_spec:
        source = answers.get(meta["grade_id"], source)
        cell: dict[str, Any] = {"cell_type": kind, "id": meta["grade_id"], "source": source,
                                "metadata": {"nbgrader": {"schema_version": 3, "solution": False, "grade": False,
                                                          "locked": False, **meta}, **({"kit": kit[0]} if kit else {})}}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        cells.append(cell)
    return {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
            "metadata": {"kit": {"assignment": ID, "title": "A toy chapter"}}}


# 2. The folder: its settings, in __init__.py,
CONFIG = '''
from autograder.judging.chapter import ChapterConfig

CONFIG = ChapterConfig(loads_dynamo=False)
'''

# its API, declared once with types, and its checks, in checks.py,
CHECKS = '''
import torch
from torch import Tensor

from autograder.judging.authoring import StudentApi, answer, check, expect_tensor, harness


class Api(StudentApi):
    @answer(example=(torch.tensor([1.0, 2.0]),))
    def double(self, x: Tensor) -> Tensor:
        """2 * x, in x's dtype."""

    @harness()
    def double_sum(self, x: Tensor) -> Tensor:
        """The harness's sum of the student's double(x)."""


@check(task="double", points=1, visible=True)
def check_double_example(api: Api, device: str) -> None:
    """double([1., 2.]) is [2., 4.]"""
    x = torch.tensor([1.0, 2.0])
    expect_tensor(api.double(x), 2 * x, call="double(x)", inputs={"x": x}, hint="Return 2 * x.", device=device)


@check(task="double", points=2)
def check_double_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random float64 vectors, doubled, and their sum through the harness"""
    x = torch.randn(5, generator=rng, dtype=torch.float64)
    expect_tensor(api.double(x), 2 * x, call="double(x)", inputs={"x": x}, hint="Return 2 * x.", device=device)
    expect_tensor(api.double_sum(x), (2 * x).sum(), call="double(x).sum()", inputs={"x": x}, hint="Return 2 * x.",
                  device=device)
'''

# and its optional harness.py: kit code run beside the answer cells, with the student's namespace as `student`.
HARNESS = '''
def double_sum(x):
    return globals()["student"]["double"](x).sum()
'''


Registry = dict[str, Chapter]


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Registry]:
    """The toy chapter written out and registered, as `python -m autograder.judging.registry` registers a new one;
    its registry, loaded as the installed one is."""
    (tmp_path / "source" / ID).mkdir(parents=True)
    (tmp_path / "source" / ID / f"{ID}.ipynb").write_text(json.dumps(notebook_json(), indent=1))
    add_folder(tmp_path, CHECKS, monkeypatch)
    entry = derive(tmp_path / "source")[ID]
    assert entry == {"title": "A toy chapter", "answers": ["double"], "preamble": "import torch",
                     "points": {"double": 3}, "bonus": {}}
    return tmp_path, register(tmp_path)


def register(root: Path) -> Registry:
    """root/chapters/chapters.json written from root/source, then loaded with the folders beside it."""
    write_registry(root / "source", root / "chapters" / "chapters.json")
    registry = load(root / "chapters" / "chapters.json", root / "chapters")
    assert list(registry) == [ID] and registry[ID].folder == root / "chapters" / f"ch{ID}"
    assert ID not in CHAPTERS  # the installed registry knows nothing of it: grading is handed this one
    return registry


def add_folder(root: Path, checks: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The chapter's folder, ch99_toy/, as an author adds it under autograder/chapters/."""
    folder = root / "chapters" / f"ch{ID}"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(CONFIG)
    (folder / "checks.py").write_text(checks)
    (folder / "harness.py").write_text(HARNESS)
    for name in (f"ch{ID}", f"ch{ID}.checks"):  # another test's toy
        monkeypatch.delitem(sys.modules, name, raising=False)
    return folder


def _graded(toy: tuple[Path, Registry], answer: str) -> dict[str, tuple[str, str]]:
    folder, registry = toy
    path = folder / "submitted.ipynb"
    path.write_text(json.dumps(notebook_json(answer)))
    g = grade_fast(path, seed=7, limits=FAST, registry=registry)
    assert g.assignment == ID and g.max_score == 3
    return {r.nodeid.split("::")[-1]: (r.status, r.output) for r in g.results} | {"score": (str(g.score), "")}


def test_a_new_chapter_is_its_notebook_its_api_and_its_checks(toy: tuple[Path, Registry]) -> None:
    right = _graded(toy, "def double(x):\n    return x + x\n")
    assert right["score"][0] == "3.0", right
    wrong = _graded(toy, "def double(x):\n    return 2 * x.float()\n")  # float64 comes back float32
    assert wrong["score"][0] == "1.0" and wrong["check_double_random"][0] == "failed", wrong
    assert "dtype torch.float32 instead of torch.float64" in wrong["check_double_random"][1]
    stub = _graded(toy, "def double(x):\n    raise NotImplementedError\n")
    assert stub["score"][0] == "0.0"
    assert all("not implemented: `double`" in out for name, (_, out) in stub.items() if name != "score"), stub


# and, optional, its named cases: one is the mistake the example class's ben makes in this chapter.
CASES = '''
from autograder.judging.authoring import wrong


@wrong("float32", fails={"check_double_random": "dtype torch.float32"}, example="ben")
def float32():
    def double(x):
        return 2 * x.float()
'''


def test_build_makes_the_release_the_answer_key_and_the_example_class(toy: tuple[Path, Registry],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m autograder build 99_toy`, run on the toy's course folder: it registers the chapter (the registry
    this process imported does not know it) and builds it with nothing else of the kit touched."""
    from autograder.course import build

    root, _ = toy
    (root / "chapters" / f"ch{ID}" / "cases.py").write_text(CASES)
    assert build.main([ID], root=root, chapters_dir=root / "chapters") == 0, capsys.readouterr().err
    release = json.loads((root / "release" / ID / f"{ID}.ipynb").read_text())
    stub = next("".join(c["source"]) for c in release["cells"] if c["metadata"]["nbgrader"]["grade_id"] == "double")
    assert "raise NotImplementedError" in stub and "return 2 * x" not in stub
    key = json.loads((root / "solutions" / ID / f"{ID}.ipynb").read_text())
    assert all(c.get("execution_count") for c in key["cells"] if c["cell_type"] == "code")  # executed
    examples = root / "examples" / "submitted"
    assert sorted(p.relative_to(examples).as_posix() for p in examples.rglob("*.ipynb")) == [
        f"ada/{ID}/{ID}.ipynb", f"ben/{ID}/{ID}.ipynb"]
    assert "2 * x.float()" in (examples / "ben" / ID / f"{ID}.ipynb").read_text()
    assert "2 * x.float()" not in (examples / "ada" / ID / f"{ID}.ipynb").read_text()
    assert "examples/submitted/{ada,ben}/99_toy: made from the release" in capsys.readouterr().out


# A stretch exercise: its check cell is worth 0 nbgrader points, and kit.bonus says what it earns on top.
STRETCH_CELLS = [*CELLS,
                 ("code", {"grade_id": "triple", "solution": True},
                  "def triple(x):\n    ### BEGIN SOLUTION\n    return 3 * x\n    ### END SOLUTION"),
                 ("code", {"grade_id": "check_triple", "grade": True, "locked": True, "points": 0},
                  "assert triple(torch.ones(1)).item() == 3", {"bonus": 2})]
STRETCH_CHECKS = CHECKS + '''

class Api(Api):  # noqa: F811
    @answer(example=(torch.tensor([1.0]),))
    def triple(self, x: Tensor) -> Tensor:
        """3 * x."""


@check(task="triple", points=2)
def check_triple(api: Api, device: str) -> None:
    """triple([1., 2.]) is [3., 6.]"""
    x = torch.tensor([1.0, 2.0])
    expect_tensor(api.triple(x), 3 * x, call="triple(x)", inputs={"x": x}, hint="Return 3 * x.", device=device)
'''


def test_a_stretch_task_counts_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from autograder.judging.report import gradescope, text

    (tmp_path / "source" / ID).mkdir(parents=True)
    (tmp_path / "source" / ID / f"{ID}.ipynb").write_text(json.dumps(notebook_json(cells_spec=STRETCH_CELLS)))
    add_folder(tmp_path, STRETCH_CHECKS, monkeypatch)
    entry = derive(tmp_path / "source")[ID]
    assert entry["points"] == {"double": 3} and entry["bonus"] == {"triple": 2}
    registry = register(tmp_path)
    path = tmp_path / "submitted.ipynb"
    for triple, bonus in (("def triple(x):\n    return x * 3\n", 2.0), ("def triple(x):\n    return x * 2\n", 0.0)):
        path.write_text(json.dumps(notebook_json(cells_spec=STRETCH_CELLS,
                                                 answers={"double": "def double(x):\n    return x + x\n",
                                                          "triple": triple})))
        g = grade_fast(path, seed=7, limits=FAST, registry=registry)
        assert (g.score, g.max_score, g.bonus, g.bonus_max) == (3.0, 3.0, bonus, 2.0), text(g)
        result = gradescope(g)
        assert (result["score"], result["max_score"]) == (3.0 + bonus, 3.0)  # extra credit on top
        assert result["extra_data"]["bonus"] == {"score": bonus, "max_score": 2.0}
        assert [t["tags"] for t in result["tests"] if t["name"].startswith("[bonus: triple]")] == [["triple", "bonus"]]
        assert f"3 / 3, bonus {bonus:g} / 2" in text(g)


def test_a_stretch_check_cell_with_nbgrader_points_is_refused(tmp_path: Path) -> None:
    """Its points would count twice: in nbgrader's total and as bonus."""
    meta = cast(dict[str, object], STRETCH_CELLS[-1][1])
    cells = [*STRETCH_CELLS[:-1], ("code", {**meta, "points": 2}, "pass", {"bonus": 2})]
    (tmp_path / ID).mkdir()
    (tmp_path / ID / f"{ID}.ipynb").write_text(json.dumps(notebook_json(cells_spec=cells)))
    with pytest.raises(RegistryError, match=r"needs 0 nbgrader points and a positive kit\.bonus"):
        derive(tmp_path)


def test_build_refuses_a_check_cell_whose_points_the_checks_do_not_carry(
        toy: tuple[Path, Registry], capsys: pytest.CaptureFixture[str]) -> None:
    """check_softmax's points edited 10 -> 12 after release: `build` and nbgrader's generate_assignment succeeded,
    then every grading of the chapter stopped on "its checks carry 10 points, its check cell 12". Now `build`
    refuses it with that sentence, before the registry or the release changes."""
    from autograder.course import build

    root, _ = toy
    source = root / "source" / ID / f"{ID}.ipynb"
    nb = json.loads(source.read_text())
    nb["cells"][3]["metadata"]["nbgrader"]["points"] = 5
    source.write_text(json.dumps(nb))
    registry = (root / "chapters" / "chapters.json").read_text()
    assert build.main([ID], root=root, chapters_dir=root / "chapters") == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"source/{ID}/{ID}.ipynb: task 'double': its checks carry 3 points, its check cell in the notebook 5" \
           in err, err
    assert "nothing was built" in err, err
    assert (root / "chapters" / "chapters.json").read_text() == registry and not (root / "release").exists()

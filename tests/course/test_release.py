"""release/ is exactly what nbgrader generates from source/, and solutions/ is
the executed answer key of the current source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.course.build import answer_key, generate_releases
from autograder.judging.registry import CHAPTERS
from tests.kit import ROOT

pytestmark = pytest.mark.slow  # minutes in all: tests/conftest.py starts it first

BUILT = [c for c in CHAPTERS if (ROOT / "source" / c / f"{c}.ipynb").exists()]
REBUILD = "Run `.venv/bin/python -m autograder build {c}` and commit release/, solutions/ and examples/."


def _code(nb: dict) -> list[str]:
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every chapter's release as nbgrader makes it from source/ now (one nbgrader process)."""
    return generate_releases(BUILT, tmp_path_factory.mktemp("course"))


@pytest.mark.parametrize("chapter", BUILT)
def test_release_is_what_source_generates(generated: dict[str, Path], chapter: str) -> None:
    fresh = generated[chapter] / f"{chapter}.ipynb"
    committed = ROOT / "release" / chapter / f"{chapter}.ipynb"
    assert committed.exists(), REBUILD.format(c=chapter)
    assert json.loads(committed.read_text()) == json.loads(fresh.read_text()), REBUILD.format(c=chapter)


@pytest.mark.parametrize("chapter", BUILT)
def test_solutions_are_the_executed_answer_key(chapter: str) -> None:
    path = ROOT / "solutions" / chapter / f"{chapter}.ipynb"
    assert path.exists(), REBUILD.format(c=chapter)
    nb = json.loads(path.read_text())
    assert _code(nb) == _code(answer_key(chapter)), REBUILD.format(c=chapter)
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] for c in code_cells), "every cell of the answer key is executed"
    errors = [o for c in code_cells for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors, errors


@pytest.mark.parametrize("chapter", BUILT)
def test_release_has_no_solutions_and_a_stub_per_answer(chapter: str) -> None:
    nb = json.loads((ROOT / "release" / chapter / f"{chapter}.ipynb").read_text())
    text = json.dumps(nb)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    answers = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in nb["cells"]
               if c["metadata"].get("nbgrader", {}).get("solution")}
    assert set(answers) == set(CHAPTERS[chapter].answers)
    assert all("raise NotImplementedError" in src for src in answers.values())


def test_the_example_class_is_committed() -> None:
    """The demo grades examples/submitted/: it must be in git, not only on this disk."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "examples/submitted"], cwd=ROOT, capture_output=True, text=True)
    names = tracked.stdout.split()
    assert len(names) >= len(BUILT), names
    assert {Path(n).parent.name for n in names} >= set(BUILT)


@pytest.mark.parametrize("chapter", BUILT)
def test_the_example_class_follows_the_release(tmp_path: Path, chapter: str) -> None:
    """An example from an earlier release lacks cells of today's: nbgrader then has cells to put back, and
    `grade-all --gradebook` on the example class failed for every notebook."""
    from autograder.course import examples

    for fresh in examples.write(CHAPTERS[chapter], out=tmp_path):
        committed = ROOT / "examples" / "submitted" / fresh.relative_to(tmp_path)
        assert committed.read_text() == fresh.read_text(), REBUILD.format(c=chapter)

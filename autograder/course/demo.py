"""The main job: build the course, grade the bundled example class, print the table.

Example submissions follow nbgrader's layout: examples/submitted/<student>/<assignment>/*.ipynb.
Results go to results/<student>/<assignment>.json (Gradescope schema).
"""

from __future__ import annotations

import json
import sys

import torch

from autograder.course.build import ROOT, BuildError, build
from autograder.course.examples import EXAMPLES
from autograder.judging.judge import Grade, GraderError, grade
from autograder.judging.registry import CHAPTERS
from autograder.judging.report import gradescope, table
from autograder.sandbox import launcher

RESULTS = ROOT / "results"


def main() -> int:
    try:
        build([c for c in CHAPTERS.values() if (ROOT / "source" / c.id).is_dir()])
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    torch.set_num_threads(1)  # the whole process, which now only judges (see autograder.cli)
    zygote = launcher.zygote()  # every example forks from this process's one
    rows: list[tuple[str, Grade]] = []
    for notebook in sorted(EXAMPLES.glob("*/*/*.ipynb")):
        student, assignment = notebook.parent.parent.name, notebook.parent.name
        try:
            g = grade(notebook, assignment if assignment in CHAPTERS else None, zygote=zygote)
        except GraderError as e:  # the machine, not the submission: keep the row and say so
            g = Grade(notebook, assignment, "cpu", notes=[f"grader error: {e}"])
        out = RESULTS / student / f"{assignment}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(gradescope(g), indent=2))
        rows.append((student, g))
        print(f"graded {student}/{assignment}: {g.score:g}/{g.max_score:g}", flush=True)
    print()
    print(table(rows))
    print(f"\nGradescope results.json files: {RESULTS.relative_to(ROOT)}/<student>/<assignment>.json")
    return 0

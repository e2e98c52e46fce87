"""The example class in examples/submitted/<student>/<assignment>/ (nbgrader's layout), made from each
chapter's release, its reference solution and its named cases, so that it follows every release.

`build` writes a chapter's examples after its release; the demo and docs/instructors.md's walk-through grade them, and
tests/course/test_release.py checks that the committed ones are what this module makes of today's release
(an example from an earlier release lacks cells that nbgrader then has to put back).

- ada solves every task of every chapter, the stretch task too, with the reference solution;
- ben makes one common mistake per chapter and leaves the stretch task as released: the cases the chapter's
  cases.py declares with `example="ben"` (several, each replacing other answer cells), or else its first @wrong
  (a chapter with none: ben hands in the reference, as ada does, without the stretch task);
- in each chapter whose cases.py declares dev's notebook (`example="dev"` on cases and @cells: 07's takes the
  maximum over the whole tensor in softmax and ends the process in softmax_cross_entropy), cleo hands it in as
  released, nothing done, and eve's is cut off mid-file, not a notebook at all.

Nothing here names a chapter: `write` is handed the chapter, as `build` registered it.

ada's and ben's other answers are the same reference code, so the similarity report pairs them where a task has
no mistake of ben's and is long enough to tell (01's fit_polynomial): rightly, and a demonstration of it.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from autograder import CHECKOUT
from autograder.course import cases
from autograder.course.reference import release_path, solution_cells, with_answers
from autograder.judging.chapter import Chapter

EXAMPLES = CHECKOUT / "examples" / "submitted"
CUT_AT = 2000  # eve's notebook: its first characters only


def submissions(chapter: Chapter, root: Path = CHECKOUT) -> dict[str, dict[str, str] | str]:
    """student -> the answer cells replaced in the release (grade_id -> code), or the file's whole text; the
    chapter's notebooks read from the course folder `root`."""
    declared = cases.load(chapter, root=root)
    reference = solution_cells(chapter.id, root)
    required = {k: v for k, v in reference.items() if k not in chapter.bonus}  # the stretch task left as released
    ben = declared.examples.get("ben") or (declared.wrong[0].cells if declared.wrong else {})
    subs: dict[str, dict[str, str] | str] = {"ada": reference, "ben": {**required, **ben}}
    if "dev" in declared.examples:
        subs["cleo"] = {}
        subs["dev"] = {**required, **declared.examples["dev"]}
        subs["eve"] = release_path(chapter.id, root).read_text()[:CUT_AT]
    return subs


def write(chapter: Chapter, root: Path = CHECKOUT, out: Path | None = None) -> list[Path]:
    """Write the chapter's examples under `out` (default: the course folder's examples/submitted/); returns their
    paths."""
    written = []
    for student, answers in submissions(chapter, root).items():
        path = (out or root / "examples" / "submitted") / student / chapter.id / f"{chapter.id}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(answers, str):
            path.write_text(answers)
        else:
            nbformat.write(nbformat.from_dict(with_answers(chapter.id, answers, root)), path)
        written.append(path)
    return written

"""Build the course: the registry (autograder/chapters/chapters.json), release/ with nbgrader, the executed answer
keys in solutions/ and the example class in examples/submitted/ (autograder/course/examples.py).

Needs the dev extras (nbgrader, nbformat, nbclient, ipykernel); grading does not.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config

from autograder import CHECKOUT
from autograder.course import examples
from autograder.judging import registry as registered
from autograder.judging.chapter import Chapter
from autograder.judging.registry import CHAPTERS_DIR, derive, load, write_registry

ROOT = CHECKOUT
_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)[ \t]*\n?", re.MULTILINE)


class BuildError(RuntimeError):
    """nbgrader could not make a release, or an answer key failed to run: the message says which and why."""


def generate_releases(chapter_ids: list[str], course: Path, root: Path = ROOT) -> dict[str, Path]:
    """Run `nbgrader generate_assignment` for the chapters in a scratch course directory; chapter -> its release.

    Working on a copy keeps nbgrader's gradebook.db and logs out of the repository. One nbgrader process makes
    them all: the scratch course holds only these chapters, and nbgrader reads its assignment id as a glob
    ("*"), so the seconds nbgrader takes to start are paid once, not per chapter. The source notebooks are those
    of the course folder `root`; the nbgrader settings (the stubs) are the kit's."""
    (course / "source").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    for chapter_id in chapter_ids:
        shutil.copytree(root / "source" / chapter_id, course / "source" / chapter_id, dirs_exist_ok=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", "*" if len(chapter_ids) > 1 else chapter_ids[0],
         "--force"], cwd=course, env=env, capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise BuildError(f"nbgrader generate_assignment {' '.join(chapter_ids)} failed:\n{done.stdout}{done.stderr}")
    return {chapter_id: course / "release" / chapter_id for chapter_id in chapter_ids}


def generate_release(chapter_id: str, course: Path) -> Path:
    """One chapter's release (generate_releases)."""
    return generate_releases([chapter_id], course)[chapter_id]


def answer_key(chapter_id: str, root: Path = ROOT) -> nbformat.NotebookNode:
    """The source notebook with the solution markers removed: what a TA reads."""
    nb = nbformat.read(root / "source" / chapter_id / f"{chapter_id}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = _MARKER.sub("", cell.source)
    return nb


def _cells(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in nb.cells]


@contextlib.contextmanager
def ipc_kernel() -> Iterator[Config]:
    """NotebookClient's config for a kernel that talks to this process over Unix sockets rather than TCP on
    127.0.0.1: nothing listens on a port, and ipykernel has no unencrypted traffic to warn about. The sockets live
    in a fresh temporary folder, since a socket's path must stay under 108 bytes and JUPYTER_RUNTIME_DIR (where
    they would go) can be deep."""
    with tempfile.TemporaryDirectory(prefix="kit-kernel-") as sockets:
        yield Config({"KernelManager": {"transport": "ipc", "ip": str(Path(sockets) / "k")}})


def execute(nb: nbformat.NotebookNode, folder: Path) -> None:
    """Run every cell of `nb` in a fresh python3 kernel (ipc_kernel) whose working directory is `folder`, outputs
    kept."""
    with ipc_kernel() as kernel:
        NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False, config=kernel,
                       resources={"metadata": {"path": str(folder)}}).execute()


def build_solution(chapter_id: str, root: Path = ROOT) -> tuple[Path, bool]:
    """The executed answer key, and whether it was executed: a key whose cells equal the source's is left as it
    is, since its outputs hold timings of this machine that would change on every run."""
    nb = answer_key(chapter_id, root)
    out_dir = root / "solutions" / chapter_id
    out = out_dir / f"{chapter_id}.ipynb"
    if out.exists() and _cells(nbformat.read(out, as_version=4)) == _cells(nb):
        return out, False
    out_dir.mkdir(parents=True, exist_ok=True)
    for extra in sorted((root / "source" / chapter_id).iterdir()):  # what the notebook imports from its folder
        if extra.is_file() and extra.suffix != ".ipynb":
            shutil.copy(extra, out_dir / extra.name)
    # No timing metadata: a rebuild changes no file whose cells did not change.
    try:
        execute(nb, out_dir)
    except CellExecutionError as e:  # the reference solution or a visible check is broken: the key is not written
        raise BuildError(f"solutions/{chapter_id}: the answer key failed to run (source/{chapter_id} is "
                         f"broken), so it was not written:\n{e}") from None
    nbformat.write(nb, out)
    return out, True


def build(chapters: list[Chapter], root: Path = ROOT) -> None:
    """The release, the answer key and the examples of each chapter, in the course folder `root`."""
    with tempfile.TemporaryDirectory() as tmp:
        for cid, made in generate_releases([c.id for c in chapters], Path(tmp), root).items():
            target = root / "release" / cid
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(made, target)
            print(f"release/{cid}: generated by nbgrader")
    for chapter in chapters:
        key, executed = build_solution(chapter.id, root)
        print(f"{key.relative_to(root)}: {'executed answer key' if executed else 'answer key up to date'}")
        students = [p.parent.parent.name for p in examples.write(chapter, root)]
        print(f"examples/submitted/{{{','.join(students)}}}/{chapter.id}: made from the release")


def point_problems(root: Path = ROOT, chapters_dir: Path = CHAPTERS_DIR) -> list[str]:
    """What disagrees between the source notebooks' check cells and the chapters' checks, one sentence each,
    for chapters whose folder exists: the points of each task (plugin.declaration_problems). Imports the checks
    modules (torch)."""
    from autograder.judging.plugin import declaration_problems, declared_checks

    problems = []
    for cid, found in derive(root / "source").items():
        folder = chapters_dir / f"ch{cid}"
        if not (folder / "checks.py").is_file():
            continue
        one = registered.chapter(cid, found, folder, registered.folder_config(folder))
        module = registered.chapter_module(one, "checks")
        if module is not None:
            problems += [f"source/{cid}/{cid}.ipynb: {p}" for p in
                         declaration_problems(one, module, declared_checks(module)) if p.startswith("task ")]
    return problems


def main(chapter_ids: list[str], root: Path = ROOT, chapters_dir: Path = CHAPTERS_DIR) -> int:
    """`python -m autograder build`: the registry of the course folder `root` written into `chapters_dir` (beside
    the chapters' folders), then the chapters built with that registry as it now is (a chapter new to it
    included, which the registry this process imported does not know)."""
    known = list(derive(root / "source"))
    unknown = [c for c in chapter_ids if c not in known]
    if unknown:
        print(f"unknown chapters: {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    problems = point_problems(root, chapters_dir)
    if problems:  # every grading of that chapter would stop on it, for everyone: refused before anything is written
        print("error: the check cells' points disagree with the checks' points, so nothing was built (set the check "
              "cell's points back in source/, or change the checks' points in the chapter's checks.py):\n  "
              + "\n  ".join(problems), file=sys.stderr)
        return 1
    registry = chapters_dir / "chapters.json"
    write_registry(root / "source", registry)
    print(f"{registry.relative_to(root) if registry.is_relative_to(root) else registry}: derived from the source "
          "notebooks")
    chapters = load(registry, chapters_dir)
    try:
        build([chapters[c] for c in chapter_ids or known], root)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0

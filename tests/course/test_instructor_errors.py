"""What an instructor's mistakes get from the kit's commands: a clear message and an exit status that
docs/operations.md lists, never a traceback, a stray file, or a write into a folder the kit does not own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import cli
from tests.kit import ROOT

CH = "07_numerical_stability"


def _files(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*")}


def test_class_report_never_writes_into_nbgrader_autograded(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    autograded = tmp_path / "autograded"
    (autograded / "ada" / CH).mkdir(parents=True)
    (autograded / "ada" / CH / f"{CH}.ipynb").write_text("{}")
    before = _files(tmp_path)
    assert cli.main(["class-report", str(autograded)]) == 2
    assert "no results/ or summary.json" in capsys.readouterr().err
    assert _files(tmp_path) == before


def test_a_python_without_torch_is_told_to_use_the_kits_venv(tmp_path: Path) -> None:
    """As `python3 -m autograder grade` with the system Python: torch made unimportable for the child."""
    run = ("import runpy, sys; sys.modules['torch'] = None; sys.argv[0] = 'autograder'; "
           "runpy.run_module('autograder', run_name='__main__')")
    for command in (["grade", str(tmp_path / "x.ipynb")], ["grade-all", str(tmp_path)], ["selftest"]):
        done = subprocess.run([sys.executable, "-c", run, *command], cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and "torch not installed" in done.stderr, done.stderr
        assert f"make setup` in the kit's folder, then `.venv/bin/python -m autograder {command[0]}" in done.stderr
    assert _files(tmp_path) == set()


def _course(tmp_path: Path) -> tuple[Path, Path]:
    course = tmp_path / "course"
    (course / "submitted").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text((ROOT / "nbgrader_config.py").read_text())
    return course, course / "submitted"


def test_export_without_a_gradebook_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    course, sub = _course(tmp_path)
    before = _files(tmp_path)
    assert cli.main(["export", str(sub)]) == 2
    assert f"{course / 'gradebook.db'} does not exist" in capsys.readouterr().err
    assert cli.main(["export", str(tmp_path)]) == 2  # above the course: none found
    assert "no nbgrader_config.py" in capsys.readouterr().err
    assert _files(tmp_path) == before


def test_export_from_a_subfolder_writes_the_courses_grades(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`nbgrader export` run there makes an empty gradebook.db in the subfolder (and, without alembic on PATH,
    a traceback); the kit's command exports the course's own gradebook."""
    from nbgrader.api import Gradebook

    from autograder.course.nbgrader.gradebook import interpreter_bin_first

    course, sub = _course(tmp_path)
    monkeypatch.setenv("PATH", os.environ["PATH"])  # interpreter_bin_first edits it; undone after
    interpreter_bin_first()
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "effective-pytorch") as gb:
        gb.add_assignment(CH)
        gb.add_student("ada")
    monkeypatch.chdir(sub)
    assert cli.main(["export"]) == 0
    assert f"grades: {course / 'grades.csv'}" in capsys.readouterr().out
    assert (course / "grades.csv").read_text().startswith("assignment,duedate,timestamp,student_id")
    assert _files(sub) == set()


def _exit_codes() -> dict[str, set[int]]:
    """docs/operations.md's list of exit codes (`- `command`` lines, each with `  - N: meaning` items):
    command -> the statuses it lists."""
    doc = (ROOT / "docs" / "operations.md").read_text()
    start = doc.index("\n## Exit codes\n")
    end = doc.find("\n#", start + 1)
    codes: dict[str, set[int]] = {}
    command = None
    for line in doc[start:end if end > 0 else None].splitlines():
        if heading := re.fullmatch(r"- `([\w-]+)`", line):
            command = heading[1]
        elif (item := re.match(r"  - (\d+): ", line)) and command:
            codes.setdefault(command, set()).add(int(item[1]))
    return codes


def test_the_docs_list_every_exit_code_of_every_command() -> None:
    parser_commands = set(re.findall(r"sub\.add_parser\(\"([\w-]+)\"", Path(cli.__file__).read_text()))
    listed = _exit_codes()
    assert set(listed) == parser_commands
    assert listed["grade-all"] == {0, 1, 2, 3, 130}  # 1: an assignment not registered in gradebook.db (--gradebook)
    assert listed["export"] == {0, 1, 2} and listed["selftest"] == {0, 1, 2, 4} and listed["build"] == {0, 1, 2}
    assert all(2 in codes for codes in listed.values())  # a usage error, at least (argparse's status)


def test_the_build_runs_its_kernel_without_tcp_or_warnings(tmp_path: Path) -> None:
    """An answer key runs in a kernel reached over Unix sockets in JUPYTER_RUNTIME_DIR: ipykernel prints no
    'over TCP without encryption' warning, and the sockets are gone afterwards."""
    runtime = tmp_path / "runtime"
    run = ("import nbformat; from pathlib import Path; from autograder.course.build import execute; "
           "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('print(6 * 7)')]); "
           f"execute(nb, Path({str(tmp_path)!r})); print(nb.cells[0].outputs[0]['text'], end='')")
    done = subprocess.run([sys.executable, "-c", run], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)})
    assert done.returncode == 0 and done.stdout == "42\n", done.stdout + done.stderr
    assert "WARNING" not in done.stderr and "TCP" not in done.stderr, done.stderr
    assert not runtime.exists() or not any(runtime.iterdir())


def test_the_tests_keep_jupyter_state_out_of_home() -> None:
    from IPython.paths import get_ipython_dir
    from jupyter_core.paths import jupyter_config_dir, jupyter_data_dir, jupyter_runtime_dir

    home = Path.home().resolve()
    for folder in (jupyter_data_dir(), jupyter_runtime_dir(), jupyter_config_dir(), get_ipython_dir()):
        assert not Path(folder).resolve().is_relative_to(home), folder


def test_ci_runs_the_browser_test_in_its_own_job_and_keeps_its_screenshots() -> None:
    """kit-tests.yml has an e2e job (actionlint checks its syntax in test_workflows.py) that runs `make e2e`
    and uploads e2e-screenshots/ whether it passed or not."""
    workflow = (ROOT / ".github" / "workflows" / "kit-tests.yml").read_text()
    job = workflow[workflow.index("\n  e2e:\n") + 1:]
    after = re.search(r"^  [\w-]+:$", job[1:], re.M)  # the next job, if any
    job = job[: after.start() + 1] if after else job
    assert re.findall(r"^ +run: (.*)$", job, re.M) == ["make e2e"]
    upload = job[job.index("actions/upload-artifact@"):]
    assert "if: always()" in upload and re.search(r"^ +path: e2e-screenshots/?$", upload, re.M)
    assert "e2e" not in (ROOT / ".ci" / "run").read_text()  # .ci/run stays `make test`, within its budget


def test_a_failed_recording_names_its_cause_not_nbgraders_closing_line() -> None:
    from autograder.course.nbgrader.gradebook import _why

    log = ("[AutogradeApp | ERROR] Traceback (most recent call last):\n    KeyError: 'log_softmax'\n"
           "[AutogradeApp | ERROR] There was an error processing assignment\n")
    error = ("nbgrader.converters.base.NbGraderException: Please see the the above traceback for details on the "
             "specific errors on the above failures.")
    assert _why({"log": log, "error": error}) == "KeyError: 'log_softmax'"


def test_nbgraders_session_warnings_are_silenced_by_the_course_settings(tmp_path: Path) -> None:
    """nbgrader's add_submission makes SQLAlchemy warn twice per submission; nbgrader_config.py (read by every
    nbgrader command and Formgrader) silences exactly that message, and other warnings still show."""
    run = (f"import runpy, warnings; runpy.run_path({str(ROOT / 'nbgrader_config.py')!r}, "
           "init_globals={'get_config': lambda: __import__('traitlets.config').config.Config()})\n"
           "from nbgrader.api import Gradebook\n"
           f"with Gradebook('sqlite:///{tmp_path / 'gradebook.db'}', 'c') as gb:\n"
           "    gb.add_assignment('a'); gb.add_student('s'); gb.add_submission('a', 's')\n"
           "warnings.warn('still shown')\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-W", "always", "-c", run], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert "SAWarning" not in done.stderr and "still shown" in done.stderr, done.stderr

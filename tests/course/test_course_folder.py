"""nbgrader run from a folder inside the course works on the course's gradebook, and a stray gradebook.db is seen.

nbgrader reads nbgrader_config.py from the folder it runs in only: in release/ it made release/gradebook.db, stopped
with an alembic traceback, and .gitignore hid the stray file. scripts/setup.sh installs
scripts/venv_nbgrader_config.py as the environment's nbgrader_config.py (.venv/etc/jupyter/), which reads the
course's from the nearest folder above; here it is put on JUPYTER_CONFIG_PATH instead, the shared environment left
alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked
from tests.kit import ROOT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _nbgrader(cwd: Path, config: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    venv_bin = str(Path(sys.executable).parent)  # a shell where .venv is not activated, as in the walk
    env = {**os.environ, "PATH": os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)}
    env.pop("JUPYTER_CONFIG_PATH", None)
    if config is not None:
        env["JUPYTER_CONFIG_PATH"] = str(config)
    return forked.run("nbgrader", *args, cwd=cwd, env=env, timeout=120)


def test_nbgrader_in_a_subfolder_works_on_the_courses_gradebook(tmp_path: Path) -> None:
    course = tmp_path / "course"
    (course / "release" / "07_numerical_stability").mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    config = tmp_path / "etc-jupyter"
    config.mkdir()
    shutil.copy(ROOT / "scripts" / "venv_nbgrader_config.py", config / "nbgrader_config.py")
    inside = course / "release" / "07_numerical_stability"
    added = _nbgrader(inside, config, "db", "student", "add", "ann", "--first-name", "Ann")
    assert added.returncode == 0, added.stdout + added.stderr
    listed = _nbgrader(course / "release", config, "db", "student", "list")
    assert listed.returncode == 0 and "ann (None, Ann)" in listed.stdout + listed.stderr, listed.stdout + listed.stderr
    assert (course / "gradebook.db").is_file()
    assert not list((course / "release").rglob("gradebook.db"))
    outside = tmp_path / "elsewhere"  # no course above: nothing set, nbgrader as it is
    outside.mkdir()
    alone = _nbgrader(outside, config, "db", "student", "list")
    assert "ann" not in alone.stdout and "effective-pytorch" not in alone.stdout + alone.stderr


def test_a_stray_gradebook_in_a_subfolder_is_not_hidden_by_gitignore() -> None:
    def ignored(path: str) -> bool:
        return subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT).returncode == 0

    assert ignored("gradebook.db")
    assert not ignored("release/gradebook.db") and not ignored("release/07_numerical_stability/gradebook.db")

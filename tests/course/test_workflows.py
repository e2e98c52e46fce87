"""The GitHub Actions workflows pass actionlint, and the lint really runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.kit import ROOT

ACTIONLINT = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or "actionlint"


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ACTIONLINT, "-no-color"], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_workflows_pass_actionlint() -> None:
    assert sorted(p.name for p in (ROOT / ".github" / "workflows").glob("*.yml")) == [
        "grade-submissions.yml", "kit-tests.yml"]
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(ROOT / ".github" / "actionlint.yaml", tmp_path / ".github")
    broken = (ROOT / ".github" / "workflows" / "grade-submissions.yml").read_text().replace(
        "${{ inputs.submissions }}", "${{ inputs.submission }}", 1)
    (tmp_path / ".github" / "workflows" / "broken.yml").write_text(broken)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    done = _lint(tmp_path)
    assert done.returncode == 1 and "submission" in done.stdout

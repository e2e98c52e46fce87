"""requirements.lock (scripts/lock.sh) pins what pyproject.toml asks for, and never torch or CUDA."""

from __future__ import annotations

import re
import tomllib

from tests.kit import ROOT


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement)[0]).lower()  # type: ignore[index]


def _pins() -> dict[str, str]:
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    return {_name(line): line.split("==")[1].split(";")[0].strip() for line in lines if "==" in line
            and not line.startswith((" ", "#"))}


def test_every_dependency_of_the_kit_is_pinned() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]} - {"torch"}
    missing = wanted - set(_pins())
    assert not missing, f"not in requirements.lock: {sorted(missing)}; run `bash scripts/lock.sh`"


def test_the_lock_never_installs_torch_or_cuda() -> None:
    """setup.sh installs the pinned CPU torch first; a lock that named torch or its CUDA wheels would replace it."""
    heavy = [n for n in _pins() if n in {"torch", "triton"} or n.startswith(("nvidia-", "cuda-"))]
    assert heavy == []


def test_the_lock_leaves_out_what_the_overrides_keep_out() -> None:
    """scripts/overrides.txt (torch; rfc3987-syntax, whose import costs 1.5 s in every process that imports
    nbformat): none of it is pinned, and setup.sh installs with the same overrides."""
    lines = (ROOT / "scripts" / "overrides.txt").read_text().splitlines()
    kept_out = {_name(line) for line in lines if line.strip() and not line.startswith("#")}
    assert kept_out >= {"torch", "rfc3987-syntax"}
    assert not kept_out & set(_pins())
    assert "--override scripts/overrides.txt" in (ROOT / "scripts" / "setup.sh").read_text()

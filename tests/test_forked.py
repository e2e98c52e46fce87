"""tests/forked.py gives what `subprocess.run([python, "-m", ...], capture_output=True, text=True)` gives."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import forked

PROBE = """
import json, os, sys
print(json.dumps({"cwd": os.getcwd(), "argv": sys.argv[1:], "path0": sys.path[0], "name": __name__,
                  "var": os.environ.get("KIT_FORKED_PROBE"), "stdin": sys.stdin.read()}))
print("to stderr", file=sys.stderr)
if sys.argv[1:] == ["sleep"]:
    import time
    time.sleep(60)
raise SystemExit(int(os.environ.get("KIT_FORKED_EXIT", "0")))
"""


def _both(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], ...]:
    (tmp_path / "kit_forked_probe.py").write_text(PROBE)
    full = {**os.environ, **env}
    real = subprocess.run([sys.executable, "-m", "kit_forked_probe", *args], cwd=tmp_path, env=full,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return real, forked.run("kit_forked_probe", *args, cwd=tmp_path, env=full)


def test_a_forked_command_sees_and_returns_what_a_new_interpreter_does(tmp_path: Path) -> None:
    real, fork = _both(tmp_path, "a", "b c", KIT_FORKED_PROBE="é", KIT_FORKED_EXIT="3")
    assert (fork.returncode, fork.stdout, fork.stderr) == (real.returncode, real.stdout, real.stderr) == (
        3, real.stdout, "to stderr\n")
    assert '"argv": ["a", "b c"]' in fork.stdout and f'"path0": "{tmp_path}"' in fork.stdout
    assert forked.run("kit_forked_nonexistent", cwd=tmp_path).returncode == 1


def test_a_forked_command_past_its_timeout_is_killed(tmp_path: Path) -> None:
    (tmp_path / "kit_forked_probe.py").write_text(PROBE)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        forked.run("kit_forked_probe", "sleep", cwd=tmp_path, timeout=1.0)
    assert time.monotonic() - started < 10
    assert forked.run("kit_forked_probe", cwd=tmp_path).returncode == 0  # the server goes on


def test_what_an_interpreter_reads_at_its_start_gets_a_real_one(tmp_path: Path) -> None:
    (tmp_path / "kit_forked_probe.py").write_text("import sys\nprint(sys.flags.dont_write_bytecode)\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1" if not sys.flags.dont_write_bytecode else ""}
    got = forked.run("kit_forked_probe", cwd=tmp_path, env=env).stdout.strip()
    assert got == str(int(not sys.flags.dont_write_bytecode))

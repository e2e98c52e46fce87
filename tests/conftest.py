"""The order of a test run: the slowest files first, so that `make test`'s pytest-xdist workers (one per core,
--dist worksteal: a worker that runs dry takes tests from the other) start the long ones at once and finish
together (loadfile, whole files each, left one core idle for the last minute: 640 s against 569 s). And
Jupyter's per-user state (kernel connection files, notebook signatures, nbgrader's exchange cache, IPython's
profile) goes to a temporary folder of the run, never into ~/.local/share/jupyter, ~/.jupyter or ~/.ipython. So do
the warm judges that `nbgrader autograde` starts (autograder/course/nbgrader/warm.py, under $XDG_RUNTIME_DIR): every
one left is stopped when the run ends."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.devices import fakegpu

# The autograd engine sizes its per-device queues at the first backward of a process, from the devices known then:
# a fakegpu registered later makes every backward on it fail an internal assert. Each xdist worker registers it
# before any test runs.
fakegpu.device()

JUPYTER_HOME = "KIT_TESTS_JUPYTER_HOME"  # set by the first process of a run; pytest-xdist workers inherit it
JUPYTER_DIRS = {"JUPYTER_DATA_DIR": "data", "JUPYTER_RUNTIME_DIR": "runtime", "JUPYTER_CONFIG_DIR": "config",
                "IPYTHONDIR": "ipython"}
XDG = "xdg"  # $XDG_RUNTIME_DIR of the run: its warm judges' sockets
_OWN_HOME = pytest.StashKey[Path]()  # the folder this process made, removed when it ends


def pytest_configure(config: pytest.Config) -> None:
    if JUPYTER_HOME in os.environ:
        return
    home = Path(tempfile.mkdtemp(prefix="kit-tests-jupyter-"))
    os.environ[JUPYTER_HOME] = str(home)
    for var, sub in JUPYTER_DIRS.items():
        os.environ[var] = str(home / sub)
    (home / XDG).mkdir(mode=0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(home / XDG)
    config.stash[_OWN_HOME] = home


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(_OWN_HOME, None)
    if home is not None:
        from autograder.course.nbgrader import warm

        warm.stop_all(home / XDG / warm.FOLDER)  # pytest-xdist's workers have ended: no test starts another
        shutil.rmtree(home, ignore_errors=True)
        del os.environ[JUPYTER_HOME]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: each file keeps its order

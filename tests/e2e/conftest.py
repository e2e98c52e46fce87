"""Browser test rig: JupyterLab servers on 127.0.0.1, headless Debian chromium, screenshots.

Every server is stopped when its test ends, passed or failed, and every wait has a deadline.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.kit import ROOT

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Frame, FrameLocator, Page

CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(os.environ.get("E2E_SCREENSHOTS", ROOT / "e2e-screenshots"))
BIN = Path(sys.executable).parent
START_SECONDS = 90.0
STOP_SECONDS = 20.0
# JupyterLab user settings: no news prompt or update check on a first start, and every cell kept in the
# page (no windowing), so that locators find cells that are scrolled out of view.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                         "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


@dataclass(frozen=True)
class Lab:
    url: str
    token: str
    root: Path
    log: Path

    def at(self, path: str) -> str:
        return f"{self.url}{path}{'&' if '?' in path else '?'}token={self.token}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(home: Path) -> dict[str, str]:
    """The venv first on PATH (gradebook creation runs alembic), Jupyter state kept out of ~, and a grading
    secret of the test's own, so the kit never writes .autograder-secret into the repository."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "AUTOGRADER_SECRET": os.environ.get("AUTOGRADER_SECRET") or secrets.token_hex(32)}
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("IPYTHONDIR", "ipython"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces")):
        env[var] = str(home / sub)
    # The machine's nbgrader settings (the course's own stay in its nbgrader_config.py): a private exchange.
    for sub in ("exchange", "config"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    (home / "config" / "nbgrader_config.py").write_text(f"c.Exchange.root = {str(home / 'exchange')!r}\n")
    for name, values in LAB_SETTINGS.items():
        path = home / "config" / "lab" / "user-settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return env


def _tail(log: Path, n: int = 4000) -> str:
    return log.read_text(errors="replace")[-n:] if log.exists() else "(no log)"


@contextmanager
def jupyter_lab(root: Path, home: Path) -> Iterator[Lab]:
    """`jupyter lab` serving `root` on a free loopback port; stopped (kernels included) on exit."""
    port, token = _free_port(), secrets.token_hex(16)
    home.mkdir(parents=True, exist_ok=True)
    log = home / "jupyter.log"
    cmd = [str(BIN / "jupyter-lab"), "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:  # CI containers run as root
        cmd.append("--allow-root")
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=server_env(home), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    lab = Lab(f"http://127.0.0.1:{port}", token, root, log)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{_tail(log)}")
            try:
                with urllib.request.urlopen(lab.at("/api/status"), timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter lab did not answer within {START_SECONDS:.0f} s:\n{_tail(log)}")
            time.sleep(0.5)
        yield lab
    except BaseException:
        print(f"--- {log} (end) ---\n{_tail(log)}")  # pytest shows it with the failure
        raise
    finally:
        _stop(proc, lab)


def _stop(proc: subprocess.Popen[bytes], lab: Lab) -> None:
    """Ask the server to shut down (it stops its kernels), then signal its process group."""
    if proc.poll() is None:
        try:
            req = urllib.request.Request(lab.at("/api/shutdown"), method="POST")
            urllib.request.urlopen(req, timeout=5).close()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            proc.wait(timeout=STOP_SECONDS)
            return
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, sig)
    proc.wait(timeout=STOP_SECONDS)


def nbgrader(course: Path, home: Path, *args: str) -> str:
    done = subprocess.run([str(BIN / "nbgrader"), *args], cwd=course, env=server_env(home), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="make e2e-setup installs Playwright")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: make e2e-setup installs Debian's chromium")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, timeout=60_000)
        try:
            yield browser
        finally:
            browser.close()


FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(60_000)
    page = context.new_page()
    failed_shot = SHOTS / f"{request.node.name}-FAILED.png"
    failed_shot.unlink(missing_ok=True)
    try:
        yield page
        if request.node.stash.get(FAILED, False):  # the page as the failure left it
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=failed_shot)
    finally:
        context.close()


class Shots:
    """Numbered screenshots of one test, in SHOTS."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.n = prefix, 0
        SHOTS.mkdir(parents=True, exist_ok=True)
        for old in SHOTS.glob(f"{prefix}-*.png"):
            old.unlink()

    def __call__(self, page: Page, step: str) -> Path:
        self.n += 1
        path = SHOTS / f"{self.prefix}-{self.n:02d}-{step}.png"
        page.screenshot(path=path)
        return path


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A scratch course directory: the repository's nbgrader config and sources, never the repository."""
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "source", course / "source")
    return course


def formgrader(page: Page, lab: Lab, assignment: str) -> tuple[FrameLocator, Frame]:
    """Formgrader opened from JupyterLab's Nbgrader menu (Manage Assignments), and its frame to navigate."""
    page.goto(lab.at("/lab"))
    page.locator(".jp-DirListing-item").first.wait_for()
    page.keyboard.press("ControlOrMeta+b")  # hide the file browser: Formgrader's tables are wide
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name="Formgrader", exact=True).click()
    fg = page.frame_locator("iframe[src*='/formgrader']")
    fg.locator("#main-table tr").filter(has_text=assignment).first.wait_for()
    frame = page.frame(url=lambda url: "/formgrader" in url)
    assert frame is not None
    return fg, frame

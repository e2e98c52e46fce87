"""A warm judge per course, kept between `nbgrader autograde` processes (and Formgrader's Autograde buttons).

An instructor runs `nbgrader autograde <assignment>` once per assignment: each process of a few submissions paid
nbgrader's start, then a judge start (torch imported, a zygote started: most of its seconds) and graded them one
at a time. KitAutograde (autograde.py) now hands a run's submissions to the course's warm judge instead: one
detached service process per course, holding grade-all's judge workers (batch._init_worker: one per core, each
pinned to its core, torch and a zygote loaded once). The first nbgrader process of a course starts it; the next
ones (within `KitAutograde.warm_seconds` of its last use) find it warm and only pay nbgrader's own start. nbgrader's
process then never imports torch at all.

- Where: a folder private to the user, $XDG_RUNTIME_DIR/kit-warm, else <temp dir>/kit-warm-<uid>; it must be a
  real folder (not a link) owned by this user with mode 0700, or no service is used (fail closed: nbgrader's
  process grades, as before, and the log says why). In it, per course (by a hash of its root): <key>.sock (an
  AF_UNIX socket, multiprocessing.connection with the folder's `authkey`, a file of mode 0600), <key>.lock (the
  service holds an flock on it while it lives: one service per course), <key>.pid and <key>.log (its stderr).
- Staleness: the service answers `hello` with what it grades with (`identity`: a sha256 of every file of the
  kit's package, not only batch._kit_sha256's judging/ and sandbox/, since its judge processes load the chapters'
  checks and the registry once and keep them; the interpreter and torch's version). A client that finds another
  identity stops that service and starts a fresh one: an instructor who updates the kit is never graded by the
  old code (a client hashes the files at each run, so a Formgrader server that outlives the update sees it too).
  A result is taken only for the very (sha256, fingerprint) of the Job nbgrader grades (as autograde.Ahead.take),
  and the judge process checks the notebook's sha256 before and after grading it: the
  bytes it graded are the bytes nbgrader records.
- Lifetime: the service exits once it has graded nothing and held no submission for `warm_seconds` (the last
  client's value), or at a `stop` request (a stale service, `stop`, the tests); its judge processes exit with it
  (they watch their parent), its zygotes with them. It is started detached (a double fork, a session of its own), so
  it outlives the nbgrader process that started it and leaves no zombie.
- Ahead of the asking (`KitAutograde.grade_course_ahead`, off by default: it spends CPU on submissions nobody may
  ask for): after a client hands over its run's submissions, the service queues the course's other
  submissions that no autograded copy records as graded from their bytes with today's release and grader (the
  kit's metadata of it), and grades them while judges would idle (a client's submissions come first: at most one
  grading a judge runs ahead of them). The next `nbgrader autograde <assignment>` (or Formgrader's next button)
  takes those results if they are of the very (sha256, fingerprint) it grades; an instructor who autogrades the
  assignments one after another pays each nbgrader process's own start, not the gradings one after another.
- Failure: any failure of the service (refused, died, no answer within the time limits) raises Unavailable in the
  client; KitAutograde logs it and grades in nbgrader's process as it did before.

Results are grade-all's: the same call (batch.grade_submission), in a judge process set up the same way.

Why a service and not more of nbgrader's process: the cost is the judge's start, paid by every nbgrader process,
and the gradings waited for one run after the other; only processes that outlive nbgrader's remove both. A
multiprocessing.connection socket (authenticated, pickling Jobs and Results) needs nothing outside the standard
library; the private folder, not the socket, is what keeps other users out.

Needs no nbgrader: the service imports nothing of it. `python -m autograder.course.nbgrader.warm stop <course>`
stops a course's service (`stop-all`: every one of this user's).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import fcntl
import hashlib
import importlib.metadata
import json
import multiprocessing
import os
import secrets
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

from autograder import PACKAGE
from autograder.course.batch import (
    Job,
    _init_worker,
    discover,
    file_sha256,
    files_sha256,
    fingerprint,
    grade_submission,
)
from autograder.judging.registry import CHAPTERS
from autograder.judging.results import Results
from autograder.sandbox import launcher

FOLDER = "kit-warm"
AUTHKEY_BYTES = 32
START_SECONDS = 60.0  # for a service just started to listen
ANSWER_SECONDS = 20.0  # for an answer to hello, grade or stop
TAKE_SECONDS = 1800.0  # for one submission's result: far above any chapter's time limits
SOCKET_PATH_MAX = 100  # AF_UNIX paths hold 108 bytes on Linux, 104 on macOS


class Unavailable(Exception):
    """No warm judge for this run: nbgrader's process grades (the message says why)."""


# -- the private folder ---------------------------------------------------------------------------------------


def private_folder() -> Path:
    """The user's folder of warm judges, made 0700 if missing; Unavailable unless it is a real folder, owned by this
    user, that no one else can enter."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    path = Path(base, FOLDER) if base and os.path.isabs(base) and os.path.isdir(base) else \
        Path(tempfile.gettempdir(), f"{FOLDER}-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    try:
        st = os.lstat(path)
    except OSError as e:
        raise Unavailable(f"{path} cannot be read: {e.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise Unavailable(f"{path} is not a folder (a link or a file)")
    if st.st_uid != os.getuid():
        raise Unavailable(f"{path} is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})")
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise Unavailable(f"{path} has mode {stat.S_IMODE(st.st_mode):04o}, not 0700: other users could reach its "
                          "socket and key")
    return path


def _own_file(fd: int, path: Path) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise Unavailable(f"{path} is not a file of this user's with mode 0600")


def authkey(folder: Path) -> bytes:
    """The key every service of the folder and its clients share (made once, mode 0600, whole or not at all)."""
    path = folder / "authkey"
    if not path.exists():
        tmp = folder / f".authkey.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_bytes(AUTHKEY_BYTES))
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):  # another client made it first: theirs it is
            os.link(tmp, path)
        tmp.unlink()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as e:
        raise Unavailable(f"{path} cannot be read: {e.strerror}") from None
    try:
        _own_file(fd, path)
        key = os.read(fd, AUTHKEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != AUTHKEY_BYTES:
        raise Unavailable(f"{path} does not hold a key of {AUTHKEY_BYTES} bytes")
    return key


@dataclass(frozen=True)
class Paths:
    """The files of one course's service in the private folder."""

    folder: Path
    key: str

    @property
    def socket(self) -> Path:
        return self.folder / f"{self.key}.sock"

    @property
    def lock(self) -> Path:
        return self.folder / f"{self.key}.lock"

    @property
    def pid(self) -> Path:
        return self.folder / f"{self.key}.pid"

    @property
    def log(self) -> Path:
        return self.folder / f"{self.key}.log"


def paths(course: Path, folder: Path) -> Paths:
    found = Paths(folder, hashlib.sha256(os.fsencode(course.resolve())).hexdigest()[:16])
    if len(os.fsencode(found.socket)) > SOCKET_PATH_MAX:
        raise Unavailable(f"{found.socket} is too long a path for a socket")
    return found


@contextlib.contextmanager
def _lock_fd(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        yield fd
    finally:
        os.close(fd)


def running(where: Paths) -> bool:
    """Whether a service holds the course's lock (lives)."""
    with _lock_fd(where.lock) as fd:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False


def _wait_gone(where: Paths, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while running(where):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# -- what a service grades with -----------------------------------------------------------------------------------


def code_sha() -> str:
    """Of every file of the kit's package (its code, the chapters' checks and registry) as they are now on disk: a
    client reads them at each run (about 2 MB), so a long-lived Formgrader finds the kit updated under it too."""
    return files_sha256([p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts])


def identity() -> dict[str, str]:
    """What grades: the kit's files, where they are, the interpreter and torch (read from its metadata: no import)."""
    try:
        torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = "none"
    return {"code": code_sha(), "package": str(PACKAGE), "python": f"{sys.executable} {sys.version.split()[0]}",
            "torch": torch}


# -- the service --------------------------------------------------------------------------------------------------


def _orphaned(parent: int) -> None:
    """A judge process of a service that died (killed): close its zygote and exit, holding no memory."""
    while os.getppid() == parent:
        time.sleep(1.0)
    with contextlib.suppress(Exception):
        launcher.zygote().close()
    os._exit(1)


def _init_judge(counter: Any, warm: bool, parent: int) -> None:
    """batch._init_worker, and the judge process exits when its service does."""
    threading.Thread(target=_orphaned, args=(parent,), daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # an idle judge closes its zygote (atexit) when stopped
    _init_worker(counter, warm)


def _ready() -> int:
    return os.getpid()


def _grade(job: Job, root: str, device: str, within: str) -> Results | None:
    """grade-all's grading of one submission (its zygote started by batch._init_worker), or None when the notebook
    is not the bytes the client hashed, before or after grading: the client then grades it itself."""
    notebook = Path(job.notebook)
    if file_sha256(notebook, Path(within)) != job.sha256:
        return None
    result = grade_submission(job, root, device, junit=False, zygote=launcher.zygote())
    return result if file_sha256(notebook, Path(within)) == job.sha256 else None


Key = tuple[str, str, str]


def job_key(job: Job) -> Key:
    return job.student, job.assignment, Path(job.notebook).name


Graded = tuple[Key, str, str]  # a submission as graded: its key, the notebook's sha256, the release's fingerprint


def graded_as(job: Job) -> Graded:
    return job_key(job), job.sha256, job.fingerprint


GRADED_SHA256 = "graded_sha256"  # the autograded notebook's kit metadata: the sha256 of the notebook graded
GRADED_WITH = "graded_with"  # ... and the release and grader it was graded with (batch.fingerprint), if known


def graded_from(path: Path) -> tuple[str | None, str]:
    """The sha256 of the notebook an autograded copy (`path`) was graded from, and the release and grader it was
    graded with ("" when it does not say), as KitAutograde stamps them; (None, "") when it records neither."""
    try:
        kit = json.loads(path.read_text())["metadata"]["kit"]
        return str(kit[GRADED_SHA256]), str(kit.get(GRADED_WITH, ""))
    except (OSError, ValueError, KeyError, TypeError):
        return None, ""


def autograded(template: str, job: Job) -> bool:
    """Whether nbgrader's autograded copy of the submission was graded from these bytes with this release and
    grader."""
    path = Path(template.format(student=job.student, assignment=job.assignment), Path(job.notebook).name)
    return graded_from(path) == (job.sha256, job.fingerprint)


class Service:
    """One course's warm judge: a pool of judge processes, the submissions its clients handed to it, and the course's
    other submissions that no autograded copy records (graded while judges are idle, ahead of the run that will ask
    for them: `speculate`)."""

    def __init__(self, course: Path, where: Paths, workers: int, warm_seconds: float, warm: bool, lock: int) -> None:
        self.course, self.where, self.workers, self.warm_seconds, self.warm = course, where, workers, warm_seconds, warm
        self.lock_fd = lock  # its flock: the course's one service
        self.identity = identity()  # what its judge processes, started now, load
        self.lock = threading.RLock()
        self.held = 0  # submissions handed over and not yet taken, by every client
        self.running = 0  # gradings in the pool
        self.last = time.monotonic()
        self.stopping = False
        self.queue: deque[tuple[Job, str, str]] = deque()  # (job, device, within) to grade while judges are idle
        self.early: dict[Graded, cf.Future[Results | None]] = {}  # graded ahead of any client's asking
        self.asked: set[Graded] = set()  # handed over by a client: not graded ahead
        self.pool = self._pool()

    def _pool(self) -> cf.ProcessPoolExecutor:
        ctx = multiprocessing.get_context("spawn")
        pool = cf.ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init_judge,
                                      initargs=(ctx.Value("i", 0), self.warm, os.getpid()))
        for _ in range(self.workers):  # start every judge now, while nbgrader reads the course
            pool.submit(_ready)
        return pool

    def _run(self, job: Job, device: str, within: str) -> cf.Future[Results | None]:
        with self.lock:
            try:
                future = self.pool.submit(_grade, job, str(self.course), device, within)
            except BrokenProcessPool:  # a judge process died (killed, out of memory): fresh ones for what follows
                self.pool.shutdown(wait=False, cancel_futures=True)
                self.pool = self._pool()
                future = self.pool.submit(_grade, job, str(self.course), device, within)
            self.running += 1
        future.add_done_callback(self._done)
        return future

    def _done(self, _: cf.Future[Results | None]) -> None:
        """(In the pool's own thread, which must not submit: `watch` feeds the pool.)"""
        with self.lock:
            self.running -= 1
            self.last = time.monotonic()

    def _feed(self) -> None:
        """Grade the queue's next submissions while fewer gradings than judges run: a client's come first."""
        with self.lock:
            while self.running < self.workers and self.queue and not self.stopping:
                job, device, within = self.queue.popleft()
                if graded_as(job) not in self.asked and graded_as(job) not in self.early:
                    self.early[graded_as(job)] = self._run(job, device, within)

    def submit(self, job: Job, device: str, within: str) -> tuple[cf.Future[Results | None], bool]:
        """The grading of a client's job, and whether it was graded (or begun) ahead of the asking."""
        with self.lock:
            early = self.early.pop(graded_as(job), None)
            if early is not None and not (early.done() and (early.cancelled() or early.exception() is not None
                                                             or early.result() is None)):
                return early, True  # graded or begun ahead: a failed one is graded again
            self.asked.add(graded_as(job))
            return self._run(job, device, within), False

    def speculate(self, device: str, within: str, template: str) -> None:
        """Queue the course's submissions (in `within`, nbgrader's submitted/) that no autograded copy (`template`
        names its folder) records as graded from their bytes with today's release: the next nbgrader run (the next
        assignment's, Formgrader's next button) finds them graded."""
        prints: dict[str, str] = {}
        found = []
        # assignment by assignment, as an instructor runs `nbgrader autograde <assignment>` over them: the next
        # run's submissions are graded first
        for job in sorted(discover(Path(within)), key=lambda j: (j.assignment, j.student)):
            if job.refused or not job.notebook or job.assignment not in CHAPTERS:
                continue
            if job.assignment not in prints:
                prints[job.assignment] = fingerprint(self.course, job.assignment)
            job = dataclasses.replace(job, fingerprint=prints[job.assignment])
            if not autograded(template, job):
                found.append((job, device, within))
        with self.lock:
            queued = {graded_as(j) for j, _, _ in self.queue}
            self.queue.extend(q for q in found if graded_as(q[0]) not in queued)
        self._feed()

    def touch(self, held: int = 0) -> None:
        with self.lock:
            self.held += held
            self.last = time.monotonic()

    def serve(self, conn: Connection) -> None:
        """One client's requests: hello, grade (hand over jobs), take (one job's result), stop."""
        futures: dict[Key, tuple[tuple[str, str], cf.Future[Results | None], bool]] = {}
        try:
            while True:
                request = conn.recv()
                self.touch()
                op = request[0]
                if op == "hello":
                    conn.send(("hello", {**self.identity, "pid": os.getpid(), "workers": self.workers,
                                         "course": str(self.course)}))
                elif op == "grade":
                    _, jobs, device, within, template, warm_seconds = request
                    self.warm_seconds = float(warm_seconds)
                    for job in jobs:
                        old = futures.pop(job_key(job), None)
                        if old is not None:
                            old[1].cancel()
                            self.touch(-1)
                        future, early = self.submit(job, device, within)
                        futures[job_key(job)] = ((job.sha256, job.fingerprint), future, early)
                        self.touch(1)
                    conn.send(("accepted", len(jobs)))
                    if template:  # KitAutograde.grade_course_ahead
                        threading.Thread(target=self.speculate, args=(device, within, template), daemon=True).start()
                elif op == "take":
                    handed = futures.pop(request[1], None)
                    if handed is None:
                        conn.send(("missing", None, None, False))
                        continue
                    graded, future, early = handed
                    try:
                        result = future.result()
                    except BaseException as e:  # a judge died, or the kit raised: the client grades it
                        conn.send(("error", graded, f"{type(e).__name__}: {e}", early))
                    else:
                        conn.send(("result", graded, result, early))
                    finally:
                        self.touch(-1)
                elif op == "stop":
                    conn.send(("stopping", os.getpid()))
                    self.stop("asked to stop")
                    return
        except (EOFError, OSError):
            pass  # the client is gone
        finally:
            for _, future, early in futures.values():
                if not early:
                    future.cancel()
            self.touch(-len(futures))
            with contextlib.suppress(OSError):
                conn.close()

    def watch(self) -> None:
        while True:
            time.sleep(0.2)
            self._feed()
            with self.lock:
                idle = self.held <= 0 and self.running <= 0 and time.monotonic() - self.last > self.warm_seconds
            if idle:
                self.stop(f"idle for {self.warm_seconds:g} s", idle=True)
                return

    def stop(self, why: str, idle: bool = False) -> None:
        """Stop taking clients (the socket is removed at once), stop the judges, exit."""
        with self.lock:
            if self.stopping:
                return
            self.stopping = True
        for path in (self.where.socket, self.where.pid):
            with contextlib.suppress(OSError):
                path.unlink()
        os.close(self.lock_fd)  # no client reaches it now: a fresh one may start while its judges finish
        print(f"{time.strftime('%H:%M:%S')} warm judge {os.getpid()} of {self.course}: {why}; exiting",
              file=sys.stderr, flush=True)
        self.pool.shutdown(wait=False, cancel_futures=True)
        if not idle:  # a stale or stopped judge grades nothing more: its processes stop now, running or not
            for process in list((getattr(self.pool, "_processes", None) or {}).values()):
                with contextlib.suppress(Exception):
                    process.terminate()
        self.pool.shutdown(wait=True)
        os._exit(0)  # the lock is released with the process; the accepting thread goes with it


def _detach() -> None:
    """Become a daemon: the starter's child exits at once (so the starter reaps it), its child leads a session."""
    if os.fork():
        os._exit(0)
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)


def serve(course: Path, where: Paths, workers: int, warm_seconds: float, warm: bool) -> None:
    """Run the course's service until it is idle or stopped; returns at once if one already runs."""
    lock = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # another client started it first: both use that one
    with contextlib.suppress(FileNotFoundError):
        where.socket.unlink()  # a dead service's
    listener = Listener(str(where.socket), "AF_UNIX", authkey=authkey(where.folder))
    os.chmod(where.socket, 0o600)
    where.pid.write_text(f"{os.getpid()}\n")
    service = Service(course, where, workers, warm_seconds, warm, lock)
    print(f"{time.strftime('%H:%M:%S')} warm judge {os.getpid()} of {course}: {workers} judge processes, "
          f"idle exit after {warm_seconds:g} s", file=sys.stderr, flush=True)
    threading.Thread(target=service.watch, daemon=True).start()
    while True:
        try:
            conn = listener.accept()
        except Exception:  # a client that failed the key, or hung up: not the service's end
            continue
        threading.Thread(target=service.serve, args=(conn,), daemon=True).start()


# Run as `python -c BOOTSTRAP <args>`: the package the client imported, whatever the working folder.
BOOTSTRAP = ("import sys; sys.path.insert(0, {path!r}); from autograder.course.nbgrader.warm import main; "
             "main(sys.argv[1:])")


def command(course: Path, workers: int, warm_seconds: float, warm: bool, bootstrap: str = BOOTSTRAP) -> list[str]:
    return [sys.executable, "-c", bootstrap.format(path=str(PACKAGE.parent)), "serve", str(course.resolve()),
            str(workers), repr(float(warm_seconds)), "warm" if warm else "cold"]


def main(argv: list[str]) -> None:
    if argv[:1] == ["serve"]:
        course, workers, warm_seconds, warm = Path(argv[1]), int(argv[2]), float(argv[3]), argv[4] == "warm"
        where = paths(course, private_folder())
        _detach()
        serve(course, where, workers, warm_seconds, warm)
    elif argv[:1] == ["stop"] and len(argv) == 2:
        print("stopped" if stop(Path(argv[1])) else "no warm judge of that course")
    elif argv == ["stop-all"]:
        print(f"stopped {stop_all()}")
    else:
        sys.exit("usage: python -m autograder.course.nbgrader.warm stop <course> | stop-all")


# -- the client ---------------------------------------------------------------------------------------------------


def _ask(conn: Connection, request: tuple[Any, ...], seconds: float) -> tuple[Any, ...]:
    try:
        conn.send(request)
        if not conn.poll(seconds):
            raise Unavailable(f"no answer to {request[0]} within {seconds:g} s")
        reply: tuple[Any, ...] = conn.recv()
    except (EOFError, OSError) as e:
        raise Unavailable(f"it is gone ({type(e).__name__}{': ' if str(e) else ''}{e})") from None
    return reply


def _connect(where: Paths, key: bytes) -> Connection | None:
    """A connection to the course's service, or None when none listens."""
    try:
        return Client(str(where.socket), "AF_UNIX", authkey=key)
    except (FileNotFoundError, ConnectionRefusedError):
        return None
    except (OSError, EOFError, multiprocessing.AuthenticationError) as e:
        raise Unavailable(f"its socket {where.socket} refused this client ({type(e).__name__}: {e})") from None


def _differs(theirs: dict[str, Any]) -> str:
    mine = identity()
    return "; ".join(f"{k} {theirs.get(k)!s:.16} there, {v:.16} here" for k, v in mine.items() if theirs.get(k) != v)


@dataclass
class Warm:
    """One nbgrader run's connection to its course's warm judge."""

    conn: Connection
    hello: dict[str, Any]
    how: str  # "found warm", "started", "started in place of a stale one (...)"

    @property
    def pid(self) -> int:
        return int(self.hello["pid"])

    def submit(self, jobs: list[Job], device: str, within: Path, autograded: str, warm_seconds: float) -> None:
        """Hand `jobs` over; `within`: nbgrader's submitted/ folder, `autograded`: its autograded/<student>/
        <assignment> folders as a template of {student} and {assignment}, with which the service grades the course's
        other submissions ahead, those no autograded copy records ("": it grades only `jobs`)."""
        reply = _ask(self.conn, ("grade", jobs, device, str(within), autograded, warm_seconds), ANSWER_SECONDS)
        if reply[:1] != ("accepted",):
            raise Unavailable(f"it refused the submissions ({reply[0]})")

    def take(self, job: Job, seconds: float = TAKE_SECONDS) -> tuple[Results | None, str]:
        """(the result graded from the very bytes of `job` with its release and grader, "" or "ahead" when it was
        graded before this run asked) or (None, why not); Unavailable when the service failed."""
        op, graded, result, early = _ask(self.conn, ("take", job_key(job)), seconds)
        if op == "missing":
            return None, "not handed to the warm judge"
        if graded != (job.sha256, job.fingerprint):
            return None, "the warm judge graded another version of it (resubmitted, or another release)"
        if op == "error":
            return None, f"the warm judge failed on it ({result})"
        if result is None:
            return None, "its notebook changed while the warm judge graded it"
        return result, "ahead" if early else ""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()


def _start(course: Path, where: Paths, workers: int, warm_seconds: float, warm: bool) -> None:
    fd = os.open(where.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        starter = subprocess.Popen(command(course, workers, warm_seconds, warm), cwd=where.folder,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fd,
                                   start_new_session=True)
    finally:
        os.close(fd)
    try:
        starter.wait(timeout=START_SECONDS)  # its child, the service, goes on alone
    except subprocess.TimeoutExpired:
        starter.kill()
        starter.wait()
        raise Unavailable(f"it did not start within {START_SECONDS:g} s (its log: {where.log})") from None
    if starter.returncode:
        raise Unavailable(f"it did not start (exit {starter.returncode}; its log: {where.log})")


def _hello(conn: Connection) -> dict[str, Any]:
    op, hello = _ask(conn, ("hello",), ANSWER_SECONDS)
    if op != "hello" or not isinstance(hello, dict):
        raise Unavailable(f"it answered hello with {op!r}")
    return hello


def _stop(conn: Connection) -> None:
    with contextlib.suppress(Unavailable):
        _ask(conn, ("stop",), ANSWER_SECONDS)
    with contextlib.suppress(OSError):
        conn.close()


def connect(course: Path, workers: int, warm_seconds: float, warm: bool,
            log: Callable[[str], None] = lambda _: None) -> Warm:
    """The course's warm judge: found warm, or started (in place of one that grades with another kit, which is
    stopped first, or of one that went idle as this client came); Unavailable when none can be used."""
    where = paths(course, private_folder())
    key = authkey(where.folder)
    how = "started"
    conn = _connect(where, key)
    if conn is not None:
        try:
            hello = _hello(conn)
        except Unavailable:  # it exited (idle) as this client came: a fresh one
            conn.close()
        else:
            stale = _differs(hello)
            if not stale:
                return Warm(conn, hello, "found warm")
            log(f"the warm judge of this course (pid {hello.get('pid')}) grades with another kit ({stale}): "
                "stopping it and starting a fresh one")
            _stop(conn)
            how = f"started in place of a stale one (pid {hello.get('pid')}: {stale})"
        if not _wait_gone(where, ANSWER_SECONDS):
            raise Unavailable("the warm judge there did not let go of the course")
    _start(course, where, workers, warm_seconds, warm)
    deadline = time.monotonic() + START_SECONDS
    while (conn := _connect(where, key)) is None:
        if time.monotonic() > deadline:
            raise Unavailable(f"it did not listen within {START_SECONDS:g} s (its log: {where.log})")
        time.sleep(0.05)
    hello = _hello(conn)
    stale = _differs(hello)
    if stale:
        _stop(conn)
        raise Unavailable(f"the warm judge started grades with another kit than this process ({stale})")
    return Warm(conn, hello, how)


def stop(course: Path, seconds: float = ANSWER_SECONDS) -> bool:
    """Stop the course's warm judge, if one runs (waits until it has let go of the course); whether one ran."""
    try:
        where = paths(course, private_folder())
        conn = _connect(where, authkey(where.folder))
    except Unavailable:
        return False
    if conn is None:
        return False
    _stop(conn)
    return _wait_gone(where, seconds)


def stop_all(folder: Path | None = None, seconds: float = ANSWER_SECONDS) -> int:
    """Stop every warm judge of the folder (this user's private folder by default); one that does not stop when
    asked is killed with its judge processes. How many there were."""
    folder = private_folder() if folder is None else folder
    if not folder.is_dir():
        return 0
    try:
        key: bytes | None = authkey(folder)
    except Unavailable:
        key = None  # a key spoilt: the services are killed
    count = 0
    for lock in sorted(folder.glob("*.lock")):
        where = Paths(folder, lock.stem)
        if not running(where):
            continue
        count += 1
        with contextlib.suppress(Unavailable):
            conn = _connect(where, key) if key is not None else None
            if conn is not None:
                _stop(conn)
        if not _wait_gone(where, seconds):
            with contextlib.suppress(OSError, ValueError):
                os.killpg(int(where.pid.read_text()), signal.SIGKILL)  # the lock says that pid is the service
            _wait_gone(where, seconds)
    return count


def status(course: Path) -> dict[str, Any] | None:
    """The hello of the course's warm judge, None when none runs (for the tests and `stop`)."""
    try:
        where = paths(course, private_folder())
        conn = _connect(where, authkey(where.folder))
    except Unavailable:
        return None
    if conn is None:
        return None
    try:
        return _hello(conn)
    except Unavailable:
        return None
    finally:
        conn.close()


if __name__ == "__main__":
    main(sys.argv[1:])

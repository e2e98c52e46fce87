"""What a student handed in: the student's own regular files, never a link or a special file.

Students hand in through channels that keep symbolic links (a git repository, a zip or tar the instructor
unpacks, an LMS download). Followed, a link hands in the instructor's answer key, a classmate's notebook or a file
of the machine (/proc/self/environ, the gradebook), and a FIFO hangs whatever reads it. So every file the kit
reads, hashes or copies from a submission is opened here, and only here: each component from a trusted folder
(the course's submitted/ folder, or the folder of a notebook given to `grade`) down to the file is looked at with
lstat and opened without following links (O_NOFOLLOW, each folder by the descriptor of the one above, so nothing
can be swapped in between); the file is opened with O_NONBLOCK too (a FIFO cannot hang the open) and must be a
regular file (fstat). What is copied is bounded in size.

This module imports nothing of the kit but untrusted.py: grade-all's coordinator uses it without torch.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from autograder.judging.untrusted import safe_name

MAX_COPIED = 64 << 10  # timestamp.txt and submission_secret.txt hold a line each


class NotOwnFile(Exception):
    """A path in a submission that is not the student's own file (a link, a FIFO...): the message says which."""


def kind(mode: int) -> str:
    """What a file of this mode is, in words."""
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a folder" if stat.S_ISDIR(mode) else "a file"


def refusal(name: str, mode: int, wanted: str = "file") -> str:
    """The row's message for a path that is not what the student hands in."""
    return (f"{safe_name(name)} is {kind(mode)}, not a {wanted} the student handed in: it is not read. Hand in "
            f"the {wanted} itself (a zip or a repository can hold links; upload the notebook file).")


@contextlib.contextmanager
def open_own(path: Path, within: Path | None = None) -> Iterator[BinaryIO]:
    """`path` opened for reading, when every component of it below `within` (default: its folder) is a real folder
    and the last a regular file; NotOwnFile otherwise (a link, a FIFO, a device, a path outside `within`), OSError
    when it cannot be opened (missing, not readable)."""
    within = path.parent if within is None else within
    try:
        parts = path.relative_to(within).parts
    except ValueError:
        raise NotOwnFile(f"{safe_name(str(path))} is outside {safe_name(str(within))}: not read") from None
    if not parts or any(p in (".", "..") for p in parts):
        raise NotOwnFile(f"{safe_name(str(path))} is not a file inside {safe_name(str(within))}: not read")
    fd = os.open(within, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the trusted folder: links allowed there
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode  # lstat: nothing opened that is not ours
            if not (stat.S_ISREG(mode) if last else stat.S_ISDIR(mode)):
                raise NotOwnFile(refusal(name, mode, "file" if last else "folder"))
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                inner = os.open(name, flags, dir_fd=fd)
            except OSError:  # swapped for a link or a FIFO since the lstat
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                raise NotOwnFile(refusal(name, mode, "file" if last else "folder")) from None
            os.close(fd)
            fd = inner
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotOwnFile(refusal(parts[-1], mode))
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        yield f


def read_own(path: Path, limit: int, within: Path | None = None) -> bytes:
    """At most `limit` + 1 bytes of the student's own file (open_own): one more than `limit` says it is larger."""
    with open_own(path, within) as f:
        return f.read(limit + 1)


def copy_own(path: Path, dest: Path, within: Path | None = None, limit: int = MAX_COPIED) -> None:
    """Copy the student's own file (open_own) of at most `limit` bytes to `dest`, a new file (never one that
    exists, nor through a link) that only its owner reads: what a student hands in is never published by the
    kit's copy. NotOwnFile when it is not the student's own or is larger."""
    data = read_own(path, limit, within)
    if len(data) > limit:
        raise NotOwnFile(f"{safe_name(path.name)} is larger than {limit >> 10} KiB: not copied")
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)

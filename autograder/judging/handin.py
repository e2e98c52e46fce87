"""What a student handed in: the student's own regular files, never a link or a special file.

Students hand in through channels that keep symbolic links (a git repository, a zip or tar the instructor
unpacks, an LMS download). Followed, a link hands in the instructor's answer key, a classmate's notebook or a file
of the machine (/proc/self/environ, the gradebook), and a FIFO hangs whatever reads it. So every file the kit
reads, hashes or copies from a submission is opened here, and only here: each component from a trusted folder
(the course's submitted/ folder, or the folder of a notebook given to `grade`) down to the file is looked at with
lstat and opened without following links (O_NOFOLLOW, each folder by the descriptor of the one above, so nothing
can be swapped in between); the file is opened with O_NONBLOCK too (a FIFO cannot hang the open) and must be a
regular file (fstat). What is copied is bounded in size.

A hard link is no link on the way: it is the file itself under a second name, and a tar unpacked in submitted/
makes one from a member of type "link" (the answer key's name, a classmate's notebook). No file system says
which name came first, so a file with several names (st_nlink > 1) is the student's own only when every one of
them is in the student's own folder (the first folder below the trusted one: submitted/<student>, or the trusted
folder itself for a file directly in it), which a bounded walk of that folder counts. Otherwise it is refused, and
so is the classmate's file a link was made to: both rows say so until the instructor removes the extra name.

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
MAX_WALKED = 10_000  # entries of a student's folder looked at to find the names of a hard-linked file


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


def _names_within(folder: Path, st: os.stat_result) -> int:
    """How many names the file `st` has in `folder` and below (links not followed); MAX_WALKED entries at most,
    so a folder of a million files costs its student the row, not the batch its time."""
    found, walked, todo = 0, 0, [folder]
    while todo and walked < MAX_WALKED:
        with os.scandir(todo.pop()) as entries:
            for e in entries:
                walked += 1
                if e.is_dir(follow_symlinks=False):
                    todo.append(Path(e.path))
                elif e.inode() == st.st_ino and e.stat(follow_symlinks=False).st_dev == st.st_dev:
                    found += 1
    return found


def _hard_link(path: Path, owner: Path, st: os.stat_result) -> str:
    """Why the regular file `st` at `path` is not the student's own for its other names, or ""."""
    if st.st_nlink <= 1:
        return ""
    try:
        if _names_within(owner, st) >= st.st_nlink:
            return ""
    except OSError as e:  # a tree deeper than a path can name, a folder not readable
        return (f"{safe_name(path.name)} is a hard link, and {safe_name(owner.name)}/ could not be searched for its "
                f"other names ({e.strerror}): it is not read as the student's own.")
    return (f"{safe_name(path.name)} is a hard link: the same file has {st.st_nlink} names, some outside "
            f"{safe_name(owner.name)}/ (the answer key's, a classmate's?), so it is not read as the student's own. "
            f"`find <course> -samefile {safe_name(str(path))}` lists them; remove the names that are not this "
            "student's (a tar unpacked into submitted/ makes them).")


@contextlib.contextmanager
def open_own(path: Path, within: Path | None = None) -> Iterator[BinaryIO]:
    """`path` opened for reading, when every component of it below `within` (default: its folder) is a real folder
    and the last a regular file with no name outside the student's folder (a hard link, see the module); NotOwnFile
    otherwise (a link, a FIFO, a device, a path outside `within`), OSError when it cannot be opened (missing, not
    readable)."""
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
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotOwnFile(refusal(parts[-1], st.st_mode))
        shared = _hard_link(path, within / parts[0] if len(parts) > 1 else within, st)
        if shared:
            raise NotOwnFile(shared)
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        yield f


def own_folder(folder: Path, within: Path) -> None:
    """NotOwnFile naming the first entry of `folder` (a submission, every file of it, at any depth) that is not
    the student's own: a link, a special file, a file with a name outside the student's folder; and for a folder
    on the way from `within` that is a link. nbgrader's autograde copies every file of a submission into
    autograded/ following links (the kit has the submission refused first: course/nbgrader). At most MAX_WALKED
    entries are looked at; more are refused, unread."""
    parts = folder.relative_to(within).parts
    current = within
    for name in parts:
        current = current / name
        mode = os.lstat(current).st_mode
        if not stat.S_ISDIR(mode):
            raise NotOwnFile(refusal(name, mode, "folder"))
    owner = within / parts[0] if parts else within
    walked, todo = 0, [folder]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for e in entries:
                walked += 1
                if walked > MAX_WALKED:
                    raise NotOwnFile(f"{safe_name(str(folder.relative_to(within)))} holds more than {MAX_WALKED} "
                                     "files and folders: not read")
                st = e.stat(follow_symlinks=False)
                shown = safe_name(str(Path(e.path).relative_to(folder)))
                if stat.S_ISDIR(st.st_mode):
                    todo.append(Path(e.path))
                elif not stat.S_ISREG(st.st_mode):
                    raise NotOwnFile(refusal(shown, st.st_mode))
                elif shared := _hard_link(Path(e.path), owner, st):
                    raise NotOwnFile(shared)


def read_own(path: Path, limit: int, within: Path | None = None) -> bytes:
    """At most `limit` + 1 bytes of the student's own file (open_own): one more than `limit` says it is larger."""
    with open_own(path, within) as f:
        return f.read(limit + 1)


def readers(path: Path, within: Path) -> int:
    """The mode of what the kit writes from the student's file or folder at `path` (a copy, a feedback page, the
    answers kept): read and write for its owner; read for the group, and for others, only where they can read
    `path`, through every folder from `within` down (a private submission stays private). Never more than the
    0644 of nbgrader's own generate_feedback: nothing executable, nothing another user writes. Give it to
    os.open, which takes the umask off too."""
    mode, current = 0o644, within
    for name in ("", *path.relative_to(within).parts):
        current = current / name if name else current
        try:
            st = os.lstat(current)
        except OSError:
            return 0o600
        if stat.S_ISDIR(st.st_mode) and current != path:
            mode &= 0o600 | (st.st_mode & 0o011) << 2  # a folder lets them through with its x bits
        elif stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            mode &= 0o600 | st.st_mode  # the file itself (or the folder written from): its r bits
        else:
            return 0o600
    return mode


def write_private(dest: Path, data: bytes, mode: int) -> None:
    """`data` into `dest`, replaced whole (a temporary file beside it, renamed), created with `mode` (readers):
    a file that was readable by all and is written again for a submission made private becomes private."""
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, stat.S_IMODE(os.stat(tmp).st_mode) & mode)  # a leftover temporary file kept its old mode
    os.replace(tmp, dest)


def copy_own(path: Path, dest: Path, within: Path | None = None, limit: int = MAX_COPIED) -> None:
    """Copy the student's own file (open_own) of at most `limit` bytes to `dest`, a new file (never one that
    exists, nor through a link) no more readable than `path` (readers): what a student hands in is never
    published by the kit's copy. NotOwnFile when it is not the student's own or is larger."""
    within = path.parent if within is None else within
    data = read_own(path, limit, within)
    if len(data) > limit:
        raise NotOwnFile(f"{safe_name(path.name)} is larger than {limit >> 10} KiB: not copied")
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, readers(path, within))
    with os.fdopen(fd, "wb") as f:
        f.write(data)

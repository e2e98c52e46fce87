"""What a student hands in is their own files, and its shape is hostile data like their code: a path the kit reads,
hashes or copies must be a regular file reached from the student's folder with no link on the way. A link (to
the instructor's answer key, a classmate's notebook, /proc or /etc), a FIFO (which would block the reader), a
device or a socket is refused with a reason, never opened in a way that follows it or waits on it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from autograder.judging.untrusted import one_line

NOT_HANDED_IN = "not a file the student handed in"
KINDS = {stat.S_IFLNK: "a link", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
         stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder"}


def refused(path: Path, folder: Path | None = None) -> str | None:
    """Why the kit must not read `path` as the student's file, or None. With `folder` (the student's own folder,
    which holds `path`), every folder between it and the file is checked too: none may be a link."""
    found = offending(path, folder)
    if found is None:
        return None
    part, kind = found
    return f"{one_line(part.name)}: {kind}, {NOT_HANDED_IN}"


def offending(path: Path, folder: Path | None = None) -> tuple[Path, str] | None:
    """The first part of `path` (from `folder` down, or the file alone) that is no folder or regular file of the
    student's own, and what it is; None when there is none."""
    chain = [path]
    if folder is not None:
        try:
            inner = path.relative_to(folder)
        except ValueError:
            return path, "outside the student's folder"
        chain = [folder / Path(*inner.parts[:i]) for i in range(1, len(inner.parts) + 1)]
    for i, part in enumerate(chain):
        try:
            mode = os.lstat(part).st_mode
        except OSError as e:
            return part, f"unreadable ({e.strerror})"
        last = i == len(chain) - 1
        kind = stat.S_IFMT(mode)
        if kind == stat.S_IFLNK or (last and kind != stat.S_IFREG) or (not last and kind != stat.S_IFDIR):
            return part, KINDS.get(kind, "a special file")
    return None


def read_handed_in(path: Path, limit: int) -> bytes:
    """At most `limit` + 1 bytes of `path`, opened without following a link and without waiting on a FIFO; OSError
    with the reason when it is no regular file of its own (refused says why in words)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, refused(path) or NOT_HANDED_IN)
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)

"""Landlock: the kernel's unprivileged filesystem allow-list (Linux 5.13+), through its three syscalls.

No maintained Python binding exists that runs without extra packages on the
GPU runners (torch, numpy and pytest only), so the few structs are packed
here. A process restricts itself; the restriction is inherited by every
descendant and can never be lifted.
"""

from __future__ import annotations

import ctypes
import os
import struct

_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446  # the same numbers on every architecture
_VERSION_FLAG = 1
_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is missing or disabled."""
    version = _libc().syscall(_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION_FLAG))
    return max(int(version), 0)


def handled_rights(version: int) -> int:
    rights = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    if version >= 5:
        rights |= IOCTL_DEV
    return rights


def restrict(read_only: list[str], writable: list[str]) -> None:
    """Allow only reads under `read_only` and everything under `writable`; on ABI 4+ no TCP at all,
    on ABI 6+ no signals or abstract unix sockets to processes outside this domain.

    The caller must have set no_new_privs. Raises OSError if any step fails.
    """
    libc = _libc()
    version = abi()
    if version < 1:
        raise OSError("Landlock is not available")
    everything = handled_rights(version)
    net = 0b11 if version >= 4 else 0  # bind and connect TCP: handled, never allowed
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0
    attr = struct.pack("<QQQ", everything, net, scoped)
    size = 8 if version < 4 else (16 if version < 6 else 24)
    buf = ctypes.create_string_buffer(attr[:size], size)
    ruleset = libc.syscall(_CREATE, buf, ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for paths, rights in ((read_only, READ & everything), (writable, everything)):
            for path in paths:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                try:
                    allowed = rights if os.path.isdir(path) else rights & FILE_RIGHTS
                    rule = ctypes.create_string_buffer(struct.pack("<Qi", allowed, fd), 12)
                    if libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_PATH_BENEATH), rule,
                                    ctypes.c_uint32(0)) != 0:
                        raise OSError(ctypes.get_errno(), f"landlock_add_rule {path} failed")
                finally:
                    os.close(fd)
        if libc.syscall(_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)

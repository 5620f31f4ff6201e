"""Errno numbers <-> symbolic names, including kernel-internal codes (>= 512)."""

from __future__ import annotations

import errno as _errno

# Kernel-internal error codes that never reach user space through syscalls but do show up
# as return values of in-kernel functions (include/linux/errno.h).
_KERNEL_ONLY = {
    512: "ERESTARTSYS",
    513: "ERESTARTNOINTR",
    514: "ERESTARTNOHAND",
    515: "ENOIOCTLCMD",
    516: "ERESTART_RESTARTBLOCK",
    517: "EPROBE_DEFER",
    518: "EOPENSTALE",
    519: "ENOPARAM",
    521: "EBADHANDLE",
    522: "ENOTSYNC",
    523: "EBADCOOKIE",
    524: "ENOTSUPP",
    525: "ETOOSMALL",
    526: "ESERVERFAULT",
    527: "EBADTYPE",
    528: "EJUKEBOX",
    529: "EIOCBQUEUED",
    530: "ERECALLCONFLICT",
}

_BY_NUMBER: dict[int, str] = {**dict(_errno.errorcode), **_KERNEL_ONLY}
# errno.errorcode maps aliases (EWOULDBLOCK/EAGAIN, EDEADLOCK/EDEADLK, ENOTSUP/EOPNOTSUPP) to
# one name; pin the names users grep for.
_BY_NUMBER[_errno.EAGAIN] = "EAGAIN"
_BY_NUMBER[_errno.EDEADLK] = "EDEADLK"
_BY_NUMBER[_errno.EOPNOTSUPP] = "EOPNOTSUPP"
_BY_NAME: dict[str, int] = {name: num for num, name in _BY_NUMBER.items()}
_BY_NAME.update({"EWOULDBLOCK": _errno.EAGAIN, "ENOTSUP": _errno.EOPNOTSUPP})

MAX_ERRNO = 4095  # the kernel's IS_ERR_VALUE range: -4095..-1


def errno_name(ret: int) -> str | None:
    """Symbolic name for a negative return value in the errno range, else None."""
    if -MAX_ERRNO <= ret < 0:
        return _BY_NUMBER.get(-ret, f"E{-ret}")
    return None


def errno_number(name: str) -> int:
    """Positive errno number for a symbolic name ("EACCES" -> 13). Raises KeyError."""
    if name.startswith("E") and name[1:].isdigit():
        return int(name[1:])
    return _BY_NAME[name]


def is_errno_name(name: str) -> bool:
    try:
        errno_number(name)
    except KeyError:
        return False
    return True

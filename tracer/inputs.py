"""Opening the files tracebase reads: regular files only, refused before a byte is read.

A FIFO given as an input would block ``open`` until some writer came (the command hangs with
no message), and ``/dev/zero`` would be read until memory ran out. Inputs are opened
non-blocking, checked with ``fstat`` on the open descriptor (no race with a rename), and only
then read.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from typing import BinaryIO

from tracer.errors import TracebaseError

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """'a directory', 'a FIFO (named pipe)', ... for a stat mode: what "found" names."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def open_regular(path: str | os.PathLike, expected: str) -> BinaryIO:
    """`path` opened for binary reading when it is a regular file (symlinks followed).

    Raises FileNotFoundError, PermissionError and other OSErrors as ``open`` does (callers
    word them), IsADirectoryError for a directory, and TracebaseError "PATH: expected
    `expected`, found a FIFO (named pipe)" for anything else that is not a regular file.
    """
    source = os.fspath(path)
    fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), source)
        if not stat.S_ISREG(mode):
            raise TracebaseError(f"{os.fsdecode(source)}: expected {expected}, found {file_kind(mode)}")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_bytes(path: str | os.PathLike, expected: str) -> bytes:
    """The whole content of a regular file (see `open_regular`)."""
    with open_regular(path, expected) as fh:
        return fh.read()


def read_regular_text(path: str | os.PathLike, expected: str) -> str:
    """The whole content of a regular file as UTF-8 text (UnicodeDecodeError as ``read_text``)."""
    return read_regular_bytes(path, expected).decode()

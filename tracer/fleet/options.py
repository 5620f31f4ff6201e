"""Checks of the fleet tracer's options, done before anything is created or loaded.

`tracer run` must refuse a bad spool, textfile, metadata file, control file, probe set or host
name with one line naming the flag, what was expected and what was found, before it makes a
directory, mounts tracefs or compiles a program: a daemon that dies after a half-done start
leaves debris, and one that starts with a typo'd --prom path silently exports nothing.
These functions only look (stat, access); they never write.
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path

from tracer.atomic import unwritable_reason
from tracer.errors import TracebaseError
from tracer.inputs import file_kind

# A host name is a spool directory and a dataset partition value: one safe path component.
# Letters, digits, '.', '-', '_' (what hostnames and k8s node names use); not '.' or '..', no
# leading '.' (readers skip hidden entries: the host's snapshots would be invisible).
# \Z, not $: "$" also matches before a trailing newline, and "gpu1\n" is no host name
# At most 250 characters: a dataset's partition directory is "host=<name>", and a file name
# holds 255 bytes (a 253-character DNS name made ingest fail for the whole spool, every run)
HOST_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,249}\Z")
HOST_RULE = ("a host name of letters, digits, '.', '-', '_' (one path component, not starting with '.', "
             "at most 250 characters)")


def check_host(host: str, flag: str = "--host") -> str:
    if not isinstance(host, str) or not HOST_NAME.match(host) or host in (".", ".."):
        raise TracebaseError(f"{flag}: expected {HOST_RULE}, found {host!r}")
    return host


def check_positive(value: float, flag: str, unit: str = "s") -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise TracebaseError(f"{flag}: expected a positive finite duration, found {value}{unit}")
    return value


# A snapshot is a directory of two fsynced Parquet files: 1ms intervals were accepted and wrote
# as fast as the disk allowed (hundreds of directories a second, each a file for ingest to read).
# Ten a second is the most any reader or test needs. Past an hour, an interval's call trees wait
# in memory for the whole hour and the 5-minute ingest sees the host as silent.
MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 3600.0


def check_interval(value: float, flag: str = "-i/--interval") -> float:
    check_positive(value, flag)
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise TracebaseError(f"{flag}: expected a snapshot interval from {MIN_INTERVAL_S * 1000:g}ms to "
                             f"{MAX_INTERVAL_S / 3600:g}h, found {value:g}s")
    return value


def check_int_range(value: int, flag: str, lo: int, hi: int, what: str) -> int:
    if value < lo:
        raise TracebaseError(f"{flag}: expected {what}, found {value}")
    if value > hi:
        raise TracebaseError(f"{flag}: expected {what} of at most {hi}, found {value}")
    return value


def _describe(path: Path) -> str:
    """What is at path, for 'found ...'."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return f"no {path}"
    except OSError as exc:
        return f"{path} ({exc.strerror})"
    if stat.S_ISDIR(mode):
        return f"a directory {path}"
    if stat.S_ISREG(mode):
        return f"a file {path}"
    return f"{file_kind(mode)} {path}"  # "a FIFO (named pipe) PATH", as every input check words it


def _nearest_existing(path: Path, flag: str) -> Path:
    """The deepest existing ancestor of path (path itself if it exists); must be a directory
    unless it is path itself."""
    current = path
    while True:
        try:
            os.stat(current)
            return current
        except FileNotFoundError:
            if current.parent == current:
                return current
            current = current.parent
        except NotADirectoryError:
            current = current.parent
        except OSError as exc:
            raise TracebaseError(f"{flag}: expected an accessible path, found {current} ({exc.strerror})") from None


def check_output_dir(path: Path, flag: str) -> None:
    """A directory tracebase writes into: an existing writable directory, or one it can create
    (its nearest existing ancestor is a writable directory)."""
    existing = _nearest_existing(path, flag)
    if not existing.is_dir():
        raise TracebaseError(f"{flag}: expected a directory, found {_describe(existing)}"
                             + ("" if existing == path else f" in the way of {path}"))
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "a writable directory" if existing == path else f"a writable directory to create {path} in"
        raise TracebaseError(f"{flag}: expected {what}, found {existing} not writable "
                             f"({unwritable_reason(existing)})")


def check_output_file(path: Path, flag: str, suffix: str | None = None, why: str = "") -> None:
    """A file tracebase (re)writes atomically: its directory must exist and be writable (the
    temp file is made beside it), and the path must not be a directory or a special file."""
    if suffix is not None and path.suffix != suffix:
        raise TracebaseError(f"{flag}: expected a file name ending in {suffix}{why}, found {str(path)!r}")
    if path.name in ("", ".", ".."):
        raise TracebaseError(f"{flag}: expected a file name, found {str(path)!r}")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError:
        raise TracebaseError(f"{flag}: expected a file in a directory, found {_describe(_nearest_existing(path, flag))} "
                             f"in the way of {path}") from None
    except OSError as exc:
        raise TracebaseError(f"{flag}: expected an accessible file, found {path} ({exc.strerror})") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise TracebaseError(f"{flag}: expected a file name, found {_describe(path)}")
    parent = path.parent
    if not parent.is_dir():
        raise TracebaseError(f"{flag}: expected a file in an existing directory, found {_describe(parent)}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise TracebaseError(f"{flag}: expected a writable directory for {path.name}, found {parent} not writable "
                             f"({unwritable_reason(parent)})")


def check_input_file(path: Path, flag: str) -> None:
    """A file tracebase reads: exists, a regular file, readable."""
    try:
        mode = path.stat().st_mode
    except OSError:
        raise TracebaseError(f"{flag}: expected a readable file, found {_describe(path)}") from None
    if not stat.S_ISREG(mode):
        raise TracebaseError(f"{flag}: expected a readable file, found {_describe(path)}")
    if not os.access(path, os.R_OK):
        raise TracebaseError(f"{flag}: expected a readable file, found {path} not readable (permission denied)")


def check_parent_dir(path: Path, flag: str) -> None:
    """A path tracebase watches (the control file): its directory must exist; it must not be a
    directory itself."""
    if path.is_dir():
        raise TracebaseError(f"{flag}: expected a file name, found {_describe(path)}")
    if not path.parent.is_dir():
        raise TracebaseError(f"{flag}: expected a file in an existing directory, found {_describe(path.parent)}")


"""User-facing errors.

Anything the user can fix (bad input file, bad flag, missing privilege) is raised as a
TracebaseError subclass; the CLIs print its message on one line and exit with status 2.
Everything else is a bug and is allowed to show a traceback.
"""

from __future__ import annotations

import os
import stat


class TracebaseError(Exception):
    """An error caused by input or environment, reported without a traceback (exit 2)."""

    exit_status = 2

    def __reduce__(self):
        # A process pool's worker (ingest -j, simulate --workers) sends its exception to the
        # parent by pickling it; the default re-calls __init__ with `args` (the message alone),
        # which fails for subclasses whose __init__ takes the parts of the message (SchemaError,
        # ConfigError, YamlContentError): the parent got "BrokenProcessPool" instead of the
        # one-line error. Rebuilt from the message and attributes instead, without __init__.
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(cls: type[TracebaseError], args: tuple, state: dict) -> TracebaseError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class SchemaError(TracebaseError):
    """A file does not match the expected tracebase schema."""

    def __init__(self, source: str, column: str | None, expected: str, found: str):
        self.source, self.column, self.expected, self.found = source, column, expected, found
        # a file name may hold a newline: escaped here, as the one-line error would show it as a
        # space, naming another file
        name = shown(source) if isinstance(source, (str, os.PathLike)) else str(source)
        where = f"{name}: column '{column}'" if column else name
        super().__init__(f"{where}: expected {expected}, found {found}")


class EnvironmentProblem(TracebaseError):
    """Something missing on the machine (root, bcc, kernel headers, a library)."""


# How a read that ran out of memory or threads words itself (Arrow's "malloc of size N failed",
# its thread pool's "Failed to launch worker thread: Resource temporarily unavailable")
_EXHAUSTION_WORDS = ("malloc of size", "failed to launch worker thread", "resource temporarily unavailable",
                     "cannot allocate memory", "out of memory")


def out_of_resources(exc: BaseException) -> bool:
    """Whether a read's error is the machine's (memory or threads ran out: a `ulimit -v`/`-u`)
    rather than the data's: such an error is not a file's fault, and readers that name a file
    for an unreadable page re-raise it instead (the command line says out of memory, naming
    the limit)."""
    if isinstance(exc, MemoryError):  # (pyarrow's ArrowMemoryError too)
        return True
    text = str(exc).lower()
    return any(word in text for word in _EXHAUSTION_WORDS)


def printable(text: str) -> str:
    """`text` on one line and inert in a terminal: control and format characters (a newline,
    ESC, a right-to-left override) as Python escapes. Paths, command names and outputs come
    from the traced programs, which may put any byte in a file name or in their comm. A byte
    of a file name that is not UTF-8 (a lone surrogate, os.fsdecode's) shows as \\xNN, as the
    command lines' error stream shows it."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF
                   else repr(c)[1:-1] for c in text)


def shown_value(value: object) -> str:
    """repr(value) cut short for an error line: a YAML value may be a list of lists of
    thousands of items (or, through aliases, billions: repr never returned on nine levels of
    nine aliases), where the error only needs to show what kind of value it found."""
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxlist, short.maxtuple, short.maxset, short.maxdict = 2, 8, 8, 8, 8
    short.maxstring, short.maxlong, short.maxother = 120, 60, 120
    return short.repr(value)


def escaped_name(text: str) -> str:
    """A name as UTF-8 text: a byte that was not UTF-8 (kept as a surrogate escape when the
    name was decoded) as its \\xNN escape, the way command lines show it."""
    return text if text.isascii() else text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def shown(name: str | os.PathLike) -> str:
    """A file name as printable text on one line: undecodable bytes (surrogate escapes) as
    \\xNN, control characters (a newline, ESC) as Python escapes."""
    return printable(escaped_name(os.fsdecode(name)))


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """'a directory', 'a FIFO (named pipe)', ... for a stat mode: what "found" names (here, at
    the bottom layer, for the input checks and the output checks alike)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "a special file")

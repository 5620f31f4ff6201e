"""User-facing errors.

Anything the user can fix (bad input file, bad flag, missing privilege) is raised as a
TracebaseError subclass; the CLIs print its message on one line and exit with status 2.
Everything else is a bug and is allowed to show a traceback.
"""

from __future__ import annotations


class TracebaseError(Exception):
    """An error caused by input or environment, reported without a traceback (exit 2)."""

    exit_status = 2


class SchemaError(TracebaseError):
    """A file does not match the expected tracebase schema."""

    def __init__(self, source: str, column: str | None, expected: str, found: str):
        self.source, self.column, self.expected, self.found = source, column, expected, found
        where = f"{source}: column '{column}'" if column else source
        super().__init__(f"{where}: expected {expected}, found {found}")


class EnvironmentProblem(TracebaseError):
    """Something missing on the machine (root, bcc, kernel headers, a library)."""


def printable(text: str) -> str:
    """`text` on one line and inert in a terminal: control and format characters (a newline,
    ESC, a right-to-left override) as Python escapes. Paths, command names and outputs come
    from the traced programs, which may put any byte in a file name or in their comm."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)

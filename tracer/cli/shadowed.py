"""A module from PYTHONPATH (or the current directory) that took an installed module's place.

A `yaml.py` or `polars/` left in a directory on PYTHONPATH is imported instead of the installed
library; when it fails (raises on import, lacks what the tools call) the failure is the
environment's, not a bug of ours: the command says which file replaced which module, exit 2,
instead of an "internal error" with a crash file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["shadowing_module"]


def _resolved(path: str) -> Path | None:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError, ValueError):
        return None


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _roots(entries: list[str]) -> list[Path]:
    return [p for e in entries if e and (p := _resolved(e)) is not None]


def _installed_roots() -> list[Path]:
    """Where installed code lives: the interpreter's prefixes (the venv, the stdlib), Debian's
    dist-packages (bcc) and our own packages' directory (an editable checkout)."""
    ours = Path(__file__).resolve().parents[2]
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return [*_roots(sorted(prefixes)), *_roots(["/usr/lib/python3/dist-packages"]), ours]


def _foreign_roots() -> list[Path]:
    """The import path's entries a user put there: PYTHONPATH and the current directory."""
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    try:
        cwd = os.getcwd()
    except OSError:  # removed: nothing can be imported from it
        return _roots(entries)
    if {"", ".", cwd} & set(sys.path):  # `python -m` and `python -c` put it first
        entries.append(cwd)
    return _roots(entries)


def _foreign(file: str | None, foreign: list[Path], installed: list[Path]) -> Path | None:
    if not file or file.startswith("<"):
        return None
    path = _resolved(file)
    if path is None or not _under(path, foreign) or _under(path, installed):
        return None
    return path


def _module_named(path: Path) -> str:
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and _resolved(file) == path:
            return name.split(".")[0]
    return path.parent.name if path.name == "__init__.py" else path.stem


def shadowing_module(exc: BaseException) -> str | None:
    """The line for `exc` when it came from (or named) a module loaded from PYTHONPATH or the
    current directory in place of an installed one; None otherwise."""
    foreign = _foreign_roots()
    if not foreign:
        return None
    installed = _installed_roots()
    culprit = None
    tb = exc.__traceback__
    while tb is not None:  # the innermost frame of such a file: where it failed
        culprit = _foreign(tb.tb_frame.f_code.co_filename, foreign, installed) or culprit
        tb = tb.tb_next
    name = getattr(exc, "name", None) if isinstance(exc, (AttributeError, ImportError)) else None
    if culprit is None and isinstance(exc, AttributeError):
        # "module 'polars' has no attribute 'from_arrow'": the module named is the foreign one
        module = getattr(exc, "obj", None)
        culprit = _foreign(getattr(module, "__file__", None), foreign, installed)
    if culprit is None and name:
        culprit = _foreign(getattr(sys.modules.get(str(name)), "__file__", None), foreign, installed)
    if culprit is None:
        return None
    text = " ".join(str(exc).split())
    return (f"{culprit}: module '{_module_named(culprit)}' was imported from there (PYTHONPATH or the "
            f"current directory) in place of the installed one, and failed: {type(exc).__name__}: {text}; "
            "remove it from the import path")

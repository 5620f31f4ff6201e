"""Settings a command-line process makes for itself before anything heavy is imported, and the
environment a traced command gets without them.

numpy's OpenBLAS starts a thread per further CPU when numpy is imported (pyarrow imports numpy,
so every command that reads Parquet does), and each spins on its core waiting for work that
never comes: no command of ours calls a BLAS routine. On this 2-core machine that is ~0.1 s of
CPU per process (`python -c 'import numpy'`: 0.18-0.25 CPU s, with one thread 0.10), taken from
the process's own threads and, under `tracer record`, from the command being traced.
OpenBLAS reads the setting once, when numpy loads it; a value the user gave (in any of the three
variables OpenBLAS reads) wins.

pyarrow imports pandas, when it is installed, on its first conversion of Python or numpy data
(`pa.array`): ~0.3 s of CPU and ~30 MiB for every command that writes or reads a table. No
command uses pandas, so the console scripts refuse to load it (`without_pandas`).

Imports nothing heavy: the console scripts call it first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

BLAS_THREADS = "OPENBLAS_NUM_THREADS"
# what OpenBLAS reads for its thread count, the first one set winning
BLAS_THREAD_SETTINGS = (BLAS_THREADS, "GOTO_NUM_THREADS", "OMP_NUM_THREADS")

# what this process set in its own environment, and to what: a command it runs gets the
# environment it was given, without these (a traced program keeps its own BLAS threads)
_OWN_SETTINGS: dict[str, str] = {}


def own_default(name: str, value: str, environ: MutableMapping[str, str] = os.environ) -> None:
    """`environ.setdefault(name, value)` for this process's own libraries; what it sets in
    os.environ is left out of `users_environment`."""
    if name not in environ:
        environ[name] = value
        if environ is os.environ:
            _OWN_SETTINGS[name] = value


# glibc's mallopt parameters (<malloc.h>)
M_ARENA_MAX = -8
M_MMAP_THRESHOLD = -3


def set_malloc(param: int, value: int) -> None:
    """glibc's mallopt(param, value); nothing on another C library (its allocator, its policy)."""
    import contextlib
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(param, value)


def single_threaded_blas(environ: MutableMapping[str, str] = os.environ) -> None:
    """One OpenBLAS thread for this process, unless the user's environment says otherwise."""
    if not any(name in environ for name in BLAS_THREAD_SETTINGS):
        own_default(BLAS_THREADS, "1", environ)


def users_environment() -> dict[str, str]:
    """A copy of this process's environment without the settings `own_default` made in it: the
    environment a command started for the user gets. A value changed since (by the caller) is
    the caller's and is kept."""
    env = dict(os.environ)
    for name, value in _OWN_SETTINGS.items():
        if env.get(name) == value:
            del env[name]
    return env


class NoPandas:
    """A meta-path finder refusing pandas: pyarrow and polars then take it as not installed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] == "pandas":
            # (ModuleNotFoundError: polars' lazy import catches that one, pyarrow any ImportError)
            raise ModuleNotFoundError("pandas is not loaded by tracebase's commands (tracer.startup)",
                                      name=name)


def without_pandas() -> None:
    """Refuse pandas for the rest of this process (a console script's: nothing of ours uses it)."""
    if not any(isinstance(finder, NoPandas) for finder in sys.meta_path):
        sys.meta_path.insert(0, NoPandas())

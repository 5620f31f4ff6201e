"""The differ's one worker thread, and Parquet columns read in it before the differ's modules load.

A one-shot `baseline diff` spends its first ~0.3 s importing (python, numpy, pyarrow, then the
differ's own modules) with the second core idle. Once pyarrow is in, the columns `prepare`
decodes first (thread ids, sequence numbers, the path strings: the slowest) can be decoding in
the worker (Parquet decoding releases the GIL) while the caller's thread imports the rest and
runs the diff's checks. `read_early` starts that; `baseline.run.traces._File` claims what was
read for its file and uses it only where its own read would have read the same thing (the
footer it validated says the column is stored; `_File.constant` still answers first). Anything
the early read did not get -- a directory of files, a read that failed, a file replaced in
between -- is read the ordinary way, which reports what is wrong.

This module imports only pyarrow (and the standard library): it runs before the differ's
modules are imported, and must not import them.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

_BACKGROUND: ThreadPoolExecutor | None = None


def background() -> ThreadPoolExecutor:
    """The one worker thread of the differ, made when first used: it reads Parquet columns
    ahead (baseline.run.traces) and normalises the path dictionary while the caller's thread
    converts the other columns (`prepare`). What it runs is mostly Arrow (Parquet decoding,
    RE2, hashing) and the compiled loops, which release the GIL: on two cores it overlaps.
    One thread, first in first out: a task queued after an early read finds it done."""
    global _BACKGROUND
    if _BACKGROUND is None:
        _BACKGROUND = ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead")
    return _BACKGROUND


def _forget_background() -> None:
    # A forked child has no copy of the thread, while the executor would count it as idle and
    # queue work for it forever: the child makes its own when it first needs one. Its early
    # reads belong to the parent's files and thread: forgotten too.
    global _BACKGROUND
    _BACKGROUND = None
    _EARLY.clear()


os.register_at_fork(after_in_child=_forget_background)


# (st_dev, st_ino) of a file -> (its identity when the read started, {column: Future}).
_EARLY: dict[tuple[int, int], tuple[tuple[int, int, int], dict[str, Future]]] = {}
_LOCK = threading.Lock()


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns


def read_early(files: Sequence[str | os.PathLike], plan: Iterable[tuple[int, str, bool]]) -> None:
    """Start reading columns of Parquet files in the worker thread, in the order of `plan`:
    (index into `files`, column name, read as dictionary). Paths that are not regular files
    (a directory of traces, a FIFO) are skipped. Never raises: whatever goes wrong here is
    found again, and reported, by the ordinary read."""
    stats: dict[int, os.stat_result] = {}
    for i, f in enumerate(files):
        try:
            st = os.stat(f)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            stats[i] = st
    for i, name, dictionary in plan:
        st = stats.get(i)
        if st is None:
            continue
        key = (st.st_dev, st.st_ino)
        with _LOCK:
            ident, cols = _EARLY.setdefault(key, (_identity(st), {}))
            if ident != _identity(st) or name in cols:
                continue
            cols[name] = background().submit(_read_column, os.fspath(files[i]), name, dictionary)


def _read_column(path: str | bytes, name: str, dictionary: bool) -> Any:
    """One column of one file as `baseline.run.traces._File._read` reads it, or None."""
    from pyarrow._parquet import ParquetReader

    try:
        with open(path, "rb") as fh:
            reader = ParquetReader()
            reader.open(fh, read_dictionary=[name] if dictionary else None, arrow_extensions_enabled=True)
            return reader.read_all(column_indices=[reader.column_name_idx(name)], use_threads=False).column(0)
    except Exception:  # noqa: BLE001 -- any failure: the ordinary read reads it again and names it
        return None


# What `prepare` reads first, in the order it asks (baseline.run.normalize.read_ahead_for_prepare:
# the thread ids and sequence numbers, then the path strings, as a dictionary: DICT_COLUMNS).
DIFF_PLAN = (("tid", False), ("seq", False), ("path", True))


def read_early_for_diff(good: Sequence[str | os.PathLike], bad: str | os.PathLike) -> None:
    """`read_early` of the columns a diff of these traces decodes first: the bad trace's and the
    good ones' (the diff's row order), each column of every file before the next column."""
    files = [bad, *good]
    read_early(files, [(i, name, dictionary) for name, dictionary in DIFF_PLAN for i in range(len(files))])


def claim(path: str | os.PathLike) -> dict[str, Future]:
    """The early reads of this file ({column: Future whose result is the column or None}),
    handed over once; {} when none were started or the file changed since."""
    if not _EARLY:
        return {}
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return {}
    with _LOCK:
        entry = _EARLY.pop((st.st_dev, st.st_ino), None)
    if entry is None or entry[0] != _identity(st):
        return {}
    return entry[1]


def forget() -> None:
    """Drop the early reads nobody claimed, those not yet started cancelled: a diff that
    stopped early (a footer refused, the bad trace not found) waits for none of them."""
    with _LOCK:
        for _, cols in _EARLY.values():
            for started in cols.values():
                started.cancel()
        _EARLY.clear()

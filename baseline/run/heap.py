"""Giving a diff's freed heap pages back to the system between its phases.

glibc returns a freed block to the system only from the top of the heap; the holes that the
prepared columns and their temporaries leave inside it stay resident until they are reused.
The alignment phase allocates its largest arrays (the streams, the window hash set) after most
of those holes are freed, and in other sizes: without a trim, the process's peak RSS is the
holes plus the new arrays (~6-8 MiB more at a two million-event diff's peak, bench/bench_diff).
"""

from __future__ import annotations

import contextlib
import ctypes
from functools import cache


@cache
def _malloc_trim() -> object | None:
    with contextlib.suppress(OSError, AttributeError):  # not glibc: its allocator, its policy
        return ctypes.CDLL(None).malloc_trim
    return None


def release_free_pages() -> None:
    """glibc's malloc_trim(0): every whole free page of the heap goes back to the system
    (~3 ms for ~40 MiB of holes); elsewhere, nothing."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

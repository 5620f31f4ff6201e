"""Thread pools that let a stop (SIGTERM, Ctrl-C, an error) through at once.

`with ThreadPoolExecutor() as pool` waits, on the way out, for every task already submitted:
`pool.map` submits them all up front, so a SIGTERM during `baseline learn`'s footer checks of a
10,000-file day waited for the ~160 queued checks (1-2 s) before the process could exit. Here
an exception (Stopped, KeyboardInterrupt, an error, a generator closed early) cancels the
tasks not yet started and does not wait for the running ones, which only read (their results
are dropped; the process is exiting or the caller has moved on). A normal exit waits as usual.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager


@contextmanager
def thread_pool(max_workers: int, name: str) -> Iterator[ThreadPoolExecutor]:
    pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=name)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)

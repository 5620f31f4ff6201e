"""Thread pools that let a stop (SIGTERM, Ctrl-C, an error) through at once.

`with ThreadPoolExecutor() as pool` waits, on the way out, for every task already submitted:
`pool.map` submits them all up front, so a SIGTERM during `baseline learn`'s footer checks of a
10,000-file day waited for the ~160 queued checks (1-2 s) before the process could exit. Here
an exception (Stopped, KeyboardInterrupt, an error, a generator closed early) cancels the
tasks not yet started and does not wait for the running ones, which only read (their results
are dropped; the process is exiting or the caller has moved on). A normal exit waits as usual.

Process pools (ingest's -j workers, the simulator's) start each worker with `worker_init`.
"""

from __future__ import annotations

import contextlib
import os
import signal
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


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def worker_init(parent: int) -> None:
    """Initializer of every process-pool worker (`Pool(initializer=worker_init,
    initargs=(os.getpid(),))`), for what a worker shares with its parent's outputs:

    - it dies with its parent: the kernel sends it SIGTERM when the parent is gone (kill -9, the
      OOM killer). An orphaned worker ran on: ingest's held the dataset lock (an inherited
      descriptor) until its host was done, the simulator's wrote into a staging directory
      whose owner was dead, which the rerun removed under it and it then recreated in part;
    - SIGTERM and SIGHUP end it by unwinding (SystemExit 128 + signal, silent in a pool
      worker), so its atomic writes remove their temporaries: the SIGTERM a pool sends its
      workers when the parent is stopped left a worker's half-written '.part-*.tmp' behind
      (a signal someone set to be ignored, nohup's SIGHUP, stays ignored);
    - it ignores SIGINT: a Ctrl-C reaches the whole foreground process group, and each worker
      printed KeyboardInterrupt's traceback; the parent hears it and stops the pool (SIGTERM).
    """
    with contextlib.suppress(Exception):  # not Linux, or no libc: the worker is only not tied
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _unwind)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.getppid() != parent:  # the parent died before the prctl: no signal will come
        raise SystemExit(128 + signal.SIGTERM)


def _unwind(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)

"""Thread pools that let a stop (SIGTERM, Ctrl-C, an error) through at once.

`with ThreadPoolExecutor() as pool` waits, on the way out, for every task already submitted:
`pool.map` submits them all up front, so a SIGTERM during `baseline learn`'s footer checks of a
10,000-file day waited for the ~160 queued checks (1-2 s) before the process could exit. Here
an exception (Stopped, KeyboardInterrupt, an error, a generator closed early) cancels the
tasks not yet started and does not wait for the running ones, which only read (their results
are dropped; the process is exiting or the caller has moved on). A normal exit waits as usual.

Process pools (ingest's -j workers, the simulator's) are `process_pool`s, whose workers start
with `worker_init`.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

from tracer.errors import TracebaseError

T = TypeVar("T")
R = TypeVar("R")


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
    - SIGTERM and SIGHUP end it after removing the temporaries it is writing
      (atomic.abandon_pending: its own only, a forked child forgets the parent's), exit 128 +
      signal: the SIGTERM a pool sends its workers when the parent is stopped left a worker's
      half-written '.part-*.tmp' behind (a signal someone set to be ignored, nohup's SIGHUP,
      stays ignored);
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
        _unwind(signal.SIGTERM, None)


def children_waitable() -> None:
    """Give SIGCHLD its default action when it was ignored: call it before starting a child
    this process must wait for. An ignored SIGCHLD is inherited through exec (a parent that set
    it, a supervisor, `trap '' CHLD` in a script), and under it the kernel reaps every child the
    moment it exits: waitpid fails with ECHILD, so its exit status is lost (`tracer record --
    CMD` failed with "No child processes" and wrote no trace; subprocess reports such a child
    as exit 0). strace resets it so for the same reason; the child then starts with the
    default, as under any shell. A handler someone installed stays (it can still wait)."""
    with contextlib.suppress(ValueError, OSError):  # not the main thread: signal.signal refuses
        if signal.getsignal(signal.SIGCHLD) in (signal.SIG_IGN, signal.SIG_DFL):
            # (SIG_DFL again too: that clears an inherited SA_NOCLDWAIT, which reaps alike)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)


def _unwind(signum: int, frame: object) -> None:
    # (not SystemExit: concurrent.futures' worker loop catches BaseException from a task and
    # would send it back to a parent that is gone, printing a traceback)
    from tracer import atomic

    atomic.abandon_pending()
    os._exit(128 + signum)


@contextmanager
def process_pool(workers: int, method: str, what: str) -> Iterator[ProcessPoolExecutor]:
    """A process pool (multiprocessing start `method`: "fork" or "spawn") whose workers start
    with `worker_init`. A worker that dies (the OOM killer, a kill -9) is one line naming
    `what`, where multiprocessing.Pool waited for its task for ever (an `ingest -j 2` whose
    worker the OOM killer took hung holding the dataset lock, and every later ingest timed
    out on it). On a stop or an error the workers are ended at once (their temporaries go),
    not waited for."""
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    children_waitable()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                               initializer=worker_init, initargs=(os.getpid(),))
    try:
        yield pool
    except BrokenProcessPool:
        _end(pool)
        raise TracebaseError(f"{what}: a worker process died (killed by a signal: out of memory, or kill -9); "
                             "what it finished stays, a rerun does the rest") from None
    except BaseException:
        _end(pool)
        raise
    pool.shutdown(wait=True)


def results_in_order(pool: ProcessPoolExecutor, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
    """`pool.map(fn, items)` without its cancelling of the futures when the caller stops: in
    Python 3.11 the pool's manager thread then set an exception on a cancelled future, and
    printed its InvalidStateError traceback, when the stopped workers were seen to die."""
    futures = [pool.submit(fn, item) for item in items]
    for future in futures:
        yield future.result()


def _end(pool: ProcessPoolExecutor) -> None:
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for p in processes:
        with contextlib.suppress(Exception):
            p.terminate()  # SIGTERM: worker_init's handler removes its temporaries
    for p in processes:
        with contextlib.suppress(Exception):
            p.join(5)
    pool.shutdown(wait=True)  # (the manager thread has seen them die: it fails what was left)

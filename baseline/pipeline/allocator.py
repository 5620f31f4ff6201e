"""polars' allocator setting, for every entry point that runs an audit or ingest: the `baseline`
console script (baseline.cli; not for the streaming learners, STREAMING_COMMANDS) and the Airflow
DAG files (dags/), whose task processes import polars inside the task body, after the DAG file
has been parsed in that same process.

Imports nothing heavy: it must run before anything imports polars (or numpy).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

# polars' allocator (jemalloc, configured through _RJEM_MALLOC_CONF when polars is first imported;
# polars itself sets dirty_decay_ms:500,muzzy_decay_ms:1000 and a background purging thread).
# muzzy_decay_ms:0: pages that have been dirty for the decay time are returned with MADV_DONTNEED
# at once instead of being MADV_FREEd and kept for another second. A MADV_FREEd page still counts
# in the process's RSS until the kernel needs the memory, and an audit frees hundreds of MiB
# within seconds: on a 10,000-host day up to ~0.55 GiB of the RSS while the findings are built
# was such pages (the peak RSS ~190 MiB lower, a few % more page faults; bench_audit --audit).
# dirty_decay_ms:100: freed pages are purged after 100 ms instead of 500. An audit's peak is its
# live set (~1.15 GiB on a 10,000-host day) plus what it freed in the last half second and
# jemalloc had not returned yet (a page freed in one thread's arena is not reused by another's),
# so the faster the machine ran the audit, the higher its peak: 1.27-1.57 GiB for the same code
# and day. At 100 ms, five paired CLI runs of the day (both layouts, load 3-8): 1.16-1.28 GiB
# against 1.28-1.46, CPU +3 % (at 0 ms: +27 %).
ALLOCATOR_CONF = "muzzy_decay_ms:0,dirty_decay_ms:100"
# Commands that stream a dataset through batches of a fixed size and hold little else (`baseline
# learn`, `baseline expected learn`: a 500,000-row batch at a time, ~0.4-0.6 GiB in all) keep
# polars' own setting. Purged 100 ms after they were freed, every batch's buffers were faulted in
# again: learn over 101.5M events spent 14-19 s in the kernel (page faults, zeroing) against
# 5.6-9 s with polars' setting, ~27 s wall against ~19.6 (3.8M events/s against 5.2M), for
# ~90 MiB more peak RSS (docs/benchmarks.md, round thirty-seven).
STREAMING_COMMANDS = frozenset({"learn", "expected"})


def configure_allocator(environ: MutableMapping[str, str] = os.environ, command: str | None = None) -> None:
    """Set ALLOCATOR_CONF for polars' allocator; effective only before polars is first imported,
    so the entry points call it before anything runs. A setting the user gives in
    _RJEM_MALLOC_CONF comes after ours and wins (jemalloc takes the last value of an option).
    Idempotent: a second call (a DAG file parsed twice in one process) adds nothing. `command`
    (the console script's subcommand): none for STREAMING_COMMANDS."""
    if command in STREAMING_COMMANDS:
        return
    user = environ.get("_RJEM_MALLOC_CONF")
    if user == ALLOCATOR_CONF or (user or "").startswith(ALLOCATOR_CONF + ","):
        return
    environ["_RJEM_MALLOC_CONF"] = f"{ALLOCATOR_CONF},{user}" if user else ALLOCATOR_CONF


def configure_task_process() -> None:
    """What an Airflow task process of ours sets at DAG-file parse time, before its task body
    imports polars and, through pyarrow, numpy: the allocator setting (configure_allocator) and
    one OpenBLAS thread (tracer.startup: no task calls a BLAS routine, and each further thread
    spins on a core for ~0.1 CPU s a process), as the console scripts do. The user's settings
    win. pandas is not refused here: the process is Airflow's, whose own code may use it."""
    from tracer.startup import single_threaded_blas

    configure_allocator()
    single_threaded_blas()

"""Limits a job meets in every run: an fd cache that evicts on EMFILE and calls again, a retry
loop at a call without a path that the good runs got past and the bad run gave up.

real_eighteenth's emfile_recovered_at_varying_calls failed its good-vs-good diff on main (openat
EMFILE named: the cache met the limit at an open of a file the good runs' cache had opened
without meeting it -- which entry meets the limit is how the cache's entries came and went); its
sigqueue_refused_from_the_first and aio_fallback_floor_too_high named the message instead of the
refused call (rt_sigqueueinfo, io_setup EAGAIN: learned as routine from the good runs, which met
the limit and got past it, and set aside as timing before the message). Traces of the recorded
shapes written as real Parquet; a full table not made room in, and a retry loop the good runs
also ended refused, are still told apart.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.allowlist import ExpectedErrors
from baseline.run.diff import diff_traces
from tracer.schema import write_table

NONE = ExpectedErrors([], source="<test>")
START = [("execve", None, "/usr/bin/python3"), ("openat", None, "/etc/ld.so.cache"), ("close", None, "/etc/ld.so.cache")]
EXIT = ("exit_group", None, None)
MESSAGE = ("write", None, "/dev/null")


def trace(path: Path, rows, trace_id: str, pid: int, status: int = 0) -> Path:
    n = len(rows)
    df = pl.DataFrame(
        {"trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [10 * i for i in range(n)],
         "pid": [pid] * n, "tid": [pid] * n, "ppid": [1] * n, "comm": ["python3"] * n,
         "probe": [r[0] for r in rows], "depth": [0] * n, "ret": [-1 if r[1] else 0 for r in rows],
         "errno": [r[1] for r in rows], "path": [r[2] for r in rows], "kind": ["good"] * n,
         "command": ["python3 quota.py"] * n, "exit_status": [status] * n},
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16,
                          "exit_status": pl.Int32},
    )
    return write_table(df, path, "events")


def _diff(tmp_path: Path, good: list, bad: list, bad_status: int = 0):
    files = [trace(tmp_path / f"g{i}.parquet", START + rows, f"g{i}", 10 + i) for i, rows in enumerate(good)]
    return diff_traces(files, trace(tmp_path / "b.parquet", START + bad, "b", 99, bad_status), expected=NONE)


def _cache(opens: int, full_at: set[int], evict: bool = True) -> list:
    """An fd cache opening in0000.. in turn; at the opens in `full_at` the table is full: EMFILE,
    its oldest entry closed, the same open again (`evict`), or the run's end."""
    rows, held = [], []
    for i in range(opens):
        path = f"/srv/data/in{i:04d}.rec"
        if i in full_at:
            rows.append(("openat", "EMFILE", path))
            if not evict:
                return [*rows, MESSAGE, EXIT]
            rows.append(("close", None, held.pop(0)))
        rows += [("openat", None, path), ("read", None, path)]
        held.append(path)
    return [*rows, *(("close", None, p) for p in held), EXIT]


def test_a_full_table_made_room_in_is_quiet(tmp_path):
    # the good runs' cache met the limit at other opens than the diffed run's
    report = _diff(tmp_path, [_cache(40, {21, 30}), _cache(40, {25, 33})], _cache(40, {18, 27, 36}))
    assert not report.anomaly, report.bifurcation


def test_evictions_one_after_another_are_quiet(tmp_path):
    # the slot the first eviction freed was taken by another entry's reopen: the open meets the
    # limit again, a second entry is closed, the open gets through
    good = _cache(40, {21, 30})
    bad = _cache(40, set())
    at = bad.index(("openat", None, "/srv/data/in0018.rec"))
    bad[at:at] = [("openat", "EMFILE", "/srv/data/in0018.rec"), ("close", None, "/srv/data/in0000.rec"),
                  ("openat", None, "/srv/data/in0000.rec"),
                  ("openat", "EMFILE", "/srv/data/in0018.rec"), ("close", None, "/srv/data/in0001.rec")]
    report = _diff(tmp_path, [good, _cache(40, {25, 33})], bad)
    assert not report.anomaly, report.bifurcation


def test_a_full_table_not_made_room_in_is_named(tmp_path):
    report = _diff(tmp_path, [_cache(40, {21, 30}), _cache(40, {25, 33})], _cache(40, {18}, evict=False), 1)
    bif = report.bifurcation
    assert (bif["probe"], bif["errno"], bif["path"]) == ("openat", "EMFILE", "/srv/data/in0018.rec"), bif


def _engine(depths: list[int], floor: int) -> list:
    """io_setup asked each depth in turn, halving on EAGAIN (the last depth taken) down to `floor`."""
    rows = []
    for d in depths[:-1]:
        rows.append(("io_setup", "EAGAIN", None))
        if d // 2 < floor:
            return [*rows, MESSAGE, EXIT]
    return [*rows, ("io_setup", None, None), ("io_destroy", None, None), EXIT]


def test_a_retry_given_up_at_a_call_without_a_path_is_named(tmp_path):
    good = _engine([1 << 18, 1 << 17, 1 << 16], floor=1024)
    report = _diff(tmp_path, [good, good], _engine([1 << 18, 1 << 17, 1 << 16], floor=1 << 17), 1)
    bif = report.bifurcation
    assert (bif["probe"], bif["errno"]) == ("io_setup", "EAGAIN"), bif


def test_a_retry_the_good_runs_also_ended_refused_is_not_the_cause(tmp_path):
    # a non-blocking accept loop ends with EAGAIN in every run; the bad run fails afterwards,
    # at its config
    loop = [("accept4", None, None), ("accept4", None, None), ("accept4", "EAGAIN", None)]
    bad = [*loop, ("openat", "EACCES", "/etc/job.conf"), MESSAGE, EXIT]
    report = _diff(tmp_path, [[*loop, ("openat", None, "/etc/job.conf"), EXIT]] * 2, bad, 1)
    bif = report.bifurcation
    assert (bif["probe"], bif["errno"]) == ("openat", "EACCES"), bif

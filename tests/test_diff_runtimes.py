"""Good runs of language runtimes that differ in what the runtime's own timing decides, shaped
as strace shows the real programs of tests/scenarios/real_twentythird.py (OpenJDK 17's VM
Thread sleeping 1 ms at a time while the other threads reach a safepoint; its NativePRNG
reading /dev/urandom again when its buffer is 100 ms old, between two createTempFile names),
written as real Parquet through tracer.schema: the variation alone must be quiet, and the
guard beside each rule says which look-alike still names its region."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.allowlist import ExpectedErrors
from baseline.run.diff import diff_traces
from tracer.schema import write_table

NONE = ExpectedErrors([], source="<test>")
PID = 100


def trace(path: Path, rows: list[tuple], trace_id: str, pid0: int, exit_status: int = 0) -> Path:
    """rows: (tid offset, comm, probe, errno, path, arg, ret) of one java process, in seq order;
    tid offset 0 is the main thread. pid0 gives each run pids of its own."""
    pid = PID + pid0
    n = len(rows)
    df = pl.DataFrame(
        {
            "trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [1000 * i for i in range(n)],
            "pid": [pid] * n, "tid": [pid + r[0] for r in rows], "ppid": [1] * n, "comm": [r[1] for r in rows],
            "probe": [r[2] for r in rows], "depth": [0] * n, "ret": [r[6] for r in rows],
            "errno": [r[3] for r in rows], "path": [r[4] for r in rows], "path2": [None] * n,
            "arg": [r[5] for r in rows], "kind": ["good"] * n, "command": ["java Job tmp /srv/job"] * n,
            "exit_status": [exit_status] * n,
        },
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16, "ret": pl.Int64,
                          "exit_status": pl.Int32},
    )
    return write_table(df, path, "events")


def _diff(tmp_path: Path, goods: list[list], bad: list, bad_status: int = 0):
    g = [trace(tmp_path / f"g{i}.parquet", t, f"g{i}", 1000 * (i + 1)) for i, t in enumerate(goods)]
    return diff_traces(g, trace(tmp_path / "b.parquet", bad, "b", 9000, bad_status), expected=NONE)


# --- HotSpot's VM Thread: a safepoint's backoff sleeps ---------------------------------------------
def _main(exit_status_message: str | None = None) -> list:
    rows = [(0, "java", "openat", None, "/srv/job/conf/app.properties", "O_RDONLY", 5),
            (0, "java", "read", None, "/srv/job/conf/app.properties", None, 24),
            (0, "java", "close", None, "/srv/job/conf/app.properties", None, 0),
            (0, "java", "openat", None, "/srv/job/out/summary.txt", "O_WRONLY|O_CREAT|O_TRUNC", 5),
            (0, "java", "write", None, "/srv/job/out/summary.txt", None, 10),
            (0, "java", "close", None, "/srv/job/out/summary.txt", None, 0)]
    if exit_status_message:
        rows.append((0, "java", "write", None, "pipe:[1]", None, len(exit_status_message)))
    return rows + [(0, "java", "exit_group", None, None, None, 0)]


def _vm_thread(sleeps: int, then: list | None = None) -> list:
    start = [(9, "java", "sched_getaffinity", None, None, None, 0), (9, "java", "gettid", None, None, None, 109),
             (9, "VM Thread", "prctl", None, None, "PR_SET_NAME", 0),
             (9, "VM Thread", "futex", None, None, None, 0), (9, "VM Thread", "futex", None, None, None, 0)]
    backoff = [(9, "VM Thread", "clock_nanosleep", None, None, None, 0)] * sleeps
    end = [(9, "VM Thread", "futex", None, None, None, 0), (9, "VM Thread", "rt_sigprocmask", None, None, None, 0),
           (9, "VM Thread", "madvise", None, None, None, 0), (9, "VM Thread", "exit", None, None, None, 0)]
    return start + backoff + (then or []) + end


def _run(sleeps: int, then: list | None = None, message: str | None = None) -> list:
    return _vm_thread(sleeps, then) + _main(message)


def test_a_safepoint_backoff_slept_in_one_run_only_is_quiet(tmp_path):
    """On main the third good run of a JVM job was named at the VM Thread's clock_nanosleep
    (a divergence that never re-joins) about one run in four under load."""
    report = _diff(tmp_path, [_run(0), _run(0)], _run(3))
    assert not report.anomaly, report.bifurcation
    assert [r["probe"] for r in report.reorderings] == ["clock_nanosleep"]


def test_a_run_that_never_backed_off_where_both_good_runs_did_is_quiet(tmp_path):
    """The other way round: both good runs' VM Thread slept before its end, the third run's
    did not. On main its end was named, `(end of thread)`, a thread stopping early."""
    report = _diff(tmp_path, [_run(1), _run(3)], _run(0))
    assert not report.anomaly, report.bifurcation


def test_a_sleep_then_a_call_no_good_run_made_is_still_named(tmp_path):
    """Guard: the thread slept and then did something new (wrote a file the good runs never
    wrote): not only time passed."""
    dump = [(9, "VM Thread", "openat", None, "/srv/job/java_pid.hprof", "O_WRONLY|O_CREAT", 6),
            (9, "VM Thread", "write", None, "/srv/job/java_pid.hprof", None, 4096)]
    report = _diff(tmp_path, [_run(0), _run(0)], _run(2, dump))
    assert report.anomaly
    assert report.bifurcation["process"]["comm"] == "VM Thread"


def test_a_sleep_in_a_run_exiting_otherwise_is_still_an_anomaly(tmp_path):
    """Guard: the rule is for runs exiting as the good runs did."""
    report = _diff(tmp_path, [_run(0), _run(0)], _run(3, message="Exception in thread main"), bad_status=1)
    assert report.anomaly


# --- NativePRNG refilling from /dev/urandom -------------------------------------------------------
NAMES = ["job4984727252608439734.tmp", "job11759412627273295302.tmp", "job1457535389354054376.tmp"]
URANDOM = (0, "java", "read", None, "/dev/urandom", None, 32)


def _temp_files(refill_before: int, extra: tuple | None = None) -> list:
    rows = [(0, "java", "openat", None, "/dev/urandom", "O_RDONLY", 4)]
    for i, name in enumerate(NAMES):
        if i == refill_before:
            rows.append(URANDOM)
        if extra is not None and i == 1:
            rows.append(extra)
        tmp = f"/srv/job/tmp/{name}"
        rows += [(0, "java", "statfs", None, "/srv/job/tmp", None, 0),
                 (0, "java", "newfstatat", "ENOENT", tmp, None, -2),
                 (0, "java", "openat", None, tmp, "O_RDWR|O_CREAT|O_EXCL", 5),
                 (0, "java", "newfstatat", None, tmp, None, 0),  # fstat: the stat's call site completes
                 (0, "java", "close", None, tmp, None, 0),
                 (0, "java", "openat", None, tmp, "O_WRONLY|O_CREAT|O_TRUNC", 5),
                 (0, "java", "newfstatat", None, tmp, None, 0),
                 (0, "java", "write", None, tmp, None, 4096),
                 (0, "java", "close", None, tmp, None, 0),
                 (0, "java", "unlink", None, tmp, None, 0)]
    return rows + [(0, "java", "exit_group", None, None, None, 0)]


def test_a_random_device_refilled_between_temp_names_is_quiet(tmp_path):
    """On main the third good run of `java File.createTempFile` x5 was named at the stat
    ENOENT of its third name, after a read of /dev/urandom the good runs made before the
    first (NativePRNG's buffer grew old in a slow run), about one run in eight under load."""
    report = _diff(tmp_path, [_temp_files(0), _temp_files(0)], _temp_files(2))
    assert not report.anomaly, report.bifurcation


def test_a_read_of_another_file_there_is_still_named(tmp_path):
    """Guard: only the kernel's random devices are read for timing; a seed file read where
    the good runs read none is the run's own divergence."""
    seed = (0, "java", "read", None, "/srv/job/seed.bin", None, 32)
    report = _diff(tmp_path, [_temp_files(0), _temp_files(0)], _temp_files(0, extra=seed))
    assert report.anomaly
    assert report.bifurcation["path"] == "/srv/job/seed.bin"


def test_a_random_device_read_that_fails_still_counts(tmp_path):
    """Guard: a read of /dev/urandom that fails (EIO, where no good run's did)
    keeps its row: only successful reads are the refill's timing."""
    failed = (0, "java", "read", "EIO", "/dev/urandom", None, -5)
    report = _diff(tmp_path, [_temp_files(0), _temp_files(0)], _temp_files(0, extra=failed))
    assert report.anomaly
    assert report.bifurcation["errno"] == "EIO"


def test_a_thread_killed_right_after_a_sleep_is_still_named_by_its_end(tmp_path):
    """Guard (real_tenth's log_filter_crash_writer_*, which the first version of the rule
    broke): a filter that reads, sleeps, looks up its schema and dies of SIGSEGV. Left out,
    the sleep took with it the context of the window at the thread's end, whose too few
    remaining calls then matched any good stream's start: the crash passed for a reordering."""
    def filter_run(crash: bool) -> list:
        rows = [(0, "filter", "execve", None, "/srv/job/filter", None, 0),
                (0, "filter", "openat", None, "/etc/ld.so.cache", "O_RDONLY|O_CLOEXEC", 3),
                (0, "filter", "close", None, "/etc/ld.so.cache", None, 0),
                (0, "filter", "read", None, "pipe:[7]", None, 4096),
                (0, "filter", "read", None, "pipe:[7]", None, 512),
                (0, "filter", "clock_nanosleep", None, None, None, 0),
                (0, "filter", "access", None, "/srv/job/schema.json", None, 0)]
        if crash:
            return rows  # SIGSEGV: the calls stop, no exit of its own
        return rows + [(0, "filter", "newfstatat", None, "pipe:[8]", None, 0),
                       (0, "filter", "write", None, "pipe:[8]", None, 512),
                       (0, "filter", "exit_group", None, None, None, 0)]
    report = _diff(tmp_path, [filter_run(False), filter_run(False)], filter_run(True))  # the pipeline exits as wc does: 0
    assert report.bifurcation["probe"] == "(end of thread)"

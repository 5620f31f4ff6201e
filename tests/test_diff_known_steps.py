"""A thread doing once more a step the program takes on another thread (`rules.waits._known_step_elsewhere`),
recorded for real.

HotSpot's VM Thread, when the GC adds a worker, recounts the CPUs the way the JVM's start did on
its main thread (sched_getaffinity, then the cgroup's cpu.cfs_quota_us and cpu.cfs_period_us
read): in some runs and not others, as the heap happens to fill. The same shape in Python: the
main thread reads two settings files at start; a worker reads them again in some runs. The
guards: a step with a call no good run made, a thread going on otherwise after it, and a run
exiting with another status stay named.
"""

from __future__ import annotations

from pathlib import Path

from scenarios.harness import record_run

from baseline.run.diff import diff_traces

# mode: "once" (the good runs), "again" (the worker reads the settings again), "other" (it
# reads a file no good run read), "then" (it reads them again, then a file no good run
# read), "fails" (it reads them again and the program exits 3)
PROGRAM = """\
import os, sys, threading, time
mode, d = sys.argv[1], sys.argv[2]

def settings():
    for name in ("quota", "period"):
        fd = os.open(os.path.join(d, name), os.O_RDONLY)
        os.read(fd, 64)
        os.close(fd)

def worker():
    time.sleep(0.02)
    if mode in ("again", "then", "fails"):
        settings()
    if mode in ("other", "then"):
        os.close(os.open(os.path.join(d, "other"), os.O_RDONLY))
    time.sleep(0.02)
    # a last call of its own: the thread's exit may be cut by the process's (join returns
    # first), and a thread cut right after its sleep says nothing of what it did past there
    os.close(os.open(os.path.join(d, "done"), os.O_RDONLY))

settings()
t = threading.Thread(target=worker)
t.start()
t.join()
with open(os.path.join(d, "out"), "w") as fh:
    fh.write("done\\n")
sys.exit(3 if mode == "fails" else 0)
"""


def _runs(recorder, tmp_path: Path, bad_mode: str, program: str = PROGRAM) -> tuple[list[Path], Path]:
    d, out = tmp_path / "d", tmp_path / "out"
    d.mkdir()
    out.mkdir()
    for name in ("quota", "period", "other", "done"):
        (d / name).write_text("-1\n")
    argv = ["/usr/bin/python3", "-S", "-c", program]
    goods = [record_run(recorder, [*argv, "once", str(d)], out / f"good{i}.parquet", "good") for i in range(2)]
    bad = record_run(recorder, [*argv, bad_mode, str(d)], out / "bad.parquet", "good")
    return goods, bad


def _named(report) -> str:
    b = report.bifurcation or {}
    return f"{b.get('probe')} {b.get('errno')} {b.get('path')}"


def test_a_step_another_thread_takes_in_every_run_done_once_more_is_quiet(recorder, tmp_path):
    goods, bad = _runs(recorder, tmp_path, "again")
    report = diff_traces(goods, bad)
    assert not report.anomaly, _named(report)
    assert report.reorderings  # listed, not hidden


def test_a_call_no_good_run_made_is_still_named(recorder, tmp_path):
    goods, bad = _runs(recorder, tmp_path, "other")
    report = diff_traces(goods, bad)
    assert report.anomaly and report.bifurcation["path"].endswith("/d/other"), _named(report)


def test_a_thread_going_on_otherwise_after_the_step_is_still_named(recorder, tmp_path):
    goods, bad = _runs(recorder, tmp_path, "then")
    report = diff_traces(goods, bad)
    # named where the worker's divergence begins (its second read of the settings), the new
    # file within it
    assert report.anomaly, _named(report)
    worker = report.bifurcation["process"]
    assert worker["tid"] != worker["pid"] and report.bifurcation["unexplained_events"] >= 7, report.render_text()


def test_the_step_in_a_run_that_failed_is_still_named(recorder, tmp_path):
    goods, bad = _runs(recorder, tmp_path, "fails")
    report = diff_traces(goods, bad)
    assert report.anomaly, "a run exiting 3 was reported quiet"


# The worker's own exit in the diffed run only: every good run's worker was cut off by the
# process's exit (blocked in a read no one answers, a daemon thread), the diffed run's returned
# and exited first (rt_sigprocmask, madvise, exit) while main slept -- the race the test above
# loses now and then under load (CI 25; reproduced with two helpers' recordings beside it), made
# certain here. Main waits for the worker's word through a pipe in every mode.
EXIT_PROGRAM = """\
import os, sys, threading, time
mode, d = sys.argv[1], sys.argv[2]
said, heard = os.pipe()
never, _ = os.pipe()

def settings():
    for name in ("quota", "period"):
        fd = os.open(os.path.join(d, name), os.O_RDONLY)
        os.read(fd, 64)
        os.close(fd)

def worker():
    time.sleep(0.02)
    if mode in ("again", "then"):
        settings()
    if mode == "then":
        os.close(os.open(os.path.join(d, "other"), os.O_RDONLY))
    time.sleep(0.02)
    os.close(os.open(os.path.join(d, "done"), os.O_RDONLY))
    os.write(heard, b"x")
    if mode == "once":
        os.read(never, 1)  # blocked until the process's exit cuts it off

settings()
threading.Thread(target=worker, daemon=True).start()
os.read(said, 1)
time.sleep(0.1)
with open(os.path.join(d, "out"), "w") as fh:
    fh.write("done\\n")
"""


def _worker_exited(trace: Path) -> bool:
    import polars as pl

    events = pl.read_parquet(trace, columns=["pid", "tid", "probe"])
    return events.filter((pl.col("tid") != pl.col("pid")) & (pl.col("probe") == "exit")).height == 1


def test_the_step_once_more_then_the_threads_own_exit_no_good_run_reached_is_quiet(recorder, tmp_path):
    goods, bad = _runs(recorder, tmp_path, "again", EXIT_PROGRAM)
    assert _worker_exited(bad) and not any(_worker_exited(g) for g in goods)
    report = diff_traces(goods, bad)
    assert not report.anomaly, _named(report)
    assert report.reorderings


def test_a_thread_going_on_otherwise_before_its_own_exit_is_still_named(recorder, tmp_path):
    goods, bad = _runs(recorder, tmp_path, "then", EXIT_PROGRAM)
    assert _worker_exited(bad)
    report = diff_traces(goods, bad)
    # named where the worker's divergence begins (its second read of the settings), as above
    assert report.anomaly, _named(report)
    worker = report.bifurcation["process"]
    assert worker["tid"] != worker["pid"] and report.bifurcation["unexplained_events"] >= 7, report.render_text()

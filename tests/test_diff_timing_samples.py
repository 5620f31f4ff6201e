"""A thread that measured its CPU time fewer times than the good runs' did is timing.

G1's service thread runs periodic tasks and samples its CPU time (getrusage) at each one. In a
run slow enough (the suite's load in round twenty-nine's first CI) the JVM shut down before the
thread's first task: its stream was prctl, its waits, its exit -- the good runs' had four
getrusage calls between -- and the diff named "(end of thread)" good vs good. A region whose
only difference, once sleeps and time measurements (`TIMING_PROBES`) are left out of it and of
the good streams of its role, is that the thread took fewer or more of them, in a run exiting
as the good runs did, is that timing (`_only_slept`).

Kept as recorded here (tests/recordings/jvm_service_thread_idle: rt_java_jni_dependency_missing's
three good runs and its bad run of that CI); the set runs live in
tests/test_real_programs_twentythird.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces
from tracer.schema import write_table

RECORDED = Path(__file__).resolve().parent / "recordings" / "jvm_service_thread_idle"
GOODS = [RECORDED / "good0.parquet", RECORDED / "good1.parquet"]
IDLE = RECORDED / "good2.parquet"


def _service_calls(file: Path) -> list[str]:
    events = pl.read_parquet(file)
    return events.filter(pl.col("comm") == "G1 Service")["probe"].to_list()


def test_the_premise_the_third_runs_service_thread_never_ran_a_task():
    assert [_service_calls(f).count("getrusage") for f in GOODS] == [4, 4]
    idle = _service_calls(IDLE)
    assert "getrusage" not in idle and idle[0] == "prctl" and idle[-1] == "exit"


def test_a_service_thread_that_ran_no_periodic_task_is_quiet():
    report = diff_traces(good=GOODS, bad=IDLE)
    assert not report.anomaly, report.render_text()


def test_the_fault_of_the_same_recordings_is_still_named_first():
    report = diff_traces(good=GOODS, bad=RECORDED / "bad.parquet")
    top = report.bifurcation
    assert report.anomaly and (top["probe"], top["errno"]) == ("openat", "ENOENT")
    assert top["path"].endswith("/native/libtb23dep.so")


def test_another_call_in_place_of_the_samples_is_named(tmp_path):
    """The samples left out, but not a call of another kind: the idle run's service thread given
    an open of a file no good run opened, where the good runs' took their samples, is named."""
    events = pl.read_parquet(IDLE).with_row_index("_row")
    service = events.filter(pl.col("comm") == "G1 Service")
    after_prctl = int(service["_row"][0])
    extra = events.filter(pl.col("_row") == after_prctl).with_columns(
        pl.lit("openat").alias("probe"), (pl.col("seq") + 1).alias("seq"), pl.lit(3, pl.Int64).alias("ret"),
        pl.lit("/etc/jvm/g1-service.conf").alias("path"))
    # later rows of the run move one seq on to make room
    shifted = events.with_columns(pl.when(pl.col("_row") > after_prctl).then(pl.col("seq") + 1)
                                  .otherwise(pl.col("seq")).alias("seq"))
    changed = pl.concat([shifted, extra.select(shifted.columns)]).sort("seq").drop("_row")
    report = diff_traces(good=GOODS, bad=write_table(changed, tmp_path / "mprotect.parquet", "events"))
    top = report.bifurcation
    assert report.anomaly and (top["probe"], top["path"]) == ("openat", "/etc/jvm/g1-service.conf"), report.render_text()

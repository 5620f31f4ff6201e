"""A directory the good runs found holding only other processes' files is no answer when empty.

HotSpot's start lists /tmp/hsperfdata_<user>/ and, for each entry, opens it, checks it and tries
its lock: a dead JVM's file (the lock granted) is removed, a live JVM's (the lock refused, EAGAIN)
is left. In this session's first run of the twenty-third set, another worker's JVM was alive while
the two good runs of rt_java_dated_parent_missing started, and none while the third did: its
listing came back empty where both good runs' had an entry, and `_EmptyAnswers` named that
listing good vs good ("getdents64 None /tmp/hsperfdata_root"). A listing whose content, in every
good run, was only entries the thread looked at and found held by another live process
(`_EmptyAnswers._foreign_content`) says nothing about the program's way.

Kept as recorded here (tests/recordings/jvm_hsperfdata_sweep: the case's good runs, the third
run as `alone.parquet`, and its bad run); the set runs live in
tests/test_real_programs_twentythird.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces
from tracer.schema import write_table

RECORDED = Path(__file__).resolve().parent / "recordings" / "jvm_hsperfdata_sweep"
GOODS = [RECORDED / "good0.parquet", RECORDED / "good1.parquet"]
ALONE = RECORDED / "alone.parquet"
SWEPT = "/tmp/hsperfdata_root"


def _entries(file: Path) -> pl.DataFrame:
    events = pl.read_parquet(file)
    java = events.filter(pl.col("comm") == "java")
    first_listing = java.filter((pl.col("probe") == "getdents64") & (pl.col("path") == SWEPT))["seq"].min()
    lock_taken = java.filter((pl.col("probe") == "flock") & pl.col("errno").is_null())["seq"].min()
    return java.filter(pl.col("path").str.starts_with(SWEPT + "/") & (pl.col("seq") > first_listing)
                       & (pl.col("seq") < lock_taken))


def test_the_premise_the_good_runs_found_a_live_jvms_file_the_third_none():
    for good in GOODS:
        entries = _entries(good)
        assert entries.filter((pl.col("probe") == "flock") & (pl.col("errno") == "EAGAIN")).height == 1
        assert set(entries["probe"]) <= {"openat", "newfstatat", "fcntl", "flock", "close"}
    alone = pl.read_parquet(ALONE).filter(pl.col("path") == SWEPT)
    assert alone.filter(pl.col("probe") == "getdents64")["ret"].to_list() == [48, 0]  # "." and ".." only


def test_a_sweep_finding_no_other_jvm_is_quiet():
    report = diff_traces(good=GOODS, bad=ALONE)
    assert not report.anomaly, report.render_text()


def test_the_fault_of_the_same_recordings_is_still_named_first():
    report = diff_traces(good=GOODS, bad=RECORDED / "bad.parquet")
    top = report.bifurcation
    assert report.anomaly and (top["probe"], top["errno"]) == ("mkdir", "ENOENT")
    assert top["path"].endswith("/runs/2026/run-001")


def test_an_empty_listing_where_the_good_runs_read_their_entries_is_named(tmp_path):
    """The same good runs with the entry read instead of its lock tried (a directory of inputs
    the program uses): the third run's empty listing is named."""
    goods = []
    for good in GOODS:
        events = pl.read_parquet(good)
        used = (pl.col("probe") == "flock") & (pl.col("errno") == "EAGAIN")
        events = events.with_columns(pl.when(used).then(pl.lit("read")).otherwise(pl.col("probe")).alias("probe"),
                                     pl.when(used).then(None).otherwise(pl.col("errno")).alias("errno"),
                                     pl.when(used).then(pl.lit(4, pl.Int64)).otherwise(pl.col("ret")).alias("ret"))
        goods.append(write_table(events, tmp_path / good.name, "events"))
    report = diff_traces(good=goods, bad=ALONE)
    top = report.bifurcation
    assert report.anomaly and (top["probe"], top["path"]) == ("getdents64", SWEPT), report.render_text()
    assert top["empty_answer"]

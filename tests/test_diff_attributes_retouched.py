"""A thread's check of a path that found an attribute off, and reset it, is timing.

rsync's generator stats each directory it mirrored once the transfer is done and resets its
time (utimensat) only when it differs from the source's: whether the receiver's last rename into
the directory came after the generator's touch-up during the transfer decides it. In one of ~70
good runs of the thirtieth real-program set the end check found dst's time off; the diff named
"newfstatat None .../dst" good vs good (the stop CI of round twenty-eight). An error-free
region whose only new events set a path's attributes right after the thread's check of that
same path, in a run exiting as the good runs did, is that timing (`_attributes_retouched`).

Kept as recorded here (tests/recordings/rsync_dir_time_retouched: t30_rsync_dest_recreated_root's
three good runs and its bad run of that session); the set itself runs live in
tests/test_real_programs_thirtieth.py. The negative cases change the recorded retouch so it no
longer is one: refused, or not after a check of its path.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces
from tracer.schema import write_table

RECORDED = Path(__file__).resolve().parent / "recordings" / "rsync_dir_time_retouched"
GOODS = [RECORDED / "good0.parquet", RECORDED / "good2.parquet"]
RETOUCHED = RECORDED / "good1.parquet"


def _retouch_rows(events: pl.DataFrame) -> pl.DataFrame:
    return events.with_row_index("row").filter((pl.col("probe") == "utimensat") & pl.col("path").str.ends_with("/dst"))


def _end_retouch(events: pl.DataFrame) -> int:
    """Row of the generator's utimensat of dst at the end (its last one)."""
    return int(_retouch_rows(events)["row"][-1])


def _write(events: pl.DataFrame, where: Path) -> Path:
    return write_table(events, where, "events")


def test_the_premise_only_one_good_run_reset_the_directory_time_at_the_end():
    counts = [_retouch_rows(pl.read_parquet(f)).height for f in [*GOODS, RETOUCHED]]
    assert counts[2] == counts[0] + 1 == counts[1] + 1
    events = pl.read_parquet(RETOUCHED)
    at = _end_retouch(events)
    before = events.row(at - 1, named=True)
    assert (before["probe"], before["path"], before["tid"]) == ("newfstatat", events["path"][at], events["tid"][at])


def test_a_directory_time_reset_after_its_check_is_quiet():
    report = diff_traces(good=GOODS, bad=RETOUCHED)
    assert not report.anomaly, report.render_text()


def test_the_fault_of_the_same_recordings_is_still_named_first():
    report = diff_traces(good=GOODS, bad=RECORDED / "bad.parquet")
    top = report.bifurcation
    assert report.anomaly and (top["probe"], top["errno"]) == ("openat", "EACCES")
    assert "/dst/.app-" in top["path"]


def test_a_refused_reset_is_named(tmp_path):
    events = pl.read_parquet(RETOUCHED)
    at = _end_retouch(events)
    refused = events.with_columns(
        pl.when(pl.int_range(pl.len()) == at).then(pl.lit(-1, dtype=events["ret"].dtype)).otherwise("ret").alias("ret"),
        pl.when(pl.int_range(pl.len()) == at).then(pl.lit("EPERM")).otherwise("errno").alias("errno"))
    report = diff_traces(good=GOODS, bad=_write(refused, tmp_path / "refused.parquet"))
    assert report.anomaly and (report.bifurcation["probe"], report.bifurcation["errno"]) == ("utimensat", "EPERM")


def test_a_reset_not_after_a_check_of_its_path_is_named(tmp_path):
    events = pl.read_parquet(RETOUCHED)
    at = _end_retouch(events)
    # the check before it dropped: the reset now follows the generator's socketpair read
    unchecked = events.filter(pl.int_range(pl.len()) != at - 1)
    report = diff_traces(good=GOODS, bad=_write(unchecked, tmp_path / "unchecked.parquet"))
    assert report.anomaly

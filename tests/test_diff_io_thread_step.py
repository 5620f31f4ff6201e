"""A step a thread made itself where the good runs' threads handed it to another is timing.

zstd -T0 reads its input on an I/O thread of its own when the input is large enough, and on its
main thread otherwise: with an input of random size (the blind thirty-ninth set's
t39_zstd_T0_random_tarball, 190-870 KiB) the compressor's main thread stats app.tar and reads it
in one run, and in the good runs stats it and leaves the reads to the I/O thread. The reads were
new to the main thread's role and named good vs good. `_known_step_elsewhere` allowed for such a
block -- calls a good run made in that very order on another thread -- only within the region;
the step's first call (the stat) is one the main thread makes in every run, so the block now
grows into the calls leading into the region as well.

The other way round, the test (`zstd -t`) of a compressed file that came out larger: its main
thread opened the file and closed it, its I/O thread read it, where the good runs' main thread
had read it itself -- the thread's end without the reads was named. A thread whose kinds of
call missing from a good run's thread were all made by other threads of its process, in a run
exiting as the good runs did, is the same work handed over (`_reordered_at_end`).

Kept as recorded here (tests/recordings/zstd_reads_inline: two good runs and the run that read
inline; tests/recordings/zstd_reads_on_io_thread: two good runs and the run whose test read on
its I/O thread); the set runs live in tests/test_real_programs_thirtyninth.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces
from tracer.schema import write_table

RECORDED = Path(__file__).resolve().parent / "recordings" / "zstd_reads_inline"
GOODS = [RECORDED / "good0.parquet", RECORDED / "good1.parquet"]
INLINE = RECORDED / "inline.parquet"
HANDED_OVER = Path(__file__).resolve().parent / "recordings" / "zstd_reads_on_io_thread"


def _compressor(file: Path) -> pl.DataFrame:
    """The compressing zstd's calls (the second zstd process: the shell execs the test later)."""
    events = pl.read_parquet(file)
    pid = sorted(events.filter(pl.col("comm") == "zstd")["pid"].unique().to_list())[1]
    return events.filter(pl.col("pid") == pid)


def _input_reads(calls: pl.DataFrame) -> pl.DataFrame:
    return calls.filter((pl.col("probe") == "read") & pl.col("path").str.ends_with("/dist/app.tar"))


def test_the_premise_the_main_thread_read_the_input_in_one_run_only():
    calls = _compressor(INLINE)
    assert _input_reads(calls.filter(pl.col("tid") == pl.col("pid"))).height >= 2
    for good in GOODS:
        calls = _compressor(good)
        assert _input_reads(calls.filter(pl.col("tid") == pl.col("pid"))).is_empty()
        assert _input_reads(calls.filter(pl.col("tid") != pl.col("pid"))).height >= 2  # its I/O thread's


def test_reads_made_on_the_main_thread_instead_of_the_io_thread_are_quiet():
    report = diff_traces(good=GOODS, bad=INLINE)
    assert not report.anomaly, report.render_text()


def test_reads_of_a_file_no_good_run_read_are_named(tmp_path):
    """The same run with the main thread's reads made of another file (a dictionary no good run
    read): no good thread made that step, and it is named."""
    events = pl.read_parquet(INLINE)
    main = _compressor(INLINE)["pid"][0]
    moved = (pl.col("tid") == main) & (pl.col("probe") == "read") & pl.col("path").str.ends_with("/dist/app.tar")
    events = events.with_columns(pl.when(moved).then(pl.lit("/etc/zstd/app.dict")).otherwise(pl.col("path"))
                                 .alias("path"))
    report = diff_traces(good=GOODS, bad=write_table(events, tmp_path / "dict.parquet", "events"))
    top = report.bifurcation
    assert report.anomaly and (top["probe"], top["path"]) == ("read", "/etc/zstd/app.dict"), report.render_text()


def _tester(file: Path) -> pl.DataFrame:
    """The testing zstd's calls (the shell's own process, exec'd: the first pid)."""
    events = pl.read_parquet(file)
    pid = sorted(events.filter(pl.col("comm") == "zstd")["pid"].unique().to_list())[0]
    return events.filter(pl.col("pid") == pid)


def _test_reads(calls: pl.DataFrame) -> pl.DataFrame:
    return calls.filter((pl.col("probe") == "read") & pl.col("path").str.ends_with("/dist/app.tar.zst"))


def test_the_premise_the_test_read_on_its_io_thread_in_one_run_only():
    calls = _tester(HANDED_OVER / "handed.parquet")
    assert _test_reads(calls.filter(pl.col("tid") == pl.col("pid"))).is_empty()
    assert _test_reads(calls.filter(pl.col("tid") != pl.col("pid"))).height >= 2
    for good in ("good0.parquet", "good1.parquet"):
        calls = _tester(HANDED_OVER / good)
        assert _test_reads(calls.filter(pl.col("tid") == pl.col("pid"))).height >= 2


def test_reads_handed_to_the_io_thread_are_quiet():
    report = diff_traces(good=[HANDED_OVER / "good0.parquet", HANDED_OVER / "good1.parquet"],
                         bad=HANDED_OVER / "handed.parquet")
    assert not report.anomaly, report.render_text()


def test_reads_no_thread_made_are_named(tmp_path):
    """The same run without its I/O thread's reads: the test stopped short of reading the file,
    and its main thread's end is named."""
    events = pl.read_parquet(HANDED_OVER / "handed.parquet")
    pid = _tester(HANDED_OVER / "handed.parquet")["pid"][0]
    dropped = (pl.col("pid") == pid) & (pl.col("tid") != pid) & (pl.col("probe") == "read")
    report = diff_traces(good=[HANDED_OVER / "good0.parquet", HANDED_OVER / "good1.parquet"],
                         bad=write_table(events.filter(~dropped), tmp_path / "unread.parquet", "events"))
    assert report.anomaly, report.render_text()
    assert report.bifurcation["process"]["pid"] == pid

"""Two endings whose shape is timing, recorded (the fifty-eighth real-program set's quiet cases;
the set runs live in tests/test_real_programs_fiftyeighth.py, where each showed in a fraction of
the runs):

* **A shell's report of a job it killed itself.** `kill "$srv"; wait "$srv"` in a start script
  stopping the http.server it started: dash writes "Terminated" when the server dies while it
  waits, nothing when it reaped the server before (tests/recordings/sh_killed_job_report:
  `said` and `silent`, two good runs of t58_http_server_noise). Good vs good named the write,
  or the exit_group after it, 1 run in 8.
* **An input stream given back at exit, its standard streams closed after.** make -j2 gives its
  stdin to one job and a broken pipe to the others; cp's exit (gnulib's close_stdin) lseeks
  stdin -- ESPIPE on the pipe -- then closes 0, 1 and 2 before exit_group. Which cp got the
  pipe is which one started while the other ran (tests/recordings/make_j2_stdin_pipe:
  `devnull` and `pipe`, two good runs of t58_make_j2_install_noise). Good vs good named the
  lseek ESPIPE in about half the runs.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from baseline.run.diff import diff_traces
from tracer.schema import write_table

RECORDINGS = Path(__file__).resolve().parent / "recordings"


def _shell_messages(file: Path) -> list[str]:
    events = pl.read_parquet(file)
    return events.filter((pl.col("comm") == "sh") & pl.col("output").is_not_null())["output"].to_list()


@pytest.mark.parametrize(("good", "bad"), [("said", "silent"), ("silent", "said")])
def test_a_shells_report_of_a_job_it_killed_is_timing(good, bad):
    runs = RECORDINGS / "sh_killed_job_report"
    # the premise: one run's shell said "Terminated" after its kill and wait, the other nothing
    assert _shell_messages(runs / "said.parquet") == ["Terminated\n"]
    assert _shell_messages(runs / "silent.parquet") == []
    report = diff_traces(good=[runs / f"{good}.parquet"], bad=runs / f"{bad}.parquet")
    assert not report.anomaly, report.render_text()


def _cp_stdin_lseeks(file: Path) -> list[tuple[str, str | None]]:
    events = pl.read_parquet(file).filter((pl.col("comm") == "cp") & (pl.col("probe") == "lseek"))
    return sorted(events.select("path", "errno").rows(), key=str)


@pytest.mark.parametrize(("good", "bad"), [("devnull", "pipe"), ("pipe", "devnull")])
def test_stdin_given_back_at_exit_on_a_pipe_with_the_streams_closed_after_is_timing(good, bad):
    runs = RECORDINGS / "make_j2_stdin_pipe"
    assert _cp_stdin_lseeks(runs / "devnull.parquet") == [("/dev/null", None), ("/dev/null", None)]
    assert _cp_stdin_lseeks(runs / "pipe.parquet") == [("/dev/null", None), ("pipe:", "ESPIPE")]
    report = diff_traces(good=[runs / f"{good}.parquet"], bad=runs / f"{bad}.parquet")
    assert not report.anomaly, report.render_text()


def test_an_lseek_espipe_followed_by_work_is_still_named(tmp_path):
    """The exit-time sync is an lseek ESPIPE with nothing but closes before the exit: the same
    ESPIPE followed by more work (a program needing a seekable input, reading on) stays."""
    runs = RECORDINGS / "make_j2_stdin_pipe"
    events = pl.read_parquet(runs / "pipe.parquet")
    (row,) = events.filter((pl.col("probe") == "lseek") & (pl.col("errno") == "ESPIPE")).rows(named=True)
    # the cp reads its (broken) stdin pipe after the ESPIPE, before its closes
    read_on = pl.DataFrame([{**row, "seq": row["seq"] + 1, "probe": "read", "errno": None, "ret": 0}],
                           schema=events.schema)
    edited = pl.concat([events.filter(pl.col("seq") <= row["seq"]), read_on,
                        events.filter(pl.col("seq") > row["seq"]).with_columns(pl.col("seq") + 1)])
    out = tmp_path / "pipe-read-on.parquet"
    write_table(edited.with_columns(pl.lit("edited").alias("trace_id")), out, "events")
    report = diff_traces(good=[runs / "devnull.parquet"], bad=out)
    assert report.anomaly and report.bifurcation is not None, report.render_text()
    assert report.bifurcation.get("errno") == "ESPIPE", report.render_text()

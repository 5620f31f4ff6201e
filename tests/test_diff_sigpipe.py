"""A pipeline's writer killed by SIGPIPE when its reader had read enough, recorded for real.

`cut -f1 log | head -3`: whether cut finished its file before head had its three lines, or
got EPIPE after 1 or 17 writes and died of the SIGPIPE that comes with it, is timing. The
thirtieth real-program set, written blind, found good runs diffed against each other naming
"write EPIPE pipe:" (9 of 25), the finished run's "lseek <log>", a killed run's "(end of
thread)" -- and, in a run that then failed for real, the EPIPE ranked above the cause. Now
(`_sigpipe_deaths`): a thread whose last call is a write failing EPIPE, or a write to a pipe
that returned what it wrote when the reader left, was killed by SIGPIPE; a good one says
nothing past its last call, a bad one in a run exiting as the good runs did merely stops, and
in a run exiting otherwise its EPIPE ranks as a consequence, below the cause.

The reader's appetite is in a file (one command line for every run): a small one makes cat's
writes meet a closed pipe in every run, a large one lets cat finish.
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import ROOT, fresh_dir, record_run

from baseline.run.diff import diff_traces


@pytest.fixture
def base():
    root = ROOT / "sigpipe"
    fresh_dir(root)
    (root / "big.log").write_text("".join(f"10.0.{i % 256}.{i % 7} GET /item/{i} 200\n" for i in range(60_000)))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _argv(base) -> list[str]:
    # the report after the pipeline: its directory missing is the bad run's real failure
    return ["/bin/sh", "-c", f"cat {base}/big.log | head -c \"$(cat {base}/limit)\" >/dev/null; "
                             f"echo done > {base}/report/summary"]


def _runs(recorder, base, tmp_path, limits: list[int], report_missing_last: bool = False) -> list:
    files = []
    for i, limit in enumerate(limits):
        (base / "limit").write_text(f"{limit}\n")
        shutil.rmtree(base / "report", ignore_errors=True)
        if not (report_missing_last and i == len(limits) - 1):
            (base / "report").mkdir()
        files.append(record_run(recorder, _argv(base), tmp_path / f"run{i}.parquet", "good"))
    return files


SMALL, ALL = 10, 10**9


def _cat_killed(file) -> bool:
    """Whether the pipeline's cat (the one reading big.log) ended in a write, with no exit."""
    import polars as pl

    events = pl.read_parquet(file)
    pid = events.filter((pl.col("comm") == "cat") & pl.col("path").str.ends_with("/big.log"))["pid"][0]
    cat = events.filter(pl.col("pid") == pid).sort("seq")
    return cat["probe"][-1] == "write" and "exit_group" not in cat["probe"].to_list()


@pytest.mark.parametrize(("goods", "diffed"), [([SMALL, SMALL], ALL), ([ALL, ALL], SMALL), ([SMALL, ALL], SMALL)],
                         ids=["killed good runs, a run that finished", "finished good runs, a killed run",
                              "one of each, a killed run"])
def test_a_writer_its_reader_left_is_quiet(recorder, base, tmp_path, goods, diffed):
    files = _runs(recorder, base, tmp_path, [*goods, diffed])
    # the premise: cat was killed where the limit was small, and finished where it was not
    assert [_cat_killed(f) for f in files] == [limit == SMALL for limit in [*goods, diffed]]
    report = diff_traces(good=files[:-1], bad=files[-1])
    assert not report.anomaly, report.render_text()


def test_the_runs_real_failure_ranks_above_its_killed_writer(recorder, base, tmp_path):
    files = _runs(recorder, base, tmp_path, [ALL, ALL, SMALL], report_missing_last=True)
    b = diff_traces(good=files[:-1], bad=files[-1]).bifurcation
    assert b is not None and (b["errno"], b["path"]) == ("ENOENT", str(base / "report" / "summary")), b

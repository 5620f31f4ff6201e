"""A runner's step at the failing call's own path, reached by another interleaving, is not its
cause.

run-parts stats each script and forks the child that execs it; between two scripts its loop
drains the last child's output pipes and reaps it with wait4(WNOHANG)/pselect6, as often as the
scheduler makes it. Once in 40 runs under load the good runs' loops found the child done at
once where the bad run's polled once more (wait4 returning 0, pselect6) before the stat of the
script whose exec then failed, and the good runs' anchor for that region fell on their own stat
of it: the region, named at the stat -- 'good runs did instead: close, wait4, newfstatat
<script>' -- was taken for "a call going elsewhere where the good runs touched the error's
path" (`_cause_in_another_process`) and named above the child's execve ENOENT (CI 53). Going
elsewhere means another path: the same step at the error's path is no cause.

Where the anchor falls depends on the whole streams, so the case is kept as it was recorded
here (tests/recordings/run_parts_one_more_poll: real_twentyeighth's
t28_run_parts_interpreter_gone, two good runs and the bad one of the 40th try); the scenario
itself runs live in tests/test_real_programs_twentyeighth.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces

RECORDED = Path(__file__).resolve().parent / "recordings" / "run_parts_one_more_poll"


def _loop_before(trace: pl.DataFrame, path: str) -> list[str]:
    """run-parts' own calls before its stat of `path`."""
    loop = trace.filter(pl.col("pid") == trace["pid"][0]).sort("seq")
    at = loop.filter((pl.col("probe") == "newfstatat") & (pl.col("path") == path))["seq"][0]
    return loop.filter(pl.col("seq") < at)["probe"].to_list()


def test_the_exec_that_failed_is_named_not_the_stat_reached_by_one_more_poll():
    good = [RECORDED / "good0.parquet", RECORDED / "good1.parquet"]
    bad = pl.read_parquet(RECORDED / "bad.parquet")
    failed = bad.filter((pl.col("probe") == "execve") & (pl.col("errno") == "ENOENT"))
    script = failed["path"][0]
    assert script.endswith("/daily.d/20-report")
    # the recording is what the docstring says: the bad loop polled once more before the stat
    assert _loop_before(bad, script)[-5:] == ["wait4", "pselect6", "read", "close", "wait4"]
    for g in good:
        assert _loop_before(pl.read_parquet(g), script)[-5:] == ["read", "close", "read", "close", "wait4"]
    report = diff_traces(good=good, bad=bad)
    b = report.bifurcation
    assert b is not None and (b["probe"], b["errno"], b["path"]) == ("execve", "ENOENT", script), b
    # the stat's region is still listed, below it
    assert any(a["probe"] == "newfstatat" and a["path"] == script for a in report.anomalies[1:])

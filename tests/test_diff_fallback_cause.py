"""A fallback lookup is the cause of what the program then does at the place it fell back to.

gcc with TMPDIR under a stray file (`scratch` a regular file, `TMPDIR=scratch/tmp`): the driver's
access(scratch/tmp) fails ENOTDIR and the next call, access(/tmp), answers; cc1 and as then work
on /tmp/cc*.s, paths no good run took, to the end. A fallback lookup alone neither names nor
scores its region (the XDG config missing, the dotfile found: docs/diff-json.md); here the diff
named cc1's readlink EINVAL of /tmp/cc*.s, a consequence, and ranked the ENOTDIR third (the
sixtieth real-program set, t60_gcc_tmpdir_under_a_stray_file, every run). A region named at the
path a fallback answered with, or under it, is reported at the fallback's failed call.

Recorded here (tests/recordings/gcc_tmpdir_fallback: good runs of sources of 3, 200 and 20
functions, the bad run); the set runs live in tests/test_real_programs_sixtieth.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces

RECORDED = Path(__file__).resolve().parent / "recordings" / "gcc_tmpdir_fallback"


def test_the_tmpdir_fallback_is_named_not_what_followed_in_tmp():
    goods, bad = [RECORDED / "g0.parquet", RECORDED / "g1.parquet"], RECORDED / "bad.parquet"
    accesses = pl.read_parquet(bad).filter(pl.col("probe") == "access")
    scratch = accesses.filter(pl.col("path").str.ends_with("/scratch/tmp"))
    # the premise: the driver's TMPDIR check failed ENOTDIR, then /tmp answered
    assert scratch["errno"].to_list() == ["ENOTDIR"]
    assert accesses.filter(pl.col("seq") == scratch["seq"][0] + 1)["path"].to_list() == ["/tmp"]
    report = diff_traces(good=goods, bad=bad)
    assert report.anomaly and report.bifurcation is not None, report.render_text()
    b = report.bifurcation
    assert (b["probe"], b["errno"]) == ("access", "ENOTDIR") and b["path"].endswith("/scratch/tmp"), report.render_text()
    assert b["process"]["comm"] == "gcc" and b["process"]["role"].endswith("gcc#0"), b["process"]


def test_the_good_runs_among_themselves_are_quiet():
    report = diff_traces(good=[RECORDED / "g0.parquet", RECORDED / "g1.parquet"], bad=RECORDED / "g2.parquet")
    assert not report.anomaly, report.render_text()

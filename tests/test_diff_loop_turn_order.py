"""A region that opens with known turns of a loop in a new order, then something new, opens at
the new thing.

`find tree -type f -mtime +30 -delete` stats each entry of each directory, then unlinks the old
ones. A janitor run that reaps a listed data file (restored from a backup with an old mtime)
unlinks it where every good run only reaped `tmp/*.part`: that unlinkat is where the run left
them, and sha1sum's openat ENOENT of the file later is its consequence. The entries' names are
the run's data, so the order of their suffixes (.bin, .log, .dat, .json) in the walk is new now and
then within a window of k events: the region then opened at a newfstatat of another file a few
entries before the unlinkat, was named by that error-free stat and ranked below the consequence
(the forty-sixth real-program set, t46_sha1sum_listed_file_reaped, about 1 run in 9 and in CI).

Recorded here (tests/recordings/find_delete_walk_order: that run and its three good runs); the set
runs live in tests/test_real_programs_fortysixth.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces

RECORDED = Path(__file__).resolve().parent / "recordings" / "find_delete_walk_order"


def test_the_reaping_unlinkat_is_named_not_a_stat_before_it():
    goods, bad = [RECORDED / "g0.parquet", RECORDED / "g1.parquet"], RECORDED / "bad.parquet"
    walk = pl.read_parquet(bad).filter(pl.col("comm") == "find").sort("seq")
    reaped = walk.filter((pl.col("probe") == "unlinkat") & pl.col("path").str.contains("/tree/data/"))
    # the premise: one listed data file unlinked, right after the stats of its directory's entries
    assert reaped.height == 1 and reaped["errno"].to_list() == [None]
    before = walk.filter(pl.col("seq").is_between(reaped["seq"][0] - 9, reaped["seq"][0] - 1))
    assert set(before["probe"]) == {"newfstatat"}
    report = diff_traces(good=goods, bad=bad)
    assert report.anomaly and report.bifurcation is not None, report.render_text()
    b = report.bifurcation
    assert (b["probe"], b["errno"], b["path"]) == ("unlinkat", None, reaped["path"][0]), report.render_text()
    # the consequence the user sees first is still reported, below its cause
    later = [(a["probe"], a["errno"], a["path"]) for a in report.anomalies[1:]]
    assert ("openat", "ENOENT", reaped["path"][0]) in later, report.render_text()


def test_the_good_runs_among_themselves_are_quiet():
    report = diff_traces(good=[RECORDED / "g0.parquet", RECORDED / "g1.parquet"], bad=RECORDED / "g2.parquet")
    assert not report.anomaly, report.render_text()

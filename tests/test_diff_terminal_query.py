"""A terminal query right before a message is part of printing it, not what the message reports.

unzip extracting a batch whose second member's deflate data is garbled: it inflates the member,
finds the CRC wrong, asks whether stdout is a terminal (ioctl TIOCGWINSZ, ENOTTY on /dev/null),
prints " bad CRC ..." there, extracts the third member as the good runs do and exits 2. No call
fails for the garbled data; the good runs make no ioctl. The curated isatty entry sets the ENOTTY
aside, but the rule that looks for an allowlisted error a run's last message reports at a call
site no good run has (`_allowlisted_cause`) took it for the cause, so the diff named an error its
own report counted as ignored (the sixty-third real-program set, t63_unzip_batch_member_damaged,
every run). An ioctl ENOTTY on the path the thread writes its message to right after is passed
over: the region is named by the message's write.

Recorded here (tests/recordings/unzip_terminal_query); the set runs live in
tests/test_real_programs_sixtythird.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces

RECORDED = Path(__file__).resolve().parent / "recordings" / "unzip_terminal_query"


def test_the_message_is_named_not_the_terminal_query_before_it():
    goods, bad = [RECORDED / "g0.parquet", RECORDED / "g1.parquet"], RECORDED / "bad.parquet"
    unzip = pl.read_parquet(bad).filter(pl.col("comm") == "unzip").sort("seq")
    queries = unzip.filter(pl.col("probe") == "ioctl")
    # the premise: no call fails for the garbled data (lookups only), and both terminal queries precede a write there
    assert set(unzip.filter(pl.col("errno").is_not_null())["probe"]) <= {"ioctl", "newfstatat", "openat", "access"}
    assert queries["errno"].to_list() == ["ENOTTY", "ENOTTY"] and set(queries["path"]) == {"/dev/null"}
    after = unzip.filter(pl.col("seq").is_in([s + 1 for s in queries["seq"]]))
    assert after["probe"].to_list() == ["write", "write"] and set(after["path"]) == {"/dev/null"}
    report = diff_traces(good=goods, bad=bad)
    assert report.anomaly and report.bifurcation is not None, report.render_text()
    b = report.bifurcation
    assert (b["probe"], b["errno"], b["path"]) == ("write", None, "/dev/null"), report.render_text()
    assert "bad CRC" in (b.get("output") or report.render_text())


def test_the_good_runs_among_themselves_are_quiet():
    report = diff_traces(good=[RECORDED / "g0.parquet", RECORDED / "g1.parquet"], bad=RECORDED / "g2.parquet")
    assert not report.anomaly, report.render_text()

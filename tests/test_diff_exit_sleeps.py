"""A thread's reordered end is judged without its sleeps.

rsync's generator (the second of its three processes) sleeps in its exit handshake -- kill,
wait4, clock_nanosleep until the receiver is reaped -- as often as the receiver is slow: twice in
two good runs of the thirtieth real-program set, not at all in a third, whose generator also
read and wrote its socketpair in another interleaving up to its end. `_reordered_at_end` takes a
thread's last error-free region for the same work in another order when the thread did every
kind of event a good thread of its role did; the sleep was the one kind missing, and the diff
named "read socketpair:" good vs good (2 in 29 runs). A sleep is no kind of work: it is left out
of the kinds compared (a thread that stopped early still misses the others).

Kept as recorded here (tests/recordings/rsync_exit_without_sleep: t30_rsync_dest_recreated_root's
three good runs of that session); the set itself runs live in
tests/test_real_programs_thirtieth.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces

RECORDED = Path(__file__).resolve().parent / "recordings" / "rsync_exit_without_sleep"


def _sleeps_per_rsync(file: Path) -> list[int]:
    events = pl.read_parquet(file)
    pids = events.filter(pl.col("comm") == "rsync")["pid"].unique(maintain_order=True).to_list()
    return [events.filter((pl.col("pid") == pid) & (pl.col("probe") == "clock_nanosleep")).height for pid in pids]


def test_a_generator_that_did_not_sleep_in_its_exit_handshake_is_quiet():
    goods = [RECORDED / "good0.parquet", RECORDED / "good1.parquet"]
    third = RECORDED / "good2.parquet"
    # the premise: the generator (second rsync) slept twice in the two, not at all in the third
    assert [_sleeps_per_rsync(f)[1] for f in goods] == [2, 2] and _sleeps_per_rsync(third)[1] == 0
    report = diff_traces(good=goods, bad=third)
    assert not report.anomaly, report.render_text()

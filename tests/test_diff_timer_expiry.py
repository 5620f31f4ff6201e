"""A wait that expired on the program's own timer, later than the good runs' did, is timing.

rt_node_http_port0_epoll's server answers each of five requests after a random delay
(setTimeout(.., Math.random() * 20)): libuv's epoll_pwait sleeps until the next timer is due and
returns 0 then. In round twenty-nine's stop CI the bad run's main thread waited 10.5 ms for one
(the good runs' longest: 6.8 and 9.6 ms), past `TIMED_OUT_MIN_NS`, and the requests' reads and
writes after it came in another order: the diff named the wait a timeout ("epoll_pwait None
None") good vs good. A wait of a role whose good runs' waits expired too (`TIMER_EXPIRY_MIN_NS`:
the program waits on timers), followed by known events in another order re-joining the good
runs, in a run exiting as they did, is how the timers fell (`_TimedOutWaits.on_timers`).

Kept as recorded here (tests/recordings/node_timer_expired_late: that CI's three good runs);
the set runs live in tests/test_real_programs_twentythird.py, real timeouts (a server that
never answers) in tests/test_real_programs_seventh.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces
from baseline.run.rules.waits import TIMED_OUT_MIN_NS, TIMER_EXPIRY_MIN_NS
from tracer.schema import write_table

RECORDED = Path(__file__).resolve().parent / "recordings" / "node_timer_expired_late"
GOODS = [RECORDED / "good0.parquet", RECORDED / "good1.parquet"]
LATE = RECORDED / "late.parquet"
WAITS = ["epoll_pwait", "epoll_wait"]


def _expiries_ms(file: Path) -> list[float]:
    """How long each wait of the run that returned nothing ready blocked, longest first."""
    events = pl.read_parquet(file)
    waits = events.filter(pl.col("probe").is_in(WAITS) & (pl.col("ret") == 0) & (pl.col("latency_ns") > 0))
    return sorted((waits["latency_ns"] / 1e6).to_list(), reverse=True)


def test_the_premise_only_the_late_run_waited_past_the_timeout_bound():
    bound = TIMED_OUT_MIN_NS / 1e6
    late = _expiries_ms(LATE)
    assert late[0] >= bound
    for good in GOODS:
        expiries = _expiries_ms(good)
        assert expiries[0] < bound and expiries[0] >= TIMER_EXPIRY_MIN_NS / 1e6  # timers, all shorter


def test_a_timer_that_came_due_later_is_quiet():
    report = diff_traces(good=GOODS, bad=LATE)
    assert not report.anomaly, report.render_text()


def _with_exit_status(src: Path, dst: Path, status: int) -> Path:
    events = pl.read_parquet(src)
    return write_table(events.with_columns(pl.lit(status).cast(events.schema["exit_status"]).alias("exit_status")),
                       dst, "events")


def test_the_same_wait_in_a_run_exiting_otherwise_is_named(tmp_path):
    """The rule asks a run exiting as the good runs did: a client whose wait expired and which
    then exits 1 (node's request timeout firing) has its wait named."""
    late = _with_exit_status(LATE, tmp_path / "late-exit1.parquet", 1)
    report = diff_traces(good=GOODS, bad=late)
    top = report.bifurcation
    assert report.anomaly and top["probe"] == "epoll_pwait" and top["errno"] is None
    assert top["timed_out_ms"] >= TIMED_OUT_MIN_NS / 1e6


def _without_timers(src: Path, dst: Path) -> Path:
    """The run with every wait that returned nothing ready made instant: a program that never
    sleeps on a timer, only polls."""
    events = pl.read_parquet(src)
    instant = pl.col("probe").is_in(WAITS) & (pl.col("ret") == 0)
    events = events.with_columns(pl.when(instant).then(pl.lit(20_000, pl.Int64)).otherwise(pl.col("latency_ns"))
                                 .cast(events.schema["latency_ns"]).alias("latency_ns"))
    return write_table(events, dst, "events")


def test_a_late_wait_where_the_good_runs_never_waited_on_a_timer_is_named(tmp_path):
    goods = [_without_timers(g, tmp_path / g.name) for g in GOODS]
    report = diff_traces(good=goods, bad=LATE)
    top = report.bifurcation
    assert report.anomaly and top["probe"] == "epoll_pwait", report.render_text()

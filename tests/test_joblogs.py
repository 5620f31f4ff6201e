"""The simulator's job logs: NCCL WARN lines for the failures it injected, in the format the
NCCL parser reads, consistent with the events and truth tables it wrote."""

from __future__ import annotations

import polars as pl

from baseline.pipeline.nccl import load_app_failures
from baseline.simulator.simulate import simulate
from tracer.schema import read, read_events


def test_job_logs_name_every_application_visible_failure(tmp_path):
    out = tmp_path / "fleet"
    simulate(out, hosts=4, hours=4, seed=11)
    logs = sorted((out / "joblogs").glob("*.log"))
    assert logs and all(p.stat().st_size for p in logs)
    parsed = load_app_failures([str(out / "joblogs" / "*.log")])
    assert parsed.problems == []
    app = parsed.failures
    events = read_events(out / "events")
    truth = read(out / "truth", "truth")
    routine = set(truth.filter(pl.col("expected_error"))["trace_id"])
    roots = events.filter((pl.col("seq") == 0) & (pl.col("ret") < 0) & ~pl.col("trace_id").is_in(routine))
    unobserved = truth.filter(pl.col("trace_id").str.contains(":unobserved-"))
    assert app.height == roots.height + unobserved.height
    # per host and errno, the log says what the probed call trees returned
    want = roots.group_by("host", "errno").len().sort("host", "errno")
    got = app.filter(pl.col("verb") != "ibv_dealloc_pd").group_by("host", "errno").len().sort("host", "errno")
    assert got.equals(want)
    assert app.filter(pl.col("verb") == "ibv_dealloc_pd")["errno"].to_list() == ["EBUSY"] * unobserved.height
    # timestamps: the failing call's start, to the millisecond
    first = roots.sort("start_time").row(0, named=True)
    t = app.filter(pl.col("host") == first["host"]).sort("time")["time"][0]
    assert abs((t - first["start_time"]).total_seconds()) < 0.001 or t < first["start_time"]

"""The audit's narrow in-memory tables read the same as the wide ones they replace.

collect_traces keeps flags (has_error, root_failed, truncated, timed), a UInt32 weight and the
trace_id of traces with an error only, where per_trace_table has kind, exit_status, root_err,
errors, frames, lost_events and repeat_count; run_audit holds the bucketed counters' layer,
vendor and kernel release as a side table (counters.split_cell_attributes). Both are checked
against the wide form on fleets of two generators that share no code with the audit or the
simulator (tests/fleetgen: truncated trees, clipped pointer returns, a kernel update mid-window;
tests/fleetgen4: in-kernel aggregation, examples with repeat counts), through every reader: the failing
traces, the expected-error learner, the host alerts, the release history and the host vendors.
"""

from __future__ import annotations

import polars as pl
import pytest

from baseline.fleet.audit import _failing, host_alerts, run_audit
from baseline.fleet.counters import CELL_ATTRIBUTES, counter_buckets, split_cell_attributes
from baseline.fleet.expected import FleetExpectedLearner, host_vendors, release_history
from baseline.fleet.model import (
    AUDIT_COLUMNS,
    TRACE_LEVEL,
    collect_traces,
    event_batches,
    per_trace_table,
)
from baseline.run.allowlist import load_default
from tracer.schema import dataset_files

WIDE_ONLY = {"kind", "exit_status", "root_err", "errors", "frames", "lost_events", "repeat_count"}


def _generate(name: str, root, hosts: int, hours: float, seed: int) -> None:
    if name == "fleetgen":
        from fleetgen import generate
    else:
        from fleetgen4 import generate
    generate(root, hosts=hosts, hours=hours, seed=seed)


@pytest.fixture(scope="module", params=[("fleetgen", 30, 4.0, 12), ("fleetgen4", 24, 4.0, 1)], ids=lambda p: p[0])
def fleet(request, tmp_path_factory):
    name, hosts, hours, seed = request.param
    root = tmp_path_factory.mktemp(name)
    _generate(name, root, hosts, hours, seed)
    traces, chains = collect_traces(root, batch_rows=50_000)
    return root, traces, chains


def wide_traces(root) -> pl.DataFrame:
    """The per-trace table in its wide form: per_trace_table with every TRACE_LEVEL column, the
    same categoricals and `timed` (one batch per file, as collect_traces reads them)."""
    parts = []
    for batch in event_batches(root, batch_rows=1, columns=AUDIT_COLUMNS):
        per = per_trace_table(batch.collect(), keep=TRACE_LEVEL)
        parts.append(per.with_columns(pl.col("host", "operation", "job_id", "kernel_release").cast(pl.Categorical),
                                      pl.col("latency_ns").is_not_null().alias("timed")).drop("latency_ns"))
    return pl.concat(parts, how="vertical_relaxed")


def _sorted(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in one order, and the elements of list columns too (the learner's per-probe rate
    bands come in whatever order a group-by gave them)."""
    lists = [c for c, t in df.schema.items() if isinstance(t, pl.List)]
    df = df.with_columns(pl.col(pl.Categorical).cast(pl.String),
                         *[pl.col(c).map_elements(lambda v: repr(sorted(map(repr, v))), return_dtype=pl.String)
                           for c in lists])
    return df.sort(df.columns, nulls_last=True)


def test_the_narrow_per_trace_table_reads_as_the_wide_one(fleet):
    root, traces, chains = fleet
    wide = wide_traces(root)
    assert traces.height == wide.height > 0
    assert not WIDE_ONLY & set(traces.columns) and set(wide.columns) >= WIDE_ONLY
    assert traces.schema["weight"] == pl.UInt32
    # the trace id is kept where a finding may name it, and only there
    errs = wide["errors"] > 0
    assert traces["has_error"].to_list() == errs.to_list() and errs.any() and not errs.all()
    assert traces["trace_id"].null_count() == traces.height - int(errs.sum())
    assert traces.filter("has_error")["trace_id"].to_list() == wide.filter(errs)["trace_id"].to_list()
    # the data has what the flags stand for
    if "fleetgen4" in str(root):
        assert wide["repeat_count"].fill_null(1).max() > 1
    else:
        assert (wide["lost_events"].fill_null(0) > 0).any() and (wide["exit_status"] == -(2**31)).any()
    failing = _failing(traces)
    assert failing.equals(_failing(wide)) and failing["truncated"].any() == bool(
        (wide["lost_events"].fill_null(0) > 0).any())
    files = dataset_files(root, "counters")
    counters = counter_buckets(files) if files else None
    narrow = FleetExpectedLearner().fit_traces(traces, chains, counters).candidates_
    assert narrow.height and _sorted(narrow).equals(_sorted(FleetExpectedLearner().fit_traces(wide, chains, counters)
                                                            .candidates_))


def test_the_counters_cell_attributes_read_the_same_from_their_side_table(fleet):
    root, traces, chains = fleet
    calls, errors = counter_buckets(dataset_files(root, "counters"))
    slim, attrs = split_cell_attributes(calls)
    assert not set(CELL_ATTRIBUTES) & set(slim.columns) and slim.height == calls.height
    assert 0 < attrs.height < calls.height / 4
    wide, split = (calls, errors), (slim, errors, attrs)
    # a probe's first layer (host alerts name the deepest probe by it when no depth is known)
    alerts = host_alerts(wide, load_default())
    assert alerts.height and alerts.equals(host_alerts(split, load_default()))
    # when a host first ran each release; each host's vendor
    assert _sorted(release_history(traces, calls)).equals(_sorted(release_history(traces, attrs)))
    assert _sorted(host_vendors(traces, chains, wide)).equals(_sorted(host_vendors(traces, chains, split)))
    learned = FleetExpectedLearner().fit_traces(traces, chains, wide).candidates_
    assert learned.height and _sorted(learned).equals(
        _sorted(FleetExpectedLearner().fit_traces(traces, chains, split).candidates_))


def test_the_audit_with_both_layouts_is_the_same(fleet, monkeypatch):
    """run_audit end to end with the side table (as it runs) and without (the counters kept wide)."""
    import baseline.fleet.audit as audit

    root = fleet[0]
    split = run_audit(root)
    monkeypatch.setattr(audit, "split_cell_attributes", lambda calls: (calls, calls))
    wide = run_audit(root)
    assert split.findings.height and split.host_alerts.height
    for name in ("findings", "clusters", "host_alerts"):
        assert getattr(split, name).equals(getattr(wide, name)), name

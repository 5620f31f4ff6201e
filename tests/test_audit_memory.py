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

import datetime as dt

import polars as pl
import pytest

from baseline.fleet.audit import _failing, _host_groups, host_alerts, run_audit
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


def _generator(name: str):
    if name == "fleetgen":
        from fleetgen import generate
    else:
        from fleetgen4 import generate
    return generate


# fleetgen4's shape is tests/test_fleetgen4.py's: the session generates that fleet once for both
@pytest.fixture(scope="module", params=[("fleetgen", 30, 4, 12), ("fleetgen4", 24, 4, 1)], ids=lambda p: p[0])
def fleet(request, tmp_path_factory, generated_fleet):
    name, hosts, hours, seed = request.param
    root = tmp_path_factory.mktemp(name) / "fleet"
    generated_fleet(name, _generator(name), root, hosts=hosts, hours=hours, seed=seed)
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


def test_host_alerts_do_not_depend_on_the_counters_row_order(fleet):
    """The counters come in whatever order the files were read (CI once saw the wide and the
    split form disagree): a host updated mid-window belongs to its latest bucket's release in
    both forms and in any row order, and so do its platform group and its alerts."""
    root, traces, chains = fleet
    calls, errors = counter_buckets(dataset_files(root, "counters"))
    if "fleetgen4" not in str(root):  # the data has what the rule is about: a kernel update mid-window
        assert (calls.group_by("host").agg(pl.col("kernel_release").n_unique())["kernel_release"] > 1).any()
    alerts = host_alerts((calls, errors), load_default())
    for seed in range(3):
        shuffled = calls.sample(fraction=1.0, shuffle=True, seed=seed)
        slim, attrs = split_cell_attributes(shuffled)
        assert alerts.equals(host_alerts((shuffled, errors), load_default()))
        assert alerts.equals(host_alerts((slim, errors, attrs), load_default()))
    # a rollback (release A, then B, then A again): the host is on A at the end, in both forms
    one = calls.filter(pl.col("host") == calls["host"][0]).sort("bucket")
    thirds = [["A", "B", "A"][i * 3 // one.height] for i in range(one.height)]
    back = one.with_columns(pl.Series("kernel_release", thirds).cast(calls.schema["kernel_release"]))
    for table in (back, back.reverse(), split_cell_attributes(back.reverse())[1]):
        assert _host_groups(table)["kernel_release"].to_list() == ["A"]


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


def test_cluster_names_are_the_first_mode_in_text_order_counted_on_codes():
    """_cluster_table counts the signatures, origin layers and releases of the open findings on
    their categorical codes; ties go to the first text (a null first), a signature with a
    truncation note names its cluster only when no complete one does -- as mode().sort().first()
    over the text does."""
    from baseline.fleet.audit import _cluster_table

    t0 = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    note = " [truncated: origin at or below x (core)]"
    rows = [  # cluster, signature, origin layer, host, release, weight
        (0, "b: sig", "core", "h1", "r1", 1), (0, "a: sig", "driver", "h2", "r2", 1),  # tie: a, and driver
        (0, "b: sig", None, "h1", "r2", 5), (0, "a: sig", None, "h2", "r2", 1),  # null origin first in a tie
        (1, "z: sig" + note, "core", "h3", "r2", 1), (1, "z: sig" + note, "core", "h3", "r2", 1),
        (1, "y: sig", "core", "h3", "r2", 1),  # the complete one names it, though rarer
        (2, "c: sig" + note, "uverbs", "h4", None, 2),  # only truncated ones: named by them
    ]
    clustered = pl.DataFrame(
        [(c, s, o, h, j, t0 + dt.timedelta(minutes=i), f"t{i}", r, w) for i, (c, s, o, h, r, w) in enumerate(rows)
         for j in [f"job{i % 3}"]],
        schema={"cluster_id": pl.Int32, "signature": pl.String, "origin_layer": pl.String, "host": pl.String,
                "job_id": pl.String, "time": pl.Datetime("ns", "UTC"), "trace_id": pl.String,
                "kernel_release": pl.String, "weight": pl.Int64}, orient="row")
    releases = pl.DataFrame({"host": ["h1", "h1", "h2", "h3"], "kernel_release": ["r1", "r2", "r2", "r2"],
                             "new_release": [False, True, False, True]})
    window = (t0, t0 + dt.timedelta(hours=1))
    cats = clustered.with_columns(pl.col("signature", "origin_layer", "host", "job_id", "kernel_release")
                                  .cast(pl.Categorical))
    table = _cluster_table(cats, window, releases=releases)
    assert table.equals(_cluster_table(clustered, window, releases=releases))
    # all of cluster 1 on a release its host switched to; 5 of cluster 0's 8 only
    assert table["signature"].to_list() == ["a: sig", "y: sig | since kernel update to r2", "c: sig" + note]
    assert table["origin_layer"].to_list() == [None, "core", "uverbs"]
    assert table["failures"].to_list() == [8, 3, 2] and table["hosts"].to_list() == [2, 1, 1]
    # the reference: the text aggregation _cluster_table made before it counted on codes
    text = clustered.group_by("cluster_id").agg(
        pl.coalesce(pl.col("signature").filter(~pl.col("signature").str.contains("[truncated:", literal=True))
                    .mode().sort().first(), pl.col("signature").mode().sort().first()),
        pl.col("origin_layer").mode().sort().first()).sort("cluster_id")
    plain = _cluster_table(cats, window)
    assert plain.select("signature", "origin_layer").equals(text.select("signature", "origin_layer"))


def test_the_platforms_calls_counted_in_parts_are_the_same(fleet, monkeypatch):
    """The platform rules' calls per (probe, bucket, platform) and how many hosts made them are
    counted over disjoint sets of hosts and added (a distinct count over all ~5M cells of a
    fleet-day held ~330 MiB, the audit's peak): the numbers of one count over every cell, in
    parts of any size, with host codes or host texts, and the host alerts the same."""
    import baseline.fleet.audit as audit

    root = fleet[0]
    calls, errors = counter_buckets(dataset_files(root, "counters"))
    groups = _host_groups(calls)
    hosts = audit._platform_hosts(groups)[1]
    assert hosts["_plat"].n_unique() > 1  # several platforms: the count is per platform
    # the reference: one distinct count of the hosts with calls, per (probe, bucket, platform)
    want = (calls.filter(pl.col("n") > 0).join(hosts, on="host", how="left")
            .group_by("probe", "bucket", "_plat")
            .agg(pl.col("n").sum().alias("_N_plat"), pl.col("host").n_unique().cast(pl.UInt32).alias("_H_plat")))
    assert want["_H_plat"].max() > 1

    def rows(df: pl.DataFrame) -> pl.DataFrame:
        return df.with_columns(pl.col("probe").cast(pl.String)).sort("probe", "bucket", "_plat")

    slim = calls.drop(CELL_ATTRIBUTES)
    alerts = host_alerts((slim, errors, split_cell_attributes(calls)[1]), load_default())
    for part_rows in (10**9, calls.height // 3, 97):
        monkeypatch.setattr(audit, "PLATFORM_CALLS_PART_ROWS", part_rows)
        got = audit._platform_calls(slim, hosts)
        assert got.schema == want.schema and rows(got).equals(rows(want)), part_rows
        text = slim.with_columns(pl.col("host").cast(pl.String))
        assert rows(audit._platform_calls(text, hosts.with_columns(pl.col("host").cast(pl.String)))).equals(rows(want))
        assert alerts.equals(host_alerts((slim, errors, split_cell_attributes(calls)[1]), load_default())), part_rows


def test_the_failing_traces_filtered_a_column_at_a_time_are_the_filtered_table(fleet):
    """run_audit filters the failing traces' columns one at a time once the per-trace table is
    freed (_failing_columns, _filter_by_column), so that no moment holds both whole: the rows,
    order, columns and types of the whole table filtered at once."""
    from baseline.fleet.audit import _failing_columns, _filter_by_column

    _, traces, _ = fleet
    columns = _failing_columns(traces)
    assert columns.height == traces.height and columns["_failing"].any() and not columns["_failing"].all()
    want = columns.filter("_failing").drop("_failing")
    got = _filter_by_column(columns, "_failing")
    assert got.equals(want) and got.schema == want.schema and _failing(traces).equals(want)
    assert columns.width == want.width + 1  # the caller's frame is left whole (only references dropped)
    empty = _filter_by_column(columns.clear(), "_failing")
    assert empty.is_empty() and empty.schema == want.schema


def test_the_failing_traces_come_in_one_chunk_a_column(fleet):
    """The per-trace table comes in one chunk per events batch; the failing traces' columns are
    filtered into one chunk each: beside the findings' chain columns (made in one piece) a frame
    chunked otherwise is rechunked whole by the next select, a copy of every column at the
    audit's memory peak."""
    from baseline.fleet.audit import _failing_columns, _filter_by_column

    _, traces, _ = fleet
    half = traces.height // 2  # two events batches' tables, as collect_traces concatenates them
    traces = pl.concat([traces.slice(0, half), traces.slice(half)], rechunk=False)
    assert traces.n_chunks() == 2
    got = _filter_by_column(_failing_columns(traces), "_failing")
    assert got.height and all(s.n_chunks() == 1 for s in got.get_columns())
    assert got.equals(_failing(traces))


def test_the_failing_traces_joined_to_their_chains_a_slice_at_a_time_are_the_same(fleet, monkeypatch):
    """_findings_of_failing finds each failing trace's chain row a slice of the traces at a time
    (the join of millions of rows at once held ~400 MiB beside them): the findings are the same
    for slices of any size, one slice or many, with a slice boundary inside a chain's traces."""
    import baseline.fleet.audit as audit
    from baseline.fleet.model import GoodTraceBaseline

    root, traces, chains = fleet
    model = GoodTraceBaseline().fit(root)
    failing = _failing(traces)
    findings = {}
    for rows in (10**9, failing.height // 3 + 1, 97):
        monkeypatch.setattr(audit, "ROW_JOIN_SLICE_ROWS", rows)
        findings[rows] = audit._findings_of_failing(failing, chains, model, load_default())
    whole = findings.pop(10**9)
    assert whole.height == failing.height and whole["signature"].null_count() == 0
    for rows, got in findings.items():
        assert got.equals(whole) and got.schema == whole.schema, rows


def test_the_bucketed_counters_are_freed_before_the_findings(fleet, monkeypatch):
    """run_audit frees the bucketed counters once the host alerts are made: the counters'
    thread's future held them (its result) to the end of the audit, ~130 MiB of a 10,000-host
    day's peak. Checked by weak references to the counters' frames, taken where the thread
    returns them and read where the findings begin."""
    import gc
    import weakref

    import baseline.fleet.audit as audit

    root = fleet[0]
    refs: list[weakref.ref] = []
    alive: list[int] = []
    listed, findings_of_failing = audit._listed_bucketed_counters, audit._findings_of_failing

    def counters_watched(*args, **kwargs):
        listed_now = listed(*args, **kwargs)  # (the bucketed tables, the stale-summary count)
        refs.extend(weakref.ref(frame) for frame in listed_now[0])
        return listed_now

    def findings_when_freed(*args, **kwargs):
        gc.collect()
        alive.append(sum(ref() is not None for ref in refs))
        return findings_of_failing(*args, **kwargs)

    monkeypatch.setattr(audit, "_listed_bucketed_counters", counters_watched)
    monkeypatch.setattr(audit, "_findings_of_failing", findings_when_freed)
    result = run_audit(root)
    assert result.findings.height and result.host_alerts.height
    assert len(refs) == 3 and alive == [0]

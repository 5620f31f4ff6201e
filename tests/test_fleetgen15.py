"""The audit scored on tests/fleetgen15, a fifteenth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: a firmware whose successful commands slow down for two hours before INIT->RTR
times out on one host, a peer-memory ENOMEM that arrives with a kernel/OFED upgrade on the two
canary hosts that took it (host-memory registrations there pass), a routine double dereg_mr at
process exit beside a fatal destroy_qp EBUSY confined to one host's teardowns, and a host whose
wall clock runs seven minutes ahead (generator.py has the fleet and the decisions behind its
truth)."""

from __future__ import annotations

import polars as pl
from fleet_harness import (
    assert_errno_from_reference,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen15 import ROOT_CAUSES, ROUTINE, generate
from fleetgen15.generator import OPS, frames_of

from tracer.schema import dataset_files, read

fleet15 = audited_fleet("fleet15", generate, package="fleetgen15", hosts=64, hours=3, seed=15)


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen15", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's and routine family's
    errno is one the reference gives near its origin (mlx5_cmd_exec: the firmware mapping)."""
    assert_functions_in_reference({fn for op, v in OPS for ofed in (True, False) for _, fn in frames_of(op, ofed, v)})
    for key, (probe, errno, _) in {**ROOT_CAUSES, **ROUTINE}.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet15):
    root, summary, _, _ = fleet15
    events = read(dataset_files(root, "events"), "events")
    counters = read(dataset_files(root, "counters"), "counters")
    traces = events.filter(pl.col("seq") == 0)
    # the slow firmware: its timed successful commands get slower hour by hour (the fleet's do
    # not), then INIT->RTR times out
    cmds = events.filter(pl.col("probe") == "mlx5_cmd_exec", pl.col("errno").is_null(), pl.col("latency_ns").is_not_null())
    by_hour = (cmds.group_by(pl.col("host") == summary["slow_host"], pl.col("start_time").dt.hour())
               .agg(pl.col("latency_ns").median()).sort("host", "start_time"))
    fleet, slow = (by_hour.filter(pl.col("host") == s)["latency_ns"] for s in (False, True))
    assert slow.len() == 3 and slow[-1] > 5 * slow[0] and slow[-1] > 20 * fleet[-1] and fleet[-1] < 2 * fleet[0]
    assert traces.filter(pl.col("host") == summary["slow_host"], pl.col("exit_status") == -110).height > 3
    # the canaries: a new release mid-window, ENOMEM only on it, host-memory registrations passing
    for host in summary["canary_hosts"]:
        mine = traces.filter(pl.col("host") == host)
        assert set(mine["kernel_release"]) == {"5.15.0-122-generic", "5.15.0-126-generic"}
        enomem = mine.filter(pl.col("exit_status") == -12)
        assert enomem.height > 10 and set(enomem["kernel_release"]) == {"5.15.0-126-generic"}
    assert set(traces.filter(pl.col("exit_status") == -12)["host"]) == set(summary["canary_hosts"])
    # teardown: EBUSY only at destroy_qp on the leak host; the routine ENOENT at dereg_mr everywhere
    busy = traces.filter(pl.col("exit_status") == -16)
    assert set(busy["host"]) == {summary["leak_host"]} and set(busy["command"]) == {"destroy_qp"}
    assert traces.filter(pl.col("exit_status") == -2)["host"].n_unique() > 40
    # the clock: that host's snapshot times run 7 minutes ahead of its rack's
    first = counters.group_by("host").agg(pl.col("snapshot_time").min())
    ahead = first.filter(pl.col("host") == summary["clock_ahead_host"])["snapshot_time"][0]
    assert (ahead - first["snapshot_time"].min()).total_seconds() > 6 * 60


def test_root_causes_found_and_clustered(fleet15):
    """Every trace of every root cause is a finding, none set aside, at its origin; nothing on a
    good trace."""
    _, _, _, scores = fleet15
    for key in ("cluster_completeness", "bifurcation_top1", "origin_layer_top1", "expected_error_precision"):
        assert scores[key] == 1.0, (key, scores[key])
    assert scores["false_findings_on_good"] == 0
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] >= 1 and e["set_aside_as_expected"] == 0, (cause, e)
        assert e["dominant_cluster_purity"] == 1.0, (cause, e)


def test_routine_families_set_aside(fleet15):
    """Empty GID slots, the rescued GUP EFAULT and the double dereg at process exit are set
    aside everywhere, the canaries, the slow host and the leaking host included."""
    root, _, _, scores = fleet15
    findings = pl.read_parquet(root / "audit" / "findings.parquet")
    truth = read(dataset_files(root, "truth"), "truth").filter(pl.col("expected_error"))
    opened = findings.join(truth.select("trace_id"), on="trace_id").filter(~pl.col("expected"))
    assert opened.is_empty(), opened.group_by("host", "operation", "bifurcation_probe", "bifurcation_errno").len()
    assert scores["routine_set_aside"] == 1.0 and scores["false_findings"] == 0


def test_host_alert_recall_and_precision(fleet15):
    """The slow firmware's host alerts with ETIMEDOUT, both canaries with ENOMEM, the leaking host
    with EBUSY; nothing anywhere else (the clock running ahead, the reboots)."""
    _, summary, result, _ = fleet15
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    missed = [host for host, errnos in summary["required_alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and e is None)) for h, a, _, e in rows)]
    assert not missed, (missed, result.host_alerts)
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false

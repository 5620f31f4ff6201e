"""The audit scored on tests/fleetgen14, a fourteenth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: a fault on one NIC port of a four-NIC host (the other three devices healthy: the
host fails part of its INIT->RTR, never most), reg_mr EAGAIN routine at the rdma cgroup's charge
and fatal at the firmware's CREATE_MKEY, a whole rack's tracers restarted in a maintenance window
(gaps, negative deltas: nothing wrong), a leak whose rate doubles every hour on one host, and one
errno at one call site that one tenant retries through and the other dies of (generator.py has
the fleet and the decisions behind its truth)."""

from __future__ import annotations

import polars as pl
from fleet_harness import (
    assert_errno_from_reference,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen14 import ROOT_CAUSES, ROUTINE, generate
from fleetgen14.generator import OPS, frames_of

from tracer.schema import dataset_files, read

fleet14 = audited_fleet("fleet14", generate, package="fleetgen14", hosts=64, hours=3, seed=14)

def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen14", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's and routine family's
    errno is one the reference gives near its origin (mlx5_cmd_exec: the firmware mapping)."""
    assert_functions_in_reference({fn for op, v in OPS for _, fn, _, _ in frames_of(op, v)})
    for key, (probe, errno, _) in {**ROOT_CAUSES, **ROUTINE}.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet14):
    root, summary, _, _ = fleet14
    counters = read(dataset_files(root, "counters"), "counters")
    events = read(dataset_files(root, "events"), "events")
    traces = events.unique("trace_id").with_columns(
        pl.col("metadata").list.eval(pl.element().filter(pl.element().struct.field("key") == "device")
                                     .struct.field("value")).list.first().alias("device"))
    # one port: every failing INIT->RTR of the port host is on the bad device, and its other
    # devices' INIT->RTR pass
    port = traces.filter(pl.col("host") == summary["port_host"], pl.col("command") == "modify_qp")
    failing = port.filter(pl.col("exit_status") < 0)
    assert failing.height > 20 and set(failing["device"]) == {summary["bad_device"]}
    assert set(port.filter(pl.col("exit_status") == 0)["device"]) >= {"mlx5_0", "mlx5_1", "mlx5_3"}
    # the maintenance rack: a gap of a minute or more in every host's snapshots at the same time,
    # and negative deltas shipped on half of its hosts
    gaps = (counters.filter(pl.col("host").is_in(summary["maintenance"])).select("host", "snapshot_time").unique()
            .sort("host", "snapshot_time").group_by("host")
            .agg(pl.col("snapshot_time").diff().max().dt.total_seconds().alias("gap")))
    assert gaps.height == len(summary["maintenance"]) and gaps["gap"].min() >= 100
    negative = counters.filter(pl.col("invocations") < 0)
    assert set(negative["host"]) == set(summary["maintenance"][::2])
    # the trend: the leak's failures per hour double (within noise) on the one host
    leak = (traces.filter(pl.col("host") == summary["trend_host"], pl.col("command") == "create_cq",
                          pl.col("exit_status") < 0)
            .group_by(pl.col("start_time").dt.hour()).len().sort("start_time")["len"].to_list())
    assert len(leak) == 3 and leak[0] < leak[-1]
    # the two tenants' ETIMEDOUT: the same frames on the same rack
    timeouts = traces.filter(pl.col("command") == "modify_qp", pl.col("exit_status") == -110)
    assert set(timeouts["comm"]) == {"python3", "brisk-worker"}
    assert set(timeouts["host"]) <= set(summary["arp_rack"])


def test_root_causes_found_and_clustered(fleet14):
    """Every trace of every root cause is a finding, none set aside, at its origin; nothing on a
    good trace. The EAGAIN of CREATE_MKEY is not taken for the cgroup's retried EAGAIN."""
    _, _, _, scores = fleet14
    for key in ("cluster_completeness", "bifurcation_top1", "origin_layer_top1", "expected_error_precision"):
        assert scores[key] == 1.0, (key, scores[key])
    assert scores["false_findings_on_good"] == 0
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] >= 1 and e["set_aside_as_expected"] == 0, (cause, e)
    for cause in ("port_route_gone", "mkey_no_res", "cq_alloc_leak"):
        assert scores["per_root_cause"][cause]["dominant_cluster_purity"] == 1.0, cause


def _routine_open(root) -> pl.DataFrame:
    findings = pl.read_parquet(root / "audit" / "findings.parquet")
    truth = read(dataset_files(root, "truth"), "truth").filter(pl.col("expected_error"))
    return findings.join(truth.select("trace_id"), on="trace_id").filter(~pl.col("expected"))


def test_routine_families_set_aside(fleet14):
    """Empty GID slots, the cgroup's retried EAGAIN and the registration cache's double dereg are
    set aside everywhere, the maintenance rack's hosts included."""
    root, _, _, _ = fleet14
    opened = _routine_open(root).filter(pl.col("bifurcation_errno") != "ETIMEDOUT")
    assert opened.is_empty(), opened.group_by("host", "operation", "bifurcation_probe", "bifurcation_errno").len()


def test_a_tenant_retrying_through_an_errno_is_routine_beside_one_it_kills(fleet14):
    """Tenant aria's ETIMEDOUT, retried through, is set aside; brisk's, fatal, stays open in a
    cluster of its own."""
    root, _, _, scores = fleet14
    opened = _routine_open(root)
    assert opened.is_empty(), opened.group_by("host", "operation", "bifurcation_probe", "bifurcation_errno").len()
    assert scores["cluster_purity"] == 1.0 and scores["false_findings"] == 0


def test_host_alert_recall_and_precision(fleet14):
    """The port's host alerts with EADDRNOTAVAIL though three of its four devices are healthy, the
    leaking host with ENOMEM; nothing on the maintenance rack (gaps and negative deltas); the mkey
    hosts' EAGAIN and rack 5's ETIMEDOUT are tolerated."""
    _, summary, result, _ = fleet14
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    missed = [host for host, errnos in summary["required_alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and e is None)) for h, a, _, e in rows)]
    assert not missed, (missed, result.host_alerts)
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false
    assert not {h for h, *_ in rows} & set(summary["maintenance"])

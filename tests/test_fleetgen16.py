"""The audit scored on tests/fleetgen16, a sixteenth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: a rolling driver-restart wave whose routine EIO burst (an agent that goes on) one
host never leaves (the ranks it kills there are a fault), the wave's operation and errno at
another frame on one host (ALLOC_PD firmware INT_ERR), two errors in one call tree (an ignored
counter bind's NO_RES EAGAIN, turned into ENOMEM on its way up, before or without a fatal RST2INIT
timeout), and snapshots shipped twice around midnight, the second copy filed under the next date
(generator.py has the fleet and the decisions behind its truth)."""

from __future__ import annotations

import polars as pl
from fleet_harness import (
    assert_errno_from_reference,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen16 import ROOT_CAUSES, ROUTINE, generate
from fleetgen16.generator import OPS, frames_of

from tracer.schema import dataset_files, read

fleet16 = audited_fleet("fleet16", generate, package="fleetgen16", hosts=64, hours=3, seed=16)
# (the shape at which the stuck host's alert needs the caller-split family's band: see the last test)
fleet16_72x2 = audited_fleet("fleet16_72x2", generate, package="fleetgen16", hosts=72, hours=2, seed=16)


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen16", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's and routine family's
    errno is one the reference gives near its origin (mlx5_cmd_exec: the firmware mapping)."""
    functions = {fn for op, tr in OPS for failure in (None, "restart", "fw_eio", "timeout") for nores in (False, True)
                 for _, fn, _ in frames_of(op, tr, failure, nores)}
    assert_functions_in_reference(functions)
    for key, (probe, errno, _) in {**ROOT_CAUSES, **ROUTINE}.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet16):
    root, summary, _, _ = fleet16
    events = read(dataset_files(root, "events"), "events")
    traces = events.filter(pl.col("seq") == 0)
    eio = traces.filter(pl.col("exit_status") == -5, pl.col("command") == "alloc_pd")
    # the wave: every host's agent gets EIO at alloc_pd in its own slot; ranks only on the stuck host
    assert eio.filter(pl.col("comm") == "rdma-healthd")["host"].n_unique() == summary["hosts"]
    begin = eio.join(events.filter(pl.col("probe") == "rdma_alloc_begin_uobject", pl.col("errno") == "EIO")
                     .select("host", "trace_id"), on=["host", "trace_id"])
    assert set(begin.filter(pl.col("comm") == "trainer")["host"]) == {summary["stuck_host"]}
    # the same operation and errno at the firmware, on one host only
    fw = events.filter(pl.col("probe") == "mlx5_cmd_exec", pl.col("errno") == "EIO")
    assert set(fw["host"]) == {summary["fw_eio_host"]}
    # two errors in one tree: the counter bind's EAGAIN, then the firmware's ETIMEDOUT
    both = (events.filter(pl.col("errno").is_in(["EAGAIN", "ETIMEDOUT"]), pl.col("probe") == "mlx5_cmd_exec")
            .group_by("host", "trace_id").agg(pl.col("errno").n_unique().alias("n")).filter(pl.col("n") == 2))
    assert both.height >= 1 and set(both["host"]) == {summary["timeout_host"]}
    # shipped twice: the same trace ids in two date partitions of the resent hosts
    files = [f for f in dataset_files(root, "events") if "part-resent" in f.name]
    assert {f.parent.name.removeprefix("host=") for f in files} == set(summary["resent_hosts"])
    resent = read(files, "events").filter(pl.col("seq") == 0)
    first = traces.filter(pl.col("trace_id").is_in(resent["trace_id"].implode())).group_by("trace_id").len()
    assert (first["len"] == 2).all() and resent.filter(pl.col("start_time").dt.day() == 30).height > 10


def test_root_causes_found_and_clustered(fleet16):
    """Every trace of every root cause is a finding, none set aside, at its origin (the chain that
    reaches the root, not the ignored counter bind before it); nothing on a good trace."""
    _, _, _, scores = fleet16
    for key in ("cluster_purity", "cluster_completeness", "bifurcation_top1", "origin_layer_top1"):
        assert scores[key] == 1.0, (key, scores[key])
    assert scores["false_findings_on_good"] == 0
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] >= 1 and e["set_aside_as_expected"] == 0, (cause, e)
        assert e["dominant_cluster_purity"] == 1.0, (cause, e)


def test_routine_families_set_aside(fleet16):
    """The agent's EIO during its host's restart (the stuck host included) and the counter bind's
    absorbed NO_RES are set aside everywhere. Main opened every absorbed counter-bind tree at
    __rdma_counter_bind_qp (a frame that only passes its callee's EAGAIN on), 403 false findings."""
    root, _, _, scores = fleet16
    findings = pl.read_parquet(root / "audit" / "findings.parquet")
    truth = read(dataset_files(root, "truth"), "truth").filter(pl.col("expected_error"))
    opened = findings.join(truth.select("trace_id"), on="trace_id").filter(~pl.col("expected"))
    assert opened.is_empty(), opened.group_by("host", "operation", "bifurcation_probe", "bifurcation_errno").len()
    assert scores["routine_set_aside"] == 1.0 and scores["false_findings"] == 0
    assert scores["expected_error_precision"] == 1.0


def test_a_family_learned_fleet_wide_stays_open_for_the_caller_it_kills(fleet16):
    """The wave's EIO at rdma_alloc_begin_uobject is learned for the agent that goes on through it,
    not for every caller: the ranks it kills on the stuck host stay findings (main set all 74
    aside, the family having passed fleet-wide on the agent's occurrences)."""
    root, summary, _, scores = fleet16
    findings = pl.read_parquet(root / "audit" / "findings.parquet")
    ranks = findings.filter(pl.col("host") == summary["stuck_host"], pl.col("comm") == "trainer",
                            pl.col("bifurcation_probe") == "rdma_alloc_begin_uobject")
    assert ranks.height == scores["per_root_cause"]["restart_stuck"]["traces"] and not ranks["expected"].any()
    agent = findings.filter(pl.col("comm") == "rdma-healthd", pl.col("bifurcation_probe") == "rdma_alloc_begin_uobject")
    assert agent["expected"].all() and agent["host"].n_unique() == summary["hosts"]


def test_shipped_twice_counts_once(fleet16):
    """A call tree shipped twice, its second copy under the next date, is one finding, and its
    cluster counts it once (the truth's repeat counts, each record once)."""
    root, summary, _, _ = fleet16
    findings = pl.read_parquet(root / "audit" / "findings.parquet")
    assert findings["trace_id"].is_unique().all()
    clusters = pl.read_parquet(root / "audit" / "clusters.parquet")
    events = read(dataset_files(root, "events"), "events").filter(pl.col("seq") == 0).unique("trace_id")
    truth = read(dataset_files(root, "truth"), "truth")
    stuck = (truth.filter(pl.col("root_cause") == "restart_stuck").join(events, on="trace_id")
             .select(pl.col("repeat_count").fill_null(1).sum()).item())
    cid = findings.filter(pl.col("host") == summary["stuck_host"], pl.col("comm") == "trainer",
                          ~pl.col("expected"))["cluster_id"].unique()
    assert cid.len() == 1
    assert clusters.filter(pl.col("cluster_id") == cid[0])["failures"].item() in (stuck, truth.filter(
        pl.col("root_cause") == "restart_stuck").height)


def test_host_alert_recall_and_precision(fleet16):
    """The stuck host alerts (EIO or a persistent bad state), the firmware host with EIO, the
    timeout host with ETIMEDOUT; no host of the wave, no host shipped twice."""
    _, summary, result, _ = fleet16
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    missed = [host for host, errnos in summary["required_alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and e is None)) for h, a, _, e in rows)]
    assert not missed, (missed, result.host_alerts)
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false


def test_the_stuck_host_alerts_though_its_family_is_split_by_caller(fleet16_72x2):
    """At 72 hosts x 2 h the restart wave's EIO family is learned fleet-wide and split by caller
    (the trainer dies of it, the health agent goes on). Counters know no caller, so the host
    alerts judge them by the split family's band (its entries carry stats fleet_wide, `comm`
    dropped for the counters): without it the wave's EIO was out of band on every host at once,
    a cause shared by the whole fleet, and the stuck host whose restart never ends did not alert."""
    _, summary, result, _ = fleet16_72x2
    stuck = summary["stuck_host"]
    assert stuck in summary["required_alert_hosts"]
    assert stuck in set(result.host_alerts["host"]), result.host_alerts

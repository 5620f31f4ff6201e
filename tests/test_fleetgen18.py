"""The audit scored on tests/fleetgen18, an eighteenth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: a 256-rank job that one host's NIC firmware kills at every requeue (CREATE_QP
EIO) while its 255 other ranks die with no kernel error of their own, their last record the
routine empty-GID-slot ENODATA, under one job id across requeues and with the culprit's clock
three minutes behind (its failure stamped before its victims' last records): one alert, on the
culprit; a fleet-wide maintenance window doubling every host's routine ENODATA share for a few
minutes (no alert); an irdma driver regression (ENOMEM at irdma_create_qp on every irdma host)
beside the same errno routine one operation over on the same hosts; tracer daemons restarted
mid-window. generator.py gives the reasons for the truth."""

from __future__ import annotations

from datetime import datetime

import polars as pl
from fleet_harness import (
    assert_errno_from_reference,
    assert_every_cause_found,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen18 import ROOT_CAUSES, ROUTINE, generate
from fleetgen18.generator import FAILURES, TREES

from tracer.schema import dataset_files, read

fleet18 = audited_fleet("fleet18", generate, package="fleetgen18", hosts=48, hours=2, seed=18)


def _utc(iso: str) -> pl.Expr:
    return pl.lit(datetime.fromisoformat(iso.replace("Z", "+00:00")))


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen18", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree (and of every failure's unwind) is in the reference; every
    fault's and routine family's errno is one the reference gives near its origin."""
    functions = {fn for tree in TREES.values() for _, fn, _ in tree}
    functions |= {fn for f in FAILURES.values() for _, fn, _ in f[6]}
    assert_functions_in_reference(functions)
    for key, (probe, errno, _) in {**ROOT_CAUSES, **ROUTINE}.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet18):
    root, summary, _, _ = fleet18
    events = read(dataset_files(root, "events"), "events")
    counters = read(dataset_files(root, "counters"), "counters")
    traces = events.filter(pl.col("seq") == 0)
    culprit = summary["culprit"]
    # the cascade: one job id across requeues, the restart count in the metadata
    big = traces.filter(pl.col("job_id") == "llm-256-7781")
    restart = pl.col("metadata").list.eval(
        pl.element().filter(pl.element().struct.field("key") == "restart").struct.field("value")).list.first()
    big = big.with_columns(restart=restart.cast(pl.Int64))
    assert big["restart"].max() == summary["big_job_restarts"] >= 4
    # only the culprit's ranks fail fatally; every other rank's failures are the routine ENODATA
    fatal = big.filter(pl.col("exit_status") < 0, pl.col("exit_status") != -61)
    assert set(fatal["host"]) == {culprit} and set(fatal["exit_status"]) == {-5}
    # ... and the victims die anyway: hundreds whose last record is a start-up ENODATA (the other
    # killed ranks are in those records' repeat_count: the kernel aggregates over processes)
    last = (big.filter(pl.col("host") != culprit).sort("end_time").group_by("host", "pid")
            .agg(pl.col("exit_status").last(), pl.col("restart").last()))
    killed = last.filter(pl.col("exit_status") == -61, pl.col("restart") < summary["big_job_restarts"])
    assert killed.height > 80 and killed["host"].n_unique() == len(summary["big_job_hosts"]) - 1
    # the culprit's clock is behind: at a requeue its fatal failure is stamped before its victims' last records
    for r in sorted(set(fatal["restart"]))[1:3]:
        first_fatal = fatal.filter(pl.col("restart") == r)["end_time"].min()
        victims = big.filter(pl.col("restart") == r, pl.col("host") != culprit)["end_time"]
        assert victims.max() > first_fatal, r
    # the maintenance window: on every host query_gid's ENODATA share rises in its own span, then returns
    gid = counters.filter(pl.col("probe") == "rdma_get_gid_attr")
    for host, (a, b) in list(summary["maintenance"].items())[::6]:
        mine = gid.filter(pl.col("host") == host)
        inside = pl.col("snapshot_time").is_between(_utc(a), _utc(b))
        share = {k: mine.filter(cond).select(pl.col("failures").sum() / pl.col("invocations").sum()).item()
                 for k, cond in (("in", inside), ("out", ~inside))}
        assert share["in"] > 1.5 * share["out"] > 0, (host, share)
    # the irdma regression: ENOMEM at irdma_create_qp only on irdma hosts, only after their update;
    # the same errno routine at rdma_counter_bind_qp_auto on the same hosts (root succeeding)
    enomem = events.filter(pl.col("errno") == "ENOMEM")
    origin = enomem.filter(pl.col("probe") == "irdma_create_qp")
    assert set(origin["host"]) <= set(summary["irdma_hosts"]) and origin["host"].n_unique() >= 3
    for host, when in summary["irdma_updates"].items():
        assert origin.filter(pl.col("host") == host, pl.col("end_time") < _utc(when)).is_empty()
    bind = enomem.filter(pl.col("probe") == "rdma_counter_bind_qp_auto")
    assert set(bind["host"]) == set(summary["irdma_hosts"]) | set(summary["bnxt_hosts"])
    assert set(bind["exit_status"]) == {0} and set(bind["command"]) == {"modify_qp"}
    # tracer restarts: nothing counted or traced in the gap, a short first snapshot at the stop
    for host, (down, up) in summary["restart_hosts"].items():
        span = pl.col("snapshot_time").is_between(_utc(down), _utc(up), closed="right")
        assert counters.filter(pl.col("host") == host, span).is_empty()
        assert traces.filter(pl.col("host") == host,
                             pl.col("end_time").is_between(_utc(down), _utc(up), closed="right")).is_empty()
        assert counters.filter(pl.col("host") == host, pl.col("interval_s") < 59)["snapshot_time"].n_unique() >= 1


def test_root_causes_found_and_clustered(fleet18):
    """Every trace of both root causes is a finding at its origin, one cluster each, none set
    aside; both routine families are set aside everywhere (the killed ranks' last ENODATA too)."""
    _, _, _, scores = fleet18
    assert_every_cause_found(scores, ROOT_CAUSES)
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] >= 8 and e["dominant_cluster_purity"] == 1.0, (cause, e)
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 100 and e["open_findings"] == 0, (family, e)


def test_host_alert_recall_and_precision(fleet18):
    """The culprit alerts (EIO, or a bad state); none of its victims, none for the maintenance
    window or the restarted tracers; an irdma host may alert with ENOMEM, none must."""
    _, summary, result, _ = fleet18
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    missed = [host for host, errnos in summary["required_alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and e is None)) for h, a, _, e in rows)]
    assert not missed, (missed, result.host_alerts)
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false

"""The audit scored on tests/fleetgen19, a nineteenth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: a storm whose records stand for ~40,000 failures a minute on one host (the one
page), beside a fault that is one record on each of 40 hosts and a host where the same errno is a
diagnostic's routine; a driver rollout in waves that brings a benign errno to every upgraded host
and a firmware regression to one wave; a rack's leaf switch down for 20 minutes; hosts joining and
drained, and a probe set upgraded mid-day. generator.py gives the reasons for the truth."""

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
from fleetgen19 import ROOT_CAUSES, ROUTINE, generate
from fleetgen19.generator import NDEV_PROBE, TREES

from tracer.schema import dataset_files, read

fleet19 = audited_fleet("fleet19", generate, package="fleetgen19", hosts=48, hours=2, seed=19)


def _utc(iso: str) -> pl.Expr:
    return pl.lit(datetime.fromisoformat(iso))


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen19", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's and routine family's errno
    is one the reference gives near its origin (mlx5_cmd_exec: the firmware mapping)."""
    assert_functions_in_reference({fn for tree in TREES.values() for _, fn, _ in tree}
                                  | {"rdma_alloc_abort_uobject", "destroy_qp"})
    for key, (probe, errno, _) in {**ROOT_CAUSES, **ROUTINE}.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet19):
    root, summary, _, _ = fleet19
    events = read(dataset_files(root, "events"), "events")
    counters = read(dataset_files(root, "counters"), "counters")
    traces = events.filter(pl.col("seq") == 0)
    storm = summary["storm_host"]
    # the storm: a few records a snapshot on one host, each third standing for ~40,000 failures,
    # exactly what the counters count at the origin
    mine = traces.filter(pl.col("host") == storm, pl.col("errno") == "ENOMEM", pl.col("command") == "create_qp")
    assert mine["repeat_count"].max() > 30_000
    weight = mine["repeat_count"].fill_null(1).sum()
    fw = counters.filter(pl.col("host") == storm, pl.col("probe") == "mlx5_cmd_exec")
    assert weight == summary["storm_failures"] <= fw["failures"].sum() < weight + 100
    assert mine.height < weight / 1000
    # the rare fault: one record on each of its hosts (~40), and the same family routine on one
    # other host for another caller
    rare = traces.filter(pl.col("comm") == "python3", pl.col("errno") == "ENOMEM", pl.col("command") == "reg_mr")
    assert rare.group_by("host").len()["len"].max() == 1
    assert set(rare["host"]) == set(summary["rare_hosts"]) and len(summary["rare_hosts"]) >= 30
    memtest = traces.filter(pl.col("comm") == "rdma-memtest", pl.col("errno") == "ENOMEM")
    assert set(memtest["host"]) == {summary["burst_host"]} and memtest.height >= 20
    assert summary["burst_host"] not in summary["rare_hosts"]
    # the rollout: the benign EOPNOTSUPP only on the new release, on every host that runs it
    pad = traces.filter(pl.col("errno") == "EOPNOTSUPP")
    assert set(pad["kernel_release"]) == {"6.8.0-65-generic"}
    upgraded = set(summary["upgrades"]) | set(summary["joined"])
    assert set(pad["host"]) <= upgraded and len(set(pad["host"])) >= len(upgraded) - 3
    for host, when in list(summary["upgrades"].items())[::5]:
        assert pad.filter(pl.col("host") == host, pl.col("end_time") < _utc(when)).is_empty()
        assert counters.filter(pl.col("host") == host, pl.col("snapshot_time").is_between(
            _utc(when), _utc(when) + pl.duration(minutes=4), closed="right")).is_empty()
    einval = traces.filter(pl.col("errno") == "EINVAL")
    assert set(einval["host"]) <= set(summary["wave2_hosts"]) and einval["host"].n_unique() >= 4
    # the rack: ETIMEDOUT only on its hosts, only in its 20 minutes
    lo, hi = summary["rack_window"]
    rtr = traces.filter(pl.col("errno") == "ETIMEDOUT")
    assert set(rtr["host"]) <= set(summary["rack_hosts"]) and rtr["host"].n_unique() >= 5
    assert rtr.filter(~pl.col("end_time").is_between(_utc(lo), _utc(hi))).is_empty()
    # hosts coming and going: nothing before a join or after a drain
    for host, when in summary["joined"].items():
        assert counters.filter(pl.col("host") == host, pl.col("snapshot_time") < _utc(when)).is_empty()
    for host, when in summary["drained"].items():
        assert counters.filter(pl.col("host") == host, pl.col("snapshot_time") > _utc(when) + pl.duration(
            minutes=1)).is_empty()
        assert traces.filter(pl.col("host") == host, pl.col("end_time") > _utc(when)).is_empty()
    # the probe-set upgrade: the new probe neither counts nor shows before it, then its routine ENODEV
    ndev = counters.filter(pl.col("probe") == NDEV_PROBE)
    for host, when in summary["probe_upgrades"].items():
        assert ndev.filter(pl.col("host") == host, pl.col("snapshot_time") < _utc(when)).is_empty()
    enodev = events.filter(pl.col("errno") == "ENODEV")  # at the probe: query_gid's root returns 0
    assert set(enodev["exit_status"]) == {0} and enodev["host"].n_unique() >= len(summary["probe_upgrades"])


def test_root_causes_found_and_clustered(fleet19):
    """Every trace of every root cause is a finding at its origin, one cluster each, none set
    aside; every routine family is set aside everywhere (the rollout's benign errno, the memtest
    host's ENOMEM, the new probe's ENODEV included)."""
    _, _, _, scores = fleet19
    assert_every_cause_found(scores, ROOT_CAUSES)
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] >= 20 and e["dominant_cluster_purity"] == 1.0, (cause, e)
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] >= 20 and e["open_findings"] == 0, (family, e)


def test_clusters_count_failures_not_rows(fleet19):
    """The storm's cluster counts the failures its records stand for, and leads the clusters:
    three rows a minute on one host outweigh a single row on each of 40."""
    root, summary, result, _ = fleet19
    clusters = result.clusters
    storm = clusters.filter(pl.col("signature").str.contains("ENOMEM"), pl.col("hosts") == 1,
                            pl.col("failures") >= summary["storm_failures"] * 0.9)
    assert storm.height == 1, clusters
    assert clusters.sort("failures", descending=True)["cluster_id"][0] == storm["cluster_id"][0]
    rare = clusters.filter(pl.col("hosts") >= len(summary["rare_hosts"]) * 0.9)
    assert rare.height >= 1 and rare["failures"].min() < 100, clusters


def test_host_alert_recall_and_precision(fleet19):
    """The storm host alerts (ENOMEM, or a bad state); a rack host may (ETIMEDOUT), a wave-2 host
    may (EINVAL); nothing on the memtest host, a rare-fault host, an upgraded host for its benign
    errno, a joiner, a drained host or a probe-set upgrade."""
    _, summary, result, _ = fleet19
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    missed = [host for host, errnos in summary["required_alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and e is None)) for h, a, _, e in rows)]
    assert not missed, (missed, result.host_alerts)
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false

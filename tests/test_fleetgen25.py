"""The audit scored on tests/fleetgen25, a twenty-fifth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: judgements hard in time and in the counters rather than in the call trees. An mlx5
fleet whose MR caches retry through a pod cgroup's limit (EAGAIN at ib_rdmacg_try_charge in reg_mr,
routine on every host); on one host a neighbour's leak raising that refusal's share for two hours
until the workers die of it (the last refusal of a loop, then every refusal once the cgroup is
full, and a crash loop at alloc_pd); a port flapping in bursts on one host (ENODATA at
rdma_get_gid_attr in INIT->RTR, fatal, the same frame and errno routine in query_gid on every
host); a firmware EIO at CREATE_QP on one host, mostly outside capture windows; and artefacts that
are no fault: a rack's clocks 4 minutes ahead, two daemon restarts (one shipping a negative
delta), a reboot with a new boot id, a maintenance drain. generator.py gives the reasons for the
truth."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest
from fleet_harness import (
    assert_errno_from_reference,
    assert_every_cause_found,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen25 import ROOT_CAUSES, ROUTINE, generate
from fleetgen25.generator import SKEW_S, TREES

from tracer.schema import dataset_files, read

# 40 hosts x 3 h (~6 CPU s to build)
SHAPE = {"hosts": 40, "hours": 3, "seed": 25}
fleet25 = audited_fleet("fleet25", generate, package="fleetgen25", **SHAPE)


def _traces(root) -> pl.DataFrame:
    events = read(dataset_files(root, "events"), "events")
    return events.filter(pl.col("seq") == 0)


def _family(root, family: str) -> pl.DataFrame:
    """The root rows of one labelled family's traces (the truth's rows joined to them)."""
    truth = read(dataset_files(root, "truth"), "truth").filter(pl.col("root_cause") == family)
    return _traces(root).join(truth.select("trace_id", "host"), on=["trace_id", "host"])


def _at(summary, key: str) -> datetime:
    return datetime.fromisoformat(summary["times"][key])


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen25", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's and routine family's errno
    is one the reference gives near its origin."""
    assert_functions_in_reference({fn for tree in TREES.values() for _, fn, _, _ in tree})
    for key, (probe, errno, _) in {**ROOT_CAUSES, **ROUTINE}.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet25):
    root, summary, _, _ = fleet25
    roles = summary["roles"]
    traces = _traces(root)
    everyone = set(roles["all"])
    assert len(everyone) == 40 and set(traces["kernel_release"]) == {"6.8.0-60-generic"}
    # the two routine families: every host, hundreds of traces
    for family in ROUTINE:
        rows = _family(root, family)
        assert set(rows["host"]) == everyone and rows.height >= 500, family
    # the neighbour's leak: one host; retry loops dying of it before the cgroup is full (the same
    # chain as the routine refusal), then the alloc_pd crash loop
    leak = _family(root, "neighbour_leak_cgroup_full")
    assert set(leak["host"]) == set(roles["leak"])
    saturation = _at(summary, "saturation")
    ramp = leak.filter(pl.col("command") == "reg_mr", pl.col("start_time") < saturation)
    assert ramp.height >= 5, ramp
    assert leak.filter(pl.col("command") == "alloc_pd")["start_time"].min() >= saturation
    # ... and its EAGAIN rising in the counters for an hour and more before the first death
    counters = read(dataset_files(root, "counters"), "counters").filter(
        pl.col("host") == roles["leak"][0], pl.col("probe") == "ib_rdmacg_try_charge")
    hourly = (counters.group_by(pl.col("snapshot_time").dt.truncate("1h")).agg(pl.col("failures").sum())
              .sort("snapshot_time")["failures"].to_list())
    assert hourly[0] < hourly[1] < hourly[2], hourly
    # the flap: one host, inside its bursts only; the same frame and errno routine in query_gid
    flap = _family(root, "port_flap_gid_gone")
    assert set(flap["host"]) == set(roles["flap"]) and flap.height >= 30
    bursts = [(datetime.fromisoformat(a), datetime.fromisoformat(b)) for a, b in summary["bursts"]]
    second = timedelta(seconds=1)
    assert all(any(a - second <= t <= b + second for a, b in bursts) for t in flap["start_time"])
    assert len({i for t in flap["start_time"] for i, (a, b) in enumerate(bursts) if a <= t <= b}) >= 5
    # the firmware EIO: one host, mostly untimed (outside capture windows)
    eio = _family(root, "fw_qp_create_eio")
    assert set(eio["host"]) == set(roles["fw_eio"]) and eio.height >= 10
    assert eio["latency_ns"].null_count() >= 0.7 * eio.height
    # the artefacts: a negative delta, a new boot id, a drained quarter hour, a skewed rack
    reset = read(dataset_files(root, "counters"), "counters").filter(pl.col("host") == roles["exporter_reset"][0])
    assert reset["invocations"].min() < 0
    boots = traces.filter(pl.col("host") == roles["reboot"][0])["trace_id"].str.split(":").list.get(1)
    assert boots.n_unique() == 2
    drain = _at(summary, "drain_at")
    drained = traces.filter(pl.col("host") == roles["drain"][0], pl.col("start_time") > drain + timedelta(seconds=5),
                            pl.col("start_time") < drain + timedelta(minutes=12))
    assert drained.height == 0, drained
    skewed = traces.filter(pl.col("host").is_in(roles["skewed_rack"]))
    others = traces.filter(~pl.col("host").is_in(roles["skewed_rack"]))
    assert skewed["start_time"].max() > others["start_time"].max() + timedelta(seconds=SKEW_S / 2)


def test_routine_families_are_set_aside(fleet25):
    """The empty GID slots and the MR cache's retried refusals are set aside on every host, the
    neighbour's and the flapping host's included (the workers went on)."""
    _, _, _, scores = fleet25
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] >= 500 and e["open_findings"] == 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0


LEAK_REFUSALS = (
    "the leak host's reg_mr refusals that ended their worker before the cgroup was full (9, and 3 after) are set "
    "aside as the learned routine family: the host's rate of it rises (the rising_errno_rate alert names it from "
    "09:30) but never fails every call for two buckets ('Stopped on a host': new workers die at alloc_pd once it is "
    "full, before reaching reg_mr), and which refusal of a retry loop was the fatal one is in each process's "
    "outcome alone, which the records cannot show outside capture windows (a retried refusal is as often its "
    "process's last recorded trace). Keeping every occurrence from the alert on makes the retried ones findings; "
    "not done")


@pytest.mark.xfail(strict=True, reason=LEAK_REFUSALS)
def test_every_cause_is_found(fleet25):
    """Each root cause is a finding on every trace, in its own pure cluster: the neighbour's
    refusals apart from the routine ones on the same chain, the flap's ENODATA apart from
    query_gid's, the firmware EIO though mostly untimed."""
    _, _, _, scores = fleet25
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, (cause, e)
        assert e["dominant_cluster_purity"] == 1.0, (cause, e)
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_host_alerts(fleet25):
    """The three faulty hosts alert with their errno (or a persistent bad state); no alert on a
    host without a fault -- the restarted daemons, the negative delta, the reboot, the drain and
    the skewed rack included -- and none naming a routine errno elsewhere."""
    _, summary, result, _ = fleet25
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    missed = [host for host, errnos in summary["required_alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and e is None))
                         for h, a, _, e in rows)]
    assert not missed, (missed, rows)
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false


def test_the_leak_alerts_before_the_cgroup_is_full(fleet25):
    """The neighbour's host's EAGAIN climbs out of the fleet's band for over an hour before the
    cgroup is full: the alert naming it starts before the saturation."""
    _, summary, result, _ = fleet25
    host = summary["roles"]["leak"][0]
    alerts = result.host_alerts.filter(pl.col("host") == host, pl.col("errno") == "EAGAIN")
    assert alerts.height >= 1, result.host_alerts
    assert alerts["since"].min() < _at(summary, "saturation"), alerts


@pytest.mark.xfail(strict=True, reason=LEAK_REFUSALS)
def test_one_cluster_per_cause(fleet25):
    """Three clusters, one per root cause, none for a routine family; each over its one host,
    with every failure the cause's records stand for (the leak's reg_mr and alloc_pd refusals
    are one host-local fault: same errno, same origin)."""
    root, summary, result, _ = fleet25
    clusters = result.clusters
    assert clusters.height == len(ROOT_CAUSES), clusters
    for cause, role in (("neighbour_leak_cgroup_full", "leak"), ("port_flap_gid_gone", "flap"),
                        ("fw_qp_create_eio", "fw_eio")):
        probe, errno, _ = ROOT_CAUSES[cause]
        rows = clusters.filter(pl.col("signature").str.contains(probe, literal=True),
                               pl.col("signature").str.contains(errno, literal=True))
        assert rows.height == 1, (cause, clusters)
        row = rows.row(0, named=True)
        traces = _family(root, cause)
        stands_for = int(traces["repeat_count"].fill_null(1).sum())
        assert row["hosts"] == len(summary["roles"][role]) == 1 and row["failures"] == stands_for, (cause, row)

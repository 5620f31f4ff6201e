"""The audit scored on tests/fleetgen13, a thirteenth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: fleet dynamics -- a kernel upgrade rolling across one platform whose new release
refuses ON_DEMAND registrations (a cluster by kernel), hosts joining and drained mid-day,
multi-host jobs whose every rank fails because one host's NIC is bad (only that host may alert;
its peers show the peer side's neighbour timeout), an errno storm carried in repeat_count, a GPU
driver reload on every host of one driver version (a metadata value only), one failure in the
window on one host, reduced probe sets (handlers only) and an errno routine inside one tenant's
namespace (generator.py has the fleet and the decisions behind its truth)."""

from __future__ import annotations

import datetime as dt

import polars as pl
from fleet_harness import (
    assert_errno_from_reference,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen13 import ROOT_CAUSES, ROUTINE, generate
from fleetgen13.generator import OPS, frames_of

from tracer.schema import COUNTERS, dataset_files, read

fleet13 = audited_fleet("fleet13", generate, package="fleetgen13", hosts=40, hours=3, seed=13)


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen13", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's and routine family's
    errno is one the reference gives near its origin (mlx5_cmd_exec: the firmware mapping)."""
    functions = {fn for ofed in (True, False) for op, arg in OPS for _, fn, _, _ in frames_of(op, arg, "good", ofed)}
    assert_functions_in_reference(functions)
    for key, (probe, errno, _) in {**ROOT_CAUSES, **ROUTINE}.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet13):
    root, summary, _, _ = fleet13
    counters = read(dataset_files(root, "counters"), "counters")
    events = read(dataset_files(root, "events"), "events")
    first = counters.group_by("host").agg(pl.col("snapshot_time").min().alias("first"),
                                          pl.col("snapshot_time").max().alias("last"))
    start, end = first["first"].min(), first["last"].max()
    # autoscaling: joined hosts report from mid-window only, drained hosts stop early
    for host in summary["joined"]:
        assert first.filter(pl.col("host") == host)["first"].item() > start + (end - start) * 0.25, host
    for host in summary["drained"]:
        assert first.filter(pl.col("host") == host)["last"].item() < end - (end - start) * 0.2, host
    # the rolling kernel upgrade: each upgraded host reports both releases, at different times
    releases = counters.group_by("host").agg(pl.col("kernel_release").n_unique())
    assert set(releases.filter(pl.col("kernel_release") == 2)["host"]) == set(summary["upgraded"]) != set()
    # reduced probe sets: their hosts count handlers only, and their trees are one frame
    minimal = counters.filter(pl.col("probe_set") == "rdma-min")
    assert set(minimal["host"]) == set(summary["minimal"])
    assert set(minimal["layer"]) == {"uverbs"}
    assert events.filter(pl.col("host").is_in(summary["minimal"]))["depth"].max() == 0
    # the storm: a few records, the rest in repeat_count
    storm = events.filter(pl.col("host") == summary["storm"], pl.col("seq") == 0, pl.col("comm") == "rdma-healthd")
    assert storm["repeat_count"].fill_null(1).sum() > 100 * storm.height
    # the peers of the bad NIC: ETIMEDOUT at neighbour resolution on several hosts, in the bad host's jobs
    peers = summary["cause_hosts"]["peer_of_bad_nic"]
    assert len(peers) >= 4 and summary["bad_nic"] not in peers
    # the GPU driver is in the metadata only
    drivers = {m["value"] for ms in events.unique("trace_id")["metadata"] for m in ms if m["key"] == "gpu_driver"}
    assert drivers == {"550.127.05", "535.216.01"}
    # the rare fault: one trace in the window, on one host
    assert summary["cause_hosts"]["rare_srq_init_enomem"] == [summary["rare"]]


def test_audit_scores_on_fleetgen13(fleet13):
    """Every root cause found in one cluster each, at its origin, none set aside; nothing on a good
    trace -- the rare fault's one trace included, and the storm's few records beside it."""
    _, _, _, scores = fleet13
    for key in ("cluster_purity", "cluster_completeness", "bifurcation_top1", "origin_layer_top1",
                "expected_error_precision"):
        assert scores[key] == 1.0, (key, scores[key])
    assert scores["false_findings_on_good"] == 0
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] >= 1 and e["set_aside_as_expected"] == 0, (cause, e)
        assert e["dominant_cluster_purity"] == 1.0, (cause, e)


def _routine_open(root) -> pl.DataFrame:
    findings = pl.read_parquet(root / "audit" / "findings.parquet")
    truth = read(dataset_files(root, "truth"), "truth").filter(pl.col("expected_error"))
    return findings.join(truth.select("trace_id", "host"), on="trace_id", suffix="_t").filter(~pl.col("expected"))


def test_routine_families_set_aside_on_full_probe_sets(fleet13):
    """Empty GID slots, the peer client's rescue of GUP's EFAULT, and tenant kite's RAW_PACKET QP
    refused (EPERM at create_qp: routine in its namespace, the process goes on) are set aside
    wherever the full probe set runs, the hosts that joined mid-day and the upgraded ones included."""
    root, summary, _, _ = fleet13
    opened = _routine_open(root).filter(~pl.col("host").is_in(summary["minimal"]))
    assert opened.is_empty(), opened.group_by("host", "operation", "bifurcation_probe", "bifurcation_errno").len()


def test_routine_families_set_aside_on_reduced_probe_sets(fleet13):
    """...and on the hosts whose tracer runs the handlers only, where kite's EPERM shows at
    ib_uverbs_create_qp: the family learned at create_qp, seen through the coverage gap. Before,
    it was learned there as a family of its own (8 hosts, start-ups no capture window caught: it
    looked fatal in 44 % of its processes) and left open: 80 false findings."""
    root, summary, _, _ = fleet13
    opened = _routine_open(root)
    assert opened.is_empty(), opened.group_by("host", "operation", "bifurcation_probe", "bifurcation_errno").len()
    findings = pl.read_parquet(root / "audit" / "findings.parquet")
    reduced = findings.filter(pl.col("host").is_in(summary["minimal"]), pl.col("bifurcation_errno") == "EPERM")
    assert reduced.height > 20 and reduced["expected"].all()


def test_host_alert_recall_and_precision(fleet13):
    """The bad NIC's host and the storm's host alert (ETIMEDOUT, EPERM; or a persistent bad state,
    which names a probe); no alert on the bad host's peers, on the hosts that joined or were
    drained, on the reloaded GPU driver's hosts or on a reduced probe set's; the upgraded hosts'
    EOPNOTSUPP and the rare fault's ENOMEM are tolerated. The storm's host alerts once."""
    _, summary, result, _ = fleet13
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    missed = [host for host, errnos in summary["required_alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and e is None)) for h, a, _, e in rows)]
    assert not missed, (missed, result.host_alerts)
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false
    assert sum(1 for h, *_ in rows if h == summary["storm"]) == 1


def test_a_coverage_gap_is_judged_by_the_family_it_hides():
    """A finding at a frame a learned family's errno propagates through (its `covers`: same
    operation and errno) is that family's on a host whose probes never included the family's
    origin; a host that had the origin probe attached keeps it open (the error arose above the
    probe there), and so does another errno or operation, or a host without counters."""
    from baseline.fleet.audit import seen_through_coverage_gaps
    from baseline.run.allowlist import Entry, ExpectedErrors

    family = Entry(id="learned-create_qp-eperm", source="learned", probe="create_qp", errno="EPERM", context="create_qp",
                   stats={"covers": ["create_qp", "ib_uverbs_create_qp"]})
    rows = [("t1", "reduced", "create_qp", "ib_uverbs_create_qp", "EPERM"),  # the gap: set aside
            ("t2", "full", "create_qp", "ib_uverbs_create_qp", "EPERM"),  # the probe was there: open
            ("t3", "reduced", "create_qp", "ib_uverbs_create_qp", "EINVAL"),  # another errno: open
            ("t4", "reduced", "modify_qp", "ib_uverbs_create_qp", "EPERM"),  # another operation: open
            ("t5", "silent", "create_qp", "ib_uverbs_create_qp", "EPERM")]  # no counters: not judged
    findings = pl.DataFrame(rows, schema=["trace_id", "host", "operation", "probe", "errno"], orient="row",
                            ).with_columns(pl.lit(False).alias("expected"))
    attached = pl.DataFrame({"host": ["reduced", "full", "full"], "probe": ["ib_uverbs_create_qp"] * 2 + ["create_qp"]})
    out = seen_through_coverage_gaps(findings, ExpectedErrors([family]), attached)
    assert dict(out.select("trace_id", "expected").iter_rows()) == {"t1": True, "t2": False, "t3": False,
                                                                    "t4": False, "t5": False}
    assert seen_through_coverage_gaps(findings, ExpectedErrors([family]), None)["expected"].sum() == 0


def _peer_counters(peers: int, hosts: int = 40, buckets: int = 16) -> pl.LazyFrame:
    """Neighbour resolution's counters on a fleet where, from the fifth 15-minute bucket on,
    `peers` hosts fail 6 of their 20 calls a bucket with ETIMEDOUT (the ranks' QPs towards one bad
    host: a third of their INIT->RTR) and the others none."""
    start = dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)
    rows = []
    for h in range(hosts):
        for b in range(buckets):
            fails = 6 if (1 <= h <= peers and b >= 4) else 0
            rows.append({"host": f"h{h:02d}", "snapshot_time": start + dt.timedelta(minutes=15 * b + 14),
                         "interval_s": 900.0, "kernel_release": "5.15.0-1067-nvidia", "vendor": "mlx5",
                         "probe_set": "rdma", "probe": "rdma_addr_find_l2_eth_by_grh", "layer": "core", "live": True,
                         "invocations": 20, "failures": fails,
                         "errno_counts": [{"errno": "ETIMEDOUT", "count": fails}] if fails else [], "lost_records": 0})
    return pl.DataFrame(rows, schema=pl.from_arrow(COUNTERS.empty_table()).schema).lazy()


def test_hosts_failing_part_of_their_calls_alike_are_the_clusters():
    """Six hosts failing a third of their calls with one errno at one probe, far above the rest of
    the fleet, within the hour, are a cause they share (the peers of one bad NIC's host), not six
    host faults: no alert. Before, "alike" counted only hosts failing most of their calls, and each
    peer alerted (rising ETIMEDOUT). Two such hosts are still each one's own (both alert)."""
    from baseline.fleet.audit import host_alerts
    from baseline.run.allowlist import ExpectedErrors

    assert host_alerts(_peer_counters(6), ExpectedErrors([])).is_empty()
    two = host_alerts(_peer_counters(2), ExpectedErrors([]))
    assert sorted(two["host"]) == ["h01", "h02"] and set(two["errno"]) == {"ETIMEDOUT"}

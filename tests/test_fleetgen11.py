"""The audit scored on tests/fleetgen11, an eleventh fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and
tests/fleet_harness.py; without reading the simulator, the other generators, or the audit).

What it is for: host-alert recall. Its truth names the hosts that must alert and the errno the
alert must show (`alert_hosts`): a slow-burn ENOMEM leak on one host, one bad host among all, a
full ring buffer (repeat_count, then counters only), a host whose tracer crashes while its fault
goes on, a GPU exporter hang nine frames deep; beside a rolling maintenance drain, an
out-of-tree driver's ENOTSUPP on four hosts, a NIC swap and packed short jobs, and six routine
families (generator.py has the fleet and the decisions behind its truth)."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
from fleet_harness import (
    assert_errno_from_reference,
    assert_every_cause_found,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen11 import ROOT_CAUSES, generate
from fleetgen11.generator import PLATFORMS, frames_of

from baseline.fleet.audit import host_alerts
from baseline.run.allowlist import ExpectedErrors
from tracer.errnos import errno_number
from tracer.schema import COUNTERS, dataset_files, read

fleet11 = audited_fleet("fleet11", generate, package="fleetgen11", hosts=60, hours=3, seed=11)

# every call tree the generator can write: platform x (operation, arg, label)
LABELS = ["good", *ROOT_CAUSES, "gid_empty_slot", "gid_no_netdev", "counter_unbind_no_counter", "double_destroy_qp",
          "dmabuf_probe_irdma", "peer_fallback_efault"]
OPS = [("query_port", None), ("query_gid", "index=0"), ("alloc_pd", None), ("reg_mr", "host"), ("reg_mr", "gpu"),
       ("reg_dmabuf_mr", "gpu"), ("create_cq", None), ("create_qp", None), ("modify_qp", "RESET->INIT"),
       ("modify_qp", "INIT->RTR"), ("modify_qp", "RTR->RTS"), ("destroy_qp", None), ("dereg_mr", None),
       ("dealloc_pd", None)]


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen11", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's errno is one the reference
    gives near its origin, except the out-of-tree driver's, a kernel-internal code (-524) the
    reference lists nowhere: the point of that fault."""
    functions = {fn for p in set(PLATFORMS) for op, arg in OPS for label in LABELS
                 for _, fn, _ in frames_of(p, (op, arg, label))}
    assert_functions_in_reference(functions)
    for cause, (probe, errno, _, _) in ROOT_CAUSES.items():
        if cause == "oot_driver_enotsupp":
            assert errno_number(errno) == 524
            continue
        assert_errno_from_reference(cause, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet11):
    root, summary, _, _ = fleet11
    counters = read(dataset_files(root, "counters"), "counters")
    events = read(dataset_files(root, "events"), "events")
    start = dt.datetime.fromisoformat(summary["start"])
    minute = lambda m: start + dt.timedelta(minutes=m)  # noqa: E731
    # the full ring buffer: the counters go on counting ETIMEDOUT, no record after 15 minutes
    (ring,) = summary["fault_hosts"]["neigh_timeout_ringbuf"]
    full_from = minute(summary["windows_min"]["neigh_timeout_ringbuf"][0] + 16)
    late = counters.filter(pl.col("host") == ring, pl.col("probe") == "rdma_addr_find_l2_eth_by_grh",
                           pl.col("snapshot_time") > full_from)
    assert late["failures"].sum() > 50 and late["lost_records"].min() > 0
    assert events.filter(pl.col("host") == ring, pl.col("probe") == "rdma_addr_find_l2_eth_by_grh",
                         pl.col("start_time") >= full_from).is_empty()
    assert events.filter(pl.col("host") == ring, pl.col("errno") == "ETIMEDOUT")["repeat_count"].max() > 2
    # the tracer crash: nothing from the host after it, while its jobs were still failing
    (crashed,) = summary["fault_hosts"]["pd_exhausted_tracer_crash"]
    crash = minute(summary["tracer_crash_min"])
    assert counters.filter(pl.col("host") == crashed)["snapshot_time"].max() <= crash
    assert summary["windows_min"]["pd_exhausted_tracer_crash"][1] * 60 > summary["tracer_crash_min"] * 60
    # the NIC swap: one host, two vendors
    (swapped,) = summary["nic_swap_min"]
    assert set(counters.filter(pl.col("host") == swapped)["vendor"].unique()) == {"irdma", "mlx5"}
    # the slow burn: the leak's ENOMEM in the last third many times the first third's
    (leak,) = summary["fault_hosts"]["pinned_leak_enomem"]
    enomem = counters.filter(pl.col("host") == leak, pl.col("probe") == "ib_umem_get")
    third = minute(60)
    assert enomem.filter(pl.col("snapshot_time") > minute(120))["failures"].sum() > \
        10 * max(1, enomem.filter(pl.col("snapshot_time") <= third)["failures"].sum())
    # nine frames deep, and packed hosts running over a thousand processes an hour
    assert events.filter(pl.col("errno") == "ETIMEDOUT", pl.col("probe") == "ib_umem_dmabuf_map_pages")["depth"].max() == 7
    assert events.filter(pl.col("command") == "reg_dmabuf_mr")["depth"].max() == 8
    per_hour = counters.filter(pl.col("probe") == "ib_uverbs_alloc_pd").group_by("host").agg(pl.col("invocations").sum() / 3)
    assert per_hour["invocations"].max() > 1000


def test_audit_scores_on_fleetgen11(fleet11):
    """Every root cause found, in one cluster each, none set aside; every routine family set aside."""
    _, _, _, scores = fleet11
    assert_every_cause_found(scores, ROOT_CAUSES)
    assert scores["routine_set_aside"] == 1.0 and scores["false_findings"] == 0


def test_host_alert_recall_and_precision(fleet11):
    """Every host the truth says must alert does, naming the fault's errno (or, a persistent bad
    state, its origin probe); no alert on any other host, except those the truth tolerates (a
    drained host's EIO, the out-of-tree driver's four hosts)."""
    _, summary, result, _ = fleet11
    alerts = result.host_alerts
    origin = {host: ROOT_CAUSES[rc][0] for rc, hosts in summary["fault_hosts"].items() for host in hosts}
    shown = {(h, a, p, e) for h, a, p, e in alerts.select("host", "alert", "probe", "errno").iter_rows()}
    missed = [host for host, errnos in summary["alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and p == origin[host]))
                         for h, a, p, e in shown)]
    assert not missed, (missed, json.dumps(summary["alert_hosts"]), alerts)
    tolerated = summary["tolerated_alerts"]
    false = [(h, a, p, e) for h, a, p, e in shown if h not in summary["alert_hosts"]
             and not (h in tolerated and e in (*tolerated[h], None))]
    assert not false, false


def _counters(rows: list[tuple[str, int, int, int]]) -> pl.LazyFrame:
    """A counters table of alloc_pd's handler (the reference's ib_uverbs_alloc_pd) and its irdma
    allocator: (host, 15-minute bucket, calls, EOVERFLOW failures)."""
    start = dt.datetime(2026, 11, 23, 1, tzinfo=dt.UTC)
    out = []
    for host, bucket, calls, fails in rows:
        for probe, layer in (("ib_uverbs_alloc_pd", "uverbs"), ("irdma_alloc_rsrc", "driver")):
            out.append({"host": host, "snapshot_time": start + dt.timedelta(minutes=15 * bucket + 14),
                        "interval_s": 900.0, "kernel_release": "6.8.0-45-generic", "vendor": "irdma",
                        "probe_set": "rdma", "probe": probe, "layer": layer, "live": True, "invocations": calls,
                        "failures": fails, "errno_counts": [{"errno": "EOVERFLOW", "count": fails}] if fails else [],
                        "lost_records": 0})
    return pl.DataFrame(out, schema=pl.Schema({f.name: pl.from_arrow(COUNTERS.empty_table()).schema[f.name]
                                               for f in COUNTERS})).lazy()


def test_a_host_whose_tracer_stops_while_failing_still_alerts():
    """A host failing most of its PD allocations for two buckets and then silent (its tracer
    crashed; its jobs go on failing unseen) is in a bad state as far as anyone knows: a
    persistent_bad_state alert, as for a run still on at the window's end. The same two buckets
    followed by the host reporting healthy calls are a passing burst: no alert. (Before, a run
    was ongoing only when it reached the window's last bucket: the silent host never alerted.)"""
    healthy = [(f"h{i}", b, 40, 0) for i in range(6) for b in range(12)]
    crashed = [("bad", b, 40, 0) for b in range(6)] + [("bad", 6, 40, 30), ("bad", 7, 40, 30)]
    recovered = crashed + [("bad", b, 40, 0) for b in range(8, 12)]
    alerts = host_alerts(_counters(healthy + crashed), ExpectedErrors([]))
    assert alerts.filter(pl.col("host") == "bad")["alert"].to_list() == ["persistent_bad_state"], alerts
    assert alerts.filter(pl.col("host") != "bad").is_empty(), alerts
    assert host_alerts(_counters(healthy + recovered), ExpectedErrors([])).filter(
        pl.col("alert") == "persistent_bad_state").is_empty()

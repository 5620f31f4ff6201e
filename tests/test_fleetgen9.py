"""The audit scored on tests/fleetgen9, a ninth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md and docs/architecture.md; without
reading the simulator, the other generators, or the learn/audit code), and the rules it led to.

The fleet (generator.py has its shape and the decisions behind its truth): an intermittent
peer-memory fault on one host, a bnxt_re release failing every create_qp on every host running
it (one cluster, no host alerts), a retry errno (ENODATA) confined to one host, a routine EAGAIN
whose rate jumps 50x on two hosts (routine; a rising alert tolerated), a tenant job past
RLIMIT_MEMLOCK on many hosts (one cluster, no host alerts), port 2 of 8 NICs timing out its
firmware commands, a host re-imaged under a new name, a probe removed mid-window. Guards below
build their data from the same reference chains (fleetgen9.chains), not from the code under
test."""

from __future__ import annotations

import datetime as dt

import polars as pl
from fleet_harness import (
    assert_errno_from_reference,
    assert_every_cause_found,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen9 import ROOT_CAUSES, generate
from fleetgen9.chains import all_trees, functions_used

from baseline.fleet.audit import host_alerts
from baseline.run.allowlist import ExpectedErrors
from tracer.schema import dataset_files, read

TREES = all_trees()
T0 = dt.datetime(2026, 11, 30, 6, 0, tzinfo=dt.UTC)


fleet9 = audited_fleet("fleet9", generate, package="fleetgen9", hosts=16, hours=3, seed=9)


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen9", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is named in the reference; each tree's bifurcation errno is
    one the reference gives near that function (mlx5_cmd_exec: the firmware transport errnos of
    errno_conventions) and is its deepest failing frame."""
    assert_functions_in_reference(functions_used(TREES))
    for tree in TREES.values():
        if not tree.bif:
            continue
        fn, errno, layer = tree.bif
        assert_errno_from_reference(tree.key, fn, errno)
        frame = next(f for f in tree.frames if f[1] == fn and f[3] == errno)
        assert frame[2] == layer
        # deepest failing frame of the chain that reaches the root (a rescued GUP EFAULT beside it)
        assert frame[0] == max(f[0] for f in tree.frames if f[3] == (tree.root_errno or errno)), tree.key
    assert {t.root_cause for t in TREES.values() if t.root_cause} == set(ROOT_CAUSES)


def test_the_fleet_has_the_shapes_it_is_for(fleet9):
    root, summary, _, _ = fleet9
    counters = read(dataset_files(root, "counters"), "counters")
    truth = read(dataset_files(root, "truth"), "truth")
    assert set(truth["root_cause"].drop_nulls()) == set(ROOT_CAUSES)
    assert set(counters["vendor"]) == {"mlx5", "bnxt_re"}
    old, new = summary["renamed"]
    assert {old, new} <= set(counters["host"])
    assert counters.filter(pl.col("host") == old)["snapshot_time"].max() < counters.filter(pl.col("host") == new)["snapshot_time"].min()
    lag = counters.filter(pl.col("probe") == "rdma_lag_get_ah_roce_slave")
    assert lag.filter(~pl.col("live"))["invocations"].sum() == 0 and lag.filter(~pl.col("live")).height
    # port 2 of 8: the host's other NICs make INIT->RTR fine all along
    nic = truth.filter(pl.col("host") == summary["nic_host"])
    assert nic.filter(pl.col("root_cause") == "nic_port2_fw_cmd_timeout").height
    assert nic.filter(pl.col("kind") == "good").height > 10 * nic.filter(pl.col("root_cause").is_not_null()).height


def test_audit_scores_on_fleetgen9(fleet9):
    _, _, result, s = fleet9
    assert_every_cause_found(s, ROOT_CAUSES)
    # one cluster per cause: the tenant's job over mlx5 and bnxt_re hosts is one, and so is the
    # bnxt_re release over all its hosts
    assert s["clusters"] == result.clusters.height == len(ROOT_CAUSES)


def test_host_alerts_on_the_faulty_hosts_only(fleet9):
    """Every host with a fault of its own alerts, naming its errno: the intermittent peer-memory
    host, the port-2 host, the host whose GID entry flaps. None on the hosts of the bnxt_re
    release (one cluster names it), the tenant's hosts, the re-imaged host; on the two hosts
    whose cgroup EAGAIN jumped a rising alert is tolerated, nothing else."""
    _, summary, result, _ = fleet9
    required, tolerated = summary["alert_hosts"], summary["tolerated_alerts"]
    alerts = result.host_alerts
    for host, alert, errno in alerts.select("host", "alert", "errno").iter_rows():
        if host in tolerated:
            assert alert == "rising_errno_rate" and errno in tolerated[host], (host, alert, errno)
        else:
            assert host in required and errno in required[host], (host, alert, errno)
    assert set(required) <= set(alerts["host"]), alerts


# --------------------------------------------------------------------------------------------
# guards of the rules this fleet led to, on data built from the reference chains
# --------------------------------------------------------------------------------------------
def _counters(tree_key: str, fails_of, hosts: list[tuple[str, str, str]], buckets: int = 16) -> pl.LazyFrame:
    """Counters (one snapshot per 15 minutes) of a tree's probes, 40 calls a bucket on each host
    (name, vendor, release); fails_of(host_index, bucket) of them fail as the tree does."""
    tree = TREES[tree_key]
    rows = []
    for h, (host, vendor, release) in enumerate(hosts):
        for b in range(buckets):
            fails = fails_of(h, b)
            for _depth, fn, layer, errno in tree.frames:
                rows.append({"host": host, "snapshot_time": T0 + dt.timedelta(minutes=15 * (b + 1)), "probe": fn,
                             "layer": layer, "vendor": vendor, "kernel_release": release, "invocations": 40,
                             "failures": fails if errno else 0,
                             "errno_counts": [{"errno": errno, "count": fails}] if errno and fails else []})
    return pl.DataFrame(rows).with_columns(pl.col("snapshot_time").dt.cast_time_unit("ns")).lazy()


def _depth(key: str) -> dict[str, int]:
    return {fn: d for d, fn, _, _ in TREES[key].frames}


def test_a_platform_wide_failure_is_no_host_alert_one_host_of_it_is():
    """Every host of one (vendor, release) group fails every create_qp at bnxt_re_test_qp_limits:
    the release's cause, one cluster, no host alert (24 hosts: 4 on the bad release, 20 on
    another). When only one of the four fails so, that host alerts."""
    key = "create_qp/bnxt_re/qp_limits"
    hosts = [(f"b{i}", "bnxt_re", "6.17.0-5-generic" if i < 4 else "6.8.0-49-generic") for i in range(24)]
    wide = host_alerts(_counters(key, lambda h, b: 40 if h < 4 else 0, hosts), ExpectedErrors([]), probe_depth=_depth(key))
    assert wide.is_empty(), wide
    one = host_alerts(_counters(key, lambda h, b: 40 if h == 0 else 0, hosts), ExpectedErrors([]), probe_depth=_depth(key))
    assert set(one["host"]) == {"b0"}, one


def test_a_platform_without_a_vendor_or_release_is_a_platform_too():
    """The same platform-wide failure on hosts whose counters name no vendor, or neither vendor
    nor release (a collector without them): those hosts are still one platform (the platform
    rule counts calling hosts on a platform number; a null vendor or release is a value of
    it), so no alert; one host of them failing alone alerts."""
    key = "create_qp/bnxt_re/qp_limits"
    # (the four hosts without them last: the helper's frame takes its column types from the first rows)
    for vendor, release in ((None, "6.17.0-5-generic"), (None, None)):
        hosts = [(f"b{i}", "bnxt_re", "6.8.0-49-generic") if i < 20 else (f"b{i}", vendor, release) for i in range(24)]
        wide = host_alerts(_counters(key, lambda h, b: 40 if h >= 20 else 0, hosts), ExpectedErrors([]),
                           probe_depth=_depth(key))
        assert wide.is_empty(), (vendor, release, wide)
        one = host_alerts(_counters(key, lambda h, b: 40 if h == 20 else 0, hosts), ExpectedErrors([]),
                          probe_depth=_depth(key))
        assert set(one["host"]) == {"b20"}, (vendor, release, one)
        # three of the four failing: the platform's fourth host calls the probe without failing,
        # so the three are not the platform's cause, each alerts
        three = host_alerts(_counters(key, lambda h, b: 40 if h >= 21 else 0, hosts), ExpectedErrors([]),
                            probe_depth=_depth(key))
        assert set(three["host"]) == {"b21", "b22", "b23"}, (vendor, release, three)


def test_an_intermittent_fault_of_one_host_alerts_a_shared_one_does_not():
    """One host of 24 fails 3 of its 40 INIT->RTR in every other bucket (mlx5_cmd_exec
    ETIMEDOUT: one NIC of eight timing out): never most calls, never rising over its own
    history, yet no other host has it: recurring_errno. Five hosts so (more than
    max_shared_hosts) is a shared cause: the clusters'."""
    key = "modify_qp/mlx5/INIT->RTR/fw_timeout"
    hosts = [(f"g{i}", "mlx5", "5.15.0-122-generic") for i in range(24)]
    one = host_alerts(_counters(key, lambda h, b: 3 if h == 0 and b % 2 else 0, hosts), ExpectedErrors([]),
                      probe_depth=_depth(key))
    assert one.select("host", "alert", "errno").rows() == [("g0", "recurring_errno", "ETIMEDOUT")], one
    assert one["probe"][0] == "mlx5_cmd_exec", one
    five = host_alerts(_counters(key, lambda h, b: 3 if h < 5 and b % 2 else 0, hosts), ExpectedErrors([]),
                       probe_depth=_depth(key))
    assert five.is_empty(), five


def test_a_retry_errno_on_one_host_is_a_finding_unless_the_host_cannot_do_the_operation(fleet9):
    """The flapping GID entry's ENODATA (modify_qp at rdma_get_gid_attr) on one host, retried
    through in many jobs, stays open: modify_qp succeeds there too. query_gid's empty slots
    (the same probe and errno, every host) are routine."""
    root, summary, result, _ = fleet9
    f = result.findings
    gid = f.filter((pl.col("operation") == "modify_qp") & (pl.col("bifurcation_errno") == "ENODATA"))
    assert gid.height and not gid["expected"].any() and set(gid["host"]) == {summary["gid_host"]}
    assert f.filter(pl.col("operation") == "query_gid")["expected"].all()

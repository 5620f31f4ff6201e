"""The audit scored on tests/fleetgen3, a third fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py and the docs; without reading the simulator,
tests/fleetgen or baseline/fleet).

Issue 9's bars: per-cause purity, bifurcation and origin layer top-1 >= 0.95; >= 95 % of the
routine-family traces set aside and <= 1 % left open; no false findings on good traces; host
alerts only on hosts with a host-level fault, with that fault's errno."""

from __future__ import annotations

import datetime as dt

import polars as pl
from fleet_harness import assert_generator_is_blind, audited_fleet
from fleetgen3 import FAULTS, ROUTINE, generate

from baseline.fleet.counters import bucket_counters
from tracer.schema import dataset_files, read

fleet3 = audited_fleet("fleet3", generate, package="fleetgen3", hosts=48, hours=5, seed=11)


def test_generator_is_blind():
    """It imports only the data model's writers: nothing of the simulator, fleetgen or the audit."""
    assert_generator_is_blind("fleetgen3", tracer_modules={"tracer.schema", "tracer", "tracer.atomic"})


def test_the_fleet_has_what_real_fleets_have(fleet3):
    root, summary, _, _ = fleet3
    truth = read(dataset_files(root, "truth"), "truth")
    causes = set(truth["root_cause"].drop_nulls())
    assert set(ROUTINE) <= causes, set(ROUTINE) - causes
    assert set(FAULTS) <= causes, set(FAULTS) - causes
    events = read(dataset_files(root, "events"), "events")
    counters = read(dataset_files(root, "counters"), "counters")
    assert set(counters["vendor"]) == {"mlx5", "bnxt_re", "irdma"}
    assert counters["kernel_release"].n_unique() >= 4
    # a driver update mid-window: hosts whose kernel release changes (after a reboot)
    assert events.group_by("host").agg(pl.col("kernel_release").n_unique())["kernel_release"].max() == 2
    # emit-on-failure aggregation, untimed failures outside capture windows, pointer returns
    assert (events["repeat_count"].fill_null(1) > 1).any()
    untimed = events.filter((pl.col("kind") == "failure") & pl.col("latency_ns").is_null())
    assert untimed.height and (untimed["start_time"] == untimed["end_time"]).all()
    assert (events.filter(pl.col("errno").is_null())["ret"] < -4095).any()
    assert set(events.filter(pl.col("kind") == "good")["latency_ns"].is_null().unique()) == {False}
    # duplicate snapshots (delivered twice) and hosts that report from mid-window on
    dup = counters.group_by("host", "snapshot_time", "probe").len()
    assert (dup["len"] > 1).any()
    first = counters.group_by("host").agg(pl.col("snapshot_time").min())["snapshot_time"]
    assert (first - first.min()).max().total_seconds() > 3600
    # the fault seen only by the counters: truth rows without events, failures in the counters
    unobserved = truth.filter(pl.col("trace_id").str.contains(":unobserved-"))
    assert "device_bad_state" in set(unobserved["root_cause"])
    host = unobserved.filter(pl.col("root_cause") == "device_bad_state")["host"][0]
    assert counters.filter((pl.col("host") == host) & (pl.col("failures") > 0)).height > 0


# The routine family seen on fewer hosts than the learner's min_hosts (3): CQE compression
# refused by ConnectX-5 firmware shows on 2 of its 48 hosts here. Its EOPNOTSUPP tells the caller
# to take another way, and it survived 27 times (min_hosts x min_success = 15): the survivals
# stand in for the hosts, and it is set aside like the others (before that rule: 27 false findings).
FEW_HOSTS = {"cqe_compression_unsupported"}


def test_audit_meets_the_bars_on_fleetgen3(fleet3):
    _, _, _, s = fleet3
    assert s["cluster_purity"] >= 0.95
    assert s["bifurcation_top1"] >= 0.95 and s["origin_layer_top1"] >= 0.95
    assert s["routine_set_aside"] >= 0.95, s["per_root_cause"]
    assert s["routine_open_findings"] <= 0.01
    assert s["false_findings_on_good"] == 0
    for cause, e in s["per_root_cause"].items():
        if cause in FAULTS and e.get("observable"):
            assert e["detected"] == e["traces"], cause
            assert e["bifurcation_top1"] >= 0.95 and e["origin_layer_top1"] >= 0.95, (cause, e)
            assert (e["dominant_cluster_purity"] or 0) >= 0.95, (cause, e)
            assert e["set_aside_as_expected"] == 0, cause
        elif cause in ROUTINE:
            assert e["set_aside_as_expected"] == e["traces"] and not e.get("open_findings"), (cause, e)
    assert s["per_root_cause"][next(iter(FEW_HOSTS))]["hosts"] < 3
    open_routine = {c: e["open_findings"] for c, e in s["per_root_cause"].items()
                    if e.get("expected_error") and e.get("open_findings")}
    assert not open_routine and s["false_findings"] == 0, open_routine


def test_a_retry_signal_on_a_configured_subset_of_hosts_is_routine(fleet3, tmp_path):
    """rdmacg EAGAIN, retried, on the k8s hosts whose containers have an rdma cgroup limit: fewer
    than min_host_fraction of the hosts, and nothing in the data says which hosts have the limit.
    EAGAIN tells the caller to try again, so the share is not asked of it (signal_errnos); a
    survived ETIMEDOUT on a rack's hosts (the simulator's neigh_resolve_timeout) still is."""
    from baseline.fleet.expected import FleetExpectedLearner
    from baseline.simulator.simulate import simulate

    root, _, _, s = fleet3
    learner = FleetExpectedLearner().fit(root)
    eagain = learner.candidates_.filter((pl.col("probe") == "ib_rdmacg_try_charge") & (pl.col("errno") == "EAGAIN")
                                        & (pl.col("operation") == "create_qp")).row(0, named=True)
    assert eagain["group_hosts"] < learner.min_host_fraction * eagain["observed_hosts"] and eagain["expected"]
    # compared with the probe's traces in the capture windows, where a process's later calls are
    # recorded (outside them only failures are: a baseline of failures); the EAGAIN itself has
    # too few timed occurrences on this fleet (on 300 hosts it has 22, none fatal), so its
    # outcome comes from all its traces, where a retried charge's process may look dead
    assert not eagain["outcome_in_windows"] and eagain["timed_traces"] < learner.min_timed, eagain
    assert eagain["p_fail_observed"] == eagain["observed_timed_failing"] / eagain["observed_timed"], eagain
    assert s["per_root_cause"]["rdmacg_eagain"]["set_aside_as_expected"] == s["per_root_cause"]["rdmacg_eagain"]["traces"]
    # the guard: a rack-level neighbour-resolution timeout that jobs survive stays a finding
    sim = tmp_path / "sim"
    simulate(sim, hosts=300, hours=2, seed=42, scenarios=["neigh_resolve_timeout"])
    timeout = FleetExpectedLearner().fit(sim).candidates_.filter(pl.col("errno") == "ETIMEDOUT").row(0, named=True)
    assert timeout["survived"] >= 5 and timeout["success_hosts"] >= 3, timeout
    assert timeout["group_hosts"] < 0.25 * timeout["observed_hosts"] and not timeout["expected"], timeout
    as_signal = FleetExpectedLearner(signal_errnos=("ETIMEDOUT",)).fit(sim).candidates_
    assert as_signal.filter(pl.col("errno") == "ETIMEDOUT")["expected"].all()  # the share is what keeps it


def test_counters_count_each_snapshot_once(fleet3):
    """fleetgen3 delivers ~1 % of the snapshots twice (part-resent.parquet beside part-0): the
    audit's counters equal the calls the generator made, which the repeat-weighted failure
    trees also count (every failure is emitted or stands in a repeat_count), per host, probe and
    errno -- except on the host whose spool was full (trees lost, counters kept) and hosts with
    failures after their last snapshot (the generator writes no final partial interval)."""
    from baseline.fleet.counters import counter_scans

    root, summary, result, _ = fleet3
    files = dataset_files(root, "counters")
    assert any(f.name == "part-resent.parquet" for f in files)
    _, errors = bucket_counters(counter_scans(files))
    counted = errors.group_by(pl.col("host", "probe", "errno").cast(pl.String)).agg(pl.col("count").sum())
    events = read(dataset_files(root, "events"), "events")
    last = read(files, "counters").group_by("host").agg(pl.col("snapshot_time").max().alias("last"))
    late = events.join(last, on="host").filter(pl.col("start_time") > pl.col("last") - dt.timedelta(seconds=0.1))
    skip = {h for h, roles in summary["roles"].items() if "bad_state" in roles} | set(late["host"])
    weighted = (events.filter(pl.col("errno").is_not_null())
                .group_by("host", "probe", "errno").agg(pl.col("repeat_count").fill_null(1).sum().alias("count")))
    both = counted.join(weighted, on=["host", "probe", "errno"], how="full", coalesce=True, suffix="_trees")
    both = both.filter(~pl.col("host").is_in(list(skip)))
    assert both["host"].n_unique() >= 30, skip
    assert both.filter(pl.col("count").fill_null(0) != pl.col("count_trees").fill_null(0)).is_empty()
    # the crash-looping hosts' persistent-state alerts name their failures counted once
    for host, detail in result.host_alerts.filter(pl.col("alert") == "persistent_bad_state").select("host", "detail").iter_rows():
        if host not in skip and "crash_loop" in summary["roles"].get(host, []):
            n = int(detail.rsplit("(", 1)[1].split()[0])
            assert n <= counted.filter(pl.col("host") == host)["count"].sum(), (host, detail)


def test_a_routine_family_and_a_rare_fault_on_the_same_probe_stay_apart(fleet3):
    """ENODATA at rdma_get_gid_attr is routine in a GID query (an empty slot) and a fault in
    INIT->RTR (the slot emptied under a running job)."""
    _, _, result, s = fleet3
    assert s["per_root_cause"]["gid_empty_slot"]["set_aside_as_expected"] == s["per_root_cause"]["gid_empty_slot"]["traces"]
    vanished = s["per_root_cause"]["gid_vanished_under_qp"]
    assert vanished["detected"] == vanished["traces"] >= 1
    clusters = result.clusters.filter(pl.col("signature").str.starts_with("modify_qp: rdma_get_gid_attr ENODATA"))
    assert clusters.height == 1


def test_host_alerts_only_on_faulty_hosts(fleet3):
    _, summary, result, _ = fleet3
    truth = summary["alert_hosts"]
    for host, errno in result.host_alerts.select("host", "errno").iter_rows():
        assert host in truth and (errno is None or errno in truth[host]), (host, errno, truth.get(host))
    # the device seen only through its counters is alerted on
    counter_only = [h for h, roles in summary["roles"].items() if "bad_state" in roles]
    assert set(counter_only) <= set(result.host_alerts["host"])

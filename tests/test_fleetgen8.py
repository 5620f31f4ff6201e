"""The audit scored on tests/fleetgen8, an eighth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md and docs/architecture.md; without
reading the simulator, the other generators, or the learn/audit code), and the rules it led to.

The fleet (generator.py has its shape): hosts named by rack, mlx5 OFED / upstream and irdma
racks, two low-volume service hosts, train / infer / ckpt jobs, 5 s snapshots with daemon
restarts, pin_user_pages_fast added to the probe set mid-window; routine errors: the OFED GPU
pin's EFAULT rescued by peer memory, ckpt jobs' CQE-compression probe (EOPNOTSUPP), an rdma
cgroup limit on two hosts only (EAGAIN, retried); root causes: GPUs 6-7 no peer client claims,
a rack's top-of-rack switch no longer resolving neighbours (late, still on at the end), irdma
without a dmabuf op (fatal EOPNOTSUPP: the routine's errno), firmware QP exhaustion overlapping
the first. Guards below build their data from the same reference chains (fleetgen8.chains),
not from the code under test: a retry signal on fewer hosts than min_hosts but in many runs;
a cause shared by a rack's hosts, each of them down on the probe."""

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
from fleetgen8 import ROOT_CAUSES, generate
from fleetgen8.chains import all_trees, functions_used

from baseline.fleet.audit import host_alerts
from baseline.fleet.expected import FleetExpectedLearner
from baseline.run.allowlist import ExpectedErrors
from tracer.schema import dataset_files, polars_schema, read

TREES = all_trees()
T0 = dt.datetime(2026, 11, 29, 20, 0, tzinfo=dt.UTC)


fleet8 = audited_fleet("fleet8", generate, package="fleetgen8", hosts=24, hours=4, seed=8)


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the
    audit."""
    assert_generator_is_blind("fleetgen8", tracer_modules={"tracer"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is named in the reference, and each tree's bifurcation errno
    is one the reference gives near that function (mlx5_cmd_exec: the errno_conventions'
    firmware mapping, LIM_ERR -> ENOMEM)."""
    assert_functions_in_reference(functions_used(TREES))
    for tree in TREES.values():
        if not tree.bif:
            continue
        fn, errno, _ = tree.bif
        assert_errno_from_reference(tree.key, fn, errno)
        # the bifurcation is the deepest failing frame of its tree
        failing = [f for f in tree.frames if f[3]]
        assert max(f[0] for f in failing) == next(f[0] for f in tree.frames if f[1] == fn and f[3] == errno)
    assert {t.root_cause for t in TREES.values() if t.root_cause} == set(ROOT_CAUSES)


def test_the_fleet_has_the_shapes_it_is_for(fleet8):
    root, summary, _, _ = fleet8
    events = read(dataset_files(root, "events"), "events")
    counters = read(dataset_files(root, "counters"), "counters")
    truth = read(dataset_files(root, "truth"), "truth")
    assert set(truth["root_cause"].drop_nulls()) == set(ROOT_CAUSES)
    assert set(counters["vendor"]) == {"mlx5", "irdma"}
    # deep trees with three functions named create_qp; write() commands return their size
    sizes = events.group_by("trace_id").agg(pl.len(), (pl.col("probe") == "create_qp").sum().alias("cq"))
    assert sizes["len"].max() >= 40 and sizes["cq"].max() == 3
    roots = events.filter(pl.col("seq") == 0)
    assert roots.filter((pl.col("probe") == "ib_uverbs_write") & pl.col("errno").is_null())["ret"].min() > 0
    # the pin probe joins the set mid-window: its counters start then
    pin = counters.filter(pl.col("probe") == "pin_user_pages_fast")["snapshot_time"].min()
    assert pin > counters["snapshot_time"].min() + dt.timedelta(hours=1.5)
    # low-volume hosts beside busy ones; daemon restarts (snapshots at another phase)
    per_host = counters.group_by("host").agg(pl.col("invocations").sum())
    low = per_host.filter(pl.col("host").is_in(summary["low_volume_hosts"]))["invocations"].max()
    assert low * 50 < per_host["invocations"].max()
    assert events["repeat_count"].fill_null(1).max() > 2


def test_audit_scores_on_fleetgen8(fleet8):
    _, _, result, s = fleet8
    assert_every_cause_found(s, ROOT_CAUSES)
    # one cluster per cause: the fatal EOPNOTSUPP on irdma stays apart from the routine one
    assert s["clusters"] == result.clusters.height == len(ROOT_CAUSES)


def test_host_alerts_only_on_faulty_hosts_and_on_the_whole_rack(fleet8):
    """No alert on a host without a fault (the two cgroup-limited hosts, the ckpt-dense rack,
    the low-volume hosts). Every host of the rack whose switch stopped resolving neighbours and
    that failed INIT->RTR in two buckets or more alerts, though the rack's hosts share the cause
    and the outage began less than four buckets before the window's end."""
    root, summary, result, _ = fleet8
    truth = summary["alert_hosts"]
    for host, errno in result.host_alerts.select("host", "errno").iter_rows():
        assert host in truth and (errno is None or errno in truth[host]), (host, errno, truth.get(host))
    counters = read(dataset_files(root, "counters"), "counters")
    failing = (counters.filter((pl.col("probe") == "rdma_addr_find_l2_eth_by_grh") & (pl.col("failures") > 0))
               .group_by("host").agg(pl.col("snapshot_time").dt.truncate("15m").n_unique().alias("buckets")))
    rack = set(failing.filter(pl.col("buckets") >= 2)["host"])
    assert len(rack) >= 2 and rack <= set(result.host_alerts["host"]), (rack, result.host_alerts)


# --------------------------------------------------------------------------------------------
# guards of the rules this fleet led to, on data built from the reference chains
# --------------------------------------------------------------------------------------------
def _events(specs: list[dict]) -> pl.DataFrame:
    """Events rows of call trees: each spec names a fleetgen8 tree (`key`) and its trace
    (trace_id, host, pid, job, t seconds after T0), all timed (in a capture window)."""
    rows = []
    for s in specs:
        tree = TREES[s["key"]]
        start = T0 + dt.timedelta(seconds=s["t"])
        base = int(s["t"] * 1e9) + 10**12
        for seq, (depth, fn, layer, errno) in enumerate(tree.frames):
            rows.append({
                "trace_id": s["trace_id"], "seq": seq, "ts_ns": base + 1000 * seq, "pid": s["pid"], "tid": s["pid"],
                "ppid": 1, "comm": "python3", "probe": fn, "layer": layer, "depth": depth,
                "ret": -11 if errno else 0, "errno": errno, "latency_ns": 1000 * (len(tree.frames) - seq),
                "arg": tree.arg if depth == 1 else None, "kind": "failure" if tree.failed else "good",
                "command": tree.operation, "exit_status": -11 if tree.frames[0][3] else 0,
                "start_time": start, "end_time": start, "host": s["host"], "kernel_release": "5.15.0-122-generic",
                "lost_events": 0, "job_id": s["job"], "repeat_count": None,
            })
    return pl.DataFrame(rows, schema_overrides={k: v for k, v in polars_schema("events").items()
                                                if k in rows[0]}).with_columns(
        [pl.lit(None, t).alias(c) for c, t in polars_schema("events").items() if c not in rows[0]]
    ).select(polars_schema("events").names())


def _candidate(learner: FleetExpectedLearner, op: str, probe: str, errno: str) -> dict:
    rows = learner.candidates_.filter((pl.col("operation") == op) & (pl.col("probe") == probe)
                                      & (pl.col("errno") == errno)).to_dicts()
    assert len(rows) == 1, (op, probe, errno)
    return rows[0]


def _cgroup_fleet(limited: int, jobs: int, key: str = "create_qp/mlx5/ofed/rdmacg") -> pl.DataFrame:
    """12 hosts making QPs; on `limited` of them the rdma cgroup's hca_object limit makes every
    job's third create_qp fail EAGAIN at ib_rdmacg_try_charge (`key`: another failing tree), the
    library retries and the process goes on (its next create_qp and modify_qp are recorded).
    `jobs` jobs a host."""
    specs, n = [], 0
    for h in range(12):
        host = f"r{h // 6:02d}-h{h % 6}"
        for j in range(jobs):
            t = 300.0 * j + h
            seq = ["create_qp/mlx5/ofed", "create_qp/mlx5/ofed"]
            if h < limited:
                seq += [key, "create_qp/mlx5/ofed"]
            seq += ["modify_qp/mlx5/RESET->INIT", "modify_qp/mlx5/INIT->RTR"]
            for i, k in enumerate(seq):
                specs.append({"key": k, "trace_id": f"t{n}", "host": host, "pid": 1000 + j, "job": f"{host}-{j}",
                              "t": t + 0.01 * i})
                n += 1
    return _events(specs)


def test_a_retry_signal_on_two_hosts_in_many_runs_is_routine():
    """Two hosts of twelve have an rdma cgroup limit: EAGAIN, retried, in every job. Fewer hosts
    than min_hosts (3), but 2 x 8 runs went on after it: as many runs as three hosts would have
    needed (min_hosts x min_jobs) stand in for the hosts. With 2 jobs a host the evidence stays
    too thin (a finding), and so do one host's 5 runs. An errno that is no signal (a neighbour
    resolution's ETIMEDOUT, retried through on the same two hosts) still needs its share of
    the hosts: something there is broken."""
    learner = FleetExpectedLearner()
    row = _candidate(learner.fit(_cgroup_fleet(limited=2, jobs=8)), "create_qp", "ib_rdmacg_try_charge", "EAGAIN")
    assert row["success_hosts"] == 2 < learner.min_hosts and row["success_jobs"] == 16, row
    assert row["expected"], row
    thin = _candidate(FleetExpectedLearner().fit(_cgroup_fleet(limited=2, jobs=2)),
                      "create_qp", "ib_rdmacg_try_charge", "EAGAIN")
    assert not thin["expected"], thin
    single = _candidate(FleetExpectedLearner().fit(_cgroup_fleet(limited=1, jobs=5)),
                        "create_qp", "ib_rdmacg_try_charge", "EAGAIN")
    assert not single["expected"], single
    broken = _candidate(FleetExpectedLearner().fit(_cgroup_fleet(limited=2, jobs=8, key="modify_qp/mlx5/INIT->RTR/neigh")),
                        "modify_qp", "rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT")
    assert broken["success_jobs"] == 16 and not broken["expected"], broken


def _rack_counters(rack_rate: float, rack_hosts: int = 6, hosts: int = 24, buckets: int = 16, start: int = 10,
                   calls_of: dict[tuple[int, int], int] | None = None) -> pl.LazyFrame:
    """Counters (one snapshot per 15 minutes) of the probes of an INIT->RTR modify_qp on every
    host; from bucket `start` the first `rack_hosts` hosts fail `rack_rate` of them with ETIMEDOUT at
    rdma_addr_find_l2_eth_by_grh and every caller up to the handler (the fleetgen8 chain).
    40 calls a bucket, or `calls_of[(host index, bucket)]`."""
    tree = TREES["modify_qp/mlx5/INIT->RTR/neigh"]
    rows = []
    for h in range(hosts):
        host = f"r{h // 6:02d}-h{h % 6}"
        for b in range(buckets):
            calls = (calls_of or {}).get((h, b), 40)
            fails = round(calls * rack_rate) if h < rack_hosts and b >= start else 0
            for _depth, fn, layer, errno in tree.frames:
                rows.append({"host": host, "snapshot_time": T0 + dt.timedelta(minutes=15 * (b + 1)), "probe": fn,
                             "layer": layer, "invocations": calls, "failures": fails if errno else 0,
                             "errno_counts": [{"errno": errno, "count": fails}] if errno and fails else []})
    return pl.DataFrame(rows).with_columns(pl.col("snapshot_time").dt.cast_time_unit("ns")).lazy()


def test_a_rack_down_on_a_probe_alerts_on_each_host_a_shared_partial_cause_does_not():
    """Six hosts of 24 (a rack) fail every INIT->RTR from bucket 10 on: more hosts than a cause
    one host has (max_shared_hosts), but each is down on the probe (>= 90 % of its calls, 3 or
    more failures): a persistent bad state on each, compared with the hosts not down. The same
    six failing 60 % of their calls (a rollout's library on part of the fleet) stays with the
    root-cause clusters."""
    # call depths as the audit learns them from good traces (run_audit's probe_depth)
    depth = {fn: d for d, fn, _, _ in TREES["modify_qp/mlx5/INIT->RTR/neigh"].frames}
    down = host_alerts(_rack_counters(1.0), ExpectedErrors([]), probe_depth=depth)
    assert set(down.filter(pl.col("alert") == "persistent_bad_state")["host"]) == {f"r00-h{i}" for i in range(6)}, down
    assert set(down["probe"]) == {"rdma_addr_find_l2_eth_by_grh"}, down
    partial = host_alerts(_rack_counters(0.6), ExpectedErrors([]), probe_depth=depth)
    assert partial.is_empty(), partial


def test_a_host_down_through_a_bucket_of_one_call_stays_down():
    """The rack goes down three buckets before the window's end; one host calls the probe once in
    the middle bucket (and that call fails too). Down is judged over the run of buckets, not
    each alone: that host alerts from the run's first bucket like its rack-mates. Judged alone,
    its 1-of-1 bucket was not down (fewer than 3 failures) and broke the run into two single
    buckets, too short to alert (fleetgen7's peer client gone after an upgrade on a host whose
    registrations went 5 of 5, 1 of 1, 4 of 4)."""
    depth = {fn: d for d, fn, _, _ in TREES["modify_qp/mlx5/INIT->RTR/neigh"].frames}
    alerts = host_alerts(_rack_counters(1.0, start=13, calls_of={(0, 14): 1}), ExpectedErrors([]), probe_depth=depth)
    down = alerts.filter(pl.col("alert") == "persistent_bad_state")
    assert set(down["host"]) == {f"r00-h{i}" for i in range(6)}, alerts
    assert down.filter(pl.col("host") == "r00-h0")["since"].item() == T0 + dt.timedelta(minutes=15 * 13), down

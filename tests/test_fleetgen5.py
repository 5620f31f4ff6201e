"""The audit scored on tests/fleetgen5, a fifth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md and docs/architecture.md; without
reading the simulator, the other generators, or the learn/audit code).

A small fleet (24 hosts x 14 h, crossing midnight): full call trees (up to 30 frames, 9 deep)
of every verb, three vendors and OFED peer memory, in-kernel aggregation (repeat_count), ring
overflow with trees cut after any frame, skewed host clocks, a rollout and a fix mid-window, two
faults with one errno at one driver probe from different origins, a routine EAGAIN whose rate
triples with load. Scores reached (docs/benchmarks.md, audit quality): every figure 1.0, the
routine family this seed puts on a single host included (below the learner's min_hosts, but
survived 29 times in 29 runs: the runs stand in for hosts), no false host alert."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
from fleet_harness import assert_generator_is_blind, audited_fleet
from fleetgen5 import ABSORBED, FAULTS, RELEASES, ROUTINE, generate

from baseline.fleet.audit import run_audit
from baseline.fleet.evaluate import load_truth, score
from baseline.run.allowlist import ExpectedErrors
from tracer.schema import dataset_files, read

HOURS = 14


fleet5 = audited_fleet("fleet5", generate, package="fleetgen5", hosts=24, hours=HOURS, seed=5)


def test_generator_is_blind():
    """It imports only the data model's writers: nothing of the simulator, the other
    generators or the audit."""
    assert_generator_is_blind("fleetgen5", tracer_modules={"tracer.schema"})


def test_the_fleet_has_the_shapes_it_is_for(fleet5):
    root, summary, _, _ = fleet5
    truth = read(dataset_files(root, "truth"), "truth")
    events = read(dataset_files(root, "events"), "events")
    counters = read(dataset_files(root, "counters"), "counters")
    assert set(ROUTINE) | set(FAULTS) | set(ABSORBED.values()) == set(truth["root_cause"].drop_nulls())
    # every verb the reference names, five QP transitions, deep trees, three vendors, peer memory
    assert events["command"].n_unique() == 12 and events["arg"].drop_nulls().n_unique() == 5
    sizes = events.group_by("trace_id").agg(pl.len(), pl.col("depth").max())
    assert sizes["len"].max() >= 28 and sizes["depth"].max() >= 9
    assert set(counters["vendor"]) == {"mlx5", "bnxt_re", "irdma"} and "peer-mem" in set(events["layer"])
    # two date partitions, in-kernel aggregation, ring overflow with trees cut short
    assert len({p.parent.parent.name for p in dataset_files(root, "events")}) == 2
    assert events["repeat_count"].fill_null(1).max() > 1
    lost = events.filter(pl.col("lost_events") > 0).group_by("trace_id").len()
    assert lost.height and counters["lost_records"].max() > 0
    # the rollout reaches host after host; the UMR fault stops before the window's middle
    first = truth.filter(pl.col("root_cause") == "peer_client_gone").join(
        events.filter(pl.col("seq") == 0).select("trace_id", "start_time"), on="trace_id"
    ).group_by("host").agg(pl.col("start_time").min())
    assert first["start_time"].n_unique() == first.height >= 3
    umr = events.filter(pl.col("probe") == "mlx5r_umr_post_send_wait", pl.col("errno") == "EFAULT")
    start = datetime.fromisoformat(summary["window"][0])
    assert (umr["start_time"].max() - start).total_seconds() < 0.5 * HOURS * 3600 + 300


def test_audit_scores_on_fleetgen5(fleet5):
    root, _, result, s = fleet5
    for key in ("cluster_purity", "cluster_completeness", "bifurcation_top1", "origin_layer_top1",
                "expected_error_precision"):
        assert s[key] == 1.0, (key, s[key])
    assert s["false_findings_on_good"] == 0
    # a routine family seen on fewer hosts than the learner asks for (this seed: irdma without a
    # dmabuf op on one host) is set aside too: its EOPNOTSUPP tells the caller to take another
    # way, and as many runs went on after it as min_hosts hosts would have needed
    thin = {c for c, e in s["per_root_cause"].items() if e.get("expected_error") and e["hosts"] < 3}
    assert thin == {"dmabuf_op_missing"}, thin
    for cause, e in s["per_root_cause"].items():
        if cause in FAULTS:
            assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, (cause, e)
            assert e["bifurcation_top1"] == 1.0 and e["cluster_completeness"] == 1.0, (cause, e)
        else:
            assert e["set_aside_as_expected"] == e["traces"] and not e["open_findings"], (cause, e)
    assert s["false_findings"] == 0
    assert s["clusters"] == len(FAULTS)


def test_same_errno_same_probe_two_origins_two_clusters(fleet5):
    """EFAULT at mlx5_ib_reg_user_mr from the peer-memory client (gone) and from the UMR QP
    (error state): two causes, two clusters, each at its own origin."""
    _, _, result, _ = fleet5
    sig = result.clusters["signature"].to_list()
    assert any(x.startswith("reg_mr: ib_peer_umem_get EFAULT | origin peer-mem") for x in sig), sig
    assert any(x.startswith("reg_mr: mlx5r_umr_post_send_wait EFAULT | origin driver") for x in sig), sig


def test_a_routine_error_after_the_last_capture_window_is_not_a_death(fleet5):
    """The cgroup's EAGAIN: its processes go on, but those whose last recorded trace came after
    their host's last capture window could not show it (right-censored); counted as deaths they
    made the family look fatal (increase_lower 0.054 > 0.05 on this fleet)."""
    from baseline.fleet.expected import FleetExpectedLearner

    root, _, _, _ = fleet5
    c = FleetExpectedLearner().fit(root).candidates_.filter(pl.col("errno") == "EAGAIN").row(0, named=True)
    assert c["censored"] > 0 and c["survived"] == c["traces"] - c["failing"] - c["censored"], c
    assert c["expected"] and not c["outcome_in_windows"], c


def test_cut_short_trees_join_their_cause(fleet5):
    """Trees that lost their last-entered frames (ring overflow) are matched to the complete
    chain they begin: the same cluster, bifurcation and origin as their cause."""
    root, _, result, s = fleet5
    truth = read(dataset_files(root, "truth"), "truth")
    cut = result.findings.filter(pl.col("truncated") & ~pl.col("expected"))
    assert cut.height
    joined = cut.select("trace_id", "cluster_id", "bifurcation_probe").join(
        truth.select("trace_id", "root_cause", pl.col("bifurcation_probe").alias("truth_bif")), on="trace_id")
    assert (joined["bifurcation_probe"] == joined["truth_bif"]).all(), joined
    assert s["per_root_cause"]["peer_client_gone"]["cluster_completeness"] == 1.0


def test_host_alerts_only_on_faulty_hosts(fleet5):
    _, summary, result, _ = fleet5
    truth = summary["alert_hosts"]
    for host, errno in result.host_alerts.select("host", "errno").iter_rows():
        assert host in truth and (errno is None or errno in truth[host]), (host, errno, truth.get(host))
    crash = [h for h, r in summary["roles"].items() if "fw_cmd_timeout_crashloop" in r]
    # a persistent bad state on the crash-looping host only: not on the host whose kernel lacks
    # the dmabuf op (its once-per-process probe fails on every one or two calls a bucket, no
    # state it fell into); that host has no alert at all. The hosts with an intermittent fault
    # of their own (the UMR QP in error state, dmabuf fence timeouts: alert_hosts) may carry a
    # recurring_errno alert (fleetgen9's rule); irdma's unregistered WQE buffers, on every host
    # of its platform, stay with the clusters.
    alerts = result.host_alerts
    assert set(alerts.filter(pl.col("alert") == "persistent_bad_state")["host"]) == set(crash), alerts
    assert set(crash) <= set(alerts["host"]), alerts
    lacking = {h for h, r in summary["roles"].items() if "irdma" in r and RELEASES["old"] in r}
    assert lacking and not lacking & set(alerts["host"]), (lacking, alerts)
    assert not {h for h, r in summary["roles"].items() if "irdma_wqe_buf_unregistered" in r} & set(alerts["host"]), alerts
    # the routine EAGAIN triples per call on the busy hosts: never an alert
    assert "EAGAIN" not in set(result.host_alerts["errno"].drop_nulls())


def test_since_cuts_the_window_mid_day(fleet5, tmp_path):
    """--since inside the second day (and inside a 15-minute bucket): findings only from the
    traces at or after it, scored on those."""
    root, _, _, _ = fleet5
    since = datetime(2026, 11, 29, 4, 20, tzinfo=UTC)
    result = run_audit(root, out_dir=tmp_path / "audit", expected=ExpectedErrors([]), since=since)
    assert result.findings["time"].min() >= since
    events = read(dataset_files(root, "events"), "events").filter(pl.col("seq") == 0)
    kept = events.filter(pl.col("start_time") >= since)["trace_id"]
    s = score(load_truth(root).filter(pl.col("trace_id").is_in(kept.implode())), result.findings)
    for key in ("cluster_purity", "cluster_completeness", "bifurcation_top1", "origin_layer_top1"):
        assert s[key] == 1.0, (key, s[key])
    assert s["failures_scored"] > 100 and s["false_findings_on_good"] == 0

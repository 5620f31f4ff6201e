"""The audit on data this project did not generate: tests/fleetgen (an independent generator
written from reference/rdma_control_path.yaml) scored with baseline evaluate against its truth.

The bars are issue 9's: per-cause purity, origin layer and bifurcation >= 0.95; >= 95 % of the
routine-family traces set aside and <= 1 % left open; no host alert from a learned family."""

from __future__ import annotations

import polars as pl
import pytest
from fleet_harness import assert_generator_is_blind, audited_fleet
from fleetgen import generate
from fleetgen.model import PTR_CLIPPED

from baseline.fleet.expected import FleetExpectedLearner, failed_expr
from tracer.schema import dataset_files, read

ROUTINE = ("expected:rdmacg_eagain", "expected:gid_empty_slot", "expected:counter_bind_enomem")


messy = audited_fleet("messy", generate, hosts=60, hours=6, seed=5)


def test_generator_shares_no_code_with_the_simulator():
    assert_generator_is_blind("fleetgen", tracer_modules={"tracer.schema"})


def test_the_fleet_is_messy(messy):
    root, summary, _, _ = messy
    truth = read(dataset_files(root, "truth"), "truth")
    causes = set(truth["root_cause"].drop_nulls())
    assert set(ROUTINE) <= causes and {"peer_efault", "fw_bad_state", "qp_enomem_after_update",
                                       "gid_index_invalid", "stale_handle_destroy", "stale_qp_modify"} <= causes
    events = read(dataset_files(root, "events"), "events")
    # truncated trees, kernel updates mid-window, pointer-returning roots, roots without errno
    assert events.filter(pl.col("lost_events") > 0)["trace_id"].n_unique() > 10
    assert events.group_by("host").agg(pl.col("kernel_release").n_unique())["kernel_release"].max() == 2
    assert (events["exit_status"] == PTR_CLIPPED).any()
    routine_ok = events.filter((pl.col("depth") == 0) & pl.col("errno").is_null() & (pl.col("kind") == "failure"))
    assert routine_ok.height > 0
    # several signatures per cause; a host seen only through its counters
    sigs = truth.filter(pl.col("root_cause") == "fw_bad_state").select("bifurcation_probe", "bifurcation_errno").unique()
    assert sigs.height >= 2
    counter_hosts = set(read(dataset_files(root, "counters"), "counters")["host"].unique())
    assert summary["counter_only_hosts"] and set(summary["counter_only_hosts"]) <= counter_hosts
    assert not set(summary["counter_only_hosts"]) & set(events["host"].unique())


def test_audit_meets_the_bars_on_the_messy_fleet(messy):
    _, _, _, s = messy
    assert s["cluster_purity"] >= 0.95
    assert s["bifurcation_top1"] >= 0.95 and s["origin_layer_top1"] >= 0.95
    assert s["routine_set_aside"] >= 0.95, s["per_root_cause"]
    assert s["routine_open_findings"] <= 0.01
    assert s["false_findings_on_good"] == 0
    for cause, e in s["per_root_cause"].items():
        if e.get("expected_error"):
            assert e["set_aside_as_expected"] >= 0.95 * e["traces"], cause
        elif e.get("observable"):
            assert e["detected"] == e["traces"], cause
            assert e["bifurcation_top1"] >= 0.95 and e["origin_layer_top1"] >= 0.95, (cause, e)
            assert (e["dominant_cluster_purity"] or 0) >= 0.95, (cause, e)


def test_no_host_alert_from_a_learned_family(messy):
    _, summary, result, _ = messy
    alerts = result.host_alerts
    assert set(alerts["host"]) <= set(summary["alert_hosts"]), alerts
    assert set(summary["alert_hosts"]) <= set(alerts.filter(pl.col("alert") == "persistent_bad_state")["host"])
    # the host seen only through its counters runs the routine families: quiet
    assert not set(summary["counter_only_hosts"]) & set(alerts["host"])


def test_clusters_name_kernel_updates_and_truncation(messy):
    _, _, result, _ = messy
    sig = result.clusters.filter(pl.col("signature").str.starts_with("create_qp: mlx5_ib_create_qp ENOMEM"))
    assert sig.height == 1 and "since kernel update to " in sig["signature"][0]
    others = result.clusters.filter(~pl.col("signature").str.starts_with("create_qp: mlx5_ib_create_qp ENOMEM"))
    assert not others["signature"].str.contains("kernel update").any()
    truncated = result.findings.filter(pl.col("truncated") & ~pl.col("expected"))
    assert truncated.height and truncated["signature"].cast(pl.String).str.contains("origin at or below").all()


def test_learner_is_sklearn_shaped_and_learns_at_the_origin(messy):
    from sklearn.base import clone

    root = messy[0]
    learner = FleetExpectedLearner(min_hosts=3)
    assert clone(learner).get_params() == learner.get_params()
    with pytest.raises(ValueError, match="invalid parameter"):
        learner.set_params(nope=1)
    with pytest.raises(Exception, match="not fitted"):
        learner.predict(pl.DataFrame({"operation": ["x"], "probe": ["y"], "errno": ["E"]}))
    learner.fit(root)
    keys = {(e.context, e.probe, e.errno) for e in learner.entries_}
    assert ("create_qp", "ib_rdmacg_try_charge", "EAGAIN") in keys  # where it originates, not the handler
    assert ("query_gid", "rdma_get_gid_attr", "ENODATA") in keys
    assert ("modify_qp RESET->INIT", "rdma_counter_bind_qp_auto", "ENOMEM") in keys  # one vendor only
    assert not any(e.errno in ("EIO", "ETIMEDOUT", "EFAULT", "EINVAL") for e in learner.entries_)
    assert ("create_qp", "mlx5_ib_create_qp", "ENOMEM") not in keys  # started with a kernel update
    assert not any(e.errno == "ENOENT" and e.probe == "rdma_lookup_get_uobject" for e in learner.entries_)  # masked
    probe = pl.DataFrame({"operation": ["create_qp", "create_qp"], "probe": ["ib_rdmacg_try_charge", "mlx5_ib_create_qp"],
                          "errno": ["EAGAIN", "ENOMEM"]})
    assert learner.predict(probe).tolist() == [True, False]
    gid = next(e for e in learner.entries_ if e.probe == "rdma_get_gid_attr" and e.errno == "ENODATA")
    assert "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY" in gid.stats["covers"]
    assert gid.stats["rate_upper"]["ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"] > 0


def test_a_pointer_returned_by_the_root_is_a_success():
    traces = pl.DataFrame({"exit_status": [PTR_CLIPPED, -2, 0, None, 0],
                           "kind": ["good", "failure", "failure", "failure", "failure"],
                           "root_err": [False, True, False, None, True]})
    assert traces.select(failed_expr().alias("f"))["f"].to_list() == [False, True, False, True, True]


def test_routine_families_learned_without_job_ids(messy, tmp_path):
    """job_id is only set "when known": runs fall back to the process (pid, which the fleet
    tracer always records), and the learner still tells routine families from fatal causes."""
    import shutil

    root = tmp_path / "nojobs"
    shutil.copytree(messy[0], root, ignore=shutil.ignore_patterns("audit"))
    from tracer.schema import write_table

    for f in dataset_files(root, "events"):
        write_table(read(f, "events").with_columns(pl.lit(None, pl.String).alias("job_id")), f, "events")
    keys = {(e.context, e.probe, e.errno) for e in FleetExpectedLearner().fit(root).entries_}
    assert {("create_qp", "ib_rdmacg_try_charge", "EAGAIN"), ("query_gid", "rdma_get_gid_attr", "ENODATA"),
            ("modify_qp RESET->INIT", "rdma_counter_bind_qp_auto", "ENOMEM")} <= keys
    assert not any(e in ("EIO", "ETIMEDOUT", "EFAULT") for _, _, e in keys)


def test_failures_in_one_kernel_tick_do_not_look_fatal(messy, tmp_path):
    """Outside capture windows the fleet tracer stamps a failure with the 4 ms tick it returned
    in (bpf_jiffies64 at HZ=250), not a ns time: a process's retries in one tick share a start
    time. Only the last of them was followed by nothing; the routine families must be learned
    the same from tick-stamped failures as from ns-stamped ones."""
    import shutil

    root = tmp_path / "ticks"
    shutil.copytree(messy[0], root, ignore=shutil.ignore_patterns("audit"))
    from tracer.schema import write_table

    for f in dataset_files(root, "events"):
        ev = read(f, "events")
        failure = pl.col("kind") == "failure"
        write_table(ev.with_columns(
            pl.when(failure).then(pl.col("start_time").dt.truncate("4ms")).otherwise("start_time").alias("start_time"),
            pl.when(failure).then(pl.col("end_time").dt.truncate("4ms")).otherwise("end_time").alias("end_time"),
        ), f, "events")
    ticks = FleetExpectedLearner().fit(root)
    ns = FleetExpectedLearner().fit(messy[0])
    assert ticks.candidates_["traces"].sum() == ns.candidates_["traces"].sum()
    assert {(e.context, e.probe, e.errno) for e in ticks.entries_} == {(e.context, e.probe, e.errno) for e in ns.entries_}
    # a tie is one failing occurrence, not all of them
    assert ticks.candidates_["failing"].sum() <= ns.candidates_["failing"].sum()

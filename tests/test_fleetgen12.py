"""The audit scored on tests/fleetgen12, a twelfth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' docstrings; without reading the simulator, the
other generators, or the audit).

What it is for: data-delivery shapes other code produces -- counters reset by a daemon restart
and shipped as negative deltas, a half hour of snapshots delivered twice, good traces sampled
ten seconds an hour, clocks minutes off -- beside dma-buf attach failing under GPU memory
pressure on two hosts (must alert), a rack's firmware flashed for 20 minutes (a cluster, no
alert), and an errno routine on one NIC firmware and fatal on another (generator.py has the
fleet and the decisions behind its truth)."""

from __future__ import annotations

import datetime as dt
import json
import shutil

import polars as pl
import pytest
from fleet_harness import (
    assert_errno_from_reference,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen12 import ROOT_CAUSES, generate
from fleetgen12.generator import PLATFORMS, ROUTINE, frames_of

from baseline.fleet.counters import bucket_counters
from baseline.fleet.model import GoodTraceBaseline, collect_traces
from tracer.schema import COUNTERS, counter_buckets_of, dataset_files, read, write_partition

fleet12 = audited_fleet("fleet12", generate, package="fleetgen12", hosts=36, hours=3, seed=12)

OPS = [("alloc_pd", None), ("reg_mr", "host"), ("reg_mr", "gpu"), ("reg_dmabuf_mr", "gpu"), ("create_cq", None),
       ("create_qp", None), ("modify_qp", "RESET->INIT"), ("modify_qp", "INIT->RTR"), ("modify_qp", "RTR->RTS"),
       ("destroy_qp", None), ("dereg_mr", None), ("dealloc_pd", None)]


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen12", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's errno is one the reference
    gives near its origin (or, for mlx5_cmd_exec, its errno_conventions' firmware mapping)."""
    functions = {fn for p in PLATFORMS for op, arg in OPS for label in ("good", *ROOT_CAUSES, *ROUTINE)
                 for _, fn, _, _ in frames_of(p, op, arg, label)}
    assert_functions_in_reference(functions)
    for cause, (probe, errno, _, _) in ROOT_CAUSES.items():
        assert_errno_from_reference(cause, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet12):
    root, summary, _, _ = fleet12
    counters = read(dataset_files(root, "counters"), "counters")
    events = read(dataset_files(root, "events"), "events")
    # counters going backwards on the restarted hosts, only there
    backwards = counters.filter(pl.col("invocations") < 0)["host"].unique().sort().to_list()
    assert backwards == sorted(summary["counter_reset_s"]), backwards
    # at-least-once shipping: the same trace ids and snapshots twice, in a second part file
    resent = [f for f in dataset_files(root, "events") if f.name.startswith("part-resent")]
    assert {f.parent.name.removeprefix("host=") for f in resent} == set(summary["resent_s"])
    twice = events.group_by("trace_id", "seq").len().filter(pl.col("len") > 1)
    assert twice.height > 100
    assert counters.group_by("host", "probe", "snapshot_time").len()["len"].max() == 2
    # good traces only from the hourly 10 s windows: every good trace timed, few of them
    good = events.filter(pl.col("kind") == "good")
    assert good["latency_ns"].null_count() == 0 and good["trace_id"].n_unique() < 0.1 * events["trace_id"].n_unique()
    # 16 ranks a job
    per_job = events.group_by("job_id").agg(pl.col("pid").n_unique())
    assert per_job["pid"].max() == 16
    # the firmware is in the metadata only; the two firmwares share kernel and vendor
    fw = {m["value"] for ms in events.unique("trace_id")["metadata"] for m in ms if m["key"] == "fw_version"}
    assert fw == {"22.39.1002", "28.41.1000"}
    assert PLATFORMS["ofed22"][0] == PLATFORMS["ofed28"][0]


def test_audit_scores_on_fleetgen12(fleet12):
    """Every root cause found in one cluster each, at its origin, none set aside; nothing on a
    good trace. The NO_RES family's traces on firmware 22.39 (routine there) are scored below."""
    _, _, _, scores = fleet12
    for key in ("cluster_completeness", "bifurcation_top1", "origin_layer_top1", "expected_error_precision"):
        assert scores[key] == 1.0, (key, scores[key])
    assert scores["false_findings_on_good"] == 0
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] > 20 and e["set_aside_as_expected"] == 0, (cause, e)


def _routine_open(root) -> pl.DataFrame:
    findings = pl.read_parquet(root / "audit" / "findings.parquet")
    truth = read(dataset_files(root, "truth"), "truth").filter(pl.col("expected_error"))
    return findings.join(truth.select("trace_id"), on="trace_id").filter(~pl.col("expected"))


def test_routine_families_set_aside(fleet12):
    """The peer client's rescue of GUP's EFAULT and destroy_qp's ignored counter-unbind EINVAL are
    set aside. (Before, the EINVAL was a finding in every teardown: it is each process's last
    call, so no later call showed a survival, though the operation absorbed it.)"""
    root, _, _, _ = fleet12
    opened = _routine_open(root).filter(pl.col("operation") != "create_qp")
    assert opened.is_empty(), opened.group_by("operation", "bifurcation_probe", "bifurcation_errno").len()


@pytest.mark.xfail(strict=True, reason="the (create_qp, mlx5_cmd_exec, EAGAIN) family is judged over the whole "
                   "vendor/release group: fatal on the firmware 28.41 hosts, it stays open on the 22.39 hosts "
                   "too, where every process retries through it (the firmware is in no column; a per-host "
                   "split of survival, like update_regression's without the update, is not done). On a fleet with "
                   "more 22.39 hosts (100 hosts x 3 h) the survivals win instead and the family is set aside "
                   "everywhere, the 28.41 hosts' deaths included: the root cause is missed. A per-host split "
                   "of survival alone does not separate them either: the upstream 22.39 hosts (kernel 6.8) record "
                   "nothing after a retried NO_RES (their dma-buf registrations succeed; few teardowns are "
                   "recorded), so every one of their occurrences is a death (f/n = 1.0 on 3-12 per host, "
                   "ENOMEM kills on g12-r01-n2 too) beside the 28.41 hosts' 0.5-0.6 on 10-48")
def test_errno_routine_on_one_firmware_fatal_on_another(fleet12):
    root, _, _, scores = fleet12
    assert _routine_open(root).is_empty()
    assert scores["per_root_cause"]["fw28_no_res_persistent"]["dominant_cluster_purity"] == 1.0


def test_host_alert_recall_and_precision(fleet12):
    """Both memory-pressure hosts alert with ENOMEM (one of them also had its counters reset, the
    other its snapshots delivered twice); no alert elsewhere -- not on the flashed rack (a
    20-minute window that recovered), not on the hosts whose counters went backwards -- except
    EAGAIN on a firmware 28.41 host, tolerated."""
    _, summary, result, _ = fleet12
    shown = set(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    origin = ROOT_CAUSES["dmabuf_attach_enomem_pressure"][0]
    missed = [host for host, errnos in summary["alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and p == origin))
                         for h, a, p, e in shown)]
    assert not missed, (missed, result.host_alerts)
    tolerated = summary["tolerated_alerts"]
    false = [(h, a, p, e) for h, a, p, e in shown
             if not (h in summary["alert_hosts"] and (e in summary["alert_hosts"][h] or a == "persistent_bad_state"))
             and not (h in tolerated and e in tolerated[h])]
    assert not false, (false, json.dumps(summary["counter_reset_s"]))


def test_a_counter_reset_counts_no_calls_below_zero():
    """A snapshot whose deltas go backwards (a daemon restarted under an exporter shipping
    cumulative counts as new - old) adds nothing to its bucket's calls, as its negative errno
    counts add no failures, in the audit's bucketing and in the summaries' writer alike. Before,
    its -5,000 calls took the bucket below its errors: a failure rate under 0, and CUSUM NaN
    rising alerts on three healthy fleetgen12 hosts."""
    start = dt.datetime(2026, 11, 30, 22, tzinfo=dt.UTC)
    rows = []
    for i, (calls, fails) in enumerate([(40, 2), (40, 2), (-5000, -300), (40, 2), (40, 2)]):
        rows.append({"host": "h1", "snapshot_time": start + dt.timedelta(minutes=i + 1), "interval_s": 60.0,
                     "kernel_release": "5.15.0-1063-nvidia", "vendor": "mlx5", "probe_set": "rdma",
                     "probe": "pin_user_pages_fast", "layer": "core", "live": True, "invocations": calls,
                     "failures": fails, "errno_counts": [{"errno": "EFAULT", "count": fails}], "lost_records": 0})
    frame = pl.DataFrame(rows, schema=pl.from_arrow(COUNTERS.empty_table()).schema)
    calls, errors = bucket_counters(frame.lazy())
    assert calls["n"].to_list() == [160] and errors["count"].to_list() == [8]
    summary = counter_buckets_of(frame)
    assert summary["n"].to_list() == [160] and summary["errno_counts"].to_list() == [[{"errno": "EFAULT", "count": 8}]]


def _fitted_tables(root) -> dict:
    model = GoodTraceBaseline().fit(root)
    traces, chains = collect_traces(root)
    out = {k: getattr(model, k) for k in ("edges_", "chains_", "op_hosts_", "operations_", "n_traces_", "n_events_")}
    out["traces"] = traces.with_columns(pl.col(pl.Categorical).cast(pl.String))
    out["chains"] = chains.select(pl.col("operation").cast(pl.String), "chain_hash", "seq", "probe", "errno")
    return {k: v.sort(v.columns) if isinstance(v, pl.DataFrame) else v for k, v in out.items()}


def test_call_trees_delivered_twice_count_once(fleet12, tmp_path):
    """At-least-once shipping: three hosts' half hour of call trees again in a second part file
    (the generator's), and one more host whose first file's last tree is re-sent alone (the two
    copies next to each other in the scan). Learn's model and the audit's per-trace table and
    chains are those of the data delivered once (each record, tracer.schema.RECORD_KEY, counted
    once). Before, each re-sent tree was one trace of twice its frames: a chain of its own (16
    good chains instead of 9), and the model's events per operation counted twice."""
    root, summary, _, _ = fleet12
    twice, once = tmp_path / "twice", tmp_path / "once"
    shutil.copytree(root / "events", twice / "events")
    shutil.copytree(root / "events", once / "events", ignore=shutil.ignore_patterns("part-resent-*"))
    host = next(h for h in sorted(summary["platforms"]) if h not in summary["resent_s"])
    first = next(f for f in dataset_files(twice, "events") if f.parent.name == f"host={host}")
    rows = pl.read_parquet(first)
    last = rows.filter(pl.col("trace_id") == rows["trace_id"][-1])
    date = first.parent.parent.name.removeprefix("date=")
    write_partition(last.to_arrow(), twice, "events", date, host, "part-resent-9.parquet", durable=False)
    names = [f.name for f in dataset_files(twice, "events") if f.parent == first.parent]
    assert names == [first.name, "part-resent-9.parquet"] and last.height > 1
    got, want = _fitted_tables(twice), _fitted_tables(once)
    for key, value in want.items():
        assert (got[key].equals(value) if isinstance(value, pl.DataFrame) else got[key] == value), key

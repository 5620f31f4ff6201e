"""The audit scored on tests/fleetgen7, a seventh fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md and docs/architecture.md; without
reading the simulator, the other generators, or the learn/audit code), and the rules it led to.

The fleet (generator.py has its shape): a tracer probing every function of the reference chains
(15-30 frame trees under ib_uverbs_write / ib_uverbs_ioctl), mlx5 OFED and upstream, bnxt_re
and irdma hosts, 16-NIC hosts whose jobs fail and restart together, a kernel rollout with
reboots, skewed clocks, daemon gaps, ring loss and truncated records; seven root causes and six
routine errors, some dense on a few hosts. Guards below build their traces from the same
reference chains (fleetgen7.chains), not from the code under test: a routine error most of
whose occurrences come after a rollout that did not bring it; ranks killed with their job; a
truncated record that lost every error frame; an absorbed error confined to a few hosts; a
dense routine rate that is a host's configuration."""

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
from fleetgen7 import ROOT_CAUSES, generate
from fleetgen7.templates import build, functions_used

from baseline.fleet.audit import host_alerts, run_audit
from baseline.fleet.expected import FleetExpectedLearner
from baseline.run.allowlist import Entry, ExpectedErrors
from tracer.schema import dataset_files, polars_schema, read

TEMPLATES = build()
T0 = dt.datetime(2026, 11, 29, 20, 0, tzinfo=dt.UTC)


fleet7 = audited_fleet("fleet7", generate, package="fleetgen7", hosts=24, hours=2, seed=7)


def test_generator_is_blind():
    """It imports only the data model's writers: nothing of the simulator, the other
    generators or the audit."""
    assert_generator_is_blind("fleetgen7", tracer_modules={"tracer"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is named in the reference, and every injected or routine
    error's errno is one the reference gives for the function where it starts (mlx5 firmware
    commands: the errno_conventions' mapping, transport timeouts included)."""
    assert_functions_in_reference(functions_used(TEMPLATES))
    for tmpl in TEMPLATES.values():
        for fn, errno in ((tmpl.bif, tmpl.bif_errno), *_origins(tmpl)):
            if fn is None:
                continue
            assert_errno_from_reference(tmpl.key, fn, errno, window=700, firmware=("mlx5_cmd_exec", "mlx5_cmd_do"))
    assert {t.root_cause for t in TEMPLATES.values() if t.root_cause} == set(ROOT_CAUSES)


def _origins(tmpl) -> list[tuple[str, str]]:
    """(function, errno) of each failing frame none of whose callees failed."""
    frames = tmpl.frames()
    out = []
    for i, f in enumerate(frames):
        if not f["errno"]:
            continue
        kids = [g for g in frames[i + 1:] if g["depth"] > f["depth"]]
        end = next((j for j, g in enumerate(frames[i + 1:]) if g["depth"] <= f["depth"]), len(kids))
        if not any(g["errno"] for g in frames[i + 1:i + 1 + end]):
            out.append((f["probe"], f["errno"]))
    return out


def test_the_fleet_has_the_shapes_it_is_for(fleet7):
    root, summary, _, _ = fleet7
    events = read(dataset_files(root, "events"), "events")
    counters = read(dataset_files(root, "counters"), "counters")
    truth = read(dataset_files(root, "truth"), "truth")
    assert set(truth["root_cause"].drop_nulls()) == set(ROOT_CAUSES)
    assert set(counters["vendor"]) == {"mlx5", "bnxt_re", "irdma"} and counters["kernel_release"].n_unique() == 4
    # deep trees, one create_qp tree running three functions named create_qp at three layers
    sizes = events.group_by("trace_id").agg(pl.len(), (pl.col("probe") == "create_qp").sum().alias("cq"))
    assert sizes["len"].max() >= 28 and sizes["cq"].max() == 3
    # in-kernel aggregation, truncated records, 16-NIC hosts, a rollout's reboot (two releases on a host)
    assert events["repeat_count"].fill_null(1).max() > 3
    assert events.filter(pl.col("lost_events") > 0)["trace_id"].n_unique() > 0
    assert any(h.startswith("gpux-") for h in summary["hosts"])
    assert (events.group_by("host").agg(pl.col("kernel_release").n_unique())["kernel_release"] > 1).any()
    # half the summaries missing: those hosts are read raw
    assert 0 < len(dataset_files(root, "counter_buckets")) < len(dataset_files(root, "counters"))
    # routine errors inside successful calls: failure records whose root succeeded
    roots = events.filter(pl.col("seq") == 0)
    assert roots.filter((pl.col("kind") == "failure") & pl.col("errno").is_null()).height > 100


def test_audit_scores_on_fleetgen7(fleet7):
    _, _, result, s = fleet7
    assert_every_cause_found(s, ROOT_CAUSES)
    # one cluster per cause: the growing firmware timeout's create_qp / modify_qp / create_cq on
    # its one host are one; three causes sharing ETIMEDOUT (driver, core, core) stay three
    assert s["clusters"] == len(ROOT_CAUSES) == result.clusters.height


def test_host_alerts_only_on_faulty_hosts(fleet7):
    _, summary, result, _ = fleet7
    truth = summary["alert_hosts"]
    for host, errno in result.host_alerts.select("host", "errno").iter_rows():
        assert host in truth and (errno is None or errno in truth[host]), (host, errno, truth.get(host))
    assert not set(result.host_alerts["host"]) & set(summary["dense_routine_hosts"])


# --------------------------------------------------------------------------------------------
# guards of the rules this fleet led to, on traces built from the reference chains
# --------------------------------------------------------------------------------------------
def _events(specs: list[dict]) -> pl.DataFrame:
    """Events rows of call trees: each spec names a fleetgen7 template (`key`) and its trace
    (trace_id, host, pid, job, t seconds after T0, kernel, timed, keep: frames kept)."""
    rows = []
    for s in specs:
        tmpl = TEMPLATES[s["key"]]
        frames = tmpl.frames()
        keep = s.get("keep", len(frames))
        start = T0 + dt.timedelta(seconds=s["t"])
        base = int(s["t"] * 1e9) + 10**12
        for seq, f in enumerate(frames[:keep]):
            rows.append({
                "trace_id": s["trace_id"], "seq": seq, "ts_ns": base + f["t"], "pid": s["pid"], "tid": s["pid"],
                "ppid": 1, "comm": "python3", "probe": f["probe"], "layer": f["layer"], "depth": f["depth"],
                "ret": f["ret"], "errno": f["errno"], "latency_ns": f["lat"] if s.get("timed", True) else None,
                "arg": tmpl.arg if f["depth"] == 1 else None,
                "kind": "failure" if tmpl.failed else "good", "command": tmpl.operation,
                "exit_status": frames[0]["ret"], "start_time": start, "end_time": start, "host": s["host"],
                "kernel_release": s.get("kernel", "6.8.0-49-generic"), "lost_events": len(frames) - keep,
                "job_id": s["job"], "repeat_count": None,
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


def _rollout(new_family_timed: bool) -> FleetExpectedLearner:
    """Four hosts switch kernels ten minutes in; the rdma cgroup's EAGAIN at create_qp shows
    before and after; alloc_pd's shows only on the new release, every process retrying through
    it (timed in capture windows or not)."""
    specs, n = [], 0
    for h in range(4):
        host = f"gpu{h:03d}"
        for i in range(20):
            t = 60.0 * i + h
            kernel = "6.8.0-49-generic" if i == 0 else "6.8.0-51-generic"
            for key, dtt in (("create_qp/bnxt_re/rdmacg", 0.0), ("create_qp/bnxt_re", 0.05)):
                specs.append({"key": key, "trace_id": f"t{n}", "host": host, "pid": 100 + i, "job": f"{host}-j{i}",
                              "t": t + dtt, "kernel": kernel})
                n += 1
            if i:  # on the new release only, on every host
                for key, dtt in (("alloc_pd/bnxt_re/rdmacg", 0.1), ("alloc_pd/bnxt_re", 0.15)):
                    specs.append({"key": key, "trace_id": f"t{n}", "host": host, "pid": 100 + i,
                                  "job": f"{host}-j{i}", "t": t + dtt, "kernel": kernel,
                                  "timed": new_family_timed})
                    n += 1
    return FleetExpectedLearner().fit(_events(specs))


def test_a_rollout_early_in_the_window_does_not_make_a_routine_error_a_regression():
    """create_qp's EAGAIN shows before the switch on every host and 19 times as often after it:
    the update did not bring it, and it is routine. A family that shows only on the new release
    of every host, whose outcome the capture windows never show, stays a regression."""
    learner = _rollout(new_family_timed=False)
    routine = _candidate(learner, "create_qp", "ib_rdmacg_try_charge", "EAGAIN")
    assert routine["expected"] and routine["new_release_share"] == 0.0, routine
    regression = _candidate(learner, "alloc_pd", "ib_rdmacg_try_charge", "EAGAIN")
    assert not regression["expected"] and regression["new_release_share"] == 1.0, regression


def test_an_error_an_update_brought_that_every_process_is_seen_to_survive_is_routine():
    """The same family only on the new release, its 76 occurrences timed in capture windows and
    every process going on: shown harmless (Increase's upper bound within max_increase), it is
    the release's routine, as tests/fleetgen19's benign create_cq EOPNOTSUPP after a rollout
    (main kept it a regression: 749 open findings there)."""
    learner = _rollout(new_family_timed=True)
    new = _candidate(learner, "alloc_pd", "ib_rdmacg_try_charge", "EAGAIN")
    assert new["new_release_share"] == 1.0 and new["outcome_in_windows"], new
    assert new["expected"] and new["increase_upper"] <= 0.05, new


def test_ranks_killed_with_their_job_are_no_deaths_of_their_last_error():
    """Six hosts, four ranks a job. In two jobs a host, rank 0 meets a fatal error (bnxt_re's QP
    limit) and the launcher kills the other ranks, whose last trace was a retried cgroup charge:
    their end is the job's, not the EAGAIN's (censored). Rank 0's own death stays one."""
    specs, n = [], 0
    for h in range(6):
        host = f"gpu{h:03d}"
        for j in range(5):
            t = 600.0 * j + h
            for rank in range(4):
                pid = 1000 * j + rank
                seq = [("create_qp/bnxt_re/rdmacg", 0.1 * rank), ("create_qp/bnxt_re", 0.1 * rank + 0.05)]
                if j < 2 and rank == 0:
                    seq.append(("create_qp/bnxt_re/limit", 1.0))
                elif j < 2:
                    seq = seq[:1]  # killed before its retry was recorded
                for key, dtt in seq:
                    specs.append({"key": key, "trace_id": f"t{n}", "host": host, "pid": pid, "job": f"{host}-j{j}",
                                  "t": t + dtt})
                    n += 1
    learner = FleetExpectedLearner().fit(_events(specs))
    eagain = _candidate(learner, "create_qp", "ib_rdmacg_try_charge", "EAGAIN")
    assert eagain["failing"] == 0 and eagain["censored"] == 6 * 2 * 3 and eagain["expected"], eagain
    fatal = _candidate(learner, "create_qp", "bnxt_re_create_qp", "EINVAL")
    assert fatal["failing"] == 6 * 2 and not fatal["expected"], fatal


def test_a_truncated_record_that_lost_every_error_frame_is_still_a_finding():
    """OFED GPU registrations whose pin fails EFAULT and the peer path rescues (the root
    succeeds); one record ran out of room before the pin: no error frame is left, but the tracer
    emitted it for a failure, so its prefix matches it to the rescued chain."""
    specs, n = [], 0
    for h in range(4):
        host = f"gpu{h:03d}"
        for i in range(8):
            for key, dtt in (("reg_mr/ofed", 0.0), ("reg_mr/ofed/gpu", 0.05), ("reg_mr/ofed", 0.1)):
                specs.append({"key": key, "trace_id": f"t{n}", "host": host, "pid": 100 + i, "job": f"{host}-j{i}",
                              "t": 60.0 * i + h + dtt, "kernel": "5.15.0-119-generic"})
                n += 1
    frames = TEMPLATES["reg_mr/ofed/gpu"].frames()
    pin = next(i for i, f in enumerate(frames) if f["errno"])
    specs.append({"key": "reg_mr/ofed/gpu", "trace_id": "cut", "host": "gpu000", "pid": 999, "job": "gpu000-jx",
                  "t": 900.0, "kernel": "5.15.0-119-generic", "keep": pin, "timed": False})
    result = run_audit(_events(specs), expected=ExpectedErrors([]))
    cut = result.findings.filter(pl.col("trace_id") == "cut")
    assert cut.height == 1, result.findings
    assert cut["bifurcation_probe"][0] == "pin_user_pages_fast" and cut["bifurcation_errno"][0] == "EFAULT"
    assert "[truncated: origin at or below" in cut["signature"][0]


def test_an_absorbed_error_on_few_hosts_is_routine():
    """bnxt_re has no counter ops: on the 3 of 20 hosts whose port counter mode is AUTO, every
    RESET->INIT's rdma_counter_bind_qp_auto fails ENOMEM, which _ib_modify_qp ignores (the
    modify succeeds). Confined to 15 % of the hosts that run the probe, yet no caller saw it
    fail: routine."""
    specs, n = [], 0
    for h in range(20):
        host = f"gpu{h:03d}"
        auto = "/auto" if h < 3 else ""
        for i in range(6):
            for key, dtt in ((f"modify_qp/bnxt_re/RESET->INIT{auto}", 0.0), ("modify_qp/bnxt_re/INIT->RTR", 0.05)):
                specs.append({"key": key, "trace_id": f"t{n}", "host": host, "pid": 100 + i, "job": f"{host}-j{i}",
                              "t": 60.0 * i + h + dtt})
                n += 1
    learner = FleetExpectedLearner().fit(_events(specs))
    row = _candidate(learner, "modify_qp", "rdma_counter_bind_qp_auto", "ENOMEM")
    assert row["group_hosts"] == 3 and row["observed_hosts"] == 20 and row["expected"], row
    entry = next(e for e in learner.entries_ if e.probe == "rdma_counter_bind_qp_auto")
    assert entry.stats["host_configuration"]


def test_a_dense_routine_rate_is_a_configuration_not_a_bad_state():
    """Query GID entries: 2 % of them hit an empty slot (ENODATA) on most hosts; gpu007's table
    is half empty (60 %, all day, its jobs bursty: no calls in every other bucket); gpu003's
    rate climbs from bucket 12. A learned family whose host rate is a configuration (stats
    host_configuration: its errno tells the caller what to do next) raises no persistent bad
    state on gpu007 and no rising alert for its bursts; gpu003's rising rate alerts. The same
    family without the mark keeps the old verdict (gpu007 alerts: its bursts rise over its own
    average)."""
    rows = []
    for h in range(20):
        host = f"gpu{h:03d}"
        for b in range(24):
            calls = 400 if host != "gpu007" or b % 2 else 0
            rate = 0.6 if host == "gpu007" else 0.02 + (0.04 * (b - 11) if host == "gpu003" and b >= 12 else 0)
            fails = int(calls * rate)
            for probe, layer in (("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "uverbs"),
                                 ("rdma_get_gid_attr", "core")):
                rows.append({"host": host, "snapshot_time": T0 + dt.timedelta(minutes=15 * (b + 1)), "probe": probe,
                             "layer": layer, "invocations": calls, "failures": fails,
                             "errno_counts": [{"errno": "ENODATA", "count": fails}] if fails else []})
    counters = pl.DataFrame(rows).with_columns(pl.col("snapshot_time").dt.cast_time_unit("ns")).lazy()
    covers = ["rdma_get_gid_attr", "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"]
    stats = {"covers": covers, "rate_upper": dict.fromkeys(covers, 0.05)}
    depth = {"ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": 0, "rdma_get_gid_attr": 1}

    def entry(**extra: object) -> ExpectedErrors:
        return ExpectedErrors([Entry(id="l", source="learned", probe="rdma_get_gid_attr", errno="ENODATA",
                                     context="query_gid", stats={**stats, **extra})])

    alerts = host_alerts(counters, entry(host_configuration=True), probe_depth=depth)
    assert alerts.select("host", "alert").rows() == [("gpu003", "rising_errno_rate")], alerts
    old = host_alerts(counters, entry(), probe_depth=depth)
    assert "gpu007" in set(old["host"]), old


def test_an_error_the_code_went_on_from_is_not_blamed_for_a_later_one():
    """OFED registrations of GPU memory: pin_user_pages_fast fails EFAULT and the peer-memory
    path takes over (routine, the root succeeds). On two hosts no peer client claims the range:
    ib_peer_umem_get fails too, with the EFAULT the caller gets, and the job dies. The pin's
    EFAULT came first in those trees and the code went on after it; the death is the peer
    failure's, so the pin's error stays routine."""
    specs, n = [], 0
    for h in range(6):
        host = f"gpu{h:03d}"
        for i in range(8):
            dying = h < 2 and i % 2 == 0
            seq = [("reg_mr/ofed/gpu/nopeer", 0.0)] if dying else [("reg_mr/ofed/gpu", 0.0), ("reg_mr/ofed", 0.05)]
            for key, dtt in seq:
                specs.append({"key": key, "trace_id": f"t{n}", "host": host, "pid": 100 + i, "job": f"{host}-j{i}",
                              "t": 60.0 * i + h + dtt, "kernel": "5.15.0-119-generic"})
                n += 1
    learner = FleetExpectedLearner().fit(_events(specs))
    pin = _candidate(learner, "reg_mr", "pin_user_pages_fast", "EFAULT")
    assert pin["failing"] == 0 and pin["censored"] == 8 and pin["expected"], pin
    peer = _candidate(learner, "reg_mr", "ib_peer_umem_get", "EFAULT")
    assert peer["failing"] == 8 and not peer["expected"], peer

"""The audit scored on tests/fleetgen65, a sixty-fifth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md, bpf/calltree.c's
emit rule, tests/fleet_harness.py, tests/fleetgen62 as the brief's model and the other generators'
docstrings; without reading the simulator or the audit).

What it is for: A JOB'S WHOLE RDMA INIT SEQUENCE UNDER VERY UNEVEN GOOD-TRACE SAMPLING
(tests/fleetgen65/__init__.py has the fleet and the truth's decisions): capture windows that never
meet a job's start-up leave reg_mr thousands of good traces, each start-up operation and dealloc_pd
a handful (mlx5 only), query_gid none; faults on (a) query_gid (no good trace), (b) INIT->RTR deep
in its chain (a handful), (c) the frequent reg_mr, (d) bnxt_re's create_qp (no bnxt_re good trace,
mlx5 has some); a routine absorbed ENOMEM on every bnxt_re RESET->INIT; and a model learned on an
earlier day that has every start-up operation's good traces.

What the docs promise (README.md, docs/architecture.md), written before running the audit:
  * "the origin is the deepest frame of the failing chain ...; the bifurcation is the first frame
    before it on an edge no good trace of the operation has (vendor namespaces masked), else the
    origin": (b) has ten good INIT->RTR traces holding every edge above
    rdma_addr_find_l2_eth_by_grh, (c) thousands of reg_mr: the origin for both; (d): "vendor
    namespaces masked" and "vendors still share shapes" (docs/benchmarks.md): the mlx5 create_qp
    good traces hold every edge above bnxt_re_create_qp, namespaces masked: the origin;
  * (a) "a chain seen only on kernel releases with no good trace of its operation has its origin as
    bifurcation (another release's symbols are no shape to diverge from)": query_gid has no good
    trace on any release of the window: the origin, rdma_get_gid_attr ENODATA;
  * findings are every failure record's, whatever the sampling of good traces; a learned family is
    "set aside when processes go on after it ... or its operation absorbed it, the root succeeding":
    the bnxt_re counter bind's ENOMEM set aside; the four causes, whose ranks die, open; clusters by
    kernel-side signature: one per cause, over its hosts;
  * `baseline audit --model M`: "A model given or saved is extended with DATASET's own good traces
    (not changed on disk); when some of them took success paths the model never saw (an update
    since it was learned), the summary's "model drift" lines name the operations (--json:
    model_drift)" and "(uses the saved model, says so)": the earlier day ran the default counter
    mode (RESET->INIT: rdma_counter_bind_qp_auto returns 0), the audited day AUTO (alloc_and_bind
    and the mlx5 counter calls below it): model drift names modify_qp -- and dealloc_pd, which the
    earlier day never sampled (its windows open at job starts; the model has no chain of it: my
    first expectation forgot this, corrected after the first run) -- and no other operation; the
    model file is unchanged; the bifurcations stay the origins (the model's good query_gid traces
    hold every edge above rdma_get_gid_attr).
  * host alerts: a persistent bad state is "a run of 4 or more 15-minute buckets ... in which a probe
    failed on most of its calls ... 3 times a bucket or more" on hosts unlike the fleet (3 hosts or
    fewer, not every host of a platform): (a), (b), (d)'s hosts alerted from their cause's start;
    no alert on the other hosts, none naming the routine counter bind.
Two variants of the same day: ALIASED (modify_qp sampled 1 in 3, in step with the three transitions:
no good INIT->RTR, ten RESET->INIT) -- (b)'s bifurcation should stay the origin, as for an operation
without good traces, and does with the earlier day's model; SCARCE (one backfill job: ONE good
INIT->RTR, two good create_qp) -- one good trace holds every edge: every bifurcation the origin.
What the audit gets wrong is a strict xfail naming what it wrote (KNOWN_MISSES).
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from fleet_harness import (
    assert_counters_agree_with_the_records,
    assert_every_cause_found,
    assert_files_valid_and_truth_one_row_per_record,
    assert_generator_is_blind,
    assert_trees_from_the_reference,
    audited_fleet,
    dataset_truth,
    findings_with_truth,
    roots_with_truth,
    strict_xfails,
)
from fleetgen65 import (
    BACKFILL,
    BNX,
    CAUSE_HOSTS,
    CAUSE_OPERATION,
    CAUSE_SINCE,
    FAMILIES,
    HOSTS,
    LAYER,
    MLX,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
    in_window,
)

from tracer.schema import read

CAUSES = tuple(ROOT_CAUSES)
BIND = "counter_bind_unsupported"
FAULTY = {h for hosts in CAUSE_HOSTS.values() for h in hosts}
QUIET = [h for h in HOSTS if h not in FAULTY]
BASELINE = Path(sys.executable).with_name("baseline")
START_UP = [("alloc_pd", None), ("create_cq", None), ("create_qp", "RC"), ("modify_qp", "RESET->INIT"),
            ("modify_qp", "INIT->RTR"), ("modify_qp", "RTR->RTS"), ("dealloc_pd", None)]

# 24 hosts x 6 h, ~3,800 records (the good ones sampled as the tracer samples them)
fleet65 = audited_fleet("fleet65", generate, package="fleetgen65", seed=65)

# the ALIASED variant: modify_qp sampled 1 in 3, in step with the transitions: no good INIT->RTR
fleet65_aliased = audited_fleet("fleet65_aliased", generate, package="fleetgen65", seed=65, modify_sample_every=3)

# the SCARCE variant: one backfill job; one good trace of each modify_qp transition, two of the rest
fleet65_scarce = audited_fleet("fleet65_scarce", generate, package="fleetgen65", seed=65, backfill_jobs=1,
                               modify_sample_every=2)

# What the audit gets wrong, as strict xfails: test name (or name[param]) -> what it wrote.
# Found by this set and fixed in round forty-eight: test_persistent_bad_state_from_the_cause_start[gid_entry_missing]
# (mlx-14..16's run began at 03:00, not 02:00) and [arp_timeout] (mlx-09 had no persistent_bad_state, mlx-10/11 one
# since 05:30): the platform rule took a bucket whose only callers of a start-up probe were the failing hosts for a
# platform-wide failure, though the platform's other hosts called it without the errno every half hour. A peer of
# the platform calling the probe without that errno within two buckets now says the failure is not the platform's
# (baseline/fleet/audit.py _platform_peers_ok).
KNOWN_MISSES: dict[str, str] = {
    "test_persistent_bad_state_from_the_cause_start[qp_limit_exceeded]": (
        "bnx-03: persistent_bad_state create_qp EINVAL since 02:30 ('14 consecutive 15m intervals'), bnx-04 "
        "since 02:30 ('12 consecutive'), not since 01:30: bnxt_re_create_qp and create_qp fail on half the "
        "calls (each rank's second QP), 4 a bucket, in every bucket from 01:30; the 01:30-02:15 buckets are "
        "left out (only 2 bnxt_re hosts call the probe there: fewer than the platform rule's 3; mechanism not "
        "identified). rising_errno_rate is there since 01:30."),
    "test_aliased_bifurcation_is_the_origin[arp_timeout]": (
        "with ib_uverbs_modify_qp sampled 1 in 3 in step with the transitions, the window's good modify_qp "
        "traces are RESET->INIT only (10) and INIT->RTR has none; every one of the 204 ARP-timeout findings "
        "(ETIMEDOUT at rdma_addr_find_l2_eth_by_grh, depth 6) names bifurcation rdma_fill_sgid_attr with "
        "errno null -- a frame that succeeded and that every INIT->RTR calls (reference rc_transitions "
        "INIT_to_RTR core_branches), merely absent from another transition's chain -- and the cluster's "
        "signature reads 'modify_qp: rdma_fill_sgid_attr (path) | ... | diverges at rdma_fill_sgid_attr', "
        "naming neither the ETIMEDOUT nor its probe. With ten good INIT->RTR (the main fleet) it names the "
        "origin. The docs' own rule for an operation without good traces (origin as bifurcation: 'another "
        "release's symbols are no shape to diverge from') should hold for a transition (an operation is "
        "'root probe and argument'); the answer should be rdma_addr_find_l2_eth_by_grh ETIMEDOUT."),
}

known, _params = strict_xfails(KNOWN_MISSES)


def _audit(root, table: str, out: str = "audit") -> pl.DataFrame:
    return read(Path(root) / out / f"{table}.parquet", table)


@functools.cache
def _roots(root) -> pl.DataFrame:
    return roots_with_truth(root)


def _cause_findings(root, cause: str, out: str = "audit") -> pl.DataFrame:
    if out == "audit":
        return findings_with_truth(root).filter(pl.col("root_cause") == cause)
    findings = _audit(root, "findings", out)
    truth = dataset_truth(root).select("host", "trace_id", "root_cause")
    return findings.join(truth, on=["host", "trace_id"], how="left").filter(pl.col("root_cause") == cause)


# ------------------------------------------------------------------------------------------------
# the generator
# ------------------------------------------------------------------------------------------------
def test_generator_is_blind():
    assert_generator_is_blind("fleetgen65", tracer_modules={"tracer.schema"})


def test_trees_from_the_reference():
    """Every function in the reference; every family's errno one the reference gives at its origin
    (rdma_counter_bind_qp_auto -ENOMEM, rdma_get_gid_attr -ENODATA, rdma_addr_find_l2_eth_by_grh
    -ETIMEDOUT, mlx5r_umr_update_mr_pas -EFAULT, bnxt_re_create_qp -EINVAL); the faults' origins the
    deepest failing frames; the counter bind's tree a success at the root."""
    assert_trees_from_the_reference(TREES, FAMILIES, LAYER, TREE_FAMILY)
    for tree, family in TREE_FAMILY.items():
        frames = TREES[tree][2]
        probe, errno, _ = FAMILIES[family]
        failing = [(d, fn) for d, fn, e in frames if e]
        deepest = max(d for d, _ in failing)
        assert [fn for d, fn in failing if d == deepest] == [probe], tree
        if family in ROUTINE:
            assert frames[0][2] is None, tree
        else:
            assert frames[0][2] == errno, tree
    assert [fn for d, fn, e in TREES["init_rtr_arp@mlx5"][2] if e][-1] == "rdma_addr_find_l2_eth_by_grh"
    assert max(d for d, _, e in TREES["init_rtr_arp@mlx5"][2] if e) == 6


def test_files_valid_and_truth_one_row_per_record(fleet65):
    root, summary, _, _ = fleet65
    assert_files_valid_and_truth_one_row_per_record(root)
    truth = dataset_truth(root)
    assert set(truth["root_cause"].drop_nulls()) == set(FAMILIES)
    assert sorted(truth["host"].unique()) == sorted(HOSTS) == sorted(summary["hosts"])
    assert truth.height == summary["records"]
    for family in FAMILIES:
        own = truth.filter(pl.col("root_cause") == family)
        assert own.height and (own["expected_error"] == (family in ROUTINE)).all(), family


def test_counters_agree_with_the_records(fleet65):
    """Every failure is recorded (the tracer sends every failing tree): per (probe, errno) the
    counters' failures equal the records' failing frames; the counters count every call, the records
    hold only the sampled good ones."""
    root, _, _, _ = fleet65
    assert_counters_agree_with_the_records(root, FAMILIES)


def test_the_theme_in_the_data(fleet65):
    """The sampling is as the brief asks: reg_mr thousands of good traces on both vendors; each
    start-up operation and dealloc_pd a handful (1-12), all on mlx5 hosts, all from the backfill's
    windows; query_gid none; bnxt_re no good trace but reg_mr; every good trace timed and in a capture
    window; every cause's records on its hosts only, from its start on."""
    root, _, _, _ = fleet65
    r = _roots(root)
    good = r.filter(pl.col("kind") == "good")
    assert good["latency_ns"].is_not_null().all()
    assert all(in_window(t) for t in good["start_time"].to_list())
    reg = good.filter(pl.col("command") == "reg_mr")
    assert reg.height > 2000 and reg.filter(pl.col("host").is_in(BNX)).height > 300
    for op, arg in START_UP:
        g = good.filter((pl.col("command") == op) & (pl.col("arg").eq_missing(pl.lit(arg, pl.String))))
        assert 1 <= g.height <= 12, (op, arg, g.height)
        assert set(g["host"]) <= {h for h, _ in BACKFILL}, (op, arg)
    assert good.filter(pl.col("command") == "query_gid").height == 0
    assert set(good.filter(pl.col("host").is_in(BNX))["command"]) == {"reg_mr"}
    for cause in CAUSES:
        own = r.filter(pl.col("root_cause") == cause)
        assert own.height >= 5 and set(own["host"]) == set(CAUSE_HOSTS[cause]), cause
        assert own["start_time"].min() >= CAUSE_SINCE[cause], cause
        assert set(own["command"]) == {CAUSE_OPERATION[cause]}, cause


# ------------------------------------------------------------------------------------------------
# the audit: scores, findings, clusters
# ------------------------------------------------------------------------------------------------
@known
def test_scores(fleet65):
    """Every ratio 1.0, no false finding, every trace of each cause detected."""
    _, _, _, scores = fleet65
    assert_every_cause_found(scores, CAUSES)


@known
@pytest.mark.parametrize("cause", _params("test_every_record_of_the_cause_open", list(CAUSES)))
def test_every_record_of_the_cause_open(fleet65, cause):
    """Every record of each cause is a finding, none set aside, its origin layer the truth's."""
    root, _, _, scores = fleet65
    e = scores["per_root_cause"][cause]
    truth = dataset_truth(root).filter(pl.col("root_cause") == cause)
    assert e["detected"] == e["traces"] == truth.height and e["set_aside_as_expected"] == 0, e
    findings = _cause_findings(root, cause)
    assert findings.height == truth.height and not findings["expected"].any()
    assert set(findings["origin_layer"]) == {FAMILIES[cause][2]}


@known
@pytest.mark.parametrize("cause", _params("test_bifurcation_is_the_origin", list(CAUSES)))
def test_bifurcation_is_the_origin(fleet65, cause):
    """(a) no good trace of query_gid: the origin; (b) the handful holds every edge above it; (c)
    thousands; (d) the other vendor's, namespaces masked: the origin, rdma_get_gid_attr ENODATA,
    rdma_addr_find_l2_eth_by_grh ETIMEDOUT, mlx5r_umr_update_mr_pas EFAULT, bnxt_re_create_qp EINVAL."""
    root, _, _, _ = fleet65
    probe, errno, _ = FAMILIES[cause]
    got = _cause_findings(root, cause).group_by("bifurcation_probe", "bifurcation_errno").len()
    assert got.rows() == [(probe, errno, got["len"].sum())], got


@known
def test_routine_set_aside(fleet65):
    """The bnxt_re counter bind's ENOMEM (absorbed: the root succeeded) set aside everywhere."""
    root, _, _, scores = fleet65
    e = scores["per_root_cause"][BIND]
    assert e["traces"] > 300 and e["set_aside_as_expected"] == e["traces"], e
    findings = _cause_findings(root, BIND)
    assert findings.height == e["traces"] and findings["expected"].all()


@known
def test_one_cluster_per_cause(fleet65):
    """Each cause's open findings in one cluster of their own, over the cause's hosts; no other
    cluster of open findings."""
    root, _, _, _ = fleet65
    findings = findings_with_truth(root).filter(~pl.col("expected"))
    ids = {}
    for cause in CAUSES:
        own = findings.filter(pl.col("root_cause") == cause)
        assert own["cluster_id"].n_unique() == 1, (cause, own.group_by("cluster_id", "signature").len())
        ids[cause] = own["cluster_id"][0]
    assert len(set(ids.values())) == len(CAUSES), ids
    assert set(findings["cluster_id"].unique()) == set(ids.values())
    clusters = _audit(root, "clusters")
    for cause, cid in ids.items():
        row = clusters.filter(pl.col("cluster_id") == cid)
        assert row.height == 1 and row["hosts"][0] == len(CAUSE_HOSTS[cause]), (cause, row)


@known
@pytest.mark.parametrize("host", _params("test_no_alert_on_quiet_hosts", QUIET))
def test_no_alert_on_quiet_hosts(fleet65, host):
    """No alert on a host without a root cause (bnxt_re's routine ENOMEM at its steady rate, the
    backfill's hosts)."""
    root, _, _, _ = fleet65
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == host)
    assert alerts.height == 0, alerts


@known
@pytest.mark.parametrize("cause", _params("test_crash_looping_hosts_alerted",
                                          ["gid_entry_missing", "arp_timeout", "qp_limit_exceeded"]))
def test_crash_looping_hosts_alerted(fleet65, cause):
    """(a), (b), (d) fail their probe on every host of the cause from its start on (query_gid every
    call; INIT->RTR's rdma_addr_find_l2_eth_by_grh every call, ib_uverbs_modify_qp half; bnxt_re's
    second create_qp of two), several times a bucket (a requeue every 10 minutes), for 2 h or more:
    "a persistent bad state needs a run of 4 or more 15-minute buckets ... a probe failed on most of
    its calls (half of them or more) ... 3 times a bucket or more", on at most 3 hosts (not "a cause
    more than 3 hosts fail alike"), not every host of the platform: each host of the cause has an
    alert naming the cause's errno, since the cause's start or later."""
    root, _, _, _ = fleet65
    alerts = _audit(root, "host_alerts")
    errno = FAMILIES[cause][1]
    for host in CAUSE_HOSTS[cause]:
        own = alerts.filter((pl.col("host") == host) & (pl.col("errno") == errno))
        assert own.height >= 1, (host, alerts.filter(pl.col("host") == host))
        assert (own["since"] >= CAUSE_SINCE[cause]).all(), (host, own)


@known
@pytest.mark.parametrize("cause", _params("test_persistent_bad_state_from_the_cause_start",
                                          ["gid_entry_missing", "arp_timeout", "qp_limit_exceeded"]))
def test_persistent_bad_state_from_the_cause_start(fleet65, cause):
    """Stricter: the counters show the cause's origin probe failing on every host of the cause in every
    15-minute bucket from the cause's start bucket to the window's end (rdma_get_gid_attr 100 % of the
    host's calls from 02:00, rdma_addr_find_l2_eth_by_grh 100 % from 03:00, bnxt_re_create_qp 50 %
    from 01:30; 4 to 8 failures a bucket: a requeue every 10 minutes): "a persistent bad state needs a
    run of 4 or more 15-minute buckets ... in which a probe failed on most of its calls (half of them
    or more) ... 3 times a bucket or more", "the alert names the host's longest run". Neither the
    more-than-3-hosts rule (3 hosts, 2) nor the platform rule ("a failure shared by every host of one
    platform"; "a rack's switch fails part of a platform and keeps its per-host alerts": 15 of the 18
    mlx5 hosts call the same probes successfully every half hour) takes the evidence away: each host
    has a persistent_bad_state naming the errno since the cause's start bucket."""
    root, _, _, _ = fleet65
    alerts = _audit(root, "host_alerts").filter(pl.col("alert") == "persistent_bad_state")
    errno = FAMILIES[cause][1]
    start = CAUSE_SINCE[cause]
    for host in CAUSE_HOSTS[cause]:
        own = alerts.filter((pl.col("host") == host) & (pl.col("errno") == errno))
        assert own.height == 1 and own["since"][0] == start, (host, _audit(root, "host_alerts")
                                                                .filter(pl.col("host") == host))


@known
def test_no_alert_names_the_routine(fleet65):
    """No alert anywhere names the counter bind (rdma_counter_bind_qp_auto ENOMEM)."""
    root, _, _, _ = fleet65
    alerts = _audit(root, "host_alerts")
    assert alerts.filter(pl.col("probe") == "rdma_counter_bind_qp_auto").height == 0, alerts


# ------------------------------------------------------------------------------------------------
# a model learned on an earlier day: `baseline learn` then `baseline audit --model`
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def with_model(fleet65, tmp_path_factory, generated_fleet):
    """The earlier day generated and learned (`baseline learn EARLIER -o model`), then the audited
    day audited with it (`baseline audit DAY --model model --allowlist empty --json -o OUT`)."""
    root, _, _, _ = fleet65
    work = tmp_path_factory.mktemp("fleet65-model")
    earlier = work / "earlier"
    generated_fleet("fleetgen65", generate, earlier, seed=65, day="earlier")
    model = work / "model.parquet"
    learn = subprocess.run([str(BASELINE), "learn", str(earlier), "-o", str(model)], capture_output=True, text=True,
                           timeout=300)
    assert learn.returncode == 0, learn.stderr
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    empty = work / "empty.yaml"
    empty.write_text("version: 1\nentries: []\n")
    out = root / "audit-model"
    res = subprocess.run([str(BASELINE), "audit", str(root), "--model", str(model), "--allowlist", str(empty),
                          "-o", str(out), "--json"], capture_output=True, text=True, timeout=300)
    return root, model, digest, res


def _drift(doc) -> dict[str, dict]:
    """The audit's --json model_drift per operation: a list of {operation, good_traces,
    unseen_path_traces} (or a mapping operation -> counts)."""
    drift = doc.get("model_drift")
    if isinstance(drift, dict):
        return {op: dict(v) for op, v in drift.items()}
    return {row["operation"]: row for row in drift or []}


@known
def test_model_audit_runs_and_keeps_the_model(with_model):
    """`baseline audit --model` exits 0 with one JSON document, no traceback; the model file is not
    changed on disk."""
    _, model, digest, res = with_model
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr
    json.loads(res.stdout)
    assert hashlib.sha256(model.read_bytes()).hexdigest() == digest


@known
def test_model_drift_names_modify_qp_and_dealloc_pd(with_model):
    """The audited day's RESET->INIT runs the AUTO counter mode's chain (alloc_and_bind, the mlx5
    counter calls) that the earlier day's model never saw: per operation (docs: "the window's good
    traces and those on call chains the model never saw"), modify_qp has its 30 good traces, the 10
    RESET->INIT on unseen chains; dealloc_pd, which the earlier day never sampled (no window at a
    teardown), all 10 of its good traces unseen; every other operation's good traces took chains the
    model has (reg_mr's thousands, the handful's): none unseen; query_gid has no good trace in the
    window."""
    root, _, _, res = with_model
    doc = json.loads(res.stdout)
    drift = _drift(doc)
    good = _roots(root).filter(pl.col("kind") == "good")
    for op, n in good.group_by("command").len().iter_rows():
        assert drift[op]["good_traces"] == n, (op, drift.get(op))
        assert drift[op]["unseen_path_traces"] == (10 if op in ("modify_qp", "dealloc_pd") else 0), (op, drift[op])
    assert drift.get("query_gid", {}).get("good_traces", 0) == 0, drift


@known
def test_model_drift_lines_in_the_report(with_model):
    """The text report (no --json) says which model it used and has "model drift" lines naming
    modify_qp and dealloc_pd, none naming another operation."""
    root, model, _, _ = with_model
    res = subprocess.run([str(BASELINE), "audit", str(root), "--model", str(model), "--allowlist",
                          str(model.with_name("empty.yaml")), "-o", str(root / "audit-model-text")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    text = res.stdout + res.stderr
    assert model.name in text, text[:3000]
    lines = [ln for ln in text.splitlines() if "drift" in ln.lower() or "modify_qp" in ln or "unseen" in ln.lower()]
    drift_at = [i for i, ln in enumerate(text.splitlines()) if "model drift" in ln.lower()]
    assert drift_at, text[:3000]
    block = "\n".join(text.splitlines()[drift_at[0]:drift_at[0] + 4])
    named = {w.rstrip(":") for ln in block.splitlines() for w in ln.split() if w.endswith(":")}
    assert {"modify_qp:", "dealloc_pd:"} <= {w + ":" for w in named}, (block, lines)
    for op in ("query_gid", "alloc_pd", "create_cq", "create_qp", "reg_mr"):
        assert op not in named, (op, block)


@known
def test_saved_model_used_and_said_refit_not(with_model, tmp_path, generated_fleet):
    """The earlier day's model saved as DATASET/baseline-model.parquet: `baseline audit DATASET` "uses
    the saved model, says so" (its file named) and has the model drift lines (modify_qp, dealloc_pd);
    `--refit` learns from DATASET alone: no model drift line."""
    _, model, _, _ = with_model
    root = tmp_path / "fleet"
    generated_fleet("fleetgen65", generate, root, seed=65)
    (root / "baseline-model.parquet").write_bytes(model.read_bytes())
    empty = model.with_name("empty.yaml")
    saved = subprocess.run([str(BASELINE), "audit", str(root), "--allowlist", str(empty)], capture_output=True,
                           text=True, timeout=300)
    assert saved.returncode == 0, saved.stderr
    text = saved.stdout + saved.stderr
    assert "baseline-model.parquet" in text, text[:3000]
    drift = [ln for ln in text.splitlines() if "model drift" in ln.lower()]
    assert drift and "modify_qp:" in text and "dealloc_pd:" in text, text[:3000]
    refit = subprocess.run([str(BASELINE), "audit", str(root), "--refit", "--allowlist", str(empty), "-o",
                            str(tmp_path / "refit")], capture_output=True, text=True, timeout=300)
    assert refit.returncode == 0, refit.stderr
    assert "model drift" not in (refit.stdout + refit.stderr).lower(), refit.stdout[:3000]


@known
@pytest.mark.parametrize("cause", _params("test_model_bifurcation_is_the_origin", list(CAUSES)))
def test_model_bifurcation_is_the_origin(with_model, cause):
    """With the earlier day's model (query_gid's and bnxt_re's good traces there, extended with the
    day's own): every record of the cause open, bifurcation and origin layer the origin's."""
    root, _, _, res = with_model
    assert res.returncode == 0, res.stderr
    truth = dataset_truth(root).filter(pl.col("root_cause") == cause)
    findings = _cause_findings(root, cause, "audit-model")
    probe, errno, layer = FAMILIES[cause]
    assert findings.height == truth.height and not findings["expected"].any()
    got = findings.group_by("bifurcation_probe", "bifurcation_errno").len()
    assert got.rows() == [(probe, errno, truth.height)], got
    assert set(findings["origin_layer"]) == {layer}


@known
def test_model_audit_scores(with_model):
    """`baseline evaluate` of the --model audit: every ratio 1.0, no false finding."""
    root, _, _, res = with_model
    assert res.returncode == 0, res.stderr
    from baseline.fleet.evaluate import evaluate

    assert_every_cause_found(evaluate(root, root / "audit-model"), CAUSES)


# ------------------------------------------------------------------------------------------------
# the aliased variant: INIT->RTR has no good trace, RESET->INIT ten
# ------------------------------------------------------------------------------------------------
def test_aliased_theme_in_the_data(fleet65_aliased):
    """The per-probe sampling in step with the transitions: RESET->INIT's ten good traces only, no
    INIT->RTR or RTR->RTS; the other operations as in the main fleet; the faults' records the same."""
    root, _, _, _ = fleet65_aliased
    r = roots_with_truth(root)
    good = r.filter((pl.col("kind") == "good") & (pl.col("command") == "modify_qp"))
    assert dict(good.group_by("arg").len().iter_rows()) == {"RESET->INIT": 10}
    for cause in CAUSES:
        assert r.filter(pl.col("root_cause") == cause).height >= 5, cause


@known
@pytest.mark.parametrize("cause", _params("test_aliased_bifurcation_is_the_origin", list(CAUSES)))
def test_aliased_bifurcation_is_the_origin(fleet65_aliased, cause):
    """INIT->RTR has no good trace in the window (an operation is "root probe and argument", docs'
    rising_latency; "a chain seen only on kernel releases with no good trace of its operation has its
    origin as bifurcation (another release's symbols are no shape to diverge from)"): the ARP
    timeout's bifurcation stays its origin, rdma_addr_find_l2_eth_by_grh ETIMEDOUT -- not
    ib_resolve_eth_dmac, the first frame RESET->INIT's chain (another transition's shape, which
    never resolves a neighbour) lacks. The other causes as in the main fleet."""
    root, _, _, _ = fleet65_aliased
    probe, errno, _ = FAMILIES[cause]
    got = findings_with_truth(root).filter(pl.col("root_cause") == cause)
    assert not got["expected"].any()
    got = got.group_by("bifurcation_probe", "bifurcation_errno").len()
    assert got.rows() == [(probe, errno, got["len"].sum())], got


@known
def test_aliased_one_cluster_for_the_rack(fleet65_aliased):
    """Whatever the sampling, the rack's ARP timeouts are one cluster over its three hosts, apart
    from the other causes."""
    root, _, _, _ = fleet65_aliased
    findings = findings_with_truth(root).filter(~pl.col("expected"))
    arp = findings.filter(pl.col("root_cause") == "arp_timeout")
    assert arp["cluster_id"].n_unique() == 1 and set(arp["host"]) == set(CAUSE_HOSTS["arp_timeout"])
    others = findings.filter(pl.col("root_cause") != "arp_timeout")
    assert arp["cluster_id"][0] not in set(others["cluster_id"])


@known
def test_aliased_with_the_model_bifurcation_is_the_origin(fleet65_aliased, with_model):
    """The remedy the docs give for a stale or thin window: the earlier day's model (its INIT->RTR
    good traces, the same chain) extended with the aliased day's own: the ARP timeouts' bifurcation is
    their origin, rdma_addr_find_l2_eth_by_grh ETIMEDOUT; every cause's as in the main fleet."""
    root, _, _, _ = fleet65_aliased
    _, model, _, _ = with_model
    out = root / "audit-model"
    res = subprocess.run([str(BASELINE), "audit", str(root), "--model", str(model), "--allowlist",
                          str(model.with_name("empty.yaml")), "-o", str(out), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for cause in CAUSES:
        probe, errno, _ = FAMILIES[cause]
        got = _cause_findings(root, cause, "audit-model")
        assert got.height and not got["expected"].any(), cause
        assert got.group_by("bifurcation_probe", "bifurcation_errno").len().rows() == [(probe, errno, got.height)], \
            (cause, got.group_by("bifurcation_probe", "bifurcation_errno").len())


# ------------------------------------------------------------------------------------------------
# the scarce variant: ONE good INIT->RTR in the window
# ------------------------------------------------------------------------------------------------
def test_scarce_theme_in_the_data(fleet65_scarce):
    """One good trace of each modify_qp transition, two of alloc_pd, create_cq, create_qp and
    dealloc_pd, all on mlx-01."""
    root, _, _, _ = fleet65_scarce
    good = roots_with_truth(root).filter(pl.col("kind") == "good")
    mq = good.filter(pl.col("command") == "modify_qp")
    assert dict(mq.group_by("arg").len().iter_rows()) == {"RESET->INIT": 1, "INIT->RTR": 1, "RTR->RTS": 1}
    for op in ("alloc_pd", "create_cq", "create_qp", "dealloc_pd"):
        assert good.filter(pl.col("command") == op).height == 2, op
    assert set(good.filter(pl.col("command") != "reg_mr")["host"]) == {BACKFILL[0][0]}


@known
def test_scarce_scores(fleet65_scarce):
    """One good trace holds every edge above the ARP timeout's origin, two the mlx5 create_qp's above
    bnxt_re's (namespaces masked): every ratio 1.0, every cause's record open at its origin."""
    _, _, _, scores = fleet65_scarce
    assert_every_cause_found(scores, CAUSES)


def test_mlx_and_bnx_hosts():
    """The fleet's two vendor groups as the docstring says (18 mlx5, 6 bnxt_re)."""
    assert len(MLX) == 18 and len(BNX) == 6 and set(HOSTS) == set(MLX) | set(BNX)

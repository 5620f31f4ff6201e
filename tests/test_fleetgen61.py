"""The audit scored on tests/fleetgen61, a sixty-first fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py, tests/fleetgen60 as the brief's model and the other generators'
docstrings; without reading the simulator or the audit).

What it is for: ERRORS RETURNED TO THE CALLER BESIDE THE SAME ERRORS ABSORBED BY THE OPERATION
(tests/fleetgen61/__init__.py has the fleet and the truth's decisions). One (operation, origin
probe, errno) family absorbed on some calls (root succeeds) and returned on others (root fails):
(a) routine both ways -- empty GID slots (query_gid, ENODATA at rdma_get_gid_attr: skipped by the
    per-entry scan, absorbed by the table read) and the pods' rdma cgroup (create_qp, EAGAIN at
    ib_rdmacg_try_charge: absorbed by the re-charge, or returned and retried);
(b) a fault returned only -- create_cq's both charges refused on gpu-18, gpu-21, gpu-23, each rank
    meeting it dying -- beside the routine create_cq family of the same origin and errno absorbed
    on the cgroup hosts;
(c) returned and "fatal" only because the job was killed: preempted backfill jobs whose ranks 0, 1
    die in their create_qp back-off (last trace: the returned EAGAIN of (a)) while ranks 2, 3 die
    in reg_mr (EINTR at pin_user_pages_fast).

What the docs promise (README.md, docs/architecture.md), written before running the audit:
  * "an error is learned where it originates (operation, origin probe, errno) and set aside when
    processes go on after it ... (or its errno tells the caller what to do next: EAGAIN,
    ENOENT/ENODATA, EOPNOTSUPP; or its operation absorbed it, the root succeeding: no caller saw
    it ...)": (a)'s two families set aside on every host, both ways; no finding open, no alert,
    evaluate's false_findings_on_good == 0;
  * "Returned to the caller: where the family's operation absorbs it on some calls (the root
    succeeds) and returns it on others (the root fails), and the returned ones are significantly
    more fatal (Increase's lower bound, returned against absorbed, above max_increase), it is
    learned from the absorbed calls and marked stats.fatal_when_returned, and the audit keeps open
    every occurrence its operation returned": (b)'s every record open, its create_cq entry marked
    fatal_when_returned, the absorbed create_cq occurrences set aside;
  * "a process killed with its job: another rank of the same run, alive at its last trace, ended
    later with a failure of another chain" is right-censored, "neither dead nor alive": (c)'s
    preempted EAGAINs are no deaths of the create_qp family, which stays routine (not marked
    fatal_when_returned, every occurrence set aside, the preempted ones included); the reg_mr
    EINTR every preempted rank 2, 3 died of is an open finding (no process goes on after it; not
    a signal errno; not absorbed);
  * clusters "by kernel-side signature": one cluster per root cause; evaluate: every ratio 1.0;
  * host alerts: none on the hosts without a root cause (the routine families are in their band,
    no probe fails most of its calls anywhere).
What the audit gets wrong is a strict xfail naming what it wrote (KNOWN_MISSES).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from fleet_harness import (
    assert_counters_agree_with_the_records,
    assert_errno_from_reference,
    assert_every_cause_found,
    assert_files_valid_and_truth_one_row_per_record,
    assert_generator_is_blind,
    assert_trees_from_the_reference,
    audited_fleet,
    dataset_counters,
    dataset_events,
    dataset_truth,
    findings_with_truth,
    roots_with_truth,
    strict_xfails,
)
from fleetgen61 import (
    ABSORBED_TREES,
    CGROUP_HOSTS,
    FAMILIES,
    FAULT_HOSTS,
    FAULT_WINDOW,
    HOSTS,
    LAYER,
    PREEMPT_HOSTS,
    PREEMPT_NAME,
    RETURNED_TREES,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
)

from tracer.schema import read, snapshot_bucket

CAUSES = tuple(ROOT_CAUSES)
GID, QP, CQ_OK, CQ_FAULT, PREEMPT = ("gid_slot_empty", "qp_charge_retried", "cq_charge_absorbed",
                                     "cq_charge_refused", "job_preempted")
QUIET = [h for h in HOSTS if h not in FAULT_HOSTS and h not in PREEMPT_HOSTS]
BASELINE = Path(sys.executable).with_name("baseline")

# 24 hosts x 6 h, ~16,400 records
fleet61 = audited_fleet("fleet61", generate, package="fleetgen61", seed=61)
# the same fleet, draw for draw, whose backfill jobs are not preempted
fleet61_control = audited_fleet("fleet61_control", generate, package="fleetgen61", seed=61, preempt=False)

# What the audit gets wrong, as strict xfails: test name (or name[param]) -> what it wrote.
# Found by this set and fixed in round forty-seven: the learner's candidate (create_qp,
# ib_rdmacg_try_charge, EAGAIN) counted the 32 preempted ranks as censored in its untimed outcome
# but as deaths in its timed one (timed_failing=32 of 224: increase_lower 0.085 > max_increase), and
# every trace here is timed, so the family was not learned and all 224 occurrences stayed open in
# two extra clusters. "A process killed with its job" is now censored on the timed side too.
KNOWN_MISSES: dict[str, str] = {}

known, _params = strict_xfails(KNOWN_MISSES)


def _audit(root, table: str) -> pl.DataFrame:
    return read(root / "audit" / f"{table}.parquet", table)


@functools.cache
def _roots(root) -> pl.DataFrame:
    """Every record's root frame with its truth, and the tree's family, its job's name."""
    return roots_with_truth(root).with_columns(
        pl.col("metadata").list.eval(pl.element().filter(pl.element().struct.field("key") == "job_name")
                                     .struct.field("value")).list.first().alias("job_name"))


def _returned() -> pl.Expr:
    return pl.col("errno").is_not_null()


def _last_per_process(roots: pl.DataFrame) -> pl.DataFrame:
    return roots.group_by("host", "pid").agg(pl.col("start_time").max().alias("last"))


def _family_findings(root, family: str) -> pl.DataFrame:
    return findings_with_truth(root).filter(pl.col("root_cause") == family)


# ------------------------------------------------------------------------------------------------
# the generator
# ------------------------------------------------------------------------------------------------
def test_generator_is_blind():
    assert_generator_is_blind("fleetgen61", tracer_modules={"tracer.schema"})


def test_trees_from_the_reference():
    """Every function in the reference; every family's errno one the reference gives at its origin
    (ib_rdmacg_try_charge -EAGAIN, rdma_get_gid_attr -ENODATA "empty GID slot", pin_user_pages_fast
    -EINTR "on fatal signal"); the origin each failing tree's deepest failing frame. Absorbed trees
    succeed at the root, returned ones fail there with the family's errno; each theme family's
    absorbed and returned trees share operation and argument."""
    assert_trees_from_the_reference(TREES, FAMILIES, LAYER, TREE_FAMILY)
    assert_errno_from_reference("preempted", "pin_user_pages_fast", "EINTR")
    for name, family in TREE_FAMILY.items():
        frames = TREES[name][2]
        probe, errno, _ = FAMILIES[family]
        failing = [(d, fn) for d, fn, e in frames if e]
        deepest = max(d for d, _ in failing)
        assert {fn for d, fn in failing if d == deepest} == {probe}, name
        assert frames[0][2] == (errno if name in RETURNED_TREES else None), name
        assert name in ABSORBED_TREES or name in RETURNED_TREES, name
    pairs = {GID: ("gid_table", "gid_entry_empty"), QP: ("create_qp_recharged", "create_qp_refused"),
             CQ_OK: ("create_cq_recharged", "create_cq_refused")}
    for family, (absorbed, returned) in pairs.items():
        assert TREES[absorbed][:2] == TREES[returned][:2], family
        assert FAMILIES[TREE_FAMILY[absorbed]] == FAMILIES[TREE_FAMILY[returned]], family
    assert FAMILIES[CQ_OK] == FAMILIES[CQ_FAULT] == FAMILIES[QP]


def test_files_valid_and_truth_one_row_per_record(fleet61):
    root, summary, _, _ = fleet61
    assert_files_valid_and_truth_one_row_per_record(root)
    truth = dataset_truth(root)
    assert set(truth["root_cause"].drop_nulls()) == set(FAMILIES)
    assert sorted(truth["host"].unique()) == sorted(HOSTS) == sorted(summary["hosts"])
    assert truth.height == summary["records"]
    assert truth.filter(pl.col("held_out")).height > 100
    for family in FAMILIES:
        own = truth.filter(pl.col("root_cause") == family)
        assert own.height and (own["expected_error"] == (family in ROUTINE)).all(), family


def test_counters_agree_with_the_records(fleet61):
    root, _, _, _ = fleet61
    assert_counters_agree_with_the_records(root, FAMILIES)


def test_the_theme_in_the_data(fleet61):
    """The theme as the data holds it (independently of the generator's labels where it can)."""
    root, summary, _, _ = fleet61
    roots = _roots(root)
    last = _last_per_process(roots)
    roots = roots.join(last, on=["host", "pid"])
    fam = roots.filter(pl.col("root_cause").is_not_null())
    # (a) GID: both ways on every host; every returned one followed by a later call of its process
    gid = fam.filter(pl.col("root_cause") == GID)
    assert set(gid["command"]) == {"query_gid"} and set(gid.filter(_returned())["errno"]) == {"ENODATA"}
    for part in (gid.filter(_returned()), gid.filter(~_returned())):
        assert set(part["host"]) == set(HOSTS)
    assert (gid["start_time"] < gid["last"]).all()
    # (a) create_qp charge: both ways, on the cgroup hosts only; returned ones outside preempted jobs
    # are retried: a later successful create_qp of the same process
    qp = fam.filter(pl.col("root_cause") == QP)
    assert set(qp["command"]) == {"create_qp"} and set(qp["host"]) == set(CGROUP_HOSTS)
    absorbed, returned = qp.filter(~_returned()), qp.filter(_returned())
    assert absorbed.height > 50 and returned.height > 50
    kept = returned.filter(pl.col("job_name") != PREEMPT_NAME)
    ok_qp = roots.filter((pl.col("command") == "create_qp") & pl.col("errno").is_null()) \
        .select("host", "pid", pl.col("start_time").alias("t_ok"))
    retried = kept.join(ok_qp, on=["host", "pid"]).filter(pl.col("t_ok") > pl.col("start_time"))
    assert retried.select("host", "trace_id").n_unique() == kept.height
    # (c) preempted: ranks 0, 1 die with the returned EAGAIN as their last trace, and another
    # rank of the job, alive then, ends later with reg_mr EINTR (another chain)
    pre = returned.filter(pl.col("job_name") == PREEMPT_NAME)
    assert pre.height == 2 * len(summary["preempted"]) == 32
    assert (pre["start_time"] == pre["last"]).all()
    eintr = fam.filter(pl.col("root_cause") == PREEMPT)
    assert (eintr["start_time"] == eintr["last"]).all() and set(eintr["errno"]) == {"EINTR"}
    assert set(eintr["command"]) == {"reg_mr"} and set(eintr["host"]) == set(PREEMPT_HOSTS)
    later = pre.join(eintr.select("host", "job_id", "pid", pl.col("start_time").alias("t_kill")),
                     on=["host", "job_id"]).filter(pl.col("t_kill") > pl.col("start_time"))
    assert later.select("host", "trace_id").n_unique() == pre.height
    alive = pre.join(roots.select("host", "job_id", pl.col("pid").alias("other"), pl.col("start_time").alias("t")),
                     on=["host", "job_id"]).filter((pl.col("other") != pl.col("pid")) & (pl.col("t") < pl.col("start_time")))
    assert alive.select("host", "trace_id").n_unique() == pre.height
    # without the censoring, a third of the family's returned occurrences would look fatal
    assert pre.height >= 0.25 * returned.height
    # (b) the fault: returned only, on the fault hosts only, inside the window, each its rank's last
    # trace; the absorbed create_cq family only on the cgroup hosts (disjoint)
    cq_fault = fam.filter(pl.col("root_cause") == CQ_FAULT)
    cq_ok = fam.filter(pl.col("root_cause") == CQ_OK)
    assert set(cq_fault["host"]) == set(FAULT_HOSTS) and not set(FAULT_HOSTS) & set(CGROUP_HOSTS)
    assert (cq_fault["errno"] == "EAGAIN").all() and (cq_fault["start_time"] == cq_fault["last"]).all()
    assert cq_fault["start_time"].min() >= FAULT_WINDOW[0] and cq_fault.height >= 15
    assert cq_ok["errno"].is_null().all() and set(cq_ok["host"]) == set(CGROUP_HOSTS)
    assert (cq_ok["start_time"] < cq_ok["last"]).all()
    # the operation keeps succeeding on the fault hosts during the window (never stopped)
    for host in FAULT_HOSTS:
        good = roots.filter((pl.col("host") == host) & (pl.col("command") == "create_cq") & pl.col("errno").is_null()
                            & pl.col("start_time").is_between(*FAULT_WINDOW))
        bad = cq_fault.filter(pl.col("host") == host)
        assert good.height > 2 * bad.height, host


def test_no_probe_fails_most_calls_for_long(fleet61):
    """The counters behind the host-alert expectations (the docs' bad bucket: a probe failing half
    of its calls or more). Outside the preemption hosts no bucket is bad anywhere (the GID scan
    fails 2 slots of 6, the cgroup charges a few calls in ten); on the preemption hosts only a
    preempted job's own bucket of reg_mr, alone, never two buckets in a row (a persistent bad state
    needs 4, or 2 reaching the host's last bucket)."""
    root, _, _, _ = fleet61
    cells = (dataset_counters(root).with_columns(snapshot_bucket())
             .group_by("host", "probe", "bucket").agg(pl.col("invocations").sum().alias("n"),
                                                      pl.col("failures").sum().alias("f")))
    bad = cells.filter((pl.col("f") >= 1) & (2 * pl.col("f") >= pl.col("n")))
    assert bad.filter(~pl.col("host").is_in(PREEMPT_HOSTS)).height == 0, bad
    reg_chain = {fn for _, fn, e in TREES["reg_mr_eintr"][2] if e}
    assert set(bad["probe"]) <= reg_chain, bad
    runs = bad.sort("bucket").group_by("host", "probe").agg(pl.col("bucket").diff().min().alias("gap"))
    assert (runs["gap"].is_null() | (runs["gap"] > dt.timedelta(minutes=15))).all(), runs


def test_evaluate_cli_agrees(fleet61):
    """`baseline evaluate DATASET --json` as a command gives the in-process scores (exit 0)."""
    root, _, _, scores = fleet61
    out = subprocess.run([str(BASELINE), "evaluate", str(root), "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    cli = json.loads(out.stdout)
    for key in ("false_findings", "false_findings_on_good", "held_out_good_traces", "routine_set_aside"):
        assert cli[key] == scores[key], key


# ------------------------------------------------------------------------------------------------
# the learned list (`baseline learn --expected-out`)
# ------------------------------------------------------------------------------------------------
@functools.cache
def _learned(root) -> list[dict]:
    out_dir = Path(str(root) + "-learn")
    out_dir.mkdir(exist_ok=True)
    res = subprocess.run([str(BASELINE), "learn", str(root), "-o", str(out_dir / "model.parquet"),
                          "--expected-out", str(out_dir / "expected.yaml")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    doc = yaml.safe_load((out_dir / "expected.yaml").read_text()) or {}
    entries = doc.get("expected", doc.get("entries", [])) if isinstance(doc, dict) else doc
    assert isinstance(entries, list), doc
    return entries


def _entries(root, operation: str, probe: str, errno: str) -> list[dict]:
    return [e for e in _learned(root) if (e.get("context"), e.get("probe"), e.get("errno")) == (operation, probe, errno)]


@known
def test_learned_create_cq_marked_fatal_when_returned(fleet61):
    """The create_cq charge family: learned (from its absorbed calls) and marked
    stats.fatal_when_returned: its returned occurrences all ended their ranks, the absorbed none."""
    root, _, _, _ = fleet61
    rows = _entries(root, "create_cq", "ib_rdmacg_try_charge", "EAGAIN")
    assert rows, [(e.get("context"), e.get("probe"), e.get("errno")) for e in _learned(root)]
    assert all((e.get("stats") or {}).get("fatal_when_returned") for e in rows), rows


@known
@pytest.mark.parametrize("family", _params("test_learned_routine_not_marked", [GID, QP]))
def test_learned_routine_not_marked(fleet61, family):
    """(a)'s families learned for every caller, not marked fatal_when_returned: the returned GID
    ENODATA are skipped, the returned create_qp EAGAIN retried -- the preempted ranks' (killed
    with their job) no deaths."""
    root, _, _, _ = fleet61
    operation = {GID: "query_gid", QP: "create_qp"}[family]
    probe, errno, _ = FAMILIES[family]
    rows = _entries(root, operation, probe, errno)
    assert rows, [(e.get("context"), e.get("probe"), e.get("errno")) for e in _learned(root)]
    for e in rows:
        st = e.get("stats") or {}
        assert not st.get("fatal_when_returned") and not st.get("fatal_hosts"), e
        assert e.get("comm") in (None, "python3"), e


@known
def test_preempted_eintr_not_learned(fleet61):
    """reg_mr's EINTR at pin_user_pages_fast: every occurrence its process's last trace (no
    later call, no caller going on, not a signal errno, never absorbed): not routine."""
    root, _, _, _ = fleet61
    assert not _entries(root, "reg_mr", "pin_user_pages_fast", "EINTR")


# ------------------------------------------------------------------------------------------------
# the audit: findings and clusters
# ------------------------------------------------------------------------------------------------
@known
@pytest.mark.parametrize("family", _params("test_routine_set_aside", [GID, QP, CQ_OK]))
def test_routine_set_aside(fleet61, family):
    """(a) and (b)'s routine: every occurrence set aside, absorbed and returned alike."""
    root, _, _, scores = fleet61
    e = scores["per_root_cause"][family]
    assert e["traces"] > 50 and e["set_aside_as_expected"] == e["traces"], e
    findings = _family_findings(root, family)
    assert findings.height == e["traces"] and findings["expected"].all(), findings.filter(~pl.col("expected"))


@known
def test_returned_routine_set_aside(fleet61):
    """Only the returned occurrences of (a)'s families (root failing ENODATA / EAGAIN): set aside
    -- the root failing is no reason to keep them open when the caller goes on."""
    root, _, _, _ = fleet61
    roots = _roots(root).filter(pl.col("root_cause").is_in([GID, QP]) & pl.col("errno").is_not_null())
    findings = findings_with_truth(root).join(roots.select("host", "trace_id"), on=["host", "trace_id"])
    assert findings.height == roots.height > 500
    assert findings["expected"].all(), findings.filter(~pl.col("expected")).group_by("root_cause", "host").len()


@known
def test_preempted_eagain_stays_routine(fleet61):
    """(c): the preempted ranks' returned create_qp EAGAIN (their last trace; killed with their
    job) set aside like the family's other occurrences."""
    root, _, _, _ = fleet61
    pre = _roots(root).filter((pl.col("root_cause") == QP) & (pl.col("job_name") == PREEMPT_NAME))
    findings = findings_with_truth(root).join(pre.select("host", "trace_id"), on=["host", "trace_id"])
    assert findings.height == pre.height == 32
    assert findings["expected"].all(), findings.filter(~pl.col("expected"))


@known
@pytest.mark.parametrize("cause", _params("test_every_record_of_the_cause_found", list(CAUSES)))
def test_every_record_of_the_cause_found(fleet61, cause):
    """Every record of each root cause open, its origin the bifurcation, its layer core."""
    root, _, _, scores = fleet61
    e = scores["per_root_cause"][cause]
    truth = dataset_truth(root).filter(pl.col("root_cause") == cause)
    assert e["detected"] == e["traces"] == truth.height and e["set_aside_as_expected"] == 0, e
    assert e["bifurcation_top1"] == 1.0 and e["origin_layer_top1"] == 1.0, e
    findings = _family_findings(root, cause)
    probe, errno, _ = FAMILIES[cause]
    assert findings.height == truth.height and not findings["expected"].any()
    assert set(findings["bifurcation_probe"]) == {probe} and set(findings["bifurcation_errno"]) == {errno}


@known
@pytest.mark.parametrize("host", _params("test_the_fault_open_on_each_host", FAULT_HOSTS))
def test_the_fault_open_on_each_host(fleet61, host):
    """Host by host: every returned create_cq EAGAIN there an open finding."""
    root, _, _, _ = fleet61
    truth = dataset_truth(root).filter((pl.col("root_cause") == CQ_FAULT) & (pl.col("host") == host))
    findings = _family_findings(root, CQ_FAULT).filter(pl.col("host") == host)
    assert truth.height and findings.height == truth.height, (truth.height, findings.height)
    assert not findings["expected"].any(), findings.filter(pl.col("expected"))


@known
@pytest.mark.parametrize("cause", _params("test_each_cause_one_cluster", list(CAUSES)))
def test_each_cause_one_cluster(fleet61, cause):
    """Each root cause one cluster of its own, over its hosts and failing jobs, its signature naming
    the origin probe and errno, origin layer core."""
    root, _, _, _ = fleet61
    findings = _family_findings(root, cause)
    ids = set(findings["cluster_id"])
    assert len(ids) == 1, ids
    row = _audit(root, "clusters").filter(pl.col("cluster_id") == ids.pop()).row(0, named=True)
    probe, errno, layer = FAMILIES[cause]
    assert row["hosts"] == findings["host"].n_unique() and row["failures"] == findings.height, row
    assert probe in row["signature"] and errno in row["signature"] and row["origin_layer"] == layer, row


@known
def test_two_clusters_only(fleet61):
    root, _, _, _ = fleet61
    assert _audit(root, "clusters").height == len(CAUSES)
    open_ = findings_with_truth(root).filter(~pl.col("expected"))
    assert set(open_["root_cause"].unique()) == set(CAUSES), open_.group_by("root_cause").len()


@known
def test_scores(fleet61):
    """evaluate: every ratio 1.0, no false finding (none on held-out good traces either)."""
    _, _, _, scores = fleet61
    assert scores["held_out_good_traces"] > 100
    assert scores["false_findings_on_good"] == 0
    assert_every_cause_found(scores, CAUSES)


# ------------------------------------------------------------------------------------------------
# the audit: host alerts
# ------------------------------------------------------------------------------------------------
@known
@pytest.mark.parametrize("host", _params("test_no_alert_on_quiet_hosts", QUIET))
def test_no_alert_on_quiet_hosts(fleet61, host):
    """No alert on a host without a root cause: the routine families' rates (both ways) are the
    fleet's band, no probe fails most of its calls."""
    root, _, _, _ = fleet61
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == host)
    assert alerts.height == 0, alerts


@known
def test_no_alert_names_the_routine_errnos_on_cause_hosts(fleet61):
    """On the fault and preemption hosts no persistent bad state (no probe fails most of its calls
    in any bucket: test_no_probe_fails_most_calls_in_any_bucket) and no alert naming ENODATA (the
    GID scan, routine there as everywhere)."""
    root, _, _, _ = fleet61
    alerts = _audit(root, "host_alerts").filter(pl.col("host").is_in(FAULT_HOSTS + PREEMPT_HOSTS))
    assert alerts.filter(pl.col("alert") == "persistent_bad_state").height == 0, alerts
    assert "ENODATA" not in set(alerts["errno"].drop_nulls()), alerts


def test_events_have_one_comm(fleet61):
    """Every process is python3 (the Caller rule has no second caller to split on)."""
    root, _, _, _ = fleet61
    assert set(dataset_events(root)["comm"].unique()) == {"python3"}


# ------------------------------------------------------------------------------------------------
# the control: the same fleet without the preemption
# ------------------------------------------------------------------------------------------------
def test_control_has_no_preemption(fleet61_control):
    root, summary, _, _ = fleet61_control
    truth = dataset_truth(root)
    assert summary["preempted"] == [] and truth.filter(pl.col("root_cause") == PREEMPT).height == 0
    assert truth.filter(pl.col("root_cause") == QP).height > 100


@known
def test_control_routine_set_aside_and_fault_found(fleet61_control):
    """Without the preemption: (a)'s and (b)'s routine set aside, the create_cq fault every record
    open, one cluster, every ratio 1.0."""
    root, _, _, scores = fleet61_control
    for family in (GID, QP, CQ_OK):
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 50, (family, e)
    assert_every_cause_found(scores, (CQ_FAULT,))
    assert scores["false_findings_on_good"] == 0
    assert _audit(root, "clusters").height == 1

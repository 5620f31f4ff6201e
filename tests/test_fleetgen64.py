"""The audit scored on tests/fleetgen64, a sixty-fourth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py, bpf/calltree.c for the records the fleet tracer emits, tests/fleetgen62 as
the brief's model and the other generators' docstrings; without reading the simulator or the audit).

What it is for: SUCCESSFUL CALLS THAT ABSORB AN ERROR FIRST, AS THE REAL TRACER RECORDS THEM
(tests/fleetgen64/__init__.py has the fleet and the truth's decisions). Four "rescued" success
shapes routine on every host -- a GPU reg_mr's pin EFAULT taken by the peer client (R1), the same
for a GPU-resident QP buffer under create_qp (R2), the Q-counter bind's NO_RES that RESET->INIT
ignores (R3), an IB-port GID's ENODEV that query_gid tolerates (R4) -- which the tracer sends only as
kind 'failure' records whose root succeeded (never as good traces: good traces are calls with no
failing frame, in capture windows). Then:
(a) faults inside two rescued shapes, the fallback itself failing: create_qp's peer client gone for
    queue buffers (ib_peer_umem_get EFAULT, 3 hosts) and reg_mr's peer get_pages ENOMEM (2 hosts);
    and, past a fallback that worked, reg_mr's CREATE_MKEY refused LIM_ERR (mlx5_cmd_exec ENOMEM under
    reg_create, 2 hosts), reached on edges only the rescued GPU registrations run;
(b) the RESET->INIT's own firmware command refused NO_RES (mlx5_cmd_exec EAGAIN, 2 hosts): the
    probe and errno R3 absorbs, returned;
(c) the control: the rescued shapes alone.

What the docs promise (README.md, docs/architecture.md), written before running the audit:
  * "an error is learned where it originates (operation, origin probe, errno) and set aside when
    ... its operation absorbed it, the root succeeding: no caller saw it": R1-R4 learned at their
    origins ("in a tree whose root succeeded, the first unexpected error frame none of whose callees
    failed": pin_user_pages_fast EFAULT under reg_mr and under create_qp, mlx5_cmd_exec EAGAIN under
    modify_qp, rdma_read_gid_attr_ndev_rcu ENODEV under query_gid) and every occurrence set aside, on
    every host;
  * "Where a failure left good behaviour: the origin is the deepest frame of the failing chain ...
    the bifurcation is the first frame before it on an edge no good trace of the operation has ...
    else the origin", and "The audited data's rescued traces add their call structure too ...
    failure records whose root succeeded, complete. ... a registration dying in that client had left
    known-good behaviour at the pin's cleanup, which every successful one runs too": every edge down
    to ib_peer_umem_get is one the rescued R1/R2 calls run, so (a)'s bifurcation is its origin:
    ib_peer_umem_get EFAULT (create_qp), ib_peer_umem_get ENOMEM (reg_mr), and past the fallback
    mlx5_cmd_exec ENOMEM (create_real_mr -> reg_create -> mlx5_ib_create_mkey -> mlx5_cmd_exec: "their
    edges", all of them, not only those above the absorbed error); "an origin the code went
    on from, superseded by a later origin of the same tree that reaches the root -- the death is that
    one's: a pin's EFAULT before a failing peer-memory fallback": the pin's EFAULT inside (a)'s trees
    is no finding of its own and R1/R2 stay routine;
  * "Returned to the caller: where the family's operation absorbs it on some calls (the root
    succeeds) and returns it on others (the root fails), and the returned ones are significantly
    more fatal ..., it is learned from the absorbed calls and marked stats.fatal_when_returned, and
    the audit keeps open every occurrence its operation returned -- a QP-counter bind's NO_RES that
    modify_qp ignores ..., beside the same NO_RES at the same function refusing the RST2INIT itself":
    (b) every record open, origin and bifurcation mlx5_cmd_exec EAGAIN (every edge above it is on
    RESET->INIT's good path), the learned R3 entry marked fatal_when_returned -- and not so in the
    control, where nothing returns it;
  * the rescued records' own findings (set aside) name their origin as the learner does: the pin's
    EFAULT (R1, R2), mlx5_cmd_exec EAGAIN in the driver (R3: the docs' own example of a frame turning
    a callee's error into another being that error's path), rdma_read_gid_attr_ndev_rcu ENODEV (R4);
  * a model given (`baseline learn` of the control, `audit --model`) "is extended with the dataset's
    good traces" and the rescued structure: the same bifurcations, no model drift; a learned list
    carried to another day (`--allowlist`, `--no-learn-expected`) keeps open the returned NO_RES
    there (fatal_when_returned), on hosts other than the day it was learned on;
  * clusters "by kernel-side signature": each fault one cluster over its own hosts;
  * host alerts: none on a host without a fault and none naming a rescued family's origin; on a
    fault's host only the fault's errno, from its start; (b)'s bad state "named by an unexpected
    error's probe first": the RST2INIT's path, not the ignored bind's;
  * the control: everything set aside, no cluster, no host alert, evaluate's false_findings and
    false_findings_on_good 0.
What the audit gets wrong is a strict xfail naming what it wrote (KNOWN_MISSES).
"""

from __future__ import annotations

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
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
    dataset_events,
    dataset_truth,
    findings_with_truth,
    roots_with_truth,
    strict_xfails,
)
from fleetgen64 import (
    FAMILIES,
    FAULT_HOSTS,
    HOSTS,
    LAYER,
    MOVED_B_HOSTS,
    RESCUED,
    ROOT_CAUSES,
    ROUTINE,
    SNAPSHOT_S,
    TREE_FAMILY,
    TREES,
    K,
    generate,
)

from tracer.schema import read

CAUSES = tuple(ROOT_CAUSES)
R1, R2, R3, R4 = ROUTINE
A1, A2, B, A3 = CAUSES
FAULTED = sorted({h for hosts in FAULT_HOSTS.values() for h in hosts})
QUIET = [h for h in HOSTS if h not in FAULTED]
BASELINE = Path(sys.executable).with_name("baseline")

# 24 hosts x 6 h, ~25,000 records
fleet64 = audited_fleet("fleet64", generate, package="fleetgen64", seed=64)
# the control: the same schedule, no fault
fleet64_control = audited_fleet("fleet64_control", generate, package="fleetgen64", seed=64, faults=False)
# another day: (b) alone on two other hosts, audited with fleet64's learned list (below)
fleet64_moved = audited_fleet("fleet64_moved", generate, package="fleetgen64", seed=64, moved_b=True)

# What the audit gets wrong, as strict xfails: test name (or name[param]) -> what it wrote.
KNOWN_MISSES: dict[str, str] = {
    # found by this set and fixed in round forty-eight: the learned modify_qp/mlx5_cmd_exec/EAGAIN entry had no
    # stats.fatal_when_returned (it named fatal_hosts [gpu-03, gpu-19] only), so fleet64's learned list carried to
    # another day set aside all 828 returned, rank-killing NO_RES records on gpu-07 and gpu-11: every returned
    # occurrence was on the two hosts where modify_qp stopped succeeding, which the learner set apart before it
    # compared returned with absorbed occurrences. It now compares them over all the family's occurrences
    # (test_learned_list_keeps_returned_no_res_open_on_other_hosts, test_routine_learned[counter_bind_ignored]).
    "test_routine_findings_name_their_origin[counter_bind_ignored]":
        "all 2,809 findings of the ignored Q-counter bind (set aside, rightly) name bifurcation "
        "rdma_counter_bind_qp_auto ENOMEM and origin_layer core: the frame that turned the firmware's NO_RES "
        "into ENOMEM, one whose callees failed. Docs: the origin of a tree whose root succeeded is the first "
        "error frame none of whose callees failed, a frame that passes the error on or turns it into another "
        "being its path -- this very chain is the docs' example -- so mlx5_cmd_exec EAGAIN, layer driver, "
        "where the learner puts the family too (its entry is modify_qp/mlx5_cmd_exec/EAGAIN); every edge of "
        "the tree is a rescued one, so the bifurcation is that origin.",
    **{f"test_no_res_host_alert_names_the_rst2init[{h}]":
       f"{h}'s persistent_bad_state (since 01:15, EAGAIN) names probe mlx5_ib_counter_bind_qp (gpu-03's detail: "
       "'... mlx5_ib_counter_bind_qp in 14 of them (176 failures)'): the Q-counter bind whose NO_RES _ib_modify_qp "
       "ignores, failing at the rate every host absorbs, while mlx5_core_qp_modify/mlx5_ib_modify_qp (the "
       "RST2INIT's returned NO_RES) fail every call in every bucket from 01:15. Docs: a bad state is named by "
       "an unexpected error's probe first; a learned family out of its band there is that error's symptom. "
       "Likely from the R3 entry's fatal_hosts [gpu-03, gpu-19], which makes the absorbed bind unexpected "
       "there (see test_routine_learned[counter_bind_ignored])."
       for h in ("gpu-03", "gpu-19")},
}

known, _params = strict_xfails(KNOWN_MISSES)


def _audit(root, table: str) -> pl.DataFrame:
    return read(root / "audit" / f"{table}.parquet", table)


def _family_findings(root, family: str) -> pl.DataFrame:
    return findings_with_truth(root).filter(pl.col("root_cause") == family)


# ------------------------------------------------------------------------------------------------
# the generator
# ------------------------------------------------------------------------------------------------
def test_generator_is_blind():
    assert_generator_is_blind("fleetgen64", tracer_modules={"tracer.schema"})


def _edges(frames) -> list[tuple]:
    """Each frame as (caller chain of functions, function, errno), in entry order."""
    out, stack = [], []
    for depth, fn, errno in frames:
        del stack[depth:]
        out.append((tuple(stack), fn, errno))
        stack.append(fn)
    return out


def test_trees_from_the_reference():
    """Every function in the reference, every family's errno one the reference gives near its
    origin (pin_user_pages_fast -EFAULT, mlx5_cmd_exec NO_RES -> -EAGAIN, rdma_read_gid_attr_ndev_rcu
    -ENODEV, ib_peer_umem_get "usually -EFAULT" / -ENOMEM), each origin's layer as LAYER gives it;
    every tree within the tracer's limits (16 frames, 8 nesting levels); a rescued tree's root
    succeeds with its family's origin among its failing frames; a fault's tree is its rescued
    twin's frames down to the origin, and the origin is the first frame (caller chain, function,
    errno) that no successful tree of its operation has (the truth's bifurcation)."""
    assert_functions_in_reference({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
    for key, (_, probe, errno, layer) in FAMILIES.items():
        assert_errno_from_reference(key, probe, errno)
        assert LAYER[probe] == layer, key
    for name, (op, _, frames) in TREES.items():
        assert len(frames) <= 16 and max(d for d, _, _ in frames) <= 7, name
        assert frames[0][0] == 0 and all(d >= 1 for d, _, _ in frames[1:]), name
        failing = [(fn, e) for _, fn, e in frames if e]
        if name in TREE_FAMILY:
            fop, probe, errno, _ = FAMILIES[TREE_FAMILY[name]]
            assert op == fop and (probe, errno) in failing, name
        else:
            assert not failing, name
    for name in RESCUED:
        assert TREES[name][2][0][2] is None and TREE_FAMILY[name] in ROUTINE, name
    twins = {"qp_gpu_noclient": "qp_gpu", "mr_gpu_enomem": "mr_gpu", "mr_gpu_mkey": "mr_gpu", "reset_init_no_res": "reset_init",
             "reset_init_unbound_no_res": "reset_init_unbound"}
    for bad, good in twins.items():
        op, probe, errno, _ = FAMILIES[TREE_FAMILY[bad]]
        assert TREES[bad][2][0][2] == errno, bad  # the root returns the fault's errno
        successful = {e for name, (o, _, frames) in TREES.items() if o == op and frames[0][2] is None
                      for e in _edges(frames)}
        frames = TREES[bad][2]
        edges = _edges(frames)

        def passes_on(i, frames=frames, errno=errno):
            """A caller whose subtree holds a later frame failing with the same errno."""
            for d, _, e in frames[i + 1:]:
                if d <= frames[i][0]:
                    return False
                if e == errno:
                    return True
            return False

        new = [i for i, e in enumerate(edges) if e not in successful]
        origin = [i for i in new if frames[i][2] == errno and not passes_on(i)]
        assert origin and frames[origin[0]][1:] == (probe, errno), (bad, [edges[i] for i in new])
        twin = TREES[good][2]
        cut = [fn for _, fn, _ in TREES[bad][2]].index(probe)
        assert [(d, fn) for d, fn, _ in TREES[bad][2][:cut + 1]] == [(d, fn) for d, fn, _ in twin[:cut + 1]], bad


def test_files_valid_and_truth_one_row_per_record(fleet64):
    root, summary, _, _ = fleet64
    assert_files_valid_and_truth_one_row_per_record(root)
    truth = dataset_truth(root)
    assert set(truth["root_cause"].drop_nulls()) == set(FAMILIES)
    assert sorted(truth["host"].unique()) == sorted(HOSTS) == sorted(summary["hosts"])
    assert truth.height == summary["records"]
    assert truth.filter(pl.col("held_out")).height > 100
    for family in FAMILIES:
        own = truth.filter(pl.col("root_cause") == family)
        assert own.height and (own["expected_error"] == (family in ROUTINE)).all(), family


def test_counters_agree_with_the_records(fleet64):
    """Per (probe, errno) the exact counters equal the records' failing frames weighted by
    repeat_count (the aggregated trees are counted, none lost)."""
    root, _, _, _ = fleet64
    assert_counters_agree_with_the_records(root, {k: v[1:3] + (None,) for k, v in FAMILIES.items()})


def test_the_tracer_model_in_the_data(fleet64):
    """As bpf/calltree.c emits them: a record is 'failure' exactly when a frame failed (rescued
    trees included: their root succeeded), a 'good' one has no failing frame, is timed (latency_ns)
    and carries no repeat count; untimed records carry the root's return tick (start = end, no
    latency); per host, 30 s interval and signature at most K records, repeat counts > 1 present;
    every rescued shape on every host."""
    root, _, _, _ = fleet64
    ev = dataset_events(root)
    per = ev.group_by("host", "trace_id").agg(
        pl.col("kind").first(), pl.col("errno").is_not_null().any().alias("failing"),
        pl.col("latency_ns").is_not_null().all().alias("timed"), pl.col("latency_ns").is_null().all().alias("untimed"),
        pl.col("repeat_count").first(), pl.col("start_time").first(), pl.col("end_time").first(),
        pl.col("exit_status").first(), pl.col("command").first(),
        pl.col("probe").str.join(",").alias("sig"))
    assert ((per["kind"] == "failure") == per["failing"]).all()
    good = per.filter(pl.col("kind") == "good")
    assert good.height > 1000 and good["timed"].all() and good["repeat_count"].is_null().all()
    fail = per.filter(pl.col("kind") == "failure")
    assert (fail["timed"] | fail["untimed"]).all() and fail["untimed"].sum() > fail.height // 2
    assert (fail.filter(pl.col("untimed"))["start_time"] == fail.filter(pl.col("untimed"))["end_time"]).all()
    assert (fail["repeat_count"] >= 1).all() and fail["repeat_count"].max() > 1
    rescued = fail.filter(pl.col("exit_status") == 0)
    assert set(rescued["command"]) == {FAMILIES[f][0] for f in ROUTINE}
    for command in set(rescued["command"]):
        assert rescued.filter(pl.col("command") == command)["host"].n_unique() == len(HOSTS), command
    # the interval a tree ended in; an untimed record's tick is up to 4 ms before its end: one whose
    # tick and tick + 4 ms fall in two intervals is left out
    width = SNAPSHOT_S * 10**9
    end = pl.col("end_time").dt.epoch("ns")
    snaps = fail.with_columns(((end - 1) // width).alias("iv"),
                              ((end + pl.when(pl.col("untimed")).then(4_000_000).otherwise(0) - 1) // width).alias("iv2"))
    snaps = snaps.filter(pl.col("iv") == pl.col("iv2"))
    assert snaps.group_by("host", "iv", "sig").len()["len"].max() <= K


def test_evaluate_cli_agrees(fleet64):
    """`baseline evaluate DATASET --json` as a command gives the in-process scores (exit 0)."""
    root, _, _, scores = fleet64
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


def _entries(root, family: str) -> list[dict]:
    operation, probe, errno, _ = FAMILIES[family]
    return [e for e in _learned(root) if (e.get("context"), e.get("probe"), e.get("errno")) == (operation, probe, errno)]


@known
@pytest.mark.parametrize("family", _params("test_routine_learned", list(ROUTINE)))
def test_routine_learned(fleet64, family):
    """Each rescued family learned at its origin for every caller, no absent hosts; R3 marked
    fatal_when_returned (the RST2INIT's returned NO_RES kills every rank it reaches), the others not.
    Fatal hosts: none, but R3 may name (b)'s hosts ("where its operation stopped succeeding ...
    every call failing with its errno for two 15-minute buckets or more": every modify_qp there
    fails EAGAIN from 01:15 on, the ranks dying at their first RESET->INIT)."""
    root, _, _, _ = fleet64
    rows = _entries(root, family)
    assert rows, [(e.get("context"), e.get("probe"), e.get("errno")) for e in _learned(root)]
    for e in rows:
        st = e.get("stats") or {}
        allowed = set(FAULT_HOSTS[B]) if family == R3 else set()
        assert set(st.get("fatal_hosts") or ()) <= allowed and not st.get("absent_hosts"), e
        assert bool(st.get("fatal_when_returned")) == (family == R3), e
        assert e.get("comm") in (None, "python3"), e


@known
@pytest.mark.parametrize("cause", _params("test_fallback_fault_not_learned", [A1, A2, A3]))
def test_fallback_fault_not_learned(fleet64, cause):
    """No process goes on after (a)'s faults: ib_peer_umem_get's EFAULT / ENOMEM, mlx5_cmd_exec's
    ENOMEM learned for no operation."""
    root, _, _, _ = fleet64
    _, probe, errno, _ = FAMILIES[cause]
    assert not [e for e in _learned(root) if (e.get("probe"), e.get("errno")) == (probe, errno)]


@known
@pytest.mark.parametrize("family", _params("test_control_routine_learned", list(ROUTINE)))
def test_control_routine_learned(fleet64_control, family):
    """The control: each rescued family learned, none marked fatal_when_returned (nothing returns
    any of them), no fatal or absent hosts."""
    root, _, _, _ = fleet64_control
    rows = _entries(root, family)
    assert rows, [(e.get("context"), e.get("probe"), e.get("errno")) for e in _learned(root)]
    for e in rows:
        st = e.get("stats") or {}
        assert not st.get("fatal_when_returned") and not st.get("fatal_hosts") and not st.get("absent_hosts"), e


# ------------------------------------------------------------------------------------------------
# the audit: findings and clusters
# ------------------------------------------------------------------------------------------------
@known
@pytest.mark.parametrize("family", _params("test_routine_set_aside", list(ROUTINE)))
def test_routine_set_aside(fleet64, family):
    """Every occurrence of each rescued family set aside, on every host (the fault hosts included)."""
    root, _, _, scores = fleet64
    e = scores["per_root_cause"][family]
    assert e["traces"] > 1000 and e["set_aside_as_expected"] == e["traces"], e
    findings = _family_findings(root, family)
    assert findings.height == e["traces"] and findings["expected"].all(), \
        findings.filter(~pl.col("expected")).group_by("host").len()


@known
@pytest.mark.parametrize("family", _params("test_routine_findings_name_their_origin", list(ROUTINE)))
def test_routine_findings_name_their_origin(fleet64, family):
    """A rescued record's finding (set aside) names where its error originated: "in a tree whose root
    succeeded, the first unexpected error frame none of whose callees failed: a frame that passes a
    callee's error on, or turns it into another, before the operation absorbs it is that error's path
    ... -- a counter bind's NO_RES EAGAIN up through __rdma_counter_bind_qp, ENOMEM at
    rdma_counter_bind_qp_auto, ignored by _ib_modify_qp"; the bifurcation is that origin (every edge
    of a rescued tree is one the rescued calls run): pin_user_pages_fast EFAULT (R1, R2),
    mlx5_cmd_exec EAGAIN in the driver layer (R3), rdma_read_gid_attr_ndev_rcu ENODEV (R4)."""
    root, _, _, _ = fleet64
    findings = _family_findings(root, family)
    _, probe, errno, layer = FAMILIES[family]
    got = findings.group_by("bifurcation_probe", "bifurcation_errno", "origin_layer").len()
    assert findings.height > 1000
    assert set(findings["bifurcation_probe"]) == {probe} and set(findings["bifurcation_errno"]) == {errno}, got
    assert set(findings["origin_layer"]) == {layer}, got


@known
@pytest.mark.parametrize("cause", _params("test_every_record_of_the_cause_found", list(CAUSES)))
def test_every_record_of_the_cause_found(fleet64, cause):
    """Every record of each fault an open finding, on its own hosts only, its origin layer the
    findings' (peer-mem for (a)'s fallbacks, driver past it and for (b))."""
    root, _, _, scores = fleet64
    e = scores["per_root_cause"][cause]
    truth = dataset_truth(root).filter(pl.col("root_cause") == cause)
    assert e["detected"] == e["traces"] == truth.height and e["set_aside_as_expected"] == 0, e
    findings = _family_findings(root, cause)
    assert findings.height == truth.height and not findings["expected"].any(), \
        findings.filter(pl.col("expected")).height
    assert set(findings["host"]) == set(FAULT_HOSTS[cause])
    assert set(findings["origin_layer"]) == {FAMILIES[cause][3]}, findings.group_by("origin_layer").len()
    assert e["origin_layer_top1"] == 1.0, e


@known
@pytest.mark.parametrize("cause", _params("test_bifurcation_is_the_origin", list(CAUSES)))
def test_bifurcation_is_the_origin(fleet64, cause):
    """Where each failure left known-good behaviour: the first frame no successful call of its
    operation makes -- the rescued calls run the pin's EFAULT, __ib_umem_release and the peer
    client's lookup, then reg_create's mkey command, and RESET->INIT's firmware command --
    ib_peer_umem_get EFAULT (create_qp), ib_peer_umem_get ENOMEM (reg_mr), mlx5_cmd_exec ENOMEM
    (reg_mr, past the fallback), mlx5_cmd_exec EAGAIN (modify_qp)."""
    root, _, _, scores = fleet64
    e = scores["per_root_cause"][cause]
    findings = _family_findings(root, cause)
    _, probe, errno, _ = FAMILIES[cause]
    got = findings.group_by("bifurcation_probe", "bifurcation_errno").len().sort("len", descending=True)
    assert e["bifurcation_top1"] == 1.0, (e, got)
    assert set(findings["bifurcation_probe"]) == {probe} and set(findings["bifurcation_errno"]) == {errno}, got


@known
@pytest.mark.parametrize("cause", _params("test_each_cause_one_cluster", list(CAUSES)))
def test_each_cause_one_cluster(fleet64, cause):
    """Each fault one cluster of its own over its hosts, its signature naming the errno, its origin
    layer; first and last seen at its first and last failure."""
    root, _, _, _ = fleet64
    findings = _family_findings(root, cause)
    ids = set(findings["cluster_id"])
    assert len(ids) == 1, ids
    row = _audit(root, "clusters").filter(pl.col("cluster_id") == ids.pop()).row(0, named=True)
    _, _, errno, layer = FAMILIES[cause]
    assert row["hosts"] == len(FAULT_HOSTS[cause]) and row["failures"] == findings.height, row
    assert errno in row["signature"] and row["origin_layer"] == layer, row
    assert row["first_seen"] == findings["time"].min() and row["last_seen"] == findings["time"].max(), row


@known
def test_one_cluster_per_cause_only(fleet64):
    root, _, _, _ = fleet64
    open_ = findings_with_truth(root).filter(~pl.col("expected"))
    assert set(open_["root_cause"].unique()) == set(CAUSES), open_.group_by("root_cause").len()
    assert _audit(root, "clusters").height == len(CAUSES)


@known
def test_scores(fleet64):
    """evaluate: every ratio 1.0, no false finding (none on held-out good traces either), every
    record of each fault detected."""
    _, _, _, scores = fleet64
    assert scores["held_out_good_traces"] > 100
    assert_every_cause_found(scores, CAUSES)


# ------------------------------------------------------------------------------------------------
# the audit: host alerts
# ------------------------------------------------------------------------------------------------
@known
@pytest.mark.parametrize("host", _params("test_no_alert_on_quiet_hosts", QUIET))
def test_no_alert_on_quiet_hosts(fleet64, host):
    """No alert on a host without a fault: the rescued shapes at their steady rate."""
    root, _, _, _ = fleet64
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == host)
    assert alerts.height == 0, alerts


@known
def test_no_alert_names_a_rescued_error(fleet64):
    """No alert names a rescued family's origin (pin_user_pages_fast, rdma_read_gid_attr_ndev_rcu,
    ENODEV anywhere; mlx5_cmd_exec's EAGAIN only on (b)'s hosts, where it is the fault's)."""
    root, _, _, _ = fleet64
    alerts = _audit(root, "host_alerts")
    bad = alerts.filter(pl.col("probe").is_in(["pin_user_pages_fast", "rdma_read_gid_attr_ndev_rcu"])
                        | (pl.col("errno") == "ENODEV")
                        | ((pl.col("errno") == "EAGAIN") & ~pl.col("host").is_in(list(FAULT_HOSTS[B]))))
    assert bad.height == 0, bad


RST2INIT_PATH = {"ib_uverbs_modify_qp", "_ib_modify_qp", "mlx5_ib_modify_qp", "mlx5_core_qp_modify", "mlx5_cmd_exec"}


@known
@pytest.mark.parametrize("host", _params("test_no_res_host_alert_names_the_rst2init", sorted(FAULT_HOSTS[B])))
def test_no_res_host_alert_names_the_rst2init(fleet64, host):
    """(b)'s hosts fail every RESET->INIT from 01:15 on: an alert naming EAGAIN there, from 01:15 on,
    and "a bad state is named by an unexpected error's probe first": a probe of the RST2INIT's
    returned path (ib_uverbs_modify_qp, _ib_modify_qp, mlx5_ib_modify_qp, mlx5_core_qp_modify,
    mlx5_cmd_exec), never the ignored Q-counter bind's (rdma_counter_bind_qp_auto,
    __rdma_counter_bind_qp, mlx5_ib_counter_bind_qp), whose EAGAIN every host absorbs at its usual
    rate there too ("A learned family out of its band on a host where an unexpected error rises or
    persists is that error's symptom ..., not an alert of its own")."""
    root, _, _, _ = fleet64
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == host)
    assert alerts.filter(pl.col("errno") == "EAGAIN").height >= 1, alerts
    assert (alerts["since"] >= FAULT_HOSTS[B][host]).all(), alerts
    assert set(alerts["probe"]) <= RST2INIT_PATH, alerts.select("alert", "probe", "errno", "detail").rows()


@known
@pytest.mark.parametrize("cause", _params("test_fault_hosts_alerts_are_the_faults", [A1, A2, A3]))
def test_fault_hosts_alerts_are_the_faults(fleet64, cause):
    """On (a)'s hosts any alert is the fault's: its errno, from the host's fault on (its bucket)."""
    root, _, _, _ = fleet64
    _, _, errno, _ = FAMILIES[cause]
    for host, since in FAULT_HOSTS[cause].items():
        alerts = _audit(root, "host_alerts").filter(pl.col("host") == host)
        bucket = since.replace(minute=since.minute // 15 * 15)
        assert set(alerts["errno"]) <= {errno, None} and (alerts["since"] >= bucket).all(), (host, alerts)


# ------------------------------------------------------------------------------------------------
# the control: the rescued shapes alone
# ------------------------------------------------------------------------------------------------
def test_control_has_no_fault(fleet64_control):
    root, _, _, _ = fleet64_control
    truth = dataset_truth(root)
    assert set(truth["root_cause"].drop_nulls()) == set(ROUTINE)
    roots = roots_with_truth(root)
    assert (roots.filter(pl.col("kind") == "failure")["exit_status"] == 0).all()


@known
def test_control_everything_set_aside(fleet64_control):
    """Every finding set aside as expected, every rescued occurrence among them."""
    root, _, _, scores = fleet64_control
    findings = findings_with_truth(root)
    assert findings.height > 10_000 and findings["expected"].all(), \
        findings.filter(~pl.col("expected")).group_by("root_cause", "bifurcation_probe", "bifurcation_errno").len()
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 1000, (family, e)


@known
def test_control_no_cluster_no_alert(fleet64_control):
    root, _, _, _ = fleet64_control
    assert _audit(root, "clusters").height == 0, _audit(root, "clusters")
    assert _audit(root, "host_alerts").height == 0, _audit(root, "host_alerts")


@known
def test_control_scores(fleet64_control):
    """evaluate: no false finding, none on the held-out good traces, the routine all set aside."""
    _, _, _, scores = fleet64_control
    assert scores["held_out_good_traces"] > 100
    assert scores["false_findings_on_good"] == 0 and scores["false_findings"] == 0, scores
    assert scores["routine_set_aside"] == 1.0, scores


def test_errno_references():
    """The reference's own words for the faults' errnos at their origins."""
    assert_errno_from_reference(A1, "ib_peer_umem_get", "EFAULT")
    assert_errno_from_reference(A2, "ib_peer_umem_get", "ENOMEM")
    assert_errno_from_reference(B, "mlx5_cmd_exec", "EAGAIN")


@known
def test_saved_model_of_the_control(fleet64, fleet64_control, tmp_path):
    """`baseline learn` of the control (the rescued shapes alone) saves a model; `baseline audit
    FAULTED --model M` extends it with the audited data's good traces and rescued call structure
    ("a model given ... is extended with the dataset's good traces on a copy"; "The audited data's
    *rescued* traces add their call structure too"): every fault's bifurcation as in-process, at its
    origin, and the audit exits 0."""
    root, _, _, _ = fleet64
    control, _, _, _ = fleet64_control
    model = tmp_path / "control-model.parquet"
    res = subprocess.run([str(BASELINE), "learn", str(control), "-o", str(model), "--expected-out",
                          str(tmp_path / "control-expected.yaml")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "audit"
    res = subprocess.run([str(BASELINE), "audit", str(root), "--model", str(model), "-o", str(out), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    # the control's success paths are the faulted day's: no operation's good traces on unseen paths
    drift = {d["operation"]: d["unseen_path_traces"] for d in summary["model_drift"]}
    assert drift and not any(drift.values()), drift
    findings = read(out / "findings.parquet", "findings").join(
        dataset_truth(root).select("host", "trace_id", "root_cause"), on=["host", "trace_id"])
    for cause in CAUSES:
        _, probe, errno, _ = FAMILIES[cause]
        own = findings.filter(pl.col("root_cause") == cause)
        got = own.group_by("bifurcation_probe", "bifurcation_errno").len()
        assert own.height == dataset_truth(root).filter(pl.col("root_cause") == cause).height, cause
        assert set(own["bifurcation_probe"]) == {probe} and set(own["bifurcation_errno"]) == {errno}, (cause, got)


@known
def test_learned_list_keeps_returned_no_res_open_on_other_hosts(fleet64, fleet64_moved, tmp_path):
    """fleet64's learned list (`baseline learn --expected-out`) carried to another window
    (`baseline audit --allowlist L --no-learn-expected`) where the RST2INIT's NO_RES is returned on
    two other hosts: the list's R3 entry "is learned from the absorbed calls and marked
    stats.fatal_when_returned, and the audit keeps open every occurrence its operation returned", so
    every (b) record there stays open; the rescued shapes are all set aside by the list."""
    root, _, _, _ = fleet64
    moved, _, _, _ = fleet64_moved
    _learned(root)
    listed = Path(str(root) + "-learn") / "expected.yaml"
    out = tmp_path / "audit"
    res = subprocess.run([str(BASELINE), "audit", str(moved), "--allowlist", str(listed), "--no-learn-expected",
                          "-o", str(out), "--json"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    findings = read(out / "findings.parquet", "findings").join(
        dataset_truth(moved).select("host", "trace_id", "root_cause"), on=["host", "trace_id"])
    returned = findings.filter(pl.col("root_cause") == B)
    assert set(returned["host"]) == set(MOVED_B_HOSTS)
    assert returned.height == dataset_truth(moved).filter(pl.col("root_cause") == B).height
    assert not returned["expected"].any(), returned.group_by("host", "expected").len()
    rescued = findings.filter(pl.col("root_cause").is_in(list(ROUTINE)))
    assert rescued.height > 10_000 and rescued["expected"].all(), \
        rescued.filter(~pl.col("expected")).group_by("root_cause").len()


@known
def test_moved_day_own_audit(fleet64_moved):
    """The other day audited on its own (learned expected errors from itself): (b)'s every record
    open on its two hosts, bifurcation mlx5_cmd_exec EAGAIN, one cluster; the rescued shapes set
    aside."""
    root, _, _, scores = fleet64_moved
    findings = findings_with_truth(root)
    returned = findings.filter(pl.col("root_cause") == B)
    assert returned.height == dataset_truth(root).filter(pl.col("root_cause") == B).height > 100
    assert set(returned["host"]) == set(MOVED_B_HOSTS) and not returned["expected"].any()
    assert set(returned["bifurcation_probe"]) == {"mlx5_cmd_exec"} and set(returned["bifurcation_errno"]) == {"EAGAIN"}
    assert returned["cluster_id"].n_unique() == 1 and _audit(root, "clusters").height == 1
    assert findings.filter(pl.col("root_cause").is_in(list(ROUTINE)))["expected"].all()
    assert scores["false_findings_on_good"] == 0 and scores["false_findings"] == 0

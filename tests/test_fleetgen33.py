"""The audit scored on tests/fleetgen33, a thirty-third fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' docstrings; without reading the simulator, the
other generators, or the audit).

What it is for: SMALL AND YOUNG FLEETS. A cluster in bring-up / a CI cluster: 3 mlx5 RoCE hosts
for 2 hours, no history, few good traces, and each routine error (ENODATA on an empty GID slot,
EAGAIN at the rdma cgroup charge retried through, EOPNOTSUPP for a CQE padding the library does
without) seen only 2-6 times a host, on every host. Beside them three root causes, each on ONE
host of three (a third of the fleet) with as many records there as a routine family: a firmware
CREATE_QP INT_ERR (EIO), a memlock limit not rolled out (ENOMEM at ib_umem_get), a neighbour that
never resolves (ETIMEDOUT). The audit must report each cause in its own cluster, set the routine
aside without a finding or an alert, and raise nothing on the control fleet (faults=False).
generator.py gives the reasons for the truth.
"""

from __future__ import annotations

import polars as pl
import pytest
from fleet_harness import (
    assert_errno_from_reference,
    assert_every_cause_found,
    assert_files_valid_and_truth_one_row_per_record,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
    dataset_counters,
    dataset_events,
    dataset_truth,
    findings_with_truth,
    roots_with_truth,
)
from fleetgen33 import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

# 3 hosts x 2 h (~1 s to build); the control: 3 hosts x 1.5 h, the routine only; and the upper end
# of the angle, a 6-host CI cluster for 3 h (the same three causes on hosts 0-2, hosts 3-5 clean)
SHAPE = {"hosts": 3, "hours": 2, "seed": 33}
CONTROL = {"hosts": 3, "hours": 1.5, "seed": 3333, "faults": False}
SIX = {"hosts": 6, "hours": 3, "seed": 36}
fleet33 = audited_fleet("fleet33", generate, package="fleetgen33", **SHAPE)
control33 = audited_fleet("control33", generate, package="fleetgen33", **CONTROL)
six33 = audited_fleet("six33", generate, package="fleetgen33", **SIX)

# The learner's evidence floor meets the young fleet (round twenty-eight, written down as found):
# the rdma cgroup's create_qp EAGAIN, retried 5 ms later and passing, is seen 8 times in 2 h on the
# 3 hosts (18 in 3 h on 6), mid-life, with no occurrence in a capture window (timed_traces 0): a
# survivor outside a window leaves no later trace, so 4 of 7 uncensored occurrences look like
# deaths (10 of 15 on six hosts) and Increase's lower bound is 0.16 (0.36) over the probe's
# timed base -- above max_increase 0.05 -- with 3-5 survivals under min_success 5. The error side
# judged on all its traces is "a bound that can only make it look more fatal"; with no window
# showing its outcome, nothing in the records says these processes went on. The causes are all
# found in their own clusters, the other two routine families set aside, no alert: only this
# family stays open.
RETRIED_UNSEEN = ("create_qp EAGAIN at ib_rdmacg_try_charge, retried through outside the capture windows 8 times "
                  "in the whole window: too few survivals seen (3-5 < min_success 5) and an Increase lower bound "
                  "0.16-0.36 > 0.05 from occurrences whose process no window caught again; stays open")

KEY = ["host", "trace_id"]
FW, MEMLOCK, ARP = "fw_create_qp_int_err", "memlock_unset_enomem", "neighbour_timeout"


# --------------------------------------------------------------------------------------------
# the generator and its data
# --------------------------------------------------------------------------------------------
def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen33", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every family's errno is one the reference
    gives near its origin; every failing frame of a tree fails with its family's errno."""
    assert_functions_in_reference({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
    for key, (probe, errno, layer) in FAMILIES.items():
        assert_errno_from_reference(key, probe, errno)
        assert LAYER[probe] == layer, key
    origins = {v[:2] for v in FAMILIES.values()}
    for name, (_, _, frames) in TREES.items():
        failing = [(fn, e) for _, fn, e in frames if e]
        if failing:
            assert any(f in origins for f in failing), name
            assert len({e for _, e in failing}) == 1, name


def test_every_file_validates_and_truth_is_one_row_per_record(fleet33):
    """Events, counters, their summaries and truth validate through tracer.schema; truth has one
    row per record (host, trace_id) and none more; every counters file's summary matches it."""
    root, _, _, _ = fleet33
    assert_files_valid_and_truth_one_row_per_record(root)


def test_counters_agree_with_the_records(fleet33):
    """Per family origin (probe, errno) the counters' failures equal the family's records: every
    failure is recorded here (none aggregated, nothing lost)."""
    root, _, _, _ = fleet33
    cells = dataset_counters(root).select("probe", "errno_counts").explode("errno_counts").unnest("errno_counts")
    counted = dict(((p, e), n) for p, e, n in cells.filter(pl.col("count") > 0).group_by("probe", "errno")
                   .agg(pl.col("count").sum()).iter_rows())
    roots = roots_with_truth(root)
    for family, (probe, errno, _) in FAMILIES.items():
        n = roots.filter(pl.col("root_cause") == family)["repeat_count"].fill_null(1).sum()
        assert counted.get((probe, errno), 0) == n > 0, (family, counted.get((probe, errno)), n)


def test_the_fleet_is_small_and_young(fleet33):
    """The angle holds in the data: 3 hosts, 2 hours; each routine family on every host, 2-6
    records on each; each root cause on one host, with 3-6 records there (as many as a routine
    family on that host); good traces of every operation, but few (a few dozen a host)."""
    root, summary, _, _ = fleet33
    truth = dataset_truth(root)
    assert truth["host"].n_unique() == 3
    events = dataset_events(root)
    span = events["end_time"].max() - events["start_time"].min()
    assert span.total_seconds() <= 2 * 3600 + 60, span
    for family in ROUTINE:
        per_host = truth.filter(pl.col("root_cause") == family).group_by("host").len()
        assert per_host.height == 3, (family, per_host)
        assert per_host["len"].min() >= 2 and per_host["len"].max() <= 6, (family, per_host)
    for cause in ROOT_CAUSES:
        got = truth.filter(pl.col("root_cause") == cause)
        assert got["host"].n_unique() == 1 and 3 <= got.height <= 6, (cause, got.group_by("host").len())
    good = truth.filter(pl.col("kind") == "good")
    assert set(summary["good_by_operation"]) == {op for op, _, _ in TREES.values()}, summary["good_by_operation"]
    assert good.height <= 60 * 3, good.height


def test_every_fatal_cause_ends_its_process_and_routine_goes_on(fleet33):
    """The truth's reason in the data: after a root cause's record its pid has no later record;
    after a routine one the same pid has a later record (or, at the end of its job, none at all
    for a reason of its own) -- at least the agent's GID scans always go on."""
    root, _, _, _ = fleet33
    roots = roots_with_truth(root).select("host", "pid", "start_time", "root_cause")
    last = roots.group_by("host", "pid").agg(pl.col("start_time").max().alias("last"))
    joined = roots.join(last, on=["host", "pid"])
    fatal = joined.filter(pl.col("root_cause").is_in(list(ROOT_CAUSES)))
    assert (fatal["start_time"] == fatal["last"]).all(), fatal
    gid = joined.filter(pl.col("root_cause") == "gid_empty_slot")
    assert (gid["start_time"] < gid["last"]).sum() >= gid.height - 3, gid


# --------------------------------------------------------------------------------------------
# the audit
# --------------------------------------------------------------------------------------------
def _assert_cause_reported(root, result, cause: str) -> None:
    """`cause`'s records are open findings with the right bifurcation and origin layer, in one
    cluster that holds nothing else, with its failure and host counts."""
    findings = findings_with_truth(root)
    truth = dataset_truth(root)
    probe, errno, layer = ROOT_CAUSES[cause]
    got = findings.filter(pl.col("root_cause") == cause)
    want = truth.filter(pl.col("root_cause") == cause).height
    assert got.height == want, (cause, f"{want - got.height} of {want} records without a finding")
    assert not got["expected"].fill_null(False).any(), (
        cause, f"{got['expected'].fill_null(False).sum()} of {want} records set aside as routine")
    ids = set(got["cluster_id"].to_list())
    assert len(ids) == 1 and None not in ids, (cause, f"spread over clusters {ids}")
    (cid,) = ids
    members = set(findings.filter(pl.col("cluster_id") == cid)["root_cause"].to_list())
    assert members == {cause}, (cause, f"cluster {cid} also holds {members - {cause}}")
    assert set(zip(got["bifurcation_probe"], got["bifurcation_errno"], got["origin_layer"], strict=True)) == {
        (probe, errno, layer)}, (cause, got.select("bifurcation_probe", "bifurcation_errno", "origin_layer"))
    row = result.clusters.filter(pl.col("cluster_id") == cid).row(0, named=True)
    assert row["failures"] == got.height and row["hosts"] == got["host"].n_unique(), (cause, row)
    assert row["origin_layer"] == layer and f"{probe} {errno}" in row["signature"], (cause, row)


def test_firmware_create_qp_eio_on_one_host_is_reported(fleet33):
    """Four CREATE_QP INT_ERR (EIO at mlx5_cmd_exec) on host 0 of 3."""
    root, _, result, _ = fleet33
    _assert_cause_reported(root, result, FW)


def test_memlock_enomem_on_one_host_is_reported(fleet33):
    """Every perf rank's 4 GiB reg_mr on host 1 of 3: ENOMEM at ib_umem_get, the rank dies."""
    root, _, result, _ = fleet33
    _assert_cause_reported(root, result, MEMLOCK)


def test_neighbour_timeout_on_one_host_is_reported(fleet33):
    """Three INIT->RTR ETIMEDOUT at rdma_addr_find_l2_eth_by_grh on host 2 of 3."""
    root, _, result, _ = fleet33
    _assert_cause_reported(root, result, ARP)


@pytest.mark.xfail(strict=True, reason=RETRIED_UNSEEN)
def test_every_cause_is_found(fleet33):
    """Perfect scores: each cause detected on every record, none set aside; the routine families
    all set aside; one cluster per cause and none more."""
    _, _, result, scores = fleet33
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] > 0 and e["set_aside_as_expected"] == 0, (cause, e)
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0 and e["open_findings"] == 0, (family, e)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    assert_every_cause_found(scores, ROOT_CAUSES)


@pytest.mark.xfail(strict=True, reason=RETRIED_UNSEEN)
def test_routine_set_aside(fleet33):
    """Every routine record -- a handful a host -- is set aside and in no cluster."""
    root, _, _, _ = fleet33
    findings = findings_with_truth(root)
    truth = dataset_truth(root)
    for family in ROUTINE:
        want = truth.filter(pl.col("root_cause") == family).height
        got = findings.filter(pl.col("root_cause") == family)
        open_ = got.filter(~pl.col("expected").fill_null(False))
        assert got.height == want and open_.height == 0, (family, want, got.height, open_.height)
        assert got["cluster_id"].is_null().all(), (family, "a routine record was clustered")


def test_no_host_alert_for_the_routine(fleet33):
    """No host alert names a routine family's probe or errno; an alert is acceptable only on a
    cause's host and naming its errno."""
    _, summary, result, _ = fleet33
    routine = {(p, e) for p, e, _ in ROUTINE.values()}
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) in routine or r[3] in {e for _, e in routine}], rows
    acceptable: dict[str, set] = {}
    for cause, (_, errno, _) in ROOT_CAUSES.items():
        for h in summary["family_hosts"][cause]:
            acceptable.setdefault(h, set()).add(errno)
    false = [r for r in rows if not (r[0] in acceptable and r[3] in acceptable[r[0]])]
    assert not false, false


@pytest.mark.xfail(strict=True, reason=RETRIED_UNSEEN)
def test_control_fleet_raises_nothing(control33):
    """The routine alone on 3 young hosts: no cluster, no alert, no open finding."""
    root, summary, result, scores = control33
    assert set(summary["counts"]) == set(ROUTINE), summary["counts"]
    findings = findings_with_truth(root)
    opened = findings.filter(~pl.col("expected").fill_null(False))
    assert opened.height == 0, opened.group_by("root_cause", "bifurcation_probe", "bifurcation_errno").len()
    assert result.clusters.height == 0, result.clusters
    assert result.host_alerts.height == 0, result.host_alerts
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0


@pytest.mark.xfail(strict=True, reason=RETRIED_UNSEEN)
def test_six_host_ci_fleet_every_cause_found(six33):
    """The upper end of the angle (6 hosts, 3 h): each cause in its own cluster, the routine set
    aside, no alert off a cause's host."""
    root, summary, result, scores = six33
    for cause in ROOT_CAUSES:
        _assert_cause_reported(root, result, cause)
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0 and e["open_findings"] == 0, (family, e)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    causes_hosts = {h for c in ROOT_CAUSES for h in summary["family_hosts"][c]}
    assert set(result.host_alerts["host"].to_list()) <= causes_hosts, result.host_alerts
    assert_every_cause_found(scores, ROOT_CAUSES)

"""The audit scored on tests/fleetgen38, a thirty-eighth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' docstrings; without reading the simulator, the
other generators, or the audit).

What it is for: WHAT THE COLLECTION PATH DOES TO THE DATA. 8 mlx5 RoCE hosts for 3 hours, 5-second
snapshots. A failure storm on one host (a service crash-looping at its unit's maximum restart rate:
ENOMEM at mlx5_cmd_exec under CREATE_QP, 5 a second) whose trees are mostly aggregated (repeat_count
~23), whose ring buffer lost records (lost_records > 0) and whose timed trees are cut by the slot
(lost_events > 0, the origin in the lost tail); a host whose tracer restarted mid-window; a host
whose tracer was down for an hour; a host whose 30 minutes of snapshots were re-sent (the same rows
twice in a second part file), with a firmware-timeout fault (ETIMEDOUT at mlx5_cmd_exec under
ALLOC_PD) inside the re-sent span. Two routine families on every host (EOPNOTSUPP at create_cq_user,
retried without CQE compression; ENODATA at rdma_get_gid_attr, a health agent reading empty GID
slots). The audit must report the storm with its exact weight (the records' repeat_count, which the
counters confirm once the lost records are added) and the timeout, each in its own cluster, set both
routine families aside with no finding and no alert, and raise nothing on the control fleet
(faults=False: the collection artefacts and the routine); and the same with the artefacts on the
storm itself (storm_artefacts=True: the storm host's tracer restarted mid-storm, 10 minutes of its
storm snapshots re-sent). generator.py gives the reasons.
"""

from __future__ import annotations

import datetime as dt

import polars as pl
from fleet_harness import (
    assert_every_cause_found,
    assert_files_valid_and_truth_one_row_per_record,
    assert_generator_is_blind,
    assert_trees_from_the_reference,
    audited_fleet,
    dataset_events,
    dataset_truth,
    findings_with_truth,
    roots_with_truth,
)
from fleetgen38 import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate
from fleetgen38.generator import TREE_FAMILY

from tracer.schema import (
    RECORD_KEY,
    SNAPSHOT_KEY,
    dataset_files,
    read,
)

# 8 hosts x 3 h (~3 s to build); the control: the same shape, the artefacts and the routine only;
# the upper end: 12 hosts x 4 h, the same roles by index
SHAPE = {"hosts": 8, "hours": 3, "seed": 38}
CONTROL = {"hosts": 8, "hours": 3, "seed": 3838, "faults": False}
BIG = {"hosts": 12, "hours": 4, "seed": 3812}
# the artefacts on the storm itself: its host's tracer restarted mid-storm and 10 minutes of its
# storm snapshots re-sent
STORMY = {"hosts": 8, "hours": 3, "seed": 3838, "storm_artefacts": True}
fleet38 = audited_fleet("fleet38", generate, package="fleetgen38", **SHAPE)
control38 = audited_fleet("control38", generate, package="fleetgen38", **CONTROL)
big38 = audited_fleet("big38", generate, package="fleetgen38", **BIG)
stormy38 = audited_fleet("stormy38", generate, package="fleetgen38", **STORMY)

KEY = ["host", "trace_id"]
STORM, FW = "svc_qp_fw_enomem", "fw_cmd_timeout"
COMP, GID = "cq_comp_refused", "gid_empty_slot"


def _events(root) -> pl.DataFrame:
    """Each record's frames once (RECORD_KEY: a re-sent snapshot's trees count once, their first copy)."""
    return dataset_events(root).unique(list(RECORD_KEY), keep="first", maintain_order=True)


def _raw_counters(root) -> pl.DataFrame:
    return read(dataset_files(root, "counters"), "counters")


def _counters(root) -> pl.DataFrame:
    return _raw_counters(root).unique(list(SNAPSHOT_KEY), keep="first")


def _weights(root) -> pl.DataFrame:
    return _events(root).filter(pl.col("seq") == 0).select(*KEY, pl.col("repeat_count").fill_null(1).alias("w"))


def _errno_count(counters: pl.DataFrame, probe: str, errno: str) -> int:
    c = counters.filter(pl.col("probe") == probe).select(pl.col("errno_counts").list.eval(
        pl.element().filter(pl.element().struct.field("errno") == errno).struct.field("count")).list.sum())
    return int(c.to_series().fill_null(0).sum())


# --------------------------------------------------------------------------------------------
# the generator and its data
# --------------------------------------------------------------------------------------------
def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen38", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every family's errno is one the reference
    gives near its origin (mlx5_cmd_exec's ENOMEM and ETIMEDOUT from the errno_conventions' firmware
    mapping); every failing frame of a tree fails with its family's errno, and the family's origin is
    one of them."""
    assert_trees_from_the_reference(TREES, FAMILIES, LAYER, TREE_FAMILY)


def test_every_file_validates_and_truth_is_one_row_per_record(fleet38):
    """Events, counters, their summaries and truth validate through tracer.schema; truth has one
    row per record (host, trace_id) -- a re-sent record once -- and none more; every counters file's
    summary matches it."""
    root, _, _, _ = fleet38
    assert_files_valid_and_truth_one_row_per_record(root, _events(root))


def test_counters_agree_with_the_records(fleet38):
    """Per (probe, errno) the counters' failures (each snapshot once) equal the records' failing
    frames (each record once), weighted by repeat_count, plus what the collection path dropped: the
    frames of lost record attempts and the failing frames in the lost tails of cut records
    (summary["unrecorded"]); nothing else is missing."""
    root, summary, _, _ = fleet38
    cells = _counters(root).select("probe", "errno_counts").explode("errno_counts").unnest("errno_counts")
    counted = dict(((p, e), n) for p, e, n in cells.filter(pl.col("count") > 0).group_by("probe", "errno")
                   .agg(pl.col("count").sum()).iter_rows())
    ev = _events(root)
    frames = ev.filter(pl.col("errno").is_not_null()).join(_weights(root), on=KEY)
    recorded = dict(((p, e), n) for p, e, n in frames.group_by("probe", "errno").agg(pl.col("w").sum()).iter_rows())
    for k, n in summary["unrecorded"].items():
        p, e = k.split("|")
        recorded[(p, e)] = recorded.get((p, e), 0) + n
    assert counted == recorded
    for family, (probe, errno, _) in FAMILIES.items():
        assert counted.get((probe, errno), 0) > 0, family


def test_the_storm_is_aggregated_lossy_and_cut(fleet38):
    """The angle in the data: the storm's records are few and heavy (most of its weight carried by
    repeat_count, tens a record), its host's counters show ring-buffer loss, some of its records
    were cut by the slot (lost_events > 0) and keep no frame of the origin; and the counters' ENOMEM
    at the root probe equals the records' weight plus the lost records, exactly."""
    root, summary, _, _ = fleet38
    host = summary["storm_host"]
    roots = roots_with_truth(root, _events(root)).filter(pl.col("root_cause") == STORM)
    assert set(roots["host"]) == {host}
    w = roots["repeat_count"].fill_null(1)
    assert w.max() >= 15 and w.sum() >= 5 * roots.height, (w.max(), w.sum(), roots.height)
    cut = roots.filter(pl.col("lost_events") > 0)
    assert cut.height > 0
    ev = _events(root).join(cut.select(KEY), on=KEY)
    assert ev.filter(pl.col("probe") == "mlx5_cmd_exec").height == 0
    c = _counters(root).filter(pl.col("host") == host)
    lost = c.unique(["snapshot_time"]).select(pl.col("lost_records").sum()).item()
    assert lost > 0 and lost == summary["lost_records"][host]
    assert _errno_count(c, "ib_uverbs_create_qp", "ENOMEM") == w.sum() + lost
    others = _counters(root).filter(pl.col("host") != host)
    assert others["lost_records"].sum() == 0


def _snapshot_gaps(root, host: str) -> pl.DataFrame:
    times = _counters(root).filter(pl.col("host") == host).select("snapshot_time", "interval_s").unique().sort(
        "snapshot_time")
    return times.with_columns(pl.col("snapshot_time").diff().alias("gap"))


def test_the_restart_the_hour_down_and_the_resent_snapshots(fleet38):
    """The restart host has one hole of about 3 minutes and a short first interval after it; the
    gap host has no snapshot for an hour; the re-sent host's files hold 30 minutes of counters rows
    and call trees twice (the same SNAPSHOT_KEY, the same RECORD_KEY)."""
    root, summary, _, _ = fleet38
    r = _snapshot_gaps(root, summary["restart_host"])
    holes = r.filter(pl.col("gap") > dt.timedelta(seconds=6))
    assert holes.height == 1 and dt.timedelta(minutes=3) <= holes["gap"][0] <= dt.timedelta(minutes=3, seconds=10)
    assert holes["interval_s"][0] < 5.0
    g = _snapshot_gaps(root, summary["gap_host"])
    assert g["gap"].max() >= dt.timedelta(hours=1)
    host = summary["resent_host"]
    raw = _raw_counters(root).filter(pl.col("host") == host)
    dup = raw.height - raw.unique(list(SNAPSHOT_KEY)).height
    assert dup >= 30 * 12 * len({p for p in raw["probe"]}) - 100, dup
    ev = dataset_events(root).filter(pl.col("host") == host)
    assert ev.height > ev.unique(list(RECORD_KEY)).height
    twice = (ev.filter(pl.col("seq") == 0).group_by("trace_id").len().filter(pl.col("len") > 1)
             .join(dataset_truth(root).filter(pl.col("host") == host), on="trace_id"))
    assert set(twice["root_cause"].drop_nulls()) >= {GID, FW}, set(twice["root_cause"].drop_nulls())


def test_every_fatal_cause_ends_its_process_and_routine_goes_on(fleet38):
    """The truth's reason in the data: after a root cause's record its pid has no later record;
    after each routine family's record the same pid often has a later one."""
    root, _, _, _ = fleet38
    roots = roots_with_truth(root, _events(root)).select("host", "pid", "ts_ns", "root_cause")
    last = roots.group_by("host", "pid").agg(pl.col("ts_ns").max().alias("last"))
    joined = roots.join(last, on=["host", "pid"])
    fatal = joined.filter(pl.col("root_cause").is_in(list(ROOT_CAUSES)))
    assert fatal.height and (fatal["ts_ns"] == fatal["last"]).all(), fatal.filter(pl.col("ts_ns") != pl.col("last"))
    for family in ROUTINE:
        r = joined.filter(pl.col("root_cause") == family)
        assert (r["ts_ns"] < r["last"]).mean() >= 0.4, (family, (r["ts_ns"] < r["last"]).mean())


# --------------------------------------------------------------------------------------------
# the audit
# --------------------------------------------------------------------------------------------
def _assert_cause_reported(root, result, cause: str) -> None:
    """`cause`'s records are open findings (each record once) with the right bifurcation and
    origin layer, in one cluster that holds nothing else, with its failure weight (repeat_count)
    and host count."""
    findings = findings_with_truth(root)
    truth = dataset_truth(root)
    probe, errno, layer = ROOT_CAUSES[cause]
    got = findings.filter(pl.col("root_cause") == cause)
    want = truth.filter(pl.col("root_cause") == cause).height
    assert got.height == want, (cause, f"{got.height} findings for {want} records")
    assert not got["expected"].fill_null(False).any(), (
        cause, f"{got['expected'].fill_null(False).sum()} of {want} records set aside as routine")
    ids = set(got["cluster_id"].to_list())
    assert len(ids) == 1 and None not in ids, (cause, f"spread over clusters {ids}")
    (cid,) = ids
    members = set(findings.filter(pl.col("cluster_id") == cid)["root_cause"].to_list())
    assert members == {cause}, (cause, f"cluster {cid} also holds {members - {cause}}")
    assert set(zip(got["bifurcation_probe"], got["bifurcation_errno"], got["origin_layer"], strict=True)) == {
        (probe, errno, layer)}, (cause, got.group_by("bifurcation_probe", "bifurcation_errno", "origin_layer").len())
    row = result.clusters.filter(pl.col("cluster_id") == cid).row(0, named=True)
    failures = got.select(KEY).unique().join(_weights(root), on=KEY)["w"].sum()
    assert row["failures"] == failures and row["hosts"] == got["host"].n_unique(), (cause, failures, row)
    assert row["origin_layer"] == layer and f"{probe} {errno}" in row["signature"], (cause, row)


def test_the_storm_is_one_cluster_with_its_exact_weight(fleet38):
    """The crash loop: every record -- complete, aggregated or cut -- in one cluster of its own at
    mlx5_cmd_exec ENOMEM, its failures the records' repeat_count summed, which is the counters'
    ENOMEM at ib_uverbs_create_qp less the lost records."""
    root, summary, result, _ = fleet38
    _assert_cause_reported(root, result, STORM)
    cid = findings_with_truth(root).filter(pl.col("root_cause") == STORM)["cluster_id"][0]
    row = result.clusters.filter(pl.col("cluster_id") == cid).row(0, named=True)
    c = _counters(root).filter(pl.col("host") == summary["storm_host"])
    lost = summary["lost_records"][summary["storm_host"]]
    assert row["failures"] == _errno_count(c, "ib_uverbs_create_qp", "ENOMEM") - lost, row


def test_the_firmware_timeout_on_the_resent_host_is_reported_once(fleet38):
    """ETIMEDOUT at mlx5_cmd_exec under ALLOC_PD on the re-sent host: one cluster, each record once
    though part of them is in the files twice."""
    root, _, result, _ = fleet38
    _assert_cause_reported(root, result, FW)


def test_every_cause_is_found(fleet38):
    """Perfect scores: each cause detected on every record, none set aside; the routine families
    all set aside; one cluster per cause and none more."""
    _, _, result, scores = fleet38
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] > 0 and e["set_aside_as_expected"] == 0, (cause, e)
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0 and e["open_findings"] == 0, (family, e)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    assert_every_cause_found(scores, ROOT_CAUSES)


def _assert_routine_set_aside(root) -> None:
    findings = findings_with_truth(root)
    truth = dataset_truth(root)
    for family in ROUTINE:
        want = truth.filter(pl.col("root_cause") == family).height
        got = findings.filter(pl.col("root_cause") == family)
        open_ = got.filter(~pl.col("expected").fill_null(False))
        assert got.height == want and open_.height == 0, (family, want, got.height, open_.height,
                                                          open_.group_by("host").len().sort("host").rows())
        assert got["cluster_id"].is_null().all(), (family, "a routine record was clustered")


def test_the_routine_is_set_aside_on_every_host(fleet38):
    """Every routine record -- the compression refusal, the empty GID slots -- is set aside and in no
    cluster, on the storm, restart, gap and re-sent hosts as elsewhere."""
    root, _, _, _ = fleet38
    _assert_routine_set_aside(root)


def _acceptable_alerts(summary) -> dict[str, set]:
    acceptable: dict[str, set] = {}
    for cause, (_, errno, _) in ROOT_CAUSES.items():
        frames = {fn for name, (_, _, fr) in TREES.items() if TREE_FAMILY.get(name) == cause
                  for _, fn, e in fr if e == errno}
        for h in summary["family_hosts"].get(cause, []):
            acceptable.setdefault(h, set()).update({(fn, errno) for fn in frames} | {(fn, None) for fn in frames})
    return acceptable


def test_no_host_alert_off_a_causes_frames(fleet38):
    """No host alert names a routine family's (probe, errno), nor the restart or gap host; an alert
    is acceptable only on a cause's host at a frame failing with the cause's errno."""
    _, summary, result, _ = fleet38
    routine = {(p, e) for p, e, _ in ROUTINE.values()}
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) in routine], rows
    acceptable = _acceptable_alerts(summary)
    false = [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())]
    assert not false, false


def _assert_control_raises_nothing(root, summary, result, scores) -> None:
    assert set(summary["counts"]) == set(ROUTINE), summary["counts"]
    findings = findings_with_truth(root)
    opened = findings.filter(~pl.col("expected").fill_null(False))
    assert opened.height == 0, opened.group_by("root_cause", "host", "bifurcation_probe", "bifurcation_errno").len()
    assert result.clusters.height == 0, result.clusters
    assert result.host_alerts.height == 0, result.host_alerts
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0


def test_control_fleet_raises_nothing(control38):
    """The restart, the hour down, the re-sent snapshots and the routine alone: no cluster, no
    alert, no open finding."""
    _assert_control_raises_nothing(*control38)


def test_larger_fleet_every_cause_found(big38):
    """12 hosts x 4 h, the same roles by index: each cause in its own cluster with its weight, the
    routine set aside, no alert off a cause's frames."""
    root, summary, result, scores = big38
    for cause in ROOT_CAUSES:
        _assert_cause_reported(root, result, cause)
    _assert_routine_set_aside(root)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    acceptable = _acceptable_alerts(summary)
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())], rows
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_storm_with_its_own_restart_and_resent_snapshots(stormy38):
    """The storm host's tracer restarted 20 minutes into the storm and 10 minutes of its storm
    snapshots re-sent: its heaviest records are in the files twice and count once; the storm is
    still one cluster whose failures are the records' weight, the counters' ENOMEM (each snapshot
    once) less the lost records; the timeout, the routine and the alerts as on the plain fleet."""
    root, summary, result, scores = stormy38
    host = summary["storm_host"]
    raw = dataset_events(root).filter((pl.col("host") == host) & (pl.col("seq") == 0))
    heavy = raw.filter(pl.col("repeat_count") >= 10)
    assert heavy.height > heavy.unique(KEY).height, "no aggregated storm record was re-sent"
    gaps = _snapshot_gaps(root, host).filter(pl.col("gap") > dt.timedelta(seconds=6))
    assert gaps.height == 1 and gaps["interval_s"][0] < 5.0, gaps
    for cause in ROOT_CAUSES:
        _assert_cause_reported(root, result, cause)
    cid = findings_with_truth(root).filter(pl.col("root_cause") == STORM)["cluster_id"][0]
    row = result.clusters.filter(pl.col("cluster_id") == cid).row(0, named=True)
    c = _counters(root).filter(pl.col("host") == host)
    assert row["failures"] == _errno_count(c, "ib_uverbs_create_qp", "ENOMEM") - summary["lost_records"][host], row
    _assert_routine_set_aside(root)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    acceptable = _acceptable_alerts(summary)
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())], rows
    assert_every_cause_found(scores, ROOT_CAUSES)

"""The audit scored on tests/fleetgen41, a forty-first fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' docstrings; without reading the simulator, the
other generators' code, or the audit).

What it is for: TIME BOUNDARIES. 10 mlx5 RoCE hosts observed from 21:00 to 03:00 UTC: two date
partitions (date=D, date=D+1) in every table. A GID-table fault (the RoCE IP removed: ENODATA at
rdma_get_gid_attr on INIT->RTR, fatal to the rank) from 23:40 to 00:40 on 2 hosts must be ONE
cluster naming both, not split by the date boundary; a UMR fault (reg_mr EFAULT at
mlx5r_umr_update_mr_pas) entirely after midnight on one host, its own cluster. Two routine families
on both sides of midnight (CQE compression refused at create_cq_user, EOPNOTSUPP; empty GID slots
read by a health agent, ENODATA at rdma_get_gid_attr -- the same probe and errno as the fault, under
another operation) set aside with no finding and no alert. At the boundary one fault host's
snapshots of 23:55-00:05 arrive late in a second part file of their own date's partition, and the
other fault host's tracer restarts at 00:00 (log rotation). The control (faults=False: the
artefacts and the routine) must raise nothing. generator.py gives the reasons.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
from fleet_harness import (
    assert_counters_agree_with_the_records,
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
)
from fleetgen41 import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate
from fleetgen41.generator import TREE_FAMILY

from tracer.schema import RECORD_KEY, SNAPSHOT_KEY, dataset_files, read

# 10 hosts x 6 h from 21:00 (~5 s to build and audit each); the control: the same shape and
# artefacts, the routine only
SHAPE = {"hosts": 10, "hours": 6, "seed": 41}
CONTROL = {"hosts": 10, "hours": 6, "seed": 4141, "faults": False}
# the late host's 23:00-01:00 arrived late: its whole share of the GID fault in part-0001 files
LATE60 = {"hosts": 10, "hours": 6, "seed": 4160, "late_minutes": 60}
fleet41 = audited_fleet("fleet41", generate, package="fleetgen41", **SHAPE)
control41 = audited_fleet("control41", generate, package="fleetgen41", **CONTROL)
late41 = audited_fleet("late41", generate, package="fleetgen41", **LATE60)

KEY = ["host", "trace_id"]
GID, UMR = "gid_rtr_enodata", "umr_mr_efault"
DAY1, DAY2 = "2026-12-14", "2026-12-15"
MIDNIGHT = dt.datetime(2026, 12, 15, tzinfo=dt.UTC)


def _weights(root) -> pl.DataFrame:
    return dataset_events(root).filter(pl.col("seq") == 0).select(
        *KEY, pl.col("repeat_count").fill_null(1).alias("w"))


def _by_file(root, table: str) -> pl.DataFrame:
    """Every row of `table` with the date and the part file it was written in."""
    frames = []
    for f in dataset_files(root, table):
        p = Path(f)
        frames.append(read([f], table).with_columns(pl.lit(p.parent.parent.name.removeprefix("date=")).alias("date"),
                                                      pl.lit(p.name).alias("part")))
    return pl.concat(frames, how="diagonal_relaxed")


# --------------------------------------------------------------------------------------------
# the generator and its data
# --------------------------------------------------------------------------------------------
def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen41", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every family's errno is one the reference
    gives near its origin (rdma_get_gid_attr's ENODATA, mlx5r_umr_update_mr_pas's EFAULT,
    create_cq_user's EOPNOTSUPP); every failing frame of a tree fails with its family's errno."""
    assert_trees_from_the_reference(TREES, FAMILIES, LAYER, TREE_FAMILY)


def test_every_file_validates_and_truth_is_one_row_per_record(fleet41):
    """Events, counters, their summaries and truth validate through tracer.schema; truth has one row
    per record (host, trace_id) and none more, late part files included."""
    root, _, _, _ = fleet41
    assert_files_valid_and_truth_one_row_per_record(root)


def test_counters_agree_with_the_records(fleet41):
    """Per (probe, errno) the counters' failures equal the records' failing frames weighted by
    repeat_count: no snapshot lost at the date boundary, none counted twice."""
    root, _, _, _ = fleet41
    assert_counters_agree_with_the_records(root, FAMILIES)


def test_every_table_has_both_dates_on_every_host(fleet41):
    """Events, counters, counter_buckets and truth each have date=D and date=D+1 for every host; each
    counters row's partition is its snapshot's date; the GID fault's records are on both dates on
    both its hosts, and the routine families on both dates on every host."""
    root, summary, _, _ = fleet41
    hosts = set(summary["hosts"])
    for table in ("events", "counters", "counter_buckets", "truth"):
        got = {(Path(f).parent.parent.name, Path(f).parent.name) for f in dataset_files(root, table)}
        want = {(f"date={d}", f"host={h}") for d in (DAY1, DAY2) for h in hosts}
        assert got == want, (table, want ^ got)
    c = _by_file(root, "counters")
    assert (c["snapshot_time"].dt.date().cast(pl.String) == c["date"]).all()
    ev = _by_file(root, "events").filter(pl.col("seq") == 0)
    straddle = ev.filter(pl.col("start_time").dt.date().cast(pl.String) != pl.col("date"))
    assert straddle.height > 0, "no record of a snapshot closing after midnight entered before it"
    assert set(straddle["date"]) == {DAY2} and (straddle["start_time"] < MIDNIGHT).all()
    truth = _by_file(root, "truth")
    for family, where in ((GID, summary["gid_hosts"]), *((f, summary["hosts"]) for f in ROUTINE)):
        t = truth.filter(pl.col("root_cause") == family)
        for host in where:
            assert set(t.filter(pl.col("host") == host)["date"]) == {DAY1, DAY2}, (family, host)
    umr = truth.filter(pl.col("root_cause") == UMR)
    assert set(umr["date"]) == {DAY2} and set(umr["host"]) == {summary["umr_host"]}


def test_the_late_snapshots_arrive_in_a_second_part_file(fleet41):
    """The late host's snapshots closing 23:55-00:05 are in part-0001 of their own date's partition
    (both dates), with their records and truth rows; part-0000 holds none of that span; nothing is
    in the files twice; no other host has a second part file."""
    root, summary, _, _ = fleet41
    late = summary["late_host"]
    lo, hi = (dt.datetime.fromisoformat(x) for x in summary["late_span"])
    c = _by_file(root, "counters")
    second = c.filter(pl.col("part") == "part-0001.parquet")
    assert set(second["host"]) == {late} and set(second["date"]) == {DAY1, DAY2}
    assert second["snapshot_time"].is_between(lo, hi, closed="left").all()
    first = c.filter((pl.col("host") == late) & (pl.col("part") == "part-0000.parquet"))
    assert not first["snapshot_time"].is_between(lo, hi, closed="left").any()
    assert second.select("snapshot_time").n_unique() >= 100
    assert c.height == c.unique(list(SNAPSHOT_KEY)).height
    ev = _by_file(root, "events")
    assert ev.height == ev.unique(list(RECORD_KEY)).height
    late_ev = ev.filter(pl.col("part") == "part-0001.parquet")
    assert set(late_ev["host"]) == {late} and set(late_ev["date"]) == {DAY1, DAY2}
    tr = _by_file(root, "truth").filter(pl.col("part") == "part-0001.parquet")
    assert tr.select(KEY).sort(KEY).equals(late_ev.filter(pl.col("seq") == 0).select(KEY).sort(KEY))
    assert GID in set(tr["root_cause"].drop_nulls()), "no fault record arrived late"
    assert {Path(f).name for f in dataset_files(root, "counter_buckets")
            if f"host={late}" in str(f)} == {"part-0000.parquet", "part-0001.parquet"}


def test_the_tracer_restarts_at_midnight(fleet41):
    """The restart host has one hole of about 15 s at 00:00, a short first interval after it, and
    no record entered in the hole; its records go on after the restart, the GID fault's among them."""
    root, summary, _, _ = fleet41
    host = summary["restart_host"]
    times = (dataset_counters(root).filter(pl.col("host") == host).select("snapshot_time", "interval_s").unique()
             .sort("snapshot_time").with_columns(pl.col("snapshot_time").diff().alias("gap")))
    holes = times.filter(pl.col("gap") > dt.timedelta(seconds=6))
    assert holes.height == 1, holes
    assert dt.timedelta(seconds=15) <= holes["gap"][0] <= dt.timedelta(seconds=25), holes
    assert holes["interval_s"][0] < 5.0
    assert MIDNIGHT <= holes["snapshot_time"][0] <= MIDNIGHT + dt.timedelta(seconds=25)
    d0, d1 = (dt.datetime.fromisoformat(x) for x in summary["restart_down"])
    roots = roots_with_truth(root).filter(pl.col("host") == host)
    assert not roots["start_time"].is_between(d0, d1).any()
    assert roots.filter((pl.col("root_cause") == GID) & (pl.col("start_time") > d1)).height > 0
    others = dataset_counters(root).filter(pl.col("host") != host).select("host", "snapshot_time").unique()
    gaps = others.sort("host", "snapshot_time").with_columns(pl.col("snapshot_time").diff().over("host").alias("g"))
    assert gaps["g"].max() <= dt.timedelta(seconds=5, milliseconds=1)


def test_every_fatal_cause_ends_its_process_and_routine_goes_on(fleet41):
    """After a cause's record its pid has no later record; after a routine record the same pid often
    has one."""
    root, _, _, _ = fleet41
    roots = roots_with_truth(root).select("host", "pid", "start_time", "root_cause")
    last = roots.group_by("host", "pid").agg(pl.col("start_time").max().alias("last"))
    joined = roots.join(last, on=["host", "pid"])
    fatal = joined.filter(pl.col("root_cause").is_in(list(ROOT_CAUSES)))
    assert fatal.height and (fatal["start_time"] == fatal["last"]).all()
    for family in ROUTINE:
        r = joined.filter(pl.col("root_cause") == family)
        assert (r["start_time"] < r["last"]).mean() >= 0.4, family


# --------------------------------------------------------------------------------------------
# the audit
# --------------------------------------------------------------------------------------------
def _assert_cause_reported(root, result, cause: str) -> set:
    """`cause`'s records are open findings (each record once) with the right bifurcation and origin
    layer, in one cluster that holds nothing else, with its failure weight and host count. Gives
    the cluster's hosts."""
    findings = findings_with_truth(root)
    truth = dataset_truth(root)
    probe, errno, layer = ROOT_CAUSES[cause]
    got = findings.filter(pl.col("root_cause") == cause)
    want = truth.filter(pl.col("root_cause") == cause).height
    assert got.height == want, (cause, f"{got.height} findings for {want} records")
    assert not got["expected"].fill_null(False).any(), (cause, "set aside as routine")
    ids = set(got["cluster_id"].to_list())
    assert len(ids) == 1 and None not in ids, (cause, f"spread over clusters {ids}")
    (cid,) = ids
    members = findings.filter(pl.col("cluster_id") == cid)
    assert set(members["root_cause"].to_list()) == {cause}, (cause, set(members["root_cause"].to_list()))
    assert set(zip(got["bifurcation_probe"], got["bifurcation_errno"], got["origin_layer"], strict=True)) == {
        (probe, errno, layer)}, cause
    row = result.clusters.filter(pl.col("cluster_id") == cid).row(0, named=True)
    failures = got.select(KEY).unique().join(_weights(root), on=KEY)["w"].sum()
    assert row["failures"] == failures and row["hosts"] == got["host"].n_unique(), (cause, failures, row)
    assert row["origin_layer"] == layer and f"{probe} {errno}" in row["signature"], (cause, row)
    return set(members["host"])


def test_the_midnight_fault_is_one_cluster_naming_both_hosts(fleet41):
    """The GID fault, 23:40-00:40 across the date boundary, the late part files and the restart: one
    cluster of its own at rdma_get_gid_attr ENODATA (core), both its hosts, records of both dates."""
    root, summary, result, _ = fleet41
    assert _assert_cause_reported(root, result, GID) == set(summary["gid_hosts"])
    got = findings_with_truth(root).filter(pl.col("root_cause") == GID)
    dates = _by_file(root, "truth").select(*KEY, "date")
    assert set(got.join(dates, on=KEY)["date"]) == {DAY1, DAY2}
    assert got["time"].min() < MIDNIGHT < got["time"].max(), (got["time"].min(), got["time"].max())
    cid = got["cluster_id"][0]
    row = result.clusters.filter(pl.col("cluster_id") == cid).row(0, named=True)
    lo, hi = (dt.datetime.fromisoformat(x) for x in summary["gid_fault"])
    assert lo <= row["first_seen"] < MIDNIGHT < row["last_seen"] <= hi + dt.timedelta(seconds=10), row


def test_the_after_midnight_fault_is_one_cluster_on_its_host(fleet41):
    """reg_mr EFAULT at mlx5r_umr_update_mr_pas (driver) on the UMR host, 01:30-01:50: one cluster."""
    root, summary, result, _ = fleet41
    assert _assert_cause_reported(root, result, UMR) == {summary["umr_host"]}


def _assert_routine_set_aside(root) -> None:
    findings = findings_with_truth(root)
    truth = dataset_truth(root)
    for family in ROUTINE:
        want = truth.filter(pl.col("root_cause") == family).height
        got = findings.filter(pl.col("root_cause") == family)
        open_ = got.filter(~pl.col("expected").fill_null(False))
        assert want > 0 and got.height == want and open_.height == 0, (
            family, want, got.height, open_.height, open_.group_by("host").len().sort("host").rows())
        assert got["cluster_id"].is_null().all(), (family, "a routine record was clustered")


def test_the_routine_is_set_aside_on_both_sides_of_midnight(fleet41):
    """Every routine record -- the compression refusal, the empty GID slots (the fault hosts' slot 3
    during the fault included) -- is set aside and in no cluster."""
    root, _, _, _ = fleet41
    _assert_routine_set_aside(root)


def _acceptable_alerts(summary) -> dict[str, set]:
    acceptable: dict[str, set] = {}
    for cause, (_, errno, _) in ROOT_CAUSES.items():
        frames = {fn for name, (_, _, fr) in TREES.items() if TREE_FAMILY.get(name) == cause
                  for _, fn, e in fr if e == errno}
        for h in summary["family_hosts"].get(cause, []):
            acceptable.setdefault(h, set()).update({(fn, errno) for fn in frames} | {(fn, None) for fn in frames})
    return acceptable


def test_no_host_alert_off_a_causes_frames(fleet41):
    """An alert is acceptable only on a cause's host at a frame failing with the cause's errno: none
    for a routine family elsewhere, none for the late or the restart host's artefacts alone."""
    _, summary, result, _ = fleet41
    acceptable = _acceptable_alerts(summary)
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    false = [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())]
    assert not false, false


def test_every_cause_is_found(fleet41):
    """Perfect scores: each cause detected on every record, none set aside; both routine families
    set aside; one cluster per cause and none more."""
    _, _, result, scores = fleet41
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] > 0 and e["set_aside_as_expected"] == 0, (cause, e)
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0 and e["open_findings"] == 0, (family, e)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_control_fleet_raises_nothing(control41):
    """Midnight, the late part files, the restart and the routine alone: no cluster, no alert, no
    open finding."""
    root, summary, result, scores = control41
    assert set(summary["counts"]) == set(ROUTINE), summary["counts"]
    assert {Path(f).name for f in dataset_files(root, "events")} == {"part-0000.parquet", "part-0001.parquet"}
    opened = findings_with_truth(root).filter(~pl.col("expected").fill_null(False))
    assert opened.height == 0, opened.group_by("root_cause", "host", "bifurcation_probe", "bifurcation_errno").len()
    assert result.clusters.height == 0, result.clusters
    assert result.host_alerts.height == 0, result.host_alerts
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0


def test_an_hour_late_every_cause_found(late41):
    """The late host's snapshots of 23:00-01:00 all in part-0001 files of both dates (its whole share
    of the GID fault there): the GID fault is still one cluster naming both hosts, the UMR fault its
    own, the routine set aside, no alert off a cause's frames, perfect scores."""
    root, summary, result, scores = late41
    late = summary["late_host"]
    tr = _by_file(root, "truth")
    gid_late = tr.filter((pl.col("root_cause") == GID) & (pl.col("host") == late))
    assert set(gid_late["part"]) == {"part-0001.parquet"} and set(gid_late["date"]) == {DAY1, DAY2}
    assert _assert_cause_reported(root, result, GID) == set(summary["gid_hosts"])
    assert _assert_cause_reported(root, result, UMR) == {summary["umr_host"]}
    _assert_routine_set_aside(root)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    acceptable = _acceptable_alerts(summary)
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())], rows
    assert_every_cause_found(scores, ROOT_CAUSES)

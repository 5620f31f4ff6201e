"""The audit scored on tests/fleetgen37, a thirty-seventh fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' docstrings; without reading the simulator, the
other generators, or the audit).

What it is for: SLOW DRIFT OVER A LONG WINDOW. 9 mlx5 RoCE hosts for 40 hours (two nights, two
days), few calls an interval. A pinned-memory leak on one host from 06:00 of the first day (ENOMEM
at ib_umem_get under mlx5_ib_reg_user_mr: almost never that morning, most registrations by the
second day's morning, fatal to the rank); a routine family with a day/night rhythm (the nightly
batch jobs' many QPs hitting the rdma cgroup's hca_object limit: EAGAIN at ib_rdmacg_try_charge,
retried through, several times the day rate at night on every host); a routine family present only
on the second day (a new inference job type asking create_cq for CQE compression the NIC lacks:
EOPNOTSUPP at create_cq_user, the CQ created again without); one short sharp fault on another host
(an hour of firmware command timeouts: ETIMEDOUT at mlx5_cmd_exec under ALLOC_PD, CREATE_QP and the
modify commands, fatal). The audit must report the leak (its own cluster; an alert, if any, on the
leak's host at its frames) and the sharp fault, set both routine families aside with no finding
and no alert, and raise nothing on the control fleet (faults=False: the rhythm and the routine).
generator.py gives the reasons.
"""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
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
from fleetgen37 import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate
from fleetgen37.generator import TREE_FAMILY

# 9 hosts x 40 h (~4 s to build, <1 s to audit); the control: 9 hosts x 40 h, the rhythm and the
# routine only; the upper end: 10 hosts x 48 h (two full days), the same roles by index
SHAPE = {"hosts": 9, "hours": 40, "seed": 37}
CONTROL = {"hosts": 9, "hours": 40, "seed": 3737, "faults": False}
BIG = {"hosts": 10, "hours": 48, "seed": 3748}
# two more 36-hour fleets, the same generator and roles, other seeds: what the audits of other
# seeds pointed at (below)
SEED36 = {"hosts": 9, "hours": 36, "seed": 36}
CONTROL_B = {"hosts": 9, "hours": 36, "seed": 3, "faults": False}
fleet37 = audited_fleet("fleet37", generate, package="fleetgen37", **SHAPE)
seed37b = audited_fleet("seed37b", generate, package="fleetgen37", **SEED36)
control37b = audited_fleet("control37b", generate, package="fleetgen37", **CONTROL_B)
control37 = audited_fleet("control37", generate, package="fleetgen37", **CONTROL)
big37 = audited_fleet("big37", generate, package="fleetgen37", **BIG)

# Found on the audits of other seeds (written down as found; the truth and the data unchanged):
# at SHAPE (and seeds 1, 2, 4, 5) every cause is found and both routine families are set aside,
# but at 9 hosts x 36 h seed 36 the night's EAGAIN at ib_rdmacg_try_charge (366 records, 9 hosts)
# is not learned: every record an open finding, one cluster "create_qp: ib_rdmacg_try_charge
# EAGAIN" over the 9 hosts; on the control CONTROL_B (no fault at all) so are both routine
# families: the EAGAIN (320 records, 9 hosts) and the second day's EOPNOTSUPP at create_cq_user
# (120 records, 9 hosts, named "jobs share job_type=serve"), two clusters on a fleet with no fault
# (also 8 hosts x 40 h seed 6, faults=False: the EAGAIN clustered). Every one of those ranks went
# on (the generator: 22-48 later calls each, 4-16 of them in the same capture window), but a
# batch job's start-up makes 24 create_qp and 24 of each transition within a second, past the
# tracer's 12 good trees of a shape a window, so the ranks' calls after the retry are not recorded
# and only 63-73 % of the timed EAGAIN records show a later record of their pid (where it is
# learned: 77-100 %); the serve family had no timed record at all on CONTROL_B (40 jobs). A guess
# (the audit unread): the learner's survival judgement (docs/architecture.md: "judged on the
# traces timed in capture windows when there are enough of them") reads a process unseen after a
# window whose good trees of that shape hit the sampling cap as dead, where it is censored; EAGAIN
# ("tells the caller what to do next") and EOPNOTSUPP on every host of the fleet then stay open.

# Round twenty-nine, as found (not fixed): on SEED36 the learner's candidate row for (create_qp,
# ib_rdmacg_try_charge, EAGAIN) has 23 timed traces, 7 of them "failing" (no later record of the
# process), so P(fail | EAGAIN) 0.30 against 0.047 for the probe and an Increase lower bound of
# 0.08 > max_increase 0.05: the ranks' later calls were sampled out of a window, which the
# records cannot tell from a death. Telling them apart needs the window's sampling in the data
# (how many good trees of a shape the tracer dropped), which the schema does not carry.
SAMPLED_OUT = ("a batch start-up's burst fills the capture window past the sampling of good trees: ranks that "
               "retried create_qp's EAGAIN (and created CQs without compression) and went on show no later "
               "record in 27-37 % of timed occurrences, read as deaths (Increase lower bound 0.08 > 0.05); open")

KEY = ["host", "trace_id"]
LEAK, FW = "pinned_leak_enomem", "fw_cmd_timeout"
EAGAIN, COMP = "night_cgroup_eagain", "serve_cq_comp_refused"


def _meta(key: str) -> pl.Expr:
    return pl.col("metadata").list.eval(
        pl.element().filter(pl.element().struct.field("key") == key).struct.field("value")).list.first().alias(key)


def _night(col: str = "snapshot_time") -> pl.Expr:
    h = pl.col(col).dt.hour()
    return ((h >= 22) | (h < 6)).alias("night")


# --------------------------------------------------------------------------------------------
# the generator and its data
# --------------------------------------------------------------------------------------------
def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen37", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every family's errno is one the reference
    gives near its origin (mlx5_cmd_exec's ETIMEDOUT from the errno_conventions' firmware mapping);
    every failing frame of a tree fails with its family's errno, and the family's origin is one of
    them."""
    assert_trees_from_the_reference(TREES, FAMILIES, LAYER, TREE_FAMILY)


def test_every_file_validates_and_truth_is_one_row_per_record(fleet37):
    """Events, counters, their summaries and truth validate through tracer.schema; truth has one
    row per record (host, trace_id) and none more; every counters file's summary matches it."""
    root, _, _, _ = fleet37
    assert_files_valid_and_truth_one_row_per_record(root)


def test_counters_agree_with_the_records(fleet37):
    """Per (probe, errno) the counters' failures equal the records' failing frames, each weighted
    by its record's repeat_count: every failure is recorded (none lost)."""
    root, _, _, _ = fleet37
    assert_counters_agree_with_the_records(root, FAMILIES)


def _reg_mr_failure_share(root, host: str) -> pl.DataFrame:
    """Per 4 hours of the window: the share of the host's reg_mr calls failing ENOMEM at ib_umem_get."""
    c = dataset_counters(root).filter((pl.col("host") == host) & (pl.col("probe") == "ib_umem_get"))
    reg = dataset_counters(root).filter((pl.col("host") == host) & (pl.col("probe") == "mlx5_ib_reg_user_mr"))
    enomem = c.select("snapshot_time", pl.col("errno_counts").list.eval(
        pl.element().filter(pl.element().struct.field("errno") == "ENOMEM").struct.field("count")).list.sum()
        .fill_null(0).alias("enomem"))
    both = reg.select("snapshot_time", "invocations").join(enomem, on="snapshot_time")
    return (both.group_by(pl.col("snapshot_time").dt.truncate("4h").alias("block"))
            .agg(pl.col("enomem").sum(), pl.col("invocations").sum()).sort("block")
            .with_columns((pl.col("enomem") / pl.col("invocations")).alias("share")))


def test_the_leak_drifts_up_over_a_day(fleet37):
    """The angle in the data: on the leak's host the share of registrations failing ENOMEM is nil
    before the agent's update, a few % its first day, most of them by the second day's morning --
    rising block after block; no other host ever fails a registration."""
    root, summary, _, _ = fleet37
    share = _reg_mr_failure_share(root, summary["leak_host"])
    leak_start = dt.datetime.fromisoformat(summary["leak_start"])
    before = share.filter(pl.col("block") + dt.timedelta(hours=4) <= leak_start)
    assert before["enomem"].sum() == 0
    after = share.filter(pl.col("block") + dt.timedelta(hours=4) > leak_start)["share"].to_list()
    assert after[0] < 0.05 and max(after[-3:]) > 0.6, after
    assert sum(b >= a - 0.1 for a, b in zip(after, after[1:], strict=False)) >= len(after) - 2, after
    roots = roots_with_truth(root)
    assert set(roots.filter(pl.col("root_cause") == LEAK)["host"]) == {summary["leak_host"]}


def test_the_night_rhythm_and_the_second_days_family(fleet37):
    """Without a fault the EAGAIN's rate follows the night: per create_qp, at night several times
    the day's on every host; the compression refusal only from the serve jobs' start on the second
    day, on every host, by serve jobs only; the firmware timeouts within their one hour on their
    one host."""
    root, summary, _, _ = fleet37
    c = dataset_counters(root).filter(pl.col("probe") == "ib_rdmacg_try_charge").with_columns(_night())
    qp = dataset_counters(root).filter(pl.col("probe") == "ib_uverbs_create_qp").select(
        "host", "snapshot_time", pl.col("invocations").alias("qp"))
    c = c.join(qp, on=["host", "snapshot_time"])
    rates = (c.group_by("host", "night").agg(pl.col("failures").sum(), pl.col("qp").sum())
             .with_columns((pl.col("failures") / pl.col("qp")).alias("rate")))
    for host in summary["hosts"]:
        r = dict(rates.filter(pl.col("host") == host).select("night", "rate").iter_rows())
        assert r[True] >= 3 * r[False] and r[True] > 0, (host, r)
    fleet = dict(rates.group_by("night").agg(pl.col("failures").sum() / pl.col("qp").sum()).iter_rows())
    assert fleet[True] >= 3 * fleet[False] > 0, fleet
    roots = roots_with_truth(root).with_columns(_meta("job_type"))
    comp = roots.filter(pl.col("root_cause") == COMP)
    assert (comp["start_time"] >= dt.datetime.fromisoformat(summary["serve_start"])).all()
    assert set(comp["job_type"]) == {"serve"} and set(comp["host"]) == set(summary["hosts"])
    fw = roots.filter(pl.col("root_cause") == FW)
    assert set(fw["host"]) == {summary["fw_host"]} and fw.height >= 10
    assert (fw["start_time"] >= dt.datetime.fromisoformat(summary["fw_start"])).all()
    assert (fw["start_time"] <= dt.datetime.fromisoformat(summary["fw_end"]) + dt.timedelta(minutes=2)).all()
    assert set(fw["command"]) >= {"create_qp", "modify_qp"}


def test_every_fatal_cause_ends_its_process_and_routine_goes_on(fleet37):
    """The truth's reason in the data: after a root cause's record its pid has no later record;
    after each routine family's record the same pid often has a later one (good calls are recorded
    only in capture windows, 5 % of the time, so a rank that goes on shows it only when one of its
    later calls falls in a window or fails: about half of them here)."""
    root, _, _, _ = fleet37
    roots = roots_with_truth(root).select("host", "pid", "ts_ns", "root_cause")
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
    # a cluster counts the failures its records stand for (repeat_count: K=3 a signature a snapshot)
    weight = dataset_events(root).filter(pl.col("seq") == 0).select(*KEY, pl.col("repeat_count").fill_null(1).alias("w"))
    failures = got.select(KEY).join(weight, on=KEY)["w"].sum()
    assert row["failures"] == failures and row["hosts"] == got["host"].n_unique(), (cause, failures, row)
    assert row["origin_layer"] == layer and f"{probe} {errno}" in row["signature"], (cause, row)


def test_the_leak_is_reported_as_a_rising_cluster(fleet37):
    """The pinned-memory leak: ENOMEM at ib_umem_get on its one host, every record from the first
    rare one on the first day to the crash loop of the second, in one cluster of its own, its
    trend rising (a day's drift, not a step)."""
    root, summary, result, _ = fleet37
    _assert_cause_reported(root, result, LEAK)
    cid = findings_with_truth(root).filter(pl.col("root_cause") == LEAK)["cluster_id"][0]
    row = result.clusters.filter(pl.col("cluster_id") == cid).row(0, named=True)
    assert row["trend"] == "rising", row


def test_the_leak_is_found_by_a_cluster_or_an_alert_naming_its_host(fleet37):
    """The brief's minimum: the leak's host is named, by the leak's cluster (its findings there)
    or by an alert at a frame its records fail at."""
    root, summary, result, _ = fleet37
    f = findings_with_truth(root).filter((pl.col("root_cause") == LEAK) & pl.col("cluster_id").is_not_null())
    by_cluster = summary["leak_host"] in set(f["host"])
    by_alert = any(r[0] == summary["leak_host"] for r in _alerts_at_cause_frames(summary, result))
    assert by_cluster or by_alert


def test_the_firmware_timeout_hour_is_reported(fleet37):
    """One host's hour of firmware command timeouts: ETIMEDOUT at mlx5_cmd_exec under ALLOC_PD,
    CREATE_QP and the modify commands -- one host-local fault, one cluster."""
    root, _, result, _ = fleet37
    _assert_cause_reported(root, result, FW)


def test_every_cause_is_found(fleet37):
    """Perfect scores: each cause detected on every record, none set aside; the routine families
    all set aside; one cluster per cause and none more."""
    _, _, result, scores = fleet37
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


def test_the_night_and_second_day_routine_set_aside(fleet37):
    """Every routine record -- the night's EAGAIN, the second day's compression refusal -- is set
    aside and in no cluster."""
    root, _, _, _ = fleet37
    _assert_routine_set_aside(root)


def _acceptable_alerts(summary) -> dict[str, set]:
    """host -> the (probe, errno) an alert there may name: a cause's errno (or none, a bad state
    named by its probe) at a frame its records fail at."""
    acceptable: dict[str, set] = {}
    for cause, (_, errno, _) in ROOT_CAUSES.items():
        frames = {fn for name, (_, _, fr) in TREES.items() if TREE_FAMILY.get(name) == cause
                  for _, fn, e in fr if e == errno}
        for h in summary["family_hosts"].get(cause, []):
            acceptable.setdefault(h, set()).update({(fn, errno) for fn in frames} | {(fn, None) for fn in frames})
    return acceptable


def _alerts_at_cause_frames(summary, result) -> list:
    acceptable = _acceptable_alerts(summary)
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    return [r for r in rows if (r[2], r[3]) in acceptable.get(r[0], set())]


def test_no_host_alert_for_the_rhythm_or_the_new_family(fleet37):
    """No host alert names a routine family's (probe, errno) -- the EAGAIN rises every night on
    every host, the compression refusal appears on every host on the second day; an alert is
    acceptable only on a cause's host at a frame failing with the cause's errno."""
    _, summary, result, _ = fleet37
    routine = {(p, e) for p, e, _ in ROUTINE.values()}
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) in routine], rows
    acceptable = _acceptable_alerts(summary)
    false = [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())]
    assert not false, false


def test_control_fleet_raises_nothing(control37):
    """The night rhythm and the second day's new job type alone: no cluster, no alert, no open
    finding."""
    root, summary, result, scores = control37
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


def test_two_day_fleet_every_cause_found(big37):
    """The larger variant (10 hosts, 48 h: two full days and nights, the timeout hour in the
    second day's afternoon): each cause in its own cluster, the routine set aside, no alert off a
    cause's frames."""
    root, summary, result, scores = big37
    for cause in ROOT_CAUSES:
        _assert_cause_reported(root, result, cause)
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0 and e["open_findings"] == 0, (family, e)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    acceptable = _acceptable_alerts(summary)
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())], rows
    assert_every_cause_found(scores, ROOT_CAUSES)


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


@pytest.mark.xfail(strict=True, reason=SAMPLED_OUT)
def test_control_fleet_of_another_seed_raises_nothing(control37b):
    """The same control on another seed (9 hosts, 36 h): the night rhythm and the second day's job
    type alone raise nothing."""
    _assert_control_raises_nothing(*control37b)


@pytest.mark.xfail(strict=True, reason=SAMPLED_OUT)
def test_another_seed_every_cause_found_and_routine_set_aside(seed37b):
    """9 hosts x 36 h, seed 36: each cause in its own cluster, both routine families set aside,
    no alert off a cause's frames."""
    root, summary, result, scores = seed37b
    for cause in ROOT_CAUSES:
        _assert_cause_reported(root, result, cause)
    _assert_routine_set_aside(root)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    acceptable = _acceptable_alerts(summary)
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())], rows
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_a_timed_retry_unseen_after_sits_in_a_capped_window(seed37b):
    """The data behind the finding above: every timed EAGAIN record whose pid has no later record
    is in a capture window that already holds the tracer's 12 good create_qp trees of its host (a
    batch start-up's burst): its rank's calls after the retry were sampled out, not absent."""
    root, _, _, _ = seed37b
    roots = roots_with_truth(root)
    last = roots.group_by("host", "pid").agg(pl.col("ts_ns").max().alias("last"))
    timed = (roots.filter((pl.col("root_cause") == EAGAIN) & pl.col("latency_ns").is_not_null())
             .join(last, on=["host", "pid"]))
    unseen = timed.filter(pl.col("ts_ns") == pl.col("last"))
    assert unseen.height, "every timed retry shows a later record"
    good_qp = roots.filter((pl.col("kind") == "good") & (pl.col("command") == "create_qp")).select("host", "start_time")
    for host, t in unseen.select("host", "start_time").iter_rows():
        near = good_qp.filter((pl.col("host") == host) & ((pl.col("start_time") - t).abs() <= dt.timedelta(seconds=30)))
        assert near.height >= 12, (host, t, near.height)

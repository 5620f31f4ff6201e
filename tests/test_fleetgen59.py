"""The audit scored on tests/fleetgen59, a fifty-ninth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' docstrings; without reading the simulator, the
other generators' code, or the audit).

What it is for: A FAULT THAT MOVES WITH A JOB, BESIDE ONE THAT STAYS WITH A HOST
(tests/fleetgen59/__init__.py has the fleet and the truth's decisions). 24 mlx5 hosts for 6 hours.
Tenant heron's job 7741902 (job_name heron-ft-70b) asks to pin more memory than any host allows
(reg_mr ENOMEM at ib_umem_get, every rank at its first registration); its launcher relaunches the
ranks every ~2 minutes, and every 15-22 minutes the scheduler requeues it (same job id) onto the
next host: 14 hosts visited once each over ~4.5 hours, each fine before and after (its own jobs'
reg_mr succeed). Beside it gpu-24's firmware times out every CREATE_CQ for two hours (ETIMEDOUT
at mlx5_cmd_do, 02:07:40-04:07:40), and a routine ARP timeout at INIT->RTR (4 % of the calls,
retried through) runs everywhere.

What the docs promise (README.md, docs/architecture.md: host alerts, passing bursts, clusters and
their shared metadata, the counters' bucket rule tracer.schema.BUCKET_OF):
  * "A run of two or three bad buckets the host recovered from (it calls the probe successfully
    again) is a passing burst: no host alert -- nor a rising_errno_rate for an error whose every
    failing bucket is in that burst ... (a tenant's job crash-looping on one host for twenty
    minutes reads the same in the counters as a twenty-minute firmware outage there)", and "a
    cause more than 3 hosts fail alike within an hour ... (a tenant's jobs crash-looping from
    host to host ...) is left to the clusters": no alert on any host the job visited;
  * "a persistent bad state needs a run of 4 or more 15-minute buckets (an hour) in each of which
    a probe failed on most of its calls (half of them or more ...), 3 times a bucket or more over
    the run": gpu-24's alert, naming ETIMEDOUT, since the first bucket of its run (EXPECTED_SINCE);
  * clusters "by kernel-side signature", and "A cluster over two hosts or more whose hosts all
    show one job-metadata value, and hold at least 75 % of the hosts showing it, says so": the
    moving fault is one cluster over its 14 hosts saying they share job_name=heron-ft-70b (14 of
    14); its `jobs` is the one job (a requeue keeps the job id, so the "jobs share" statement,
    which needs 3 failing jobs or more, does not apply);
  * an error is learned where it originates and set aside when processes go on after it: the
    routine family set aside on every host; every record of a cause found, none set aside;
    evaluate's false_findings_on_good == 0.
What the audit gets wrong is a strict xfail naming what it wrote (KNOWN_MISSES).
"""

from __future__ import annotations

import datetime as dt
import functools

import polars as pl
import pytest
from fleet_harness import (
    assert_counters_agree_with_the_records,
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
    strict_xfails,
)
from fleetgen59 import (
    FAMILIES,
    FW_FROM,
    FW_HOST,
    FW_TO,
    HOSTS,
    LAYER,
    MOVING_JOB,
    MOVING_NAME,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    VISITS,
    generate,
)

from tracer.schema import read, snapshot_bucket

CAUSES = tuple(ROOT_CAUSES)
BUCKET = dt.timedelta(minutes=15)
VISITED = [h for h, _, _ in VISITS]
QUIET = sorted(set(HOSTS) - set(VISITED) - {FW_HOST})
FW_CHAIN = {fn for _, fn, e in TREES["create_cq_fw_timeout"][2] if e}

# 24 hosts x 6 h, ~15,000 records, ~550,000 counters rows (~3 CPU s to build, ~1 to audit)
fleet59 = audited_fleet("fleet59", generate, package="fleetgen59", seed=59)

# The bucket gpu-24's alert must start in, by the docs' rule on its counters (BUCKET_OF: a row's
# bucket is the one its 30 s interval, ending at snapshot_time, ends in). Only CREATE_CQ calls
# mlx5_cmd_do here. The fault begins at 02:07:40, counted by the 02:08:07 snapshot: bucket 02:00.
# That bucket holds the host's 02:05 job's 4 good CREATE_CQs and the crash loop's first three
# launches (02:07:40, 02:10:40, 02:13:40: 12 failures): most calls failed, a bad bucket. Every
# bucket to 04:00 fails every call but 04:00 (04:01:40, 04:04:40 fail: 8; 04:07:40 succeeds:
# 4 calls): 8 of 12, bad. So the run is 02:00-04:00 (9 buckets), since 02:00.
EXPECTED_SINCE = {FW_HOST: dt.datetime(2026, 11, 10, 2, 0, tzinfo=dt.UTC)}

# What the audit gets wrong, as strict xfails: test name (or name[param]) -> what it wrote.
KNOWN_MISSES: dict[str, str] = {}


known, _params = strict_xfails(KNOWN_MISSES)


def _audit(root, table: str) -> pl.DataFrame:
    return read(root / "audit" / f"{table}.parquet", table)


def _utc(v: dt.datetime) -> dt.datetime:
    return v if v.tzinfo else v.replace(tzinfo=dt.UTC)


def _bucket(t: dt.datetime) -> dt.datetime:
    """The bucket of the snapshot counting a call at `t` (snapshots at :07 and :37)."""
    minute = t.replace(second=0, microsecond=0)
    snap = next(s for s in (minute + dt.timedelta(seconds=x) for x in (7, 37, 67)) if s >= t)
    end = snap - dt.timedelta(microseconds=1)
    return end.replace(minute=end.minute - end.minute % 15, second=0, microsecond=0)


@functools.cache
def _all_cells(root) -> pl.DataFrame:
    """(host, probe, bucket, calls n, failures f) of the counters, by BUCKET_OF."""
    return (dataset_counters(root).with_columns(snapshot_bucket())
            .group_by("host", "probe", "bucket").agg(pl.col("invocations").clip(lower_bound=0).sum().alias("n"),
                                                     pl.col("failures").sum().alias("f"))
            .sort("bucket"))


def _cells(root, host: str, probe: str) -> pl.DataFrame:
    """(bucket, calls n, failures f) of one host's probe."""
    return _all_cells(root).filter((pl.col("host") == host) & (pl.col("probe") == probe)).select("bucket", "n", "f")


def _bad_runs(root, host: str, probe: str) -> list[list[tuple[dt.datetime, int]]]:
    """Runs of the docs' bad buckets (failed on half the calls or more, at least once), 15 min apart."""
    runs: list[list[tuple[dt.datetime, int]]] = []
    for t, n, f in _cells(root, host, probe).iter_rows():
        if f >= 1 and 2 * f >= n:
            if runs and runs[-1][-1][0] + BUCKET == t:
                runs[-1].append((t, f))
            else:
                runs.append([(t, f)])
    return runs


def _bucket_rule_since(root, host: str, probe: str) -> dt.datetime | None:
    """The docs' persistent-bad-state rule: a run of 4+ bad buckets with 3+ failures over it, or
    2+ when it reaches the host's last bucket; of several the longest. The run's first bucket."""
    last = _all_cells(root).filter(pl.col("host") == host)["bucket"].max()
    alerting = [r for r in _bad_runs(root, host, probe)
                if (len(r) >= 4 or (len(r) >= 2 and r[-1][0] == last)) and sum(f for _, f in r) >= 3]
    if not alerting:
        return None
    return _utc(max(alerting, key=lambda r: (len(r), sum(f for _, f in r), r[0][0]))[0][0])


# ------------------------------------------------------------------------------------------------
# the generator
# ------------------------------------------------------------------------------------------------
def test_generator_is_blind():
    assert_generator_is_blind("fleetgen59", tracer_modules={"tracer.schema"})


def test_trees_from_the_reference():
    """Every function in the reference; each family's errno one the reference gives at its origin
    (mlx5_cmd_do: mlx5_core_create_cq's firmware call, whose errors are cmd_status_to_err's and
    the firmware transport's -ETIMEDOUT: errno_conventions); failing frames fail with it."""
    assert_functions_in_reference({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
    for key, (probe, errno, layer) in FAMILIES.items():
        assert_errno_from_reference(key, probe, errno, firmware=("mlx5_cmd_exec", "mlx5_cmd_do"))
        assert LAYER[probe] == layer, key
    for name, (_, _, frames) in TREES.items():
        failing = {(fn, e) for _, fn, e in frames if e}
        if failing:
            probe, errno, _ = FAMILIES[TREE_FAMILY[name]]
            assert (probe, errno) in failing and {e for _, e in failing} == {errno}, name
        else:
            assert name not in TREE_FAMILY, name


def test_files_valid_and_truth_one_row_per_record(fleet59):
    root, summary, _, _ = fleet59
    assert_files_valid_and_truth_one_row_per_record(root)
    truth = dataset_truth(root)
    assert set(truth["root_cause"].drop_nulls()) == set(FAMILIES)
    assert sorted(truth["host"].unique()) == sorted(HOSTS) == sorted(summary["hosts"])
    assert truth.height == summary["records"]
    assert [h for h, _, _ in summary["visits"]] == VISITED  # the module's VISITS are this shape's (seed 59)
    assert truth.filter(pl.col("held_out")).height > 100
    for family in FAMILIES:
        own = truth.filter(pl.col("root_cause") == family)
        assert own.height and (own["expected_error"] == (family in ROUTINE)).all(), family
    assert set(truth.filter(pl.col("root_cause") == "job_memlock_enomem")["host"]) == set(VISITED)
    assert set(truth.filter(pl.col("root_cause") == "cq_fw_timeout")["host"]) == {FW_HOST}
    assert set(truth.filter(pl.col("root_cause") == "arp_timeout_retried")["host"]) == set(HOSTS)


def test_counters_agree_with_the_records(fleet59):
    root, _, _, _ = fleet59
    assert_counters_agree_with_the_records(root, FAMILIES)


def test_the_fault_moves_with_the_job(fleet59):
    """The theme as the data holds it: every ENOMEM record is job 7741902's (job_name
    heron-ft-70b, one job id across requeues); it stays 15-22 minutes a host, on 14 hosts one
    after another, never two at once; a visited host's other jobs registered memory fine before
    and after its visit, and the job's ranks died (no call of a rank after its failure)."""
    root, _, _, _ = fleet59
    roots = dataset_events(root).filter(pl.col("seq") == 0)
    bad = roots.filter(pl.col("errno") == "ENOMEM")
    assert set(bad["job_id"]) == {MOVING_JOB}
    assert {m for md in bad["metadata"].to_list() for m in [dict((p["key"], p["value"]) for p in md)]
            if m["job_name"] != MOVING_NAME} == set()
    spans = bad.group_by("host").agg(pl.col("start_time").min().alias("a"), pl.col("start_time").max().alias("b")) \
        .sort("a")
    assert spans["host"].to_list() == VISITED and len(set(VISITED)) == 14
    for (h, a, b), nxt in zip(spans.iter_rows(), [*spans["a"].to_list()[1:], None], strict=True):
        assert dt.timedelta(minutes=12) <= b - a <= dt.timedelta(minutes=22), (h, a, b)
        assert nxt is None or nxt > b, h
        others = roots.filter((pl.col("host") == h) & (pl.col("command") == "reg_mr") & pl.col("errno").is_null()
                              & (pl.col("job_id") != MOVING_JOB))
        assert others.filter(pl.col("start_time") < a).height > 0, h
        assert others.filter(pl.col("start_time") > b).height > 0, h
    later = roots.join(bad.select("host", "pid", pl.col("start_time").alias("died")), on=["host", "pid"]) \
        .filter(pl.col("start_time") > pl.col("died"))
    assert later.height == 0


@pytest.mark.parametrize("host", VISITED)
def test_each_visit_a_passing_burst_in_the_counters(fleet59, host):
    """On each visited host the job's stay makes one to three bad buckets of ib_uverbs_reg_mr
    (it failed on most of its calls), after which the host calls it successfully again: by the
    docs' rule a passing burst, no persistent bad state at any probe of the chain."""
    root, _, _, _ = fleet59
    runs = _bad_runs(root, host, "ib_uverbs_reg_mr")
    assert len(runs) == 1 and 1 <= len(runs[0]) <= 3, runs
    cells = _cells(root, host, "ib_uverbs_reg_mr")
    failing = cells.filter(pl.col("f") > 0)
    assert failing.height <= 3 and failing["bucket"].max() - failing["bucket"].min() <= 2 * BUCKET, failing
    after = cells.filter((pl.col("bucket") > failing["bucket"].max()) & (pl.col("n") > 0))
    assert after.height and after["f"].sum() == 0, after
    for probe in ("ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "ib_umem_get"):
        assert _bucket_rule_since(root, host, probe) is None, probe


def test_the_bucket_rule_names_the_staying_fault_bucket(fleet59):
    root, _, _, _ = fleet59
    assert _bucket_rule_since(root, FW_HOST, "mlx5_cmd_do") == EXPECTED_SINCE[FW_HOST]
    run = max(_bad_runs(root, FW_HOST, "mlx5_cmd_do"), key=len)
    assert len(run) == 9 and sum(f for _, f in run) == 160
    assert _bucket(FW_FROM) == EXPECTED_SINCE[FW_HOST] and _bucket(FW_TO) == run[-1][0]


# ------------------------------------------------------------------------------------------------
# the audit: findings and clusters
# ------------------------------------------------------------------------------------------------
@known
@pytest.mark.parametrize("cause", CAUSES)
def test_every_record_of_the_cause_found(fleet59, cause):
    """Every record of the cause open (none set aside), its origin as bifurcation and its layer."""
    root, _, _, scores = fleet59
    e = scores["per_root_cause"][cause]
    assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, e
    assert e["bifurcation_top1"] == 1.0 and e["origin_layer_top1"] == 1.0, e
    findings = findings_with_truth(root).filter(pl.col("root_cause") == cause)
    truth = dataset_truth(root).filter(pl.col("root_cause") == cause)
    assert findings.height == truth.height and not findings["expected"].any()
    probe, errno, _ = FAMILIES[cause]
    assert set(findings["bifurcation_probe"]) == {probe} and set(findings["bifurcation_errno"]) == {errno}


@known
def test_the_moving_fault_is_one_cluster_naming_the_job(fleet59):
    """The job's failures on 14 hosts: one cluster of their own, over the 14 hosts, one job; it
    says its hosts share job_name=heron-ft-70b (14 of 14 hosts with it: every host that showed
    the value is the cluster's, and no fleet-wide value -- tenant=heron, shown on all 24 hosts,
    14 of them the cluster's, 58 % -- reaches 75 %)."""
    root, _, _, _ = fleet59
    findings = findings_with_truth(root).filter(pl.col("root_cause") == "job_memlock_enomem")
    ids = set(findings["cluster_id"])
    assert len(ids) == 1, ids
    row = _audit(root, "clusters").filter(pl.col("cluster_id") == ids.pop()).row(0, named=True)
    assert row["hosts"] == len(VISITED) and row["jobs"] == 1 and row["failures"] == findings.height, row
    assert "ib_umem_get" in row["signature"] and "ENOMEM" in row["signature"] and row["origin_layer"] == "core"
    assert f"hosts share job_name={MOVING_NAME} (14 of 14 hosts with it)" in row["signature"], row["signature"]
    assert "tenant=" not in row["signature"] and "slurm_restart_count" not in row["signature"], row["signature"]
    assert "jobs share" not in row["signature"], row["signature"]  # (one job: the rule needs 3 or more)
    assert set(findings["job_id"]) == {MOVING_JOB}


@known
def test_the_staying_fault_is_one_cluster_of_its_host(fleet59):
    """gpu-24's failures: one cluster of their own, over one host and the several jobs that
    landed there; no shared value claimed (every job on the host carries its tenant's values and
    slurm_restart_count=0, which the host's other jobs carry as well)."""
    root, _, _, _ = fleet59
    findings = findings_with_truth(root).filter(pl.col("root_cause") == "cq_fw_timeout")
    ids = set(findings["cluster_id"])
    assert len(ids) == 1, ids
    row = _audit(root, "clusters").filter(pl.col("cluster_id") == ids.pop()).row(0, named=True)
    assert row["hosts"] == 1 and row["jobs"] == findings["job_id"].n_unique() >= 6 and row["failures"] == 160, row
    assert "mlx5_cmd_do" in row["signature"] and "ETIMEDOUT" in row["signature"] and row["origin_layer"] == "driver"
    assert "share" not in row["signature"], row["signature"]


def test_two_clusters_only(fleet59):
    root, _, _, _ = fleet59
    assert _audit(root, "clusters").height == len(CAUSES)
    assert findings_with_truth(root).filter(~pl.col("expected") & pl.col("root_cause").is_null()).height == 0


@known
def test_routine_set_aside_everywhere(fleet59):
    root, _, _, scores = fleet59
    e = scores["per_root_cause"]["arp_timeout_retried"]
    assert e["traces"] > 50 and e["set_aside_as_expected"] == e["traces"], e
    findings = findings_with_truth(root).filter(pl.col("root_cause").is_in(list(ROUTINE)))
    assert findings["expected"].all() and set(findings["host"]) == set(HOSTS)


@known
def test_scores(fleet59):
    """evaluate: every ratio 1.0, no false finding (on held-out good traces none either)."""
    _, _, _, scores = fleet59
    assert scores["held_out_good_traces"] > 100
    assert scores["false_findings_on_good"] == 0
    assert_every_cause_found(scores, CAUSES)


# ------------------------------------------------------------------------------------------------
# the audit: host alerts
# ------------------------------------------------------------------------------------------------
@known
def test_staying_fault_alert_since_the_rule_bucket(fleet59):
    """gpu-24: one persistent bad state naming ETIMEDOUT at a probe of the failing CREATE_CQ chain,
    since the bucket the docs' rule names (02:00, the fault's first bucket: 12 of 16 calls)."""
    root, _, _, _ = fleet59
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == FW_HOST)
    bad = alerts.filter(pl.col("alert") == "persistent_bad_state")
    assert bad.height == 1, alerts
    a = bad.row(0, named=True)
    assert a["errno"] == "ETIMEDOUT" and a["probe"] in FW_CHAIN, a
    assert _utc(a["since"]) == EXPECTED_SINCE[FW_HOST], a
    assert set(alerts["errno"].drop_nulls()) <= {"ETIMEDOUT"}


@known
@pytest.mark.parametrize("host", _params("test_no_alert_on_a_visited_host", VISITED))
def test_no_alert_on_a_visited_host(fleet59, host):
    """A host the job crash-looped on for 15-22 minutes and recovered from (a passing burst, one
    of more than 3 hosts failing alike within the hour) raises no host alert."""
    root, _, _, _ = fleet59
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == host)
    assert alerts.height == 0, alerts


def test_no_alert_on_quiet_hosts_nor_for_the_routine(fleet59):
    root, _, _, _ = fleet59
    alerts = _audit(root, "host_alerts")
    assert alerts.filter(pl.col("host").is_in(QUIET)).height == 0, alerts
    assert alerts.filter(pl.col("errno") == "ENOMEM").height == 0, alerts
    assert alerts.filter(pl.col("probe") == FAMILIES["arp_timeout_retried"][0]).height == 0, alerts
    assert set(alerts["host"]) <= {FW_HOST}, alerts

"""The audit scored on tests/fleetgen58, a fifty-eighth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' docstrings; without reading the simulator, the
other generators' code, or the audit).

What it is for: VOLUME THAT DIFFERS BY ORDERS OF MAGNITUDE BETWEEN HOSTS AND PROBES
(tests/fleetgen58/__init__.py has the fleet and the truth's decisions). 8 busy mlx5 hosts making
thousands of control-path calls a bucket beside 4 nearly idle ones (a login node, a host in
drain, two inference servers that set up once at start: a handful of calls an hour), and a probe
rare everywhere (REG_DMABUF_MR, at job start only). Two routine families retried through (an ARP
timeout at INIT->RTR, a cgroup EAGAIN at reg_mr) show on the idle hosts as 1 failure of 2 calls of
their probe in a bucket, 1 of 1 where the retry falls in the next bucket, or a lone failure in an
hour. Three causes: a busy host's CREATE_QP ENOMEM crash loop (40 minutes to the window's end), an
IDLE host's stop (every REG_MR of the drain host fails EFAULT for two hours: 12 records, 1 or 2 a
bucket) and a fleet-wide fault of the rare probe (4 hosts, 8 records each, in 25 minutes).

What the docs promise (README.md, docs/architecture.md: "What is routine", host alerts, clusters,
the counters' bucket rule tracer.schema.BUCKET_OF):
  * an error is learned where it originates and set aside when processes go on after it: the
    routine families' records set aside on every host, idle or busy; a family is kept open only on
    hosts where "its operation stopped succeeding ... every call failing with its errno for two
    15-minute buckets or more" (never the case here: each idle occurrence is retried through);
  * host alerts on a learned family only when the host leaves the family's band, and "a persistent
    bad state needs a run of 4 or more 15-minute buckets in each of which a probe failed on most of
    its calls, 3 times a bucket or more over the run ... or two such buckets when the run is still
    on in the host's last bucket"; `recurring_errno`: an unexpected errno back host-specific in 4
    or more buckets, 10 or more times. So: no alert on the idle hosts with only routine families;
    the busy cause host's bad state from the first bucket its calls mostly failed; the idle cause
    host's stop (1 or 2 failures a bucket, 12 over 9 buckets) a persistent bad state (reading "3
    times ... over the run" as the run's total) or else a recurring_errno (4+ buckets, 10+ times);
  * a cause "more than 3 hosts fail alike within an hour" is left to the clusters, and a run of two
    or three bad buckets recovered from is a passing burst: the rare probe's fault raises no host
    alert, only its cluster;
  * every record of a cause found, none set aside as expected, one cluster each.
What the audit gets wrong is a strict xfail naming what it wrote (KNOWN_MISSES).
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
    strict_xfails,
)
from fleetgen58 import (
    BUSY,
    CAUSE_HOSTS,
    DMABUF_STARTS,
    EFAULT_FROM,
    EFAULT_HOST,
    EFAULT_TO,
    ENOMEM_FROM,
    ENOMEM_HOST,
    FAMILIES,
    FAULTS,
    HOSTS,
    IDLE,
    IDLE_ROUTINE,
    LAYER,
    ROOT_CAUSES,
    ROUTINE,
    STALL,
    STALL_DONE,
    STALL_SETUP,
    TREE_FAMILY,
    TREES,
    generate,
)

from tracer.schema import read, snapshot_bucket

CAUSES = tuple(ROOT_CAUSES)
BUCKET = dt.timedelta(minutes=15)
HOUR = dt.timedelta(hours=1)
ROUTINE_ONLY_IDLE = sorted(set(IDLE) - {EFAULT_HOST})
ROOTS = ("ib_uverbs_create_qp", "ib_uverbs_modify_qp", "ib_uverbs_reg_mr", "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR")
RARE_ROOT = "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR"


def _at(h: int, m: int, s: float = 0) -> dt.datetime:
    return ENOMEM_FROM.replace(hour=h, minute=m, second=0, microsecond=0) + dt.timedelta(seconds=s)


# 12 hosts x 4 h, ~12,000 records and ~220,000 counters rows (~2.5 CPU s to build, ~0.5 to audit)
fleet58 = audited_fleet("fleet58", generate, package="fleetgen58", seed=58)

# The bucket each host alert of a cause must start in, by the docs' rule on the counters
# (BUCKET_OF: a row's bucket is the one its interval, ending at snapshot_time, ends in):
#  * gpu-a04: the crash loop began at 03:19:10. Bucket 03:15 holds 4 min 10 s of the busy host's
#    normal calls (~1,300 successful mlx5_cmd_exec: CREATE_QP and MODIFY_QP) against ~30 failures of
#    the relaunched ranks, so it is not bad; 03:30 and 03:45 fail every call, the run still on in
#    the host's last bucket (03:45, the 03:59:37 snapshot's): two bad buckets alert, since 03:30
#    (10 min 50 s after the start: within one bucket).
#  * gpu-d07: the agent's first failing cycle is 01:12:30 (the fault began at 01:07:30, between
#    two cycles), bucket 01:00, whose other call (01:02:30) succeeded: 1 of 2 failed, half, which
#    the docs' "most of its calls" counts ("half of them or more": docs/architecture.md, made
#    explicit after this set asked -- the helper read "most" as more than half, and filed 01:15);
#    every bucket from 01:15 to 03:00 (its 03:02:30 cycle failed, 03:12:30 succeeded) fails every
#    call, 1 or 2: a run of 9 bad buckets, 12 failures over it, since 01:00 (the first failure's
#    bucket).
EXPECTED_SINCE = {ENOMEM_HOST: _at(3, 30), EFAULT_HOST: _at(1, 0)}
CAUSE_OF = {ENOMEM_HOST: "qp_limit_enomem", EFAULT_HOST: "drain_pin_efault"}

# What the audit gets wrong, as strict xfails: test name (or name[param]) -> what it wrote.
KNOWN_MISSES: dict[str, str] = {}


known, _params = strict_xfails(KNOWN_MISSES)


def _audit(root, table: str) -> pl.DataFrame:
    return read(root / "audit" / f"{table}.parquet", table)


def _utc(v: dt.datetime) -> dt.datetime:
    return v if v.tzinfo else v.replace(tzinfo=dt.UTC)


def _cells(root, host: str, probe: str) -> pl.DataFrame:
    """(bucket, calls n, failures f) of one host's probe, by BUCKET_OF."""
    return (dataset_counters(root).filter((pl.col("host") == host) & (pl.col("probe") == probe))
            .with_columns(snapshot_bucket())
            .group_by("bucket").agg(pl.col("invocations").clip(lower_bound=0).sum().alias("n"),
                                    pl.col("failures").sum().alias("f"))
            .sort("bucket"))


def _bucket_rule_since(root, host: str, probe: str, *, per_bucket: int) -> dt.datetime | None:
    """The docs' persistent-bad-state rule on the host's counters of `probe`: a bad bucket fails
    most of its calls (half of them or more), at least `per_bucket` times (3: each bucket; 1: the run's total of 3 or more
    checked below); a run is bad buckets 15 minutes apart, alerting at 4 or more, or 2 or more when
    it reaches the host's last bucket; of several the longest. The run's first bucket."""
    last = dataset_counters(root).filter(pl.col("host") == host).with_columns(snapshot_bucket())["bucket"].max()
    runs: list[list[tuple[dt.datetime, int]]] = []
    for t, n, f in _cells(root, host, probe).iter_rows():
        if f >= per_bucket and 2 * f >= n:
            if runs and runs[-1][-1][0] + BUCKET == t:
                runs[-1].append((t, f))
            else:
                runs.append([(t, f)])
    alerting = [r for r in runs if (len(r) >= 4 or (len(r) >= 2 and r[-1][0] == last)) and sum(f for _, f in r) >= 3]
    if not alerting:
        return None
    best = max(alerting, key=lambda r: (len(r), sum(f for _, f in r), r[0][0]))
    return _utc(best[0][0])


# ------------------------------------------------------------------------------------------------
# the generator
# ------------------------------------------------------------------------------------------------
def test_generator_is_blind():
    assert_generator_is_blind("fleetgen58", tracer_modules={"tracer.schema"})


def test_trees_from_the_reference():
    assert_trees_from_the_reference(TREES, FAMILIES, LAYER, TREE_FAMILY)
    # the rare probe's fault fails with an errno no other tree shows at its origin probe
    probe, errno, _ = FAMILIES["dmabuf_map_timeout"]
    others = {(fn, e) for name, (_, _, frames) in TREES.items() if TREE_FAMILY.get(name) != "dmabuf_map_timeout"
              for _, fn, e in frames}
    assert (probe, errno) not in others


def test_files_valid_and_truth_one_row_per_record(fleet58):
    root, summary, _, _ = fleet58
    assert_files_valid_and_truth_one_row_per_record(root)
    truth = dataset_truth(root)
    assert set(truth["root_cause"].drop_nulls()) == set(FAMILIES)
    assert sorted(truth["host"].unique()) == sorted(HOSTS) == sorted(summary["hosts"])
    assert truth.height == summary["records"]
    assert truth.filter(pl.col("held_out")).height > 100
    # the truth's decisions: routine records expected, causes' not, each where the generator put it
    for family in FAMILIES:
        own = truth.filter(pl.col("root_cause") == family)
        assert own["expected_error"].all() == (family in ROUTINE), family
        assert (~own["expected_error"]).all() == (family not in ROUTINE), family
    for cause, hosts in CAUSE_HOSTS.items():
        assert set(truth.filter(pl.col("root_cause") == cause)["host"]) == set(hosts), cause


def test_counters_agree_with_the_records(fleet58):
    root, _, _, _ = fleet58
    assert_counters_agree_with_the_records(root, FAMILIES)


def test_volume_differs_by_orders_of_magnitude(fleet58):
    """The theme as the counters hold it: busy hosts make thousands of control-path calls a bucket,
    idle ones at most a few dozen an hour; the rare probe a few an hour a host, everywhere."""
    root, _, _, _ = fleet58
    c = dataset_counters(root).filter(pl.col("probe").is_in(ROOTS)).with_columns(snapshot_bucket())
    per_bucket = c.group_by("host", "bucket").agg(pl.col("invocations").sum().alias("n"))
    busy = per_bucket.filter(pl.col("host").is_in(BUSY) & (pl.col("bucket") < _at(3, 15)))
    assert busy["n"].min() > 2000, busy.sort("n").head()
    hourly = c.with_columns(pl.col("snapshot_time").dt.truncate("1h").alias("hour")) \
        .group_by("host", "hour").agg(pl.col("invocations").sum().alias("n"))
    idle = hourly.filter(pl.col("host").is_in(IDLE))
    assert idle["n"].max() <= 40 and idle.group_by("host").agg(pl.col("n").sum())["n"].min() >= 5, idle
    assert busy["n"].median() / max(1, idle["n"].max()) > 100
    rare = hourly.filter(pl.col("host").is_in(BUSY)).join(
        c.filter(pl.col("probe") == RARE_ROOT).with_columns(pl.col("snapshot_time").dt.truncate("1h").alias("hour"))
        .group_by("host", "hour").agg(pl.col("invocations").sum().alias("rare")), on=["host", "hour"], how="left")
    assert rare["rare"].fill_null(0).max() <= 40 and (rare["rare"].fill_null(0) < rare["n"] / 500).all()
    assert c.filter(pl.col("probe") == RARE_ROOT).group_by("host").agg(pl.col("invocations").sum()) \
        .filter(pl.col("invocations") > 0).height >= len(BUSY)


def test_idle_routine_occurrences_as_the_counters_show_them(fleet58):
    """Each idle host's routine occurrence is all, half (or, on the drain host at 03:42, a third) of
    its origin probe's calls in its bucket and, but on inf-02 (whose stall brings three in an
    hour), the only failure of its family on that host in the surrounding hour. inf-02's
    01:14:36.4 and inf-01's 02:14:36.95 fail in the interval ending hh:14:37 (bucket hh:00) and
    are retried in the next (bucket hh:15): 1 call, 1 failure."""
    root, _, _, _ = fleet58
    truth = dataset_truth(root)
    shares = set()
    for host, times in IDLE_ROUTINE.items():
        routine = truth.filter((pl.col("host") == host) & pl.col("root_cause").is_in(list(ROUTINE)))
        assert routine.height == len(times), host
        for t in times:
            family = "cgroup_eagain_retried" if host == "inf-01" else "arp_timeout_retried"
            probe = FAMILIES[family][0]
            cells = _cells(root, host, probe)
            bucket = cells.filter(pl.col("bucket") == _bucket_of(t))
            assert bucket.height == 1, (host, t)
            n, f = bucket.select("n", "f").row(0)
            assert f == 1 and n in (1, 2, 3), (host, t, n, f)
            shares.add((n, f))
            if host != "inf-02":  # (inf-02's stall brings three within an hour)
                near = cells.filter((pl.col("bucket") > _bucket_of(t) - HOUR) & (pl.col("bucket") < _bucket_of(t) + HOUR))
                assert near["f"].sum() == 1, (host, t)
    assert {(1, 1), (2, 1)} <= shares


def _bucket_of(t: dt.datetime) -> dt.datetime:
    """The bucket of the snapshot counting a call at `t` (BUCKET_OF): the first snapshot at or
    after it (they are at :07 and :37), its interval's end less a tick truncated to 15 minutes."""
    minute = t.replace(second=0, microsecond=0)
    snap = next(s for s in (minute + dt.timedelta(seconds=x) for x in (7, 37, 67)) if s >= t)
    end = snap - dt.timedelta(microseconds=1)
    return end.replace(minute=end.minute - end.minute % 15, second=0, microsecond=0)


def test_the_stalled_connection_as_the_data_shows_it(fleet58):
    """inf-02's stall: every MODIFY_QP of the host fails ETIMEDOUT in buckets 02:15 and 02:30, at
    its root probe and at the family's origin alike, after one succeeded in 02:00; the same
    process's later INIT->RTR succeeds (02:55:50, recorded in a capture window): it went on."""
    root, _, _, _ = fleet58
    for probe in ("ib_uverbs_modify_qp", FAMILIES["arp_timeout_retried"][0]):
        cells = {b: (n, f) for b, n, f in _cells(root, "inf-02", probe).filter(pl.col("n") > 0).iter_rows()}
        assert cells[_bucket_of(STALL[0])] == (1, 1) and cells[_bucket_of(STALL[1])] == (1, 1), (probe, cells)
        assert _bucket_of(STALL[1]) - _bucket_of(STALL[0]) == BUCKET
        assert cells[_bucket_of(STALL_DONE)][1] == 0
    assert _cells(root, "inf-02", "ib_uverbs_modify_qp").filter(pl.col("bucket") == _bucket_of(STALL_SETUP)).row(0)[1:] \
        == (1, 0)
    roots = dataset_events(root).filter((pl.col("host") == "inf-02") & (pl.col("seq") == 0))
    stalled = roots.filter(pl.col("errno") == "ETIMEDOUT").filter(pl.col("end_time").dt.hour() == 2)
    assert stalled.height == 2 and stalled["pid"].n_unique() == 1
    later = roots.filter((pl.col("pid") == stalled["pid"][0]) & (pl.col("start_time") > STALL[1]) & pl.col("errno").is_null())
    assert later.filter((pl.col("arg") == "INIT->RTR") & pl.col("latency_ns").is_not_null()).height == 1


def test_the_bucket_rule_names_the_expected_buckets(fleet58):
    """EXPECTED_SINCE is what the docs' rule gives on these counters. gpu-a04's bad buckets fail
    3 times or more each; gpu-d07's fail 1 or 2 times each (12 over the run): under the reading
    "3 times a bucket or more" in every bucket it has no bad state, under "over the run" it does.
    The routine-only idle hosts have no bad bucket run at any reading."""
    root, _, _, _ = fleet58
    assert _bucket_rule_since(root, ENOMEM_HOST, "mlx5_cmd_exec", per_bucket=3) == EXPECTED_SINCE[ENOMEM_HOST]
    assert _bucket_rule_since(root, EFAULT_HOST, "pin_user_pages_fast", per_bucket=1) == EXPECTED_SINCE[EFAULT_HOST]
    assert _bucket_rule_since(root, EFAULT_HOST, "pin_user_pages_fast", per_bucket=3) is None
    d07 = _cells(root, EFAULT_HOST, "pin_user_pages_fast").filter(pl.col("f") > 0)
    assert d07.height == 9 and d07["f"].sum() == 12 and set(d07["f"]) == {1, 2}
    assert d07.row(0) == (_at(1, 0), 2, 1)  # the first failure's bucket: half its calls
    for host in ROUTINE_ONLY_IDLE:
        for family in ROUTINE:
            probe = FAMILIES[family][0]
            assert _bucket_rule_since(root, host, probe, per_bucket=1) is None, (host, probe)


# ------------------------------------------------------------------------------------------------
# the audit: findings and clusters
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("host", _params("test_routine_set_aside_on_idle_hosts", sorted(IDLE)))
def test_routine_set_aside_on_idle_hosts(fleet58, host):
    """Each idle host's routine occurrences (1 of 2 calls, 1 of 1, a lone one in an hour) found
    and set aside as expected, as the same families are on the busy hosts."""
    root, _, _, _ = fleet58
    findings = findings_with_truth(root).filter((pl.col("host") == host) & pl.col("root_cause").is_in(list(ROUTINE)))
    assert findings.height == len(IDLE_ROUTINE[host]), findings
    assert findings["expected"].all(), findings.filter(~pl.col("expected")).select("time", "root_cause", "signature")


def test_routine_set_aside_on_busy_hosts(fleet58):
    root, _, _, scores = fleet58
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["traces"] > 300 and e["set_aside_as_expected"] == e["traces"], (family, e)
    findings = findings_with_truth(root).filter(pl.col("host").is_in(BUSY) & pl.col("root_cause").is_in(list(ROUTINE)))
    assert findings.height > 1000 and findings["expected"].all()
    assert set(findings["host"]) == set(BUSY)


@pytest.mark.parametrize("cause", _params("test_every_record_of_the_cause_found", CAUSES))
def test_every_record_of_the_cause_found(fleet58, cause):
    """Every record of the cause open (none set aside as expected), its first one included, with
    its origin as bifurcation and its layer."""
    root, _, _, scores = fleet58
    e = scores["per_root_cause"][cause]
    assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, e
    assert e["bifurcation_top1"] == 1.0 and e["origin_layer_top1"] == 1.0, e
    findings = findings_with_truth(root).filter(pl.col("root_cause") == cause)
    truth = dataset_truth(root).filter(pl.col("root_cause") == cause)
    assert findings.height == truth.height and not findings["expected"].any()
    assert set(findings["host"]) == set(CAUSE_HOSTS[cause])
    start, end = FAULTS[cause]
    assert _utc(findings["time"].min()) >= start and (end is None or _utc(findings["time"].max()) < end)


def test_one_cluster_per_cause(fleet58):
    """Each cause's open findings in one cluster of its own signature and hosts (the rare probe's
    over its four hosts, the idle host's 12 records a cluster of their own)."""
    root, _, _, _ = fleet58
    findings = findings_with_truth(root).filter(~pl.col("expected"))
    clusters = _audit(root, "clusters")
    assert clusters.height == len(CAUSES), clusters
    seen = set()
    for cause in CAUSES:
        own = findings.filter(pl.col("root_cause") == cause)
        ids = set(own["cluster_id"])
        assert len(ids) == 1 and not ids & seen, (cause, ids)
        seen |= ids
        row = clusters.filter(pl.col("cluster_id").is_in(list(ids))).row(0, named=True)
        probe, errno, layer = FAMILIES[cause]
        assert probe in row["signature"] and errno in row["signature"] and row["origin_layer"] == layer, row
        assert row["hosts"] == len(CAUSE_HOSTS[cause]) and row["failures"] == own.height, row


def test_scores(fleet58):
    """evaluate: every ratio 1.0, no false finding (on good traces none either)."""
    _, _, _, scores = fleet58
    assert scores["held_out_good_traces"] > 100
    assert scores["false_findings_on_good"] == 0
    assert_every_cause_found(scores, CAUSES)


# ------------------------------------------------------------------------------------------------
# the audit: host alerts
# ------------------------------------------------------------------------------------------------
@known
def test_bad_state_on_the_busy_cause_host(fleet58):
    """gpu-a04's crash loop: a persistent bad state naming ENOMEM, since the bucket the rule names
    (03:30), within one bucket of the 03:19:10 start."""
    root, _, _, _ = fleet58
    alerts = _audit(root, "host_alerts").filter((pl.col("host") == ENOMEM_HOST)
                                                & (pl.col("alert") == "persistent_bad_state"))
    mine = [a for a in alerts.iter_rows(named=True) if a["errno"] == "ENOMEM"]
    assert [_utc(a["since"]) for a in mine] == [EXPECTED_SINCE[ENOMEM_HOST]], alerts
    assert abs(EXPECTED_SINCE[ENOMEM_HOST] - ENOMEM_FROM) < BUCKET


@known
def test_alert_on_the_idle_cause_host(fleet58):
    """gpu-d07's two-hour stop of its few calls (12 failures, 1 or 2 a bucket, every call): the
    documented alert for it -- a persistent bad state (the run's 11 failures) or else a
    recurring_errno (9 buckets, 12 times) -- naming EFAULT, since within one bucket of the fault's
    01:07:30 start."""
    root, _, _, _ = fleet58
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == EFAULT_HOST)
    mine = alerts.filter(pl.col("alert").is_in(["persistent_bad_state", "recurring_errno"])
                         & (pl.col("errno") == "EFAULT"))
    assert mine.height >= 1, alerts
    for a in mine.iter_rows(named=True):
        assert abs(_utc(a["since"]) - EFAULT_FROM) < BUCKET and _utc(a["since"]) < EFAULT_TO, a


@known
def test_idle_cause_bad_state_since_the_rule_bucket(fleet58):
    """Where gpu-d07's alert is a persistent bad state, its `since` is the first bucket of the run
    the docs' rule finds (EXPECTED_SINCE: 01:00; bucket 01:00 failed 1 of its 2 calls: half)."""
    root, _, _, _ = fleet58
    bad = _audit(root, "host_alerts").filter((pl.col("host") == EFAULT_HOST)
                                             & (pl.col("alert") == "persistent_bad_state"))
    if bad.height:
        assert [_utc(s) for s in bad["since"]] == [EXPECTED_SINCE[EFAULT_HOST]], bad


@pytest.mark.parametrize("host", _params("test_no_alert_on_idle_routine_hosts", ROUTINE_ONLY_IDLE))
def test_no_alert_on_idle_routine_hosts(fleet58, host):
    """An idle host whose only failures are routine ones retried through (50 % or 100 % of its
    probe's calls in a bucket, a lone one in an hour) raises no host alert."""
    root, _, _, _ = fleet58
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == host)
    assert alerts.height == 0, alerts


def test_no_alert_from_the_routine_families(fleet58):
    """No host, idle or busy, alerts on a routine family's errno at its probes: the drain host's
    lone ARP timeouts included, whose only alerts name its EFAULT."""
    root, _, _, _ = fleet58
    alerts = _audit(root, "host_alerts")
    routine = {FAMILIES[f][1] for f in ROUTINE} - {FAMILIES[c][1] for c in CAUSES}
    assert alerts.filter(pl.col("errno").is_in(list(routine))).height == 0, alerts
    assert alerts.filter((pl.col("errno") == "ETIMEDOUT") & ~pl.col("host").is_in(list(DMABUF_STARTS))).height == 0
    assert set(alerts.filter(pl.col("host") == EFAULT_HOST)["errno"]) <= {"EFAULT"}


def test_no_alert_for_the_rare_probe_fault(fleet58):
    """The rare probe's fault: four hosts failing alike within an hour (left to the clusters), each
    in two bad buckets it recovered from (a passing burst): no host alert naming it."""
    root, _, _, _ = fleet58
    alerts = _audit(root, "host_alerts").filter(pl.col("host").is_in(list(DMABUF_STARTS)))
    assert alerts.filter(pl.col("errno") == "ETIMEDOUT").height == 0, alerts
    for host in DMABUF_STARTS:
        cells = _cells(root, host, FAMILIES["dmabuf_map_timeout"][0]).filter(pl.col("f") > 0)
        assert 1 <= cells.height <= 3 and cells["f"].sum() == 8, (host, cells)


def test_no_alert_on_busy_hosts_without_a_cause(fleet58):
    root, _, _, _ = fleet58
    alerts = _audit(root, "host_alerts")
    quiet = sorted(set(BUSY) - {ENOMEM_HOST} - set(DMABUF_STARTS))
    assert alerts.filter(pl.col("host").is_in(quiet)).height == 0, alerts
    assert set(alerts["host"]) <= {ENOMEM_HOST, EFAULT_HOST}

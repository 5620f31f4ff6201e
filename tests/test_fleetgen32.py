"""The audit scored on tests/fleetgen32, a thirty-second fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' docstrings; without reading the simulator, the
other generators, or the audit).

What it is for: RARE FAULTS IN A SEA OF ROUTINE. 40 mlx5 RoCE hosts for 24 h whose routine errors
are massive -- GID-scan storms of ~20,000-56,000 ENODATA a snapshot aggregated in the kernel
(repeat_count), the rdma cgroup's create_qp EAGAIN swinging >10x with the time of day -- while
each of four real root causes is 1-3 records in the whole window on one or two hosts. The audit
must report every rare cause in its own cluster, set the storms aside without a host alert, and
raise nothing on the control fleet (faults=False). generator.py gives the reasons for the truth.
"""

from __future__ import annotations

import polars as pl
from fleet_harness import (
    assert_errno_from_reference,
    assert_every_cause_found,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen32 import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

from tracer.schema import SNAPSHOT_KEY, counter_buckets_for, dataset_files, read, validate_file

# 40 hosts x 24 h (~8 s to build); the control: 16 hosts x 12 h, the routine only
SHAPE = {"hosts": 40, "hours": 24, "seed": 32}
CONTROL = {"hosts": 16, "hours": 12, "seed": 3232, "faults": False}
fleet32 = audited_fleet("fleet32", generate, package="fleetgen32", **SHAPE)
control32 = audited_fleet("control32", generate, package="fleetgen32", **CONTROL)

KEY = ["host", "trace_id"]
STORM, DIURNAL = "gid_scan_storm", "cgroup_qp_eagain_diurnal"
PEER, MEMLOCK, ARP, FWCQ = "peermem_hiccup_efault", "memlock_leak_enomem", "arp_timeout_once", "fw_create_cq_int_err"
RARE_SIZE = {PEER: (1, 1), MEMLOCK: (2, 1), ARP: (1, 1), FWCQ: (3, 2)}  # records, hosts


def _events(root) -> pl.DataFrame:
    return read(dataset_files(root, "events"), "events")


def _truth(root) -> pl.DataFrame:
    return read(dataset_files(root, "truth"), "truth")


def _roots(root) -> pl.DataFrame:
    roots = _events(root).filter(pl.col("seq") == 0)
    return roots.join(_truth(root).select(*KEY, "root_cause", "expected_error"), on=KEY, how="left")


def _findings(root) -> pl.DataFrame:
    findings = read(root / "audit" / "findings.parquet", "findings")
    return findings.join(_truth(root).select(*KEY, "kind", "root_cause", "expected_error"), on=KEY, how="left")


def _counters(root) -> pl.DataFrame:
    return read(dataset_files(root, "counters"), "counters").unique(list(SNAPSHOT_KEY), keep="first")


# --------------------------------------------------------------------------------------------
# the generator and its data
# --------------------------------------------------------------------------------------------
def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen32", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every family's errno is one the reference
    gives near its origin; every origin frame of a family's tree fails with that errno."""
    assert_functions_in_reference({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
    for key, (probe, errno, layer) in FAMILIES.items():
        assert_errno_from_reference(key, probe, errno)
        assert LAYER[probe] == layer, key
    for name, (_, _, frames) in TREES.items():
        failing = [(fn, e) for _, fn, e in frames if e]
        if failing:
            origins = {v[:2] for v in FAMILIES.values()}
            assert any(f in origins for f in failing), name


def test_every_file_validates_and_truth_is_one_row_per_record(fleet32):
    """Events, counters, their summaries and truth validate through tracer.schema; truth has one
    row per record (host, trace_id) and none more; every counters file's summary matches it."""
    root, _, _, _ = fleet32
    for table in ("events", "counters", "truth", "counter_buckets"):
        files = dataset_files(root, table)
        assert files, table
        for f in files:
            validate_file(f, table)
    for f in dataset_files(root, "counters"):
        assert counter_buckets_for(f) is not None, f
    records = _events(root).select(KEY).unique()
    truth = _truth(root)
    assert truth.select(KEY).is_unique().all()
    assert truth.height == records.height
    assert truth.join(records, on=KEY, how="anti").height == 0


def test_counters_agree_with_the_records(fleet32):
    """Per family origin (probe, errno) the counters' failures equal the records' repeat counts
    summed: nothing lost, each aggregated example standing for exactly what the kernel counted."""
    root, _, _, _ = fleet32
    counters = _counters(root)
    cells = counters.select("probe", "errno_counts").explode("errno_counts").unnest("errno_counts")
    counted = dict(((p, e), n) for p, e, n in cells.filter(pl.col("count") > 0).group_by("probe", "errno")
                   .agg(pl.col("count").sum()).iter_rows())
    roots = _roots(root)
    for family, (probe, errno, _) in FAMILIES.items():
        n = roots.filter(pl.col("root_cause") == family)["repeat_count"].fill_null(1).sum()
        assert counted.get((probe, errno), 0) == n > 0, (family, counted.get((probe, errno)), n)


def test_the_routine_is_massive_and_the_faults_rare(fleet32):
    """The angle holds in the data: storms aggregated into repeat counts in the thousands on every
    host, the diurnal family >= 10x between its quietest and busiest hour, each root cause 1-3
    records on one or two hosts."""
    root, summary, _, _ = fleet32
    roots = _roots(root)
    storm = roots.filter(pl.col("root_cause") == STORM)
    assert storm["repeat_count"].max() >= 10_000, storm["repeat_count"].max()
    assert storm.filter(pl.col("repeat_count") >= 1000)["host"].n_unique() == SHAPE["hosts"]
    by_hour = summary["eagain_by_hour"]
    assert max(by_hour.values()) >= 10 * min(by_hour.values()), by_hour
    truth = _truth(root)
    for cause, (records, hosts) in RARE_SIZE.items():
        got = truth.filter(pl.col("root_cause") == cause)
        assert (got.height, got["host"].n_unique()) == (records, hosts), cause
    weight = roots.filter(pl.col("root_cause").is_in(list(ROUTINE)))["repeat_count"].fill_null(1).sum()
    assert weight > 10_000 * sum(r for r, _ in RARE_SIZE.values())


# --------------------------------------------------------------------------------------------
# the audit
# --------------------------------------------------------------------------------------------
def _assert_rare_cause_reported(root, result, cause: str) -> None:
    """`cause`'s records are open findings with the right bifurcation and origin layer, in one
    cluster that holds nothing else, with its failure and host counts."""
    findings = _findings(root)
    truth = _truth(root)
    probe, errno, layer = ROOT_CAUSES[cause]
    got = findings.filter(pl.col("root_cause") == cause)
    want = truth.filter(pl.col("root_cause") == cause).height
    assert got.height == want, (cause, f"{want - got.height} of {want} records without a finding")
    assert not got["expected"].fill_null(False).any(), (cause, "a rare fault's record was set aside as routine")
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


def test_single_peer_memory_efault_is_reported(fleet32):
    """One EFAULT at ib_peer_umem_get (no peer client claimed a GPU range) in 24 h on one host."""
    root, _, result, _ = fleet32
    _assert_rare_cause_reported(root, result, PEER)


def test_two_late_memlock_enomem_are_reported(fleet32):
    """Two ENOMEM at ib_umem_get on one host in the window's last sixth."""
    root, _, result, _ = fleet32
    _assert_rare_cause_reported(root, result, MEMLOCK)


def test_single_arp_timeout_inside_a_storm_is_reported(fleet32):
    """One ETIMEDOUT at rdma_addr_find_l2_eth_by_grh, on a host in the middle of a GID storm."""
    root, summary, result, _ = fleet32
    (host, _, tf, _, _) = next(x for x in summary["injected"] if x[1] == ARP)
    assert any(a <= tf <= b for a, b in summary["storms"][host]), "the timeout is not inside a storm"
    _assert_rare_cause_reported(root, result, ARP)


def test_firmware_create_cq_eio_on_two_hosts_is_reported(fleet32):
    """Three CREATE_CQ INT_ERR (EIO at mlx5_cmd_exec) on two hosts: one cluster."""
    root, _, result, _ = fleet32
    _assert_rare_cause_reported(root, result, FWCQ)


def test_every_cause_is_found(fleet32):
    """Perfect scores: each rare cause detected on every record, none set aside; the routine
    families all set aside; one cluster per rare cause and none more."""
    _, _, result, scores = fleet32
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] > 0 and e["set_aside_as_expected"] == 0, (cause, e)
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0 and e["open_findings"] == 0, (family, e)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_routine_storms_set_aside(fleet32):
    """Every routine record -- the aggregated storm examples standing for tens of thousands
    included -- is set aside and in no cluster."""
    root, _, _, _ = fleet32
    findings = _findings(root)
    truth = _truth(root)
    for family in ROUTINE:
        want = truth.filter(pl.col("root_cause") == family).height
        got = findings.filter(pl.col("root_cause") == family)
        open_ = got.filter(~pl.col("expected").fill_null(False))
        assert got.height == want and open_.height == 0, (family, want, got.height, open_.height)
        assert got["cluster_id"].is_null().all(), (family, "a routine record was clustered")


def test_no_host_alert_for_the_routine(fleet32):
    """No host alert names a routine family's probe or errno (the storms, the diurnal swing), and
    none is raised on a host without a rare cause; an alert on a faulty host names its cause's
    errno."""
    _, summary, result, _ = fleet32
    routine = {(p, e) for p, e, _ in ROUTINE.values()}
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) in routine or r[3] in {e for _, e in routine}], rows
    acceptable: dict[str, set] = {}
    for cause, (_, errno, _) in ROOT_CAUSES.items():
        for h in summary["family_hosts"][cause]:
            acceptable.setdefault(h, set()).add(errno)
    false = [r for r in rows if not (r[0] in acceptable and r[3] in acceptable[r[0]])]
    assert not false, false


def test_control_fleet_raises_nothing(control32):
    """The routine alone (storms, diurnal EAGAIN): no cluster, no alert, no open finding."""
    root, summary, result, scores = control32
    assert set(summary["counts"]) == set(ROUTINE), summary["counts"]
    assert result.clusters.height == 0, result.clusters
    assert result.host_alerts.height == 0, result.host_alerts
    findings = _findings(root)
    opened = findings.filter(~pl.col("expected").fill_null(False))
    assert opened.height == 0, opened.group_by("root_cause", "bifurcation_probe").len()
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0

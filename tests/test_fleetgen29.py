"""The audit scored on tests/fleetgen29, a twenty-ninth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: a dataset as ANOTHER TEAM'S COLLECTOR ("argus") writes it, valid per
tracer/schema.py but taking the freedoms fleetgen24's collector did not: trace ids numbered per host
(t1, t2, ... on every host: one id names a record on each host), FQDN host names, wall clocks
seconds off, snapshot intervals of 10/15/30/60 s (jittered, or sparse with interval_s null),
rows shuffled over three uneven part files, frames in return order on some hosts, the host column
stored on others, nullable columns null, three probe sets by host (one operation, three chain
shapes), a part and a counters file uploaded twice. On it: a rare fatal fault on 4 hosts spanning
the three probe sets (INIT->RTR ENODEV at rdma_read_gid_attr_ndev_rcu), a one-host crash loop
(ALLOC_PD ENXIO at mlx5_cmd_exec), three routine families on every host; a control fleet without
the two faults. generator.py gives the reasons for the truth.
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
from fleetgen29 import PROBE_SETS, ROOT_CAUSES, ROUTINE, TREES, generate

from tracer.schema import SNAPSHOT_KEY, dataset_files, partition_values, read, validate_file

# 30 hosts x 3 h (~4 s to build, ~2 s to audit); the control: 18 hosts x 2 h, no fault
SHAPE = {"hosts": 30, "hours": 3, "seed": 29}
CONTROL = {"hosts": 18, "hours": 2, "seed": 2929, "faults": False}
fleet29 = audited_fleet("fleet29", generate, package="fleetgen29", **SHAPE)
control29 = audited_fleet("control29", generate, package="fleetgen29", **CONTROL)

FAMILIES = {**ROOT_CAUSES, **ROUTINE}
KEY = ["host", "trace_id"]


def _events(root) -> pl.DataFrame:
    return read(dataset_files(root, "events"), "events")


def _truth(root) -> pl.DataFrame:
    return read(dataset_files(root, "truth"), "truth")


def _roots(root) -> pl.DataFrame:
    """One row per record (its root frame, a re-sent copy counted once), with its truth label."""
    roots = _events(root).filter(pl.col("seq") == 0).unique(KEY, keep="first")
    return roots.join(_truth(root).select(*KEY, "root_cause", "expected_error"), on=KEY, how="left")


def _findings(root) -> pl.DataFrame:
    return read(root / "audit" / "findings.parquet", "findings")


def _counters(root) -> pl.DataFrame:
    """The counters, a snapshot uploaded twice counted once (SNAPSHOT_KEY)."""
    return read(dataset_files(root, "counters"), "counters").unique(list(SNAPSHOT_KEY), keep="first")


def _counted(counters: pl.DataFrame, probe: str, errno: str) -> int:
    cells = (counters.filter(pl.col("probe") == probe).select("errno_counts").explode("errno_counts")
             .unnest("errno_counts"))
    return int(cells.filter(pl.col("errno") == errno)["count"].sum())


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen29", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every family's errno is one the reference
    gives near its origin."""
    assert_functions_in_reference({fn for tree in TREES.values() for _, fn, _, _ in tree})
    for key, (probe, errno, _) in FAMILIES.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_collector_writes_its_own_way(fleet29):
    """The dataset has every one of argus' choices, and is what tracer.schema reads."""
    root, summary, _, _ = fleet29
    roles = summary["roles"]
    events = _events(root)
    roots = _roots(root)
    hosts = set(roles["all"])
    assert len(hosts) == 30 and set(events["host"]) == hosts
    assert all(h.endswith(".fra4.hpc.example.net") and h.count(".") == 4 for h in hosts)
    # trace ids numbered per host from 1: every host has t1, and one id names records on most hosts,
    # a root cause's record sharing its id with routine and good records of other hosts
    per_host = roots.group_by("host").agg(pl.col("trace_id").str.slice(1).cast(pl.Int64).sort().alias("n"))
    for host, numbers in per_host.iter_rows():
        assert numbers == list(range(1, len(numbers) + 1)), host
    shared = roots.group_by("trace_id").agg(pl.col("host").n_unique().alias("hosts"))
    assert shared["hosts"].max() == 30 and shared.filter(pl.col("hosts") >= 20).height >= 100
    causes = roots.filter(pl.col("root_cause").is_in(list(ROOT_CAUSES)))
    same_ids = roots.join(causes.select("trace_id", pl.col("host").alias("cause_host")), on="trace_id")
    same_ids = same_ids.filter(pl.col("host") != pl.col("cause_host"))
    assert same_ids["expected_error"].fill_null(False).any() and (same_ids["kind"] == "good").any()
    # a re-sent part: RECORD_KEY repeats, on the hosts that re-sent only
    repeated = events.filter(pl.struct("host", "trace_id", "seq").is_duplicated())
    assert set(repeated["host"]) == set(roles["resends"]) and repeated.height > 0
    # nulls where argus does not know; the lite hosts without release and metadata on their events
    for column in ("tid", "ppid", "path", "lost_events", "repeat_count", "path2", "output"):
        assert events[column].is_null().all(), column
    lite = events.filter(pl.col("host").is_in(roles["lite"]))
    assert lite.height and lite["kernel_release"].is_null().all() and lite["metadata"].is_null().all()
    assert events.filter(~pl.col("host").is_in(roles["lite"]))["kernel_release"].is_not_null().all()
    assert roots.filter(pl.col("comm") == "fabric-healthd")["job_id"].is_null().all()
    # two dates (the window crosses midnight in every host's clock)
    dates = {partition_values(f.parent).get("date") or f.parent.parent.name for f in dataset_files(root, "events")}
    assert {d.removeprefix("date=") for d in dates} == {"2026-04-18", "2026-04-19"}
    # three part files of uneven sizes a partition (plus a re-sent copy), rows not in time order,
    # frames in return order on the post-order hosts, the host column stored on some
    by_dir: dict = {}
    for f in dataset_files(root, "events"):
        by_dir.setdefault(f.parent, []).append(f)
    for directory, files in by_dir.items():
        parts = [f for f in files if "resent" not in f.name]
        rows = sorted(validate_file(f, "events").num_rows for f in parts)
        assert len(parts) == 3 and rows[-1] >= 2 * rows[0], (directory, rows)
    unordered = reversed_frames = stored = 0
    for f in dataset_files(root, "events"):
        if "host" in validate_file(f, "events").schema.names:
            stored += 1
            assert partition_values(f)["host"] in roles["host_stored"]
        part = read([f], "events")
        starts = part.filter(pl.col("seq") == 0)["start_time"]
        unordered += not starts.is_sorted()
        first = part.filter(pl.col("trace_id") == part["trace_id"][0])["seq"].to_list()
        reversed_frames += len(first) > 1 and first[0] > first[-1]
        if partition_values(f)["host"] in roles["postorder"] and len(first) > 1:
            assert first[-1] == 0, f  # the root returns last
    assert unordered >= 100 and reversed_frames >= 20 and stored >= 10
    # snapshot intervals: never 5 s; jittered, or sparse and null; host clocks seconds off
    counters = _counters(root)
    intervals = counters.group_by("host").agg(pl.col("interval_s").drop_nulls().unique().alias("i"),
                                              pl.col("interval_s").is_null().all().alias("none"))
    nominal = summary["interval_s"]
    for host, values, none in intervals.iter_rows():
        if nominal[host] == 60:
            assert none, host
        elif nominal[host] == 15:
            assert len(values) > 10 and all(14.3 < v < 15.7 for v in values), host
        else:
            assert set(values) == {float(nominal[host])}, host
    assert set(nominal.values()) == {10, 15, 30, 60}
    sparse = counters.filter(pl.col("host").is_in([h for h, i in nominal.items() if i == 60]))
    assert sparse["invocations"].min() > 0
    assert counters.filter(pl.col("host").is_in([h for h, i in nominal.items() if i != 60]))["invocations"].min() == 0
    skews = summary["skew_s"].values()
    assert max(skews) - min(skews) > 30 and max(abs(s) for s in skews) <= 45
    assert "counter_buckets" not in {p.name for p in root.iterdir()}
    # three probe sets: the counters list other probes, one operation records other chains
    sets = counters.group_by("probe_set").agg(pl.col("probe").unique().sort())
    assert {s: set(p) for s, p in sets.iter_rows()} == {s: set(p) for s, p in PROBE_SETS.items()}
    rtr = events.unique(["host", "trace_id", "seq"]).filter(pl.col("arg") == "IBV_QPS_RTR", pl.col("kind") == "good").join(
        counters.select("host", "probe_set").unique(), on="host")
    shapes = rtr.group_by("probe_set", "host", "trace_id").agg(pl.len().alias("frames")).group_by("probe_set").agg(
        pl.col("frames").unique())
    assert shapes.height == 3 and all(len(f) == 1 for f in shapes["frames"]) and shapes["frames"].list.first().n_unique() == 3


def test_the_faults_have_their_shapes(fleet29):
    """The bond fault: a few records on each of 4 hosts spanning the three probe sets, the ranks'
    INIT->RTR only, each rank dead at it; the VF host: one host, from its onset on, a new rank
    each record; every family's records are exactly what the counters counted."""
    root, summary, _, _ = fleet29
    roles = summary["roles"]
    roots = _roots(root)
    counters = _counters(root)
    bond = roots.filter(pl.col("root_cause") == "bond_gid_ndev_gone")
    assert set(bond["host"]) == set(roles["bond"]) and len(roles["bond"]) == 4
    assert 8 <= bond.height <= 40 and bond.group_by("host").len()["len"].max() <= 10
    assert set(bond["arg"]) == {"IBV_QPS_RTR"} and set(bond["comm"]) == {"pt_main_thread"}
    used = counters.filter(pl.col("host").is_in(roles["bond"])).select("probe_set").unique()
    assert used.height == 3
    vf = roots.filter(pl.col("root_cause") == "vf_alloc_pd_opcode_refused")
    assert set(vf["host"]) == set(roles["vf"]) and len(roles["vf"]) == 1 and vf.height >= 100
    assert vf["pid"].n_unique() == vf.height and set(vf["command"]) == {"ibv_alloc_pd"}
    # a dead rank leaves no record after its fault
    later = roots.join(pl.concat([bond, vf]).select("host", "pid", pl.col("start_time").alias("died")),
                       on=["host", "pid"]).filter(pl.col("start_time") > pl.col("died"))
    assert later.height == 0
    for family, (probe, errno, _) in FAMILIES.items():
        records = roots.filter(pl.col("root_cause") == family).height
        assert records == summary["counts"][family] == _counted(counters, probe, errno), family
    for family in ROUTINE:
        assert set(roots.filter(pl.col("root_cause") == family)["host"]) == set(roles["all"]), family


def test_findings_belong_to_their_hosts_records(fleet29):
    """Every finding names a record of ITS host (ids repeat across hosts): the truth of that
    (host, trace_id) says whether it is routine, and the finding agrees; every root cause's record
    is an open finding with its origin, every routine record one set aside."""
    root, _, _, _ = fleet29
    findings = _findings(root)
    truth = _truth(root)
    joined = findings.join(truth.select(*KEY, "root_cause", "expected_error"), on=KEY, how="left")
    assert joined["root_cause"].is_not_null().all(), joined.filter(pl.col("root_cause").is_null())
    assert (joined["expected"].fill_null(False) == joined["expected_error"]).all()
    assert findings.select(pl.struct(KEY).is_duplicated().sum()).item() == 0  # a re-sent record once
    failures = truth.filter(pl.col("kind") == "failure")
    assert failures.join(findings, on=KEY, how="anti").height == 0
    for cause, (probe, errno, layer) in ROOT_CAUSES.items():
        got = joined.filter(pl.col("root_cause") == cause)
        assert got.height == truth.filter(pl.col("root_cause") == cause).height, cause
        assert set(zip(got["bifurcation_probe"], got["bifurcation_errno"], got["origin_layer"], strict=True)) == {
            (probe, errno, layer)}, cause


def test_routine_families_are_set_aside(fleet29):
    """The GID scan's empty entries, NCCL's dma-buf test and the agent's short buffer: set aside on
    every host, under every probe set, the callers went on."""
    _, _, _, scores = fleet29
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0 and e["open_findings"] == 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0


def test_every_cause_is_found(fleet29):
    """Each root cause is a finding on every record, in its own pure cluster with the right
    bifurcation: the bond fault though its records have three chain shapes."""
    _, _, _, scores = fleet29
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, (cause, e)
        assert e["dominant_cluster_purity"] == 1.0 and e["cluster_completeness"] == 1.0, (cause, e)
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_one_cluster_per_cause(fleet29):
    """Two clusters, one per root cause, over its hosts with every failure; none for a routine
    family, the probe sets or the collector's ways."""
    root, summary, result, _ = fleet29
    clusters = result.clusters
    assert clusters.height == len(ROOT_CAUSES), clusters
    for cause, hosts in (("bond_gid_ndev_gone", summary["roles"]["bond"]),
                         ("vf_alloc_pd_opcode_refused", summary["roles"]["vf"])):
        probe, errno, layer = ROOT_CAUSES[cause]
        rows = clusters.filter(pl.col("signature").str.contains(f"{probe} {errno}", literal=True))
        assert rows.height == 1, (cause, clusters)
        row = rows.row(0, named=True)
        assert row["hosts"] == len(hosts) and row["failures"] == summary["counts"][cause], (cause, row)
        assert row["origin_layer"] == layer, (cause, row)
        example = row["example_trace_id"]
        truth = _truth(root).filter(pl.col("trace_id") == example, pl.col("root_cause") == cause)
        assert truth.height >= 1, (cause, example)  # the example is one of the cause's records


def test_host_alerts(fleet29):
    """The VF host alerts (every new rank's ALLOC_PD fails); no alert elsewhere, none naming a
    routine errno; the bond hosts may alert on ENODEV (tolerated, not asked for)."""
    _, summary, result, _ = fleet29
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false
    assert summary["roles"]["vf"][0] in {h for h, *_ in rows}, rows


def test_control_fleet_without_faults(control29):
    """The control: the same collector and fleet, neither fault: no cluster, no open finding, no
    alert, every routine record set aside, perfect scores."""
    root, summary, result, scores = control29
    assert not summary["roles"]["bond"] and not summary["roles"]["vf"]
    assert set(summary["counts"]) == set(ROUTINE)
    assert result.clusters.height == 0, result.clusters
    assert result.host_alerts.height == 0, result.host_alerts
    assert _findings(root).filter(~pl.col("expected").fill_null(False)).height == 0
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0
    for key in ("expected_error_precision", "expected_error_recall", "routine_set_aside"):
        assert scores[key] == 1.0, (key, scores[key])

"""The audit scored on tests/fleetgen28, a twenty-eighth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: LOSS and TRUNCATION. One host's crash loop (~2,000 CREATE_QP failures a second for
90 minutes) seen mostly through the counters (records capped per signature, most of the rest lost
in a full ring, whole intervals with failures and no record, two daemon restarts) and through
trees cut at the slot's room; a rare fault whose every record is complete; two routine families
as full and as cut trees. generator.py gives the tracer's loss model and the reasons for the truth.

A tree cut inside a loop longer than any complete record's (reg_mr after 58 successful
pin_user_pages_fast calls, a region of more than 116 MiB: 64 frames ending in the pin loop, the
failing pin lost) was kept open as "reg_mr: ib_umem_get EFAULT" on every host -- a strict xfail
as written; the audit now matches it with the loop's turns folded (audit._folded).
"""

from __future__ import annotations

from datetime import datetime

import polars as pl
from fleet_harness import (
    assert_errno_from_reference,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen28 import ROOM_TIMED, ROOM_UNTIMED, ROOT_CAUSES, ROUTINE, TREES, generate

from tracer.schema import dataset_files, read

# 24 hosts x 3 h (~8 CPU s to build, ~1 s to audit); the control: 16 hosts x 3 h, no fault
SHAPE = {"hosts": 24, "hours": 3, "seed": 28}
CONTROL = {"hosts": 16, "hours": 3, "seed": 2828, "faults": False}
fleet28 = audited_fleet("fleet28", generate, package="fleetgen28", **SHAPE)
control28 = audited_fleet("control28", generate, package="fleetgen28", **CONTROL)

STANDS = pl.col("repeat_count").fill_null(1).sum()
FAMILIES = {**ROOT_CAUSES, **ROUTINE}


def _events(root) -> pl.DataFrame:
    return read(dataset_files(root, "events"), "events")


def _traces(root) -> pl.DataFrame:
    """One row per trace: its root frame, its frame count, whether it is timed, its labels."""
    events = _events(root)
    shape = events.group_by("host", "trace_id").agg(
        pl.len().alias("frames"), pl.col("latency_ns").is_not_null().all().alias("timed"),
        pl.col("depth").sort_by("seq").alias("depths"), pl.col("seq").sort().alias("seqs"),
        pl.struct("probe", "errno").sort_by("seq").alias("chain"))
    truth = read(dataset_files(root, "truth"), "truth")
    return (events.filter(pl.col("seq") == 0).join(shape, on=["host", "trace_id"])
            .join(truth.select("host", "trace_id", "root_cause"), on=["host", "trace_id"], how="left"))


def _has(chain, probe: str, errno: str | None) -> bool:
    return any(f["probe"] == probe and f["errno"] == errno for f in chain)


def _counted(counters: pl.DataFrame, probe: str, errno: str) -> pl.DataFrame:
    """Per host and snapshot: failures of `probe` with `errno` as the counters counted them."""
    cells = (counters.filter(pl.col("probe") == probe).select("host", "snapshot_time", "errno_counts")
             .explode("errno_counts").unnest("errno_counts").filter(pl.col("errno") == errno))
    return cells.group_by("host", "snapshot_time").agg(pl.col("count").sum().alias("counted"))


def _at(summary, key: str) -> datetime:
    return datetime.fromisoformat(summary["times"][key])


def _findings(root) -> pl.DataFrame:
    return read(root / "audit" / "findings.parquet", "findings")


def _cut_beyond(traces: pl.DataFrame) -> pl.DataFrame:
    """The routine reg_mr records cut outside a window whose kept frames end in the pin loop (the
    origin lost): the longest complete record of the family has fewer pins than they kept."""
    return traces.filter(pl.col("root_cause") == "rcache_guard_hole_pin_efault", pl.col("lost_events") > 0,
                         ~pl.col("timed"), ~pl.col("chain").map_elements(
                             lambda c: _has(c, "pin_user_pages_fast", "EFAULT"), return_dtype=pl.Boolean))


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen28", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every family's errno is one the reference
    gives near its origin, and so is the errno create_qp turns the SRQ lookup's ENOENT into."""
    assert_functions_in_reference({fn for tree in TREES.values() for _, fn, _, _ in tree})
    for key, (probe, errno, _) in FAMILIES.items():
        assert_errno_from_reference(key, probe, errno)
    assert_errno_from_reference("srq_destroyed_under_create_qp", "create_qp", "EINVAL")
    assert_errno_from_reference("srq_destroyed_under_create_qp", "SRQ", "EINVAL")


def test_the_fleet_has_the_shapes_it_is_for(fleet28):
    root, summary, _, _ = fleet28
    roles = summary["roles"]
    traces = _traces(root)
    counters = read(dataset_files(root, "counters"), "counters")
    assert set(traces["host"]) == set(roles["all"]) and len(roles["all"]) == 24
    # every record fits its slot: complete within the room, cut ones fill it exactly, frames in
    # entry order (seq 0..n-1, each a child of the frame before or of one of its callers)
    room = pl.when(pl.col("timed")).then(ROOM_TIMED).otherwise(ROOM_UNTIMED)
    assert traces.filter((pl.col("lost_events") > 0) & (pl.col("frames") != room)).height == 0
    assert traces.filter(pl.col("frames") > room).height == 0
    for seqs, depths in traces.select("seqs", "depths").iter_rows():
        assert seqs == list(range(len(seqs))) and depths[0] == 0
        assert all(b <= a + 1 for a, b in zip(depths, depths[1:], strict=False)), depths
    # records plus their repeat counts never exceed what the counters counted, snapshot by snapshot
    records = traces.filter(pl.col("root_cause").is_not_null()).with_columns(
        pl.col("start_time").dt.truncate("1m").dt.offset_by("1m").alias("snapshot_time"))
    for family, (probe, errno, _) in FAMILIES.items():
        stands = (records.filter(pl.col("root_cause") == family).group_by("host", "snapshot_time")
                  .agg(STANDS.alias("stands")))
        joined = stands.join(_counted(counters, probe, errno), on=["host", "snapshot_time"], how="left")
        assert joined.filter(pl.col("counted").fill_null(0) < pl.col("stands")).height == 0, family
        total = _counted(counters, probe, errno)["counted"].sum()
        assert total == summary["counts"][family] >= stands["stands"].sum() == summary["stands"][family], family
    # the crash loop: one host, seen mostly through the counters: a few hundred-thousandths of its
    # failures are records, most record attempts lost in the full ring, whole snapshots with
    # failures and no record of them, and the records it has are complete and cut, some of them
    # without their origin frame
    storm = roles["storm"][0]
    loop = traces.filter(pl.col("root_cause") == "vf_qp_quota_crash_loop")
    assert set(loop["host"]) == {storm} and set(loop["comm"]) == {"kv-xfer"}
    counted = summary["counts"]["vf_qp_quota_crash_loop"]
    assert counted >= 5_000_000 and loop.height <= 200 and loop.select(STANDS).item() < counted / 2
    per_snapshot = _counted(counters.filter(pl.col("host") == storm), "mlx5_cmd_exec", "ENOMEM")
    seen = loop.select(pl.col("start_time").dt.truncate("1m").dt.offset_by("1m").alias("snapshot_time")).unique()
    assert per_snapshot.join(seen, on="snapshot_time", how="anti").height >= 30  # failures, no record
    storm_rows = counters.filter(pl.col("host") == storm, pl.col("snapshot_time") > _at(summary, "storm_from"),
                                 pl.col("snapshot_time") <= _at(summary, "storm_to"))
    assert storm_rows.group_by("snapshot_time").agg(pl.col("lost_records").first())["lost_records"].sum() >= 500
    cut = loop.filter(pl.col("lost_events") > 0)
    kept = cut["chain"].map_elements(lambda c: _has(c, "mlx5_cmd_exec", "ENOMEM"), return_dtype=pl.Boolean)
    assert cut.height >= 10 and kept.sum() >= 3 and (~kept).sum() >= 3
    assert loop.filter(pl.col("lost_events") == 0).height >= 20
    assert loop.select(pl.col("pid").n_unique()).item() >= 30  # a new process every restart
    # the daemon restarts: snapshots missing, a short interval after; record numbers restart
    for host in roles["restarts"]:
        snaps = counters.filter(pl.col("host") == host).select("snapshot_time", "interval_s").unique().sort(
            "snapshot_time")
        assert snaps["snapshot_time"].diff().max().total_seconds() >= 180, host
        assert snaps["interval_s"].min() < 60, host
    # the stall: a healthy host loses records of routine families only; the counters stay exact
    stall = roles["stall"][0]
    lost = counters.filter(pl.col("lost_records") > 0).group_by("host").agg(pl.col("snapshot_time").n_unique())
    assert set(lost["host"]) == {storm, stall}
    assert set(traces.filter(pl.col("host") == stall)["root_cause"].drop_nulls()) <= set(ROUTINE)
    # the rare fault: six records on four hosts, every one complete and standing for itself
    rare = traces.filter(pl.col("root_cause") == "srq_destroyed_under_create_qp")
    assert rare.height == 6 and set(rare["host"]) == set(roles["rare"]) and len(roles["rare"]) == 4
    assert (rare["lost_events"] == 0).all() and rare["repeat_count"].is_null().all()
    assert summary["counts"]["srq_destroyed_under_create_qp"] == 6 and set(rare["command"]) == {"create_qp"}
    # the routine families, on every host, as complete and as cut trees: the pin loop's EFAULT cut
    # away in most cut records, the padding's EOPNOTSUPP kept in every one (entered before the loop)
    for family in ROUTINE:
        rows = traces.filter(pl.col("root_cause") == family)
        assert set(rows["host"]) == set(roles["all"]), family
        assert rows.filter(pl.col("lost_events") == 0).height >= 200, family
        assert rows.filter(pl.col("lost_events") > 0).height >= 50, family
        assert rows.filter(pl.col("lost_events") > 0, pl.col("timed")).height >= 20, family
    pad = traces.filter(pl.col("root_cause") == "cq_128b_padding_refused")
    assert pad["chain"].map_elements(lambda c: _has(c, "create_cq_user", "EOPNOTSUPP"), return_dtype=pl.Boolean).all()
    assert pad.filter(pl.col("lost_events") > 0, ~pl.col("timed")).height >= 10  # cut even untimed
    assert pad.select(STANDS).item() > pad.height  # a job's ranks in one interval: K records, the rest counted
    pins = traces.filter(pl.col("root_cause") == "rcache_guard_hole_pin_efault", pl.col("lost_events") > 0)
    assert (~pins["chain"].map_elements(lambda c: _has(c, "pin_user_pages_fast", "EFAULT"),
                                        return_dtype=pl.Boolean)).sum() >= 100
    assert _cut_beyond(traces).height >= 100


def test_routine_families_are_set_aside_where_a_complete_record_explains_them(fleet28):
    """The padding refusal on every record, cut or not, and the guard-hole EFAULT on every complete
    record and every cut one whose kept frames begin a complete record (timed ones cut at 32 frames,
    untimed ones that kept the failing pin): set aside, the processes went on."""
    root, _, _, scores = fleet28
    traces = _traces(root)
    findings = _findings(root)
    beyond = set(_cut_beyond(traces)["trace_id"])
    for family in ROUTINE:
        rows = traces.filter(pl.col("root_cause") == family, ~pl.col("trace_id").is_in(list(beyond)))
        got = rows.join(findings.select("host", "trace_id", "expected"), on=["host", "trace_id"], how="left")
        assert got.height == rows.height and got["expected"].fill_null(False).all(), (
            family, got.filter(~pl.col("expected").fill_null(False)).select("trace_id", "lost_events", "timed"))
        assert got.filter(pl.col("lost_events") > 0).height >= 50, family
    assert scores["per_root_cause"]["cq_128b_padding_refused"]["open_findings"] == 0
    assert scores["expected_error_precision"] == 1.0


def test_routine_trees_cut_beyond_every_complete_record_are_set_aside(fleet28):
    """The guard-hole EFAULT records cut outside a window after 58 successful pins: their origin is
    lost and no complete record begins with their frames, but they are the family's (the kept
    frames are its chain up to the pin loop, the same caller, the process went on): set aside too,
    and no cluster but the two root causes'."""
    root, _, result, scores = fleet28
    beyond = _cut_beyond(_traces(root))
    got = beyond.join(_findings(root).select("host", "trace_id", "expected"), on=["host", "trace_id"], how="left")
    open_ = got.filter(~pl.col("expected").fill_null(False))
    assert open_.height == 0, f"{open_.height} of {got.height} cut reg_mr records open"
    assert scores["routine_set_aside"] == 1.0 and scores["false_findings"] == 0
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters


def test_every_cause_is_found(fleet28):
    """Each root cause is a finding on every record, in its own pure cluster, with the right
    bifurcation: the crash loop's cut records too, those that lost their origin frame included (a
    complete record of the same chain begins with their frames)."""
    root, _, _, scores = fleet28
    for key in ("cluster_purity", "cluster_completeness", "bifurcation_top1", "origin_layer_top1",
                "expected_error_precision"):
        assert scores[key] == 1.0, (key, scores[key])
    assert scores["false_findings_on_good"] == 0
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, (cause, e)
        assert e["dominant_cluster_purity"] == 1.0 and e["bifurcation_top1"] == 1.0, (cause, e)
    traces = _traces(root)
    loop = traces.filter(pl.col("root_cause") == "vf_qp_quota_crash_loop", pl.col("lost_events") > 0)
    got = loop.join(_findings(root), on=["host", "trace_id"])
    assert got.height == loop.height
    assert set(zip(got["bifurcation_probe"], got["bifurcation_errno"], strict=True)) == {("mlx5_cmd_exec", "ENOMEM")}
    assert not got["expected"].fill_null(False).any()


def test_one_cluster_per_cause(fleet28):
    """One cluster for each root cause, over its hosts, counting at least every failure its records
    stand for and at most what the counters counted."""
    _, summary, result, _ = fleet28
    clusters = result.clusters
    for cause, hosts in (("vf_qp_quota_crash_loop", summary["roles"]["storm"]),
                         ("srq_destroyed_under_create_qp", summary["roles"]["rare"])):
        probe, errno, _ = ROOT_CAUSES[cause]
        rows = clusters.filter(pl.col("signature").str.contains(f"{probe} {errno}", literal=True))
        assert rows.height == 1, (cause, clusters)
        row = rows.row(0, named=True)
        assert row["hosts"] == len(hosts), (cause, row)
        assert summary["stands"][cause] <= row["failures"] <= summary["counts"][cause], (cause, row)
    names = clusters["signature"].to_list()
    assert not [s for s in names if "create_cq" in s], names  # the padding refusal: no cluster, cut or not


def test_host_alerts(fleet28):
    """The crash-looping host alerts (a persistent bad state: every bucket of the loop fails most
    CREATE_QPs); no alert on a host without a host fault -- the stall host that lost records, the
    restarted daemons, the routine families' hosts -- and none naming a routine errno; the rare
    fault's hosts may alert on its errnos (tolerated, not asked for)."""
    _, summary, result, _ = fleet28
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false
    assert summary["roles"]["storm"][0] in {h for h, *_ in rows}, rows


def test_control_fleet_quiet_where_records_explain_themselves(control28):
    """The control (the daemon stall, the restarts, the routine families, no fault): no alert, no
    finding of a root cause, every routine record set aside but those cut beyond every complete
    record (the miss test_routine_trees_cut_beyond_every_complete_record_are_set_aside names)."""
    root, summary, result, scores = control28
    assert not summary["roles"]["storm"] and not summary["roles"]["rare"]
    assert set(summary["counts"]) <= set(ROUTINE)
    assert result.host_alerts.height == 0, result.host_alerts
    traces = _traces(root)
    beyond = set(_cut_beyond(traces)["trace_id"])
    findings = _findings(root).filter(~pl.col("expected").fill_null(False))
    assert set(findings["trace_id"]) <= beyond
    assert scores["false_findings_on_good"] == 0
    assert scores["per_root_cause"]["cq_128b_padding_refused"]["open_findings"] == 0


def test_control_fleet_without_faults(control28):
    """The control with no fault: no cluster, no open finding, every routine record set aside."""
    root, _, result, scores = control28
    assert result.clusters.height == 0, result.clusters
    assert _findings(root).filter(~pl.col("expected").fill_null(False)).height == 0
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0, (family, e)
    assert scores["false_findings"] == 0

"""The audit scored on tests/fleetgen30, a thirtieth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: A LONG-LIVED FLEET'S HISTORY. Three UTC days of an mlx5 training fleet whose
collector evolved under it: a rolling re-image (kernel 6.5 -> 6.8, NIC firmware, collector 1.4 ->
2.1, a new boot id) of two thirds of the hosts, so schema version 1 files (no path2, output,
repeat_count; no counter summaries) sit beside version 2 files in the same partitions; a probe set
that grew; in-kernel aggregation (repeat_count) from 2.1 on; collector 1.4 restarts shipping
negative counter deltas; hosts leaving, joining, and one renamed by its re-image. On it: a fault
only on the new release (reg_mr EFAULT at mlx5r_umr_update_mr_pas, 19 hosts), a crash loop after
one host's firmware flash (alloc_pd EIO at mlx5_cmd_exec, aggregated ~60 a record), a ToR port's
ARP timeouts on the renamed host under both its names; three routine families, one of whose rate
doubles with the new release (the GID scan's empty slots). generator.py gives the reasons for the
truth.
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
from fleetgen30 import ROOT_CAUSES, ROUTINE, TREES, generate

from tracer.schema import SNAPSHOT_KEY, dataset_files, file_metadata, read, validate_file

# 30 hosts x 60 h (~12 s to build, ~1 s to audit); the control: 18 hosts x 36 h, no fault (~4 s)
SHAPE = {"hosts": 30, "hours": 60, "seed": 30}
CONTROL = {"hosts": 18, "hours": 36, "seed": 3030, "faults": False}
fleet30 = audited_fleet("fleet30", generate, package="fleetgen30", **SHAPE)
control30 = audited_fleet("control30", generate, package="fleetgen30", **CONTROL)

FAMILIES = {**ROOT_CAUSES, **ROUTINE}
KEY = ["host", "trace_id"]
OLD, NEW = "6.5.0-1024-nvidia", "6.8.0-1017-nvidia"


def _events(root) -> pl.DataFrame:
    return read(dataset_files(root, "events"), "events")


def _truth(root) -> pl.DataFrame:
    return read(dataset_files(root, "truth"), "truth")


def _roots(root) -> pl.DataFrame:
    roots = _events(root).filter(pl.col("seq") == 0)
    return roots.join(_truth(root).select(*KEY, "root_cause", "expected_error"), on=KEY, how="left")


def _findings(root) -> pl.DataFrame:
    return read(root / "audit" / "findings.parquet", "findings")


def _counters(root) -> pl.DataFrame:
    return read(dataset_files(root, "counters"), "counters").unique(list(SNAPSHOT_KEY), keep="first")


def _counted(counters: pl.DataFrame, probe: str, errno: str) -> int:
    """Failures of `probe` with `errno` as the counters counted them (a reset's negative deltas as 0)."""
    cells = (counters.filter(pl.col("probe") == probe).select("errno_counts").explode("errno_counts")
             .unnest("errno_counts"))
    return int(cells.filter(pl.col("errno") == errno, pl.col("count") > 0)["count"].sum())


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen30", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every family's errno is one the reference
    gives near its origin (mlx5_cmd_exec: the firmware status mapping)."""
    assert_functions_in_reference({fn for tree in TREES.values() for _, fn, _, _ in tree})
    for key, (probe, errno, _) in FAMILIES.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_history_is_in_the_dataset(fleet30):
    """Three UTC days; schema version 1 and 2 files side by side in one partition on a re-image day
    (the older without the later columns, and without counter summaries); a release, a boot id and a
    probe set changing host by host; aggregation only in version 2 files; negative counter deltas on
    the hosts whose 1.4 daemon restarted; hosts leaving, joining, one renamed."""
    root, summary, _, _ = fleet30
    roles = summary["roles"]
    dates = {f.parent.parent.name for f in dataset_files(root, "events")}
    assert dates == {"date=2026-03-02", "date=2026-03-03", "date=2026-03-04"}
    versions: dict = {}
    for f in dataset_files(root, "events"):
        meta = file_metadata(f)
        names = set(validate_file(f, "events").schema.names)
        versions.setdefault(f.parent, set()).add(meta["schema_version"])
        if meta["schema_version"] == "1":
            assert not names & {"path2", "output", "repeat_count"}, f
        else:
            assert {"path2", "output", "repeat_count"} <= names, f
    assert sum(v == {"1", "2"} for v in versions.values()) >= 10  # re-image days: both, side by side
    for f in dataset_files(root, "counters"):
        summary_file = root / "counter_buckets" / f.relative_to(root / "counters")
        assert summary_file.exists() == (file_metadata(f)["schema_version"] == "2"), f
    events = _events(root)
    roots = events.filter(pl.col("seq") == 0)
    per_host = roots.group_by("host").agg(pl.col("kernel_release").unique().sort(),
                                          pl.col("trace_id").str.split(":").list.get(1).n_unique().alias("boots"),
                                          pl.col("start_time").min().alias("first"),
                                          pl.col("start_time").max().alias("last"))
    releases = {h: r for h, r, *_ in per_host.iter_rows()}
    boots = {h: b for h, _, b, *_ in per_host.iter_rows()}
    renamed_old, renamed_new = next(iter(roles["renamed"].items()))
    for h in roles["upgraded"]:
        if h == renamed_new:
            assert releases[renamed_old] == [OLD] and releases[h] == [NEW]
        else:
            assert releases[h] == [OLD, NEW] and boots[h] == 2, h
    for h in roles["stayed_old"] + roles["left"]:
        assert releases[h] == [OLD], h
    for h in roles["joined"]:
        assert releases[h] == [NEW], h
    first = dict(zip(per_host["host"], per_host["first"], strict=True))
    last = dict(zip(per_host["host"], per_host["last"], strict=True))
    assert min(first[h] for h in roles["joined"]) > max(last[h] for h in roles["left"])
    assert last[renamed_old] < first[renamed_new]
    # in-kernel aggregation only where the column exists: collector 2.1 on the new release
    aggregated = roots.filter(pl.col("repeat_count") > 1)
    assert aggregated.height > 100 and set(aggregated["kernel_release"]) == {NEW}
    assert roots.filter(pl.col("kernel_release") == OLD)["repeat_count"].is_null().all()
    # counters: the probe set grew with the collector; negative deltas on the reset hosts only
    counters = _counters(root)
    sets = counters.group_by("kernel_release").agg(pl.col("probe_set").unique(), pl.col("probe").n_unique())
    by_release = {r: (s, n) for r, s, n in sets.iter_rows()}
    assert by_release[OLD][0] == ["rdma-1.4"] and by_release[NEW][0] == ["rdma-2.1"]
    assert by_release[NEW][1] == by_release[OLD][1] + 3
    negative = counters.filter(pl.col("invocations") < 0)
    assert negative.height and set(negative["host"]) == set(roles["reset"])


def test_the_faults_have_their_shapes(fleet30):
    """The UMR fault only on the new release, on every host that ran it; the flash host's crash
    loop aggregated in the kernel; the ARP timeouts on one machine under both its names; the GID
    scan's routine rate doubled by the new release; the root causes' failures exactly what the
    counters counted."""
    root, summary, _, _ = fleet30
    roles = summary["roles"]
    roots = _roots(root)
    counters = _counters(root)
    umr = roots.filter(pl.col("root_cause") == "umr_pas_efault_new_driver")
    assert set(umr["kernel_release"]) == {NEW} and umr.height >= 100
    assert set(umr["host"]) == set(roles["upgraded"] + roles["joined"])
    flash = roots.filter(pl.col("root_cause") == "fw_flash_bad_sys_state")
    assert set(flash["host"]) == set(roles["flash"]) and set(flash["comm"]) == {"kvcached"}
    assert flash["repeat_count"].max() >= 30 and flash["repeat_count"].fill_null(1).sum() >= 1500
    arp = roots.filter(pl.col("root_cause") == "tor_port_arp_timeout")
    renamed = next(iter(roles["renamed"].items()))
    assert set(arp["host"]) == set(roles["arp"]) == set(renamed) and len(renamed) == 2
    assert set(arp["kernel_release"]) == {OLD, NEW}
    for cause, (probe, errno, _) in ROOT_CAUSES.items():
        stands = roots.filter(pl.col("root_cause") == cause)["repeat_count"].fill_null(1).sum()
        assert stands == summary["stands_for"][cause] == _counted(counters, probe, errno), cause
    # the routine GID scan: 2 empty slots of 8 on the old release, 4 on the new
    gid = counters.filter(pl.col("probe") == "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY",
                          pl.col("invocations") > 0)
    rate = (gid.explode("errno_counts").unnest("errno_counts").group_by("kernel_release")
            .agg((pl.col("count").sum() / pl.col("invocations").sum()).alias("rate")))
    rates = dict(rate.iter_rows())
    assert abs(rates[OLD] - 0.25) < 0.01 and abs(rates[NEW] - 0.5) < 0.01, rates
    for family in ROUTINE:
        assert set(roots.filter(pl.col("root_cause") == family)["host"]) == set(roles["all"]), family


def test_findings_match_the_truth(fleet30):
    """Every finding is a record of its host; set aside exactly when routine; every root cause's
    record an open finding with its origin."""
    root, _, _, _ = fleet30
    findings = _findings(root)
    truth = _truth(root)
    joined = findings.join(truth.select(*KEY, "root_cause", "expected_error"), on=KEY, how="left")
    assert joined["root_cause"].is_not_null().all()
    assert (joined["expected"].fill_null(False) == joined["expected_error"]).all()
    assert truth.filter(pl.col("kind") == "failure").join(findings, on=KEY, how="anti").height == 0
    for cause, (probe, errno, layer) in ROOT_CAUSES.items():
        got = joined.filter(pl.col("root_cause") == cause)
        assert got.height == truth.filter(pl.col("root_cause") == cause).height, cause
        assert set(zip(got["bifurcation_probe"], got["bifurcation_errno"], got["origin_layer"], strict=True)) == {
            (probe, errno, layer)}, cause


def test_routine_families_are_set_aside(fleet30):
    """The GID scan's empty slots (at twice the rate after the re-image), the refused CQE padding and
    the MR cache's cgroup retries: set aside on every host, both releases, both collectors."""
    _, _, _, scores = fleet30
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0 and e["open_findings"] == 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0


def test_every_cause_is_found(fleet30):
    """Perfect scores: each root cause detected on every record, in its own pure cluster, with the
    right bifurcation and origin layer; nothing routine open."""
    _, _, _, scores = fleet30
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, (cause, e)
        assert e["dominant_cluster_purity"] == 1.0 and e["cluster_completeness"] == 1.0, (cause, e)
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_one_cluster_per_cause(fleet30):
    """Three clusters, one per root cause, over its hosts (the renamed machine's two names) with every
    failure an aggregated record stands for; none for the routine, the re-image or the collector."""
    root, summary, result, _ = fleet30
    clusters = result.clusters
    assert clusters.height == len(ROOT_CAUSES), clusters
    for cause, (probe, errno, layer) in ROOT_CAUSES.items():
        rows = clusters.filter(pl.col("signature").str.contains(f"{probe} {errno}", literal=True))
        assert rows.height == 1, (cause, clusters)
        row = rows.row(0, named=True)
        hosts = summary["family_hosts"][cause]
        assert row["hosts"] == len(hosts) and row["failures"] == summary["stands_for"][cause], (cause, row)
        assert row["origin_layer"] == layer, (cause, row)
        example = _truth(root).filter(pl.col("trace_id") == row["example_trace_id"])
        assert example["root_cause"].to_list() == [cause], (cause, row)


def test_the_new_release_fault_names_the_release(fleet30):
    """The UMR cluster says what its hosts share when it fails: the release (or its firmware or image).
    A strict xfail as the generator was written: 'since kernel update' counted only the hosts that
    switched in the window (16 of 19; 3 joined on 6.8), under the 90 % share it needs; a release
    some host updated to is new for the hosts that came up on it too (audit._cluster_table)."""
    _, _, result, _ = fleet30
    row = result.clusters.filter(pl.col("signature").str.contains("mlx5r_umr_update_mr_pas EFAULT", literal=True))
    signature = row["signature"].item()
    assert any(s in signature for s in (NEW, "nic_fw=28.42.1000", "image=train-2026.03")), signature


def test_host_alerts(fleet30):
    """The flash host alerts (every ALLOC_PD fails for three hours); no alert on a routine errno, the
    re-image, the rename, a reset or a joining host."""
    _, summary, result, _ = fleet30
    roles = summary["roles"]
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    acceptable = {h: {"EIO"} for h in roles["flash"]}
    for h in roles["arp"]:
        acceptable.setdefault(h, set()).add("ETIMEDOUT")
    for h in roles["umr"]:
        acceptable.setdefault(h, set()).add("EFAULT")
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false
    assert set(roles["flash"]) <= {h for h, *_ in rows}, rows


def test_control_fleet_without_faults(control30):
    """The same history (re-images, rename, joins, leaves, resets, both collectors) without the three
    faults: no cluster, no open finding, no alert, every routine record set aside, perfect scores."""
    root, summary, result, scores = control30
    assert set(summary["counts"]) == set(ROUTINE)
    assert summary["roles"]["upgraded"] and summary["roles"]["joined"] and summary["roles"]["reset"]
    assert result.clusters.height == 0, result.clusters
    assert result.host_alerts.height == 0, result.host_alerts
    assert _findings(root).filter(~pl.col("expected").fill_null(False)).height == 0
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0
    for key in ("expected_error_precision", "expected_error_recall", "routine_set_aside"):
        assert scores[key] == 1.0, (key, scores[key])

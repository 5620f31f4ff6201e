"""The audit scored on tests/fleetgen24, a twenty-fourth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: a dataset written by another team's collector, to the letter of tracer/schema.py
and docs/architecture.md but with every open choice taken otherwise: only the columns a reader
needs (comm, ppid, job_id, metadata, path, lost_events null; path2, output, repeat_count and host
absent), sparse counters with vendor/layer/live/interval_s null, several part files per partition
with their own codecs, row groups, string encodings and timestamp zones, rows out of time order,
uploads delivered twice, a host whose counters stop for an hour across midnight. The fleet under
it: 40 mlx5 RoCE hosts of KV-cache servers; two routine refusals every server goes on from
(EINVAL at ib_uverbs_ex_query_device, EINVAL at the uverbs create_cq for a too-high completion
vector) and three root causes: one host out of mkeys (ENOMEM at mlx5_cmd_exec, a crash loop),
one host whose CREATE_QP command times out now and then (ETIMEDOUT at mlx5_cmd_exec), and a rack
whose RoCE GID entry vanished (ENODATA at rdma_get_gid_attr, fatal). generator.py gives the
reasons for the truth."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import datetime

import polars as pl
import pyarrow.parquet as pq
from fleet_harness import (
    assert_errno_from_reference,
    assert_every_cause_found,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen24 import ROOT_CAUSES, ROUTINE, generate
from fleetgen24.generator import TREES

from tracer.schema import dataset_files, read, validate_file

# 40 hosts x 3 h (~4.5 CPU s to build)
SHAPE = {"hosts": 40, "hours": 3, "seed": 24}
fleet24 = audited_fleet("fleet24", generate, package="fleetgen24", **SHAPE)


def _truth(root) -> pl.DataFrame:
    return read(dataset_files(root, "truth"), "truth")


def _family(root, family: str) -> pl.DataFrame:
    return _truth(root).filter(pl.col("root_cause") == family)


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen24", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's and routine family's errno
    is one the reference gives near its origin (mlx5_cmd_exec: the firmware mapping)."""
    assert_functions_in_reference({fn for tree in TREES.values() for _, fn, _, _ in tree})
    for key, (probe, errno, _) in {**ROOT_CAUSES, **ROUTINE}.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_dataset_is_the_other_teams(fleet24):
    """The files are what the generator says it wrote: documented layout, other names, several
    parts per partition, mixed codecs/encodings/zones, nulls where the schema allows, columns
    version 2 added left out, two hosts' files keeping the host column; and every file passes the
    data model's own footer check (the documents allow each of these choices)."""
    root, summary, _, _ = fleet24
    files = summary["files"]
    for table in ("events", "counters"):
        paths = dataset_files(root, table)
        assert len(paths) == len([f for f in files if f["table"] == table]) > 80
        for p in paths:
            assert p.name.startswith("part-hermes-") and p.parent.name.startswith("host=")
            validate_file(p, table)
        per_partition = pl.DataFrame({"d": [str(p.parent) for p in paths]}).group_by("d").len()
        assert per_partition["len"].max() >= 3
    assert {f["codec"] for f in files} == {"zstd", "snappy", "gzip", "lz4", "brotli", "none"}
    assert {f["strings"] for f in files} == {"plain", "dictionary", "large"}
    assert {f["zone"] for f in files} == {"UTC", "+00:00", None}
    assert not all(f["statistics"] for f in files) and any(f["page_v2"] for f in files)
    # each duplicated host: one events and one counters upload a second time, on each date
    dup = {(f["table"], f["path"].split("/")[1], f["path"].split("/")[2]) for f in files if f["duplicate"]}
    assert len(dup) == sum(f["duplicate"] for f in files) == 2 * 2 * len(summary["roles"]["dup"])
    assert any(f["extra"] for f in files) and not all(f["extra"] for f in files)
    assert len({tuple(f["column_order"]) for f in files if f["table"] == "events"}) > 10
    assert any(f["rows"] == 0 for f in files if f["table"] == "events")
    # two dates: the window crosses midnight
    assert {p.parent.parent.name for p in dataset_files(root, "events")} == {"date=2026-12-03", "date=2026-12-04"}
    stored = set(summary["roles"]["stored_host"])
    for p in dataset_files(root, "events"):
        names = set(pq.read_schema(p).names)
        assert not names & {"path2", "output", "repeat_count"}, p
        assert ("host" in names) == (p.parent.name.removeprefix("host=") in stored), p
    events = read(dataset_files(root, "events"), "events")
    for column in ("comm", "ppid", "job_id", "metadata", "path", "lost_events", "repeat_count"):
        assert events[column].null_count() == events.height, column
    # the interleaved hosts' files: a trace's frames out of seq order somewhere, others' in order
    disordered = set()
    for p in dataset_files(root, "events"):
        rows = pq.read_table(p, columns=["trace_id", "seq"]).to_pylist()
        if any(a["trace_id"] == b["trace_id"] and b["seq"] < a["seq"] for a, b in zip(rows, rows[1:], strict=False)):
            disordered.add(p.parent.name.removeprefix("host="))
    assert disordered == set(summary["roles"]["interleaved"]), disordered
    interleaved = [p for p in dataset_files(root, "events")
                   if p.parent.name.removeprefix("host=") in summary["roles"]["interleaved"]]
    assert any(len({r["trace_id"] for r in pq.read_table(p, columns=["trace_id"]).to_pylist()[:20]}) > 3
               for p in interleaved)
    untimed = events.filter(pl.col("latency_ns").is_null())
    assert untimed.height and (untimed["start_time"] == untimed["end_time"]).all()
    counters = read(dataset_files(root, "counters"), "counters")
    for column in ("vendor", "layer", "live", "interval_s", "probe_set", "lost_records"):
        assert counters[column].null_count() == counters.height, column


def test_the_fleet_has_the_shapes_it_is_for(fleet24):
    root, summary, _, _ = fleet24
    roles = summary["roles"]
    hosts = set(summary["hosts"])
    assert len(hosts) == 40
    fh = summary["family_hosts"]
    assert set(fh["ex_query_device_comp_mask"]) == hosts and set(fh["create_cq_vector_retry"]) == hosts
    assert fh["mkey_lim_err_host"] == roles["mkey"] and fh["fw_cmd_timeout_intermittent"] == roles["timeout"]
    assert set(fh["gid_entry_removed_rack"]) == set(roles["gid"])
    counts = summary["family_counts"]
    assert counts["ex_query_device_comp_mask"] >= 2000 and counts["create_cq_vector_retry"] >= 400
    assert counts["mkey_lim_err_host"] >= 300 and counts["gid_entry_removed_rack"] >= 300
    # the intermittent fault recurs: 10 or more times in 4 or more 15-minute buckets
    assert counts["fw_cmd_timeout_intermittent"] >= 10 and summary["timeout_buckets"] >= 4
    truth = _truth(root)
    events = read(dataset_files(root, "events"), "events")
    roots = events.filter(pl.col("seq") == 0).unique(["host", "trace_id"])
    assert roots.height == truth.height  # one truth row per distinct record
    mkey = _family(root, "mkey_lim_err_host").join(roots, on=["trace_id", "host"])
    assert mkey["end_time"].min() >= datetime.fromisoformat(summary["mkey_onset"])
    gid = _family(root, "gid_entry_removed_rack").join(roots, on=["trace_id", "host"])
    assert gid["end_time"].min() >= datetime.fromisoformat(summary["gid_onset"])
    # at-least-once delivery: repeated records on the duplicated hosts only
    repeated = events.group_by("host", "trace_id", "seq").len().filter(pl.col("len") > 1)
    assert set(repeated["host"]) == set(roles["dup"])
    # the collector gap: no counters on the gap host between its bounds, events there all along
    counters = read(dataset_files(root, "counters"), "counters")
    lo, hi = (datetime.fromisoformat(t) for t in summary["gap"])
    gap_host = roles["gap"][0]
    in_gap = pl.col("snapshot_time").is_between(lo, hi, closed="left")
    assert counters.filter(pl.col("host") == gap_host, in_gap).height == 0
    assert counters.filter(pl.col("host") != gap_host, in_gap)["host"].n_unique() == 39
    assert roots.filter(pl.col("host") == gap_host, pl.col("start_time").is_between(lo, hi)).height > 50


def test_routine_families_are_set_aside(fleet24):
    """The two refusals every server goes on from are set aside everywhere."""
    _, _, _, scores = fleet24
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] >= 400 and e["open_findings"] == 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0


def test_every_cause_is_found(fleet24):
    """Each root cause is a finding on every trace, in its own pure cluster."""
    _, _, _, scores = fleet24
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, (cause, e)
        assert e["dominant_cluster_purity"] == 1.0, (cause, e)
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_one_cluster_per_cause(fleet24):
    """Three clusters, one per cause, none for a routine family; each over its hosts, counting
    each record once though four hosts' uploads came twice (the mkey host's among them)."""
    root, summary, result, _ = fleet24
    clusters = result.clusters
    assert clusters.height == len(ROOT_CAUSES), clusters
    roles = {"mkey_lim_err_host": "mkey", "fw_cmd_timeout_intermittent": "timeout", "gid_entry_removed_rack": "gid"}
    for cause, (probe, errno, _) in ROOT_CAUSES.items():
        rows = clusters.filter(pl.col("signature").str.contains(probe), pl.col("signature").str.contains(errno))
        assert rows.height == 1, (cause, clusters)
        row = rows.row(0, named=True)
        assert row["hosts"] == len(summary["roles"][roles[cause]]), (cause, row)
        assert row["failures"] == _family(root, cause).height == summary["family_counts"][cause], (cause, row)


def test_host_alerts(fleet24):
    """The mkey host (ENOMEM or a persistent bad state) and the timeout host (ETIMEDOUT) alert;
    the rack's hosts may (ENODATA); no other host does: not the gap host, not the hosts whose
    uploads came twice, none for a routine family's EINVAL."""
    _, summary, result, _ = fleet24
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    missed = [host for host, errnos in summary["required_alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and e is None))
                         for h, a, _, e in rows)]
    assert not missed, (missed, rows)
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "baseline.cli", *args], capture_output=True, text=True,
                          timeout=600)


def test_cli_on_the_dataset(fleet24, tmp_path):
    """`baseline learn`, `baseline audit` and `baseline coverage` take the other team's dataset:
    exit 0, no traceback, outputs written."""
    root, _, _, _ = fleet24
    data = tmp_path / "dataset"
    shutil.copytree(root / "events", data / "events")
    shutil.copytree(root / "counters", data / "counters")
    learn = _run("learn", str(data), "-o", str(tmp_path / "model.parquet"))
    assert learn.returncode == 0 and "Traceback" not in learn.stderr + learn.stdout, learn.stderr[-3000:]
    assert (tmp_path / "model.parquet").is_file()
    audit = _run("audit", str(data), "-o", str(tmp_path / "out"), "--json")
    assert audit.returncode == 0 and "Traceback" not in audit.stderr + audit.stdout, audit.stderr[-3000:]
    for table in ("findings", "clusters", "host_alerts"):
        assert (tmp_path / "out" / f"{table}.parquet").exists(), table
    coverage = _run("coverage", str(data), "-o", str(tmp_path / "reports"), "--json")
    assert coverage.returncode == 0 and "Traceback" not in coverage.stderr + coverage.stdout, coverage.stderr[-3000:]

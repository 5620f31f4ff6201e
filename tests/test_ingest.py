"""Ingest: spool snapshots -> partitioned dataset; idempotent reruns; compaction; quarantine."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from baseline.pipeline.ingest import (
    apply_retention,
    compact_dataset,
    file_snapshots,
    ingest_spool,
    snapshot_date,
)
from tracer.schema import dataset_files, metadata_list, read, write_table

T0 = dt.datetime(2026, 11, 25, 10, 0, 0, tzinfo=dt.UTC)  # a Wednesday, ISO week 2026-W48


def snapshot_name(when: dt.datetime, seq: int) -> str:
    return f"snap-{when:%Y%m%dT%H%M%S}.{when.microsecond // 1000:03d}Z-{seq}"


def write_snapshot(
    spool: Path,
    host: str,
    when: dt.datetime,
    seq: int,
    *,
    probes: dict[str, tuple[int, int, dict[str, int]]] | None = None,
    vendor: str = "mlx5",
    kernel: str = "6.8.0-49-generic",
    traces: int = 1,
) -> Path:
    """One real spool snapshot: an events file (`traces` failure call trees) and counters.

    probes: probe -> (invocations, failures, errno histogram) for this interval.
    """
    snap = spool / host / snapshot_name(when, seq)
    probes = probes or {
        "ib_uverbs_reg_mr": (10, 1, {"EFAULT": 1}),
        "mlx5_ib_reg_user_mr": (10, 1, {"EFAULT": 1}),
    }
    counters = pl.DataFrame(
        {
            "host": [host] * len(probes),
            "snapshot_time": [when] * len(probes),
            "interval_s": [5.0] * len(probes),
            "kernel_release": [kernel] * len(probes),
            "vendor": [vendor] * len(probes),
            "probe_set": ["rdma"] * len(probes),
            "probe": list(probes),
            "layer": ["uverbs" if p.startswith("ib_uverbs") else "driver" for p in probes],
            "live": [True] * len(probes),
            "invocations": [v[0] for v in probes.values()],
            "failures": [v[1] for v in probes.values()],
            "errno_counts": [[{"errno": e, "count": c} for e, c in v[2].items()] for v in probes.values()],
            "lost_records": [0] * len(probes),
        }
    )
    rows = []
    for t in range(traces):
        trace_id = f"{host}:{seq}:{t}"
        for s, (probe, layer, depth) in enumerate(
            [("ib_uverbs_reg_mr", "uverbs", 0), ("mlx5_ib_reg_user_mr", "driver", 1)]
        ):
            rows.append(
                {
                    "trace_id": trace_id, "seq": s, "ts_ns": 1_000 * seq + s, "pid": 100, "tid": 100,
                    "comm": "python", "probe": probe, "layer": layer, "depth": depth, "ret": -14,
                    "errno": "EFAULT", "latency_ns": 900, "kind": "failure", "command": "reg_mr",
                    "exit_status": -14, "start_time": when, "end_time": when, "host": host,
                    "kernel_release": kernel, "lost_events": 0, "job_id": "job-1",
                    "metadata": metadata_list({"rank": "0"}),
                }
            )
    snap.mkdir(parents=True)
    write_table(pl.DataFrame(rows), snap / "events.parquet", "events")
    write_table(counters, snap / "counters.parquet", "counters")
    return snap


def make_spool(spool: Path, hosts: int = 2, snapshots: int = 3, start: dt.datetime = T0) -> int:
    """A small spool; returns the number of snapshots written."""
    n = 0
    for h in range(hosts):
        for s in range(snapshots):
            write_snapshot(spool, f"host{h:03d}", start + dt.timedelta(seconds=5 * s), s)
            n += 1
    return n


def row_count(dataset: Path, table: str) -> int:
    files = dataset_files(dataset, table)
    return read(files, table).height if files else 0


def test_ingest_writes_the_partitioned_layout_and_empties_the_spool(tmp_path):
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=2, snapshots=3)
    result = ingest_spool(spool, dataset, quarantine)
    assert result.snapshots == 6
    assert result.rows == {"events": 12, "counters": 12}  # 2 frames and 2 counter rows per snapshot
    files = sorted(p.relative_to(dataset).as_posix() for p in dataset.rglob("*.parquet"))
    assert [f.rsplit("/", 1)[0] for f in files] == [
        "counters/date=2026-11-25/host=host000",
        "counters/date=2026-11-25/host=host001",
        "events/date=2026-11-25/host=host000",
        "events/date=2026-11-25/host=host001",
    ]
    assert all(f.rsplit("/", 1)[1].startswith("part-") for f in files)
    assert not list(spool.rglob("snap-*"))
    assert read(dataset_files(dataset, "events"), "events")["host"].unique().sort().to_list() == ["host000", "host001"]


def test_rerun_of_the_same_interval_adds_no_duplicates(tmp_path):
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=2, snapshots=3)
    first = ingest_spool(spool, dataset, quarantine, remove_ingested=False)  # e.g. died before cleanup
    second = ingest_spool(spool, dataset, quarantine, remove_ingested=False)
    assert first.new_rows == 24
    assert second.new_rows == 0 and second.snapshots == 0 and second.already_ingested == 6
    # Still none after compaction merged the parts: the manifest travels with the rows.
    write_snapshot(spool, "host000", T0 + dt.timedelta(minutes=5), 99)
    ingest_spool(spool, dataset, quarantine, remove_ingested=False)
    compacted = compact_dataset(dataset, min_files=2)
    assert compacted.partitions == 2  # events + counters of host000
    third = ingest_spool(spool, dataset, quarantine)
    assert third.new_rows == 0 and third.already_ingested == 7
    events = read(dataset_files(dataset, "events"), "events")
    assert events.height == 14
    assert events.select("trace_id", "seq").is_unique().all()


def test_compaction_recovers_from_an_interrupted_run(tmp_path):
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    for seq in range(3):  # three ingest runs -> three small part files per partition
        write_snapshot(spool, "host000", T0 + dt.timedelta(seconds=5 * seq), seq)
        ingest_spool(spool, dataset, quarantine)
    part_dir = dataset / "events" / "date=2026-11-25" / "host=host000"
    inputs = sorted(part_dir.glob("part-*.parquet"))
    assert len(inputs) == 3
    leftover = inputs[0].read_bytes()
    compact_dataset(dataset, min_files=2)
    (merged,) = part_dir.glob("part-*.parquet")
    assert merged.name.startswith("part-c-") and len(file_snapshots(merged)) == 3
    # Simulate a crash between writing the merged file and deleting its inputs.
    inputs[0].write_bytes(leftover)
    result = compact_dataset(dataset, min_files=2)
    assert result.leftovers_removed == 1
    assert row_count(dataset, "events") == 6


def test_corrupt_and_foreign_files_are_quarantined_with_the_reason(tmp_path):
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=1, snapshots=2)
    snaps = sorted((spool / "host000").iterdir())
    (snaps[0] / "events.parquet").write_bytes(b"PAR1 this is not parquet")
    # A counters table where events belong: right format, wrong table.
    (snaps[1] / "events.parquet").unlink()
    (snaps[1] / "counters.parquet").rename(snaps[1] / "events.parquet")
    bad_name = spool / "host000" / "snapshot-from-elsewhere"
    bad_name.mkdir()
    in_progress = spool / "host000" / ".snap-20261125T100010.000Z-9.tmp"
    in_progress.mkdir()

    result = ingest_spool(spool, dataset, quarantine)
    reasons = {Path(q["path"]).relative_to(quarantine).as_posix(): q["reason"] for q in result.quarantined}
    assert set(reasons) == {
        f"host000/{snaps[0].name}/events.parquet",
        f"host000/{snaps[1].name}/events.parquet",
        "host000/snapshot-from-elsewhere",
    }
    assert "expected a Parquet file, found unreadable data" in reasons[f"host000/{snaps[0].name}/events.parquet"]
    assert "expected a tracebase 'events' table, found table 'counters'" in reasons[f"host000/{snaps[1].name}/events.parquet"]
    sidecar = quarantine / "host000" / snaps[0].name / "events.parquet.reason"
    assert sidecar.read_text().strip() == reasons[f"host000/{snaps[0].name}/events.parquet"]
    assert result.rows == {"events": 0, "counters": 2}  # the rest of each snapshot still lands
    assert in_progress.is_dir()  # a snapshot still being written is left alone


def test_retention_drops_old_partitions(tmp_path):
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=1, snapshots=1, start=T0 - dt.timedelta(days=40))
    make_spool(spool, hosts=1, snapshots=1)
    ingest_spool(spool, dataset, quarantine)
    removed = apply_retention(dataset, quarantine, dataset_days=30, quarantine_days=30, today=T0.date())
    assert removed["partitions"] == 2  # events + counters of the old day
    assert sorted(p.name for p in (dataset / "events").iterdir()) == ["date=2026-11-25"]


def test_snapshot_names():
    assert snapshot_date("snap-20261125T100000.000Z-3") == "2026-11-25"
    assert snapshot_date("snap-20261125T100000.000Z-000003") == "2026-11-25"
    assert snapshot_date("snap-20261345T100000.000Z-3") is None
    assert snapshot_date(".snap-20261125T100000.000Z-3.tmp") is None


# ----------------------------------------------------------------------------- config
def _config_text(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return path


GOOD_PATHS = """paths:
  spool: spool
  dataset: ds
  quarantine: q
  findings: f
  reports: r
  model: m/baseline.parquet
  expected_errors: expected_errors.yaml
"""


def test_config_loads_and_resolves_relative_paths(tmp_path):
    from baseline.pipeline.config import load_config

    cfg = load_config(_config_text(tmp_path, "version: 1\n" + GOOD_PATHS + "retention: {dataset_days: 14}\n"))
    assert cfg.dataset == tmp_path / "ds"
    assert cfg.retention.dataset_days == 14 and cfg.retention.quarantine_days == 30
    assert cfg.thresholds.compact_min_files == 8


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD_PATHS + "retention: {dataset_days: ninety}\n",
         "key 'retention.dataset_days': expected an integer >= 1, found 'ninety' (str)"),
        (GOOD_PATHS + "retention: {dataset_days: 0}\n", "key 'retention.dataset_days': expected an integer >= 1, found 0"),
        (GOOD_PATHS + "thresholds: {trend_change_pct: -5}\n", "key 'thresholds.trend_change_pct': expected a number >= 0.0, found -5"),
        (GOOD_PATHS + "thresholds: {compact_min_file: 3}\n", "key 'thresholds.compact_min_file': expected one of"),
        (GOOD_PATHS.replace("  dataset: ds\n", ""), "key 'paths.dataset': expected a path, found nothing (key missing)"),
        (GOOD_PATHS.replace("spool: spool", "spool: 5"), "key 'paths.spool': expected a non-empty path string, found 5 (int)"),
        ("version: 2\n" + GOOD_PATHS, "key 'version': expected 1, found 2"),
        ("paths: [a, b]\n", "key 'paths': expected a mapping, found ['a', 'b'] (list)"),
        ("paths: {spool: [\n", "expected valid YAML, found invalid YAML at line"),
        (GOOD_PATHS + "ingest_workers: 0\n", "key 'ingest_workers': expected an integer >= 1, found 0"),
        (GOOD_PATHS + "nccl_logs: 7\n", "key 'nccl_logs': expected a list of file paths or globs, found 7 (int)"),
    ],
)
def test_bad_config_names_the_key_expected_and_found(tmp_path, text, message):
    from baseline.pipeline.config import ConfigError, load_config

    path = _config_text(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(str(path))
    assert message in str(err.value)


def test_config_path_must_be_set_somewhere(monkeypatch):
    from baseline.pipeline.config import ConfigError, resolve_config_path

    monkeypatch.delenv("TRACEBASE_CONFIG", raising=False)
    monkeypatch.setenv("AIRFLOW__CORE__UNIT_TEST_MODE", "True")
    with pytest.raises(ConfigError, match="DAG param 'config'"):
        resolve_config_path(None)
    monkeypatch.setenv("TRACEBASE_CONFIG", "/etc/tracebase.yaml")
    assert resolve_config_path(None) == Path("/etc/tracebase.yaml")
    assert resolve_config_path("/x.yaml") == Path("/x.yaml")


# ----------------------------------------------------------------------------- CLI
def run_cli(*argv: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from baseline.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_cli_ingest(tmp_path):
    make_spool(tmp_path / "spool", hosts=1, snapshots=2)
    status, out, _ = run_cli("ingest", str(tmp_path / "spool"), str(tmp_path / "ds"), "--compact-min-files", "2", "-j", "2")
    assert status == 0
    assert "ingested 2 snapshots (4 events rows, 4 counters rows); 0 already in the dataset" in out
    assert row_count(tmp_path / "ds", "events") == 4


def test_cli_ingest_errors(tmp_path):
    status, _, err = run_cli("ingest", str(tmp_path / "nope"), str(tmp_path / "ds"))
    assert status == 2 and err == f"baseline: error: {tmp_path / 'nope'}: spool directory does not exist\n"
    (tmp_path / "spool").mkdir()
    status, _, err = run_cli("ingest", str(tmp_path / "spool"), str(tmp_path / "ds"), "--compact-min-files", "1")
    assert status == 2 and "--compact-min-files: expected 0 or a number >= 2, found 1" in err
    status, _, err = run_cli("ingest", str(tmp_path / "spool"), str(tmp_path / "ds"), "--workers", "0")
    assert status == 2 and "--workers: expected a number >= 1, found 0" in err

"""Ingest: spool snapshots -> partitioned dataset; idempotent reruns; compaction; quarantine."""

from __future__ import annotations

import datetime as dt
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from baseline.pipeline.ingest import (
    LOCK_NAME,
    apply_retention,
    compact_dataset,
    dataset_lock,
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
        "counter_buckets/date=2026-11-25/host=host000",  # each counters file's 15-minute summary
        "counter_buckets/date=2026-11-25/host=host001",
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
    assert removed["partitions"] == 3  # events, counters and the counters' summaries of the old day
    assert sorted(p.name for p in (dataset / "events").iterdir()) == ["date=2026-11-25"]


def test_retention_keeps_each_tables_newest_partition(tmp_path):
    # a clock far ahead (or an ingest stopped longer than the retention) must not empty the
    # dataset: the newest day of each table stays, the older ones go
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=1, snapshots=1, start=T0 - dt.timedelta(days=1))
    make_spool(spool, hosts=1, snapshots=1)
    ingest_spool(spool, dataset, quarantine)
    tables = sorted(p.name for p in dataset.iterdir() if p.is_dir())
    before = {t: sorted(p.name for p in (dataset / t).glob("date=*")) for t in tables}
    assert all(len(days) == 2 for days in before.values()) and len(tables) == 3
    removed = apply_retention(dataset, quarantine, dataset_days=30, quarantine_days=30,
                              today=dt.date(2261, 12, 31))
    assert removed == {"partitions": 3, "quarantined": 0, "kept_newest": 3, "left": []}
    assert {t: sorted(p.name for p in (dataset / t).glob("date=*")) for t in tables} == {
        t: days[-1:] for t, days in before.items()}
    assert read(dataset_files(dataset, "events"), "events").height > 0


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
         "key 'retention.dataset_days': expected an integer >= 1 and <= 106751, found 'ninety' (str)"),
        (GOOD_PATHS + "retention: {dataset_days: 0}\n", "key 'retention.dataset_days': expected an integer >= 1 and <= 106751, found 0"),
        (GOOD_PATHS + "thresholds: {trend_change_pct: -5}\n", "key 'thresholds.trend_change_pct': expected a number >= 0.0, found -5"),
        (GOOD_PATHS + "thresholds: {compact_min_file: 3}\n", "key 'thresholds.compact_min_file': expected one of"),
        (GOOD_PATHS.replace("  dataset: ds\n", ""), "key 'paths.dataset': expected a path, found nothing (key missing)"),
        (GOOD_PATHS.replace("spool: spool", "spool: 5"), "key 'paths.spool': expected a non-empty path string, found 5 (int)"),
        ("version: 2\n" + GOOD_PATHS, "key 'version': expected 1, found 2"),
        ("paths: [a, b]\n", "key 'paths': expected a mapping, found ['a', 'b'] (list)"),
        ("paths: {spool: [\n", "expected valid YAML, found invalid YAML at line"),
        (GOOD_PATHS + "ingest_workers: 0\n", "key 'ingest_workers': expected an integer >= 1, found 0"),
        (GOOD_PATHS + "nccl_logs: 7\n", "key 'nccl_logs': expected a list of file paths or globs, found 7 (int)"),
        # falsy values were taken for "no logs" (a battery's `nccl_logs: false`)
        (GOOD_PATHS + "nccl_logs: false\n", "key 'nccl_logs': expected a list of file paths or globs, found False"),
        (GOOD_PATHS + "nccl_logs: {}\n", "key 'nccl_logs': expected a list of file paths or globs, found {}"),
        # an output the refresh wrote over the config itself, or among the dataset's events
        (GOOD_PATHS.replace("model: m/baseline.parquet", "model: pipeline.yaml"),
         "key 'paths.model': expected a path other than this config file"),
        (GOOD_PATHS.replace("findings: f", "findings: ds/events"),
         "key 'paths.findings': expected a path outside the dataset's tables, found"),
        (GOOD_PATHS.replace("reports: r", "reports: ds"),
         "key 'paths.reports': expected a path outside the dataset's tables, found"),
        # values that overflowed a task deep inside (timedelta, int64 ns), nan, NUL, a duplicate key
        (GOOD_PATHS + "retention: {dataset_days: 1000000000000}\n",
         "key 'retention.dataset_days': expected an integer >= 1 and <= 106751, found 1000000000000"),
        (GOOD_PATHS + "thresholds: {audit_window_hours: 1.0e+300}\n", "key 'thresholds.audit_window_hours'"),
        (GOOD_PATHS + "thresholds: {baseline_window_days: 1.0e+300}\n", "key 'thresholds.baseline_window_days'"),
        (GOOD_PATHS + "thresholds: {trend_change_pct: .nan}\n",
         "key 'thresholds.trend_change_pct': expected a number >= 0.0, found nan"),
        (GOOD_PATHS.replace("dataset: ds", 'dataset: "d\\0s"'), "key 'paths.dataset': expected a non-empty path string"),
        ("version: true\n" + GOOD_PATHS, "key 'version': expected 1, found True"),
        ("version: 1\n" + GOOD_PATHS + "version: 1\n", "expected each key once in a mapping, found 'version' again"),
        ("[" * 2000 + "]" * 2000 + "\n", "expected valid YAML, found invalid YAML at line 1"),
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
    assert status == 2 and "-j/--workers: expected a positive integer, found '0'" in err


# ----------------------------------------------------------------------------- bad input never stops ingest
def _rewrite(path: Path, change) -> None:
    """Rewrite a spool file through plain pyarrow (keeping its tracebase footer), so that it can
    hold what tracebase's own writer refuses."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = table.schema.metadata
    table = change(table)
    pq.write_table(table.replace_schema_metadata(meta), path)


def _null_first(table, column: str):
    import pyarrow as pa

    idx = table.schema.get_field_index(column)
    values = table.column(column).to_pylist()
    values[0] = None
    field = table.schema.field(idx).with_nullable(True)
    return table.set_column(idx, field, pa.array(values, field.type))


def test_nulls_and_wrong_schema_are_quarantined_and_the_rest_flows(tmp_path):
    import pyarrow as pa

    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=2, snapshots=3)
    snaps = sorted((spool / "host000").iterdir())
    _rewrite(snaps[0] / "events.parquet", lambda t: _null_first(t, "trace_id"))
    _rewrite(snaps[1] / "counters.parquet", lambda t: _null_first(t, "invocations"))
    _rewrite(snaps[2] / "events.parquet", lambda t: t.set_column(
        t.schema.get_field_index("depth"), "depth", pa.array(["deep"] * t.num_rows)))
    result = ingest_spool(spool, dataset, quarantine)
    reasons = {Path(q["path"]).relative_to(quarantine).as_posix(): q["reason"] for q in result.quarantined}
    assert set(reasons) == {
        f"host000/{snaps[0].name}/events.parquet",
        f"host000/{snaps[1].name}/counters.parquet",
        f"host000/{snaps[2].name}/events.parquet",
    }
    assert "column 'trace_id': expected no nulls" in reasons[
        f"host000/{snaps[0].name}/events.parquet"]
    assert "column 'invocations': expected no nulls" in reasons[f"host000/{snaps[1].name}/counters.parquet"]
    assert "column 'depth': expected int16, found string" in reasons[f"host000/{snaps[2].name}/events.parquet"]
    # everything else landed: 2 hosts x 3 snapshots x 2 rows per table, minus the 3 bad files
    assert result.rows == {"events": 12 - 4, "counters": 12 - 2}
    assert row_count(dataset, "events") == 8 and row_count(dataset, "counters") == 10
    assert not list(spool.rglob("snap-*"))
    # and the next run is not stuck on them
    make_spool(spool, hosts=1, snapshots=1, start=T0 + dt.timedelta(hours=1))
    assert ingest_spool(spool, dataset, quarantine).rows == {"events": 2, "counters": 2}


def test_symlinks_are_never_followed_out_of_the_spool(tmp_path):
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    outside = tmp_path / "outside"
    make_spool(outside, hosts=2, snapshots=1)  # real snapshots somebody else owns
    precious = sorted(p.relative_to(outside) for p in outside.rglob("*"))
    make_spool(spool, hosts=1, snapshots=2)
    (spool / "linkedhost").symlink_to(outside / "host000")  # a symlinked host directory
    (spool / "host000" / "snap-20261125T110000.000Z-7").symlink_to(next((outside / "host001").iterdir()))
    snap = sorted((spool / "host000").glob("snap-20261125T1000*"))[0]
    (snap / "events.parquet").unlink()
    (snap / "events.parquet").symlink_to(next((outside / "host001").iterdir()) / "events.parquet")

    result = ingest_spool(spool, dataset, quarantine)
    reasons = {Path(q["path"]).relative_to(quarantine).as_posix(): q["reason"] for q in result.quarantined}
    assert set(reasons) == {
        "_spool/linkedhost",
        "host000/snap-20261125T110000.000Z-7",
        f"host000/{snap.name}/events.parquet",
    }
    assert all("found a symlink (not followed out of the spool)" in r for r in reasons.values())
    assert all((quarantine / p).is_symlink() for p in reasons)  # the links moved, not their targets
    assert result.rows == {"events": 2, "counters": 4}  # only the spool's own data
    assert sorted(p.relative_to(outside) for p in outside.rglob("*")) == precious
    # retention deletes the quarantined links, never their targets
    removed = apply_retention(dataset, quarantine, dataset_days=1, quarantine_days=1,
                              today=dt.date.today() + dt.timedelta(days=3))
    assert removed["quarantined"] >= 3 and not any(p.is_symlink() for p in quarantine.rglob("*"))
    assert sorted(p.relative_to(outside) for p in outside.rglob("*")) == precious


def test_bad_and_undecodable_names_are_quarantined_not_crashed_on(tmp_path):
    import os

    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=1, snapshots=1)
    good = next((spool / "host000").iterdir())
    raw_spool = os.fsencode(spool)
    for bad_host in (b"bad host", b"-rf", b"gpu\xff\xfe", b"a%20b", b"gpu7\n"):  # '$' let "gpu7\n" through
        os.mkdir(os.path.join(raw_spool, bad_host))
        os.mkdir(os.path.join(raw_spool, bad_host, os.fsencode(good.name)))
        for f in ("events.parquet", "counters.parquet"):
            (Path(os.fsdecode(os.path.join(raw_spool, bad_host, os.fsencode(good.name)))) / f).write_bytes(
                (good / f).read_bytes())
    os.mkdir(os.path.join(raw_spool, b"host000", b"snap-\xff"))  # undecodable snapshot name
    with open(os.path.join(os.fsencode(good), b"notes-\xe9.txt"), "wb") as fh:  # and file name
        fh.write(b"x")

    result = ingest_spool(spool, dataset, quarantine)
    assert result.rows == {"events": 2, "counters": 2}  # the good host still flows
    reasons = [q["reason"] for q in result.quarantined]
    assert len(reasons) == 7
    for r in reasons:
        r.encode("utf-8")  # printable: undecodable bytes shown escaped
    assert any("found undecodable bytes in 'gpu\\xff\\xfe'" in r for r in reasons)
    assert any("expected a host name of letters, digits, '.', '-', '_'" in r and "found 'bad host'" in r for r in reasons)
    assert any("found 'snap-\\xff'" in r for r in reasons)
    assert any("found 'gpu7\\n'" in r for r in reasons)
    assert any("notes-\\xe9.txt: unexpected file in a snapshot" in r for r in reasons)
    assert sorted(p.name for p in (dataset / "events" / "date=2026-11-25").iterdir()) == ["host=host000"]
    status, out, err = run_cli("ingest", str(spool), str(dataset), "--json")  # nothing left; prints cleanly
    assert status == 0 and err == ""


def test_stale_temporaries_of_a_killed_run_are_removed_at_start(tmp_path):
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=1, snapshots=1)
    ingest_spool(spool, dataset, quarantine)
    part_dir = dataset / "events" / "date=2026-11-25" / "host=host000"
    stale = [part_dir / ".part-0123456789abcdef.parquet.x1y2z3.tmp", part_dir / ".part-c-0123.parquet.abc.tmp",
             quarantine / "host000" / ".events.parquet.reason.q1w2e3.tmp"]
    for f in stale:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"half a file")
    tracer_tmp = spool / "host000" / ".snap-20261125T100010.000Z-9.tmp"  # the tracer's, not ingest's
    tracer_tmp.mkdir(parents=True)
    result = ingest_spool(spool, dataset, quarantine)
    assert result.stale_temporaries_removed == 3
    assert not any(f.exists() for f in stale)
    assert tracer_tmp.is_dir()
    assert row_count(dataset, "events") == 2


def test_a_dataset_that_cannot_be_written_stops_the_run_and_keeps_the_spool(tmp_path):
    import os
    import subprocess

    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=1, snapshots=2)
    before = sorted(p.relative_to(spool) for p in spool.rglob("*"))
    dataset.mkdir()
    mounted = False
    if os.geteuid() == 0:  # root ignores modes: a full tmpfs is the real thing
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(dataset)], check=True)
        mounted = True
        (dataset / "filler").write_bytes(b"\0" * 12_000)
    else:
        dataset.chmod(0o500)
    try:
        status, _, err = run_cli("ingest", str(spool), str(dataset), "--quarantine", str(quarantine))
        assert status == 2 and err.startswith("baseline: error: ") and err.count("\n") == 1, err
        assert "cannot" in err and str(dataset) in err
    finally:
        if mounted:
            subprocess.run(["umount", str(dataset)], check=True)
    assert sorted(p.relative_to(spool) for p in spool.rglob("*")) == before  # nothing lost
    assert ingest_spool(spool, dataset, quarantine).rows == {"events": 4, "counters": 4}


def test_one_writer_at_a_time_and_a_watermark_per_run(tmp_path):
    from baseline.pipeline.ingest import dataset_lock, read_watermark
    from tracer.errors import TracebaseError

    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=2, snapshots=3)
    dataset.mkdir()
    # a reader (the audit) is reading: the writer waits, then gives up naming the lock
    with dataset_lock(dataset, exclusive=False), pytest.raises(TracebaseError, match="dataset lock within 0.3 s"):
        ingest_spool(spool, dataset, quarantine, lock_timeout_s=0.3)
    assert read_watermark(dataset) is None
    result = ingest_spool(spool, dataset, quarantine)
    assert result.watermark == "2026-11-25T10:00:10Z"  # the newest snapshot committed
    assert read_watermark(dataset)["committed_until"] == "2026-11-25T10:00:10Z"
    with dataset_lock(dataset, exclusive=False) as held, dataset_lock(dataset, exclusive=False, timeout_s=0.3) as also:
        assert held and also  # readers share the lock


@pytest.mark.parametrize("mask", [0o002, 0o022, 0o077])
def test_the_dataset_lock_follows_the_umask(tmp_path, mask):
    """Under umask 002 a group shares the dataset: every member's ingest takes the writer's lock
    (opened read-write), so the lock file is group-writable like every other output."""
    old = os.umask(mask)
    try:
        with dataset_lock(tmp_path / "ds", exclusive=True):
            pass
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "ds" / LOCK_NAME).stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE((tmp_path / "ds").stat().st_mode) == 0o775 & ~mask


def test_quarantine_retention_counts_from_the_quarantine_not_the_files_age(tmp_path):
    # a snapshot written long ago (a host whose spool shipped late) and quarantined now is kept the
    # retention from now: by its own mtime the next retention run deleted it before anyone read why
    import os

    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=1, snapshots=2)
    snaps = sorted((spool / "host000").iterdir())
    (snaps[0] / "events.parquet").write_bytes(b"not parquet")
    old = time.time() - 40 * 86400
    os.utime(snaps[0] / "events.parquet", (old, old))
    result = ingest_spool(spool, dataset, quarantine)
    entry = Path(result.quarantined[0]["path"])
    reason = entry.with_name(entry.name + ".reason")
    assert entry.is_file() and reason.is_file()

    today = dt.datetime.now(dt.UTC).date()
    removed = apply_retention(dataset, quarantine, dataset_days=3650, quarantine_days=30, today=today)
    assert removed["quarantined"] == 0 and entry.is_file() and reason.is_file()
    removed = apply_retention(dataset, quarantine, dataset_days=3650, quarantine_days=30,
                              today=today + dt.timedelta(days=31))
    assert removed["quarantined"] == 2 and not entry.exists() and not reason.exists()
    assert not any(quarantine.iterdir())  # the emptied host and snapshot directories went too


def test_a_quarantine_time_dated_ahead_is_re_dated_not_kept_until_the_clock_catches_up(tmp_path):
    import os

    quarantine = tmp_path / "q"
    entry = quarantine / "host000" / "snap-20261125T100000.000Z-1"
    entry.mkdir(parents=True)
    (entry / "events.parquet").write_bytes(b"x")
    reason = entry.with_name(entry.name + ".reason")
    reason.write_text("a reason\n")
    ahead = time.time() + 400 * 86400  # quarantined while the clock was a year ahead
    os.utime(reason, (ahead, ahead))
    today = dt.datetime.now(dt.UTC).date()
    assert apply_retention(tmp_path / "ds", quarantine, dataset_days=30, quarantine_days=30,
                           today=today)["quarantined"] == 0
    assert reason.stat().st_mtime <= time.time()  # re-dated to now
    assert apply_retention(tmp_path / "ds", quarantine, dataset_days=30, quarantine_days=30,
                           today=today + dt.timedelta(days=31))["quarantined"] == 2
    assert not entry.exists() and not reason.exists()


def test_two_ingests_of_one_spool_take_turns(tmp_path):
    """Two ingests moving one spool's snapshots into two datasets (adversarial battery, round
    twenty-five): each read snapshots the other was removing -- the same rows went into both
    datasets, and the one that lost a race stopped (exit 2) on a snapshot gone from under it,
    leaving a quarantine reason for a good snapshot. The spool's ingest lock makes the second
    wait: every row once, in one dataset or the other, nothing quarantined."""
    from baseline.pipeline.ingest import spool_lock
    from tracer.errors import TracebaseError

    spool = tmp_path / "spool"
    make_spool(spool, hosts=4, snapshots=6)
    # one holding it: the next waits, then gives up naming the lock and the spool as it was
    before = sorted(p.relative_to(spool) for p in spool.rglob("*"))
    with spool_lock(spool, exclusive=True), pytest.raises(TracebaseError, match="spool's ingest lock within 0.3 s"):
        ingest_spool(spool, tmp_path / "ds0", tmp_path / "q0", lock_timeout_s=0.3)
    assert sorted(p.relative_to(spool) for p in spool.rglob("*")) == before
    runs = [subprocess.Popen([sys.executable, "-m", "baseline.cli", "ingest", str(spool), str(tmp_path / f"ds{i}"), "--quarantine",
                              str(tmp_path / f"q{i}"), *(["-j", "2"] if i == 2 else [])],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for i in (1, 2)]
    errors = [r.communicate(timeout=120)[1] for r in runs]
    assert [r.returncode for r in runs] == [0, 0], errors
    rows = {table: sum(row_count(tmp_path / f"ds{i}", table) for i in (1, 2)) for table in ("events", "counters")}
    assert rows == {"events": 2 * 4 * 6, "counters": 2 * 4 * 6}, rows  # 2 frames, 2 counter rows a snapshot
    assert not any((tmp_path / f"q{i}").exists() and any((tmp_path / f"q{i}").rglob("*")) for i in (1, 2))


def test_a_snapshot_removed_while_ingest_reads_is_skipped_with_a_warning(tmp_path):
    """A snapshot removed from the spool while ingest read it (by hand, a clean-up job) was
    'cannot quarantine ...: No such file or directory', exit 2, and a quarantine reason left for
    nothing: now a warning naming it, and the rest ingested."""
    from baseline.pipeline.ingest import quarantine_file
    from tracer.errors import TracebaseError

    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=1, snapshots=2)
    gone = sorted(spool.rglob("events.parquet"))[0]
    gone.unlink()
    with pytest.raises(TracebaseError, match="removed from the spool while ingest read it"):
        quarantine_file(gone, quarantine, Path("h") / "events.parquet", "unreadable")
    assert not quarantine.exists() or not any(quarantine.rglob("*.reason"))
    result = ingest_spool(spool, dataset, quarantine)
    assert result.rows == {"events": 2, "counters": 4} and not result.quarantined


MISDATED_WITHOUT_PANDAS = """
import datetime as dt
from pathlib import Path
from tracer.startup import without_pandas
without_pandas()  # as in the console script, and as where pandas is not installed (not a dependency)
import pyarrow as pa
from baseline.pipeline.ingest import _misdated
when = dt.datetime(2026, 12, 6, 7, 17, 7, tzinfo=dt.UTC)
taken = int(when.timestamp()) * 10**9 + 488_139_872  # the daemon's clock: not a whole microsecond
counters = pa.table({"snapshot_time": pa.array([taken, None], pa.timestamp("ns", "UTC"))})
print(_misdated(Path("snap-a"), when, counters))
print(_misdated(Path("snap-b"), when + dt.timedelta(hours=2), counters))
"""


def test_snapshot_time_in_nanoseconds_is_compared_without_pandas():
    """A real spool's snapshot_time is in nanoseconds; pyarrow converts such a value to Python
    only through pandas, which is not installed with tracebase: `baseline ingest` of a
    `tracer run` spool failed there (internal error) until it compared integers."""
    done = subprocess.run([sys.executable, "-c", MISDATED_WITHOUT_PANDAS], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    within, far = done.stdout.strip().splitlines()
    assert within == "None"
    assert far.endswith("found 2026-12-06T09:17:07Z for counters taken at 2026-12-06T07:17:07.488139Z"), far

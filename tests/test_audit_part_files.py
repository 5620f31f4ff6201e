"""The audit of a day does not depend on how many part files its partitions hold.

The scheduled pipeline audits the ingested dataset (dags/baseline_audit.py), and that dataset's
partitions (table, date, host) hold one part file per ingest run until compaction merges them
(at `compact_min_files`, 8): an hourly audit reads 1-7 files per partition, a simulated day
(and a compacted one) one. bench/bench_audit.py --pipeline-forms measures the audit of both
forms of the 10,000-host day; this checks, on tests/fleetgen13's fleet (a generator written
blind of the audit), that the forms give the same findings, clusters, host alerts and scores:
the day split as three ingest runs would have left it (every counters part with its summary,
as ingest writes them, where the generator wrote none), and that split day compacted by the
pipeline's own compaction (which sorts the rows it merges), and the day compacted across hosts
into day files (`compact_days`: the end state of a closed day, several files of whole hosts,
read in batches that end between them)."""

from __future__ import annotations

import json
import shutil

import polars as pl
from fleetgen13 import generate

from baseline.cli import main
from baseline.fleet.counters import counter_buckets, counter_sources
from baseline.pipeline.ingest import compact_dataset, compact_days
from bench.bench_audit import dataset_shape, split_dataset
from tracer.schema import dataset_files


def _audit(dataset, out, capsys) -> dict:
    assert main(["audit", str(dataset), "--refit", "--out", str(out)]) == 0
    capsys.readouterr()
    tables = {t: pl.read_parquet(out / f"{t}.parquet") for t in ("findings", "clusters", "host_alerts")}
    assert main(["evaluate", str(dataset), "--findings", str(out), "--json"]) == 0
    tables["evaluate"] = json.loads(capsys.readouterr().out)
    return tables


def _assert_same(got: dict, want: dict, what: str) -> None:
    for table in ("findings", "clusters", "host_alerts"):
        assert got[table].height == want[table].height, (what, table)
        assert got[table].equals(want[table]), (what, table)  # row for row, in the written order
    assert got["evaluate"] == want["evaluate"], what


def test_the_audit_reads_a_day_the_same_in_every_form_the_pipeline_stores_it(tmp_path, generated_fleet, capsys):
    day = tmp_path / "day"
    generated_fleet("fleetgen13", generate, day, hosts=24, hours=3, seed=13)
    assert dataset_shape(day)["events"]["max_per_partition"] == 1
    whole = _audit(day, tmp_path / "out-whole", capsys)
    assert whole["findings"].height > 1000 and whole["host_alerts"].height > 0  # a day worth comparing

    split = tmp_path / "split"
    built = split_dataset(day, split, parts=3)
    shape = dataset_shape(split)
    assert shape["events"]["max_per_partition"] == 3 and shape["counters"]["max_per_partition"] == 3, shape
    assert shape["counter_buckets"]["files"] == shape["counters"]["files"] == built["files"] - shape["events"]["files"]
    for table in ("events", "counters"):  # the same rows, only in more files
        rows = {ds: sum(pl.scan_parquet(str(f)).select(pl.len()).collect().item()
                        for f in (ds / table).rglob("*.parquet")) for ds in (day, split)}
        assert rows[day] == rows[split] > 0, (table, rows)
    _assert_same(_audit(split, tmp_path / "out-split", capsys), whole, "split into 3 parts")

    compacted = tmp_path / "compacted"
    shutil.copytree(split, compacted, symlinks=True)
    merged = compact_dataset(compacted, min_files=2)
    assert merged.files_out == merged.partitions > 0 and merged.files_in > merged.files_out
    assert dataset_shape(compacted)["events"]["max_per_partition"] == 1
    _assert_same(_audit(compacted, tmp_path / "out-compacted", capsys), whole, "split, then compacted")


def test_hosts_with_several_summaries_reduce_the_same_in_batches(tmp_path, generated_fleet):
    """Between compactions every host has several counters files, each with its summary: they are
    merged a batch of whole hosts at a time (all at once held 1.5 GiB for 10,000 hosts x 4
    parts). Batches of 4 files (about one host each) give the tables of one batch of them all."""
    day = tmp_path / "day"
    generated_fleet("fleetgen13", generate, day, hosts=24, hours=3, seed=13)
    split = tmp_path / "split"
    split_dataset(day, split, parts=3)
    files = dataset_files(split, "counters")
    raw, single, multi = counter_sources(files)
    assert not raw and len(multi) > 40, (len(raw), len(single), len(multi))  # the path under test
    whole = counter_buckets(files, batch_files=len(files))
    batched = counter_buckets(files, batch_files=4)
    for a, b in zip(whole, batched, strict=True):
        assert a.height > 0 and a.equals(b)


def test_the_audit_reads_a_day_compacted_across_hosts_the_same(tmp_path, generated_fleet, capsys):
    """The day layout (a closed day's events in a few files across hosts, the host column stored):
    the same findings row for row, clusters, host alerts and `baseline evaluate` scores as the
    day one file per host-day; also after a late snapshot's partition sits beside the day files."""
    import datetime as dt

    day = tmp_path / "day"
    generated_fleet("fleetgen13", generate, day, hosts=24, hours=3, seed=13)
    whole = _audit(day, tmp_path / "out-whole", capsys)
    assert whole["findings"].height > 1000 and whole["host_alerts"].height > 0

    days = tmp_path / "days"
    shutil.copytree(day, days, symlinks=True)
    rows = sum(pl.scan_parquet(str(f)).select(pl.len()).collect().item() for f in dataset_files(day, "events"))
    result = compact_days(days, days_after=1, today=dt.date(2100, 1, 1), file_rows=rows // 5)
    assert result.days >= 1 and result.day_files_out >= 5 and not result.days_left, result
    assert not list((days / "events").glob("date=*/host=*"))
    _assert_same(_audit(days, tmp_path / "out-days", capsys), whole, "compacted across hosts")

    # one host's partition moved out of its day file and back beside it, as a late snapshot's
    late = tmp_path / "late"
    shutil.copytree(day, late, symlinks=True)
    date_dir = sorted((late / "events").glob("date=*"))[0]
    moved = sorted(date_dir.glob("host=*"))[3]
    shutil.move(moved, tmp_path / "aside")
    assert compact_days(late, days_after=1, today=dt.date(2100, 1, 1), file_rows=rows // 5).days >= 1
    shutil.move(tmp_path / "aside", moved)  # its host in no day file: a late host's partition
    assert list(date_dir.glob("day-*.parquet")) and moved.is_dir()
    _assert_same(_audit(late, tmp_path / "out-late", capsys), whole, "day files and a late partition")

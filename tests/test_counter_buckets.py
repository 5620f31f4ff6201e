"""counter_buckets: each counters file's 15-minute summary (tracer.schema.COUNTER_BUCKETS).

The audit reads a host's summaries instead of its snapshot rows only while every one of its
counters files has one that matches it as it is now; otherwise (data written by other code,
a stale or broken summary, a --since inside a bucket) it reads the counters files. Either way
the audit's tables are the same: checked on the simulator's data and on tests/fleetgen's
(an independent generator that writes only the counters table).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fleetgen import generate

from baseline.fleet.audit import run_audit
from baseline.fleet.counters import bucket_counters, counter_buckets, counter_scans, counter_sources
from baseline.simulator.simulate import simulate
from tracer.errors import SchemaError
from tracer.schema import (
    COUNTERS,
    counter_buckets_for,
    counter_buckets_path,
    dataset_files,
    write_counter_buckets,
    write_partition,
)

T0 = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)


def audit_tables(root: Path, out: Path, **kwargs) -> dict[str, pl.DataFrame]:
    run_audit(root, out_dir=out, **kwargs)
    return {t: pl.read_parquet(out / f"{t}.parquet") for t in ("findings", "clusters", "host_alerts")}


def assert_same_tables(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> None:
    for name in a:
        assert a[name].schema == b[name].schema, name
        assert a[name].equals(b[name]), f"{name} differs as written"
        assert a[name].height > 0 or name == "host_alerts", f"{name}: nothing to compare"


def sorted_frame(df: pl.DataFrame) -> pl.DataFrame:
    df = df.with_columns(pl.col(pl.Categorical).cast(pl.String))
    return df.sort(df.columns, nulls_last=True)


def assert_same_buckets(files: list[Path], since: dt.datetime | None = None) -> tuple[list, list, list]:
    """counter_buckets (summaries where usable) against bucket_counters of the raw files."""
    calls, errors = counter_buckets(files, since)
    raw_calls, raw_errors = bucket_counters(counter_scans(files, since))
    assert calls.schema == raw_calls.schema and errors.schema == raw_errors.schema
    assert sorted_frame(calls).equals(sorted_frame(raw_calls))
    assert sorted_frame(errors).equals(sorted_frame(raw_errors))
    assert calls.height > 0 and errors.height > 0
    return counter_sources(files, since)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    root = tmp_path_factory.mktemp("sim")
    simulate(root, hosts=40, hours=6, seed=11)
    return root


def test_simulator_writes_a_matching_summary_beside_each_counters_file(simulated):
    files = dataset_files(simulated, "counters")
    assert files
    for f in files:
        found = counter_buckets_for(f)
        assert found is not None and found[0] == counter_buckets_path(f)
        assert found[1]["rows"] == pq.read_metadata(f).num_rows
    raw, single, multi = counter_sources(files)
    assert raw == [] and len(single) + len(multi) == len(files)
    # the summary table keeps the dataset layout: readable as a hive-partitioned table elsewhere
    summaries = pl.scan_parquet(str(simulated / "counter_buckets"), hive_partitioning=True).collect()
    assert summaries["host"].n_unique() == 40


def test_audit_identical_with_and_without_summaries_simulator(simulated, tmp_path):
    with_summaries = audit_tables(simulated, tmp_path / "a")
    bare = tmp_path / "bare"
    shutil.copytree(simulated, bare, ignore=shutil.ignore_patterns("counter_buckets"))
    assert counter_sources(dataset_files(bare, "counters"))[1:] == ([], [])
    assert_same_tables(with_summaries, audit_tables(bare, tmp_path / "b"))


def test_audit_identical_with_and_without_summaries_fleetgen(tmp_path):
    root = tmp_path / "fleet"
    generate(root, hosts=40, hours=6, seed=9)
    files = dataset_files(root, "counters")
    assert not (root / "counter_buckets").exists()  # another writer: the documented layout only
    assert counter_sources(files)[0] == files
    before = audit_tables(root, tmp_path / "a")
    for f in files:  # summaries added afterwards (as a backfill would)
        assert write_counter_buckets(f) is not None
    raw, single, multi = assert_same_buckets(files)
    assert raw == []
    assert_same_tables(before, audit_tables(root, tmp_path / "b"))


def test_since_inside_a_bucket_reads_the_counters(simulated):
    files = dataset_files(simulated, "counters")
    aligned = T0 + dt.timedelta(hours=2)
    raw, single, multi = assert_same_buckets(files, aligned)
    assert raw == []  # on a bucket boundary: the summaries' buckets are whole
    raw, single, multi = assert_same_buckets(files, aligned + dt.timedelta(minutes=7))
    assert raw == files and not single and not multi
    raw, single, multi = assert_same_buckets(files, T0 - dt.timedelta(minutes=7))
    assert raw == []  # before every file's first bucket: nothing is cut


def counters_rows(host: str, start: dt.datetime, minutes: int, vendor: str | None, release: str) -> pa.Table:
    """Snapshots every 5 s from the rdma control path's probes (reference/rdma_control_path.yaml
    names them): ib_uverbs_reg_mr fails with EFAULT now and then, EAGAIN never with a count. Each
    snapshot is at the end of the 5 s it counts: the first covers `start` to `start` + 5 s."""
    rows = []
    for i in range(minutes * 12):
        t = start + dt.timedelta(seconds=5 * (i + 1))
        for probe, layer in (("ib_uverbs_reg_mr", "uverbs"), ("ib_umem_get", "core")):
            errs = [{"errno": "EFAULT", "count": 2}, {"errno": "EAGAIN", "count": 0}] if i % 7 == 0 else []
            rows.append({"host": host, "snapshot_time": t, "interval_s": 5.0, "kernel_release": release,
                         "vendor": vendor if i % 2 else None, "probe_set": "rdma", "probe": probe, "layer": layer,
                         "live": True, "invocations": 10 + i % 3, "failures": 2 if errs else 0,
                         "errno_counts": errs, "lost_records": 0})
    return pa.Table.from_pylist(rows, schema=COUNTERS)


def test_a_host_with_several_files_merges_its_cells_in_file_order(tmp_path):
    # two files of one host whose snapshots share buckets, the kernel release changing between
    # them: summaries combined per cell as the raw rows are (sum, first layer/vendor, last release)
    a = write_partition(counters_rows("h1", T0, 10, "mlx5", "6.8.0-49"), tmp_path, "counters", "2026-11-28", "h1",
                        "part-a.parquet")
    b = write_partition(counters_rows("h1", T0 + dt.timedelta(minutes=10), 20, None, "6.8.0-50"), tmp_path,
                        "counters", "2026-11-28", "h1", "part-b.parquet")
    c = write_partition(counters_rows("h2", T0, 30, "bnxt_re", "6.8.0-49"), tmp_path, "counters", "2026-11-28", "h2",
                        "part-a.parquet")
    for f in (a, b, c):
        write_counter_buckets(f)
    files = dataset_files(tmp_path, "counters")
    raw, single, multi = assert_same_buckets(files)
    assert raw == [] and len(single) == 1 and len(multi) == 2
    calls, _ = counter_buckets(files)
    h1 = calls.filter(pl.col("host") == "h1").sort("probe", "bucket")
    assert h1["kernel_release"].cast(pl.String).to_list()[:2] == ["6.8.0-50", "6.8.0-50"]  # 00:00-00:15 in both files


def test_a_stale_or_foreign_summary_is_not_used(tmp_path):
    a = write_partition(counters_rows("h1", T0, 30, "mlx5", "6.8.0-49"), tmp_path, "counters", "2026-11-28", "h1",
                        "part-a.parquet")
    c = write_partition(counters_rows("h2", T0, 30, "mlx5", "6.8.0-49"), tmp_path, "counters", "2026-11-28", "h2",
                        "part-a.parquet")
    write_counter_buckets(a)
    write_counter_buckets(c)
    files = dataset_files(tmp_path, "counters")
    assert counter_sources(files)[0] == []
    # the counters file rewritten after its summary (same name, other rows): stale
    write_partition(counters_rows("h1", T0, 30, "mlx5", "6.8.0-51"), tmp_path, "counters", "2026-11-28", "h1",
                    "part-a.parquet")
    assert counter_buckets_for(a) is None
    # another host's summary copied over this one: names the same file name, not its footer
    shutil.copyfile(counter_buckets_path(c), counter_buckets_path(a))
    assert counter_buckets_for(a) is None
    # not Parquet at all, and a counters table where a summary belongs
    counter_buckets_path(a).write_bytes(b"PAR1 not really")
    assert counter_buckets_for(a) is None
    shutil.copyfile(a, counter_buckets_path(a))
    assert counter_buckets_for(a) is None
    raw, single, multi = assert_same_buckets(files)
    assert raw == [a] and len(single) == 1  # per host: h2 still reads its summary


_KILL_MID_WRITE = """
import os, signal, sys
import pyarrow.parquet as pq
import tracer.schema as schema

real = pq.ParquetWriter.write_table
def write_then_die(self, table, *args, **kwargs):
    real(self, table, *args, **kwargs)  # the rows, not yet the footer: then the process dies
    os.kill(os.getpid(), signal.SIGKILL)
pq.ParquetWriter.write_table = write_then_die
schema.write_counter_buckets(sys.argv[1])
"""


def test_a_kill_mid_write_leaves_no_summary_the_audit_takes(tmp_path):
    a = write_partition(counters_rows("h1", T0, 30, "mlx5", "6.8.0-49"), tmp_path, "counters", "2026-11-28", "h1",
                        "part-a.parquet")
    proc = subprocess.run([sys.executable, "-c", _KILL_MID_WRITE, str(a)], cwd=Path(__file__).resolve().parents[1],
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.returncode == -signal.SIGKILL
    summary_dir = counter_buckets_path(a).parent
    left = [p.name for p in summary_dir.iterdir()]
    assert left and all(name.startswith(".") and name.endswith(".tmp") for name in left), left  # the temporary only
    assert counter_buckets_for(a) is None
    files = dataset_files(tmp_path, "counters")
    raw, _, _ = assert_same_buckets(files)
    assert raw == files
    # the next writer's summary is taken
    write_counter_buckets(a)
    assert counter_buckets_for(a) is not None and counter_sources(files)[0] == []


def test_files_outside_the_dataset_layout_get_no_summary(tmp_path):
    from tracer.schema import write_table

    loose = write_table(counters_rows("h1", T0, 5, "mlx5", "6.8.0-49"), tmp_path / "counters.parquet", "counters")
    assert counter_buckets_path(loose) is None and write_counter_buckets(loose) is None
    # a dataset file that stores its host column itself is summarised when that is the
    # directory's host throughout; another host there is refused by every reader of the file
    # (tracer.schema._check_stored_partition_values), and a summary is never used for it
    stored = tmp_path / "ds" / "counters" / "date=2026-11-28" / "host=h1" / "part-a.parquet"
    write_table(counters_rows("other", T0, 5, "mlx5", "6.8.0-49"), stored, "counters")
    with pytest.raises(SchemaError, match="host=h1"):
        write_counter_buckets(stored)
    assert counter_buckets_for(stored) is None
    write_table(counters_rows("h1", T0, 5, "mlx5", "6.8.0-49"), stored, "counters")
    assert write_counter_buckets(stored) is not None and counter_buckets_for(stored) is not None
    assert_same_buckets([stored])


def test_ingest_and_compaction_keep_one_matching_summary_per_counters_file(tmp_path):
    from test_ingest import make_spool

    from baseline.pipeline.ingest import compact_dataset, ingest_spool

    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    for run in range(3):  # three ingest runs: three counters files per host partition
        make_spool(spool, hosts=2, snapshots=2, start=T0 + dt.timedelta(minutes=10 * run))
        ingest_spool(spool, dataset, quarantine)
    files = dataset_files(dataset, "counters")
    assert len(files) == 6 and all(counter_buckets_for(f) is not None for f in files)
    raw, single, multi = assert_same_buckets(files)
    assert raw == [] and len(multi) == 6
    compact_dataset(dataset, min_files=2)
    files = dataset_files(dataset, "counters")
    assert len(files) == 2 and all(counter_buckets_for(f) is not None for f in files)
    summaries = sorted(p.relative_to(dataset / "counter_buckets").as_posix()
                       for p in (dataset / "counter_buckets").rglob("*.parquet"))
    assert summaries == sorted(f.relative_to(dataset / "counters").as_posix() for f in files)  # none left over
    raw, single, multi = assert_same_buckets(files)
    assert raw == [] and len(single) == 2


def distinct_sums(tables: list[pa.Table]) -> tuple[int, int]:
    """(invocations, EFAULT count) of the rows, each (host, probe, snapshot_time) once: what the
    tracer counted, however often a snapshot was delivered (computed here, not by the audit)."""
    seen, calls, efault = set(), 0, 0
    for table in tables:
        for r in table.to_pylist():
            key = (r["host"], r["probe"], r["snapshot_time"])
            if key in seen:
                continue
            seen.add(key)
            calls += r["invocations"]
            efault += sum(e["count"] for e in r["errno_counts"] or [] if e["errno"] == "EFAULT")
    return calls, efault


def test_a_snapshot_delivered_twice_counts_once(tmp_path):
    """A daemon restarting and re-sending its spool, or a spool uploaded twice under another
    snapshot id, repeats a snapshot's rows: in another file of the host (ingest writes it as
    new) or in the same file (after compaction merged both). Counted once on both paths, the
    summaries' and the snapshot rows'; distinct snapshots of the same counts stay apart."""
    day = counters_rows("h1", T0, 30, "mlx5", "6.8.0-49")
    resent = day.slice(24 * 2, 12 * 2)  # one minute of snapshots (two probes each) delivered again
    a = write_partition(day, tmp_path, "counters", "2026-11-28", "h1", "part-a.parquet")
    b = write_partition(resent, tmp_path, "counters", "2026-11-28", "h1", "part-resent.parquet")
    # h2: the same repeat inside one file (a compaction of both deliveries)
    day2 = counters_rows("h2", T0, 30, "mlx5", "6.8.0-49")
    merged = pa.concat_tables([day2.slice(0, 60 * 2), day2.slice(24 * 2, 4 * 2), day2.slice(60 * 2)])
    c = write_partition(merged, tmp_path, "counters", "2026-11-28", "h2", "part-c.parquet")
    # h3: the same counts at other instants (each snapshot again 2.5 s later) are other snapshots
    later = counters_rows("h3", T0 + dt.timedelta(seconds=2.5), 30, "mlx5", "6.8.0-49")
    d = write_partition(pa.concat_tables([counters_rows("h3", T0, 30, "mlx5", "6.8.0-49"), later]),
                        tmp_path, "counters", "2026-11-28", "h3", "part-d.parquet")
    files = dataset_files(tmp_path, "counters")
    calls, errors = bucket_counters(counter_scans(files))

    def totals(host: str) -> tuple[int, int]:
        n = calls.filter(pl.col("host") == host)["n"].sum()
        f = errors.filter((pl.col("host") == host) & (pl.col("errno") == "EFAULT"))["count"].sum()
        return n, f

    once = distinct_sums([day])
    assert distinct_sums([day, resent]) == once and sum(r["invocations"] for r in resent.to_pylist()) > 0
    assert totals("h1") == once and totals("h2") == once
    assert totals("h3") == (2 * once[0], 2 * once[1])
    # summaries: each counts its file's repeats once; two files of a host whose snapshot times
    # overlap may share a snapshot, so that host's rows are read instead
    for f in (a, b, c, d):
        write_counter_buckets(f)
        assert counter_buckets_for(f)[1]["unique"] == ["host", "probe", "snapshot_time"]
    raw, single, multi = assert_same_buckets(files)
    assert raw == [a, b] and len(single) == 2 and multi == []
    # without the repeat the two files' times are disjoint: their summaries are combined
    b.unlink()
    files = dataset_files(tmp_path, "counters")
    assert counter_sources(files)[0] == []


def test_a_summary_that_counted_repeats_twice_is_not_used(tmp_path):
    """Summaries written before repeated snapshots were counted once (no `unique` in their
    source) may have counted one twice: the counters file is read instead."""
    import json

    a = write_partition(counters_rows("h1", T0, 30, "mlx5", "6.8.0-49"), tmp_path, "counters", "2026-11-28", "h1",
                        "part-a.parquet")
    dest = write_counter_buckets(a)
    kv = pq.read_metadata(dest).metadata
    source = json.loads(kv[b"tracebase.source"])
    assert counter_buckets_for(a) is not None
    del source["unique"]
    table = pq.read_table(dest)
    with pq.ParquetWriter(dest, table.schema) as w:
        w.write_table(table)
        w.add_key_value_metadata({"tracebase.source": json.dumps(source)})
    assert counter_buckets_for(a) is None and counter_sources([a])[0] == [a]


def test_a_summary_whose_pages_do_not_decode_is_read_from_its_counters(simulated, tmp_path):
    """A summary with its first bytes overwritten (its footer intact: it passes as matching)
    stopped the audit with an unreadable-data error; a cache gone bad is read around, from its
    host's counters files: the same tables (docs/architecture.md: "a stale or broken summary")."""
    with_summaries = audit_tables(simulated, tmp_path / "a")
    broken = tmp_path / "broken"
    shutil.copytree(simulated, broken)
    shutil.rmtree(broken / "audit", ignore_errors=True)
    victims = sorted(dataset_files(broken, "counter_buckets"))[3:5]
    for v in victims:
        with open(v, "r+b") as fh:
            fh.seek(4)
            fh.write(b"garbage!")
    files = dataset_files(broken, "counters")
    calls, errors = counter_buckets(files)
    raw_calls, raw_errors = bucket_counters(counter_scans(files))
    assert sorted_frame(calls).equals(sorted_frame(raw_calls)) and sorted_frame(errors).equals(sorted_frame(raw_errors))
    assert_same_tables(with_summaries, audit_tables(broken, tmp_path / "b"))

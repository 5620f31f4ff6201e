"""An events file's footer summarises its traces' job metadata (tracer.schema's
trace_metadata_summary): the audit takes the hosts' metadata pairs from it instead of decoding the
`metadata` column, which repeats the list on every frame. The summary must give exactly what the
column gives, and must never be taken where it may not: rows filtered by another tool that kept
the footer, a `since` that cuts the file, a file without one beside files with one.

The expected pairs are worked out here from the rows the tests write (first frames only, null
pairs dropped, the host of the file's directory), not by the code under test."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tracer.schema as schema
from baseline.fleet.audit import host_metadata
from baseline.fleet.model import event_batches
from tracer.schema import (
    META_TRACE_METADATA,
    partition_path,
    polars_schema,
    read_footer,
    trace_metadata_pairs,
    write_partition,
    write_table,
)

T0 = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
DATE = "2026-12-01"


def _frames(host: str, traces: list[tuple[int, list | None, list | None]]) -> pl.DataFrame:
    """Two-frame traces: (minutes after T0, the root frame's metadata, the child frame's)."""
    rows: dict[str, list] = {name: [] for name in polars_schema("events").names()}
    for n, (minute, root_meta, child_meta) in enumerate(traces):
        start = T0 + dt.timedelta(minutes=minute)
        for seq, meta in ((0, root_meta), (1, child_meta)):
            values = {"trace_id": f"{host}:1:{n}", "seq": seq, "ts_ns": n * 10 + seq, "pid": 100, "tid": 100, "ppid": 1,
                      "comm": "python3", "probe": "ib_uverbs_create_qp" if seq == 0 else "mlx5_ib_create_qp",
                      "layer": "uverbs" if seq == 0 else "driver", "depth": seq, "ret": 0, "kind": "good",
                      "command": "create_qp", "exit_status": 0, "start_time": start, "end_time": start, "host": host,
                      "kernel_release": "6.8.0-45-generic", "lost_events": 0, "job_id": f"{host}-job",
                      "metadata": None if meta is None else [None if p is None else {"key": p[0], "value": p[1]}
                                                             for p in meta]}
            for name in rows:
                rows[name].append(values.get(name))
    return pl.DataFrame(rows, schema=polars_schema("events"))


def _decoded(root: Path, since: dt.datetime | None = None) -> set[tuple]:
    """What the column holds, read with pyarrow alone: (host, key, value) of the first frames."""
    out = set()
    for f in sorted((root / "events").rglob("*.parquet")):
        host = f.parent.name.removeprefix("host=")
        for row in pq.read_table(f).to_pylist():
            if row["seq"] != 0 or (since is not None and row["start_time"] < since):
                continue
            for pair in row["metadata"] or []:
                if pair is not None:
                    out.add((row.get("host") or host, pair["key"], pair["value"]))
    return out


def _read_from_footers(root: Path, since: str | None = None) -> tuple[set[tuple], bool]:
    """host_metadata's pairs, and whether every batch was read without the column."""
    footers: list[pl.DataFrame] = []
    columns = [lf.collect_schema().names()
               for lf in event_batches(root, since=since, columns=["host", "seq", "metadata"], footer_metadata=footers)]
    pairs = set(host_metadata(root, since=since).iter_rows())
    return pairs, all("metadata" not in c for c in columns)


FLEET = {
    "gpu001": [(0, [("nic_fw", "28.41.1000"), ("gpu_driver", "560.35.03")], [("nic_fw", "child-only")]),
               (30, [("nic_fw", "28.41.1000"), ("restart", "1")], None),
               (90, [None, ("team", None)], [("x", "y")])],
    "gpu002": [(10, [], [("child", "frame")]), (20, None, None),
               (95, [("gpu_driver", "550.90.07")], [("gpu_driver", "550.90.07")])],
}


def _write_fleet(root: Path) -> None:
    for host, traces in FLEET.items():
        write_partition(_frames(host, traces), root, "events", DATE, host, "part-00000.parquet")


def test_the_footer_gives_what_the_column_holds(tmp_path):
    _write_fleet(tmp_path)
    pairs, without_column = _read_from_footers(tmp_path)
    assert without_column  # the column was not decoded at all
    assert pairs == _decoded(tmp_path) == {
        ("gpu001", "nic_fw", "28.41.1000"), ("gpu001", "gpu_driver", "560.35.03"), ("gpu001", "restart", "1"),
        ("gpu001", "team", None), ("gpu002", "gpu_driver", "550.90.07")}


def test_a_since_that_cuts_a_file_reads_the_column(tmp_path):
    _write_fleet(tmp_path)
    since = T0 + dt.timedelta(minutes=60)
    pairs, without_column = _read_from_footers(tmp_path, since=since.isoformat())
    assert not without_column
    assert pairs == _decoded(tmp_path, since) == {("gpu001", "team", None), ("gpu002", "gpu_driver", "550.90.07")}
    # a since before every row cuts nothing: the footers serve
    pairs, without_column = _read_from_footers(tmp_path, since=(T0 - dt.timedelta(hours=1)).isoformat())
    assert without_column and pairs == _decoded(tmp_path)


def test_rows_rewritten_by_a_tool_that_kept_the_footer_are_decoded(tmp_path):
    """A tool drops rows and copies the footer's key-values to its output: the summary no longer
    matches the rows (gpu001's 28.41.1000 traces are gone) and must not be believed."""
    _write_fleet(tmp_path)
    f = partition_path(tmp_path, "events", DATE, "gpu001", "part-00000.parquet")
    kv = read_footer(f).metadata
    table = pq.read_table(f, partitioning=None)
    kept = table.filter(pa.compute.greater_equal(table["start_time"], pa.scalar(T0 + dt.timedelta(minutes=60))))
    with pq.ParquetWriter(f, kept.schema) as writer:
        writer.write_table(kept)
        writer.add_key_value_metadata({k.decode(): v.decode() for k, v in kv.items() if k != b"ARROW:schema"})
    assert META_TRACE_METADATA in read_footer(f).metadata
    assert trace_metadata_pairs(read_footer(f), f) is None
    pairs, without_column = _read_from_footers(tmp_path)
    assert not without_column
    assert pairs == _decoded(tmp_path)
    assert ("gpu001", "nic_fw", "28.41.1000") not in pairs


def test_a_file_without_a_summary_beside_files_with_one(tmp_path):
    """A file some other writer made (the tracebase table and version, no summary) in the
    same batch as ours: the batch decodes the column, and the pairs are the column's."""
    _write_fleet(tmp_path)
    other = _frames("gpu003", [(5, [("nic_fw", "22.36.1010")], None)]).drop("host").to_arrow()
    other = other.replace_schema_metadata({schema.META_TABLE: b"events", schema.META_VERSION: b"2"})
    dest = partition_path(tmp_path, "events", DATE, "gpu003", "part-00000.parquet")
    dest.parent.mkdir(parents=True)
    pq.write_table(other, dest)
    assert META_TRACE_METADATA not in read_footer(dest).metadata
    pairs, without_column = _read_from_footers(tmp_path)
    assert not without_column
    assert pairs == _decoded(tmp_path) and ("gpu003", "nic_fw", "22.36.1010") in pairs


def test_a_file_storing_its_hosts_and_an_oversized_summary(tmp_path, monkeypatch):
    """A file holding several hosts (a day file, a recording's table) keys its pairs by host;
    a summary over the size limit is not written and the column is read."""
    both = pl.concat([_frames(h, t) for h, t in FLEET.items()])
    f = write_table(both, tmp_path / "events" / "both.parquet", "events")
    found = trace_metadata_pairs(read_footer(f), f)
    assert set(found) == _decoded(tmp_path)
    monkeypatch.setattr(schema, "TRACE_METADATA_SUMMARY_LIMIT", 40)
    f = write_table(both, tmp_path / "events" / "both.parquet", "events")
    assert META_TRACE_METADATA not in (read_footer(f).metadata or {})
    assert set(host_metadata(f).iter_rows()) == _decoded(tmp_path)


def test_a_summary_not_as_written_is_not_believed(tmp_path):
    """Crafted or damaged summaries (nesting, wrong types, indexes out of range, negative ones
    that Python would take from the end) are ignored, never a traceback: the column is read."""
    _write_fleet(tmp_path)
    f = partition_path(tmp_path, "events", DATE, "gpu001", "part-00000.parquet")
    table = pq.read_table(f, partitioning=None)
    good = read_footer(f).metadata[META_TRACE_METADATA].decode()
    bad = ["[" * 100_000 + "]" * 100_000, "not json", "{\"pairs\": 1e999}", "[]", '{"rows": 6}',
           good.replace('"all":[', '"all":[-1,'), good.replace('"all":[', '"all":[99,'),
           good.replace('"all":[', '"all":["0",'), good.replace('"pairs":[', '"pairs":[[1,2],'),
           good.replace('"all":', '"hosts":'), good.replace('"start_ns":', '"start_ns":"x","was":')]
    for text in bad:
        with pq.ParquetWriter(f, table.schema) as writer:
            writer.write_table(table)
            writer.add_key_value_metadata({META_TRACE_METADATA: text})
        assert trace_metadata_pairs(read_footer(f), f, since_ns=0) is None, text[:60]
        assert set(host_metadata(tmp_path).iter_rows()) == _decoded(tmp_path)


def test_a_since_as_airflow_gives_it(tmp_path):
    """Airflow hands a task its interval as pendulum DateTimes, whose difference is no
    timedelta: the summary's cut is worked out exactly all the same (it failed the audit DAG)."""
    pendulum = pytest.importorskip("pendulum", reason="pendulum comes with apache-airflow")
    _write_fleet(tmp_path)
    for minute, decoded in ((60, False), (-60, True)):
        since = pendulum.instance(T0).add(minutes=minute)
        footers: list[pl.DataFrame] = []
        batches = list(event_batches(tmp_path, since=since, columns=["host", "seq", "metadata"], footer_metadata=footers))
        assert all(("metadata" not in lf.collect_schema().names()) is decoded for lf in batches)
        assert set(host_metadata(tmp_path, since=since).iter_rows()) == _decoded(tmp_path, since)


def test_a_writer_without_polars_writes_none_and_stays_without_it(tmp_path):
    """The recorder and the fleet daemon's spool write events on pyarrow alone: the summary
    never imports polars for them (~1 CPU s); their files simply have none (ingest rewrites
    the spool's, and the audit decodes the column of a file without one)."""
    import subprocess
    import sys
    import textwrap

    dest = tmp_path / "rec.parquet"
    frame = _frames("gpu001", FLEET["gpu001"])
    frame.write_parquet(tmp_path / "src.parquet")
    script = textwrap.dedent(f"""
        import sys
        import pyarrow.parquet as pq
        from tracer import schema
        table = pq.read_table({str(tmp_path / "src.parquet")!r})
        schema.write_table(table, {str(dest)!r}, "events")
        assert "polars" not in sys.modules, "polars imported"
    """)
    root = Path(schema.__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", script], cwd=root, check=True)
    assert META_TRACE_METADATA not in (read_footer(dest).metadata or {})
    assert set(host_metadata(dest).iter_rows()) == {
        ("gpu001", "nic_fw", "28.41.1000"), ("gpu001", "gpu_driver", "560.35.03"), ("gpu001", "restart", "1"),
        ("gpu001", "team", None)}


def test_a_summary_copied_into_a_rewritten_files_schema_is_not_believed(tmp_path):
    """A tool that copies the footer's key-values into the schema of the file it writes (the
    same row count, values it may have changed) puts the summary into ARROW:schema, where
    tracebase never writes it: not believed, the column is read."""
    _write_fleet(tmp_path)
    f = partition_path(tmp_path, "events", DATE, "gpu001", "part-00000.parquet")
    kv = {k: v for k, v in read_footer(f).metadata.items() if k != b"ARROW:schema"}
    table = pq.read_table(f, partitioning=None)
    pq.write_table(table.replace_schema_metadata(kv), f)
    assert META_TRACE_METADATA in read_footer(f).metadata
    assert trace_metadata_pairs(read_footer(f), f) is None
    pairs, without_column = _read_from_footers(tmp_path)
    assert not without_column and pairs == _decoded(tmp_path)


def test_the_summary_is_the_same_bytes_whatever_order_polars_finds_the_pairs_in():
    """The footer is part of the file's bytes, which a seed makes identical run to run
    (test_simulate): the pairs came in the order of polars' unique(), which varies between
    calls on a table of many hosts (a fresh-clone CI saw two simulations of one seed differ)."""
    import random

    frames = pl.concat([_frames(f"h{h:03d}", [(m, [("nic_fw", f"28.{h % 7}.{m % 3}"), ("gpu", f"g{m % 5}")], None)
                                               for m in range(6)]) for h in range(60)])
    table = frames.to_arrow()
    texts = {schema.trace_metadata_summary(table) for _ in range(12)}
    order = list(range(table.num_rows))
    random.Random(1).shuffle(order)
    texts.add(schema.trace_metadata_summary(table.take(order)))
    assert len(texts) == 1 and None not in texts, len(texts)

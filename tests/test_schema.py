"""The one data model: round trips, validation messages, atomic writes."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import textwrap

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tracer import schema
from tracer.errnos import errno_name, errno_number
from tracer.errors import SchemaError, TracebaseError

NOW = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.UTC)


def _events(n: int = 3, trace_id: str = "t1") -> pl.DataFrame:
    return pl.DataFrame(
        {
            "trace_id": [trace_id] * n,
            "seq": list(range(n)),
            "ts_ns": [1000 * i for i in range(n)],
            "probe": ["openat"] * n,
            "depth": [0] * n,
            "ret": [-2] + [3] * (n - 1),
            "errno": ["ENOENT"] + [None] * (n - 1),
            "kind": ["good"] * n,
            "start_time": [NOW] * n,
            "metadata": [schema.metadata_list({"job": "42"})] * n,
        }
    )


def test_round_trip_and_traces_view(tmp_path):
    path = schema.write_table(_events(), tmp_path / "a.parquet", "events")
    events = schema.read_events(path)
    assert events.columns == schema.EVENTS.names
    assert events["errno"].to_list() == ["ENOENT", None, None]
    traces = schema.read_traces(tmp_path)
    assert traces.height == 1
    assert traces["kind"][0] == "good"
    assert schema.metadata_dict(traces["metadata"][0]) == {"job": "42"}
    meta = schema.file_metadata(path)
    assert meta["table"] == "events" and meta["schema_version"] == str(schema.SCHEMA_VERSION)


def test_missing_required_column_is_refused_on_write(tmp_path):
    with pytest.raises(SchemaError, match="column 'probe'"):
        schema.write_table(_events().drop("probe"), tmp_path / "x.parquet", "events")


def test_reader_names_file_column_expected_and_found(tmp_path):
    bad = _events().with_columns(pl.col("seq").cast(pl.Utf8))
    arrow = bad.to_arrow().replace_schema_metadata(
        {schema.META_TABLE: b"events", schema.META_VERSION: str(schema.SCHEMA_VERSION).encode()}
    )
    target = tmp_path / "bad.parquet"
    pq.write_table(arrow, target)
    with pytest.raises(SchemaError) as info:
        schema.read_events(target)
    msg = str(info.value)
    assert str(target) in msg and "'seq'" in msg and "int64" in msg and "string" in msg


def test_version_and_table_mismatch(tmp_path):
    path = schema.write_table(_events(), tmp_path / "a.parquet", "events")
    arrow = pq.read_table(path)
    old = arrow.replace_schema_metadata({schema.META_TABLE: b"events", schema.META_VERSION: b"0"})
    pq.write_table(old, tmp_path / "old.parquet")
    with pytest.raises(SchemaError, match="schema version 1 or 2, found schema version 0"):
        schema.validate_file(tmp_path / "old.parquet", "events")
    with pytest.raises(SchemaError, match="'counters' table, found table 'events'"):
        schema.validate_file(path, "counters")
    pq.write_table(pa.table({"x": [1]}), tmp_path / "foreign.parquet")
    with pytest.raises(SchemaError, match=r"found none: no footer key 'tracebase.table'"):
        schema.validate_file(tmp_path / "foreign.parquet", "events")


def test_not_parquet_and_missing(tmp_path):
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet at all")
    with pytest.raises(SchemaError, match="expected a Parquet file"):
        schema.read_events(junk)
    with pytest.raises(TracebaseError, match="no such file"):
        schema.read_events(tmp_path / "nope.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TracebaseError, match="holds no .parquet files"):
        schema.read_events(tmp_path / "empty")


def test_directory_scan_skips_temp_files(tmp_path):
    schema.write_table(_events(), tmp_path / "a.parquet", "events")
    (tmp_path / ".b.parquet.1234.tmp").write_bytes(b"PAR1 half written")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.parquet").write_bytes(b"half")
    assert [p.name for p in schema.parquet_files(tmp_path)] == ["a.parquet"]


def test_crash_mid_write_leaves_no_file_under_final_name(tmp_path):
    """A writer killed mid-write leaves at most a hidden temp file; readers never see it."""
    target = tmp_path / "big.parquet"
    script = textwrap.dedent(
        f"""
        import os, polars as pl, pyarrow.parquet as pq
        from tracer import schema
        real = pq.ParquetWriter.write_table
        def dying(self, table, **kw):
            real(self, table, **kw)  # the data pages are in the file, the footer is not
            os._exit(9)
        pq.ParquetWriter.write_table = dying
        df = pl.DataFrame({{"trace_id": ["t"], "seq": [0], "ts_ns": [0], "probe": ["x"],
                           "depth": [0], "ret": [0], "kind": ["full"]}})
        schema.write_table(df, {str(target)!r}, "events")
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=schema.__file__.rsplit("/tracer/", 1)[0])
    assert proc.returncode == 9
    assert not target.exists()
    leftovers = os.listdir(tmp_path)
    assert all(name.startswith(".") and name.endswith(".tmp") for name in leftovers)
    with pytest.raises(TracebaseError, match="holds no .parquet files"):
        schema.read_events(tmp_path)


def test_dataset_partitions_and_since(tmp_path):
    for date in ("2026-11-27", "2026-11-28", "2026-11-29"):
        path = schema.partition_path(tmp_path, "events", date, "h1", "part-0.parquet")
        schema.write_table(_events(trace_id=date), path, "events")
    files = schema.dataset_files(tmp_path, "events", since="2026-11-28T00:00:00Z")
    assert [f.parent.parent.name for f in files] == ["date=2026-11-28", "date=2026-11-29"]
    assert schema.dataset_files(tmp_path, "counters") == []


@pytest.mark.parametrize("table", sorted(schema.TABLES))
def test_polars_schema_matches_arrow(table):
    """The direct type mapping gives what polars' own Arrow conversion gives, for every table."""
    ps = schema.polars_schema(table)
    assert list(ps.names()) == schema.TABLES[table].names
    assert ps == pl.Schema(pl.from_arrow(schema.TABLES[table].empty_table()).schema)


def test_polars_schema_does_not_import_pandas():
    """polars' from_arrow imports pandas (~0.4 s per command); the schema module must not."""
    code = "import sys; from tracer.schema import polars_schema; polars_schema('events'); print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_errno_names():
    assert errno_name(-13) == "EACCES"
    assert errno_name(-11) == "EAGAIN"
    assert errno_name(-95) == "EOPNOTSUPP"
    assert errno_name(-524) == "ENOTSUPP"
    assert errno_name(0) is None and errno_name(5) is None and errno_name(-5000) is None
    assert errno_number("ENOENT") == 2 and errno_number("EWOULDBLOCK") == 11


def test_a_version_1_file_reads_with_the_added_columns_null(tmp_path):
    """Datasets written before schema version 2 stay readable: path2/output/repeat_count are null."""
    v2 = pq.read_table(schema.write_table(_events(), tmp_path / "new.parquet", "events"))
    v1 = v2.drop_columns(sorted(schema.ADDED_COLUMNS["events"]))
    v1 = v1.replace_schema_metadata({schema.META_TABLE: b"events", schema.META_VERSION: b"1"})
    pq.write_table(v1, tmp_path / "old.parquet")
    old = tmp_path / "old.parquet"
    events = schema.read_events(old)
    assert events.columns == schema.EVENTS.names
    assert events["repeat_count"].dtype == pl.Int64 and events["repeat_count"].null_count() == events.height
    arrow = schema.read_arrow(old, "events", ["probe", "path2", "output"])
    assert arrow.column_names == ["probe", "path2", "output"] and arrow.column("path2").null_count == arrow.num_rows
    both = schema.read_events([old, tmp_path / "new.parquet"])
    assert both.height == 2 * events.height


@pytest.mark.parametrize("statistics", [True, False])
@pytest.mark.parametrize(("table", "column"), [("events", "kind"), ("events", "probe"), ("events", "seq"),
                                               ("counters", "host")])
def test_nulls_in_a_required_column_are_refused_by_name(tmp_path, statistics, table, column):
    # Another writer (pyarrow with a nullable schema) can put nulls where tracebase has none:
    # `baseline diff` on a trace with a null `kind` must not say "same".
    if table == "events":
        base = schema.conform(_events(4), "events")
    else:
        base = schema.conform(pl.DataFrame({"host": ["h1"] * 4, "snapshot_time": [NOW] * 4, "probe": ["p"] * 4,
                                            "invocations": [1] * 4, "failures": [0] * 4}), "counters")
    values = base.column(column).to_pylist()
    values[2] = None
    base = base.cast(pa.schema([f.with_nullable(True) for f in base.schema]))
    base = base.set_column(base.schema.get_field_index(column), column, pa.array(values, base.column(column).type))
    loose = pa.schema([f.with_nullable(True) for f in base.schema])
    arrow = base.cast(loose).replace_schema_metadata(
        {schema.META_TABLE: table.encode(), schema.META_VERSION: str(schema.SCHEMA_VERSION).encode()}
    )
    target = tmp_path / "nulls.parquet"
    pq.write_table(arrow, target, write_statistics=statistics)
    with pytest.raises(SchemaError) as info:
        schema.validate_file(target, table)
    assert str(info.value) == f"{target}: column '{column}': expected no nulls (a required column), found 1 null value(s)"


def test_required_columns_without_nulls_pass_without_statistics(tmp_path):
    arrow = schema.conform(_events(4), "events").replace_schema_metadata(
        {schema.META_TABLE: b"events", schema.META_VERSION: str(schema.SCHEMA_VERSION).encode()}
    )
    target = tmp_path / "ok.parquet"
    pq.write_table(arrow, target, write_statistics=False)
    schema.validate_file(target, "events")
    assert schema.read_events(target).height == 4


def test_many_distinct_paths_stay_dictionary_encoded(tmp_path):
    """A million-event recording has ~10^5 distinct paths: beyond Arrow's default 1 MiB
    dictionary page, where the writer would fall back to plain strings that readers hash again
    row by row. 60,000 distinct 40-byte paths (2.4 MB), each used twice, far apart."""
    names = [f"/data/in/shard-{i:06d}/payload-{i * 7919:012d}.bin"[:40] for i in range(60_000)]
    n = 2 * len(names)
    df = pl.DataFrame({"trace_id": ["t"] * n, "seq": list(range(n)), "ts_ns": list(range(n)), "probe": ["openat"] * n,
                       "depth": [0] * n, "ret": [3] * n, "kind": ["good"] * n, "path": names + names})
    path = schema.write_table(df, tmp_path / "big.parquet", "events")
    col = pq.ParquetFile(path).metadata.row_group(0)
    chunk = next(col.column(i) for i in range(col.num_columns) if col.column(i).path_in_schema == "path")
    # All in the dictionary: the values once (~2.6 MB) plus small indices. A fallback would
    # store the 96,000 rows after the first 1 MiB of dictionary as plain strings (~4 MB more).
    assert chunk.has_dictionary_page
    assert chunk.total_uncompressed_size < 3_500_000, chunk.total_uncompressed_size
    # 64-bit per-event columns are written plain (no dictionary as big as the data).
    seq = next(col.column(i) for i in range(col.num_columns) if col.column(i).path_in_schema == "seq")
    assert not seq.has_dictionary_page
    assert pq.read_table(path).column("path").to_pylist() == names + names


def test_sequence_numbers_are_delta_coded_and_old_files_still_read(tmp_path):
    """An events file's `seq` counts up row by row: delta-coded it decodes ~10x faster than
    plain zstd pages (the diff reads it for every row of both traces) and takes bytes, not a
    megabyte. Files written before (plain pages) read the same."""
    n = 50_000
    df = pl.DataFrame({"trace_id": ["t"] * n, "seq": list(range(n)), "ts_ns": [1000 * i for i in range(n)],
                       "probe": ["read"] * n, "depth": [0] * n, "ret": [1] * n, "kind": ["good"] * n})
    new = schema.write_table(df, tmp_path / "new.parquet", "events")
    group = pq.ParquetFile(new).metadata.row_group(0)
    seq = next(group.column(i) for i in range(group.num_columns) if group.column(i).path_in_schema == "seq")
    assert "DELTA_BINARY_PACKED" in seq.encodings and "PLAIN" not in seq.encodings, seq.encodings
    assert seq.total_compressed_size < 2_000, seq.total_compressed_size
    # the caller's own encoding for the column wins; its others keep ours
    mine = schema.encoding_options(pq.read_schema(new), {"column_encoding": {"ts_ns": "DELTA_BINARY_PACKED"}})
    assert mine["column_encoding"] == {"ts_ns": "DELTA_BINARY_PACKED", "seq": "DELTA_BINARY_PACKED"}
    assert schema.encoding_options(pq.read_schema(new), {"use_dictionary": True}).get("column_encoding") is None
    old = tmp_path / "old.parquet"
    pq.write_table(pq.read_table(new), old, compression="zstd", use_dictionary=["trace_id", "probe", "kind"])
    group = pq.ParquetFile(old).metadata.row_group(0)
    assert "DELTA_BINARY_PACKED" not in next(group.column(i) for i in range(group.num_columns)
                                             if group.column(i).path_in_schema == "seq").encodings
    for path in (new, old):
        assert schema.read_events(path)["seq"].to_list() == list(range(n))
        assert pl.read_parquet(path)["seq"].to_list() == list(range(n))


def test_a_scan_failing_on_torn_pages_is_traced_to_its_file(tmp_path):
    """Footers validate, pages do not decode: polars' error does not say which file; the data
    model names it (the CLIs report it as bad input, exit 2, not as a bug)."""
    whole = schema.write_table(_events(50_000, "a"), tmp_path / "a.parquet", "events")
    torn = schema.write_table(_events(50_000, "b"), tmp_path / "b.parquet", "events")
    meta = pq.ParquetFile(torn).metadata.row_group(0)
    chunk = next(meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema == "ts_ns")
    data = bytearray(torn.read_bytes())
    middle, end = chunk.data_page_offset + chunk.total_compressed_size // 2, chunk.data_page_offset + chunk.total_compressed_size
    data[middle:end] = b"\xff" * (end - middle)
    torn.write_bytes(bytes(data))
    with pytest.raises(Exception) as raised:
        schema.scan([whole, torn], "events").select("ts_ns").collect()
    error = schema.unreadable_file_error(raised.value)
    assert isinstance(error, SchemaError) and error.source == str(torn) and "unreadable data" in str(error)
    assert schema.unreadable_file_error(ValueError("parquet: something else")) is None  # not a read
    assert schema.unreadable_file_error(pl.exceptions.ComputeError("division by zero")) is None


def test_a_footer_check_that_reads_columns_reads_the_file_it_opened(tmp_path):
    """validate_file reads a column when the footer has no statistics for it (a stored `host`
    whose values must be the directory's; a required column's nulls). It read it by opening the
    path again: a file renamed over the path meanwhile was read for it, and `baseline learn`
    ended in "internal error: ArrowInvalid: No match for FieldRef.Name(host)" (battery 50: a
    half copy without the column swapped in). It now reads the file whose footer it read."""
    meta = {schema.META_TABLE: b"counters", schema.META_VERSION: str(schema.SCHEMA_VERSION).encode()}
    rows = schema.conform(pl.DataFrame({"host": ["h1"] * 4, "snapshot_time": [NOW] * 4, "probe": ["p"] * 4,
                                        "invocations": [1] * 4, "failures": [0] * 4}), "counters")
    target = schema.partition_path(tmp_path, "counters", "2026-11-28", "h1", "part-0.parquet")
    target.parent.mkdir(parents=True)
    pq.write_table(rows.replace_schema_metadata(meta), target, write_statistics=False)  # stores host, no stats
    other = tmp_path / "other.parquet"
    pq.write_table(rows.drop_columns(["host"]).replace_schema_metadata(meta), other, write_statistics=False)
    with open(target, "rb") as fh:
        os.replace(other, target)  # the path now names another file
        assert schema.validate_file(target, "counters", opened=fh).num_rows == 4


@pytest.mark.parametrize("exc", [OSError("Too many open files (os error 24): /ds/truth/date=2026-11-28/host=h/part-0.parquet"),
                                 OSError(24, "Too many open files")])
def test_a_system_error_naming_a_parquet_file_is_no_corrupt_page(exc):
    """polars words a read's EMFILE "Too many open files (os error 24): PATH": the path held
    "parquet", which took it for a corrupt page, and reading the scanned files again to find it
    failed the same way (EMFILE importing pyarrow.parquet: a traceback in CI 139's evaluate under
    `ulimit -n` at the floor). A system call's error is no file's bad data: the command line
    words it, naming the limit."""
    assert schema.unreadable_file_error(exc) is None


def test_a_file_cut_short_while_read_is_named(tmp_path):
    """polars' read of a file truncated after its footer was read says only "failed to fill whole
    buffer": `baseline audit` printed that line alone (battery 50, CI 141). It is a read of bad
    data, and the scanned file that does not read whole is named."""
    t0 = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
    df = pl.DataFrame({"host": ["h1"] * 5000, "snapshot_time": [t0 + dt.timedelta(seconds=5 * i) for i in range(5000)],
                       "probe": ["p"] * 5000, "invocations": list(range(5000)), "failures": [0] * 5000})
    f = schema.write_partition(df, tmp_path, "counters", "2026-11-28", "h1", "part-00050.parquet")
    schema.scan([f], "counters")
    with open(f, "r+b") as fh:
        fh.truncate(os.path.getsize(f) // 3)
    err = schema.unreadable_file_error(pl.exceptions.ComputeError("failed to fill whole buffer"))
    assert err is not None and str(err).startswith(f"{f}: expected readable Parquet data"), err

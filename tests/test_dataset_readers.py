"""Dataset tables read as directories by pandas, pyarrow (dataset and parquet), DuckDB and polars.

The partition key `host` lives in the directory name (host=<h>) and not in the files, so hive
discovery gives every reader one consistent column. Written by both of our dataset writers
(the simulator and ingest); our own readers restore `host` from the path and still accept files
that carry it (the layout other producers write).
"""

from __future__ import annotations

import datetime as dt

import duckdb
import pandas as pd
import polars as pl
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from test_ingest import make_spool

from baseline.pipeline.ingest import compact_dataset, ingest_spool
from baseline.simulator.simulate import simulate
from tracer.schema import dataset_files, read, write_table

TABLES = ("events", "counters", "truth")


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    root = tmp_path_factory.mktemp("readers")
    simulate(root, hosts=3, hours=1, seed=5, start="2026-11-28T00:00:00Z")
    return root


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    root = tmp_path_factory.mktemp("ingested")
    make_spool(root / "spool", hosts=3, snapshots=4)
    ingest_spool(root / "spool", root / "ds", root / "q")
    make_spool(root / "spool", hosts=3, snapshots=4, start=dt.datetime(2026, 11, 25, 11, tzinfo=dt.UTC))
    ingest_spool(root / "spool", root / "ds", root / "q")
    compact_dataset(root / "ds", min_files=2)  # compacted and plain parts side by side
    return root / "ds"


def expected_rows(root, table: str) -> tuple[int, set[str]]:
    df = read(dataset_files(root, table), table)
    return df.height, set(df["host"].to_list())


def readers(directory):
    d = str(directory)
    return {
        "pandas": lambda: pd.read_parquet(d),
        "pyarrow.parquet": lambda: pq.read_table(d).to_pandas(),
        "pyarrow.dataset": lambda: ds.dataset(d, format="parquet", partitioning="hive").to_table().to_pandas(),
        "duckdb": lambda: duckdb.sql(
            f"select * from read_parquet('{d}/**/*.parquet', hive_partitioning = true)").df(),
        "polars": lambda: pl.read_parquet(d).to_pandas(),
    }


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("reader", ["pandas", "pyarrow.parquet", "pyarrow.dataset", "duckdb", "polars"])
def test_simulated_tables_read_as_directories(simulated, table, reader):
    rows, hosts = expected_rows(simulated, table)
    assert rows > 0 and len(hosts) == 3
    frame = readers(simulated / table)[reader]()
    assert len(frame) == rows
    assert set(frame["host"].astype(str)) == hosts
    assert "trace_id" in frame.columns or "probe" in frame.columns


@pytest.mark.parametrize("table", ["events", "counters"])
@pytest.mark.parametrize("reader", ["pandas", "pyarrow.parquet", "pyarrow.dataset", "duckdb", "polars"])
def test_ingested_tables_read_as_directories(ingested, table, reader):
    rows, hosts = expected_rows(ingested, table)
    assert rows == (48 if table == "events" else 48) and hosts == {"host000", "host001", "host002"}
    frame = readers(ingested / table)[reader]()
    assert len(frame) == rows
    assert set(frame["host"].astype(str)) == hosts


def test_files_do_not_repeat_the_partition_key(simulated, ingested):
    for f in dataset_files(simulated, "events") + dataset_files(ingested, "counters"):
        assert "host" not in pq.read_schema(f).names, f


def test_our_readers_accept_files_that_carry_host(tmp_path, simulated):
    """Data written by other producers in the layout with `host` inside the files stays readable,
    also beside files without it, and the file's own value wins."""
    src = dataset_files(simulated, "counters")[0]
    theirs = read(src, "counters").with_columns(pl.lit("hostA").alias("host"))
    write_table(theirs, tmp_path / "counters" / "date=2026-11-28" / "host=hostA" / "part-0.parquet", "counters")
    assert "host" in pq.read_schema(tmp_path / "counters" / "date=2026-11-28" / "host=hostA" / "part-0.parquet").names
    ours = read(src, "counters")
    write_table(ours, tmp_path / "counters" / "date=2026-11-28" / "host=hostB" / "part-0.parquet", "counters",
                omit_columns=("host",))
    both = read(dataset_files(tmp_path, "counters"), "counters")
    assert both.height == 2 * ours.height
    assert both["host"].value_counts().sort("host").rows() == [("hostA", ours.height), ("hostB", ours.height)]
    compact_dataset(tmp_path, min_files=1, tables=("counters",))  # compaction reads both kinds too
    assert read(dataset_files(tmp_path, "counters"), "counters")["host"].null_count() == 0


def test_typed_hive_keys_keep_numeric_host_names(tmp_path, simulated):
    """A fleet whose host names are all digits: untyped, pyarrow/pandas/polars read host as an
    integer (0042 -> 42); with the documented HIVE_KEYS arguments every reader keeps the name,
    and the date is a date everywhere."""
    import shutil

    import pyarrow as pa

    from tracer.schema import HIVE_KEYS

    names = {}
    for i, src in enumerate(sorted((simulated / "counters").glob("date=*/host=*"))):
        dst = tmp_path / "counters" / src.parent.name / f"host={i:04d}"
        shutil.copytree(src, dst)
        names[f"{i:04d}"] = sum(pq.read_metadata(f).num_rows for f in dst.glob("*.parquet"))
    d = str(tmp_path / "counters")
    assert ds.dataset(d, format="parquet", partitioning="hive").schema.field("host").type != pa.string()  # the trap
    keys = ds.partitioning(HIVE_KEYS, flavor="hive")
    frames = {
        "pyarrow.dataset": ds.dataset(d, format="parquet", partitioning=keys).to_table().to_pandas(),
        "pandas": pd.read_parquet(d, partitioning=keys),
        "polars": pl.scan_parquet(f"{d}/**/*.parquet", hive_schema={"date": pl.Date, "host": pl.String}).collect()
                  .to_pandas(),
        "duckdb": duckdb.sql(f"select * from read_parquet('{d}/**/*.parquet', hive_partitioning = true, "
                             "hive_types = {'date': DATE, 'host': VARCHAR})").df(),
        "ours": read(dataset_files(tmp_path, "counters"), "counters").to_pandas(),
    }
    for reader, frame in frames.items():
        assert frame["host"].astype(object).value_counts().to_dict() == names, reader
        if reader != "ours":
            assert {type(v) for v in frame["date"].astype(object)} <= {dt.date, pd.Timestamp}, reader


@pytest.fixture(scope="module")
def mixed_layouts(tmp_path_factory):
    """Two dates: the first closed and compacted across hosts (day files, host stored), the
    second one file per host-day, as a live dataset holds them."""
    from baseline.pipeline.ingest import compact_days

    root = tmp_path_factory.mktemp("mixed") / "ds"
    simulate(root, hosts=4, hours=30, seed=5, start="2026-11-28T00:00:00Z")
    assert compact_days(root, days_after=1, today=dt.date(2026, 11, 29)).days == 1
    assert list((root / "events" / "date=2026-11-28").glob("day-*.parquet"))
    assert list((root / "events" / "date=2026-11-29").glob("host=*"))
    return root


@pytest.mark.parametrize("reader", ["pandas", "pyarrow.dataset", "polars", "duckdb", "read_arrow"])
def test_a_table_holding_day_files_reads_by_the_documented_recipes(mixed_layouts, reader):
    """docs/airflow.md's readers of a table holding both layouts: pandas and pyarrow with the
    hive keys pinned, polars and DuckDB each form's glob apart, stacked; and tracebase's
    read_arrow with host asked as a dictionary (a day file's plain column beside hosts restored
    from the path: 'Unable to merge' before)."""
    from tracer.schema import HIVE_KEYS, read_arrow

    want = read(dataset_files(mixed_layouts, "events"), "events")
    d = str(mixed_layouts / "events")
    keys = ds.partitioning(HIVE_KEYS, flavor="hive")
    frame = {
        "pandas": lambda: pd.read_parquet(d, partitioning=keys),
        "pyarrow.dataset": lambda: ds.dataset(d, format="parquet", partitioning=keys).to_table().to_pandas(),
        "polars": lambda: pl.concat([
            pl.scan_parquet(f"{d}/date=*/host=*/*.parquet", hive_schema={"date": pl.Date, "host": pl.String}).drop("date"),
            pl.scan_parquet(f"{d}/date=*/day-*.parquet", hive_partitioning=False),
        ], how="diagonal_relaxed").collect().to_pandas(),
        "duckdb": lambda: duckdb.sql(
            f"select * exclude (date) from read_parquet('{d}/date=*/host=*/*.parquet', hive_partitioning = true, "
            "hive_types = {'date': DATE, 'host': VARCHAR}) "
            f"union all by name select * from read_parquet('{d}/date=*/day-*.parquet')").df(),
        "read_arrow": lambda: read_arrow(dataset_files(mixed_layouts, "events"), "events",
                                         columns=["host", "trace_id", "probe"],
                                         dictionary_columns=["host", "probe"]).to_pandas(),
    }[reader]()
    assert len(frame) == want.height
    assert frame["host"].astype(str).value_counts().to_dict() == dict(want["host"].value_counts().rows())

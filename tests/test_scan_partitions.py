"""Fast paths of the dataset readers the audit leans on (issue 12): the host partition key from
the directory name by polars' hive partitioning, and footer validation that remembers schemas
it has passed. Each must give what the slow path gives, and fall back where it cannot."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pyarrow as pa
import pytest

from tracer.errors import SchemaError
from tracer.schema import (
    COUNTERS,
    conform,
    dataset_files,
    partition_path,
    scan,
    scan_parquet_files,
    validate_file,
    write_partition,
    write_table,
)

T0 = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)


def counters_rows(n: int, probe: str = "ib_uverbs_reg_mr") -> pa.Table:
    return pa.table({
        "host": ["ignored"] * n,
        "snapshot_time": [T0 + dt.timedelta(seconds=5 * (i + 1)) for i in range(n)],  # each at its interval's end
        "probe": [probe] * n,
        "invocations": list(range(n)),
        "failures": [0] * n,
    })


def make_dataset(root, hosts=("gpu-a", "gpu-b")) -> None:
    for i, host in enumerate(hosts):
        write_partition(counters_rows(3 + i), root, "counters", "2026-11-28", host, "part-00000.parquet")


def test_hive_host_equals_path_regex(tmp_path):
    make_dataset(tmp_path)
    files = dataset_files(tmp_path, "counters")
    fast = scan_parquet_files(files, "counters", partitions_stored=False).collect()
    slow = scan_parquet_files(files, "counters").collect()  # per-row path and regex
    assert fast.equals(slow)
    assert fast.group_by("host").len().sort("host").rows() == [("gpu-a", 3), ("gpu-b", 4)]
    assert scan(tmp_path / "counters", "counters").collect().equals(slow)  # scan() takes the fast path


def test_other_key_value_directories_fall_back(tmp_path):
    root = tmp_path / "team=rdma" / "fleet"  # hive partitioning would read team= as a key too
    make_dataset(root)
    got = scan(root / "counters", "counters").collect()
    assert sorted(got["host"].unique().to_list()) == ["gpu-a", "gpu-b"]


def test_a_file_that_stores_its_directorys_host_is_read_and_another_host_refused(tmp_path):
    """A per-host part may store its host column (another collector's files) when it says the
    directory's host; one saying another host contradicts the layout (the host is the
    directory's: docs/architecture.md) and is refused naming the file and column -- read under
    the stored name, the audit's findings named that host while the same directory's counters
    alerted under the directory's (round thirty-nine's battery)."""
    make_dataset(tmp_path)
    part = partition_path(tmp_path, "counters", "2026-11-28", "gpu-c", "part-00000.parquet")
    write_table(counters_rows(2).set_column(0, "host", pa.array(["gpu-c", "gpu-c"])), part, "counters")
    got = scan(tmp_path / "counters", "counters").collect()
    assert got.group_by("host").len().sort("host").rows() == [("gpu-a", 3), ("gpu-b", 4), ("gpu-c", 2)]
    write_table(counters_rows(2).set_column(0, "host", pa.array(["stored-host", "stored-host"])), part, "counters")
    with pytest.raises(SchemaError, match="host") as info:
        scan(tmp_path / "counters", "counters").collect()
    assert str(part) in str(info.value) and "stored-host" in str(info.value)


def test_an_empty_host_directory_is_refused(tmp_path):
    """`host=/` names no host: every reader took its rows for a host named "" (findings and
    alerts under an empty name, round thirty-nine's battery). Refused naming file and column,
    by the file check every reader runs, whether or not the file stores a host itself."""
    make_dataset(tmp_path)
    part = partition_path(tmp_path, "counters", "2026-11-28", "", "part-00000.parquet")
    write_partition(counters_rows(2), tmp_path, "counters", "2026-11-28", "", "part-00000.parquet")
    for reader in (lambda: scan(tmp_path / "counters", "counters").collect(), lambda: validate_file(part, "counters")):
        with pytest.raises(SchemaError, match=r"column 'host': expected a host named by its directory") as info:
            reader()
        assert str(part) in str(info.value) and "found an empty name ('host=')" in str(info.value)


def test_remembered_schema_still_finds_nulls(tmp_path):
    """A footer schema that passed once passes again without the type checks, but a file whose
    non-nullable column is stored OPTIONAL is still read for nulls, file by file."""
    loose = pa.schema([f.with_nullable(True) for f in COUNTERS])  # probe stored OPTIONAL
    meta = {b"tracebase.table": b"counters", b"tracebase.schema_version": b"2"}
    good = conform(counters_rows(3), "counters").cast(loose).replace_schema_metadata(meta)
    bad = conform(counters_rows(3), "counters").cast(loose)
    bad = bad.set_column(bad.schema.get_field_index("probe"), "probe", pa.array(["x", None, "y"]))
    bad = bad.replace_schema_metadata(meta)
    import pyarrow.parquet as pq

    pq.write_table(good, tmp_path / "good.parquet")
    pq.write_table(bad, tmp_path / "bad.parquet")
    validate_file(tmp_path / "good.parquet", "counters")
    validate_file(tmp_path / "good.parquet", "counters")  # remembered now
    with pytest.raises(SchemaError, match="probe"):
        validate_file(tmp_path / "bad.parquet", "counters")


def test_remembered_schema_is_per_table(tmp_path):
    write_table(counters_rows(2), tmp_path / "c.parquet", "counters")
    validate_file(tmp_path / "c.parquet", "counters")
    with pytest.raises(SchemaError, match="table 'counters'"):
        validate_file(tmp_path / "c.parquet", "events")


def test_categorical_counters_reduce_like_text(tmp_path):
    """bucket_counters reads the text columns as categoricals: same buckets as plain text."""
    from baseline.fleet.counters import bucket_counters, counter_scans

    make_dataset(tmp_path)
    calls, errs = bucket_counters(counter_scans(dataset_files(tmp_path, "counters")))
    assert calls.schema["host"] == pl.Categorical
    got = calls.select(pl.col("host", "probe").cast(pl.String), "n").sort("host").rows()
    assert got == [("gpu-a", "ib_uverbs_reg_mr", 0 + 1 + 2), ("gpu-b", "ib_uverbs_reg_mr", 0 + 1 + 2 + 3)]
    assert errs.height == 0

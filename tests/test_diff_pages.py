"""The compiled reader of dictionary-encoded column chunks (baseline.run.native.
read_dictionary_chunk and read_int_dictionary_chunk, used by baseline.run.traces._File for the
differ's string and 32/16-bit integer columns): on
files written by pyarrow and polars with other settings than tracer.schema's (page versions,
page and row-group sizes, codecs, dictionaries that overflow into plain pages, required and
nullable columns, every null pattern), it gives exactly what Arrow's reader gives with
``read_dictionary``, or None (the column is then read through Arrow). The strings are the
reference's own words (/work/shared/reference), not the code's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from baseline.run import native, traces
from baseline.run.allowlist import ExpectedErrors
from baseline.run.diff import diff_traces
from tracer import schema
from tracer.schema import write_table

REFERENCE = Path("/work/shared/reference/rdma_control_path.yaml")
NONE = ExpectedErrors([], source="<test>")
pytestmark = pytest.mark.skipif(not native.available(), reason="the compiled loops are not used (not built: no C compiler; or TRACEBASE_NATIVE=0)")


def _words() -> list[str]:
    """Every key and string of the RDMA reference (function names, errnos, sources), with
    an empty string and non-ASCII text beside them."""
    out: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                out.append(str(k))
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str):
            out.append(node)

    walk(yaml.safe_load(REFERENCE.read_text()))
    return sorted(set(out)) + ["", "/dev/infiniband/uverbs0 \u00e9t\u00e9 \u65e5\u672c"]


WORDS = _words()


def _strings(n: int, nulls: str, seed: int) -> list[str | None]:
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(WORDS), n)
    # device paths of the reference's words: many distinct values, as a trace's paths are
    values = [f"/sys/class/infiniband/mlx5_{i % 7}/{WORDS[p]}" if i % 3 else WORDS[p] for i, p in enumerate(picks)]
    null = {"none": np.zeros(n, bool), "all": np.ones(n, bool), "alternate": np.arange(n) % 2 == 1,
            "runs": (np.arange(n) // 300) % 2 == 1, "most": rng.random(n) < 0.7}[nulls]
    return [None if z else v for v, z in zip(values, null, strict=True)]


def _arrow(path: Path, name: str) -> pa.ChunkedArray:
    return pq.ParquetFile(path, read_dictionary=[name]).read(columns=[name], use_threads=False).column(name)


def _own(path: Path, name: str) -> pa.ChunkedArray | None:
    meta = pq.ParquetFile(path).metadata
    i = next(i for i in range(meta.num_columns) if meta.schema.column(i).path == name)
    chunks = []
    with open(path, "rb") as fh:
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            chunk = native.read_dictionary_chunk(fh, group.column(i), meta.schema.column(i).max_definition_level,
                                                 group.num_rows)
            if chunk is None:
                return None
            chunks.append(chunk)
    return pa.chunked_array(chunks)


def _same(own: pa.ChunkedArray, arrow: pa.ChunkedArray) -> None:
    assert own.type == arrow.type and own.num_chunks == arrow.num_chunks
    for mine, theirs in zip(own.chunks, arrow.chunks, strict=True):
        mine.validate(full=True)
        assert mine.dictionary.equals(theirs.dictionary)
        assert mine.null_count == theirs.null_count
        assert mine.indices.equals(theirs.indices)  # (nulls where Arrow has them)


# (pyarrow's writer settings, whether the compiled reader reads them)
PYARROW = [
    ({"compression": "zstd"}, True),
    ({"compression": "zstd", "compression_level": 19}, True),
    ({"compression": "none"}, True),
    ({"compression": "zstd", "data_page_version": "2.0"}, True),
    ({"compression": "none", "data_page_version": "2.0"}, True),
    ({"compression": "zstd", "data_page_size": 256}, True),  # hundreds of pages a chunk
    ({"compression": "zstd", "data_page_version": "2.0", "data_page_size": 300, "row_group_size": 777}, True),
    ({"compression": "zstd", "row_group_size": 1000}, True),  # several chunks, a dictionary each
    ({"compression": "zstd", "write_page_index": True, "write_page_checksum": True}, True),
    ({"compression": "snappy"}, False),  # codecs other than zstd: Arrow's
    ({"compression": "gzip"}, False),
    ({"compression": "zstd", "dictionary_pagesize_limit": 512}, False),  # plain pages after the dictionary
    ({"compression": "zstd", "use_dictionary": False}, False),  # no dictionary page at all
]


@pytest.mark.parametrize("nulls", ["none", "all", "alternate", "runs", "most"])
@pytest.mark.parametrize(("options", "read"), PYARROW, ids=[str(o) for o, _ in PYARROW])
def test_a_pyarrow_file_reads_as_arrow_reads_it(tmp_path, options, read, nulls):
    table = pa.table({"path": pa.array(_strings(5000, nulls, 7), pa.string())})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, **options)
    own, arrow = _own(path, "path"), _arrow(path, "path")
    if nulls == "all" and options["compression"] in ("zstd", "none") and options.get("use_dictionary", True):
        read = True  # (an all-null chunk has an empty dictionary page and nothing to overflow it)
    assert (own is not None) == read
    if own is not None:
        _same(own, arrow)


def _own_ints(path: Path, name: str) -> pa.ChunkedArray | None:
    meta = pq.ParquetFile(path).metadata
    i = next(i for i in range(meta.num_columns) if meta.schema.column(i).path == name)
    kind = meta.schema.to_arrow_schema().field(name).type
    chunks = []
    with open(path, "rb") as fh:
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            chunk = native.read_int_dictionary_chunk(fh, group.column(i), meta.schema.column(i).max_definition_level,
                                                     group.num_rows, kind)
            if chunk is None:
                return None
            chunks.append(chunk)
    return pa.chunked_array(chunks)


def _ints(n: int, nulls: str, seed: int, low: int, high: int) -> list[int | None]:
    """Process and thread ids, depths: the reference's errno numbers' spread of values
    (few distinct, in runs) with some far apart."""
    rng = np.random.default_rng(seed)
    values = np.repeat(rng.integers(low, high, n // 50 + 1), 50)[:n]
    null = {"none": np.zeros(n, bool), "all": np.ones(n, bool), "alternate": np.arange(n) % 2 == 1,
            "most": rng.random(n) < 0.7}[nulls]
    return [None if z else int(v) for v, z in zip(values, null, strict=True)]


INTS = [  # (Arrow type, value range, whether the compiled reader reads it)
    (pa.int32(), (-(2**31), 2**31 - 1), True),
    (pa.int32(), (1, 4_194_304), True),  # pids
    (pa.int16(), (-(2**15), 2**15 - 1), True),  # depths
    (pa.int8(), (-128, 127), False),  # other types: Arrow's
    (pa.uint16(), (0, 2**16 - 1), False),
    (pa.uint32(), (0, 2**32 - 1), False),
    (pa.int64(), (-(2**40), 2**40), False),
]


@pytest.mark.parametrize("nulls", ["none", "all", "alternate", "most"])
@pytest.mark.parametrize("options", [{"compression": "zstd"}, {"compression": "none", "data_page_version": "2.0"},
                                     {"compression": "zstd", "data_page_size": 128, "row_group_size": 999},
                                     {"compression": "snappy"}, {"compression": "zstd", "dictionary_pagesize_limit": 64}],
                         ids=["zstd", "v2", "small-pages", "snappy", "plain-after-dictionary"])
@pytest.mark.parametrize(("kind", "span", "read"), INTS, ids=[f"{k}-{s[1]}" for k, s, _ in INTS])
def test_an_integer_column_reads_as_arrow_reads_it(tmp_path, kind, span, read, options, nulls):
    table = pa.table({"pid": pa.array(_ints(5000, nulls, 3, *span), kind)})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, **options)
    own, arrow = _own_ints(path, "pid"), pq.read_table(path, use_threads=False).column("pid")
    if read and (options["compression"] == "snappy" or ("dictionary_pagesize_limit" in options and nulls != "all")):
        read = False
    assert (own is not None) == read
    if own is not None:
        assert own.type == arrow.type == kind and own.num_chunks == arrow.num_chunks
        own.validate(full=True)
        assert own.equals(arrow)
        assert [c.null_count for c in own.chunks] == [c.null_count for c in arrow.chunks]
        for chunk in own.chunks:  # the slots under nulls hold 0 (no value of another row)
            slots = np.frombuffer(chunk.buffers()[1], dtype=kind.to_pandas_dtype(), count=len(chunk))
            assert not slots[~np.asarray(chunk.is_valid())].any()


@pytest.mark.parametrize("options", [{"compression": "zstd"}, {"compression": "none", "data_page_version": "2.0"}])
def test_a_required_column_has_no_levels_and_reads_alike(tmp_path, options):
    table = pa.table({"comm": pa.array(_strings(3000, "none", 3), pa.string())},
                     schema=pa.schema([pa.field("comm", pa.string(), nullable=False)]))
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, **options)
    assert pq.ParquetFile(path).metadata.schema.column(0).max_definition_level == 0
    own = _own(path, "comm")
    assert own is not None
    _same(own, _arrow(path, "comm"))


@pytest.mark.parametrize("compression", ["zstd", "lz4", "uncompressed"])
@pytest.mark.parametrize("categorical", [False, True])
def test_a_polars_file_reads_as_arrow_reads_it_or_is_left_to_arrow(tmp_path, compression, categorical):
    frame = pl.DataFrame({"path": _strings(4000, "alternate", 11)})
    if categorical:
        frame = frame.with_columns(pl.col("path").cast(pl.Categorical))
    path = tmp_path / "t.parquet"
    frame.write_parquet(path, compression=compression, row_group_size=1500)
    own = _own(path, "path")
    assert (own is None) == (compression == "lz4")  # (polars writes dictionary pages too)
    if own is not None:
        _same(own, _arrow(path, "path"))


def test_large_strings_of_an_events_file_read_as_arrow_reads_them(tmp_path):
    """A path column stored as large strings (polars' type, in the file's stored Arrow schema)
    reads as dictionary<int32, string> through Arrow's read_dictionary and so through the
    reader (the type checked in traces._File before the reader is asked)."""
    path = tmp_path / "events.parquet"
    frame = schema.conform(_events("g1", 100, "/tmp/tmpa1b2c3d4", None, "good"), "events")
    meta = {schema.META_TABLE: b"events", schema.META_VERSION: str(schema.SCHEMA_VERSION).encode()}
    large = frame.set_column(frame.schema.get_field_index("path"), "path", frame.column("path").cast(pa.large_string()))
    pq.write_table(large.replace_schema_metadata(meta), path, compression="zstd")
    part = traces._File(path)
    assert part.meta.schema.to_arrow_schema().field("path").type == pa.large_string()
    with open(path, "rb") as fh:
        own = part._own_dictionary_read(fh, "path")
        assert own is not None
        _same(own, part._arrow_read(fh, "path"))


def test_values_beyond_the_dictionary_or_a_torn_page_are_left_to_arrow(tmp_path):
    """A page the reader cannot decode exactly (bytes overwritten) is refused by it, never
    read as something else: Arrow then reads or refuses the column as it always has."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"path": pa.array(_strings(5000, "most", 5), pa.string())}), path, compression="none")
    meta = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data = bytearray(path.read_bytes())
    start, end = meta.dictionary_page_offset, meta.dictionary_page_offset + meta.total_compressed_size
    for cut in (meta.data_page_offset + 20, (start + end) // 2, end - 40):
        torn = bytearray(data)
        torn[cut:end] = b"\xff" * (end - cut)
        (tmp_path / "torn.parquet").write_bytes(bytes(torn))
        assert _own(tmp_path / "torn.parquet", "path") is None


def _events(trace_id: str, pid: int, tmp: str, fail: int | None, kind: str) -> pl.DataFrame:
    """A loader reading files named after the reference's words; `fail`: the file whose open
    fails with EACCES."""
    rows = [(pid, "execve", None, "/usr/bin/rdma-loader"), (pid, "openat", "ENOENT", "/etc/ld.so.preload"),
            (pid, "mkdir", None, tmp)]
    for i, word in enumerate(WORDS[:400]):
        who = pid if i % 2 else pid + 1
        name = f"/sys/class/infiniband/mlx5_0/{word}"
        rows += [(who, "openat", "EACCES" if i == fail else None, name), (who, "read", None, None),
                 (who, "close", None, None), (who, "write", None, f"{tmp}/out")]
    rows += [(pid, "exit_group", None, None)]
    n = len(rows)
    return pl.DataFrame(
        {"trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [100 * i for i in range(n)],
         "pid": [pid] * n, "tid": [r[0] for r in rows], "ppid": [1] * n, "comm": ["rdma-loader"] * n,
         "probe": [r[1] for r in rows], "depth": [0] * n, "ret": [-13 if r[2] else 0 for r in rows],
         "errno": [r[2] for r in rows], "path": [r[3] for r in rows], "kind": [kind] * n,
         "command": ["rdma-loader /sys"] * n},
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16,
                          "errno": pl.String, "path": pl.String},
    )


@pytest.mark.parametrize("options", [None, {"data_page_version": "2.0", "data_page_size": 512, "row_group_size": 300},
                                     {"compression": "none"}])
def test_a_diff_reads_its_string_columns_so_and_reports_alike(tmp_path, monkeypatch, options):
    """The report of files written through tracer.schema and by plain pyarrow with other page
    settings is the one Arrow's reader gives; the compiled reader did read the string columns."""
    frames = [_events("g1", 100, "/tmp/tmpa1b2c3d4", None, "good"), _events("b1", 300, "/tmp/tmpz0x9c8v7", 150, "failure")]
    paths = []
    for name, frame in zip(("good", "bad"), frames, strict=True):
        path = tmp_path / f"{name}.parquet"
        if options is None:
            write_table(frame, path, "events")
        else:
            arrow = schema.conform(frame, "events").replace_schema_metadata(
                {schema.META_TABLE: b"events", schema.META_VERSION: str(schema.SCHEMA_VERSION).encode()})
            pq.write_table(arrow, path, **{"compression": "zstd", **options})
        paths.append(path)
    read = []
    real = native.read_dictionary_chunk

    def counted(*args):
        out = real(*args)
        read.append(out is not None)
        return out

    monkeypatch.setattr(native, "read_dictionary_chunk", counted)
    got = diff_traces([paths[0]], paths[1], expected=NONE).to_dict()
    assert any(read) and (options is not None or all(read))
    monkeypatch.setattr(native, "read_dictionary_chunk", lambda *args: None)  # Arrow's reader only
    want = diff_traces([paths[0]], paths[1], expected=NONE).to_dict()
    for r in (got, want):
        r["settings"].pop("elapsed_s")
    assert got == want
    assert got["anomaly"] and got["bifurcation"]["errno"] == "EACCES"
    assert got["bifurcation"]["path"] == f"/sys/class/infiniband/mlx5_0/{WORDS[150]}"
    # and the columns themselves, file by file
    monkeypatch.undo()
    for path in paths:
        part = traces._File(path)
        with open(path, "rb") as fh:
            for name in ("path", "probe", "errno", "comm"):
                own = part._own_dictionary_read(fh, name)
                assert own is not None
                _same(own, part._arrow_read(fh, name))
            for name in ("pid", "tid", "ppid", "depth"):
                own = part._own_dictionary_read(fh, name)
                assert own is not None and own.equals(part._arrow_read(fh, name))
            assert part._own_dictionary_read(fh, "seq") is None  # (delta-coded: Arrow's)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_chunk_with_bytes_changed_is_read_as_arrow_reads_it_or_left_to_arrow(tmp_path, seed):
    """Bytes of a column chunk changed at random (page headers, levels, indices, compressed
    data): the reader never fails otherwise than by None, never reads what Arrow refuses, and
    what it reads is what Arrow reads (a changed byte in a part of a page neither uses)."""
    rng = np.random.default_rng(seed)
    settings = [{"compression": "zstd"}, {"compression": "none"}, {"compression": "zstd", "data_page_version": "2.0"},
                {"compression": "none", "data_page_version": "2.0", "data_page_size": 200}]
    read = 0
    for trial in range(150):
        ints = trial % 3 == 2
        name = "pid" if ints else "path"
        column = pa.array(_ints(800, "most", trial, 0, 5000), pa.int32()) if ints else \
            pa.array(_strings(800, ["none", "alternate", "most"][trial % 3], trial), pa.string())
        path = tmp_path / "t.parquet"
        pq.write_table(pa.table({name: column}), path, **settings[trial % 4])
        chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
        data = bytearray(path.read_bytes())
        lo = chunk.dictionary_page_offset
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(lo, lo + chunk.total_compressed_size))] = int(rng.integers(0, 256))
        path.write_bytes(bytes(data))
        own = _own_ints(path, name) if ints else _own(path, name)
        try:
            arrow = pq.read_table(path, use_threads=False).column(name) if ints else _arrow(path, name)
        except (pa.ArrowException, OSError):
            assert own is None, trial
            continue
        if own is not None:
            read += 1
            assert own.equals(arrow), trial
    assert read > 30  # (most changes fall in the compressed data or the values, and are refused)


def _varint_end(data: bytes | bytearray, at: int) -> int:
    while data[at] & 0x80:
        at += 1
    return at + 1


def test_a_page_header_without_a_required_field_is_refused_as_arrow_refuses_it(tmp_path):
    """The first data page's header loses its repetition_level_encoding (a required field of
    parquet.thrift's DataPageHeader: its field header renumbered to an unknown id): Arrow's
    Thrift code refuses the header; so does the reader (it had read on: it uses no such field
    for a flat column)."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"path": pa.array(_strings(2000, "alternate", 9), pa.string())}), path, compression="none")
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data = bytearray(path.read_bytes())
    at, field = chunk.data_page_offset, 0
    while data[at]:  # the PageHeader's fields (compact protocol, short field headers)
        header = data[at]
        field += header >> 4
        at += 1
        if header & 0x0F == 5:  # an i32
            at = _varint_end(data, at)
        elif header & 0x0F == 12 and field == 5:  # the DataPageHeader
            seen = 0
            while data[at] & 0x0F == 5:
                seen += data[at] >> 4
                if seen == 4:  # repetition_level_encoding: renumbered 4 -> 5 (statistics, a struct there)
                    data[at] = 0x25
                    break
                at = _varint_end(data, at + 1)
            break
        else:
            raise AssertionError(f"unexpected page header field {header:#x}")
    path.write_bytes(bytes(data))
    with pytest.raises(OSError, match="(?i)thrift|page header"):
        _arrow(path, "path")
    assert _own(path, "path") is None

"""Battery fifty-four (blind): trace, counters and events Parquet files written NOT by tracebase's
writers but by the other writers a user might use, read by every reading CLI.

The files hold the very rows of our own writer's files (a real `tracer record` recording,
tests/recordings/sqlite_rw_fallback, and a real `baseline simulate` dataset), rewritten here by
pyarrow with other options (codecs none/snappy/gzip/brotli/lz4/zstd-22, dictionaries off, data
page v2, row groups of one row and one huge row group, pages of one row, statistics off, a page
index, page checksums and Bloom filters, DELTA and BYTE_STREAM_SPLIT encodings, content-defined
chunking, `use_compliant_nested_type=False`, large/view strings, dictionary columns, columns in
another order, an extra column, timestamps with UTC by another name or without a zone), by
polars' `write_parquet` and `sink_parquet`, by DuckDB's `COPY ... TO`, by pandas (Arrow
dtypes), INT96 timestamps, Parquet field ids, empty row groups, rows in another order,
dictionary-typed integers and other dictionary index widths, a dictionary overflowing into plain
pages, a footer as parquet-mr 1.6 wrote it (deprecated statistics only), the partition's host
stored anyway, and a file whose row groups come from two writers (pyarrow's and polars', the
column chunks spliced into one file under one footer by a small Thrift codec here).  And the same
rows in what the data model refuses: other integer widths (pandas' float64 for an integer column
with nulls, an int32 count inside errno_counts), another timestamp unit (Parquet format 1.0: us),
another zone, the footer keys missing, another schema version or table, a stored host of
another host.  Readers: diff, export, export --diff, allowlist learn (a recording); audit
(also --since), learn (also --since), expected learn, export, coverage, summarize (a dataset,
one host's file rewritten, or every host's by three writers); ingest (a spool snapshot).

The promises (docs/architecture.md "The data model"): "Every Parquet file carries
`tracebase.table` and `tracebase.schema_version` in its footer; readers ... refuse a mismatch
naming file, column, expected and found. The same data in another Arrow type is not a mismatch:
large or view strings, and dictionary-typed columns (polars writes a Categorical so); other
integer widths, timestamps in another unit (Parquet 1.0, DuckDB: us) and files without the
footer keys (as polars or DuckDB write a frame) are refused naming the column or the missing
key"; "A timestamp column whose zone is UTC by another name (`Etc/UTC`, ..., `GMT`, `+00:00`)
holds the same instants and is read as UTC; another zone is refused naming it. A timestamp
without a zone (a Parquet column, ...) is UTC in every reader"; "The Parquet layout
(`schema.encoding_options`): zstd, dictionaries ...; readers take any layout"; tracer/schema.py
`validate_schema`: "Extra columns are allowed"; READABLE_VERSIONS ("1", "2"); a dataset "without
the 15-minute summaries (another writer's)" gives "the same tables, just slower"; README: user
errors are "one line naming the file, flag or variable, what was expected and what was found,
and exit with status 2; never a traceback".

So each case is one of two: the answer of the CLI on the other writer's file EQUALS its answer on
our writer's file of the same rows (compared whole: the JSON, the tables written, the exported
trace), or a refusal: exit 2, one line on stderr naming the file, the column (or footer key),
what was expected and what was found.  Each docstring says which the docs promise.  Where the
docs leave both open (binary columns for strings) either passes, checked in full.

Written blind: from README.md, docs/*.md, the --help texts and tracer/schema.py; the code under
baseline/ and tracer/ was not read.  A case the tool fails keeps the right assertion and is a
strict xfail saying what happened.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
if not (BIN / "baseline").exists():
    BIN = Path(sys.executable).parent
BASELINE = str(BIN / "baseline")
REC = REPO / "tests" / "recordings" / "sqlite_rw_fallback"
TIMEOUT = 180
HOST = "gpu00001"  # the host whose files another writer rewrote (the others stay ours)
SINCE = "2026-11-28T00:37:30Z"  # the simulator's day starts at 00:00; buckets are 15 minutes
TRACEBACK_MARKS = ("Traceback (most recent call last)", "internal error", "Exception ignored")

ENV = {k: v for k, v in os.environ.items()
       if not k.startswith(("RUST_", "POLARS_", "PYTEST_", "COV_")) and k != "PYTHONPATH"}
ENV["LC_ALL"] = "C.UTF-8"
ENV["TZ"] = "UTC"


# --------------------------------------------------------------------------- running


def run(argv, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=ENV, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=TIMEOUT)


def no_traceback(text: str) -> None:
    for mark in TRACEBACK_MARKS:
        assert mark not in text, f"{mark!r} in:\n{text[-3000:]}"


def refused(proc: subprocess.CompletedProcess, file: str, *words: str) -> str:
    """Exit 2, one line on stderr naming `file` (as given, relative to the run's directory, or
    absolute) and every word (column, expected, found)."""
    no_traceback(proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, f"exit {proc.returncode}, expected 2; stderr:\n{proc.stderr[-3000:]}"
    assert len(lines) == 1, f"expected one line on stderr, found {len(lines)}:\n{proc.stderr[-3000:]}"
    assert file in lines[0], (file, lines[0])
    for word in words:  # a tuple: any one of them (the column of several changed, named first)
        assert any(w in lines[0] for w in ((word,) if isinstance(word, str) else word)), (word, lines[0])
    return lines[0]


def timeless(doc):
    """A JSON answer without its run time (diff-json.md: settings.elapsed_s), the one field that
    differs between two runs on the same data."""
    if isinstance(doc, dict):
        return {k: timeless(v) for k, v in doc.items() if k != "elapsed_s"}
    if isinstance(doc, list):
        return [timeless(v) for v in doc]
    return doc


# --------------------------------------------------------------------------- the other writers


def kv_of(path: Path) -> dict[bytes, bytes]:
    md = dict(pq.read_metadata(path).metadata or {})
    md.pop(b"ARROW:schema", None)
    return md


def table_of(path: Path) -> pa.Table:
    return pq.read_table(path, partitioning=None).replace_schema_metadata(None)


def retype(t: pa.DataType, string: Callable[[], pa.DataType], nested: bool = True) -> pa.DataType:
    if pa.types.is_string(t):
        return string()
    if nested and pa.types.is_list(t):
        f = t.value_field
        return pa.large_list(pa.field(f.name, retype(f.type, string), f.nullable))
    if nested and pa.types.is_struct(t):
        return pa.struct([pa.field(t.field(i).name, retype(t.field(i).type, string), t.field(i).nullable)
                          for i in range(t.num_fields)])
    return t


def cast_strings(t: pa.Table, string: Callable[[], pa.DataType], nested: bool = True) -> pa.Table:
    schema = pa.schema([pa.field(f.name, retype(f.type, string, nested), f.nullable) for f in t.schema])
    return t.cast(schema)


def recast(t: pa.Table, col: str, typ: pa.DataType) -> pa.Table:
    i = t.schema.get_field_index(col)
    f = t.schema.field(i)
    return t.set_column(i, pa.field(col, typ, f.nullable), pc.cast(t.column(col), typ, safe=False))


def time_columns(t: pa.Table) -> list[str]:
    return [f.name for f in t.schema if pa.types.is_timestamp(f.type)]


def retime(t: pa.Table, typ: pa.DataType) -> pa.Table:
    for col in time_columns(t):
        t = recast(t, col, typ)
    return t


def pyarrow_writer(**options) -> Callable:
    def write(t: pa.Table, kv: dict, dest: Path) -> None:
        pq.write_table(t.replace_schema_metadata(kv), dest, **options)
    return write


def transformed(fn: Callable[[pa.Table], pa.Table], **options) -> Callable:
    def write(t: pa.Table, kv: dict, dest: Path) -> None:
        pq.write_table(fn(t).replace_schema_metadata(kv), dest, **options)
    return write


def footer_changed(change: Callable[[dict], dict]) -> Callable:
    def write(t: pa.Table, kv: dict, dest: Path) -> None:
        pq.write_table(t.replace_schema_metadata(change(dict(kv))), dest)
    return write


def str_kv(kv: dict) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in kv.items()}


def polars_write(categorical: bool = False, keys: bool = True, **options) -> Callable:
    def write(t: pa.Table, kv: dict, dest: Path) -> None:
        df = pl.from_arrow(t)
        if categorical:
            df = df.with_columns([pl.col(c).cast(pl.Categorical) for c, d in df.schema.items() if d == pl.String])
        df.write_parquet(dest, metadata=str_kv(kv) if keys else None, **options)
    return write


def polars_sink(**options) -> Callable:
    def write(t: pa.Table, kv: dict, dest: Path) -> None:
        pl.from_arrow(t).lazy().sink_parquet(dest, metadata=str_kv(kv), **options)
    return write


def duckdb_copy(t: pa.Table, kv: dict, dest: Path) -> None:
    import duckdb

    con = duckdb.connect()
    try:
        con.register("rows", t)
        pairs = ", ".join(f"'{k}': '{v}'" for k, v in str_kv(kv).items() if "'" not in v and len(v) < 4000)
        con.execute(f"COPY rows TO '{dest}' (FORMAT parquet, KV_METADATA {{{pairs}}})")
    finally:
        con.close()


def delta_encodings(t: pa.Table, kv: dict, dest: Path) -> None:
    enc = {}
    for f in t.schema:
        if pa.types.is_string(f.type):
            enc[f.name] = "DELTA_BYTE_ARRAY"
        elif pa.types.is_int64(f.type) or pa.types.is_int32(f.type):
            enc[f.name] = "DELTA_BINARY_PACKED"
    pq.write_table(t.replace_schema_metadata(kv), dest, use_dictionary=False, column_encoding=enc)


def delta_length(t: pa.Table, kv: dict, dest: Path) -> None:
    enc = {f.name: "DELTA_LENGTH_BYTE_ARRAY" for f in t.schema if pa.types.is_string(f.type)}
    pq.write_table(t.replace_schema_metadata(kv), dest, use_dictionary=False, column_encoding=enc,
                   data_page_version="2.0", compression="gzip")


def byte_stream_split(t: pa.Table, kv: dict, dest: Path) -> None:
    cols = [f.name for f in t.schema if pa.types.is_integer(f.type) and f.type.bit_width >= 32
            or pa.types.is_floating(f.type)]
    pq.write_table(t.replace_schema_metadata(kv), dest, use_dictionary=False, use_byte_stream_split=cols)


def pandas_frame(arrow_dtypes: bool) -> Callable:
    """pandas' `to_parquet` (through pyarrow, as pandas does), the footer keys added beside
    pandas' own: by default pandas turns an integer column holding nulls into float64."""
    def write(t: pa.Table, kv: dict, dest: Path) -> None:
        import pandas as pd

        df = t.to_pandas(types_mapper=pd.ArrowDtype) if arrow_dtypes else t.to_pandas()
        out = pa.Table.from_pandas(df, preserve_index=False)
        pq.write_table(out.replace_schema_metadata({**(out.schema.metadata or {}), **kv}), dest)
    return write


def field_ids(t: pa.Table, kv: dict, dest: Path) -> None:
    """Iceberg/Spark-style Parquet field ids on every column."""
    fields = [f.with_metadata({b"PARQUET:field_id": str(i + 1).encode()}) for i, f in enumerate(t.schema)]
    pq.write_table(t.cast(pa.schema(fields)).replace_schema_metadata(kv), dest)


def empty_row_groups(t: pa.Table, kv: dict, dest: Path) -> None:
    """A streaming writer that flushed empty batches: row groups of 0 rows around the data."""
    t = t.replace_schema_metadata(kv)
    with pq.ParquetWriter(dest, t.schema) as w:
        w.write_table(t.slice(0, 0))
        w.write_table(t.slice(0, t.num_rows // 2))
        w.write_table(t.slice(0, 0))
        w.write_table(t.slice(t.num_rows // 2))
        w.write_table(t.slice(0, 0))
    assert pq.ParquetFile(dest).metadata.num_row_groups >= 4


def shuffled(t: pa.Table, kv: dict, dest: Path) -> None:
    """A multi-threaded writer that kept no row order (DuckDB's preserve_insertion_order=false,
    polars' sink with maintain_order=False): the same rows in another order."""
    import random

    order = list(range(t.num_rows))
    random.Random(54).shuffle(order)
    pq.write_table(t.take(pa.array(order)).replace_schema_metadata(kv), dest)


def dictionary_ints(t: pa.Table) -> pa.Table:
    """Every integer column an Arrow dictionary of its values (pyarrow's dictionary_encode())."""
    fields, cols = [], []
    for f in t.schema:
        col = t.column(f.name)
        if pa.types.is_integer(f.type):
            col = pc.dictionary_encode(col)
            f = pa.field(f.name, col.type, f.nullable)
        fields.append(f)
        cols.append(col)
    return pa.table(cols, schema=pa.schema(fields))


def dictionary_index_widths(t: pa.Table) -> pa.Table:
    """String columns as dictionaries with int8, uint16, uint32 and int64 indices in turn."""
    widths = [pa.int8(), pa.uint16(), pa.uint32(), pa.int64()]
    fields, k = [], 0
    for f in t.schema:
        if pa.types.is_string(f.type):
            index = widths[k % len(widths)]
            k += 1
            if index == pa.int8() and len(pc.unique(t.column(f.name))) > 100:
                index = pa.int16()
            fields.append(pa.field(f.name, pa.dictionary(index, pa.string()), f.nullable))
        else:
            fields.append(f)
    return t.cast(pa.schema(fields))


def swapped_struct(t: pa.Table) -> pa.Table:
    """The key/value (errno/count) struct of a list column with its fields in the other order."""
    cols = []
    for f in t.schema:
        col = t.column(f.name)
        if pa.types.is_list(f.type) and pa.types.is_struct(f.type.value_type):
            st = f.type.value_type
            order = [st.field(i).name for i in reversed(range(st.num_fields))]
            new = []
            for chunk in col.chunks:
                values = chunk.values
                inner = pa.StructArray.from_arrays([values.field(n) for n in order], names=order, mask=values.is_null())
                new.append(pa.ListArray.from_arrays(chunk.offsets, inner, mask=chunk.is_null()))
            col = pa.chunked_array(new)
            f = pa.field(f.name, col.type, f.nullable)
        cols.append((f, col))
    return pa.table([c for _, c in cols], schema=pa.schema([f for f, _ in cols]))


def errno_count_int32(t: pa.Table) -> pa.Table:
    typ = pa.list_(pa.struct([("errno", pa.string()), ("count", pa.int32())]))
    return recast(t, "errno_counts", typ)


def stored_host(host: str, string: Callable[[], pa.DataType], **options) -> Callable:
    """The partition's host stored as a column anyway (polars or pandas writing a frame that
    kept it), in `string`'s type, written with `options`."""
    def write(t: pa.Table, kv: dict, dest: Path) -> None:
        if "host" in t.column_names:
            t = t.drop_columns(["host"])
        col = pa.array([host] * t.num_rows, pa.string()).cast(string())
        pq.write_table(t.append_column(pa.field("host", col.type), col).replace_schema_metadata(kv), dest, **options)
    return write


def bloom_filters(t: pa.Table, kv: dict, dest: Path) -> None:
    cols = {f.name: {"ndv": max(1, t.num_rows), "fpp": 0.01} for f in t.schema
            if pa.types.is_string(f.type) or pa.types.is_int64(f.type)}
    pq.write_table(t.replace_schema_metadata(kv), dest, bloom_filter_options=cols, write_page_checksum=True)


# ---- one file, row groups of two writers: pyarrow's first half, polars' second half, spliced

def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = out = 0
    while True:
        b = buf[i]
        i += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return out, i


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _read_value(buf: bytes, i: int, typ: int):
    if typ in (1, 2):
        return typ == 1, i
    if typ == 3:
        return struct.unpack_from("b", buf, i)[0], i + 1
    if typ in (4, 5, 6):
        v, i = _varint(buf, i)
        return _zigzag(v), i
    if typ == 7:
        return struct.unpack_from("<d", buf, i)[0], i + 8
    if typ == 8:
        n, i = _varint(buf, i)
        return bytes(buf[i:i + n]), i + n
    if typ in (9, 10):
        head = buf[i]
        i += 1
        n, etyp = head >> 4, head & 0x0F
        if n == 15:
            n, i = _varint(buf, i)
        items = []
        for _ in range(n):
            v, i = _read_value(buf, i, etyp)
            items.append(v)
        return ("list", etyp, items), i
    if typ == 12:
        return _read_struct(buf, i)
    raise ValueError(f"thrift type {typ} not handled")


def _read_struct(buf: bytes, i: int):
    fields, last = [], 0
    while True:
        head = buf[i]
        i += 1
        if head == 0:
            return fields, i
        delta, typ = head >> 4, head & 0x0F
        if delta:
            fid = last + delta
        else:
            v, i = _varint(buf, i)
            fid = _zigzag(v)
        value, i = _read_value(buf, i, typ)
        fields.append([fid, typ, value])
        last = fid


def _w_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _w_zigzag(n: int) -> bytes:
    return _w_varint((n << 1) ^ (n >> 63))


def _write_value(typ: int, value) -> bytes:
    if typ in (1, 2):
        return b""
    if typ == 3:
        return struct.pack("b", value)
    if typ in (4, 5, 6):
        return _w_zigzag(value)
    if typ == 7:
        return struct.pack("<d", value)
    if typ == 8:
        return _w_varint(len(value)) + value
    if typ in (9, 10):
        _, etyp, items = value
        head = bytes([(len(items) << 4) | etyp]) if len(items) < 15 else bytes([0xF0 | etyp]) + _w_varint(len(items))
        out = head
        for item in items:
            out += bytes([1 if item else 2]) if etyp in (1, 2) else _write_value(etyp, item)
        return out
    if typ == 12:
        return _write_struct(value)
    raise ValueError(typ)


def _write_struct(fields) -> bytes:
    out, last = bytearray(), 0
    for fid, typ, value in fields:
        wtyp = (1 if value else 2) if typ in (1, 2) else typ
        if 0 < fid - last <= 15:
            out.append(((fid - last) << 4) | wtyp)
        else:
            out.append(wtyp)
            out += _w_zigzag(fid)
        out += _write_value(typ, value)
        last = fid
    out.append(0)
    return bytes(out)


def _field(fields, fid):
    for f in fields:
        if f[0] == fid:
            return f
    return None


def _footer(data: bytes):
    n = struct.unpack_from("<I", data, len(data) - 8)[0]
    meta, _ = _read_struct(data, len(data) - 8 - n)
    return meta


def _shift_row_group(rg, delta: int) -> None:
    """Every file offset in a RowGroup moved by `delta` bytes (ColumnChunk.file_offset,
    ColumnMetaData's data/index/dictionary page and Bloom filter offsets, RowGroup.file_offset)."""
    for chunk in _field(rg, 1)[2][2]:
        f = _field(chunk, 2)
        if f:
            f[2] += delta
        cmd = _field(chunk, 3)[2]
        for fid in (9, 10, 11, 14):
            f = _field(cmd, fid)
            if f:
                f[2] += delta
        # page indexes hold absolute page offsets of their own: dropped (a reader does without)
        chunk[:] = [f for f in chunk if f[0] not in (4, 5, 6, 7)]
    f = _field(rg, 6)
    if f:
        f[2] += delta


def splice_row_groups(first: Path, second: Path, dest: Path) -> None:
    """`dest`: `first`'s bytes and footer, with `second`'s row groups appended (their column
    chunks copied byte for byte), as a tool concatenating two writers' files does."""
    a, b = first.read_bytes(), second.read_bytes()
    ma, mb = _footer(a), _footer(b)
    end_a = len(a) - 8 - struct.unpack_from("<I", a, len(a) - 8)[0]
    body_b = b[4:len(b) - 8 - struct.unpack_from("<I", b, len(b) - 8)[0]]
    delta = end_a - 4  # b's byte 4 lands at a's footer start
    rgs_b = _field(mb, 4)[2][2]
    for rg in rgs_b:
        _shift_row_group(rg, delta)
        f = _field(rg, 7)  # ordinal
        if f:
            f[2] += len(_field(ma, 4)[2][2])
    _field(ma, 4)[2][2].extend(rgs_b)
    _field(ma, 3)[2] += _field(mb, 3)[2]
    footer = _write_struct(ma)
    dest.write_bytes(a[:end_a] + body_b + footer + struct.pack("<I", len(footer)) + b"PAR1")


def refooter(path: Path, change: Callable) -> None:
    """`path`'s pages as they are, its footer (FileMetaData) changed by `change(fields)`."""
    data = path.read_bytes()
    n = struct.unpack_from("<I", data, len(data) - 8)[0]
    meta = _footer(data)
    change(meta)
    footer = _write_struct(meta)
    path.write_bytes(data[:len(data) - 8 - n] + footer + struct.pack("<I", len(footer)) + b"PAR1")


def old_parquet_mr(t: pa.Table, kv: dict, dest: Path) -> None:
    """A file as Spark/Hive's parquet-mr 1.6 wrote it: its `created_by`, and statistics only in
    the deprecated min/max fields (signed order; readers drop them for strings)."""
    pq.write_table(t.replace_schema_metadata(kv), dest)

    def change(meta):
        _field(meta, 6)[2] = b"parquet-mr version 1.6.0 (build 6aa21f8776625b5fa6b18059cfebe7549f2e00cb)"
        for rg in _field(meta, 4)[2][2]:
            for chunk in _field(rg, 1)[2][2]:
                cmd = _field(chunk, 3)[2]
                stats = _field(cmd, 12)
                if stats:
                    kept = [f for f in stats[2] if f[0] in (3, 4)]
                    moved = [[{5: 1, 6: 2}[f[0]], f[1], f[2]] for f in stats[2] if f[0] in (5, 6)]
                    stats[2] = sorted(moved + kept, key=lambda f: f[0])
        meta[:] = [f for f in meta if f[0] != 7]  # no column orders (parquet-mr 1.6 wrote none)
    refooter(dest, change)
    assert pq.read_table(dest, partitioning=None).replace_schema_metadata(None).equals(t)


def two_writers(t: pa.Table, kv: dict, dest: Path) -> None:
    """pyarrow (dictionaries, zstd) writes the first half, polars (its own pages, lz4) the
    second; nullable everywhere so both write the same Parquet schema."""
    nullable = pa.schema([f.with_nullable(True) for f in t.schema])
    t = t.cast(nullable)
    half = t.num_rows // 2
    tmp_a, tmp_b = dest.with_name(".a-" + dest.name), dest.with_name(".b-" + dest.name)
    try:
        pq.write_table(t.slice(0, half).replace_schema_metadata(kv), tmp_a, compression="zstd")
        pl.from_arrow(t.slice(half)).write_parquet(tmp_b, compression="lz4", statistics=True)
        splice_row_groups(tmp_a, tmp_b, dest)
    finally:
        tmp_a.unlink(missing_ok=True)
        tmp_b.unlink(missing_ok=True)
    back = pq.read_table(dest, partitioning=None)
    assert pq.ParquetFile(dest).metadata.num_row_groups == 2
    assert back.replace_schema_metadata(None).equals(t), "the spliced file does not read back as its rows"


# --------------------------------------------------------------------------- the variants

UTC_NS = pa.timestamp("ns", tz="UTC")

# the same data: the answer must equal the answer on our writer's file
SAME: dict[str, Callable] = {
    "pyarrow-uncompressed": pyarrow_writer(compression="none"),
    "pyarrow-snappy": pyarrow_writer(compression="snappy"),
    "pyarrow-gzip": pyarrow_writer(compression="gzip", compression_level=9),
    "pyarrow-brotli": pyarrow_writer(compression="brotli"),
    "pyarrow-lz4": pyarrow_writer(compression="lz4"),
    "pyarrow-zstd-22": pyarrow_writer(compression="zstd", compression_level=22),
    "no-dictionary": pyarrow_writer(use_dictionary=False),
    "data-page-v2": pyarrow_writer(data_page_version="2.0", compression="snappy"),
    "row-groups-of-1-row": pyarrow_writer(row_group_size=1),
    "one-huge-row-group": pyarrow_writer(row_group_size=1 << 30, data_page_size=1 << 30,
                                         dictionary_pagesize_limit=1 << 30),
    "pages-of-1-row": pyarrow_writer(max_rows_per_page=1, data_page_version="2.0"),
    "no-statistics": pyarrow_writer(write_statistics=False),
    "page-index": pyarrow_writer(write_page_index=True),
    "bloom-filters-checksums": bloom_filters,
    "delta-encodings": delta_encodings,
    "delta-length-v2-gzip": delta_length,
    "byte-stream-split": byte_stream_split,
    "content-defined-chunking": pyarrow_writer(use_content_defined_chunking=True),
    "non-compliant-nested": pyarrow_writer(use_compliant_nested_type=False),
    "large-strings": transformed(lambda t: cast_strings(t, pa.large_string)),
    "string-views": transformed(lambda t: cast_strings(t, pa.string_view, nested=False)),
    "dictionary-strings": transformed(lambda t: t.cast(pa.schema([
        pa.field(f.name, pa.dictionary(pa.int32(), pa.string()) if pa.types.is_string(f.type) else f.type, f.nullable)
        for f in t.schema]))),
    "columns-reversed": transformed(lambda t: t.select(list(reversed(t.column_names)))),
    "extra-columns": transformed(lambda t: t.append_column("collector_note", pa.array(["x"] * t.num_rows))
                                 .append_column("collector_seq", pa.array(range(t.num_rows), pa.int64()))),
    "utc-as-etc-utc": transformed(lambda t: retime(t, pa.timestamp("ns", tz="Etc/UTC"))),
    "utc-as-zero-offset": transformed(lambda t: retime(t, pa.timestamp("ns", tz="+00:00"))),
    "timestamps-without-zone": transformed(lambda t: retime(t, pa.timestamp("ns"))),
    "polars-write-parquet": polars_write(),
    "polars-categorical-no-stats-lz4": polars_write(categorical=True, statistics=False, compression="lz4",
                                                    row_group_size=7),
    "polars-sink-parquet": polars_sink(row_group_size=5, compression="gzip"),
    "duckdb-copy": duckdb_copy,
    "int96-timestamps": pyarrow_writer(use_deprecated_int96_timestamps=True),
    "pandas-arrow-dtypes": pandas_frame(arrow_dtypes=True),
    "parquet-field-ids": field_ids,
    "empty-row-groups": empty_row_groups,
    "rows-shuffled": shuffled,
    "dictionary-ints": transformed(dictionary_ints),
    "dictionary-overflow-to-plain": pyarrow_writer(dictionary_pagesize_limit=64, data_page_size=128),
    "old-parquet-mr-statistics": old_parquet_mr,
    "host-stored-no-statistics": stored_host(HOST, pa.large_string, write_statistics=False),
    "host-stored-dictionary-page-v2": stored_host(HOST, lambda: pa.dictionary(pa.int32(), pa.string()),
                                                  data_page_version="2.0"),
    "dictionary-index-widths": transformed(dictionary_index_widths),
    "two-writers-row-groups": two_writers,
}

# refused by the data model: (writer per table, words the one line must hold)
def refused_variants(table: str) -> dict[str, tuple[Callable, tuple[str, ...]]]:
    int_col, int_found = ("ret", "int32") if table == "events" else ("invocations", "int32")
    time_col = "start_time" if table == "events" else "snapshot_time"
    return {
        "int64-column-as-int32": (transformed(lambda t: recast(t, int_col, pa.int32())), (int_col, "int64", int_found)),
        "timestamps-in-us": (transformed(lambda t: retime(t, pa.timestamp("us", tz="UTC")), coerce_timestamps="us",
                                         allow_truncated_timestamps=True), (time_col, "us")),
        "timestamps-in-ms": (transformed(lambda t: retime(t, pa.timestamp("ms", tz="UTC")), coerce_timestamps="ms",
                                         allow_truncated_timestamps=True), (time_col, "ms")),
        "zone-new-york": (transformed(lambda t: retime(t, pa.timestamp("ns", tz="America/New_York"))),
                          (time_col, "America/New_York")),
        "parquet-format-1.0": (transformed(lambda t: retime(t, pa.timestamp("us", tz="UTC")), version="1.0"),
                               (time_col, "us")),
        "polars-without-footer-keys": (polars_write(keys=False), ("tracebase.table",)),
        "schema-version-key-missing": (footer_changed(lambda kv: {k: v for k, v in kv.items()
                                                                  if k != b"tracebase.schema_version"}),
                                       ("schema version",)),
        "schema-version-3": (footer_changed(lambda kv: {**kv, b"tracebase.schema_version": b"3"}), ("schema version", "3")),
        "table-key-of-another-table": (footer_changed(lambda kv: {**kv, b"tracebase.table": b"truth"}),
                                       (table, "truth")),
    }


DATASET_ONLY_REFUSED = {
    # "a part that stores a `host` column anyway must say its directory's host, else every
    # reader refuses it naming the file and column" -- also when no statistics say which
    "host-stored-of-another-host-no-statistics": (stored_host("gpu00002", pa.string, write_statistics=False),
                                                  ("host", "gpu00002")),
}
COUNTERS_ONLY_REFUSED = {
    "errno-count-int32": (transformed(errno_count_int32), ("errno_counts",)),
}
EVENTS_ONLY_REFUSED = {
    # pandas' default frame: latency_ns and repeat_count (nulls in the recording) become float64
    "pandas-nullable-ints-as-float": (pandas_frame(arrow_dtypes=False),
                                      (("latency_ns", "repeat_count"), "int64", "double")),
    "int32-column-as-int64": (transformed(lambda t: recast(t, "pid", pa.int64())), ("pid", "int32", "int64")),
}


def rewrite(src: Path, dest: Path, writer: Callable) -> None:
    t, kv = table_of(src), kv_of(src)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".new")
    if tmp.exists():
        tmp.unlink()
    writer(t, kv, tmp)
    assert table_of(tmp).num_rows == t.num_rows
    os.replace(tmp, dest)


# --------------------------------------------------------------------------- recordings: diff, export, allowlist learn


@pytest.fixture(scope="module")
def rec_reference(tmp_path_factory) -> dict:
    ref = tmp_path_factory.mktemp("b54-rec-ref")
    for n in ("good0", "good1", "bad"):
        shutil.copy(REC / f"{n}.parquet", ref / f"{n}.parquet")
    answers = {}
    for cli in ("diff", "export", "export-diff", "allowlist-learn"):
        answers[cli] = _one_recording_answer(ref, cli)
        no_traceback(answers[cli][2])
    assert answers["diff"][0] == 1, answers["diff"]
    assert answers["export"][0] == answers["export-diff"][0] == answers["allowlist-learn"][0] == 0, answers
    return answers


def _one_recording_answer(cwd: Path, cli: str) -> tuple[int, str, str]:
    if cli == "diff":
        p = run([BASELINE, "diff", "good0.parquet", "good1.parquet", "bad.parquet", "--json"], cwd)
        return p.returncode, p.stdout, p.stderr
    if cli == "export":
        (cwd / "bad.json").unlink(missing_ok=True)
        p = run([BASELINE, "export", "bad.parquet", "-o", "bad.json"], cwd)
        return p.returncode, (cwd / "bad.json").read_text() if p.returncode == 0 else "", p.stderr
    if cli == "export-diff":
        (cwd / "diff.json").unlink(missing_ok=True)
        p = run([BASELINE, "export", "--diff", "good0.parquet", "good1.parquet", "bad.parquet", "-o", "diff.json"], cwd)
        return p.returncode, (cwd / "diff.json").read_text() if p.returncode == 0 else "", p.stderr
    if cli == "allowlist-learn":
        (cwd / "allow.yaml").unlink(missing_ok=True)
        p = run([BASELINE, "allowlist", "learn", "good0.parquet", "good1.parquet", "-o", "allow.yaml", "--json"], cwd)
        learned = (cwd / "allow.yaml").read_text() if p.returncode == 0 else ""
        return p.returncode, json.dumps([json.loads(p.stdout) if p.stdout else None, learned]), p.stderr
    raise AssertionError(cli)


# which file a CLI's case rewrites: diff and export read bad.parquet, allowlist learn good0
REWRITTEN = {"diff": "bad.parquet", "export": "bad.parquet", "export-diff": "good1.parquet",
             "allowlist-learn": "good0.parquet"}


def recording_case(tmp_path: Path, cli: str, writer: Callable) -> Path:
    for n in ("good0", "good1", "bad"):
        shutil.copy(REC / f"{n}.parquet", tmp_path / f"{n}.parquet")
    target = tmp_path / REWRITTEN[cli]
    rewrite(target, target, writer)
    return tmp_path


RECORDING_SAME = [("diff", v) for v in SAME if not v.startswith("host-stored")] + [  # (a recording stores its host)
    ("export", v) for v in ("int96-timestamps", "data-page-v2", "large-strings", "non-compliant-nested", "timestamps-without-zone",
                            "polars-sink-parquet", "two-writers-row-groups")
] + [("export-diff", v) for v in ("dictionary-strings", "polars-write-parquet", "duckdb-copy")] + [
    ("allowlist-learn", v) for v in ("pyarrow-brotli", "columns-reversed", "polars-categorical-no-stats-lz4",
                                     "string-views")
]


RECORDING_REFUSED = [("diff", v) for v in refused_variants("events")] + [
    ("diff", "int32-column-as-int64"), ("diff", "pandas-nullable-ints-as-float")] + [
    ("export", v) for v in ("int64-column-as-int32", "zone-new-york", "polars-without-footer-keys")
] + [("allowlist-learn", v) for v in ("timestamps-in-us", "schema-version-3", "parquet-format-1.0")]



class TestRecordingOfAnotherWriter:
    """A `tracer record` recording rewritten by another writer, read by diff, export and
    allowlist learn."""

    @pytest.mark.parametrize(("cli", "variant"), RECORDING_SAME, ids=[f"{c}-{v}" for c, v in RECORDING_SAME])
    def test_same_rows_give_our_writers_answer(self, rec_reference, tmp_path, cli, variant):
        """The same rows in another layout or in an accepted Arrow type (docs: "readers take any
        layout"; "large or view strings, and dictionary-typed columns" are "not a mismatch"; extra
        columns allowed; a zone that is UTC by another name, or no zone, is UTC): the CLI's answer
        equals its answer on our writer's file -- diff's JSON, the exported trace, the learned list."""
        cwd = recording_case(tmp_path, cli, SAME[variant])
        got = _one_recording_answer(cwd, cli)
        no_traceback(got[2])
        want = rec_reference[cli]
        assert got[0] == want[0], (got[0], got[2][-2000:])
        assert timeless(json.loads(got[1])) == timeless(json.loads(want[1]))


    @pytest.mark.parametrize(("cli", "variant"), RECORDING_REFUSED, ids=[f"{c}-{v}" for c, v in RECORDING_REFUSED])
    def test_what_the_data_model_refuses_is_one_line_naming_file_and_column(self, tmp_path, cli, variant):
        """docs: "other integer widths, timestamps in another unit ... and files without the footer
        keys ... are refused naming the column or the missing key"; another zone "is refused naming
        it"; a version outside 1/2 and another table's key are a mismatch "naming file, column,
        expected and found": exit 2, one line naming the rewritten file and what was wrong."""
        variants = {**refused_variants("events"), **EVENTS_ONLY_REFUSED}
        writer, words = variants[variant]
        cwd = recording_case(tmp_path, cli, writer)
        before = (cwd / REWRITTEN[cli]).read_bytes()
        proc = run({
            "diff": [BASELINE, "diff", "good0.parquet", "good1.parquet", "bad.parquet", "--json"],
            "export": [BASELINE, "export", "bad.parquet", "-o", "bad.json"],
            "allowlist-learn": [BASELINE, "allowlist", "learn", "good0.parquet", "good1.parquet", "-o", "allow.yaml"],
        }[cli], cwd)
        refused(proc, REWRITTEN[cli], *words)
        assert proc.stdout == ""
        assert not (cwd / "bad.json").exists() and not (cwd / "allow.yaml").exists()
        assert (cwd / REWRITTEN[cli]).read_bytes() == before


    def test_metadata_struct_fields_swapped_are_read_alike_or_refused_by_column(self, rec_reference, tmp_path):
        """`metadata` as list<struct<value, key>> (another writer's field order): the docs do not
        say whether that is the same data; either our writer's answer or a refusal naming the
        file and the column `metadata` is fair."""
        cwd = recording_case(tmp_path, "diff", transformed(swapped_struct))
        got = _one_recording_answer(cwd, "diff")
        no_traceback(got[2])
        if got[0] == 2:
            refused(subprocess.CompletedProcess([], got[0], got[1], got[2]), "bad.parquet", "metadata")
        else:
            assert got[0] == rec_reference["diff"][0]
            assert timeless(json.loads(got[1])) == timeless(json.loads(rec_reference["diff"][1]))

    def test_binary_strings_are_read_alike_or_refused_by_column(self, rec_reference, tmp_path):
        """large_binary where a string belongs: the docs name large/view strings and dictionaries as
        the same data, and nothing of binary; either answer is fair -- our writer's answer, or a
        refusal naming the file and a string column."""
        cwd = recording_case(tmp_path, "diff", transformed(lambda t: cast_strings(t, pa.large_binary, nested=False)))
        got = _one_recording_answer(cwd, "diff")
        no_traceback(got[2])
        if got[0] == 2:
            line = refused(subprocess.CompletedProcess([], got[0], got[1], got[2]), "bad.parquet")
            assert any(c in line for c in ("trace_id", "probe", "comm", "path", "kind", "errno")), line
        else:
            assert got[0] == rec_reference["diff"][0]
            assert timeless(json.loads(got[1])) == timeless(json.loads(rec_reference["diff"][1]))


# --------------------------------------------------------------------------- a dataset: learn, audit, expected learn, export, coverage, summarize


def frame_rows(path: Path) -> tuple[list[str], list[str]]:
    df = pl.read_parquet(path, hive_partitioning=False)
    return df.columns, sorted(repr(r) for r in df.rows())


def summaries_of(ds: Path) -> dict[str, list]:
    base = ds / "counter_buckets"
    out = {}
    for p in sorted(base.rglob("*.parquet")) if base.exists() else []:
        if any(part.startswith(".") for part in p.relative_to(base).parts):
            continue
        # rows sorted: a summary lists (probe, bucket) "in order of first appearance" in its
        # counters file (tracer/schema.py), which is the input's row order, not its data
        out[str(p.relative_to(base))] = sorted(repr(r) for r in table_of(p).to_pylist())
    return out


def dataset_answer(cwd: Path, cli: str):
    """(status, answer) of one CLI on `cwd`/ds, run in `cwd` with relative names."""
    ds = cwd / "ds"
    if cli == "audit-since":  # inside the hour and inside a 15-minute bucket
        p = run([BASELINE, "audit", "ds", "-o", "au", "--json", "--since", SINCE], cwd)
        ans = (json.loads(p.stdout), {t: frame_rows(cwd / "au" / f"{t}.parquet")
                                      for t in ("findings", "clusters", "host_alerts")}) if p.returncode == 0 else None
    elif cli == "learn-since":
        p = run([BASELINE, "learn", "ds", "-o", "model.parquet", "--json", "--since", SINCE], cwd)
        ans = (json.loads(p.stdout), frame_rows(cwd / "model.parquet")) if p.returncode == 0 else None
    elif cli == "audit":
        p = run([BASELINE, "audit", "ds", "-o", "au", "--json"], cwd)
        ans = (json.loads(p.stdout), {t: frame_rows(cwd / "au" / f"{t}.parquet")
                                      for t in ("findings", "clusters", "host_alerts")}) if p.returncode == 0 else None
    elif cli == "learn":
        p = run([BASELINE, "learn", "ds", "-o", "model.parquet", "--json"], cwd)
        ans = (json.loads(p.stdout), frame_rows(cwd / "model.parquet")) if p.returncode == 0 else None
    elif cli == "expected-learn":
        p = run([BASELINE, "expected", "learn", "ds", "-o", "exp.yaml", "--json"], cwd)
        ans = (json.loads(p.stdout), (cwd / "exp.yaml").read_text()) if p.returncode == 0 else None
    elif cli == "export":
        p = run([BASELINE, "export", "ds/events", "-o", "ev.json"], cwd)
        ans = json.loads((cwd / "ev.json").read_text()) if p.returncode == 0 else None
    elif cli == "coverage":
        p = run([BASELINE, "coverage", "ds", "-o", "cov", "--json"], cwd)
        ans = None
        if p.returncode == 0:
            week = json.loads(p.stdout)["week"]
            ans = (json.loads(p.stdout), {t: frame_rows(cwd / "cov" / week / f"coverage_{t}.parquet")
                                          for t in ("probes", "groups", "app")},
                   (cwd / "cov" / week / "report.md").read_text())
    elif cli == "summarize":
        p = run([BASELINE, "summarize", "ds", "--json"], cwd)
        ans = (json.loads(p.stdout), summaries_of(ds)) if p.returncode == 0 else None
        if p.returncode == 0:  # and the audit on the summaries is the audit without them
            a = run([BASELINE, "audit", "ds", "-o", "au-sum", "--json"], cwd)
            no_traceback(a.stderr)
            assert a.returncode == 0, a.stderr
            ans = (*ans, {t: frame_rows(cwd / "au-sum" / f"{t}.parquet") for t in ("findings", "clusters", "host_alerts")})
    else:
        raise AssertionError(cli)
    no_traceback(p.stderr)
    return p, ans


class Sim:
    """A simulated dataset without summaries, and our writer's answers, each computed when first
    asked for (a class of these tests may run in a worker of its own)."""

    def __init__(self, root: Path):
        self.root = root
        p = run([BASELINE, "simulate", "--hosts", "3", "--hours", "1", "--seed", "54", "-o", "ds"], root)
        assert p.returncode == 0, p.stderr
        # a dataset as another writer leaves it: no 15-minute summaries (the audit reads counters whole)
        shutil.rmtree(root / "ds" / "counter_buckets")
        self.pristine = root / "ds"
        self._answers: dict = {}

    def answer(self, cli: str):
        if cli not in self._answers:
            work = self.root / f"ref-{cli}"
            shutil.copytree(self.pristine, work / "ds", symlinks=True)
            proc, ans = dataset_answer(work, cli)
            assert proc.returncode == 0 and ans is not None, (cli, proc.stderr)
            self._answers[cli] = ans
        return self._answers[cli]


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Sim:
    return Sim(tmp_path_factory.mktemp("b54-sim"))


def dataset_case(sim: Sim, tmp_path: Path, table: str, writer: Callable, host: str = HOST) -> Path:
    shutil.copytree(sim.pristine, tmp_path / "ds", symlinks=True)
    files = sorted((tmp_path / "ds" / table).glob(f"date=*/host={host}/*.parquet"))
    assert files
    for f in files:
        rewrite(f, f, writer)
    return files[0].relative_to(tmp_path)


def same_answer(sim: Sim, tmp_path: Path, table: str, variant: str, cli: str) -> None:
    dataset_case(sim, tmp_path, table, SAME[variant], host="*" if variant in EVERY_HOST else HOST)
    proc, ans = dataset_answer(tmp_path, cli)
    assert proc.returncode == 0, proc.stderr[-3000:]
    want = sim.answer(cli)
    if cli == "summarize":
        # the JSON counts the same files; the summary of the rewritten file summarises the same
        # rows; the audit on the summaries is the audit on ours
        assert ans[0] == want[0]
        assert ans[1] == want[1]
        assert ans[2] == want[2]
    else:
        assert ans == want


def refused_answer(sim: Sim, tmp_path: Path, table: str, variant: str, cli: str) -> None:
    writer, words = {**refused_variants(table), **EVENTS_ONLY_REFUSED, **COUNTERS_ONLY_REFUSED,
                     **DATASET_ONLY_REFUSED}[variant]
    rel = dataset_case(sim, tmp_path, table, writer)
    before = (tmp_path / rel).read_bytes()
    if cli == "summarize":
        summarize_refuses(tmp_path, rel, words)
    else:
        proc, ans = dataset_answer(tmp_path, cli)
        refused(proc, str(rel), *words)
        assert ans is None
        for out in ("au", "model.parquet", "exp.yaml", "ev.json", "cov"):
            assert not (tmp_path / out).exists(), out
    assert (tmp_path / rel).read_bytes() == before


# variants written for every host of the dataset (no file of ours left in the table)
EVERY_HOST = {"polars-sink-parquet", "int96-timestamps", "no-statistics", "rows-shuffled"}

EVENTS_SAME = (
    [(v, "audit") for v in ("pyarrow-uncompressed", "data-page-v2", "row-groups-of-1-row", "no-statistics",
                            "delta-encodings", "non-compliant-nested", "string-views", "columns-reversed",
                            "timestamps-without-zone", "polars-sink-parquet", "duckdb-copy", "two-writers-row-groups")]
    + [(v, "learn") for v in ("pyarrow-brotli", "pages-of-1-row", "large-strings", "polars-write-parquet",
                              "two-writers-row-groups", "bloom-filters-checksums")]
    + [(v, "expected-learn") for v in ("byte-stream-split", "polars-categorical-no-stats-lz4", "dictionary-strings")]
    + [(v, "export") for v in ("one-huge-row-group", "page-index", "utc-as-etc-utc", "extra-columns",
                               "content-defined-chunking")]
    + [(v, "audit-since") for v in ("no-statistics", "row-groups-of-1-row", "two-writers-row-groups", "page-index",
                                    "int96-timestamps")]
    + [(v, "learn-since") for v in ("no-statistics", "pages-of-1-row")]
    + [(v, "audit") for v in ("int96-timestamps", "pandas-arrow-dtypes", "parquet-field-ids", "empty-row-groups",
                              "rows-shuffled")]
    + [(v, "learn") for v in ("rows-shuffled", "empty-row-groups")]
    + [(v, "audit") for v in ("dictionary-ints", "dictionary-index-widths", "dictionary-overflow-to-plain",
                              "old-parquet-mr-statistics")]
    + [(v, "audit-since") for v in ("old-parquet-mr-statistics",)]
    + [(v, c) for v in ("host-stored-no-statistics", "host-stored-dictionary-page-v2") for c in ("audit", "export")]
    + [("rows-shuffled", "export")]
)
EVENTS_REFUSED = (
    [(v, "audit") for v in ("int64-column-as-int32", "timestamps-in-us", "zone-new-york", "polars-without-footer-keys",
                            "schema-version-key-missing", "table-key-of-another-table")]
    + [("host-stored-of-another-host-no-statistics", c) for c in ("audit", "learn", "export")]
    + [("pandas-nullable-ints-as-float", "audit"), ("int32-column-as-int64", "learn"), ("parquet-format-1.0", "learn"), ("schema-version-3", "expected-learn"),
       ("timestamps-in-ms", "export"), ("polars-without-footer-keys", "export")]
)
COUNTERS_SAME = (
    [(v, "audit") for v in ("pyarrow-snappy", "row-groups-of-1-row", "no-statistics", "non-compliant-nested",
                            "large-strings", "extra-columns", "utc-as-zero-offset", "timestamps-without-zone",
                            "polars-sink-parquet", "two-writers-row-groups", "duckdb-copy")]
    + [(v, "coverage") for v in ("data-page-v2", "dictionary-strings", "polars-categorical-no-stats-lz4")]
    + [(v, "summarize") for v in ("pyarrow-zstd-22", "string-views", "polars-write-parquet", "two-writers-row-groups")]
    + [("columns-reversed", "expected-learn")]
    + [(v, "audit-since") for v in ("no-statistics", "row-groups-of-1-row", "two-writers-row-groups",
                                    "int96-timestamps")]
    + [(v, "summarize") for v in ("int96-timestamps", "rows-shuffled", "empty-row-groups", "dictionary-ints")]
    + [(v, "audit") for v in ("pandas-arrow-dtypes", "parquet-field-ids", "rows-shuffled", "old-parquet-mr-statistics")]
    + [(v, "summarize") for v in ("old-parquet-mr-statistics", "dictionary-overflow-to-plain")]
    + [(v, c) for v in ("host-stored-no-statistics", "host-stored-dictionary-page-v2") for c in ("audit", "coverage")]
)
COUNTERS_REFUSED = (
    [(v, "audit") for v in ("int64-column-as-int32", "timestamps-in-ms", "zone-new-york", "polars-without-footer-keys",
                            "schema-version-3", "parquet-format-1.0")]
    + [(v, "coverage") for v in ("timestamps-in-us", "table-key-of-another-table")]
    + [(v, "summarize") for v in ("int64-column-as-int32", "zone-new-york")]
    + [(v, "audit") for v in ("errno-count-int32",)]
    + [("host-stored-of-another-host-no-statistics", c) for c in ("audit", "coverage", "summarize")]
    + [("schema-version-key-missing", "expected-learn")]
)


def _ids(cases):
    return [f"{v}-{c}" for v, c in cases]


def mixed_writers_case(sim: Sim, tmp_path: Path, table: str) -> None:
    """Each host's file of `table` from another writer, each in other Arrow types: one scan
    meets string_view, a polars Categorical and polars' large strings and lists at once."""
    shutil.copytree(sim.pristine, tmp_path / "ds", symlinks=True)
    writers = {"gpu00000": SAME["string-views"], "gpu00001": SAME["polars-categorical-no-stats-lz4"],
               "gpu00002": SAME["polars-sink-parquet"]}
    for host, writer in writers.items():
        files = sorted((tmp_path / "ds" / table).glob(f"date=*/host={host}/*.parquet"))
        assert files
        for f in files:
            rewrite(f, f, writer)


class TestEventsFileOfAnotherWriter:
    """A dataset whose one host's events file another writer wrote."""

    @pytest.mark.parametrize("cli", ["audit", "learn", "export"])
    def test_every_host_of_another_writer_and_type_gives_our_writers_answer(self, sim, tmp_path, cli):
        """Three hosts, three writers, three Arrow types for the strings (view, dictionary,
        large): all "not a mismatch", "readers take any layout": the answer is ours."""
        mixed_writers_case(sim, tmp_path, "events")
        proc, ans = dataset_answer(tmp_path, cli)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert ans == sim.answer(cli)

    @pytest.mark.parametrize(("variant", "cli"), EVENTS_SAME, ids=_ids(EVENTS_SAME))
    def test_same_rows_give_our_writers_answer(self, sim, tmp_path, variant, cli):
        """One host's events file written by another writer, the same rows, beside our other
        hosts' files: docs "readers take any layout", large/view strings and dictionaries are
        "not a mismatch", extra columns allowed (validate_schema), UTC by another name or no zone
        is UTC -- so the CLI's answer (its JSON, the tables or model or list it writes, the
        exported trace) equals its answer on our writer's file."""
        same_answer(sim, tmp_path, "events", variant, cli)

    @pytest.mark.parametrize(("variant", "cli"), EVENTS_REFUSED, ids=_ids(EVENTS_REFUSED))
    def test_what_the_data_model_refuses_is_one_line_naming_it(self, sim, tmp_path, variant, cli):
        """docs: other integer widths, another timestamp unit (Parquet 1.0: us), files without the
        footer keys are "refused naming the column or the missing key"; another zone "refused
        naming it"; a version outside 1/2 or another table's key: a mismatch "naming file,
        column, expected and found"; README: one line, exit 2, never a traceback.  Nothing is
        written where the output goes; the input is unchanged."""
        refused_answer(sim, tmp_path, "events", variant, cli)


class TestCountersFileOfAnotherWriter:
    """A dataset whose one host's counters file another writer wrote (and no summaries: a
    dataset "without the 15-minute summaries (another writer's)")."""

    @pytest.mark.parametrize(("variant", "cli"), COUNTERS_SAME, ids=_ids(COUNTERS_SAME))
    def test_same_rows_give_our_writers_answer(self, sim, tmp_path, variant, cli):
        """The same rows in another layout or accepted type: the audit's and the weekly
        report's tables, the learned list, and the summaries `baseline summarize` writes (and
        the audit on them: "the same tables") equal those on our writer's file."""
        same_answer(sim, tmp_path, "counters", variant, cli)

    @pytest.mark.parametrize("cli", ["audit", "coverage"])
    def test_every_host_of_another_writer_and_type_gives_our_writers_answer(self, sim, tmp_path, cli):
        """As for events: three hosts' counters from three writers in three string types."""
        mixed_writers_case(sim, tmp_path, "counters")
        proc, ans = dataset_answer(tmp_path, cli)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert ans == sim.answer(cli)

    def test_errno_counts_struct_fields_swapped_are_read_alike_or_refused(self, sim, tmp_path):
        """errno_counts as list<struct<count, errno>>: the docs do not say; either the audit's
        answer on our file, or one line naming the file and `errno_counts`."""
        rel = dataset_case(sim, tmp_path, "counters", transformed(swapped_struct))
        proc, ans = dataset_answer(tmp_path, "audit")
        if proc.returncode == 2:
            refused(proc, str(rel), "errno_counts")
        else:
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert ans == sim.answer("audit")

    def test_schema_version_1_gives_our_writers_answer(self, sim, tmp_path):
        """READABLE_VERSIONS is ("1", "2") and the counters table added no column in version 2
        (ADDED_COLUMNS): a counters file saying version 1 is read as the same rows."""
        dataset_case(sim, tmp_path, "counters", footer_changed(lambda kv: {**kv, b"tracebase.schema_version": b"1"}))
        proc, ans = dataset_answer(tmp_path, "audit")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert ans == sim.answer("audit")

    @pytest.mark.parametrize(("variant", "cli"), COUNTERS_REFUSED, ids=_ids(COUNTERS_REFUSED))
    def test_what_the_data_model_refuses_is_one_line_naming_it(self, sim, tmp_path, variant, cli):
        """As for events: int32 invocations, snapshot_time in ms/us or another zone, no footer
        keys, another version or table: exit 2, one line naming the file and the column or key
        (summarize: or the file listed as left, with no summary)."""
        refused_answer(sim, tmp_path, "counters", variant, cli)


def summarize_refuses(cwd: Path, rel: Path, words: tuple[str, ...]) -> None:
    """`baseline summarize` --help: "exit status: 0 done (files left without a summary are
    listed ...); 2 trouble (bad input ...: one line on stderr naming the file or flag)": either
    is fair for a counters file the data model refuses, so long as the file gets no summary and,
    when listed, the listing names it and what is wrong with it."""
    proc = run([BASELINE, "summarize", "ds", "--json"], cwd)
    no_traceback(proc.stderr)
    summary = cwd / "ds" / "counter_buckets" / rel.relative_to("ds/counters")
    if proc.returncode == 2:
        refused(proc, str(rel), *words)
    else:
        assert proc.returncode == 0, proc.stderr[-3000:]
        left = json.loads(proc.stdout)["left"]
        named = [entry for entry in left if str(rel.name) in json.dumps(entry) and HOST in json.dumps(entry)]
        assert named, left
        assert all(w in json.dumps(named) for w in words), (words, named)
    assert not summary.exists(), summary


# --------------------------------------------------------------------------- a spool: baseline ingest


SPOOL_HOST = "gpu00000"


def spool_rows(sim: Sim) -> tuple[pa.Table, pa.Table, str]:
    """One snapshot of SPOOL_HOST as the daemon spools it: its counters rows of one
    snapshot_time and the whole call trees of a few trace ids, `host` stored in both."""
    cf = sorted((sim.pristine / "counters").glob(f"date=*/host={SPOOL_HOST}/*.parquet"))[0]
    ef = sorted((sim.pristine / "events").glob(f"date=*/host={SPOOL_HOST}/*.parquet"))[0]
    c, e = table_of(cf), table_of(ef)
    first = c.column("snapshot_time")[0]
    c = c.filter(pc.equal(c.column("snapshot_time"), first))
    ids = pc.unique(e.column("trace_id")).slice(0, 5)
    e = e.filter(pc.is_in(e.column("trace_id"), value_set=ids))
    if "host" not in c.column_names:
        c = c.add_column(0, pa.field("host", pa.string(), nullable=False), pa.array([SPOOL_HOST] * c.num_rows))
    if "host" not in e.column_names:
        i = e.schema.get_field_index("kernel_release")
        e = e.add_column(i, pa.field("host", pa.string()), pa.array([SPOOL_HOST] * e.num_rows))
    name = f"snap-{first.as_py().strftime('%Y%m%dT%H%M%S')}.000Z-1"
    return c, e, name


def ingest_answer(cwd: Path):
    p = run([BASELINE, "ingest", "spool", "ds", "--quarantine", "q", "--json"], cwd)
    no_traceback(p.stderr)
    tables = {}
    for table in ("events", "counters"):
        files = sorted((cwd / "ds" / table).glob("date=*/host=*/*.parquet"))
        tables[table] = sorted(repr(r) for f in files for r in pl.read_parquet(f, hive_partitioning=False).rows())
    quarantined = sorted(str(q.relative_to(cwd / "q")) for q in (cwd / "q").rglob("*") if q.is_file()) \
        if (cwd / "q").exists() else []
    return p, tables, quarantined


def build_spool(cwd: Path, sim: Sim, writer: Callable | None, which: tuple[str, ...] = ("events", "counters")) -> Path:
    from tracer.schema import write_table

    c, e, name = spool_rows(sim)
    snap = cwd / "spool" / SPOOL_HOST / name
    snap.mkdir(parents=True)
    for table, rows in (("counters", c), ("events", e)):
        dest = snap / f"{table}.parquet"
        if writer is None or table not in which:
            write_table(rows, dest, table)  # our writer, as the daemon writes a snapshot
        else:
            writer(rows, {b"tracebase.table": table.encode(), b"tracebase.schema_version": b"2"}, dest)
    return snap


@pytest.fixture(scope="module")
def ingest_reference(sim, tmp_path_factory):
    cwd = tmp_path_factory.mktemp("b54-ingest-ref")
    build_spool(cwd, sim, None)
    p, tables, quarantined = ingest_answer(cwd)
    assert p.returncode == 0, p.stderr
    assert quarantined == [] and tables["events"] and tables["counters"]
    return json.loads(p.stdout), tables


INGEST_SAME = ("old-parquet-mr-statistics", "polars-sink-parquet", "large-strings", "two-writers-row-groups", "rows-shuffled", "duckdb-copy",
               "utc-as-etc-utc", "no-statistics", "empty-row-groups")


class TestSpoolOfAnotherWriter:
    """`baseline ingest` of a snapshot whose files another collector wrote."""

    @pytest.mark.parametrize("variant", INGEST_SAME)
    def test_same_rows_are_ingested_as_ours(self, sim, ingest_reference, tmp_path, variant):
        """The same rows in another layout or accepted type: ingest takes them (nothing
        quarantined) and the dataset holds the very rows ingest makes of our writer's snapshot;
        the --json result is the same."""
        build_spool(tmp_path, sim, SAME[variant])
        p, tables, quarantined = ingest_answer(tmp_path)
        assert p.returncode == 0, p.stderr[-3000:]
        assert quarantined == []
        want_json, want_tables = ingest_reference
        assert tables == want_tables
        assert timeless(json.loads(p.stdout)) == timeless(want_json)

    @pytest.mark.parametrize("variant", ["int64-column-as-int32", "timestamps-in-us", "zone-new-york",
                                         "polars-without-footer-keys"])
    def test_counters_file_the_data_model_refuses_is_quarantined_with_the_reason(self, sim, ingest_reference,
                                                                                  tmp_path, variant):
        """docs/airflow.md: a snapshot file that cannot be read ("wrong table or schema version, a
        column of the wrong type ...") "is moved to `quarantine/<host>/<snapshot>/<file>` with
        `<file>.reason` (one line: file, column, expected, found); the rest of the snapshot and
        of the spool is ingested": the events land as ours do, the counters file is in
        quarantine with a one-line reason naming the column (or the footer key)."""
        writer, words = refused_variants("counters")[variant]
        snap = build_spool(tmp_path, sim, writer, which=("counters",))
        p, tables, quarantined = ingest_answer(tmp_path)
        assert p.returncode == 0, p.stderr[-3000:]
        want_json, want_tables = ingest_reference
        assert tables["events"] == want_tables["events"]
        assert tables["counters"] == []
        where = tmp_path / "q" / SPOOL_HOST / snap.name
        assert (where / "counters.parquet").is_file(), quarantined
        reason = (where / "counters.parquet.reason").read_text().strip()
        assert len(reason.splitlines()) == 1, reason
        for word in words:
            assert word in reason, (word, reason)

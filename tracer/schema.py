"""The one tracebase data model: Arrow schemas, versioned, and the only readers/writers.

Every Parquet file tracebase writes carries two key-value metadata entries:
``tracebase.table`` (which table it holds) and ``tracebase.schema_version``. Readers refuse a
file whose table, version or columns do not match, naming the file, the column, what was
expected and what was found.

Tables
------
events
    One row per observed call: a syscall (recorder), or one frame of a call tree (fleet
    tracer, simulator). Trace-level columns (kind, command, exit_status, start/end, host,
    kernel_release, lost_events, job_id, metadata) are stored on every row of the trace:
    Parquet dictionary/RLE encoding makes the repetition nearly free, and it keeps a recording
    to exactly one self-describing file. The ``traces`` view (`traces_of`) is derived from it.
counters
    Per host, per snapshot interval, per probe: counter deltas from the per-CPU maps.
counter_buckets
    A counters file reduced to 15-minute buckets (per probe), written beside it by its writer;
    read only while it provably matches that file (see `counter_buckets_for`).
truth
    Simulator ground truth, one row per simulated trace (never written by the real tracer).
findings / clusters / host_alerts
    Audit output (see baseline.fleet.audit).

Clocks: ``ts_ns`` is the host's monotonic clock (bpf_ktime_get_ns) and is only comparable
within one host and boot; wall-clock time is in ``start_time``/``end_time`` (UTC).
Fleet call trees recorded outside a capture window carry no per-call timing (the tracer takes
no timestamp on that path): ``latency_ns`` is null (unknown, never 0) and every frame's
``ts_ns`` as well as ``start_time`` = ``end_time`` are the tick the root call returned in
(resolution one kernel tick, 4 ms at HZ=250). Inside capture windows (good traces, and failures
while a window is open) every frame has its entry time and latency in ns.

Dataset layout (a directory tree; `dataset_files` globs it):
    <root>/<table>/date=YYYY-MM-DD/host=<host>/part-*.parquet
The `host` column is in the directory name only (PARTITION_COLUMNS), so pandas, pyarrow, DuckDB
and polars read a table directory with hive partitioning; our readers restore it from the path
and accept files that still carry it.
Dataset layout version 2 (DATASET_LAYOUT_VERSION) adds the *day layout* of a closed day
(DAY_TABLES: the events), written by the pipeline's day compaction (baseline.pipeline.ingest
`compact_days`) once a date is older than its grace period:
    <root>/<table>/date=YYYY-MM-DD/day-NNNN.parquet
a few files across hosts, sorted by host then time, each holding whole hosts (a host is in one
day file only: `tracebase.hosts` in the footer names its first and last), the `host` column
stored. Snapshots ingested late for such a day go to date=D/host=H/ beside the day files until
the next day compaction merges them in. Every reader here reads either layout (the host from
the file or from the path); a day file's footer also carries the ingest manifest of its hosts
(`tracebase.day_snapshots`, see `day_snapshots_of`). pandas and pyarrow read a table mixing
the two layouts as one hive dataset with the keys pinned (`partitioning=HIVE_KEYS`; inferred,
they type the key `host` a dictionary and refuse the day files' string column); polars and
DuckDB refuse files at two depths in one hive scan, so read the forms apart there
(`date=*/host=*/*.parquet` with hive partitioning, `date=*/day-*.parquet` without) or through
`scan`/`dataset_files`.
Spool layout (written by `tracer run`, one directory per 5-second snapshot, renamed into place
atomically so a reader never sees half a snapshot):
    <spool>/<host>/snap-<YYYYmmddTHHMMSS.fffZ>-<seq>/{events,counters}.parquet
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import re
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

# The footer reader comes from pyarrow._parquet: pyarrow.parquet (imported by the functions
# that write or read whole files) pulls in pyarrow.fs and its filesystems, ~10 MiB and
# ~0.02 s of CPU that validating footers and reading columns do not need (baseline diff).
from pyarrow._parquet import ParquetReader

from tracer.atomic import atomic_output
from tracer.errors import SchemaError, TracebaseError, out_of_resources, printable, shown
from tracer.inputs import (
    input_paths,
    open_parquet,
    open_regular,
    parquet_files_under,
    regular_descriptor,
    table_partition_files,
)

if TYPE_CHECKING:
    from typing import BinaryIO

    import polars as pl
    import pyarrow.parquet as pq
# polars is imported inside the functions that need it: the recorder and `baseline diff` work
# on pyarrow/numpy alone, and importing polars costs them about a second of CPU per process.

SCHEMA_VERSION = 2

# A spool snapshot's name: snap-<UTC time>-<seq>. The time is the wall clock when the interval
# closed, and wall clocks step backwards (NTP, a VM restored, an operator's `date -s`): readers
# that sorted by it put snapshot 6 before snapshot 5. The sequence number only grows (a restarted
# tracer continues from the highest in the spool), so readers order a host's snapshots by it
# and use the time only to break ties (snapshots of two spools copied into one). The names are
# unchanged: every spool written before this reads the same.
SNAPSHOT_NAME = re.compile(r"^snap-(\d{8}T\d{6}(?:\.\d+)?Z)-(\d+)\Z", re.ASCII)  # \Z: "$" lets a trailing newline through


def snapshot_order(name: str) -> tuple[int, str] | None:
    """Sort key of a snapshot directory name within its host (sequence number, then time), or
    None for a name that is not a snapshot's."""
    m = SNAPSHOT_NAME.match(name)
    return (int(m.group(2)), m.group(1)) if m else None


def parse_snapshot_name(name: str) -> tuple[dt.datetime, int] | None:
    """(UTC time, sequence number) of a snapshot directory name, or None if it is not one (a
    date that does not exist, such as month 13, included). The one parser of the names: ingest
    dates its snapshots with it and the day files' manifest codes them with it, so the two
    cannot disagree about which names are snapshots (a fraction of any length is read to the
    microsecond)."""
    m = SNAPSHOT_NAME.match(name)
    if not m:
        return None
    stamp = m.group(1)
    d, t, frac = stamp[:8], stamp[9:15], stamp[16:-1] or "0"
    try:
        when = dt.datetime(int(d[:4]), int(d[4:6]), int(d[6:8]), int(t[:2]), int(t[2:4]), int(t[4:6]),
                           int(frac[:6].ljust(6, "0")), tzinfo=dt.UTC)
    except ValueError:
        return None
    seq = int(m.group(2))
    if seq >= 1 << 63:  # the tracer's counter is an int64: a larger one was not written by it
        return None
    return when, seq


def snapshot_time(name: str) -> dt.datetime | None:
    """UTC time of a snapshot directory name, or None if it is not one (parse_snapshot_name)."""
    parsed = parse_snapshot_name(name)
    return parsed[0] if parsed else None
# Files of these versions are read; columns a version added (ADDED_COLUMNS) read as null in
# older files, so a dataset written before an upgrade stays readable.
READABLE_VERSIONS = ("1", "2")
ADDED_COLUMNS: dict[str, frozenset[str]] = {
    "events": frozenset({"path2", "output", "repeat_count"}),
    "coverage_app": frozenset({"seen"}),
    "findings": frozenset({"comm"}),  # the trace's process name (an expected error routine for one caller)
}
META_TABLE = b"tracebase.table"
META_VERSION = b"tracebase.schema_version"
# JSON in an events file's footer: the distinct job-metadata pairs of its traces (see
# trace_metadata_summary); a summary, not data: readers may always decode the column instead
META_TRACE_METADATA = b"tracebase.trace_metadata"

TRACE_KINDS = ("good", "failure", "full")

# Lists of structs rather than Arrow maps: polars reads and writes these natively.
METADATA_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))
ERRNO_COUNTS_TYPE = pa.list_(pa.struct([("errno", pa.string()), ("count", pa.int64())]))

# --------------------------------------------------------------------------------------------
# events (+ the traces view)
# --------------------------------------------------------------------------------------------
EVENT_FIELDS: list[pa.Field] = [
    pa.field("trace_id", pa.string(), nullable=False),
    pa.field("seq", pa.int64(), nullable=False),  # order within the trace, from 0
    pa.field("ts_ns", pa.int64(), nullable=False),  # entry time, host monotonic clock (see Clocks)
    pa.field("pid", pa.int32()),  # thread-group id
    pa.field("tid", pa.int32()),
    pa.field("ppid", pa.int32()),
    pa.field("comm", pa.string()),
    pa.field("probe", pa.string(), nullable=False),  # syscall or function name
    pa.field("layer", pa.string()),  # syscall | uverbs | core | driver | peer-mem | user-lib
    pa.field("depth", pa.int16(), nullable=False),  # 0 = top-level call of the trace
    pa.field("ret", pa.int64(), nullable=False),
    # symbolic ("EACCES"), null when the call succeeded. Also set with ret 0 where a call
    # succeeds and returns an error in a value: getsockopt(SOL_SOCKET, SO_ERROR) (arg
    # "SO_ERROR"), how a non-blocking connect's refusal/timeout shows (strace's `[ECONNREFUSED]`)
    pa.field("errno", pa.string()),
    pa.field("latency_ns", pa.int64()),  # null: not measured (fleet trees outside capture windows)
    pa.field("path", pa.string()),  # path argument, *at dirfd resolved when possible
    pa.field("arg", pa.string()),  # other path-selecting argument (flags, QP transition, SO_ERROR, ...)
    # schema version 2:
    pa.field("path2", pa.string()),  # second path of two-path syscalls (rename/link target, ...)
    pa.field("output", pa.string()),  # first bytes written to stdout/stderr/a tty/a pipe
]

TRACE_FIELDS: list[pa.Field] = [
    pa.field("trace_id", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),  # good | failure | full
    pa.field("command", pa.string()),  # command line, or operation for fleet call trees
    pa.field("exit_status", pa.int32()),  # process exit status / root call return
    pa.field("start_time", pa.timestamp("ns", tz="UTC")),
    pa.field("end_time", pa.timestamp("ns", tz="UTC")),
    pa.field("host", pa.string()),
    pa.field("kernel_release", pa.string()),
    pa.field("lost_events", pa.int64()),
    pa.field("job_id", pa.string()),  # scheduler job (SLURM_JOB_ID, ...) when known
    pa.field("metadata", METADATA_TYPE),  # free-form job metadata, key/value pairs
    # schema version 2: identical call trees aggregated in the kernel; this row's trace is one
    # full example standing for `repeat_count` of them (null = 1)
    pa.field("repeat_count", pa.int64()),
]

EVENTS = pa.schema(EVENT_FIELDS + TRACE_FIELDS[1:])  # trace_id appears once
# What identifies an events row: a frame (seq) of one record (trace_id: the fleet tracer's
# host:boot:tid:seq) of a host. At-least-once shipping (a spool re-sent after a crash, a file
# uploaded twice) repeats a snapshot's call trees in another part file of the same partition:
# readers count each key once, its first row (as SNAPSHOT_KEY for the counters).
RECORD_KEY = ("host", "trace_id", "seq")
TRACES = pa.schema(TRACE_FIELDS)

# --------------------------------------------------------------------------------------------
# counters (fleet tracer dual plane)
# --------------------------------------------------------------------------------------------
COUNTERS = pa.schema(
    [
        pa.field("host", pa.string(), nullable=False),
        pa.field("snapshot_time", pa.timestamp("ns", tz="UTC"), nullable=False),
        pa.field("interval_s", pa.float64()),
        pa.field("kernel_release", pa.string()),
        pa.field("vendor", pa.string()),  # mlx5 | bnxt_re | irdma | null
        pa.field("probe_set", pa.string()),
        pa.field("probe", pa.string(), nullable=False),
        pa.field("layer", pa.string()),
        pa.field("live", pa.bool_()),  # attached during this interval
        pa.field("invocations", pa.int64(), nullable=False),  # delta over the interval
        pa.field("failures", pa.int64(), nullable=False),
        pa.field("errno_counts", ERRNO_COUNTS_TYPE),  # errno histogram delta
        pa.field("lost_records", pa.int64()),  # snapshot-wide ring-buffer loss, same on each row
    ]
)

# --------------------------------------------------------------------------------------------
# counter_buckets: a counters file reduced to 15-minute buckets, written by the counters file's
# writer (ingest, simulator) beside it in <root>/counter_buckets/<same date=/host=/name>. A cache,
# never the data: a reader takes it only when its footer (tracebase.source) names the counters
# file's size and a hash of that file's Parquet footer (row count, column chunks, statistics)
# and they match (`counter_buckets_for`); else it reads the counters file itself. Per (probe,
# bucket) in order of first appearance: n = sum of invocations (a negative one, a counter reset
# shipped as a delta, counts 0), layer = the first row's,
# vendor = the first non-null, kernel_release = the last non-null, errno_counts = per errno the
# sum of positive counts (nulls and zeros dropped), ordered by errno. A row repeating one already
# read (SNAPSHOT_KEY: a snapshot delivered twice) counts once, the first copy.
# --------------------------------------------------------------------------------------------
BUCKET_WIDTH = "15m"
# What identifies a counters row: one row per probe in each snapshot of a host. A daemon that
# restarts and re-sends its spool, or a spool uploaded twice under another snapshot id, repeats
# rows with the same key: readers count each key once (its first row).
SNAPSHOT_KEY = ("host", "probe", "snapshot_time")
BUCKET_NS = 15 * 60 * 1_000_000_000
# A counters row counts the calls of the interval that ends at its snapshot_time (invocations and
# errno counts are deltas over it). Its bucket is the one that interval ends in, an end on a
# bucket's boundary belonging to the bucket before: a 5-minute snapshot at 02:15:00 counts the
# calls of 02:10-02:15, bucket 02:00. (By the snapshot time alone it went to 02:15, so a fault
# that began at 02:00 shared its first bucket with the successes of 01:55-02:00.) Summaries
# written by another rule are not used (`counter_buckets_for` checks `BUCKET_OF`).
BUCKET_OF = "interval end, on a boundary the bucket before"


def snapshot_bucket(width: str = BUCKET_WIDTH) -> pl.Expr:
    """The polars expression of a counters row's bucket (`BUCKET_OF`), in nanoseconds."""
    import polars as pl

    end = pl.col("snapshot_time").dt.cast_time_unit("ns")
    return (end - pl.duration(nanoseconds=1)).dt.truncate(width).alias("bucket")


COUNTER_BUCKETS = pa.schema(
    [
        pa.field("host", pa.string(), nullable=False),
        pa.field("probe", pa.string(), nullable=False),
        pa.field("bucket", pa.timestamp("ns", tz="UTC"), nullable=False),
        pa.field("n", pa.int64(), nullable=False),
        pa.field("layer", pa.string()),
        pa.field("vendor", pa.string()),
        pa.field("kernel_release", pa.string()),
        pa.field("errno_counts", ERRNO_COUNTS_TYPE),
    ]
)
META_SOURCE = b"tracebase.source"  # JSON: the counters file a counter_buckets file summarises

# --------------------------------------------------------------------------------------------
# simulator ground truth
# --------------------------------------------------------------------------------------------
TRUTH = pa.schema(
    [
        pa.field("trace_id", pa.string(), nullable=False),
        pa.field("host", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("root_cause", pa.string()),  # injected cause label, null for none
        pa.field("bifurcation_probe", pa.string()),  # where it leaves good behaviour
        pa.field("bifurcation_errno", pa.string()),
        pa.field("origin_layer", pa.string()),  # layer where the errno first appears
        pa.field("expected_error", pa.bool_()),  # trace holds only expected (routine) errors
        pa.field("held_out", pa.bool_()),  # good trace reserved for false-finding checks
    ]
)

# --------------------------------------------------------------------------------------------
# audit output
# --------------------------------------------------------------------------------------------
FINDINGS = pa.schema(
    [
        pa.field("trace_id", pa.string(), nullable=False),
        pa.field("host", pa.string()),
        pa.field("job_id", pa.string()),
        pa.field("time", pa.timestamp("ns", tz="UTC")),
        pa.field("operation", pa.string()),
        pa.field("expected", pa.bool_()),  # set aside as an expected error
        pa.field("bifurcation_probe", pa.string()),
        pa.field("bifurcation_errno", pa.string()),
        pa.field("bifurcation_seq", pa.int64()),
        pa.field("origin_layer", pa.string()),  # where the errno first appears
        pa.field("stop_layer", pa.string()),  # where it stops propagating
        pa.field("deeper_than_probes", pa.bool_()),  # same errno at every layer
        pa.field("signature", pa.string()),
        pa.field("cluster_id", pa.int32()),
        pa.field("score", pa.float64()),
        # the trace's process name: an expected error can be routine for one caller only (an
        # entry's `comm`); null in findings written before it was recorded
        pa.field("comm", pa.string()),
    ]
)

CLUSTERS = pa.schema(
    [
        pa.field("cluster_id", pa.int32(), nullable=False),
        pa.field("signature", pa.string(), nullable=False),
        pa.field("failures", pa.int64()),
        pa.field("hosts", pa.int64()),
        pa.field("jobs", pa.int64()),
        pa.field("first_seen", pa.timestamp("ns", tz="UTC")),
        pa.field("last_seen", pa.timestamp("ns", tz="UTC")),
        pa.field("trend", pa.string()),  # rising | steady | falling | new
        pa.field("origin_layer", pa.string()),
        pa.field("example_trace_id", pa.string()),
    ]
)

HOST_ALERTS = pa.schema(
    [
        pa.field("host", pa.string(), nullable=False),
        pa.field("alert", pa.string(), nullable=False),  # persistent_bad_state | rising_errno_rate | recurring_errno | rising_latency
        pa.field("probe", pa.string()),
        pa.field("errno", pa.string()),
        pa.field("since", pa.timestamp("ns", tz="UTC")),
        pa.field("score", pa.float64()),
        pa.field("detail", pa.string()),
    ]
)

TABLES: dict[str, pa.Schema] = {
    "events": EVENTS,
    "traces": TRACES,
    "counters": COUNTERS,
    "counter_buckets": COUNTER_BUCKETS,
    "truth": TRUTH,
    "findings": FINDINGS,
    "clusters": CLUSTERS,
    "host_alerts": HOST_ALERTS,
}


def polars_schema(table: str) -> pl.Schema:
    """The polars schema of a table (for building frames that will pass validation)."""
    import polars as pl

    return pl.Schema({field.name: polars_dtype(field.type) for field in _table_schema(table)})


def polars_dtype(arrow_type: pa.DataType) -> pl.DataType:
    """The polars dtype of an Arrow type of our tables, mapped directly: polars' own converter
    (pl.from_arrow of an empty table) imports pandas on first use, ~0.4 s for every command."""
    import polars as pl

    if pa.types.is_timestamp(arrow_type):
        return pl.Datetime(time_unit=arrow_type.unit, time_zone=arrow_type.tz)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return pl.List(polars_dtype(arrow_type.value_type))
    if pa.types.is_struct(arrow_type):
        return pl.Struct({f.name: polars_dtype(f.type) for f in arrow_type})
    if pa.types.is_dictionary(arrow_type):
        return polars_dtype(arrow_type.value_type)
    simple = {
        pa.string(): pl.String, pa.large_string(): pl.String, pa.bool_(): pl.Boolean,
        pa.int8(): pl.Int8, pa.int16(): pl.Int16, pa.int32(): pl.Int32, pa.int64(): pl.Int64,
        pa.uint8(): pl.UInt8, pa.uint16(): pl.UInt16, pa.uint32(): pl.UInt32, pa.uint64(): pl.UInt64,
        pa.float32(): pl.Float32, pa.float64(): pl.Float64, pa.binary(): pl.Binary,
        pa.large_binary(): pl.Binary, pa.date32(): pl.Date,
    }
    try:
        return simple[arrow_type]
    except KeyError:
        raise TypeError(f"no polars dtype for Arrow type {arrow_type}") from None


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------
def _table_schema(table: str) -> pa.Schema:
    try:
        return TABLES[table]
    except KeyError:
        raise ValueError(f"unknown tracebase table {table!r}") from None


def validate_schema(found: pa.Schema, table: str, source: str, restored: Iterable[str] = ()) -> None:
    """Raise SchemaError unless `found` has every column of `table` with the right type.

    Extra columns are allowed (forward compatibility within a version); missing columns or
    type mismatches are not, except columns a later version added (ADDED_COLUMNS) and
    `restored` ones (partition keys a dataset file's directory names, see PARTITION_COLUMNS).
    """
    expected = _table_schema(table)
    optional = ADDED_COLUMNS.get(table, frozenset()) | frozenset(restored)
    for field in expected:
        idx = found.get_field_index(field.name)
        if idx < 0 and len(twice := found.get_all_field_indices(field.name)) > 1:
            # (get_field_index says -1 for a name given twice: not "no such column")
            raise SchemaError(source, field.name, "one column of that name", f"{len(twice)} columns of that name")
        if idx < 0:
            if field.name in optional:
                continue
            raise SchemaError(source, field.name, f"a {field.type} column", "no such column")
        got = found.field(idx).type
        if not got.equals(field.type) and not _compatible(got, field.type):
            raise SchemaError(source, field.name, str(field.type), str(got))


def not_utf8(column: pa.ChunkedArray | pa.Array) -> str | None:
    """Arrow's words for the first string in `column` whose bytes are not UTF-8, or None.

    Parquet readers take a string column's bytes as written, so a file from another writer can
    hold any (a comm or path copied from the kernel unchecked); polars refuses such a file when
    a dataset is scanned, and pyarrow fails only when a value is turned into Python. Strings
    are checked wherever they are (a dictionary's values, a list's structs); other columns
    cost nothing."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            chunk = chunk.dictionary  # the values, not the codes (a few distinct strings)
        if not _holds_strings(chunk.type):
            continue
        try:
            chunk.validate(full=True)
        except pa.ArrowInvalid as exc:
            return " ".join(str(exc).split())
    return None


def _holds_strings(t: pa.DataType) -> bool:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return True
    if pa.types.is_dictionary(t):
        return _holds_strings(t.value_type)
    return any(_holds_strings(t.field(i).type) for i in range(t.num_fields))


# The names of UTC a writer may give a timestamp column's zone: the same instants (the IANA
# database's links to Etc/UTC, and the zero offset). pandas and Java writers say "Etc/UTC",
# some say "GMT"; every reader converts them to UTC. Another zone (Europe/Berlin) or a unit
# other than ns is refused: the times would read shifted or the scans could not merge them.
# ("Z" is no zone name polars knows: its scans panic on it, so it is refused with the others.)
UTC_ZONES = frozenset({"UTC", "+00:00", "-00:00", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal",
                       "Universal", "Etc/Zulu", "Zulu", "GMT", "Etc/GMT", "Etc/GMT0", "Etc/GMT+0",
                       "Etc/GMT-0", "GMT0", "GMT+0", "GMT-0", "Etc/Greenwich", "Greenwich"})


def _compatible(got: pa.DataType, want: pa.DataType) -> bool:
    # Large vs regular strings and dictionary-encoded strings are the same data.
    if pa.types.is_dictionary(got):
        # polars writes a Categorical, pyarrow a dictionary_encode()d column, as Arrow
        # dictionaries: the values are the column's data (every reader decodes them)
        got = got.value_type
        if got.equals(want):
            return True
    if pa.types.is_string(want) and (pa.types.is_large_string(got) or pa.types.is_string_view(got)):
        return True
    if pa.types.is_timestamp(want) and pa.types.is_timestamp(got):
        return got.unit == want.unit and (got.tz or "UTC") in UTC_ZONES
    # Nested columns hold the same data in the same large or view types: polars writes a
    # frame's lists as large_list (its element named "element", not "item") of structs of
    # large_string, and every file it wrote with the tracebase footer keys was refused for
    # `metadata` (events) and `errno_counts` (counters) while its flat columns passed.
    if _is_any_list(want) and _is_any_list(got):
        return _same_data(got.value_type, want.value_type)
    if pa.types.is_struct(want) and pa.types.is_struct(got):
        names = [want.field(i).name for i in range(want.num_fields)]
        if [got.field(i).name for i in range(got.num_fields)] != names:
            return False
        return all(_same_data(got.field(i).type, want.field(i).type) for i in range(want.num_fields))
    return False


def _is_any_list(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t)
            or pa.types.is_large_list_view(t))


def _same_data(got: pa.DataType, want: pa.DataType) -> bool:
    return got.equals(want) or _compatible(got, want)


def validate_file(path: str | os.PathLike, table: str, *, check_nulls: bool = True,
                  opened: BinaryIO | None = None) -> pq.FileMetaData:
    """Check a Parquet file's footer: readable, right table, right version, right columns.

    `check_nulls=False` leaves the non-null columns to a caller that reads the whole file anyway
    (ingest checks the data it holds instead of reading columns twice). `opened`: the file
    `path` names, already opened by the caller (which keeps it open), whose footer is read."""
    source = str(path)
    # Opened by Python, not by Arrow's filesystem layer: a file name that is not UTF-8
    # (surrogate-escaped) opens like any other; EACCES and friends stay OSErrors naming it.
    # Regular files only: a FIFO would hang the open, /dev/zero be read forever.
    fh = open_parquet(source) if opened is None else contextlib.nullcontext(opened)
    with fh as fh:
        try:
            if opened is None:
                fh = _in_memory_when_small(fh)
            # the reader itself, not pq.read_metadata: that builds a ParquetFile and its
            # nested-column index in Python, half the cost of a footer read (10,000s per audit)
            reader = ParquetReader()
            reader.open(fh)
            meta = reader.metadata
        except (pa.ArrowInvalid, OSError) as exc:
            raise SchemaError(source, None, "a Parquet file", f"unreadable data ({exc})") from None
        # the rest of the checks read this very file when they read a column at all (a file
        # renamed over the path meanwhile was read for them: "No match for FieldRef.Name(host)",
        # an internal error of `baseline learn`, battery 50)
        return _validated(meta, table, source, fh, check_nulls)


# A file this small is read whole, in one pread, and parsed from memory: Arrow reads a Python
# file through Python (the GIL taken for each size query, seek and read), and an audit reads
# 10,000s of footers on threads beside its CPU-bound ones, each handover waiting its turn. A
# fleet-day's host files are ~30 KiB; a larger file keeps Arrow's 64 KiB tail read.
_WHOLE_READ_BYTES = 256 << 10


def _in_memory_when_small(fh: BinaryIO) -> BinaryIO | pa.BufferReader:
    """The open file `fh` itself, or when it is at most _WHOLE_READ_BYTES its bytes in a
    BufferReader (seekable and readable by pyarrow.parquet as the file is)."""
    fd = fh.fileno()
    size = os.fstat(fd).st_size
    if size > _WHOLE_READ_BYTES:
        return fh
    return pa.BufferReader(os.pread(fd, size, 0))


def _validated(meta: pq.FileMetaData, table: str, source: str, fh: BinaryIO, check_nulls: bool) -> pq.FileMetaData:
    """validate_file's checks of the footer `meta` of the open file `fh` (named `source`)."""
    kv = meta.metadata or {}
    _require_text_footer(kv, source)
    got_table = kv.get(META_TABLE, b"").decode()
    if not got_table:  # a Parquet file another tool wrote: say which key, and how to write one
        raise SchemaError(source, None, f"a tracebase '{table}' table",
                          f"none: no footer key '{META_TABLE.decode()}' (a file another tool wrote; "
                          "tracer.schema.write_table writes one)")
    if got_table != table:
        raise SchemaError(source, None, f"a tracebase '{table}' table", "table " + _shown(got_table, quote="'"))
    got_version = kv.get(META_VERSION, b"").decode() or "(none)"
    if got_version not in READABLE_VERSIONS:
        raise SchemaError(
            source, None, f"schema version {' or '.join(READABLE_VERSIONS)}", f"schema version {_shown(got_version)}"
        )
    # a dataset's files share a few footer schemas: one that passed (same table, same Arrow
    # schema text, same partition keys from the path, same Parquet schema) passes again, and
    # when it stores every non-nullable column as REQUIRED there are no nulls to look for
    restored = partition_values(source)
    key = (table, kv.get(b"ARROW:schema"), tuple(restored))
    if restored:
        for column, value in restored.items():
            if not value:  # `host=/`: every reader took its rows for a host named ""
                raise SchemaError(source, column, f"a {column} named by its directory ({column}=<{column}>)",
                                  f"an empty name ('{column}=')")
        _check_stored_partition_values(meta, key, restored, source, fh)
    for known, all_required in _PASSED_SCHEMAS.get(key, ()):
        if meta.schema.equals(known):
            if check_nulls and not all_required:
                validate_required(meta, table, source, fh)
            validate_ranges(meta, table, source, key, fh)
            return meta
    validate_schema(meta.schema.to_arrow_schema(), table, source, restored=restored)
    if check_nulls:
        validate_required(meta, table, source, fh)
    validate_ranges(meta, table, source, key, fh)
    passed = _PASSED_SCHEMAS.setdefault(key, [])
    if len(passed) < 8:
        passed.append((meta.schema, _all_required(meta.schema, table)))
    return meta


def _require_text_footer(kv: dict[bytes, bytes], source: str) -> None:
    """Every key and value of the footer's key-value metadata is UTF-8: polars refuses to scan a
    file with one that is not ("File out of specification: invalid utf8", after the batch's
    other files were read), and the checks below decode them."""
    for key, value in kv.items():
        for part in (key, value):
            if part.isascii():
                continue
            try:
                part.decode()
            except UnicodeDecodeError:
                name = key.decode(errors="backslashreplace")
                raise SchemaError(source, None, "footer key-value metadata in UTF-8",
                                  f"key '{name}' {'named' if part is key else 'with a value'} in other bytes") from None


_SHOWN_CHARS = 64


def _shown(text: str, quote: str = "") -> str:
    """A footer value as found; in Python's quotes when spaces or control characters around or
    in it would not show ("found schema version 2" for ' 2 ' contradicted itself). A long one
    is cut, saying its length: a 5,000-digit version filled the one-line error."""
    more = ""
    if len(text) > _SHOWN_CHARS:
        text, more = text[:_SHOWN_CHARS], f"... ({len(text):,} characters)"
    return (repr(text) if text != text.strip() or not text.isprintable() else f"{quote}{text}{quote}") + more


# (table, ARROW:schema, partition keys) -> [(Parquet schema, every non-nullable column REQUIRED)]
_PASSED_SCHEMAS: dict[tuple, list[tuple[pq.ParquetSchema, bool]]] = {}
# per (table, Arrow schema text, partition keys): the (column name, leaf index) of the partition
# columns a file also stores (none, for the files tracebase writes: write_partition omits them)
_STORED_KEYS: dict[tuple, tuple[tuple[str, int], ...]] = {}


def _check_stored_partition_values(meta: pq.FileMetaData, key: tuple, restored: dict[str, str], source: str,
                                   fh: BinaryIO) -> None:
    """SchemaError when a dataset file stores a partition column (`host`) whose values are not
    the one its directory names: the readers take the stored column (a day file's hosts), so a
    part in host=gpu00001/ storing host 'evil' was audited as host evil, with exit 0, while the
    counters of the same directory said gpu00001. The footer's statistics answer (every row
    group's least and greatest value); a row group without them has its column read."""
    stored = _STORED_KEYS.get(key)
    if stored is None:
        leaves = [meta.schema.column(j).path for j in range(meta.num_columns)]
        stored = tuple((c, leaves.index(c)) for c in restored if c in leaves)
        _STORED_KEYS[key] = stored
    for column, j in stored:
        want = restored[column]
        found: set[object] = set()
        for i in range(meta.num_row_groups):
            stats = meta.row_group(i).column(j).statistics
            if stats is None or not stats.has_min_max:
                import pyarrow.parquet as pq

                fh.seek(0)
                found = set(pq.read_table(fh, columns=[column]).column(0).unique().to_pylist())
                break
            found.update((stats.min, stats.max))
        # (text values only: a stored date column's typed values are not compared as text)
        other = sorted(v for v in found if isinstance(v, str) and v != want)
        if other:
            raise SchemaError(source, column, f"the value its directory names ({column}={want})",
                              _shown(str(other[0])))


def _all_required(schema: pq.ParquetSchema, table: str) -> bool:
    """Every non-nullable column of `table` that the file has is stored REQUIRED (cannot hold
    nulls), so validate_required has nothing to check."""
    levels = {schema.column(i).path: schema.column(i).max_definition_level for i in range(len(schema))}
    return all(levels.get(f.name, 0) == 0 for f in _table_schema(table) if not f.nullable)


def validate_required(meta: pq.FileMetaData, table: str, source: str, fh: BinaryIO | None = None) -> None:
    """Raise SchemaError naming the first non-nullable column of `table` that holds nulls.

    Cheap: the footer's per-row-group null_count statistics answer it without reading data
    (a column written as Parquet REQUIRED cannot hold nulls at all). Only a column written
    without statistics is read, that column alone.
    """
    schema = meta.schema
    index = {schema.column(i).path: i for i in range(len(schema))}
    unknown: list[str] = []
    for field in _table_schema(table):
        i = index.get(field.name)
        if field.nullable or i is None or schema.column(i).max_definition_level == 0:
            continue
        nulls = 0
        for rg in range(meta.num_row_groups):
            stats = meta.row_group(rg).column(i).statistics
            if stats is None or not stats.has_null_count:
                unknown.append(field.name)
                break
            nulls += stats.null_count
        else:
            if nulls:
                raise SchemaError(source, field.name, "no nulls (a required column)", f"{nulls} null value(s)")
    if unknown:
        data = _columns_without_statistics(source, unknown, fh)
        for name in unknown:
            if data.column(name).null_count:
                raise SchemaError(
                    source, name, "no nulls (a required column)", f"{data.column(name).null_count} null value(s)"
                )


# The times a file may hold: the span of the int64 nanosecond timestamps less a margin
# (tracer.units.MIN_TIME..MAX_TIME, as the time flags take), checked in every file read
# (validate_ranges), since the readers add windows and buckets to them: a start_time of
# 2262-04-11 (valid Parquet, another writer's sentinel) ended `baseline audit` and `expected
# learn` in an internal error (polars' overflow adding a minute), and ingest let it into the
# dataset. (Counts are not bounded: a negative delta is a counter reset, which every reader
# counts from 0 up, tracer.schema.counted_delta.)
_TIME_RANGES: dict[str, dict[str, tuple[int, int]]] = {}


def time_ranges(table: str) -> dict[str, tuple[int, int]]:
    """The timestamp columns of `table` -> (least, greatest) allowed, in nanoseconds since the
    epoch."""
    if table not in _TIME_RANGES:
        from tracer.units import MAX_TIME, MIN_TIME

        span = tuple(int((t - _EPOCH).total_seconds()) * 1_000_000_000 for t in (MIN_TIME, MAX_TIME))
        _TIME_RANGES[table] = {f.name: span for f in _table_schema(table) if pa.types.is_timestamp(f.type)}
    return _TIME_RANGES[table]


def _shown_time(ns: int) -> str:
    seconds, rest = divmod(ns, 1_000_000_000)
    return f"{(_EPOCH + dt.timedelta(seconds=seconds)).strftime('%Y-%m-%dT%H:%M:%S')}.{rest:09d}Z"


def _out_of_range(table: str, name: str, least: int, greatest: int) -> tuple[str, str] | None:
    """(expected, found) when a time column's least or greatest value is out of its range."""
    low, high = time_ranges(table)[name]
    if low <= least and greatest <= high:
        return None
    return (f"times between {_shown_time(low)[:10]} and {_shown_time(high)[:10]}",
            _shown_time(least if least < low else greatest))


def validate_ranges(meta: pq.FileMetaData, table: str, source: str, layout: object = None,
                    fh: BinaryIO | None = None) -> None:
    """Raise SchemaError naming the first time column (time_ranges) holding a time out of its
    range, with the time found.

    Cheap, as validate_required: the footer's per-row-group min/max statistics answer it
    (int64; the schema was validated first). Only a column written without them is read, that
    column alone (every writer here keeps the times' statistics: --since prunes on them).
    `layout`: a key naming the file's column layout (validate_file: the table and its Arrow
    schema)."""
    ranges = time_ranges(table)
    if not ranges or not meta.num_rows:
        return
    schema = meta.schema
    index = _column_index(schema, layout)
    unknown: list[str] = []
    for name in ranges:
        i = index.get(name)
        if i is None:
            continue
        least = greatest = None
        for rg in range(meta.num_row_groups):
            column = meta.row_group(rg).column(i)
            if not column.num_values:
                continue  # an empty row group: nothing to bound
            stats = column.statistics
            if stats is not None and stats.has_null_count and stats.null_count == column.num_values:
                continue  # all nulls: no min/max written, nothing to bound
            if stats is None or not stats.has_min_max or column.physical_type != "INT64":
                unknown.append(name)
                break
            low, high = stats.min_raw, stats.max_raw
            least = low if least is None else min(least, low)
            greatest = high if greatest is None else max(greatest, high)
        else:
            if least is not None and (why := _out_of_range(table, name, least, greatest)):
                raise SchemaError(source, name, *why)
    if unknown:
        data = _columns_without_statistics(source, unknown, fh)
        check_ranges(data, table, source)


def _columns_without_statistics(source: str | os.PathLike, names: list[str], fh: BinaryIO | None = None) -> pa.Table:
    """The columns a footer's statistics cannot answer for (a writer that kept none), read (from
    `fh`, the file whose footer was read, when given)."""
    import pyarrow.parquet as pq

    try:
        if fh is not None:
            fh.seek(0)
            return pq.read_table(fh, columns=names)
        with open_regular(source, "a Parquet file") as opened:
            return pq.read_table(opened, columns=names)
    except (pa.ArrowInvalid, OSError) as exc:
        raise SchemaError(source, None, "a Parquet file", f"unreadable data ({exc})") from None


def _column_index(schema: pq.ParquetSchema, key: object) -> dict[str, int]:
    """Column path -> index, kept per `key` (the footer's Arrow schema text: a dataset's files
    share a few; building it costs as much as the rest of the check)."""
    found = _COLUMN_INDEX.get(key) if key is not None else None
    if found is None or len(found) != len(schema):
        found = {schema.column(i).path: i for i in range(len(schema))}
        if key is not None:
            if len(_COLUMN_INDEX) > 64:
                _COLUMN_INDEX.clear()
            _COLUMN_INDEX[key] = found
    return found


_COLUMN_INDEX: dict[object, dict[str, int]] = {}


def check_ranges(data: pa.Table, table: str, source: str) -> None:
    """validate_ranges on data already read: SchemaError naming `source` and the first time
    column of `data` holding a time out of its range."""
    import pyarrow.compute as pc

    for name in time_ranges(table):
        if name not in data.column_names or not pa.types.is_timestamp(data.column(name).type):
            continue
        column = data.column(name)
        bounds = pc.min_max(column.cast(pa.timestamp("ns", column.type.tz)).cast(pa.int64())).as_py()
        if bounds["min"] is not None and (why := _out_of_range(table, name, bounds["min"], bounds["max"])):
            raise SchemaError(source, name, *why)


# The values an events row may not hold whatever wrote it: column -> (the allowed values, or the
# least allowed number; what is expected). No writer of ours makes them, and every reader took
# them wrongly without a word: a kind outside TRACE_KINDS is neither a good trace nor a failure,
# a negative depth or frame number breaks the pre-order the call trees are rebuilt from, a
# repeat count under 1 or a negative loss count weighs a record below nothing. Checked where the
# columns are decoded anyway (the fleet's event batches: event_value_problem; `baseline diff`'s
# column reads: column_value_problem).
EVENT_VALUE_RULES: dict[str, tuple[tuple[str, ...] | int, str]] = {
    "kind": (TRACE_KINDS, "a trace kind of " + ", ".join(TRACE_KINDS)),
    "depth": (0, "a call depth of 0 or more (0: the trace's top-level call)"),
    "seq": (0, "a frame number of 0 or more"),
    "repeat_count": (1, "a repeat count of 1 or more (null: 1)"),
    "lost_events": (0, "a count of lost events of 0 or more"),
}


def _found_value(value: object, row: int) -> str:
    text = str(value) if len(str(value)) <= 60 else str(value)[:57] + "..."
    return f"{_shown(text, quote=chr(39) if isinstance(value, str) else '')} in row {row}"


def event_value_problem(frame: pl.DataFrame) -> tuple[str, str, str] | None:
    """(column, expected, found) for the first row of a polars events frame breaking one of
    EVENT_VALUE_RULES (in the columns it holds), or None: one vectorised pass per column."""
    import polars as pl

    rules = {c: rule for c, rule in EVENT_VALUE_RULES.items() if c in frame.columns}
    if not rules or frame.is_empty():
        return None

    def bad(column: str) -> pl.Expr:
        allowed = rules[column][0]
        value = pl.col(column)
        wrong = ~value.cast(pl.String).is_in(allowed) if isinstance(allowed, tuple) else value < allowed
        return wrong.fill_null(False)

    broken = frame.select(bad(c).any().alias(c) for c in rules).row(0)
    for column, hit in zip(rules, broken, strict=True):
        if hit:
            row = frame.select(bad(column).arg_true().first()).item()
            return column, rules[column][1], _found_value(frame.get_column(column)[row], row)
    return None


def column_value_problem(name: str, values: pa.Array | pa.ChunkedArray) -> tuple[str, str] | None:
    """(expected, found) when an events column read as Arrow breaks its EVENT_VALUE_RULES rule,
    else None (`baseline diff`'s reads: pyarrow, no polars)."""
    rule = EVENT_VALUE_RULES.get(name)
    if rule is None or not len(values):
        return None
    # the kernels called as pyarrow.compute's wrappers call them: importing pyarrow.compute
    # costs `baseline diff` ~30 ms of CPU (see baseline.run.compute)
    from pyarrow import _compute

    allowed, expected = rule
    if isinstance(allowed, tuple):
        chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
        if all(pa.types.is_dictionary(c.type) and all(w is None or w in allowed for w in c.dictionary.to_pylist())
               for c in chunks):
            return None  # every word a row can name is allowed (no pass over the rows' indices)
        distinct = _compute.call_function("unique", [values])
        if pa.types.is_dictionary(distinct.type):  # (its words by their codes: dictionary_decode imports it too)
            words = distinct.dictionary.to_pylist()
            seen = [None if i is None else words[i] for i in distinct.indices.to_pylist()]
        else:
            seen = distinct.to_pylist()
        if all(v is None or v in allowed for v in seen):
            return None
        row = next(i for i, v in enumerate(values.to_pylist()) if v is not None and v not in allowed)
    else:
        least = _compute.call_function("min_max", [values])["min"].as_py()
        if least is None or least >= allowed:
            return None
        row = next(i for i, v in enumerate(values.to_pylist()) if v is not None and v < allowed)
    return expected, _found_value(values[row].as_py(), row)


def check_event_table(data: pa.Table, table: str, source: str) -> None:
    """SchemaError naming `source`, the column and the row of an events table (a snapshot's,
    a file's) breaking EVENT_VALUE_RULES; as check_counts for the counters."""
    if table != "events":
        return
    for name in EVENT_VALUE_RULES:
        if name in data.column_names and (why := column_value_problem(name, data.column(name))) is not None:
            raise SchemaError(source, name, *why)


# The most one counters row may count (2^50, ~1.1e15): a probe firing 10^9 times a second for the
# longest interval (-i 1h) counts 3.6e12. Sums of such rows over a week's snapshots stay far
# inside int64, where a row near 2^62 (a damaged file) overflowed the coverage report's sums.
COUNT_LIMIT = 2**50


def check_counts(data: pa.Table, table: str, source: str) -> None:
    """SchemaError naming `source` and the first row of a counters table whose counts cannot
    be one interval's: failures above the row's invocations, or an errno histogram summing to
    more than its failures, or a count over COUNT_LIMIT. The probe counts a call and its failure in one step, in the same
    generation (bpf/calltree.c, count_call), so no snapshot of ours holds such a row; one
    another writer made or that was damaged gave a failure rate over 1 to every reader. A row
    with a negative count is a counter reset (counted_delta) and is not judged."""
    if table != "counters" or not data.num_rows or not {"invocations", "failures"} <= set(data.column_names):
        return
    import numpy as np

    # numpy on the whole columns: a spool snapshot's counters are a few rows, and pyarrow's
    # compute calls (a group_by above all) cost ~5x more per file than the arithmetic
    calls = data.column("invocations").to_numpy(zero_copy_only=False)
    failures = data.column("failures").to_numpy(zero_copy_only=False)
    for name, counts in (("invocations", calls), ("failures", failures)):
        huge = counts > COUNT_LIMIT
        if huge.any():
            row = int(np.argmax(huge))
            raise SchemaError(source, name, f"at most {COUNT_LIMIT:,} (2^50) in one interval (no probe counts more)",
                              f"{counts[row]} in row {row}" + _probe_of(data, row))
    over = (calls >= 0) & (failures >= 0) & (failures > calls)
    if over.any():
        row = int(np.argmax(over))
        raise SchemaError(source, "failures", "at most the row's invocations (one interval's calls and their failures)",
                          f"{failures[row]} failures of {calls[row]} invocations in row {row}" + _probe_of(data, row))
    if "errno_counts" not in data.column_names:
        return
    histograms = data.column("errno_counts").combine_chunks()
    if not len(histograms.flatten()):
        return
    offsets = histograms.offsets.to_numpy() - histograms.offsets[0].as_py()  # (a slice's offsets start past 0)
    counts = histograms.flatten().field("count").fill_null(0).to_numpy(zero_copy_only=False)
    total = np.concatenate([[0], np.cumsum(counts)])
    negative = np.concatenate([[0], np.cumsum(counts < 0)])
    sums = total[offsets[1:]] - total[offsets[:-1]]
    judged = (negative[offsets[1:]] == negative[offsets[:-1]]) & (failures >= 0)
    bad = judged & (sums > failures)
    if bad.any():
        row = int(np.argmax(bad))
        raise SchemaError(source, "errno_counts", "an errno histogram summing to at most the row's failures",
                          f"{sums[row]} errors counted for {failures[row]} failures in row {row}" + _probe_of(data, row))


def _probe_of(data: pa.Table, row: int) -> str:
    if "probe" not in data.column_names:
        return ""
    return f" (probe {printable(str(data.column('probe')[row].as_py()))})"


def validate_files(files: Sequence[str | os.PathLike], table: str) -> None:
    """validate_file on each file (a footer read each: ~1 ms warm, a few ms cold)."""
    for f in files:
        validate_file(f, table)


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------
def conform(data: pa.Table | pl.DataFrame, table: str) -> pa.Table:
    """Cast a frame to the table's schema: columns reordered, missing nullable ones null-filled."""
    schema = _table_schema(table)
    if isinstance(data, pa.Table) and data.schema.equals(schema, check_metadata=False):
        return data  # already exactly the table's schema (bulk writers build it so): nothing to cast
    if not isinstance(data, pa.Table):  # a polars DataFrame
        data = data.to_arrow()
    columns = []
    for field in schema:
        if field.name in data.column_names:
            col = data.column(field.name)
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            try:
                col = col.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(f"<{table} being written>", field.name, str(field.type), str(col.type)) from exc
        elif field.nullable:
            col = pa.nulls(data.num_rows, field.type)
        else:
            raise SchemaError(f"<{table} being written>", field.name, "a value", "no such column")
        columns.append(col)
    out = pa.Table.from_arrays(columns, schema=schema)
    return out


def _metadata(table: str, extra: dict[str, str] | None) -> dict[bytes, bytes]:
    kv = {META_TABLE: table.encode(), META_VERSION: str(SCHEMA_VERSION).encode()}
    for key, value in (extra or {}).items():
        kv[f"tracebase.{key}".encode()] = value.encode()
    return kv


# Arrow's default dictionary page limit is 1 MiB: a million-event recording has ~10^5 distinct
# paths, well beyond it, and the writer then falls back to plain strings for the rest of the
# column chunk, which every reader must hash again row by row (baseline diff reads paths as
# dictionary codes). Dictionaries may grow to this size instead.
DICTIONARY_PAGE_LIMIT = 64 << 20


def _dictionary_columns(name: str, t: pa.DataType) -> list[str]:
    """The Parquet leaf columns of a field worth a dictionary: strings and dictionaries,
    booleans and integers of 32 bits or fewer (nested ones by their leaf path, the only name
    the writer matches). 64-bit integers, times and floats are per-event clocks, sequence
    numbers and return values: with the raised limit their dictionaries would be as big as
    the data, and plain pages compress better."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _dictionary_columns(f"{name}.list.element", t.value_type)
    if pa.types.is_struct(t):
        return [c for f in t for c in _dictionary_columns(f"{name}.{f.name}", f.type)]
    worthy = (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t)
              or pa.types.is_boolean(t) or (pa.types.is_integer(t) and t.bit_width <= 32))
    return [name] if worthy else []


# Integer columns that count up row by row, delta-coded (DELTA_BINARY_PACKED) unless the
# caller's options say otherwise: an events file's `seq` (0, 1, 2, ... in a recording) plain and
# zstd-compressed decodes in ~20 ms per million rows, the compressor's work, and takes ~1 MB;
# delta-coded, ~2 ms and ~5 KB. Every reader decodes both encodings (old files stay readable).
DELTA_COLUMNS = ("seq",)


def encoding_options(schema: pa.Schema, options: dict | None = None) -> dict:
    """Parquet writer options: `options` as given, with defaults for dictionary encoding
    (`_dictionary_columns`, pages up to DICTIONARY_PAGE_LIMIT) and for DELTA_COLUMNS' encoding
    where they say nothing."""
    out = dict(options or {})
    out.setdefault("use_dictionary", [c for f in schema for c in _dictionary_columns(f.name, f.type)])
    out.setdefault("dictionary_pagesize_limit", DICTIONARY_PAGE_LIMIT)
    dictionary = out["use_dictionary"]
    # (a column with a dictionary takes no other encoding: Arrow's writer refuses the pair)
    delta = [c for c in DELTA_COLUMNS if c in schema.names and pa.types.is_integer(schema.field(c).type)
             and not (dictionary is True or (not isinstance(dictionary, bool) and c in dictionary))]
    if delta:
        encodings = dict(out.get("column_encoding") or {})
        for c in delta:
            encodings.setdefault(c, "DELTA_BINARY_PACKED")
        out["column_encoding"] = encodings
    return out


def write_table(
    data: pa.Table | pl.DataFrame,
    path: str | os.PathLike,
    table: str,
    extra_metadata: dict[str, str] | None = None,
    compression: str = "zstd",
    *,
    durable: bool = True,
    parquet_options: dict | None = None,
    omit_columns: Sequence[str] = (),
    summarise: bool = False,
) -> Path:
    """Write one table to `path` atomically (temp file in the same directory, fsync, rename).

    The temp file starts with '.' and ends in '.tmp' so that directory scans never pick it up;
    a crash mid-write leaves only that, never a partial file under the final name.
    `durable=False` skips both fsyncs (bulk generation of regenerable data, e.g. the simulator):
    the rename stays atomic, only durability across a power loss is given up.
    `parquet_options` are passed on to `pyarrow.parquet.write_table` (encodings, statistics);
    dictionary encoding defaults to `encoding_options` where they do not set it.
    `omit_columns` are left out of the file (a dataset's partition keys: see write_partition).
    An events file carries the footer summary of its traces' metadata (trace_metadata_summary)
    when the process has polars loaded, or always with `summarise` (the dataset's writers:
    ingest and its compaction run on pyarrow, and a day file without it cost every audit a
    decode of its metadata column).
    """
    import pyarrow.parquet as pq

    path = Path(path)
    arrow = conform(data, table)
    if omit_columns:
        arrow = arrow.drop_columns([c for c in omit_columns if c in arrow.column_names])
    arrow = arrow.replace_schema_metadata(_metadata(table, extra_metadata))
    summary = trace_metadata_summary(arrow, load_polars=summarise) if table == "events" else None
    options = encoding_options(arrow.schema, parquet_options)
    row_group_size = options.pop("row_group_size", None)  # (pq.write_table's, the writer's write_table takes it)
    with atomic_output(path, durable=durable) as fh, \
            pq.ParquetWriter(fh, arrow.schema, compression=compression, **options) as writer:
        writer.write_table(arrow, row_group_size=row_group_size)
        if summary is not None:
            # the footer's key-values only, not the Arrow schema (ARROW:schema), whose text then
            # stays the same in every file (validate_file checks a schema once per process); a
            # tool that copies footer key-values into the schema it writes puts the summary
            # there, where trace_metadata_pairs tells it is not ours (pyarrow's own read and
            # write drop it: the schema it reads back holds the ARROW:schema metadata only)
            writer.add_key_value_metadata({META_TRACE_METADATA.decode(): summary})
    return path


# A summary bigger than this is not written (a day file of thousands of hosts with per-trace
# values): the footer is read by every reader, the summary by the audit only
TRACE_METADATA_SUMMARY_LIMIT = 1 << 20


def first_frame_metadata(events: pl.LazyFrame, by: Sequence[str] = ("host",)) -> pl.LazyFrame:
    """host (or the `by` columns, as strings), key, value: the distinct job-metadata pairs of the
    events' traces' first frames (seq 0; a null pair or list gives none). The one definition: the
    audit's (baseline.fleet.model.metadata_pairs, and its targeted reads per job and per trace)
    and the footer summary's (trace_metadata_summary)."""
    import polars as pl

    # (distinct lists first: a host's traces mostly repeat one job's list, 0.5 -> 0.3 CPU s a
    # million traces)
    return (events.filter(pl.col("seq") == 0).select(*(pl.col(c).cast(pl.String) for c in by), "metadata").unique()
            .explode("metadata").drop_nulls("metadata")
            .select(*by, pl.col("metadata").struct.field("key"), pl.col("metadata").struct.field("value"))
            .unique())


def trace_metadata_summary(events: pa.Table, load_polars: bool = False) -> str | None:
    """The footer summary of an events table about to be written: the distinct (host, key,
    value) of its traces' first frames' `metadata` (first_frame_metadata: what the audit would
    decode from the column, which repeats the list on every frame of every trace; on a fleet
    day it is most of the events' decoded bytes, and the audit wants only these pairs).

    JSON: `rows` (the table's row count: a file whose rows were filtered or appended to by a
    tool that carried the footer along does not match), `start_ns` (least start_time) and
    `start_nulls` (a `since` that cuts the file needs the rows), `pairs` ([key, value]),
    `hosts` ({host: pair indexes}) when the table stores its host column, else `all` (pair
    indexes; the host is the file's dataset directory). None when there is no metadata column,
    a stored host is null, the summary would exceed TRACE_METADATA_SUMMARY_LIMIT, or the
    writing process has not loaded polars and `load_polars` is not set: the recorder and the
    fleet daemon's spool work on pyarrow alone (polars' import is ~1 CPU s), their files are
    rewritten by ingest, which sets it, and pyarrow's own kernels took ~2 us a row here
    (polars ~0.2)."""
    import sys

    names = events.column_names
    if not {"metadata", "seq", "start_time"} <= set(names) or ("polars" not in sys.modules and not load_polars):
        return None
    import polars as pl
    import pyarrow.compute as pc

    by_host = "host" in names
    if by_host and events["host"].null_count:
        return None
    frame = pl.from_arrow(events.select([c for c in ("host", "seq", "metadata") if c in names]))
    if not by_host:
        frame = frame.with_columns(pl.lit("", pl.String).alias("host"))
    index: dict[tuple, int] = {}
    by: dict[str, list[int]] = {}
    # (sorted: polars' unique() comes in any order, and the footer is part of the file's bytes,
    # which a seed makes identical run to run -- a fresh-clone CI's test_simulate saw it vary)
    pairs = first_frame_metadata(frame.lazy()).sort("host", "key", "value", nulls_last=True).collect()
    for host, key, value in pairs.iter_rows():
        by.setdefault(host, []).append(index.setdefault((key, value), len(index)))
    start = pc.min_max(events["start_time"].cast(pa.int64()))
    summary = {"rows": events.num_rows, "start_ns": start["min"].as_py(),
               "start_nulls": events["start_time"].null_count > 0, "pairs": [list(k) for k in index]}
    if by_host:
        summary["hosts"] = {h: sorted(ix) for h, ix in by.items()}
    else:
        summary["all"] = sorted(by.get("", []))
    text = json.dumps(summary, separators=(",", ":"))
    return text if len(text) <= TRACE_METADATA_SUMMARY_LIMIT else None


def trace_metadata_pairs(footer: pq.FileMetaData, path: str | os.PathLike,
                         since_ns: int | None = None) -> list[tuple[str, str | None, str | None]] | None:
    """(host, key, value) from an events file's footer summary (trace_metadata_summary): the
    pairs its first frames carry, as read from `path` (a host-less summary takes the host of
    the file's dataset directory) and, with `since_ns`, from its rows starting at or after
    it. None when the footer has no usable summary: none written, not ours (carried into the
    Arrow schema by a tool that rewrote the file), not matching the file's row count, or
    `since_ns` cuts the file; the caller then decodes the column."""
    kv = footer.metadata or {}
    text = kv.get(META_TRACE_METADATA)
    if text is None or META_TRACE_METADATA in _arrow_schema_keys(kv.get(b"ARROW:schema")):
        return None
    # (a summary we cannot read, or one not as trace_metadata_summary writes it, is one we do
    # not have: the column is decoded)
    try:
        summary = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(summary, dict) or summary.get("rows") != footer.num_rows:
        return None
    start = summary.get("start_ns")
    if since_ns is not None and (summary.get("start_nulls") is not False or not isinstance(start, int)
                                 or start < since_ns):
        return None
    pairs = summary.get("pairs")
    if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(v is None or isinstance(v, str) for v in p) for p in pairs):
        return None

    def indexed(ix: object) -> bool:
        return isinstance(ix, list) and all(type(i) is int and 0 <= i < len(pairs) for i in ix)

    hosts = summary.get("hosts")
    if hosts is not None:
        if not isinstance(hosts, dict) or not all(indexed(ix) for ix in hosts.values()):
            return None
        return [(h, *pairs[i]) for h, ix in hosts.items() for i in ix]
    host = partition_values(path).get("host")
    if host is None or not indexed(summary.get("all")):
        return None
    return [(host, *pairs[i]) for i in summary["all"]]


@functools.lru_cache(maxsize=64)
def _arrow_schema_keys(serialized: bytes | None) -> frozenset[bytes]:
    """The metadata keys of a footer's serialized Arrow schema (ARROW:schema); cached, since a
    dataset's files share a few schema texts."""
    if not serialized:
        return frozenset()
    import base64

    try:
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(serialized)))
    except (ValueError, pa.ArrowException):
        return frozenset()
    return frozenset(schema.metadata or {})


def write_table_batches(
    batches: Iterable[pa.Table | pl.DataFrame],
    path: str | os.PathLike,
    table: str,
    extra_metadata: dict[str, str] | None = None,
    compression: str = "zstd",
    *,
    durable: bool = True,
    parquet_options: dict | None = None,
) -> Path:
    """`write_table` for a table produced (or sliced) in pieces: each batch is conformed and
    written as one or more row groups as it comes, so the whole table never exists as Arrow at
    once. Same atomicity (temp file + rename); an empty iterable writes an empty table.
    `parquet_options` as for write_table.

    The next batch is conformed (converted to Arrow, cast) in a background thread while the
    writer encodes and compresses this one: both release the GIL, and on millions of rows
    (4M audit findings: ~1 s of conversion, ~2 s of encoding) the conversion then costs no wall
    time. One conformed batch ahead is all it holds more."""
    import pyarrow.parquet as pq

    from tracer.pools import thread_pool

    path = Path(path)
    schema = _table_schema(table).with_metadata(_metadata(table, extra_metadata))
    it = iter(batches)

    def conform_next() -> pa.Table | None:
        batch = next(it, None)
        return None if batch is None else conform(batch, table).replace_schema_metadata(schema.metadata)

    with thread_pool(1, "conform-ahead") as pool, \
            atomic_output(path, durable=durable) as fh, \
            pq.ParquetWriter(fh, schema, compression=compression, **encoding_options(schema, parquet_options)) as writer:
        pending = pool.submit(conform_next)
        while (arrow := pending.result()) is not None:
            pending = pool.submit(conform_next)
            writer.write_table(arrow)
            del arrow  # (not held while the next one is waited for)
    return path


# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------
def parquet_files(paths: str | os.PathLike | Iterable[str | os.PathLike], table: str | None = None) -> list[Path]:
    """Expand files and directories (recursively) into a sorted list of .parquet files.

    Hidden files (temp files of writes in progress) are skipped. Each path is first checked by
    tracer.inputs.input_path, which the command lines also run before importing pyarrow. A
    dataset root holding `table` (``<dir>/<table>/date=*``) gives that table's files, as
    `dataset_files` lists them (a dataset's other tables are no `table`).
    """
    files: list[Path] = []
    for p in input_paths(paths):
        if p.is_dir():
            found = _dataset_table_files(p, table) or parquet_files_under(p)
            if not found:
                raise TracebaseError(f"{p}: directory holds no .parquet files")
            files.extend(found)
        else:
            files.append(p)
    return files


def _dataset_table_files(directory: Path, table: str | None) -> list[Path]:
    """`table`'s files when `directory` is a dataset root holding it, else none. A directory
    holding date partitions of its own is a table, not a dataset root, even with a `table`
    directory inside (another dataset copied or simulated into it): its own partitions, and
    the refusal naming the directories beside them (table_partition_files) -- the nested
    dataset's rows were exported in its place, with exit 0."""
    if table is None or not (directory / table).is_dir():
        return []
    with os.scandir(directory) as it:
        if any(fnmatchcase(e.name, "date=*") for e in it):
            return table_partition_files(directory)
    with os.scandir(directory / table) as it:
        if not any(fnmatchcase(e.name, "date=*") for e in it):
            return []
    return table_partition_files(directory / table)


def scan(paths: str | os.PathLike | Iterable[str | os.PathLike], table: str) -> pl.LazyFrame:
    """Validated lazy scan of one table over files/directories; columns in schema order.

    Files older than a column (ADDED_COLUMNS) are scanned apart and given it as typed nulls:
    polars inserts missing columns relative to the first file only."""
    files = parquet_files(paths, table)
    added = ADDED_COLUMNS.get(table, frozenset())
    older: list[Path] = []
    current: list[Path] = []
    stored = False  # does any file store a partition key column itself (see scan_parquet_files)
    for f in files:
        names = set(validate_file(f, table).schema.names)
        stored = stored or not names.isdisjoint(PARTITION_COLUMNS)
        (current if added <= names else older).append(f)
    import polars as pl

    names = _table_schema(table).names
    frames = [_scan_files(current, names, table, stored)] if current else []
    if older:
        types = polars_schema(table)
        frames.append(
            _scan_files(older, [n for n in names if n not in added], table, stored).with_columns(
                pl.lit(None, dtype=types[n]).alias(n) for n in added
            ).select(names)
        )
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical_relaxed")


def _scan_files(files: list[Path], names: list[str], table: str, stored: bool | None = None) -> pl.LazyFrame:
    return scan_parquet_files(files, table, names, partitions_stored=stored)


_PATH_COLUMN = "__tracebase_file"
# Files handed to polars scans in this process: a scan that meets corrupt pages fails without
# saying which file it was reading (see unreadable_file_error).
_SCANNED: dict[str, None] = {}
_SCANNED_KEPT = 1_000_000
# Words of polars'/Arrow's messages for data that does not decode (page headers, compression).
_CORRUPTION_WORDS = ("parquet", "thrift", "decompress", "corrupt", "out of specification", "zstd", "snappy",
                     "lz4", "gzip", "brotli", "page header", "unexpected end",
                     # polars' read of a file cut short after its footer was read ("failed to fill
                     # whole buffer": a counters file truncated while the audit ran, battery 50)
                     "failed to fill whole buffer")


def unreadable_file_error(exc: BaseException, under: str | os.PathLike | None = None) -> SchemaError | None:
    """The SchemaError naming the first scanned file whose data does not decode, when `exc` is
    a read failing on corrupt Parquet pages (a torn copy, a bit flip, a truncated upload whose
    footer survived); None when `exc` is something else or every scanned file reads whole.

    The footer of every file was validated before the scan, so this only costs on the error
    path: the files scanned so far (under `under`, when given) are read in full with pyarrow,
    the most recently scanned first, until one fails."""
    text = str(exc).lower()
    library = type(exc).__module__.split(".", 1)[0]
    if library not in ("polars", "pyarrow") and not (isinstance(exc, OSError) and exc.filename is None):
        return None
    if out_of_resources(exc):  # memory or threads ran out: no file's fault (the command line says so)
        return None
    # a system call's error (polars words one "Too many open files (os error 24): PATH"): the
    # path, not the data, held "parquet"; reading the files again to find a bad page would only
    # fail the same way (EMFILE importing pyarrow.parquet: a traceback, CI 139)
    if (isinstance(exc, OSError) and exc.errno is not None) or "(os error " in text:
        return None
    if not any(word in text for word in _CORRUPTION_WORDS):
        return None
    prefix = os.path.join(os.path.abspath(under), "") if under is not None else ""
    for path in reversed(list(_SCANNED)):
        if prefix and not os.path.abspath(path).startswith(prefix):
            continue  # another dataset this process read earlier
        error = unreadable_data_error(path)
        if error is not None:
            return error
    return None


def unreadable_data_error(path: str | os.PathLike) -> SchemaError | None:
    """The SchemaError naming `path` when its data does not decode in full (data_read_failure),
    else None (a file gone meanwhile included: its reader says so)."""
    found = data_read_failure(path)
    if found is None or isinstance(found, FileNotFoundError):
        return None
    if out_of_resources(found):  # the machine ran out, not the file: the command line says so
        return None
    return SchemaError(path, None, "readable Parquet data", f"unreadable data ({' '.join(str(found).split())})")


def data_read_failure(path: str | os.PathLike) -> Exception | None:
    """The error reading a Parquet file's data in full raises (pyarrow, UTF-8 checked too, as
    polars checks it), or None when every page decodes."""
    import pyarrow.parquet as pq

    try:
        with open(path, "rb") as fh:
            pq.ParquetFile(fh).read(use_threads=False).validate(full=True)
    except (pa.ArrowException, OSError) as found:
        return found
    return None


def scan_parquet_files(files: Sequence[str | os.PathLike], table: str, names: Sequence[str] | None = None,
                       partitions_stored: bool | None = None) -> pl.LazyFrame:
    """Lazy scan of already validated files of one table, columns `names` (default: all) in order.

    Columns missing from a file read as typed nulls (the table's schema is given to polars, so
    this holds whichever file comes first); partition keys (PARTITION_COLUMNS) missing from a
    dataset file are restored from its directory name (host=<h>), and a file that still has
    them keeps its own values. Dictionary-encoded strings read as strings.

    partitions_stored=False: the caller read the footers and no file stores a partition key;
    then, for plain dataset paths, polars' hive partitioning gives the key (one value per file)
    instead of a per-row path string and regex (about 2 s per 10M rows)."""
    import polars as pl

    paths = [str(f) for f in files]
    for p in paths:  # most recent last: a long-lived process (an Airflow worker) scans many datasets
        _SCANNED.pop(p, None)
        _SCANNED[p] = None
    while len(_SCANNED) > _SCANNED_KEPT:
        del _SCANNED[next(iter(_SCANNED))]
    for p in paths:
        try:
            p.encode()
        except UnicodeEncodeError:  # polars takes UTF-8 paths only
            raise TracebaseError(f"{shown(p)}: file name is not valid UTF-8; rename the file to read it") from None
    schema = polars_schema(table)
    names = list(names or schema.names())
    restore = [c for c in PARTITION_COLUMNS if c in names and any(f"/{c}=" in p for p in paths)]
    # (the hive path adds a `date` column from date=D too: not for a table with a date column)
    if (restore and partitions_stored is False and "date" not in schema
            and all(_plain_partition_path(p) for p in paths)):
        hive = pl.scan_parquet(
            paths,
            glob=False,  # the listed files by name: a host named gpu[0] is no pattern
            schema=pl.Schema({k: v for k, v in schema.items() if k not in PARTITION_COLUMNS}),
            missing_columns="insert",
            extra_columns="ignore",
            cast_options=pl.ScanCastOptions(categorical_to_string="allow", datetime_cast="convert-timezone"),
            hive_partitioning=True,
            hive_schema={"date": pl.String, **{c: schema[c] for c in PARTITION_COLUMNS}},
        )
        return hive.select(names)
    lf = pl.scan_parquet(
        paths,
        glob=False,
        schema=schema,
        missing_columns="insert",
        extra_columns="ignore",
        cast_options=pl.ScanCastOptions(categorical_to_string="allow", datetime_cast="convert-timezone"),
        include_file_paths=_PATH_COLUMN if restore else None,
    )
    if restore:
        lf = lf.with_columns(
            pl.coalesce(pl.col(c), pl.col(_PATH_COLUMN).str.extract(rf"/{c}=([^/]*)/[^/]*$")).alias(c) for c in restore
        )
    return lf.select(names)


def _plain_partition_path(path: str) -> bool:
    """.../date=D/host=H/<file>, and no other "=" in the path: polars' hive partitioning reads
    every key=value directory and URL-decodes values, so only such paths give the same host.
    Nor a glob character anywhere: polars' hive partitioning starts from the path before the
    first one (a host named gpu* was a schema error, gpu[0] read other hosts' files)."""
    parts = path.split("/")
    return (len(parts) >= 3 and parts[-3].startswith("date=") and parts[-2].startswith("host=")
            and path.count("=") == 2 and "%" not in parts[-2] and not any(c in path for c in "*?[]{}"))


def read(paths: str | os.PathLike | Iterable[str | os.PathLike], table: str) -> pl.DataFrame:
    return scan(paths, table).collect()


def scan_events(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> pl.LazyFrame:
    return scan(paths, "events")


def read_events(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> pl.DataFrame:
    return scan(paths, "events").collect()


def read_arrow(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    table: str,
    columns: Sequence[str] | None = None,
    dictionary_columns: Sequence[str] = (),
) -> pa.Table:
    """Validated read of a table into one Arrow table, for hot numeric paths.

    String columns named in `dictionary_columns` come back dictionary-encoded exactly as
    Parquet stores them (no string hashing); chunks may carry different dictionaries
    (``combine_chunks`` unifies them), so a caller can work on integer codes (baseline.run.diff
    does, on millions of events).
    """
    import pyarrow.parquet as pq

    files = parquet_files(paths, table)
    schema = _table_schema(table)
    names = list(columns or schema.names)
    parts = []
    for f in files:
        meta = validate_file(f, table)
        present = set(meta.schema.names)
        restored = partition_values(f)
        with open_regular(f, "a Parquet file") as fh:  # Python opens any file name (see validate_file)
            # ParquetFile, not pq.read_table: that one goes through pyarrow.dataset, whose
            # import pulls in pandas (~0.25 s of CPU and ~30 MiB for every reading command).
            part = pq.ParquetFile(
                fh, metadata=meta, read_dictionary=[c for c in dictionary_columns if c in names and c in present]
            ).read(columns=[n for n in names if n in present])
        for name in names:  # a column added by a later schema version: null in older files
            if name not in present:
                field = schema.field(name)
                if name in restored:  # a partition key: the directory names it (host=<h>)
                    column = pa.array([restored[name]] * part.num_rows, pa.string())
                    if name in dictionary_columns:
                        column = column.dictionary_encode()
                    part = part.append_column(pa.field(name, column.type), column)
                else:
                    part = part.append_column(field, pa.nulls(part.num_rows, field.type))
        parts.append(_utc_timestamps(_one_string_type(part.select(names), dictionary_columns), schema))
    return pa.concat_tables(parts, promote_options="permissive")


def _utc_timestamps(part: pa.Table, schema: pa.Schema) -> pa.Table:
    """A file's timestamp columns in the table's own type: a zone named otherwise but UTC
    (`UTC_ZONES`, validated) or none is the same instants, relabelled (no data touched)."""
    for i, field in enumerate(part.schema):
        want = schema.field(field.name).type
        if pa.types.is_timestamp(field.type) and not field.type.equals(want):
            part = part.set_column(i, pa.field(field.name, want, field.nullable), part.column(i).cast(want))
    return part


def _one_string_type(part: pa.Table, dictionary_columns: Sequence[str]) -> pa.Table:
    """Every file's columns in one Arrow type: a column stored dictionary-typed (a frame polars
    wrote with a Categorical) decoded unless asked for as a dictionary, one asked for encoded
    where the file stored plain values (a day file's `host`, beside partitions whose `host` the
    path gives, encoded); the files' tables then concatenate (a dictionary beside a plain string
    column was "Unable to merge")."""
    for i, f in enumerate(part.schema):
        want = f.name in dictionary_columns
        if pa.types.is_dictionary(f.type) and not want:
            part = part.set_column(i, f.name, part.column(i).cast(f.type.value_type))
        elif want and not pa.types.is_dictionary(f.type):
            part = part.set_column(i, f.name, part.column(i).dictionary_encode())
    return part


def traces_of(events: pl.LazyFrame | pl.DataFrame) -> pl.LazyFrame:
    """The traces view: one row per trace_id with the trace-level columns."""
    import polars as pl

    lf = events.lazy()
    return lf.group_by("trace_id", maintain_order=True).agg(
        [pl.col(f.name).first() for f in TRACE_FIELDS[1:]]
    )


def read_traces(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> pl.DataFrame:
    return traces_of(scan_events(paths)).collect()


def file_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The tracebase.* key-value metadata of a file, without the prefix."""
    return footer_metadata(read_footer(path))


def read_footer(path: str | os.PathLike) -> pq.FileMetaData:
    """A Parquet file's footer (row counts, row groups, key-value metadata), read once: a caller
    wanting both the rows and the tracebase.* metadata takes them from it (footer_metadata)
    rather than opening and parsing the file twice."""
    import pyarrow.parquet as pq

    with open_regular(path, "a Parquet file") as fh:
        return pq.read_metadata(fh)


def footer_metadata(footer: pq.FileMetaData) -> dict[str, str]:
    """The tracebase.* key-value metadata of a footer read by read_footer, without the prefix."""
    return {
        k.decode().removeprefix("tracebase."): v.decode()
        for k, v in (footer.metadata or {}).items()
        if k.startswith(b"tracebase.")
    }


def dataset_files(root: str | os.PathLike, table: str, since: str | None = None) -> list[Path]:
    """Files of `table` under a dataset root, optionally only partitions with date >= since."""
    base = Path(root) / table
    if not base.is_dir():
        return []
    return table_partition_files(base, since[:10] if since else None)


# Dataset partition keys that are also table columns. Files in a dataset do not store them: the
# directory name (host=<h>) does. A column that is both in the files and a hive key makes pandas
# and pyarrow.parquet refuse the dataset (string vs dictionary); without it pandas, pyarrow,
# DuckDB and polars all read a table directory with hive partitioning. Our readers restore the
# column from the path (validate_file, scan, read_arrow) and accept files that still have it.
PARTITION_COLUMNS = ("host",)

# The hive keys' types. Directory names carry none, so other readers infer one: a fleet whose
# host names are all digits ("0042") reads as integers with the leading zeros lost, and `date`
# is a string to pyarrow but a date to polars and DuckDB. Passing these pins both
# (docs/airflow.md shows each reader's argument; our own readers already keep host a string).
HIVE_KEYS = pa.schema([("date", pa.date32()), ("host", pa.string())])


def partition_path(root: str | os.PathLike, table: str, date: str, host: str, name: str) -> Path:
    return Path(root) / table / f"date={date}" / f"host={host}" / name


# The day layout (see the module docstring): version 1 is date=D/host=H/part-*.parquet alone.
DATASET_LAYOUT_VERSION = 2
DAY_TABLES = ("events",)
DAY_FILE_PREFIX = "day-"
META_LAYOUT_DAY = "day"  # tracebase.layout of a day file


def day_file_path(root: str | os.PathLike, table: str, date: str, index: int) -> Path:
    return Path(root) / table / f"date={date}" / f"{DAY_FILE_PREFIX}{index:04d}.parquet"


def is_day_file(path: str | os.PathLike) -> bool:
    """A day-layout file: <table>/date=D/day-NNNN.parquet (whole hosts, host column stored)."""
    p = Path(path)
    return p.name.startswith(DAY_FILE_PREFIX) and p.name.endswith(".parquet") and p.parent.name.startswith("date=")


def encode_day_snapshots(snapshots: dict[str, Iterable[str]]) -> str:
    """A day file's ingest manifest ({host: snapshot ids "<host>/snap-<time>-<seq>"}) as footer
    text. A host-day is up to 17,280 snapshot ids (one per 5 s): as JSON a day file of 250 hosts
    carried ~100 MiB of footer, zstd-compressed ~30 MiB, which every reader of the file parses.
    Here each host's ids are (time in ms, sequence number) pairs, sorted and delta-coded as
    int64 before zstd (a 5 s cadence compresses to a few bytes a snapshot); an id of another
    shape is kept as text. Decoded by `day_snapshots_of`."""
    import base64

    import numpy as np

    hosts, counts, other = [], [], {}
    times: list[int] = []
    seqs: list[int] = []
    for host, ids in sorted(snapshots.items()):
        pairs = []
        for sid in ids:
            h, _, name = sid.partition("/")
            parsed = parse_snapshot_name(name) if h == host else None
            # only names that print back exactly as read (milliseconds, no leading zeros in seq)
            if parsed is not None and _snapshot_name(*parsed) == name:
                pairs.append(((parsed[0] - _EPOCH) // dt.timedelta(milliseconds=1), parsed[1]))
            else:
                other.setdefault(host, []).append(sid)
        pairs.sort()
        hosts.append(host)
        counts.append(len(pairs))
        times.extend(t for t, _ in pairs)
        seqs.extend(q for _, q in pairs)
    t = np.asarray(times, np.int64)
    q = np.asarray(seqs, np.int64)
    head = json.dumps({"hosts": hosts, "counts": counts, "other": {h: sorted(v) for h, v in other.items()}},
                      separators=(",", ":")).encode()
    raw = (len(head).to_bytes(8, "little") + head + np.diff(t, prepend=0).tobytes()
           + np.diff(q, prepend=0).tobytes())
    return base64.b64encode(pa.compress(raw, "zstd", asbytes=True)).decode() + f":{len(raw)}"


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _snapshot_name(when: dt.datetime, seq: int) -> str:
    return f"snap-{when.strftime('%Y%m%dT%H%M%S')}.{when.microsecond // 1000:03d}Z-{seq}"


def day_snapshots_of(text: str | None, hosts: Iterable[str] | None = None,
                     source: str = "<day file>") -> dict[str, frozenset[str]]:
    """The {host: snapshot ids} of a day file's `tracebase.day_snapshots` ({} when absent);
    only `hosts` when given (ingest asks for one host: the others' ids are never formatted).
    A text that does not decode raises SchemaError naming `source` (the file): a footer
    written by other code, or damaged, failed as a base64/zstd/JSON traceback in ingest."""
    if not text:
        return {}
    try:
        return _decode_day_snapshots(text, hosts)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, pa.ArrowException) as exc:
        # (binascii.Error and json's errors are ValueErrors; a short buffer is numpy's ValueError)
        raise SchemaError(source, None, "a tracebase.day_snapshots manifest (base64 of zstd, ':' and its size)",
                          f"one that does not decode ({type(exc).__name__}: {exc})") from None


def _decode_day_snapshots(text: str, hosts: Iterable[str] | None) -> dict[str, frozenset[str]]:
    import base64

    import numpy as np

    body, _, size = text.rpartition(":")
    raw = pa.decompress(base64.b64decode(body), int(size), "zstd", asbytes=True)
    n = int.from_bytes(raw[:8], "little")
    head = json.loads(raw[8:8 + n])
    if len(raw) != 8 + n + 16 * sum(head["counts"]):  # numpy would read past the ids or stop short silently
        raise ValueError(f"{len(raw)} bytes for {sum(head['counts'])} ids")
    total = sum(head["counts"])
    t = np.cumsum(np.frombuffer(raw, np.int64, total, 8 + n))
    q = np.cumsum(np.frombuffer(raw, np.int64, total, 8 + n + 8 * total))
    out: dict[str, frozenset[str]] = {}
    at = 0
    wanted = None if hosts is None else set(hosts)
    for host, count in zip(head["hosts"], head["counts"], strict=True):
        if wanted is not None and host not in wanted:
            at += count
            continue
        out[host] = frozenset(
            f"{host}/{_snapshot_name(_EPOCH + dt.timedelta(milliseconds=ms), int(seq))}"
            for ms, seq in zip(t[at:at + count].tolist(), q[at:at + count].tolist(), strict=True)
        ) | frozenset(head["other"].get(host, ()))
        at += count
    return out


def partition_values(path: str | os.PathLike) -> dict[str, str]:
    """Partition-key columns a dataset file's directory names give it ({"host": h} for
    .../date=D/host=h/part-*.parquet; {} for a file outside a dataset)."""
    out: dict[str, str] = {}
    for part in Path(path).parent.parts[-2:]:
        key, sep, value = part.partition("=")
        if sep and key in PARTITION_COLUMNS:
            out[key] = value
    return out


def write_partition(
    data: pa.Table | pl.DataFrame, root: str | os.PathLike, table: str, date: str, host: str, name: str, **kwargs
) -> Path:
    """`write_table` into a dataset partition, without the columns the path holds (PARTITION_COLUMNS)."""
    return write_table(data, partition_path(root, table, date, host, name), table,
                       omit_columns=PARTITION_COLUMNS, **kwargs)


# --------------------------------------------------------------------------------------------
# counter_buckets files (see COUNTER_BUCKETS)
# --------------------------------------------------------------------------------------------
def counter_buckets_path(counters_file: str | os.PathLike) -> Path | None:
    """<root>/counter_buckets/date=D/host=H/<name> for a dataset counters file
    <root>/counters/date=D/host=H/<name>; None for a file outside that layout."""
    p = Path(counters_file)
    parts = p.parts
    if (len(parts) < 5 or parts[-4] != "counters" or not parts[-3].startswith("date=")
            or not parts[-2].startswith("host=")):
        return None
    return p.parents[3] / "counter_buckets" / parts[-3] / parts[-2] / parts[-1]


def footer_fingerprint(path: str | os.PathLike) -> tuple[int, str]:
    """(size, hash of the Parquet footer) of a file: the footer holds the row count, the schema,
    every column chunk's offset and size and the statistics, so a file rewritten with other
    rows (or renamed over) does not keep it. About 20 us, no footer parsing. ("", size) when
    the file does not end like Parquet."""
    import hashlib

    # raw descriptor calls, the footer and its tail in one pread: an audit fingerprints 10,000s
    # of counters files on a thread beside CPU-bound ones, and each system call gives the GIL
    # back and waits to take it again (a Python file object made ~12 of them a file, this 4)
    fd, st = regular_descriptor(path, "a Parquet file")
    try:
        size = st.st_size
        if size < 12:
            return size, ""
        chunk = os.pread(fd, min(size, _FOOTER_GUESS_BYTES), max(0, size - _FOOTER_GUESS_BYTES))
        tail = chunk[-8:]
        length = int.from_bytes(tail[:4], "little")
        if len(tail) < 8 or tail[4:] != b"PAR1" or length + 12 > size:
            return size, ""
        footer = (chunk[len(chunk) - 8 - length:len(chunk) - 8] if length + 8 <= len(chunk)
                  else os.pread(fd, length, size - 8 - length))
    finally:
        os.close(fd)
    return size, hashlib.blake2b(footer + tail, digest_size=16).hexdigest()


# the bytes footer_fingerprint reads from a file's end first: a counters file's footer is 3-6 KiB
_FOOTER_GUESS_BYTES = 16 << 10


def counted_delta(column: str) -> pl.Expr:
    """A counters delta (`invocations`, `failures`, an errno count) as every reader counts it:
    from 0 up. A delta below 0 is a counter reset (a daemon restarted under an exporter that
    ships cumulative counts as new - old): the calls since the restart are unknown, and summed,
    the negative delta took a bucket's calls below its errors (a failure rate over 1 or under 0)
    and a week's totals below what the probes counted. The one definition the summaries' writer,
    the audit's bucketing (and its removal of repeated snapshots) and the coverage report share."""
    import polars as pl

    return pl.col(column).clip(lower_bound=0)


def bucket_cell_aggs(calls: str = "invocations") -> list[pl.Expr]:
    """How the rows of one (host, probe, bucket) cell reduce (see COUNTER_BUCKETS): the one
    definition the summaries' writer, the audit's bucketing of snapshot rows and its merging of
    several summaries of a host share, so the two paths give the same tables. `calls`: the
    column summed into n, each row's value counted by `counted_delta`, as the errno counts'
    non-positive ones are dropped."""
    import polars as pl

    return [counted_delta(calls).sum().alias("n"), pl.col("layer").first(), pl.col("vendor").drop_nulls().first(),
            pl.col("kernel_release").drop_nulls().last()]


def counter_buckets_of(counters: pa.Table | pl.DataFrame, host: str | None = None) -> pl.DataFrame:
    """Counters rows reduced to the counter_buckets table (see COUNTER_BUCKETS for the rules);
    `host` for rows without a host column (a dataset file: the host is its directory)."""
    import polars as pl

    df = counters if isinstance(counters, pl.DataFrame) else pl.from_arrow(counters)
    if "host" not in df.columns or host is not None:
        df = df.with_columns(pl.lit(host, pl.String).alias("host"))
    types = polars_schema("counters")
    df = df.with_columns(pl.lit(None, types[c]).alias(c) for c in ("layer", "vendor", "kernel_release", "errno_counts")
                         if c not in df.columns)
    key = ["host", "probe", "bucket"]
    # a snapshot delivered twice counts once (SNAPSHOT_KEY): one file's rows, in memory at write time
    lf = (df.lazy().unique(list(SNAPSHOT_KEY), keep="first", maintain_order=True)
          .with_columns(snapshot_bucket()))
    calls = lf.group_by(key, maintain_order=True).agg(bucket_cell_aggs())
    errors = (
        lf.filter(pl.col("errno_counts").list.len() > 0).select(*key, "errno_counts")
        .explode("errno_counts").unnest("errno_counts")
        .filter(pl.col("errno").is_not_null() & (pl.col("count") > 0))
        .group_by(*key, "errno").agg(pl.col("count").sum())
        .sort(*key, "errno")
        .group_by(key, maintain_order=True).agg(pl.struct("errno", "count").alias("errno_counts"))
    )
    out = calls.join(errors, on=key, how="left", maintain_order="left")
    return out.select(COUNTER_BUCKETS.names).collect()


def write_counter_buckets(counters_file: str | os.PathLike, data: pa.Table | pl.DataFrame | None = None, *,
                          durable: bool = True, placed_as: str | os.PathLike | None = None) -> Path | None:
    """Write the counter_buckets file of a dataset counters file that is in place (its writer
    calls this right after renaming it there; `data`: the rows just written, else they are read
    back). The footer records the counters file's name, size, footer hash, row count and first
    snapshot time; a crash before the rename leaves only a hidden temporary (write_table), and a
    counters file rewritten later no longer matches, so a reader never takes a stale summary.
    None (nothing written) for a file outside the dataset layout or one storing a host column
    that is not the directory's host throughout. `placed_as`: the dataset path the file is about
    to be renamed to (compaction writes it in a staging directory first; same bytes, same name)."""
    import polars as pl
    import pyarrow.parquet as pq

    placed = Path(placed_as if placed_as is not None else counters_file)
    dest = counter_buckets_path(placed)
    if dest is None:
        return None
    meta = validate_file(counters_file, "counters")
    names = meta.schema.to_arrow_schema().names  # (ParquetSchema.names are the leaf columns)
    size, digest = footer_fingerprint(counters_file)
    host = partition_values(placed)["host"]
    if data is None:
        with open_regular(counters_file, "a Parquet file") as fh:
            data = pq.read_table(fh, columns=[c for c in COUNTERS.names if c in names])
    if "host" in names:
        # a file storing its host column: its rows keep their own host (null: the directory's);
        # summarised only when that is the directory's host throughout
        stored = pl.Series(data["host"]) if not isinstance(data, pl.DataFrame) else data["host"]
        if not stored.drop_nulls().eq(host).all():
            return None
    buckets = counter_buckets_of(data, host=host)
    # the first bucket: a reader filtering snapshots by a time inside a bucket can tell whether
    # the filter would drop any row of this file
    first = buckets["bucket"].dt.epoch("ns").min() if buckets.height else None
    # the file's snapshot times: a reader combining several files of a host can tell whether a
    # snapshot may be in two of them (their ranges overlap), which summaries cannot undo
    times = (data["snapshot_time"] if isinstance(data, pl.DataFrame) else pl.Series(data["snapshot_time"])).dt.epoch("ns")
    span = [times.min(), times.max()] if len(times) else None
    source = {"name": placed.name, "bytes": size, "footer": digest, "rows": meta.num_rows,
              "bucket": BUCKET_WIDTH, "bucket_of": BUCKET_OF, "first_bucket_ns": first, "unique": list(SNAPSHOT_KEY), "snapshots_ns": span}
    arrow = conform(buckets, "counter_buckets").drop_columns(list(PARTITION_COLUMNS))
    arrow = arrow.replace_schema_metadata(_metadata("counter_buckets", None))
    # the source goes into the file's key-values only, not into the Arrow schema (ARROW:schema):
    # that text is then the same in every summary, and readers check it once (counter_buckets_for)
    with atomic_output(dest, durable=durable) as fh, pq.ParquetWriter(
        fh, arrow.schema, compression="zstd", **encoding_options(arrow.schema)
    ) as writer:
        writer.write_table(arrow)
        writer.add_key_value_metadata({META_SOURCE.decode(): json.dumps(source)})
    return dest


def counter_buckets_for(counters_file: str | os.PathLike) -> tuple[Path, dict] | None:
    """The counter_buckets file of a counters file and its recorded source, when it exists, is
    a counter_buckets table of this version and matches the counters file as it is now (name,
    size, footer hash, bucket width); else None (read the counters file itself). Never raises:
    a bad or stale summary is only not used.

    Cheap, since a fleet-day has 10,000s of them: the summary's footer key-values are read by
    polars (~25 us, no Python schema objects), and the full footer check (validate_file) runs
    once per distinct Arrow schema text; the counters file is not parsed at all (its footer
    bytes are hashed)."""
    import polars as pl

    dest = counter_buckets_path(counters_file)
    if dest is None:
        return None
    try:
        if not dest.is_file():  # (a FIFO or a directory there is no summary)
            return None
        kv = pl.read_parquet_metadata(str(dest))
        if (kv.get(META_TABLE.decode()) != "counter_buckets"
                or kv.get(META_VERSION.decode()) != str(SCHEMA_VERSION)):
            return None
        arrow = kv.get("ARROW:schema")
        if arrow not in _SUMMARY_SCHEMAS:
            validate_file(dest, "counter_buckets")
            _SUMMARY_SCHEMAS.add(arrow)
        source = json.loads(kv.get(META_SOURCE.decode(), "null"))
        size, digest = footer_fingerprint(counters_file)
    except Exception:  # noqa: BLE001 (unreadable, not Parquet, another table: not a usable summary)
        return None
    # `unique`: written by the rule that counts a repeated snapshot once (earlier summaries
    # counted it twice: not used, the counters file is read instead); `bucket_of`: by the
    # bucket rule of today (earlier summaries put an interval ending on a boundary after it)
    if not (isinstance(source, dict) and source.get("name") == Path(counters_file).name and digest
            and source.get("bytes") == size and source.get("footer") == digest
            and source.get("bucket") == BUCKET_WIDTH and source.get("bucket_of") == BUCKET_OF
            and source.get("unique") == list(SNAPSHOT_KEY)):
        return None
    return dest, source


_SUMMARY_SCHEMAS: set[str | None] = set()  # ARROW:schema texts of counter_buckets files that passed


def metadata_list(d: dict[str, str] | None) -> list[dict[str, str]] | None:
    """A dict as the value of a `metadata` cell (sorted list of {key, value})."""
    return None if d is None else [{"key": str(k), "value": str(v)} for k, v in sorted(d.items())]


def metadata_dict(pairs: Sequence | None) -> dict[str, str]:
    """Back from a `metadata` cell as polars returns it (list of {key, value} structs)."""
    if hasattr(pairs, "to_list"):  # a polars Series
        pairs = pairs.to_list()
    if not pairs:
        return {}
    out = {}
    for item in pairs:
        if isinstance(item, dict):
            out[item["key"]] = item["value"]
        else:
            out[item[0]] = item[1]
    return out


def dumps_json(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


# --------------------------------------------------------------------------------------------
# application-labelled failures (baseline.pipeline.nccl) and the weekly coverage report (baseline.pipeline.coverage)
# --------------------------------------------------------------------------------------------
APP_FAILURES = pa.schema(
    [
        pa.field("time", pa.timestamp("ns", tz="UTC")),  # null when the log line has no timestamp
        pa.field("host", pa.string()),
        pa.field("pid", pa.int32()),
        pa.field("tid", pa.int32()),
        pa.field("device", pa.string()),  # NCCL's [dev] field (CUDA device index)
        pa.field("job_id", pa.string()),
        pa.field("verb", pa.string(), nullable=False),  # ibv_* call that failed
        pa.field("errno", pa.string()),  # symbolic, null when the line names none
        pa.field("message", pa.string()),
        pa.field("source", pa.string()),  # file:line it was parsed from
    ]
)

COVERAGE_PROBES = pa.schema(
    [
        pa.field("week", pa.string(), nullable=False),  # ISO week, e.g. 2026-W48
        pa.field("probe", pa.string(), nullable=False),
        pa.field("layer", pa.string()),
        pa.field("invocations", pa.int64()),
        pa.field("failures", pa.int64()),
        pa.field("failure_rate", pa.float64()),
        pa.field("prev_invocations", pa.int64()),
        pa.field("prev_failures", pa.int64()),
        pa.field("failures_change_pct", pa.float64()),  # null when the previous week had none
        pa.field("trend", pa.string()),  # rising | steady | falling | new | gone | quiet
        pa.field("hosts_live", pa.int64()),
        pa.field("never_fired", pa.bool_()),
        pa.field("errno_counts", ERRNO_COUNTS_TYPE),
    ]
)

COVERAGE_GROUPS = pa.schema(
    [
        pa.field("week", pa.string(), nullable=False),
        pa.field("kernel_release", pa.string()),
        pa.field("vendor", pa.string()),
        pa.field("probe", pa.string(), nullable=False),
        pa.field("hosts", pa.int64()),  # hosts in the group
        pa.field("hosts_live", pa.int64()),  # hosts reporting the probe attached
        pa.field("hosts_not_attached", pa.int64()),  # hosts reporting it not attached (live=false)
        pa.field("status", pa.string()),  # live | partial | missing | gated | no data
        pa.field("resolution", pa.string()),  # namespace-gate resolution, e.g. ops.reg_user_mr -> bnxt_re_reg_user_mr
    ]
)

COVERAGE_APP = pa.schema(
    [
        pa.field("week", pa.string(), nullable=False),
        pa.field("verb", pa.string(), nullable=False),
        pa.field("operation", pa.string()),
        pa.field("category", pa.string()),  # probed | cleanup | read-only | not mapped | not probed
        pa.field("kernel_counterparts", pa.string()),
        pa.field("failures", pa.int64()),
        pa.field("share", pa.float64()),
        # added in schema version 2: failures whose kernel counterpart a live probe saw (counted a
        # failure on the same host within a snapshot interval); null in older files
        pa.field("seen", pa.int64()),
    ]
)

TABLES.update(
    {
        "app_failures": APP_FAILURES,
        "coverage_probes": COVERAGE_PROBES,
        "coverage_groups": COVERAGE_GROUPS,
        "coverage_app": COVERAGE_APP,
    }
)

# --------------------------------------------------------------------------------------------
# good-trace baseline model (baseline.fleet.model): one long table, `record` says which part a
# row belongs to; the JSON header (model kind, model_version, params) is in the footer key
# tracebase.model.
# --------------------------------------------------------------------------------------------
BASELINE_MODEL = pa.schema(
    [
        pa.field("record", pa.string(), nullable=False),  # edge | error | chain | host
        pa.field("operation", pa.string()),
        pa.field("parent", pa.string()),  # parent probe ("^" for the root)
        pa.field("probe", pa.string()),
        pa.field("depth", pa.int16()),
        pa.field("errno", pa.string()),
        pa.field("chain_hash", pa.uint64()),
        pa.field("host", pa.string()),
        pa.field("frames", pa.int64()),
        pa.field("count", pa.int64()),
    ]
)
TABLES["baseline_model"] = BASELINE_MODEL


# Trace metadata the readers interpret (the `metadata` column, a recording's key/value pairs).
# CUT_OFF_KEY: the threads still running when the recording stopped (its duration elapsed, or
# the linger after the command's exit ran out), as their tids in ascending order separated by
# spaces. Their streams end because the recording did, not because the thread ended; absent
# (or empty): every recorded thread's stream ends where the thread did. Files without it
# (schema version 1, other writers) read as "none cut off".
CUT_OFF_KEY = "cut_off_tids"


def format_tids(tids: Iterable[int]) -> str:
    """The CUT_OFF_KEY value for these thread ids."""
    return " ".join(str(t) for t in sorted(set(tids)))


def cut_off_tids(metadata: dict[str, str] | Sequence | None) -> frozenset[int]:
    """The thread ids a trace's metadata (a dict, or a `metadata` cell) says were cut off;
    words that are not thread ids are ignored (a hand-edited file must not stop a diff)."""
    meta = metadata if isinstance(metadata, dict) else metadata_dict(metadata)
    return frozenset(int(w) for w in (meta.get(CUT_OFF_KEY) or "").split() if w.isdigit())

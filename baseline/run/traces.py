"""Loading the traces a single-run diff compares, and the checks on them: events read through
tracer.schema (or conformed from a frame), one bad trace picked, good traces of one command,
and both sides prepared as integer-coded streams (baseline.run.normalize.prepare)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyarrow._parquet import ParquetReader

from baseline.run import compute as pc
from baseline.run import native
from baseline.run.normalize import (
    ANALYSIS_COLUMNS,
    DICT_COLUMNS,
    Prepared,
    _codes,
    background,
    normalize_string,
    prepare,
)
from tracer.errors import SchemaError, TracebaseError, out_of_resources, printable, shown
from tracer.inputs import input_paths, open_parquet
from tracer.schema import (
    EVENTS,
    check_event_table,
    column_value_problem,
    conform,
    cut_off_tids,
    metadata_dict,
    not_utf8,
    parquet_files,
    partition_values,
    validate_file,
)

if TYPE_CHECKING:
    import polars as pl

    PathsLike = str | os.PathLike | Iterable[str | os.PathLike] | pl.DataFrame | pl.LazyFrame


def _is_paths(src: Any) -> bool:
    if isinstance(src, (str, os.PathLike)):
        return True
    return isinstance(src, (list, tuple)) and all(isinstance(s, (str, os.PathLike)) for s in src)


def describe_source(src: Any) -> str:
    if isinstance(src, (str, os.PathLike)):
        return str(src)
    if _is_paths(src):
        return ", ".join(str(s) for s in src)
    return "<frame>"




def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells one file's content from another's under one name: device, inode, size, mtime."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


@lru_cache(maxsize=2)
def _zero_indices(n: int) -> pa.Buffer:
    """n int32 zeros, one read-only buffer shared by the constant columns of that length (a
    one-trace file's trace_id, kind and command: zeroing each its own cost ~2-3 ms a million
    rows, and as much memory)."""
    return pa.py_buffer(np.zeros(n, dtype=np.int32))


class _File:
    """One validated events file, read a column at a time."""

    def __init__(self, path: Any):
        # the file whose footer is read, by its identity: each column is read by opening the
        # path again, and a file renamed over it meanwhile (a writer replacing its output) would
        # be read with this footer's offsets -- columns of two files, of two lengths: an
        # internal error deep in the diff (battery 48's rename loop)
        with open_parquet(path) as fh:
            self.identity = _identity(os.fstat(fh.fileno()))
            self.meta = validate_file(path, "events", opened=fh)
        self.path = path
        self.num_rows = self.meta.num_rows
        self.present = set(self.meta.schema.names)
        self.restored = partition_values(path)
        first = self.meta.row_group(0) if self.meta.num_row_groups else None
        try:
            self.index = {first.column(i).path_in_schema: i for i in range(first.num_columns)} if first else {}
        except UnicodeDecodeError as exc:  # a footer whose column chunks name columns in no text
            raise SchemaError(path, None, "column chunks named by UTF-8 column paths",
                              f"a column path that is not UTF-8 ({exc.object[:40]!r})") from None
        self.ahead: dict[str, Future] = {}
        self.arrow_schema: pa.Schema | None = None  # the types Arrow reads the columns as

    def read_ahead(self, name: str) -> None:
        """Start reading a column in the read-ahead thread; the next `read` of it takes that."""
        if name in self.present and name not in self.ahead:
            self.ahead[name] = background().submit(self._read, name)

    def read(self, name: str) -> pa.ChunkedArray | pa.Array:
        started = self.ahead.pop(name, None)
        if started is not None and started.cancel():  # still queued behind slower columns: read here
            started = None
        return started.result() if started is not None else self._read(name)

    def constant(self, name: str) -> pa.Array | None:
        """The column without reading it when the footer's statistics say what it holds:
        all null (a recording's arg/path2/output often are), or one string in every row (the
        trace id, kind and command of a one-trace file); else None."""
        i = self.index.get(name)
        if i is None or not self.meta.num_row_groups:
            return None
        value, nulls = None, False
        for g in range(self.meta.num_row_groups):
            group = self.meta.row_group(g)
            stats = group.column(i).statistics
            if stats is None or not stats.has_null_count:
                return None
            if stats.null_count == group.num_rows:
                nulls = True
                continue
            # min == max is exact even when a writer truncates long statistics (a truncated
            # max is rounded up, so it then differs from the min)
            if name not in DICT_COLUMNS or stats.null_count or not stats.has_min_max:
                return None
            try:
                low, high = stats.min, stats.max
            except UnicodeDecodeError:
                return None  # bytes that are not UTF-8: reading the column says so (not_utf8)
            if not isinstance(low, str) or low != high or (value is not None and low != value):
                return None
            value = low
        if value is None:
            if name in DICT_COLUMNS:
                # all null through the shared zeros (as validity bitmap and indices alike):
                # pa.nulls zeroed 4 bytes a row for each, and a recording's arg, path2 and
                # output, of both traces, were ~24 MiB of the diff's peak at 2 x 1M events
                zeros = _zero_indices(self.num_rows)
                return pa.DictionaryArray.from_arrays(
                    pa.Array.from_buffers(pa.int32(), self.num_rows, [zeros, zeros], null_count=self.num_rows),
                    pa.array([], type=pa.string()), safe=False)
            return pa.nulls(self.num_rows, _column_type(name))
        if nulls:
            return None
        # safe=False: all-zero indices into a one-value dictionary are valid as made; Arrow's
        # check reads every index (~1-2 ms a million rows, for each such column of each file)
        return pa.DictionaryArray.from_arrays(pa.Array.from_buffers(pa.int32(), self.num_rows,
                                                                    [None, _zero_indices(self.num_rows)]),
                                              pa.array([value], type=pa.string()), safe=False)

    def _own_dictionary_read(self, fh: Any, name: str) -> pa.ChunkedArray | None:
        """A dictionary-encoded column read page by page by the compiled reader, one chunk per
        row group as Arrow gives it: strings of DICT_COLUMNS as Arrow's ``read_dictionary``
        (native.read_dictionary_chunk: without its memo table), 32- and 16-bit integers as
        their values (native.read_int_dictionary_chunk); None when any chunk is one that
        reader does not know (Arrow then reads the column)."""
        i = self.index.get(name)
        if i is None or not self.meta.num_row_groups or not native.available():
            return None
        leaf = self.meta.schema.column(i)
        if leaf.max_repetition_level != 0:
            return None
        # the type Arrow reads the column as (the file's stored Arrow schema, else its Parquet
        # types): strings (Arrow's read_dictionary gives dictionary<int32, string> for any of
        # them, bytes without a string type stay binary: Arrow's) and plain 32- and 16-bit integers
        if self.arrow_schema is None:  # (once a file: ~0.1 ms a conversion)
            self.arrow_schema = self.meta.schema.to_arrow_schema()
        kind = self.arrow_schema.field(name).type
        if name in DICT_COLUMNS:
            value = kind.value_type if pa.types.is_dictionary(kind) else kind
            if not (pa.types.is_string(value) or pa.types.is_large_string(value) or pa.types.is_string_view(value)):
                return None
            kind = None
        elif kind not in (pa.int32(), pa.int16()):
            return None
        chunks = []
        for g in range(self.meta.num_row_groups):
            group = self.meta.row_group(g)
            if group.num_rows <= 0:
                return None
            if kind is None:
                chunk = native.read_dictionary_chunk(fh, group.column(i), leaf.max_definition_level, group.num_rows)
            else:
                chunk = native.read_int_dictionary_chunk(fh, group.column(i), leaf.max_definition_level,
                                                         group.num_rows, kind)
            if chunk is None:
                return None
            chunks.append(chunk)
        return pa.chunked_array(chunks)

    def _arrow_read(self, fh: Any, name: str) -> pa.ChunkedArray:
        # pyarrow.parquet.ParquetFile's reader with its settings, without importing
        # pyarrow.parquet (see tracer.schema): a flat schema's column is its leaf.
        as_dictionary = name in DICT_COLUMNS
        reader = ParquetReader()
        reader.open(fh, metadata=self.meta, read_dictionary=[name] if as_dictionary else None,
                    arrow_extensions_enabled=True)
        try:
            # One column chunk at a time: Arrow's thread pool only adds CPU (~30 %) here.
            return reader.read_all(column_indices=[reader.column_name_idx(name)], use_threads=False).column(0)
        except (pa.ArrowException, OSError):
            if not as_dictionary:
                raise
        # Arrow cannot decode DELTA_BYTE_ARRAY / DELTA_LENGTH_BYTE_ARRAY pages (parquet-mr's v2
        # writers' strings) straight into a dictionary ("Not yet implemented", an OSError): read
        # the strings, then encode them (a corrupt page fails this read too, and is refused).
        fh.seek(0)
        reader = ParquetReader()
        reader.open(fh, metadata=self.meta, arrow_extensions_enabled=True)
        column = reader.read_all(column_indices=[reader.column_name_idx(name)], use_threads=False).column(0)
        return pa.chunked_array([chunk.cast(pa.string()).dictionary_encode() for chunk in column.chunks],
                                pa.dictionary(pa.int32(), pa.string()))

    def _read(self, name: str) -> pa.ChunkedArray | pa.Array:
        if name in self.present:
            known = self.constant(name)
            if known is not None:
                if (wrong := column_value_problem(name, known)) is not None:  # one kind no trace has
                    raise SchemaError(self.path, name, *wrong)
                return known
            try:
                with open(self.path, "rb") as fh:  # Python opens any file name (see validate_file)
                    if _identity(os.fstat(fh.fileno())) != self.identity:
                        raise SchemaError(self.path, None, "the file whose footer was read",
                                          "another file: it was replaced while being read (renamed over or "
                                          "rewritten); run again once its writer is done")
                    own = self._own_dictionary_read(fh, name)
                    col = own if own is not None else self._arrow_read(fh, name)
            except (pa.ArrowException, OSError) as exc:
                if out_of_resources(exc):  # (memory or threads ran out: not the file's fault)
                    raise
                # a footer that validated can still front corrupt pages (a torn copy, a bit flip)
                raise SchemaError(self.path, name, "readable column data", f"unreadable data ({exc})") from None
            # a writer other than ours can store any bytes as a string: they failed later, deep in
            # the diff, as a UnicodeDecodeError (~10 ms per million distinct paths)
            if (why := not_utf8(col)) is not None:
                raise SchemaError(self.path, name, "UTF-8 strings", f"bytes that are not UTF-8 ({why})")
            if (wrong := column_value_problem(name, col)) is not None:  # a kind no trace has, a negative depth
                raise SchemaError(self.path, name, *wrong)
            return col
        if name in self.restored:  # a partition key: the directory names it (host=<h>)
            return pa.array([self.restored[name]] * self.num_rows, pa.string())
        return pa.nulls(self.num_rows, EVENTS.field(name).type)  # added by a later schema version


class _Frame:
    """An in-memory events table (conformed), read a column at a time."""

    def __init__(self, table: pa.Table):
        self.table, self.num_rows = table, table.num_rows

    def read(self, name: str) -> pa.ChunkedArray:
        return self.table.column(name)


class _Side:
    """Parts read back to back, optionally filtered by a row mask."""

    def __init__(self, parts: list[_File | _Frame], names: Sequence[str], mask: np.ndarray | None = None):
        self.parts, self.names, self.mask = parts, frozenset(names), mask
        self.num_rows = int(np.count_nonzero(mask)) if mask is not None else sum(p.num_rows for p in parts)

    def chunks(self, name: str) -> list[pa.Array]:
        if name not in self.names:  # a column the other side of a diff has (output): null here
            return [pa.nulls(self.num_rows, _column_type(name))]
        out: list[pa.Array] = []
        for part in self.parts:
            col = part.read(name)
            out += col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        if self.mask is None:
            return out
        col = pc.filter(pa.chunked_array(_unified(name, out)), pa.array(self.mask))
        return col.chunks


def _column_type(name: str) -> pa.DataType:
    """The type a column is read as: the events schema's, strings of DICT_COLUMNS
    dictionary-encoded (as Parquet stores them, so rows stay integer codes)."""
    return pa.dictionary(pa.int32(), pa.string()) if name in DICT_COLUMNS else EVENTS.field(name).type


def _unified(name: str, chunks: list[pa.Array]) -> list[pa.Array]:
    """Chunks of one column as `_column_type` (from files and frames alike)."""
    want = _column_type(name)
    out = []
    for c in chunks:
        if c.type != want:
            if name in DICT_COLUMNS:
                c = pc.dictionary_encode(c.dictionary_decode() if pa.types.is_dictionary(c.type) else c)
                c = pc.cast(c, want) if c.type != want else c
            else:
                c = pc.cast(c, want)
        out.append(c)
    return out


class EventColumns:
    """Events of files, directories or frames, read one column at a time when asked for.

    Stands in for an Arrow table (`num_rows`, `column`, `column_names`, `drop_columns`,
    `select`, `filter`) for the diff and the allowlist learner: they turn each column into
    integer arrays and drop it, so the whole table never exists as Arrow at once (two
    million-event traces: ~130 MiB of Arrow buffers less at the peak). Nothing is cached: a
    column asked for twice is read twice."""

    def __init__(self, sides: list[_Side], names: Sequence[str]):
        self.sides, self.column_names = sides, list(names)
        self.num_rows = sum(s.num_rows for s in sides)

    def column(self, name: str) -> pa.ChunkedArray:
        if name not in self.column_names:
            raise KeyError(name)
        chunks = [c for side in self.sides for c in side.chunks(name)]
        return pa.chunked_array(_unified(name, chunks), type=_column_type(name))

    def read_ahead(self, names: Iterable[str], beside: Iterable[str] = ()) -> None:
        """Start reading these columns of every file, in order, in a thread of their own, so
        that decoding Parquet (which releases the GIL) overlaps the caller's work on the
        columns it has; `column` then takes what was read. For the few columns a caller asks
        for soon and decodes slowly: each column read ahead is held until asked for.

        `beside`: columns the caller asks for right away, read ahead first for every file but
        the first, which the caller's own thread reads meanwhile: the two traces of a diff
        decode at once (the second core) instead of one after the other."""
        files = [part for side in self.sides for part in side.parts if isinstance(part, _File)]
        for name in beside:
            if name in self.column_names:
                for part in files[1:]:
                    part.read_ahead(name)
        for name in names:
            if name in self.column_names:
                for side in self.sides:
                    if name in side.names:
                        for part in side.parts:
                            if isinstance(part, _File):
                                part.read_ahead(name)

    def drop_columns(self, names: Iterable[str]) -> EventColumns:
        gone = set(names)
        return EventColumns(self.sides, [c for c in self.column_names if c not in gone])

    def select(self, names: Sequence[str]) -> pa.Table:
        """The named columns as an Arrow table (read now)."""
        return pa.table({n: self.column(n) for n in names}) if names else pa.table({"_": pa.nulls(self.num_rows)}).drop_columns(["_"])

    def filter(self, mask: np.ndarray) -> EventColumns:
        """The rows where `mask` (numpy bool, one per row) holds."""
        sides, lo = [], 0
        for side in self.sides:
            part = np.asarray(mask[lo : lo + side.num_rows], dtype=bool)
            lo += side.num_rows
            if side.mask is not None:
                full = side.mask.copy()
                full[np.flatnonzero(side.mask)] = part
                part = full
            sides.append(_Side(side.parts, side.names, part))
        return EventColumns(sides, self.column_names)

    def offering(self, names: Sequence[str]) -> EventColumns:
        """The same rows offering the columns `names` instead (read when asked for, like the
        others): a column the analysis reads for a few rows only, such as a call's return
        value and latency."""
        return EventColumns([_Side(s.parts, names, s.mask) for s in self.sides], names)

    @staticmethod
    def concat(tables: list[EventColumns]) -> EventColumns:
        names = list(dict.fromkeys(c for t in tables for c in t.column_names))
        return EventColumns([_Side(s.parts, t.column_names, s.mask) for t in tables for s in t.sides], names)


# A call's outcome beyond its errno, and when it ran, read for a few calls only (see
# EventColumns.offering).
OUTCOME_COLUMNS = ("ret", "latency_ns", "ts_ns")


def load_table(src: PathsLike, skip: tuple[str, ...] = (), warnings: list[str] | None = None) -> EventColumns:
    """Events (dictionary-encoded strings) from Parquet files/directories, validated by
    tracer.schema (footers now, columns when read), or from a frame (conformed to the events
    schema). Only the columns the analysis needs are offered (`ANALYSIS_COLUMNS`, less `skip`:
    e.g. the good side of a diff needs no output bytes, the diff no start times). What the
    caller should be told but need not stop for is appended to `warnings`."""
    columns = [c for c in ANALYSIS_COLUMNS if c not in skip]
    if isinstance(src, pa.Table) or type(src).__module__.startswith("polars"):
        if hasattr(src, "collect"):  # a polars LazyFrame
            src = src.collect()
        # exit_status and metadata ride along for exit_statuses and cut_off_threads (not
        # analysis columns)
        frame = conform(src, "events").select([*columns, *OUTCOME_COLUMNS, "exit_status", "metadata"])
        check_event_table(frame, "events", "<events frame>")
        table = EventColumns([_Side([_Frame(frame)], columns)], columns)
    else:  # files/directories: polars is not needed (nor imported by this module)
        given = [(p, [_File(f) for f in parquet_files(p)]) for p in input_paths(src)]
        table = EventColumns([_Side([part for _, parts in given for part in parts], columns)], columns)
        if table.num_rows:
            # One path among several that holds no event (a recording that captured nothing,
            # a file cut to its footer) was taken silently: as a GOOD trace it vouches for no
            # behaviour, and the caller believes a baseline of N runs it does not have.
            for path, parts in given:
                if not any(part.num_rows for part in parts):
                    raise TracebaseError(f"{shown(path)}: expected events, found an empty trace "
                                         f"(0 rows in {len(parts)} file{'s' if len(parts) != 1 else ''}), "
                                         f"beside {table.num_rows} events in the other inputs")
            _check_one_run_per_trace_id([part for _, parts in given for part in parts])
            if warnings is not None:
                warnings += _empty_files_in_directories(given)
    if table.num_rows == 0:
        raise TracebaseError(f"{describe_source(src)}: expected events, found an empty trace")
    return table


def _empty_files_in_directories(given: list[tuple[Any, list[_File]]]) -> list[str]:
    """A file of no events inside a directory of traces (a recording that captured nothing, a
    copy cut short) is left out of the diff, said: the caller counts on a run it does not have.
    (The directory as a whole holding nothing, or such a file named on its own, is refused.)"""
    said = []
    for path, parts in given:
        empty = [part.path for part in parts if not part.num_rows]
        if empty and os.path.isdir(path):
            first = shown(empty[0])
            more = f" and {len(empty) - 1} more file{'s' if len(empty) > 2 else ''} of it" if len(empty) > 1 else ""
            said.append(f"{first}{more}: no events (0 rows), left out of {shown(path)}'s traces")
    return said


def _check_one_run_per_trace_id(parts: list[_File]) -> None:
    """Two different recordings under one trace id (a copy of a run edited, ids made by a
    broken launcher) would be read as one run whose threads did everything twice, or the
    second's rows dropped as repeats of the first's (one (trace, thread, seq) counts once):
    refused, naming both. The same file twice or a copy of it (same rows, same size) is one run
    read twice, and the part files of one recording hold other seq numbers: both fine. Footers
    only: a file of several traces says nothing here."""
    seen: dict[str, tuple[_File, tuple[int, int]]] = {}
    for part in parts:
        ident, span = part.constant("trace_id"), _value_range(part, "seq")
        if ident is None or span is None or not len(ident) or ident.null_count:
            continue
        trace = ident.dictionary[0].as_py() if pa.types.is_dictionary(ident.type) else ident[0].as_py()
        first = seen.setdefault(trace, (part, span))
        if first[0] is part:
            continue
        other, other_span = first
        same_copy = other.num_rows == part.num_rows and other_span == span and \
            _size(other.path) == _size(part.path)
        if not same_copy and span[0] <= other_span[1] and other_span[0] <= span[1]:
            raise TracebaseError(
                f"{shown(part.path)}: trace_id: expected another run's own id, found "
                f"'{printable(trace)}', the id of {shown(other.path)} too, with its seq numbers "
                f"({span[0]}-{span[1]} and {other_span[0]}-{other_span[1]}): two different recordings under one "
                "trace id; give one of them, or a copy of the file with its own trace_id")


def _value_range(part: _File, name: str, *, without_nulls: bool = False) -> tuple[int, int] | None:
    """(min, max) of an integer column from the footer's statistics, or None (no statistics;
    with `without_nulls`, also when they do not say that no row is null)."""
    i = part.index.get(name)
    if i is None or not part.meta.num_row_groups:
        return None
    low = high = None
    for g in range(part.meta.num_row_groups):
        stats = part.meta.row_group(g).column(i).statistics
        if stats is None or not stats.has_min_max:
            return None
        if without_nulls and (not stats.has_null_count or stats.null_count):
            return None
        low = stats.min if low is None else min(low, stats.min)
        high = stats.max if high is None else max(high, stats.max)
    return (low, high) if isinstance(low, int) and isinstance(high, int) else None


def _all_null(part: _File, name: str) -> bool:
    """Whether the footer's statistics say every row of the column is null."""
    i = part.index.get(name)
    if i is None or not part.meta.num_row_groups:
        return False
    for g in range(part.meta.num_row_groups):
        group = part.meta.row_group(g)
        stats = group.column(i).statistics
        if stats is None or not stats.has_null_count or stats.null_count != group.num_rows:
            return False
    return True


def _size(path: Any) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def exit_statuses(table: EventColumns) -> set[int | None]:
    """The exit statuses the traces of `table` ended with (None: not known -- a fleet call
    tree, a frame without the column)."""
    return trace_values(table, "exit_status")


def trace_values(table: EventColumns, name: str) -> set[int | None]:
    """The values an integer trace-level column (one value on every row of a trace: exit_status,
    lost_events) takes in `table` (None: not known). Read from the Parquet footer's statistics
    when they say it (one recording: one value in every row), else from the column."""
    out: set[int | None] = set()
    for side in table.sides:
        if any(isinstance(part, _Frame) and name not in part.table.column_names for part in side.parts):
            out.add(None)
            continue
        if side.mask is not None:  # rows of one trace picked out of several
            chunks = _Side(side.parts, [name], side.mask).chunks(name)
        else:
            chunks = []
            for part in side.parts:
                known = _one_value(part, name) if isinstance(part, _File) else None
                if known is not None:
                    out.add(known)
                    continue
                if isinstance(part, _File) and _all_null(part, name):  # (not read: a million nulls)
                    out.add(None)
                    continue
                col = part.read(name)
                chunks += col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        for chunk in chunks:
            out.update(pc.unique(chunk).to_pylist())
    return out


def cut_off_threads(table: EventColumns) -> dict[str, frozenset[int]]:
    """Per trace id, the threads its recording says were cut off (tracer.schema.CUT_OFF_KEY:
    still running when the recording stopped); traces without any are left out."""
    return recording_settings(table)[0]


# the recording's setting of `tracer record -x` (tracer.record.recorder: "true" / "false")
FAILURES_ONLY_KEY = "failures_only"


def recording_settings(table: EventColumns) -> tuple[dict[str, frozenset[int]], dict[str, bool]]:
    """Per trace id: the threads its recording says were cut off (see cut_off_threads), and
    whether it was recorded with failing calls only (`tracer record -x`; traces whose metadata
    does not say are left out). A trace's metadata is the same on every row: a one-trace file
    reads one row of the column (the whole column of a million-event recording takes a second)."""
    cut_off: dict[str, frozenset[int]] = {}
    failures_only: dict[str, bool] = {}
    for side in table.sides:
        for part in side.parts:
            for trace, cell in _first_metadata(part):
                meta = metadata_dict(cell)
                cut = cut_off_tids(meta)
                if cut:
                    cut_off[trace] = cut_off.get(trace, frozenset()) | cut
                if meta.get(FAILURES_ONLY_KEY) in ("true", "false"):
                    failures_only[trace] = meta[FAILURES_ONLY_KEY] == "true"
    return cut_off, failures_only


def check_failures_only(good: dict[str, bool], bad: dict[str, bool], good_source: str, bad_source: str) -> None:
    """Refuse a diff of a failing-calls-only recording (`tracer record -x`) against full ones, or
    the other way round: every success one side lacks reads as a divergence (the same command's
    `ls` was named at its first catalog lookup, or at its execve, exit 1)."""
    goods, bads = set(good.values()), set(bad.values())
    advice = "a diff would name every success one side lacks; record them all with -x or all without"
    if len(goods) > 1:
        raise TracebaseError(f"{good_source}: expected GOOD recordings made the same way, found some recorded "
                             f"with -x (failing calls only) and some with every call: {advice}")
    if goods and bads and goods != bads:
        x_side, full_side = ("GOOD", "BAD") if True in goods else ("BAD", "GOOD")
        where = {"GOOD": good_source, "BAD": bad_source}
        raise TracebaseError(
            f"{where[x_side]}: expected recordings made the same way, found {x_side} recorded with -x (failing "
            f"calls only) and {full_side} with every call ({where[full_side]}): {advice}")


def _first_metadata(part: _File | _Frame) -> list[tuple[str, list | None]]:
    """(trace id, metadata cell) of the first row of each trace of a part."""
    if isinstance(part, _Frame):
        if "metadata" not in part.table.column_names or not part.num_rows:
            return []
        pairs = part.table.select(["trace_id", "metadata"])
    else:
        if "metadata.list.element.key" not in part.index or not part.num_rows:  # (leaf names)
            return []
        try:
            with open(part.path, "rb") as fh:
                reader = ParquetReader()  # as _File.read: pyarrow.parquet is not imported
                reader.open(fh, metadata=part.meta, arrow_extensions_enabled=True)
                leaves = [reader.column_name_idx(c) for c in
                          ("trace_id", "metadata.list.element.key", "metadata.list.element.value")]
                if part.constant("trace_id") is not None:  # one trace (the footer says so)
                    batch = next(reader.iter_batches(1, range(reader.num_row_groups), leaves, use_threads=False))
                    return [(batch.column(0)[0].as_py(), batch.column(1)[0].as_py())]
                pairs = reader.read_all(column_indices=leaves, use_threads=False)
        except (pa.ArrowException, OSError) as exc:  # corrupt pages behind a valid footer (see _File.read)
            if out_of_resources(exc):
                raise
            raise SchemaError(part.path, "metadata", "readable column data", f"unreadable data ({exc})") from None
    codes, _ = _codes(pairs.column("trace_id"))
    # where the trace changes (a trace's rows are together in practice; repeats are harmless)
    first = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if len(codes) else np.zeros(0, dtype=np.int64)
    taken = pairs.take(pa.array(first)).to_pylist()
    return [(row["trace_id"], row["metadata"]) for row in taken]


def _one_value(part: _File, name: str) -> int | None:
    """The value every row of the file holds in integer column `name`, from the footer (None:
    the statistics do not say, or some rows are null)."""
    span = _value_range(part, name, without_nulls=True)
    return span[0] if span is not None and span[0] == span[1] else None


def number_traces(table: EventColumns | pa.Table) -> tuple[np.ndarray, list[str]]:
    """Dense trace numbers 0.. per row, and the trace ids in order of appearance."""
    col = table.column("trace_id")
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if chunks and not col.null_count and all(pa.types.is_dictionary(c.type) and len(c.dictionary) == 1 for c in chunks):
        ids = {c.dictionary[0].as_py() for c in chunks}
        if len(ids) == 1:  # one trace (a recording): no per-row work
            return np.zeros(len(col), dtype=np.int64), [ids.pop()]
    codes, values = _codes(col)
    present = np.flatnonzero(np.bincount(codes, minlength=len(values)))
    remap = np.full(len(values), -1, dtype=np.int64)
    remap[present] = np.arange(len(present))
    return remap[codes], [values[c] for c in present]


def pick_bad_trace(bad: EventColumns, source: str, trace_id: str | None) -> tuple[EventColumns, str]:
    """The one bad trace (`trace_id`, or the only one) and its id."""
    codes, ids = number_traces(bad)
    if trace_id is not None:
        if trace_id not in ids:
            raise TracebaseError(f"{source}: trace_id: expected {trace_id!r}, found {', '.join(map(repr, ids[:5]))}")
        return bad.filter(codes == ids.index(trace_id)), trace_id
    if len(ids) > 1:
        # (escaped as the README says ids are shown: a newline in one is \n, the id to pass)
        listed = ", ".join(map(printable, ids[:5])) + (" ..." if len(ids) > 5 else "")
        raise TracebaseError(f"{source}: expected one bad trace, found {len(ids)} ({listed}); choose one with --trace-id")
    return bad, ids[0]


def check_good_commands(
    good: EventColumns | pa.Table, source: str, mixed: bool, trace_codes: tuple[np.ndarray, list[str]] | None = None
) -> dict[str, str]:
    """Good traces must be runs of one command (noise-normalised); else refuse unless mixed.
    Returns each distinct `command_identity` ("" for none recorded), sorted, with the first
    command recorded under it as written (what a message shows: the identity masks numbers).
    `trace_codes`: `number_traces(good)` when the caller has it already."""
    codes, ids = trace_codes or number_traces(good)
    if len(ids) == 1:  # one trace (a recording): its first row is row 0
        first = np.zeros(1, dtype=np.int64)
    else:
        first = np.full(len(ids), -1, dtype=np.int64)
        first[codes[::-1]] = np.arange(len(codes))[::-1]  # first row of each trace
    col = good.column("command")
    as_written: dict[str, str] = {}
    for i in first:
        command = col[int(i)].as_py()
        as_written.setdefault(command_identity(command) or "", command or "")
    distinct = dict(sorted(as_written.items()))
    if len(distinct) > 1 and not mixed:
        shown = "; ".join(shown_command(c) for c in list(distinct.values())[:3])
        raise TracebaseError(
            f"{source}: command: expected good traces of one command, found {len(distinct)} "
            f"({shown}); pass --mixed to diff against all of them anyway"
        )
    return distinct


def check_good_kinds(good: EventColumns | pa.Table, source: str) -> None:
    """Traces to learn expected errors from are good runs: a recording labelled bad (kind
    failure) or a fleet's failure records would teach their own errors as expected."""
    failing = pc.filter(good.column("trace_id"), pc.call_function("equal", [good.column("kind"), pa.scalar("failure")]))
    if len(failing):
        ids = pc.unique(failing)
        raise TracebaseError(f"{source}: kind: expected good traces (recorded with --label good, or full), found "
                             f"{len(ids)} of kind failure ({printable(str(ids[0]))}{', ...' if len(ids) > 1 else ''}): "
                             f"their errors would be learned as expected")


def bad_command_of(bad: EventColumns | pa.Table) -> str | None:
    """The bad trace's command as recorded (None: not recorded); `command_identity` of it is
    what check_good_commands' keys are compared with."""
    if not bad.num_rows:
        return None
    return bad.column("command")[0].as_py()


# Characters of a command a message quotes (an argv of 100 kB made a warning line of 100 kB)
_COMMAND_SHOWN = 200


def shown_command(command: str) -> str:
    """A recorded command quoted on one bounded line: escaped once (printable), cut after
    _COMMAND_SHOWN characters saying its length."""
    if len(command) <= _COMMAND_SHOWN:
        return f"'{printable(command)}'"
    return f"'{printable(command[:_COMMAND_SHOWN])}'... ({len(command):,} characters)"


# env(1)'s options that take the next word as their value
_ENV_VALUE_OPTIONS = frozenset({"-u", "--unset", "-C", "--chdir"})


def command_identity(command: str | None) -> str | None:
    """A recorded command (`shlex.join` of its argv) as runs of one command are compared:
    noise-normalised, and with env(1)'s options and NAME=VALUE words before the program
    dropped -- `env -i TZ=Asia/Tokyo stat -c %y f` and `env -i TZ=Europe/Berlin stat -c %y f`
    are one command run in two environments, as a shell's `TZ=... stat ...` (no word of the
    argv) would have been."""
    if command is None:
        return None
    try:
        argv = shlex.split(command)
    except ValueError:  # not shlex.join's text (a fleet's command column): compared as written
        argv = []
    head: list[str] = []
    while argv and os.path.basename(argv[0]) == "env":
        del argv[0]
        head.append("env")  # (/usr/bin/env or env: the same program as the PATH finds it)
        while argv:
            word = argv[0]
            if word in _ENV_VALUE_OPTIONS and len(argv) > 1:
                del argv[:2]
            elif word == "--":
                del argv[0]
                break
            elif (word.startswith("-") and word != "-" and not word.startswith(("-S", "--split-string"))) or (
                    "=" in word and not word.startswith("=")):
                del argv[0]  # -i, -0, --unset=NAME, --chdir=DIR, NAME=VALUE
            else:
                break
    if head:
        command = shlex.join(head + argv)
    return normalize_string(command)


def prepare_side(table: EventColumns | pa.Table, bad: bool) -> tuple[Prepared, list[str]]:
    """Prepare one side: the bad trace gets tkey -1, good traces 0.."""
    codes, ids = number_traces(table)
    tkey = np.full(table.num_rows, -1, dtype=np.int64) if bad else codes.astype(np.int64)
    return prepare(table, tkey), ids


def prepare_both(
    tables: list[EventColumns],
    good_trace_codes: tuple[np.ndarray, list[str]] | list[tuple[np.ndarray, list[str]]] | None = None,
    bad_ids: list[str] | None = None,
) -> tuple[Prepared, list[str], list[str]]:
    """Prepare the bad and good rows (``tables = [bad, good]``) as one table, with one
    dictionary per column so event tokens are integer codes: the bad trace gets tkey -1,
    good traces 0.. in order of appearance; bad rows come first in the result (streams are
    numbered by first appearance). Columns are read one at a time as `prepare` converts them."""
    bad, good = tables
    if bad_ids is None:
        _, bad_ids = number_traces(bad)
    if isinstance(good_trace_codes, list):  # handed over: [number_traces(good)]
        good_trace_codes = good_trace_codes.pop()
    good_codes, good_ids = good_trace_codes or number_traces(good)
    del good_trace_codes
    small = np.int16 if len(good_ids) < 2**15 - 1 else np.int64  # trace numbers: 2 bytes a row
    # written in place (no narrowed copy of the good rows' numbers to concatenate)
    tkey = np.empty(bad.num_rows + len(good_codes), dtype=small)
    tkey[: bad.num_rows] = -1
    tkey[bad.num_rows :] = good_codes
    both = EventColumns.concat([bad, good])
    tables.clear()
    del bad, good, good_codes
    return prepare(both, tkey), bad_ids, good_ids

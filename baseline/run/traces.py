"""Loading the traces a single-run diff compares, and the checks on them: events read through
tracer.schema (or conformed from a frame), one bad trace picked, good traces of one command,
and both sides prepared as integer-coded streams (baseline.run.normalize.prepare)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from baseline.run.normalize import (
    ANALYSIS_COLUMNS,
    DICT_COLUMNS,
    Prepared,
    _codes,
    normalize_string,
    prepare,
)
from tracer.errors import TracebaseError
from tracer.schema import conform, read_arrow

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


def load_table(src: PathsLike, skip: tuple[str, ...] = ()) -> pa.Table:
    """Events as Arrow (dictionary-encoded strings) from Parquet files/directories, validated
    by tracer.schema, or from a frame (conformed to the events schema). Only the columns the
    analysis needs are read (`ANALYSIS_COLUMNS`, less `skip`: e.g. the good side of a diff
    needs no output bytes, the diff no start times)."""
    columns = [c for c in ANALYSIS_COLUMNS if c not in skip]
    if isinstance(src, pa.Table) or type(src).__module__.startswith("polars"):
        if hasattr(src, "collect"):  # a polars LazyFrame
            src = src.collect()
        table = conform(src, "events").select(columns)
    else:  # files/directories: polars is not needed (nor imported by this module)
        try:
            table = read_arrow(src, "events", columns, DICT_COLUMNS)
        except UnicodeEncodeError:  # pyarrow opens files by UTF-8 name only
            shown = os.fsencode(describe_source(src)).decode("utf-8", "backslashreplace")
            raise TracebaseError(
                f"{shown}: expected file names in UTF-8 (Parquet files are opened by name), found undecodable "
                "bytes; rename the file or link it under a UTF-8 name"
            ) from None
    if table.num_rows == 0:
        raise TracebaseError(f"{describe_source(src)}: expected events, found an empty trace")
    return table


def number_traces(table: pa.Table) -> tuple[np.ndarray, list[str]]:
    """Dense trace numbers 0.. per row, and the trace ids in order of appearance."""
    codes, values = _codes(table.column("trace_id"))
    present = np.flatnonzero(np.bincount(codes, minlength=len(values)))
    remap = np.full(len(values), -1, dtype=np.int64)
    remap[present] = np.arange(len(present))
    return remap[codes], [values[c] for c in present]


def pick_bad_trace(bad: pa.Table, source: str, trace_id: str | None) -> pa.Table:
    codes, ids = number_traces(bad)
    if trace_id is not None:
        if trace_id not in ids:
            raise TracebaseError(f"{source}: trace_id: expected {trace_id!r}, found {', '.join(map(repr, ids[:5]))}")
        return bad.filter(pa.array(codes == ids.index(trace_id)))
    if len(ids) > 1:
        shown = ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")
        raise TracebaseError(f"{source}: expected one bad trace, found {len(ids)} ({shown}); choose one with --trace-id")
    return bad


def check_good_commands(
    good: pa.Table, source: str, mixed: bool, trace_codes: tuple[np.ndarray, list[str]] | None = None
) -> list[str]:
    """Good traces must be runs of one command (noise-normalised); else refuse unless mixed.
    `trace_codes`: `number_traces(good)` when the caller has it already."""
    codes, ids = trace_codes or number_traces(good)
    first = np.full(len(ids), -1, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes))[::-1]  # first row of each trace
    col = good.column("command")
    cmds = [col[int(i)].as_py() for i in first]
    distinct = sorted({normalize_string(c) or "" for c in cmds})
    if len(distinct) > 1 and not mixed:
        shown = "; ".join(repr(c) for c in distinct[:3])
        raise TracebaseError(
            f"{source}: command: expected good traces of one command, found {len(distinct)} "
            f"({shown}); pass --mixed to diff against all of them anyway"
        )
    return distinct


def prepare_side(table: pa.Table, bad: bool) -> tuple[Prepared, list[str]]:
    """Prepare one side: the bad trace gets tkey -1, good traces 0.."""
    codes, ids = number_traces(table)
    tkey = np.full(table.num_rows, -1, dtype=np.int64) if bad else codes.astype(np.int64)
    return prepare(table, tkey), ids


def _dictionary_columns(table: pa.Table) -> pa.Table:
    """String columns of DICT_COLUMNS dictionary-encoded (as read_arrow returns them), so a
    table from a frame concatenates with one read from Parquet."""
    for name in DICT_COLUMNS:
        if name in table.column_names and not pa.types.is_dictionary(table.schema.field(name).type):
            i = table.column_names.index(name)
            col = pc.dictionary_encode(table.column(i))
            table = table.set_column(i, pa.field(name, col.type), col)
    return table


def prepare_both(
    tables: list[pa.Table], good_trace_codes: tuple[np.ndarray, list[str]] | None = None
) -> tuple[Prepared, list[str], list[str]]:
    """Prepare the bad and good rows (``tables = [bad, good]``) as one table, with one
    dictionary per column so event tokens are integer codes: the bad trace gets tkey -1,
    good traces 0.. in order of appearance; bad rows come first in the result (streams are
    numbered by first appearance). `tables` is emptied: with the caller's other references
    dropped, `prepare` frees each Arrow column once converted."""
    bad, good = tables
    _, bad_ids = number_traces(bad)
    good_codes, good_ids = good_trace_codes or number_traces(good)
    tkey = np.concatenate([np.full(bad.num_rows, -1, dtype=np.int64), good_codes])
    parts = [_dictionary_columns(bad), _dictionary_columns(good)]
    tables.clear()
    del bad, good, good_codes
    return prepare(pa.concat_tables(_emptied(parts), promote_options="permissive"), tkey), bad_ids, good_ids


def _emptied(items: list) -> list:
    """The items of a list, leaving the list empty (hands over the only references)."""
    out = list(items)
    items.clear()
    return out

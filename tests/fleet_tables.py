"""Building a generator's tables fast: polars converts a Python list of nested values (an events
row's ``metadata`` pairs, a counter row's ``errno_counts``) element by element, one Series per
element -- most of a blind generator's run (80 of 88 s of fleetgen35's). Arrow converts the same
lists in C++. Only the nested columns go through Arrow; the frame is the one ``pl.DataFrame``
builds (tests/test_fleet_tables.py compares them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
import pyarrow as pa


def arrow_type(dtype: pl.DataType) -> pa.DataType:
    """The Arrow type polars converts `dtype` from."""
    return pl.Series("x", [], dtype=dtype).to_arrow().type


def frame(columns: Mapping[str, Sequence[Any]], schema: Mapping[str, pl.DataType] | None = None,
          **overrides: pl.DataType) -> pl.DataFrame:
    """``pl.DataFrame(columns, schema=schema)`` (or ``schema_overrides=overrides`` for the named
    columns, the others inferred), with the nested-typed columns converted through Arrow."""
    types = dict(schema) if schema is not None else dict(overrides)
    nested = [c for c in columns if c in types and types[c].is_nested()]
    flat = {c: v for c, v in columns.items() if c not in nested}
    if schema is not None:
        out = pl.DataFrame(flat, schema={c: types[c] for c in flat})
    else:
        out = pl.DataFrame(flat, schema_overrides={c: t for c, t in types.items() if c in flat})
    converted = [pl.Series(c, pa.array(list(columns[c]), type=arrow_type(types[c]))).cast(types[c]) for c in nested]
    out = out.hstack(converted) if flat else pl.DataFrame(converted)
    order = [c for c in types if c in columns] + [c for c in columns if c not in types] if schema is not None \
        else list(columns)
    return out.select(order)


def row_columns(rows: Sequence[Mapping[str, Any]], names: Sequence[str] | None = None) -> dict[str, list[Any]]:
    """Rows as dicts turned into columns (the first row's keys, or `names`)."""
    keys = list(names) if names is not None else (list(rows[0]) if rows else [])
    return {k: [r.get(k) for r in rows] for k in keys}


def extend_rows(columns: dict[str, list[Any]], each: Mapping[str, Sequence[Any]],
                same: Mapping[str, Any] | None = None) -> None:
    """Append rows to `columns` (name -> values) column by column, without a dict per row: `each`
    gives the rows' values of its columns (all of one length), `same` a value every row has."""
    n = None
    for name, values in each.items():
        columns.setdefault(name, []).extend(values)
        n = len(values) if n is None else n
    for name, value in (same or {}).items():
        columns.setdefault(name, []).extend([value] * (n or 0))


def table_from_columns(columns: Mapping[str, Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """``pa.Table.from_pylist(rows, schema=schema)`` of the rows `columns` holds column by column
    (a column of `schema` that `columns` lacks is null), through the same conversion
    (``pa.Table.from_arrays`` of one Python list per column) without building a dict per row."""
    height = max((len(v) for v in columns.values()), default=0)
    arrays = [columns[n] if isinstance(columns.get(n), list) else list(columns[n]) if n in columns
              else [None] * height for n in schema.names]
    return pa.Table.from_arrays(arrays, schema=schema)


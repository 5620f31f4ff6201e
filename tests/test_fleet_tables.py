"""tests/fleet_tables.py builds the frames pl.DataFrame builds, nested columns through Arrow."""

import datetime as dt

import polars as pl
import pytest
from fleet_tables import frame, row_columns

from tracer.schema import polars_schema

WHEN = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize("table", ["events", "counters"])
def test_same_frame_as_polars_builds(table):
    schema = polars_schema(table)
    nested = {"metadata": [[{"key": "tenant", "value": "a"}], [], None],
              "errno_counts": [[{"errno": "EAGAIN", "count": 3}, {"errno": "EIO", "count": 1}], [], None]}
    columns = {}
    for name, dtype in schema.items():
        if dtype.is_nested():
            columns[name] = nested[name]
        elif dtype == pl.String:
            columns[name] = ["x", None, "é"]
        elif isinstance(dtype, pl.Datetime):
            columns[name] = [WHEN, None, WHEN.replace(tzinfo=None)]
        elif dtype == pl.Boolean:
            columns[name] = [True, False, None]
        elif dtype.is_float():
            columns[name] = [1.5, None, 0.0]
        else:
            columns[name] = [1, None, 2]
    want = pl.DataFrame(columns, schema=schema)
    got = frame(columns, schema)
    assert got.schema == want.schema
    assert got.equals(want)
    # only the nested columns named (the others inferred)
    names = [c for c in columns if schema[c].is_nested()] + ["host"]
    part = {c: columns[c] for c in names}
    over = {c: schema[c] for c in names if schema[c].is_nested()}
    assert frame(part, **over).equals(pl.DataFrame(part, schema_overrides=over))


def test_only_nested_columns_and_rows():
    schema = {"metadata": polars_schema("events")["metadata"]}
    columns = {"metadata": [[{"key": "k", "value": "v"}]] * 3}
    assert frame(columns, schema).equals(pl.DataFrame(columns, schema=schema))
    assert row_columns([{"a": 1, "b": None}, {"a": 2}]) == {"a": [1, 2], "b": [None, None]}
    assert row_columns([], ["a"]) == {"a": []}

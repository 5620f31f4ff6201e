"""A user-facing error raised in a worker process reaches the parent whole.

`ingest -j` and `simulate --workers` run their work in a process pool, which pickles a worker's
exception to send it back. Errors whose __init__ takes the parts of their message (SchemaError:
source, column, expected, found) could not be rebuilt from the pickle, and the parent saw a
broken pool instead of the one-line error naming the file. A real pool, real processes."""

from __future__ import annotations

import pickle

import pytest

from baseline.pipeline.config import ConfigError
from tracer.errors import SchemaError, TracebaseError
from tracer.pools import process_pool, results_in_order
from tracer.yamlio import YamlContentError

ERRORS = {
    "schema": (SchemaError, ("/data/h1/events.parquet", "errno", "string", "int64")),
    "config": (ConfigError, ("pipeline.yaml", "audit_window_hours", "a number of hours > 0", "'two'")),
    "yaml": (YamlContentError, ("probes.yaml", "a mapping", "a list at line 3")),
    "plain": (TracebaseError, ("spool: not a directory",)),
}


def raise_named(name: str) -> None:
    cls, args = ERRORS[name]
    raise cls(*args)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_a_workers_error_reaches_the_parent_with_its_message(name):
    cls, args = ERRORS[name]
    expected = str(cls(*args))
    with pytest.raises(cls) as caught, process_pool(2, "spawn", "test") as pool:
        list(results_in_order(pool, raise_named, [name]))
    assert str(caught.value) == expected
    assert caught.value.exit_status == 2


def test_the_parts_of_the_message_survive_a_pickle():
    error = pickle.loads(pickle.dumps(SchemaError("/d/f.parquet", "ret", "int64", "string")))
    assert (error.source, error.column, error.expected, error.found) == ("/d/f.parquet", "ret", "int64", "string")
    assert str(error) == "/d/f.parquet: column 'ret': expected int64, found string"

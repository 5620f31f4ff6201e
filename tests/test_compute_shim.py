"""baseline.run.compute calls Arrow's kernels without importing pyarrow.compute: each of its
functions must give what pyarrow.compute's function of the same name gives."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as arrow_compute
import pytest

from baseline.run import compute as shim

STRINGS = pa.array(["xaa", "chunk-ab.csv", None, "", "/w/baa.aa.x", "AA", "é-aa"], type=pa.string())
FLAGS = pa.array([True, False, None, True, False, True, None])
OTHER = pa.array([False, False, True, None, True, True, None])

CASES = [
    ("starts_with", (STRINGS, "x"), {}),
    ("starts_with", (STRINGS, "A"), {"ignore_case": True}),
    ("ends_with", (STRINGS, "aa"), {}),
    ("or_", (FLAGS, OTHER), {}),
    ("is_in", (STRINGS, ), {"value_set": pa.array(["xaa", "AA"])}),
    ("utf8_length", (STRINGS,), {}),
    ("match_substring_regex", (STRINGS, r"a{2}$"), {}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_function_is_pyarrow_computes(name, args, kwargs):
    got = getattr(shim, name)(*args, **kwargs)
    want = getattr(arrow_compute, name)(*args, **kwargs)
    assert got.equals(want), (got, want)
    assert name in vars(shim), f"{name} fell through to pyarrow.compute"

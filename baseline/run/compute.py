"""The few pyarrow.compute functions the single-run diff calls, without importing
pyarrow.compute.

``import pyarrow.compute`` generates a Python wrapper, with a parsed docstring, for each of
Arrow's ~400 kernels: ~0.05 s of CPU and ~2 MiB at every `baseline diff`, for the dozen
functions this package calls. The kernels themselves live in pyarrow._compute
(``call_function``); each function below is exactly what pyarrow.compute's wrapper of the
same name calls, with the same defaults (pyarrow.compute's own `fill_null` included). A name
not defined here falls through to pyarrow.compute (imported then), so code written against
``pc.<name>`` keeps working.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyarrow import _compute as _c


def call_function(name: str, args: list[Any], options: Any = None) -> Any:
    return _c.call_function(name, args, options)


def fill_null(values: Any, fill_value: Any) -> Any:
    # pyarrow.compute.fill_null, verbatim: a Python value becomes a scalar of the values' type
    if not isinstance(fill_value, (pa.Array, pa.ChunkedArray, pa.Scalar)):
        fill_value = pa.scalar(fill_value, type=values.type)
    elif values.type != fill_value.type:
        fill_value = pa.scalar(fill_value.as_py(), type=values.type)
    return _c.call_function("coalesce", [values, fill_value])


def replace_substring_regex(strings: Any, pattern: str, replacement: str, *, max_replacements: int | None = None) -> Any:
    return _c.call_function("replace_substring_regex", [strings],
                            _c.ReplaceSubstringOptions(pattern, replacement, max_replacements=max_replacements))


def match_substring(strings: Any, pattern: str, *, ignore_case: bool = False) -> Any:
    return _c.call_function("match_substring", [strings], _c.MatchSubstringOptions(pattern, ignore_case=ignore_case))


def match_substring_regex(strings: Any, pattern: str, *, ignore_case: bool = False) -> Any:
    return _c.call_function("match_substring_regex", [strings],
                            _c.MatchSubstringOptions(pattern, ignore_case=ignore_case))


def any(array: Any, *, skip_nulls: bool = True, min_count: int = 1) -> Any:  # noqa: A001 (pyarrow.compute's name)
    return _c.call_function("any", [array], _c.ScalarAggregateOptions(skip_nulls=skip_nulls, min_count=min_count))


def filter(values: Any, selection: Any, null_selection_behavior: str = "drop") -> Any:  # noqa: A001
    return _c.call_function("filter", [values, selection], _c.FilterOptions(null_selection_behavior))


def take(data: Any, indices: Any, *, boundscheck: bool = True) -> Any:
    return _c.call_function("take", [data, indices], _c.TakeOptions(boundscheck=boundscheck))


def cast(arr: Any, target_type: Any, safe: bool = True) -> Any:
    # pyarrow.compute.cast (what Array.cast calls) for a plain target type
    return _c.call_function("cast", [arr], _c.CastOptions.safe(target_type) if safe else _c.CastOptions.unsafe(target_type))


def replace_with_mask(values: Any, mask: Any, replacements: Any) -> Any:
    return _c.call_function("replace_with_mask", [values, mask, replacements])


def if_else(cond: Any, left: Any, right: Any) -> Any:
    return _c.call_function("if_else", [cond, left, right])


def is_valid(values: Any) -> Any:
    return _c.call_function("is_valid", [values])


def dictionary_encode(array: Any, null_encoding: str = "mask") -> Any:
    return _c.call_function("dictionary_encode", [array], _c.DictionaryEncodeOptions(null_encoding))


def unique(array: Any) -> Any:
    return _c.call_function("unique", [array])


def is_in(values: Any, value_set: Any, *, skip_nulls: bool = False) -> Any:
    return _c.call_function("is_in", [values], _c.SetLookupOptions(value_set, skip_nulls=skip_nulls))


def utf8_length(strings: Any) -> Any:
    return _c.call_function("utf8_length", [strings])


def binary_join_element_wise(*strings: Any, null_handling: str = "emit_null", null_replacement: str = "") -> Any:
    return _c.call_function("binary_join_element_wise", list(strings),
                            _c.JoinOptions(null_handling=null_handling, null_replacement=null_replacement))


def starts_with(strings: Any, pattern: str, *, ignore_case: bool = False) -> Any:
    return _c.call_function("starts_with", [strings], _c.MatchSubstringOptions(pattern, ignore_case=ignore_case))


def ends_with(strings: Any, pattern: str, *, ignore_case: bool = False) -> Any:
    return _c.call_function("ends_with", [strings], _c.MatchSubstringOptions(pattern, ignore_case=ignore_case))


def or_(x: Any, y: Any) -> Any:
    return _c.call_function("or", [x, y])


def __getattr__(name: str) -> Any:
    """Any other pyarrow.compute name (imports pyarrow.compute: slower, still correct)."""
    import pyarrow.compute

    return getattr(pyarrow.compute, name)

"""Loading the YAML files users write (allowlists, probe sets, pipeline configs, metadata).

`safe_load` is yaml.safe_load (libyaml's C parser when present) with two refusals every
reader of a hand-edited file wants:
- a key given twice in one mapping. YAML forbids it, but PyYAML keeps the last value without a
  word, so an allowlist entry written `probe: openat` ... `probe: read` silently became a
  `read` entry, and a config's second `paths:` section replaced the first;
- nesting past Python's recursion limit (`[[[[...]]]]`), which escaped as RecursionError;
- an integer longer than Python converts from text (4,300 digits, `sys.get_int_max_str_digits`):
  `version: 111...1` escaped from the constructor as a ValueError (a traceback from `baseline
  diff --allowlist`, an internal error elsewhere).
All three raise YamlContentError (a TracebaseError) naming the file and the line; syntax errors stay yaml.YAMLError for
the caller to word, as before.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from tracer.errors import TracebaseError

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlContentError(TracebaseError):
    """Well-formed YAML that no reader of ours accepts: "SOURCE: expected ..., found ... at line N"."""

    def __init__(self, source: str, expected: str, found: str):
        super().__init__(f"{source}: expected {expected}, found {found}")
        self.source, self.expected, self.found = source, expected, found


class _HugeInteger(Exception):
    def __init__(self, digits: int, line: int):
        super().__init__(digits, line)
        self.digits, self.line = digits, line


class _DuplicateKey(Exception):
    def __init__(self, key: object, line: int, first: int):
        super().__init__(key, line, first)
        self.key, self.line, self.first = key, line, first


@functools.cache
def _strict_loader() -> type:
    """The loader class, built on first use: importing yaml costs every command that never
    reads YAML (the CLIs import their modules up front)."""
    import yaml

    class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
            seen: dict[object, int] = {}
            for key_node, _value in node.value:
                if key_node.tag == _MERGE_TAG:  # '<<: *base' may repeat keys it merges; explicit keys win
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise _DuplicateKey(key, line, seen[key])
                    seen[key] = line
                except TypeError:  # an unhashable key: the base constructor reports it
                    continue
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
            try:
                return super().construct_yaml_int(node)
            except ValueError:  # past int()'s digit limit: no reader of ours wants such a number
                digits = sum(c.isdigit() for c in str(node.value))
                raise _HugeInteger(digits, node.start_mark.line + 1) from None

    StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)
    StrictLoader.add_constructor("tag:yaml.org,2002:map", StrictLoader.construct_yaml_map)
    return StrictLoader


def safe_load(text: str | bytes, source: str) -> Any:
    """yaml.safe_load(text), refusing duplicate keys and runaway nesting (TracebaseError naming
    `source`); yaml.YAMLError for a syntax error."""
    try:
        import yaml

        return yaml.load(text, Loader=_strict_loader())  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as dup:
        raise YamlContentError(source, "each key once in a mapping",
                               f"{dup.key!r} again at line {dup.line} (first at line {dup.first})") from None
    except _HugeInteger as huge:
        raise YamlContentError(source, f"an integer of at most {sys.get_int_max_str_digits():,} digits",
                               f"one of {huge.digits:,} digits at line {huge.line}") from None
    except RecursionError:
        raise YamlContentError(source, "YAML nested a few hundred levels at most", "deeper nesting") from None

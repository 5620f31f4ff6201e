"""Expected (routine) errors: the allowlist file, matching, and learning from good runs.

File format (``expected_errors.yaml``, version 1)::

    version: 1
    entries:
      - id: curated-enoent-disabled-feature   # unique
        source: curated            # curated | learned
        reason: "why this error is routine"   # required for curated
        probe: "ib_uverbs_query_*"  # glob on the probe name
        errno: ENOENT              # symbolic name, or a glob such as "ERESTART*"
        path: "/sys/class/infiniband/**"   # optional glob on the normalised path
        context: "python*"         # optional glob on the call context (process name / root op)
        comm: "brisk-*"            # optional glob on the caller's process name (comm)
        support: {runs: 4, total: 4}   # learned: good runs seen in / total
        first_seen: "2026-11-29T10:00:00Z"
        last_seen: "2026-11-29T11:00:00Z"
        stats: {...}               # optional fleet statistics
        status: active             # active | stale

The ``stats`` the audit acts on are checked at load, a wrong type refused naming the field:
``fatal_when_returned``, ``fleet_wide``, ``host_configuration``, ``update_regression`` true or
false; ``fatal_hosts``, ``absent_hosts``, ``fatal_to``, ``covers`` lists of names;
``fatal_since`` one ISO date-time for every host of ``fatal_hosts`` or a mapping of host to one;
``rate_upper`` a rate >= 0 or a mapping of probe to one. Other keys are notes.

Globs (`glob_match`, linear time): ``*``/``?``/``[...]`` stay within one path component;
``**`` matches anything; ``**/x`` matches ``x`` at any depth; ``{a,b}`` alternatives (a ``{``
never closed is refused at load as a typo; a literal one is escaped, ``\\{``).
A missing ``path``/``context``/``comm`` matches anything, except that a *learned* entry without a path
(learned from errors that had none) matches only errors without a path.

``comm`` names the caller an error is routine for: the same errno at the same call site can be
retried through by one program and fatal to another (one tenant's launcher retries an ARP
timeout, another's library dies of it). An entry with ``comm`` matches only errors whose process
name is known and matches it: `baseline diff` gives the traced process's name (normalised as for
``context``), the fleet audit each trace's ``comm`` (the fleet learner writes such entries for a
family whose survival depends on the caller: baseline.fleet.expected, "Caller"). Counters carry no
process name, so host alerts use the entries without ``comm`` only.
Paths are matched in their normalised form (see baseline.run.normalize: numbers and addresses as
``<n>``, temp names as ``tmp<rand>``, search-path walks as ``<search>/name``), so a learned
pattern generalises across runs; curated globs are also tried on the path before search-path
masking, so they can name directories.

Learning (`learn_expected`): every error a good run produced, keyed by (probe, errno,
normalised path, process name as context), with support = good runs it occurs in / good runs.
Merging (`ExpectedErrors.merge_learned`) never overwrites a curated entry; learned entries are
refreshed, and learned entries the new good runs no longer show are kept but marked stale.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer import atomic, resources, yamlio
from tracer.errnos import is_errno_name
from tracer.errors import TracebaseError, shown_value
from tracer.inputs import not_text, read_regular_text

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import numpy as np

FORMAT_VERSION = 1
SOURCES = ("curated", "learned")
# A file merged in place is re-read by ruamel's round-trip parser (to keep its comments), whose
# time grows faster than the line count: 1 MiB of comment lines took 2.6 s of CPU, 4 MiB over
# 100 s, and `allowlist learn` into 20 MB of them never finished (round fourteen). A learned
# list of 10,000 entries is ~100,000 lines; past this a merge in place is refused, one line.
MAX_MERGE_LINES = 200_000
STATUSES = ("active", "stale")
DEFAULT_PATH = resources.EXPECTED_ERRORS  # curated, tracked
# Where `baseline allowlist learn` writes by default (the current directory), and which
# `baseline diff` loads beside the curated file when it is there: learned entries never go
# into the curated, tracked file unless asked to (-o expected_errors.yaml).
LEARNED_NAME = "expected_errors.learned.yaml"
TOP_LEVEL_KEYS = ("version", "entries")
_GLOB_CHARS = set("*?{")


# ------------------------------------------------------------------------------------------
# globs: linear-time matching (a set of pattern positions advanced over the value, no
# backtracking), so no pattern can take long whatever its stars
# ------------------------------------------------------------------------------------------
_LIT, _ONE, _CLASS, _STAR, _DSTAR, _DSTAR_DIR = range(6)


_GLOB_SPECIAL = re.compile(r"([\\*?\[\]{}])")


def glob_escape(text: str) -> str:
    """`text` as a glob that matches it alone: every character the glob syntax gives a meaning
    (``\\ * ? [ ] { }``) escaped. A learned entry's path is a path a good run took, not a
    pattern: ``caf\\xe9 link`` (a name not UTF-8, as the recorder escapes it), ``a[1].txt`` or
    ``x{1,2}`` taken as globs never matched themselves, and the good runs' own error was named."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def _unescaped(text: str) -> Iterator[tuple[int, str]]:
    """(index, character) of each character of `text` that is not escaped (``\\x`` is
    neither the backslash nor the x): the ones glob syntax can mean something."""
    escaped = False
    for i, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        else:
            yield i, c


def _expand_braces(pattern: str) -> list[str]:
    """``a{b,c}d`` -> ``[abd, acd]`` (nested braces too); an unmatched ``{`` is literal, an
    escaped one (``\\{``) too."""
    depth, start = 0, -1
    for i, c in _unescaped(pattern):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                inner, alts, level, last = pattern[start + 1 : i], [], 0, 0
                for j, d in _unescaped(inner):
                    level += d == "{"
                    level -= d == "}"
                    if d == "," and level == 0:
                        alts.append(inner[last:j])
                        last = j + 1
                alts.append(inner[last:])
                head, tail = pattern[:start], pattern[i + 1 :]
                return [x for a in alts for x in _expand_braces(head + a + tail)]
    return [pattern]


# At most this many brace alternatives per pattern: each is matched on its own (`_globs`), so
# `{a,b}{a,b}...` 24 times was 16 million patterns, built before the first match (an allowlist
# of three lines hung `baseline diff` and grew without bound). Hand-written globs use a few.
MAX_BRACE_ALTERNATIVES = 1024


def brace_alternatives(pattern: str) -> int:
    """How many brace-free patterns `_expand_braces(pattern)` makes, counted without making
    them, capped at MAX_BRACE_ALTERNATIVES + 1 (iterative: nesting depth is unbounded)."""
    cap = MAX_BRACE_ALTERNATIVES + 1
    # one frame per open brace: [alternatives closed so far, product of the open alternative]
    stack: list[list[int]] = [[0, 1]]
    for _, c in _unescaped(pattern):
        if c == "{":
            stack.append([0, 1])
        elif c == "," and len(stack) > 1:
            stack[-1] = [min(cap, stack[-1][0] + stack[-1][1]), 1]
        elif c == "}" and len(stack) > 1:
            done, product = stack.pop()
            stack[-1][1] = min(cap, stack[-1][1] * (done + product))
    while len(stack) > 1:  # unmatched `{`: literal, counted as if it closed (an upper bound)
        done, product = stack.pop()
        stack[-1][1] = min(cap, stack[-1][1] * (done + product))
    return stack[0][1]


def check_glob(pattern: str, field: str) -> None:
    """TracebaseError naming `field` when `pattern` has too many brace alternatives, or a brace
    it opens and never closes: a typo (`{create_qp,modify_qp` meant the two), which read as a
    literal `{` matches nothing it was written for. A name holding a `{` escapes it (`\\{`)."""
    depth = 0
    for _, c in _unescaped(pattern):
        depth += c == "{"
        depth -= c == "}" and depth > 0
    if depth:
        raise TracebaseError(f"{field}: expected a glob whose every '{{' is closed by a '}}' (a literal one "
                             f"escaped: \\{{), found {shown_value(pattern)}")
    n = brace_alternatives(pattern)
    if n > MAX_BRACE_ALTERNATIVES:
        raise TracebaseError(f"{field}: expected a glob with at most {MAX_BRACE_ALTERNATIVES:,} brace alternatives, "
                             f"found more ({pattern[:60]!r}...)")


def _parse_class(pattern: str, i: int) -> tuple[tuple, int] | None:
    """``[...]`` at pattern[i]: (class token, index after it), or None when unterminated."""
    j = i + 1
    negate = j < len(pattern) and pattern[j] in "!^"
    j += negate
    items: list[tuple[str, str]] = []
    first = True
    while j < len(pattern) and (pattern[j] != "]" or first):
        lo = pattern[j]
        if j + 2 < len(pattern) and pattern[j + 1] == "-" and pattern[j + 2] != "]":
            items.append((lo, pattern[j + 2]))
            j += 3
        else:
            items.append((lo, lo))
            j += 1
        first = False
    if j >= len(pattern):
        return None
    return (_CLASS, (negate, tuple(items))), j + 1


@lru_cache(maxsize=4096)
def _compile_glob(pattern: str) -> tuple[tuple, ...]:
    """Tokens of one brace-free pattern (see `glob_match` for the semantics)."""
    toks: list[tuple] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            if not toks or toks[-1] != (_DSTAR_DIR, None):
                toks.append((_DSTAR_DIR, None))
            i += 3
        elif pattern.startswith("**", i):
            if not toks or toks[-1] != (_DSTAR, None):
                toks.append((_DSTAR, None))
            i += 2
            while i < len(pattern) and pattern[i] == "*":
                i += 1
        elif c == "*":
            if not toks or toks[-1] not in ((_STAR, None), (_DSTAR, None)):
                toks.append((_STAR, None))
            i += 1
        elif c == "?":
            toks.append((_ONE, None))
            i += 1
        elif c == "[" and (parsed := _parse_class(pattern, i)) is not None:
            toks.append(parsed[0])
            i = parsed[1]
        else:
            if c == "\\" and i + 1 < len(pattern):
                i += 1
                c = pattern[i]
            toks.append((_LIT, c))
            i += 1
    return tuple(toks)


def _in_class(spec: tuple, c: str) -> bool:
    negate, items = spec
    hit = any(lo <= c <= hi for lo, hi in items)
    return (not hit if negate else hit) and c != "/"


def _closure(toks: tuple[tuple, ...], states: set[int]) -> set[int]:
    """Add the positions reachable without consuming a character (stars match nothing, ``**/``
    no directory). A negative state -(i+1) is "inside the directories of ``**/`` at i": it
    reaches i+1 only by consuming a ``/``."""
    stack = [i for i in states if i >= 0]
    while stack:
        i = stack.pop()
        if i < len(toks) and toks[i][0] in (_STAR, _DSTAR, _DSTAR_DIR) and i + 1 not in states:
            states.add(i + 1)
            stack.append(i + 1)
    return states


def _step(toks: tuple[tuple, ...], states: frozenset[int], c: str) -> frozenset[int]:
    """The position set after consuming `c` (closed)."""
    n = len(toks)
    nxt: set[int] = set()
    for i in states:
        if i < 0:  # inside the directories of a **/
            nxt.add(i)
            if c == "/":
                nxt.add(-i)
            continue
        if i == n:
            continue
        kind, arg = toks[i]
        if kind == _LIT:
            if arg == c:
                nxt.add(i + 1)
        elif kind == _ONE:
            if c != "/":
                nxt.add(i + 1)
        elif kind == _CLASS:
            if _in_class(arg, c):
                nxt.add(i + 1)
        elif kind == _STAR:
            if c != "/":
                nxt.add(i)
        elif kind == _DSTAR:
            nxt.add(i)
        else:  # _DSTAR_DIR: any directories, each ending in "/"
            nxt.add(-(i + 1))
            if c == "/":
                nxt.add(i + 1)
    return frozenset(_closure(toks, nxt)) if nxt else frozenset()


class _Glob:
    """One brace-free pattern as a lazily built DFA: position sets are the states, each
    transition computed once (`_step`) and then a dict lookup per character."""

    MAX_TRANSITIONS = 1 << 16  # memory bound; past it, transitions are computed, not stored

    def __init__(self, pattern: str):
        self.toks = _compile_glob(pattern)
        self.start = frozenset(_closure(self.toks, {0}))
        self.accept = len(self.toks)
        self.literal = only_match(pattern)
        self.table: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    def match(self, value: str) -> bool:
        if self.literal is not None:
            return value == self.literal
        states, table = self.start, self.table
        for c in value:
            key = (states, c)
            nxt = table.get(key)
            if nxt is None:
                nxt = _step(self.toks, states, c)
                if len(table) < self.MAX_TRANSITIONS:
                    table[key] = nxt
            if not nxt:
                return False
            states = nxt
        return self.accept in states


def only_match(pattern: str) -> str | None:
    """The one value a brace-free pattern matches when it has no wildcard or class (escapes
    undone: a learned path, glob_escape'd), else None."""
    if not any(ch in pattern for ch in "*?[\\"):
        return pattern
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i + 1])
            i += 2
            continue
        if c in "*?[":
            return None
        out.append(c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def _globs(pattern: str) -> tuple[_Glob, ...]:
    check_glob(pattern, "pattern")  # a library caller's pattern: bounded as a file's are
    return tuple(_Glob(p) for p in _expand_braces(pattern))


def _match_tokens(toks: tuple[tuple, ...], value: str) -> bool:
    """Position-set simulation without the transition cache (the reference for `_Glob`)."""
    states = frozenset(_closure(toks, {0}))
    for c in value:
        states = _step(toks, states, c)
        if not states:
            return False
    return len(toks) in states


@lru_cache(maxsize=65536)
def _glob_match_cached(pattern: str, value: str) -> bool:
    return any(g.match(value) for g in _globs(pattern))


def glob_match(pattern: str | None, value: str | None) -> bool:
    """Glob semantics of the allowlist (probe, errno, path and context fields):

    * ``*`` any run of characters within one path component (never ``/``); ``?`` one such
      character; ``[abc]``, ``[a-z]``, ``[!a-z]``/``[^a-z]`` one character of (not of) a class;
    * ``**`` any run of characters, ``/`` included; ``**/x`` matches ``x`` at any depth,
      the top included (``**/pyvenv.cfg`` matches ``pyvenv.cfg`` and ``/a/b/pyvenv.cfg``);
    * ``{a,b}`` either alternative (nesting allowed); ``\\`` escapes the next character;
    * the whole value must match.

    Matching is linear in the value's length for a given pattern (a set of pattern positions
    advanced one character at a time, no backtracking): any number of stars is instant.
    A None pattern matches anything; a pattern never matches a missing value."""
    if pattern is None:
        return True
    if value is None:
        return False
    return _glob_match_cached(pattern, value)


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Entry:
    """One expected-error rule."""

    id: str
    source: str
    probe: str
    errno: str
    reason: str | None = None
    path: str | None = None
    context: str | None = None
    support: dict[str, int] | None = None
    first_seen: str | None = None
    last_seen: str | None = None
    stats: dict[str, Any] | None = None
    status: str = "active"
    comm: str | None = None  # the caller (process name) it is routine for; None: any caller

    def matches(self, probe: str, errno: str | None, path: str | None = None, context: str | None = None,
                comm: str | None = None) -> bool:
        if self.status != "active" or errno is None:
            return False
        if self.path is None and self.source == "learned" and path is not None:
            return False  # learned from an error without a path: says nothing about paths
        return (
            glob_match(self.errno, errno)
            and glob_match(self.probe, probe)
            and glob_match(self.path, path)
            and glob_match(self.context, context)
            and glob_match(self.comm, comm)  # an unknown caller never matches a caller's entry
        )

    def key(self) -> tuple:
        return (self.probe, self.errno, self.path, self.context, self.comm)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        order = ["id", "source", "reason", "probe", "errno", "path", "context", "comm", "support",
                 "first_seen", "last_seen", "stats", "status"]
        return {k: d[k] for k in order if d[k] is not None}


try:  # CPython's own SHA-1 (the same digests): hashlib's loads OpenSSL, ~3.4 MiB of RSS per diff
    from _sha1 import sha1 as _sha1
except ImportError:  # pragma: no cover (a Python built without it)
    from hashlib import sha1 as _sha1


def learned_id(probe: str, errno: str, path: str | None, context: str | None, comm: str | None = None) -> str:
    # (the caller joins the digest only when there is one: ids learned before it stay the same)
    text = f"{probe}\0{errno}\0{path}\0{context}" + (f"\0{comm}" if comm is not None else "")
    digest = _sha1(text.encode()).hexdigest()[:10]
    return f"learned-{errno.lower()}-{probe}-{digest}"


def _entry_from_dict(raw: Any, index: int, source: str) -> Entry:
    where = f"{source}: entries[{index}]"
    if not isinstance(raw, dict):
        raise TracebaseError(f"{where}: expected a mapping, found {_type_name(raw)}")
    known = {f for f in Entry.__dataclass_fields__}
    unknown = sorted(str(k) for k in set(raw) - known)
    if unknown:
        raise TracebaseError(f"{where}: unknown field '{unknown[0]}' (expected one of {', '.join(sorted(known))})")
    for name in ("id", "source", "probe", "errno"):
        if raw.get(name) in (None, ""):
            raise TracebaseError(f"{where}: field '{name}': expected a value, found none")
    for name in ("id", "source", "probe", "errno", "reason", "path", "context", "comm", "first_seen", "last_seen",
                 "status"):
        if name in raw and raw[name] is not None and not isinstance(raw[name], str):
            raise TracebaseError(f"{where}: field '{name}': expected a string, found {shown_value(raw[name])}")
    if raw["source"] not in SOURCES:
        raise TracebaseError(f"{where}: field 'source': expected one of {'|'.join(SOURCES)}, found {shown_value(raw['source'])}")
    if raw["source"] == "curated" and not raw.get("reason"):
        raise TracebaseError(f"{where}: field 'reason': expected a reason for a curated entry, found none")
    errno = raw["errno"]
    if not (_GLOB_CHARS & set(errno)) and not is_errno_name(errno):
        raise TracebaseError(f"{where}: field 'errno': expected a symbolic errno name like ENOENT, found {shown_value(errno)}")
    if raw.get("comm") == "":  # would match no process: a caller's name is never empty
        raise TracebaseError(f"{where}: field 'comm': expected a process name or glob like 'python*', found ''")
    for name in ("probe", "errno", "path", "context", "comm"):
        if raw.get(name):
            check_glob(raw[name], f"{where}: field '{name}'")
    status = raw.get("status", "active")
    if status not in STATUSES:
        raise TracebaseError(f"{where}: field 'status': expected one of {'|'.join(STATUSES)}, found {shown_value(status)}")
    support = raw.get("support")
    if support is not None and not (
        isinstance(support, dict)
        and set(support) <= {"runs", "total"}
        and all(type(v) is int and v >= 0 for v in support.values())  # a bool is no count
    ):
        raise TracebaseError(f"{where}: field 'support': expected {{runs: int, total: int}}, found {shown_value(support)}")
    if support is not None and support.get("runs", 0) > support.get("total", support.get("runs", 0)):
        # good runs an error was seen in out of all good runs: more than all is a typo, and a share > 1
        raise TracebaseError(f"{where}: field 'support': expected runs <= total, found {shown_value(support)}")
    for name in ("first_seen", "last_seen"):  # merged by date (learn keeps the earliest first_seen)
        if raw.get(name) is not None and not _is_date_time(raw[name]):
            raise TracebaseError(
                f"{where}: field '{name}': expected an ISO date-time like '2026-11-29T10:00:00Z', found {shown_value(raw[name])}"
            )
    stats = raw.get("stats")
    if stats is not None and not isinstance(stats, dict):
        raise TracebaseError(f"{where}: field 'stats': expected a mapping, found {shown_value(stats)}")
    if stats:
        _check_stats(stats, where)
    return Entry(**{**{str(k): _plain(v) for k, v in raw.items()}, "status": status})


# The statistics the audit acts on (a learned entry's, or one a person edited): their types are
# checked, since a wrong one was read another way without a word -- fatal_when_returned: "no" as
# true (a non-empty string), fatal_hosts: gpu00002 as no host (battery 56). Other keys are notes.
_STATS_FLAGS = ("fatal_when_returned", "fleet_wide", "host_configuration", "update_regression")
_STATS_NAME_LISTS = ("fatal_hosts", "absent_hosts", "fatal_to", "covers")


def _check_stats(stats: dict, where: str) -> None:
    """TracebaseError naming the field of `stats` whose value is not of the type the audit reads."""
    for name in _STATS_FLAGS:
        if name in stats and type(stats[name]) is not bool:
            raise TracebaseError(f"{where}: field 'stats.{name}': expected true or false, found {shown_value(stats[name])}")
    for name in _STATS_NAME_LISTS:
        value = stats.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) and v for v in value)):
            raise TracebaseError(f"{where}: field 'stats.{name}': expected a list of names like [gpu00001], "
                                 f"found {shown_value(value)}")
    since = stats.get("fatal_since")  # (per host, or one time for every host of fatal_hosts)
    if since is not None:
        if not isinstance(since, (dict, str)):
            raise TracebaseError(f"{where}: field 'stats.fatal_since': expected an ISO date-time or a mapping of host "
                                 f"to one like {{gpu00001: '2026-11-29T10:00:00Z'}}, found {shown_value(since)}")
        for host, when in (since.items() if isinstance(since, dict) else [("", since)]):
            host = f".{host}" if host else ""
            if not (isinstance(when, dt.date) or (isinstance(when, str) and _is_date_time(when))):  # (YAML's own too)
                raise TracebaseError(f"{where}: field 'stats.fatal_since{host}': expected an ISO date-time like "
                                     f"'2026-11-29T10:00:00Z', found {shown_value(when)}")
    bands = stats.get("rate_upper")  # (one rate, or one per covered probe)

    def rate(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0

    if bands is not None and not (rate(bands) or (isinstance(bands, dict) and all(rate(v) for v in bands.values()))):
        raise TracebaseError(f"{where}: field 'stats.rate_upper': expected a rate >= 0 or a mapping of probe to "
                             f"one, found {shown_value(bands)}")


def _is_date_time(text: str) -> bool:
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _yaml():
    """A round-trip YAML reader/writer: comments, key order and quoting survive a rewrite."""
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 100
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def _new_doc():
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    return CommentedMap([("version", FORMAT_VERSION), ("entries", CommentedSeq())])


def _plain(value: Any) -> Any:
    """A round-trip YAML value as plain Python (for comparing with an entry's field)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    return value


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


_PATTERN_SYNTAX = frozenset("*?[]{}\\")


def _has_braces(pattern: str) -> bool:
    """Brace alternatives to expand (an escaped brace is none)."""
    return len(_expand_braces(pattern)) != 1 or _expand_braces(pattern)[0] != pattern


def _literal(pattern: str | None) -> bool:
    """A pattern that only matches itself (no glob syntax): looked up, not matched."""
    return pattern is not None and not any(ch in _PATTERN_SYNTAX for ch in pattern)


class _MatchIndex:
    """The entries of a set bucketed by what they can match, keeping the set's order.

    An entry with a literal probe and errno is only a candidate for that (probe, errno); with a
    literal path too, only for that path. Entries with a glob in the probe or errno are
    candidates for everything. `candidates` yields in the set's order, so the first match is
    the same entry a scan of the whole list finds."""

    def __init__(self, key: tuple[int, int], entries: list[Entry]):
        self.key = key
        self.entries = entries
        self.by_path: dict[tuple[str, str, str], list[int]] = {}
        self.by_call: dict[tuple[str, str], list[int]] = {}
        self.anywhere: list[int] = []
        for i, e in enumerate(entries):
            # a learned path is escaped (glob_escape): still one path, looked up unescaped
            path = only_match(e.path) if e.path is not None and not _has_braces(e.path) else None
            if _literal(e.probe) and _literal(e.errno):
                if path is not None:
                    self.by_path.setdefault((e.probe, e.errno, path), []).append(i)
                else:
                    self.by_call.setdefault((e.probe, e.errno), []).append(i)
            else:
                self.anywhere.append(i)

    def candidates(self, probe: str, errno: str | None, path: str | None) -> list[Entry]:
        found = self.anywhere
        if errno is not None:
            exact = self.by_path.get((probe, errno, path)) if path is not None else None
            call = self.by_call.get((probe, errno))
            if exact or call:
                found = sorted([*found, *(exact or ()), *(call or ())])
        return [self.entries[i] for i in found]


class ExpectedErrors:
    """An ordered set of expected-error entries (curated first wins on match)."""

    def __init__(self, entries: list[Entry] | None = None, source: str = "<memory>"):
        self.entries: list[Entry] = list(entries or [])
        self.source = source
        self._text: str | None = None  # the file this set was loaded from (save keeps its comments)

    # -------------------------------------------------------------------------- file I/O
    @classmethod
    def load(cls, path: str | os.PathLike, *, to_merge: bool = False) -> ExpectedErrors:
        """Read and check an allowlist file (round-trip YAML: `save` keeps its comments and
        order). Every problem is one line naming the file, the entry and the field. `to_merge`:
        the file is to be merged into in place (`save`), so one past MAX_MERGE_LINES is refused
        before it is parsed (a 4 MB file was refused only after 8 s of parsing)."""
        given = os.fspath(path)  # as typed: Path() would drop a trailing slash (`file.yaml/` is ENOTDIR)
        path = Path(path)
        if os.fsdecode(given) == "-":
            raise TracebaseError("-: expected a YAML file, found '-' (reading standard input is not supported; "
                                 "./- is a file named -)")
        try:
            text = read_regular_text(given, "a YAML file")
        except FileNotFoundError:
            raise TracebaseError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise TracebaseError(f"{path}: is a directory, expected a YAML file") from None
        except PermissionError:
            raise TracebaseError(f"{path}: permission denied, expected a readable YAML file") from None
        except UnicodeDecodeError as exc:
            raise TracebaseError(f"{path}: expected a YAML text file, found {not_text(exc)}") from None
        except OSError as exc:
            raise TracebaseError(f"{path}: cannot read: {exc.strerror or exc}") from None
        if to_merge:
            _refuse_too_long_to_merge(text, path)
        # libyaml's C loader (yamlio): reading stays fast; save() re-reads round-trip
        doc = _parse_yaml(text, path)
        if doc is None:
            doc = {"version": FORMAT_VERSION, "entries": []}
        if not isinstance(doc, dict):
            raise TracebaseError(f"{path}: expected a mapping with 'version' and 'entries', found {_type_name(doc)}")
        unknown = [str(k) for k in doc if k not in TOP_LEVEL_KEYS]
        if unknown:
            raise TracebaseError(f"{path}: unknown top-level key '{unknown[0]}' (expected {' and '.join(TOP_LEVEL_KEYS)})")
        # (type checked too: YAML's `true` is a bool, and bools equal 1 in Python)
        if type(doc.get("version")) is not int or doc.get("version") != FORMAT_VERSION:
            raise TracebaseError(f"{path}: field 'version': expected {FORMAT_VERSION}, found {shown_value(doc.get('version'))}")
        raw_entries = doc.get("entries")
        if raw_entries is None:
            raw_entries = []
        if not isinstance(raw_entries, list):
            raise TracebaseError(f"{path}: field 'entries': expected a list, found {_type_name(raw_entries)}")
        entries = [_entry_from_dict(raw, i, str(path)) for i, raw in enumerate(raw_entries)]
        seen: dict[str, int] = {}
        for i, e in enumerate(entries):
            if e.id in seen:
                raise TracebaseError(f"{path}: entries[{i}]: field 'id': expected a unique id, found {shown_value(e.id)} again (first at entries[{seen[e.id]}])")
            seen[e.id] = i
        out = cls(entries, source=str(path))
        out._text = text
        return out

    def save(self, path: str | os.PathLike) -> Path:
        """Write atomically (temp file in the same directory, then rename; mode and owner of
        a file being replaced are kept). A file this set was loaded from keeps its comments,
        its order and its formatting: entries are updated in place, new ones appended."""
        if self._text is not None:
            _refuse_too_long_to_merge(self._text, path)
        doc = _yaml().load(self._text) if self._text is not None else None
        if not isinstance(doc, dict):
            doc = _new_doc()
        if doc.get("entries") is None:
            doc["entries"] = _new_doc()["entries"]
        seq = doc["entries"]
        mine = {e.id: e.to_dict() for e in self.entries}
        for i in reversed(range(len(seq))):  # entries dropped from this set
            if not isinstance(seq[i], dict) or seq[i].get("id") not in mine:
                del seq[i]
        present = set()
        for item in seq:
            fresh = mine[item["id"]]
            present.add(item["id"])
            for key in [k for k in item if k not in fresh]:
                del item[key]
            for key, value in fresh.items():
                if key == "status" and value == "active" and key not in item:
                    continue  # the default: a hand-written entry stays as written
                if key not in item or _plain(item[key]) != value:
                    item[key] = value
        from ruamel.yaml.comments import CommentedMap

        for e in self.entries:
            if e.id not in present:
                seq.append(CommentedMap(mine[e.id]))
        buf = io.StringIO()
        _yaml().dump(doc, buf)
        self._text = buf.getvalue()
        return atomic.write_text(Path(path), self._text)

    # -------------------------------------------------------------------------- matching
    def match(self, probe: str, errno: str | None, path: str | None = None, context: str | None = None,
              comm: str | None = None) -> Entry | None:
        """The first active entry covering this error (curated entries before learned).

        Only the entries that can match are tested: a diff learns one entry per distinct good
        error, so a run walking 10,000 files brings 10,000 entries, and testing each against each
        of the bad run's 10,000 errors took minutes (`_MatchIndex`)."""
        index = self._match_index()
        for e in index.candidates(probe, errno, path):
            if e.matches(probe, errno, path, context, comm):
                return e
        return None

    def split_by_caller(self) -> tuple[ExpectedErrors, ExpectedErrors]:
        """(entries for any caller, entries naming a caller: ``comm``), each in this set's order.
        Where errors are judged without their process name (a chain analysed once for all its
        traces, counters) only the first apply; the second are matched per trace's comm."""
        anyone = ExpectedErrors([e for e in self.entries if e.comm is None], source=self.source)
        callers = ExpectedErrors([e for e in self.entries if e.comm is not None], source=self.source)
        return anyone, callers

    def _match_index(self) -> _MatchIndex:
        # Rebuilt when the list changes length (merge_learned appends); entries are never
        # replaced in place, and their fields are read again by `Entry.matches` at match time.
        key = (id(self.entries), len(self.entries))
        index = getattr(self, "_index", None)
        if index is None or index.key != key:
            index = self._index = _MatchIndex(key, self.curated() + self.learned())
        return index

    def curated(self) -> list[Entry]:
        return [e for e in self.entries if e.source == "curated"]

    def learned(self) -> list[Entry]:
        return [e for e in self.entries if e.source == "learned"]

    def __len__(self) -> int:
        return len(self.entries)

    def __add__(self, other: ExpectedErrors) -> ExpectedErrors:
        ids = {e.id for e in self.entries}
        return ExpectedErrors(self.entries + [e for e in other.entries if e.id not in ids],
                              source=f"{self.source}+{other.source}")

    # -------------------------------------------------------------------------- merging
    def merge_learned(self, entries: list[Entry], now: str | None = None) -> dict[str, int]:
        """Fold freshly learned entries in; returns counts of added/updated/stale/skipped.

        A learned entry already covered by a curated entry is skipped (curated wins and is
        never touched). A learned entry with the same key as an existing learned one updates
        its support and last_seen (keeping first_seen). Existing learned entries that the new
        learning does not contain any more are kept with status ``stale``.
        """
        now = now or _utc_now()
        counts = {"added": 0, "updated": 0, "stale": 0, "skipped_curated": 0}
        by_key = {e.key(): e for e in self.learned()}
        curated = ExpectedErrors(self.curated())  # indexed once, not listed again per entry
        ids = {e.id for e in self.entries}
        fresh_keys = set()
        for new in entries:
            if curated.match(new.probe, new.errno, new.path, new.context, new.comm) is not None:
                counts["skipped_curated"] += 1
                continue
            fresh_keys.add(new.key())
            old = by_key.get(new.key())
            if old is None:
                if new.id in ids:
                    new.id = f"{new.id}-{len(self.entries)}"
                ids.add(new.id)
                new.last_seen = new.last_seen or now
                new.first_seen = new.first_seen or now
                self.entries.append(new)
                by_key[new.key()] = new
                counts["added"] += 1
            else:
                old.support = new.support
                old.last_seen = new.last_seen or now
                old.first_seen = min(filter(None, [old.first_seen, new.first_seen]), default=now)
                old.status = "active"
                counts["updated"] += 1
        for e in self.learned():
            if e.key() not in fresh_keys and e.status != "stale":
                e.status = "stale"
                counts["stale"] += 1
        return counts


def load_default() -> ExpectedErrors:
    """The repo's curated expected_errors.yaml, or an empty set when it is not there."""
    if DEFAULT_PATH.exists():
        return ExpectedErrors.load(DEFAULT_PATH)
    return ExpectedErrors([], source="<none>")


def diff_expected(allowlists: Sequence[str | os.PathLike] | None = None,
                  learned: Sequence[str | os.PathLike] | None = None) -> ExpectedErrors:
    """The expected errors a single-run diff judges with (`baseline diff`, `baseline export
    --diff` alike): the allowlists given (each --allowlist; a second one was dropped without a
    word before), else the curated default, and beside them the learned lists given, else
    ./expected_errors.learned.yaml when it exists (`baseline allowlist learn` writes it there)."""
    if isinstance(allowlists, (str, os.PathLike)):
        allowlists = [allowlists]
    if isinstance(learned, (str, os.PathLike)):
        learned = [learned]
    expected = load_default() if not allowlists else ExpectedErrors.load(allowlists[0])
    for path in list(allowlists or [])[1:]:
        expected = expected + ExpectedErrors.load(path)
    for path in learned or ([LEARNED_NAME] if os.path.exists(LEARNED_NAME) else []):
        expected = expected + ExpectedErrors.load(path)
    return expected


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def learn_expected(good_traces: Any, min_support: float = 0.0, now: str | None = None) -> list[Entry]:
    """Learn expected errors from good runs.

    `good_traces`: Parquet files/directories (read through tracer.schema), an events frame, or
    a `baseline.run.normalize.Prepared`. Each distinct (probe, errno, normalised path, process
    name) error becomes a learned entry with support = good traces showing it / good traces,
    first/last seen from the traces' start times. Entries with support below `min_support`
    (a fraction) are dropped.
    """
    import numpy as np  # with the traces' arrays: loading an allowlist needs no numpy

    from baseline.run.normalize import Prepared

    if isinstance(good_traces, Prepared):
        prep = good_traces
    else:
        from baseline.run.traces import load_table, prepare_side

        prep, _ = prepare_side(load_table(good_traces), bad=False)
    # the good rows' errors (row numbers): only the few rows with an error are tested
    errs = np.flatnonzero(prep.errno >= 0)
    good_errs = errs[np.asarray(prep.tkey[errs]) >= 0] if len(errs) else errs
    total = _good_trace_count(prep)
    if total == 0:
        return []
    starts = _trace_starts(prep)
    now = now or _utc_now()
    out = []
    for err in distinct_errors(prep, good_errs):
        runs = len(err["tkeys"])
        if runs / total < min_support:
            continue
        seen = sorted(filter(None, (starts.get(t) for t in err["tkeys"])))
        out.append(
            Entry(
                id=learned_id(err["probe"], err["errno"], err["npath"], err["ncomm"]),
                source="learned",
                probe=err["probe"],
                errno=err["errno"],
                # a path and a process name taken, as globs that match them alone
                path=None if err["npath"] is None else glob_escape(err["npath"]),
                context=None if err["ncomm"] is None else glob_escape(err["ncomm"]),
                support={"runs": runs, "total": int(total)},
                first_seen=seen[0] if seen else now,
                last_seen=seen[-1] if seen else now,
            )
        )
    return out


def _good_trace_count(prep: Any) -> int:
    """How many good traces (trace key >= 0) have rows: from the per-stream keys when the
    trace key is stored once per stream (every stream has rows), else from every row."""
    import numpy as np

    values = getattr(prep.tkey, "values", None)
    if isinstance(values, np.ndarray) and hasattr(prep.tkey, "starts"):
        keys = values[values >= 0]
    else:
        tkey = np.asarray(prep.tkey)
        keys = tkey[tkey >= 0]
    return int(np.count_nonzero(np.bincount(keys))) if len(keys) else 0


def distinct_errors(prep: Any, rows: np.ndarray, with_plain: bool = False) -> list[dict[str, Any]]:
    """Distinct (probe, errno, npath, ncomm) errors among `rows` (a bool mask, or increasing
    row numbers), with the row indices (``rows``) and trace keys (``tkeys``) of each, sorted
    for stable output.

    ``npath`` has search-path walks masked (``<search>/name``); with `with_plain` the
    combinations are also split by ``plain_npath``, the normalised path before that masking
    (curated globs like ``**/glibc-hwcaps/**`` need the directory).
    """
    import numpy as np

    rows = np.asarray(rows)
    idx = np.flatnonzero(rows & (prep.errno >= 0)) if rows.dtype == bool else rows[prep.errno[rows] >= 0]
    if len(idx) == 0:
        return []
    cols = [prep.probe[idx], prep.errno[idx], prep.pathkey[idx], prep.ncomm[idx]]
    cols.append(prep.plainpath[idx] if with_plain else np.zeros(len(idx), dtype=np.int64))
    path2 = getattr(prep, "path2", None)
    cols.append(path2[idx] if with_plain and path2 is not None else np.full(len(idx), -1, dtype=np.int64))
    combos = np.stack(cols, axis=1)
    uniq, inv = np.unique(combos, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    by_combo = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[by_combo], np.arange(len(uniq) + 1))
    out = []
    for j, (probe, errno, pathkey, ncomm, plain, second) in enumerate(uniq.tolist()):
        members = idx[by_combo[bounds[j] : bounds[j + 1]]]
        out.append(
            {
                "probe": prep.probe_values[probe],
                "errno": prep.errno_values[errno],
                "npath": prep.path_string(pathkey),
                "plain_npath": prep.npath_values[plain] if with_plain and plain >= 0 else None,
                "path2": prep.path2_values[second] if second >= 0 else None,
                "ncomm": prep.ncomm_values[ncomm] if ncomm >= 0 else None,
                "rows": members,
                "tkeys": sorted(set(prep.tkey[members].tolist())),
            }
        )
    out.sort(key=lambda e: (e["probe"], e["errno"], e["npath"] or "", e["ncomm"] or "", e["plain_npath"] or ""))
    return out


def _trace_starts(prep: Any) -> dict[int, str]:
    """tkey -> the trace's start time (ISO UTC), when recorded."""
    import numpy as np

    from baseline.run.normalize import stream_starts

    starts = stream_starts(prep)
    keys, pick = np.unique(prep.tkey[starts], return_index=True)
    first = starts[pick]
    if "start_time" not in prep.table.column_names:  # not read (baseline diff): first/last seen = now
        return {}
    col = prep.table.column("start_time")
    return {int(k): _iso(col[int(prep.order[i])].as_py()) for k, i in zip(keys, first, strict=True)}


# ------------------------------------------------------------------------------------------
# fallback call families (fallback_calls.yaml)
# ------------------------------------------------------------------------------------------
FALLBACKS_PATH = resources.FALLBACK_CALLS  # curated, tracked
FALLBACK_KEYS = ("call", "errnos", "instead")


def _refuse_too_long_to_merge(text: str, path: str | os.PathLike) -> None:
    if (lines := text.count("\n")) > MAX_MERGE_LINES:
        raise TracebaseError(f"{path}: expected a YAML file of at most {MAX_MERGE_LINES:,} lines to merge into "
                             f"(its comments are kept), found {lines:,} lines; learn into a new file instead")


def _parse_yaml(text: str, path: Path) -> object:
    """`text` parsed, or one line naming `path`, the line and the problem (never a traceback)."""
    import yaml  # imported late: most commands never read YAML

    try:
        return yamlio.safe_load(text, str(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise TracebaseError(f"{path}: invalid YAML{where}: {problem}") from None


@lru_cache(maxsize=4)
def load_fallbacks(path: str | os.PathLike | None = None) -> dict[tuple[str, str], frozenset[str]]:
    """The curated fallback call families: (failed call, errno) -> the calls that take its
    role (`fallback_calls.yaml`; empty when the file is not there). Every problem is one line
    naming the file, the entry and the field."""
    path = Path(path) if path is not None else FALLBACKS_PATH
    if not path.exists():
        return {}
    try:
        text = read_regular_text(os.fspath(path), "a YAML file")
    except (OSError, UnicodeDecodeError) as exc:
        raise TracebaseError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    doc = _parse_yaml(text, path)
    if not isinstance(doc, dict) or type(doc.get("version")) is not int or doc.get("version") != FORMAT_VERSION:
        found = doc.get("version") if isinstance(doc, dict) else _type_name(doc)
        raise TracebaseError(f"{path}: field 'version': expected {FORMAT_VERSION}, found {shown_value(found)}")
    items = doc.get("fallbacks")
    items = [] if items is None else items
    if not isinstance(items, list):
        raise TracebaseError(f"{path}: field 'fallbacks': expected a list, found {_type_name(items)}")
    out: dict[tuple[str, str], frozenset[str]] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or set(item) != set(FALLBACK_KEYS):
            found = sorted(map(str, item)) if isinstance(item, dict) else _type_name(item)
            raise TracebaseError(f"{path}: fallbacks[{i}]: expected the keys {', '.join(FALLBACK_KEYS)}, found {found}")
        call, errnos, instead = item["call"], item["errnos"], item["instead"]
        if not isinstance(call, str) or not call:
            raise TracebaseError(f"{path}: fallbacks[{i}]: field 'call': expected a syscall name, found {shown_value(call)}")
        for key, names in (("errnos", errnos), ("instead", instead)):
            if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
                raise TracebaseError(f"{path}: fallbacks[{i}]: field '{key}': expected a list of names, found {shown_value(names)}")
        bad = [e for e in errnos if not is_errno_name(e)]
        if bad:
            raise TracebaseError(f"{path}: fallbacks[{i}]: field 'errnos': expected errno names, found {shown_value(bad[0])}")
        for errno in errnos:
            out[(call, errno)] = out.get((call, errno), frozenset()) | frozenset(instead)
    return out

"""Drain-style masking of run-to-run noise in event traces.

Two runs of the same program differ in things that carry no meaning for "did it behave the
same": pids and tids, file descriptor numbers, addresses, timings, random temp names, and
the order in which a library walks its search path. This module turns raw events into
*templates* that compare equal across runs:

* paths: mktemp names ``tmp.Xa9Zq1b2c3`` and Python ``tempfile`` names ``tmpab12cd_x`` ->
  ``tmp<rand>``; addresses (``0x7f3a...``), runs of 16+ hex digits and every other digit run
  -> ``<n>`` (so ``/proc/1234/fd/7`` -> ``/proc/<n>/fd/<n>``); split(1)'s chunk names
  ``chunk-aa``, ``chunk-ab`` ... -> ``chunk-<n>`` once a diff's paths hold a sequence's first three.
* search-path probing: a failed lookup (ENOENT/ENOTDIR) immediately followed, in the same
  thread, by a lookup of the same file name in another directory (only the scheduler's and the
  allocator's calls between: a futex, an mmap; or ld.so's check of the failed lookup's own
  directory) is a search-path walk (ld.so,
  Python imports, $PATH lookups); its directory becomes ``<search>`` so the number and order of
  directories tried does not matter once runs of identical templates are collapsed.
* process identity: a thread is named by its *role* -- its position in the fork tree and the
  command it exec'd (``bash/python3/~python3``) -- never by pid/tid.

Regexes run once per *distinct* value (the Arrow dictionary of a column, in RE2 via
pyarrow.compute), everything per row is numpy over integer codes, so a million-event trace
normalises in well under a second. polars is imported only by the frame-level helpers
(`normalize_events`, `stream_summary`, `process_roles`), never on `baseline diff`'s path.
"""

from __future__ import annotations

import heapq
import itertools
import os
import re
from collections.abc import Callable, Container, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from baseline.run import compute as pc
from baseline.run import native

if TYPE_CHECKING:
    import polars as pl

# RE2 rewrite rules applied in order to paths; each (pattern, replacement). Few rules on
# purpose: each is one pass over every distinct path. ASCII classes ([0-9], not \\d) so the
# meaning does not depend on the regex engine's Unicode defaults. Between the two, random
# tokens (`mask_random_tokens`) and run-to-run varying names (`NameTemplates`) become <rand>.
TEMP_RULES: list[tuple[str, str]] = [
    (r"\btmp(?:\.[A-Za-z0-9]{6,}|[a-z0-9_]{8}\b)", "tmp<rand>"),  # mktemp(1), Python tempfile
    # git's odb_mkstemp temporaries beside the objects (a single-class draw, `tmp_idx_cfbauu`, was
    # no random token there), named by git's template: `tmp_idx_<rand>` would leave `tmp_idx_`, a
    # token shaped like a Python tempfile draw (`_drawn_alike`)
    (r"\btmp_(obj|idx|pack|rev|mtimes|bitmap)_[A-Za-z0-9]{6}\b", r"tmp_\1_XXXXXX"),
    # git's loose objects fan out into directories named by their hash's first two hex digits:
    # a commit's hash varies with its time, so which objects/<xx> a run creates (ENOENT, mkdir,
    # then the object) is a draw -- "3a" and "d7" masked by the digit rule as "<n>a", "d<n>"
    (r"\bobjects/[0-9a-f]{2}(/|$)", r"objects/<xx>\1"),
]
DIGIT_RULES: list[tuple[str, str]] = [
    # addresses, long hex ids, then any digit run: pids (/proc/<n>/), fds (fd/<n>), counters
    (r"0[xX][0-9a-fA-F]+|[0-9a-fA-F]{16,}|[0-9]+", "<n>"),
]
PATH_RULES: list[tuple[str, str]] = TEMP_RULES + DIGIT_RULES
RAND = "<rand>"
_N = "<n>"  # what DIGIT_RULES make of a number
# Where mkstemp/mktemp put their files by default: there a 6+ character alphanumeric token
# mixing two character classes (lower, upper, digit) is taken for random; elsewhere (sed -i,
# zip, git write theirs beside the target) it must mix all three. Run-to-run variation
# learned from the good runs (`NameTemplates`) covers the rest.
TEMP_ROOTS = ("/tmp/", "/var/tmp/", "/dev/shm/")
_TOKEN = re.compile(r"[A-Za-z0-9_]{6,}")  # "_" inside: Python tempfile names use it
_RANDOM_PREFILTER = r"^(?:/tmp|/var/tmp|/dev/shm)/.*[A-Za-z0-9_]{6}|[0-9][A-Za-z0-9_]*[A-Z]|[A-Z][A-Za-z0-9_]*[0-9]"
# Rules for short free-form strings (arguments, thread names): numbers and addresses only.
ARG_RULES: list[tuple[str, str]] = [
    (r"0[xX][0-9a-fA-F]+|[0-9]+", "<n>"),
]
# Process names: a program's name is its file's, and files named at random run too (run-parts
# hooks named <nn>-<hex>, scripts a job writes under a hash): a word of 6+ hex digits of one
# case is taken for random and masked as a number is (<n>), whatever it happens to mix -- a
# random hex word is all digits one time in 17 and all letters one time in 360, and masking it
# as anything else named that run's hook differently from the others'. A real program named
# by six hex letters ("facade") is only masked: the same in every run. Python's re, not RE2
# (lookarounds): a trace has a few dozen distinct names.
_RANDOM_HEX_WORD = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-f]{6,}|[0-9A-F]{6,})(?![0-9A-Za-z])")


def normalize_comms(values: pa.Array) -> pa.Array:
    """Process names normalised: random hex words, then numbers and addresses (ARG_RULES)."""
    if len(values) and pc.any(pc.fill_null(pc.match_substring_regex(values, "[0-9a-fA-F]{6}"), False)).as_py():
        values = pa.array([None if v is None else _RANDOM_HEX_WORD.sub(_N, v) for v in values.to_pylist()],
                          type=pa.string())
    return apply_rules(values, ARG_RULES)

# A failed lookup with one of these errnos, followed by the same name elsewhere, is a
# search-path walk.
SEARCH_ERRNOS = ("ENOENT", "ENOTDIR")
SEARCH_DIR = "<search>"
# Calls a thread makes between any two of its own for the scheduler or the allocator (a
# GIL handed over, a lock contended, the heap grown, a signal mask saved): how many come
# between two steps of a search-path walk is timing, so the walk passes over them.
BETWEEN_ANY_CALLS = frozenset({
    "futex", "futex_waitv", "futex_wait", "futex_wake", "futex_requeue", "sched_yield", "restart_syscall",
    "brk", "mmap", "munmap", "mremap", "madvise", "mprotect", "rt_sigprocmask", "rt_sigreturn", "getrandom",
})
MAX_BETWEEN = 64  # ... at most this many of them between two steps of a walk
_SIGNAL_IO = frozenset({"read", "write"})  # ... and these, on a descriptor with no path (an eventfd)

# Columns the analysis needs from the events table.
ANALYSIS_COLUMNS = [
    "trace_id", "seq", "pid", "tid", "ppid", "comm", "probe", "depth", "errno", "path", "arg",
    "kind", "command", "start_time", "path2", "output",
]


_LEADING_LITERAL = re.compile(r"(?:\\b)?([A-Za-z_]{3,})(?![?*+{])")  # a pattern's leading literal word
_PREFILTER_MIN = 1000
_DIGITS_ALT = "|[0-9]+"


_BACKGROUND: ThreadPoolExecutor | None = None


def background() -> ThreadPoolExecutor:
    """The one worker thread of the differ, made when first used: it reads Parquet columns
    ahead (baseline.run.traces) and normalises the path dictionary while the caller's thread
    converts the other columns (`prepare`). What it runs is mostly Arrow (Parquet decoding,
    RE2, hashing) and the compiled loops, which release the GIL: on two cores it overlaps."""
    global _BACKGROUND
    if _BACKGROUND is None:
        _BACKGROUND = ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead")
    return _BACKGROUND


def _forget_background() -> None:
    # A forked child has no copy of the thread, while the executor would count it as idle and
    # queue work for it forever: the child makes its own when it first needs one.
    global _BACKGROUND
    _BACKGROUND = None


os.register_at_fork(after_in_child=_forget_background)


def apply_rules(values: pa.Array | pa.ChunkedArray, rules: list[tuple[str, str]]) -> pa.Array:
    """`rules` applied to every element of a string array (null stays null), in RE2.

    Shortcuts keep this cheap on ~10^5 distinct paths (an RE2 replace costs about a
    microsecond per string even when nothing matches), each giving RE2's very answer:
    * the number rules (`_NUMBER_RULES`: DIGIT_RULES, ARG_RULES, plain digit runs) run as one
      compiled pass (`native.number_runs`) when it is built;
    * a rule whose pattern starts with a literal word (``\\btmp...``) runs only on the values
      containing that word;
    * a rule ``X|[0-9]+`` runs in RE2 only on the values where ``X`` matches somewhere; on all
      others it can only replace maximal digit runs, which numpy does (`_replace_digit_runs`).
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    for pattern, replacement in rules:
        if pattern in _NUMBER_RULES:
            done = _number_runs(values, replacement, _NUMBER_RULES[pattern])
            if done is not None:
                values = done
                continue
        literal = _LEADING_LITERAL.match(pattern)
        if len(values) <= _PREFILTER_MIN or not (literal or pattern.endswith(_DIGITS_ALT)):
            values = pc.replace_substring_regex(values, pattern=pattern, replacement=replacement)
            continue
        if literal:
            hit = _containing(values, literal.group(1))
            rest = None
        else:
            hit = pc.match_substring_regex(values, pattern[: -len(_DIGITS_ALT)])
            rest = _replace_digit_runs(values, replacement)
        hit = pc.fill_null(hit, False)
        if not pc.any(hit).as_py():
            values = values if rest is None else rest
            continue
        rewritten = pc.replace_substring_regex(pc.filter(values, hit), pattern=pattern, replacement=replacement)
        values = pc.replace_with_mask(values if rest is None else rest, hit, rewritten)
    return values


# The number rules with a compiled twin (`native.number_runs`): pattern -> its flags.
_NUMBER_RULES = {
    "[0-9]+": 0,
    ARG_RULES[0][0]: native.HEX_ADDRESSES,
    DIGIT_RULES[0][0]: native.HEX_ADDRESSES | native.LONG_HEX,
}


def _string_buffers(values: pa.Array) -> tuple[Any, np.ndarray]:
    """A string array's data buffer and its n + 1 int32 offsets (of its slice)."""
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=values.offset + n + 1)[values.offset :]
    return values.buffers()[2], offsets


def _number_runs(values: pa.Array, replacement: str, flags: int) -> pa.Array | None:
    """`native.number_runs` of a string array (its nulls kept), or None (no library, another
    string type, an output past int32 offsets)."""
    if values.type != pa.string() or not len(values):
        return None
    done = native.number_runs(*_string_buffers(values), replacement.encode(), flags)
    if done is None:
        return None
    return _with_nulls(values, pa.StringArray.from_buffers(len(values), pa.py_buffer(done[0]), pa.py_buffer(done[1])))


_DIGIT_CHUNK = 1 << 20  # bytes of string data rewritten per numpy pass (bounds the temporaries)


def _replace_digit_runs(values: pa.Array, replacement: str) -> pa.Array:
    """Every maximal run of ASCII digits replaced by `replacement` (as RE2 ``[0-9]+`` would),
    computed on the UTF-8 bytes with numpy, about a megabyte of string data at a time (the
    int32 position arrays are 4 bytes per byte of text). Digits never occur inside a
    multi-byte UTF-8 sequence, so this is exact for any text."""
    if values.type != pa.string():
        return pc.replace_substring_regex(values, pattern="[0-9]+", replacement=replacement)
    done = _number_runs(values, replacement, 0)
    if done is not None:  # one pass in C, no temporaries
        return done
    n = len(values)
    _, offsets = _string_buffers(values)
    if n == 0 or int(offsets[-1] - offsets[0]) <= _DIGIT_CHUNK:
        return _replace_digit_runs_once(values, offsets, replacement)
    parts, i = [], 0
    while i < n:  # string boundaries about _DIGIT_CHUNK bytes apart (one long string alone)
        j = max(int(np.searchsorted(offsets, offsets[i] + _DIGIT_CHUNK, side="right")) - 1, i + 1)
        j = min(j, n)
        part = values.slice(i, j - i)
        parts.append(_replace_digit_runs_once(part, offsets[i : j + 1], replacement))
        i = j
    return pa.concat_arrays(parts)


def _replace_digit_runs_once(values: pa.Array, offsets: np.ndarray, replacement: str) -> pa.Array:
    """`_replace_digit_runs` of one slice; `offsets` its n + 1 string offsets."""
    n = len(values)
    lo, hi = int(offsets[0]), int(offsets[-1])
    data_buf = values.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8, count=hi)[lo:] if data_buf is not None else np.zeros(0, np.uint8)
    digit = (data - np.uint8(48)) <= np.uint8(9)  # wraps below '0'
    start = digit.copy()
    start[1:] &= ~digit[:-1]
    heads = offsets[:-1][offsets[:-1] < hi] - lo
    start[heads] = digit[heads]  # runs end at strings
    rep = replacement.encode()
    kept = ~digit
    width = kept.view(np.uint8) + start.view(np.uint8) * np.uint8(len(rep))
    end = np.cumsum(width, dtype=np.int32)  # one past each byte's output
    del width
    out = np.empty(int(end[-1]) if len(end) else 0, dtype=np.uint8)
    out[end[kept] - 1] = data[kept]  # kept bytes once, other digits dropped
    first = end[start] - len(rep)  # each run start becomes the replacement
    for j, byte in enumerate(rep):
        out[first + j] = byte
    new_offsets = np.r_[0, end][offsets - lo].astype(np.int32)
    return _with_nulls(values, pa.StringArray.from_buffers(n, pa.py_buffer(new_offsets), pa.py_buffer(out)))


def _with_nulls(values: pa.Array, result: pa.Array) -> pa.Array:
    """`result` (computed for every slot) with `values`' nulls put back."""
    if values.null_count:
        result = pc.if_else(pc.is_valid(values), result, pa.scalar(None, pa.string()))
    return result


def _classes(token: str) -> int:
    """How many of the classes lower, upper, digit occur in `token`."""
    return (any(c.islower() for c in token) + any(c.isupper() for c in token)
            + any(c.isdigit() for c in token))


_ADDRESS = re.compile(r"0[xX][0-9a-fA-F]+\Z")


# Platform names a path holds as directory names (the dynamic loader's legacy hwcaps and
# platform subdirectories, multiarch triplets' first part): fixed words, never a random token,
# even under a temp root (a job unpacked in /tmp: tls/haswell/avx512_1/x86_64 is ld.so's, not
# mkstemp's).
PLATFORM_NAMES = frozenset({"x86_64", "avx512_1", "aarch64", "ppc64le", "s390x", "armv7l", "i686"})


def _mask_tokens(value: str) -> str:
    need = 2 if value.startswith(TEMP_ROOTS) else 3

    def one(m: re.Match) -> str:
        token = m.group(0)
        if token in PLATFORM_NAMES:
            return token
        return RAND if _classes(token) >= need and not _ADDRESS.match(token) else token  # addresses: <n> later

    return _TOKEN.sub(one, value)


def mask_random_tokens(values: pa.Array) -> pa.Array:
    """mkstemp-style random tokens (``/tmp/ccAb3xYz.s``, ``sortQ8wPz1``, ``tmp_obj_rFwKeZ``)
    replaced by ``<rand>``: a 6+ character [A-Za-z0-9_] token mixing two character classes under
    a temp root (`TEMP_ROOTS`), all three anywhere. RE2 picks the few values that can hold one;
    only those are rewritten in Python."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if len(values) == 0:
        return values
    hit = _random_candidates(values)
    if not pc.any(hit).as_py():
        return values
    rewritten = pa.array([_mask_tokens(v) for v in pc.filter(values, hit).to_pylist()], type=pa.string())
    return pc.replace_with_mask(values, hit, rewritten)


def _bool_array(flags: np.ndarray) -> pa.BooleanArray:
    """A numpy bool array as Arrow's (bits packed here: pa.array of numpy data imports numpy.ma)."""
    bits = np.packbits(flags, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(flags), [None, pa.py_buffer(bits)])


def _containing(values: pa.Array, literal: str) -> pa.BooleanArray:
    """Which values hold `literal` (Arrow's match_substring; the compiled twin when built)."""
    if values.type == pa.string() and not values.null_count:
        hit = native.contains_literal(*_string_buffers(values), literal.encode())
        if hit is not None:
            return _bool_array(hit)
    return pc.match_substring(values, literal)


def _random_candidates(values: pa.Array) -> pa.BooleanArray:
    """Which values `_RANDOM_PREFILTER` matches (RE2; the compiled twin when built)."""
    if values.type == pa.string() and not values.null_count:
        hit = native.random_prefilter(*_string_buffers(values))
        if hit is not None:
            return _bool_array(hit)
    return pc.fill_null(pc.match_substring_regex(values, _RANDOM_PREFILTER), False)


def normalize_paths(values: pa.Array | pa.ChunkedArray, templates: NameTemplates | None = None) -> pa.Array:
    """The path masking pipeline on an array of distinct paths: temp-name rules, learned
    run-to-run varying names (`templates`), random tokens, then digit runs."""
    values = apply_rules(values, TEMP_RULES)
    if templates:
        values = templates.apply(values)
    return apply_rules(mask_random_tokens(values), DIGIT_RULES)


_RUNS = re.compile(r"([A-Za-z0-9_]+)")
_DIGIT_RUN = re.compile(r"[0-9]+")
_HEX = frozenset("0123456789abcdef")


def _random_token(token: str) -> bool:
    """Random-looking: 6+ characters mixing two classes (lower, upper, digit), or 16+ hex."""
    return len(token) >= NameTemplates.MIN_TOKEN and (_classes(token) >= 2 or (len(token) >= 16 and set(token) <= _HEX))


def _drawn_alike(token: str, other: str) -> bool:
    """Two tokens at the same place of two paths of one shape (so of one length) that one
    random-name generator drew: both random-looking, or one of them and the other of the same
    alphabet. mkstemp draws 6 characters of 62: one draw in ~90 is a single class (``GFSXPA``,
    ``qzkwbd``), which `_random_token` cannot tell from a word, so requiring both sides to look
    random made one good-vs-bad pair in ~45 an anomaly (fontconfig's ``cache-8.TMP-XXXXXX``
    built by the bad run and one good run). A word at the place of a good run's random name,
    letter for letter as long, is what this gives up. A `_` is a word separator, except in two
    draws of Python's tempfile (8 of [a-z0-9_], no prefix in `gettempdir`'s probe of each
    candidate directory: ``_rrtva2e`` beside ``aadtnonj``, ``k4mh77le`` beside ``_uhuqjdv``, one in
    ~7 pairs of good runs whose TMPDIR was refused, tests/test_real_programs_seventyfourth)."""
    if len(token) < NameTemplates.MIN_TOKEN:
        return False
    one, two = _random_token(token), _random_token(other)
    return (one and two) or ((one or two) and ("_" not in token + other
                                               or bool(_PY_TEMP_DRAW.fullmatch(token) and _PY_TEMP_DRAW.fullmatch(other))))


_PY_TEMP_DRAW = re.compile(r"[a-z0-9_]{8}")  # tempfile._RandomNameSequence: 8 of "a-z0-9_"


def _by_number_shape(groups: dict[tuple, list[Any]]) -> dict[tuple, list[Any]]:
    """Groups of paths of one shape (seps, token lengths) joined where they differ only in
    the lengths of tokens that are numbers in every member (pid 9971 in one run, 10022 in the
    next: git's `.tmp-<pid>-pack-<sha>.idx`); the key's length there is -1. A place where some
    member holds letters keeps its length (a hex draw that happened to be all digits,
    `12345678` beside `1b4e28ba`, is the same group as before)."""
    out: dict[tuple, list[Any]] = {}
    for (seps, lengths), members in groups.items():
        key = tuple(-1 if all(_is_number(runs[j]) for runs, _ in members) else n for j, n in enumerate(lengths))
        out.setdefault((seps, key), []).extend(members)
    return out


def _by_fixed_names(seps: tuple[str, ...], members: list[tuple[tuple[str, ...], frozenset[int]]]
                    ) -> list[list[tuple[tuple[str, ...], frozenset[int]]]]:
    """Paths of one shape (runs, good traces holding them) split by the places holding fixed
    names: a place whose every value occurs in two or more good traces (git's `.idx` and `.rev`
    beside each pack, in every run) names files, where a random draw is a run's own. Left
    together, such a place varied among the group's values and became a wildcard beside the
    random one, and a different extension of the same length compared alike. Values that
    differ only in their digits (`part7`, `part12`; a pid repeated by chance) are left to
    DIGIT_RULES, as `learn` leaves them. Only a place right after a dot (an extension, a dotted
    suffix) counts: a directory's values shared by every good trace are a coincidence of content,
    not names (git's object fan-out `objects/bc/`, `objects/5d/`: hashes of what the runs wrote,
    alike when two runs committed in the same second, another prefix in the next run)."""
    if len(members) < 3:
        return [members]
    places = []
    for j in range(len(members[0][0])):
        if not seps[j].endswith("."):
            continue
        traces_of: dict[str, set[int]] = {}
        for runs, traces in members:
            traces_of.setdefault(runs[j], set()).update(traces)
        if (len(traces_of) > 1 and all(len(t) >= 2 for t in traces_of.values())
                and len({_DIGIT_RUN.sub("0", v) for v in traces_of}) > 1):  # (not `part7`/`part12`: numbered)
            places.append(j)
    if not places:
        return [members]
    split: dict[tuple[str, ...], list[tuple[tuple[str, ...], frozenset[int]]]] = {}
    for runs, traces in members:
        split.setdefault(tuple(runs[j] for j in places), []).append((runs, traces))
    return list(split.values())


def _split_runs(value: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    parts = _RUNS.split(value)
    return tuple(parts[0::2]), tuple(parts[1::2])


def _lengths(runs: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(len(r) for r in runs)


def _is_number(token: str) -> bool:
    """ASCII digits only (what DIGIT_RULES make <n> whatever their count)."""
    return token.isascii() and token.isdigit()


def _number_shape(runs: tuple[str, ...]) -> tuple[int, ...]:
    """Token lengths, -1 for a token of digits only: two paths that differ in how many digits
    a number has (pid 9971 in one run, 10022 in the next: git's `.tmp-<pid>-pack-<sha>.idx`)
    have one number shape, where their shapes differ."""
    return tuple(-1 if _is_number(r) else len(r) for r in runs)


# Good values agreeing with a candidate that the search weighs without asking which of them also
# agree at its long tokens (`_TwinIndex._differing_somewhere_long`): that index costs memory per
# shape (~8 MiB on the bench's two million-event traces when built for every candidate)
_TWINS_WEIGHED_ANYWAY = 64


class _TwinIndex:
    """The good values of each shape (`table`, in the order `NameTemplates.learn`'s search
    takes them), looked up by a bad-only candidate's tokens at the places where a good value
    must hold the same token to teach a template with it; anything else is passed over
    unseen, so the search costs the few values that agree there, not every value of the shape.

    A pair teaches a template when its differing places are all drawn alike, or are all hex
    on both sides (`learn`, step 2). So the candidate's tokens must be found unchanged

    * at every place shorter than `MIN_TOKEN` that is not a number (`_drawn_alike` never
      takes such a token; a number is <n> whatever its digits and length: moved), and at every place
      holding a "_" in a token that does not look random (`tmp_obj_abcdef`, a single-class
      draw: `_drawn_alike` takes it beside nothing) and is not one of Python tempfile's draws, or
    * at every place where it is not hex.

    The good values agreeing at either set of places are the union of two dictionary
    lookups, merged back into the table's order so the first value the search learns from is
    the one the full scan would have met first (the same templates). A pair teaches only where
    a token of `MIN_TOKEN` characters or more differs (`_drawn_alike`), so the values agreeing
    with the candidate at its long tokens too are left out (a second lookup), and the second
    set of places is not looked up when the candidate has no long hex token. Without that,
    `rm -rf` of a spool whose 5,000 names were `q1/msg-001-6b46` met every good name of the
    shape for each bad-only one whose short draw was all digits (a number: not a place to
    agree at), differing nowhere but there: 5 CPU s of a 5,000-event diff."""

    def __init__(self, table: dict[tuple, list[tuple[str, ...]]]) -> None:
        self.table = table
        self.indexes: dict[tuple, dict[tuple[str, ...], list[int]]] = {}

    def _positions(self, key: tuple, places: tuple[int, ...], runs: tuple[str, ...]) -> list[int]:
        """Positions (ascending) in `table[key]` of the values holding `runs`' tokens at `places`."""
        index = self.indexes.get((key, places))
        if index is None:
            index = {}
            for i, other in enumerate(self.table[key]):
                index.setdefault(tuple(other[j] for j in places), []).append(i)
            self.indexes[(key, places)] = index
        return index.get(tuple(runs[j] for j in places), [])

    def _differing_somewhere_long(self, key: tuple, places: tuple[int, ...], long: frozenset[int],
                                  runs: tuple[str, ...]) -> list[int]:
        """`_positions(key, places, runs)` less the values also holding `runs`' tokens at every
        place in `long` (a token of `MIN_TOKEN` characters or more): such a pair differs at short
        tokens and numbers alone, and teaches nothing (`_drawn_alike`)."""
        agree = self._positions(key, places, runs)
        if len(agree) <= _TWINS_WEIGHED_ANYWAY:  # (a few pairs cost less than another index of the shape)
            return agree
        same = self._positions(key, tuple(sorted(long.union(places))), runs)  # (a subset of `agree`)
        if len(same) == len(agree):
            return []
        if not same:
            return agree
        drop = set(same)
        return [i for i in agree if i not in drop]

    def twins(self, key: tuple, runs: tuple[str, ...], shape: tuple[int, ...]) -> Iterator[tuple[str, ...]]:
        """The values of `table[key]` that may teach a template with `runs`, in table order;
        `shape`: the key's token lengths (-1: a number of any length)."""
        if key not in self.table:
            return
        short = tuple(j for j, n in enumerate(shape) if 0 <= n < NameTemplates.MIN_TOKEN
                      or (n >= 0 and "_" in runs[j] and not _random_token(runs[j])
                          and not _PY_TEMP_DRAW.fullmatch(runs[j])))
        bucket, last = self.table[key], -1
        long = frozenset(j for j, r in enumerate(runs) if len(r) >= NameTemplates.MIN_TOKEN)
        agreeing = [self._differing_somewhere_long(key, short, long, runs)]
        if any(set(runs[j]) <= _HEX for j in long):
            not_hex = tuple(j for j, r in enumerate(runs) if not set(r) <= _HEX)
            agreeing.append(self._differing_somewhere_long(key, not_hex, long, runs))
        for i in heapq.merge(*agreeing):
            if i != last:
                yield bucket[i]
                last = i


# split(1)'s output names: a prefix, then letters counting aa, ab, ac ... (aaa, aab ... with
# -a 3). How many chunks a run writes is how long its input was: one more chunk is one more turn
# of an output loop, as a numbered chunk's digits are (<n>). (An --additional-suffix after the
# letters is not looked for: finding "aa." inside every path cost ~8 ms of a million-event diff,
# three suffix tests ~2 ms.)
_SEQUENCE_SEEN = 3  # a sequence's first three names (aa, ab, ac) before it is taken for one
_SEQUENCE_WIDEST = 6


def _nth_name(i: int, width: int) -> str:
    """The `i`-th suffix of `width` letters in split's order (0: aa...a)."""
    letters = []
    for _ in range(width):
        i, r = divmod(i, 26)
        letters.append(chr(ord("a") + r))
    return "".join(reversed(letters))


def letter_sequences(values: pa.Array) -> frozenset[tuple[str, int]]:
    """(prefix, width) of every name sequence among `values` (distinct paths): the
    values holding the sequence's first `_SEQUENCE_SEEN` names. Three suffix tests pick the few
    values that can be those names; only those are looked at in Python."""
    if len(values) == 0:
        return frozenset()
    ending: dict[str, set[str]] = {}
    for i in range(_SEQUENCE_SEEN):  # values ending in aa, ab, ac: every sequence's first names do
        tail = _nth_name(i, 2)
        hit = pc.fill_null(pc.ends_with(values, tail), False)
        if not pc.any(hit).as_py():
            return frozenset()
        ending[tail] = set(pc.filter(values, hit).to_pylist())
    found = set()
    for value in ending["aa"]:
        run = len(value) - len(value.rstrip("a"))
        for width in range(min(run, _SEQUENCE_WIDEST), 1, -1):  # aaa is -a 3's first name, not "a" + aa
            stem = value[:-width]
            names = [stem + _nth_name(i, width) for i in range(1, _SEQUENCE_SEEN)]
            if all(n in ending[n[-2:]] for n in names):
                found.add((stem, width))
                break
    return frozenset(found)


def _mask_sequence(value: str, sequences: frozenset[tuple[str, int]]) -> str:
    for stem, width in sequences:
        letters = value[len(stem) :]
        if (len(letters) == width and value.startswith(stem)
                and letters.isascii() and letters.isalpha() and letters.islower()):
            return stem + _N
    return value


HEX_SPAN = 2  # digits a random hex token may have fewer than the good runs' (leading zeros dropped)


def _fits(runs: tuple[str, ...], pattern: tuple[int, ...]) -> bool:
    """`runs` fit a `by_number_shape` pattern: n its length, -1 a number of any length, -2 - n a
    hex token of n down to n - HEX_SPAN digits."""
    for r, n in zip(runs, pattern, strict=True):
        if len(r) == n or (n == -1 and _is_number(r)):
            continue
        if n < -1 and -n - 2 - HEX_SPAN <= len(r) <= -n - 2 and set(r) <= _HEX:
            continue
        return False
    return True


class NameTemplates:
    """Names that vary from one run to the next at the same place: temporary files of any
    naming scheme (git's ``tmp_obj_XXXXXX``, zip's ``ziXXXXXX``), per-run object ids.

    Paths are compared by *shape* (separators and alphanumeric token lengths). Learned from
    two sources:

    * the good traces: paths seen in some good traces but not all, grouped by shape; a group
      drawn from two or more good traces whose values differ in a token of 6+ characters (or
      only in hex tokens, like git's object fan-out directories; or in tokens of 3-5
      characters, each value its own and most mixing character classes, like mktemp's
      ``job.XXXX``) is a template;
    * the bad trace against the good ones: a path only the bad trace has and a good path of
      the same shape that differ only in random-looking tokens (6+ characters mixing two
      character classes, or 16+ hex digits; short hex tokens beside those) -- one good run
      repeated in the same second gives nothing to learn from, yet its object ids differ
      from the next run's.

    A template's differing tokens are wildcards; so are the same tokens of its directory
    prefixes (``objects/<rand>`` of ``objects/<rand>/tmp_obj_<rand>``). Applied to every path:
    a value of a template's shape with the same fixed tokens gets ``<rand>`` for the wildcards.

    A token of digits only is a number whatever its length: paths that differ only in how many
    digits a number has are one group, and a template applies to a value whose numbers are
    longer or shorter (git's ``.tmp-<pid>-pack-<sha1>.idx`` with a pid of 4 digits in the good
    runs and 5 in the bad one: pids cross 9999 and wrap at pid_max). A place right after a dot
    whose every value occurs in two or more good traces (git's ``.idx``/``.rev`` beside each
    hash) names files: it splits the group instead of becoming a wildcard beside the random
    token (a directory's shared values are not names: see `_by_fixed_names`).
    """

    MIN_TOKEN = 6
    MIN_SHORT_TOKEN = 3
    NUMBER_SPAN = 2  # digits a number of the bad trace's path may have more or fewer than a good run's

    def __init__(self) -> None:
        # shape -> (fixed tokens, wildcards, hex places that are <n>: see `learn`)
        self.by_shape: dict[tuple, list[tuple[dict[int, str], frozenset[int], frozenset[int]]]] = {}
        # The same templates again for the values whose numbers are longer or shorter: the
        # templates learned from values with a token of digits only at a place that is no
        # wildcard (a pid, a counter), by separators, each with its token lengths (-1: a
        # number of any length there). Consulted only when no template of the exact shape
        # applies (pid 10022 where the good runs had 9971; a wildcard place that drew digits
        # only in this run is still its length, not a number).
        self.by_number_shape: dict[tuple, list[tuple[tuple[int, ...], tuple[dict[int, str], frozenset[int],
                                                                              frozenset[int]]]]] = {}
        # the templates already added, hashable (a bucket's `in` was a scan: quadratic in the
        # templates of one shape, each shard of a run's own directory one of them)
        self._seen: set[tuple] = set()
        self._seen_numbers: set[tuple] = set()
        # split(1)-style name sequences (stem, letters): see `letter_sequences`
        self.sequences: frozenset[tuple[str, int]] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.by_shape) or bool(self.sequences)

    def merged(self, other: NameTemplates) -> NameTemplates:
        """These templates and `other`'s in one set (neither changed)."""
        out = NameTemplates()
        out.sequences = self.sequences | other.sequences
        for source in (self, other):
            for key, entries in source.by_shape.items():
                for entry in entries:
                    seen = (*key, frozenset(entry[0].items()), entry[1], entry[2])
                    if seen not in out._seen:
                        out._seen.add(seen)
                        out.by_shape.setdefault(key, []).append(entry)
            for head, numbered in source.by_number_shape.items():
                for pattern, entry in numbered:
                    seen = (head, pattern, frozenset(entry[0].items()), entry[1], entry[2])
                    if seen not in out._seen_numbers:
                        out._seen_numbers.add(seen)
                        out.by_number_shape.setdefault(head, []).append((pattern, entry))
        return out

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_shape.values())

    def _add(self, seps: tuple[str, ...], lengths: tuple[int, ...], fixed: dict[int, str],
             varying: frozenset[int], hex_numbered: frozenset[int] = frozenset(),
             numbers: frozenset[int] = frozenset(), hex_wild: bool = False) -> None:
        """A template of the shape (`seps`, `lengths`); `numbers`: its places holding digits
        only (no wildcard), where a number of any length fits (`by_number_shape`); `hex_wild`:
        its wildcards drew hex digits only, so a hex token up to `HEX_SPAN` digits shorter fits
        there too (printf's %x of a random number drops its leading zeros: `stage-<pid>-efeebcd`
        beside the good runs' `stage-<pid>-5a3f9e1c`)."""
        for m in range(len(lengths), 0, -1):  # the whole shape, then directory prefixes ending after a wildcard
            if m < len(lengths) and not (seps[m].startswith("/") and any(j < m for j in varying | hex_numbered)):
                continue
            entry = ({j: v for j, v in fixed.items() if j < m}, frozenset(j for j in varying if j < m),
                     frozenset(j for j in hex_numbered if j < m))
            head = seps[:m] + ("",) if m < len(lengths) else seps
            seen = (head, lengths[:m], frozenset(entry[0].items()), entry[1], entry[2])
            if seen not in self._seen:
                self._seen.add(seen)
                self.by_shape.setdefault((head, lengths[:m]), []).append(entry)
            wild = hex_wild and m == len(lengths)
            if any(j < m for j in numbers) or wild:
                # (-1: a number of any length; -2 - n: a hex token of n down to n - HEX_SPAN digits)
                pattern = tuple(-1 if j in numbers else -2 - n if wild and j in varying else n
                                for j, n in enumerate(lengths[:m]))
                if (pattern, seen) not in self._seen_numbers:
                    self._seen_numbers.add((pattern, seen))
                    self.by_number_shape.setdefault(head, []).append((pattern, entry))

    @classmethod
    def learn(cls, values: Values, codes: np.ndarray, tkey: np.ndarray) -> NameTemplates:
        """`codes` (per row, -1 null) into `values`; `tkey` the row's trace: good traces 0..,
        the bad trace -1."""
        out = cls()
        if not (codes >= 0).any():
            return out
        out.sequences = letter_sequences(values.arrow)
        # Which traces each distinct value occurs in: one presence row per trace (scatter
        # writes, no sorting of the rows).
        n_codes = len(values)
        bounds = np.r_[0, np.flatnonzero(tkey[1:] != tkey[:-1]) + 1, len(tkey)]
        keys = unique_ints(tkey[bounds[:-1]])  # the traces, from the heads of the runs
        presence = np.zeros((len(keys), n_codes + 1), dtype=bool)
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            presence[int(np.searchsorted(keys, tkey[lo])), codes[lo:hi]] = True  # -1 lands in the spare column
        presence = presence[:, :n_codes]
        good_idx = np.flatnonzero(keys >= 0)
        n_good = len(good_idx)
        n_good_of = presence[good_idx].sum(axis=0) if n_good else np.zeros(n_codes, dtype=np.int64)
        in_bad = presence[np.flatnonzero(keys < 0)].any(axis=0)
        uniq = np.arange(n_codes)
        # 1. run-to-run variation among the good traces
        if n_good >= 2:
            groups: dict[tuple, list[tuple[tuple[str, ...], frozenset[int]]]] = {}
            partial = (n_good_of > 0) & (n_good_of < n_good)
            bad_runs_cache: list[dict[tuple, list[tuple[str, ...]]]] = []

            def bad_runs_of(key: tuple, lengths: tuple[int, ...]) -> list[tuple[str, ...]]:
                """The bad trace's own values of a group's shape `key` (-1: a number of any
                length, or any token as long as the first member's, `lengths`; split once, only
                when asked)."""
                if not bad_runs_cache:
                    by: dict[tuple, list[tuple[str, ...]]] = {}
                    for code in np.flatnonzero(in_bad & (n_good_of == 0)).tolist():
                        value = values[code]
                        if value is not None:
                            seps_, runs_ = _split_runs(value)
                            by.setdefault((seps_, len(runs_)), []).append(runs_)
                    bad_runs_cache.append(by)
                seps_, shape_ = key
                return [runs_ for runs_ in bad_runs_cache[0].get((seps_, len(shape_)), ())
                        if all(len(r) == m or (n < 0 and _is_number(r))
                               for r, n, m in zip(runs_, shape_, lengths, strict=True))]
            for code in np.flatnonzero(partial).tolist():
                value = values[code]
                if value is None:
                    continue
                seps, runs = _split_runs(value)
                traces = frozenset(np.flatnonzero(presence[good_idx, code]).tolist())
                groups.setdefault((seps, _lengths(runs)), []).append((runs, traces))
            for (seps, shape), members in [(key, sub) for key, group in _by_number_shape(groups).items()
                                           for sub in _by_fixed_names(key[0], group)]:
                if len(members) < 2 or len(frozenset().union(*(t for _, t in members))) < 2:
                    continue
                lengths = _lengths(members[0][0])  # (of the first: numbers vary in length)
                numbers = frozenset(j for j, n in enumerate(shape) if n < 0)  # digits only in every member
                varying = frozenset(j for j in range(len(lengths)) if len({runs[j] for runs, _ in members}) > 1)
                # A token whose values differ only in their digits (a pid, a checkpoint's
                # `step9200`/`step3500`) is no wildcard and no fixed token either: its digits are
                # <n> by DIGIT_RULES, as they are in a value of another shape (`step300`, another
                # pid's length). Made <rand> here, the same name in a run where the template
                # does not apply would not match.
                numbered = frozenset(j for j in varying if len({_DIGIT_RUN.sub("0", runs[j]) for runs, _ in members}) == 1)
                varying -= numbered
                # ... unless every value there is hex (git's object fan-out `12`/`34`, a uuid's
                # `4123`/`4567`): then the digits-only difference is the luck of random hex
                # characters, and the next run's `ab` or `4fed` at that place is the same kind
                # of name. Such a place becomes <n> for any hex value of its length (what the
                # digit rule makes of the all-digit ones), so the mask depends on the token's
                # shape (place, length, alphabet), never on which hex characters it drew.
                # (of one length: numbers of several lengths are counters, not hex draws)
                hex_numbered = frozenset(j for j in numbered if all(set(runs[j]) <= _HEX for runs, _ in members)
                                         and len({len(runs[j]) for runs, _ in members}) == 1)
                if not varying:
                    # (a template only when a good or the bad value has a hex letter there: on
                    # digits alone the digit rule gives the same <n>, and no template spares
                    # `apply`'s Python pass over every path)
                    if hex_numbered and any(not runs_[j].isdigit() for runs_ in
                                            [r for r, _ in members] + bad_runs_of((seps, shape), lengths) for j in hex_numbered):
                        out._add(seps, lengths, {j: members[0][0][j] for j in range(len(lengths)) if j not in numbered},
                                 frozenset(), hex_numbered, numbers)
                    continue  # numbers (pids, counters) are <n> already
                long_token = any(lengths[j] >= cls.MIN_TOKEN for j in varying)
                hex_only = all(set(runs[j]) <= _HEX for runs, _ in members for j in varying)
                # mktemp's shortest templates (XXX, XXXX): every value its own, and together
                # (with the bad trace's values of this shape) drawing on two or more character
                # classes. Not "most values mix classes": a 4-character token of 62 symbols is
                # single-class 6 % of the time, so two good runs would fail that 12 % of the time.
                short_random = all(
                    lengths[j] >= cls.MIN_SHORT_TOKEN
                    and len({runs[j] for runs, _ in members}) == len(members)
                    and _classes("".join([runs[j] for runs, _ in members]
                                         + [runs[j] for runs in bad_runs_of((seps, shape), lengths)])) >= 2
                    for j in varying)
                if long_token or hex_only or short_random:
                    out._add(seps, lengths, {j: members[0][0][j] for j in range(len(lengths))
                                             if j not in varying and j not in numbered}, varying, hex_numbered, numbers,
                             hex_wild=hex_only)
                elif hex_numbered:
                    out._add(seps, lengths, {j: members[0][0][j] for j in range(len(lengths)) if j not in numbered},
                             frozenset(), hex_numbered, numbers)
        # 2. paths only the bad trace has, against good paths of the same shape
        bad_only = uniq[in_bad & (n_good_of == 0)]
        if n_good and len(bad_only):
            # (a token of MIN_TOKEN characters or more: the bad side's may be one of mkstemp's
            # single-class draws, see `_drawn_alike`)
            cand = [(v, _split_runs(v)) for v in (values[c] for c in bad_only.tolist())
                    if v is not None and any(len(t) >= cls.MIN_TOKEN for t in _RUNS.findall(v))]
            if cand:
                shapes = {(seps, shape(runs)) for _, (seps, runs) in cand for shape in (_lengths, _number_shape)}
                # good values as long as a candidate, or as long as it would be with each of its
                # numbers up to NUMBER_SPAN digits shorter or longer (a pid past 9999)
                wanted: set[int] = set()
                for v, (_, runs) in cand:
                    span = cls.NUMBER_SPAN * sum(_is_number(r) for r in runs)
                    wanted.update(range(len(v) - span, len(v) + span + 1))
                lengths_wanted = pa.array(sorted(wanted), type=pa.int32())
                good_codes = uniq[n_good_of > 0]
                good_vals = pc.take(values.arrow, arrow_of(np.asarray(good_codes)))
                near = pc.fill_null(pc.is_in(pc.utf8_length(good_vals), value_set=lengths_wanted), False)
                by_shape: dict[tuple, list[tuple[str, ...]]] = {}
                by_numbers: dict[tuple, list[tuple[str, ...]]] = {}
                for v in pc.filter(good_vals, near).to_pylist():
                    seps, runs = _split_runs(v)
                    for table, shape in ((by_shape, _lengths(runs)), (by_numbers, _number_shape(runs))):
                        if (seps, shape) in shapes:
                            table.setdefault((seps, shape), []).append(runs)
                exact, numbered = _TwinIndex(by_shape), _TwinIndex(by_numbers)
                for _, (seps, runs) in cand:
                    lengths = _lengths(runs)
                    numbers = frozenset(j for j, r in enumerate(runs) if _is_number(r))
                    number_shape = _number_shape(runs)
                    # the good values of its shape, then those whose numbers are longer or shorter
                    # (lazily: the loop stops at the first good value it learns from), each only
                    # where it agrees with the candidate at the places no template could vary
                    # (`_TwinIndex`: the search was quadratic when a candidate had no twin)
                    for other in itertools.chain(
                            exact.twins((seps, lengths), runs, number_shape),
                            (o for o in numbered.twins((seps, number_shape), runs, number_shape)
                             if _lengths(o) != lengths)):
                        # numbers are <n> by DIGIT_RULES whichever they are: no wildcards, no fixed
                        # tokens -- also two of one length (rank-112 and rank-240, pids 48770 and
                        # 14683 beside rsync's .core.<pid>.XXXXXX: as varying places they made the
                        # single-class draw `nrxqja` the only random-looking place of three)
                        moved = frozenset(j for j in numbers if runs[j] != other[j]
                                          and (len(runs[j]) != len(other[j]) or _is_number(other[j])))
                        varying = frozenset(j for j in range(len(runs)) if runs[j] != other[j]) - moved
                        randomish = [j for j in varying if _drawn_alike(runs[j], other[j])]
                        rest_hex = all(set(runs[j]) <= _HEX and set(other[j]) <= _HEX for j in varying)
                        if randomish and (len(randomish) == len(varying) or rest_hex):
                            out._add(seps, lengths, {j: runs[j] for j in range(len(runs)) if j not in varying | moved},
                                     varying, numbers=numbers - varying)
                            break
        return out

    def apply(self, values: pa.Array) -> pa.Array:
        """Wildcard tokens of matching values replaced by ``<rand>``, a name sequence's letters
        by ``<n>`` (null stays null)."""
        if self.sequences:
            values = self._apply_sequences(values)
        if not self.by_shape:
            return values
        out = []
        changed = False
        by_number_shape = self.by_number_shape
        for value in values.to_pylist():
            if value is not None:
                seps, runs = _split_runs(value)
                found = self._match(self.by_shape.get((seps, _lengths(runs)), ()), runs)
                if found is None and by_number_shape and seps in by_number_shape:
                    found = self._match((entry for pattern, entry in by_number_shape[seps]
                                         if _fits(runs, pattern)), runs)
                if found is not None:
                    varying, hex_numbered = found
                    value = "".join(s + (RAND if j in varying else _N if j in hex_numbered else r)
                                    for j, (s, r) in enumerate(zip(seps, runs, strict=False))) + seps[-1]
                    changed = True
            out.append(value)
        return pa.array(out, type=pa.string()) if changed else values

    def _apply_sequences(self, values: pa.Array) -> pa.Array:
        hit = None
        for stem, _ in self.sequences:
            one = pc.starts_with(values, stem)
            hit = one if hit is None else pc.or_(hit, one)
        hit = pc.fill_null(hit, False)
        if not pc.any(hit).as_py():
            return values
        masked = [_mask_sequence(v, self.sequences) for v in pc.filter(values, hit).to_pylist()]
        return pc.replace_with_mask(values, hit, pa.array(masked, type=pa.string()))

    @staticmethod
    def _match(entries: Iterable[tuple[dict[int, str], frozenset[int], frozenset[int]]],
               runs: tuple[str, ...]) -> tuple[frozenset[int], frozenset[int]] | None:
        """(wildcards, hex places) of the first template of `entries` that `runs` fits."""
        for fixed, varying, hex_numbered in entries:
            if all(runs[j] == v for j, v in fixed.items()) and all(set(runs[j]) <= _HEX for j in hex_numbered):
                return varying, hex_numbered
        return None


def normalize_path_expr(col: str = "path") -> pl.Expr:
    """Polars expression masking noise in a path column (null stays null); same engine and
    rules as everything else here."""
    import polars as pl

    return pl.col(col).map_batches(
        lambda s: pl.Series(s.name, normalize_paths(s.cast(pl.String).to_arrow())),
        return_dtype=pl.String,
    )


def normalize_string(value: str | None, rules: list[tuple[str, str]] | None = None) -> str | None:
    """Normalise one string with the same rules (for commands, tests and display)."""
    if value is None:
        return None
    arr = pa.array([value], type=pa.string())
    return (apply_rules(arr, rules) if rules else normalize_paths(arr))[0].as_py()


def _mapped(df: pl.DataFrame, col: str, rules: list[tuple[str, str]] | Callable[[pa.Array], pa.Array],
            out: str) -> pl.DataFrame:
    """Add `out` = rules (or a function of the values) applied to `col`, computed once per
    distinct value and joined back."""
    import polars as pl

    uniq = df.select(pl.col(col).unique()).drop_nulls()
    # (polars hands strings over as large or view strings; the rules' kernels take plain ones)
    arrow = uniq.get_column(col).cast(pl.String).to_arrow().cast(pa.string())
    if callable(rules):
        mapped = rules(arrow)
    else:
        mapped = normalize_paths(arrow) if rules is PATH_RULES else apply_rules(arrow, rules)
    uniq = uniq.with_columns(pl.Series(out, mapped, dtype=pl.String))
    return df.join(uniq, on=col, how="left", nulls_equal=False)


def normalize_events(df: pl.DataFrame, stream_keys: tuple[str, ...] = ("trace_id", "tid")) -> pl.DataFrame:
    """Add normalised columns to an events frame and sort it into per-thread streams.

    The frame-level twin of `prepare` (same rules), for small frames and inspection: adds
    ``npath`` (masked path, search-path walks as ``<search>/name``), ``narg`` and ``ncomm``;
    the result is sorted by `stream_keys` then ``seq``.
    """
    import polars as pl

    df = df.sort([*stream_keys, "seq"])
    df = _mapped(df, "path", PATH_RULES, "npath")
    df = _mapped(df, "arg", PATH_RULES, "narg")
    df = _mapped(df, "comm", normalize_comms, "ncomm")

    same_stream = same_stream2 = pl.lit(True)
    for key in stream_keys:
        same_stream = same_stream & (pl.col(key).shift(-1) == pl.col(key))
        same_stream2 = same_stream2 & (pl.col(key).shift(-2) == pl.col(key))
    base = pl.col("npath").str.extract(r"([^/]+)/*$", 1)
    dirname = pl.col("npath").str.extract(r"^(.*)/[^/]+/*$", 1)
    raw_base = pl.col("path").str.extract(r"([^/]+)/*$", 1)
    raw_dir = pl.col("path").str.extract(r"^(.*)/[^/]+/*$", 1)

    def other_directory(k: int) -> pl.Expr:
        """The lookup k rows on is in another directory: as templates, or as written when the
        two are one template (prepare's `walks_on`)."""
        return ((dirname.shift(-k) != dirname)
                | ((raw_dir.shift(-k) != raw_dir) & (raw_base.shift(-k) == raw_base))).fill_null(False)

    # the next lookup of the walk: the next row, or the one after it when the next row checks
    # the failed lookup's own directory (ld.so, see `_after_directory_check`)
    checks_dir = same_stream.fill_null(False) & (pl.col("npath").shift(-1) == dirname).fill_null(False)
    searching = pl.col("errno").is_in(SEARCH_ERRNOS) & pl.when(checks_dir).then(
        same_stream2.fill_null(False)
        & (base.shift(-2) == base).fill_null(False)
        & other_directory(2)
    ).otherwise(
        same_stream.fill_null(False)
        & (base.shift(-1) == base).fill_null(False)
        & other_directory(1)
    )
    return df.with_columns(
        pl.when(searching).then(pl.lit(SEARCH_DIR + "/") + base).otherwise(pl.col("npath")).alias("npath")
    )


# ------------------------------------------------------------------------------------------
# the fast path: integer codes over Arrow dictionaries
# ------------------------------------------------------------------------------------------
DICT_COLUMNS = ["trace_id", "comm", "probe", "errno", "path", "arg", "kind", "command", "path2"]
SEARCH_KEY_OFFSET = 1 << 30  # path keys >= this are <search>/<basename #(key - offset)> (int32 keys)
# Raw columns a Prepared keeps for display (everything else becomes integer arrays).
KEPT_COLUMNS = ("path", "comm", "start_time", "arg", "path2", "output")


class Values:
    """Distinct values of a column (an Arrow string array), indexed by code."""

    def __init__(self, arrow: pa.Array):
        self.arrow = arrow

    def __len__(self) -> int:
        return len(self.arrow)

    def __getitem__(self, i: int) -> str | None:
        return self.arrow[int(i)].as_py()

    def __iter__(self):
        return iter(self.arrow.to_pylist())

    def series(self) -> pl.Series:
        import polars as pl

        return pl.Series("v", self.arrow) if len(self.arrow) else pl.Series("v", [], dtype=pl.String)


def unique_ints(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an integer array: `np.unique` without its first plain call
    importing numpy.ma (it checks for masked arrays: ~0.08 s of CPU a diff). For the small
    arrays the diff asks about (codes at a few call sites, run heads)."""
    a = np.sort(np.asarray(a).ravel())
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def take(a: np.ndarray, idx: Any) -> Any:
    """``a[idx]``: for many integer indices into a flat array, one compiled pass
    (`native.take`: numpy casts narrow indices to intp a buffer at a time and gathers through
    its general iterator, ~3x as long for two million int16 codes); else numpy's own."""
    out = native.take(a, idx)
    return a[idx] if out is None else out


def code_in(codes: np.ndarray, members: Any, n_values: int) -> np.ndarray:
    """Boolean: which `codes` (0..n_values-1, -1 for null) are among `members`: one gather
    from a lookup table (`np.isin` on a whole column builds temporaries of 8 bytes a row)."""
    lut = np.zeros(n_values + 1, dtype=bool)  # the extra last entry: null (-1) is never a member
    lut[np.asarray(members, dtype=np.int64)] = True
    return take(lut, codes)


def view_in(view: Any, members: Any, n_values: int) -> np.ndarray:
    """Boolean per row: which rows' codes (0..n_values-1, -1 for null) of a column or a
    `Recoded` view are among `members`. Through a `Recoded` (the plain path of each row from
    its raw path code) the members' table is looked up through the small raw-code table
    first, so the rows' codes are gathered once, never made as a column of their own."""
    if not isinstance(view, Recoded):
        return code_in(np.asarray(view), members, n_values)
    lut = np.zeros(n_values + 1, dtype=bool)  # the extra last entry: null (-1) is never a member
    lut[np.asarray(members, dtype=np.int64)] = True
    return take(lut[view.table], view.codes)  # the table's own last entry (-1) is null's


def codes_where(values: Iterable[str], member: Container[str] | Callable[[str], bool]) -> np.ndarray:
    """The codes (int32, ascending) of the distinct `values` of a column that are in `member`
    (a set of names) or for which it holds (a predicate): e.g. a rule's errnos, as codes of
    the errno column, to test rows with `code_in`."""
    test = member if callable(member) else member.__contains__
    return np.array([i for i, v in enumerate(values) if test(v)], dtype=np.int32)


# Value spans for which `in_sorted` builds a lookup table even when the values are few.
_LUT_MIN = 1 << 16


def in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Boolean: which `values` occur in `sorted_set` (sorted, e.g. from `unique_ints`): a
    lookup table when the set's integers span little (codes, row numbers), else a binary
    search per value. Both for a small set against many values, where `np.isin` would sort
    both together (~30 ms for 600,000 call keys)."""
    values = np.asarray(values)
    if len(sorted_set) == 0:
        return np.zeros(values.shape, dtype=bool)
    lo, hi = sorted_set[0], sorted_set[-1]
    if (values.ndim == 1 and values.dtype.kind == "i" and sorted_set.dtype.kind == "i"
            and int(hi) - int(lo) < max(2 * len(values), _LUT_MIN)):
        # A set of codes (paths, rows) spanning little: one lookup table, bytes, and a
        # compiled gather (a binary search per value is a cache miss per step: ~10 ms for
        # 285,000 path codes against 64,000 in the diff's listing twins, ~1-2 ms so).
        span = int(hi) - int(lo) + 1
        lut = np.zeros(span + 1, dtype=bool)  # the last entry: every value outside [lo, hi]
        lut[sorted_set - lo] = True
        inside = (values >= lo) & (values <= hi)
        return take(lut, np.where(inside, values - lo, span))  # (outside, the difference is not used)
    pos = np.searchsorted(sorted_set, values)
    np.minimum(pos, len(sorted_set) - 1, out=pos)
    return sorted_set[pos] == values


def isin(values: Any, members: Any) -> np.ndarray:
    """``np.isin`` for integer arrays, through `in_sorted`: numpy's own sorts both together and
    its plain ``np.unique`` imports numpy.ma on first use (~10 ms of CPU a diff). Other dtypes
    (and a signed against an unsigned array, which numpy compares as floats) are numpy's."""
    values, members = np.asarray(values), np.asarray(members)
    kinds = {values.dtype.kind, members.dtype.kind}
    if kinds not in ({"i"}, {"u"}):
        return np.isin(values, members)
    return in_sorted(values.ravel(), unique_ints(members)).reshape(values.shape)


def numpy_of(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A primitive Arrow array (or chunked array) without nulls as numpy, read from its data
    buffer (zero-copy for one chunk). pyarrow's own ``to_numpy``/``__array__`` import pandas on
    first use when it is installed: ~0.25 s of CPU and ~30 MiB for every diff."""
    if isinstance(arr, pa.ChunkedArray):
        parts = [numpy_of(c) for c in arr.chunks]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else numpy_of(pa.array([], type=arr.type))
    if arr.null_count:
        raise ValueError("numpy_of: expected no nulls (fill them first)")
    t = arr.type
    buf = arr.buffers()[1]
    if pa.types.is_boolean(t):
        if buf is None:
            return np.zeros(len(arr), dtype=bool)
        bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little", count=arr.offset + len(arr))
        return bits[arr.offset :].view(bool)
    if pa.types.is_integer(t):
        dtype = np.dtype(f"{'i' if pa.types.is_signed_integer(t) else 'u'}{t.bit_width // 8}")
    elif pa.types.is_timestamp(t) or pa.types.is_duration(t):
        dtype = np.dtype(np.int64)
    elif pa.types.is_floating(t):
        dtype = np.dtype(f"f{t.bit_width // 8}")
    else:
        raise TypeError(f"numpy_of: expected a primitive column, found {t}")
    if buf is None:  # an empty array
        return np.zeros(len(arr), dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=arr.offset + len(arr))[arr.offset :]


def arrow_of(a: np.ndarray) -> pa.Array:
    """A 1-D numpy array of integers as an Arrow array (zero-copy when contiguous), the inverse
    of `numpy_of`. ``pa.array`` of a numpy array asks whether it is a masked array, and that
    first look at ``np.ma`` imports numpy.ma (~15-25 ms of CPU on every diff); here it does not
    (other dtypes are left to ``pa.array``)."""
    if a.ndim != 1 or a.dtype.kind not in "iu":
        return pa.array(a)
    a = np.ascontiguousarray(a)
    return pa.Array.from_buffers(pa.from_numpy_dtype(a.dtype), len(a), [None, pa.py_buffer(a)])


def _codes(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, Values]:
    """(int32 codes with -1 for null, distinct values) of a string or dictionary column.

    Dictionary chunks (one per file / row group) are unified by hashing only their
    dictionaries, never the rows; equal strings always get equal codes."""
    return _coded_column(col)


def _dict_key(d: pa.Array) -> tuple:
    return (d.offset, len(d), *(b.address if b is not None else 0 for b in d.buffers()))


def _coded_column(
    col: pa.ChunkedArray | pa.Array, order: np.ndarray | None = None, rules: list[tuple[str, str]] | None = None
) -> tuple[np.ndarray, Values]:
    """`_codes` of a column, optionally normalised by `rules` (codes into the distinct
    normalised values) and taken in `order`: the row maps are composed on the (small)
    dictionaries first, so each row is touched by one remap and one gather."""
    groups, raw_parts, values = _column_maps(col, rules)
    out = _gather_parts(groups, raw_parts)
    return (out if order is None else out[order]), values


def _column_maps(col: pa.ChunkedArray | pa.Array, rules: list[tuple[str, str]] | None
                 ) -> tuple[list[tuple[int, int, np.ndarray]], list[Any], Values]:
    """The row map of a column's codes: (groups (first row, end row, code of each dictionary
    index) of chunks sharing a dictionary, the rows' indices per group (a numpy array, or the
    Arrow index arrays read in place), the distinct (normalised) values)."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if not chunks or not all(pa.types.is_dictionary(c.type) for c in chunks):
        codes, values = _factorize_nullable(col)
        groups = [(0, len(codes), np.arange(len(values), dtype=np.int32))]
        raw_parts: list[Any] = [codes]
    else:
        # Batches of one column chunk share their dictionary's buffers: hash each dictionary
        # once, and convert runs of chunks with the same dictionary in one go.
        first_of: dict[tuple, int] = {}
        dicts: list[pa.Array] = []
        runs: list[tuple[tuple, list[pa.Array]]] = []
        for c in chunks:
            key = _dict_key(c.dictionary)
            if key not in first_of:
                first_of[key] = sum(len(x) for x in dicts)
                dicts.append(c.dictionary)
            if runs and runs[-1][0] == key:
                runs[-1][1].append(c.indices)
            else:
                runs.append((key, [c.indices]))
        code_of, values = _factorize(pa.concat_arrays(dicts))
        groups, raw_parts, pos = [], [], 0
        for key, indices in runs:
            size = sum(len(i) for i in indices)
            base = first_of[key]
            groups.append((pos, pos + size, code_of[base : base + key[1]]))
            raw_parts.append(indices)  # the Arrow indices, read in place below
            pos += size
    if rules is not None:
        norm_of, values = _normalised_codes(values, rules)
        groups = [(lo, hi, norm_of[m]) for lo, hi, m in groups]
    return groups, raw_parts, values


def _code_table(mapping: np.ndarray) -> np.ndarray:
    return np.append(mapping.astype(np.int32, copy=False), np.int32(-1))  # index -1: null


def _gather_parts(groups: list[tuple[int, int, np.ndarray]], raw_parts: list[Any]) -> np.ndarray:
    """The int32 codes of every row in source order (-1 for null) from `_column_maps`."""
    n = sum(hi - lo for lo, hi, _ in groups)
    out = np.empty(n, dtype=np.int32)
    for (lo, hi, mapping), raw in zip(groups, raw_parts, strict=True):
        table = _code_table(mapping)
        if isinstance(raw, np.ndarray):
            np.take(table, raw, out=out[lo:hi], mode="wrap")  # (-1: null, the appended entry)
            continue
        for indices in raw:  # gathered straight from the Arrow buffers: no filled copy of them
            _take_indices(table, indices, out[lo : lo + len(indices)])
            lo += len(indices)
    return out


def _gather_in_order(groups: list[tuple[int, int, np.ndarray]], raw_parts: list[Any], n_values: int,
                     order: np.ndarray) -> np.ndarray | None:
    """``_narrow(_gather_parts(groups, raw_parts))[order]`` in one compiled pass from the
    Arrow index buffers (native.gather_codes: no 4-byte codes array in source order, no
    narrowing copy), or None without the library or for codes not read from Arrow indices.
    int16 when every code fits it (then so do the rows' codes: what `_narrow` picks), else
    int32 narrowed as `_narrow` does (the same values, so the same type)."""
    if not native.available() or not all(isinstance(raw, list) for raw in raw_parts):
        return None
    chunks = []
    for (_, _, mapping), raw in zip(groups, raw_parts, strict=True):
        table = _code_table(mapping)
        for indices in raw:
            t = indices.type
            if not pa.types.is_signed_integer(t):
                return None
            dtype = np.dtype(f"i{t.bit_width // 8}")
            data = np.frombuffer(indices.buffers()[1], dtype=dtype, count=indices.offset + len(indices))[indices.offset :] \
                if len(indices) else np.zeros(0, dtype=dtype)
            chunks.append((data, indices.buffers()[0] if indices.null_count else None, indices.offset, table))
    fits16 = n_values < np.iinfo(np.int16).max - 1  # codes 0..n_values-1 and -1
    out = native.gather_codes(chunks, order, np.int16 if fits16 else np.int32)
    return out if out is None or fits16 else _narrow(out)


def _take_indices(table: np.ndarray, indices: pa.Array, out: np.ndarray) -> None:
    """``out[:] = table[indices]``, -1 where `indices` (an Arrow integer array) is null, read
    from its buffers (the slots under nulls hold any value: wrapped, then overwritten)."""
    if len(indices) == 0:
        return
    t = indices.type
    dtype = np.dtype(f"{'i' if pa.types.is_signed_integer(t) else 'u'}{t.bit_width // 8}")
    raw = np.frombuffer(indices.buffers()[1], dtype=dtype, count=indices.offset + len(indices))[indices.offset :]
    np.take(table, raw, out=out, mode="wrap")  # (valid indices are in range; "raise" copies `out` first)
    if indices.null_count:
        out[~numpy_of(pc.is_valid(indices))] = -1


def _factorize_nullable(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, Values]:
    """Codes of a plain string column, -1 for null."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int32), Values(pa.array([], type=pa.string()))
    enc = pc.dictionary_encode(arr)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    idx = numpy_of(pc.fill_null(enc.indices, -1)).astype(np.int32)
    return idx, Values(enc.dictionary)


# Strings below which `_factorize` leaves them to Arrow (the compiled pass pays from here on).
_FACTORIZE_MIN = 1 << 12


def _factorize(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, Values]:
    """Codes of each element of `arr` into its distinct values (Arrow hash encoding)."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int32), Values(pa.array([], type=pa.string()))
    if isinstance(arr, pa.Array) and arr.type == pa.string() and not arr.null_count and len(arr) >= _FACTORIZE_MIN:
        # The path dictionaries (~143,000-286,000 strings for two million events) in one
        # compiled pass: the same codes (first appearance) and values, in about a third of
        # Arrow's time (its hash kernel checks and appends each string through its builders).
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=arr.offset + len(arr) + 1)[arr.offset :]
        done = native.factorize_strings(arr.buffers()[2], offsets)
        if done is not None:
            codes, first = done
            return codes, Values(pc.take(arr, arrow_of(first)))
    enc = pc.dictionary_encode(arr, null_encoding="encode")
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    return numpy_of(enc.indices).astype(np.int32), Values(enc.dictionary)


def _normalised_codes(values: Values, rules: list[tuple[str, str]]) -> tuple[np.ndarray, Values]:
    """`rules` applied to every distinct value (one RE2 pass per rule), then factorised: the
    normalised code of each raw code, and the distinct normalised values."""
    return _factorize(apply_rules(values.arrow, rules))


def _remap(codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    """table[codes] keeping -1 for null (one gather: index -1 picks the appended -1)."""
    return take(np.append(table.astype(np.int32, copy=False), np.int32(-1)), codes)


def _mix64(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def _pack(fields: list[tuple[Any, int] | tuple[Any, int, int]], n: int | None = None) -> np.ndarray:
    """One uint64 per row from small non-negative integer fields (values, radix), or
    (values, radix, offset) for ``values + offset`` (codes with -1 for null: offset 1).
    `values` may be a function returning them (then `n` rows): each field is then built
    only while it is added in, one at a time.

    Exact (mixed radix, the same numbers as `np.ravel_multi_index` in C order, accumulated in
    place: no 8-byte copy of every field) while the product of the radices fits in 63 bits,
    so the result never collides with the stream markers of baseline.run.align (which have
    bit 63 set); beyond that, a 64-bit hash of the fields."""
    dims = tuple(max(f[1], 1) for f in fields)
    total = 1
    for d in dims:
        total *= d
    def get(v: Any) -> np.ndarray:
        return v() if callable(v) else v

    if n is None:
        n = len(get(fields[0][0]))
    if total < (1 << 63) and native.available():
        # the fields at once (each built as the numpy passes would build it in its turn)
        values = [get(f[0]) for f in fields]
        done = native.pack_fields(values, list(dims), [f[2] if len(f) > 2 else 0 for f in fields], n)
        if done is not None:
            return done
        fields = [(v, *f[1:]) for v, f in zip(values, fields, strict=True)]
    if total < (1 << 63):
        # Horner's rule in uint64: negative values wrap and their offset wraps them back, so
        # every step is exact modulo 2**64 and the result, below 2**63, is too.
        out = np.zeros(n, dtype=np.uint64)
        for field, d in zip(fields, dims, strict=True):
            np.multiply(out, np.uint64(d), out=out)
            np.add(out, get(field[0]), out=out, dtype=np.uint64, casting="unsafe")  # the uint64 loop, not float64
            if len(field) > 2 and field[2]:
                out += np.uint64(field[2])
        return out
    values = [get(f[0]).astype(np.int64) + (f[2] if len(f) > 2 else 0) for f in fields]
    out = values[0].astype(np.uint64)
    for v in values[1:]:
        out = _mix64(out * np.uint64(0x100000001B3) ^ v.astype(np.uint64))
    return out


class _RowView(np.lib.mixins.NDArrayOperatorsMixin):
    """A per-row integer column stored in a compact form: indexing (row numbers, a boolean
    mask, a slice) gives the per-row values of those rows; numpy operators and functions see
    the whole column (built on the fly)."""

    n: int

    def __len__(self) -> int:
        return self.n

    def _rows(self, idx: Any) -> np.ndarray:
        if isinstance(idx, slice):
            return np.arange(self.n)[idx]
        idx = np.asarray(idx)
        if idx.dtype == bool:
            return np.flatnonzero(idx)
        if idx.size and int(idx.min()) < 0:
            idx = np.where(idx < 0, idx + self.n, idx)
        return idx

    def __getitem__(self, idx: Any) -> Any:
        raise NotImplementedError

    def tolist(self) -> list:
        return np.asarray(self).tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self[np.arange(self.n)]
        return out if dtype is None else out.astype(dtype, copy=False)


class PerStream(_RowView):
    """A column constant within each stream (trace key, thread id, ...): one value per
    stream, `starts` the first row of each stream (rows are in stream order)."""

    def __init__(self, values: np.ndarray, starts: np.ndarray, n: int):
        self.values, self.starts, self.n = values, starts, n

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice) or (isinstance(idx, np.ndarray) and (idx.dtype == bool or len(idx) > self.n // 8)):
            return np.asarray(self)[idx]  # many rows: the whole column (2 bytes a row for trace keys)
        return self.values[np.searchsorted(self.starts, self._rows(idx), side="right") - 1]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.repeat(self.values, np.diff(np.r_[self.starts, self.n]))
        return out if dtype is None else out.astype(dtype, copy=False)


class StreamIds(_RowView):
    """The stream id of each row (rows are in stream order, streams numbered 0.. in that
    order): stored as the first row of each stream."""

    dtype = np.dtype(np.int32)

    def __init__(self, starts: np.ndarray, n: int):
        self.starts, self.n = starts, n

    def __getitem__(self, idx: Any) -> Any:
        if (isinstance(idx, np.ndarray) and idx.dtype != bool and len(idx) > len(self.starts)
                and int(idx[0]) >= 0 and bool(np.all(idx[1:] >= idx[:-1]))):
            # increasing rows (the kept rows of a diff): where each stream starts among them
            bounds = native.search_sorted(idx, self.starts)
            return np.repeat(np.arange(len(self.starts), dtype=np.int32), np.diff(np.r_[bounds, len(idx)]))
        if isinstance(idx, slice) or (isinstance(idx, np.ndarray) and (idx.dtype == bool or len(idx) > self.n // 8)):
            return np.asarray(self)[idx]
        return (np.searchsorted(self.starts, self._rows(idx), side="right") - 1).astype(np.int32)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.repeat(np.arange(len(self.starts), dtype=np.int32), np.diff(np.r_[self.starts, self.n]))
        return out if dtype is None else out.astype(dtype, copy=False)

    def max(self) -> int:
        return len(self.starts) - 1


class Recoded(_RowView):
    """Codes of each row through a small table: ``table[codes[i]]``, -1 where the code is
    -1 (the normalised path of each row from its raw path code)."""

    dtype = np.dtype(np.int32)

    def __init__(self, codes: np.ndarray, table: np.ndarray):
        self.codes, self.n = codes, len(codes)
        self.table = np.append(table.astype(np.int32, copy=False), np.int32(-1))  # index -1: null

    def __getitem__(self, idx: Any) -> Any:
        out = native.take_through(self.table, self.codes, idx)  # (rows' codes not made)
        return self.table[self.codes[idx]] if out is None else out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = take(self.table, self.codes)
        return out if dtype is None else out.astype(dtype, copy=False)


def stream_starts(p: Any) -> np.ndarray:
    """The first row of each stream of a `Prepared`."""
    if isinstance(p.sid, StreamIds):
        return p.sid.starts
    return np.flatnonzero(np.r_[True, p.sid[1:] != p.sid[:-1]]) if len(p) else np.zeros(0, dtype=np.int64)


class Patched(_RowView):
    """`base` with the values of a few rows replaced (`rows` sorted, `values`): the path key
    is the plain normalised path except at the rows of search-path walks."""

    def __init__(self, base: np.ndarray, rows: np.ndarray, values: np.ndarray):
        self.base, self.rows, self.values, self.n = base, rows, values, len(base)

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype

    def __getitem__(self, idx: Any) -> Any:
        rows = self._rows(idx)
        out = self.base[rows]
        if len(self.rows) and np.ndim(out) and len(rows) > len(self.rows) and bool(np.all(rows[1:] > rows[:-1])):
            # many increasing rows (the kept rows of a diff): look the few patched rows up in them
            at = np.minimum(native.search_sorted(rows, self.rows), len(rows) - 1)
            hit = rows[at] == self.rows
            out[at[hit]] = self.values[hit]
        elif len(self.rows):
            at = np.minimum(np.searchsorted(self.rows, rows), len(self.rows) - 1)
            hit = self.rows[at] == rows
            if np.ndim(out):
                out[hit] = self.values[at[hit]]
            elif hit:
                out = self.values[at]
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.array(self.base)
        out[self.rows] = self.values
        return out if dtype is None else out.astype(dtype, copy=False)


@dataclass
class Prepared:
    """Events as integer arrays in stream order (per trace, per thread, by seq).

    Row ``i`` of every array is source row ``order[i]`` of the Arrow table. String columns are
    codes into the ``*_values`` lists (-1 = null); one table is coded with one dictionary per
    column, so equal codes mean equal strings. ``pathkey`` is the normalised path with
    search-path walks masked (see `path_string`; stored as ``plainpath`` and the few rows
    that differ); ``sid`` numbers the per-thread streams. ``tkey``, ``tid`` and ``ppid`` are
    stored once per stream (`PerStream`; ``ppid`` is the one of the stream's first row), so
    is ``pid`` when it is constant within every stream. The raw path and thread name shown
    in reports are codes in stream order (``raw_path``, ``raw_comm`` into ``raw_*_values``);
    ``table`` keeps the other raw columns needed for display (`KEPT_COLUMNS`), when not all
    null, in source order.
    """

    table: pa.Table
    order: np.ndarray
    tkey: np.ndarray
    tid: np.ndarray
    pid: np.ndarray
    ppid: np.ndarray
    seq: np.ndarray
    depth: np.ndarray
    probe: np.ndarray
    errno: np.ndarray
    pathkey: np.ndarray
    plainpath: np.ndarray
    narg: np.ndarray
    ncomm: np.ndarray
    sid: np.ndarray
    probe_values: Values
    errno_values: Values
    npath_values: Values
    base_values: Values
    narg_values: Values
    ncomm_values: Values
    path2: np.ndarray | None = None
    path2_values: Values | None = None
    templates: NameTemplates | None = None
    raw_path: np.ndarray | None = None
    raw_path_values: Values | None = None
    raw_comm: np.ndarray | None = None
    raw_comm_values: Values | None = None
    n: int = 0
    # rows left out as a second copy of a record (same trace, thread and seq) that differed from
    # the copy kept (call, error or path): (bad, good); identical copies are not counted
    records_twice: tuple[int, int] = (0, 0)

    def __len__(self) -> int:
        return self.n

    def path_string(self, key: int) -> str | None:
        if key < 0:
            return None
        if key >= SEARCH_KEY_OFFSET:
            return f"{SEARCH_DIR}/{self.base_values[key - SEARCH_KEY_OFFSET]}"
        return self.npath_values[key]

    def token_parts(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row: (uint64 token of (probe, errno, path key, arg, depth), uint64 call key of
        (probe, path key) without errno). Built from this table's codes: tokens of rows of one
        Prepared compare equal iff the events are equal after normalisation."""
        return self.tokens(), self.call_keys()

    def _dense_path(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """Path keys (of `rows`, or all rows) as 0 (none), 1.. (plain), then the search keys;
        and their radix. int32 (keys are below 2**31)."""
        n_plain = len(self.npath_values)
        key = np.asarray(self.pathkey) if rows is None else self.pathkey[rows]
        # a compact path key (Patched) gives a new array: no copy needed to change it
        path = key.astype(np.int32, copy=not isinstance(self.pathkey, _RowView))
        search = path >= SEARCH_KEY_OFFSET
        path[search] -= SEARCH_KEY_OFFSET - n_plain
        path += 1
        return path, n_plain + len(self.base_values) + 1

    def tokens(self, rows: np.ndarray | None = None, end: np.uint64 | None = None) -> np.ndarray:
        """The token of each row (see `token_parts`), or of `rows` only (row numbers): the
        fields are gathered for those rows alone, one at a time as they are packed in, a
        block of rows at a time (no per-row temporaries). With `end`, a row number -1 in
        `rows` is a slot holding that token (baseline.run.align's END). With `end` and more
        than two blocks, the worker thread makes the second half of the blocks while this one
        makes the first (gathers and the packing loop release the GIL; each block's tokens
        are its own)."""
        # the depth field's range once, not per block (two passes over every row each time)
        depth_range = self._depth_range() if rows is not None and len(rows) > _BLOCK else None
        if rows is not None and end is not None:
            out = np.empty(len(rows), dtype=np.uint64)

            def fill(lo: int, hi: int) -> None:
                for a in range(lo, hi, _BLOCK):
                    block, slot = rows[a : min(a + _BLOCK, hi)], out[a : min(a + _BLOCK, hi)]
                    real = block >= 0
                    if real.all():
                        slot[:] = self._tokens(block, depth_range)
                    else:
                        slot[real] = self._tokens(block[real], depth_range)
                        slot[~real] = end

            blocks = (len(rows) + _BLOCK - 1) // _BLOCK
            mid = (blocks // 2) * _BLOCK
            if blocks > 2:
                second = background().submit(fill, mid, len(rows))
                fill(0, mid)
                second.result()
            else:
                fill(0, len(rows))
            return out
        if rows is not None and len(rows) > _BLOCK:
            out = np.empty(len(rows), dtype=np.uint64)
            for a in range(0, len(rows), _BLOCK):
                out[a : a + _BLOCK] = self._tokens(rows[a : a + _BLOCK], depth_range)
            return out
        return self._tokens(rows)

    def _tokens(self, rows: np.ndarray | None, depth_range: tuple[int, int] | None = None) -> np.ndarray:
        def at(a: np.ndarray) -> Any:
            if rows is None:
                return a
            if len(a) and a.strides[0] == 0:  # an all-null column stored once (_absent)
                return lambda: np.broadcast_to(a[:1], (len(rows),))
            return lambda: take(a, rows)

        n_rows = len(self) if rows is None else len(rows)
        path_radix = len(self.npath_values) + len(self.base_values) + 1
        depth_lo, depth_hi = self._depth_range() if depth_range is None else depth_range
        fields = [(at(self.probe), len(self.probe_values) + 1, 1), (at(self.errno), len(self.errno_values) + 1, 1),
                  (lambda: self._dense_path(rows)[0], path_radix), (at(self.narg), len(self.narg_values) + 1, 1),
                  (lambda: (self.depth if rows is None else take(self.depth, rows)) - depth_lo,
                   depth_hi - depth_lo + 1)]
        if self.path2_values is not None and len(self.path2_values):
            fields.append((at(self.path2), len(self.path2_values) + 1, 1))
        return _pack(fields, n_rows)

    def _depth_range(self) -> tuple[int, int]:
        """(min, max(0, ...)) of the depth column: the depth field's offset and radix."""
        return (int(self.depth.min()) if len(self) else 0), int(self.depth.max(initial=0))

    def call_keys(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The call key of each row (see `token_parts`), or of `rows` only."""
        path, path_radix = self._dense_path(rows)
        probe = self.probe if rows is None else take(self.probe, rows)
        return _pack([(probe, len(self.probe_values) + 1, 1), (path, path_radix)])

    def value(self, column: str, i: int):
        """The recorded (raw) value of `column` at stream-ordered row i."""
        if column == "path" and self.raw_path is not None:
            code = int(self.raw_path[i])
            return self.raw_path_values[code] if code >= 0 else None
        if column == "comm" and self.raw_comm is not None:
            code = int(self.raw_comm[i])
            return self.raw_comm_values[code] if code >= 0 else None
        if column in KEPT_COLUMNS and column not in self.table.column_names:
            return None  # a column its files have not: version 1 files' path2 and output read as null
        return self.table.column(column)[int(self.order[i])].as_py()

    def raw_paths(self, rows: np.ndarray) -> pa.Array:
        """The recorded paths of `rows` (null where none) as an Arrow string array."""
        codes = self.raw_path[rows]
        return pc.take(self.raw_path_values.arrow, pa.array(codes, mask=codes < 0))

    def has_column(self, column: str) -> bool:
        """Whether raw values of `column` are kept (see `value`)."""
        if column == "path":
            return self.raw_path is not None
        if column == "comm":
            return self.raw_comm is not None
        return column in self.table.column_names


# The columns two copies of one record agree in (a record delivered twice) and two records under
# one (trace, thread, seq) hardly ever all do
_RECORD_COLUMNS = ("probe", "errno", "path")


def _differing_copies(table: Any, tkey: np.ndarray, order: np.ndarray, again: np.ndarray) -> tuple[int, int]:
    """Of the rows left out as a second copy of a record (`again`, in `order`: each right after
    the copy before it), those that differ from that copy in call, error or path -- not the
    same record delivered twice (a file given twice, at-least-once shipping: silent) but
    another record under the same (trace, thread, seq), which the diff never looks at: (bad,
    good) counts. (Columns read again here, only when some row is left out.)"""
    dropped = np.flatnonzero(again)
    rows, before = order[dropped], order[dropped - 1]
    differ = np.zeros(len(rows), dtype=bool)
    for name in _RECORD_COLUMNS:
        if name not in table.column_names:
            continue
        col = table.column(name)
        one, two = (pc.cast(pc.take(col, pa.array(r)), pa.string()) for r in (rows, before))
        values_differ = pc.fill_null(pc.call_function("not_equal", [one, two]), False)
        nulls_differ = pc.call_function("not_equal", [pc.is_valid(one), pc.is_valid(two)])
        differ |= numpy_of(pc.or_(values_differ, nulls_differ))
    keys = tkey[rows[differ]]
    return (int(np.count_nonzero(keys < 0)), int(np.count_nonzero(keys >= 0)))


def _first_appearance_codes(tkey: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes 0.. of the (tkey, tid) pairs, numbered in order of first appearance, and the
    rows of each code (np.bincount of them).

    A direct-address table when the pairs span a modest range (the normal case: few traces,
    thread ids within a few million of each other), else Arrow hashing."""
    n = len(tid)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    t_lo, tid_lo = int(tkey.min()), int(tid.min())
    t_span, tid_span = int(tkey.max()) - t_lo + 1, int(tid.max()) - tid_lo + 1
    if t_span * tid_span > max(4 * n, 1 << 22):
        pairs = tkey.astype(np.int64) * (1 << 32) + tid
        codes = numpy_of(pc.dictionary_encode(pa.array(pairs)).indices).astype(np.int64)
        return codes, np.bincount(codes)
    fast = native.first_appearance(tkey, tid, t_lo, tid_lo, tid_span, t_span * tid_span)
    if fast is not None:  # the compiled loop: one pass, no key array, the counts alongside
        return fast
    idx = np.int32 if n < 2**31 else np.int64
    # the key built in place in one array (4 bytes a row while the table fits in int32, as it
    # does for any trace below 2**29 rows): no 8-byte temporaries per step
    key = tkey.astype(np.int32 if t_span * tid_span < 2**31 else np.int64)
    key -= t_lo
    key *= tid_span
    key -= tid_lo  # (tid_lo <= tid: the sum below stays in range)
    key += tid
    first = np.full(t_span * tid_span, n, dtype=idx)
    first[key[::-1]] = np.arange(n - 1, -1, -1, dtype=idx)  # the last write wins: the first row of each key
    present = np.flatnonzero(first < n)
    rank = np.empty(len(first), dtype=idx)
    rank[present[np.argsort(first[present], kind="stable")]] = np.arange(len(present))
    codes = rank[key]
    return codes, np.bincount(codes)


_BLOCK = 1 << 18  # rows per block of the passes done a block at a time


def kept_rows(drop: np.ndarray) -> np.ndarray:
    """The row numbers where `drop` is False, in int32 while they fit, built a block at a
    time (no index array of every row: ``np.arange(n)[~drop]`` makes one of 8 MiB, and a
    negated mask, for two million events)."""
    out = np.empty(len(drop) - int(np.count_nonzero(drop)), dtype=np.int32 if len(drop) < 2**31 else np.int64)
    at = 0
    for a in range(0, len(drop), _BLOCK):
        part = np.flatnonzero(~drop[a : a + _BLOCK])
        part += a
        out[at : at + len(part)] = part
        at += len(part)
    return out


def _stable_order(codes: np.ndarray, counts: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The stable argsort of dense codes 0.. (`counts` rows of each, the first at `starts`),
    in int32 while the rows fit: a counting sort a block of rows at a time. np.argsort gives
    int64 and its radix sort a second int64 work array: 32 MiB for two million events, the
    largest temporaries of a diff and the top of its heap for the rest of the run. The compiled
    loop when built (baseline.run.native), else `_stable_order_numpy`."""
    n = len(codes)
    fast = native.stable_order(codes, starts, np.int32 if n < 2**31 else np.int64)
    return fast if fast is not None else _stable_order_numpy(codes, counts, starts)


def _stable_order_numpy(codes: np.ndarray, counts: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """`_stable_order` in numpy: a radix argsort per block, placed by the block's counts."""
    n = len(codes)
    out = np.empty(n, dtype=np.int32 if n < 2**31 else np.int64)
    small = len(counts) <= 1 << 16  # uint16 keys: numpy's radix sort
    nxt = starts.copy()  # the next free slot of each code
    for a in range(0, n, _BLOCK):
        block = codes[a : a + _BLOCK]
        local = np.argsort(block.astype(np.uint16) if small else block, kind="stable")
        in_block = np.bincount(block, minlength=len(counts))
        first = np.cumsum(in_block)
        first -= in_block  # where each code's rows start among the block's sorted rows
        key = block[local]
        dest = nxt[key] - first[key]
        dest += np.arange(len(block))
        out[dest] = local + a
        nxt += in_block
    return out


def _narrow(a: np.ndarray) -> np.ndarray:
    """`a` in int16 when its values fit with room for +1 (codes, depths, trace numbers), else
    int32 (or as is beyond that): two million events hold a dozen such arrays."""
    lo, hi = (int(a.min()), int(a.max())) if len(a) else (0, 0)
    for dtype in (np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min < lo and hi < info.max:
            return a.astype(dtype, copy=False)
    return a


def _narrow_chunks(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """`_narrow` of an integer column without nulls, written chunk by chunk into the narrow
    array (no full-width copy of the whole column: 16 MiB less for two million seq numbers)."""
    parts = [numpy_of(c) for c in (col.chunks if isinstance(col, pa.ChunkedArray) else [col])]
    parts = [a for a in parts if len(a)]
    if not parts:
        return np.zeros(0, dtype=np.int16)
    lo, hi = min(int(a.min()) for a in parts), max(int(a.max()) for a in parts)
    dtype = next((d for d in (np.int16, np.int32) if np.iinfo(d).min < lo and hi < np.iinfo(d).max), np.int64)
    out = np.empty(sum(len(a) for a in parts), dtype=dtype)
    at = 0
    for a in parts:
        out[at : at + len(a)] = a
        at += len(a)
    return out


def _rows_of_chunks(col: pa.ChunkedArray | pa.Array, rows: np.ndarray) -> np.ndarray:
    """``numpy_of(col)[rows]`` read from each chunk in place (no concatenated copy)."""
    chunks = [c for c in (col.chunks if isinstance(col, pa.ChunkedArray) else [col]) if len(c)]
    if len(chunks) == 1:
        return numpy_of(chunks[0])[rows]
    bounds = np.cumsum([0] + [len(c) for c in chunks])
    which = np.searchsorted(bounds, rows, side="right") - 1
    out = None
    for i, c in enumerate(chunks):
        sel = which == i
        part = numpy_of(c)[rows[sel] - bounds[i]]
        if out is None:
            out = np.empty(len(rows), dtype=part.dtype)
        out[sel] = part
    return out if out is not None else numpy_of(col)[rows]


def _absent(n: int) -> np.ndarray:
    """Codes of an all-null column: a read-only -1 for every row, stored once."""
    return np.broadcast_to(np.int32(-1), (n,))


def read_ahead_for_prepare(table: Any) -> Future | None:
    """Start reading what `prepare` decodes in the worker thread (an EventColumns; anything
    else reads nothing ahead), and the path column's row map (`_column_maps`: its dictionaries
    hashed into one) right after its chunks: returned as a future, None for other tables.

    The paths' strings are the slowest columns to decode (~30 ms of two million-event traces):
    read while the streams are sorted and the small columns converted; the thread ids and seq
    numbers of the second file are read while this thread reads the first's. The small columns
    this thread asks for while the worker still decodes the paths (pid, depth) are read here
    (a read still queued is taken back: `_File.read`); the later ones are read ahead after the
    path map. `prepare` calls it; columns already on their way are not asked for twice.
    (Started earlier, before baseline.run.diff's checks, the columns waited longer in memory:
    10-30 MiB more peak RSS in the bench.)"""
    if not hasattr(table, "read_ahead"):
        return None
    table.read_ahead(["path"], beside=["tid", "seq"])
    path_map = background().submit(lambda: _column_maps(table.column("path"), None))
    table.read_ahead(["ppid", "probe", "errno", "comm"])
    return path_map


def prepare(table: Any, tkey: np.ndarray, learn_names: bool = True) -> Prepared:
    """Normalise an events table (an Arrow table, or baseline.run.traces.EventColumns reading
    one column at a time) into a `Prepared`.

    `tkey` gives each source row its trace number (the caller decides: e.g. -1 for the bad
    trace, 0.. for good traces). Regexes run once per distinct path/arg/comm; the search-path
    rule and everything per row are numpy. Columns are converted one at a time and dropped
    from the local table as soon as they are consumed, so when the caller hands over its
    only reference (as baseline.run.diff does) their Arrow buffers are freed along the way.
    """
    n = n_source = table.num_rows
    records_twice = (0, 0)
    path_map = read_ahead_for_prepare(table)
    tid = table.column("tid")
    if tid.null_count:  # pid stands in for a missing tid (read only then)
        tid = pc.fill_null(tid, pc.fill_null(table.column("pid"), 0))
    tid = numpy_of(tid)
    seq = _narrow_chunks(table.column("seq"))
    table = _drop(table, "tid", "seq", "trace_id", "kind", "command")
    # signed integers narrowed as they are: the diff hands over int16 trace numbers, which
    # np.asarray(..., int64) widened (a 16 MiB copy of two million rows) only to narrow again
    tkey = np.asarray(tkey)
    tkey = _narrow(tkey if tkey.dtype.kind == "i" else tkey.astype(np.int64))
    # Stream order: stable sort by (trace, thread); rows already in seq order per trace (the
    # normal case) need no seq key, otherwise a full lexsort. Streams are numbered by first
    # appearance, so the sorted stream numbers are the dense stream ids.
    stream_of, counts = _first_appearance_codes(tkey, tid)
    in_order = bool(np.all((seq[1:] > seq[:-1]) | (tkey[1:] != tkey[:-1])))
    # The streams' first rows in stream order: the streams are dense codes 0.. sorted
    # ascending, so each one starts where the rows of the streams before it end.
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    if in_order:
        order = _stable_order(stream_of, counts, starts)
    else:
        order = np.lexsort((seq, stream_of))
        if n < 2**31:
            order = order.astype(np.int32)
        # A record delivered twice (a trace file holding its rows twice: at-least-once shipping,
        # two copies concatenated) counts once, its first copy (tracer.schema.RECORD_KEY): its
        # repeated frames read as a thread doing everything twice. The sort is stable, so the
        # first copy of a (trace, thread, seq) comes first.
        again = np.zeros(n, dtype=bool)
        again[1:] = (seq[order[1:]] == seq[order[:-1]]) & (stream_of[order[1:]] == stream_of[order[:-1]])
        if again.any():
            records_twice = _differing_copies(table, tkey, order, again)
            order = order[~again]
            n = len(order)
            counts = np.bincount(stream_of[order], minlength=len(counts))
            starts = np.zeros(len(counts), dtype=np.int64)
            np.cumsum(counts[:-1], out=starts[1:])
        del again
    # Columns constant within a stream are stored once per stream (see PerStream).
    head = order[starts]  # the source row of each stream's first row
    s_tid, s_tkey = tid[head].astype(np.int32), tkey[head]
    del tid
    # a stream is one (trace, thread): its trace number repeated over its rows is the rows'
    # trace numbers in stream order, written in sequence (no gather through the order)
    seq, tkey = take(seq, order), np.repeat(s_tkey, counts)
    del counts

    kept: dict[str, pa.ChunkedArray] = {}

    def column(name: str) -> pa.ChunkedArray:
        # Read once (a lazily read table reads a column each time it is asked for); the raw
        # columns shown in reports are kept.
        col = table.column(name)
        if name in KEPT_COLUMNS:
            kept[name] = col
        return col

    def coded(name: str, rules: list[tuple[str, str]] | None, made: Future | None = None
              ) -> tuple[np.ndarray, Values]:
        # Straight from the Arrow indices into stream order, narrowed, in one compiled pass;
        # else in source order, then stream order once the Arrow column is freed. `made`: the
        # row map the worker is making (taken back when it has not started)
        nonlocal table
        if made is not None and not made.cancel():
            groups, raw_parts, values = made.result()
        else:
            groups, raw_parts, values = _column_maps(table.column(name), rules)
        table = _drop(table, name)
        fused = _gather_in_order(groups, raw_parts, len(values), order)
        if fused is not None:
            return fused, values
        codes = _gather_parts(groups, raw_parts)
        del raw_parts
        return take(_narrow(codes), order), values  # narrowed first: the gather writes 2 bytes a row, not 4

    def ints(name: str, fill: int = -1) -> np.ndarray:
        nonlocal table
        col = table.column(name)
        col = pc.fill_null(col, fill) if col.null_count else col
        out = take(_narrow(numpy_of(col).astype(np.int32, copy=False)), order)  # (narrowed before the gather)
        table = _drop(table, name)
        return out

    def per_stream(name: str, exact: bool, stream_of: np.ndarray) -> PerStream | np.ndarray:
        """A column's value at each stream's first row, once per stream; per row instead
        when `exact` and some stream has several values."""
        nonlocal table
        col = table.column(name)
        col = pc.fill_null(col, -1) if col.null_count else col
        table = _drop(table, name)
        if not exact:  # the streams' first rows only: read in the chunks, no copy of the column
            return PerStream(_rows_of_chunks(col, head).astype(np.int32), starts, n)
        values = numpy_of(col)
        del col  # (a copy when the column has several chunks: the Arrow buffers go now)
        first = values[head].astype(np.int32)
        if not exact or all(np.array_equal(values[a : a + _BLOCK], first[stream_of[a : a + _BLOCK]])
                            for a in range(0, n_source, _BLOCK)):  # (a block at a time: no per-row temporaries)
            return PerStream(first, starts, n)
        return take(values.astype(np.int32, copy=False), order)

    pid, ppid = per_stream("pid", True, stream_of), per_stream("ppid", False, stream_of)
    del stream_of
    depth = _narrow(ints("depth", 0))
    if len(depth) and int(depth.min()) == int(depth.max()):  # one depth (a syscall recording): stored once
        depth = np.broadcast_to(depth[:1].copy(), (n,))
    # Paths: raw codes first; the distinct values are masked (temp rules, random tokens), the
    # run-to-run varying names learned from the good rows, then digits (see NameTemplates).
    # The temp-name rules and their factorisation (RE2 and Arrow's hashing, all in C++ with
    # the GIL released: ~30-40 ms) run in the background thread while this one converts the
    # probe, errno and comm columns (~2-3x as long: it never waits). The later steps are
    # split between the two threads (`_later_masks_in_halves`). Coding the whole path column
    # in the worker instead (its gathers beside this thread's) cost 25-35 MiB of peak RSS
    # (heap holes left to the end of the run), more than the bench's RSS margin.
    raw_path, raw_values = coded("path", None, path_map)
    del path_map
    pre_done = background().submit(lambda: _factorize(apply_rules(raw_values.arrow, TEMP_RULES)))
    probe, probe_values = coded("probe", None)
    errno, errno_values = coded("errno", None)
    raw_comm, raw_comm_values = coded("comm", None)
    comm_norm, ncomm_values = _factorize(normalize_comms(raw_comm_values.arrow))
    ncomm = Recoded(raw_comm, comm_norm)  # looked up through the raw codes, as plainpath
    pre_of_raw, pre_values = pre_done.result()
    templates = NameTemplates.learn(pre_values, _remap(raw_path, pre_of_raw), tkey) if learn_names else NameTemplates()
    del pre_done
    final_of_pre, npath_values = _factorize(_later_masks_in_halves(pre_values.arrow, templates))
    npath_of_raw = final_of_pre[pre_of_raw]
    npath = _remap(raw_path, npath_of_raw)
    del pre_of_raw, final_of_pre
    no_values = Values(pa.array([], type=pa.string()))
    arg = column("arg")
    narg, narg_values = _coded_paths(arg, order, templates) if arg.null_count < n_source else (_absent(n), no_values)
    del arg
    if "path2" in table.column_names and column("path2").null_count < n_source:
        path2, path2_values = _coded_paths(kept["path2"], order, templates, tkey if learn_names else None)
    else:
        path2, path2_values = _absent(n), no_values
    del tkey
    search_rows: list[int] = []
    search_keys: list[int] = []
    base_index: dict[str, int] = {}
    search_errnos = codes_where(errno_values, SEARCH_ERRNOS)
    if n > 1 and len(search_errnos):
        # Failed lookups followed in the same thread by a lookup of another path: only these
        # few rows need their paths split into directory and name. "Followed" passes over the
        # scheduler's and the allocator's calls (`BETWEEN_ANY_CALLS`): under load a thread
        # hands the GIL over (futex) or grows its heap between any two lookups of a walk.
        failed = np.flatnonzero(code_in(errno, search_errnos, len(errno_values)))
        failed = failed[npath[failed] >= 0]
        # failed lookups that end their stream: a walk whose next turn the thread's end cut
        # (a recording's cut-off, a kill) -- see below
        ends_stream = failed[isin(failed, np.r_[starts[1:], n] - 1)]
        failed = failed[failed < n - 1]
        between = codes_where(probe_values, BETWEEN_ANY_CALLS)
        # each failed lookup's next call that is not one of those, in its own stream
        nxt = _next_lookups(failed + 1, probe, between, probe_values, starts, failed, n, npath)
        ok = nxt >= 0
        failed, nxt = failed[ok], nxt[ok]
        del ok
        # (the raw paths too: $PATH's site0/bin and site1/bin are one template, site<n>/bin)
        keep = (npath[nxt] >= 0) & ((npath[nxt] != npath[failed]) | (raw_path[nxt] != raw_path[failed]))
        failed, nxt = failed[keep], nxt[keep]
        pairs = list(zip(failed.tolist(), nxt.tolist(), strict=True))
        split: dict[int, tuple[str, str]] = {}
        for code in unique_ints(np.r_[npath[failed], npath[nxt]]).tolist():
            split[code] = os.path.split(npath_values[code].rstrip("/"))

        def walks_on(i: int, j: int, npath: np.ndarray = npath) -> bool:
            """Row j looks up row i's file name in another directory: their templates' names
            agree and their directories differ -- as templates, or, where the two are one
            template, as written (the same name in two directories the digits mask alike)."""
            (d0, b0), (d1, b1) = split[int(npath[i])], split[int(npath[j])]
            if not b0 or b0 != b1:
                return False
            if d0 != d1:
                return True
            (r0, n0), (r1, n1) = (os.path.split(raw_values.arrow[int(raw_path[k])].as_py().rstrip("/")) for k in (i, j))
            return n0 == n1 and r0 != r1

        checked: list[int] = []  # failed lookups whose next call checks their own directory
        check_rows: list[int] = []  # ... and those checks
        for i, j in pairs:
            (d0, b0), (d1, b1) = split[int(npath[i])], split[int(npath[j])]
            if walks_on(i, j):
                search_rows.append(i)
                search_keys.append(SEARCH_KEY_OFFSET + base_index.setdefault(b0, len(base_index)))
            elif b0 and b1 == os.path.basename(d0) and d1 == os.path.dirname(d0):
                checked.append(i)
                check_rows.append(j)
        # ld.so (glibc 2.33+) stats each directory it did not find a library in (is it there at
        # all?) before its next step: for those, the walk's next lookup is the one after the check
        if checked:
            failed = np.array(checked, dtype=np.int64)
            nxt = _next_lookups(np.array(check_rows, dtype=np.int64) + 1, probe, between, probe_values, starts,
                                failed, n, npath)
            ok = nxt >= 0
            failed, nxt = failed[ok], nxt[ok]
            ok = npath[nxt] >= 0
            failed, nxt = failed[ok], nxt[ok]
            for code in unique_ints(npath[nxt]).tolist():
                split.setdefault(code, os.path.split(npath_values[code].rstrip("/")))
            for i, j in zip(failed.tolist(), nxt.tolist(), strict=True):
                if walks_on(i, j):
                    b0 = split[int(npath[i])][1]
                    search_rows.append(i)
                    search_keys.append(SEARCH_KEY_OFFSET + base_index.setdefault(b0, len(base_index)))
        # A failed lookup ending its stream, at a path (as recorded) that is a turn of a walk
        # elsewhere in the traces, is that turn too: cat's locale walk (C.UTF-8/LC_NUMERIC
        # ENOENT, then C.utf8/LC_NUMERIC) cut by the end of the recording between the two.
        unsorted = bool(checked)
        if len(ends_stream) and search_rows:
            walked = dict(zip(raw_path[np.array(search_rows, dtype=np.int64)].tolist(), search_keys, strict=True))
            masked = set(search_rows)
            for i in ends_stream.tolist():
                key = walked.get(int(raw_path[i]))
                if key is not None and i not in masked:
                    search_rows.append(i)
                    search_keys.append(key)
                    unsorted = True
        if unsorted:
            by_row = np.argsort(np.array(search_rows, dtype=np.int64), kind="stable").tolist()
            search_rows = [search_rows[k] for k in by_row]
            search_keys = [search_keys[k] for k in by_row]
        del failed, nxt, keep, walks_on
    base_values = Values(pa.array(list(base_index), type=pa.string()))
    # Per row only the raw path codes are kept: the normalised path is looked up through them.
    del npath
    plainpath = Recoded(raw_path, npath_of_raw)
    pathkey = Patched(plainpath, np.array(search_rows, dtype=np.int64), np.array(search_keys, dtype=np.int32))

    for name in KEPT_COLUMNS:
        if name in table.column_names and name not in kept and name not in ("path", "comm"):
            column(name)
    kept = {c: kept[c] for c in KEPT_COLUMNS if c in kept and kept[c].null_count < n_source}
    return Prepared(
        table=pa.table(kept) if kept else pa.table({"_": pa.nulls(n)}).drop_columns(["_"]),  # all-null: not kept
        order=order, tkey=PerStream(s_tkey, starts, n), tid=PerStream(s_tid, starts, n), pid=pid, ppid=ppid,
        seq=seq, depth=depth, probe=probe, errno=errno,
        pathkey=pathkey, plainpath=plainpath, narg=narg, ncomm=ncomm, sid=StreamIds(starts, n), path2=path2,
        probe_values=probe_values, errno_values=errno_values, npath_values=npath_values,
        base_values=base_values, narg_values=narg_values, ncomm_values=ncomm_values,
        path2_values=path2_values, templates=templates, raw_path=raw_path, raw_path_values=raw_values,
        raw_comm=raw_comm, raw_comm_values=raw_comm_values, n=n, records_twice=records_twice,
    )


def _later_masks(values: pa.Array, templates: NameTemplates) -> pa.Array:
    """The path masks after the temp-name rules: learned templates, random tokens, digits."""
    return apply_rules(mask_random_tokens(templates.apply(values)), DIGIT_RULES)


# Distinct paths below which `_later_masks_in_halves` does them on one thread.
_HALVES_MIN = 20_000


def _later_masks_in_halves(values: pa.Array, templates: NameTemplates) -> pa.Array:
    """`_later_masks` of every value, the second half in the worker thread while this one
    does the first: each value is masked on its own (RE2 and the digit-run loop release the
    GIL; the worker is idle once the path column is coded), so the halves joined are the
    whole array masked at once (~25 ms of the bench's 143,000 distinct paths on two cores)."""
    half = len(values) // 2
    if half < _HALVES_MIN:
        return _later_masks(values, templates)
    second = background().submit(_later_masks, values.slice(half), templates)
    first = _later_masks(values.slice(0, half), templates)
    return pa.concat_arrays([first, second.result()])


def _coded_paths(col: pa.ChunkedArray, order: np.ndarray, templates: NameTemplates,
                 tkey: np.ndarray | None = None) -> tuple[np.ndarray, Values]:
    """Codes of a path-like column into its distinct masked values (see `normalize_paths`).
    With `tkey` (the rows' traces, in `order`), names that vary at the same place of this
    column's own values are learned too: a symlink's target is the link's text, often relative
    (`ln -sfn releases/rel-4a2e144f current`), a shape no path of the path column has."""
    raw, values = _coded_column(col, order, None)
    if tkey is not None:
        own = NameTemplates.learn(values, raw, tkey)
        if own:
            templates = templates.merged(own)
    norm_of_raw, norm_values = _factorize(normalize_paths(values.arrow, templates))
    return _remap(raw, norm_of_raw), norm_values


def _drop(table: pa.Table, *names: str) -> pa.Table:
    return table.drop_columns([c for c in names if c in table.column_names])


# ------------------------------------------------------------------------------------------
# process roles
# ------------------------------------------------------------------------------------------
def stream_rows(p: Prepared) -> dict[str, list[Any]]:
    """One entry per stream (columns as lists): sid, tkey, tid, pid, ppid (None when unknown),
    ncomm (last name carried), first_seq."""
    if len(p) == 0:
        return {k: [] for k in ("sid", "tkey", "tid", "pid", "ppid", "ncomm", "first_seq")}
    first = stream_starts(p)
    last = np.r_[first[1:], len(p)] - 1
    ppid = p.ppid[first]
    return {
        "sid": p.sid[first].tolist(), "tkey": p.tkey[first].tolist(), "tid": p.tid[first].tolist(),
        "pid": np.where(p.pid[first] >= 0, p.pid[first], p.tid[first]).tolist(),
        "ppid": [int(x) if x >= 0 else None for x in ppid.tolist()],
        "ncomm": [p.ncomm_values[c] if c >= 0 else None for c in p.ncomm[last].tolist()],
        "first_seq": p.seq[first].tolist(),
    }


def stream_summary(p: Prepared) -> pl.DataFrame:
    """`stream_rows` as a polars frame (Int64 columns; ppid null when unknown)."""
    import polars as pl

    schema = {"sid": pl.Int64, "tkey": pl.Int64, "tid": pl.Int64, "pid": pl.Int64, "ppid": pl.Int64,
              "ncomm": pl.String, "first_seq": pl.Int64}
    return pl.DataFrame(stream_rows(p), schema=schema)


def _fork_key(pid: int, comm: dict[int, str], parent: dict[int, int | None], cache: dict[int, str]) -> str:
    """Path of process names from the trace's root process down to `pid` (cycle-safe)."""
    chain, seen = [], set()
    cur: int | None = pid
    while cur is not None and cur in comm and cur not in seen and cur not in cache:
        seen.add(cur)
        chain.append(cur)
        cur = parent.get(cur)
    prefix = cache.get(cur, "") if cur is not None else ""
    for p in reversed(chain):
        prefix = f"{prefix}/{comm[p]}" if prefix else comm[p]
        cache[p] = prefix
    return cache[pid]


def thread_roles(rows: list[dict[str, Any]], trace_key: str = "tkey") -> list[tuple[Any, int, str, str]]:
    """(trace, tid, role_key, role) per thread row (dicts with trace_key, tid, pid, ppid,
    ncomm, first_seq), traces in sorted order, threads by first appearance: see `process_roles`."""
    rows = sorted(rows, key=lambda r: (r[trace_key], r["first_seq"]))
    out = []
    i = 0
    while i < len(rows):
        j = i
        while j < len(rows) and rows[j][trace_key] == rows[i][trace_key]:
            j += 1
        group = rows[i:j]
        comm_of_pid: dict[int, str] = {}
        parent_of_pid: dict[int, int | None] = {}
        for r in group:
            pid = r["pid"] if r["pid"] is not None else r["tid"]
            if r["tid"] == pid or pid not in comm_of_pid:
                comm_of_pid[pid] = r["ncomm"] or "?"
            parent_of_pid.setdefault(pid, r["ppid"])
        key_of_pid: dict[int, str] = {}
        ordinal: dict[str, int] = {}
        for r in group:
            pid = r["pid"] if r["pid"] is not None else r["tid"]
            k = _fork_key(pid, comm_of_pid, parent_of_pid, key_of_pid)
            if r["tid"] != pid:
                k = f"{k}/~{r['ncomm'] or '?'}"
            n = ordinal.get(k, 0)
            ordinal[k] = n + 1
            out.append((r[trace_key], r["tid"], k, f"{k}#{n}"))
        i = j
    return out


def process_roles(df: pl.DataFrame, trace_key: str = "trace_id") -> pl.DataFrame:
    """One row per (trace, tid): ``role_key`` (fork-tree path of exec'd names) and ``role``.

    A process's name is the last (post-exec) name its threads carried; its parent is its
    ``ppid`` when that process is in the trace. Threads other than the group leader get
    ``~name`` under their process. ``role`` adds ``#i``, the rank among siblings with the same
    key by first appearance, for display; matching uses ``role_key`` only, so siblings started
    in a different order still match.
    """
    import polars as pl

    if "first_seq" in df.columns:  # already one row per thread (stream_summary)
        per_tid = df
    else:
        per_tid = df.group_by([trace_key, "tid"], maintain_order=True).agg(
            pl.col("pid").drop_nulls().first(),
            pl.col("ppid").drop_nulls().first(),
            pl.col("ncomm").drop_nulls().last(),
            pl.col("seq").min().alias("first_seq"),
        )
    roles = thread_roles(per_tid.select(trace_key, "tid", "pid", "ppid", "ncomm", "first_seq").to_dicts(), trace_key)
    cols = list(zip(*roles, strict=True)) if roles else [[], [], [], []]
    return pl.DataFrame(
        {trace_key: list(cols[0]), "tid": list(cols[1]), "role_key": list(cols[2]), "role": list(cols[3])},
        schema={trace_key: df.schema[trace_key], "tid": df.schema["tid"], "role_key": pl.String, "role": pl.String},
    )



def _next_lookups(start: np.ndarray, probe: np.ndarray, between: np.ndarray, probe_values: Values,
                  starts: np.ndarray, failed: np.ndarray, n: int, npath: np.ndarray) -> np.ndarray:
    """Per row of `start` (the row after a failed lookup, or after ld.so's check of its
    directory): the first row from there that is not one of the scheduler's and allocator's
    calls (`between`) nor a read or write of a descriptor with no path (an eventfd's wakeup:
    libuv's worker threads signal the loop between two turns of node's package.json walk),
    stepped over a few at a time (only those rows are looked at, never all rows), in the stream
    of the matching `failed` row; -1 where there is none within MAX_BETWEEN rows or the stream
    ends first."""
    signals = codes_where(probe_values, _SIGNAL_IO)

    def passed_over(rows: np.ndarray) -> np.ndarray:
        at = nxt[rows]
        return code_in(probe[at], between, len(probe_values)) | (
            code_in(probe[at], signals, len(probe_values)) & (npath[at] < 0))

    nxt = start.copy()
    moving = np.flatnonzero(nxt < n)
    moving = moving[passed_over(moving)]
    for _ in range(MAX_BETWEEN):
        if not len(moving):
            break
        nxt[moving] += 1
        moving = moving[nxt[moving] < n]
        moving = moving[passed_over(moving)]
    nxt[moving] = n
    same = np.searchsorted(starts, failed, side="right") == np.searchsorted(starts, np.minimum(nxt, n - 1), side="right")
    return np.where((nxt < n) & same, nxt, -1)

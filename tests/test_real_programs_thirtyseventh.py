"""A thirty-seventh set of real programs with one real fault each (tests/scenarios/real_thirtyseventh.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: checkpoint and dataset I/O of training
jobs -- dd conv=fsync oflag=sync onto a checkpoint volume remounted read-only, a Python shard
writer's posix_fallocate on a tmpfs a stale checkpoint filled, rsync --inplace onto a full
mirror, split -b, truncate -s and cp --reflink=auto under a launcher's ulimit -f, sha512sum -c of
a manifest naming a removed shard, sync -f of a removed step directory, a Python mmap reader
seeking with SEEK_DATA into a truncated shard and link of a latest shard across tmpfs mounts --
amid their good runs alone: dd conv=fsync of randomly named shards, the Python shard writer with
a random prefix, split + cat + sha256sum -c, tar of a checkpoint directory then sync -f, rsync
--inplace over an older mirror, and cp --reflink=auto + ln -f + truncate -s.

Written blind (round thirty-seven). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_thirtyseventh import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_THIRTYSEVENTH,
    REAL_THIRTYSEVENTH,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
# A top-1 miss that depends on timing (never strictly xfailed: it passes most runs); none now.
FLAKY_MISSES: dict[str, str] = {}
TESTED = [s for s in REAL_THIRTYSEVENTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_THIRTYSEVENTH if c.name not in QUIET_BENCH_ONLY]
TOOLS = ("dd", "sync", "python3", "rsync", "split", "truncate", "cp", "sha512sum", "sha256sum", "link", "ln", "tar",
         "cat", "rm", "sh", "mount", "umount")
SCRIPTS = ("sh", "python3")  # runners of a test's script: none of this set's faults is theirs but python3's


thirtyseventh_recorder = set_recorder("thirtyseventh_recorder", "thirty-seventh set of real programs", OUTCOMES,
                                      QUIET, quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: coreutils rsync tar mount python3)")


def test_the_set_is_new_and_covers_the_tools():
    names = {s.name for s in REAL_THIRTYSEVENTH}
    assert_set_is_new("real_thirtyseventh")
    assert_no_program_repeats("real_thirtyseventh", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_THIRTYSEVENTH for p in s.expect_probe}
    assert {("openat", "EROFS"), ("fallocate", "ENOSPC"), ("write", "ENOSPC"), ("write", "EFBIG"),
            ("ftruncate", "EFBIG"), ("copy_file_range", "EFBIG"), ("openat", "ENOENT"), ("lseek", "ENXIO"),
            ("link", "EXDEV")} <= pairs
    programs = {s.program.split()[0] for s in REAL_THIRTYSEVENTH}
    assert {"dd", "python3", "rsync", "split", "truncate", "cp", "sha512sum", "sync", "link"} <= programs
    assert 8 <= len(REAL_THIRTYSEVENTH) <= 12 and len(QUIET_THIRTYSEVENTH) == 6
    assert all(s.name.startswith("t37_") for s in REAL_THIRTYSEVENTH) and all(
        c.name.startswith("t37_") for c in QUIET_THIRTYSEVENTH)
    assert names >= BENCH_ONLY and {c.name for c in QUIET_THIRTYSEVENTH} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= {c.name for c in QUIET_THIRTYSEVENTH}
    assert FLAKY_QUIET.keys() <= names | {c.name for c in QUIET_THIRTYSEVENTH}
    assert FLAKY_MISSES.keys() <= names and not FLAKY_MISSES.keys() & KNOWN_MISSES.keys()


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, thirtyseventh_recorder, tmp_path):
    sc = next(s for s in REAL_THIRTYSEVENTH if s.name == name)
    try:
        check_fault_case(sc, thirtyseventh_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    except AssertionError as err:
        if name in FLAKY_MISSES and "expected" in str(err):
            pytest.xfail(f"{err}: {FLAKY_MISSES[name]}")
        raise


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_tool_noise_is_quiet(name, thirtyseventh_recorder, tmp_path):
    case = next(c for c in QUIET_THIRTYSEVENTH if c.name == name)
    check_noise_case(case, thirtyseventh_recorder, tmp_path, QUIET, FLAKY_QUIET)

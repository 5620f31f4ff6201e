"""A twenty-sixth set of real programs with one real fault each (tests/scenarios/real_twentysixth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: developer toolchains, service setup and
release checks no earlier set ran -- javac (a read-only classes volume), pzstd (a full volume),
valgrind (a log directory never made), gdb (a read-only log volume), ctest (a fixtures
directory not generated), brotli (a left-over output), zic (a zoneinfo path that is a file),
rpcgen (a missing generated-headers directory), msgmerge and yq (as the job, against root's
directory and file), groff (a lost .so part), as (an include looping), initdb (as the service,
a root-owned parent), shasum (a release file that is a directory), start-stop-daemon (a run
directory not made) -- and two C programs of the set's own (splice and tee to a mirror on a
full volume, setxattr and linkat into a store on another volume), amid a JVM's threads,
pzstd's threads, ctest's parallel children, initdb's postgres children, groff's pipeline and
thread order.

The programs are compiled once per test process (cc: `real_twentysixth.build`). The table of
outcomes is printed at the end of the module.
"""

from __future__ import annotations

import os
import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_twentysixth import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_TWENTYSIXTH,
    REAL_TWENTYSIXTH,
    initdb_path,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_TWENTYSIXTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_TWENTYSIXTH if c.name not in QUIET_BENCH_ONLY]
TOOLS = ("javac", "pzstd", "valgrind", "gdb", "ctest", "brotli", "zic", "rpcgen", "cpp", "msgmerge", "groff",
         "tbl", "troff", "grotty", "as", "shasum", "yq", "jq", "start-stop-daemon", "cc", "mount", "setpriv")


twentysixth_recorder = set_recorder("twentysixth_recorder", "twenty-sixth set of real programs", OUTCOMES,
                                    QUIET, quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in TOOLS if shutil.which(t, path="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin") is None]
    if not os.access(initdb_path(), os.X_OK):
        missing.append("initdb")
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: default-jdk-headless zstd valgrind gdb cmake "
                    "brotli libc-dev-bin gettext groff-base binutils yq postgresql)")


def test_the_set_is_new_and_covers_the_tools():
    names = {s.name for s in REAL_TWENTYSIXTH}
    assert_set_is_new("real_twentysixth")
    assert_no_program_repeats("real_twentysixth", scripts=("python3", "sh"))
    pairs = {(p, s.expect_errno) for s in REAL_TWENTYSIXTH for p in s.expect_probe}
    assert {("mkdir", "EROFS"), ("write", "ENOSPC"), ("open", "ENOENT"), ("openat", "EROFS"), ("chdir", "ENOENT"),
            ("openat", "EEXIST"), ("chdir", "ENOTDIR"), ("openat", "ENOENT"), ("openat", "EACCES"),
            ("openat", "ELOOP"), ("mkdir", "EACCES"), ("openat", "EISDIR"), ("splice", "ENOSPC"),
            ("linkat", "EXDEV")} <= pairs
    programs = {s.program.split()[0] for s in REAL_TWENTYSIXTH}
    assert {"javac", "pzstd", "valgrind", "gdb", "ctest", "brotli", "zic", "rpcgen", "msgmerge", "groff", "as",
            "initdb", "shasum", "yq", "start-stop-daemon", "tb26-splice", "tb26-dedup"} <= programs
    earlier_programs = {s.program.split()[0] for e in earlier_sets("real_twentysixth") for s in e.faults}
    assert not earlier_programs & programs, f"programs an earlier set ran: {sorted(earlier_programs & programs)}"
    earlier = {s.description for e in earlier_sets("real_twentysixth") for s in e.faults}
    assert not earlier & {s.description for s in REAL_TWENTYSIXTH}
    assert len(REAL_TWENTYSIXTH) >= 15 and len(QUIET_TWENTYSIXTH) >= 8
    assert all(s.name.startswith("t26_") for s in REAL_TWENTYSIXTH) and all(
        c.name.startswith("t26_") for c in QUIET_TWENTYSIXTH)
    assert names >= BENCH_ONLY and {c.name for c in QUIET_TWENTYSIXTH} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= {c.name for c in QUIET_TWENTYSIXTH}
    assert FLAKY_QUIET.keys() <= names | {c.name for c in QUIET_TWENTYSIXTH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, twentysixth_recorder, tmp_path):
    sc = next(s for s in REAL_TWENTYSIXTH if s.name == name)
    check_fault_case(sc, twentysixth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_tool_noise_is_quiet(name, twentysixth_recorder, tmp_path):
    case = next(c for c in QUIET_TWENTYSIXTH if c.name == name)
    check_noise_case(case, twentysixth_recorder, tmp_path, QUIET, FLAKY_QUIET)

"""A twenty-third set of real programs with one real fault each (tests/scenarios/real_twentythird.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: language runtimes -- a JVM (class path,
properties, a service port, a JNI library's dependency, a descriptor limit from ulimit -n,
java.io.tmpdir, a full tmpfs, a missing parent directory, an atomic move across file systems),
node (mkdir -p through a file, a native addon on a noexec volume, a port, libuv's thread pool
writing and exporting, a config that is a directory, a release swap), perl (hash order, utime) and python's sys.path --
amid what runtimes do every run: a dozen JVM threads, GC and JIT at varying points, hsperfdata
named by pid, cgroup and /proc probes, libuv's four workers finishing in any order, epoll,
random temp names, per-process hash seeds.

On main (f35f046), on one corpus of three recordings per case diffed by main and by the
branch: 57/57 at top 1 (after one expectation was corrected from the recording: a rename's
ENOTEMPTY is about its target), 55/57 third good runs and 41/42 noise cases quiet (the JVM's VM
Thread backing off with clock_nanosleep in some runs only); the branch 57/57, 57/57, 42/42.
Details: tests/scenarios/real_twentythird.py and docs/benchmarks.md.

The programs are compiled once per test process (javac, jar, cc: `real_twentythird.build`).
The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_twentythird import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_TWENTYTHIRD,
    REAL_TWENTYTHIRD,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {
    "rt_java_gc_churn": (
        "CI 41 (under the load of helpers' runs): the third good run's JVM opened /proc/sys/vm/overcommit_memory, "
        "which no run kept here opens (HotSpot reads it where a commit of heap memory fails, for its diagnostics): "
        "1 flag in ~30 runs of the case that session, none in 27 runs after it (6 of them at the session's base "
        "3bca7e7); open"),
}
TESTED = [s for s in REAL_TWENTYTHIRD if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_TWENTYTHIRD if c.name not in QUIET_BENCH_ONLY]
TOOLS = ("java", "javac", "jar", "node", "perl", "python3", "cc", "mount", "setpriv")
NODE_API = Path("/usr/include/node/node_api.h")  # Debian's libnode-dev, for the addon


twentythird_recorder = set_recorder("twentythird_recorder", "twenty-third set of real programs", OUTCOMES,
                                    QUIET, quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in TOOLS if shutil.which(t) is None] + ([] if NODE_API.exists() else [str(NODE_API)])
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)}")


def test_the_set_is_new_and_covers_the_runtimes():
    names = {s.name for s in REAL_TWENTYTHIRD}
    assert_set_is_new("real_twentythird")
    # perl and python3 run the set's own scripts here, as python3 and sh did in earlier sets
    assert_no_program_repeats("real_twentythird", scripts=("python3", "perl"))
    pairs = {(p, s.expect_errno) for s in REAL_TWENTYTHIRD for p in s.expect_probe}
    assert {("openat", "ENOENT"), ("openat", "EACCES"), ("openat", "EMFILE"), ("bind", "EADDRINUSE"),
            ("write", "ENOSPC"), ("mkdir", "ENOENT"), ("rename", "EXDEV"), ("rename", "ENOTEMPTY"),
            ("read", "EISDIR"), ("statx", "ENOENT"), ("readlink", "ENOENT"), ("utimensat", "EPERM")} <= pairs
    runtimes = {s.program.split()[0] for s in REAL_TWENTYTHIRD}
    assert {"java", "node", "perl", "python3"} <= runtimes
    earlier = {s.description for e in earlier_sets("real_twentythird") for s in e.faults}
    assert not earlier & {s.description for s in REAL_TWENTYTHIRD}
    assert len(REAL_TWENTYTHIRD) >= 15 and len(QUIET_TWENTYTHIRD) >= 10
    assert all(s.name.startswith("rt_") for s in REAL_TWENTYTHIRD) and all(
        c.name.startswith("rt_") for c in QUIET_TWENTYTHIRD)
    assert names >= BENCH_ONLY and {c.name for c in QUIET_TWENTYTHIRD} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {
        c.name for c in QUIET_TWENTYTHIRD}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, twentythird_recorder, tmp_path):
    sc = next(s for s in REAL_TWENTYTHIRD if s.name == name)
    check_fault_case(sc, twentythird_recorder, tmp_path, OUTCOMES, QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_runtime_noise_is_quiet(name, twentythird_recorder, tmp_path):
    case = next(c for c in QUIET_TWENTYTHIRD if c.name == name)
    check_noise_case(case, twentythird_recorder, tmp_path, QUIET, FLAKY_QUIET)

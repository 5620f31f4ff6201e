"""A twenty-second set of real programs with one real fault each (tests/scenarios/real_twentysecond.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: faults hidden amid run-to-run
nondeterminism other than random names -- order (a set and a dict in hash order, a tmpfs inbox
listed in delivery order, a thread pool over five backends on kernel-assigned ports, xargs -P 3,
make -j 3, xz -T2), counts (a lock retried 0-7 times or without end, a log rotating 0-2 times, a
cache warm or cold, a pipe's read sizes), timing (a watcher's polls, a SIGCHLD handler reaping
at varying points or before the main line waits, a server's accept order, a 3 ms SIGALRM
heartbeat, a nonblocking read meeting EAGAIN or not) and identity (pids, ports, the hostname and
the time written into status files). Six cases force their variation so that the third good
run and the bad run show one the first two good runs never did.

On main (1c1c7f3): 20/22 at top 1 (the cache warm in the good runs and cold in the bad run
named its stat miss; Popen.wait finding its helper reaped by the job's handler named wait4
ECHILD) and 29/39 good vs good (the cache cold in the third run only, a child reaped by its own
SIGCHLD handler before the main line's wait, a log rotating on size or on time in the third run
only -- as noise cases and as fault cases' third good runs -- were named). The last two fault
cases and two noise cases were written after the mechanisms, on programs they were not shaped
on (TimedRotatingFileHandler, subprocess.Popen.wait).

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_twentysecond import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_TWENTYSECOND,
    REAL_TWENTYSECOND,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_TWENTYSECOND if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_TWENTYSECOND if c.name not in QUIET_BENCH_ONLY]
TOOLS = ("python3", "xargs", "b2sum", "find", "sort", "make", "xz", "mount", "setpriv")


twentysecond_recorder = set_recorder("twentysecond_recorder", "twenty-second set of real programs", OUTCOMES,
                                     QUIET, quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)}")


def test_the_set_is_new_and_covers_the_kinds_of_nondeterminism():
    names = {s.name for s in REAL_TWENTYSECOND}
    assert_set_is_new("real_twentysecond")
    assert_no_program_repeats("real_twentysecond", scripts=("python3", "sh", "bash"))
    pairs = {(p, s.expect_errno) for s in REAL_TWENTYSECOND for p in s.expect_probe}
    assert {("openat", "ENOENT"), ("openat", "EACCES"), ("openat", "EISDIR"), ("openat", "EEXIST"),
            ("chmod", "EPERM"), ("connect", "ECONNREFUSED"), ("flock", "EAGAIN"), ("unlink", "EISDIR"),
            ("newfstatat", "ENOTDIR"), ("rename", "EISDIR")} <= pairs
    earlier = {s.description for e in earlier_sets("real_twentysecond") for s in e.faults}
    assert not earlier & {s.description for s in REAL_TWENTYSECOND}
    assert len(REAL_TWENTYSECOND) >= 12 and len(QUIET_TWENTYSECOND) >= 8
    assert all(s.name.startswith("nd_") for s in REAL_TWENTYSECOND) and all(
        c.name.startswith("nd_") for c in QUIET_TWENTYSECOND)
    assert names >= BENCH_ONLY and {c.name for c in QUIET_TWENTYSECOND} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {
        c.name for c in QUIET_TWENTYSECOND}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, twentysecond_recorder, tmp_path):
    sc = next(s for s in REAL_TWENTYSECOND if s.name == name)
    check_fault_case(sc, twentysecond_recorder, tmp_path, OUTCOMES, QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_run_to_run_noise_is_quiet(name, twentysecond_recorder, tmp_path):
    case = next(c for c in QUIET_TWENTYSECOND if c.name == name)
    check_noise_case(case, twentysecond_recorder, tmp_path, QUIET, FLAKY_QUIET)

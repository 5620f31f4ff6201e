"""A nineteenth set of real programs with one real fault each (tests/scenarios/real_nineteenth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: where in a process tree the failing call
is made -- a subshell's cat (the script's grandchild, openat ENOENT), a double-forked daemon
whose parent already exited (openat EACCES; openat ENOENT after its launcher exited), the
middle stage of a pipeline with and without pipefail (grep -f openat ENOENT, also with cat's
later write EPIPE upstream; tee write ENOSPC), one of xargs -P4's, make -j4's or a python pool's
parallel workers while the others succeed (openat EACCES, write ENOSPC, openat ENOENT), a spawn's
child failing before or at its exec (posix_spawn execve EACCES and file action openat ENOENT;
subprocess chdir ENOENT), a timeout- or setsid-wrapped child (bind EADDRINUSE, rename ENOENT)
and an orphan reparented to a subreaper (openat EACCES). The good-vs-good noise cases (parallel
workers taking items in any order, a pipeline's stages interleaving over inputs of varying size,
a daemon's parent exiting early or late, orphans reaped in any order) must be quiet.

pipefail_middle_fails_upstream_epipe failed on main (write EPIPE named: grep's soft ENOENT,
its exit re-joining the good runs', did not count as the failed peer).

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_nineteenth import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_NINETEENTH,
    REAL_NINETEENTH,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_NINETEENTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_NINETEENTH if c.name not in QUIET_BENCH_ONLY]


nineteenth_recorder = set_recorder("nineteenth_recorder", "nineteenth set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in ("bash", "xargs", "make", "timeout", "setsid", "gzip", "tee", "grep", "mount")
               if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)}")


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_NINETEENTH}
    assert_set_is_new("real_nineteenth")
    assert_no_program_repeats("real_nineteenth", scripts=("python3", "bash", "sh"))
    pairs = {(p, s.expect_errno) for s in REAL_NINETEENTH for p in s.expect_probe}
    assert {("openat", "ENOENT"), ("openat", "EACCES"), ("write", "ENOSPC"), ("execve", "EACCES"),
            ("bind", "EADDRINUSE"), ("renameat2", "ENOENT"), ("chdir", "ENOENT")} <= pairs
    earlier = {s.description for e in earlier_sets("real_nineteenth") for s in e.faults}
    assert not earlier & {s.description for s in REAL_NINETEENTH}
    assert len(REAL_NINETEENTH) >= 8 and len(QUIET_NINETEENTH) >= 4
    assert names >= BENCH_ONLY and {c.name for c in QUIET_NINETEENTH} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {
        c.name for c in QUIET_NINETEENTH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, nineteenth_recorder, tmp_path):
    sc = next(s for s in REAL_NINETEENTH if s.name == name)
    check_fault_case(sc, nineteenth_recorder, tmp_path, OUTCOMES, QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_run_to_run_noise_is_quiet(name, nineteenth_recorder, tmp_path):
    case = next(c for c in QUIET_NINETEENTH if c.name == name)
    check_noise_case(case, nineteenth_recorder, tmp_path, QUIET, FLAKY_QUIET)

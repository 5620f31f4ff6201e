"""A third set of real Debian programs with one real fault each (tests/scenarios/real_third.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The good-vs-good noise cases (multiprocessing,
curl's localhost fallback, a client waiting for a starting service, perl hash order, an output left by an earlier run, $RANDOM names,
/proc/<pid> paths, a lock-retry loop, make -j3, atomic-write temp names, git's racy index) must
be quiet; guard
cases check the differ's rules for an earlier run's leftovers, and for a retry loop's refused
connects, do not hide a fault they cause.
Cases repeating a tested case's call, errno and kind of fault (`BENCH_ONLY`) are left to the
benchmark, so this module takes about a minute.

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_third import BENCH_ONLY, QUIET_THIRD, REAL_THIRD, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# Misses, by root cause (xfail, strict): none today. The two this set found were the
# recording's: touch -d's utimensat(0, NULL, ...) had no path (the recorder now labels it with
# the fd's path), and a refused non-blocking connect (curl) was only in getsockopt(SO_ERROR)'s
# value (the recorder now reads it: the event's errno, ret 0, arg SO_ERROR).
KNOWN_MISSES: dict[str, str] = {}
# Good-vs-good misses of the differ, by root cause (xfail, strict): none today. The two this
# set found (gzip -f's EEXIST/unlink/create over an earlier run's output; mkdir -p finding the
# directory an earlier run left and rm -f removing its file) and a poll's timing are fixed in
# baseline/run/diff.py; the guards (makedirs_over_file, mkdir_p_over_file,
# gzip_replace_readonly_dir) check the new rules do not hide a real fault.
QUIET_MISSES: dict[str, str] = {}
# Timing-dependent good-vs-good misses: reported as xfail when they happen, never asserted.
# multiprocessing's `with Pool()` terminating its workers is a teardown the differ now reads as
# one (baseline/run/rules/processes.py, _Teardowns: a checked kill is timing, a worker it cut off ends
# where it stood; guards mp_pool_worker_error_swallowed, worker_killed_waiting_on_lock):
# mp_pool_quiet is no longer flaky (0 alarms in 70 runs, 50 beside a busy loop; main: 7).
# mp_pool_worker_fails still is, rarely (1 in 70 runs, under load; main: 4): Pool's
# _help_stuff_finish drains the task pipe in the parent only when a zero-timeout poll finds
# tasks the killed workers left there -- reads no good run made, which no rule excuses without
# excusing reads a program makes for a reason.
FLAKY_QUIET: dict[str, str] = {
    "mp_pool_worker_fails": "differ: Pool's teardown drains the task pipe in the parent (reads, a sleep) only when "
                            "a zero-timeout poll finds tasks the killed workers left: seen in 1 of 70 runs, under load",
}
TESTED = [s for s in REAL_THIRD if s.name not in BENCH_ONLY]


third_recorder = set_recorder("third_recorder", "third set of real programs", OUTCOMES, QUIET, quiet_teardown)


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_THIRD}
    assert_set_is_new("real_third")
    assert len(REAL_THIRD) >= 30 and len(QUIET_THIRD) >= 10
    # no program repeats a fault of the earlier sets (program, syscall, errno)
    assert_no_program_repeats("real_third", scripts=("python3", "sh", "bash"))
    errnos = {s.expect_errno for s in REAL_THIRD}
    assert {"EACCES", "EROFS", "ENOSPC", "ENOENT", "EISDIR", "ELOOP", "EEXIST", "EPERM", "ENAMETOOLONG", "E2BIG",
            "EAGAIN", "ECONNREFUSED", "ECONNRESET", "EXDEV", "ENXIO", "ESRCH", None} <= errnos
    assert {s.name for s in REAL_THIRD if s.unprivileged}  # as nobody, too
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= {c.name for c in QUIET_THIRD}
    assert FLAKY_QUIET.keys() <= names | {c.name for c in QUIET_THIRD}
    assert names >= BENCH_ONLY and len(TESTED) >= 20


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, third_recorder, tmp_path):
    sc = next(s for s in REAL_THIRD if s.name == name)
    check_fault_case(sc, third_recorder, tmp_path, OUTCOMES, QUIET, check_recorded=name not in KNOWN_MISSES, flaky_quiet=FLAKY_QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_THIRD])
def test_run_to_run_noise_is_quiet(name, third_recorder, tmp_path):
    case = next(c for c in QUIET_THIRD if c.name == name)
    check_noise_case(case, third_recorder, tmp_path, QUIET, FLAKY_QUIET)

"""A sixteenth set of real programs with one real fault each (tests/scenarios/real_sixteenth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: time, identity and process lifecycle --
the clock's tick and the kernel's timezone set after a launcher dropped to nobody (adjtimex,
settimeofday EPERM), a service account or group switched to as nobody (setreuid, setregid
EPERM), a container's hostname set by nobody (sethostname EPERM), a missing root (chroot
ENOENT), tools and checks aimed at a worker that exited (renice, ionice, chrt, taskset, prlimit,
tgkill, getsid: ESRCH), a daemonized hook waited for (waitid ECHILD), and a config's
contradictory arguments (getrandom EINVAL, sched_setscheduler EINVAL). The good-vs-good noise
cases (nice refused in every run, clock reads, helpers, a stale pid file probed, random sizes,
own scheduling queried, chroot contents) must be quiet.

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import ctypes
import os
import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_sixteenth import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_SIXTEENTH,
    REAL_SIXTEENTH,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

def _kernel_timezone_is_utc() -> bool:
    """The kernel's timezone (gettimeofday's tz) is 0 minutes west: life.py's timezone step
    sets it to what it read, and refuses a non-UTC one (the first tz-only set warps the clock)."""
    tz = (ctypes.c_int * 2)()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall(96, None, tz) == 0 and tz[0] == 0  # SYS_gettimeofday on x86_64


# Faults the host's settings make possible.
NEEDS_HOST = {
    "timezone_set_after_privilege_drop": ("the kernel's timezone UTC", _kernel_timezone_is_utc),
}
KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_SIXTEENTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_SIXTEENTH if c.name not in QUIET_BENCH_ONLY]


sixteenth_recorder = set_recorder("sixteenth_recorder", "sixteenth set of real programs", OUTCOMES, QUIET,
                                  quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in ("setpriv", "unshare", "hostname", "renice", "ionice", "chrt", "taskset", "prlimit",
                           "nice") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)}")
    if os.uname().machine != "x86_64":
        pytest.skip("life.py names x86_64 syscall numbers")


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_SIXTEENTH}
    assert_set_is_new("real_sixteenth")
    assert_no_program_repeats("real_sixteenth", scripts=("python3", "sh", "setpriv", "unshare"))
    earlier = [s for e in earlier_sets("real_sixteenth") for s in e.faults]
    # (call, errno) pairs no earlier set's fault had
    before = {(p, s.expect_errno) for s in earlier for p in s.expect_probe}
    new = {(p, s.expect_errno) for s in REAL_SIXTEENTH for p in s.expect_probe} - before
    assert {("adjtimex", "EPERM"), ("settimeofday", "EPERM"), ("setreuid", "EPERM"), ("setregid", "EPERM"),
            ("sethostname", "EPERM"), ("chroot", "ENOENT"), ("getpriority", "ESRCH"), ("ioprio_set", "ESRCH"),
            ("sched_getaffinity", "ESRCH"), ("prlimit64", "ESRCH"), ("tgkill", "ESRCH"), ("getsid", "ESRCH"),
            ("waitid", "ECHILD"), ("getrandom", "EINVAL"), ("sched_setscheduler", "EINVAL")} <= new
    assert len(REAL_SIXTEENTH) >= 14 and len(QUIET_SIXTEENTH) >= 6
    assert names >= BENCH_ONLY and {c.name for c in QUIET_SIXTEENTH} >= QUIET_BENCH_ONLY
    assert NEEDS_HOST.keys() <= names
    assert KNOWN_MISSES.keys() <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {c.name for c in QUIET_SIXTEENTH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, sixteenth_recorder, tmp_path):
    sc = next(s for s in REAL_SIXTEENTH if s.name == name)
    if name in NEEDS_HOST:
        wanted, holds = NEEDS_HOST[name]
        if not holds():
            pytest.skip(f"the fault needs {wanted}; this host does not have it")
    check_fault_case(sc, sixteenth_recorder, tmp_path, OUTCOMES, QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_run_to_run_noise_is_quiet(name, sixteenth_recorder, tmp_path):
    case = next(c for c in QUIET_SIXTEENTH if c.name == name)
    check_noise_case(case, sixteenth_recorder, tmp_path, QUIET, FLAKY_QUIET)

"""An eighteenth set of real programs with one real fault each (tests/scenarios/real_eighteenth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: limits and kernel-object quotas met after
a long good prefix -- pipes past RLIMIT_NOFILE (pipe2 EMFILE), a log descriptor moved above
the limit (fcntl F_DUPFD EINVAL), bash's exec 300> (dup2 EBADF), a limit above fs.nr_open
(prlimit64 EPERM), ftruncate and fallocate past RLIMIT_FSIZE (EFBIG), sigqueue past
RLIMIT_SIGPENDING (rt_sigqueueinfo EAGAIN), POSIX and SysV IPC objects past their namespace's
limits (mq_open, shmget, msgget ENOSPC; semop E2BIG; semget EINVAL), an AIO context past
fs.aio-max-nr (io_setup EAGAIN) and a cgroup child past cgroup.max.descendants (mkdir EAGAIN);
and limits every run meets and gets past turned fatal (an fd cache with nothing to evict,
sigqueue and io_setup retries given up). The good-vs-good noise cases (an fd cache evicting on
EMFILE at files, pipes or eventfds, sigqueue retried after EAGAIN, AIO depths halved until
taken, IPC objects, workers, polls, inotify events and cgroups of varying count) must be quiet.

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import os
import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_eighteenth import (
    BENCH_ONLY,
    CGROUP2,
    QUIET_BENCH_ONLY,
    QUIET_EIGHTEENTH,
    REAL_EIGHTEENTH,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_EIGHTEENTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_EIGHTEENTH if c.name not in QUIET_BENCH_ONLY]


eighteenth_recorder = set_recorder("eighteenth_recorder", "eighteenth set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in ("bash", "unshare", "setpriv", "fallocate") if shutil.which(t) is None]
    missing += [f for f in (CGROUP2 / "cgroup.procs", "/proc/sys/fs/mqueue/queues_max", "/proc/sys/fs/aio-max-nr")
                if not os.path.exists(f)]
    if missing:
        pytest.skip(f"the set needs {', '.join(map(str, missing))}")


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_EIGHTEENTH}
    assert_set_is_new("real_eighteenth")
    assert_no_program_repeats("real_eighteenth", scripts=("python3", "unshare", "bash", "fallocate"))
    pairs = {(p, s.expect_errno) for s in REAL_EIGHTEENTH for p in s.expect_probe}
    assert {("pipe2", "EMFILE"), ("fcntl", "EINVAL"), ("dup2", "EBADF"), ("prlimit64", "EPERM"),
            ("ftruncate", "EFBIG"), ("fallocate", "EFBIG"), ("rt_sigqueueinfo", "EAGAIN"),
            ("mq_open", "ENOSPC"), ("shmget", "ENOSPC"), ("msgget", "ENOSPC"), ("semtimedop", "E2BIG"),
            ("semget", "EINVAL"), ("io_setup", "EAGAIN"), ("mkdir", "EAGAIN"), ("openat", "EMFILE")} <= pairs
    earlier = {s.description for e in earlier_sets("real_eighteenth") for s in e.faults}
    assert not earlier & {s.description for s in REAL_EIGHTEENTH}
    assert len(REAL_EIGHTEENTH) >= 14 and len(QUIET_EIGHTEENTH) >= 7
    assert names >= BENCH_ONLY and {c.name for c in QUIET_EIGHTEENTH} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {
        c.name for c in QUIET_EIGHTEENTH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, eighteenth_recorder, tmp_path):
    sc = next(s for s in REAL_EIGHTEENTH if s.name == name)
    check_fault_case(sc, eighteenth_recorder, tmp_path, OUTCOMES, QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_run_to_run_noise_is_quiet(name, eighteenth_recorder, tmp_path):
    case = next(c for c in QUIET_EIGHTEENTH if c.name == name)
    check_noise_case(case, eighteenth_recorder, tmp_path, QUIET, FLAKY_QUIET)

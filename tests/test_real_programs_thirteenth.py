"""A thirteenth set of real programs with one real fault each (tests/scenarios/real_thirteenth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: the kernel facilities a job's runtime
leans on -- rseq registered twice (EINVAL), SysV IPC (semop EAGAIN, semget EEXIST, semctl
ERANGE, shmat EINVAL, shmget SHM_HUGETLB ENOMEM, msgsnd EINVAL), POSIX message queues
(mq_timedsend EAGAIN, mq_timedreceive EMSGSIZE, mq_open EEXIST), record locks taken in
opposite order (fcntl EDEADLK), move_pages ENODEV, mprotect PROT_EXEC EACCES on noexec,
membarrier EPERM, timerfd_settime and clock_nanosleep EINVAL, splice EINVAL, copy_file_range
EXDEV, fallocate EOPNOTSUPP, io_uring_setup EPERM under a seccomp profile, epoll_ctl EEXIST and
fanotify_init EPERM. The good-vs-good noise cases (epoll fallback, copy_file_range's EXDEV
fallback, IPC_NOWAIT polls, a queue another rank made, sizes and periods) must be quiet, and so
must the same fallbacks met only in the diffed run (a recovered fallback, see
baseline/run/rules/retries.py's `_recovered_fallbacks`).

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scenarios.files import huge_page_pool
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_thirteenth import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_THIRTEENTH,
    REAL_THIRTEENTH,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# Faults a host's setting makes: with io_uring disabled by sysctl the good runs are refused too;
# there is no fault to name. With huge pages reserved the segment is made: the pool is emptied
# for that case and other test processes kept out of it (scenarios.files.huge_page_pool).
NEEDS_SYSCTL = {
    "io_uring_refused_by_profile": ("kernel/io_uring_disabled", "= 0 (or absent)", lambda v: v == 0),
}
# A fault the host's topology makes: on a host with a NUMA node 1 the page moves.
NEEDS_ONE_NODE = {"move_pages_to_missing_node"}
NEEDS_EMPTY_HUGE_PAGE_POOL = {"sysv_shm_hugetlb_none_reserved"}
KNOWN_MISSES: dict[str, str] = {}
# A fallback the good runs never needed, met only in the diffed run and recovered from
# (io_uring_setup EPERM then epoll, mq_open O_EXCL EEXIST then a join, copy_file_range EXDEV then
# read/write): quiet since baseline/run/rules/retries.py's `_recovered_fallbacks` (fallback_calls.yaml).
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_THIRTEENTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_THIRTEENTH if c.name not in QUIET_BENCH_ONLY]


thirteenth_recorder = set_recorder("thirteenth_recorder", "thirteenth set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_THIRTEENTH}
    assert_set_is_new("real_thirteenth")
    assert_no_program_repeats("real_thirteenth", scripts=("python3", "sh"))
    earlier = [s for e in earlier_sets("real_thirteenth") for s in e.faults]
    # (call, errno) pairs no earlier set's fault had
    before = {(p, s.expect_errno) for s in earlier for p in s.expect_probe}
    new = {(p, s.expect_errno) for s in REAL_THIRTEENTH for p in s.expect_probe} - before
    assert {("rseq", "EINVAL"), ("semop", "EAGAIN"), ("semget", "EEXIST"), ("semctl", "ERANGE"),
            ("shmat", "EINVAL"), ("shmget", "ENOMEM"), ("msgsnd", "EINVAL"), ("mq_timedsend", "EAGAIN"),
            ("mq_timedreceive", "EMSGSIZE"), ("mq_open", "EEXIST"), ("fcntl", "EDEADLK"),
            ("move_pages", "ENODEV"), ("mprotect", "EACCES"), ("membarrier", "EPERM"),
            ("timerfd_settime", "EINVAL"), ("clock_nanosleep", "EINVAL"), ("splice", "EINVAL"),
            ("copy_file_range", "EXDEV"), ("fallocate", "EOPNOTSUPP"), ("io_uring_setup", "EPERM"),
            ("epoll_ctl", "EEXIST"), ("fanotify_init", "EPERM")} <= new
    assert len(REAL_THIRTEENTH) >= 15 and len(QUIET_THIRTEENTH) >= 6
    assert names >= BENCH_ONLY and {c.name for c in QUIET_THIRTEENTH} >= QUIET_BENCH_ONLY
    assert NEEDS_SYSCTL.keys() <= names and names >= NEEDS_ONE_NODE | NEEDS_EMPTY_HUGE_PAGE_POOL
    assert KNOWN_MISSES.keys() <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {c.name for c in QUIET_THIRTEENTH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, thirteenth_recorder, tmp_path):
    sc = next(s for s in REAL_THIRTEENTH if s.name == name)
    if name in NEEDS_SYSCTL:
        knob, wanted, holds = NEEDS_SYSCTL[name]
        setting = Path("/proc/sys", knob)
        value = int(setting.read_text()) if setting.exists() else 0
        if not holds(value):
            pytest.skip(f"the fault needs {knob.replace('/', '.')} {wanted}; this host has {value}")
    if name in NEEDS_ONE_NODE and Path("/sys/devices/system/node/node1").exists():
        pytest.skip("the fault needs a host without NUMA node 1; this host has one")
    if name not in NEEDS_EMPTY_HUGE_PAGE_POOL:
        check_fault_case(sc, thirteenth_recorder, tmp_path, OUTCOMES, QUIET)
        return
    with huge_page_pool(0) as emptied:
        if not emptied:
            pytest.skip("the fault needs no huge pages reserved (vm.nr_hugepages 0); this host's pool "
                        "could not be emptied (pages in use)")
        check_fault_case(sc, thirteenth_recorder, tmp_path, OUTCOMES, QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_run_to_run_noise_is_quiet(name, thirteenth_recorder, tmp_path):
    case = next(c for c in QUIET_THIRTEENTH if c.name == name)
    check_noise_case(case, thirteenth_recorder, tmp_path, QUIET, FLAKY_QUIET)

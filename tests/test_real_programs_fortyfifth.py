"""A forty-fifth set of real programs with one real fault each (tests/scenarios/real_fortyfifth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: the tuning and introspection calls of a GPU
job runtime, its profilers and its health agent -- perf stat -a as the job, the set's C runtime probe tb45-probe
(perf_event_open of kernel time under perf_event_paranoid 2, process_vm_readv and ptrace of a
worker of another account, io_uring_setup beyond the kernel's depth, a staging buffer on a
hugetlbfs with no huge pages, set_mempolicy to a missing NUMA node, sched_setaffinity to a missing
CPU, mlock over RLIMIT_MEMLOCK, BLKGETSIZE64 of a character node, /proc/PID/stat of an exited
worker), chrt -f on a rootless node and renice -n -5 as the job -- amid their good runs alone.

Written blind (round forty-five). The table of outcomes is printed at the end of the module.
No sysctl is written: a case whose fault the host cannot show (its sysctl, huge pages, NUMA nodes
or CPUs) is skipped.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scenarios.harness import ROOT, Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_fortyfifth import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_FORTYFIFTH,
    REAL_FORTYFIFTH,
    host_lacks,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# t45_perf_stat_system_wide_as_job was one (the differ named perf's workload child killed in its
# wait, and filed both EACCES as the good runs' routine): a pathless refusal every good run fell
# back from, refused again at the bad run's last attempt, is where it stopped
# (rules.retries._pathless_retries_given_up, FALLBACK_ERRNOS), and a wait killed after another process
# failed ranks below that failure (rules.processes._demote_killed_waits).
KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
_PERF_WAIT4 = ("once in a full run under load ~15 on 2 CPUs, good vs good of perf stat (per-task counters, as "
               "nobody) named 'wait4 None None' -- perf's wait for its workload, no error, a timing "
               "difference; 5 reruns of the noise case alone stayed quiet")
FLAKY_QUIET: dict[str, str] = {"t45_perf_stat_per_task": _PERF_WAIT4, "t45_perf_stat_system_wide_as_job": _PERF_WAIT4}
# A top-1 miss that depends on timing (never strictly xfailed: it passes most runs); none now.
FLAKY_MISSES: dict[str, str] = {}
TESTED = [s for s in REAL_FORTYFIFTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_FORTYFIFTH if c.name not in QUIET_BENCH_ONLY]
TOOLS = ("perf", "unshare", "setpriv", "prlimit", "chrt", "renice", "mknod", "mount", "gcc", "sh", "sleep")
SCRIPTS = ("sh", "python3")


fortyfifth_recorder = set_recorder("fortyfifth_recorder", "forty-fifth set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: util-linux coreutils gcc)")


def test_the_set_is_new_and_covers_the_tools():
    names = {s.name for s in REAL_FORTYFIFTH}
    assert_set_is_new("real_fortyfifth")
    assert_no_program_repeats("real_fortyfifth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_FORTYFIFTH for p in s.expect_probe}
    assert {("perf_event_open", "EACCES"), ("process_vm_readv", "EPERM"), ("ptrace", "EPERM"),
            ("io_uring_setup", "EINVAL"), ("mmap", "ENOMEM"), ("set_mempolicy", "EINVAL"),
            ("sched_setaffinity", "EINVAL"), ("mlock", "ENOMEM"), ("ioctl", "ENOTTY"), ("openat", "ENOENT"),
            ("sched_setscheduler", "EPERM"), ("setpriority", "EACCES")} <= pairs
    programs = {s.program.split()[0] for s in REAL_FORTYFIFTH}
    assert {"tb45-probe", "chrt", "renice", "perf"} <= programs
    assert 10 <= len(REAL_FORTYFIFTH) <= 13 and 6 <= len(QUIET_FORTYFIFTH) <= 8
    assert all(s.name.startswith("t45_") for s in REAL_FORTYFIFTH) and all(
        c.name.startswith("t45_") for c in QUIET_FORTYFIFTH)
    assert names >= BENCH_ONLY and {c.name for c in QUIET_FORTYFIFTH} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= {c.name for c in QUIET_FORTYFIFTH}
    assert FLAKY_QUIET.keys() <= names | {c.name for c in QUIET_FORTYFIFTH}
    assert FLAKY_MISSES.keys() <= names and not FLAKY_MISSES.keys() & KNOWN_MISSES.keys()


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, fortyfifth_recorder, tmp_path):
    sc = next(s for s in REAL_FORTYFIFTH if s.name == name)
    lacks = host_lacks(name)
    if lacks:
        pytest.skip(lacks)
    try:
        check_fault_case(sc, fortyfifth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    except AssertionError as err:
        if name in FLAKY_MISSES and "expected" in str(err):
            pytest.xfail(f"{err}: {FLAKY_MISSES[name]}")
        raise


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_tool_noise_is_quiet(name, fortyfifth_recorder, tmp_path):
    case = next(c for c in QUIET_FORTYFIFTH if c.name == name)
    try:
        check_noise_case(case, fortyfifth_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()  # the health case's last run's workers


def test_no_mount_is_left(fortyfifth_recorder):
    """The set's teardown leaves no mount under its directories (mounts live in the runs' namespaces)."""
    quiet_teardown()
    with open("/proc/self/mounts") as fh:
        assert not [line for line in fh if f"{ROOT}/t45_" in line]


def test_probe_source_is_there():
    assert (Path(__file__).parent / "scenarios" / "programs" / "fortyfifth" / "tb45-probe.c").is_file()

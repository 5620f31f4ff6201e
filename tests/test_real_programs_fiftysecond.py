"""A fifty-second set of real programs with one real fault each (tests/scenarios/real_fiftysecond.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: a GPU/RDMA job's prolog and memory-side
preflight on a compute node -- the pinned buffers' locked-memory limit (mlock, mlockall), the
job's hugetlbfs ring, its NCCL segment in /dev/shm, the user's shared ring, the stager's I/O
class, the HCA's device nodes, the SysV segment and the pod's IPC sysctls in the job's IPC
namespace, the proxy daemon's CPU binding, the prolog's memlock and rank-per-CPU checks -- with
good runs of jobs of other shapes, amid noise cases of such good runs alone.

Written blind: every expectation is the call strace -f shows for the bad run. The table of
outcomes is printed at the end of the module.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

import pytest
from scenarios.files import huge_page_pool
from scenarios.harness import (
    ROOT,
    Outcome,
    check_fault_case,
    check_noise_case,
    mounts_under,
    xfail_param,
)
from scenarios.real_fiftysecond import (
    POOL_KNOB,
    POOL_PAGES,
    QUIET_FIFTYSECOND,
    REAL_FIFTYSECOND,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "python3", "setpriv", "prlimit", "truncate", "ionice", "cat", "stat", "unshare", "sysctl", "ipcmk",
         "taskset", "nproc", "sleep", "mount")
SCRIPTS = ("sh", "python3")


fiftysecond_recorder = set_recorder("fiftysecond_recorder", "fifty-second set of real programs", OUTCOMES, QUIET,
                                    quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: coreutils util-linux procps python3)")
    if not POOL_KNOB.exists():
        pytest.skip(f"the set's hugetlbfs cases need a kernel with 2 MiB huge pages ({POOL_KNOB})")
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("the set's CPU-binding cases need CPUs 0 and 1")


def test_the_set_is_new_and_covers_the_prolog():
    names = {s.name for s in REAL_FIFTYSECOND}
    quiet = {c.name for c in QUIET_FIFTYSECOND}
    assert_set_is_new("real_fiftysecond")
    assert_no_program_repeats("real_fiftysecond", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_FIFTYSECOND for p in s.expect_probe}
    assert {("mlock", "ENOMEM"), ("mlockall", "EPERM"), ("mmap", "ENOMEM"), ("fallocate", "ENOSPC"),
            ("openat", "EACCES"), ("ioprio_set", "EPERM"), ("statx", "ENOENT"), ("shmget", "EINVAL"),
            ("sched_setaffinity", "EPERM"), ("write", None)} <= pairs
    assert 10 <= len(REAL_FIFTYSECOND) <= 12 and 6 <= len(QUIET_FIFTYSECOND) <= 8
    assert all(n.startswith("t52_") for n in names | quiet)
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet
    assert names | quiet >= HUGE_PAGE_CASES


# The hugetlbfs cases map pages of the host's pool, which the fifth and thirteenth sets' faults
# need empty: the pool is raised for the case with other test processes kept out of it.
HUGE_PAGE_CASES = {"t52_python3_hugetlbfs_ring_over_quota", "t52_python3_hugetlbfs_ring_sizes"}


@contextlib.contextmanager
def _pool_for(name: str) -> Iterator[None]:
    if name not in HUGE_PAGE_CASES:
        yield
        return
    with huge_page_pool(POOL_PAGES) as made:
        if not made:
            pytest.skip(f"the kernel could not reserve {POOL_PAGES} huge pages of 2 MiB (vm.nr_hugepages)")
        yield


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_FIFTYSECOND])
def test_fault_is_named_and_good_runs_are_quiet(name, fiftysecond_recorder, tmp_path):
    sc = next(s for s in REAL_FIFTYSECOND if s.name == name)
    with _pool_for(name):
        try:
            check_fault_case(sc, fiftysecond_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
        finally:
            quiet_teardown()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_FIFTYSECOND])
def test_prolog_noise_is_quiet(name, fiftysecond_recorder, tmp_path):
    case = next(c for c in QUIET_FIFTYSECOND if c.name == name)
    with _pool_for(name):
        try:
            check_noise_case(case, fiftysecond_recorder, tmp_path, QUIET, FLAKY_QUIET)
        finally:
            quiet_teardown()


def test_nothing_is_left_behind(fiftysecond_recorder):
    """The set's cases leave no mount under the session's root (the job's shm tmpfs, its hugetlbfs),
    no proxy daemon running and the huge page pool as they found it."""
    quiet_teardown()
    assert not mounts_under(ROOT)
    from scenarios import real_fiftysecond

    assert not real_fiftysecond._DAEMONS and not real_fiftysecond._POOL

"""A fifty-first set of real programs with one real fault each (tests/scenarios/real_fiftyfirst.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: a GPU node's epilog after a training job --
the ranks' logs compressed, checksummed, copied and packed into the log staging area, the job
summary written, the first lines of each rank's stderr collected, earlier jobs' archives verified,
the node's logs rotated, the job's secrets shredded, its scratch removed and its GPU locks
released -- with good runs of jobs that had other numbers of the node's GPUs, amid noise cases of
such good runs alone.

Written blind (round thirty-eight): every expectation is the call strace -f shows for the bad run. The
table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import (
    ROOT,
    Outcome,
    check_fault_case,
    check_noise_case,
    mounts_under,
    xfail_param,
)
from scenarios.real_fiftyfirst import QUIET_FIFTYFIRST, REAL_FIFTYFIRST, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "gzip", "b2sum", "rsync", "zstd", "tar", "lz4", "head", "cat", "ls", "grep", "mv", "savelog",
         "shred", "find", "unlink", "chattr", "setpriv", "mount")
SCRIPTS = ("sh", "python3")


fiftyfirst_recorder = set_recorder("fiftyfirst_recorder", "fifty-first set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: coreutils gzip rsync zstd tar lz4 grep debianutils "
                    "findutils e2fsprogs util-linux)")


def test_the_set_is_new_and_covers_the_epilog():
    names = {s.name for s in REAL_FIFTYFIRST}
    quiet = {c.name for c in QUIET_FIFTYFIRST}
    assert_set_is_new("real_fiftyfirst")
    assert_no_program_repeats("real_fiftyfirst", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_FIFTYFIRST for p in s.expect_probe}
    assert {("unlinkat", "EPERM"), ("read", "EISDIR"), ("write", "EFBIG"), ("write", None), ("openat", "EACCES"),
            ("write", "ENOSPC"), ("renameat2", "ENOENT"), ("newfstatat", "ENOENT"), ("openat", "EROFS"),
            ("unlinkat", "EBUSY"), ("unlink", "EISDIR")} <= pairs
    assert 10 <= len(REAL_FIFTYFIRST) <= 12 and 6 <= len(QUIET_FIFTYFIRST) <= 8
    assert all(n.startswith("t51_") for n in names | quiet)
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_FIFTYFIRST])
def test_fault_is_named_and_good_runs_are_quiet(name, fiftyfirst_recorder, tmp_path):
    sc = next(s for s in REAL_FIFTYFIRST if s.name == name)
    try:
        check_fault_case(sc, fiftyfirst_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_FIFTYFIRST])
def test_epilog_noise_is_quiet(name, fiftyfirst_recorder, tmp_path):
    case = next(c for c in QUIET_FIFTYFIRST if c.name == name)
    try:
        check_noise_case(case, fiftyfirst_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()


def test_nothing_is_left_mounted(fiftyfirst_recorder):
    """The set's cases leave no mount under the session's root (the staging tmpfs, the scratch's shm
    tmpfs, the read-only bind mount of the secrets)."""
    quiet_teardown()
    assert not mounts_under(ROOT)

"""A forty-first set of real programs with one real fault each (tests/scenarios/real_fortyfirst.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: container-style root file systems without a
container runtime -- an overlay mount without its work directory, pivot_root into a root never
mounted, chroot into a noexec overlay root, ps in a chroot without /proc, mkdir -p in an overlay
without an upper, mktemp in an overlay mounted ro, rename.ul and git mv of a lower-only directory
without redirect_dir, copy-ups (truncate, chmod) and sed -i onto a full upper tmpfs, rm's whiteouts on an
upper out of inodes -- amid their good runs alone, every mount inside the recorded command
(unshare -m): an overlay mounted and read, sed -i's copy-up, a rename with redirect_dir, rm's
whiteouts, tar -x into an overlay, chroot into and pivot_root into an overlay of the host's root,
unshare -p -f --mount-proc ps.

Written blind (round forty-one). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_fortyfirst import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_FORTYFIRST,
    REAL_FORTYFIRST,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted); none now.
FLAKY_QUIET: dict[str, str] = {}
# A top-1 miss that depends on timing (never strictly xfailed: it passes most runs); none now.
FLAKY_MISSES: dict[str, str] = {}
TESTED = [s for s in REAL_FORTYFIRST if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_FORTYFIRST if c.name not in QUIET_BENCH_ONLY]
TOOLS = ("mount", "umount", "mountpoint", "unshare", "pivot_root", "chroot", "ps", "mkdir", "mktemp", "rename.ul",
         "truncate", "chmod", "sed", "rm", "git", "tar", "cat", "sh")
SCRIPTS = ("sh", "python3")  # runners of a test's script (none of this set's faults is theirs)


fortyfirst_recorder = set_recorder("fortyfirst_recorder", "forty-first set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: util-linux mount coreutils procps sed git tar)")
    if "overlay" not in Path("/proc/filesystems").read_text() and \
            subprocess.run(["modprobe", "overlay"], capture_output=True).returncode != 0:
        pytest.skip("the set needs overlayfs (modprobe overlay)")


def test_the_set_is_new_and_covers_the_tools():
    names = {s.name for s in REAL_FORTYFIRST}
    assert_set_is_new("real_fortyfirst")
    assert_no_program_repeats("real_fortyfirst", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_FORTYFIRST for p in s.expect_probe}
    assert {("mount", "ENOENT"), ("pivot_root", "EBUSY"), ("execve", "EACCES"), ("openat", "ENOENT"),
            ("mkdirat", "EROFS"), ("openat", "EROFS"), ("rename", "EXDEV"), ("openat", "ENOSPC"),
            ("fchmodat", "ENOSPC"), ("write", "ENOSPC"), ("unlinkat", "ENOSPC")} <= pairs
    programs = {s.program.split()[0] for s in REAL_FORTYFIRST}
    assert {"mount", "pivot_root", "chroot", "ps", "mkdir", "mktemp", "rename.ul", "git", "truncate", "chmod", "sed",
            "rm"} <= programs
    assert 10 <= len(REAL_FORTYFIRST) <= 13 and 6 <= len(QUIET_FORTYFIRST) <= 8
    assert all(s.name.startswith("t41_") for s in REAL_FORTYFIRST) and all(
        c.name.startswith("t41_") for c in QUIET_FORTYFIRST)
    assert names >= BENCH_ONLY and {c.name for c in QUIET_FORTYFIRST} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= {c.name for c in QUIET_FORTYFIRST}
    assert FLAKY_QUIET.keys() <= names | {c.name for c in QUIET_FORTYFIRST}
    assert FLAKY_MISSES.keys() <= names and not FLAKY_MISSES.keys() & KNOWN_MISSES.keys()


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, fortyfirst_recorder, tmp_path):
    sc = next(s for s in REAL_FORTYFIRST if s.name == name)
    try:
        check_fault_case(sc, fortyfirst_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    except AssertionError as err:
        if name in FLAKY_MISSES and "expected" in str(err):
            pytest.xfail(f"{err}: {FLAKY_MISSES[name]}")
        raise


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_tool_noise_is_quiet(name, fortyfirst_recorder, tmp_path):
    case = next(c for c in QUIET_FORTYFIRST if c.name == name)
    check_noise_case(case, fortyfirst_recorder, tmp_path, QUIET, FLAKY_QUIET)

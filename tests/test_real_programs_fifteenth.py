"""A fifteenth set of real programs with one real fault each (tests/scenarios/real_fifteenth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: the credentials, the confinement and the
file-system features a job's runtime uses -- extended attributes (setxattr E2BIG, ENOSPC,
EEXIST, ENODATA, EPERM; lsetxattr and fsetxattr EPERM; removexattr ENODATA), inode flags
(rename and truncate EPERM), leases, pipes and seals (fcntl EACCES, EBUSY, EINVAL; write EPERM),
a seccomp launcher's policy (fdatasync ENOSYS, flock EPERM, mkdir ENOSYS), capabilities capsh
dropped (bpf EPERM, dmesg's open of /dev/kmsg EPERM), the key quota (add_key EDQUOT), and
required misses after routine ones of the same (call, path, errno) or (call, errno). The
good-vs-good noise cases (routine ERANGE and ENODATA of tags, fallbacks taken in every run,
counts and sizes that vary) must be quiet.

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from scenarios.harness import ROOT, Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_fifteenth import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_FIFTEENTH,
    REAL_FIFTEENTH,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []


def _root_fs_type() -> str:
    """The file system the scenarios' directories are on (the longest mount point above ROOT)."""
    best, kind = "", ""
    with open("/proc/self/mounts") as fh:
        for line in fh:
            _, mnt, fstype, *_ = line.split()
            if (str(ROOT.parent).startswith(mnt.rstrip("/") + "/") or mnt == "/") and len(mnt) >= len(best):
                best, kind = mnt, fstype
    return kind


# Faults the host's file system or kernel settings make: ext4's one-block xattr space and its
# EINVAL for seals on a plain file (tmpfs: EPERM), dmesg_restrict for /dev/kmsg.
NEEDS_HOST = {
    "provenance_tag_past_ext4_block": ("the scenarios' directory on ext4", lambda: _root_fs_type() == "ext4"),
    "seals_on_a_plain_file": ("the scenarios' directory on ext4", lambda: _root_fs_type() == "ext4"),
    "dmesg_without_cap_syslog": ("kernel.dmesg_restrict = 1",
                                 lambda: Path("/proc/sys/kernel/dmesg_restrict").read_text().strip() == "1"),
}
KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_FIFTEENTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_FIFTEENTH if c.name not in QUIET_BENCH_ONLY]


fifteenth_recorder = set_recorder("fifteenth_recorder", "fifteenth set of real programs", OUTCOMES, QUIET,
                                  quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in ("gcc", "capsh", "chattr", "lsattr", "dmesg", "flock") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)}")
    if os.uname().machine != "x86_64":
        pytest.skip("the sandbox's policies name x86_64 syscall numbers")


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_FIFTEENTH}
    assert_set_is_new("real_fifteenth")
    assert_no_program_repeats("real_fifteenth", scripts=("python3", "sh", "setpriv", "sandbox", "capsh"))
    earlier = [s for e in earlier_sets("real_fifteenth") for s in e.faults]
    # (call, errno) pairs no earlier set's fault had
    before = {(p, s.expect_errno) for s in earlier for p in s.expect_probe}
    new = {(p, s.expect_errno) for s in REAL_FIFTEENTH for p in s.expect_probe} - before
    assert {("setxattr", "E2BIG"), ("setxattr", "ENOSPC"), ("setxattr", "EEXIST"), ("setxattr", "ENODATA"),
            ("setxattr", "EPERM"), ("lsetxattr", "EPERM"), ("fsetxattr", "EPERM"), ("removexattr", "ENODATA"),
            ("rename", "EPERM"), ("truncate", "EPERM"), ("fcntl", "EACCES"), ("fcntl", "EBUSY"),
            ("fcntl", "EINVAL"), ("write", "EPERM"), ("fdatasync", "ENOSYS"), ("flock", "EPERM"),
            ("mkdir", "ENOSYS"), ("bpf", "EPERM"), ("add_key", "EDQUOT")} <= new
    assert len(REAL_FIFTEENTH) >= 15 and len(QUIET_FIFTEENTH) >= 8
    assert names >= BENCH_ONLY and {c.name for c in QUIET_FIFTEENTH} >= QUIET_BENCH_ONLY
    assert NEEDS_HOST.keys() <= names
    assert KNOWN_MISSES.keys() <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {c.name for c in QUIET_FIFTEENTH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, fifteenth_recorder, tmp_path):
    sc = next(s for s in REAL_FIFTEENTH if s.name == name)
    if name in NEEDS_HOST:
        wanted, holds = NEEDS_HOST[name]
        if not holds():
            pytest.skip(f"the fault needs {wanted}; this host does not have it")
    check_fault_case(sc, fifteenth_recorder, tmp_path, OUTCOMES, QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_run_to_run_noise_is_quiet(name, fifteenth_recorder, tmp_path):
    case = next(c for c in QUIET_FIFTEENTH if c.name == name)
    check_noise_case(case, fifteenth_recorder, tmp_path, QUIET, FLAKY_QUIET)

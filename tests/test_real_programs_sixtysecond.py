"""Sixty-second set of real programs, recorded for real (root + bcc): permissions, ownership and
capabilities -- comm, cksum, unlink and uniq as nobody meeting a file restored as root (openat
EACCES), a directory without its search bit (openat EACCES), another user's lock in a sticky spool
(unlink EPERM) and a read-only output (openat EACCES); nl as nobody reading a report root wrote
under umask 077 (openat EACCES); chgrp under a setpriv bounding set without CAP_CHOWN (fchownat
EPERM); stdbuf and ionice running a script without its x bit and a tool on a noexec tmpfs (execve
EACCES); csplit writing into a read-only bind mount (openat EROFS); dd writing a slot of an
append-only ledger (openat EPERM); and good runs that differ only in noise (other modes and owners
of files root reads, a umask nothing reads back, other x bits, other inode flags) must be quiet.

Written blind: every expectation is the call strace -f shows for the bad run. The table of outcomes
is printed at the end of the module.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile

import pytest
from scenarios.harness import ROOT, Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_sixtysecond import QUIET_SIXTYSECOND, REAL_SIXTYSECOND, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "setpriv", "comm", "cksum", "unlink", "nl", "sort", "chgrp", "uniq", "stdbuf", "ionice", "csplit",
         "dd", "chattr", "mount", "umount")
SCRIPTS = ("sh", "python3")


sixtysecond_recorder = set_recorder("sixtysecond_recorder", "sixty-second set of real programs", OUTCOMES, QUIET,
                                    quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: coreutils util-linux e2fsprogs)")
    # the cases' directories live under harness.ROOT (in its parent's file system): the ledger cases need inode flags
    with tempfile.NamedTemporaryFile(dir=ROOT.parent, prefix="t62-flags.") as probe:
        if subprocess.run(["chattr", "+A", probe.name], capture_output=True).returncode != 0:
            pytest.skip(f"the file system of {ROOT.parent} has no inode flags (chattr +A): the ledger cases need them")


def test_the_set_is_new():
    names = {s.name for s in REAL_SIXTYSECOND}
    quiet = {c.name for c in QUIET_SIXTYSECOND}
    assert_set_is_new("real_sixtysecond")
    assert_no_program_repeats("real_sixtysecond", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_SIXTYSECOND for p in s.expect_probe}
    assert {("openat", "EACCES"), ("unlink", "EPERM"), ("fchownat", "EPERM"), ("execve", "EACCES"),
            ("openat", "EROFS"), ("openat", "EPERM")} <= pairs
    assert 8 <= len(REAL_SIXTYSECOND) <= 10 and 5 <= len(QUIET_SIXTYSECOND) <= 7
    programs = [s.program.split()[0] for s in REAL_SIXTYSECOND if not s.program.startswith(SCRIPTS)]
    assert len(set(programs)) == len(programs)  # one case a program
    assert all(n.startswith("t62_") for n in names | quiet)
    assert sum(s.unprivileged for s in REAL_SIXTYSECOND) >= 4  # the cases a root job could not meet
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SIXTYSECOND])
def test_a_permission_fault_is_named_and_good_runs_are_quiet(name, sixtysecond_recorder, tmp_path):
    sc = next(s for s in REAL_SIXTYSECOND if s.name == name)
    try:
        check_fault_case(sc, sixtysecond_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SIXTYSECOND])
def test_good_runs_that_differ_only_in_noise_are_quiet(name, sixtysecond_recorder, tmp_path):
    case = next(c for c in QUIET_SIXTYSECOND if c.name == name)
    try:
        check_noise_case(case, sixtysecond_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()

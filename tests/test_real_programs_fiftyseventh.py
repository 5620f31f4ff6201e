"""Fifty-seventh set of real programs, recorded for real (root + bcc): **the fault comes from a
resource limit or the process's surroundings, not from a missing file** -- split under a descriptor
limit (EMFILE), xargs as nobody under a process limit (clone EAGAIN), zstd under an address-space
limit (mmap ENOMEM), curl under a file size limit with SIGXFSZ ignored (EFBIG), git ls-remote to a
git daemon that is not running (ECONNREFUSED), ssh-add at a dead agent's socket (ECONNREFUSED),
socat into a FIFO nobody reads (ENXIO), uniq into a spool tmpfs another job filled (ENOSPC),
ssh-keygen into a read-only bind mount (EROFS), find -delete of a directory still holding a file
(ENOTEMPTY), rsync with its temporary directory on another file system (EXDEV) and nc listening on a
port the previous receiver holds (EADDRINUSE) -- amid noise cases: the same programs in good runs
alone, with other sizes, names and leftovers.

Written blind: every expectation is the call strace -f shows for the bad run. The table of outcomes
is printed at the end of the module.
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import (
    Outcome,
    check_fault_case,
    check_noise_case,
    skip_if_loopback_down,
    xfail_param,
)
from scenarios.real_fiftyseventh import QUIET_FIFTYSEVENTH, REAL_FIFTYSEVENTH, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# t57_split_roundrobin_nofile_limit was one until the diff named a room-made EMFILE no good run
# met as the cause of the region right after it (baseline.run.rules.retries._room_made_cause).
KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "env", "cat", "split", "xargs", "zstd", "curl", "git", "ssh-add", "ssh-agent", "ssh-keygen", "socat",
         "uniq", "find", "rsync", "nc", "mount", "setpriv")
SCRIPTS = ("sh", "python3")
LOOPBACK = {"t57_git_ls_remote_daemon_down", "t57_nc_listen_port_held"}


fiftyseventh_recorder = set_recorder("fiftyseventh_recorder", "fifty-seventh set of real programs", OUTCOMES, QUIET,
                                     quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: coreutils findutils zstd curl git openssh-client "
                    "socat rsync netcat-openbsd mount util-linux)")


def test_the_set_is_new_and_covers_limits_and_surroundings():
    names = {s.name for s in REAL_FIFTYSEVENTH}
    quiet = {c.name for c in QUIET_FIFTYSEVENTH}
    assert_set_is_new("real_fiftyseventh")
    assert_no_program_repeats("real_fiftyseventh", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_FIFTYSEVENTH for p in s.expect_probe}
    assert {("openat", "EMFILE"), ("clone", "EAGAIN"), ("mmap", "ENOMEM"), ("write", "EFBIG"),
            ("connect", "ECONNREFUSED"), ("openat", "ENXIO"), ("write", "ENOSPC"), ("openat", "EROFS"),
            ("unlinkat", "ENOTEMPTY"), ("renameat", "EXDEV"), ("bind", "EADDRINUSE")} <= pairs
    assert 10 <= len(REAL_FIFTYSEVENTH) <= 14 and 4 <= len(QUIET_FIFTYSEVENTH) <= 6
    assert len({s.program.split()[0] for s in REAL_FIFTYSEVENTH}) == len(REAL_FIFTYSEVENTH)  # one case a program
    assert all(n.startswith("t57_") for n in names | quiet)
    assert all(s.expect_errno is not None for s in REAL_FIFTYSEVENTH)  # every fault is a failing call
    assert names >= LOOPBACK
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_FIFTYSEVENTH])
def test_fault_from_a_limit_or_the_surroundings_is_named_and_good_runs_are_quiet(name, fiftyseventh_recorder,
                                                                                  tmp_path):
    sc = next(s for s in REAL_FIFTYSEVENTH if s.name == name)
    if name in LOOPBACK:
        skip_if_loopback_down()
    try:
        check_fault_case(sc, fiftyseventh_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_FIFTYSEVENTH])
def test_limits_and_surroundings_with_other_noise_are_quiet(name, fiftyseventh_recorder, tmp_path):
    case = next(c for c in QUIET_FIFTYSEVENTH if c.name == name)
    try:
        check_noise_case(case, fiftyseventh_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()

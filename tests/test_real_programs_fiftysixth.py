"""Fifty-sixth set of real programs, recorded for real (root + bcc): **the fault is in something the
program loads indirectly** -- git's config include of an include that is a socket, python3's user-site
.pth importing a module that imports an unreadable one, a shell script sourcing a library that sources
a missing one, make's include of an include that is a symlink loop, a C program whose library's
library was left out (ld.so via RUNPATH), a plugin loader whose plugin's library is a directory, ssh's
Include of an Include that is unreadable, an awk config flattener following include lines to an
unreadable file, m4's include under a stale file, perl's use of a module under a stale file, tclsh
sourcing a directory, pkg-config's Requires of a Requires never installed, groff's .so of a .so that is
unreadable, cpp's #include chain ending in an unreadable header -- amid noise cases: the same chains in
good runs alone, with other contents, sizes, modification times and unrelated files beside them.

Written blind: every expectation is the call strace -f shows for the bad run. The table of outcomes
is printed at the end of the module.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scenarios.harness import (
    Outcome,
    check_fault_case,
    check_noise_case,
    xfail_param,
)
from scenarios.real_fiftysixth import QUIET_FIFTYSIXTH, REAL_FIFTYSIXTH, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "env", "git", "make", "cc", "ssh", "awk", "m4", "perl", "tclsh", "pkg-config", "groff", "troff",
         "grotty", "cpp", "setpriv")
SCRIPTS = ("sh", "python3")


fiftysixth_recorder = set_recorder("fiftysixth_recorder", "fifty-sixth set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if not Path("/usr/bin/python3").exists():
        missing.append("/usr/bin/python3")
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: git make gcc openssh-client mawk m4 perl tcl "
                    "pkgconf groff-base cpp util-linux python3)")


def test_the_set_is_new_and_covers_faults_several_hops_away():
    names = {s.name for s in REAL_FIFTYSIXTH}
    quiet = {c.name for c in QUIET_FIFTYSIXTH}
    assert_set_is_new("real_fiftysixth")
    assert_no_program_repeats("real_fiftysixth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_FIFTYSIXTH for p in s.expect_probe}
    assert {("openat", "ENXIO"), ("openat", "EACCES"), ("openat", "ENOENT"), ("openat", "ELOOP"),
            ("openat", "ENOTDIR"), ("read", "EISDIR"), ("newfstatat", "ENOTDIR")} <= pairs
    assert 10 <= len(REAL_FIFTYSIXTH) <= 14 and 4 <= len(QUIET_FIFTYSIXTH) <= 6
    assert all(n.startswith("t56_") for n in names | quiet)
    assert all(s.expect_errno is not None for s in REAL_FIFTYSIXTH)  # every fault is a failing call
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_FIFTYSIXTH])
def test_fault_down_an_include_chain_is_named_and_good_runs_are_quiet(name, fiftysixth_recorder, tmp_path):
    sc = next(s for s in REAL_FIFTYSIXTH if s.name == name)
    try:
        check_fault_case(sc, fiftysixth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_FIFTYSIXTH])
def test_include_chains_with_other_contents_are_quiet(name, fiftysixth_recorder, tmp_path):
    case = next(c for c in QUIET_FIFTYSIXTH if c.name == name)
    try:
        check_noise_case(case, fiftysixth_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()

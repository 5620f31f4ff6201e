"""A thirty-second set of real programs with one real fault each (tests/scenarios/real_thirtysecond.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: unusual names and paths -- names with
spaces, newlines, tabs, backslashes and leading dashes, names that are not UTF-8, names near
NAME_MAX and paths near PATH_MAX, symlink chains, relative names after a chdir, /proc/self/fd
paths, hard links, case twins and trailing dots: cpio -0 -pdm (a mirror's leaf recreated as root),
rsync --from0 --files-from (a trailing dot stripped), gzip -r (a name with no room for .gz), cp -a
(a copy passing PATH_MAX), sed --follow-symlinks -i (a chain's release removed), awk (a host's
directory a file), mv -t (a target chain made a cycle), link (protected_hardlinks), sha256sum -c
(an escaped name restored as root), python3 -S (a case twin a planted link, O_NOFOLLOW), sh (a
spool directory reached through /proc/self/fd/3 recreated as root) and mkdir -p (a deep level
recreated as root) -- amid their good runs alone, mktemp names with odd characters, listings
whose names and order change every run, tar and rsync round trips, os.fwalk through
/proc/self/fd, cp -a of hard links into a random stage and sha256sum of newline names.

Written blind (round thirty-two). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_thirtysecond import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_THIRTYSECOND,
    REAL_THIRTYSECOND,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
# A top-1 miss that depends on timing (never strictly xfailed: it passes most runs); none now.
FLAKY_MISSES: dict[str, str] = {}
TESTED = [s for s in REAL_THIRTYSECOND if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_THIRTYSECOND if c.name not in QUIET_BENCH_ONLY]
TOOLS = ("cpio", "rsync", "gzip", "cp", "sed", "awk", "mv", "link", "sha256sum", "mkdir", "find", "tar",
         "mktemp", "ls", "cat", "wc", "setpriv", "python3")
SCRIPTS = ("python3", "sh")  # runners of a module or a script: the module is the program


thirtysecond_recorder = set_recorder("thirtysecond_recorder", "thirty-second set of real programs", OUTCOMES, QUIET,
                                     quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: cpio rsync gzip coreutils sed mawk findutils tar "
                    "util-linux python3)")


def test_the_set_is_new_and_covers_the_tools():
    names = {s.name for s in REAL_THIRTYSECOND}
    assert_set_is_new("real_thirtysecond")
    assert_no_program_repeats("real_thirtysecond", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_THIRTYSECOND for p in s.expect_probe}
    assert {("openat", "EACCES"), ("openat", "ENAMETOOLONG"), ("mkdirat", "ENAMETOOLONG"), ("openat", "ELOOP"),
            ("openat", "ENOTDIR"), ("readlink", "ENOENT"), ("newfstatat", "ENOENT"), ("linkat", "EPERM"),
            ("mkdir", "EACCES")} <= pairs
    programs = {s.program.split()[0] for s in REAL_THIRTYSECOND}
    assert {"cpio", "rsync", "gzip", "cp", "sed", "awk", "mv", "link", "sha256sum", "python3", "sh",
            "mkdir"} <= programs
    assert 10 <= len(REAL_THIRTYSECOND) <= 14 and 6 <= len(QUIET_THIRTYSECOND) <= 8
    assert all(s.name.startswith("t32_") for s in REAL_THIRTYSECOND) and all(
        c.name.startswith("t32_") for c in QUIET_THIRTYSECOND)
    assert names >= BENCH_ONLY and {c.name for c in QUIET_THIRTYSECOND} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= {c.name for c in QUIET_THIRTYSECOND}
    assert FLAKY_QUIET.keys() <= names | {c.name for c in QUIET_THIRTYSECOND}
    assert FLAKY_MISSES.keys() <= names and not FLAKY_MISSES.keys() & KNOWN_MISSES.keys()


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, thirtysecond_recorder, tmp_path):
    sc = next(s for s in REAL_THIRTYSECOND if s.name == name)
    try:
        check_fault_case(sc, thirtysecond_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    except AssertionError as err:
        if name in FLAKY_MISSES and "expected" in str(err):
            pytest.xfail(f"{err}: {FLAKY_MISSES[name]}")
        raise


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_tool_noise_is_quiet(name, thirtysecond_recorder, tmp_path):
    case = next(c for c in QUIET_THIRTYSECOND if c.name == name)
    check_noise_case(case, thirtysecond_recorder, tmp_path, QUIET, FLAKY_QUIET)

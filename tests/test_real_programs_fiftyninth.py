"""Fifty-ninth set of real programs, recorded for real (root + bcc): **the runtime environment a
program loads before doing its work** -- od with an LD_PRELOAD shim that is gone (ENOENT), file with a
stale LD_LIBRARY_PATH entry shadowing libmagic with a truncated copy (an openat that succeeds where the
good runs' failed), clear with a TERMINFO lacking TERM's entry (access ENOENT), expr under a LOCPATH
locale that is not there (ENOENT), zdump with a TZDIR missing the zone (ENOENT), pr as nobody with an
unreadable TZ file (EACCES), preconv with a GCONV_PATH module gone (ENOENT), getent under an
nsswitch.conf naming a module not installed (ENOENT) and gettext with a TEXTDOMAINDIR missing the
catalog (ENOENT) -- amid noise cases: the same programs in good runs alone, with other inputs, users,
temp names and job ids.

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
    xfail_param,
)
from scenarios.real_fiftyninth import QUIET_FIFTYNINTH, REAL_FIFTYNINTH, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "od", "file", "clear", "expr", "zdump", "pr", "preconv", "getent", "gettext", "msgfmt", "iconv",
         "mktemp", "mv", "cat", "unshare", "mount", "setpriv")
SCRIPTS = ("sh", "python3")
LIBS = ("/usr/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libmagic.so.1",
        "/usr/lib/x86_64-linux-gnu/gconv/IBM1047.so", "/usr/lib/locale/C.utf8/LC_CTYPE",
        "/usr/share/zoneinfo/Europe/Paris", "/usr/share/zoneinfo/Asia/Tokyo")


fiftyninth_recorder = set_recorder("fiftyninth_recorder", "fifty-ninth set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    import os

    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None] + [p for p in LIBS if not os.path.exists(p)]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: coreutils file ncurses-bin libc-bin groff-base "
                    "gettext-base gettext tzdata libmagic1 zlib1g util-linux mount)")


def test_the_set_is_new_and_covers_the_loaded_runtime_environment():
    names = {s.name for s in REAL_FIFTYNINTH}
    quiet = {c.name for c in QUIET_FIFTYNINTH}
    assert_set_is_new("real_fiftyninth")
    assert_no_program_repeats("real_fiftyninth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_FIFTYNINTH for p in s.expect_probe}
    assert {("openat", "ENOENT"), ("openat", "EACCES"), ("access", "ENOENT"), ("openat", None)} <= pairs
    assert 8 <= len(REAL_FIFTYNINTH) <= 14 and 4 <= len(QUIET_FIFTYNINTH) <= 6
    programs = [s.program.split()[0] for s in REAL_FIFTYNINTH if not s.program.startswith(SCRIPTS)]
    assert len(set(programs)) == len(programs)  # one case a program
    assert all(n.startswith("t59_") for n in names | quiet)
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_FIFTYNINTH])
def test_a_runtime_lookup_gone_wrong_is_named_and_good_runs_are_quiet(name, fiftyninth_recorder, tmp_path):
    sc = next(s for s in REAL_FIFTYNINTH if s.name == name)
    try:
        check_fault_case(sc, fiftyninth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_FIFTYNINTH])
def test_runtime_environments_with_other_noise_are_quiet(name, fiftyninth_recorder, tmp_path):
    case = next(c for c in QUIET_FIFTYNINTH if c.name == name)
    try:
        check_noise_case(case, fiftyninth_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()

"""A fiftieth set of real programs with one real fault each (tests/scenarios/real_fiftieth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: the launch files of a multi-node training
job built on the head node by its launcher script -- the allocation joined with the inventory,
memory sizes made numeric, launch stages ordered, NCCL settings pulled from YAML, the rendezvous
store checked over bash's /dev/tcp, agents' GPU reports merged, the rank table shown, the MPI
rankfile and the hostfile written, the launcher's lock taken, the per-rank environment rendered --
with good runs over allocations of other sizes and node names, amid noise cases of such good runs
alone.

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
from scenarios.real_fiftieth import QUIET_FIFTIETH, REAL_FIFTIETH, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "bash", "join", "numfmt", "tsort", "yq", "jq", "column", "awk", "sort", "tee", "mkdir", "ls", "wc",
         "rm", "m4", "setpriv", "mount")
SCRIPTS = ("sh", "python3")


fiftieth_recorder = set_recorder("fiftieth_recorder", "fiftieth set of real programs", OUTCOMES, QUIET,
                                 quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: coreutils bash yq jq bsdextrautils mawk m4 "
                    "util-linux)")


def test_the_set_is_new_and_covers_the_launch_files():
    names = {s.name for s in REAL_FIFTIETH}
    quiet = {c.name for c in QUIET_FIFTIETH}
    assert_set_is_new("real_fiftieth")
    assert_no_program_repeats("real_fiftieth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_FIFTIETH for p in s.expect_probe}
    assert {("connect", "ECONNREFUSED"), ("openat", "EACCES"), ("openat", "ENOENT"), ("write", "EFBIG"),
            ("openat", "EROFS"), ("mkdir", "EEXIST"), ("write", "ENOSPC"), ("write", None)} <= pairs
    assert 10 <= len(REAL_FIFTIETH) <= 12 and 6 <= len(QUIET_FIFTIETH) <= 8
    assert all(n.startswith("t50_") for n in names | quiet)
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_FIFTIETH])
def test_fault_is_named_and_good_runs_are_quiet(name, fiftieth_recorder, tmp_path):
    sc = next(s for s in REAL_FIFTIETH if s.name == name)
    try:
        check_fault_case(sc, fiftieth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_FIFTIETH])
def test_launch_noise_is_quiet(name, fiftieth_recorder, tmp_path):
    case = next(c for c in QUIET_FIFTIETH if c.name == name)
    try:
        check_noise_case(case, fiftieth_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()


def test_nothing_is_left_mounted(fiftieth_recorder):
    """The set's cases leave no mount under the session's root (the tmpfs, the read-only bind mount)
    and no store listening."""
    quiet_teardown()
    assert not mounts_under(ROOT)

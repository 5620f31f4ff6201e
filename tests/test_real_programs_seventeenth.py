"""A seventeenth set of real programs with one real fault each (tests/scenarios/real_seventeenth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: the job's software environment -- a
bundle's missing ELF interpreter (execve ENOENT), an RPATH $ORIGIN directory moved, a stale
private ld.so.cache, an LD_PRELOAD shim root-only (EACCES), a symbol version too old (ld.so's
message), a library on a noexec mount (mmap EPERM), an LD_LIBRARY_PATH entry that is a file
(ENOTDIR), a plugin's undefined symbol (the message), a .pth naming a missing vendor directory,
a package directory root-only, a stale PYTHONHOME, an uninstalled module's PATH entry, a
dangling CA bundle symlink and a root-only fontconfig drop-in (access EACCES). The good-vs-good
noise cases (search orders of LD_LIBRARY_PATH, PATH and PYTHONPATH, stale .pth entries, private
ld.so.cache contents, fontconfig drop-ins, a missing locale) must be quiet.

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import os
import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_seventeenth import (
    BENCH_ONLY,
    LOADER,
    QUIET_BENCH_ONLY,
    QUIET_SEVENTEENTH,
    REAL_SEVENTEENTH,
    SYSTEM_BUNDLE,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_SEVENTEENTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_SEVENTEENTH if c.name not in QUIET_BENCH_ONLY]


seventeenth_recorder = set_recorder("seventeenth_recorder", "seventeenth set of real programs", OUTCOMES, QUIET,
                                    quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in ("gcc", "unshare", "ldconfig", "fc-match", "mount") if shutil.which(t) is None
               and not os.path.exists(f"/usr/sbin/{t}")]
    missing += [f for f in (LOADER, SYSTEM_BUNDLE, "/var/cache/ldconfig") if not os.path.exists(f)]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)}")
    if os.uname().machine != "x86_64":
        pytest.skip("the set's bundle carries x86_64's loader")


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_SEVENTEENTH}
    assert_set_is_new("real_seventeenth")
    assert_no_program_repeats("real_seventeenth", scripts=("python3", "sh", "unshare"))
    # the set's territory is mechanisms (loader, imports, search paths), not new (call, errno)
    # pairs: what it must cover is each kind of call the environment fails with, and no earlier
    # set may already have a fault of the same kind at the same mechanism (its description)
    pairs = {(p, s.expect_errno) for s in REAL_SEVENTEENTH for p in s.expect_probe}
    assert {("execve", "ENOENT"), ("openat", "ENOENT"), ("openat", "EACCES"), ("openat", "ENOTDIR"),
            ("mmap", "EPERM"), ("newfstatat", "ENOENT"), ("newfstatat", "EACCES"), ("access", "EACCES"),
            ("writev", None), ("write", None)} <= pairs
    earlier = {s.description for e in earlier_sets("real_seventeenth") for s in e.faults}
    assert not earlier & {s.description for s in REAL_SEVENTEENTH}
    assert len(REAL_SEVENTEENTH) >= 14 and len(QUIET_SEVENTEENTH) >= 7
    assert names >= BENCH_ONLY and {c.name for c in QUIET_SEVENTEENTH} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {
        c.name for c in QUIET_SEVENTEENTH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, seventeenth_recorder, tmp_path):
    sc = next(s for s in REAL_SEVENTEENTH if s.name == name)
    check_fault_case(sc, seventeenth_recorder, tmp_path, OUTCOMES, QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_run_to_run_noise_is_quiet(name, seventeenth_recorder, tmp_path):
    case = next(c for c in QUIET_SEVENTEENTH if c.name == name)
    check_noise_case(case, seventeenth_recorder, tmp_path, QUIET, FLAKY_QUIET)

"""A twenty-seventh set of real programs with one real fault each (tests/scenarios/real_twentyseventh.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: scripting runtimes, interpreters and data
tools no earlier set ran -- prove (a read-only state volume; a lowered nofile limit), pod2man
(a man section that is a file), python3 -m compileall -j 4 (as the job, a root-owned
subpackage), python3 -m zipapp (as the job, an archive root rewrote: chmod EPERM), xgettext (a listed source
deleted), msgcat (a shared catalogue looping), gencat (as the job, a root-owned nls directory),
bc (a function library not shipped), jar (a full output volume), bzip2recover (a left-over
block), iconvconfig (a read-only cache volume), localedef (a full volume, exit 0) -- and two C
programs of the set's own (threads pwrite()ing shards past a file-size limit, threads moving
segments into place with renameat2 over a left-over one), amid compileall's worker processes,
prove's parallel perl children, a JVM's threads, mkstemp names and thread order.

The programs are compiled once per test process (cc: `real_twentyseventh.build`). The table of
outcomes is printed at the end of the module.
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_twentyseventh import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_TWENTYSEVENTH,
    REAL_TWENTYSEVENTH,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# compileall -j 4's workers race to make each __pycache__ (py_compile's makedirs, EEXIST caught):
# named ~1 good run in 6 as the set was written (FLAKY_QUIET); an EEXIST on a directory the run
# made before is that directory now (rules.files._made_earlier_in_run, tests/test_diff_mkdir_races.py)
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_TWENTYSEVENTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_TWENTYSEVENTH if c.name not in QUIET_BENCH_ONLY]
TOOLS = ("prove", "perl", "pod2man", "python3", "xgettext", "msgcat", "gencat", "bc", "jar", "bzip2recover",
         "iconvconfig", "localedef", "cc", "mount", "setpriv")
SCRIPTS = ("python3", "sh")  # runners of a module or a script: the module is the program


twentyseventh_recorder = set_recorder("twentyseventh_recorder", "twenty-seventh set of real programs", OUTCOMES,
                                      QUIET, quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in TOOLS if shutil.which(t, path="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin") is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: perl python3 python3-venv gettext libc-bin bc "
                    "default-jdk-headless bzip2 locales gcc)")


def test_the_set_is_new_and_covers_the_tools():
    names = {s.name for s in REAL_TWENTYSEVENTH}
    assert_set_is_new("real_twentyseventh")
    assert_no_program_repeats("real_twentyseventh", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_TWENTYSEVENTH for p in s.expect_probe}
    assert {("openat", "EROFS"), ("pipe2", "EMFILE"), ("openat", "ENOTDIR"), ("mkdir", "EACCES"),
            ("chmod", "EPERM"), ("openat", "ENOENT"), ("openat", "ELOOP"), ("creat", "EACCES"),
            ("sendfile", "ENOSPC"), ("openat", "EEXIST"), ("writev", "ENOSPC"), ("pwrite64", "EFBIG"),
            ("renameat2", "EEXIST")} <= pairs
    programs = {s.program.split()[0] for s in REAL_TWENTYSEVENTH}
    assert {"prove", "pod2man", "xgettext", "msgcat", "gencat", "bc", "jar", "bzip2recover", "iconvconfig",
            "localedef", "tb27-shard", "tb27-kv"} <= programs
    modules = {" ".join(s.program.split()[:3]) for s in REAL_TWENTYSEVENTH if s.program.startswith("python3 -m")}
    assert modules == {"python3 -m compileall", "python3 -m zipapp"}
    earlier_programs = {s.program.split()[0] for e in earlier_sets("real_twentyseventh") for s in e.faults}
    new = programs - set(SCRIPTS)
    assert not earlier_programs & new, f"programs an earlier set ran: {sorted(earlier_programs & new)}"
    earlier_modules = {" ".join(s.program.split()[:3]) for e in earlier_sets("real_twentyseventh") for s in e.faults
                       if s.program.startswith("python3 -m")}
    assert not earlier_modules & modules, f"modules an earlier set ran: {sorted(earlier_modules & modules)}"
    earlier = {s.description for e in earlier_sets("real_twentyseventh") for s in e.faults}
    assert not earlier & {s.description for s in REAL_TWENTYSEVENTH}
    assert len(REAL_TWENTYSEVENTH) >= 15 and len(QUIET_TWENTYSEVENTH) >= 8
    assert all(s.name.startswith("t27_") for s in REAL_TWENTYSEVENTH) and all(
        c.name.startswith("t27_") for c in QUIET_TWENTYSEVENTH)
    assert names >= BENCH_ONLY and {c.name for c in QUIET_TWENTYSEVENTH} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= {c.name for c in QUIET_TWENTYSEVENTH}
    assert FLAKY_QUIET.keys() <= names | {c.name for c in QUIET_TWENTYSEVENTH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, twentyseventh_recorder, tmp_path):
    sc = next(s for s in REAL_TWENTYSEVENTH if s.name == name)
    check_fault_case(sc, twentyseventh_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_tool_noise_is_quiet(name, twentyseventh_recorder, tmp_path):
    case = next(c for c in QUIET_TWENTYSEVENTH if c.name == name)
    check_noise_case(case, twentyseventh_recorder, tmp_path, QUIET, FLAKY_QUIET)

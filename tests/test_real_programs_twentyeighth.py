"""A twenty-eighth set of real programs with one real fault each (tests/scenarios/real_twentyeighth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: services and clients over local IPC and
loopback, and backup, restore and maintenance jobs no earlier set ran -- PostgreSQL's clients
of a running server: pg_dump -Fd -j 2 (a dump directory left over), pg_dumpall (a full backup
volume), pg_restore -j 2 (a backup without a data file), psql (a crashed server's socket file),
vacuumdb -j 4 (a lowered nofile limit); pg_ctl start/stop as the service (a root-owned socket
directory); dbus-run-session (a run directory not made), ssh-agent (a stale agent socket),
run-parts (a script's interpreter gone), savelog (a full log volume, exit 0), e2fsck (an image
on a read-only volume), e2image (a full volume), debugfs rdump (a restore directory left over)
-- and two C programs of the set's own (a preforking loopback server whose port a stale server
holds, a threaded sync whose staging directory is on another volume), amid parallel dump and
restore workers, a WAL-streaming child, a postmaster's children, bus and agent daemons, forked
workers taking connections in any order and mkstemp names.

The programs are compiled and the template cluster made once per test process
(`real_twentyeighth.build`). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_twentyeighth import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_TWENTYEIGHTH,
    REAL_TWENTYEIGHTH,
    pg_bin,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# pg_ctl stop -m fast SIGTERMs the backend of the run's psql; when that backend has not yet read
# psql's Terminate message (psql exited a few ms before), it writes its FATAL "terminating
# connection due to administrator command" to the closed client socket: sendto EPIPE (no path),
# in that good run only. Seen in 1 of 6 `-k pg_ctl_service_life` sessions and in 1 of 4 full
# runs (then in the fault case, which stops in smart mode since): a timing race of good runs.
FLAKY_QUIET: dict[str, str] = {
    "t28_pg_ctl_service_life": "fast shutdown SIGTERMs a backend before it reads its client's Terminate: the "
                               "backend's sendto of its FATAL to the closed socket fails EPIPE in some good runs",
    # (once in CI 48, none in the five CIs before it)
    "t28_pg_basebackup_wal_streamer": "a client's last message on the server's socket races the server closing "
                                      "it at the backup's end: sendto EPIPE on .s.PGSQL.5432 in some good runs",
}
TESTED = [s for s in REAL_TWENTYEIGHTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_TWENTYEIGHTH if c.name not in QUIET_BENCH_ONLY]
TOOLS = ("dbus-run-session", "dbus-send", "dbus-daemon", "ssh-agent", "ssh-add", "ssh-keygen", "run-parts", "savelog",
         "gzip", "e2fsck", "e2image", "debugfs", "mke2fs", "cc", "mount", "setpriv", "python3")
PG_TOOLS = ("initdb", "postgres", "pg_ctl", "pg_isready", "psql", "pg_dump", "pg_dumpall", "pg_restore", "vacuumdb",
            "pg_basebackup")
SCRIPTS = ("python3", "sh")  # runners of a module or a script: the module is the program


twentyeighth_recorder = set_recorder("twentyeighth_recorder", "twenty-eighth set of real programs", OUTCOMES,
                                     QUIET, quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in TOOLS if shutil.which(t, path="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin") is None]
    missing += [t for t in PG_TOOLS if shutil.which(pg_bin(t)) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: postgresql dbus-bin dbus-daemon openssh-client "
                    "debianutils e2fsprogs gcc)")


def test_the_set_is_new_and_covers_the_tools():
    names = {s.name for s in REAL_TWENTYEIGHTH}
    assert_set_is_new("real_twentyeighth")
    assert_no_program_repeats("real_twentyeighth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_TWENTYEIGHTH for p in s.expect_probe}
    assert {("mkdir", "EEXIST"), ("write", "ENOSPC"), ("newfstatat", "ENOENT"), ("connect", "ECONNREFUSED"),
            ("socket", "EMFILE"), ("openat", "EACCES"), ("bind", "ENOENT"), ("bind", "EADDRINUSE"),
            ("execve", "ENOENT"), ("openat", "EROFS"), ("rename", "EXDEV")} <= pairs
    programs = {s.program.split()[0] for s in REAL_TWENTYEIGHTH}
    assert {"pg_dump", "pg_dumpall", "pg_restore", "psql", "vacuumdb", "pg_ctl", "dbus-run-session", "ssh-agent",
            "run-parts", "savelog", "e2fsck", "e2image", "debugfs", "tb28-prefork", "tb28-syncd"} <= programs
    earlier_programs = {s.program.split()[0] for e in earlier_sets("real_twentyeighth") for s in e.faults}
    new = programs - set(SCRIPTS)
    assert not earlier_programs & new, f"programs an earlier set ran: {sorted(earlier_programs & new)}"
    earlier = {s.description for e in earlier_sets("real_twentyeighth") for s in e.faults}
    assert not earlier & {s.description for s in REAL_TWENTYEIGHTH}
    assert len(REAL_TWENTYEIGHTH) >= 15 and len(QUIET_TWENTYEIGHTH) >= 8
    assert all(s.name.startswith("t28_") for s in REAL_TWENTYEIGHTH) and all(
        c.name.startswith("t28_") for c in QUIET_TWENTYEIGHTH)
    assert names >= BENCH_ONLY and {c.name for c in QUIET_TWENTYEIGHTH} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= {c.name for c in QUIET_TWENTYEIGHTH}
    assert FLAKY_QUIET.keys() <= names | {c.name for c in QUIET_TWENTYEIGHTH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, twentyeighth_recorder, tmp_path):
    sc = next(s for s in REAL_TWENTYEIGHTH if s.name == name)
    check_fault_case(sc, twentyeighth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_tool_noise_is_quiet(name, twentyeighth_recorder, tmp_path):
    case = next(c for c in QUIET_TWENTYEIGHTH if c.name == name)
    check_noise_case(case, twentyeighth_recorder, tmp_path, QUIET, FLAKY_QUIET)

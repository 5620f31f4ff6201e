"""Sixty-fifth set of real programs, recorded for real (root + bcc): retries, backoff and transient
faults -- programs that try again and, in the bad run, give up because the fault persists through
every try: curl --retry against an agent path taken by a datagram socket (connect EPROTOTYPE),
wget --tries against a server resetting every connection (recvfrom ECONNRESET), socat's
UNIX-CONNECT retry with the socket never created (connect ENOENT), the set's own C program
retrying a held fcntl lock (EAGAIN), a FIFO without reader (openat ENXIO) and a read under an
alarm without a writer (read ERESTARTSYS), its python3 script retrying a rename over a mount point
(EBUSY), and a job script's mkdir lock loop under timeout (mkdir EEXIST). Good runs that differ in
how many tries they needed -- one met a transient refusal and recovered, the others needed none
-- must be quiet; the transient faults are made deterministic by a helper that removes the fault
only once it sees the program in its backoff (polled in /proc, never a guessed sleep).

Written blind: every expectation is the call strace -f shows for the bad run (the first failing
try: every later try fails the same way). The table of outcomes is printed at the end of the
module.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from scenarios import sets
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_sixtyfifth import QUIET_SIXTYFIFTH, REAL_SIXTYFIFTH, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
# (found by this set, all three fixed since: curl's refused connect and its one-byte-written
# "Will retry" message between the attempts, wget's reset connection tried again, a shell's
# `until mkdir lockd` whose attempts are processes of their own -- rules.retries)
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "curl", "wget", "socat", "flock", "sqlite3", "timeout", "mount", "gcc", "python3")
SCRIPTS = ("sh", "python3")


sixtyfifth_recorder = set_recorder("sixtyfifth_recorder", "sixty-fifth set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


def _host_lacks() -> str | None:
    """Why this host cannot run the cases (None: it can)."""
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        return f"the set needs {', '.join(missing)} (apt: curl wget socat util-linux sqlite3 coreutils gcc python3)"
    # the helpers see a program's backoff in /proc/PID/syscall (CONFIG_HAVE_ARCH_TRACEHOOK)
    with subprocess.Popen(["/usr/bin/sleep", "30"]) as proc:
        try:
            for _ in range(20000):
                with open(f"/proc/{proc.pid}/syscall") as f:
                    nr = f.read().split()[0]
                if nr in ("35", "230"):
                    break
            else:
                return "/proc/PID/syscall never shows a sleeping process in nanosleep here"
        except (OSError, IndexError):
            return "this kernel has no /proc/PID/syscall"
        finally:
            proc.kill()
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SIXTYFIFTH}
    quiet = {c.name for c in QUIET_SIXTYFIFTH}
    if not any(s.module == "real_sixtyfifth" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_sixtyfifth", REAL_SIXTYFIFTH,
                                                                    QUIET_SIXTYFIFTH, quiet_teardown)])
    assert_set_is_new("real_sixtyfifth")
    assert_no_program_repeats("real_sixtyfifth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_SIXTYFIFTH for p in s.expect_probe}
    assert {("connect", "EPROTOTYPE"), ("recvfrom", "ECONNRESET"), ("connect", "ENOENT"), ("fcntl", "EAGAIN"),
            ("openat", "ENXIO"), ("read", "ERESTARTSYS"), ("rename", "EBUSY"), ("mkdir", "EEXIST")} <= pairs
    assert 8 <= len(REAL_SIXTYFIFTH) <= 10 and 5 <= len(QUIET_SIXTYFIFTH) <= 7
    # one fault a (program, errno); the set's own C program has three modes, three errnos
    faults = [(s.program.split()[0], s.expect_errno) for s in REAL_SIXTYFIFTH]
    assert len(set(faults)) == len(faults)
    assert all(n.startswith("t65_") for n in names | quiet)
    # the helpers find the recorded program by the case's directory on its command line (wget's
    # server needs none: it resets or serves each connection as it comes)
    assert all("/x/" in " ".join(s.argv(Path("/x"))) for s in REAL_SIXTYFIFTH if not s.name.startswith("t65_wget"))
    assert all("/x/" in " ".join(c.argv(Path("/x"))) for c in QUIET_SIXTYFIFTH)
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SIXTYFIFTH])
def test_a_fault_that_outlasts_every_retry_is_named(name, sixtyfifth_recorder, tmp_path):
    sc = next(s for s in REAL_SIXTYFIFTH if s.name == name)
    try:
        check_fault_case(sc, sixtyfifth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SIXTYFIFTH])
def test_good_runs_that_needed_more_tries_are_quiet(name, sixtyfifth_recorder, tmp_path):
    case = next(c for c in QUIET_SIXTYFIFTH if c.name == name)
    try:
        check_noise_case(case, sixtyfifth_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()

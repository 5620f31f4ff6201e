"""Fifty-fourth set of real programs, recorded for real (root + bcc): **the fault is in a worker,
not in the main thread** -- xargs -P4 gzip with one node's shard directory read-only, make -j4 with
one recipe's mkdir meeting a stale file, xz -T4 and pigz -p4 over several inputs, find -exec cp {} +
into a staging tmpfs too small for one input, split --filter with one filter's output a directory,
a bash script's background md5sum jobs, python3 ThreadPoolExecutor and multiprocessing.Pool workers
(one output a directory, one input unreadable, one group over the descriptor limit), a pipefail
pipeline whose middle stage (iconv) fails, xargs -P4 gzip -t with one archive cut short -- amid noise
cases: the same parallel work in good runs alone, whichever worker takes which item.

Written blind: every expectation is the call strace -f shows for the bad run. The table of outcomes
is printed at the end of the module.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scenarios.harness import (
    ROOT,
    Outcome,
    check_fault_case,
    check_noise_case,
    mounts_under,
    xfail_param,
)
from scenarios.real_fiftyfourth import QUIET_FIFTYFOURTH, REAL_FIFTYFOURTH, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "bash", "xargs", "gzip", "make", "sort", "mkdir", "xz", "pigz", "find", "cp", "split", "md5sum",
         "cat", "iconv", "printf", "setpriv", "mount", "umount")
SCRIPTS = ("sh", "bash", "python3")


fiftyfourth_recorder = set_recorder("fiftyfourth_recorder", "fifty-fourth set of real programs", OUTCOMES, QUIET,
                                    quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if not Path("/usr/bin/python3").exists():
        missing.append("/usr/bin/python3")
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: coreutils findutils gzip make xz-utils pigz "
                    "libc-bin util-linux python3)")


def test_the_set_is_new_and_covers_faults_in_workers():
    names = {s.name for s in REAL_FIFTYFOURTH}
    quiet = {c.name for c in QUIET_FIFTYFOURTH}
    assert_set_is_new("real_fiftyfourth")
    assert_no_program_repeats("real_fiftyfourth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_FIFTYFOURTH for p in s.expect_probe}
    assert {("openat", "EROFS"), ("mkdir", "EEXIST"), ("lstat", "ENOENT"), ("write", "ENOSPC"),
            ("openat", "EISDIR"), ("read", "EISDIR"), ("openat", "EACCES"), ("openat", "EMFILE"),
            ("write", None)} <= pairs
    assert 10 <= len(REAL_FIFTYFOURTH) <= 13 and 6 <= len(QUIET_FIFTYFOURTH) <= 8
    assert all(n.startswith("t54_") for n in names | quiet)
    assert 1 <= sum(s.expect_errno is None for s in REAL_FIFTYFOURTH) <= 3  # no call fails, the exit changes
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_FIFTYFOURTH])
def test_fault_in_a_worker_is_named_and_good_runs_are_quiet(name, fiftyfourth_recorder, tmp_path):
    sc = next(s for s in REAL_FIFTYFOURTH if s.name == name)
    try:
        check_fault_case(sc, fiftyfourth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()
    check_worker(sc, OUTCOMES[-1])


def check_worker(sc, outcome: Outcome) -> None:
    """The named event is the worker's (the process strace -f shows failing, not the main program's
    or a sibling's; a pool's thread, not the main thread, when strace shows a thread failing), and
    for a fault without a failing call it leads to the worker's message."""
    bif = outcome.detail["bifurcation"]
    assert bif["process"]["comm"] == sc.extra["worker"], (
        f"{sc.name}: the bifurcation is {bif['process']}'s, the fault is in a {sc.extra['worker']} worker")
    if sc.extra["thread"]:
        assert bif["process"]["tid"] != bif["process"]["pid"], (
            f"{sc.name}: the bifurcation is {bif['process']}'s, the fault is in a worker thread")
    if sc.extra["message"] is not None:
        assert sc.extra["message"] in (bif.get("then_wrote") or ""), (
            f"{sc.name}: the named write leads to {bif.get('then_wrote')!r}, not the worker's message")


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_FIFTYFOURTH])
def test_parallel_scheduling_is_quiet(name, fiftyfourth_recorder, tmp_path):
    case = next(c for c in QUIET_FIFTYFOURTH if c.name == name)
    try:
        check_noise_case(case, fiftyfourth_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()


def test_nothing_is_left_mounted(fiftyfourth_recorder):
    """The set's cases leave no mount under the session's root (the read-only bind mounts of a node's
    directory, the staging tmpfs)."""
    quiet_teardown()
    assert not mounts_under(ROOT)

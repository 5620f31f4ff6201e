"""Fifty-fifth set of real programs, recorded for real (root + bcc): **scale and length -- the fault
deep inside a long run** -- wc --files0-from over 2,000 records as nobody with the 1,800th unreadable,
md5sum over 2,800 records with the 2,501st a directory, rsync -rL of 30 shards with one latest link
pointing at itself, gzip -r of 30 days of logs with one log a symlink, bzip2 -k of 25 days with one
log a dangling symlink to cold storage, sha256sum of 3,000 records
into a tmpfs that fills near the end, sqlite3 loading 4,600 rows past ulimit -f, rm -rf of 30 days
with day-27 read-only, tee to 1,100 subscribers under ulimit -n 1024, touch of 3,000 stamps with one
name too long, cpio -pdm of 30 shards with the destination's d27 read-only, a spilling sort of 150
inputs with the 141st a socket, a python3 hard-link snapshot of 5,000 files with one shard a bind
mount -- amid noise cases: the same long walks in good runs alone, over trees and lists of other
sizes.

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
from scenarios.real_fiftyfifth import QUIET_FIFTYFIFTH, REAL_FIFTYFIFTH, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "bash", "wc", "xargs", "md5sum", "rsync", "gzip", "bzip2", "sha256sum", "sqlite3", "rm", "tee", "cat", "touch",
         "find", "sort", "cpio", "setpriv", "mount", "umount")
SCRIPTS = ("sh", "bash", "python3")
MIN_EVENTS = 4000  # calls of a bad run at least
MIN_BEFORE = 1000  # calls of the bad run before its fault at least


fiftyfifth_recorder = set_recorder("fiftyfifth_recorder", "fifty-fifth set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if not Path("/usr/bin/python3").exists():
        missing.append("/usr/bin/python3")
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: coreutils findutils gzip bzip2 rsync sqlite3 cpio "
                    "util-linux python3)")


def test_the_set_is_new_and_covers_late_faults_in_long_runs():
    names = {s.name for s in REAL_FIFTYFIFTH}
    quiet = {c.name for c in QUIET_FIFTYFIFTH}
    assert_set_is_new("real_fiftyfifth")
    assert_no_program_repeats("real_fiftyfifth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_FIFTYFIFTH for p in s.expect_probe}
    assert {("openat", "EACCES"), ("read", "EISDIR"), ("newfstatat", "ELOOP"), ("openat", "ELOOP"), ("openat", "ENOENT"),
            ("write", "ENOSPC"), ("pwrite64", "EFBIG"), ("unlinkat", "EROFS"), ("openat", "EMFILE"),
            ("openat", "ENAMETOOLONG"), ("chown", "EROFS"), ("openat", "ENXIO"), ("link", "EXDEV")} <= pairs
    assert 10 <= len(REAL_FIFTYFIFTH) <= 13 and 6 <= len(QUIET_FIFTYFIFTH) <= 8
    assert all(n.startswith("t55_") for n in names | quiet)
    assert all(s.expect_errno is not None for s in REAL_FIFTYFIFTH)  # every fault is a failing call
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_FIFTYFIFTH])
def test_late_fault_in_a_long_run_is_named_and_good_runs_are_quiet(name, fiftyfifth_recorder, tmp_path):
    sc = next(s for s in REAL_FIFTYFIFTH if s.name == name)
    try:
        check_fault_case(sc, fiftyfifth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()
    check_deep_in_a_long_run(sc, tmp_path)


def check_deep_in_a_long_run(sc, out_dir: Path) -> None:
    """The set's premise, from the recordings alone: the bad run is long, its fault (the expected call)
    comes after at least MIN_BEFORE calls of the run, and the three good runs are of different lengths
    (other item counts: no position lines them up)."""
    import fnmatch

    import polars as pl

    from tracer.schema import read_events

    bad = read_events(out_dir / f"{sc.name}-bad.parquet").sort("seq")
    assert bad.height >= MIN_EVENTS, f"{sc.name}: the bad run made {bad.height} calls, not a long run"
    want = sc.expect_path(ROOT / sc.name)
    hits = bad.filter(pl.col("probe").is_in(list(sc.expect_probe)) & (pl.col("errno") == sc.expect_errno))
    seqs = [q for q, p in zip(hits["seq"].to_list(), hits["path"].to_list(), strict=True)
            if fnmatch.fnmatchcase(p or "", want)]
    assert seqs, f"{sc.name}: the fault's call is not in the bad recording"
    before = bad.filter(pl.col("seq") < min(seqs)).height
    assert before >= MIN_BEFORE, f"{sc.name}: only {before} calls before the fault, not deep in the run"
    lengths = {read_events(out_dir / f"{sc.name}-good{i}.parquet").height for i in range(3)}
    assert len(lengths) == 3, f"{sc.name}: good runs of the same length {lengths}"


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_FIFTYFIFTH])
def test_long_walks_of_other_lengths_are_quiet(name, fiftyfifth_recorder, tmp_path):
    case = next(c for c in QUIET_FIFTYFIFTH if c.name == name)
    try:
        check_noise_case(case, fiftyfifth_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()


def test_nothing_is_left_mounted(fiftyfifth_recorder):
    """The set's cases leave no mount under the session's root (the read-only bind mounts of a day's
    spool and a shard's destination, the sums tmpfs, the snapshot's bind-mounted shard)."""
    quiet_teardown()
    assert not mounts_under(ROOT)

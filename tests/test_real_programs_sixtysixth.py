"""Sixty-sixth set of real programs, recorded for real (root + bcc): idempotent and incremental
steps, cold and warm -- deploy and build steps whose good runs differ because some found the work
already done (mkdir -p, rm -f, cp -u, rsync, make, ln -sfn, tar --skip-old-files, a python3 cache
directory). Each noise case records two cold and two warm good runs and diffs both ways: the warm
run against the cold ones and the cold run against the warm ones, both quiet. Each fault case is
the same kind of step with the warm state wrong (a regular file where the directory should be, a
symlink loop in the way, a stale lock still held), diffed against a cold and a warm good run.

Written blind: every expectation is the first failing call strace -f shows for the bad run. The
table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scenarios import sets
from scenarios.harness import (
    ROOT,
    Outcome,
    check_fault_case,
    fresh_dir,
    quiet_outcome,
    record_run,
    xfail_param,
)
from scenarios.real_sixtysixth import (
    COLD_RUNS,
    QUIET_SIXTYSIXTH,
    REAL_SIXTYSIXTH,
    RUNS,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {
    "t66_python_makedirs_cache_is_a_file":
        "strace -f: makedirs' existence check newfstatat(cache/v1) fails ENOTDIR first (the cold good run's fails "
        "ENOENT, the warm one's succeeds), then mkdir(cache/v1) ENOTDIR; the diff names the later mkdir ENOTDIR "
        "cache/v1 (right path and errno, not the first departing call)",
}
# Keyed "<case>/<direction>": warm_vs_cold, the warm run against the two cold ones; cold_vs_warm, a
# cold run against the two warm ones; warm_vs_mixed / cold_vs_mixed, the last warm or cold run
# against one cold and one warm good run. Every miss is a call whose outcome the goods never had
# (strace -f of the runs shows both outcomes are the program's ordinary cold and warm path).
# (Lead's note: the docs name such a run on purpose -- docs/benchmarks.md, "the goods cold and the
# third run warm ... is a resumed run, another input, and it was left as named"; architecture.md,
# an idempotent mkdir's EEXIST "on a directory there before the run ... stays an error": a bad run
# that met another run's leftovers is evidence. Once good runs of both kinds are given, the mixed
# pairings below, every case is quiet. Kept as strict xfails: the limitation, measured.)
# A pairing whose quiet outcome depends on timing (an xfail when it happens, never asserted):
# rsync's processes talk over a socketpair, and how its writes there are split varies run to run
# (CI 137: the cold run against a cold and a warm one named "write socketpair:").
FLAKY_QUIET: dict[str, str] = {
    f"t66_rsync_full_transfer_or_nothing_to_do/{d}": "rsync's socketpair writes split by timing"
    for d in ("warm_vs_mixed", "cold_vs_mixed")
}
QUIET_MISSES: dict[str, str] = {
    "t66_mkdir_parents_tree_exists_or_not/warm_vs_cold":
        "strace: the warm mkdir -p gets mkdir EEXIST on srv, srv/app, ... (then stats each: a directory, exit 0); "
        "the diff named mkdir EEXIST srv",
    "t66_mkdir_parents_tree_exists_or_not/cold_vs_warm":
        "strace: the cold mkdir -p makes srv, srv/app, ... (mkdir = 0); the diff named mkdir (no errno) srv",
    "t66_rm_force_files_present_or_gone/warm_vs_cold":
        "strace: rm -f of files already gone gets newfstatat ENOENT and unlinkat ENOENT, forgiven, exit 0; the "
        "diff named newfstatat ENOENT run/app.pid",
    "t66_cp_update_copy_missing_or_current/warm_vs_cold":
        "strace: with an up-to-date copy, cp -u's openat(deploy/app.conf, O_PATH|O_DIRECTORY) fails ENOTDIR (a file) "
        "where the cold runs' fails ENOENT, and nothing is written, exit 0; the diff named openat ENOTDIR "
        "deploy/app.conf",
    "t66_cp_update_copy_missing_or_current/cold_vs_warm":
        "strace: the cold cp -u creates the copy and tries ioctl(FICLONE) on it (EOPNOTSUPP, then copies by "
        "read/write), a call the warm runs never make; the diff named ioctl EOPNOTSUPP deploy/app.conf",
    "t66_rsync_full_transfer_or_nothing_to_do/warm_vs_cold":
        "strace: the warm rsync's quick check stats each destination file successfully and transfers nothing, "
        "exit 0; the diff named newfstatat (no errno) dst/app.conf",
    "t66_rsync_full_transfer_or_nothing_to_do/cold_vs_warm":
        "strace: the cold rsync's receiver stats dst/app.conf (ENOENT) and writes every file; the diff named a "
        "call of that transfer (newfstatat ENOENT dst/app.conf or openat ENOTDIR src/app.conf, run to run)",
    "t66_make_rebuild_or_nothing_to_be_done/warm_vs_cold":
        "strace: with every target up to date make stats out/app.conf successfully and runs no recipe, exit 0; "
        "the diff named stat (no errno) out/app.conf",
    "t66_make_rebuild_or_nothing_to_be_done/cold_vs_warm":
        "strace: the cold make runs mkdir -p out and two cp recipes (cp's ioctl FICLONE EOPNOTSUPP on the new "
        "copy); the diff named ioctl EOPNOTSUPP out/app.conf",
    "t66_ln_current_link_created_or_replaced/warm_vs_cold":
        "strace: ln -sfn over an existing link gets symlinkat EEXIST, then makes a temporary link and renames it "
        "over current, exit 0; the diff named symlinkat EEXIST app/current",
    "t66_ln_current_link_created_or_replaced/cold_vs_warm":
        "strace: the cold ln -sfn's symlinkat(app/current) succeeds at once; the diff named symlinkat (no errno) "
        "app/current",
    "t66_tar_skip_old_files_empty_or_extracted/warm_vs_cold":
        "strace: the warm tar --skip-old-files gets mkdirat EEXIST for each directory and openat(O_EXCL) EEXIST for "
        "each member, skipped, exit 0; the diff named mkdirat EEXIST out/share",
    "t66_tar_skip_old_files_empty_or_extracted/cold_vs_warm":
        "strace: the cold tar's mkdirat(out/share) succeeds and every member is written; the diff named mkdirat "
        "(no errno) out/share",
    "t66_python_makedirs_cache_cold_or_warm/warm_vs_cold":
        "strace: the warm os.makedirs(exist_ok=True) gets mkdir EEXIST on cache/v1/objects (then a stat: a "
        "directory), exit 0; the diff named mkdir EEXIST cache/v1/objects",
    "t66_python_makedirs_cache_cold_or_warm/cold_vs_warm":
        "strace: the cold makedirs climbs (newfstatat ENOENT cache/v1, cache) and makes three levels; the diff "
        "named newfstatat ENOENT cache/v1",
}
TOOLS = ("sh", "cp", "install", "ln", "touch", "flock", "mkdir", "rm", "rsync", "make", "tar", "python3")
SCRIPTS = ("sh", "python3")
DIRECTIONS = ("warm_vs_cold", "cold_vs_warm", "warm_vs_mixed", "cold_vs_mixed")

sixtysixth_recorder = set_recorder("sixtysixth_recorder", "sixty-sixth set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)

_RECORDED: dict[str, list[Path]] = {}  # a noise case -> its runs (cold ones first), recorded once for both directions


def _host_lacks() -> str | None:
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        return f"the set needs {', '.join(missing)} (apt: coreutils util-linux rsync make tar python3)"
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SIXTYSIXTH}
    quiet = {c.name for c in QUIET_SIXTYSIXTH}
    if not any(s.module == "real_sixtysixth" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_sixtysixth", REAL_SIXTYSIXTH,
                                                                    QUIET_SIXTYSIXTH, quiet_teardown)])
    assert_set_is_new("real_sixtysixth")
    assert_no_program_repeats("real_sixtysixth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_SIXTYSIXTH for p in s.expect_probe}
    assert {("newfstatat", "ENOTDIR"), ("openat", "ELOOP"), ("symlinkat", "ENOTDIR"), ("utimensat", "ELOOP"),
            ("flock", "EAGAIN")} <= pairs
    assert 6 <= len(REAL_SIXTYSIXTH) <= 8 and len(QUIET_SIXTYSIXTH) >= 6
    faults = [(s.program.split()[0], s.expect_errno) for s in REAL_SIXTYSIXTH]
    assert len(set(faults)) == len(faults)
    assert all(n.startswith("t66_") for n in names | quiet)
    # both directions need cold and warm runs: at least two of each
    assert all(c.runs == RUNS for c in QUIET_SIXTYSIXTH) and 2 <= COLD_RUNS <= RUNS - 2
    assert KNOWN_MISSES.keys() <= names
    assert QUIET_MISSES.keys() <= {f"{c}/{d}" for c in quiet for d in DIRECTIONS}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SIXTYSIXTH])
def test_a_wrong_warm_state_is_named(name, sixtysixth_recorder, tmp_path):
    sc = next(s for s in REAL_SIXTYSIXTH if s.name == name)
    try:
        check_fault_case(sc, sixtysixth_recorder, tmp_path, OUTCOMES, QUIET)
    finally:
        quiet_teardown()


def _cold_and_warm(name: str, recorder, out_dir: Path) -> list[Path]:
    """The noise case's runs, cold ones first, recorded once (both directions diff the same runs)."""
    if name not in _RECORDED:
        case = next(c for c in QUIET_SIXTYSIXTH if c.name == name)
        base = ROOT / case.name
        files = []
        try:
            for i in range(case.runs):
                fresh_dir(base)
                case.setup(base, i)
                files.append(record_run(recorder, case.argv(base), out_dir / f"{case.name}-{i}.parquet", "good"))
        finally:
            if base.exists():
                fresh_dir(base)
                base.rmdir()
        _RECORDED[name] = files
    return _RECORDED[name]


@pytest.fixture(scope="module")
def _noise_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("t66-noise")


@pytest.mark.parametrize("key", [xfail_param(f"{c.name}/{d}", QUIET_MISSES) for c in QUIET_SIXTYSIXTH
                                 for d in DIRECTIONS])
def test_cold_and_warm_good_runs_are_quiet_both_ways(key, sixtysixth_recorder, _noise_dir):
    """warm_vs_cold and cold_vs_warm: a variation the good runs never showed; the mixed pairings: good
    runs of both kinds (the variation seen), diffed against the other run of either kind."""
    from baseline.run.diff import diff_traces

    name, direction = key.split("/")
    try:
        files = _cold_and_warm(name, sixtysixth_recorder, _noise_dir)
    finally:
        quiet_teardown()
    cold, warm = files[:COLD_RUNS], files[COLD_RUNS:]
    good, bad = {
        "warm_vs_cold": (cold, warm[-1]),
        "cold_vs_warm": (warm, cold[-1]),
        "warm_vs_mixed": ([cold[0], warm[0]], warm[-1]),
        "cold_vs_mixed": ([warm[0], cold[0]], cold[-1]),
    }[direction]
    outcome = quiet_outcome(key, diff_traces(good=good, bad=bad))
    QUIET.append(outcome)
    if not outcome.correct and key in FLAKY_QUIET:
        pytest.xfail(f"good vs good reported {outcome.got}: {FLAKY_QUIET[key]}")
    assert outcome.correct, f"{key}: good vs good reported {outcome.got}"

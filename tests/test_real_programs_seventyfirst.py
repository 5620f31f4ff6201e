"""Seventy-first set of real programs, recorded for real (root + bcc): programs that find and run
other programs by name -- a job script whose wrapper was not deployed (dash's stat walk finds it
nowhere), a wrapper saved with CRLF line ends run by python's subprocess, a tool whose shebang names
a missing interpreter (ionice), a tool that lost its execute bit (chrt), a tool directory mounted
noexec in a private mount namespace (prlimit), a PATH entry that is a file (xargs), a make recipe
line past the argument limit -- must be named at the call strace -f shows failing; and good runs whose
lookups differ (missing and empty PATH entries, env's execvp, a `command -v` probe for an optional
tool, hashed vs fresh lookups, make finding its target up to date or not, shutil.which, perl's
system passing a non-executable shadow) must be quiet.

Written blind: every expectation is the call strace -f shows for the bad run (the module
scenarios/real_seventyfirst.py says what strace showed for each, and what varied between good
runs). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import shutil
import time
from pathlib import Path

import pytest
from scenarios import sets
from scenarios.harness import (
    ROOT,
    Outcome,
    fault_recorded,
    fresh_dir,
    judge,
    quiet_outcome,
    record_run,
    record_scenario,
    xfail_param,
)
from scenarios.real_seventyfirst import QUIET_SEVENTYFIRST, REAL_SEVENTYFIRST, RUNS, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# A fault case whose bifurcation is not the call strace shows failing (keyed by the case).
KNOWN_MISSES: dict[str, str] = {}
# A noise case the diff does not keep quiet.
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "cat", "cp", "tr", "sort", "uniq", "wc", "mkdir", "md5sum", "env", "xargs", "make", "perl",
         "ionice", "chrt", "prlimit", "unshare", "mount", "python3")
SCRIPTS = ("sh", "python3")

seventyfirst_recorder = set_recorder("seventyfirst_recorder", "seventy-first set of real programs", OUTCOMES, QUIET,
                                     quiet_teardown)


def _host_lacks() -> str | None:
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        return f"the set needs {', '.join(missing)} (apt: coreutils findutils make perl util-linux mount python3)"
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SEVENTYFIRST}
    quiet = {c.name for c in QUIET_SEVENTYFIRST}
    if not any(s.module == "real_seventyfirst" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_seventyfirst", REAL_SEVENTYFIRST,
                                                                    QUIET_SEVENTYFIRST, quiet_teardown)])
    assert_set_is_new("real_seventyfirst")
    assert_no_program_repeats("real_seventyfirst", scripts=SCRIPTS)
    assert 6 <= len(REAL_SEVENTYFIRST) <= 8 and len(QUIET_SEVENTYFIRST) >= 6
    assert all(n.startswith("t71_") for n in names | quiet)
    assert all(c.runs == RUNS >= 5 for c in QUIET_SEVENTYFIRST)
    # the theme: every fault is a lookup or an exec of a program found by name
    assert all(s.expect_probe & {"execve", "newfstatat"} for s in REAL_SEVENTYFIRST)
    assert all(set(s.extra) == {"walk"} for s in REAL_SEVENTYFIRST)
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


_FAULTS: dict[str, tuple[list[Path], Path, Path]] = {}  # a fault case -> (good files, bad file, base)


def _recorded(sc, recorder, out_dir: Path):
    if sc.name not in _FAULTS:
        try:
            _FAULTS[sc.name] = record_scenario(dataclasses.replace(sc, good_runs=3), recorder, out_dir)
        finally:
            quiet_teardown()
    return _FAULTS[sc.name]


@pytest.fixture(scope="module")
def _fault_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("t71-faults")


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SEVENTYFIRST])
def test_the_failed_lookup_or_exec_is_named_and_good_runs_are_quiet(name, seventyfirst_recorder, _fault_dir):
    """Two good runs against the bad one: the bifurcation is the call strace shows failing where the
    good runs found and ran the tool (not the routine misses in the PATH directories before it); the
    third good run against the same two is quiet."""
    from baseline.run.diff import diff_traces

    sc = next(s for s in REAL_SEVENTYFIRST if s.name == name)
    t0 = time.perf_counter()
    goods, bad, base = _recorded(sc, seventyfirst_recorder, _fault_dir)
    assert fault_recorded(sc, bad, base), f"{sc.name}: fault not recorded"
    good_vs_good = quiet_outcome(sc.name, diff_traces(good=goods[:2], bad=goods[2]))
    QUIET.append(good_vs_good)
    outcome = judge(sc, diff_traces(good=goods[:2], bad=bad), base)
    outcome.seconds = time.perf_counter() - t0
    OUTCOMES.append(outcome)
    assert outcome.correct, f"{sc.name}: expected {outcome.expected}, diff said {outcome.got}"
    if not good_vs_good.correct and sc.name in FLAKY_QUIET:
        pytest.xfail(f"good vs good reported {good_vs_good.got}: {FLAKY_QUIET[sc.name]}")
    assert good_vs_good.correct, f"{sc.name}: good vs good reported {good_vs_good.got}"


@pytest.mark.parametrize("name", [s.name for s in REAL_SEVENTYFIRST if s.extra["walk"]])
def test_the_rest_of_the_search_is_recorded(name, seventyfirst_recorder, _fault_dir):
    """After the failing call the searcher goes on through the remaining PATH directories (strace:
    ENOENT in /usr/bin and /bin): those calls are in the bad recording, with their errno and path."""
    import polars as pl

    from tracer.schema import read_events

    sc = next(s for s in REAL_SEVENTYFIRST if s.name == name)
    _goods, bad, _base = _recorded(sc, seventyfirst_recorder, _fault_dir)
    events = read_events(bad)
    for probe, errno, glob in sc.extra["walk"]:
        hit = events.filter((pl.col("probe") == probe) & (pl.col("errno") == errno))["path"].to_list()
        assert any(fnmatch.fnmatchcase(p or "", glob) for p in hit), \
            f"{sc.name}: {probe} {errno} {glob} not recorded (that probe and errno: {sorted(set(map(str, hit)))[:8]})"


_RECORDED: dict[str, list[Path]] = {}  # a noise case -> its runs, recorded once


def _runs(case, recorder, out_dir: Path) -> list[Path]:
    if case.name not in _RECORDED:
        base = ROOT / case.name
        files = []
        try:
            for i in range(case.runs):
                fresh_dir(base)
                case.setup(base, i)
                files.append(record_run(recorder, case.argv(base), out_dir / f"{case.name}-{i}.parquet", "good"))
        finally:
            quiet_teardown()
            if base.exists():
                fresh_dir(base)
                base.rmdir()
        _RECORDED[case.name] = files
    return _RECORDED[case.name]


def _failed_lookups(parquet: Path) -> tuple[tuple[str, str, int], ...]:
    """How many execve/stat/access calls of one recording failed, by (probe, errno), and how many
    execs succeeded."""
    from collections import Counter

    import polars as pl

    from tracer.schema import read_events

    events = read_events(parquet)
    lookups = events.filter(pl.col("probe").is_in(["execve", "execveat", "newfstatat", "stat", "statx", "access",
                                                     "faccessat", "faccessat2"]))
    failed = Counter(zip(lookups["probe"].to_list(), lookups["errno"].to_list(), strict=True))
    return tuple(sorted((probe, errno or "-", n) for (probe, errno), n in failed.items()
                        if errno or probe.startswith("execve")))


@pytest.fixture(scope="module")
def _noise_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("t71-noise")


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SEVENTYFIRST])
def test_each_good_run_with_its_own_lookups_is_quiet(name, seventyfirst_recorder, _noise_dir):
    """Each good run against the other four (another number of misses before the hit, an optional
    tool present or not, hashed or fresh lookups, make's recipe run or not, a non-executable shadow
    passed over) must be quiet; the outcome is the first pairing that was not."""
    from baseline.run.diff import diff_traces

    case = next(c for c in QUIET_SEVENTYFIRST if c.name == name)
    t0 = time.perf_counter()
    files = _runs(case, seventyfirst_recorder, _noise_dir)
    # the runs really differ: another count of failed lookups (or of events) in some run than in another
    shapes = {_failed_lookups(f) for f in files}
    assert len(shapes) > 1, f"{name}: the five runs' failed lookups are all alike ({shapes}): no noise to test"
    outcome = Outcome(name, "no anomaly", "no anomaly", True, 0.0)
    for i, held_out in enumerate(files):
        outcome = quiet_outcome(name, diff_traces(good=files[:i] + files[i + 1:], bad=held_out))
        if not outcome.correct:
            outcome.got = f"run {i} against the others: {outcome.got}"
            break
    outcome.seconds = time.perf_counter() - t0
    QUIET.append(outcome)
    if not outcome.correct and name in FLAKY_QUIET:
        pytest.xfail(f"good vs good reported {outcome.got}: {FLAKY_QUIET[name]}")
    assert outcome.correct, f"{name}: good vs good reported {outcome.got}"

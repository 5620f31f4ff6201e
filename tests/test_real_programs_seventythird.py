"""Seventy-third set of real programs, recorded for real (root + bcc): embedded state stores that
journal and lock -- the sqlite3 shell and python's sqlite3 module (a journal that is a dangling
symlink, an immutable database directory, a WAL queue whose write lock another process holds) and
git on local repositories (a hook whose interpreter is gone, the packed-refs lost, a work tree
another user owns) -- must be named at the call strace -f shows failing (or, for git's ownership
refusal, at its message); and good runs whose store differs (a WAL or a hot journal left by a dead
writer and recovered, checkpoints inside the run or not, git's auto-gc repacking or not, the
untracked cache warm or cold, the index refreshed or not, other object names and a HOME config
or none) must be quiet.

Written blind: every expectation is the call strace -f shows for the bad run (the module
scenarios/real_seventythird.py says what strace showed for each, and what varied between good
runs). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cli_harness import BIN
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
from scenarios.real_seventythird import QUIET_SEVENTYTHIRD, REAL_SEVENTYTHIRD, RUNS, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# A fault case whose bifurcation is not the call strace shows failing (keyed by the case), or whose
# message check fails ("<case>/says").
KNOWN_MISSES: dict[str, str] = {}
# A noise case the diff does not keep quiet.
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "sqlite3", "git", "chattr", "setpriv", "python3")
SCRIPTS = ("sh", "python3")

seventythird_recorder = set_recorder("seventythird_recorder", "seventy-third set of real programs", OUTCOMES, QUIET,
                                     quiet_teardown)


def _host_lacks() -> str | None:
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        return f"the set needs {', '.join(missing)} (apt: sqlite3 git e2fsprogs util-linux python3)"
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


SAYS = [s for s in REAL_SEVENTYTHIRD if "says" in s.extra]


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SEVENTYTHIRD}
    quiet = {c.name for c in QUIET_SEVENTYTHIRD}
    if not any(s.module == "real_seventythird" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_seventythird", REAL_SEVENTYTHIRD,
                                                                    QUIET_SEVENTYTHIRD, quiet_teardown)])
    assert_set_is_new("real_seventythird")
    assert_no_program_repeats("real_seventythird", scripts=SCRIPTS)
    assert 6 <= len(REAL_SEVENTYTHIRD) <= 8 and len(QUIET_SEVENTYTHIRD) >= 6
    assert all(n.startswith("t73_") for n in names | quiet)
    assert all(c.runs == RUNS >= 5 for c in QUIET_SEVENTYTHIRD)
    # the theme: every fault case runs sqlite3 or git (directly, from a job script, or the module)
    assert all(any(w in s.program for w in ("sqlite3", "git")) for s in REAL_SEVENTYTHIRD)
    assert all(set(s.extra) <= {"says", "once"} for s in REAL_SEVENTYTHIRD)
    assert KNOWN_MISSES.keys() <= names | {f"{n}/{k}" for n in names for k in ("says", "once", "cli")}
    assert QUIET_MISSES.keys() <= quiet and FLAKY_QUIET.keys() <= names | quiet


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
    return tmp_path_factory.mktemp("t73-faults")


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SEVENTYTHIRD])
def test_the_store_fault_is_named_and_good_runs_are_quiet(name, seventythird_recorder, _fault_dir):
    """Two good runs against the bad one: the bifurcation is the call strace shows failing (the
    journal's open, the -shm lock, the hook's exec, the packed-refs open) or, where no call fails,
    git's message; the third good run against the same two is quiet."""
    from baseline.run.diff import diff_traces

    sc = next(s for s in REAL_SEVENTYTHIRD if s.name == name)
    t0 = time.perf_counter()
    goods, bad, base = _recorded(sc, seventythird_recorder, _fault_dir)
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


@pytest.mark.parametrize("key", [xfail_param(f"{s.name}/says", KNOWN_MISSES) for s in SAYS])
def test_the_named_event_carries_the_programs_message(key, seventythird_recorder, _fault_dir):
    """docs/diff-json.md: ``then_wrote`` is what BAD wrote to stdout/stderr from the named event on
    (the named write's own bytes, for a divergence named by its message): git's error message, as
    strace shows it written, must be there."""
    from baseline.run.diff import diff_traces

    sc = next(s for s in SAYS if s.name == key.split("/")[0])
    goods, bad, _base = _recorded(sc, seventythird_recorder, _fault_dir)
    bif = diff_traces(good=goods[:2], bad=bad).to_dict()["bifurcation"]
    assert bif is not None, f"{sc.name}: no anomaly"
    said = (bif.get("then_wrote") or "") + ((bif.get("next_event") or {}).get("output") or "")
    assert sc.extra["says"] in said, f"{sc.name}: then_wrote {bif.get('then_wrote')!r} lacks {sc.extra['says']!r}"


@pytest.mark.parametrize("key", [xfail_param(f"{s.name}/once", KNOWN_MISSES) for s in REAL_SEVENTYTHIRD
                                 if "once" in s.extra])
def test_a_lock_retried_until_the_timeout_is_one_anomaly(key, seventythird_recorder, _fault_dir):
    """docs/diff-json.md: unexplained events less than k apart make one region, one anomaly; the
    busy handler's 13 attempts at the WAL write lock (strace: fcntl EAGAIN, a sleep, again) never
    get past it, so they are the anomaly -- once, not once per attempt."""
    from baseline.run.diff import diff_traces

    sc = next(s for s in REAL_SEVENTYTHIRD if s.name == key.split("/")[0])
    goods, bad, base = _recorded(sc, seventythird_recorder, _fault_dir)
    report = diff_traces(good=goods[:2], bad=bad).to_dict()
    glob = sc.extra["once"]
    hits = [a for a in report["anomalies"] if a.get("probe") in sc.expect_probe and a.get("errno") == sc.expect_errno
            and fnmatch.fnmatchcase(a.get("path") or "", glob)]
    shown = [f"{a.get('probe')} {a.get('errno')} {a.get('path')}" for a in report["anomalies"]]
    assert len(hits) == 1, f"{sc.name}: {len(hits)} anomalies name {sc.expect_errno} at {glob}: {shown}"


@pytest.mark.parametrize("key", [xfail_param(f"{s.name}/cli", KNOWN_MISSES) for s in REAL_SEVENTYTHIRD])
def test_the_command_line_names_the_same_call(key, seventythird_recorder, _fault_dir):
    """`baseline diff [--json] GOOD GOOD BAD` run as a command: exit 1 (README: an anomaly), the
    JSON report's `bifurcation` the same call, errno and path, the text report's `bifurcation:`
    line naming the call (and the errno, when there is one); GOOD GOOD GOOD exits 0."""
    sc = next(s for s in REAL_SEVENTYTHIRD if s.name == key.split("/")[0])
    goods, bad, base = _recorded(sc, seventythird_recorder, _fault_dir)
    argv = [str(BIN / "baseline"), "diff", *map(str, goods[:2])]
    proc = subprocess.run([*argv, str(bad), "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, f"{sc.name}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}"
    assert "Traceback" not in proc.stderr
    bif = json.loads(proc.stdout)["bifurcation"]
    assert bif is not None, f"{sc.name}: no bifurcation in the JSON report"
    assert bif.get("probe") in sc.expect_probe and bif.get("errno") == sc.expect_errno, \
        f"{sc.name}: JSON bifurcation {bif.get('probe')} {bif.get('errno')} {bif.get('path')}"
    assert fnmatch.fnmatchcase(bif.get("path") or "", sc.expect_path(base)), \
        f"{sc.name}: JSON bifurcation path {bif.get('path')}, not {sc.expect_path(base)}"
    text = subprocess.run([*argv, str(bad)], capture_output=True, text=True, timeout=300)
    assert text.returncode == 1, f"{sc.name}: text report exit {text.returncode}: {text.stderr.strip()[-400:]}"
    line = next((ln for ln in text.stdout.splitlines() if ln.startswith("bifurcation:")), "")
    assert bif["probe"] in line and (sc.expect_errno or "") in line, \
        f"{sc.name}: text report's bifurcation line: {line!r}"
    same = subprocess.run([*argv, str(goods[2])], capture_output=True, text=True, timeout=300)
    assert same.returncode == 0, f"{sc.name}: good vs good exit {same.returncode}: {same.stdout[:300]}"


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
                quiet_teardown()
        finally:
            quiet_teardown()
            if base.exists():
                fresh_dir(base)
                base.rmdir()
        _RECORDED[case.name] = files
    return _RECORDED[case.name]


@pytest.fixture(scope="module")
def _noise_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("t73-noise")


def _shape(parquet: Path) -> tuple[int, int]:
    """(events, processes) of one recording."""
    from tracer.schema import read_events

    events = read_events(parquet)
    return events.height, events["pid"].n_unique()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SEVENTYTHIRD])
def test_each_good_run_with_its_store_in_another_state_is_quiet(name, seventythird_recorder, _noise_dir):
    """Each good run against the other four (a WAL or hot journal recovered or not, a checkpoint
    or not, auto-gc or not, caches warm or cold, other object names, a HOME config or none) must be
    quiet; the outcome is the first pairing that was not."""
    from baseline.run.diff import diff_traces

    case = next(c for c in QUIET_SEVENTYTHIRD if c.name == name)
    t0 = time.perf_counter()
    files = _runs(case, seventythird_recorder, _noise_dir)
    # the runs really differ (events, processes): not five copies of one run
    shapes = [_shape(f) for f in files]
    assert len(set(shapes)) > 1, f"{name}: the five runs look alike ({shapes}): no noise to test"
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

"""Seventy-eighth set of real programs, recorded for real (root + bcc): file work done by a pool of
worker threads -- node's fs.promises on libuv's threadpool (UV_THREADPOOL_SIZE), npm's .npmrc layers
read on that pool, python's ThreadPoolExecutor, xz -T, zstd -T, pigz -p, sort --parallel, java's
parallel streams -- where which thread makes which open/stat/read/write is the scheduler's. A fault hidden in the pool's work
(one input among many a symlink loop or under a regular file, an output already there, an output
directory on a read-only file system, an OPTIONAL file that good runs find in some runs and not in
others but that the bad run fails on hard) must be named at the call strace -f shows failing, in
the thread that made it; good runs whose pools take the work in another order, with other pool
sizes, or with optional files present in some runs and absent in others must be quiet.

Written blind: every expectation is the call strace -f shows for the bad run (the module
scenarios/real_seventyeighth.py says what strace showed for each, and what varied between good
runs). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
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
from scenarios.real_seventyeighth import (
    ENV,
    JAVA,
    NODE,
    NPM,
    PIGZ,
    PY3,
    QUIET_SEVENTYEIGHTH,
    REAL_SEVENTYEIGHTH,
    RUNS,
    SORT,
    XZ,
    ZSTD,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# A fault case whose bifurcation is not the call strace shows failing (keyed by the case; "<case>/cli"
# for the command line's report of it).
KNOWN_MISSES: dict[str, str] = {}
# A noise case the diff does not keep quiet.
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "setpriv", "mount", "umount")
SCRIPTS = ("sh", "python3")

seventyeighth_recorder = set_recorder("seventyeighth_recorder", "seventy-eighth set of real programs", OUTCOMES, QUIET,
                                     quiet_teardown)


def _host_lacks() -> str | None:
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    missing += [p for p in (NODE, NPM, PY3, XZ, ZSTD, PIGZ, SORT, JAVA, ENV) if not os.access(p, os.X_OK)]
    if missing:
        return (f"the set needs {', '.join(missing)} (apt: nodejs npm python3 xz-utils zstd pigz coreutils "
                "openjdk-17-jdk-headless util-linux)")
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SEVENTYEIGHTH}
    quiet = {c.name for c in QUIET_SEVENTYEIGHTH}
    if not any(s.module == "real_seventyeighth" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_seventyeighth", REAL_SEVENTYEIGHTH,
                                                                    QUIET_SEVENTYEIGHTH, quiet_teardown)])
    assert_set_is_new("real_seventyeighth")
    assert_no_program_repeats("real_seventyeighth", scripts=SCRIPTS)
    assert 6 <= len(REAL_SEVENTYEIGHTH) <= 8 and len(QUIET_SEVENTYEIGHTH) >= 6
    assert all(n.startswith("t78_") for n in names | quiet)
    assert all(c.runs == RUNS >= 5 for c in QUIET_SEVENTYEIGHTH)
    # one fault each, no two cases of the set the same (program, errno)
    pairs = [(s.program.split()[0], s.expect_errno) for s in REAL_SEVENTYEIGHTH]
    assert len(set(pairs)) == len(pairs), pairs
    assert all(s.expect_errno for s in REAL_SEVENTYEIGHTH)
    assert all({"comm"} <= set(s.extra) <= {"comm", "worker", "optional"} for s in REAL_SEVENTYEIGHTH)
    assert sum(bool(s.extra.get("optional")) for s in REAL_SEVENTYEIGHTH) >= 2
    assert KNOWN_MISSES.keys() <= names | {f"{n}/cli" for n in names}
    assert QUIET_MISSES.keys() <= quiet and FLAKY_QUIET.keys() <= names | quiet


def _optional_varies(sc, goods: list[Path], base: Path) -> bool:
    """The case's optional file: absent (ENOENT) at the failing call's probe and path in one of the
    two good runs the bad one is diffed against, found (no errno) in the other."""
    import polars as pl

    from tracer.schema import read_events

    def outcomes(path: Path) -> set:
        ev = read_events(path).filter(pl.col("probe").is_in(list(sc.expect_probe)))
        return {e for p, e in zip(ev["path"].to_list(), ev["errno"].to_list(), strict=True)
                if fnmatch.fnmatchcase(p or "", sc.expect_path(base))}

    seen = [outcomes(g) for g in goods[:2]]
    return any("ENOENT" in s for s in seen) and any(None in s for s in seen)


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
    return tmp_path_factory.mktemp("t78-faults")


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SEVENTYEIGHTH])
def test_the_failing_pool_call_is_named_and_good_runs_are_quiet(name, seventyeighth_recorder, _fault_dir):
    """Two good runs against the bad one: the bifurcation is the call strace shows failing in the
    pool's work (for an optional file, at the very call site where the good runs themselves got
    ENOENT in one run and success in another); the third good run against the same two is quiet."""
    from baseline.run.diff import diff_traces

    sc = next(s for s in REAL_SEVENTYEIGHTH if s.name == name)
    t0 = time.perf_counter()
    goods, bad, base = _recorded(sc, seventyeighth_recorder, _fault_dir)
    assert fault_recorded(sc, bad, base), f"{sc.name}: fault not recorded"
    if sc.extra.get("optional"):
        assert _optional_varies(sc, goods, base), f"{sc.name}: the good runs do not vary at the optional file"
    good_vs_good = quiet_outcome(sc.name, diff_traces(good=goods[:2], bad=goods[2]))
    QUIET.append(good_vs_good)
    outcome = judge(sc, diff_traces(good=goods[:2], bad=bad), base)
    outcome.seconds = time.perf_counter() - t0
    OUTCOMES.append(outcome)
    assert outcome.correct, f"{sc.name}: expected {outcome.expected}, diff said {outcome.got}"
    if not good_vs_good.correct and sc.name in FLAKY_QUIET:
        pytest.xfail(f"good vs good reported {good_vs_good.got}: {FLAKY_QUIET[sc.name]}")
    assert good_vs_good.correct, f"{sc.name}: good vs good reported {good_vs_good.got}"


@pytest.mark.parametrize("key", [xfail_param(f"{s.name}/cli", KNOWN_MISSES) for s in REAL_SEVENTYEIGHTH])
def test_the_command_line_names_the_same_call_in_its_process(key, seventyeighth_recorder, _fault_dir):
    """`baseline diff --json GOOD GOOD BAD` run as a command (README: exit 1 for an anomaly; the
    report's `bifurcation` per docs/diff-json.md) names the same call, errno and path, in the thread
    strace shows making it (its comm; for a pool thread: tid != pid, a `~` thread role),
    and the text report names them on its `bifurcation:` line."""
    sc = next(s for s in REAL_SEVENTYEIGHTH if s.name == key.split("/")[0])
    goods, bad, base = _recorded(sc, seventyeighth_recorder, _fault_dir)
    argv = [str(BIN / "baseline"), "diff", *map(str, goods[:2]), str(bad)]
    proc = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, f"{sc.name}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}"
    assert "Traceback" not in proc.stderr
    bif = json.loads(proc.stdout)["bifurcation"]
    assert bif is not None, f"{sc.name}: no bifurcation in the JSON report"
    assert bif.get("probe") in sc.expect_probe and bif.get("errno") == sc.expect_errno, \
        f"{sc.name}: JSON bifurcation {bif.get('probe')} {bif.get('errno')} {bif.get('path')}"
    assert fnmatch.fnmatchcase(bif.get("path") or "", sc.expect_path(base)), \
        f"{sc.name}: JSON bifurcation path {bif.get('path')}, not {sc.expect_path(base)}"
    process = bif.get("process") or {}
    assert process.get("comm") == sc.extra["comm"], f"{sc.name}: named in {process}, not in {sc.extra['comm']}"
    if sc.extra.get("worker"):
        assert process.get("tid") != process.get("pid"), f"{sc.name}: named in the main thread {process}"
        assert "~" in (process.get("role") or ""), f"{sc.name}: the pool thread's role {process.get('role')}"
    text = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert text.returncode == 1, f"{sc.name}: text report exit {text.returncode}: {text.stderr.strip()[-400:]}"
    line = next((ln for ln in text.stdout.splitlines() if ln.startswith("bifurcation:")), "")
    assert bif["probe"] in line and sc.expect_errno in line, f"{sc.name}: text report's bifurcation line: {line!r}"


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


@pytest.fixture(scope="module")
def _noise_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("t78-noise")


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SEVENTYEIGHTH])
def test_each_good_run_with_another_pool_order_is_quiet(name, seventyeighth_recorder, _noise_dir):
    """Each good run against the other four (the pool taking the work in another order, another pool
    size, an optional file present in some runs and absent in others) must be quiet: which pool
    thread makes a call is a reordering, the ENOENT of an absent optional file is routine; the
    outcome is the first pairing that was not."""
    from baseline.run.diff import diff_traces

    case = next(c for c in QUIET_SEVENTYEIGHTH if c.name == name)
    t0 = time.perf_counter()
    files = _runs(case, seventyeighth_recorder, _noise_dir)
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

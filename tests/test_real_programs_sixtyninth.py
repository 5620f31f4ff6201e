"""Sixty-ninth set of real programs, recorded for real (root + bcc): the standard streams -- where a
program's stdin, stdout and stderr go. Faults: date's stdout and python3 logging's stderr sent to
/dev/full (write ENOSPC), wc's stdout closed (its write lands on the input file it opened as fd 1:
EBADF), tr's stdin closed (fadvise64/read EBADF), sha1sum's stdout opened read-only (write EBADF),
perl's warnings into a log on a full tmpfs of a private mount namespace (write ENOSPC), cut's write
into a pipe whose consumer crashed on a bad row (EPIPE) -- each must be named at the call strace -f
shows failing. Good runs whose streams differ by timing or by design (a producer cut by head or not,
yes always cut, isatty ENOTTY on a pipe or a file, a close loop over inherited descriptors, stderr to
/dev/null or a file, two writers interleaving in one log through 2>&1) must be quiet.

Written blind: every expectation is the call strace -f shows for the bad run (the module
scenarios/real_sixtyninth.py says what strace showed for each, and what varied between good
runs). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import shutil
import time
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
from scenarios.real_sixtyninth import (
    NEW_PATH_IN_SECOND_MODE,
    QUIET_SIXTYNINTH,
    REAL_SIXTYNINTH,
    RUNS,
    quiet_teardown,
    run_mode,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
# Keyed "<case>/unseen": run 1 (the second behaviour) against only runs of the other behaviour.
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "date", "wc", "tr", "sha1sum", "perl", "cut", "unshare", "mount", "fallocate", "seq", "head", "yes",
         "cat", "tar", "sleep", "python3")
SCRIPTS = ("sh", "python3")

sixtyninth_recorder = set_recorder("sixtyninth_recorder", "sixty-ninth set of real programs", OUTCOMES,
                                   QUIET, quiet_teardown)


def _host_lacks() -> str | None:
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        return f"the set needs {', '.join(missing)} (apt: coreutils util-linux perl tar python3)"
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SIXTYNINTH}
    quiet = {c.name for c in QUIET_SIXTYNINTH}
    if not any(s.module == "real_sixtyninth" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_sixtyninth", REAL_SIXTYNINTH,
                                                                    QUIET_SIXTYNINTH, quiet_teardown)])
    assert_set_is_new("real_sixtyninth")
    assert_no_program_repeats("real_sixtyninth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_SIXTYNINTH for p in s.expect_probe}
    assert {("write", "ENOSPC"), ("write", "EBADF"), ("read", "EBADF"), ("write", "EPIPE")} <= pairs
    assert all(s.expect_errno is not None for s in REAL_SIXTYNINTH)  # each a failing call on a stream
    assert 6 <= len(REAL_SIXTYNINTH) <= 8 and len(QUIET_SIXTYNINTH) >= 6
    faults = [s.program.split()[0] for s in REAL_SIXTYNINTH if not s.program.startswith(SCRIPTS)]
    assert len(set(faults)) == len(faults)  # one case a program (the scripts' interpreter aside)
    assert all(n.startswith("t69_") for n in names | quiet)
    assert all(c.runs == RUNS >= 5 for c in QUIET_SIXTYNINTH)
    assert KNOWN_MISSES.keys() <= names
    keys = quiet | {f"{c}/unseen" for c in quiet}
    assert QUIET_MISSES.keys() <= keys and FLAKY_QUIET.keys() <= names | keys


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SIXTYNINTH])
def test_a_stream_fault_is_named_and_good_runs_are_quiet(name, sixtyninth_recorder, tmp_path):
    sc = next(s for s in REAL_SIXTYNINTH if s.name == name)
    try:
        check_fault_case(sc, sixtyninth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


_RECORDED: dict[str, list[Path]] = {}  # a noise case -> its runs, recorded once for both tests


def _runs(case, recorder, out_dir: Path) -> list[Path]:
    """The noise case's runs (its behaviour alternating), recorded once."""
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
    return tmp_path_factory.mktemp("t69-noise")


def _judge_quiet(key: str, outcome: Outcome) -> None:
    QUIET.append(outcome)
    if not outcome.correct and key in FLAKY_QUIET:
        pytest.xfail(f"good vs good reported {outcome.got}: {FLAKY_QUIET[key]}")
    assert outcome.correct, f"{key}: good vs good reported {outcome.got}"


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SIXTYNINTH])
def test_each_good_run_against_the_others_is_quiet(name, sixtyninth_recorder, _noise_dir):
    """Each good run against all the others (the streams differing: a producer cut by its reader or not,
    isatty answered ENOTTY on a pipe or on a file, descriptors inherited or not, stderr to /dev/null or a
    file, two writers' order in one log -- each behaviour also among the others) must be quiet; the
    outcome is the first pairing that was not."""
    from baseline.run.diff import diff_traces

    case = next(c for c in QUIET_SIXTYNINTH if c.name == name)
    t0 = time.perf_counter()
    files = _runs(case, sixtyninth_recorder, _noise_dir)
    outcome = Outcome(name, "no anomaly", "no anomaly", True, 0.0)
    for i, held_out in enumerate(files):
        outcome = quiet_outcome(name, diff_traces(good=files[:i] + files[i + 1:], bad=held_out))
        if not outcome.correct:
            outcome.got = f"run {i} ({run_mode(name, i)}) against the others: {outcome.got}"
            break
    outcome.seconds = time.perf_counter() - t0
    _judge_quiet(name, outcome)


@pytest.mark.parametrize("key", [xfail_param(f"{c.name}/unseen", QUIET_MISSES) for c in QUIET_SIXTYNINTH])
def test_a_stream_the_good_runs_never_showed(key, sixtyninth_recorder, _noise_dir):
    """Run 1 (the second behaviour, by design) against only the runs of the other behaviour: the same
    work and output, exit 0. A producer cut by its reader, a writer starting late are never the run's
    failure: quiet. Where the second behaviour opens a file the other runs never open (the spool file,
    the inherited lock, stderr's file) that is a path no good run has -- docs/diff-json.md's error-free
    divergence: the anomaly must be there, errno null, never an error."""
    from baseline.run.diff import diff_traces

    name = key.split("/")[0]
    case = next(c for c in QUIET_SIXTYNINTH if c.name == name)
    files = _runs(case, sixtyninth_recorder, _noise_dir)
    goods = [f for i, f in enumerate(files) if run_mode(name, i) != run_mode(name, 1)]
    assert len(goods) >= 2
    report = diff_traces(good=goods, bad=files[1])
    if name not in NEW_PATH_IN_SECOND_MODE:
        _judge_quiet(key, quiet_outcome(key, report))
        return
    want = NEW_PATH_IN_SECOND_MODE[name].replace("{b}", str(ROOT / name))
    bif = report.bifurcation or {}
    got = f"{bif.get('probe')} {bif.get('errno')} {bif.get('path')}" if report.anomaly else "no anomaly"
    outcome = Outcome(key, f"* None {want}", got, bool(report.anomaly) and bif.get("errno") is None
                      and bif.get("path") == want, 0.0)
    OUTCOMES.append(outcome)
    assert outcome.correct, f"{key}: expected an error-free divergence at {want}, diff said {got}"

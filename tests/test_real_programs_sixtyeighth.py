"""Sixty-eighth set of real programs, recorded for real (root + bcc): answers that come back empty
(docs/diff-json.md's empty_answer) over every kind of channel -- nc and python3 urllib against a
loopback server that reads the request and closes, socat against a unix-socket server that does the
same, awk reading a pipe whose producer printed nothing, md5sum -c of an empty manifest, python3
json.load of an empty config -- must be named at the first read that came back empty; and good runs
where an empty first read is normal (a pooled keep-alive connection the server closed while idle,
curl's reused connection found dead, a health check's connect-and-close, a cancelled unix-socket
request, a non-blocking read racing its producer, tail following a log still empty) must be quiet.

Written blind: every expectation is the call strace -f shows for the bad run (the module
scenarios/real_sixtyeighth.py says what strace showed for each, and what varied between good
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
    skip_if_loopback_down,
    xfail_param,
)
from scenarios.real_sixtyeighth import (
    QUIET_SIXTYEIGHTH,
    REAL_SIXTYEIGHTH,
    RUNS,
    quiet_teardown,
    run_mode,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {
    "t68_awk_producer_printed_nothing":
        "strace -f: awk's first read(0) of the pipe returns 0 (the producer, python3, read its inventory as in the "
        "good runs, printed nothing and exited 0) where every good run's first read(0) returned the host names; "
        "the recording has it (awk read pipe: ret 0, its only read of the pipe). The diff named no read: its only "
        "anomaly is 'exit_group None None' of the producer python3 (divergence, score 2.5, empty_answer false, "
        "nothing written) -- awk's empty first read, docs/diff-json.md's empty_answer, is not even listed",
}
# Keyed "<case>/unseen": run 1 (the second behaviour) against only runs of the other behaviour.
QUIET_MISSES: dict[str, str] = {
    "t68_tail_follows_a_log_still_empty/unseen":
        "strace -f: run 1 (tail attached before the service wrote) reads the log empty (read = 0), then waits on "
        "inotify, checking the service with kill(pid, 0) = 0 every 50 ms, and reads and writes the lines one by "
        "one until kill(pid, 0) ESRCH; the good runs (attached after the service finished) read the five lines at "
        "once and meet kill ESRCH at the first check. Same output, exit 0. The empty read is not named; the diff "
        "named 'kill None None' (the liveness check succeeding where every good run's failed ESRCH, a process "
        "alive longer). Borderline: the good runs never followed a live writer, so the region is a new flow, "
        "not only the empty read's timing",
}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "nc", "socat", "curl", "awk", "md5sum", "tail", "sleep", "python3")
SCRIPTS = ("sh", "python3")

sixtyeighth_recorder = set_recorder("sixtyeighth_recorder", "sixty-eighth set of real programs", OUTCOMES,
                                     QUIET, quiet_teardown)


def _host_lacks() -> str | None:
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        return f"the set needs {', '.join(missing)} (apt: netcat-openbsd socat curl mawk coreutils python3)"
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SIXTYEIGHTH}
    quiet = {c.name for c in QUIET_SIXTYEIGHTH}
    if not any(s.module == "real_sixtyeighth" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_sixtyeighth", REAL_SIXTYEIGHTH,
                                                                    QUIET_SIXTYEIGHTH, quiet_teardown)])
    assert_set_is_new("real_sixtyeighth")
    assert_no_program_repeats("real_sixtyeighth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_SIXTYEIGHTH for p in s.expect_probe}
    assert {("read", None), ("recvfrom", None)} <= pairs
    assert all(s.expect_errno is None for s in REAL_SIXTYEIGHTH)  # an empty answer: no call fails
    assert 6 <= len(REAL_SIXTYEIGHTH) <= 8 and len(QUIET_SIXTYEIGHTH) >= 6
    faults = [s.program.split()[0] for s in REAL_SIXTYEIGHTH if not s.program.startswith(SCRIPTS)]
    assert len(set(faults)) == len(faults)  # one case a program (the scripts' interpreter aside)
    assert all(n.startswith("t68_") for n in names | quiet)
    assert all(c.runs == RUNS >= 5 for c in QUIET_SIXTYEIGHTH)
    assert KNOWN_MISSES.keys() <= names
    keys = quiet | {f"{c}/unseen" for c in quiet}
    assert QUIET_MISSES.keys() <= keys and FLAKY_QUIET.keys() <= names | keys


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SIXTYEIGHTH])
def test_an_empty_answer_is_named_and_good_runs_are_quiet(name, sixtyeighth_recorder, tmp_path):
    skip_if_loopback_down()
    sc = next(s for s in REAL_SIXTYEIGHTH if s.name == name)
    try:
        check_fault_case(sc, sixtyeighth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
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
    return tmp_path_factory.mktemp("t68-noise")


def _judge_quiet(key: str, outcome: Outcome) -> None:
    QUIET.append(outcome)
    if not outcome.correct and key in FLAKY_QUIET:
        pytest.xfail(f"good vs good reported {outcome.got}: {FLAKY_QUIET[key]}")
    assert outcome.correct, f"{key}: good vs good reported {outcome.got}"


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SIXTYEIGHTH])
def test_each_good_run_against_the_others_is_quiet(name, sixtyeighth_recorder, _noise_dir):
    """Each good run against all the others (an empty first read in some runs -- a pooled connection the
    server closed while idle, a health check's connection, a cancelled request, a non-blocking read before
    the producer wrote, a log still empty -- and data at once in the others, each behaviour also among the
    others) must be quiet; the outcome is the first pairing that was not."""
    from baseline.run.diff import diff_traces

    skip_if_loopback_down()
    case = next(c for c in QUIET_SIXTYEIGHTH if c.name == name)
    t0 = time.perf_counter()
    files = _runs(case, sixtyeighth_recorder, _noise_dir)
    outcome = Outcome(name, "no anomaly", "no anomaly", True, 0.0)
    for i, held_out in enumerate(files):
        outcome = quiet_outcome(name, diff_traces(good=files[:i] + files[i + 1:], bad=held_out))
        if not outcome.correct:
            outcome.got = f"run {i} ({run_mode(name, i)}) against the others: {outcome.got}"
            break
    outcome.seconds = time.perf_counter() - t0
    _judge_quiet(name, outcome)


@pytest.mark.parametrize("key", [xfail_param(f"{c.name}/unseen", QUIET_MISSES) for c in QUIET_SIXTYEIGHTH])
def test_an_empty_read_the_good_runs_never_showed_is_quiet(key, sixtyeighth_recorder, _noise_dir):
    """Run 1 (the second behaviour: the empty first read, by design) against only the runs of the other
    behaviour: the same work and output, exit 0; the empty read is routine there (a reconnect, the next
    accept, a wait for data), never the run's failure."""
    from baseline.run.diff import diff_traces

    skip_if_loopback_down()
    name = key.split("/")[0]
    case = next(c for c in QUIET_SIXTYEIGHTH if c.name == name)
    files = _runs(case, sixtyeighth_recorder, _noise_dir)
    goods = [f for i, f in enumerate(files) if run_mode(name, i) != run_mode(name, 1)]
    assert len(goods) >= 2
    _judge_quiet(key, quiet_outcome(key, diff_traces(good=goods, bad=files[1])))

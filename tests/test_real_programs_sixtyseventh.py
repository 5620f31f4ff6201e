"""Sixty-seventh set of real programs, recorded for real (root + bcc): connection teardown on
loopback -- nc -N, socat shut-down, perl IO::Socket, curl, python3 sockets and asyncio streams
against one loopback server whose teardown changes run to run (it closes first or waits for the
client, a FIN or a SO_LINGER 0 reset after the whole reply, keep-alive or Connection: close). Good
runs that differ only in that timing must be quiet; teardowns that are faults (a reset mid-reply,
a half-close taken for an abort, a server closing without answering, a peer gone before the body,
a wrong port) must be named.

Written blind: every expectation is the call strace -f shows for the bad run (the module
scenarios/real_sixtyseventh.py says what strace showed for each, and what varied between good
runs). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import shutil
import subprocess
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
from scenarios.real_sixtyseventh import (
    QUIET_SIXTYSEVENTH,
    REAL_SIXTYSEVENTH,
    RUNS,
    quiet_teardown,
    run_mode,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# (t67_python_halfclose_server_closes_without_answering was one: the first recvfrom returning 0
# where the good runs' had the reply was not named -- the diff named the 'short reply' message.
# Fixed: baseline.run.rules.waits._EmptyAnswers reads a connection's first read too.)
KNOWN_MISSES: dict[str, str] = {}
# Keyed "<case>/unseen": run 1 (the server's second behaviour) against only runs of the other
# behaviours. strace -f of every run: the same reply read whole, the same output, exit 0.
QUIET_MISSES: dict[str, str] = {
    "t67_python_halfclose_fin_or_reset_after_the_reply/unseen":
        "strace -f: after the whole 1340-byte reply the next recvfrom fails ECONNRESET (the server's SO_LINGER 0 "
        "close) where the good runs' returns 0 (FIN); caught as the reply's end, shutdown(SHUT_RDWR) ENOTCONN as in "
        "every run, same output, exit 0; the diff named recvfrom ECONNRESET inet:127.0.0.1:<port>",
    "t67_perl_io_socket_fin_or_reset_after_the_reply/unseen":
        "strace -f: after the whole reply perl's next read fails ECONNRESET (SO_LINGER 0) where the good runs' "
        "returns 0; the script takes a reset after a whole reply as its end, same output, exit 0; the diff named "
        "read ECONNRESET inet:127.0.0.1:<port>",
}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "nc", "socat", "curl", "perl", "python3")
SCRIPTS = ("sh", "python3")

sixtyseventh_recorder = set_recorder("sixtyseventh_recorder", "sixty-seventh set of real programs", OUTCOMES,
                                     QUIET, quiet_teardown)


def _host_lacks() -> str | None:
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        return f"the set needs {', '.join(missing)} (apt: netcat-openbsd socat curl perl python3)"
    if subprocess.run(["perl", "-MIO::Socket::INET", "-e1"], capture_output=True).returncode != 0:
        return "the set needs perl's IO::Socket::INET (apt: perl)"
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SIXTYSEVENTH}
    quiet = {c.name for c in QUIET_SIXTYSEVENTH}
    if not any(s.module == "real_sixtyseventh" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_sixtyseventh", REAL_SIXTYSEVENTH,
                                                                    QUIET_SIXTYSEVENTH, quiet_teardown)])
    assert_set_is_new("real_sixtyseventh")
    assert_no_program_repeats("real_sixtyseventh", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_SIXTYSEVENTH for p in s.expect_probe}
    assert {("read", "EBADF"), ("read", "ECONNRESET"), ("read", None), ("getsockopt", "ECONNREFUSED"),
            ("sendto", "EPIPE"), ("recvfrom", "ECONNRESET")} <= pairs
    assert 6 <= len(REAL_SIXTYSEVENTH) <= 8 and len(QUIET_SIXTYSEVENTH) >= 6
    faults = [(s.program.split()[0], s.expect_errno) for s in REAL_SIXTYSEVENTH]
    assert len(set(faults)) == len(faults)
    assert all(n.startswith("t67_") for n in names | quiet)
    assert all(c.runs == RUNS >= 5 for c in QUIET_SIXTYSEVENTH)
    assert KNOWN_MISSES.keys() <= names
    keys = quiet | {f"{c}/unseen" for c in quiet}
    assert QUIET_MISSES.keys() <= keys and FLAKY_QUIET.keys() <= names | keys


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SIXTYSEVENTH])
def test_a_teardown_fault_is_named_and_good_runs_are_quiet(name, sixtyseventh_recorder, tmp_path):
    skip_if_loopback_down()
    sc = next(s for s in REAL_SIXTYSEVENTH if s.name == name)
    try:
        check_fault_case(sc, sixtyseventh_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


_RECORDED: dict[str, list[Path]] = {}  # a noise case -> its runs, recorded once for both tests


def _runs(case, recorder, out_dir: Path) -> list[Path]:
    """The noise case's runs (the server's teardown alternating), recorded once."""
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
    return tmp_path_factory.mktemp("t67-noise")


def _judge_quiet(key: str, outcome: Outcome) -> None:
    QUIET.append(outcome)
    if not outcome.correct and key in FLAKY_QUIET:
        pytest.xfail(f"good vs good reported {outcome.got}: {FLAKY_QUIET[key]}")
    assert outcome.correct, f"{key}: good vs good reported {outcome.got}"


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SIXTYSEVENTH])
def test_each_good_run_against_the_others_is_quiet(name, sixtyseventh_recorder, _noise_dir):
    """Each good run against all the others (the server closing first or last, a FIN or a reset after
    the whole reply, a connection reused or not: each teardown also among the others) must be quiet;
    the outcome is the first pairing that was not."""
    from baseline.run.diff import diff_traces

    skip_if_loopback_down()
    case = next(c for c in QUIET_SIXTYSEVENTH if c.name == name)
    t0 = time.perf_counter()
    files = _runs(case, sixtyseventh_recorder, _noise_dir)
    outcome = Outcome(name, "no anomaly", "no anomaly", True, 0.0)
    for i, held_out in enumerate(files):
        outcome = quiet_outcome(name, diff_traces(good=files[:i] + files[i + 1:], bad=held_out))
        if not outcome.correct:
            outcome.got = f"run {i} ({run_mode(name, i)}) against the others: {outcome.got}"
            break
    outcome.seconds = time.perf_counter() - t0
    _judge_quiet(name, outcome)


@pytest.mark.parametrize("key", [xfail_param(f"{c.name}/unseen", QUIET_MISSES) for c in QUIET_SIXTYSEVENTH])
def test_a_teardown_the_good_runs_never_showed_is_quiet(key, sixtyseventh_recorder, _noise_dir):
    """Run 1 (the server's second behaviour) against only the runs of the other behaviours: the same
    work and output, exit 0, only the teardown's timing new."""
    from baseline.run.diff import diff_traces

    skip_if_loopback_down()
    name = key.split("/")[0]
    case = next(c for c in QUIET_SIXTYSEVENTH if c.name == name)
    files = _runs(case, sixtyseventh_recorder, _noise_dir)
    goods = [f for i, f in enumerate(files) if run_mode(name, i) != run_mode(name, 1)]
    assert len(goods) >= 2
    _judge_quiet(key, quiet_outcome(key, diff_traces(good=goods, bad=files[1])))

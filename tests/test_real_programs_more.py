"""More real Debian programs with one real fault each (tests/scenarios/real_more.py), recorded
for real: three good runs and one bad run per program. The diff of two good runs against the
bad one must name the fault at top 1 (syscall, errno, path); the third good run diffed
against the same two must be "same". The good-vs-good noise cases (timestamps and pids in
names, mktemp, xargs -P order, thread pools, hash seeds, SIGPIPE, EXDEV fallback) must be quiet.
Cases repeating a tested case's call, errno and kind of fault (`BENCH_ONLY`) are left to the
benchmark, so this module takes about a minute.

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_more import BENCH_ONLY, QUIET_MORE, REAL_MORE
from scenarios.sets import assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# Misses of the differ, by root cause (xfail, strict): none today. The misses this set found
# (a writer's EPIPE and a client's ECONNREFUSED outranking the process that failed first, a
# routine XDG-config fallback naming the region, a numbered scan stopping early looking like
# the good runs' end-of-scan ENOENT, set order under a hash seed and a thread pool's share of
# work at the end of a thread, mktemp's four random characters, a retry loop's attempts)
# are fixed in baseline/run/diff.py and normalize.py.
KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
TESTED = [s for s in REAL_MORE if s.name not in BENCH_ONLY]


more_recorder = set_recorder("more_recorder", "more real programs", OUTCOMES, QUIET)


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_MORE}
    assert_set_is_new("real_more")
    assert len(REAL_MORE) >= 15 and len(QUIET_MORE) >= 5
    errnos = {s.expect_errno for s in REAL_MORE}
    assert {"ENOSPC", "EROFS", "EACCES", "ENOENT", "EISDIR", "EMFILE", "ENOEXEC", "ETXTBSY", "ENOTDIR",
            "ECONNREFUSED", "EAGAIN", "EBUSY", "EFBIG", "ENOTEMPTY", "EPERM", "EADDRINUSE", None} <= errnos
    assert {s.name for s in REAL_MORE if s.unprivileged}  # as nobody, too
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= {c.name for c in QUIET_MORE}
    assert names >= BENCH_ONLY and len(TESTED) >= 30


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, more_recorder, tmp_path):
    sc = next(s for s in REAL_MORE if s.name == name)
    check_fault_case(sc, more_recorder, tmp_path, OUTCOMES, QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_MORE])
def test_run_to_run_noise_is_quiet(name, more_recorder, tmp_path):
    case = next(c for c in QUIET_MORE if c.name == name)
    check_noise_case(case, more_recorder, tmp_path, QUIET)

"""A twentieth set of real programs with one real fault each (tests/scenarios/real_twentieth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: faults where no system call fails, or
where the first failed call is a consequence -- a config, a symlink, an environment file or a
VERSION file read successfully that send the job another way (another model, the old release,
the fallback backend module, its exit 1), a directory listing and a manifest that come back
empty (getdents64 with only "." and "..", read returning 0 at once), a build step writing where
its config says so that the publish step's cp fails ENOENT later, a supervisor killing its
worker at a deadline from its config, a job killed by its alarm watchdog while blocked in flock,
and deaths by a signal with nothing failed before: SIGXCPU under ulimit -t, SIGFPE in a C
worker, abort() after a short read, SIGBUS in a job whose mapped shard a cleaner process of the
same run truncated, a sweep unlinking the live params.json before cp copies it, a C counter
whose export is empty, and dash's glob over an empty directory (cat then fails ENOENT on the
pattern itself). The good-vs-good noise cases (config values, listings, manifest sizes,
dated release targets, poll counts, lock waits, CPU work varying) must be quiet.

Failed on main (the differ named the job's reaction, not the call that went another way):
nofail_inputs_dir_listing_empty and nofail_manifest_empty (the message / the output's close:
the empty answer is in no token), nofail_short_read_abort (gettid, abort()'s preamble, not its
tgkill), nofail_deadline_below_worker_time_killed (the message: a checked kill was dropped as
timing), nofail_build_writes_to_staging_publish_enoent (cp's ENOENT, the consequence),
nofail_cleaner_truncates_mapped_shard_sigbus (the job's end, not the cleaner's truncate) and
nofail_env_file_selects_cpu_backend (python's bytecode-cache miss of the other module,
openat ENOENT __pycache__/backend_cpu.*.pyc, not the lookup of backend_cpu.py opening the region),
and the three written after the mechanisms, to see whether they carry:
nofail_sweep_removes_live_params_cp_enoent (cp's ENOENT), nofail_c_reader_export_empty (the
counter's message) and nofail_glob_matches_nothing_cat_enoent (cat's ENOENT on the pattern).

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_twentieth import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_TWENTIETH,
    REAL_TWENTIETH,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_TWENTIETH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_TWENTIETH if c.name not in QUIET_BENCH_ONLY]


twentieth_recorder = set_recorder("twentieth_recorder", "twentieth set of real programs", OUTCOMES, QUIET,
                                  quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    missing = [t for t in ("gcc", "cp", "sleep", "cat") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)}")


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_TWENTIETH}
    assert_set_is_new("real_twentieth")
    assert_no_program_repeats("real_twentieth", scripts=("python3", "sh"))
    # no failing call at the fault, bar the one wait a signal interrupted
    assert {s.expect_errno for s in REAL_TWENTIETH} == {None, "ERESTARTSYS"}
    probes = set().union(*(s.expect_probe for s in REAL_TWENTIETH))
    assert {"(end of thread)", "getdents64", "read", "kill", "tgkill", "truncate", "openat", "write"} <= probes
    earlier = {s.description for e in earlier_sets("real_twentieth") for s in e.faults}
    assert not earlier & {s.description for s in REAL_TWENTIETH}
    assert len(REAL_TWENTIETH) >= 12 and len(QUIET_TWENTIETH) >= 5
    assert names >= BENCH_ONLY and {c.name for c in QUIET_TWENTIETH} >= QUIET_BENCH_ONLY
    assert KNOWN_MISSES.keys() <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {
        c.name for c in QUIET_TWENTIETH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, twentieth_recorder, tmp_path):
    sc = next(s for s in REAL_TWENTIETH if s.name == name)
    check_fault_case(sc, twentieth_recorder, tmp_path, OUTCOMES, QUIET,
                     check_recorded="(end of thread)" not in sc.expect_probe)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_run_to_run_noise_is_quiet(name, twentieth_recorder, tmp_path):
    case = next(c for c in QUIET_TWENTIETH if c.name == name)
    check_noise_case(case, twentieth_recorder, tmp_path, QUIET, FLAKY_QUIET)


def test_an_empty_listing_says_so(twentieth_recorder, tmp_path):
    """The report of an empty first listing marks it (`empty_answer`, JSON) and says it came
    back empty (text), where a path no good run took would be said of a new event: the
    getdents64 of inputs/ is the same call at the same path as the good runs', only its
    answer differs."""
    from scenarios.harness import record_scenario

    from baseline.run.diff import diff_traces

    sc = next(s for s in REAL_TWENTIETH if s.name == "nofail_inputs_dir_listing_empty")
    goods, bad, base = record_scenario(sc, twentieth_recorder, tmp_path)
    report = diff_traces(good=goods, bad=bad)
    top = report.to_dict()["anomalies"][0]
    assert (top["probe"], top["path"], top["empty_answer"]) == ("getdents64", f"{base}/inputs", True)
    assert "came back empty" in report.render_text()
    assert not any(a["empty_answer"] for a in report.to_dict()["anomalies"][1:])

"""A fourth set of real Debian programs with one real fault each (tests/scenarios/real_fourth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The good-vs-good noise cases (xz and sort worker
threads, thread-pool temp names, /proc reads, random tokens, a cold __pycache__, EAGAIN retries
on a non-blocking pipe, a lock wait, timeout's timer, ls -l of /proc/self, make -j2 pipelines,
a read a timer keeps interrupting, a non-zero exit in every run) must be quiet. Cases repeating a tested case's call, errno and kind of fault (`BENCH_ONLY`) are
left to the benchmark, so this module takes about a minute.

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import pytest
from scenarios.harness import (
    Outcome,
    check_fault_case,
    check_noise_case,
    record_scenario,
    xfail_param,
)
from scenarios.real_fourth import BENCH_ONLY, QUIET_FOURTH, REAL_FOURTH, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# Misses of the differ, by root cause (xfail, strict): none today. The ten this set found are
# fixed in baseline/run/diff.py, each with a guard case that checks the rule does not misfire:
# an exit status no good run had is an anomaly, named by what the run wrote last when nothing
# else names it (python_validation_exit, perl_config_die, sha256sum_check_mismatch; gzip_d_truncated,
# sort_check_unsorted, xz_threads_corrupt: instead of a content-free exit_group or a message
# catalog lookup; guard nonzero_exit_every_run); a wait interrupted by a signal and never
# completed, where the good runs completed it uninterrupted, is no routine interruption
# (flock_w_gives_up, timeout_kills_hung_child; guard interrupted_read_restarted); a writer's
# EPIPE is a consequence of a hard error the reader met where good runs succeeded, even when
# the reader exits the way a good one does (pipeline_patterns_unreadable; guard
# producer_epipe_consumer_quits); a message catalog lookup (LC_MESSAGES/*.mo ENOENT) does not
# name its region (bash_noclobber_exists), and one that opens a region reports the error right
# before it, even a routine one (cp_reflink_always; guards cp_reflink_auto_disk_full,
# cp_reflink_auto_quiet); known events in another order in the parent of a missing process
# are where the run went another way, not timing (make_stale_target_skips).
# The recorder's miss is fixed too: the recording now follows the daemon a start script leaves
# behind after the script exits (tracer record's linger: daemon_fails_after_parent_exits), and
# a background child still running when the command returns is recorded to its end, or, if
# the linger runs out first, marked cut off so the differ does not call its stream's end a
# thread stopping early (background_child_outlives; tests/test_record_linger.py).
KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# Timing-dependent good-vs-good misses: reported as xfail when they happen, never asserted.
FLAKY_QUIET: dict[str, str] = {}
# The same for the third good run of a fault case (its good-vs-good check, not the fault's).
# python_threads_disk_full's was here: once in CI a worker's newfstatat was named, its path lost
# by the recorder (a sibling's close of the fd the worker's open then got entered after that
# open; the fd table, replayed in entry order, dropped the new file). The fd table now keeps it
# (tracer.record.fdtable ProcessState.close; guard tests/test_thread_pool_work.py).
FLAKY_GOOD_VS_GOOD: dict[str, str] = {}
TESTED = [s for s in REAL_FOURTH if s.name not in BENCH_ONLY]


fourth_recorder = set_recorder("fourth_recorder", "fourth set of real programs", OUTCOMES, QUIET, quiet_teardown)


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_FOURTH}
    assert_set_is_new("real_fourth")
    assert len(REAL_FOURTH) >= 30 and len(QUIET_FOURTH) >= 10
    # no program repeats a fault of the earlier sets (program, errno)
    assert_no_program_repeats("real_fourth", scripts=("python3", "sh", "bash", "unshare"))
    errnos = {s.expect_errno for s in REAL_FOURTH}
    assert {"EACCES", "EPERM", "EINVAL", "ENOSPC", "ENOENT", "EEXIST", "EROFS", "EXDEV", "ENOEXEC", "ENODATA",
            "ERESTARTSYS", None} <= errnos
    assert {s.name for s in REAL_FOURTH if s.unprivileged}
    assert (KNOWN_MISSES.keys() | FLAKY_GOOD_VS_GOOD.keys()) <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {c.name for c in QUIET_FOURTH}
    assert names >= BENCH_ONLY and len(TESTED) >= 20


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, fourth_recorder, tmp_path):
    sc = next(s for s in REAL_FOURTH if s.name == name)
    check_fault_case(sc, fourth_recorder, tmp_path, OUTCOMES, QUIET, check_recorded=name not in KNOWN_MISSES,
                     flaky_quiet=FLAKY_GOOD_VS_GOOD)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_FOURTH])
def test_run_to_run_noise_is_quiet(name, fourth_recorder, tmp_path):
    case = next(c for c in QUIET_FOURTH if c.name == name)
    check_noise_case(case, fourth_recorder, tmp_path, QUIET, FLAKY_QUIET)


def test_exit_status_rule_reads_frames_like_files(fourth_recorder, tmp_path):
    """A run that fails only by its exit status is the same anomaly whether the traces are
    given as files or as polars frames (the frame's exit_status column is read too)."""
    import polars as pl

    from baseline.run.diff import diff_traces

    sc = next(s for s in REAL_FOURTH if s.name == "python_validation_exit")
    goods, bad, base = record_scenario(sc, fourth_recorder, tmp_path)
    from_files = diff_traces(good=goods, bad=bad)
    from_frames = diff_traces(good=pl.concat([pl.read_parquet(g) for g in goods]), bad=pl.read_parquet(bad))
    assert from_files.anomaly and from_frames.anomaly
    assert from_frames.bifurcation["position"] == from_files.bifurcation["position"]
    assert from_frames.warnings == from_files.warnings == ["exit status 3, where the good runs exited 0"]
    # and a good run against the others, as frames: the same exit status, no anomaly
    assert not diff_traces(good=pl.read_parquet(goods[0]), bad=pl.read_parquet(goods[1])).anomaly

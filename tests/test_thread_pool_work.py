"""A thread pool's work, recorded for real: which worker takes which part is scheduling, not a
fault; a descriptor another thread's close frees while a worker's open is in progress keeps
the worker's path.

The fourth set's `python_threads_disk_full` good-vs-good check failed once in CI: the third
good run's worker #2 began with part3 and its newfstatat was named as a path no good run took.
The parts' names are no cause (digit runs are `<n>` after normalisation, and windows are
matched against every good thread of the same role, its siblings included: the permutations
below are quiet). The cause was the recorder's: a worker's open entered, a sibling's close of
the fd the open then got entered after it, and the fd table, replayed in entry order, dropped
the worker's new file -- its fstat, writes and close had no path (tracer.record.fdtable
`ProcessState.close`). `fd_race.py` makes that interleaving happen in every run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from scenarios.harness import PROGRAMS, PY, ROOT, fresh_dir, record_run

from baseline.run.diff import diff_traces
from tracer.schema import read_events

POOL = PROGRAMS / "pool_plan.py"
GOOD_PLAN = "0,1 2,3 4,5"  # every worker begins with a write and ends with a read


def _userfaultfd_usable() -> bool:
    return os.geteuid() == 0 or Path("/proc/sys/vm/unprivileged_userfaultfd").read_text().strip() == "1"


def test_fd_freed_during_an_open_keeps_the_opened_path(recorder, tmp_path):
    """A close entering while another thread's open of the same number is in progress freed the
    file before it: the worker's fstat, read and close name its file, the main thread's read
    and close the file it opened."""
    if not _userfaultfd_usable():
        pytest.skip("userfaultfd needs root or vm.unprivileged_userfaultfd=1")
    base = ROOT / "fd_race"
    fresh_dir(base)
    try:
        (base / "a.cfg").write_text("a\n")
        (base / "b.cfg").write_text("b\n")
        trace = record_run(recorder, [*PY, str(PROGRAMS / "fd_race.py"), str(base)], tmp_path / "race.parquet", "good")
    finally:
        shutil.rmtree(base)
    ev = read_events(trace)
    worker = ev.filter(pl.col("tid") != pl.col("pid"))
    opened = worker.filter(pl.col("probe") == "openat", pl.col("path") == f"{base}/b.cfg")
    assert opened.height == 1, "the worker's open of b.cfg is not recorded"
    fd, open_seq = opened["ret"][0], opened["seq"][0]
    # the premise: the main thread's close entered after the worker's open, which got its number
    main_close = ev.filter(pl.col("tid") == pl.col("pid"), pl.col("probe") == "close", pl.col("seq") > open_seq)
    a_opened = ev.filter(pl.col("probe") == "openat", pl.col("path") == f"{base}/a.cfg")
    assert a_opened["ret"].to_list() == [fd], "the worker did not get the number the main thread closed"
    assert main_close["path"].to_list() == [f"{base}/a.cfg"], main_close.select("seq", "path")
    # ... and its read of that number, entering after the worker's open too, before the open
    # had a number, read its own file (tracer.record.fdtable `ProcessState.fd_path`)
    main_read = ev.filter(pl.col("tid") == pl.col("pid"), pl.col("probe") == "pread64", pl.col("seq") > open_seq)
    assert main_read["path"].to_list() == [f"{base}/a.cfg"], main_read.select("seq", "path")
    after = worker.filter(pl.col("seq") > open_seq, pl.col("probe").is_in(["newfstatat", "fstat", "read", "close"]))
    assert set(after["probe"].to_list()) >= {"read", "close"}
    assert after["path"].to_list() == [f"{base}/b.cfg"] * after.height, after.select("seq", "probe", "path")


def _pool_runs(recorder, out: Path, plans: list[tuple[str, str]], setup=None) -> list[Path]:
    """Record pool_plan.py once per (name, plan) in the same directory; `setup(base, name)`
    changes the directory of a run."""
    base = ROOT / "pool_plan"
    files = []
    for name, plan in plans:
        fresh_dir(base)
        (base / "in").mkdir()
        (base / "out").mkdir()
        for i in range(1, 12, 2):
            (base / "in" / f"{i}.dat").write_text("x" * 100)
        (base / "in" / "override.cfg").write_text("y\n")
        if setup:
            setup(base, name)
        files.append(record_run(recorder, [*PY, str(POOL), str(base), plan], out / f"{name}.parquet",
                                "good" if name.startswith("good") else "bad"))
    fresh_dir(base)
    base.rmdir()
    return files


def _missing_part3(base: Path, name: str) -> None:
    if name == "bad_missing":
        (base / "in" / "3.dat").unlink()


@pytest.fixture(scope="module")
def pool_traces(recorder, tmp_path_factory):
    out = tmp_path_factory.mktemp("pool")
    names = ["good0", "good1", "good2", "perm_first", "perm_across", "bad_new_path", "bad_missing"]
    plans = [GOOD_PLAN, GOOD_PLAN, GOOD_PLAN,
             "1,0 3,2 5,4",        # every worker begins with a read: no good worker did
             "0,3 2,5 4,1",        # parts moved between workers
             "0,1 2,3 4,override,5",  # a path no good worker took
             "1,0 3,2 5,4"]        # permuted, and part 3's input is missing
    files = _pool_runs(recorder, out, list(zip(names, plans, strict=True)), _missing_part3)
    return dict(zip(names, files, strict=True))


@pytest.mark.parametrize("name", ["good2", "perm_first", "perm_across"])
def test_work_permuted_between_workers_is_quiet(pool_traces, name):
    """Parts taken by other workers, in another order, than in the good runs: timing."""
    report = diff_traces(good=[pool_traces["good0"], pool_traces["good1"]], bad=pool_traces[name])
    assert not report.anomaly, report.render_text()


def test_a_path_no_worker_took_is_named(pool_traces):
    report = diff_traces(good=[pool_traces["good0"], pool_traces["good1"]], bad=pool_traces["bad_new_path"])
    bif = report.bifurcation
    assert bif is not None and bif["probe"] == "openat" and bif["errno"] is None
    assert bif["path"].endswith("/in/override.cfg"), bif


def test_a_new_errno_in_a_permuted_worker_is_named(pool_traces):
    report = diff_traces(good=[pool_traces["good0"], pool_traces["good1"]], bad=pool_traces["bad_missing"])
    bif = report.bifurcation
    assert bif is not None and bif["errno"] == "ENOENT" and bif["path"].endswith("/in/3.dat"), bif

"""Round twenty: what the round20 battery found, each a defect of main shown by a real run (no
mocks; real processes holding real flocks, real recordings, real spools and day files).

- a lock held by a stopped process (Ctrl-Z, SIGSTOP): `baseline allowlist learn -o LIST` waited
  on the list directory's flock with nothing said, for as long as the holder lived; the dataset
  lock's timeout said "held by another run" without naming it;
- `tracer record -- DIR` (a directory) or a file without execute permission ended 127, where a
  shell says 126 (found, cannot run); a script whose #! interpreter is missing ended 126 with
  "No such file or directory" about a file that exists, where a shell says 127;
- `baseline diff X X` (the same recording as good and as bad: one file twice, a copy, a glob
  of GOOD that caught BAD) said "no anomaly", exit 0: a trace is always explained by itself;
- a counters row with failures above its invocations, or an errno histogram summing to more
  than its failures, was ingested: every reader then saw a failure rate over 1;
- a date whose day-0000.parquet was removed by hand: ingest's manifest lookup looked only for
  day-0000, so the re-sent snapshots of every host in day-0001.. were ingested again (each of
  their rows read twice).
The wider battery is `bench/robust_battery.py --group round20`."""

from __future__ import annotations

import datetime as dt
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_harness import one_line_error
from test_bad_inputs import PROGRAM, _events, _write
from test_ingest import T0, write_snapshot

from baseline.pipeline.ingest import LOCK_NAME, compact_days, dataset_lock, ingest_spool
from tracer.errors import TracebaseError
from tracer.schema import dataset_files, read

REPO = Path(__file__).resolve().parents[1]
BASELINE = [sys.executable, "-m", "baseline.cli"]
TRACER = [sys.executable, "-m", "tracer.cli"]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
LATER = dt.date(2026, 11, 28)  # T0 (2026-11-25) three days before: a closed day
# a process that takes an exclusive flock on argv[1] (a file or a directory), says so, and holds it
HOLDER = ("import fcntl, os, sys, time\n"
          "fd = os.open(sys.argv[1], os.O_RDONLY | (os.O_DIRECTORY if os.path.isdir(sys.argv[1]) else 0))\n"
          "fcntl.flock(fd, fcntl.LOCK_EX)\n"
          "print('held', flush=True)\n"
          "time.sleep(600)\n")


def _hold(path: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def _release(holder: subprocess.Popen) -> None:
    holder.send_signal(signal.SIGCONT)
    holder.kill()
    holder.wait()


def _traces(tmp_path: Path) -> tuple[Path, Path]:
    good = _write(_events("g1", PROGRAM, 11), tmp_path / "good.parquet")
    bad = _write(_events("b1", PROGRAM[:6] + [("openat", -2, "ENOENT", "/srv/job/data/rows.jsonl"),
                                              ("exit_group", 1, None, None)], 30), tmp_path / "bad.parquet")
    return good, bad


def test_allowlist_learn_waiting_on_a_stopped_holder_names_it_then_finishes(tmp_path):
    """The merge lock (a flock on the list's directory) held by a stopped process: within a few
    seconds one line names the holder's pid and says it is stopped; once the holder lets go the
    learn finishes as usual. main waited with nothing on stderr."""
    good, _ = _traces(tmp_path)
    lists = tmp_path / "lists"
    lists.mkdir()
    holder = _hold(lists)
    holder.send_signal(signal.SIGSTOP)
    try:
        learn = subprocess.Popen([*BASELINE, "allowlist", "learn", str(good), "-o", str(lists / "learned.yaml")],
                                 cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([learn.stderr], [], [], 60)
        line = learn.stderr.readline() if ready else ""
        assert f"pid {holder.pid}" in line and "stopped" in line and "waiting" in line, line
        assert learn.poll() is None  # still waiting, within its bound
    finally:
        _release(holder)
    out, err = learn.communicate(timeout=120)
    assert learn.returncode == 0, err
    assert "Traceback" not in err and not err.strip(), err  # the one waiting line was all
    assert (lists / "learned.yaml").is_file()


def test_the_dataset_lock_past_its_bound_names_its_holder(tmp_path):
    """An ingest, tidy or audit that gives up on the dataset lock says who holds it (a pid and
    its command line), not "another run"."""
    dataset = tmp_path / "ds"
    dataset.mkdir()
    (dataset / LOCK_NAME).touch()
    holder = _hold(dataset / LOCK_NAME)
    try:
        started = time.monotonic()
        with pytest.raises(TracebaseError) as info, dataset_lock(dataset, exclusive=False, timeout_s=1.0):
            pass
        assert time.monotonic() - started < 30
        assert f"pid {holder.pid}" in str(info.value) and "within 1 s" in str(info.value), info.value
    finally:
        _release(holder)
    with dataset_lock(dataset, exclusive=True, timeout_s=5.0) as held:  # released with the holder
        assert held


def _can_record() -> str | None:
    if os.geteuid() != 0:
        return "recording needs root"
    probe = subprocess.run([sys.executable, "-c", "import tracer.privilege as p; p.load_bcc()"], env=ENV,
                           capture_output=True, timeout=120)
    return None if probe.returncode == 0 else "bcc is not importable here"


@pytest.mark.parametrize("what, status", [("a directory", 126), ("a file without execute permission", 126),
                                          ("a script whose interpreter is missing", 127)])
def test_record_of_a_command_that_cannot_run_exits_as_a_shell_does(tmp_path, what, status):
    """126 when the command is found but cannot run, 127 when what it needs is not found (bash
    and dash alike), one line, no trace written."""
    if (why := _can_record()) is not None:
        print(f"skipped: {why}")
        pytest.skip(why)
    if what == "a directory":
        cmd = tmp_path / "bin"
        cmd.mkdir()
    elif what == "a file without execute permission":
        cmd = tmp_path / "job.sh"
        cmd.write_text("#!/bin/sh\nexit 0\n")
        cmd.chmod(0o644)
    else:
        cmd = tmp_path / "job.sh"
        cmd.write_text("#!/nonexistent/interpreter\nexit 0\n")
        cmd.chmod(0o755)
    shell = subprocess.run(["sh", "-c", f"'{cmd}'"], capture_output=True, timeout=30)
    assert shell.returncode == status  # what the shell itself says
    out = tmp_path / "run.parquet"
    proc = subprocess.run([*TRACER, "record", "-o", str(out), "--", str(cmd)], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=120)
    err = one_line_error(proc, status)
    assert str(cmd) in err, err
    assert not out.exists()


@pytest.mark.parametrize("how", ["the same file", "a copy"])
def test_diff_refuses_a_trace_given_as_good_and_as_bad(tmp_path, how):
    """The bad trace among the good ones: one line naming it, exit 2 (main: "no anomaly", 0)."""
    good, bad = _traces(tmp_path)
    given = bad
    if how == "a copy":
        given = tmp_path / "copy.parquet"
        shutil.copy(bad, given)
    proc = subprocess.run([*BASELINE, "diff", str(good), str(given), str(bad)], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=120)
    err = one_line_error(proc)
    assert "'b1'" in err and "GOOD" in err and str(bad) in err, err
    # the other way round too: BAD given as the only GOOD
    proc = subprocess.run([*BASELINE, "diff", str(good), str(good)], cwd=tmp_path, env=ENV, capture_output=True,
                          text=True, timeout=120)
    assert "'g1'" in one_line_error(proc)
    # and the normal diff is untouched
    proc = subprocess.run([*BASELINE, "diff", str(good), str(bad)], cwd=tmp_path, env=ENV, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr


@pytest.mark.parametrize("probes, column", [
    ({"ib_uverbs_reg_mr": (3, 5, {"EFAULT": 5})}, "failures"),
    ({"ib_uverbs_reg_mr": (10, 1, {"EFAULT": 1, "ENOMEM": 2})}, "errno_counts"),
])
def test_ingest_quarantines_counts_no_interval_can_hold(tmp_path, probes, column):
    """failures > invocations, or errno counts summing above failures, in one row: the snapshot
    is quarantined naming the file, the column and the row's probe; the others go in."""
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    write_snapshot(spool, "host000", T0, 0)
    odd = write_snapshot(spool, "host001", T0, 0, probes=probes)
    result = ingest_spool(spool, dataset, quarantine)
    assert len(result.quarantined) == 1, result
    reason = result.quarantined[0]["reason"]
    assert f"column '{column}'" in reason and "ib_uverbs_reg_mr" in reason and odd.name in reason, reason
    counters = read(dataset_files(dataset, "counters"), "counters")
    assert (counters["failures"] <= counters["invocations"]).all()
    assert set(counters["host"]) == {"host000"}


def test_ingest_still_takes_a_counter_reset(tmp_path):
    """A negative delta is a counter reset (tracer.schema.counted_delta): failures above a
    negative invocations, or a histogram beside a negative failures, is not judged."""
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    write_snapshot(spool, "host000", T0, 0, probes={"ib_uverbs_reg_mr": (-40, 2, {"EFAULT": 2}),
                                                    "mlx5_ib_reg_user_mr": (5, -3, {"EFAULT": 1})})
    result = ingest_spool(spool, dataset, quarantine)
    assert not result.quarantined and result.snapshots == 1, result


def test_a_date_whose_first_day_file_was_removed_by_hand_takes_no_snapshot_twice(tmp_path):
    """Five hosts in three day files; day-0000 removed by hand; the whole spool sent again: the
    hosts of the day files left are found by their manifests (nothing of theirs twice); the
    hosts whose file was removed come back from the spool, once."""
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    for s in range(2):
        for h in range(5):
            write_snapshot(spool, f"host{h:03d}", T0 + dt.timedelta(seconds=5 * s), s)
    ingest_spool(spool, dataset, quarantine, remove_ingested=False)
    done = compact_days(dataset, days_after=2, today=LATER, file_rows=3)
    date_dir = dataset / "events" / "date=2026-11-25"
    assert done.days == 1 and done.day_files_out >= 2, done
    first = date_dir / "day-0000.parquet"
    gone = set(pq.read_table(first, columns=["host"]).column("host").to_pylist())
    first.unlink()
    again = ingest_spool(spool, dataset, quarantine, remove_ingested=False)
    events = read(dataset_files(dataset, "events"), "events")
    keys = events.select(["host", "trace_id", "seq"])
    assert keys.is_unique().all(), keys.filter(keys.is_duplicated())
    assert set(events["host"]) == {f"host{h:03d}" for h in range(5)}
    assert again.snapshots == 2 * len(gone), again  # the removed hosts' snapshots, nothing else


def test_a_date_on_a_mount_of_its_own_is_left_per_host_and_the_others_compacted(tmp_path):
    """One closed date bind-mounted read-only (kept on another volume): its swap fails with
    EBUSY. main raised it, so no other date was compacted, on every run; now that date is
    left per host, said in days_left, and the other date is compacted."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        why = "a bind mount needs root and mount(8)"
        print(f"skipped: {why}")
        pytest.skip(why)
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    for day in (0, 1):
        for h in range(2):
            write_snapshot(spool, f"host{h:03d}", T0 - dt.timedelta(days=day), 0)
    ingest_spool(spool, dataset, quarantine)
    mounted = dataset / "events" / "date=2026-11-24"
    before = sorted(p.relative_to(mounted) for p in mounted.rglob("*"))
    subprocess.run(["mount", "--bind", str(mounted), str(mounted)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mounted)], check=True)
        done = compact_days(dataset, days_after=2, today=LATER)
        assert done.days == 1 and (dataset / "events" / "date=2026-11-25" / "day-0000.parquet").is_file(), done
        assert len(done.days_left) == 1 and "date=2026-11-24" in done.days_left[0], done.days_left
        assert sorted(p.relative_to(mounted) for p in mounted.rglob("*")) == before
        assert not [p for p in dataset.iterdir() if p.name.startswith(".compact")]
    finally:
        subprocess.run(["umount", "-l", str(mounted)], check=False)
    assert read(dataset_files(dataset, "events"), "events").height == 8

"""Round fifteen: robust14's leftovers and what the round15 battery found, each a defect of
main shown by a real run (no mocks).

- spills of separate `tracer run`s into $TMPDIR/tracebase-spool kept each run's own sequence
  numbers, so the spill read back with the runs interleaved;
- a compaction killed mid-swap left its hidden staging partition inside the table directory,
  where the documented glob (`dataset/events/**/*.parquet`) found it: polars' scan failed on it;
- the test harness's port lock files stayed in /tmp/tracebase-ports forever.
The wider battery is `bench/robust_battery.py --group round15`."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}


def _held_daemon(spool: Path, host: str, whens: list[int]):
    """A fleet daemon (no BPF: its spool side only) holding one interval per `whens`, numbered
    from 0 as a fresh run numbers them."""
    from tracer.fleet.daemon import Daemon as FleetDaemon
    from tracer.fleet.daemon import HeldSnapshot, RunConfig
    from tracer.fleet.spool import counters_table, events_table

    d = FleetDaemon(RunConfig(sets=["syscalls"], spool=spool, host=host, log=io.StringIO()))
    d.prepare()
    for seq, when in enumerate(whens):
        counters = counters_table([{"host": host, "snapshot_time": when, "interval_s": 5.0, "probe": "openat",
                                    "layer": "syscall", "live": True, "invocations": int(when % 10**6), "failures": 0}])
        d.held.append(HeldSnapshot(events_table([]), counters, when, seq))
    d._seq = len(whens)
    return d


def test_spills_of_separate_runs_read_back_run_after_run(tmp_path, monkeypatch):
    """Each run's held intervals were spilled under that run's own numbers 0, 1, ...: a second
    run's spill sat beside the first's with the same numbers, and the spool's readers (sequence
    order) gave run 1 #0, run 2 #0, run 1 #1, ... Now a spill numbers its intervals after the
    highest already there: the second run reads after the first, each in its own order."""
    from tracer.fleet.spool import list_snapshots, read_spool

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    t0 = 1_764_900_000_000_000_000
    first = [t0 + k * 5 * 10**9 + 1 for k in range(3)]
    second = [t0 + 60 * 10**9 + k * 5 * 10**9 + 2 for k in range(3)]  # a later run, the same host
    for k, whens in enumerate((first, second)):
        d = _held_daemon(tmp_path / f"spool{k}", "h1", whens)
        try:
            spilled = d.spill_held()
        finally:
            d.close()
        assert spilled == tmpdir / "tracebase-spool" and not d.held
    seqs = [int(p.name.rsplit("-", 1)[1]) for p in list_snapshots(tmpdir / "tracebase-spool", "h1")]
    assert seqs == list(range(6)), seqs
    got = read_spool(tmpdir / "tracebase-spool", "counters", "h1")["invocations"].to_list()
    assert got == [w % 10**6 for w in first + second], got
    assert not (tmp_path / "tracebase-spool").exists()  # nothing went to the cwd fallback


# a compaction killed with -9 at a chosen point of its swap: the process kills itself there
_KILLED_COMPACTION = """
import os, signal, sys
from baseline.pipeline import ingest

real = ingest.atomic.exchange
def exchange(a, b):
    if sys.argv[2] == "after":
        real(a, b)
    os.kill(os.getpid(), signal.SIGKILL)
ingest.atomic.exchange = exchange
ingest.compact_dataset(sys.argv[1], min_files=2)
"""


def _three_ingests(tmp_path: Path) -> Path:
    """A dataset whose host partition holds three small part files (three ingest runs)."""
    from baseline.pipeline.ingest import ingest_spool
    from tracer.fleet.spool import counters_table, events_table, write_snapshot

    spool, dataset = tmp_path / "spool", tmp_path / "ds"
    t0 = 1_764_900_000_000_000_000
    for seq in range(3):
        when = t0 + seq * 5 * 10**9
        counters = counters_table([{"host": "h1", "snapshot_time": when, "interval_s": 5.0, "probe": "openat",
                                    "layer": "syscall", "live": True, "invocations": seq + 1, "failures": 0}])
        write_snapshot(spool, "h1", events_table([]), counters, when, seq, durable=False)
        ingest_spool(spool, dataset, tmp_path / "q")
    assert len(list((dataset / "counters").glob("date=*/host=h1/part-*.parquet"))) == 3
    return dataset


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_compaction_killed_mid_swap_leaves_nothing_the_documented_glob_finds(tmp_path, when):
    """Killed with -9 before or after its swap, a compaction left its hidden staging partition
    (date=D/.host=H.<pid>-<hex>.tmp/host=H/part-*.parquet) in the table directory. The glob
    docs/airflow.md gives readers (`dataset/counters/**/*.parquet`) descends into it: polars'
    hive scan failed ('.host' not in the Hive schema) until the next ingest. The staging tree
    is now at the dataset's top, outside every table, and the next run removes it."""
    import polars as pl

    dataset = _three_ingests(tmp_path)
    proc = subprocess.run([sys.executable, "-c", _KILLED_COMPACTION, str(dataset), when], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=ENV)
    assert proc.returncode == -9, proc.stderr[-800:]
    got = {table: pl.scan_parquet(str(dataset / table / "**" / "*.parquet"),  # as docs/airflow.md reads it
                                  hive_schema={"date": pl.Date, "host": pl.String}).collect()
           for table in ("events", "counters")}
    assert sorted(got["counters"]["invocations"].to_list()) == [1, 2, 3] and got["events"].height == 0
    hidden = [p for p in dataset.rglob("*") if p.name.startswith(".") and p.name.endswith(".tmp")]
    assert hidden and all(p.parent == dataset for p in hidden), hidden  # the kill did leave one, up here
    from baseline.pipeline.ingest import compact_dataset

    compact_dataset(dataset, min_files=2)
    assert not [p for p in dataset.rglob("*") if p.name.endswith(".tmp")]
    (merged,) = (dataset / "counters").glob("date=*/host=h1/part-*.parquet")
    assert sorted(pl.read_parquet(merged)["invocations"].to_list()) == [1, 2, 3]


_SESSION = """
import os, sys
sys.path.insert(0, sys.argv[1])
from scenarios import harness
opened = []
for fd in os.listdir("/proc/self/fd"):
    try:
        opened.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:  # the listing's own descriptor, closed by now
        pass
print(",".join(map(str, harness.PORTS)), "|".join(opened), flush=True)
sys.stdin.read()  # holds its ports until told to end
"""


def test_the_scenario_ports_are_reserved_without_leaving_lock_files(tmp_path):
    """The scenario harness reserved its loopback ports (15 then; 16 since round nineteen, 18 since round twenty-three) with lock files in
    /tmp/tracebase-ports, one per port, never removed (thousands after a few sessions). Now the
    lock is a socket with an abstract name: no file is made, another session cannot take the
    ports while the holder lives, and they are free again once it is killed with -9."""
    tests = str(REPO / "tests")
    holder = subprocess.Popen([sys.executable, "-c", _SESSION, tests], cwd=tmp_path, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        ports, opened = holder.stdout.readline().split(" ", 1)
        ports = [int(p) for p in ports.split(",")]
        assert len(ports) == 18
        assert not [f for f in opened.split("|") if "tracebase-ports" in f], opened
        probe = ("import sys; sys.path.insert(0, sys.argv[1]); from scenarios import harness; "
                 "print(harness._reserve(range(int(sys.argv[2]), int(sys.argv[2]) + 1)) is not None)")
        taken = subprocess.run([sys.executable, "-c", probe, tests, str(ports[3])], capture_output=True, text=True,
                               timeout=120, env=ENV)
        assert taken.stdout.strip() == "False", (taken.stdout, taken.stderr[-500:])
    finally:
        holder.kill()
        holder.wait()
    free = subprocess.run([sys.executable, "-c", probe, tests, str(ports[3])], capture_output=True, text=True,
                          timeout=120, env=ENV)
    assert free.stdout.strip() == "True", (free.stdout, free.stderr[-500:])


def test_two_allowlist_learns_into_one_list_keep_both_runs_entries(tmp_path):
    """Two `allowlist learn -o LIST` runs of different good traces, started together: each read
    the list, merged its own entries and renamed its copy over the other's. Both exited 0
    saying "1 added" and one run's entry was gone (6 of 6 pairs by hand). The read-merge-write
    now holds an flock on the list's directory: the second merges into the first's result."""
    from test_bad_inputs import PROGRAM, _events, _write

    runs = []
    for name in ("a", "b"):
        program = PROGRAM[:3] + [("openat", -2, "ENOENT", f"/etc/job/{name}.conf")] + PROGRAM[3:]
        runs.append([str(_write(_events(f"{name}{i}", program, 10 + i), tmp_path / f"{name}{i}.parquet"))
                     for i in (1, 2)])
    out = tmp_path / "learned.yaml"
    for trial in range(3):
        out.unlink(missing_ok=True)
        procs = [subprocess.Popen([sys.executable, "-m", "baseline.cli", "allowlist", "learn", *good, "-o", str(out)],
                                  cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
                 for good in runs]
        errs = [p.communicate(timeout=300)[1] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], errs
        text = out.read_text()
        assert "/etc/job/a.conf" in text and "/etc/job/b.conf" in text, (trial, text)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a1.parquet", "a2.parquet", "b1.parquet", "b2.parquet",
                                                         "learned.yaml"]  # no lock file beside it

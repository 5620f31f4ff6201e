"""kill -9 of `baseline ingest` at random points, then a rerun: no row lost, none duplicated, no
temporary left, nothing quarantined. Ingest and compaction are both hit (the second batch of
each trial lands in partitions that already hold a file, so that run compacts too)."""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_ingest import T0, write_snapshot

from tracer.schema import dataset_files, read

HOSTS, SNAPSHOTS, TRACES = 6, 12, 3


def spool_batch(spool: Path, start: dt.datetime, seq0: int) -> int:
    """HOSTS x SNAPSHOTS snapshots of TRACES two-frame call trees; returns the events rows."""
    for h in range(HOSTS):
        for s in range(SNAPSHOTS):
            write_snapshot(spool, f"host{h:03d}", start + dt.timedelta(seconds=5 * s), seq0 + s, traces=TRACES)
    return HOSTS * SNAPSHOTS * TRACES * 2


def ingest_cmd(root: Path, workers: int) -> list[str]:
    return [sys.executable, "-m", "baseline.cli", "ingest", str(root / "spool"), str(root / "ds"),
            "--quarantine", str(root / "q"), "--compact-min-files", "2", "-j", str(workers)]


def run_and_kill(cmd: list[str], after_s: float) -> bool:
    """Start cmd, SIGKILL it after `after_s` seconds; True when the kill landed mid-run."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        proc.wait(timeout=after_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the pool's workers too (-j 2)
        proc.wait()
        return True
    assert proc.returncode == 0, proc.stderr.read().decode()
    return False


def temporaries(root: Path) -> list[Path]:
    return [p for p in root.rglob(".*") if p.name.endswith(".tmp") and "spool" not in p.parts]


@pytest.fixture(scope="module")
def full_run_s(tmp_path_factory) -> float:
    """Wall time of one uninterrupted run on a batch (the window the kills are drawn from)."""
    root = tmp_path_factory.mktemp("ingest-timing")
    spool_batch(root / "spool", T0, 0)
    t = time.monotonic()
    subprocess.run(ingest_cmd(root, 1), check=True, capture_output=True)
    return time.monotonic() - t


@pytest.mark.parametrize("trial", range(3))
def test_kill_9_loses_and_duplicates_nothing(tmp_path, full_run_s, trial):
    rng = random.Random(1000 + trial)
    workers = 1 + trial % 2
    expected = 0
    killed = 0
    for batch in range(2):
        expected += spool_batch(tmp_path / "spool", T0 + dt.timedelta(minutes=5 * batch), 100 * batch)
        killed += run_and_kill(ingest_cmd(tmp_path, workers), rng.uniform(0.2, 1.1) * full_run_s)
        subprocess.run(ingest_cmd(tmp_path, workers), check=True, capture_output=True)  # the next scheduled run
        events = read(dataset_files(tmp_path / "ds", "events"), "events")
        assert events.height == expected, f"batch {batch}: {events.height} rows, expected {expected}"
        assert events.select("trace_id", "seq").is_unique().all()
        counters = read(dataset_files(tmp_path / "ds", "counters"), "counters")
        assert counters.height == expected // (TRACES * 2) * 2  # two probes per snapshot
        assert temporaries(tmp_path) == []
        assert not list((tmp_path / "spool").rglob("snap-*"))
        assert not (tmp_path / "q").exists() or not any((tmp_path / "q").rglob("*"))
    print(f"trial {trial}: {killed} of 2 kills landed mid-run (full run {full_run_s:.2f} s)")

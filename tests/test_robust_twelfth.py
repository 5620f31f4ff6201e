"""Round twelve: kill -9 at exact instants, and what a forked child shares with its parent.

- Compaction killed at every step (each rename, swap, unlink and tree removal, driven by a
  counter in the killed process, not by a timer): readers of what is left see every row once
  (in place, the merged file and its inputs were both visible until the next ingest: rows
  counted twice), the summaries they use match their counters files, and the next run leaves
  what an uninterrupted one leaves (a kill between a compacted input's deletion and its
  summary's left that summary for good; one before the merged file's summary, none ever).
- The same for ingest (round eleven's "kill late in an ingest" case): each part file and its
  summary renamed in, the snapshots removed, the watermark; the rerun converges.
- Compaction keeps whatever else is in the partition (its swap carries it over).
- ingest -j 2 with both workers inside an atomic write: SIGTERM to the parent (the pool then
  SIGTERMs its workers) leaves no temporary, exit 143; SIGINT to the process group (Ctrl-C)
  prints no worker traceback, exit 130; kill -9 of the parent alone (the OOM killer's way)
  ends the workers at once, leaving no temporary and the dataset lock free.
- A pool worker killed (the OOM killer): one line and exit 2, not a hang holding the lock.
- A forked child's tracer.atomic.abandon_pending leaves the parent's temporaries alone.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_ingest import T0, write_snapshot

from baseline.pipeline.ingest import compact_dataset, ingest_spool
from tracer import atomic
from tracer.schema import counter_buckets_for, counter_buckets_of, dataset_files, read

REPO = Path(__file__).resolve().parents[1]
SNAPSHOTS, TRACES = 3, 2  # per batch; two frames per trace, two probes per snapshot

# Compaction killed at its Nth step, counting every rename and swap (after it) and every unlink
# and tree removal (before it). One process imports the code and forks one child per trial
# (argv: N DATASET pairs; N = 0 runs through and prints the number of steps), so a trial costs
# a fork, not an interpreter start; nothing runs polars or Arrow before the forks.
_KILL_AT_STEP = r"""
import json, os, pathlib, shutil, signal, sys
from tracer import atomic
from baseline.pipeline import ingest
steps = [0, 0]  # (steps taken, the step to die at)
def step():
    steps[0] += 1
    if steps[0] == steps[1]:
        os.kill(os.getpid(), signal.SIGKILL)
def after(fn):
    def wrapped(*a, **k):
        out = fn(*a, **k)
        step()
        return out
    return wrapped
phase = sys.argv[1]  # "compact": compact_dataset(DATASET); "ingest": ingest_spool(DATASET/../spool, DATASET)
def before(fn):
    def wrapped(*a, **k):
        if phase == "compact":  # (an ingest's removals are the spool's snapshots: renames only)
            step()
        return fn(*a, **k)
    return wrapped
os.replace = after(os.replace)
if hasattr(atomic, "exchange"):  # (a partition swap: round twelve)
    atomic.exchange = after(atomic.exchange)
pathlib.Path.unlink = before(pathlib.Path.unlink)
os.unlink = before(os.unlink)
shutil.rmtree = before(shutil.rmtree)
status = {}
for target, dataset in zip(sys.argv[2::2], sys.argv[3::2]):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        steps[1] = int(target)
        if phase == "compact":
            ingest.compact_dataset(dataset, min_files=2)
        else:
            root = pathlib.Path(dataset).parent
            ingest.ingest_spool(root / "spool", dataset, root / "q")
        os.write(w, str(steps[0]).encode())
        os._exit(0)
    os.close(w)
    _, code = os.waitpid(pid, 0)
    status[target] = [os.waitstatus_to_exitcode(code), os.read(r, 64).decode()]
    os.close(r)
print(json.dumps(status))
"""


def _kill_at_steps(trials: dict[int, Path], phase: str = "compact") -> dict[str, list]:
    proc = subprocess.run([sys.executable, "-c", _KILL_AT_STEP, phase,
                           *(str(x) for n, ds in trials.items() for x in (n, ds))],
                          env=_env(), cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}


def _batches(root: Path) -> int:
    """A dataset whose partitions hold two part files each (two ingests, compaction off);
    returns the events rows."""
    for batch in range(2):
        for s in range(SNAPSHOTS):
            write_snapshot(root / "spool", "host000", T0 + dt.timedelta(minutes=5 * batch, seconds=5 * s),
                           10 * batch + s, traces=TRACES)
        ingest_spool(root / "spool", root / "ds", root / "q")
    return 2 * SNAPSHOTS * TRACES * 2


def _visible(ds: Path) -> dict[str, str]:
    """What a reader sees, by content: each visible Parquet file's rows (order-free), other
    files' bytes; the watermark's run time left out."""
    seen = {}
    for p in sorted(ds.rglob("*")):
        rel = p.relative_to(ds)
        if any(part.startswith(".") for part in rel.parts) or not p.is_file():
            continue
        if p.suffix == ".parquet":
            rows = sorted(json.dumps(r, sort_keys=True, default=str) for r in pq.read_table(p).to_pylist())
            seen[str(rel)] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
        elif p.name == "_ingest_watermark.json":
            seen[str(rel)] = json.loads(p.read_text())["committed_until"]
        else:
            seen[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return seen


def _readers_see_whole_data(ds: Path, events_rows: int, complete: bool = False) -> None:
    """Every row once; the summaries readers use match; `complete`: every counters file has one."""
    events = read(dataset_files(ds, "events"), "events").height
    assert events == events_rows, f"{events} events rows, expected {events_rows}"
    counters_files = dataset_files(ds, "counters")
    if complete:
        assert all(counter_buckets_for(f) is not None for f in counters_files), "a counters file without its summary"
    counters, want_counters = read(counters_files, "counters").height, events_rows // (TRACES * 2) * 2
    assert counters == want_counters, f"{counters} counters rows, expected {want_counters}"
    for f in counters_files:  # a summary a reader would use says what its counters file says
        found = counter_buckets_for(f)
        if found is not None:
            want = counter_buckets_of(pq.read_table(f), host="host000").drop("host")
            got = read([found[0]], "counter_buckets").drop("host")
            assert got.sort(got.columns[:3]).equals(want.sort(want.columns[:3])), f


@pytest.mark.parametrize("phase", ["compact", "ingest"])
def test_killed_at_every_step(tmp_path, phase):
    """compact: a dataset of two part files per partition compacted; ingest: the second batch
    ingested (each part file renamed in, then its summary; the spool's snapshots removed; the
    watermark) -- round eleven's "kill late in an ingest, counter_buckets" case, step by step."""
    base = tmp_path / "base"
    rows = _batches(base)
    if phase == "ingest":  # the second batch back in the spool, the dataset holding the first
        shutil.rmtree(base / "ds")
        for s in range(SNAPSHOTS):
            write_snapshot(base / "spool", "host000", T0 + dt.timedelta(seconds=5 * s), s, traces=TRACES)
        ingest_spool(base / "spool", base / "ds", base / "q")
        for s in range(SNAPSHOTS):
            write_snapshot(base / "spool", "host000", T0 + dt.timedelta(minutes=5, seconds=5 * s), 10 + s, traces=TRACES)
    clean = tmp_path / "clean"
    shutil.copytree(base, clean)
    code, steps = _kill_at_steps({0: clean / "ds"}, phase)["0"]
    assert code == 0
    if phase == "compact":
        assert any("part-c-" in p for p in _visible(clean / "ds"))  # it compacted
    compact_dataset(clean / "ds", min_files=2)  # (the next scheduled run's compaction)
    want = _visible(clean / "ds")
    _readers_see_whole_data(clean / "ds", rows, complete=True)
    steps = int(steps)
    assert steps >= 4
    trials = {n: tmp_path / f"k{n}" for n in range(1, steps + 1)}
    for trial in trials.values():
        shutil.copytree(base, trial)
    status = _kill_at_steps({n: trial / "ds" for n, trial in trials.items()}, phase)
    failures = []
    for n, trial in trials.items():
        assert status[str(n)][0] == -signal.SIGKILL, status
        if phase == "compact":  # (an ingest killed half-way has fewer rows: counted after the rerun)
            try:
                _readers_see_whole_data(trial / "ds", rows)
            except AssertionError as exc:
                failures.append(f"step {n} of {steps}, before the rerun: {exc}")
        ingest_spool(trial / "spool", trial / "ds", trial / "q")  # the next scheduled run
        compact_dataset(trial / "ds", min_files=2)
        try:
            _readers_see_whole_data(trial / "ds", rows, complete=True)
        except AssertionError as exc:
            failures.append(f"step {n} of {steps}, after the rerun: {exc}")
        got = _visible(trial / "ds")
        debris = [str(p.relative_to(trial)) for p in trial.rglob(".*") if p.name.endswith(".tmp")]
        if got != want or debris:
            differ = sorted(p for p in set(want) | set(got) if want.get(p) != got.get(p))
            failures.append(f"step {n} of {steps}, after the rerun: differ {differ}, debris {debris}")
    assert not failures, "\n".join(failures)


def test_compaction_keeps_what_else_is_in_the_partition(tmp_path):
    """The swapped-in partition carries every other entry over (a file another tool put there,
    a big part file not merged, a symlink); a directory there makes it compact in place."""
    _batches(tmp_path)
    part = tmp_path / "ds" / "events" / "date=2026-11-25" / "host=host000"
    (part / "notes.txt").write_text("an operator's note")
    (part / "link.txt").symlink_to("notes.txt")
    (tmp_path / "ds" / "counters" / "date=2026-11-25" / "host=host000" / "subdir").mkdir()
    compact_dataset(tmp_path / "ds", min_files=2)
    assert (part / "notes.txt").read_text() == "an operator's note" and os.readlink(part / "link.txt") == "notes.txt"
    assert (tmp_path / "ds" / "counters" / "date=2026-11-25" / "host=host000" / "subdir").is_dir()
    assert len(dataset_files(tmp_path / "ds", "events")) == len(dataset_files(tmp_path / "ds", "counters")) == 1
    _readers_see_whole_data(tmp_path / "ds", 2 * SNAPSHOTS * TRACES * 2, complete=True)


# Run as the `baseline ingest` process: every host's part file is written by a worker that
# stops inside its atomic write (temporary open, some bytes in), after saying so in argv[1].
_STUCK_INGEST = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as a foreground job hears Ctrl-C
from baseline.pipeline import ingest
from tracer import atomic
from tracer.schema import partition_path
ready = sys.argv[1]
def stuck(data, root, table, date, host, name, **kw):
    with atomic.atomic_output(partition_path(root, table, date, host, name)) as fh:
        fh.write(b"PAR1")
        fh.flush()
        open(os.path.join(ready, str(os.getpid())), "w").close()
        time.sleep(30)
ingest.write_partition = stuck
from baseline.cli import entry
sys.argv = ["baseline", "ingest", *sys.argv[2:]]
entry()
"""


def _stuck_ingest(tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    for h in range(2):
        write_snapshot(tmp_path / "spool", f"host{h:03d}", T0, h)
    ready = tmp_path / "ready"
    ready.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", _STUCK_INGEST, str(ready), str(tmp_path / "spool"),
                             str(tmp_path / "ds"), "--quarantine", str(tmp_path / "q"), "-j", "2"],
                            env=_env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while len(os.listdir(ready)) < 2:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the workers never reached their writes"
        time.sleep(0.05)
    return proc, [int(p) for p in os.listdir(ready)]


def _gone(pids: list[int], within_s: float) -> list[int]:
    """The pids still running (not zombies) after up to `within_s` seconds."""
    deadline = time.monotonic() + within_s
    while True:
        alive = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        alive.append(pid)
            except FileNotFoundError:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def _temporaries(root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob(".*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("how", ["SIGTERM the parent", "SIGINT the group"])
def test_stopped_pool_workers_remove_their_temporaries(tmp_path, how):
    proc, workers = _stuck_ingest(tmp_path)
    if how == "SIGTERM the parent":
        proc.send_signal(signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGINT)
    try:
        err = proc.communicate(timeout=60)[1]
    finally:
        with_group = _gone(workers, 0)
        for pid in with_group:
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == (143 if "TERM" in how else 130), err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert _gone(workers, 10) == []
    assert _temporaries(tmp_path / "ds") == []


def test_pool_workers_end_with_a_parent_killed_alone(tmp_path):
    """kill -9 of the parent only (the OOM killer picks one process): the workers follow at
    once, unwinding (no temporary), and the dataset lock they inherited is free for the rerun."""
    proc, workers = _stuck_ingest(tmp_path)
    proc.kill()
    proc.wait()
    alive = _gone(workers, 10)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert alive == [], "orphaned workers ran on (holding the dataset lock)"
    assert _temporaries(tmp_path / "ds") == []
    result = ingest_spool(tmp_path / "spool", tmp_path / "ds", tmp_path / "q", lock_timeout_s=5)
    assert result.snapshots == 2 and result.quarantined == []


def test_a_killed_pool_worker_is_one_line_not_a_hang(tmp_path):
    """A worker the OOM killer takes: multiprocessing.Pool waited for its task for ever, the
    dataset lock held (every later ingest timed out on it). Now one line, exit 2, the other
    worker ended (its temporary removed), and the rerun ingests everything."""
    proc, workers = _stuck_ingest(tmp_path)
    os.kill(workers[0], signal.SIGKILL)
    try:
        err = proc.communicate(timeout=20)[1]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail("ingest -j 2 still running 20 s after one of its workers was killed")
    finally:
        for pid in _gone(workers, 0):
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 2 and "worker process died" in err and len(err.strip().splitlines()) == 1, err
    assert _gone(workers, 10) == []
    left = _temporaries(tmp_path / "ds")  # the killed worker's own (SIGKILL): the rerun removes it
    assert len(left) <= 1, left
    result = ingest_spool(tmp_path / "spool", tmp_path / "ds", tmp_path / "q", lock_timeout_s=5)
    assert result.snapshots == 2 and _temporaries(tmp_path / "ds") == []


def test_forked_child_leaves_the_parents_temporaries(tmp_path):
    """A child forked while the parent writes (a pool, an Airflow task runner) and then
    abandoning its pending temporaries (what the stop watchdog does) removed the parent's."""
    out = tmp_path / "out.bin"
    with atomic.atomic_output(out) as fh:
        fh.write(b"parent's data")
        pid = os.fork()
        if pid == 0:
            atomic.abandon_pending()
            os._exit(0)
        os.waitpid(pid, 0)
        fh.write(b", all of it")
    assert out.read_bytes() == b"parent's data, all of it"

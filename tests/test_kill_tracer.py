"""kill -9 and stop signals through the tracer's own writers, on the real CLIs (root + bcc;
need_bpf): `tracer record` killed while it writes its trace, then stopped by SIGTERM while it
writes the next one; `tracer run` killed while it spills the snapshots a full spool held, then
a second spill. After each, the readers (tracer.schema's, `baseline ingest`) take what is
there as whole data or not at all, and nothing a killed writer left stays behind. The kill
lands where it is meant to: the writer is frozen (SIGSTOP) once its temporary shows, the
temporary checked still there, and only then killed. The recorder's clean-up rule is also
tested without BPF, on temporaries real writers killed -9 left."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fleet_support import Daemon

from tracer.fleet.spool import list_snapshots
from tracer.schema import read, read_events, validate_file

REPO = Path(__file__).resolve().parents[1]
TRACER = [sys.executable, "-m", "tracer.cli"]
BASELINE = [sys.executable, "-m", "baseline.cli"]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}  # the tree under test, whatever the cwd
# ~190,000 syscalls in under a second: a trace whose write takes long enough to be caught in
BIG = "ls -lR /usr/share >/dev/null 2>&1"


def temporaries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


def size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # renamed into place meanwhile
        return 0


def frozen_while(proc: subprocess.Popen, found: Callable[[], list[Path]], timeout: float = 120) -> list[Path]:
    """Poll until found() lists something, then SIGSTOP proc and return what is still there
    (the writer cannot rename it meanwhile); [] when proc ended first."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if found():
            proc.send_signal(signal.SIGSTOP)
            still = found()
            if still:
                return still
            proc.send_signal(signal.SIGCONT)
        time.sleep(0.001)
    return []


def killed_mid_write(path: Path) -> None:
    """A real writer of `path` (tracer.atomic, as `tracer record` writes its trace) killed -9 with
    half its bytes written."""
    subprocess.run([sys.executable, "-c",
                    "import os\nfrom tracer.atomic import atomic_output\n"
                    f"with atomic_output({str(path)!r}) as fh:\n"
                    "    fh.write(b'PAR1' + bytes(4096)); fh.flush(); os.kill(os.getpid(), 9)\n"],
                   cwd=REPO, check=False)


def test_the_next_recording_removes_any_traces_temporary_its_writer_left(tmp_path):
    """The library rule without BPF: a recording to `next.parquet` removes the temporaries of
    other traces whose writer was killed, and keeps a live writer's, another user's and what is
    no trace's."""
    from tracer.record.output import remove_stale_temporaries

    killed_mid_write(tmp_path / "trace-sh-20261203T061052Z.parquet")
    killed_mid_write(tmp_path / "good1.parquet")
    killed_mid_write(tmp_path / "notes.txt")  # not a trace: not the recorder's to remove
    killed_mid_write(tmp_path / "theirs.parquet")
    dead = {p.name.split(".")[1]: p for p in temporaries(tmp_path)}
    assert len(dead) == 4
    kept = {"notes"}
    if os.geteuid() == 0:  # another user's, in a shared directory: theirs to remove
        os.chown(dead["theirs"], 65534, 65534)
        kept.add("theirs")
    live = tmp_path / f".good2.parquet.{os.getpid()}-0123abcd.tmp"  # ours: a writer still running
    live.write_bytes(b"PAR1")
    removed = remove_stale_temporaries(tmp_path / "next.parquet")
    assert sorted(p.name for p in removed) == sorted(p.name for k, p in dead.items() if k not in kept)
    assert [p.name for p in temporaries(tmp_path)] == sorted([live.name, *(dead[k].name for k in kept)])


def record(directory: Path, *argv: str, umask: int = 0o022) -> subprocess.Popen:
    return subprocess.Popen([*TRACER, "record", *argv], cwd=directory, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: os.umask(umask))


def test_record_killed_mid_write_then_stopped_mid_write(need_bpf, tmp_path):
    """A recorder killed -9 while writing its default-named trace (trace-sh-<UTC time>.parquet,
    a new name each run) left its temporary for good: only a recording of that same name
    removed it. The next recording into the directory, of another name, now removes it; a
    SIGTERM while that one writes its trace leaves it whole, with the command's exit status."""
    done = tmp_path / "done"
    proc = record(tmp_path, "--", "/bin/sh", "-c", f"{BIG}; touch {done}")
    try:
        # the command has ended: what shows now is the trace being written, part of it on disk
        caught = frozen_while(proc, lambda: [p for p in temporaries(tmp_path) if done.exists()
                                             and p.name.startswith(".trace-sh-") and size(p)])
        assert caught, f"the write was never caught: {proc.communicate()[1]}"
        proc.kill()
        proc.wait(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([caught[0].name, "done"])
    with pytest.raises(Exception, match="no .parquet files"):
        read_events(tmp_path)  # the readers see no trace, not a half one

    done.unlink()
    out = tmp_path / "t.parquet"
    proc = record(tmp_path, "-o", str(out), "--", "/bin/sh", "-c", f"{BIG}; touch {done}", umask=0o027)
    try:
        writing = frozen_while(proc, lambda: [p for p in temporaries(tmp_path) if done.exists()
                                              and p.name.startswith(".t.parquet.")])
        proc.send_signal(signal.SIGTERM)  # while the trace is written, if caught there
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    assert proc.returncode == 0, err  # the command's status: the stop did not cut the write short
    assert f"removed 1 stale temporary of a killed recording: {caught[0].name}" in err
    assert temporaries(tmp_path) == [], f"left behind: {temporaries(tmp_path)} (caught mid-write: {bool(writing)})"
    validate_file(out, "events")
    events = read_events(out)
    assert events.height > 100_000 and events["exit_status"][0] == 0
    assert out.stat().st_mode & 0o777 == 0o640  # the umask, after a kill as before


@contextlib.contextmanager
def full_tmpfs(where: Path):
    """A private 2 MiB tmpfs at `where`; fill() takes its last block (ENOSPC from then on)."""
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tracebase-test", str(where)], check=True)
    try:
        yield lambda: subprocess.run(["dd", "if=/dev/zero", f"of={where}/fill", "bs=4k", "count=1024"],
                                     capture_output=True, check=False)
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_spill_killed_mid_write_is_cleaned_by_the_next_spill(need_bpf, need_cc, tmp_path, monkeypatch):
    """`tracer run` whose spool filled up holds its snapshots and, stopped, spills them into
    $TMPDIR/tracebase-spool. One killed -9 during that spill left its half snapshot
    (.snap-*.tmp) there for good: no daemon starts on the spill (the start-up clean-up is the
    spool's), later spills passed it by and ingest skips hidden names. The next spill removes
    it, says so, and the spill reads back whole and ingests."""
    from fleet_support import build_fakeverbs, write_fake_set

    lib, _ = build_fakeverbs(tmp_path / "fv", need_cc)
    probe_set = write_fake_set(tmp_path / "fv" / "fakeverbs.yaml", lib)
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))  # the daemons' fallback directory
    spill = tmpdir / "tracebase-spool"
    with full_tmpfs(tmp_path / "mnt") as fill:
        logs = []
        for attempt in ("killed", "whole"):
            d = Daemon([str(probe_set), "-x", "-i", "0.1s"], tmp_path / "mnt" / "spool")
            fill()
            d.wait_for("held in memory")
            time.sleep(2)  # ~20 intervals held: a spill long enough to be caught in
            if attempt == "killed":
                d.proc.send_signal(signal.SIGTERM)
                caught = frozen_while(d.proc, lambda: temporaries(spill / "h1") if (spill / "h1").is_dir() else [])
                assert caught, "the spill was never caught mid-write: " + "".join(d.log)
                assert d.stop(signal.SIGKILL) == -signal.SIGKILL
                left = temporaries(spill / "h1")
                assert left == caught
                whole = list_snapshots(spill)  # what was spilled before the kill is whole
                for snap in whole:
                    for table in ("events", "counters"):
                        validate_file(snap / f"{table}.parquet", table)
            else:
                assert d.stop(signal.SIGINT) == 2, "".join(d.log)
            logs.append("".join(d.log))
            (tmp_path / "mnt" / "fill").unlink()
    assert f"removed {len(left)} stale temporar" in logs[1] and str(left[0]) in logs[1], logs[1]
    assert "snapshot(s) kept in" in logs[1]
    assert temporaries(spill / "h1") == []
    snaps = list_snapshots(spill)
    assert set(whole) < set(snaps)  # the second spill kept the first's whole snapshots, added its own
    ingest = subprocess.run([*BASELINE, "ingest", str(spill), str(tmp_path / "ds")], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert ingest.returncode == 0, ingest.stderr
    assert f"ingested {len(snaps)} snapshots" in ingest.stdout
    assert read(tmp_path / "ds" / "counters", "counters").height == len(snaps) * 6  # six probes a snapshot

"""Round thirteen: `tracer run` running for a long time on a real host, under faults made for
real (no mocks): the metadata file rewritten badly while it runs (a FIFO, a duplicate key, a
huge file), and the `-p` target exiting while the daemon attaches or runs. Every case loads the
real syscall set (raw tracepoints) as root and checks, after exit, that none of the daemon's BPF
programs is still loaded. The wider battery is `bench/robust_battery.py --group round13`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fleet_support import STARTUP_TIMEOUT_S, Daemon

from tracer.fleet.spool import list_snapshots, read_spool

REPO = Path(__file__).resolve().parents[1]


def _prog_ids(pid: int) -> set[int]:
    """Ids of the BPF programs process `pid` holds (its fds' fdinfo): attribution by owner, so
    other tracers sharing the machine do not count."""
    ids = set()
    fd_dir = Path(f"/proc/{pid}/fdinfo")
    for info in fd_dir.iterdir():
        try:
            m = re.search(r"^prog_id:\s+(\d+)", info.read_text(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def _loaded_prog_ids() -> set[int]:
    out = subprocess.run(["bpftool", "prog", "show"], capture_output=True, text=True, check=True).stdout
    return {int(m.group(1)) for m in re.finditer(r"^(\d+):", out, re.M)}


def _freed(progs: set[int]) -> bool:
    """The kernel frees a closed program a little later (RCU, a workqueue): seconds on a loaded
    machine. Wait for that rather than call it left loaded."""
    deadline = time.monotonic() + 30
    while progs & _loaded_prog_ids():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _wait(cond, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _stop_or_kill(d: Daemon, timeout: float = 30.0) -> int | None:
    """SIGTERM and wait; a daemon that does not stop is killed (and None returned) so a failing
    case never leaves it running."""
    d.proc.send_signal(signal.SIGTERM)
    try:
        return d.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        d.proc.kill()
        d.proc.wait()
        return None
    finally:
        d._reader.join(timeout=5)


def _replace(path: Path, make) -> None:
    """Put a new file at `path` the way config managers do: made beside it, renamed over it
    (a new inode, never seen half written, so each change is one log line)."""
    tmp = path.with_name(path.name + ".new")
    make(tmp)
    os.replace(tmp, path)


def test_metadata_file_rewritten_badly_while_running_is_logged_and_never_blocks(need_bpf, tmp_path):  # noqa: ARG001
    """A FIFO put in the metadata file's place blocked the daemon in open() at its next refresh
    (no more snapshots, SIGTERM unanswered); a duplicate key raised out of the loop (exit 2, no
    final snapshot). Now each is one log line, the previous metadata is kept, snapshots go on."""
    meta = tmp_path / "job.yaml"
    meta.write_text("job_id: '4242'\n")
    spool = tmp_path / "spool"
    d = Daemon(["syscalls", "-x", "-i", "0.2s", "--metadata-file", str(meta)], spool)
    progs = _prog_ids(d.proc.pid)
    assert progs
    try:
        faults = [
            ("duplicate key", lambda p: p.write_text("job_id: '1'\njob_id: '2'\n"), "'job_id' again"),
            ("FIFO", os.mkfifo, "FIFO"),
            ("huge", lambda p: p.write_bytes(b"# pad\n" * (400 << 10)), "at most 1 MiB"),
            ("syntax error", lambda p: p.write_text("job_id: [\n"), "syntax error"),
        ]
        for n, (name, make, words) in enumerate(faults, start=1):
            _replace(meta, make)
            d.wait_for("--metadata-file:", count=n)
            assert words in d.log[-1] or any(words in line for line in d.log), (name, "".join(d.log))
            seen = len(list_snapshots(spool))
            _wait(lambda s=seen: len(list_snapshots(spool)) > s + 1, f"snapshots after the {name} metadata file")
            assert d.proc.poll() is None, (name, "".join(d.log))
    finally:
        rc = _stop_or_kill(d)
    assert rc == 0, "".join(d.log)
    assert not any("Traceback" in line for line in d.log), "".join(d.log)
    assert sum("--metadata-file:" in line for line in d.log) == len(faults), "".join(d.log)  # once per change
    assert _freed(progs), progs & _loaded_prog_ids()
    read_spool(spool, "counters")  # every snapshot whole


def _target(tmp_path: Path) -> subprocess.Popen:
    """A process that makes a failing openat every 10 ms until killed (what -p traces)."""
    code = ("import os, time\n"
            "while True:\n"
            "    try: os.open('/nonexistent/tracebase-r13', os.O_RDONLY)\n"
            "    except OSError: pass\n"
            "    time.sleep(0.01)\n")
    return subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path)


@pytest.mark.parametrize("when", ["running", "attaching"])
def test_run_p_stops_when_its_process_exits(need_bpf, tmp_path, when):  # noqa: ARG001
    """`tracer run -p PID` went on after PID exited, for its whole -d (or forever), tracing
    nothing and then whatever process was handed the pid next. It now watches a pidfd taken
    before the target is inspected: when the process exits (while the probes attach, or later)
    the daemon writes its final snapshot, says so and exits 0, every program detached."""
    target = _target(tmp_path)
    spool = tmp_path / "spool"
    try:
        d = Daemon(["syscalls", "-x", "-p", str(target.pid), "-i", "0.5s", "-d", "10m"], spool,
                   wait="probes live" if when == "running" else "compiling")
        if when == "running":
            progs = _prog_ids(d.proc.pid)
            _wait(lambda: len(list_snapshots(spool)) >= 1, "a first snapshot")
        target.kill()
        target.wait()
        try:
            rc = d.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = None
            _stop_or_kill(d)
        d._reader.join(timeout=5)
    finally:
        target.kill()
        target.wait()
    assert rc == 0, "".join(d.log)
    assert any(f"process {target.pid} exited" in line for line in d.log), "".join(d.log)
    assert list_snapshots(spool), "no final snapshot"
    if when == "running":
        assert _freed(progs), progs & _loaded_prog_ids()
        counters = read_spool(spool, "counters")
        assert counters.filter(counters["probe"] == "openat")["failures"].sum() > 0


def test_spool_full_then_remounted_read_only_mid_run_holds_snapshots(need_bpf, tmp_path):  # noqa: ARG001
    """Two faults of the spool's file system, made for real on a tmpfs in a private mount
    namespace, while the tracer runs. Full: the intervals are held and written once there is
    room. Then `mount -o remount,ro`, which failed EBUSY for as long as the tracer ran (its lock
    file was held open for writing): now the remount succeeds, the daemon says the spool is
    read-only, holds the intervals, and writes every one of them, in order, once read-write.
    (A spool already full when the tracer starts is refused at start, one line, exit 2:
    tests/test_bad_inputs.py's run-spool-full.)"""
    spool, marks = tmp_path / "spool", tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "copy").mkdir()
    wait = 'for i in $(seq 1200); do [ -e "{m}" ] && break; sleep 0.05; done'
    script = (f'mkdir -p "{spool}" && mount -t tmpfs -o size=4m r13-ro "{spool}" || exit 1; '
              f'( {wait.format(m=marks / "full")}; dd if=/dev/zero of="{spool}/filler" bs=64k 2>/dev/null; '
              f'{wait.format(m=marks / "free")}; rm -f "{spool}/filler"; touch "{marks}/is-free"; '
              f'{wait.format(m=marks / "ro")}; if mount -o remount,ro "{spool}"; then touch "{marks}/is-ro"; '
              f'else touch "{marks}/ro-failed"; fi; {wait.format(m=marks / "rw")}; mount -o remount,rw "{spool}"; '
              f'{wait.format(m=marks / "done")}; cp -a "{spool}/." "{tmp_path}/copy/"; '
              f'touch "{marks}/copied" ) & exec "$@"')
    d = Daemon(["syscalls", "-x", "-i", "0.2s"], spool,
               wrapper=["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "ro"])
    try:
        d.wait_for("probes live", timeout=STARTUP_TIMEOUT_S)
        (marks / "full").touch()
        d.wait_for("not written (No space left on device)")
        (marks / "free").touch()
        d.wait_for("written again")
        (marks / "ro").touch()
        _wait(lambda: (marks / "is-ro").exists() or (marks / "ro-failed").exists(), "the remount")
        assert (marks / "is-ro").exists(), "mount -o remount,ro of the spool failed while the tracer ran"
        d.wait_for("not written (Read-only file system)")
        (marks / "rw").touch()
        d.wait_for("written again", count=2)
        assert d.proc.poll() is None, "".join(d.log)
    finally:
        for m in ("full", "free", "ro", "rw"):
            (marks / m).touch()
        rc = _stop_or_kill(d)
        (marks / "done").touch()
    assert rc == 0, "".join(d.log)
    _wait(lambda: (marks / "copied").exists(), "the spool's copy")
    snaps = list_snapshots(tmp_path / "copy")
    seqs = [int(s.name.rsplit("-", 1)[1]) for s in snaps]
    assert seqs == list(range(len(seqs))) and len(seqs) >= 4, seqs  # every interval, in order, none twice
    read_spool(tmp_path / "copy", "counters")


def test_a_spool_host_directory_removed_while_running_is_locked_again(tmp_path):
    """The host directory deleted while the daemon runs took its lock file with it: the daemon
    recreated the directory and wrote on without a lock, so a second tracer could start on the
    same spool and write beside it. Now the daemon takes the new directory's lock before it
    writes there; if another writer got it first, the intervals are held (not written beside
    it) and said so. Real files and flocks; no BPF needed for this part of the loop."""
    import io
    import shutil

    from tracer.errors import TracebaseError
    from tracer.fleet.daemon import Daemon as FleetDaemon
    from tracer.fleet.daemon import HeldSnapshot, RunConfig
    from tracer.fleet.spool import WriterLock, counters_table, events_table

    log = io.StringIO()
    spool = tmp_path / "spool"
    host = spool / "h1"
    d = FleetDaemon(RunConfig(sets=["syscalls"], spool=spool, host="h1", log=log))
    d.prepare()

    def interval(seq: int) -> HeldSnapshot:
        return HeldSnapshot(events_table([]), counters_table([]), time.time_ns(), seq)

    try:
        shutil.rmtree(host)
        d.held.append(interval(0))
        assert d.write_held() is not None
        with pytest.raises(TracebaseError, match="another writer"):
            WriterLock(host).acquire()  # the daemon holds the new directory's lock
        shutil.rmtree(host)
        host.mkdir()
        other = WriterLock(host).acquire()  # a second tracer got there first
        try:
            d.held.append(interval(1))
            assert d.write_held() is None and len(d.held) == 1
            assert not list(host.glob("snap-*")), "written beside another writer"
            assert "another writer" in log.getvalue()
        finally:
            other.release()
        assert d.write_held() is not None and not d.held  # that writer gone: the lock is taken, written
    finally:
        d.close()

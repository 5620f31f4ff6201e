"""`tracer record` when things go wrong: unwritable outputs found before the command runs,
write failures after it (real ENOSPC on a tiny tmpfs, EROFS by a remount, EISDIR) that keep
the data in a fallback file, EACCES without CAP_DAC_OVERRIDE, SIGTERM/SIGINT mid-run, and
kill -9 of the recorder (root + bcc; need_bpf). Mounts are private tmpfs in tmp_path."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tracer.schema import read_events, validate_file

REPO = Path(__file__).resolve().parents[1]
TRACER = [sys.executable, "-m", "tracer.cli", "record"]
BUSY = ["/bin/sh", "-c", "ls -lR /usr/lib/python3.11 >/dev/null"]


def tracer(*argv: str, env: dict | None = None, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*TRACER, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, **kw)


def one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@contextlib.contextmanager
def tmpfs(where: Path, options: str):
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tracebase-test", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


# --- checked before the command runs -----------------------------------------------------
def test_unwritable_outputs_refused_before_the_command_runs(need_bpf, tmp_path):
    marker = tmp_path / "ran"
    cmd = ["--", "/usr/bin/touch", str(marker)]
    cases = {
        "missing dir": (str(tmp_path / "nope" / "t.parquet"), "does not exist"),
        "a directory": (str(tmp_path), "is a directory"),
        "parent is a file": (f"{REPO / 'README.md'}/t.parquet", "is not a directory"),
        "proc": ("/proc/t.parquet", "cannot write in /proc"),
    }
    with tmpfs(tmp_path / "ro", "ro,size=64k") as ro, tmpfs(tmp_path / "full", "size=16k") as full:
        subprocess.run(["dd", "if=/dev/zero", f"of={full}/fill", "bs=4k", "count=64"],
                       capture_output=True, check=False)  # ENOSPC: fills it to the last block
        cases["read-only"] = (f"{ro}/t.parquet", "Read-only file system")
        cases["full"] = (f"{full}/t.parquet", "No space left on device")
        for what, (out, message) in cases.items():
            proc = tracer("-o", out, *cmd)
            assert proc.returncode == 2, (what, proc.stderr)
            line = one_line(proc)
            assert message in line and out.split("/")[-1] in line, (what, line)
            assert not marker.exists(), f"{what}: the command ran"


def test_eacces_without_dac_override(need_bpf, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    marker = tmp_path / "ran"
    drop = "-dac_override,-dac_read_search"
    proc = subprocess.run(
        ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}",
         *TRACER, "-o", str(locked / "t.parquet"), "--", "/usr/bin/touch", str(marker)],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Permission denied" in one_line(proc) and str(locked) in proc.stderr
    assert not marker.exists() and list(locked.iterdir()) == []


# --- failing after the command ran: the data is kept ---------------------------------------
def fallback_from(line: str) -> Path:
    assert "was saved to " in line and line.endswith(" instead"), line
    return Path(line.split("was saved to ", 1)[1].removesuffix(" instead"))


def check_saved(line: str, fallback_dir: Path) -> pl.DataFrame:
    saved = fallback_from(line)
    assert saved.parent == fallback_dir and saved.exists(), line
    validate_file(saved, "events")
    df = read_events(saved)
    assert df.height > 1000 and df["exit_status"][0] == 0
    return df


def test_enospc_after_the_run_keeps_the_trace_in_tmpdir(need_bpf, tmp_path):
    spare = tmp_path / "spare"
    spare.mkdir()
    with tmpfs(tmp_path / "small", "size=8k") as small:  # the trace is tens of KiB
        proc = tracer("-o", f"{small}/t.parquet", "--", *BUSY, env={"TMPDIR": str(spare)})
        assert proc.returncode == 2, proc.stderr
        line = one_line(proc)
        assert f"{small}/t.parquet: writing the trace failed (No space left on device)" in line
        check_saved(line, spare)
        assert list(small.iterdir()) == []  # no partial file, no temporary


def test_erofs_after_the_run_keeps_the_trace(need_bpf, tmp_path):
    spare = tmp_path / "spare"
    spare.mkdir()
    with tmpfs(tmp_path / "out", "size=4m") as out:
        # the command itself makes the output's filesystem read-only while it runs
        cmd = ["/bin/sh", "-c", f"{BUSY[2]}; mount -o remount,ro {out}"]
        proc = tracer("-o", f"{out}/t.parquet", "--", *cmd, env={"TMPDIR": str(spare)})
        assert proc.returncode == 2, proc.stderr
        line = one_line(proc)
        assert "Read-only file system" in line
        df = check_saved(line, spare)
        assert df.filter(pl.col("probe") == "mount").height == 1
        assert list(out.iterdir()) == []


def test_eisdir_after_the_run_keeps_the_trace(need_bpf, tmp_path):
    spare = tmp_path / "spare"
    spare.mkdir()
    out = tmp_path / "t.parquet"
    cmd = ["/bin/sh", "-c", f"{BUSY[2]}; mkdir {out}"]  # a directory appears at the output path
    proc = tracer("-o", str(out), "--", *cmd, env={"TMPDIR": str(spare)})
    assert proc.returncode == 2, proc.stderr
    line = one_line(proc)
    assert "Is a directory" in line
    check_saved(line, spare)
    assert out.is_dir() and list(out.iterdir()) == [] and hidden(tmp_path) == []


# --- signals ------------------------------------------------------------------------------
def start(out: Path, *cmd: str) -> subprocess.Popen:
    proc = subprocess.Popen([*TRACER, "-o", str(out), "--", *cmd], cwd=REPO,
                            stderr=subprocess.PIPE, text=True)
    return proc


def _children(pid: int) -> list[int]:
    """pid's child processes (of any of its threads); [] once it is gone."""
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            kids += [int(c) for c in (task / "children").read_text().split()]
    return kids


def _comm(pid: int) -> str:
    """pid's command name; "" once it is gone (the shell's `mv` child exits and is reaped
    between the listing of children and this read: round 37's stop CI)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text()
    except OSError:
        return ""


def wait_for_file(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_is_forwarded_and_the_trace_written(need_bpf, tmp_path, sig):
    out, ready = tmp_path / "t.parquet", tmp_path / "ready"
    # a command that reports the signal it got and exits 7 (python: handlers run at once)
    # ready once it has read /etc/hostname 5 times (a fixed 0.2 s after the first was a guess)
    script = (f"import signal, sys, time, pathlib\n"
              f"signal.signal({int(sig)}, lambda s, f: (print('got', s, file=sys.stderr), sys.exit(7)))\n"
              f"n = 0\n"
              f"while True:\n"
              f"    open('/etc/hostname').read(); time.sleep(0.01); n += 1\n"
              f"    if n == 5: pathlib.Path({str(ready)!r}).touch()\n")
    proc = start(out, "/usr/bin/python3", "-S", "-c", script)
    try:
        wait_for_file(ready)
        proc.send_signal(sig)
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 7, err
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    assert f"got {int(sig)}" in err  # the command received it
    assert f"{sig.name} forwarded to the command, exit status 7" in err and str(out) in err
    df = read_events(out)
    assert df["exit_status"][0] == 7
    assert df.filter(pl.col("path") == "/etc/hostname").height >= 5
    meta = {m["key"]: m["value"] for m in df["metadata"][0]}
    assert meta["signal"] == sig.name
    assert hidden(tmp_path) == []


def test_sigusr1_and_sigusr2_are_passed_to_the_command_and_recording_goes_on(need_bpf, tmp_path):
    """SIGUSR1/SIGUSR2 are the command's (a log reopen, a state dump): their default action ended
    the recorder silently, the recording lost and the command left running untraced. They are
    passed on, the command handles them and goes on, and the trace is written whole."""
    out, ready, seen = tmp_path / "t.parquet", tmp_path / "ready", tmp_path / "seen"
    script = (f"import os, signal, sys, time, pathlib\n"
              f"got = []\n"
              f"for s in (signal.SIGUSR1, signal.SIGUSR2): signal.signal(s, lambda n, f: got.append(n))\n"
              f"pathlib.Path({str(ready)!r}).touch()\n"
              f"while len(got) < 2: time.sleep(0.01)\n"
              f"pathlib.Path({str(seen)!r}).write_text(' '.join(map(str, got)))\n"
              f"open('/etc/hostname').read()\n")
    proc = start(out, "/usr/bin/python3", "-S", "-c", script)
    try:
        wait_for_file(ready)
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.2)
        proc.send_signal(signal.SIGUSR2)
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 0, err
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    assert seen.read_text() == f"{int(signal.SIGUSR1)} {int(signal.SIGUSR2)}"
    df = read_events(out)
    assert df["exit_status"][0] == 0 and df.filter(pl.col("path") == "/etc/hostname").height >= 1
    assert "signal" not in {m["key"] for m in df["metadata"][0]}  # no stop: recorded to the end
    assert hidden(tmp_path) == []


def test_sigterm_ignored_by_the_command_then_killed(need_bpf, tmp_path):
    out, ready = tmp_path / "t.parquet", tmp_path / "ready"
    script = f"trap '' TERM; touch {ready}; while :; do sleep 0.1; done"
    proc = start(out, "/bin/sh", "-c", script)
    try:
        wait_for_file(ready)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        err = proc.stderr.read()
        status = proc.wait(timeout=60)
        took = time.monotonic() - t0
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    assert status == 128 + 9, err  # SIGKILLed after the 5 s grace
    assert 4.5 < took < 30 and "SIGTERM forwarded to the command, exit status 137" in err
    assert read_events(out)["exit_status"][0] == 137


def test_a_thread_the_recorder_starts_during_the_spawn_is_never_signalled(need_bpf, tmp_path):
    """The fork hook follows every child of the recorder while it spawns the command, threads
    included: a worker pool growing then put the recorder's own thread in the `traced` map, and
    the SIGKILL after a forwarded SIGTERM's grace (kill() on a thread's id signals its whole
    process) killed the recorder silently (a fresh-clone CI under load: the command printed
    "got 15", the recorder nothing). Run in a child process: a regression kills it, not pytest."""
    ready = tmp_path / "ready"
    script = f"""
import os, signal, subprocess, threading, time
import tracer.record.recorder as recorder_module
from tracer.record.recorder import SyscallRecorder

real_popen, started = subprocess.Popen, []
def popen_beside_a_new_thread(*args, **kwargs):  # a library's pool grows during the spawn
    parked = threading.Thread(target=time.sleep, args=(30,), daemon=True)
    parked.start()
    started.append(parked.native_id)
    return real_popen(*args, **kwargs)
recorder_module.subprocess.Popen = popen_beside_a_new_thread

def stop_when_ready():
    while not os.path.exists({str(ready)!r}):
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGTERM)
threading.Thread(target=stop_when_ready, daemon=True).start()
with SyscallRecorder(ringbuf_mb=4) as rec:
    r = rec.record(["/bin/sh", "-c", "trap '' TERM; touch {ready}; while :; do sleep 0.1; done"],
                   kill_after=0.5)
    assert started and os.path.exists(f"/proc/self/task/{{started[0]}}"), started
    print("signal", r.signal, "exit status", r.exit_status)
"""
    r = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.strip() == "signal SIGTERM exit status 137", r.stdout


# --- kill -9 ------------------------------------------------------------------------------
def test_kill_9_leaves_nothing_readers_take_and_the_next_run_cleans_up(need_bpf, tmp_path):
    out = tmp_path / "t.parquet"
    # a writer killed mid-write (what kill -9 during the Parquet write leaves behind)
    subprocess.run([sys.executable, "-c",
                    "import os, sys\nfrom tracer.atomic import atomic_output\n"
                    f"with atomic_output({str(out)!r}) as fh:\n"
                    "    fh.write(b'PAR1' + bytes(4096)); fh.flush(); os.kill(os.getpid(), 9)\n"],
                   cwd=REPO, check=False)
    stale = hidden(tmp_path)
    assert len(stale) == 1 and stale[0].startswith(".t.parquet.") and not out.exists()
    # a live writer's temporary (held open) is left alone
    live = tmp_path / ".t.parquet.live0000.tmp"
    holder = subprocess.Popen(["/bin/sh", "-c", f"exec 3>{live}; sleep 60"])
    try:
        wait_for_file(live)
        # kill -9 of the recorder mid-recording: no output, the temp files stay hidden
        ready = tmp_path / "ready"
        rec = start(out, "/bin/sh", "-c", f"echo $$ >{ready}.tmp; mv {ready}.tmp {ready}; exec sleep 60")
        wait_for_file(ready)
        command = int(ready.read_text())
        rec.kill()
        rec.wait(timeout=30)
        os.kill(command, signal.SIGKILL)  # the command outlives a killed recorder (reparented)
        assert not out.exists()
        with pytest.raises(Exception, match="no .parquet files"):
            read_events(tmp_path)
        # the next recording to the same name removes the stale temporary
        proc = tracer("-o", str(out), "--", "/bin/true")
        assert proc.returncode == 0, proc.stderr
        assert hidden(tmp_path) == [live.name] and not (tmp_path / "ready.tmp").exists()
        validate_file(out, "events")
    finally:
        holder.kill()
        holder.wait()


def test_trace_honours_the_umask(need_bpf, tmp_path):
    for umask, mode in ((0o022, 0o644), (0o077, 0o600)):
        out = tmp_path / f"u{umask:o}.parquet"
        proc = subprocess.run([*TRACER, "-q", "-o", str(out), "--", "/bin/true"], cwd=REPO,
                              capture_output=True, text=True, timeout=120,
                              preexec_fn=lambda u=umask: os.umask(u))
        assert proc.returncode == 0, proc.stderr
        assert out.stat().st_mode & 0o777 == mode


def test_sigterm_reaches_the_commands_children_too(need_bpf, tmp_path):
    """`sh -c 'sleep 60'` killed by SIGTERM would leave sleep running: the descendants the
    recorder follows get the signal too, as a terminal's job would."""
    out, ready = tmp_path / "t.parquet", tmp_path / "ready"
    proc = start(out, "/bin/sh", "-c", f"echo $$ > {ready}.tmp; mv {ready}.tmp {ready}; /usr/bin/sleep 60; echo never")
    try:
        wait_for_file(ready)
        # sleep has started: the shell's child has exec'd it (a fixed 0.3 s was a guess; a
        # SIGTERM before the fork ends sh alone, and no sleep is there to check)
        shell = int(ready.read_text())
        deadline = time.monotonic() + 60
        while not any(_comm(c) == "sleep\n" for c in _children(shell)):
            assert time.monotonic() < deadline, "sleep never started"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 128 + 15, err
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    df = read_events(out)
    sleeper = df.filter((pl.col("probe") == "execve") & (pl.col("path") == "/usr/bin/sleep"))["pid"][0]
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{sleeper}") and time.monotonic() < deadline:
        time.sleep(0.05)  # reaped by init once it is reparented
    assert not os.path.exists(f"/proc/{sleeper}"), f"sleep {sleeper} still running"
    assert df.filter(pl.col("output") == "never\n").height == 0


def test_the_recorder_leaves_bccs_cleanup_at_exit_to_close(need_bpf, monkeypatch):
    """bcc registers its cleanup to run at exit; a SIGTERM during start-up stopped ours half-way
    and bcc's then detached what was gone at exit ("Failed to detach BPF from tracepoint", a
    traceback: 4 in 70 of the battery's TERM trials). The recorder takes bcc's off and closes
    itself, also when the start-up fails."""
    import atexit

    from tracer.record.recorder import SyscallRecorder

    registered: list = []
    unregistered: list = []
    register, unregister = atexit.register, atexit.unregister
    monkeypatch.setattr(atexit, "register", lambda fn, *a, **k: registered.append(fn) or register(fn, *a, **k))
    monkeypatch.setattr(atexit, "unregister", lambda fn: unregistered.append(fn) or unregister(fn))
    recorder = SyscallRecorder(ringbuf_mb=1).load()
    try:
        cleanups = [fn for fn in registered if getattr(fn, "__name__", "") == "cleanup"]
        assert cleanups and all(fn in unregistered for fn in cleanups), (registered, unregistered)
    finally:
        recorder.close()
    assert recorder.bpf is None


def test_records_under_a_turkish_locale(need_bpf, tmp_path):
    # bcc's clang lower-cased its option names with the dotless i under tr_TR and refused them
    # ("unknown argument '-discard-value-names'"): the compile runs under LC_CTYPE C.UTF-8
    import shutil

    if shutil.which("localedef") is None:
        pytest.skip("localedef (libc-bin) is missing: cannot build the tr_TR.UTF-8 locale")
    made = subprocess.run(["localedef", "-i", "tr_TR", "-f", "UTF-8", str(tmp_path / "tr_TR.UTF-8")],
                          capture_output=True, text=True, timeout=120)
    if not (tmp_path / "tr_TR.UTF-8").exists():
        pytest.skip(f"localedef could not build tr_TR.UTF-8 (locale sources missing?): {made.stderr[-200:]}")
    out = tmp_path / "t.parquet"
    proc = tracer("-q", "-o", str(out), "--", "true",
                  env={"LOCPATH": str(tmp_path), "LC_ALL": "", "LANG": "", "LC_CTYPE": "tr_TR.UTF-8"})
    assert proc.returncode == 0, proc.stderr
    assert validate_file(out, "events") is not None

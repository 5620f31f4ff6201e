"""`tracer record -p PID` (attach to a running process) and `-d DURATION`, on real processes
with the real BPF program (root + bcc; need_bpf), plus their user-error paths."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tracer.cli import main as tracer_main
from tracer.errors import TracebaseError
from tracer.record.procfs import snapshot
from tracer.schema import read_events, validate_file

REPO = Path(__file__).resolve().parents[1]
TRACER = [sys.executable, "-m", "tracer.cli"]
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}



def shell_loop(tmp_path: Path, iterations: int | None, pause: float = 0.1) -> subprocess.Popen:
    """A sleeping shell loop that writes to an fd opened before we attach (3 -> log.txt) and
    forks a `cat` of a relative path each turn; `exit 7` after `iterations` turns."""
    (tmp_path / "data.txt").write_text("hello\n")
    cond = f"[ $i -lt {iterations} ]" if iterations is not None else ":"
    script = (f"exec 3>>log.txt; i=0; while {cond}; do cat data.txt >/dev/null; echo x >&3; "
              f"sleep {pause}; i=$((i+1)); done; exit 7")
    proc = subprocess.Popen(["/bin/sh", "-c", script], cwd=tmp_path, env=ENV,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not (tmp_path / "log.txt").exists() or not (tmp_path / "log.txt").stat().st_size:
        assert time.monotonic() < deadline, "shell loop did not start"
        time.sleep(0.02)
    return proc


def wait_turns(tmp_path: Path, turns: int, timeout: float = 60.0) -> None:
    """Until the shell loop has written `turns` more lines to log.txt. Two turns after an attach
    means one whole turn (its `cat data.txt`) began after it: the line before a turn's cat is
    written first."""
    log = tmp_path / "log.txt"
    target = log.stat().st_size + 2 * turns  # "x\n" per turn
    deadline = time.monotonic() + timeout
    while log.stat().st_size < target:
        assert time.monotonic() < deadline, "shell loop stopped turning"
        time.sleep(0.02)


def stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait(timeout=10)


def test_snapshot_reads_cwd_fds_and_cloexec(tmp_path):
    proc = shell_loop(tmp_path, None)
    try:
        snap = snapshot(proc.pid)
        assert snap.ppid == os.getpid() and snap.uid == os.getuid() and snap.comm == "sh"
        assert snap.argv[:2] == ["/bin/sh", "-c"] and snap.command.startswith("/bin/sh -c ")
        assert snap.cwd == str(tmp_path)
        assert snap.fds[3] == str(tmp_path / "log.txt") and snap.fds[0] == "/dev/null"
        assert 3 not in snap.cloexec_fds
    finally:
        stop(proc)
    with pytest.raises(TracebaseError, match=rf"-p {proc.pid}: no such process"):
        snapshot(proc.pid)  # reaped


def test_attach_records_until_exit_and_resolves_paths(recorder, tmp_path):
    proc = shell_loop(tmp_path, iterations=12)
    try:
        rec = recorder.attach(proc.pid, label="good")
    finally:
        proc.wait(timeout=30)
    assert rec.stop_reason == "exited" and rec.exit_status == 7 and rec.lost_events == 0
    assert rec.command == shlex.join(proc.args) and rec.pid == proc.pid
    df = pl.from_arrow(rec.events)
    assert set(df["exit_status"]) == {7} and df["command"][0] == rec.command
    meta = {m["key"]: m["value"] for m in df["metadata"][0]}
    assert meta["attached_pid"] == str(proc.pid) and meta["stopped"] == "exited"
    assert meta["cwd"] == str(tmp_path)
    # no execve stub trimming: the shell's own calls come first, and it never exec'd
    assert df.filter((pl.col("pid") == proc.pid) & (pl.col("probe") == "execve")).height == 0
    assert df["pid"][0] == proc.pid
    # children forked after the attach are followed in the kernel: cat opens a relative path,
    # resolved against the cwd read from /proc
    cats = df.filter((pl.col("probe") == "execve") & (pl.col("path") == "/usr/bin/cat"))
    assert cats.height >= 3 and set(cats["ppid"]) == {proc.pid}
    opened = df.filter((pl.col("probe") == "openat") & (pl.col("path") == str(tmp_path / "data.txt")))
    assert opened.height == cats.height and set(opened["comm"]) == {"cat"}
    # the shell writes through fd 3, opened before we attached: labelled from /proc/PID/fd
    writes = df.filter((pl.col("pid") == proc.pid) & (pl.col("probe") == "write"))
    assert writes.height >= 3 and set(writes["path"]) == {str(tmp_path / "log.txt")}
    assert df.filter(pl.col("probe") == "exit_group")["pid"].to_list()[-1] == proc.pid


def test_attach_stops_after_duration_and_leaves_process_running(recorder, tmp_path):
    proc = shell_loop(tmp_path, None)
    try:
        t0 = time.monotonic()
        rec = recorder.attach(proc.pid, duration=0.6)
        took = time.monotonic() - t0
        assert proc.poll() is None  # untouched
    finally:
        stop(proc)
    # "duration" is why it stopped (the loop runs on); the upper bound only catches a duration
    # read in the wrong unit: a recording took 12 s at load 40, over the 5 s bound this had
    assert 0.55 < took < 60 and rec.stop_reason == "duration" and rec.exit_status is None
    df = pl.from_arrow(rec.events)
    assert df["exit_status"].null_count() == df.height > 0
    assert df.filter(pl.col("probe") == "openat")["path"].to_list().count(str(tmp_path / "data.txt")) >= 2


def test_attach_refuses_itself_and_missing_pid(recorder):
    with pytest.raises(TracebaseError, match="recorder itself"):
        recorder.attach(os.getpid())
    gone = subprocess.Popen(["/bin/true"])
    gone.wait()
    with pytest.raises(TracebaseError, match=rf"-p {gone.pid}: no such process"):
        recorder.attach(gone.pid)


def test_command_with_duration_keeps_running(recorder, tmp_path):
    null = os.open("/dev/null", os.O_WRONLY)
    try:
        rec = recorder.record(["/bin/sh", "-c", "while :; do sleep 0.05; done"], env=ENV,
                              stdout=null, duration=0.5)
    finally:
        os.close(null)
    try:
        assert rec.stop_reason == "duration" and rec.exit_status is None
        assert os.waitpid(rec.pid, os.WNOHANG) == (0, 0)  # still running, ours to reap
        df = pl.from_arrow(rec.events)
        assert df["exit_status"].null_count() == df.height
        assert df["probe"][0] == "execve"  # the stub is still trimmed for commands
        assert df.filter(pl.col("path") == "/usr/bin/sleep").height >= 2
    finally:
        os.kill(rec.pid, signal.SIGKILL)
        os.waitpid(rec.pid, 0)


# --- the CLI --------------------------------------------------------------------------------
def cli(capsys, *argv) -> tuple[int, str]:
    try:
        status = tracer_main(["record", *argv])
    except SystemExit as exc:  # argparse usage errors
        status = exc.code
    return status, capsys.readouterr().err


def test_cli_pid_with_command(capsys):
    status, err = cli(capsys, "-p", str(os.getpid()), "--", "true")
    assert status == 2 and "-p" in err and "exclude each other" in err
    assert len(err.strip().splitlines()) == 1


def test_cli_no_such_pid(capsys, tmp_path):
    gone = subprocess.Popen(["/bin/true"])
    gone.wait()
    status, err = cli(capsys, "-p", str(gone.pid), "-o", str(tmp_path / "x.parquet"))
    assert status == 2 and f"-p {gone.pid}: no such process" in err
    status, err = cli(capsys, "-p", "0")
    assert status == 2 and "-p/--pid: expected a positive integer, found '0'" in err
    status, err = cli(capsys, "-p", "abc")
    assert status == 2 and "-p/--pid: expected a positive integer, found 'abc'" in err
    assert not (tmp_path / "x.parquet").exists()


def test_cli_bad_duration(capsys):
    for bad in ("10x", "soon", "-1", "nan", "inf"):
        status, err = cli(capsys, f"-d={bad}", "--", "true")
        assert status == 2 and f"-d/--duration: expected a duration like 100us, 5ms, 10s, 2m, 1h, 1d or plain seconds, greater than 0, found {bad!r}" in err
    status, err = cli(capsys, "-p", str(os.getpid()), "-d", "0")
    assert status == 2 and "greater than 0, found '0'" in err
    status, err = cli(capsys, "-d", "1e-9", "--", "true")
    assert status == 2 and "written without an exponent (units ns, us, ms, s, m, h, d), found '1e-9'" in err


def test_cli_no_command_mentions_pid(capsys):
    status, err = cli(capsys)
    assert status == 2 and "no command given" in err and "-p PID" in err


def test_cli_attach_stops_on_sigint_and_writes_trace(need_bpf, tmp_path):
    loop = shell_loop(tmp_path, None)
    out = tmp_path / "attached.parquet"
    try:
        tracer = subprocess.Popen([*TRACER, "record", "-p", str(loop.pid), "-o", str(out)],
                                  cwd=REPO, stderr=subprocess.PIPE, text=True)
        first = tracer.stderr.readline()  # printed once attached
        assert f"recording pid {loop.pid}" in first, first
        wait_turns(tmp_path, 2)  # a cat of data.txt started while recording (a fixed 0.6 s was a guess)
        tracer.send_signal(signal.SIGINT)
        rest = tracer.stderr.read()
        assert tracer.wait(timeout=60) == 0, rest
        assert loop.poll() is None  # the process is not touched
    finally:
        stop(loop)
    assert "stopped by signal" in rest and str(out) in rest
    validate_file(out, "events")
    df = read_events(out)
    assert df["exit_status"].null_count() == df.height > 0
    assert df["command"][0].startswith("/bin/sh -c 'exec 3>>log.txt")
    assert df.filter(pl.col("path") == str(tmp_path / "data.txt")).height >= 1


def test_cli_attach_with_duration_and_sigterm(need_bpf, tmp_path):
    loop = shell_loop(tmp_path, None)
    out = tmp_path / "d.parquet"
    try:
        proc = subprocess.run([*TRACER, "record", "-p", str(loop.pid), "-d", "700ms", "-o", str(out)],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "stopped by duration" in proc.stderr and loop.poll() is None
        assert read_events(out)["exit_status"].null_count() > 0
        # SIGTERM stops a recording too (and does not touch the process)
        out2 = tmp_path / "t.parquet"
        tracer = subprocess.Popen([*TRACER, "record", "-p", str(loop.pid), "-o", str(out2)],
                                  cwd=REPO, stderr=subprocess.PIPE, text=True)
        first = tracer.stderr.readline()  # printed once recording (and SIGTERM handling) began
        assert f"recording pid {loop.pid}" in first, first
        wait_turns(tmp_path, 2)
        tracer.terminate()
        rest = tracer.stderr.read()
        assert tracer.wait(timeout=60) == 0, rest
        assert "stopped by signal" in rest and loop.poll() is None and read_events(out2).height > 0
    finally:
        stop(loop)


def test_cli_command_with_duration_leaves_it_running(need_bpf, tmp_path):
    out, log = tmp_path / "cmd.parquet", tmp_path / "stderr.txt"
    with log.open("w") as err:  # not a pipe: the command left running would hold it open
        proc = subprocess.run([*TRACER, "record", "-d", "500ms", "-o", str(out), "--",
                               "/bin/sh", "-c", "while :; do sleep 0.05; done"],
                              cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, timeout=120)
    df = read_events(out)
    root = df["pid"][0]
    try:
        assert proc.returncode == 0, log.read_text()
        assert "still running" in log.read_text()
        assert df["exit_status"].null_count() == df.height and os.path.isdir(f"/proc/{root}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(root, signal.SIGKILL)


def test_attach_to_a_process_that_exits_while_the_probes_load_says_so(recorder):
    """A process pinned before the load (procfs.pin_process, as `tracer record -p` does) that exits
    meanwhile is named as exited during the attach, not "no such process" (a pid that never was)."""
    from tracer.record.procfs import pin_process

    proc = subprocess.Popen(["/bin/sleep", "60"])
    pinned = pin_process(proc.pid)
    proc.kill()
    proc.wait()
    with pytest.raises(TracebaseError, match=rf"-p {proc.pid}: expected a running process, found it exited during "
                                             r"the attach \(\d+\.\d s of loading the probes\).*tracer record -- COMMAND"):
        recorder.attach(proc.pid, pinned=pinned)


def _pidfd_targets(pid: int) -> set[int]:
    """The pids the pidfds of process `pid` refer to (/proc/PID/fdinfo's "Pid:" line)."""
    targets = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
                    if line.startswith("Pid:"):
                        targets.add(int(line.split()[1]))
    return targets


def test_cli_process_exiting_during_the_attach_is_not_called_missing(need_bpf, tmp_path):
    """`tracer record -p` of a process that exits after the check and before the probes are in
    (seconds of compiling): exit 2, one line saying it exited during the attach and what to do
    instead; no trace written. The target is ended once the tracer holds a pidfd on it."""
    target = subprocess.Popen(["/bin/sleep", "120"])
    out = tmp_path / "gone.parquet"
    try:
        tracer = subprocess.Popen([*TRACER, "record", "-p", str(target.pid), "-o", str(out)], cwd=REPO,
                                  stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while target.pid not in _pidfd_targets(tracer.pid):
            assert tracer.poll() is None and time.monotonic() < deadline, "the tracer never pinned the process"
            time.sleep(0.005)
        target.kill()
        target.wait()
        err = tracer.stderr.read()
        assert tracer.wait(timeout=120) == 2, err
    finally:
        stop(target)
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert f"-p {target.pid}: expected a running process, found it exited during the attach" in err, err
    assert "tracer record -- COMMAND" in err
    assert not out.exists() and os.listdir(tmp_path) == []

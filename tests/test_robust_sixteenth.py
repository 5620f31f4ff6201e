"""Round sixteen: robust15's leftovers and what the round16 battery found, each a defect of main
shown by a real run (no mocks).

- a `tracer record` killed -9 while it wrote its fallback file into $TMPDIR (its own output had
  failed) left that file's temporary there for good: no later run writes that name again (it
  holds the writer's pid and time), and the next recording cleaned only its output directory;
- a fleet daemon restarted with another `--prom` name in the same textfile directory removed
  only the temporaries of the new name: the old textfile's, left by the killed daemon, stayed
  in node_exporter's directory.
The wider battery is `bench/robust_battery.py --group round16`."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACER = [sys.executable, "-m", "tracer.cli"]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
# ~190,000 syscalls in under a second: a trace whose write takes long enough to be caught in
BIG = "ls -lR /usr/share >/dev/null 2>&1"


def temporaries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


def killed_mid_write(code: str, tmpdir: Path) -> None:
    """Run `code` (which opens `fh` through tracer.atomic) in a real process that is killed -9
    with half its bytes written; TMPDIR is `tmpdir`."""
    subprocess.run([sys.executable, "-c", "import os\nfrom tracer.atomic import atomic_output\n" + code
                    + "    fh.write(b'PAR1' + bytes(4096)); fh.flush(); os.kill(os.getpid(), 9)\n"],
                   cwd=REPO, env={**ENV, "TMPDIR": str(tmpdir)}, check=False)


def test_the_next_recording_removes_a_killed_fallback_writes_temporary(tmp_path):
    """The recorder's rule without BPF: the fallback temporaries in $TMPDIR of recorders killed
    mid-write go; a live recorder's, another user's, and other programs' temporaries of any
    name stay ($TMPDIR is shared)."""
    from tracer.record.output import remove_stale_fallback_temporaries

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    fallback = ("from tracer.record.output import _fallback_name, fallback_dirs\n"
                "with atomic_output(fallback_dirs()[0] / _fallback_name({stem!r}, os.getpid())) as fh:\n")
    killed_mid_write(fallback.format(stem="t"), tmpdir)
    killed_mid_write(fallback.format(stem="trace-sh-20261203T101500Z"), tmpdir)
    killed_mid_write(fallback.format(stem="theirs"), tmpdir)
    killed_mid_write(f"with atomic_output({str(tmpdir / 'export.parquet')!r}) as fh:\n", tmpdir)  # not a fallback
    dead = {p.name.split("-")[0].split(".")[1]: p for p in temporaries(tmpdir)}
    assert sorted(dead) == ["export", "t", "theirs", "trace"], dead
    kept = {"export"}
    if os.geteuid() == 0:  # another user's, in a shared directory: theirs to remove
        os.chown(dead["theirs"], 65534, 65534)
        kept.add("theirs")
    from tracer.record.output import _fallback_name

    live = tmpdir / f".{_fallback_name('live', os.getpid())}.{os.getpid()}-0123abcd.tmp"  # a recorder still writing
    live.write_bytes(b"PAR1")
    os.environ["TMPDIR"], old = str(tmpdir), os.environ.get("TMPDIR")
    import tempfile

    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    try:
        removed = remove_stale_fallback_temporaries()
    finally:
        if old is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = old
        tempfile.tempdir = None
    assert sorted(p.name for p in removed) == sorted(p.name for k, p in dead.items() if k not in kept)
    assert [p.name for p in temporaries(tmpdir)] == sorted([live.name, *(dead[k].name for k in kept)])


def test_record_killed_during_its_fallback_write_leaves_nothing_after_the_next(need_bpf, tmp_path):
    """End to end: the output directory is removed while the command runs, so the trace goes to
    $TMPDIR; the recorder is frozen once that write's temporary shows, then killed -9. The next
    recording (another output, same $TMPDIR) says it removed it, and nothing is left."""
    tmpdir, out_dir, done = tmp_path / "tmp", tmp_path / "out", tmp_path / "done"
    tmpdir.mkdir()
    out_dir.mkdir()
    env = {**ENV, "TMPDIR": str(tmpdir)}
    proc = subprocess.Popen([*TRACER, "record", "-o", str(out_dir / "t.parquet"), "--", "/bin/sh", "-c",
                             f"{BIG}; rmdir {out_dir}; touch {done}"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    caught: list[Path] = []
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline and not caught:
            if done.exists() and temporaries(tmpdir):
                proc.send_signal(signal.SIGSTOP)
                caught = temporaries(tmpdir)
                if not caught:
                    proc.send_signal(signal.SIGCONT)
            time.sleep(0.001)
        assert caught, f"the fallback write was never caught: {proc.communicate()[1]}"
        proc.kill()
        proc.wait(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    assert caught[0].name.startswith(".t-") and not out_dir.exists()
    proc = subprocess.run([*TRACER, "record", "-o", str(tmp_path / "next.parquet"), "--", "true"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"removed 1 stale temporary of a killed recording: {caught[0].name}" in proc.stderr
    assert list(tmpdir.iterdir()) == []


def test_a_daemon_restarted_with_another_prom_removes_the_old_textfiles_temporary(tmp_path):
    """A daemon killed -9 while it wrote node.prom, restarted as `--prom other.prom` in the same
    directory: prepare() removes node.prom's temporary as it does other.prom's. A live
    writer's textfile temporary, another user's and what is no textfile's stay."""
    from tracer.fleet.daemon import Daemon as FleetDaemon
    from tracer.fleet.daemon import RunConfig

    textdir = tmp_path / "textfile"
    textdir.mkdir()
    for name in ("node.prom", "other.prom", "theirs.prom", "notes.txt"):
        killed_mid_write(f"with atomic_output({str(textdir / name)!r}) as fh:\n", tmp_path)
    dead = {p.name.split(".")[1]: p for p in temporaries(textdir)}
    assert sorted(dead) == ["node", "notes", "other", "theirs"]
    kept = {"notes"}
    if os.geteuid() == 0:
        os.chown(dead["theirs"], 65534, 65534)
        kept.add("theirs")
    live = textdir / f".gpu.prom.{os.getpid()}-0123abcd.tmp"  # another daemon's, writing now
    live.write_bytes(b"# HELP")
    log = io.StringIO()
    d = FleetDaemon(RunConfig(sets=["syscalls"], spool=tmp_path / "spool", host="h1", log=log,
                              prom=textdir / "other.prom"))
    try:
        d.prepare()
    finally:
        d.lock.release()
    assert [p.name for p in temporaries(textdir)] == sorted([live.name, *(dead[k].name for k in kept)])
    assert f"removed {4 - len(kept)} stale temporaries of a previous run" in log.getvalue()


def test_a_stop_signal_in_a_child_just_forked_does_not_end_the_parent(tmp_path):
    """A child forked while the command's stop handlers are installed (ingest's -j workers) had
    the parent's handlers and wakeup fd until its at-fork hook ran: a SIGTERM landing there --
    a pool ended at once because its next pipe failed under `ulimit -n 16` -- went into the
    parent's wakeup pipe, and the parent's watchdog ended the parent 143 without a word. The
    SIGTERM is sent here at the earliest point of the child (an at-fork hook registered first,
    so it runs first), which is where the race put it."""
    script = tmp_path / "fork.py"
    script.write_text(
        "import os, signal, time\n"
        "os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGTERM))\n"
        "from tracer.cli import common\n"
        "with common._stop_signals_unwind():\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os._exit(0)\n"
        "    _, status = os.waitpid(pid, 0)\n"
        "    time.sleep(4 * common.STOP_GRACE_S)  # the watchdog would have ended us by now\n"
        "print('parent went on; child', os.waitstatus_to_exitcode(status), flush=True)\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=REPO, env=ENV, capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stdout.strip()) == (0, f"parent went on; child {-signal.SIGTERM}"), proc.stderr


def test_ingest_workers_under_ulimit_n_16_end_in_one_line_naming_the_limit(tmp_path):
    """`ingest -j 2` with 16 descriptors: exit 2 and one line naming the limit, every time (it
    was 'Too many open files' alone, and 143 with nothing at all in 2 runs of 8)."""
    spool = tmp_path / "sim"
    subprocess.run([sys.executable, "-m", "baseline.cli", "simulate", "--hosts", "3", "--hours", "1", "--seed", "2",
                    "--spool", "-o", str(spool)], cwd=tmp_path, env=ENV, check=True, capture_output=True)
    for run in range(6):
        proc = subprocess.run(["bash", "-c", f"ulimit -n 16; exec {sys.executable} -m baseline.cli ingest "
                               f"{spool / 'spool'} {tmp_path / 'ds'} --keep-spool -j 2"], cwd=tmp_path, env=ENV,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, (run, proc.returncode, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "found the limit of 16 reached" in proc.stderr, proc.stderr

"""One more turn of a directory sweep (`rules.files._sweep_turns`), recorded for real.

The HotSpot JVM sweeps /tmp/hsperfdata_<user>/ at start: for each pid-named file but its own it
opens it, takes a non-blocking flock, deletes it when the flock succeeds (that JVM is dead) and
leaves it on EAGAIN (alive). A run during which another JVM of the same user is alive makes one
turn more: the curated entry covers the EAGAIN, and the open of a path no good run took must
not be named either. The same sweep written in Python (os.scandir, then open and flock
LOCK_NB each entry) checks the rule without java, and its guards: a live lock that makes the
sweeper fail (exit 1), and a lock no allowlist entry covers, must still be named.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scenarios.harness import ENV, record_run

from baseline.run.diff import diff_traces

# The sweep HotSpot makes, in Python: list the directory, visit each pid-named entry but our
# own (open, flock LOCK_NB, remove when the lock is free), then write the result. `strict`:
# a live lock is fatal (the program fails where the JVM would go on).
SWEEP_PY = """\
import fcntl, os, sys
d, out, strict = sys.argv[1], sys.argv[2], sys.argv[3] == "strict"
left, me = 0, str(os.getpid())
with os.scandir(d) as entries:
    for entry in entries:
        if not entry.name.isdigit() or entry.name == me:
            continue
        fd = os.open(entry.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if strict:
                print(f"sweep: {entry.path} is locked by a live process", file=sys.stderr)
                sys.exit(1)
            left += 1
        else:
            os.unlink(entry.path)
        finally:
            os.close(fd)
with open(out, "w") as fh:
    fh.write(f"left {left}\\n")
"""

# A live process holding the lock of its pid-named file in the swept directory until its
# stdin closes; it says "ready" once the lock is taken.
HOLDER_PY = """\
import fcntl, os, sys
fd = os.open(os.path.join(sys.argv[1], str(os.getpid())), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("ready", flush=True)
sys.stdin.read()
"""

SWEEP_ENTRY = "curated-eagain-jvm-hsperfdata-sweep"
JAVA, JAVAC = shutil.which("java"), shutil.which("javac")
SLEEPER_JAVA = "public class Sleeper { public static void main(String[] a) throws Exception { Thread.sleep(150000); } }"
SHORT_JAVA = "public class Short { public static void main(String[] a) throws Exception { Thread.sleep(700); } }"


class Holder:
    """A live lock holder in `directory` while the `with` block runs (waits for its "ready")."""

    def __init__(self, directory: Path):
        self.directory = directory

    def __enter__(self) -> Holder:
        self.proc = subprocess.Popen([sys.executable, "-S", "-c", HOLDER_PY, str(self.directory)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        (self.directory / str(self.proc.pid)).unlink(missing_ok=True)


def _record_sweep(recorder, swept: Path, out: Path, label: str, mode: str) -> Path:
    argv = ["/usr/bin/python3", "-S", "-c", SWEEP_PY, str(swept), str(swept.parent / "result.txt"), mode]
    return record_run(recorder, argv, out / f"{label}.parquet", "good")


def _sweeps(recorder, tmp_path: Path, dirname: str, mode: str) -> tuple[list[Path], Path]:
    """Two sweeps of an empty directory, then one while a live holder's file is there."""
    swept, out = tmp_path / "run" / dirname, tmp_path / "out"
    swept.mkdir(parents=True)
    out.mkdir()
    goods = [_record_sweep(recorder, swept, out, f"good{i}", mode) for i in range(2)]
    with Holder(swept):
        other = _record_sweep(recorder, swept, out, "other", mode)
    return goods, other


def _describe(report) -> str:
    b = report.bifurcation or {}
    return f"{b.get('probe')} {b.get('errno')} {b.get('path')}"


def test_a_sweep_that_leaves_a_live_lock_is_one_more_turn(recorder, tmp_path):
    # hsperfdata_<user>/<pid>: the curated entry for the JVM's sweep covers the EAGAIN
    goods, other = _sweeps(recorder, tmp_path, "hsperfdata_job", "lenient")
    report = diff_traces(goods, other)
    assert SWEEP_ENTRY in report.expected_ignored["by_entry"], report.expected_ignored
    assert not report.anomaly, _describe(report)


def test_a_live_lock_the_sweeper_fails_on_is_still_named(recorder, tmp_path):
    goods, other = _sweeps(recorder, tmp_path, "hsperfdata_job", "strict")
    report = diff_traces(goods, other)
    assert report.anomaly
    named = [(a.get("probe"), a.get("path") or "") for a in report.anomalies]
    assert any(probe in ("openat", "flock") and "/hsperfdata_job/" in path for probe, path in named), named


def test_a_live_lock_no_entry_covers_is_still_named(recorder, tmp_path):
    # the same sweep of a directory no allowlist entry names: its EAGAIN is unexplained
    goods, other = _sweeps(recorder, tmp_path, "locks", "lenient")
    report = diff_traces(goods, other)
    assert report.anomaly
    named = [(a.get("probe"), a.get("path") or "") for a in report.anomalies]
    assert any(probe in ("openat", "flock") and "/locks/" in path for probe, path in named), named


def _hsperfdata_file(pid: int, deadline_s: float = 60.0) -> Path:
    """The live JVM's hsperfdata file, once it exists (it is made early in the JVM's start)."""
    want = f"/tmp/hsperfdata_{os.environ.get('USER') or 'root'}/{pid}"
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for d in Path("/tmp").glob("hsperfdata_*"):
            if (d / str(pid)).exists():
                return d / str(pid)
        time.sleep(0.05)  # polling for the file's creation: no event to wait on
    raise AssertionError(f"{want}: the sleeping JVM made no hsperfdata file within {deadline_s:.0f} s")


def test_a_jvm_start_while_another_jvm_runs_is_quiet(recorder, tmp_path):
    if not (JAVA and JAVAC):
        print("SKIP: java/javac not installed (apt-get install default-jdk-headless)", file=sys.stderr)
        pytest.skip("java/javac not installed")
    classes, out = tmp_path / "classes", tmp_path / "out"
    classes.mkdir()
    out.mkdir()
    for name, src in (("Sleeper", SLEEPER_JAVA), ("Short", SHORT_JAVA)):
        (classes / f"{name}.java").write_text(src)
    subprocess.run([JAVAC, "-d", str(classes), str(classes / "Sleeper.java"), str(classes / "Short.java")], check=True)
    argv = [JAVA, "-cp", str(classes), "Short"]
    goods = [record_run(recorder, argv, out / f"good{i}.parquet", "good") for i in range(2)]
    sleeper = subprocess.Popen([JAVA, "-cp", str(classes), "Sleeper"], env=ENV,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        perf = _hsperfdata_file(sleeper.pid)
        other = record_run(recorder, argv, out / "other.parquet", "good")
    finally:
        sleeper.terminate()  # SIGTERM: the JVM removes its hsperfdata file on the way out
        sleeper.wait(timeout=60)
    report = diff_traces(goods, other)
    assert SWEEP_ENTRY in report.expected_ignored["by_entry"], (perf, report.expected_ignored)
    assert not report.anomaly, _describe(report)

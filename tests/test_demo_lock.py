"""`python -m baseline.demo` (the quick start's `make demo`) run twice in one output directory:
the second refuses in one line while the first holds it (the two rebuilt and renamed each
other's job files: one's good runs failed, then a traceback), and runs once it is free."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _demo(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "baseline.demo", "--out", str(out), *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=600)


def test_a_second_demo_in_the_same_directory_is_refused(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    fd = os.open(out / ".demo.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a running demo holds it
        os.pwrite(fd, b"4242\n", 0)
        proc = _demo(out, "--skip-record", "--hosts", "2", "--hours", "1")
    finally:
        os.close(fd)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "another demo is running there (pid 4242)" in lines[0], proc.stderr
    assert not (out / "fleet").exists()  # nothing of the other demo's touched


def test_an_unwritable_output_directory_is_one_line(tmp_path):
    out = tmp_path / "file-not-dir"
    out.write_text("x")
    proc = _demo(out / "demo", "--skip-record")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "cannot write the demo's outputs" in proc.stderr

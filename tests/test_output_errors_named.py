"""An output that cannot be written is named as the user gave it, with the OS's reason: a
relative `-o ../out/m.parquet` is not turned into /abs/out/m.parquet, and a directory the checks
refuse before any work says why (read-only file system, or the owner and mode that refuse this
user) rather than a bare "not writable"; a run that failed on an empty directory leaves it
empty."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tracer import atomic

BIN = Path(sys.executable).parent
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@contextlib.contextmanager
def _tmpfs(target: Path, options: str):
    target.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], check=True)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def _run(cwd: Path, *argv: str, user: list[str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*(user or []), str(BIN / argv[0]), *argv[1:]], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


@needs_root
def test_a_read_only_output_directory_is_named_as_given_with_the_reason(tmp_path):
    work = tmp_path / "work"
    (work / "dataset").mkdir(parents=True)  # the checks run before the dataset is read
    with _tmpfs(tmp_path / "ro", "ro,size=1m"):
        for argv, line in (
            (["baseline", "learn", "dataset", "-o", "../ro/m.parquet"],
             "baseline: error: -o/--output ../ro/m.parquet: directory ../ro is not writable (read-only file system)"),
            (["baseline", "expected", "learn", "dataset", "-o", "../ro/e.yaml"],
             "baseline: error: -o/--output ../ro/e.yaml: directory ../ro is not writable (read-only file system)"),
            (["baseline", "audit", "dataset", "-o", "../ro/audit"],
             "baseline: error: -o/--output ../ro/audit: cannot create or write the directory "
             "(../ro is not writable: read-only file system)"),
        ):
            res = _run(work, *argv)
            assert (res.returncode, res.stderr.strip()) == (2, line), argv
        assert os.listdir(tmp_path / "ro") == []


@needs_root
def test_a_full_disk_names_the_relative_output_as_given(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    good = Path(__file__).parent / "recordings" / "sqlite_rw_fallback" / "good0.parquet"
    with _tmpfs(tmp_path / "full", "size=64k") as full:
        with contextlib.suppress(OSError), open(full / "ballast", "wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
        res = _run(work, "baseline", "allowlist", "learn", str(good), "-o", "../full/allow.yaml")
        assert (res.returncode, res.stderr.strip()) == (
            2, "baseline: error: ../full/allow.yaml: No space left on device"), res.stderr
        assert sorted(os.listdir(full)) == ["ballast"]  # no temporary left behind


@needs_root
def test_atomic_output_names_the_path_given_or_the_file_a_symlink_leads_to(tmp_path, monkeypatch):
    with _tmpfs(tmp_path / "ro", "ro,size=1m"):
        monkeypatch.chdir(tmp_path)
        with pytest.raises(OSError) as err, atomic.atomic_output("ro/x.bin") as fh:
            fh.write(b"x")
        assert err.value.filename == "ro/x.bin"
        (tmp_path / "link").symlink_to(tmp_path / "ro" / "y.bin")
        with pytest.raises(OSError) as err, atomic.atomic_output("link") as fh:
            fh.write(b"x")
        assert err.value.filename == str(tmp_path / "ro" / "y.bin")  # the file that could not be written


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="running as another user needs root and setpriv")
def test_a_directory_refusing_this_user_says_owner_mode_and_uid():
    top = Path(tempfile.mkdtemp(prefix="tracebase-unwritable-", dir="/tmp"))  # pytest's tmp is 0700
    try:
        top.chmod(0o755)
        locked = top / "locked"
        (locked / "dataset").mkdir(parents=True)
        locked.chmod(0o555)
        res = _run(locked, "baseline", "learn", "dataset", "-o", "m.parquet", user=NOBODY)
        assert (res.returncode, res.stderr.strip()) == (
            2, "baseline: error: -o/--output m.parquet: directory . is not writable "
               "(permission denied: owner uid 0, mode 0555, this process uid 65534)"), res.stderr
        assert atomic.unwritable_reason(top / "nonexistent") == "no such file or directory"
    finally:
        shutil.rmtree(top)


@needs_root
def test_a_failed_simulate_into_an_empty_directory_leaves_it_empty(tmp_path):
    with _tmpfs(tmp_path / "full", "size=32k") as full:
        (full / "fleet").mkdir()
        res = _run(full, "baseline", "simulate", "--hosts", "4", "--hours", "1", "-o", "fleet")
        assert res.returncode == 2 and res.stderr.startswith("baseline: error: fleet/") \
            and "No space left on device" in res.stderr, res.stderr
        assert os.listdir(full / "fleet") == []  # not even the dataset lock it took


@needs_root
def test_a_tracer_run_whose_probes_cannot_attach_leaves_the_spool_as_it_found_it(tmp_path):
    """The default rdma set's probes are absent from this kernel (no RDMA driver): the start is
    refused after the spool's host directory and writer lock were made; they go again."""
    existing = tmp_path / "existing"
    (existing / "other-host").mkdir(parents=True)
    for spool in (tmp_path / "fresh" / "spool", existing):
        res = _run(tmp_path, "tracer", "run", "--spool", str(spool), "--host", "h1", "-d", "2s")
        if "cannot attach" not in res.stderr:
            pytest.skip(f"the rdma set attached here or the start failed otherwise: {res.stderr.strip()[-300:]}")
        assert res.returncode == 2, res.stderr
    assert not (tmp_path / "fresh").exists()  # neither the spool nor its parent, both made by the run
    assert sorted(p.name for p in existing.iterdir()) == ["other-host"]

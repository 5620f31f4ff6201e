"""A job's cache or checkpoint warm in some good runs and cold in others, recorded for real with
`tracer record`: the good runs diffed against one another must be quiet, and the same program
with a real fault (a missing output directory, an immutable cache directory, a full disk under
the checkpoint) must be named at its bifurcation point.

* A shell script's cache, ``[ -f cache/x ] || { mkdir -p cache; sha256sum p > cache/x.tmp &&
  mv cache/x.tmp cache/x; }``, cold in the third run only. The fill is made by processes only
  the cold run starts (mkdir, sha256sum, mv); main named the shell's existence check (newfstatat
  ENOENT), then mkdir's statfs ENOENT of /sys/fs/selinux (realscout22's scratch case). See
  `_warm_caches_refilled_by_children` in baseline/run/rules/files.py.
* A python job that resumes from its checkpoint when there is one and writes it through
  tempfile.mkstemp + os.replace (a random temp name per write): quiet on main already, kept as
  a guard beside the shell case (its fill is the missing thread's own, `_warm_caches_refilled`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from scenarios.harness import record_run

from baseline.run.diff import diff_traces

SCRIPT = """set -e
cd "$1"
[ -f cache/x ] || { mkdir -p cache; sha256sum p > cache/x.tmp && mv cache/x.tmp cache/x; }
cat cache/x > out/result.txt
"""

JOB = """import json, os, sys, tempfile
base = sys.argv[1]
state = os.path.join(base, "ckpt", "state.json")
step = 0
if os.path.exists(state):  # resume
    with open(state) as f:
        step = json.load(f)["step"]
for _ in range(3):
    step += 1
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(state), prefix=".state-", suffix=".partial")
    with os.fdopen(fd, "w") as f:
        json.dump({"step": step, "pad": "x" * 2048}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, state)
with open(os.path.join(base, "out", "done.txt"), "w") as f:
    f.write(str(step))
"""


def _fresh(base: Path) -> None:
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    (base / "out").mkdir()


def _record_script(recorder, base: Path, out: Path, label: str, warm: bool, fault: str | None = None) -> Path:
    """The cache script, its cache warm or cold; `fault`: "no_out" (out/ missing) or
    "immutable" (cache/ there but immutable, so the shell cannot create cache/x.tmp)."""
    _fresh(base)
    (base / "p").write_text("payload\n")
    (base / "run.sh").write_text(SCRIPT)
    if warm:
        (base / "cache").mkdir()
        (base / "cache" / "x").write_text("cached digest\n")
    if fault == "no_out":
        (base / "out").rmdir()
    if fault == "immutable":
        (base / "cache").mkdir()
        subprocess.run(["chattr", "+i", str(base / "cache")], check=True, capture_output=True)
    try:
        return record_run(recorder, ["/bin/sh", str(base / "run.sh"), str(base)], out / f"{label}.parquet",
                          "bad" if fault else "good")
    finally:
        if fault == "immutable":
            subprocess.run(["chattr", "-i", str(base / "cache")], check=True, capture_output=True)


def _quiet(goods: list[Path], other: Path) -> None:
    report = diff_traces(good=goods, bad=other)
    bif = report.bifurcation or {}
    assert not report.anomaly, f"good vs good: {bif.get('probe')} {bif.get('errno')} {bif.get('path')}"


def _named(goods: list[Path], bad: Path, probe: str, errno: str, path_glob: str) -> None:
    bif = diff_traces(good=goods, bad=bad).bifurcation
    assert bif is not None and (bif.get("probe"), bif.get("errno")) == (probe, errno), bif
    assert fnmatch.fnmatchcase(bif.get("path") or "", path_glob), bif


@pytest.fixture()
def dirs(tmp_path) -> tuple[Path, Path]:
    base, out = tmp_path / "base", tmp_path / "out"
    out.mkdir()
    return base, out


def test_a_shell_scripts_cache_cold_in_one_run_is_quiet_and_its_faults_are_named(recorder, dirs):
    base, out = dirs
    warm = [_record_script(recorder, base, out, f"warm{i}", warm=True) for i in range(2)]
    cold = [_record_script(recorder, base, out, f"cold{i}", warm=False) for i in range(2)]
    _quiet(warm, cold[0])  # main: newfstatat ENOENT cache/x, then statfs ENOENT /sys/fs/selinux
    _quiet([warm[0], cold[0]], warm[1])
    _quiet([warm[0], cold[0]], cold[1])
    _named(warm, _record_script(recorder, base, out, "no_out", warm=False, fault="no_out"),
           "openat", "ENOENT", f"{base}/out/result.txt")
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed: the immutable cache directory's fault is not recorded")
    _named(warm, _record_script(recorder, base, out, "immutable", warm=False, fault="immutable"),
           "openat", "EPERM", f"{base}/cache/x.tmp")


@pytest.fixture()
def full_mount(tmp_path):
    """A 256 KiB tmpfs, filled but for a few bytes: a write of a page fails ENOSPC."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        with open(mnt / "filler", "wb") as f, contextlib.suppress(OSError):  # (ENOSPC: full, as meant)
            f.write(b"\0" * (256 << 10))
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True, capture_output=True)


def _record_job(recorder, base: Path, out: Path, label: str, warm: bool, fault: str | None = None,
                full: Path | None = None) -> Path:
    """The checkpointing job; `fault`: "no_out" (out/ missing) or "full" (ckpt/ a link to a
    full mount)."""
    _fresh(base)
    (base / "job.py").write_text(JOB)
    if fault == "full":
        (base / "ckpt").symlink_to(full)
        for leftover in full.glob(".state-*"):
            leftover.unlink()
    else:
        (base / "ckpt").mkdir()
    if warm and fault != "full":
        (base / "ckpt" / "state.json").write_text('{"step": 7}')
    if fault == "no_out":
        (base / "out").rmdir()
    return record_run(recorder, ["/usr/bin/python3", "-S", str(base / "job.py"), str(base)], out / f"{label}.parquet",
                      "bad" if fault else "good")


def test_a_checkpoint_written_through_a_random_temp_name_is_quiet_and_its_faults_are_named(recorder, dirs,
                                                                                            full_mount):
    base, out = dirs
    warm = [_record_job(recorder, base, out, f"warm{i}", warm=True) for i in range(2)]
    cold = [_record_job(recorder, base, out, f"cold{i}", warm=False) for i in range(3)]
    _quiet(warm, cold[0])  # resumed in the good runs, started afresh here; temp names of their own
    _quiet(cold[:2], cold[2])
    _named(warm, _record_job(recorder, base, out, "no_out", warm=False, fault="no_out"),
           "openat", "ENOENT", f"{base}/out/done.txt")
    _named(cold[:2], _record_job(recorder, base, out, "full", warm=False, fault="full", full=full_mount),
           "write", "ENOSPC", f"{base}/ckpt/.state-*.partial")
    assert os.path.ismount(full_mount)

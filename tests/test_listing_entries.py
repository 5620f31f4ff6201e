"""One more entry in a listing a program walks is the host's contents, not the run going wrong.

`df` statfs()es every mount in the mount table; on a shared machine other sessions' mounts come
and go between runs (the fresh-clone CI failed `df_mounts_vary` when a helper's test mounted a
tmpfs between two good runs: "newfstatat /tmp/.../mnt" named). Real programs, recorded for real,
with the listing changed by the test: a tmpfs mounted during one run only; a directory with one
file more. The extra lookups must be quiet; the same change must still be named when it is more
than a lookup (the extra file opened and read), when the lookup fails, or when the run exits
with another status.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from scenarios.harness import record_run

from baseline.run.diff import diff_traces

# os.stat over a directory's sorted entries; exit 1 when one is named STOP (an outcome change)
STAT_ALL_PY = ("import os, sys\n"
               "d = sys.argv[1]\n"
               "for n in sorted(os.listdir(d)):\n"
               "    os.stat(os.path.join(d, n))\n"
               "sys.exit(1 if 'STOP' in os.listdir(d) else 0)\n")
# the same loop, stat()ing a name list read from a file (a name missing: a failed lookup)
STAT_LISTED_PY = ("import os, sys\n"
                  "d = sys.argv[1]\n"
                  "for n in open(os.path.join(d, 'names')).read().split():\n"
                  "    try: os.stat(os.path.join(d, n))\n"
                  "    except FileNotFoundError: pass\n")


@pytest.fixture(scope="module")
def base():
    root = Path(f"/tmp/tracebase-listing.{os.getpid()}")
    root.mkdir()
    yield root
    subprocess.run(["umount", "-q", str(root / "mnt")], check=False)
    shutil.rmtree(root, ignore_errors=True)


def _entries(d: Path, names: list[str]) -> None:
    if d.exists():
        shutil.rmtree(d)
    d.mkdir()
    for n in names:
        (d / n).write_text(n)


def _diff(recorder, tmp_path: Path, argv: list[str], prepare) -> object:
    """Three runs (prepare(i) before each): the first two good, diffed against the third."""
    files = []
    for i in range(3):
        prepare(i)
        files.append(record_run(recorder, argv, tmp_path / f"run{i}.parquet", "good"))
    return diff_traces(good=files[:2], bad=files[2])


@pytest.mark.parametrize("mounted_in", [2, 0], ids=["bad run", "first good run"])
def test_df_with_another_sessions_mount_is_quiet(recorder, base, tmp_path, mounted_in):
    mnt = base / "mnt"
    mnt.mkdir(exist_ok=True)

    def prepare(i: int) -> None:
        subprocess.run(["umount", "-q", str(mnt)], check=False)
        if i == mounted_in:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)

    try:
        report = _diff(recorder, tmp_path, ["/usr/bin/df", "-h"], prepare)
    finally:
        subprocess.run(["umount", "-q", str(mnt)], check=False)
    assert not report.anomaly, report.bifurcation


def test_a_directory_with_one_file_more_stat_ed_is_quiet(recorder, base, tmp_path):
    d = base / "dir"
    report = _diff(recorder, tmp_path, ["/usr/bin/python3", "-S", "-c", STAT_ALL_PY, str(d)],
                   lambda i: _entries(d, ["a", "b", "c"] + (["d"] if i == 2 else [])))
    assert not report.anomaly, report.bifurcation


def test_the_extra_file_opened_and_read_is_still_named(recorder, base, tmp_path):
    d = base / "cat"
    report = _diff(recorder, tmp_path, ["/bin/sh", "-c", f"cat {d}/*"],
                   lambda i: _entries(d, ["a", "b", "c"] + (["d"] if i == 2 else [])))
    assert report.anomaly and report.bifurcation["path"] == str(d / "d"), report.bifurcation


def test_an_extra_lookup_that_fails_is_still_named(recorder, base, tmp_path):
    d = base / "listed"

    def prepare(i: int) -> None:
        _entries(d, ["a", "b", "c"])
        (d / "names").write_text("a b c" + (" gone" if i == 2 else ""))

    report = _diff(recorder, tmp_path, ["/usr/bin/python3", "-S", "-c", STAT_LISTED_PY, str(d)], prepare)
    assert report.anomaly and report.bifurcation["errno"] == "ENOENT", report.bifurcation
    assert report.bifurcation["path"] == str(d / "gone")


def test_an_extra_entry_that_changes_the_exit_status_is_still_named(recorder, base, tmp_path):
    d = base / "stop"
    report = _diff(recorder, tmp_path, ["/usr/bin/python3", "-S", "-c", STAT_ALL_PY, str(d)],
                   lambda i: _entries(d, ["a", "b", "c"] + (["STOP"] if i == 2 else [])))
    assert report.anomaly and report.bifurcation["path"] == str(d / "STOP"), report.bifurcation

"""Where a fleet daemon spills its held intervals when the spool is still failing at exit.

The first choice is $TMPDIR/tracebase-spool: usually /tmp, where every user may create that name
before the root daemon needs it. A directory someone else owns (or anyone may write to), or a
symbolic link by that name, is passed over for the next place (the cwd), and the log says why.
Real daemons' spool side (no BPF), real Parquet read back."""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import pytest

from tracer.fleet.spool import list_snapshots, read_spool

NOBODY = 65534


def _held_daemon(spool: Path, whens: list[int]):
    """A daemon holding one interval per `whens` (what a failing spool leaves at exit)."""
    from tracer.fleet.daemon import Daemon, HeldSnapshot, RunConfig
    from tracer.fleet.spool import counters_table, events_table

    d = Daemon(RunConfig(sets=["syscalls"], spool=spool, host="h1", log=io.StringIO()))
    d.prepare()
    for seq, when in enumerate(whens):
        counters = counters_table([{"host": "h1", "snapshot_time": when, "interval_s": 5.0, "probe": "openat",
                                    "layer": "syscall", "live": True, "invocations": 7 + seq, "failures": 0}])
        d.held.append(HeldSnapshot(events_table([]), counters, when, seq))
    d._seq = len(whens)
    return d


@pytest.fixture
def places(tmp_path, monkeypatch):
    """($TMPDIR, cwd) of the spilling daemon, both empty."""
    tmpdir, cwd = tmp_path / "tmp", tmp_path / "cwd"
    tmpdir.mkdir()
    cwd.mkdir()
    tmpdir.chmod(0o1777)  # like /tmp
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    monkeypatch.chdir(cwd)
    return tmpdir, cwd


def _spill(spool: Path) -> tuple[Path | None, str]:
    t0 = 1_764_900_000_000_000_000
    d = _held_daemon(spool, [t0 + 1, t0 + 5 * 10**9 + 1])
    try:
        spilled = d.spill_held()
    finally:
        d.close()
    assert not d.held
    return spilled, d.cfg.log.getvalue()


def _read_back(spool: Path) -> list[int]:
    assert len(list_snapshots(spool, "h1")) == 2
    return read_spool(spool, "counters", "h1")["invocations"].to_list()


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a directory another user owns")


@needs_root
def test_a_directory_another_user_made_first_is_passed_over(places, tmp_path):
    tmpdir, cwd = places
    planted = tmpdir / "tracebase-spool"
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)
    os.chown(planted, NOBODY, NOBODY)
    spilled, log = _spill(tmp_path / "spool")
    assert spilled == cwd / "tracebase-spool", log
    assert _read_back(spilled) == [7, 8]
    assert list(planted.iterdir()) == []  # nothing of ours for the other user to read
    assert f"not spilling into {planted} (owned by uid {NOBODY}, not 0)" in log, log


def test_a_symbolic_link_by_that_name_is_not_followed(places, tmp_path):
    tmpdir, cwd = places
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmpdir / "tracebase-spool").symlink_to(elsewhere)
    spilled, log = _spill(tmp_path / "spool")
    assert spilled == cwd / "tracebase-spool", log
    assert _read_back(spilled) == [7, 8]
    assert list(elsewhere.iterdir()) == []
    assert f"not spilling into {tmpdir / 'tracebase-spool'} (a symbolic link)" in log, log


def test_a_world_writable_directory_of_ours_is_passed_over(places, tmp_path):
    tmpdir, cwd = places
    planted = tmpdir / "tracebase-spool"
    planted.mkdir()
    planted.chmod(0o777)
    spilled, log = _spill(tmp_path / "spool")
    assert spilled == cwd / "tracebase-spool", log
    assert "writable by every user, mode drwxrwxrwx" in log, log


def test_our_own_directory_still_takes_the_spill(places, tmp_path):
    """The guard: the spill directory a previous run of ours made is used as before."""
    tmpdir, cwd = places
    (tmpdir / "tracebase-spool").mkdir(mode=0o755)
    spilled, log = _spill(tmp_path / "spool")
    assert spilled == tmpdir / "tracebase-spool", log
    assert _read_back(spilled) == [7, 8]
    assert "not spilling" not in log and not (cwd / "tracebase-spool").exists()

"""tracer.atomic: whole-or-nothing writes whose permissions follow the umask; a rewritten file
keeps its mode and owner; directories are never world-writable; OS errors name the file."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from tracer import atomic


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture()
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


@pytest.mark.parametrize(("mask", "file_mode", "dir_mode"),
                         [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700), (0o000, 0o666, 0o775), (0o002, 0o664, 0o775)])
def test_new_files_and_dirs_follow_the_umask(tmp_path, umask, mask, file_mode, dir_mode):
    umask(mask)
    assert atomic.current_umask() == mask
    out = atomic.write_text(tmp_path / "a" / "b" / "out.txt", "x")
    assert _mode(out) == file_mode
    assert _mode(tmp_path / "a") == dir_mode and _mode(tmp_path / "a" / "b") == dir_mode
    assert not _mode(tmp_path / "a") & stat.S_IWOTH  # never world-writable
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["out.txt"]  # no temp left


def test_rewrite_keeps_mode_and_owner(tmp_path, umask):
    umask(0o077)
    target = tmp_path / "allow.yaml"
    target.write_text("old")
    os.chmod(target, 0o644)
    os.chown(target, 65534, 65534) if os.geteuid() == 0 else None
    before = os.stat(target)
    atomic.write_text(target, "new")
    after = os.stat(target)
    assert target.read_text() == "new"
    assert _mode(target) == 0o644 and (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    assert after.st_ino != before.st_ino  # replaced by rename, not rewritten in place


def test_make_dirs_refuses_a_file_in_the_way(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError) as err:
        atomic.make_dirs(tmp_path / "f" / "sub")
    assert str(tmp_path / "f") in str(err.value.filename)


def test_output_onto_a_directory_is_eisdir(tmp_path):
    with pytest.raises(IsADirectoryError) as err:
        atomic.write_text(tmp_path, "x")
    assert err.value.filename == str(tmp_path)


def test_failed_write_names_the_file_and_leaves_nothing(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs needs root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    try:
        with pytest.raises(OSError) as err:
            atomic.write_bytes(mnt / "big.bin", b"x" * (1 << 20))
        assert err.value.filename == str(mnt / "big.bin") and "No space left" in str(err.value)
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=True)

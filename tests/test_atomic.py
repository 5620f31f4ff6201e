"""tracer.atomic: whole-or-nothing writes whose permissions follow the umask; a rewritten file
keeps its mode and owner; directories are never world-writable; OS errors name the file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

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


# ---------------------------------------------------------------- outputs that are not files
ROOT = os.geteuid() == 0


@pytest.mark.skipif(not ROOT, reason="creating a device node needs root")
def test_a_character_device_is_written_through_never_replaced(tmp_path):
    # a private /dev/null: as root, a rename over the real one would replace it for every
    # program on the machine (it did: `tracer record -o /dev/zero` left a regular file there)
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    atomic.write_bytes(null, b"trace")
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temp file left


@pytest.mark.skipif(not ROOT, reason="creating a device node needs root")
def test_a_block_device_is_refused(tmp_path):
    disk = tmp_path / "disk"
    os.mknod(disk, 0o600 | stat.S_IFBLK, os.makedev(7, 200))
    with pytest.raises(OSError, match="block device") as err:
        atomic.write_bytes(disk, b"trace")
    assert err.value.filename == str(disk)
    assert stat.S_ISBLK(os.stat(disk).st_mode)


def test_a_fifo_is_written_through_to_its_reader(tmp_path):
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader_ready = threading.Event()

    def read() -> None:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # opened before the writer: it has a reader
        # a write end of our own: until the writer opens, a read would see end-of-file
        keep = os.open(fifo, os.O_WRONLY)
        reader_ready.set()
        os.set_blocking(fd, True)
        data = b""
        while len(data) < 200_000:
            data += os.read(fd, 65536)
        os.close(keep)
        os.close(fd)
        got.append(data)

    t = threading.Thread(target=read)
    t.start()
    reader_ready.wait(5)
    atomic.write_bytes(fifo, b"x" * 200_000)  # more than a pipe holds: the reader drains it
    t.join(10)
    assert got == [b"x" * 200_000]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_fifo_nobody_reads_fails_at_once_naming_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="no process is reading") as err:
        atomic.write_bytes(fifo, b"trace")
    assert err.value.filename == str(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_link_to_our_own_descriptor_writes_into_it(tmp_path):
    # /dev/stdout is such a link; a private one, so a regression cannot replace the system's
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    code = f"from tracer import atomic; atomic.write_bytes({str(link)!r}, b'hello')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                          cwd=Path(atomic.__file__).parents[1])
    assert proc.stdout == b"hello"
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stdout"]


def test_a_symlinked_output_replaces_its_target_and_keeps_the_link(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "7.parquet").write_bytes(b"old")
    latest = tmp_path / "latest.parquet"
    latest.symlink_to("runs/7.parquet")
    atomic.write_bytes(latest, b"new")
    assert latest.is_symlink()
    assert (tmp_path / "runs" / "7.parquet").read_bytes() == b"new"
    dangling = tmp_path / "next.parquet"
    dangling.symlink_to("runs/8.parquet")
    atomic.write_bytes(dangling, b"eight")
    assert dangling.is_symlink() and (tmp_path / "runs" / "8.parquet").read_bytes() == b"eight"


def test_output_dirs_removes_what_a_failed_run_created_and_keeps_files(tmp_path):
    out = tmp_path / "a" / "b"
    with pytest.raises(OSError), atomic.output_dirs(out):
        atomic.make_dirs(out / ".sets" / "set-1")
        raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []  # a/, a/b/ and the empty dirs beneath: all gone
    # a directory holding a file is kept (with its parents): nothing written is removed
    with pytest.raises(OSError), atomic.output_dirs(out):
        atomic.write_text(out / "findings.txt", "x")
        atomic.make_dirs(out / "empty")
        raise OSError(28, "No space left on device")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["a", "a/b", "a/b/findings.txt"]
    # an existing directory is left as it was
    with pytest.raises(OSError), atomic.output_dirs(out):
        raise OSError(30, "Read-only file system")
    assert (out / "findings.txt").read_text() == "x"


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid  # reaped: no process has it (until the kernel hands it out again)


def test_staged_dir_appears_whole_or_not_at_all(tmp_path):
    out = tmp_path / "new" / "dataset"
    with pytest.raises(OSError) as info, atomic.staged_dir(out) as staging:
        assert staging != out and staging.name.startswith(".dataset.")
        atomic.make_dirs(staging / "events")
        atomic.write_text(staging / "events" / "part-0.parquet", "x")
        raise OSError(28, "No space left on device", str(staging / "events" / "part-1.parquet"))
    assert list(tmp_path.iterdir()) == []  # no partial tree, no staging dir, no parent it made
    assert info.value.filename == str(out / "events" / "part-1.parquet")  # the path the user gave
    with atomic.staged_dir(out) as staging:
        atomic.write_text(staging / "a.txt", "whole")
        assert not out.exists()  # readers see nothing until the tree is complete
    assert (out / "a.txt").read_text() == "whole"
    assert [p.name for p in out.parent.iterdir()] == ["dataset"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o775 & ~atomic.current_umask()
    # a staging directory left by a writer killed with -9 is removed by the next writer; a live one's is not
    dead = _dead_pid()
    left, live = out.parent / f".other.{dead}-0123abcd.tmp", out.parent / f".other.{os.getpid()}-0123abcd.tmp"
    for d in (left, live):
        (d / "events").mkdir(parents=True)
    with atomic.staged_dir(out.parent / "other"):
        pass
    assert not left.exists() and live.exists()
    with atomic.staged_dir(out) as same:  # an existing directory is written in place
        assert same == out
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError), atomic.staged_dir(tmp_path / "file"):
        pass


def test_staged_merge_into_an_existing_tree_moves_in_whole_or_not_at_all(tmp_path):
    out = tmp_path / "dataset"
    atomic.make_dirs(out / "events" / "host=a")
    atomic.write_text(out / "events" / "host=a" / "part-0.parquet", "old a")
    atomic.write_text(out / "events" / "keep.parquet", "kept")
    # a failure (a stop) half-way: the existing tree as it was, no staging left
    with pytest.raises(KeyboardInterrupt), atomic.staged_merge(out) as staging:
        assert staging.parent == out and staging.name.startswith(".dataset.")
        atomic.make_dirs(staging / "events" / "host=a")
        atomic.write_text(staging / "events" / "host=a" / "part-0.parquet", "new a")
        raise KeyboardInterrupt
    assert (out / "events" / "host=a" / "part-0.parquet").read_text() == "old a"
    assert sorted(p.name for p in out.iterdir()) == ["events"]
    # success: files replaced and added, others kept, the staging gone
    with atomic.staged_merge(out) as staging:
        for host in ("a", "b"):
            atomic.make_dirs(staging / "events" / f"host={host}")
            atomic.write_text(staging / "events" / f"host={host}" / "part-0.parquet", f"new {host}")
        assert (out / "events" / "host=a" / "part-0.parquet").read_text() == "old a"
    assert (out / "events" / "host=a" / "part-0.parquet").read_text() == "new a"
    assert (out / "events" / "host=b" / "part-0.parquet").read_text() == "new b"
    assert (out / "events" / "keep.parquet").read_text() == "kept"
    assert sorted(p.name for p in out.iterdir()) == ["events"]
    # a staging a writer killed with -9 left inside is removed by the next merge; a live one's is not
    left, live = out / f".dataset.{_dead_pid()}-0123abcd.tmp", out / f".dataset.{os.getpid()}-0123abcd.tmp"
    for d in (left, live):
        (d / "events").mkdir(parents=True)
    with atomic.staged_merge(out):
        pass
    assert not left.exists() and live.exists()
    # a new tree: staged beside it, as staged_dir does
    with atomic.staged_merge(tmp_path / "fresh") as staging:
        assert staging.parent == tmp_path and not (tmp_path / "fresh").exists()
    assert (tmp_path / "fresh").is_dir()


@pytest.mark.skipif(not ROOT, reason="mounting a tiny tmpfs needs root")
def test_simulate_and_coverage_on_a_full_disk_leave_nothing_behind(tmp_path):
    """A real ENOSPC half-way through many files: no partial dataset or report that a reader
    would take for a whole one, and the error names the path the user gave."""
    baseline = Path(sys.executable).parent / "baseline"
    dataset = tmp_path / "ds"
    subprocess.run([baseline, "simulate", "--hosts", "3", "--hours", "1", "--out", dataset], check=True,
                   capture_output=True)
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", disk]).returncode:
        pytest.skip("tmpfs could not be mounted here")
    try:
        for argv, out in (([baseline, "simulate", "--hosts", "20", "--hours", "2", "--out", disk / "sim"], "sim"),
                          ([baseline, "coverage", dataset, "-o", disk / "reports"], "reports")):
            proc = subprocess.run(argv, capture_output=True, text=True)
            assert proc.returncode == 2, proc.stderr
            assert "No space left on device" in proc.stderr and f"{disk}/{out}" in proc.stderr, proc.stderr
            assert ".tmp" not in proc.stderr, proc.stderr
            assert list(disk.iterdir()) == [], argv
    finally:
        subprocess.run(["umount", "-l", disk])


def _writer_holding_its_temporary(out: Path) -> subprocess.Popen:
    """A process in the middle of an atomic write of `out` (its temporary created and written)."""
    code = ("import sys, time\nfrom tracer import atomic\n"
            "with atomic.atomic_output(sys.argv[1]) as fh:\n"
            "    fh.write(b'x' * 4096); fh.flush(); print('ready', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, text=True,
                            cwd=Path(atomic.__file__).parents[1])
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_the_next_write_removes_temporaries_of_killed_writers_only(tmp_path):
    """kill -9 (or the OOM killer) mid-write leaves the hidden temporary; no rerun removed it,
    so an audit killed every hour filled the disk. The next write of the same name removes the
    temporaries whose writer is gone, and leaves a live writer's alone."""
    out = tmp_path / "model.parquet"
    killed = _writer_holding_its_temporary(out)
    killed.kill()
    killed.wait()
    (dead,) = (p.name for p in tmp_path.iterdir())
    assert dead.startswith(f".model.parquet.{killed.pid}-") and dead.endswith(".tmp")
    alive = _writer_holding_its_temporary(out)  # its own temporary's creation removes the dead one
    try:
        (live,) = (p.name for p in tmp_path.iterdir())
        assert live.startswith(f".model.parquet.{alive.pid}-"), live
        atomic.write_bytes(out, b"whole")
        assert sorted(p.name for p in tmp_path.iterdir()) == [live, "model.parquet"]
        assert out.read_bytes() == b"whole"
    finally:
        alive.kill()
        alive.wait()
    atomic.write_bytes(out, b"again")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.parquet"]


@pytest.mark.parametrize("kind", ["dangling", "loop", "file", "fifo"])
def test_an_output_directory_name_taken_says_what_took_it(tmp_path, kind):
    """`-o DIR` where DIR is a symbolic link to a volume not mounted yet, a link loop, a file or a
    FIFO: each writer of a directory says what it found there ("Not a directory" alone, for a link
    whose target is missing, sent the user looking for a file), exit 2, and writes nothing."""
    from cli_harness import one_line_error, run_shell

    out = tmp_path / "out"
    found = {
        "dangling": (lambda: out.symlink_to(tmp_path / "unmounted" / "fleet"),
                     f"a symbolic link to {tmp_path}/unmounted/fleet, which does not exist"),
        "loop": (lambda: out.symlink_to(out), f"a symbolic link to {out} (Too many levels of symbolic links)"),
        "file": (lambda: out.write_text("notes\n"), "a regular file"),
        "fifo": (lambda: os.mkfifo(out), "a FIFO (named pipe)"),
    }
    made = run_shell("baseline simulate --hosts 2 --hours 1 -o fleet", tmp_path)
    assert made.returncode == 0, made.stderr
    make, words = found[kind]
    make()
    for argv in (f"baseline simulate --hosts 2 --hours 1 -o {out}", f"baseline coverage fleet -o {out}"):
        err = one_line_error(run_shell(argv, tmp_path))
        assert f"{out}: Not a directory: {out} is {words}" in err, (argv, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet", "out"]
    # the library's own error, for every caller of make_dirs and staged_dir
    with pytest.raises(NotADirectoryError, match=f"Not a directory: {out} is "):
        atomic.make_dirs(out / "sub")

"""Files that appear whole or not at all, with the permissions the user asked for.

Every writer in tracebase goes through here (Parquet through tracer.schema.write_table), so a
crash mid-write leaves at most a hidden '.<name>.<pid>-<random>.tmp' file, which directory scans
skip, never a half file under the final name; the next write of <name> removes it once that pid is
gone. An output that already exists as a device or pipe
(`-o /dev/null`, `-o /dev/stdout`, a FIFO) is written through, never replaced by a rename.

Permissions (least privilege, but readable where the umask says so):
- a new file is created 0666 & ~umask, like any tool's output (mkstemp's fixed 0600 made every
  dataset, report and Prometheus textfile unreadable to node_exporter or an unprivileged
  analysis user);
- a file that is rewritten keeps its mode and owner (an allowlist someone made 0644 stays so);
  one this process may not write (another user's, or made read-only) is refused, not replaced;
- directories are created 0775 & ~umask: never world-writable, even under umask 000 (a
  world-writable spool or dataset would let any user plant snapshots or Parquet files).
Use `make_dirs` for every directory a writer creates (`output_dirs` for a command's output
tree, which a failed run must not leave behind empty).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tracer.errors import file_kind

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (5-10 ms of every command's start)
if TYPE_CHECKING:
    import ctypes
    from typing import BinaryIO

FILE_MODE = 0o666  # the kernel applies the umask
DIR_MODE = 0o775  # ditto; never o+w

# The temporaries (files and staging directories) this process is writing, for a stop that
# cannot wait for the main thread: a SIGTERM arriving during a long native polars/pyarrow call
# is heard by Python only when the call returns (seconds on a 10,000-host day), so the CLI's
# stop watchdog removes these itself and exits (tracer.cli.common). path -> is a directory.
_PENDING: dict[str, bool] = {}


def _pending(path: Path, is_dir: bool) -> None:
    _PENDING[str(path)] = is_dir


def _done(path: Path) -> None:
    _PENDING.pop(str(path), None)


def _forget_pending() -> None:
    """In a forked child: the temporaries in _PENDING are the parent's, still being written by
    it. A child that abandoned them (a stop watchdog, a library caller's cleanup) removed the
    parent's temp file or staging directory from under it; the child's own writes register anew."""
    _PENDING.clear()


os.register_at_fork(after_in_child=_forget_pending)


def abandon_pending() -> list[str]:
    """Remove every temporary this process is still writing (called by the stop watchdog just
    before the process exits on SIGTERM/SIGINT/SIGHUP while the main thread is in native code):
    what a reader could see afterwards is the old output or nothing, never a temporary. A
    native writer still holding a file open writes on into an unlinked inode. Returns the paths."""
    removed = []
    for path, is_dir in list(_PENDING.items()):
        if is_dir:
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
        removed.append(path)
    return removed


def current_umask() -> int:
    """The process umask, read without changing it (os.umask is set-and-return: another thread
    creating a file in between would get umask 0)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def make_dirs(path: str | os.PathLike) -> Path:
    """mkdir -p with mode 0775 & ~umask for every directory it creates (never world-writable).

    Existing directories are left as they are. A component that exists but is not a directory
    raises NotADirectoryError naming it.
    """
    _make_dirs(Path(path))
    return Path(path)


def _make_dirs(path: Path) -> list[Path]:
    """make_dirs; returns the directories it created, outermost first."""
    missing: list[Path] = []
    p = path
    while True:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            missing.append(p)
            if p.parent == p:
                break
            p = p.parent
            continue
        except OSError as exc:
            # (ENOTDIR, ELOOP: a file, a FIFO or a link that leads nowhere is on the way; name it)
            if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                blocking = next((q for q in (p, *p.parents) if os.path.lexists(q) and not q.is_dir()), None)
                if blocking is not None:
                    raise not_a_directory(blocking) from None
            raise
        if not stat.S_ISDIR(st.st_mode):
            raise not_a_directory(p)
        break
    created: list[Path] = []
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
            created.append(d)
        except FileExistsError:  # created meanwhile by a concurrent writer
            if not d.is_dir():
                raise not_a_directory(d) from None
    return created


@contextmanager
def output_dirs(path: str | os.PathLike) -> Iterator[Path]:
    """make_dirs(path) for a command's output tree. If the body fails, the directories this
    created are removed again, with the empty directories the body made beneath them, so a
    failed run (a full disk, a read-only mount) leaves no empty output tree behind that looks
    like a run that found nothing. Files are never removed: a directory holding one stays."""
    path = Path(path)
    created = _make_dirs(path)
    try:
        yield path
    except BaseException:
        if created:
            _remove_empty_tree(created[0])
        raise


def check_staged_dir(path: str | os.PathLike) -> None:
    """What `staged_dir` refuses before it writes anything: a name taken by something that is
    not a directory (a file, a symbolic link, a FIFO). For commands that check their output
    before importing what they need to fill it (`baseline simulate`): the same error either way."""
    path = Path(path)
    if not path.is_dir() and os.path.lexists(path):
        raise not_a_directory(path)


def not_a_directory(path: str | os.PathLike) -> NotADirectoryError:
    """The error for a name in the way of a directory, saying what is there: "Not a directory"
    alone left a user looking at a symbolic link (`-o out` linked to a volume not mounted yet)
    for a file that is not there."""
    path = os.fspath(path)
    try:
        target = os.readlink(path)
    except OSError:
        target = None
    if target is not None:
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            found = f"a symbolic link to {target}, which does not exist"
        except OSError as exc:  # ELOOP: a link to itself, or a cycle of links
            found = f"a symbolic link to {target} ({exc.strerror})"
        else:
            found = f"a symbolic link to {target}, {file_kind(mode)}"
    else:
        try:
            found = file_kind(os.lstat(path).st_mode)
        except OSError:
            found = "not one"
    # (the path in the words too: a caller naming the file it wanted to write shows only these)
    return NotADirectoryError(errno.ENOTDIR, f"{os.strerror(errno.ENOTDIR)}: {path} is {found}", path)


@contextmanager
def staged_dir(path: str | os.PathLike) -> Iterator[Path]:
    """A directory tree that appears whole or not at all, like `atomic_output` for one file.

    When `path` does not exist yet the body writes into a hidden sibling
    '.<name>.<random>.tmp', renamed to `path` when the body succeeds and removed when it fails,
    so neither a failure nor a kill -9 half-way leaves a partial tree under the final name
    that a reader would take for a whole one. An existing directory is written in place
    (merging into it is what its user asked for)."""
    path = Path(path)
    if path.is_dir():
        yield path
        return
    check_staged_dir(path)
    with output_dirs(path.parent):
        staging = _new_staging(path.parent, path)
        try:
            yield staging
            fsync_dir(staging)
            _rename_dir_into_place(staging, path)
            _done(staging)
        except BaseException as exc:
            _drop_staging(staging, path, exc)
            raise
        fsync_dir(path.parent)


@contextmanager
def staged_merge(path: str | os.PathLike) -> Iterator[Path]:
    """`staged_dir`, also for a tree written into a directory that exists (a dataset simulated
    again, merging into it): the body writes into a hidden staging directory inside it
    ('.<name>.<pid>-<hex>.tmp': a dot name no reader of the tree looks into), whose files are
    moved into place when the body succeeds (os.replace each, its directories made) and which
    is removed when it fails. Written in place, a stop half-way left the earlier tree's files
    replaced up to where it stopped -- a half dataset read as data with exit 0. A kill -9
    leaves only the hidden staging directory, which the next merge into `path` removes. The
    moves themselves are file by file: a reader is kept out by the caller's lock."""
    path = Path(path)
    if not path.is_dir():
        with staged_dir(path) as out:
            yield out
        return
    staging = _new_staging(path, path)
    try:
        yield staging
        _move_tree_into(staging, path)
    except BaseException as exc:
        _drop_staging(staging, path, exc)
        raise
    _drop_staging(staging, path)  # (emptied by the moves: its directories go)


def _new_staging(directory: Path, path: Path) -> Path:
    """A new hidden staging directory for `path` in `directory` ('.<name>.<pid>-<hex>.tmp'),
    those of writers killed with -9 there removed first."""
    _remove_dead_stagings(directory / path.name)
    staging = directory / temporary_name(path.name)
    # registered before it exists: a stop landing between the mkdir and the registration
    # left the staging directory behind (a coverage report stopped by SIGTERM, CI 86)
    _pending(staging, True)
    try:
        os.mkdir(staging, DIR_MODE)
    except OSError as exc:
        _done(staging)
        raise _named(exc, path) from None
    return staging


def _drop_staging(staging: Path, path: Path, exc: BaseException | None = None) -> None:
    """Remove a staging directory; when a failed body's OSError (`exc`) names a file in it, make
    it name the path the user gave (the body may have named the staging absolute -- a relative
    output, a writer resolving it -- or as given)."""
    shutil.rmtree(staging, ignore_errors=True)
    _done(staging)
    if isinstance(exc, OSError) and isinstance(exc.filename, str):
        for made in (str(staging), os.path.abspath(staging)):
            if exc.filename == made or exc.filename.startswith(made + os.sep):
                exc.filename = f"{path}{exc.filename[len(made):]}"
                break


def _move_tree_into(staging: Path, path: Path) -> None:
    """Every file under `staging` moved to the same place under `path` (directories made as
    needed, files replaced), then the directories written to fsynced."""
    touched: set[str] = set()
    for root, _dirs, files in os.walk(staging):
        rel = os.path.relpath(root, staging)
        target = path if rel == "." else path / rel
        if files:
            make_dirs(target)
        for name in sorted(files):
            os.replace(os.path.join(root, name), target / name)
        if files:
            touched.add(str(target))
    for directory in sorted(touched):
        fsync_dir(Path(directory))


def lock_holders(fd: int) -> list[int]:
    """The pids holding a flock on the file `fd` is open on, from /proc/locks (empty when it
    cannot be read: no /proc, another namespace's pids are shown as 0 and dropped)."""
    try:
        st = os.fstat(fd)
        text = Path("/proc/locks").read_text()
    except OSError:
        return []
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids: list[int] = []
    for line in text.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's line has "->" after
        # the number and is not a holder
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key and fields[4].isdigit():
            pid = int(fields[4])
            if pid and pid not in pids:
                pids.append(pid)
    return pids


def describe_holders(pids: list[int]) -> str:
    """`pids` for a user deciding whether to wait or kill: pid, command line, and whether it is
    stopped (Ctrl-Z, SIGSTOP: it will never let go by itself)."""
    if not pids:
        return "another process"
    shown = []
    for pid in pids[:3]:
        what = f"pid {pid}"
        if pid == os.getpid():
            shown.append(f"this process (pid {pid})")
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip()
            what += f" ({cmdline.decode(errors='replace')[:80]})"
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state in ("T", "t"):
                what += ", stopped (SIGSTOP or Ctrl-Z: send it SIGCONT or end it)"
        shown.append(what)
    from tracer.errors import printable

    return printable("; ".join(shown))


def wait_for_flock(fd: int, operation: int, what: str, timeout_s: float, *, lock: str = "the lock",
                   say_after_s: float = 1.0, say: Callable[[str], None] | None = None) -> None:
    """flock(fd, operation), waiting at most `timeout_s`; after `say_after_s` of waiting, one
    line naming who holds it goes to `say` (stderr by default). A blocking flock waited
    silently for as long as the holder lived: a writer stopped with Ctrl-Z or SIGSTOP held the
    next run forever with nothing on the terminal. TracebaseError past the bound, naming the
    holder. `what` names the locked thing and `lock` the lock, for both lines."""
    import fcntl
    import sys
    import time

    from tracer.errors import TracebaseError

    start = time.monotonic()
    said = False
    while True:
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            waited = time.monotonic() - start
            if waited >= timeout_s:
                raise TracebaseError(f"{what}: expected {lock} within {timeout_s:g} s, found it held by "
                                     f"{describe_holders(lock_holders(fd))}") from None
            if not said and waited >= say_after_s:
                said = True
                line = f"{what}: waiting up to {timeout_s:g} s for {lock}, held by {describe_holders(lock_holders(fd))}"
                if say is not None:
                    say(line)
                else:
                    with contextlib.suppress(OSError, ValueError):
                        name = Path(sys.argv[0]).name if sys.argv else ""
                        name = "tracebase" if name in ("", "-c", "__main__.py") else name
                        print(f"{name}: {line}", file=sys.stderr, flush=True)
            time.sleep(min(0.2, max(0.01, timeout_s - waited)))


# The dataset lock: a file in the dataset's top directory, held shared by its readers (audit,
# coverage, export) and exclusively by its writers (ingest, tidy, `baseline simulate` writing
# into an existing dataset), so a reader never meets a write half done.
DATASET_LOCK_NAME = ".tracebase.lock"


@contextmanager
def dataset_lock(dataset: str | os.PathLike, *, exclusive: bool, timeout_s: float = 600.0) -> Iterator[bool]:
    """Hold the dataset's lock: exclusive for writers, shared for readers (flock, released by
    the kernel when the process dies, so a killed run never leaves it held).

    Yields whether the lock is held: a reader that cannot create the lock file (a read-only
    dataset, an unprivileged analyst) reads without it. A writer that cannot is an error, and
    so is waiting longer than `timeout_s` for another run."""
    import fcntl

    from tracer.errors import shown

    dataset = Path(dataset)
    fd = _open_dataset_lock(dataset, dataset / DATASET_LOCK_NAME, exclusive)
    if fd is None:
        yield False
        return
    try:
        # after a second of waiting, one line names the holder (a stopped ingest or tidy would
        # otherwise hold every audit for the whole bound with nothing said); past the bound,
        # the error names it too
        wait_for_flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, shown(dataset), timeout_s,
                       lock="the dataset lock")
        yield True
    finally:
        os.close(fd)


def remove_lone_dataset_lock(dataset: str | os.PathLike) -> bool:
    """Remove the dataset lock a failed first write made when it is all the directory holds
    (held by the caller): a run that wrote nothing leaves the directory as it found it, not
    with a lock file that looks like a dataset's. True when removed."""
    with contextlib.suppress(OSError):
        if os.listdir(dataset) == [DATASET_LOCK_NAME]:
            os.unlink(Path(dataset) / DATASET_LOCK_NAME)
            return True
    return False


def _open_dataset_lock(dataset: Path, path: Path, exclusive: bool) -> int | None:
    from tracer.errors import TracebaseError

    try:
        if exclusive:
            make_dirs(dataset)
        # the umask decides, as for every output: under umask 002 the group that shares the
        # dataset can take the writer's lock too (0644 locked out every writer but the first)
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
    except OSError as exc:
        if exclusive:
            raise TracebaseError(f"{path}: cannot create the dataset lock ({exc.strerror})") from None
    try:  # flock needs no write access: a reader of someone else's dataset still shares the lock
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None


MERGE_LOCK_TIMEOUT_S = 120.0  # a merge holds it well under a second: a holder this long is stuck


@contextmanager
def merge_lock(path: str | os.PathLike, timeout_s: float = MERGE_LOCK_TIMEOUT_S) -> Iterator[None]:
    """Serialise a read-merge-write of `path` (a YAML list merged in place) with every other
    tracebase writer merging into the same directory: an exclusive flock on that directory,
    held for the body. Two `allowlist learn -o LIST` runs each read the list, merged their
    own entries and renamed theirs over it: both said "N added", and the first's entries were
    gone (6 of 6 trials started together). The directory itself is locked, so no lock file is
    left beside the list; where the file system has no flock (some NFS and FUSE mounts) the
    merge goes on unserialised, as before. A holder that keeps it (stopped with Ctrl-Z) is
    named on stderr after a second, and past `timeout_s` the merge is refused naming it."""
    import fcntl

    fd = None
    with contextlib.suppress(OSError):
        fd = os.open(Path(path).parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if fd is not None:
            from tracer.errors import printable

            with contextlib.suppress(OSError):
                wait_for_flock(fd, fcntl.LOCK_EX, printable(str(path)), timeout_s, lock="the merge lock on its directory")
        yield
    finally:
        if fd is not None:
            os.close(fd)  # (drops the flock)


_RENAME_EXCHANGE = 2  # <linux/fs.h>


def _rename_dir_into_place(staging: Path, path: Path) -> None:
    """rename(staging, path); when another run created `path` meanwhile (two `coverage` or
    `simulate` runs of one output started together), the last to finish wins, as for a file:
    the two trees are swapped atomically (renameat2 RENAME_EXCHANGE, so a reader sees one whole
    tree or the other) and the older one removed. Plain rename said `DIR -> DIR: Directory not
    empty` to the run that lost the race, and exit 2."""
    try:
        os.rename(staging, path)
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not path.is_dir() or path.is_symlink():
            raise
    try:
        exchange(staging, path)
    except OSError as exc:
        raise FileExistsError(exc.errno, f"{exc.strerror}: written by another run meanwhile and "
                                         "cannot be replaced", str(path)) from None
    shutil.rmtree(staging, ignore_errors=True)  # the other run's tree, now under our staging name


@functools.cache
def _libc() -> ctypes.CDLL:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)  # (once: compaction swaps one partition after another)


def exchange(a: str | os.PathLike, b: str | os.PathLike) -> None:
    """Swap two existing paths in one step (renameat2 RENAME_EXCHANGE): a reader sees the one
    tree or the other under each name, never neither. OSError where the filesystem cannot
    (EINVAL: NFS, some overlay and FUSE mounts) -- the caller falls back or says so."""
    import ctypes

    libc = _libc()
    at_fdcwd = -100
    if libc.renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(b))


# '.<name>.<pid>-<8 hex>.tmp': the temporary (file or staging directory) of an output `name`
# being written by process `pid` (_create_temp, staged_dir)
_TEMP_NAME = re.compile(r"\.(.+)\.(\d+)-[0-9a-f]{8}\.tmp", re.ASCII)


# A file name's limit (NAME_MAX on every Linux file system we write to), and what a temporary
# adds to its output's name: '.' before, '.<pid>-<8 hex>.tmp' after (a pid has 7 digits at most:
# pid_max is 2^22 or less).
NAME_MAX = 255
_TEMP_ADDS = len(".") + len(".4194304-00000000.tmp")


def temporary_stem(name: str) -> str:
    """The part of an output's temporaries' names that stands for `name`: `name` itself, or,
    for a name within 22 bytes of NAME_MAX (a legal output name, which as '.<name>.<pid>-<hex>.tmp'
    was refused with "File name too long"), its head, '~', 12 hex digits of its hash and its
    suffix: the same for every writer of `name`, so a later one still finds a killed one's
    temporaries, and ending as `name` does (a reader's `*.parquet.*.tmp` or `.prom` test holds)."""
    encoded = os.fsencode(name)
    if len(encoded) + _TEMP_ADDS <= NAME_MAX:
        return name
    import hashlib

    suffix = os.fsencode(os.path.splitext(name)[1])[:16]
    digest = hashlib.sha1(encoded).hexdigest()[:12].encode()
    head = encoded[:NAME_MAX - _TEMP_ADDS - len(suffix) - 1 - len(digest)]
    # cut on a character boundary: a UTF-8 sequence cut in two would be a name no tool shows
    head = head.decode("utf-8", errors="ignore").encode() if _is_utf8(encoded) else head
    return os.fsdecode(head + b"~" + digest + suffix)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def temporary_name(name: str) -> str:
    """A new name for a temporary of output `name` written by this process (see _TEMP_NAME)."""
    return f".{temporary_stem(name)}.{os.getpid()}-{os.urandom(4).hex()}.tmp"


def is_temporary_for(entry_name: str, name: str) -> bool:
    """Is `entry_name` a temporary (file or staging directory) of output `name`, by any writer?"""
    owner = temporary_of(entry_name)
    return owner is not None and owner[0] == temporary_stem(name)


def temporary_of(entry_name: str) -> tuple[str, int] | None:
    """(output name -- its `temporary_stem` --, writer pid) when `entry_name` is a temporary this
    module names, else None."""
    match = _TEMP_NAME.fullmatch(entry_name)
    return (match.group(1), int(match.group(2))) if match else None


def writer_gone(pid: int) -> bool:
    """Has process `pid` exited (so a temporary carrying its pid will never be renamed)? False
    while it runs and when that cannot be told (another user's process, a number no pid has)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return False


def flock_held(path: str | os.PathLike) -> bool | None:
    """Does some process of this machine hold an flock on `path` (a writer lock such as the
    spool's `.tracer.lock`)? Read from /proc/locks, so the lock is never taken, not even for an
    instant (trying it would refuse a tracer starting in that instant). None when it cannot be
    told: no such file, or no /proc/locks. A lock held on another machine (NFS) is not seen."""
    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    # '1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF': the device as major:minor in hex, then the
    # inode; a waiter's line starts with '1: ->' and names the same file
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in lines:
        fields = line.split()
        if "FLOCK" not in fields or "->" in fields:
            continue
        try:
            major, minor, inode = fields[fields.index("FLOCK") + 4].split(":")
            if (int(major, 16), int(minor, 16), int(inode)) == want:
                return True
        except (IndexError, ValueError):
            continue
    return False


# The fleet tracer's writer lock in each spool host directory: `tracer run` holds an flock on it
# for its life (tracer.fleet.spool.WriterLock); ingest reads whether one is held (flock_held)
# before removing a killed tracer's temporaries. Here, not in tracer.fleet.spool, because that
# module imports polars, which ingest's workers must not need.
SPOOL_LOCK_NAME = ".tracer.lock"


def remove_entry(path: str | os.PathLike) -> None:
    """Remove `path`: a directory (not a symlink to one) with all it holds, anything else unlinked.
    Raises OSError when it cannot (a read-only directory, a vanished entry); a tree is removed as
    far as it can be first (what cannot go stays, what can goes)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
        if os.path.lexists(path):
            raise OSError(errno.ENOTEMPTY, "cannot remove all of it", os.fspath(path))
    else:
        os.unlink(path)


def remove_temporaries(directory: str | os.PathLike, is_temporary: Callable[[str], bool],
                       keep: Callable[[str], bool] | None = None) -> list[Path]:
    """Remove the entries of `directory` whose name `is_temporary` says is a temporary and that
    `keep(path)` does not keep (a young one, a live writer's); returns those that went. What
    cannot be removed, or is kept because `keep` cannot tell (OSError), stays and is not listed:
    the spool's tracer (at its start) and ingest (for a host no tracer holds) both call this."""
    try:
        with os.scandir(directory) as listing:
            paths = [entry.path for entry in listing if is_temporary(entry.name)]
    except OSError:
        return []
    removed = []
    for path in paths:
        try:
            if keep is not None and keep(path):
                continue
            remove_entry(path)
        except OSError:
            continue
        removed.append(Path(path))
    return removed


def _remove_dead_stagings(path: Path) -> None:
    """Remove the staging directories and temporary files for `path` ('.<name>.<pid>-<hex>.tmp')
    left by writers killed with -9 or by the OOM killer (their pid is gone): no rerun would
    otherwise remove them, and an hourly audit killed each time would fill the disk."""
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        owner = temporary_of(entry.name)
        if owner is None or owner[0] != temporary_stem(path.name) or not writer_gone(owner[1]):
            continue  # another output's, or its writer is still running
        with contextlib.suppress(OSError):
            remove_entry(entry.path)


def _remove_empty_tree(top: Path) -> None:
    for root, dirs, _files in os.walk(top, topdown=False):
        for d in dirs:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(root, d))
    with contextlib.suppress(OSError):
        os.rmdir(top)


def _create_temp(directory: Path, name: str) -> tuple[int, Path]:
    """A new hidden temp file in `directory`, mode 0666 & ~umask (O_EXCL, random name carrying
    our pid, so a later writer of `name` can tell it from a live writer's once we are gone)."""
    _remove_dead_stagings(directory / name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for _ in range(100):
        tmp = directory / temporary_name(name)
        _pending(tmp, False)  # before it exists, as for a staging directory (see staged_dir)
        try:
            fd = os.open(tmp, flags, FILE_MODE)
        except FileExistsError:
            _done(tmp)
            continue
        except OSError:  # (not made; a stop landing here leaves it registered, removed at exit)
            _done(tmp)
            raise
        return fd, tmp
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(directory))


def _refuse_unwritable(path: Path) -> None:
    """PermissionError (EACCES) when `path` is a file this process may not write, in a
    directory it may: the rename would replace it anyway -- another user's file (whose owner a
    rewrite cannot keep) or one made read-only -- where `cp` or an editor's save is refused."""
    try:
        st = os.stat(path)
    except OSError:
        return  # not there (the usual case), or unreachable: the create reports it
    if not stat.S_ISREG(st.st_mode):
        return
    effective = os.access in os.supports_effective_ids
    if os.access(path, os.W_OK, effective_ids=effective) or not os.access(path.parent, os.W_OK,
                                                                         effective_ids=effective):
        return  # writable, or the directory is not either (a read-only volume: the create says so)
    raise PermissionError(errno.EACCES, f"not writable by this user (owner uid {st.st_uid}, mode "
                          f"{stat.S_IMODE(st.st_mode):04o}): it would be replaced", str(path))


def unwritable_reason(directory: str | os.PathLike) -> str:
    """Why this process may not create a file in `directory`, in the OS's words and the facts
    that decide it ('read-only file system'; 'permission denied: owner uid 0, mode 0555, this
    process uid 65534'), for a check made before the work rather than after it."""
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return "read-only file system"
        st = os.stat(directory)
    except OSError as exc:
        return (exc.strerror or os.strerror(exc.errno or errno.EACCES)).lower()
    return (f"permission denied: owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}, "
            f"this process uid {os.geteuid()}")


def _keep_mode_and_owner(fd: int, path: Path) -> None:
    """Give the temp file the mode and owner of the file it is about to replace."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError:
        return  # unreadable metadata: the new file keeps the umask mode
    if not stat.S_ISREG(st.st_mode):
        return
    os.fchmod(fd, st.st_mode & 0o7777)
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        # not root: the rewritten file is ours, as with any editor's save
        with contextlib.suppress(PermissionError):
            os.fchown(fd, st.st_uid, st.st_gid)


@contextmanager
def atomic_output(path: str | os.PathLike, *, durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file handle whose content replaces `path` when the block ends without error.

    `durable=False` skips the fsyncs (regenerable bulk data); the rename stays atomic.
    An OSError without a file name (ENOSPC on write, EIO on fsync) gets `path` as its name, so
    the one-line error says which output failed.
    """
    given = Path(path)
    fd_number, path = _resolve_output(given)
    if fd_number is not None:  # /dev/stdout, /dev/fd/3: the descriptor the shell gave us
        with _write_to_descriptor(fd_number, path) as fh:
            yield fh
        return
    special = _special_target(path)
    if special is not None:  # /dev/null, a FIFO: written through, never replaced
        with _write_through(path, special) as fh:
            yield fh
        return
    # errors name the output as the user gave it (`-o ../out/m.parquet`), or the file a symlink
    # given leads to (the one that could not be written)
    shown = given if path == Path(os.path.abspath(given)) else path
    try:
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(shown))
        if path != Path(os.path.abspath(given)) and not path.parent.is_dir():
            # a dangling symlink: its target's directories are not ours to create (as root,
            # `-o link` to /nonexistent/dir/x created /nonexistent/dir)
            raise FileNotFoundError(errno.ENOENT, f"a symlink to {path}, whose directory does not exist", str(given))
        make_dirs(path.parent)
        _refuse_unwritable(path)
        fd, tmp = _create_temp(path.parent, path.name)
    except OSError as exc:
        raise _named(exc, path, shown) from None
    try:
        _keep_mode_and_owner(fd, path)
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        _done(tmp)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        _done(tmp)
        if isinstance(exc, OSError):
            raise _named(exc, path, shown) from None
        raise
    if durable:
        fsync_dir(path.parent)


_DESCRIPTOR_PATH = re.compile(r"/(?:proc/(?:self|thread-self|\d+)|dev)/fd/(\d+)", re.ASCII)


def output_target(path: str | os.PathLike) -> tuple[int | None, Path]:
    """Where a write to `path` lands (see `_resolve_output`): (descriptor number, path) for one
    of our own descriptors, else (None, the final target of its symlinks); OSError ELOOP for a
    loop. For checks made before the work that produces the output."""
    return _resolve_output(Path(path))


def _resolve_output(path: Path) -> tuple[int | None, Path]:
    """Follow an output path's symlinks: (descriptor number, path) when they lead to one of our
    own descriptors (/dev/stdout -> /proc/self/fd/1), else (None, the final target).

    The rename then replaces the file a symlink points to, not the link: renaming over
    /dev/stdout itself would replace the system's link with a regular file (as root), and a
    user's `latest.parquet -> runs/7.parquet` stays a link."""
    current = Path(os.path.abspath(path))
    for _ in range(40):  # the kernel's own limit on nested links
        m = _DESCRIPTOR_PATH.fullmatch(str(current))
        if m and (m.group(0).startswith(("/proc/self", "/proc/thread-self", "/dev"))
                  or f"/proc/{os.getpid()}/" in m.group(0)):
            return int(m.group(1)), path
        if not current.is_symlink():
            return None, current
        current = Path(os.path.normpath(current.parent / os.readlink(current)))
    # a loop: refused naming the output (renaming over it replaced the link with a file)
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))


@contextmanager
def _write_to_descriptor(fd_number: int, path: Path) -> Iterator[BinaryIO]:
    """Write into an inherited descriptor (a pipe, a terminal, a shell's `> file`), left open."""
    try:
        fd = os.dup(fd_number)
    except OSError as exc:
        raise _named(exc, path) from None
    with _streaming(fd, path) as fh:
        yield fh


@contextmanager
def _streaming(fd: int, path: Path) -> Iterator[BinaryIO]:
    """`fd` as a binary file, closed at the end; OS errors name `path`."""
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
    except OSError as exc:
        raise _named(exc, path) from None


def _special_target(path: Path) -> int | None:
    """The st_mode of an existing output that is neither a regular file nor a directory (a
    character device, a FIFO, a socket, a block device; symlinks followed: /dev/stdout), else
    None. Renaming a temp file over such a path would replace the device node itself: as root,
    `-o /dev/null` would leave a regular file at /dev/null for every program on the machine."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # missing (the normal case) or unreadable: the normal path reports it
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else mode


@contextmanager
def _write_through(path: Path, mode: int) -> Iterator[BinaryIO]:
    """Write straight into a device or pipe, as cp and shells do (no temp file, no rename, no
    fsync). A block device is refused: a trace written over a disk is never what was meant."""
    if stat.S_ISBLK(mode):
        raise OSError(errno.EPERM, "refusing to write over a block device", str(path))
    try:
        # non-blocking open: a FIFO nobody reads fails at once (ENXIO) instead of hanging
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO and stat.S_ISFIFO(mode):
            raise OSError(errno.ENXIO, "a FIFO (named pipe) that no process is reading", str(path)) from None
        raise _named(exc, path) from None
    os.set_blocking(fd, True)
    with _streaming(fd, path) as fh:
        yield fh


def _named(exc: OSError, path: Path, shown: Path | None = None) -> OSError:
    """`exc` naming the output when it names no file, our temporary of it or the output's
    resolved path: the one-line error says the output the user gave ('../out/fleet: Permission
    denied' -- `shown`, else `path`), not '/nowrite/.fleet.11443-ceadd6a0.tmp'."""
    if exc.errno is None or not (exc.filename is None or _is_temporary_of(exc.filename, path)
                                 or exc.filename == str(path)):
        return exc
    return OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(shown if shown is not None else path))


def _is_temporary_of(name: object, path: Path) -> bool:
    if not isinstance(name, str) or os.path.dirname(name) != str(path.parent):
        return False
    return is_temporary_for(os.path.basename(name), path.name)


def write_bytes(path: str | os.PathLike, data: bytes, *, durable: bool = True) -> Path:
    with atomic_output(path, durable=durable) as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str, *, durable: bool = True) -> Path:
    return write_bytes(path, text.encode(), durable=durable)


def fsync_dir(directory: str | os.PathLike) -> None:
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)

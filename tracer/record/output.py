"""Where `tracer record` writes its trace: checked before the command runs, never lost after.

- check_output(path): before anything runs, the output must be writable: its directory exists
  and is one, we may create files there, the filesystem is not read-only or full, and the
  path itself is not a directory. A one-line TracebaseError (exit 2) names what is wrong.
- remove_stale_temporaries(path): a recorder killed with -9 while writing leaves its hidden
  temporary (".NAME.<pid>-<random>.tmp", tracer.atomic); the next recording into the same
  directory removes those no live process holds open: NAME's own, and any other trace's of ours whose
  writer is gone (the default name changes at every run, so no later run would ever write that
  NAME again). Readers never take them for data (hidden, not *.parquet).
- remove_stale_fallback_temporaries(): a recorder killed with -9 while writing its fallback
  file in $TMPDIR (or the cwd) leaves that file's temporary there; no later run writes that
  name again (it holds the writer's pid and time) and no recording writes into $TMPDIR
  otherwise, so the next recording removes those of ours whose writer is gone.
- save(recording, path): write atomically; when that fails anyway (ENOSPC, EIO, the directory
  made read-only meanwhile) or the directory was removed while the command ran (it is never
  recreated), the recording is written to a fallback file in $TMPDIR (or the
  current directory) and the error says exactly where, so a run that cannot be repeated is
  not lost.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import socket
import stat
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from tracer import atomic
from tracer.errors import TracebaseError

if TYPE_CHECKING:
    from tracer.record.recorder import Recording


def check_output(given: str | os.PathLike) -> None:
    """Fail before running the command, not after, when the trace could not be written: a
    path ending in "/" (a directory's name), a symlink loop, a directory, a missing or
    unwritable, read-only or full directory -- of the file its symlinks lead to, as the write
    follows them (tracer.atomic)."""
    text = os.fspath(given)
    path = Path(text)
    if text.endswith("/"):  # Path() drops the slash: `-o newdir/` wrote a file named newdir
        raise TracebaseError(f"{text}: expected a file name for the trace, found a directory's name (it ends in /)")
    try:
        descriptor, target = atomic.output_target(path)
    except OSError as exc:  # (a symlink loop, a name too long for the file system)
        loop = " (a symlink loop)" if exc.errno == errno.ELOOP else ""
        raise TracebaseError(f"{path}: {exc.strerror}{loop}, expected a file name for the trace") from None
    if descriptor is not None:
        return  # /dev/stdout, /proc/self/fd/N: written in place
    label = str(path)
    if target != Path(os.path.abspath(path)):
        label = f"{path} (-> {target})"
        path = target  # a symlink: its target's directory is where the file is made
    directory = path.parent
    try:
        if path.is_dir():
            raise TracebaseError(f"{label}: is a directory, expected a file name for the trace")
        if not directory.exists():
            raise TracebaseError(f"{label}: directory {directory} does not exist")
        if not directory.is_dir():
            raise TracebaseError(f"{label}: {directory} is not a directory")
        # named as tracer.atomic names its temporaries (our pid in it): one a kill -9 leaves
        # between these lines is removed by the next recording into this directory, whatever
        # name that one writes
        probe = directory / atomic.temporary_name(path.name)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise TracebaseError(f"{label}: cannot write in {directory} ({exc.strerror})") from None
    try:
        os.close(fd)
        os.unlink(probe)
        fs = os.statvfs(directory)
    except OSError as exc:
        raise TracebaseError(f"{label}: cannot write in {directory} ({exc.strerror})") from None
    if fs.f_flag & os.ST_RDONLY:
        raise TracebaseError(f"{label}: cannot write in {directory} (Read-only file system)")
    if fs.f_bavail == 0:
        raise TracebaseError(f"{label}: cannot write in {directory} "
                             f"({os.strerror(errno.ENOSPC)}: 0 bytes free)")


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporaries killed recorders left in `path`'s directory that no running process
    has open: `path`'s own, and those of every other trace we own whose writer's pid is gone (a
    recorder killed while writing `trace-ls-<time>.parquet`, the default name, left its temporary
    there for good: no later run writes that name again). Returns what was removed."""
    directory = path.parent
    own = f".{atomic.temporary_stem(path.name)}."
    suffixes = {".parquet", path.suffix} - {""}
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    candidates = []
    for entry in entries:
        name = entry.name
        if not name.endswith(".tmp"):
            continue
        if name.startswith(own):
            candidates.append(Path(entry.path))
            continue
        owner = atomic.temporary_of(name)
        if owner is not None and Path(owner[0]).suffix in suffixes and atomic.writer_gone(owner[1]):
            with contextlib.suppress(OSError):
                # ours only: in a shared directory (/tmp) another user's is theirs to remove
                if entry.stat(follow_symlinks=False).st_uid == os.geteuid():
                    candidates.append(Path(entry.path))
    return _remove_unheld(candidates)


def _remove_unheld(candidates: list[Path]) -> list[Path]:
    """Unlink the regular files among `candidates` that no running process has open; returns them."""
    if not candidates:
        return []
    held = _open_files()  # a live writer holds its temporary open (its pid may be another namespace's)
    removed = []
    for tmp in candidates:
        try:
            st = tmp.stat(follow_symlinks=False)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in held or not stat.S_ISREG(st.st_mode):
            continue  # a live writer's (another recording to the same name)
        try:
            tmp.unlink()
            removed.append(tmp)
        except OSError:
            pass
    return removed


def _fallback_name(stem: str, pid: int) -> str:
    """The fallback file's name; the stem (the output's), host, UTC time and writer pid keep two
    recorders' fallbacks apart."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{stem or 'trace'}-{socket.gethostname()}-{stamp}-{pid}.parquet"


def remove_stale_fallback_temporaries() -> list[Path]:
    """Remove the temporaries of fallback files (`_fallback`) that recorders killed mid-write
    left in the fallback directories: ours, named as `_fallback_name` names them with the pid of
    a writer that is gone, and held open by no process. $TMPDIR is shared: other programs'
    temporaries, other users' and a live recorder's are left alone. Returns what was removed."""
    pattern = re.compile(rf".+-{re.escape(socket.gethostname())}-\d{{8}}T\d{{6}}Z-(\d+)\.parquet")
    candidates = []
    for directory in fallback_dirs():
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            owner = atomic.temporary_of(entry.name)
            if owner is None:
                continue
            match = pattern.fullmatch(owner[0])
            # the name's pid is the writer's: a temporary of another pid's write is not a fallback's
            if match is None or int(match.group(1)) != owner[1] or not atomic.writer_gone(owner[1]):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid == os.geteuid():  # another user's is theirs
                    candidates.append(Path(entry.path))
    return _remove_unheld(candidates)


def _open_files() -> set[tuple[int, int]]:
    """(device, inode) of every file some process has open (as far as /proc shows us)."""
    held: set[tuple[int, int]] = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"{fd_dir}/{fd}")
            except OSError:
                continue
            held.add((st.st_dev, st.st_ino))
    return held


def fallback_dirs() -> list[Path]:
    """Where a trace goes when its own output cannot be written: $TMPDIR, then the cwd."""
    dirs = [Path(tempfile.gettempdir())]
    with contextlib.suppress(OSError):  # the current directory was removed too
        dirs.append(Path.cwd())
    return dirs


def save(recording: Recording, path: Path) -> Path:
    """Write the recording to `path`; on failure to a fallback file, then raise a one-line
    TracebaseError saying why and where the data is. Returns the path written."""
    directory = path.parent
    if not directory.is_dir():
        # Removed (or replaced by a file) while the command ran. Writing would recreate it
        # (tracer.atomic makes missing parents) and put the trace where whoever removed the
        # directory no longer looks, or into a tree being torn down: say so, keep it elsewhere.
        found = "a file" if os.path.lexists(directory) else "nothing"
        return _fallback(recording, path, f"its directory {directory} was removed while recording "
                                          f"(expected a directory, found {found})")
    try:
        return recording.write(path)
    except OSError as exc:
        return _fallback(recording, path, f"writing the trace failed ({exc.strerror or exc})")


def _fallback(recording: Recording, path: Path, reason: str) -> NoReturn:
    """Write the recording to $TMPDIR (or the cwd) instead, then raise saying why and where."""
    name = _fallback_name(path.stem, os.getpid())
    tried = []
    for directory in fallback_dirs():
        target = directory / name
        if target.resolve().parent == path.resolve().parent:
            continue  # the same place that just failed
        try:
            recording.write(target)
        except OSError as exc:
            tried.append(f"{directory}: {exc.strerror or exc}")
            continue
        raise TracebaseError(
            f"{path}: {reason}; the recording "
            f"({recording.events.num_rows} syscalls) was saved to {target} instead"
        )
    raise TracebaseError(
        f"{path}: {reason} and no fallback location worked "
        f"({'; '.join(tried) or 'none left to try'}): the recording is lost"
    )

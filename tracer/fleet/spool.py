"""The tracer's spool: one directory per snapshot, written whole or not at all.

Layout (tracer/schema.py docstring):
    <spool>/<host>/snap-<YYYYmmddTHHMMSS.fffZ>-<seq>/{events,counters}.parquet
A snapshot is written into a hidden `.snap-...tmp` directory next to its final place and renamed
into place once both files are complete and fsynced, so a reader listing `snap-*` directories
never sees a partial snapshot. Readers skip hidden entries.

Directories are created 0775 less the umask (never world-writable); files honour the umask
(tracer.atomic). A writer holds `<host>/.tracer.lock` and, at start, removes the hidden
temporaries (`.snap-*.tmp`, `.<file>.<random>.tmp`) a killed writer left behind.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import os
import re
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa

from tracer.atomic import DIR_MODE, SPOOL_LOCK_NAME, fsync_dir, make_dirs, remove_temporaries
from tracer.errors import TracebaseError
from tracer.schema import COUNTERS, EVENTS, read, snapshot_order, write_table

SNAPSHOT_TABLES = ("events", "counters")
_SNAP = re.compile(r"^snap-(\d{8}T\d{6}\.\d{3}Z)-(\d+)\Z", re.ASCII)  # \Z: "$" lets a trailing newline through
_STALE = re.compile(r"^\..+\.tmp$")  # .snap-<ts>-<seq>.tmp, .<file>.<random>.tmp, .part-*.tmp
LOCK_NAME = SPOOL_LOCK_NAME  # the name ingest looks for too (it lives in tracer.atomic, which has no polars)


def remove_stale_temporaries(directory: str | os.PathLike, pattern: re.Pattern[str] = _STALE) -> list[Path]:
    """Remove the hidden temporaries a killed writer left in directory; returns what went.
    Only call it while holding the directory's writer lock (a live writer's temp looks the same)."""
    return remove_temporaries(directory, pattern.match)


class WriterLock:
    """One writer per host directory of a spool: an flock on <host>/.tracer.lock, held for the
    writer's lifetime (released by the kernel if the writer dies, so a kill -9 never wedges it).
    The file holds the writer's pid on its first line, then `note` (the daemon's --prom path);
    `previous` is what the last writer left there, read once the lock is ours."""

    def __init__(self, host_dir: str | os.PathLike, note: bytes = b""):
        self.path = Path(host_dir) / LOCK_NAME
        self.fd: int | None = None
        self.note = note
        self.previous = b""

    def acquire(self) -> WriterLock:
        # The lock is held on a read-only descriptor (flock needs no write access) and the pid
        # written through another, closed at once: a long-running writer keeps no file of the
        # spool open for writing, so `mount -o remount,ro` of the spool's file system succeeds
        # while it runs (it failed EBUSY for as long as the tracer ran) and the tracer holds
        # its snapshots until the file system is writable again.
        try:  # made here, or there before: one made here goes again if the pid cannot be written
            fd, made = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), True
        except FileExistsError:
            fd, made = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o666), False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).split(b"\n", 1)[0].decode(errors="replace").strip() or "?"
            os.close(fd)
            raise TracebaseError(f"{self.path.parent}: expected one tracer per spool host directory, found "
                                 f"another writer (pid {holder}) holding {LOCK_NAME}: use another --spool or --host") from None
        with contextlib.suppress(OSError):
            self.previous = os.pread(fd, 8192, 0)
        try:
            wfd = os.open(self.path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
            try:
                os.write(wfd, f"{os.getpid()}\n".encode() + self.note)
            finally:
                os.close(wfd)
        except OSError as exc:
            # A spool unwritable when the tracer starts (full, read-only, over quota) is refused
            # with one line naming the file, so the service manager shows the failure at once;
            # a spool that fills or goes read-only later is held and retried (daemon.py). The
            # empty lock file made here goes (still locked: no other writer is using it), so the
            # host directory made for it can go too.
            if made:
                with contextlib.suppress(OSError):
                    self.path.unlink()
            os.close(fd)
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing drops the flock; the file stays (harmless, hidden)
            self.fd = None


class SnapshotExistsError(TracebaseError):
    """The snapshot's name is taken (a directory copied into the spool, a second writer after
    the first lost its lock): the writer picks the next free sequence number, never overwrites."""


def snapshot_name(when_ns: int, seq: int) -> str:
    when = dt.datetime.fromtimestamp(when_ns / 1e9, tz=dt.UTC)
    return f"snap-{when:%Y%m%dT%H%M%S}.{when.microsecond // 1000:03d}Z-{seq:06d}"


def events_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=EVENTS)


def counters_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=COUNTERS)


def write_snapshot(spool: str | os.PathLike, host: str, events: pa.Table | pl.DataFrame,
                   counters: pa.Table | pl.DataFrame, when_ns: int, seq: int, *, durable: bool = True,
                   extra_metadata: dict[str, str] | None = None,
                   parquet_options: dict[str, dict] | None = None) -> Path:
    """Write one snapshot atomically; returns its final directory.

    `durable=False` (bulk simulation) skips the fsyncs; the directory rename stays atomic.
    `parquet_options` maps a table name to options for pyarrow's writer."""
    host_dir = Path(spool) / host
    make_dirs(host_dir)
    name = snapshot_name(when_ns, seq)
    final = host_dir / name
    if os.path.lexists(final):
        raise SnapshotExistsError(f"{final}: snapshot already exists (two tracers writing one spool?)")
    tmp = host_dir / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=DIR_MODE)  # never world-writable, whatever the umask
    try:
        for table, data in (("events", events), ("counters", counters)):
            write_table(data, tmp / f"{table}.parquet", table, extra_metadata, durable=durable,
                        parquet_options=(parquet_options or {}).get(table))
        try:
            os.rename(tmp, final)
        except OSError as exc:
            # made meanwhile by someone else: rename(2) replaces an empty directory silently
            # and refuses a full one (ENOTEMPTY), which is the same clash as the check above
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST) or os.path.lexists(final):
                raise SnapshotExistsError(f"{final}: snapshot already exists (made while it was written)") from None
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if durable:
        fsync_dir(host_dir)
    return final


def list_snapshots(spool: str | os.PathLike, host: str | None = None) -> list[Path]:
    """Complete snapshots, host by host (sorted by name), each host's in the order written: by
    sequence number, not by the time in the name, which a clock stepped back misorders
    (tracer.schema.snapshot_order)."""
    root = Path(spool)
    if not root.is_dir():
        raise TracebaseError(f"{root}: no such spool directory")
    hosts = [root / host] if host else sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    snaps = []
    for h in hosts:
        if not h.is_dir():
            continue
        for d in h.iterdir():
            if _SNAP.match(d.name) and d.is_dir():
                snaps.append((h.name, snapshot_order(d.name), d))
    return [d for _, _, d in sorted(snaps)]


def next_seq(spool: str | os.PathLike, host: str) -> int:
    """One past the highest sequence number already in this host's spool (survives restarts)."""
    host_dir = Path(spool) / host
    if not host_dir.is_dir():
        return 0
    seqs = [int(m.group(2)) for d in host_dir.iterdir() if (m := _SNAP.match(d.name))]
    return max(seqs, default=-1) + 1


def read_snapshot(path: str | os.PathLike) -> tuple[pl.DataFrame, pl.DataFrame]:
    path = Path(path)
    return read(path / "events.parquet", "events"), read(path / "counters.parquet", "counters")


def read_spool(spool: str | os.PathLike, table: str, host: str | None = None) -> pl.DataFrame:
    """One table over every complete snapshot of the spool (validated through the schema)."""
    if table not in SNAPSHOT_TABLES:
        raise TracebaseError(f"table: expected one of {', '.join(SNAPSHOT_TABLES)}, found {table!r}")
    files = [d / f"{table}.parquet" for d in list_snapshots(spool, host)]
    if not files:
        raise TracebaseError(f"{spool}: holds no snapshots")
    return read(files, table)

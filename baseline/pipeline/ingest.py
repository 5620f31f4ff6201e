"""Move spool snapshots into the partitioned fleet dataset, compact it, quarantine bad input.

Spool:   <spool>/<host>/snap-<YYYYmmddTHHMMSS.fffZ>-<seq>/{events,counters}.parquet
Dataset: <dataset>/<table>/date=YYYY-MM-DD/host=<host>/part-*.parquet
         (the `host` column lives in the directory name, not in the files: tracer.schema
         PARTITION_COLUMNS; files that still carry it are read and compacted as well)

Idempotency: every part file records, in its Parquet footer (``tracebase.snapshots``), the ids
of the snapshots whose rows it holds, and its name is derived from those ids. Before writing,
ingest reads the footers of the target partition and drops snapshots already there, so
re-running an interval (or a run that died after writing but before cleaning the spool) adds no
duplicate rows. The manifest lives in the data files themselves, so it cannot drift from them.
Compaction builds the partition anew in a hidden sibling (the merged file, hard links to the
files it leaves alone) and swaps the two directories in one step (renameat2 RENAME_EXCHANGE), so
no reader ever sees the merged file beside its inputs; where the filesystem cannot swap, it
writes the merged file first and deletes its inputs second, and the next run removes inputs
whose snapshot sets another file covers.
A closed day's events (tracer.schema DAY_TABLES) are then compacted across hosts (`compact_days`):
the date directory built anew as a few day files (whole hosts each, host column and the hosts'
snapshot ids stored) and swapped in whole the same way; ingest looks a late snapshot of such a
day up in its host's day-file manifest, and writes it beside the day files when new.
A run killed at any point therefore loses and duplicates nothing; the hidden temporaries of
its atomic writes (``.part-*.tmp``) are removed when the next run starts. In the spool, the
hidden temporaries a tracer killed mid-snapshot left (``.snap-*.tmp``) are removed by the tracer
when it restarts; for a host whose tracer never restarts, ingest removes those no writer holds
(the host's ``.tracer.lock`` not held on this machine, no live pid in their names) once they are
older than ``ABANDONED_AFTER_S`` (unless ``remove_ingested`` is off: ``--keep-spool`` leaves the
spool as it is).

Bad input never stops the rest: a file that cannot be read, has the wrong table, version or
columns, nulls in a non-null column, or cannot be written is moved to
``<quarantine>/<host>/<snapshot>/<file>`` with a ``<file>.reason`` sidecar holding the one-line
reason, and the rest of the snapshot and the spool is ingested. Symlinks are never followed
out of the spool: a symlinked host directory, snapshot or file is quarantined as the link itself
(its target is never read, moved or deleted). Host directory names must be safe partition
values (HOST_RE, valid UTF-8); the snapshots of a host directory named otherwise are
quarantined with the reason. Undecodable (non-UTF-8) names are shown with backslash escapes.

Concurrency: writers (ingest, compaction, retention) hold an exclusive lock on
``<dataset>/.tracebase.lock``; readers in the pipeline (baseline refresh, audit, coverage) hold
a shared one, so an audit never reads an interval that ingest is still writing, and compaction
never deletes a file an audit has listed. Each completed ingest run then publishes
``<dataset>/_ingest_watermark.json`` (atomically): the newest snapshot time committed so far.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from baseline.pipeline.layout import check_spool
from tracer import atomic
from tracer.atomic import DATASET_LOCK_NAME, dataset_lock
from tracer.errors import TracebaseError, shown
from tracer.fleet.options import HOST_NAME, HOST_RULE
from tracer.inputs import file_kind, what_is_at
from tracer.pools import process_pool, results_in_order
from tracer.schema import (
    DAY_FILE_PREFIX,
    DAY_TABLES,
    META_LAYOUT_DAY,
    PARTITION_COLUMNS,
    TABLES,
    check_counts,
    check_event_table,
    conform,
    counter_buckets_for,
    counter_buckets_path,
    day_file_path,
    day_snapshots_of,
    encode_day_snapshots,
    file_metadata,
    footer_metadata,
    not_utf8,
    partition_path,
    partition_values,
    read_footer,
    snapshot_order,
    snapshot_time,
    validate_file,
    write_counter_buckets,
    write_partition,
    write_table,
)
from tracer.units import epoch_ns

SPOOL_TABLES = ("events", "counters")
# A host directory name becomes the `host=` partition value and the host column: one safe path
# component that pandas/pyarrow/DuckDB read back unchanged (no '%', '/', '=', spaces). The same
# rule `tracer run --host` enforces (tracer.fleet.options), so ingest accepts what the tracer writes.
HOST_RE = HOST_NAME
LOCK_NAME = DATASET_LOCK_NAME  # (tracer.atomic: `baseline simulate` takes it too)
# a compaction's staging tree, at the dataset's top (outside the tables' globs)
COMPACT_STAGING_PREFIX = ".compact-"
WATERMARK_NAME = "_ingest_watermark.json"
REASON_SUFFIX = ".reason"  # a quarantined entry's sidecar: why, and (its time) when
# A spool temporary is abandoned once no writer holds the host and it is this old: a snapshot is
# written in well under a second, and a tracer on another machine (NFS), whose lock cannot be
# seen from here, is given an hour.
ABANDONED_AFTER_S = 3600.0
# Sort keys that give compacted files a stable, scan-friendly order.
SORT_KEYS = {
    "events": [("start_time", "ascending"), ("trace_id", "ascending"), ("seq", "ascending")],
    "counters": [("snapshot_time", "ascending"), ("probe", "ascending")],
    "truth": [("trace_id", "ascending")],
}
# What reading or conforming a bad file can raise (besides TracebaseError): all mean "bad data".
_DATA_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, UnicodeError, ValueError)


@dataclass
class IngestResult:
    snapshots: int = 0  # snapshot directories ingested by this run
    already_ingested: int = 0  # found in the dataset already (rerun / crash recovery)
    rows: dict[str, int] = field(default_factory=dict)  # new rows per table
    files_written: list[str] = field(default_factory=list)
    quarantined: list[dict[str, str]] = field(default_factory=list)  # {path, reason}
    stale_temporaries_removed: int = 0  # left by a run that was killed
    spool_temporaries_removed: list[str] = field(default_factory=list)  # abandoned by a killed tracer
    warnings: list[str] = field(default_factory=list)  # one line each: ingested, but something is amiss
    watermark: str | None = None  # newest snapshot time committed (ISO, UTC)

    @property
    def new_rows(self) -> int:
        return sum(self.rows.values())

    def to_dict(self) -> dict:
        return asdict(self) | {"new_rows": self.new_rows}


@dataclass
class CompactResult:
    partitions: int = 0  # partitions compacted
    files_in: int = 0
    files_out: int = 0
    leftovers_removed: int = 0  # files covered by a compacted file (interrupted compaction)
    days: int = 0  # closed days compacted across hosts (compact_days)
    day_files_in: int = 0
    day_files_out: int = 0
    days_left: list[str] = field(default_factory=list)  # closed days left as they are, with the reason
    # counters parts another writer put in the dataset whose counts no interval can hold: moved
    # to quarantine, as ingest does with such a snapshot ({"path": ..., "reason": ...})
    quarantined: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# names
# --------------------------------------------------------------------------------------------
def _decodable(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def host_problem(name: str) -> str | None:
    """Why a spool directory name is not a usable host name, or None when it is."""
    if not _decodable(name):
        return f"expected a host name in UTF-8, found undecodable bytes in '{shown(name)}'"
    if not HOST_RE.match(name) or name in (".", ".."):
        return f"expected {HOST_RULE}, found '{shown(name)}'"
    return None


def snapshot_date(name: str) -> str | None:
    """UTC date (YYYY-MM-DD) of a snapshot directory name, or None if it is not one."""
    when = snapshot_time(name)
    return when.date().isoformat() if when else None


def part_name(snapshot_ids: Iterable[str], prefix: str = "part") -> str:
    digest = hashlib.sha1("\n".join(sorted(snapshot_ids)).encode()).hexdigest()[:16]
    return f"{prefix}-{digest}.parquet"


def _part_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("part-*.parquet") if not p.name.startswith("."))


def file_snapshots(path: Path) -> frozenset[str]:
    """Snapshot ids recorded in a part file's footer (empty when written by something else)."""
    try:
        meta = file_metadata(path)
    except (OSError, pa.ArrowInvalid):
        return frozenset()
    return snapshots_in(meta)


def snapshots_in(meta: dict[str, str]) -> frozenset[str]:
    """Snapshot ids of a part file's tracebase.* metadata (file_metadata, footer_metadata)."""
    raw = meta.get("snapshots")
    return frozenset(json.loads(raw)) if raw else frozenset()


def day_files(date_dir: Path) -> list[Path]:
    """The day-layout files of a date directory (tracer.schema DAY_TABLES), sorted.

    day-0000 is looked for first (one stat on a date not compacted). Without it the directory
    is listed, once per process while it is unchanged: a day-0000 removed by hand left
    day-0001.. unseen, so the re-sent snapshots of every host in them were ingested again
    (each of their rows read twice by every reader)."""
    if (date_dir / f"{DAY_FILE_PREFIX}0000.parquet").exists():
        return sorted(p for p in date_dir.glob(f"{DAY_FILE_PREFIX}*.parquet") if not p.name.startswith("."))
    try:
        st = os.stat(date_dir)
    except OSError:
        return []
    key = (st.st_dev, st.st_ino, st.st_mtime_ns)
    cached = _DAY_LISTINGS.get(str(date_dir))
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        with os.scandir(date_dir) as entries:
            found = sorted(Path(e.path) for e in entries if e.name.startswith(DAY_FILE_PREFIX)
                           and e.name.endswith(".parquet") and e.is_file(follow_symlinks=False))
    except OSError:
        return []
    # an mtime within the file system's timestamp granularity of now may not change with the
    # next entry (a rename in the same tick): such a listing is not kept
    if time.time_ns() - st.st_mtime_ns > 2_000_000_000:
        if len(_DAY_LISTINGS) >= 4096:
            _DAY_LISTINGS.clear()
        _DAY_LISTINGS[str(date_dir)] = (key, found)
    return found


# date directory -> ((dev, inode, mtime), its day files) for dates without day-0000 (day_files)
_DAY_LISTINGS: dict[str, tuple[tuple[int, int, int], list[Path]]] = {}


def day_file_hosts(path: Path, meta: dict[str, str] | None = None,
                   footer: pq.FileMetaData | None = None) -> tuple[str, str] | None:
    """(first, last) host of a day file, from its footer (None: not a day file of ours);
    `meta`: its footer's metadata when the caller has read it already (file_metadata), `footer`
    the footer itself (read_footer): the file is not read again."""
    try:
        if meta is None:
            meta = file_metadata(path) if footer is None else footer_metadata(footer)
        first, last = json.loads(meta["hosts"]) if meta.get("layout") == META_LAYOUT_DAY else (None, None)
    except (OSError, pa.ArrowInvalid, KeyError, ValueError, TypeError):
        first = last = None
    if isinstance(first, str) and isinstance(last, str):
        return first, last
    return _stored_host_span(path, footer)


def _stored_host_span(path: Path, footer: pq.FileMetaData | None = None) -> tuple[str, str] | None:
    """(min, max) of a day file's stored `host` column from its row groups' statistics: a day
    file another writer made (the host column, no tracebase.hosts in the footer). Without it
    such a date was left alone by every compaction for good, its late partitions never merged.
    None when the column or its statistics are missing, or a row group's host is null.
    `footer`: the file's footer when the caller has read it (read_footer)."""
    try:
        meta = pq.read_metadata(path) if footer is None else footer
        if not meta.num_row_groups:
            return None
        first_group = meta.row_group(0)  # the leaf column's index (a nested column before it shifts it)
        index = next((i for i in range(first_group.num_columns)
                      if first_group.column(i).path_in_schema == "host"), None)
        if index is None:
            return None
        lows, highs = [], []
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(index).statistics
            if stats is None or not stats.has_min_max or stats.null_count:
                return None
            lows.append(stats.min)
            highs.append(stats.max)
    except (OSError, pa.ArrowInvalid):
        return None
    first, last = min(lows), max(highs)
    first = first.decode() if isinstance(first, bytes) else first
    last = last.decode() if isinstance(last, bytes) else last
    return (first, last) if isinstance(first, str) and isinstance(last, str) else None


def day_manifest(date_dir: Path, host: str) -> frozenset[str]:
    """Snapshot ids of `host` that a day file of `date_dir` holds (its footer's manifest):
    a snapshot ingested late for a day compacted across hosts is skipped when the day has it.
    Raises TracebaseError naming the file when the host is in no day file that reads and one
    does not (truncated, or a manifest that does not decode): the caller says so and takes the
    host's snapshots as new, as for a part file whose footer does not read (file_snapshots)."""
    unreadable: list[str] = []
    for f in day_files(date_dir):
        try:
            meta = file_metadata(f)
        except (OSError, pa.ArrowInvalid) as exc:
            unreadable.append(f"{shown(f)}: cannot read its footer ({getattr(exc, 'strerror', None) or exc})")
            continue
        span = day_file_hosts(f, meta)
        if span is not None and span[0] <= host <= span[1]:
            return day_snapshots_of(meta.get("day_snapshots"), [host], source=shown(f)).get(host, frozenset())
    if unreadable:
        raise TracebaseError(unreadable[0])
    return frozenset()


# --------------------------------------------------------------------------------------------
# the dataset lock and the watermark
# --------------------------------------------------------------------------------------------
@contextmanager
def spool_lock(spool: Path, *, exclusive: bool, timeout_s: float = 600.0) -> Iterator[None]:
    """Hold the spool's ingest lock (a flock on the spool directory itself: no file is left in
    the spool): exclusive for an ingest that moves snapshots out of it, shared for one that
    leaves them (--keep-spool). Two ingests moving from one spool into two datasets each read
    snapshots the other was removing: the same rows went into both, and the one that lost the
    race stopped on a snapshot gone from under it. The second now waits for the first, as for
    the dataset lock (one line after a second, an error past the bound)."""
    try:
        fd = os.open(spool, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise TracebaseError(f"{shown(spool)}: cannot open the spool ({exc.strerror})") from None
    try:
        atomic.wait_for_flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, shown(spool), timeout_s,
                              lock="the spool's ingest lock")
        yield
    finally:
        os.close(fd)


def dataset_holding(path: str | os.PathLike) -> Path | None:
    """The dataset `path` is in (the dataset itself, a table, a date, a host, a part file): the
    nearest directory at most four levels up that holds the dataset lock file, or None (a
    recording, a directory no ingest ever wrote)."""
    here = Path(os.path.abspath(path))
    for candidate in [here, *here.parents][:5]:
        if os.path.isfile(candidate / LOCK_NAME):
            return candidate
    return None


@contextmanager
def reading_datasets(paths: Iterable[str | os.PathLike], timeout_s: float = 600.0) -> Iterator[None]:
    """The shared lock of every dataset one of `paths` lies in, for a reader given files or
    directories rather than a dataset (`baseline export DATASET/events`): a running ingest or
    compaction finishes first, as for audit and coverage. Without it a reader could meet a
    retention's drop or a compaction half done. Paths outside a dataset need no lock."""
    datasets = sorted({d for d in map(dataset_holding, paths) if d is not None})
    with contextlib.ExitStack() as stack:
        for dataset in datasets:
            stack.enter_context(dataset_lock(dataset, exclusive=False, timeout_s=timeout_s))
        yield


def read_watermark(dataset: str | os.PathLike) -> dict | None:
    """The last completed ingest run's commit marker, or None (no ingest yet, e.g. a simulated dataset)."""
    try:
        return json.loads((Path(dataset) / WATERMARK_NAME).read_text())
    except (OSError, ValueError):
        return None


def _check_watermark_place(dataset: Path) -> None:
    """TracebaseError, before anything moves, when the watermark's name is taken by what is no
    file (a directory, a FIFO): its write came after every snapshot was ingested, so the run
    failed with "Is a directory" having done its work, and a DAG retried it in vain."""
    place = dataset / WATERMARK_NAME
    if os.path.lexists(place) and not place.is_file():
        raise TracebaseError(f"{place}: expected the ingest watermark (a JSON file written by ingest), found "
                             f"{what_is_at(place)}; "
                             "remove it")


def _publish_watermark(dataset: Path, newest: dt.datetime | None, result: IngestResult) -> str | None:
    previous = read_watermark(dataset) or {}
    committed = previous.get("committed_until")
    if newest is not None:
        iso = newest.isoformat().replace("+00:00", "Z")
        committed = max(committed, iso) if committed else iso
    marker = {
        "committed_until": committed,  # every snapshot up to this time that was in the spool is in the dataset
        "run_finished": dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z"),
        "snapshots": result.snapshots,
        "rows": result.rows,
    }
    if dataset.is_dir():
        atomic.write_text(dataset / WATERMARK_NAME, json.dumps(marker, sort_keys=True) + "\n")
    return committed


# --------------------------------------------------------------------------------------------
# temporaries, quarantine, reading
# --------------------------------------------------------------------------------------------
def _is_temporary(name: str) -> bool:
    # tracer.atomic writes '.<name>.<random>.tmp' beside the final file
    return name.startswith(".") and name.endswith(".tmp")


def remove_stale_temporaries(*roots: Path) -> int:
    """Delete the hidden temporaries a killed ingest, compaction or quarantine left under `roots`
    (call with the lock held: no writer of ours is running then). Symlinks are not followed."""
    removed = 0
    for root in roots:
        if not root.is_dir() or root.is_symlink():
            continue
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            for name in filenames + [d for d in dirnames if _is_temporary(d)]:
                if _is_temporary(name):
                    path = os.path.join(dirpath, name)
                    try:
                        atomic.remove_entry(path)
                        removed += 1
                    except FileNotFoundError:
                        pass
            dirnames[:] = [d for d in dirnames if not _is_temporary(d)]
    return removed


def _unique(dest: Path) -> Path:
    if not os.path.lexists(dest):
        return dest
    for n in range(1, 10_000):
        candidate = dest.with_name(f"{dest.name}.{n}")
        if not os.path.lexists(candidate):
            return candidate
    raise TracebaseError(f"{shown(dest)}: too many quarantined files of this name")


def quarantine_file(path: Path, quarantine: Path, relative: Path, reason: str) -> Path:
    """Move `path` (a file, directory or symlink: the link itself, never its target) to
    quarantine/relative and write the reason beside it. The reason is written first, so a run
    killed in between leaves the file in the spool, to be quarantined again."""
    if not os.path.lexists(path):
        raise VanishedError(path)
    dest = _unique(quarantine / relative)
    sidecar = dest.with_name(dest.name + REASON_SUFFIX)
    try:
        atomic.make_dirs(dest.parent)
        atomic.write_text(sidecar, reason.rstrip("\n") + "\n")
        try:
            os.rename(path, dest)
        except FileNotFoundError:
            if os.path.lexists(path):
                raise
            sidecar.unlink(missing_ok=True)  # no reason kept for a file that is not there
            raise VanishedError(path) from None
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            shutil.move(str(path), dest)  # another filesystem: copies symlinks as links
    except OSError as exc:
        if not os.path.lexists(dest):  # no reason kept beside a file that is not there
            with contextlib.suppress(OSError):
                sidecar.unlink(missing_ok=True)
        raise TracebaseError(f"{shown(dest)}: cannot quarantine {shown(path)} ({exc.strerror or exc})") from None
    return dest


class VanishedError(TracebaseError):
    """A spool entry removed while ingest read the spool (by hand, a clean-up job): nothing to
    quarantine, and no fault of the rest of the run."""

    def __init__(self, path: Path):
        super().__init__(f"{shown(path)}: removed from the spool while ingest read it (skipped)")


def _file_problem(path: Path) -> str | None:
    """Why a spool entry must not be opened (a symlink, not a regular file), or None."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{shown(path)}: cannot stat ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return f"{shown(path)}: expected a regular file, found a symlink (not followed out of the spool)"
    if not stat.S_ISREG(st.st_mode):
        return f"{shown(path)}: expected a regular file, found {file_kind(st.st_mode)}"
    return None


def _read_valid(path: Path, table: str, host: str | None = None) -> pa.Table:
    """Validate, read and conform a spool file; any failure is a TracebaseError with the reason.

    `host` (the spool directory's name) replaces the file's host column: the directory is what
    names the partition."""
    problem = _file_problem(path)
    if problem:
        raise TracebaseError(problem)
    validate_file(path, table, check_nulls=False)  # the nulls are checked below, on the data read
    schema = TABLES[table]
    try:  # ParquetFile.read is ~2.5x cheaper than read_table (no dataset machinery) on small files
        pf = pq.ParquetFile(path)
        data = pf.read(columns=[n for n in schema.names if n in pf.schema_arrow.names])
        if host is not None and "host" in schema.names:
            column = pa.array([host] * data.num_rows, pa.string())
            idx = data.schema.get_field_index("host")
            data = data.set_column(idx, "host", column) if idx >= 0 else data.append_column("host", column)
        data = conform(data, table)
    except TracebaseError as exc:
        raise TracebaseError(f"{shown(path)}: {exc}") from None
    except _DATA_ERRORS + (OSError,) as exc:
        raise TracebaseError(f"{shown(path)}: unreadable data ({exc})") from None
    for f in schema:
        if not f.nullable and data.column(f.name).null_count:
            n = data.column(f.name).null_count
            raise TracebaseError(f"{shown(path)}: column '{f.name}': expected no nulls (non-null column), found {n} nulls")
    # Bytes that are not UTF-8 in a string column went into the dataset, where every later scan
    # of it (audit, expected learn) failed on that file. The whole table's check is ~8x cheaper
    # than one call per column on a spool's small files; the column is looked for on failure.
    try:
        data.validate(full=True)
    except pa.ArrowInvalid as exc:
        for f in schema:
            if (why := not_utf8(data.column(f.name))) is not None:
                raise TracebaseError(f"{shown(path)}: column '{f.name}': expected UTF-8 strings, "
                                     f"found bytes that are not UTF-8 ({why})") from None
        raise TracebaseError(f"{shown(path)}: unreadable data ({' '.join(str(exc).split())})") from None
    # counts no interval can hold (failures above invocations): a failure rate over 1 for
    # every later reader of the dataset, so the snapshot is quarantined with the row named
    check_counts(data, table, shown(path))
    # values no call tree holds (a kind outside good/failure/full, a negative depth): read
    # silently by every later reader, so quarantined as the counts are
    check_event_table(data, table, shown(path))
    return data


# --------------------------------------------------------------------------------------------
# ingest
# --------------------------------------------------------------------------------------------
def refuse_overlapping(spool: Path, dataset: Path, quarantine: Path) -> None:
    """The spool, the dataset and the quarantine are three places, none inside another.

    Every directory of the spool is a host's: a dataset written into the spool (`baseline
    ingest S S`, or S/ds) had its own tables taken for hosts on the next run and moved to
    quarantine, and a quarantine inside the spool is ingested (quarantined) itself.
    """
    s, d, q = (Path(os.path.realpath(p)) for p in (spool, dataset, quarantine))
    for path, real, what in ((dataset, d, "dataset"), (quarantine, q, "quarantine")):
        if real == s or real.is_relative_to(s) or s.is_relative_to(real):
            where = "the spool itself" if real == s else "inside the spool" if real.is_relative_to(s) else "holding the spool"
            raise TracebaseError(f"{shown(path)}: expected a {what} directory apart from the spool {shown(spool)}, found {where}")
    if q == d or q.is_relative_to(d):
        raise TracebaseError(f"{shown(quarantine)}: expected a quarantine directory apart from the dataset {shown(dataset)}, "
                             f"found {'the dataset itself' if q == d else 'inside the dataset'}")
    table = _dataset_table_in(spool)
    if table is not None:
        # SPOOL and DATASET swapped, or a dataset given as the spool: its tables would be
        # taken for hosts and their files moved to quarantine
        raise TracebaseError(f"{shown(spool)}: expected a spool (host directories of snap-* snapshots), found a dataset "
                             f"({shown(table)} holds date= partitions); the arguments are SPOOL DATASET")


def _dataset_table_in(spool: Path) -> Path | None:
    """A directory of the spool laid out as a dataset table (<table>/date=D/...), if any. A
    host's directory holds snap-* directories only, so no host is mistaken for one."""
    try:
        children = [e for e in os.scandir(spool) if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")]
        for child in children:
            with os.scandir(child.path) as inner:
                if any(e.name.startswith("date=") and e.is_dir(follow_symlinks=False) for e in inner):
                    return Path(child.path)
    except OSError:  # unlistable: ingest itself reports it, naming the directory
        return None
    return None


def ingest_spool(
    spool: str | os.PathLike,
    dataset: str | os.PathLike,
    quarantine: str | os.PathLike,
    *,
    remove_ingested: bool = True,
    workers: int = 1,
    lock_timeout_s: float = 600.0,
    abandoned_after_s: float = ABANDONED_AFTER_S,
) -> IngestResult:
    """Ingest every complete snapshot under `spool` into `dataset` (see module docstring).

    workers > 1 ingests hosts in parallel processes (each host writes only its own partitions).
    """
    spool, dataset, quarantine = check_spool(spool), Path(dataset), Path(quarantine)
    refuse_overlapping(spool, dataset, quarantine)
    result = IngestResult(rows={t: 0 for t in SPOOL_TABLES})
    new_dataset = not os.path.lexists(dataset)
    with spool_lock(spool, exclusive=remove_ingested, timeout_s=lock_timeout_s), \
            dataset_lock(dataset, exclusive=True, timeout_s=lock_timeout_s), \
            _no_empty_tree_on_failure(dataset, new_dataset):
        _check_watermark_place(dataset)
        result.stale_temporaries_removed = remove_stale_temporaries(dataset, quarantine)
        jobs = []
        try:
            entries = sorted(os.scandir(spool), key=lambda e: e.name)
        except OSError as exc:
            raise TracebaseError(f"{spool}: cannot list the spool ({exc.strerror})") from None
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                reason = f"{shown(entry.path)}: expected a host directory, found a symlink (not followed out of the spool)"
                _quarantine(result, Path(entry.path), quarantine, Path("_spool") / entry.name, reason)
            elif entry.is_dir(follow_symlinks=False):
                if remove_ingested and not os.access(entry.path, os.W_OK):
                    # (its snapshots, once in the dataset, could not leave the spool: every
                    # later run would find them "already ingested", and the spool would grow)
                    raise TracebaseError(f"{shown(entry.path)}: expected a spool host directory this user may "
                                         f"empty, found it not writable (ingest as the spool's owner, or pass "
                                         f"--keep-spool)")
                jobs.append((Path(entry.path), dataset, quarantine, remove_ingested, abandoned_after_s))
        if workers > 1 and len(jobs) > 1:
            # Hosts are independent (each owns its host= partitions), so they parallelise cleanly.
            with process_pool(min(workers, len(jobs)), "fork", f"{dataset}: ingest -j") as pool:  # never more processes than hosts
                size = max(1, len(jobs) // (workers * 4))  # a few tasks per worker: balanced, little overhead
                chunks = [jobs[i:i + size] for i in range(0, len(jobs), size)]
                parts = [part for chunk in results_in_order(pool, _ingest_hosts_job, chunks) for part in chunk]
        else:
            parts = map(_ingest_host_job, jobs)
        newest: dt.datetime | None = None
        for part, part_newest in parts:
            result.snapshots += part.snapshots
            result.already_ingested += part.already_ingested
            for table, n in part.rows.items():
                result.rows[table] += n
            result.files_written += part.files_written
            result.quarantined += part.quarantined
            result.warnings += part.warnings
            result.spool_temporaries_removed += part.spool_temporaries_removed
            if part_newest is not None and (newest is None or part_newest > newest):
                newest = part_newest
        result.watermark = _publish_watermark(dataset, newest, result)
    return result


@contextmanager
def _no_empty_tree_on_failure(dataset: Path, new_dataset: bool) -> Iterator[None]:
    """A run that fails (a full disk, a read-only mount, a signal) leaves no empty partition
    directories it was about to fill, and a dataset it created holding nothing but its lock is
    removed again: a full disk left an empty `DATASET/counters/date=D/host=H` tree that looks like
    an ingest that found nothing. Files already renamed into place are whole snapshots and stay
    (the rerun skips them). Runs with the lock held: no other writer is between the directories."""
    try:
        yield
    except BaseException:
        for table in (*SPOOL_TABLES, "counter_buckets"):
            top = dataset / table
            if top.is_dir() and not top.is_symlink():
                for root, dirs, _files in os.walk(top, topdown=False):
                    for d in dirs:
                        with contextlib.suppress(OSError):  # not empty (or not ours): stays
                            os.rmdir(os.path.join(root, d))
                with contextlib.suppress(OSError):
                    os.rmdir(top)
        if new_dataset and atomic.remove_lone_dataset_lock(dataset):
            with contextlib.suppress(OSError):
                os.rmdir(dataset)
        raise


_HostJob = tuple[Path, Path, Path, bool, float]  # host dir, dataset, quarantine, remove ingested, abandoned after


def _ingest_hosts_job(jobs: list[_HostJob]) -> list[tuple[IngestResult, dt.datetime | None]]:
    return [_ingest_host_job(job) for job in jobs]


def _ingest_host_job(job: _HostJob) -> tuple[IngestResult, dt.datetime | None]:
    host_dir, dataset, quarantine, remove, abandoned_after_s = job
    result = IngestResult(rows={t: 0 for t in SPOOL_TABLES})
    if remove:
        result.spool_temporaries_removed = [shown(p) for p in remove_abandoned_spool_temporaries(host_dir, abandoned_after_s)]
    newest = _ingest_host(host_dir, dataset, quarantine, result, remove)
    return result, newest


def _newest_mtime(path: str) -> float:
    """The latest change of a temporary: its own, or for a directory any entry's in it (a
    snapshot being written touches its files, not the directory)."""
    newest = os.lstat(path).st_mtime
    if os.path.isdir(path) and not os.path.islink(path):
        with os.scandir(path) as inner:
            for e in inner:
                with contextlib.suppress(OSError):
                    newest = max(newest, e.stat(follow_symlinks=False).st_mtime)
    return newest


def _live_writer_inside(path: str) -> bool:
    """Does a temporary (or one inside a snapshot's staging directory) carry the pid of a
    process still running here?"""
    names = [os.path.basename(path)]
    if os.path.isdir(path) and not os.path.islink(path):
        with contextlib.suppress(OSError), os.scandir(path) as inner:
            names += [e.name for e in inner]
    return any((owner := atomic.temporary_of(n)) is not None and not atomic.writer_gone(owner[1]) for n in names)


def remove_abandoned_spool_temporaries(host_dir: str | os.PathLike, older_than_s: float = ABANDONED_AFTER_S,
                                       now: float | None = None) -> list[Path]:
    """Remove the hidden temporaries in a spool host directory that no writer will finish: a
    tracer killed -9 mid-snapshot leaves `.snap-*.tmp`, which only that host's tracer removed,
    at its restart; a host retired, or moved to another spool, kept them for good. One goes when
    the host's writer lock is held by no process here, no live process's pid is in its name or
    its files' names, and its change time is more than `older_than_s` from now, either way (one
    ahead is a clock set back since). Returns what went; what cannot be removed (a read-only
    spool) stays, quietly: it is the tracer's, not ingest's."""
    host_dir = Path(host_dir)
    now = time.time() if now is None else now
    if atomic.flock_held(host_dir / atomic.SPOOL_LOCK_NAME):
        return []  # a tracer writes this host now: its temporaries are its own to finish or remove
    # kept: changed within older_than_s of now, or a live process's pid in its name or its files'
    # names. Within, either side: a change time further ahead of now than that is a clock set
    # back since (NTP's correction of a machine that booted ahead): taken as "not younger" such
    # a temporary stayed until the clock caught up, for good after a year-ahead boot.
    return atomic.remove_temporaries(host_dir, _is_temporary, lambda path: abs(now - _newest_mtime(path)) < older_than_s
                                     or _live_writer_inside(path))


def _quarantine(result: IngestResult, path: Path, quarantine: Path, relative: Path, reason: str) -> None:
    try:
        dest = quarantine_file(path, quarantine, relative, reason)
    except VanishedError as gone:
        result.warnings.append(str(gone))
        return
    result.quarantined.append({"path": shown(dest), "reason": reason})


def _ingest_host(host_dir: Path, dataset: Path, quarantine: Path, result: IngestResult, remove: bool) -> dt.datetime | None:
    host = host_dir.name
    q_host = Path(host if _decodable(host) else shown(host).replace("/", "_"))
    try:
        # in the order written (sequence number), not by the time in the name: a clock stepped
        # back must not put a later interval's rows before an earlier one's
        entries = sorted(os.scandir(host_dir), key=lambda e: (0, order, "") if (order := snapshot_order(e.name))
                         else (1, (0, ""), e.name))
    except OSError as exc:
        raise TracebaseError(f"{shown(host_dir)}: cannot list the host's snapshots ({exc.strerror})") from None
    bad_host = host_problem(host)
    # (table, date) -> [(snapshot id, rows)]
    batches: dict[tuple[str, str], list[tuple[str, pa.Table, Path]]] = defaultdict(list)
    finished: list[Path] = []  # snapshot dirs fully handled (ingested or quarantined)
    newest: dt.datetime | None = None
    seen_ids: set[str] = set()  # snapshots whose rows the dataset already holds
    manifests: dict[tuple[str, str], frozenset[str]] = {}

    def present(table: str, date: str) -> frozenset[str]:
        """Snapshot ids already in this host's partition (read from the part files' footers once),
        and in the day file holding the host when the date was compacted across hosts."""
        if (table, date) not in manifests:
            target_dir = partition_path(dataset, table, date, host, "x").parent
            try:
                in_day = day_manifest(target_dir.parent, host)
            except TracebaseError as exc:
                result.warnings.append(f"{exc} (the ingest manifest of {shown(host)} on {date} unknown: "
                                       f"its snapshots taken as new)")
                in_day = frozenset()
            manifests[(table, date)] = frozenset().union(*(file_snapshots(p) for p in _part_files(target_dir)),
                                                         in_day)
        return manifests[(table, date)]

    for entry in entries:
        snap = Path(entry.path)
        if entry.name.startswith("."):  # .snap-*.tmp: the tracer is still writing it
            continue
        if bad_host:
            _quarantine(result, snap, quarantine, q_host / entry.name, f"{shown(host_dir)}: {bad_host}")
            continue
        if entry.is_symlink():
            reason = f"{shown(snap)}: expected a snapshot directory, found a symlink (not followed out of the spool)"
            _quarantine(result, snap, quarantine, q_host / entry.name, reason)
            continue
        when = snapshot_time(entry.name)
        if when is not None and not entry.is_dir(follow_symlinks=False):
            try:
                found = file_kind(entry.stat(follow_symlinks=False).st_mode)
            except OSError:
                found = "something else"
            reason = f"{shown(snap)}: expected a snapshot directory, found {found}"
            _quarantine(result, snap, quarantine, q_host / entry.name, reason)
            continue
        if when is None:
            reason = (f"{shown(snap)}: expected a snapshot directory named snap-YYYYmmddTHHMMSS.fffZ-SEQ "
                      f"(SEQ below 2^63), found '{shown(entry.name)}'")
            _quarantine(result, snap, quarantine, q_host / entry.name, reason)
            continue
        snap_id = f"{host}/{entry.name}"
        expected = {f"{t}.parquet" for t in SPOOL_TABLES}
        # The tracer renames a snapshot into place with both files (tracer.fleet.spool), so one
        # missing was removed or lost by hand or by a file system: the other is ingested (its
        # rows are good), but the gap in that table is said, naming the snapshot, not left
        # for an audit to find as a host that went quiet.
        missing = [f"{t}.parquet" for t in SPOOL_TABLES if not os.path.lexists(snap / f"{t}.parquet")]
        if missing:
            result.warnings.append(f"{shown(snap)}: expected {' and '.join(sorted(expected))}, found no "
                                   f"{' and no '.join(missing)} (ingested without {'them' if len(missing) > 1 else 'it'})")
        read: list[tuple[str, str, pa.Table, Path]] = []
        for table in SPOOL_TABLES:
            path = snap / f"{table}.parquet"
            if not os.path.lexists(path):
                continue
            date = when.date().isoformat()
            if snap_id in present(table, date):  # a rerun (or a run killed before cleanup): not read again
                seen_ids.add(snap_id)
                continue
            try:
                read.append((table, date, _read_valid(path, table, host), path))
            except TracebaseError as exc:
                _quarantine(result, path, quarantine, q_host / entry.name / path.name, str(exc))
        # the name dates the snapshot's rows (their partition, the dataset's watermark): one
        # whose name says another day than its counters were taken on (renamed by hand, copied
        # with a clock of 1970) would file a day's rows under a date no reader of that day looks at
        misdated = next((_misdated(snap, when, rows) for table, _, rows, _ in read if table == "counters"), None)
        if misdated:
            _quarantine(result, snap, quarantine, q_host / entry.name, misdated)
            continue
        for table, date, rows, path in read:
            batches[(table, date)].append((snap_id, rows, path))
        try:
            others = sorted(os.scandir(snap), key=lambda e: e.name)
        except OSError as exc:
            _quarantine(result, snap, quarantine, q_host / entry.name, f"{shown(snap)}: cannot list ({exc.strerror})")
            continue
        for other in others:  # anything else is not ours to ingest
            if other.name not in expected:
                reason = (f"{shown(other.path)}: unexpected file in a snapshot "
                          f"(expected events.parquet, counters.parquet)")
                _quarantine(result, Path(other.path), quarantine, q_host / entry.name / other.name, reason)
        finished.append(snap)
        newest = when if newest is None or when > newest else newest

    new_ids: set[str] = set()
    for (table, date), fresh in sorted(batches.items()):
        for ids, rows in _write_fresh(fresh, dataset, table, date, host, quarantine, q_host, result):
            result.rows[table] += rows
            new_ids.update(ids)
    if seen_ids:
        # Snapshots the dataset holds but the spool still has: a rerun after a run killed
        # between a counters file's rename and its summary's. Readers then read that file raw
        # (right, slower) for good, as nothing else rewrites the summary: write it now. (No
        # cost in steady state, where ingested snapshots leave the spool.)
        for table, date in manifests:
            if table == "counters":
                for part in _part_files(partition_path(dataset, table, date, host, "x").parent):
                    if counter_buckets_for(part) is None:
                        # (a part another writer put there has no summary either: a summary
                        # would vouch for counts no interval can hold, which compaction then
                        # trusts -- quarantined instead)
                        problem = _impossible_counts(part)
                        if problem:
                            _quarantine(result, part, quarantine, part.relative_to(dataset), problem)
                        else:
                            _write_summary(part)
    result.snapshots += len(new_ids)
    result.already_ingested += len(seen_ids - new_ids)
    if remove:
        for snap in finished:
            shutil.rmtree(snap, ignore_errors=True)
    return newest


# How far a snapshot's name may be from the time its counters were taken (the same wall clock,
# read once when the interval closed: seconds apart at most).
MISDATED_AFTER = dt.timedelta(hours=1)


def _misdated(snap: Path, when: dt.datetime, counters: pa.Table) -> str | None:
    """Why a snapshot's name cannot date its rows (its time more than MISDATED_AFTER from its
    counters' snapshot_time), or None."""
    if "snapshot_time" not in counters.column_names or counters.num_rows == 0:
        return None
    # As integer nanoseconds: pyarrow turns a nanosecond timestamp that is not a whole
    # microsecond (the daemon's clock) into a Python value only through pandas, which is not a
    # dependency (without it, a ValueError: `baseline ingest` of a real spool failed).
    column = counters.column("snapshot_time")
    taken = pc.drop_null(column.cast(pa.timestamp("ns", column.type.tz)).cast(pa.int64())).to_pylist()
    if not taken:
        return None
    when_ns = epoch_ns(when)
    far = max(taken, key=lambda t: abs(t - when_ns))
    if abs(far - when_ns) <= MISDATED_AFTER // dt.timedelta(microseconds=1) * 1000:
        return None
    far_time = dt.datetime.fromtimestamp(far // 10**9, dt.UTC).replace(microsecond=far // 1000 % 10**6)
    return (f"{shown(snap)}: expected a name within {MISDATED_AFTER} of its counters' snapshot_time, found "
            f"{when.isoformat().replace('+00:00', 'Z')} for counters taken at "
            f"{far_time.isoformat().replace('+00:00', 'Z')}")


class DatasetWriteError(TracebaseError):
    """The dataset cannot be written (disk full, read-only, permissions): not the snapshot's fault."""


def _write_fresh(fresh: list[tuple[str, pa.Table, Path]], dataset: Path, table: str, date: str, host: str,
                 quarantine: Path, q_host: Path, result: IngestResult) -> list[tuple[list[str], int]]:
    """Write the new snapshots of one partition as one part file; when the merged write fails
    for a data reason, write them one by one and quarantine the ones that cannot be written.
    An OS error (disk full, read-only dataset) stops the run and leaves the spool as it was."""
    def write(group: list[tuple[str, pa.Table, Path]]) -> tuple[list[str], int]:
        ids = sorted(sid for sid, _, _ in group)
        try:
            merged = pa.concat_tables([rows for _, rows, _ in group])
            out = write_partition(merged, dataset, table, date, host, part_name(ids),
                                  extra_metadata={"snapshots": json.dumps(ids)}, summarise=True)
        except OSError as exc:
            target = partition_path(dataset, table, date, host, "x").parent
            raise DatasetWriteError(f"{target}: cannot write the dataset ({exc.strerror or exc})") from None
        result.files_written.append(str(out))
        if table == "counters":
            _write_summary(out, merged)
        return ids, merged.num_rows

    try:
        return [write(fresh)]
    except DatasetWriteError:
        raise
    except (TracebaseError, *_DATA_ERRORS):
        pass
    written = []
    for item in fresh:
        try:
            written.append(write([item]))
        except DatasetWriteError:
            raise
        except (TracebaseError, *_DATA_ERRORS) as exc:
            sid, _, path = item
            _quarantine(result, path, quarantine, q_host / sid.split("/", 1)[1] / path.name,
                        f"{shown(path)}: cannot be written to the dataset ({exc})")
    return written


def _write_summary(counters_file: Path, rows: pa.Table | None = None, placed_as: Path | None = None) -> None:
    """The counters file's 15-minute summary (tracer.schema.COUNTER_BUCKETS), which the audit
    reads instead of the snapshot rows. Best effort: without it (disk full, a kill before its
    rename) the audit reads the counters file itself, so a failure here loses nothing."""
    try:
        write_counter_buckets(counters_file, rows, placed_as=placed_as)
    except (OSError, TracebaseError, *_DATA_ERRORS):
        _drop_summary(placed_as or counters_file)


def _drop_summary(counters_file: Path) -> None:
    path = counter_buckets_path(counters_file)
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# compaction and retention
# --------------------------------------------------------------------------------------------
def _partitions(dataset: Path, tables: Iterable[str]) -> list[Path]:
    out = []
    for table in tables:
        out.extend(sorted(p for p in (dataset / table).glob("date=*/host=*") if p.is_dir() and not p.is_symlink()))
    return out


def _read_part(path: Path, table: str) -> pa.Table:
    """A dataset part file as the full table (partition keys restored from its directory),
    validated first (SchemaError naming it): read raw and conformed, a file of a newer schema
    version (a newer tracebase's writer on the same dataset) or of another table was rewritten
    as this version's, its own columns dropped, where a reader refuses it."""
    validate_file(path, table)
    data = pq.ParquetFile(path).read()
    for key, value in partition_values(path).items():
        if key in TABLES[table].names and key not in data.column_names:
            data = data.append_column(key, pa.array([value] * data.num_rows, pa.string()))
    return conform(data, table)


def compact_dataset(
    dataset: str | os.PathLike,
    *,
    min_files: int = 8,
    small_file_bytes: int = 16 << 20,
    tables: Iterable[str] = ("events", "counters"),
    lock_timeout_s: float = 600.0,
    days_after: int | None = None,
    today: dt.date | None = None,
    day_file_rows: int = 0,
    days_budget_s: float | None = None,
    quarantine: str | os.PathLike | None = None,
) -> CompactResult:
    """Merge partitions holding >= `min_files` small part files into one file each; then, with
    `days_after` (days >= 1), compact every date of DAY_TABLES at least that many days before
    `today` (UTC) across hosts into day files (compact_days), newest first, starting no new
    date once `days_budget_s` (DAY_COMPACTION_BUDGET_S) is spent. `min_files` 0 skips the first.
    With `quarantine`, a counters part about to be merged whose counts no interval can hold
    (tracer.schema.check_counts, as ingest checks each snapshot) is moved there with the
    reason instead (_compact_partition)."""
    dataset = Path(dataset)
    tables = tuple(tables)
    result = CompactResult()
    if not dataset.is_dir():
        return result
    with dataset_lock(dataset, exclusive=True, timeout_s=lock_timeout_s):
        _remove_dead_partition_stagings(dataset, tables)
        if min_files:
            for part_dir in _partitions(dataset, tables):
                _compact_partition(part_dir, part_dir.parent.parent.name, min_files, small_file_bytes, result,
                                   (dataset, Path(quarantine)) if quarantine is not None else None)
        if days_after is not None:
            _compact_closed_days(dataset, [t for t in tables if t in DAY_TABLES], days_after, today,
                                 day_file_rows or DAY_FILE_ROWS, result,
                                 DAY_COMPACTION_BUDGET_S if days_budget_s is None else days_budget_s)
    return result


# A day file holds whole hosts, about this many rows (the audit's events batch: each day file is
# one batch), in row groups of DAY_ROW_GROUP_ROWS (polars decodes a file's row groups in parallel).
DAY_FILE_ROWS = 250_000
DAY_ROW_GROUP_ROWS = 65_536
# One run starts no new date after this many seconds (see _compact_closed_days): well below the
# 600 s an ingest or an audit waits for the dataset lock, and the DAG's 20-minute task timeout.
DAY_COMPACTION_BUDGET_S = 300.0


def compact_days(
    dataset: str | os.PathLike,
    *,
    days_after: int = 2,
    today: dt.date | None = None,
    tables: Iterable[str] = DAY_TABLES,
    file_rows: int = DAY_FILE_ROWS,
    lock_timeout_s: float = 600.0,
    budget_s: float = DAY_COMPACTION_BUDGET_S,
) -> CompactResult:
    """Compact every closed date (at least `days_after` days before `today`, UTC) of the day
    tables across hosts: the date's host partitions (and day files already there, when late
    snapshots came in since) become a few day files (tracer.schema: DAY_TABLES, day_file_path),
    sorted by host then time, whole hosts each, the host column and the hosts' ingest manifest
    stored. The date directory is built anew in a staging tree at the dataset's top and swapped
    in with one renameat2(RENAME_EXCHANGE): a reader sees the old partitions or the new day
    files, never both and never neither; a kill -9 leaves hidden debris the next run removes.
    Where the filesystem cannot swap, the date is left as it is (said in `days_left`). Newest
    date first; no new date once `budget_s` is spent (one at least): the rest, said in
    `days_left`, goes to the next run, so the exclusive lock is not held for hours."""
    return compact_dataset(dataset, min_files=0, tables=tables, lock_timeout_s=lock_timeout_s,
                           days_after=days_after, today=today, day_file_rows=file_rows, days_budget_s=budget_s)


def _compact_closed_days(dataset: Path, tables: list[str], days_after: int, today: dt.date | None,
                         file_rows: int, result: CompactResult, budget_s: float) -> None:
    if days_after < 1:
        raise TracebaseError(f"days_after: expected a number of days >= 1 (a day still open is never compacted), "
                             f"found {days_after}")
    today = today or dt.datetime.now(dt.UTC).date()
    try:
        last = (today - dt.timedelta(days=days_after)).isoformat()
    except OverflowError:  # before the calendar's first day: no date is that old
        return
    closed = [date_dir for table in tables
              if (top := dataset / table).is_dir() and not top.is_symlink()
              for date_dir in top.glob("date=*")
              if date_dir.name.removeprefix("date=") <= last and date_dir.is_dir() and not date_dir.is_symlink()]
    # Newest first, and no new date once `budget_s` is spent and one was compacted: the whole
    # run holds the dataset's exclusive lock, and the first run after an upgrade (or after
    # compact_days_after was set) met every closed date kept (90 by default, ~134 s each on a
    # 10,000-host day): hours of lock, where an ingest or an audit waits 600 s for it and the
    # DAG's tidy is killed at 20 minutes. The rest is left for the next run (every 5 minutes in
    # the DAG); the newest dates first, as the baseline's window reads them.
    started, compacted = time.monotonic(), result.days
    closed.sort(key=lambda d: (d.name, d.parent.name), reverse=True)
    for at, date_dir in enumerate(closed):
        if result.days > compacted and time.monotonic() - started >= budget_s:
            result.days_left.append(f"{len(closed) - at} older closed dates not looked at (the day compaction's "
                                    f"{budget_s:g} s budget spent: the next run goes on)")
            return
        _compact_day(dataset, date_dir, date_dir.parent.name, file_rows, result)


@dataclass
class _DayUnit:
    """What a day file will hold of one source: a host partition's files, or an earlier day file."""
    first: str
    last: str
    files: list[Path]
    rows: int
    snapshots: dict[str, frozenset[str]]


def _day_units(date_dir: Path) -> tuple[list[_DayUnit], int, str | None]:
    """The date directory's sources, the number of host partitions among them, or why the date
    is left alone (anything but host partitions of part files and day files of ours: not ours
    to drop, and a directory swap would drop it)."""
    units: list[_DayUnit] = []
    partitions = 0
    for e in sorted(os.scandir(date_dir), key=lambda e: e.name):
        if _is_temporary(e.name):
            continue  # a killed write's temporary: goes with the old tree
        if e.is_symlink():
            return [], 0, f"{shown(e.path)}: a symlink (not followed)"
        if e.name.startswith("host=") and e.is_dir(follow_symlinks=False):
            host = e.name.removeprefix("host=")
            files = []
            for f in sorted(os.scandir(e.path), key=lambda f: f.name):
                if _is_temporary(f.name):
                    continue
                if not (f.name.startswith("part-") and f.name.endswith(".parquet") and f.is_file(follow_symlinks=False)):
                    return [], 0, f"{shown(f.path)}: not a part file of ours"
                files.append(Path(f.path))
            if files:
                partitions += 1
                # each footer read once, for its rows and its snapshot ids (it was read twice)
                footers = [read_footer(f) for f in files]
                rows = sum(f.num_rows for f in footers)
                ids = frozenset().union(*(snapshots_in(footer_metadata(f)) for f in footers))
                units.append(_DayUnit(host, host, files, rows, {host: ids} if ids else {}))
        elif e.name.startswith(DAY_FILE_PREFIX) and e.name.endswith(".parquet") and e.is_file(follow_symlinks=False):
            try:
                footer = read_footer(e.path)
            except (OSError, pa.ArrowInvalid) as exc:  # truncated, unreadable: named, the date left alone
                return [], 0, f"{shown(e.path)}: cannot read its footer ({getattr(exc, 'strerror', None) or exc})"
            meta = footer_metadata(footer)
            span = day_file_hosts(Path(e.path), meta, footer)
            if span is None:
                return [], 0, f"{shown(e.path)}: a day file without its hosts in the footer"
            units.append(_DayUnit(span[0], span[1], [Path(e.path)], footer.num_rows,
                                  dict(day_snapshots_of(meta.get("day_snapshots"), source=shown(e.path)))))
        else:
            return [], 0, f"{shown(e.path)}: not a host partition or day file"
    return units, partitions, None


def _compact_day(dataset: Path, date_dir: Path, table: str, file_rows: int, result: CompactResult) -> None:
    try:
        units, partitions, problem = _day_units(date_dir)
    except TracebaseError as exc:  # a day file's manifest that does not decode (names the file)
        problem = f"{exc} (the date left as it is)"
    except (OSError, pa.ArrowInvalid) as exc:
        problem = f"{shown(date_dir)}: cannot read ({getattr(exc, 'strerror', None) or exc})"
    if problem:
        result.days_left.append(problem)
        return
    if not partitions:
        return  # day files only (or empty): compacted already
    # groups of whole sources, about file_rows rows each; a source whose hosts reach into the
    # group's (a late partition of a host a day file holds) joins it: a host is in one day file
    units.sort(key=lambda u: (u.first, u.last))
    groups: list[list[_DayUnit]] = []
    for u in units:
        if groups and (sum(g.rows for g in groups[-1]) < file_rows or u.first <= max(g.last for g in groups[-1])):
            groups[-1].append(u)
        else:
            groups.append([u])
    staging = _staging_path(dataset)
    new_dir = staging / date_dir.name
    date = date_dir.name.removeprefix("date=")
    keys = [("host", "ascending"), *SORT_KEYS[table]]
    try:
        os.mkdir(staging, atomic.DIR_MODE)
        os.mkdir(new_dir, atomic.DIR_MODE)
        with contextlib.suppress(OSError):
            os.chmod(new_dir, os.stat(date_dir).st_mode & 0o7777)
        for index, group in enumerate(groups):
            merged = pa.concat_tables([_read_part(f, table) for u in group for f in u.files]).sort_by(keys)
            snapshots: dict[str, set[str]] = defaultdict(set)
            for u in group:
                for h, ids in u.snapshots.items():
                    snapshots[h] |= ids
            # the span every host of the group, rows or none: a host whose events are empty
            # (its snapshots in the manifest all the same) sorting first or last was outside a
            # span taken from the rows, so ingest found no day file holding it and took its
            # re-sent snapshots as new (late partitions for good, the day recompacted each run)
            extra = {"layout": META_LAYOUT_DAY,
                     "hosts": json.dumps([min(u.first for u in group), max(u.last for u in group)])}
            if snapshots:
                extra["day_snapshots"] = encode_day_snapshots(snapshots)
            target = day_file_path(dataset, table, date, index)
            write_table(merged, new_dir / target.name, table, extra_metadata=extra,
                        parquet_options={"row_group_size": DAY_ROW_GROUP_ROWS}, summarise=True)
            del merged
        atomic.fsync_dir(new_dir)
        atomic.exchange(new_dir, date_dir)
    except (TracebaseError, *_DATA_ERRORS) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        result.days_left.append(f"{shown(date_dir)}: cannot compact across hosts ({exc})")
        return
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if exc.errno in (errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV):
            # (NFS, some FUSE and overlay mounts): no half-safe fallback -- the date stays per host
            result.days_left.append(f"{shown(date_dir)}: left per host (the filesystem cannot swap "
                                    f"directories: {exc.strerror})")
            return
        if exc.errno == errno.EBUSY:
            # the date directory is a mount point (an old date kept on another volume, bind
            # mounted read-only): it cannot be renamed, ever. Raised, it stopped the compaction
            # of every other date, every run, and the tidy task with it
            result.days_left.append(f"{shown(date_dir)}: left per host (a mount point, or busy: "
                                    f"{exc.strerror})")
            return
        raise
    except BaseException:  # a signal's unwinding, out of memory: the staging tree goes (hidden either way)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    atomic.fsync_dir(date_dir.parent)
    shutil.rmtree(staging, ignore_errors=True)  # the old date directory, now under the staging name
    result.days += 1
    result.day_files_in += sum(len(u.files) for u in units)
    result.day_files_out += len(groups)


def _staging_path(dataset: Path) -> Path:
    """A fresh hidden staging name at the dataset's top (outside the tables' globs), which
    `_remove_dead_partition_stagings` removes when the run that made it was killed."""
    return dataset / f"{COMPACT_STAGING_PREFIX}{os.getpid()}-{os.urandom(4).hex()}.tmp"


def _drop_tree(dataset: Path, tree: Path) -> str | None:
    """Remove a date directory at once for readers: renamed out of the table into a hidden
    staging name at the dataset's top (what a killed compaction leaves; the next compaction,
    ingest or retention removes it), then deleted. Deleted in place, a kill -9 mid-way left part
    of a date that every reader took for data: with a day compacted across hosts, some of its
    day files (whole hosts gone, the rest read). In place still where the rename is refused
    (the table directory on another mount). None when it is gone, else why it is not (the
    first error: EROFS, EACCES), and what could not be removed stays where it was."""
    staging = _staging_path(dataset)
    try:
        os.rename(tree, staging)
    except OSError:
        staging = tree
    errors: list[str] = []
    shutil.rmtree(staging, onerror=lambda _fn, path, info: errors.append(
        f"{shown(path)}: {getattr(info[1], 'strerror', None) or info[1]}"))
    if not errors or not os.path.lexists(staging):
        return None
    # (renamed, what is left stays hidden -- no reader sees half a date -- and the next run's
    # _remove_dead_partition_stagings tries again)
    return errors[0]


def _remove_dead_partition_stagings(dataset: Path, tables: Iterable[str]) -> None:
    """The hidden partition trees a compaction killed with -9 left ('.compact-<pid>-<hex>.tmp' at
    the dataset's top; '.host=H.<pid>-<hex>.tmp' in a date directory from earlier versions):
    the new tree before its swap, or the old one after it (call with the lock held: no
    compaction of ours is running). Ingest removes them too (remove_stale_temporaries)."""
    for entry in os.scandir(dataset):
        if entry.name.startswith(COMPACT_STAGING_PREFIX) and _is_temporary(entry.name) \
                and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
    for table in tables:  # where round fourteen's compaction staged them
        for date_dir in (dataset / table).glob("date=*"):
            if not date_dir.is_dir() or date_dir.is_symlink():
                continue
            for entry in os.scandir(date_dir):
                if _is_temporary(entry.name) and entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)


def _swap_compacted(part_dir: Path, table: str, merged: pa.Table, name: str, extra: dict | None,
                    small: list[Path]) -> bool:
    """Replace the partition directory by one holding the merged file and the files not merged
    (hard links), in one step (atomic.exchange). Readers never see the merged file beside its
    inputs: written in place and then deleting the inputs, a kill -9 in between left both, and
    every reader until the next ingest counted those rows twice. The merged file's summary is
    written first (under its final name: a summary alone is never read, and the next run
    removes it if the swap did not happen). False, with nothing changed, where the filesystem
    cannot swap or link (the caller compacts in place)."""
    # <dataset>/.compact-<pid>-<hex>.tmp/host=H, outside every table directory: a staging tree
    # beside the partition (date=D/.host=H.<pid>-<hex>.tmp/host=H, as before) was hidden from
    # tracebase's readers, but the documented glob `dataset/events/**/*.parquet` descends into
    # dot directories (polars, duckdb): after a kill -9 mid-swap polars' hive scan failed on
    # its '.host' key and duckdb counted the rows twice. The swap is across directories of one
    # file system (renameat2 allows it); the staged files still sit in a host=H directory.
    merged_names = {f.name for f in small}
    try:
        # everything else in the partition goes along (a file by a hard link, a symlink as a
        # link): a file another tool put there is not ours to drop. A directory, FIFO or
        # socket cannot be carried over in one step: compacted in place then.
        others = [e for e in os.scandir(part_dir) if e.name not in merged_names and e.name != name]
    except OSError:
        return False
    if any(not (e.is_symlink() or e.is_file(follow_symlinks=False)) for e in others):
        return False
    staging = _staging_path(part_dir.parent.parent.parent)
    new_dir = staging / part_dir.name
    final = part_dir / name
    try:
        os.mkdir(staging, atomic.DIR_MODE)
    except OSError:
        return False
    try:
        os.mkdir(new_dir, atomic.DIR_MODE)
        with contextlib.suppress(OSError):
            os.chmod(new_dir, os.stat(part_dir).st_mode & 0o7777)
        staged = write_table(merged, new_dir / name, table, omit_columns=PARTITION_COLUMNS, extra_metadata=extra,
                             summarise=True)
        if table == "counters":
            _write_summary(staged, merged, placed_as=final)
        for e in others:
            if e.is_symlink():
                os.symlink(os.readlink(e.path), new_dir / e.name)
            else:
                os.link(e.path, new_dir / e.name, follow_symlinks=False)
        atomic.exchange(new_dir, part_dir)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if exc.errno in (errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
            if table == "counters":
                _drop_summary(final)
            return False  # (NFS, some FUSE and overlay mounts): the in-place protocol
        if isinstance(exc.filename, str) and exc.filename.startswith(f"{new_dir}"):
            exc.filename = f"{part_dir}{exc.filename[len(str(new_dir)):]}"  # the path a user knows
        raise
    atomic.fsync_dir(part_dir.parent)
    for f in small:  # their summaries, now without a counters file
        if f.name != name:
            _drop_summary(f)
    shutil.rmtree(staging, ignore_errors=True)  # the old partition, now under the staging name
    return True


def _compact_in_place(part_dir: Path, table: str, merged: pa.Table, name: str, extra: dict | None,
                      small: list[Path]) -> None:
    """Compaction where a directory swap is not possible: the merged file first, its summary,
    then the inputs (a kill -9 between leaves inputs the merged file covers, removed by the
    next run; readers until then see those rows twice)."""
    date = part_dir.parent.name.removeprefix("date=")
    host = part_dir.name.removeprefix("host=")
    out = write_partition(merged, part_dir.parent.parent.parent, table, date, host, name, extra_metadata=extra,
                          summarise=True)
    if table == "counters":
        _write_summary(out, merged)
    for f in small:
        if f != out:
            _remove_part(f)


def _remove_part(f: Path) -> None:
    """Delete a counters (or events) part file that another file now covers. Its summary goes
    first: a kill -9 between the two leaves a covered file without a summary (readers read it
    raw; the next run removes it as a leftover), never a summary without its file, which
    nothing would ever remove (the other order left one in a kill at that instant)."""
    _drop_summary(f)
    f.unlink()


def _remove_orphan_summaries(part_dir: Path) -> int:
    """Summaries (counter_buckets) whose counters file is not there: a compaction killed after
    writing the merged file's summary but before its swap, or after the swap but before the
    inputs' summaries went (an earlier version's in-place compaction killed between a file's
    deletion and its summary's left them too). Readers never take them (a summary is only read
    through its counters file), but a rerun must leave what an uninterrupted run leaves.
    `part_dir` need not exist (a host or date with no counters left: `baseline summarize`). A
    directory under a summary's name is left alone (unlinking it failed). The number removed."""
    summaries = counter_buckets_path(part_dir / "x.parquet")
    if summaries is None or not summaries.parent.is_dir() or summaries.parent.is_symlink():
        return 0
    removed = 0
    for entry in os.scandir(summaries.parent):
        if (entry.name.startswith("part-") and entry.name.endswith(".parquet")
                and not entry.is_dir(follow_symlinks=False) and not os.path.lexists(part_dir / entry.name)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed += 1
    return removed


def _impossible_counts(counters_file: Path) -> str | None:
    """Why a dataset counters file holds counts no interval can hold (check_counts), or None --
    also for a file that cannot be read: the merge ("cannot compact") or the reader names it."""
    try:
        data = _read_part(counters_file, "counters")
    except (TracebaseError, *_DATA_ERRORS):
        return None
    try:
        check_counts(data, "counters", shown(counters_file))
    except TracebaseError as exc:
        return str(exc)
    return None


def _compact_partition(part_dir: Path, table: str, min_files: int, small_file_bytes: int, result: CompactResult,
                       quarantine: tuple[Path, Path] | None = None) -> None:
    """Merge the small part files of one partition (see compact_dataset). `quarantine`: (the
    dataset, the quarantine directory): a counters part about to be merged whose counts no
    interval can hold goes there instead (a part another writer put in the dataset: ingest
    checked its own). Merged, it gave a failure rate over 1 to every reader, for good. Checked
    only on the parts read for a merge anyway (numpy over two columns): a look at every
    part of every partition on every run cost ~0.3 ms CPU each, 80 s a run over a month of a
    10,000-host fleet's counters."""
    files = _part_files(part_dir)
    snaps = {f: file_snapshots(f) for f in files}
    # Recovery: a file whose snapshots are all inside another file is a leftover input of an
    # interrupted compaction; keeping it would double-count rows. The file covering it may be
    # the compaction's output killed before its summary was written: written now (else the
    # audit would read that file raw for good, and the dataset differ from an uninterrupted run's).
    covering: set[Path] = set()
    for f in list(files):
        bigger = [g for g in files if g != f and snaps[f] and snaps[f] < snaps[g]]
        if bigger:
            _remove_part(f)
            files.remove(f)
            covering.update(bigger)
            result.leftovers_removed += 1
    if table == "counters":
        for g in sorted(covering & set(files)):
            if counter_buckets_for(g) is None:
                _write_summary(g)
        _remove_orphan_summaries(part_dir)
    small = [f for f in files if f.stat().st_size < small_file_bytes]
    if len(small) < min_files:
        return
    try:
        parts = [_read_part(f, table) for f in small]
    except (TracebaseError, *_DATA_ERRORS) as exc:  # a file another writer put there: leave the partition
        raise TracebaseError(f"{part_dir}: cannot compact ({exc})") from None
    if table == "counters" and quarantine is not None:
        dataset, q_dir = quarantine
        kept = []
        for f, data in zip(small, parts, strict=True):
            try:
                check_counts(data, "counters", shown(f))
            except TracebaseError as exc:
                _drop_summary(f)
                dest = quarantine_file(f, q_dir, f.relative_to(dataset), str(exc))
                result.quarantined.append({"path": shown(dest), "reason": str(exc)})
                continue
            kept.append((f, data))
        if len(kept) < len(small):
            small, parts = [f for f, _ in kept], [data for _, data in kept]
            if len(small) < min_files:
                return
    ids = sorted(frozenset().union(*(snaps[f] for f in small)))
    merged = pa.concat_tables(parts)
    if table in SORT_KEYS:
        merged = merged.sort_by(SORT_KEYS[table])
    name = part_name(ids or [f.name for f in small], prefix="part-c")
    extra = {"snapshots": json.dumps(ids)} if ids else None
    if not _swap_compacted(part_dir, table, merged, name, extra, small):
        _compact_in_place(part_dir, table, merged, name, extra, small)
    result.partitions += 1
    result.files_in += len(small)
    result.files_out += 1


# a quarantine time this far ahead of the clock was taken before the clock was set back
_AHEAD_S = 86_400.0


def _quarantined_at(path: str) -> float:
    """When the entry at `path` (its reason sidecar, written as it was quarantined, or the entry
    itself when it has none) was quarantined. A time dated ahead of the clock is re-dated to now,
    so the entry is kept the retention from now, not until the clock catches up with it."""
    stamp = os.lstat(path).st_mtime
    now = time.time()
    if stamp > now + _AHEAD_S:
        os.utime(path, follow_symlinks=False)
        return now
    return stamp


def _remove_expired_quarantine(quarantine: Path, cutoff: float) -> int:
    """Remove the quarantined entries (a file, a snapshot directory, a link: never a link's
    target) quarantined before `cutoff`, each with its reason sidecar; returns how many paths
    went. An entry's age counts from its quarantine (the sidecar's time), not from its own
    mtime: a snapshot written weeks ago and quarantined today is kept the retention from today,
    where its own mtime had it deleted by the next run, before anyone could read why. A directory
    without a sidecar is the layout's (a host's), walked into; one left empty is removed."""
    removed = 0
    for dirpath, dirnames, filenames in os.walk(quarantine, topdown=True, followlinks=False):
        names = set(dirnames) | set(filenames)
        walk_into = []
        for name in sorted(names):
            if name.endswith(REASON_SUFFIX) and name[: -len(REASON_SUFFIX)] in names:
                continue  # goes with its entry
            path = os.path.join(dirpath, name)
            is_dir = name in dirnames and not os.path.islink(path)
            reason = path + REASON_SUFFIX if name + REASON_SUFFIX in names else None
            if is_dir and reason is None:
                walk_into.append(name)
                continue
            try:
                if _quarantined_at(reason or path) >= cutoff:
                    continue
                if is_dir:
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
                removed += 1
                if reason:
                    os.unlink(reason)
                    removed += 1
            except FileNotFoundError:
                pass
        dirnames[:] = walk_into
    for dirpath, _dirnames, _filenames in os.walk(quarantine, topdown=False, followlinks=False):
        if dirpath != str(quarantine):
            with contextlib.suppress(OSError):
                os.rmdir(dirpath)  # only when empty
    return removed


def apply_retention(
    dataset: str | os.PathLike,
    quarantine: str | os.PathLike,
    *,
    dataset_days: int,
    quarantine_days: int,
    today: dt.date | None = None,
    lock_timeout_s: float = 600.0,
) -> dict[str, Any]:
    """Delete dataset date partitions and quarantined entries older than the retention.

    Each table's newest date partition is kept even when it is older (`kept_newest` counts
    them): a clock set far ahead, or an ingest stopped for longer than the retention, would
    otherwise leave an empty dataset -- the last data the audits have, as a findings directory's
    LATEST run is kept. Symlinks (quarantined links) are removed as links; their targets are
    never touched. A date directory past the retention that is a mount point (an old date kept
    on a volume of its own), or that cannot be removed (read-only, not ours to delete), is left
    as it is and named in `left` with the reason; the other dates are still dropped."""
    today = today or dt.datetime.now(dt.UTC).date()
    cutoff = (today - dt.timedelta(days=dataset_days)).isoformat()
    removed: dict[str, Any] = {"partitions": 0, "quarantined": 0, "kept_newest": 0, "left": []}
    dataset = Path(dataset)
    if dataset.is_dir():
        with dataset_lock(dataset, exclusive=True, timeout_s=lock_timeout_s):
            _remove_dead_partition_stagings(dataset, ())  # an earlier run's drop, killed mid-way
            # (hidden names skipped, as the table glob `*/date=*` did: a writer's staging)
            for table in sorted(p for p in dataset.iterdir()
                                if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")):
                dates = sorted(table.glob("date=*"), key=lambda d: d.name)
                expired = [d for d in dates if d.name.removeprefix("date=") < cutoff]
                if expired and expired[-1] == dates[-1]:
                    expired.pop()
                    removed["kept_newest"] += 1
                for date_dir in expired:
                    if date_dir.is_symlink():
                        date_dir.unlink()
                    elif os.path.ismount(date_dir):
                        # Its rename is EBUSY and an rmtree in place emptied the volume someone
                        # mounted there, then counted the date dropped on every run while the
                        # mount point stayed. Whoever mounted it decides what goes.
                        removed["left"].append(f"{shown(date_dir)}: left (a mount point: unmount it, "
                                               f"or remove its files by hand)")
                        continue
                    else:
                        problem = _drop_tree(dataset, date_dir)
                        if problem:
                            removed["left"].append(f"{shown(date_dir)}: left ({problem})")
                            continue
                    removed["partitions"] += 1
    q_cutoff = dt.datetime.combine(today - dt.timedelta(days=quarantine_days), dt.time(), dt.UTC).timestamp()
    quarantine = Path(quarantine)
    if quarantine.is_dir() and not quarantine.is_symlink():
        removed["quarantined"] = _remove_expired_quarantine(quarantine, q_cutoff)
    return removed

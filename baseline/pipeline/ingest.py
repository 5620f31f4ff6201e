"""Move spool snapshots into the partitioned fleet dataset, compact it, quarantine bad files.

Spool:   <spool>/<host>/snap-<YYYYmmddTHHMMSS.fffZ>-<seq>/{events,counters}.parquet
Dataset: <dataset>/<table>/date=YYYY-MM-DD/host=<host>/part-*.parquet

Idempotency: every part file records, in its Parquet footer (``tracebase.snapshots``), the ids
of the snapshots whose rows it holds, and its name is derived from those ids. Before writing,
ingest reads the footers of the target partition and drops snapshots already there, so
re-running an interval (or a run that died after writing but before cleaning the spool) adds no
duplicate rows. The manifest lives in the data files themselves, so it cannot drift from them.
Compaction writes the merged file first and deletes its inputs second; if it dies in between,
the next run finds files whose snapshot sets are covered by another file and removes them.

Unreadable or schema-violating files are moved to ``<quarantine>/<host>/<snapshot>/<file>``
with a ``<file>.reason`` sidecar holding the one-line reason; the rest of the snapshot is
ingested.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import multiprocessing
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tracer import atomic
from tracer.errors import TracebaseError
from tracer.schema import TABLES, conform, file_metadata, partition_path, validate_file, write_table

SPOOL_TABLES = ("events", "counters")
SNAPSHOT_RE = re.compile(r"^snap-(\d{8})T(\d{6})(?:\.\d+)?Z-\d+$")
# Sort keys that give compacted files a stable, scan-friendly order.
SORT_KEYS = {
    "events": [("start_time", "ascending"), ("trace_id", "ascending"), ("seq", "ascending")],
    "counters": [("snapshot_time", "ascending"), ("probe", "ascending")],
    "truth": [("trace_id", "ascending")],
}


@dataclass
class IngestResult:
    snapshots: int = 0  # snapshot directories ingested by this run
    already_ingested: int = 0  # found in the dataset already (rerun / crash recovery)
    rows: dict[str, int] = field(default_factory=dict)  # new rows per table
    files_written: list[str] = field(default_factory=list)
    quarantined: list[dict[str, str]] = field(default_factory=list)  # {path, reason}

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

    def to_dict(self) -> dict:
        return asdict(self)


def snapshot_date(name: str) -> str | None:
    """UTC date (YYYY-MM-DD) of a snapshot directory name, or None if it is not one."""
    m = SNAPSHOT_RE.match(name)
    if not m:
        return None
    d = m.group(1)
    try:
        dt.date(int(d[:4]), int(d[4:6]), int(d[6:8]))
    except ValueError:
        return None
    return f"{d[:4]}-{d[4:6]}-{d[6:8]}"


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
        raw = file_metadata(path).get("snapshots")
    except (OSError, pa.ArrowInvalid):
        return frozenset()
    return frozenset(json.loads(raw)) if raw else frozenset()


def quarantine_file(path: Path, quarantine: Path, relative: Path, reason: str) -> Path:
    """Move `path` to quarantine/relative and write the reason beside it (atomically)."""
    dest = quarantine / relative
    atomic.make_dirs(dest.parent)
    shutil.move(str(path), dest)
    sidecar = dest.with_name(dest.name + ".reason")
    atomic.write_text(sidecar, reason.rstrip("\n") + "\n")
    return dest


def _read_valid(path: Path, table: str) -> pa.Table:
    """Validate and read a spool file; any failure is a TracebaseError with the reason."""
    validate_file(path, table)
    try:  # ParquetFile.read is ~2.5x cheaper than read_table (no dataset machinery) on small files
        return pq.ParquetFile(path).read(columns=TABLES[table].names)
    except (pa.ArrowInvalid, OSError) as exc:
        raise TracebaseError(f"{path}: unreadable data ({exc})") from None


def ingest_spool(
    spool: str | os.PathLike,
    dataset: str | os.PathLike,
    quarantine: str | os.PathLike,
    *,
    remove_ingested: bool = True,
    workers: int = 1,
) -> IngestResult:
    """Ingest every complete snapshot under `spool` into `dataset` (see module docstring).

    workers > 1 ingests hosts in parallel processes (each host writes only its own partitions).
    """
    spool, dataset, quarantine = Path(spool), Path(dataset), Path(quarantine)
    if not spool.is_dir():
        raise TracebaseError(f"{spool}: spool directory does not exist")
    result = IngestResult(rows={t: 0 for t in SPOOL_TABLES})
    hosts = sorted(p for p in spool.iterdir() if p.is_dir() and not p.name.startswith("."))
    jobs = [(h, dataset, quarantine, remove_ingested) for h in hosts]
    if workers > 1 and len(hosts) > 1:
        # Hosts are independent (each owns its host= partitions), so they parallelise cleanly.
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers) as pool:
            parts = pool.map(_ingest_host_job, jobs, chunksize=max(1, len(jobs) // (workers * 4)))
    else:
        parts = map(_ingest_host_job, jobs)
    for part in parts:
        result.snapshots += part.snapshots
        result.already_ingested += part.already_ingested
        for table, n in part.rows.items():
            result.rows[table] += n
        result.files_written += part.files_written
        result.quarantined += part.quarantined
    return result


def _ingest_host_job(job: tuple[Path, Path, Path, bool]) -> IngestResult:
    host_dir, dataset, quarantine, remove = job
    result = IngestResult(rows={t: 0 for t in SPOOL_TABLES})
    _ingest_host(host_dir, dataset, quarantine, result, remove)
    return result


def _ingest_host(host_dir: Path, dataset: Path, quarantine: Path, result: IngestResult, remove: bool) -> None:
    host = host_dir.name
    # (table, date) -> [(snapshot id, rows)]
    batches: dict[tuple[str, str], list[tuple[str, pa.Table]]] = defaultdict(list)
    finished: list[Path] = []  # snapshot dirs fully handled (ingested or quarantined)
    for snap in sorted(host_dir.iterdir()):
        if snap.name.startswith("."):  # .snap-*.tmp: the tracer is still writing it
            continue
        date = snapshot_date(snap.name) if snap.is_dir() else None
        if date is None:
            reason = f"{snap}: expected a snapshot directory named snap-YYYYmmddTHHMMSS.fffZ-SEQ, found '{snap.name}'"
            dest = quarantine_file(snap, quarantine, Path(host) / snap.name, reason)
            result.quarantined.append({"path": str(dest), "reason": reason})
            continue
        snap_id = f"{host}/{snap.name}"
        for table in SPOOL_TABLES:
            path = snap / f"{table}.parquet"
            if not path.exists():
                continue
            try:
                batches[(table, date)].append((snap_id, _read_valid(path, table)))
            except TracebaseError as exc:
                dest = quarantine_file(path, quarantine, Path(host) / snap.name / path.name, str(exc))
                result.quarantined.append({"path": str(dest), "reason": str(exc)})
        for other in snap.iterdir():  # anything else in a snapshot is not ours to ingest
            if other.is_file() and other.name not in {f"{t}.parquet" for t in SPOOL_TABLES}:
                reason = f"{other}: unexpected file in a snapshot (expected events.parquet, counters.parquet)"
                dest = quarantine_file(other, quarantine, Path(host) / snap.name / other.name, reason)
                result.quarantined.append({"path": str(dest), "reason": reason})
        finished.append(snap)

    seen_ids: set[str] = set()
    new_ids: set[str] = set()
    for (table, date), items in sorted(batches.items()):
        target_dir = partition_path(dataset, table, date, host, "x").parent
        present = frozenset().union(*(file_snapshots(p) for p in _part_files(target_dir)))
        fresh = [(sid, rows) for sid, rows in items if sid not in present]
        seen_ids.update(sid for sid, _ in items if sid in present)
        if not fresh:
            continue
        ids = sorted(sid for sid, _ in fresh)
        merged = conform(pa.concat_tables([rows for _, rows in fresh], promote_options="permissive"), table)
        if "host" in merged.column_names:  # the spool directory names the host
            merged = merged.set_column(
                merged.schema.get_field_index("host"), "host", pa.array([host] * merged.num_rows, pa.string())
            )
        out = write_table(
            merged, target_dir / part_name(ids), table, extra_metadata={"snapshots": json.dumps(ids)}
        )
        result.rows[table] += merged.num_rows
        result.files_written.append(str(out))
        new_ids.update(ids)
    result.snapshots += len(new_ids)
    result.already_ingested += len(seen_ids - new_ids)
    if remove:
        for snap in finished:
            shutil.rmtree(snap, ignore_errors=True)


def _partitions(dataset: Path, tables: Iterable[str]) -> list[Path]:
    out = []
    for table in tables:
        out.extend(sorted(p for p in (dataset / table).glob("date=*/host=*") if p.is_dir()))
    return out


def compact_dataset(
    dataset: str | os.PathLike,
    *,
    min_files: int = 8,
    small_file_bytes: int = 16 << 20,
    tables: Iterable[str] = ("events", "counters"),
) -> CompactResult:
    """Merge partitions holding >= `min_files` small part files into one file each."""
    dataset = Path(dataset)
    result = CompactResult()
    for part_dir in _partitions(dataset, tables):
        table = part_dir.parent.parent.name
        files = _part_files(part_dir)
        snaps = {f: file_snapshots(f) for f in files}
        # Recovery: a file whose snapshots are all inside another file is a leftover input of an
        # interrupted compaction; keeping it would double-count rows.
        for f in list(files):
            if snaps[f] and any(g != f and snaps[f] < snaps[g] for g in files):
                f.unlink()
                files.remove(f)
                result.leftovers_removed += 1
        small = [f for f in files if f.stat().st_size < small_file_bytes]
        if len(small) < min_files:
            continue
        ids = sorted(frozenset().union(*(snaps[f] for f in small)))
        merged = pa.concat_tables([conform(pq.read_table(f), table) for f in small])
        if table in SORT_KEYS:
            merged = merged.sort_by(SORT_KEYS[table])
        name = part_name(ids or [f.name for f in small], prefix="part-c")
        extra = {"snapshots": json.dumps(ids)} if ids else None
        out = write_table(merged, part_dir / name, table, extra_metadata=extra)
        for f in small:
            if f != out:
                f.unlink()
        result.partitions += 1
        result.files_in += len(small)
        result.files_out += 1
    return result


def apply_retention(
    dataset: str | os.PathLike,
    quarantine: str | os.PathLike,
    *,
    dataset_days: int,
    quarantine_days: int,
    today: dt.date | None = None,
) -> dict[str, int]:
    """Delete dataset date partitions and quarantined files older than the retention."""
    today = today or dt.datetime.now(dt.UTC).date()
    cutoff = (today - dt.timedelta(days=dataset_days)).isoformat()
    removed = {"partitions": 0, "quarantined": 0}
    dataset = Path(dataset)
    if dataset.is_dir():
        for date_dir in dataset.glob("*/date=*"):
            if date_dir.name.removeprefix("date=") < cutoff:
                shutil.rmtree(date_dir, ignore_errors=True)
                removed["partitions"] += 1
    q_cutoff = dt.datetime.combine(today - dt.timedelta(days=quarantine_days), dt.time(), dt.UTC).timestamp()
    quarantine = Path(quarantine)
    if quarantine.is_dir():
        for f in quarantine.rglob("*"):
            if f.is_file() and f.stat().st_mtime < q_cutoff:
                f.unlink()
                removed["quarantined"] += 1
    return removed

"""Writing the 15-minute summaries of a dataset's counters files again (`baseline summarize`).

Ingest and compaction write a counters file's summary (tracer.schema.COUNTER_BUCKETS) when they
write the file. A summary that does not match its counters file as it is now -- written by an
older tracebase under another bucket rule, or by nothing (a dataset another writer filled) -- is
not used: the audit reads that host's counters files instead, the same tables several times
slower on a fleet-day (21.6M snapshot rows instead of ~5M cells). Nothing else rewrites the
summaries of days no snapshot arrives for any more; this does, under the dataset's writer lock.
Idempotent: a current summary is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tracer.atomic import dataset_lock
from tracer.errors import TracebaseError, shown
from tracer.inputs import file_kind, what_is_at
from tracer.pools import process_pool, results_in_order
from tracer.schema import (
    check_counts,
    counter_buckets_for,
    counter_buckets_path,
    write_counter_buckets,
)


@dataclass
class SummariesResult:
    files: int = 0  # counters part files looked at
    current: int = 0  # whose summary was usable already (left as it was)
    written: int = 0  # summaries this run wrote
    # counters files left without a usable summary, with the reason ({"path", "reason"}): the
    # audit reads them whole, and names them when they cannot be read
    left: list[dict[str, str]] = field(default_factory=list)
    orphans_removed: int = 0  # summaries whose counters file is not there any more

    def to_dict(self) -> dict:
        return asdict(self)


def summarize_dataset(dataset: str | os.PathLike, *, dates: Iterable[str] | None = None, workers: int = 1,
                      lock_timeout_s: float = 600.0) -> SummariesResult:
    """Write the summary of every counters part file of `dataset` (of `dates` only, when given:
    YYYY-MM-DD) whose summary is missing or not usable (tracer.schema.counter_buckets_for), and
    remove summaries whose counters file is gone. A file whose counts no interval can hold
    (tracer.schema.check_counts) or that cannot be read gets none: it is listed in `left` with
    the reason, and stays where it is (the audit then names it). An OS error writing a summary
    (a full disk, a read-only dataset) stops the run naming the file; what was written stays
    (each summary is written whole or not at all). `workers` > 1: partitions in that many
    processes."""
    from tracer.schema import dataset_files

    root = Path(dataset)
    if not root.is_dir():
        raise TracebaseError(f"{shown(root)}: expected a dataset directory, found {what_is_at(root)}")
    wanted = None if dates is None else {f"date={d}" for d in dates}
    result = SummariesResult()
    with dataset_lock(root, exclusive=True, timeout_s=lock_timeout_s):
        # the files the audit reads (the same listing: a host partition symlinked in from another
        # volume is read, so it is summarised), by partition, those of the layout only
        by_partition: dict[Path, list[Path]] = {}
        for f in dataset_files(root, "counters"):
            if counter_buckets_path(f) is not None and (wanted is None or f.parent.parent.name in wanted):
                by_partition.setdefault(f.parent, []).append(f)
        partitions = list(by_partition.items())
        if workers > 1 and len(partitions) > 1:
            with process_pool(min(workers, len(partitions)), "fork", f"{shown(root)}: summarize -j") as pool:
                size = max(1, len(partitions) // (workers * 4))  # a few tasks per worker
                chunks = [partitions[i:i + size] for i in range(0, len(partitions), size)]
                parts = [r for chunk in results_in_order(pool, _summarize_partitions, chunks) for r in chunk]
        else:
            parts = [_summarize_partition(p) for p in partitions]
        for part in parts:
            result.files += part.files
            result.current += part.current
            result.written += part.written
            result.left += part.left
            result.orphans_removed += part.orphans_removed
        # summaries of hosts or dates no counters file is left for (retention, another tool):
        # their partitions were not walked above
        result.orphans_removed += _remove_partitionless_summaries(root, wanted, set(by_partition))
    return result


def _remove_partitionless_summaries(root: Path, wanted: set[str] | None, walked: set[Path]) -> int:
    """Remove the summaries under counter_buckets/date=D/host=H whose counters file is not there,
    in partitions the walk did not visit (a host or date with no counters file left), of the
    `wanted` dates only (ingest's `_remove_orphan_summaries`, one rule). The number removed."""
    from baseline.pipeline.ingest import _remove_orphan_summaries

    top = root / "counter_buckets"
    if not top.is_dir() or top.is_symlink():
        return 0
    removed = 0
    for summaries in sorted(top.glob("date=*/host=*")):
        counters = root / "counters" / summaries.parent.name / summaries.name
        if (wanted is None or summaries.parent.name in wanted) and counters not in walked:
            removed += _remove_orphan_summaries(counters)
    return removed


def _summarize_partitions(partitions: list[tuple[Path, list[Path]]]) -> list[SummariesResult]:
    return [_summarize_partition(p) for p in partitions]


def _summarize_partition(partition: tuple[Path, list[Path]]) -> SummariesResult:
    from baseline.pipeline.ingest import _DATA_ERRORS, _read_part, _remove_orphan_summaries

    part_dir, files = partition
    result = SummariesResult()
    for counters_file in files:
        result.files += 1
        if counter_buckets_for(counters_file) is not None:
            result.current += 1
            continue
        occupied = _not_a_file_in_place(counter_buckets_path(counters_file))
        if occupied:  # (another writer's: named, left as it is, the rest go on)
            result.left.append({"path": str(counters_file), "reason": occupied})
            continue
        try:
            rows = _read_part(counters_file, "counters")
            # a summary vouches for its counts: none for counts no interval can hold (ingest
            # quarantines such a snapshot; a file another writer put here is named, not moved)
            check_counts(rows, "counters", shown(counters_file))
            written = write_counter_buckets(counters_file, rows)
        except OSError as exc:
            raise TracebaseError(f"{shown(counter_buckets_path(counters_file) or counters_file)}: cannot write the "
                                 f"summary ({exc.strerror or exc}); the summaries written so far stay") from None
        except (TracebaseError, *_DATA_ERRORS) as exc:
            result.left.append({"path": str(counters_file), "reason": str(exc)})
            continue
        if written is None:
            result.left.append({"path": str(counters_file),
                                "reason": "stores a host column that is not its directory's host throughout"})
        else:
            result.written += 1
    result.orphans_removed = _remove_orphan_summaries(part_dir)
    return result


def _not_a_file_in_place(summary: Path | None) -> str | None:
    """Why a summary cannot be written at `summary` (a directory, a FIFO, ... there), or None."""
    import stat

    try:
        mode = os.lstat(summary).st_mode if summary is not None else None
    except OSError:
        return None
    if mode is None or stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return None
    return f"{shown(summary)}: expected its summary or nothing there, found {file_kind(mode)}"

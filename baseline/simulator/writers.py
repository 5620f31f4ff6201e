"""Write one host's tables: the dataset layout (default) or the tracer's spool layout."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from baseline.simulator.host import INTERVAL_NS, HostResult
from baseline.simulator.tables import Batch
from tracer.atomic import fsync_dir, make_dirs
from tracer.fleet.spool import write_snapshot
from tracer.schema import write_counter_buckets, write_partition

_DATE_COLUMN = {"events": "start_time", "counters": "snapshot_time", "truth": "time"}


def _by_date(df: pl.DataFrame, column: str) -> list[tuple[str, pl.DataFrame]]:
    if df.height == 0:
        return []
    dated = df.with_columns(_date=pl.col(column).dt.strftime("%Y-%m-%d"))
    return [(str(key[0]), part.drop("_date")) for key, part in dated.group_by("_date", maintain_order=True)]


def write_dataset(root: Path, result: HostResult, tables: tuple[str, ...] = ("events", "counters", "truth")) -> dict[str, int]:
    """Write each table of one host under <root>/<table>/date=YYYY-MM-DD/host=<host>/part-00000.parquet
    (the dataset layout of tracer.schema: the `host` column lives in the directory name), and
    beside each counters file its counter_buckets summary."""
    sizes: dict[str, int] = {}
    for table in tables:
        df = getattr(result, table)
        for date, part in _by_date(df, _DATE_COLUMN[table]):
            path = write_partition(part, root, table, date, result.host, "part-00000.parquet",
                                   extra_metadata=PRODUCER, durable=False, parquet_options=PARQUET_OPTIONS[table])
            sizes[table] = sizes.get(table, 0) + path.stat().st_size
            if table == "counters":  # its 15-minute summary, as ingest writes it
                write_counter_buckets(path, part, durable=False)
    return sizes


# Simulated data is regenerable: no fsync (the rename stays atomic). Events: dictionaries only for
# the string columns (the high-entropy integers compress better plain), delta-coded clocks.
# Column statistics only on the time columns (what --since / time-window scans prune on) and the
# trace ids (as the daemon and ingest write them: the audit reads from their min and max that every
# id of a file names its host, model._ids_name_their_host); other string
# and nested statistics cost more than the data itself in files of a few thousand rows.
_EVENT_STRINGS = ["trace_id", "comm", "probe", "layer", "errno", "path", "arg", "kind", "command", "host",
                  "kernel_release", "job_id", "metadata"]
PARQUET_OPTIONS: dict[str, dict] = {
    "events": {"use_dictionary": _EVENT_STRINGS, "write_statistics": ["start_time", "end_time", "trace_id"],
               "column_encoding": {"ts_ns": "DELTA_BINARY_PACKED", "latency_ns": "DELTA_BINARY_PACKED"}},
    "counters": {"write_statistics": ["snapshot_time"]},
    "truth": {"write_statistics": False},
}
PRODUCER = {"producer": "baseline.simulate"}


def _date(day: int) -> str:
    return datetime.fromtimestamp(int(day) * 86400, tz=UTC).strftime("%Y-%m-%d")


def write_batch(root: Path, batch: Batch, tables: tuple[str, ...] = ("events", "counters", "truth")) -> list[dict[str, int]]:
    """Write every host of a batch: <root>/<table>/date=YYYY-MM-DD/host=<host>/part-00000.parquet.

    Each host's rows are a contiguous, zero-copy slice of the batch table; a host whose rows span
    several UTC days gets one file per day. Returns bytes written per table, per host.
    """
    sizes: list[dict[str, int]] = [{} for _ in batch.hosts]
    for table in tables:
        data: pa.Table = getattr(batch, table)
        offsets, day = batch.rows[table], batch.day[table]
        for b, host in enumerate(batch.hosts):
            lo, hi = int(offsets[b]), int(offsets[b + 1])
            if hi == lo:
                continue
            host_day = day[lo:hi]
            runs: list[tuple[int, np.ndarray | None]]  # (day, rows to take; None = all, in place)
            if (host_day == host_day[0]).all():
                runs = [(int(host_day[0]), None)]
            else:  # rows keep their order within a day (truth: unobserved rows come last)
                runs = [(int(d), lo + np.flatnonzero(host_day == d)) for d in np.unique(host_day)]
            for d, idx in runs:
                part = data.slice(lo, hi - lo) if idx is None else data.take(pa.array(idx))
                path = write_partition(part, root, table, _date(d), host, "part-00000.parquet",
                                       extra_metadata=PRODUCER, durable=False, parquet_options=PARQUET_OPTIONS[table])
                sizes[b][table] = sizes[b].get(table, 0) + path.stat().st_size
                if table == "counters":  # its 15-minute summary, as ingest writes it
                    write_counter_buckets(path, part, durable=False)
    return sizes


def write_spool(root: Path, result: HostResult, start_ns: int) -> dict[str, int]:
    """One directory per non-idle 5 s snapshot, written as .snap-*.tmp and renamed into place.

    A trace belongs to the snapshot during which it ended (when the collector drained it).
    Idle intervals (no invocation of any probe) are not written.
    """
    host_dir = root / "spool" / result.host
    make_dirs(host_dir)
    ev = result.events.with_columns(
        _iv=((pl.col("end_time").dt.epoch("ns") - start_ns) // INTERVAL_NS)
    )
    co = result.counters.with_columns(
        _iv=((pl.col("snapshot_time").dt.epoch("ns") - start_ns) // INTERVAL_NS - 1)
    )
    intervals = np.union1d(ev["_iv"].unique().to_numpy(), co["_iv"].unique().to_numpy())
    ev_parts = {k[0]: g.drop("_iv") for k, g in ev.group_by("_iv")}
    co_parts = {k[0]: g.drop("_iv") for k, g in co.group_by("_iv")}
    empty_ev, empty_co = result.events.clear(), result.counters.clear()
    sizes = {"events": 0, "counters": 0}
    for seq, iv in enumerate(intervals.tolist()):
        snap = write_snapshot(root / "spool", result.host, ev_parts.get(iv, empty_ev), co_parts.get(iv, empty_co),
                              start_ns + (iv + 1) * INTERVAL_NS, seq, durable=False,
                              extra_metadata=PRODUCER, parquet_options=PARQUET_OPTIONS)
        for table in sizes:
            sizes[table] += (snap / f"{table}.parquet").stat().st_size
    fsync_dir(host_dir)
    sizes.update(write_dataset(root, result, tables=("truth",)))
    return sizes

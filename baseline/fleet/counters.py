"""Counters reduced for the audit and the expected-error learner: time buckets per host and probe.

Kept apart from baseline.fleet.audit so that baseline.fleet.expected can read them without an
import cycle (audit uses expected).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from pathlib import Path

import polars as pl

from tracer.schema import scan


def bucket_counters(
    counters: pl.LazyFrame | Iterable[pl.LazyFrame], bucket: str = "15m"
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The counters reduced to time buckets in streaming passes: (calls, errors).

    calls: host, probe, bucket, n (invocations), layer; errors: host, probe, errno, bucket, count.
    Everything host_alerts computes is per bucket, so the snapshot rows (tens of millions on a
    fleet-day) are never materialised. Several lazy frames (e.g. `counter_scans`: files batched
    by host, so no (host, probe, bucket) spans two) are reduced one after the other, which
    bounds the memory of the streaming aggregation by the batch."""
    t = pl.col("snapshot_time").dt.truncate(bucket).alias("bucket")
    parts = [counters] if isinstance(counters, pl.LazyFrame) else list(counters)
    calls: list[pl.DataFrame] = []
    errors: list[pl.DataFrame] = []
    cat = pl.Categorical
    for lf in parts:
        names = set(lf.collect_schema().names())
        # millions of rows, few distinct names: the text columns become categoricals as they are
        # read (a cheap per-row lookup), so the group-bys hash integer codes, first/last move
        # codes, and the reduced tables come out categorical (2-3x cheaper than on text keys)
        lf = lf.with_columns(pl.col(c).cast(cat) for c in ("host", "probe", "layer", "vendor", "kernel_release")
                             if c in names)
        optional = [  # the counters table has them; hand-made frames may not
            (pl.col("vendor").drop_nulls().first() if "vendor" in names else pl.lit(None, pl.String).alias("vendor")),
            (pl.col("kernel_release").drop_nulls().last() if "kernel_release" in names
             else pl.lit(None, pl.String).alias("kernel_release")),
        ]
        c = lf.group_by("host", "probe", t).agg(pl.col("invocations").sum().alias("n"), pl.col("layer").first(),
                                                *optional)
        e = (
            lf.filter(pl.col("errno_counts").list.len() > 0)
            .select("host", "probe", t, "errno_counts")
            .explode("errno_counts")
            .unnest("errno_counts")
            .filter(pl.col("errno").is_not_null() & (pl.col("count") > 0))
            .with_columns(pl.col("errno").cast(cat))
            .group_by("host", "probe", "errno", "bucket")
            .agg(pl.col("count").sum())
        )
        c, e = pl.collect_all([c, e], engine="streaming")
        # millions of (host, probe, bucket) cells, few distinct names: categoricals
        calls.append(c.with_columns(pl.col("host", "probe", "layer", "vendor", "kernel_release").cast(pl.Categorical)))
        errors.append(e.with_columns(pl.col("host", "probe", "errno").cast(pl.Categorical)))
    if not calls:
        return pl.DataFrame(schema={"host": pl.String, "probe": pl.String, "bucket": pl.Datetime("ns", "UTC"),
                                    "n": pl.Int64, "layer": pl.String, "vendor": pl.String,
                                    "kernel_release": pl.String}), pl.DataFrame()
    return pl.concat(calls, how="vertical_relaxed"), pl.concat(errors, how="vertical_relaxed")


def counter_scans(files: list[Path], since: dt.datetime | None = None, batch_files: int = 2000) -> Iterator[pl.LazyFrame]:
    """Validated lazy scans of counters files in batches of about `batch_files`, whole hosts per
    batch (the dataset partitions by host=...), filtered to snapshots at or after `since`."""
    by_host: dict[str, list[Path]] = {}
    for f in files:
        host = next((part[5:] for part in f.parts if part.startswith("host=")), str(f.parent))
        by_host.setdefault(host, []).append(f)
    batch: list[Path] = []
    for host in sorted(by_host):
        batch.extend(by_host[host])
        if len(batch) >= batch_files:
            yield _counter_scan(batch, since)
            batch = []
    if batch:
        yield _counter_scan(batch, since)


def _counter_scan(files: list[Path], since: dt.datetime | None) -> pl.LazyFrame:
    lf = scan(files, "counters")
    if since is not None:
        lf = lf.filter(pl.col("snapshot_time") >= pl.lit(since).dt.cast_time_unit("ns"))
    return lf



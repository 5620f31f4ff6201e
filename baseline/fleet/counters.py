"""Counters reduced for the audit and the expected-error learner: time buckets per host and probe.

Kept apart from baseline.fleet.audit so that baseline.fleet.expected can read them without an
import cycle (audit uses expected).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from pathlib import Path

import polars as pl

from tracer.errors import SchemaError, TracebaseError
from tracer.schema import (
    BUCKET_NS,
    BUCKET_WIDTH,
    COUNT_LIMIT,
    SNAPSHOT_KEY,
    bucket_cell_aggs,
    check_counts,
    counted_delta,
    counter_buckets_for,
    counter_buckets_path,
    data_read_failure,
    partition_values,
    read_arrow,
    scan,
    scan_parquet_files,
    snapshot_bucket,
)
from tracer.units import epoch_ns


def bucket_counters(
    counters: pl.LazyFrame | Iterable[pl.LazyFrame], bucket: str = "15m"
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The counters reduced to time buckets in streaming passes: (calls, errors).

    calls: host, probe, bucket, n (invocations), layer; errors: host, probe, errno, bucket, count.
    Everything host_alerts computes is per bucket, so the snapshot rows (tens of millions on a
    fleet-day) are never materialised. Several lazy frames (e.g. `counter_scans`: files batched
    by host, so no (host, probe, bucket) spans two) are reduced one after the other, which
    bounds the memory of the streaming aggregation by the batch."""
    t = snapshot_bucket(bucket)
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
        # the counters table has them; hand-made frames may not
        lf = lf.with_columns(pl.lit(None, pl.String).alias(c) for c in ("vendor", "kernel_release") if c not in names)
        c = lf.group_by("host", "probe", t).agg(bucket_cell_aggs())
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
        # a snapshot delivered twice (SNAPSHOT_KEY) counts once: the repeated snapshots are found
        # per (host, snapshot) -- a group-by with one group per snapshot, not per row: ~+50 % of
        # the bucketing's CPU where a row-level unique costs 3-4x -- and, when there are any, the
        # extra copies' counts are subtracted from their cells
        d = (lf.group_by("host", "snapshot_time").agg(pl.len().alias("_rows"), pl.col("probe").n_unique().alias("_probes"))
             .filter(pl.col("_rows") > pl.col("_probes")).select("host", "snapshot_time"))
        # a row counting more failures than calls (no snapshot of ours holds one: ingest
        # quarantines it, tracer.schema.check_counts) gave its cell a failure rate over 1
        v = impossible_counts(lf)
        c, e, d, v = pl.collect_all([c, e, d, v], engine="streaming")
        if v.height:
            raise ImpossibleCounts(*v.row(0))
        if d.height:
            c, e = _without_repeats(lf, d, c, e, t)
        # millions of (host, probe, bucket) cells, few distinct names: categoricals
        calls.append(c.with_columns(pl.col("host", "probe", "layer", "vendor", "kernel_release").cast(pl.Categorical)))
        errors.append(e.with_columns(pl.col("host", "probe", "errno").cast(pl.Categorical)))
    if not calls:
        return pl.DataFrame(schema={"host": pl.String, "probe": pl.String, "bucket": pl.Datetime("ns", "UTC"),
                                    "n": pl.Int64, "layer": pl.String, "vendor": pl.String,
                                    "kernel_release": pl.String}), pl.DataFrame()
    return pl.concat(calls, how="vertical_relaxed"), pl.concat(errors, how="vertical_relaxed")


CELL_ATTRIBUTES = ("layer", "vendor", "kernel_release")


def split_cell_attributes(calls: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """bucket_counters' calls table as (calls without CELL_ATTRIBUTES, attributes): the
    attributes are one row per distinct (host, probe, layer, vendor, kernel_release), in the
    order first seen, with its first and last bucket. On a fleet-day the calls are ~5M cells and these
    ~150k combinations, so the three categorical columns (12 bytes a cell, ~55 MiB) are not held
    beside the per-trace table; what is read of them -- a probe's first layer, a host's vendor,
    when a host first ran a release -- reads the same off the attributes (first seen = first in
    the calls' order). Pass the three as the counters (calls, errors, attributes): every reader
    of bucketed counters takes either form (`cell_attributes`)."""
    attrs = (calls.lazy().group_by("host", "probe", *CELL_ATTRIBUTES, maintain_order=True)
             .agg(pl.col("bucket").min(), pl.col("bucket").max().alias("last_bucket")).collect())
    return calls.drop(CELL_ATTRIBUTES, strict=False), attrs


def cell_attributes(counters: pl.DataFrame | tuple) -> pl.DataFrame:
    """The table holding the counters' layer, vendor and kernel_release: the attributes of a
    (calls, errors, attributes) triple (split_cell_attributes), else the calls table itself."""
    if isinstance(counters, tuple):
        return counters[2] if len(counters) > 2 else counters[0]
    return counters


def _without_repeats(lf: pl.LazyFrame, repeated: pl.DataFrame, calls: pl.DataFrame, errors: pl.DataFrame,
                     bucket: pl.Expr) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(calls, errors) of `lf` less the rows repeating a SNAPSHOT_KEY read before them (file
    order): only the rows of the `repeated` (host, snapshot_time)s are read again."""
    rows = (lf.with_row_index("_i").join(repeated.lazy(), on=["host", "snapshot_time"], how="semi")
            .select("_i", *SNAPSHOT_KEY, bucket, "invocations", "errno_counts").collect().sort("_i"))
    extra = rows.filter(~pl.struct(*SNAPSHOT_KEY).is_first_distinct())
    cell = ["host", "probe", "bucket"]
    # (as bucket_cell_aggs counted them: a negative delta is a counter reset)
    n = extra.group_by(cell).agg(counted_delta("invocations").sum().alias("_extra"))
    calls = (calls.join(n, on=cell, how="left", maintain_order="left")
             .with_columns(pl.col("n") - pl.col("_extra").fill_null(0)).drop("_extra"))
    f = (extra.filter(pl.col("errno_counts").list.len() > 0).select(*cell, "errno_counts")
         .explode("errno_counts").unnest("errno_counts")
         .filter(pl.col("errno").is_not_null() & (pl.col("count") > 0))
         .with_columns(pl.col("errno").cast(pl.Categorical))
         .group_by(*cell, "errno").agg(pl.col("count").sum().alias("_extra")))
    key = ["host", "probe", "errno", "bucket"]
    errors = (errors.join(f, on=key, how="left", maintain_order="left")
              .with_columns(pl.col("count") - pl.col("_extra").fill_null(0)).drop("_extra")
              .filter(pl.col("count") > 0))
    return calls, errors


def counter_scans(files: list[Path], since: dt.datetime | None = None, batch_files: int = 2000) -> Iterator[pl.LazyFrame]:
    """Validated lazy scans of counters files in batches of about `batch_files`, whole hosts per
    batch (the dataset partitions by host=...), filtered to snapshots after `since` (their
    intervals end after it: tracer.schema.BUCKET_OF)."""
    for batch in _host_batches(files, batch_files):
        yield _counter_scan(batch, since)


def _host_batches(files: list[Path], batch_files: int = 2000) -> Iterator[list[Path]]:
    """`files` in batches of about `batch_files`, whole hosts per batch, hosts in sorted order."""
    by_host = _files_by_host(files)
    batch: list[Path] = []
    for host in sorted(by_host):
        batch.extend(by_host[host])
        if len(batch) >= batch_files:
            yield batch
            batch = []
    if batch:
        yield batch


def _counter_scan(files: list[Path], since: dt.datetime | None) -> pl.LazyFrame:
    lf = scan(files, "counters")
    if since is not None:  # the calls after `since`: a snapshot at `since` counts those before
        lf = lf.filter(pl.col("snapshot_time") > pl.lit(since).dt.cast_time_unit("ns"))
    return lf


def counter_sources(files: list[Path], since: dt.datetime | None = None,
                    stale: list[Path] | None = None) -> tuple[list[Path], list[Path], list[Path]]:
    """Split a dataset's counters files per host: (raw files, summaries of single-file hosts,
    summaries of hosts with several files). A host's counters come from its counter_buckets
    summaries (tracer.schema.COUNTER_BUCKETS) when every one of its files has one that matches
    it (`counter_buckets_for`) and `since` cuts no bucket of it (on a bucket boundary, or before
    the file's first bucket); else from its counters files, all of them (the same rows either
    way: reading per host keeps each (host, probe, bucket) cell from one source). `stale`, when
    given, gets the first counters file of each host read whole because its summary is there
    but not usable (an older tracebase's rule: `baseline summarize` writes it again)."""
    by_host = _files_by_host(files)
    since_ns = None if since is None else epoch_ns(since)
    aligned = since_ns is None or since_ns % BUCKET_NS == 0
    raw: list[Path] = []
    single: list[Path] = []
    multi: list[Path] = []
    for host in sorted(by_host):
        summaries = []
        spans = []
        for f in by_host[host]:
            found = counter_buckets_for(f)
            if found is None and stale is not None:
                summary = counter_buckets_path(f)
                if summary is not None and summary.is_file():
                    stale.append(f)
            first = found[1].get("first_bucket_ns") if found else None
            if found is None or not (aligned or first is None or (isinstance(first, int) and since_ns <= first)):
                summaries = None
                break
            summaries.append(found[0])
            spans.append(found[1].get("snapshots_ns"))
        if summaries is not None and len(summaries) > 1 and not _disjoint(spans):
            # a snapshot may be in two of the files (re-sent, or not yet compacted): a summary
            # counts it once within its file only, so the host's rows are read and deduplicated
            summaries = None
        if summaries is None:
            raw.extend(by_host[host])
        else:
            (single if len(summaries) == 1 else multi).extend(summaries)
    return raw, single, multi


def impossible_counts(lf: pl.LazyFrame) -> pl.LazyFrame:
    """The first counters row (host, snapshot_time, probe, invocations, failures) no interval
    can hold: more failures than calls, or a count over tracer.schema.COUNT_LIMIT."""
    calls, fails = pl.col("invocations"), pl.col("failures")
    return (lf.filter(((fails > calls) & (calls >= 0)) | (calls > COUNT_LIMIT) | (fails > COUNT_LIMIT))
            .select("host", "snapshot_time", "probe", "invocations", "failures").head(1))


class ImpossibleCounts(TracebaseError):
    """A counters row no interval can hold (impossible_counts: host, snapshot, probe, counts);
    named_file names its file."""

    def __init__(self, host: str, when: dt.datetime, probe: str, invocations: int, failures: int):
        self.host, self.when, self.probe = str(host), when, str(probe)
        super().__init__(f"counters of host {self.host} at {when:%Y-%m-%d %H:%M:%S} UTC: expected counts one interval "
                         f"can hold (failures at most the invocations, each at most {COUNT_LIMIT:,}), found "
                         f"{failures} failures of {invocations} invocations (probe {self.probe})")


def named_file(err: ImpossibleCounts, files: list[Path]) -> TracebaseError:
    """`err` with the counters file that holds its row (tracer.schema.check_counts' message)."""
    for f in files:
        if partition_values(f).get("host", err.host) != err.host:
            continue
        try:
            check_counts(read_arrow(f, "counters"), "counters", str(f))
        except SchemaError as named:
            return named
    return err


def counter_buckets(files: list[Path], since: dt.datetime | None = None,
                    sources: tuple[list[Path], list[Path], list[Path]] | None = None,
                    raw_scans: list[pl.LazyFrame] | None = None,
                    batch_files: int = 2000) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`bucket_counters` of a dataset's counters files, from their summaries where usable
    (`counter_sources`, or the split given in `sources`; `raw_scans`: counter_scans of its raw
    files, already made): the same (calls, errors) tables; a fleet-day reads ~5M bucket cells
    instead of ~22M snapshot rows. `batch_files`: summaries of hosts with several, merged about
    that many at a time (whole hosts)."""
    raw, single, multi = sources if sources is not None else counter_sources(files, since)
    calls: list[pl.DataFrame] = []
    errors: list[pl.DataFrame] = []
    if raw:
        c, e = _raw_buckets(raw, since, raw_scans)
        calls.append(c)
        errors.append(e)
    # Hosts with several summaries are merged in memory (file order decides "first" and "last"),
    # so a batch of whole hosts at a time: between compactions every host of the pipeline's
    # dataset has several (ingest writes a part file a run; compaction merges at 8), and the
    # whole day at once peaked at 1.57 GiB for 10,000 hosts x 4 parts, where one batch of
    # 2,000 files holds a fifth of a day's cells.
    batches = [(single, False)] if single else []
    batches += [(batch, True) for batch in _host_batches(multi, batch_files)]
    for summaries, merge in batches:
        try:
            c, e = _read_summaries(summaries, since, merge)
        except (pl.exceptions.PolarsError, OSError):
            # a summary whose pages do not decode (its footer validated: a torn copy, a bit
            # flip) is a cache gone bad: its hosts are read from their counters files instead
            broken = {partition_values(s).get("host") for s in summaries if data_read_failure(s) is not None}
            if not broken:
                raise
            kept = [s for s in summaries if partition_values(s).get("host") not in broken]
            by_host = _files_by_host(files)
            raw_files = [f for h in sorted(broken, key=str) for f in by_host.get(h, [])]
            parts = [_raw_buckets(raw_files, since)]
            if kept:
                parts.append(_read_summaries(kept, since, merge))
            c = pl.concat([p[0] for p in parts], how="vertical_relaxed")
            e = pl.concat([p[1] for p in parts], how="vertical_relaxed")
        calls.append(c)
        errors.append(e)
    if len(calls) == 1:
        return calls[0], errors[0]
    return pl.concat(calls, how="vertical_relaxed"), pl.concat(errors, how="vertical_relaxed")


def _raw_buckets(files: list[Path], since: dt.datetime | None,
                 scans: list[pl.LazyFrame] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """bucket_counters of counters files read raw (`scans`: their counter_scans, already made),
    a row no interval holds named by its file (named_file)."""
    try:
        return bucket_counters(scans if scans else counter_scans(files, since))
    except ImpossibleCounts as err:
        raise named_file(err, files) from None


def _read_summaries(files: list[Path], since: dt.datetime | None, merge: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(calls, errors) as bucket_counters makes them, from counter_buckets files; `merge`: hosts
    with several files, whose cells are combined in file order by bucket_counters' rules."""
    lf = scan_parquet_files(files, "counter_buckets", partitions_stored=False)
    if since is not None:
        lf = lf.filter(pl.col("bucket") >= pl.lit(since).dt.cast_time_unit("ns").dt.truncate(BUCKET_WIDTH))
    cat = pl.Categorical
    key = ["host", "probe", "bucket"]
    c = lf.select(pl.col("host", "probe").cast(cat), "bucket", "n", pl.col("layer", "vendor", "kernel_release").cast(cat))
    e = (
        lf.filter(pl.col("errno_counts").list.len() > 0)
        .select("host", "probe", "bucket", "errno_counts")
        .explode("errno_counts")
        .unnest("errno_counts")
        .select(pl.col("host", "probe", "errno").cast(cat), "bucket", "count")
    )
    if merge:  # a batch of whole hosts: in memory, so that "first" and "last" follow the file order
        c, e = pl.collect_all([c, e])
        c = c.group_by(key, maintain_order=True).agg(bucket_cell_aggs("n"))
        e = e.group_by("host", "probe", "errno", "bucket", maintain_order=True).agg(pl.col("count").sum())
        return c, e
    return tuple(pl.collect_all([c, e], engine="streaming"))  # type: ignore[return-value]


def _disjoint(spans: list) -> bool:
    """The files' snapshot-time ranges ([first, last] ns, None for an empty file) share no
    instant, so no snapshot can be in two of them. Unknown ranges are not disjoint."""
    known = []
    for span in spans:
        if span is None:
            continue
        if not (isinstance(span, list) and len(span) == 2 and all(isinstance(v, int) for v in span)):
            return False
        known.append(span)
    known.sort()
    return all(a[1] < b[0] for a, b in zip(known, known[1:], strict=False))


def _files_by_host(files: list[Path]) -> dict[str, list[Path]]:
    """The files of each host (its host=H directory, else the file's directory), in order."""
    by_host: dict[str, list[Path]] = {}
    for f in files:
        host = next((part[5:] for part in f.parts if part.startswith("host=")), str(f.parent))
        by_host.setdefault(host, []).append(f)
    return by_host

"""The good-trace baseline of a fleet: per operation, the call chains that known-good traces take.

An *operation* is the root probe plus the arguments that select a path (the fleet tracer and
the simulator put it in the trace-level ``command`` column: "reg_mr", "modify_qp INIT->RTR";
when ``command`` is empty we fall back to "<root probe> <root arg>"). For every operation the
model keeps, from good traces only:

* ``edges_``  - structural call edges (parent probe -> probe at a depth) and how often they occur
  (the audit's pass adds those of *rescued* traces: failure records whose root succeeded, see
  ``GoodTraceBaseline._accumulate_rescued``);
* ``errors_`` - error frames seen inside good traces (parent, probe, errno): handled errors such
  as EAGAIN retries or ENOENT probing, which are part of known-good behaviour;
* ``chains_`` - the distinct normalised frame sequences (hashed) and their frequencies;
* ``operations_`` - per operation: good traces, events, hosts.

A frame of another trace is *explained* when its structural edge is known for its operation
and, if it carries an errno, that error was seen at the same place in good traces. The first
frame that is not explained is where a failure leaves good behaviour (see baseline.fleet.audit).

The estimator follows scikit-learn conventions (parameters in ``__init__``, learned state in
trailing-underscore attributes, ``fit`` / ``partial_fit`` / ``score_samples`` /
``decision_function`` / ``predict`` / ``score``). Samples are traces. ``fit`` accepts a dataset
root, Parquet files, or a polars (Lazy)DataFrame of events and streams: it works through files
in batches of about ``batch_rows`` rows (only the columns it needs are decoded), reduces each
batch to one row per trace with a chain hash (prefix sums over contiguous traces, no group-by;
see _trace_runs), counts traces per chain and per (operation, host), keeps the frames of one
representative trace of each chain the first time it is seen, and merges the small aggregate
tables at the end, the edge / error tables being the representatives' frames weighted by their
chains' counts; so memory is bounded by the batch and the distinct chains, not the dataset.

The model file is one Parquet table (``baseline_model`` in tracer.schema) whose footer holds a
JSON header with ``model_version``; `save` writes it atomically, `load` refuses other versions.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tracer.errors import SchemaError, TracebaseError
from tracer.schema import (
    RECORD_KEY,
    TRACE_KINDS,
    dataset_files,
    event_value_problem,
    file_metadata,
    first_frame_metadata,
    is_day_file,
    parquet_files,
    partition_values,
    trace_metadata_pairs,
    validate_file,
    write_table,
)
from tracer.units import epoch_ns, parse_time

MODEL_VERSION = 2  # 2: chain_hash = wrapping sum of per-frame hashes (chain_token_hash)
MODEL_KIND = "GoodTraceBaseline"
MAX_DEPTH = 64  # deeper frames are clipped: no real RDMA call tree comes near this

EventsInput = str | os.PathLike | Iterable[str | os.PathLike] | pl.LazyFrame | pl.DataFrame


class NoEventsError(TracebaseError):
    """The dataset (after --since) holds no events: callers may word it for their job; any
    other TracebaseError from a read (a corrupt file, a schema mismatch) keeps its own message."""


def scope(X: EventsInput, since: str | dt.datetime | None) -> str:
    """What a read covered, for a message: "DATASET: " (when X is a path) and " since T
    (--since)" -- an empty window names both, not only that nothing was found."""
    where = f"{os.fspath(X)}: " if isinstance(X, (str, os.PathLike)) else ""
    when = parse_since(since) if since is not None else None
    return where + (f"nothing since {when.isoformat()} (--since): " if when else "")


class NotFittedError(TracebaseError, ValueError):
    """Raised when a model is used before `fit` (same idea as sklearn's NotFittedError)."""


# --------------------------------------------------------------------------------------------
# featurisation shared with baseline.fleet.audit / baseline.fleet.expected
# --------------------------------------------------------------------------------------------
def operation_expr() -> pl.Expr:
    """The operation of each row: `command`, else root probe + root arg (rows must be in
    (trace_id, seq) order so that the forward fill stays inside the trace)."""
    root_probe = pl.when(pl.col("depth") == 0).then(pl.col("probe")).forward_fill()
    root_arg = pl.when(pl.col("depth") == 0).then(pl.col("arg").fill_null("")).forward_fill()
    fallback = pl.concat_str([root_probe, root_arg], separator=" ").str.strip_chars()
    command = pl.col("command")
    return pl.when(command.is_not_null() & (command != "")).then(command).otherwise(fallback)


_NULL_MARK = "\x00null"  # stands for a null value while forward filling (see ancestor_columns)


def ancestor_columns(column: str, max_depth: int, prefix: str) -> list[pl.Expr]:
    """`prefix{d}` = value of `column` in the most recent frame at depth d (the ancestor at
    depth d of a frame deeper than d, given pre-order rows sorted by trace_id, seq).

    A null value (a frame that returned no errno) is carried as a marker through the forward
    fill and turned back into null: filling over the null would hand the frame's descendants the
    value of an earlier sibling or of the previous trace's frame at that depth."""
    out = []
    for d in range(max_depth + 1):
        value = pl.col(column).cast(pl.String).fill_null(_NULL_MARK)
        filled = pl.when(pl.col("depth") == d).then(value).forward_fill()
        out.append(pl.when(filled == _NULL_MARK).then(None).otherwise(filled).alias(f"{prefix}{d}"))
    return out


def parent_expr(prefix: str, max_depth: int) -> pl.Expr:
    """Value at depth-1 from ancestor columns made by `ancestor_columns` (null for roots)."""
    expr = pl.lit(None, dtype=pl.String)
    for d in range(max_depth, 0, -1):
        expr = pl.when(pl.col("depth") == d).then(pl.col(f"{prefix}{d - 1}")).otherwise(expr)
    return expr


def with_frame_context(lf: pl.LazyFrame, max_depth: int) -> pl.LazyFrame:
    """Sort by trace and seq; add `operation` and `parent` (probe of the parent frame)."""
    max_depth = min(max(max_depth, 0), MAX_DEPTH)
    return (
        lf.sort(["trace_id", "seq"])
        .with_columns(pl.col("depth").clip(0, MAX_DEPTH))
        .with_columns(operation_expr().alias("operation"), *ancestor_columns("probe", max_depth, "_anc"))
        .with_columns(parent_expr("_anc", max_depth).fill_null("^").alias("parent"))
        .drop([f"_anc{d}" for d in range(max_depth + 1)])
    )


VENDOR_NAMESPACE = r"^(mlx5_ib|mlx5|bnxt_re|irdma)_"  # driver prefixes of one ib_device_ops slot


def vendor_masked(column: str) -> pl.Expr:
    """`column` with the driver namespace replaced by "<drv>_" (mlx5_ib_create_qp, bnxt_re_create_qp
    and irdma_create_qp are the same call site)."""
    return pl.col(column).cast(pl.String).str.replace(VENDOR_NAMESPACE, "<drv>_")


def max_depth_of(lf: pl.LazyFrame) -> int:
    value = lf.select(pl.col("depth").max()).collect().item()
    return int(value) if value is not None else 0


FIT_COLUMNS = ["trace_id", "seq", "depth", "probe", "layer", "errno", "arg", "command", "host"]
RUN_COLUMNS = [c for c in FIT_COLUMNS if c != "arg"]  # fitting's fast path (see _trace_runs)
# what the audit needs from events (trace-level columns are read once per trace, via per_trace_table):
# pid tells one process of a job from its requeued successor; kernel_release, lost_events and
# repeat_count (schema 2: an example standing for N identical call trees) are read per trace;
# latency_ns of a trace's first frame only says whether the tree was timed (recorded in a capture
# window, where the process's successful calls are recorded too): collect_traces keeps `timed`;
# comm (the process name, read from a trace's first frame) is the caller an expected error can
# depend on: one tenant's launcher retries an errno another's library dies of (baseline.fleet.expected)
TRACE_LEVEL = ("kind", "job_id", "start_time", "exit_status", "pid", "kernel_release", "lost_events", "repeat_count",
               "latency_ns", "comm")
AUDIT_COLUMNS = [*FIT_COLUMNS, *TRACE_LEVEL]
OPTIONAL_COLUMNS = {"latency_ns": pl.Int64, "comm": pl.String}  # read as null where a frame lacks them
TRACE_CATEGORICAL = ["host", "operation", "job_id", "kernel_release", "comm"]  # collect_traces' categoricals


def failed_expr() -> pl.Expr:
    """The root call of a trace failed: its root frame carries an errno (`root_err`), else the
    exit status is a negative errno (-4095..-1). A pointer-returning root's success is a kernel
    pointer, clipped to -2147483648 in the int32 exit_status: not a failure. Without either
    column, the trace kind decides."""
    status = pl.col("exit_status")
    by_status = pl.when(status.is_not_null()).then((status < 0) & (status >= -4095)).otherwise(pl.col("kind") == "failure")
    return pl.col("root_err").fill_null(False) | by_status


def rescued_expr() -> pl.Expr:
    """A *rescued* trace: a failure record (the tracer sent it because some frame failed) whose
    root call succeeded: every error in it was absorbed on the way to a success, so its call
    structure is known-good behaviour (GoodTraceBaseline._accumulate_rescued). A truncated one
    counts too: the frames it kept are the ones entered first, each edge of them a real one."""
    return (pl.col("kind") == "failure") & ~failed_expr()


def weight_expr() -> pl.Expr:
    """How many call trees a trace stands for (schema 2 repeat_count; null = 1)."""
    return pl.col("repeat_count").fill_null(1).clip(1).cast(pl.Int64)


def lost_errors_expr() -> pl.Expr:
    """A failure record (kind failure: the tracer emitted it because a call failed) truncated
    (lost_events > 0): the frames entered first are kept, so every error frame can be in the
    lost tail (an error its operation absorbed). The audit matches it to a cause by its prefix."""
    return (pl.col("lost_events").fill_null(0) > 0) & (pl.col("kind") == "failure")


def trace_flags(columns: Iterable[str]) -> dict[str, pl.Expr]:
    """`truncated`, `weight` (Int64), `root_failed`, `has_error` and `lost_errors` of a per-trace
    table, whether it is collect_traces' (the flags stored) or per_trace_table's with the TRACE_LEVEL columns (derived
    here); a column missing from both takes its default: complete, one tree, failed."""
    cols = set(columns)
    lost = pl.col("lost_events").fill_null(0) > 0 if "lost_events" in cols else pl.lit(False)
    weight = weight_expr() if "repeat_count" in cols else pl.lit(1, pl.Int64)
    failed = failed_expr() if {"exit_status", "kind"} <= cols else pl.lit(True)
    has_error = pl.col("has_error") if "has_error" in cols else pl.col("errors") > 0
    lost_errors = lost_errors_expr() if {"lost_events", "kind"} <= cols else pl.lit(False)
    return {
        "has_error": has_error.alias("has_error"),
        "lost_errors": (pl.col("lost_errors") if "lost_errors" in cols else lost_errors).alias("lost_errors"),
        "truncated": (pl.col("truncated") if "truncated" in cols else lost).alias("truncated"),
        "weight": (pl.col("weight").cast(pl.Int64) if "weight" in cols else weight).alias("weight"),
        "root_failed": (pl.col("root_failed") if "root_failed" in cols else failed).alias("root_failed"),
    }


def trace_table_columns() -> list[pl.Expr]:
    """collect_traces' per-trace table from per_trace_table(frames, keep=TRACE_LEVEL): only what
    the audit and the expected-error learner read, each in its narrowest form. A fleet-day holds
    millions of rows from the events pass to the findings (the audit's memory peak), so the
    trace-level columns they only test are reduced to flags as the batch is read: `has_error`
    (errors > 0), `root_failed` (failed_expr of root_err, exit_status and kind), `truncated`
    (lost_events > 0), `timed` (latency_ns present: recorded in a capture window), `weight`
    (weight_expr as UInt32: no snapshot aggregates 4 billion call trees), `lost_errors`
    (lost_errors_expr: a failure record whose error frames were all lost); the frame count is
    not kept. The text columns with few distinct values are categoricals (integer codes).
    The trace_id text is kept for the traces with an error or lost errors only (null
    otherwise): only findings name a trace, and ids (host:boot:tid:seq) are the widest column by far."""
    has_error = pl.col("errors") > 0
    lost_errors = lost_errors_expr()
    return [
        pl.when(has_error | lost_errors).then(pl.col("trace_id")).alias("trace_id"),
        pl.col("host", "operation").cast(pl.Categorical), "chain_hash", has_error.alias("has_error"),
        pl.col("job_id").cast(pl.Categorical), "start_time", "pid", pl.col("kernel_release").cast(pl.Categorical),
        failed_expr().alias("root_failed"), (pl.col("lost_events").fill_null(0) > 0).alias("truncated"),
        weight_expr().clip(upper_bound=np.iinfo(np.uint32).max).cast(pl.UInt32).alias("weight"),
        pl.col("latency_ns").is_not_null().alias("timed"), lost_errors.alias("lost_errors"),
        pl.col("comm").cast(pl.Categorical),
    ]


def chain_token_hash() -> pl.Expr:
    """Hash of one frame's place in its chain: (seq, depth, probe, layer, errno). Summed over a trace
    (wrapping) it identifies the chain whatever the row order, with no sort and no string
    building: a sequence hash, since seq is part of every term."""
    return pl.struct(
        pl.col("seq").cast(pl.Int64), pl.col("depth").cast(pl.Int64), pl.col("probe"), pl.col("layer"), pl.col("errno")
    ).hash(seed=0x7261636562617365)


def per_trace_table(frames: pl.DataFrame, keep: tuple[str, ...] = ()) -> pl.DataFrame:
    """One row per trace: trace_id, host, operation, chain_hash, frames, errors, root_err (the
    root frame carries an errno) (+ `keep` columns: trace-level columns from the trace's first row).

    Traces are normally stored as contiguous runs of rows (the tracer emits a call tree at
    once): then the trace-level columns come from each run's first row and only numeric
    aggregations run per group, on an integer run key. If some trace_id spans several runs,
    the grouping is redone on trace_id itself."""
    trace_cols = ["trace_id", "host", "command", *keep]
    if frames.is_empty():
        return frames.select(*trace_cols[:2], pl.lit("").alias("operation"), pl.lit(0, pl.UInt64).alias("chain_hash"),
                             pl.lit(0, pl.UInt32).alias("frames"), pl.lit(0, pl.UInt32).alias("errors"),
                             pl.lit(False).alias("root_err"), *keep)
    starts = (pl.col("trace_id") != pl.col("trace_id").shift(1)).fill_null(True)
    runs = frames.lazy().select(
        # the run key is a cumulative sum, so sorted: flagged, the group-bys below take polars'
        # sorted-key path (no hashing; ~10x faster on a fleet-day batch)
        starts.alias("_start"), starts.cum_sum().set_sorted().alias("_run"), chain_token_hash().alias("_h"), "depth",
        "probe", "arg",
        pl.col("errno").is_not_null().alias("_err"),
    )
    sums = runs.group_by("_run", maintain_order=True).agg(
        pl.col("_h").sum().alias("chain_hash"), pl.len().alias("frames"), pl.col("_err").sum().alias("errors"),
        (pl.col("_err") & (pl.col("depth") == 0)).any().alias("root_err"),
    ).sort("_run")
    per = pl.concat([frames.filter(starts).select(trace_cols), sums.drop("_run").collect()], how="horizontal")
    roots = runs.group_by("_run", maintain_order=True).agg(
        pl.when(pl.col("depth") == 0).then(pl.col("probe")).min().alias("_root_probe"),
        pl.when(pl.col("depth") == 0).then(pl.col("arg")).min().alias("_root_arg"),
    ).sort("_run").drop("_run")
    if per["trace_id"].n_unique() != per.height:  # interleaved traces: group on the id itself
        lf = frames.lazy().with_columns(chain_token_hash().alias("_h"))
        per = lf.group_by("trace_id", maintain_order=True).agg(
            *[pl.col(c).first() for c in trace_cols[1:]], pl.col("_h").sum().alias("chain_hash"), pl.len().alias("frames"),
            pl.col("errno").is_not_null().sum().alias("errors"),
            (pl.col("errno").is_not_null() & (pl.col("depth") == 0)).any().alias("root_err"),
        ).collect()
        roots = lf.group_by("trace_id", maintain_order=True).agg(
            pl.when(pl.col("depth") == 0).then(pl.col("probe")).min().alias("_root_probe"),
            pl.when(pl.col("depth") == 0).then(pl.col("arg")).min().alias("_root_arg"),
        ).drop("trace_id")
    command = pl.col("command")
    has_command = command.is_not_null() & (command != "")
    if not per.select(has_command.all()).item():  # operation falls back to root probe + root arg
        per = pl.concat([per, roots.collect()], how="horizontal")
        fallback = pl.concat_str([pl.col("_root_probe"), pl.col("_root_arg").fill_null("")], separator=" ")
        operation = pl.when(has_command).then(command).otherwise(fallback.str.strip_chars())
    else:
        operation = command
    return per.select("trace_id", "host", operation.alias("operation"), "chain_hash",
                      pl.col("frames").cast(pl.UInt32), pl.col("errors").cast(pl.UInt32), "root_err", *keep)


def chain_representatives(per_trace: pl.DataFrame, frames: pl.DataFrame, known: pl.DataFrame | None = None) -> pl.DataFrame:
    """Frames of one trace per distinct (operation, chain_hash) not in `known` (a frame of
    such keys), with `operation` and `chain_hash` columns: identical chains are analysed once."""
    keys = per_trace.group_by(["operation", "chain_hash"]).agg(pl.col("trace_id").first())
    if known is not None and known.height:
        keys = keys.join(known.select("operation", "chain_hash").unique(), on=["operation", "chain_hash"], how="anti")
    reps = frames.filter(pl.col("trace_id").is_in(keys["trace_id"].implode()))
    return reps.join(keys, on="trace_id").sort(["trace_id", "seq"])


def good_root_rows(lf: pl.LazyFrame) -> pl.LazyFrame:
    """host, probe, arg, command, start_time, latency_ns of the root rows of timed good traces
    (kind good, root without an errno, latency measured): what baseline.fleet.latency's
    rising_latency alert reads, from the audit's pass or a targeted read of its own."""
    names = set(lf.collect_schema().names())
    optional = [pl.col(c).cast(pl.String) if c in names else pl.lit(None, pl.String).alias(c) for c in ("arg", "command")]
    return (lf.filter((pl.col("depth") == 0) & pl.col("latency_ns").is_not_null() & pl.col("errno").is_null()
                      & (pl.col("kind") == "good"))
            .select(pl.col("host", "probe").cast(pl.String), *optional,
                    pl.col("start_time").cast(pl.Datetime("ns", "UTC")), pl.col("latency_ns").cast(pl.Int64)))


def collect_traces(
    dataset: EventsInput,
    since: str | dt.datetime | None = None,
    batch_rows: int = 500_000,
    fit: GoodTraceBaseline | None = None,
    good_roots: list[pl.DataFrame] | None = None,
    host_metadata: list[pl.DataFrame] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One streaming pass over a dataset's events: (traces, chains).

    traces: one row per trace (per_trace_table with the TRACE_LEVEL columns; TRACE_CATEGORICAL
    columns as categoricals); chains: the frames of one representative trace per distinct
    (operation, chain_hash), operation categorical too. With `fit`, the
    good traces of each batch are also fed to that model (partial_fit without a second read).
    With `good_roots`, each batch's `good_root_rows` are appended to that list (the per-trace
    table keeps no latency: the rising_latency alert's rows, taken from frames already decoded,
    cost a filter a batch instead of a second read of every file). With `host_metadata`, each
    batch's metadata_pairs are appended to that list (the clusters' shared values,
    baseline.fleet.audit's name_shared_metadata): from the files' footer summaries where every
    file of the batch has one (event_batches' `footer_metadata`), else taken aside on the
    reading thread and the wide column dropped there. Decoding the column cost ~8-10 CPU s of
    a 10,000-host day's ~50 (a second read of every file for it, ~3-4 more)."""
    traces: list[pl.DataFrame] = []
    known: pl.DataFrame | None = None
    columns = AUDIT_COLUMNS if host_metadata is None else [*AUDIT_COLUMNS, "metadata"]

    def aside(frames: pl.DataFrame) -> pl.DataFrame:
        """On the reading thread: the values checked (checked_values), the metadata pairs taken."""
        frames = checked_values(frames, dataset, since)
        if host_metadata is None or "metadata" not in frames.columns:  # (none asked, or from the footers)
            return frames
        host_metadata.append(metadata_pairs(frames.lazy()).collect())
        return frames.drop("metadata")

    batches = event_batches(dataset, since=since, batch_rows=batch_rows, columns=columns,
                            footer_metadata=host_metadata)
    for frames in collected_ahead(batches, aside):
        per = _audit_runs(frames)
        if per is None:  # records delivered twice, interleaved traces or traces without a command
            frames, per = _runs_without_repeats(frames, keep=TRACE_LEVEL)
        if good_roots is not None:
            # (one chunk a batch: filtered from a scan, the rows came in a chunk per file, and
            # rising_latency's group-bys over the day's ~10,000 chunks took twice the CPU)
            good_roots.append(good_root_rows(frames.lazy()).collect().rechunk())
        if fit is not None:
            # the good traces' aggregates, merged once at the end (as fit does); `_start`, when
            # present, numbers rows of `frames`, so the whole batch goes with the good traces
            fit._accumulate(frames, per.filter(pl.col("kind").is_in(list(fit.good_kinds))))
            fit._accumulate_rescued(frames, per.filter(rescued_expr()))
            if len(fit._pending[0]) + len(fit._pending[2]) >= _FLUSH_EVERY:
                fit._flush()
        reps = chain_representatives(per, frames, known)
        known = reps if known is None else pl.concat([known, reps], how="vertical_relaxed")
        traces.append(per.select(trace_table_columns()))
    if not traces:
        raise NoEventsError(f"{scope(dataset, since)}no events to audit")
    if fit is not None:
        fit._flush()
    chains_df = known.with_columns(pl.col("operation").cast(pl.Categorical)) if known is not None else pl.DataFrame()
    return pl.concat(traces, how="vertical_relaxed"), chains_df


METADATA_PAIRS_SCHEMA = {"host": pl.String, "key": pl.String, "value": pl.String}


def checked_values(frames: pl.DataFrame, dataset: EventsInput, since: str | dt.datetime | None = None) -> pl.DataFrame:
    """`frames` (a batch of `dataset`'s events) when they break none of the data model's value
    rules (tracer.schema.EVENT_VALUE_RULES), else the SchemaError naming the first file of
    the dataset that breaks one, its column and row: read again only then, file by file."""
    problem = event_value_problem(frames)
    if problem is None:
        return frames
    column = problem[0]
    if not isinstance(dataset, (pl.LazyFrame, pl.DataFrame)):
        since_dt = parse_since(since)
        for f in event_files(dataset, since=since_dt.date().isoformat() if since_dt else None):
            rows = _scan_files([str(f)]).filter(since_filter(since_dt)).select(column).collect()
            if (found := event_value_problem(rows)) is not None:
                raise SchemaError(str(f), *found)
    raise SchemaError("events", *problem)


def metadata_pairs(events: pl.LazyFrame) -> pl.LazyFrame:
    """host, key, value: the distinct job-metadata values of the events' traces (their first
    frames'; a frame without a metadata column has none)."""
    if "metadata" not in events.collect_schema().names():
        return pl.LazyFrame(schema=METADATA_PAIRS_SCHEMA)
    return first_frame_metadata(events)


def collected_ahead(batches: Iterable[pl.LazyFrame],
                    aside: Callable[[pl.DataFrame], pl.DataFrame] | None = None) -> Iterator[pl.DataFrame]:
    """The batches collected (streaming engine) one ahead, in a background thread, in order;
    `aside` (frames -> frames) runs on that thread too, on each batch as it is read.

    Reading and decoding a batch's files is mostly I/O wait and polars work without the GIL,
    while a caller's per-batch reductions are short eager steps that leave a core idle between
    them: overlapped, a fleet-day's events pass takes ~the CPU of both instead of their sum in
    wall time. One batch ahead only (its frames, ~50 MB at 250,000 rows, are all it adds to the
    memory); an error in the reader surfaces at the batch where it happened."""
    from tracer.pools import thread_pool

    it = iter(batches)
    with thread_pool(1, "events-ahead") as pool:

        def read_next() -> pl.DataFrame | None:
            batch = next(it, None)  # event_batches' footer checks run here too, off the caller's thread
            if batch is None:
                return None
            frames = batch.collect(engine="streaming")
            return aside(frames) if aside is not None else frames

        pending = pool.submit(read_next)
        while True:
            frames = pending.result()
            if frames is None:
                return
            pending = pool.submit(read_next)
            yield frames


def without_repeated_records(frames: pl.DataFrame) -> pl.DataFrame:
    """`frames` less the rows repeating a RECORD_KEY (host, trace id, frame) read before them in
    the batch: a host's call trees delivered twice (at-least-once shipping: a second part file of
    the same partition, which event_batches keeps in the batch of the first) count once, their
    first copy. Called where a trace id starts several runs of rows (the fast paths' check), so
    only those ids' rows are compared; the same frames (object) when nothing repeats, e.g.
    traces whose rows are interleaved, which per_trace_table then groups by id."""
    tid = pl.col("trace_id")
    starts = frames.select(_run_starts()).to_series()
    firsts = frames.select("host", "trace_id").filter(starts)
    ids = firsts.filter(pl.struct("host", "trace_id").is_duplicated()).get_column("trace_id").unique()
    if ids.is_empty():
        return frames
    rows = frames.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_i"), *RECORD_KEY).filter(tid.is_in(ids.implode()))
    again = rows.filter(~pl.struct(*RECORD_KEY).is_first_distinct()).get_column("_i")
    if again.is_empty():
        return frames
    return frames.filter(~pl.int_range(pl.len(), dtype=pl.UInt32).is_in(again.implode()))


def _runs_without_repeats(frames: pl.DataFrame, keep: tuple[str, ...] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(frames, per-trace table) where _trace_runs gave up on `frames`: their repeated records
    dropped (without_repeated_records), then _trace_runs again when some were, else (interleaved
    traces, traces without a command) per_trace_table's group-by on the trace id. With `keep`,
    the audit's per-trace columns (collect_traces), without, fitting's (GoodTraceBaseline)."""
    once = without_repeated_records(frames)
    per = _trace_runs(once, keep=keep) if once is not frames else None
    if per is None:
        per = per_trace_table(once, keep=keep or ())
    return once, per


def _run_starts() -> pl.Expr:
    """Rows that start a run of one trace's rows: the trace id changes, or the frame number does
    not go up (a record whose second copy follows the first -- the last tree of one part file,
    the first of the re-sent one -- is two runs of the id, not one of twice the frames)."""
    tid, seq = pl.col("trace_id"), pl.col("seq")
    return ((tid != tid.shift(1)) | (seq <= seq.shift(1))).fill_null(True).alias("_s")


def _audit_runs(frames: pl.DataFrame) -> pl.DataFrame | None:
    """per_trace_table(frames, keep=TRACE_LEVEL) (+ `_start`) without a group-by: _trace_runs'
    running sums for the chain hash and frame count, the same for the error count and the
    failing root, and the trace-level columns from each trace's first row. None where
    _trace_runs gives up (per_trace_table handles those)."""
    return _trace_runs(frames, keep=TRACE_LEVEL)


# --------------------------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------------------------
def event_files(dataset: str | os.PathLike | Iterable[str | os.PathLike], since: str | None = None) -> list[Path]:
    """Events Parquet files of a dataset root (``<root>/events/date=...``), a directory of
    Parquet files, or explicit files. Raises TracebaseError when nothing is there."""
    if isinstance(dataset, (str, os.PathLike)):
        root = Path(dataset)
        if not root.exists():
            raise TracebaseError(f"{root}: no such dataset (file or directory)")
        if (root / "events").is_dir():
            files = dataset_files(root, "events", since=since)
            if not files:
                where = f" with date >= {since[:10]} (--since)" if since else ""
                raise TracebaseError(f"{root}: dataset holds no events files{where}")
            return files
        # a dataset without its events table: its other tables' files are no events directory
        # (their table mismatch was named instead: "expected a tracebase 'events' table, found
        # table 'counter_buckets'")
        others = [t for t in ("counters", "counter_buckets", "truth") if (root / t).is_dir()]
        if root.is_dir() and others:
            raise TracebaseError(f"{root}: expected an events table ({root}/events/date=*/host=*/*.parquet), found "
                                 f"none beside its {', '.join(others)}")
    return parquet_files(dataset)


# metadata keys naming a host's NIC: its model and firmware (free-form job metadata; a fleet's
# tracer or launcher sets what it knows). Keys of the job or the process (tenant, rank, image)
# say nothing of the hardware and are left out
NIC_KEYS = ("nic_model", "fw_version", "nic_fw", "hca_type", "board_id")


JOB_METADATA_SCHEMA = {"host": pl.String, "job_id": pl.String, "key": pl.String, "value": pl.String}


def job_metadata(dataset: EventsInput, hosts: Iterable[str], since: str | dt.datetime | None = None) -> pl.DataFrame:
    """host, job_id, key, value: the job-metadata pairs of every job with a trace on the given
    hosts (its traces' first frames), per host it ran on (each cluster weighs the jobs of its
    own hosts). A targeted second read (seq 0 rows of those hosts' files only),
    made by the audit only for a cluster a job-level value may name
    (audit.name_shared_job_metadata): the events pass keeps each host's pairs, not each job's."""
    hosts = sorted(set(hosts))
    if not hosts:
        return pl.DataFrame(schema=JOB_METADATA_SCHEMA)
    since_dt = parse_since(since)
    lf = _events_scan(dataset, since_dt, hosts)
    if lf is None or not {"metadata", "job_id", "seq"} <= set(lf.collect_schema().names()):
        return pl.DataFrame(schema=JOB_METADATA_SCHEMA)
    on_hosts = lf.filter(since_filter(since_dt)).filter(pl.col("job_id").is_not_null()
                                                        & pl.col("host").cast(pl.String).is_in(hosts))
    return first_frame_metadata(on_hosts, by=("host", "job_id")).collect()


TRACE_METADATA_SCHEMA = {"host": pl.String, "trace_id": pl.String, "key": pl.String, "value": pl.String}


def trace_metadata(dataset: EventsInput, traces: pl.DataFrame, since: str | dt.datetime | None = None) -> pl.DataFrame:
    """host, trace_id, key, value: the job-metadata pairs the given traces (`traces`: host and
    trace_id as the audit keys them, host_qualified_ids) carry on their first frames. A targeted
    second read (those traces' hosts' partitions, seq 0 rows), made by the audit only for a
    cluster whose named value some of its hosts or jobs showed beside another of the same key
    (audit.name_shared_metadata): whether the failures themselves carried it."""
    if traces.is_empty():
        return pl.DataFrame(schema=TRACE_METADATA_SCHEMA)
    keys = traces.select(pl.col("host", "trace_id").cast(pl.String)).unique()
    since_dt = parse_since(since)
    lf = _events_scan(dataset, since_dt, keys["host"].unique().to_list())
    if lf is None or not {"metadata", "seq"} <= set(lf.collect_schema().names()):
        return pl.DataFrame(schema=TRACE_METADATA_SCHEMA)
    traced = (lf.filter(since_filter(since_dt)).filter(pl.col("seq") == 0).with_columns(host_qualified_ids())
              .with_columns(pl.col("host", "trace_id").cast(pl.String))
              .join(keys.lazy(), on=["host", "trace_id"], how="semi"))
    return first_frame_metadata(traced, by=("host", "trace_id")).collect()


def _events_scan(dataset: EventsInput, since: dt.datetime | None, hosts: list[str] | None = None) -> pl.LazyFrame | None:
    """The events of a targeted second read: a frame as given, else a scan of the dataset's files
    from `since`'s date on -- with `hosts`, only those hosts' partitions (and the day files,
    whose rows name their hosts); None when no file is left."""
    if isinstance(dataset, (pl.LazyFrame, pl.DataFrame)):
        return dataset.lazy()
    files = event_files(dataset, since=since.date().isoformat() if since else None)
    if hosts is not None:
        wanted = set(hosts)
        files = [f for f in files if (host := partition_values(f).get("host")) is None or host in wanted]
    return _scan_files([str(f) for f in files]) if files else None


def host_nic_identity(dataset: EventsInput, hosts: Iterable[str], errnos: Iterable[str],
                      since: str | dt.datetime | None = None) -> pl.DataFrame:
    """host, nic: the NIC a host ran (its NIC_KEYS metadata as sorted "key=value" pairs joined
    by ",") when it last met one of `errnos`, for the given hosts; a host whose traces carry no
    such key is left out. A targeted second read (host, seq, errno, start time, metadata; one
    row a trace whose frames carry one of the errnos, on those hosts only), made by the
    expected-error learner only for a family it may call harmless and on whose hosts it kills
    (baseline.fleet.expected: "Not a regression"): the audit's events pass never decodes the
    wide metadata column."""
    empty = pl.DataFrame(schema={"host": pl.String, "nic": pl.String})
    hosts, errnos = list(hosts), list(errnos)
    if not hosts or not errnos:
        return empty
    since_dt = parse_since(since)
    lf = _events_scan(dataset, since_dt)
    if lf is None or "metadata" not in lf.collect_schema().names():
        return empty
    rows = (
        lf.filter(since_filter(since_dt))
        .filter(pl.col("host").cast(pl.String).is_in(hosts) & pl.col("errno").cast(pl.String).is_in(errnos))
        .select(pl.col("host").cast(pl.String), "trace_id", "start_time", "metadata")
        .unique(["host", "trace_id"])
        .sort("start_time")
        .group_by("host").agg(pl.col("metadata").drop_nulls().last())
        .collect()
    )
    pairs = (
        rows.drop_nulls("metadata").explode("metadata").unnest("metadata")
        .filter(pl.col("key").is_in(list(NIC_KEYS)) & pl.col("value").is_not_null())
    )
    if pairs.is_empty():
        return empty
    return (pairs.sort("host", "key")
            .group_by("host", maintain_order=True)
            .agg(pl.format("{}={}", "key", "value").str.join(",").alias("nic")))


def good_root_latency(dataset: EventsInput, operation: str, hosts: Iterable[str],
                      since: str | dt.datetime | None = None) -> pl.DataFrame:
    """host, kernel_release, latency_ns: the root latency of every timed good trace of
    `operation` on the given hosts (root frame without an errno, recorded in a capture window).
    A targeted second read (root rows of those hosts only), made by the expected-error learner
    for an update's family it may call harmless (baseline.fleet.expected: "Not a regression"):
    the per-trace table keeps no latency, a column of millions of rows for this one question."""
    empty = pl.DataFrame(schema={"host": pl.String, "kernel_release": pl.String, "latency_ns": pl.Int64})
    hosts = list(hosts)
    if not hosts:
        return empty
    since_dt = parse_since(since)
    lf = _events_scan(dataset, since_dt)
    names = set(lf.collect_schema().names()) if lf is not None else set()
    if not {"latency_ns", "kernel_release", "command"} <= names:
        return empty
    command = pl.col("command")
    root_op = (pl.when(command.is_not_null() & (command != "")).then(command)
               .otherwise(pl.concat_str([pl.col("probe"), pl.col("arg").fill_null("")], separator=" ").str.strip_chars()))
    return (
        lf.filter(since_filter(since_dt))
        .filter((pl.col("depth") == 0) & pl.col("errno").is_null() & pl.col("latency_ns").is_not_null()
                & pl.col("host").cast(pl.String).is_in(hosts))
        .filter(root_op == operation)
        .select(pl.col("host", "kernel_release").cast(pl.String), pl.col("latency_ns").cast(pl.Int64))
        .collect()
    )


def parse_since(since: str | dt.datetime | None) -> dt.datetime | None:
    """ISO date/time (naive = UTC) or a time ago ('2h') -> aware datetime (tracer.units.parse_time)."""
    return parse_time(since, "--since")


def since_filter(since: dt.datetime | None) -> pl.Expr:
    if since is None:
        return pl.lit(True)
    return pl.col("start_time") >= pl.lit(since).dt.cast_time_unit("ns")


def event_batches(
    dataset: EventsInput,
    since: str | dt.datetime | None = None,
    batch_rows: int = 2_000_000,
    columns: list[str] | None = None,
    footer_metadata: list[pl.DataFrame] | None = None,
) -> Iterator[pl.LazyFrame]:
    """Lazy event frames of about `batch_rows` rows each (whole files, so whole traces; and the
    files of one directory together -- a dataset's date=D/host=H partition -- so a record
    delivered twice, in a second part file, has both copies in one batch: see
    without_repeated_records).

    `columns` narrows the scan to the columns a caller needs (projection pushdown: the wide
    trace-level columns such as `metadata` are never decoded unless asked for).

    `footer_metadata` (with `metadata` among `columns`): a batch every file of which has a
    usable metadata summary in its footer (tracer.schema.trace_metadata_pairs; files tracebase
    wrote) is scanned without the `metadata` column and its summaries' pairs (metadata_pairs'
    host, key, value) are appended to this list instead; a batch with a file lacking one
    keeps the column, for the caller to take its pairs from (metadata_pairs)."""
    since_dt = parse_since(since)
    if isinstance(dataset, (pl.LazyFrame, pl.DataFrame)):
        lf = dataset.lazy().filter(since_filter(since_dt))
        yield _narrow(lf.with_columns(host_qualified_ids()) if _has_ids(lf) else lf, columns)
        return
    files = event_files(dataset, since=since_dt.date().isoformat() if since_dt else None)
    batch: list[str] = []
    rows = 0
    stored = False  # a file storing the host column itself (else hive partitioning gives it)
    named = True  # every file's trace ids start with its host's name (_ids_name_their_host)
    # A closed day compacted across hosts (tracer.schema's day layout) is a few day files in
    # one date directory, each holding whole hosts: a batch may end between two of them. Not
    # while late partitions (date=D/host=H) sit beside them: a host's late rows must meet its
    # day file's in one batch (a record delivered twice), so that date stays one batch.
    compacted = {f.parent for f in files if is_day_file(f)}
    mixed = {f.parent.parent for f in files if f.parent.parent in compacted and not is_day_file(f)}

    def unit(f: Path) -> Path:
        """What a batch never splits: a partition directory, a day file, a day with late partitions."""
        day = is_day_file(f)
        if (f.parent if day else f.parent.parent) in mixed:
            return f.parent if day else f.parent.parent
        return f if day else f.parent

    summarised = footer_metadata is not None and columns is not None and "metadata" in columns
    since_ns = None if since_dt is None else epoch_ns(since_dt)
    pairs: list[tuple] | None = [] if summarised else None

    def scan() -> pl.LazyFrame:
        lf = _scan_files(batch, stored).filter(since_filter(since_dt))
        if not named:
            lf = lf.with_columns(host_qualified_ids())
        if pairs is None:
            return _narrow(lf, columns)
        footer_metadata.append(pl.DataFrame(pairs, schema=METADATA_PAIRS_SCHEMA, orient="row").unique())
        return _narrow(lf, [c for c in columns if c != "metadata"])

    last: Path | None = None
    for f, (num_rows, has_host, found, ids_named) in zip(files, _validated(files, summarised, since_ns), strict=True):
        here = unit(f)
        if rows >= batch_rows and here != last:
            yield scan()
            batch, rows, stored, named, pairs = [], 0, False, True, [] if summarised else None
        batch.append(str(f))
        last = here
        rows += num_rows
        stored = stored or has_host
        named = named and ids_named
        if pairs is not None:
            if found is None:
                pairs = None  # (this batch decodes the column)
            else:
                pairs.extend(found)
    if batch:
        yield scan()


def _validated(files: list[Path], summaries: bool = False,
               since_ns: int | None = None) -> Iterator[tuple[int, bool, list[tuple] | None, bool]]:
    """validate_file over the files, footers read by a few threads (a footer read is mostly
    I/O wait, and a fleet-day is 10,000+ files), in file order; errors surface in order.
    Yields (rows, stores a host column, metadata pairs, trace ids name the host) per file, the
    pairs those of the footer's summary (trace_metadata_pairs, from rows starting at `since_ns`
    or later) when `summaries`, else None; the last _ids_name_their_host's. The footers themselves are dropped in the worker, since the pool
    runs ahead of the batches and 10,000 footers held at once cost ~170 MiB that stayed in the
    process (fragmented) for the rest of the audit."""
    from tracer.pools import thread_pool

    def check(part: list[Path]) -> list[tuple[int, bool, list[tuple] | None, bool]]:
        out = []
        for f in part:
            meta = validate_file(f, "events")
            found = trace_metadata_pairs(meta, f, since_ns) if summaries else None
            out.append((meta.num_rows, "host" in meta.schema.names, found, _ids_name_their_host(meta, f)))
        return out

    # a task per 64 files, not per file: a task per file cost more CPU in futures and GIL
    # handovers than the footer reads themselves (2.7 -> 1.9 CPU s for 10,000 files, warm)
    step = 64
    with thread_pool(4, "footers") as pool:  # a stop cancels the queued checks (tracer.pools)
        for part in pool.map(check, (files[i:i + step] for i in range(0, len(files), step))):
            yield from part


# A trace id names a trace on its host: the data model's record key is (host, trace_id, seq).
# The tracer's and the simulator's ids start with "<host>:" and so are unique across hosts, but
# another collector may number each host's traces from 1, and the audit's per-trace steps (runs,
# group-bys, joins, the findings' filters) key on the id alone: two hosts' "t1" would be one
# trace. So an id that does not start with its host's name is read as "<host>HOST_MARK<id>"
# (host_qualified_ids), and what the audit writes has the mark taken off again (own_trace_ids).
# A control character: no id is taken for another, and the original is the text after it.
HOST_MARK = "\x1f"


def host_qualified_ids() -> pl.Expr:
    """trace_id, unique across hosts: as it is when it starts with "<host>:", else "<host>\\x1f<id>"."""
    tid, host = pl.col("trace_id"), pl.col("host").cast(pl.String)
    # (a row without a host keeps its id: there is nothing to qualify it by)
    return (pl.when(host.is_null() | tid.str.starts_with(pl.concat_str(host, pl.lit(":")))).then(tid)
            .otherwise(pl.concat_str(host, pl.lit(HOST_MARK), tid)).alias("trace_id"))


def own_trace_ids(frame: pl.DataFrame, column: str = "trace_id") -> pl.DataFrame:
    """`frame` with `column` (trace ids host_qualified_ids made) as the data names them."""
    ids = frame.get_column(column)
    if ids.is_empty() or not ids.str.contains(HOST_MARK, literal=True).any():
        return frame
    return frame.with_columns(ids.str.splitn(HOST_MARK, 2).struct.field("field_1").fill_null(ids).alias(column))


def _has_ids(lf: pl.LazyFrame) -> bool:
    return {"trace_id", "host"} <= set(lf.collect_schema().names())


def _ids_name_their_host(meta: Any, path: Path) -> bool:
    """Whether every trace id of a dataset file (`meta`: its footer) starts with "<host>:", the
    host its directory names, shown by the footer's statistics alone (no data read): the ids
    starting with a prefix are one interval of the text order, so a row group whose least and
    greatest id start with it has no other. False when that cannot be shown (no statistics, a
    file storing its host column: a day file of many hosts), and the batch's ids are checked a
    row at a time instead (host_qualified_ids)."""
    host = partition_values(path).get("host")
    if meta.num_rows == 0:
        return True
    if host is None or "host" in meta.schema.names or meta.num_row_groups == 0:
        return False
    prefix = host + ":"
    first = meta.row_group(0)
    where = next((j for j in range(first.num_columns) if first.column(j).path_in_schema == "trace_id"), None)
    if where is None:
        return False
    for i in range(meta.num_row_groups):
        stats = meta.row_group(i).column(where).statistics
        if stats is None or not stats.has_min_max:
            return False
        low, high = stats.min, stats.max
        if not (isinstance(low, str) and isinstance(high, str) and low.startswith(prefix) and high.startswith(prefix)):
            return False
    return True


# read as categoricals (integer codes) as the batch is decoded: a per-frame text column of which the
# audit keeps a trace's first value only (the process name: read as text it raised the events
# pass's peak on a simulated 1,000-host day from 348 to 406 MiB, as codes to 357)
CATEGORICAL_ON_READ = ("comm",)


def _narrow(lf: pl.LazyFrame, columns: list[str] | None) -> pl.LazyFrame:
    if not columns:
        return lf
    have = set(lf.collect_schema().names())

    def column(c: str) -> pl.Expr:
        if c not in have and c in OPTIONAL_COLUMNS:
            return pl.lit(None, OPTIONAL_COLUMNS[c]).alias(c)
        return pl.col(c).cast(pl.Categorical) if c in CATEGORICAL_ON_READ else pl.col(c)

    return lf.select(column(c) for c in columns)


def _scan_files(files: list[str], stored: bool | None = None) -> pl.LazyFrame:
    from tracer.schema import scan_parquet_files

    # host restored from dataset paths (host=<h>)
    return scan_parquet_files(files, "events", partitions_stored=stored)


# --------------------------------------------------------------------------------------------
# the estimators
# --------------------------------------------------------------------------------------------
class ParamsMixin:
    """scikit-learn's parameter protocol (get_params / set_params / repr, so sklearn.base.clone
    works) read off `__init__`'s signature, without importing sklearn: the learners stay cheap to
    import for the CLIs that never fit anything."""

    def get_params(self, deep: bool = True) -> dict[str, Any]:  # noqa: ARG002
        import inspect

        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {name: getattr(self, name) for name in names}

    def set_params(self, **params: Any) -> Any:
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class GoodTraceBaseline(ParamsMixin):
    """Known-good call chains per operation, learned from good traces.

    Parameters
    ----------
    min_support : int
        An edge / error frame counts as known-good only when seen in at least this many good
        frames (1 = anything ever seen in a good trace).
    good_kinds : tuple of str
        Trace kinds used for fitting (other rows are ignored by `fit`).
    batch_rows : int
        Rows per streamed batch when fitting from files.
    """

    def __init__(self, min_support: int = 1, good_kinds: tuple[str, ...] = ("good",), batch_rows: int = 500_000):
        self.min_support = min_support
        self.good_kinds = good_kinds
        self.batch_rows = batch_rows

    # ---------------------------------------------------------------- fitting
    def fit(self, X: EventsInput, y: None = None, since: str | dt.datetime | None = None) -> GoodTraceBaseline:  # noqa: ARG002
        """Learn from the good traces in X (dataset root, files, or events frame): one streaming
        pass, batch by batch; the small per-batch aggregates are merged once at the end."""
        for attr in ("edges_", "errors_", "chains_", "op_hosts_", "operations_", "n_traces_", "n_events_"):
            if hasattr(self, attr):
                delattr(self, attr)
        self._reset_pending()
        self._reps = None
        seen = False
        for batch in event_batches(X, since=since, batch_rows=self.batch_rows, columns=[*FIT_COLUMNS, "kind"]):
            seen = True
            self._add_events(batch, X, since)
            if len(self._pending[0]) >= _FLUSH_EVERY:  # bounded memory on long inputs
                self._flush()
        if not seen:
            raise TracebaseError(f"{scope(X, since)}no events to learn from")
        self._flush()
        if self.n_traces_ == 0:
            raise TracebaseError(f"{scope(X, since)}no good traces to learn from (kinds {', '.join(self.good_kinds)})")
        return self

    def partial_fit(self, X: pl.LazyFrame | pl.DataFrame, y: None = None) -> GoodTraceBaseline:  # noqa: ARG002
        """Add one batch of events (whole traces) to the learned tables.

        Good traces repeat a few hundred distinct chains millions of times, so the work is
        done per trace with numeric aggregations only (a chain hash, no sort, no strings built),
        and the structural tables (edges, errors) are expanded from one representative trace
        per distinct chain, weighted by how often the chain occurs."""
        self._add_events(X)
        self._flush()
        return self

    def extensible_copy(self) -> GoodTraceBaseline:
        """A copy of this fitted model that partial fits extend without changing this one (the
        learned tables are replaced, never changed in place, by each merge: a shallow copy)."""
        self._check_fitted()
        twin = copy.copy(self)
        twin._reset_pending()
        twin._reps = None  # (representatives of chains this process saw: the copy gathers its own)
        return twin

    def _add_batch(self, frames: pl.DataFrame, per_trace: pl.DataFrame) -> GoodTraceBaseline:
        """partial_fit on good frames whose per-trace table (per_trace_table) is already computed."""
        self._accumulate(frames, per_trace)
        self._flush()
        return self

    def _add_events(self, X: pl.LazyFrame | pl.DataFrame, source: EventsInput | None = None,
                    since: str | dt.datetime | None = None) -> None:
        """Accumulate the good rows of one batch of events. The filter runs inside the scan, and
        `arg` is decoded only when some trace lacks a `command` (per_trace_table's fallback).
        Rows of a kind no trace has go on to the value check, which names them (`source`: where
        the batch came from, for the file it names): filtered out with the failures, a file of
        kind 'bogus' was learned from less with exit 0 where the audit refused it."""
        kind = pl.col("kind").cast(pl.String)
        good = X.lazy().filter(kind.is_in(list(self.good_kinds)) | ~kind.is_in(list(TRACE_KINDS)) | kind.is_null())
        frames = checked_values(good.select(*RUN_COLUMNS, "kind").collect(engine="streaming"),
                                X if source is None else source, since).drop("kind")
        runs = _trace_runs(frames)
        if runs is None:
            frames, runs = _runs_without_repeats(good.select(FIT_COLUMNS).collect(engine="streaming"))
        self._accumulate(frames, runs)

    def _reset_pending(self) -> None:
        # (good chains, good traces per operation and host, rescued chains)
        self._pending: tuple[list[pl.DataFrame], list[pl.DataFrame], list[pl.DataFrame]] = ([], [], [])

    def _accumulate(self, frames: pl.DataFrame, per: pl.DataFrame) -> None:
        """Reduce one batch of good frames to per-chain and per-(operation, host) counts (kept
        pending until `_flush`), and keep the frames of one trace of every chain not seen before."""
        chains = self._chains_of(frames, per)
        ops = per.group_by(["operation", "host"]).agg(pl.len().alias("traces"), pl.col("frames").sum().alias("events"))
        ops = ops.with_columns(pl.col("traces").cast(pl.UInt32), pl.col("events").cast(pl.Int64))
        self._pending[0].append(chains.select("operation", "chain_hash", "count", "frames"))
        self._pending[1].append(ops)

    def _accumulate_rescued(self, frames: pl.DataFrame, per: pl.DataFrame) -> None:
        """Add the call structure of *rescued* traces (see `rescued_expr`): their edges only.

        The tracer sends every call tree with a failing frame as a failure, even when the call
        succeeded, so a success path that always absorbs an error first never reaches a good
        trace: every GPU registration's pin fails with EFAULT before the peer-memory client takes
        the buffer (the reference's gpu_direct_trace_shape), and a registration dying in that
        client left "known-good behaviour" at the cleanup of the pin, which every successful
        registration also runs (tests/fleetgen62). Their errors stay out of `errors_` (an error
        absorbed there is what the expected-error learner judges) and their traces out of the
        counts of good traces."""
        if per.is_empty():
            return
        self._pending[2].append(self._chains_of(frames, per).select("operation", "chain_hash", "count"))

    def _chains_of(self, frames: pl.DataFrame, per: pl.DataFrame) -> pl.DataFrame:
        """operation, chain_hash, count, frames (+ the representative's row or id) of the traces
        `per`; the frames of one trace of every chain not seen before are kept in `_reps`."""
        if not hasattr(self, "_pending"):
            self._reset_pending()
        if not hasattr(self, "_reps"):
            self._reps = None
        # row of each trace's first frame, when the traces are contiguous runs (the fast path).
        # Casts after the group-bys, not inside them: a cast in an aggregation leaves polars'
        # fast aggregation path (~2x slower here)
        first = [pl.col("_start").first()] if "_start" in per.columns else [pl.col("trace_id").first().alias("_rep")]
        chains = per.group_by(["operation", "chain_hash"]).agg(pl.len().alias("count"), pl.col("frames").first(), *first)
        chains = chains.with_columns(pl.col("count").cast(pl.UInt32), pl.col("frames").cast(pl.UInt32))
        if self._reps is not None:
            new = chains.join(self._reps.select("operation", "chain_hash").unique(), on=["operation", "chain_hash"],
                              how="anti")
        else:
            new = chains
        if new.height:
            reps = _rep_frames(frames, new)
            self._reps = reps if self._reps is None else pl.concat([self._reps, reps], how="vertical_relaxed")
        return chains

    def _flush(self) -> None:
        """Merge the pending batch aggregates into the learned tables; the edge / error counts
        are the representative frames of each chain weighted by the chain's new count."""
        chain_parts, op_parts, rescued_parts = self._pending
        if not chain_parts:
            if not hasattr(self, "operations_"):
                raise TracebaseError("no events to learn from")
            if not rescued_parts:
                return
        chains = pl.concat([*chain_parts, _CHAINS_EMPTY], how="vertical_relaxed").group_by(
            ["operation", "chain_hash"]).agg(pl.col("count").sum(), pl.col("frames").first())
        ops = pl.concat([*op_parts, _OPS_EMPTY], how="vertical_relaxed").group_by(["operation", "host"]).agg(
            pl.col("traces").sum(), pl.col("events").sum()
        )
        self._reset_pending()
        reps = self._reps if self._reps is not None else _REPS_EMPTY
        weighted = reps.join(chains.select("operation", "chain_hash", "count"), on=["operation", "chain_hash"])
        edges = weighted.group_by(["operation", "parent", "probe", "depth"]).agg(pl.col("count").sum())
        if rescued_parts:  # (their edges only: _accumulate_rescued)
            rescued = pl.concat(rescued_parts, how="vertical_relaxed").group_by(["operation", "chain_hash"]).agg(
                pl.col("count").sum())
            more = reps.join(rescued, on=["operation", "chain_hash"]).group_by(
                ["operation", "parent", "probe", "depth"]).agg(pl.col("count").sum())
            edges = pl.concat([edges, more.select(edges.columns)], how="vertical_relaxed").group_by(
                ["operation", "parent", "probe", "depth"]).agg(pl.col("count").sum())
        errors = (
            weighted.filter(pl.col("errno").is_not_null())
            .group_by(["operation", "parent", "probe", "errno"]).agg(pl.col("count").sum())
        )
        chains = chains.with_columns(pl.col("count").cast(pl.UInt32), pl.col("frames").cast(pl.UInt32))
        edges = edges.with_columns(pl.col("count").cast(pl.UInt32))
        errors = errors.with_columns(pl.col("count").cast(pl.UInt32))
        ops = ops.with_columns(pl.col("traces").cast(pl.UInt32))
        if hasattr(self, "operations_"):
            edges = _merge(self.edges_, edges, ["operation", "parent", "probe", "depth"], ["count"])
            errors = _merge(self.errors_, errors, ["operation", "parent", "probe", "errno"], ["count"])
            chains = _merge(self.chains_, chains, ["operation", "chain_hash"], ["count"], keep=["frames"])
            ops = _merge(self.op_hosts_, ops, ["operation", "host"], ["traces", "events"])
        self.edges_, self.errors_, self.chains_, self.op_hosts_ = edges, errors, chains, ops
        self._summarise()

    def _summarise(self) -> None:
        self.operations_ = (
            self.op_hosts_.group_by("operation")
            .agg(pl.col("traces").sum(), pl.col("events").sum(), pl.col("host").n_unique().alias("hosts"))
            .sort("operation")
        )
        self.n_traces_ = int(self.operations_["traces"].sum())
        self.n_events_ = int(self.operations_["events"].sum())

    def _check_fitted(self) -> None:
        if not hasattr(self, "edges_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with good traces first."
            )

    # ---------------------------------------------------------------- explaining frames
    def explain_frames(self, X: pl.LazyFrame | pl.DataFrame) -> pl.LazyFrame:
        """Events with `operation`, `parent`, `known_edge` and `known_error` columns.

        known_edge: the structural edge (operation, parent, probe, depth) occurs in good traces.
        known_error: the frame carries no errno, or that errno was seen at the same place
        (operation, parent, probe) in good traces. A frame is explained when both hold.
        """
        self._check_fitted()
        lf = X.lazy()
        depth = max_depth_of(lf)
        # vendor namespaces are masked: bnxt_re_alloc_pd fills the ib_device_ops slot that
        # mlx5_ib_alloc_pd fills elsewhere, so a good chain sampled on one vendor's hosts is the
        # known-good shape for the others (good traces are sampled: a vendor may have none)
        mp, mq = vendor_masked("parent").alias("_mparent"), vendor_masked("probe").alias("_mprobe")
        edges = self.edges_.filter(pl.col("count") >= self.min_support).select(
            "operation", mp, mq, "depth", pl.lit(True).alias("known_edge")
        ).unique()
        errors = self.errors_.filter(pl.col("count") >= self.min_support).select(
            "operation", mp, mq, "errno", pl.lit(True).alias("known_error")
        ).unique()
        return (
            with_frame_context(lf, depth)
            .with_columns(mp, mq)
            .join(edges.lazy(), on=["operation", "_mparent", "_mprobe", "depth"], how="left", maintain_order="left")
            .join(errors.lazy(), on=["operation", "_mparent", "_mprobe", "errno"], how="left", maintain_order="left")
            .with_columns(
                pl.col("known_edge").fill_null(False),
                (pl.col("errno").is_null() | pl.col("known_error").fill_null(False)).alias("known_error"),
            )
            .drop("_mparent", "_mprobe")
        )

    def trace_scores(self, X: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
        """One row per trace (sorted by trace_id): operation, frames, unexplained frames,
        first unexplained seq, whether the whole chain is a known-good chain."""
        frames = self.explain_frames(X).with_columns(
            chain_token_hash().alias("_token_hash"),
            (~(pl.col("known_edge") & pl.col("known_error"))).alias("unexplained"),
        )
        per_trace = frames.group_by("trace_id").agg(
            pl.col("operation").first(),
            pl.len().alias("frames"),
            pl.col("unexplained").sum().alias("unexplained"),
            pl.col("seq").filter(pl.col("unexplained")).min().alias("first_unexplained_seq"),
            pl.col("_token_hash").sum().alias("chain_hash"),
        )
        chains = self.chains_.filter(pl.col("count") >= self.min_support).select(
            "operation", "chain_hash", pl.lit(True).alias("known_chain")
        )
        return (
            per_trace.join(chains.lazy(), on=["operation", "chain_hash"], how="left")
            .with_columns(pl.col("known_chain").fill_null(False))
            .drop("chain_hash")
            .sort("trace_id")
            .collect()
        )

    # sklearn outlier-detector conventions: higher = more normal, predict -1 for outliers.
    offset_ = -0.5

    def score_samples(self, X: pl.LazyFrame | pl.DataFrame) -> np.ndarray:
        """Minus the number of unexplained frames per trace (0 = fully known-good)."""
        return -self.trace_scores(X)["unexplained"].to_numpy().astype(float)

    def decision_function(self, X: pl.LazyFrame | pl.DataFrame) -> np.ndarray:
        return self.score_samples(X) - self.offset_

    def predict(self, X: pl.LazyFrame | pl.DataFrame) -> np.ndarray:
        """+1 for traces fully explained by known-good chains, -1 otherwise (trace_id order)."""
        return np.where(self.decision_function(X) > 0, 1, -1)

    def score(self, X: pl.LazyFrame | pl.DataFrame, y: None = None) -> float:  # noqa: ARG002
        """Fraction of traces in X fully explained by the baseline."""
        pred = self.predict(X)
        return float((pred == 1).mean()) if len(pred) else 0.0

    # ---------------------------------------------------------------- persistence
    def to_table(self) -> pl.DataFrame:
        self._check_fitted()
        parts = [
            self.edges_.select(pl.lit("edge").alias("record"), "operation", "parent", "probe",
                               pl.col("depth").cast(pl.Int16), "count"),
            self.errors_.select(pl.lit("error").alias("record"), "operation", "parent", "probe", "errno", "count"),
            self.chains_.select(pl.lit("chain").alias("record"), "operation", "chain_hash", "frames", "count"),
            self.op_hosts_.select(pl.lit("host").alias("record"), "operation", "host",
                                  pl.col("traces").alias("count"), pl.col("events").alias("frames")),
        ]
        return pl.concat(parts, how="diagonal_relaxed")

    def header(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "model": MODEL_KIND,
            "model_version": MODEL_VERSION,
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in self.get_params().items()},
            "n_traces": self.n_traces_,
            "n_events": self.n_events_,
            "operations": self.operations_["operation"].to_list(),
            "saved_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }

    def save(self, path: str | os.PathLike) -> Path:
        """Write the model atomically as one Parquet file with a JSON header in its footer."""
        return write_table(self.to_table(), path, "baseline_model", extra_metadata={"model": json.dumps(self.header())})

    @classmethod
    def load(cls, path: str | os.PathLike) -> GoodTraceBaseline:
        """Read a model written by `save`; TracebaseError on wrong kind or version."""
        validate_file(path, "baseline_model")
        raw = file_metadata(path).get("model")
        try:
            header = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            header = None
        if not isinstance(header, dict) or header.get("model") != MODEL_KIND:
            raise TracebaseError(f"{path}: expected a {MODEL_KIND} model header, found {raw!r:.80}")
        if header.get("model_version") != MODEL_VERSION or isinstance(header.get("model_version"), bool):
            raise TracebaseError(
                f"{path}: expected model version {MODEL_VERSION}, found model version "
                f"{json.dumps(header.get('model_version'))} (re-run `baseline learn`)"
            )
        model = cls(**_header_params(path, header.get("params", {})))
        table = pl.read_parquet(path)
        rec = pl.col("record")
        model.edges_ = table.filter(rec == "edge").select("operation", "parent", "probe", "depth", "count")
        model.errors_ = table.filter(rec == "error").select("operation", "parent", "probe", "errno", "count")
        model.chains_ = table.filter(rec == "chain").select("operation", "chain_hash", "count", "frames")
        model.op_hosts_ = table.filter(rec == "host").select(
            "operation", "host", pl.col("count").alias("traces"), pl.col("frames").alias("events")
        )
        model._summarise()
        for key, learned in (("n_traces", model.n_traces_), ("n_events", model.n_events_)):
            # a model whose rows were lost (a rewrite, a filter) would judge every trace unknown
            if key in header and header[key] != learned:
                raise TracebaseError(f"{path}: header field {key!r}: expected the {learned} its rows hold, "
                                     f"found {json.dumps(header[key])} (a damaged model: re-run `baseline learn`)")
        return model


def _header_params(path: str | os.PathLike, params: Any) -> dict[str, Any]:
    """The model header's `params` as GoodTraceBaseline's keyword arguments; TracebaseError
    naming the file and the parameter when one is not what `baseline learn` writes."""
    def wrong(field: str, expected: str, found: Any) -> TracebaseError:
        return TracebaseError(f"{path}: header field {field!r}: expected {expected}, found {json.dumps(found)}")

    if not isinstance(params, dict):
        raise wrong("params", "a JSON object of GoodTraceBaseline's parameters", params)
    known = GoodTraceBaseline().get_params()
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise wrong(f"params.{unknown[0]}", f"one of {', '.join(sorted(known))}", params[unknown[0]])
    out = dict(params)
    for field in ("min_support", "batch_rows"):
        value = params.get(field, known[field])
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise wrong(f"params.{field}", "a whole number >= 1", value)
    kinds = params.get("good_kinds", list(known["good_kinds"]))
    if not isinstance(kinds, list | tuple) or not kinds or not all(isinstance(k, str) and k for k in kinds):
        raise wrong("params.good_kinds", "a non-empty list of trace kinds", kinds)
    out["good_kinds"] = tuple(kinds)
    return out


def _merge(old: pl.DataFrame, new: pl.DataFrame, keys: list[str], sums: list[str], keep: list[str] = ()) -> pl.DataFrame:
    both = pl.concat([old.select(keys + sums + list(keep)), new.select(keys + sums + list(keep))], how="vertical_relaxed")
    return both.group_by(keys).agg([pl.col(c).sum() for c in sums] + [pl.col(c).first() for c in keep])


_FLUSH_EVERY = 64  # batches whose small aggregates are kept before merging them
_CHAINS_EMPTY = pl.DataFrame(schema={"operation": pl.String, "chain_hash": pl.UInt64, "count": pl.UInt32,
                                     "frames": pl.UInt32})
_OPS_EMPTY = pl.DataFrame(schema={"operation": pl.String, "host": pl.String, "traces": pl.UInt32, "events": pl.Int64})
_REPS_EMPTY = pl.DataFrame(schema={"operation": pl.String, "chain_hash": pl.UInt64, "parent": pl.String,
                                   "probe": pl.String, "depth": pl.Int16, "errno": pl.String})


def _trace_runs(frames: pl.DataFrame, keep: tuple[str, ...] | None = None) -> pl.DataFrame | None:
    """What fitting needs of per_trace_table (trace_id, host, operation, chain_hash, frames) plus
    `_start`, the row of each trace's first frame, without any group-by: a trace is a contiguous
    run of rows, so its chain hash is a difference of the running (wrapping) sum of the frame
    hashes at its last row and at the previous trace's last row, and its frame count a difference
    of row numbers. None when that does not hold (a trace_id in several runs) or when some trace
    has no `command` (the operation falls back to the root frame): per_trace_table handles those.

    With `keep` (the audit's events pass, `_audit_runs`): also per_trace_table's `errors` and
    `root_err` (running sums of the error frames and failing roots, differenced the same way)
    and the `keep` columns of each trace's first row, in per_trace_table's column order. One
    pass: the run starts (a text comparison of every row's trace id with the previous one) and
    the filter of the first rows are made once for both (each was made twice, ~0.1 CPU s a
    250,000-row batch)."""
    if frames.is_empty():
        return None
    tid = pl.col("trace_id")
    start = _run_starts()
    if keep is None:
        marks = frames.select(start).with_columns(pl.col("_s").shift(-1, fill_value=True).alias("_e"))
    else:
        err = pl.col("errno").is_not_null()
        marks = frames.select(start, err.cast(pl.UInt32).cum_sum().alias("_err"),
                              (err & (pl.col("depth") == 0)).cast(pl.UInt32).cum_sum().alias("_root"))
        marks = marks.with_columns(pl.col("_s").shift(-1, fill_value=True).alias("_e"))
    # the hash is materialised first: a running sum fused into the struct hash is ~3x slower
    hashes = frames.select(chain_token_hash()).to_series().cum_sum()
    starts = marks.select(pl.arg_where("_s")).to_series()
    ends = marks.select(pl.arg_where("_e")).to_series()
    total = hashes.gather(ends)
    # each trace's first row: a filter, not a gather (a gather across chunks: 3x slower; a batch
    # holds one chunk per file)
    per = frames.select("trace_id", "host", "command", *(keep or ())).filter(marks["_s"])
    command = pl.col("command")
    if not per.select((command.is_not_null() & (command != "")).all()).item():
        return None
    # every run a different trace? Distinct id hashes say yes; a collision only costs the slow path
    if per.select(tid.hash().n_unique()).item() != per.height:
        return None
    runs = per.select(
        "trace_id", "host", command.alias("operation"),
        (total - total.shift(1, fill_value=0)).alias("chain_hash"),
        (ends - starts + 1).cast(pl.UInt32).alias("frames"),
    )
    if keep is None:
        return runs.with_columns(starts.alias("_start"))
    errs, roots = marks["_err"].gather(ends), marks["_root"].gather(ends)
    return pl.concat([
        runs,
        pl.DataFrame([(errs - errs.shift(1, fill_value=0)).alias("errors"),
                      ((roots - roots.shift(1, fill_value=0)) > 0).alias("root_err")]),
        per.select(keep), starts.alias("_start").to_frame(),
    ], how="horizontal")


def _rep_frames(frames: pl.DataFrame, chains: pl.DataFrame) -> pl.DataFrame:
    """Frames of one trace per chain (`_start`/`frames`: its rows, or `_rep`: its trace_id), in
    context (parent probe, clipped depth): operation, chain_hash, parent, probe, depth, errno."""
    if "_start" in chains.columns:
        rows = chains.select(
            pl.col("operation").alias("_op"), "chain_hash",
            pl.int_ranges("_start", pl.col("_start") + pl.col("frames"), dtype=pl.UInt32).alias("_row"),
        ).explode("_row")
        reps = pl.concat([frames.gather(rows["_row"]), rows.drop("_row")], how="horizontal")
        if "arg" not in reps.columns:  # with_frame_context's operation (replaced by the chain's) reads it
            reps = reps.with_columns(pl.lit(None, pl.String).alias("arg"))
    else:
        reps = frames.filter(pl.col("trace_id").is_in(chains["_rep"].implode())).join(
            chains.select(pl.col("_rep").alias("trace_id"), pl.col("operation").alias("_op"), "chain_hash"),
            on="trace_id",
        )
    # the chain's operation, not a per-row recomputation (identical unless `command` varies in a trace)
    return (
        with_frame_context(reps.lazy(), max_depth_of(reps.lazy())).collect()
        .select(pl.col("_op").alias("operation"), "chain_hash", "parent", "probe", "depth", "errno")
    )


def unseen_success_paths(learned: GoodTraceBaseline, extended: GoodTraceBaseline) -> pl.DataFrame:
    """How far a model learned earlier is from the window it audits, per operation: the good
    traces the window added to `extended` (`learned`'s extensible copy after the audit's pass)
    and how many of them took a call chain `learned` never saw (a driver or kernel update since
    it was learned adds a frame to a success path). Columns operation, good_traces,
    unseen_path_traces; operations without good traces in the window are left out."""
    keys = ["operation", "chain_hash"]
    before = learned.chains_.select(*keys, pl.col("count").cast(pl.Int64).alias("_before"))
    window = (extended.chains_.join(before, on=keys, how="left")
              .with_columns((pl.col("count").cast(pl.Int64) - pl.col("_before").fill_null(0)).alias("_window")))
    return (window.group_by("operation")
            .agg(pl.col("_window").sum().alias("good_traces"),
                 pl.col("_window").filter(pl.col("_before").is_null()).sum().alias("unseen_path_traces"))
            .filter(pl.col("good_traces") > 0)
            .with_columns(pl.col("operation").cast(pl.String))
            .sort("operation"))


def fit_baseline(
    dataset: EventsInput,
    out: str | os.PathLike | None = None,
    since: str | dt.datetime | None = None,
    **params: Any,
) -> GoodTraceBaseline:
    """Learn the good-trace baseline of a dataset (root dir, files or events frame); save it
    to `out` when given. Keyword params go to GoodTraceBaseline. Used by `baseline learn` and
    the Airflow DAGs."""
    model = GoodTraceBaseline(**params).fit(dataset, since=since)
    if out is not None:
        model.save(out)
    return model

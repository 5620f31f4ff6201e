"""Fleet audit: findings per failure, root-cause clusters, host alerts.

For each trace with an error (`run_audit`):

* **Layered evidence.** The failing chain runs from the failing root down through failing
  children; its deepest frame is the *origin* (origin_layer = the layer where the errno first
  appears), the shallowest ancestor still carrying the origin's errno is where it *stops*
  propagating (stop_layer). When the same errno runs from the root to a leaf frame (nothing
  probed below it) across at least ``min_layers`` layers, the fault is *deeper than the deepest
  probe* (EFAULT at all four reg_mr layers = peer memory or below). For a trace whose root
  succeeded, the origin is its first error the baseline does not explain.
* **Bifurcation** against the good-trace baseline of the operation (baseline.fleet.model): the
  first frame whose call edge no good trace takes (a path divergence), else the origin frame.
* **Expected errors** (curated expected_errors.yaml + learned entries, matched with the
  operation as context) are set aside: the finding is kept with expected = True and no cluster.
  Traces whose root succeeded and whose errors are all known-good or expected yield no finding.
* **Root-cause clusters**: findings are featurised by their kernel-side signature tokens
  (operation, bifurcation probe/errno, origin layer, errno-per-layer pattern, divergence
  marker, deeper flag), exact signatures are grouped, and agglomerative (scikit-learn's, computed in numpy)
  clustering merges signatures that differ only in vendor-specific probe names (all tokens
  equal after masking the vendor prefix), and those of one host-local fault (`merge_host_local`:
  same errno and origin layer, open findings from the same one or two hosts only). Each cluster
  is named by its dominant signature, with hosts, jobs, first/last seen and trend.
* **Host alerts** from the counters table: persistent bad state (a run of intervals in which
  most calls of a probe fail, 3 times a bucket or more on average - a crash-looping host) and rising errno rates (CUSUM of the standardised
  per-host, per-probe, per-errno failure counts against the host's own EWMA). One errno
  propagating up a call chain rises at each layer it crosses: one alert per (host, errno), on
  the deepest probe, the other layers named in its detail. A learned family out of its band on a
  host where an unexpected error alerts is a symptom of it (a crash loop's start-up), no alert.

Memory: the counters are reduced to 15-minute buckets in streaming passes over batches of
hosts before anything else is loaded, their per-cell layer / vendor / kernel release kept in a
side table (counters.split_cell_attributes); the per-trace table (model.collect_traces) holds
host / operation / job / release as categoricals, the trace-level columns the audit only tests
as flags (model.trace_table_columns) and the trace id of traces with an error only; the chain
analysis and signatures run once per distinct chain, the per-chain analysis columns as
categoricals; clusters are named by counts on those codes; findings are written to Parquet a
slice at a time.

Output: findings / clusters / host_alerts Parquet tables (tracer.schema), written atomically.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from baseline.fleet import paths
from baseline.fleet.counters import (
    bucket_counters,
    cell_attributes,
    counter_buckets,
    counter_scans,
    counter_sources,
    split_cell_attributes,
)
from baseline.fleet.model import (
    METADATA_PAIRS_SCHEMA,
    EventsInput,
    GoodTraceBaseline,
    NoEventsError,
    ancestor_columns,
    collect_traces,
    event_batches,
    max_depth_of,
    metadata_pairs,
    own_trace_ids,
    parse_since,
    scope,
    trace_flags,
    unseen_success_paths,
)
from baseline.run.allowlist import Entry, ExpectedErrors, load_default
from tracer import units
from tracer.atomic import fsync_dir, make_dirs, output_dirs
from tracer.errors import TracebaseError
from tracer.inputs import NO_SUCH_FILE, missing_reason
from tracer.pools import thread_pool
from tracer.schema import (
    BUCKET_NS,
    dataset_files,
    encoding_options,
    polars_schema,
    write_table,
    write_table_batches,
)
from tracer.schema import FINDINGS as FINDINGS_SCHEMA

# findings converted to Arrow (categoricals to text: ~230 bytes a finding) a slice at a time: at
# 500,000 a slice the conversion added ~120 MiB at the end of the audit of a 10,000-host day
FINDINGS_WRITE_ROWS = 125_000
ROW_JOIN_SLICE_ROWS = 500_000  # failing traces per slice of the join to their chain (_findings_of_failing)
VENDOR_PREFIX = re.compile(r"\b(mlx5_ib|mlx5|bnxt_re|irdma)_")


@dataclass
class AuditResult:
    findings: pl.DataFrame
    clusters: pl.DataFrame
    host_alerts: pl.DataFrame
    files: dict[str, Path] = field(default_factory=dict)  # table -> written file
    window: tuple[dt.datetime | None, dt.datetime | None] = (None, None)
    traces_audited: int = 0
    # a given model's distance from the window (model.unseen_success_paths); None when learned here
    model_drift: pl.DataFrame | None = None
    # hosts whose counters were read whole because their 15-minute summaries are from an older
    # rule (counters.counter_sources' `stale`): the same tables, slower; `baseline summarize`
    stale_summary_hosts: int = 0

    @property
    def open_findings(self) -> pl.DataFrame:
        return self.findings.filter(~pl.col("expected"))


# --------------------------------------------------------------------------------------------
# expected errors
# --------------------------------------------------------------------------------------------
def _expected_lookup(pairs: pl.DataFrame, expected: ExpectedErrors) -> pl.DataFrame:
    """Mark unique (probe, errno, operation) combinations that an expected entry covers, and
    those whose entry is routine only where the operation absorbs the error (`_absorbed_only`:
    a learned family's ``fatal_when_returned``, baseline.fleet.expected "Returned to the caller")."""
    found = [expected.match(p, e, context=o) for p, e, o in pairs.select("probe", "errno", "operation").iter_rows()]
    return pairs.with_columns(
        pl.Series("is_expected", [e is not None for e in found], dtype=pl.Boolean),
        pl.Series("_absorbed_only", [e is not None and bool((e.stats or {}).get("fatal_when_returned")) for e in found],
                  dtype=pl.Boolean))


def caller_expected(findings: pl.DataFrame, callers: ExpectedErrors) -> pl.DataFrame:
    """Open findings whose origin (operation, probe, errno) an entry naming their trace's caller
    (``comm``) covers are expected: routine for that caller, while the same family stays a
    finding for the callers it kills (baseline.fleet.expected, "Caller"). Chains are analysed
    once for all their traces, whatever process made them, so these entries are matched here,
    per distinct (family, comm) of the open findings; `callers`: the entries with a ``comm``
    (ExpectedErrors.split_by_caller). Nothing to do (no column built) without such an entry."""
    if not len(callers) or findings.is_empty() or "comm" not in findings.columns:
        return findings
    on = ["operation", "probe", "errno", "comm"]
    keys = (findings.lazy().filter(~pl.col("expected") & pl.col("comm").is_not_null() & pl.col("errno").is_not_null())
            .select(on).unique().collect().with_columns(pl.col(on).cast(pl.String)))
    hit = [callers.match(p, e, context=o, comm=c) is not None for o, p, e, c in keys.select(on).iter_rows()]
    keys = keys.filter(pl.Series(hit, dtype=pl.Boolean))
    if keys.is_empty():
        return findings
    mark = (findings.select(pl.col(on).cast(pl.String))
            .join(keys.with_columns(pl.lit(True).alias("_caller")), on=on, how="left", maintain_order="left"))
    return findings.with_columns(pl.col("expected") | mark["_caller"].fill_null(False))


def routine_for_their_callers(alerts: pl.DataFrame, traces: pl.DataFrame, chains: pl.DataFrame,
                              callers: ExpectedErrors) -> pl.DataFrame:
    """Host alerts naming an errno (a rising rate, a recurring errno) are dropped where every
    recorded failure of that errno on the host, at or through the alert's probe, comes from a
    caller the errno's family is learned routine for (an entry with ``comm``: baseline.fleet.
    expected, "Caller"). The counters know no process, so a pingmesh daemon's stale-peer
    ETIMEDOUT, routine for it, rises above the family's band on the two hosts that run it
    (tests/fleetgen20); the failures recorded there say who met it, and none of them is an
    alarm. One failure of another caller there (a rank dying of it) keeps the alert; so does a
    host whose failures of the errno no recorded trace shows. `callers`: the entries naming a
    caller (ExpectedErrors.split_by_caller)."""
    named = alerts.filter(pl.col("errno").is_not_null()) if alerts.height else alerts
    if not len(callers) or named.is_empty() or "comm" not in traces.columns:
        return alerts
    from baseline.fleet.expected import chain_origins

    hosts = named["host"].cast(pl.String).unique()
    failed = (traces.lazy().filter(pl.col("has_error") & pl.col("host").cast(pl.String).is_in(hosts.implode()))
              .select(pl.col("host", "operation", "comm").cast(pl.String), "chain_hash").unique().collect())
    if failed.is_empty():
        return alerts
    mine = chains.filter(pl.col("chain_hash").is_in(failed["chain_hash"].unique().implode()))
    origins = (chain_origins(mine).filter(~pl.col("superseded"))
               .join(named.select(pl.col("errno").cast(pl.String)).unique(), on="errno", how="semi"))
    # per alert: the (operation, origin, errno, caller) of each failure of its errno through its probe
    met = (named.select(pl.col("host", "probe", "errno").cast(pl.String)).unique()
           .join(failed, on="host")
           .join(origins.rename({"probe": "origin"}), on=["operation", "chain_hash", "errno"])
           .filter(pl.col("path").list.contains(pl.col("probe")))
           .select("host", "probe", "errno", "operation", "origin", "comm").unique())
    if met.is_empty():
        return alerts
    routine = [c is not None and callers.match(origin, e, context=op, comm=c) is not None
               for op, origin, e, c in met.select("operation", "origin", "errno", "comm").iter_rows()]
    quiet = (met.with_columns(pl.Series("_routine", routine, dtype=pl.Boolean))
             .group_by("host", "probe", "errno").agg(pl.col("_routine").all())
             .filter(pl.col("_routine")).drop("_routine"))
    if quiet.is_empty():
        return alerts
    keys = alerts.select(pl.col("host", "probe", "errno").cast(pl.String))
    drop = keys.join(quiet.with_columns(pl.lit(True).alias("_q")), on=["host", "probe", "errno"], how="left",
                     maintain_order="left")["_q"].fill_null(False)
    return alerts.filter(~drop)


def fatal_hosts_kept(findings: pl.DataFrame, expected: ExpectedErrors) -> pl.DataFrame:
    """Findings of a learned family on the hosts its entry names in ``fatal_hosts`` (the hosts
    of a NIC model the update's family kills on, beside the fallback the others take:
    baseline.fleet.expected, "Not a regression"; or where its operation stopped succeeding,
    from the time ``fatal_since`` gives: "Stopped on a host") or in ``absent_hosts`` (where the
    same callers ran its operation throughout the learning window and never met it: "Absent on
    a host") are not expected there."""
    rows = [(e.context, e.probe, e.errno, h, since) for e, h, since in _fatal_hosts(expected)]
    for e in expected.entries:
        if e.status == "active" and e.source == "learned":
            rows += [(e.context, e.probe, e.errno, h, None) for h in (e.stats or {}).get("absent_hosts") or []
                     if isinstance(h, str)]
    if not rows or findings.is_empty():
        return findings
    fatal = pl.DataFrame(rows, schema={"operation": pl.String, "probe": pl.String, "errno": pl.String,
                                       "host": pl.String, "_since": pl.Datetime("ns", "UTC")}, orient="row")
    mine = (findings.lazy().select("trace_id", "time", pl.col("operation", "probe", "errno", "host").cast(pl.String))
            .join(fatal.lazy(), on=["operation", "probe", "errno", "host"])
            .filter(pl.col("_since").is_null() | (pl.col("time") >= pl.col("_since")))
            .select("trace_id").collect())
    if mine.is_empty():
        return findings
    return findings.with_columns(pl.col("expected") & ~pl.col("trace_id").is_in(mine["trace_id"].implode()))


def _fatal_hosts(expected: ExpectedErrors) -> Iterator[tuple[Entry, str, dt.datetime | None]]:
    """(learned entry, host, since) of each host an active learned entry names in ``fatal_hosts``:
    its family is not routine there, from ``fatal_since`` (None: the whole window)."""
    for e in expected.entries:
        if e.status == "active" and e.source == "learned":
            since = (e.stats or {}).get("fatal_since") or {}  # (per host, or one time for all)
            for h in (e.stats or {}).get("fatal_hosts") or []:
                if isinstance(h, str):
                    yield e, h, _utc_time(since.get(h) if isinstance(since, dict) else since)


def superseded_by_callers(given: ExpectedErrors, learned: list[Entry]) -> ExpectedErrors:
    """`given` without its learned entries (another window's, from a file) that name no caller
    for a family the audited data splits by caller: there, callers are shown to die of it
    (``stats.fatal_to``) beside others that go on, so the window's "routine for every caller"
    would set the dying callers' findings aside (a pingmesh agent alone met the ARP timeout in
    the good window; on the audited day ranks die of it: tests/fleetgen43). The day's entries
    per caller take its place. Curated entries are the operator's word and stay."""
    split = {(e.context, e.probe, e.errno) for e in learned
             if e.comm is not None and (e.stats or {}).get("fatal_to")}
    if not split:
        return given
    kept = [e for e in given.entries
            if not (e.source == "learned" and e.comm is None and (e.context, e.probe, e.errno) in split)]
    return given if len(kept) == len(given.entries) else ExpectedErrors(kept, source=given.source)


def _utc_time(text: Any) -> dt.datetime | None:
    """An ISO time of a learned entry's stats (written by baseline.fleet.expected), None when
    absent or unreadable (a hand-edited file: the host's findings are then kept throughout)."""
    if text is None:
        return None
    if isinstance(text, dt.datetime):
        return text if text.tzinfo else text.replace(tzinfo=dt.UTC)
    try:
        t = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def update_regressions(findings: pl.DataFrame, expected: ExpectedErrors,
                       releases: pl.DataFrame | None) -> pl.DataFrame:
    """Findings of a learned family marked ``update_regression`` (baseline.fleet.expected: routine
    on some hosts, come with a kernel update on others) are not expected on the hosts that show
    it only on a release they switched to during the window: there it is the update's
    regression. Nothing to do (no column built) without such a family."""
    findings = fatal_hosts_kept(findings, expected)
    fams = [(e.context, e.probe, e.errno) for e in expected.entries
            if e.status == "active" and e.source == "learned" and (e.stats or {}).get("update_regression")]
    if not fams or releases is None or findings.is_empty():
        return findings
    text = pl.col("operation", "probe", "errno", "host", "kernel_release").cast(pl.String)
    fam = pl.DataFrame(fams, schema={"operation": pl.String, "probe": pl.String, "errno": pl.String}, orient="row")
    rel = releases.select(pl.col("host", "kernel_release").cast(pl.String), "new_release")
    mine = (
        findings.lazy().select("trace_id", text).join(fam.lazy(), on=["operation", "probe", "errno"], how="semi")
        .join(rel.lazy(), on=["host", "kernel_release"], how="left")
        .filter(pl.col("new_release").fill_null(False).all().over("operation", "probe", "errno", "host"))
        .select("trace_id").collect()
    )
    if mine.is_empty():
        return findings
    return findings.with_columns(pl.col("expected") & ~pl.col("trace_id").is_in(mine["trace_id"].implode()))


def seen_through_coverage_gaps(findings: pl.DataFrame, expected: ExpectedErrors,
                               attached: pl.DataFrame | None) -> pl.DataFrame:
    """Findings of a learned family seen on a host whose probe set lacks the family's origin
    probe are expected: their origin is a frame the family's errno propagates through (its
    `covers`: same operation and errno), the deepest the host's probes could show. A tracer run
    with a reduced set (the uverbs handlers only) sees tenant kite's routine RAW_PACKET EPERM at
    ib_uverbs_create_qp, not at create_qp where the full hosts learned it; learned there as a
    family of its own from a handful of hosts, whose later good calls only capture windows
    record, it looked fatal and stayed open (fleetgen13's `rdma-min` pod: 80 false findings).
    A host that had the origin probe attached at any time in the window keeps its finding (the
    error arose above the probe there); `attached`: the counters' (host, probe) pairs, None
    without counters (nothing is judged)."""
    fams = [(e.context, p, e.errno, e.probe) for e in expected.entries
            if e.status == "active" and e.source == "learned" and e.context
            for p in (e.stats or {}).get("covers") or [] if p != e.probe]
    if not fams or attached is None or attached.is_empty() or findings.is_empty():
        return findings
    fam = pl.DataFrame(fams, schema={"operation": pl.String, "probe": pl.String, "errno": pl.String,
                                     "_origin": pl.String}, orient="row")
    have = attached.select(pl.col("host", "probe").cast(pl.String)).unique()
    reporting = have.select("host").unique()
    gaps = (
        findings.lazy().filter(~pl.col("expected"))
        .select("trace_id", pl.col("host", "operation", "probe", "errno").cast(pl.String))
        .join(reporting.lazy(), on="host", how="semi")
        .join(fam.lazy(), on=["operation", "probe", "errno"])
        .join(have.lazy().rename({"probe": "_origin"}), on=["host", "_origin"], how="anti")
        .select("trace_id").unique().collect()
    )
    if gaps.is_empty():
        return findings
    return findings.with_columns(pl.col("expected") | pl.col("trace_id").is_in(gaps["trace_id"].implode()))


# --------------------------------------------------------------------------------------------
# per-trace analysis (vectorised over all traces of a batch)
# --------------------------------------------------------------------------------------------
def analyse_traces(
    events: pl.LazyFrame | pl.DataFrame,
    model: GoodTraceBaseline,
    expected: ExpectedErrors,
    min_layers: int = 4,
    unsampled: pl.Series | None = None,
    unshowable: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per trace that needs a finding: layered evidence, bifurcation, expected flag.
    `unsampled`: trace ids whose platform (kernel release) has no good trace of their operation
    in the model (see `unsampled_platforms`): their bifurcation is their origin.
    `unshowable`: (operation, probe) pairs no good trace of the operation could have shown (see
    `unshowable_probes`): a successful frame of such a probe is no divergence."""
    lf = events.lazy()
    # traces with at least one error frame
    lf = lf.filter(pl.col("errno").is_not_null().any().over("trace_id"))
    depth = max_depth_of(lf)
    frames = model.explain_frames(lf).with_columns(
        pl.col("errno").is_not_null().alias("is_err"),
        ((pl.col("depth").shift(-1) > pl.col("depth")) & (pl.col("trace_id").shift(-1) == pl.col("trace_id")))
        .fill_null(False)
        .alias("has_children"),
    )
    frames = frames.collect(engine="streaming")
    if frames.is_empty():
        return pl.DataFrame()
    pairs = frames.filter(pl.col("is_err")).select("probe", "errno", "operation").unique()
    frames = frames.join(_expected_lookup(pairs, expected), on=["probe", "errno", "operation"], how="left").with_columns(
        pl.col("is_expected", "_absorbed_only").fill_null(False)
    )
    # failing chain: error frames whose ancestors all carry an error
    lf2 = frames.lazy().with_columns(*ancestor_columns("errno", depth, "_e"), *ancestor_columns("layer", depth, "_l"))
    lf2 = lf2.with_columns(pl.when(pl.col("depth") == 0).then(pl.col("is_err")).forward_fill().alias("_c0"))
    for d in range(1, depth + 1):
        lf2 = lf2.with_columns(
            pl.when(pl.col("depth") == d).then(pl.col("is_err") & pl.col(f"_c{d - 1}")).forward_fill().alias(f"_c{d}")
        )
    chain = pl.lit(False)
    for d in range(depth, -1, -1):
        chain = pl.when(pl.col("depth") == d).then(pl.col(f"_c{d}")).otherwise(chain)
    lf2 = lf2.with_columns(
        chain.fill_null(False).alias("on_chain"),
        (pl.col("known_edge") & pl.col("known_error")).alias("explained"),
    )
    # ok_d: the ancestor at depth d carries the frame's own errno, as do all between it and the frame
    ok = pl.lit(True)
    stop = pl.col("depth")
    for d in range(depth - 1, -1, -1):
        ok = pl.when(pl.col("depth") > d).then(ok & (pl.col(f"_e{d}") == pl.col("errno")).fill_null(False)).otherwise(True)
        stop = pl.when(ok & (pl.col("depth") > d)).then(pl.lit(d)).otherwise(stop)
    stop_layer = pl.col("layer")
    for d in range(depth, -1, -1):
        stop_layer = pl.when(pl.col("_stop") == d).then(pl.col(f"_l{d}")).otherwise(stop_layer)
    layers_on_path = pl.concat_list([pl.col(f"_l{d}") for d in range(depth + 1)])
    lf2 = lf2.with_columns(stop.alias("_stop")).with_columns(
        stop_layer.alias("stop_layer"),
        pl.concat_str(
            [
                pl.when(pl.col("depth") >= d).then(
                    pl.concat_str([pl.col(f"_l{d}"), pl.col(f"_e{d}").fill_null("ok")], separator=":")
                )
                for d in range(depth + 1)
            ],
            separator=">",
            ignore_nulls=True,
        ).alias("_pattern_all"),
        layers_on_path.alias("_layers"),
    )
    frames = _with_failed_callee(lf2.collect(), depth)
    root_failed = frames.group_by("trace_id").agg(
        (pl.col("is_err") & (pl.col("depth") == 0)).any().alias("root_failed")
    )
    frames = frames.join(root_failed, on="trace_id")
    # origin: the deepest chain frame (failing root), else the first unexplained unexpected error
    # that is an origin itself (none of its callees failed: the learner's unit, chain_origins --
    # a frame passing a callee's error on, or turning it into another, before the operation
    # absorbed it is that error's path, not a cause of its own: ALLOC_Q_COUNTER's NO_RES EAGAIN
    # up through __rdma_counter_bind_qp, turned into ENOMEM by rdma_counter_bind_qp_auto, which
    # _ib_modify_qp ignores, was a finding at __rdma_counter_bind_qp though both origins were
    # learned: tests/fleetgen16), else (every error of a trace whose root succeeded is known-good
    # or expected) its first error, set aside: such a trace gets an expected finding rather than
    # none, so that routine errors are accounted as set aside
    origin_rank = (
        pl.when(pl.col("root_failed") & pl.col("on_chain"))
        .then(pl.col("depth").cast(pl.Int64) * 1_000_000 + pl.col("seq"))
        .when(~pl.col("root_failed") & pl.col("is_err") & ~pl.col("explained") & ~pl.col("is_expected")
              & ~pl.col("_callee_failed"))
        .then(-pl.col("seq"))
        .when(~pl.col("root_failed") & pl.col("is_err"))
        .then(-(1 << 40) - pl.col("seq"))
        .otherwise(None)
    )
    frames = frames.with_columns(origin_rank.alias("_origin_rank"))
    origin = (
        frames.filter(pl.col("_origin_rank").is_not_null())
        .sort("_origin_rank", descending=True)
        .group_by("trace_id", maintain_order=True)
        .first()
    )
    # a divergence needs a known-good shape to diverge from: in an operation no good trace was
    # sampled for, every edge is unknown, and the bifurcation is the origin frame
    known_ops = model.operations_.select(pl.col("operation").cast(pl.String))["operation"].implode()
    # nor is a successful call made *inside* the origin frame (its descendants) a divergence:
    # the origin failed after it; with sampled good traces the good shape below it may simply
    # never have been sampled on this platform, and the origin is the informative frame
    o = origin.select("trace_id", pl.col("seq").alias("_o_seq"), pl.col("depth").alias("_o_depth"))
    after = pl.col("seq") > pl.col("_o_seq")
    left = (after & (pl.col("depth") <= pl.col("_o_depth"))).cast(pl.Int32).cum_sum().over("trace_id") > 0
    inside_origin = (after & ~left).fill_null(False)
    # nor is a call made after the origin returned (the caller's error unwind: an abort of the
    # half-created object, a destroy of what it had built): it follows the failure, it cannot be
    # where the trace left good behaviour, and good traces never make it
    past_origin = left.fill_null(False)
    # nor is a successful call of a probe attached only after the operation's last good traces
    # were recorded (a probe added to the set mid-day): no good trace could show its edge
    if unshowable is not None and unshowable.height:
        late = unshowable.select(pl.col("operation", "probe").cast(pl.String)).with_columns(pl.lit(True).alias("_late"))
        frames = (frames.with_columns(pl.col("operation").cast(pl.String).alias("_op_s"), pl.col("probe").cast(pl.String).alias("_pr_s"))
                  .join(late, left_on=["_op_s", "_pr_s"], right_on=["operation", "probe"], how="left", maintain_order="left")
                  .with_columns((pl.col("_late").fill_null(False) & pl.col("errno").is_null()).alias("_late"))
                  .drop("_op_s", "_pr_s"))
    else:
        frames = frames.with_columns(pl.lit(False).alias("_late"))
    divergence = (
        frames.join(o, on="trace_id", how="left")
        .sort("trace_id", "seq")
        .filter(~pl.col("known_edge") & pl.col("operation").cast(pl.String).is_in(known_ops)
                & ~(inside_origin & pl.col("errno").is_null()) & ~past_origin & ~pl.col("_late")
                & (~pl.col("trace_id").is_in(unsampled.implode()) if unsampled is not None else pl.lit(True)))
        .sort("seq")
        .group_by("trace_id", maintain_order=True)
        .agg(pl.col("probe").first().alias("div_probe"), pl.col("errno").first().alias("div_errno"),
             pl.col("seq").first().alias("div_seq"))
    )
    trace_layers = frames.group_by("trace_id").agg(pl.col("layer").n_unique().alias("trace_layers"))
    out = (
        origin.join(divergence, on="trace_id", how="left")
        .join(trace_layers, on="trace_id", how="left")
        .with_columns(
            # path layers from root to origin, errno per layer (consecutive duplicates collapsed)
            pl.col("_pattern_all").alias("pattern"),
            pl.col("_layers").list.slice(0, pl.col("depth").cast(pl.Int64) + 1).list.drop_nulls().list.n_unique().alias("chain_layers"),
        )
    )
    out = out.with_columns(
        (
            pl.col("root_failed")
            & (pl.col("_stop") == 0)
            & ~pl.col("has_children")
            & (pl.col("chain_layers") >= min_layers)
        ).alias("deeper_than_probes"),
        pl.coalesce(pl.col("div_probe"), pl.col("probe")).alias("bifurcation_probe"),
        pl.when(pl.col("div_probe").is_not_null()).then(pl.col("div_errno")).otherwise(pl.col("errno")).alias("bifurcation_errno"),
        pl.coalesce(pl.col("div_seq"), pl.col("seq")).alias("bifurcation_seq"),
        pl.col("layer").alias("origin_layer"),
        # (a family routine only where absorbed is a finding where the operation returned it)
        ((pl.col("is_expected") & ~(pl.col("root_failed") & pl.col("_absorbed_only")))
         | (pl.col("_origin_rank") < -(1 << 40) + 1)).alias("expected"),
    )
    out = out.with_columns(
        pl.col("pattern").map_elements(_collapse_pattern, return_dtype=pl.String).alias("pattern"),
    )
    return out.select(
        "trace_id", "host", "job_id", pl.col("start_time").alias("time"), "operation", "expected",
        "bifurcation_probe", "bifurcation_errno", "bifurcation_seq", "origin_layer", "stop_layer",
        "deeper_than_probes", "pattern", pl.col("div_probe").alias("divergence"), "probe", "errno",
    )


def _with_failed_callee(frames: pl.DataFrame, max_depth: int) -> pl.DataFrame:
    """`frames` (pre-order rows sorted by trace_id, seq) with `_callee_failed`: a frame one of
    whose direct callees returned an error (the frame passes it on, or turns it into another),
    so it is no origin of its own (as in expected.chain_origins)."""
    rows = frames.with_row_index("_row")
    last_at = [pl.when(pl.col("depth") == d).then(pl.col("_row")).forward_fill().alias(f"_r{d}")
               for d in range(max_depth)]
    parent = pl.lit(None, pl.UInt32)
    for d in range(max_depth, 0, -1):
        parent = pl.when(pl.col("depth") == d).then(pl.col(f"_r{d - 1}")).otherwise(parent)
    # the parent row must be of the same trace (a tree whose frame at depth d-1 is not probed
    # has none): the join on both keys drops another trace's row
    failed_parents = (rows.lazy().with_columns(last_at)
                      .filter(pl.col("is_err") & (pl.col("depth") > 0))
                      .select(parent.alias("_row"), "trace_id").unique()
                      .with_columns(pl.lit(True).alias("_callee_failed")).collect())
    return (rows.join(failed_parents, on=["_row", "trace_id"], how="left", maintain_order="left")
            .with_columns(pl.col("_callee_failed").fill_null(False)).drop("_row"))


FINDING_COLUMNS = {**polars_schema("findings"), "pattern": pl.String, "divergence": pl.String,
                   "probe": pl.String, "errno": pl.String}


def findings_of(
    traces: pl.DataFrame,
    chains: pl.DataFrame,
    model: GoodTraceBaseline,
    expected: ExpectedErrors,
    min_layers: int = 4,
    releases: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Findings for every trace with an error frame: analyse_traces runs once per distinct
    chain (on its representative trace) and the result is joined to all traces of that chain.

    A truncated trace (lost_events > 0: the tracer lost its deepest frames) is matched to a
    cause by its prefix: the complete failing chain of the same operation whose frames down to
    the truncated tree's depth are the same, the most frequent if several; failing that, the
    one whose frame sequence begins with the truncated tree's (a record that ran out of room
    lost the frames entered last, whatever their depth). It takes that
    chain's analysis (cluster, bifurcation, origin, expected) and its signature says the origin
    is at or below its deepest recorded frame. With no complete chain to match, its own
    analysis stands, and so does the "at or below" (never "deeper than probes")."""
    return _findings_of_failing(_failing(traces), chains, model, expected, min_layers=min_layers, releases=releases)


def unsampled_platforms(failing: pl.DataFrame, reps: pl.DataFrame, model: GoodTraceBaseline,
                        releases: pl.DataFrame | None) -> pl.Series | None:
    """Representative trace ids of the chains seen only on kernel releases with no good trace
    of their operation in the model. A divergence needs a known-good shape *of the same
    platform*: a release names some functions differently or calls others (OFED's
    ib_umem_get_peer where upstream calls ib_umem_get; a helper a driver version adds), and good
    traces are sampled, so on a small fleet a release may have none of an operation; the other
    releases' shapes then make every such difference look like the point where the trace left
    good behaviour. Its origin is the informative frame. Vendors are not told apart: the model
    masks driver namespaces (a good chain of one vendor is the shape for the others).
    None when nothing can be told: no releases, or none of the model's hosts of an operation
    in the audited data (a model learned on another dataset)."""
    if releases is None or reps.is_empty() or "kernel_release" not in failing.columns:
        return None
    rel = releases.select(pl.col("host", "kernel_release").cast(pl.String)).unique()
    sampled = (model.op_hosts_.select(pl.col("operation", "host").cast(pl.String))
               .join(rel, on="host").select("operation", "kernel_release").unique())
    if sampled.is_empty():
        return None
    key = ["operation", "chain_hash"]
    # millions of failing traces, few (chain, release) pairs: reduced on the categorical codes,
    # text built for the pairs only
    seen = (failing.lazy().select("operation", "chain_hash", "kernel_release").unique().collect()
            .with_columns(pl.col("operation", "kernel_release").cast(pl.String)).drop_nulls("kernel_release"))
    # an operation whose model hosts are all outside the audited data: nothing to tell from
    informative = sampled.select("operation").unique()
    seen = seen.join(informative, on="operation", how="semi")
    hit = seen.join(sampled.with_columns(pl.lit(True).alias("_s")), on=["operation", "kernel_release"], how="left")
    unsampled_chains = (hit.group_by(key).agg(pl.col("_s").any().fill_null(False).alias("_any"))
                        .filter(~pl.col("_any")).select(key))
    if unsampled_chains.is_empty():
        return None
    ids = reps.select(pl.col("operation").cast(pl.String), "chain_hash", "trace_id").unique("trace_id")
    return ids.join(unsampled_chains, on=key, how="semi")["trace_id"]


def unshowable_probes(traces: pl.DataFrame, attributes: pl.DataFrame | None) -> pl.DataFrame | None:
    """(operation, probe) pairs whose probe was attached on no host before that host's last good
    trace of the operation (a bucket's margin: the counters' first bucket of a probe says when
    it was attached to the bucket, not to the second). An edge no good trace has is evidence of
    a divergence only where a good trace could have shown it: a probe added to the set mid-day
    (pin_user_pages_fast at noon) appears in failure records at once, but in a good trace of an
    operation only once a capture window samples one, hours later on a small fleet. Probes
    the counters never saw are not judged (None: no counters)."""
    if attributes is None or attributes.is_empty() or traces.is_empty():
        return None
    flags = trace_flags(set(traces.columns))
    good = (traces.lazy().filter(~flags["has_error"] & ~flags["root_failed"])
            .group_by("host", "operation").agg(pl.col("start_time").max().alias("_last"))
            .select(pl.col("host").cast(pl.String), pl.col("operation").cast(pl.String), "_last").collect())
    attached = (attributes.lazy().group_by("host", "probe").agg(pl.col("bucket").min().alias("_first"))
                .select(pl.col("host", "probe").cast(pl.String), "_first").collect())
    ops = good.select("operation").unique()
    shown = (good.lazy().join(attached.lazy(), on="host")
             .filter(pl.col("_last") >= pl.col("_first") + pl.duration(nanoseconds=BUCKET_NS))
             .select("operation", "probe").unique().collect(engine="streaming"))
    every = ops.join(attached.select("probe").unique(), how="cross")
    return every.join(shown, on=["operation", "probe"], how="anti")


def _failing(traces: pl.DataFrame) -> pl.DataFrame:
    """The per-trace table's traces with an error frame, in the columns findings_of uses, and
    the failure records that lost every error frame: a truncated record (lost_events > 0) keeps
    the frames entered first, so an error its operation absorbed (the root succeeded; a pin the
    peer-memory path rescued) can be entirely in the lost tail. The tracer emitted it because a
    call failed (kind failure): it is matched to a cause by its prefix like any truncated tree."""
    return _filter_by_column(_failing_columns(traces), "_failing")


def _failing_columns(traces: pl.DataFrame) -> pl.DataFrame:
    """The columns of `_failing` for every trace, and `_failing` (the row is one of its traces):
    the plain columns share the per-trace table's memory (no copy). run_audit frees the table,
    then filters these a column at a time (_filter_by_column): the filter of the whole table
    held the failing traces' copy beside the table it came from (most traces of a fleet-day
    fail somewhere: ~230 of its ~290 MiB, the audit's peak once the host alerts were leaner)."""
    cols = set(traces.columns)
    flags = trace_flags(cols)
    return traces.select(
        "trace_id", "host", "job_id", pl.col("start_time").alias("time"), "operation", "chain_hash",
        flags["truncated"],
        (pl.col("kernel_release") if "kernel_release" in cols else pl.lit(None, pl.String)).alias("kernel_release"),
        flags["weight"], (pl.col("comm") if "comm" in cols else pl.lit(None, pl.String)).cast(pl.Categorical).alias("comm"),
        (flags["has_error"] | flags["lost_errors"]).alias("_failing"),
    )


def _filter_by_column(frame: pl.DataFrame, mask: str) -> pl.DataFrame:
    """`frame`'s rows where its boolean column `mask` is true, without it, filtered a column at a
    time, each column dropped from `frame` once its filtered copy exists: when the caller holds
    no other reference to the columns, their memory goes as the copies are made, and at most one
    column is held twice (a filter of the whole frame holds every column twice at its end)."""
    keep = frame.get_column(mask)
    frame = frame.drop(mask)
    columns = []
    for name in frame.columns:
        # in one chunk: the per-trace table comes in one chunk per events batch, and a frame of
        # these beside columns made in one piece (the findings' chain columns) is rechunked by
        # the next select, a copy of every such column at the audit's peak (~210 MiB on a
        # 10,000-host day); here the copy is one column's, made while the old one is dropped
        columns.append(frame.get_column(name).filter(keep).rechunk())
        frame = frame.drop(name)
    return pl.DataFrame(columns, schema={c.name: c.dtype for c in columns})


def _findings_of_failing(
    failing: pl.DataFrame,
    chains: pl.DataFrame,
    model: GoodTraceBaseline,
    expected: ExpectedErrors,
    min_layers: int = 4,
    releases: pl.DataFrame | None = None,
    unshowable: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """findings_of on `_failing(traces)` (run_audit frees the per-trace table before this);
    `unshowable`: see analyse_traces."""
    key = ["operation", "chain_hash"]
    reps = chains.join(failing.lazy().select(key).unique().collect(engine="streaming"), on=key, how="semi")
    unsampled = unsampled_platforms(failing, reps, model, releases)
    analysed = (analyse_traces(reps.drop(key), model, expected, min_layers=min_layers, unsampled=unsampled,
                               unshowable=unshowable)
                if reps.height else pl.DataFrame())
    if analysed.is_empty():
        return pl.DataFrame(schema=FINDING_COLUMNS).drop(["cluster_id", "score"])
    # everything but the trace's own id, host, job and time is a property of its chain: the
    # signature is built once per chain and the per-chain strings travel as categoricals
    # (millions of findings, a few hundred distinct values)
    per_chain = (
        analysed.drop("host", "job_id", "time", "operation")
        .join(reps.select("trace_id", *key).unique(), on="trace_id")
        .drop("trace_id")
        .with_columns(signature_expr().alias("signature"))
    )
    per_chain = per_chain.with_columns(pl.lit(False).alias("truncated"))
    if failing["truncated"].any():
        per_chain = pl.concat([per_chain, _truncated_analysis(failing, reps, per_chain)], how="vertical_relaxed")
    text = [c for c, t in per_chain.schema.items() if t == pl.String and c != "operation"]
    per_chain = per_chain.with_columns(pl.col(text).cast(pl.Categorical))
    # the failing traces take their chain's columns by a row number into per_chain (one row per
    # key), not by a join: a join copies every column of the millions of failing rows too, the
    # audit's memory peak; this way those columns are shared and only the chain columns are built
    on = [*key, "truncated"]
    # a slice of the failing traces at a time: the join of all of them at once held ~400 MiB of
    # hash-join state beside them on a 10,000-host day (4.2M rows against a few hundred chains),
    # the audit's memory peak; a slice's is a tenth of it, and the row numbers are the same
    chain_rows = per_chain.select(on).with_row_index("_row")
    row = pl.concat([part.select(on).join(chain_rows, on=on, how="left", maintain_order="left")["_row"]
                     for part in failing.iter_slices(ROW_JOIN_SLICE_ROWS)], rechunk=True)
    if row.null_count():  # a trace whose chain has no analysis gets no finding (as an inner join)
        failing, row = failing.filter(row.is_not_null()), row.drop_nulls()
    chain_cols = [c for c in (*analysed.columns[5:], "signature") if c not in on]
    per_row = per_chain.select(chain_cols).gather(row)
    out = pl.concat([failing, per_row], how="horizontal")
    return out.select(
        "trace_id", pl.col("host", "job_id", "operation").cast(pl.Categorical), "time", *analysed.columns[5:],
        "signature", "truncated", pl.col("kernel_release").cast(pl.Categorical), "weight", "comm",
    )


def _frame_key(grp: pl.DataFrame, max_depth: int | None = None) -> tuple:
    rows = zip(grp["depth"].to_list(), grp["probe"].to_list(), grp["errno"].to_list(), strict=True)
    return tuple((d, p, e) for d, p, e in rows if max_depth is None or d <= max_depth)


def _sequence_match(sequences_of: Callable[[str | None, str], list], release: str, op: str,
                    frames: tuple) -> tuple[int, tuple] | None:
    """The most frequent complete chain of `op` (on `release` first, then any) that begins with
    exactly `frames` and goes on: (count, chain key), or None. Failing that, the same with a
    loop's turns folded on both sides (`_folded`): a record cut inside a loop longer than any
    complete chain's (reg_mr's pin_user_pages_fast, 512 pages a call, 58 calls deep into a
    116 MiB region that no complete record of the day reached) begins with no complete chain,
    but its folded frames begin every such chain's folded ones."""
    for rel in (release, None):
        best = max(((n, key) for n, full, key in sequences_of(rel, op)
                    if len(full) > len(frames) and full[:len(frames)] == frames), default=None)
        if best is not None:
            return best
    folded = _folded(frames)
    for rel in (release, None):
        best = max(((n, key) for n, full, key in sequences_of(rel, op)
                    if len(f := _folded(full)) > len(folded) and f[:len(folded)] == folded), default=None)
        if best is not None:
            return best
    return None


@functools.lru_cache(maxsize=4096)  # each complete chain is folded once, not once per truncated chain
def _folded(frames: tuple) -> tuple:
    """`frames` with each repeated turn of a loop of one to three frames kept once (as the
    differ's loop compression folds repeated n-grams): how many turns a loop took is how long
    its input was."""
    seq = list(frames)
    for n in (1, 2, 3):
        out: list = []
        for frame in seq:
            out.append(frame)
            if len(out) >= 2 * n and out[-n:] == out[-2 * n:-n]:
                del out[-n:]
        seq = out
    return tuple(seq)


def _truncated_analysis(failing: pl.DataFrame, reps: pl.DataFrame, per_chain: pl.DataFrame) -> pl.DataFrame:
    """per_chain rows (truncated = True) for the chains of truncated traces (see findings_of)."""
    key = ["operation", "chain_hash"]
    frames = reps.select(pl.col("operation").cast(pl.String), "chain_hash", "seq", "depth",
                         pl.col("probe").cast(pl.String), pl.col("errno").cast(pl.String),
                         pl.col("layer").cast(pl.String)).sort([*key, "seq"])
    by_chain = {(op, h): grp for (op, h), grp in frames.group_by(key, maintain_order=True)}
    # complete failing chains per platform (kernel release): a truncated tree is matched to the
    # chains its own platform produces first (an OFED and an upstream kernel share a prefix but
    # not the frames below it), then to any
    release = pl.col("kernel_release").cast(pl.String).fill_null("")
    # lazy: the filters of millions of failing traces gather only the columns grouped
    counts = (
        failing.lazy().filter(~pl.col("truncated")).group_by(pl.col("operation").cast(pl.String), "chain_hash", release)
        .agg(pl.col("weight").sum().alias("n")).collect()
    )
    wanted = (
        failing.lazy().filter(pl.col("truncated"))
        .group_by(pl.col("operation").cast(pl.String), "chain_hash")
        .agg(release.mode().sort().first()).collect()
    )
    prefixes: dict[tuple, tuple[int, tuple]] = {}  # (release, op, depth, frames) -> (count, chain key)
    depths = {}
    for op, h, _rel in wanted.iter_rows():
        grp = by_chain.get((op, h))
        if grp is not None:
            depths[(op, h)] = int(grp["depth"].max())
    totals: dict[tuple, int] = {}
    for op, h, rel, n in counts.iter_rows():
        for r in (rel, None):
            totals[(r, op, h)] = totals.get((r, op, h), 0) + n
    for (rel, op, h), n in totals.items():
        grp = by_chain.get((op, h))
        if grp is None:
            continue
        for d in {d for (o, _), d in depths.items() if o == op}:
            k = (rel, op, d, _frame_key(grp, d))
            if n > prefixes.get(k, (0, None))[0]:
                prefixes[k] = (n, (op, h))
    # a record that ran out of room loses the frames entered last instead (the tail in entry
    # order, whatever their depth): the complete chains of an operation by their whole frame
    # sequence, built only for the truncated chains the depth prefix does not match
    sequences: dict[tuple, list[tuple[int, tuple, tuple]]] = {}  # (release, op) -> [(count, frames, chain key)]

    def sequences_of(rel: str | None, op: str) -> list[tuple[int, tuple, tuple]]:
        if (rel, op) not in sequences:
            sequences[(rel, op)] = [(n, _frame_key(by_chain[(o, h)]), (o, h)) for (r, o, h), n in totals.items()
                                    if r == rel and o == op and (o, h) in by_chain]
        return sequences[(rel, op)]
    own_release = {(op, h): rel for op, h, rel in wanted.iter_rows()}
    pc = per_chain.with_columns(pl.col("operation").cast(pl.String))
    rows = []
    for (op, h), d in depths.items():
        grp = by_chain[(op, h)]
        deepest = grp.sort("depth", descending=True, maintain_order=True).row(0, named=True)
        frames_key = _frame_key(grp)
        match = (prefixes.get((own_release[(op, h)], op, d, frames_key)) or prefixes.get((None, op, d, frames_key))
                 or _sequence_match(sequences_of, own_release[(op, h)], op, frames_key))
        src = match[1] if match else (op, h)
        row = pc.filter((pl.col("operation") == src[0]) & (pl.col("chain_hash") == src[1]))
        if row.is_empty():
            continue
        note = f" [truncated: origin at or below {deepest['probe']} ({deepest['layer']})]"
        row = row.with_columns(pl.lit(op).alias("operation"), pl.lit(h, pl.UInt64).alias("chain_hash"),
                               pl.lit(True).alias("truncated"),
                               pl.concat_str([pl.col("signature"), pl.lit(note)]).alias("signature"))
        if match is None:
            row = row.with_columns(pl.lit(False).alias("deeper_than_probes"))
        rows.append(row)
    if not rows:
        return per_chain.clear()
    out = pl.concat(rows, how="vertical_relaxed")
    return out.with_columns(pl.col("operation").cast(per_chain.schema["operation"]))


def _collapse_pattern(text: str | None) -> str | None:
    if text is None:
        return None
    out: list[str] = []
    for part in text.split(">"):
        if not out or out[-1] != part:
            out.append(part)
    return ">".join(out)


# --------------------------------------------------------------------------------------------
# signatures and clusters
# --------------------------------------------------------------------------------------------
def signature_expr() -> pl.Expr:
    deeper = pl.when(pl.col("deeper_than_probes")).then(pl.lit(" (deeper than probes)")).otherwise(pl.lit(""))
    diverge = pl.when(pl.col("divergence").is_not_null()).then(
        pl.concat_str([pl.lit(" | diverges at "), pl.col("divergence")])
    ).otherwise(pl.lit(""))
    return pl.concat_str(
        [
            pl.col("operation"), pl.lit(": "), pl.col("bifurcation_probe"), pl.lit(" "),
            pl.col("bifurcation_errno").fill_null("(path)"), pl.lit(" | origin "), pl.col("origin_layer").fill_null("?"),
            deeper, pl.lit(" | "), pl.col("pattern").fill_null(""), diverge,
        ]
    )


def _tokens(row: dict[str, Any]) -> dict[str, float]:
    def mask(v: Any) -> str:  # vendor namespaces and OFED/upstream twins name the same code
        return VENDOR_PREFIX.sub("<drv>_", str(v)).replace("__ib_umem_get", "ib_umem_get")

    return {
        f"op={row['operation']}": 1.0,
        f"bif={mask(row['bifurcation_probe'])}:{row['bifurcation_errno']}": 1.0,
        f"errno={row['errno']}": 1.0,
        f"origin={row['origin_layer']}": 1.0,
        f"pattern={row['pattern']}": 1.0,
        f"div={mask(row['divergence'])}": 1.0,
        f"deeper={row['deeper_than_probes']}": 1.0,
    }


def cluster_signatures(signatures: pl.DataFrame) -> np.ndarray:
    """Cluster labels for unique signature rows: agglomerative clustering (complete linkage,
    manhattan distance, cut at 0.5) of the one-hot signature tokens; distance 0 after vendor
    masking merges, anything else splits.

    The labels are scikit-learn's, `AgglomerativeClustering(distance_threshold=0.5,
    metric="manhattan", linkage="complete").fit_predict` of the tokens one-hot encoded (scipy's
    nearest-neighbour chain, then scikit-learn's cut of the tree), computed here without
    importing scikit-learn: a fleet-day has a few dozen distinct signatures, and the import
    (scipy.stats and friends) cost 2.5-3 CPU s and ~110 MiB of RSS, the clustering itself
    milliseconds. The label values matter, not only the partition: clusters of equal size are
    numbered in label order (cluster_findings)."""
    if signatures.height == 0:
        return np.zeros(0, dtype=int)
    if signatures.height == 1:
        return np.zeros(1, dtype=int)
    rows = [_tokens(r) for r in signatures.iter_rows(named=True)]
    names = {name: i for i, name in enumerate(sorted({k for r in rows for k in r}))}
    x = np.zeros((len(rows), len(names)))
    for i, r in enumerate(rows):
        for k, v in r.items():
            x[i, names[k]] = v
    # manhattan distances row by row (a few dozen rows; no n x n x features array)
    dist = np.stack([np.abs(x - x[i]).sum(axis=1) for i in range(len(x))])
    return _cut_tree(_complete_linkage(dist), threshold=0.5)


def _complete_linkage(dist: np.ndarray) -> np.ndarray:
    """scipy.cluster.hierarchy.linkage(method="complete") of the square distance matrix `dist`:
    the (n-1, 4) linkage matrix, step for step as scipy makes it (the nearest-neighbour chain,
    whose ties go to the chain's previous element, else to the lowest index; merges stably
    sorted by distance; then relabelled by union-find), so the tree -- and the labels cut from
    it -- are the same whatever ties the distances hold."""
    n = len(dist)
    d = dist.astype(np.float64, copy=True)
    np.fill_diagonal(d, np.inf)
    size = np.ones(n, dtype=np.int64)
    z = np.empty((n - 1, 4))
    chain: list[int] = []
    for k in range(n - 1):
        if not chain:
            chain.append(int(np.flatnonzero(size)[0]))
        while True:
            x = chain[-1]
            row = np.where(size > 0, d[x], np.inf)
            row[x] = np.inf
            low = int(np.argmin(row))  # the first index of the minimum, as scipy's strict `<` scan
            if len(chain) > 1:
                y, current = chain[-2], d[x, chain[-2]]
                if row[low] < current:
                    y, current = low, row[low]
            else:
                y, current = low, row[low]
            if len(chain) > 1 and y == chain[-2]:
                break
            chain.append(y)
        del chain[-2:]
        if x > y:
            x, y = y, x
        z[k] = (x, y, current, size[x] + size[y])
        size[y] += size[x]
        size[x] = 0
        others = size > 0
        others[y] = False
        merged = np.maximum(d[x], d[y])[others]
        d[y, others] = merged
        d[others, y] = merged
    z = z[np.argsort(z[:, 2], kind="mergesort")]
    # cluster numbers: n + the merge's rank (scipy's `label`)
    parent = list(range(2 * n - 1))

    def find(i: int) -> int:
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    for k in range(n - 1):
        a, b = find(int(z[k, 0])), find(int(z[k, 1]))
        z[k, 0], z[k, 1] = min(a, b), max(a, b)
        parent[a] = parent[b] = n + k
    return z


def _cut_tree(z: np.ndarray, threshold: float) -> np.ndarray:
    """scikit-learn's labels for the linkage `z` cut at `threshold` (AgglomerativeClustering with
    distance_threshold: as many clusters as merges at or above it, plus one; `_hc_cut`'s heap of
    the nodes below the cut, a label per heap position)."""
    import heapq

    n = len(z) + 1
    children = z[:, :2].astype(int)
    clusters = int(np.count_nonzero(z[:, 2] >= threshold)) + 1
    nodes = [-(int(max(children[-1])) + 1)]
    for _ in range(clusters - 1):
        left, right = children[-nodes[0] - n]
        heapq.heappush(nodes, -int(left))
        heapq.heappushpop(nodes, -int(right))
    labels = np.zeros(n, dtype=np.intp)
    for i, node in enumerate(nodes):
        stack = [-node]
        while stack:
            top = stack.pop()
            if top < n:
                labels[top] = i
            else:
                stack.extend(int(c) for c in children[top - n])
    return labels


def merge_host_local(uniq: pl.DataFrame, labels: np.ndarray, open_: pl.LazyFrame, max_hosts: int = 2) -> np.ndarray:
    """Labels of `uniq` (unique signature rows) with the clusters of one host-local fault
    merged: a fault of one host's device (a dead firmware command interface, a NIC gone bad)
    fails whatever operation reaches it, with its layer's errno, so its signatures differ in
    the operation and the frames above the origin only. Signatures with the same errno and
    origin layer whose open findings come from the same `max_hosts` hosts or fewer, and from
    no other host, are one cause. A fleet-wide or multi-host cause never merges this way."""
    if len(labels) < 2:
        return labels
    # (host counts on the categorical codes first: text only for the few-host signatures)
    narrow = (open_.group_by("signature").agg(pl.col("host").n_unique().alias("_n"))
              .filter(pl.col("_n") <= max_hosts).select("signature"))
    few = (
        open_.join(narrow, on="signature", how="semi").select("signature", "host").unique().collect()
        .with_columns(pl.col("signature", "host").cast(pl.String))
        .group_by("signature").agg(pl.col("host").sort().str.join("\x1f").alias("_hosts"))
    )
    if few.height < 2:
        return labels
    keyed = (uniq.select(pl.col("signature").cast(pl.String), "errno", "origin_layer").with_row_index("_i")
             .join(few, on="signature"))
    out = labels.copy()
    for _, grp in keyed.group_by("errno", "origin_layer", "_hosts"):
        if grp.height < 2 or grp["errno"][0] is None:
            continue
        rows = grp["_i"].to_numpy()
        out[np.isin(out, out[rows])] = out[rows].min()
    return out


def cluster_findings(
    findings: pl.DataFrame, window: tuple[dt.datetime | None, dt.datetime | None],
    releases: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Assign cluster ids to the open findings; return (findings, clusters). With `releases`
    (kernel_releases), a cluster whose findings come from kernel releases hosts switched to
    during the window says so in its signature ("since kernel update to ...")."""
    if "signature" not in findings.columns:  # findings_of builds it per chain
        findings = findings.with_columns(signature_expr().alias("signature"))
    # lazy: a filter of millions of findings gathers only the columns a step uses
    open_ = findings.lazy().filter(~pl.col("expected"))
    sig_cols = ["signature", "operation", "bifurcation_probe", "bifurcation_errno", "errno", "origin_layer",
                "pattern", "divergence", "deeper_than_probes"]
    uniq = (
        open_.select(sig_cols).unique(subset=["signature"]).collect()
        .with_columns(pl.col(pl.Categorical).cast(pl.String)).sort("signature")
    )
    labels = merge_host_local(uniq, cluster_signatures(uniq), open_)
    sig_map = uniq.select(pl.col("signature").cast(findings.schema["signature"])).with_columns(
        pl.Series("_label", labels, dtype=pl.Int64)
    )
    # number clusters by size, biggest first
    weight = pl.col("weight").sum() if "weight" in findings.columns else pl.len()
    sized = (
        open_.join(sig_map.lazy(), on="signature").group_by("_label").agg(weight.alias("n")).collect()
        .sort(["n", "_label"], descending=[True, False])
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int32).alias("cluster_id"))
    )
    sig_map = sig_map.join(sized.select("_label", "cluster_id"), on="_label").drop("_label")
    # the cluster id by a join of the signature column alone, added as one column: a join of the
    # findings themselves copied every column of millions of rows (the audit's memory peak)
    ids = findings.select("signature").join(sig_map, on="signature", how="left", maintain_order="left")["cluster_id"]
    findings = findings.drop("cluster_id", strict=False).with_columns(
        pl.when(pl.col("expected")).then(None).otherwise(ids).alias("cluster_id")
    )
    used = [c for c in ("cluster_id", "signature", "weight", "host", "job_id", "time", "origin_layer", "trace_id",
                        "kernel_release") if c in findings.columns]
    clustered = findings.lazy().filter(pl.col("cluster_id").is_not_null()).select(used).collect()
    clusters = _cluster_table(clustered, window, releases=releases)
    return findings, clusters


# A cluster's hosts "share" a metadata value when every one of them shows that value and at
# least this share of all hosts showing it are the cluster's: the value marks the fault's hosts
# (a GPU driver version on a quarter of the fleet), not a fleet-wide default
SHARED_METADATA_COVER = 0.75
# A value some of those hosts (or a cluster's jobs) showed beside another of its key -- a driver
# updated during the window, a requeue count that rose with every failure -- names the cluster
# only when at least this share of its failures (weighted) carried it themselves
CARRIED_SHARE = 0.9


def host_metadata(dataset: Any, since: dt.datetime | None = None) -> pl.DataFrame:
    """host, key, value: the distinct job-metadata values of each host's traces (a pass over the
    events reading host, seq and metadata only; run_audit takes them from its events pass
    instead, collect_traces' `host_metadata`)."""
    from_footers: list[pl.DataFrame] = []
    parts = [metadata_pairs(lf).collect()
             for lf in event_batches(dataset, since=since, columns=["host", "seq", "metadata"],
                                     footer_metadata=from_footers)]
    return _metadata_of(parts + from_footers)


def _metadata_of(parts: list[pl.DataFrame]) -> pl.DataFrame:
    return pl.concat(parts).unique() if parts else pl.DataFrame(schema=METADATA_PAIRS_SCHEMA)


TraceMetadataReader = Callable[[pl.DataFrame], pl.DataFrame]


def name_shared_metadata(clusters: pl.DataFrame, findings: pl.DataFrame, metadata: pl.DataFrame,
                         read_traces: TraceMetadataReader | None = None) -> pl.DataFrame:
    """The clusters over two hosts or more whose hosts share a metadata value (see
    SHARED_METADATA_COVER) say so in their signature ("| hosts share gpu_driver=560.35.03 (12 of
    12 hosts with it)"): probe, errno and origin name the code, the value names what the SRE acts
    on (the hosts' driver version, when nothing else tells them apart). One host's cluster names
    the host already. A value some host showed beside another of its key names the cluster when
    its failures carried it (`carried_by_failures`, through `read_traces`: model.trace_metadata)."""
    if clusters.is_empty() or metadata.is_empty():
        return clusters
    on_hosts = (findings.lazy().filter(pl.col("cluster_id").is_not_null())
                .select("cluster_id", pl.col("host").cast(pl.String)).unique().collect())
    sizes = on_hosts.group_by("cluster_id").agg(pl.len().alias("_n")).filter(pl.col("_n") >= 2)
    # whether a host's traces show that value alone for its key
    alone = metadata.with_columns((pl.len().over("host", "key") == 1).alias("_alone"))
    holders = metadata.group_by("key", "value").agg(pl.col("host").n_unique().alias("_with"))
    key_hosts = metadata.group_by("key").agg(pl.col("host").n_unique().alias("_key_hosts"))
    shared = (
        on_hosts.join(sizes, on="cluster_id").join(alone, on="host")
        .group_by("cluster_id", "key", "value").agg(pl.len().alias("_have"), pl.col("_n").first(),
                                                    pl.col("_alone").all())
        .join(holders, on=["key", "value"]).join(key_hosts, on="key")
        .filter((pl.col("_have") == pl.col("_n")) & (pl.col("_n") >= SHARED_METADATA_COVER * pl.col("_with"))
                & (pl.col("_with") < pl.col("_key_hosts")))
    )
    shared = (
        carried_by_failures(shared, findings, read_traces)
        .sort("cluster_id", "key", "value")
        .group_by("cluster_id", maintain_order=True)
        .agg(pl.format("{}={} ({} of {} hosts with it)", "key", "value", "_have", "_with").str.join(", ")
             .alias("_shared"))
    )
    return _noted(clusters, shared.rename({"_shared": "_note"}), " | hosts share ")


def _noted(clusters: pl.DataFrame, notes: pl.DataFrame, label: str) -> pl.DataFrame:
    """`clusters` with `label` and the cluster's `_note` (notes: cluster_id, _note) after the
    signature of each cluster that has one."""
    if notes.is_empty():
        return clusters
    return (clusters.join(notes.with_columns(pl.col("cluster_id").cast(clusters.schema["cluster_id"])),
                          on="cluster_id", how="left", maintain_order="left")
            .with_columns(pl.when(pl.col("_note").is_not_null())
                          .then(pl.concat_str([pl.col("signature"), pl.lit(label), pl.col("_note")]))
                          .otherwise(pl.col("signature")).alias("signature"))
            .drop("_note"))


def carried_by_failures(candidates: pl.DataFrame, findings: pl.DataFrame,
                        read_traces: TraceMetadataReader | None) -> pl.DataFrame:
    """`candidates` (cluster_id, key, value, _alone, ...) less those not `_alone` (a host or job
    of the cluster showed the key's other values too) whose cluster's failures did not carry the
    value: at least CARRIED_SHARE of them (weighted), as their first frames show -- read for
    those clusters' failures only, on at most JOB_READ_HOSTS hosts (over that, or without a
    reader, only the values shown alone stay)."""
    unsure = candidates.filter(~pl.col("_alone"))
    if unsure.is_empty():
        return candidates
    sure = candidates.filter(pl.col("_alone"))
    weight = pl.col("weight") if "weight" in findings.columns else pl.lit(1.0)
    members = (findings.lazy().filter(pl.col("cluster_id").is_not_null())
               .select(pl.col("cluster_id").cast(candidates.schema["cluster_id"]),
                       pl.col("host", "trace_id").cast(pl.String), weight.cast(pl.Float64).alias("_w"))
               .join(unsure.lazy().select("cluster_id").unique(), on="cluster_id", how="semi").collect())
    if read_traces is None or members["host"].n_unique() > JOB_READ_HOSTS:
        return sure
    pairs = read_traces(members.select("host", "trace_id").unique())
    totals = members.group_by("cluster_id").agg(pl.col("_w").sum().alias("_total"))
    carried = (members.join(pairs, on=["host", "trace_id"])
               .group_by("cluster_id", "key", "value").agg(pl.col("_w").sum().alias("_carried")))
    confirmed = (unsure.join(carried, on=["cluster_id", "key", "value"]).join(totals, on="cluster_id")
                 .filter(pl.col("_carried") >= CARRIED_SHARE * pl.col("_total"))
                 .select(unsure.columns))
    return pl.concat([sure, confirmed])


# A value every failing job of a cluster carries names it when that many jobs would so seldom
# share it by chance: (share of the jobs on the cluster's hosts carrying it) ** (the cluster's
# jobs) at most JOB_CHANCE, over at least JOB_MIN jobs. The second read it takes is bounded by
# JOB_READ_HOSTS hosts (over that, no job-level name is looked for).
JOB_CHANCE = 1e-3
JOB_MIN = 3
JOB_READ_HOSTS = 2000


def name_shared_job_metadata(clusters: pl.DataFrame, findings: pl.DataFrame, metadata: pl.DataFrame,
                             read_jobs: Callable[[list[str]], pl.DataFrame],
                             read_traces: TraceMetadataReader | None = None) -> pl.DataFrame:
    """The clusters whose failing jobs all carry one job-metadata value that the jobs of their
    hosts seldom share say so ("| jobs share submit_host=login03 (52 of 52 jobs; 110 of 332 on
    its hosts)"): a login node's limits push kills the jobs submitted there on whichever hosts
    they ran (tests/fleetgen26), where the hosts share nothing -- what name_shared_metadata
    compares. `metadata`: the hosts' (host, key, value) pairs of the events pass, which pick the
    candidates (a value every host of the cluster shows) before `read_jobs(hosts)` (host,
    job_id, key, value of every job on those hosts: model.job_metadata) is read, for those only. A value
    some failing job showed beside another of its key (a requeue count that rose with each
    failure) names the cluster only when its failures carried it (carried_by_failures)."""
    if clusters.is_empty() or metadata.is_empty() or "job_id" not in findings.columns:
        return clusters
    opened = (findings.lazy().filter(pl.col("cluster_id").is_not_null())
              .select("cluster_id", pl.col("host", "job_id").cast(pl.String)).collect())
    sizes = opened.group_by("cluster_id").agg(pl.col("host").n_unique().alias("_hosts"),
                                              pl.col("job_id").drop_nulls().n_unique().alias("_jobs"))
    named = clusters.filter(pl.col("signature").str.contains(" | hosts share ", literal=True))["cluster_id"]
    sizes = sizes.filter((pl.col("_hosts") >= 2) & (pl.col("_jobs") >= JOB_MIN)
                         & ~pl.col("cluster_id").is_in(named.cast(sizes.schema["cluster_id"]).implode()))
    on_hosts = opened.select("cluster_id", "host").unique().join(sizes, on="cluster_id")
    candidates = (on_hosts.join(metadata.drop_nulls(), on="host")
                  .group_by("cluster_id", "key", "value").agg(pl.len().alias("_on"), pl.col("_hosts").first())
                  .filter(pl.col("_on") == pl.col("_hosts")))
    hosts = on_hosts.join(candidates.select("cluster_id").unique(), on="cluster_id")["host"].unique().to_list()
    if candidates.is_empty() or len(hosts) > JOB_READ_HOSTS:
        return clusters
    jobs = read_jobs(hosts)
    if jobs.is_empty():
        return clusters
    shares: list[tuple[int, str, str, bool, str]] = []
    for cid in candidates["cluster_id"].unique().sort().to_list():
        mine = opened.filter(pl.col("cluster_id") == cid)["job_id"].drop_nulls().unique()
        # the population: every job with a trace on this cluster's hosts -- not on every
        # candidate cluster's (read at once): a value all the jobs of one cluster's hosts
        # carry (their NIC's firmware) looked rare among the pooled jobs of two clusters
        # (tests/fleetgen34) -- and those carrying each candidate value
        here = on_hosts.filter(pl.col("cluster_id") == cid)["host"].implode()
        local = jobs.filter(pl.col("host").is_in(here)).select("job_id", "key", "value").unique()
        population = local.join(local.filter(pl.col("job_id").is_in(mine.implode())).select("key").unique(), on="key")
        for key, value in candidates.filter(pl.col("cluster_id") == cid).select("key", "value").iter_rows():
            with_key = population.filter(pl.col("key") == key)
            carriers = with_key.filter(pl.col("value") == value)["job_id"].unique()
            have = int(mine.is_in(carriers.implode()).sum())
            total, holders = with_key["job_id"].n_unique(), carriers.len()
            if have != mine.len() or not total or holders >= total:
                continue
            if (holders / total) ** have <= JOB_CHANCE:
                alone = with_key.filter(pl.col("job_id").is_in(mine.implode())).height == mine.len()
                shares.append((int(cid), key, value, alone,
                               f"{key}={value} ({have} of {mine.len()} jobs; {holders} of {total} on its hosts)"))
    if not shares:
        return clusters
    found = pl.DataFrame(shares, schema={"cluster_id": clusters.schema["cluster_id"], "key": pl.String,
                                         "value": pl.String, "_alone": pl.Boolean, "_text": pl.String}, orient="row")
    notes = (carried_by_failures(found, findings, read_traces).sort("cluster_id", "_text")
             .group_by("cluster_id", maintain_order=True).agg(pl.col("_text").str.join(", ").alias("_note")))
    return _noted(clusters, notes, " | jobs share ")


def _trend(first: dt.datetime, counts_recent: int, counts_before: int, window, recent_fraction: float) -> str:
    start, end = window
    if start is None or end is None or end <= start:
        return "steady"
    span = (end - start).total_seconds()
    if (first - start).total_seconds() >= (1 - recent_fraction) * span:
        return "new"
    rate_recent = counts_recent / (recent_fraction * span)
    rate_before = counts_before / ((1 - recent_fraction) * span)
    if rate_recent > 1.5 * rate_before + 1e-12:
        return "rising"
    if rate_recent < rate_before / 1.5:
        return "falling"
    return "steady"


def _first_mode(lf: pl.LazyFrame, column: str) -> pl.LazyFrame:
    """cluster_id, `column`: per cluster the most frequent value, the first in text order among
    equally frequent ones, a null before any text (= mode().sort().first() over the text). Counted
    on the column as it is (categorical codes on the audit's findings) and made text for the
    (cluster, value) pairs only: the open findings of a fleet-day are ~0.6M rows, whose ~100-byte
    signatures cost ~70 MiB as text, at the audit's memory peak."""
    counts = lf.group_by("cluster_id", column).agg(pl.len().alias("_n")).with_columns(pl.col(column).cast(pl.String))
    return (counts.sort(["cluster_id", "_n", column], descending=[False, True, False], nulls_last=False)
            .group_by("cluster_id", maintain_order=True).agg(pl.col(column).first()))


def _cluster_table(clustered: pl.DataFrame, window, recent_fraction: float = 0.25,
                   releases: pl.DataFrame | None = None, update_share: float = 0.9) -> pl.DataFrame:
    if clustered.is_empty():
        return pl.DataFrame(schema=polars_schema("clusters"))
    if "weight" not in clustered.columns:
        clustered = clustered.with_columns(pl.lit(1, pl.Int64).alias("weight"))
    start, end = window
    cut = end - (end - start) * recent_fraction if start and end else None
    recent = (pl.col("time") >= cut) if cut is not None else pl.lit(False)
    lf = clustered.lazy()
    # a truncated finding's signature carries a note; the cluster is named by complete ones
    # (tested on the distinct signatures: the column as text would cost what _first_mode saves)
    sigs = clustered.get_column("signature").unique().drop_nulls()
    noted = sigs.filter(sigs.cast(pl.String).str.contains("[truncated:", literal=True))
    plain = lf.filter(pl.col("signature").is_not_null() & ~pl.col("signature").is_in(noted.implode()))
    names = (_first_mode(lf, "signature").join(_first_mode(plain, "signature").rename({"signature": "_plain"}),
                                               on="cluster_id", how="left")
             .select("cluster_id", pl.coalesce("_plain", "signature").alias("signature")))
    table = (
        lf.group_by("cluster_id")
        .agg(
            pl.col("weight").sum().alias("failures"),
            pl.col("host").n_unique().alias("hosts"),
            pl.col("job_id").drop_nulls().n_unique().alias("jobs"),
            pl.col("time").min().alias("first_seen"),
            pl.col("time").max().alias("last_seen"),
            pl.col("trace_id").cast(pl.String).sort().first().alias("example_trace_id"),
            (recent * pl.col("weight")).sum().alias("_recent"),
        )
        .join(names, on="cluster_id", how="left")
        .join(_first_mode(lf, "origin_layer"), on="cluster_id", how="left")
        .select("cluster_id", "signature", "failures", "hosts", "jobs", "first_seen", "last_seen", "origin_layer",
                "example_trace_id", "_recent")
        .sort("cluster_id")
        .collect()
    )
    if releases is not None and "kernel_release" in clustered.columns:
        # a release some host updated to in the window is new for the hosts that joined the
        # fleet running it too (a rolling re-image: the cluster's hosts that came up on it), so
        # long as some host of the cluster failed on it only after its own update
        rel = releases.select(pl.col("host").cast(clustered.schema["host"]),
                              pl.col("kernel_release").cast(clustered.schema["kernel_release"]),
                              pl.col("new_release").alias("_switched"),
                              pl.col("new_release").any().over("kernel_release").alias("new_release"))
        joined = lf.join(rel.lazy(), on=["host", "kernel_release"], how="left").with_columns(
            pl.col("new_release", "_switched").fill_null(False))
        upd = (
            joined.group_by("cluster_id")
            .agg((pl.col("weight") * (pl.col("new_release") & pl.col("_switched").any())).sum().alias("_new"),
                 pl.col("weight").sum().alias("_all"))
            .join(_first_mode(joined.filter(pl.col("new_release")), "kernel_release").rename({"kernel_release": "_release"}),
                  on="cluster_id", how="left")
            .collect()
        )
        table = table.join(upd, on="cluster_id", how="left").with_columns(
            pl.when(pl.col("_new") >= update_share * pl.col("_all"))
            .then(pl.concat_str([pl.col("signature"), pl.lit(" | since kernel update to "), pl.col("_release")]))
            .otherwise(pl.col("signature")).alias("signature")
        ).drop("_new", "_all", "_release")
    trends = [
        _trend(r["first_seen"], r["_recent"], r["failures"] - r["_recent"], window, recent_fraction)
        for r in table.iter_rows(named=True)
    ]
    return table.with_columns(pl.Series("trend", trends, dtype=pl.String)).drop("_recent")


# --------------------------------------------------------------------------------------------
# host alerts from counters
# --------------------------------------------------------------------------------------------
# deeper layers first when two probes of one call chain report the same errno (no model depth known)
LAYER_DEPTH = {"user-lib": 0, "syscall": 1, "uverbs": 2, "core": 3, "driver": 4, "peer-mem": 5}


def host_alerts(
    counters: pl.LazyFrame | tuple[pl.DataFrame, pl.DataFrame],
    expected: ExpectedErrors,
    bucket: str = "15m",
    bad_ratio: float = 0.5,
    min_bad_failures: int = 1,
    persistent_buckets: int = 4,
    ongoing_buckets: int = 2,
    min_run_failure_rate: float = 3.0,
    cusum_k: float = 1.0,
    cusum_h: float = 8.0,
    min_rise_failures: int = 10,
    fleet_ratio: float = 4.0,
    min_fleet_calls: int = 20,
    max_shared_fraction: float = 0.002,
    max_shared_hosts: int = 3,
    probe_depth: dict[str, int] | None = None,
) -> pl.DataFrame:
    """Persistent-bad-state and rising-errno-rate alerts per host (expected errnos ignored).

    Host alerts single out hosts that behave unlike the fleet: a (host, probe, errno, bucket)
    counts as evidence only when the host's failure rate is at least `fleet_ratio` times the
    rest of the fleet's rate for the same probe and errno (in the same bucket when the rest of
    the fleet made `min_fleet_calls` calls of the probe there, else over the whole window) and
    than its platform peers' rate in the bucket (see _above_platform_peers), and
    when few hosts fail that way at once: at most max(`max_shared_hosts`, `max_shared_fraction`
    of the hosts reporting in the bucket) hosts with the same probe and errno failing on
    `bad_ratio` of their calls, in the bucket or the three before it. A cause that hits many
    hosts alike (a library rollout: EFAULT on every affected host, jobs crashing on it; a
    tenant's jobs failing wherever they are placed) is left to the root-cause clusters, except
    on hosts down on the probe, unless the cause fails only part of other hosts' calls there
    (see _host_specific).

    One errno propagating up a call chain rises at every layer it crosses: rising alerts are
    collapsed per (host, errno) onto the deepest probe (`probe_depth`: call depth per probe, e.g.
    from the good-trace baseline; else the counters' layer), the other layers named in detail.

    `counters` is the counters table (lazy) or its (calls, errors) from `bucket_counters` with
    the same `bucket`, or (calls, errors, cell attributes) from counters.split_cell_attributes."""
    host_calls, errs = counters[:2] if isinstance(counters, tuple) else bucket_counters(counters, bucket)
    if host_calls.is_empty():
        return pl.DataFrame(schema=polars_schema("host_alerts"))
    layers = cell_attributes(counters) if isinstance(counters, tuple) else host_calls
    # the per-(host, probe) and per-(host, bucket) totals of millions of cells, once each; the
    # group-bys and joins over the cells run on polars' streaming engine (2-4x less CPU than the
    # in-memory one on these tables; every result is sorted or reduced order-independently)
    window_calls = _stream(host_calls.lazy().group_by("host", "probe").agg(pl.col("n").sum().alias("n_w")))
    errs = _outside_learned_bands(host_calls, errs, expected, window_calls, probe_depth, bucket)
    ranks = probe_ranks(layers.group_by("probe").agg(pl.col("layer").drop_nulls().first()), probe_depth)
    groups = _host_groups(layers)
    spans = _release_spans(layers, groups)
    del layers
    host_calls = host_calls.drop("layer", "vendor", "kernel_release", strict=False)
    calls = _stream(host_calls.lazy().group_by("host", "bucket").agg(pl.col("n").sum().alias("invocations")))
    # where each host's unexpected errno starts (its deepest probe) and how many hosts show that
    # (probe, errno) at all, before the host-specific filter: a recurring error is one host's
    # only when few hosts have it at its origin (see `recurring` below)
    unexpected = errs.filter(~pl.col("_learned")).select("host", "probe", "errno").unique()
    origins = (unexpected.join(ranks, on="probe", how="left")
               .sort(RANK_ORDER, descending=RANK_DESCENDING, nulls_last=True)
               .group_by("host", "errno", maintain_order=True).agg(pl.col("probe").first()))
    origins = origins.join(unexpected.group_by("probe", "errno").agg(pl.len().alias("_spread")),
                           on=["probe", "errno"])
    origins = origins.join(_platform_wide(unexpected, window_calls, groups, max_shared_hosts),
                           on=["probe", "errno"], how="anti")
    specific = _host_specific(host_calls, errs, fleet_ratio, min_fleet_calls, bad_ratio, max_shared_fraction,
                              max_shared_hosts, window_calls, calls, groups=groups, bucket=bucket, spans=spans)
    errs = _without_callers_of_shared_origins(errs, specific, ranks)
    del specific
    # a bucket is bad when some probe fails (unexpectedly) on most of its calls: a crash-looping
    # host fails the same call at every restart even though most of its other calls succeed
    # (the bucket's bad probe: the deepest of those failing, as for rising alerts)
    # (a probe failing with an unexpected errno names the bucket before one whose errors are a
    # routine family out of its band: in a crash loop the start-up's routine errors rise too)
    # A routine family whose host rate is a configuration (an error its operation absorbs, or
    # one whose errno tells the caller what to do next: a half-empty GID table's ENODATA, a
    # tight cgroup's EAGAIN) fails most of its calls on such a host all day while its processes
    # go on: no bad state by itself. Its rate rising still alerts (below), and in a crash loop
    # the unexpected error that ends each restart makes the buckets bad.
    probe_bad = errs.filter(~pl.col("_config")).group_by("host", "probe", "bucket").agg(
        pl.col("count").sum().alias("bad"), pl.col("_learned").all())
    bad = (
        _stream(host_calls.lazy().join(probe_bad.lazy(), on=["host", "probe", "bucket"])
                .filter((pl.col("bad") >= min_bad_failures) & (pl.col("bad") >= bad_ratio * pl.col("n").clip(1))))
        .join(ranks, on="probe", how="left")
        .group_by("host", "bucket").agg(
            pl.col("bad").sum(),
            pl.col("probe").sort_by(["_learned", *RANK_ORDER], descending=[False, *RANK_DESCENDING], nulls_last=True)
            .first().alias("bad_probe"),
            # the named probe's own failures: `bad` counts a failed call once at every probe its
            # errno went up through (a CREATE_QP firmware error nine frames deep, nine times)
            pl.col("bad").sort_by(["_learned", *RANK_ORDER], descending=[False, *RANK_DESCENDING], nulls_last=True)
            .first().alias("_bad_probe_n"),
        )
    )
    per = (
        calls.join(bad, on=["host", "bucket"], how="left")
        .with_columns(pl.col("bad").is_not_null().alias("is_bad"), pl.col("bad").fill_null(0))
        .sort(["host", "bucket"])
    )
    # the bucket of each host's last call of each probe (see `_ongoing` below)
    probe_last = _stream(host_calls.lazy().filter(pl.col("n") > 0).group_by("host", "probe")
                         .agg(pl.col("bucket").max().alias("_probe_last")))
    # longest run of bad buckets per host
    per = per.with_columns(
        (pl.col("is_bad") != pl.col("is_bad").shift(1).over("host")).fill_null(True).cum_sum().over("host").alias("_run")
    )
    bad_runs = (
        per.filter(pl.col("is_bad"))
        .group_by("host", "_run")
        .agg(pl.len().alias("buckets"), pl.col("bucket").min().alias("since"), pl.col("bucket").max().alias("_until"),
             pl.col("bad").sum(), pl.col("invocations").sum(), pl.col("bad_probe").mode().sort().first(),
             pl.col("_bad_probe_n").filter(pl.col("bad_probe") == pl.col("bad_probe").mode().sort().first()).sum(),
             # the buckets the named probe was the bad one in (a run is the host's: a start-up's
             # failures in the buckets before a fault's make one run with it)
             (pl.col("bad_probe") == pl.col("bad_probe").mode().sort().first()).sum().alias("_probe_buckets"))
        # a run still on in the host's last bucket needs only `ongoing_buckets`: a switch that
        # failed 40 minutes before the audit is an outage in progress, and waiting for a fourth
        # bucket costs the jobs of another hour. So is a run the host stopped reporting in (its
        # tracer crashed, or the host died, while failing): its last known state is the bad one,
        # and no later bucket will ever show it recovered. A run that ended with the host
        # reporting on (it recovered) shorter than `persistent_buckets` was a passing burst.
        # So is a run after which its bad probe was never called again on a host that reported
        # on: the host was drained, or its jobs went elsewhere, while failing (a NIC whose
        # firmware failed every CREATE_QP for 15 minutes, killing a 256-rank job at each requeue,
        # until the scheduler left the host), which no later call showed recovered either
        .join(per.group_by("host").agg(pl.col("bucket").max().alias("_host_last")), on="host")
        .join(probe_last, left_on=["host", "bad_probe"], right_on=["host", "probe"], how="left")
        .with_columns(((pl.col("_until") == pl.col("_host_last"))
                       | (pl.col("_until") >= pl.col("_probe_last")).fill_null(False)).alias("_ongoing"))
    )
    # the passing bursts: runs shorter than `persistent_buckets` the host recovered from (it
    # called the bad probe again after them); their errors raise no rising alert either (below)
    bursts = bad_runs.filter(~pl.col("_ongoing") & (pl.col("buckets") < persistent_buckets)).select(
        "host", pl.col("since").alias("_burst_since"), "_until")
    runs = (
        bad_runs
        # and `min_run_failure_rate` failures a bucket over the run: a call made once per process
        # (a capability probe the host's kernel lacks, then another way) fails on "most" of its
        # one or two calls a bucket on a host that differs, which is no state it fell into; a
        # crash loop fails it at every restart
        .filter(((pl.col("buckets") >= persistent_buckets) | (pl.col("_ongoing") & (pl.col("buckets") >= ongoing_buckets)))
                & (pl.col("bad") >= min_run_failure_rate * pl.col("buckets")))
        # a host's longest run; of runs as long, the one with the most failures, then the latest:
        # the group-by above gives its runs in no set order, and sorted on the length alone two
        # runs of 4 buckets were taken in that order -- the same counters named 08:00 on the day
        # one file per host-day and 11:00 on it compacted across hosts
        .sort(["host", "buckets", "bad", "since"], descending=[False, True, True, True])
        .group_by("host", maintain_order=True).first()
    )
    # the run's errno: the one most of the bad probe's unexpected failures in it returned (the
    # counters' errno breakdown), None when none is most of them (a probe failing two ways)
    run_errno = (
        errs.filter(~pl.col("_config"))
        .join(runs.select("host", pl.col("bad_probe").alias("probe"), "since", "_until"), on=["host", "probe"])
        .filter(pl.col("bucket").is_between(pl.col("since"), pl.col("_until")))
        .group_by("host", pl.col("errno").cast(pl.String)).agg(pl.col("count").sum())
        .sort(["host", "count", "errno"], descending=[False, True, False])
        .group_by("host", maintain_order=True)
        .agg(pl.when(pl.col("count").first() * 2 > pl.col("count").sum()).then(pl.col("errno").first())
             .alias("_run_errno"))
    )
    runs = runs.join(run_errno, on="host", how="left")
    persistent = runs.select(
        "host",
        pl.lit("persistent_bad_state").alias("alert"),
        pl.col("bad_probe").alias("probe"),
        pl.col("_run_errno").cast(pl.String).alias("errno"),
        "since",
        pl.col("buckets").cast(pl.Float64).alias("score"),
        pl.when(pl.col("_probe_buckets") < pl.col("buckets"))
        .then(pl.format("{} consecutive {} intervals in which a probe failed on most calls, {} in {} of them "
                        "({} failures)", pl.col("buckets"), pl.lit(bucket), pl.col("bad_probe"),
                        pl.col("_probe_buckets"), pl.col("_bad_probe_n")))
        .otherwise(pl.format("{} consecutive {} intervals in which {} failed on most calls ({} failures)",
                             pl.col("buckets"), pl.lit(bucket), pl.col("bad_probe"), pl.col("_bad_probe_n")))
        .alias("detail"),
    )
    # rising errno rate: CUSUM of Poisson-standardised counts vs the series' own lagged EWMA
    series = errs
    key = ["host", "probe", "errno"]
    keys = series.select(*key, "_config").unique(subset=key)

    def buckets_of(part: pl.DataFrame) -> pl.DataFrame:
        """Every bucket of the host for each series of `part`, its count (0 where none)."""
        return (part.select(key).join(calls.select("host", "bucket"), on="host")
                .join(series.select(*key, "bucket", "count"), on=[*key, "bucket"], how="left")
                .with_columns(pl.col("count").fill_null(0).cast(pl.Float64)))

    # the expected count of a bucket: the series' own lagged EWMA -- of the count, or for a
    # family whose host rate is a configuration (`_config`), of its rate per call times the
    # bucket's calls: such an error rises and falls with the host's activity (a crash-looping
    # or bursty host makes more of the operation), a rise of its rate is what is news
    plain = buckets_of(keys.filter(~pl.col("_config"))).sort([*key, "bucket"]).with_columns(
        pl.col("count").ewm_mean(alpha=0.2, adjust=False).shift(1).over(key).fill_null(0.0).alias("mu"))
    configured = keys.filter(pl.col("_config"))
    # (the calls of the configuration families' probes only: a join with every (host, probe,
    # bucket) of the counters built a hash table of them, ~0.6 GiB at a 10,000-host day's peak)
    configured_calls = _stream(
        host_calls.lazy().select("host", "probe", "bucket", "n")
        .join(configured.lazy().select("host", "probe").unique(), on=["host", "probe"], how="semi"))
    rate = pl.when(pl.col("n") > 0).then(pl.col("count") / pl.col("n"))
    configured = (
        buckets_of(configured)
        .join(configured_calls, on=["host", "probe", "bucket"], how="left")
        .with_columns(pl.col("n").fill_null(0))
        .sort([*key, "bucket"])
        # (the first bucket with calls has no rate before it: no evidence either way)
        .with_columns((rate.ewm_mean(alpha=0.2, adjust=False, ignore_nulls=True).shift(1).over(key)
                       .fill_null(rate).fill_null(0.0) * pl.col("n")).alias("mu"))
        .drop("n")
    )
    grid = pl.concat([plain, configured], rechunk=False)
    grid = grid.with_columns(((pl.col("count") - pl.col("mu")) / (pl.col("mu") + 1.0).sqrt() - cusum_k).alias("z"))
    grid = grid.with_columns(pl.col("z").cum_sum().over(key).alias("C"))
    grid = grid.with_columns((pl.col("C") - pl.min_horizontal(pl.col("C").cum_min().over(key), pl.lit(0.0))).alias("S"))
    alarms = (
        grid.filter(pl.col("S") >= cusum_h)
        .group_by(key).agg(pl.col("bucket").min().alias("since"), pl.col("S").max().alias("score"))
    )
    alarms = _rise_began(alarms, series.join(unexpected, on=key, how="semi"), key, bucket)
    totals = series.group_by(key).agg(pl.col("count").sum().alias("total"), pl.len().alias("active_buckets"))
    rising = (
        alarms.join(totals, on=key).filter((pl.col("total") >= min_rise_failures) & (pl.col("active_buckets") >= 3))
        # one alert a host for one incident -- the persistent bad state says it -- unless the
        # rate rose before the host fell into that state: the early warning is kept (a noisy
        # neighbour filling a cgroup: reg_mr's EAGAIN rising 45 minutes before every alloc_pd
        # failed, tests/fleetgen25)
        .join(persistent.select("host", pl.col("since").alias("_bad_since")), on="host", how="left")
        .filter(pl.col("_bad_since").is_null() | (pl.col("since") < pl.col("_bad_since")))
        .select(
            # (the crossing decides whether the rise came before a bad state; the alert says
            # where it began)
            "host", pl.lit("rising_errno_rate").alias("alert"), "probe", "errno", pl.col("_began").alias("since"), "score",
            pl.format("{} {} failures; CUSUM {} over the host's own EWMA", pl.col("total"),
                      pl.col("errno"), pl.col("score").round(1)).alias("detail"),
        )
    )
    rising = collapse_layers(rising, ranks)
    # A rise whose every failing bucket is in one passing burst is that burst: no host alert, its
    # failures are the root-cause clusters' (a three-bucket outage crossed the CUSUM where a
    # two-bucket one did not: docs contract 5). Only an error the host showed nowhere else in the
    # window; a routine family's goes on around the burst and is judged by its band.
    if not bursts.is_empty() and not rising.is_empty():
        failing = (errs.filter(pl.col("count") > 0).select(pl.col("host", "probe", "errno").cast(pl.String), "bucket")
                   .join(rising.select(pl.col(key).cast(pl.String)).unique(), on=key, how="semi"))
        in_burst = (failing.join(bursts.with_columns(pl.col("host").cast(pl.String)), on="host", how="left")
                    .with_columns(pl.col("bucket").is_between(pl.col("_burst_since"), pl.col("_until"))
                                  .fill_null(False).alias("_in"))
                    .group_by(*key, "bucket").agg(pl.col("_burst_since").filter(pl.col("_in")).first()))
        passing = (in_burst.group_by(key).agg(pl.col("_burst_since").is_not_null().all().alias("_all"),
                                              pl.col("_burst_since").n_unique().alias("_bursts"))
                   .filter(pl.col("_all") & (pl.col("_bursts") == 1)))
        rising = rising.join(passing.select(pl.col(c).cast(rising.schema[c]) for c in key), on=key, how="anti")
    # recurring: an unexpected error confined to this host (at most `max_shared_hosts` hosts show
    # it at its origin probe: the deepest one failing with the errno) that comes back in
    # `persistent_buckets` buckets or more, `min_rise_failures` times or more, at a rate far above the fleet's in each (the cells kept above), without
    # ever failing most calls or rising over the host's own history: an intermittent fault
    # present from the window's start (a peer-memory client failing 15 % of a host's GPU
    # registrations in scattered buckets; port 2 of 8 NICs timing out its firmware commands,
    # a crash loop that fails one call of each restart). Its own EWMA learns it as the host's
    # normal and no bucket is bad, yet no other host has it: the host is what to drain.
    recurring = (
        errs.filter(~pl.col("_learned")).join(origins, on=key)
        .group_by(key).agg(pl.col("count").sum().alias("total"), pl.col("bucket").n_unique().alias("active_buckets"),
                           pl.col("bucket").min().alias("since"), pl.col("_spread").first())
        .filter((pl.col("_spread") <= max_shared_hosts) & (pl.col("total") >= min_rise_failures)
                & (pl.col("active_buckets") >= persistent_buckets))
        # ... in a third or more of the host's buckets since it first showed: a fault the host
        # keeps, not a rare failure a job meets now and then (3 % of one host's INIT->RTR)
        .join(calls.select("host", "bucket"), on="host")
        .filter(pl.col("bucket") >= pl.col("since"))
        .group_by(key, maintain_order=True).agg(pl.all().exclude("bucket").first(), pl.len().alias("_span"))
        .filter(pl.col("active_buckets") * 3 >= pl.col("_span"))
        .join(pl.concat([persistent.select("host"), rising.select("host")]), on="host", how="anti")
        .select(
            "host", pl.lit("recurring_errno").alias("alert"), "probe", "errno", "since",
            pl.col("active_buckets").cast(pl.Float64).alias("score"),
            pl.format("{} {} failures in {} {} intervals, on no more than {} hosts", pl.col("total"), pl.col("errno"),
                      pl.col("active_buckets"), pl.lit(bucket), pl.col("_spread")).alias("detail"),
        )
    )
    rising = pl.concat([rising, recurring], how="vertical_relaxed")
    # a routine family out of its band on a host where an unexpected error rises or persists is
    # that error's symptom (a crash-looping job redoes its start-up: its cgroup retries and
    # capability probes come back with every restart), not a second alert -- when it rose with
    # or after that error; one that rose before it is the warning (a noisy neighbour filling a
    # cgroup: the routine reg_mr EAGAIN rising 45 minutes before every alloc_pd failed,
    # tests/fleetgen25)
    learned = errs.filter(pl.col("_learned")).select("probe", "errno").unique()
    symptom = rising.join(learned, on=["probe", "errno"], how="semi")
    plain_hosts = (pl.concat([
        rising.join(learned, on=["probe", "errno"], how="anti").select("host", "since"),
        persistent.join(learned.select("probe").unique(), on="probe", how="anti").select("host", "since"),
    ], how="vertical_relaxed").group_by("host").agg(pl.col("since").min().alias("_plain_since")))
    symptom = symptom.join(plain_hosts, on="host").filter(pl.col("since") >= pl.col("_plain_since"))
    rising = rising.join(symptom.select("host", "probe", "errno"), on=["host", "probe", "errno"], how="anti")
    out = pl.concat([persistent, rising], how="vertical_relaxed").with_columns(pl.col(pl.Categorical).cast(pl.String))
    return out.sort(["alert", "score", "host"], descending=[False, True, False])


# A new error's failures a few quiet buckets apart are one rise (see _rise_began)
RISE_QUIET_BUCKETS = 4


def _rise_began(alarms: pl.DataFrame, failing: pl.DataFrame, key: list[str], bucket: str) -> pl.DataFrame:
    """`alarms` with `_began`, where an unexpected error's rise began (else `since`, the crossing): the first
    bucket of the stretch of its failing buckets (`failing`: key, bucket, count) that reaches
    the bucket the CUSUM crossed its threshold in, with no more than `RISE_QUIET_BUCKETS` quiet
    buckets in a row between them. The statistic measures the rise against the host's own
    recent level, which a slow climb drags along: a leak failing 1-3 of a host's registrations
    a bucket from 05:45 crossed it only at 11:00, with a burst of requeued jobs
    (tests/fleetgen53). A routine family's alarms keep the crossing: its failures never stop."""
    if alarms.is_empty() or failing.is_empty():
        return alarms.with_columns(pl.col("since").alias("_began"))
    most_quiet = pl.duration(nanoseconds=units.parse_duration_ns(bucket, "bucket") * (RISE_QUIET_BUCKETS + 1))
    stretches = (
        failing.filter(pl.col("count") > 0).join(alarms.select(*key, pl.col("since").alias("_alarm")), on=key)
        .filter(pl.col("bucket") <= pl.col("_alarm"))
        .sort([*key, "bucket"])
        .with_columns((pl.col("bucket").diff().over(key) > most_quiet).fill_null(True).cum_sum().over(key)
                      .alias("_stretch"))
    )
    began = stretches.group_by(key).agg(
        pl.col("bucket").filter(pl.col("_stretch") == pl.col("_stretch").max()).min().alias("_began"))
    return (alarms.join(began, on=key, how="left")
            .with_columns(pl.min_horizontal(pl.col("_began").fill_null(pl.col("since")), "since").alias("_began")))


RANK_ORDER = ["_depth", "_layer_rank", "probe"]  # deepest first (see probe_ranks), then by name
RANK_DESCENDING = [True, True, False]


def chain_edges(chains: pl.DataFrame) -> pl.DataFrame:
    """parent, probe: the calls the failure chains show (one representative trace per chain,
    frames in entry order: a frame's parent is the nearest earlier frame one level up). A
    fallback only failures take -- OFED's ib_peer_umem_get under __ib_umem_get, when a capture
    window never caught a rescued registration -- is in no good trace."""
    rows: set[tuple[str, str]] = set()
    if chains.is_empty():
        return pl.DataFrame(schema={"parent": pl.String, "probe": pl.String})
    cols = chains.select("trace_id", "seq", "depth", pl.col("probe").cast(pl.String)).sort("trace_id", "seq")
    for _tid, grp in cols.group_by("trace_id", maintain_order=True):
        stack: list[str] = []  # stack[d]: the latest frame at depth d
        for depth, probe in zip(grp["depth"].to_list(), grp["probe"].to_list(), strict=True):
            if depth is None or depth < 0 or depth > len(stack):
                stack = []
                continue
            del stack[depth:]
            if depth and stack:
                rows.add((stack[-1], probe))
            stack.append(probe)
    return pl.DataFrame(sorted(rows), schema={"parent": pl.String, "probe": pl.String}, orient="row")


def call_ranks(edges: pl.DataFrame) -> dict[str, int]:
    """probe -> its rank in the call graph of the good traces and the failure chains: the
    longest chain of calls from a root down to it (`edges`: parent -> probe). Deeper in one
    chain is a higher rank in every chain: a probe's depth differs between operations (mlx5's
    CQ and QP buffers reach __ib_umem_get three calls deeper than reg_mr does), so the largest
    depth seen named __ib_umem_get "deeper" than ib_peer_umem_get, the callee of it where an
    errno starts (tests/fleetgen35)."""
    pairs = (edges.select(pl.col("parent", "probe").cast(pl.String)).drop_nulls().unique()
             .filter(pl.col("parent") != pl.col("probe")).rows())
    rank = dict.fromkeys(edges.select(pl.col("probe").cast(pl.String)).to_series().to_list(), 0)
    for parent, _ in pairs:
        rank.setdefault(parent, 0)
    for _ in range(len(rank)):  # longest paths (Bellman-Ford; a recursion's cycle stops at the bound)
        changed = False
        for parent, probe in pairs:
            if rank[parent] + 1 > rank[probe]:
                rank[probe] = rank[parent] + 1
                changed = True
        if not changed:
            break
    return rank


def probe_ranks(layers: pl.DataFrame, probe_depth: dict[str, int] | None = None) -> pl.DataFrame:
    """probe, layer, _depth (call depth from `probe_depth`, null when unknown), _layer_rank
    (LAYER_DEPTH of the layer): sorting on RANK_ORDER puts the deepest probe first."""
    depth = pl.DataFrame(
        {"probe": list((probe_depth or {}).keys()), "_depth": list((probe_depth or {}).values())},
        schema={"probe": pl.String, "_depth": pl.Int64},
    )
    depth = depth.with_columns(pl.col("probe").cast(layers.schema["probe"]))
    return layers.join(depth, on="probe", how="left").with_columns(
        pl.col("layer").replace_strict(LAYER_DEPTH, default=-1, return_dtype=pl.Int64).alias("_layer_rank")
    )


def collapse_layers(alerts: pl.DataFrame, ranks: pl.DataFrame) -> pl.DataFrame:
    """One alert per (host, alert, errno): the deepest probe's (see probe_ranks), `since` the
    earliest of the layers, the other probes named in detail."""
    if alerts.is_empty():
        return alerts
    ranked = (
        alerts.join(ranks, on="probe", how="left")
        .with_columns(
            pl.concat_str([pl.col("probe"), pl.lit(" ("), pl.col("layer").fill_null("?"), pl.lit(")")]).alias("_named"),
        )
        .sort(RANK_ORDER, descending=RANK_DESCENDING, nulls_last=True)
    )
    key = ["host", "alert", "errno"]
    out = ranked.group_by(key, maintain_order=True).agg(
        pl.col("probe").first(),
        pl.col("since").min(),
        pl.col("score").first(),
        pl.col("detail").first(),
        pl.col("_named").slice(1).alias("_others"),
    )
    also = pl.concat_str([pl.lit("; also rising at "), pl.col("_others").list.join(", ")])
    detail = pl.when(pl.col("_others").list.len() > 0).then(pl.concat_str([pl.col("detail"), also])).otherwise(pl.col("detail"))
    return out.select("host", "alert", "probe", "errno", "since", "score", detail.alias("detail"))


def _without_callers_of_shared_origins(errs: pl.DataFrame, specific: pl.DataFrame, ranks: pl.DataFrame) -> pl.DataFrame:
    """`specific` (the cells _host_specific kept of `errs`) without a host's cell whose errno a
    deeper probe of the same host and bucket failed with at least as often, where that deeper
    cell was not kept: the errno came up from there, and there it is the fleet's (one tenant's
    memlock limit failing ib_umem_get on hosts of every vendor, tests/fleetgen36). Each
    vendor's own register call above it is shared by that vendor's few hosts only, and on a
    crash-looping one, where more of the tenant's jobs started and died, it looked like the
    host's own rising errno."""
    key = ["host", "probe", "errno", "bucket"]
    dropped = errs.select(*key, "count").join(specific.select(key), on=key, how="anti")
    if dropped.is_empty() or specific.is_empty():
        return specific
    rank = ranks.select("probe", (pl.col("_depth").fill_null(-1) * 100 + pl.col("_layer_rank")).alias("_rank"))
    kept = specific.join(rank, on="probe", how="left").with_columns(pl.col("_rank").fill_null(-1))
    origin = (dropped.join(rank, on="probe", how="left").with_columns(pl.col("_rank").fill_null(-1))
              .select("host", "errno", "bucket", pl.col("_rank").alias("_origin_rank"), pl.col("count").alias("_origin")))
    covered = (kept.join(origin, on=["host", "errno", "bucket"])
               .filter((pl.col("_origin_rank") > pl.col("_rank")) & (pl.col("_origin") >= pl.col("count")))
               .select(key).unique())
    return specific.join(covered, on=key, how="anti")


def _host_specific(host_calls: pl.DataFrame, errs: pl.DataFrame, fleet_ratio: float, min_fleet_calls: int,
                   bad_ratio: float, max_shared_fraction: float, max_shared_hosts: int,
                   window_calls: pl.DataFrame | None = None, calls: pl.DataFrame | None = None,
                   down_ratio: float = 0.9, down_failures: int = 3,
                   groups: pl.DataFrame | None = None, bucket: str = "15m", shared_buckets: int = 4,
                   spans: pl.DataFrame | None = None) -> pl.DataFrame:
    """The bucketed error counts (host, probe, errno, bucket, count) of cells whose failure rate
    is far above the rest of the fleet's (see host_alerts). window_calls (host, probe, n_w) and
    calls (host, bucket, ...) are host_calls' totals when the caller has them; groups (host,
    vendor, kernel_release: `_host_groups`) the hosts' platforms, `spans` (`_release_spans`) those
    of hosts that ran more than one release in the window."""
    key = ["probe", "errno", "bucket"]
    cells = _stream(
        errs.lazy().rename({"count": "f"})
        .join(host_calls.lazy(), on=["host", "probe", "bucket"], how="left")
        .with_columns(pl.col("n").fill_null(0))
    )
    if groups is not None:
        # the platforms' calls per (probe, bucket), once for both platform rules below
        platforms = _platform_hosts(groups, spans)
        platform_calls = _platform_calls(host_calls, platforms[1], platforms[2])
        cells = _without_platform_wide(cells, host_calls, platforms, bad_ratio, max_shared_hosts, platform_calls,
                                       bucket)
    fleet_calls = _stream(host_calls.lazy().group_by("probe", "bucket").agg(pl.col("n").sum().alias("N")))
    if window_calls is None:
        window_calls = _stream(host_calls.lazy().group_by("host", "probe").agg(pl.col("n").sum().alias("n_w")))
    window_fleet = window_calls.group_by("probe").agg(pl.col("n_w").sum().alias("N_w"))
    window_fails = (cells.group_by("host", "probe", "errno").agg(pl.col("f").sum().alias("f_w"))
                    .join(window_calls, on=["host", "probe"], how="left").with_columns(pl.col("n_w").fill_null(0)))
    # The rest of the fleet's rate leaves out the other hosts of a cause few hosts have -- at most
    # `max_shared_hosts` show the (probe, errno) at all over the window -- that fail most of their
    # calls of the probe (`down_failures` times or more). Two hosts in one crash loop (a NIC
    # model's firmware bad on two of a platform's hosts) made each other's "rest of the fleet"
    # rate a fifth of their own, and neither alerted (fleetgen50: two canaries failing alike are
    # not each other's excuse). An error more hosts show is a cause shared (a rollout reaching
    # five hosts, three of them failing most of their few calls: the shared rule below), and all
    # of them stay in the rest's rate. Left out in a bucket where they are down on the probe
    # (nearly every call), and over the window.
    most_w = (pl.col("f_w") >= down_failures) & (pl.col("f_w") >= bad_ratio * pl.col("n_w").clip(1))
    window_fails = window_fails.with_columns(
        (most_w & (pl.len().over("probe", "errno") <= max_shared_hosts)).alias("_apart"))
    apart_w = pl.col("_apart")
    window = (
        window_fails.join(window_fails.group_by("probe", "errno").agg(
            pl.col("f_w").filter(~apart_w).sum().alias("F_w"), pl.col("n_w").filter(apart_w).sum().alias("_N_w_apart")),
            on=["probe", "errno"])
        .join(window_fleet, on="probe", how="left")
        .with_columns(
            ((pl.col("F_w") - pl.when(apart_w).then(0).otherwise(pl.col("f_w")))
             / (pl.col("N_w") - pl.col("_N_w_apart") - pl.when(apart_w).then(0).otherwise(pl.col("n_w"))).clip(1))
            .alias("p_rest_w")
        )
    )
    down_here = (pl.col("f") >= down_failures) & (pl.col("f") >= down_ratio * pl.col("n").clip(1))
    cells = (cells.join(window.select("host", "probe", "errno", "_apart"), on=["host", "probe", "errno"], how="left")
             .with_columns((down_here & pl.col("_apart").fill_null(False)).alias("_apart")))
    apart = pl.col("_apart")
    fleet_fails = cells.group_by(key).agg(pl.col("f").sum().alias("F"), pl.col("f").filter(~apart).sum().alias("_F_ok"),
                                          pl.col("n").filter(apart).sum().alias("_N_apart"))
    rest_calls = pl.col("N") - pl.col("_N_apart") - pl.when(apart).then(0).otherwise(pl.col("n"))
    cells = (
        cells.join(fleet_calls, on=["probe", "bucket"], how="left").join(fleet_fails, on=key, how="left")
        .join(window.select("host", "probe", "errno", "p_rest_w"), on=["host", "probe", "errno"], how="left")
        .with_columns(
            (pl.col("f") / pl.col("n").clip(1)).alias("p_host"),
            pl.when(rest_calls >= min_fleet_calls)
            .then((pl.col("_F_ok") - pl.when(apart).then(0).otherwise(pl.col("f"))) / rest_calls)
            .otherwise(pl.col("p_rest_w"))
            .alias("p_rest"),
        )
        .drop("_F_ok", "_N_apart", "_apart")
    )
    if groups is not None:
        cells = _above_platform_peers(cells, host_calls, platforms, min_fleet_calls, bad_ratio, max_shared_hosts,
                                      platform_calls)
    # hosts reporting per bucket: one row per (host, bucket) in `calls`
    reporting = (host_calls.group_by("bucket").agg(pl.col("host").n_unique().alias("reporting")) if calls is None
                 else calls.group_by("bucket").agg(pl.len().alias("reporting")))
    # hosts failing alike: on most of their calls, in this bucket or the `shared_buckets` - 1
    # before it. A cause that follows jobs rather than hosts (a tenant's pods behind a
    # net-namespace gate, crash-looping from host to host as the scheduler places them) fails
    # a few hosts a bucket and a dozen an hour: counted a bucket at a time, each host looked
    # like the only one
    # ... or on part of them, at a rate far above the rest of the fleet's, `down_failures` times
    # or more: each such host would be evidence alone. A multi-host job's ranks that fail
    # towards one host whose NIC is bad (the peer side's neighbour timeout: one QP of a rank's
    # three goes to that host) fail a few of its peers a bucket and half its pod within an hour,
    # rarely on most of their calls: counted by "most" alone, each peer looked like the only one
    # and alerted (fleetgen13, 300 hosts x 6 h: 3 of the bad host's 7 peers, rising ETIMEDOUT)
    alike = (pl.col("p_host") >= bad_ratio) | (
        (pl.col("p_host") >= fleet_ratio * pl.col("p_rest")) & (pl.col("f") >= down_failures))
    most = cells.filter(alike).select("host", *key)
    width = pl.duration(nanoseconds=units.parse_duration_ns(bucket, "bucket"))
    shared = (
        pl.concat([most.with_columns(pl.col("bucket") + width * k) for k in range(shared_buckets)])
        .group_by(key).agg(pl.col("host").n_unique().alias("shared"))
        .join(reporting, on="bucket")
        .filter(pl.col("shared") > pl.max_horizontal(pl.lit(max_shared_hosts), max_shared_fraction * pl.col("reporting")))
    )
    # ... except a host on which the probe failed on (nearly) every call, `down_failures` times
    # or more: that host is down on it, whoever shares the cause (a rack's switch no longer
    # resolving neighbours fails every INIT->RTR of its hosts; each must be drained), while a
    # rollout's bad library fails some of a host's calls, not all
    # (compared with the hosts not down so in the bucket, or with the fleet's rate over the window
    # when those made few calls there: its rack-mates' failures are the same cause, not the rest
    # of the fleet's rate)
    # ... and a cause fails the hosts themselves only where it fails their calls alike: where,
    # in the bucket, a quarter as many of the hosts failing it fail only part of their calls
    # as are down on it, it fails some callers and not others on the same hosts (one tenant's
    # pods behind a net-namespace gate, another's jobs passing; a down host there is one only
    # the failing tenant called): the clusters' cause, no host's state
    # (down over a run of consecutive buckets, not each bucket alone: a host that called the
    # probe once in one bucket of the run and failed that call too is no less down there, and
    # judged alone that bucket broke the run in two too short to alert -- fleetgen7's peer
    # client gone after an upgrade: 5 of 5, 1 of 1, 4 of 4)
    in_shared = _with_down_runs(cells.join(shared, on=key, how="semi"), width, down_ratio, down_failures)
    down = pl.col("_down")
    selective = (in_shared.group_by(key).agg(down.sum().alias("_down"), (pl.col("p_host") < down_ratio).sum().alias("_part"))
                 .filter(pl.col("_part") * 4 >= pl.col("_down")))
    shared_down = in_shared.join(selective, on=key, how="anti").filter(down)
    up = shared_down.group_by(key).agg(pl.col("f").sum().alias("_fd"), pl.col("n").sum().alias("_nd"))
    up_calls = pl.col("N") - pl.col("_nd")
    shared_down = shared_down.join(up, on=key).with_columns(
        pl.when(up_calls >= min_fleet_calls).then((pl.col("F") - pl.col("_fd")) / up_calls)
        .otherwise(pl.col("p_rest_w")).alias("p_rest")).drop("_fd", "_nd")
    cells = pl.concat([cells.join(shared, on=key, how="anti"), shared_down.drop("_down")],
                      how="vertical_relaxed").filter(pl.col("p_host") >= fleet_ratio * pl.col("p_rest"))
    return errs.join(cells.select("host", "probe", "errno", "bucket"), on=["host", "probe", "errno", "bucket"], how="semi")


def _with_down_runs(cells: pl.DataFrame, width: pl.Expr, down_ratio: float, down_failures: int) -> pl.DataFrame:
    """`cells` (host, probe, errno, bucket, f, p_host, ...) with `_down`: the cell fails
    `down_ratio` of the host's calls or more, in a run of such buckets back to back on the host
    (same probe and errno) that failed `down_failures` times or more in all."""
    run_key = ["host", "probe", "errno"]
    high = pl.col("p_host") >= down_ratio
    follows = (high.shift(1).over(run_key).fill_null(False)
               & ((pl.col("bucket") - pl.col("bucket").shift(1).over(run_key)) == width).fill_null(False))
    cells = cells.sort([*run_key, "bucket"]).with_columns((~(high & follows)).cum_sum().over(run_key).alias("_run"))
    return cells.with_columns(
        (high & (pl.col("f").sum().over([*run_key, "_run"]) >= down_failures)).alias("_down")).drop("_run")


def _above_platform_peers(cells: pl.DataFrame, host_calls: pl.DataFrame, platforms: Platforms,
                          min_peer_calls: int, bad_ratio: float, min_group_hosts: int = 3,
                          platform_calls: pl.DataFrame | None = None) -> pl.DataFrame:
    """`cells` with p_rest raised to the rate of the host's platform peers (the other hosts of
    its vendor and kernel release, in the bucket) where that is higher and they made
    `min_peer_calls` calls of the probe there: a host is singled out by failing where its peers
    do not. A cause confined to one platform but failing part of its calls on every host of it
    (one tenant's jobs asking an irdma device for more completion vectors than it has: EINVAL on
    every irdma host, all day) is ~4x the whole fleet's rate on each of them when a quarter of
    the fleet is that platform; a host that got a few more of those jobs in a bucket rose over
    the fleet's rate and its own history, yet failed at 2-3x its peers' rate: the cluster's
    cause, no host's (fleetgen10's az1-n124). A fault of the host's own still stands far above
    its peers, who do not share it; a platform of one host keeps the fleet's rate, and so does
    one of fewer than `min_group_hosts` hosts calling the probe in the bucket, the size from which
    a failure shared by a whole platform is the platform's (_without_platform_wide): two canary
    hosts that took a release, failing a third of their GPU registrations after it, would each
    be the other's "platform rate" and neither alert (fleetgen15).
    `platforms`: _platform_hosts'; `platform_calls`: _platform_calls of `host_calls` when the caller has it."""
    _, hosts, spans = platforms
    cells = _with_platform(cells, hosts, spans)
    # the platforms' calls of the (probe, bucket)s with failures (a (probe, bucket, platform)
    # without calls has no row: no peers, as with _N_plat 0)
    if platform_calls is None:
        platform_calls = _platform_calls(host_calls, hosts, spans)
    peer_calls = platform_calls.join(cells.select("probe", "bucket").unique(), on=["probe", "bucket"], how="semi")
    # peers failing most of their calls themselves are left out: a crash-looping host calls the
    # failing probe at every restart, many times a healthy host's calls, and two such hosts of
    # one platform would each make the other's rate look like the platform's (the simulator's
    # crash loops, alerted an hour late)
    bad = pl.col("p_host") >= bad_ratio
    peer_fails = cells.group_by("probe", "errno", "bucket", "_plat").agg(
        pl.col("f").filter(~bad).sum().alias("_F_plat"), pl.col("n").filter(bad).sum().alias("_N_bad"))
    own = pl.when(bad).then(0).otherwise(pl.col("n"))
    peers = pl.col("_N_plat") - pl.col("_N_bad") - own
    p_peers = pl.when((peers >= min_peer_calls) & (pl.col("_H_plat") >= min_group_hosts)).then((pl.col("_F_plat") - pl.when(bad).then(0).otherwise(pl.col("f"))) / peers)
    return (cells.join(peer_calls, on=["probe", "bucket", "_plat"], how="left", nulls_equal=True)
            .join(peer_fails, on=["probe", "errno", "bucket", "_plat"], how="left", nulls_equal=True)
            .with_columns(pl.max_horizontal(pl.col("p_rest"), p_peers).alias("p_rest"))
            .drop("_plat", "_N_plat", "_H_plat", "_F_plat", "_N_bad"))


# (platforms, hosts, spans): see _platform_hosts
Platforms = tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | None]


def _platform_hosts(groups: pl.DataFrame, spans: pl.DataFrame | None = None) -> Platforms:
    """(platforms, hosts, spans) of `_host_groups` and `_release_spans`: each distinct (vendor,
    kernel_release) numbered `_plat` in the order first seen (nulls a platform too), each host's
    number (its latest), and the numbered spans (host, _plat, _from, _to) of the hosts that ran
    more than one release (None when none did)."""
    plat = ["vendor", "kernel_release"]
    seen = groups.select(plat) if spans is None else pl.concat([groups.select(plat), spans.select(plat)])
    platforms = seen.unique(maintain_order=True).with_row_index("_plat")
    hosts = groups.join(platforms, on=plat, how="left", nulls_equal=True).select("host", "_plat")
    if spans is not None:
        spans = spans.join(platforms, on=plat, how="left", nulls_equal=True).select("host", "_plat", "_from", "_to")
    return platforms, hosts, spans


def _release_spans(layers: pl.DataFrame, groups: pl.DataFrame) -> pl.DataFrame | None:
    """host, vendor, kernel_release, _from, _to: the first and last bucket of each release a host
    ran, for the hosts that ran more than one in the window (None when none did); the vendor is
    the host's (`groups`). A host's platform in a bucket is the release it ran there: a rollout
    to half the fleet rolled back at the end of the day left every host on the old release, and
    grouped by their latest release the upgraded hosts' platform-wide failure was half of the old
    release's hosts failing, a "down" alert on each (tests/fleetgen54). `layers` as for
    `_host_groups`."""
    last = "last_bucket" if "last_bucket" in layers.columns else "bucket"
    release = pl.col("kernel_release").cast(pl.String)
    spans = (layers.lazy().filter(pl.col("kernel_release").is_not_null())
             .group_by("host", release)
             .agg(pl.col("bucket").min().alias("_from"), pl.col(last).max().alias("_to"))
             .filter(pl.len().over("host") > 1).collect())
    if spans.is_empty():
        return None
    return spans.join(groups.select("host", "vendor"), on="host", how="left")


def _with_platform(frame: pl.DataFrame | pl.LazyFrame, hosts: pl.DataFrame,
                   spans: pl.DataFrame | None) -> pl.DataFrame | pl.LazyFrame:
    """`frame` (host, bucket, ...) with each row's `_plat`: its host's (`hosts`), or for a host
    that ran more than one release, the one whose span holds the bucket and began last (the
    rollout inside a day spent on the old release)."""
    lf = frame.lazy().join(hosts.lazy(), on="host", how="left")
    if spans is not None:
        at = (frame.lazy().select("host", "bucket").unique()
              .join(spans.lazy(), on="host")
              .filter((pl.col("bucket") >= pl.col("_from")) & (pl.col("bucket") <= pl.col("_to")))
              .group_by("host", "bucket").agg(pl.col("_plat").sort_by("_from").last().alias("_plat_at")))
        lf = (lf.join(at, on=["host", "bucket"], how="left")
              .with_columns(pl.coalesce("_plat_at", "_plat").alias("_plat")).drop("_plat_at"))
    return lf if isinstance(frame, pl.LazyFrame) else lf.collect()


PLATFORM_CALLS_PART_ROWS = 1_000_000  # cells a pass of _platform_calls (see there)


def _platform_calls(host_calls: pl.DataFrame, hosts: pl.DataFrame, spans: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per (probe, bucket, _plat) with calls: the platform's calls (`_N_plat`) and how many of
    its hosts made them (`_H_plat`, UInt32); `hosts`, `spans`: from _platform_hosts.

    The distinct count is made over disjoint sets of hosts (by the host's code), about
    PLATFORM_CALLS_PART_ROWS cells at a time, and the parts' counts added: the same numbers,
    since no host is in two sets. Over all ~5M cells of a fleet-day at once, polars' distinct
    count per group took ~330 MiB, the audit's memory peak (bench_audit --stages: host_alerts);
    a part takes ~55 MiB, in the same CPU time."""
    with_calls = host_calls.lazy().filter(pl.col("n") > 0).select("host", "probe", "bucket", "n")
    parts = max(1, -(-host_calls.height // PLATFORM_CALLS_PART_ROWS))
    code = pl.col("host").to_physical() if host_calls.schema["host"] == pl.Categorical else pl.col("host").hash()
    per_part = [
        _stream(_with_platform(with_calls.filter(code % parts == part), hosts, spans)
                .group_by("probe", "bucket", "_plat")
                .agg(pl.col("n").sum().alias("_N_plat"), pl.col("host").n_unique().cast(pl.UInt32).alias("_H_plat")))
        for part in range(parts)
    ]
    if parts == 1:
        return per_part[0]
    return (pl.concat(per_part).group_by("probe", "bucket", "_plat")
            .agg(pl.col("_N_plat").sum(), pl.col("_H_plat").sum()))


def _host_groups(layers: pl.DataFrame) -> pl.DataFrame:
    """host, vendor, kernel_release: each host's platform, the vendor and release of its latest
    bucket (a host rebooted into a new release belongs to that one's group; a bucket naming two,
    the host rebooted within it, the later in text order: the same whatever the rows' order).
    `layers` is the calls table (per bucket) or split_cell_attributes' (its `last_bucket`)."""
    last = "last_bucket" if "last_bucket" in layers.columns else "bucket"
    lf = layers.lazy().select("host", last, pl.col("vendor", "kernel_release").cast(pl.String))
    # (each column on its own: a host whose counters never name a vendor keeps its release)
    latest = [lf.filter(pl.col(c).is_not_null()).group_by("host").agg(pl.col(c).sort_by([last, c]).last())
              for c in ("vendor", "kernel_release")]
    return lf.select("host").unique().join(latest[0], on="host", how="left").join(latest[1], on="host", how="left").collect()


def _platform_wide(unexpected: pl.DataFrame, window_calls: pl.DataFrame, groups: pl.DataFrame,
                   min_group_hosts: int) -> pl.DataFrame:
    """(probe, errno) shown by every host of one (vendor, kernel release) group that ran the
    probe over the window -- `min_group_hosts` of them or more -- and by no other: the platform's
    cause (see _without_platform_wide), not one host's."""
    plat = ["vendor", "kernel_release"]
    shown = unexpected.join(groups, on="host", how="left")
    single = (shown.group_by("probe", "errno").agg(pl.len().alias("_hosts"), pl.struct(plat).n_unique().alias("_groups"),
                                                   pl.col(plat).first())
              .filter((pl.col("_groups") == 1) & (pl.col("_hosts") >= min_group_hosts)))
    if single.is_empty():
        return single.select("probe", "errno")
    running = (window_calls.filter(pl.col("n_w") > 0).join(single.select("probe").unique(), on="probe", how="semi")
               .join(groups, on="host", how="left").group_by("probe", *plat).agg(pl.len().alias("_running")))
    return (single.join(running, on=["probe", *plat], how="left", nulls_equal=True)
            .filter(pl.col("_hosts") >= pl.col("_running")).select("probe", "errno"))


def _without_platform_wide(cells: pl.DataFrame, host_calls: pl.DataFrame, platforms: Platforms,
                           bad_ratio: float, min_group_hosts: int,
                           platform_calls: pl.DataFrame | None = None, bucket: str = "15m") -> pl.DataFrame:
    """`cells` without those of a platform-wide failure: in a bucket, every host of one (vendor,
    kernel release) group that called the probe -- `min_group_hosts` of them or more -- failed
    it with the errno on `bad_ratio` of its calls. The cause is the platform's (a driver release
    failing every create_qp), its root-cause cluster names it; one alert per host, each "down",
    would page the on-call N times for one rollback. A rack's switch fails part of a platform's
    hosts, not all of them, and keeps its per-host alerts (see the down rule): also where its hosts
    are, in a bucket, the only ones calling the probe, while other hosts of the platform call it
    without that errno within PEER_BUCKETS buckets (a start-up probe a rack's requeued jobs call at
    hh:15 and hh:45, the platform's healthy hosts at hh:00: tests/fleetgen65). A host is of the
    platform it ran in the bucket (`_with_platform`).
    `platforms`: _platform_hosts'; `platform_calls`: _platform_calls of `host_calls` when the caller has it."""
    bad = cells.filter(pl.col("f") >= bad_ratio * pl.col("n").clip(1))
    if bad.is_empty():
        return cells
    _, hosts, spans = platforms
    bad = _with_platform(bad, hosts, spans)
    failing = bad.group_by("probe", "errno", "bucket", "_plat").agg(pl.col("host").n_unique().alias("_failing"))
    # a group is wide only with `min_group_hosts` calling hosts, all failing: so only the
    # (probe, bucket, platform)s where that many hosts fail need their calling hosts counted
    failing = failing.filter(pl.col("_failing") >= min_group_hosts)
    if failing.is_empty():
        return cells
    if platform_calls is None:
        platform_calls = _platform_calls(host_calls, hosts, spans)
    calling = platform_calls.select("probe", "bucket", "_plat", pl.col("_H_plat").alias("_calling"))
    wide = (failing.join(calling, on=["probe", "bucket", "_plat"], how="left")
            .filter((pl.col("_failing") >= pl.col("_calling")) & (pl.col("_calling") >= min_group_hosts)))
    if wide.is_empty():
        return cells
    wide = wide.join(_platform_peers_ok(wide, bad, cells, host_calls, hosts, spans, bucket),
                     on=["probe", "errno", "bucket", "_plat"], how="anti")
    if wide.is_empty():
        return cells
    drop = bad.join(wide.select("probe", "errno", "bucket", "_plat"), on=["probe", "errno", "bucket", "_plat"],
                    how="semi").select("host", "probe", "errno", "bucket")
    return cells.join(drop, on=["host", "probe", "errno", "bucket"], how="anti")


PEER_BUCKETS = 2  # buckets either side of a platform-wide candidate where a peer's calls contradict it


def _platform_peers_ok(wide: pl.DataFrame, bad: pl.DataFrame, cells: pl.DataFrame, host_calls: pl.DataFrame,
                       hosts: pl.DataFrame, spans: pl.DataFrame | None, bucket: str) -> pl.DataFrame:
    """The (probe, errno, bucket, _plat) rows of `wide` (platform-wide candidates) where another
    host of the platform -- not one failing in the candidate's bucket (`bad`) -- called the probe
    without failing it with the errno at all (no row of `cells` for it there) within PEER_BUCKETS
    buckets: the failure is not the platform's. (The failing hosts' own calls before a fleet-wide
    change began are no peers: every host of the platform fails from then on.)"""
    near = pl.duration(nanoseconds=units.parse_duration_ns(bucket, "bucket") * PEER_BUCKETS)
    probes = wide.select(pl.col("probe").cast(host_calls.schema["probe"])).unique()
    calls = _with_platform(host_calls.lazy().filter(pl.col("n") > 0).join(probes.lazy(), on="probe", how="semi")
                           .select("host", "probe", "bucket"), hosts, spans).rename({"bucket": "_at"})
    failed = cells.lazy().select("host", "probe", "errno", pl.col("bucket").alias("_at"))
    failing = bad.lazy().select("host", "probe", "errno", "bucket")
    return (wide.lazy().select("probe", "errno", "bucket", "_plat")
            .join(calls, on=["probe", "_plat"])
            .filter((pl.col("_at") - pl.col("bucket")).abs() <= near)
            .join(failing, on=["host", "probe", "errno", "bucket"], how="anti")
            .join(failed, on=["host", "probe", "errno", "_at"], how="anti")
            .select("probe", "errno", "bucket", "_plat").unique().collect())


def _stream(lf: pl.LazyFrame) -> pl.DataFrame:
    return lf.collect(engine="streaming")


def _learned_probe_errno(expected: ExpectedErrors, probe: str, errno: str) -> bool:
    """Counters carry no operation: an errno counts as expected when any active entry for the
    probe covers it, whatever its context."""
    for e in expected.entries:
        if e.status == "active" and e.matches(probe, errno, path=e.path, context=e.context):
            return True
    return False


def _family_band(expected: ExpectedErrors, probe: str, errno: str) -> tuple[bool, float | None, bool]:
    """(covered, rate band, configuration) of a counters (probe, errno): covered when an active
    entry matches it or a learned family's errno propagates through this probe (stats
    `covers`); the band is the widest learned `rate_upper` among the covering learned entries,
    None when a curated entry (or a learned one without a band) covers it: never alert then.
    configuration: every covering learned entry says a host's own rate of it is how the host is
    configured (stats `host_configuration`, see baseline.fleet.expected)."""
    covered, bands, unbounded, config = False, [], False, True
    for e in expected.entries:
        if e.status != "active":
            continue
        stats = e.stats or {}
        hit = e.matches(probe, errno, path=e.path, context=e.context) or (
            e.source == "learned" and probe in (stats.get("covers") or []) and e.matches(e.probe, errno, path=e.path,
                                                                                      context=e.context))
        if not hit:
            continue
        covered = True
        config = config and bool(stats.get("host_configuration"))
        band = stats.get("rate_upper")
        if isinstance(band, dict):  # learned per covered probe
            band = band.get(probe)
        if e.source == "learned" and band is not None:
            bands.append(float(band))
        else:
            unbounded = True
    if not covered or unbounded:
        return covered, None, covered and config
    return True, max(bands), config


def _family_anchors(expected: ExpectedErrors, probe: str, errno: str,
                    probe_depth: dict[str, int]) -> list[tuple[str, float]]:
    """(anchor probe, its band) of each learned family with a band covering (probe, errno): the
    family's shallowest covered probe with a known depth, the entry of its own operation."""
    out = []
    for e in expected.entries:
        stats = e.stats or {}
        bands = stats.get("rate_upper")
        if e.status != "active" or e.source != "learned" or not isinstance(bands, dict) or e.errno != errno:
            continue
        covers = [p for p in stats.get("covers") or [] if p in bands and p in probe_depth]
        if probe not in (stats.get("covers") or []) or not covers:
            continue
        anchor = min(covers, key=lambda p: (probe_depth[p], p))
        out.append((anchor, float(bands[anchor])))
    return out


def _fatal_cells(errs: pl.DataFrame, expected: ExpectedErrors, bucket: str) -> pl.Series:
    """Per row of `errs` (host, probe, errno, bucket, ...): a learned family's count on a host
    its entry names in ``fatal_hosts``, in the bucket of ``fatal_since`` or later (the stop's
    bucket: its first record is in it) -- at any of the probes the family's errno goes up
    through (``covers``). Not routine there, whatever the host's rate over the window: a host
    whose CREATE_QP firmware command timed out on every call for an hour of six failed it on
    14 % of its calls over the window, inside the band three hosts of a firmware version that
    retry through it 17 % of the time gave the family (tests/fleetgen56), and it raised no alert."""
    rows: dict[tuple[str, str, str], dt.datetime | None] = {}
    for e, host, since in _fatal_hosts(expected):
        for probe in {e.probe, *((e.stats or {}).get("covers") or [])}:
            key = (str(probe), str(e.errno), host)
            # several entries naming the host (callers' sub-families): the earliest stop counts
            if key in rows and (rows[key] is None or (since is not None and rows[key] <= since)):
                continue
            rows[key] = since
    if not rows or errs.is_empty():
        return pl.Series("_fatal", [False] * errs.height, dtype=pl.Boolean)
    fatal = pl.DataFrame([(*k, v) for k, v in rows.items()], orient="row",
                         schema={"probe": pl.String, "errno": pl.String, "host": pl.String,
                                 "_since": pl.Datetime("ns", "UTC")})
    fatal = fatal.with_columns(pl.col(c).cast(errs.schema[c]) for c in ("probe", "errno", "host"))
    hit = errs.select("host", "probe", "errno", "bucket").join(
        fatal.with_columns(pl.lit(True).alias("_fatal")), on=["host", "probe", "errno"], how="left",
        maintain_order="left")
    return hit.select(pl.col("_fatal").fill_null(False) & (
        pl.col("_since").is_null() | (pl.col("bucket") >= pl.col("_since").dt.truncate(bucket))))["_fatal"]


def _outside_learned_bands(host_calls: pl.DataFrame, errs: pl.DataFrame, expected: ExpectedErrors,
                           window_calls: pl.DataFrame | None = None,
                           probe_depth: dict[str, int] | None = None, bucket: str = "15m") -> pl.DataFrame:
    """The error counts host alerts may use: expected (probe, errno) dropped, except a learned
    family's counts on a host whose window rate (errno count / invocations of the probe) left the
    family's learned band: a routine error at its usual rate never alerts, ten times it does.

    With `probe_depth`, the rate must also leave the band at the family's own operation entry
    (its shallowest covered probe, see _family_anchors): a probe shared by several operations
    (ib_rdmacg_try_charge charges every object created) sees an errno's rate rise when a host
    makes more of that errno's operation than usual -- jobs requeued after a crash create their
    QPs again and again -- while no operation fails more often."""
    pairs = errs.select("probe", "errno").unique()
    verdicts = [_family_band(expected, str(p), str(e)) for p, e in pairs.iter_rows()]
    pairs = pairs.with_columns(
        pl.Series("_covered", [v[0] for v in verdicts], dtype=pl.Boolean),
        pl.Series("_band", [v[1] for v in verdicts], dtype=pl.Float64),
        pl.Series("_config", [v[2] for v in verdicts], dtype=pl.Boolean),
    )
    errs = errs.join(pairs, on=["probe", "errno"])
    # a family on a host where its operation stopped succeeding (`_fatal_cells`) counts as it is
    errs = errs.with_columns(_fatal_cells(errs, expected, bucket).alias("_fatal"))
    plain = errs.filter(~pl.col("_covered") | pl.col("_fatal"))
    banded = errs.filter(pl.col("_covered") & pl.col("_band").is_not_null() & ~pl.col("_fatal"))
    if banded.height:
        window_n = (host_calls.group_by("host", "probe").agg(pl.col("n").sum().alias("_n")) if window_calls is None
                    else window_calls.rename({"n_w": "_n"}))
        host_rates = (
            banded.group_by("host", "probe", "errno").agg(pl.col("count").sum().alias("_f"), pl.col("_band").first())
            .join(window_n, on=["host", "probe"], how="left")
        )
        rates = host_rates.filter(pl.col("_f") > pl.col("_band") * pl.col("_n").fill_null(0))
        if probe_depth and rates.height:
            anchors = [(p, e, a, b) for p, e in rates.select("probe", "errno").unique().iter_rows()
                       for a, b in _family_anchors(expected, str(p), str(e), probe_depth)]
            if anchors:
                cat = host_rates.schema["probe"]
                anchor = pl.DataFrame(anchors, schema={"probe": pl.String, "errno": pl.String, "_anchor": pl.String,
                                                       "_anchor_band": pl.Float64}, orient="row")
                anchor = anchor.with_columns(pl.col("probe", "_anchor").cast(cat),
                                             pl.col("errno").cast(host_rates.schema["errno"]))
                # the anchor's own count and calls on the host ("_f" of the anchor probe)
                at_anchor = (errs.filter(pl.col("probe").is_in(anchor["_anchor"].unique().implode()))
                             .group_by("host", "probe", "errno").agg(pl.col("count").sum().alias("_fa"))
                             .join(window_n, on=["host", "probe"], how="left")
                             .rename({"probe": "_anchor", "_n": "_na"}))
                out_at_anchor = (
                    rates.select("host", "probe", "errno").join(anchor, on=["probe", "errno"])
                    .join(at_anchor, on=["host", "_anchor", "errno"], how="left")
                    .filter(pl.col("_fa").fill_null(0) > pl.col("_anchor_band") * pl.col("_na").fill_null(0))
                    .select("host", "probe", "errno").unique()
                )
                # pairs no learned family anchors (a band without one) keep the probe's own verdict
                unanchored = rates.join(anchor.select("probe", "errno").unique(), on=["probe", "errno"], how="anti")
                rates = pl.concat([out_at_anchor, unanchored.select("host", "probe", "errno")], how="vertical_relaxed")
        banded = banded.join(rates.select("host", "probe", "errno"), on=["host", "probe", "errno"], how="semi")
        plain = pl.concat([plain, banded], how="vertical_relaxed")
    # `_learned`: a routine family's counts, kept because the host's rate left its band;
    # `_config`: one whose host rate is the host's configuration (no bad state by itself)
    return plain.with_columns(pl.col("_covered").alias("_learned"),
                              (pl.col("_covered") & pl.col("_config") & ~pl.col("_fatal")).alias("_config")
                              ).drop("_covered", "_band", "_fatal")


# --------------------------------------------------------------------------------------------
# the audit
# --------------------------------------------------------------------------------------------
def run_audit(
    dataset: str | os.PathLike | EventsInput,
    out_dir: str | os.PathLike | None = None,
    since: str | dt.datetime | None = None,
    model: GoodTraceBaseline | str | os.PathLike | None = None,
    expected: ExpectedErrors | str | os.PathLike | None = None,
    learn_expected: bool = True,
    min_layers: int = 4,
    batch_rows: int = 250_000,
) -> AuditResult:
    """Audit a fleet dataset; write findings/clusters/host_alerts Parquet into `out_dir`.

    model: a fitted GoodTraceBaseline or a model file; None = learn it from the dataset's good
    traces first. A given model is extended with the dataset's own good traces (on a copy):
    known-good is what the model saw or the audited window shows succeeding, so an update that
    changed a success path since the model was learned (a frame a new driver adds) is not where
    every failure left good behaviour. expected: ExpectedErrors or a YAML path; None = the repo's curated file.
    With learn_expected, fleet-learned expected errors (baseline.fleet.expected) are added.
    batch_rows: event rows per batch of the one pass over the events (the same tables whatever
    it is; 250,000 rather than 500,000 leaves ~150 MiB less in the process on a fleet-day, whose
    ~5M-row per-trace table is held from then on, for a few % more CPU).
    """
    since_dt = parse_since(since)
    if isinstance(model, (str, os.PathLike)):
        model = GoodTraceBaseline.load(model)
    if model is not None and not isinstance(model, GoodTraceBaseline):
        raise TypeError(f"model: expected a GoodTraceBaseline, a model file or None, found {type(model).__name__}")
    min_layers = units.positive_int(min_layers, "min_layers")
    batch_rows = units.positive_int(batch_rows, "batch_rows")
    to_fit = GoodTraceBaseline(batch_rows=batch_rows) if model is None else model.extensible_copy()
    if isinstance(expected, (str, os.PathLike)):
        expected = ExpectedErrors.load(expected)
    if expected is None:
        expected = load_default()
    with thread_pool(1, "counters") as pool:
        # the counters are reduced to small bucketed tables on a thread of their own while this
        # one makes the pass over the events: the two share nothing, and each runs on about one
        # core (the summary lookups are Python under the GIL, the events pass's reductions short
        # eager steps between its batch reads); the bucketed tables were held through the events
        # pass before too, only the counters' scans' working set now sits beside it. The
        # counters' listing goes there too: ~0.5 CPU s of this thread alone before the events
        # pass began (10,383 directories on a 10,000-host day); the critical path is now
        # max(events, listing + counters) instead of listing + max(events, counters)
        buckets_of = pool.submit(_listed_bucketed_counters, dataset, since_dt)
        try:
            # one pass over the events: per-trace table + one representative per distinct chain
            # (and the baseline fitted on the way when none is given)
            # (with the root rows of timed good traces for the rising_latency alert, see below)
            # (and each host's metadata values, for the clusters' shared ones: name_shared_metadata)
            good_roots: list[pl.DataFrame] = []
            metadata: list[pl.DataFrame] = []
            traces, chains = collect_traces(dataset, since=since_dt, batch_rows=batch_rows, fit=to_fit,
                                            good_roots=good_roots, host_metadata=metadata)
        except Exception:
            raise_earlier_failure(buckets_of)  # a broken counters file is still reported first
            raise
        buckets, stale_summary_hosts = buckets_of.result()
        # the future holds its result: without this, `del buckets` below freed nothing, and the
        # bucketed counters (~130 MiB on a 10,000-host day) stayed to the end of the audit
        del buckets_of
    if traces.is_empty():  # (files there, every row before --since)
        raise NoEventsError(f"{scope(dataset, since_dt)}no events to audit")
    # a host whose successful calls got slower and stayed so (no errno: no alert from the
    # counters sees it), from the good traces' root latencies (baseline.fleet.latency); the
    # rows are freed at once, the alerts are all that is kept
    from baseline.fleet.latency import rising_latency

    slow = rising_latency(pl.concat(good_roots, how="vertical_relaxed"))
    del good_roots
    if not hasattr(to_fit, "operations_") or to_fit.n_traces_ == 0:
        raise TracebaseError(f"{scope(dataset, since_dt)}no good traces to learn from "
                             f"(kinds {', '.join(to_fit.good_kinds)})")
    drift = unseen_success_paths(model, to_fit) if model is not None else None
    model = to_fit
    from baseline.fleet.expected import release_history

    # once: the expected-error learner and the clustering both need the hosts' kernel releases
    releases = release_history(traces, cell_attributes(buckets) if buckets is not None else None)
    if learn_expected:
        from baseline.fleet.expected import expected_from_traces
        from baseline.fleet.model import good_root_latency, host_nic_identity

        def nic_identity(hosts: list[str], errnos: list[str]) -> pl.DataFrame:
            return host_nic_identity(dataset, hosts, errnos, since=since_dt)

        def good_latency(operation: str, hosts: list[str]) -> pl.DataFrame:
            return good_root_latency(dataset, operation, hosts, since=since_dt)

        learned = expected_from_traces(traces, chains, counters=buckets, releases=releases,
                                       nic_identity=nic_identity, good_latency=good_latency).entries
        expected = superseded_by_callers(expected, learned) + ExpectedErrors(learned, source="<learned from dataset>")
    # entries naming a caller (comm) are matched per finding's process (caller_expected); the
    # chains' analysis and the counters know no process, so they take the others only
    anyone, callers = expected.split_by_caller()

    # the host alerts need the expected errors (curated + learned) and the model, nothing of the
    # findings: computed now, the bucketed counters (~200 MB on a 10,000-host day) are freed
    # before the findings are built (the audit's peak)
    alerts = pl.DataFrame(schema=polars_schema("host_alerts"))
    unshowable = unshowable_probes(traces, cell_attributes(buckets)) if buckets is not None else None
    attached = (cell_attributes(buckets).select(pl.col("host", "probe").cast(pl.String)).unique()
                if buckets is not None else None)
    if buckets is not None:
        depths = call_ranks(pl.concat([model.edges_.select(pl.col("parent", "probe").cast(pl.String)),
                                       chain_edges(chains)]))
        # a family split by caller only because one caller dies of it (it passed fleet-wide,
        # stats fleet_wide) is still what the hosts' counters show routinely: its band holds for
        # them (a driver restart's EIO on every host, tests/fleetgen16), as counters know no caller
        fleet_wide = [replace(e, comm=None) for e in callers.entries if (e.stats or {}).get("fleet_wide")]
        alerts = host_alerts(buckets, anyone + ExpectedErrors(fleet_wide, source=anyone.source) if fleet_wide else anyone,
                             probe_depth=depths)
        del buckets
        alerts = routine_for_their_callers(alerts, traces, chains, callers)
    if not slow.is_empty():
        alerts = pl.concat([alerts, slow], how="vertical_relaxed")
    window = (traces["start_time"].min(), traces["start_time"].max())
    traces_audited = traces.height
    # the per-trace table is the biggest thing held: only its failing traces go on, and it is
    # freed before the findings are joined together (findings_of, in two steps); the columns
    # they keep are filtered once it is gone, a column at a time (`_failing`, in two steps)
    failing = _failing_columns(traces)
    del traces
    failing = _filter_by_column(failing, "_failing")
    findings = _findings_of_failing(failing, chains, model, anyone, min_layers=min_layers, releases=releases,
                                    unshowable=unshowable)
    del failing, chains
    findings = caller_expected(findings, callers)
    findings = update_regressions(findings, expected, releases)
    findings = seen_through_coverage_gaps(findings, anyone, attached)
    findings, clusters = cluster_findings(findings, window, releases=releases)
    if clusters.height and (clusters["hosts"] >= 2).any():  # (one host's cluster names its host)
        host_pairs = _metadata_of(metadata)
        from baseline.fleet.model import job_metadata, trace_metadata

        def read_traces(traces: pl.DataFrame) -> pl.DataFrame:
            return trace_metadata(dataset, traces, since=since_dt)

        clusters = name_shared_metadata(clusters, findings, host_pairs, read_traces)
        clusters = name_shared_job_metadata(clusters, findings, host_pairs,
                                            lambda hosts: job_metadata(dataset, hosts, since=since_dt), read_traces)
        del host_pairs
    del metadata
    findings = findings.with_columns(pl.when(pl.col("expected")).then(0.0).otherwise(1.0).alias("score"))
    # sorted by time a column at a time, each unsorted column dropped once its sorted copy
    # exists: a sort of the table holds two copies of millions of findings at once
    order = findings.select(pl.arg_sort_by("time", "trace_id")).to_series()
    columns = []
    for name in findings.columns:
        columns.append(findings.get_column(name).gather(order))
        findings = findings.drop(name)
    findings = pl.DataFrame(columns)
    del order, columns
    # ids another collector numbered per host were read qualified by their host (model.HOST_MARK)
    findings = own_trace_ids(findings)
    if "example_trace_id" in clusters.columns:
        clusters = own_trace_ids(clusters, "example_trace_id")
    result = AuditResult(findings, clusters, alerts, window=window, traces_audited=traces_audited,
                         model_drift=drift, stale_summary_hosts=stale_summary_hosts)
    if out_dir is not None:
        result.files = write_audit(result, out_dir)
    return result


def bucketed_counters(counter_files: list[Path], since: dt.datetime | None,
                      stale: list[Path] | None = None) -> tuple | None:
    """The counters files reduced to the audit's bucketed tables (calls, errors, cell attributes:
    see split_cell_attributes), or None when there are no counters to read. `stale`: see
    counters.counter_sources."""
    # summaries found or footers validated (Python, holds the GIL); then the scans
    sources = counter_sources(counter_files, since, stale) if counter_files else None
    raw_scans = list(counter_scans(sources[0], since)) if sources and sources[0] else []
    buckets = counter_buckets(counter_files, since, sources=sources, raw_scans=raw_scans) if sources else None
    if buckets is None:
        return None
    calls, attributes = split_cell_attributes(buckets[0])
    return calls, buckets[1], attributes


def _listed_bucketed_counters(dataset: Any, since: dt.datetime | None) -> tuple[tuple | None, int]:
    """bucketed_counters of the dataset's counters files, listed by the thread that runs it, and
    the number of hosts read whole because their summaries are stale."""
    counter_files = _counter_files(dataset, since)
    stale: list[Path] = []
    return (bucketed_counters(counter_files, since, stale) if counter_files else None), len(stale)


def raise_earlier_failure(earlier: Future | None) -> None:
    """Called while a stage fails on this thread: when `earlier` (a stage that ran before it on
    one thread, now running beside it) fails too, raise `earlier`'s error instead, as the
    single-threaded order did. The reported error then does not depend on which thread got
    there first. Waits for `earlier`; returns when it succeeded (or was cancelled)."""
    if earlier is None:
        return
    try:
        earlier.result()
    except CancelledError:
        return
    except Exception as exc:  # noqa: BLE001 (re-raised as it is)
        raise exc from None


def _counter_files(dataset: Any, since: dt.datetime | None) -> list[Path]:
    if isinstance(dataset, (str, os.PathLike)) and (Path(dataset) / "counters").is_dir():
        return dataset_files(dataset, "counters", since=since.date().isoformat() if since else None)
    return []


AUDIT_TABLES = ("findings", "clusters", "host_alerts")
SETS_DIR = ".sets"  # <out>/.sets/<set>/{findings,clusters,host_alerts}.parquet
CURRENT = ".current"  # <out>/.current -> .sets/<set>: the one published output set


def write_audit(result: AuditResult, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write the three audit tables as one output set that replaces the previous set as a whole.

    The tables go into a new directory <out>/.sets/<set>/; then the symlink <out>/.current is
    pointed at it by one rename, and <out>/<table>.parquet are (stable) symlinks through
    .current. A reader, or a kill -9 at any point, therefore sees the old set or the new one,
    never new findings beside old clusters. Sets no longer current are removed afterwards (and
    at the next write, after a crash). An output directory holding plain table files (written
    before this layout) is first adopted as a set, step by step, each step consistent."""
    out = Path(out_dir)
    try:
        with output_dirs(out):  # a failed first write leaves no empty output directory behind
            _current_pointer(out)  # before any work: a refusal leaves the directory as it was
            # (a name of its own: two audits into one directory unlinked each other's probe)
            probe = out / f".write-test.{os.getpid()}.{os.urandom(3).hex()}.tmp"
            probe.touch()
            probe.unlink()
            _adopt_plain_files(out)
            new, held = _new_set_dir(out)
            try:
                try:
                    # millions of rows: converted to Arrow (categoricals to text) a slice at a time
                    findings = result.findings.select([c for c in polars_schema("findings").names()
                                                       if c in result.findings.columns])
                    # trace_id is unique per finding: a dictionary would only hash millions of ids to
                    # give up at its size limit (~1 CPU s per 4M findings); every other text column repeats
                    plain = {"use_dictionary": [c for c in encoding_options(FINDINGS_SCHEMA)["use_dictionary"]
                                                if c != "trace_id"]}
                    write_table_batches(findings.iter_slices(FINDINGS_WRITE_ROWS), new / "findings.parquet",
                                        "findings", parquet_options=plain)
                    write_table(result.clusters, new / "clusters.parquet", "clusters")
                    write_table(result.host_alerts, new / "host_alerts.parquet", "host_alerts")
                    fsync_dir(new)
                    _point_current(out, new)
                except BaseException:
                    # a write that failed (a full disk: every hourly run) left its set behind, empty
                    # or half, until a later run succeeded; never the set .current already points at
                    _remove_unpublished(out, new)
                    raise
                _link_tables(out)
                _remove_stale_sets(out)
            finally:
                os.close(held)  # from here the set is any later audit's to remove once superseded
            _remove_if_superseded(out, new)
            # the directory removed while the set was written (rm -rf of the output mid-run):
            # the links were made again in a new one, pointing at nothing, and the run said
            # it wrote them
            gone = _tables_missing(out)
            if gone:
                raise TracebaseError(f"{out}: expected the audit's tables there once written, found {', '.join(gone)} "
                                     "missing (the directory was removed or replaced while the audit wrote it); "
                                     "run the audit again")
    except OSError as exc:
        where = exc.filename or out
        # the audit's own set directory or temporary (named absolute when -o was relative): the
        # output the user gave
        if isinstance(where, str) and os.path.abspath(where).startswith(os.path.join(os.path.abspath(out / SETS_DIR), "")):
            where = out
        raise TracebaseError(f"{where}: cannot write audit output ({exc.strerror or exc})") from None
    return {name: out / f"{name}.parquet" for name in AUDIT_TABLES}


def _tables_missing(out: Path) -> list[str]:
    """The table links of `out` that lead nowhere. A set that went while they were followed,
    because another audit published its own and pruned it meanwhile, is no loss: the links
    are followed again through the new `.current` (a few times: each needs another audit's
    whole write to lose)."""
    for _ in range(8):
        before = _current_target(out)
        gone = [f"{name}.parquet" for name in AUDIT_TABLES if not (out / f"{name}.parquet").exists()]
        if not gone or _current_target(out) == before:
            return gone
    return gone


def _current_target(out: Path) -> str | None:
    try:
        return os.readlink(out / CURRENT)
    except OSError:
        return None


# a set directory's name as _new_set_dir makes it: only such directories are ever removed
_SET_NAME = re.compile(r"set-\d{8}T\d{6}-(?P<pid>\d+)-[0-9a-f]{8}", re.ASCII)  # _new_set_dir's names
_STAGED_NAME = re.compile(r"\.new-(?P<set>set-\d{8}T\d{6}-(?P<pid>\d+)-[0-9a-f]{8})", re.ASCII)  # before its lock
_LINK_TEMPORARY = re.compile(r"\..+\.(?P<pid>\d+)\.[0-9a-f]{6}\.tmp", re.ASCII)  # _replace_symlink's


def _sets_dir(out: Path) -> Path:
    """<out>/.sets, which must be the real directory the audit made: a symlink there (planted, or
    copied from elsewhere) made the audit write into its target and then remove every directory
    in it but the new set -- `.sets -> /etc` emptied /etc as root."""
    sets = out / SETS_DIR
    if sets.is_symlink() or (os.path.lexists(sets) and not sets.is_dir()):
        found = f"a symlink to {os.readlink(sets)}" if sets.is_symlink() else "a file"
        raise TracebaseError(f"{sets}: expected the audit's own directory of output sets, found {found} "
                             f"(remove it, or write the audit elsewhere with -o)")
    return sets


def check_output_dir(out_dir: str | os.PathLike) -> None:
    """Refuse, before the audit's work, an output directory whose `.sets` or `.current` is not
    what `write_audit` makes (one line naming it; write_audit checks again)."""
    out = Path(out_dir)
    if out.is_dir():
        _sets_dir(out)
        _current_pointer(out)


def _current_pointer(out: Path) -> Path:
    """<out>/.current, which must be absent or the symlink the audit made: a regular file, a
    directory or a FIFO there is not ours (a copy made with `cp -L`, a user's file) and was
    silently replaced by the new pointer (a directory: refused only after the whole set was
    written). Refused like a linked `.sets`, naming what was found."""
    current = out / CURRENT
    if os.path.lexists(current) and not current.is_symlink():
        found = ("a directory" if current.is_dir() else "a regular file" if current.is_file()
                 else "a special file")
        raise TracebaseError(f"{current}: expected the audit's symlink to its current output set, found {found} "
                             f"(remove it, or write the audit elsewhere with -o)")
    return current


def _new_set_dir(out: Path) -> tuple[Path, int]:
    """A new set directory, and a descriptor holding an exclusive flock on it: while its writer
    holds it, another audit's clean-up leaves the set alone (see _remove_stale_sets). It is
    made under a staging name, locked, then renamed: a set under its real name is never
    unlocked before its writer is done with it or gone."""
    import fcntl

    sets = make_dirs(_sets_dir(out))
    # make_dirs (not mkdtemp, which makes it 0700): the set honours the umask like every output
    # and is never world-writable; the name is unique (pid + random)
    name = f"set-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{os.getpid()}-{os.urandom(4).hex()}"
    staged = make_dirs(sets / f".new-{name}")
    held = os.open(staged, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        os.rename(staged, sets / name)
    except BaseException:
        os.close(held)
        with contextlib.suppress(OSError):
            os.rmdir(staged)
        raise
    return sets / name, held


def _replace_symlink(link: Path, target: str) -> None:
    tmp = link.with_name(f".{link.name}.{os.getpid()}.{os.urandom(3).hex()}.tmp")
    os.symlink(target, tmp)
    try:
        os.replace(tmp, link)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _point_current(out: Path, set_dir: Path) -> None:
    _replace_symlink(out / CURRENT, f"{SETS_DIR}/{set_dir.name}")
    fsync_dir(out)


def _link_tables(out: Path) -> None:
    for name in AUDIT_TABLES:
        link = out / f"{name}.parquet"
        target = f"{CURRENT}/{name}.parquet"
        if not (link.is_symlink() and os.readlink(link) == target):
            _replace_symlink(link, target)
    fsync_dir(out)


def _adopt_plain_files(out: Path) -> None:
    """Turn table files written before the set layout into a set: hard links in a new set
    directory, .current pointed at it, then each plain file replaced by its symlink (every
    intermediate state shows the old tables only)."""
    plain = [name for name in AUDIT_TABLES if (out / f"{name}.parquet").is_file()
             and not (out / f"{name}.parquet").is_symlink()]
    if not plain:
        return
    adopted, held = _new_set_dir(out)
    try:
        for name in plain:
            os.link(out / f"{name}.parquet", adopted / f"{name}.parquet")
        fsync_dir(adopted)
        _point_current(out, adopted)
    finally:
        os.close(held)  # superseded by this audit's own set in a moment
    for name in plain:
        _replace_symlink(out / f"{name}.parquet", f"{CURRENT}/{name}.parquet")
    fsync_dir(out)


def _remove_unpublished(out: Path, set_dir: Path) -> None:
    import shutil

    with contextlib.suppress(OSError):
        if os.readlink(out / CURRENT) == f"{SETS_DIR}/{set_dir.name}":
            return  # published: the rename happened before the failure (its fsync)
    shutil.rmtree(set_dir, ignore_errors=True)


def _remove_stale_sets(out: Path) -> None:
    """Remove the sets no longer current, and the symlinks a kill left between symlink() and
    rename() -- but not a set another audit is still writing: two audits into one output
    directory (two schedulers, a rerun by hand) removed each other's set while it was being
    written, and the other one failed "cannot write audit output (No such file or directory)"
    (the robust battery's round10, 1 trial in 3). A set is being written while its writer
    holds the flock _new_set_dir took (a writer killed -9 holds none); one finished and
    superseded goes here, or at its own writer's end (see _remove_if_superseded)."""
    import shutil

    current = os.readlink(out / CURRENT).rsplit("/", 1)[-1] if (out / CURRENT).is_symlink() else None
    for entry in _sets_dir(out).iterdir():
        staged = _STAGED_NAME.fullmatch(entry.name)
        if staged and not entry.is_symlink() and entry.is_dir():  # a writer killed before its lock
            if not _written_by_another_live_process(staged):
                shutil.rmtree(entry, ignore_errors=True)
            continue
        # only the sets this code makes (a name it gives, a real directory): nothing else a user
        # or another tool put there, and never through a link
        named = _SET_NAME.fullmatch(entry.name)
        if entry.name != current and named and not entry.is_symlink() and entry.is_dir():
            _remove_if_stale(out, entry)
    for entry in out.glob(".*.tmp"):  # symlinks left by a kill between symlink() and rename()
        probe = entry.name.startswith(".write-test.") and entry.is_file() and not entry.is_symlink()
        if ((entry.is_symlink() or probe)
                and not _written_by_another_live_process(_LINK_TEMPORARY.fullmatch(entry.name))):
            entry.unlink(missing_ok=True)  # ... or the write probe left by a kill between its two calls


def _remove_if_stale(out: Path, set_dir: Path) -> None:
    """Remove `set_dir` unless another audit holds its flock (being written, see _new_set_dir)
    or it is current. Current is asked again under the set's lock: the caller's reading is
    older, and the set another audit published after it (then unlocked) was removed as the
    directory's current set (two audits in a loop, under load). Once its lock is free a
    set's writer has published it or died, and a set is never made current again."""
    import fcntl
    import shutil

    try:
        fd = os.open(set_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # (not ours to judge: left as it is)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        if _current_target(out) != f"{SETS_DIR}/{set_dir.name}":
            shutil.rmtree(set_dir, ignore_errors=True)
    finally:
        os.close(fd)


def _remove_if_superseded(out: Path, set_dir: Path) -> None:
    """This audit's set, published, then superseded by another audit's before this one ended:
    that audit's clean-up found it still locked, and nobody else would remove it before the
    next audit. Checked after the lock is released, so one of the two always removes it."""
    import shutil

    with contextlib.suppress(OSError):
        if os.readlink(out / CURRENT) != f"{SETS_DIR}/{set_dir.name}":
            shutil.rmtree(set_dir, ignore_errors=True)


def _written_by_another_live_process(named: re.Match | None) -> bool:
    """The pid in a staged set's or a temporary symlink's name (the patterns' `pid`) is another
    process that still runs."""
    from tracer.atomic import writer_gone

    if named is None or int(named["pid"]) == os.getpid():
        return False
    return not writer_gone(int(named["pid"]))


def read_audit(out_dir: str | os.PathLike) -> AuditResult:
    """Load the three audit tables written by `write_audit`."""
    from tracer.schema import read

    out = paths.audit_dir(out_dir)
    current = out / CURRENT
    if os.path.lexists(current) and (reason := missing_reason(current)) not in (None, NO_SUCH_FILE):
        # (a loop: the tables are links through it, each would be "no such file" and the link
        # not named; a set gone, the link dangling, is said by the table as before)
        raise TracebaseError(f"{current}: {reason} (expected the link to the output set `baseline audit` published)")
    tables = {}
    for name in ("findings", "clusters", "host_alerts"):
        path = out / f"{name}.parquet"
        if (reason := missing_reason(path)) is not None:  # (a loop in the .current link: not "no such file")
            raise TracebaseError(f"{path}: {reason} (expected the output of `baseline audit`)")
        tables[name] = read(path, name)
    f = tables["findings"]
    window = (f["time"].min(), f["time"].max()) if f.height else (None, None)
    return AuditResult(tables["findings"], tables["clusters"], tables["host_alerts"], window=window)

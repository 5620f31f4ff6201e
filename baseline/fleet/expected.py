"""Fleet expected-error learning: which errors are routine, with the statistic that says so.

An error predicate P = (probe, errno) in the context of an operation is *expected* when

* it recurs in operations that succeeded or that the job survived: an occurrence *survives*
  when a success follows in its job and either the root returned 0 (handled inside the
  operation) or the error is the operation's own result at the root frame; at least
  ``min_success`` surviving occurrences on ``min_hosts`` hosts and ``min_jobs`` jobs, and
* it does not raise the failure rate of the operation it happens in. We use CBI's
  Increase(P) = P(fail | P true) - P(fail | P observed) (Liblit et al., PLDI'05), where
  "observed" means the probe was reached in a trace of that operation, and require its upper
  confidence bound to stay <= ``max_increase`` (0.05: "about zero"). The bound is conservative: Wilson upper bound
  of P(fail | P true) minus Wilson lower bound of P(fail | P observed), at ``z`` (1.96 = 95%).

"What follows" an occurrence is the rest of its job: an occurrence *fails* when no successful
operation (root returned 0) follows it in the same job on the same host (the job died on it or
never recovered). Runs are jobs, as in CBI. This handles errors that fail their own operation
but are routine (EAGAIN from the rdma cgroup, retried; ENODATA from an empty GID slot): the job
goes on. Good traces are sampled by the tracer; a later sampled success is what shows the job
went on, so very short jobs look like failures to both sides of Increase alike.

Recurrence is also required across the fleet: at least ``min_host_fraction`` of the hosts that
reach the probe in that operation show the error. A real fault confined to a few hosts (a bad
firmware, a crash-looping host) stays a finding even when jobs survive it.

Learning streams over event batches (see baseline.fleet.model.event_batches) and keeps small
aggregate tables only. `merge_into_file` folds the result into expected_errors.yaml through
baseline.run.allowlist (curated wins; learned entries carry stats and first/last seen; learned
entries no longer supported are flagged stale).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from baseline.fleet.model import EventsInput, collect_traces
from baseline.run.allowlist import Entry, ExpectedErrors, learned_id
from tracer.errors import TracebaseError


def wilson_bounds(successes: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion (vectorised); n == 0 -> (0, 1)."""
    successes = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    safe = np.maximum(n, 1.0)
    p = successes / safe
    denom = 1 + z * z / safe
    centre = (p + z * z / (2 * safe)) / denom
    half = z * np.sqrt(p * (1 - p) / safe + z * z / (4 * safe * safe)) / denom
    low = np.where(n > 0, np.clip(centre - half, 0, 1), 0.0)
    high = np.where(n > 0, np.clip(centre + half, 0, 1), 1.0)
    return low, high


def failed_expr() -> pl.Expr:
    status = pl.col("exit_status")
    return pl.when(status.is_not_null()).then(status != 0).otherwise(pl.col("kind") == "failure")


@dataclass
class FleetExpectedResult:
    entries: list[Entry]  # predicates that passed, as learned expected_errors.yaml entries
    candidates: pl.DataFrame  # every (operation, probe, errno) seen, with stats and verdict


def _trace_outcomes(traces: pl.DataFrame) -> pl.DataFrame:
    """Per trace: `failed` = no successful operation follows it in its run (host + job).
    Only the columns expected_from_traces needs are kept (the trace table is millions of rows)."""
    run = ["host", "job_id"]
    traces = traces.select("operation", "chain_hash", *run, "start_time", "exit_status", "kind")
    last_success = traces.filter(~failed_expr()).group_by(run).agg(pl.col("start_time").max().alias("last_success"))
    return traces.join(last_success, on=run, how="left", nulls_equal=True).with_columns(
        (~(pl.col("last_success").fill_null(pl.col("start_time")) > pl.col("start_time"))).alias("failed")
    ).drop("last_success", "kind")


def learn_fleet_expected(
    dataset: EventsInput,
    since: str | dt.datetime | None = None,
    *,
    min_hosts: int = 3,
    min_jobs: int = 2,
    min_success: int = 5,
    min_host_fraction: float = 0.25,
    max_increase: float = 0.05,
    z: float = 1.96,
    batch_rows: int = 500_000,
) -> FleetExpectedResult:
    """Learn expected errors from a fleet dataset (all traces: good and failure), in one
    streaming pass (baseline.fleet.model.collect_traces)."""
    try:
        traces, chains = collect_traces(dataset, since=since, batch_rows=batch_rows)
    except TracebaseError:
        raise TracebaseError("no events to learn expected errors from") from None
    return expected_from_traces(
        traces, chains, min_hosts=min_hosts, min_jobs=min_jobs, min_success=min_success,
        min_host_fraction=min_host_fraction, max_increase=max_increase, z=z,
    )


def expected_from_traces(
    traces: pl.DataFrame,
    chains: pl.DataFrame,
    *,
    min_hosts: int = 3,
    min_jobs: int = 2,
    min_success: int = 5,
    min_host_fraction: float = 0.25,
    max_increase: float = 0.05,
    z: float = 1.96,
) -> FleetExpectedResult:
    """The statistics of the module docstring from a per-trace table and the frames of one
    representative per distinct chain (both from collect_traces): every per-trace fact needed
    (which probes a trace reaches, which errors it carries and at what depth) is a property of
    its chain, so it is computed once per chain and joined to the traces."""
    if traces.is_empty():
        raise TracebaseError("no events to learn expected errors from")
    key = ["operation", "chain_hash"]
    traces = _trace_outcomes(traces)
    # every fact below depends on a trace only through its chain, run and outcome: reduce the
    # traces to one row per (chain, host, job) first (millions of traces -> far fewer rows)
    not_failed = ~pl.col("failed")
    by_run = traces.group_by([*key, "host", "job_id"]).agg(
        pl.len().alias("traces"),
        pl.col("failed").sum().alias("failing"),
        not_failed.sum().alias("not_failed"),
        (not_failed & (pl.col("exit_status") == 0)).sum().alias("ok_not_failed"),
        pl.col("start_time").min().alias("first_seen"),
        pl.col("start_time").max().alias("last_seen"),
    )
    del traces
    # P true: one row per (trace, predicate) even when the error repeats (retries)
    chain_errors = (
        chains.filter(pl.col("errno").is_not_null())
        .group_by([*key, "probe", "errno"]).agg(pl.col("depth").min().alias("min_depth"))
    )
    true = (
        by_run.join(chain_errors, on=key)
        .with_columns(
            # survived: the job went on, and the error was handled inside the operation (root
            # returned 0) or was the operation's own result (root frame)
            pl.when(pl.col("min_depth") == 0).then(pl.col("not_failed")).otherwise(pl.col("ok_not_failed"))
            .alias("survived")
        )
        .group_by(["operation", "probe", "errno", "host", "job_id"])
        .agg(
            pl.col("traces").sum(),
            pl.col("failing").sum(),
            pl.col("survived").sum(),
            pl.col("first_seen").min(),
            pl.col("last_seen").max(),
        )
    )
    chain_probes = chains.select(*key, "probe").unique()
    observed = (
        by_run.join(chain_probes, on=key)
        .group_by(["operation", "probe"])
        .agg(pl.col("traces").sum().alias("observed"), pl.col("failing").sum().alias("observed_failing"),
             pl.col("host").n_unique().alias("observed_hosts"))
    )
    cand = (
        true.group_by(["operation", "probe", "errno"])
        .agg(
            pl.col("traces").sum(),
            pl.col("failing").sum(),
            pl.col("survived").sum(),
            pl.col("host").filter(pl.col("survived") > 0).n_unique().alias("success_hosts"),
            pl.col("job_id").filter(pl.col("survived") > 0).n_unique().alias("success_jobs"),
            pl.col("host").n_unique().alias("hosts"),
            pl.col("job_id").n_unique().alias("jobs"),
            pl.col("first_seen").min(),
            pl.col("last_seen").max(),
        )
        .join(observed, on=["operation", "probe"], how="left")
        .with_columns(pl.col("operation").cast(pl.String))
        .sort(["operation", "probe", "errno"])
    )
    if cand.is_empty():
        return FleetExpectedResult([], cand)
    _, p_true_high = wilson_bounds(cand["failing"].to_numpy(), cand["traces"].to_numpy(), z)
    p_obs_low, _ = wilson_bounds(cand["observed_failing"].to_numpy(), cand["observed"].to_numpy(), z)
    cand = cand.with_columns(
        pl.col("survived").alias("success"),
        (pl.col("failing") / pl.col("traces")).alias("p_fail_true"),
        (pl.col("observed_failing") / pl.col("observed")).alias("p_fail_observed"),
    ).with_columns(
        (pl.col("p_fail_true") - pl.col("p_fail_observed")).alias("increase"),
        pl.Series("increase_upper", p_true_high - p_obs_low),
    )
    cand = cand.with_columns(
        (
            (pl.col("success") >= min_success)
            & (pl.col("success_hosts") >= min_hosts)
            & (pl.col("success_jobs") >= min_jobs)
            & (pl.col("hosts") >= min_host_fraction * pl.col("observed_hosts"))
            & (pl.col("increase_upper") <= max_increase)
        ).alias("expected")
    )
    entries = [_entry(row, z) for row in cand.filter(pl.col("expected")).iter_rows(named=True)]
    return FleetExpectedResult(entries, cand)


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _entry(row: dict[str, Any], z: float) -> Entry:
    stats = {
        "statistic": "CBI Increase(P) = P(fail|P) - P(fail|P observed)",
        "increase": round(float(row["increase"]), 6),
        "increase_upper": round(float(row["increase_upper"]), 6),
        "confidence_z": z,
        "p_fail_true": round(float(row["p_fail_true"]), 6),
        "p_fail_observed": round(float(row["p_fail_observed"]), 6),
        "traces": int(row["traces"]),
        "failing_traces": int(row["failing"]),
        "observed_traces": int(row["observed"]),
        "hosts": int(row["hosts"]),
        "observed_hosts": int(row["observed_hosts"]),
        "outcome": "fail = no successful operation follows in the same job and host",
        "jobs": int(row["jobs"]),
    }
    return Entry(
        id=learned_id(row["probe"], row["errno"], None, row["operation"]),
        source="learned",
        probe=row["probe"],
        errno=row["errno"],
        context=row["operation"],
        support={"runs": int(row["success"]), "total": int(row["observed"])},
        first_seen=_iso(row["first_seen"]),
        last_seen=_iso(row["last_seen"]),
        stats=stats,
    )


def merge_into_file(
    path: str | os.PathLike, entries: list[Entry], now: str | None = None
) -> dict[str, int]:
    """Merge learned entries into an expected_errors.yaml (created when missing), atomically.

    Curated entries win; learned entries carry fresh stats; unsupported ones turn stale."""
    path = Path(path)
    expected = ExpectedErrors.load(path) if path.exists() else ExpectedErrors([], source=str(path))
    counts = expected.merge_learned(entries, now=now)
    fresh = {e.key(): e for e in entries}
    for e in expected.learned():  # merge_learned refreshes support only; carry the new stats too
        if e.key() in fresh and e.status == "active":
            e.stats = fresh[e.key()].stats
    expected.save(path)
    return counts

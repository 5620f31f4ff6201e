"""Fleet expected-error learning: which errors are routine, with the statistic that says so.

The unit is an error *where it originates*: (operation, origin probe, errno), the origin being
an error frame none of whose callees failed (rdmacg EAGAIN originates at ib_rdmacg_try_charge
and only propagates through rdma_alloc_begin_uobject and the handler; an empty GID slot's
ENODATA at rdma_get_gid_attr). The audit takes "expected" from the origin frame of a failure,
so learning and matching meet on the same frame whatever depth the probes reach.

`FleetExpectedLearner` (scikit-learn conventions: parameters in ``__init__``, learned state in
trailing-underscore attributes, ``fit`` on a fleet's traces, ``predict`` whether an error is
routine) learns a unit as expected when all of these hold:

* **Survival, from what the process did next.** An occurrence survives when its process (host,
  job, pid) made any later recorded call: the job went on (the same operation retried, or later
  calls). So one occurrence per process fails, its last: by start time, then by the order the
  tracer emitted them (failures outside capture windows carry a 4 ms tick, and retries in one
  tick tie), and of an example standing for n identical trees (``repeat_count``) n-1 survived --
  unless the example was its process's last: the kernel aggregates a signature over every
  process of the interval (ranks of a job dying together), so the other n-1 trees' processes
  are unknown and count as censored (below). Without a job id the process alone identifies the run; without a pid the job does,
  and a job requeued under the same id after a fatal error then looks as if it went on (the
  fleet tracer always records the pid). Good traces are only sampled, so "a later sampled success" would make a routine error
  look fatal whenever sampling missed the retry; any later trace of the process counts. At least
  ``min_success`` surviving occurrences on ``min_hosts`` hosts and ``min_jobs`` jobs.
  "No later trace" means "died" only where later calls would have been recorded: the fleet
  tracer records failing trees always but successful ones only in capture windows, so outside
  them (an untimed tree: no latency, the tick) a process that retried and went on leaves
  nothing. Windows open by the clock, whatever a process does, so the timed traces are a
  sample of the calls whose outcome is seen: the Increase below compares both sides on timed
  traces when a side has ``min_timed`` of them (``outcome_in_windows``, for the error), else on
  all of them -- for the error a bound that can only make it look more fatal, for the probe's
  traces (outside windows failures only) the best the recording holds. The error's side also
  takes its timed traces when there are fewer but every one survived and at most half of all
  its occurrences lack a later call: that half is the sampling's gap (a once-per-process
  fallback whose process no later window caught), which the all-traces figure would read as
  deaths; the few timed ones give the honest, wide interval. A process whose last trace came
  after its host's last capture window (its latest timed trace) is right-censored: nothing
  that followed could have been recorded, so that occurrence is neither a death nor a survival
  and leaves both sides of the Increase (a host without any timed trace: not censored). So is
  a process killed with its job: another process of the same run, alive at its last trace,
  ended later with a failure of another chain (``_killed_with_job``: a job's ranks die
  together, and what the others did last did not end them). And so is an origin superseded in
  its tree: a later origin of the same call tree reaches the root (the code went on after this
  error -- a fallback -- and the caller got the later one's), so a death after that tree is the
  later origin's (``chain_origins``' ``superseded``). Calls that only free resources (the
  reference's cleanup class: destroy/dereg/dealloc...) within ``ABORT_PATH_S`` of a failed call,
  followed by nothing, are the abort path of a process dying of that call, not its going on: the
  failed call is its last (``_abort_path_ends``; tests/fleetgen21).
* **No significant increase in failure.** CBI's Increase(P) = P(fail | P) - P(fail | P
  observed) (Liblit et al., PLDI'05), fail = the process made no later call, observed = the probe
  was reached in a trace of the operation. A fatal error has Increase near 1; the error is kept
  as a candidate unless its Increase is shown to exceed ``max_increase``: the lower confidence
  bound (Wilson lower of the first minus Wilson upper of the second, at ``z``) stays <= it.
  (Requiring the *upper* bound below it instead rejects every routine family seen on a few
  hundred traces, whose base failure rate is itself uncertain with sampled good traces.)
* **Fleet spread within the hosts that have the probe.** At least ``min_host_fraction`` of the
  hosts of the same vendor group that run the probe show the error (counts from the exact per-CPU
  counters when given, else from traces). A family confined to one vendor is routine there; a
  fault confined to a few hosts (bad firmware, a crash-looping host) stays a finding. Except for
  the errnos whose contract tells the caller what to do next (``signal_errnos``: EAGAIN, try
  again; ENOENT/ENODATA, nothing there; EOPNOTSUPP, not here, take another way): survived on
  ``min_hosts`` hosts, such an error says those hosts are configured differently (an rdma
  cgroup limit, a firmware without a capability, a half-empty GID table), which no column
  shows, so no share of a vendor group measures it. On fewer hosts (a cgroup limit on two),
  runs stand in for hosts: such an error survived in at least ``min_hosts`` x
  ``min_jobs`` runs, or ``min_hosts`` x ``min_success`` times, is as well attested as on
  ``min_hosts`` hosts (each time the process met it and went on). On one host alone only when
  the operation never succeeds there (the host cannot do it: a driver without a dmabuf op); an
  operation that fails now and succeeds then on one host, with no other host showing the
  error, is that host's fault (a GID entry whose IP flaps, retried through by every job),
  however many runs survive it. A survived ETIMEDOUT or EIO on a rack's
  hosts says something there is broken: the share still applies (and CBI's Increase to all).
  Nor is it asked of an error its operation absorbs (the root succeeded in ``handled_share`` of
  its occurrences: an auto counter bind's ENOMEM that _ib_modify_qp ignores on the few hosts
  whose port is in AUTO mode): no caller saw it fail, so no fault of the hosts it is confined
  to shows in it (a rate that rises there still raises the host's alert). Such an error is
  survived by the call itself, so its handled occurrences and their jobs count as survivals for
  ``min_success`` and ``min_jobs`` (a teardown's ignored EINVAL is the process's last act, and
  no later call can show it went on); CBI's Increase still judges what followed it.
* **Visible to its caller.** The operation absorbed it (its root succeeded) or returned the
  origin's errno unchanged, in at least ``handled_share`` of its occurrences: a caller can only
  treat an error as routine when it sees it (retry on EAGAIN, skip a GID slot on ENODATA). An
  errno turned into another on the way up (a stale handle's ENOENT in rdma_lookup_get_uobject
  that modify_qp reports as EINVAL, reference errno_conventions) reaches the caller as a
  generic failure: a finding, however often the job goes on after it. An origin superseded in
  its tree (the code went on from it to a fallback whose own errno reached the caller) was
  handled there: visible, as where the fallback succeeds.
* **Not a regression.** When at least ``max_new_share`` of the occurrences come from hosts
  that show the error only on a kernel release they switched to during the window (a driver
  update), the error started with the update: a finding, not routine -- unless it is shown
  harmless: the capture windows show its outcome (``min_timed`` timed traces) and Increase's
  *upper* bound, not only its lower, stays within ``max_increase`` (the burden of proof turned:
  a new release's benign refusal that every process does without, such as 128-byte CQE padding
  the new driver no longer offers, on every upgraded host: tests/fleetgen19) -- or, no timed
  occurrence dying, the same bound over every occurrence does, each one without a later call
  counted as a death (55 timed survivals of 55 bound it at 6.5 % only: tests/fleetgen39). Per host first: a host
  that shows the error only on a release it switched to got it with the update; a host that
  showed it before its update as well did not, however many of its occurrences come after
  it (a rollout early in the window, a busy host: most of a routine error's occurrences are
  then on the new release without the update having anything to do with them). When the family also occurs on other hosts
  (routine on one platform, an update's regression on another: a capability probe that one
  hardware generation always fails and an upgraded driver now fails on another, where nothing
  falls back), it is judged on those other hosts alone, and the entry says
  ``update_regression``: the audit keeps its occurrences on such hosts as findings. Split by
  NIC as well: where the update's family came to every host alike, the hosts of a NIC model and
  firmware (the traces' metadata, NIC_KEYS) whose processes die of it together -- the Wilson
  lower bound of their failing share above 1/2 and significantly above the family's other
  hosts -- are judged apart, the entry naming them in ``fatal_hosts`` (the audit keeps their
  findings): a refusal the ConnectX-7 hosts' provider falls back from and the ConnectX-6 Dx
  hosts' pinned image dies of (tests/fleetgen20), which pooled sat within the bound of "shown
  harmless". Per NIC, not per host: a host whose windows caught nothing after its update shows
  a benign refusal as every rank's last trace (tests/fleetgen19).
* **Stopped on a host.** A family is not routine on the few hosts (fewer than half of its own)
  where its operation stopped succeeding: from some counter bucket on, every call of the
  operation's root probe failed with the family's errno for at least ``STOPPED_BUCKETS``
  buckets in a row (``min_success`` calls or more), after a bucket in which one succeeded, and a
  capture window saw a process die of it there -- unless some caller went on through it there
  (that is the split by caller's: a health agent beside the ranks it kills, tests/fleetgen16).
  The entry names such hosts in ``fatal_hosts`` and the stop's first bucket in ``fatal_since``;
  the audit keeps their occurrences from then on as findings, and the family is judged without
  them. One host whose rdma cgroup limit went to zero, every rank's alloc_pd failing the EAGAIN
  that thirty-nine other hosts' ranks retry through now and then (tests/fleetgen22): pooled, its
  deaths sat within the bound of routine, and neither the records' outcomes (a retry loop's
  attempts before the last are survivals; outside the windows a survivor leaves no later trace
  either) nor a host's share of deaths tells it apart -- the exact counters do.

* **Returned to the caller.** An operation may absorb an error on some calls (the root
  succeeds: a QP-counter bind's NO_RES, which _ib_modify_qp ignores) and return the same
  (operation, origin, errno) on others (the root fails: NO_RES refusing the RST2INIT itself,
  which ends the rank). Where the returned occurrences are significantly more fatal than the
  absorbed ones (Increase's lower bound, returned against absorbed, above ``max_increase``), the
  family is judged on the absorbed ones alone and marked ``stats.fatal_when_returned``; the audit
  keeps every returned occurrence open (tests/fleetgen60).

* **Caller.** A family that fails the above fleet-wide is judged again per caller (``comm``, the
  trace's process name): the same errno at the same call site can be retried through by one
  program and kill another (tenant aria's launcher retries the ARP timeout at
  rdma_addr_find_l2_eth_by_grh, tenant brisk's library does not: tests/fleetgen14), and the
  family, mixing both, is neither. A caller's sub-family is learned (an entry with ``comm``,
  ``stats.fatal_to`` naming the others) when another caller of the family is shown to die of it
  (Increase's lower bound above ``max_increase``) and it passes every predicate on its own
  statistics -- survival, Increase against the probe's fleet-wide base rate, visibility, not a
  regression -- except the fleet spread: the fault behind it (a rack's switch) stays visible
  through the caller it kills, whose findings stay open. A surviving caller seen on fewer than
  ``min_hosts`` hosts counts (its runs standing in for hosts, as for a signal errno, on one host
  too) where on none of its hosts the family ends another caller's process: the program's own use
  of it (a diagnostic probing the memlock limit on one host, reg_mr ENOMEM at ib_umem_get, while
  the same family kills ranks on forty others: tests/fleetgen19); where it does, the host is at
  fault (one host's firmware EIO an agent goes on through and ranks die of: tests/fleetgen16).
  So does a family's only caller on fewer than ``min_hosts`` hosts where, on each, the same
  operation succeeded for another caller between the family's first and last occurrence
  there: a diagnostic finding its memlock limit while the ranks there register their buffers
  (tests/fleetgen20); a NIC failing everyone's registrations, met by a node agent alone once
  the host was drained, is not (nothing else succeeds there). A family that passes fleet-wide is
  split so too when one of its callers is shown to die of it: an agent going on through a
  driver restart's EIO at rdma_alloc_begin_uobject on every host outnumbers the ranks it kills
  on the one host whose restart never ended (tests/fleetgen16), and one entry for every caller
  set those deaths aside (only when that caller dies of it significantly more often than the
  others; its sub-families say ``stats.fleet_wide``, and the host alerts, whose counters know no
  caller, keep the family's band). A family consistent fleet-wide (no caller shown to die of it) stays one
  entry without ``comm``: routine for every caller, one never seen included.

Rates come from the exact counters, never from sampled good traces: for every learned family
and every probe its errno propagates through, the per-host rate (errno count / invocations) gives
a band (the ``band_quantile`` of the group's hosts times ``band_factor``); host alerts fire on a
learned family only when a host's rate leaves that band (baseline.fleet.audit.host_alerts).

Truncated call trees (lost_events > 0: deepest frames lost) are left out of learning: their
origin is unknown (the audit matches them to a cause by prefix). Examples standing for
``repeat_count`` identical call trees weigh that many.

`merge_into_file` folds the result into expected_errors.yaml through baseline.run.allowlist
(curated wins; learned entries carry stats, bands and first/last seen; learned entries no longer
supported are flagged stale).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from baseline.fleet.counters import cell_attributes
from baseline.fleet.model import (  # failed_expr, weight_expr: read here by callers since before they moved
    EventsInput,
    NoEventsError,
    ParamsMixin,
    collect_traces,
    failed_expr,  # noqa: F401
    good_root_latency,
    host_nic_identity,
    scope,
    trace_flags,
    weight_expr,  # noqa: F401
)
from baseline.run.allowlist import Entry, ExpectedErrors, learned_id
from tracer import atomic
from tracer.errors import TracebaseError
from tracer.schema import BUCKET_NS

# (hosts, errnos) -> host, nic: see FleetExpectedLearner.fit_traces
NicIdentity = Callable[[list[str], list[str]], pl.DataFrame]
# (operation, hosts) -> host, kernel_release, latency_ns: see FleetExpectedLearner.fit_traces
GoodLatency = Callable[[str, list[str]], pl.DataFrame]

VENDOR_PREFIXES = (("mlx5_", "mlx5"), ("bnxt_re_", "bnxt_re"), ("irdma_", "irdma"))

# consecutive counter buckets (baseline.fleet.counters: 15 minutes) in which every call of an
# operation failed with a family's errno, for "Stopped on a host"
STOPPED_BUCKETS = 2
# ... and the share of the bucket before such a stretch's calls failing with the errno from which
# the stop began inside that bucket (the stop is then taken from that bucket): a fault rarely
# starts on a bucket's boundary, and a family's routine rate is a few percent
STOP_ONSET_SHARE = 0.25
# "Absent on a host": how many of the family's occurrences a host's timed traces of the same
# operation and callers should have shown at the family's own rate, with none shown anywhere on
# it, for the family to count as new there (P(none) = e^-7, about 1 in 1,100, per host)
ABSENCE_MIN_EXPECTED = 7.0


def wilson_bounds(successes: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion (vectorised); n == 0 -> (0, 1)."""
    successes = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    safe = np.maximum(n, 1.0)
    p = np.clip(successes / safe, 0.0, 1.0)
    denom = 1 + z * z / safe
    centre = (p + z * z / (2 * safe)) / denom
    half = z * np.sqrt(p * (1 - p) / safe + z * z / (4 * safe * safe)) / denom
    low = np.where(n > 0, np.clip(centre - half, 0, 1), 0.0)
    high = np.where(n > 0, np.clip(centre + half, 0, 1), 1.0)
    return low, high


def increase_lower(failing: np.ndarray, n: np.ndarray, other_failing: np.ndarray, other_n: np.ndarray,
                   z: float) -> np.ndarray:
    """How much more often, at the least, `failing` of `n` fail than `other_failing` of `other_n`:
    the Wilson lower bound of the one share less the upper bound of the other (vectorised)."""
    low, _ = wilson_bounds(failing, n, z)
    _, other_high = wilson_bounds(other_failing, other_n, z)
    return low - other_high


@dataclass
class FleetExpectedResult:
    entries: list[Entry]  # predicates that passed, as learned expected_errors.yaml entries
    candidates: pl.DataFrame  # every (operation, probe, errno) origin seen, with stats and verdict


def chain_origins(chains: pl.DataFrame) -> pl.DataFrame:
    """Per (operation, chain_hash): its error origins (probe, errno, min depth) and, per origin,
    the probes its errno propagates through (ancestors carrying the same errno, `path`),
    whether it reaches the root unchanged (`to_root`: the caller sees the real errno), and
    whether a later origin of the same tree reaches the root (`superseded`: the code went on
    after this error -- pin_user_pages_fast's EFAULT before the peer-memory fallback -- and what
    the caller got came from that later one)."""
    rows: list[tuple] = []
    cols = chains.select(
        pl.col("operation").cast(pl.String), "chain_hash", "trace_id", "seq", "depth",
        pl.col("probe").cast(pl.String), pl.col("errno").cast(pl.String),
    ).sort(["trace_id", "seq"])
    for (op, chash, _tid), grp in cols.group_by(["operation", "chain_hash", "trace_id"], maintain_order=True):
        depth, probe, errno = grp["depth"].to_list(), grp["probe"].to_list(), grp["errno"].to_list()
        n = len(depth)
        first = len(rows)
        for i in range(n):
            if errno[i] is None:
                continue
            child_err = False
            for j in range(i + 1, n):
                if depth[j] <= depth[i]:
                    break
                if depth[j] == depth[i] + 1 and errno[j] is not None:
                    child_err = True
                    break
            if child_err:
                continue
            path = [probe[i]]
            want = depth[i] - 1
            for j in range(i - 1, -1, -1):  # ancestors: the nearest earlier frame one level up
                if depth[j] == want:
                    if errno[j] != errno[i]:
                        break
                    path.append(probe[j])
                    want -= 1
            rows.append((op, chash, probe[i], errno[i], depth[i], path, len(path) == depth[i] + 1, False))
        # an origin followed (in entry order) by another that reaches the root is superseded
        reached = False
        for k in range(len(rows) - 1, first - 1, -1):
            if reached:
                rows[k] = (*rows[k][:7], True)
            reached = reached or rows[k][6]
    return pl.DataFrame(rows, schema={"operation": pl.String, "chain_hash": pl.UInt64, "probe": pl.String,
                                      "errno": pl.String, "origin_depth": pl.Int64, "path": pl.List(pl.String),
                                      "to_root": pl.Boolean, "superseded": pl.Boolean},
                        orient="row")


def host_vendors(traces: pl.DataFrame, chains: pl.DataFrame, counters: Any = None) -> pl.DataFrame:
    """host -> vendor group: the counters' vendor column when given, else the driver namespace
    of the probes seen in the host's traces (mlx5_ib_* / bnxt_re_* / irdma_*), else of the probes
    its counters count calls of, else "?"."""
    # millions of trace and counter rows, a few thousand hosts: every table is first reduced on
    # its own (categorical) keys and the text is built for the reduced rows only
    parts = []
    if counters is not None:
        attrs = cell_attributes(counters)
        if "vendor" in attrs.columns:
            parts.append(_stream(attrs.lazy().select("host", "vendor").drop_nulls().unique())
                         .select(pl.col("host", "vendor").cast(pl.String)).unique("host"))
    probe = pl.col("probe").cast(pl.String)
    vendor = pl.lit(None, dtype=pl.String)
    for prefix, name in reversed(VENDOR_PREFIXES):
        vendor = pl.when(probe.str.starts_with(prefix)).then(pl.lit(name)).otherwise(vendor)
    chain_vendor = (
        chains.select(pl.col("operation").cast(pl.String), "chain_hash", vendor.alias("vendor")).drop_nulls()
        .unique(["operation", "chain_hash"])
    )
    from_traces = _mode_per_host(
        _stream(traces.lazy().group_by("host", "operation", "chain_hash").agg(pl.len().alias("_n")))
        .select(pl.col("host", "operation").cast(pl.String), "chain_hash", "_n")
        .join(chain_vendor, on=["operation", "chain_hash"])
    )
    parts.append(from_traces)
    if counters is not None:  # a host seen only through its counters: the driver probes it runs
        calls = counters[0] if isinstance(counters, tuple) else counters
        parts.append(_mode_per_host(
            _stream(calls.lazy().filter(pl.col("n") > 0).group_by("host", "probe").agg(pl.len().alias("_n")))
            .select(pl.col("host").cast(pl.String), vendor.alias("vendor"), "_n").drop_nulls()
        ))
    hosts = traces.select(pl.col("host").unique().cast(pl.String))
    if counters is not None:
        calls = counters[0] if isinstance(counters, tuple) else counters
        hosts = pl.concat([hosts, _stream(calls.lazy().select(pl.col("host").unique()))
                           .select(pl.col("host").cast(pl.String))]).unique()
    out = hosts
    for i, part in enumerate(parts):
        out = out.join(part.rename({"vendor": f"_v{i}"}), on="host", how="left")
    return out.select("host", pl.coalesce([f"_v{i}" for i in range(len(parts))] + [pl.lit("?")]).alias("vendor"))


def _stream(lf: pl.LazyFrame) -> pl.DataFrame:
    """A group-by or unique over millions of trace or counter rows: polars' streaming engine
    costs 2-4x less CPU than the in-memory one there (each caller's result is order-free)."""
    return lf.collect(engine="streaming")


def _mode_per_host(counts: pl.DataFrame) -> pl.DataFrame:
    """host, vendor: per host the vendor of the most rows (`_n` rows per input row), the first in
    text order among equally frequent ones (= mode().sort().first() over the expanded rows)."""
    return (
        counts.group_by("host", "vendor").agg(pl.col("_n").sum())
        .sort(["host", "_n", "vendor"], descending=[False, True, False])
        .group_by("host", maintain_order=True).agg(pl.col("vendor").first())
    )


def release_history(traces: pl.DataFrame, calls: pl.DataFrame | None = None) -> pl.DataFrame | None:
    """host, kernel_release, since, new_release: the kernel releases each host ran in the window
    (from the per-trace table and, exactly, from the bucketed counters `calls` when given: a host
    with no recorded trace before its update is still seen running the old release) and whether
    the host switched to it during the window (a kernel or driver update)."""
    parts = []
    # each table reduced on its own (categorical) keys first: millions of rows, a few (host,
    # release) pairs; the text is built for those only
    if "kernel_release" in traces.columns:
        parts.append(_stream(traces.lazy().group_by("host", "kernel_release").agg(pl.col("start_time").min().alias("since")))
                     .select(pl.col("host", "kernel_release").cast(pl.String), "since"))
    if calls is not None and "kernel_release" in calls.columns:
        parts.append(_stream(calls.lazy().group_by("host", "kernel_release").agg(pl.col("bucket").min().alias("since")))
                     .select(pl.col("host", "kernel_release").cast(pl.String), "since"))
    if not parts:
        return None
    rel = (
        pl.concat(parts, how="vertical_relaxed").drop_nulls("kernel_release")
        .group_by("host", "kernel_release").agg(pl.col("since").min())
    )
    return rel.with_columns((pl.col("since") > pl.col("since").min().over("host")).alias("new_release"))


# A dying process's abort path: what it frees between the fatal error and its exit (NCCL's abort
# destroys its QPs, deregisters its MRs and deallocates its PD 20-200 ms after the error, then the
# process exits). A survivor tears down when its work is done, minutes or hours after a routine
# error; this bound separates the two with an order of magnitude to spare either way.
ABORT_PATH_S = 2.0
# The reference's cleanup class (rdma_control_path.yaml classification_heuristics: cleanup =
# dealloc/destroy/dereg/release/unpin/uncharge/abort/put; its cleanup operations dealloc_pd,
# destroy_qp, dereg_mr), matched at the start of a word of the operation: `command`
# ("destroy_qp") or root probe + arg when the tracer recorded no command ("... DESTROY_QP")
CLEANUP_OPERATION = r"(?i)(?:^|[\s_])(?:dealloc|destroy|dereg|release|unpin|uncharge|abort|put)(?:_|$)"


def _abort_path_ends(procs: pl.DataFrame, tr: pl.LazyFrame) -> pl.DataFrame:
    """Move a process's last trace (`_last`, `_last_row`) back to the failed call it died of when
    everything it did after that call only freed resources (the reference's cleanup operations),
    within ABORT_PATH_S, and then nothing: the abort path of a process dying of the error, not
    its going on. Left as they were: a process whose last call that is not cleanup succeeded (a
    normal exit's teardown), or whose cleanup came later than ABORT_PATH_S after it."""
    # matched on the distinct operations (a few dozen), not on each of millions of traces' text
    operations = tr.select(pl.col("operation").unique()).collect().get_column("operation").cast(pl.String)
    cleanup_operations = operations.filter(operations.str.contains(CLEANUP_OPERATION)).to_list()
    if not cleanup_operations:
        return procs
    cleanup = pl.col("operation").is_in(cleanup_operations)
    # per process (as `procs` keys it), its last trace that is not cleanup, by (start, row) as
    # `_candidates` orders a process's traces (a gather of its flag by row, as in _killed_with_job)
    work = (
        tr.with_columns(pl.when(~cleanup).then(pl.col("start_time")).alias("_work_start"))
        .group_by(["host", "job_id", "pid"])
        .agg(pl.col("_work_start").max().alias("_work_last"),
             pl.col("_row").sort_by("_work_start", "_row", nulls_last=False).last().alias("_work_row"))
        .collect(engine="streaming")
    )
    work = work.filter(pl.col("_work_last").is_not_null())
    if work.is_empty():
        return procs
    work = work.with_columns(tr.select("root_failed").collect().get_column("root_failed").gather(work["_work_row"])
                             .fill_null(False).alias("_work_failed"))
    out = procs.join(work, on=["host", "job_id", "pid"], how="left", nulls_equal=True)
    # the process's latest such trace over its keys (`_candidates` merges a process's rows the same way)
    latest = pl.col("_work_last").max().over("_run", "pid")
    out = out.with_columns(
        latest.alias("_work_latest"),
        pl.when(pl.col("_work_last") == latest).then(pl.col("_work_row")).max().over("_run", "pid").alias("_work_row"),
        pl.when(pl.col("_work_last") == latest).then(pl.col("_work_failed")).max().over("_run", "pid")
        .alias("_work_failed"),
    )
    aborted = (pl.col("_work_failed").fill_null(False) & (pl.col("_work_latest") < pl.col("_last"))
               & (pl.col("_last") - pl.col("_work_latest") <= dt.timedelta(seconds=ABORT_PATH_S)))
    return out.with_columns(
        pl.when(aborted).then(pl.col("_work_latest")).otherwise(pl.col("_last")).alias("_last"),
        pl.when(aborted).then(pl.col("_work_row")).otherwise(pl.col("_last_row")).alias("_last_row"),
    ).drop("_work_last", "_work_row", "_work_failed", "_work_latest")


KILLED_WITH_JOB_S = 60  # ranks starting together record their first calls within this of each other


def _killed_with_job(procs: pl.DataFrame, tr: pl.LazyFrame) -> pl.DataFrame:
    """Mark as censored (`_censored`) the processes killed with their job: another process of
    the same run, alive at this one's last trace (its first trace at or before it, or its end
    within KILLED_WITH_JOB_S after it: ranks start together, the other's first recorded call may
    come a moment later), ended later with a failed call (its last trace, root failed) of
    another chain. A job's ranks die
    together when one of them fails (the launcher or NCCL's abort ends the rest), so the
    others' last traces -- a start-up's retried cgroup charge, an empty GID slot, a rescued pin,
    followed by minutes of successful calls no window recorded -- were not what ended them;
    their outcome is unknown, as for a process the data cuts short. A process whose last trace
    is the same chain as the one that ended the job died of that error itself and stays a
    death, so a fault every rank meets keeps its deaths; a rank of a later attempt of a requeued
    job (it began after this one's last trace) explains nothing about this one."""
    # each process's last trace by its row number (`_row` is the per-trace table's row index): a
    # gather, where a join on the row built a hash table of every trace (~0.3 CPU s on a fleet-day)
    last = pl.concat([procs.select("_run", "pid", "_first", "_last", "_last_row"),
                      tr.select("chain_hash", "root_failed").collect().gather(procs["_last_row"])], how="horizontal")
    ended = last.filter(pl.col("root_failed").fill_null(False)).select(
        "_run", pl.col("pid").alias("_qpid"), pl.col("_first").alias("_qfirst"), pl.col("_last").alias("_qlast"),
        pl.col("chain_hash").alias("_qchain"))
    if ended.is_empty():
        return procs
    window = dt.timedelta(seconds=KILLED_WITH_JOB_S)
    other = (pl.col("_qpid") != pl.col("pid")) & (pl.col("_qchain") != pl.col("chain_hash")).fill_null(True)
    # (a run may hold thousands of processes -- a crash loop requeued under one job id -- so no
    # join of every process with every failed one: those ending within the window are found by
    # a join on the window's minute, the one ending next after it by an as-of join)
    minute = pl.col("_last").dt.truncate(f"{KILLED_WITH_JOB_S}s")
    soon = (
        last.lazy().with_columns(pl.concat_list(minute, (minute + window).cast(last.schema["_last"])).alias("_b"))
        .explode("_b")
        .join(ended.lazy().with_columns(pl.col("_qlast").dt.truncate(f"{KILLED_WITH_JOB_S}s").alias("_b")),
              on=["_run", "_b"])
        .filter(other & (pl.col("_qlast") >= pl.col("_last")) & (pl.col("_qlast") <= pl.col("_last") + window))
        .select("_run", "pid")
    )
    # (every failed process ending at that next instant, not the one of them the as-of join
    # happens to meet first: a job's ranks killed together end at the same recorded instant, and
    # which of them came first was the sorts' order, not the data's)
    next_end = (
        last.lazy().sort("_last")
        .join_asof(ended.lazy().select("_run", "_qlast").unique().sort("_qlast"), left_on="_last", right_on="_qlast",
                   by="_run", strategy="forward", allow_exact_matches=False, check_sortedness=False)  # sorted
    )
    alive = (
        next_end.join(ended.lazy(), on=["_run", "_qlast"])
        .filter(other & (pl.col("_qfirst") <= pl.col("_last")))
        .select("_run", "pid")
    )
    killed = (pl.concat([soon, alive]).unique().with_columns(pl.lit(True).alias("_killed"))
              .collect(engine="streaming"))
    if killed.is_empty():
        return procs
    return (procs.join(killed, on=["_run", "pid"], how="left")
            .with_columns((pl.col("_censored") | pl.col("_killed").fill_null(False)).alias("_censored"))
            .drop("_killed"))


class FleetExpectedLearner(ParamsMixin):
    """Learns which errors of a fleet are routine (see the module docstring).

    Parameters
    ----------
    min_hosts, min_jobs, min_success : int
        Surviving occurrences needed, and on how many hosts and jobs.
    min_host_fraction : float
        Share of the hosts of the same vendor group that run the probe and show the error (not
        asked of ``signal_errnos``).
    signal_errnos : tuple of str
        Errnos that tell the caller what to do next (see "fleet spread").
    max_increase : float
        Bound on CBI's Increase (upper confidence bound).
    z : float
        Confidence of the Wilson bounds (1.96 = 95 %).
    max_new_share : float
        An error with at least this share of its occurrences on kernel releases hosts switched
        to during the window is a regression, not routine.
    band_quantile, band_factor : float
        A family's rate band per (probe, errno): this quantile of the per-host rates, times this
        factor.
    min_timed : int
        Timed traces (recorded in a capture window) a side of Increase needs for its outcome to
        be taken from them (see "Survival").
    min_timed_survived : int
        Fewer timed traces than ``min_timed`` suffice for the error's side when there are at
        least this many, every one survived, and at most half of all its occurrences lack a
        later call (see "Survival").
    handled_share : float
        An error whose operation still succeeded in at least this share of its occurrences is
        absorbed by the operation: the hosts showing it in their counters count towards
        ``min_hosts`` (its survival does not depend on what the job did next). Routine errors
        must be visible to their caller (absorbed, or their errno unchanged at the root) in at
        least this share of occurrences.
    batch_rows : int
        Rows per streamed batch when fitting from files.
    slow_factor : float
        An update's family is not shown harmless where the operation's good calls on its hosts
        took this many times longer (median) after the update than before (see "Not a
        regression").
    """

    def __init__(self, min_hosts: int = 3, min_jobs: int = 2, min_success: int = 5, min_host_fraction: float = 0.25,
                 max_increase: float = 0.05, z: float = 1.96, max_new_share: float = 0.9,
                 band_quantile: float = 0.95, band_factor: float = 2.0, handled_share: float = 0.95,
                 batch_rows: int = 500_000,
                 signal_errnos: tuple[str, ...] = ("EAGAIN", "ENOENT", "ENODATA", "EOPNOTSUPP"), min_timed: int = 5,
                 min_timed_survived: int = 1, slow_factor: float = 10.0):
        self.min_hosts = min_hosts
        self.min_jobs = min_jobs
        self.min_success = min_success
        self.min_host_fraction = min_host_fraction
        self.max_increase = max_increase
        self.z = z
        self.max_new_share = max_new_share
        self.band_quantile = band_quantile
        self.band_factor = band_factor
        self.handled_share = handled_share
        self.batch_rows = batch_rows
        self.signal_errnos = signal_errnos
        self.min_timed = min_timed
        self.min_timed_survived = min_timed_survived
        self.slow_factor = slow_factor

    # ---------------------------------------------------------------- fitting
    def fit(self, X: EventsInput, y: None = None, since: str | dt.datetime | None = None,  # noqa: ARG002
            counters: Any = None) -> FleetExpectedLearner:
        """Learn from a fleet dataset (root, files or events frame); counters: the dataset's
        bucketed counters (baseline.fleet.counters.bucket_counters) or None (read from a dataset
        root when it has a counters table)."""
        try:
            traces, chains = collect_traces(X, since=since, batch_rows=self.batch_rows)
        except NoEventsError:
            traces = None
        if traces is None or traces.is_empty():
            raise NoEventsError(f"{scope(X, since)}no events to learn expected errors from")
        if counters is None and isinstance(X, (str, os.PathLike)) and (Path(X) / "counters").is_dir():
            from baseline.fleet.counters import counter_buckets
            from baseline.fleet.model import parse_since
            from tracer.schema import dataset_files

            since_dt = parse_since(since)
            files = dataset_files(X, "counters", since=since_dt.date().isoformat() if since_dt else None)
            counters = counter_buckets(files, since_dt) if files else None

        def nic_identity(hosts: list[str], errnos: list[str]) -> pl.DataFrame:
            return host_nic_identity(X, hosts, errnos, since=since)

        def good_latency(operation: str, hosts: list[str]) -> pl.DataFrame:
            return good_root_latency(X, operation, hosts, since=since)

        return self.fit_traces(traces, chains, counters, nic_identity=nic_identity, good_latency=good_latency)

    def fit_traces(self, traces: pl.DataFrame, chains: pl.DataFrame, counters: Any = None,
                   releases: pl.DataFrame | None = None,
                   nic_identity: NicIdentity | None = None,
                   good_latency: GoodLatency | None = None) -> FleetExpectedLearner:
        """fit on the output of collect_traces (and optional bucketed counters); `releases`:
        release_history of the same traces and counters when the caller has it already;
        `nic_identity(hosts, errnos)`: the hosts' NIC model and firmware (host, nic: see
        baseline.fleet.model.host_nic_identity) for the "Not a regression" split by NIC, read
        only when a family needs it (None: no split); `good_latency(operation, hosts)`: the
        root latencies of the operation's timed good traces there by kernel release
        (baseline.fleet.model.good_root_latency), for the same predicate (None: not asked)."""
        if traces.is_empty():
            raise TracebaseError("no events to learn expected errors from")
        self._nic_identity = nic_identity
        self._good_latency = good_latency
        self.candidates_ = self._candidates(traces, chains, counters, releases)
        self.entries_ = [self._entry(r) for r in self.candidates_.filter(pl.col("expected")).iter_rows(named=True)]
        # comm null: routine for every caller, seen or not; else for that caller only
        self.families_ = self.candidates_.filter(pl.col("expected")).select("operation", "probe", "errno", "comm")
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "candidates_"):
            from baseline.fleet.model import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. Call 'fit' first.")

    def predict(self, X: pl.DataFrame) -> np.ndarray:
        """True for errors (rows with operation, probe, errno at their origin, and the caller's
        `comm` when known) that are routine: a family learned for every caller, or for this one."""
        self._check_fitted()
        fam = ["operation", "probe", "errno"]
        comm = pl.col("comm").cast(pl.String) if "comm" in X.columns else pl.lit(None, pl.String)
        keys = X.select(pl.col(*fam).cast(pl.String), comm.alias("comm"))
        anyone = self.families_.filter(pl.col("comm").is_null()).select(*fam, pl.lit(True).alias("_any"))
        mine = self.families_.filter(pl.col("comm").is_not_null()).with_columns(pl.lit(True).alias("_mine"))
        hit = (keys.join(anyone, on=fam, how="left", maintain_order="left")
               .join(mine, on=[*fam, "comm"], how="left", maintain_order="left"))
        return (hit["_any"].fill_null(False) | hit["_mine"].fill_null(False)).to_numpy()

    def to_expected(self) -> ExpectedErrors:
        self._check_fitted()
        return ExpectedErrors(list(self.entries_), source="<learned from dataset>")

    # ---------------------------------------------------------------- the statistics
    def _candidates(self, traces: pl.DataFrame, chains: pl.DataFrame, counters: Any,
                    releases: pl.DataFrame | None = None) -> pl.DataFrame:
        cols = set(traces.columns)
        # a million traces or more: keys stay categorical (integer codes) and text is built only
        # for the distinct values (runs, releases); the candidates table is text again
        cat = pl.Categorical
        # `_row`: the trace's place in the table, i.e. the order the daemon emitted them in -- the
        # tie-break for traces of one process that share a start time (failure records outside
        # capture windows carry a 4 ms tick, not a ns time)
        flags = trace_flags(cols)
        tr = traces.lazy().with_row_index("_row").select(
            pl.col("operation", "host").cast(cat), "chain_hash", pl.col("job_id").cast(cat), "start_time", "_row",
            (pl.col("pid") if "pid" in cols else pl.lit(None, pl.Int32)).fill_null(-1).alias("pid"),
            (pl.col("kernel_release") if "kernel_release" in cols else pl.lit(None, pl.String)).cast(cat)
            .fill_null("?").alias("kernel_release"),
            flags["truncated"], flags["weight"].alias("w"), flags["root_failed"],
            (pl.col("timed") if "timed" in cols else pl.lit(True)).alias("timed"),
            (pl.col("comm") if "comm" in cols else pl.lit(None, pl.String)).cast(cat).alias("comm"),
        ).with_columns(pl.when(pl.col("timed")).then(pl.col("start_time")).alias("_timed_start"))
        proc_raw = ["host", "job_id", "pid"]
        # a run is the scheduler job on its host; without a job id, the process; without either,
        # the host (so that "jobs" still counts independent runs): `_run` numbers the distinct
        # "host/job" texts. A process is (run, pid); an occurrence failed when the process made no
        # later recorded call (nothing followed it): exactly one trace per process, its last by
        # start time, then by emission order among traces of the same start (two failures in one
        # 4 ms tick: the first was followed by the second, so it survived). Per distinct process:
        # (the last row as the last by (start, row): a filter inside the aggregation left the
        # streaming engine, which then held every trace's columns, +0.35 GiB on a fleet-day)
        procs = tr.group_by(proc_raw).agg(
            pl.col("start_time").max().alias("_last"),
            pl.col("_row").sort_by("start_time", "_row").last().alias("_last_row"),
            pl.col("_timed_start").max().alias("_last_timed"),
            pl.col("start_time").min().alias("_first"),
        ).collect(engine="streaming")
        procs = procs.with_columns(
            pl.concat_str([pl.col("host").cast(pl.String),
                           pl.coalesce(pl.col("job_id").cast(pl.String),
                                       pl.when(pl.col("pid") >= 0).then(pl.format("pid:{}", pl.col("pid"))),
                                       pl.lit(""))], separator="/").rank("dense").cast(pl.UInt32).alias("_run")
        ).with_columns(pl.col("_last").max().over("_run", "pid").alias("_last_of_process"),
                       pl.col("_first").min().over("_run", "pid"))
        procs = procs.with_columns(
            pl.when(pl.col("_last") == pl.col("_last_of_process")).then(pl.col("_last_row"))
            .max().over("_run", "pid").alias("_last_row"),
            pl.col("_last_of_process").alias("_last"),
        ).drop("_last_of_process")
        # a dying process's abort path (its cleanup after the fatal error) is not its going on
        procs = _abort_path_ends(procs, tr)
        # right-censored: a process whose last trace came after its host's last capture window
        # (the host's latest timed trace) could not have shown a later call -- outside windows a
        # survivor leaves nothing -- so its end is unknown, neither a death nor a survival (the
        # end of the data cuts every job short). A host with no timed trace at all: not censored.
        procs = procs.with_columns(
            (pl.col("_last") > pl.col("_last_timed").max().over("host")).fill_null(False).alias("_censored")
        ).drop("_last_timed")
        procs = _killed_with_job(procs, tr)
        key = ["operation", "chain_hash"]
        # a process's last trace (one failing occurrence per process, whatever the trace's repeat
        # count: of n identical trees in a row, the first n-1 were followed by the next)
        last = (pl.col("start_time") == pl.col("_last")) & (pl.col("_row") == pl.col("_last_row"))
        # complete traces -- and truncated ones whose root succeeded: every error they kept was
        # absorbed, and the frames kept are the ones entered first, so an error frame they show
        # is where it was seen (a GPU registration's pin EFAULT, the peer client's take-over and
        # the UMR beyond the tracer's 16 frames were never learned: 4,224 findings on a
        # fault-free fleet, tests/fleetgen66); a truncated failure the audit matches to a
        # complete chain instead -- reduced per (chain, run, release) in one streaming pass; the
        # release's new_release flag is joined to those rows, not to every trace
        fine = (
            tr.join(procs.lazy(), on=proc_raw, how="left", nulls_equal=True)
            .filter(~pl.col("truncated") | ~pl.col("root_failed"))
            .group_by([*key, "host", "_run", "kernel_release", "comm"])
            .agg(
                pl.col("w").sum().alias("traces"),
                (last & ~pl.col("_censored")).cast(pl.Int64).sum().alias("failing"),
                # an example that was its process's last stands for trees whose processes the
                # record does not name (the kernel aggregates a signature over every process of
                # the interval: ranks dying together): their outcome is unknown, as censored
                pl.when(last).then(pl.when(pl.col("_censored")).then(pl.col("w")).otherwise(pl.col("w") - 1))
                .otherwise(0).sum().alias("censored"),
                # the same among timed traces (recorded in a capture window: see "Survival")
                # (a censored process's last timed trace -- killed with its job -- is neither: it
                # counted as a death here while the all-traces side censored it, tests/fleetgen61)
                (pl.col("w") * pl.col("timed") - (last & pl.col("timed")).cast(pl.Int64) * (pl.col("w") - 1)
                 - (last & pl.col("timed") & pl.col("_censored")).cast(pl.Int64))
                .sum().alias("timed_traces"),
                (last & pl.col("timed") & ~pl.col("_censored")).cast(pl.Int64).sum().alias("timed_failing"),
                (pl.col("w") * ~pl.col("root_failed")).sum().alias("handled"),
                pl.col("start_time").min().alias("first_seen"),
                pl.col("start_time").max().alias("last_seen"),
            )
            .collect(engine="streaming")
        )
        # kernel releases a host switched to during the window
        rel = releases if releases is not None else release_history(traces, cell_attributes(counters)
                                                                    if counters is not None else None)
        if rel is None:
            fine = fine.with_columns(pl.lit(False).alias("new_release"))
        else:
            fine = fine.join(rel.select(pl.col("host", "kernel_release").cast(cat), "new_release"),
                             on=["host", "kernel_release"], how="left")
        by_run = fine.group_by([*key, "host", "_run", "new_release", "comm"]).agg(
            pl.col("traces", "failing", "censored", "handled", "timed_traces", "timed_failing").sum(),
            pl.col("first_seen").min(),
            pl.col("last_seen").max(),
        ).with_columns(
            (pl.col("traces") - pl.col("failing") - pl.col("censored")).alias("survived"),
        )
        origins = (
            chain_origins(chains).group_by([*key, "probe", "errno"]).agg(pl.col("to_root", "superseded").all())
        )
        origins = origins.with_columns(pl.col("operation").cast(cat))
        true = by_run.join(origins.select(*key, "probe", "errno", "to_root", "superseded"), on=key).with_columns(
            # the caller can tell this error apart: its operation absorbed it (the root
            # succeeded) or returned its errno unchanged (EAGAIN to retry, ENODATA to skip a slot);
            # or the code went on from it to a later origin that reached the root: the error was
            # handled there (the pin's EFAULT before a peer client's own EINVAL: that tree's
            # failure is the fallback's, tests/fleetgen35), as where the fallback succeeds
            pl.when(pl.col("to_root") | pl.col("superseded")).then(pl.col("traces")).otherwise(pl.col("handled"))
            .alias("visible")
        )
        # an origin a later one of the same tree superseded (the code went on after it: a
        # fallback, which then failed) did not end the process: those deaths are the later
        # origin's, this one's outcome there is unknown (censored)
        sup = pl.col("superseded")
        true = true.with_columns(
            # the operation returned the error (its root failed) or absorbed it (the root
            # succeeded): see "Returned to the caller"
            (~sup & (pl.col("handled") == 0)).alias("_returned"),
            (pl.col("handled") >= pl.col("traces")).alias("_absorbed"),
            pl.when(sup).then(pl.col("censored") + pl.col("failing")).otherwise(pl.col("censored")).alias("censored"),
            pl.when(sup).then(pl.col("timed_traces") - pl.col("timed_failing")).otherwise(pl.col("timed_traces"))
            .alias("timed_traces"),
            pl.when(sup).then(0).otherwise(pl.col("failing")).alias("failing"),
            pl.when(sup).then(0).otherwise(pl.col("timed_failing")).alias("timed_failing"),
        ).drop("superseded")
        # an update's regression beside a routine family (see "Not a regression"): a host that
        # shows the error only on a release it switched to during the window got it with the
        # update. A family that also occurs on other hosts is judged on those alone, and the
        # hosts where it came with an update keep it as a finding (`update_regression`, applied
        # by the audit: baseline.fleet.audit.update_regressions); a family seen only so is judged
        # as a whole (its new_release_share decides)
        fam = ["operation", "probe", "errno"]
        absent = self._absent_hosts(true, by_run, fam)
        true = true.with_columns(
            pl.col("new_release").fill_null(False).all().over([*fam, "host"]).alias("_regression"))
        split = self._update_regressions(true, fam)
        true = true.join(split.select(*fam, "_split"), on=fam, how="left")
        regressed = (true.filter(pl.col("_regression") & pl.col("_split").fill_null(False))
                     .select(pl.col("operation").cast(pl.String), "probe", "errno", pl.col("host").cast(pl.String))
                     .unique())
        true = true.filter(~(pl.col("_regression") & pl.col("_split").fill_null(False))).drop("_split")
        # a family its operation absorbs on some calls and returns on others, where it kills (see
        # "Returned to the caller"), told from all its occurrences: before the hosts it stopped
        # succeeding on are set apart below -- a NO_RES refusing RST2INIT on two hosts, each
        # stopping there, had every returned occurrence on them, and the family, judged on its
        # absorbed calls elsewhere, was routine for a returned NO_RES on any other host
        # (tests/fleetgen64)
        returned = self._fatal_when_returned(true, fam)
        # an update's family fatal on one NIC model beside a fallback on the others (see "Not a
        # regression"): judged without those hosts, whose occurrences the audit keeps as findings
        fatal_nic = self._fatal_nic_hosts(true, fam)
        # ... and a family on the few hosts where its operation stopped succeeding (see "Stopped
        # on a host"): judged without them too, their occurrences kept as findings
        stopped = self._stopped_hosts(true, fam, counters, chains)
        if not stopped.is_empty():
            fatal_nic = pl.concat([fatal_nic, stopped.select(fatal_nic.columns)]).unique()
        if not fatal_nic.is_empty():
            true = (true.with_columns(pl.col("operation", "host").cast(pl.String).name.prefix("_"))
                    .join(fatal_nic.select(pl.col("operation", "host").name.prefix("_"), "probe", "errno"),
                          on=["_operation", "probe", "errno", "_host"], how="anti")
                    .drop("_operation", "_host"))
            regressed = pl.concat([regressed, fatal_nic.select(regressed.columns)]).unique()
        # ... judged on the absorbed calls, the returned ones kept as findings
        true = (true.join(returned, on=fam, how="left")
                .filter(~(pl.col("fatal_when_returned").fill_null(False) & pl.col("_returned")))
                .drop("fatal_when_returned"))
        returned = returned.filter(pl.col("fatal_when_returned")).with_columns(pl.col("operation").cast(pl.String))
        split = split.select(pl.col("operation").cast(pl.String), "probe", "errno",
                             pl.col("_split").alias("update_regression"))
        chain_probes = chains.select(pl.col("operation").cast(cat), "chain_hash",
                                     pl.col("probe").cast(pl.String)).unique()
        # per (chain, run) row times the chain's probes: millions of rows, reduced as they are
        # joined (eager, the join held them all: +0.25 GiB on a fleet-day)
        # (summed per chain first: the sums are integer and per chain, so the join meets one row
        # a chain instead of one a (chain, run): ~600k on a fleet-day, some thousand chains)
        observed = _stream(
            by_run.lazy().group_by(key).agg(pl.col("traces", "failing", "censored", "timed_traces", "timed_failing").sum())
            .join(chain_probes.lazy(), on=key)
            .group_by(["operation", "probe"])
            .agg((pl.col("traces") - pl.col("censored")).sum().alias("observed"),
                 pl.col("failing").sum().alias("observed_failing"),
                 pl.col("timed_traces").sum().alias("observed_timed"),
                 pl.col("timed_failing").sum().alias("observed_timed_failing"))
        )
        cand = (
            true.group_by(["operation", "probe", "errno"]).agg(*self._family_aggs())
            .join(observed, on=["operation", "probe"], how="left")
            .with_columns(pl.col("operation").cast(pl.String))
            .join(split, on=["operation", "probe", "errno"], how="left")
            .with_columns(pl.col("update_regression").fill_null(False))
            .join(returned, on=["operation", "probe", "errno"], how="left")
            .with_columns(pl.col("fatal_when_returned").fill_null(False))
            .join(fatal_nic.group_by(fam).agg(pl.col("host").sort().alias("fatal_hosts")), on=fam, how="left")
            .join(stopped.group_by(fam).agg(pl.struct("host", "since").sort_by("host").alias("fatal_since")),
                  on=fam, how="left")
            .sort(["operation", "probe", "errno"])
        )
        # the family's hosts on which its operation also succeeded: there it comes and goes (a
        # GID entry whose IP flaps), where it never does the host cannot do it (no dmabuf op)
        # (unique on the codes, then text: 5.5M traces on a fleet-day, a few thousand pairs)
        ok = tr.filter(~pl.col("root_failed")).select("operation", "host").unique().select(pl.col("operation", "host").cast(pl.String))
        also_ok = _stream(
            true.lazy().select(pl.col("operation", "host").cast(pl.String), pl.col("probe", "errno").cast(pl.String))
            .unique().join(ok, on=["operation", "host"], how="semi")
            .group_by("operation", "probe", "errno").agg(pl.len().alias("hosts_also_ok")))
        cand = (cand.with_columns(pl.col("probe", "errno").cast(pl.String))
                .join(also_ok, on=["operation", "probe", "errno"], how="left")
                .with_columns(pl.col("hosts_also_ok").fill_null(0)))
        schema_extra = {"observed_hosts": pl.Int64, "group_hosts": pl.Int64, "vendors": pl.String, "comm": pl.String,
                        "fatal_to": pl.List(pl.String), "fleet_wide": pl.Boolean}
        if cand.is_empty():
            return cand.with_columns([pl.lit(None, t).alias(c) for c, t in schema_extra.items()]
                                     + [pl.lit(False).alias("expected")])
        # spread within the vendor groups where the error occurs, among hosts that run the probe
        vendors = host_vendors(traces, chains, counters)
        err_hosts = true.select("operation", "probe", "errno", "host").unique().with_columns(
            pl.col("operation", "host").cast(pl.String))
        run_hosts = _stream(by_run.lazy().select(*key, "host").unique().join(chain_probes.lazy(), on=key)
                            .select("probe", "host").unique()).with_columns(pl.col("host").cast(pl.String))
        if counters is not None:
            calls, errs = counters[:2]
            run_hosts = pl.concat([run_hosts, _stream(calls.lazy().filter(pl.col("n") > 0).select("probe", "host").unique()).select(
                pl.col("probe").cast(pl.String), pl.col("host").cast(pl.String))]).unique()
            c_err = errs.select("probe", "errno", "host").unique().select(pl.col("probe", "errno", "host").cast(pl.String))
            # counters know no operation: an (probe, errno) host counts for every operation learning it
            err_hosts = pl.concat([err_hosts, cand.select("operation", "probe", "errno").join(
                c_err, on=["probe", "errno"]).select("operation", "probe", "errno", "host")]).unique()
        err_hosts = err_hosts.join(vendors, on="host", how="left")
        groups = err_hosts.group_by("operation", "probe", "errno").agg(
            pl.col("host").n_unique().alias("group_hosts"), pl.col("vendor").unique().sort().alias("_vendors"))
        obs = (
            groups.explode("_vendors").rename({"_vendors": "vendor"})
            .join(run_hosts.join(vendors, on="host", how="left"), on=["probe", "vendor"])
            .group_by("operation", "probe", "errno").agg(pl.col("host").n_unique().alias("observed_hosts"))
        )
        cand = (
            cand.join(groups, on=["operation", "probe", "errno"], how="left")
            .join(obs, on=["operation", "probe", "errno"], how="left")
            .with_columns(pl.col("_vendors").list.join(",").alias("vendors"),
                          pl.col("observed_hosts").fill_null(pl.col("group_hosts")))
            .drop("_vendors")
        )
        cand = cand.join(self._slowed_by_update(true, cand, rel), on=["operation", "probe", "errno"], how="left")
        cand = self._verdict(cand)
        # a family whose survival depends on the caller: its callers judged apart (see "Caller")
        callers = self._by_caller(true, cand, traces)
        cand = cand.with_columns(pl.lit(None, pl.String).alias("comm"), pl.lit(None, pl.List(pl.String)).alias("fatal_to"),
                                 pl.lit(None, pl.Boolean).alias("fleet_wide"))
        if callers is not None:
            # a family that passed fleet-wide but kills one of its callers is learned per
            # surviving caller instead: no entry without `comm` (routine for every caller)
            split = callers.select("operation", "probe", "errno").unique().with_columns(pl.lit(True).alias("_split"))
            cand = (cand.join(split, on=["operation", "probe", "errno"], how="left", maintain_order="left")
                    .with_columns(pl.col("expected") & ~pl.col("_split").fill_null(False)).drop("_split"))
            cand = pl.concat([cand, callers.select(cand.columns)], how="vertical_relaxed")
        # propagation paths and rate bands of the learned families
        paths = (
            chain_origins(chains).group_by("operation", "probe", "errno")
            .agg(pl.col("path").list.explode().unique().sort().alias("covers"))
        )
        cand = cand.join(paths, on=["operation", "probe", "errno"], how="left")
        cand = cand.join(absent.group_by(fam).agg(pl.col("host").sort().alias("absent_hosts")), on=fam, how="left")
        return self._with_bands(cand, counters, vendors, regressed)

    def _absent_hosts(self, true: pl.DataFrame, by_run: pl.DataFrame, fam: list[str]) -> pl.DataFrame:
        """(fam, host) as text: the hosts where the family is new -- see "Absent on a host". The
        family's rate is its timed occurrences over the timed traces of its operation by its
        callers (comm) on the hosts it occurred on; a host whose processes of those callers made
        enough timed traces of the operation to expect ABSENCE_MIN_EXPECTED occurrences at that
        rate, and showed none at all (timed or not), never met it: a routine refusal of one
        hardware generation's firmware (ConnectX-6 Dx ranks probing a CQE padding it lacks)
        is not routine on the ConnectX-7 hosts whose ranks create the same CQs without it
        every day, and when a firmware flash takes the capability from those, their ranks die
        of the same probe and errno (tests/fleetgen42). Timed traces only: outside capture
        windows successes leave no trace while failures always do."""
        text = [pl.col("operation", "host").cast(pl.String), pl.col("comm").cast(pl.String)]
        runs = (by_run.lazy().select(*text, "timed_traces").group_by("operation", "host", "comm")
                .agg(pl.col("timed_traces").sum().alias("_n")))
        mine = (true.lazy().select(*text, pl.col("probe", "errno").cast(pl.String), "timed_traces", "traces")
                .group_by(*fam, "host", "comm").agg(pl.col("timed_traces").sum().alias("_k"),
                                                    pl.col("traces").sum().alias("_all")))
        rate = (mine.join(runs, on=["operation", "host", "comm"], nulls_equal=True)
                .group_by(fam).agg((pl.col("_k").sum() / pl.col("_n").sum()).alias("_rate"))
                .filter(pl.col("_rate").is_finite() & (pl.col("_rate") > 0)))
        seen = mine.filter(pl.col("_all") > 0).select(*fam, "host").unique()
        callers = mine.select(*fam, "comm").unique()
        return _stream(
            callers.join(runs, on=["operation", "comm"], nulls_equal=True)
            .group_by(*fam, "host").agg(pl.col("_n").sum())
            .join(seen, on=[*fam, "host"], how="anti")
            .join(rate, on=fam)
            .filter(pl.col("_n") * pl.col("_rate") >= ABSENCE_MIN_EXPECTED)
            .select(*fam, "host")
        )

    def _verdict(self, cand: pl.DataFrame, spread: bool = True) -> pl.DataFrame:
        """The candidates' statistics (Increase and its bounds) and verdict (`expected`: every
        predicate of the module docstring holds). spread=False: the fleet-spread predicate is
        not asked (a caller's sub-family: see "Caller")."""
        z = self.z
        spread_ok = ((pl.col("group_hosts") >= self.min_host_fraction * pl.col("observed_hosts"))
                     | pl.col("errno").is_in(list(self.signal_errnos))
                     | (pl.col("handled") >= self.handled_share * pl.col("traces")))
        spread = spread_ok if spread else pl.lit(True)
        # the outcome where the recording shows it (see "Survival"): each side of Increase from
        # the timed traces when it has at least min_timed of them, else from all traces -- for
        # the error a bound that can only make it look more fatal; for the probe's traces, where
        # outside the windows only failures are recorded, the recording holds nothing better
        # Also from fewer timed traces when every one of them survived and most of all its
        # occurrences show a later call even with the sampling: the all-traces figure is then
        # the sampling's gap, not the error's (a once-per-process fallback at start -- an ioctl
        # method the kernel lacks, then write() -- looks fatal whenever no window caught the
        # rest of the process), and the timed ones' Wilson interval is the honest, wide one.
        # A timed occurrence that died, or a majority with no later call, keeps all traces.
        windows = (pl.col("timed_traces") >= self.min_timed) | (
            (pl.col("timed_traces") >= max(self.min_timed_survived, 1)) & (pl.col("timed_failing") == 0)
            & (2 * pl.col("failing") <= pl.col("traces")))
        base_windows = pl.col("observed_timed").fill_null(0) >= self.min_timed
        cand = cand.with_columns(
            windows.alias("outcome_in_windows"),
            pl.when(windows).then(pl.col("timed_failing")).otherwise(pl.col("failing")).alias("_f"),
            pl.when(windows).then(pl.col("timed_traces")).otherwise(pl.col("traces") - pl.col("censored")).alias("_n"),
            pl.when(base_windows).then(pl.col("observed_timed_failing")).otherwise(pl.col("observed_failing"))
            .fill_null(0).alias("_of"),
            pl.when(base_windows).then(pl.col("observed_timed")).otherwise(pl.col("observed")).fill_null(0).alias("_on"),
        )
        p_true_low, p_true_high = wilson_bounds(cand["_f"].to_numpy(), cand["_n"].to_numpy(), z)
        p_obs_low, p_obs_high = wilson_bounds(cand["_of"].to_numpy(), cand["_on"].to_numpy(), z)
        # the same bound over every occurrence, each without a later call of its process counted
        # as a death (the sampling's gaps as well: never fewer deaths than there were)
        _, p_all_high = wilson_bounds(cand["failing"].to_numpy(), (cand["traces"] - cand["censored"]).to_numpy(), z)
        cand = cand.with_columns(
            pl.col("survived").alias("success"),
            (pl.col("_f") / pl.col("_n")).alias("p_fail_true"),
            (pl.col("_of") / pl.col("_on")).alias("p_fail_observed"),
            (pl.col("on_new_release") / pl.col("traces")).alias("new_release_share"),
        ).drop("_f", "_n", "_of", "_on").with_columns(
            (pl.col("p_fail_true") - pl.col("p_fail_observed")).alias("increase"),
            pl.Series("increase_upper", p_true_high - p_obs_low),
            pl.Series("_increase_upper_all", p_all_high - p_obs_low),
            pl.Series("increase_lower", p_true_low - p_obs_high),
        )
        # a signal errno survived many times on fewer than min_hosts hosts (a cgroup limit or a
        # firmware without a capability on one or two hosts): the runs or the occurrences stand
        # in for the hosts when they are as many as min_hosts hosts would have needed (a later
        # trace of the process is proof it went on, sampled or not; see "Fleet spread")
        runs = ((pl.col("success_jobs") >= self.min_hosts * self.min_jobs)
                | (pl.col("success") >= self.min_hosts * self.min_success))
        runs_for_hosts = (
            # (on one host alone only when the operation never succeeds there: the host cannot do
            # it and takes another way, a driver without a dmabuf op. One host where the same
            # operation fails now and succeeds then, retried through by every job -- a GID entry
            # whose IP flaps -- and no other host shows it: that host's fault)
            pl.col("errno").is_in(list(self.signal_errnos))
            & ((pl.col("success_hosts") >= 2) | ((pl.col("success_hosts") >= 1) & (pl.col("hosts_also_ok") == 0)))
            & runs)
        if "own_use" in cand.columns:
            # a caller's own use of a family that kills another caller elsewhere (see "Caller"):
            # its runs stand in for hosts whatever the errno, and on one host too
            runs_for_hosts = runs_for_hosts | (pl.col("own_use") & runs)
        absorbed = pl.col("handled") >= self.handled_share * pl.col("traces")
        # an error that came with an update (see "Not a regression") must be shown harmless, not
        # merely not shown harmful: routine only where the capture windows show its outcome
        # (min_timed timed traces) and even Increase's upper bound stays within max_increase --
        # a capability the new driver refuses and every process does without (tests/fleetgen19:
        # create_cq EOPNOTSUPP at create_cq_user on every upgraded host); a fatal one, or one
        # whose outcome the windows do not show, stays a finding
        # ... and not where the operation's good calls got much slower on those hosts with the
        # update (see "Not a regression": survived, at the cost of seconds of retries)
        slowed = (pl.col("slowed_after_update").fill_null(False) if "slowed_after_update" in cand.columns
                  else pl.lit(False))
        # ... or where no timed occurrence died and even counting every occurrence without a
        # later call as a death the upper bound stays within max_increase (the windows' few
        # dozen timed traces bound it only loosely: 55 of 55 survived is an upper bound of 6.5 %,
        # while 201 of 205 occurrences show a later call; tests/fleetgen39)
        shown_harmless = (pl.col("increase_upper") <= self.max_increase) | (
            (pl.col("timed_failing") == 0) & (pl.col("_increase_upper_all") <= self.max_increase))
        not_regression = (pl.col("new_release_share") < self.max_new_share) | (
            pl.col("outcome_in_windows") & (pl.col("timed_traces") >= self.min_timed) & shown_harmless & ~slowed)
        cand = cand.with_columns(
            (
                # an error its operation absorbs (the root still succeeded) is survived by the call
                # itself, whatever the process did next: its handled occurrences and their jobs
                # count as survivals (an ignored EINVAL of destroy_qp's counter unbind in every
                # teardown, the process's last act, had one "later call" in 37 and was a finding)
                ((pl.col("success") >= self.min_success) | (absorbed & (pl.col("handled") >= self.min_success)))
                # ... and wherever it occurs: the hosts that show it in their counters count as well
                & ((pl.when(absorbed)
                    .then(pl.max_horizontal("success_hosts", "group_hosts")).otherwise(pl.col("success_hosts"))
                    >= self.min_hosts) | runs_for_hosts)
                & ((pl.col("success_jobs") >= self.min_jobs) | (absorbed & (pl.col("jobs") >= self.min_jobs)))
                & spread
                & (pl.col("increase_lower") <= self.max_increase)
                & not_regression
                & (pl.col("visible") >= self.handled_share * pl.col("traces"))
            ).alias("expected")
        ).drop("_increase_upper_all")
        return cand

    def _by_caller(self, true: pl.DataFrame, cand: pl.DataFrame,
                   traces: pl.DataFrame | None = None) -> pl.DataFrame | None:
        """Sub-families (operation, probe, errno, comm) of the families that some caller
        survives and another is killed by (see "Caller"): each caller's own statistics and
        verdict (fleet spread not asked), `expected` only where another caller of the family is
        shown to die of it (Increase's lower bound above ``max_increase``), `fatal_to` naming
        those callers. A family not learned fleet-wide gives every caller's row; one learned
        fleet-wide only when a caller dies of it (its entry is then split by caller: an agent
        that goes on through a driver restart's EIO beside ranks it kills where the restart
        never ended, tests/fleetgen16). A family not learned fleet-wide with one caller alone,
        on fewer than ``min_hosts`` hosts, gives that caller's row too, learned where its use is
        its own (`_alone_own_use`). None when no family has two callers or such a one."""
        fam = ["operation", "probe", "errno"]
        open_ = cand.select(fam)
        if open_.is_empty() or "comm" not in true.columns:
            return None
        alone = self._alone_own_use(true, cand, traces)
        # grouped on the categorical codes first: the families' rows only, text for those
        per = (true.lazy().filter(pl.col("comm").is_not_null())
               .with_columns(pl.col("operation").cast(pl.String))
               .join(open_.lazy(), on=fam, how="semi")
               .join(alone.lazy().with_columns(pl.lit(True).alias("_alone")), on=fam, how="left")
               .filter((pl.col("comm").n_unique().over(fam) >= 2) | pl.col("_alone").fill_null(False))
               .drop("_alone")
               .group_by([*fam, "comm"]).agg(*self._family_aggs())
               .with_columns(pl.col("comm").cast(pl.String))
               .collect())
        if per.is_empty():
            return None
        per = per.join(alone.with_columns(pl.lit(True).alias("_alone")), on=fam, how="left").with_columns(
            pl.col("_alone").fill_null(False))
        # a caller's own use: on none of its hosts does the family end another caller's process
        # (a diagnostic probing the memlock limit on one host, while the same reg_mr ENOMEM kills
        # ranks on forty others: tests/fleetgen19). Where it does (one host's firmware EIO that
        # an agent goes on through and ranks die of: tests/fleetgen16), the host is at fault
        rows = (true.lazy().filter(pl.col("comm").is_not_null())
                .with_columns(pl.col("operation", "host", "comm").cast(pl.String))
                .join(open_.lazy(), on=fam, how="semi"))
        deaths = rows.filter(pl.col("failing") > 0).select(*fam, "host", pl.col("comm").alias("_killed")).unique()
        shared = (rows.select(*fam, "host", "comm").unique().join(deaths, on=[*fam, "host"])
                  .filter(pl.col("_killed") != pl.col("comm")).select(*fam, "comm").unique()
                  .with_columns(pl.lit(True).alias("_shared")).collect())
        per = (per.join(shared, on=[*fam, "comm"], how="left")
               .with_columns((~pl.col("_shared").fill_null(False)).alias("own_use")).drop("_shared"))
        # what the fleet shows of the family whoever calls: its probe's base rate (Increase's
        # second side), its spread, release history and hosts
        fleet = ["observed", "observed_failing", "observed_timed", "observed_timed_failing", "update_regression",
                 "fatal_when_returned", "fatal_hosts", "fatal_since", "slowed_after_update", "hosts_also_ok",
                 "group_hosts", "observed_hosts", "vendors"]
        per = self._verdict(per.join(cand.select(*fam, *fleet, pl.col("expected").alias("_learned")), on=fam,
                                     how="left"), spread=False)
        fatal = pl.col("increase_lower") > self.max_increase
        # a family that passed fleet-wide is split only when a caller dies of it significantly
        # more often than the family's other callers (the Wilson lower bound of its failing share
        # above the others' upper bound by more than max_increase, as for update regressions):
        # ranks dying every time beside an agent that goes on, not a caller whose last sampled
        # trace was a routine retry a few times more often than another's (tests/fleetgen3)
        n = pl.col("traces") - pl.col("censored")
        per = per.with_columns(n.alias("_n"), (n.sum().over(fam) - n).alias("_on"),
                               (pl.col("failing").sum().over(fam) - pl.col("failing")).alias("_of"))
        apart = increase_lower(per["failing"].to_numpy(), per["_n"].to_numpy(), per["_of"].to_numpy(),
                               per["_on"].to_numpy(), self.z) > self.max_increase
        per = per.with_columns(pl.Series("_apart", apart)).drop("_n", "_on", "_of")
        fatal = fatal & (~pl.col("_learned") | pl.col("_apart"))
        killed = per.group_by(fam).agg(pl.col("comm").filter(fatal).sort().alias("fatal_to"))
        per = per.join(killed, on=fam, how="left").with_columns(
            (pl.col("expected") & ((pl.col("fatal_to").list.len() > 0) | pl.col("_alone"))).alias("expected"))
        per = (per.filter(~pl.col("_learned") | (pl.col("fatal_to").list.len() > 0)).drop("_apart", "_alone")
               .rename({"_learned": "fleet_wide"}))
        return None if per.is_empty() else per.sort([*fam, "comm"])

    def _alone_own_use(self, true: pl.DataFrame, cand: pl.DataFrame, traces: pl.DataFrame | None) -> pl.DataFrame:
        """Families (operation, probe, errno; text) not learned fleet-wide whose one caller meets
        them on fewer than ``min_hosts`` hosts while, on each of those hosts, the same operation
        succeeded for another caller between the family's first and last occurrence there: a
        program's own use of an error (a diagnostic finding its memlock limit by registering
        doubling buffers until reg_mr ENOMEM, every ten minutes on one host, while the ranks
        there register theirs: tests/fleetgen20), not a state the host is in -- a NIC failing
        every CREATE_MKEY fails everyone's, and once the scheduler drained the host only its
        node agent meets it (the same test's broken NIC: no other caller succeeds there after
        the fault, so nothing is learned). Its caller's row is then judged as a caller's
        sub-family whose use is its own (see "Caller": runs standing in for hosts)."""
        fam = ["operation", "probe", "errno"]
        empty = pl.DataFrame(schema={c: pl.String for c in fam})
        if traces is None or "comm" not in traces.columns or cand.is_empty():
            return empty
        open_ = cand.filter(~pl.col("expected")).select(fam)
        spans = (true.lazy().with_columns(pl.col("operation").cast(pl.String))
                 .join(open_.lazy(), on=fam, how="semi")
                 .filter((pl.col("comm").n_unique().over(fam) == 1) & pl.col("comm").is_not_null().all().over(fam)
                         & (pl.col("host").n_unique().over(fam) < self.min_hosts))
                 .group_by(*fam, "host", "comm").agg(pl.col("first_seen").min(), pl.col("last_seen").max())
                 .with_columns(pl.col("host", "comm").cast(pl.String))
                 .collect())
        if spans.is_empty():
            return empty
        # (root_failed from the columns at hand: the narrow per-trace table's flag or the wide one's)
        root_failed = trace_flags(set(traces.columns))["root_failed"]
        ok = (traces.lazy().filter(~root_failed & pl.col("comm").is_not_null())
              .select(pl.col("operation", "host", "comm").cast(pl.String), "start_time")
              .join(spans.lazy().select("operation", "host").unique(), on=["operation", "host"], how="semi")
              .collect())
        others_ok = (spans.join(ok.rename({"comm": "_other"}), on=["operation", "host"])
                     .filter((pl.col("_other") != pl.col("comm")) & pl.col("start_time").is_between("first_seen", "last_seen"))
                     .select(*fam, "host").unique())
        per_fam = spans.join(others_ok.with_columns(pl.lit(True).alias("_ok")), on=[*fam, "host"], how="left")
        return (per_fam.group_by(fam).agg(pl.col("_ok").fill_null(False).all())
                .filter(pl.col("_ok")).select(fam))

    @staticmethod
    def _family_aggs() -> list[pl.Expr]:
        """A family's statistics from `true`'s rows (per chain, run, release and caller)."""
        return [
            pl.col("traces").sum(),
            pl.col("failing").sum(),
            pl.col("censored").sum(),
            pl.col("timed_traces").sum(),
            pl.col("timed_failing").sum(),
            pl.col("survived").sum(),
            pl.col("handled").sum(),
            pl.col("visible").sum(),
            pl.col("host").filter(pl.col("survived") > 0).n_unique().alias("success_hosts"),
            pl.col("_run").filter(pl.col("survived") > 0).n_unique().alias("success_jobs"),
            pl.col("host").n_unique().alias("hosts"),
            pl.col("_run").n_unique().alias("jobs"),
            # occurrences on a release their host switched to, on hosts that did not show the
            # error before the switch (see "Not a regression")
            (pl.col("traces") * (pl.col("new_release").fill_null(False) & pl.col("_regression"))).sum()
            .alias("on_new_release"),
            pl.col("first_seen").min(),
            pl.col("last_seen").max(),
        ]

    def _slowed_by_update(self, true: pl.DataFrame, cand: pl.DataFrame, rel: pl.DataFrame | None) -> pl.DataFrame:
        """(operation, probe, errno, slowed_after_update) for the update's families that might be
        shown harmless (at least ``max_new_share`` of their occurrences came with the update and
        ``min_timed`` were timed): True where, on the hosts it came to, the operation's timed
        good calls took at least ``slow_factor`` times longer (median) on the release they
        switched to than before, each side with ``min_timed`` calls. Every process survives a
        firmware that answers 30 % of CREATE_QP with RES_BUSY, retrying after a second or more,
        but the good create_qp calls there take 377 ms instead of 2.8 ms (tests/fleetgen20): a
        cost the update brought, not a harmless refusal. Read (the latencies, a second targeted
        pass) only for such families."""
        fam = ["operation", "probe", "errno"]
        out = pl.DataFrame(schema={"operation": pl.String, "probe": pl.String, "errno": pl.String,
                                   "slowed_after_update": pl.Boolean})
        reader = getattr(self, "_good_latency", None)
        if reader is None or rel is None or cand.is_empty():
            return out
        asked = cand.filter((pl.col("on_new_release") >= self.max_new_share * pl.col("traces"))
                            & (pl.col("timed_traces") >= self.min_timed)).select(fam)
        if asked.is_empty():
            return out
        hosts = (true.filter(pl.col("_regression")).select(pl.col("operation", "host").cast(pl.String), "probe", "errno")
                 .unique().join(asked, on=fam, how="semi"))
        switched = rel.select(pl.col("host", "kernel_release").cast(pl.String), "new_release")
        rows = []
        for (op,), group in hosts.group_by("operation"):
            lat = reader(str(op), group["host"].unique().sort().to_list())
            if lat.is_empty():
                continue
            lat = lat.join(switched, on=["host", "kernel_release"], how="left").with_columns(
                pl.col("new_release").fill_null(False))
            for (probe, errno), fam_hosts in group.group_by("probe", "errno"):
                mine = lat.filter(pl.col("host").is_in(fam_hosts["host"].implode()))
                before = mine.filter(~pl.col("new_release"))["latency_ns"]
                after = mine.filter(pl.col("new_release"))["latency_ns"]
                if before.len() >= self.min_timed and after.len() >= self.min_timed:
                    slowed = float(after.median()) >= self.slow_factor * max(float(before.median()), 1.0)
                    rows.append((str(op), probe, errno, slowed))
        return pl.DataFrame(rows, schema=out.schema, orient="row") if rows else out

    def _fatal_nic_hosts(self, true: pl.DataFrame, fam: list[str]) -> pl.DataFrame:
        """(fam, host) as text: the hosts of an update's family (at least ``max_new_share`` of its
        occurrences came with the update: see "Not a regression") whose NIC -- model and
        firmware, from the traces' metadata -- is one the family kills on: the hosts of that NIC
        together died of it (the Wilson lower bound of their failing share above 1/2) and
        significantly more often than the family's other hosts (Increase's lower bound, group
        against the rest, above ``max_increase``). Two ConnectX-6 Dx hosts whose pinned image has
        no fallback for the update's create_cq EOPNOTSUPP lose every rank, beside forty
        ConnectX-7 hosts whose provider creates the CQ again without compression
        (tests/fleetgen20): weighed fleet-wide their deaths are within the bound of "shown
        harmless", weighed by NIC they are the family's whole story there. Per NIC, not per host:
        a host whose windows caught none of its jobs after the update shows the refusal as
        every rank's last trace (tests/fleetgen19's benign CQE-padding refusal, 5 of 64 hosts),
        which alone looks like deaths; hosts of one NIC model dying together while the other
        models' go on is what an SRE calls a platform's fault. Only read (the metadata, a second
        targeted pass) for a family with a host where it killed and nothing survived it."""
        empty = pl.DataFrame(schema={**{c: pl.String for c in fam}, "host": pl.String})
        reader = getattr(self, "_nic_identity", None)
        if reader is None or true.is_empty():
            return empty
        outcome = pl.col("traces") - pl.col("censored")
        new = (pl.col("traces") * (pl.col("new_release").fill_null(False) & pl.col("_regression"))).sum()
        update_fams = (true.group_by(fam).agg((new / pl.col("traces").sum()).alias("_share"))
                       .filter(pl.col("_share") >= self.max_new_share).select(fam))
        per_host = (true.join(update_fams, on=fam, how="semi")
                    .group_by(*fam, "host").agg(pl.col("failing").sum(), outcome.sum().alias("_n"),
                                                pl.col("survived").sum())
                    .with_columns(pl.col("operation", "host").cast(pl.String)))
        killed = per_host.filter((pl.col("failing") > 0) & (pl.col("survived") == 0)).select(fam).unique()
        per_host = per_host.join(killed, on=fam, how="semi")
        if per_host.is_empty():
            return empty
        nics = reader(per_host["host"].unique().sort().to_list(), per_host["errno"].unique().sort().to_list())
        if nics.is_empty():
            return empty
        by_nic = (per_host.join(nics, on="host").group_by(*fam, "nic")
                  .agg(pl.col("failing", "_n").sum(), pl.col("host"))
                  .with_columns(pl.col("failing").sum().over(fam).alias("_tf"), pl.col("_n").sum().over(fam).alias("_tn"),
                                pl.col("nic").n_unique().over(fam).alias("_nics")))
        f, n = by_nic["failing"].to_numpy(), by_nic["_n"].to_numpy()
        rest_f, rest_n = by_nic["_tf"].to_numpy() - f, by_nic["_tn"].to_numpy() - n
        low, _ = wilson_bounds(f, n, self.z)
        fatal = ((by_nic["_nics"].to_numpy() >= 2) & (rest_n > 0) & (low > 0.5)
                 & (increase_lower(f, n, rest_f, rest_n, self.z) > self.max_increase))
        return (by_nic.filter(pl.Series(fatal, dtype=pl.Boolean)).select(*fam, "host").explode("host")
                .select(empty.columns).cast(empty.schema))

    def _stopped_hosts(self, true: pl.DataFrame, fam: list[str], counters: Any, chains: pl.DataFrame) -> pl.DataFrame:
        """(fam, host) as text: the hosts where the family's operation stopped succeeding (see
        "Stopped on a host"). From the exact counters of the operation's root probe: a stretch
        of at least STOPPED_BUCKETS consecutive counter buckets in which every call failed with
        the family's errno, at least ``min_success`` calls, after a bucket in which some call
        succeeded; a capture window saw a process die of it there (timed_failing); and such
        hosts are fewer than half of the family's. One host whose rdma cgroup limit went to
        zero, every rank's alloc_pd failing EAGAIN until it gave up, beside thirty-nine whose
        ranks retry through the same EAGAIN now and then (tests/fleetgen22): pooled, its deaths
        were within the bound of routine, and the records' own outcomes cannot show them --
        a survivor outside a capture window leaves no later trace either, and a retry loop's
        attempts before the last are survivals."""
        empty = pl.DataFrame(schema={**{c: pl.String for c in fam}, "host": pl.String,
                                     "since": pl.Datetime("ns", "UTC")})
        if counters is None or true.is_empty():
            return empty
        # only a family something went on through somewhere can be learned at all (a fatal one,
        # the simulator's peer-memory EFAULT cascade on 83 hosts of a fleet-day, is left out)
        went_on = true.group_by(fam).agg((pl.col("survived") + pl.col("handled")).sum().alias("_on")).filter(pl.col("_on") > 0)
        per_caller = (true.join(went_on.select(fam), on=fam, how="semi")
                      .group_by(*fam, "host", "comm").agg(pl.col("failing", "timed_failing", "survived").sum()))
        # a caller that went on through it on the host (survived, never died of it: a health
        # agent beside the ranks it kills, tests/fleetgen16) leaves the host to the split by caller
        per_host = (per_caller.group_by(*fam, "host")
                    .agg(pl.col("failing", "timed_failing").sum(),
                         ((pl.col("failing") == 0) & (pl.col("survived") > 0)).any().alias("_went_on"))
                    .with_columns(pl.col("operation", "host", "probe", "errno").cast(pl.String),
                                  pl.col("host").n_unique().over(fam).alias("_hosts")))
        seen_dying = per_host.filter((pl.col("failing") > 0) & (pl.col("timed_failing") > 0) & ~pl.col("_went_on"))
        if seen_dying.is_empty():
            return empty
        roots = (chains.filter(pl.col("depth") == 0).select(pl.col("operation", "probe").cast(pl.String))
                 .unique().rename({"probe": "root"}))
        cells = seen_dying.join(roots, on="operation")
        if cells.is_empty():
            return empty
        calls, errors = counters[:2]
        wanted = cells.select("host", "root").unique()
        # the few hosts' and root probes' cells first (on the tables' own categorical keys: a
        # fleet-day's counters are ~5M cells), text for those only
        near = pl.col("host").is_in(wanted["host"].unique().implode()) & pl.col("probe").is_in(
            wanted["root"].unique().implode())
        text = [pl.col("host").cast(pl.String), pl.col("probe").cast(pl.String).alias("root")]
        n = (calls.lazy().filter(near & (pl.col("n") > 0)).select(*text, "bucket", "n")
             .join(wanted.lazy(), on=["host", "root"], how="semi").collect())
        failed = (errors.lazy().filter(near).select(*text, pl.col("errno").cast(pl.String), "bucket", "count")
                  .join(wanted.lazy(), on=["host", "root"], how="semi").collect())
        buckets = (cells.select(*fam, "host", "root", "_hosts").join(n, on=["host", "root"])
                   .join(failed, on=["host", "root", "errno", "bucket"], how="left")
                   .with_columns(pl.col("count").fill_null(0))
                   .sort("bucket")
                   .with_columns((pl.col("count") >= pl.col("n")).alias("_stopped")))
        # stretches of consecutive stopped buckets, each after a bucket where a call succeeded
        key = [*fam, "host"]
        runs = (buckets.with_columns((pl.col("_stopped") != pl.col("_stopped").shift(1).over(key)).fill_null(True)
                                     .cum_sum().over(key).alias("_stretch"),
                                     (~pl.col("_stopped")).cum_sum().over(key).alias("_ok_before"))
                .filter(pl.col("_stopped") & (pl.col("_ok_before") > 0))
                .group_by(*key, "_stretch", "_hosts").agg(pl.len().alias("_buckets"), pl.col("n").sum().alias("_calls"),
                                                          pl.col("bucket").min().alias("since")))
        hit = runs.filter((pl.col("_buckets") >= STOPPED_BUCKETS) & (pl.col("_calls") >= self.min_success))
        # from the first such stretch's first bucket: before it the host's occurrences were
        # as routine as anywhere (its ranks retried through them)
        hit = (hit.group_by(*key, "_hosts").agg(pl.col("since").min())
               .filter(2 * pl.col("host").n_unique().over(fam) < pl.col("_hosts")))
        # ... or from the bucket before it, when `STOP_ONSET_SHARE` of that bucket's calls or more
        # failed so: the stop began inside it (a command queue that hung at 02:00:20 failed 97 %
        # of the 02:00 bucket's CREATE_QPs; taken from 02:15, its first 15 minutes of records
        # were set aside as routine: tests/fleetgen57)
        before = (buckets.filter(pl.col("n") > 0)
                  .select(*key, (pl.col("bucket") + pl.duration(nanoseconds=BUCKET_NS)).alias("since"),
                          (pl.col("count") >= STOP_ONSET_SHARE * pl.col("n")).alias("_onset"))
                  .group_by(*key, "since").agg(pl.col("_onset").any()))
        hit = (hit.join(before, on=[*key, "since"], how="left")
               .with_columns(pl.when(pl.col("_onset").fill_null(False))
                             .then(pl.col("since") - pl.duration(nanoseconds=BUCKET_NS))
                             .otherwise(pl.col("since")).alias("since")))
        return hit.select(empty.columns).cast(empty.schema)

    def _update_regressions(self, true: pl.DataFrame, fam: list[str]) -> pl.DataFrame:
        """Families (fam, `_split`) whose occurrences on hosts that show them only on a release
        they switched to during the window (`_regression`) are significantly more fatal there
        than on the other hosts (`_more_fatal`). A routine error that merely happened to first
        show on a host after its update goes on there as elsewhere."""
        reg = pl.col("_regression")
        return self._more_fatal(true, fam, reg, ~reg, "_split")

    def _fatal_when_returned(self, true: pl.DataFrame, fam: list[str]) -> pl.DataFrame:
        """Families (fam, `fatal_when_returned`) whose occurrences the operation returned to its
        caller (the root failed with them) are significantly more fatal than those it absorbed
        (the root succeeded; `_more_fatal`). NO_RES at mlx5_cmd_exec while binding a QP counter,
        which _ib_modify_qp ignores on every sweep worker, is the same (operation, origin, errno)
        as NO_RES refusing the RST2INIT itself, which ends the rank (tests/fleetgen60)."""
        return self._more_fatal(true, fam, pl.col("_returned"), pl.col("_absorbed"), "fatal_when_returned")

    def _more_fatal(self, true: pl.DataFrame, fam: list[str], worse: pl.Expr, other: pl.Expr, name: str) -> pl.DataFrame:
        """Per family (fam, `name`): its occurrences where `worse` holds are significantly more
        fatal than those where `other` does -- the Wilson lower bound of the one side's failing
        share exceeds the upper bound of the other's by more than ``max_increase``, both sides
        having outcomes."""
        outcome = pl.col("traces") - pl.col("censored")
        g = true.group_by(fam).agg(
            pl.col("failing").filter(worse).sum().alias("wf"), outcome.filter(worse).sum().alias("wn"),
            pl.col("failing").filter(other).sum().alias("of"), outcome.filter(other).sum().alias("on"))
        more = increase_lower(g["wf"].to_numpy(), g["wn"].to_numpy(), g["of"].to_numpy(), g["on"].to_numpy(), self.z)
        split = (g["wn"].to_numpy() > 0) & (g["on"].to_numpy() > 0) & (more > self.max_increase)
        return g.select(fam).with_columns(pl.Series(name, split, dtype=pl.Boolean))

    def _with_bands(self, cand: pl.DataFrame, counters: Any, vendors: pl.DataFrame,  # noqa: ARG002
                    regressed: pl.DataFrame | None = None) -> pl.DataFrame:
        """rate_upper per candidate: for each probe its errno goes through (`covers`), the band of
        that (probe, errno) from the counters: each probe has its own rate (rdma_get_gid_attr is
        also called by INIT->RTR, the GID query handler only by GID queries)."""
        band_type = pl.List(pl.Struct({"probe": pl.String, "rate_upper": pl.Float64}))
        if counters is None or cand.is_empty():
            return cand.with_columns(pl.lit(None, band_type).alias("rate_upper"))
        calls, errs = counters[:2]
        # grouped on the tables' own (categorical) keys, text for the groups only
        n = _stream(calls.lazy().group_by("host", "probe").agg(pl.col("n").sum())).with_columns(
            pl.col("host", "probe").cast(pl.String))
        f = _stream(errs.lazy().group_by("host", "probe", "errno").agg(pl.col("count").sum())).with_columns(
            pl.col("host", "probe", "errno").cast(pl.String))
        rates = f.join(n, on=["host", "probe"]).with_columns((pl.col("count") / pl.col("n").clip(1)).alias("rate"))
        if regressed is not None and regressed.height:
            # a host where an errno came with its update is no measure of the routine rate
            rates = rates.join(regressed.select("host", "errno").unique(), on=["host", "errno"], how="anti")
        bands = (
            rates.group_by("probe", "errno")
            .agg(pl.col("rate").quantile(self.band_quantile, "higher").alias("_q"))
            .with_columns((pl.col("_q") * self.band_factor).clip(upper_bound=1.0).alias("rate_upper"))
            .drop("_q")
        )
        per = (
            cand.select("operation", pl.col("probe").alias("_origin"), "errno", "covers")
            .explode("covers").rename({"covers": "probe"})
            .join(bands, on=["probe", "errno"], how="inner")
            .group_by("operation", "_origin", "errno")
            .agg(pl.struct("probe", "rate_upper").alias("rate_upper"))
            .rename({"_origin": "probe"})
        )
        return cand.join(per, on=["operation", "probe", "errno"], how="left")

    def _entry(self, row: dict[str, Any]) -> Entry:
        comm = row.get("comm")
        stats = {
            "statistic": "CBI Increase(P) = P(fail|P) - P(fail|P observed)",
            "unit": "operation, origin probe, errno" + (", caller (comm)" if comm is not None else ""),
            "increase": round(float(row["increase"]), 6),
            "increase_upper": round(float(row["increase_upper"]), 6),
            "increase_lower": round(float(row["increase_lower"]), 6),
            "confidence_z": self.z,
            "p_fail_true": round(float(row["p_fail_true"]), 6),
            "p_fail_observed": round(float(row["p_fail_observed"] or 0.0), 6),
            "traces": int(row["traces"]),
            "failing_traces": int(row["failing"]),
            "observed_traces": int(row["observed"] or 0),
            "hosts": int(row["group_hosts"]),
            "observed_hosts": int(row["observed_hosts"]),
            "vendors": row["vendors"],
            "outcome": "fail = the process (host, job, pid) made no later call",
            "outcome_from": "timed traces (capture windows)" if row["outcome_in_windows"] else "all traces",
            "jobs": int(row["jobs"]),
            "covers": list(row["covers"] or [row["probe"]]),
        }
        # a host's own rate of it says how the host is configured, not a state it fell into: its
        # operation absorbs it (no caller sees it), or its errno tells the caller what to do next
        # (see "Fleet spread"); host alerts need another error for a persistent bad state
        if row["handled"] >= self.handled_share * row["traces"] or row["errno"] in self.signal_errnos:
            stats["host_configuration"] = True
        if comm is not None:  # routine for this caller; the callers named die of it (see "Caller")
            stats["fatal_to"] = list(row["fatal_to"] or [])
            if row.get("fleet_wide"):  # split from a family that passed fleet-wide: counters' band holds
                stats["fleet_wide"] = True
        if row.get("fatal_when_returned"):  # routine where absorbed, not where returned (see "Returned to the caller")
            stats["fatal_when_returned"] = True
        if row.get("update_regression"):  # not routine where it came with a kernel update
            stats["update_regression"] = True
        if row.get("fatal_hosts"):  # not routine on the hosts of the NIC it kills on (see "Not a regression")
            stats["fatal_hosts"] = list(row["fatal_hosts"])
        if row.get("fatal_since"):  # ... or stopped succeeding on, from then (see "Stopped on a host")
            stats["fatal_since"] = {s["host"]: _iso(s["since"]) for s in row["fatal_since"]}
        if row.get("absent_hosts"):  # not routine where the same callers never met it (see "Absent on a host")
            stats["absent_hosts"] = list(row["absent_hosts"])
        if row.get("rate_upper"):  # per covered probe: errno count / invocations, per host
            stats["rate_upper"] = {b["probe"]: round(float(b["rate_upper"]), 6) for b in row["rate_upper"]}
        return Entry(
            id=learned_id(row["probe"], row["errno"], None, row["operation"], comm),
            source="learned",
            probe=row["probe"],
            errno=row["errno"],
            context=row["operation"],
            comm=comm,
            support={"runs": int(row["success"]), "total": int(row["observed"] or row["traces"])},
            first_seen=_iso(row["first_seen"]),
            last_seen=_iso(row["last_seen"]),
            stats=stats,
        )


def learn_fleet_expected(
    dataset: EventsInput,
    since: str | dt.datetime | None = None,
    **params: Any,
) -> FleetExpectedResult:
    """Learn expected errors from a fleet dataset (all traces: good and failure, plus its
    counters when it has them), in one streaming pass (FleetExpectedLearner.fit)."""
    learner = FleetExpectedLearner(**params).fit(dataset, since=since)
    return FleetExpectedResult(learner.entries_, learner.candidates_)


def expected_from_traces(traces: pl.DataFrame, chains: pl.DataFrame, counters: Any = None,
                         releases: pl.DataFrame | None = None, nic_identity: NicIdentity | None = None,
                         good_latency: GoodLatency | None = None, **params: Any) -> FleetExpectedResult:
    """FleetExpectedLearner.fit_traces on collect_traces' output (and bucketed counters)."""
    learner = FleetExpectedLearner(**params).fit_traces(traces, chains, counters, releases, nic_identity,
                                                        good_latency)
    return FleetExpectedResult(learner.entries_, learner.candidates_)


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_into_file(
    path: str | os.PathLike, entries: list[Entry], now: str | None = None
) -> dict[str, int]:
    """Merge learned entries into an expected_errors.yaml (created when missing), atomically.

    Curated entries win; learned entries carry fresh stats; unsupported ones turn stale."""
    path = Path(path)
    with atomic.merge_lock(path):  # two learners into one file: each merges the other's result
        expected = ExpectedErrors.load(path, to_merge=True) if path.exists() else ExpectedErrors([], source=str(path))
        counts = expected.merge_learned(entries, now=now)
        fresh = {e.key(): e for e in entries}
        for e in expected.learned():  # merge_learned refreshes support only; carry the new stats too
            if e.key() in fresh and e.status == "active":
                e.stats = fresh[e.key()].stats
        expected.save(path)
    return counts

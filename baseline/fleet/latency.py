"""Rising-latency host alerts: a host whose *successful* calls of one operation got much slower
and stayed slow, while the same operation on the other hosts did not.

A firmware update that makes one NIC's CREATE_QP command take 6 ms instead of 0.4 ms fails
nothing: no errno, so none of the error-count alerts (baseline.fleet.audit.host_alerts) can see
it, yet every job on the host starts slower. The only sign is the root latency of the host's good
traces (timed: recorded in a capture window).

How an alert is earned (each guard is what keeps a pager quiet on something that is not a host's
fault):
  * every good trace's latency is taken relative to the operation's fleet level in the same hour
    (the median over the hosts of each host's median there, at least `min_peer_hosts` hosts):
    a fleet-wide slowdown (a kernel or library rollout, a loaded hour) moves the level with it
    and no host stands out;
  * the host's relative latencies are split in two at the time that best separates them (one
    change point); the median after must be `min_ratio` times the median before, and by at
    least `min_rise_ns` in absolute terms (a 10 us query tripling is nobody's incident);
  * both periods hold `min_traces` good traces or more: a median of three traces is not evidence;
  * the two periods are separated, not just their medians: at most `max_overlap` of the traces
    before lie above the midpoint (on a log scale) and at least 1 - `max_overlap` of those after
    do -- a noisy host whose latency swings all day has no such split;
  * the rise is sustained: each period's traces fall in `min_slots` distinct 15-minute slots or
    more (good traces come in bursts, a job's ranks starting within a second: one burst is one
    job, whatever its rank count), and the host's last slot with traces is still above the
    midpoint (a slow job or hour that recovered is a burst, not a state).

The rows read are the root rows of timed good traces (model.good_root_rows: six columns). The
audit's per-trace table keeps no latency (a column of millions of rows for this one question):
run_audit takes these rows from the frames of its one pass over the events (collect_traces'
`good_roots`, a filter a batch); `good_root_latencies` reads them in a targeted lazy scan of
their own (a dataset without an audit pass; ~1 CPU s of a 2,000-host day, mostly opening files).
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import polars as pl

from baseline.fleet.model import (
    EventsInput,
    _scan_files,
    event_files,
    good_root_rows,
    parse_since,
    since_filter,
)
from tracer.schema import polars_schema

ALERT = "rising_latency"
_REFERENCE_BUCKET = "1h"
_SLOT = "15m"
_BURST_GAP_NS = 60 * 10**9


def good_root_latencies(dataset: EventsInput, since: str | dt.datetime | None = None) -> pl.DataFrame:
    """host, probe, arg, command, start_time, latency_ns: the root row of every timed good trace
    (model.good_root_rows), in a targeted read of their own: only these columns are decoded, and
    only root rows with a latency leave the scan. (The audit takes the same rows from its one
    pass over the events instead: collect_traces' `good_roots`.)"""
    empty = pl.DataFrame(schema={"host": pl.String, "probe": pl.String, "arg": pl.String, "command": pl.String,
                                 "start_time": pl.Datetime("ns", "UTC"), "latency_ns": pl.Int64})
    since_dt = parse_since(since)
    if isinstance(dataset, (pl.LazyFrame, pl.DataFrame)):
        lf = dataset.lazy()
    else:
        files = event_files(dataset, since=since_dt.date().isoformat() if since_dt else None)
        if not files:
            return empty
        lf = _scan_files([str(f) for f in files])
    if not {"latency_ns", "depth", "errno", "kind", "probe", "start_time"} <= set(lf.collect_schema().names()):
        return empty
    return good_root_rows(lf.filter(since_filter(since_dt))).collect(engine="streaming")


def rising_latency(
    roots: pl.DataFrame,
    min_ratio: float = 3.0,
    min_rise_ns: int = 100_000,
    min_traces: int = 8,
    min_peer_hosts: int = 5,
    max_overlap: float = 0.2,
    min_slots: int = 2,
) -> pl.DataFrame:
    """The rising_latency host alerts (host_alerts schema) of the root rows of good traces
    (`good_root_latencies`); see the module docstring for what earns one."""
    out_schema = polars_schema("host_alerts")
    roots = roots.filter(pl.col("latency_ns") > 0)
    if roots.is_empty():
        return pl.DataFrame(schema=out_schema)
    op = ["probe", "arg"]  # modify_qp's transitions are different operations with different costs
    # (an operation without an argument joins as "": a null never equals itself in a join)
    # (the keys as categoricals: the group-bys and joins below run on their codes, ~2x less CPU
    # than on the strings of a 2,000-host day's 280,000 rows)
    roots = roots.with_columns(pl.col("arg").fill_null(""), pl.col("start_time").dt.truncate(_REFERENCE_BUCKET).alias("_hour"),
                               pl.col("latency_ns").cast(pl.Float64).log().alias("_log"))
    roots = roots.with_columns(pl.col("host", *op).cast(pl.Categorical))
    # the fleet's level per operation and hour: the median of the hosts' medians (one busy host
    # with many traces weighs as one host), where enough hosts were timed
    host_hour = roots.group_by("host", *op, "_hour").agg(pl.col("_log").median().alias("_host_med"))
    reference = (host_hour.group_by(*op, "_hour")
                 .agg(pl.col("_host_med").median().alias("_fleet"), pl.len().alias("_peers"))
                 .filter(pl.col("_peers") >= min_peer_hosts))
    host_hour = host_hour.join(reference, on=[*op, "_hour"]).with_columns(
        (pl.col("_host_med") - pl.col("_fleet")).alias("_rel"))
    # candidates: series with some hour at min_ratio over both the fleet and the host's own
    # typical level, and enough traces for two periods (everything else is never split)
    log_ratio = math.log(min_ratio)
    counts = roots.group_by("host", *op).agg(pl.len().alias("_n"))
    candidates = (host_hour.group_by("host", *op)
                  .agg((pl.col("_rel").max() - pl.col("_rel").min()).alias("_span"), pl.col("_rel").max().alias("_top"))
                  .filter((pl.col("_span") >= log_ratio) & (pl.col("_top") >= log_ratio))
                  .join(counts.filter(pl.col("_n") >= 2 * min_traces), on=["host", *op]))
    if candidates.is_empty():
        return pl.DataFrame(schema=out_schema)
    series = (roots.join(candidates.select("host", *op), on=["host", *op], how="semi")
              .join(reference.select(*op, "_hour", "_fleet"), on=[*op, "_hour"])
              .with_columns((pl.col("_log") - pl.col("_fleet")).alias("_rel"),
                            pl.col("start_time").dt.truncate(_SLOT).to_physical().alias("_slot"))
              .sort("host", *op, "start_time"))
    # one numpy slice per series (a polars group-by iteration costs ~1 ms a group, and a
    # healthy 2,000-host day has a few hundred candidates: hosts timed in few jobs an hour)
    keys = series.group_by("host", *op, maintain_order=True).agg(pl.len().alias("_n"))
    series = series.with_columns(pl.col("start_time").to_physical().alias("_start"))
    arrays = {name: series[name].to_numpy() for name in ("_rel", "_slot", "_start", "latency_ns", "_fleet")}
    rows = []
    end = 0
    for host, probe, arg, n in keys.iter_rows():
        start, end = end, end + n
        alert = _change_point({name: a[start:end] for name, a in arrays.items()}, min_ratio, min_rise_ns,
                              min_traces, max_overlap, min_slots)
        if alert is not None:
            first = series.row(start + alert.pop("_split"), named=True)
            operation = f"{first['command'] or probe} {arg}".strip()
            rows.append({"host": host, "probe": probe, "since": first["start_time"],
                         "detail": f"{operation}: {alert.pop('_detail')}", **alert})
    if not rows:
        return pl.DataFrame(schema=out_schema)
    found = pl.DataFrame(rows)
    return found.select(
        pl.col("host"), pl.lit(ALERT).alias("alert"), pl.col("probe"), pl.lit(None, pl.String).alias("errno"),
        pl.col("since").cast(out_schema["since"]), pl.col("score").cast(pl.Float64), pl.col("detail"),
    ).sort(["score", "host"], descending=[True, False])


def _change_point(part: dict[str, np.ndarray], min_ratio: float, min_rise_ns: int, min_traces: int,
                  max_overlap: float, min_slots: int) -> dict | None:
    """The alert of one (host, operation) series sorted by time (numpy columns), or None: of the
    splits between two bursts (traces more than a minute apart: one job's ranks are never cut),
    the one with the largest rise of the median relative latency, then the guards."""
    rel, slots = part["_rel"], part["_slot"]
    n = rel.size
    best, split = -math.inf, -1
    starts = part["_start"]
    for k in np.flatnonzero(np.diff(starts) > _BURST_GAP_NS) + 1:
        if k < min_traces or n - k < min_traces:
            continue
        rise = _median(rel[k:]) - _median(rel[:k])
        if rise > best:
            best, split = rise, int(k)
    if split < 0 or best < math.log(min_ratio):
        return None
    before, after = rel[:split], rel[split:]
    mid = (np.median(before) + np.median(after)) / 2
    if np.mean(before > mid) > max_overlap or np.mean(after > mid) < 1 - max_overlap:
        return None
    if np.unique(slots[:split]).size < min_slots or np.unique(slots[split:]).size < min_slots:
        return None
    if np.median(rel[slots == slots[-1]]) <= mid:  # recovered by the end: a burst, not a state
        return None
    raw = part["latency_ns"]
    was, now = float(np.median(raw[:split])), float(np.median(raw[split:]))
    if now - was < min_rise_ns:
        return None
    fleet_now = float(np.exp(np.median(part["_fleet"][split:])))
    ratio = now / was
    return {
        "_split": split,
        "score": ratio,
        "_detail": (f"good traces' median latency {_ms(was)} -> {_ms(now)} ({ratio:.1f}x; "
                    f"{split} traces before, {n - split} since), other hosts' {_ms(fleet_now)} meanwhile"),
    }


def _median(values: np.ndarray) -> float:
    """np.median of a short float array without its generic machinery (~25 us a call, and a
    10,000-host day makes ~18,000 of them here): the same value, the middle of a sort (the mean
    of the two middle ones for an even count, as np.median takes it)."""
    ordered = np.sort(values)
    n = ordered.size
    return float((ordered[(n - 1) // 2] + ordered[n // 2]) / 2)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"

"""Turn a host's calls into the tracer's tables: events (emitted traces), counters, truth.

What the fleet tracer records, and so what is written here:
- a failure of a top-level probed call emits its whole probed call tree (every frame with its
  own return value), always;
- a success emits only when it is sampled inside a capture window (rate `good_rate`) and took
  less than 50 ms: a good trace;
- counters count every invocation of every probe per 5-second interval, emitted or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import polars as pl

from baseline.simulator import catalog as cat
from baseline.simulator.host import (
    GOOD_LATENCY_BOUND_NS,
    INTERVAL_NS,
    IS_FAILURE,
    NS,
    FleetPlan,
    HostProfile,
    HostResult,
    Job,
)
from tracer.schema import polars_schema

ERRNOS: list[str] = sorted({e for o in cat.OUTCOMES for _, _, e in o.frames if e})


@dataclass
class Flat:
    n_frames: np.ndarray  # per outcome
    first: np.ndarray  # per outcome: index of its first frame in the flat arrays
    probe: np.ndarray  # per flat frame: index into PROBE_KEYS
    depth: np.ndarray
    ret: np.ndarray
    errno: np.ndarray  # index into ERRNOS, -1 for success
    offset: np.ndarray
    latency: np.ndarray
    has_arg: np.ndarray  # frame carries the operation's path-selecting argument
    probe_names: list[str]
    probe_layers: list[str]
    truth: list[dict]


@lru_cache(maxsize=64)
def flat(platform: cat.Platform) -> Flat:
    resolved = cat.resolve(platform)
    n = np.array([len(r.probe_idx) for r in resolved], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(n)[:-1]])

    def cat_(attr):
        return np.concatenate([np.asarray(getattr(r, attr), dtype=np.int64) for r in resolved])

    errno = np.array([ERRNOS.index(e) if e else -1 for r in resolved for e in r.errno], dtype=np.int64)
    keys = [cat.PROBE_KEYS[i] for r in resolved for i in r.probe_idx]
    has_arg = np.array([k.startswith(("uv_", "drv_")) for k in keys])
    return Flat(
        n_frames=n, first=first, probe=cat_("probe_idx"), depth=cat_("depth"), ret=cat_("ret"),
        errno=errno, offset=cat_("offset_ns"), latency=cat_("latency_ns"), has_arg=has_arg,
        probe_names=[platform.probe_name(k) for k in cat.PROBE_KEYS],
        probe_layers=[cat.probe_layer(k) for k in cat.PROBE_KEYS],
        truth=[r.truth for r in resolved],
    )


COMMANDS = [cat.OPERATIONS[o.op][0] for o in cat.OUTCOMES]
ARGS = [cat.OPERATIONS[o.op][1] for o in cat.OUTCOMES]


def _ts(values: np.ndarray) -> pl.Series:
    return pl.Series(values.astype(np.int64)).cast(pl.Datetime("ns")).dt.replace_time_zone("UTC")


def job_frame(prof: HostProfile, jobs: list[Job]) -> pl.DataFrame:
    host_meta = [("vendor", prof.platform.vendor)]
    if prof.firmware:
        host_meta.append(("nic_fw", prof.firmware))
    rows = []
    for job in jobs:
        meta = dict(host_meta + [("image", job.image), ("team", job.team), ("restart", str(job.restart)),
                                 ("scheduler", "slurm")])
        rows.append({
            "job_id": job.job_id, "pid": job.pid, "comm": job.comm,
            "metadata": [{"key": k, "value": v} for k, v in sorted(meta.items())],
        })
    return pl.DataFrame(rows, schema={
        "job_id": pl.String, "pid": pl.Int32, "comm": pl.String,
        "metadata": pl.List(pl.Struct({"key": pl.String, "value": pl.String})),
    })


def build(
    prof: HostProfile, plan: FleetPlan, rng: np.random.Generator,
    t: np.ndarray, o: np.ndarray, j: np.ndarray, jobs: list[Job], unprobed: list[tuple[int, int]],
) -> HostResult:
    fl = flat(prof.platform)
    failure = IS_FAILURE[o]
    # latency scale per call: lognormal jitter with a slow tail; good traces must stay < 50 ms
    scale = rng.lognormal(0.0, 0.5, t.size)
    root_latency = (fl.latency[fl.first[o]] * scale).astype(np.int64)
    sampled = ~failure & (rng.random(t.size) < plan.good_rate) & (root_latency < GOOD_LATENCY_BOUND_NS)
    sel = np.flatnonzero(failure | sampled)
    jobs_df = job_frame(prof, jobs)

    # ---------------- events
    os_, nfr = o[sel], fl.n_frames[o[sel]]
    rep = np.repeat(np.arange(sel.size), nfr)
    starts = np.cumsum(nfr) - nfr
    seq = np.arange(rep.size) - starts[rep]
    fi = fl.first[os_][rep] + seq
    mono0 = t[sel] - prof.boot_ns
    sc = scale[sel]
    ts_ns = mono0[rep] + (fl.offset[fi] * sc[rep]).astype(np.int64)
    lat = (fl.latency[fi] * sc[rep]).astype(np.int64)
    trace_no = np.arange(sel.size)
    jsel = j[sel]
    tid = jobs_df["pid"].to_numpy()[jsel] + rng.integers(1, 64, sel.size)
    host = prof.name
    probe_names = pl.Series(fl.probe_names, dtype=pl.String)
    layer_names = pl.Series(fl.probe_layers, dtype=pl.String)
    errnos = pl.Series([*ERRNOS, None], dtype=pl.String)
    commands = pl.Series(COMMANDS, dtype=pl.String)
    args = pl.Series(ARGS, dtype=pl.String)
    kinds = pl.Series(["good", "failure"], dtype=pl.String)
    root_ret = fl.ret[fl.first[os_]]
    trace = pl.DataFrame({
        "trace_no": trace_no,
        "kind": kinds.gather(failure[sel].astype(np.int64)),
        "command": commands.gather(os_.astype(np.int64)),
        "exit_status": np.clip(root_ret, -(2**31), 2**31 - 1).astype(np.int32),
        "start_time": _ts(t[sel]),
        "end_time": _ts(t[sel] + root_latency[sel]),
        "tid": tid.astype(np.int32),
    }).with_columns(
        jobs_df.select(
            pl.col("pid"), pl.col("comm"), pl.col("job_id"), pl.col("metadata"),
        )[jsel]
    )
    events = pl.DataFrame({
        "trace_no": trace_no[rep],
        "seq": seq.astype(np.int64),
        "ts_ns": ts_ns,
        "probe": probe_names.gather(fl.probe[fi]),
        "layer": layer_names.gather(fl.probe[fi]),
        "depth": fl.depth[fi].astype(np.int16),
        "ret": fl.ret[fi],
        "errno": errnos.gather(np.where(fl.errno[fi] < 0, len(ERRNOS), fl.errno[fi])),
        "latency_ns": lat,
        "arg": _gather_nullable(args, np.where(fl.has_arg[fi], os_[rep], -1)),
    })
    events = events.join(trace, on="trace_no", how="left", maintain_order="left").with_columns(
        trace_id=pl.lit(f"{host}:") + pl.col("trace_no").cast(pl.String),
        host=pl.lit(host),
        kernel_release=pl.lit(prof.platform.kernel_release),
        lost_events=pl.lit(0, dtype=pl.Int64),
        ppid=pl.lit(1, dtype=pl.Int32),
        path=pl.lit(None, dtype=pl.String),
    ).select(polars_schema("events").names())

    # ---------------- truth
    truth_rows = _truth_frame(fl, os_, failure[sel], t[sel], host, rng, plan.held_out_fraction)
    if unprobed:
        f = cat.UNPROBED_CLEANUP
        extra = pl.DataFrame({
            "trace_id": [f"{host}:unobserved-{k}" for k in range(len(unprobed))],
            "host": host, "kind": "failure", "root_cause": f["root_cause"],
            "bifurcation_probe": f["bifurcation_probe"], "bifurcation_errno": f["bifurcation_errno"],
            "origin_layer": f["origin_layer"], "expected_error": False, "held_out": False,
            "time": _ts(np.array([tt for tt, _ in unprobed], dtype=np.int64)),
        })
        truth_rows = pl.concat([truth_rows, extra.select(truth_rows.columns)], how="vertical_relaxed")

    # ---------------- counters
    counters = _counters(prof, plan, fl, t, o)
    n_fail = int(failure.sum())
    return HostResult(
        host=host, events=events, counters=counters, truth=truth_rows,
        successes=int((~failure).sum()), success_frames=int(fl.n_frames[o[~failure]].sum()),
        stats={"calls": int(t.size), "failures": n_fail, "good": int(sampled.sum()), "jobs": len(jobs)},
    )


def _gather_nullable(values: pl.Series, idx: np.ndarray) -> pl.Series:
    full = pl.concat([values, pl.Series([None], dtype=values.dtype)])
    return full.gather(np.where(idx < 0, len(values), idx))


def _truth_frame(fl: Flat, os_: np.ndarray, failure: np.ndarray, start: np.ndarray, host: str,
                 rng: np.random.Generator, held_out_fraction: float) -> pl.DataFrame:
    truth_by_outcome = pl.DataFrame(fl.truth, schema={
        "root_cause": pl.String, "bifurcation_probe": pl.String, "bifurcation_errno": pl.String,
        "origin_layer": pl.String, "expected_error": pl.Boolean,
    })
    n = start.size
    held = ~failure & (rng.random(n) < held_out_fraction)
    return truth_by_outcome[os_.astype(np.int64)].with_columns(
        trace_id=pl.lit(f"{host}:") + pl.Series(np.arange(n)).cast(pl.String),
        host=pl.lit(host),
        kind=pl.Series(np.where(failure, "failure", "good")),
        held_out=pl.Series(held),
        time=_ts(start),
    )


def _counters(prof: HostProfile, plan: FleetPlan, fl: Flat, t: np.ndarray, o: np.ndarray) -> pl.DataFrame:
    n_out = len(cat.OUTCOMES)
    interval = (t - plan.start_ns) // INTERVAL_NS
    keys, counts = np.unique(interval * n_out + o, return_counts=True)
    iv, oc = keys // n_out, keys % n_out
    nfr = fl.n_frames[oc]
    rep = np.repeat(np.arange(keys.size), nfr)
    fi = fl.first[oc][rep] + (np.arange(rep.size) - (np.cumsum(nfr) - nfr)[rep])
    long = pl.DataFrame({
        "interval": iv[rep], "probe_i": fl.probe[fi], "errno_i": fl.errno[fi], "count": counts[rep],
    })
    per_errno = long.group_by(["interval", "probe_i", "errno_i"]).agg(pl.col("count").sum())
    errnos = pl.Series(ERRNOS + [None], dtype=pl.String)
    per_errno = per_errno.with_columns(
        errno=errnos.gather(pl.Series(np.where(per_errno["errno_i"].to_numpy() < 0, len(ERRNOS), per_errno["errno_i"].to_numpy()))),
    )
    agg = per_errno.sort(["interval", "probe_i", "errno"]).group_by(["interval", "probe_i"], maintain_order=True).agg(
        invocations=pl.col("count").sum(),
        failures=pl.col("count").filter(pl.col("errno").is_not_null()).sum(),
        errno_counts=pl.struct(pl.col("errno"), pl.col("count")).filter(pl.col("errno").is_not_null()),
    )
    # the first snapshot lists every probe of the set (with its live flag), even idle ones
    first_iv = 0
    all_probes = pl.DataFrame({
        "interval": np.full(len(cat.PROBE_KEYS), first_iv, dtype=np.int64),
        "probe_i": np.arange(len(cat.PROBE_KEYS), dtype=np.int64),
    })
    agg = all_probes.join(agg, on=["interval", "probe_i"], how="full", coalesce=True).with_columns(
        pl.col("invocations").fill_null(0), pl.col("failures").fill_null(0),
        pl.col("errno_counts").fill_null([]),
    ).sort(["interval", "probe_i"])
    live = np.array([prof.platform.live(k) for k in cat.PROBE_KEYS])
    pi = agg["probe_i"].to_numpy()
    return agg.with_columns(
        host=pl.lit(prof.name),
        snapshot_time=_ts(plan.start_ns + (agg["interval"].to_numpy() + 1) * INTERVAL_NS),
        interval_s=pl.lit(INTERVAL_NS / NS),
        kernel_release=pl.lit(prof.platform.kernel_release),
        vendor=pl.lit(prof.platform.vendor),
        probe_set=pl.lit(cat.PROBE_SET),
        probe=pl.Series(fl.probe_names).gather(pi),
        layer=pl.Series(fl.probe_layers).gather(pi),
        live=pl.Series(live[pi]),
        lost_records=pl.lit(0, dtype=pl.Int64),
    ).select(polars_schema("counters").names())

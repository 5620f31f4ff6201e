"""Fleet generator 53 (written blind: README, docs, `--help`, tracer/schema.py and the RDMA
reference only): alert precision under diurnal load. It writes a *spool* as `tracer run -i 15m`
would leave it, ``<spool>/<host>/snap-<YYYYmmddTHHMMSS.fffZ>-<seq>/{events,counters}.parquet``,
so the tests go through `baseline ingest` before learn/audit/evaluate.

Fleet: 24 mlx5 hosts (OFED, nvidia-peermem), 2026-12-07 12:00 to 2026-12-08 12:00 UTC, one
snapshot per 15 minutes (closing on the quarter hours, so a snapshot is one 15-minute bucket).

Load: job launches per host are a Poisson stream whose rate follows the day: 3 an hour at 03:00,
30 an hour at 15:00 (a cosine between). At 00:00 a batch burst: every host launches 20 jobs in
the first two minutes of the day. A job (one process, comm ``python3``) runs:
  query_gid index 0, query_gid index 1, alloc_pd, reg_mr x2 on host memory, reg_mr on GPU
  memory, create_qp x2 (each retried until it succeeds), query_gid index 0.
A job that dies is requeued by the scheduler 60 s later, up to 3 times.

Routine errors (truth expected_error, never alarm):
  * query_gid index 1 -> rdma_get_gid_attr ENODATA (an empty GID slot; every job: its count
    follows the load, its rate per call is flat). The job scans on.
  * reg_mr of GPU memory: pin_user_pages_fast EFAULT, then ib_peer_umem_get succeeds (the root
    succeeds: absorbed; every job).
  * create_qp contention: the CREATE_QP firmware command answers NO_RES -> EAGAIN
    (reference: cmd_status_to_err) up through the create_qp chain; the job retries the call and
    it succeeds. Its rate per call depends on the host's load (0.15 % per launch/hour, so ~0.5 %
    at night, ~4.5 % by day, 30 % in the midnight burst): still routine.

The two faults (truth root_cause):
  * ``memlock_leak_reg_mr_enomem`` on LEAK_HOST: from 05:00 (day 2) a pinned-memory leak makes
    host-memory reg_mr fail ENOMEM at __ib_umem_get (pinned_vm over RLIMIT_MEMLOCK), up through
    mlx5_ib_reg_user_mr and ib_uverbs_reg_mr; the chance per registration grows linearly from 0
    to 30 % at 11:00 and stays there. The job dies. Never "most of the calls": a rising rate.
  * ``fw_create_qp_timeout`` on OUTAGE_HOST: 15:05-15:25 (day 1, peak load) every CREATE_QP firmware command
    times out (mlx5_cmd_exec ETIMEDOUT, transport-level, reference), ETIMEDOUT up through every
    create_qp layer; the job dies (and is requeued into the outage).
Capture windows: the first 5 minutes of every quarter hour: every tree of a job starting inside
is emitted with per-frame latency (successful ones as kind ``good``); outside, only trees with an
error frame (kind ``failure``), latency null. Per snapshot and signature the first 8 trees are
emitted one by one, the rest aggregated into one example with ``repeat_count`` (the kernel's
in-interval aggregation); that matters in the midnight burst only.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from tracer import schema

SEED = 53
T0 = dt.datetime(2026, 12, 7, 12, 0, tzinfo=dt.UTC)
END = T0 + dt.timedelta(hours=24)
MIDNIGHT = dt.datetime(2026, 12, 8, 0, 0, tzinfo=dt.UTC)
INTERVAL = dt.timedelta(minutes=15)
RELEASE = "5.15.0-1071-nvidia"
HOSTS = [f"gpu{i:02d}" for i in range(24)]
LEAK_HOST, OUTAGE_HOST = "gpu07", "gpu16"

LEAK_CAUSE = "memlock_leak_reg_mr_enomem"
LEAK_START = dt.datetime(2026, 12, 8, 5, 0, tzinfo=dt.UTC)
LEAK_FULL = LEAK_START + dt.timedelta(hours=6)
LEAK_PEAK = 0.30
OUTAGE_CAUSE = "fw_create_qp_timeout"
OUTAGE_START = dt.datetime(2026, 12, 7, 15, 5, tzinfo=dt.UTC)
OUTAGE_END = OUTAGE_START + dt.timedelta(minutes=20)

NIGHT_RATE, DAY_RATE = 3.0, 30.0  # launches per host-hour at 03:00 and 15:00
BURST_JOBS, BURST_SPAN = 20, 120.0  # per host, seconds
EAGAIN_PER_RATE = 0.0015
REQUEUE_AFTER, MAX_REQUEUES = 60.0, 3
CALL_GAP = 0.03  # s between a job's calls
K_PER_SIGNATURE = 8
COMM = "python3"

GID_H, GID_CORE = "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "rdma_get_gid_attr"
LAYER = {
    GID_H: "uverbs", GID_CORE: "core",
    "ib_uverbs_alloc_pd": "uverbs", "mlx5_ib_alloc_pd": "driver", "mlx5_cmd_exec": "driver",
    "ib_uverbs_reg_mr": "uverbs", "mlx5_ib_reg_user_mr": "driver", "__ib_umem_get": "core",
    "pin_user_pages_fast": "core", "ib_peer_umem_get": "peer-mem",
    "ib_uverbs_create_qp": "uverbs", "ib_create_qp_user": "core", "mlx5_ib_create_qp": "driver",
    "mlx5_qpc_create_qp": "driver",
}
PROBES = tuple(LAYER)
ERRNO_NUM = {"ENODATA": 61, "EFAULT": 14, "EAGAIN": 11, "ENOMEM": 12, "ETIMEDOUT": 110}
REG_MR_PROBES = ("ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "__ib_umem_get")
CREATE_QP_PROBES = ("ib_uverbs_create_qp", "ib_create_qp_user", "mlx5_ib_create_qp", "mlx5_qpc_create_qp",
                    "mlx5_cmd_exec")
ROUTINE = {("query_gid", GID_CORE, "ENODATA"), ("reg_mr", "pin_user_pages_fast", "EFAULT"),
           ("create_qp", "mlx5_cmd_exec", "EAGAIN")}

# (probe, depth, errno, latency share) per frame; latency of the root in microseconds per op
ROOT_US = {"query_gid": 15, "alloc_pd": 120, "reg_mr": 400, "create_qp": 600}


def _frames(kind: str, errno: str | None = None) -> list[tuple[str, int, str | None]]:
    if kind == "gid_ok":
        return [(GID_H, 0, None), (GID_CORE, 1, None)]
    if kind == "gid_empty":
        return [(GID_H, 0, "ENODATA"), (GID_CORE, 1, "ENODATA")]
    if kind == "alloc_pd":
        return [("ib_uverbs_alloc_pd", 0, None), ("mlx5_ib_alloc_pd", 1, None), ("mlx5_cmd_exec", 2, None)]
    if kind == "mr_host":
        return [("ib_uverbs_reg_mr", 0, None), ("mlx5_ib_reg_user_mr", 1, None), ("__ib_umem_get", 2, None),
                ("pin_user_pages_fast", 3, None)]
    if kind == "mr_host_enomem":
        return [("ib_uverbs_reg_mr", 0, "ENOMEM"), ("mlx5_ib_reg_user_mr", 1, "ENOMEM"),
                ("__ib_umem_get", 2, "ENOMEM")]
    if kind == "mr_gpu":
        return [("ib_uverbs_reg_mr", 0, None), ("mlx5_ib_reg_user_mr", 1, None), ("__ib_umem_get", 2, None),
                ("pin_user_pages_fast", 3, "EFAULT"), ("ib_peer_umem_get", 3, None)]
    if kind == "qp":
        return [(p, d, errno) for d, p in enumerate(CREATE_QP_PROBES)]
    raise ValueError(kind)


OP_OF = {"gid_ok": "query_gid", "gid_empty": "query_gid", "alloc_pd": "alloc_pd", "mr_host": "reg_mr",
         "mr_host_enomem": "reg_mr", "mr_gpu": "reg_mr", "qp": "create_qp"}
ARG_OF = {"gid_ok": "index=0", "gid_empty": "index=1", "mr_host": "host", "mr_host_enomem": "host",
          "mr_gpu": "gpu"}


@dataclass
class TraceInfo:
    trace_id: str
    host: str
    op: str
    time: dt.datetime
    kind: str
    cause: str | None
    expected: bool
    bif_probe: str | None
    bif_errno: str | None
    origin_layer: str | None
    repeat: int = 1
    rows: tuple[int, int] = (0, 0)  # its frame rows in its snapshot's events


def rate(t: dt.datetime) -> float:
    """Launches per host-hour at t (the day/night cycle: minimum 03:00, maximum 15:00 UTC)."""
    h = t.hour + t.minute / 60 + t.second / 3600
    return NIGHT_RATE + (DAY_RATE - NIGHT_RATE) * (1 - math.cos(2 * math.pi * (h - 3) / 24)) / 2


def load(t: dt.datetime) -> float:
    """A host's load in launches/hour, the midnight burst included."""
    if MIDNIGHT <= t < MIDNIGHT + dt.timedelta(seconds=BURST_SPAN):
        return BURST_JOBS * 3600 / BURST_SPAN
    return rate(t)


def leak_p(host: str, t: dt.datetime) -> float:
    if host != LEAK_HOST or t < LEAK_START:
        return 0.0
    return LEAK_PEAK * min(1.0, (t - LEAK_START) / (LEAK_FULL - LEAK_START))


def in_outage(host: str, t: dt.datetime) -> bool:
    return host == OUTAGE_HOST and OUTAGE_START <= t < OUTAGE_END


def in_window(t: dt.datetime) -> bool:
    return (t - T0).total_seconds() % 900 < 300


def launches(rng: random.Random) -> list[dt.datetime]:
    """Job launch times of one host: a thinned Poisson stream at rate(t), plus the midnight burst."""
    out = []
    t = T0
    while True:
        t += dt.timedelta(seconds=rng.expovariate(DAY_RATE / 3600))
        if t >= END:
            break
        if rng.random() < rate(t) / DAY_RATE:
            out.append(t)
    out += [MIDNIGHT + dt.timedelta(seconds=rng.uniform(0, BURST_SPAN)) for _ in range(BURST_JOBS)]
    return sorted(out)


def run_job(host: str, start: dt.datetime, rng: random.Random) -> tuple[list[tuple[dt.datetime, str, list]], bool]:
    """(time, kind, frames) of each call of one job, and whether the job died."""
    calls = []
    t = start

    def call(kind: str, errno: str | None = None) -> None:
        nonlocal t
        calls.append((t, kind, _frames(kind, errno)))
        t += dt.timedelta(seconds=CALL_GAP)

    call("gid_ok")
    call("gid_empty")
    call("alloc_pd")
    for _ in range(2):
        if rng.random() < leak_p(host, t):
            call("mr_host_enomem")
            return calls, True
        call("mr_host")
    call("mr_gpu")
    for _ in range(2):
        while True:
            if in_outage(host, t):
                call("qp", "ETIMEDOUT")
                t += dt.timedelta(seconds=60)  # the firmware command's timeout
                return calls, True
            if rng.random() < min(0.3, EAGAIN_PER_RATE * load(t)):
                call("qp", "EAGAIN")  # NO_RES: retried
                continue
            call("qp")
            break
    call("gid_ok")
    return calls, False


def _bifurcation(kind: str, frames: list) -> tuple[str | None, bool, tuple]:
    """(cause, expected, (probe, errno, layer)) of a tree per the scenario."""
    errs = [f for f in frames if f[2]]
    if not errs:
        return None, False, (None, None, None)
    if kind == "mr_host_enomem":
        return LEAK_CAUSE, False, ("__ib_umem_get", "ENOMEM", "core")
    if kind == "qp" and frames[-1][2] == "ETIMEDOUT":
        return OUTAGE_CAUSE, False, ("mlx5_cmd_exec", "ETIMEDOUT", "driver")
    deepest = max(errs, key=lambda f: f[1])
    return None, True, (deepest[0], deepest[2], LAYER[deepest[0]])


def snapshot_closes() -> list[dt.datetime]:
    out, t = [], T0 + INTERVAL
    while t <= END:
        out.append(t)
        t += INTERVAL
    return out


def _snap_index(t: dt.datetime) -> int:
    return int((t - T0) // INTERVAL)


def _name(close: dt.datetime, seq: int) -> str:
    return f"snap-{close.strftime('%Y%m%dT%H%M%S')}.{close.microsecond // 1000:03d}Z-{seq}"


def generate(root: str | Path) -> dict:
    """Write the spool under root/spool; returns traces (TraceInfo), per-host jobs and deaths,
    per host and probe the counted calls and errno counts, and the spool path."""
    root = Path(root)
    spool = root / "spool"
    rng = random.Random(SEED)
    closes = snapshot_closes()
    traces: list[TraceInfo] = []
    counted: dict[tuple[str, str], list] = defaultdict(lambda: [0, defaultdict(int)])
    jobs_of: dict[str, int] = {}
    deaths: dict[str, list[tuple[dt.datetime, str]]] = defaultdict(list)
    for hi, host in enumerate(HOSTS):
        boot = T0 - dt.timedelta(days=3, minutes=7 * hi)
        counts = [defaultdict(lambda: [0, 0, defaultdict(int)]) for _ in closes]
        rows = [defaultdict(list) for _ in closes]
        emitted = [defaultdict(list) for _ in closes]  # signature -> [TraceInfo] this snapshot
        queue = [(t, 0) for t in launches(rng)]
        queue.sort()
        jn = 0
        n_rec = 0
        while queue:
            start, tries = queue.pop(0)
            if start >= END:
                continue
            jn += 1
            pid = 20_000 + 3 * jn
            job = f"{host}-{jn:05d}"
            timed = in_window(start)
            calls, died = run_job(host, start, rng)
            if died:
                deaths[host].append((start, calls[-1][1]))
                if tries < MAX_REQUEUES:
                    again = calls[-1][0] + dt.timedelta(seconds=REQUEUE_AFTER)
                    queue.append((again, tries + 1))
                    queue.sort()
            for t, kind, frames in calls:
                if t >= END:
                    break
                si = _snap_index(t)
                for probe, _d, errno in frames:
                    cell = counts[si][probe]
                    cell[0] += 1
                    counted[(host, probe)][0] += 1
                    if errno:
                        cell[1] += 1
                        cell[2][errno] += 1
                        counted[(host, probe)][1][errno] += 1
                has_err = any(f[2] for f in frames)
                if not has_err and not timed:
                    continue
                op = OP_OF[kind]
                cause, expected, bif = _bifurcation(kind, frames)
                signature = (op, tuple(frames), timed)
                same = emitted[si][signature]
                if not timed and len(same) > K_PER_SIGNATURE:
                    last = same[-1]  # aggregated in the kernel into the last example
                    last.repeat += 1
                    for row in range(*last.rows):
                        rows[si]["repeat_count"][row] = last.repeat
                    continue
                n_rec += 1
                trace_id = f"{host}:b1:{pid}:{n_rec}"
                info = TraceInfo(trace_id, host, op, t, "failure" if has_err else "good", cause, expected, *bif)
                mono = int((t - boot).total_seconds() * 1e9)
                root_us = ROOT_US[op] * rng.lognormvariate(0, 0.15)
                if kind == "qp" and frames[-1][2] == "ETIMEDOUT":
                    root_us = 60e6
                r = rows[si]
                first_row = len(r["trace_id"])
                for k, (probe, depth, errno) in enumerate(frames):
                    r["trace_id"].append(trace_id)
                    r["seq"].append(k)
                    r["ts_ns"].append(mono + (k * 2000 if timed else 0))
                    r["pid"].append(pid)
                    r["tid"].append(pid)
                    r["ppid"].append(1500 + hi)
                    r["comm"].append(COMM)
                    r["probe"].append(probe)
                    r["layer"].append(LAYER[probe])
                    r["depth"].append(depth)
                    r["ret"].append(-ERRNO_NUM[errno] if errno else 0)
                    r["errno"].append(errno)
                    r["latency_ns"].append(int(root_us * 1000 * (0.9 ** depth)) if timed else None)
                    r["path"].append(None)
                    r["arg"].append(ARG_OF.get(kind))
                    r["path2"].append(None)
                    r["output"].append(None)
                    r["kind"].append(info.kind)
                    r["command"].append(op)
                    r["exit_status"].append(-ERRNO_NUM[frames[0][2]] if frames[0][2] else 0)
                    r["start_time"].append(t)
                    r["end_time"].append(t + dt.timedelta(microseconds=root_us) if timed else t)
                    r["host"].append(host)
                    r["kernel_release"].append(RELEASE)
                    r["lost_events"].append(0)
                    r["job_id"].append(job)
                    r["metadata"].append([{"key": "gpu_driver", "value": "550.90.07"},
                                          {"key": "ofed", "value": "24.07"}])
                    r["repeat_count"].append(None)
                info.rows = (first_row, len(r["trace_id"]))
                same.append(info)
                traces.append(info)
        jobs_of[host] = jn

        hdir = spool / host
        for seq, close in enumerate(closes):
            d = hdir / _name(close, seq)
            d.mkdir(parents=True)
            c = defaultdict(list)
            for p in PROBES:
                calls_n, fails, errs = counts[seq].get(p, (0, 0, {}))
                c["host"].append(host)
                c["snapshot_time"].append(close)
                c["interval_s"].append(INTERVAL.total_seconds())
                c["kernel_release"].append(RELEASE)
                c["vendor"].append("mlx5")
                c["probe_set"].append("rdma")
                c["probe"].append(p)
                c["layer"].append(LAYER[p])
                c["live"].append(True)
                c["invocations"].append(calls_n)
                c["failures"].append(fails)
                c["errno_counts"].append([{"errno": e, "count": v} for e, v in sorted(errs.items()) if v])
                c["lost_records"].append(0)
            schema.write_table(pa.table(dict(c), schema=schema.COUNTERS), d / "counters.parquet", "counters",
                               durable=False)
            ev = pa.table(dict(rows[seq]), schema=schema.EVENTS) if rows[seq] else schema.EVENTS.empty_table()
            schema.write_table(ev, d / "events.parquet", "events", durable=False)
    return {"spool": spool, "traces": traces, "counted": counted, "jobs": jobs_of, "deaths": deaths}


def truth_table(traces: list[TraceInfo]) -> pa.Table:
    return pa.table({
        "trace_id": [t.trace_id for t in traces],
        "host": [t.host for t in traces],
        "kind": [t.kind for t in traces],
        "root_cause": [t.cause for t in traces],
        "bifurcation_probe": [t.bif_probe for t in traces],
        "bifurcation_errno": [t.bif_errno for t in traces],
        "origin_layer": [t.origin_layer for t in traces],
        "expected_error": [t.expected for t in traces],
        "held_out": [False for _ in traces],
    }, schema=schema.TRUTH)


def write_truth(dataset: str | Path, traces: list[TraceInfo]) -> None:
    """The truth table beside the ingested data, laid out as the simulator's (truth/date=/host=)."""
    parts: dict[tuple[str, str], list[TraceInfo]] = defaultdict(list)
    for t in traces:
        parts[(t.host, t.time.strftime("%Y-%m-%d"))].append(t)
    for (host, date), ts in sorted(parts.items()):
        schema.write_partition(truth_table(ts), dataset, "truth", date, host, "part-0000.parquet", durable=False)

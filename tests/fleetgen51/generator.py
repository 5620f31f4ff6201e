"""Fleet generator 51 (written blind: README, docs, `--help`, tracer/schema.py and the RDMA
reference only). It writes a *spool* as `tracer run -i 1m` would leave it,
``<spool>/<host>/snap-<YYYYmmddTHHMMSS.fffZ>-<seq>/{events,counters}.parquet``, so the tests go
through `baseline ingest` before learn/audit/evaluate.

Fleet: 16 mlx5 hosts (OFED, nvidia-peermem loaded), 06:00-09:00 UTC on 2026-12-03, 60 s
snapshots. Every host runs a job (one process, comm ``python3``) every 3 minutes:
  query_gid index 0, query_gid index 1, alloc_pd, reg_mr x3 on host memory, reg_mr x2 on GPU
  memory, alloc_pd, query_gid index 0 (the job goes on after its registrations).

Routine errors on every host (truth: expected_error, never alarm):
  * query_gid index 1: ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY -> rdma_get_gid_attr
    ENODATA ("empty GID slot", reference operations.query_gid); the job scans on.
  * reg_mr of GPU memory: OFED's __ib_umem_get -> pin_user_pages_fast EFAULT (device memory is
    not GUP-able), then ib_peer_umem_get succeeds (nvidia-peermem claims the range); the root
    call succeeds (reference reg_mr tree: "OFED with a peer client then retries in
    ib_peer_umem_get").

The fault (truth root_cause ``peermem_get_pages_eio``): on h03, h09, h11 from about 07:45 the
peer client's get_pages fails: ib_uverbs_reg_mr -> mlx5_ib_reg_user_mr -> __ib_umem_get ->
[pin_user_pages_fast EFAULT, ib_peer_umem_get EIO], EIO up through every layer ("<peer
get_pages/dma_map errno>"). The job dies at its first GPU registration and is restarted a minute
later (a crash loop). Origin/bifurcation: ib_peer_umem_get EIO, layer peer-mem.

The daemon's life (the theme):
  * h02: the daemon crashes at 07:20:30 and is restarted at 07:21:00. The interval in progress is
    lost (calls 07:20:00-07:21:00 never counted, their trees never written); the new daemon's
    per-CPU counters start from zero, its snapshot sequence number continues from the highest in
    the spool (schema.SNAPSHOT_NAME's comment), and its trace ids carry a new boot component.
  * h05: the same at 07:50:30, but this host's counters pass through an exporter shipping
    cumulative counts as new - old, so the first snapshot after the restart carries negative
    deltas (docs: "a daemon restarted under an exporter that ships cumulative counts as new -
    old"; counted as 0, `schema.counted_delta`).
  * h09 (a fault host): a plain restart at 08:05:30, during its crash loop.
  * h06: missed an hour: its snapshots 07:30-08:30 were lost from the spool (a gap in time and
    in sequence numbers; nothing of that hour is in the data).
  * h13, h14: join the fleet at 07:10 (first snapshot then, seq from 0, jobs from then on).
  * h15: decommissioned at 07:40: its last snapshot closes then, nothing after.
  * h07 (healthy) and h11 (a fault host): one snapshot each delivered twice, copied under
    another (higher, free) sequence number with identical contents (same snapshot_time rows,
    same call trees).
Capture windows: the first 4 minutes of every quarter hour: every tree of a job starting inside
is emitted with per-frame latency (successful ones as kind ``good``); outside, only trees with
an error frame are emitted (kind ``failure``), latency null, ts = one tick.
"""

from __future__ import annotations

import bisect
import datetime as dt
import random
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from tracer import schema

T0 = dt.datetime(2026, 12, 3, 6, 0, tzinfo=dt.UTC)
END = T0 + dt.timedelta(hours=3)
DATE = "2026-12-03"
RELEASE = "5.15.0-1071-nvidia"
SEED = 51
INTERVAL = dt.timedelta(seconds=60)
JOB_EVERY = dt.timedelta(minutes=3)
CRASH_RESTART = dt.timedelta(minutes=1)
CALL_GAP = dt.timedelta(milliseconds=40)

HOSTS = [f"h{i:02d}" for i in range(16)]
FAULT_HOSTS = ("h03", "h09", "h11")
FAULT_ONSET = dt.datetime(2026, 12, 3, 7, 45, tzinfo=dt.UTC)
CAUSE = "peermem_get_pages_eio"
FAULT_PROBE, FAULT_ERRNO, FAULT_LAYER = "ib_peer_umem_get", "EIO", "peer-mem"
REG_MR_CHAIN = ("ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "__ib_umem_get", "ib_peer_umem_get")

# daemon restarts: host -> (crash time, restart time, exporter ships cumulative new - old)
RESTARTS = {
    "h02": (dt.datetime(2026, 12, 3, 7, 20, 30, tzinfo=dt.UTC), dt.datetime(2026, 12, 3, 7, 21, tzinfo=dt.UTC), False),
    "h05": (dt.datetime(2026, 12, 3, 7, 50, 30, tzinfo=dt.UTC), dt.datetime(2026, 12, 3, 7, 51, tzinfo=dt.UTC), True),
    "h09": (dt.datetime(2026, 12, 3, 8, 5, 30, tzinfo=dt.UTC), dt.datetime(2026, 12, 3, 8, 6, tzinfo=dt.UTC), False),
}
GAP = {"h06": (dt.datetime(2026, 12, 3, 7, 30, tzinfo=dt.UTC), dt.datetime(2026, 12, 3, 8, 30, tzinfo=dt.UTC))}
JOINS = {"h13": dt.datetime(2026, 12, 3, 7, 10, tzinfo=dt.UTC), "h14": dt.datetime(2026, 12, 3, 7, 10, tzinfo=dt.UTC)}
LEAVES = {"h15": dt.datetime(2026, 12, 3, 7, 40, tzinfo=dt.UTC)}
DUPLICATED = {"h07": dt.datetime(2026, 12, 3, 6, 31, tzinfo=dt.UTC), "h11": dt.datetime(2026, 12, 3, 8, 16, tzinfo=dt.UTC)}

LAYER = {
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs", "rdma_get_gid_attr": "core",
    "ib_uverbs_alloc_pd": "uverbs", "mlx5_ib_alloc_pd": "driver", "mlx5_cmd_exec": "driver",
    "ib_uverbs_reg_mr": "uverbs", "mlx5_ib_reg_user_mr": "driver", "__ib_umem_get": "core",
    "pin_user_pages_fast": "core", "ib_peer_umem_get": "peer-mem",
}
PROBES = tuple(LAYER)
ERRNO_NUM = {"ENODATA": 61, "EFAULT": 14, "EIO": 5}


@dataclass
class Frame:
    probe: str
    depth: int
    errno: str | None = None

    @property
    def ret(self) -> int:
        return -ERRNO_NUM[self.errno] if self.errno else 0


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


@dataclass
class HostTruth:
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # counted as readers count
    errnos: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    snapshots: list[str] = field(default_factory=list)
    first: dt.datetime | None = None
    last: dt.datetime | None = None


def job_calls(fault: bool) -> list[tuple[str, str, list[Frame], bool]]:
    """(operation, arg, frames, process goes on after it) of one job, in order."""
    gid = "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"
    calls = [
        ("query_gid", "index=0", [Frame(gid, 0), Frame("rdma_get_gid_attr", 1)], True),
        ("query_gid", "index=1", [Frame(gid, 0, "ENODATA"), Frame("rdma_get_gid_attr", 1, "ENODATA")], True),
        ("alloc_pd", "", [Frame("ib_uverbs_alloc_pd", 0), Frame("mlx5_ib_alloc_pd", 1), Frame("mlx5_cmd_exec", 2)], True),
    ]
    host_mr = [Frame("ib_uverbs_reg_mr", 0), Frame("mlx5_ib_reg_user_mr", 1), Frame("__ib_umem_get", 2),
               Frame("pin_user_pages_fast", 3)]
    calls += [("reg_mr", "host", [Frame(f.probe, f.depth) for f in host_mr], True) for _ in range(3)]
    gpu_ok = [Frame("ib_uverbs_reg_mr", 0), Frame("mlx5_ib_reg_user_mr", 1), Frame("__ib_umem_get", 2),
              Frame("pin_user_pages_fast", 3, "EFAULT"), Frame("ib_peer_umem_get", 3)]
    if not fault:
        calls += [("reg_mr", "gpu", [Frame(f.probe, f.depth, f.errno) for f in gpu_ok], True) for _ in range(2)]
        # the job goes on: a second PD for its second communicator, a port's GID read again
        calls.append(("alloc_pd", "", [Frame("ib_uverbs_alloc_pd", 0), Frame("mlx5_ib_alloc_pd", 1),
                                       Frame("mlx5_cmd_exec", 2)], True))
        calls.append(("query_gid", "index=0", [Frame(gid, 0), Frame("rdma_get_gid_attr", 1)], True))
    else:
        bad = [Frame("ib_uverbs_reg_mr", 0, "EIO"), Frame("mlx5_ib_reg_user_mr", 1, "EIO"),
               Frame("__ib_umem_get", 2, "EIO"), Frame("pin_user_pages_fast", 3, "EFAULT"),
               Frame("ib_peer_umem_get", 3, "EIO")]
        calls.append(("reg_mr", "gpu", bad, False))
    return calls


def in_window(t: dt.datetime) -> bool:
    return (t - T0).total_seconds() % 900 < 240


def host_start(host: str) -> dt.datetime:
    return JOINS.get(host, T0)


def host_end(host: str) -> dt.datetime:
    return LEAVES.get(host, END)


def schedule(host: str, rng: random.Random) -> list[tuple[dt.datetime, bool]]:
    """(job start, faulty) for a host: a job every 3 minutes; after the fault's onset on a fault
    host, a crash loop (a restart a minute after each death)."""
    hi = HOSTS.index(host)
    t = host_start(host) + dt.timedelta(seconds=7 + 9 * hi + rng.random())
    onset = FAULT_ONSET + dt.timedelta(seconds=hi) if host in FAULT_HOSTS else None
    out = []
    end = host_end(host) - dt.timedelta(seconds=5)
    while t < end:
        fault = onset is not None and t >= onset
        out.append((t, fault))
        t += (CRASH_RESTART if fault else JOB_EVERY) + dt.timedelta(milliseconds=rng.randint(0, 900))
    return out


def snapshot_closes(host: str) -> list[tuple[int, dt.datetime, dt.datetime]]:
    """(daemon instance, interval start, interval close) of every snapshot the host's daemons
    wrote (a lost hour included: those are removed from the spool afterwards)."""
    start, end = host_start(host), host_end(host)
    runs = [(1, start, end)]
    if host in RESTARTS:
        crash, again, _ = RESTARTS[host]
        runs = [(1, start, crash), (2, again, end)]
    out = []
    for inst, a, b in runs:
        t = a
        while t + INTERVAL <= b:
            out.append((inst, t, t + INTERVAL))
            t += INTERVAL
    return out


def snap_of(snaps: list[tuple[int, dt.datetime, dt.datetime]], t: dt.datetime) -> int | None:
    """Index of the snapshot whose interval holds t, or None (no daemon running then)."""
    i = bisect.bisect_right([a for _inst, a, _b in snaps], t) - 1
    return i if i >= 0 and snaps[i][1] <= t < snaps[i][2] else None


def _name(close: dt.datetime, seq: int) -> str:
    return f"snap-{close.strftime('%Y%m%dT%H%M%S')}.{close.microsecond // 1000:03d}Z-{seq}"


def generate(root: str | Path) -> dict:
    """Write the spool under root/spool; returns what the data holds: traces (TraceInfo), per host
    HostTruth (counts as every reader must count them), and the scenario's constants."""
    root = Path(root)
    spool = root / "spool"
    rng = random.Random(SEED)
    traces: list[TraceInfo] = []
    truth: dict[str, HostTruth] = {}
    for hi, host in enumerate(HOSTS):
        boot = T0 - dt.timedelta(days=2, minutes=hi)
        snaps = snapshot_closes(host)
        # calls and trees binned by snapshot index
        per_snap_counts: list[dict] = [defaultdict(lambda: [0, 0, defaultdict(int)]) for _ in snaps]
        per_snap_rows: list[dict[str, list]] = [defaultdict(list) for _ in snaps]
        n_rec = defaultdict(int)

        for jn, (start, fault) in enumerate(schedule(host, rng)):
            pid = 30_000 + 7 * jn
            job = f"{host}-j{jn:03d}"
            timed = in_window(start)
            for ci, (op, arg, frames, _goes_on) in enumerate(job_calls(fault)):
                t = start + ci * CALL_GAP
                si = snap_of(snaps, t)
                if si is None:
                    continue  # no daemon running: neither counted nor recorded
                c = per_snap_counts[si]
                for f in frames:
                    cell = c[f.probe]
                    cell[0] += 1
                    if f.errno:
                        cell[1] += 1
                        cell[2][f.errno] += 1
                has_err = any(f.errno for f in frames)
                if not has_err and not timed:
                    continue
                inst = snaps[si][0]
                n_rec[inst] += 1
                trace_id = f"{host}:b{inst}:{pid}:{n_rec[inst]}"
                kind = "failure" if has_err else "good"
                root_err = frames[0].errno
                cause = CAUSE if fault and op == "reg_mr" and arg == "gpu" else None
                if cause:
                    bif = (FAULT_PROBE, FAULT_ERRNO, FAULT_LAYER)
                elif has_err:
                    origin = [f for f in frames if f.errno][-1 if root_err else -1]
                    bif = (origin.probe, origin.errno, LAYER[origin.probe])
                else:
                    bif = (None, None, None)
                traces.append(TraceInfo(trace_id, host, op, t, kind, cause, has_err and not cause, *bif))
                rows = per_snap_rows[si]
                mono = int((t - boot).total_seconds() * 1e9)
                for k, f in enumerate(frames):
                    rows["trace_id"].append(trace_id)
                    rows["seq"].append(k)
                    rows["ts_ns"].append(mono + (k * 3000 if timed else 0))
                    rows["pid"].append(pid)
                    rows["tid"].append(pid)
                    rows["ppid"].append(1000 + hi)
                    rows["comm"].append("python3")
                    rows["probe"].append(f.probe)
                    rows["layer"].append(LAYER[f.probe])
                    rows["depth"].append(f.depth)
                    rows["ret"].append(f.ret)
                    rows["errno"].append(f.errno)
                    rows["latency_ns"].append((20_000 - 3000 * f.depth) if timed else None)
                    rows["path"].append(None)
                    rows["arg"].append(arg or None)
                    rows["path2"].append(None)
                    rows["output"].append(None)
                    rows["kind"].append(kind)
                    rows["command"].append(op)
                    rows["exit_status"].append(frames[0].ret)
                    rows["start_time"].append(t)
                    rows["end_time"].append(t + dt.timedelta(microseconds=25) if timed else t)
                    rows["host"].append(host)
                    rows["kernel_release"].append(RELEASE)
                    rows["lost_events"].append(0)
                    rows["job_id"].append(job)
                    rows["metadata"].append([{"key": "gpu_driver", "value": "550.90.07"},
                                             {"key": "ofed", "value": "24.07"}])
                    rows["repeat_count"].append(None)

        # write the snapshots; counters as deltas, except across h05's exporter restart
        ht = truth[host] = HostTruth()
        hdir = spool / host
        seq = 0
        cum: dict[str, list] = defaultdict(lambda: [0, 0, defaultdict(int)])  # exporter's cumulative
        prev_inst = None
        gap = GAP.get(host)
        for i, (inst, _a, close) in enumerate(snaps):
            counts = per_snap_counts[i]
            shipped = {}
            for p in PROBES:
                calls, fails, errs = counts.get(p, (0, 0, {}))
                shipped[p] = [calls, fails, dict(errs)]
            exporter_reset = host in RESTARTS and RESTARTS[host][2] and prev_inst == 1 and inst == 2
            if exporter_reset:
                for p in PROBES:
                    old = cum[p]
                    new = shipped[p]
                    shipped[p] = [new[0] - old[0], new[1] - old[1],
                                  {e: new[2].get(e, 0) - old[2].get(e, 0) for e in set(old[2]) | set(new[2])}]
                cum = defaultdict(lambda: [0, 0, defaultdict(int)])
            for p in PROBES:
                c = counts.get(p)
                if c:
                    cum[p][0] += c[0]
                    cum[p][1] += c[1]
                    for e, v in c[2].items():
                        cum[p][2][e] += v
            prev_inst = inst
            name = _name(close, seq)
            seq += 1
            if gap and gap[0] < close <= gap[1]:
                continue  # lost from the spool (sequence number gap)
            d = hdir / name
            d.mkdir(parents=True)
            crow = defaultdict(list)
            for p in PROBES:
                calls, fails, errs = shipped[p]
                crow["host"].append(host)
                crow["snapshot_time"].append(close)
                crow["interval_s"].append(INTERVAL.total_seconds())
                crow["kernel_release"].append(RELEASE)
                crow["vendor"].append("mlx5")
                crow["probe_set"].append("rdma")
                crow["probe"].append(p)
                crow["layer"].append(LAYER[p])
                crow["live"].append(True)
                crow["invocations"].append(calls)
                crow["failures"].append(fails)
                crow["errno_counts"].append([{"errno": e, "count": v} for e, v in sorted(errs.items()) if v])
                crow["lost_records"].append(0)
                ht.calls[p] += max(calls, 0)
                for e, v in errs.items():
                    if v > 0:
                        ht.errnos[(p, e)] += v
            schema.write_table(pa.table(dict(crow), schema=schema.COUNTERS), d / "counters.parquet", "counters",
                               durable=False)
            rows = per_snap_rows[i]
            ev = pa.table(dict(rows), schema=schema.EVENTS) if rows else schema.EVENTS.empty_table()
            schema.write_table(ev, d / "events.parquet", "events", durable=False)
            ht.snapshots.append(name)
            ht.first = ht.first or close
            ht.last = close
        if host in DUPLICATED:
            when = DUPLICATED[host]
            src = next(p for p in hdir.iterdir() if schema.snapshot_time(p.name) == when)
            dup = hdir / _name(when, seq + 100)
            shutil.copytree(src, dup)
    # traces of a lost hour never reached the dataset
    kept = []
    for t in traces:
        gap = GAP.get(t.host)
        if gap and gap[0] - INTERVAL <= t.time < gap[1]:
            # binned by snapshot close: a call at t is in the snapshot closing at floor(t)+60 s
            close = t.time.replace(second=0, microsecond=0) + INTERVAL
            if gap[0] < close <= gap[1]:
                continue
        kept.append(t)
    return {"spool": spool, "traces": kept, "truth": truth}


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
    """The truth table beside the ingested data, as the simulator lays it out (truth/date=/host=)."""
    by_host = defaultdict(list)
    for t in traces:
        by_host[t.host].append(t)
    for host, ts in by_host.items():
        schema.write_partition(truth_table(ts), dataset, "truth", DATE, host, "part-0000.parquet", durable=False)

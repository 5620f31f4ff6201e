"""fleetgen10: a tenth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md, tests/fleet_harness.py), aimed at what the nine before it
leave out: clocks, late spools, per-host probe sets, tenants, per-driver errnos, diurnal load.

The fleet: RoCE GPU hosts in four availability zones (`az<k>-n<NNN>`), four platform groups:
mlx5 on MLNX_OFED (GPU memory through the peer-memory client), mlx5 upstream, bnxt_re, irdma.
Every host is shared by two tenants ("orion", "lyra"): two job slots of 4 ranks (one process a
rank), jobs of 15-40 minutes; a rank that fails fatally ends its job (the launcher kills the
other ranks) and the job is resubmitted 1-3 minutes later, three times at most. An
`rdma-exporter` agent on each host reads the GID table every minute at peak load. The window
starts at 05:00 UTC: load (job arrivals, the agent's polling, cgroup contention) rises ~2.5x
from the first hour to the sixth (diurnal). The daemon: 30 s snapshots (-i 30s), capture
windows of 30 s every 5 minutes (good trees recorded and timed there only), failure trees
always, the first 3 of a signature per snapshot as records and the rest in the third's
repeat_count.

Clocks and delivery (no fault):
  - host wall clocks are skewed by tens of seconds, three by 3-5 minutes; one host's clock
    steps back 9.5 minutes mid-window (an NTP step): its snapshot times and trace times go
    back, its monotonic clock (ts_ns) does not;
  - three hosts' spools from mid-window on arrive hours late: they sit in separate part files
    (`part-late-*.parquet`) beside the first half, rows out of order with nothing else;
  - half the hosts' counters files have their counter_buckets summary beside them, and a
    late part never does (another writer).
Probe set: rdma_lookup_get_uobject is added to the probe set of every second host at half
the window (a new probe rolled out to half the fleet mid-day): no counters before it, then
frames under every verb, and the routine double-dereg ENOENT's origin moves one frame deeper.

Routine families (truth expected_error, no root cause; the process goes on):
  R1 gid_empty_slot: query_gid ENODATA at rdma_get_gid_attr (1-2 empty slots of the 6 a rank
     and the agent read), every host, rate following the load;
  R2 odp_probe_refused: UCX asks for an ON_DEMAND MR first; bnxt_re and irdma have no ODP:
     ib_check_mr_access (inline) -> ib_uverbs_reg_mr EOPNOTSUPP, then a plain MR (mlx5: ODP
     works, no error): a per-driver errno;
  R3 dealloc_pd_busy_teardown: a teardown that frees the PD before its MRs: uverbs_free_pd
     EBUSY, then the MRs, then the PD again (30 % of ranks);
  R4 counter_bind_auto_enomem: AUTO counter mode on half of the bnxt_re and irdma hosts:
     rdma_counter_bind_qp_auto ENOMEM under RESET->INIT, ignored (root succeeds);
  R5 rdmacg_eagain_lyra: tenant lyra's pods have a tight rdma cgroup: create_qp EAGAIN at
     ib_rdmacg_try_charge, retried after 50-300 ms; probability ~ load squared (diurnal);
  R6 peer_gup_rescued: OFED GPU reg_mr: pin_user_pages_fast EFAULT, rescued by
     ib_peer_umem_get (root succeeds);
  R7 dereg_double_free: a registration cache deregisters an MR twice at teardown (25 % of
     ranks): ENOENT at __uobj_get_destroy, at rdma_lookup_get_uobject where that probe is on.

Root causes (truth root_cause; what an SRE should be shown):
  F1 peer_client_reload_gap: nvidia-peermem is upgraded host by host on 8 OFED hosts; each
     reload leaves 3 minutes with no peer client: GPU reg_mr fail EFAULT at ib_peer_umem_get
     (after the routine GUP EFAULT), the jobs die and are resubmitted. One cluster; a host
     alert on a reloaded host is tolerated (it had a real 3-minute outage), not required.
  F2 tenant_netns_gid_denied: from 40 % of the window, tenant orion's pods in zone az3 (a CNI
     change) fail INIT->RTR with ENODEV at ib_resolve_eth_dmac (the GID's netdev is in another
     net namespace); lyra's jobs on the same hosts are fine. One cluster, no host alert (many
     hosts of every platform, one tenant's configuration).
  F3 irdma_qp_ctx_nomem: one irdma host from 30 % of the window: half of its create_qp fail
     ENOMEM at irdma_create_qp (dma_alloc_coherent of the QP context). Host alert (ENOMEM).
  F4 moe_comp_vector_irdma: lyra's "moe" jobs ask for completion vector 8+ on ranks 2-3; the
     irdma devices have fewer vectors: create_cq EINVAL (comp_vector >= num_comp_vectors) on
     every irdma host, all window. One cluster, no host alert (a job's config on a platform).
  F5 cq_fw_eio_after_clock_step: the host whose clock steps back: from the step on 25 % of
     its CREATE_CQ firmware commands fail (INT_ERR -> EIO at mlx5_core_create_cq). Host alert
     (EIO).
  F6 host_memlock_reset: one bnxt_re host from half the window: a runtime upgrade reset the
     containers' RLIMIT_MEMLOCK: 90 % of reg_mr fail ENOMEM at ib_umem_get; this host's spool
     for that half is one of the late ones. Host alert (ENOMEM).

`generate(out_dir, hosts, hours, seed) -> summary` writes events, counters, counter_buckets
(half the hosts) and truth in the dataset layout and `<out_dir>/fleetgen10.json`: `alert_hosts`
(host -> errnos an alert must name: F3, F5, F6), `tolerated_alerts` (F1's hosts -> EFAULT),
`roles`, `routine` (family -> traces) and `causes` (root cause -> traces).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa

from fleetgen10 import chains as C
from tracer.schema import polars_schema, write_counter_buckets, write_partition

T0 = dt.datetime(2026, 12, 1, 5, 0, tzinfo=dt.UTC)
T0_NS = int(T0.timestamp()) * 1_000_000_000
SNAP_S = 30.0
CAPTURE_EVERY_S, CAPTURE_LEN_S = 300.0, 30.0
K_PER_SIGNATURE = 3
TICK_NS = 4_000_000  # HZ=250

GROUPS = {  # name: (vendor, ofed, kernel release)
    "ofed": ("mlx5", True, "5.15.0-1063-nvidia"),
    "upstream": ("mlx5", False, "6.8.0-51-generic"),
    "bnxt": ("bnxt_re", False, "6.8.0-51-generic"),
    "irdma": ("irdma", False, "6.8.0-51-generic"),
}

TRUTH_COLUMNS = {"trace_id": pl.String, "kind": pl.String, "root_cause": pl.String, "bifurcation_probe": pl.String,
                 "bifurcation_errno": pl.String, "origin_layer": pl.String, "expected_error": pl.Boolean,
                 "held_out": pl.Boolean, "late": pl.Boolean}

ROOT_CAUSES = ("peer_client_reload_gap", "tenant_netns_gid_denied", "irdma_qp_ctx_nomem",
               "moe_comp_vector_irdma", "cq_fw_eio_after_clock_step", "host_memlock_reset")
ROUTINE = ("gid_empty_slot", "odp_probe_refused", "dealloc_pd_busy_teardown", "counter_bind_auto_enomem",
           "rdmacg_eagain_lyra", "peer_gup_rescued", "dereg_double_free")


def load(hour_utc: float) -> float:
    """Diurnal load factor: ~0.4 at 05:00 UTC, ~0.8 at 08:00, ~1.0 at 11:00."""
    return 0.25 + 0.75 * max(0.0, math.sin(math.pi * (hour_utc - 4.0) / 16.0))


@dataclass
class Host:
    name: str
    group: str
    az: int
    skew_s: float
    boot_ns: int
    capture_phase: float
    snap_phase: float
    empty_slots: frozenset[int]
    auto_counter: bool
    rollout: bool
    roles: list[str] = field(default_factory=list)
    step_at: float | None = None  # clock steps back at this true time (s)
    step_s: float = 0.0
    late_from: float | None = None  # spool from this true time (s) delivered late
    reload_at: float | None = None  # F1: peer client gap [reload_at, reload_at + 180)
    f3_from: float | None = None
    f5_from: float | None = None
    f6_from: float | None = None

    @property
    def vendor(self) -> str:
        return GROUPS[self.group][0]

    @property
    def ofed(self) -> bool:
        return GROUPS[self.group][1]

    @property
    def release(self) -> str:
        return GROUPS[self.group][2]

    def wall_ns(self, t: float) -> int:
        off = self.skew_s + (self.step_s if self.step_at is not None and t >= self.step_at else 0.0)
        return T0_NS + int((t + off) * 1e9)


@dataclass
class Op:
    t: float
    pid: int
    comm: str
    job_id: str | None
    tenant: str | None
    command: str
    arg: str | None
    frames: list
    root_cause: str | None = None
    family: str | None = None


def _plan_fleet(n: int, hours: float, rng: random.Random) -> list[Host]:
    H = hours * 3600
    groups = ["ofed"] * 2 + ["upstream", "bnxt", "irdma"]  # 40 % OFED, 20 % each other
    hosts = []
    for i in range(n):
        group = groups[i % len(groups)] if n >= 10 else ["ofed", "upstream", "bnxt", "irdma"][i % 4]
        h = Host(name=f"az{i % 4 + 1}-n{i:03d}", group=group, az=i % 4 + 1, skew_s=rng.gauss(0, 20),
                 boot_ns=rng.randrange(10**12, 10**15), capture_phase=rng.uniform(0, CAPTURE_EVERY_S),
                 snap_phase=rng.uniform(0, SNAP_S), empty_slots=frozenset(rng.sample(range(6), rng.choice((1, 2)))),
                 auto_counter=group in ("bnxt", "irdma") and rng.random() < 0.5, rollout=i % 2 == 0)
        hosts.append(h)
    for h in rng.sample(hosts, 3):
        h.skew_s = rng.choice((-1, 1)) * rng.uniform(180, 300)
        h.roles.append("clock_minutes_off")
    by = defaultdict(list)
    for h in hosts:
        by[h.group].append(h)
    ofed = list(by["ofed"])
    rng.shuffle(ofed)
    f5 = ofed.pop()
    f5.step_at, f5.step_s, f5.f5_from = 0.5 * H, -570.4, 0.5 * H
    f5.roles += ["clock_step_back", "F5"]
    for i, h in enumerate(ofed[:8]):
        h.reload_at = (0.12 + 0.09 * i) * H
        h.roles.append("F1")
    f3 = rng.choice(by["irdma"])
    f3.f3_from = 0.3 * H
    f3.roles.append("F3")
    f6 = rng.choice(by["bnxt"])
    f6.f6_from, f6.late_from = 0.5 * H, 0.5 * H
    f6.roles += ["F6", "late_spool"]
    for h in rng.sample([h for h in hosts if not h.roles], 2):
        h.late_from = 0.55 * H
        h.roles.append("late_spool")
    return hosts


class _Rank:
    """One rank's process: its ops in order until its job ends or it dies."""

    def __init__(self, host: Host, rng: random.Random, pid: int, job_id: str, tenant: str, jtype: str, rank: int, H: float):
        self.host, self.rng, self.pid, self.job_id, self.tenant = host, rng, pid, job_id, tenant
        self.jtype, self.rank, self.H = jtype, rank, H
        self.ops: list[Op] = []
        self.died: float | None = None

    def op(self, t: float, command: str, frames, arg=None, root_cause=None, family=None, fatal=False) -> float:
        self.ops.append(Op(t, self.pid, "python3", self.job_id, self.tenant, command, arg, frames, root_cause, family))
        if fatal:
            self.died = t
        return t + self.rng.uniform(0.002, 0.03)

    def run(self, t: float, end: float) -> None:
        h, rng, v = self.host, self.rng, self.host.vendor
        for idx in range(6):
            empty = idx in h.empty_slots
            t = self.op(t, "query_gid", C.query_gid(empty), arg=f"index={idx}", family="gid_empty_slot" if empty else None)
        t = self.op(t, "alloc_pd", C.alloc_pd(v))
        for cq in range(2):
            if self.jtype == "moe" and self.rank >= 2 and cq == 1 and v == "irdma":
                self.op(t, "create_cq", C.create_cq(v, h.ofed, "comp_vector"), arg="comp_vector=9",
                        root_cause="moe_comp_vector_irdma", fatal=True)
                return
            if h.f5_from is not None and t >= h.f5_from and rng.random() < 0.25:
                self.op(t, "create_cq", C.create_cq(v, h.ofed, "fw_eio"), root_cause="cq_fw_eio_after_clock_step", fatal=True)
                return
            t = self.op(t, "create_cq", C.create_cq(v, h.ofed))
        if v != "mlx5":
            t = self.op(t, "reg_mr", C.reg_mr(v, h.ofed, False, "odp"), arg="ON_DEMAND", family="odp_probe_refused")
        for _ in range(2):
            t = self._reg_mr(t)
            if self.died is not None:
                return
        for _qp in range(2):
            for _attempt in range(6):
                if h.f3_from is not None and t >= h.f3_from and rng.random() < 0.5:
                    self.op(t, "create_qp", C.create_qp(v, h.ofed, "irdma_nomem"), root_cause="irdma_qp_ctx_nomem", fatal=True)
                    return
                if self.tenant == "lyra" and rng.random() < 0.06 * load(5 + t / 3600) ** 2:
                    self.op(t, "create_qp", C.create_qp(v, h.ofed, "rdmacg"), family="rdmacg_eagain_lyra")
                    t += rng.uniform(0.05, 0.3)
                    continue
                t = self.op(t, "create_qp", C.create_qp(v, h.ofed))
                break
        for _qp in range(2):
            auto = h.auto_counter and v != "mlx5"
            t = self.op(t, "modify_qp", C.modify_qp(v, "RESET->INIT", auto_counter=auto), arg="RESET->INIT",
                        family="counter_bind_auto_enomem" if auto else None)
            if self.tenant == "orion" and h.az == 3 and t >= 0.4 * self.H:
                self.op(t, "modify_qp", C.modify_qp(v, "INIT->RTR", fault="netns"), arg="INIT->RTR",
                        root_cause="tenant_netns_gid_denied", fatal=True)
                return
            t = self.op(t, "modify_qp", C.modify_qp(v, "INIT->RTR"), arg="INIT->RTR")
            t = self.op(t, "modify_qp", C.modify_qp(v, "RTR->RTS"), arg="RTR->RTS")
        # steady state: the caching allocator re-registers a buffer every few minutes
        t += rng.uniform(60, 240)
        while t < end:
            t = self._reg_mr(t)
            if self.died is not None:
                return
            t = self.op(t + rng.uniform(0.5, 5), "dereg_mr", C.dereg_mr(v))
            t += rng.uniform(120, 360)
        t = max(t, end)
        if rng.random() < 0.3:
            t = self.op(t, "dealloc_pd", C.dealloc_pd(v, "busy"), family="dealloc_pd_busy_teardown")
        for _ in range(2):
            t = self.op(t, "dereg_mr", C.dereg_mr(v))
        if rng.random() < 0.25:
            t = self.op(t, "dereg_mr", C.dereg_mr(v, "double"), family="dereg_double_free")
        for _ in range(2):
            t = self.op(t, "destroy_qp", C.destroy_qp(v))
        self.op(t, "dealloc_pd", C.dealloc_pd(v))

    def _reg_mr(self, t: float) -> float:
        h, v = self.host, self.host.vendor
        gpu = h.ofed
        if h.reload_at is not None and h.reload_at <= t < h.reload_at + 180:
            self.op(t, "reg_mr", C.reg_mr(v, h.ofed, True, "peer_unclaimed"), root_cause="peer_client_reload_gap", fatal=True)
            return t
        if h.f6_from is not None and t >= h.f6_from and self.rng.random() < 0.9:
            self.op(t, "reg_mr", C.reg_mr(v, h.ofed, False, "memlock"), root_cause="host_memlock_reset", fatal=True)
            return t
        return self.op(t, "reg_mr", C.reg_mr(v, h.ofed, gpu), family="peer_gup_rescued" if gpu else None)


def _host_ops(h: Host, hours: float, rng: random.Random) -> list[Op]:
    H = hours * 3600
    ops: list[Op] = []
    pid = rng.randrange(3000, 40000)
    agent = pid
    t = rng.uniform(0, 60)
    while t < H:  # the exporter agent: 6 GID slots a scan, every minute at peak load
        for idx in range(6):
            empty = idx in h.empty_slots
            ops.append(Op(t + idx * 0.001, agent, "rdma-exporter", None, None, "query_gid", f"index={idx}",
                          C.query_gid(empty), family="gid_empty_slot" if empty else None))
        t += 60 / load(5 + t / 3600) * rng.uniform(0.9, 1.1)
    jobs = 0
    for slot in range(2):
        t = rng.uniform(0, 400)
        while t < H:
            tenant = rng.choice(("orion", "lyra"))
            jtype = "moe" if tenant == "lyra" and rng.random() < 0.35 else "train"
            dur = rng.uniform(15, 40) * 60
            jobs += 1
            job_id = f"{tenant}-{h.name}-{slot}-{jobs}"
            for _attempt in range(4):
                ranks = []
                for r in range(4):
                    pid += rng.randrange(1, 40)
                    rk = _Rank(h, rng, pid, job_id, tenant, jtype, r, H)
                    rk.run(t + r * 0.3 + rng.uniform(0, 0.2), t + dur)
                    ranks.append(rk)
                dead = [rk.died for rk in ranks if rk.died is not None]
                kill = min(dead) if dead else None
                for rk in ranks:
                    ops.extend(o for o in rk.ops if kill is None or o.t <= kill)
                if kill is None:
                    t = t + dur
                    break
                t = kill + rng.uniform(60, 180)
                if t >= H:
                    break
            t += rng.uniform(60, 240) / load(5 + t / 3600)
    ops = [o for o in ops if o.t < H]
    ops.sort(key=lambda o: o.t)
    return ops


class _Writer:
    """What the tracer on one host writes: records (with in-kernel aggregation and capture
    windows), counters, and the truth of each record."""

    def __init__(self, h: Host, H: float, probe_layers: dict[str, str]):
        self.h, self.H, self.probe_layers = h, H, probe_layers
        self.frame_cols: dict[str, list] = defaultdict(list)
        self.traces: dict[str, list] = defaultdict(list)
        self.truth: list[dict] = []
        self.counts: dict[tuple[int, str], list] = {}
        self.agg: dict[tuple, list[int]] = {}
        self.n = 0
        self.causes: Counter = Counter()
        self.routine: Counter = Counter()

    def rollout_on(self, t: float) -> bool:
        return self.h.rollout and t >= 0.5 * self.H

    def snap_of(self, t: float) -> int:
        return int(math.floor((t + SNAP_S - self.h.snap_phase) / SNAP_S))

    def emit(self, op: Op, rng: random.Random) -> None:
        h = self.h
        frames = C.render(op.frames, self.rollout_on(op.t))
        snap = self.snap_of(op.t)
        for _, fn, _, errno in frames:
            c = self.counts.setdefault((snap, fn), [0, 0, Counter()])
            c[0] += 1
            if errno:
                c[1] += 1
                c[2][errno] += 1
        failing = any(f[3] for f in frames)
        in_window = ((op.t - h.capture_phase) % CAPTURE_EVERY_S) < CAPTURE_LEN_S
        if not failing and not in_window:
            return
        if failing:
            key = (snap, op.command, op.arg, tuple((f[1], f[3]) for f in frames))
            seen = self.agg.setdefault(key, [])
            if len(seen) >= K_PER_SIGNATURE:
                self.traces["repeat_count"][seen[-1]] += 1
                return
        ix = len(self.traces["trace_id"])
        if failing:
            seen.append(ix)
        self.n += 1
        trace_id = f"{h.name}-{op.pid}-{self.n}"
        root_lat = int(rng.uniform(20e3, 400e3) if op.command != "reg_mr" else rng.uniform(300e3, 4e6))
        ts0 = h.boot_ns + int(op.t * 1e9)
        if in_window:
            for seq, (depth, fn, layer, errno) in enumerate(frames):
                self._frame(ix, seq, ts0 + seq * 1500, fn, layer, depth, errno, max(400, int(root_lat * 0.8 ** depth) - seq * 200), op)
            start, end = h.wall_ns(op.t), h.wall_ns(op.t) + root_lat
        else:
            tick = (ts0 + root_lat) // TICK_NS * TICK_NS
            for seq, (depth, fn, layer, errno) in enumerate(frames):
                self._frame(ix, seq, tick, fn, layer, depth, errno, None, op)
            start = end = h.wall_ns(op.t + (tick - ts0) / 1e9)
        root_err = frames[0][3]
        tr = self.traces
        tr["trace_id"].append(trace_id)
        tr["kind"].append("failure" if failing else "good")
        tr["command"].append(op.command)
        tr["exit_status"].append(-C.ERRNO[root_err] if root_err else 0)
        tr["start_time"].append(start)
        tr["end_time"].append(end)
        tr["job_id"].append(op.job_id)
        tr["metadata"].append([{"key": "tenant", "value": op.tenant}] if op.tenant else None)
        tr["repeat_count"].append(1)
        tr["pid"].append(op.pid)
        tr["comm"].append(op.comm)
        tr["late"].append(h.late_from is not None and op.t >= h.late_from)
        bif = C.origin(frames)
        self.truth.append({"trace_id": trace_id, "kind": "failure" if failing else "good",
                           "root_cause": op.root_cause if failing else None,
                           "bifurcation_probe": bif[0] if bif else None, "bifurcation_errno": bif[1] if bif else None,
                           "origin_layer": bif[2] if bif else None,
                           "expected_error": bool(failing and op.root_cause is None), "held_out": False,
                           "late": tr["late"][-1]})
        if failing and op.root_cause:
            self.causes[op.root_cause] += 1
        elif failing:
            self.routine[op.family or "?"] += 1

    def _frame(self, ix, seq, ts, fn, layer, depth, errno, lat, op: Op) -> None:
        fc = self.frame_cols
        fc["tix"].append(ix)
        fc["seq"].append(seq)
        fc["ts_ns"].append(ts)
        fc["probe"].append(fn)
        fc["layer"].append(layer)
        fc["depth"].append(depth)
        fc["ret"].append(-C.ERRNO[errno] if errno else 0)
        fc["errno"].append(errno)
        fc["latency_ns"].append(lat)
        fc["arg"].append(op.arg if seq == 0 else None)

    # ---- tables
    def events(self) -> pl.DataFrame:
        if not self.frame_cols:
            return pl.DataFrame(schema=polars_schema("events")).with_columns(late=pl.lit(False))
        tr = pl.DataFrame({k: v for k, v in self.traces.items()}, strict=False).with_row_index("tix")
        fr = pl.DataFrame(dict(self.frame_cols)).with_columns(pl.col("tix").cast(pl.UInt32))
        ev = fr.join(tr, on="tix", how="left").sort("tix", "seq")
        ts = pl.Datetime("ns", "UTC")
        return ev.with_columns(
            pl.col("pid").cast(pl.Int32), tid=pl.col("pid").cast(pl.Int32), ppid=pl.lit(1, pl.Int32),
            depth=pl.col("depth").cast(pl.Int16), start_time=pl.col("start_time").cast(ts),
            end_time=pl.col("end_time").cast(ts), exit_status=pl.col("exit_status").cast(pl.Int32),
            kernel_release=pl.lit(self.h.release), lost_events=pl.lit(0, pl.Int64),
            repeat_count=pl.when(pl.col("repeat_count") > 1).then(pl.col("repeat_count")),
            path=pl.lit(None, pl.String), path2=pl.lit(None, pl.String), output=pl.lit(None, pl.String),
        )

    def counters(self, probes: list[str]) -> pl.DataFrame:
        h = self.h
        n_snaps = int(self.H / SNAP_S) + 1
        rows: dict[str, list] = defaultdict(list)
        offsets, errnos, counts = [0], [], []  # errno_counts built as one Arrow list array (fast)
        for k in range(n_snaps):
            t_end = h.snap_phase + k * SNAP_S
            if t_end > self.H + SNAP_S:
                break
            wall, late = h.wall_ns(t_end), h.late_from is not None and t_end - SNAP_S >= h.late_from
            for p in probes:
                if p == C.ROLLOUT_PROBE and not self.rollout_on(t_end - SNAP_S):
                    continue
                inv, fail, errs = self.counts.get((k, p), (0, 0, {}))
                rows["snapshot_time"].append(wall)
                rows["probe"].append(p)
                rows["layer"].append(self.probe_layers[p])
                rows["invocations"].append(inv)
                rows["failures"].append(fail)
                rows["late"].append(late)
                for e, c in sorted(errs.items()):
                    errnos.append(e)
                    counts.append(c)
                offsets.append(len(errnos))
        hist = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.StructArray.from_arrays(
            [pa.array(errnos, pa.string()), pa.array(counts, pa.int64())], names=["errno", "count"]))
        return pl.DataFrame(rows).with_columns(
            pl.col("snapshot_time").cast(pl.Datetime("ns", "UTC")), errno_counts=pl.from_arrow(hist),
            host=pl.lit(h.name), interval_s=pl.lit(SNAP_S),
            kernel_release=pl.lit(h.release), vendor=pl.lit(h.vendor), probe_set=pl.lit("rdma"), live=pl.lit(True),
            lost_records=pl.lit(0, pl.Int64))


def _probe_layers(h: Host) -> dict[str, str]:
    v, o = h.vendor, h.ofed
    trees = [C.alloc_pd(v), C.create_cq(v, o), C.create_qp(v, o), C.create_qp(v, o, "rdmacg"),
             C.reg_mr(v, o, o), C.reg_mr(v, o, False), C.dereg_mr(v), C.dealloc_pd(v), C.destroy_qp(v),
             C.query_gid(False), C.modify_qp(v, "INIT->RTR"), C.modify_qp(v, "RESET->INIT"), C.modify_qp(v, "INIT->RTR", fault="netns")]
    out: dict[str, str] = {}
    for tree in trees:
        for _, fn, layer, _ in tree:
            out.setdefault(fn, layer)
    return out


def _write(out: Path, table: str, df: pl.DataFrame, host: str, name: str, durable: bool = False) -> list[Path]:
    paths = []
    df = df.with_columns(date=pl.col("_date"))
    for (date,), part in df.partition_by("date", as_dict=True).items():
        p = write_partition(part.drop("date", "_date", "late", strict=False), out, table, date, host, name, durable=durable)
        paths.append(p)
    return paths


def generate(out_dir, hosts: int = 60, hours: float = 3.0, seed: int = 10) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    H = hours * 3600
    fleet = _plan_fleet(hosts, hours, rng)
    summary = {"hosts": hosts, "hours": hours, "seed": seed, "roles": {h.name: h.roles for h in fleet if h.roles},
               "alert_hosts": {}, "tolerated_alerts": {}, "causes": Counter(), "routine": Counter(),
               "traces": 0, "events": 0}
    for h in fleet:
        hrng = random.Random(f"{seed}-{h.name}")
        layers = _probe_layers(h)
        w = _Writer(h, H, layers)
        for op in _host_ops(h, hours, hrng):
            w.emit(op, hrng)
        ev = w.events()
        date = pl.col("start_time").dt.strftime("%Y-%m-%d")
        ev = ev.with_columns(_date=date)
        truth = pl.DataFrame(w.truth, schema=TRUTH_COLUMNS) if w.truth else None
        ctr = w.counters(sorted(layers)).with_columns(_date=pl.col("snapshot_time").dt.strftime("%Y-%m-%d"))
        for late, name in ((False, "part-0000.parquet"), (True, "part-late-0001.parquet")):
            e = ev.filter(pl.col("late") == late)
            if e.height:
                _write(out, "events", e, h.name, name)
            c = ctr.filter(pl.col("late") == late)
            if c.height:
                for p in _write(out, "counters", c, h.name, name):
                    # half the hosts' writer puts the 15-minute summary beside the file; a late
                    # spool's part never has one
                    if not late and int(h.name[-3:]) % 2 == 1:
                        write_counter_buckets(p, durable=False)
            if truth is not None:
                tt = truth.filter(pl.col("late") == late).join(
                    ev.filter(pl.col("late") == late).group_by("trace_id").agg(pl.col("_date").first()), on="trace_id")
                if tt.height:
                    _write(out, "truth", tt.with_columns(host=pl.lit(h.name)), h.name, name)
        summary["causes"].update(w.causes)
        summary["routine"].update(w.routine)
        summary["traces"] += len(w.truth)
        summary["events"] += ev.height
        if h.f3_from is not None or h.f6_from is not None:
            summary["alert_hosts"][h.name] = ["ENOMEM"]
        if h.f5_from is not None:
            summary["alert_hosts"][h.name] = ["EIO"]
        if h.reload_at is not None:
            summary["tolerated_alerts"][h.name] = ["EFAULT"]
    summary["causes"], summary["routine"] = dict(summary["causes"]), dict(summary["routine"])
    (out / "fleetgen10.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


__all__ = ["ROOT_CAUSES", "ROUTINE", "generate", "load"]

"""fleetgen60's fleet: a routine error and a real fault with the same errno at the same probe.

Written blind (reference/rdma_control_path.yaml, tracer/schema.py, README.md,
docs/architecture.md, tests/fleet_harness.py, the other generators' docstrings); it imports only
tracer.schema's writers.

The reference behind it
-----------------------
* modify_qp RESET->INIT runs rdma_counter_bind_qp_auto before the driver's modify ("when
  !qp->counter && IB_QP_PORT && new state INIT"). In AUTO counter mode it allocates a counter
  (alloc_and_bind -> mlx5_ib_counter_alloc_stats, __rdma_counter_bind_qp ->
  mlx5_ib_counter_bind_qp -> mlx5_cmd_exec ALLOC_Q_COUNTER, mlx5_ib_qp_set_counter); a
  firmware NO_RES there is -EAGAIN (errno_conventions: cmd_status_to_err NO_RES -> -EAGAIN),
  passed up through mlx5_ib_counter_bind_qp and __rdma_counter_bind_qp; alloc_and_bind returns
  NULL, rdma_counter_bind_qp_auto returns -ENOMEM, and _ib_modify_qp ignores that result ("the
  rdma_counter_bind_qp_auto result is ignored"): the transition succeeds, the QP has no counter.
  With the default mode rdma_counter_bind_qp_auto returns 0 with nothing below it.
* The driver's modify: ib_security_modify_qp -> mlx5_ib_modify_qp -> __mlx5_ib_modify_qp ->
  mlx5_core_qp_modify -> mlx5_cmd_exec (RST2INIT_QP); a firmware failure there is
  cmd_status_to_err's, NO_RES -> -EAGAIN, returned to the caller.

The process model
-----------------
24 mlx5 RoCE GPU hosts (gpu-01 .. gpu-24, one kernel release) over 00:00-06:00 UTC. The tracer
snapshots every 30 s, at hh:mm:07 and hh:mm:37 (a row counts the calls of the 30 s before its
snapshot_time); every call tree with an error frame is recorded and every good tree too, all
timed (a capture window open the whole run). Every process is `python3`.

* Every host starts a job every 30 minutes (its own offset, +-20 s). A normal job: 4 ranks;
  tenants heron (heron-pretrain, heron-eval), osprey (osprey-rl), wren (wren-ckpt,
  wren-infer). Each rank sets up once: create_cq, two create_qp, two reg_mr, then for each QP
  RESET->INIT, INIT->RTR, RTR->RTS; then trains (no more control-path calls).
* gpu-01 .. gpu-16 (AUTO_HOSTS) run their ports in AUTO counter mode (per-QP counters): every
  RESET->INIT there allocates a Q counter through the firmware; gpu-17 .. gpu-24 keep the
  default mode.
* The routine (counter_no_res_absorbed): tenant osprey's hyper-parameter sweep (job_name
  osprey-sweep) runs only on the AUTO hosts and only 01:00-05:00 (half of those hosts' job
  slots then), 12, 14 or 16 worker processes a job. The port's Q counter pool has room for 10
  of a sweep's workers: the others' two RESET->INITs each meet NO_RES at ALLOC_Q_COUNTER
  (EAGAIN at mlx5_cmd_exec under mlx5_ib_counter_bind_qp), absorbed (the transition succeeds,
  the QP counts into the port's default counter) and the worker goes on (INIT->RTR, RTR->RTS).
  Its rate on a host thus varies with the job type, the hour and the sweep's size.
* The fault (qp_fw_no_res): gpu-11 (an AUTO host, which ran three sweeps at 01:05, 01:35 and
  02:05, their routine errors included) loses its firmware's QP context resources after a
  firmware reset: from 02:21:40 to 03:33:40 every RST2INIT_QP fails NO_RES (EAGAIN at the same
  mlx5_cmd_exec, under mlx5_core_qp_modify), returned to the rank (root EAGAIN); the rank dies
  at its first RESET->INIT. The jobs landing there crash-loop (relaunch every 3 minutes, a new
  job of the queue every 15 minutes, tenants in turn); no sweep is scheduled there after
  02:05. At 03:33:40 a job succeeds again (the driver reloaded).
* The same fault, partial (qp_fw_no_res too: the same firmware's leak after the same reset,
  on two default-mode hosts, which never show the routine): on gpu-19 01:40-04:40 and on gpu-22
  02:50-05:20, 15 % of the RST2INIT_QP commands are refused NO_RES (EAGAIN at mlx5_cmd_exec under
  mlx5_core_qp_modify, to the root); the rank meeting it dies, its job's launcher relaunches the
  4 ranks 2 minutes later, up to 5 attempts; the other RESET->INITs there succeed (the operation
  never stops succeeding on those hosts: no bucket where it fails every call).

So the routine and the fault (on gpu-11) share the operation (modify_qp RESET->INIT), the origin probe
(mlx5_cmd_exec), the errno (EAGAIN), the caller (python3) and the host (gpu-11): only the call
chain above the origin (mlx5_ib_counter_bind_qp vs mlx5_core_qp_modify), the root's fate and
the job type tell them apart.

The truth: every occurrence of the routine family is routine (expected_error true); every
failure of the cause is the cause's (expected_error false), from the first one on; the
bifurcation is the origin (every edge above it is on the good path of RESET->INIT).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from tracer.schema import metadata_list, polars_schema, write_counter_buckets, write_partition

DAY = dt.datetime(2026, 11, 11, tzinfo=dt.UTC)
DATE = DAY.date().isoformat()
START = DAY
END = DAY + dt.timedelta(hours=6)
RELEASE = "6.8.0-60-generic"
HOSTS = [f"gpu-{i:02d}" for i in range(1, 25)]
AUTO_HOSTS = HOSTS[:16]
FAULT_HOST = "gpu-11"
FAULT_FROM = DAY + dt.timedelta(hours=2, minutes=21, seconds=40)
FAULT_TO = DAY + dt.timedelta(hours=3, minutes=33, seconds=40)
PARTIAL = {"gpu-19": (DAY + dt.timedelta(hours=1, minutes=40), DAY + dt.timedelta(hours=4, minutes=40)),
           "gpu-22": (DAY + dt.timedelta(hours=2, minutes=50), DAY + dt.timedelta(hours=5, minutes=20))}
PARTIAL_P = 0.15  # of the RST2INIT_QP commands refused NO_RES there
SWEEP_FROM = DAY + dt.timedelta(hours=1)
SWEEP_TO = DAY + dt.timedelta(hours=5)
SWEEP_NAME = "osprey-sweep"
SWEEP_SIZES = (12, 14, 16)
COUNTER_ROOM = 10  # a sweep's workers beyond this meet NO_RES at ALLOC_Q_COUNTER
TENANTS = {"heron": ["heron-pretrain", "heron-eval"], "osprey": ["osprey-rl"], "wren": ["wren-ckpt", "wren-infer"]}

FAMILIES = {  # key -> (origin probe, errno, origin layer)
    "counter_no_res_absorbed": ("mlx5_cmd_exec", "EAGAIN", "driver"),
    "qp_fw_no_res": ("mlx5_cmd_exec", "EAGAIN", "driver"),
}
ROOT_CAUSES = ("qp_fw_no_res",)
ROUTINE = ("counter_no_res_absorbed",)

LAYER = {
    "ib_uverbs_create_cq": "uverbs", "create_cq": "uverbs", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "ib_umem_get": "core", "mlx5_ib_db_map_user": "driver",
    "mlx5_comp_eqn_get": "driver", "mlx5_core_create_cq": "driver", "mlx5_cmd_do": "driver",
    "ib_uverbs_create_qp": "uverbs", "create_qp": "uverbs", "ib_create_qp_user": "core",
    "mlx5_ib_create_qp": "driver", "create_user_qp": "driver", "_create_user_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "mlx5_cmd_exec": "driver",
    "ib_uverbs_reg_mr": "uverbs", "mlx5_ib_reg_user_mr": "driver", "mlx5r_umr_resource_init": "driver",
    "pin_user_pages_fast": "core", "sg_alloc_append_table_from_pages": "core",
    "ib_uverbs_modify_qp": "uverbs", "modify_qp": "uverbs", "ib_modify_qp_with_udata": "core",
    "_ib_modify_qp": "core", "rdma_fill_sgid_attr": "core", "rdma_get_gid_attr": "core",
    "ib_resolve_eth_dmac": "core", "ib_resolve_unicast_gid_dmac": "core",
    "rdma_addr_find_l2_eth_by_grh": "core", "ib_security_modify_qp": "core",
    "mlx5_ib_modify_qp": "driver", "__mlx5_ib_modify_qp": "driver", "mlx5_set_path": "driver",
    "mlx5_core_qp_modify": "driver", "rdma_counter_bind_qp_auto": "core", "rdma_get_counter_auto_mode": "core",
    "alloc_and_bind": "core", "mlx5_ib_counter_alloc_stats": "driver", "__rdma_counter_bind_qp": "core",
    "mlx5_ib_counter_bind_qp": "driver", "mlx5_ib_qp_set_counter": "driver", "rdma_restrack_add": "core",
}
PROBES = sorted(LAYER)

_A, _M = "EAGAIN", "ENOMEM"
_CQ = [(0, "ib_uverbs_create_cq"), (1, "create_cq"), (2, "mlx5_ib_create_cq"), (3, "create_cq_user"),
       (4, "ib_umem_get"), (4, "mlx5_ib_db_map_user"), (3, "mlx5_comp_eqn_get"), (3, "mlx5_core_create_cq"),
       (4, "mlx5_cmd_do")]
_QP = [(0, "ib_uverbs_create_qp"), (1, "create_qp"), (2, "ib_create_qp_user"), (3, "create_qp"), (4, "mlx5_ib_create_qp"),
       (5, "create_qp"), (6, "create_user_qp"), (7, "_create_user_qp"), (8, "ib_umem_get"), (8, "mlx5_ib_db_map_user"),
       (7, "mlx5_qpc_create_qp"), (8, "mlx5_cmd_exec")]
_MR = [(0, "ib_uverbs_reg_mr"), (1, "mlx5_ib_reg_user_mr"), (2, "mlx5r_umr_resource_init"), (2, "ib_umem_get"),
       (3, "pin_user_pages_fast"), (3, "sg_alloc_append_table_from_pages")]
_TOP = [(0, "ib_uverbs_modify_qp"), (1, "modify_qp"), (2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp")]
_COUNTER_DEFAULT = [(4, "rdma_counter_bind_qp_auto")]  # mode != AUTO: returns 0, nothing below
_COUNTER = [(4, "rdma_counter_bind_qp_auto"), (5, "rdma_get_counter_auto_mode"), (5, "alloc_and_bind"),
            (6, "mlx5_ib_counter_alloc_stats"), (6, "__rdma_counter_bind_qp"), (7, "mlx5_ib_counter_bind_qp"),
            (8, "mlx5_cmd_exec"), (8, "mlx5_ib_qp_set_counter"), (6, "rdma_restrack_add")]
# ALLOC_Q_COUNTER refused NO_RES: EAGAIN up to __rdma_counter_bind_qp, alloc_and_bind's NULL,
# rdma_counter_bind_qp_auto's ENOMEM, which _ib_modify_qp ignores
_COUNTER_NO_RES = [(4, "rdma_counter_bind_qp_auto", _M), (5, "rdma_get_counter_auto_mode", None),
                   (5, "alloc_and_bind", None), (6, "mlx5_ib_counter_alloc_stats", None),
                   (6, "__rdma_counter_bind_qp", _A), (7, "mlx5_ib_counter_bind_qp", _A), (8, "mlx5_cmd_exec", _A)]
_DRIVER = [(4, "ib_security_modify_qp"), (5, "mlx5_ib_modify_qp"), (6, "__mlx5_ib_modify_qp"),
           (7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec")]
_RTR_CORE = [(4, "rdma_fill_sgid_attr"), (5, "rdma_get_gid_attr"), (4, "ib_resolve_eth_dmac"),
             (5, "ib_resolve_unicast_gid_dmac"), (6, "rdma_addr_find_l2_eth_by_grh")]
_RTR_DRIVER = [(4, "ib_security_modify_qp"), (5, "mlx5_ib_modify_qp"), (6, "__mlx5_ib_modify_qp"),
               (7, "mlx5_set_path"), (7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec")]


def _ok(frames):
    return [(d, fn, None) for d, fn in frames]


# name -> (operation, argument, frames of (depth, function, errno))
TREES = {
    "create_cq": ("create_cq", None, _ok(_CQ)),
    "create_qp": ("create_qp", "RC", _ok(_QP)),
    "reg_mr": ("reg_mr", None, _ok(_MR)),
    "reset_init": ("modify_qp", "RESET->INIT", _ok(_TOP + _COUNTER_DEFAULT + _DRIVER)),
    "reset_init_counter": ("modify_qp", "RESET->INIT", _ok(_TOP + _COUNTER + _DRIVER)),
    "reset_init_counter_no_res": ("modify_qp", "RESET->INIT", _ok(_TOP) + _COUNTER_NO_RES + _ok(_DRIVER)),
    "reset_init_qp_no_res": ("modify_qp", "RESET->INIT", [(d, fn, _A) for d, fn in _TOP] + _ok(_COUNTER)
                             + [(d, fn, _A) for d, fn in _DRIVER]),
    "reset_init_qp_no_res_default": ("modify_qp", "RESET->INIT", [(d, fn, _A) for d, fn in _TOP]
                                     + _ok(_COUNTER_DEFAULT) + [(d, fn, _A) for d, fn in _DRIVER]),
    "init_rtr": ("modify_qp", "INIT->RTR", _ok(_TOP + _RTR_CORE + _RTR_DRIVER)),
    "rtr_rts": ("modify_qp", "RTR->RTS", _ok(_TOP + _DRIVER)),
}
TREE_FAMILY = {"reset_init_counter_no_res": "counter_no_res_absorbed", "reset_init_qp_no_res": "qp_fw_no_res",
               "reset_init_qp_no_res_default": "qp_fw_no_res"}

SNAPSHOT_S = 30


def _snapshots() -> list[dt.datetime]:
    out, t = [], START + dt.timedelta(seconds=7)
    while t < END:
        out.append(t)
        t += dt.timedelta(seconds=SNAPSHOT_S)
    return out


class _Host:
    def __init__(self, host: str, rng: np.random.Generator):
        self.host, self.rng = host, rng
        self.auto = host in AUTO_HOSTS
        self.boot = DAY - dt.timedelta(days=2, seconds=int(rng.integers(0, 86400)))
        self.boot_id = f"{int(rng.integers(1 << 30)):08x}"
        self.next_pid = int(rng.integers(20000, 40000))
        self.n = 0
        self.events: dict[str, list] = {k: [] for k in (
            "trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret", "errno",
            "latency_ns", "arg", "kind", "command", "exit_status", "start_time", "end_time", "job_id", "metadata")}
        self.truth: list[dict] = []
        self.calls: list[tuple[dt.datetime, str]] = []  # (time, tree) for the counters

    def pid(self) -> int:
        self.next_pid += int(self.rng.integers(3, 40))
        return self.next_pid

    def call(self, t: dt.datetime, tree: str, pid: int, ppid: int, job: str, meta: dict) -> None:
        op, arg, frames = TREES[tree]
        rng = self.rng
        self.n += 1
        tid = f"{self.host}:{self.boot_id}:{pid}:{self.n}"
        root_ns = int(rng.integers(60_000, 500_000))
        failing = any(e for _, _, e in frames)
        root_errno = frames[0][2]
        base = int((t - self.boot).total_seconds() * 1e9)
        end = t + dt.timedelta(microseconds=root_ns // 1000)
        md = metadata_list(meta)
        ev = self.events
        for i, (depth, fn, errno) in enumerate(frames):
            ev["trace_id"].append(tid)
            ev["seq"].append(i)
            ev["ts_ns"].append(base + i * 2000)
            ev["pid"].append(pid)
            ev["tid"].append(pid)
            ev["ppid"].append(ppid)
            ev["comm"].append("python3")
            ev["probe"].append(fn)
            ev["layer"].append(LAYER[fn])
            ev["depth"].append(depth)
            ev["ret"].append(-1 if errno else 0)
            ev["errno"].append(errno)
            ev["latency_ns"].append(max(1000, root_ns // (depth + 1) - i * 300))
            ev["arg"].append(arg if depth == 0 else None)
            ev["kind"].append("failure" if failing else "good")
            ev["command"].append(op)
            ev["exit_status"].append(-1 if root_errno else 0)
            ev["start_time"].append(t)
            ev["end_time"].append(end)
            ev["job_id"].append(job)
            ev["metadata"].append(md)
        family = TREE_FAMILY.get(tree)
        origin = FAMILIES[family] if family else None
        self.truth.append({
            "trace_id": tid, "kind": "failure" if failing else "good", "root_cause": family,
            "bifurcation_probe": origin[0] if origin else None, "bifurcation_errno": origin[1] if origin else None,
            "origin_layer": origin[2] if origin else None,
            "expected_error": (family in ROUTINE) if family else None,
            "held_out": (not failing) and bool(rng.random() < 0.15),
        })
        self.calls.append((t, tree))

    def process(self, t: dt.datetime, job: str, meta: dict, ppid: int, *, no_counter: bool = False,
                qp_fail_p: float = 0.0) -> bool:
        """A rank or worker: create_cq, two create_qp, two reg_mr, then each QP to RTS.
        `no_counter`: its RESET->INITs meet NO_RES at ALLOC_Q_COUNTER (absorbed). `qp_fail_p`: the
        chance a RESET->INIT's RST2INIT_QP is refused NO_RES (the rank dies: False)."""
        pid, rng = self.pid(), self.rng
        step = lambda: dt.timedelta(milliseconds=int(rng.integers(80, 300)))  # noqa: E731
        for tree in ("create_cq", "create_qp", "create_qp", "reg_mr", "reg_mr"):
            t += step()
            self.call(t, tree, pid, ppid, job, meta)
        reset = ("reset_init_counter_no_res" if no_counter else "reset_init_counter") if self.auto else "reset_init"
        for _ in range(2):
            if qp_fail_p and rng.random() < qp_fail_p:
                t += step()
                self.call(t, "reset_init_qp_no_res_default", pid, ppid, job, meta)
                return False
            for tree in (reset, "init_rtr", "rtr_rts"):
                t += step()
                self.call(t, tree, pid, ppid, job, meta)
        return True

    def doomed(self, t: dt.datetime, job: str, meta: dict, ppid: int) -> None:
        """A rank on the faulty host: its first RESET->INIT fails EAGAIN, it exits."""
        pid, rng = self.pid(), self.rng
        for tree in ("create_cq", "create_qp", "create_qp", "reg_mr", "reg_mr", "reset_init_qp_no_res"):
            t += dt.timedelta(milliseconds=int(rng.integers(80, 300)))
            self.call(t, tree, pid, ppid, job, meta)


def _meta(tenant: str, name: str) -> dict:
    return {"tenant": tenant, "job_name": name, "slurm_restart_count": "0"}


def generate(root, seed: int = 60, **_shape) -> dict:
    from pathlib import Path

    root = Path(root)
    rng = np.random.default_rng(seed)
    hosts = {h: _Host(h, np.random.default_rng([seed, i])) for i, h in enumerate(HOSTS)}
    job_counter = [8_100_000]

    def new_job() -> str:
        job_counter[0] += int(rng.integers(1, 30))
        return str(job_counter[0])

    def normal(h: _Host, t: dt.datetime, job: str, meta: dict) -> None:
        launcher = h.pid()
        for r in range(4):
            h.process(t + dt.timedelta(milliseconds=300 * r + int(h.rng.integers(0, 200))), job, meta, launcher)

    def flaky(h: _Host, t: dt.datetime, job: str, meta: dict) -> int:
        """A job on a host whose firmware refuses part of its RST2INIT_QPs: a rank dying of it
        fails the attempt, relaunched 2 minutes later, up to 5 attempts. Returns the attempts."""
        attempts, ok = 0, False
        while not ok and attempts < 5:
            attempts += 1
            launcher, ok = h.pid(), True
            for r in range(4):
                ok &= h.process(t + dt.timedelta(milliseconds=300 * r + int(h.rng.integers(0, 200))), job, meta,
                                launcher, qp_fail_p=PARTIAL_P)
            t += dt.timedelta(minutes=2)
        return attempts

    def sweep(h: _Host, t: dt.datetime) -> int:
        launcher, size = h.pid(), int(rng.choice(SWEEP_SIZES))
        job, meta = new_job(), _meta("osprey", SWEEP_NAME)
        for w in range(size):
            h.process(t + dt.timedelta(milliseconds=150 * w + int(h.rng.integers(0, 100))), job, meta, launcher,
                      no_counter=w >= COUNTER_ROOM)
        return size

    sweeps: list[tuple[str, str, int]] = []
    flaky_jobs: list[tuple[str, str, int]] = []
    offsets = {h: int(rng.integers(60, 29 * 60)) for h in HOSTS}
    offsets[FAULT_HOST] = 5 * 60
    for name, h in hosts.items():
        for k in range(12):
            t = START + dt.timedelta(seconds=offsets[name] + k * 1800 + int(rng.integers(-20, 21)))
            if t >= END - dt.timedelta(minutes=1):
                break
            if name == FAULT_HOST and FAULT_FROM - dt.timedelta(minutes=5) <= t < FAULT_TO:
                continue  # the crash loop below holds the host
            in_sweep_hours = SWEEP_FROM <= t < SWEEP_TO and h.auto
            if name == FAULT_HOST:
                is_sweep = in_sweep_hours and t < FAULT_FROM  # 01:05, 01:35, 02:05
            else:
                is_sweep = in_sweep_hours and bool(rng.random() < 0.5)
            if is_sweep:
                sweeps.append((name, str(t), sweep(h, t)))
                continue
            tenant = str(rng.choice(["heron", "wren", "osprey"]))
            job, meta = new_job(), _meta(tenant, str(rng.choice(TENANTS[tenant])))
            if name in PARTIAL and PARTIAL[name][0] <= t < PARTIAL[name][1]:
                flaky_jobs.append((name, job, flaky(h, t, job, meta)))
            else:
                normal(h, t, job, meta)
    # the fault: jobs crash-looping on FAULT_HOST, tenants in turn, then a good launch at FAULT_TO
    fh = hosts[FAULT_HOST]
    t, k, order, fault_jobs = FAULT_FROM, 0, ["heron", "osprey", "wren"], []
    while t < FAULT_TO:
        if k % 5 == 0:
            tenant = order[len(fault_jobs) % 3]
            job = new_job()
            meta = _meta(tenant, TENANTS[tenant][len(fault_jobs) % len(TENANTS[tenant])])
            fault_jobs.append(job)
        launcher = fh.pid()
        for r in range(4):
            fh.doomed(t + dt.timedelta(milliseconds=300 * r + int(fh.rng.integers(0, 200))), job, meta, launcher)
        t += dt.timedelta(minutes=3)
        k += 1
    normal(fh, FAULT_TO, new_job(), _meta("wren", "wren-ckpt"))

    snaps = _snapshots()
    snap_ns = np.array([int(s.timestamp() * 1e9) for s in snaps], dtype=np.int64)
    records = 0
    ev_schema = polars_schema("events")
    for name, h in hosts.items():
        ev = pl.DataFrame(h.events, schema_overrides={
            "start_time": pl.Datetime("us", "UTC"), "end_time": pl.Datetime("us", "UTC")}, strict=False)
        ev = ev.with_columns(pl.lit(name).alias("host"), pl.lit(RELEASE).alias("kernel_release"),
                             pl.lit(0, pl.Int64).alias("lost_events"), pl.lit(None, pl.Int64).alias("repeat_count"),
                             pl.lit(None, pl.String).alias("path"), pl.lit(None, pl.String).alias("path2"),
                             pl.lit(None, pl.String).alias("output"))
        ev = ev.select([pl.col(c).cast(ev_schema[c]) for c in ev_schema.names()]).sort("start_time", "trace_id", "seq")
        write_partition(ev, root, "events", DATE, name, "part-00000.parquet", durable=False)
        truth = pl.DataFrame(h.truth, infer_schema_length=None).with_columns(pl.lit(name).alias("host"))
        truth = truth.select([pl.col(c).cast(t) for c, t in polars_schema("truth").items()])
        write_partition(truth, root, "truth", DATE, name, "part-00000.parquet", durable=False)
        records += truth.height
        _write_counters(root, name, h, snaps, snap_ns)
    return {"hosts": list(HOSTS), "records": records, "sweeps": sweeps, "fault_host": FAULT_HOST,
            "fault_jobs": fault_jobs, "fault_launches": k, "flaky_jobs": flaky_jobs}


def _write_counters(root, name: str, h: _Host, snaps, snap_ns) -> None:
    times = np.array([int(t.timestamp() * 1e9) for t, _ in h.calls], dtype=np.int64)
    idx = np.searchsorted(snap_ns, times, side="left")  # the first snapshot at or after the call
    rows = []
    for i, (_, tree) in zip(idx, h.calls, strict=True):
        for _, fn, errno in TREES[tree][2]:
            rows.append((int(i), fn, errno))
    calls = pl.DataFrame(rows, schema={"i": pl.Int64, "probe": pl.String, "errno": pl.String}, orient="row")
    calls = calls.filter(pl.col("i") < len(snaps))
    inv = calls.group_by("i", "probe").agg(pl.len().cast(pl.Int64).alias("invocations"),
                                           pl.col("errno").is_not_null().sum().cast(pl.Int64).alias("failures"))
    errs = (calls.filter(pl.col("errno").is_not_null()).group_by("i", "probe", "errno")
            .agg(pl.len().cast(pl.Int64).alias("count"))
            .sort("errno").group_by("i", "probe").agg(pl.struct("errno", "count").alias("errno_counts")))
    grid = pl.DataFrame({"i": np.repeat(np.arange(len(snaps)), len(PROBES)), "probe": PROBES * len(snaps)})
    c = (grid.join(inv, on=["i", "probe"], how="left").join(errs, on=["i", "probe"], how="left")
         .with_columns(pl.col("invocations").fill_null(0), pl.col("failures").fill_null(0)))
    c = c.with_columns(
        pl.lit(name).alias("host"),
        pl.Series("snapshot_time", snaps, dtype=pl.Datetime("us", "UTC"))[c["i"]].alias("snapshot_time"),
        pl.lit(float(SNAPSHOT_S)).alias("interval_s"), pl.lit(RELEASE).alias("kernel_release"),
        pl.lit("mlx5").alias("vendor"), pl.lit("rdma").alias("probe_set"),
        pl.col("probe").replace_strict(LAYER).alias("layer"), pl.lit(True).alias("live"),
        pl.lit(0, pl.Int64).alias("lost_records"))
    schema = polars_schema("counters")
    c = c.select([pl.col(col).cast(t) for col, t in schema.items()]).sort("snapshot_time", "probe")
    path = write_partition(c, root, "counters", DATE, name, "part-00000.parquet", durable=False)
    write_counter_buckets(path, durable=False)

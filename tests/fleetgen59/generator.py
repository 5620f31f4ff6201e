"""fleetgen59's fleet: a fault that moves with a job, beside one that stays with a host.

Written blind (reference/rdma_control_path.yaml, tracer/schema.py, README.md,
docs/architecture.md, tests/fleet_harness.py); it imports only tracer.schema's writers.

The process model
-----------------
24 mlx5 RoCE GPU hosts (gpu-01 .. gpu-24, one kernel release) over 00:00-06:00 UTC. The tracer
snapshots every 30 s, at hh:mm:07 and hh:mm:37 (a row counts the calls of the 30 s before its
snapshot_time); every call tree is recorded, timed (a capture window open the whole run).

* Normal jobs: every host starts a job every 30 minutes (its own offset), three tenants (heron,
  osprey, wren), 4 ranks (python3) a job. Each rank sets up once: create_cq, two create_qp, two
  reg_mr, and for each QP RESET->INIT, INIT->RTR, RTR->RTS; then trains (no more control-path
  calls). Routine (arp_timeout_retried): 4 % of the INIT->RTR calls meet a neighbour that did not
  resolve (ETIMEDOUT at rdma_addr_find_l2_eth_by_grh); the rank retries the same transition a
  second later, it succeeds, and the rank goes on (RTR->RTS).
* The moving fault (job_memlock_enomem): tenant heron's job 7741902 (job_name heron-ft-70b)
  asks to pin more memory than the memlock limit of any host: its first reg_mr fails ENOMEM at
  ib_umem_get (pinned_vm + npages > RLIMIT_MEMLOCK), the rank exits. Its launcher relaunches the
  4 ranks about every 2 minutes (each creates a CQ and two QPs, then dies at the reg_mr); after
  15-22 minutes the scheduler requeues the job (same job id, slurm_restart_count + 1) onto the next
  host, 1-2 minutes later: 14 hosts visited once each from 00:30 on, about 5 hours. The hosts stay
  fine: their own jobs succeed before, during and after the visit (each visited host runs a
  normal job after its visit ended, its reg_mr succeeding).
* The staying fault (cq_fw_timeout): gpu-24's firmware command interface times out every
  CREATE_CQ from 02:07:40 to 04:07:40 (ETIMEDOUT at mlx5_cmd_do under mlx5_core_create_cq). Every
  rank landing there dies at its first call; the jobs landing on the host crash-loop (relaunch
  every 3 minutes, a new job of the queue every 15 minutes). From 04:07:40 its jobs succeed again.

The truth: every occurrence of the routine family is routine (expected_error true); every
failure of a cause is the cause's (expected_error false), from the first one on; the
bifurcation is the origin (every edge above it is on the good path).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from tracer.schema import metadata_list, polars_schema, write_counter_buckets, write_partition

DAY = dt.datetime(2026, 11, 10, tzinfo=dt.UTC)
DATE = DAY.date().isoformat()
START = DAY
END = DAY + dt.timedelta(hours=6)
RELEASE = "6.8.0-60-generic"
HOSTS = [f"gpu-{i:02d}" for i in range(1, 25)]
FW_HOST = "gpu-24"
FW_FROM = DAY + dt.timedelta(hours=2, minutes=7, seconds=40)
FW_TO = DAY + dt.timedelta(hours=4, minutes=7, seconds=40)
MOVING_JOB = "7741902"
MOVING_NAME = "heron-ft-70b"
MOVING_FROM = DAY + dt.timedelta(minutes=30)
N_VISITS = 14
TENANTS = {"heron": ["heron-pretrain", "heron-eval"], "osprey": ["osprey-sweep", "osprey-rl"],
           "wren": ["wren-ckpt", "wren-infer"]}
ARP_P = 0.04

FAMILIES = {  # key -> (origin probe, errno, origin layer)
    "job_memlock_enomem": ("ib_umem_get", "ENOMEM", "core"),
    "cq_fw_timeout": ("mlx5_cmd_do", "ETIMEDOUT", "driver"),
    "arp_timeout_retried": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
}
ROOT_CAUSES = ("job_memlock_enomem", "cq_fw_timeout")
ROUTINE = ("arp_timeout_retried",)

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
}
PROBES = sorted(LAYER)

_E, _T = "ENOMEM", "ETIMEDOUT"
_CQ = [(0, "ib_uverbs_create_cq"), (1, "create_cq"), (2, "mlx5_ib_create_cq"), (3, "create_cq_user"),
       (4, "ib_umem_get"), (4, "mlx5_ib_db_map_user"), (3, "mlx5_comp_eqn_get"), (3, "mlx5_core_create_cq"),
       (4, "mlx5_cmd_do")]
_CQ_FAILING = {"ib_uverbs_create_cq", "create_cq", "mlx5_ib_create_cq", "mlx5_core_create_cq", "mlx5_cmd_do"}
_MODIFY_TOP = [(0, "ib_uverbs_modify_qp"), (1, "modify_qp"), (2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp")]
_MODIFY_DRIVER = [(4, "ib_security_modify_qp"), (5, "mlx5_ib_modify_qp"), (6, "__mlx5_ib_modify_qp")]
_RTR_CORE = [(4, "rdma_fill_sgid_attr"), (5, "rdma_get_gid_attr"), (4, "ib_resolve_eth_dmac"),
             (5, "ib_resolve_unicast_gid_dmac"), (6, "rdma_addr_find_l2_eth_by_grh")]
_ARP_FAILING = {"ib_uverbs_modify_qp", "modify_qp", "ib_modify_qp_with_udata", "_ib_modify_qp",
                "ib_resolve_eth_dmac", "ib_resolve_unicast_gid_dmac", "rdma_addr_find_l2_eth_by_grh"}


def _ok(frames):
    return [(d, fn, None) for d, fn in frames]


# name -> (operation, argument, frames of (depth, function, errno))
TREES = {
    "create_cq": ("create_cq", None, _ok(_CQ)),
    "create_cq_fw_timeout": ("create_cq", None, [(d, fn, _T if fn in _CQ_FAILING else None) for d, fn in _CQ]),
    "create_qp": ("create_qp", "RC", _ok([(0, "ib_uverbs_create_qp"), (1, "create_qp"), (2, "ib_create_qp_user"),
                                          (3, "mlx5_ib_create_qp"), (4, "create_user_qp"), (5, "_create_user_qp"),
                                          (6, "ib_umem_get"), (6, "mlx5_ib_db_map_user"), (5, "mlx5_qpc_create_qp"),
                                          (6, "mlx5_cmd_exec")])),
    "reg_mr": ("reg_mr", None, _ok([(0, "ib_uverbs_reg_mr"), (1, "mlx5_ib_reg_user_mr"), (2, "mlx5r_umr_resource_init"),
                                    (2, "ib_umem_get"), (3, "pin_user_pages_fast"),
                                    (3, "sg_alloc_append_table_from_pages")])),
    "reg_mr_memlock": ("reg_mr", None, [(0, "ib_uverbs_reg_mr", _E), (1, "mlx5_ib_reg_user_mr", _E),
                                        (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get", _E)]),
    "reset_init": ("modify_qp", "RESET->INIT", _ok(_MODIFY_TOP + _MODIFY_DRIVER + [(7, "mlx5_cmd_exec")])),
    "init_rtr": ("modify_qp", "INIT->RTR", _ok(_MODIFY_TOP + _RTR_CORE + _MODIFY_DRIVER
                                              + [(7, "mlx5_set_path"), (7, "mlx5_cmd_exec")])),
    "init_rtr_arp": ("modify_qp", "INIT->RTR", [(d, fn, _T if fn in _ARP_FAILING else None)
                                                for d, fn in _MODIFY_TOP + _RTR_CORE]),
    "rtr_rts": ("modify_qp", "RTR->RTS", _ok(_MODIFY_TOP + _MODIFY_DRIVER + [(7, "mlx5_cmd_exec")])),
}
TREE_FAMILY = {"create_cq_fw_timeout": "cq_fw_timeout", "reg_mr_memlock": "job_memlock_enomem",
               "init_rtr_arp": "arp_timeout_retried"}

SNAPSHOT_S = 30


def _snapshots() -> list[dt.datetime]:
    out, t = [], START + dt.timedelta(seconds=7)
    while t < END:
        out.append(t)
        t += dt.timedelta(seconds=SNAPSHOT_S)
    return out


def _visits(rng: np.random.Generator) -> list[tuple[str, dt.datetime, dt.datetime]]:
    """(host, from, to) of each stay of the moving job, in order."""
    hosts = [str(h) for h in rng.permutation([h for h in HOSTS if h != FW_HOST])[:N_VISITS]]
    out, t = [], MOVING_FROM + dt.timedelta(seconds=int(rng.integers(0, 120)))
    for h in hosts:
        stay = dt.timedelta(seconds=int(rng.integers(15 * 60, 22 * 60)))
        out.append((h, t, t + stay))
        t = t + stay + dt.timedelta(seconds=int(rng.integers(60, 120)))
    return out


VISITS = _visits(np.random.default_rng(59))  # the default shape's (seed 59)


class _Host:
    def __init__(self, host: str, rng: np.random.Generator):
        self.host, self.rng = host, rng
        self.boot = DAY - dt.timedelta(days=3, seconds=int(rng.integers(0, 86400)))
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
        root_ns = int(rng.integers(40_000, 400_000))
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
            ev["latency_ns"].append(max(1000, root_ns // (depth + 1) - i * 500))
            ev["arg"].append(arg if depth == 0 else None)
            ev["kind"].append("failure" if failing else "good")
            ev["command"].append(op)
            ev["exit_status"].append(-1 if root_errno else 0)
            ev["start_time"].append(t)
            ev["end_time"].append(end)
            ev["job_id"].append(job)
            ev["metadata"].append(md)
        family = TREE_FAMILY.get(tree)
        origin = None
        if family:
            origin = FAMILIES[family]
        self.truth.append({
            "trace_id": tid, "kind": "failure" if failing else "good", "root_cause": family,
            "bifurcation_probe": origin[0] if origin else None, "bifurcation_errno": origin[1] if origin else None,
            "origin_layer": origin[2] if origin else None,
            "expected_error": (family in ROUTINE) if family else None,
            "held_out": (not failing) and bool(rng.random() < 0.15),
        })
        self.calls.append((t, tree))

    def rank_setup(self, t: dt.datetime, job: str, meta: dict, ppid: int) -> None:
        """A normal rank: create_cq, two create_qp, two reg_mr, then the QPs to RTS."""
        pid, rng = self.pid(), self.rng
        step = lambda: dt.timedelta(milliseconds=int(rng.integers(80, 300)))  # noqa: E731
        for tree in ("create_cq", "create_qp", "create_qp", "reg_mr", "reg_mr"):
            t += step()
            self.call(t, tree, pid, ppid, job, meta)
        for _ in range(2):
            t += step()
            self.call(t, "reset_init", pid, ppid, job, meta)
            t += step()
            if rng.random() < ARP_P:
                self.call(t, "init_rtr_arp", pid, ppid, job, meta)
                t += dt.timedelta(seconds=1) + step()
            self.call(t, "init_rtr", pid, ppid, job, meta)
            t += step()
            self.call(t, "rtr_rts", pid, ppid, job, meta)


def _meta(tenant: str, name: str, restarts: int = 0) -> dict:
    return {"tenant": tenant, "job_name": name, "slurm_restart_count": str(restarts)}


def generate(root, seed: int = 59, **_shape) -> dict:
    from pathlib import Path

    root = Path(root)
    rng = np.random.default_rng(seed)
    visits = _visits(np.random.default_rng(seed))
    hosts = {h: _Host(h, np.random.default_rng([seed, i])) for i, h in enumerate(HOSTS)}
    job_counter = [7_700_000]

    def new_job() -> str:
        job_counter[0] += int(rng.integers(1, 30))
        return str(job_counter[0])

    def launch(h: _Host, t: dt.datetime, job: str, meta: dict, kind: str) -> None:
        launcher = h.pid()
        for r in range(4):
            rt = t + dt.timedelta(milliseconds=300 * r + int(h.rng.integers(0, 200)))
            if kind == "normal":
                h.rank_setup(rt, job, meta, launcher)
            elif kind == "memlock":
                pid = h.pid()
                for tree in ("create_cq", "create_qp", "create_qp", "reg_mr_memlock"):
                    rt += dt.timedelta(milliseconds=int(h.rng.integers(80, 300)))
                    h.call(rt, tree, pid, launcher, job, meta)
            else:  # fw: dies at its first call
                h.call(rt + dt.timedelta(milliseconds=200), "create_cq_fw_timeout", h.pid(), launcher, job, meta)

    # normal jobs: every 30 minutes a host, its own offset; on FW_HOST none during the fault
    offsets = {h: int(rng.integers(60, 29 * 60)) for h in HOSTS}
    offsets[FW_HOST] = 5 * 60
    for name, h in hosts.items():
        t = START + dt.timedelta(seconds=offsets[name])
        while t < END - dt.timedelta(minutes=1):
            if not (name == FW_HOST and FW_FROM - dt.timedelta(minutes=5) <= t < FW_TO):
                tenant = str(rng.choice(list(TENANTS)))
                launch(h, t, new_job(), _meta(tenant, str(rng.choice(TENANTS[tenant]))), "normal")
            t += dt.timedelta(minutes=30, seconds=int(rng.integers(-20, 20)))
    # the staying fault: jobs crash-looping on FW_HOST, then the first good launch at FW_TO
    fw = hosts[FW_HOST]
    t, k = FW_FROM, 0
    while t < FW_TO:
        if k % 5 == 0:
            tenant = str(rng.choice(list(TENANTS)))
            job, meta = new_job(), _meta(tenant, str(rng.choice(TENANTS[tenant])))
        launch(fw, t, job, meta, "fw")
        t += dt.timedelta(minutes=3)
        k += 1
    tenant = str(rng.choice(list(TENANTS)))
    launch(fw, FW_TO, new_job(), _meta(tenant, str(rng.choice(TENANTS[tenant]))), "normal")
    # the moving fault: one job, requeued from host to host
    for i, (name, frm, to) in enumerate(visits):
        t = frm
        while t < to:
            launch(hosts[name], t, MOVING_JOB, _meta("heron", MOVING_NAME, i), "memlock")
            t += dt.timedelta(seconds=120 + int(rng.integers(-10, 10)))

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
    return {"hosts": list(HOSTS), "records": records, "visits": [(h, str(f), str(t)) for h, f, t in visits],
            "fw_host": FW_HOST, "moving_job": MOVING_JOB}


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
    errs = (calls.filter(pl.col("errno").is_not_null()).group_by("i", "probe", "errno").agg(pl.len().cast(pl.Int64).alias("count"))
            .sort("errno").group_by("i", "probe").agg(pl.struct("errno", "count").alias("errno_counts")))
    grid = pl.DataFrame({"i": np.repeat(np.arange(len(snaps)), len(PROBES)),
                         "probe": PROBES * len(snaps)})
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

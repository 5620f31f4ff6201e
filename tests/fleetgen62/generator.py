"""fleetgen62's fleet: the peer-memory and memory-registration layer across a GPU driver rollout.

Written blind (reference/rdma_control_path.yaml, tracer/schema.py, README.md,
docs/architecture.md, tests/fleet_harness.py, tests/fleetgen61 as the brief's model, the other
generators' docstrings); it imports only tracer.schema's writers.

The reference behind it
-----------------------
* OFED pins user memory through ib_umem_get_peer -> __ib_umem_get (name_corrections: "In OFED,
  mlx5_ib_reg_user_mr calls ib_umem_get_peer(), not ib_umem_get()"; ofed_peer_memory: "mlx5 calls
  it for MR (INVAL_SUPP), CQ buffer, QP buffer and doorbell page"). __ib_umem_get is the
  pin_user_pages_fast loop; "on failure calls ib_peer_umem_get when ALLOW is set".
* GPU memory: gpu_direct_trace_shape "ib_uverbs_reg_mr -> mlx5_ib_reg_user_mr -> ib_umem_get_peer ->
  __ib_umem_get [pin_user_pages_fast returns -EFAULT] -> ib_peer_umem_get -> (ib_get_peer_client,
  get_pages, dma_map) -> create_real_mr -> reg_create (peer umems skip the mkey cache) ->
  mlx5r_umr_update_mr_pas -> ib_umem_activate_invalidation_notifier". __ib_umem_release runs on the
  GUP failure before the fallback (reg_mr tree: "GUP/sg/dma failure").
* ib_peer_umem_get: "<original GUP errno, usually -EFAULT>" when "no registered peer client claims
  the range (ib_get_peer_client returns NULL)".
* reg_dmabuf_mr (ioctl): ib_uverbs_ioctl -> ib_uverbs_run_method -> (rdma_alloc_begin_uobject,
  rdma_lookup_get_uobject) -> ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR ->
  mlx5_ib_reg_user_mr_dmabuf: "-EOPNOTSUPP when !CONFIG_INFINIBAND_USER_MEM ||
  !CONFIG_INFINIBAND_ON_DEMAND_PAGING"; after the handler uverbs_finalize_object aborts the NEW MR
  (rdma_alloc_abort_uobject).
* ib_umem_get (= OFED __ib_umem_get's body): "-ENOMEM ... pinned_vm + npages > RLIMIT_MEMLOCK
  without CAP_IPC_LOCK".

MODELLING ASSUMPTIONS beyond the reference
  - the fleet's MLNX_OFED 24.07 build has no CONFIG_INFINIBAND_ON_DEMAND_PAGING: every dma-buf MR is
    refused EOPNOTSUPP, whichever GPU driver (the kernel side refuses first);
  - the RLIMIT_MEMLOCK check comes before the pin loop and leaves __ib_umem_get without the peer
    fallback (its error path jumps past it), so the memlock ENOMEM tree has no pin and no
    ib_peer_umem_get: __ib_umem_get is its deepest failing frame;
  - ib_get_peer_client returns a pointer (NULL: no client), so its frame carries no errno;
  - the static dispatch frame ib_uverbs_cmd_verbs is inlined in this build (not a probe).

The process model
-----------------
24 mlx5 RoCE GPU hosts (gpu-01 .. gpu-24, one kernel release, MLNX_OFED 24.07, nvidia-peermem the
peer client) over 00:00-06:00 UTC. Snapshots every 30 s at hh:mm:07 and hh:mm:37 (a row counts the
calls of the 30 s before its snapshot_time); every call tree with an error frame is recorded and
every good tree too, all timed (a capture window open the whole run). Every process is `python3`.
Job metadata on every trace: tenant, job_name, gpu_driver (the host's driver when the attempt
started), ofed, slurm_restart_count.

* Every host starts a job every 30 minutes (its own offset, +-20 s): 4 ranks, 300 ms apart. A rank:
  NCCL's dma-buf test (REG_DMABUF_MR), create_cq, two create_qp, reg_mr of a host staging buffer,
  reg_mr of two GPU buffers, then per QP RESET->INIT, INIT->RTR, RTR->RTS. A job whose rank died is
  relaunched 2 minutes later (same job id, slurm_restart_count + 1), at most 3 attempts.
* dmabuf_unsupported (ROUTINE, returned, every host, every rank once): the dma-buf test is refused
  EOPNOTSUPP at mlx5_ib_reg_user_mr_dmabuf; NCCL falls back to the peer-memory path and goes on.
* gpu_pin_peer_fallback (ROUTINE, absorbed, every host while its peer client is there): every GPU
  reg_mr: pin_user_pages_fast EFAULT under __ib_umem_get, ib_peer_umem_get's client claims the
  range, the registration succeeds.
* peer_client_absent (ROOT CAUSE): the GPU driver 550.90.07 -> 570.86.15 rollout, host by host
  (ROLLOUT: the even hosts, 01:30 then one every 15 minutes to 04:15). The new driver's package does
  not load nvidia-peermem: from the host's update on, every GPU reg_mr finds no peer client
  (ib_peer_umem_get returns the pin's EFAULT to the root) and the rank dies. The host is drained for
  the update (no job starts in the 10 minutes before it) and takes a queued job 60-120 s after it.
  The odd hosts keep 550.90.07 all window.
* memlock_exceeded (ROOT CAUSE, host-local): from 02:40 on gpu-07 a config push left the container
  runtime's RLIMIT_MEMLOCK below a rank's staging buffer for jobs of 60 % of its ranks: the host
  reg_mr fails ENOMEM at __ib_umem_get (memlock check) and the rank dies.
* The control (generate(peermem_reloaded=True)): the same rollout, nvidia-peermem reloaded with
  the new driver; the GPU registrations go on through the peer client (the routine pin EFAULT).
* GAP_HOST gpu-11 (no root cause): its counters file of 03:00-04:00 is missing (lost in shipping);
  its call trees of that hour are there.

The truth: every occurrence of a routine family is routine (expected_error true); every record of a
root cause is the cause's (expected_error false), the pin's EFAULT before the failing fallback
included (docs: "an origin the code went on from, superseded by a later origin of the same tree
that reaches the root -- the death is that one's: a pin's EFAULT before a failing peer-memory
fallback"); the bifurcation is the origin (every edge above it is on the operation's good path).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from tracer.schema import metadata_list, polars_schema, write_counter_buckets, write_partition

DAY = dt.datetime(2026, 11, 19, tzinfo=dt.UTC)
DATE = DAY.date().isoformat()
START = DAY
END = DAY + dt.timedelta(hours=6)
RELEASE = "5.15.0-125-generic"
OFED = "24.07-0.6.0.1"
OLD_DRIVER, NEW_DRIVER = "550.90.07", "570.86.15"
HOSTS = [f"gpu-{i:02d}" for i in range(1, 25)]
ROLLOUT = {h: DAY + dt.timedelta(hours=1, minutes=30 + 15 * k) for k, h in enumerate(HOSTS[1::2])}
MEMLOCK_HOST = "gpu-07"
MEMLOCK_SINCE = DAY + dt.timedelta(hours=2, minutes=40)
MEMLOCK_P = 0.6
GAP_HOST = "gpu-11"
GAP = (DAY + dt.timedelta(hours=3), DAY + dt.timedelta(hours=4))
ATTEMPTS = 3
TENANTS = {"heron": ["heron-pretrain", "heron-eval"], "osprey": ["osprey-rl"], "wren": ["wren-ckpt", "wren-infer"]}

FAMILIES = {  # key -> (origin probe, errno, origin layer)
    "dmabuf_unsupported": ("mlx5_ib_reg_user_mr_dmabuf", "EOPNOTSUPP", "driver"),
    "gpu_pin_peer_fallback": ("pin_user_pages_fast", "EFAULT", "core"),
    "peer_client_absent": ("ib_peer_umem_get", "EFAULT", "peer-mem"),
    "memlock_exceeded": ("__ib_umem_get", "ENOMEM", "core"),
}
ROOT_CAUSES = ("peer_client_absent", "memlock_exceeded")
ROUTINE = ("dmabuf_unsupported", "gpu_pin_peer_fallback")

LAYER = {
    "ib_uverbs_ioctl": "uverbs", "ib_uverbs_run_method": "uverbs",
    "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR": "uverbs", "mlx5_ib_reg_user_mr_dmabuf": "driver",
    "uverbs_finalize_object": "core",
    "rdma_alloc_begin_uobject": "core", "alloc_uobj": "core", "alloc_begin_idr_uobject": "core",
    "idr_add_uobj": "core", "ib_rdmacg_try_charge": "core", "rdma_alloc_abort_uobject": "core",
    "rdma_lookup_get_uobject": "core", "rdma_restrack_add": "core",
    "ib_uverbs_create_cq": "uverbs", "create_cq": "uverbs", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "mlx5_ib_db_map_user": "driver",
    "mlx5_comp_eqn_get": "driver", "mlx5_core_create_cq": "driver", "mlx5_cmd_do": "driver",
    "ib_uverbs_create_qp": "uverbs", "create_qp": "uverbs", "ib_create_qp_user": "core",
    "mlx5_ib_create_qp": "driver", "create_user_qp": "driver", "_create_user_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "mlx5_cmd_exec": "driver",
    "ib_umem_get_peer": "core", "__ib_umem_get": "core", "pin_user_pages_fast": "core",
    "sg_alloc_append_table_from_pages": "core", "__ib_umem_release": "core",
    "ib_peer_umem_get": "peer-mem", "ib_get_peer_client": "peer-mem",
    "ib_umem_activate_invalidation_notifier": "peer-mem",
    "ib_uverbs_reg_mr": "uverbs", "mlx5_ib_reg_user_mr": "driver", "mlx5r_umr_resource_init": "driver",
    "create_real_mr": "driver", "alloc_cacheable_mr": "driver", "mkey_cache_ent_from_rb_key": "driver",
    "_mlx5_mr_cache_alloc": "driver", "reg_create": "driver", "mlx5_ib_create_mkey": "driver",
    "mlx5_core_create_mkey": "driver", "mlx5r_umr_update_mr_pas": "driver",
    "ib_uverbs_modify_qp": "uverbs", "modify_qp": "uverbs", "ib_modify_qp_with_udata": "core",
    "_ib_modify_qp": "core", "rdma_fill_sgid_attr": "core", "rdma_get_gid_attr": "core",
    "ib_resolve_eth_dmac": "core", "ib_resolve_unicast_gid_dmac": "core",
    "rdma_addr_find_l2_eth_by_grh": "core", "ib_security_modify_qp": "core", "mlx5_ib_modify_qp": "driver",
    "__mlx5_ib_modify_qp": "driver", "mlx5_set_path": "driver", "mlx5_core_qp_modify": "driver",
    "rdma_counter_bind_qp_auto": "core",
}
PROBES = sorted(LAYER)

_O, _F, _M = "EOPNOTSUPP", "EFAULT", "ENOMEM"


def _ok(frames):
    return [(d, fn, None) for d, fn in frames]


def _uobj(d: int):
    return _ok([(d, "rdma_alloc_begin_uobject"), (d + 1, "alloc_uobj"), (d + 1, "alloc_begin_idr_uobject"),
                (d + 2, "idr_add_uobj"), (d + 2, "ib_rdmacg_try_charge")])


def _umem(d: int):
    """ib_umem_get_peer of ordinary (host) memory at depth d: pinned at the first try."""
    return _ok([(d, "ib_umem_get_peer"), (d + 1, "__ib_umem_get"), (d + 2, "pin_user_pages_fast"),
                (d + 2, "sg_alloc_append_table_from_pages")])


_DMABUF = [(0, "ib_uverbs_ioctl", _O), (1, "ib_uverbs_run_method", _O)] + _uobj(2) + \
    _ok([(2, "rdma_lookup_get_uobject")]) + \
    [(2, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", _O), (3, "mlx5_ib_reg_user_mr_dmabuf", _O)] + \
    _ok([(2, "uverbs_finalize_object"), (3, "rdma_alloc_abort_uobject")])

_CQ = _ok([(0, "ib_uverbs_create_cq"), (1, "create_cq")]) + _uobj(2) + \
    _ok([(2, "mlx5_ib_create_cq"), (3, "create_cq_user")]) + _umem(4) + \
    _ok([(4, "mlx5_ib_db_map_user"), (3, "mlx5_comp_eqn_get"), (3, "mlx5_core_create_cq"), (4, "mlx5_cmd_do"),
         (2, "rdma_restrack_add")])

_QP = _ok([(0, "ib_uverbs_create_qp"), (1, "create_qp")]) + _uobj(2) + \
    _ok([(2, "rdma_lookup_get_uobject"), (2, "ib_create_qp_user"), (3, "create_qp"), (4, "mlx5_ib_create_qp"),
         (5, "create_qp"), (6, "create_user_qp"), (7, "_create_user_qp")]) + _umem(8) + \
    _ok([(8, "mlx5_ib_db_map_user"), (7, "mlx5_qpc_create_qp"), (8, "mlx5_cmd_exec")])

_MR_HEAD = _ok([(0, "ib_uverbs_reg_mr")]) + _uobj(1) + _ok([(1, "rdma_lookup_get_uobject"), (1, "mlx5_ib_reg_user_mr"),
                                                              (2, "mlx5r_umr_resource_init")])
_MR_TAIL = _ok([(1, "rdma_restrack_add")])
# host staging buffer: pinned, an mkey from the cache, its PAS loaded by UMR
_MR_HOST = _MR_HEAD + _umem(2) + _ok([(2, "create_real_mr"), (3, "alloc_cacheable_mr"), (4, "mkey_cache_ent_from_rb_key"),
                                      (4, "_mlx5_mr_cache_alloc"), (3, "mlx5r_umr_update_mr_pas")]) + _MR_TAIL
# the memlock check refuses before any pin (see MODELLING ASSUMPTIONS)
_MR_MEMLOCK = [(0, "ib_uverbs_reg_mr", _M)] + _MR_HEAD[1:-2] + \
    [(1, "mlx5_ib_reg_user_mr", _M), (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get_peer", _M),
     (3, "__ib_umem_get", _M), (1, "rdma_alloc_abort_uobject", None)]
# GPU memory: the pin refused on device memory, then the peer client's fallback
_GPU_PIN = [(4, "pin_user_pages_fast", _F), (4, "__ib_umem_release", None)]
_MR_GPU = _MR_HEAD + _ok([(2, "ib_umem_get_peer"), (3, "__ib_umem_get")]) + _GPU_PIN + \
    _ok([(4, "ib_peer_umem_get"), (5, "ib_get_peer_client"), (2, "create_real_mr"), (3, "reg_create"),
         (4, "mlx5_ib_create_mkey"), (5, "mlx5_core_create_mkey"), (6, "mlx5_cmd_exec"), (3, "mlx5r_umr_update_mr_pas"),
         (3, "ib_umem_activate_invalidation_notifier")]) + _MR_TAIL
_MR_GPU_NOPEER = [(0, "ib_uverbs_reg_mr", _F)] + _MR_HEAD[1:-2] + \
    [(1, "mlx5_ib_reg_user_mr", _F), (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get_peer", _F),
     (3, "__ib_umem_get", _F)] + _GPU_PIN + \
    [(4, "ib_peer_umem_get", _F), (5, "ib_get_peer_client", None), (1, "rdma_alloc_abort_uobject", None)]

_TOP = [(0, "ib_uverbs_modify_qp"), (1, "modify_qp"), (2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp")]
_DRIVER = [(4, "ib_security_modify_qp"), (5, "mlx5_ib_modify_qp"), (6, "__mlx5_ib_modify_qp"),
           (7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec")]
_RTR = [(4, "rdma_fill_sgid_attr"), (5, "rdma_get_gid_attr"), (4, "ib_resolve_eth_dmac"),
        (5, "ib_resolve_unicast_gid_dmac"), (6, "rdma_addr_find_l2_eth_by_grh"), (4, "ib_security_modify_qp"),
        (5, "mlx5_ib_modify_qp"), (6, "__mlx5_ib_modify_qp"), (7, "mlx5_set_path"), (7, "mlx5_core_qp_modify"),
        (8, "mlx5_cmd_exec")]

# name -> (operation, argument, frames of (depth, function, errno))
TREES = {
    "dmabuf_probe": ("reg_dmabuf_mr", None, _DMABUF),
    "create_cq": ("create_cq", None, _CQ),
    "create_qp": ("create_qp", "RC", _QP),
    "reg_mr_host": ("reg_mr", None, _MR_HOST),
    "reg_mr_memlock": ("reg_mr", None, _MR_MEMLOCK),
    "reg_mr_gpu": ("reg_mr", None, _MR_GPU),
    "reg_mr_gpu_nopeer": ("reg_mr", None, _MR_GPU_NOPEER),
    "reset_init": ("modify_qp", "RESET->INIT", _ok(_TOP + [(4, "rdma_counter_bind_qp_auto")] + _DRIVER)),
    "init_rtr": ("modify_qp", "INIT->RTR", _ok(_TOP + _RTR)),
    "rtr_rts": ("modify_qp", "RTR->RTS", _ok(_TOP + _DRIVER)),
}
TREE_FAMILY = {"dmabuf_probe": "dmabuf_unsupported", "reg_mr_gpu": "gpu_pin_peer_fallback",
               "reg_mr_gpu_nopeer": "peer_client_absent", "reg_mr_memlock": "memlock_exceeded"}

SNAPSHOT_S = 30


def _snapshots() -> list[dt.datetime]:
    out, t = [], START + dt.timedelta(seconds=7)
    while t < END:
        out.append(t)
        t += dt.timedelta(seconds=SNAPSHOT_S)
    return out


class _Host:
    def __init__(self, host: str, rng: np.random.Generator, peermem_reloaded: bool = False):
        self.host, self.rng, self.peermem_reloaded = host, rng, peermem_reloaded
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

    def updated(self, t: dt.datetime) -> bool:
        return self.host in ROLLOUT and t >= ROLLOUT[self.host]

    def peer_client(self, t: dt.datetime) -> bool:
        return self.peermem_reloaded or not self.updated(t)

    def driver(self, t: dt.datetime) -> str:
        return NEW_DRIVER if self.updated(t) else OLD_DRIVER

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

    def rank(self, t: dt.datetime, job: str, meta: dict, ppid: int) -> bool:
        """One rank's start-up; False when it died (its failing call its last trace)."""
        pid, rng = self.pid(), self.rng
        step = lambda: dt.timedelta(milliseconds=int(rng.integers(80, 300)))  # noqa: E731
        t += step()
        self.call(t, "dmabuf_probe", pid, ppid, job, meta)
        t += step()
        self.call(t, "create_cq", pid, ppid, job, meta)
        for _ in range(2):
            t += step()
            self.call(t, "create_qp", pid, ppid, job, meta)
        t += step()
        if self.host == MEMLOCK_HOST and t >= MEMLOCK_SINCE and rng.random() < MEMLOCK_P:
            self.call(t, "reg_mr_memlock", pid, ppid, job, meta)
            return False
        self.call(t, "reg_mr_host", pid, ppid, job, meta)
        for _ in range(2):
            t += step()
            if not self.peer_client(t):
                self.call(t, "reg_mr_gpu_nopeer", pid, ppid, job, meta)
                return False
            self.call(t, "reg_mr_gpu", pid, ppid, job, meta)
        for _ in range(2):
            for tree in ("reset_init", "init_rtr", "rtr_rts"):
                t += step()
                self.call(t, tree, pid, ppid, job, meta)
        return True

    def job(self, t: dt.datetime, job: str, tenant: str, name: str) -> list[bool]:
        """A job's attempts (relaunched 2 minutes after one whose rank died); each attempt's outcome."""
        outcomes = []
        for attempt in range(ATTEMPTS):
            meta = {"tenant": tenant, "job_name": name, "gpu_driver": self.driver(t), "ofed": OFED,
                    "slurm_restart_count": str(attempt)}
            launcher, ok = self.pid(), True
            for r in range(4):
                ok &= self.rank(t + dt.timedelta(milliseconds=300 * r + int(self.rng.integers(0, 200))), job, meta,
                                launcher)
            outcomes.append(ok)
            if ok:
                break
            t += dt.timedelta(minutes=2)
        return outcomes


def generate(root, seed: int = 62, peermem_reloaded: bool = False, **_shape) -> dict:
    """The fleet into `root`; `peermem_reloaded=True`: the control, the same job schedule (the
    global draws are the same) whose driver update reloads nvidia-peermem: the rollout happens
    and no GPU registration fails."""
    from pathlib import Path

    root = Path(root)
    rng = np.random.default_rng(seed)
    hosts = {h: _Host(h, np.random.default_rng([seed, i]), peermem_reloaded) for i, h in enumerate(HOSTS)}
    job_counter = [7_100_000]

    def new_job() -> str:
        job_counter[0] += int(rng.integers(1, 30))
        return str(job_counter[0])

    jobs: list[dict] = []
    offsets = {h: int(rng.integers(60, 29 * 60)) for h in HOSTS}
    for name, h in hosts.items():
        starts = []
        for k in range(12):
            t = START + dt.timedelta(seconds=offsets[name] + k * 1800 + int(rng.integers(-20, 21)))
            if t >= END - dt.timedelta(minutes=12):
                break
            if name in ROLLOUT and ROLLOUT[name] - dt.timedelta(minutes=10) <= t < ROLLOUT[name]:
                continue  # drained for the driver update
            starts.append(t)
        if name in ROLLOUT:  # back in service: a queued job starts 60-120 s after the update
            starts.append(ROLLOUT[name] + dt.timedelta(seconds=int(rng.integers(60, 121))))
        for t in sorted(starts):
            tenant = str(rng.choice(list(TENANTS)))
            job = new_job()
            outcomes = h.job(t, job, tenant, str(rng.choice(TENANTS[tenant])))
            jobs.append({"host": name, "job": job, "start": t, "attempts": len(outcomes), "ok": outcomes[-1]})

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
    return {"hosts": list(HOSTS), "records": records, "jobs": [{**j, "start": j["start"].isoformat()} for j in jobs],
            "rollout": {h: t.isoformat() for h, t in ROLLOUT.items()}}


def _write_counters(root, name: str, h: _Host, snaps, snap_ns) -> None:
    """The host's counters, one file an hour (the tracer's shipper rolls its file hourly); the gap
    host's file of GAP is missing."""
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
    for hour in range(6):
        lo, hi = START + dt.timedelta(hours=hour), START + dt.timedelta(hours=hour + 1)
        if name == GAP_HOST and (lo, hi) == GAP:
            continue
        part = c.filter((pl.col("snapshot_time") >= lo) & (pl.col("snapshot_time") < hi))
        path = write_partition(part, root, "counters", DATE, name, f"part-{hour:05d}.parquet", durable=False)
        write_counter_buckets(path, durable=False)

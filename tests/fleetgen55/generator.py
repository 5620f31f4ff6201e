"""Time and identity oddities of a real fleet: a blind fleet generator (see __init__.py for the
angle and the truth's decisions).

Written from reference/rdma_control_path.yaml (the operations' trees, their errno lists, the
errno_conventions), tracer/schema.py (tables written through its writers in the dataset layout
<root>/<table>/date=D/host=H/part-*.parquet, a counter_buckets summary beside every counters
file), README.md, docs/architecture.md and tests/fleet_harness.py. It imports only tracer.schema
of the project.

The fleet
---------
23 mlx5 machines (ConnectX-7, MLNX_OFED with GPUDirect peer memory), 24 host names, one
UTC night: 2026-03-28T20:00Z to 2026-03-29T04:00Z -- the night Europe moves its clocks (01:00 UTC),
which a UTC dataset must not notice; the data crosses midnight, so every host has two dates.

  racks r1 gpu-a01..a12, r2 gpu-b01..b06: kernel 5.15.0-119-generic; r3 gpu-c01..c06:
  6.8.0-45-generic. NIC firmware 28.41.1000, GPU driver 535.183.01, except below.

Each machine runs single-host Slurm jobs back to back (8 ranks, comm python3, 25-50 minutes, 1-4
minutes between jobs). A rank's start-up, 0.05-0.6 s a call: alloc_pd; four CQs each asked with
CQE compression first (refused: cqe_comp_refused) and created again without; two host staging
buffers registered (pinned); four GPU buffers registered (the pin fails EFAULT and the peer client
nvidia-peermem takes the range: gpu_pin_peer_fallback, absorbed, the root succeeds); four RC QPs
created and moved RESET->INIT->RTR->RTS. Half way through the job a communicator split: the
staging MR the split already released is deregistered again (ENOENT at the uobject lookup:
stale_handle_dereg), two GPU buffers registered, two QPs created and connected. At the job's end
the teardown (dereg_mr x8, destroy_qp x6, dealloc_pd). A rank that dies of a call ends its job:
the launcher kills the other ranks 1-5 s later (their calls after that never happen), and the
job is requeued 90-180 s later. On every machine a GID monitor (comm gid-monitor) scans 32 GID
entries of its port every 30 s: 8 are populated, 24 empty (ENODATA: gid_slot_empty), one record
a scan standing for the 24 (repeat_count, the kernel's aggregation).

The tracer: probe set rdma-fg55 (fexit on every function of TREES), 60 s snapshots, a 20 s
capture window every 15 minutes (every tree then timed, good ones recorded too); outside windows
only failing trees are records (untimed: the tick the root returned in).

The oddities (none is a fault; none may raise an alert by itself):
  clock skew      gpu-a07's clock runs 7 min 13 s ahead, gpu-c03's 4 min behind, gpu-c06's 6 min
                  ahead: their snapshot names/times and trace times are their own clock's.
  rename          gpu-b05 is renamed trn-b05 at 23:10 (same machine, same boot, the tracer
                  restarted under the new name): its running processes go on under the new name.
  reused id       gpu-a10 is decommissioned at 22:05; at 00:50 another machine, reimaged with
                  6.8.0-45-generic, comes up under the same name (another boot, the same pid
                  numbers again).
  counter resets  the tracers of gpu-a05 (21:37) and gpu-c02 (02:22) restart under an exporter
                  that ships cumulative counts as new - old: the first delta after is negative.
  late, unordered gpu-a11's snapshots (counters and events) of 01:00-02:00 arrive an hour late, in
                  a second part file, newest first; its main counters file holds 21:00-22:00 in
                  shuffled order.
The root causes:
  fw_create_qp_timeout       NIC firmware 28.39.1002 (gpu-a04, gpu-b02, gpu-c03) times out a
                             quarter of its CREATE_QP commands from 21:10 to 03:30: ETIMEDOUT at
                             mlx5_cmd_exec under mlx5_qpc_create_qp, fatal to the rank.
  peermem_after_driver_update  the GPU driver updated to 550.90.07 on gpu-c05 (23:40) and gpu-c06
                             (00:25) without its nvidia-peermem: no peer client claims GPU memory,
                             ib_peer_umem_get returns the pin's EFAULT, fatal to every rank.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict

import numpy as np
import pyarrow as pa

from tracer.schema import ERRNO_COUNTS_TYPE, METADATA_TYPE, write_counter_buckets, write_partition

UTC = dt.UTC
T0 = dt.datetime(2026, 3, 28, 20, 0, tzinfo=UTC)
T1 = dt.datetime(2026, 3, 29, 4, 0, tzinfo=UTC)
MIDNIGHT = dt.datetime(2026, 3, 29, 0, 0, tzinfo=UTC)
SNAP_S = 60
WINDOW_EVERY_S = 900
WINDOW_S = 20

P1 = "5.15.0-119-generic"
P2 = "6.8.0-45-generic"
FW_OK, FW_BAD = "28.41.1000", "28.39.1002"
GPU_OLD, GPU_NEW = "535.183.01", "550.90.07"

ERRNO_NUM = {"EFAULT": 14, "ENOENT": 2, "EOPNOTSUPP": 95, "ENODATA": 61, "ETIMEDOUT": 110}

# --------------------------------------------------------------------------------------------
# call trees: name -> (operation, root arg, frames of (depth, function, errno))
# --------------------------------------------------------------------------------------------
_UMEM = [(0, "ib_umem_get_peer", None), (1, "__ib_umem_get", None), (2, "pin_user_pages_fast", None)]


def _shift(frames, by):
    return [(d + by, fn, e) for d, fn, e in frames]


def _fail(frames, names, errno):
    return [(d, fn, errno if fn in names else e) for d, fn, e in frames]


_CQ = [(0, "ib_uverbs_create_cq", None), (1, "create_cq", None), (2, "rdma_alloc_begin_uobject", None),
       (2, "mlx5_ib_create_cq", None), (3, "create_cq_user", None), *_shift(_UMEM, 4),
       (3, "mlx5_core_create_cq", None), (2, "rdma_restrack_add", None)]
_CQ_COMP = [(0, "ib_uverbs_create_cq", "EOPNOTSUPP"), (1, "create_cq", "EOPNOTSUPP"),
            (2, "rdma_alloc_begin_uobject", None), (2, "mlx5_ib_create_cq", "EOPNOTSUPP"),
            (3, "create_cq_user", "EOPNOTSUPP"), (2, "rdma_alloc_abort_uobject", None)]
_MR_HEAD = [(0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None), (1, "rdma_lookup_get_uobject", None),
            (1, "mlx5_ib_reg_user_mr", None), (2, "mlx5r_umr_resource_init", None)]
_MR_HOST = [*_MR_HEAD, *_shift(_UMEM, 2), (2, "create_real_mr", None), (3, "alloc_cacheable_mr", None),
            (3, "mlx5r_umr_update_mr_pas", None), (1, "rdma_restrack_add", None)]
_MR_GPU = [*_MR_HEAD, (2, "ib_umem_get_peer", None), (3, "__ib_umem_get", None), (4, "pin_user_pages_fast", "EFAULT"),
           (4, "ib_peer_umem_get", None), (5, "ib_get_peer_client", None), (2, "create_real_mr", None),
           (3, "reg_create", None), (4, "mlx5_cmd_exec", None), (3, "mlx5r_umr_update_mr_pas", None),
           (3, "ib_umem_activate_invalidation_notifier", None), (1, "rdma_restrack_add", None)]
_MR_GPU_NOPEER = [*_fail(_MR_HEAD, {"ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr"}, "EFAULT"),
                  (2, "ib_umem_get_peer", "EFAULT"), (3, "__ib_umem_get", "EFAULT"), (4, "pin_user_pages_fast", "EFAULT"),
                  (4, "ib_peer_umem_get", "EFAULT"), (5, "ib_get_peer_client", None),
                  (1, "rdma_alloc_abort_uobject", None)]
_QP = [(0, "ib_uverbs_create_qp", None), (1, "rdma_alloc_begin_uobject", None), (1, "rdma_lookup_get_uobject", None),
       (1, "ib_create_qp_user", None), (2, "mlx5_ib_create_qp", None), (3, "create_user_qp", None),
       (4, "_create_user_qp", None), *_shift(_UMEM, 5), (5, "mlx5_ib_db_map_user", None),
       (4, "mlx5_qpc_create_qp", None), (5, "mlx5_cmd_exec", None), (2, "ib_create_qp_security", None),
       (1, "ib_qp_usecnt_inc", None)]
_QP_TIMEOUT = [*_fail(_QP[:-2], {"ib_uverbs_create_qp", "ib_create_qp_user", "mlx5_ib_create_qp", "create_user_qp",
                                 "mlx5_qpc_create_qp", "mlx5_cmd_exec"}, "ETIMEDOUT"),
               (1, "rdma_alloc_abort_uobject", None)]
_MOD_HEAD = [(0, "ib_uverbs_modify_qp", None), (1, "modify_qp", None), (2, "rdma_lookup_get_uobject", None),
             (2, "ib_modify_qp_with_udata", None), (3, "_ib_modify_qp", None)]
_MOD_DRV = [(4, "ib_security_modify_qp", None), (5, "mlx5_ib_modify_qp", None), (6, "__mlx5_ib_modify_qp", None),
            (7, "mlx5_core_qp_modify", None), (8, "mlx5_cmd_exec", None)]
_MOD_INIT = [*_MOD_HEAD, (4, "rdma_counter_bind_qp_auto", None), *_MOD_DRV]
_MOD_RTR = [*_MOD_HEAD, (4, "rdma_fill_sgid_attr", None), (5, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", None),
            (5, "rdma_addr_find_l2_eth_by_grh", None), (4, "rdma_lag_get_ah_roce_slave", None), *_MOD_DRV[:4],
            (7, "mlx5_set_path", None), _MOD_DRV[4], (4, "rdma_lag_put_ah_roce_slave", None)]
_MOD_RTS = [*_MOD_HEAD, *_MOD_DRV]
_DESTROY = [(1, "__uobj_perform_destroy", None), (2, "__uobj_get_destroy", None), (3, "rdma_lookup_get_uobject", None),
            (3, "uobj_destroy", None), (4, "uverbs_destroy_uobject", None), (5, "destroy_hw_idr_uobject", None)]
_DEREG = [(0, "ib_uverbs_dereg_mr", None), *_DESTROY, (6, "uverbs_free_mr", None), (7, "ib_dereg_mr_user", None),
          (8, "mlx5_ib_dereg_mr", None), (9, "ib_umem_release", None)]
_DEREG_STALE = [(0, "ib_uverbs_dereg_mr", "ENOENT"), (1, "__uobj_perform_destroy", "ENOENT"),
                (2, "__uobj_get_destroy", "ENOENT"), (3, "rdma_lookup_get_uobject", "ENOENT")]
_DESTROY_QP = [(0, "ib_uverbs_destroy_qp", None), *_shift(_DESTROY[1:], -1), (5, "uverbs_free_qp", None),
               (6, "ib_destroy_qp_user", None), (7, "mlx5_ib_destroy_qp", None), (8, "mlx5_core_destroy_qp", None),
               (9, "mlx5_cmd_exec", None), (7, "ib_qp_usecnt_dec", None)]
_PD = [(0, "ib_uverbs_alloc_pd", None), (1, "rdma_alloc_begin_uobject", None), (1, "mlx5_ib_alloc_pd", None),
       (2, "mlx5_cmd_exec", None), (1, "rdma_restrack_add", None)]
_DEALLOC = [(0, "ib_uverbs_dealloc_pd", None), *_DESTROY, (6, "uverbs_free_pd", None), (7, "ib_dealloc_pd_user", None),
            (8, "mlx5_ib_dealloc_pd", None), (9, "mlx5_cmd_dealloc_pd", None), (10, "mlx5_cmd_exec", None),
            (6, "ib_rdmacg_uncharge", None)]
_GID = [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", None), (1, "rdma_get_gid_attr", None),
        (1, "rdma_read_gid_attr_ndev_rcu", None), (1, "rdma_put_gid_attr", None)]
_GID_EMPTY = [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "ENODATA"), (1, "rdma_get_gid_attr", "ENODATA")]

TREES: dict[str, tuple[str, str | None, list]] = {
    "alloc_pd": ("alloc_pd", None, _PD),
    "create_cq": ("create_cq", None, _CQ),
    "create_cq_cqe_comp": ("create_cq", None, _CQ_COMP),
    "reg_mr_host": ("reg_mr", None, _MR_HOST),
    "reg_mr_gpu": ("reg_mr", None, _MR_GPU),
    "reg_mr_gpu_no_peer": ("reg_mr", None, _MR_GPU_NOPEER),
    "create_qp": ("create_qp", None, _QP),
    "create_qp_fw_timeout": ("create_qp", None, _QP_TIMEOUT),
    "modify_qp_init": ("modify_qp", "RESET->INIT", _MOD_INIT),
    "modify_qp_rtr": ("modify_qp", "INIT->RTR", _MOD_RTR),
    "modify_qp_rts": ("modify_qp", "RTR->RTS", _MOD_RTS),
    "dereg_mr": ("dereg_mr", None, _DEREG),
    "dereg_mr_stale": ("dereg_mr", None, _DEREG_STALE),
    "destroy_qp": ("destroy_qp", None, _DESTROY_QP),
    "dealloc_pd": ("dealloc_pd", None, _DEALLOC),
    "query_gid": ("query_gid", None, _GID),
    "query_gid_empty": ("query_gid", None, _GID_EMPTY),
}

# family -> (origin probe, errno, origin layer)
ROUTINE = {
    "cqe_comp_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
    "gpu_pin_peer_fallback": ("pin_user_pages_fast", "EFAULT", "core"),
    "stale_handle_dereg": ("rdma_lookup_get_uobject", "ENOENT", "core"),
    "gid_slot_empty": ("rdma_get_gid_attr", "ENODATA", "core"),
}
ROOT_CAUSES = {
    "fw_create_qp_timeout": ("mlx5_cmd_exec", "ETIMEDOUT", "driver"),
    "peermem_after_driver_update": ("ib_peer_umem_get", "EFAULT", "peer-mem"),
}
FAMILIES = {**ROUTINE, **ROOT_CAUSES}
TREE_FAMILY = {
    "create_cq_cqe_comp": "cqe_comp_refused",
    "reg_mr_gpu": "gpu_pin_peer_fallback",
    "dereg_mr_stale": "stale_handle_dereg",
    "query_gid_empty": "gid_slot_empty",
    "create_qp_fw_timeout": "fw_create_qp_timeout",
    "reg_mr_gpu_no_peer": "peermem_after_driver_update",
}

_DRIVER = {"mlx5_ib_create_cq", "create_cq_user", "mlx5_core_create_cq", "mlx5_ib_reg_user_mr", "mlx5r_umr_resource_init",
           "create_real_mr", "alloc_cacheable_mr", "reg_create", "mlx5r_umr_update_mr_pas", "mlx5_cmd_exec",
           "mlx5_ib_create_qp", "create_user_qp", "_create_user_qp", "mlx5_ib_db_map_user", "mlx5_qpc_create_qp",
           "mlx5_ib_modify_qp", "__mlx5_ib_modify_qp", "mlx5_core_qp_modify", "mlx5_set_path", "mlx5_ib_dereg_mr",
           "mlx5_ib_destroy_qp", "mlx5_core_destroy_qp", "mlx5_ib_alloc_pd", "mlx5_ib_dealloc_pd", "mlx5_cmd_dealloc_pd"}
_PEER = {"ib_peer_umem_get", "ib_get_peer_client", "ib_umem_activate_invalidation_notifier"}


def _layer(fn: str) -> str:
    if fn.startswith("ib_uverbs_"):
        return "uverbs"
    if fn in _DRIVER:
        return "driver"
    if fn in _PEER:
        return "peer-mem"
    return "core"


PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
LAYER = {fn: _layer(fn) for fn in PROBES}
_PIDX = {p: i for i, p in enumerate(PROBES)}
PAIRS = sorted({(fn, e) for _, _, frames in TREES.values() for _, fn, e in frames if e})
_KIDX = {k: i for i, k in enumerate(PAIRS)}


def _vectors(frames):
    inv = np.zeros(len(PROBES), np.int64)
    err = np.zeros(len(PAIRS), np.int64)
    for _, fn, e in frames:
        inv[_PIDX[fn]] += 1
        if e:
            err[_KIDX[(fn, e)]] += 1
    return inv, err


VECTORS = {name: _vectors(frames) for name, (_, _, frames) in TREES.items()}
PAIR_PROBE = np.array([_PIDX[p] for p, _ in PAIRS])


# --------------------------------------------------------------------------------------------
# the machines
# --------------------------------------------------------------------------------------------
def _t(h: int, m: int, s: int = 0, day: int = 28) -> dt.datetime:
    return dt.datetime(2026, 3, day, h, m, s, tzinfo=UTC)


SKEW = {"gpu-a07": 7 * 60 + 13, "gpu-c03": -4 * 60, "gpu-c06": 6 * 60}
RENAMED = ("gpu-b05", "trn-b05")
RENAME_AT = _t(23, 10)
REUSED = "gpu-a10"
DECOMMISSIONED_AT = _t(22, 5)
REIMAGED_AT = _t(0, 50, day=29)
RESETS = {"gpu-a05": _t(21, 37), "gpu-c02": _t(2, 22, day=29)}
LATE_HOST = "gpu-a11"
LATE_FROM, LATE_TO = _t(1, 0, day=29), _t(2, 0, day=29)
SHUFFLED_FROM, SHUFFLED_TO = _t(21, 0), _t(22, 0)
FW_HOSTS = ("gpu-a04", "gpu-b02", "gpu-c03")
FW_FROM, FW_TO = _t(21, 10), _t(3, 30, day=29)
FW_RATE = 0.25
PEERMEM_UPDATE = {"gpu-c05": _t(23, 40), "gpu-c06": _t(0, 25, day=29)}

MACHINES = [f"gpu-a{i:02d}" for i in range(1, 13)] + [f"gpu-b{i:02d}" for i in range(1, 7)] + \
    [f"gpu-c{i:02d}" for i in range(1, 7)]
HOSTS = sorted([*MACHINES, RENAMED[1]])
ODDITY_HOSTS = sorted({"gpu-a07", *RENAMED, REUSED, *RESETS, LATE_HOST})
CAUSE_HOSTS = {"fw_create_qp_timeout": (*FW_HOSTS,), "peermem_after_driver_update": tuple(PEERMEM_UPDATE)}


class Machine:
    """One machine's run under the tracer: its name(s), kernel, clock and boot."""

    def __init__(self, name, release, start, end, *, boot, pid_base, index, rng):
        self.name = name
        self.release = release
        self.start, self.end = start, end
        self.boot = boot
        self.pid_base = pid_base
        self.skew = SKEW.get(name, 0)
        self.index = index
        self.boot_time = start.timestamp() - rng.uniform(2, 20) * 86400
        self.recno = rng.randrange(1 << 20, 1 << 30)
        self.rack = {"a": "r1", "b": "r2", "c": "r3"}[name[4]]
        self.fw = FW_BAD if name in FW_HOSTS else FW_OK
        self.window_offset = (index * 97) % WINDOW_EVERY_S

    def name_at(self, t: float) -> str:
        if self.name == RENAMED[0] and t >= RENAME_AT.timestamp():
            return RENAMED[1]
        return self.name

    def gpu_driver_at(self, t: float) -> str:
        upd = PEERMEM_UPDATE.get(self.name)
        return GPU_NEW if upd is not None and t >= upd.timestamp() else GPU_OLD

    def in_window(self, t: float) -> bool:
        return (t - T0.timestamp() - self.window_offset) % WINDOW_EVERY_S < WINDOW_S

    def boundaries(self) -> list[float]:
        upd = PEERMEM_UPDATE.get(self.name)
        return [upd.timestamp()] if upd is not None else []


def _machines(rng) -> list[Machine]:
    out = []
    for i, name in enumerate(MACHINES):
        release = P2 if name.startswith("gpu-c") else P1
        boot = f"{rng.getrandbits(32):08x}"
        if name == REUSED:
            out.append(Machine(name, release, T0, DECOMMISSIONED_AT, boot=boot, pid_base=41000, index=i, rng=rng))
            out.append(Machine(name, P2, REIMAGED_AT, T1, boot=f"{rng.getrandbits(32):08x}", pid_base=41000,
                               index=i + 40, rng=rng))
        else:
            out.append(Machine(name, release, T0, T1, boot=boot, pid_base=30000 + 1000 * i, index=i, rng=rng))
    return out


# --------------------------------------------------------------------------------------------
# the processes: calls (true time, pid, ppid, comm, job, tree)
# --------------------------------------------------------------------------------------------
def _rank_plan(rng, m: Machine, t0: float, mid: float, end: float):
    """A rank's planned calls [(t, tree)] and the time of its fatal call (None: it lives)."""
    calls = []
    t = t0

    def step():
        nonlocal t
        t += rng.uniform(0.05, 0.6)
        return t

    def gpu_tree(at):
        upd = PEERMEM_UPDATE.get(m.name)
        return "reg_mr_gpu_no_peer" if upd is not None and at >= upd.timestamp() else "reg_mr_gpu"

    def qp_tree(at):
        fw = m.name in FW_HOSTS and FW_FROM.timestamp() <= at < FW_TO.timestamp()
        return "create_qp_fw_timeout" if fw and rng.random() < FW_RATE else "create_qp"

    calls.append((step(), "alloc_pd"))
    for _ in range(4):
        calls.append((step(), "create_cq_cqe_comp"))
        calls.append((t + rng.uniform(0.002, 0.004), "create_cq"))
    for _ in range(2):
        calls.append((step(), "reg_mr_host"))
    for _ in range(4):
        at = step()
        calls.append((at, gpu_tree(at)))
    for _ in range(4):
        at = step()
        calls.append((at, qp_tree(at)))
    for _ in range(4):
        for tr in ("modify_qp_init", "modify_qp_rtr", "modify_qp_rts"):
            calls.append((step(), tr))
    # the communicator split
    t = max(t, mid)
    calls.append((step(), "dereg_mr_stale"))
    for _ in range(2):
        at = step()
        calls.append((at, gpu_tree(at)))
    for _ in range(2):
        at = step()
        calls.append((at, qp_tree(at)))
    for _ in range(2):
        for tr in ("modify_qp_init", "modify_qp_rtr", "modify_qp_rts"):
            calls.append((step(), tr))
    # the teardown
    t = max(t, end)
    for _ in range(8):
        calls.append((step(), "dereg_mr"))
    for _ in range(6):
        calls.append((step(), "destroy_qp"))
    calls.append((step(), "dealloc_pd"))
    for i, (at, tree) in enumerate(calls):
        if TREE_FAMILY.get(tree) in ROOT_CAUSES:
            return calls[: i + 1], at
    return calls, None


def _jobs(rng, m: Machine, jobs_counter: list[int]):
    """Every rank call of a machine's jobs: (t, pid, ppid, comm, job, tree)."""
    calls = []
    pid = m.pid_base
    t = m.start.timestamp() + rng.uniform(20, 240)
    hard_end = m.end.timestamp() - (300 if m.name == REUSED and m.end < T1 else 0)
    bounds = m.boundaries()
    while t < hard_end - 120:
        jobs_counter[0] += 1
        job = str(jobs_counter[0])
        job_start = t
        dur = rng.uniform(25, 50) * 60
        end = min(t + dur, hard_end)
        for b in bounds:  # a driver update drains the host: no job runs across it
            if t < b < end:
                end = b
        ppid = pid
        pid += 1
        plans = []
        for _r in range(8):
            plans.append((pid, *_rank_plan(rng, m, t + _r * rng.uniform(0.2, 1.0), t + (end - t) / 2, end)))
            pid += 1
        deaths = [d for _, _, d in plans if d is not None]
        cut = min(deaths) + rng.uniform(1, 5) if deaths else None
        last = t
        for rpid, plan, death in plans:
            for at, tree in plan:
                if cut is not None and at > cut and at != death:
                    break
                if cut is not None and at == death and at > cut:
                    break
                calls.append((at, rpid, ppid, "python3", job, tree))
                last = max(last, at)
        t = cut + rng.uniform(90, 180) if cut is not None else last + rng.uniform(60, 240)
        for b in bounds:  # the host comes back from its drain 3 minutes after the update
            if job_start < b <= t + 180:
                t = max(t, b + 180)
    return calls


# --------------------------------------------------------------------------------------------
# records and counters
# --------------------------------------------------------------------------------------------
class Tables:
    def __init__(self):
        self.ev: dict[tuple[str, str, str], dict[str, list]] = defaultdict(lambda: defaultdict(list))
        self.truth: dict[tuple[str, str], dict[str, list]] = defaultdict(lambda: defaultdict(list))
        self.n_good = 0


def _frame_times(frames, t0_ns: int, step_ns: int, tail_ns: int):
    n = len(frames)
    entry = [t0_ns + i * step_ns for i in range(n)]
    total_end = t0_ns + n * step_ns + tail_ns
    ends = []
    for i, (d, _, _) in enumerate(frames):
        nxt = next((j for j in range(i + 1, n) if frames[j][0] <= d), None)
        ends.append(entry[nxt] - 1000 if nxt is not None else total_end - 1000 * d)
    return entry, [e - s for s, e in zip(entry, ends, strict=True)]


def _truth_of(tree: str) -> tuple[str | None, str | None, str | None, str | None, bool]:
    fam = TREE_FAMILY.get(tree)
    if fam is None:
        return None, None, None, None, False
    probe, errno, layer = FAMILIES[fam]
    return fam, probe, errno, layer, fam in ROUTINE


# per tree, the columns its frames repeat in every record
_COLUMNS = {name: {"probe": [fn for _, fn, _ in frames], "layer": [LAYER[fn] for _, fn, _ in frames],
                   "depth": [d for d, _, _ in frames], "errno": [e for _, _, e in frames],
                   "ret": [-ERRNO_NUM[e] if e else 0 for _, _, e in frames],
                   "arg": [arg] + [None] * (len(frames) - 1), "seq": list(range(len(frames)))}
            for name, (_, arg, frames) in TREES.items()}
FAILING = {name for name, (_, _, frames) in TREES.items() if any(e for _, _, e in frames)}


def _record(tab: Tables, m: Machine, t: float, pid, ppid, comm, job, tree, *, repeat=None, late=False):
    timed = m.in_window(t)
    failing = tree in FAILING
    if not failing and not timed:
        return
    op, arg, frames = TREES[tree]
    host = m.name_at(t)
    n = len(frames)
    kind = "failure" if failing else "good"
    wall = t + m.skew
    mono = int((t - m.boot_time) * 1e9)
    if timed:
        entry, lat = _frame_times(frames, mono, 3000, 150_000)
        start = int(wall * 1e9)
        end = start + lat[0]
    else:
        tick = mono - mono % 4_000_000
        entry, lat = [tick] * n, [None] * n
        start = end = int(wall * 1e9) - mono % 4_000_000
    m.recno += 1
    trace_id = f"{host}:{m.boot}:{pid}:{m.recno}"
    date = _date(wall)
    part = "part-0001-late.parquet" if late else "part-0000.parquet"
    ev = tab.ev[(host, date, part)]
    meta = [{"key": "gpu_driver", "value": m.gpu_driver_at(t)}, {"key": "nic_fw", "value": m.fw},
            {"key": "rack", "value": m.rack}]
    cols = _COLUMNS[tree]
    for key, values in cols.items():
        ev[key].extend(values)
    ev["ts_ns"].extend(entry)
    ev["latency_ns"].extend(lat)
    for key, value in (("trace_id", trace_id), ("pid", pid), ("tid", pid), ("ppid", ppid), ("comm", comm),
                       ("kind", kind), ("command", op), ("exit_status", cols["ret"][0]), ("start_time", start),
                       ("end_time", end), ("kernel_release", m.release), ("lost_events", 0), ("job_id", job),
                       ("metadata", meta), ("repeat_count", repeat)):
        ev[key].extend([value] * n)
    fam, probe, errno, layer, routine = _truth_of(tree)
    held_out = False
    if kind == "good":
        tab.n_good += 1
        held_out = tab.n_good % 10 == 0
    tr = tab.truth[(host, date)]
    for key, value in (("trace_id", trace_id), ("kind", kind), ("root_cause", fam), ("bifurcation_probe", probe),
                       ("bifurcation_errno", errno), ("origin_layer", layer), ("expected_error", routine),
                       ("held_out", held_out)):
        tr[key].append(value)


def _events_table(ev: dict[str, list]) -> pa.Table:
    n = len(ev["trace_id"])
    ts = pa.timestamp("ns", tz="UTC")
    cols = {
        "trace_id": pa.array(ev["trace_id"], pa.string()),
        "seq": pa.array(ev["seq"], pa.int64()),
        "ts_ns": pa.array(ev["ts_ns"], pa.int64()),
        "pid": pa.array(ev["pid"], pa.int32()),
        "tid": pa.array(ev["tid"], pa.int32()),
        "ppid": pa.array(ev["ppid"], pa.int32()),
        "comm": pa.array(ev["comm"], pa.string()),
        "probe": pa.array(ev["probe"], pa.string()),
        "layer": pa.array(ev["layer"], pa.string()),
        "depth": pa.array(ev["depth"], pa.int16()),
        "ret": pa.array(ev["ret"], pa.int64()),
        "errno": pa.array(ev["errno"], pa.string()),
        "latency_ns": pa.array(ev["latency_ns"], pa.int64()),
        "path": pa.nulls(n, pa.string()),
        "arg": pa.array(ev["arg"], pa.string()),
        "path2": pa.nulls(n, pa.string()),
        "output": pa.nulls(n, pa.string()),
        "kind": pa.array(ev["kind"], pa.string()),
        "command": pa.array(ev["command"], pa.string()),
        "exit_status": pa.array(ev["exit_status"], pa.int32()),
        "start_time": pa.array(ev["start_time"], ts),
        "end_time": pa.array(ev["end_time"], ts),
        "kernel_release": pa.array(ev["kernel_release"], pa.string()),
        "lost_events": pa.array(ev["lost_events"], pa.int64()),
        "job_id": pa.array(ev["job_id"], pa.string()),
        "metadata": pa.array(ev["metadata"], METADATA_TYPE),
        "repeat_count": pa.array(ev["repeat_count"], pa.int64()),
    }
    return pa.table(cols)


def _counter_rows(m: Machine, inv: np.ndarray, err: np.ndarray, *, cumulative_reset: float | None):
    """The machine's counters rows per host name: {name: list of per-snapshot rows}; with
    `cumulative_reset`, deltas shipped as cumulative new - old across a daemon restart there."""
    start = m.start.timestamp()
    n_snap = inv.shape[0]
    shipped_inv, shipped_err = inv.copy(), err.copy()
    lost: dict[str, int] = defaultdict(int)
    if cumulative_reset is not None:
        k = int((cumulative_reset - start) // SNAP_S)  # first interval of the restarted daemon
        before_inv, before_err = inv[:k].sum(axis=0), err[:k].sum(axis=0)
        shipped_inv[k] = inv[k] - before_inv
        shipped_err[k] = err[k] - before_err
        for j, (probe, errno) in enumerate(PAIRS):
            counted = max(0, int(shipped_err[k, j]))
            if err[k, j] - counted:
                lost[f"{probe}|{errno}"] += int(err[k, j] - counted)
    rows = defaultdict(list)
    for s in range(n_snap):
        close = start + (s + 1) * SNAP_S
        if close > m.end.timestamp() + 1e-6:
            break
        name = m.name_at(close - 1)
        stamp = close + m.skew
        fails = np.zeros(len(PROBES), np.int64)
        np.add.at(fails, PAIR_PROBE, shipped_err[s])
        per_probe = defaultdict(list)
        for j in np.nonzero(shipped_err[s] | err[s])[0]:
            per_probe[PAIR_PROBE[j]].append({"errno": PAIRS[j][1], "count": int(shipped_err[s, j])})
        for p in range(len(PROBES)):
            ec = per_probe.get(p)
            rows[name].append((stamp, p, int(shipped_inv[s, p]), int(fails[p]), sorted(ec, key=lambda x: x["errno"])
                               if ec else None))
    return rows, dict(lost)


def _counters_table(m: Machine, name: str, rows) -> pa.Table:
    ts = pa.timestamp("ns", tz="UTC")
    n = len(rows)
    return pa.table({
        "host": pa.array([name] * n, pa.string()),
        "snapshot_time": pa.array([int(r[0] * 1e9) for r in rows], ts),
        "interval_s": pa.array([float(SNAP_S)] * n, pa.float64()),
        "kernel_release": pa.array([m.release] * n, pa.string()),
        "vendor": pa.array(["mlx5"] * n, pa.string()),
        "probe_set": pa.array(["rdma-fg55"] * n, pa.string()),
        "probe": pa.array([PROBES[r[1]] for r in rows], pa.string()),
        "layer": pa.array([LAYER[PROBES[r[1]]] for r in rows], pa.string()),
        "live": pa.array([True] * n, pa.bool_()),
        "invocations": pa.array([r[2] for r in rows], pa.int64()),
        "failures": pa.array([r[3] for r in rows], pa.int64()),
        "errno_counts": pa.array([r[4] for r in rows], ERRNO_COUNTS_TYPE),
        "lost_records": pa.array([0] * n, pa.int64()),
    })


_MIDNIGHT_S = MIDNIGHT.timestamp()


def _date(t: float) -> str:
    """The UTC date of a time of the window (which crosses one midnight)."""
    return "2026-03-28" if t < _MIDNIGHT_S else "2026-03-29"


def _iso(t) -> str:
    if isinstance(t, dt.datetime):
        return t.isoformat()
    return dt.datetime.fromtimestamp(t, UTC).isoformat()


def generate(root, *, seed: int = 55) -> dict:
    """Write the fleet into `root` (a dataset: events, counters, counter_buckets, truth) and return
    its summary (JSON-able)."""
    from pathlib import Path

    root = Path(root)
    rng = random.Random(seed)
    machines = _machines(rng)
    tab = Tables()
    jobs_counter = [881000]
    lost_to_reset: dict[str, dict[str, int]] = {}
    counter_files: dict[str, list[str]] = defaultdict(list)
    shuffled_rows = 0
    for m in machines:
        calls = _jobs(rng, m, jobs_counter)
        start = m.start.timestamp()
        n_snap = int(round((m.end.timestamp() - start) / SNAP_S))
        inv = np.zeros((n_snap, len(PROBES)), np.int64)
        err = np.zeros((n_snap, len(PAIRS)), np.int64)
        per_snap: dict[tuple[int, str], int] = defaultdict(int)
        for at, pid, ppid, comm, job, tree in sorted(calls):
            s = int((at - start) // SNAP_S)
            if s >= n_snap:
                continue
            per_snap[(s, tree)] += 1
            if tree not in FAILING and not m.in_window(at):
                continue
            late = m.name == LATE_HOST and LATE_FROM.timestamp() <= at < LATE_TO.timestamp()
            _record(tab, m, at, pid, ppid, comm, job, tree, late=late)
        for (s, tree), k in per_snap.items():
            inv[s] += k * VECTORS[tree][0]
            err[s] += k * VECTORS[tree][1]
        # the GID monitor: a scan of 32 entries every 30 s, 24 of them empty
        agent_pid = m.pid_base - 17
        gi, ge = VECTORS["query_gid"]
        ei, ee = VECTORS["query_gid_empty"]
        t = start + rng.uniform(1, 29)
        while t < m.end.timestamp() - 1:
            s = int((t - start) // SNAP_S)
            inv[s] += 8 * gi + 24 * ei
            err[s] += 8 * ge + 24 * ee
            late = m.name == LATE_HOST and LATE_FROM.timestamp() <= t < LATE_TO.timestamp()
            _record(tab, m, t, agent_pid, 1, "gid-monitor", None, "query_gid_empty", repeat=24, late=late)
            if m.in_window(t):
                for i in range(8):
                    _record(tab, m, t + 0.01 * (i + 1), agent_pid, 1, "gid-monitor", None, "query_gid", late=late)
            t += 30
        rows, lost = _counter_rows(m, inv, err, cumulative_reset=RESETS[m.name].timestamp() if m.name in RESETS else None)
        if lost:
            lost_to_reset[m.name] = lost
        for name, host_rows in rows.items():
            by_part = defaultdict(list)
            for r in host_rows:
                date = _date(r[0])
                late = name == LATE_HOST and LATE_FROM.timestamp() < r[0] <= LATE_TO.timestamp()
                by_part[(date, "part-0001-late.parquet" if late else f"part-{m.index:04d}.parquet")].append(r)
            for (date, part), prow in by_part.items():
                if part.endswith("late.parquet"):
                    prow = sorted(prow, key=lambda r: -r[0])  # newest first
                elif name == LATE_HOST:
                    block = [i for i, r in enumerate(prow) if SHUFFLED_FROM.timestamp() < r[0] <= SHUFFLED_TO.timestamp()]
                    if block:
                        moved = [prow[i] for i in block]
                        rng.shuffle(moved)
                        for i, r in zip(block, moved, strict=True):
                            prow[i] = r
                        shuffled_rows = len(block)
                path = write_partition(_counters_table(m, name, prow), root, "counters", date, name, part, durable=False)
                write_counter_buckets(path, durable=False)
                counter_files[name].append(str(path.relative_to(root)))
    n_records = 0
    for (host, date, part), ev in tab.ev.items():
        n_records += len(set(ev["trace_id"]))
        write_partition(_events_table(ev), root, "events", date, host, part, durable=False)
    for (host, date), tr in tab.truth.items():
        table = pa.table({
            "trace_id": pa.array(tr["trace_id"], pa.string()),
            "kind": pa.array(tr["kind"], pa.string()),
            "root_cause": pa.array(tr["root_cause"], pa.string()),
            "bifurcation_probe": pa.array(tr["bifurcation_probe"], pa.string()),
            "bifurcation_errno": pa.array(tr["bifurcation_errno"], pa.string()),
            "origin_layer": pa.array(tr["origin_layer"], pa.string()),
            "expected_error": pa.array(tr["expected_error"], pa.bool_()),
            "held_out": pa.array(tr["held_out"], pa.bool_()),
        })
        write_partition(table, root, "truth", date, host, "part-0000.parquet", durable=False)
    return {
        "seed": seed,
        "hosts": HOSTS,
        "machines": len(MACHINES),
        "records": n_records,
        "lost_to_reset": lost_to_reset,
        "shuffled_rows": shuffled_rows,
        "counter_files": dict(counter_files),
        "times": {"start": _iso(T0), "end": _iso(T1), "rename": _iso(RENAME_AT),
                  "decommissioned": _iso(DECOMMISSIONED_AT), "reimaged": _iso(REIMAGED_AT),
                  "fw_from": _iso(FW_FROM), "fw_to": _iso(FW_TO),
                  **{f"update_{h}": _iso(t) for h, t in PEERMEM_UPDATE.items()},
                  **{f"reset_{h}": _iso(t) for h, t in RESETS.items()}},
        "skew_s": SKEW,
    }

"""fleetgen64's fleet: successful calls that absorb an error first, as the real tracer records them.

Written blind (reference/rdma_control_path.yaml, tracer/schema.py, README.md,
docs/architecture.md, tests/fleet_harness.py, bpf/calltree.c for what the fleet tracer emits, the
other generators' docstrings); it imports only tracer.schema's writers.

The reference behind it (four "rescued" success shapes: a failing frame the operation absorbs)
---------------------------------------------------------------------------------------------
R1 gpu_mr_peer_rescue (reg_mr): gpu_direct_trace_shape "ib_uverbs_reg_mr -> mlx5_ib_reg_user_mr ->
   ib_umem_get_peer -> __ib_umem_get [pin_user_pages_fast returns -EFAULT] -> ib_peer_umem_get ->
   (ib_get_peer_client, ...) -> create_real_mr -> reg_create (peer umems skip the mkey cache) ->
   mlx5r_umr_update_mr_pas -> ib_umem_activate_invalidation_notifier"; __ib_umem_release on the GUP
   failure ("GUP/sg/dma failure").
R2 gpu_queue_peer_rescue (create_qp): ib_umem_get_peer: "mlx5 calls it for MR (INVAL_SUPP), CQ
   buffer, QP buffer and doorbell page (flags 0)"; ib_peer_umem_get "reg_mr/CQ/QP/doorbell all pass
   ALLOW": a QP whose SQ/RQ buffer lives in GPU memory (GPU-initiated networking) is pinned the same
   way under _create_user_qp: the pin's EFAULT, then the peer client takes the range.
R3 counter_bind_ignored (modify_qp RESET->INIT): rdma_counter_bind_qp_auto "returns -ENOMEM when
   alloc_and_bind returned NULL"; mlx5_ib_counter_bind_qp's ALLOC_Q_COUNTER firmware command
   (mlx5_cmd_exec) fails NO_RES -> -EAGAIN (errno_conventions); _ib_modify_qp: "the
   rdma_counter_bind_qp_auto result is ignored": the transition goes on and succeeds.
R4 gid_ndev_tolerated (query_gid, opt-in read-only probe set): rdma_read_gid_attr_ndev_rcu "-ENODEV
   tolerated (ifindex stays 0); any other error is returned" -- "-ENODEV when GID entry has no
   netdev": the GID entries of an InfiniBand-link port.

The faults
  (a) inside two rescued shapes, the fallback itself failing and the call with it:
      A1 peer_client_inval_required (create_qp): ib_get_peer_client "skips invalidation-required
         clients unless IB_PEER_MEM_INVAL_SUPP": the QP buffer path passes flags 0, so when the peer
         client module re-registers as invalidation-required, no client claims a GPU queue buffer and
         ib_peer_umem_get returns "<original GUP errno, usually -EFAULT>"; create_qp fails EFAULT.
         reg_mr passes INVAL_SUPP and is unaffected.
      A2 peer_get_pages_enomem (reg_mr): ib_peer_umem_get "<peer get_pages/dma_map errno> when the
         peer client (e.g. nvidia-peermem) fails": the GPU's BAR1 aperture exhausted, get_pages fails
         -ENOMEM; reg_mr fails ENOMEM.
      A3 peer_mr_mkey_lim_err (reg_mr), past the fallback: the peer client took the GPU buffer, then
         create_real_mr -> reg_create ("peer umems skip the mkey cache") -> mlx5_ib_create_mkey ->
         mlx5_cmd_exec's CREATE_MKEY is refused LIM_ERR -> -ENOMEM: every edge down to it is one only
         the rescued R1 calls run (host buffers take alloc_cacheable_mr).
  (b) the same frame a rescued shape absorbs, returned: B rst2init_no_res (modify_qp RESET->INIT):
      the RST2INIT firmware command itself (mlx5_core_qp_modify -> mlx5_cmd_exec) fails NO_RES ->
      -EAGAIN, the errno and probe R3 absorbs, and _ib_modify_qp returns it.

MODELLING ASSUMPTIONS beyond the reference
  - fexit probes on the functions of PROBES only ("rdma-deep": the rdma and rdma-queries sets plus
    the reference's helpers below them); a frame's depth counts probed callers only (a static frame
    not probed -- modify_qp, ib_modify_qp_with_udata, ib_security_modify_qp, the three create_qp's,
    create_user_qp, alloc_and_bind (a NULL-returning pointer), rdma_fill_sgid_attr (inlined) -- is
    absent and its callees move up); every tree fits the program's limits (16 frames, 8 levels);
  - the fleet's GPU-queue library's peer client registers without invalidation (its QP buffers are
    claimed with flags 0) until A1's module update on a host;
  - in AUTO counter mode with a per-process criterion, a rank whose host's Q counters are exhausted
    (COUNTER_EXHAUSTED_P of ranks, every host) has the ALLOC_Q_COUNTER of every RESET->INIT refused;
    the other ranks bind to their counter (__rdma_counter_bind_qp -> mlx5_ib_counter_bind_qp, no
    firmware command: QP still in RESET);
  - nvidia-peermem's get_pages failing on an exhausted BAR1 returns -ENOMEM (the reference names
    no errno for "peer get_pages ... fails"); ib_get_peer_client returns a pointer (no errno);
  - an RST2INIT refused NO_RES on a degraded firmware (B hosts) fails every RESET->INIT there.

The tracer it imitates (bpf/calltree.c, tracer/fleet)
  `tracer run rdma-deep -i 30s --good-every 7m --good-window 60s --sample 1`: a failing call tree
  (any frame failed, the root's own result aside) is sent as kind 'failure'; per 30 s snapshot
  interval each signature (frames, depths, failed frames' returns) sends its first K=4 trees, the
  first of them standing for the rest (repeat_count), the others 1; a tree with no failing frame is
  sent (kind 'good', repeat_count null) only when its root entered in a capture window (60 s every
  7 minutes, each host its own offset) and returned within 50 ms. Trees whose root entered in a
  window are timed (ts_ns per frame, latency_ns); the others carry the tick (4 ms) the root returned
  in as every frame's ts_ns and as start_time = end_time, latency_ns null. Counters per probe are
  exact (every call, aggregated or not).

The process model
-----------------
24 mlx5 RoCE GPU hosts (gpu-01 .. gpu-24, MLNX_OFED 24.07, one kernel release) over 00:00-06:00 UTC,
every process `python3`. Every host starts a job every 8 minutes (+-30 s): 4 ranks, 250 ms apart. A
rank: 4 GID queries (2 RoCE entries clean, 2 entries of the IB storage port: R4), create_cq, a
host-queue create_qp, a GPU-queue create_qp (R2), reg_mr of a host buffer, two GPU reg_mr (R1), then
per QP RESET->INIT (R3 for an exhausted-counter rank), INIT->RTR, RTR->RTS. A rank whose call fails
dies (its failing call its last); a job with a dead rank is relaunched 2 minutes later, at most 3
attempts.
  A1 on A1_HOSTS from each host's module update (A1_SINCE) on: every GPU-queue create_qp fails.
  A2 on A2_HOSTS from A2_SINCE: A2_P of the GPU reg_mr fail.
  A3 on A3_HOSTS from A3_SINCE: A3_P of the GPU reg_mr fail at the mkey.
  B on B_HOSTS from B_SINCE: every RESET->INIT fails (with R3's absorbed chain first for an
     exhausted-counter rank).
The control (generate(faults=False)): the same schedule, no fault. generate(moved_b=True): the same
schedule with B alone, on MOVED_B_HOSTS (another day's hosts, for a learned list carried over).

The truth (README.md and docs/architecture.md are the standard): every record of a routine family
is routine (expected_error true); every record of a fault is the fault's (expected_error false),
the absorbed errors inside it included; the bifurcation is the first frame no successful call of the
operation makes -- successful calls include the rescued ones -- which for each fault is its origin:
ib_peer_umem_get EFAULT (A1), ib_peer_umem_get ENOMEM (A2), mlx5_cmd_exec ENOMEM (A3),
mlx5_cmd_exec EAGAIN (B).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from tracer.schema import metadata_list, polars_schema, write_counter_buckets, write_partition

DAY = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
DATE = DAY.date().isoformat()
START, END = DAY, DAY + dt.timedelta(hours=6)
RELEASE = "5.15.0-126-generic"
HOSTS = [f"gpu-{i:02d}" for i in range(1, 25)]
SNAPSHOT_S = 30
K = 4  # examples per signature per snapshot interval
WINDOW_EVERY = dt.timedelta(minutes=7)
WINDOW_LEN = dt.timedelta(seconds=60)
TICK_NS = 4_000_000
JOB_EVERY_S = 480
ATTEMPTS = 3
COUNTER_EXHAUSTED_P = 0.5
TENANTS = {"heron": ["heron-pretrain", "heron-eval"], "osprey": ["osprey-rl"], "wren": ["wren-infer"]}

A1_HOSTS = {"gpu-05": DAY + dt.timedelta(hours=1, minutes=40), "gpu-13": DAY + dt.timedelta(hours=2, minutes=20),
            "gpu-21": DAY + dt.timedelta(hours=3)}
A2_HOSTS = {"gpu-08": DAY + dt.timedelta(hours=2, minutes=30), "gpu-16": DAY + dt.timedelta(hours=2, minutes=30)}
A2_P = 0.7
B_HOSTS = {"gpu-03": DAY + dt.timedelta(hours=1, minutes=15), "gpu-19": DAY + dt.timedelta(hours=1, minutes=15)}
MOVED_B_HOSTS = {"gpu-07": B_HOSTS["gpu-03"], "gpu-11": B_HOSTS["gpu-03"]}
A3_HOSTS = {"gpu-10": DAY + dt.timedelta(hours=3, minutes=30), "gpu-23": DAY + dt.timedelta(hours=3, minutes=30)}
A3_P = 0.6

FAMILIES = {  # key -> (operation, origin probe, errno, origin layer)
    "gpu_mr_peer_rescue": ("reg_mr", "pin_user_pages_fast", "EFAULT", "core"),
    "gpu_queue_peer_rescue": ("create_qp", "pin_user_pages_fast", "EFAULT", "core"),
    "counter_bind_ignored": ("modify_qp", "mlx5_cmd_exec", "EAGAIN", "driver"),
    "gid_ndev_tolerated": ("query_gid", "rdma_read_gid_attr_ndev_rcu", "ENODEV", "core"),
    "peer_client_inval_required": ("create_qp", "ib_peer_umem_get", "EFAULT", "peer-mem"),
    "peer_get_pages_enomem": ("reg_mr", "ib_peer_umem_get", "ENOMEM", "peer-mem"),
    "rst2init_no_res": ("modify_qp", "mlx5_cmd_exec", "EAGAIN", "driver"),
    "peer_mr_mkey_lim_err": ("reg_mr", "mlx5_cmd_exec", "ENOMEM", "driver"),
}
ROUTINE = ("gpu_mr_peer_rescue", "gpu_queue_peer_rescue", "counter_bind_ignored", "gid_ndev_tolerated")
ROOT_CAUSES = ("peer_client_inval_required", "peer_get_pages_enomem", "rst2init_no_res", "peer_mr_mkey_lim_err")
FAULT_HOSTS = {"peer_client_inval_required": A1_HOSTS, "peer_get_pages_enomem": A2_HOSTS, "rst2init_no_res": B_HOSTS,
               "peer_mr_mkey_lim_err": A3_HOSTS}

LAYER = {
    "ib_uverbs_reg_mr": "uverbs", "ib_uverbs_create_qp": "uverbs", "ib_uverbs_modify_qp": "uverbs",
    "ib_uverbs_create_cq": "uverbs", "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs",
    "mlx5_ib_reg_user_mr": "driver", "mlx5_ib_create_qp": "driver", "mlx5_ib_create_cq": "driver",
    "mlx5_ib_modify_qp": "driver", "create_real_mr": "driver", "alloc_cacheable_mr": "driver", "reg_create": "driver",
    "mlx5_ib_create_mkey": "driver", "mlx5r_umr_update_mr_pas": "driver", "mlx5_ib_db_map_user": "driver",
    "mlx5_qpc_create_qp": "driver", "mlx5_core_create_cq": "driver", "mlx5_cmd_exec": "driver",
    "mlx5_core_qp_modify": "driver", "mlx5_ib_counter_bind_qp": "driver",
    "ib_umem_get_peer": "core", "__ib_umem_get": "core", "pin_user_pages_fast": "core", "__ib_umem_release": "core",
    "_ib_modify_qp": "core", "rdma_counter_bind_qp_auto": "core", "__rdma_counter_bind_qp": "core",
    "rdma_get_gid_attr": "core", "rdma_read_gid_attr_ndev_rcu": "core", "rdma_put_gid_attr": "core",
    "rdma_alloc_abort_uobject": "core", "rdma_restrack_add": "core",
    "ib_peer_umem_get": "peer-mem", "ib_get_peer_client": "peer-mem", "ib_umem_activate_invalidation_notifier": "peer-mem",
}
PROBES = sorted(LAYER)
ROOT_OPERATION = {"ib_uverbs_reg_mr": "reg_mr", "ib_uverbs_create_qp": "create_qp", "ib_uverbs_modify_qp": "modify_qp",
                  "ib_uverbs_create_cq": "create_cq", "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "query_gid"}

_F, _M, _A, _N = "EFAULT", "ENOMEM", "EAGAIN", "ENODEV"
ERRNO_NUM = {"EFAULT": 14, "ENOMEM": 12, "EAGAIN": 11, "ENODEV": 19}


def _ok(frames):
    return [(d, fn, None) for d, fn in frames]


def _pin(d: int):
    return _ok([(d, "ib_umem_get_peer"), (d + 1, "__ib_umem_get"), (d + 2, "pin_user_pages_fast")])


def _pin_then_peer(d: int, errno=None, peer_errno=None):
    """ib_umem_get_peer of GPU memory at depth d: the pin's EFAULT, its cleanup, the peer client
    (errno: ib_umem_get_peer/__ib_umem_get's; peer_errno: ib_peer_umem_get's)."""
    return [(d, "ib_umem_get_peer", errno), (d + 1, "__ib_umem_get", errno), (d + 2, "pin_user_pages_fast", _F),
            (d + 2, "__ib_umem_release", None), (d + 2, "ib_peer_umem_get", peer_errno),
            (d + 3, "ib_get_peer_client", None)]


_GID = "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"
_GID_ROCE = _ok([(0, _GID), (1, "rdma_get_gid_attr"), (1, "rdma_read_gid_attr_ndev_rcu"), (1, "rdma_put_gid_attr")])
_GID_IB = [(0, _GID, None), (1, "rdma_get_gid_attr", None), (1, "rdma_read_gid_attr_ndev_rcu", _N),
           (1, "rdma_put_gid_attr", None)]
_CQ = _ok([(0, "ib_uverbs_create_cq"), (1, "mlx5_ib_create_cq")]) + _pin(2) + \
    _ok([(2, "mlx5_ib_db_map_user"), (2, "mlx5_core_create_cq"), (1, "rdma_restrack_add")])
_QP_TAIL = _ok([(2, "mlx5_ib_db_map_user"), (2, "mlx5_qpc_create_qp"), (3, "mlx5_cmd_exec"), (1, "rdma_restrack_add")])
_QP_HOST = _ok([(0, "ib_uverbs_create_qp"), (1, "mlx5_ib_create_qp")]) + _pin(2) + _QP_TAIL
_QP_GPU = _ok([(0, "ib_uverbs_create_qp"), (1, "mlx5_ib_create_qp")]) + _pin_then_peer(2) + _QP_TAIL
_QP_GPU_NOCLIENT = [(0, "ib_uverbs_create_qp", _F), (1, "mlx5_ib_create_qp", _F)] + _pin_then_peer(2, _F, _F) + \
    _ok([(1, "rdma_alloc_abort_uobject")])
_MR_HOST = _ok([(0, "ib_uverbs_reg_mr"), (1, "mlx5_ib_reg_user_mr")]) + _pin(2) + \
    _ok([(2, "create_real_mr"), (3, "alloc_cacheable_mr"), (3, "mlx5r_umr_update_mr_pas"), (1, "rdma_restrack_add")])
_MR_GPU = _ok([(0, "ib_uverbs_reg_mr"), (1, "mlx5_ib_reg_user_mr")]) + _pin_then_peer(2) + \
    _ok([(2, "create_real_mr"), (3, "reg_create"), (4, "mlx5_ib_create_mkey"), (5, "mlx5_cmd_exec"),
         (3, "mlx5r_umr_update_mr_pas"), (3, "ib_umem_activate_invalidation_notifier"), (1, "rdma_restrack_add")])
# the peer client took the buffer, then the firmware refuses the mkey (CREATE_MKEY LIM_ERR -> -ENOMEM)
_MR_GPU_MKEY = [(0, "ib_uverbs_reg_mr", _M), (1, "mlx5_ib_reg_user_mr", _M)] + _pin_then_peer(2) + \
    [(2, "create_real_mr", _M), (3, "reg_create", _M), (4, "mlx5_ib_create_mkey", _M), (5, "mlx5_cmd_exec", _M),
     (1, "rdma_alloc_abort_uobject", None)]
_MR_GPU_ENOMEM = [(0, "ib_uverbs_reg_mr", _M), (1, "mlx5_ib_reg_user_mr", _M)] + _pin_then_peer(2, _M, _M) + \
    _ok([(1, "rdma_alloc_abort_uobject")])
_MOD = [(0, "ib_uverbs_modify_qp", None), (1, "_ib_modify_qp", None)]
_FW = _ok([(2, "mlx5_ib_modify_qp"), (3, "mlx5_core_qp_modify"), (4, "mlx5_cmd_exec")])
_BIND_OK = _ok([(2, "rdma_counter_bind_qp_auto"), (3, "__rdma_counter_bind_qp"), (4, "mlx5_ib_counter_bind_qp")])
_BIND_REFUSED = [(2, "rdma_counter_bind_qp_auto", _M), (3, "__rdma_counter_bind_qp", _A),
                 (4, "mlx5_ib_counter_bind_qp", _A), (5, "mlx5_cmd_exec", _A)]
_FW_NO_RES = [(0, "ib_uverbs_modify_qp", _A), (1, "_ib_modify_qp", _A)]
_FW_FAIL = [(2, "mlx5_ib_modify_qp", _A), (3, "mlx5_core_qp_modify", _A), (4, "mlx5_cmd_exec", _A)]

# name -> (operation, argument, frames of (depth, function, errno))
TREES = {
    "gid_roce": ("query_gid", None, _GID_ROCE),
    "gid_ib": ("query_gid", None, _GID_IB),
    "create_cq": ("create_cq", None, _CQ),
    "qp_host": ("create_qp", "RC", _QP_HOST),
    "qp_gpu": ("create_qp", "RC", _QP_GPU),
    "qp_gpu_noclient": ("create_qp", "RC", _QP_GPU_NOCLIENT),
    "mr_host": ("reg_mr", None, _MR_HOST),
    "mr_gpu": ("reg_mr", None, _MR_GPU),
    "mr_gpu_enomem": ("reg_mr", None, _MR_GPU_ENOMEM),
    "mr_gpu_mkey": ("reg_mr", None, _MR_GPU_MKEY),
    "reset_init": ("modify_qp", "RESET->INIT", _MOD + _BIND_OK + _FW),
    "reset_init_unbound": ("modify_qp", "RESET->INIT", _MOD + _BIND_REFUSED + _FW),
    "reset_init_no_res": ("modify_qp", "RESET->INIT", _FW_NO_RES + _BIND_OK + _FW_FAIL),
    "reset_init_unbound_no_res": ("modify_qp", "RESET->INIT", _FW_NO_RES + _BIND_REFUSED + _FW_FAIL),
    "init_rtr": ("modify_qp", "INIT->RTR", _MOD + _ok([(2, "rdma_get_gid_attr")]) + _FW),
    "rtr_rts": ("modify_qp", "RTR->RTS", _MOD + _FW),
}
TREE_FAMILY = {"gid_ib": "gid_ndev_tolerated", "qp_gpu": "gpu_queue_peer_rescue",
               "qp_gpu_noclient": "peer_client_inval_required", "mr_gpu": "gpu_mr_peer_rescue",
               "mr_gpu_enomem": "peer_get_pages_enomem", "mr_gpu_mkey": "peer_mr_mkey_lim_err",
               "reset_init_unbound": "counter_bind_ignored",
               "reset_init_no_res": "rst2init_no_res", "reset_init_unbound_no_res": "rst2init_no_res"}
RESCUED = ("gid_ib", "qp_gpu", "mr_gpu", "reset_init_unbound")


def _snapshots() -> list[dt.datetime]:
    out, t = [], START + dt.timedelta(seconds=SNAPSHOT_S)
    while t <= END:
        out.append(t)
        t += dt.timedelta(seconds=SNAPSHOT_S)
    return out


class _Host:
    def __init__(self, host: str, rng: np.random.Generator, fault_hosts: dict):
        self.host, self.rng, self.fault_hosts = host, rng, fault_hosts
        self.boot = DAY - dt.timedelta(days=3, seconds=int(rng.integers(0, 86400)))
        self.boot_id = f"{int(rng.integers(1 << 30)):08x}"
        self.next_pid = int(rng.integers(20000, 40000))
        self.window_offset = dt.timedelta(seconds=int(rng.integers(0, 420)))
        self.calls: list[tuple] = []  # (entry time, latency ns, tree, pid, ppid, job, meta)

    def pid(self) -> int:
        self.next_pid += int(self.rng.integers(3, 40))
        return self.next_pid

    def fault(self, cause: str, t: dt.datetime) -> bool:
        hosts = self.fault_hosts.get(cause, {})
        return self.host in hosts and t >= hosts[self.host]

    def in_window(self, t: dt.datetime) -> bool:
        since = (t - START - self.window_offset)
        return since >= dt.timedelta(0) and since % WINDOW_EVERY < WINDOW_LEN

    def call(self, t, tree, pid, ppid, job, meta) -> bool:
        """One call; False when it failed (its root)."""
        latency = int(self.rng.integers(30_000, 900_000))
        self.calls.append((t, latency, tree, pid, ppid, job, meta))
        return TREES[tree][2][0][2] is None

    def rank(self, t: dt.datetime, job: str, meta: dict, ppid: int) -> bool:
        pid, rng = self.pid(), self.rng
        exhausted = bool(rng.random() < COUNTER_EXHAUSTED_P)
        step = lambda: dt.timedelta(milliseconds=int(rng.integers(20, 120)))  # noqa: E731
        plan = ["gid_roce", "gid_ib", "gid_roce", "gid_ib", "create_cq", "qp_host", "qp_gpu", "mr_host",
                "mr_gpu", "mr_gpu"] + ["reset_init", "init_rtr", "rtr_rts"] * 2
        for tree in plan:
            t += step()
            if tree == "qp_gpu" and self.fault("peer_client_inval_required", t):
                tree = "qp_gpu_noclient"
            elif tree == "mr_gpu" and self.fault("peer_get_pages_enomem", t) and rng.random() < A2_P:
                tree = "mr_gpu_enomem"
            elif tree == "mr_gpu" and self.fault("peer_mr_mkey_lim_err", t) and rng.random() < A3_P:
                tree = "mr_gpu_mkey"
            elif tree == "reset_init":
                no_res = self.fault("rst2init_no_res", t)
                tree = {(False, False): "reset_init", (True, False): "reset_init_unbound",
                        (False, True): "reset_init_no_res", (True, True): "reset_init_unbound_no_res"}[(exhausted, no_res)]
            if not self.call(t, tree, pid, ppid, job, meta):
                return False
        return True

    def job(self, t: dt.datetime, job: str, tenant: str, name: str) -> None:
        for attempt in range(ATTEMPTS):
            meta = {"tenant": tenant, "job_name": name, "slurm_restart_count": str(attempt), "ofed": "24.07-0.6.0.1"}
            launcher, ok = self.pid(), True
            for r in range(4):
                ok &= self.rank(t + dt.timedelta(milliseconds=250 * r + int(self.rng.integers(0, 100))), job, meta,
                                launcher)
            if ok:
                return
            t += dt.timedelta(minutes=2)


def _records(h: _Host, snap_ns: np.ndarray):
    """What the tracer sends of the host's calls: (events columns, truth rows)."""
    rng = h.rng
    ev: dict[str, list] = {k: [] for k in (
        "trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret", "errno",
        "latency_ns", "arg", "kind", "command", "exit_status", "start_time", "end_time", "job_id", "metadata",
        "repeat_count")}
    truth: list[dict] = []
    seq = int(rng.integers(1 << 20, 1 << 30))
    calls = sorted(h.calls, key=lambda c: (c[0], c[3]))
    end_ns = np.array([int(c[0].timestamp() * 1e9) + c[1] for c in calls], dtype=np.int64)
    interval = np.searchsorted(snap_ns, end_ns, side="left")
    examples: dict[tuple[int, str], list[int]] = {}  # (interval, signature) -> rows of `chosen`
    chosen: list[tuple[int, int]] = []  # (call index, repeat_count)
    for i, (t, _lat, tree, *_rest) in enumerate(calls):
        frames = TREES[tree][2]
        failing = any(e for _, _, e in frames)
        if failing:
            key = (int(interval[i]), tree)  # the signature: one per tree name (frames, depths, returns)
            rows = examples.setdefault(key, [])
            if len(rows) < K:
                rows.append(len(chosen))
                chosen.append((i, 1))
            else:
                j = rows[0]
                chosen[j] = (chosen[j][0], chosen[j][1] + 1)
        elif h.in_window(t):
            chosen.append((i, -1))  # a good trace: timed, under the latency bound, sample 1 in 1
    boot_ns = int(h.boot.timestamp() * 1e9)
    for i, repeat in chosen:
        t, lat, tree, pid, ppid, job, meta = calls[i]
        op, arg, frames = TREES[tree]
        failing = repeat > 0
        timed = h.in_window(t)
        seq += int(rng.integers(1, 4))
        tid = f"{h.host}:{h.boot_id}:{pid}:{seq}"
        start_ns = int(t.timestamp() * 1e9)
        if timed:
            start, end = t, t + dt.timedelta(microseconds=lat // 1000)
        else:
            tick = (start_ns + lat) // TICK_NS * TICK_NS
            start = end = dt.datetime.fromtimestamp(tick / 1e9, dt.UTC)
            tick_mono = tick - boot_ns
        root_errno = frames[0][2]
        md = metadata_list(meta)
        for s, (depth, fn, errno) in enumerate(frames):
            ev["trace_id"].append(tid)
            ev["seq"].append(s)
            ev["ts_ns"].append(start_ns - boot_ns + s * 3000 if timed else tick_mono)
            ev["pid"].append(pid)
            ev["tid"].append(pid)
            ev["ppid"].append(ppid)
            ev["comm"].append("python3")
            ev["probe"].append(fn)
            ev["layer"].append(LAYER[fn])
            ev["depth"].append(depth)
            ev["ret"].append(-ERRNO_NUM[errno] if errno else 0)
            ev["errno"].append(errno)
            ev["latency_ns"].append(max(1000, lat // (depth + 1) - s * 500) if timed else None)
            ev["arg"].append(arg if depth == 0 else None)
            ev["kind"].append("failure" if failing else "good")
            ev["command"].append(op)
            ev["exit_status"].append(-ERRNO_NUM[root_errno] if root_errno else 0)
            ev["start_time"].append(start)
            ev["end_time"].append(end)
            ev["job_id"].append(job)
            ev["metadata"].append(md)
            ev["repeat_count"].append(repeat if failing else None)
        family = TREE_FAMILY.get(tree) if failing else None
        fam = FAMILIES[family] if family else None
        truth.append({
            "trace_id": tid, "kind": "failure" if failing else "good", "root_cause": family,
            "bifurcation_probe": fam[1] if fam else None, "bifurcation_errno": fam[2] if fam else None,
            "origin_layer": fam[3] if fam else None, "expected_error": (family in ROUTINE) if family else None,
            "held_out": (not failing) and bool(rng.random() < 0.15),
        })
    return ev, truth


def generate(root, seed: int = 64, faults: bool = True, moved_b: bool = False, **_shape) -> dict:
    """The fleet into `root`; `faults=False`: the control, the same schedule, no fault;
    `moved_b=True`: the same schedule with (b) alone, on MOVED_B_HOSTS (from the same time)."""
    from pathlib import Path

    root = Path(root)
    rng = np.random.default_rng(seed)
    fault_hosts = {"rst2init_no_res": MOVED_B_HOSTS} if moved_b else FAULT_HOSTS if faults else {}
    hosts = {h: _Host(h, np.random.default_rng([seed, i]), fault_hosts) for i, h in enumerate(HOSTS)}
    job_counter = [8_400_000]
    offsets = {h: int(rng.integers(30, JOB_EVERY_S)) for h in HOSTS}
    for name, h in hosts.items():
        k = 0
        while True:
            t = START + dt.timedelta(seconds=offsets[name] + k * JOB_EVERY_S + int(rng.integers(-30, 31)))
            k += 1
            if t >= END - dt.timedelta(minutes=8):
                break
            tenant = str(rng.choice(list(TENANTS)))
            job_counter[0] += int(rng.integers(1, 30))
            h.job(t, str(job_counter[0]), tenant, str(rng.choice(TENANTS[tenant])))
    snaps = _snapshots()
    snap_ns = np.array([int(s.timestamp() * 1e9) for s in snaps], dtype=np.int64)
    ev_schema = polars_schema("events")
    records = calls = 0
    for name, h in hosts.items():
        ev, truth_rows = _records(h, snap_ns)
        df = pl.DataFrame(ev, schema_overrides={"start_time": pl.Datetime("us", "UTC"),
                                                "end_time": pl.Datetime("us", "UTC")}, strict=False)
        df = df.with_columns(pl.lit(name).alias("host"), pl.lit(RELEASE).alias("kernel_release"),
                             pl.lit(0, pl.Int64).alias("lost_events"), pl.lit(None, pl.String).alias("path"),
                             pl.lit(None, pl.String).alias("path2"), pl.lit(None, pl.String).alias("output"))
        df = df.select([pl.col(c).cast(ev_schema[c]) for c in ev_schema.names()]).sort("start_time", "trace_id", "seq")
        write_partition(df, root, "events", DATE, name, "part-00000.parquet", durable=False)
        truth = pl.DataFrame(truth_rows, infer_schema_length=None).with_columns(pl.lit(name).alias("host"))
        truth = truth.select([pl.col(c).cast(t) for c, t in polars_schema("truth").items()])
        write_partition(truth, root, "truth", DATE, name, "part-00000.parquet", durable=False)
        records += truth.height
        calls += len(h.calls)
        _write_counters(root, name, h, snaps, snap_ns)
    return {"hosts": list(HOSTS), "records": records, "calls": calls, "faults": sorted(fault_hosts)}


def _write_counters(root, name: str, h: _Host, snaps, snap_ns) -> None:
    """The host's exact counters, one file an hour."""
    ends = np.array([int(c[0].timestamp() * 1e9) + c[1] for c in h.calls], dtype=np.int64)
    idx = np.searchsorted(snap_ns, ends, side="left")  # the interval the call returned in
    rows = []
    for i, c in zip(idx, h.calls, strict=True):
        for _, fn, errno in TREES[c[2]][2]:
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
        pl.lit("mlx5").alias("vendor"), pl.lit("rdma-deep").alias("probe_set"),
        pl.col("probe").replace_strict(LAYER).alias("layer"), pl.lit(True).alias("live"),
        pl.lit(0, pl.Int64).alias("lost_records"))
    schema = polars_schema("counters")
    c = c.select([pl.col(col).cast(t) for col, t in schema.items()]).sort("snapshot_time", "probe")
    for hour in range(6):
        lo, hi = START + dt.timedelta(hours=hour), START + dt.timedelta(hours=hour + 1)
        part = c.filter((pl.col("snapshot_time") > lo) & (pl.col("snapshot_time") <= hi))
        path = write_partition(part, root, "counters", DATE, name, f"part-{hour:05d}.parquet", durable=False)
        write_counter_buckets(path, durable=False)

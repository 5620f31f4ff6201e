"""fleetgen66's fleet: the reference's deepest control-path chains, recorded by a tracer whose limits
cut them.

Written blind (reference/rdma_control_path.yaml, tracer/schema.py, README.md,
docs/architecture.md, tests/fleet_harness.py, bpf/calltree.c for what the fleet tracer emits at its
limits, the other generators' docstrings); it imports only tracer.schema's writers.

The tracer it imitates (bpf/calltree.c)
---------------------------------------
`tracer run rdma-full -i 30s --good-every 7m --good-window 60s`: fexit on every function of PROBES,
statics included (a tracer "on every function", as the reference's meta_rdmatracer note puts it;
the three functions named create_qp and the uverbs modify_qp helper aside, ambiguous symbols, so
their callees move up one level). Per thread a tree of one top-level call; push_frame keeps a frame
only while fewer than MAX_FRAMES = 16 frames are kept, its nesting level is below MAX_DEPTH = 8 and
no enclosing frame was skipped; every frame not kept adds one to `truncated` (the record's
`lost_events`). A skipped frame that fails still marks the tree failed (exit_frame: `t->failed = 1`)
-- its failure shows only through a kept caller that returns it, or not at all. The counters count
every return, kept or not (count_call before exit_frame). A failed tree is kind 'failure' (first
K = 4 per signature -- kept frames, depths, failed frames' returns, the truncated bit -- per 30 s
interval, the first standing for the rest); a tree with no failure is kind 'good' only when its root
entered in a capture window (60 s every 7 min). Untimed records carry the root's return tick.

The chains (reference, operations.*.tree and ofed_peer_memory)
--------------------------------------------------------------
create_qp (write ABI): 16 frames of handle lookups and mlx5_ib_create_qp's checks come before
  create_user_qp, so the buffer pin, the doorbell and the CREATE_QP firmware command are always in
  the lost tail (a good create_qp: 32 frames, 16 lost).
  R2 gpu_queue_peer_rescue: a GPU-resident queue buffer's pin fails EFAULT and the peer client takes
  it -- the tree failed, its root succeeded, and EVERY error frame is in the lost tail: the record
  shows 16 frames without an error (kind 'failure', exit_status 0).
reg_mr: ib_uverbs_reg_mr -> mlx5_ib_reg_user_mr -> ib_umem_get_peer -> __ib_umem_get ->
  pin_user_pages_fast (a loop of <= 512 pages a call) -> sg_alloc_append_table_from_pages, then
  create_real_mr -> alloc_cacheable_mr (host memory) or reg_create -> mlx5_ib_create_mkey ->
  mlx5_cmd_exec (peer memory), mlx5r_umr_update_mr_pas -> mlx5r_umr_post_send_wait.
  A 2 MiB host buffer (1 pin call) fits: 15 frames, complete. A 16 MiB host buffer (8 pin calls)
  does not: the record ends at sg_alloc_append_table_from_pages, create_real_mr and the UMR lost.
  R1 gpu_mr_peer_rescue: a GPU buffer: the pin's EFAULT, __ib_umem_release, ib_peer_umem_get ->
  ib_get_peer_client, then reg_create's mkey and the UMR: 21 frames, the pin's EFAULT kept, the
  UMR's wait and the tail lost (a truncated rescued shape, only ever seen truncated).
modify_qp: ib_uverbs_modify_qp -> modify_qp ... _ib_modify_qp (3) -> ib_security_modify_qp (4) ->
  mlx5_ib_modify_qp (5) -> __mlx5_ib_modify_qp (6) -> mlx5_core_qp_modify (7) -> mlx5_cmd_exec (8):
  every firmware modify command is deeper than MAX_DEPTH, skipped, on every transition.
  INIT->RTR adds the address resolution: rdma_fill_sgid_attr -> rdma_get_gid_attr,
  ib_resolve_eth_dmac -> ib_resolve_unicast_gid_dmac -> rdma_addr_find_l2_eth_by_grh ->
  rdma_resolve_ip, rdma_lag_get_ah_roce_slave -> rdma_read_gid_attr_ndev_rcu: a good INIT->RTR keeps
  16 frames and loses the whole driver path (10 frames).
  R3 arp_timeout_retried: rdma_addr_find_l2_eth_by_grh -ETIMEDOUT (neighbour never resolved), the
  INIT->RTR returns it, the launcher retries a second later and goes on: a complete failing chain
  (16 frames, none lost).

The faults
  (a)+(c) umr_post_send_efault (reg_mr, A_HOSTS from A_SINCE): the UMR QP in error state,
      mlx5r_umr_post_send_wait -EFAULT on A_P of the registrations (reference: "-EFAULT when
      mlx5r_umr_post_send_wait: UMR QP in error state or UMR completion error"),
      mlx5r_umr_update_mr_pas and create_real_mr return it (mlx5_ib_dereg_mr unwinds), the rank dies.
        mr_small_umr: complete (16 frames), the origin kept;
        mr_big_umr:   (a) the origin in the LOST tail: kept frames end at sg_alloc_append_table_from_pages,
                      the only error frames kept are the root and mlx5_ib_reg_user_mr (EFAULT);
        mr_gpu_umr:   (c) a truncated rescued shape with an error: the pin's absorbed EFAULT kept,
                      mlx5r_umr_update_mr_pas EFAULT the last frame kept, the wait lost.
  (b) rtr2rts_fw_timeout (modify_qp RTR->RTS, B_HOSTS from B_SINCE): the RTR2RTS_QP firmware command
      times out (mlx5_cmd_exec -ETIMEDOUT, errno_conventions) at depth 8, never recorded: the
      failure shows at mlx5_core_qp_modify -ETIMEDOUT (depth 7) and its callers; the rank dies.
      The same errno the routine ARP timeout returns from the same operation.

MODELLING ASSUMPTIONS beyond the reference
  - the probe set hooks the functions of PROBES, not rdma_lookup_put_uobject's error-path calls
    nor alloc_and_bind (a pointer); port counters in the default mode (rdma_counter_bind_qp_auto
    returns 0 with nothing below it);
  - mlx5r_umr_post_send_wait is traceable and returns -EFAULT itself; the UMR QP error is
    intermittent (A_P of posts), so some ranks pass the big registration and fail the small one;
  - a rank registers its 16 MiB host buffer, its GPU buffer, then its 2 MiB host buffer;
  - one firmware opcode (RTR2RTS_QP) timing out on a host, every time, from B_SINCE;
  - rdma_resolve_ip succeeds (the timeout is rdma_addr_find_l2_eth_by_grh's).

The process model: 24 mlx5 RoCE GPU hosts, 00:00-06:00 UTC, every process `python3`; every host
starts a job every 8 minutes (+-30 s), 4 ranks 250 ms apart; a rank: create_qp (host buffers),
create_qp (GPU queue: R2), reg_mr 16 MiB host, reg_mr GPU (R1), reg_mr 2 MiB host, then for each of
the two QPs RESET->INIT, INIT->RTR (R3 on ARP_P of them, retried up to 3 times), RTR->RTS. A rank
whose call fails (R3 retried out aside) dies; a job with a dead rank is relaunched 2 minutes later,
at most 3 attempts.

The truth (README.md and docs/architecture.md): every record of a routine family is routine
(expected_error true), every record of a fault is the fault's (expected_error false). The
bifurcation: the fault's origin -- mlx5r_umr_post_send_wait EFAULT for (a) and (c) (the truncated
records "take the analysis of the most frequent complete failing chain of its operation that ...
begins with its frames in entry order ... with a loop's turns folded": mr_small_umr's), and
mlx5_core_qp_modify ETIMEDOUT for (b), the deepest frame the tracer can record of the failing chain
(no complete chain of modify_qp reaches the firmware command).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from tracer.schema import metadata_list, polars_schema, write_counter_buckets, write_partition

DAY = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
DATE = DAY.date().isoformat()
START, END = DAY, DAY + dt.timedelta(hours=6)
RELEASE = "5.15.0-126-generic"
HOSTS = [f"gpu-{i:02d}" for i in range(1, 25)]
SNAPSHOT_S = 30
K = 4
MAX_FRAMES = 16
MAX_DEPTH = 8
WINDOW_EVERY = dt.timedelta(minutes=7)
WINDOW_LEN = dt.timedelta(seconds=60)
TICK_NS = 4_000_000
JOB_EVERY_S = 480
ATTEMPTS = 3
ARP_P = 0.04
TENANTS = {"heron": ["heron-pretrain", "heron-eval"], "osprey": ["osprey-rl"], "wren": ["wren-infer"]}

A_HOSTS = {"gpu-06": DAY + dt.timedelta(hours=2), "gpu-17": DAY + dt.timedelta(hours=2, minutes=30)}
A_P = 0.5
B_HOSTS = {"gpu-09": DAY + dt.timedelta(hours=1, minutes=30), "gpu-22": DAY + dt.timedelta(hours=3)}

# key -> (operation, truth's bifurcation probe, errno, origin layer)
FAMILIES = {
    "gpu_mr_peer_rescue": ("reg_mr", "pin_user_pages_fast", "EFAULT", "core"),
    "gpu_queue_peer_rescue": ("create_qp", "pin_user_pages_fast", "EFAULT", "core"),
    "arp_timeout_retried": ("modify_qp", "rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
    "umr_post_send_efault": ("reg_mr", "mlx5r_umr_post_send_wait", "EFAULT", "driver"),
    "rtr2rts_fw_timeout": ("modify_qp", "mlx5_core_qp_modify", "ETIMEDOUT", "driver"),
}
# the true origin, where the kernel returned the error first (the tracer may not keep it)
TRUE_ORIGIN = {"gpu_mr_peer_rescue": "pin_user_pages_fast", "gpu_queue_peer_rescue": "pin_user_pages_fast",
               "arp_timeout_retried": "rdma_addr_find_l2_eth_by_grh", "umr_post_send_efault": "mlx5r_umr_post_send_wait",
               "rtr2rts_fw_timeout": "mlx5_cmd_exec"}
ROUTINE = ("gpu_mr_peer_rescue", "gpu_queue_peer_rescue", "arp_timeout_retried")
ROOT_CAUSES = ("umr_post_send_efault", "rtr2rts_fw_timeout")
FAULT_HOSTS = {"umr_post_send_efault": A_HOSTS, "rtr2rts_fw_timeout": B_HOSTS}

LAYER = {
    "ib_uverbs_create_qp": "uverbs", "ib_uverbs_reg_mr": "uverbs", "ib_uverbs_modify_qp": "uverbs",
    "rdma_alloc_begin_uobject": "core", "rdma_lookup_get_uobject": "core", "rdma_alloc_abort_uobject": "core",
    "rdma_lookup_put_uobject": "core", "uverbs_response": "uverbs", "rdma_restrack_add": "core",
    "ib_create_qp_user": "core", "ib_create_qp_security": "core", "ib_qp_usecnt_inc": "core",
    "mlx5_ib_create_qp": "driver", "mlx5_ib_dev_res_srq_init": "driver", "check_qp_type": "driver",
    "check_valid_flow": "driver", "process_udata_size": "driver", "check_ucmd_data": "driver",
    "process_vendor_flags": "driver", "get_qp_uidx": "driver", "process_create_flags": "driver",
    "check_qp_attr": "driver", "create_user_qp": "driver", "set_rq_size": "driver", "_create_user_qp": "driver",
    "alloc_bfreg": "driver", "mlx5_ib_db_map_user": "driver", "mlx5_qpc_create_qp": "driver", "mlx5_cmd_exec": "driver",
    "ib_umem_get_peer": "core", "__ib_umem_get": "core", "pin_user_pages_fast": "core", "__ib_umem_release": "core",
    "sg_alloc_append_table_from_pages": "core",
    "ib_peer_umem_get": "peer-mem", "ib_get_peer_client": "peer-mem", "ib_umem_activate_invalidation_notifier": "peer-mem",
    "mlx5_ib_reg_user_mr": "driver", "mlx5r_umr_resource_init": "driver", "create_real_mr": "driver",
    "alloc_cacheable_mr": "driver", "reg_create": "driver", "mlx5_ib_create_mkey": "driver",
    "mlx5r_umr_update_mr_pas": "driver", "mlx5r_umr_post_send_wait": "driver", "mlx5_ib_dereg_mr": "driver",
    "modify_qp": "core", "ib_modify_qp_with_udata": "core", "_ib_modify_qp": "core", "copy_ah_attr_from_uverbs": "core",
    "rdma_fill_sgid_attr": "core", "rdma_check_ah_attr": "core", "rdma_get_gid_attr": "core",
    "ib_resolve_eth_dmac": "core", "rdma_check_gid_user_access": "core", "ib_resolve_unicast_gid_dmac": "core",
    "rdma_addr_find_l2_eth_by_grh": "core", "rdma_resolve_ip": "core", "rdma_lag_get_ah_roce_slave": "core",
    "rdma_read_gid_attr_ndev_rcu": "core", "rdma_counter_bind_qp_auto": "core", "ib_security_modify_qp": "core",
    "mlx5_ib_modify_qp": "driver", "ib_modify_qp_is_ok": "core", "__mlx5_ib_modify_qp": "driver",
    "mlx5_set_path": "driver", "set_qpc_atomic_flags": "driver", "mlx5_core_qp_modify": "driver",
    "rdma_lag_put_ah_roce_slave": "core", "rdma_unfill_sgid_attr": "core",
}
PROBES = sorted(LAYER)

_F, _T = "EFAULT", "ETIMEDOUT"
ERRNO_NUM = {"EFAULT": 14, "ETIMEDOUT": 110}


def _ok(frames):
    return [(d, fn, None) for d, fn in frames]


# ---- create_qp (write ABI)
_QP_HEAD = _ok([(0, "ib_uverbs_create_qp"), (1, "rdma_alloc_begin_uobject"), (1, "rdma_lookup_get_uobject"),
                (1, "rdma_lookup_get_uobject"), (1, "rdma_lookup_get_uobject"), (1, "ib_create_qp_user"),
                (2, "mlx5_ib_create_qp"), (3, "mlx5_ib_dev_res_srq_init"), (3, "check_qp_type"), (3, "check_valid_flow"),
                (3, "process_udata_size"), (3, "check_ucmd_data"), (3, "process_vendor_flags"), (3, "get_qp_uidx"),
                (3, "process_create_flags"), (3, "check_qp_attr"), (3, "create_user_qp"), (4, "set_rq_size"),
                (4, "_create_user_qp"), (5, "alloc_bfreg"), (5, "ib_umem_get_peer"), (6, "__ib_umem_get")])
_QP_TAIL = _ok([(5, "mlx5_ib_db_map_user"), (4, "mlx5_qpc_create_qp"), (5, "mlx5_cmd_exec"), (2, "ib_create_qp_security"),
                (2, "rdma_restrack_add"), (1, "ib_qp_usecnt_inc"), (1, "rdma_lookup_put_uobject"),
                (1, "rdma_lookup_put_uobject"), (1, "rdma_lookup_put_uobject"), (1, "uverbs_response")])
_QP_HOST = _QP_HEAD + _ok([(7, "pin_user_pages_fast")]) + _QP_TAIL
_QP_GPU = _QP_HEAD + [(7, "pin_user_pages_fast", _F), (7, "__ib_umem_release", None), (7, "ib_peer_umem_get", None),
                      (8, "ib_get_peer_client", None)] + _QP_TAIL

# ---- reg_mr
_MR_HEAD = _ok([(0, "ib_uverbs_reg_mr"), (1, "rdma_alloc_begin_uobject"), (1, "rdma_lookup_get_uobject"),
                (1, "mlx5_ib_reg_user_mr"), (2, "mlx5r_umr_resource_init"), (2, "ib_umem_get_peer"), (3, "__ib_umem_get")])
_MR_END_OK = _ok([(1, "rdma_restrack_add"), (1, "uverbs_response")])


def _mr_host(pins: int, umr_fails: bool):
    head = _MR_HEAD + _ok([(4, "pin_user_pages_fast")] * pins + [(4, "sg_alloc_append_table_from_pages")])
    if not umr_fails:
        return head + _ok([(2, "create_real_mr"), (3, "alloc_cacheable_mr"), (3, "mlx5r_umr_update_mr_pas"),
                           (4, "mlx5r_umr_post_send_wait")]) + _MR_END_OK
    failing = {"ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr"}
    head = [(d, fn, _F if fn in failing else None) for d, fn, _ in head]
    return head + [(2, "create_real_mr", _F), (3, "alloc_cacheable_mr", None), (3, "mlx5r_umr_update_mr_pas", _F),
                   (4, "mlx5r_umr_post_send_wait", _F), (3, "mlx5_ib_dereg_mr", None), (1, "rdma_alloc_abort_uobject", None)]


def _mr_gpu(umr_fails: bool):
    e = _F if umr_fails else None
    head = [(0, "ib_uverbs_reg_mr", e), (1, "rdma_alloc_begin_uobject", None), (1, "rdma_lookup_get_uobject", None),
            (1, "mlx5_ib_reg_user_mr", e), (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get_peer", None),
            (3, "__ib_umem_get", None), (4, "pin_user_pages_fast", _F), (4, "__ib_umem_release", None),
            (4, "ib_peer_umem_get", None), (5, "ib_get_peer_client", None),
            (2, "create_real_mr", e), (3, "reg_create", None), (4, "mlx5_ib_create_mkey", None), (5, "mlx5_cmd_exec", None),
            (3, "mlx5r_umr_update_mr_pas", e), (4, "mlx5r_umr_post_send_wait", e)]
    if umr_fails:
        return head + _ok([(3, "mlx5_ib_dereg_mr"), (1, "rdma_alloc_abort_uobject")])
    return head + _ok([(3, "ib_umem_activate_invalidation_notifier")]) + _MR_END_OK


# ---- modify_qp
def _fw(fail: bool, av: bool = False):
    """ib_security_modify_qp (4) down to the firmware command (8)."""
    e = _T if fail else None
    out = [(4, "ib_security_modify_qp", e), (5, "mlx5_ib_modify_qp", e), (6, "ib_modify_qp_is_ok", None),
           (6, "__mlx5_ib_modify_qp", e)]
    if av:
        out.append((7, "mlx5_set_path", None))
    return out + [(7, "mlx5_core_qp_modify", e), (8, "mlx5_cmd_exec", e)]


def _mod(transition: str, *, arp: bool = False, fw_timeout: bool = False):
    e = _T if (arp or fw_timeout) else None
    head = [(0, "ib_uverbs_modify_qp", e), (1, "modify_qp", e), (2, "rdma_lookup_get_uobject", None)]
    if transition == "INIT->RTR":
        head.append((2, "copy_ah_attr_from_uverbs", None))
    head += [(2, "ib_modify_qp_with_udata", e), (3, "_ib_modify_qp", e)]
    if transition == "RESET->INIT":
        return head + _ok([(4, "rdma_counter_bind_qp_auto")]) + _fw(False) + \
            _ok([(2, "rdma_lookup_put_uobject")])
    if transition == "RTR->RTS":
        return head + _fw(fw_timeout) + _ok([(2, "rdma_lookup_put_uobject")])
    a = _T if arp else None
    out = head + _ok([(4, "rdma_fill_sgid_attr"), (5, "rdma_check_ah_attr"), (5, "rdma_get_gid_attr")]) + \
        [(4, "ib_resolve_eth_dmac", a), (5, "rdma_check_gid_user_access", None), (5, "ib_resolve_unicast_gid_dmac", a),
         (6, "rdma_addr_find_l2_eth_by_grh", a), (7, "rdma_resolve_ip", None)]
    if arp:
        return out + _ok([(4, "rdma_unfill_sgid_attr"), (2, "rdma_lookup_put_uobject")])
    return out + _ok([(4, "rdma_lag_get_ah_roce_slave"), (5, "rdma_read_gid_attr_ndev_rcu")]) + _fw(False, av=True) + \
        _ok([(4, "rdma_lag_put_ah_roce_slave"), (4, "rdma_unfill_sgid_attr"), (2, "rdma_lookup_put_uobject")])


# name -> (operation, argument, full frames of (depth, function, errno)): what the kernel runs
TREES = {
    "qp_host": ("create_qp", "RC", _QP_HOST),
    "qp_gpu": ("create_qp", "RC", _QP_GPU),
    "mr_big": ("reg_mr", None, _mr_host(8, False)),
    "mr_small": ("reg_mr", None, _mr_host(1, False)),
    "mr_gpu": ("reg_mr", None, _mr_gpu(False)),
    "mr_big_umr": ("reg_mr", None, _mr_host(8, True)),
    "mr_small_umr": ("reg_mr", None, _mr_host(1, True)),
    "mr_gpu_umr": ("reg_mr", None, _mr_gpu(True)),
    "reset_init": ("modify_qp", "RESET->INIT", _mod("RESET->INIT")),
    "init_rtr": ("modify_qp", "INIT->RTR", _mod("INIT->RTR")),
    "init_rtr_arp": ("modify_qp", "INIT->RTR", _mod("INIT->RTR", arp=True)),
    "rtr_rts": ("modify_qp", "RTR->RTS", _mod("RTR->RTS")),
    "rtr_rts_timeout": ("modify_qp", "RTR->RTS", _mod("RTR->RTS", fw_timeout=True)),
}
TREE_FAMILY = {"qp_gpu": "gpu_queue_peer_rescue", "mr_gpu": "gpu_mr_peer_rescue", "init_rtr_arp": "arp_timeout_retried",
               "mr_big_umr": "umr_post_send_efault", "mr_small_umr": "umr_post_send_efault",
               "mr_gpu_umr": "umr_post_send_efault", "rtr_rts_timeout": "rtr2rts_fw_timeout"}
RESCUED = ("qp_gpu", "mr_gpu")


def tracer_view(frames):
    """What bpf/calltree.c keeps of a call tree: (kept frames, lost_events, failed).

    push_frame: a frame is skipped when an enclosing frame was skipped, its level is MAX_DEPTH or
    more, or MAX_FRAMES frames are kept already; each skip counts in `truncated`. Any failed frame,
    kept or not, fails the tree."""
    kept, lost, stack = [], 0, []  # stack: skipped flag of each open level
    for depth, fn, errno in frames:
        del stack[depth:]
        skip = any(stack) or depth >= MAX_DEPTH or len(kept) >= MAX_FRAMES
        if skip:
            lost += 1
        else:
            kept.append((depth, fn, errno))
        stack.append(skip)
    return kept, lost, any(e for _, _, e in frames)


VIEWS = {name: tracer_view(frames) for name, (_, _, frames) in TREES.items()}


def _snapshots() -> list[dt.datetime]:
    out, t = [], START + dt.timedelta(seconds=SNAPSHOT_S)
    while t <= END:
        out.append(t)
        t += dt.timedelta(seconds=SNAPSHOT_S)
    return out


class _Host:
    def __init__(self, host: str, rng: np.random.Generator, fault_hosts: dict):
        self.host, self.rng, self.fault_hosts = host, rng, fault_hosts
        self.boot = DAY - dt.timedelta(days=2, seconds=int(rng.integers(0, 86400)))
        self.boot_id = f"{int(rng.integers(1 << 30)):08x}"
        self.next_pid = int(rng.integers(20000, 40000))
        self.window_offset = dt.timedelta(seconds=int(rng.integers(0, 420)))
        self.calls: list[tuple] = []

    def pid(self) -> int:
        self.next_pid += int(self.rng.integers(3, 40))
        return self.next_pid

    def fault(self, cause: str, t: dt.datetime) -> bool:
        hosts = self.fault_hosts.get(cause, {})
        return self.host in hosts and t >= hosts[self.host]

    def in_window(self, t: dt.datetime) -> bool:
        since = t - START - self.window_offset
        return since >= dt.timedelta(0) and since % WINDOW_EVERY < WINDOW_LEN

    def call(self, t, tree, pid, ppid, job, meta) -> bool:
        latency = int(self.rng.integers(40_000, 900_000))
        self.calls.append((t, latency, tree, pid, ppid, job, meta))
        return TREES[tree][2][0][2] is None

    def rank(self, t: dt.datetime, job: str, meta: dict, ppid: int) -> bool:
        pid, rng = self.pid(), self.rng
        step = lambda: dt.timedelta(milliseconds=int(rng.integers(20, 120)))  # noqa: E731
        plan = ["qp_host", "qp_gpu", "mr_big", "mr_gpu", "mr_small"] + ["reset_init", "init_rtr", "rtr_rts"] * 2
        for tree in plan:
            t += step()
            if tree.startswith("mr_") and self.fault("umr_post_send_efault", t) and rng.random() < A_P:
                tree += "_umr"
            elif tree == "rtr_rts" and self.fault("rtr2rts_fw_timeout", t):
                tree = "rtr_rts_timeout"
            elif tree == "init_rtr":
                for _ in range(ATTEMPTS):
                    if rng.random() >= ARP_P:
                        break
                    self.call(t, "init_rtr_arp", pid, ppid, job, meta)  # the launcher retries a second later
                    t += dt.timedelta(seconds=1)
                else:
                    return False
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


_COLUMNS = ("trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret", "errno",
            "latency_ns", "arg", "kind", "command", "exit_status", "start_time", "end_time", "job_id", "metadata",
            "repeat_count", "lost_events")


def _records(h: _Host, snap_ns: np.ndarray):
    """What the tracer sends of the host's calls: (events columns, truth rows)."""
    rng = h.rng
    ev: dict[str, list] = {k: [] for k in _COLUMNS}
    truth: list[dict] = []
    seq = int(rng.integers(1 << 20, 1 << 30))
    calls = sorted(h.calls, key=lambda c: (c[0], c[3]))
    end_ns = np.array([int(c[0].timestamp() * 1e9) + c[1] for c in calls], dtype=np.int64)
    interval = np.searchsorted(snap_ns, end_ns, side="left")
    examples: dict[tuple, list[int]] = {}
    chosen: list[tuple[int, int]] = []
    for i, (t, _lat, tree, *_rest) in enumerate(calls):
        kept, lost, failed = VIEWS[tree]
        if failed:
            key = (int(interval[i]), tuple(kept), lost > 0)  # the signature: kept frames, returns, truncated bit
            rows = examples.setdefault(key, [])
            if len(rows) < K:
                rows.append(len(chosen))
                chosen.append((i, 1))
            else:
                j = rows[0]
                chosen[j] = (chosen[j][0], chosen[j][1] + 1)
        elif h.in_window(t):
            chosen.append((i, -1))
    boot_ns = int(h.boot.timestamp() * 1e9)
    for i, repeat in chosen:
        t, lat, tree, pid, ppid, job, meta = calls[i]
        op, arg, full = TREES[tree]
        kept, lost, _ = VIEWS[tree]
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
        root_errno = full[0][2]
        md = metadata_list(meta)
        for s, (depth, fn, errno) in enumerate(kept):
            ev["trace_id"].append(tid)
            ev["seq"].append(s)
            ev["ts_ns"].append(start_ns - boot_ns + s * 2000 if timed else tick_mono)
            ev["pid"].append(pid)
            ev["tid"].append(pid)
            ev["ppid"].append(ppid)
            ev["comm"].append("python3")
            ev["probe"].append(fn)
            ev["layer"].append(LAYER[fn])
            ev["depth"].append(depth)
            ev["ret"].append(-ERRNO_NUM[errno] if errno else 0)
            ev["errno"].append(errno)
            ev["latency_ns"].append(max(1000, lat // (depth + 1) - s * 300) if timed else None)
            ev["arg"].append(arg if depth == 0 else None)
            ev["kind"].append("failure" if failing else "good")
            ev["command"].append(op)
            ev["exit_status"].append(-ERRNO_NUM[root_errno] if root_errno else 0)
            ev["start_time"].append(start)
            ev["end_time"].append(end)
            ev["job_id"].append(job)
            ev["metadata"].append(md)
            ev["repeat_count"].append(repeat if failing else None)
            ev["lost_events"].append(lost)
        family = TREE_FAMILY.get(tree) if failing else None
        fam = FAMILIES[family] if family else None
        truth.append({
            "trace_id": tid, "kind": "failure" if failing else "good", "root_cause": family,
            "bifurcation_probe": fam[1] if fam else None, "bifurcation_errno": fam[2] if fam else None,
            "origin_layer": fam[3] if fam else None, "expected_error": (family in ROUTINE) if family else None,
            "held_out": (not failing) and bool(rng.random() < 0.15),
        })
    return ev, truth


def generate(root, seed: int = 66, faults: bool = True, **_shape) -> dict:
    """The fleet into `root`; `faults=False`: the control, the same schedule, no fault."""
    from pathlib import Path

    root = Path(root)
    rng = np.random.default_rng(seed)
    fault_hosts = FAULT_HOSTS if faults else {}
    hosts = {h: _Host(h, np.random.default_rng([seed, i]), fault_hosts) for i, h in enumerate(HOSTS)}
    job_counter = [6_600_000]
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
                             pl.lit(None, pl.String).alias("path"), pl.lit(None, pl.String).alias("path2"),
                             pl.lit(None, pl.String).alias("output"))
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
    """The host's exact counters (every return, kept in a record or not), one file an hour."""
    ends = np.array([int(c[0].timestamp() * 1e9) + c[1] for c in h.calls], dtype=np.int64)
    idx = np.searchsorted(snap_ns, ends, side="left")
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
        pl.lit("mlx5").alias("vendor"), pl.lit("rdma-full").alias("probe_set"),
        pl.col("probe").replace_strict(LAYER).alias("layer"), pl.lit(True).alias("live"),
        pl.lit(0, pl.Int64).alias("lost_records"))
    schema = polars_schema("counters")
    c = c.select([pl.col(col).cast(t) for col, t in schema.items()]).sort("snapshot_time", "probe")
    for hour in range(6):
        lo, hi = START + dt.timedelta(hours=hour), START + dt.timedelta(hours=hour + 1)
        part = c.filter((pl.col("snapshot_time") > lo) & (pl.col("snapshot_time") <= hi))
        path = write_partition(part, root, "counters", DATE, name, f"part-{hour:05d}.parquet", durable=False)
        write_counter_buckets(path, durable=False)

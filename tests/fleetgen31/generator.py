"""fleetgen31's generator: an mlx5 RoCE training fleet where several faults overlap and look alike.

Written blind: from reference/rdma_control_path.yaml (the call chains, the errnos, the OFED
peer-memory fallback), tracer/schema.py (the tables, written through its writers), README.md,
docs/architecture.md, tests/fleet_harness.py and the other generators' docstrings. It imports only
tracer.schema of the project.

THE FLEET
---------
`hosts` (default 32) mlx5 RoCE hosts, racks of 8 (host i in rack i // 8), one boot each (booted days
before the window: one boot id, a monotonic clock that does not restart), MLNX_OFED 24.07 on
5.15.0-125-generic built WITHOUT CONFIG_INFINIBAND_ON_DEMAND_PAGING (so dma-buf MRs are refused),
ConnectX-7 firmware 28.39.2048 except a 5-host canary on 28.41.1002 (job metadata `nic_fw`), GPU
driver 550.90.07 except on the 5 hosts updated to 560.35.03 at 25 % of the window (`gpu_driver`).

Jobs: single-host Slurm jobs of 4 ranks (comm "python3", one process each, tid = pid, ppid the
job step's slurmstepd), 1.5-4 h of work each, the next job 1-5 minutes after. A rank that meets a
fatal error dies in that call; the launcher kills the job's other ranks 1.5 s later (no kernel
error of their own), and Slurm requeues the job under the SAME job id 3-6 minutes later (the
restart count in the metadata, `slurm_restart_count`), for the work that remained.

Each rank, at start: rdma-core scans 6 GID entries (6 QUERY_GID_ENTRY ioctls), ALLOC_PD, two
CREATE_CQ, NCCL's dma-buf test (REG_DMABUF_MR ioctl), two host-memory REG_MR (4 MiB staging
buffers: the mkey cache and a UMR PAS update), two GPU-memory REG_MR (8 GiB: GUP refuses device
memory with EFAULT, OFED's fallback hands the range to nvidia-peermem in ib_peer_umem_get; a peer
umem skips the mkey cache and, too large for UMR to load, is created by reg_create), then a
communicator: two RC QPs created and moved RESET->INIT->RTR->RTS. Afterwards, every 60-120 s a
registration (host and GPU memory in turn) and every 10-20 minutes a new communicator.

The tracer: fexit on every traceable function of these chains that is not inlined in this build
(the verbs.c and mlx5 qp.c `create_qp` statics are, so one probe name means one function);
every failing call tree (root returned an error) is a record; a successful tree is a record only
inside a capture window (60 s every 10 minutes, `good` kind); inside a window every frame carries
its entry time and latency, outside `latency_ns` is null and every `ts_ns`, `start_time`,
`end_time` are the 4 ms tick the root returned in. No in-kernel aggregation (repeat_count null),
no ring-buffer loss (lost_events 0, lost_records 0). Counters every 300 s per probe (every frame
of every call, recorded or not: invocations, failures and the errno histogram), a counter_buckets
summary beside each counters file.

ROOT CAUSES (each kills the rank that meets it)  -- see ROOT_CAUSES
-----------
(a) two at once, same operation, same errno at the top, different origin below:
  umr_qp_error_efault: the canary firmware's UMR QP falls into the error state now and then: 1.5 %
      of host-memory registrations on the 5 canary hosts, all window, fail EFAULT at
      mlx5r_umr_update_mr_pas (driver) under create_real_mr, which unwinds with mlx5_ib_dereg_mr;
      EFAULT then at create_real_mr, mlx5_ib_reg_user_mr, ib_uverbs_reg_mr.
  peermem_unloaded_efault: the GPU driver update (25 %-35 % of the window) left nvidia-peermem
      unloaded on 5 hosts, 2 of them canaries: every GPU registration there fails where no peer
      client claims the range: EFAULT at ib_peer_umem_get (peer-mem), after the pin_user_pages_fast
      EFAULT every good GPU registration has as well; EFAULT then at __ib_umem_get,
      ib_umem_get_peer, mlx5_ib_reg_user_mr, ib_uverbs_reg_mr. Every requeue dies at start: a
      crash loop, in which the canary hosts' ranks also meet the UMR fault now and then, before
      their GPU registrations (the same jobs carry both causes).
(b) one origin function, two errnos, two reasons, INIT->RTR's neighbour resolution
  (rdma_addr_find_l2_eth_by_grh under ib_resolve_unicast_gid_dmac < ib_resolve_eth_dmac, core;
  _ib_modify_qp then unfills the sgid attr and returns it):
  tor_arp_drop_timeout: rack 2's ToR drops ARP (42 %-67 % of the window): 5 % of its INIT->RTR
      fail ETIMEDOUT after one second of resolution;
  route_push_no_route: a netplan push removed the RoCE subnet's route on 3 hosts (two in rack 2)
      for 90 minutes (50 %-56 %): every INIT->RTR fails EADDRNOTAVAIL at once (a crash loop).
      Where both are active the route check comes first (no route: no ARP is sent).
(c) the look-alike of a routine error:
  roce_ip_flap_gid_gone: on 4 hosts the RoCE IPv4 address is removed and re-added by the address
      agent 5 times in the window for 4-6 minutes; meanwhile the GID entries 2 and 3 (IPv4 RoCE v1
      and v2) are empty and an INIT->RTR from GID index 3 (NCCL_IB_GID_INDEX) fails ENODATA at
      rdma_get_gid_attr under rdma_fill_sgid_attr (core), the first AV check of _ib_modify_qp,
      before neighbour resolution (so it wins over (b) where both are active).

ROUTINE (the caller goes on)  -- see ROUTINE
-------
  gid_scan_empty_slot: the rank-start GID scan's empty entries 4 and 5 (and 2, 3 during a flap):
      ENODATA at rdma_get_gid_attr under ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY, rooted at
      ib_uverbs_ioctl. Same probe and errno as roce_ip_flap_gid_gone, same comm, same jobs, same
      processes; another caller.
  dmabuf_without_odp: REG_DMABUF_MR refused by a kernel without ODP (EOPNOTSUPP at
      mlx5_ib_reg_user_mr_dmabuf, rooted at ib_uverbs_ioctl); NCCL falls back to ibv_reg_mr (the
      peer-memory path), which on peermem_unloaded hosts fails 40 ms later.

TRUTH (one row per record, keyed by (host, trace_id))
-----
- kind: the record's kind (failure | good).
- root_cause: the family label (ROOT_CAUSES or ROUTINE) for failures, null for good records.
- bifurcation_probe/errno: the frame where the failing tree leaves what good trees of the same
  operation do. For peermem_unloaded_efault this is ib_peer_umem_get, NOT pin_user_pages_fast: the
  GUP EFAULT (entered first, same depth, same errno) is in every good GPU registration. For every
  other family it is the deepest failing frame (the errno's first appearance).
- origin_layer: the layer of that frame (driver | peer-mem | core).
- expected_error: True for the routine families' records, and for the good records that hold an
  absorbed error (every good GPU registration's pin_user_pages_fast EFAULT): TRUTH defines it as
  "trace holds only expected (routine) errors", and such a tree holds nothing else; their
  root_cause stays null (nothing was injected). False for the root causes and error-free goods.
- held_out: 10 % of good records at random (seeded), False otherwise.

The summary (returned, and written to <out>/fleetgen31.json) names the roles (host sets), each
family's record count, hosts and job ids, and the fault windows.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import (
    COUNTERS,
    EVENTS,
    METADATA_TYPE,
    TRUTH,
    metadata_list,
    write_counter_buckets,
    write_partition,
)

START = dt.datetime(2026, 5, 11, 6, 0, tzinfo=dt.UTC)
KERNEL = "5.15.0-125-generic"
SNAP_S = 300
CAPTURE_EVERY_S = 600
CAPTURE_LEN_S = 60
TICK_NS = 4_000_000
RANKS = 4
GID_SLOTS = 6
GID_ALWAYS_EMPTY = (4, 5)
GID_IPV4 = (2, 3)
FW_OLD, FW_CANARY = "28.39.2048", "28.41.1002"
GPU_OLD, GPU_NEW = "550.90.07", "560.35.03"

ERRNO = {"EFAULT": 14, "ENODATA": 61, "ETIMEDOUT": 110, "EADDRNOTAVAIL": 99, "EOPNOTSUPP": 95}

# family -> (bifurcation probe, errno, origin layer)
ROOT_CAUSES = {
    "umr_qp_error_efault": ("mlx5r_umr_update_mr_pas", "EFAULT", "driver"),
    "peermem_unloaded_efault": ("ib_peer_umem_get", "EFAULT", "peer-mem"),
    "tor_arp_drop_timeout": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
    "route_push_no_route": ("rdma_addr_find_l2_eth_by_grh", "EADDRNOTAVAIL", "core"),
    "roce_ip_flap_gid_gone": ("rdma_get_gid_attr", "ENODATA", "core"),
}
ROUTINE = {
    "gid_scan_empty_slot": ("rdma_get_gid_attr", "ENODATA", "core"),
    "dmabuf_without_odp": ("mlx5_ib_reg_user_mr_dmabuf", "EOPNOTSUPP", "driver"),
}
FAMILIES = {**ROOT_CAUSES, **ROUTINE}

# ------------------------------------------------------------------------------------------
# layers
# ------------------------------------------------------------------------------------------
_UVERBS = {"ib_uverbs_ioctl", "ib_uverbs_cmd_verbs", "ib_uverbs_run_method", "ib_uverbs_alloc_pd",
           "ib_uverbs_create_cq", "ib_uverbs_create_qp", "ib_uverbs_modify_qp", "ib_uverbs_reg_mr",
           "uverbs_request", "uverbs_response", "create_cq", "create_qp", "modify_qp",
           "copy_ah_attr_from_uverbs", "uverbs_finalize_object",
           "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR"}
_PEER = {"ib_peer_umem_get", "ib_get_peer_client", "ib_umem_activate_invalidation_notifier"}
_DRIVER_PLAIN = {"create_user_qp", "_create_user_qp", "set_rq_size", "alloc_bfreg", "set_user_buf_size",
                 "check_qp_type", "process_udata_size", "create_cq_user", "create_real_mr",
                 "alloc_cacheable_mr", "mkey_cache_ent_from_rb_key", "_mlx5_mr_cache_alloc", "reg_create",
                 "validate_rd_atomic", "get_tx_affinity", "__mlx5_ib_modify_qp"}


def layer_of(fn: str) -> str:
    if fn in _UVERBS:
        return "uverbs"
    if fn in _PEER:
        return "peer-mem"
    if fn.startswith("mlx5") or fn in _DRIVER_PLAIN:
        return "driver"
    return "core"


# ------------------------------------------------------------------------------------------
# call trees: (depth, function, errno or None, self time in us), in entry order
# ------------------------------------------------------------------------------------------
def _gid(empty: bool) -> list[tuple]:
    e = "ENODATA" if empty else None
    tree = [(0, "ib_uverbs_ioctl", e, 2), (1, "ib_uverbs_cmd_verbs", e, 2), (2, "ib_uverbs_run_method", e, 2),
            (3, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", e, 2), (4, "rdma_get_gid_attr", e, 1)]
    if not empty:
        tree += [(4, "rdma_read_gid_attr_ndev_rcu", None, 1), (4, "rdma_put_gid_attr", None, 1)]
    return tree


def _dmabuf() -> list[tuple]:
    e = "EOPNOTSUPP"
    return [(0, "ib_uverbs_ioctl", e, 2), (1, "ib_uverbs_cmd_verbs", e, 2), (2, "ib_uverbs_run_method", e, 3),
            (3, "rdma_alloc_begin_uobject", None, 3), (4, "ib_rdmacg_try_charge", None, 1),
            (3, "rdma_lookup_get_uobject", None, 1),
            (3, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", e, 2), (4, "mlx5_ib_reg_user_mr_dmabuf", e, 1),
            (3, "uverbs_finalize_object", None, 1), (4, "rdma_alloc_abort_uobject", None, 2),
            (3, "uverbs_finalize_object", None, 1), (4, "rdma_lookup_put_uobject", None, 1)]


def _alloc_pd() -> list[tuple]:
    return [(0, "ib_uverbs_alloc_pd", None, 3), (1, "uverbs_request", None, 1),
            (1, "rdma_alloc_begin_uobject", None, 3), (2, "ib_rdmacg_try_charge", None, 1),
            (1, "mlx5_ib_alloc_pd", None, 2), (2, "mlx5_cmd_exec", None, 45),
            (1, "rdma_restrack_add", None, 1), (1, "uverbs_response", None, 1)]


def _pin(depth: int, calls: int, us: int = 60) -> list[tuple]:
    return ([(depth, "ib_umem_get_peer", None, 2), (depth + 1, "__ib_umem_get", None, 5)]
            + [(depth + 2, "pin_user_pages_fast", None, us)] * calls
            + [(depth + 2, "sg_alloc_append_table_from_pages", None, 8)])


def _create_cq() -> list[tuple]:
    return ([(0, "ib_uverbs_create_cq", None, 3), (1, "create_cq", None, 2),
             (2, "rdma_alloc_begin_uobject", None, 3), (3, "ib_rdmacg_try_charge", None, 1),
             (2, "mlx5_ib_create_cq", None, 3), (3, "create_cq_user", None, 4)]
            + _pin(4, 1, 20)
            + [(4, "mlx5_ib_db_map_user", None, 1), (3, "mlx5_comp_eqn_get", None, 1),
               (3, "mlx5_core_create_cq", None, 60), (2, "rdma_restrack_add", None, 1), (2, "uverbs_response", None, 1)])


def _create_qp() -> list[tuple]:
    return ([(0, "ib_uverbs_create_qp", None, 3), (1, "create_qp", None, 3),
             (2, "rdma_alloc_begin_uobject", None, 3), (3, "ib_rdmacg_try_charge", None, 1),
             (2, "rdma_lookup_get_uobject", None, 1), (2, "rdma_lookup_get_uobject", None, 1),
             (2, "ib_create_qp_user", None, 2), (3, "mlx5_ib_create_qp", None, 4),
             (4, "mlx5_ib_dev_res_srq_init", None, 1), (4, "check_qp_type", None, 1),
             (4, "process_udata_size", None, 1), (4, "create_user_qp", None, 3), (5, "set_rq_size", None, 1),
             (5, "_create_user_qp", None, 4), (6, "alloc_bfreg", None, 1), (6, "set_user_buf_size", None, 1)]
            + _pin(6, 1, 25)
            + [(6, "mlx5_ib_db_map_user", None, 1), (5, "mlx5_qpc_create_qp", None, 3), (6, "mlx5_cmd_exec", None, 180),
               (3, "ib_create_qp_security", None, 1), (3, "rdma_restrack_add", None, 1),
               (2, "ib_qp_usecnt_inc", None, 1), (2, "rdma_lookup_put_uobject", None, 1),
               (2, "rdma_lookup_put_uobject", None, 1), (2, "uverbs_response", None, 1)])


def _driver_modify(extra: list[tuple]) -> list[tuple]:
    return ([(4, "ib_security_modify_qp", None, 1), (5, "mlx5_ib_modify_qp", None, 3),
             (6, "ib_modify_qp_is_ok", None, 1), (6, "validate_rd_atomic", None, 1),
             (6, "__mlx5_ib_modify_qp", None, 4)] + extra
            + [(7, "mlx5_core_qp_modify", None, 3), (8, "mlx5_cmd_exec", None, 90)])


def _modify(transition: str, fault: str | None = None) -> list[tuple]:
    """modify_qp of an RC QP on RoCE with udata; fault: gid_gone | arp_timeout | no_route."""
    errno = {"gid_gone": "ENODATA", "arp_timeout": "ETIMEDOUT", "no_route": "EADDRNOTAVAIL", None: None}[fault]
    e = errno
    head = [(0, "ib_uverbs_modify_qp", e, 3), (1, "modify_qp", e, 3), (2, "rdma_lookup_get_uobject", None, 1)]
    tail = [(2, "rdma_lookup_put_uobject", None, 1)]
    if transition == "RESET->INIT":
        return (head + [(2, "ib_modify_qp_with_udata", None, 1), (3, "_ib_modify_qp", None, 2),
                        (4, "rdma_counter_bind_qp_auto", None, 1)] + _driver_modify([]) + tail)
    if transition == "RTR->RTS":
        return head + [(2, "ib_modify_qp_with_udata", None, 1), (3, "_ib_modify_qp", None, 2)] + _driver_modify([]) + tail
    assert transition == "INIT->RTR"
    tree = head + [(2, "copy_ah_attr_from_uverbs", None, 1), (2, "ib_modify_qp_with_udata", e, 1),
                   (3, "_ib_modify_qp", e, 2), (4, "rdma_fill_sgid_attr", "ENODATA" if fault == "gid_gone" else None, 1),
                   (5, "rdma_check_ah_attr", None, 1),
                   (5, "rdma_get_gid_attr", "ENODATA" if fault == "gid_gone" else None, 1)]
    if fault == "gid_gone":
        return tree + tail
    resolve_us = {"arp_timeout": 1_000_000, "no_route": 6, None: 14}[fault]
    tree += [(4, "ib_resolve_eth_dmac", e, 1), (5, "rdma_check_gid_user_access", None, 1),
             (5, "ib_resolve_unicast_gid_dmac", e, 1), (6, "rdma_addr_find_l2_eth_by_grh", e, resolve_us)]
    if fault:
        return tree + [(4, "rdma_unfill_sgid_attr", None, 1)] + tail
    return (tree + [(4, "rdma_lag_get_ah_roce_slave", None, 1), (5, "rdma_read_gid_attr_ndev_rcu", None, 1)]
            + _driver_modify([(7, "get_tx_affinity", None, 1), (7, "mlx5_set_path", None, 2)])
            + [(4, "rdma_lag_put_ah_roce_slave", None, 1), (4, "rdma_unfill_sgid_attr", None, 1)] + tail)


def _reg_mr(memory: str, fault: bool) -> list[tuple]:
    e = "EFAULT" if fault else None
    head = [(0, "ib_uverbs_reg_mr", e, 4), (1, "rdma_alloc_begin_uobject", None, 3),
            (2, "ib_rdmacg_try_charge", None, 1), (1, "rdma_lookup_get_uobject", None, 1),
            (1, "mlx5_ib_reg_user_mr", e, 4), (2, "mlx5r_umr_resource_init", None, 1)]
    ok_tail = [(1, "rdma_restrack_add", None, 1), (1, "rdma_lookup_put_uobject", None, 1), (1, "uverbs_response", None, 1)]
    bad_tail = [(1, "rdma_lookup_put_uobject", None, 1), (1, "rdma_alloc_abort_uobject", None, 2)]
    if memory == "host":
        tree = head + _pin(2, 2) + [(2, "create_real_mr", e, 3), (3, "alloc_cacheable_mr", None, 2),
                                    (4, "mkey_cache_ent_from_rb_key", None, 1), (4, "_mlx5_mr_cache_alloc", None, 4),
                                    (3, "mlx5r_umr_update_mr_pas", e, 1800 if fault else 40)]
        return tree + ([(3, "mlx5_ib_dereg_mr", None, 35)] + bad_tail if fault else ok_tail)
    tree = head + [(2, "ib_umem_get_peer", e, 2), (3, "__ib_umem_get", e, 4),
                   (4, "pin_user_pages_fast", "EFAULT", 3),  # GPU memory: GUP refuses it, always
                   (4, "__ib_umem_release", None, 2),
                   (4, "ib_peer_umem_get", e, 3 if fault else 6500), (5, "ib_get_peer_client", None, 2)]
    if fault:
        return tree + bad_tail
    return tree + [(2, "create_real_mr", None, 3), (3, "reg_create", None, 6), (4, "mlx5_core_create_mkey", None, 3),
                   (5, "mlx5_cmd_exec", None, 160), (3, "ib_umem_activate_invalidation_notifier", None, 2)] + ok_tail


# variant -> (tree, operation, arg, family)
VARIANTS: dict[str, tuple[list[tuple], str, str | None, str | None]] = {
    "gid_ok": (_gid(False), "query_gid", None, None),
    "gid_empty": (_gid(True), "query_gid", None, "gid_scan_empty_slot"),
    "dmabuf_no_odp": (_dmabuf(), "reg_dmabuf_mr", None, "dmabuf_without_odp"),
    "alloc_pd": (_alloc_pd(), "alloc_pd", None, None),
    "create_cq": (_create_cq(), "create_cq", None, None),
    "create_qp": (_create_qp(), "create_qp", None, None),
    "rst2init": (_modify("RESET->INIT"), "modify_qp", "RESET->INIT", None),
    "init2rtr": (_modify("INIT->RTR"), "modify_qp", "INIT->RTR", None),
    "init2rtr_gid_gone": (_modify("INIT->RTR", "gid_gone"), "modify_qp", "INIT->RTR", "roce_ip_flap_gid_gone"),
    "init2rtr_arp_timeout": (_modify("INIT->RTR", "arp_timeout"), "modify_qp", "INIT->RTR", "tor_arp_drop_timeout"),
    "init2rtr_no_route": (_modify("INIT->RTR", "no_route"), "modify_qp", "INIT->RTR", "route_push_no_route"),
    "rtr2rts": (_modify("RTR->RTS"), "modify_qp", "RTR->RTS", None),
    "reg_host": (_reg_mr("host", False), "reg_mr", None, None),
    "reg_host_umr": (_reg_mr("host", True), "reg_mr", None, "umr_qp_error_efault"),
    "reg_gpu": (_reg_mr("gpu", False), "reg_mr", None, None),
    "reg_gpu_nopeer": (_reg_mr("gpu", True), "reg_mr", None, "peermem_unloaded_efault"),
}
TREES = {name: v[0] for name, v in VARIANTS.items()}
VARIANT_NAMES = list(VARIANTS)
VIDX = {name: i for i, name in enumerate(VARIANT_NAMES)}
FATAL = {name for name, v in VARIANTS.items() if v[3] in ROOT_CAUSES}
PROBES = sorted({fn for tree in TREES.values() for _, fn, _, _ in tree})
PIDX = {p: i for i, p in enumerate(PROBES)}
ERRNOS = sorted(ERRNO)


def _timing(tree: list[tuple], jitter: float) -> tuple[list[int], list[int]]:
    """Entry offsets and latencies (ns) of a tree's frames: a frame's self time is spent after its
    children return, 150 ns of call overhead before each entry."""
    n = len(tree)
    entry, exit_ = [0] * n, [0] * n
    cursor, stack = 0, []
    for i, (depth, _, _, _) in enumerate(tree):
        while stack and tree[stack[-1]][0] >= depth:
            j = stack.pop()
            cursor += int(tree[j][3] * jitter * 1000)
            exit_[j] = cursor
        cursor += 150
        entry[i] = cursor
        stack.append(i)
    while stack:
        j = stack.pop()
        cursor += int(tree[j][3] * jitter * 1000)
        exit_[j] = cursor
    return entry, [exit_[i] - entry[i] for i in range(n)]


NOMINAL_LATENCY_S = {name: _timing(tree, 1.0)[1][0] / 1e9 for name, tree in TREES.items()}

# per-variant counter contributions: invocations, failures, per-errno failures, over PROBES
_INV = np.zeros((len(VARIANT_NAMES), len(PROBES)), dtype=np.int64)
_FAIL = np.zeros_like(_INV)
_ERR = np.zeros((len(ERRNOS), len(VARIANT_NAMES), len(PROBES)), dtype=np.int64)
for _name, _tree in TREES.items():
    for _, _fn, _errno, _ in _tree:
        _INV[VIDX[_name], PIDX[_fn]] += 1
        if _errno:
            _FAIL[VIDX[_name], PIDX[_fn]] += 1
            _ERR[ERRNOS.index(_errno), VIDX[_name], PIDX[_fn]] += 1


# ------------------------------------------------------------------------------------------
# roles
# ------------------------------------------------------------------------------------------
def _roles(hosts: list[str], faults: bool) -> dict:
    pick = lambda idx: [hosts[i] for i in idx if i < len(hosts)]  # noqa: E731
    roles = {
        "all": list(hosts),
        "canary_fw": pick([2, 5, 9, 12, 17]),
        "gpu_driver_update": pick([3, 5, 9, 10, 21]),
        "rack2": pick(range(16, 24)),
        "route_push": pick([17, 20, 28]),
        "ip_flap": pick([9, 17, 26, 30]),
    }
    if faults:
        roles.update({"umr": roles["canary_fw"], "peermem": roles["gpu_driver_update"],
                      "arp": roles["rack2"], "route": roles["route_push"], "gid_gone": roles["ip_flap"]})
    else:
        roles.update({"umr": [], "peermem": [], "arp": [], "route": [], "gid_gone": []})
    return roles


# ------------------------------------------------------------------------------------------
# the host simulation
# ------------------------------------------------------------------------------------------
class _Host:
    def __init__(self, name: str, index: int, hours: float, seed: int, roles: dict, windows: dict, faults: bool):
        self.name, self.hours = name, hours
        self.rng = np.random.default_rng([seed, index])
        self.H = hours * 3600.0
        self.boot_wall_ns = int((START.timestamp() - self.rng.uniform(2, 30) * 86400) * 1e9)
        self.boot_id = f"{int(self.rng.integers(0, 2**32)):08x}"
        self.next_trace = int(self.rng.integers(1_000, 90_000))
        self.next_pid = int(self.rng.integers(20_000, 40_000))
        self.windows = windows
        self.umr = name in roles["umr"]
        self.peermem = name in roles["peermem"]
        self.arp = name in roles["arp"]
        self.route = name in roles["route"]
        self.flaps: list[tuple[float, float]] = []
        if name in roles["ip_flap"]:
            starts = np.sort(self.rng.uniform(0.04 * self.H, 0.96 * self.H, 5))
            self.flaps = [(float(s), float(s + self.rng.uniform(240, 360))) for s in starts]
            if not faults:
                self.flaps = []
        self.nic_fw = FW_CANARY if name in roles["canary_fw"] else FW_OLD
        self.gpu_updated = name in roles["gpu_driver_update"]
        self.n_snap = int(np.ceil(self.H / SNAP_S))
        self.counts = np.zeros((self.n_snap, len(VARIANT_NAMES)), dtype=np.int64)
        self.cols: dict[str, list] = {k: [] for k in (
            "trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "probe", "layer", "depth", "ret", "errno",
            "latency_ns", "arg", "kind", "command", "exit_status", "start_ns", "end_ns", "job_id", "meta")}
        self.meta_lists: list[list[dict]] = []
        self.meta_index: dict[tuple, int] = {}
        self.truth: list[tuple] = []
        self.families: dict[str, dict[str, set]] = {}

    # -- fault state -------------------------------------------------------------------------
    def flapping(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.flaps)

    def active(self, key: str, t: float) -> bool:
        a, b = self.windows[key]
        return a <= t < b

    def variant(self, kind: str, slot: int, t: float) -> str:
        if kind == "gid":
            empty = slot in GID_ALWAYS_EMPTY or (slot in GID_IPV4 and self.flapping(t))
            return "gid_empty" if empty else "gid_ok"
        if kind == "reg_host":
            return "reg_host_umr" if self.umr and self.rng.random() < 0.015 else "reg_host"
        if kind == "reg_gpu":
            return "reg_gpu_nopeer" if self.peermem and self.active("peermem", t) else "reg_gpu"
        if kind == "init2rtr":
            if self.flapping(t):
                return "init2rtr_gid_gone"
            if self.route and self.active("route", t):
                return "init2rtr_no_route"
            if self.arp and self.active("arp", t) and self.rng.random() < 0.05:
                return "init2rtr_arp_timeout"
            return "init2rtr"
        return kind

    def meta(self, t: float, job: int, restart: int) -> int:
        gpu = GPU_NEW if self.gpu_updated and t >= self.windows["peermem"][0] else GPU_OLD
        key = (gpu, job, restart)
        if key not in self.meta_index:
            self.meta_index[key] = len(self.meta_lists)
            self.meta_lists.append(metadata_list({"gpu_driver": gpu, "nic_fw": self.nic_fw, "image": "train-2026.05",
                                                  "partition": "train", "slurm_restart_count": str(restart)}))
        return self.meta_index[key]

    # -- one job attempt ---------------------------------------------------------------------
    def attempt(self, t: float, end_plan: float, job: int, restart: int) -> float | None:
        rng = self.rng
        ppid = self.next_pid
        self.next_pid += int(rng.integers(2, 9))
        ops: list[tuple[float, int, str, int]] = []
        pids = []
        end_plan = min(end_plan, self.H)

        def comm(tc: float, r: int) -> None:
            for k, kind in enumerate(("create_qp", "create_qp", "rst2init", "rst2init", "init2rtr", "init2rtr",
                                      "rtr2rts", "rtr2rts")):
                ops.append((tc + 0.004 * k, r, kind, 0))

        for r in range(RANKS):
            pids.append(self.next_pid)
            self.next_pid += int(rng.integers(3, 40))
            t0 = t + 2.0 + 0.031 * r + rng.uniform(0, 0.01)
            for s in range(GID_SLOTS):
                ops.append((t0 + 0.002 * s, r, "gid", s))
            for dt_, kind in ((0.02, "alloc_pd"), (0.03, "create_cq"), (0.035, "create_cq"), (0.05, "dmabuf_no_odp"),
                              (0.06, "reg_host"), (0.07, "reg_host"), (0.09, "reg_gpu"), (0.13, "reg_gpu")):
                ops.append((t0 + dt_, r, kind, 0))
            comm(t0 + 1.0, r)
            tr, k = t0 + 30.0, 0
            while tr < end_plan:
                ops.append((tr, r, "reg_host" if k % 2 == 0 else "reg_gpu", 0))
                k += 1
                tr += rng.uniform(60, 120)
            tc = t0 + rng.uniform(300, 900)
            while tc < end_plan:
                comm(tc, r)
                tc += rng.uniform(600, 1200)
        ops.sort()
        kill_at = float("inf")
        dead: set[int] = set()
        for when, r, kind, slot in ops:
            if when >= kill_at or when >= end_plan + 5 or when >= self.H:
                break
            if r in dead:
                continue
            v = self.variant(kind, slot, when)
            self.emit(v, when, pids[r], ppid, job, restart)
            if v in FATAL:
                dead.add(r)
                kill_at = min(kill_at, when + NOMINAL_LATENCY_S[v] + 1.5)
        return kill_at if kill_at != float("inf") else None

    # -- one call tree -----------------------------------------------------------------------
    def emit(self, v: str, t: float, pid: int, ppid: int, job: int, restart: int) -> None:
        snap = min(int(t // SNAP_S), self.n_snap - 1)
        self.counts[snap, VIDX[v]] += 1
        tree, op, arg, family = VARIANTS[v]
        failed = tree[0][2] is not None
        timed = (t % CAPTURE_EVERY_S) < CAPTURE_LEN_S
        if not (failed or timed):
            return
        entry, lat = _timing(tree, float(self.rng.uniform(0.8, 1.3)))
        root_wall = int(START.timestamp() * 1e9) + int(t * 1e9)
        root_mono = root_wall - self.boot_wall_ns
        if not failed and lat[0] > 50_000_000:
            return  # good traces are sampled under 50 ms only
        trace_id = f"{self.name}:{self.boot_id}:{pid}:{self.next_trace}"
        self.next_trace += 1
        c = self.cols
        n = len(tree)
        if timed:
            ts = [root_mono + entry[i] - entry[0] for i in range(n)]
            lats = lat
            start_ns, end_ns = root_wall, root_wall + lat[0]
        else:
            tick = (root_mono + lat[0]) // TICK_NS * TICK_NS
            ts = [tick] * n
            lats = [None] * n
            start_ns = end_ns = tick + self.boot_wall_ns
        exit_status = -ERRNO[tree[0][2]] if failed else 0
        meta = self.meta(t, job, restart)
        c["trace_id"] += [trace_id] * n
        c["seq"] += list(range(n))
        c["ts_ns"] += ts
        c["pid"] += [pid] * n
        c["tid"] += [pid] * n
        c["ppid"] += [ppid] * n
        c["probe"] += [f[1] for f in tree]
        c["layer"] += [layer_of(f[1]) for f in tree]
        c["depth"] += [f[0] for f in tree]
        c["ret"] += [-ERRNO[f[2]] if f[2] else 0 for f in tree]
        c["errno"] += [f[2] for f in tree]
        c["latency_ns"] += lats
        c["arg"] += [arg] + [None] * (n - 1)
        c["kind"] += ["failure" if failed else "good"] * n
        c["command"] += [op] * n
        c["exit_status"] += [exit_status] * n
        c["start_ns"] += [start_ns] * n
        c["end_ns"] += [end_ns] * n
        c["job_id"] += [str(job)] * n
        c["meta"] += [meta] * n
        if failed:
            probe, errno, layer = FAMILIES[family]
            self.truth.append((trace_id, "failure", family, probe, errno, layer, family in ROUTINE, False, start_ns))
            fam = self.families.setdefault(family, {"jobs": set(), "times": set()})
            fam["jobs"].add(str(job))
            fam["times"].add(round(t / 3600, 3))
        else:
            # a good tree holding an absorbed error (the GPU registration's GUP EFAULT) holds only
            # routine errors: expected_error, as the TRUTH schema defines it; no injected cause
            absorbed = any(f[2] for f in tree)
            self.truth.append((trace_id, "good", None, None, None, None, absorbed, bool(self.rng.random() < 0.1),
                               start_ns))

    # -- the host's window -------------------------------------------------------------------
    def run(self, jobs: list[int]) -> None:
        rng = self.rng
        t = rng.uniform(0, 900)
        while t < self.H:
            jobs[0] += 1
            job = jobs[0]
            remaining = rng.uniform(1.5, 4.0) * 3600
            restart = 0
            while t < self.H:
                start = t
                ended = self.attempt(t, t + remaining, job, restart)
                if ended is None:
                    t = start + remaining + rng.uniform(60, 300)
                    break
                remaining = max(remaining - (ended - start), 900.0)
                t = ended + rng.uniform(180, 360)
                restart += 1


# ------------------------------------------------------------------------------------------
# writing
# ------------------------------------------------------------------------------------------
def _ts(ns: np.ndarray) -> pa.Array:
    return pa.array(ns, pa.timestamp("ns", tz="UTC"))


def _dates(ns: np.ndarray) -> np.ndarray:
    return (ns // (86_400 * 10**9)).astype(np.int64)


def _date_str(day: int) -> str:
    return (dt.date(1970, 1, 1) + dt.timedelta(days=int(day))).isoformat()


def _write_events(out: Path, h: _Host) -> None:
    c = h.cols
    if not c["trace_id"]:
        return
    meta_arr = pa.array(h.meta_lists, METADATA_TYPE)
    n = len(c["trace_id"])
    start = np.asarray(c["start_ns"], dtype=np.int64)
    arrays = {
        "trace_id": pa.array(c["trace_id"], pa.string()),
        "seq": pa.array(c["seq"], pa.int64()),
        "ts_ns": pa.array(c["ts_ns"], pa.int64()),
        "pid": pa.array(c["pid"], pa.int32()),
        "tid": pa.array(c["tid"], pa.int32()),
        "ppid": pa.array(c["ppid"], pa.int32()),
        "comm": pa.array(["python3"] * n, pa.string()),
        "probe": pa.array(c["probe"], pa.string()),
        "layer": pa.array(c["layer"], pa.string()),
        "depth": pa.array(c["depth"], pa.int16()),
        "ret": pa.array(c["ret"], pa.int64()),
        "errno": pa.array(c["errno"], pa.string()),
        "latency_ns": pa.array(c["latency_ns"], pa.int64()),
        "path": pa.nulls(n, pa.string()),
        "arg": pa.array(c["arg"], pa.string()),
        "path2": pa.nulls(n, pa.string()),
        "output": pa.nulls(n, pa.string()),
        "kind": pa.array(c["kind"], pa.string()),
        "command": pa.array(c["command"], pa.string()),
        "exit_status": pa.array(c["exit_status"], pa.int32()),
        "start_time": _ts(start),
        "end_time": _ts(np.asarray(c["end_ns"], dtype=np.int64)),
        "host": pa.array([h.name] * n, pa.string()),
        "kernel_release": pa.array([KERNEL] * n, pa.string()),
        "lost_events": pa.array(np.zeros(n, dtype=np.int64)),
        "job_id": pa.array(c["job_id"], pa.string()),
        "metadata": meta_arr.take(pa.array(c["meta"], pa.int32())),
        "repeat_count": pa.nulls(n, pa.int64()),
    }
    table = pa.Table.from_arrays([arrays[f.name] for f in EVENTS], schema=EVENTS)
    days = _dates(start)
    for day in np.unique(days):
        part = table.filter(pa.array(days == day))
        write_partition(part, out, "events", _date_str(day), h.name, "part-0000.parquet", durable=False)
    tr = h.truth
    truth = pa.table({
        "trace_id": pa.array([r[0] for r in tr], pa.string()),
        "host": pa.array([h.name] * len(tr), pa.string()),
        "kind": pa.array([r[1] for r in tr], pa.string()),
        "root_cause": pa.array([r[2] for r in tr], pa.string()),
        "bifurcation_probe": pa.array([r[3] for r in tr], pa.string()),
        "bifurcation_errno": pa.array([r[4] for r in tr], pa.string()),
        "origin_layer": pa.array([r[5] for r in tr], pa.string()),
        "expected_error": pa.array([r[6] for r in tr], pa.bool_()),
        "held_out": pa.array([r[7] for r in tr], pa.bool_()),
    }, schema=TRUTH)
    tdays = _dates(np.asarray([r[8] for r in tr], dtype=np.int64))
    for day in np.unique(tdays):
        write_partition(truth.filter(pa.array(tdays == day)), out, "truth", _date_str(day), h.name,
                        "part-0000.parquet", durable=False)


def _write_counters(out: Path, h: _Host) -> None:
    inv = h.counts @ _INV
    fail = h.counts @ _FAIL
    errs = [h.counts @ _ERR[k] for k in range(len(ERRNOS))]
    n_snap, n_probe = inv.shape
    snap_ns = (int(START.timestamp()) + (np.arange(n_snap, dtype=np.int64) + 1) * SNAP_S) * 10**9
    rows_snap = np.repeat(snap_ns, n_probe)
    errno_counts: list[list[dict]] = []
    for s in range(n_snap):
        for p in range(n_probe):
            if fail[s, p]:
                errno_counts.append([{"errno": ERRNOS[k], "count": int(errs[k][s, p])}
                                     for k in range(len(ERRNOS)) if errs[k][s, p]])
            else:
                errno_counts.append([])
    n = n_snap * n_probe
    table = pa.Table.from_arrays([
        pa.array([h.name] * n, pa.string()),
        _ts(rows_snap),
        pa.array(np.full(n, float(SNAP_S))),
        pa.array([KERNEL] * n, pa.string()),
        pa.array(["mlx5"] * n, pa.string()),
        pa.array(["rdma-ofed"] * n, pa.string()),
        pa.array(PROBES * n_snap, pa.string()),
        pa.array([layer_of(p) for p in PROBES] * n_snap, pa.string()),
        pa.array(np.ones(n, dtype=bool)),
        pa.array(inv.reshape(-1)),
        pa.array(fail.reshape(-1)),
        pa.array(errno_counts, COUNTERS.field("errno_counts").type),
        pa.array(np.zeros(n, dtype=np.int64)),
    ], schema=COUNTERS)
    days = _dates(rows_snap)
    for day in np.unique(days):
        part = table.filter(pa.array(days == day))
        path = write_partition(part, out, "counters", _date_str(day), h.name, "part-0000.parquet", durable=False)
        write_counter_buckets(path, part, durable=False)


def generate(out_dir, hosts: int = 32, hours: float = 24, seed: int = 31, faults: bool = True) -> dict:
    """Write the fleet's dataset (events, counters + counter_buckets, truth) under `out_dir`; return
    the summary (also written to <out_dir>/fleetgen31.json)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = [f"gpu-r{i // 8}-{i % 8:02d}" for i in range(hosts)]
    roles = _roles(names, faults)
    H = hours * 3600.0
    windows = {"peermem": (0.25 * H, 0.355 * H), "arp": (0.42 * H, 0.67 * H), "route": (0.50 * H, 0.5625 * H)}
    jobs = [480_000 + seed * 1000]
    counts: dict[str, int] = {}
    family_hosts: dict[str, set] = {}
    family_jobs: dict[str, set] = {}
    family_hours: dict[str, list] = {}
    flaps: dict[str, list] = {}
    for i, name in enumerate(names):
        h = _Host(name, i, hours, seed, roles, windows, faults)
        h.run(jobs)
        _write_events(out, h)
        _write_counters(out, h)
        for fam, d in h.families.items():
            counts[fam] = counts.get(fam, 0) + sum(1 for r in h.truth if r[2] == fam)
            family_hosts.setdefault(fam, set()).add(name)
            family_jobs.setdefault(fam, set()).update(d["jobs"])
            lo, hi = min(d["times"]), max(d["times"])
            prev = family_hours.get(fam)
            family_hours[fam] = [min(lo, prev[0]), max(hi, prev[1])] if prev else [lo, hi]
        if h.flaps:
            flaps[name] = [[a / 3600, b / 3600] for a, b in h.flaps]
    summary = {
        "hosts": names,
        "hours": hours,
        "seed": seed,
        "faults": faults,
        "start": START.isoformat(),
        "roles": roles,
        "windows_h": {k: [a / 3600, b / 3600] for k, (a, b) in windows.items()},
        "flaps_h": flaps,
        "counts": counts,
        "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
        "family_jobs": {k: sorted(v) for k, v in family_jobs.items()},
        "family_hours": family_hours,
    }
    (out / "fleetgen31.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

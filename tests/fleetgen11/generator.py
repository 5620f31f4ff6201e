"""fleetgen11: an eleventh fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md, tests/fleet_harness.py and the other generators' docstrings
only), aimed at host-alert recall: which hosts must alert, with which errno.

The fleet: RoCE GPU hosts in racks of 8 (`dc1-r<RR>-h<NN>`), one platform per rack (rack mod 5):
0, 1 mlx5 on MLNX_OFED (GPU memory through the peer-memory client), 2 mlx5 upstream (GPU memory
through dma-buf), 3 bnxt_re, 4 irdma. A batch scheduler packs short jobs: every job is one
process that opens the device, queries the port and four GID slots, allocates a PD, registers
two MRs, creates a CQ and an RC QP, moves it RESET->INIT->RTR->RTS, and tears down. Most hosts
run ~3 such processes a minute; racks with rack mod 4 == 1 are packed (~30 a minute, 1,800 an
hour). The daemon: 60 s snapshots, per-probe counters of every call, failure trees (a tree is
emitted when any of its probes returns an error) with the first 2 of a signature per snapshot as
records and the rest in the second's repeat_count, and every good tree of the processes that
start in a capture window (the first 10 s of every fifth minute), timed there only.

Not faults (the audit must not alert): one irdma host's NIC is swapped for an mlx5 card half-way
(the vendor and driver frames change, its irdma-only routine error stops), and packed hosts make
10x the calls of the others.

Routine families (truth expected_error, no root cause; the process goes on):
  R1 gid_empty_slot: query_gid ENODATA at rdma_get_gid_attr (an empty GID slot, reference:
     "-ENODATA: empty GID slot"), every host, half the processes;
  R2 counter_unbind_no_counter: destroy_qp -> rdma_counter_unbind_qp EINVAL, ignored (reference:
     "returns -EINVAL when the QP has no counter (ignored)"), every destroy_qp on the hosts whose
     counter mode is not AUTO (all but the OFED racks); the root returns 0;
  R3 double_destroy_qp: a job template's destructor destroys the QP the application already
     destroyed: __uobj_get_destroy -> rdma_lookup_get_uobject ENOENT (reference: "-ENOENT unknown
     qp_handle"), 20 % of processes on packed hosts;
  R4 gid_no_netdev: query_gid's rdma_read_gid_attr_ndev_rcu ENODEV, tolerated (reference: "-ENODEV
     tolerated (ifindex stays 0)"), slot 1 on every host, 30 %; the root returns 0;
  R5 dmabuf_probe_irdma: the library tries a dma-buf MR first; the older irdma has no
     reg_user_mr_dmabuf op: ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR EOPNOTSUPP under the
     ioctl dispatch chain (reference: "-EOPNOTSUPP device has no reg_user_mr_dmabuf op"), then a
     plain MR: once per process on irdma hosts (a per-driver errno);
  R6 peer_fallback_efault: GPU memory on OFED hosts: pin_user_pages_fast EFAULT under
     __ib_umem_get, then ib_peer_umem_get claims the range (reference: "OFED with a peer client
     then retries in ib_peer_umem_get"); the root returns 0.

Injected faults (truth root_cause; `ROOT_CAUSES` gives hosts, probe, errno, window and whether
the hosts must alert):
  F1 pinned_leak_enomem: one mlx5-upstream host leaks pinned pages: reg_mr ENOMEM at ib_umem_get
     ("pinned_vm + npages > RLIMIT_MEMLOCK"), its share of MR registrations rising exponentially
     from 0.1 % at the start to 30 % at the end (a slow burn): must alert (ENOMEM);
  F2 bad_host_cq_eio: one mlx5 host among all: CREATE_CQ firmware INT_ERR, EIO at mlx5_cmd_do
     under mlx5_core_create_cq, 60 % of create_cq the whole window: must alert (EIO);
  F3 maintenance_drain_eio: a rolling drain of one OFED rack: each host in turn for 10 minutes
     (12 minutes apart, from a third of the window) has its device disassociated under the jobs
     the scheduler still starts there: alloc_pd EIO at rdma_alloc_begin_uobject ("down_read_trylock
     (hw_destroy_rwsem) fails (disassociate/close in progress)"). Not routine: the reference lists
     no disassociation as expected, and a job failing on a device pulled from under it is a real
     failure (the drain should have stopped the jobs first), so one cluster across the rack; no
     host alert is required (10 minutes a host), and one on a drained host with EIO is tolerated;
  F4 neigh_timeout_ringbuf: one mlx5 host's ToR port stops answering ARP from 30 % of the window:
     every INIT->RTR fails ETIMEDOUT at rdma_addr_find_l2_eth_by_grh. Its ring buffer is full: for
     15 minutes one record per snapshot carries the rest in repeat_count, then no record at all
     (lost_records counts them), only the counters: must alert (ETIMEDOUT);
  F5 oot_driver_enotsupp: four bnxt_re hosts get an out-of-tree driver build from 40 % to 70 % of
     the window (then rolled back): half their create_qp fail with -524 (ENOTSUPP, a
     kernel-internal code the reference does not list) at bnxt_re_create_qp: one cluster. No host
     alert is required, one with ENOTSUPP is tolerated: four hosts failing alike at once is what a
     rollout looks like, and the audit's contract leaves a cause on more than three hosts to the
     root-cause clusters (decided after the first audit: written first as "must alert");
  F6 pd_exhausted_tracer_crash: one irdma host's PD ids run out from 50 % of the window:
     alloc_pd EOVERFLOW at irdma_alloc_rsrc (reference: "PD ids exhausted (-EOVERFLOW,
     unconfirmed)"); its tracer crashes at 60 %: no snapshot after, while its jobs go on failing
     (unseen): must alert (EOVERFLOW) from the 10 minutes it saw;
  F7 dmabuf_map_timeout: three mlx5-upstream hosts' GPU exporter hangs from 20 % to 50 %: 80 % of
     the dma-buf MR registrations fail ETIMEDOUT at ib_umem_dmabuf_map_pages (dma_resv_wait_timeout
     returned 0) nine frames deep under the ioctl dispatch chain, unwound by mlx5_ib_dereg_mr:
     must alert (ETIMEDOUT).
Every fault is fatal for its process (the job fails); every routine error is not.

Changed after the first audit (the generator was wrong): its first version recorded one good tree
per operation per capture window, not every tree of the processes in it as the daemon does, so
the process of a routine error had no later record and every routine family looked fatal; and
R4 was confined to the non-OFED hosts (a quarter of the mlx5 group) for no reason the reference
gives.
"""

from __future__ import annotations

import functools
import json
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import write_partition

START = datetime(2026, 11, 23, 1, 0, tzinfo=UTC)  # a window that stays in one day up to 22 h
SNAP_S = 60
EXAMPLES = 2  # records per signature per snapshot; the rest in the last one's repeat_count
CAPTURE_EVERY = 5  # a capture window opens in the first minute of every five ...
CAPTURE_S = 10.0  # ... for its first 10 s: every tree of a process started then is recorded, timed

ROUTINE = ("gid_empty_slot", "counter_unbind_no_counter", "double_destroy_qp", "gid_no_netdev",
           "dmabuf_probe_irdma", "peer_fallback_efault")

# name: (probe where it first appears, errno, operation, whether the hosts must alert)
ROOT_CAUSES = {
    "pinned_leak_enomem": ("ib_umem_get", "ENOMEM", "reg_mr", True),
    "bad_host_cq_eio": ("mlx5_cmd_do", "EIO", "create_cq", True),
    "maintenance_drain_eio": ("rdma_alloc_begin_uobject", "EIO", "alloc_pd", False),
    "neigh_timeout_ringbuf": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "modify_qp", True),
    "oot_driver_enotsupp": ("bnxt_re_create_qp", "ENOTSUPP", "create_qp", False),
    "pd_exhausted_tracer_crash": ("irdma_alloc_rsrc", "EOVERFLOW", "alloc_pd", True),
    "dmabuf_map_timeout": ("ib_umem_dmabuf_map_pages", "ETIMEDOUT", "reg_dmabuf_mr", True),
}

ERRNO = {"ENOENT": 2, "EIO": 5, "EFAULT": 14, "ENODEV": 19, "EINVAL": 22, "ENODATA": 61,
         "EOVERFLOW": 75, "EOPNOTSUPP": 95, "ETIMEDOUT": 110, "ENOMEM": 12, "ENOTSUPP": 524}

PLATFORMS = ("mlx5_ofed", "mlx5_ofed", "mlx5_up", "bnxt_re", "irdma")
VENDOR = {"mlx5_ofed": "mlx5", "mlx5_up": "mlx5", "bnxt_re": "bnxt_re", "irdma": "irdma"}
KERNEL = {"mlx5_ofed": "5.15.0-119-generic+ofed24.07", "mlx5_up": "6.8.0-45-generic",
          "bnxt_re": "6.8.0-45-generic", "irdma": "6.8.0-45-generic"}
DRIVER = {"mlx5_ofed": "mlx5_ib", "mlx5_up": "mlx5_ib", "bnxt_re": "bnxt_re", "irdma": "irdma"}

_PEER = {"ib_umem_get_peer", "__ib_umem_get", "ib_peer_umem_get", "ib_get_peer_client",
         "ib_umem_activate_invalidation_notifier"}
_UVERBS = {"create_qp", "create_cq", "modify_qp"}  # uverbs_cmd.c's statics


@functools.cache
def layer_of(fn: str) -> str:
    if fn.startswith("ib_uverbs_") or fn in _UVERBS:
        return "uverbs"
    if fn in _PEER:
        return "peer-mem"
    if fn.startswith(("mlx5", "__mlx5", "bnxt_", "irdma_")):
        return "driver"
    return "core"


# ------------------------------------------------------------------------------------------------
# call trees: lists of (depth, function, errno or None), built from the reference's trees
# ------------------------------------------------------------------------------------------------
def _fail_up(frames, errno):
    """Every frame on the path from the root to the last frame returns `errno` (an errno that
    propagates up unchanged), the siblings before it succeeded."""
    out, need = [], frames[-1][0]
    for depth, fn, e in reversed(frames):
        if depth <= need and e is None:
            out.append((depth, fn, errno))
            need = depth - 1
        else:
            out.append((depth, fn, e))
    return list(reversed(out))


def tree_alloc_pd(p, fault=None):
    d = DRIVER[p]
    if fault == "drain":
        return [(0, "ib_uverbs_alloc_pd", "EIO"), (1, "rdma_alloc_begin_uobject", "EIO")]
    child = {"mlx5_ofed": "mlx5_cmd_exec", "mlx5_up": "mlx5_cmd_exec", "bnxt_re": "bnxt_qplib_alloc_pd",
             "irdma": "irdma_alloc_rsrc"}[p]
    head = [(0, "ib_uverbs_alloc_pd", None), (1, "rdma_alloc_begin_uobject", None), (1, f"{d}_alloc_pd", None),
            (2, child, None)]
    if fault == "pd_exhausted":
        return _fail_up(head, "EOVERFLOW") + [(1, "rdma_alloc_abort_uobject", None)]
    return head + [(1, "rdma_restrack_add", None), (1, "uverbs_response", None)]


def tree_create_cq(p, fault=None):
    d = DRIVER[p]
    t = [(0, "ib_uverbs_create_cq", None), (1, "create_cq", None), (2, "rdma_alloc_begin_uobject", None),
         (2, f"{d}_create_cq", None)]
    if p.startswith("mlx5"):
        t += [(3, "create_cq_user", None), (4, "ib_umem_get", None), (4, "mlx5_ib_db_map_user", None),
              (3, "mlx5_comp_eqn_get", None), (3, "mlx5_core_create_cq", None), (4, "mlx5_cmd_do", None)]
    elif p == "bnxt_re":
        t += [(3, "ib_umem_get", None), (3, "bnxt_qplib_create_cq", None)]
    if fault == "cq_eio":
        return _fail_up(t, "EIO") + [(2, "rdma_alloc_abort_uobject", None)]
    return t + [(2, "rdma_restrack_add", None), (2, "uverbs_response", None)]


def tree_create_qp(p, fault=None):
    d = DRIVER[p]
    t = [(0, "ib_uverbs_create_qp", None), (1, "create_qp", None), (2, "rdma_alloc_begin_uobject", None),
         (2, "rdma_lookup_get_uobject", None), (2, "rdma_lookup_get_uobject", None),
         (2, "ib_create_qp_user", None), (3, f"{d}_create_qp", None)]
    if fault == "oot":
        t += [(4, "bnxt_re_test_qp_limits", None)]
        return _fail_up(t[:-1], "ENOTSUPP") + [t[-1], (2, "rdma_alloc_abort_uobject", None)]
    if p == "mlx5_ofed":
        t += [(4, "mlx5_ib_dev_res_srq_init", None)]
    if p.startswith("mlx5"):
        t += [(4, "ib_umem_get", None), (4, "mlx5_ib_db_map_user", None), (4, "mlx5_qpc_create_qp", None),
              (5, "mlx5_cmd_exec", None)]
    elif p == "bnxt_re":
        t += [(4, "bnxt_re_test_qp_limits", None), (4, "ib_umem_get", None), (4, "bnxt_qplib_create_qp", None)]
    else:
        t += [(4, "irdma_alloc_rsrc", None), (4, "irdma_cqp_create_qp_cmd", None)]
    return t + [(3, "ib_create_qp_security", None), (3, "rdma_restrack_add", None), (2, "ib_qp_usecnt_inc", None),
                (2, "rdma_lookup_put_uobject", None), (2, "uverbs_response", None)]


def tree_modify_qp(p, transition, fault=None):
    d = {"irdma": "irdma_modify_qp_roce"}.get(p, f"{DRIVER[p]}_modify_qp")
    t = [(0, "ib_uverbs_modify_qp", None), (1, "modify_qp", None), (2, "rdma_lookup_get_uobject", None),
         (2, "ib_modify_qp_with_udata", None), (3, "_ib_modify_qp", None)]
    if transition == "INIT->RTR":
        t += [(4, "rdma_fill_sgid_attr", None), (5, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", None),
              (5, "rdma_check_gid_user_access", None), (5, "ib_resolve_unicast_gid_dmac", None),
              (6, "rdma_addr_find_l2_eth_by_grh", None)]
        if fault == "neigh":
            return _fail_up(t, "ETIMEDOUT") + [(4, "rdma_unfill_sgid_attr", None),
                                               (2, "rdma_lookup_put_uobject", None)]
        t += [(4, "rdma_lag_get_ah_roce_slave", None)]
    if transition == "RESET->INIT":
        t += [(4, "rdma_counter_bind_qp_auto", None)]
    t += [(4, "ib_security_modify_qp", None), (5, d, None)]
    if p.startswith("mlx5"):
        t += [(6, "ib_modify_qp_is_ok", None), (6, "__mlx5_ib_modify_qp", None), (7, "mlx5_core_qp_modify", None),
              (8, "mlx5_cmd_exec", None)]
    elif p == "irdma":
        t += [(6, "ib_modify_qp_is_ok", None), (6, "irdma_hw_modify_qp", None)]
    if transition == "INIT->RTR":
        t += [(4, "rdma_lag_put_ah_roce_slave", None), (4, "rdma_unfill_sgid_attr", None)]
    return t + [(2, "rdma_lookup_put_uobject", None)]


def tree_reg_mr(p, memory, fault=None, pins=1):
    """memory: "host" or "gpu" (OFED only: the peer-memory fallback)."""
    d = DRIVER[p]
    t = [(0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None), (1, "rdma_lookup_get_uobject", None),
         (1, f"{d}_reg_user_mr", None)]
    if fault == "leak":
        t += [(2, "ib_umem_get", None)]
        return _fail_up(t, "ENOMEM") + [(1, "rdma_alloc_abort_uobject", None)]
    if p == "mlx5_ofed":
        t += [(2, "ib_umem_get_peer", None), (3, "__ib_umem_get", None)]
        if memory == "gpu":
            t += [(4, "pin_user_pages_fast", "EFAULT"), (4, "ib_peer_umem_get", None), (5, "ib_get_peer_client", None),
                  (2, "create_real_mr", None), (3, "reg_create", None), (4, "mlx5_cmd_exec", None),
                  (3, "ib_umem_activate_invalidation_notifier", None)]
        else:
            t += [(4, "pin_user_pages_fast", None)] * pins + [(4, "sg_alloc_append_table_from_pages", None),
                                                              (2, "create_real_mr", None), (3, "alloc_cacheable_mr", None),
                                                              (3, "mlx5r_umr_update_mr_pas", None)]
    else:
        t += [(2, "ib_umem_get", None)] + [(3, "pin_user_pages_fast", None)] * pins
        t += [(3, "sg_alloc_append_table_from_pages", None)]
        if p == "mlx5_up":
            t += [(2, "create_real_mr", None), (3, "alloc_cacheable_mr", None), (3, "mlx5r_umr_update_mr_pas", None)]
    return t + [(1, "rdma_restrack_add", None), (1, "rdma_lookup_put_uobject", None), (1, "uverbs_response", None)]


def tree_reg_dmabuf_mr(p, fault=None):
    """Through the ioctl dispatch chain (ib_uverbs_ioctl at the root)."""
    t = [(0, "ib_uverbs_ioctl", None), (1, "ib_uverbs_cmd_verbs", None), (2, "ib_uverbs_run_method", None),
         (3, "rdma_alloc_begin_uobject", None), (3, "rdma_lookup_get_uobject", None),
         (3, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", None)]
    if p == "irdma":  # R5: no reg_user_mr_dmabuf op
        return _fail_up(t, "EOPNOTSUPP") + [(3, "rdma_alloc_abort_uobject", None)]
    t += [(4, "mlx5_ib_reg_user_mr_dmabuf", None), (5, "mlx5r_umr_resource_init", None),
          (5, "ib_umem_dmabuf_get", None), (6, "dma_buf_get", None), (6, "dma_buf_dynamic_attach", None),
          (5, "alloc_cacheable_mr", None), (5, "mlx5_ib_init_dmabuf_mr", None), (6, "pagefault_dmabuf_mr", None),
          (7, "ib_umem_dmabuf_map_pages", None), (8, "dma_buf_map_attachment", None),
          (8, "dma_resv_wait_timeout", None)]
    if fault == "dmabuf":
        return _fail_up(t, "ETIMEDOUT")[:-1] + [t[-1], (5, "mlx5_ib_dereg_mr", None),
                                                (3, "rdma_alloc_abort_uobject", None)]
    return t + [(7, "mlx5r_umr_update_mr_pas", None), (4, "rdma_restrack_add", None),
                (4, "uverbs_finalize_uobj_create", None), (3, "rdma_alloc_commit_uobject", None)]


def tree_query_gid(p, empty=False, no_netdev=False):
    t = [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", None), (1, "rdma_get_gid_attr", None)]
    if empty:
        return _fail_up(t, "ENODATA")
    return t + [(1, "rdma_read_gid_attr_ndev_rcu", "ENODEV" if no_netdev else None), (1, "rdma_put_gid_attr", None)]


def tree_query_port(p):
    d = DRIVER[p]
    t = [(0, "ib_uverbs_query_port", None), (1, "ib_query_port", None), (2, "__ib_query_port", None),
         (3, f"{d}_query_port", None)]
    if p.startswith("mlx5"):
        t += [(4, "mlx5_query_port_roce", None)]
    elif p == "irdma":
        t += [(4, "ib_get_eth_speed", None)]
    return t + [(1, "copy_port_attr_to_resp", None)]


def tree_dereg_mr(p):
    d = DRIVER[p]
    return [(0, "ib_uverbs_dereg_mr", None), (1, "__uobj_perform_destroy", None), (2, "rdma_lookup_get_uobject", None),
            (2, "uverbs_free_mr", None), (3, "ib_dereg_mr_user", None), (4, f"{d}_dereg_mr", None),
            (5, "ib_umem_release", None), (2, "ib_rdmacg_uncharge", None), (1, "rdma_lookup_put_uobject", None)]


def tree_destroy_qp(p, double=False):
    d = DRIVER[p]
    if double:
        return [(0, "ib_uverbs_destroy_qp", "ENOENT"), (1, "__uobj_get_destroy", "ENOENT"),
                (2, "rdma_lookup_get_uobject", "ENOENT")]
    unbind = None if p == "mlx5_ofed" else "EINVAL"  # R2: no counter bound outside AUTO mode
    return [(0, "ib_uverbs_destroy_qp", None), (1, "__uobj_get_destroy", None), (2, "rdma_lookup_get_uobject", None),
            (2, "uverbs_free_qp", None), (3, "ib_destroy_qp_user", None), (4, "rdma_counter_unbind_qp", unbind),
            (4, f"{d}_destroy_qp", None), (4, "rdma_restrack_del", None), (1, "rdma_lookup_put_uobject", None)]


def tree_dealloc_pd(p):
    d = DRIVER[p]
    t = [(0, "ib_uverbs_dealloc_pd", None), (1, "__uobj_perform_destroy", None), (2, "rdma_lookup_get_uobject", None),
         (2, "uverbs_free_pd", None), (3, "ib_dealloc_pd_user", None), (4, f"{d}_dealloc_pd", None)]
    if p.startswith("mlx5"):
        t += [(5, "mlx5_cmd_dealloc_pd", None)]
    return t + [(2, "ib_rdmacg_uncharge", None), (1, "rdma_lookup_put_uobject", None)]


# A variant: (operation, arg, frames, label) where label is None (good), a routine family or a
# root cause. Its origin is its deepest failing frame that no failing child explains.
def origin_of(frames):
    failing = [i for i, (_, _, e) in enumerate(frames) if e]
    if not failing:
        return None
    # the first failing frame none of whose following frames (its subtree) fails
    for i in failing:
        depth = frames[i][0]
        j = i + 1
        below = False
        while j < len(frames) and frames[j][0] > depth:
            below = below or frames[j][2] is not None
            j += 1
        if not below:
            return frames[i][1], frames[i][2]
    return frames[failing[-1]][1], frames[failing[-1]][2]


class Host:
    def __init__(self, name, rack, platform):
        self.name, self.rack, self.platform = name, rack, platform
        self.packed = rack % 4 == 1


def fleet(hosts: int) -> list[Host]:
    out = []
    for i in range(hosts):
        rack, n = divmod(i, 8)
        out.append(Host(f"dc1-r{rack:02d}-h{n:02d}", rack, PLATFORMS[rack % 5]))
    return out


def _pick(hosts, platform, k, exclude):
    cands = [h for h in hosts if h.platform == platform and h.name not in exclude and not h.packed]
    cands = cands or [h for h in hosts if h.platform == platform and h.name not in exclude]
    return cands[:k]


def plan(hosts: list[Host], minutes: int) -> dict:
    """Which hosts carry which fault and when (minutes from the start)."""
    used: set[str] = set()

    def take(platform, k, skip=0):
        got = _pick(hosts, platform, k + skip, used)[skip:]
        used.update(h.name for h in got)
        return got

    swap = take("irdma", 1, skip=2)
    p = {
        "pinned_leak_enomem": take("mlx5_up", 1, skip=1),
        "bad_host_cq_eio": take("mlx5_ofed", 1, skip=3),
        "neigh_timeout_ringbuf": take("mlx5_ofed", 1, skip=1),
        "oot_driver_enotsupp": take("bnxt_re", 4),
        "pd_exhausted_tracer_crash": take("irdma", 1),
        "dmabuf_map_timeout": take("mlx5_up", 3),
    }
    # the drain: the first OFED rack none of whose hosts carries another fault
    racks = sorted({h.rack for h in hosts if h.platform == "mlx5_ofed"})
    drain_rack = next((r for r in racks if not any(h.rack == r and h.name in used for h in hosts)), racks[-1])
    p["maintenance_drain_eio"] = [h for h in hosts if h.rack == drain_rack and h.name not in used]
    windows = {
        "pinned_leak_enomem": (0, minutes),
        "bad_host_cq_eio": (0, minutes),
        "neigh_timeout_ringbuf": (int(0.3 * minutes), minutes),
        "oot_driver_enotsupp": (int(0.4 * minutes), int(0.7 * minutes)),
        "pd_exhausted_tracer_crash": (int(0.5 * minutes), minutes),
        "dmabuf_map_timeout": (int(0.2 * minutes), int(0.5 * minutes)),
    }
    drain = {h.name: (minutes // 3 + 12 * i, minutes // 3 + 12 * i + 10) for i, h in enumerate(p["maintenance_drain_eio"])}
    return {"hosts": {k: [h.name for h in v] for k, v in p.items()}, "windows": windows, "drain": drain,
            "swap": {swap[0].name: minutes // 2} if swap else {}, "crash_at": int(0.6 * minutes)}


# ------------------------------------------------------------------------------------------------
# one host
# ------------------------------------------------------------------------------------------------
class Sink:
    """Column lists of one host's events, truth and counters."""

    def __init__(self):
        self.ev = defaultdict(list)
        self.truth = defaultdict(list)
        self.counters = defaultdict(list)
        self.n = 0


def simulate_host(h: Host, pl_: dict, minutes: int, rng: np.random.Generator, sink: Sink) -> None:
    windows, hosts_of = pl_["windows"], pl_["hosts"]
    faults = {rc for rc, hs in hosts_of.items() if h.name in hs}
    swap_at = pl_["swap"].get(h.name)
    crash_at = pl_["crash_at"] if "pd_exhausted_tracer_crash" in faults else None
    boot_ns = int(rng.integers(3_600, 90 * 86_400)) * 1_000_000_000
    rate = 30.0 if h.packed else 3.0
    pid_next = int(rng.integers(20_000, 60_000))
    job_next = int(rng.integers(100_000, 900_000))
    ring_full_from = None
    if "neigh_timeout_ringbuf" in faults:
        ring_full_from = windows["neigh_timeout_ringbuf"][0] + 15

    for m in range(minutes):
        if crash_at is not None and m >= crash_at:
            break  # the tracer crashed: no snapshot, no record, the jobs go on failing unseen
        platform = "mlx5_up" if swap_at is not None and m >= swap_at else h.platform
        capture = m % CAPTURE_EVERY == 0
        n = int(rng.poisson(rate))
        calls: Counter = Counter()  # variant -> count
        pids: dict = defaultdict(list)  # variant -> (pid, job) examples

        def active(rc, m=m):
            if rc not in faults:
                return False
            lo, hi = windows[rc]
            return lo <= m < hi

        offsets = np.sort(rng.uniform(0.0, SNAP_S - 1.0, n))  # when each process starts in the minute
        procs = [(pid_next + i, job_next + i, float(offsets[i])) for i in range(n)]
        pid_next += n
        job_next += n
        goods: list = []  # (variant, pid, job, second) of the good trees a capture window records

        def record(seq, proc, calls=calls, pids=pids, goods=goods, capture=capture):
            pid, job, off = proc
            for i, v in enumerate(seq):
                calls[v] += 1
                t = off + 0.02 * i
                if v[2] != "good":  # the first EXAMPLES of a signature in the interval are records
                    if len(pids[v]) < EXAMPLES:
                        pids[v].append((pid, job, t))
                elif capture and off < CAPTURE_S:
                    goods.append((v, pid, job, t))

        for proc in procs:
            if h.name in pl_["drain"] and pl_["drain"][h.name][0] <= m < pl_["drain"][h.name][1]:
                # the device is pulled under the job: its first verb (alloc_pd) fails
                record([("alloc_pd", None, "maintenance_drain_eio")], proc)
                continue
            seq = []  # variants this process runs, in order
            seq.append(("query_port", None, "good"))
            for slot in range(4):
                empty = slot == 3 and rng.random() < 0.5
                no_nd = slot == 1 and rng.random() < 0.3
                seq.append(("query_gid", f"index={slot}",
                            "gid_empty_slot" if empty else "gid_no_netdev" if no_nd else "good"))
            if active("pd_exhausted_tracer_crash") and rng.random() < 0.7:
                seq.append(("alloc_pd", None, "pd_exhausted_tracer_crash"))
                record(seq, proc)
                continue
            seq.append(("alloc_pd", None, "good"))
            # the MRs
            mrs = {"mlx5_ofed": [("reg_mr", "gpu", "peer_fallback_efault"), ("reg_mr", "host", "good")],
                   "mlx5_up": [("reg_mr", "host", "good"), ("reg_dmabuf_mr", "gpu", "good")],
                   "bnxt_re": [("reg_mr", "host", "good"), ("reg_mr", "host", "good")],
                   "irdma": [("reg_dmabuf_mr", "gpu", "dmabuf_probe_irdma"), ("reg_mr", "host", "good")]}[platform]
            fatal = False
            for op, arg, label in mrs:
                if op == "reg_mr" and arg == "host" and "pinned_leak_enomem" in faults:
                    share = 0.001 * (300.0 ** (m / max(1, minutes - 1)))
                    if rng.random() < share:
                        seq.append((op, arg, "pinned_leak_enomem"))
                        fatal = True
                        break
                if op == "reg_dmabuf_mr" and platform == "mlx5_up" and active("dmabuf_map_timeout") \
                        and rng.random() < 0.8:
                    seq.append((op, arg, "dmabuf_map_timeout"))
                    fatal = True
                    break
                seq.append((op, arg, label))
            if not fatal and "bad_host_cq_eio" in faults and rng.random() < 0.6:
                seq.append(("create_cq", None, "bad_host_cq_eio"))
                fatal = True
            if not fatal:
                seq.append(("create_cq", None, "good"))
                if active("oot_driver_enotsupp") and rng.random() < 0.5:
                    seq.append(("create_qp", None, "oot_driver_enotsupp"))
                    fatal = True
            if not fatal:
                seq.append(("create_qp", None, "good"))
                seq.append(("modify_qp", "RESET->INIT", "good"))
                if active("neigh_timeout_ringbuf"):
                    seq.append(("modify_qp", "INIT->RTR", "neigh_timeout_ringbuf"))
                    fatal = True
            if not fatal:
                seq.append(("modify_qp", "INIT->RTR", "good"))
                seq.append(("modify_qp", "RTR->RTS", "good"))
                seq.append(("destroy_qp", None, "counter_unbind_no_counter" if platform != "mlx5_ofed" else "good"))
                if h.packed and rng.random() < 0.2:
                    seq.append(("destroy_qp", None, "double_destroy_qp"))
                seq += [("dereg_mr", None, "good")] * 2
                seq.append(("dealloc_pd", None, "good"))
            record(seq, proc)

        _emit_minute(h, platform, m, calls, pids, goods, boot_ns, rng, sink,
                     ring_full=ring_full_from is not None and m >= ring_full_from)


_TREES: dict = {}


def frames_of(platform: str, variant: tuple) -> list:
    key = (platform, variant)
    if key in _TREES:
        return _TREES[key]
    op, arg, label = variant
    if op == "query_port":
        t = tree_query_port(platform)
    elif op == "query_gid":
        t = tree_query_gid(platform, empty=label == "gid_empty_slot", no_netdev=label == "gid_no_netdev")
    elif op == "alloc_pd":
        t = tree_alloc_pd(platform, {"maintenance_drain_eio": "drain",
                                     "pd_exhausted_tracer_crash": "pd_exhausted"}.get(label))
    elif op == "reg_mr":
        t = tree_reg_mr(platform, arg, "leak" if label == "pinned_leak_enomem" else None,
                        pins=1 if label != "good" else 24)
    elif op == "reg_dmabuf_mr":
        t = tree_reg_dmabuf_mr(platform, "dmabuf" if label == "dmabuf_map_timeout" else None)
    elif op == "create_cq":
        t = tree_create_cq(platform, "cq_eio" if label == "bad_host_cq_eio" else None)
    elif op == "create_qp":
        t = tree_create_qp(platform, "oot" if label == "oot_driver_enotsupp" else None)
    elif op == "modify_qp":
        t = tree_modify_qp(platform, arg, "neigh" if label == "neigh_timeout_ringbuf" else None)
    elif op == "destroy_qp":
        t = tree_destroy_qp(platform, double=label == "double_destroy_qp")
    elif op == "dereg_mr":
        t = tree_dereg_mr(platform)
    else:
        t = tree_dealloc_pd(platform)
    _TREES[key] = t
    return t


def _emit_minute(h, platform, m, calls, pids, goods, boot_ns, rng, sink, ring_full):
    snap_end = START + timedelta(seconds=SNAP_S * (m + 1))
    # counters: every call of every probe in the variant's tree
    inv: Counter = Counter()
    fails: dict = defaultdict(Counter)
    for variant, k in calls.items():
        for _, fn, e in frames_of(platform, variant):
            inv[fn] += k
            if e:
                fails[fn][e] += k
    lost = 0
    for variant, k in calls.items():
        frames = frames_of(platform, variant)
        failing = any(e for _, _, e in frames)
        if failing:
            if ring_full and variant[2] == "neigh_timeout_ringbuf":
                lost += k
                continue
            ex = pids[variant]
            if variant[2] == "neigh_timeout_ringbuf":
                ex = ex[:1]  # a nearly full ring: one record, the rest counted in the kernel
            for i, (pid, job, t) in enumerate(ex):
                rep = k - len(ex) + 1 if i == len(ex) - 1 else 1
                _trace(sink, h, platform, m, variant, frames, pid, job, "failure", rep, t, boot_ns, rng)
    for variant, pid, job, t in goods:
        _trace(sink, h, platform, m, variant, frames_of(platform, variant), pid, job, "good", None, t, boot_ns, rng)
    c = sink.counters
    probes = sorted(inv)
    n = len(probes)
    c["host"] += [h.name] * n
    c["snapshot_time"] += [snap_end] * n
    c["interval_s"] += [float(SNAP_S)] * n
    c["kernel_release"] += [KERNEL[platform]] * n
    c["vendor"] += [VENDOR[platform]] * n
    c["probe_set"] += ["rdma"] * n
    c["probe"] += probes
    c["layer"] += [layer_of(fn) for fn in probes]
    c["live"] += [True] * n
    c["invocations"] += [inv[fn] for fn in probes]
    fs = [fails.get(fn) for fn in probes]
    c["failures"] += [sum(f.values()) if f else 0 for f in fs]
    c["errno_counts"] += [[{"errno": e, "count": n} for e, n in sorted(f.items())] if f else [] for f in fs]
    c["lost_records"] += [lost] * n


def _trace(sink, h, platform, m, variant, frames, pid, job, kind, repeat, offset_s, boot_ns, rng):
    op, arg, label = variant
    sink.n += 1
    tid = f"{h.name}-{m:05d}-{sink.n}"
    start = START + timedelta(seconds=SNAP_S * m + offset_s)
    mono = boot_ns + int((SNAP_S * m + offset_s) * 1e9)
    timed = m % CAPTURE_EVERY == 0 and offset_s < CAPTURE_S + 1.0  # a process started in the window
    # a draw a frame, in entry order (one call for all of them draws the same numbers)
    lat = [x * (8 - min(d, 7)) for x, (d, _, _) in zip(rng.integers(2_000, 40_000, len(frames)).tolist(), frames,
                                                         strict=True)] if timed else None
    root_err = frames[0][2]
    total = lat[0] if timed else 0
    end = start + timedelta(microseconds=total / 1000) if timed else start
    e = sink.ev
    n = len(frames)
    e["trace_id"] += [tid] * n
    e["seq"] += range(n)
    e["ts_ns"] += [mono + i * 1_000 for i in range(n)] if timed else [mono] * n
    e["pid"] += [pid] * n
    e["tid"] += [pid] * n
    e["ppid"] += [1] * n
    e["comm"] += ["train_step" if not h.packed else "short_job"] * n
    e["probe"] += [fn for _, fn, _ in frames]
    e["layer"] += [layer_of(fn) for _, fn, _ in frames]
    e["depth"] += [d for d, _, _ in frames]
    e["ret"] += [-ERRNO[err] if err else 0 for _, _, err in frames]
    e["errno"] += [err for _, _, err in frames]
    e["latency_ns"] += lat if timed else [None] * n
    e["path"] += [None] * n
    e["arg"] += [arg] + [None] * (n - 1)
    e["path2"] += [None] * n
    e["output"] += [None] * n
    e["kind"] += [kind] * n
    e["command"] += [op] * n
    e["exit_status"] += [-ERRNO[root_err] if root_err else 0] * n
    e["start_time"] += [start] * n
    e["end_time"] += [end] * n
    e["host"] += [h.name] * n
    e["kernel_release"] += [KERNEL[platform]] * n
    e["lost_events"] += [0] * n
    e["job_id"] += [f"slurm-{job}"] * n
    e["metadata"] += [None] * n
    e["repeat_count"] += [repeat] * n
    t = sink.truth
    t["trace_id"].append(tid)
    t["host"].append(h.name)
    t["kind"].append(kind)
    origin = origin_of(frames)
    routine = label in ROUTINE
    t["root_cause"].append(label if label in ROOT_CAUSES else None)
    t["bifurcation_probe"].append(origin[0] if origin else None)
    t["bifurcation_errno"].append(origin[1] if origin else None)
    t["origin_layer"].append(layer_of(origin[0]) if origin else None)
    t["expected_error"].append(routine)
    t["held_out"].append(kind == "good" and sink.n % 4 == 0)


def generate(root, hosts: int = 60, hours: float = 3.0, seed: int = 11) -> dict:
    """Write the fleet's events, counters and truth under `root`, and `root/fleetgen11.json`:
    the plan, `alert_hosts` (host -> errnos its alert must name) and `tolerated_alerts`."""
    root = Path(root)
    minutes = int(round(hours * 60))
    hs = fleet(hosts)
    pl_ = plan(hs, minutes)
    date = START.strftime("%Y-%m-%d")
    traces = 0
    for i, h in enumerate(hs):
        rng = np.random.default_rng([seed, i])
        sink = Sink()
        simulate_host(h, pl_, minutes, rng, sink)
        if sink.ev:
            write_partition(pa.table(dict(sink.ev)), root, "events", date, h.name, "part-0.parquet", durable=False)
            write_partition(pa.table(dict(sink.truth)), root, "truth", date, h.name, "part-0.parquet", durable=False)
        if sink.counters:
            write_partition(pa.table(dict(sink.counters)), root, "counters", date, h.name, "part-0.parquet",
                            durable=False)
        traces += len(sink.truth["trace_id"])
    alert_hosts: dict[str, list[str]] = {}
    for rc, (_, errno, _, must) in ROOT_CAUSES.items():
        if must:
            for host in pl_["hosts"][rc]:
                alert_hosts.setdefault(host, []).append(errno)
    tolerated = {host: ["EIO"] for host in pl_["hosts"]["maintenance_drain_eio"]}
    tolerated |= {host: ["ENOTSUPP"] for host in pl_["hosts"]["oot_driver_enotsupp"]}
    summary = {"hosts": hosts, "hours": hours, "seed": seed, "traces": traces, "start": START.isoformat(),
               "fault_hosts": pl_["hosts"], "windows_min": pl_["windows"], "drain_min": pl_["drain"],
               "nic_swap_min": pl_["swap"], "tracer_crash_min": pl_["crash_at"],
               "alert_hosts": alert_hosts, "tolerated_alerts": tolerated,
               "root_causes": {k: {"probe": v[0], "errno": v[1], "operation": v[2], "alert": v[3]}
                               for k, v in ROOT_CAUSES.items()},
               "routine": list(ROUTINE)}
    (root / "fleetgen11.json").write_text(json.dumps(summary, indent=1))
    return summary

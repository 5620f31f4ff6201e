"""fleetgen30's generator: a long-lived fleet's history (see the package docstring for the fleet).

Decisions behind the truth (one truth row per record in the events, keyed by (host, trace_id)):

- a record's `root_cause` is the family of its origin (the deepest failing frame, none of whose
  callees failed), `bifurcation_probe`/`bifurcation_errno` that frame: every failing tree here
  follows, down to its origin, edges the operation's good trees have on the same probe set, so the
  place it leaves good behaviour is the origin itself;
- routine families (`expected_error` true) are errors the caller goes on from: an empty GID slot
  skipped by rdma-core's scan, a CQ created again without 128-byte CQE padding, an MR registered
  again after the cache evicted one (the rdma cgroup's EAGAIN); root causes kill the process that
  meets them (a rank, or the crash-looping service's instance);
- an aggregated record (repeat_count n) is one truth row, labelled as the trees it stands for
  (identical trees: same family);
- records the tracer lost (its daemon down, or an interval it never shipped) have no truth row,
  calls it never counted no counters.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tracer.schema import (
    COUNTERS,
    EVENTS,
    META_TABLE,
    META_VERSION,
    TRUTH,
    conform,
    metadata_list,
    write_counter_buckets,
    write_partition,
)

# --------------------------------------------------------------------------------------------
# the physics: call trees from reference/rdma_control_path.yaml, pre-order (depth, fn, layer, errno)
# --------------------------------------------------------------------------------------------
U, C, D = "uverbs", "core", "driver"
GID_ENTRY = "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"

_ALLOC_BEGIN = [(1, "rdma_alloc_begin_uobject", C, None), (2, "ib_rdmacg_try_charge", C, None)]


def _shift(frames, by):
    return [(d + by, fn, layer, e) for d, fn, layer, e in frames]


TREES: dict[str, list[tuple[int, str, str, str | None]]] = {
    # query_gid (ioctl QUERY_GID_ENTRY): the GID table is the core's cache, no driver call
    "query_gid": [(0, GID_ENTRY, U, None), (1, "rdma_get_gid_attr", C, None),
                  (1, "rdma_read_gid_attr_ndev_rcu", C, None), (1, "rdma_put_gid_attr", C, None)],
    "query_gid_empty": [(0, GID_ENTRY, U, "ENODATA"), (1, "rdma_get_gid_attr", C, "ENODATA")],
    # alloc_pd
    "alloc_pd": [(0, "ib_uverbs_alloc_pd", U, None), *_ALLOC_BEGIN, (1, "mlx5_ib_alloc_pd", D, None),
                 (2, "mlx5_cmd_exec", D, None), (1, "rdma_restrack_add", C, None)],
    "alloc_pd_fw_eio": [(0, "ib_uverbs_alloc_pd", U, "EIO"), *_ALLOC_BEGIN, (1, "mlx5_ib_alloc_pd", D, "EIO"),
                        (2, "mlx5_cmd_exec", D, "EIO")],
    # create_cq (write ABI)
    "create_cq": [(0, "ib_uverbs_create_cq", U, None), (1, "create_cq", U, None), *_shift(_ALLOC_BEGIN, 1),
                  (2, "mlx5_ib_create_cq", D, None), (3, "create_cq_user", D, None), (4, "ib_umem_get", C, None),
                  (5, "pin_user_pages_fast", C, None), (4, "mlx5_ib_db_map_user", D, None),
                  (3, "mlx5_comp_eqn_get", D, None), (3, "mlx5_core_create_cq", D, None),
                  (2, "rdma_restrack_add", C, None)],
    "create_cq_padding": [(0, "ib_uverbs_create_cq", U, "EOPNOTSUPP"), (1, "create_cq", U, "EOPNOTSUPP"),
                          *_shift(_ALLOC_BEGIN, 1), (2, "mlx5_ib_create_cq", D, "EOPNOTSUPP"),
                          (3, "create_cq_user", D, "EOPNOTSUPP"), (4, "ib_umem_get", C, None),
                          (5, "pin_user_pages_fast", C, None), (4, "mlx5_ib_db_map_user", D, None)],
    # create_qp (write ABI); the three static create_qp collapse to the uverbs one (one probe name)
    "create_qp": [(0, "ib_uverbs_create_qp", U, None), (1, "create_qp", U, None), *_shift(_ALLOC_BEGIN, 1),
                  (2, "rdma_lookup_get_uobject", C, None), (2, "rdma_lookup_get_uobject", C, None),
                  (2, "ib_create_qp_user", C, None), (3, "mlx5_ib_create_qp", D, None),
                  (4, "create_user_qp", D, None), (5, "_create_user_qp", D, None), (6, "ib_umem_get", C, None),
                  (7, "pin_user_pages_fast", C, None), (6, "mlx5_ib_db_map_user", D, None),
                  (5, "mlx5_qpc_create_qp", D, None), (6, "mlx5_cmd_exec", D, None),
                  (3, "ib_create_qp_security", C, None), (2, "rdma_lookup_put_uobject", C, None)],
    # modify_qp, three RC transitions
    "modify_init": [(0, "ib_uverbs_modify_qp", U, None), (1, "modify_qp", U, None),
                    (2, "rdma_lookup_get_uobject", C, None), (2, "_ib_modify_qp", C, None),
                    (3, "rdma_counter_bind_qp_auto", C, None), (3, "ib_security_modify_qp", C, None),
                    (4, "mlx5_ib_modify_qp", D, None), (5, "ib_modify_qp_is_ok", C, None),
                    (5, "__mlx5_ib_modify_qp", D, None), (6, "mlx5_core_qp_modify", D, None),
                    (7, "mlx5_cmd_exec", D, None), (2, "rdma_lookup_put_uobject", C, None)],
    "modify_rtr": [(0, "ib_uverbs_modify_qp", U, None), (1, "modify_qp", U, None),
                   (2, "rdma_lookup_get_uobject", C, None), (2, "_ib_modify_qp", C, None),
                   (3, "rdma_get_gid_attr", C, None), (3, "ib_resolve_eth_dmac", C, None),
                   (4, "rdma_check_gid_user_access", C, None), (4, "ib_resolve_unicast_gid_dmac", C, None),
                   (5, "rdma_addr_find_l2_eth_by_grh", C, None), (3, "rdma_lag_get_ah_roce_slave", C, None),
                   (3, "ib_security_modify_qp", C, None), (4, "mlx5_ib_modify_qp", D, None),
                   (5, "ib_modify_qp_is_ok", C, None), (5, "__mlx5_ib_modify_qp", D, None),
                   (6, "mlx5_set_path", D, None), (6, "mlx5_core_qp_modify", D, None), (7, "mlx5_cmd_exec", D, None),
                   (3, "rdma_lag_put_ah_roce_slave", C, None), (2, "rdma_lookup_put_uobject", C, None)],
    "modify_rtr_arp_timeout": [(0, "ib_uverbs_modify_qp", U, "ETIMEDOUT"), (1, "modify_qp", U, "ETIMEDOUT"),
                               (2, "rdma_lookup_get_uobject", C, None), (2, "_ib_modify_qp", C, "ETIMEDOUT"),
                               (3, "rdma_get_gid_attr", C, None), (3, "ib_resolve_eth_dmac", C, "ETIMEDOUT"),
                               (4, "rdma_check_gid_user_access", C, None),
                               (4, "ib_resolve_unicast_gid_dmac", C, "ETIMEDOUT"),
                               (5, "rdma_addr_find_l2_eth_by_grh", C, "ETIMEDOUT"),
                               (2, "rdma_lookup_put_uobject", C, None)],
    "modify_rts": [(0, "ib_uverbs_modify_qp", U, None), (1, "modify_qp", U, None),
                   (2, "rdma_lookup_get_uobject", C, None), (2, "_ib_modify_qp", C, None),
                   (3, "ib_security_modify_qp", C, None), (4, "mlx5_ib_modify_qp", D, None),
                   (5, "ib_modify_qp_is_ok", C, None), (5, "__mlx5_ib_modify_qp", D, None),
                   (6, "mlx5_core_qp_modify", D, None), (7, "mlx5_cmd_exec", D, None),
                   (2, "rdma_lookup_put_uobject", C, None)],
    # reg_mr (write ABI): the collector 1.x probe set has no probe below ib_umem_get's sibling
    # create_real_mr (added in 2.x), so a 1.x host records the registration without that subtree
    "reg_mr_v1": [(0, "ib_uverbs_reg_mr", U, None), (1, "rdma_alloc_begin_uobject", C, None),
                  (2, "ib_rdmacg_try_charge", C, None), (1, "rdma_lookup_get_uobject", C, None),
                  (1, "mlx5_ib_reg_user_mr", D, None), (2, "mlx5r_umr_resource_init", D, None),
                  (2, "ib_umem_get", C, None), (3, "pin_user_pages_fast", C, None),
                  (1, "rdma_restrack_add", C, None), (1, "rdma_lookup_put_uobject", C, None)],
    "reg_mr": [(0, "ib_uverbs_reg_mr", U, None), (1, "rdma_alloc_begin_uobject", C, None),
               (2, "ib_rdmacg_try_charge", C, None), (1, "rdma_lookup_get_uobject", C, None),
               (1, "mlx5_ib_reg_user_mr", D, None), (2, "mlx5r_umr_resource_init", D, None),
               (2, "ib_umem_get", C, None), (3, "pin_user_pages_fast", C, None),
               (2, "create_real_mr", D, None), (3, "alloc_cacheable_mr", D, None),
               (3, "mlx5r_umr_update_mr_pas", D, None), (1, "rdma_restrack_add", C, None),
               (1, "rdma_lookup_put_uobject", C, None)],
    "reg_mr_umr_efault": [(0, "ib_uverbs_reg_mr", U, "EFAULT"), (1, "rdma_alloc_begin_uobject", C, None),
                          (2, "ib_rdmacg_try_charge", C, None), (1, "rdma_lookup_get_uobject", C, None),
                          (1, "mlx5_ib_reg_user_mr", D, "EFAULT"), (2, "mlx5r_umr_resource_init", D, None),
                          (2, "ib_umem_get", C, None), (3, "pin_user_pages_fast", C, None),
                          (2, "create_real_mr", D, "EFAULT"), (3, "alloc_cacheable_mr", D, None),
                          (3, "mlx5r_umr_update_mr_pas", D, "EFAULT"), (1, "rdma_lookup_put_uobject", C, None)],
    "reg_mr_cgroup": [(0, "ib_uverbs_reg_mr", U, "EAGAIN"), (1, "rdma_alloc_begin_uobject", C, "EAGAIN"),
                      (2, "ib_rdmacg_try_charge", C, "EAGAIN")],
}
COMMAND = {"query_gid": "query_gid", "query_gid_empty": "query_gid", "alloc_pd": "alloc_pd",
           "alloc_pd_fw_eio": "alloc_pd", "create_cq": "create_cq", "create_cq_padding": "create_cq",
           "create_qp": "create_qp", "modify_init": "modify_qp", "modify_rtr": "modify_qp",
           "modify_rtr_arp_timeout": "modify_qp", "modify_rts": "modify_qp", "reg_mr_v1": "reg_mr",
           "reg_mr": "reg_mr", "reg_mr_umr_efault": "reg_mr", "reg_mr_cgroup": "reg_mr"}
ARG = {"modify_init": "RESET->INIT", "modify_rtr": "INIT->RTR", "modify_rtr_arp_timeout": "INIT->RTR",
       "modify_rts": "RTR->RTS"}

# family -> (origin probe, errno, origin layer); the shape that carries it
ROOT_CAUSES = {
    "umr_pas_efault_new_driver": ("mlx5r_umr_update_mr_pas", "EFAULT", "driver"),
    "fw_flash_bad_sys_state": ("mlx5_cmd_exec", "EIO", "driver"),
    "tor_port_arp_timeout": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
}
ROUTINE = {
    "gid_scan_empty_slot": ("rdma_get_gid_attr", "ENODATA", "core"),
    "cqe_padding_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
    "mr_cache_cgroup_retry": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
}
FAMILY_OF_SHAPE = {"reg_mr_umr_efault": "umr_pas_efault_new_driver", "alloc_pd_fw_eio": "fw_flash_bad_sys_state",
                   "modify_rtr_arp_timeout": "tor_port_arp_timeout", "query_gid_empty": "gid_scan_empty_slot",
                   "create_cq_padding": "cqe_padding_refused", "reg_mr_cgroup": "mr_cache_cgroup_retry"}

ERRNO_NUM = {"ENODATA": 61, "EOPNOTSUPP": 95, "EAGAIN": 11, "EFAULT": 14, "EIO": 5, "ETIMEDOUT": 110}

# the collector's two probe sets: 2.x added the MR-creation internals
PROBES_V1 = sorted({fn for name, tree in TREES.items() for _, fn, _, _ in tree
                    if name not in ("reg_mr", "reg_mr_umr_efault")})
PROBES_V2 = sorted({fn for tree in TREES.values() for _, fn, _, _ in tree})
PROBE_SET = {1: "rdma-1.4", 2: "rdma-2.1"}
LAYER_OF = {fn: layer for tree in TREES.values() for _, fn, layer, _ in tree}

# releases: the rolling upgrade (kernel + mlx5 driver + NIC firmware + collector, one re-image)
OLD = {"release": "6.5.0-1024-nvidia", "fw": "28.39.2048", "collector": 1}
NEW = {"release": "6.8.0-1017-nvidia", "fw": "28.42.1000", "collector": 2}
NIC_MODEL = "ConnectX-7"

SNAPSHOT_S = 300  # the collector's interval
WINDOW_EVERY_S, WINDOW_S = 600, 60  # capture windows (good traces, timed failures)
AGGREGATE_K = 2  # collector 2.x: first K identical failure trees a snapshot, the rest in-kernel
TICK_NS = 4_000_000
T0 = int(dt.datetime(2026, 3, 2, 6, 0, tzinfo=dt.UTC).timestamp())

# self times of frames (ns), for timed trees
_SELF_NS = {"mlx5_cmd_exec": 45_000, "pin_user_pages_fast": 30_000, "mlx5r_umr_update_mr_pas": 25_000,
            "mlx5_core_create_cq": 60_000, "ib_umem_get": 4_000, "rdma_addr_find_l2_eth_by_grh": 3_000}


def _shape_timing(tree):
    """Entry offsets and latencies (ns) of a tree's frames, from self times."""
    n = len(tree)
    selfs = []
    for _, fn, _, errno in tree:
        s = _SELF_NS.get(fn, 1_200)
        if fn == "rdma_addr_find_l2_eth_by_grh" and errno == "ETIMEDOUT":
            s = 1_000_000_000  # the neighbour never resolved within 1000 ms
        if fn == "mlx5_cmd_exec" and errno == "EIO":
            s = 8_000  # the firmware answers at once with a bad status
        selfs.append(s)
    children: list[list[int]] = [[] for _ in range(n)]
    stack: list[int] = []
    for i, (depth, *_rest) in enumerate(tree):
        while stack and tree[stack[-1]][0] >= depth:
            stack.pop()
        if stack:
            children[stack[-1]].append(i)
        stack.append(i)
    lat = [0] * n
    for i in reversed(range(n)):
        lat[i] = selfs[i] + sum(lat[c] + 400 for c in children[i])
    off = [0] * n
    for i in range(n):
        at = off[i] + 300
        for c in children[i]:
            off[c] = at
            at += lat[c] + 400
    return np.array(off, np.int64), np.array(lat, np.int64)


SHAPES = list(TREES)
SHAPE_IX = {s: i for i, s in enumerate(SHAPES)}
_TIMING = {s: _shape_timing(TREES[s]) for s in SHAPES}
_FAILING = {s: TREES[s][0][3] is not None for s in SHAPES}


# --------------------------------------------------------------------------------------------
# the fleet's history
# --------------------------------------------------------------------------------------------
class Era:
    """One boot of one host under one name: its release, collector and snapshot grid."""

    def __init__(self, name, start, end, release, boot_id, boot_wall, phase, rack, reset=None):
        self.name, self.start, self.end = name, start, end
        self.release = release
        self.boot_id, self.boot_wall, self.phase = boot_id, boot_wall, phase
        self.rack = rack
        self.reset = reset  # (D0, D1): a collector 1.x daemon restart
        self.snaps = [s for s in range(_ceil_grid(start + 1, phase), end + 1, SNAPSHOT_S)]
        if not self.snaps or self.snaps[-1] != end:
            self.snaps.append(end)  # the last, partial interval shipped at shutdown
        self.ops: list[tuple] = []  # (t, shape, pid, ppid, comm, job)


def _ceil_grid(t, phase):
    k = -((-(t - phase)) // SNAPSHOT_S)
    return phase + k * SNAPSHOT_S


def _plan(hosts, hours, rng, faults):
    end_of_window = T0 + int(hours * 3600)
    n_join = max(2, hosts // 10)
    n_orig = hosts - n_join
    n_left = 2
    originals = [f"gpu{i + 1:03d}" for i in range(n_orig)]
    rack_of = {h: i // 8 + 1 for i, h in enumerate(originals)}
    left = originals[-n_left:]
    stay = originals[:-n_left]
    n_up = max(3, (2 * len(stay)) // 3)
    upgraded = stay[:n_up]
    reset_hosts = stay[n_up:n_up + 3]
    renamed_old = upgraded[2]
    renamed_new = f"h100-r{rack_of[renamed_old]}-{int(renamed_old[3:]):02d}"
    flash_host = upgraded[1]
    up_from, up_to = T0 + int(hours * 3600 * 0.3), T0 + int(hours * 3600 * 0.62)
    step = (up_to - up_from) / max(1, n_up - 1)
    plans: dict[str, list[Era]] = {}
    boot = {}
    roles = {"upgraded": [], "stayed_old": [], "joined": [], "left": list(left), "reset": list(reset_hosts),
             "renamed": {renamed_old: renamed_new}, "flash": [], "arp": [], "umr": []}

    def new_era(name, start, end, rel, rack, reset=None):
        phase = rng.randrange(SNAPSHOT_S)
        boot_wall = start - 90 if name in boot else start - rng.randrange(3, 40) * 86400
        boot[name] = boot.get(name, 0) + 1
        final = end >= end_of_window
        era = Era(name, start, _last_grid(end, phase) if final else end, rel,
                  f"{rng.getrandbits(32):08x}", boot_wall, phase, rack, reset)
        era.final = final
        return era

    for h in originals:
        rack = rack_of[h]
        if h in upgraded:
            k = upgraded.index(h)
            t_up = int(up_from + k * step) + rng.randrange(-600, 600)
            down_for = 15 * 60
            new_name = renamed_new if h == renamed_old else h
            plans[h] = [new_era(h, T0, t_up, OLD, rack)]
            if new_name != h:
                boot[new_name] = 1
            plans.setdefault(new_name, [])
            plans[new_name].append(new_era(new_name, t_up + down_for, end_of_window, NEW, rack))
            roles["upgraded"].append(new_name)
        elif h in left:
            t_leave = T0 + int(hours * 3600 * 0.5) + rng.randrange(-1800, 1800)
            plans[h] = [new_era(h, T0, t_leave, OLD, rack)]
        else:
            reset = None
            if h in reset_hosts:
                d0 = T0 + int(hours * 3600 * 0.2) + rng.randrange(0, 7200)
                reset = (d0, d0 + 420)
            plans[h] = [new_era(h, T0, end_of_window, OLD, rack, reset)]
            roles["stayed_old"].append(h)
    for k in range(n_join):
        name = f"h100-r9-{k + 1:02d}"
        t_join = T0 + int(hours * 3600 * 0.55) + rng.randrange(0, 3600)
        plans[name] = [new_era(name, t_join, end_of_window, NEW, 9)]
        roles["joined"].append(name)
    roles["all"] = sorted(plans)
    roles["flash"] = [flash_host] if faults else []
    roles["arp"] = [renamed_old, renamed_new] if faults else []
    return plans, roles, end_of_window


def _last_grid(t, phase):
    return phase + ((t - phase) // SNAPSHOT_S) * SNAPSHOT_S


# --------------------------------------------------------------------------------------------
# processes and their calls
# --------------------------------------------------------------------------------------------
P_PAD = 0.35  # a rank's NCCL plugin asks for 128-byte CQE padding first
P_CGROUP = 0.04  # an MR registration evicted and retried under the pod's hca_object limit
P_UMR = 0.006  # the new driver's UMR PAS update failing (new release only)
P_ARP = 0.08  # INIT->RTR on the host with the broken ToR port


def _rank(era, rng, t, pid, ppid, job, until, faults, arp_host, state):
    """One training rank's calls from t to `until` (or its death); returns nothing, appends ops."""
    ops = era.ops
    new = era.release is NEW
    reg = "reg_mr" if new else "reg_mr_v1"
    empty = (2, 3, 5, 7) if new else (2, 3)  # the new release keeps only RoCE v2 GIDs: more empty slots

    def op(shape):
        nonlocal t
        ops.append((t, SHAPE_IX[shape], pid, ppid, "python3", job))
        t += rng.uniform(0.0003, 0.004)

    for slot in range(8):
        op("query_gid_empty" if slot in empty else "query_gid")
    op("alloc_pd")
    if rng.random() < P_PAD:
        op("create_cq_padding")
    op("create_cq")
    op("create_qp")
    op("create_qp")
    for _ in range(2):
        op("modify_init")
        if faults and arp_host and rng.random() < P_ARP:
            op("modify_rtr_arp_timeout")
            state["arp"] += 1
            return
        op("modify_rtr")
        op("modify_rts")
    first = True
    while t < until:
        for _ in range(2 if first else 1):
            if rng.random() < P_CGROUP:
                op("reg_mr_cgroup")
                t += rng.uniform(0.002, 0.02)
            if faults and new and rng.random() < P_UMR:
                op("reg_mr_umr_efault")
                state["umr"] += 1
                return
            op(reg)
        first = False
        t += rng.uniform(120, 300)


def _simulate_era(era, rng, faults, flash_host, arp_hosts, job_counter, state):
    pid = [rng.randrange(20_000, 60_000)]
    outage = None
    if faults and era.name == flash_host and era.release is NEW:
        outage = (era.start + 60, min(era.end, era.start + 3 * 3600))
        state["outage"] = [outage[0], outage[1]]
        t = outage[0] + 30
        while t < outage[1] - 10:
            pid[0] += rng.randrange(3, 40)
            era.ops.append((t, SHAPE_IX["alloc_pd_fw_eio"], pid[0], 1, "kvcached", None))
            state["flash"] += 1
            t += 5 + rng.uniform(0.05, 0.4)  # systemd's RestartSec=5
        pid[0] += 7
        era.ops.append((outage[1] + 3, SHAPE_IX["alloc_pd"], pid[0], 1, "kvcached", None))
    drains = not era.final  # drained before a re-image or a decommission
    t = era.start + rng.uniform(60, 600)
    if outage:
        t = outage[1] + 120
    while t < era.end - (45 * 60 if drains else 60):
        job_counter[0] += 1
        job = str(job_counter[0])
        dur = rng.uniform(20, 90) * 60
        until = min(t + dur, era.end - (10 * 60 if drains else 0))
        launcher = pid[0] + 1
        pid[0] += 2
        for _ in range(4):
            pid[0] += rng.randrange(1, 6)
            _rank(era, rng, t + rng.uniform(0.5, 3), pid[0], launcher, job, until, faults,
                  era.name in arp_hosts, state)
        t = until + rng.expovariate(1 / 300) + 30
    era.ops.sort(key=lambda o: o[0])


# --------------------------------------------------------------------------------------------
# what the tracer delivers: counters and records
# --------------------------------------------------------------------------------------------
_PAIRS = sorted({(fn, e) for tree in TREES.values() for _, fn, _, e in tree if e})


def _matrices(probes):
    px = {p: i for i, p in enumerate(probes)}
    pair_ix = {p: i for i, p in enumerate(_PAIRS)}
    inv = np.zeros((len(SHAPES), len(probes)), np.int64)
    fail = np.zeros_like(inv)
    errs = np.zeros((len(SHAPES), len(_PAIRS)), np.int64)
    for s, name in enumerate(SHAPES):
        for _, fn, _, e in TREES[name]:
            if fn not in px:
                continue
            inv[s, px[fn]] += 1
            if e:
                fail[s, px[fn]] += 1
                errs[s, pair_ix[(fn, e)]] += 1
    return inv, fail, errs


_MATS = {1: _matrices(PROBES_V1), 2: _matrices(PROBES_V2)}


def _counters(era):
    """The era's counters rows (dict of columns) and the lost span of records (or None)."""
    collector = era.release["collector"]
    probes = PROBES_V1 if collector == 1 else PROBES_V2
    inv_m, fail_m, err_m = _MATS[collector]
    snaps = era.snaps
    times = np.array([o[0] for o in era.ops], float)
    shapes = np.array([o[1] for o in era.ops], np.int64)
    bins = np.searchsorted(np.array(snaps, float), times, side="left")
    keep = bins < len(snaps)
    shipped = np.ones(len(snaps), bool)
    lost = None
    cum = None
    restart_bin = None
    if era.reset:
        d0, d1 = era.reset
        dead = (times > d0) & (times <= d1)
        before = (times <= d0) & keep
        cum_counts = np.bincount(shapes[before], minlength=len(SHAPES))
        cum = (cum_counts @ inv_m, cum_counts @ fail_m, cum_counts @ err_m)
        keep &= ~dead
        for k, s in enumerate(snaps):
            if d0 < s <= d1:
                shipped[k] = False
        prev = max((s for s in snaps if s <= d0), default=era.start)
        restart_bin = next(k for k, s in enumerate(snaps) if s > d1)
        lost = (prev, d1)
    counts = np.zeros((len(snaps), len(SHAPES)), np.int64)
    np.add.at(counts, (bins[keep], shapes[keep]), 1)
    inv = counts @ inv_m
    fail = counts @ fail_m
    errs = counts @ err_m
    interval = np.diff(np.array([era.start, *snaps], float))
    if restart_bin is not None:
        inv[restart_bin] -= cum[0]
        fail[restart_bin] -= cum[1]
        errs[restart_bin] -= cum[2]
        interval[restart_bin] = snaps[restart_bin] - era.reset[1]
    pair_cols = {fn: [(j, e) for j, (f, e) in enumerate(_PAIRS) if f == fn] for fn in probes}
    cols = {k: [] for k in ("snapshot_time", "interval_s", "probe", "layer", "invocations", "failures",
                            "errno_counts")}
    layers = [LAYER_OF[probe] for probe in probes]
    pairs = [pair_cols[probe] for probe in probes]
    width = len(probes)
    for k, s in enumerate(snaps):
        if not shipped[k]:
            continue
        cols["snapshot_time"] += [s * 1_000_000_000] * width
        cols["interval_s"] += [float(interval[k])] * width
        cols["probe"] += probes
        cols["layer"] += layers
        cols["invocations"] += inv[k, :width].tolist()
        cols["failures"] += fail[k, :width].tolist()
        errs_k = errs[k].tolist()
        cols["errno_counts"] += [[{"errno": e, "count": errs_k[j]} for j, e in pair if errs_k[j] != 0]
                                 for pair in pairs]
    n = len(cols["probe"])
    cols.update(kernel_release=[era.release["release"]] * n, vendor=["mlx5"] * n,
                probe_set=[PROBE_SET[collector]] * n, live=[True] * n, lost_records=[0] * n)
    return cols, lost


def _in_window(era, t):
    return (t - era.phase) % WINDOW_EVERY_S < WINDOW_S


def _records(era, rng, lost):
    """The records the tracer delivers: failures (aggregated on collector 2.x) and the good trees
    of capture windows. Returns [(t, shape, pid, ppid, comm, job, timed, repeat)]."""
    collector = era.release["collector"]
    out = []
    snaps = era.snaps
    open_groups: dict[tuple, int] = {}  # (bin, comm, shape) -> index in out of the last example
    delivered: dict[tuple, int] = {}
    for t, shape, pid, ppid, comm, job in era.ops:
        if t > snaps[-1]:
            break  # after the era's last snapshot: never shipped
        if lost and lost[0] < t <= lost[1]:
            continue
        timed = _in_window(era, t)
        name = SHAPES[shape]
        if not _FAILING[name]:
            if timed:
                out.append([t, shape, pid, ppid, comm, job, True, None])
            continue
        if collector == 2:
            key = (bisect.bisect_left(snaps, t), comm, shape)
            n = delivered.get(key, 0)
            delivered[key] = n + 1
            if n >= AGGREGATE_K:
                rec = out[open_groups[key]]
                rec[7] = (rec[7] or 1) + 1
                continue
            out.append([t, shape, pid, ppid, comm, job, timed, None])
            open_groups[key] = len(out) - 1
        else:
            out.append([t, shape, pid, ppid, comm, job, timed, None])
    return out


def _date(t):
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d")


_EVENT_COLS = [f.name for f in EVENTS]
# each tree's frames column by column: probe, layer, depth, ret, errno
_TREE_COLS = {name: tuple(list(c) for c in zip(*(
    (fn, layer, depth, -ERRNO_NUM[errno] if errno else (512 if fn == "pin_user_pages_fast" else 0), errno)
    for depth, fn, layer, errno in tree), strict=True)) for name, tree in TREES.items()}


def _event_rows(era, records, rng, state, cols_by_date, truth_by_date):
    meta = metadata_list({"nic_fw": era.release["fw"], "nic_model": NIC_MODEL,
                          "image": "train-2026.02" if era.release is OLD else "train-2026.03"})
    rel = era.release["release"]
    for t, shape, pid, ppid, comm, job, timed, repeat in records:
        name = SHAPES[shape]
        tree = TREES[name]
        state["seq"][era.name] = n = state["seq"].get(era.name, 0) + 1
        trace_id = f"{era.name}:{era.boot_id}:{pid}:{n}"
        entry_ns = int((t - era.boot_wall) * 1e9)
        off, lat = _TIMING[name]
        if timed:
            j = rng.uniform(0.8, 1.3)
            ts = entry_ns + (off * j).astype(np.int64)
            lats = (lat * j).astype(np.int64)
            start = int(t * 1e9)
            end = start + int(lats[0])
            latency = lats.tolist()
            tss = ts.tolist()
        else:
            tick = (entry_ns + int(lat[0])) // TICK_NS * TICK_NS
            tss = [tick] * len(tree)
            latency = [None] * len(tree)
            start = end = int(t * 1e9 + lat[0]) // TICK_NS * TICK_NS
        date = _date(start / 1e9)
        cols = cols_by_date.setdefault(date, {c: [] for c in _EVENT_COLS})
        root_errno = tree[0][3]
        exit_status = -ERRNO_NUM[root_errno] if root_errno else 0
        kind = "failure" if root_errno else "good"
        n = len(tree)
        probes, layers, depths, rets, errnos = _TREE_COLS[name]
        cols["trace_id"] += [trace_id] * n
        cols["seq"] += range(n)
        cols["ts_ns"] += tss[:n]
        cols["pid"] += [pid] * n
        cols["tid"] += [pid] * n
        cols["ppid"] += [ppid] * n
        cols["comm"] += [comm] * n
        cols["probe"] += probes
        cols["layer"] += layers
        cols["depth"] += depths
        cols["ret"] += rets
        cols["errno"] += errnos
        cols["latency_ns"] += latency[:n]
        cols["path"] += [None] * n
        cols["arg"] += [ARG.get(name)] + [None] * (n - 1)
        cols["path2"] += [None] * n
        cols["output"] += [None] * n
        cols["kind"] += [kind] * n
        cols["command"] += [COMMAND[name]] * n
        cols["exit_status"] += [exit_status] * n
        cols["start_time"] += [start] * n
        cols["end_time"] += [end] * n
        cols["host"] += [era.name] * n
        cols["kernel_release"] += [rel] * n
        cols["lost_events"] += [0] * n
        cols["job_id"] += [job] * n
        cols["metadata"] += [meta] * n
        cols["repeat_count"] += [repeat] * n
        family = FAMILY_OF_SHAPE.get(name)
        tr = truth_by_date.setdefault(date, {f.name: [] for f in TRUTH})
        tr["trace_id"].append(trace_id)
        tr["host"].append(era.name)
        tr["kind"].append(kind)
        tr["root_cause"].append(family)
        if family:
            probe, errno, layer = {**ROOT_CAUSES, **ROUTINE}[family]
            state["counts"][family] = state["counts"].get(family, 0) + 1
            state["stands_for"][family] = state["stands_for"].get(family, 0) + (repeat or 1)
            state["family_hosts"].setdefault(family, set()).add(era.name)
        else:
            probe = errno = layer = None
        tr["bifurcation_probe"].append(probe)
        tr["bifurcation_errno"].append(errno)
        tr["origin_layer"].append(layer)
        tr["expected_error"].append(family in ROUTINE if family else False)
        tr["held_out"].append(kind == "good" and rng.random() < 0.1)


def _write_v1(table: pa.Table, path: Path, name: str) -> None:
    """A file as collector 1.x's ingest wrote it: schema version 1, without the columns version
    2 added (events: path2, output, repeat_count), no footer summary."""
    data = conform(table, name).drop_columns(["host"])
    if name == "events":
        data = data.drop_columns(["path2", "output", "repeat_count"])
    data = data.replace_schema_metadata({META_TABLE: name.encode(), META_VERSION: b"1"})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, path, compression="zstd")


def generate(root, *, hosts: int = 30, hours: float = 60, seed: int = 30, faults: bool = True) -> dict:
    """Write the fleet's dataset under `root` (events, counters, counter_buckets for collector
    2.x files, truth) and return its summary."""
    root = Path(root)
    rng = random.Random(seed)
    plans, roles, window_end = _plan(hosts, hours, rng, faults)
    flash_host = roles["flash"][0] if roles["flash"] else None
    flash_new = flash_host  # the flash host keeps its name
    state = {"flash": 0, "arp": 0, "umr": 0, "seq": {}, "counts": {},
             "stands_for": {}, "family_hosts": {}}
    job_counter = [400_000]
    files = {"events_v1": 0, "events_v2": 0, "counters_v1": 0, "counters_v2": 0}
    eras_out = {}
    for host in sorted(plans):
        for era in plans[host]:
            _simulate_era(era, rng, faults, flash_new, set(roles["arp"]), job_counter, state)
            eras_out.setdefault(host, []).append(
                {"start": era.start, "end": era.end, "release": era.release["release"],
                 "collector": era.release["collector"], "boot_id": era.boot_id})
    for host in sorted(plans):
        for part, era in enumerate(plans[host]):
            collector = era.release["collector"]
            ccols, lost = _counters(era)
            records = _records(era, rng, lost)
            cols_by_date: dict = {}
            truth_by_date: dict = {}
            _event_rows(era, records, rng, state, cols_by_date, truth_by_date)
            name = f"part-{part:04d}-c{collector}.parquet"
            for date, cols in cols_by_date.items():
                table = pa.Table.from_pydict(cols, schema=EVENTS)
                if collector == 1:
                    _write_v1(table, root / "events" / f"date={date}" / f"host={host}" / name, "events")
                    files["events_v1"] += 1
                else:
                    write_partition(table, root, "events", date, host, name, durable=False)
                    files["events_v2"] += 1
                truth = pa.Table.from_pydict({**truth_by_date[date]}, schema=TRUTH)
                write_partition(truth, root, "truth", date, host, name, durable=False)
            snap_date = {s: _date(s / 1e9) for s in set(ccols["snapshot_time"])}
            snap_dates = np.array([snap_date[s] for s in ccols["snapshot_time"]])
            n = len(ccols["probe"])
            ccols["host"] = [host] * n
            table = pa.Table.from_pydict({f.name: ccols[f.name] for f in COUNTERS}, schema=COUNTERS)
            for date in sorted(set(snap_dates.tolist())):
                piece = table.filter(pa.array(snap_dates == date))
                if collector == 1:
                    _write_v1(piece, root / "counters" / f"date={date}" / f"host={host}" / name, "counters")
                    files["counters_v1"] += 1
                else:
                    path = write_partition(piece, root, "counters", date, host, name, durable=False)
                    write_counter_buckets(path, durable=False)
                    files["counters_v2"] += 1
    roles["umr"] = sorted(state["family_hosts"].get("umr_pas_efault_new_driver", ()))
    summary = {
        "roles": roles,
        "counts": state["counts"],
        "stands_for": state["stands_for"],
        "family_hosts": {k: sorted(v) for k, v in state["family_hosts"].items()},
        "releases": {"old": OLD["release"], "new": NEW["release"]},
        "eras": eras_out,
        "files": files,
        "outage": state.get("outage"),
        "window": [T0, window_end],
    }
    (root / "fleetgen30.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

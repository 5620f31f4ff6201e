"""Rare faults in a sea of routine: a blind fleet generator (see __init__.py for the angle).

The fleet
---------
`hosts` mlx5 RoCE GPU hosts (MLNX_OFED kernel, one release everywhere) for `hours` from
2026-11-02T06:00Z (the window crosses midnight: two date partitions). Each host runs Slurm jobs of
8 ranks (comm python3) back to back, 1.5-4 h each. A rank's start-up makes alloc_pd, two
create_cq, two host and two GPU reg_mr, and 8 QPs (create_qp, then RESET->INIT, INIT->RTR,
RTR->RTS); after that it registers a buffer every ~2 min (half in GPU memory) and re-creates a
connection every ~6 min, at a rate scaled by the fleet's load, which follows the time of day
(0.45x at 04:00 UTC, 1x at 16:00). Every host also runs a node agent (comm rdma_gidmon) that reads
its two ports' GID tables every 15 minutes (16 QUERY_GID_ENTRY calls, 12 of them empty slots).

The tracer (probe set "rdma", the functions of the trees below; GUP and other generic kernel
internals are not probed, as RDMATracer's rules say) snapshots every 60 s: per-probe counters
(exact: every call) and failure call trees, the first K=3 identical trees (same shape, same
errors) of an interval as records of their own and, beyond that, the third standing for the rest
(repeat_count). Good traces are sampled in 20 s capture windows every 10 minutes (at most 12 per
operation shape a window), timed per frame; failures inside a window are timed too, the others
carry only the tick they returned in (latency null).

Routine (expected_error = True, root_cause = the family)
--------------------------------------------------------
gid_scan_storm: QUERY_GID_ENTRY of an empty slot fails ENODATA at rdma_get_gid_attr (reference:
  "-ENODATA empty GID slot"); the agent goes on (the same long-lived pid reports all window). On
  every host, 1-3 times a day (a netlink storm after a port event), the agent rescans in a tight
  loop for 3-25 minutes: ~1,500-2,500 passes a minute, the same 12-of-16 empty-slot share, so
  ~18,000-30,000 ENODATA a snapshot, shipped as 3 records with the third's repeat_count the rest.
cgroup_qp_eagain_diurnal: create_qp's uobject charge hits the rdma cgroup's hca_object limit
  (EAGAIN at ib_rdmacg_try_charge under rdma_alloc_begin_uobject, the reference's rdmacg code);
  the provider retries 4 ms later until it passes (each rank goes on). The chance of a refusal
  follows the fleet's load (3 % at night, 18 % at the afternoon peak), and with the number of
  calls the count swings ~13x between 04:00 and 16:00 UTC, the same on every host.

Root causes (expected_error = False; each kills its rank, and the job with it: no later record of
that pid or job; the next job on the host starts as scheduled)
--------------------------------------------------------------------------------------------
peermem_hiccup_efault (1 record, one host): a GPU registration whose range no peer client claims
  (nvidia-peermem briefly gone): ib_peer_umem_get returns the original GUP errno, EFAULT
  (reference: "<original GUP errno, usually -EFAULT> ... no registered peer client claims the
  range"), passed up by ib_umem_get, mlx5_ib_reg_user_mr, ib_uverbs_reg_mr. Origin ib_peer_umem_get,
  layer peer-mem; every good GPU registration has the edge ib_umem_get -> ib_peer_umem_get, so the
  bifurcation is the origin.
memlock_leak_enomem (2 records, one host, in the last sixth of the window): a host-memory reg_mr
  whose pinned pages would pass RLIMIT_MEMLOCK: ENOMEM at ib_umem_get (reference: "pinned_vm +
  npages > RLIMIT_MEMLOCK"), before any pin; the handler then drops its PD reference and aborts
  the uobject (cleanup after the error, not a divergence). Origin = bifurcation ib_umem_get, core.
arp_timeout_once (1 record, one host, during that host's GID storm): INIT->RTR's neighbour
  resolution never completes: ETIMEDOUT at rdma_addr_find_l2_eth_by_grh, up through
  ib_resolve_unicast_gid_dmac, ib_resolve_eth_dmac, _ib_modify_qp, modify_qp. Origin core.
fw_create_cq_int_err (3 records, two hosts: 2 + 1): CREATE_CQ answered INT_ERR, EIO at
  mlx5_cmd_exec (errno_conventions' cmd_status_to_err) under mlx5_core_create_cq, up through
  mlx5_ib_create_cq, create_cq, ib_uverbs_create_cq. Origin driver.

Good traces: kind good, no root cause, expected_error False, held_out False. Truth has one row per
record, keyed (host, trace_id); bifurcation = origin for every failure (each origin's parent edge
is in the good traces of its operation).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import write_counter_buckets, write_partition

START = dt.datetime(2026, 11, 2, 6, 0, tzinfo=dt.UTC)
SNAP_S = 60
WINDOW_EVERY_S, WINDOW_LEN_S, WINDOW_CAP = 600, 20, 12
K_RECORDS = 3
RELEASE = "5.15.0-119-generic"
RANKS = 8
ERRNO = {"ENODATA": 61, "EAGAIN": 11, "ENOMEM": 12, "EFAULT": 14, "ETIMEDOUT": 110, "EIO": 5}

LAYER = {
    # uverbs: the handlers and their uverbs_cmd.c statics
    "ib_uverbs_alloc_pd": "uverbs", "ib_uverbs_create_cq": "uverbs", "ib_uverbs_create_qp": "uverbs",
    "ib_uverbs_modify_qp": "uverbs", "ib_uverbs_reg_mr": "uverbs",
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs",
    "uverbs_request": "uverbs", "uverbs_response": "uverbs", "create_cq": "uverbs", "create_qp": "uverbs",
    "modify_qp": "uverbs", "copy_ah_attr_from_uverbs": "uverbs",
    # core
    "rdma_alloc_begin_uobject": "core", "rdma_alloc_abort_uobject": "core", "ib_rdmacg_try_charge": "core",
    "rdma_lookup_get_uobject": "core", "rdma_lookup_put_uobject": "core", "rdma_restrack_add": "core",
    "ib_create_qp_user": "core", "ib_create_qp_security": "core", "ib_qp_usecnt_inc": "core",
    "ib_modify_qp_with_udata": "core", "_ib_modify_qp": "core", "rdma_fill_sgid_attr": "core",
    "rdma_check_ah_attr": "core", "rdma_get_gid_attr": "core", "ib_resolve_eth_dmac": "core",
    "rdma_check_gid_user_access": "core", "ib_resolve_unicast_gid_dmac": "core",
    "rdma_addr_find_l2_eth_by_grh": "core", "rdma_lag_get_ah_roce_slave": "core",
    "rdma_lag_put_ah_roce_slave": "core", "rdma_unfill_sgid_attr": "core", "rdma_counter_bind_qp_auto": "core",
    "ib_modify_qp_is_ok": "core", "ib_umem_get": "core", "rdma_read_gid_attr_ndev_rcu": "core",
    "rdma_put_gid_attr": "core",
    # driver
    "mlx5_ib_alloc_pd": "driver", "mlx5_cmd_exec": "driver", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "mlx5_ib_db_map_user": "driver", "mlx5_comp_eqn_get": "driver",
    "mlx5_core_create_cq": "driver", "mlx5_ib_create_qp": "driver", "create_user_qp": "driver",
    "_create_user_qp": "driver", "mlx5_qpc_create_qp": "driver", "mlx5_ib_modify_qp": "driver",
    "__mlx5_ib_modify_qp": "driver", "mlx5_set_path": "driver", "mlx5_core_qp_modify": "driver",
    "mlx5_ib_reg_user_mr": "driver", "mlx5r_umr_resource_init": "driver", "create_real_mr": "driver",
    "alloc_cacheable_mr": "driver", "mlx5r_umr_update_mr_pas": "driver", "reg_create": "driver",
    # peer memory (OFED)
    "ib_peer_umem_get": "peer-mem", "ib_get_peer_client": "peer-mem",
    "ib_umem_activate_invalidation_notifier": "peer-mem",
}


def _t(spec: str) -> list[tuple[int, str, str | None]]:
    """'depth fn [ERRNO]' lines -> frames (depth, fn, errno)."""
    out = []
    for line in spec.strip().splitlines():
        parts = line.split()
        if not parts:
            continue
        out.append((int(parts[0]), parts[1], parts[2] if len(parts) > 2 else None))
    return out


# (operation, root arg, frames): frames in entry order
_MOD_HEAD = """
0 ib_uverbs_modify_qp{e}
1 modify_qp{e}
2 rdma_lookup_get_uobject
"""
TREES: dict[str, tuple[str, str | None, list[tuple[int, str, str | None]]]] = {
    "alloc_pd": ("alloc_pd", None, _t("""
0 ib_uverbs_alloc_pd
1 uverbs_request
1 rdma_alloc_begin_uobject
2 ib_rdmacg_try_charge
1 mlx5_ib_alloc_pd
2 mlx5_cmd_exec
1 rdma_restrack_add
1 uverbs_response""")),
    "create_cq": ("create_cq", None, _t("""
0 ib_uverbs_create_cq
1 uverbs_request
1 create_cq
2 rdma_alloc_begin_uobject
3 ib_rdmacg_try_charge
2 mlx5_ib_create_cq
3 create_cq_user
4 ib_umem_get
4 mlx5_ib_db_map_user
3 mlx5_comp_eqn_get
3 mlx5_core_create_cq
4 mlx5_cmd_exec
2 rdma_restrack_add
2 uverbs_response""")),
    "create_cq_fw_eio": ("create_cq", None, _t("""
0 ib_uverbs_create_cq EIO
1 uverbs_request
1 create_cq EIO
2 rdma_alloc_begin_uobject
3 ib_rdmacg_try_charge
2 mlx5_ib_create_cq EIO
3 create_cq_user
4 ib_umem_get
4 mlx5_ib_db_map_user
3 mlx5_comp_eqn_get
3 mlx5_core_create_cq EIO
4 mlx5_cmd_exec EIO""")),
    "create_qp": ("create_qp", None, _t("""
0 ib_uverbs_create_qp
1 uverbs_request
1 create_qp
2 rdma_alloc_begin_uobject
3 ib_rdmacg_try_charge
2 rdma_lookup_get_uobject
2 rdma_lookup_get_uobject
2 ib_create_qp_user
3 mlx5_ib_create_qp
4 create_user_qp
5 _create_user_qp
6 ib_umem_get
6 mlx5_ib_db_map_user
5 mlx5_qpc_create_qp
6 mlx5_cmd_exec
3 ib_create_qp_security
3 rdma_restrack_add
2 ib_qp_usecnt_inc
2 rdma_lookup_put_uobject
2 uverbs_response""")),
    "create_qp_cgroup_eagain": ("create_qp", None, _t("""
0 ib_uverbs_create_qp EAGAIN
1 uverbs_request
1 create_qp EAGAIN
2 rdma_alloc_begin_uobject EAGAIN
3 ib_rdmacg_try_charge EAGAIN""")),
    "modify_r2i": ("modify_qp", "RESET->INIT", _t(_MOD_HEAD.format(e="") + """
2 ib_modify_qp_with_udata
3 _ib_modify_qp
4 rdma_counter_bind_qp_auto
4 mlx5_ib_modify_qp
5 ib_modify_qp_is_ok
5 __mlx5_ib_modify_qp
6 mlx5_core_qp_modify
7 mlx5_cmd_exec
2 rdma_lookup_put_uobject""")),
    "modify_i2r": ("modify_qp", "INIT->RTR", _t(_MOD_HEAD.format(e="") + """
2 copy_ah_attr_from_uverbs
2 ib_modify_qp_with_udata
3 _ib_modify_qp
4 rdma_fill_sgid_attr
5 rdma_check_ah_attr
5 rdma_get_gid_attr
4 ib_resolve_eth_dmac
5 rdma_check_gid_user_access
5 ib_resolve_unicast_gid_dmac
6 rdma_addr_find_l2_eth_by_grh
4 rdma_lag_get_ah_roce_slave
4 mlx5_ib_modify_qp
5 ib_modify_qp_is_ok
5 __mlx5_ib_modify_qp
6 mlx5_set_path
6 mlx5_core_qp_modify
7 mlx5_cmd_exec
4 rdma_lag_put_ah_roce_slave
4 rdma_unfill_sgid_attr
2 rdma_lookup_put_uobject""")),
    "modify_i2r_arp_timeout": ("modify_qp", "INIT->RTR", _t(_MOD_HEAD.format(e=" ETIMEDOUT") + """
2 copy_ah_attr_from_uverbs
2 ib_modify_qp_with_udata ETIMEDOUT
3 _ib_modify_qp ETIMEDOUT
4 rdma_fill_sgid_attr
5 rdma_check_ah_attr
5 rdma_get_gid_attr
4 ib_resolve_eth_dmac ETIMEDOUT
5 rdma_check_gid_user_access
5 ib_resolve_unicast_gid_dmac ETIMEDOUT
6 rdma_addr_find_l2_eth_by_grh ETIMEDOUT
4 rdma_unfill_sgid_attr
2 rdma_lookup_put_uobject""")),
    "modify_r2r": ("modify_qp", "RTR->RTS", _t(_MOD_HEAD.format(e="") + """
2 ib_modify_qp_with_udata
3 _ib_modify_qp
4 mlx5_ib_modify_qp
5 ib_modify_qp_is_ok
5 __mlx5_ib_modify_qp
6 mlx5_core_qp_modify
7 mlx5_cmd_exec
2 rdma_lookup_put_uobject""")),
    "reg_host": ("reg_mr", None, _t("""
0 ib_uverbs_reg_mr
1 uverbs_request
1 rdma_alloc_begin_uobject
2 ib_rdmacg_try_charge
1 rdma_lookup_get_uobject
1 mlx5_ib_reg_user_mr
2 mlx5r_umr_resource_init
2 ib_umem_get
2 create_real_mr
3 alloc_cacheable_mr
3 mlx5r_umr_update_mr_pas
1 rdma_restrack_add
1 rdma_lookup_put_uobject
1 uverbs_response""")),
    "reg_host_memlock_enomem": ("reg_mr", None, _t("""
0 ib_uverbs_reg_mr ENOMEM
1 uverbs_request
1 rdma_alloc_begin_uobject
2 ib_rdmacg_try_charge
1 rdma_lookup_get_uobject
1 mlx5_ib_reg_user_mr ENOMEM
2 mlx5r_umr_resource_init
2 ib_umem_get ENOMEM
1 rdma_lookup_put_uobject
1 rdma_alloc_abort_uobject""")),
    "reg_gpu": ("reg_mr", None, _t("""
0 ib_uverbs_reg_mr
1 uverbs_request
1 rdma_alloc_begin_uobject
2 ib_rdmacg_try_charge
1 rdma_lookup_get_uobject
1 mlx5_ib_reg_user_mr
2 mlx5r_umr_resource_init
2 ib_umem_get
3 ib_peer_umem_get
4 ib_get_peer_client
2 create_real_mr
3 reg_create
4 mlx5_cmd_exec
3 mlx5r_umr_update_mr_pas
3 ib_umem_activate_invalidation_notifier
1 rdma_restrack_add
1 rdma_lookup_put_uobject
1 uverbs_response""")),
    "reg_gpu_no_peer_efault": ("reg_mr", None, _t("""
0 ib_uverbs_reg_mr EFAULT
1 uverbs_request
1 rdma_alloc_begin_uobject
2 ib_rdmacg_try_charge
1 rdma_lookup_get_uobject
1 mlx5_ib_reg_user_mr EFAULT
2 mlx5r_umr_resource_init
2 ib_umem_get EFAULT
3 ib_peer_umem_get EFAULT
4 ib_get_peer_client
1 rdma_lookup_put_uobject
1 rdma_alloc_abort_uobject""")),
    "gid_query": ("query_gid", None, _t("""
0 ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY
1 rdma_get_gid_attr
1 rdma_read_gid_attr_ndev_rcu
1 rdma_put_gid_attr""")),
    "gid_query_empty": ("query_gid", None, _t("""
0 ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY ENODATA
1 rdma_get_gid_attr ENODATA""")),
}

# family -> (origin probe, errno, origin layer)
ROUTINE = {
    "gid_scan_storm": ("rdma_get_gid_attr", "ENODATA", "core"),
    "cgroup_qp_eagain_diurnal": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
}
ROOT_CAUSES = {
    "peermem_hiccup_efault": ("ib_peer_umem_get", "EFAULT", "peer-mem"),
    "memlock_leak_enomem": ("ib_umem_get", "ENOMEM", "core"),
    "arp_timeout_once": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
    "fw_create_cq_int_err": ("mlx5_cmd_exec", "EIO", "driver"),
}
FAMILIES = {**ROOT_CAUSES, **ROUTINE}
FAMILY_OF_TREE = {
    "gid_query_empty": "gid_scan_storm", "create_qp_cgroup_eagain": "cgroup_qp_eagain_diurnal",
    "reg_gpu_no_peer_efault": "peermem_hiccup_efault", "reg_host_memlock_enomem": "memlock_leak_enomem",
    "modify_i2r_arp_timeout": "arp_timeout_once", "create_cq_fw_eio": "fw_create_cq_int_err",
}
# rare faults: (cause, host index, fraction of the window, tree of the call it strikes)
INJECTIONS = [
    ("peermem_hiccup_efault", 7, 0.35, "reg_gpu"),
    ("memlock_leak_enomem", 19, 0.86, "reg_host"),
    ("memlock_leak_enomem", 19, 0.93, "reg_host"),
    ("arp_timeout_once", 26, 0.55, "modify_i2r"),
    ("fw_create_cq_int_err", 3, 0.20, "create_cq"),
    ("fw_create_cq_int_err", 3, 0.60, "create_cq"),
    ("fw_create_cq_int_err", 33, 0.70, "create_cq"),
]
FAULT_TREE = {"peermem_hiccup_efault": "reg_gpu_no_peer_efault", "memlock_leak_enomem": "reg_host_memlock_enomem",
              "arp_timeout_once": "modify_i2r_arp_timeout", "fw_create_cq_int_err": "create_cq_fw_eio"}

TREE_NAMES = list(TREES)
TREE_IX = {n: i for i, n in enumerate(TREE_NAMES)}
PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
PROBE_IX = {p: i for i, p in enumerate(PROBES)}


def _tree_vectors() -> tuple[np.ndarray, np.ndarray, list[dict[str, np.ndarray]]]:
    """Per tree: calls per probe, failures per probe, and failures per (errno, probe)."""
    calls = np.zeros((len(TREES), len(PROBES)), np.int64)
    fails = np.zeros_like(calls)
    per_errno: list[dict[str, np.ndarray]] = []
    for i, name in enumerate(TREE_NAMES):
        errs: dict[str, np.ndarray] = {}
        for _, fn, errno in TREES[name][2]:
            calls[i, PROBE_IX[fn]] += 1
            if errno:
                fails[i, PROBE_IX[fn]] += 1
                errs.setdefault(errno, np.zeros(len(PROBES), np.int64))[PROBE_IX[fn]] += 1
        per_errno.append(errs)
    return calls, fails, per_errno


def diurnal(t_s: np.ndarray | float) -> np.ndarray:
    """0 at 04:00 UTC, 1 at 16:00 UTC."""
    hour = (START.hour + np.asarray(t_s, float) / 3600.0) % 24
    return (1 - np.cos(2 * np.pi * (hour - 4) / 24)) / 2


def load(t_s):
    return 0.45 + 0.55 * diurnal(t_s)


def eagain_p(t_s):
    return 0.03 + 0.15 * diurnal(t_s)


def _poisson_times(rng, t0: float, t1: float, mean_gap: float) -> np.ndarray:
    """Times of a Poisson process of rate load(t)/mean_gap on [t0, t1) (thinning)."""
    n = rng.poisson((t1 - t0) / mean_gap)
    t = np.sort(rng.uniform(t0, t1, n))
    return t[rng.random(n) < load(t)]


def _host_calls(rng, hi: int, host: str, span: float, faults: bool, storm_forced: tuple | None):
    """Every call of one host: arrays (t, tree, weight, pid, job) plus job table and storms."""
    ts, trees, weights, pids, jobs = [], [], [], [], []

    def add(t, tree, w, pid, job):
        t = np.atleast_1d(np.asarray(t, float))
        ts.append(t)
        trees.append(np.full(len(t), TREE_IX[tree]) if isinstance(tree, str) else np.asarray(tree))
        weights.append(np.broadcast_to(np.asarray(w, np.int64), t.shape).copy())
        pids.append(np.full(len(t), pid))
        jobs.append(np.full(len(t), job))

    # jobs of 8 ranks, back to back; a job a fault kills is requeued 1-3 minutes later
    pending = sorted((frac * span, c, target) for c, h, frac, target in INJECTIONS if faults and h == hi)
    injected = []
    job_table = []
    t = rng.uniform(0, 600)
    j = 0
    while t < span - 300:
        end = min(span, t + rng.uniform(1.5, 4.0) * 3600)
        job_id = f"{480000 + hi * 100 + j}"
        jt, jtree, jpid = [], [], []
        for r in range(RANKS):
            pid = 20000 + j * 1049 + r * 3
            s = t + rng.uniform(0, 0.4)
            reg = _poisson_times(rng, s + 5, end, 120.0)
            gpu = rng.random(len(reg)) < 0.5
            qp = np.concatenate([s + 0.6 + 0.1 * np.arange(8), _poisson_times(rng, s + 5, end, 360.0)])
            # the rdma cgroup's refusals before each create_qp that passes (retried 4 ms apart)
            k = rng.geometric(1 - eagain_p(qp)) - 1
            back = np.concatenate([np.arange(n, 0, -1) for n in k]) if k.sum() else np.zeros(0)
            parts = [([s + 0.05], "alloc_pd"), ([s + 0.10, s + 0.12], "create_cq"),
                     ([s + 0.20, s + 0.22], "reg_host"), ([s + 0.30, s + 0.35], "reg_gpu"),
                     (reg[gpu], "reg_gpu"), (reg[~gpu], "reg_host"),
                     (np.repeat(qp, k) - 0.004 * back, "create_qp_cgroup_eagain"), (qp, "create_qp"),
                     (qp + 0.01, "modify_r2i"), (qp + 0.02, "modify_i2r"), (qp + 0.03, "modify_r2r")]
            for times, name in parts:
                times = np.asarray(times, float)
                jt.append(times)
                jtree.append(np.full(len(times), TREE_IX[name]))
                jpid.append(np.full(len(times), pid))
        jt, jtree, jpid = np.concatenate(jt), np.concatenate(jtree), np.concatenate(jpid)
        jcause = np.full(len(jt), -1)
        while pending and pending[0][0] < end:
            target_t, c, target = pending[0]
            cand = np.flatnonzero((jtree == TREE_IX[target]) & (jt >= target_t))
            if not len(cand):
                break  # no such call left in this job: the next job's first one
            first = cand[np.argmin(jt[cand])]
            tf = float(jt[first])
            jtree[first] = TREE_IX[FAULT_TREE[c]]
            jcause[first] = list(ROOT_CAUSES).index(c)
            keep = jt <= tf  # the rank dies, and the job with it
            keep[first] = True
            jt, jtree, jpid, jcause = jt[keep], jtree[keep], jpid[keep], jcause[keep]
            injected.append((c, tf, int(jpid[jt == tf][0]), job_id))
            end = tf
            pending.pop(0)
            pending = [(max(x, end + 1.0), cc, tg) for x, cc, tg in pending]
        ts.append(jt)
        trees.append(jtree)
        weights.append(np.ones(len(jt), np.int64))
        pids.append(jpid)
        jobs.append(np.full(len(jt), j))
        job_table.append((j, job_id, t, end))
        t = end + (rng.uniform(60, 180) if end < t + 1.4 * 3600 else rng.uniform(60, 600))
        j += 1
    assert not pending, (host, pending)

    # the node agent: 16 GID reads every 15 minutes, 12 empty; storms of tight rescans
    agent = 3000 + hi
    phase = rng.uniform(0, 900)
    scans = np.arange(phase, span, 900.0)
    add(scans, "gid_query", 4, agent, -1)
    add(scans + 0.001, "gid_query_empty", 12, agent, -1)
    storms = []
    n_storms = rng.integers(1, 4)
    for s in range(n_storms):
        start = rng.uniform(0.05, 0.95) * span
        length = rng.uniform(3, 25) * 60
        if storm_forced is not None and s == 0:
            start, length = storm_forced
        storms.append((start, start + length))
        minutes = np.arange(np.floor(start / SNAP_S) * SNAP_S, min(span, start + length), SNAP_S)
        passes = rng.integers(1500, 2500, len(minutes))
        add(minutes + 30.0, "gid_query", 4 * passes, agent, -1)
        add(minutes + 30.001, "gid_query_empty", 12 * passes, agent, -1)

    t = np.concatenate(ts)
    tree = np.concatenate(trees)
    w = np.concatenate(weights)
    pid = np.concatenate(pids)
    job = np.concatenate(jobs)
    keep = (t >= 0) & (t < span)
    t, tree, w, pid, job = t[keep], tree[keep], w[keep], pid[keep], job[keep]
    cause = np.full(len(t), -1)
    order = np.argsort(t, kind="stable")
    return (t[order], tree[order], w[order], pid[order], job[order], cause[order]), job_table, storms, injected


def _records(rng, calls, window_offset: float):
    """The tracer's records from the calls: failures (K per signature and interval, the rest
    aggregated), good traces sampled in capture windows. -> list of (t, tree, pid, job, rc, timed)."""
    t, tree, w, pid, job, _ = calls
    recs = []
    fail_tree = np.array([any(e for _, _, e in TREES[n][2]) for n in TREE_NAMES])
    in_window = ((t - window_offset) % WINDOW_EVERY_S) < WINDOW_LEN_S
    snap = np.floor(t / SNAP_S).astype(np.int64)
    # failures
    fi = np.flatnonzero(fail_tree[tree])
    groups: dict[tuple[int, int], list[int]] = {}
    for i in fi:
        groups.setdefault((int(snap[i]), int(tree[i])), []).append(int(i))
    for idx in groups.values():
        units = []  # (call index, units it holds)
        total = int(sum(w[i] for i in idx))
        if total <= K_RECORDS:
            for i in idx:
                units += [(i, 1)] * int(w[i])
        else:
            expanded = []
            for i in idx:
                expanded += [i] * min(int(w[i]), K_RECORDS)
                if len(expanded) >= K_RECORDS:
                    break
            units = [(expanded[0], 1), (expanded[1], 1), (expanded[2], total - 2)]
        for i, rc in units:
            recs.append((float(t[i]), int(tree[i]), int(pid[i]), int(job[i]), rc, bool(in_window[i])))
    # good traces in capture windows, at most WINDOW_CAP per window and shape
    gi = np.flatnonzero(~fail_tree[tree] & in_window)
    win = np.floor((t - window_offset) / WINDOW_EVERY_S).astype(np.int64)
    taken: dict[tuple[int, int], int] = {}
    for i in gi:
        key = (int(win[i]), int(tree[i]))
        room = WINDOW_CAP - taken.get(key, 0)
        n = min(room, int(w[i]))
        if n <= 0:
            continue
        taken[key] = taken.get(key, 0) + n
        for k in range(n):
            recs.append((float(t[i]) + 0.0003 * k, int(tree[i]), int(pid[i]), int(job[i]), 1, True))
    recs.sort(key=lambda r: r[0])
    return recs


def _counters(host: str, calls, span: float, vectors) -> dict[str, pa.Table]:
    """Exact per-probe counters per 60 s snapshot, per date."""
    t, tree, w, _, _, _ = calls
    cv, fv, ev = vectors
    n_snap = int(np.ceil(span / SNAP_S))
    snap = np.minimum(np.floor(t / SNAP_S).astype(np.int64), n_snap - 1)
    inv = np.zeros((n_snap, len(PROBES)), np.int64)
    fail = np.zeros_like(inv)
    errnos = sorted({e for d in ev for e in d})
    per_errno = {e: np.zeros_like(inv) for e in errnos}
    for ti in np.unique(tree):
        m = tree == ti
        counts = np.bincount(snap[m], weights=w[m], minlength=n_snap).astype(np.int64)
        inv += counts[:, None] * cv[ti][None, :]
        fail += counts[:, None] * fv[ti][None, :]
        for e, vec in ev[ti].items():
            per_errno[e] += counts[:, None] * vec[None, :]
    start_ns = int(START.timestamp()) * 1_000_000_000
    snap_ns = start_ns + (np.arange(n_snap, dtype=np.int64) + 1) * SNAP_S * 1_000_000_000
    n_p = len(PROBES)
    # errno_counts as a list array: per cell the errnos counted there, in errno order
    stack = np.stack([per_errno[e].reshape(-1) for e in errnos], axis=1)  # cells x errnos
    present = stack > 0
    offsets = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.int32)
    cell_errno = np.broadcast_to(np.array(errnos, dtype=object), stack.shape)[present]
    ec = pa.ListArray.from_arrays(pa.array(offsets), pa.StructArray.from_arrays(
        [pa.array(cell_errno.tolist(), pa.string()), pa.array(stack[present], pa.int64())], names=["errno", "count"]))
    n = n_snap * n_p
    probe_codes = np.tile(np.arange(n_p, dtype=np.int32), n_snap)

    def const(v, typ):
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([v], typ))

    from tracer.schema import COUNTERS

    arrays = {
        "host": const(host, pa.string()),
        "snapshot_time": pa.array(np.repeat(snap_ns, n_p)).cast(pa.timestamp("ns", tz="UTC")),
        "interval_s": pa.array(np.full(n, float(SNAP_S))),
        "kernel_release": const(RELEASE, pa.string()), "vendor": const("mlx5", pa.string()),
        "probe_set": const("rdma", pa.string()),
        "probe": pa.DictionaryArray.from_arrays(pa.array(probe_codes), pa.array(PROBES)),
        "layer": pa.DictionaryArray.from_arrays(pa.array(probe_codes), pa.array([LAYER[p] for p in PROBES])),
        "live": pa.array(np.ones(n, bool)),
        "invocations": pa.array(inv.reshape(-1)), "failures": pa.array(fail.reshape(-1)),
        "errno_counts": ec, "lost_records": pa.array(np.zeros(n, np.int64)),
    }
    cols = [arrays[f.name].cast(f.type) for f in COUNTERS]
    arrow = pa.Table.from_arrays(cols, schema=COUNTERS)
    day_ns = 86400 * 1_000_000_000
    day = np.repeat((snap_ns // day_ns), n_p)
    out = {}
    for d in np.unique(day):
        name = dt.datetime.fromtimestamp(int(d) * 86400, dt.UTC).date().isoformat()
        out[name] = arrow.filter(pa.array(day == d))
    return out


def generate(root, hosts: int = 40, hours: float = 24, seed: int = 32, faults: bool = True) -> dict:
    """Write the fleet under `root` (events, counters + summaries, truth); return a summary."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    span = hours * 3600.0
    vectors = _tree_vectors()
    causes = list(ROOT_CAUSES)
    summary: dict = {"hosts": [], "counts": {}, "family_hosts": {}, "records": 0, "max_repeat": 0,
                     "storms": {}, "injected": [], "span_s": span, "start": START.isoformat(),
                     "eagain_by_hour": {}}
    for hi in range(hosts):
        host = f"gpu-{hi:03d}"
        summary["hosts"].append(host)
        forced = None
        if faults and hi == 26:
            forced = (0.55 * span - 240.0, 14 * 60.0)  # a storm around the ARP timeout
        calls, job_table, storms, injected = _host_calls(rng, hi, host, span, faults, forced)
        summary["storms"][host] = storms
        summary["injected"] += [(host, *x) for x in injected]
        t, tree = calls[0], calls[1]
        eg = tree == TREE_IX["create_qp_cgroup_eagain"]
        for h in np.floor(t[eg] / 3600).astype(int):
            key = int((START.hour + h) % 24)
            summary["eagain_by_hour"][key] = summary["eagain_by_hour"].get(key, 0) + 1
        window_offset = float(rng.uniform(0, WINDOW_EVERY_S - WINDOW_LEN_S))
        recs = _records(rng, calls, window_offset)
        # the injected failures' own call index: look them up by (time, tree)
        inj = {(round(tf, 6), TREE_IX[FAULT_TREE[c]]): c for c, tf, _, _ in injected}
        job_ids = {j: jid for j, jid, _, _ in job_table}
        boot_ns = int(rng.integers(3, 30) * 86400 * 1e9)
        boot_id = f"b{rng.integers(1 << 20):05x}"
        _write_host(root, host, recs, inj, job_ids, boot_ns, boot_id, summary, causes)
        for d, table in _counters(host, calls, span, vectors).items():
            f = write_partition(table, root, "counters", d, host, "part-0000.parquet", durable=False)
            write_counter_buckets(f, table, durable=False)
    return summary


def _write_host(root, host, recs, inj, job_ids, boot_ns, boot_id, summary, causes) -> None:
    cols: dict[str, list] = {k: [] for k in (
        "trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret", "errno",
        "latency_ns", "arg", "kind", "command", "exit_status", "start_time", "end_time", "kernel_release",
        "lost_events", "job_id", "metadata", "repeat_count", "date")}
    truth: dict[str, list] = {k: [] for k in (
        "trace_id", "kind", "root_cause", "bifurcation_probe", "bifurcation_errno", "origin_layer",
        "expected_error", "held_out", "date")}
    meta_job = [{"key": "cluster", "value": "fleet32"}, {"key": "nccl_version", "value": "2.21.5"}]
    for n, (t, ti, pid, job, rc, timed) in enumerate(recs):
        name = TREE_NAMES[ti]
        op, arg, frames = TREES[name]
        tick = round(t / 0.004) * 0.004
        start = START + dt.timedelta(seconds=t if timed else tick)
        failing = any(e for _, _, e in frames)
        family = FAMILY_OF_TREE.get(name)
        if family in ROOT_CAUSES and (round(t, 6), ti) not in inj:
            raise AssertionError((host, name, t))  # a fault tree only where injected
        trace_id = f"{host}:{boot_id}:{pid}:{n}"
        # frame timing: entry every 2 us, each frame lasting until its last descendant returned
        depths = [d for d, _, _ in frames]
        last = []
        for i, d in enumerate(depths):
            k = i
            while k + 1 < len(depths) and depths[k + 1] > d:
                k += 1
            last.append(k)
        step = 2000
        base_ns = boot_ns + int(round((t if timed else tick) * 1e9))
        root_lat = (last[0] + 1) * step
        end = start + dt.timedelta(microseconds=root_lat / 1000) if timed else start
        exit_status = -ERRNO[frames[0][2]] if frames[0][2] else 0
        is_job = job >= 0
        date = start.date().isoformat()
        for seq, (d, fn, errno) in enumerate(frames):
            cols["trace_id"].append(trace_id)
            cols["seq"].append(seq)
            cols["ts_ns"].append(base_ns + seq * step if timed else base_ns)
            cols["pid"].append(pid)
            cols["tid"].append(pid)
            cols["ppid"].append(pid - 1 if is_job else 1)
            cols["comm"].append("python3" if is_job else "rdma_gidmon")
            cols["probe"].append(fn)
            cols["layer"].append(LAYER[fn])
            cols["depth"].append(d)
            cols["ret"].append(-ERRNO[errno] if errno else 0)
            cols["errno"].append(errno)
            cols["latency_ns"].append((last[seq] - seq + 1) * step - 500 if timed else None)
            cols["arg"].append(arg if seq == 0 else None)
            cols["kind"].append("failure" if failing else "good")
            cols["command"].append(op)
            cols["exit_status"].append(exit_status)
            cols["start_time"].append(start)
            cols["end_time"].append(end)
            cols["kernel_release"].append(RELEASE)
            cols["lost_events"].append(0)
            cols["job_id"].append(job_ids[job] if is_job else None)
            cols["metadata"].append(meta_job if is_job else None)
            cols["repeat_count"].append(rc)
            cols["date"].append(date)
        truth["trace_id"].append(trace_id)
        truth["kind"].append("failure" if failing else "good")
        truth["root_cause"].append(family)
        probe, errno, layer = FAMILIES[family] if family else (None, None, None)
        truth["bifurcation_probe"].append(probe)
        truth["bifurcation_errno"].append(errno)
        truth["origin_layer"].append(layer)
        truth["expected_error"].append(family in ROUTINE)
        truth["held_out"].append(False)
        truth["date"].append(date)
        if family:
            summary["counts"][family] = summary["counts"].get(family, 0) + 1
            hosts = summary["family_hosts"].setdefault(family, [])
            if host not in hosts:
                hosts.append(host)
        summary["max_repeat"] = max(summary["max_repeat"], rc)
    summary["records"] += len(recs)
    from tracer.schema import EVENTS, TRUTH

    ev_dates = np.array(cols.pop("date"))
    ev = pa.table({f.name: cols[f.name] for f in EVENTS if f.name in cols}, schema=pa.schema(
        [f for f in EVENTS if f.name in cols]))
    tr_dates = np.array(truth.pop("date"))
    tr = pa.table({**truth, "host": [host] * len(truth["trace_id"])},
                  schema=pa.schema([TRUTH.field(n) for n in (*truth, "host")]))
    for d in sorted(set(ev_dates.tolist())):
        write_partition(ev.filter(pa.array(ev_dates == d)), root, "events", d, host, "part-0000.parquet",
                        durable=False)
        write_partition(tr.filter(pa.array(tr_dates == d)), root, "truth", d, host, "part-0000.parquet",
                        durable=False)

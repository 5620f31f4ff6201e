"""Small and young fleets: a blind fleet generator (see __init__.py for the angle).

The fleet
---------
`hosts` (3 by default) mlx5 RoCE hosts of a cluster in bring-up that doubles as a CI cluster, for
`hours` (2) from 2026-11-16T09:00Z: upstream kernel 6.8.0-60-generic with the in-tree mlx5 driver
(no OFED, no peer memory), one NIC (`mlx5_0`, port 1), booted 20-90 minutes before the window
(young: no history, the dataset starts with the window). One CI job at a time a host, 2 ranks
(comm python3, one process a rank, started 0.2 s apart), alternating two job types: `unit` (small
host buffers, 12-20 min) and `perf` (a 4 GiB host buffer and 128-byte CQE padding, 15-25 min);
the next job starts 1-3 min after one ends. A rank's start-up (30 ms apart): QUERY_GID_ENTRY of
its own GID slot (index 1), alloc_pd, create_cq, two reg_mr (perf: the second one is the 4 GiB
buffer), two RC QPs (create_qp, RESET->INIT, INIT->RTR, RTR->RTS each); then every 2-4 minutes it
re-registers a buffer and re-creates a connection (reg_mr, create_qp, the three transitions). A
bring-up validation agent (comm rdma-bringup, one long-lived process) reads the port's four GID
slots every 30 minutes (slot 3 is empty: only the link-local and the RoCEv2 IPv4 GIDs and one IPv6
one are configured) and goes on whatever it finds.

The tracer (probe set "rdma", the functions of TREES; statics the reference says may be inlined --
verbs.c's and mlx5's `create_qp` -- and generic kernel internals such as GUP are not probes) takes
60 s snapshots at a per-host phase: counters for every probe in every snapshot (exact: every call,
good or failing), and a failure call tree for every tree with a failing frame (no signature ever
reaches the K=3 aggregation limit in one snapshot here: repeat_count stays null). Good trees are
sampled only in capture windows, the first 30 s of every 5 minutes at a per-host phase (at most 12
of a tree shape a window), timed per frame; a failure inside a window is timed too, outside one
all its frames carry the 4 ms tick its root returned in and latency is null. Few good traces:
~10 % of the calls fall in a window.

Routine (expected_error = True, root_cause = the family). Each is seen only a handful of times
per host, but on EVERY host, and each time the process goes on:
  gid_empty_slot    QUERY_GID_ENTRY of slot 3 fails ENODATA at rdma_get_gid_attr (reference,
                    query_gid: "-ENODATA: empty GID slot"); the handler returns it. Only the agent
                    reads slot 3: 4 scans in 2 h, 4 records a host. The same pid scans on (its
                    next scan and its good reads of slots 0-2 come later): routine.
  cq_pad_refused    perf ranks ask create_cq for 128-byte CQE padding, which this NIC lacks:
                    EOPNOTSUPP at create_cq_user (reference: "CQE compression or 128B padding
                    requested without HW cap"), passed up by mlx5_ib_create_cq, create_cq and
                    ib_uverbs_create_cq; the provider creates the CQ again 3 ms later without the
                    padding, which passes, and the rank goes on to register its buffers. 2-3
                    perf jobs x 2 ranks: 4-6 records a host. The errno tells the caller to do without.
  qp_cgroup_eagain  the bring-up's rdma cgroup hca_object limit is tight: 2-3 create_qp a host
                    get EAGAIN at ib_rdmacg_try_charge under rdma_alloc_begin_uobject (reference:
                    "rdma cgroup hca_object limit reached"), passed up by create_qp and
                    ib_uverbs_create_qp; the provider retries 5 ms later, which passes, and the
                    rank goes on (its RESET->INIT etc. follow).

Root causes (expected_error = False; each on ONE host; each kills its rank, the launcher kills the
other rank 0.5 s later and the job ends: no later trace of either pid; the CI queue starts the
next job in its planned slot):
  fw_create_qp_int_err   host 0 (a NIC flashed during bring-up with a bad firmware image): 4
                    create_qp in the window get CREATE_QP status INT_ERR: EIO at mlx5_cmd_exec
                    (errno_conventions: cmd_status_to_err INT_ERR -> -EIO) under
                    mlx5_qpc_create_qp, passed up by create_user_qp, mlx5_ib_create_qp,
                    ib_create_qp_user, create_qp, ib_uverbs_create_qp; the core drops its
                    lookups and aborts the uobject after it. EIO is no "try again": fatal.
  memlock_unset_enomem   host 1 (its limits.conf role not yet applied: RLIMIT_MEMLOCK at the
                    distribution default): every perf rank's 4 GiB reg_mr fails ENOMEM at
                    ib_umem_get (reference: "pinned_vm + npages > RLIMIT_MEMLOCK without
                    CAP_IPC_LOCK"), before any pin, passed up by mlx5_ib_reg_user_mr and
                    ib_uverbs_reg_mr; both ranks of each perf job die (2 records a perf job).
                    unit jobs on that host pass: the host is not down.
  neighbour_timeout      host 2 (a mis-set VLAN on its switch port for one of the CI peers): 3
                    INIT->RTR transitions never resolve the neighbour: ETIMEDOUT at
                    rdma_addr_find_l2_eth_by_grh after 1 s (reference: "neighbour never resolved
                    within 1000 ms"), passed up by ib_resolve_unicast_gid_dmac,
                    ib_resolve_eth_dmac, _ib_modify_qp, ib_modify_qp_with_udata, modify_qp and
                    ib_uverbs_modify_qp.
Each of these is on 1 host of 3 -- a third of the fleet -- with about as many records there as a
routine family has on that host (3-6): neither its count nor its share of hosts tells it from the
routine; what does is that the process died after it (no later trace of the pid, the job gone)
and that the errno is no "try again"/"not there" signal.
Good traces: kind good, no root cause, expected_error False, held_out False. Truth has one row per
record; bifurcation = origin for every failure (each origin's parent edge is in the good trees of
its operation: mlx5_qpc_create_qp -> mlx5_cmd_exec in every good create_qp, mlx5_ib_reg_user_mr ->
ib_umem_get in every good reg_mr, ib_resolve_unicast_gid_dmac -> rdma_addr_find_l2_eth_by_grh in
every good INIT->RTR, rdma_alloc_begin_uobject -> ib_rdmacg_try_charge in every good create,
mlx5_ib_create_cq -> create_cq_user in every good create_cq, the handler -> rdma_get_gid_attr in
every good GID read).
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from pathlib import Path

from tracer.schema import polars_schema, write_counter_buckets, write_partition

START = dt.datetime(2026, 11, 16, 9, 0, tzinfo=dt.UTC)
KERNEL = "6.8.0-60-generic"
SNAP_S = 60.0
WINDOW_EVERY_S, WINDOW_LEN_S, WINDOW_MAX = 300.0, 30.0, 12
TICK_NS = 4_000_000
STEP_NS = 1_500
ERRNO_NUM = {"ENODATA": 61, "EOPNOTSUPP": 95, "EAGAIN": 11, "EIO": 5, "ENOMEM": 12, "ETIMEDOUT": 110}

U, C, D = "uverbs", "core", "driver"
LAYER = {
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": U, "rdma_get_gid_attr": C,
    "rdma_read_gid_attr_ndev_rcu": C, "rdma_put_gid_attr": C,
    "ib_uverbs_alloc_pd": U, "rdma_alloc_begin_uobject": C, "ib_rdmacg_try_charge": C, "mlx5_ib_alloc_pd": D,
    "mlx5_cmd_exec": D, "rdma_restrack_add": C, "uverbs_response": U, "rdma_alloc_abort_uobject": C,
    "ib_uverbs_create_cq": U, "create_cq": U, "mlx5_ib_create_cq": D, "create_cq_user": D, "ib_umem_get": C,
    "mlx5_ib_db_map_user": D, "mlx5_comp_eqn_get": D, "mlx5_core_create_cq": D,
    "ib_uverbs_reg_mr": U, "rdma_lookup_get_uobject": C, "mlx5_ib_reg_user_mr": D, "mlx5r_umr_resource_init": D,
    "create_real_mr": D, "alloc_cacheable_mr": D, "mlx5r_umr_update_mr_pas": D, "rdma_lookup_put_uobject": C,
    "ib_uverbs_create_qp": U, "create_qp": U, "ib_create_qp_user": C, "mlx5_ib_create_qp": D,
    "create_user_qp": D, "_create_user_qp": D, "mlx5_qpc_create_qp": D, "ib_create_qp_security": C,
    "ib_qp_usecnt_inc": C,
    "ib_uverbs_modify_qp": U, "modify_qp": U, "copy_ah_attr_from_uverbs": U, "ib_modify_qp_with_udata": C,
    "_ib_modify_qp": C, "rdma_counter_bind_qp_auto": C, "rdma_fill_sgid_attr": C, "rdma_check_ah_attr": C,
    "ib_resolve_eth_dmac": C, "rdma_check_gid_user_access": C, "ib_resolve_unicast_gid_dmac": C,
    "rdma_addr_find_l2_eth_by_grh": C, "rdma_lag_get_ah_roce_slave": C, "ib_security_modify_qp": C,
    "mlx5_ib_modify_qp": D, "ib_modify_qp_is_ok": C, "__mlx5_ib_modify_qp": D, "mlx5_set_path": D,
    "mlx5_core_qp_modify": D, "rdma_lag_put_ah_roce_slave": C, "rdma_unfill_sgid_attr": C,
}
PROBES = list(LAYER)

_GID_H = "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"
_CQ_OK = [(0, "ib_uverbs_create_cq", None), (1, "create_cq", None), (2, "rdma_alloc_begin_uobject", None),
          (3, "ib_rdmacg_try_charge", None), (2, "mlx5_ib_create_cq", None), (3, "create_cq_user", None),
          (4, "ib_umem_get", None), (4, "mlx5_ib_db_map_user", None), (3, "mlx5_comp_eqn_get", None),
          (3, "mlx5_core_create_cq", None), (4, "mlx5_cmd_exec", None), (2, "rdma_restrack_add", None),
          (2, "uverbs_response", None)]
_MR_OK = [(0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
          (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", None), (2, "mlx5r_umr_resource_init", None),
          (2, "ib_umem_get", None), (2, "create_real_mr", None), (3, "alloc_cacheable_mr", None),
          (3, "mlx5r_umr_update_mr_pas", None), (1, "rdma_restrack_add", None), (1, "rdma_lookup_put_uobject", None),
          (1, "uverbs_response", None)]
_QP_OK = [(0, "ib_uverbs_create_qp", None), (1, "create_qp", None), (2, "rdma_alloc_begin_uobject", None),
          (3, "ib_rdmacg_try_charge", None), (2, "rdma_lookup_get_uobject", None), (2, "ib_create_qp_user", None),
          (3, "mlx5_ib_create_qp", None), (4, "create_user_qp", None), (5, "_create_user_qp", None),
          (6, "ib_umem_get", None), (6, "mlx5_ib_db_map_user", None), (5, "mlx5_qpc_create_qp", None),
          (6, "mlx5_cmd_exec", None), (3, "ib_create_qp_security", None), (3, "rdma_restrack_add", None),
          (2, "ib_qp_usecnt_inc", None), (2, "rdma_lookup_put_uobject", None), (2, "uverbs_response", None)]
_MODIFY_TAIL = [(4, "ib_security_modify_qp", None), (5, "mlx5_ib_modify_qp", None), (6, "ib_modify_qp_is_ok", None),
                (6, "__mlx5_ib_modify_qp", None)]
_RTR_RESOLVE = [(4, "rdma_fill_sgid_attr", None), (5, "rdma_check_ah_attr", None), (5, "rdma_get_gid_attr", None),
                (4, "ib_resolve_eth_dmac", None), (5, "rdma_check_gid_user_access", None),
                (5, "ib_resolve_unicast_gid_dmac", None), (6, "rdma_addr_find_l2_eth_by_grh", None)]
_MQ_HEAD = [(0, "ib_uverbs_modify_qp", None), (1, "modify_qp", None), (2, "rdma_lookup_get_uobject", None)]

# name -> (operation, arg of the root frame, [(depth, function, errno or None)] in entry order)
TREES: dict[str, tuple[str, str | None, list]] = {
    "query_gid_ok": ("query_gid", None, [(0, _GID_H, None), (1, "rdma_get_gid_attr", None),
                                         (1, "rdma_read_gid_attr_ndev_rcu", None), (1, "rdma_put_gid_attr", None)]),
    "query_gid_empty": ("query_gid", None, [(0, _GID_H, "ENODATA"), (1, "rdma_get_gid_attr", "ENODATA")]),
    "alloc_pd_ok": ("alloc_pd", None, [(0, "ib_uverbs_alloc_pd", None), (1, "rdma_alloc_begin_uobject", None),
                                       (2, "ib_rdmacg_try_charge", None), (1, "mlx5_ib_alloc_pd", None),
                                       (2, "mlx5_cmd_exec", None), (1, "rdma_restrack_add", None),
                                       (1, "uverbs_response", None)]),
    "create_cq_ok": ("create_cq", None, _CQ_OK),
    "create_cq_pad_refused": ("create_cq", None, [
        (0, "ib_uverbs_create_cq", "EOPNOTSUPP"), (1, "create_cq", "EOPNOTSUPP"),
        (2, "rdma_alloc_begin_uobject", None), (3, "ib_rdmacg_try_charge", None),
        (2, "mlx5_ib_create_cq", "EOPNOTSUPP"), (3, "create_cq_user", "EOPNOTSUPP"),
        (2, "rdma_alloc_abort_uobject", None)]),
    "reg_mr_ok": ("reg_mr", None, _MR_OK),
    "reg_mr_memlock": ("reg_mr", None, [
        (0, "ib_uverbs_reg_mr", "ENOMEM"), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
        (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", "ENOMEM"),
        (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get", "ENOMEM"), (1, "rdma_lookup_put_uobject", None),
        (1, "rdma_alloc_abort_uobject", None)]),
    "create_qp_ok": ("create_qp", None, _QP_OK),
    "create_qp_cgroup_eagain": ("create_qp", None, [
        (0, "ib_uverbs_create_qp", "EAGAIN"), (1, "create_qp", "EAGAIN"), (2, "rdma_alloc_begin_uobject", "EAGAIN"),
        (3, "ib_rdmacg_try_charge", "EAGAIN")]),
    "create_qp_fw_eio": ("create_qp", None, [
        (0, "ib_uverbs_create_qp", "EIO"), (1, "create_qp", "EIO"), (2, "rdma_alloc_begin_uobject", None),
        (3, "ib_rdmacg_try_charge", None), (2, "rdma_lookup_get_uobject", None), (2, "ib_create_qp_user", "EIO"),
        (3, "mlx5_ib_create_qp", "EIO"), (4, "create_user_qp", "EIO"), (5, "_create_user_qp", None),
        (6, "ib_umem_get", None), (6, "mlx5_ib_db_map_user", None), (5, "mlx5_qpc_create_qp", "EIO"),
        (6, "mlx5_cmd_exec", "EIO"), (2, "rdma_lookup_put_uobject", None), (2, "rdma_alloc_abort_uobject", None)]),
    "modify_qp_init": ("modify_qp", "RESET->INIT", _MQ_HEAD + [
        (2, "ib_modify_qp_with_udata", None), (3, "_ib_modify_qp", None), (4, "rdma_counter_bind_qp_auto", None)]
        + _MODIFY_TAIL + [(7, "mlx5_core_qp_modify", None), (8, "mlx5_cmd_exec", None),
                          (2, "rdma_lookup_put_uobject", None)]),
    "modify_qp_rtr": ("modify_qp", "INIT->RTR", _MQ_HEAD + [
        (2, "copy_ah_attr_from_uverbs", None), (2, "ib_modify_qp_with_udata", None), (3, "_ib_modify_qp", None)]
        + _RTR_RESOLVE + [(4, "rdma_lag_get_ah_roce_slave", None), (5, "rdma_read_gid_attr_ndev_rcu", None)]
        + _MODIFY_TAIL + [(7, "mlx5_set_path", None), (7, "mlx5_core_qp_modify", None), (8, "mlx5_cmd_exec", None),
                          (4, "rdma_lag_put_ah_roce_slave", None), (4, "rdma_unfill_sgid_attr", None),
                          (2, "rdma_lookup_put_uobject", None)]),
    "modify_qp_rtr_timeout": ("modify_qp", "INIT->RTR", [
        (0, "ib_uverbs_modify_qp", "ETIMEDOUT"), (1, "modify_qp", "ETIMEDOUT"), (2, "rdma_lookup_get_uobject", None),
        (2, "copy_ah_attr_from_uverbs", None), (2, "ib_modify_qp_with_udata", "ETIMEDOUT"),
        (3, "_ib_modify_qp", "ETIMEDOUT"), (4, "rdma_fill_sgid_attr", None), (5, "rdma_check_ah_attr", None),
        (5, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", "ETIMEDOUT"),
        (5, "rdma_check_gid_user_access", None), (5, "ib_resolve_unicast_gid_dmac", "ETIMEDOUT"),
        (6, "rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT"), (4, "rdma_unfill_sgid_attr", None),
        (2, "rdma_lookup_put_uobject", None)]),
    "modify_qp_rts": ("modify_qp", "RTR->RTS", _MQ_HEAD + [
        (2, "ib_modify_qp_with_udata", None), (3, "_ib_modify_qp", None)]
        + _MODIFY_TAIL + [(7, "mlx5_core_qp_modify", None), (8, "mlx5_cmd_exec", None),
                          (2, "rdma_lookup_put_uobject", None)]),
}

# family -> (origin probe, errno, origin layer)
FAMILIES = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", C),
    "cq_pad_refused": ("create_cq_user", "EOPNOTSUPP", D),
    "qp_cgroup_eagain": ("ib_rdmacg_try_charge", "EAGAIN", C),
    "fw_create_qp_int_err": ("mlx5_cmd_exec", "EIO", D),
    "memlock_unset_enomem": ("ib_umem_get", "ENOMEM", C),
    "neighbour_timeout": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", C),
}
FAMILY_TREE = {"gid_empty_slot": "query_gid_empty", "cq_pad_refused": "create_cq_pad_refused",
               "qp_cgroup_eagain": "create_qp_cgroup_eagain", "fw_create_qp_int_err": "create_qp_fw_eio",
               "memlock_unset_enomem": "reg_mr_memlock", "neighbour_timeout": "modify_qp_rtr_timeout"}
TREE_FAMILY = {t: f for f, t in FAMILY_TREE.items()}
ROUTINE = {k: FAMILIES[k] for k in ("gid_empty_slot", "cq_pad_refused", "qp_cgroup_eagain")}
ROOT_CAUSES = {k: FAMILIES[k] for k in ("fw_create_qp_int_err", "memlock_unset_enomem", "neighbour_timeout")}
FAULT_HOST = {"fw_create_qp_int_err": 0, "memlock_unset_enomem": 1, "neighbour_timeout": 2}
FAULT_TARGETS = {"fw_create_qp_int_err": 4, "neighbour_timeout": 3}  # memlock: every perf rank on its host
CGROUP_TARGETS = 3
FATAL = set(ROOT_CAUSES)

# extra time a frame spends after its children (ns): firmware commands, pinning, the neighbour wait
_EXTRA = {"mlx5_cmd_exec": 120_000, "ib_umem_get": 40_000, "rdma_addr_find_l2_eth_by_grh": 25_000,
          "mlx5_core_qp_modify": 5_000}


def _timing(frames: list, *, timeout: bool, large: bool) -> tuple[list[int], list[int]]:
    """Entry offsets and latencies (ns) of a tree's frames, each frame's latency spanning its
    children and its own work."""
    n = len(frames)
    ts, lat = [0] * n, [0] * n
    cursor = 0
    stack: list[tuple[int, int]] = []

    def close(j: int) -> None:
        nonlocal cursor
        fn, err = frames[j][1], frames[j][2]
        extra = _EXTRA.get(fn, 0)
        if fn == "rdma_addr_find_l2_eth_by_grh" and timeout and err:
            extra = 1_000_000_000
        if fn == "ib_umem_get" and large and not err:
            extra = 3_000_000
        cursor += STEP_NS + extra
        lat[j] = cursor - ts[j]

    for i, (d, _, _) in enumerate(frames):
        while stack and stack[-1][1] >= d:
            close(stack.pop()[0])
        ts[i] = cursor
        cursor += STEP_NS
        stack.append((i, d))
    while stack:
        close(stack.pop()[0])
    return ts, lat


def _hostname(i: int) -> str:
    return f"fg33-h{i}"


def _plan_host(rng: random.Random, hi: int, span_s: float) -> list[dict]:
    """Planned calls of one host: dicts of t (s from START), proc, op. Ranks carry their job."""
    plans: list[dict] = []
    agent = {"pid": 900 + rng.randrange(50), "ppid": 1, "comm": "rdma-bringup", "job": None, "meta": None,
             "rank": None}
    phase = rng.uniform(60, 1700)
    t = phase
    while t < span_s - 5:
        for slot in range(4):
            plans.append({"t": t + slot * 0.002, "proc": agent, "op": "gid_scan_empty" if slot == 3 else "gid_scan"})
        t += 1800
    jobs = []
    t = rng.uniform(30, 180)
    kind = rng.choice(["unit", "perf"])
    pid = 4000 + 500 * hi + rng.randrange(100)
    n = 0
    while t < span_s - 300:
        dur = rng.uniform(12, 20) * 60 if kind == "unit" else rng.uniform(15, 25) * 60
        end = min(t + dur, span_s - 1)
        launcher = pid
        pid += 3
        job_id = f"{7100 + 100 * hi + n}"
        ranks = []
        for r in range(2):
            proc = {"pid": pid + r, "ppid": launcher, "comm": "python3", "job": job_id, "rank": r,
                    "meta": {"job_type": kind, "rank": str(r), "partition": "ci"}}
            ranks.append(proc)
            s = t + 0.2 * r
            ops = ["query_gid", "alloc_pd", "create_cq_pad" if kind == "perf" else "create_cq", "reg_mr",
                   "reg_mr_large" if kind == "perf" else "reg_mr"]
            ops += ["create_qp", "init", "rtr", "rts"] * 2
            for k, op in enumerate(ops):
                plans.append({"t": s + 0.03 * k + rng.uniform(0, 0.005), "proc": proc, "op": op})
            p = s + rng.uniform(120, 240)
            while p < end:
                for k, op in enumerate(["reg_mr", "create_qp", "init", "rtr", "rts"]):
                    plans.append({"t": p + 0.015 * k, "proc": proc, "op": op})
                p += rng.uniform(120, 240)
        pid += 2
        jobs.append({"id": job_id, "start": t, "end": end, "ranks": ranks, "kind": kind})
        for proc in ranks:
            proc["jobrec"] = jobs[-1]
        t = end + rng.uniform(60, 180)
        kind = "perf" if kind == "unit" else "unit"
        n += 1
    plans.sort(key=lambda c: c["t"])
    return plans


def _resolve(rng: random.Random, plans: list[dict], hi: int, span_s: float, faults: bool) -> tuple[list, list]:
    """Walk a host's plan in time order: the trees that ran (t, proc, tree) and the injections."""
    targets: dict[str, list[float]] = {}
    for fam, count in FAULT_TARGETS.items():
        if faults and FAULT_HOST[fam] == hi:
            targets[fam] = sorted(rng.uniform(0.08, 0.9) * span_s for _ in range(count))
    cg = sorted(rng.uniform(0.05, 0.95) * span_s for _ in range(CGROUP_TARGETS))
    dead_at: dict[int, float] = {}  # pid -> time it ended (died or killed)
    ran: list = []
    injected: list = []
    # a job whose rank died ends there; later jobs are shifted as planned (their start is after)
    for c in plans:
        t, proc, op = c["t"], c["proc"], c["op"]
        pid = proc["pid"]
        if pid in dead_at and t >= dead_at[pid]:
            continue
        job = proc.get("jobrec")
        tree = None
        fatal = False
        if op == "gid_scan":
            tree = "query_gid_ok"
        elif op == "gid_scan_empty":
            tree = "query_gid_empty"
        elif op == "query_gid":
            tree = "query_gid_ok"
        elif op == "alloc_pd":
            tree = "alloc_pd_ok"
        elif op == "create_cq":
            tree = "create_cq_ok"
        elif op == "create_cq_pad":
            ran.append((t, proc, "create_cq_pad_refused"))
            t, tree = t + 0.003, "create_cq_ok"
        elif op == "reg_mr":
            tree = "reg_mr_ok"
        elif op == "reg_mr_large":
            if faults and FAULT_HOST["memlock_unset_enomem"] == hi:
                tree, fatal = "reg_mr_memlock", True
            else:
                tree = "reg_mr_large_ok"
        elif op == "create_qp":
            fw = targets.get("fw_create_qp_int_err")
            if fw and fw[0] <= t:
                fw.pop(0)
                tree, fatal = "create_qp_fw_eio", True
            elif cg and cg[0] <= t:
                cg.pop(0)
                ran.append((t, proc, "create_qp_cgroup_eagain"))
                t, tree = t + 0.005, "create_qp_ok"
            else:
                tree = "create_qp_ok"
        elif op == "init":
            tree = "modify_qp_init"
        elif op == "rtr":
            nb = targets.get("neighbour_timeout")
            if nb and nb[0] <= t:
                nb.pop(0)
                tree, fatal = "modify_qp_rtr_timeout", True
            else:
                tree = "modify_qp_rtr"
        elif op == "rts":
            tree = "modify_qp_rts"
        ran.append((t, proc, tree))
        if fatal:
            injected.append((proc["pid"], TREE_FAMILY[tree], t))
            dead_at[pid] = t
            for other in job["ranks"]:
                if other["pid"] != pid:
                    dead_at.setdefault(other["pid"], t + 0.5)
    # a job cut short: calls of its ranks after the kill were dropped above; the next job's start
    # stays as planned (it was already after this job's planned end)
    return ran, injected


def generate(root, *, hosts: int = 3, hours: float = 2, seed: int = 33, faults: bool = True) -> dict:
    """Write the fleet's dataset under `root` (events, counters + counter_buckets, truth) and
    return its summary."""
    import polars as pl

    if faults and hosts < 3:
        raise ValueError("the faulty fleet needs 3 hosts or more (one cause a host)")
    root = Path(root)
    rng = random.Random(seed)
    span_s = hours * 3600.0
    date = START.date().isoformat()
    ev_schema, ct_schema, tr_schema = polars_schema("events"), polars_schema("counters"), polars_schema("truth")
    counts: dict[str, int] = defaultdict(int)
    family_hosts: dict[str, set] = defaultdict(set)
    per_host_counts: dict[str, dict[str, int]] = {}
    injected_all = []
    good_by_op: dict[str, int] = defaultdict(int)
    records_total = 0
    for hi in range(hosts):
        host = _hostname(hi)
        hrng = random.Random(rng.random())
        boot = START - dt.timedelta(minutes=hrng.uniform(20, 90))
        boot_id = f"b{hrng.randrange(16**6):06x}"
        win_phase = hrng.uniform(0, WINDOW_EVERY_S)
        snap_phase = hrng.uniform(0, SNAP_S)
        plans = _plan_host(hrng, hi, span_s)
        ran, injected = _resolve(hrng, plans, hi, span_s, faults)
        ran.sort(key=lambda x: x[0])
        rows, truth = [], []
        calls: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])  # (snap, probe) -> [calls, fails]
        errs: dict[tuple[int, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        window_used: dict[tuple[int, str], int] = defaultdict(int)
        sig_snap: dict[tuple[int, str], int] = defaultdict(int)
        host_counts: dict[str, int] = defaultdict(int)
        seqno = 0
        for t, proc, tname in ran:
            large = tname == "reg_mr_large_ok"
            tkey = "reg_mr_ok" if large else tname
            op, arg, frames = TREES[tkey]
            timeout = tkey == "modify_qp_rtr_timeout"
            offs, lats = _timing(frames, timeout=timeout, large=large)
            start_ns = int(((t + (START - boot).total_seconds())) * 1e9)
            end_ns = start_ns + lats[0]
            end_s = t + lats[0] / 1e9
            snap = int((end_s - snap_phase) // SNAP_S) + 1  # closes at snap_phase + snap*60
            for _, fn, err in frames:
                cell = calls[(snap, fn)]
                cell[0] += 1
                if err:
                    cell[1] += 1
                    errs[(snap, fn)][err] += 1
            failed = any(e for _, _, e in frames)
            in_window = ((t - win_phase) % WINDOW_EVERY_S) < WINDOW_LEN_S
            widx = int((t - win_phase) // WINDOW_EVERY_S)
            if not failed:
                if not in_window or window_used[(widx, tkey)] >= WINDOW_MAX:
                    continue
                window_used[(widx, tkey)] += 1
            else:
                sig_snap[(snap, tkey)] += 1
                assert sig_snap[(snap, tkey)] <= 3, (host, tkey, snap)
            family = TREE_FAMILY.get(tkey)
            trace_id = f"{host}:{boot_id}:{proc['pid']}:{seqno}"
            seqno += 1
            root_err = frames[0][2]
            root_ret = -ERRNO_NUM[root_err] if root_err else 0
            if in_window:
                ts_list = [start_ns + o for o in offs]
                lat_list = list(lats)
                st = START + dt.timedelta(seconds=t)
                en = st + dt.timedelta(microseconds=lats[0] / 1000)
            else:
                tick = end_ns // TICK_NS * TICK_NS
                ts_list = [tick] * len(frames)
                lat_list = [None] * len(frames)
                st = en = boot + dt.timedelta(microseconds=tick / 1000)
            kind = "failure" if failed else "good"
            meta = proc["meta"]
            metadata = [{"key": k, "value": v} for k, v in sorted(meta.items())] if meta else None
            for i, (d, fn, err) in enumerate(frames):
                rows.append({
                    "trace_id": trace_id, "seq": i, "ts_ns": ts_list[i], "pid": proc["pid"], "tid": proc["pid"],
                    "ppid": proc["ppid"], "comm": proc["comm"], "probe": fn, "layer": LAYER[fn], "depth": d,
                    "ret": -ERRNO_NUM[err] if err else 0, "errno": err, "latency_ns": lat_list[i], "path": None,
                    "arg": arg if i == 0 else None, "path2": None, "output": None, "kind": kind, "command": op,
                    "exit_status": root_ret, "start_time": st, "end_time": en, "host": host,
                    "kernel_release": KERNEL, "lost_events": 0, "job_id": proc["job"], "metadata": metadata,
                    "repeat_count": None,
                })
            if family:
                probe, errno, layer = FAMILIES[family]
                truth.append({"trace_id": trace_id, "host": host, "kind": kind, "root_cause": family,
                              "bifurcation_probe": probe, "bifurcation_errno": errno, "origin_layer": layer,
                              "expected_error": family in ROUTINE, "held_out": False})
                counts[family] += 1
                host_counts[family] += 1
                family_hosts[family].add(host)
            else:
                assert not failed, tkey
                truth.append({"trace_id": trace_id, "host": host, "kind": kind, "root_cause": None,
                              "bifurcation_probe": None, "bifurcation_errno": None, "origin_layer": None,
                              "expected_error": False, "held_out": False})
                good_by_op[op] += 1
        for pid, fam, t in injected:
            injected_all.append((host, fam, round(t, 3), pid))
        # counters: every probe in every snapshot from the first to the one closing after the window
        last = int((span_s + 5 - snap_phase) // SNAP_S) + 1
        crow = []
        for s in range(0, last + 1):
            when = START + dt.timedelta(seconds=snap_phase + s * SNAP_S)
            if when <= START:
                continue
            for probe in PROBES:
                n_calls, n_fail = calls.get((s, probe), (0, 0))
                ec = errs.get((s, probe))
                crow.append({"host": host, "snapshot_time": when, "interval_s": SNAP_S, "kernel_release": KERNEL,
                             "vendor": "mlx5", "probe_set": "rdma", "probe": probe, "layer": LAYER[probe],
                             "live": True, "invocations": n_calls, "failures": n_fail,
                             "errno_counts": [{"errno": e, "count": c} for e, c in sorted(ec.items())] if ec else [],
                             "lost_records": 0})
        assert all(s <= last for s, _ in calls), host
        events = pl.DataFrame(rows, schema=ev_schema)
        write_partition(events, root, "events", date, host, "part-00000.parquet", durable=False)
        counters = pl.DataFrame(crow, schema=ct_schema)
        path = write_partition(counters, root, "counters", date, host, "part-00000.parquet", durable=False)
        write_counter_buckets(path, counters, durable=False)
        write_partition(pl.DataFrame(truth, schema=tr_schema), root, "truth", date, host, "part-00000.parquet",
                        durable=False)
        per_host_counts[host] = dict(host_counts)
        records_total += len(truth)
    return {
        "hosts": [_hostname(i) for i in range(hosts)],
        "counts": dict(counts),
        "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
        "per_host": per_host_counts,
        "injected": injected_all,
        "good_by_operation": dict(good_by_op),
        "records": records_total,
        "faults": faults,
    }

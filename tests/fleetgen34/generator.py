"""A heterogeneous, messy fleet: a blind fleet generator (see __init__.py for the angle).

Written from reference/rdma_control_path.yaml (call chains, functions, errnos, the OFED umem
path), tracer/schema.py (tables, written through its writers), README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' module docstrings. It imports only tracer.schema
of the project.

The fleet
---------
`hosts` (8 by default, even) mlx5 RoCE hosts for `hours` (3) from 2026-11-23T08:00Z, two groups:
  group "ofed" (the first half, `fg34-h00..`): MLNX_OFED 23.10 on 5.15.0-122-generic, ConnectX-5
      firmware 16.35.4030. User memory is pinned through OFED's ib_umem_get_peer -> __ib_umem_get
      (reference name_corrections: "In OFED, mlx5_ib_reg_user_mr calls ib_umem_get_peer()"; CQ
      and QP buffers too). No 128-byte CQE padding capability on this NIC/firmware.
  group "upstream" (the second half): the in-tree mlx5 driver on 6.8.0-60-generic, ConnectX-7
      firmware 28.41.1002; user memory through ib_umem_get directly. Every capability asked for
      here is there.
The group, NIC and firmware are in each trace's job metadata (`nic`, `nic_fw`, `driver`) and the
release in kernel_release (events and counters); vendor is mlx5 everywhere.

Jobs: one job slot a host, 4 ranks a job (comm python3, one process a rank, started 0.2 s apart),
20-40 minutes, the next job 1-3 minutes after one ends. Tenants: "orion" everywhere (job types
alternating `unit` and `perf`), and "vega" (always `perf`) sharing a partition of four hosts
(ofed hosts 1 and 2, upstream hosts 0 and 3), every other job there. A `perf` job asks create_cq
for 128-byte CQE padding. A rank's start-up (30 ms apart): QUERY_GID_ENTRY of slot 1, alloc_pd,
create_cq, two reg_mr, two RC QPs (create_qp, RESET->INIT, INIT->RTR, RTR->RTS each); then every
2-4 minutes it registers a new buffer, deregisters the old one and re-creates a connection
(create_qp and the three transitions); at its end it deregisters its two buffers. A node agent
(comm rdma-agent, one long-lived pid a host) reads the four GID slots every 10 minutes; slot 3 is
empty everywhere. A rank that dies ends its job: the launcher kills the other ranks 0.5 s later
(they make no call after), and the slot's next job starts 1-3 minutes later.

The tracer (probe set "rdma": every function of TREES is a probe; statics the reference says are
usually inlined -- the verbs.c and mlx5 qp.c `create_qp`, _create_user_qp -- and GUP are not):
30 s snapshots at a per-host phase; counters for every probe in every snapshot (exact: every call,
recorded or not); of the trees with a failing frame, the first K=3 of a signature (shape and
errnos) in a snapshot are records and the rest are counted in the third's repeat_count (a perf
job's four ranks refused CQE padding within a second: 3 records, the third standing for 2); no
ring-buffer loss; good trees only in capture windows (the first 30 s of
every 3 minutes at a per-host phase, at most 12 of a tree a window), timed per frame; a failure in
a window is timed, outside all its frames carry the 4 ms tick its root returned in, latency null.

The mess (no fault; nothing may alert on it):
  - clock skew: ofed host 2's wall clock runs 4 minutes ahead, upstream host 2's 3 minutes behind
    (snapshot times and trace times alike; ts_ns, the monotonic clock, is unaffected);
  - a rename: upstream host 1 is renamed at half the window (`fg34-h05` -> `fg34-gpu05` with the
    default 8 hosts): its snapshots before are under the old name, after under the new one (the
    same boot, pids, jobs and agent go on across it; trace ids carry the name);
  - out-of-order delivery: on ofed host 0 and upstream hosts 1 and 2, 12 % of the snapshots reach
    the dataset 20-70 minutes late: they are in a later ingest batch's part file (one part file per
    15-minute ingest batch, `part-<batch>-...parquet`), rows in arrival order, so part files of a
    host overlap in time and a file's rows are not in time order.

Routine (expected_error = True, root_cause = the family; the process goes on each time)
-------------------------------------------------------------------------------------------
  gid_empty_slot   QUERY_GID_ENTRY of slot 3: ENODATA at rdma_get_gid_attr (reference query_gid:
                   "-ENODATA: empty GID slot"), returned by the handler; the agent goes on to its
                   next scan. Every host, 18 a host in 3 h.
  cq_pad_refused   ofed group ONLY: a perf rank's create_cq asks 128-byte CQE padding, which
                   ConnectX-5 here lacks: EOPNOTSUPP at create_cq_user (reference: "CQE
                   compression or 128B padding requested without HW cap"), up through
                   mlx5_ib_create_cq, create_cq, ib_uverbs_create_cq; the provider creates the CQ
                   again 3 ms later without padding, which passes, and the rank goes on. The
                   upstream group's ConnectX-7 has the cap: never seen there. A per-group routine
                   errno (the family belongs to one (kernel release, NIC) group).
  qp_cgroup_eagain every host: 4 % of create_qp get EAGAIN at ib_rdmacg_try_charge under
                   rdma_alloc_begin_uobject (reference: "rdma cgroup hca_object limit reached"),
                   up through create_qp and ib_uverbs_create_qp; retried 5 ms later, passing.

Root causes (expected_error = False; each kills its rank, and its job with it)
-------------------------------------------------------------------------------
  qp_flag_unsupported  ofed hosts 1 and 2 (vega's partition on the old group), from 30 % of the
                   window: vega's job image is updated to a NCCL that asks create_qp for a
                   create flag the ConnectX-5 firmware lacks: EOPNOTSUPP at mlx5_ib_create_qp
                   (reference: "process_create_flags: unsupported create flag"), up through
                   ib_create_qp_user, create_qp, ib_uverbs_create_qp; the library has no fallback
                   and the rank dies (every vega job there dies at start-up). The same image on
                   the upstream vega hosts works (ConnectX-7 has the flag). It HIDES: the same
                   errno as cq_pad_refused, on the same hosts, in the same (perf) processes, a
                   few calls later; and EOPNOTSUPP is a "do without" errno. What tells it apart:
                   the process never goes on after it (its origin differs: mlx5_ib_create_qp in
                   create_qp, not create_cq_user in create_cq).
  fw_create_qp_int_err the renamed host, from 25 % of the window to the end (across the rename):
                   8 % of its CREATE_QP firmware commands answer INT_ERR: EIO at mlx5_cmd_exec
                   (errno_conventions: cmd_status_to_err INT_ERR -> -EIO) under
                   mlx5_qpc_create_qp, up through create_user_qp, mlx5_ib_create_qp,
                   ib_create_qp_user, create_qp, ib_uverbs_create_qp. EIO is no "try again":
                   fatal. One NIC: its findings are under two host names.
  neighbour_timeout    upstream host 2 (the clock 3 minutes behind), from half the window: 12 % of
                   INIT->RTR never resolve the neighbour: ETIMEDOUT at rdma_addr_find_l2_eth_by_grh
                   after 1 s (reference: "neighbour never resolved within 1000 ms"), up through
                   ib_resolve_unicast_gid_dmac, ib_resolve_eth_dmac, _ib_modify_qp,
                   ib_modify_qp_with_udata, modify_qp, ib_uverbs_modify_qp; fatal.
Alerts: none is required; one on a cause's host naming the cause's errno is acceptable; none may
name a routine family's errno or fall on another host.

Truth: one row per record, keyed (host, trace_id). root_cause the family (ROOT_CAUSES or ROUTINE),
null for good records; bifurcation = origin (the deepest failing frame, none of whose callees
failed): every origin's parent edge is in the good trees of its operation on the same group
(create_cq_user under mlx5_ib_create_cq, ib_rdmacg_try_charge under rdma_alloc_begin_uobject,
mlx5_ib_create_qp under ib_create_qp_user, mlx5_cmd_exec under mlx5_qpc_create_qp,
rdma_addr_find_l2_eth_by_grh under ib_resolve_unicast_gid_dmac, rdma_get_gid_attr under the GID
handler); origin_layer its layer. Good records: kind good, no cause, expected_error False,
held_out False. With faults=False (the control) the three causes are absent, vega's image is never
updated, and everything else -- routine and mess -- is the same.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import random
from collections import defaultdict
from pathlib import Path

from fleet_tables import extend_rows, table_from_columns

from tracer.schema import COUNTERS, EVENTS, TRUTH, write_counter_buckets, write_partition

START = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC)
START_NS = int(START.timestamp()) * 1_000_000_000
SNAP_S = 30.0
CAPTURE_EVERY, CAPTURE_LEN, GOOD_CAP = 180.0, 30.0, 12
BATCH_S = 900.0
TICK = 0.004
K_RECORDS = 3

GROUPS = {
    "ofed": {"kernel": "5.15.0-122-generic", "driver": "MLNX_OFED_LINUX-23.10-3.2.2.0", "nic": "ConnectX-5",
             "nic_fw": "16.35.4030"},
    "upstream": {"kernel": "6.8.0-60-generic", "driver": "inbox-6.8", "nic": "ConnectX-7", "nic_fw": "28.41.1002"},
}

ERRNO = {"ENODATA": 61, "EOPNOTSUPP": 95, "EAGAIN": 11, "EIO": 5, "ETIMEDOUT": 110}

LAYER = {
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs", "ib_uverbs_alloc_pd": "uverbs",
    "ib_uverbs_create_cq": "uverbs", "ib_uverbs_create_qp": "uverbs", "ib_uverbs_modify_qp": "uverbs",
    "ib_uverbs_reg_mr": "uverbs", "ib_uverbs_dereg_mr": "uverbs",
    "rdma_get_gid_attr": "core", "rdma_read_gid_attr_ndev_rcu": "core", "rdma_put_gid_attr": "core",
    "rdma_alloc_begin_uobject": "core", "ib_rdmacg_try_charge": "core", "rdma_restrack_add": "core",
    "rdma_alloc_abort_uobject": "core", "create_cq": "core", "create_qp": "core", "rdma_lookup_get_uobject": "core",
    "rdma_lookup_put_uobject": "core", "ib_create_qp_user": "core", "ib_create_qp_security": "core",
    "ib_qp_usecnt_inc": "core", "uverbs_response": "core", "modify_qp": "core", "ib_modify_qp_with_udata": "core",
    "_ib_modify_qp": "core", "rdma_counter_bind_qp_auto": "core", "copy_ah_attr_from_uverbs": "core",
    "rdma_fill_sgid_attr": "core", "ib_resolve_eth_dmac": "core", "rdma_check_gid_user_access": "core",
    "ib_resolve_unicast_gid_dmac": "core", "rdma_addr_find_l2_eth_by_grh": "core",
    "rdma_lag_get_ah_roce_slave": "core", "ib_security_modify_qp": "core", "ib_modify_qp_is_ok": "core",
    "rdma_lag_put_ah_roce_slave": "core", "rdma_unfill_sgid_attr": "core", "ib_umem_get": "core",
    "ib_umem_get_peer": "core", "__ib_umem_get": "core", "__uobj_perform_destroy": "core",
    "__uobj_get_destroy": "core", "uobj_destroy": "core", "uverbs_free_mr": "core", "ib_dereg_mr_user": "core",
    "ib_umem_release": "core", "ib_rdmacg_uncharge": "core",
    "mlx5_ib_alloc_pd": "driver", "mlx5_cmd_exec": "driver", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "mlx5_ib_db_map_user": "driver", "mlx5_comp_eqn_get": "driver",
    "mlx5_core_create_cq": "driver", "mlx5_ib_create_qp": "driver", "create_user_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "mlx5_ib_modify_qp": "driver", "__mlx5_ib_modify_qp": "driver",
    "mlx5_set_path": "driver", "mlx5_core_qp_modify": "driver", "mlx5_ib_reg_user_mr": "driver",
    "mlx5r_umr_resource_init": "driver", "create_real_mr": "driver", "alloc_cacheable_mr": "driver",
    "mlx5r_umr_update_mr_pas": "driver", "mlx5_ib_dereg_mr": "driver", "mlx5_revoke_mr": "driver",
    "mlx5r_umr_revoke_mr": "driver",
}

# family -> (origin probe, errno, origin layer)
ROUTINE = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "core"),
    "cq_pad_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
    "qp_cgroup_eagain": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
}
ROOT_CAUSES = {
    "qp_flag_unsupported": ("mlx5_ib_create_qp", "EOPNOTSUPP", "driver"),
    "fw_create_qp_int_err": ("mlx5_cmd_exec", "EIO", "driver"),
    "neighbour_timeout": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
}
FAMILIES = {**ROUTINE, **ROOT_CAUSES}
FLAG, FW, ARP = ROOT_CAUSES
# which group a family can occur on (per the reference and the fleet above)
FAMILY_GROUPS = {"gid_empty_slot": {"ofed", "upstream"}, "cq_pad_refused": {"ofed"},
                 "qp_cgroup_eagain": {"ofed", "upstream"}, "qp_flag_unsupported": {"ofed"},
                 "fw_create_qp_int_err": {"upstream"}, "neighbour_timeout": {"upstream"}}


def _umem(group: str, d: int) -> list:
    if group == "ofed":
        return [(d, "ib_umem_get_peer", None), (d + 1, "__ib_umem_get", None)]
    return [(d, "ib_umem_get", None)]


def _query_gid(empty: bool) -> list:
    e = "ENODATA" if empty else None
    f = [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", e), (1, "rdma_get_gid_attr", e)]
    if not empty:
        f += [(1, "rdma_read_gid_attr_ndev_rcu", None), (1, "rdma_put_gid_attr", None)]
    return f


def _alloc_pd() -> list:
    return [(0, "ib_uverbs_alloc_pd", None), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
            (1, "mlx5_ib_alloc_pd", None), (2, "mlx5_cmd_exec", None), (1, "rdma_restrack_add", None),
            (1, "uverbs_response", None)]


def _create_cq(group: str, pad_refused: bool) -> list:
    if pad_refused:
        e = "EOPNOTSUPP"
        return [(0, "ib_uverbs_create_cq", e), (1, "create_cq", e), (2, "rdma_alloc_begin_uobject", None),
                (3, "ib_rdmacg_try_charge", None), (2, "mlx5_ib_create_cq", e), (3, "create_cq_user", e),
                (2, "rdma_alloc_abort_uobject", None)]
    return [(0, "ib_uverbs_create_cq", None), (1, "create_cq", None), (2, "rdma_alloc_begin_uobject", None),
            (3, "ib_rdmacg_try_charge", None), (2, "mlx5_ib_create_cq", None), (3, "create_cq_user", None),
            *_umem(group, 4), (4, "mlx5_ib_db_map_user", None), (3, "mlx5_comp_eqn_get", None),
            (3, "mlx5_core_create_cq", None), (2, "rdma_restrack_add", None), (2, "uverbs_response", None)]


def _create_qp(group: str, fault: str | None) -> list:
    if fault == "EAGAIN":
        e = "EAGAIN"
        return [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), (2, "rdma_alloc_begin_uobject", e),
                (3, "ib_rdmacg_try_charge", e)]
    head = [(2, "rdma_alloc_begin_uobject", None), (3, "ib_rdmacg_try_charge", None),
            (2, "rdma_lookup_get_uobject", None), (2, "rdma_lookup_get_uobject", None)]
    unwind = [(2, "rdma_lookup_put_uobject", None), (2, "rdma_alloc_abort_uobject", None)]
    if fault == "EOPNOTSUPP":
        e = "EOPNOTSUPP"
        return [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), *head, (2, "ib_create_qp_user", e),
                (3, "mlx5_ib_create_qp", e), *unwind]
    if fault == "EIO":
        e = "EIO"
        return [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), *head, (2, "ib_create_qp_user", e),
                (3, "mlx5_ib_create_qp", e), (4, "create_user_qp", e), *_umem(group, 5),
                (5, "mlx5_ib_db_map_user", None), (5, "mlx5_qpc_create_qp", e), (6, "mlx5_cmd_exec", e), *unwind]
    return [(0, "ib_uverbs_create_qp", None), (1, "create_qp", None), *head, (2, "ib_create_qp_user", None),
            (3, "mlx5_ib_create_qp", None), (4, "create_user_qp", None), *_umem(group, 5),
            (5, "mlx5_ib_db_map_user", None), (5, "mlx5_qpc_create_qp", None), (6, "mlx5_cmd_exec", None),
            (3, "ib_create_qp_security", None), (3, "rdma_restrack_add", None), (2, "ib_qp_usecnt_inc", None),
            (2, "rdma_lookup_put_uobject", None), (2, "uverbs_response", None)]


def _modify(transition: str, arp_timeout: bool = False) -> list:
    f = [(0, "ib_uverbs_modify_qp", None), (1, "modify_qp", None), (2, "rdma_lookup_get_uobject", None)]
    if transition == "INIT->RTR":
        f.append((2, "copy_ah_attr_from_uverbs", None))
    f += [(2, "ib_modify_qp_with_udata", None), (3, "_ib_modify_qp", None)]
    if transition == "RESET->INIT":
        f.append((4, "rdma_counter_bind_qp_auto", None))
    if transition == "INIT->RTR":
        f += [(4, "rdma_fill_sgid_attr", None), (5, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", None),
              (5, "rdma_check_gid_user_access", None), (5, "ib_resolve_unicast_gid_dmac", None),
              (6, "rdma_addr_find_l2_eth_by_grh", None)]
        if arp_timeout:
            failing = ("ib_uverbs_modify_qp", "modify_qp", "ib_modify_qp_with_udata", "_ib_modify_qp",
                       "ib_resolve_eth_dmac", "ib_resolve_unicast_gid_dmac", "rdma_addr_find_l2_eth_by_grh")
            f = [(d, fn, "ETIMEDOUT" if fn in failing else None) for d, fn, _ in f]
            return f + [(4, "rdma_unfill_sgid_attr", None), (2, "rdma_lookup_put_uobject", None)]
        f.append((4, "rdma_lag_get_ah_roce_slave", None))
    f += [(4, "ib_security_modify_qp", None), (5, "mlx5_ib_modify_qp", None), (6, "ib_modify_qp_is_ok", None),
          (6, "__mlx5_ib_modify_qp", None)]
    if transition == "INIT->RTR":
        f.append((7, "mlx5_set_path", None))
    f += [(7, "mlx5_core_qp_modify", None), (8, "mlx5_cmd_exec", None)]
    if transition == "INIT->RTR":
        f += [(4, "rdma_lag_put_ah_roce_slave", None), (4, "rdma_unfill_sgid_attr", None)]
    return f + [(2, "rdma_lookup_put_uobject", None)]


def _reg_mr(group: str) -> list:
    return [(0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
            (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", None),
            (2, "mlx5r_umr_resource_init", None), *_umem(group, 2), (2, "create_real_mr", None),
            (3, "alloc_cacheable_mr", None), (3, "mlx5r_umr_update_mr_pas", None), (1, "rdma_restrack_add", None),
            (1, "rdma_lookup_put_uobject", None), (1, "uverbs_response", None)]


def _dereg_mr() -> list:
    return [(0, "ib_uverbs_dereg_mr", None), (1, "__uobj_perform_destroy", None), (2, "__uobj_get_destroy", None),
            (3, "rdma_lookup_get_uobject", None), (3, "uobj_destroy", None), (4, "uverbs_free_mr", None),
            (5, "ib_dereg_mr_user", None), (6, "mlx5_ib_dereg_mr", None), (7, "mlx5_revoke_mr", None),
            (8, "mlx5r_umr_revoke_mr", None), (7, "ib_umem_release", None), (4, "ib_rdmacg_uncharge", None),
            (1, "rdma_lookup_put_uobject", None)]


# tree name -> (operation, arg, frames); `name/group` where the group's driver path differs
TREES: dict[str, tuple[str, str | None, list]] = {
    "query_gid": ("query_gid", None, _query_gid(False)),
    "query_gid_empty": ("query_gid", None, _query_gid(True)),
    "alloc_pd": ("alloc_pd", None, _alloc_pd()),
    "dereg_mr": ("dereg_mr", None, _dereg_mr()),
    "rst2init": ("modify_qp", "RESET->INIT", _modify("RESET->INIT")),
    "init2rtr": ("modify_qp", "INIT->RTR", _modify("INIT->RTR")),
    "rtr2rts": ("modify_qp", "RTR->RTS", _modify("RTR->RTS")),
    "init2rtr_arp_timeout": ("modify_qp", "INIT->RTR", _modify("INIT->RTR", arp_timeout=True)),
    "create_cq_pad_refused/ofed": ("create_cq", None, _create_cq("ofed", True)),
    "create_qp_flag_eopnotsupp/ofed": ("create_qp", None, _create_qp("ofed", "EOPNOTSUPP")),
    "create_qp_fw_eio/upstream": ("create_qp", None, _create_qp("upstream", "EIO")),
}
for _g in GROUPS:
    TREES[f"create_cq/{_g}"] = ("create_cq", None, _create_cq(_g, False))
    TREES[f"create_qp/{_g}"] = ("create_qp", None, _create_qp(_g, None))
    TREES[f"create_qp_cgroup_eagain/{_g}"] = ("create_qp", None, _create_qp(_g, "EAGAIN"))
    TREES[f"reg_mr/{_g}"] = ("reg_mr", None, _reg_mr(_g))

# tree -> family of its failure
TREE_FAMILY = {"query_gid_empty": "gid_empty_slot", "create_cq_pad_refused/ofed": "cq_pad_refused",
               "create_qp_cgroup_eagain/ofed": "qp_cgroup_eagain", "create_qp_cgroup_eagain/upstream": "qp_cgroup_eagain",
               "create_qp_flag_eopnotsupp/ofed": "qp_flag_unsupported",
               "create_qp_fw_eio/upstream": "fw_create_qp_int_err", "init2rtr_arp_timeout": "neighbour_timeout"}

# root latency (s) of a tree, good calls
LATENCY = {"query_gid": (6e-6, 15e-6), "alloc_pd": (30e-6, 70e-6), "create_cq": (150e-6, 320e-6),
           "create_qp": (300e-6, 650e-6), "modify_qp": (60e-6, 220e-6), "reg_mr": (120e-6, 450e-6),
           "dereg_mr": (80e-6, 200e-6)}


def _tree(name: str, group: str) -> str:
    return f"{name}/{group}" if f"{name}/{group}" in TREES else name


class _Call:
    __slots__ = ("t", "lat", "pid", "tid", "ppid", "comm", "job", "meta", "tree", "fatal")

    def __init__(self, t, lat, pid, ppid, comm, job, meta, tree, fatal=False):
        self.t, self.lat, self.pid, self.tid, self.ppid = t, lat, pid, pid, ppid
        self.comm, self.job, self.meta, self.tree, self.fatal = comm, job, meta, tree, fatal


def _roles(hosts: int) -> dict:
    half = hosts // 2
    ofed, up = list(range(half)), list(range(half, hosts))
    return {"ofed": ofed, "upstream": up, "vega": [ofed[1], ofed[2], up[0], up[3]],
            "qp_flag_unsupported": [ofed[1], ofed[2]], "fw_create_qp_int_err": [up[1]],
            "neighbour_timeout": [up[2]], "renamed": up[1], "skew": {ofed[2]: 240.0, up[2]: -180.0},
            "late": [ofed[0], up[1], up[2]]}


def _job_calls(rng, host, group, roles, faults, job_no, t0, tenant, jtype, horizon, span, next_pid):
    """All calls of one job's ranks (truncated at the job's death) and when the job ended."""
    hi = host["idx"]
    # vega's image update IS the first cause: without it the old image stays
    image = "nccl-2.23.4" if (tenant == "vega" and FLAG in faults and t0 >= 0.30 * span) else "nccl-2.21.5"
    job_id = f"{host['idx']:02d}{job_no:03d}{rng.randrange(100, 999)}"
    meta = {"tenant": tenant, "job_type": jtype, "image": image, "nic": GROUPS[group]["nic"],
            "nic_fw": GROUPS[group]["nic_fw"], "driver": GROUPS[group]["driver"]}
    dur = rng.uniform(1200, 2400)
    planned_end = min(t0 + dur, horizon + 3600)
    ppid = next_pid()
    ranks = []
    for r in range(4):
        pid = next_pid()
        calls = []
        t = t0 + 0.2 * r

        def add(tree, lat=None, fatal=False, calls=calls, pid=pid):
            nonlocal t
            op = TREES[tree][0]
            lat = lat if lat is not None else rng.uniform(*LATENCY[op])
            calls.append(_Call(t, lat, pid, ppid, "python3", job_id, meta, tree, fatal))
            t += lat
            return fatal

        def create_qp() -> bool:
            nonlocal t
            if FLAG in faults and tenant == "vega" and group == "ofed" and image == "nccl-2.23.4" \
                    and hi in roles["qp_flag_unsupported"]:
                return add(_tree("create_qp_flag_eopnotsupp", group), lat=rng.uniform(20e-6, 60e-6), fatal=True)
            if FW in faults and hi in roles["fw_create_qp_int_err"] and t >= 0.25 * span and rng.random() < 0.08:
                return add(_tree("create_qp_fw_eio", group), lat=rng.uniform(400e-6, 900e-6), fatal=True)
            if rng.random() < 0.04:
                add(_tree("create_qp_cgroup_eagain", group), lat=rng.uniform(4e-6, 12e-6))
                t += 0.005
            add(_tree("create_qp", group))
            return False

        def connect() -> bool:
            nonlocal t
            if create_qp():
                return True
            t += 0.002
            add("rst2init")
            t += 0.002
            if ARP in faults and hi in roles["neighbour_timeout"] and t >= 0.5 * span and rng.random() < 0.12:
                return add("init2rtr_arp_timeout", lat=rng.uniform(1.0, 1.012), fatal=True)
            add("init2rtr")
            t += 0.002
            add("rtr2rts")
            return False

        def run(r=r):
            nonlocal t
            add("query_gid")
            t += 0.03
            add("alloc_pd")
            t += 0.03
            if jtype == "perf" and group == "ofed":
                add(_tree("create_cq_pad_refused", group), lat=rng.uniform(8e-6, 20e-6))
                t += 0.003
            add(_tree("create_cq", group))
            t += 0.03
            for _ in range(2):
                add(_tree("reg_mr", group))
                t += 0.03
            for _ in range(2):
                if connect():
                    return
                t += 0.03
            while True:
                t += rng.uniform(120, 240)
                if t >= planned_end:
                    break
                add(_tree("reg_mr", group))
                t += 0.01
                add("dereg_mr")
                t += 0.01
                if connect():
                    return
            t = max(t, planned_end) + 0.1 * r
            add("dereg_mr")
            t += 0.01
            add("dereg_mr")

        run()
        ranks.append(calls)
    deaths = [c.t + c.lat for calls in ranks for c in calls if c.fatal]
    out = []
    if deaths:
        kill = min(deaths) + 0.5
        for calls in ranks:
            for c in calls:
                if c.t <= kill:
                    out.append(c)
                if c.fatal:
                    break
        end = kill
    else:
        out = [c for calls in ranks for c in calls]
        end = max(c.t + c.lat for c in out)
    return out, end


def _frame_times(frames, t_ns: int, lat_ns: int) -> tuple[list[int], list[int]]:
    """Entry times and latencies of frames nested as their depths say, the root taking lat_ns."""
    n = len(frames)
    step = max(lat_ns // (n + 1), 1)
    ts, lats = [], []
    for i, (d, _, _) in enumerate(frames):
        j = i
        while j + 1 < n and frames[j + 1][0] > d:
            j += 1
        ts.append(t_ns + i * step)
        lats.append(lat_ns if i == 0 else max((j - i + 1) * step - 1, 1))
    return ts, lats


def generate(out_dir, hosts: int = 8, hours: float = 3, seed: int = 34, faults: bool | list | tuple = True) -> dict:
    """Write the fleet under `out_dir`; `faults`: True (all three causes), False (the control), or
    the names of the causes to inject (a list of ROOT_CAUSES keys). Returns the summary."""
    out = Path(out_dir)
    active = set(ROOT_CAUSES) if faults is True else set(faults or ())
    assert active <= set(ROOT_CAUSES), active
    out.mkdir(parents=True, exist_ok=True)
    assert hosts >= 8 and hosts % 2 == 0, "fleetgen34 needs an even number of hosts, 8 or more"
    rng = random.Random(seed)
    span = hours * 3600.0
    roles = _roles(hosts)
    rename_at = math.floor(0.5 * span / SNAP_S) * SNAP_S
    counts: dict[str, int] = defaultdict(int)  # records
    calls_of: dict[str, int] = defaultdict(int)  # failing calls (records and what they stand for)
    family_hosts: dict[str, set] = defaultdict(set)
    good_by_operation: dict[str, int] = defaultdict(int)
    names_of: dict[int, list[str]] = {}
    written = {"events": 0, "counters": 0}

    for hi in range(hosts):
        group = "ofed" if hi in roles["ofed"] else "upstream"
        g = GROUPS[group]
        host = {"idx": hi}
        old_name = f"fg34-h{hi:02d}"
        new_name = f"fg34-gpu{hi:02d}" if hi == roles["renamed"] else old_name
        names_of[hi] = sorted({old_name, new_name})
        skew = roles["skew"].get(hi, rng.uniform(-2.0, 2.0))
        boot = rng.uniform(2 * 86400, 9 * 86400)  # seconds booted before the window
        boot_id = hashlib.sha1(f"{seed}-{hi}-boot".encode()).hexdigest()[:8]
        phase = rng.uniform(0, SNAP_S)
        cap_phase = rng.uniform(0, CAPTURE_EVERY)
        pid_counter = [rng.randrange(20000, 40000)]

        def next_pid(pid_counter=pid_counter):
            pid_counter[0] += rng.randrange(3, 40)
            return pid_counter[0]

        calls: list[_Call] = []
        # the node agent
        agent_pid = rng.randrange(1500, 3000)
        agent_meta = {"nic": g["nic"], "nic_fw": g["nic_fw"], "driver": g["driver"]}
        t = rng.uniform(0, 600)
        while t < span:
            for slot in range(4):
                tree = "query_gid_empty" if slot == 3 else "query_gid"
                calls.append(_Call(t + slot * 0.002, rng.uniform(5e-6, 12e-6), agent_pid, 1, "rdma-agent", None,
                                   agent_meta, tree))
            t += 600
        # jobs
        t = rng.uniform(0, 120)
        job_no = 0
        vega_turn = rng.random() < 0.5
        orion_perf = rng.random() < 0.5
        while t < span:
            if hi in roles["vega"]:
                vega_turn = not vega_turn
                tenant = "vega" if vega_turn else "orion"
            else:
                tenant = "orion"
            if tenant == "vega":
                jtype = "perf"
            else:
                orion_perf = not orion_perf
                jtype = "perf" if orion_perf else "unit"
            job_calls, end = _job_calls(rng, host, group, roles, active, job_no, t, tenant, jtype, span, span,
                                        next_pid)
            calls.extend(job_calls)
            job_no += 1
            t = end + rng.uniform(60, 180)
        calls = [c for c in calls if c.t + c.lat < span]
        calls.sort(key=lambda c: c.t + c.lat)

        # the tracer
        probes = sorted({fn for name, (_, _, fr) in TREES.items()
                         if not name.endswith("/" + ("upstream" if group == "ofed" else "ofed"))
                         for _, fn, _ in fr})
        nsnap = int(math.ceil((span - phase) / SNAP_S)) + 1
        per_snap: dict[tuple[int, str], int] = defaultdict(int)  # (snap, tree) -> calls
        recs = defaultdict(list)  # snap -> records
        cap_count: dict[tuple, int] = defaultdict(int)
        n_sig: dict[tuple, int] = defaultdict(int)
        third: dict[tuple, list] = {}
        for c in calls:
            end = c.t + c.lat
            k = int(math.floor((end - phase) / SNAP_S)) + 1  # snapshot closing after `end`
            op, arg, frames = TREES[c.tree]
            failing = any(e for _, _, e in frames)
            per_snap[(k, c.tree)] += 1
            w = math.floor((c.t - cap_phase) / CAPTURE_EVERY)
            in_window = (c.t - cap_phase) - w * CAPTURE_EVERY < CAPTURE_LEN and c.t >= 0
            if not failing:
                if not in_window or c.lat > 0.05 or cap_count[(w, c.tree)] >= GOOD_CAP:
                    continue
                cap_count[(w, c.tree)] += 1
            else:
                # the kernel's aggregation: the first K=3 trees of a signature (shape and errnos)
                # in a snapshot are records, the rest are counted in the third's repeat_count
                sig = (k, c.tree)
                n_sig[sig] += 1
                if n_sig[sig] > K_RECORDS:
                    third[sig][3] += 1
                    continue
            rec = [c, in_window, failing, 1]
            if failing and n_sig[(k, c.tree)] == K_RECORDS:
                third[(k, c.tree)] = rec
            recs[k].append(rec)

        cnt = defaultdict(lambda: [0, 0, defaultdict(int)])  # (snap, probe) -> inv, fail, errnos
        for (k, tree), n in per_snap.items():
            for _, fn, e in TREES[tree][2]:
                cell = cnt[(k, fn)]
                cell[0] += n
                if e:
                    cell[1] += n
                    cell[2][e] += n

        snaps_close = {k: phase + k * SNAP_S for k in range(nsnap + 1)}
        late = hi in roles["late"]
        # per (name, batch): events rows, counters rows, truth rows
        # (column by column)
        ev = defaultdict(lambda: defaultdict(dict))
        co = defaultdict(lambda: defaultdict(dict))
        tr = defaultdict(lambda: defaultdict(dict))
        layers = [LAYER[probe] for probe in probes]
        no_calls = (0, 0, {})
        order = []
        for k in range(nsnap + 1):
            close = snaps_close[k]
            if close <= 0 or close - SNAP_S >= span:
                continue
            delay = rng.uniform(1, 4)
            if late and rng.random() < 0.12:
                delay += rng.uniform(1200, 4200)
            order.append((close + delay, k))
        order.sort()
        seqno = 0
        for arrival, k in order:
            close = snaps_close[k]
            name = new_name if close > rename_at else old_name
            batch = int(arrival // BATCH_S)
            snap_wall_ns = START_NS + int(round((close + skew) * 1e9))
            E, C, T = ev[name][batch], co[name][batch], tr[name][batch]
            cells = [cnt.get((k, probe), no_calls) for probe in probes]
            extend_rows(C, {"probe": probes, "layer": layers, "invocations": [inv for inv, _, _ in cells],
                            "failures": [fail for _, fail, _ in cells],
                            "errno_counts": [[{"errno": e, "count": n} for e, n in sorted(errs.items())]
                                             for _, _, errs in cells]},
                        {"host": name, "snapshot_time": snap_wall_ns, "interval_s": SNAP_S,
                         "kernel_release": g["kernel"], "vendor": "mlx5", "probe_set": "rdma", "live": True,
                         "lost_records": 0})
            for c, timed, failing, repeat in recs.get(k, ()):
                op, arg, frames = TREES[c.tree]
                seqno += 1
                tid_ = f"{name}:{boot_id}:{c.tid}:{seqno}"
                end = c.t + c.lat
                mono0 = int(round((boot + c.t) * 1e9))
                lat_ns = max(int(round(c.lat * 1e9)), len(frames) + 1)
                if timed:
                    ts, lats = _frame_times(frames, mono0, lat_ns)
                    st = START_NS + int(round((c.t + skew) * 1e9))
                    en = st + lat_ns
                else:
                    tick_mono = int(math.floor((boot + end) / TICK) * TICK * 1e9)
                    ts, lats = [tick_mono] * len(frames), [None] * len(frames)
                    st = en = START_NS + int(math.floor((end + skew) / TICK) * TICK * 1e9)
                root_err = frames[0][2]
                meta = [{"key": a, "value": b} for a, b in sorted(c.meta.items())]
                if len(ts) != len(frames) or len(lats) != len(frames):
                    raise ValueError(f"{tid_}: a time for every frame")
                extend_rows(E, {"seq": range(len(frames)), "ts_ns": ts, "probe": [fn for _, fn, _ in frames],
                                "layer": [LAYER[fn] for _, fn, _ in frames], "depth": [d for d, _, _ in frames],
                                "ret": [-ERRNO[e] if e else 0 for _, _, e in frames],
                                "errno": [e for _, _, e in frames], "latency_ns": lats,
                                "arg": [arg] + [None] * (len(frames) - 1)},
                            {"trace_id": tid_, "pid": c.pid, "tid": c.tid, "ppid": c.ppid, "comm": c.comm,
                             "kind": "failure" if failing else "good", "command": op,
                             "exit_status": -ERRNO[root_err] if root_err else 0, "start_time": st, "end_time": en,
                             "host": name, "kernel_release": g["kernel"], "lost_events": 0, "job_id": c.job,
                             "metadata": meta, "repeat_count": repeat if repeat > 1 else None})
                fam = TREE_FAMILY.get(c.tree) if failing else None
                if fam:
                    probe, errno, layer = FAMILIES[fam]
                    counts[fam] += 1
                    calls_of[fam] += repeat
                    family_hosts[fam].add(name)
                else:
                    probe = errno = layer = None
                    good_by_operation[op] += 1
                extend_rows(T, {"trace_id": [tid_]}, {
                    "host": name, "kind": "failure" if failing else "good", "root_cause": fam,
                    "bifurcation_probe": probe, "bifurcation_errno": errno, "origin_layer": layer,
                    "expected_error": bool(fam in ROUTINE) if fam else False, "held_out": False})
        date = START.date().isoformat()
        for name in ev.keys() | co.keys():
            for batch in sorted(co[name]):
                fname = f"part-{batch:04d}-{hashlib.sha1(f'{seed}{name}{batch}'.encode()).hexdigest()[:8]}.parquet"
                if ev[name][batch]:
                    write_partition(table_from_columns(ev[name][batch], EVENTS), out, "events", date, name,
                                    fname, durable=False)
                    written["events"] += 1
                    write_partition(table_from_columns(tr[name][batch], TRUTH), out, "truth", date, name,
                                    fname, durable=False)
                ctab = table_from_columns(co[name][batch], COUNTERS)
                path = write_partition(ctab, out, "counters", date, name, fname, durable=False)
                write_counter_buckets(path, ctab, durable=False)
                written["counters"] += 1

    summary = {
        "shape": {"hosts": hosts, "hours": hours, "seed": seed, "faults": faults if isinstance(faults, bool) else sorted(active)},
        "counts": dict(counts),
        "calls": dict(calls_of),
        "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
        "good_by_operation": dict(good_by_operation),
        "roles": {
            "ofed": [n for i in roles["ofed"] for n in names_of[i]],
            "upstream": [n for i in roles["upstream"] for n in names_of[i]],
            "vega": [n for i in roles["vega"] for n in names_of[i]],
            "renamed": names_of[roles["renamed"]],
            "skewed": {names_of[i][0]: s for i, s in roles["skew"].items()},
            "late": [n for i in roles["late"] for n in names_of[i]],
            "cause_hosts": {c: [n for i in roles[c] for n in names_of[i]] for c in sorted(active)},
        },
        "rename_at_s": rename_at,
        "files": written,
    }
    (out / "fleetgen34.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

"""The OFED peer-memory (GPUDirect RDMA) path: a blind fleet generator (see __init__.py for the angle).

Written from reference/rdma_control_path.yaml (the reg_mr tree, its ofed_variant, ib_peer_umem_get's
errors and the ofed_peer_memory section), tracer/schema.py (tables, written through its writers),
README.md, docs/architecture.md, tests/fleet_harness.py and the other generators' module
docstrings. It imports only tracer.schema of the project.

The fleet
---------
`hosts` (8 by default) mlx5 RoCE GPU hosts (`fg35-hNN`), all MLNX_OFED 24.07 on 5.15.0-122-generic
with nvidia-peermem as the peer-memory client, for `hours` (5) from 2026-11-23T06:00Z. User memory
is pinned through OFED's ib_umem_get_peer -> __ib_umem_get (reference name_corrections: "In OFED,
mlx5_ib_reg_user_mr calls ib_umem_get_peer(), not ib_umem_get()"; the CQ and QP buffers too). Job
metadata on every rank's trace: tenant, job_type, gpu_driver, nic (ConnectX-6 Dx), ofed.

The rhythm (no fault): one job slot a host, 4 ranks a job (comm python3, a process a rank, started
0.2 s apart), 20-40 minutes. Before 40 % of the window (the early morning) the jobs are 2-rank
debug runs and the slot idles 25-50 minutes between them; at 40 % the scheduler releases the morning queue on every host at once (a
job starts within 90 s on each idle host), after which jobs follow each other 1-3 minutes apart. A
failed job is requeued 1-3 minutes later. A rank's start-up (30 ms apart): alloc_pd, reg_mr of a
host buffer, reg_mr of two GPU buffers, create_cq, two RC QPs (create_qp, then RESET->INIT,
INIT->RTR, RTR->RTS each); every 2-4 minutes it registers a new GPU buffer and deregisters the
old one (30 ms later); at a normal end it deregisters its three buffers and destroys its QPs and
PD. A rank that dies ends its job: the launcher kills the other ranks 0.5 s later (no call after).
So GPU registrations come in bursts of 8 (4 in the morning) within a second at every job start, and their rate is
low in the morning and high after the release, on every host alike. A node agent (comm
rdma-agent, one long-lived pid a host) reads the four GID slots every 10 minutes; slot 3 is empty.

The tracer (probe set "rdma": every function of TREES is a probe, pin_user_pages_fast included:
exported, fexit-able): 30 s snapshots at a per-host phase; counters for every probe in every
snapshot (exact: every call, recorded or not); a tree is emitted when any of its frames returns an
error (architecture: "in a tree whose root succeeded, the first unexpected error frame ..."; the
fleetgen11/13 docstrings: "a tree is emitted when any of its probes returns an error"): of the
trees with a failing frame, the first K=3 of a signature (the tree's shape and errnos) in a
snapshot are records and the rest are counted in the third's repeat_count; no ring-buffer loss;
good trees only in capture windows (the first 30 s of every 3 minutes at a per-host phase, at most
12 of a tree a window), timed per frame; a failure in a window is timed, outside all its frames
carry the 4 ms tick its root returned in, latency null.

The decision the angle turns on: the rescued GPU registration IS a record. Its root
(ib_uverbs_reg_mr) returns 0, but pin_user_pages_fast, a probe, returned -EFAULT under
__ib_umem_get before ib_peer_umem_get claimed the range; the tracer emits a tree on any failing
frame, so the record is kind "failure" with exit_status 0 and one error frame
(pin_user_pages_fast EFAULT, depth 4), its siblings after it succeeding (ib_peer_umem_get and
ib_get_peer_client, create_real_mr -> reg_create -> mlx5_core_create_mkey -> mlx5_cmd_exec: peer
umems skip the mkey cache, reference ofed_peer_memory.gpu_direct_trace_shape, then
ib_umem_activate_invalidation_notifier). __ib_umem_get itself returns the peer umem: it does not
fail, and no frame above the pin carries an errno. A GPU registration is therefore never a good
tree: the good reg_mr trees are the host-buffer registrations only (pin succeeds, then
sg_alloc_append_table_from_pages, create_real_mr -> alloc_cacheable_mr, mlx5r_umr_update_mr_pas).

Routine (expected_error = True, root_cause = the family; the process goes on each time)
-------------------------------------------------------------------------------------------
  peer_gup_rescued  every GPU reg_mr on every host: EFAULT at pin_user_pages_fast under
                    __ib_umem_get (reference reg_mr ib_umem_get errors: "-EFAULT pin_user_pages_fast()
                    fails ... device (e.g. GPU) memory ... OFED with a peer client then retries in
                    ib_peer_umem_get"), claimed by the peer client; the root returns 0 and the rank
                    goes on (registers, trains, re-registers). Its origin is the pin: the first error
                    frame none of whose callees failed, the root succeeding (absorbed). The bulk of
                    the fleet's errors, rising and falling with the job rhythm.
  gid_empty_slot    the agent's QUERY_GID_ENTRY of slot 3: ENODATA at rdma_get_gid_attr (reference
                    query_gid: "-ENODATA: empty GID slot"), returned by the handler; the agent goes
                    on to its next scan. Every host, every 10 minutes.
  mr_cgroup_eagain  every host: 5 % of the periodic re-registrations hit the container's rdma cgroup
                    hca_object limit (the new MR is charged before the old is freed): EAGAIN at
                    ib_rdmacg_try_charge under rdma_alloc_begin_uobject (reference uobject_helpers:
                    "-EAGAIN rdma cgroup hca_object limit reached"), up through ib_uverbs_reg_mr; the
                    library deregisters the old buffer first (5 ms later) and registers again (10 ms
                    later), which passes (through the peer client, the routine EFAULT again).

Root causes (expected_error = False; each kills its rank, and its job with it)
-------------------------------------------------------------------------------
All three at ib_peer_umem_get (reference reg_mr, its errors), after the routine pin EFAULT in the
same tree: that earlier error is superseded (architecture: "an origin the code went on from,
superseded by a later origin of the same tree that reaches the root -- the death is that one's: a
pin's EFAULT before a failing peer-memory fallback"), so each record's origin and bifurcation is
ib_peer_umem_get, layer peer-mem; the errno then goes up unchanged through __ib_umem_get,
ib_umem_get_peer, mlx5_ib_reg_user_mr and ib_uverbs_reg_mr (after it the handler's unwind:
rdma_lookup_put_uobject and rdma_alloc_abort_uobject succeed). The edge __ib_umem_get ->
ib_peer_umem_get is in no good tree (GPU registrations are never good), so bifurcation = origin.
  peermem_not_loaded  hosts 1 and hosts//2+1: at 35 % of the window the host is drained (a job
                    running then ends cleanly), its GPU driver updated from 550.127.05 to 560.35.03
                    in 2-4 minutes (jobs started after it carry the new gpu_driver), and nvidia-peermem is not rebuilt/loaded for it: no peer
                    client is registered, ib_get_peer_client returns NULL (ret 0, no errno: a pointer)
                    and ib_peer_umem_get returns "<original GUP errno, usually -EFAULT>" (reference:
                    "no registered peer client claims the range"): EFAULT at ib_peer_umem_get. Every
                    GPU registration fails from then on: every job dies at start-up and is requeued
                    (a crash loop). Hides: the same errno as the routine family, in the same tree,
                    one frame later.
  peer_dma_map_einval hosts 2 and hosts//2+2 run a bad GPU driver (555.42.02) all window: 15 % of
                    the GPU registrations fail in the peer client's get_pages/dma_map (reference:
                    "<peer get_pages/dma_map errno>"; nvidia_p2p's mapping refuses a range it cannot
                    map with -EINVAL): EINVAL at ib_peer_umem_get (the callbacks are the client
                    module's symbols, not probed). The rank dies.
  peer_umem_enomem  host 3, from 40 % to 65 % of the window (memory pressure from a co-located
                    data loader): 20 % of the GPU registrations fail kzalloc(ib_umem_peer) (reference:
                    "-ENOMEM kzalloc(ib_umem_peer)"): ENOMEM at ib_peer_umem_get, after
                    ib_get_peer_client found the client. The rank dies.
The other hosts (0, 4, 7 of 8) are clean. Alerts: none is required; one on a cause's host naming
the cause's errno is acceptable; none may name a routine family's (probe, errno) or fall on a
clean host.

Truth: one row per record, keyed (host, trace_id). root_cause the family (ROOT_CAUSES or
ROUTINE), null for good records; bifurcation = origin as above; origin_layer its layer. Good
records: kind good, no cause, expected_error False, held_out False. With faults=False (the control)
the update still happens on the same hosts but the peer client is reloaded with it, the bad driver
is the good one, and there is no memory pressure: the routine and the rhythm only.

`generate(out_dir, hosts=8, hours=5, seed=35, faults=True) -> summary` (faults: True, False or
some of ROOT_CAUSES' names) writes events, counters (with
their counter_buckets summaries) and truth in the dataset layout (`<table>/date=D/host=H/part-0000
.parquet`) and `<out_dir>/fleetgen35.json`: roles, family_hosts, counts (records per family),
good_by_operation, update_time, busy_start.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import polars as pl
from fleet_tables import frame

from tracer.schema import polars_schema, write_counter_buckets, write_partition

START = dt.datetime(2026, 11, 23, 6, 0, tzinfo=dt.UTC)
KERNEL = "5.15.0-122-generic"
SNAP_S = 30.0
WINDOW_EVERY_S, WINDOW_LEN_S, WINDOW_CAP = 180.0, 30.0, 12
K = 3
ERRNO_NUM = {"EFAULT": 14, "ENOMEM": 12, "EINVAL": 22, "EAGAIN": 11, "ENODATA": 61}

LAYER = {
    "ib_uverbs_alloc_pd": "uverbs", "ib_uverbs_reg_mr": "uverbs", "ib_uverbs_dereg_mr": "uverbs",
    "ib_uverbs_create_cq": "uverbs", "create_cq": "uverbs", "ib_uverbs_create_qp": "uverbs",
    "create_qp": "uverbs", "ib_uverbs_modify_qp": "uverbs", "modify_qp": "uverbs",
    "ib_uverbs_destroy_qp": "uverbs", "ib_uverbs_dealloc_pd": "uverbs", "uverbs_response": "uverbs",
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs", "uverbs_free_mr": "uverbs",
    "rdma_alloc_begin_uobject": "core", "ib_rdmacg_try_charge": "core", "rdma_lookup_get_uobject": "core",
    "rdma_lookup_put_uobject": "core", "rdma_alloc_abort_uobject": "core", "rdma_restrack_add": "core",
    "__uobj_perform_destroy": "core", "ib_rdmacg_uncharge": "core", "ib_dereg_mr_user": "core",
    "ib_umem_get_peer": "core", "__ib_umem_get": "core", "pin_user_pages_fast": "core",
    "sg_alloc_append_table_from_pages": "core", "ib_umem_release": "core", "ib_create_qp_user": "core",
    "ib_create_qp_security": "core", "ib_qp_usecnt_inc": "core", "ib_modify_qp_with_udata": "core",
    "_ib_modify_qp": "core", "rdma_get_gid_attr": "core", "rdma_read_gid_attr_ndev_rcu": "core",
    "rdma_put_gid_attr": "core", "ib_resolve_eth_dmac": "core", "ib_resolve_unicast_gid_dmac": "core",
    "rdma_addr_find_l2_eth_by_grh": "core", "uverbs_free_pd": "core", "ib_dealloc_pd_user": "core",
    "rdma_restrack_del": "core",
    "ib_peer_umem_get": "peer-mem", "ib_get_peer_client": "peer-mem",
    "ib_umem_activate_invalidation_notifier": "peer-mem", "ib_umem_stop_invalidation_notifier": "peer-mem",
    "ib_peer_umem_release": "peer-mem",
    "mlx5_ib_alloc_pd": "driver", "mlx5_cmd_exec": "driver", "mlx5_ib_reg_user_mr": "driver",
    "create_real_mr": "driver", "alloc_cacheable_mr": "driver", "mlx5r_umr_update_mr_pas": "driver",
    "reg_create": "driver", "mlx5_core_create_mkey": "driver", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "mlx5_ib_db_map_user": "driver", "mlx5_comp_eqn_get": "driver",
    "mlx5_core_create_cq": "driver", "mlx5_ib_create_qp": "driver", "create_user_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "mlx5_ib_modify_qp": "driver", "mlx5_ib_dereg_mr": "driver",
    "mlx5_revoke_mr": "driver", "mlx5r_umr_revoke_mr": "driver", "mlx5_ib_destroy_qp": "driver",
    "mlx5_core_destroy_qp": "driver", "mlx5_ib_dealloc_pd": "driver", "mlx5_core_destroy_mkey": "driver",
}

# per-frame own cost in microseconds (timed trees only)
COST = {"mlx5_cmd_exec": 350.0, "pin_user_pages_fast": 60.0, "ib_peer_umem_get": 40.0,
        "mlx5r_umr_update_mr_pas": 80.0, "rdma_addr_find_l2_eth_by_grh": 30.0}


def _reg_mr(pin: list) -> list:
    head = [(0, "ib_uverbs_reg_mr"), (1, "rdma_alloc_begin_uobject"), (2, "ib_rdmacg_try_charge"),
            (1, "rdma_lookup_get_uobject"), (1, "mlx5_ib_reg_user_mr"), (2, "ib_umem_get_peer"),
            (3, "__ib_umem_get")]
    return head + pin


HOST_MR = _reg_mr([(4, "pin_user_pages_fast"), (4, "sg_alloc_append_table_from_pages"), (2, "create_real_mr"),
                   (3, "alloc_cacheable_mr"), (3, "mlx5r_umr_update_mr_pas"), (1, "rdma_restrack_add"),
                   (1, "rdma_lookup_put_uobject"), (1, "uverbs_response")])
PEER_OK = [(4, "pin_user_pages_fast", "EFAULT"), (4, "ib_peer_umem_get"), (5, "ib_get_peer_client"),
           (2, "create_real_mr"), (3, "reg_create"), (4, "mlx5_core_create_mkey"), (5, "mlx5_cmd_exec"),
           (3, "ib_umem_activate_invalidation_notifier"), (1, "rdma_restrack_add"),
           (1, "rdma_lookup_put_uobject"), (1, "uverbs_response")]


def _peer_fail(errno: str) -> list:
    """A GPU registration the peer path fails: the pin's EFAULT, then ib_peer_umem_get's errno up."""
    return [(0, "ib_uverbs_reg_mr", errno), (1, "rdma_alloc_begin_uobject"), (2, "ib_rdmacg_try_charge"),
            (1, "rdma_lookup_get_uobject"), (1, "mlx5_ib_reg_user_mr", errno), (2, "ib_umem_get_peer", errno),
            (3, "__ib_umem_get", errno), (4, "pin_user_pages_fast", "EFAULT"), (4, "ib_peer_umem_get", errno),
            (5, "ib_get_peer_client"), (1, "rdma_lookup_put_uobject"), (1, "rdma_alloc_abort_uobject")]


def _dereg(peer: bool) -> list:
    inner = ([(6, "ib_umem_stop_invalidation_notifier"), (5, "mlx5_core_destroy_mkey"), (6, "mlx5_cmd_exec"),
              (5, "ib_umem_release"), (6, "ib_peer_umem_release")] if peer else
             [(6, "mlx5r_umr_revoke_mr"), (5, "ib_umem_release")])
    return ([(0, "ib_uverbs_dereg_mr"), (1, "__uobj_perform_destroy"), (2, "rdma_lookup_get_uobject"),
             (2, "uverbs_free_mr"), (3, "ib_dereg_mr_user"), (4, "mlx5_ib_dereg_mr"), (5, "mlx5_revoke_mr")]
            + inner + [(2, "ib_rdmacg_uncharge"), (1, "rdma_lookup_put_uobject")])


def _modify(arg: str) -> list:
    mid = ([(4, "rdma_get_gid_attr"), (4, "ib_resolve_eth_dmac"), (5, "ib_resolve_unicast_gid_dmac"),
            (6, "rdma_addr_find_l2_eth_by_grh")] if arg == "INIT->RTR" else [])
    return ([(0, "ib_uverbs_modify_qp"), (1, "modify_qp"), (2, "rdma_lookup_get_uobject"),
             (2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp")] + mid
            + [(4, "mlx5_ib_modify_qp"), (5, "mlx5_cmd_exec"), (2, "rdma_lookup_put_uobject")])


def _norm(frames: list) -> list:
    return [(f[0], f[1], f[2] if len(f) > 2 else None) for f in frames]


# name -> (operation, arg, [(depth, fn, errno or None)])
TREES: dict[str, tuple[str, str | None, list]] = {name: (op, arg, _norm(frames)) for name, (op, arg, frames) in {
    "gid_ok": ("query_gid", None, [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"), (1, "rdma_get_gid_attr"),
                                   (1, "rdma_read_gid_attr_ndev_rcu"), (1, "rdma_put_gid_attr")]),
    "gid_empty": ("query_gid", None, [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "ENODATA"),
                                      (1, "rdma_get_gid_attr", "ENODATA")]),
    "alloc_pd": ("alloc_pd", None, [(0, "ib_uverbs_alloc_pd"), (1, "rdma_alloc_begin_uobject"),
                                    (2, "ib_rdmacg_try_charge"), (1, "mlx5_ib_alloc_pd"), (2, "mlx5_cmd_exec"),
                                    (1, "rdma_restrack_add"), (1, "uverbs_response")]),
    "reg_mr_host": ("reg_mr", None, HOST_MR),
    "reg_mr_gpu": ("reg_mr", None, _reg_mr(PEER_OK)),
    "reg_mr_cgroup_eagain": ("reg_mr", None, [(0, "ib_uverbs_reg_mr", "EAGAIN"),
                                              (1, "rdma_alloc_begin_uobject", "EAGAIN"),
                                              (2, "ib_rdmacg_try_charge", "EAGAIN")]),
    "reg_mr_no_peer_client": ("reg_mr", None, _peer_fail("EFAULT")),
    "reg_mr_peer_dma_map": ("reg_mr", None, _peer_fail("EINVAL")),
    "reg_mr_peer_enomem": ("reg_mr", None, _peer_fail("ENOMEM")),
    "create_cq": ("create_cq", None, [(0, "ib_uverbs_create_cq"), (1, "create_cq"), (2, "rdma_alloc_begin_uobject"),
                                      (3, "ib_rdmacg_try_charge"), (2, "mlx5_ib_create_cq"), (3, "create_cq_user"),
                                      (4, "ib_umem_get_peer"), (5, "__ib_umem_get"), (6, "pin_user_pages_fast"),
                                      (4, "mlx5_ib_db_map_user"), (3, "mlx5_comp_eqn_get"),
                                      (3, "mlx5_core_create_cq"), (4, "mlx5_cmd_exec"), (2, "rdma_restrack_add"),
                                      (2, "uverbs_response")]),
    "create_qp": ("create_qp", None, [(0, "ib_uverbs_create_qp"), (1, "create_qp"), (2, "rdma_alloc_begin_uobject"),
                                      (3, "ib_rdmacg_try_charge"), (2, "rdma_lookup_get_uobject"),
                                      (2, "ib_create_qp_user"), (3, "mlx5_ib_create_qp"), (4, "create_user_qp"),
                                      (5, "ib_umem_get_peer"), (6, "__ib_umem_get"), (7, "pin_user_pages_fast"),
                                      (5, "mlx5_ib_db_map_user"), (5, "mlx5_qpc_create_qp"), (6, "mlx5_cmd_exec"),
                                      (3, "ib_create_qp_security"), (3, "rdma_restrack_add"),
                                      (2, "ib_qp_usecnt_inc"), (2, "rdma_lookup_put_uobject"),
                                      (2, "uverbs_response")]),
    "modify_init": ("modify_qp", "RESET->INIT", _modify("RESET->INIT")),
    "modify_rtr": ("modify_qp", "INIT->RTR", _modify("INIT->RTR")),
    "modify_rts": ("modify_qp", "RTR->RTS", _modify("RTR->RTS")),
    "dereg_mr_host": ("dereg_mr", None, _dereg(False)),
    "dereg_mr_gpu": ("dereg_mr", None, _dereg(True)),
    "destroy_qp": ("destroy_qp", None, [(0, "ib_uverbs_destroy_qp"), (1, "__uobj_perform_destroy"),
                                        (2, "rdma_lookup_get_uobject"), (2, "mlx5_ib_destroy_qp"),
                                        (3, "mlx5_core_destroy_qp"), (4, "mlx5_cmd_exec"), (2, "ib_rdmacg_uncharge"),
                                        (1, "rdma_lookup_put_uobject")]),
    "dealloc_pd": ("dealloc_pd", None, [(0, "ib_uverbs_dealloc_pd"), (1, "__uobj_perform_destroy"),
                                        (2, "rdma_lookup_get_uobject"), (2, "uverbs_free_pd"),
                                        (3, "ib_dealloc_pd_user"), (4, "mlx5_ib_dealloc_pd"), (5, "mlx5_cmd_exec"),
                                        (4, "rdma_restrack_del"), (2, "ib_rdmacg_uncharge"),
                                        (1, "rdma_lookup_put_uobject")]),
}.items()}

# family -> (origin probe, errno, origin layer)
ROUTINE = {
    "peer_gup_rescued": ("pin_user_pages_fast", "EFAULT", "core"),
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "core"),
    "mr_cgroup_eagain": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
}
ROOT_CAUSES = {
    "peermem_not_loaded": ("ib_peer_umem_get", "EFAULT", "peer-mem"),
    "peer_dma_map_einval": ("ib_peer_umem_get", "EINVAL", "peer-mem"),
    "peer_umem_enomem": ("ib_peer_umem_get", "ENOMEM", "peer-mem"),
}
FAMILIES = {**ROUTINE, **ROOT_CAUSES}
FAMILY_OF_TREE = {"gid_empty": "gid_empty_slot", "reg_mr_gpu": "peer_gup_rescued",
                  "reg_mr_cgroup_eagain": "mr_cgroup_eagain", "reg_mr_no_peer_client": "peermem_not_loaded",
                  "reg_mr_peer_dma_map": "peer_dma_map_einval", "reg_mr_peer_enomem": "peer_umem_enomem"}
FATAL_TREES = {"reg_mr_no_peer_client", "reg_mr_peer_dma_map", "reg_mr_peer_enomem"}
PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})

DRIVER_OLD, DRIVER_NEW, DRIVER_BAD = "550.127.05", "560.35.03", "555.42.02"


def roles_for(hosts: int) -> dict[str, list[int]]:
    half = hosts // 2
    return {"peermem_not_loaded": sorted({1, half + 1}), "peer_dma_map_einval": sorted({2, half + 2}),
            "peer_umem_enomem": [3]}


def _timing(frames: list, rng: random.Random) -> tuple[list[float], list[float]]:
    """(entry offset us, latency us) per frame of a pre-order tree: a frame's latency is its own
    cost plus its children's; children enter one after another inside it."""
    n = len(frames)
    own = [COST.get(fn, 3.0) * rng.uniform(0.7, 1.4) for _, fn, _ in frames]
    parent = [-1] * n
    stack: list[int] = []
    for i, (d, _, _) in enumerate(frames):
        while stack and frames[stack[-1]][0] >= d:
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
    lat = own[:]
    for i in range(n - 1, 0, -1):
        if parent[i] >= 0:
            lat[parent[i]] += lat[i] + 0.5
    entry = [0.0] * n
    nxt = {}  # parent -> where its next child enters
    for i in range(n):
        p = parent[i]
        if p < 0:
            entry[i] = 0.0
        else:
            entry[i] = nxt.get(p, entry[p] + own[p] * 0.3)
            nxt[p] = entry[i] + lat[i] + 0.5
    return entry, lat


def generate(out_dir, hosts: int = 8, hours: float = 5, seed: int = 35, faults: bool = True) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # faults: True (all three causes), False (none: the control) or the names of some of them
    active = set(ROOT_CAUSES) if faults is True else set(faults or ())
    assert active <= set(ROOT_CAUSES), active - set(ROOT_CAUSES)
    rng = random.Random(seed)
    window_s = hours * 3600.0
    end_s = window_s
    busy_s = 0.4 * window_s
    update_s = 0.35 * window_s
    press_a, press_b = 0.40 * window_s, 0.65 * window_s
    roles = roles_for(hosts)
    names = [f"fg35-h{i:02d}" for i in range(hosts)]
    counts: Counter = Counter()
    family_hosts: dict[str, set] = defaultdict(set)
    good_by_operation: Counter = Counter()
    date = START.strftime("%Y-%m-%d")

    for hi, host in enumerate(names):
        hr = random.Random(rng.randrange(1 << 30))
        snap_phase = hr.uniform(0, SNAP_S)
        win_phase = hr.uniform(0, WINDOW_EVERY_S)
        boot_wall_s = -hr.uniform(2, 9) * 86400.0  # seconds relative to START
        updated = hi in roles["peermem_not_loaded"]
        bad_driver = hi in roles["peer_dma_map_einval"] and "peer_dma_map_einval" in active
        pressure = hi in roles["peer_umem_enomem"] and "peer_umem_enomem" in active
        calls: list[tuple] = []  # (t, pid, comm, tree, job_id, metadata-tuple)

        def driver_at(t: float, updated=updated, bad_driver=bad_driver) -> str:
            if updated and t >= update_s:
                return DRIVER_NEW
            return DRIVER_BAD if bad_driver else DRIVER_OLD

        def gpu_tree(t: float, updated=updated, bad_driver=bad_driver, pressure=pressure, hr=hr) -> str:
            # (t: the call's time; a job running at the update was drained, so every call at or
            # after it belongs to a job started on the new driver)
            if "peermem_not_loaded" in active and updated and t >= update_s:
                return "reg_mr_no_peer_client"
            if bad_driver and hr.random() < 0.15:
                return "reg_mr_peer_dma_map"
            if pressure and press_a <= t < press_b and hr.random() < 0.20:
                return "reg_mr_peer_enomem"
            return "reg_mr_gpu"

        # the agent
        agent_pid = hr.randrange(1500, 3000)
        t = hr.uniform(0, 600)
        while t < end_s:
            for slot in range(4):
                calls.append((t + slot * 0.005, agent_pid, "rdma-agent", "gid_empty" if slot == 3 else "gid_ok",
                              None, None))
            t += 600.0
        # the jobs
        pid = hr.randrange(20000, 30000)
        t = hr.uniform(0, 300)
        njob = 0
        while t < end_s - 60:
            njob += 1
            job_id = f"{hi:02d}{njob:03d}{hr.randrange(100, 999)}"
            tenant = hr.choice(["orion", "lyra"])
            meta = (("tenant", tenant), ("job_type", hr.choice(["pretrain", "finetune"])),
                    ("gpu_driver", driver_at(t)), ("nic", "ConnectX-6 Dx"), ("ofed", "24.07-0.6.1"))
            duration = hr.uniform(20, 40) * 60.0
            job_end = t + duration
            if updated and t < update_s < job_end:
                job_end = update_s  # drained for the driver update: the job ends cleanly there
            nranks = 4 if t >= busy_s else 2  # the morning's jobs are 2-rank debug runs
            plans = []
            for r in range(nranks):
                pid += hr.randrange(3, 12)
                s = t + 0.2 * r
                plan = [(s, "alloc_pd"), (s + 0.03, "reg_mr_host"), (s + 0.06, gpu_tree(s + 0.06)),
                        (s + 0.09, gpu_tree(s + 0.09)), (s + 0.12, "create_cq"), (s + 0.15, "create_qp"),
                        (s + 0.18, "create_qp")]
                c = s + 0.21
                for _q in range(2):
                    for tr in ("modify_init", "modify_rtr", "modify_rts"):
                        plan.append((c, tr))
                        c += 0.03
                p = c + hr.uniform(120, 240)
                while p < job_end - 5:
                    if hr.random() < 0.05:
                        plan += [(p, "reg_mr_cgroup_eagain"), (p + 0.005, "dereg_mr_gpu"),
                                 (p + 0.010, gpu_tree(p + 0.010))]
                    else:
                        plan += [(p, gpu_tree(p)), (p + 0.03, "dereg_mr_gpu")]
                    p += hr.uniform(120, 240)
                e = job_end + 0.2 * r
                plan += [(e, "dereg_mr_gpu"), (e + 0.03, "dereg_mr_gpu"), (e + 0.06, "dereg_mr_host"),
                         (e + 0.09, "destroy_qp"), (e + 0.12, "destroy_qp"), (e + 0.15, "dealloc_pd")]
                plans.append((pid, plan))
            deaths = [min((ct for ct, tr in plan if tr in FATAL_TREES), default=None) for _, plan in plans]
            first = min((d for d in deaths if d is not None), default=None)
            kill = first + 0.5 if first is not None else None
            for (rpid, plan), death in zip(plans, deaths, strict=True):
                for ct, tr in plan:
                    if ct >= end_s:
                        break
                    if death is not None and ct > death:
                        break
                    if kill is not None and ct >= kill:
                        break
                    calls.append((ct, rpid, "python3", tr, job_id, meta))
            if updated and job_end == update_s:
                nxt = update_s + hr.uniform(120, 240)  # the update itself: 2-4 minutes
            elif first is not None:
                nxt = first + 0.5 + hr.uniform(60, 180)  # requeued
            else:
                nxt = job_end + 0.8 + (hr.uniform(60, 180) if job_end >= busy_s else hr.uniform(1500, 3000))
                if job_end < busy_s < nxt:
                    nxt = busy_s + hr.uniform(0, 90)  # the morning queue released at once
            t = nxt
        calls.sort(key=lambda c: c[0])

        # counters and records
        nsnap = int((end_s - snap_phase) // SNAP_S) + 2
        pidx = {p: i for i, p in enumerate(PROBES)}
        inv = np.zeros((nsnap, len(PROBES)), dtype=np.int64)
        fail = np.zeros((nsnap, len(PROBES)), dtype=np.int64)
        errs: dict[tuple[int, int], Counter] = defaultdict(Counter)
        groups: dict[tuple[int, str], list] = defaultdict(list)
        good_taken: Counter = Counter()
        records = []  # (call, timed, repeat)
        per_snap: Counter = Counter()  # (snapshot, tree) -> calls
        for call in calls:
            ct, _, _, tr, _, _ = call
            si = int((ct - snap_phase) // SNAP_S) + 1  # snapshot closing after the call
            per_snap[(si, tr)] += 1
            in_window = ((ct - win_phase) % WINDOW_EVERY_S) < WINDOW_LEN_S
            if any(e for _, _, e in TREES[tr][2]):
                groups[(si, tr)].append((call, in_window))
            elif in_window:
                wi = int((ct - win_phase) // WINDOW_EVERY_S)
                if good_taken[(wi, tr)] < WINDOW_CAP:
                    good_taken[(wi, tr)] += 1
                    records.append((call, True, None, "good"))
        for (si, tr), c in per_snap.items():  # every frame of every call counted
            for _, fn, e in TREES[tr][2]:
                inv[si, pidx[fn]] += c
                if e:
                    fail[si, pidx[fn]] += c
                    errs[(si, pidx[fn])][e] += c
        for items in groups.values():
            for k, (call, timed) in enumerate(items[:K]):
                rep = len(items) - K + 1 if (k == K - 1 and len(items) > K) else None
                records.append((call, timed, rep, "failure"))
        records.sort(key=lambda r: r[0][0])

        ev: dict[str, list] = defaultdict(list)
        truth: dict[str, list] = defaultdict(list)
        tseq = hr.randrange(1 << 20)
        for (ct, rpid, comm, tr, job_id, meta), timed, rep, kind in records:
            op, arg, frames = TREES[tr]
            tseq += 1
            tid = f"{host}:1:{rpid}:{tseq}"
            mono0 = int((ct - boot_wall_s) * 1e9)
            entry, lat = _timing(frames, hr)
            root_ret = -ERRNO_NUM[frames[0][2]] if frames[0][2] else 0
            if timed:
                start = START + dt.timedelta(seconds=ct)
                endt = start + dt.timedelta(microseconds=lat[0])
            else:
                tick = (mono0 + int(lat[0] * 1000)) // 4_000_000 * 4_000_000
                start = endt = START + dt.timedelta(microseconds=(tick / 1000.0 + boot_wall_s * 1e6))
            md = [{"key": k, "value": v} for k, v in meta] if meta else None
            n = len(frames)
            if len(entry) != n or len(lat) != n:
                raise ValueError(f"{tid}: a time for every frame")
            ev["trace_id"] += [tid] * n
            ev["seq"] += range(n)
            ev["ts_ns"] += [mono0 + int(en * 1000) for en in entry] if timed else [tick] * n
            ev["pid"] += [rpid] * n
            ev["tid"] += [rpid] * n
            ev["ppid"] += [1 if comm == "rdma-agent" else rpid - 1] * n
            ev["comm"] += [comm] * n
            ev["probe"] += [fn for _, fn, _ in frames]
            ev["layer"] += [LAYER[fn] for _, fn, _ in frames]
            ev["depth"] += [d for d, _, _ in frames]
            ev["ret"] += [-ERRNO_NUM[e] if e else 0 for _, _, e in frames]
            ev["errno"] += [e for _, _, e in frames]
            ev["latency_ns"] += [int(la * 1000) for la in lat] if timed else [None] * n
            ev["arg"] += [arg] + [None] * (n - 1)
            ev["kind"] += [kind] * n
            ev["command"] += [op] * n
            ev["exit_status"] += [root_ret] * n
            ev["start_time"] += [start] * n
            ev["end_time"] += [endt] * n
            ev["kernel_release"] += [KERNEL] * n
            ev["lost_events"] += [0] * n
            ev["job_id"] += [job_id] * n
            ev["metadata"] += [md] * n
            ev["repeat_count"] += [rep] * n
            family = FAMILY_OF_TREE.get(tr) if kind == "failure" else None
            truth["trace_id"].append(tid)
            truth["kind"].append(kind)
            truth["root_cause"].append(family)
            if family:
                probe, errno, layer = FAMILIES[family]
                truth["bifurcation_probe"].append(probe)
                truth["bifurcation_errno"].append(errno)
                truth["origin_layer"].append(layer)
                counts[family] += 1
                family_hosts[family].add(host)
            else:
                good_by_operation[op] += 1
                truth["bifurcation_probe"].append(None)
                truth["bifurcation_errno"].append(None)
                truth["origin_layer"].append(None)
            truth["expected_error"].append(family in ROUTINE)
            truth["held_out"].append(False)

        evs = polars_schema("events")
        events = frame({c: ev[c] for c in ev}, {c: evs[c] for c in ev}).with_columns(
            pl.lit(host).alias("host"))
        write_partition(events, out, "events", date, host, "part-0000.parquet", durable=False)
        ts = polars_schema("truth")
        tframe = pl.DataFrame({c: truth[c] for c in truth}, schema={c: ts[c] for c in truth}).with_columns(
            pl.lit(host).alias("host"))
        write_partition(tframe, out, "truth", date, host, "part-0000.parquet", durable=False)

        # counters: every probe, every snapshot inside the window
        snaps = [si for si in range(nsnap) if 0 < snap_phase + si * SNAP_S <= end_s + SNAP_S]
        times = [START + dt.timedelta(seconds=snap_phase + si * SNAP_S) for si in snaps]
        rows_t, rows_p, rows_inv, rows_fail, rows_err = [], [], [], [], []
        inv_rows, fail_rows = inv.tolist(), fail.tolist()
        for si, when in zip(snaps, times, strict=True):
            rows_t += [when] * len(PROBES)
            rows_p += PROBES
            rows_inv += inv_rows[si]
            rows_fail += fail_rows[si]
            for p in range(len(PROBES)):
                c = errs.get((si, p))
                rows_err.append([{"errno": e, "count": n} for e, n in sorted(c.items())] if c else [])
        cs = polars_schema("counters")
        n = len(rows_t)
        cframe = frame({
            "host": [host] * n, "snapshot_time": rows_t, "interval_s": [SNAP_S] * n,
            "kernel_release": [KERNEL] * n, "vendor": ["mlx5"] * n, "probe_set": ["rdma"] * n,
            "probe": rows_p, "layer": [LAYER[p] for p in rows_p], "live": [True] * n,
            "invocations": rows_inv, "failures": rows_fail, "errno_counts": rows_err, "lost_records": [0] * n,
        }, schema=cs)
        cpath = write_partition(cframe, out, "counters", date, host, "part-0000.parquet", durable=False)
        write_counter_buckets(cpath, durable=False)
        # every call inside the window was counted
        assert int(inv[[s for s in range(nsnap) if s not in set(snaps)]].sum()) == 0, host

    summary = {
        "hosts": names,
        "faults": sorted(active),
        "roles": {k: [names[i] for i in v] for k, v in roles.items()},
        "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
        "counts": dict(counts),
        "good_by_operation": dict(good_by_operation),
        "update_time": (START + dt.timedelta(seconds=update_s)).isoformat(),
        "busy_start": (START + dt.timedelta(seconds=busy_s)).isoformat(),
        "pressure": [(START + dt.timedelta(seconds=press_a)).isoformat(),
                     (START + dt.timedelta(seconds=press_b)).isoformat()],
    }
    (out / "fleetgen35.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

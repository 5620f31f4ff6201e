"""fleetgen65's fleet: a job's whole RDMA init sequence under very uneven good-trace sampling.

Written blind (reference/rdma_control_path.yaml, tracer/schema.py, README.md,
docs/architecture.md, bpf/calltree.c's header and emit rule, tests/fleet_harness.py,
tests/fleetgen62 as the brief's model, the other generators' docstrings); it imports only
tracer.schema's writers.

The reference behind it
-----------------------
* query_gid (ioctl UVERBS_METHOD_QUERY_GID_ENTRY): ib_uverbs_ioctl -> ib_uverbs_run_method ->
  ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY -> rdma_get_gid_attr ("-ENODATA: empty GID
  slot"), rdma_read_gid_attr_ndev_rcu, rdma_put_gid_attr. No driver callback: vendor-neutral.
* alloc_pd: ib_uverbs_alloc_pd -> uverbs_request, rdma_alloc_begin_uobject, <vendor>_alloc_pd
  (mlx5: -> mlx5_cmd_exec; bnxt_re: -> bnxt_qplib_alloc_pd), rdma_restrack_add, uverbs_response.
* create_cq: ib_uverbs_create_cq -> create_cq -> (uobject) <vendor>_create_cq (mlx5: create_cq_user
  -> ib_umem_get, mlx5_ib_db_map_user; mlx5_comp_eqn_get; mlx5_core_create_cq -> mlx5_cmd_do;
  bnxt_re: ib_umem_get, bnxt_qplib_create_cq), rdma_restrack_add, uverbs_response.
* create_qp: ib_uverbs_create_qp -> create_qp -> ... ib_create_qp_user -> create_qp ->
  <vendor>_create_qp (mlx5: create_qp -> create_user_qp -> _create_user_qp -> ib_umem_get,
  mlx5_ib_db_map_user; mlx5_qpc_create_qp -> mlx5_cmd_exec; bnxt_re: bnxt_re_init_qp_attr,
  bnxt_re_init_user_qp -> ib_umem_get, bnxt_qplib_create_qp); bnxt_re_create_qp "-EINVAL when
  bnxt_re_test_qp_limits fails; max QPs exceeded"; the uverbs create_qp aborts its NEW uobject
  (rdma_alloc_abort_uobject) on the handler's error.
* modify_qp RESET->INIT (rdma_counter_bind_qp_auto: in AUTO counter mode alloc_and_bind; "returns
  NULL for bnxt_re/irdma, so rdma_counter_bind_qp_auto returns -ENOMEM, which is ignored"),
  INIT->RTR (rdma_fill_sgid_attr, rdma_get_gid_attr, ib_resolve_eth_dmac ->
  ib_resolve_unicast_gid_dmac -> rdma_addr_find_l2_eth_by_grh "-ETIMEDOUT: neighbour never
  resolved within 1000 ms"), RTR->RTS; then ib_security_modify_qp -> <vendor>_modify_qp (mlx5:
  __mlx5_ib_modify_qp -> mlx5_set_path (RTR), mlx5_core_qp_modify -> mlx5_cmd_exec; bnxt_re:
  bnxt_qplib_modify_qp).
* reg_mr: ib_uverbs_reg_mr -> (uobject), rdma_lookup_get_uobject, <vendor>_reg_user_mr (mlx5:
  mlx5r_umr_resource_init, ib_umem_get -> pin_user_pages_fast, sg_alloc_append_table_from_pages;
  create_real_mr -> alloc_cacheable_mr -> (mkey_cache_ent_from_rb_key, _mlx5_mr_cache_alloc),
  mlx5r_umr_update_mr_pas "-EFAULT: UMR QP in error state or UMR completion error", create_real_mr
  "<mlx5r_umr_update_mr_pas errno>: enabling via UMR fails; mlx5_ib_dereg_mr unwinds"; bnxt_re:
  ib_umem_get, __bnxt_re_user_reg_mr), rdma_restrack_add, uverbs_response.
* dealloc_pd: ib_uverbs_dealloc_pd -> __uobj_perform_destroy -> __uobj_get_destroy ->
  rdma_lookup_get_uobject, uobj_destroy -> uverbs_destroy_uobject -> destroy_hw_idr_uobject ->
  uverbs_free_pd -> ib_dealloc_pd_user -> <vendor>_dealloc_pd (mlx5: mlx5_cmd_dealloc_pd ->
  mlx5_cmd_exec), rdma_restrack_del; ib_rdmacg_uncharge; remove_handle_idr_uobject;
  rdma_lookup_put_uobject.
* bpf/calltree.c: a tree with a failing frame is always emitted (here: no aggregation, every
  repeat_count null), timed only when its root entered in a capture window (else null latencies
  and every ts the tick it returned in); a good tree is emitted only when timed, in a window, under
  the latency bound, and is the n-th with n % sample_every == 0 of its root probe's in-window good
  calls on the host (the per-probe `good_seen` counter).

MODELLING ASSUMPTIONS beyond the reference
  - upstream 6.8 inbox drivers (no OFED): ib_umem_get, no peer memory;
  - the static dispatch frames ib_uverbs_cmd_verbs and ib_uverbs_write are not probes;
  - bnxt_re_test_qp_limits is inlined into bnxt_re_create_qp (its failure is bnxt_re_create_qp's);
  - rdma_addr_find_l2_eth_by_grh's ETIMEDOUT passes up unchanged to the root; rdma_get_gid_attr's
    ENODATA likewise through the ioctl dispatch;
  - alloc_and_bind returns a pointer (NULL: no counter), so its frame carries no errno;
  - a modify_qp's root is ib_uverbs_modify_qp for all three transitions: one root probe, one
    `good_seen` counter; the transition is the trace's `arg`.

The process model
-----------------
24 hosts over 00:00-06:00 UTC of DATE: mlx-01 .. mlx-18 (ConnectX, mlx5) and bnx-01 .. bnx-06
(Broadcom, bnxt_re), one kernel release, RoCE, port counter mode AUTO (fleet-wide since the day
before DATE: `rdma statistic qp set link ... auto`). Snapshots every 30 s (hh:mm:07, hh:mm:37).

* Capture windows: the fleet's tracer opens one 60 s window every 10 minutes, at hh:m5:00 (m = 0..5)
  on every host; sample_every: ib_uverbs_reg_mr 2, every other root probe 1; latency bound 50 ms
  (every good call here is under it).
* Every host starts a training job (comm python3, tenants heron/osprey) at hh:00 and hh:30 plus its
  own offset (20 s - 4 min, the scheduler's prolog): 4 ranks, 300 ms apart. A rank's start-up (~2 s):
  query_gid (NCCL's RoCE GID lookup), alloc_pd, create_cq, two create_qp, two reg_mr, then per QP
  RESET->INIT, INIT->RTR, RTR->RTS. Then a steady phase: one reg_mr every 30 s (+-5 s: NCCL
  registering user buffers) until the job ends 27 minutes after its start, and the teardown:
  dealloc_pd. So the start-up and the teardown never fall in a window (start-ups at hh:x0:20-hh:x4:00
  plus 2 s, ends at hh:x7:20-hh:x1:00), the steady reg_mr does ~10 % of the time: thousands of
  good reg_mr, no good query_gid, alloc_pd, create_cq, create_qp, modify_qp or dealloc_pd from these
  jobs.
* A rank dying at start-up requeues the job 10 minutes later (same job id, slurm_restart_count + 1,
  at most 3 attempts: start-ups at hh:x0:20-hh:x4:00 again, never in a window); a rank dying in the
  steady phase fails the job (its other ranks killed: no further call), no requeue.
* BACKFILL: five short perftest jobs (tenant kite, comm ib_write_bw: an older rdma-core container
  that reads the GID from sysfs, no query_gid ioctl), each on one healthy mlx5 host, start 10 s into
  a window: 2 ranks (the server, then the client 3 s later), the start-up without query_gid and with
  one QP, three reg_mr, teardown (dealloc_pd) 20 s after the start, all inside the window: a HANDFUL
  (10) of good alloc_pd, create_cq, create_qp, modify_qp of each transition and dealloc_pd -- on mlx5
  only. The tracer's sampling counter sees the calls in time order (generate sorts them first).
* ALIASED variant (generate(modify_sample_every=3)): ib_uverbs_modify_qp sampled 1 in 3, in step
  with a QP's three transitions: the backfill's windows send RESET->INIT good traces only (10),
  INIT->RTR and RTR->RTS none; everything else as above.
* SCARCE variant (generate(backfill_jobs=1, modify_sample_every=2)): one backfill job: two good
  traces of each start-up operation but modify_qp, whose 1-in-2 sampling leaves one good trace of
  each transition (counter 0..5 over RST, RTR, RTS, RST, RTR, RTS: 0 RST, 2 RTS, 4 RTR).
* counter_bind_unsupported (ROUTINE, absorbed, every bnxt_re RESET->INIT): rdma_counter_bind_qp_auto
  ENOMEM (alloc_and_bind NULL), ignored by _ib_modify_qp; the root succeeds. Emitted every time
  (a failing frame), timed or not.
* gid_entry_missing (ROOT CAUSE (a), a rare operation with NO good trace in the window): from 02:00
  on mlx-14, mlx-15, mlx-16 a netplan push removed the RoCEv2 address: every rank's query_gid fails
  ENODATA at rdma_get_gid_attr (core) and the rank dies (all three attempts).
* arp_timeout (ROOT CAUSE (b), a rare operation with a handful of good traces, failing deep): from
  03:00 on mlx-09, mlx-10, mlx-11 (one rack, its ToR's ARP proxy broken) every INIT->RTR fails
  ETIMEDOUT at rdma_addr_find_l2_eth_by_grh (core, depth 6); the rank dies.
* umr_completion_error (ROOT CAUSE (c), a frequent operation's fault): from 02:30 on mlx-05, 8 % of
  the steady-phase reg_mr fail EFAULT at mlx5r_umr_update_mr_pas (driver), create_real_mr unwinding
  through mlx5_ib_dereg_mr; the rank dies.
* qp_limit_exceeded (ROOT CAUSE (d), the vendor with no good trace of the operation): from 01:30 on
  bnx-03 and bnx-04 (a firmware update lowered max QPs) every rank's second create_qp fails EINVAL
  at bnxt_re_create_qp (driver); the rank dies. No bnxt_re host has a good create_qp in the window;
  the mlx5 backfill jobs have ten.
* EARLIER DAY (generate(day="earlier")): the same fleet on EARLIER_DATE, 00:00-02:00, no root cause,
  default counter mode (rdma_counter_bind_qp_auto returns 0: nothing below it, no ENOMEM on bnxt_re),
  and a debugging campaign: the job prolog opens a 60 s capture window at each job start
  (SIGUSR1), so every start-up operation has good traces, query_gid included, on both vendors.

The truth: every occurrence of the routine family is routine (expected_error true); every record of a
root cause is the cause's (expected_error false); the bifurcation is the origin: every edge above it
is on a good trace of the operation -- the handful (b), another vendor's (d: "vendor namespaces
masked", "vendors still share shapes") -- or the operation has no good trace at all ((a): "a chain
seen only on kernel releases with no good trace of its operation has its origin as bifurcation").
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from tracer.schema import metadata_list, polars_schema, write_counter_buckets, write_partition

DAY = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)
DATE = DAY.date().isoformat()
EARLIER_DAY = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)
EARLIER_DATE = EARLIER_DAY.date().isoformat()
RELEASE = "6.8.0-49-generic"
MLX = [f"mlx-{i:02d}" for i in range(1, 19)]
BNX = [f"bnx-{i:02d}" for i in range(1, 7)]
HOSTS = MLX + BNX
VENDOR = {**{h: "mlx5" for h in MLX}, **{h: "bnxt_re" for h in BNX}}
WINDOW_S = 60  # capture windows at hh:m5:00 for 60 s
SAMPLE_EVERY = {"ib_uverbs_reg_mr": 2}
JOB_MINUTES = 27
REQUEUE = dt.timedelta(minutes=10)
ATTEMPTS = 3
TENANTS = {"heron": ["heron-pretrain", "heron-sft"], "osprey": ["osprey-rl"]}

GID_HOSTS, GID_SINCE = ("mlx-14", "mlx-15", "mlx-16"), DAY + dt.timedelta(hours=2)
ARP_HOSTS, ARP_SINCE = ("mlx-09", "mlx-10", "mlx-11"), DAY + dt.timedelta(hours=3)
UMR_HOST, UMR_SINCE, UMR_P = "mlx-05", DAY + dt.timedelta(hours=2, minutes=30), 0.08
QPLIM_HOSTS, QPLIM_SINCE = ("bnx-03", "bnx-04"), DAY + dt.timedelta(hours=1, minutes=30)
# the backfill perftest jobs: (host, start) 10 s into a window, hosts without a root cause
BACKFILL = [("mlx-01", DAY + dt.timedelta(minutes=45, seconds=10)),
            ("mlx-02", DAY + dt.timedelta(hours=1, minutes=15, seconds=10)),
            ("mlx-03", DAY + dt.timedelta(hours=2, minutes=25, seconds=10)),
            ("mlx-06", DAY + dt.timedelta(hours=3, minutes=35, seconds=10)),
            ("mlx-07", DAY + dt.timedelta(hours=4, minutes=45, seconds=10))]

FAMILIES = {  # key -> (origin probe, errno, origin layer)
    "counter_bind_unsupported": ("rdma_counter_bind_qp_auto", "ENOMEM", "core"),
    "gid_entry_missing": ("rdma_get_gid_attr", "ENODATA", "core"),
    "arp_timeout": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
    "umr_completion_error": ("mlx5r_umr_update_mr_pas", "EFAULT", "driver"),
    "qp_limit_exceeded": ("bnxt_re_create_qp", "EINVAL", "driver"),
}
ROOT_CAUSES = ("gid_entry_missing", "arp_timeout", "umr_completion_error", "qp_limit_exceeded")
ROUTINE = ("counter_bind_unsupported",)
CAUSE_HOSTS = {"gid_entry_missing": GID_HOSTS, "arp_timeout": ARP_HOSTS, "umr_completion_error": (UMR_HOST,),
               "qp_limit_exceeded": QPLIM_HOSTS}
CAUSE_SINCE = {"gid_entry_missing": GID_SINCE, "arp_timeout": ARP_SINCE, "umr_completion_error": UMR_SINCE,
               "qp_limit_exceeded": QPLIM_SINCE}
CAUSE_OPERATION = {"gid_entry_missing": "query_gid", "arp_timeout": "modify_qp", "umr_completion_error": "reg_mr",
                   "qp_limit_exceeded": "create_qp"}

LAYER = {
    "ib_uverbs_ioctl": "uverbs", "ib_uverbs_run_method": "uverbs",
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs", "rdma_get_gid_attr": "core",
    "rdma_read_gid_attr_ndev_rcu": "core", "rdma_put_gid_attr": "core",
    "rdma_alloc_begin_uobject": "core", "alloc_uobj": "core", "alloc_begin_idr_uobject": "core",
    "idr_add_uobj": "core", "ib_rdmacg_try_charge": "core", "rdma_alloc_abort_uobject": "core",
    "rdma_lookup_get_uobject": "core", "rdma_restrack_add": "core", "uverbs_request": "uverbs",
    "uverbs_response": "uverbs",
    "ib_uverbs_alloc_pd": "uverbs", "mlx5_ib_alloc_pd": "driver", "bnxt_re_alloc_pd": "driver",
    "bnxt_qplib_alloc_pd": "driver", "mlx5_cmd_exec": "driver", "mlx5_cmd_do": "driver",
    "ib_uverbs_create_cq": "uverbs", "create_cq": "uverbs", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "mlx5_ib_db_map_user": "driver", "mlx5_comp_eqn_get": "driver",
    "mlx5_core_create_cq": "driver", "bnxt_re_create_cq": "driver", "bnxt_qplib_create_cq": "driver",
    "ib_umem_get": "core", "pin_user_pages_fast": "core", "sg_alloc_append_table_from_pages": "core",
    "ib_uverbs_create_qp": "uverbs", "create_qp": "uverbs", "ib_create_qp_user": "core",
    "mlx5_ib_create_qp": "driver", "create_user_qp": "driver", "_create_user_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "bnxt_re_create_qp": "driver", "bnxt_re_init_qp_attr": "driver",
    "bnxt_re_init_user_qp": "driver", "bnxt_qplib_create_qp": "driver",
    "ib_uverbs_modify_qp": "uverbs", "modify_qp": "uverbs", "ib_modify_qp_with_udata": "core",
    "_ib_modify_qp": "core", "rdma_fill_sgid_attr": "core", "ib_resolve_eth_dmac": "core",
    "ib_resolve_unicast_gid_dmac": "core", "rdma_addr_find_l2_eth_by_grh": "core",
    "rdma_counter_bind_qp_auto": "core", "alloc_and_bind": "core", "mlx5_ib_counter_alloc_stats": "driver",
    "__rdma_counter_bind_qp": "core", "mlx5_ib_counter_bind_qp": "driver", "mlx5_ib_qp_set_counter": "driver",
    "ib_security_modify_qp": "core", "mlx5_ib_modify_qp": "driver", "__mlx5_ib_modify_qp": "driver",
    "mlx5_set_path": "driver", "mlx5_core_qp_modify": "driver", "bnxt_re_modify_qp": "driver",
    "bnxt_qplib_modify_qp": "driver",
    "ib_uverbs_reg_mr": "uverbs", "mlx5_ib_reg_user_mr": "driver", "mlx5r_umr_resource_init": "driver",
    "create_real_mr": "driver", "alloc_cacheable_mr": "driver", "mkey_cache_ent_from_rb_key": "driver",
    "_mlx5_mr_cache_alloc": "driver", "mlx5r_umr_update_mr_pas": "driver", "mlx5_ib_dereg_mr": "driver",
    "bnxt_re_reg_user_mr": "driver", "__bnxt_re_user_reg_mr": "driver",
    "ib_uverbs_dealloc_pd": "uverbs", "__uobj_perform_destroy": "core", "__uobj_get_destroy": "core",
    "uobj_destroy": "core", "uverbs_destroy_uobject": "core", "destroy_hw_idr_uobject": "core",
    "uverbs_free_pd": "core", "ib_dealloc_pd_user": "core", "mlx5_ib_dealloc_pd": "driver",
    "mlx5_cmd_dealloc_pd": "driver", "bnxt_re_dealloc_pd": "driver", "rdma_restrack_del": "core",
    "ib_rdmacg_uncharge": "core", "remove_handle_idr_uobject": "core", "rdma_lookup_put_uobject": "core",
}
_D, _T, _F, _I, _M = "ENODATA", "ETIMEDOUT", "EFAULT", "EINVAL", "ENOMEM"


def _ok(frames):
    return [(d, fn, None) for d, fn in frames]


def _uobj(d: int):
    return _ok([(d, "rdma_alloc_begin_uobject"), (d + 1, "alloc_uobj"), (d + 1, "alloc_begin_idr_uobject"),
                (d + 2, "idr_add_uobj"), (d + 2, "ib_rdmacg_try_charge")])


def _umem(d: int):
    return _ok([(d, "ib_umem_get"), (d + 1, "pin_user_pages_fast"), (d + 1, "sg_alloc_append_table_from_pages")])


_GID_HEAD = [(0, "ib_uverbs_ioctl"), (1, "ib_uverbs_run_method"), (2, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY")]
_GID = _ok(_GID_HEAD + [(3, "rdma_get_gid_attr"), (3, "rdma_read_gid_attr_ndev_rcu"), (3, "rdma_put_gid_attr")])
_GID_MISSING = [(d, fn, _D) for d, fn in _GID_HEAD] + [(3, "rdma_get_gid_attr", _D)]

_PD = {
    "mlx5": _ok([(0, "ib_uverbs_alloc_pd"), (1, "uverbs_request")]) + _uobj(1) +
    _ok([(1, "mlx5_ib_alloc_pd"), (2, "mlx5_cmd_exec"), (1, "rdma_restrack_add"), (1, "uverbs_response")]),
    "bnxt_re": _ok([(0, "ib_uverbs_alloc_pd"), (1, "uverbs_request")]) + _uobj(1) +
    _ok([(1, "bnxt_re_alloc_pd"), (2, "bnxt_qplib_alloc_pd"), (1, "rdma_restrack_add"), (1, "uverbs_response")]),
}
_CQ = {
    "mlx5": _ok([(0, "ib_uverbs_create_cq"), (1, "create_cq")]) + _uobj(2) +
    _ok([(2, "mlx5_ib_create_cq"), (3, "create_cq_user")]) + _umem(4) +
    _ok([(4, "mlx5_ib_db_map_user"), (3, "mlx5_comp_eqn_get"), (3, "mlx5_core_create_cq"), (4, "mlx5_cmd_do"),
         (2, "rdma_restrack_add"), (2, "uverbs_response")]),
    "bnxt_re": _ok([(0, "ib_uverbs_create_cq"), (1, "create_cq")]) + _uobj(2) +
    _ok([(2, "bnxt_re_create_cq")]) + _umem(3) +
    _ok([(3, "bnxt_qplib_create_cq"), (2, "rdma_restrack_add"), (2, "uverbs_response")]),
}
_QP_HEAD = _ok([(0, "ib_uverbs_create_qp"), (1, "create_qp")]) + _uobj(2) + \
    _ok([(2, "rdma_lookup_get_uobject"), (2, "ib_create_qp_user"), (3, "create_qp")])
_QP_TAIL = _ok([(3, "rdma_restrack_add"), (2, "uverbs_response")])
_QP = {
    "mlx5": _QP_HEAD + _ok([(4, "mlx5_ib_create_qp"), (5, "create_qp"), (6, "create_user_qp"),
                            (7, "_create_user_qp")]) + _umem(8) +
    _ok([(8, "mlx5_ib_db_map_user"), (7, "mlx5_qpc_create_qp"), (8, "mlx5_cmd_exec")]) + _QP_TAIL,
    "bnxt_re": _QP_HEAD + _ok([(4, "bnxt_re_create_qp"), (5, "bnxt_re_init_qp_attr"), (5, "bnxt_re_init_user_qp")]) +
    _umem(6) + _ok([(5, "bnxt_qplib_create_qp")]) + _QP_TAIL,
}
_QP_LIMIT = [(0, "ib_uverbs_create_qp", _I), (1, "create_qp", _I)] + _uobj(2) + \
    [(2, "rdma_lookup_get_uobject", None), (2, "ib_create_qp_user", _I), (3, "create_qp", _I),
     (4, "bnxt_re_create_qp", _I), (2, "rdma_alloc_abort_uobject", None)]

_TOP = [(0, "ib_uverbs_modify_qp"), (1, "modify_qp"), (2, "rdma_lookup_get_uobject"), (2, "ib_modify_qp_with_udata"),
        (3, "_ib_modify_qp")]
_DRV = {"mlx5": lambda rtr: [(4, "ib_security_modify_qp"), (5, "mlx5_ib_modify_qp"), (6, "__mlx5_ib_modify_qp")] +
        ([(7, "mlx5_set_path")] if rtr else []) + [(7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec")],
        "bnxt_re": lambda rtr: [(4, "ib_security_modify_qp"), (5, "bnxt_re_modify_qp"), (6, "bnxt_qplib_modify_qp")]}
_RTR_CORE = [(4, "rdma_fill_sgid_attr"), (5, "rdma_get_gid_attr"), (4, "ib_resolve_eth_dmac"),
             (5, "ib_resolve_unicast_gid_dmac"), (6, "rdma_addr_find_l2_eth_by_grh")]
_BIND_MLX5 = [(4, "rdma_counter_bind_qp_auto"), (5, "alloc_and_bind"), (6, "mlx5_ib_counter_alloc_stats"),
              (6, "__rdma_counter_bind_qp"), (7, "mlx5_ib_counter_bind_qp"), (8, "mlx5_cmd_exec"),
              (8, "mlx5_ib_qp_set_counter"), (6, "rdma_restrack_add")]
_RESET_INIT = {
    ("mlx5", "auto"): _ok(_TOP + _BIND_MLX5 + _DRV["mlx5"](False)),
    ("bnxt_re", "auto"): _ok(_TOP) + [(4, "rdma_counter_bind_qp_auto", _M), (5, "alloc_and_bind", None)] +
    _ok(_DRV["bnxt_re"](False)),
    ("mlx5", "none"): _ok(_TOP + [(4, "rdma_counter_bind_qp_auto")] + _DRV["mlx5"](False)),
    ("bnxt_re", "none"): _ok(_TOP + [(4, "rdma_counter_bind_qp_auto")] + _DRV["bnxt_re"](False)),
}
_ARP = [(d, fn, _T if fn not in ("rdma_lookup_get_uobject",) else None) for d, fn in _TOP] + \
    [(4, "rdma_fill_sgid_attr", None), (5, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", _T),
     (5, "ib_resolve_unicast_gid_dmac", _T), (6, "rdma_addr_find_l2_eth_by_grh", _T)]

_MR_HEAD = _ok([(0, "ib_uverbs_reg_mr")]) + _uobj(1) + _ok([(1, "rdma_lookup_get_uobject")])
_MR_TAIL = _ok([(1, "rdma_restrack_add"), (1, "uverbs_response")])
_MR = {
    "mlx5": _MR_HEAD + _ok([(1, "mlx5_ib_reg_user_mr"), (2, "mlx5r_umr_resource_init")]) + _umem(2) +
    _ok([(2, "create_real_mr"), (3, "alloc_cacheable_mr"), (4, "mkey_cache_ent_from_rb_key"),
         (4, "_mlx5_mr_cache_alloc"), (3, "mlx5r_umr_update_mr_pas")]) + _MR_TAIL,
    "bnxt_re": _MR_HEAD + _ok([(1, "bnxt_re_reg_user_mr")]) + _umem(2) + _ok([(2, "__bnxt_re_user_reg_mr")]) + _MR_TAIL,
}
_MR_UMR = [(0, "ib_uverbs_reg_mr", _F)] + _MR_HEAD[1:] + \
    [(1, "mlx5_ib_reg_user_mr", _F), (2, "mlx5r_umr_resource_init", None)] + _umem(2) + \
    [(2, "create_real_mr", _F), (3, "alloc_cacheable_mr", None), (4, "mkey_cache_ent_from_rb_key", None),
     (4, "_mlx5_mr_cache_alloc", None), (3, "mlx5r_umr_update_mr_pas", _F), (3, "mlx5_ib_dereg_mr", None),
     (1, "rdma_alloc_abort_uobject", None)]

_DEALLOC_HEAD = [(0, "ib_uverbs_dealloc_pd"), (1, "__uobj_perform_destroy"), (2, "__uobj_get_destroy"),
                 (3, "rdma_lookup_get_uobject"), (3, "uobj_destroy"), (4, "uverbs_destroy_uobject"),
                 (5, "destroy_hw_idr_uobject"), (6, "uverbs_free_pd"), (7, "ib_dealloc_pd_user")]
_DEALLOC_TAIL = [(6, "ib_rdmacg_uncharge"), (4, "remove_handle_idr_uobject"), (2, "rdma_lookup_put_uobject")]
_DEALLOC = {
    "mlx5": _ok(_DEALLOC_HEAD + [(8, "mlx5_ib_dealloc_pd"), (9, "mlx5_cmd_dealloc_pd"), (10, "mlx5_cmd_exec"),
                                 (8, "rdma_restrack_del")] + _DEALLOC_TAIL),
    "bnxt_re": _ok(_DEALLOC_HEAD + [(8, "bnxt_re_dealloc_pd"), (8, "rdma_restrack_del")] + _DEALLOC_TAIL),
}

# name -> (operation, argument, frames of (depth, function, errno))
TREES: dict[str, tuple[str, str | None, list]] = {}
for _v in ("mlx5", "bnxt_re"):
    TREES[f"query_gid@{_v}"] = ("query_gid", None, _GID)
    TREES[f"alloc_pd@{_v}"] = ("alloc_pd", None, _PD[_v])
    TREES[f"create_cq@{_v}"] = ("create_cq", None, _CQ[_v])
    TREES[f"create_qp@{_v}"] = ("create_qp", "RC", _QP[_v])
    TREES[f"reset_init@{_v}"] = ("modify_qp", "RESET->INIT", _RESET_INIT[(_v, "auto")])
    TREES[f"reset_init_nocounter@{_v}"] = ("modify_qp", "RESET->INIT", _RESET_INIT[(_v, "none")])
    TREES[f"init_rtr@{_v}"] = ("modify_qp", "INIT->RTR", _ok(_TOP + _RTR_CORE + _DRV[_v](True)))
    TREES[f"rtr_rts@{_v}"] = ("modify_qp", "RTR->RTS", _ok(_TOP + _DRV[_v](False)))
    TREES[f"reg_mr@{_v}"] = ("reg_mr", None, _MR[_v])
    TREES[f"dealloc_pd@{_v}"] = ("dealloc_pd", None, _DEALLOC[_v])
TREES["query_gid_missing@mlx5"] = ("query_gid", None, _GID_MISSING)
TREES["init_rtr_arp@mlx5"] = ("modify_qp", "INIT->RTR", _ARP)
TREES["reg_mr_umr@mlx5"] = ("reg_mr", None, _MR_UMR)
TREES["create_qp_limit@bnxt_re"] = ("create_qp", "RC", _QP_LIMIT)
# the probes each vendor's hosts attach (counters rows): every function of its trees
PROBES = {v: sorted({fn for tr, (_, _, fr) in TREES.items() if tr.endswith("@" + v) for _, fn, _ in fr})
          for v in ("mlx5", "bnxt_re")}
TREE_FAMILY = {"reset_init@bnxt_re": "counter_bind_unsupported", "query_gid_missing@mlx5": "gid_entry_missing",
               "init_rtr_arp@mlx5": "arp_timeout", "reg_mr_umr@mlx5": "umr_completion_error",
               "create_qp_limit@bnxt_re": "qp_limit_exceeded"}

SNAPSHOT_S = 30


def in_window(t: dt.datetime) -> bool:
    """Whether `t` falls in one of the fleet's periodic capture windows (hh:m5:00 + 60 s)."""
    return t.minute % 10 == 5 and t.second < WINDOW_S


class _Host:
    def __init__(self, host: str, rng: np.random.Generator, day: dt.datetime, earlier: bool,
                 sample_every: dict[str, int]):
        self.host, self.rng, self.day, self.earlier = host, rng, day, earlier
        self.sample_every = sample_every
        self.pending: list[tuple] = []
        self.vendor = VENDOR[host]
        self.end = day + dt.timedelta(hours=2 if earlier else 6)
        self.boot = day - dt.timedelta(days=3, seconds=int(rng.integers(0, 86400)))
        self.boot_id = f"{int(rng.integers(1 << 30)):08x}"
        self.next_pid = int(rng.integers(20000, 40000))
        self.n = 0
        self.good_seen: dict[str, int] = {}
        self.prolog_windows: list[tuple[dt.datetime, dt.datetime]] = []
        self.events: dict[str, list] = {k: [] for k in (
            "trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret", "errno",
            "latency_ns", "arg", "kind", "command", "exit_status", "start_time", "end_time", "job_id", "metadata")}
        self.truth: list[dict] = []
        self.calls: list[tuple[dt.datetime, str]] = []  # every call, emitted or not: the counters

    def pid(self) -> int:
        self.next_pid += int(self.rng.integers(3, 40))
        return self.next_pid

    def timed(self, t: dt.datetime) -> bool:
        return in_window(t) or any(a <= t < b for a, b in self.prolog_windows)

    def call(self, t: dt.datetime, name: str, pid: int, ppid: int, job: str, meta: dict, comm: str) -> None:
        """A call at `t` (recorded or not by `flush`, in time order: the sampling counter is the
        kernel's, which sees the calls as they come)."""
        if t < self.end:  # past the audited window: neither counted nor recorded here
            self.pending.append((t, f"{name}@{self.vendor}", pid, ppid, job, meta, comm))

    def flush(self) -> None:
        for args in sorted(self.pending, key=lambda a: (a[0], a[2])):
            self.emit(*args)
        self.pending = []

    def emit(self, t: dt.datetime, tree: str, pid: int, ppid: int, job: str, meta: dict, comm: str) -> None:
        op, arg, frames = TREES[tree]
        self.calls.append((t, tree))
        failing = any(e for _, _, e in frames)
        timed = self.timed(t)
        if not failing:  # calltree.c: good trees only timed, and 1 in sample_every of the root probe's
            if not timed:
                return
            root = frames[0][1]
            seen = self.good_seen.get(root, 0)
            self.good_seen[root] = seen + 1
            if seen % self.sample_every.get(root, 1):
                return
        rng = self.rng
        self.n += 1
        tid = f"{self.host}:{self.boot_id}:{pid}:{self.n}"
        root_ns = int(rng.integers(40_000, 900_000))
        base = int((t - self.boot).total_seconds() * 1e9)
        tick = base + root_ns - (base + root_ns) % 4_000_000
        end = t + dt.timedelta(microseconds=root_ns // 1000)
        md = metadata_list(meta)
        ev = self.events
        for i, (depth, fn, errno) in enumerate(frames):
            ev["trace_id"].append(tid)
            ev["seq"].append(i)
            ev["ts_ns"].append(base + i * 2000 if timed else tick)
            ev["pid"].append(pid)
            ev["tid"].append(pid)
            ev["ppid"].append(ppid)
            ev["comm"].append(comm)
            ev["probe"].append(fn)
            ev["layer"].append(LAYER[fn])
            ev["depth"].append(depth)
            ev["ret"].append(-1 if errno else 0)
            ev["errno"].append(errno)
            ev["latency_ns"].append(max(1000, root_ns // (depth + 1) - i * 300) if timed else None)
            ev["arg"].append(arg if depth == 0 else None)
            ev["kind"].append("failure" if failing else "good")
            ev["command"].append(op)
            ev["exit_status"].append(-1 if frames[0][2] else 0)
            ev["start_time"].append(t if timed else end)
            ev["end_time"].append(end)
            ev["job_id"].append(job)
            ev["metadata"].append(md)
        family = TREE_FAMILY.get(tree)
        origin = FAMILIES[family] if family else None
        self.truth.append({
            "trace_id": tid, "kind": "failure" if failing else "good", "root_cause": family,
            "bifurcation_probe": origin[0] if origin else None, "bifurcation_errno": origin[1] if origin else None,
            "origin_layer": origin[2] if origin else None,
            "expected_error": (family in ROUTINE) if family else None,
            "held_out": (not failing) and bool(rng.random() < 0.15),
        })

    def cause(self, key: str, t: dt.datetime) -> bool:
        return not self.earlier and self.host in CAUSE_HOSTS[key] and t >= CAUSE_SINCE[key]

    def startup(self, t: dt.datetime, pid: int, ppid: int, job: str, meta: dict, comm: str, qps: int,
                gid: bool) -> tuple[dt.datetime, bool]:
        """A rank's start-up from `t`; (time after it, whether the rank lived)."""
        rng = self.rng
        ri = "reset_init_nocounter" if self.earlier else "reset_init"

        def step():
            return dt.timedelta(milliseconds=int(rng.integers(30, 150)))

        if gid:
            t += step()
            if self.cause("gid_entry_missing", t):
                self.call(t, "query_gid_missing", pid, ppid, job, meta, comm)
                return t, False
            self.call(t, "query_gid", pid, ppid, job, meta, comm)
        for name in ("alloc_pd", "create_cq"):
            t += step()
            self.call(t, name, pid, ppid, job, meta, comm)
        for k in range(qps):
            t += step()
            if k == 1 and self.cause("qp_limit_exceeded", t):
                self.call(t, "create_qp_limit", pid, ppid, job, meta, comm)
                return t, False
            self.call(t, "create_qp", pid, ppid, job, meta, comm)
        for _ in range(2):
            t += step()
            self.call(t, "reg_mr", pid, ppid, job, meta, comm)
        for _ in range(qps):
            for name in (ri, "init_rtr", "rtr_rts"):
                t += step()
                if name == "init_rtr" and self.cause("arp_timeout", t):
                    self.call(t, "init_rtr_arp", pid, ppid, job, meta, comm)
                    return t, False
                self.call(t, name, pid, ppid, job, meta, comm)
        return t, True

    def job(self, t: dt.datetime, job: str, tenant: str, name: str) -> list[bool]:
        """A training job's attempts; each attempt's outcome (every rank lived through its start-up)."""
        rng = self.rng
        outcomes = []
        for attempt in range(ATTEMPTS):
            meta = {"tenant": tenant, "job_name": name, "slurm_restart_count": str(attempt)}
            if self.earlier:  # the debugging campaign's prolog: a window at every job start
                self.prolog_windows.append((t, t + dt.timedelta(seconds=WINDOW_S)))
            launcher = self.pid()
            ranks, ok = [], True
            for r in range(4):
                pid = self.pid()
                after, lived = self.startup(t + dt.timedelta(milliseconds=300 * r + int(rng.integers(0, 100))), pid,
                                            launcher, job, meta, "python3", 2, True)
                ranks.append((pid, after))
                ok &= lived
            outcomes.append(ok)
            if ok:
                self.steady(t, ranks, launcher, job, meta)
                break
            t += REQUEUE
        return outcomes

    def steady(self, start: dt.datetime, ranks, launcher: int, job: str, meta: dict) -> None:
        """The ranks' steady phase (a reg_mr every 30 +- 5 s) to the job's end, then the teardown; a
        rank dying of a reg_mr ends the job (the others killed)."""
        rng = self.rng
        end = start + dt.timedelta(minutes=JOB_MINUTES)
        nxt = {pid: after + dt.timedelta(seconds=float(rng.uniform(5, 30))) for pid, after in ranks}
        while True:
            pid = min(nxt, key=nxt.get)
            t = nxt[pid]
            if t >= end:
                break
            if self.cause("umr_completion_error", t) and rng.random() < UMR_P:
                self.call(t, "reg_mr_umr", pid, launcher, job, meta, "python3")
                return
            self.call(t, "reg_mr", pid, launcher, job, meta, "python3")
            nxt[pid] = t + dt.timedelta(seconds=float(rng.uniform(25, 35)))
        for pid, _ in ranks:
            self.call(end + dt.timedelta(milliseconds=int(rng.integers(0, 400))), "dealloc_pd", pid, launcher, job,
                      meta, "python3")

    def backfill(self, t: dt.datetime, job: str) -> None:
        """A perftest job inside a window: 2 ranks (the server, then the client 3 s later, once the
        server listens), one QP each, three reg_mr, teardown 20 s after the start."""
        meta = {"tenant": "kite", "job_name": "kite-perftest", "slurm_restart_count": "0"}
        launcher = self.pid()
        for r in range(2):
            pid = self.pid()
            after, _ = self.startup(t + dt.timedelta(seconds=3 * r), pid, launcher, job, meta, "ib_write_bw", 1,
                                    False)
            self.call(after + dt.timedelta(seconds=1), "reg_mr", pid, launcher, job, meta, "ib_write_bw")
            self.call(t + dt.timedelta(seconds=20, milliseconds=100 * r), "dealloc_pd", pid, launcher, job, meta,
                      "ib_write_bw")


def generate(root, seed: int = 65, day: str = "fault", modify_sample_every: int = 1, backfill_jobs: int = 5,
             **_shape) -> dict:
    """The fleet into `root`: `day="fault"` the audited day (6 h, the four root causes, AUTO counter
    mode); `day="earlier"` the earlier day (2 h, no root cause, default counter mode, a capture
    window at every job start). `modify_sample_every=3`: the ALIASED variant -- the probe set samples
    ib_uverbs_modify_qp 1 in 3, in step with each QP's three transitions: in the backfill's windows
    (one host each, the server's QP then the client's) only RESET->INIT good traces are sent,
    INIT->RTR and RTR->RTS none. `backfill_jobs=1, modify_sample_every=2`: the SCARCE variant -- one
    backfill job (mlx-01): two good traces of alloc_pd, create_cq, create_qp and dealloc_pd, and of
    modify_qp (counter 0..5 over RST, RTR, RTS, RST, RTR, RTS) RESET->INIT, RTR->RTS and INIT->RTR
    ONE each."""
    from pathlib import Path

    root = Path(root)
    earlier = day == "earlier"
    base = EARLIER_DAY if earlier else DAY
    hours = 2 if earlier else 6
    end_t = base + dt.timedelta(hours=hours)
    rng = np.random.default_rng([seed, int(earlier)])
    sample_every = {**SAMPLE_EVERY, "ib_uverbs_modify_qp": modify_sample_every}
    hosts = {h: _Host(h, np.random.default_rng([seed, int(earlier), i]), base, earlier, sample_every)
             for i, h in enumerate(HOSTS)}
    job_counter = [8_200_000 if not earlier else 8_100_000]

    def new_job() -> str:
        job_counter[0] += int(rng.integers(1, 30))
        return str(job_counter[0])

    jobs: list[dict] = []
    for name, h in hosts.items():
        offset = int(rng.integers(20, 240))
        for k in range(2 * hours):
            t = base + dt.timedelta(minutes=30 * k, seconds=offset + int(rng.integers(-15, 1)))
            if t + dt.timedelta(minutes=JOB_MINUTES) >= end_t:
                break
            tenant = str(rng.choice(list(TENANTS)))
            job = new_job()
            outcomes = h.job(t, job, tenant, str(rng.choice(TENANTS[tenant])))
            jobs.append({"host": name, "job": job, "start": t.isoformat(), "attempts": len(outcomes),
                         "ok": outcomes[-1]})
    if not earlier:
        for name, t in BACKFILL[:backfill_jobs]:
            job = new_job()
            hosts[name].backfill(t, job)
            jobs.append({"host": name, "job": job, "start": t.isoformat(), "attempts": 1, "ok": True,
                         "backfill": True})

    for h in hosts.values():
        h.flush()
    snaps = []
    s = base + dt.timedelta(seconds=7)
    while s < end_t:
        snaps.append(s)
        s += dt.timedelta(seconds=SNAPSHOT_S)
    snap_ns = np.array([int(x.timestamp() * 1e9) for x in snaps], dtype=np.int64)
    date = base.date().isoformat()
    records = 0
    ev_schema = polars_schema("events")
    for name, h in hosts.items():
        ev = pl.DataFrame(h.events, schema_overrides={
            "start_time": pl.Datetime("us", "UTC"), "end_time": pl.Datetime("us", "UTC"),
            "latency_ns": pl.Int64}, strict=False)
        ev = ev.with_columns(pl.lit(name).alias("host"), pl.lit(RELEASE).alias("kernel_release"),
                             pl.lit(0, pl.Int64).alias("lost_events"), pl.lit(None, pl.Int64).alias("repeat_count"),
                             pl.lit(None, pl.String).alias("path"), pl.lit(None, pl.String).alias("path2"),
                             pl.lit(None, pl.String).alias("output"))
        ev = ev.select([pl.col(c).cast(ev_schema[c]) for c in ev_schema.names()]).sort("start_time", "trace_id", "seq")
        write_partition(ev, root, "events", date, name, "part-00000.parquet", durable=False)
        truth = pl.DataFrame(h.truth, infer_schema_length=None).with_columns(pl.lit(name).alias("host"))
        truth = truth.select([pl.col(c).cast(t) for c, t in polars_schema("truth").items()])
        write_partition(truth, root, "truth", date, name, "part-00000.parquet", durable=False)
        records += truth.height
        _write_counters(root, date, name, h, snaps, snap_ns, hours)
    return {"hosts": list(HOSTS), "records": records, "jobs": jobs, "day": date}


def _write_counters(root, date: str, name: str, h: _Host, snaps, snap_ns, hours: int) -> None:
    """The host's counters, every call counted (emitted or not), one file an hour."""
    times = np.array([int(t.timestamp() * 1e9) for t, _ in h.calls], dtype=np.int64)
    idx = np.searchsorted(snap_ns, times, side="left")  # the first snapshot at or after the call
    per = (pl.DataFrame({"i": idx, "tree": [tr for _, tr in h.calls]})
           .filter(pl.col("i") < len(snaps)).group_by("i", "tree").len("k"))
    frames = pl.DataFrame([(tr, fn, e) for tr, (_, _, fr) in TREES.items() for _, fn, e in fr],
                          schema={"tree": pl.String, "probe": pl.String, "errno": pl.String}, orient="row")
    calls = per.join(frames, on="tree")
    inv = calls.group_by("i", "probe").agg(pl.col("k").sum().cast(pl.Int64).alias("invocations"),
                                           pl.col("k").filter(pl.col("errno").is_not_null()).sum().cast(pl.Int64)
                                           .alias("failures"))
    errs = (calls.filter(pl.col("errno").is_not_null()).group_by("i", "probe", "errno")
            .agg(pl.col("k").sum().cast(pl.Int64).alias("count"))
            .sort("errno").group_by("i", "probe").agg(pl.struct("errno", "count").alias("errno_counts")))
    probes = PROBES[h.vendor]
    grid = pl.DataFrame({"i": np.repeat(np.arange(len(snaps)), len(probes)), "probe": probes * len(snaps)})
    c = (grid.join(inv, on=["i", "probe"], how="left").join(errs, on=["i", "probe"], how="left")
         .with_columns(pl.col("invocations").fill_null(0), pl.col("failures").fill_null(0)))
    c = c.with_columns(
        pl.lit(name).alias("host"),
        pl.Series("snapshot_time", snaps, dtype=pl.Datetime("us", "UTC"))[c["i"]].alias("snapshot_time"),
        pl.lit(float(SNAPSHOT_S)).alias("interval_s"), pl.lit(RELEASE).alias("kernel_release"),
        pl.lit(h.vendor).alias("vendor"), pl.lit("rdma").alias("probe_set"),
        pl.col("probe").replace_strict(LAYER).alias("layer"), pl.lit(True).alias("live"),
        pl.lit(0, pl.Int64).alias("lost_records"))
    schema = polars_schema("counters")
    c = c.select([pl.col(col).cast(t) for col, t in schema.items()]).sort("snapshot_time", "probe")
    start = h.day
    for hour in range(hours):
        lo, hi = start + dt.timedelta(hours=hour), start + dt.timedelta(hours=hour + 1)
        part = c.filter((pl.col("snapshot_time") >= lo) & (pl.col("snapshot_time") < hi))
        path = write_partition(part, root, "counters", date, name, f"part-{hour:05d}.parquet", durable=False)
        write_counter_buckets(path, durable=False)

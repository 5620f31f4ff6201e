"""A three-vendor fleet: a blind fleet generator (see __init__.py for the angle).

Written from reference/rdma_control_path.yaml (the operations' trees, `vendor_equivalents.ops`
and `vendor_equivalents.driver_internals` for bnxt_re and irdma, the errno lists), tracer/schema.py
(tables, written through its writers), README.md, docs/architecture.md, tests/fleet_harness.py and
the other generators' module docstrings. It imports only tracer.schema of the project.

What the reference has on each vendor (read closely): mlx5 is read in full (OFED 24.07 / upstream
~v6.8-6.10). bnxt_re and irdma come from upstream ops tables and driver files
(`vendor_equivalents`): bnxt_re_create_qp (bnxt_re_test_qp_limits, bnxt_re_init_user_qp,
ib_umem_get, bnxt_qplib_create_qp; -EINVAL when bnxt_re_test_qp_limits fails) and
bnxt_re_reg_user_mr (ib_umem_get, __bnxt_re_user_reg_mr) are confirmed_upstream; the bnxt_re
callees of alloc_pd, create_cq, modify_qp and dereg_mr (bnxt_qplib_*) are marked unconfirmed, and
the reference gives bnxt_re NO errno of its own outside create_qp and reg_mr. irdma has more
(alloc_pd, create_qp, modify_qp_roce, reg_user_mr with its QP/CQ buffer types, query_device,
query_port); irdma_dereg_mr's callees are unconfirmed and irdma_create_cq's callees are not listed
at all (the tree here has it alone). So bnxt_re's routine family below is the one the reference
gives a driver WITHOUT counter ops (shared with irdma), not a bnxt_re-only errno: the reference has
none to offer.

The fleet
---------
`hosts` (12 by default, a multiple of 3) RoCE hosts on 6.8.0-60-generic (upstream: ib_umem_get,
no OFED peer memory) for `hours` (3) from 2026-12-01T08:00Z, one cluster, a third of them per
vendor: `fg36-mNN` mlx5 (nic ConnectX-6 Lx), `fg36-bNN` bnxt_re (nic BCM57508), `fg36-iNN` irdma
in RoCE mode (nic E810-C, irdma_roce_dev_ops). The vendor is the counters' `vendor` column and the
driver frames' namespace (mlx5_ib_ / bnxt_re_ / irdma_, `vendor_equivalents.ops`).

Jobs (the same on every vendor): one slot a host, 4 ranks a job (comm python3, a process a rank,
started 0.2 s apart), 20-40 minutes, the next job 1-3 minutes after one ends. Tenants: `orion`
(70 % of jobs) and `kestrel` (30 %); job types `allreduce` and `bulk` (half each; a bulk job's
second QP asks a deep send queue). Metadata on every trace: tenant, job_type, memlock, nic,
nic_fw. A rank's start-up, 30 ms a call: ibv_query_device_ex; alloc_pd; create_cq; reg_mr of a
256 MiB buffer and of a 2 GiB buffer; two RC QPs (create_qp, RESET->INIT, INIT->RTR, RTR->RTS);
every 2-4 minutes it registers a new buffer and deregisters the old one 30 ms later; at its end it
deregisters its two buffers. irdma ranks register each CQ's and QP's user buffer first (reg_mr of
type CQ / QP: reference irdma_create_qp note, "irdma user QP/CQ buffers must be registered first
... irdma_reg_user_mr_type_qp/_cq"; the libirdma order is the reference's inference). The fleet's
monitoring sets the port counter mode to AUTO on every host (`rdma statistic qp set ... auto`).
A rank that dies ends its job: the launcher kills the other ranks 0.5 s later (no call after).

The tracer (probe set "rdma": every function of TREES is a probe; statics the reference calls
usually inlined -- verbs.c's and mlx5 qp.c's `create_qp`, _create_user_qp, rdma_fill_sgid_attr --
are not, nor is irdma_hw_modify_qp): 30 s snapshots at a per-host phase; counters for every probe
of the host's set in every snapshot (exact: every call); a tree is emitted when any of its frames
returns an error: the first K=3 of a signature (shape and errnos) in a snapshot are records, the
rest counted in the third's repeat_count; no ring-buffer loss; good trees only in capture windows
(the first 30 s of every 2 minutes at a per-host phase, at most 12 of a signature a window),
timed per frame; a failure in a window is timed, outside all its frames carry the 4 ms tick its
root returned in, latency null.

Routine (expected_error = True, root_cause = the family; the process goes on each time)
-------------------------------------------------------------------------------------------
  mlx5_cq_comp_refused   mlx5 hosts only. The mlx5 provider asks create_cq for CQE compression;
                         this NIC reports no cap for it (the NIC fact is this generator's
                         assumption; the reference gives the errno and its condition: create_cq_user
                         "-EOPNOTSUPP CQE compression or 128B padding requested without HW cap"):
                         EOPNOTSUPP at create_cq_user after its buffer and doorbell are mapped
                         (ib_umem_release unwinds), up through mlx5_ib_create_cq, create_cq,
                         ib_uverbs_create_cq; the provider creates the CQ again 3 ms later without
                         compression, which passes. Once per rank. bnxt_re and irdma ranks never
                         ask (an mlx5dv feature).
  counter_auto_enomem    bnxt_re AND irdma hosts (every RESET->INIT): in AUTO counter mode
                         rdma_counter_bind_qp_auto returns -ENOMEM because alloc_and_bind returns
                         NULL for drivers without counter_alloc_stats/counter_dealloc ops
                         (reference vendor_equivalents counter ops: "not in table read" for
                         bnxt_re and irdma; "in AUTO counter mode, alloc_and_bind returns NULL for
                         bnxt_re/irdma, so rdma_counter_bind_qp_auto returns -ENOMEM, which is
                         ignored"; _ib_modify_qp: "the rdma_counter_bind_qp_auto result is
                         ignored"). The root returns 0. On mlx5 the same call binds a counter
                         (alloc_and_bind -> mlx5_ib_counter_alloc_stats, __rdma_counter_bind_qp ->
                         mlx5_ib_counter_bind_qp): never seen there. This is bnxt_re's only
                         routine family: the reference lists no bnxt_re-only errno a library does
                         without.
  irdma_query_ex_einval  irdma hosts only: ibv_query_device_ex passes udata, which the irdma read
                         refuses (irdma_query_device "-EINVAL udata->inlen || udata->outlen (in the
                         version read)"), up through ib_uverbs_ex_query_device; the library falls
                         back to the plain IB_USER_VERBS_CMD_QUERY_DEVICE (ib_uverbs_query_device:
                         "NO driver call: copies cached ... attrs") 3 ms later and goes on. Once per
                         rank. (That rdma-core falls back so is this generator's assumption; the
                         reference leaves the ex/non-ex choice unconfirmed.)

Root causes (expected_error = False; each kills its rank, and its job with it)
-------------------------------------------------------------------------------
  kestrel_memlock_enomem  the core cause, across every vendor, one tenant only: from 35 % of the
                   window (`policy_time`) tenant kestrel's pods start with RLIMIT_MEMLOCK 64 MiB
                   (metadata memlock=64M; before and for orion: unlimited). A rank's 2 GiB
                   registration then fails the pin accounting in ib_umem_get (reference reg_mr
                   ib_umem_get: "-ENOMEM pinned_vm + npages > RLIMIT_MEMLOCK without
                   CAP_IPC_LOCK"), called by every vendor's reg_user_mr (mlx5_ib_reg_user_mr;
                   bnxt_re_reg_user_mr and irdma_reg_user_mr "calls: [ib_umem_get, ...]"), up
                   through ib_uverbs_reg_mr (uobject aborted). NCCL has no fallback for its
                   buffer: every kestrel rank started after the push dies, on every host of
                   every vendor it lands on. One fault (one tenant's limit), one origin
                   (ib_umem_get, core): ONE cluster, though the driver frame above the origin is
                   mlx5_ib_/bnxt_re_/irdma_ by host ("Root-cause clusters merge signatures that
                   differ only in vendor namespace"). It also looks like a routine errno: ENOMEM
                   at a core frame is counter_auto_enomem's on the bnxt_re and irdma hosts, at
                   another function (rdma_counter_bind_qp_auto) of another operation.
  bnxt_qp_limit_einval   one vendor's driver path on a subset of its hosts: at 30 % of the window
                   (`fw_update_time`) the first half of the bnxt_re hosts (at least 2) take a NIC
                   firmware/NVM update (nic_fw 229.1.123.0 -> 230.0.156.0) whose resource
                   profile lowers the send-queue depth a QP may ask: a bulk job's deep QP then
                   fails bnxt_re_test_qp_limits (reference bnxt_re_create_qp: "-EINVAL
                   bnxt_re_test_qp_limits fails"), up through bnxt_re_create_qp,
                   ib_create_qp_user, create_qp, ib_uverbs_create_qp. Fatal (no smaller queue
                   retried). The resource profile is this generator's story; the errno and its
                   frame are the reference's. The other bnxt_re hosts, and every other vendor,
                   run the same bulk jobs fine.
  irdma_modify_einval    looks like a vendor's routine errno at another function: on the last irdma
                   host, from 50 % of the window (`irdma_fault_time`), 20 % of INIT->RTR fail in
                   the hardware modify (irdma_hw_modify_qp, not a probe), which irdma maps to
                   -EINVAL at irdma_modify_qp_roce (reference: "irdma_hw_modify_qp fails (mapped
                   to -EINVAL)"), up through ib_security_modify_qp ("<driver modify_qp errno>"),
                   _ib_modify_qp, ib_modify_qp_with_udata, modify_qp, ib_uverbs_modify_qp. EINVAL
                   from an irdma_ frame is irdma_query_ex_einval's errno on the same hosts, in
                   the same processes: another function, another operation, and the rank dies.

Alerts: none is required. On a bnxt_qp_limit_einval or irdma_modify_einval host an alert naming
that cause's errno at a frame its records fail at is acceptable. The memlock cause must alert on NO
host: it is one tenant's limit, not any host's fault, and the architecture leaves exactly that to
the clusters ("a cause many hosts share (a tenant's job past RLIMIT_MEMLOCK) stays with the
clusters"; "a tenant's jobs crash-looping from host to host ... is left to the clusters"). A host
whose own cause kills its jobs turns its slot over faster (fleet36's irdma_modify_einval host runs
22 jobs to its peers' 6-8), so more kestrel jobs start and die there: that ENOMEM is still the
tenant's. (This alert rule was written down after the first audit, from the architecture's words;
the records' truth was not changed.)
No routine family's (probe, errno) may alert anywhere.

Truth: one row per record, keyed (host, trace_id). root_cause the family (ROOT_CAUSES or
ROUTINE), null for good records; bifurcation = origin (the deepest failing frame none of whose
callees failed; every origin's parent edge is in the good trees of its operation on its vendor:
create_cq_user under mlx5_ib_create_cq, rdma_counter_bind_qp_auto under _ib_modify_qp,
irdma_query_device under ib_uverbs_ex_query_device only fails -- the good ex query trees are
mlx5's and bnxt_re's, the vendor namespace masked -- ib_umem_get under each <vendor>_reg_user_mr,
bnxt_re_test_qp_limits under bnxt_re_create_qp, irdma_modify_qp_roce under ib_security_modify_qp);
origin_layer its layer. Good records: kind good, no cause, expected_error False, held_out False.
With faults=False (the control) the three causes are absent: kestrel's limit is never pushed, the
bnxt_re NVM update still happens but keeps the profile, the irdma NIC stays healthy; the routine
is the same.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from tracer.schema import (
    COUNTERS,
    EVENTS,
    TRUTH,
    metadata_list,
    write_counter_buckets,
    write_partition,
)

VENDORS = ("mlx5", "bnxt_re", "irdma")
PREFIX = {"mlx5": "m", "bnxt_re": "b", "irdma": "i"}
NIC = {"mlx5": ("ConnectX-6 Lx", "26.41.1000"), "bnxt_re": ("BCM57508", "229.1.123.0"),
       "irdma": ("E810-C", "4.50")}
BNXT_FW_NEW = "230.0.156.0"
KERNEL = "6.8.0-60-generic"
START = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
ERRNO = {"EINVAL": 22, "ENOMEM": 12, "EOPNOTSUPP": 95}
K_PER_SIGNATURE = 3
GOOD_PER_WINDOW = 12
SNAP_S = 30.0
WINDOW_EVERY_S, WINDOW_LEN_S = 120.0, 30.0

# ---------------------------------------------------------------------------------------------
# layers: uverbs = the uverbs files and the uobject machinery (uverbs_*.c, rdma_core.c);
# core = the rest of drivers/infiniband/core; driver = drivers/infiniband/hw and mlx5 core
# ---------------------------------------------------------------------------------------------
_UVERBS = {"ib_uverbs_ex_query_device", "ib_uverbs_query_device", "ib_uverbs_get_ucontext_file",
           "copy_query_dev_fields", "ib_uverbs_alloc_pd", "rdma_alloc_begin_uobject", "uverbs_response",
           "ib_uverbs_create_cq", "create_cq", "rdma_alloc_abort_uobject", "ib_uverbs_reg_mr",
           "rdma_lookup_get_uobject", "rdma_lookup_put_uobject", "ib_uverbs_create_qp", "create_qp",
           "ib_uverbs_modify_qp", "modify_qp", "ib_uverbs_dereg_mr", "__uobj_perform_destroy", "uverbs_free_mr"}
_CORE = {"rdma_restrack_add", "ib_umem_get", "ib_umem_release", "ib_create_qp_user", "ib_create_qp_security",
         "ib_qp_usecnt_inc", "ib_modify_qp_with_udata", "_ib_modify_qp", "ib_resolve_eth_dmac",
         "ib_resolve_unicast_gid_dmac", "rdma_addr_find_l2_eth_by_grh", "rdma_lag_get_ah_roce_slave",
         "rdma_lag_put_ah_roce_slave", "ib_security_modify_qp", "ib_modify_qp_is_ok", "rdma_counter_bind_qp_auto",
         "rdma_get_counter_auto_mode", "alloc_and_bind", "__rdma_counter_bind_qp", "ib_dereg_mr_user"}


def _layer(fn: str) -> str:
    return "uverbs" if fn in _UVERBS else "core" if fn in _CORE else "driver"


# ---------------------------------------------------------------------------------------------
# trees: name -> (operation, vendor, [(depth, function, errno or None)])
# ---------------------------------------------------------------------------------------------
def _drv(v: str, op: str) -> str:
    return {"mlx5": {"alloc_pd": "mlx5_ib_alloc_pd", "create_cq": "mlx5_ib_create_cq",
                     "reg_mr": "mlx5_ib_reg_user_mr", "create_qp": "mlx5_ib_create_qp",
                     "modify_qp": "mlx5_ib_modify_qp", "dereg_mr": "mlx5_ib_dereg_mr",
                     "query_device": "mlx5_ib_query_device"},
            "bnxt_re": {"alloc_pd": "bnxt_re_alloc_pd", "create_cq": "bnxt_re_create_cq",
                        "reg_mr": "bnxt_re_reg_user_mr", "create_qp": "bnxt_re_create_qp",
                        "modify_qp": "bnxt_re_modify_qp", "dereg_mr": "bnxt_re_dereg_mr",
                        "query_device": "bnxt_re_query_device"},
            "irdma": {"alloc_pd": "irdma_alloc_pd", "create_cq": "irdma_create_cq",
                      "reg_mr": "irdma_reg_user_mr", "create_qp": "irdma_create_qp",
                      "modify_qp": "irdma_modify_qp_roce", "dereg_mr": "irdma_dereg_mr",
                      "query_device": "irdma_query_device"}}[v][op]


def _build_trees() -> tuple[dict, dict]:
    trees: dict[str, tuple[str, str, list]] = {}
    args: dict[str, str | None] = {}

    def add(name, op, v, frames, arg=None):
        trees[name] = (op, v, [(d, f, e) for d, f, *rest in frames for e in [rest[0] if rest else None]])
        args[name] = arg

    for v in VENDORS:
        D = lambda op, v=v: _drv(v, op)  # noqa: E731
        # query_device (ex): the driver fills the extended attrs
        if v == "irdma":
            add(f"{v}:query_device_ex_einval", "query_device", v,
                [(0, "ib_uverbs_ex_query_device", "EINVAL"), (1, "irdma_query_device", "EINVAL")])
            add(f"{v}:query_device", "query_device", v,
                [(0, "ib_uverbs_query_device"), (1, "ib_uverbs_get_ucontext_file"), (1, "copy_query_dev_fields")])
        else:
            add(f"{v}:query_device_ex", "query_device", v, [(0, "ib_uverbs_ex_query_device"), (1, D("query_device"))])
        # alloc_pd
        kids = {"mlx5": [(2, "mlx5_cmd_exec")], "bnxt_re": [(2, "bnxt_qplib_alloc_pd")],
                "irdma": [(2, "irdma_alloc_rsrc"), (2, "irdma_sc_pd_init")]}[v]
        add(f"{v}:alloc_pd", "alloc_pd", v, [(0, "ib_uverbs_alloc_pd"), (1, "rdma_alloc_begin_uobject"),
                                              (1, D("alloc_pd")), *kids, (1, "rdma_restrack_add"), (1, "uverbs_response")])
        # create_cq
        kids = {"mlx5": [(3, "create_cq_user"), (4, "ib_umem_get"), (4, "mlx5_ib_db_map_user"),
                         (3, "mlx5_comp_eqn_get"), (3, "mlx5_core_create_cq")],
                "bnxt_re": [(3, "ib_umem_get"), (3, "bnxt_qplib_create_cq")], "irdma": []}[v]
        add(f"{v}:create_cq", "create_cq", v, [(0, "ib_uverbs_create_cq"), (1, "create_cq"), (2, "rdma_alloc_begin_uobject"),
                                                (2, D("create_cq")), *kids, (2, "rdma_restrack_add"), (2, "uverbs_response")])
        if v == "mlx5":
            e = "EOPNOTSUPP"
            add("mlx5:create_cq_comp_refused", "create_cq", v,
                [(0, "ib_uverbs_create_cq", e), (1, "create_cq", e), (2, "rdma_alloc_begin_uobject"),
                 (2, "mlx5_ib_create_cq", e), (3, "create_cq_user", e), (4, "ib_umem_get"), (4, "mlx5_ib_db_map_user"),
                 (4, "ib_umem_release"), (2, "rdma_alloc_abort_uobject")])
        # reg_mr
        head = [(0, "ib_uverbs_reg_mr"), (1, "rdma_alloc_begin_uobject"), (1, "rdma_lookup_get_uobject"), (1, D("reg_mr"))]
        tail = [(1, "rdma_restrack_add"), (1, "rdma_lookup_put_uobject"), (1, "uverbs_response")]
        if v == "mlx5":
            add(f"{v}:reg_mr", "reg_mr", v, head + [(2, "ib_umem_get"), (2, "create_real_mr"), (3, "alloc_cacheable_mr"),
                                                    (3, "mlx5r_umr_update_mr_pas")] + tail)
        elif v == "bnxt_re":
            add(f"{v}:reg_mr", "reg_mr", v, head + [(2, "ib_umem_get"), (2, "__bnxt_re_user_reg_mr")] + tail)
        else:
            base = head + [(2, "ib_umem_get"), (2, "irdma_alloc_iwmr")]
            add(f"{v}:reg_mr", "reg_mr", v, base + [(2, "irdma_reg_user_mr_type_mem"), (3, "irdma_setup_pbles"),
                                                    (3, "irdma_create_stag"), (3, "irdma_hwreg_mr")] + tail)
            add(f"{v}:reg_mr_qp_buf", "reg_mr", v, base + [(2, "irdma_reg_user_mr_type_qp")] + tail)
            add(f"{v}:reg_mr_cq_buf", "reg_mr", v, base + [(2, "irdma_reg_user_mr_type_cq")] + tail)
        e = "ENOMEM"
        add(f"{v}:reg_mr_memlock", "reg_mr", v,
            [(0, "ib_uverbs_reg_mr", e), (1, "rdma_alloc_begin_uobject"), (1, "rdma_lookup_get_uobject"),
             (1, D("reg_mr"), e), (2, "ib_umem_get", e), (1, "rdma_lookup_put_uobject"), (1, "rdma_alloc_abort_uobject")])
        # create_qp
        head = [(0, "ib_uverbs_create_qp"), (1, "create_qp"), (2, "rdma_alloc_begin_uobject"),
                (2, "rdma_lookup_get_uobject"), (2, "rdma_lookup_get_uobject"), (2, "ib_create_qp_user"), (3, D("create_qp"))]
        kids = {"mlx5": [(4, "create_user_qp"), (5, "ib_umem_get"), (5, "mlx5_ib_db_map_user"),
                         (5, "mlx5_qpc_create_qp"), (6, "mlx5_cmd_exec")],
                "bnxt_re": [(4, "bnxt_re_test_qp_limits"), (4, "bnxt_re_init_user_qp"), (5, "ib_umem_get"),
                            (4, "bnxt_qplib_create_qp")],
                "irdma": [(4, "irdma_alloc_rsrc"), (4, "irdma_get_pbl"), (4, "irdma_setup_virt_qp"),
                          (4, "irdma_sc_qp_init"), (4, "irdma_cqp_create_qp_cmd")]}[v]
        add(f"{v}:create_qp", "create_qp", v, head + kids + [
            (3, "ib_create_qp_security"), (3, "rdma_restrack_add"), (2, "ib_qp_usecnt_inc"),
            (2, "rdma_lookup_put_uobject"), (2, "uverbs_response")])
        if v == "bnxt_re":
            e = "EINVAL"
            add("bnxt_re:create_qp_limits", "create_qp", v,
                [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), (2, "rdma_alloc_begin_uobject"),
                 (2, "rdma_lookup_get_uobject"), (2, "rdma_lookup_get_uobject"), (2, "ib_create_qp_user", e),
                 (3, "bnxt_re_create_qp", e), (4, "bnxt_re_test_qp_limits", e),
                 (2, "rdma_lookup_put_uobject"), (2, "rdma_alloc_abort_uobject")])
        # modify_qp, per transition
        for tr in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
            for bad in ((False, True) if (v == "irdma" and tr == "INIT->RTR") else (False,)):
                e = "EINVAL" if bad else None
                f = [(0, "ib_uverbs_modify_qp", e), (1, "modify_qp", e), (2, "rdma_lookup_get_uobject"),
                     (2, "ib_modify_qp_with_udata", e), (3, "_ib_modify_qp", e)]
                if tr == "INIT->RTR":
                    f += [(4, "ib_resolve_eth_dmac"), (5, "ib_resolve_unicast_gid_dmac"),
                          (6, "rdma_addr_find_l2_eth_by_grh"), (4, "rdma_lag_get_ah_roce_slave")]
                f += [(4, "ib_security_modify_qp", e), (5, D("modify_qp"), e)]
                if v == "mlx5":
                    f += [(6, "ib_modify_qp_is_ok"), (6, "__mlx5_ib_modify_qp")]
                    if tr == "INIT->RTR":
                        f += [(7, "mlx5_set_path")]
                    f += [(7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec")]
                elif v == "bnxt_re":
                    f += [(6, "bnxt_qplib_modify_qp")]
                else:
                    f += [(6, "ib_modify_qp_is_ok"), (6, "irdma_sc_qp_setctx_roce")]
                if tr == "RESET->INIT":
                    if v == "mlx5":
                        f += [(4, "rdma_counter_bind_qp_auto"), (5, "rdma_get_counter_auto_mode"), (5, "alloc_and_bind"),
                              (6, "mlx5_ib_counter_alloc_stats"), (6, "__rdma_counter_bind_qp"),
                              (7, "mlx5_ib_counter_bind_qp"), (8, "mlx5_cmd_exec"), (8, "mlx5_ib_qp_set_counter")]
                    else:
                        f += [(4, "rdma_counter_bind_qp_auto", "ENOMEM"), (5, "rdma_get_counter_auto_mode"),
                              (5, "alloc_and_bind")]
                if tr == "INIT->RTR":
                    f += [(4, "rdma_lag_put_ah_roce_slave")]
                f += [(2, "rdma_lookup_put_uobject")]
                name = f"{v}:modify_qp:{tr}" + (":hw_einval" if bad else "")
                if tr == "RESET->INIT" and v != "mlx5":
                    name += ":counter_enomem"
                add(name, "modify_qp", v, f, arg=tr)
        # dereg_mr
        kids = {"mlx5": [(5, "ib_umem_release")], "bnxt_re": [(5, "bnxt_qplib_free_mrw"), (5, "ib_umem_release")],
                "irdma": [(5, "irdma_hwdereg_mr"), (5, "irdma_free_stag"), (5, "ib_umem_release")]}[v]
        add(f"{v}:dereg_mr", "dereg_mr", v, [(0, "ib_uverbs_dereg_mr"), (1, "__uobj_perform_destroy"),
                                              (2, "rdma_lookup_get_uobject"), (2, "uverbs_free_mr"), (3, "ib_dereg_mr_user"),
                                              (4, D("dereg_mr")), *kids, (1, "rdma_lookup_put_uobject")])
    return trees, args


TREES, ARGS = _build_trees()
LAYER = {fn: _layer(fn) for _, _, frames in TREES.values() for _, fn, _ in frames}

# family -> (origin probe, errno, origin layer)
ROUTINE = {
    "mlx5_cq_comp_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
    "counter_auto_enomem": ("rdma_counter_bind_qp_auto", "ENOMEM", "core"),
    "irdma_query_ex_einval": ("irdma_query_device", "EINVAL", "driver"),
}
ROOT_CAUSES = {
    "kestrel_memlock_enomem": ("ib_umem_get", "ENOMEM", "core"),
    "bnxt_qp_limit_einval": ("bnxt_re_test_qp_limits", "EINVAL", "driver"),
    "irdma_modify_einval": ("irdma_modify_qp_roce", "EINVAL", "driver"),
}
FAMILIES = {**ROUTINE, **ROOT_CAUSES}
# which family a failing tree is
TREE_FAMILY = {
    "mlx5:create_cq_comp_refused": "mlx5_cq_comp_refused",
    "bnxt_re:modify_qp:RESET->INIT:counter_enomem": "counter_auto_enomem",
    "irdma:modify_qp:RESET->INIT:counter_enomem": "counter_auto_enomem",
    "irdma:query_device_ex_einval": "irdma_query_ex_einval",
    "mlx5:reg_mr_memlock": "kestrel_memlock_enomem",
    "bnxt_re:reg_mr_memlock": "kestrel_memlock_enomem",
    "irdma:reg_mr_memlock": "kestrel_memlock_enomem",
    "bnxt_re:create_qp_limits": "bnxt_qp_limit_einval",
    "irdma:modify_qp:INIT->RTR:hw_einval": "irdma_modify_einval",
}
FATAL = set(ROOT_CAUSES)


def _frames_timed(frames, t_ns: int, timed: bool):
    """(ts_ns offsets, latency) per frame: entries 3 us apart, each frame returning 1 us after its
    last descendant (nested), leaves 2-40 us."""
    n = len(frames)
    entry = [i * 3000 for i in range(n)]
    exit_ = [0] * n
    for i in range(n - 1, -1, -1):
        d = frames[i][0]
        j, last = i + 1, entry[i] + 2000 + (i * 7919) % 38000
        while j < n and frames[j][0] > d:
            last = max(last, exit_[j])
            j += 1
        exit_[i] = last + 1000
    if not timed:
        return [t_ns] * n, [None] * n
    return [t_ns + x for x in entry], [exit_[i] - entry[i] for i in range(n)]


def generate(out_dir, hosts: int = 12, hours: float = 3, seed: int = 36, faults=True) -> dict:
    """Write events, counters, counter_buckets and truth of the fleet under `out_dir` (dataset
    layout, one part file per host-day) and return the summary (also `<out_dir>/fleetgen36.json`).
    `faults`: True (all three causes), False (the control) or a list of cause names."""
    if hosts < 6 or hosts % 3:
        raise ValueError("hosts: a multiple of 3, at least 6")
    on = set(ROOT_CAUSES) if faults is True else set() if not faults else set(faults)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    per = hosts // 3
    names = {v: [f"fg36-{PREFIX[v]}{i:02d}" for i in range(per)] for v in VENDORS}
    vendor_of = {h: v for v, hs in names.items() for h in hs}
    span = hours * 3600.0
    t_start = START.timestamp()
    t_end = t_start + span
    policy_time = t_start + 0.35 * span
    fw_time = t_start + 0.30 * span
    irdma_time = t_start + 0.50 * span
    fw_hosts = names["bnxt_re"][:max(2, per // 2)]
    irdma_bad = names["irdma"][-1]
    date = START.date().isoformat()

    summary_counts: dict[str, int] = defaultdict(int)
    family_hosts: dict[str, set] = defaultdict(set)
    probe_sets = {v: sorted({fn for name, (_, vv, frames) in TREES.items() if vv == v for _, fn, _ in frames})
                  for v in VENDORS}

    for host in sorted(vendor_of):
        v = vendor_of[host]
        hr = random.Random(f"{seed}:{host}")
        phase = hr.uniform(0, SNAP_S)
        wphase = hr.uniform(0, WINDOW_EVERY_S)
        boot = hr.randrange(1 << 20)
        boot_wall = t_start - hr.uniform(2, 20) * 86400
        calls = []  # (t, pid, ppid, tree, job_id, meta)
        pid = 4000 + hr.randrange(1000)
        t = t_start + hr.uniform(0, 120)
        job_n = 0
        while t < t_end - 60:
            job_n += 1
            tenant = "kestrel" if hr.random() < 0.30 else "orion"
            jtype = "bulk" if hr.random() < 0.5 else "allreduce"
            pushed = tenant == "kestrel" and t >= policy_time and "kestrel_memlock_enomem" in on
            fw = BNXT_FW_NEW if (host in fw_hosts and t >= fw_time) else NIC[v][1]
            meta = metadata_list({"tenant": tenant, "job_type": jtype, "memlock": "64M" if pushed else "unlimited",
                                  "nic": NIC[v][0], "nic_fw": fw})
            job_id = f"{host[-3:]}{job_n:03d}-{hr.randrange(10**6):06d}"
            dur = hr.uniform(20, 40) * 60
            ppid = pid
            pid += 1
            ranks = []
            for r in range(4):
                rpid = pid
                pid += 1
                rt = t + 0.2 * r
                plan = []  # (time, tree)

                def step(tree, dt_=0.03, plan=plan):
                    nonlocal rt
                    plan.append((rt, tree))
                    rt += dt_

                if v == "irdma":
                    step("irdma:query_device_ex_einval", 0.003)
                    step("irdma:query_device")
                else:
                    step(f"{v}:query_device_ex")
                step(f"{v}:alloc_pd")
                if v == "irdma":
                    step("irdma:reg_mr_cq_buf")
                if v == "mlx5":
                    step("mlx5:create_cq_comp_refused", 0.003)
                step(f"{v}:create_cq")
                step(f"{v}:reg_mr")
                step(f"{v}:reg_mr_memlock" if pushed else f"{v}:reg_mr")
                for q in range(2):
                    if v == "irdma":
                        step("irdma:reg_mr_qp_buf")
                    deep = jtype == "bulk" and q == 1
                    if (v == "bnxt_re" and deep and host in fw_hosts and rt >= fw_time
                            and "bnxt_qp_limit_einval" in on):
                        step("bnxt_re:create_qp_limits")
                    else:
                        step(f"{v}:create_qp")
                    step(f"{v}:modify_qp:RESET->INIT" + (":counter_enomem" if v != "mlx5" else ""))
                    if (host == irdma_bad and rt >= irdma_time and "irdma_modify_einval" in on
                            and hr.random() < 0.20):
                        step("irdma:modify_qp:INIT->RTR:hw_einval")
                    else:
                        step(f"{v}:modify_qp:INIT->RTR")
                    step(f"{v}:modify_qp:RTR->RTS")
                end = t + dur + 0.2 * r
                rt += hr.uniform(120, 240)
                while rt < end:
                    step(f"{v}:reg_mr")
                    step(f"{v}:dereg_mr")
                    rt += hr.uniform(120, 240)
                plan.append((end, f"{v}:dereg_mr"))
                plan.append((end + 0.03, f"{v}:dereg_mr"))
                # the rank's own death: its first fatal call
                death = next((tt for tt, tree in plan if TREE_FAMILY.get(tree) in FATAL), None)
                ranks.append((rpid, plan, death))
            deaths = [d for _, _, d in ranks if d is not None]
            kill = min(deaths) + 0.5 if deaths else None
            for rpid, plan, death in ranks:
                for tt, tree in plan:
                    if death is not None and tt > death:
                        break
                    if kill is not None and tt >= kill:
                        break
                    if tt >= t_end:
                        break
                    calls.append((tt, rpid, ppid, tree, job_id, meta))
            t = (kill if kill is not None else t + dur + 0.7) + hr.uniform(60, 180)
        calls.sort(key=lambda c: (c[0], c[1]))

        # ---- the tracer: counters, records
        nsnap = int((t_end - (t_start + phase)) // SNAP_S) + 1
        probes = probe_sets[v]
        inv = defaultdict(int)
        fails = defaultdict(int)
        errs = defaultdict(int)
        sig_seen: dict[tuple, list] = {}
        good_seen: dict[tuple, int] = defaultdict(int)
        records = []  # [t, pid, ppid, tree, job_id, meta, repeat, timed]
        for tt, rpid, ppid, tree, job_id, meta in calls:
            frames = TREES[tree][2]
            snap = int((tt - (t_start + phase)) // SNAP_S)
            if snap < 0:
                continue
            for _, fn, e in frames:
                inv[(snap, fn)] += 1
                if e:
                    fails[(snap, fn)] += 1
                    errs[(snap, fn, e)] += 1
            in_window = ((tt - t_start - wphase) % WINDOW_EVERY_S) < WINDOW_LEN_S
            failing = any(e for _, _, e in frames)
            if failing:
                key = (snap, tree)
                got = sig_seen.setdefault(key, [])
                if len(got) < K_PER_SIGNATURE:
                    rec = [tt, rpid, ppid, tree, job_id, meta, 1, in_window]
                    got.append(rec)
                    records.append(rec)
                else:
                    got[-1][6] += 1
            elif in_window:
                w = int((tt - t_start - wphase) // WINDOW_EVERY_S)
                if good_seen[(w, tree)] < GOOD_PER_WINDOW:
                    good_seen[(w, tree)] += 1
                    records.append([tt, rpid, ppid, tree, job_id, meta, 1, True])

        # events + truth
        ev = defaultdict(list)
        tr = defaultdict(list)
        for n, (tt, rpid, ppid, tree, job_id, meta, repeat, timed) in enumerate(records):
            op, _, frames = TREES[tree]
            t_ns = int(round(tt * 1e9))
            tick = t_ns - t_ns % 4_000_000
            base = t_ns if timed else tick
            ts, lat = _frames_timed(frames, base, timed)
            mono0 = base - int(boot_wall * 1e9)
            trace_id = f"{host}:{boot}:{rpid}:{n}"
            failing = any(e for _, _, e in frames)
            root_e = frames[0][2]
            end_ns = base + (lat[0] or 0)
            for seq, ((d, fn, e), off, la) in enumerate(zip(frames, ts, lat, strict=True)):
                ev["trace_id"].append(trace_id)
                ev["seq"].append(seq)
                ev["ts_ns"].append(mono0 + (off - base))
                ev["pid"].append(rpid)
                ev["tid"].append(rpid)
                ev["ppid"].append(ppid)
                ev["comm"].append("python3")
                ev["probe"].append(fn)
                ev["layer"].append(LAYER[fn])
                ev["depth"].append(d)
                ev["ret"].append(-ERRNO[e] if e else 0)
                ev["errno"].append(e)
                ev["latency_ns"].append(la)
                ev["arg"].append(ARGS[tree] if seq == 0 else None)
                ev["kind"].append("failure" if failing else "good")
                ev["command"].append(op)
                ev["exit_status"].append(-ERRNO[root_e] if root_e else 0)
                ev["start_time"].append(base)
                ev["end_time"].append(end_ns)
                ev["kernel_release"].append(KERNEL)
                ev["lost_events"].append(0)
                ev["job_id"].append(job_id)
                ev["metadata"].append(meta)
                ev["repeat_count"].append(repeat if repeat > 1 else None)
            fam = TREE_FAMILY.get(tree) if failing else None
            tr["trace_id"].append(trace_id)
            tr["kind"].append("failure" if failing else "good")
            tr["root_cause"].append(fam)
            tr["bifurcation_probe"].append(FAMILIES[fam][0] if fam else None)
            tr["bifurcation_errno"].append(FAMILIES[fam][1] if fam else None)
            tr["origin_layer"].append(FAMILIES[fam][2] if fam else None)
            tr["expected_error"].append(fam in ROUTINE if fam else False)
            tr["held_out"].append(False)
            if fam:
                summary_counts[fam] += 1
                family_hosts[fam].add(host)
        write_partition(_table(ev, EVENTS), out, "events", date, host, "part-0000.parquet", durable=False)
        write_partition(_table(tr, TRUTH), out, "truth", date, host, "part-0000.parquet", durable=False)

        # counters: every probe of the host's set in every snapshot
        cols = defaultdict(list)
        for s in range(nsnap):
            st = t_start + phase + (s + 1) * SNAP_S
            if st > t_end + SNAP_S:
                break
            st_ns = int(st * 1e9)
            for fn in probes:
                cols["snapshot_time"].append(st_ns)
                cols["interval_s"].append(SNAP_S)
                cols["kernel_release"].append(KERNEL)
                cols["vendor"].append(v)
                cols["probe_set"].append("rdma")
                cols["probe"].append(fn)
                cols["layer"].append(LAYER[fn])
                cols["live"].append(True)
                cols["invocations"].append(inv.get((s, fn), 0))
                f = fails.get((s, fn), 0)
                cols["failures"].append(f)
                cols["errno_counts"].append([{"errno": e, "count": errs[(s, fn, e)]} for e in sorted(ERRNO)
                                             if errs.get((s, fn, e))] if f else [])
                cols["lost_records"].append(0)
        cols["host"] = [host] * len(cols["probe"])
        counters = _table(cols, COUNTERS)
        path = write_partition(counters, out, "counters", date, host, "part-0000.parquet", durable=False)
        write_counter_buckets(path, counters.drop_columns(["host"]), durable=False)

    summary = {
        "roles": {**{v: names[v] for v in VENDORS}, "bnxt_fw_update": fw_hosts, "irdma_bad": [irdma_bad],
                  "kestrel_memlock_enomem": sorted(family_hosts.get("kestrel_memlock_enomem", [])),
                  "bnxt_qp_limit_einval": fw_hosts if "bnxt_qp_limit_einval" in on else [],
                  "irdma_modify_einval": [irdma_bad] if "irdma_modify_einval" in on else []},
        "vendor_of": vendor_of,
        "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
        "counts": dict(summary_counts),
        "faults": sorted(on),
        "policy_time": dt.datetime.fromtimestamp(policy_time, dt.UTC).isoformat(),
        "fw_update_time": dt.datetime.fromtimestamp(fw_time, dt.UTC).isoformat(),
        "irdma_fault_time": dt.datetime.fromtimestamp(irdma_time, dt.UTC).isoformat(),
        "start": START.isoformat(), "end": dt.datetime.fromtimestamp(t_end, dt.UTC).isoformat(),
    }
    (out / "fleetgen36.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


def _table(cols: dict, schema: pa.Schema) -> pa.Table:
    n = max(len(c) for c in cols.values())
    arrays = []
    for field in schema:
        values = cols.get(field.name)
        arrays.append(pa.array(values, type=field.type) if values is not None else pa.nulls(n, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)

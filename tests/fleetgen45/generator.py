"""Acceptance testing of a new rack beside production: a blind fleet generator (see __init__.py
for the angle and the decisions behind the truth).

Written from reference/rdma_control_path.yaml (the operations' trees, the errno lists, the
errno_conventions), tracer/schema.py (tables, written through its writers in the dataset layout
the ingest produces: <root>/<table>/date=D/host=H/part-*.parquet, a counter_buckets summary beside
every counters file), README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings. It imports only tracer.schema of the project.

The fleet
---------
16 mlx5 RoCE hosts (ConnectX-7, the in-tree mlx5 driver on 6.8.0-60-generic: user memory through
ib_umem_get directly, no OFED peer memory; GPU memory registered as dma-bufs through
UVERBS_METHOD_REG_DMABUF_MR, which needs the NVIDIA *open* kernel modules), observed for `hours`
(3) from 2027-02-08T08:00Z.

  production  fg45-p01..p12 (racks r01-r03), under Slurm. Two teams submit NCCL jobs of 2-4 hosts,
              4 ranks a host (comm python3, one per GPU/NIC), 20-40 minutes each: `lm`
              (image lm-train:2027.01) and `vision` (vision-train:2026.11; 2027.02 from 09:05,
              see the causes). The scheduler starts the oldest ready job on any free hosts; a job
              whose rank died is requeued under the same job id 60-120 s later; a host is free
              again 30-90 s after its job ended (epilog).
  new rack    fg45-n01..n04 (rack r09), delivered and powered on at 15 % of the window; its
              tracer starts at boot (probe set and agent installed by the provisioning image), and
              at 20 % the acceptance harness (a bash loop, comm bash) starts on every new host:
                run_tests.py      rdma-core's pyverbs test suite (comm run_tests.py: the
                                  script's name, as the kernel names a #! script) every 6 minutes
                                  on each host, one process a run, ~40 calls 1.5-2.5 s apart,
                                  three of them NEGATIVE TESTS that provoke an error on purpose and
                                  check it (the routine families neg_*); every run goes on after
                                  each, to its teardown.
                all_reduce_perf   nccl-tests across the four new hosts (4 ranks a host), every 12
                                  minutes, 3-4 minutes a run; like a production rank's start-up,
                                  then traffic, then teardown.
              No production job ever runs on the new rack (it is not yet in the Slurm partition).
  every host  rdma-healthd (one long-lived process) reads the port's 8 GID entries every minute,
              from its systemd timer (*:*:55), one entry each 0.5 s.

A rank's start-up (production and nccl-tests alike), 30 ms a call: alloc_pd; create_cq asking
for CQE compression (refused, see cqe_comp_refused) and created again 3 ms later without; reg_mr
of a 2 MiB pinned host staging buffer (one pin_user_pages_fast call: 512 pages); two GPU buffers
registered as dma-bufs (reg_dmabuf_mr); one RC QP to the same local rank of every other host of
its job (rail all-to-all: create_qp each), then RESET->INIT, INIT->RTR and RTR->RTS per QP
(modify_qp, arg the transition). Then until the job's end a reg_dmabuf_mr every 60-120 s and a
reconnect every 4-8 minutes (destroy_qp of the oldest QP, create_qp and its three transitions);
at a healthy end the teardown: destroy_qp each QP, dereg_mr each MR, dealloc_pd. A rank that dies
of a call ends its job: the launcher kills the job's other ranks 0.5-1.5 s after the fatal call
returned (a call not returned by then never returns: neither counted nor recorded).

The run_tests.py run (one process): alloc_pd, create_cq (no compression), reg_mr, dereg_mr, the
negative test neg_unmapped_va (reg_mr of an address range nothing is mapped at), reg_mr, create_qp,
the loopback QP's RESET->INIT, INIT->RTR (its own GID: the neighbour is itself), RTR->RTS,
destroy_qp, create_qp, neg_illegal_transition (modify_qp RESET->RTS), destroy_qp, neg_pd_in_use
(dealloc_pd while the MR still holds the PD: EBUSY), dereg_mr, dealloc_pd, then a second test
class (alloc_pd, create_cq, reg_mr x2, two loopback QPs through RTS, their traffic check, the
teardown of all) -- and the process exits. Every negative test is followed by more tests.

The call trees (TREES) are the reference's chains as this tracer sees them (probe set
`rdma-fg45`: fexit on every function of TREES; statics the reference marks as usually inlined --
verbs.c's rdma_fill_sgid_attr and create_qp, mlx5's create_qp, _create_user_qp,
destroy_qp_common, validate_rd_atomic, ib_resolve_unicast_gid_dmac -- are no frames, and the
rdma_counter_unbind_qp of destroy_qp, whose -EINVAL for a QP without a counter its caller
ignores, is not in the set). Layers (LAYER) by source file: uverbs_*.c -> uverbs; the rest of
drivers/infiniband/core, mm/gup.c, lib/scatterlist.c and dma-buf -> core; hw/mlx5 and mlx5/core
-> driver.

The tracer: 5-second snapshots at a per-host phase; counters for every probe of the set in every
snapshot, exact (every call of a live probe, recorded or not); a tree is a record attempt when a
frame fails: the first K=3 of a tree shape in a snapshot are records, the rest counted in the
kernel and carried by the snapshot's third record of that shape as its repeat_count (null = 1);
good trees only when their root entered a capture window (the first 30 s of every 5 minutes at a
per-host phase, at most 6 of a tree a window). A tree whose root entered a window is timed (ts_ns
and latency_ns per frame); outside, every frame carries the 4 ms tick its root returned in and
latency null. No tree exceeds the slot (lost_events 0), the ring never overflows (lost_records
0). A record belongs to the snapshot holding its root's return. Aggregation is by tree shape over
every process; the generator keeps callers of one shape out of one snapshot where it matters
(run_tests.py's unmapped-VA test is moved away from n03's failing GPU registrations) and counts
any mixed aggregate left (`mixed_aggregates`, which the tests require to be 0), so every record's
truth and weight are its own caller's.

Routine (expected_error = True, root_cause = the family; the process goes on each time)
-------------------------------------------------------------------------------------
  cqe_comp_refused        every NCCL rank (production and nccl-tests, all 16 hosts): create_cq asks
                          CQE compression, which this NIC reports no cap for (an assumption; the
                          errno and condition are the reference's, create_cq_user "-EOPNOTSUPP CQE
                          compression or 128B padding requested without HW cap"), after its buffer
                          is pinned and the doorbell mapped; the umem is released, the uobject
                          aborted; the CQ is created again without, 3 ms later.
  gid_slot_empty          every host, every minute: rdma-healthd reads GID entries 0-7; 6 and 7 are
                          empty (ENODATA at rdma_get_gid_attr, reference query_gid).
  neg_unmapped_va         new rack, run_tests.py only: reg_mr of an unmapped range; the GUP pin
                          fails at once, EFAULT at pin_user_pages_fast ("pin_user_pages_fast()
                          fails ... Typical triggers: unmapped VA"), returned as is by ib_umem_get,
                          mlx5_ib_reg_user_mr and ib_uverbs_reg_mr. The test expects it.
  neg_illegal_transition  new rack, run_tests.py only: modify_qp RESET->RTS; ib_modify_qp_is_ok
                          rejects it (returns false), EINVAL at mlx5_ib_modify_qp, passed up by
                          ib_security_modify_qp, _ib_modify_qp, ib_modify_qp_with_udata,
                          modify_qp and ib_uverbs_modify_qp. The test expects it.
  neg_pd_in_use           new rack, run_tests.py only: dealloc_pd of a PD an MR still uses; EBUSY
                          at uverbs_free_pd ("pd->usecnt != 0"), up through destroy_hw_idr_uobject,
                          uverbs_destroy_uobject, uobj_destroy, __uobj_get_destroy (which puts the
                          lookup), __uobj_perform_destroy and ib_uverbs_dealloc_pd. The test
                          expects it, deregisters the MR and deallocates the PD (cleanup calls),
                          and the suite goes on with its next test class a few seconds later.

Root causes (expected_error = False; fatal to the process)
----------------------------------------------------------
  gpu_driver_flavor       n03, from its power-on to the fix (80 % of the window): provisioned with
                          the proprietary NVIDIA kernel modules instead of the open ones, so CUDA
                          cannot export GPU memory as a dma-buf and NCCL registers the GPU buffer
                          with plain reg_mr: GUP refuses device memory, EFAULT at
                          pin_user_pages_fast ("Typical triggers: ... device (e.g. GPU) memory";
                          upstream has no peer-memory fallback) -- the very tree of neg_unmapped_va.
                          Every nccl-tests rank on n03 dies at it, and with it the run. Met only by
                          all_reduce_perf: the pyverbs suite registers host memory only (its dma-buf
                          tests need a DRM render node, absent here, and are skipped). At the fix
                          the open modules are installed (the flavor in the nccl-tests metadata
                          changes); later runs register through dma-bufs and pass.
  rd_atomic_over_cap      production, team vision's jobs first started from 09:05 (its new image's
                          UCX config asks max_dest_rd_atomic beyond the device's cap) until 10:15
                          (the team cancels and resubmits with the old image): every INIT->RTR of
                          those jobs fails EINVAL at mlx5_ib_modify_qp ("validate_rd_atomic
                          fails"; validate_rd_atomic inlined, ib_modify_qp_is_ok passes) -- the
                          operation, origin and errno of neg_illegal_transition, at another
                          transition. Fatal to the rank; the job crash-loops through requeues on
                          whatever production hosts are free.
  memlock_after_restart   p05, from 09:40 to 10:30: a configuration run restarted slurmd there
                          without its LimitMEMLOCK=infinity drop-in, so jobs started on p05 run
                          with the 64 KiB default; their first create_cq's buffer (256 KiB) is over
                          it, and ib_umem_get refuses it before pinning: ENOMEM ("pinned_vm +
                          npages > RLIMIT_MEMLOCK without CAP_IPC_LOCK"), up through create_cq_user,
                          mlx5_ib_create_cq, create_cq and ib_uverbs_create_cq (uobject aborted).
                          Fatal; p05 becomes a black hole, free again a minute after each crash,
                          taking the next ready job and killing it.

Variants: `defect="rack"` gives every new host the proprietary modules (the rack's provisioning
image); `rack=1` has n03 alone in acceptance, back from repair (the other three new hosts do not
exist; nccl-tests runs its 4 ranks over the NIC in loopback, one QP a rank), and there the suite's
unmapped-range records are labelled gpu_driver_flavor (LONE_HOST in __init__.py).

Truth: one row per record, keyed (host, trace_id), in the same date/host partition and part file
as the record's events. root_cause the family (ROOT_CAUSES or ROUTINE) of the record's caller,
null for good records; bifurcation = origin (the deepest failing frame none of whose callees
failed; its parent edge is in the good trees of its operation); origin_layer its layer. Good
records: kind good, no cause, expected_error False, held_out False. faults=False (the control):
n03 with the open modules from the start, vision's image without the bad setting, p05's slurmd
restarted correctly -- the fleet, the new rack, its negative tests and the routine the same.
`faults` may also be a list of cause names to keep.
"""

from __future__ import annotations

import bisect
import datetime as dt
import heapq
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import ERRNO_COUNTS_TYPE, METADATA_TYPE, write_counter_buckets, write_partition

# ------------------------------------------------------------------------------------------------
# the fleet's constants
# ------------------------------------------------------------------------------------------------
START = dt.datetime(2027, 2, 8, 8, 0, tzinfo=dt.UTC)
RELEASE = "6.8.0-60-generic"
PROBE_SET = "rdma-fg45"
PROD = [f"fg45-p{i:02d}" for i in range(1, 13)]
NEW = [f"fg45-n{i:02d}" for i in range(1, 5)]
HOSTS = PROD + NEW
GPU_HOST = "fg45-n03"  # gpu_driver_flavor
MEMLOCK_HOST = "fg45-p05"  # memlock_after_restart
RACK = {h: f"r0{1 + i // 4}" for i, h in enumerate(PROD)} | {h: "r09" for h in NEW}
RANKS = 4  # ranks (GPUs/NICs) a host in a job
SNAP_S = 5.0
WINDOW_EVERY_S, WINDOW_LEN_S, WINDOW_CAP = 300.0, 30.0, 6
K = 3  # records of one tree shape a snapshot; the rest aggregated into the third
TICK_NS = 4_000_000

ERRNO = {"EFAULT": 14, "EINVAL": 22, "EBUSY": 16, "ENOMEM": 12, "EOPNOTSUPP": 95, "ENODATA": 61}

# ------------------------------------------------------------------------------------------------
# call trees (reference/rdma_control_path.yaml): name -> (operation, arg, [(depth, function, errno)])
# ------------------------------------------------------------------------------------------------


def _f(frames, failing=(), errno=None):
    """Frames [(depth, fn)] with `errno` on the frames whose index is in `failing`."""
    return [(d, fn, errno if i in failing else None) for i, (d, fn) in enumerate(frames)]


_ALLOC_PD = [(0, "ib_uverbs_alloc_pd"), (1, "uverbs_request"), (1, "rdma_alloc_begin_uobject"),
             (2, "ib_rdmacg_try_charge"), (1, "mlx5_ib_alloc_pd"), (2, "mlx5_cmd_exec"), (1, "rdma_restrack_add"),
             (1, "uverbs_response")]
_CQ_HEAD = [(0, "ib_uverbs_create_cq"), (1, "create_cq"), (2, "rdma_alloc_begin_uobject"),
            (3, "ib_rdmacg_try_charge"), (2, "mlx5_ib_create_cq"), (3, "create_cq_user"), (4, "ib_umem_get")]
_CREATE_CQ = _CQ_HEAD + [(5, "pin_user_pages_fast"), (4, "mlx5_ib_db_map_user"), (3, "mlx5_comp_eqn_get"),
                         (3, "mlx5_core_create_cq"), (2, "rdma_restrack_add"), (2, "uverbs_response")]
# CQE compression refused after the pin and the doorbell map: the umem released, the uobject aborted
_CQ_COMP_REFUSED = _CQ_HEAD + [(5, "pin_user_pages_fast"), (4, "mlx5_ib_db_map_user"), (4, "ib_umem_release"),
                               (2, "rdma_alloc_abort_uobject")]
# RLIMIT_MEMLOCK: ib_umem_get refuses before pinning
_CQ_MEMLOCK = _CQ_HEAD + [(2, "rdma_alloc_abort_uobject")]
_MR_HEAD = [(0, "ib_uverbs_reg_mr"), (1, "rdma_alloc_begin_uobject"), (2, "ib_rdmacg_try_charge"),
            (1, "rdma_lookup_get_uobject"), (1, "mlx5_ib_reg_user_mr"), (2, "ib_umem_get"), (3, "pin_user_pages_fast")]
_REG_MR = _MR_HEAD + [(3, "sg_alloc_append_table_from_pages"), (2, "create_real_mr"), (3, "alloc_cacheable_mr"),
                      (3, "mlx5r_umr_update_mr_pas"), (1, "rdma_restrack_add"), (1, "rdma_lookup_put_uobject"),
                      (1, "uverbs_response")]
# the GUP pin refused: the umem's release, the PD's lookup put, the uobject aborted
_MR_PIN_EFAULT = _MR_HEAD + [(3, "__ib_umem_release"), (1, "rdma_lookup_put_uobject"),
                             (1, "rdma_alloc_abort_uobject")]
_REG_DMABUF = [(0, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR"), (1, "mlx5_ib_reg_user_mr_dmabuf"),
               (2, "ib_umem_dmabuf_get"), (3, "dma_buf_get"), (3, "dma_buf_dynamic_attach"), (2, "alloc_cacheable_mr"),
               (2, "mlx5_ib_init_dmabuf_mr"), (3, "pagefault_dmabuf_mr"), (4, "ib_umem_dmabuf_map_pages"),
               (4, "mlx5r_umr_update_mr_pas"), (1, "rdma_restrack_add"), (1, "uverbs_finalize_uobj_create")]
_CREATE_QP = [(0, "ib_uverbs_create_qp"), (1, "create_qp"), (2, "rdma_alloc_begin_uobject"), (3, "ib_rdmacg_try_charge"),
              (2, "rdma_lookup_get_uobject"), (2, "rdma_lookup_get_uobject"), (2, "ib_create_qp_user"),
              (3, "mlx5_ib_create_qp"), (4, "create_user_qp"), (5, "ib_umem_get"), (6, "pin_user_pages_fast"),
              (5, "mlx5_ib_db_map_user"), (5, "mlx5_qpc_create_qp"), (6, "mlx5_cmd_exec"),
              (3, "ib_create_qp_security"), (3, "rdma_restrack_add"), (2, "ib_qp_usecnt_inc"),
              (2, "rdma_lookup_put_uobject"), (2, "uverbs_response")]
_MQ_HEAD = [(0, "ib_uverbs_modify_qp"), (1, "modify_qp"), (2, "rdma_lookup_get_uobject")]
_MQ_DRIVER = [(5, "mlx5_ib_modify_qp"), (6, "ib_modify_qp_is_ok"), (6, "__mlx5_ib_modify_qp")]
_MQ_FW = [(7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec")]
_MQ_INIT = _MQ_HEAD + [(2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp"), (4, "rdma_counter_bind_qp_auto"),
                       (4, "ib_security_modify_qp")] + _MQ_DRIVER + _MQ_FW + [(2, "rdma_lookup_put_uobject")]
_MQ_RTR_CORE = [(2, "copy_ah_attr_from_uverbs"), (2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp"),
                (4, "rdma_get_gid_attr"), (4, "ib_resolve_eth_dmac"), (5, "rdma_addr_find_l2_eth_by_grh"),
                (4, "rdma_lag_get_ah_roce_slave"), (4, "ib_security_modify_qp")]
_MQ_RTR = (_MQ_HEAD + _MQ_RTR_CORE + _MQ_DRIVER + [(7, "mlx5_set_path")] + _MQ_FW
           + [(4, "rdma_lag_put_ah_roce_slave"), (2, "rdma_lookup_put_uobject")])
_MQ_RTS = _MQ_HEAD + [(2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp"),
                      (4, "ib_security_modify_qp")] + _MQ_DRIVER + _MQ_FW + [(2, "rdma_lookup_put_uobject")]
# RESET->RTS: ib_modify_qp_is_ok returns false, mlx5_ib_modify_qp -EINVAL
_MQ_ILLEGAL = _MQ_HEAD + [(2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp"), (4, "ib_security_modify_qp"),
                          (5, "mlx5_ib_modify_qp"), (6, "ib_modify_qp_is_ok"), (2, "rdma_lookup_put_uobject")]
# INIT->RTR with max_dest_rd_atomic over the cap: the transition is fine, validate_rd_atomic (inlined) not
_MQ_RD_ATOMIC = (_MQ_HEAD + _MQ_RTR_CORE + [(5, "mlx5_ib_modify_qp"), (6, "ib_modify_qp_is_ok")]
                 + [(4, "rdma_lag_put_ah_roce_slave"), (2, "rdma_lookup_put_uobject")])
_DESTROY_QP = [(0, "ib_uverbs_destroy_qp"), (1, "__uobj_get_destroy"), (2, "rdma_lookup_get_uobject"),
               (2, "uobj_destroy"), (3, "uverbs_destroy_uobject"), (4, "destroy_hw_idr_uobject"), (5, "uverbs_free_qp"),
               (6, "ib_destroy_qp_user"), (7, "mlx5_ib_destroy_qp"), (8, "mlx5_core_destroy_qp"), (9, "mlx5_cmd_exec"),
               (7, "ib_qp_usecnt_dec"), (7, "rdma_restrack_del"), (6, "ib_uverbs_release_uevent"),
               (5, "ib_rdmacg_uncharge"), (1, "rdma_lookup_put_uobject")]
_DEREG_MR = [(0, "ib_uverbs_dereg_mr"), (1, "__uobj_perform_destroy"), (2, "__uobj_get_destroy"),
             (3, "rdma_lookup_get_uobject"), (3, "uobj_destroy"), (4, "uverbs_destroy_uobject"),
             (5, "destroy_hw_idr_uobject"), (6, "uverbs_free_mr"), (7, "ib_dereg_mr_user"), (8, "mlx5_ib_dereg_mr"),
             (9, "mlx5_revoke_mr"), (10, "mlx5r_umr_revoke_mr"), (9, "ib_umem_release"), (6, "ib_rdmacg_uncharge"),
             (1, "rdma_lookup_put_uobject")]
_PD_DESTROY_HEAD = [(0, "ib_uverbs_dealloc_pd"), (1, "__uobj_perform_destroy"), (2, "__uobj_get_destroy"),
                    (3, "rdma_lookup_get_uobject"), (3, "uobj_destroy"), (4, "uverbs_destroy_uobject"),
                    (5, "destroy_hw_idr_uobject"), (6, "uverbs_free_pd")]
_DEALLOC_PD = _PD_DESTROY_HEAD + [(7, "ib_dealloc_pd_user"), (8, "mlx5_ib_dealloc_pd"), (9, "mlx5_cmd_dealloc_pd"),
                                  (10, "mlx5_cmd_exec"), (8, "rdma_restrack_del"), (6, "ib_rdmacg_uncharge"),
                                  (4, "remove_handle_idr_uobject"), (2, "rdma_lookup_put_uobject")]
# pd->usecnt != 0: uverbs_free_pd -EBUSY up to the handler; __uobj_get_destroy puts the lookup
_DEALLOC_PD_BUSY = _PD_DESTROY_HEAD + [(3, "rdma_lookup_put_uobject")]
_QUERY_GID = [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"), (1, "rdma_get_gid_attr"),
              (1, "rdma_read_gid_attr_ndev_rcu"), (1, "rdma_put_gid_attr")]

TREES: dict[str, tuple[str, str | None, list[tuple[int, str, str | None]]]] = {
    "alloc_pd": ("alloc_pd", None, _f(_ALLOC_PD)),
    "create_cq": ("create_cq", None, _f(_CREATE_CQ)),
    "create_cq_comp_refused": ("create_cq", None, _f(_CQ_COMP_REFUSED, {0, 1, 4, 5}, "EOPNOTSUPP")),
    "create_cq_memlock": ("create_cq", None, _f(_CQ_MEMLOCK, {0, 1, 4, 5, 6}, "ENOMEM")),
    "reg_mr": ("reg_mr", None, _f(_REG_MR)),
    "reg_mr_unmapped_va": ("reg_mr", None, _f(_MR_PIN_EFAULT, {0, 4, 5, 6}, "EFAULT")),
    "reg_mr_gpu_va": ("reg_mr", None, _f(_MR_PIN_EFAULT, {0, 4, 5, 6}, "EFAULT")),
    "reg_dmabuf_mr": ("reg_dmabuf_mr", None, _f(_REG_DMABUF)),
    "create_qp": ("create_qp", None, _f(_CREATE_QP)),
    "modify_qp_init": ("modify_qp", "RESET->INIT", _f(_MQ_INIT)),
    "modify_qp_rtr": ("modify_qp", "INIT->RTR", _f(_MQ_RTR)),
    "modify_qp_rts": ("modify_qp", "RTR->RTS", _f(_MQ_RTS)),
    "modify_qp_illegal": ("modify_qp", "RESET->RTS", _f(_MQ_ILLEGAL, {0, 1, 3, 4, 5, 6}, "EINVAL")),
    "modify_qp_rd_atomic": ("modify_qp", "INIT->RTR", _f(_MQ_RD_ATOMIC, {0, 1, 4, 5, 10, 11}, "EINVAL")),
    "destroy_qp": ("destroy_qp", None, _f(_DESTROY_QP)),
    "dereg_mr": ("dereg_mr", None, _f(_DEREG_MR)),
    "dealloc_pd": ("dealloc_pd", None, _f(_DEALLOC_PD)),
    "dealloc_pd_busy": ("dealloc_pd", None, _f(_DEALLOC_PD_BUSY, {0, 1, 2, 4, 5, 6, 7}, "EBUSY")),
    "query_gid": ("query_gid", None, _f(_QUERY_GID)),
    "query_gid_empty": ("query_gid", None, _f(_QUERY_GID[:2], {0, 1}, "ENODATA")),
}
# return values that are no errno: ib_modify_qp_is_ok is a bool (1 true, 0 false)
FALSE_FRAMES = {("modify_qp_illegal", "ib_modify_qp_is_ok")}
TRUE_FUNCTIONS = {"ib_modify_qp_is_ok"}

_UVERBS = {"create_cq", "create_qp", "modify_qp", "uverbs_request", "uverbs_response", "copy_ah_attr_from_uverbs",
           "uverbs_free_pd", "uverbs_free_qp", "uverbs_free_mr", "uverbs_finalize_uobj_create",
           "ib_uverbs_release_uevent"}
_DRIVER_PREFIX = ("mlx5", "__mlx5", "create_cq_user", "create_user_qp", "create_real_mr", "alloc_cacheable_mr",
                  "pagefault_dmabuf_mr")


def _layer(fn: str) -> str:
    if fn.startswith("ib_uverbs_") or fn in _UVERBS:
        return "uverbs"
    if fn.startswith(_DRIVER_PREFIX):
        return "driver"
    return "core"


PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
LAYER = {fn: _layer(fn) for fn in PROBES}

# family -> (origin probe, errno, origin layer)
ROUTINE = {
    "cqe_comp_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
    "gid_slot_empty": ("rdma_get_gid_attr", "ENODATA", "core"),
    "neg_unmapped_va": ("pin_user_pages_fast", "EFAULT", "core"),
    "neg_illegal_transition": ("mlx5_ib_modify_qp", "EINVAL", "driver"),
    "neg_pd_in_use": ("uverbs_free_pd", "EBUSY", "uverbs"),
}
ROOT_CAUSES = {
    "gpu_driver_flavor": ("pin_user_pages_fast", "EFAULT", "core"),
    "rd_atomic_over_cap": ("mlx5_ib_modify_qp", "EINVAL", "driver"),
    "memlock_after_restart": ("ib_umem_get", "ENOMEM", "core"),
}
FAMILIES = {**ROUTINE, **ROOT_CAUSES}
TREE_FAMILY = {
    "create_cq_comp_refused": "cqe_comp_refused",
    "query_gid_empty": "gid_slot_empty",
    "reg_mr_unmapped_va": "neg_unmapped_va",
    "modify_qp_illegal": "neg_illegal_transition",
    "dealloc_pd_busy": "neg_pd_in_use",
    "reg_mr_gpu_va": "gpu_driver_flavor",
    "modify_qp_rd_atomic": "rd_atomic_over_cap",
    "create_cq_memlock": "memlock_after_restart",
}
# the look-alikes: a negative test and a root cause with one operation, origin and errno
LOOK_ALIKES = {"neg_unmapped_va": "gpu_driver_flavor", "neg_illegal_transition": "rd_atomic_over_cap"}
NEGATIVE_TESTS = ("neg_unmapped_va", "neg_illegal_transition", "neg_pd_in_use")

# call durations (s) of a tree
DUR = {"alloc_pd": 0.0002, "create_cq": 0.0004, "create_cq_comp_refused": 0.0003, "create_cq_memlock": 0.00004,
       "reg_mr": 0.002, "reg_mr_unmapped_va": 0.00005, "reg_mr_gpu_va": 0.00005, "reg_dmabuf_mr": 0.005,
       "create_qp": 0.001, "modify_qp_init": 0.0003, "modify_qp_rtr": 0.0005, "modify_qp_rts": 0.0003,
       "modify_qp_illegal": 0.00004, "modify_qp_rd_atomic": 0.0002, "destroy_qp": 0.0006, "dereg_mr": 0.0008,
       "dealloc_pd": 0.0002, "dealloc_pd_busy": 0.00004, "query_gid": 0.00003, "query_gid_empty": 0.00002}


def _failing(tree: str) -> bool:
    return any(e for _, _, e in TREES[tree][2])


# ------------------------------------------------------------------------------------------------
# the process model
# ------------------------------------------------------------------------------------------------
class Call:
    __slots__ = ("host", "t", "dur", "pid", "ppid", "comm", "job", "meta", "tree", "label")

    def __init__(self, host, t, dur, pid, ppid, comm, job, meta, tree, label):
        self.host, self.t, self.dur, self.pid, self.ppid = host, t, dur, pid, ppid
        self.comm, self.job, self.meta, self.tree, self.label = comm, job, meta, tree, label

    @property
    def ret(self) -> float:
        return self.t + self.dur


class _Pids:
    def __init__(self, rng: random.Random):
        self.next = {h: rng.randrange(3000, 9000) for h in HOSTS}
        self.rng = rng

    def __call__(self, host: str) -> int:
        self.next[host] += self.rng.randrange(3, 40)
        return self.next[host]


def _times(hours: float) -> dict[str, float]:
    end = hours * 3600.0
    return {
        "end": end,
        "join": 0.15 * end,  # the new rack powered on
        "harness": 0.20 * end,  # the acceptance harness starts
        "fix": 0.80 * end,  # n03's open modules installed
        "vision_from": 3900.0 * hours / 3.0,  # 09:05
        "vision_to": 8100.0 * hours / 3.0,  # 10:15
        "memlock_from": 6000.0 * hours / 3.0,  # 09:40
        "memlock_to": 9000.0 * hours / 3.0,  # 10:30
    }


def _rank(rng, host, pid, ppid, comm, job, meta, t0, peers, healthy_end, *, memlock_low=False,
          gpu_pinned=False, rd_atomic=False, steady=True):
    """One NCCL rank's calls [(Call)] from t0, and the return time of its fatal call (or None)."""
    calls: list[Call] = []

    def call(t, tree, label=None):
        calls.append(Call(host, t, DUR[tree] * rng.uniform(0.8, 1.25), pid, ppid, comm, job, meta, tree, label))
        return calls[-1]

    t = t0
    call(t, "alloc_pd")
    t += 0.03
    if memlock_low:
        c = call(t, "create_cq_memlock", "memlock_after_restart")
        return calls, c.ret
    call(t, "create_cq_comp_refused", "cqe_comp_refused")
    call(t + 0.003, "create_cq")
    t += 0.03
    call(t, "reg_mr")
    mrs = 1
    t += 0.03
    if gpu_pinned:
        c = call(t, "reg_mr_gpu_va", "gpu_driver_flavor")
        return calls, c.ret
    for _ in range(2):
        call(t, "reg_dmabuf_mr")
        mrs += 1
        t += 0.03
    qps = len(peers)
    for _ in range(qps):
        call(t, "create_qp")
        t += 0.03
    t += rng.uniform(0.05, 0.3)  # the QP info exchange over the bootstrap
    for _ in range(qps):
        call(t, "modify_qp_init")
        t += 0.03
        if rd_atomic:
            c = call(t, "modify_qp_rd_atomic", "rd_atomic_over_cap")
            return calls, c.ret
        call(t, "modify_qp_rtr")
        t += 0.03
        call(t, "modify_qp_rts")
        t += 0.03
    if steady:
        next_reg = t + rng.uniform(60, 120)
        next_conn = t + rng.uniform(240, 480)
        while min(next_reg, next_conn) < healthy_end - 5:
            if next_reg <= next_conn:
                call(next_reg, "reg_dmabuf_mr")
                mrs += 1
                next_reg += rng.uniform(60, 120)
            else:
                tc = next_conn
                for tree in ("destroy_qp", "create_qp", "modify_qp_init", "modify_qp_rtr", "modify_qp_rts"):
                    call(tc, tree)
                    tc += 0.03
                next_conn += rng.uniform(240, 480)
    t = max(t, healthy_end - 1.0)
    for tree, n in (("destroy_qp", qps), ("dereg_mr", mrs), ("dealloc_pd", 1)):
        for _ in range(n):
            call(t, tree)
            t += 0.01
    return calls, None


def _kill(ranks: list[tuple[list[Call], float | None]], rng) -> tuple[list[Call], float, bool]:
    """A job's ranks' calls as the launcher leaves them: after the first fatal call returned, every
    rank is killed 0.5-1.5 s later (calls not returned by then never return). (calls, end, failed)"""
    fatal = [f for _, f in ranks if f is not None]
    if not fatal:
        calls = [c for cs, _ in ranks for c in cs]
        return calls, max(c.ret for c in calls) + 0.5, False
    kill = min(fatal) + rng.uniform(0.5, 1.5)
    calls = [c for cs, _ in ranks for c in cs if c.ret <= kill]
    return calls, kill, True


def _meta(**kv) -> tuple:
    return tuple(sorted(kv.items()))


def _production(rng, pids, tm, faults) -> tuple[list[Call], dict]:
    """The Slurm partition of p01-p12, from 30 minutes before the window (jobs already running)."""
    calls: list[Call] = []
    free_at = {h: -1800.0 + rng.uniform(0, 300) for h in PROD}
    pending: list[tuple[float, int, dict]] = []
    serial = [0]
    stats = {"jobs": 0, "attempts": 0, "failed_attempts": 0, "memlock_jobs": 0, "vision_new_attempts": 0}

    def submit(ready):
        serial[0] += 1
        job = {"id": str(51000 + serial[0]), "team": "lm" if rng.random() < 0.55 else "vision",
               "n": rng.choice([2, 2, 3, 4]), "dur": rng.uniform(1200, 2400), "first": None, "new_image": False}
        heapq.heappush(pending, (ready, serial[0], job))

    for _ in range(6):
        submit(-1800.0)
    while pending:
        ready, order, job = heapq.heappop(pending)
        t_start = max(ready, sorted(free_at.values())[job["n"] - 1])
        if t_start >= tm["end"]:
            break
        if job["first"] is None:
            job["first"] = t_start
            job["new_image"] = (job["team"] == "vision" and "rd_atomic_over_cap" in faults
                                and tm["vision_from"] <= t_start < tm["vision_to"])
            stats["jobs"] += 1
        stats["attempts"] += 1
        new_image = job["new_image"] and t_start < tm["vision_to"]
        stats["vision_new_attempts"] += new_image
        image = {"lm": "lm-train:2027.01", "vision": "vision-train:2027.02" if new_image else "vision-train:2026.11"}
        hosts = rng.sample(sorted(h for h in PROD if free_at[h] <= t_start), job["n"])
        healthy_end = t_start + job["dur"]
        launcher = {h: pids(h) for h in hosts}
        ranks = []
        low = set()
        for h in hosts:
            memlock_low = ("memlock_after_restart" in faults and h == MEMLOCK_HOST
                           and tm["memlock_from"] <= t_start < tm["memlock_to"])
            if memlock_low:
                low.add(h)
            meta = _meta(team=job["team"], image=image[job["team"]], rack=RACK[h], gpu_driver_flavor="open")
            for r in range(RANKS):
                ranks.append(_rank(rng, h, pids(h), launcher[h], "python3", job["id"], meta,
                                   t_start + 0.5 + 0.2 * r + rng.uniform(0, 0.05), [x for x in hosts if x != h],
                                   healthy_end, memlock_low=memlock_low, rd_atomic=new_image))
        stats["memlock_jobs"] += bool(low)
        job_calls, end, failed = _kill(ranks, rng)
        calls.extend(job_calls)
        for h in hosts:
            free_at[h] = end + rng.uniform(30, 90)
        if failed:
            stats["failed_attempts"] += 1
            heapq.heappush(pending, (end + rng.uniform(60, 120), order, job))
        while len(pending) < 6:
            submit(t_start)
    return calls, stats


def _agent(rng, pids, host, t_from, t_end) -> list[Call]:
    """rdma-healthd: GID entries 0-7 every minute at :55, 0.5 s apart; 6 and 7 empty."""
    pid, meta = pids(host), _meta(rack=RACK[host])
    calls = []
    minute = np.floor(t_from / 60.0) * 60.0
    while minute < t_end:
        for i in range(8):
            t = minute + 55.0 + 0.5 * i + rng.uniform(0, 0.002)
            if t_from <= t < t_end:
                tree = "query_gid_empty" if i >= 6 else "query_gid"
                calls.append(Call(host, t, DUR[tree], pid, 1, "rdma-healthd", None, meta, tree,
                                  "gid_slot_empty" if i >= 6 else None))
        minute += 60.0
    return calls


_SUITE = [  # (tree, label) of one run_tests.py run, in order
    ("alloc_pd", None), ("create_cq", None), ("reg_mr", None), ("dereg_mr", None),
    ("reg_mr_unmapped_va", "neg_unmapped_va"), ("reg_mr", None), ("create_qp", None),
    ("modify_qp_init", None), ("modify_qp_rtr", None), ("modify_qp_rts", None), ("destroy_qp", None),
    ("create_qp", None), ("modify_qp_illegal", "neg_illegal_transition"), ("destroy_qp", None),
    ("dealloc_pd_busy", "neg_pd_in_use"), ("dereg_mr", None), ("dealloc_pd", None),
    ("alloc_pd", None), ("create_cq", None), ("reg_mr", None), ("reg_mr", None),
    ("create_qp", None), ("create_qp", None), ("modify_qp_init", None), ("modify_qp_init", None),
    ("modify_qp_rtr", None), ("modify_qp_rtr", None), ("modify_qp_rts", None), ("modify_qp_rts", None),
    ("destroy_qp", None), ("destroy_qp", None), ("dereg_mr", None), ("dereg_mr", None), ("dealloc_pd", None),
]
_SUITE_CLEANUP_AFTER_BUSY = {15, 16}  # dereg_mr, dealloc_pd right after the EBUSY test (cleanup, 0.2 s)


def _suite_run(rng, host, pid, ppid, job, t0) -> list[Call]:
    meta = _meta(stage="acceptance", rack=RACK[host], suite="rdma-core-tests")
    calls, t = [], t0
    for i, (tree, label) in enumerate(_SUITE):
        calls.append(Call(host, t, DUR[tree] * rng.uniform(0.8, 1.25), pid, ppid, "run_tests.py", job, meta, tree,
                          label))
        t += 0.2 if i + 1 in _SUITE_CLEANUP_AFTER_BUSY else rng.uniform(1.5, 2.5)
    return calls


def _suite_offset(tree: str) -> int:
    return next(i for i, (t, _) in enumerate(_SUITE) if t == tree)


def _acceptance(rng, pids, tm, faults, rack: list[str], defect: list[str]) -> tuple[list[Call], dict]:
    """The new rack's acceptance harness: nccl-tests every 12 minutes across n01-n04, the pyverbs
    suite every 6 minutes on each host."""
    calls: list[Call] = []
    stats = {"nccl_runs": 0, "nccl_failed": 0, "suite_runs": 0, "suite_moved": 0}
    harness = {h: pids(h) for h in rack}
    gpu_fail_times: dict[str, list[float]] = {h: [] for h in rack}
    t = tm["harness"] + 120.0
    n = 0
    while t < tm["end"] - 60:
        n += 1
        job = f"acc-nccl-{n:03d}"
        flavor_bad = "gpu_driver_flavor" in faults and t < tm["fix"]
        ranks = []
        prted = {h: pids(h) for h in rack}
        healthy_end = t + rng.uniform(180, 240)
        for h in rack:
            pinned = flavor_bad and h in defect
            meta = _meta(stage="acceptance", rack=RACK[h], suite="nccl-tests",
                         gpu_driver_flavor="proprietary" if pinned else "open")
            # a rank's QPs: one to the same local rank of every other host; a host alone runs the
            # test over its NIC in loopback (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE), one QP a rank
            peers = [x for x in rack if x != h] or [h]
            for r in range(RANKS):
                ranks.append(_rank(rng, h, pids(h), prted[h], "all_reduce_perf", job, meta,
                                   t + 0.4 + 0.15 * r + rng.uniform(0, 0.05), peers, healthy_end,
                                   gpu_pinned=pinned, steady=False))
        run_calls, _, failed = _kill(ranks, rng)
        calls.extend(run_calls)
        for c in run_calls:
            if c.label == "gpu_driver_flavor":
                gpu_fail_times[c.host].append(c.ret)
        stats["nccl_runs"] += 1
        stats["nccl_failed"] += failed
        t += 720.0 + rng.uniform(-30, 30)
    neg = _suite_offset("reg_mr_unmapped_va")
    lone = len(rack) == 1 and "gpu_driver_flavor" in faults
    stats["suite_records_of_the_cause"] = 0
    for i, h in enumerate(rack):
        fails = sorted(gpu_fail_times[h])
        t = tm["harness"] + 20.0 + 85.0 * i
        n = 0
        while t < tm["end"] - 100:
            n += 1
            run = _suite_run(rng, h, pids(h), harness[h], f"acc-{h[-3:]}-{n:03d}", t)
            # keep the unmapped-VA test out of the snapshots of the host's failing GPU registrations
            # (one tree shape: the kernel would aggregate two callers in one record)
            at = run[neg].ret
            j = bisect.bisect_left(fails, at - 12.0)
            if j < len(fails) and fails[j] < at + 12.0:
                stats["suite_moved"] += 1
                shift = fails[j] + 12.0 - run[neg].t + 1.0
                for c in run:
                    c.t += shift
            if lone and h in defect:
                # a rack of one host where the family kills nccl-tests: the suite's survival of it
                # there vouches for nothing (see LONE_HOST in __init__.py): the host's cause
                for c in run:
                    if c.label == "neg_unmapped_va":
                        c.label = "gpu_driver_flavor"
                        stats["suite_records_of_the_cause"] += 1
            calls.extend(run)
            stats["suite_runs"] += 1
            t = run[0].t + rng.uniform(340, 380)
    return calls, stats


# ------------------------------------------------------------------------------------------------
# the tracer: snapshots, counters, records
# ------------------------------------------------------------------------------------------------
def _frame_times(frames, t0: float, dur: float) -> tuple[list[float], list[float]]:
    """Entry times and latencies of a tree's frames within [t0, t0+dur]: children laid out one
    after the other inside their parent, by weight (1 + their descendants)."""
    n = len(frames)
    children: list[list[int]] = [[] for _ in range(n)]
    stack: list[int] = []
    for i, (d, _, _) in enumerate(frames):
        while stack and frames[stack[-1]][0] >= d:
            stack.pop()
        if stack:
            children[stack[-1]].append(i)
        stack.append(i)
    weight = [1] * n
    for i in range(n - 1, -1, -1):
        weight[i] = 1 + sum(weight[c] for c in children[i])
    start, lat = [0.0] * n, [0.0] * n
    start[0], lat[0] = t0, dur
    for i in range(n):
        kids = children[i]
        if not kids:
            continue
        s = start[i] + lat[i] * 0.05
        total = sum(weight[c] for c in kids)
        for c in kids:
            lat[c] = lat[i] * 0.9 * weight[c] / total
            start[c] = s
            s += lat[c]
    return start, lat


_SIG = {name: tuple(frames) for name, (_, _, frames) in TREES.items()}


def _trace_host(host, calls, tracer_from, boot, tm, rng, idrng):
    """Counters (one table) and records (events rows, truth rows) of one host."""
    joined = tracer_from > -1e8  # a host whose tracer started in the window (the new rack)
    snap_phase = rng.uniform(0, SNAP_S)
    first = tracer_from + snap_phase if joined else snap_phase
    bounds = np.arange(first, tm["end"] + 1e-9, SNAP_S)
    win_phase = rng.uniform(0, WINDOW_EVERY_S)
    probe_ix = {p: i for i, p in enumerate(PROBES)}
    n_snap, n_probe = len(bounds), len(PROBES)
    inv = np.zeros((n_snap, n_probe), np.int64)
    errs: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
    lo = tracer_from if joined else bounds[0] - SNAP_S
    kept = [c for c in calls if c.t >= lo and lo < c.ret <= bounds[-1]]
    kept.sort(key=lambda c: (c.ret, c.t))
    # calls of each probe a tree makes (a probe may be called twice in one tree)
    tree_ix = {name: i for i, name in enumerate(TREES)}
    per_tree = np.zeros((len(TREES), n_probe), np.int64)
    for name, (_, _, frames) in TREES.items():
        for _, fn, _ in frames:
            per_tree[tree_ix[name], probe_ix[fn]] += 1
    by_snap_sig: dict[tuple[int, str], list[Call]] = defaultdict(list)
    goods: list[Call] = []
    window_count: dict[tuple[int, str], int] = defaultdict(int)
    snap_of = np.searchsorted(bounds, np.array([c.ret for c in kept]), side="left")
    calls_by_tree = np.zeros((n_snap, len(TREES)), np.int64)
    np.add.at(calls_by_tree, (snap_of, np.array([tree_ix[c.tree] for c in kept], np.int64)), 1)
    inv += calls_by_tree @ per_tree
    for c, s in zip(kept, snap_of, strict=True):
        s = int(s)
        frames = TREES[c.tree][2]
        if c.label is not None:
            for _, fn, e in frames:
                if e:
                    cell = errs[(s, probe_ix[fn])]
                    cell[e] = cell.get(e, 0) + 1
            by_snap_sig[(s, _SIG[c.tree])].append(c)
        else:
            w = (c.t - win_phase) // WINDOW_EVERY_S
            if (c.t - win_phase) - w * WINDOW_EVERY_S < WINDOW_LEN_S and c.t >= tracer_from:
                key = (int(w), c.tree)
                if window_count[key] < WINDOW_CAP:
                    window_count[key] += 1
                    goods.append(c)
    # failures per (snapshot, shape): the first K records, the rest carried by the K-th
    failures: list[tuple[Call, int]] = []
    mixed = 0
    for (_, _), group in by_snap_sig.items():
        for c in group[:K - 1]:
            failures.append((c, 1))
        if len(group) >= K:
            rest = group[K - 1:]
            mixed += len({x.label for x in rest}) > 1
            failures.append((rest[0], len(rest)))
    records = [(c, 1, True) for c in goods] + [(c, n, False) for c, n in failures]
    records.sort(key=lambda r: (r[0].t, r[0].pid))

    def timed(c: Call) -> bool:
        x = c.t - win_phase
        return c.t >= tracer_from and x - (x // WINDOW_EVERY_S) * WINDOW_EVERY_S < WINDOW_LEN_S

    boot_id = f"{idrng.getrandbits(32):08x}"
    recno = idrng.randrange(1 << 20, 1 << 24)
    ev: dict[str, list] = defaultdict(list)
    truth: dict[str, list] = defaultdict(list)
    start_ns = int(START.timestamp()) * 1_000_000_000
    for c, repeat, good in records:
        recno += idrng.randrange(1, 4)
        trace_id = f"{host}:{boot_id}:{recno}"
        op, arg, frames = TREES[c.tree]
        is_timed = good or timed(c)
        if is_timed:
            starts, lats = _frame_times(frames, c.t, c.dur)
            ts = [int((s - boot) * 1e9) for s in starts]
            lat = [max(1, int(x * 1e9)) for x in lats]
            st = start_ns + int(c.t * 1e9)
            en = start_ns + int(c.ret * 1e9)
        else:
            tick = (int((c.ret - boot) * 1e9) // TICK_NS) * TICK_NS
            ts = [tick] * len(frames)
            lat = [None] * len(frames)
            st = en = start_ns + int(boot * 1e9) + tick
        rets = []
        for _, fn, e in frames:
            if e:
                rets.append(-ERRNO[e])
            elif fn in TRUE_FUNCTIONS:
                rets.append(0 if (c.tree, fn) in FALSE_FRAMES else 1)
            else:
                rets.append(0)
        meta = [{"key": k, "value": v} for k, v in c.meta]
        n = len(frames)
        for col, value in (("trace_id", trace_id), ("pid", c.pid), ("tid", c.pid), ("ppid", c.ppid), ("comm", c.comm),
                           ("kind", "good" if good else "failure"), ("command", op), ("exit_status", rets[0]),
                           ("start_time", st), ("end_time", en), ("kernel_release", RELEASE), ("lost_events", 0),
                           ("job_id", c.job), ("metadata", meta), ("repeat_count", repeat if repeat > 1 else None)):
            ev[col].extend([value] * n)
        ev["seq"].extend(range(n))
        ev["ts_ns"].extend(ts)
        ev["latency_ns"].extend(lat)
        ev["ret"].extend(rets)
        ev["probe"].extend(fn for _, fn, _ in frames)
        ev["layer"].extend(LAYER[fn] for _, fn, _ in frames)
        ev["depth"].extend(d for d, _, _ in frames)
        ev["errno"].extend(e for _, _, e in frames)
        ev["arg"].extend([arg] + [None] * (n - 1))
        family = c.label
        truth["trace_id"].append(trace_id)
        truth["kind"].append("good" if good else "failure")
        truth["root_cause"].append(family)
        if family is None:
            for col in ("bifurcation_probe", "bifurcation_errno", "origin_layer"):
                truth[col].append(None)
        else:
            probe, errno, layer = FAMILIES[family]
            truth["bifurcation_probe"].append(probe)
            truth["bifurcation_errno"].append(errno)
            truth["origin_layer"].append(layer)
        truth["expected_error"].append(family in ROUTINE)
        truth["held_out"].append(False)
    # counters: every probe in every snapshot
    snap_ns = (start_ns + np.round(bounds * 1e9)).astype(np.int64)
    rows = n_snap * n_probe
    fails = np.zeros((n_snap, n_probe), np.int64)
    offsets = np.zeros(rows + 1, np.int32)
    names: list[str] = []
    counts: list[int] = []
    per_row = np.zeros(rows, np.int32)
    for (s, p) in sorted(errs):
        cell = errs[(s, p)]
        per_row[s * n_probe + p] = len(cell)
        fails[s, p] = sum(cell.values())
    for (s, p) in sorted(errs):
        for e in sorted(errs[(s, p)]):
            names.append(e)
            counts.append(errs[(s, p)][e])
    offsets[1:] = np.cumsum(per_row)
    hist = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.StructArray.from_arrays(
        [pa.array(names, pa.string()), pa.array(counts, pa.int64())], names=["errno", "count"]))
    probe_names = pa.DictionaryArray.from_arrays(pa.array(np.tile(np.arange(n_probe, dtype=np.int32), n_snap)),
                                                 pa.array(PROBES))
    layers = pa.DictionaryArray.from_arrays(pa.array(np.tile(np.arange(n_probe, dtype=np.int32), n_snap)),
                                            pa.array([LAYER[p] for p in PROBES]))
    counters = pa.table({
        "host": pa.array([host] * rows, pa.string()),
        "snapshot_time": pa.array(np.repeat(snap_ns, n_probe), pa.timestamp("ns", tz="UTC")),
        "interval_s": pa.array(np.full(rows, SNAP_S)),
        "kernel_release": pa.array([RELEASE] * rows, pa.string()),
        "vendor": pa.array(["mlx5"] * rows, pa.string()),
        "probe_set": pa.array([PROBE_SET] * rows, pa.string()),
        "probe": probe_names.cast(pa.string()),
        "layer": layers.cast(pa.string()),
        "live": pa.array(np.ones(rows, bool)),
        "invocations": pa.array(inv.reshape(-1)),
        "failures": pa.array(fails.reshape(-1)),
        "errno_counts": hist.cast(ERRNO_COUNTS_TYPE),
        "lost_records": pa.array(np.zeros(rows, np.int64)),
    })
    return counters, ev, truth, mixed, len(records)


def _events_table(ev: dict[str, list]) -> pa.Table:
    return pa.table({
        "trace_id": pa.array(ev["trace_id"], pa.string()),
        "seq": pa.array(ev["seq"], pa.int64()),
        "ts_ns": pa.array(ev["ts_ns"], pa.int64()),
        "pid": pa.array(ev["pid"], pa.int32()),
        "tid": pa.array(ev["tid"], pa.int32()),
        "ppid": pa.array(ev["ppid"], pa.int32()),
        "comm": pa.array(ev["comm"], pa.string()),
        "probe": pa.array(ev["probe"], pa.string()),
        "layer": pa.array(ev["layer"], pa.string()),
        "depth": pa.array(ev["depth"], pa.int16()),
        "ret": pa.array(ev["ret"], pa.int64()),
        "errno": pa.array(ev["errno"], pa.string()),
        "latency_ns": pa.array(ev["latency_ns"], pa.int64()),
        "arg": pa.array(ev["arg"], pa.string()),
        "kind": pa.array(ev["kind"], pa.string()),
        "command": pa.array(ev["command"], pa.string()),
        "exit_status": pa.array(ev["exit_status"], pa.int32()),
        "start_time": pa.array(ev["start_time"], pa.timestamp("ns", tz="UTC")),
        "end_time": pa.array(ev["end_time"], pa.timestamp("ns", tz="UTC")),
        "kernel_release": pa.array(ev["kernel_release"], pa.string()),
        "lost_events": pa.array(ev["lost_events"], pa.int64()),
        "job_id": pa.array(ev["job_id"], pa.string()),
        "metadata": pa.array(ev["metadata"], METADATA_TYPE),
        "repeat_count": pa.array(ev["repeat_count"], pa.int64()),
    })


def _iso(t: float) -> str:
    return (START + dt.timedelta(seconds=t)).isoformat()


def generate(root, *, hours: float = 3.0, seed: int = 45, faults=True, rack: int = 4, defect: str = "one") -> dict:
    """Write the fleet (events, counters, counter_buckets, truth) under `root`; return a summary.
    faults: True (every root cause), False (the control), or a list of cause names to keep.
    rack: 4 (the new rack n01-n04) or 1 (n03 alone, back from repair: see __init__.py).
    defect: "one" (n03 provisioned with the proprietary modules) or "rack" (every new host)."""
    if rack not in (1, 4) or defect not in ("one", "rack"):
        raise ValueError(f"rack must be 1 or 4 and defect 'one' or 'rack', not {rack!r}, {defect!r}")
    new = list(NEW) if rack == 4 else [GPU_HOST]
    hosts = PROD + new
    defect_hosts = list(new) if defect == "rack" else [GPU_HOST]
    root = Path(root)
    if faults is True:
        faults = set(ROOT_CAUSES)
    elif faults is False:
        faults = set()
    else:
        faults = set(faults)
        unknown = faults - set(ROOT_CAUSES)
        if unknown:
            raise ValueError(f"unknown causes: {sorted(unknown)}")
    tm = _times(hours)
    pids = _Pids(random.Random(f"fleetgen45:{seed}:pids"))
    prod_calls, prod_stats = _production(random.Random(f"fleetgen45:{seed}:prod"), pids, tm, faults)
    acc_calls, acc_stats = _acceptance(random.Random(f"fleetgen45:{seed}:acceptance"), pids, tm, faults, new,
                                       defect_hosts)
    per_host: dict[str, list[Call]] = {h: [] for h in hosts}
    for c in prod_calls + acc_calls:
        per_host[c.host].append(c)
    tracer_from = {h: (tm["join"] + 40.0 if h in new else -1e9) for h in hosts}
    for h in hosts:
        agent_from = tm["join"] + 50.0 if h in new else 0.0
        per_host[h].extend(_agent(random.Random(f"fleetgen45:{seed}:agent:{h}"), pids, h, agent_from, tm["end"]))
    date = START.date().isoformat()
    summary = {"hosts": hosts, "new_rack": new, "production": PROD, "defect_hosts": defect_hosts,
               "memlock_host": MEMLOCK_HOST, "faults": sorted(faults), "start": _iso(0), "end": _iso(tm["end"]),
               "times": {k: _iso(v) for k, v in tm.items()}, "production_stats": prod_stats,
               "acceptance_stats": acc_stats, "mixed_aggregates": 0, "records": 0}
    for h in hosts:
        hrng = random.Random(f"fleetgen45:{seed}:tracer:{h}")
        idrng = random.Random(f"fleetgen45:{seed}:ids:{h}")
        boot = tm["join"] if h in new else -hrng.uniform(3, 20) * 86400.0
        counters, ev, truth, mixed, n = _trace_host(h, per_host[h], tracer_from[h], boot, tm, hrng, idrng)
        summary["mixed_aggregates"] += mixed
        summary["records"] += n
        write_partition(_events_table(ev), root, "events", date, h, "part-0000.parquet", durable=False)
        path = write_partition(counters, root, "counters", date, h, "part-0000.parquet", durable=False)
        write_counter_buckets(path, counters, durable=False)
        truth_table = pa.table({
            "trace_id": pa.array(truth["trace_id"], pa.string()),
            "kind": pa.array(truth["kind"], pa.string()),
            "root_cause": pa.array(truth["root_cause"], pa.string()),
            "bifurcation_probe": pa.array(truth["bifurcation_probe"], pa.string()),
            "bifurcation_errno": pa.array(truth["bifurcation_errno"], pa.string()),
            "origin_layer": pa.array(truth["origin_layer"], pa.string()),
            "expected_error": pa.array(truth["expected_error"], pa.bool_()),
            "held_out": pa.array(truth["held_out"], pa.bool_()),
        })
        write_partition(truth_table, root, "truth", date, h, "part-0000.parquet", durable=False)
    return summary

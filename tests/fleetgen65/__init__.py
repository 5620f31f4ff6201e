"""fleetgen65: a sixty-fifth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, bpf/calltree.c's emit rule, tests/fleet_harness.py
and the other generators' docstrings only (generator.py has the fleet, the process model and the
modelling assumptions beyond the reference).

What it adds: A JOB'S WHOLE RDMA INIT SEQUENCE UNDER VERY UNEVEN GOOD-TRACE SAMPLING, over 24 hosts
(18 mlx5, 6 bnxt_re) for 6 hours. Capture windows (60 s every 10 minutes) never meet a training
job's start-up or teardown: the steady reg_mr has thousands of good traces, the start-up operations
(alloc_pd, create_cq, create_qp, each modify_qp transition) and dealloc_pd only the handful five
perftest backfill jobs on mlx5 hosts made inside windows, query_gid none at all, and the bnxt_re
hosts none of any start-up operation. Faults:
(a) gid_entry_missing: query_gid (no good trace in the window) fails ENODATA at rdma_get_gid_attr on
    mlx-14..16 from 02:00;
(b) arp_timeout: INIT->RTR (a handful of good traces) fails ETIMEDOUT deep, at
    rdma_addr_find_l2_eth_by_grh, on mlx-09..11 from 03:00;
(c) umr_completion_error: the frequent reg_mr fails EFAULT at mlx5r_umr_update_mr_pas on mlx-05 from
    02:30 (8 % of steady-phase registrations);
(d) qp_limit_exceeded: create_qp fails EINVAL at bnxt_re_create_qp on bnx-03/04 from 01:30 (bnxt_re
    has no good create_qp; mlx5 has ten);
routine: every bnxt_re RESET->INIT's rdma_counter_bind_qp_auto ENOMEM (AUTO counter mode, absorbed).
An earlier day (generate(day="earlier")): no fault, default counter mode, a capture window at every
job start, so the model `baseline learn` makes of it has every start-up operation's good traces.

The truth's decisions (README.md and docs/architecture.md are the standard):
  1. Every occurrence of the routine family is routine (expected_error true).
  2. Every record of a root cause is the cause's (expected_error false).
  3. The bifurcation is the origin: every edge above it is on a good trace of its operation (the
     handful; another vendor's, namespaces masked), or its operation has no good trace at all.
"""

from .generator import (
    ARP_HOSTS,
    ARP_SINCE,
    BACKFILL,
    BNX,
    CAUSE_HOSTS,
    CAUSE_OPERATION,
    CAUSE_SINCE,
    DATE,
    EARLIER_DATE,
    FAMILIES,
    GID_HOSTS,
    GID_SINCE,
    HOSTS,
    LAYER,
    MLX,
    QPLIM_HOSTS,
    QPLIM_SINCE,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    UMR_HOST,
    UMR_SINCE,
    VENDOR,
    generate,
    in_window,
)

__all__ = ["ARP_HOSTS", "ARP_SINCE", "BACKFILL", "BNX", "CAUSE_HOSTS", "CAUSE_OPERATION", "CAUSE_SINCE", "DATE",
           "EARLIER_DATE", "FAMILIES", "GID_HOSTS", "GID_SINCE", "HOSTS", "LAYER", "MLX", "QPLIM_HOSTS",
           "QPLIM_SINCE", "ROOT_CAUSES", "ROUTINE", "TREE_FAMILY", "TREES", "UMR_HOST", "UMR_SINCE", "VENDOR",
           "generate", "in_window"]

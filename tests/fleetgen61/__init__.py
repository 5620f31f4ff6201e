"""fleetgen61: a sixty-first fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings only (generator.py has the fleet, the process model and the modelling
assumptions beyond the reference).

What it adds: ERRORS RETURNED TO THE CALLER BESIDE THE SAME ERRORS ABSORBED BY THE OPERATION.
One (operation, origin probe, errno) family is absorbed on some calls (the root succeeds) and
returned on others (the root fails with it), in three combinations, over 24 mlx5 hosts for 6 hours:
(a) routine both ways: rdma-core's GID scan meets empty slots (ENODATA at rdma_get_gid_attr, query_gid):
    returned by the per-entry query (rdma-core 39, the rank skips the slot), absorbed by the table
    read (rdma-core 50); the pods' rdma cgroup refuses create_qp charges (EAGAIN at
    ib_rdmacg_try_charge): absorbed by the kernel's re-charge, or returned and retried by the rank;
(b) a fault returned only: on gpu-18, gpu-21, gpu-23 (01:30-04:30) create_cq's charges are both
    refused (EAGAIN at ib_rdmacg_try_charge to the root) and the rank dies, beside the routine
    create_cq family of the same origin and errno absorbed on the cgroup hosts gpu-01 .. gpu-16;
(c) returned and fatal only because the job was killed: tenant kite's backfill jobs preempted
    seconds after their start, ranks 0 and 1 dying in their create_qp back-off (their last trace
    the returned EAGAIN of (a)), ranks 2 and 3 in reg_mr (EINTR at pin_user_pages_fast).

The truth's decisions (README.md and docs/architecture.md are the standard):
  1. Every occurrence of a routine family is routine (expected_error true), the preempted ranks'
     EAGAIN included ("a process killed with its job" is right-censored, not a death).
  2. Every record of a root cause (cq_charge_refused, job_preempted) is the cause's
     (expected_error false).
  3. The bifurcation is the origin (every edge above it is on the operation's good path).
"""

from .generator import (
    ABSORBED_TREES,
    CGROUP_HOSTS,
    DATE,
    FAMILIES,
    FAULT_HOSTS,
    FAULT_WINDOW,
    HOSTS,
    LAYER,
    PREEMPT_HOSTS,
    PREEMPT_NAME,
    RETURNED_TREES,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["ABSORBED_TREES", "CGROUP_HOSTS", "DATE", "FAMILIES", "FAULT_HOSTS", "FAULT_WINDOW", "HOSTS", "LAYER",
           "PREEMPT_HOSTS", "PREEMPT_NAME", "RETURNED_TREES", "ROOT_CAUSES", "ROUTINE", "TREE_FAMILY", "TREES",
           "generate"]

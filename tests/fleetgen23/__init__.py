"""fleetgen23: a twenty-third fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the twenty-two before it: an Ethernet inference fleet, mostly Intel E810 (irdma,
RoCEv2) with a Broadcom (bnxt_re) island, of short-lived autoscaled workers; irdma's rule that a
user QP's buffer is registered before create_qp, broken by a new container image's provider for one
model's bulk QP only (ENODATA at irdma_create_qp, an errno callers usually go on from, here fatal);
one bnxt_re host out of QPs for good (EINVAL at bnxt_re_create_qp, a crash loop); one irdma host
whose QP-context allocations fail now and then (ENOMEM at the same origin as the image's fault);
and two routine refusals: an alternate path asked of a RoCE port (EINVAL at _ib_modify_qp, every
host) and a memory pool probing the largest MR (EINVAL at irdma_reg_user_mr, irdma only).
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]

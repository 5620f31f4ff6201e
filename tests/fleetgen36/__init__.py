"""fleetgen36: a thirty-sixth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds: A THREE-VENDOR FLEET. mlx5, bnxt_re and irdma hosts (a third each) in one cluster
running the same jobs. Each vendor has routine families of its own that the reference justifies:
mlx5's CQE-compression refusal at create_cq_user (EOPNOTSUPP, retried without), the AUTO counter
mode's ENOMEM at rdma_counter_bind_qp_auto on the two drivers without counter ops (bnxt_re and
irdma; ignored by _ib_modify_qp), irdma's EINVAL at irdma_query_device for the extended query
(the library falls back to the plain one). Three root causes: a tenant's memlock limit (ENOMEM at
ib_umem_get, the core, under every vendor's reg_user_mr: one cluster across vendor namespaces), a
bnxt_re NVM update on half the bnxt_re hosts failing deep QPs (EINVAL at bnxt_re_test_qp_limits),
and one irdma host's hardware modify failing INIT->RTR (EINVAL at irdma_modify_qp_roce: irdma's
routine errno at another function). A control (faults=False) keeps the routine and the NVM update.
"""

from .generator import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["FAMILIES", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

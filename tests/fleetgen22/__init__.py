"""fleetgen22: a twenty-second fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the twenty-one before it: an InfiniBand fabric (every QP has a security context,
so modify_qp runs ib_security_modify_qp) whose tenants are separated by partition keys under an
SELinux IB pkey policy; a policy update on a quarter of the hosts that denies one tenant's
partition (EACCES at ib_security_modify_qp on RESET->INIT), visible only through the policy
version in the metadata and only to that tenant; a fleet-wide firmware RES_BUSY (EBUSY at
mlx5_cmd_exec under mlx5_qpc_create_qp) confined to 90 s at the top of every hour, fatal to the
ranks that meet it; and the rdma cgroup's alloc_pd EAGAIN, retried through on every host, that one
host's zero hca_object limit turns into a crash loop.
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]

"""fleetgen17: a seventeenth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the sixteen before it: a mixed fleet whose bnxt_re hosts run a kernel build with
the core's static functions inlined, so their tracer's probe set has gaps in the middle of every
chain (no uverbs_request, create_qp, modify_qp, _ib_modify_qp, ib_resolve_eth_dmac, ...: a driver
frame two levels under the handler there, five on mlx5), with a crash-looping QP-limit fault on
one of those hosts whose storm fills the ring (lost_records high, few records, exact repeat
counts); a fault only on the first memory registration after a reboot (the UMR resources' lazy
firmware init timing out once per boot on one firmware, during a rolling maintenance: one
failure per boot, a cluster, no host alert required); and a routine retried error whose rate more
than doubles on one host mid-window without ever failing a job (an rdma cgroup limit tightened by
a configuration push: no alert).
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]

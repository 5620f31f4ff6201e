"""fleetgen19: a nineteenth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the eighteen before it: a failure storm as in-kernel aggregation records it (one
host's KV-cache service retrying CREATE_QP in a busy loop against exhausted firmware QP contexts:
three records a snapshot, the third standing for ~40,000 failures) next to a fault that is one
single record on each of 40 hosts (one pinned-memory accounting failure per host in the window,
fatal to the rank: visible only fleet-wide) beside a host where the same reg_mr ENOMEM at
ib_umem_get is routine (a diagnostic probing its memlock limit in bursts and going on); a kernel
(driver) rollout in waves whose new release adds a benign routine errno on every upgraded host
(create_cq EOPNOTSUPP at create_cq_user: 128-byte CQE padding refused, retried without) while
one wave, flashed with a new NIC firmware, also carries a real regression (CREATE_QP BAD_PARAM:
EINVAL at mlx5_cmd_exec); a leaf switch that fails one rack's INIT->RTR for 20 minutes; hosts
joining mid-day with no history and hosts drained and gone; and a probe set upgraded mid-day on
half the hosts whose new probe shows a routine absorbed error for the first time.
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]

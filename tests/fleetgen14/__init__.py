"""fleetgen14: a fourteenth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the thirteen before it: a fault on ONE NIC port of a four-NIC host (the route of
one port's netdev gone: INIT->RTR on that device fails EADDRNOTAVAIL at neighbour resolution, the
host's other three devices healthy, that device's jobs crash-looping), an
errno that is routine at one call site and fatal at another of the same operation (reg_mr EAGAIN:
the rdma cgroup's charge, retried through, beside the firmware's NO_RES for CREATE_MKEY under
reg_create, which kills the rank), a maintenance window in which every host of one rack restarts
its tracer within three minutes (a gap with nothing counted, then counters shipped by a
cumulative exporter as negative deltas on half of them; nothing is wrong), and a slow fault whose
rate doubles every hour on one host (create_cq ENOMEM from a kernel allocation: a trend, not a
level), and a tenant whose launcher retries every failure up to 3 times (INIT->RTR ETIMEDOUT at
neighbour resolution, routine for it) beside a tenant the same errno at the same frames kills.
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]

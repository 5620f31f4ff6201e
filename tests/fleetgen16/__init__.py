"""fleetgen16: a sixteenth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the fifteen before it: a rolling driver-restart wave across racks (each host's
health agent sees a short burst of EIO at rdma_alloc_begin_uobject in its own slot and goes on:
routine) while one host's restart never ends (its jobs crash-loop on that same family: a fault
for the ranks it kills, a host that must alert); a fault with the wave's operation and errno at
another frame (ALLOC_PD firmware INT_ERR, EIO at mlx5_cmd_exec, on one host); two errors in one
call tree (RESET->INIT whose ignored counter bind failed NO_RES before the firmware's RST2INIT timed
out: the origin is the chain that reaches the root, not the first or deepest error); and snapshots
shipped twice around midnight, the second copy filed under the date it arrived (a re-sent call
tree in the other date partition than its first copy).
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]

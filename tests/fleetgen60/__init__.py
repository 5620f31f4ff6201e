"""fleetgen60: a sixtieth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings only (generator.py has the fleet and the process model).

What it adds: A ROUTINE ERROR AND A REAL FAULT WITH THE SAME ERRNO AT THE SAME PROBE, in the
same operation, from the same caller, on the same host. 24 mlx5 hosts for 6 hours; gpu-01 ..
gpu-16 run AUTO counter mode. Tenant osprey's sweep (job_name osprey-sweep, 12-16 workers, only
on those hosts and only 01:00-05:00) outgrows the port's Q counter pool: the workers past the
tenth meet NO_RES at ALLOC_Q_COUNTER on each RESET->INIT (EAGAIN at mlx5_cmd_exec under
mlx5_ib_counter_bind_qp), which _ib_modify_qp ignores: routine, absorbed, the workers go on.
On gpu-11 (which ran three sweeps before) the firmware runs out of QP context resources after a
firmware reset, 02:21:40-03:33:40: every RST2INIT_QP fails NO_RES (EAGAIN at mlx5_cmd_exec
under mlx5_core_qp_modify), returned to the rank, which dies; the jobs landing there crash-loop.
The same firmware leak, partial, on two default-mode hosts that never show the routine (gpu-19
01:40-04:40, gpu-22 02:50-05:20): 15 % of RST2INIT_QPs refused, the rank dies, the job is
relaunched; the operation keeps succeeding there.

The truth's decisions (README.md and docs/architecture.md are the standard):
  1. Every occurrence of the routine family is routine (expected_error true).
  2. Every failure of the cause is the cause's (expected_error false), from the first one on.
  3. The bifurcation is the origin (every edge above it is on the good path).
"""

from .generator import (
    AUTO_HOSTS,
    COUNTER_ROOM,
    DATE,
    FAMILIES,
    FAULT_FROM,
    FAULT_HOST,
    FAULT_TO,
    HOSTS,
    LAYER,
    PARTIAL,
    PROBES,
    ROOT_CAUSES,
    ROUTINE,
    SWEEP_FROM,
    SWEEP_NAME,
    SWEEP_TO,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["AUTO_HOSTS", "COUNTER_ROOM", "DATE", "FAMILIES", "FAULT_FROM", "FAULT_HOST", "FAULT_TO", "HOSTS", "LAYER",
           "PARTIAL", "PROBES", "ROOT_CAUSES", "ROUTINE", "SWEEP_FROM", "SWEEP_NAME", "SWEEP_TO", "TREE_FAMILY", "TREES",
           "generate"]

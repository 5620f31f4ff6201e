"""fleetgen56: a fifty-sixth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings only (generator.py has the fleet and the process model).

What it adds: TRANSIENT FAILURES THE APPLICATION RETRIED THROUGH, VS REAL FAULTS. 24 mlx5 hosts
(ConnectX-7, one job of two python3 ranks each) for 6 h of one UTC day. Every rank's reg_mr,
create_qp and modify_qp (RTR->RTS) fail now and then, at ~1 % a call fleet-wide, with a transient
errno -- ETIMEDOUT at mlx5_cmd_exec (the firmware command queue under pressure), EBUSY at
mlx5_cmd_exec under modify (RES_BUSY), ENOMEM at ib_umem_get (a momentary memlock squeeze: the
reference maps RLIMIT_MEMLOCK to -ENOMEM, not EAGAIN) -- and the same process retries once or twice
250 ms apart and succeeds. Three hosts run NIC firmware 28.41.1000 whose CREATE_QP timeouts come 30x
as often (30 % of calls), still retried through. Two real causes: gpu-a05's command queue stuck
02:00-03:00 (every CREATE_QP and every retry times out; each rank dies after three tries and the
job restarts), gpu-a17's memlock limit pushed too low 03:30-05:00 (every reg_mr ENOMEM, same).

The truth's decisions (README.md and docs/architecture.md are the standard):
  1. A transient failure a process retried through is its routine family's (expected_error true),
     on the 28.41.1000 hosts too: their processes go on, and the docs keep a family open on a NIC
     firmware's hosts only when "processes die of it together".
  2. The cause hosts' failures in their fault windows are the cause's (expected_error false): "A
     learned family is not routine either on the few hosts where its operation stopped succeeding
     ... kept open there from the stop on". Their failures before and after stay routine.
  3. The bifurcation is the origin (every edge above it is on the good path).
"""

from .generator import (
    CAUSE_HOSTS,
    FAMILIES,
    FW_HOSTS,
    HOSTS,
    LAYER,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["CAUSE_HOSTS", "FAMILIES", "FW_HOSTS", "HOSTS", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREE_FAMILY",
           "TREES", "generate"]

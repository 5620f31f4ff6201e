"""fleetgen59: a fifty-ninth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings only (generator.py has the fleet and the process model).

What it adds: A FAULT THAT MOVES WITH A JOB, BESIDE ONE THAT STAYS WITH A HOST. 24 mlx5 hosts for
6 hours. Tenant heron's job 7741902 (job_name heron-ft-70b) asks to pin more memory than any host's
memlock limit allows: every rank's first reg_mr fails ENOMEM at ib_umem_get and the rank exits; its
launcher relaunches the ranks every ~2 minutes, and after 15-22 minutes the scheduler requeues the
job (same job id) onto another host: 14 hosts visited once each over ~5 hours, each fine before and
after (its own jobs succeed). Beside it, gpu-24's firmware command interface times out every
CREATE_CQ for two hours (ETIMEDOUT at mlx5_cmd_do, 02:07:40-04:07:40; the jobs landing there
crash-loop), and a routine ARP timeout at INIT->RTR (4 % of the calls, retried through) everywhere.

The truth's decisions (README.md and docs/architecture.md are the standard):
  1. Every occurrence of the routine family is routine (expected_error true).
  2. Every failure of a cause is the cause's (expected_error false), from the first one on.
  3. The bifurcation is the origin (every edge above it is on the good path).
"""

from .generator import (
    DATE,
    FAMILIES,
    FW_FROM,
    FW_HOST,
    FW_TO,
    HOSTS,
    LAYER,
    MOVING_JOB,
    MOVING_NAME,
    PROBES,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    VISITS,
    generate,
)

__all__ = ["DATE", "FAMILIES", "FW_FROM", "FW_HOST", "FW_TO", "HOSTS", "LAYER", "MOVING_JOB", "MOVING_NAME", "PROBES",
           "ROOT_CAUSES", "ROUTINE", "TREE_FAMILY", "TREES", "VISITS", "generate"]

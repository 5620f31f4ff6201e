"""fleetgen37: a thirty-seventh fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds: SLOW DRIFT OVER A LONG WINDOW. 9 mlx5 RoCE hosts for 40 hours (two nights, two
days). A pinned-memory leak on one host (ENOMEM at ib_umem_get under mlx5_ib_reg_user_mr, rising
over a day from nothing to most registrations), a routine family with a day/night rhythm (the
nightly batch jobs' many QPs hitting the rdma cgroup's hca_object limit: EAGAIN at
ib_rdmacg_try_charge, retried through, several times the day rate at night on every host), a
routine family present only on the second day (a new inference job type asking create_cq for CQE
compression the NIC lacks: EOPNOTSUPP at create_cq_user, the provider creates the CQ again
without), and one short sharp fault on another host (an hour of firmware command timeouts:
ETIMEDOUT at mlx5_cmd_exec). A control (faults=False) keeps the rhythm and both routine families.
"""

from .generator import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["FAMILIES", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

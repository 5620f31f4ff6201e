"""fleetgen33: a thirty-third fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds to the thirty-two before it: SMALL AND YOUNG FLEETS. A new cluster's bring-up / a CI
cluster: 3 mlx5 RoCE hosts for 2 hours, no history before the window, short capture windows (few
good traces), and each routine error -- ENODATA at rdma_get_gid_attr on an empty GID slot, EAGAIN
at ib_rdmacg_try_charge retried through, EOPNOTSUPP at create_cq_user for a 128-byte CQE padding
the library then does without -- seen only a handful of times on each host. Beside them three
real root causes, each on ONE host of the three (a third of the fleet, as "common" as the routine
by host count): CREATE_QP firmware INT_ERR (EIO at mlx5_cmd_exec), a memlock limit not yet rolled
out (ENOMEM at ib_umem_get), an unresolvable neighbour (ETIMEDOUT at rdma_addr_find_l2_eth_by_grh).
Each kills its rank. A control (faults=False) has the routine only.
"""

from .generator import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["FAMILIES", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

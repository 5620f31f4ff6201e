"""fleetgen34: a thirty-fourth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds: A HETEROGENEOUS, MESSY FLEET. Two groups of mlx5 RoCE hosts on two kernel releases
and two driver paths (MLNX_OFED on 5.15 with ConnectX-5 firmware; the in-tree driver on 6.8 with
ConnectX-7 firmware), one routine error family on the older group only (EOPNOTSUPP at
create_cq_user: 128-byte CQE padding the older NIC lacks, retried without), wall clocks skewed by
minutes, a host renamed mid-window (its snapshots under two names), snapshots delivered out of
order (late ones in later part files). Three root causes, one of them an EOPNOTSUPP at another
function (mlx5_ib_create_qp) on the group where the routine EOPNOTSUPP lives. A control
(faults=False) keeps all the mess and the routine, and no cause.
"""

from .generator import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["FAMILIES", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

"""fleetgen39: a thirty-ninth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds: A ROLLING DRIVER UPGRADE. 12 mlx5 RoCE hosts for 4 hours (8 ConnectX-7, 4 ConnectX-6
Dx). From 01:00 the hosts are drained, rebooted and moved, 3 at a time every 30 minutes, from kernel
6.8.0-60-generic to 6.8.0-64-generic (a new in-tree mlx5 driver): visible only in kernel_release
and the jobs' `driver` metadata. A serve runtime's CQE-compression probe, refused EOPNOTSUPP at
create_cq_user by the old driver, is refused EINVAL at the same function by the new one (its
ucmd.flags check), and the runtime goes on either way: an old routine family that ends host by
host and a new one that starts with the update. A regression ships with the new driver on the
ConnectX-6 Dx hosts only (RTR->RTS: firmware BAD_PARAM, EINVAL at mlx5_cmd_exec, fatal to train
ranks), and an unrelated memlock fault (reg_mr ENOMEM at ib_umem_get) hits one old-release host
before its wave. A control (faults=False) keeps the upgrade and both routine families, no cause.
"""

from .generator import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["FAMILIES", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

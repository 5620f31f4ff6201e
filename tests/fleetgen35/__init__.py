"""fleetgen35: a thirty-fifth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds: THE OFED PEER-MEMORY (GPUDirect RDMA) PATH. Every GPU buffer a rank registers goes
mlx5_ib_reg_user_mr -> ib_umem_get_peer -> __ib_umem_get, whose pin_user_pages_fast fails EFAULT on
device memory and is retried through ib_peer_umem_get to the peer client (nvidia-peermem), which
claims it: a failing inner frame under a successful root, recorded on every GPU registration, a
routine family. Three root causes, all at ib_peer_umem_get and all after that same routine EFAULT:
no peer client loaded after a GPU driver update (the original GUP EFAULT returned at the root), a
bad GPU driver's peer dma_map refusing ranges (EINVAL), and kzalloc(ib_umem_peer) failing under
memory pressure on one host (ENOMEM). Jobs start in waves (a quiet early morning, then a queue
released at once), so registration rates vary over time without any fault. A control
(faults=False) keeps the driver update (with the peer client reloaded), the rhythm and the routine.
"""

from .generator import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["FAMILIES", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

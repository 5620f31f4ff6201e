"""fleetgen32: a thirty-second fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds to the thirty-one before it: RARE FAULTS IN A SEA OF ROUTINE. A 40-host mlx5 RoCE
training fleet whose routine errors are massive -- a node agent's GID-table scans (ENODATA at
rdma_get_gid_attr on the empty slots) that on every host break into storms of tens of thousands of
identical failures a minute, aggregated in the kernel (one example record standing for up to
~30,000, counters agreeing), and the rdma cgroup's create_qp EAGAIN (ib_rdmacg_try_charge, retried
through) whose count swings more than tenfold with the time of day -- while each real root cause
is one to three records in the whole window, on one or two hosts: one EFAULT at ib_peer_umem_get
(a GPU driver hiccup: no peer client claimed the range), two ENOMEM at ib_umem_get late in the
window on one host (a pinned-memory leak past RLIMIT_MEMLOCK), one ETIMEDOUT at
rdma_addr_find_l2_eth_by_grh during a GID storm on the same host, and three CREATE_CQ firmware
INT_ERRs (EIO at mlx5_cmd_exec) on two hosts. A control (faults=False) has the routine only.
"""

from .generator import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["FAMILIES", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

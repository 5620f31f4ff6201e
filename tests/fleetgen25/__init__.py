"""fleetgen25: a twenty-fifth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the twenty-four before it: judgements hard in time and in the counters rather than
in the call trees. An mlx5 training fleet whose MR caches retry through a pod cgroup's limit
(EAGAIN at ib_rdmacg_try_charge, routine everywhere), on one host a neighbour's leak that fills the
cgroup over two hours until the workers die of the same EAGAIN (and then crash-loop at alloc_pd);
a link flapping in bursts on one host (ENODATA at rdma_get_gid_attr in INIT->RTR, fatal, while the
same frame and errno are routine in query_gid everywhere); an intermittent firmware EIO at
CREATE_QP on one host whose failures mostly fall outside capture windows; and no-fault artefacts:
a rack's clocks 4 minutes ahead, daemon restarts (a lost snapshot, a negative counter delta), a
reboot (new boot id) and a maintenance drain.
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]

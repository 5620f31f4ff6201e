"""fleetgen21: a twenty-first fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the twenty before it: a batch scheduler that requeues a job whose rank died, under
the same job id, so a fatal error looks recovered at the job level though the process that met it
died (every requeue gets new pids), and whose dying rank first runs NCCL's abort path (destroy_qp,
dereg_mr, dealloc_pd of what it made, within 200 ms) before it exits: calls after the error that
are not survival; one bad port of a dual-port NIC on one host, failing INIT->RTR
neighbour resolution (ETIMEDOUT) for the two ranks of eight that use it, in every job there; a
peer-memory failure of one GPU driver version only (ENOMEM at ib_peer_umem_get after the routine
GUP EFAULT, on the hosts whose metadata says gpu_driver 560.35.03; the kernel release is the same
everywhere); an errno routine on one verb and fatal on another of the same family (the rdma
cgroup's EAGAIN at ib_rdmacg_try_charge, retried through by create_qp everywhere, not retried by
create_cq, whose ranks die, on three hosts with a tight cgroup); hosts whose clocks step back or
run slow so their snapshot intervals overlap; and a slow regression with no errno at all (one
host's CREATE_QP firmware commands take fifteen times longer after a firmware update).
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]

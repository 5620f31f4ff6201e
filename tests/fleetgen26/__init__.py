"""fleetgen26: a twenty-sixth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the twenty-five before it: faults that belong to where a JOB came from, not to a
host, and one operation with two kernel call-chain shapes. A Slurm mlx5 RoCE training fleet on
one upstream kernel (6.8) migrating between two container images: the old one's rdma-core issues
create_cq/create_qp through write() (trees rooted at the handler), the new one's through the ioctl
methods (CQ_CREATE/QP_CREATE under ib_uverbs_ioctl -> ib_uverbs_cmd_verbs -> ib_uverbs_run_method,
two frames deeper), and only the new one reads the GID table through the QUERY_GID_ENTRY method
(the old one reads sysfs). Root causes: a limits.d push on ONE login node sets RLIMIT_MEMLOCK to 0,
which Slurm propagates into every job submitted there, wherever it lands: each rank dies at its
first pin (create_cq: EPERM at ib_umem_get, can_do_mlock), on most hosts of the fleet at a low
per-host rate, under both images' chain shapes (one cause, one cluster); and one GPU on one host
whose BAR1 aperture leaked, so the dma-buf attach of the rank bound to it now and then fails
(reg_dmabuf_mr: ENOMEM at dma_buf_dynamic_attach), rare and mostly outside capture windows.
Routine: the new image's GID scan hitting empty slots (ENODATA at rdma_get_gid_attr, growing with
the migration) and a per-node checkpoint agent whose registration cache runs into its unit's
LimitMEMLOCK, evicts and retries (reg_mr ENOMEM at ib_umem_get: the same frame as the EPERM, the
memlock limit's other check). Artefacts: the migration itself, a job's other ranks killed when one
dies, a drained and rebooted host (tracer down, a new boot id).
"""

from .generator import ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

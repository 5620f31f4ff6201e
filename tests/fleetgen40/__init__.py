"""fleetgen40: a fortieth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds: MANY TENANTS ON SHARED HOSTS. 10 mlx5 RoCE hosts for 3 hours, each running 2-4
concurrent job slots of different tenants (job_id column, tenant in the metadata), several processes
a job with different process names (an MPI launcher helper `hydra_pmi_proxy`, a `python3` driver,
two workers: tenant atlas's C++ `atlas-trainer`, cinder's C++ `cinder_srv`, borealis's and dune's
`python3` ranks). The rdma cgroup is per tenant. Routine: atlas's framework probes the maximum QP
count first and backs off on the rdma cgroup's EAGAIN at ib_rdmacg_try_charge under create_qp, then
runs with fewer QPs (learned routine for atlas's processes). Faults: (1) a bad config push set
tenant borealis's cgroup limit too low on 2 hosts: the same EAGAIN at the same frame under
create_qp, and its ranks die (crash loop); (2) one host with a bad cable: INIT->RTR fails ETIMEDOUT
at rdma_addr_find_l2_eth_by_grh for every tenant there. A control (faults=False) keeps the
tenants and the routine only. Variants: atlas_comm="python3" (atlas's workers named as borealis's
ranks: only tenant, job and host tell the callers apart), borealis_retries / abort_cleanup
(borealis's ranks retry the refused call and free their QPs before they exit).
"""

from .generator import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREE_FAMILY, TREES, generate

__all__ = ["FAMILIES", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREES", "TREE_FAMILY", "generate"]

"""fleetgen43: a forty-third fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the process model).

What it adds: ROOT CAUSES AND THEIR ECHOES. In a collective training job one host's real fault
makes every peer of the job fail too, moments later, in another function of the control path.
16 mlx5 RoCE hosts (MLNX_OFED, one kernel) share five jobs of 2 to 8 hosts (4 ranks a host, rail
all-to-all QPs: every rank has a QP to the same local rank of every other host of its job):

- port_down: fg43-h03's NIC port loses its link; its own INIT->RTR fail at once, EADDRNOTAVAIL at
  rdma_addr_find_l2_eth_by_grh (no route on a link-down device). ECHO: every peer's INIT->RTR
  towards h03 times out a second later, ETIMEDOUT at the same function (the neighbour never
  answers) -- in train-a (8 hosts) and finetune-c (5 hosts).
- peermem_unloaded: fg43-h11's nvidia-peermem is gone; its GPU registrations fail EFAULT at
  ib_peer_umem_get after the pin's EFAULT every GPU registration has. ECHO: train-b's ranks use
  rdma_cm; the CM handshake with the dead rank was rejected, so asking the CM for RTR
  attributes fails EINVAL at cma_ib_init_qp_attr. finetune-c's NCCL peers of h11 wait on the
  bootstrap and are killed by the launcher: no kernel echo there.
- finetune-c holds both root hosts (h03 and h11), and the two faults overlap in time for 16 % of
  the window: its failing attempts then hold both roots and port_down's echoes, and h11's own
  ranks, peers of h03 before their module went, show port_down's echo.
- eval-d and bench-e never fail; every attempt of a job without a fault host is healthy.
- Routine on every host, every rank: the GPU pin's EFAULT absorbed by the peer client
  (gpu_pin_absorbed), 128-byte CQE padding refused at create_cq_user (EOPNOTSUPP, created again
  without: cqe_pad_refused), the rdma cgroup's EAGAIN at ib_rdmacg_try_charge on one create_qp
  in fourteen (retried: qp_cgroup_retry), a node agent's GID-table read finding five empty
  slots a minute (ENODATA at rdma_get_gid_attr, in-kernel aggregated: gid_slot_empty), and a
  pingmesh agent whose RC probe of a retired host (still in its target list) times out every two
  minutes, ETIMEDOUT at rdma_addr_find_l2_eth_by_grh, and goes on (pingmesh_unanswered): the
  very frames and errno of port_down's echo, from a caller that survives them -- also while
  h03's port is down, when its probes of h03 time out too (labelled routine: whether a record is
  routine is its caller's fate, as the README's "pingmesh daemon's stale-peer ETIMEDOUT"; on h03
  itself the pingmesh's own EADDRNOTAVAIL are the root cause's records, whoever the caller).
- Variant cm_retries=N: train-b's UCX ranks ask the CM N more times (300-600 ms apart, rejected
  each time) before giving up: an echo followed by later calls of its process, none a success.

The truth's decisions. Every record names one label: a routine family (expected_error true), a
root cause for the root host's own records (`port_down`, `peermem_unloaded`), or the cause's echo
(`port_down.echo`, `peermem_unloaded.echo`) for a peer's failure made by it (each echo record
is towards one remote rank, so its cause is known even in the overlap job). Root and echo are
separate labels because they are separate failures with separate signatures: the README's audit
clusters by where a failure left good behaviour (bifurcation and origin), and nothing in it
links one host's failures to another host's cause, so what the audit must do is keep them
apart, not merge them. Judged so:
  1. each label is found whole and pure (`baseline evaluate`: purity, completeness, bifurcation,
     origin layer all 1.0; every record detected, none set aside); no routine family raises a
     finding;
  2. no cluster holds a root's records beside its echoes; a root's cluster names only its root
     host, each echo cluster only other hosts;
  3. the host alerts single out the root host: it fails (nearly) every call of its origin probe
     for the fault's duration (the README's persistent bad state / recurring errno), while the
     echo hosts fail only the calls towards one remote and are more than three hosts failing
     alike within the hour, which the architecture leaves to the clusters ("the peers of one bad
     NIC's host") -- so no host with echoes only alerts;
A control (faults=False) has the same fleet, jobs and routine, and no cause; `day=` moves the
window to another date (the test module's good window is the control of the day before, from
which `baseline learn` learns the pingmesh's ETIMEDOUT without `comm`: on the fault day the
training ranks' echo of the same family must still stay open, the day's own data showing one
caller retrying through it and another dying of it).
"""

from .generator import (
    ECHO,
    FAMILIES,
    HOSTS,
    JOBS,
    LAYER,
    ROOT_CAUSES,
    ROOT_HOST,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["ECHO", "FAMILIES", "HOSTS", "JOBS", "LAYER", "ROOT_CAUSES", "ROOT_HOST", "ROUTINE", "TREE_FAMILY",
           "TREES", "generate"]

"""fleetgen55: a fifty-fifth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings only (generator.py has the fleet and the process model).

What it adds: TIME AND IDENTITY ODDITIES OF A REAL FLEET, over one UTC night crossing midnight
(the night Europe moves its clocks, which a UTC dataset must not notice): host clocks minutes
ahead and behind, a host renamed mid-night (same machine, same processes, new name), a host name
reused by a reimaged machine with another kernel (another boot, the same pid numbers), tracer
restarts under an exporter shipping cumulative counts as new - old (negative deltas), and one
host's hour of snapshots arriving an hour late, newest first, beside an hour of shuffled rows.
Among them two root causes (a NIC firmware timing out CREATE_QP on three hosts; a GPU driver
update without its peer-memory client on two) and four routine families at high volume
(CQE compression refused, GPU memory's pin EFAULT taken by the peer client, a stale handle's
dereg ENOENT at each communicator split, a GID monitor's empty slots: ~550,000 ENODATA).

The truth's decisions (README.md and docs/architecture.md are the standard):
  1. Each record is labelled by its tree: the cause trees are root causes (expected_error false),
     the routine trees their family (expected_error true), good traces nothing. A rank killed
     with its job (its last records routine) keeps its routine labels: the docs censor such a
     process ("a process killed with its job").
  2. The bifurcation of a cause is its origin: the firmware's ETIMEDOUT at mlx5_cmd_exec (every
     edge before it is on the good create_qp path), and ib_peer_umem_get's EFAULT (the pin's
     EFAULT before it is the routine family's origin, superseded by "a later origin of the same
     tree that reaches the root"; the edge __ib_umem_get -> ib_peer_umem_get is on no good
     trace). A routine record's bifurcation is its family's origin.
  3. The oddities are no cause: no record is labelled by them, and no host alert may come of
     them. Host alerts are allowed only on a cause's hosts, naming the cause's errno at one of its
     failing frames; gpu-c05 and gpu-c06 must alert (every GPU registration failing there for
     hours: ib_peer_umem_get fails on all its calls, a persistent bad state on a host unlike the
     fleet, compared with the hosts not down).
  4. Clusters: one per cause. The firmware's over its three hosts, saying they share
     nic_fw=28.39.1002 and running across midnight; the driver update's over gpu-c05 and gpu-c06,
     saying they share gpu_driver=550.90.07 and NOT "since kernel update": the only host that
     changed its release in the window is the reused name gpu-a10, not one of the cluster's.
"""

from .generator import (
    CAUSE_HOSTS,
    FAMILIES,
    HOSTS,
    LAYER,
    ODDITY_HOSTS,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["CAUSE_HOSTS", "FAMILIES", "HOSTS", "LAYER", "ODDITY_HOSTS", "ROOT_CAUSES", "ROUTINE", "TREE_FAMILY",
           "TREES", "generate"]

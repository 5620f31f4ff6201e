"""fleetgen62: a sixty-second fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings only (generator.py has the fleet, the process model and the modelling
assumptions beyond the reference).

What it adds: THE PEER-MEMORY AND MEMORY-REGISTRATION LAYER ACROSS A GPU DRIVER ROLLOUT, over 24
mlx5 GPU hosts (MLNX_OFED, nvidia-peermem) for 6 hours:
(a) routine, every host at a steady rate: NCCL's dma-buf test refused (reg_dmabuf_mr, EOPNOTSUPP at
    mlx5_ib_reg_user_mr_dmabuf: the build has no ODP), the rank falling back to the peer-memory path;
    and every GPU registration's pin refused (EFAULT at pin_user_pages_fast) and rescued by the peer
    client (the root succeeding);
(b) a fault rolled out host by host: the GPU driver 550.90.07 -> 570.86.15 update of the even hosts
    (gpu-02 01:30, then one every 15 minutes, gpu-24 04:15) leaves nvidia-peermem unloaded: from each
    host's own update on, every GPU reg_mr finds no peer client (EFAULT at ib_peer_umem_get, the
    peer-memory layer) and the rank dies -- staggered starts, one cause;
(c) a host-local fault: from 02:40 on gpu-07, 60 % of ranks' staging-buffer reg_mr fail ENOMEM at
    __ib_umem_get (RLIMIT_MEMLOCK), the rank dying;
and gpu-11's counters file of 03:00-04:00 is missing (its call trees of that hour are there).

The truth's decisions (README.md and docs/architecture.md are the standard):
  1. Every occurrence of a routine family is routine (expected_error true).
  2. Every record of a root cause is the cause's (expected_error false), the pin's EFAULT before the
     failing fallback included ("a pin's EFAULT before a failing peer-memory fallback": the death is
     the later origin's).
  3. The bifurcation is the origin (every edge above it is on the operation's good path).
"""

from .generator import (
    DATE,
    FAMILIES,
    GAP,
    GAP_HOST,
    HOSTS,
    LAYER,
    MEMLOCK_HOST,
    MEMLOCK_SINCE,
    NEW_DRIVER,
    OLD_DRIVER,
    ROLLOUT,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["DATE", "FAMILIES", "GAP", "GAP_HOST", "HOSTS", "LAYER", "MEMLOCK_HOST", "MEMLOCK_SINCE", "NEW_DRIVER",
           "OLD_DRIVER", "ROLLOUT", "ROOT_CAUSES", "ROUTINE", "TREE_FAMILY", "TREES", "generate"]

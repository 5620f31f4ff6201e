"""fleetgen42: a forty-second fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds: A HETEROGENEOUS FLEET, ONE ROUTINE FAMILY PER HARDWARE/DRIVER GENERATION, learned on
a good window and applied to another day. Three generations in one fleet: (A) ConnectX-6 Dx on the
in-tree mlx5 of 6.8.0-60-generic, (B) ConnectX-7 with MLNX_OFED 24.07 and nvidia-peermem on
5.15.0-119-generic, (C) Broadcom bnxt_re on 6.8.0-60-generic. Each has its own routine: (A) the
framework asks every CQ for 128-byte CQE padding, which this firmware refuses (EOPNOTSUPP at
create_cq_user) and goes on without; (B) every GPU-memory registration fails its pin
(pin_user_pages_fast EFAULT) and the peer client takes it (absorbed); (C) the port counter mode is
AUTO and bnxt_re has no counter ops (ENOMEM at rdma_counter_bind_qp_auto, ignored). Two datasets:
`good/` (the good window: two mornings, every generation healthy) for `baseline learn`, and `day/`
(the audited morning). On the audited day two generation-B hosts get a firmware flash whose NV
config drops the padding capability: the SAME probe and errno as generation A's routine
(create_cq_user EOPNOTSUPP under create_cq), which generation B's image requires, so every rank
dies of it there and the jobs crash-loop. The control (faults=False) keeps the three routines only.
"""

from .generator import (
    FAMILIES,
    GENERATIONS,
    LAYER,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["FAMILIES", "GENERATIONS", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREE_FAMILY", "TREES", "generate"]

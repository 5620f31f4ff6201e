"""fleetgen66: a sixty-sixth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py, bpf/calltree.c (what the
fleet tracer emits at its limits: MAX_FRAMES, MAX_DEPTH, lost_events) and the other generators'
docstrings only (generator.py has the fleet, the tracer model and the modelling assumptions).

What it adds: DEEP CALL TREES AT THE FLEET TRACER'S LIMITS, over 24 mlx5 GPU hosts for 6 hours. A
tracer hooking every function of the reference's chains keeps 16 frames a tree and 8 nesting
levels: create_qp loses its pin, doorbell and firmware command (16 frames of lookups and checks come
first), a 16 MiB reg_mr loses create_real_mr and the UMR (8 pin calls), every modify_qp loses its
firmware command (depth 8), INIT->RTR its whole driver path (address resolution first).
Routine: R1 gpu_mr_peer_rescue (pin EFAULT kept, the tree truncated), R2 gpu_queue_peer_rescue (the
pin's EFAULT in the lost tail: a failure record with no error frame, root succeeded), R3
arp_timeout_retried (rdma_addr_find_l2_eth_by_grh ETIMEDOUT, retried; complete).
Faults: (a)+(c) umr_post_send_efault (reg_mr, 2 hosts): complete on 2 MiB registrations, the origin
in the LOST tail of 16 MiB ones, and inside the truncated rescued GPU shape; (b) rtr2rts_fw_timeout
(modify_qp RTR->RTS, 2 hosts): mlx5_cmd_exec ETIMEDOUT deeper than MAX_DEPTH, seen at
mlx5_core_qp_modify. A control (faults=False): the same schedule, no fault.
"""

from .generator import (
    A_HOSTS,
    B_HOSTS,
    DATE,
    FAMILIES,
    FAULT_HOSTS,
    HOSTS,
    LAYER,
    MAX_DEPTH,
    MAX_FRAMES,
    PROBES,
    RESCUED,
    ROOT_CAUSES,
    ROUTINE,
    SNAPSHOT_S,
    TREE_FAMILY,
    TREES,
    TRUE_ORIGIN,
    VIEWS,
    K,
    generate,
    tracer_view,
)

__all__ = ["A_HOSTS", "B_HOSTS", "DATE", "FAMILIES", "FAULT_HOSTS", "HOSTS", "K", "LAYER", "MAX_DEPTH", "MAX_FRAMES",
           "PROBES", "RESCUED", "ROOT_CAUSES", "ROUTINE", "SNAPSHOT_S", "TREE_FAMILY", "TREES", "TRUE_ORIGIN", "VIEWS",
           "generate", "tracer_view"]

"""fleetgen64: a sixty-fourth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py, bpf/calltree.c (what the
fleet tracer emits) and the other generators' docstrings only (generator.py has the fleet, the
tracer model it imitates and the modelling assumptions beyond the documents).

What it adds: SUCCESSFUL CALLS THAT ABSORB AN ERROR FIRST, AS THE REAL TRACER RECORDS THEM, over 24
mlx5 GPU hosts for 6 hours. The tracer sends every call tree with a failing frame as kind 'failure'
(first K=4 per signature per 30 s interval, the first standing for the rest), and a kind 'good' tree
only for a call with no failing frame whose root entered in a capture window (60 s every 7 min):
so the four routine "rescued" success shapes below are never good traces, only failure records
whose root succeeded:
  R1 gpu_mr_peer_rescue     reg_mr of GPU memory: pin_user_pages_fast EFAULT, the peer client takes it;
  R2 gpu_queue_peer_rescue  create_qp with a GPU-resident queue buffer: the same pin/peer fallback;
  R3 counter_bind_ignored   modify_qp RESET->INIT: the Q-counter bind's NO_RES (EAGAIN at
                            mlx5_cmd_exec, ENOMEM at rdma_counter_bind_qp_auto), ignored;
  R4 gid_ndev_tolerated     query_gid of an IB-port GID: rdma_read_gid_attr_ndev_rcu ENODEV, tolerated.
Faults:
  (a) inside two rescued shapes, the fallback failing and the call with it:
      peer_client_inval_required (create_qp: ib_peer_umem_get EFAULT, 3 hosts, staggered) and
      peer_get_pages_enomem (reg_mr: ib_peer_umem_get ENOMEM, 2 hosts);
      and, past a fallback that worked, peer_mr_mkey_lim_err (reg_mr: the peer client took the GPU
      buffer, then CREATE_MKEY refused LIM_ERR, mlx5_cmd_exec ENOMEM under reg_create, 2 hosts):
      edges only the rescued calls run lead to it;
  (b) rst2init_no_res: the same probe and errno R3 absorbs (mlx5_cmd_exec EAGAIN), returned by the
      RESET->INIT itself (2 hosts).
A control (faults=False): the same schedule, the rescued shapes alone; and (moved_b=True) the same
schedule with (b) alone on two other hosts, audited with the faulted fleet's learned list.

The truth's decisions (README.md and docs/architecture.md are the standard):
  1. Every record of a routine family is routine (expected_error true).
  2. Every record of a fault is the fault's (expected_error false), the absorbed errors in it included.
  3. The bifurcation is the first frame no successful call of the operation makes (the rescued ones
     included): the fault's origin.
"""

from .generator import (
    A1_HOSTS,
    A2_HOSTS,
    A3_HOSTS,
    B_HOSTS,
    DATE,
    FAMILIES,
    FAULT_HOSTS,
    HOSTS,
    LAYER,
    MOVED_B_HOSTS,
    PROBES,
    RESCUED,
    ROOT_CAUSES,
    ROUTINE,
    SNAPSHOT_S,
    TREE_FAMILY,
    TREES,
    K,
    generate,
)

__all__ = ["A1_HOSTS", "A2_HOSTS", "A3_HOSTS", "B_HOSTS", "DATE", "FAMILIES", "FAULT_HOSTS", "HOSTS", "K", "LAYER", "MOVED_B_HOSTS", "PROBES",
           "RESCUED", "ROOT_CAUSES", "ROUTINE", "SNAPSHOT_S", "TREE_FAMILY", "TREES", "generate"]

"""fleetgen58: a fifty-eighth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings only (generator.py has the fleet and the process model).

What it adds: VOLUME THAT DIFFERS BY ORDERS OF MAGNITUDE BETWEEN HOSTS AND PROBES. 8 busy mlx5
GPU hosts make thousands of control-path calls a bucket; 4 hosts are nearly idle (a login node,
a host in drain, two inference servers that set up once at start: a handful of calls an hour);
REG_DMABUF_MR is called only at job start everywhere (a few calls an hour a host). Two routine
families (an ARP timeout at INIT->RTR, a cgroup EAGAIN at reg_mr, both retried through) show on
the idle hosts as 1 failure of 2 calls of their probe in a bucket, 1 of 1, a lone failure in an
hour, or (inf-02's stalled connection) every MODIFY_QP of the host failing for two buckets in a row
after one succeeded, the server going on through it.
Three real causes: a busy host's CREATE_QP ENOMEM crash loop (gpu-a04, 03:19:10 to the end), an
IDLE host's stop (gpu-d07: every REG_MR EFAULT at pin_user_pages_fast for two hours, 12 records: 1 or 2 a bucket)
and a fleet-wide fault of the rare probe (REG_DMABUF_MR ETIMEDOUT at ib_umem_dmabuf_map_pages at
job start on four hosts, 02:05-02:30, 8 records each).

The truth's decisions (README.md and docs/architecture.md are the standard):
  1. Every occurrence of a routine family is routine (expected_error true), on busy and idle
     hosts alike: the idle hosts' processes retry and go on as the busy hosts' do.
  2. Every failure of a cause is the cause's (expected_error false), from the first one on.
  3. The bifurcation is the origin (every edge above it is on the good path).
"""

from .generator import (
    BUSY,
    CAUSE_HOSTS,
    DMABUF_STARTS,
    EFAULT_FROM,
    EFAULT_HOST,
    EFAULT_TO,
    ENOMEM_FROM,
    ENOMEM_HOST,
    FAMILIES,
    FAULTS,
    HOSTS,
    IDLE,
    IDLE_ROUTINE,
    LAYER,
    ROOT_CAUSES,
    ROUTINE,
    STALL,
    STALL_DONE,
    STALL_SETUP,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["BUSY", "CAUSE_HOSTS", "DMABUF_STARTS", "EFAULT_FROM", "EFAULT_HOST", "EFAULT_TO", "ENOMEM_FROM",
           "ENOMEM_HOST", "FAMILIES", "FAULTS", "HOSTS", "IDLE", "IDLE_ROUTINE", "LAYER", "ROOT_CAUSES", "ROUTINE",
           "STALL", "STALL_DONE", "STALL_SETUP", "TREE_FAMILY", "TREES", "generate"]

"""fleetgen67: a sixty-seventh fleet generator, written blind (generator.py has the fleet, the tracer
model it imitates and the assumptions beyond the documents).

What it adds: HOST ALERTS UNDER A VARYING WORKLOAD MIX, WITH ABSORBED ERRORS IN THE COUNTERS. The
counters count every failing frame, the absorbed ones included: a GPU registration's pin EFAULT the
peer client takes (R1), an rdma cgroup EAGAIN the launcher retries (R2). 20 mlx5 hosts x 6 h; some
hosts register 10x more GPU memory from 14:00, others host memory only, others change hour by hour, and two
host-only hosts are taken by a GPU-only tenant from 15:30 (their pins then fail on nearly every call):
the per-host rate of the absorbed errors differs a lot between hosts and over time while nothing is
wrong. Five faults: F1 the absorbed error's fallback failing on one host (ib_peer_umem_get EFAULT
returned by reg_mr, from 14:30), F2 a host-local errno rising on another (alloc_pd's
mlx5_cmd_exec ENOMEM, LIM_ERR, from 15:00), F3 past the absorbed error on a gpu-heavy host
(reg_mr's CREATE_MKEY refused LIM_ERR under reg_create, 15 % of its GPU registrations from 16:00,
each with the pin's EFAULT absorbed before it), F4 intermittent from the start on a mixed host (the
peer client's get_pages ENOMEM on 15 % of its GPU registrations, ib_peer_umem_get ENOMEM returned),
F5 the absorbed EAGAIN becoming fatal (one host's rdma cgroup limit at zero from 15:15: every
alloc_pd refused, each launcher dying of it).

Truth: every record of R1/R2 routine; every record of F1/F2 the fault's, bifurcation at its origin
(the first frame no successful call of the operation makes, the rescued GPU registrations included).
"""

from .generator import (
    CONVERTED,
    CONVERTED_SINCE,
    DATE,
    F1_HOST,
    F1_SINCE,
    F2_HOST,
    F2_SINCE,
    F3_HOST,
    F3_SINCE,
    F4_HOST,
    F5_HOST,
    F5_SINCE,
    FAMILIES,
    HOSTS,
    LAYER,
    MIX,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    K,
    generate,
)

__all__ = ["CONVERTED", "CONVERTED_SINCE", "DATE", "F1_HOST", "F1_SINCE", "F2_HOST", "F2_SINCE", "F3_HOST", "F3_SINCE", "F4_HOST", "F5_HOST", "F5_SINCE", "FAMILIES", "HOSTS", "K", "LAYER", "MIX",
           "ROOT_CAUSES", "ROUTINE", "TREE_FAMILY", "TREES", "generate"]

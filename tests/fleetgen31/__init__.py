"""fleetgen31: a thirty-first fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings only (see generator.py for the fleet, the process model and the decisions
behind its truth).

What it adds to the thirty before it: OVERLAPPING AND LOOK-ALIKE FAULTS. Several things go wrong
at the same time, on the same hosts, in the same Slurm jobs (a requeue keeps the job id) and the
same processes, and the faults resemble each other or a routine error:

(a) two root causes at once on overlapping host sets, in the same operation with the same errno at
    the top two frames (reg_mr: EFAULT at ib_uverbs_reg_mr and mlx5_ib_reg_user_mr), different
    below: a ConnectX firmware canary whose UMR QP falls into the error state now and then, so a
    host-memory registration's UMR PAS update fails (EFAULT at mlx5r_umr_update_mr_pas under
    create_real_mr, driver) on 5 hosts all window, and a GPU driver update that left
    nvidia-peermem unloaded for 2.5 hours on 5 hosts (2 of them canaries), so every GPU-memory
    registration fails where no peer client claims the range (EFAULT at ib_peer_umem_get,
    peer-mem) -- after pin_user_pages_fast's EFAULT, which every GOOD GPU registration has too
    (absorbed by the peer client): the layered-evidence case of RDMATracer's paper;
(b) one origin function failing with two errnos for two reasons in INIT->RTR neighbour
    resolution (rdma_addr_find_l2_eth_by_grh): a rack's ToR dropping ARP (ETIMEDOUT after one
    second, 5 % of the rack's INIT->RTR for six hours) and a netplan push that removed the RoCE
    subnet's route on 3 hosts for 90 minutes, two of them in that rack (EADDRNOTAVAIL, every
    INIT->RTR: a crash loop);
(c) a routine error with the same probe and errno as a real root cause, reached through another
    call chain by the SAME processes: rdma-core's GID scan at every rank's start hits empty slots
    (ENODATA at rdma_get_gid_attr under the QUERY_GID_ENTRY ioctl; the rank goes on), while on 4
    hosts whose RoCE IPv4 address flaps for a few minutes now and then the INIT->RTR of the GID
    index NCCL uses fails ENODATA at the same rdma_get_gid_attr under rdma_fill_sgid_attr, fatal
    to the rank; a second routine family, NCCL's dma-buf test on a kernel built without ODP
    (EOPNOTSUPP at mlx5_ib_reg_user_mr_dmabuf, then the nv_peer_mem path), runs immediately
    before the peer-memory fault's fatal registration in the same process;
(d) `faults=False`: the same fleet, jobs, firmware canary and GPU driver update with none of the
    five root causes: only the two routine families, nothing may be raised.

The fleet: 32 mlx5 RoCE hosts (MLNX_OFED 24.07 on 5.15.0-125-generic, racks of 8), single-host
Slurm jobs of 4 ranks (comm python3), 24 hours from 2026-05-11T06:00Z, the collector's snapshots
every 300 s, capture windows of 60 s every 10 minutes. `generate(out_dir, hosts, hours, seed,
faults=True) -> summary`.
"""

from fleetgen31.generator import (
    FAMILIES,
    ROOT_CAUSES,
    ROUTINE,
    TREES,
    generate,
)

__all__ = ["FAMILIES", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

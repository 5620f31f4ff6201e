"""fleetgen30: a thirtieth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the twenty-nine before it: A LONG-LIVED FLEET'S HISTORY. Three UTC days of one
mlx5 RoCE training fleet (ConnectX-7, 8-host racks, single-host Slurm jobs of 4 ranks, the
collector's snapshots every 300 s, capture windows of 60 s every 10 minutes) observed by a
collector that itself changed during the window, so the dataset holds what a young fleet never
shows, all of it valid per tracer/schema.py:

- a rolling re-image, rack by rack from 30 % to 62 % of the window, of two thirds of the hosts
  that stay: kernel 6.5.0-1024-nvidia -> 6.8.0-1017-nvidia (a new mlx5 driver), NIC firmware
  28.39.2048 -> 28.42.1000 (job metadata `nic_fw`, and `image`), collector 1.4 -> 2.1. Each host
  is drained 45 minutes before, down 15 minutes, and comes back with a new boot id (the monotonic
  clock restarts), a new kernel_release on its events and counters;
- two schema versions side by side, in the same date=D/host=H partitions on a host's re-image day:
  collector 1.4's files are schema version 1 (no path2, output or repeat_count columns; no footer
  metadata summary) and ingest of that time wrote no counter_buckets summaries for them; collector
  2.1's files are version 2 with their summaries;
- two probe sets: 2.1 added the MR-creation internals (create_real_mr, alloc_cacheable_mr,
  mlx5r_umr_update_mr_pas), so a reg_mr records one chain shape before a host's re-image and a
  deeper one after, and the counters list three probes more from then on;
- in-kernel aggregation from 2.1 on: per snapshot interval the first K=2 identical failure trees
  of a process name are records, the rest counted in the kernel and carried by the second
  example's repeat_count (1.4 delivered every failing tree);
- collector 1.4 daemon restarts on three hosts that were never re-imaged (its exporter ships
  cumulative counts as new - old: after a 7-minute gap with the interval it died in never shipped
  and its records lost, one snapshot of negative deltas, as tracer.schema.counted_delta documents);
- hosts leaving (two old hosts decommissioned mid-window, drained first), hosts joining (a new
  rack of H100 hosts on the new release from 55 % of the window, no history), and one host renamed
  by its re-image (gpuNNN -> h100-rR-NN, the new naming convention: one machine, two host names).

Root causes (each kills the process that meets it):
- umr_pas_efault_new_driver: ONLY on the new release, on the re-imaged and joined hosts, now and
  then a memory registration's UMR PAS update fails (EFAULT at mlx5r_umr_update_mr_pas under
  create_real_mr, reg_mr), a probe that exists only in the new probe set, fatal to the rank;
- fw_flash_bad_sys_state: one re-imaged host whose firmware flash left the NIC answering ALLOC_PD
  with BAD_SYS_STATE (EIO at mlx5_cmd_exec under mlx5_ib_alloc_pd) for three hours after its
  re-image: its KV-cache service crash-loops under systemd (RestartSec=5, ~2,000 failures), the
  records aggregated in the kernel (repeat_count ~60), its training jobs drained meanwhile;
- tor_port_arp_timeout: the renamed host's ToR port drops ARP now and then, before and after its
  re-image: INIT->RTR fails ETIMEDOUT at rdma_addr_find_l2_eth_by_grh (one second of neighbour
  resolution), fatal to the rank, under both host names, both releases and both collectors.

Routine (the caller goes on):
- gid_scan_empty_slot: rdma-core's scan of 8 GID entries at each rank's start hits empty ones
  (ENODATA at rdma_get_gid_attr under QUERY_GID_ENTRY); the new release keeps RoCE v2 GIDs only,
  so its rate per scan doubles (2 empty slots of 8 -> 4) host by host with the re-image;
- cqe_padding_refused: NCCL's plugin asking for 128-byte CQE padding the firmware lacks
  (EOPNOTSUPP at create_cq_user), then a CQ without it;
- mr_cache_cgroup_retry: the MR cache hitting the pod's rdma cgroup hca_object limit (EAGAIN at
  ib_rdmacg_try_charge under rdma_alloc_begin_uobject, reg_mr), evicting and registering again.

`faults=False` gives the same fleet and history (re-images, rename, joins, leaves, resets, both
collectors) with none of the three root causes: the control.
"""

from .generator import ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

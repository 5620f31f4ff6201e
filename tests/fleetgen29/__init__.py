"""fleetgen29: a twenty-ninth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet, the collector's choices and the decisions behind its truth).

What it adds to the twenty-eight before it: ANOTHER TEAM'S COLLECTOR ("argus"), a second take on
fleetgen24's theme that uses the freedoms fleetgen24 left alone. The call trees keep the reference's
physics; the writing is argus' own, valid per tracer/schema.py throughout:

- trace ids numbered per host, "t1", "t2", ... from 1 on every host, so one trace_id string names
  a record on every host of the fleet (tracer.schema.RECORD_KEY is (host, trace_id, seq); nothing
  asks for ids unique across hosts) -- a root cause's record on one host shares its id with
  routine and good records on the others;
- hosts named by FQDN (gpu03-07.fra4.hpc.example.net), their wall clocks up to 45 s off true time
  (start/end and snapshot times, and so the date partitions, in each host's own clock), a window
  that crosses midnight (two date partitions);
- snapshot intervals of 10, 15, 30 and 60 s, never 5 s: the 15 s hosts poll with up to 0.3 s of
  jitter (interval_s the measured length), the 60 s hosts run a sparse exporter (no row for a probe
  not called in the interval, interval_s null); no counter_buckets summaries (the audit reads the
  counters themselves); one counters file and one events part uploaded twice on a few hosts
  (at-least-once shipping);
- every partition cut into three part files of uneven sizes, the records shuffled across them
  (rows not in time order), per host another codec (zstd, snappy, lz4) and row-group size; on a
  third of the hosts the frames of a record are written in the order they returned (post-order;
  seq keeps the entry order); on a quarter the host column is stored in the files as well;
- nullable columns left null where argus does not know them: tid, ppid, path, lost_events,
  repeat_count (no in-kernel aggregation), lost_records; on "lite" hosts kernel_release on the
  events and the job metadata too; the agent's records have no job_id; `command` carries the
  verb's name (ibv_modify_qp), `arg` the target state (IBV_QPS_RTR);
- three probe sets by host (argus-full; argus-std without the read-only static helpers;
  argus-lean with exported symbols and handlers only), so one operation records chains of other
  depths and other frames on each third of the fleet, and the counters list other probes.

The fleet: 30 mlx5 RoCE hosts (one 6.8 kernel built without ODP), single-host Slurm jobs of 4
ranks one after another, each rank registering memory every minute and opening new communicators
every few minutes (a CQ, two RC QPs to RTS), a node health agent on every host; capture windows of
30 s every 3 minutes. Root causes: a bond re-created under the GID table on 4 hosts (one per probe
set and one more), so for a few minutes the RoCEv2 GID entry has no netdev and INIT->RTR fails
ENODEV at rdma_read_gid_attr_ndev_rcu (the LAG slave lookup), fatal to the rank (~16 records);
and one host's VF refused the ALLOC_PD opcode by its PF after a driver update (ENXIO at
mlx5_cmd_exec under mlx5_ib_alloc_pd) from 50 minutes in: every new rank dies at its first
ibv_alloc_pd, a requeue crash loop (~200 records). Routine: rdma-core's GID enumeration hitting
empty entries (ENODATA at rdma_get_gid_attr), NCCL's dma-buf support test on a kernel without ODP
(EOPNOTSUPP at mlx5_ib_reg_user_mr_dmabuf, then ibv_reg_mr), and the health agent's short
ibv_query_device_ex response buffer (EINVAL at mlx5_ib_query_device, then the legacy query).
`faults=False` gives the same fleet and collector with neither root cause.
"""

from .generator import PROBE_SETS, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["PROBE_SETS", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

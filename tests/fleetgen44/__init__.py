"""fleetgen44: a forty-fourth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, bpf/probes/*.yaml, tests/fleet_harness.py and
the other generators' docstrings only (see generator.py for the fleet).

What it adds: COVERAGE EXACTNESS, the weekly probe-coverage report (`baseline coverage`) checked
number by number. Three ISO weeks -- 2026-W52, 2026-W53 (2026 starts on a Thursday, so it has a
week 53; it runs 2026-12-28 to 2027-01-03 and holds the new year) and 2027-W01 -- of counter
snapshots (5-second intervals, `interval_s` 5; a host writes one every half hour with activity,
the daemon writing no idle interval) of the rdma probe set, resolved per vendor, on eight hosts
of four (kernel, vendor) groups: three 6.8.0-1017-nvidia mlx5 (MLNX_OFED), two 5.15.0-1063-nvidia
mlx5, two 6.8.0-49-generic bnxt_re and one 6.11.0-29-generic bnxt_re (upstream kernels). Four
failure families from the reference, each failure's call tree an events record (repeat_count =
the snapshot's count; the counters' failures are exactly the records' frames): gpu_pin_efault
(reg_mr, EFAULT from __ib_umem_get through ib_peer_umem_get), qp_type_unsupported (mlx5_ib_create_qp
EOPNOTSUPP), pd_fw_eio (mlx5_ib_alloc_pd EIO, a firmware command; W52 only) and bnxt_qp_limit
(bnxt_re_create_qp EINVAL, from W53), with planned weekly totals that make every trend occur:
new, rising (+150 %), falling, steady, gone, quiet. The cases:

- the OFED-only __ib_umem_get, ib_peer_umem_get and ib_umem_activate_invalidation_notifier do not
  exist on the bnxt_re hosts: reported live=false there in every snapshot, they fire on the mlx5
  hosts -- `missing` on both bnxt_re groups, never `never fired`; fg44-a02 refuses the attach of
  mlx5_ib_reg_user_mr_dmabuf (its group `partial`); each group's other-vendor driver functions are
  gated by the namespace, not missing;
- dmabuf registrations on four hosts in W52, on fg44-a01 alone in W53 (a probe fired on one host),
  none in W01 (never fired: the handler and both vendors' callbacks);
- fg44-b01 ships cumulative counts as new - old and its daemon restarts in W53 after 20 minutes
  down: the first row after it is negative in every column (the restart's own interval is lost);
- fg44-a02's snapshots of 2026-12-30 delivered twice (a second part file, identical rows);
- fg44-c02's daemon is down 7 hours on 2027-01-01; fg44-b02 joins on 2026-12-30, fg44-a03 leaves
  on 2026-12-31 (and logs a failure after its last snapshot);
- fg44-a01 writes failing snapshots 5 s before and after both Monday 00:00 UTC boundaries and
  the new year's midnight;
- NCCL logs (DATASET/joblogs/<host>.log, the format `baseline simulate` writes): per week up to
  three failing verbs calls per family logged 2.5 s before the snapshot that counted their
  kernel failure (seen), and ones no live probe saw: a cleanup verb (ibv_dealloc_pd EBUSY, not
  probed), a registration on a bnxt_re host whose probes counted no failure, the gap host's
  failure while its daemon was down, the departed host's failure -- none with a counterpart
  failure on its host within 30 minutes.

The truth's decisions (`generate(...)["coverage"][week]`, computed from the rows as written):
a snapshot belongs to the ISO week of its snapshot_time (UTC); a week's per-probe invocations,
failures and errno counts are the sums of its rows' deltas each counted from 0 up (a negative
one, a reset, counts nothing: schema.counted_delta; the counts before it stay) and of each
SNAPSHOT_KEY once; failure_rate = failures / invocations (null without calls); prev_* are the
previous ISO week's (2027-W01's is 2026-W53, 2026-W52's 2026-W51: none, 0); failures_change_pct
= (failures - prev) / prev x 100, null when prev is 0; trend new (prev 0, now > 0), gone (prev >
0, now 0), quiet (both 0), else rising / falling when the change is at least +/-25 % (the default
--trend-pct; no change lies within 5 points of it), steady otherwise; hosts_live = hosts with a
live row of the probe that week; never_fired = no counted call on any host. A group is the
(kernel, vendor) of the hosts reporting that week: hosts, hosts_live, hosts_not_attached = hosts
reporting the probe live=false, status live / partial / missing. An application failure counts
in the week of its log time; it is seen when its verb's kernel counterpart failed on its host
in the snapshot interval holding the log line; the seen fraction is over every logged failure
(the cleanup verb included, as RDMATracer's 73 %). A control (faults=False) has the same fleet
and activity, no failure and no job log.
"""

from .generator import (
    FAMILIES,
    GAP,
    HOSTS,
    JOINS,
    LAYER,
    LEAVES,
    SNAP,
    TREE_FAMILY,
    TREES,
    WEEKS,
    generate,
    host_probes,
    iso_week,
)

__all__ = ["FAMILIES", "GAP", "HOSTS", "JOINS", "LAYER", "LEAVES", "SNAP", "TREE_FAMILY", "TREES", "WEEKS", "generate",
           "host_probes", "iso_week"]

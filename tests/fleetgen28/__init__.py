"""fleetgen28: a twenty-eighth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet, the tracer's loss model and the decisions behind its truth).

What it adds to the twenty-seven before it: LOSS and TRUNCATION, as a real eBPF tracer loses data
under storms. An mlx5 RoCE inference fleet (one upstream 6.8 kernel, ConnectX-6 Dx, 60 s
snapshots, capture windows of 20 s on every second snapshot tick) whose tracer (a) keeps at most
K=4 records per failure signature per snapshot, the rest counted in the kernel and carried by
the last delivered example's repeat_count; (b) loses whole records when its ring buffer is full
(`lost_records`, counters exact), so a snapshot can count failures of which no record exists at
all; (c) holds a call tree in a fixed slot, 64 frames untimed and 32 timed (a timed frame also
carries its entry time and latency), so a long tree loses the frames entered last (lost_events:
the frames not recorded) -- a pin loop of 512 pages a call (`pin_user_pages_fast`) makes trees
of 10 to 110 frames, some longer than any slot; and (d) skips snapshots while its daemon restarts (the interval it died in
and the calls until it came back are unseen; a short first interval after). Root causes: ONE
host whose VF's firmware QP quota was cut, so its KV-transfer service's CREATE_QP fails LIM_ERR
(ENOMEM at mlx5_cmd_exec under mlx5_qpc_create_qp, after the SQ buffer's pin loop) in a tight
retry loop, ~2,000 failures a second, aborted and restarted by systemd for 90 minutes: the ring
stays full (most records lost), the daemon is OOM-killed twice, and its timed trees are cut --
some before the origin frame; and an SRQ destroyed under a running job on four hosts (a QP
attached to a shared receive queue: ENOENT at rdma_lookup_get_uobject, the [SRQ] lookup,
collapsed to EINVAL by create_qp), six failures in all, every record complete, fatal to the
rank. Routine, as full and as truncated trees: the UCX registration cache's aligned region
crossing an allocator guard hole (EFAULT at pin_user_pages_fast after k successful pins; the
origin is the last frame entered, so a truncated tree never shows it) then the exact buffer
registered; and 128-byte CQE padding refused by the firmware (EOPNOTSUPP at create_cq_user after
its pin loop; the origin is entered early, so truncated trees keep it), then a CQ without it.
Artefacts: a healthy host whose daemon stalls for 15 minutes (80 % of its records lost, routine
families only), daemon restarts on healthy hosts, jobs killed with their rank.
"""

from .generator import ROOM_TIMED, ROOM_UNTIMED, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["ROOM_TIMED", "ROOM_UNTIMED", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]

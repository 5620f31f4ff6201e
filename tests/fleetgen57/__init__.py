"""fleetgen57: a fifty-seventh fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings only (generator.py has the fleet and the process model).

What it adds: COUNTER SNAPSHOT TIMING AS REAL FLEET TRACERS PRODUCE IT. A counters row is the
delta of the interval that ENDS at its snapshot_time (interval_s long), and its 15-minute bucket
is the one that interval ends in, an end on a boundary belonging to the bucket before
(tracer.schema.BUCKET_OF). 12 mlx5 hosts (ConnectX-7, two python3 ranks each, one registration
and one QP creation every ~10 s a rank; a rank that dies is relaunched after a 60-120 s back-off) for 6 h of one UTC day, whose tracers snapshot every 5 s,
30 s, 60 s or 5 min, at phases off the quarter hours (gpu-a09 at :02:37, :07:37, ...; gpu-c05 at
:04:31, ...; gpu-a03 at x.8 s), a few ms of jitter each, one (gpu-b06) on the quarter hours.
gpu-c02's tracer died after its 03:41:37 snapshot and came back at 04:03:11 on a new phase (:11):
no snapshot, and no record, for the 21.5 minutes between (bucket 03:45 has none). Every tracer
opens a 60-s capture window every 10 minutes (its own phase): call trees inside are timed and good
ones sampled; outside, failures only, untimed.

Beside a routine family (CREATE_QP's firmware command timing out, ETIMEDOUT at mlx5_cmd_exec, on
~2 % of calls of every host, retried 250 ms later and through), three causes start and end at
times inside intervals and buckets:
  * cmdq_hang_after_power_event: a rack power event at 02:00:20 hangs the firmware command
    queue of gpu-a03 (5-s tracer) and gpu-a09 (5-min tracer) for 70 minutes: every CREATE_QP
    times out (the routine family's probe and errno), each rank dies after three tries and is
    relaunched;
  * gpu_buffer_unpinnable: gpu-b04 (30-s tracer) from 03:14:50 for 25 minutes: every reg_mr
    fails EFAULT at pin_user_pages_fast (ranks die, relaunched), then recovered;
  * memlock_limit_lowered: gpu-c02 (the restarted tracer, 60 s) from 04:07:03 to the window's
    end: every reg_mr fails ENOMEM at ib_umem_get (RLIMIT_MEMLOCK), ranks die.

The truth's decisions (README.md and docs/architecture.md are the standard):
  1. The routine timeouts retried through are the routine family's (expected_error true),
     wherever and whenever they happen outside a fault.
  2. Every failure of a cause host inside its fault window is the cause's (expected_error false),
     from the first one on: the docs keep a learned family open "from the stop on" on a host
     where its operation stopped succeeding; the stop is 02:00:20, not the first whole bucket.
  3. The bifurcation is the origin (every edge above it is on the good path).
"""

from .generator import (
    CAUSE_HOSTS,
    CMDQ_FROM,
    EFAULT_FROM,
    FAMILIES,
    FAULTS,
    HOSTS,
    LAYER,
    MEMLOCK_FROM,
    RESTART_GAP,
    RESTART_HOST,
    ROOT_CAUSES,
    ROUTINE,
    SCHEDULES,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["CAUSE_HOSTS", "CMDQ_FROM", "EFAULT_FROM", "FAMILIES", "FAULTS", "HOSTS", "LAYER", "MEMLOCK_FROM", "RESTART_GAP",
           "RESTART_HOST", "ROOT_CAUSES", "ROUTINE", "SCHEDULES", "TREE_FAMILY", "TREES", "generate"]

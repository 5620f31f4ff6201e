"""Time boundaries: a blind fleet generator (see __init__.py for the angle).

Written from reference/rdma_control_path.yaml (the operations' trees, the errno lists and the
errno_conventions), tracer/schema.py (tables, written through its writers in the dataset layout the
ingest produces: <root>/<table>/date=D/host=H/part-*.parquet, a counter_buckets summary beside every
counters file), README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
module docstrings. It imports only tracer.schema of the project.

The fleet
---------
`hosts` (10 by default, at least 8) mlx5 RoCE hosts `fg41-hNN` on 6.8.0-60-generic (in-tree mlx5:
ib_umem_get directly, no OFED peer memory), observed for `hours` (6) from 2026-12-14T21:00Z, i.e. to
03:00 the next day. One job slot a host, 4 ranks a job (comm python3, started 0.2 s apart), 20-40
minutes, the next job 1-3 minutes after one ends; half the jobs `serve` (an inference runtime), half
`train`. A rank's start-up, 30 ms a call: alloc_pd; create_cq; reg_mr twice; per QP (2) create_qp,
then modify_qp RESET->INIT, INIT->RTR, RTR->RTS (arg the transition); then until the job's end a
reg_mr every 60-120 s and a new connection every 2-4 minutes (one more QP: create_qp and its three
transitions; the jobs build sub-communicators for evaluation and checkpoint rounds, and NCCL connects
a peer lazily, on the first collective that needs it). The connections are why a GID fault is seen
by every running job within minutes, not only by jobs starting during it: each fault host surely
fails before and after midnight. Jobs run across midnight like any other minute. Port counter mode default
(rdma_counter_bind_qp_auto returns 0, nothing below it). A rank that dies of a call ends its job:
the launcher kills the other ranks 0.5 s later (a rank already inside a call then is killed in it:
no return, neither counted nor recorded). A health agent (`rdma-healthd`, one long-lived process a
host) reads the port's 8 GID entries every minute, from its systemd timer (OnCalendar=*:*:55, the
same on every host), one entry each 0.5 s: 23:59:55-23:59:58.5 is the last round before midnight, and
on a host whose snapshot holding 23:59:57-58.5 closes after 00:00 those reads are in date=D+1 with a
start_time on D (chosen so that the boundary snapshot surely holds failing records somewhere).

The tracer (probe set "rdma", fexit on every function of TREES; statics the reference marks usually
inlined -- verbs.c's rdma_fill_sgid_attr, create_qp, _create_user_qp -- are no frames; the UMR post
helpers below mlx5r_umr_update_mr_pas are not probed): 5-second snapshots at a per-host phase;
counters for every probe of the set in every snapshot, exact (every call of a live probe, recorded
or not); a tree is a record attempt when a frame fails: the first K=3 of a tree shape in a snapshot
are records, the rest counted in the kernel and carried by the snapshot's last record of that shape
as its repeat_count (null = 1); good trees only when their root entered a capture window (the first
30 s of every 10 minutes at a per-host phase, at most 12 of a tree a window). A tree whose root
entered a window is timed (ts_ns and latency_ns per frame); outside, every frame carries the 4 ms
tick its root returned in and latency null. No tree here exceeds the slot (24 frames): lost_events 0.
A record belongs to the snapshot holding its root's return.

Where the data lands: the date boundary
---------------------------------------
Every table is partitioned by the date of its snapshot: counters by snapshot_time (the interval's
end), a record's events and truth by the end of the snapshot that holds it. A snapshot closing at
00:00:03 holds trees entered at 23:59:59: those go to date=D+1 with start_time on D -- the partition
is the snapshot's, the rows keep their own times. So every host has date=2026-12-14 (21:00-24:00)
and date=2026-12-15 (00:00-03:00) partitions in events, counters, counter_buckets and truth, and a
job, a process and a cause span both.

Collection artefacts (nothing is wrong with these hosts; truth has no label for them)
-------------------------------------------------------------------------------------
  late host (index 2, a GID fault host)  its snapshots closing in 23:55-00:05 were shipped late (the
                 uplink flapped around midnight). The brief suggested writing them into the next
                 date's partition by write date; tracer/schema.py and docs/architecture.md say
                 otherwise ("Snapshots ingested late for such a day go to date=D/host=H/"): the
                 partition follows the snapshot, not the arrival. So, as the docs say, they arrive
                 as a second part file (part-0001.parquet) of their own date's partition: the
                 23:55-24:00 part in date=D, the 00:00-00:05 part in date=D+1, each with its
                 counter_buckets summary and its truth rows, not in part-0000. Nothing is repeated
                 (not a re-send): each snapshot and record is in exactly one file. `late_minutes`
                 (5) widens the span either side of 00:00: with 60, 23:00-01:00 arrived late, the
                 whole GID fault of that host in its part-0001 files.
  restart host (index 4, the other GID fault host)  logrotate.timer (OnCalendar=daily: 00:00)
                 rotates the tracer's log and its postrotate restarts the daemon at 00:00:00.2:
                 killed mid-interval (that interval's counters and records are never written), 15
                 s with no tracer (calls then are neither counted nor recorded; a call entered
                 before the kill and returned after it was never built), a first snapshot covering a
                 short interval at a new phase, record numbers from a new random start (the boot
                 id, in the trace ids, unchanged: the host did not reboot).

Routine (expected_error = True, root_cause = the family; the process goes on each time)
-------------------------------------------------------------------------------------------
  cq_comp_refused   every host, every serve rank once, before and after midnight: the inference
                 runtime asks create_cq for CQE compression, which this NIC reports no cap for (an
                 assumption of this generator; the errno and its condition are the reference's:
                 create_cq_user "-EOPNOTSUPP CQE compression or 128B padding requested without HW
                 cap"): EOPNOTSUPP at create_cq_user after its buffer is pinned and doorbell mapped,
                 up through mlx5_ib_create_cq, create_cq, ib_uverbs_create_cq (umem released,
                 uobject aborted). EOPNOTSUPP tells the caller to do without, and it does: the CQ is
                 created again 3 ms later without compression and the rank goes on.
  gid_empty_slot    every host, every minute: the agent reads GID entries 0-7 of its port; 6 and 7
                 are empty ("-ENODATA empty GID slot" at rdma_get_gid_attr, reference query_gid),
                 returned by ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY; the agent goes on. On
                 the GID fault hosts during the fault, entry 3 (the one the jobs use, whose IP was
                 removed) reads empty too: the same operation, origin and errno, and the agent goes
                 on, so these reads are this routine family as well (the harm of the removed IP is
                 the jobs' modify_qp, not the agent's read).

Root causes (expected_error = False; fatal to its process)
----------------------------------------------------------
  gid_rtr_enodata    GID fault hosts (indexes 2 and 4), 23:40-00:40: a network-config push removes
                 the RoCEv2 IP the jobs' GID index 3 maps to; the GID cache entry goes invalid and
                 every INIT->RTR fails in rdma_get_gid_attr with -ENODATA ("GID table entry
                 empty/invalid (e.g. IP removed)", reference modify_qp), called by _ib_modify_qp
                 (rdma_fill_sgid_attr inlined), up through ib_modify_qp_with_udata, modify_qp and
                 ib_uverbs_modify_qp (each passes the child's errno; the QP read ref is put). NCCL
                 aborts the rank on it: fatal. The IP is restored at 00:40. One cause, one hour,
                 across the date boundary and both artefacts: its records must be ONE cluster naming
                 both hosts, not one per date.
  umr_mr_efault      UMR host (index 7), 01:30-01:50, entirely on date D+1: the driver's UMR QP is
                 in error state, so every reg_mr fails EFAULT at mlx5r_umr_update_mr_pas
                 ("mlx5r_umr_post_send_wait: UMR QP in error state or UMR completion error (after
                 recovery attempt)"), up through create_real_mr (whose mlx5_ib_dereg_mr unwinds the
                 mkey, releasing the umem), mlx5_ib_reg_user_mr and ib_uverbs_reg_mr (uobject
                 aborted). Fatal to the rank, and its job with it.

Alerts: none is required. On a cause's host an alert naming the cause's errno at a frame its records
fail at is acceptable. No alert may name a routine family's (probe, errno) on a host where no cause
fails at that same (probe, errno) -- the GID fault hosts' rdma_get_gid_attr ENODATA is the cause's
frame too -- and none the late or restart host for their artefacts alone.

Truth: one row per record, keyed (host, trace_id), in the same date/host partition and part file as
the record's events. root_cause the family (ROOT_CAUSES or ROUTINE), null for good records;
bifurcation = origin (the deepest failing frame none of whose callees failed; its parent edge is in
the good trees of its operation); origin_layer its layer. Good records: kind good, no cause,
expected_error False, held_out False. faults=False (the control): no cause; the jobs, the agent, the
routine, the late and the restart host the same. `faults` may also be a list of cause names to keep.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
from fleet_tables import extend_rows, frame

from tracer.schema import metadata_list, write_counter_buckets, write_partition

START = dt.datetime(2026, 12, 14, 21, tzinfo=dt.UTC)
MIDNIGHT = 3 * 3600.0  # seconds after START
KERNEL = "6.8.0-60-generic"
K = 3
SLOT = 24
SNAP_S = 5.0
WINDOW_EVERY, WINDOW_LEN, WINDOW_CAP = 600.0, 30.0, 12
ERRNO_NUM = {"ENODATA": 61, "EFAULT": 14, "EOPNOTSUPP": 95}
GID_FAULT = (MIDNIGHT - 1200.0, MIDNIGHT + 2400.0)  # 23:40-00:40
UMR_FAULT = (MIDNIGHT + 5400.0, MIDNIGHT + 6600.0)  # 01:30-01:50
LATE_MINUTES = 5  # the late host's snapshots closing 23:55-00:05 (late_minutes either side of 00:00)
RESTART_DOWN = (MIDNIGHT + 0.2, MIDNIGHT + 15.2)

_UVERBS = {"create_qp", "create_cq", "modify_qp", "uverbs_request", "uverbs_response"}
_DRIVER = {"create_user_qp", "create_cq_user", "create_real_mr", "alloc_cacheable_mr", "__mlx5_ib_modify_qp"}


def _layer(fn: str) -> str:
    if fn.startswith("ib_uverbs_") or fn in _UVERBS:
        return "uverbs"
    if fn.startswith("mlx5") or fn in _DRIVER:
        return "driver"
    return "core"


def _pins(n: int, depth: int) -> list:
    return [(depth, "pin_user_pages_fast", None)] * n


def _create_qp() -> list:
    return [(0, "ib_uverbs_create_qp", None), (1, "create_qp", None), (2, "rdma_alloc_begin_uobject", None),
            (2, "rdma_lookup_get_uobject", None), (2, "rdma_lookup_get_uobject", None),
            (2, "ib_create_qp_user", None), (3, "mlx5_ib_create_qp", None), (4, "create_user_qp", None),
            (5, "ib_umem_get", None), *_pins(2, 6), (5, "mlx5_ib_db_map_user", None),
            (5, "mlx5_qpc_create_qp", None), (6, "mlx5_cmd_exec", None), (3, "ib_create_qp_security", None),
            (3, "rdma_restrack_add", None), (2, "ib_qp_usecnt_inc", None), (2, "rdma_lookup_put_uobject", None),
            (2, "uverbs_response", None)]


def _modify(transition: str, fail: str | None = None) -> list:
    e = fail
    head = [(0, "ib_uverbs_modify_qp", e), (1, "modify_qp", e), (2, "rdma_lookup_get_uobject", None),
            (2, "ib_modify_qp_with_udata", e), (3, "_ib_modify_qp", e)]
    if fail:  # rdma_fill_sgid_attr (inlined) fails on the GID lookup: nothing else runs
        return head + [(4, "rdma_get_gid_attr", e), (2, "rdma_lookup_put_uobject", None)]
    mid = {"RESET->INIT": [(4, "rdma_counter_bind_qp_auto", None)],
           "INIT->RTR": [(4, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", None),
                         (5, "rdma_addr_find_l2_eth_by_grh", None), (4, "rdma_lag_get_ah_roce_slave", None)],
           "RTR->RTS": []}[transition]
    tail = [(4, "rdma_lag_put_ah_roce_slave", None)] if transition == "INIT->RTR" else []
    return head + [*mid, (4, "ib_security_modify_qp", None), (5, "mlx5_ib_modify_qp", None),
                   (6, "ib_modify_qp_is_ok", None), (6, "__mlx5_ib_modify_qp", None),
                   (7, "mlx5_core_qp_modify", None), (8, "mlx5_cmd_exec", None), *tail,
                   (2, "rdma_lookup_put_uobject", None)]


def _create_cq(fail: str | None) -> list:
    e = fail
    head = [(0, "ib_uverbs_create_cq", e), (1, "create_cq", e), (2, "rdma_alloc_begin_uobject", None),
            (2, "mlx5_ib_create_cq", e), (3, "create_cq_user", e), (4, "ib_umem_get", None), *_pins(1, 5),
            (4, "mlx5_ib_db_map_user", None)]
    if fail:
        return head + [(4, "ib_umem_release", None), (2, "rdma_alloc_abort_uobject", None)]
    return head + [(3, "mlx5_comp_eqn_get", None), (3, "mlx5_core_create_cq", None), (2, "rdma_restrack_add", None),
                   (2, "uverbs_response", None)]


def _reg_mr(fail: str | None) -> list:
    e = fail
    head = [(0, "ib_uverbs_reg_mr", e), (1, "rdma_alloc_begin_uobject", None), (1, "rdma_lookup_get_uobject", None),
            (1, "mlx5_ib_reg_user_mr", e), (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get", None),
            *_pins(4, 3), (3, "sg_alloc_append_table_from_pages", None), (2, "create_real_mr", e),
            (3, "alloc_cacheable_mr", None), (3, "mlx5r_umr_update_mr_pas", e)]
    if fail:  # create_real_mr: "enabling via UMR fails; mlx5_ib_dereg_mr unwinds"
        return head + [(3, "mlx5_ib_dereg_mr", None), (4, "ib_umem_release", None),
                       (1, "rdma_lookup_put_uobject", None), (1, "rdma_alloc_abort_uobject", None)]
    return head + [(1, "rdma_restrack_add", None), (1, "rdma_lookup_put_uobject", None), (1, "uverbs_response", None)]


# name -> (operation, arg, frames [(depth, function, errno or None)])
TREES: dict[str, tuple[str, str | None, list]] = {
    "alloc_pd": ("alloc_pd", None, [
        (0, "ib_uverbs_alloc_pd", None), (1, "uverbs_request", None), (1, "rdma_alloc_begin_uobject", None),
        (1, "mlx5_ib_alloc_pd", None), (2, "mlx5_cmd_exec", None), (1, "rdma_restrack_add", None),
        (1, "uverbs_response", None)]),
    "create_cq": ("create_cq", None, _create_cq(None)),
    "create_cq_comp": ("create_cq", None, _create_cq("EOPNOTSUPP")),
    "reg_mr": ("reg_mr", None, _reg_mr(None)),
    "reg_mr_umr_efault": ("reg_mr", None, _reg_mr("EFAULT")),
    "create_qp": ("create_qp", None, _create_qp()),
    "modify_init": ("modify_qp", "RESET->INIT", _modify("RESET->INIT")),
    "modify_rtr": ("modify_qp", "INIT->RTR", _modify("INIT->RTR")),
    "modify_rtr_gid": ("modify_qp", "INIT->RTR", _modify("INIT->RTR", "ENODATA")),
    "modify_rts": ("modify_qp", "RTR->RTS", _modify("RTR->RTS")),
    "query_gid": ("query_gid", None, [
        (0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", None), (1, "rdma_get_gid_attr", None),
        (1, "rdma_read_gid_attr_ndev_rcu", None), (1, "rdma_put_gid_attr", None)]),
    "query_gid_empty": ("query_gid", None, [
        (0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "ENODATA"), (1, "rdma_get_gid_attr", "ENODATA")]),
}

# family -> (origin probe, errno, origin layer)
ROOT_CAUSES = {
    "gid_rtr_enodata": ("rdma_get_gid_attr", "ENODATA", "core"),
    "umr_mr_efault": ("mlx5r_umr_update_mr_pas", "EFAULT", "driver"),
}
ROUTINE = {
    "cq_comp_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "core"),
}
FAMILIES = {**ROOT_CAUSES, **ROUTINE}
TREE_FAMILY = {"modify_rtr_gid": "gid_rtr_enodata", "reg_mr_umr_efault": "umr_mr_efault",
               "create_cq_comp": "cq_comp_refused", "query_gid_empty": "gid_empty_slot"}
FATAL = {"modify_rtr_gid", "reg_mr_umr_efault"}
PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
LAYER = {fn: _layer(fn) for fn in PROBES}
DURATION = 0.002
assert max(len(f) for _, _, f in TREES.values()) <= SLOT

_EV_SCHEMA = {
    "trace_id": pl.String, "seq": pl.Int64, "ts_ns": pl.Int64, "pid": pl.Int32, "tid": pl.Int32,
    "ppid": pl.Int32, "comm": pl.String, "probe": pl.String, "layer": pl.String, "depth": pl.Int16,
    "ret": pl.Int64, "errno": pl.String, "latency_ns": pl.Int64, "arg": pl.String, "kind": pl.String,
    "command": pl.String, "exit_status": pl.Int32, "start_time": pl.Datetime("ns", "UTC"),
    "end_time": pl.Datetime("ns", "UTC"), "lost_events": pl.Int64, "job_id": pl.String,
    "metadata": pl.List(pl.Struct({"key": pl.String, "value": pl.String})), "repeat_count": pl.Int64}
_TRUTH_SCHEMA = {
    "trace_id": pl.String, "host": pl.String, "kind": pl.String, "root_cause": pl.String,
    "bifurcation_probe": pl.String, "bifurcation_errno": pl.String, "origin_layer": pl.String,
    "expected_error": pl.Boolean, "held_out": pl.Boolean}


def _iso(t: float) -> str:
    return (START + dt.timedelta(seconds=t)).isoformat()


def _date(t: float) -> str:
    return (START + dt.timedelta(seconds=t)).date().isoformat()


def _intervals(rng, end: float, downs: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Snapshot intervals (start, end) of one host: 5 s at a phase; a kill loses the interval it
    falls in; a restart starts with a short interval up to a new phase."""
    periods, up = [], None
    for d0, d1 in downs:
        periods.append((up, d0))
        up = d1
    periods.append((up, end))
    out = []
    for p0, p1 in periods:
        phase = rng.uniform(0.01, SNAP_S)
        a, b = (phase - SNAP_S, phase) if p0 is None else (p0, p0 + phase)
        while b <= p1:
            out.append((a, b))
            a, b = b, b + SNAP_S
    return out


def _windows(rng, end: float) -> list[tuple[float, float]]:
    phase = rng.uniform(0, WINDOW_EVERY)
    out, w = [], phase - WINDOW_EVERY
    while w < end:
        if w + WINDOW_LEN > 0:
            out.append((max(w, 0.0), w + WINDOW_LEN))
        w += WINDOW_EVERY
    return out


def generate(out_dir, hosts: int = 10, hours: float = 6, seed: int = 41, faults=True,
             late_minutes: float = LATE_MINUTES) -> dict:
    if hosts < 8:
        raise ValueError("fleetgen41 needs at least 8 hosts")
    if hours * 3600.0 < UMR_FAULT[1] + 600.0:
        raise ValueError("fleetgen41 needs the window to reach past 02:00")
    root = Path(out_dir)
    end = hours * 3600.0
    late_span = (MIDNIGHT - 60.0 * late_minutes, MIDNIGHT + 60.0 * late_minutes)
    names = [f"fg41-h{i:02d}" for i in range(hosts)]
    late_host, restart_host, umr_host = names[2], names[4], names[7]
    gid_hosts = [late_host, restart_host]
    keep = set(ROOT_CAUSES) if faults is True else set() if not faults else set(faults)
    counts: dict[str, int] = defaultdict(int)
    family_hosts: dict[str, set] = defaultdict(set)
    files: dict[str, list[str]] = defaultdict(list)
    for h_i, host in enumerate(names):
        hr = random.Random(f"{seed}:{host}")
        boot = hr.randrange(10**9, 9 * 10**9)
        boot_offset = 3 * 86400 + hr.uniform(0, 3600)  # monotonic seconds at the window start
        downs = [RESTART_DOWN] if host == restart_host else []
        intervals = _intervals(hr, end, downs)
        ends = [b for _, b in intervals]
        windows = _windows(hr, end)
        wstarts = [a for a, _ in windows]
        gid_fault = GID_FAULT if host in gid_hosts and "gid_rtr_enodata" in keep else None
        umr_fault = UMR_FAULT if host == umr_host and "umr_mr_efault" in keep else None
        calls = []  # (t, tree, pid, ppid, comm, job_id, metadata)
        pid = hr.randrange(3000, 9000)
        agent_pid = pid
        pid += 1
        t = 55.0  # its timer: OnCalendar=*:*:55, every host alike
        while t < end:
            ip_gone = gid_fault is not None and gid_fault[0] <= t < gid_fault[1]
            for slot in range(8):
                empty = slot >= 6 or (slot == 3 and ip_gone)
                calls.append((t + 0.5 * slot, "query_gid_empty" if empty else "query_gid", agent_pid, 1,
                              "rdma-healthd", None, None))
            t += 60.0
        # jobs
        t = hr.uniform(0, 120)
        job_n = 0
        while t < end:
            job_n += 1
            job_id = f"{h_i * 1000 + job_n}"
            jtype = "serve" if hr.random() < 0.5 else "train"
            meta = {"tenant": "lumen" if jtype == "serve" else "orion", "job_type": jtype}
            planned = t + hr.uniform(1200, 2400)
            launcher = pid
            pid += 1
            ranks = []
            death = None
            for r in range(4):
                rp = pid
                pid += 1
                c = t + 0.2 * r
                seq = [(c, "alloc_pd")]
                c += 0.03
                if jtype == "serve":
                    seq.append((c, "create_cq_comp"))
                    c += 0.003
                seq.append((c, "create_cq"))
                for _ in range(2):
                    c += 0.03
                    seq.append((c, "reg_mr"))
                for _ in range(2):
                    for tree in ("create_qp", "modify_init", "modify_rtr", "modify_rts"):
                        c += 0.03
                        seq.append((c, tree))
                later = []
                m = c + hr.uniform(60, 120)
                while m < planned:
                    later.append((m, "reg_mr"))
                    m += hr.uniform(60, 120)
                q = c + hr.uniform(120, 240)
                while q < planned:
                    for k, tree in enumerate(("create_qp", "modify_init", "modify_rtr", "modify_rts")):
                        later.append((q + 0.03 * k, tree))
                    q += hr.uniform(120, 240)
                seq.extend(sorted(later))
                # the faults: the call fails in its span and the rank dies of it (nothing after)
                out = []
                for ct, tree in seq:
                    if tree == "modify_rtr" and gid_fault and gid_fault[0] <= ct < gid_fault[1]:
                        tree = "modify_rtr_gid"
                    elif tree == "reg_mr" and umr_fault and umr_fault[0] <= ct < umr_fault[1]:
                        tree = "reg_mr_umr_efault"
                    out.append((ct, tree))
                    if tree in FATAL:
                        back = ct + DURATION
                        death = back if death is None else min(death, back)
                        break
                ranks.append((rp, out))
            stop = planned if death is None else death + 0.5
            for rp, seq in ranks:
                for ct, tree in seq:
                    if ct >= end or ct + DURATION > stop:
                        continue  # after the job's end, or killed inside the call
                    calls.append((ct, tree, rp, launcher, "python3", job_id, meta))
            t = stop + hr.uniform(60, 180)
        calls.sort(key=lambda c: c[0])

        # pass 1: snapshot, timing, record attempts
        cnt: dict[tuple[int, str], int] = defaultdict(int)
        groups: dict[tuple[int, str], list[int]] = defaultdict(list)
        wgood: dict[tuple[int, str], int] = defaultdict(int)
        status = [False] * len(calls)
        timed = [False] * len(calls)
        snap = [None] * len(calls)
        for i, (ct, tree, *_rest) in enumerate(calls):
            back = ct + DURATION
            j = bisect.bisect_left(ends, back)
            if j >= len(intervals) or not (intervals[j][0] <= back < intervals[j][1]):
                continue  # no snapshot holds its return: the tracer was down (unseen)
            if any(d0 < back and ct < d1 for d0, d1 in downs):
                continue  # entered before the tracer restarted: its tree was never built
            snap[i] = j
            cnt[(j, tree)] += 1
            w = bisect.bisect_right(wstarts, ct) - 1
            inwin = w >= 0 and windows[w][0] <= ct < windows[w][1]
            timed[i] = inwin
            if any(e for _, _, e in TREES[tree][2]):
                groups[(j, tree)].append(i)
            elif inwin and wgood[(w, tree)] < WINDOW_CAP:
                wgood[(w, tree)] += 1
                status[i] = True
        repeat = {}
        for idx in groups.values():
            for a in idx[:K]:
                status[a] = True
            repeat[idx[:K][-1]] = 1 + len(idx[K:])

        # pass 2: records in time order; a restarted daemon numbers from a new random start
        recno = hr.randrange(1, 2**31)
        restarted = False
        ev: dict[int, dict[str, list]] = defaultdict(dict)  # snapshot -> its records' rows, column by column
        truth = defaultdict(list)
        for i, (ct, tree, rp, ppid, comm, job_id, meta) in enumerate(calls):
            if not status[i]:
                continue
            if downs and not restarted and ct >= downs[0][1]:
                recno = hr.randrange(1, 2**31)
                restarted = True
            recno += 1
            op, arg, frames = TREES[tree]
            weight = repeat.get(i, 1)
            tid = f"{host}:{boot}:{rp}:{recno}"
            mono0 = int((boot_offset + ct) * 1e9)
            back = ct + DURATION
            root_err = frames[0][2]
            fam = TREE_FAMILY.get(tree)
            if timed[i]:
                entries, at = [], mono0
                for _ in frames:
                    entries.append(at)
                    at += 1500
                root_end = at + 1000
                lats = []
                for k, (d, _fn, _e) in enumerate(frames):
                    nxt = next((entries[m] for m in range(k + 1, len(frames)) if frames[m][0] <= d), root_end)
                    lats.append(nxt - 100 - entries[k])
                ts = entries
                st = START + dt.timedelta(seconds=ct)
                en = st + dt.timedelta(microseconds=lats[0] / 1000)
            else:
                tick = int((boot_offset + back) * 1e9) // 4_000_000 * 4_000_000
                ts = [tick] * len(frames)
                lats = [None] * len(frames)
                st = en = START + dt.timedelta(microseconds=(tick - int(boot_offset * 1e9)) // 1000)
            if len(ts) != len(frames) or len(lats) != len(frames):
                raise ValueError(f"{tid}: a time for every frame")
            extend_rows(ev[snap[i]], {
                "seq": range(len(frames)), "ts_ns": ts, "probe": [fn for _, fn, _ in frames],
                "layer": [LAYER[fn] for _, fn, _ in frames], "depth": [d for d, _, _ in frames],
                "ret": [-ERRNO_NUM[e] if e else 0 for _, _, e in frames], "errno": [e for _, _, e in frames],
                "latency_ns": lats}, {
                "trace_id": tid, "pid": rp, "tid": rp, "ppid": ppid, "comm": comm, "arg": arg,
                "kind": "failure" if root_err else "good", "command": op,
                "exit_status": -ERRNO_NUM[root_err] if root_err else 0, "start_time": st, "end_time": en,
                "lost_events": 0, "job_id": job_id, "metadata": metadata_list(meta),
                "repeat_count": weight if weight > 1 else None})
            if fam:
                counts[fam] += 1
                family_hosts[fam].add(host)
                probe, errno, layer = FAMILIES[fam]
                truth[snap[i]].append((tid, host, "failure", fam, probe, errno, layer, fam in ROUTINE, False))
            else:
                truth[snap[i]].append((tid, host, "good", None, None, None, None, False, False))

        # counters: every probe in every snapshot
        pidx = {fn: k for k, fn in enumerate(PROBES)}
        inv = np.zeros((len(intervals), len(PROBES)), np.int64)
        fail = np.zeros_like(inv)
        errs: dict[tuple[int, int, str], int] = defaultdict(int)
        for (j, tree), c in cnt.items():
            for _, fn, e in TREES[tree][2]:
                inv[j, pidx[fn]] += c
                if e:
                    fail[j, pidx[fn]] += c
                    errs[(j, pidx[fn], e)] += c
        n = len(intervals)
        snap_end = np.array(ends)
        snap_len = np.array([b - a for a, b in intervals])
        base_ns = int(START.timestamp() * 1e9)
        counters = pl.DataFrame({
            "row_j": np.repeat(np.arange(n), len(PROBES)),
            "row_p": np.tile(np.arange(len(PROBES)), n),
            "snapshot_time": np.repeat((snap_end * 1e9).round().astype(np.int64) + base_ns, len(PROBES)),
            "interval_s": np.repeat(snap_len.round(6), len(PROBES)),
            "probe": PROBES * n,  # (Python strings: polars converts a numpy string array slowly)
            "layer": [LAYER[fn] for fn in PROBES] * n,
            "invocations": inv.ravel(), "failures": fail.ravel(),
            "lost_records": np.zeros(n * len(PROBES), np.int64),
        }).with_columns(pl.col("snapshot_time").cast(pl.Datetime("ns", "UTC")))
        ecells = pl.DataFrame([(j, p, e, c) for (j, p, e), c in errs.items()], orient="row",
                              schema={"row_j": pl.Int64, "row_p": pl.Int64, "errno": pl.String, "count": pl.Int64})
        ecells = ecells.sort("row_j", "row_p", "errno").group_by("row_j", "row_p").agg(
            pl.struct("errno", "count").alias("errno_counts"))
        counters = (counters.join(ecells, on=["row_j", "row_p"], how="left", maintain_order="left")
                    .with_columns(pl.col("errno_counts").fill_null([]))
                    .with_columns(
            pl.lit(host).alias("host"), pl.lit(KERNEL).alias("kernel_release"), pl.lit("mlx5").alias("vendor"),
            pl.lit("rdma").alias("probe_set"), pl.lit(True).alias("live")))

        # where each snapshot lands: its date; the late host's 23:55-00:05 snapshots in part-0001
        placement: dict[tuple[str, str], list[int]] = defaultdict(list)
        for j, b in enumerate(ends):
            late = host == late_host and late_span[0] <= b < late_span[1]
            placement[(_date(b), "part-0001.parquet" if late else "part-0000.parquet")].append(j)
        for (date, name), snaps in sorted(placement.items()):
            cols: dict[str, list] = {column: [] for column in _EV_SCHEMA}
            for j in snaps:
                for column, values in ev.get(j, {}).items():
                    cols[column] += values
            events = frame(cols, schema=_EV_SCHEMA).with_columns(
                pl.lit(host).alias("host"), pl.lit(KERNEL).alias("kernel_release"),
                pl.lit(None, pl.String).alias("path"), pl.lit(None, pl.String).alias("path2"),
                pl.lit(None, pl.String).alias("output"))
            write_partition(events, root, "events", date, host, name, durable=False)
            tr = pl.DataFrame([r for j in snaps for r in truth.get(j, [])], orient="row", schema=_TRUTH_SCHEMA)
            write_partition(tr, root, "truth", date, host, name, durable=False)
            cpath = write_partition(counters.filter(pl.col("row_j").is_in(snaps)).drop("row_j", "row_p"), root,
                                    "counters", date, host, name, durable=False)
            write_counter_buckets(cpath, durable=False)
            files[host].append(f"{date}/{name}")

    summary = {
        "hosts": names, "gid_hosts": gid_hosts, "late_host": late_host, "restart_host": restart_host,
        "umr_host": umr_host, "midnight": _iso(MIDNIGHT), "dates": [_date(0.0), _date(end - 1.0)],
        "gid_fault": [_iso(GID_FAULT[0]), _iso(GID_FAULT[1])], "umr_fault": [_iso(UMR_FAULT[0]), _iso(UMR_FAULT[1])],
        "late_span": [_iso(late_span[0]), _iso(late_span[1])],
        "restart_down": [_iso(RESTART_DOWN[0]), _iso(RESTART_DOWN[1])],
        "counts": dict(counts), "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
        "files": dict(files),
    }
    (root / "fleetgen41.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

"""What the collection path does to the data: a blind fleet generator (see __init__.py for the angle).

Written from reference/rdma_control_path.yaml (the operations' trees, the errno lists and the
errno_conventions), tracer/schema.py (tables, written through its writers in the dataset layout the
ingest produces: <root>/<table>/date=D/host=H/part-*.parquet, a counter_buckets summary beside every
counters file; RECORD_KEY and SNAPSHOT_KEY for what a re-sent snapshot repeats), README.md,
docs/architecture.md (the fleet tracer's kernel side: slots, aggregation, ring buffer, capture
windows; restarts, spool sequence numbers, re-sent snapshots), tests/fleet_harness.py and the other
generators' module docstrings. It imports only tracer.schema of the project.

The fleet
---------
`hosts` (8 by default, at least 8) mlx5 RoCE hosts `fg38-hNN` on 6.8.0-60-generic (in-tree mlx5:
ib_umem_get directly, no OFED peer memory), for `hours` (3) from 2026-12-14T00:00Z. One job slot a
host, 4 ranks a job (comm python3, started 0.2 s apart), 20-40 minutes, the next job 1-3 minutes after
one ends; half the jobs are `serve` (an inference runtime), half `train`. A rank's start-up, 30 ms a
call: alloc_pd; create_cq; reg_mr twice; per QP (2) create_qp then RESET->INIT, INIT->RTR, RTR->RTS
(modify_qp, arg the transition); then a reg_mr every 60-120 s until the job's end. The port counter
mode is the default (rdma_counter_bind_qp_auto returns 0 with nothing below it). A rank that dies
ends its job: the launcher kills the others 0.5 s after (no call after). A health agent
(`rdma-healthd`, one long-lived process a host) reads the port's 8 GID entries every minute.

The tracer (probe set "rdma", fexit on every function of TREES; statics the reference marks usually
inlined -- verbs.c's create_qp, _create_user_qp, rdma_fill_sgid_attr -- are not frames): 5-second
snapshots at a per-host phase; counters for every probe of the set in every snapshot, exact (every
call of a live probe, recorded or not, whole trees counted even where a record was cut); a tree is a
record attempt when a frame fails: the first K=3 of a signature (its tree shape and errnos) in a
snapshot, the rest counted in the kernel and carried by the last delivered example of the snapshot as
its repeat_count (null = 1); good trees only when their root entered a capture window (the first 30 s
of every 10 minutes at a per-host phase, at most 12 of a tree a window). A tree whose root entered a
window is timed (ts_ns and latency_ns per frame); outside, every frame carries the 4 ms tick its root
returned in and latency null. The slot holds ROOM_TIMED (24) timed frames or ROOM_UNTIMED (48) untimed
ones: a longer tree keeps the frames it entered first (a frame's return is written into its own
entry, so the root and the callers entered early keep their errno) and counts the rest in
lost_events ("a record that ran out of room loses the frames entered last"). A record attempt while
the ring buffer is full is lost: counted in the snapshot's lost_records (the same on every counters
row of the snapshot); its record number was taken (a gap in the trace ids, host:boot:tid:recno).

Collection artefacts (nothing is wrong with these hosts; truth has no label for them)
-------------------------------------------------------------------------------------
  storm host (index 1)   the service's crash loop below: 5 instances a second, so 25 failing trees a
                 snapshot: 3 records, the last with repeat_count ~23 (mostly aggregated). The
                 reader falls behind in the storm: in 40 % of the storm's snapshots the second
                 record attempt is lost (lost_records 1); its failure is in the counters only
                 (counters failures = sum of the records' repeat_count + lost_records). Its timed
                 trees (in windows) are cut at 24 frames: the 24 pins of the service's SQ push
                 mlx5_qpc_create_qp, mlx5_cmd_exec and the unwind into the lost tail (lost_events
                 15), so a cut record shows ENOMEM at create_user_qp and above only.
  restart host (index 3) its tracer is restarted at 60 % of the window (a package upgrade): killed
                 mid-interval (that interval is never written: neither its counters nor its
                 records), 3 minutes with no snapshot (the calls then are neither counted nor
                 recorded), a first snapshot covering a short interval at a new phase, record
                 numbers from a new random start. Its spool's sequence numbers continue from the
                 highest (tracer/schema.py, SNAPSHOT_NAME); the dataset does not carry them.
  gap host (index 5)     its tracer is down for an hour (00:50-01:50): no snapshot at all then.
  re-sent host (index 6) 30 minutes of its snapshots (01:20-01:50) were shipped twice (a spool
                 re-sent after a crash): the same counters rows (SNAPSHOT_KEY) and the same call
                 trees (RECORD_KEY) again in a second part file of the same partitions
                 (part-0001.parquet). Per docs/architecture.md every reader counts each key once,
                 its first copy; truth has one row per record.

  storm_artefacts=True   the storm host's own tracer is also restarted 20 minutes into the storm
                 (the killed interval's trees and counts lost, 3 minutes unseen, a short first
                 interval, new record numbers), and 10 minutes of its storm snapshots (5-15 minutes
                 in) are re-sent: its heaviest, most aggregated records twice in the files.

Routine (expected_error = True, root_cause = the family; the process goes on each time)
-------------------------------------------------------------------------------------------
  cq_comp_refused   every host, every serve rank once: the inference runtime asks create_cq for CQE
                 compression, which this NIC reports no cap for (an assumption of this generator;
                 the errno and its condition are the reference's: create_cq_user "-EOPNOTSUPP CQE
                 compression or 128B padding requested without HW cap"): EOPNOTSUPP at
                 create_cq_user after its buffer is pinned and its doorbell mapped, up through
                 mlx5_ib_create_cq, create_cq, ib_uverbs_create_cq (umem released, uobject aborted).
                 EOPNOTSUPP tells the caller to do without, and it does: the CQ is created again 3 ms
                 later without compression, and the rank goes on.
  gid_empty_slot    every host, every minute: the agent reads GID entries 0-7 of its port, 6 and 7
                 are empty ("-ENODATA empty GID slot" at rdma_get_gid_attr, reference query_gid),
                 returned by ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY; the agent goes on.

Root causes (expected_error = False; fatal to its process)
----------------------------------------------------------
  svc_qp_fw_enomem   the storm, storm host: from `storm_start` (50 % of the window) a config push
                 to this host's `rdma-proxyd.service` asks its data QP with a 48 MiB send queue; the
                 host's NIC firmware answers that CREATE_QP LIM_ERR, -ENOMEM (errno_conventions:
                 "LIM_ERR->-ENOMEM") at mlx5_cmd_exec under mlx5_qpc_create_qp, up through
                 create_user_qp, mlx5_ib_create_qp, ib_create_qp_user, create_qp and
                 ib_uverbs_create_qp (destroy_qp and ib_umem_release unwind the user buffers, the
                 uobject is aborted). The service exits on it and systemd restarts it at once
                 (Restart=always, RestartSec=100ms, StartLimitIntervalSec=0: the unit's maximum rate,
                 a new pid 5 times a second: alloc_pd and create_cq succeed, create_qp fails) until
                 the on-call stops the unit at `storm_end` (40 minutes). The jobs' small QPs on the
                 same host pass. Every record of it -- complete, aggregated or cut -- is this cause,
                 bifurcation mlx5_cmd_exec ENOMEM (the origin; a cut record's origin is in its lost
                 tail, its kept frames the same chain's, same caller); its weight is the sum of its
                 records' repeat_count, which equals the counters' ENOMEM at ib_uverbs_create_qp
                 minus the lost records.
  fw_cmd_timeout     re-sent host: for 45 minutes from 40 % of the window its NIC firmware answers
                 40 % of ALLOC_PD commands late: ETIMEDOUT at mlx5_cmd_exec (errno_conventions:
                 "-ETIMEDOUT (command timeout)") after 60 s, up through mlx5_ib_alloc_pd and
                 ib_uverbs_alloc_pd (uobject aborted). Fatal to the rank, and its job with it. Its
                 records inside the re-sent span are there twice in the files and count once.

Alerts: none is required. On the storm host an alert naming ENOMEM at a frame its records fail at
(or a bad state named by one of them) is acceptable, and on the re-sent host ETIMEDOUT at its failing
frames. No routine family's (probe, errno) may alert anywhere, and no alert may name the restart or
gap hosts (their data is incomplete, not bad).

Truth: one row per record, keyed (host, trace_id). root_cause the family (ROOT_CAUSES or ROUTINE),
null for good records; bifurcation = origin (the deepest failing frame none of whose callees failed;
its parent edge is in the good trees of its operation); origin_layer its layer. Good records: kind
good, no cause, expected_error False, held_out False. With faults=False (the control) the two causes
are absent; the jobs, the agent, the routine families and the restart, gap and re-sent hosts are the
same (no storm, so no lost records). `faults` may also be a list of cause names to keep.
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

from tracer.schema import metadata_list, write_counter_buckets, write_partition

START = dt.datetime(2026, 12, 14, tzinfo=dt.UTC)
KERNEL = "6.8.0-60-generic"
K = 3
ROOM_TIMED, ROOM_UNTIMED = 24, 48
SNAP_S = 5.0
WINDOW_EVERY, WINDOW_LEN, WINDOW_CAP = 600.0, 30.0, 12
ERRNO_NUM = {"ENOMEM": 12, "ETIMEDOUT": 110, "EOPNOTSUPP": 95, "ENODATA": 61}

_UVERBS = {"create_qp", "create_cq", "modify_qp", "uverbs_request", "uverbs_response"}
_DRIVER = {"create_user_qp", "create_cq_user", "destroy_qp", "create_real_mr", "alloc_cacheable_mr",
           "__mlx5_ib_modify_qp"}


def _layer(fn: str) -> str:
    if fn.startswith("ib_uverbs_") or fn in _UVERBS:
        return "uverbs"
    if fn.startswith("mlx5") or fn in _DRIVER:
        return "driver"
    return "core"


def _pins(n: int, depth: int, errno=None) -> list:
    return [(depth, "pin_user_pages_fast", errno)] * n


def _create_qp(pins: int, fail: str | None) -> list:
    e = fail
    head = [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), (2, "rdma_alloc_begin_uobject", None),
            (2, "rdma_lookup_get_uobject", None), (2, "rdma_lookup_get_uobject", None),
            (2, "ib_create_qp_user", e), (3, "mlx5_ib_create_qp", e), (4, "create_user_qp", e),
            (5, "ib_umem_get", None), *_pins(pins, 6), (5, "mlx5_ib_db_map_user", None),
            (5, "mlx5_qpc_create_qp", e), (6, "mlx5_cmd_exec", e)]
    if fail:
        return head + [(5, "destroy_qp", None), (6, "ib_umem_release", None), (2, "rdma_alloc_abort_uobject", None)]
    return head + [(3, "ib_create_qp_security", None), (3, "rdma_restrack_add", None), (2, "ib_qp_usecnt_inc", None),
                   (2, "rdma_lookup_put_uobject", None), (2, "uverbs_response", None)]


def _modify(transition: str) -> list:
    mid = {"RESET->INIT": [(4, "rdma_counter_bind_qp_auto", None)],
           "INIT->RTR": [(4, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", None),
                         (5, "rdma_addr_find_l2_eth_by_grh", None), (4, "rdma_lag_get_ah_roce_slave", None)],
           "RTR->RTS": []}[transition]
    tail = [(4, "rdma_lag_put_ah_roce_slave", None)] if transition == "INIT->RTR" else []
    return [(0, "ib_uverbs_modify_qp", None), (1, "modify_qp", None), (2, "rdma_lookup_get_uobject", None),
            (2, "ib_modify_qp_with_udata", None), (3, "_ib_modify_qp", None), *mid,
            (4, "ib_security_modify_qp", None), (5, "mlx5_ib_modify_qp", None), (6, "ib_modify_qp_is_ok", None),
            (6, "__mlx5_ib_modify_qp", None), (7, "mlx5_core_qp_modify", None), (8, "mlx5_cmd_exec", None),
            *tail, (2, "rdma_lookup_put_uobject", None)]


def _create_cq(fail: str | None) -> list:
    e = fail
    head = [(0, "ib_uverbs_create_cq", e), (1, "create_cq", e), (2, "rdma_alloc_begin_uobject", None),
            (2, "mlx5_ib_create_cq", e), (3, "create_cq_user", e), (4, "ib_umem_get", None), *_pins(1, 5),
            (4, "mlx5_ib_db_map_user", None)]
    if fail:
        return head + [(4, "ib_umem_release", None), (2, "rdma_alloc_abort_uobject", None)]
    return head + [(3, "mlx5_comp_eqn_get", None), (3, "mlx5_core_create_cq", None), (2, "rdma_restrack_add", None),
                   (2, "uverbs_response", None)]


def _alloc_pd(fail: str | None) -> list:
    e = fail
    head = [(0, "ib_uverbs_alloc_pd", e), (1, "uverbs_request", None), (1, "rdma_alloc_begin_uobject", None),
            (1, "mlx5_ib_alloc_pd", e), (2, "mlx5_cmd_exec", e)]
    if fail:
        return head + [(1, "rdma_alloc_abort_uobject", None)]
    return head + [(1, "rdma_restrack_add", None), (1, "uverbs_response", None)]


# name -> (operation, arg, frames [(depth, function, errno or None)])
TREES: dict[str, tuple[str, str | None, list]] = {
    "alloc_pd": ("alloc_pd", None, _alloc_pd(None)),
    "alloc_pd_timeout": ("alloc_pd", None, _alloc_pd("ETIMEDOUT")),
    "create_cq": ("create_cq", None, _create_cq(None)),
    "create_cq_comp": ("create_cq", None, _create_cq("EOPNOTSUPP")),
    "reg_mr": ("reg_mr", None, [
        (0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None), (1, "rdma_lookup_get_uobject", None),
        (1, "mlx5_ib_reg_user_mr", None), (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get", None),
        *_pins(4, 3), (3, "sg_alloc_append_table_from_pages", None), (2, "create_real_mr", None),
        (3, "alloc_cacheable_mr", None), (3, "mlx5r_umr_update_mr_pas", None), (1, "rdma_restrack_add", None),
        (1, "rdma_lookup_put_uobject", None), (1, "uverbs_response", None)]),
    "create_qp": ("create_qp", None, _create_qp(2, None)),
    "svc_create_qp_enomem": ("create_qp", None, _create_qp(24, "ENOMEM")),
    "modify_init": ("modify_qp", "RESET->INIT", _modify("RESET->INIT")),
    "modify_rtr": ("modify_qp", "INIT->RTR", _modify("INIT->RTR")),
    "modify_rts": ("modify_qp", "RTR->RTS", _modify("RTR->RTS")),
    "query_gid": ("query_gid", None, [
        (0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", None), (1, "rdma_get_gid_attr", None),
        (1, "rdma_read_gid_attr_ndev_rcu", None), (1, "rdma_put_gid_attr", None)]),
    "query_gid_empty": ("query_gid", None, [
        (0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "ENODATA"), (1, "rdma_get_gid_attr", "ENODATA")]),
}

# family -> (origin probe, errno, origin layer)
ROOT_CAUSES = {
    "svc_qp_fw_enomem": ("mlx5_cmd_exec", "ENOMEM", "driver"),
    "fw_cmd_timeout": ("mlx5_cmd_exec", "ETIMEDOUT", "driver"),
}
ROUTINE = {
    "cq_comp_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "core"),
}
FAMILIES = {**ROOT_CAUSES, **ROUTINE}
TREE_FAMILY = {"svc_create_qp_enomem": "svc_qp_fw_enomem", "alloc_pd_timeout": "fw_cmd_timeout",
               "create_cq_comp": "cq_comp_refused", "query_gid_empty": "gid_empty_slot"}
PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
LAYER = {fn: _layer(fn) for fn in PROBES}
DURATION = {"alloc_pd_timeout": 60.0}


def _iso(t: float) -> str:
    return (START + dt.timedelta(seconds=t)).isoformat()


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


def generate(out_dir, hosts: int = 8, hours: float = 3, seed: int = 38, faults=True,
             storm_artefacts: bool = False) -> dict:
    if hosts < 8:
        raise ValueError("fleetgen38 needs at least 8 hosts")
    root = Path(out_dir)
    end = hours * 3600.0
    names = [f"fg38-h{i:02d}" for i in range(hosts)]
    storm_host, restart_host, gap_host, resent_host = names[1], names[3], names[5], names[6]
    keep = set(ROOT_CAUSES) if faults is True else set() if not faults else set(faults)
    storm = (0.5 * end, 0.5 * end + 2400.0)
    fw = (0.4 * end, 0.4 * end + 2700.0)
    restart_down = (0.6 * end + 3.0, 0.6 * end + 183.0)
    gap_down = (3000.0, 6600.0)
    resent = (4800.0, 6600.0)
    # storm_artefacts: the storm host's own tracer is restarted 20 minutes into the storm and 10
    # minutes of its storm snapshots are re-sent (the artefacts on the heaviest data)
    storm_down = (storm[0] + 1203.0, storm[0] + 1383.0)
    storm_resent = (storm[0] + 300.0, storm[0] + 900.0)
    resent_of = {resent_host: resent, **({storm_host: storm_resent} if storm_artefacts else {})}
    date = START.date().isoformat()
    counts: dict[str, int] = defaultdict(int)
    family_hosts: dict[str, set] = defaultdict(set)
    unrecorded: dict[str, int] = defaultdict(int)
    lost_total = {}
    truncated = {}
    for h_i, host in enumerate(names):
        hr = random.Random(f"{seed}:{host}")
        boot = hr.randrange(10**9, 9 * 10**9)
        boot_offset = 3 * 86400 + hr.uniform(0, 3600)  # monotonic seconds at the window start
        downs = ([restart_down] if host == restart_host else [gap_down] if host == gap_host
                 else [storm_down] if host == storm_host and storm_artefacts else [])
        intervals = _intervals(hr, end, downs)
        ends = [b for _, b in intervals]
        windows = _windows(hr, end)
        wstarts = [a for a, _ in windows]
        calls = []  # (t, tree, pid, ppid, comm, job_id, metadata)
        pid = hr.randrange(3000, 9000)
        agent_pid = pid
        pid += 1
        t = hr.uniform(0, 60)
        while t < end:
            for slot in range(8):
                calls.append((t + 0.01 * slot, "query_gid_empty" if slot >= 6 else "query_gid", agent_pid, 1,
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
            death = None  # (time the fatal call returned)
            for r in range(4):
                rp = pid
                pid += 1
                c = t + 0.2 * r
                seq = []
                fatal = (host == resent_host and "fw_cmd_timeout" in keep and fw[0] <= c < fw[1] and hr.random() < 0.4)
                if fatal:
                    seq.append((c, "alloc_pd_timeout"))
                    back = c + DURATION["alloc_pd_timeout"]
                    death = back if death is None else min(death, back)
                else:
                    seq.append((c, "alloc_pd"))
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
                    c += hr.uniform(60, 120)
                    while c < planned:
                        seq.append((c, "reg_mr"))
                        c += hr.uniform(60, 120)
                ranks.append((rp, seq))
            stop = planned if death is None else death + 0.5
            for rp, seq in ranks:
                for ct, tree in seq:
                    if ct >= end:
                        continue
                    if tree == "alloc_pd_timeout":
                        # the first to time out kills the job; another rank still waiting is killed
                        # inside its call (no return: neither counted nor recorded)
                        if ct + DURATION[tree] > death + 1e-9:
                            continue
                    elif ct >= stop:
                        continue
                    calls.append((ct, tree, rp, launcher, "python3", job_id, meta))
            t = stop + hr.uniform(60, 180)
        # the storm: a new service instance 5 times a second
        if host == storm_host and "svc_qp_fw_enomem" in keep:
            t = storm[0]
            while t < storm[1]:
                calls.append((t, "alloc_pd", pid, 1, "rdma-proxyd", None, None))
                calls.append((t + 0.01, "create_cq", pid, 1, "rdma-proxyd", None, None))
                calls.append((t + 0.02, "svc_create_qp_enomem", pid, 1, "rdma-proxyd", None, None))
                pid += 1
                t += 0.2 + hr.uniform(0, 0.005)
        calls.sort(key=lambda c: c[0])

        # pass 1: snapshot, timing, counters, record attempts
        cnt: dict[tuple[int, str], int] = defaultdict(int)
        groups: dict[tuple[int, str], list[int]] = defaultdict(list)
        wgood: dict[tuple[int, str], int] = defaultdict(int)
        status = [None] * len(calls)
        timed = [False] * len(calls)
        snap = [None] * len(calls)
        for i, (ct, tree, *_rest) in enumerate(calls):
            back = ct + DURATION.get(tree, 0.002)
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
            failing = any(e for _, _, e in TREES[tree][2])
            if failing:
                groups[(j, tree)].append(i)
            elif inwin and wgood[(w, tree)] < WINDOW_CAP:
                wgood[(w, tree)] += 1
                status[i] = "record"
        lost = defaultdict(int)
        repeat = {}
        for (j, tree), idx in groups.items():
            attempts, rest = idx[:K], idx[K:]
            if tree == "svc_create_qp_enomem" and len(attempts) == K and hr.random() < 0.4:
                status[attempts[1]] = "lost"
                lost[j] += 1
                delivered = [attempts[0], attempts[2]]
            else:
                delivered = attempts
            for a in delivered:
                status[a] = "record"
            for a in attempts:
                if status[a] == "lost":
                    for _, fn, e in TREES[tree][2]:
                        if e:
                            unrecorded[f"{fn}|{e}"] += 1
            repeat[delivered[-1]] = 1 + len(rest)
        lost_total[host] = sum(lost.values())

        # pass 2: records in time order (record numbers taken for lost attempts too)
        recno = hr.randrange(1, 2**31)
        restarted = False
        ev = defaultdict(list)
        truth = defaultdict(list)
        ntrunc = 0
        for i, (ct, tree, rp, ppid, comm, job_id, meta) in enumerate(calls):
            if status[i] is None:
                continue
            if downs and not restarted and ct >= downs[0][1]:
                recno = hr.randrange(1, 2**31)  # a restarted daemon: a new random start
                restarted = True
            recno += 1
            if status[i] == "lost":
                continue
            op, arg, frames = TREES[tree]
            room = ROOM_TIMED if timed[i] else ROOM_UNTIMED
            kept = frames[:room]
            lost_frames = frames[room:]
            weight = repeat.get(i, 1)
            if lost_frames:
                ntrunc += 1
                for _, fn, e in lost_frames:
                    if e:
                        unrecorded[f"{fn}|{e}"] += weight
            tid = f"{host}:{boot}:{rp}:{recno}"
            mono0 = int((boot_offset + ct) * 1e9)
            back = ct + DURATION.get(tree, 0.002)
            root_err = frames[0][2]
            fam = TREE_FAMILY.get(tree)
            if timed[i]:
                entries, at = [], mono0
                for _d, fn, e in frames:
                    entries.append(at)
                    at += 1500 + (int(60e9) if (fn == "mlx5_cmd_exec" and e == "ETIMEDOUT") else 0)
                root_end = at + 1000
                lat = []
                for k, (d, _fn, _e) in enumerate(frames):
                    nxt = next((entries[m] for m in range(k + 1, len(frames)) if frames[m][0] <= d), root_end)
                    lat.append(nxt - 100 - entries[k])
                ts = entries[:room]
                lats = lat[:room]
                st = START + dt.timedelta(seconds=ct)
                en = st + dt.timedelta(microseconds=lat[0] / 1000)
            else:
                tick = int((boot_offset + back) * 1e9) // 4_000_000 * 4_000_000
                ts = [tick] * len(kept)
                lats = [None] * len(kept)
                st = en = START + dt.timedelta(microseconds=(tick - int(boot_offset * 1e9)) // 1000)
            part = ev[snap[i]]
            mlist = metadata_list(meta)
            for s, (d, fn, e) in enumerate(kept):
                part.append((tid, s, ts[s], rp, rp, ppid, comm, fn, LAYER[fn], d,
                             -ERRNO_NUM[e] if e else 0, e, lats[s], arg, "failure" if root_err or fam else "good",
                             op, -ERRNO_NUM[root_err] if root_err else 0, st, en, len(lost_frames), job_id, mlist,
                             weight if weight > 1 else None))
            if fam:
                counts[fam] += 1
                family_hosts[fam].add(host)
                probe, errno, layer = FAMILIES[fam]
                truth[snap[i]].append((tid, host, "failure", fam, probe, errno, layer, fam in ROUTINE, False))
            else:
                truth[snap[i]].append((tid, host, "good", None, None, None, None, False, False))
        truncated[host] = ntrunc

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
        snap_end = np.array([b for _, b in intervals])
        snap_len = np.array([b - a for a, b in intervals])
        lost_arr = np.array([lost.get(j, 0) for j in range(n)], np.int64)
        base_ns = int(START.timestamp() * 1e9)
        counters = pl.DataFrame({
            "row_j": np.repeat(np.arange(n), len(PROBES)),
            "row_p": np.tile(np.arange(len(PROBES)), n),
            "snapshot_time": np.repeat((snap_end * 1e9).round().astype(np.int64) + base_ns, len(PROBES)),
            "interval_s": np.repeat(snap_len.round(6), len(PROBES)),
            "probe": PROBES * n,  # (Python strings: polars converts a numpy string array slowly)
            "layer": [LAYER[fn] for fn in PROBES] * n,
            "invocations": inv.ravel(), "failures": fail.ravel(),
            "lost_records": np.repeat(lost_arr, len(PROBES)),
        }).with_columns(pl.col("snapshot_time").cast(pl.Datetime("ns", "UTC")))
        ecells = pl.DataFrame([(j, p, e, c) for (j, p, e), c in errs.items()], orient="row",
                              schema={"row_j": pl.Int64, "row_p": pl.Int64, "errno": pl.String, "count": pl.Int64})
        ecells = ecells.sort("row_j", "row_p", "errno").group_by("row_j", "row_p").agg(
            pl.struct("errno", "count").alias("errno_counts"))
        counters = (counters.join(ecells, on=["row_j", "row_p"], how="left", maintain_order="left")
                    .with_columns(pl.col("errno_counts").fill_null([]))
                    .drop("row_j", "row_p")
                    .with_columns(
            pl.lit(host).alias("host"), pl.lit(KERNEL).alias("kernel_release"), pl.lit("mlx5").alias("vendor"),
            pl.lit("rdma").alias("probe_set"), pl.lit(True).alias("live")))

        ev_cols = ["trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret", "errno",
                   "latency_ns", "arg", "kind", "command", "exit_status", "start_time", "end_time", "lost_events",
                   "job_id", "metadata", "repeat_count"]

        def events_frame(snaps, ev=ev, ev_cols=ev_cols, host=host):
            rows = [r for j in snaps for r in ev.get(j, [])]
            df = pl.DataFrame(rows, schema={
                "trace_id": pl.String, "seq": pl.Int64, "ts_ns": pl.Int64, "pid": pl.Int32, "tid": pl.Int32,
                "ppid": pl.Int32, "comm": pl.String, "probe": pl.String, "layer": pl.String, "depth": pl.Int16,
                "ret": pl.Int64, "errno": pl.String, "latency_ns": pl.Int64, "arg": pl.String, "kind": pl.String,
                "command": pl.String, "exit_status": pl.Int32, "start_time": pl.Datetime("ns", "UTC"),
                "end_time": pl.Datetime("ns", "UTC"), "lost_events": pl.Int64, "job_id": pl.String,
                "metadata": pl.List(pl.Struct({"key": pl.String, "value": pl.String})),
                "repeat_count": pl.Int64}, orient="row")
            assert df.columns == ev_cols
            return df.with_columns(pl.lit(host).alias("host"), pl.lit(KERNEL).alias("kernel_release"),
                                   pl.lit(None, pl.String).alias("path"), pl.lit(None, pl.String).alias("path2"),
                                   pl.lit(None, pl.String).alias("output"))

        all_snaps = range(len(intervals))
        write_partition(events_frame(all_snaps), root, "events", date, host, "part-0000.parquet", durable=False)
        tr = pl.DataFrame([r for j in all_snaps for r in truth.get(j, [])], orient="row", schema={
            "trace_id": pl.String, "host": pl.String, "kind": pl.String, "root_cause": pl.String,
            "bifurcation_probe": pl.String, "bifurcation_errno": pl.String, "origin_layer": pl.String,
            "expected_error": pl.Boolean, "held_out": pl.Boolean})
        write_partition(tr, root, "truth", date, host, "part-0000.parquet", durable=False)
        cpath = write_partition(counters, root, "counters", date, host, "part-0000.parquet", durable=False)
        write_counter_buckets(cpath, durable=False)
        if host in resent_of:
            span = resent_of[host]
            again = [j for j, (a, b) in enumerate(intervals) if span[0] <= b < span[1]]
            write_partition(events_frame(again), root, "events", date, host, "part-0001.parquet", durable=False)
            lo, hi = START + dt.timedelta(seconds=span[0]), START + dt.timedelta(seconds=span[1])
            cpath = write_partition(counters.filter(pl.col("snapshot_time").is_between(lo, hi, closed="left")), root,
                                    "counters", date, host, "part-0001.parquet", durable=False)
            write_counter_buckets(cpath, durable=False)

    summary = {
        "hosts": names, "storm_host": storm_host, "restart_host": restart_host, "gap_host": gap_host,
        "resent_host": resent_host, "fw_host": resent_host,
        "storm_start": _iso(storm[0]), "storm_end": _iso(storm[1]), "fw_start": _iso(fw[0]), "fw_end": _iso(fw[1]),
        "restart_down": [_iso(restart_down[0]), _iso(restart_down[1])], "gap_down": [_iso(gap_down[0]), _iso(gap_down[1])],
        "resent": {h: [_iso(a), _iso(b)] for h, (a, b) in resent_of.items()},
        "restarts": {h: [_iso(d[0][0]), _iso(d[0][1])] for h, d in
                     ((restart_host, [restart_down]), (storm_host, [storm_down] if storm_artefacts else [])) if d},
        "counts": dict(counts), "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
        "unrecorded": dict(unrecorded), "lost_records": lost_total, "truncated": truncated,
    }
    (root / "fleetgen38.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

"""A rolling driver upgrade: a blind fleet generator (see __init__.py for the angle).

Written from reference/rdma_control_path.yaml (the operations' trees, the errno lists and the
errno_conventions), tracer/schema.py (tables, written through its writers in the dataset layout
the ingest produces: <root>/<table>/date=D/host=H/part-*.parquet, a counter_buckets summary beside
every counters file), README.md, docs/architecture.md, tests/fleet_harness.py, tests/fleetgen38
(its generator as a model of how to write through tracer.schema) and the other generators' module
docstrings. It imports only tracer.schema of the project.

The fleet
---------
`hosts` (12 by default; a multiple of 3, at least 6) mlx5 RoCE hosts `fg39-hNN`, in-tree mlx5 driver
(ib_umem_get directly, no OFED peer memory), for `hours` (4) from 2026-12-15T00:00Z. NICs: every
host whose index is 1 mod 3 (fg39-h01, h04, h07, h10) has a ConnectX-6 Dx on firmware 22.39.1002,
the others a ConnectX-7 on firmware 28.42.1000; the firmware is not changed by the upgrade.

One job slot a host, 4 ranks a job (comm python3, started 0.2 s apart), 8-20 minutes, the next job
1-3 minutes after one ends; half the jobs are `serve` (an inference runtime), half `train`. Every
trace of a job carries the job's metadata: tenant, job_type, nic, nic_fw, driver (the mlx5 driver's
version, which is the kernel's: in-tree). A rank's start-up, 30 ms a call: alloc_pd; (serve only:
a create_cq asking CQE compression, below); create_cq; reg_mr twice; per QP (2) create_qp then
RESET->INIT, INIT->RTR, RTR->RTS (modify_qp, arg the transition); then a reg_mr every 20-40 s until
the job's planned end. The port counter mode is the default (rdma_counter_bind_qp_auto returns 0
with nothing below it). A rank that dies ends its job: the launcher kills the others 0.5 s after
(no call after that).

The rolling upgrade
-------------------
Kernel 6.8.0-60-generic (old driver) -> 6.8.0-64-generic (new driver), host by host in waves of 3
(hosts 0-2, 3-5, ...), the first wave at 01:00, the next every 30 minutes (01:00, 01:30, 02:00,
02:30 for 12 hosts). A host is drained 20 minutes before its wave time (no job starts after, the
running one ends at its planned time, or is cut at the wave time if it has not: the scheduler's
SIGKILL, no error), reboots at its wave time and is back 4 minutes later: the tracer is down for
those 4 minutes (no snapshot), then starts with a short first interval at a new phase, a new boot
id in its record ids (host:boot:pid:recno) and a monotonic clock from the new boot. The upgrade is
visible in the data only through kernel_release (events and counters) and the jobs' `driver`
metadata. Every host of the fleet is upgraded by the end of the window: after the last wave there
is no host left on the old release.

The tracer (probe set "rdma", fexit on every function of TREES; statics the reference marks usually
inlined -- verbs.c's create_qp, _create_user_qp, rdma_fill_sgid_attr -- are not frames): 5-second
snapshots at a per-host phase; counters for every probe of the set in every snapshot, exact; a tree
is a record attempt when a frame fails: the first K=3 of a tree shape in a snapshot are recorded,
the rest counted in the kernel and carried by the last delivered example as its repeat_count (null =
1); good trees only when their root entered a capture window (the first 60 s of every 5 minutes at
a per-host phase, `--good-every 5m --good-window 60s`; `good_window` sets another length, e.g.
150 s: half the time in windows; at most 12 of a tree a window). A tree in a
window is timed (ts_ns and latency_ns per frame, the same latencies on both releases: the upgrade
slows nothing); outside, every frame carries the 4 ms tick its root returned in and latency null.
The trees are all shorter than the slot, so no record is cut, and the ring buffer never fills here
(lost_records 0).

Routine (expected_error = True, root_cause = the family; the process goes on each time)
-------------------------------------------------------------------------------------------
  cq_comp_eopnotsupp   OLD driver only (every host before its upgrade), every serve rank once: the
                 inference runtime asks create_cq for CQE compression, which the old driver refuses
                 with the reference's create_cq_user "-EOPNOTSUPP CQE compression or 128B padding
                 requested without HW cap" (an assumption of this generator: the old driver reports
                 no compression cap for these NICs), after the CQ buffer is pinned and its doorbell
                 mapped, up through mlx5_ib_create_cq, create_cq, ib_uverbs_create_cq (umem released,
                 uobject aborted). The runtime creates the CQ again 3 ms later without compression.
  cq_comp_einval       NEW driver only (every host after its upgrade), every serve rank once: the
                 same probe now fails EINVAL at create_cq_user -- the reference's "-EINVAL ...
                 unknown ucmd.flags" (an assumption of this generator: the new driver's ucmd.flags
                 check does not know the compression-request flag bit the runtime's rdma-core
                 provider sets, so it refuses the request as malformed before pinning anything,
                 where the old driver reached the capability check). EINVAL is not one of the
                 errnos that tell a caller what to do next; the runtime handles it all the same
                 (an assumption: its compressed-CQ attempt treats any refusal as "do without"): it
                 creates the CQ again 3 ms later without compression and goes on. The tree is
                 shorter than the old refusal's (no ib_umem_get, no doorbell): ib_uverbs_create_cq,
                 create_cq, rdma_alloc_begin_uobject, mlx5_ib_create_cq, create_cq_user, then the
                 uobject aborted. A new routine family that starts with the update, on every
                 upgraded host, survived by every process: routine, never a finding or an alert.

Root causes (expected_error = False; fatal to its process)
----------------------------------------------------------
  rts_fw_bad_param     the regression shipped with the new driver, on the ConnectX-6 Dx hosts only
                 (fg39-h01, h04, h07, h10, each from its own wave on): the new driver fills the
                 RTR2RTS_QP command's responder-resources field in a layout firmware 22.39 rejects
                 when a QP asks more than one outstanding RDMA read (IB_QP_MAX_QP_RD_ATOMIC, in the
                 reference's RTR->RTS mask) -- an assumption of this generator; the firmware answers
                 BAD_PARAM, "-EINVAL" in the errno_conventions' firmware mapping, at mlx5_cmd_exec
                 under mlx5_core_qp_modify ("<cmd_status_to_err> e.g. -EINVAL BAD_QP_STATE/
                 BAD_PARAM"), up through __mlx5_ib_modify_qp, mlx5_ib_modify_qp,
                 ib_security_modify_qp, _ib_modify_qp, ib_modify_qp_with_udata, modify_qp and
                 ib_uverbs_modify_qp. `train` ranks ask 16 (every one of their RTR->RTS fails),
                 `serve` ranks ask 1 (pass). The rank exits on it; its job is killed. One cause,
                 one cluster, on exactly those hosts after their upgrade; the ConnectX-7 hosts on
                 the same new driver pass, and so did the ConnectX-6 Dx hosts on the old one.
  memlock_enomem       unrelated to the upgrade, on one OLD-release host (fg39-h08, upgraded in the
                 third wave at 02:00): from 00:20 to 01:35 a limits.d push gave its jobs a memlock
                 limit too low for a train rank's buffers: a train rank's 5th periodic reg_mr takes
                 its pinned_vm past RLIMIT_MEMLOCK and fails ENOMEM at ib_umem_get (the reference:
                 "-ENOMEM ... pinned_vm + npages > RLIMIT_MEMLOCK without CAP_IPC_LOCK", checked
                 before any page is pinned), up through mlx5_ib_reg_user_mr and ib_uverbs_reg_mr (PD
                 reference dropped, uobject aborted). Fatal to the rank, its job killed. Jobs that
                 started from 00:20 to 01:35 are affected; the push is rolled back at 01:35.

Alerts: none is required. On a cause's host an alert naming the cause's errno at a frame its
records fail at (or a bad state named by one of them) is acceptable. No routine family's (probe,
errno) may alert anywhere, nor may a host be alerted only for being upgraded.

Truth: one row per record, keyed (host, trace_id). root_cause the family (ROOT_CAUSES or ROUTINE),
null for good records; bifurcation = origin (the deepest failing frame none of whose callees failed;
its parent edge is in the good trees of its operation); origin_layer its layer. Good records: kind
good, no cause, expected_error False, held_out False. With faults=False (the control) the two causes
are absent; the jobs, the upgrade and both routine families are the same. `faults` may also be a
list of cause names to keep.
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

START = dt.datetime(2026, 12, 15, tzinfo=dt.UTC)
OLD, NEW = "6.8.0-60-generic", "6.8.0-64-generic"
CX6 = ("ConnectX-6 Dx", "22.39.1002")
CX7 = ("ConnectX-7", "28.42.1000")
K = 3
SNAP_S = 5.0
WINDOW_EVERY, WINDOW_LEN, WINDOW_CAP = 300.0, 60.0, 12
FIRST_WAVE, WAVE_EVERY, WAVE_SIZE = 3600.0, 1800.0, 3
DRAIN_BEFORE, REBOOT_S = 1200.0, 240.0
MEMLOCK_FAULT = (1200.0, 5700.0)  # 00:20-01:35
MEMLOCK_HOST = 8
ERRNO_NUM = {"ENOMEM": 12, "EINVAL": 22, "EOPNOTSUPP": 95}

_UVERBS = {"create_qp", "create_cq", "modify_qp", "uverbs_request", "uverbs_response"}
_DRIVER = {"create_user_qp", "create_cq_user", "destroy_qp", "create_real_mr", "alloc_cacheable_mr",
           "__mlx5_ib_modify_qp"}


def _layer(fn: str) -> str:
    if fn.startswith("ib_uverbs_") or fn in _UVERBS:
        return "uverbs"
    if fn.startswith("mlx5") or fn in _DRIVER:
        return "driver"
    return "core"


def _create_qp() -> list:
    return [(0, "ib_uverbs_create_qp", None), (1, "create_qp", None), (2, "rdma_alloc_begin_uobject", None),
            (2, "rdma_lookup_get_uobject", None), (2, "rdma_lookup_get_uobject", None),
            (2, "ib_create_qp_user", None), (3, "mlx5_ib_create_qp", None), (4, "create_user_qp", None),
            (5, "ib_umem_get", None), (6, "pin_user_pages_fast", None), (6, "pin_user_pages_fast", None),
            (5, "mlx5_ib_db_map_user", None), (5, "mlx5_qpc_create_qp", None), (6, "mlx5_cmd_exec", None),
            (3, "ib_create_qp_security", None), (3, "rdma_restrack_add", None), (2, "ib_qp_usecnt_inc", None),
            (2, "rdma_lookup_put_uobject", None), (2, "uverbs_response", None)]


def _modify(transition: str, fail: str | None = None) -> list:
    e = fail
    mid = {"RESET->INIT": [(4, "rdma_counter_bind_qp_auto", None)],
           "INIT->RTR": [(4, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", None),
                         (5, "rdma_addr_find_l2_eth_by_grh", None), (4, "rdma_lag_get_ah_roce_slave", None)],
           "RTR->RTS": []}[transition]
    tail = [(4, "rdma_lag_put_ah_roce_slave", None)] if transition == "INIT->RTR" else []
    return [(0, "ib_uverbs_modify_qp", e), (1, "modify_qp", e), (2, "rdma_lookup_get_uobject", None),
            (2, "ib_modify_qp_with_udata", e), (3, "_ib_modify_qp", e), *mid,
            (4, "ib_security_modify_qp", e), (5, "mlx5_ib_modify_qp", e), (6, "ib_modify_qp_is_ok", None),
            (6, "__mlx5_ib_modify_qp", e), (7, "mlx5_core_qp_modify", e), (8, "mlx5_cmd_exec", e),
            *tail, (2, "rdma_lookup_put_uobject", None)]


def _create_cq(fail: str | None) -> list:
    head = [(0, "ib_uverbs_create_cq", fail), (1, "create_cq", fail), (2, "rdma_alloc_begin_uobject", None),
            (2, "mlx5_ib_create_cq", fail), (3, "create_cq_user", fail)]
    if fail == "EINVAL":  # the new driver: refused at the ucmd.flags check, before any pin
        return head + [(2, "rdma_alloc_abort_uobject", None)]
    pinned = [(4, "ib_umem_get", None), (5, "pin_user_pages_fast", None), (4, "mlx5_ib_db_map_user", None)]
    if fail:  # the old driver: refused at the capability check, after the pin
        return head + pinned + [(4, "ib_umem_release", None), (2, "rdma_alloc_abort_uobject", None)]
    return head + pinned + [(3, "mlx5_comp_eqn_get", None), (3, "mlx5_core_create_cq", None),
                            (2, "rdma_restrack_add", None), (2, "uverbs_response", None)]


def _reg_mr(fail: str | None) -> list:
    e = fail
    head = [(0, "ib_uverbs_reg_mr", e), (1, "rdma_alloc_begin_uobject", None), (1, "rdma_lookup_get_uobject", None),
            (1, "mlx5_ib_reg_user_mr", e), (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get", e)]
    if fail:  # the memlock check comes before any page is pinned
        return head + [(1, "rdma_lookup_put_uobject", None), (1, "rdma_alloc_abort_uobject", None)]
    return head + [(3, "pin_user_pages_fast", None)] * 4 + [
        (3, "sg_alloc_append_table_from_pages", None), (2, "create_real_mr", None),
        (3, "alloc_cacheable_mr", None), (3, "mlx5r_umr_update_mr_pas", None), (1, "rdma_restrack_add", None),
        (1, "rdma_lookup_put_uobject", None), (1, "uverbs_response", None)]


# name -> (operation, arg, frames [(depth, function, errno or None)])
TREES: dict[str, tuple[str, str | None, list]] = {
    "alloc_pd": ("alloc_pd", None, [
        (0, "ib_uverbs_alloc_pd", None), (1, "uverbs_request", None), (1, "rdma_alloc_begin_uobject", None),
        (1, "mlx5_ib_alloc_pd", None), (2, "mlx5_cmd_exec", None), (1, "rdma_restrack_add", None),
        (1, "uverbs_response", None)]),
    "create_cq": ("create_cq", None, _create_cq(None)),
    "create_cq_comp_old": ("create_cq", None, _create_cq("EOPNOTSUPP")),
    "create_cq_comp_new": ("create_cq", None, _create_cq("EINVAL")),
    "reg_mr": ("reg_mr", None, _reg_mr(None)),
    "reg_mr_memlock": ("reg_mr", None, _reg_mr("ENOMEM")),
    "create_qp": ("create_qp", None, _create_qp()),
    "modify_init": ("modify_qp", "RESET->INIT", _modify("RESET->INIT")),
    "modify_rtr": ("modify_qp", "INIT->RTR", _modify("INIT->RTR")),
    "modify_rts": ("modify_qp", "RTR->RTS", _modify("RTR->RTS")),
    "modify_rts_bad_param": ("modify_qp", "RTR->RTS", _modify("RTR->RTS", "EINVAL")),
}

# family -> (origin probe, errno, origin layer)
ROOT_CAUSES = {
    "rts_fw_bad_param": ("mlx5_cmd_exec", "EINVAL", "driver"),
    "memlock_enomem": ("ib_umem_get", "ENOMEM", "core"),
}
ROUTINE = {
    "cq_comp_eopnotsupp": ("create_cq_user", "EOPNOTSUPP", "driver"),
    "cq_comp_einval": ("create_cq_user", "EINVAL", "driver"),
}
FAMILIES = {**ROOT_CAUSES, **ROUTINE}
TREE_FAMILY = {"modify_rts_bad_param": "rts_fw_bad_param", "reg_mr_memlock": "memlock_enomem",
               "create_cq_comp_old": "cq_comp_eopnotsupp", "create_cq_comp_new": "cq_comp_einval"}
FATAL_TREES = {t for t, f in TREE_FAMILY.items() if f in ROOT_CAUSES}
PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
LAYER = {fn: _layer(fn) for fn in PROBES}
TREE_S = 0.002  # a call's duration (all trees)


def _iso(t: float) -> str:
    return (START + dt.timedelta(seconds=t)).isoformat()


def upgrade_times(hosts: int) -> list[float]:
    """Each host's wave time (seconds from START): waves of 3, the first at 01:00, every 30 minutes."""
    return [FIRST_WAVE + WAVE_EVERY * (i // WAVE_SIZE) for i in range(hosts)]


def _intervals(rng, end: float, down: tuple[float, float]) -> list[tuple[float, float]]:
    """Snapshot intervals (start, end) of one host: 5 s at a phase; the reboot loses the interval it
    falls in; the tracer starts again with a short interval up to a new phase."""
    out = []
    for p0, p1 in ((None, down[0]), (down[1], end)):
        phase = rng.uniform(0.01, SNAP_S)
        a, b = (phase - SNAP_S, phase) if p0 is None else (p0, p0 + phase)
        while b <= p1:
            out.append((a, b))
            a, b = b, b + SNAP_S
    return out


def _windows(rng, end: float, length: float) -> list[tuple[float, float]]:
    phase = rng.uniform(0, WINDOW_EVERY)
    out, w = [], phase - WINDOW_EVERY
    while w < end:
        if w + length > 0:
            out.append((max(w, 0.0), w + length))
        w += WINDOW_EVERY
    return out


# the events columns the generator fills (host and the null columns added after)
EVENT_COLUMNS = {
    "trace_id": pl.String, "seq": pl.Int64, "ts_ns": pl.Int64, "pid": pl.Int32, "tid": pl.Int32,
    "ppid": pl.Int32, "comm": pl.String, "probe": pl.String, "layer": pl.String, "depth": pl.Int16,
    "ret": pl.Int64, "errno": pl.String, "latency_ns": pl.Int64, "arg": pl.String, "kind": pl.String,
    "command": pl.String, "exit_status": pl.Int32, "start_time": pl.Datetime("ns", "UTC"),
    "end_time": pl.Datetime("ns", "UTC"), "lost_events": pl.Int64, "job_id": pl.String,
    "metadata": pl.List(pl.Struct({"key": pl.String, "value": pl.String})),
    "repeat_count": pl.Int64, "kernel_release": pl.String}


def generate(out_dir, hosts: int = 12, hours: float = 4, seed: int = 39, faults=True,
             good_window: float = WINDOW_LEN) -> dict:
    if not 0 < good_window < WINDOW_EVERY:
        raise ValueError("fleetgen39: good_window must be within the 5-minute capture period")
    if hosts < 6 or hosts % WAVE_SIZE:
        raise ValueError("fleetgen39 needs a multiple of 3 hosts, at least 6")
    root = Path(out_dir)
    end = hours * 3600.0
    waves = upgrade_times(hosts)
    if waves[-1] + REBOOT_S + 1800.0 > end:
        raise ValueError("fleetgen39: the window must hold the last wave and 30 minutes after it")
    names = [f"fg39-h{i:02d}" for i in range(hosts)]
    cx6 = [names[i] for i in range(hosts) if i % 3 == 1]
    memlock_host = names[MEMLOCK_HOST] if hosts > MEMLOCK_HOST else names[hosts - 1]
    keep = set(ROOT_CAUSES) if faults is True else set() if not faults else set(faults)
    date = START.date().isoformat()
    counts: dict[str, int] = defaultdict(int)
    family_hosts: dict[str, set] = defaultdict(set)
    for h_i, host in enumerate(names):
        hr = random.Random(f"{seed}:{host}")
        wave = waves[h_i]
        down = (wave, wave + REBOOT_S)
        nic, fw = CX6 if host in cx6 else CX7
        boots = [hr.randrange(10**9, 9 * 10**9), hr.randrange(10**9, 9 * 10**9)]
        # monotonic seconds at the window start (old boot); the new boot's clock starts at its reboot
        offsets = [3 * 86400 + hr.uniform(0, 3600), -(wave + 5.0)]
        intervals = _intervals(hr, end, down)
        ends = [b for _, b in intervals]
        windows = _windows(hr, end, good_window)
        wstarts = [a for a, _ in windows]
        calls = []  # (t, tree, pid, ppid, comm, job_id, metadata, new release)
        pid = hr.randrange(3000, 9000)
        t = hr.uniform(0, 120)
        job_n = 0
        booted = False
        while t < end:
            if wave - DRAIN_BEFORE <= t < wave + REBOOT_S:  # drained, then rebooting
                t = wave + REBOOT_S + hr.uniform(30, 90)
                if not booted:
                    pid = hr.randrange(1500, 3000)  # a new boot numbers processes anew
                    booted = True
                continue
            new = t >= wave
            job_n += 1
            job_id = f"{h_i * 1000 + job_n}"
            jtype = "serve" if hr.random() < 0.5 else "train"
            meta = {"tenant": "lumen" if jtype == "serve" else "orion", "job_type": jtype, "nic": nic,
                    "nic_fw": fw, "driver": f"mlx5_ib in-tree {NEW if new else OLD}"}
            planned = t + hr.uniform(480, 1200)
            if not new:
                planned = min(planned, wave)  # the drain: a job still running at the wave is cut
            launcher = pid
            pid += 1
            regression = new and host in cx6 and jtype == "train" and "rts_fw_bad_param" in keep
            memlock = (host == memlock_host and not new and jtype == "train" and "memlock_enomem" in keep
                       and MEMLOCK_FAULT[0] <= t < MEMLOCK_FAULT[1])
            ranks = []
            death = None  # when the first fatal call returned
            for r in range(4):
                rp = pid
                pid += 1
                c = t + 0.2 * r
                seq = [(c, "alloc_pd")]
                if jtype == "serve":
                    c += 0.03
                    seq.append((c, "create_cq_comp_new" if new else "create_cq_comp_old"))
                    c += 0.003
                else:
                    c += 0.03
                seq.append((c, "create_cq"))
                for _ in range(2):
                    c += 0.03
                    seq.append((c, "reg_mr"))
                fatal = None
                for _ in range(2):
                    for tree in ("create_qp", "modify_init", "modify_rtr", "modify_rts"):
                        c += 0.03
                        if tree == "modify_rts" and regression:
                            tree = "modify_rts_bad_param"
                        seq.append((c, tree))
                        if tree in FATAL_TREES:
                            fatal = c
                            break
                    if fatal is not None:
                        break
                if fatal is None:
                    c += hr.uniform(20, 40)
                    k = 0
                    while c < planned:
                        k += 1
                        if memlock and k == 5:
                            seq.append((c, "reg_mr_memlock"))
                            fatal = c
                            break
                        seq.append((c, "reg_mr"))
                        c += hr.uniform(20, 40)
                if fatal is not None:
                    back = fatal + TREE_S
                    death = back if death is None else min(death, back)
                ranks.append((rp, seq))
            stop = planned if death is None else min(planned, death + 0.5)
            for rp, seq in ranks:
                for ct, tree in seq:
                    if ct >= end or ct >= stop:
                        continue
                    calls.append((ct, tree, rp, launcher, "python3", job_id, meta, new))
            t = stop + hr.uniform(60, 180)
        calls.sort(key=lambda c: c[0])

        # pass 1: snapshot, timing, counters, record attempts
        cnt: dict[tuple[int, str], int] = defaultdict(int)
        groups: dict[tuple[int, str], list[int]] = defaultdict(list)
        wgood: dict[tuple[int, str], int] = defaultdict(int)
        status = [False] * len(calls)
        timed = [False] * len(calls)
        snap = [None] * len(calls)
        for i, (ct, tree, *_rest) in enumerate(calls):
            back = ct + TREE_S
            j = bisect.bisect_left(ends, back)
            if j >= len(intervals) or not (intervals[j][0] <= back < intervals[j][1]):
                continue  # no snapshot holds its return: the tracer was down (unseen)
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

        # pass 2: records in time order
        recno = hr.randrange(1, 2**31)
        ev: dict[str, list] = {column: [] for column in EVENT_COLUMNS}  # the records' rows, column by column
        truth = []
        for i, (ct, tree, rp, ppid, comm, job_id, meta, new) in enumerate(calls):
            if not status[i]:
                continue
            recno += 1
            op, arg, frames = TREES[tree]
            boot, off = boots[new], offsets[new]
            weight = repeat.get(i, 1)
            tid = f"{host}:{boot}:{rp}:{recno}"
            root_err = frames[0][2]
            fam = TREE_FAMILY.get(tree)
            if timed[i]:
                entries, at = [], int((off + ct) * 1e9)
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
                tick = int((off + ct + TREE_S) * 1e9) // 4_000_000 * 4_000_000
                ts = [tick] * len(frames)
                lats = [None] * len(frames)
                st = en = START + dt.timedelta(microseconds=(tick - int(off * 1e9)) // 1000)
            mlist = metadata_list(meta)
            release = NEW if new else OLD
            if len(ts) != len(frames) or len(lats) != len(frames):
                raise ValueError(f"{tid}: a time for every frame")
            extend_rows(ev, {
                "seq": range(len(frames)), "ts_ns": ts, "probe": [fn for _, fn, _ in frames],
                "layer": [LAYER[fn] for _, fn, _ in frames], "depth": [d for d, _, _ in frames],
                "ret": [-ERRNO_NUM[e] if e else 0 for _, _, e in frames], "errno": [e for _, _, e in frames],
                "latency_ns": lats}, {
                "trace_id": tid, "pid": rp, "tid": rp, "ppid": ppid, "comm": comm, "arg": arg,
                "kind": "failure" if fam else "good", "command": op,
                "exit_status": -ERRNO_NUM[root_err] if root_err else 0, "start_time": st, "end_time": en,
                "lost_events": 0, "job_id": job_id, "metadata": mlist, "repeat_count": weight if weight > 1 else None,
                "kernel_release": release})
            if fam:
                counts[fam] += 1
                family_hosts[fam].add(host)
                probe, errno, layer = FAMILIES[fam]
                truth.append((tid, host, "failure", fam, probe, errno, layer, fam in ROUTINE, False))
            else:
                truth.append((tid, host, "good", None, None, None, None, False, False))

        # counters: every probe in every snapshot
        pidx = {fn: k for k, fn in enumerate(PROBES)}
        n = len(intervals)
        inv = np.zeros((n, len(PROBES)), np.int64)
        fail = np.zeros_like(inv)
        errs: dict[tuple[int, int, str], int] = defaultdict(int)
        for (j, tree), c in cnt.items():
            for _, fn, e in TREES[tree][2]:
                inv[j, pidx[fn]] += c
                if e:
                    fail[j, pidx[fn]] += c
                    errs[(j, pidx[fn], e)] += c
        snap_end = np.array([b for _, b in intervals])
        snap_len = np.array([b - a for a, b in intervals])
        base_ns = int(START.timestamp() * 1e9)
        counters = pl.DataFrame({
            "row_j": np.repeat(np.arange(n), len(PROBES)),
            "row_p": np.tile(np.arange(len(PROBES)), n),
            "snapshot_time": np.repeat((snap_end * 1e9).round().astype(np.int64) + base_ns, len(PROBES)),
            "interval_s": np.repeat(snap_len.round(6), len(PROBES)),
            "kernel_release": np.repeat(np.where(snap_end > wave, NEW, OLD), len(PROBES)),
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
                    .drop("row_j", "row_p")
                    .with_columns(pl.lit(host).alias("host"), pl.lit("mlx5").alias("vendor"),
                                  pl.lit("rdma").alias("probe_set"), pl.lit(True).alias("live")))

        events = frame(ev, schema=EVENT_COLUMNS).with_columns(
            pl.lit(host).alias("host"), pl.lit(None, pl.String).alias("path"),
            pl.lit(None, pl.String).alias("path2"), pl.lit(None, pl.String).alias("output"))
        write_partition(events, root, "events", date, host, "part-0000.parquet", durable=False)
        tr = pl.DataFrame(truth, orient="row", schema={
            "trace_id": pl.String, "host": pl.String, "kind": pl.String, "root_cause": pl.String,
            "bifurcation_probe": pl.String, "bifurcation_errno": pl.String, "origin_layer": pl.String,
            "expected_error": pl.Boolean, "held_out": pl.Boolean})
        write_partition(tr, root, "truth", date, host, "part-0000.parquet", durable=False)
        cpath = write_partition(counters, root, "counters", date, host, "part-0000.parquet", durable=False)
        write_counter_buckets(cpath, durable=False)

    summary = {
        "hosts": names, "cx6_hosts": cx6, "regression_hosts": cx6 if "rts_fw_bad_param" in keep else [],
        "memlock_host": memlock_host, "memlock_fault": [_iso(MEMLOCK_FAULT[0]), _iso(MEMLOCK_FAULT[1])],
        "upgrade": {h: _iso(w) for h, w in zip(names, waves, strict=True)},
        "old_release": OLD, "new_release": NEW, "good_window_s": good_window,
        "counts": dict(counts), "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
    }
    (root / "fleetgen39.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

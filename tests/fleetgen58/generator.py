"""fleetgen58's fleet: volume that differs by orders of magnitude between hosts and probes.

Written blind: from reference/rdma_control_path.yaml (the call trees, errnos, layers),
tracer/schema.py (the tables, written through its writers), README.md, docs/architecture.md and
tests/fleet_harness.py. Nothing of the simulator, the audit or another generator is used.

The fleet (one UTC day, 00:00-04:00, every tracer snapshotting every 30 s at :07/:37):
  * 8 busy mlx5 GPU hosts (gpu-a01..a04, gpu-b01..b04): two job slots each, jobs of 4 python3
    ranks lasting 40-70 minutes back to back; ~1,200 CREATE_QPs, ~3,600 MODIFY_QPs (three
    transitions a QP) and ~1,500 REG_MRs a bucket, thousands of control-path calls a bucket. Each
    rank registers one GPU buffer through REG_DMABUF_MR at its job's start only: the rare probe
    (a few calls an hour a host). The job prolog opens a 60-s capture window (SIGUSR1) at every
    job start; besides, each tracer opens one every 10 minutes at its own phase. In a window one
    good call tree per rank and operation is sampled; outside, failures only, untimed.
  * 4 nearly idle hosts: login-01 (a user's ib_write_bw test now and then: five calls a run,
    six runs in four hours), gpu-d07 (in drain: only a health-check agent, a new process every
    10 minutes at :x2:30 doing one REG_MR, CREATE_QP and three MODIFY_QPs, then exiting), inf-01
    and inf-02 (inference servers that register their memory and set up a QP once at start, then
    hardly call the control path again).

Routine, learned families (retried through by every caller that meets them; processes go on):
  * arp_timeout_retried: MODIFY_QP INIT->RTR fails ETIMEDOUT at rdma_addr_find_l2_eth_by_grh
    (the neighbour did not resolve within 1000 ms: reference), the caller retries 1 s later and
    goes on; ~0.4 % of INIT->RTRs on busy hosts. On idle hosts: 1 of 2 calls of the probe in its
    bucket (login-01 00:41:10 and 02:52:40, inf-02 00:05:45 and 03:05:10, gpu-d07 00:22:30 and
    03:42:30): 50 % in the bucket, a lone failure in the hour; inf-02's at 01:14:36.4 is retried
    in the next bucket: its bucket holds 1 call of the probe, failed (100 %); and inf-02's server
    connection stalled for 26 minutes: a QP put in INIT at 02:14:30 fails INIT->RTR at 02:29:36.4
    and 02:38:20 (every MODIFY_QP of the host in buckets 02:15 and 02:30, after one succeeded in
    02:00) and connects at 02:55:50 -- the same process going on through it.
  * cgroup_eagain_retried: REG_MR fails EAGAIN at ib_rdmacg_try_charge (rdma cgroup limit;
    EAGAIN tells the caller to retry), retried 100 ms later and through; ~0.6 % of REG_MRs on busy
    hosts; inf-01's only registration at start (00:03:20) and its model reload (02:14:36.95) each
    fail once, then succeed: 1 failure of 2 calls, all the probe's calls in those hours (the
    reload's retry falls in the next bucket: bucket 02:00 holds 1 REG_MR, failed).

Real causes:
  * qp_limit_enomem (busy host gpu-a04): from 03:19:10 to the window's end every CREATE_QP fails
    ENOMEM at mlx5_cmd_exec (firmware LIM_ERR: leaked QPs exhausted the function's QP quota);
    each rank dies of it and is relaunched 60-120 s later, to fail again.
  * drain_pin_efault (IDLE host gpu-d07): from 01:07:30 to 03:07:30 every REG_MR of the health
    agent fails EFAULT at pin_user_pages_fast and the agent exits 1: one failure every 10 minutes
    (1 or 2 a bucket), 12 records in two hours; its cycles after 03:07:30 succeed again.
  * dmabuf_map_timeout (fleet-wide, rare probe): from 02:05 to 02:30 the GPU exporter's fences
    never signal: REG_DMABUF_MR fails ETIMEDOUT at ib_umem_dmabuf_map_pages (dma_resv_wait_timeout
    returned 0: reference) at job start on gpu-a02, gpu-a03, gpu-b02 and gpu-b03; the job's four
    ranks die, it is requeued 12 minutes later and fails again, the third start succeeds. The
    errno is never seen at that probe otherwise; 8 records a host.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import (
    COUNTERS,
    EVENTS,
    TRUTH,
    write_counter_buckets,
    write_partition,
)

DAY = dt.datetime(2026, 11, 17, tzinfo=dt.UTC)
DATE = DAY.strftime("%Y-%m-%d")
INTERVAL = 30.0
PHASE = 7.0  # snapshots at :07 and :37
FIRST_SNAPSHOT = PHASE + INTERVAL  # 00:00:37 counts 00:00:07-00:00:37
END = 4 * 3600.0 - 23.0  # the last snapshot, 03:59:37
KERNEL = "5.15.0-122-generic"
TICK = 0.004  # untimed trees carry the tick their root returned in (HZ=250)

BUSY = ["gpu-a01", "gpu-a02", "gpu-a03", "gpu-a04", "gpu-b01", "gpu-b02", "gpu-b03", "gpu-b04"]
IDLE = ["login-01", "gpu-d07", "inf-01", "inf-02"]
HOSTS = BUSY + IDLE


def at(h: int, m: int, s: float = 0.0) -> dt.datetime:
    return DAY + dt.timedelta(hours=h, minutes=m, seconds=s)


def _sec(t: dt.datetime) -> float:
    return (t - DAY).total_seconds()


ENOMEM_FROM = at(3, 19, 10)
ENOMEM_HOST = "gpu-a04"
EFAULT_FROM, EFAULT_TO = at(1, 7, 30), at(3, 7, 30)
EFAULT_HOST = "gpu-d07"
DMABUF_FROM, DMABUF_TO = at(2, 5), at(2, 30)
DMABUF_STARTS = {"gpu-a02": at(2, 7, 40), "gpu-a03": at(2, 9, 15), "gpu-b02": at(2, 11, 30), "gpu-b03": at(2, 12, 50)}
REQUEUE_S = 12 * 60.0

# ------------------------------------------------------------------------------------------------
# call trees (reference/rdma_control_path.yaml): name -> (operation, argument, frames (depth, fn, errno))
# ------------------------------------------------------------------------------------------------
_MQ = [(0, "ib_uverbs_modify_qp"), (1, "modify_qp"), (2, "rdma_lookup_get_uobject")]
_MQ_DRIVER = [(4, "ib_security_modify_qp"), (5, "mlx5_ib_modify_qp"), (6, "__mlx5_ib_modify_qp"),
              (7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec")]


def _ok(frames):
    return [(d, fn, None) for d, fn in frames]


GOOD_TREES = {
    "create_qp": ("create_qp", None, _ok([
        (0, "ib_uverbs_create_qp"), (1, "create_qp"), (2, "rdma_alloc_begin_uobject"), (2, "rdma_lookup_get_uobject"),
        (2, "ib_create_qp_user"), (3, "mlx5_ib_create_qp"), (4, "create_user_qp"), (5, "mlx5_qpc_create_qp"),
        (6, "mlx5_cmd_exec"), (3, "ib_create_qp_security")])),
    "reset_init": ("modify_qp", "RESET->INIT", _ok(
        _MQ + [(2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp"), (4, "rdma_counter_bind_qp_auto")] + _MQ_DRIVER)),
    "init_rtr": ("modify_qp", "INIT->RTR", _ok(
        _MQ + [(2, "copy_ah_attr_from_uverbs"), (2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp"),
               (4, "rdma_fill_sgid_attr"), (5, "rdma_get_gid_attr"), (4, "ib_resolve_eth_dmac"),
               (5, "ib_resolve_unicast_gid_dmac"), (6, "rdma_addr_find_l2_eth_by_grh"),
               (4, "rdma_lag_get_ah_roce_slave")] + _MQ_DRIVER)),
    "rtr_rts": ("modify_qp", "RTR->RTS", _ok(
        _MQ + [(2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp")] + _MQ_DRIVER)),
    "reg_mr": ("reg_mr", None, _ok([
        (0, "ib_uverbs_reg_mr"), (1, "rdma_alloc_begin_uobject"), (2, "ib_rdmacg_try_charge"),
        (1, "rdma_lookup_get_uobject"), (1, "mlx5_ib_reg_user_mr"), (2, "mlx5r_umr_resource_init"),
        (2, "ib_umem_get"), (3, "pin_user_pages_fast"), (2, "create_real_mr"), (3, "alloc_cacheable_mr"),
        (3, "mlx5r_umr_update_mr_pas"), (1, "rdma_restrack_add")])),
    "reg_dmabuf_mr": ("reg_dmabuf_mr", None, _ok([
        (0, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR"), (1, "mlx5_ib_reg_user_mr_dmabuf"),
        (2, "mlx5r_umr_resource_init"), (2, "ib_umem_dmabuf_get"), (3, "dma_buf_get"), (3, "dma_buf_dynamic_attach"),
        (2, "alloc_cacheable_mr"), (2, "mlx5_ib_init_dmabuf_mr"), (3, "pagefault_dmabuf_mr"),
        (3, "ib_umem_dmabuf_map_pages"), (1, "rdma_restrack_add")])),
}

FAILING_TREES = {
    "init_rtr_arp_timeout": ("modify_qp", "INIT->RTR", [
        (0, "ib_uverbs_modify_qp", "ETIMEDOUT"), (1, "modify_qp", "ETIMEDOUT"), (2, "rdma_lookup_get_uobject", None),
        (2, "copy_ah_attr_from_uverbs", None), (2, "ib_modify_qp_with_udata", "ETIMEDOUT"), (3, "_ib_modify_qp", "ETIMEDOUT"),
        (4, "rdma_fill_sgid_attr", None), (5, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", "ETIMEDOUT"),
        (5, "ib_resolve_unicast_gid_dmac", "ETIMEDOUT"), (6, "rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT")]),
    "reg_mr_cgroup_eagain": ("reg_mr", None, [
        (0, "ib_uverbs_reg_mr", "EAGAIN"), (1, "rdma_alloc_begin_uobject", "EAGAIN"), (2, "ib_rdmacg_try_charge", "EAGAIN")]),
    "create_qp_fw_enomem": ("create_qp", None, [
        (0, "ib_uverbs_create_qp", "ENOMEM"), (1, "create_qp", "ENOMEM"), (2, "rdma_alloc_begin_uobject", None),
        (2, "rdma_lookup_get_uobject", None), (2, "ib_create_qp_user", "ENOMEM"), (3, "mlx5_ib_create_qp", "ENOMEM"),
        (4, "create_user_qp", "ENOMEM"), (5, "mlx5_qpc_create_qp", "ENOMEM"), (6, "mlx5_cmd_exec", "ENOMEM")]),
    "reg_mr_pin_efault": ("reg_mr", None, [
        (0, "ib_uverbs_reg_mr", "EFAULT"), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
        (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", "EFAULT"), (2, "mlx5r_umr_resource_init", None),
        (2, "ib_umem_get", "EFAULT"), (3, "pin_user_pages_fast", "EFAULT")]),
    "reg_dmabuf_map_timeout": ("reg_dmabuf_mr", None, [
        (0, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "ETIMEDOUT"), (1, "mlx5_ib_reg_user_mr_dmabuf", "ETIMEDOUT"),
        (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_dmabuf_get", None), (3, "dma_buf_get", None),
        (3, "dma_buf_dynamic_attach", None), (2, "alloc_cacheable_mr", None), (2, "mlx5_ib_init_dmabuf_mr", "ETIMEDOUT"),
        (3, "pagefault_dmabuf_mr", "ETIMEDOUT"), (4, "ib_umem_dmabuf_map_pages", "ETIMEDOUT"),
        (2, "mlx5_ib_dereg_mr", None)]),
}
TREES = {**GOOD_TREES, **FAILING_TREES}

# family -> (origin probe, errno, origin layer)
FAMILIES = {
    "arp_timeout_retried": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
    "cgroup_eagain_retried": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "qp_limit_enomem": ("mlx5_cmd_exec", "ENOMEM", "driver"),
    "drain_pin_efault": ("pin_user_pages_fast", "EFAULT", "core"),
    "dmabuf_map_timeout": ("ib_umem_dmabuf_map_pages", "ETIMEDOUT", "core"),
}
TREE_FAMILY = {"init_rtr_arp_timeout": "arp_timeout_retried", "reg_mr_cgroup_eagain": "cgroup_eagain_retried",
               "create_qp_fw_enomem": "qp_limit_enomem", "reg_mr_pin_efault": "drain_pin_efault",
               "reg_dmabuf_map_timeout": "dmabuf_map_timeout"}
ROUTINE = ("arp_timeout_retried", "cgroup_eagain_retried")
ROOT_CAUSES = ("qp_limit_enomem", "drain_pin_efault", "dmabuf_map_timeout")
CAUSE_HOSTS = {"qp_limit_enomem": (ENOMEM_HOST,), "drain_pin_efault": (EFAULT_HOST,),
               "dmabuf_map_timeout": tuple(sorted(DMABUF_STARTS))}
FAULTS = {"qp_limit_enomem": (ENOMEM_FROM, None), "drain_pin_efault": (EFAULT_FROM, EFAULT_TO),
          "dmabuf_map_timeout": (DMABUF_FROM, DMABUF_TO)}

LAYER = {}
for _fn in {fn for _, _, frames in TREES.values() for _, fn, _ in frames}:
    if _fn.startswith(("ib_uverbs_", "uverbs_")) or _fn in ("create_qp", "modify_qp", "copy_ah_attr_from_uverbs"):
        LAYER[_fn] = "uverbs"
    elif _fn.startswith(("mlx5", "__mlx5")) or _fn in ("create_user_qp", "create_real_mr", "alloc_cacheable_mr",
                                                       "pagefault_dmabuf_mr"):
        LAYER[_fn] = "driver"
    else:
        LAYER[_fn] = "core"
PROBES = sorted(LAYER)

ERRNO_NUM = {"ENOMEM": 12, "EFAULT": 14, "EAGAIN": 11, "ETIMEDOUT": 110}
# root latency of a timed call, seconds
LATENCY = {"create_qp": 350e-6, "reset_init": 90e-6, "init_rtr": 160e-6, "rtr_rts": 80e-6, "reg_mr": 300e-6,
           "reg_dmabuf_mr": 900e-6, "init_rtr_arp_timeout": 1.0, "reg_mr_cgroup_eagain": 20e-6,
           "create_qp_fw_enomem": 400e-6, "reg_mr_pin_efault": 60e-6, "reg_dmabuf_map_timeout": 0.5}

# busy hosts: calls a second per live job slot (two slots: ~1,200 CREATE_QPs a bucket a host)
SLOT_RATE = {"create_qp": 0.667, "reset_init": 0.667, "init_rtr": 0.667, "rtr_rts": 0.667, "reg_mr": 0.833}
ARP_SHARE = 0.004
EAGAIN_SHARE = 0.006
RANKS = 4

# the idle hosts' scripts: (seconds since 00:00, process) -> list of (offset s, tree)
_SESSION = [(0.0, "reg_mr"), (0.2, "create_qp"), (0.4, "reset_init"), (0.6, "init_rtr"), (0.8, "rtr_rts")]
_SESSION_ARP = [(0.0, "reg_mr"), (0.2, "create_qp"), (0.4, "reset_init"), (0.6, "init_rtr_arp_timeout"),
                (1.6, "init_rtr"), (1.8, "rtr_rts")]
_QP_SETUP = [(0.0, "create_qp"), (0.2, "reset_init"), (0.4, "init_rtr"), (0.6, "rtr_rts")]
_QP_SETUP_ARP = [(0.0, "create_qp"), (0.2, "reset_init"), (0.4, "init_rtr_arp_timeout"), (1.4, "init_rtr"),
                 (1.6, "rtr_rts")]
IDLE_ROUTINE = {  # host -> times (UTC) of its routine occurrences
    "login-01": [at(0, 41, 10.6), at(2, 52, 40.6)],
    "gpu-d07": [at(0, 22, 30.6), at(3, 42, 30.6)],
    "inf-01": [at(0, 3, 20), at(2, 14, 36.95)],
    "inf-02": [at(0, 5, 45.4), at(1, 14, 36.4), at(2, 29, 36.4), at(2, 38, 20), at(3, 5, 10.4)],
}
# inf-02's stalled connection: a QP moved to INIT at 02:14:30 (bucket 02:00) whose INIT->RTR fails at
# 02:29:36.4 and 02:38:20 (buckets 02:15 and 02:30: every MODIFY_QP of the host there, failed) and
# succeeds at 02:55:50 (bucket 02:45, in a capture window): the server went on through it
STALL = (at(2, 29, 36.4), at(2, 38, 20))
STALL_SETUP, STALL_DONE = at(2, 14, 30), at(2, 55, 50)
CAPTURE_PHASE = {"login-01": 30.0, "gpu-d07": 120.0, "inf-01": 180.0, "inf-02": 330.0}
CAPTURE_S = 60.0


class _Host:
    def __init__(self, name: str, index: int, rng: np.random.Generator):
        self.name = name
        self.index = index
        self.rng = rng
        self.calls: list[tuple] = []  # (t, tree, pid, comm, job_id, recorded)
        self.background = {k: np.zeros(self.n_snaps) for k in SLOT_RATE}
        self.windows: list[tuple[float, float]] = []
        self.next_pid = 20000 + 1000 * index

    n_snaps = int(round((END - FIRST_SNAPSHOT) / INTERVAL)) + 1

    def pid(self) -> int:
        self.next_pid += int(self.rng.integers(3, 40))
        return self.next_pid

    def timed(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.windows)

    def add(self, t: float, tree: str, pid: int, comm: str, job: str | None, recorded: bool | None = None):
        if not (PHASE < t <= END):
            return
        failing = tree in FAILING_TREES
        self.calls.append((t, tree, pid, comm, job, failing or bool(recorded)))


def _snapshot_index(t: float) -> int:
    return max(0, math.ceil((t - FIRST_SNAPSHOT) / INTERVAL - 1e-12))


def _live_seconds(start: float, end: float) -> np.ndarray:
    """Seconds of [start, end) inside each snapshot interval."""
    ends = FIRST_SNAPSHOT + INTERVAL * np.arange(_Host.n_snaps)
    return np.clip(np.minimum(ends, end) - np.maximum(ends - INTERVAL, start), 0, None)


def _busy(h: _Host) -> None:
    rng = h.rng
    phase = (53.0 * h.index + 11.0) % 600.0
    h.windows = [(phase + 600.0 * k, phase + 600.0 * k + CAPTURE_S) for k in range(25)]
    crash_from = _sec(ENOMEM_FROM) if h.name == ENOMEM_HOST else math.inf
    # the jobs of two slots: (start, end, job id, ranks' pids, started in the window)
    jobs = []  # (start, end, job id)
    jobno = 0

    def job_id() -> str:
        nonlocal jobno
        jobno += 1
        return f"{4100 + 100 * h.index + jobno}"

    for slot in range(2):
        forced = _sec(DMABUF_STARTS[h.name]) if slot == 0 and h.name in DMABUF_STARTS else None
        t = -float(rng.uniform(0, 1800))
        while t < min(END, crash_from):
            end = t + float(rng.uniform(40, 70)) * 60
            if forced is not None and end > forced - 30:
                # the job before the exporter fault ends; the next one's starts fail until it is over,
                # requeued under the same job id
                jobs.append((t, forced - float(rng.uniform(30, 90)), job_id()))
                job, s = job_id(), forced
                while s < _sec(DMABUF_TO):
                    h.windows.append((s, s + CAPTURE_S))
                    for _ in range(RANKS):
                        h.add(s + float(rng.uniform(0.5, 4.0)), "reg_dmabuf_map_timeout", h.pid(), "python3", job)
                    s += REQUEUE_S
                t, end, forced = s, s + float(rng.uniform(40, 70)) * 60, None
                jobs.append((t, min(end, crash_from), job))
            else:
                jobs.append((t, min(end, crash_from), job_id()))
            t = end + float(rng.uniform(60, 180))
    live_jobs = []
    for start, end, job in sorted(jobs):
        if end <= start:
            continue
        pids = [h.pid() for _ in range(RANKS)]
        live_jobs.append((start, end, job, pids))
        if start > PHASE:
            h.windows.append((start, start + CAPTURE_S))  # the prolog's capture window
            for pid in pids:
                h.add(start + float(rng.uniform(0.5, 4.0)), "reg_dmabuf_mr", pid, "python3", job, recorded=True)
        for k, share in enumerate(_live_seconds(start, end)):
            if share:
                for kind, rate in SLOT_RATE.items():
                    h.background[kind][k] += rng.poisson(rate * share)
        # routine occurrences, retried through by the rank
        for tree, retry, kind, share, delay in (("init_rtr_arp_timeout", "init_rtr", "init_rtr", ARP_SHARE, 1.0),
                                                ("reg_mr_cgroup_eagain", "reg_mr", "reg_mr", EAGAIN_SHARE, 0.1)):
            lo, hi = max(start, PHASE), min(end, END)
            if hi <= lo:
                continue
            n = rng.poisson(SLOT_RATE[kind] * share * (hi - lo))
            for t in np.sort(rng.uniform(lo, hi, n)):
                pid = pids[int(rng.integers(RANKS))]
                h.add(float(t), tree, pid, "python3", job)
                h.add(float(t) + LATENCY[tree] + delay, retry, pid, "python3", job, recorded=h.timed(float(t) + delay))
    # one sampled good tree per rank and operation in every capture window
    for a, b in sorted(set(h.windows)):
        for start, end, job, pids in live_jobs:
            for pid in pids:
                for kind in SLOT_RATE:
                    t = float(rng.uniform(a, b))
                    if start < t < end:
                        h.add(t, kind, pid, "python3", job, recorded=True)
    if h.name == ENOMEM_HOST:
        # every live rank's next CREATE_QP fails; relaunched 60-120 s later, registers, fails again
        for _start, end, job, pids in live_jobs:
            if end != crash_from:
                continue
            for pid in pids:
                t = crash_from + float(rng.uniform(0, 5))
                h.add(t, "create_qp_fw_enomem", pid, "python3", job)
                t += float(rng.uniform(60, 120))
                while t < END:
                    pid = h.pid()
                    h.add(t, "reg_mr", pid, "python3", job, recorded=h.timed(t))
                    t += float(rng.uniform(0.5, 2.0))
                    h.add(t, "create_qp_fw_enomem", pid, "python3", job)
                    t += float(rng.uniform(60, 120))
    h.jobs = live_jobs


def _idle(h: _Host) -> None:
    phase = CAPTURE_PHASE[h.name]
    h.windows = [(phase + 600.0 * k, phase + 600.0 * k + CAPTURE_S) for k in range(25)]

    def session(t0: float, steps, comm: str, pid: int | None = None, job=None):
        pid = pid or h.pid()
        for off, tree in steps:
            h.add(t0 + off, tree, pid, comm, job, recorded=h.timed(t0 + off))
        return pid

    if h.name == "login-01":
        runs = [at(0, 12, 5), at(0, 41, 10), at(1, 26, 40), at(2, 15, 20), at(2, 52, 40), at(3, 33, 15)]
        for r in runs:
            arp = any(abs(_sec(x) - _sec(r) - 0.6) < 1e-6 for x in IDLE_ROUTINE["login-01"])
            session(_sec(r), _SESSION_ARP if arp else _SESSION, "ib_write_bw")
    elif h.name == "gpu-d07":
        t = _sec(at(0, 2, 30))
        while t < END:
            if _sec(EFAULT_FROM) <= t < _sec(EFAULT_TO):
                h.add(t, "reg_mr_pin_efault", h.pid(), "rdma_healthchk", None)  # the agent exits 1
            else:
                arp = any(abs(_sec(x) - t - 0.6) < 1e-6 for x in IDLE_ROUTINE["gpu-d07"])
                session(t, _SESSION_ARP if arp else _SESSION, "rdma_healthchk")
            t += 600.0
    elif h.name == "inf-01":
        pid = h.pid()
        t0 = _sec(at(0, 3, 20))
        session(t0, [(0.0, "reg_mr_cgroup_eagain"), (0.1, "reg_mr"), (1.0, "reg_dmabuf_mr")] + [
            (2.0 + o, tree) for o, tree in _QP_SETUP], "tritonserver", pid)
        # the model reload: its one registration fails in the interval ending 02:14:37 (bucket 02:00),
        # the retry succeeds in the next (bucket 02:15)
        session(_sec(at(2, 14, 36.95)), [(0.0, "reg_mr_cgroup_eagain"), (0.1, "reg_mr")], "tritonserver", pid)
    elif h.name == "inf-02":
        pid = h.pid()
        t0 = _sec(at(0, 5, 45))
        session(t0, [(-0.8, "reg_mr"), (-0.6, "reg_dmabuf_mr")] + _QP_SETUP_ARP, "tritonserver", pid)
        # a client reconnects: INIT->RTR fails at 01:14:36.4 (bucket 01:00), the retry at 01:14:37.4 is
        # counted by the snapshot of 01:15:07 (bucket 01:15)
        session(_sec(at(1, 14, 36)), _QP_SETUP_ARP, "tritonserver", pid)
        session(_sec(at(1, 48, 30)), _QP_SETUP, "tritonserver", pid)
        session(_sec(STALL_SETUP), [(0.0, "create_qp"), (0.2, "reset_init")], "tritonserver", pid)
        for t in STALL:
            session(_sec(t), [(0.0, "init_rtr_arp_timeout")], "tritonserver", pid)
        session(_sec(STALL_DONE), [(0.0, "init_rtr"), (0.2, "rtr_rts")], "tritonserver", pid)
        session(_sec(at(3, 5, 10)), _QP_SETUP_ARP, "tritonserver", pid)
    h.jobs = []


def _frame_times(frames, total: float) -> tuple[list[float], list[float]]:
    """Entry offsets and latencies (s) of a tree's frames: each frame spans its callees, the root
    `total` long."""
    n = len(frames)
    step = total / (2 * n + 1)
    entry, exit_ = [0.0] * n, [0.0] * n
    cursor = 0.0
    stack: list[int] = []
    for i, (d, _, _) in enumerate(frames):
        while stack and frames[stack[-1]][0] >= d:
            j = stack.pop()
            cursor += step
            exit_[j] = cursor
        cursor += step
        entry[i] = cursor
        stack.append(i)
    while stack:
        j = stack.pop()
        cursor += step
        exit_[j] = cursor
    scale = total / cursor
    return [e * scale - entry[0] * scale for e in entry], [(x - e) * scale for e, x in zip(entry, exit_, strict=True)]


def generate(root, seed: int = 58) -> dict:
    root = Path(root)
    rng = np.random.default_rng(seed)
    hosts = []
    for i, name in enumerate(HOSTS):
        h = _Host(name, i, np.random.default_rng([seed, i]))
        (_busy if name in BUSY else _idle)(h)
        hosts.append(h)
    probe_ix = {p: i for i, p in enumerate(PROBES)}
    snaps = FIRST_SNAPSHOT + INTERVAL * np.arange(_Host.n_snaps)
    summary = {"hosts": list(HOSTS), "records": 0, "snapshots": {}, "calls": {}, "good": 0, "held_out": 0}
    for h in hosts:
        inv = np.zeros((_Host.n_snaps, len(PROBES)), dtype=np.int64)
        errs: dict[tuple[int, int], dict[str, int]] = {}
        for kind, counts in h.background.items():
            cols = [probe_ix[fn] for _, fn, _ in GOOD_TREES[kind][2]]
            for c in cols:
                inv[:, c] += counts.astype(np.int64)
        ev: dict[str, list] = {f.name: [] for f in EVENTS}
        truth: dict[str, list] = {f.name: [] for f in TRUTH}
        boot = -float(2 * 86400 + 3600 * h.index + 17)
        seq = 0
        for t, tree, pid, comm, job, recorded in sorted(h.calls, key=lambda c: c[0]):
            op, arg, frames = TREES[tree]
            k = _snapshot_index(t)
            for _, fn, errno in frames:
                inv[k, probe_ix[fn]] += 1
                if errno:
                    cell = errs.setdefault((k, probe_ix[fn]), {})
                    cell[errno] = cell.get(errno, 0) + 1
            if not recorded:
                continue
            seq += 1
            tid = pid
            trace_id = f"{h.name}:b{h.index:02d}:{tid}:{seq}"
            timed = h.timed(t)
            total = LATENCY[tree] * float(rng.uniform(0.8, 1.3))
            root_err = frames[0][2]
            if timed:
                offs, lats = _frame_times(frames, total)
                start_s, end_s = t, t + total
                ts = [int(round((t + o - boot) * 1e9)) for o in offs]
                lat = [max(1, int(round(x * 1e9))) for x in lats]
            else:
                tick = math.floor((t + total) / TICK) * TICK
                start_s = end_s = tick
                ts = [int(round((tick - boot) * 1e9))] * len(frames)
                lat = [None] * len(frames)
            start = DAY + dt.timedelta(seconds=start_s)
            end = DAY + dt.timedelta(seconds=end_s)
            kind = "failure" if tree in FAILING_TREES else "good"
            for i, (d, fn, errno) in enumerate(frames):
                ev["trace_id"].append(trace_id)
                ev["seq"].append(i)
                ev["ts_ns"].append(ts[i])
                ev["pid"].append(pid)
                ev["tid"].append(tid)
                ev["ppid"].append(1 if comm != "python3" else 9000 + h.index)
                ev["comm"].append(comm)
                ev["probe"].append(fn)
                ev["layer"].append(LAYER[fn])
                ev["depth"].append(d)
                ev["ret"].append(-ERRNO_NUM[errno] if errno else 0)
                ev["errno"].append(errno)
                ev["latency_ns"].append(lat[i])
                ev["path"].append(None)
                ev["arg"].append(arg if i == 0 else None)
                ev["path2"].append(None)
                ev["output"].append(None)
                ev["kind"].append(kind)
                ev["command"].append(op)
                ev["exit_status"].append(-ERRNO_NUM[root_err] if root_err else 0)
                ev["start_time"].append(start)
                ev["end_time"].append(end)
                ev["host"].append(h.name)
                ev["kernel_release"].append(KERNEL)
                ev["lost_events"].append(0)
                ev["job_id"].append(job)
                ev["metadata"].append(None)
                ev["repeat_count"].append(None)
            family = TREE_FAMILY.get(tree)
            held = kind == "good" and bool(rng.random() < 0.1)
            truth["trace_id"].append(trace_id)
            truth["host"].append(h.name)
            truth["kind"].append(kind)
            truth["root_cause"].append(family)
            probe, errno, layer = FAMILIES[family] if family else (None, None, None)
            truth["bifurcation_probe"].append(probe)
            truth["bifurcation_errno"].append(errno)
            truth["origin_layer"].append(layer)
            truth["expected_error"].append(family in ROUTINE)
            truth["held_out"].append(held)
            summary["records"] += 1
            summary["good"] += kind == "good"
            summary["held_out"] += held
        summary["calls"][h.name] = int(inv[:, probe_ix[GOOD_TREES["create_qp"][2][0][1]]].sum()
                                       + inv[:, probe_ix["ib_uverbs_modify_qp"]].sum()
                                       + inv[:, probe_ix["ib_uverbs_reg_mr"]].sum()
                                       + inv[:, probe_ix["ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR"]].sum())
        write_partition(pa.Table.from_pydict(ev, schema=EVENTS), root, "events", DATE, h.name, "part-0000.parquet",
                        durable=False)
        write_partition(pa.Table.from_pydict(truth, schema=TRUTH), root, "truth", DATE, h.name, "part-0000.parquet",
                        durable=False)
        n = _Host.n_snaps * len(PROBES)
        times = [DAY + dt.timedelta(seconds=float(s)) for s in snaps]
        counters = {
            "host": [h.name] * n,
            "snapshot_time": [times[k] for k in range(_Host.n_snaps) for _ in PROBES],
            "interval_s": [INTERVAL] * n,
            "kernel_release": [KERNEL] * n,
            "vendor": ["mlx5"] * n,
            "probe_set": ["rdma"] * n,
            "probe": PROBES * _Host.n_snaps,
            "layer": [LAYER[p] for p in PROBES] * _Host.n_snaps,
            "live": [True] * n,
            "invocations": inv.reshape(-1).tolist(),
            "failures": [sum(errs.get((k, j), {}).values()) for k in range(_Host.n_snaps) for j in range(len(PROBES))],
            "errno_counts": [[{"errno": e, "count": c} for e, c in sorted(errs.get((k, j), {}).items())]
                             for k in range(_Host.n_snaps) for j in range(len(PROBES))],
            "lost_records": [0] * n,
        }
        table = pa.Table.from_pydict(counters, schema=COUNTERS)
        path = write_partition(table, root, "counters", DATE, h.name, "part-0000.parquet", durable=False)
        write_counter_buckets(path, table, durable=False)
        summary["snapshots"][h.name] = _Host.n_snaps
    return summary

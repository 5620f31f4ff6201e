"""fleetgen16: a sixteenth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings), aimed at what the fifteen
before it leave out: a rolling driver-restart wave, one restart that never ends, the wave's errno
at another frame, two errors in one call tree, and at-least-once shipping across midnight.

The fleet: mlx5 RoCE hosts on an upstream kernel (6.8.0-60-generic), racks of 8
(`fg16-r<RR>-h<H>`). Two job slots a host, jobs of 10-25 minutes of 4 ranks (comm `trainer`, one
process a rank). A rank allocates a PD, registers a buffer, creates a CQ and an RC QP, moves it
RESET->INIT->RTR->RTS, and re-registers its buffer every ~4 minutes while it trains (teardown is
cleanup, outside the probe set, as RDMATracer's rules exclude it). A rank that fails fatally ends
its job (the launcher kills the other ranks within 0.3 s); the slot's next job starts 1-3 minutes
later. An `rdma-healthd` agent on every host allocates (and frees) a PD every 15 s as a liveness
check and goes on whatever it gets. The port counter mode is AUTO on every host, so each
RESET->INIT binds a Q counter (rdma_counter_bind_qp_auto -> alloc_and_bind -> ALLOC_Q_COUNTER).

The daemon (`tracer run -i 60s`): 60 s snapshots at a per-host phase, every call counted per probe
(every frame below is a probe); a tree is emitted when any probe in it fails, the first 3 of a
signature (shape and errnos) per snapshot as records and the rest in the third's repeat_count; good
trees only in capture windows (the first 30 s of every 5 minutes at a per-host phase), timed there;
outside them a failure tree's frames carry the 4 ms tick its root returned in, latency null. The
window starts at 22:40 UTC and crosses midnight 80 minutes in.

Fleet dynamics (not faults):
  restart_wave   a rolling mlx5 driver restart (a firmware-config change), rack after rack from 30
                 minutes into the window, 80 minutes end to end: each host has its own 10-minute
                 slot; the scheduler drains its jobs at the slot's start (they end cleanly) and
                 starts none until its end; 3 minutes in, the driver is reloaded, and for 90-180 s
                 the device is being disassociated and re-registered.
  resent_midnight  three hosts' shipper lost its acknowledgements from 23:45 to 00:15: it ships
                 those snapshots (counters and call trees) a second time at 00:18, and the
                 collector files the second copy under the date it ARRIVED (date=<next day>,
                 `part-resent-0.parquet`): the 23:45-23:59 trees sit in both date partitions,
                 same trace ids, same snapshot times. (The documented layout does not say which
                 date a partition is; the docs promise a tree or snapshot delivered twice counts
                 once.)

Routine families (truth expected_error, no root cause; the process goes on):
  restart_disassociate  alloc_pd EIO at rdma_alloc_begin_uobject ("down_read_trylock(hw_destroy_rwsem)
                 fails (disassociate/close in progress)"): the agent's liveness checks during its
                 host's restart, every host once (the stuck host included: for the agent it looks the
                 same, and it goes on).
  counter_no_res  RESET->INIT: ALLOC_Q_COUNTER answers NO_RES (the VFs hold the port's Q counters):
                 EAGAIN at mlx5_cmd_exec under mlx5_ib_counter_bind_qp and __rdma_counter_bind_qp,
                 alloc_and_bind returns NULL, rdma_counter_bind_qp_auto returns ENOMEM, which
                 _ib_modify_qp ignores ("the rdma_counter_bind_qp_auto result is ignored"): the root
                 succeeds. 8 % of RESET->INIT on every host.

Root causes (truth root_cause; ROOT_CAUSES: origin probe, errno, operation):
  restart_stuck   one host's driver restart never ends (just before midnight): the agent's checks
                 fail on (routine for it, as above), and when the slot ends the scheduler starts jobs
                 again, whose ranks' alloc_pd fail EIO at rdma_alloc_begin_uobject -- the wave's
                 family, fatal to `trainer`: crash loops until the window ends. Decision: the ranks'
                 failures are a root cause (jobs die; the family is routine only for a caller that
                 goes on), and the host MUST alert with EIO (or a persistent bad state).
  alloc_pd_fw_eio  one host's firmware answers 15 % of ALLOC_PD with INT_ERR all window: EIO at
                 mlx5_cmd_exec under mlx5_ib_alloc_pd (errno_conventions: INT_ERR -> -EIO): the
                 wave's operation and errno at another frame, seen on this host only. Ranks die,
                 the agent goes on; both are the fault (no other host shows it). MUST alert (EIO).
  rst2init_fw_timeout  one host's firmware stops answering RST2INIT_QP on 40 % of RESET->INIT from
                 40 % of the window: ETIMEDOUT at mlx5_cmd_exec under mlx5_core_qp_modify, up through
                 __mlx5_ib_modify_qp, mlx5_ib_modify_qp, ib_security_modify_qp, _ib_modify_qp to the
                 root; the rank dies. 8 % of those trees carry the routine counter_no_res chain
                 first (two errors in one tree, both from mlx5_cmd_exec at depth 8): the origin is
                 the chain whose errno reaches the root. MUST alert (ETIMEDOUT).

Truth per trace: root_cause for the fatal failures above, expected_error for the routine ones, the
bifurcation probe and errno = the deepest failing frame of the chain the root's errno comes from
(for a tree whose root succeeded: the absorbed error's origin) and its layer. The summary
(`<out>/fleetgen16.json` and the return value) names `alert_hosts` (acceptable: host -> errnos),
`required_alert_hosts` (must alert) and the hosts of each shape.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import random
from collections import defaultdict
from pathlib import Path

import polars as pl
from fleet_tables import extend_rows, frame

from tracer.schema import PARTITION_COLUMNS, partition_path, write_table

ROOT_CAUSES = {
    "restart_stuck": ("rdma_alloc_begin_uobject", "EIO", "alloc_pd"),
    "alloc_pd_fw_eio": ("mlx5_cmd_exec", "EIO", "alloc_pd"),
    "rst2init_fw_timeout": ("mlx5_cmd_exec", "ETIMEDOUT", "modify_qp"),
}
ROUTINE = {
    "restart_disassociate": ("rdma_alloc_begin_uobject", "EIO", "alloc_pd"),
    "counter_no_res": ("mlx5_cmd_exec", "EAGAIN", "modify_qp"),
}
ERRNO = {"EIO": 5, "EAGAIN": 11, "ENOMEM": 12, "ETIMEDOUT": 110}

START = dt.datetime(2026, 11, 30, 22, 40, tzinfo=dt.UTC)
RELEASE = "6.8.0-60-generic"
SNAP_S = 60.0
CAPTURE_EVERY_S, CAPTURE_LEN_S = 300.0, 30.0
RECORDS_PER_SIGNATURE = 3
WAVE_START_S, WAVE_SPAN_S, SLOT_S, RESTART_AFTER_S = 30 * 60.0, 80 * 60.0, 600.0, 180.0
AGENT_EVERY_S = 15.0
RESENT_FROM, RESENT_TO = START + dt.timedelta(minutes=65), START + dt.timedelta(minutes=95)
RESENT_AT = START + dt.timedelta(minutes=98)
FW_TIMEOUT_S = 10.0  # how long a firmware command waits before ETIMEDOUT

UVERBS = {"uverbs_request", "uverbs_response", "modify_qp", "create_qp", "create_cq"}
DRIVER_PREFIX = ("mlx5", "__mlx5", "create_user_qp", "_create_user_qp", "create_cq_user")


@functools.cache
def layer(fn: str) -> str:
    if fn.startswith("ib_uverbs_") or fn in UVERBS:
        return "uverbs"
    return "driver" if fn.startswith(DRIVER_PREFIX) else "core"


def frames_of(op: str, transition: str | None = None, failure: str | None = None,
              counter_no_res: bool = False) -> list[list]:
    """The call tree of one operation as [depth, function, errno or None], in entry order, from
    the reference's chains (static helpers the reference marks inline left out; cleanup paths
    are outside the probe set)."""
    if op == "alloc_pd":
        f = [[0, "ib_uverbs_alloc_pd", None], [1, "uverbs_request", None]]
        if failure == "restart":
            return _fail_root(f + [[1, "rdma_alloc_begin_uobject", "EIO"]], "EIO")
        f += [[1, "rdma_alloc_begin_uobject", None], [2, "ib_rdmacg_try_charge", None]]
        if failure == "fw_eio":
            return _fail_root(f + [[1, "mlx5_ib_alloc_pd", "EIO"], [2, "mlx5_cmd_exec", "EIO"]], "EIO")
        return f + [[1, "mlx5_ib_alloc_pd", None], [2, "mlx5_cmd_exec", None], [1, "rdma_restrack_add", None],
                    [1, "uverbs_response", None]]
    if op == "reg_mr":
        return [[0, "ib_uverbs_reg_mr", None], [1, "rdma_alloc_begin_uobject", None], [2, "ib_rdmacg_try_charge", None],
                [1, "rdma_lookup_get_uobject", None], [1, "mlx5_ib_reg_user_mr", None], [2, "ib_umem_get", None],
                [3, "pin_user_pages_fast", None], [3, "sg_alloc_append_table_from_pages", None],
                [1, "uverbs_response", None]]
    if op == "create_cq":
        return [[0, "ib_uverbs_create_cq", None], [1, "create_cq", None], [2, "rdma_alloc_begin_uobject", None],
                [3, "ib_rdmacg_try_charge", None], [2, "mlx5_ib_create_cq", None], [3, "create_cq_user", None],
                [4, "ib_umem_get", None], [4, "mlx5_ib_db_map_user", None], [3, "mlx5_comp_eqn_get", None],
                [3, "mlx5_core_create_cq", None], [2, "rdma_restrack_add", None], [2, "uverbs_response", None]]
    if op == "create_qp":
        # verbs.c's and mlx5's static create_qp are left out (static, may be inlined): one name, one frame
        return [[0, "ib_uverbs_create_qp", None], [1, "create_qp", None], [2, "rdma_alloc_begin_uobject", None],
                [3, "ib_rdmacg_try_charge", None], [2, "rdma_lookup_get_uobject", None], [2, "ib_create_qp_user", None],
                [3, "mlx5_ib_create_qp", None], [4, "create_user_qp", None], [5, "_create_user_qp", None],
                [6, "ib_umem_get", None], [5, "mlx5_qpc_create_qp", None], [6, "mlx5_cmd_exec", None],
                [3, "ib_create_qp_security", None], [2, "ib_qp_usecnt_inc", None], [2, "uverbs_response", None]]
    assert op == "modify_qp", op
    f = [[0, "ib_uverbs_modify_qp", None], [1, "modify_qp", None], [2, "rdma_lookup_get_uobject", None],
         [2, "ib_modify_qp_with_udata", None], [3, "_ib_modify_qp", None]]
    if transition == "RESET->INIT":
        nr = "EAGAIN" if counter_no_res else None
        f += [[4, "rdma_counter_bind_qp_auto", "ENOMEM" if counter_no_res else None],
              [5, "rdma_get_counter_auto_mode", None], [5, "alloc_and_bind", None],
              [6, "mlx5_ib_counter_alloc_stats", None], [6, "__rdma_counter_bind_qp", nr],
              [7, "mlx5_ib_counter_bind_qp", nr], [8, "mlx5_cmd_exec", nr]]
        if not counter_no_res:
            f += [[8, "mlx5_ib_qp_set_counter", None], [6, "rdma_restrack_add", None]]
    elif transition == "INIT->RTR":
        f += [[4, "rdma_fill_sgid_attr", None], [5, "rdma_get_gid_attr", None], [4, "ib_resolve_eth_dmac", None],
              [5, "ib_resolve_unicast_gid_dmac", None], [6, "rdma_addr_find_l2_eth_by_grh", None],
              [4, "rdma_lag_get_ah_roce_slave", None]]
    f += [[4, "ib_security_modify_qp", None], [5, "mlx5_ib_modify_qp", None], [6, "ib_modify_qp_is_ok", None],
          [6, "__mlx5_ib_modify_qp", None]]
    if transition == "INIT->RTR":
        f.append([7, "mlx5_set_path", None])
    f += [[7, "mlx5_core_qp_modify", None], [8, "mlx5_cmd_exec", None]]
    if failure == "timeout":
        # the firmware command's ETIMEDOUT passes up every frame it sits under to the root
        f[-1][2] = "ETIMEDOUT"
        for fr in f:
            if fr[1] in ("mlx5_core_qp_modify", "__mlx5_ib_modify_qp", "mlx5_ib_modify_qp", "ib_security_modify_qp",
                         "_ib_modify_qp", "ib_modify_qp_with_udata", "modify_qp", "ib_uverbs_modify_qp"):
                fr[2] = "ETIMEDOUT"
    return f


def _fail_root(f: list[list], errno: str) -> list[list]:
    f[0][2] = errno
    return f


@functools.cache
def _tree(op: str, transition: str | None, failure: str | None, counter_no_res: bool) -> list[list]:
    """frames_of, built once per argument set: a call's frames are read, never changed."""
    return frames_of(op, transition, failure, counter_no_res)


OPS = [("alloc_pd", None), ("reg_mr", None), ("create_cq", None), ("create_qp", None),
       ("modify_qp", "RESET->INIT"), ("modify_qp", "INIT->RTR"), ("modify_qp", "RTR->RTS")]
PROBES = sorted({fn for op, tr in OPS for _, fn, _ in frames_of(op, tr, counter_no_res=True)}
                | {fn for op, tr in OPS for _, fn, _ in frames_of(op, tr)})


class Host:
    """One host's calls, what the daemon records of them, and its counters."""

    def __init__(self, name: str, index: int, rng: random.Random, window_s: float, slot_s: float,
                 role: str | None, restart_len: float):
        self.name, self.index, self.rng, self.window_s = name, index, rng, window_s
        self.role = role
        self.snap_phase = rng.uniform(0, SNAP_S)
        self._snap_times: dict[int, dt.datetime] = {}
        self.capture_phase = rng.uniform(0, CAPTURE_EVERY_S)
        self.boot = START - dt.timedelta(days=rng.uniform(2, 40))
        self.slot = slot_s
        self.restart = (slot_s + RESTART_AFTER_S,
                        math.inf if role == "restart_stuck" else slot_s + RESTART_AFTER_S + restart_len)
        self.calls: list[dict] = []
        self.next_pid = rng.randrange(3000, 9000)

    def pid(self) -> int:
        self.next_pid += self.rng.randrange(1, 40)
        return self.next_pid

    # ------------------------------------------------------------------ what happens
    def restarting(self, t: float) -> bool:
        return self.restart[0] <= t < self.restart[1]

    def outcome(self, op: str, tr: str | None, t: float, comm: str) -> tuple[str | None, bool, str | None, bool]:
        """(failure, counter_no_res, truth label, fatal) of one call at t."""
        rng = self.rng
        if op == "alloc_pd":
            if self.restarting(t):
                label = "restart_stuck" if (comm == "trainer" and self.role == "restart_stuck") else "restart_disassociate"
                return "restart", False, label, True
            if self.role == "alloc_pd_fw_eio" and rng.random() < 0.15:
                return "fw_eio", False, "alloc_pd_fw_eio", True
        if op == "modify_qp" and tr == "RESET->INIT":
            nores = rng.random() < 0.08
            if self.role == "rst2init_fw_timeout" and t >= 0.4 * self.window_s and rng.random() < 0.4:
                return "timeout", nores, "rst2init_fw_timeout", True
            return None, nores, ("counter_no_res" if nores else None), False
        return None, False, None, False

    def add_call(self, t: float, op: str, tr: str | None, pid: int, comm: str, job: str | None) -> dict:
        failure, nores, label, fatal = self.outcome(op, tr, t, comm)
        frames = _tree(op, tr, failure, nores)
        call = {"t": t, "op": op, "tr": tr, "pid": pid, "comm": comm, "job": job, "frames": frames,
                "label": label, "fatal": fatal and frames[0][2] is not None}
        call["dur"] = (FW_TIMEOUT_S if failure == "timeout" else 0.0) + 0.0002 + 0.00003 * len(frames)
        self.calls.append(call)
        return call

    def drained(self, t: float) -> bool:
        return self.slot <= t < self.slot + SLOT_S

    def run_jobs(self, jobseq: list[int]) -> None:
        rng = self.rng
        for _slot in range(2):
            t = rng.uniform(0, 120)
            while t < self.window_s:
                if self.drained(t):
                    t = self.slot + SLOT_S + rng.uniform(5, 60)
                    continue
                length = rng.uniform(600, 1500)
                end = min(t + length, self.window_s)
                if t < self.slot < end:
                    end = self.slot  # drained: the job ends cleanly at the slot's start
                jobseq[0] += 1
                job = f"{jobseq[0]}"
                died = self.run_job(t, end, job)
                t = (died + rng.uniform(60, 180)) if died is not None else end + rng.uniform(30, 120)

    def run_job(self, t0: float, end: float, job: str) -> float | None:
        """Every rank's calls, in time order; a fatal failure ends the job 0.3 s after it."""
        rng = self.rng
        plan = []
        for _ in range(4):
            pid = self.pid()
            t = t0 + rng.uniform(0, 2)
            for op, tr in OPS:
                plan.append((t, op, tr, pid))
                t += rng.uniform(0.005, 0.03)
            t += rng.uniform(200, 280)
            while t < end:
                plan.append((t, "reg_mr", None, pid))
                t += rng.uniform(200, 280)
        plan.sort()
        kill, dead = math.inf, set()
        for t, op, tr, pid in plan:
            if t >= kill or t >= end:
                break
            if pid in dead:
                continue
            call = self.add_call(t, op, tr, pid, "trainer", job)
            if call["fatal"]:  # the rank exits; the launcher kills the others 0.3 s later
                dead.add(pid)
                kill = min(kill, t + call["dur"] + 0.3)
        return None if kill == math.inf else kill

    def run_agent(self) -> None:
        pid = self.rng.randrange(900, 2000)
        t = self.rng.uniform(0, AGENT_EVERY_S)
        while t < self.window_s:
            self.add_call(t, "alloc_pd", None, pid, "rdma-healthd", None)
            t += AGENT_EVERY_S + self.rng.uniform(-0.5, 0.5)

    # ------------------------------------------------------------------ what the daemon writes
    def snapshot_of(self, t_end: float) -> int:
        return math.ceil((t_end - self.snap_phase) / SNAP_S)

    def snap_time(self, k: int) -> dt.datetime:
        if k not in self._snap_times:
            self._snap_times[k] = START + dt.timedelta(seconds=self.snap_phase + k * SNAP_S)
        return self._snap_times[k]

    def in_capture(self, t: float) -> bool:
        return (t - self.capture_phase) % CAPTURE_EVERY_S < CAPTURE_LEN_S

    def record(self, ids: list[int]) -> tuple[dict[str, list], list[dict], dict]:
        """Event rows (column by column), truth rows and counters {(snapshot, probe): [calls,
        failures, {errno: n}]}."""
        counters: dict = defaultdict(lambda: [0, 0, defaultdict(int)])
        kept: dict = {}  # (snapshot, signature) -> [records...]
        records = []
        for call in sorted(self.calls, key=lambda c: c["t"]):
            frames, end = call["frames"], call["t"] + call["dur"]
            if end >= self.window_s:
                continue
            k = self.snapshot_of(end)
            for _, fn, errno in frames:
                c = counters[(k, fn)]
                c[0] += 1
                if errno:
                    c[1] += 1
                    c[2][errno] += 1
            failed = any(e for _, _, e in frames)
            timed = self.in_capture(call["t"])
            if not failed:
                if timed:
                    records.append({"call": call, "k": k, "timed": True, "repeat": None})
                continue
            sig = (call["op"], tuple((d, fn, e) for d, fn, e in frames))
            same = kept.setdefault((k, sig), [])
            if len(same) < RECORDS_PER_SIGNATURE:
                rec = {"call": call, "k": k, "timed": timed, "repeat": None}
                same.append(rec)
                records.append(rec)
            else:
                same[-1]["repeat"] = (same[-1]["repeat"] or 1) + 1
        rows: dict[str, list] = {}
        truth = []
        self.record_snapshots = {}
        for rec in records:
            ids[0] += 1
            rec["trace_id"] = f"{self.name}-{ids[0]:08x}"
            self.record_snapshots[rec["trace_id"]] = rec["k"]
            self._rows(rec, rows)
            truth.append(self._truth(rec))
        return rows, truth, counters

    def _rows(self, rec: dict, rows: dict[str, list]) -> None:
        call, frames = rec["call"], rec["call"]["frames"]
        t0 = call["t"]
        end = t0 + call["dur"]
        tick = math.floor(end / 0.004) * 0.004
        wall0 = START + dt.timedelta(seconds=t0 if rec["timed"] else tick)
        wall1 = START + dt.timedelta(seconds=end if rec["timed"] else tick)
        base = (START - self.boot).total_seconds()
        # entry times: frames in order, 30 us apart; a frame returns just before the next frame at
        # its depth or above enters (the root last)
        entries = [t0 + 0.00003 * i for i in range(len(frames))]
        exits = []
        for i, (d, _, _) in enumerate(frames):
            nxt = next((entries[j] for j in range(i + 1, len(frames)) if frames[j][0] <= d), None)
            exits.append((nxt - 0.000002) if nxt is not None else end - 0.000001 * d)
        meta = [{"key": "device", "value": "mlx5_0"}, {"key": "probe_set", "value": "rdma"}]
        kind = "good" if not any(e for _, _, e in frames) else "failure"
        root_errno = frames[0][2]
        timed = rec["timed"]
        extend_rows(rows, {
            "seq": range(len(frames)),
            "ts_ns": [int(((entry if timed else tick) + base) * 1e9) for entry in entries],
            "probe": [fn for _, fn, _ in frames], "layer": [layer(fn) for _, fn, _ in frames],
            "depth": [depth for depth, _, _ in frames],
            "ret": [-ERRNO[errno] if errno else 0 for _, _, errno in frames], "errno": [e for _, _, e in frames],
            "latency_ns": [int((exit_ - entry) * 1e9) if timed else None
                           for entry, exit_ in zip(entries, exits, strict=True)],
            "arg": [call["tr"]] + [None] * (len(frames) - 1),
        }, {
            "trace_id": rec["trace_id"], "pid": call["pid"], "tid": call["pid"],
            "ppid": 1 if call["comm"] == "rdma-healthd" else 700, "comm": call["comm"], "kind": kind,
            "command": call["op"], "exit_status": -ERRNO[root_errno] if root_errno else 0,
            "start_time": wall0, "end_time": wall1, "kernel_release": RELEASE, "lost_events": 0,
            "job_id": call["job"], "metadata": meta, "repeat_count": rec["repeat"],
        })

    def _truth(self, rec: dict) -> dict:
        call, frames = rec["call"], rec["call"]["frames"]
        label = call["label"]
        failed = [f for f in frames if f[2]]
        if not failed:
            return {"trace_id": rec["trace_id"], "kind": "good", "root_cause": None, "bifurcation_probe": None,
                    "bifurcation_errno": None, "origin_layer": None, "expected_error": False,
                    "held_out": self.rng.random() < 0.1, "_date": rec}
        root = frames[0][2]
        # the origin: the deepest failing frame carrying the root's errno (a root that succeeded:
        # the absorbed chain's deepest frame)
        chain = [f for f in failed if f[2] == root] if root else failed
        origin = max(chain, key=lambda f: f[0])
        routine = label in ROUTINE
        return {"trace_id": rec["trace_id"], "kind": "failure", "root_cause": None if routine else label,
                "bifurcation_probe": origin[1], "bifurcation_errno": origin[2], "origin_layer": layer(origin[1]),
                "expected_error": routine, "held_out": False, "_date": rec}


def _wall(rec: dict) -> dt.datetime:
    return START + dt.timedelta(seconds=rec["call"]["t"])


def generate(out_dir, hosts: int = 64, hours: float = 3.0, seed: int = 16) -> dict:
    """Write the fleet (events, counters, truth in the dataset layout, and fleetgen16.json) into
    out_dir; return the summary."""
    if hosts < 24 or hours < 2:
        raise ValueError("fleetgen16 needs 24 hosts or more and 2 hours or more (the wave and midnight)")
    out = Path(out_dir)
    rng = random.Random(seed)
    window_s = hours * 3600.0
    names = [f"fg16-r{i // 8:02d}-h{i % 8}" for i in range(hosts)]
    spacing = WAVE_SPAN_S / hosts
    slots = [WAVE_START_S + i * spacing for i in range(hosts)]
    # the stuck host: the one whose restart starts ~5 minutes before midnight
    stuck = min(range(hosts), key=lambda i: abs(slots[i] + RESTART_AFTER_S - (80 - 5) * 60))
    fw = (hosts * 5) // 6 + 1
    timeout = hosts // 3 - 2
    resent = [stuck - 1, stuck, stuck + 1]
    roles = {stuck: "restart_stuck", fw: "alloc_pd_fw_eio", timeout: "rst2init_fw_timeout"}
    assert len({stuck, fw, timeout} | set(resent)) == 5
    ids, jobseq = [0], [0]
    summary_hosts = {}
    for i, name in enumerate(names):
        h = Host(name, i, random.Random(rng.random()), window_s, slots[i], roles.get(i), rng.uniform(90, 180))
        h.run_agent()
        h.run_jobs(jobseq)
        rows, truth, counters = h.record(ids)
        _write_host(out, h, rows, truth, counters, resend=i in resent)
        summary_hosts[name] = {"slot": (START + dt.timedelta(seconds=slots[i])).isoformat(),
                               "restart": [(START + dt.timedelta(seconds=x)).isoformat() if x != math.inf else None
                                           for x in h.restart]}
    summary = {
        "hosts": hosts, "hours": hours, "seed": seed,
        "stuck_host": names[stuck], "fw_eio_host": names[fw], "timeout_host": names[timeout],
        "resent_hosts": [names[i] for i in resent],
        "resent": [RESENT_FROM.isoformat(), RESENT_TO.isoformat(), RESENT_AT.isoformat()],
        "alert_hosts": {names[stuck]: ["EIO"], names[fw]: ["EIO"], names[timeout]: ["ETIMEDOUT"]},
        "required_alert_hosts": {names[stuck]: ["EIO"], names[fw]: ["EIO"], names[timeout]: ["ETIMEDOUT"]},
        "roles": {names[i]: r for i, r in roles.items()},
        "wave": summary_hosts,
    }
    (out / "fleetgen16.json").write_text(json.dumps(summary, indent=1))
    return summary


def _date(t: dt.datetime) -> str:
    return t.date().isoformat()


def _write(data: pl.DataFrame, out: Path, table: str, date: str, host: str, name: str) -> None:
    """One part file of the dataset layout, the host in the path only."""
    write_table(data.with_columns(host=pl.lit(host)), partition_path(out, table, date, host, name), table,
                omit_columns=PARTITION_COLUMNS, durable=False)


META = pl.List(pl.Struct({"key": pl.String, "value": pl.String}))
ERRNO_COUNTS = pl.List(pl.Struct({"errno": pl.String, "count": pl.Int64}))


def _write_host(out: Path, h: Host, rows: dict[str, list], truth: list[dict], counters: dict, resend: bool) -> None:
    ev = frame(rows, metadata=META) if rows else None
    by_trace_date = {r["trace_id"]: _date(_wall(r.pop("_date"))) for r in truth}
    tr = pl.DataFrame(truth, infer_schema_length=None)
    for date in sorted(set(by_trace_date.values())):
        ids = [t for t, d in by_trace_date.items() if d == date]
        _write(tr.filter(pl.col("trace_id").is_in(ids)), out, "truth", date, h.name, "part-0.parquet")
        if ev is not None:
            _write(ev.filter(pl.col("trace_id").is_in(ids)), out, "events", date, h.name, "part-0.parquet")
    crow: dict[str, list] = {}
    snaps = sorted({k for k, _ in counters})
    layers = [layer(probe) for probe in PROBES]
    for k in range(min(snaps), max(snaps) + 1):
        cs = [counters.get((k, probe)) for probe in PROBES]
        extend_rows(crow, {
            "snapshot_time": [h.snap_time(k)] * len(PROBES), "interval_s": [SNAP_S] * len(PROBES),
            "kernel_release": [RELEASE] * len(PROBES), "vendor": ["mlx5"] * len(PROBES),
            "probe_set": ["rdma"] * len(PROBES), "probe": PROBES, "layer": layers, "live": [True] * len(PROBES),
            "invocations": [c[0] if c else 0 for c in cs], "failures": [c[1] if c else 0 for c in cs],
            "errno_counts": [[{"errno": e, "count": n} for e, n in sorted(c[2].items())] if c else [] for c in cs],
            "lost_records": [0] * len(PROBES)})
    cf = frame(crow, errno_counts=ERRNO_COUNTS)
    cf = cf.with_columns(date=pl.col("snapshot_time").dt.date().cast(pl.String))
    for (date,), part in cf.group_by("date"):
        _write(part.drop("date"), out, "counters", date, h.name, "part-0.parquet")
    if resend:
        # the second copy of 23:45-00:15's snapshots, filed under the date it arrived
        date = _date(RESENT_AT)
        again = cf.filter(pl.col("snapshot_time").is_between(RESENT_FROM, RESENT_TO, closed="left")).drop("date")
        _write(again, out, "counters", date, h.name, "part-resent-0.parquet")
        ks = [k for k in range(min(snaps), max(snaps) + 1) if RESENT_FROM <= h.snap_time(k) < RESENT_TO]
        sent_ids = [rid for rid, snap_k in h.record_snapshots.items() if snap_k in ks]
        if ev is not None and sent_ids:
            _write(ev.filter(pl.col("trace_id").is_in(sent_ids)), out, "events", date, h.name, "part-resent-0.parquet")

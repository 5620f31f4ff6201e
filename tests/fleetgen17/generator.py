"""fleetgen17: a seventeenth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings).

The fleet: racks of 8 hosts (`fg17-r<RR>-h<H>`). All racks but the last two are mlx5 RoCE hosts
on 6.8.0-60-generic whose tracer probes every function of the chains below (statics included: the
kernel keeps them out of line); their NICs run firmware 28.39.2048 (racks 1 and 3) or 28.41.1000
(the others). The last two racks are bnxt_re hosts on 6.8.0-1021-oem, a build that inlines the
core's static functions (uverbs_request/uverbs_response, the two static create_qp, modify_qp,
_ib_modify_qp, rdma_fill_sgid_attr, ib_resolve_eth_dmac, ib_modify_qp_with_udata): those frames
never show there, nor do their counters, so the same operation's chain has gaps
(bnxt_re_create_qp sits two levels under the handler, mlx5_ib_create_qp four). One job slot a
host: jobs of 10-25 minutes of 4 ranks, 1-2 minutes apart. A rank reads the 4 GID slots of its
port, allocates a PD, registers a buffer, creates 6 RC QPs (one per peer; each
RESET->INIT->RTR->RTS), re-registers its buffer every 3-5 minutes (register the new, deregister
the old) and at the end deregisters it and exits 0. A rank that fails fatally ends its job (the
launcher kills the others: no teardown).

The daemon (`tracer run -i 60s`): 60 s snapshots at a per-host phase, every call counted per probe;
a tree is emitted when any probe in it fails, the first 3 of a signature per snapshot as records
and the rest in the third's repeat_count; good trees only in capture windows (the first 60 s of
every 5 minutes from the tracer's start), timed there; outside them a failure's frames carry the
tick its root returned in, latency null.

Not faults (nothing may alert on them):
  - a rolling maintenance reboots 8 hosts of each mlx5 firmware between 20 % and 80 % of the
    window (3 of the 28.39 ones twice): the running job is gone without a trace, 4 minutes with
    nothing counted, a new boot (monotonic clock restarts), the tracer starts with a capture
    window and the next job starts inside it. The first reg_mr after a boot runs the lazy UMR
    resource init (mlx5r_umr_resource_init: "no-op after the first call") with its firmware
    commands (mlx5_cmd_exec) below it; on 28.41 it succeeds.

Routine families (truth expected_error; the process goes on):
  gid_empty_slot       query_gid ENODATA at rdma_get_gid_attr ("-ENODATA empty GID slot"): slot 3
                       of every port is empty, every rank of every host reads it and goes on.
  rdmacg_eagain_retried  create_qp EAGAIN at ib_rdmacg_try_charge (the rdma cgroup's hca_object
                       limit): 12 % of create_qp on every host, the library retries 20-80 ms later
                       and the retry succeeds (a retry can fail again, then a third succeeds).
                       Drift: on ONE mlx5 host a configuration push halves its cgroup limit at
                       50 % of the window and the share goes to 28 % (up to 3 retries, every one
                       of them ending in success). Decision: no alert. No job fails, nothing the
                       host's owner can act on is broken; an SRE wants the rate in the host's
                       report, not a page (the family is `host_configuration`: its rate is how
                       the host is set up). An alert there is a false alert.

Root causes (truth root_cause; ROOT_CAUSES: origin probe, errno, operation):
  umr_init_cold_timeout  firmware 28.39 does not answer the UMR resources' first firmware command
                       after a reset in time: the first reg_mr after each boot of a rebooted 28.39
                       host fails ETIMEDOUT at mlx5_cmd_exec under mlx5r_umr_resource_init (the
                       errno_conventions' command timeout), up through mlx5_ib_reg_user_mr and
                       the handler; that rank dies, its job with it; the relaunched job's first
                       reg_mr runs the init again and it succeeds. One failure per boot (11 in
                       all on 8 hosts at the default shape). Decision: no host alert required (the next job passes,
                       the host is healthy now: the cluster names the firmware); an alert with
                       ETIMEDOUT on those hosts is acceptable.
  bnxt_qp_limit_einval   one bnxt_re host's replacement NIC came with a firmware profile of a few
                       QPs: from 30 % of the window every rank's second create_qp fails EINVAL at
                       bnxt_re_create_qp ("bnxt_re_test_qp_limits fails; max QPs exceeded"), the
                       job is killed and relaunched 1-3 s later: a crash loop, a storm of
                       identical failures (most in repeat_count, exact) whose bursts overflow
                       the ring: that snapshot's sampled good traces are lost (lost_records).
                       Decision: that host MUST alert with EINVAL.

Truth per trace: root_cause for the fatal failures, expected_error for the routine ones, the
bifurcation probe and errno = the origin (the deepest failing frame, whose errno reaches the root)
and its layer; held_out on a tenth of the good traces. The summary (`<out>/fleetgen17.json` and
the return value) names `alert_hosts` (acceptable: host -> errnos), `required_alert_hosts` (must
alert) and the hosts of each shape.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import COUNTERS, EVENTS, TRUTH, write_partition

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
NS = 1_000_000_000
SNAP_S = 60
K_RECORDS = 3
STORM = 20  # failures of one signature in a snapshot beyond which the ring overflows
WINDOW_EVERY_S, WINDOW_LEN_S = 300, 60
QPS = 6  # RC QPs a rank creates (one per peer rank of its ring)
U, C, D = "uverbs", "core", "driver"
ERRNO = {"ENODATA": 61, "EAGAIN": 11, "ETIMEDOUT": 110, "EINVAL": 22}
RELEASE = {"mlx5": "6.8.0-60-generic", "bnxt_re": "6.8.0-1021-oem"}

# label -> (origin probe, errno, operation)
ROOT_CAUSES = {
    "umr_init_cold_timeout": ("mlx5_cmd_exec", "ETIMEDOUT", "reg_mr"),
    "bnxt_qp_limit_einval": ("bnxt_re_create_qp", "EINVAL", "create_qp"),
}
ROUTINE = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "query_gid"),
    "rdmacg_eagain_retried": ("ib_rdmacg_try_charge", "EAGAIN", "create_qp"),
}

# The call trees, (depth, function, layer) in entry order, per operation and vendor. mlx5's are
# the full chains; bnxt_re's lack the static frames its kernel build inlines (the gaps).
_GID = [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", U), (1, "rdma_get_gid_attr", C),
        (1, "rdma_read_gid_attr_ndev_rcu", C), (1, "rdma_put_gid_attr", C)]


def _modify(vendor: str, transition: str) -> list[tuple[int, str, str]]:
    rtr = transition == "INIT->RTR"
    if vendor == "mlx5":
        return [(0, "ib_uverbs_modify_qp", U), (1, "modify_qp", U), (2, "rdma_lookup_get_uobject", C),
                (2, "ib_modify_qp_with_udata", C), (3, "_ib_modify_qp", C),
                *([(4, "rdma_fill_sgid_attr", C), (5, "rdma_get_gid_attr", C), (4, "ib_resolve_eth_dmac", C),
                   (5, "rdma_addr_find_l2_eth_by_grh", C)] if rtr else []),
                (4, "ib_security_modify_qp", C), (5, "mlx5_ib_modify_qp", D), (6, "__mlx5_ib_modify_qp", D),
                (7, "mlx5_core_qp_modify", D), (8, "mlx5_cmd_exec", D), (2, "rdma_lookup_put_uobject", C)]
    return [(0, "ib_uverbs_modify_qp", U), (1, "rdma_lookup_get_uobject", C),
            *([(1, "rdma_get_gid_attr", C), (1, "rdma_addr_find_l2_eth_by_grh", C)] if rtr else []),
            (1, "ib_security_modify_qp", C), (2, "bnxt_re_modify_qp", D), (3, "bnxt_qplib_modify_qp", D),
            (1, "rdma_lookup_put_uobject", C)]


TREES: dict[tuple[str, str], list[tuple[int, str, str]]] = {
    ("query_gid", "mlx5"): _GID, ("query_gid", "bnxt_re"): _GID,
    ("alloc_pd", "mlx5"): [(0, "ib_uverbs_alloc_pd", U), (1, "uverbs_request", U), (1, "rdma_alloc_begin_uobject", C),
                           (2, "ib_rdmacg_try_charge", C), (1, "mlx5_ib_alloc_pd", D), (2, "mlx5_cmd_exec", D),
                           (1, "rdma_restrack_add", C), (1, "uverbs_response", U)],
    ("alloc_pd", "bnxt_re"): [(0, "ib_uverbs_alloc_pd", U), (1, "rdma_alloc_begin_uobject", C),
                              (2, "ib_rdmacg_try_charge", C), (1, "bnxt_re_alloc_pd", D), (2, "bnxt_qplib_alloc_pd", D),
                              (1, "rdma_restrack_add", C)],
    ("create_qp", "mlx5"): [(0, "ib_uverbs_create_qp", U), (1, "create_qp", U), (2, "rdma_alloc_begin_uobject", C),
                            (3, "ib_rdmacg_try_charge", C), (2, "rdma_lookup_get_uobject", C), (2, "ib_create_qp_user", C),
                            (3, "create_qp", C), (4, "mlx5_ib_create_qp", D), (5, "create_user_qp", D),
                            (6, "ib_umem_get", C), (6, "mlx5_qpc_create_qp", D), (7, "mlx5_cmd_exec", D),
                            (3, "ib_create_qp_security", C), (3, "rdma_restrack_add", C), (2, "ib_qp_usecnt_inc", C),
                            (2, "rdma_lookup_put_uobject", C), (2, "uverbs_response", U)],
    ("create_qp", "bnxt_re"): [(0, "ib_uverbs_create_qp", U), (1, "rdma_alloc_begin_uobject", C),
                               (2, "ib_rdmacg_try_charge", C), (1, "rdma_lookup_get_uobject", C), (1, "ib_create_qp_user", C),
                               (2, "bnxt_re_create_qp", D), (3, "ib_umem_get", C), (3, "bnxt_qplib_create_qp", D),
                               (2, "ib_create_qp_security", C), (2, "rdma_restrack_add", C), (1, "ib_qp_usecnt_inc", C),
                               (1, "rdma_lookup_put_uobject", C)],
    ("reg_mr", "mlx5"): [(0, "ib_uverbs_reg_mr", U), (1, "uverbs_request", U), (1, "rdma_alloc_begin_uobject", C),
                         (2, "ib_rdmacg_try_charge", C), (1, "rdma_lookup_get_uobject", C), (1, "mlx5_ib_reg_user_mr", D),
                         (2, "mlx5r_umr_resource_init", D), (2, "ib_umem_get", C), (3, "pin_user_pages_fast", C),
                         (3, "sg_alloc_append_table_from_pages", C), (2, "create_real_mr", D), (3, "alloc_cacheable_mr", D),
                         (3, "mlx5r_umr_update_mr_pas", D), (1, "rdma_restrack_add", C), (1, "rdma_lookup_put_uobject", C),
                         (1, "uverbs_response", U)],
    ("reg_mr", "bnxt_re"): [(0, "ib_uverbs_reg_mr", U), (1, "rdma_alloc_begin_uobject", C), (2, "ib_rdmacg_try_charge", C),
                            (1, "rdma_lookup_get_uobject", C), (1, "bnxt_re_reg_user_mr", D), (2, "ib_umem_get", C),
                            (3, "pin_user_pages_fast", C), (3, "sg_alloc_append_table_from_pages", C),
                            (2, "__bnxt_re_user_reg_mr", D), (1, "rdma_restrack_add", C), (1, "rdma_lookup_put_uobject", C)],
    ("dereg_mr", "mlx5"): [(0, "ib_uverbs_dereg_mr", U), (1, "__uobj_perform_destroy", C), (2, "rdma_lookup_get_uobject", C),
                           (2, "ib_dereg_mr_user", C), (3, "mlx5_ib_dereg_mr", D), (2, "ib_rdmacg_uncharge", C),
                           (2, "rdma_lookup_put_uobject", C)],
    ("dereg_mr", "bnxt_re"): [(0, "ib_uverbs_dereg_mr", U), (1, "__uobj_perform_destroy", C),
                              (2, "rdma_lookup_get_uobject", C), (2, "ib_dereg_mr_user", C), (3, "bnxt_re_dereg_mr", D),
                              (4, "bnxt_qplib_free_mrw", D), (2, "ib_rdmacg_uncharge", C), (2, "rdma_lookup_put_uobject", C)],
}
for _v in ("mlx5", "bnxt_re"):
    for _t in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
        TREES[(f"modify_qp:{_t}", _v)] = _modify(_v, _t)
# the first reg_mr after a boot: the lazy UMR init's firmware commands (its CQ, its QP) under it
_COLD = list(TREES[("reg_mr", "mlx5")])
_i = next(i for i, f in enumerate(_COLD) if f[1] == "mlx5r_umr_resource_init")
TREES[("reg_mr:cold", "mlx5")] = _COLD[:_i + 1] + [(3, "mlx5_cmd_exec", D), (3, "mlx5_cmd_exec", D)] + _COLD[_i + 1:]


def probes_of(vendor: str) -> list[str]:
    """The probe set of a vendor's hosts (every function its trees show, in first-seen order)."""
    seen: dict[str, None] = {}
    for (_, v), tree in TREES.items():
        if v == vendor:
            seen.update((fn, None) for _, fn, _ in tree)
    return list(seen)


LAYER = {fn: layer for tree in TREES.values() for _, fn, layer in tree}


def failing(tree: list[tuple[int, str, str]], origin: int, errno: str) -> list[tuple[int, str, str, str | None]]:
    """The frames of `tree` a failure at frame `origin` runs: everything entered before it, the
    origin (its descendants not reached) and no later frame; the origin's ancestors return its errno."""
    depth = tree[origin][0]
    out: list[tuple[int, str, str, str | None]] = []
    ancestors, d = set(), depth
    for i in range(origin - 1, -1, -1):
        if tree[i][0] < d:
            ancestors.add(i)
            d = tree[i][0]
    for i, (dep, fn, layer) in enumerate(tree[:origin + 1]):
        out.append((dep, fn, layer, errno if i == origin or i in ancestors else None))
    return out


class Host:
    """What one host's tracer writes: event rows, per-call counts, truth rows."""

    def __init__(self, name: str, vendor: str, fw: str, rng: np.random.Generator, end_s: float):
        self.name, self.vendor, self.fw, self.rng, self.end_s = name, vendor, fw, rng, end_s
        self.release = RELEASE[vendor]
        self.phase = float(rng.uniform(0, SNAP_S))
        self.boots: list[tuple[float, float]] = [(-3600.0 * 24 * float(rng.uniform(2, 30)), 0.0)]  # (boot s, tracer start s)
        self.down: list[tuple[float, float]] = []
        self.rows: dict[str, list] = defaultdict(list)
        self.truth: list[dict] = []
        self.calls: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])  # (snapshot, probe) -> calls, failures
        self.errnos: dict[tuple[int, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.pending: dict[tuple[int, tuple], list] = defaultdict(list)  # (snapshot, signature) -> failure trees
        self.goods: dict[int, list] = defaultdict(list)  # snapshot -> good trees sampled in a capture window
        self.cold_pending = False  # this boot's UMR init has not run yet (28.39: it will time out)
        self.lost: dict[int, int] = defaultdict(int)
        self.n = 0

    def snapshot(self, t: float) -> int:
        return int((t - self.phase) // SNAP_S)

    def in_window(self, t: float) -> bool:
        start = max(s for _, s in self.boots if s <= t) if any(s <= t for _, s in self.boots) else 0.0
        return (t - start) % WINDOW_EVERY_S < WINDOW_LEN_S

    def boot_ns(self, t: float) -> int:
        """The monotonic clock at wall time t (seconds since the current boot)."""
        boot = max(b for b, _ in self.boots if b <= t)
        return int((t - boot) * NS)

    def call(self, t: float, op: str, pid: int, job: str, tree_key: str, *, origin: str | None = None,
             errno: str | None = None, cause: str | None = None, routine: bool = False) -> None:
        tree = TREES[(tree_key, self.vendor)]
        if origin is None:
            frames = [(d, fn, ly, None) for d, fn, ly in tree]
        else:
            # the first frame of that name: the cold init's first firmware command is the one that times out
            idx = next(i for i, f in enumerate(tree) if f[1] == origin)
            frames = failing(tree, idx, errno)
        snap = self.snapshot(t)
        for _, fn, _, e in frames:
            c = self.calls[(snap, fn)]
            c[0] += 1
            if e:
                c[1] += 1
                self.errnos[(snap, fn)][e] += 1
        transition = tree_key.split(":", 1)[1] if tree_key.startswith("modify_qp:") else None
        trace = (t, op, pid, job, frames, transition, cause, routine, errno, origin)
        if errno is None:
            if self.in_window(t):
                self.goods[snap].append(trace)
            return
        sig = (op, tuple((f[1], f[3]) for f in frames))
        self.pending[(snap, sig)].append(trace)

    def flush(self) -> None:
        """Failure trees: the first K_RECORDS of a signature per snapshot as records, the rest in
        the last record's repeat_count (counted in the kernel, exact). In a storm (a signature
        failing more than STORM times in a snapshot) the failure records' bursts overflow the
        ring: the snapshot's good-trace samples are dropped and counted in lost_records (the
        counters stay exact)."""
        storms = set()
        for (snap, _), traces in sorted(self.pending.items(), key=lambda kv: kv[1][0][0]):
            head = traces[:K_RECORDS]
            for i, tr in enumerate(head):
                repeat = len(traces) - K_RECORDS + 1 if i == K_RECORDS - 1 and len(traces) > K_RECORDS else None
                self._emit(tr, timed=self.in_window(tr[0]), repeat=repeat)
            if len(traces) > STORM:
                storms.add(snap)
        for snap, goods in sorted(self.goods.items()):
            if snap in storms:
                self.lost[snap] += sum(len(tr[4]) for tr in goods)
                continue
            for tr in goods:
                self._emit(tr, timed=True, repeat=None)

    def _emit(self, trace: tuple, *, timed: bool, repeat: int | None) -> None:
        t, op, pid, job, frames, transition, cause, routine, errno, origin = trace
        self.n += 1
        tid = f"{self.name}-{self.n:07d}"
        base = self.boot_ns(t)
        boot = sum(b <= t for b, _ in self.boots)  # which boot of the host the call ran in
        # entry times 3 us apart, each frame returning after its subtree
        entry = [base + i * 3000 + int(self.rng.integers(0, 800)) for i in range(len(frames))]
        exit_ = list(entry)
        for i in range(len(frames) - 1, -1, -1):
            j = i + 1
            end = entry[i] + 1500
            while j < len(frames) and frames[j][0] > frames[i][0]:
                end = max(end, exit_[j] + 400)
                j += 1
            exit_[i] = end
        root_err = frames[0][3]
        wall = START + timedelta(seconds=t)
        end_wall = wall + timedelta(microseconds=(exit_[0] - entry[0]) // 1000)
        for seq, (depth, fn, layer, e) in enumerate(frames):
            r = self.rows
            r["trace_id"].append(tid)
            r["seq"].append(seq)
            r["ts_ns"].append(entry[seq] if timed else base)
            r["pid"].append(pid)
            r["tid"].append(pid)
            r["ppid"].append(1000 + pid % 97)
            r["comm"].append("python3")
            r["probe"].append(fn)
            r["layer"].append(layer)
            r["depth"].append(depth)
            r["ret"].append(-ERRNO[e] if e else 0)
            r["errno"].append(e)
            r["latency_ns"].append(exit_[seq] - entry[seq] if timed else None)
            r["path"].append(None)
            r["arg"].append(transition if seq == 0 else None)
            r["path2"].append(None)
            r["output"].append(None)
            r["kind"].append("failure" if root_err else "good")
            r["command"].append(op)
            r["exit_status"].append(-ERRNO[root_err] if root_err else 0)
            r["start_time"].append(wall if timed else end_wall)
            r["end_time"].append(end_wall)
            r["host"].append(self.name)
            r["kernel_release"].append(self.release)
            r["lost_events"].append(0)
            r["job_id"].append(job)
            r["metadata"].append([{"key": "nic_fw", "value": self.fw}, {"key": "boot", "value": str(boot)}])
            r["repeat_count"].append(repeat)
        failed = bool(root_err)
        self.truth.append({
            "trace_id": tid, "host": self.name, "kind": "failure" if failed else "good",
            "root_cause": cause, "bifurcation_probe": origin if failed else None,
            "bifurcation_errno": errno if failed else None,
            "origin_layer": LAYER[origin] if failed else None, "expected_error": routine,
            "held_out": (not failed) and bool(self.rng.random() < 0.1)})

    def counters(self) -> pa.Table:
        probes = probes_of(self.vendor)
        first, last = self.snapshot(0.0) + 1, self.snapshot(self.end_s)
        rows = defaultdict(list)
        for snap in range(first, last + 1):
            t = self.phase + (snap + 1) * SNAP_S
            if any(a <= t < b for a, b in self.down):
                continue  # the host was down (or its tracer not started yet): no snapshot
            for probe in probes:
                calls, fails = self.calls.get((snap, probe), (0, 0))
                errs = self.errnos.get((snap, probe), {})
                rows["host"].append(self.name)
                rows["snapshot_time"].append(START + timedelta(seconds=t))
                rows["interval_s"].append(float(SNAP_S))
                rows["kernel_release"].append(self.release)
                rows["vendor"].append(self.vendor)
                rows["probe_set"].append("rdma")
                rows["probe"].append(probe)
                rows["layer"].append(LAYER[probe])
                rows["live"].append(True)
                rows["invocations"].append(calls)
                rows["failures"].append(fails)
                rows["errno_counts"].append([{"errno": e, "count": n} for e, n in sorted(errs.items())] or None)
                rows["lost_records"].append(self.lost.get(snap, 0))
        return pa.Table.from_pydict(dict(rows), schema=COUNTERS)


def _run_rank(h: Host, t: float, pid: int, job: str, *, qp_limit: bool, drift: bool, cold: bool, until: float,
              teardown: bool) -> float | None:
    """One rank from t to `until` (its teardown there when `teardown`: a reboot takes a rank
    without one); returns the time it died of a fault (None: it ran to its end)."""
    rng = h.rng
    for slot in range(4):
        t += 0.002
        if slot == 3:
            h.call(t, "query_gid", pid, job, "query_gid", origin="rdma_get_gid_attr", errno="ENODATA",
                   cause="gid_empty_slot", routine=True)
        else:
            h.call(t, "query_gid", pid, job, "query_gid")
    t += 0.01
    h.call(t, "alloc_pd", pid, job, "alloc_pd")
    t += 0.02
    if cold:
        if h.cold_pending:
            h.cold_pending = False
            h.call(t, "reg_mr", pid, job, "reg_mr:cold", origin="mlx5_cmd_exec", errno="ETIMEDOUT",
                   cause="umr_init_cold_timeout")
            return t
        h.call(t, "reg_mr", pid, job, "reg_mr:cold")
    else:
        h.call(t, "reg_mr", pid, job, "reg_mr")
    share = 0.28 if drift and t > h.end_s / 2 else 0.12
    for qp in range(QPS):
        t += 0.01
        if qp_limit and qp == 1:
            h.call(t, "create_qp", pid, job, "create_qp", origin="bnxt_re_create_qp", errno="EINVAL",
                   cause="bnxt_qp_limit_einval")
            return t
        for _ in range(3):
            if rng.random() >= share:
                break
            h.call(t, "create_qp", pid, job, "create_qp", origin="ib_rdmacg_try_charge", errno="EAGAIN",
                   cause="rdmacg_eagain_retried", routine=True)
            t += float(rng.uniform(0.02, 0.08))
        h.call(t, "create_qp", pid, job, "create_qp")
        for tr in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
            t += 0.003
            h.call(t, "modify_qp", pid, job, f"modify_qp:{tr}")
    while t + 300 < until - 1:
        t += float(rng.uniform(180, 300))
        h.call(t, "reg_mr", pid, job, "reg_mr")
        h.call(t + 0.004, "dereg_mr", pid, job, "dereg_mr")
    if teardown:
        h.call(max(t + 0.01, until - 0.5), "dereg_mr", pid, job, "dereg_mr")
    return None


def generate(out_dir: str | os.PathLike, hosts: int = 48, hours: float = 2.0, seed: int = 17) -> dict:
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    end_s = hours * 3600.0
    racks = max(3, (hosts + 7) // 8)
    names = [f"fg17-r{i // 8:02d}-h{i % 8}" for i in range(hosts)]
    bnxt_racks = {racks - 1, racks - 2}
    fleet: list[Host] = []
    for i, name in enumerate(names):
        rack = i // 8
        vendor = "bnxt_re" if rack in bnxt_racks else "mlx5"
        fw = ("28.39.2048" if rack in (1, 3) else "28.41.1000") if vendor == "mlx5" else "230.0.155"
        fleet.append(Host(name, vendor, fw, np.random.default_rng([seed, i]), end_s))
    mlx = [h for h in fleet if h.vendor == "mlx5"]
    old = [h for h in mlx if h.fw == "28.39.2048"]
    new = [h for h in mlx if h.fw != "28.39.2048"]
    rebooted = list(rng.choice(old, size=min(8, len(old)), replace=False)) + \
        list(rng.choice(new, size=min(8, len(new)), replace=False))
    twice = set(h.name for h in rebooted[:3])
    for h in rebooted:
        n = 2 if h.name in twice else 1
        times = sorted(float(x) for x in rng.uniform(0.2 * end_s, 0.8 * end_s, size=n))
        if n == 2 and times[1] - times[0] < 900:
            times[1] = min(times[0] + 900, end_s - 600)
        for down in times:
            h.down.append((down, down + 240))
            h.boots.append((down + 210, down + 240))
    quiet = [h for h in mlx if h not in rebooted and h.fw != "28.39.2048"]
    drift_host = quiet[0]
    qp_host = next(h for h in fleet if h.vendor == "bnxt_re" and h.name.endswith("-h3"))

    pid0 = 4000
    date = START.strftime("%Y-%m-%d")
    for h in fleet:
        cold_next = False  # the next job's first reg_mr runs the UMR init (first after a boot)
        t = float(h.rng.uniform(0, 120))
        ended = t  # when the slot's previous job ended
        while t < end_s - 60:
            # a reboot between two jobs (or one still down at t): the next job starts in the new
            # boot's first capture window, and its first reg_mr runs the UMR init
            gap = next(((a, b) for a, b in h.down if ended <= a < t + 20), None)
            if gap is not None:
                t = max(t, gap[1] + 20)
                cold_next, h.cold_pending = True, h.fw == "28.39.2048"
            nxt = next(((a, b) for a, b in sorted(h.down) if a > t), None)
            until = min(t + float(h.rng.uniform(600, 1500)), end_s - 5)
            cut = nxt is not None and nxt[0] < until
            if cut:
                until = nxt[0]  # the reboot takes the job with it, without a trace
            qp_limit = h is qp_host and t > 0.3 * end_s
            was_pending, died = h.cold_pending, None
            for rank in range(4):
                start = t + 0.2 * rank
                if died is not None and start > died:
                    break  # the launcher killed the job before this rank started
                pid0 += 1
                d = _run_rank(h, start, pid0, f"{h.name}-job{pid0 - rank}", qp_limit=qp_limit,
                              drift=h is drift_host, cold=cold_next and rank == 0, until=until, teardown=not cut)
                if d is not None:
                    died = d if died is None else min(died, d)
            cold_next, ended = False, until if died is None else died
            if died is not None:
                # a cold-init timeout leaves the UMR resources uncreated: the relaunch runs the init again
                cold_next = was_pending and not h.cold_pending
                t = died + (float(h.rng.uniform(1, 3)) if qp_limit else 60.0)
            elif cut:
                t = nxt[1] + 20  # the first job of the new boot starts in the tracer's first window
                cold_next = True
                h.cold_pending = h.fw == "28.39.2048"
            else:
                t = until + float(h.rng.uniform(60, 120))
        h.flush()
        # written host by host, its rows dropped: the generator's memory is one host's, not the fleet's
        write_partition(pa.Table.from_pydict(dict(h.rows), schema=EVENTS), out, "events", date, h.name, "part-0.parquet")
        write_partition(h.counters(), out, "counters", date, h.name, "part-0.parquet")
        write_partition(pa.Table.from_pylist(h.truth, schema=TRUTH), out, "truth", date, h.name, "part-0.parquet")
        h.rows, h.truth, h.calls, h.errnos, h.pending, h.goods = {}, [], {}, {}, {}, {}

    cold_hosts = sorted(h.name for h in rebooted if h.fw == "28.39.2048")
    summary = {
        "hosts": hosts, "hours": hours, "seed": seed,
        "roles": {h.name: [r for r, on in (("bnxt_re_gapped", h.vendor == "bnxt_re"), ("rebooted", h in rebooted),
                                            ("umr_cold_fw", h.name in cold_hosts), ("cgroup_drift", h is drift_host),
                                            ("qp_limit", h is qp_host)) if on] for h in fleet},
        "alert_hosts": {qp_host.name: ["EINVAL"], **{n: ["ETIMEDOUT"] for n in cold_hosts}},
        "required_alert_hosts": {qp_host.name: ["EINVAL"]},
        "qp_limit_host": qp_host.name, "drift_host": drift_host.name, "cold_hosts": cold_hosts,
        "rebooted_hosts": sorted(h.name for h in rebooted), "rebooted_twice": sorted(twice),
        # host -> [down, tracer up again] per reboot, ISO times: nothing may be counted or traced between
        "reboots": {h.name: [[(START + timedelta(seconds=x)).isoformat() for x in ab] for ab in h.down] for h in rebooted},
        "bnxt_hosts": sorted(h.name for h in fleet if h.vendor == "bnxt_re"),
    }
    (out / "fleetgen17.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

"""fleetgen22: a twenty-second fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings only), aimed at what the
twenty-one before it leave out: an InfiniBand (not RoCE) fabric whose tenants are separated by
partition keys under an SELinux IB pkey policy, a fault visible only through the policy version in
the metadata and only to one tenant, a fleet-wide fault confined in time to the top of every hour,
and a routine "try again" family that one host's misconfigured cgroup turns fatal.

The fleet: mlx5 InfiniBand HCAs (link layer IB: every QP has a security context, so modify_qp runs
ib_security_modify_qp, which calls the driver's modify_qp), racks of 8 (`fg22-r<RR>-h<H>`), all on
one RHEL 9.4 kernel with MLNX_OFED 24.07 (5.14.0-427.42.1.el9_4.x86_64). SELinux is enforcing
with IB pkey labelling; the policy package is in each trace's metadata (`selinux_policy`) only:
38.1.35-2 on most hosts, 38.1.45-1 on a quarter (host index mod 4 == 1, spread over every rack),
pushed by configuration management the day before. Two tenants alternate single-host jobs of 4
ranks (comm python3, one process a rank, 10-25 minutes, 1-3 minutes apart): "helix" in partition
0x8003 (pkey index 1) with rdma-core 50, "corvus" in the default partition (pkey index 0) with an
older container image (rdma-core 39). The tenant, pkey and image are in the metadata only.
A rank queries the device (helix: the extended query; corvus: the extended query, then the legacy
one), reads the 4 GID slots of its port (slot 3 empty), allocates a PD, registers two buffers,
creates a CQ, creates 2 RC QPs and moves each RESET->INIT->RTR->RTS; while it trains, every 4-6
minutes it rebuilds a communicator: registers a buffer, creates a QP and moves it to RTS. A rank
that fails fatally ends its job: the launcher kills the other ranks 0.5 s later (no error of
theirs) and the scheduler requeues the job 1-3 minutes later under the same job id (metadata
`requeue`; new pids), three times at most, then starts a new job.

The daemon (`tracer run rdma -i 60s`): 60 s snapshots at a per-host phase, a row for every probe in
every snapshot, every call counted; a tree emitted when any probe in it fails, the first 3 of a
signature per snapshot as records and the third carrying the rest in repeat_count; good trees only
when the root entered a capture window (the first 30 s of every 5 minutes at a per-host phase),
timed there; outside, a failure's frames all carry the 4 ms tick its root returned in, latency null.

Routine families (truth expected_error, root_cause = the family's name; the process goes on):
  gid_empty_slot       query_gid ENODATA at rdma_get_gid_attr ("-ENODATA: empty GID slot"): slot 3
                       of every port; every rank skips it.
  corvus_query_device_ex_einval  corvus's old provider leaves its extended query_device input
                       uncleared: EINVAL at mlx5_ib_query_device ("udata input not cleared"); the
                       library falls back to the legacy query_device and goes on. Every corvus rank
                       on every host; helix's extended queries succeed (the operation has good traces).
  pd_cgroup_eagain_retried  alloc_pd EAGAIN at ib_rdmacg_try_charge (the rdma cgroup's hca_object
                       limit, under rdma_alloc_begin_uobject): 10 % of attempts on every host; the
                       library waits 10-50 ms and retries (up to 5 attempts), and a retry passes.

Root causes (truth root_cause; ROOT_CAUSES: origin probe, errno, operation), with the reasons:
  selinux_pkey_denied  on the 38.1.45-1 hosts the new policy lost the label of partition 0x8003:
                       every helix RESET->INIT fails EACCES at ib_security_modify_qp (the LSM's
                       security_ib_pkey_access denies the pkey; the driver is never called), the
                       rank dies; its job crash-loops through its requeues. corvus's jobs on the
                       same hosts pass, and so do helix's on the other hosts; kernel, driver and
                       firmware are the same everywhere: the cause shows only in the metadata.
                       Decision: one cluster, which should name selinux_policy=38.1.45-1; an alert
                       naming EACCES (or a bad state) on those hosts is tolerated, none required.
  hourly_fw_busy_create_qp  a fleet-wide health exporter dumps the HCA's firmware registers at the
                       top of every hour; for 90 s the firmware answers CREATE_QP with RES_BUSY
                       (errno_conventions: -EBUSY at mlx5_cmd_exec under mlx5_qpc_create_qp; the
                       driver unwinds with destroy_qp, the core aborts the uobject) on 60 % of
                       calls; the library does not retry it, the rank dies. A few failures on
                       every host, at the same minute fleet-wide. Decision: a root cause (jobs die
                       of it), one cluster; no host alert may name it (every host alike, the cluster
                       is the page).
  host_cgroup_zero_alloc_pd  ONE host from 40 % of the window: a pod spec pushed there sets the rdma
                       cgroup's hca_object limit to 0: every alloc_pd fails EAGAIN at
                       ib_rdmacg_try_charge, the same probe, errno and operation as the routine
                       family, but all 5 attempts fail and the rank dies; every job there
                       crash-loops. Decision: a root cause on that host (its EAGAIN traces from the
                       onset are labelled so), and that host MUST alert (EAGAIN, or a persistent bad
                       state): routine elsewhere, fatal here.

Truth per trace: root_cause for the fatal failures (and the failed attempts before them on the
cgroup host), the family for the routine ones, the bifurcation probe and errno = the origin (the
deepest failing frame, whose errno reaches the root) and its layer; held_out on a tenth of the good
traces. `generate(out_dir, hosts, hours, seed) -> summary` writes events, counters,
counter_buckets and truth in the dataset layout and `<out_dir>/fleetgen22.json`:
`required_alert_hosts` (host -> errnos an alert must name), `alert_hosts` (host -> errnos an alert
may name), `roles` (new_policy, cgroup_zero), `cgroup_onset`, `busy_windows`, `routine` and
`causes` (label -> traces).
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa

from tracer.schema import (
    COUNTERS,
    EVENTS,
    TRUTH,
    metadata_list,
    write_counter_buckets,
    write_partition,
)

START = datetime(2026, 12, 3, 6, 40, tzinfo=UTC)
KERNEL = "5.14.0-427.42.1.el9_4.x86_64"
POLICIES = ("38.1.35-2", "38.1.45-1")
TENANTS = {"helix": {"pkey": "0x8003", "image": "ngc-rdma-core-50"},
           "corvus": {"pkey": "0x7fff", "image": "corvus-rdma-core-39"}}
ERRNO = {"ENODATA": 61, "EINVAL": 22, "EAGAIN": 11, "EACCES": 13, "EBUSY": 16}
SNAP_S = 60.0
CAPTURE_EVERY, CAPTURE_LEN = 300.0, 30.0
TICK_NS = 4_000_000
BUSY_S = 90.0  # the firmware dump at the top of every hour
CGROUP_ONSET = 0.40
PD_EAGAIN = 0.10  # the routine cgroup refusal, per attempt (a fifth attempt always passes there)

ROOT_CAUSES: dict[str, tuple[str, str, str]] = {
    "selinux_pkey_denied": ("ib_security_modify_qp", "EACCES", "modify_qp"),
    "hourly_fw_busy_create_qp": ("mlx5_cmd_exec", "EBUSY", "create_qp"),
    "host_cgroup_zero_alloc_pd": ("ib_rdmacg_try_charge", "EAGAIN", "alloc_pd"),
}
ROUTINE: dict[str, tuple[str, str, str]] = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "query_gid"),
    "corvus_query_device_ex_einval": ("mlx5_ib_query_device", "EINVAL", "query_device"),
    "pd_cgroup_eagain_retried": ("ib_rdmacg_try_charge", "EAGAIN", "alloc_pd"),
}

# (depth, function, layer, self time in us); a frame's errno is set by the variant builders below
_U, _C, _D = "uverbs", "core", "driver"
BASE: dict[str, list[tuple[int, str, str, float]]] = {
    "query_device_ex": [(0, "ib_uverbs_ex_query_device", _U, 4), (1, "mlx5_ib_query_device", _D, 25)],
    "query_device": [(0, "ib_uverbs_query_device", _U, 4), (1, "ib_uverbs_get_ucontext_file", _C, 1),
                     (1, "copy_query_dev_fields", _U, 3)],
    "query_gid": [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", _U, 4), (1, "rdma_get_gid_attr", _C, 2),
                  (1, "rdma_put_gid_attr", _C, 1)],
    "alloc_pd": [(0, "ib_uverbs_alloc_pd", _U, 5), (1, "uverbs_request", _U, 1), (1, "rdma_alloc_begin_uobject", _C, 3),
                 (2, "ib_rdmacg_try_charge", _C, 1), (1, "mlx5_ib_alloc_pd", _D, 5), (2, "mlx5_cmd_exec", _D, 60),
                 (1, "rdma_restrack_add", _C, 1), (1, "uverbs_response", _U, 2)],
    "reg_mr": [(0, "ib_uverbs_reg_mr", _U, 5), (1, "rdma_alloc_begin_uobject", _C, 3), (2, "ib_rdmacg_try_charge", _C, 1),
               (1, "rdma_lookup_get_uobject", _C, 1), (1, "mlx5_ib_reg_user_mr", _D, 8), (2, "ib_umem_get_peer", _C, 3),
               (3, "__ib_umem_get", _C, 40), (4, "pin_user_pages_fast", _C, 1800), (2, "create_real_mr", _D, 6),
               (3, "alloc_cacheable_mr", _D, 30), (1, "rdma_restrack_add", _C, 1),
               (1, "rdma_lookup_put_uobject", _C, 1), (1, "uverbs_response", _U, 2)],
    "create_cq": [(0, "ib_uverbs_create_cq", _U, 4), (1, "create_cq", _U, 4), (2, "rdma_alloc_begin_uobject", _C, 3),
                  (3, "ib_rdmacg_try_charge", _C, 1), (2, "mlx5_ib_create_cq", _D, 6), (3, "create_cq_user", _D, 5),
                  (4, "ib_umem_get", _C, 60), (4, "mlx5_ib_db_map_user", _D, 4), (3, "mlx5_comp_eqn_get", _D, 2),
                  (3, "mlx5_core_create_cq", _D, 250), (2, "rdma_restrack_add", _C, 1), (2, "uverbs_response", _U, 2)],
    "create_qp": [(0, "ib_uverbs_create_qp", _U, 4), (1, "create_qp", _U, 5), (2, "rdma_alloc_begin_uobject", _C, 3),
                  (3, "ib_rdmacg_try_charge", _C, 1), (2, "rdma_lookup_get_uobject", _C, 1),
                  (2, "ib_create_qp_user", _C, 4), (3, "mlx5_ib_create_qp", _D, 8), (4, "create_user_qp", _D, 5),
                  (5, "_create_user_qp", _D, 6), (6, "ib_umem_get", _C, 50), (6, "mlx5_ib_db_map_user", _D, 4),
                  (5, "mlx5_qpc_create_qp", _D, 5), (6, "mlx5_cmd_exec", _D, 380),
                  (3, "ib_create_qp_security", _C, 6), (3, "rdma_restrack_add", _C, 1),
                  (2, "ib_qp_usecnt_inc", _C, 1), (2, "rdma_lookup_put_uobject", _C, 1), (2, "uverbs_response", _U, 2)],
    "modify_qp": [(0, "ib_uverbs_modify_qp", _U, 4), (1, "modify_qp", _U, 4), (2, "rdma_lookup_get_uobject", _C, 1),
                  (2, "ib_modify_qp_with_udata", _C, 1), (3, "_ib_modify_qp", _C, 3),
                  (4, "ib_security_modify_qp", _C, 4), (5, "mlx5_ib_modify_qp", _D, 6),
                  (6, "ib_modify_qp_is_ok", _C, 1), (6, "__mlx5_ib_modify_qp", _D, 8),
                  (7, "mlx5_core_qp_modify", _D, 4), (8, "mlx5_cmd_exec", _D, 220),
                  (4, "rdma_counter_bind_qp_auto", _C, 1), (2, "rdma_lookup_put_uobject", _C, 1)],
}
ROOTS = {k: v[0][1] for k, v in BASE.items()}
COMMAND = {"query_device_ex": "query_device", "query_device": "query_device"}
Frame = tuple  # (depth, fn, layer, errno | None, self_us)


def _frames(kind: str, *, transition: str | None = None) -> list[Frame]:
    rows = BASE[kind]
    if kind == "modify_qp" and transition != "RESET->INIT":
        rows = [r for r in rows if r[1] != "rdma_counter_bind_qp_auto"]  # the auto bind runs on RESET->INIT only
    return [(d, fn, layer, None, us) for d, fn, layer, us in rows]


def _fail(kind: str, variant: str) -> list[Frame]:
    """The failing trees: the origin's errno up the chain to the root, the unwind after it."""
    if variant == "gid_empty":
        return [(0, ROOTS[kind], _U, "ENODATA", 3), (1, "rdma_get_gid_attr", _C, "ENODATA", 2)]
    if variant == "qdev_ex_einval":
        return [(0, ROOTS[kind], _U, "EINVAL", 3), (1, "mlx5_ib_query_device", _D, "EINVAL", 6)]
    if variant == "pd_eagain":
        return [(0, "ib_uverbs_alloc_pd", _U, "EAGAIN", 3), (1, "uverbs_request", _U, None, 1),
                (1, "rdma_alloc_begin_uobject", _C, "EAGAIN", 2), (2, "ib_rdmacg_try_charge", _C, "EAGAIN", 1)]
    if variant == "qp_busy":
        return [(0, "ib_uverbs_create_qp", _U, "EBUSY", 4), (1, "create_qp", _U, "EBUSY", 5),
                (2, "rdma_alloc_begin_uobject", _C, None, 3), (3, "ib_rdmacg_try_charge", _C, None, 1),
                (2, "rdma_lookup_get_uobject", _C, None, 1), (2, "ib_create_qp_user", _C, "EBUSY", 4),
                (3, "mlx5_ib_create_qp", _D, "EBUSY", 8), (4, "create_user_qp", _D, "EBUSY", 5),
                (5, "_create_user_qp", _D, None, 6), (6, "ib_umem_get", _C, None, 50),
                (6, "mlx5_ib_db_map_user", _D, None, 4), (5, "mlx5_qpc_create_qp", _D, "EBUSY", 5),
                (6, "mlx5_cmd_exec", _D, "EBUSY", 900), (5, "destroy_qp", _D, None, 20),
                (2, "rdma_lookup_put_uobject", _C, None, 1), (2, "rdma_alloc_abort_uobject", _C, None, 2)]
    if variant == "pkey_eacces":
        return [(0, "ib_uverbs_modify_qp", _U, "EACCES", 4), (1, "modify_qp", _U, "EACCES", 4),
                (2, "rdma_lookup_get_uobject", _C, None, 1), (2, "ib_modify_qp_with_udata", _C, "EACCES", 1),
                (3, "_ib_modify_qp", _C, "EACCES", 3), (4, "ib_security_modify_qp", _C, "EACCES", 9),
                (2, "rdma_lookup_put_uobject", _C, None, 1)]
    raise ValueError(variant)


def _all_trees() -> dict[str, list[tuple[int, str, str, str | None]]]:
    out = {k: [(d, fn, layer, None) for d, fn, layer, _ in v] for k, v in BASE.items()}
    for kind, variant in (("query_gid", "gid_empty"), ("query_device_ex", "qdev_ex_einval"), ("alloc_pd", "pd_eagain"),
                          ("create_qp", "qp_busy"), ("modify_qp", "pkey_eacces")):
        out[f"{kind}:{variant}"] = [(d, fn, layer, e) for d, fn, layer, e, _ in _fail(kind, variant)]
    return out


TREES = _all_trees()


def _layout(frames: list[Frame], rng: random.Random) -> tuple[list[int], list[int]]:
    """Entry offsets and latencies (ns) of preorder frames: a frame's self time, then its
    children one after the other."""
    n = len(frames)
    offsets, lat = [0] * n, [0] * n
    kids = _children(tuple(f[0] for f in frames))
    uniform, randint = rng.uniform, rng.randint

    def place(i: int, at: int) -> int:
        self_ns = int(frames[i][4] * 1000 * uniform(0.7, 1.4))
        offsets[i] = at
        cur = at + self_ns // 2
        for j in kids[i]:
            cur = place(j, cur) + randint(200, 900)
        lat[i] = cur + self_ns // 2 - at
        return offsets[i] + lat[i]

    place(0, 0)
    return offsets, lat


@functools.cache
def _children(depths: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Each preorder frame's children: the frames one deeper before the next frame at its depth
    or above."""
    out = []
    for i, d in enumerate(depths):
        kids, j = [], i + 1
        while j < len(depths) and depths[j] > d:
            if depths[j] == d + 1:
                kids.append(j)
            j += 1
        out.append(tuple(kids))
    return tuple(out)


class _Host:
    def __init__(self, name: str, index: int, rng: random.Random, t_end: float, cgroup_zero: bool):
        self.name, self.index, self.rng, self.t_end = name, index, rng, t_end
        self.policy = POLICIES[1] if index % 4 == 1 else POLICIES[0]
        self.cgroup_zero = cgroup_zero
        self.snap_phase = rng.uniform(0, SNAP_S)
        self.cap_phase = rng.uniform(0, CAPTURE_EVERY)
        self.boot_s = rng.uniform(2, 30) * 86400.0  # seconds since boot at the window's start
        self.calls: list[dict] = []
        self.next_pid = rng.randint(3000, 9000)

    def captured(self, t: float) -> bool:
        return (t - self.cap_phase) % CAPTURE_EVERY < CAPTURE_LEN


def _busy(t: float) -> bool:
    """Inside the top-of-hour firmware dump (t: seconds since START)."""
    wall = START.timestamp() + t
    return wall % 3600.0 < BUSY_S


def _rank_calls(h: _Host, tenant: str, t: float, job_end: float, onset: float) -> tuple[list[dict], float | None]:
    """One rank's calls from t until the job ends or the rank dies: (calls, time of death)."""
    rng = h.rng
    out: list[dict] = []

    def call(kind: str, variant: str | None = None, label: str | None = None, transition: str | None = None,
             fatal: bool = False) -> None:
        nonlocal t
        frames = _fail(kind, variant) if variant else _frames(kind, transition=transition)
        out.append({"t": t, "kind": kind, "frames": frames, "label": label, "arg": transition, "fatal": fatal})
        t += 0.0005 + sum(f[4] for f in frames) / 1e6 + rng.uniform(0.001, 0.02)

    if tenant == "corvus":
        call("query_device_ex", "qdev_ex_einval", "corvus_query_device_ex_einval")
        call("query_device")
    else:
        call("query_device_ex")
    for slot in range(4):
        call("query_gid", "gid_empty" if slot == 3 else None, "gid_empty_slot" if slot == 3 else None)
    for attempt in range(5):
        zero = h.cgroup_zero and t >= onset
        if zero or (attempt < 4 and rng.random() < PD_EAGAIN):
            last = attempt == 4
            call("alloc_pd", "pd_eagain", "host_cgroup_zero_alloc_pd" if zero else "pd_cgroup_eagain_retried", fatal=last)
            if last:
                return out, out[-1]["t"]
            t += rng.uniform(0.010, 0.050)
        else:
            call("alloc_pd")
            break
    call("reg_mr")
    call("reg_mr")
    call("create_cq")

    def connect() -> bool:
        if _busy(t) and rng.random() < 0.6:
            call("create_qp", "qp_busy", "hourly_fw_busy_create_qp", fatal=True)
            return False
        call("create_qp")
        if tenant == "helix" and h.policy == POLICIES[1]:
            call("modify_qp", "pkey_eacces", "selinux_pkey_denied", transition="RESET->INIT", fatal=True)
            return False
        for tr in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
            call("modify_qp", transition=tr)
        return True

    for _ in range(2):
        if not connect():
            return out, out[-1]["t"]
    while True:
        t += rng.uniform(240, 360)
        if t >= job_end:
            return out, None
        call("reg_mr")
        if not connect():
            return out, out[-1]["t"]


def _simulate_host(h: _Host, onset: float) -> None:
    rng = h.rng
    t = rng.uniform(0, 180)
    job_no, requeue, tenant, job_id = 0, 0, None, None
    while t < h.t_end:
        if requeue == 0:
            job_no += 1
            tenant = rng.choice(("helix", "corvus"))
            job_id = f"{h.index * 1000 + job_no + 400000}"
            duration = rng.uniform(600, 1500)
        job_end = min(t + duration, h.t_end)
        ranks = []
        for rank in range(4):
            pid = h.next_pid
            h.next_pid += rng.randint(3, 40)
            calls, died = _rank_calls(h, tenant, t + rng.uniform(0, 2.0), job_end, onset)
            ranks.append((pid, rank, calls, died))
        deaths = [d for *_, d in ranks if d is not None]
        kill = min(deaths) + 0.5 if deaths else None
        meta = {"tenant": tenant, "pkey": TENANTS[tenant]["pkey"], "image": TENANTS[tenant]["image"],
                "selinux_policy": h.policy, "requeue": str(requeue), "ofed": "24.07-0.6.1.0"}
        launcher = h.next_pid
        h.next_pid += 1
        for pid, rank, calls, _died in ranks:
            for c in calls:
                # the launcher's kill ends every rank half a second after the first death
                if (kill is not None and c["t"] > kill) or c["t"] > h.t_end:
                    break
                c.update(pid=pid, ppid=launcher, job_id=job_id, metadata=dict(meta, rank=str(rank)))
                h.calls.append(c)
        if deaths:
            t = kill + rng.uniform(60, 180)
            requeue = requeue + 1 if requeue < 3 else 0
        else:
            t = job_end + rng.uniform(60, 180)
            requeue = 0


def _write_host(h: _Host, root: Path, start_ns: int, rng: random.Random, tally: dict) -> None:
    date = START.strftime("%Y-%m-%d")
    boot = f"b{h.index:03d}{rng.randint(100, 999)}"
    ev = defaultdict(list)
    truth = defaultdict(list)
    counters: dict[tuple[int, str], list] = {}
    probe_layer: dict[str, str] = {}
    for frames in TREES.values():
        for _, fn, layer, _ in frames:
            probe_layer.setdefault(fn, layer)
    seen_sig: Counter = Counter()
    pending: dict[tuple, dict] = {}
    calls = sorted(h.calls, key=lambda c: c["t"])
    records = []
    for c in calls:
        frames = c["frames"]
        offsets, lat = _layout(frames, rng)
        t_end = c["t"] + lat[0] / 1e9
        snap = max(0, math.ceil((t_end - h.snap_phase) / SNAP_S))
        for _d, fn, _layer, errno, _ in frames:
            cell = counters.get((snap, fn))
            if cell is None:
                cell = counters[(snap, fn)] = [0, 0, Counter()]
            cell[0] += 1
            if errno:
                cell[1] += 1
                cell[2][errno] += 1
        failed = any(f[3] for f in frames)
        timed = h.captured(c["t"])
        if not failed and not timed:
            continue
        if failed:
            sig = (snap, c["arg"], tuple((f[0], f[1], f[3]) for f in frames))
            seen_sig[sig] += 1
            n = seen_sig[sig]
            if n > 3:
                pending[sig]["repeat_count"] += 1
                continue
        rec = dict(c, offsets=offsets, lat=lat, timed=timed, t_end=t_end, repeat_count=1, failed=failed)
        if failed and seen_sig[sig] == 3:
            pending[sig] = rec
        records.append(rec)
    for seq, rec in enumerate(records, start=1):
        frames = rec["frames"]
        tid = rec["pid"]
        trace_id = f"{h.name}:{boot}:{tid}:{seq}"
        root_errno = frames[0][3]
        mono0 = int((h.boot_s + rec["t"]) * 1e9)
        tick_mono = (int((h.boot_s + rec["t_end"]) * 1e9) // TICK_NS) * TICK_NS
        if rec["timed"]:
            start = start_ns + int(rec["t"] * 1e9)
            end = start + rec["lat"][0]
        else:
            start = end = start_ns + (tick_mono - int(h.boot_s * 1e9))
        kind = "failure" if rec["failed"] else "good"
        n = len(frames)
        if len(rec["offsets"]) != n or len(rec["lat"]) != n:
            raise ValueError(f"{trace_id}: a time for every frame")
        ev["trace_id"] += [trace_id] * n
        ev["seq"] += range(n)
        ev["ts_ns"] += [mono0 + o for o in rec["offsets"]] if rec["timed"] else [tick_mono] * n
        ev["pid"] += [rec["pid"]] * n
        ev["tid"] += [tid] * n
        ev["ppid"] += [rec["ppid"]] * n
        ev["comm"] += ["python3"] * n
        ev["probe"] += [f[1] for f in frames]
        ev["layer"] += [f[2] for f in frames]
        ev["depth"] += [f[0] for f in frames]
        ev["ret"] += [-ERRNO[f[3]] if f[3] else 0 for f in frames]
        ev["errno"] += [f[3] for f in frames]
        ev["latency_ns"] += rec["lat"] if rec["timed"] else [None] * n
        ev["path"] += [None] * n
        ev["arg"] += [rec["arg"]] + [None] * (n - 1)
        ev["path2"] += [None] * n
        ev["output"] += [None] * n
        ev["kind"] += [kind] * n
        ev["command"] += [COMMAND.get(rec["kind"], rec["kind"])] * n
        ev["exit_status"] += [-ERRNO[root_errno] if root_errno else 0] * n
        ev["start_time"] += [start] * n
        ev["end_time"] += [end] * n
        ev["host"] += [h.name] * n
        ev["kernel_release"] += [KERNEL] * n
        ev["lost_events"] += [0] * n
        ev["job_id"] += [rec["job_id"]] * n
        ev["metadata"] += [metadata_list(rec["metadata"])] * n
        ev["repeat_count"] += [rec["repeat_count"] if rec["repeat_count"] > 1 else None] * n
        truth["trace_id"].append(trace_id)
        truth["host"].append(h.name)
        truth["kind"].append(kind)
        if rec["failed"]:
            origin = max((f for f in frames if f[3]), key=lambda f: f[0])
            label = rec["label"]
            truth["root_cause"].append(label)
            truth["bifurcation_probe"].append(origin[1])
            truth["bifurcation_errno"].append(origin[3])
            truth["origin_layer"].append(origin[2])
            truth["expected_error"].append(label in ROUTINE)
            truth["held_out"].append(False)
            tally["traces"][label] += 1
            tally["failures"][label] += rec["repeat_count"]
            tally["hosts"][label].add(h.name)
        else:
            for col in ("root_cause", "bifurcation_probe", "bifurcation_errno", "origin_layer"):
                truth[col].append(None)
            truth["expected_error"].append(False)
            truth["held_out"].append(rng.random() < 0.1)
    for name, table in (("events", pa.Table.from_pydict(dict(ev), schema=EVENTS)),
                        ("truth", pa.Table.from_pydict(dict(truth), schema=TRUTH))):
        write_partition(table, root, name, date, h.name, "part-0.parquet", durable=False)
    # counters: a row for every probe in every snapshot of the window
    last = math.ceil((h.t_end - h.snap_phase) / SNAP_S)
    cr = defaultdict(list)
    probes, layers = list(probe_layer), list(probe_layer.values())
    width = len(probes)
    no_calls: tuple = (0, 0, {})
    for snap in range(0, last + 1):
        when = start_ns + int((h.snap_phase + snap * SNAP_S) * 1e9)
        cells = [counters.get((snap, fn), no_calls) for fn in probes]
        cr["host"] += [h.name] * width
        cr["snapshot_time"] += [when] * width
        cr["interval_s"] += [SNAP_S] * width
        cr["kernel_release"] += [KERNEL] * width
        cr["vendor"] += ["mlx5"] * width
        cr["probe_set"] += ["rdma"] * width
        cr["probe"] += probes
        cr["layer"] += layers
        cr["live"] += [True] * width
        cr["invocations"] += [inv for inv, _, _ in cells]
        cr["failures"] += [fail for _, fail, _ in cells]
        cr["errno_counts"] += [[{"errno": e, "count": n} for e, n in sorted(errs.items())] for _, _, errs in cells]
        cr["lost_records"] += [0] * width
    ctable = pa.Table.from_pydict(dict(cr), schema=COUNTERS)
    path = write_partition(ctable, root, "counters", date, h.name, "part-0.parquet", durable=False)
    write_counter_buckets(path, ctable, durable=False)


def generate(out_dir: str | Path, hosts: int = 40, hours: float = 3.0, seed: int = 22, *,
             cgroup_zero: bool = True) -> dict:
    """The fleet into `out_dir`; `cgroup_zero=False`: the same fleet, draw for draw, except that the
    cgroup host's limit is never set to zero (a control)."""
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    t_end = hours * 3600.0
    onset = CGROUP_ONSET * t_end
    names = [f"fg22-r{i // 8 + 1:02d}-h{i % 8}" for i in range(hosts)]
    # the cgroup host: an old-policy host in the second rack (index mod 4 == 2)
    cg = 10 if hosts > 10 else 2
    start_ns = int(START.timestamp()) * 1_000_000_000
    tally = {"traces": Counter(), "failures": Counter(), "hosts": defaultdict(set)}
    new_policy = []
    for i, name in enumerate(names):
        h = _Host(name, i, random.Random(rng.random()), t_end, cgroup_zero=cgroup_zero and i == cg)
        if h.policy == POLICIES[1]:
            new_policy.append(name)
        _simulate_host(h, onset)
        _write_host(h, root, start_ns, h.rng, tally)
    busy = []
    first_hour = START.replace(minute=0, second=0) + timedelta(hours=1)
    while first_hour < START + timedelta(hours=hours):
        busy.append([first_hour.isoformat(), (first_hour + timedelta(seconds=BUSY_S)).isoformat()])
        first_hour += timedelta(hours=1)
    cg_host = names[cg]
    summary = {
        "required_alert_hosts": {cg_host: ["EAGAIN"]},
        "alert_hosts": {**{h: ["EACCES"] for h in new_policy}, cg_host: ["EAGAIN"]},
        "roles": {"new_policy": new_policy, "cgroup_zero": [cg_host]},
        "policies": {"old": POLICIES[0], "new": POLICIES[1]},
        "cgroup_onset": (START + timedelta(seconds=onset)).isoformat(),
        "busy_windows": busy,
        "routine": {k: tally["traces"][k] for k in ROUTINE},
        "causes": {k: {"traces": tally["traces"][k], "failures": tally["failures"][k],
                       "hosts": len(tally["hosts"][k])} for k in ROOT_CAUSES},
        "start": START.isoformat(),
        "hours": hours,
    }
    (root / "fleetgen22.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

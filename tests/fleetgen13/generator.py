"""fleetgen13: a thirteenth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings), aimed at fleet dynamics the
twelve before it leave out: a rolling kernel upgrade, autoscaling, multi-host jobs failing
because of one host, an errno storm in repeat_count, a GPU driver reload, a once-a-window fault,
reduced probe sets and a tenant's namespace.

The fleet: mlx5 RoCE GPU hosts in pods of 8 (`fg13-p<PP>-h<H>`), one platform per pod (pod mod 4):
  0 MLNX_OFED, GPU driver 550.127.05 (GPU memory through the peer-memory client);
  1 MLNX_OFED, GPU driver 535.216.01;
  2 mlx5 upstream 6.8.0-52-generic (no GPU peer memory; half the jobs register an ODP MR);
  3 MLNX_OFED, GPU driver 535.216.01, its tracer run with the reduced probe set `rdma-min` (the
    uverbs handlers only: every tree is its root frame, deeper probes have no counters).
The GPU driver version is in each trace's metadata (`gpu_driver`) only. OFED pods run multi-host
jobs (4 hosts of the pod in one job slot, 2 in the other; 2 ranks a host, each rank one process with QPs to every other host of
the job); the other pods run single-host jobs of 4 ranks. Two job slots a pod (a host), jobs of
15-35 minutes. A rank that fails fatally ends its job: the launcher kills the others within half
a second; the scheduler resubmits the job on the same hosts 1-3 minutes later, three attempts,
then a new allocation. Tenants "nova" and "kite" (40 % of jobs) share every host.
A rank: reads 4 GID slots, allocates a PD, registers a host buffer and a GPU buffer (OFED) or,
for ODP jobs on upstream, an ON_DEMAND buffer, creates a CQ, one RC QP per peer host (one on a
single-host job), moves each RESET->INIT->RTR->RTS, re-registers its buffer every ~3 minutes while
it trains, and tears down (destroy_qp, dereg_mr x2, dealloc_pd).

The daemon (`tracer run -i 60s`): 60 s snapshots, every call counted per probe; a tree is emitted
when any probe in it fails, the first 2 of a signature (the tree's shape and errnos) per snapshot
as records and the rest in the second's repeat_count (the kernel aggregates over processes),
untimed outside capture windows (the 4 ms tick the root returned in, latency null); good trees
only in the host's capture windows (20 s every 5 minutes, at its own phase), timed.

Fleet dynamics (no fault, nothing to alert on):
  - autoscaling: the last host of every pod joins between 30 % and 55 % of the window (no
    counters, no history before); host 6 of every even pod is drained between 55 % and 75 %
    (its jobs finish, nothing after);
  - a rolling kernel upgrade: 80 % of the upstream hosts reboot into 6.17.0-8-generic in waves
    from 30 % to 70 % of the window (4 minutes down, a new boot, new monotonic clock);
  - reduced probe sets on pod mod 4 == 3.

Routine families (truth expected_error, no root cause; the process goes on):
  R1 gid_empty_slot: query_gid ENODATA at rdma_get_gid_attr ("-ENODATA empty GID slot"), 1-2 of
     the 4 slots a rank reads on every host; on `rdma-min` hosts seen at the handler only;
  R2 peer_gup_rescued: OFED GPU reg_mr: pin_user_pages_fast EFAULT, then ib_peer_umem_get claims
     the range; the root returns 0;
  R3 kite_raw_qp_eperm: tenant kite's pods run without CAP_NET_RAW; its library first asks for a
     RAW_PACKET QP (a traffic sniffer), create_qp EPERM at create_qp ("IB_QPT_RAW_PACKET without
     CAP_NET_RAW"), then creates its RC QPs. Routine inside kite's namespace only: nova's jobs on
     the same hosts never see it.

Root causes (truth root_cause; ROOT_CAUSES: origin probe, errno, operation):
  F1 kernel_617_odp_regression: on 6.17 every ON_DEMAND registration fails EOPNOTSUPP at
     mlx5_ib_reg_user_mr (reference: "upstream >=~6.17: dmah passed together with ON_DEMAND"):
     ODP jobs crash-loop on exactly the upgraded hosts. One cluster by kernel; no host alert
     required (many hosts of one release alike), one naming EOPNOTSUPP there is tolerated;
  F2 bad_nic_fw_timeout: one OFED host's NIC firmware stops answering from 25 % of the window:
     its INIT->RTR fail ETIMEDOUT at mlx5_cmd_exec (errno_conventions: command timeout). The
     scheduler keeps placing jobs on it (a free host: its jobs die fast). Must alert (ETIMEDOUT);
  F3 peer_of_bad_nic: the same jobs' ranks on the other hosts fail INIT->RTR towards the bad
     host's GID: ETIMEDOUT at rdma_addr_find_l2_eth_by_grh (its neighbour never answers). Real
     failures (their jobs died) with the root cause on another host: no alert may name a peer;
  F4 storm_memlock_eperm: one upstream host's health agent runs under a unit with
     RLIMIT_MEMLOCK 0 from 20 % of the window and is restarted every 60 ms: reg_mr EPERM at
     ib_umem_get ("!can_do_mlock()"), ~1,000 a minute, two records a snapshot carrying the rest in
     repeat_count. Must alert (EPERM), and not drown the other findings;
  F5 gpu_driver_reload: at 45 % of the window every host with GPU driver 550 reloads it: for two
     minutes GPU registrations fail EINVAL at ib_peer_umem_get (the peer client's dma map, after
     the routine GUP EFAULT). One cluster; no host alert (a fleet-wide two-minute window);
  F6 rare_srq_init_enomem: once in the whole window on one host, create_qp fails ENOMEM at
     mlx5_ib_dev_res_srq_init (lazy creation of the device's default SRQ), nowhere else ever.
     Must be a finding (never set aside); no host alert required, ENOMEM there tolerated.

`generate(out_dir, hosts, hours, seed) -> summary` writes events, counters, counter_buckets and
truth in the dataset layout and `<out_dir>/fleetgen13.json`: `alert_hosts` (host -> errnos an
alert may name), `required_alert_hosts` (host -> errnos an alert must name: F2, F4), `roles`.
"""

from __future__ import annotations

import errno as errno_mod
import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import write_counter_buckets, write_partition

START = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
NS = 1_000_000_000
SNAP_S = 60
TICK_NS = 4_000_000
WINDOW_EVERY, WINDOW_LEN = 300.0, 20.0

OFED_KERNEL, OLD_KERNEL, NEW_KERNEL = "5.15.0-1067-nvidia", "6.8.0-52-generic", "6.17.0-8-generic"
GPU550, GPU535 = "550.127.05", "535.216.01"

# origin probe, errno, operation
ROOT_CAUSES = {
    "kernel_617_odp_regression": ("mlx5_ib_reg_user_mr", "EOPNOTSUPP", "reg_mr"),
    "bad_nic_fw_timeout": ("mlx5_cmd_exec", "ETIMEDOUT", "modify_qp"),
    "peer_of_bad_nic": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "modify_qp"),
    "storm_memlock_eperm": ("ib_umem_get", "EPERM", "reg_mr"),
    "gpu_driver_reload": ("ib_peer_umem_get", "EINVAL", "reg_mr"),
    "rare_srq_init_enomem": ("mlx5_ib_dev_res_srq_init", "ENOMEM", "create_qp"),
}
ROUTINE = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "query_gid"),
    "peer_gup_rescued": ("pin_user_pages_fast", "EFAULT", "reg_mr"),
    "kite_raw_qp_eperm": ("create_qp", "EPERM", "create_qp"),
}


# ------------------------------------------------------------------------------------------
# call trees (depth among probed frames, function, layer), from the reference's operations
# ------------------------------------------------------------------------------------------
def _umem(ofed: bool) -> str:
    return "ib_umem_get_peer" if ofed else "ib_umem_get"


def tree(op: str, ofed: bool, arg: str | None = None) -> list[tuple[int, str, str]]:
    """The successful call tree of `op` on an OFED or upstream mlx5 host."""
    um = _umem(ofed)
    if op == "query_gid":
        return [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "uverbs"), (1, "rdma_get_gid_attr", "core"),
                (1, "rdma_read_gid_attr_ndev_rcu", "core"), (1, "rdma_put_gid_attr", "core")]
    if op == "alloc_pd":
        return [(0, "ib_uverbs_alloc_pd", "uverbs"), (1, "rdma_alloc_begin_uobject", "core"),
                (2, "ib_rdmacg_try_charge", "core"), (1, "mlx5_ib_alloc_pd", "driver"), (2, "mlx5_cmd_exec", "driver"),
                (1, "rdma_restrack_add", "core")]
    if op == "reg_mr":
        head = [(0, "ib_uverbs_reg_mr", "uverbs"), (1, "rdma_alloc_begin_uobject", "core"),
                (1, "rdma_lookup_get_uobject", "core"), (1, "mlx5_ib_reg_user_mr", "driver")]
        if arg == "odp":
            return head + [(2, "mlx5r_umr_resource_init", "driver"), (1, "rdma_restrack_add", "core")]
        if arg == "gpu":
            return head + [(2, um, "core"), (3, "pin_user_pages_fast", "core"), (3, "ib_peer_umem_get", "peer-mem"),
                           (2, "create_real_mr", "driver"), (3, "reg_create", "driver"),
                           (3, "ib_umem_activate_invalidation_notifier", "peer-mem"), (1, "rdma_restrack_add", "core")]
        return head + [(2, um, "core"), (3, "pin_user_pages_fast", "core"), (2, "create_real_mr", "driver"),
                       (3, "mlx5r_umr_update_mr_pas", "driver"), (1, "rdma_restrack_add", "core")]
    if op == "create_cq":
        return [(0, "ib_uverbs_create_cq", "uverbs"), (1, "create_cq", "uverbs"), (2, "rdma_alloc_begin_uobject", "core"),
                (2, "mlx5_ib_create_cq", "driver"), (3, "create_cq_user", "driver"), (4, um, "core"),
                (4, "mlx5_ib_db_map_user", "driver"), (3, "mlx5_comp_eqn_get", "driver"),
                (3, "mlx5_core_create_cq", "driver"), (2, "rdma_restrack_add", "core")]
    if op == "create_qp":
        return [(0, "ib_uverbs_create_qp", "uverbs"), (1, "create_qp", "uverbs"), (2, "rdma_alloc_begin_uobject", "core"),
                (3, "ib_rdmacg_try_charge", "core"), (2, "rdma_lookup_get_uobject", "core"),
                (2, "ib_create_qp_user", "core"), (3, "mlx5_ib_create_qp", "driver"),
                (4, "mlx5_ib_dev_res_srq_init", "driver"), (4, "create_user_qp", "driver"), (5, um, "core"),
                (5, "mlx5_ib_db_map_user", "driver"), (5, "mlx5_qpc_create_qp", "driver"), (6, "mlx5_cmd_exec", "driver"),
                (3, "ib_create_qp_security", "core"), (2, "ib_qp_usecnt_inc", "core")]
    if op == "modify_qp":
        base = [(0, "ib_uverbs_modify_qp", "uverbs"), (1, "modify_qp", "uverbs"), (2, "rdma_lookup_get_uobject", "core"),
                (2, "ib_modify_qp_with_udata", "core"), (3, "_ib_modify_qp", "core")]
        drv = [(4, "ib_security_modify_qp", "core"), (5, "mlx5_ib_modify_qp", "driver"),
               (6, "mlx5_core_qp_modify", "driver"), (7, "mlx5_cmd_exec", "driver")]
        if arg == "RESET->INIT":
            return base + [(4, "rdma_counter_bind_qp_auto", "core")] + drv
        if arg == "INIT->RTR":
            return base + [(4, "rdma_get_gid_attr", "core"), (4, "ib_resolve_eth_dmac", "core"),
                           (5, "rdma_addr_find_l2_eth_by_grh", "core"), (4, "rdma_lag_get_ah_roce_slave", "core")] + drv + [
                (4, "rdma_lag_put_ah_roce_slave", "core")]
        return base + drv
    if op == "destroy_qp":
        return [(0, "ib_uverbs_destroy_qp", "uverbs"), (1, "__uobj_get_destroy", "core"),
                (2, "rdma_lookup_get_uobject", "core"), (2, "ib_destroy_qp_user", "core"),
                (3, "mlx5_ib_destroy_qp", "driver"), (4, "mlx5_core_destroy_qp", "driver"), (5, "mlx5_cmd_exec", "driver")]
    if op == "dereg_mr":
        return [(0, "ib_uverbs_dereg_mr", "uverbs"), (1, "__uobj_perform_destroy", "core"), (2, "ib_dereg_mr_user", "core"),
                (3, "mlx5_ib_dereg_mr", "driver"), (4, "ib_umem_release", "core"), (2, "ib_rdmacg_uncharge", "core")]
    if op == "dealloc_pd":
        return [(0, "ib_uverbs_dealloc_pd", "uverbs"), (1, "__uobj_perform_destroy", "core"),
                (2, "ib_dealloc_pd_user", "core"), (3, "mlx5_ib_dealloc_pd", "driver"),
                (4, "mlx5_cmd_dealloc_pd", "driver"), (5, "mlx5_cmd_exec", "driver"), (2, "ib_rdmacg_uncharge", "core")]
    raise ValueError(op)


OPS = [("query_gid", None), ("alloc_pd", None), ("reg_mr", "host"), ("reg_mr", "gpu"), ("reg_mr", "odp"),
       ("create_cq", None), ("create_qp", None), ("modify_qp", "RESET->INIT"), ("modify_qp", "INIT->RTR"),
       ("modify_qp", "RTR->RTS"), ("destroy_qp", None), ("dereg_mr", None), ("dealloc_pd", None)]

# Frame = (depth, function, layer, errno or None)
Frame = tuple[int, str, str, str | None]


def ok(frames: list[tuple[int, str, str]]) -> list[Frame]:
    return [(d, fn, layer, None) for d, fn, layer in frames]


def failing(frames: list[tuple[int, str, str]], origin: str, err: str, *, nth: int = 1,
            absorbed: dict[str, str] | None = None) -> list[Frame]:
    """The tree cut after its `nth` frame named `origin` (the kernel returns on the error; the
    unwind helpers are not probed): errno on the origin and each of its ancestors, `absorbed`
    errors (a sibling's error the code went on from) on the frames they name."""
    seen, cut = 0, None
    for i, (_, fn, _) in enumerate(frames):
        if fn == origin:
            seen += 1
            if seen == nth:
                cut = i
                break
    assert cut is not None, (origin, frames)
    out: list[Frame] = [(d, fn, layer, (absorbed or {}).get(fn)) for d, fn, layer in frames[:cut + 1]]
    depth = frames[cut][0]
    out[cut] = (*out[cut][:3], err)
    for i in range(cut - 1, -1, -1):
        if out[i][0] < depth:
            out[i] = (*out[i][:3], err)
            depth = out[i][0]
    return out


def frames_of(op: str, arg: str | None, label: str, ofed: bool = True) -> list[Frame]:
    """The frames a call of `op` shows under `label` ("good", a routine family or a root cause)."""
    t = tree(op, ofed, arg)
    if label == "good":
        return ok(t)
    if label == "gid_empty_slot":
        return failing(t, "rdma_get_gid_attr", "ENODATA")
    if label == "peer_gup_rescued":
        return [(d, fn, layer, "EFAULT" if fn == "pin_user_pages_fast" else None) for d, fn, layer in t]
    if label == "kite_raw_qp_eperm":
        return failing(t, "create_qp", "EPERM")
    if label == "kernel_617_odp_regression":
        return failing(t, "mlx5_ib_reg_user_mr", "EOPNOTSUPP")
    if label == "bad_nic_fw_timeout":
        return failing(t, "mlx5_cmd_exec", "ETIMEDOUT")
    if label == "peer_of_bad_nic":
        return failing(t, "rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT")
    if label == "storm_memlock_eperm":
        return failing(t, _umem(ofed), "EPERM")
    if label == "gpu_driver_reload":
        return failing(t, "ib_peer_umem_get", "EINVAL", absorbed={"pin_user_pages_fast": "EFAULT"})
    if label == "rare_srq_init_enomem":
        return failing(t, "mlx5_ib_dev_res_srq_init", "ENOMEM")
    raise ValueError(label)


def reduced(frames: list[Frame]) -> list[Frame]:
    """What the `rdma-min` probe set (uverbs handlers only) sees of a tree: its root."""
    return [f for f in frames if f[2] == "uverbs" and f[0] == 0]


def _origin(frames: list[Frame]) -> tuple[str | None, str | None, str | None]:
    """(probe, errno, layer) of the deepest frame of the failing chain: the root's errno followed
    down through the children that carry it."""
    if frames[0][3] is None:
        # an absorbed error (the root succeeded): its own frame
        for _, fn, layer, e in frames:
            if e is not None:
                return fn, e, layer
        return None, None, None
    best = frames[0]
    for f in frames[1:]:
        if f[3] == frames[0][3] and f[0] > best[0]:
            best = f
    return best[1], best[3], best[2]


# ------------------------------------------------------------------------------------------
# the fleet
# ------------------------------------------------------------------------------------------
class Host:
    def __init__(self, name: str, pod: int, idx: int):
        self.name, self.pod, self.idx = name, pod, idx
        kind = pod % 4
        self.ofed = kind != 2
        self.minimal = kind == 3
        self.gpu = GPU550 if kind == 0 else (GPU535 if self.ofed else None)
        self.up: list[tuple[float, float]] = []
        self.upgrade_at: float | None = None
        self.empty_slots: set[int] = set()
        self.calls: list[tuple] = []  # (t, pid, comm, job, tenant, op, arg, label, frames)
        self.boots: list[float] = [0.0]

    def kernel(self, t: float) -> str:
        if not self.ofed and self.upgrade_at is not None and t >= self.upgrade_at:
            return NEW_KERNEL
        return OFED_KERNEL if self.ofed else OLD_KERNEL

    def up_until(self, t: float) -> float | None:
        """The end of the up interval holding t, None when the host is down at t."""
        for a, b in self.up:
            if a <= t < b:
                return b
        return None


def generate(out_dir: str | Path, hosts: int = 40, hours: float = 3.0, seed: int = 13) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    T = hours * 3600.0
    names = [f"fg13-p{i // 8:02d}-h{i % 8}" for i in range(hosts)]
    fleet = [Host(n, i // 8, i % 8) for i, n in enumerate(names)]
    by_pod: dict[int, list[Host]] = defaultdict(list)
    for h in fleet:
        by_pod[h.pod].append(h)
    roles: dict[str, list[str]] = defaultdict(list)

    # --- dynamics: joins, drains, kernel upgrades -----------------------------------------
    upstream = [h for h in fleet if not h.ofed]
    upgraded = [h for h in upstream if rng.random() < 0.8]
    storm = next((h for h in upstream if h not in upgraded and h.idx not in (6, 7)), None)
    for h in fleet:
        a, b = 0.0, T
        if h.idx == 7 and len(by_pod[h.pod]) == 8:
            a = float(rng.uniform(0.30, 0.55) * T)
            roles[h.name].append("joins")
        if h.idx == 6 and h.pod % 2 == 0 and len(by_pod[h.pod]) >= 7:
            b = float(rng.uniform(0.55, 0.75) * T)
            roles[h.name].append("drained")
        h.up = [(a, b)]
        h.empty_slots = set(rng.choice(4, size=int(rng.integers(1, 3)), replace=False).tolist())
    for h in upgraded:
        if h is storm:
            continue
        a, b = h.up[0]
        tu = float(rng.uniform(0.30, 0.70) * T)
        if not (a + 600 < tu < b - 600):
            continue
        h.upgrade_at = tu + 240.0
        h.up = [(a, tu), (tu + 240.0, b)]
        h.boots.append(tu + 240.0)
        roles[h.name].append("kernel_upgrade")
    upgraded = [h for h in upstream if h.upgrade_at is not None]

    # --- faults ---------------------------------------------------------------------------
    ofed_multi = [h for h in fleet if h.ofed and not h.minimal and h.idx not in (6, 7)]
    bad = next(h for h in ofed_multi if h.pod % 4 == 0 and h.idx == 2)
    bad_from = 0.25 * T
    roles[bad.name].append("bad_nic_fw_timeout")
    rare = next(h for h in ofed_multi if h.pod % 4 == 1 and h.idx == 5)
    rare_at = [float(rng.uniform(0.3, 0.6) * T)]
    roles[rare.name].append("rare_srq_init_enomem")
    reload_at = 0.45 * T
    reload_end = {h.name: reload_at + float(rng.uniform(0, 20)) for h in fleet if h.gpu == GPU550 and not h.minimal}
    for name in reload_end:
        roles[name].append("gpu_driver_reload")
    if storm is not None:
        roles[storm.name].append("storm_memlock_eperm")
    storm_from = 0.20 * T
    pid_next = [3000]

    def new_pid() -> int:
        pid_next[0] += int(rng.integers(1, 40))
        return pid_next[0]

    def label_of(h: Host, t: float, op: str, arg: str | None, ctx: dict) -> str:
        """The outcome of one call at time t on host h (ctx: the rank's job, tenant, slot, peer)."""
        if op == "reg_mr" and arg == "odp" and h.kernel(t) == NEW_KERNEL:
            return "kernel_617_odp_regression"
        if op == "reg_mr" and arg == "gpu":
            start = reload_end.get(h.name)
            if start is not None and start <= t < start + 120.0:
                return "gpu_driver_reload"
            return "peer_gup_rescued"
        if op == "modify_qp" and arg == "INIT->RTR" and t >= bad_from:
            if h is bad:
                return "bad_nic_fw_timeout"
            if ctx.get("peer") is bad:
                return "peer_of_bad_nic"
        return "good"

    def rank_timeline(h: Host, t0: float, end: float, ctx: dict) -> list[tuple]:
        """Every call of one rank from t0 to a clean teardown at `end`, with its outcome."""
        pid = new_pid()
        calls = []
        t = t0

        def call(op, arg, label=None):
            nonlocal t
            lab = label or label_of(h, t, op, arg, ctx)
            calls.append((t, pid, "python3", ctx["job"], ctx["tenant"], op, arg, lab))
            t += float(rng.uniform(0.004, 0.03))
            return lab

        for slot in range(4):
            call("query_gid", None, "gid_empty_slot" if slot in h.empty_slots else "good")
        call("alloc_pd", None)
        call("reg_mr", "host")
        if h.ofed:
            call("reg_mr", "gpu")
        elif ctx["odp"]:
            call("reg_mr", "odp")
        call("create_cq", None)
        if ctx["tenant"] == "kite":
            call("create_qp", None, "kite_raw_qp_eperm")
        peers = ctx["peers"] or [None]
        for _ in peers:
            call("create_qp", None)
        for p in peers:
            ctx["peer"] = p
            call("modify_qp", "RESET->INIT")
            call("modify_qp", "INIT->RTR")
            call("modify_qp", "RTR->RTS")
        ctx["peer"] = None
        t = max(t, t0) + float(rng.uniform(150, 210))
        while t < end - 5:
            call("dereg_mr", None)
            call("reg_mr", "gpu" if h.ofed else "host")
            t += float(rng.uniform(150, 210))
        t = max(t, end)
        for _ in peers:
            call("destroy_qp", None)
        call("dereg_mr", None)
        call("dereg_mr", None)
        call("dealloc_pd", None)
        return calls

    fatal = set(ROOT_CAUSES)

    def run_job(alloc: list[Host], t0: float, dur: float, ranks: int, job: str, tenant: str,
                odp: bool) -> tuple[float | None, float]:
        """Run a job's ranks: (the time it died -- its first fatal call + the launcher's kill -- or
        None, its planned end)."""
        end = min([t0 + dur] + [h.up_until(t0) or t0 for h in alloc])
        lines = []
        for h in alloc:
            for _ in range(ranks):
                # each rank connects to the other hosts in its own order (the ring's neighbours first)
                peers = [p for p in alloc if p is not h]
                peers = [peers[i] for i in rng.permutation(len(peers))]
                ctx = {"job": job, "tenant": tenant, "odp": odp, "peers": peers, "peer": None}
                lines.append((h, rank_timeline(h, t0 + float(rng.uniform(0, 1.5)), end, ctx)))
        deaths = [next((c[0] for c in calls if c[7] in fatal), None) for _, calls in lines]
        died = min((d for d in deaths if d is not None), default=None)
        for (h, calls), own in zip(lines, deaths, strict=True):
            limit = end + 60 if died is None else min(died + 0.5, own if own is not None else died + 0.5)
            h.calls.extend(c for c in calls if c[0] <= limit)
        return (None if died is None else died + 0.5), end

    job_no = [0]

    def schedule(pool: list[Host], per_job: int, ranks: int, slot_seed: float) -> None:
        t = slot_seed
        alloc: list[Host] = []
        attempts = 0
        while t < T - 120:
            live = [h for h in pool if h.up_until(t) is not None and (h.up_until(t) or 0) - t > 300]
            if len(live) < per_job:
                t += 60
                alloc = []
                continue
            if not alloc or attempts >= 3 or any(h not in live for h in alloc):
                if per_job > 1 and bad in pool and t >= bad_from and bad in live and rng.random() < 0.85:
                    # a black hole: the host whose jobs die at once is the one always free
                    others = [h for h in live if h is not bad]
                    alloc = [bad] + list(rng.choice(others, size=per_job - 1, replace=False))
                else:
                    alloc = list(rng.choice(live, size=per_job, replace=False))
                attempts = 0
                job_no[0] += 1
                tenant = "kite" if rng.random() < 0.4 else "nova"
                odp = rng.random() < 0.5
                job_id = f"{tenant}-{job_no[0]:05d}"
            attempts += 1
            # a requeued job keeps its id (the scheduler's), as SLURM's requeue does
            died, end = run_job(alloc, t, float(rng.uniform(900, 2100)), ranks, job_id, tenant, odp)
            if died is None:
                t = end + float(rng.uniform(30, 120))
                alloc = []
            else:
                t = died + float(rng.uniform(60, 180))

    for _, members in sorted(by_pod.items()):
        multi = members[0].ofed and not members[0].minimal and len(members) >= 4
        for slot in range(2):
            if multi:
                # one slot runs 4-host jobs, the other 2-host ones (a rank's only peer host)
                schedule(members, 4 if slot == 0 else 2, 2, float(rng.uniform(0, 120)))
            else:
                for h in members:
                    schedule([h], 1, 4, float(rng.uniform(0, 120)))
    for h in fleet:
        h.calls.sort(key=lambda c: c[0])
    # the rare fault: the first create_qp the rare host makes after its time fails, once; that
    # rank dies there (its later calls go)
    hit = next((c for c in rare.calls if c[5] == "create_qp" and c[7] == "good" and c[0] >= rare_at[0]), None)
    if hit is not None:
        rare.calls = [(*c[:7], "rare_srq_init_enomem") if c is hit else c for c in rare.calls
                      if not (c[1] == hit[1] and c[0] > hit[0])]

    # --- what the tracer writes --------------------------------------------------------------
    summary = {"hosts": hosts, "hours": hours, "seed": seed, "traces": 0, "failures": 0}
    cause_hosts: dict[str, set] = defaultdict(set)
    routine_traces: dict[str, int] = defaultdict(int)
    held_rng = np.random.default_rng(seed + 1)
    for h in fleet:
        _write_host(out, h, T, rng, held_rng, storm if h is storm else None, storm_from, cause_hosts, routine_traces, summary)

    alert_hosts: dict[str, list[str]] = {bad.name: ["ETIMEDOUT"], rare.name: ["ENOMEM"]}
    required = {bad.name: ["ETIMEDOUT"]}
    if storm is not None:
        alert_hosts[storm.name] = ["EPERM"]
        required[storm.name] = ["EPERM"]
    for h in upgraded:
        alert_hosts.setdefault(h.name, []).append("EOPNOTSUPP")
    summary |= {
        "roles": dict(roles), "alert_hosts": alert_hosts, "required_alert_hosts": required,
        "cause_hosts": {k: sorted(v) for k, v in cause_hosts.items()}, "routine": dict(routine_traces),
        "upgraded": sorted(h.name for h in upgraded), "minimal": sorted(h.name for h in fleet if h.minimal),
        "joined": sorted(h.name for h in fleet if "joins" in roles[h.name]),
        "drained": sorted(h.name for h in fleet if "drained" in roles[h.name]),
        "bad_nic": bad.name, "storm": storm.name if storm else None, "rare": rare.name,
        "window": [START.isoformat(), datetime.fromtimestamp(START.timestamp() + T, UTC).isoformat()],
    }
    (out / "fleetgen13.json").write_text(json.dumps(summary, indent=1))
    return summary


def _probes(h: Host) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for op, arg in OPS:
        if (arg == "gpu" and not h.ofed) or (arg == "odp" and h.ofed):
            continue
        for d, fn, layer in tree(op, h.ofed, arg):
            if h.minimal and d != 0:
                continue
            seen.setdefault(fn, layer)
    return list(seen.items())


def _write_host(out: Path, h: Host, T: float, rng, held_rng, storm: Host | None, storm_from: float,
                cause_hosts: dict, routine_traces: dict, summary: dict) -> None:
    probes = _probes(h)
    pidx = {fn: i for i, (fn, _) in enumerate(probes)}
    n_snap = int(T // SNAP_S)
    inv = np.zeros((n_snap, len(probes)), np.int64)
    fails = np.zeros((n_snap, len(probes)), np.int64)
    errs: dict[tuple[int, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    phase = float(rng.uniform(0, WINDOW_EVERY))

    def in_window(t: float) -> bool:
        return (t - phase) % WINDOW_EVERY < WINDOW_LEN

    # failures per (snapshot, signature): the first two are records, the second stands for the rest
    agg: dict[tuple, list] = {}
    goods: list[tuple] = []
    for t, pid, comm, job, tenant, op, arg, label in h.calls:
        if t >= T:
            continue
        fr = frames_of(op, arg, label, h.ofed)
        if h.minimal:
            fr = reduced(fr)
            if not any(f[3] for f in fr):
                label = "good"  # an error absorbed below the handlers: nothing this probe set sees
        s = int(t // SNAP_S)
        for _, fn, _, e in fr:
            j = pidx[fn]
            inv[s, j] += 1
            if e is not None:
                fails[s, j] += 1
                errs[(s, j)][e] += 1
        rec = (t, pid, comm, job, tenant, op, arg, label, fr, 1)
        if any(f[3] for f in fr):
            key = (s, op, arg, tuple(fr))
            slot = agg.setdefault(key, [])
            if len(slot) < 2:
                slot.append(rec)
            else:
                last = slot[1]
                slot[1] = (*last[:9], last[9] + 1)
        elif in_window(t):
            goods.append(rec)
    if storm is not None:
        # a crash-looping agent restarted every ~60 ms: a thousand identical trees a minute
        fr = frames_of("reg_mr", "host", "storm_memlock_eperm", h.ofed)
        for s in range(int(storm_from // SNAP_S) + 1, n_snap):
            n = int(rng.integers(900, 1100))
            for _, fn, _, e in fr:
                j = pidx[fn]
                inv[s, j] += n
                if e is not None:
                    fails[s, j] += n
                    errs[(s, j)][e] += n
            t1 = s * SNAP_S + float(rng.uniform(0, 1))
            base = 900_000 + s * 1000
            agg[(s, "storm")] = [(t1, base, "rdma-healthd", None, "infra", "reg_mr", "host", "storm_memlock_eperm", fr, 1),
                                 (t1 + 0.06, base + 1, "rdma-healthd", None, "infra", "reg_mr", "host",
                                  "storm_memlock_eperm", fr, n - 1)]
    records = goods + [r for slot in agg.values() for r in slot]
    records.sort(key=lambda r: r[0])

    ev: dict[str, list] = defaultdict(list)
    truth: dict[str, list] = defaultdict(list)
    for k, (t, pid, comm, job, tenant, op, arg, label, fr, rep) in enumerate(records):
        tid = f"{h.name}-{k:07d}"
        boot = max(b for b in h.boots if b <= t)
        mono = 10**12 + int((t - boot) * NS)
        timed = in_window(t)
        failed = fr[0][3] is not None
        has_err = any(f[3] for f in fr)
        kind = "failure" if has_err else "good"
        wall = int((START.timestamp() + t) * NS)
        if timed:
            start_ns, end_ns = wall, wall + 20_000 * len(fr) + 5_000
        else:
            start_ns = end_ns = wall - wall % TICK_NS
            mono = mono - mono % TICK_NS
        meta = [{"key": "tenant", "value": tenant}] + ([{"key": "gpu_driver", "value": h.gpu}] if h.gpu else [])
        for i, (d, fn, layer, e) in enumerate(fr):
            sub = 1
            while i + sub < len(fr) and fr[i + sub][0] > d:
                sub += 1
            ev["trace_id"].append(tid)
            ev["seq"].append(i)
            ev["ts_ns"].append(mono + 20_000 * i if timed else mono)
            ev["pid"].append(pid)
            ev["tid"].append(pid)
            ev["ppid"].append(1 if comm == "rdma-healthd" else 2000)
            ev["comm"].append(comm)
            ev["probe"].append(fn)
            ev["layer"].append(layer)
            ev["depth"].append(d)
            ev["ret"].append(-getattr(errno_mod, e) if e else 0)
            ev["errno"].append(e)
            ev["latency_ns"].append(20_000 * sub + 5_000 if timed else None)
            ev["arg"].append(arg if i == 0 else None)
            ev["kind"].append(kind)
            ev["command"].append(op)
            ev["exit_status"].append(-getattr(errno_mod, fr[0][3]) if failed else 0)
            ev["start_time"].append(start_ns)
            ev["end_time"].append(end_ns)
            ev["kernel_release"].append(h.kernel(t))
            ev["lost_events"].append(0)
            ev["job_id"].append(job)
            ev["metadata"].append(meta)
            ev["repeat_count"].append(rep if rep > 1 else None)
        probe, err, layer = _origin(fr) if has_err else (None, None, None)
        routine = label in ROUTINE
        truth["trace_id"].append(tid)
        truth["kind"].append(kind)
        truth["root_cause"].append(label if label in ROOT_CAUSES else None)
        truth["bifurcation_probe"].append(probe)
        truth["bifurcation_errno"].append(err)
        truth["origin_layer"].append(layer)
        truth["expected_error"].append(routine)
        truth["held_out"].append(bool(kind == "good" and held_rng.random() < 0.05))
        if label in ROOT_CAUSES:
            cause_hosts[label].add(h.name)
        if routine:
            routine_traces[label] += 1
        summary["traces"] += 1
        summary["failures"] += kind == "failure"

    day = START.strftime("%Y-%m-%d")
    if ev["trace_id"]:
        n = len(ev["trace_id"])
        cols = {k: v for k, v in ev.items()}
        table = pa.table({
            **{k: cols[k] for k in ("trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth",
                                    "ret", "errno", "latency_ns", "arg", "kind", "command", "exit_status",
                                    "kernel_release", "lost_events", "job_id", "metadata", "repeat_count")},
            "path": [None] * n,
            "start_time": pa.array(cols["start_time"], pa.timestamp("ns", tz="UTC")),
            "end_time": pa.array(cols["end_time"], pa.timestamp("ns", tz="UTC")),
            "host": [h.name] * n,
        })
        write_partition(table, out, "events", day, h.name, "part-0.parquet", durable=False)
        truth["host"] = [h.name] * len(truth["trace_id"])
        write_partition(pa.table(dict(truth)), out, "truth", day, h.name, "part-0.parquet", durable=False)

    # counters: every probe of the host's set, every snapshot it was up for
    up = inv.sum(axis=1) > 0  # a teardown a few ms past a drain still lands in a snapshot
    for a, b in h.up:
        up[int(np.ceil(a / SNAP_S)):int(b // SNAP_S)] = True
    snaps = np.nonzero(up)[0]
    if snaps.size == 0:
        return
    rows = snaps.size * len(probes)
    errno_cells = []
    for s in snaps:
        for j in range(len(probes)):
            cell = errs.get((s, j))
            errno_cells.append([{"errno": e, "count": c} for e, c in sorted(cell.items())] if cell else [])
    snap_ns = np.array([int((START.timestamp() + (s + 1) * SNAP_S) * NS) for s in snaps], np.int64)
    counters = pa.table({
        "host": [h.name] * rows,
        "snapshot_time": pa.array(np.repeat(snap_ns, len(probes)), pa.timestamp("ns", tz="UTC")),
        "interval_s": np.full(rows, float(SNAP_S)),
        "kernel_release": [h.kernel((s + 1) * SNAP_S - 1) for s in snaps for _ in probes],
        "vendor": ["mlx5"] * rows,
        "probe_set": ["rdma-min" if h.minimal else "rdma"] * rows,
        "probe": [fn for _ in snaps for fn, _ in probes],
        "layer": [layer for _ in snaps for _, layer in probes],
        "live": np.ones(rows, bool),
        "invocations": inv[snaps].reshape(-1),
        "failures": fails[snaps].reshape(-1),
        "errno_counts": pa.array(errno_cells, pa.list_(pa.struct([("errno", pa.string()), ("count", pa.int64())]))),
        "lost_records": np.zeros(rows, np.int64),
    })
    path = write_partition(counters, out, "counters", day, h.name, "part-0.parquet", durable=False)
    write_counter_buckets(path, durable=False)

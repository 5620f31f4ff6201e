"""Fleet generator six: three hardware generations, pods of hosts running multi-host jobs, and
faults a fleet actually has, shaped from reference/rdma_control_path.yaml.

The fleet (all choices here, none taken from the project's own simulator):
- generations: "ofed" (mlx5, MLNX_OFED kernel: reg_mr pins through ib_umem_get_peer and the
  peer-memory client), "upstream" (mlx5 on a distribution kernel: no peer memory, GPU buffers go
  through dmabuf; its ConnectX parts lack DCT) and "bnxt" (bnxt_re: no counter ops, so AUTO
  counter mode makes rdma_counter_bind_qp_auto return -ENOMEM, which _ib_modify_qp ignores).
- pods of 8 hosts of one generation share jobs; each host runs 8 ranks per job; an
  `rdma-exporter` daemon polls the GID table on every busy host (very hot on a few).
- capture windows (30 s every 10 min, per-host phase): every call tree inside is timed and good
  trees under 50 ms are sampled; outside, only failures are recorded, untimed (4 ms ticks).
- per 5 s snapshot the first K trees of a failure signature are records, the K-th carries the
  rest as repeat_count; counters count every call, ring-buffer losses included.

Routine errors (truth: expected_error, no root cause): GID-table scans hitting empty slots
(rdma_get_gid_attr -ENODATA), rdma cgroup limit retries (ib_rdmacg_try_charge -EAGAIN), double
deregistration in a registration cache (rdma_lookup_get_uobject -ENOENT under dereg_mr), the
ignored counter bind on bnxt_re, and on "upstream" hosts the absent peer-memory module
(ib_umem_get -EFAULT on GPU memory, then dmabuf) and the DC-QP capability probe
(mlx5_ib_create_qp -EOPNOTSUPP, then RC).

Faults (ROOT_CAUSES): a spine switch down under 5 pods (neighbour resolution -ETIMEDOUT on ~40
hosts at once, jobs requeued into the same failure), a NIC whose firmware command interface died
(-EIO, crash loop), a job container with a low RLIMIT_MEMLOCK (ib_umem_get -ENOMEM), peer-memory
get_pages failing once a day on 5% of "ofed" hosts, an OFED upgrade that drops DCT on part of
the "ofed" hosts (the same errno as the upstream probe: routine there, fatal here), a RoCE
address removed under a host (rdma_get_gid_attr -ENODATA inside modify_qp: the routine errno of
query_gid, in another operation), and dma-buf fence timeouts on GPU memory (some records
truncated). Also: a host with the firmware fault whose ring buffer lost every record (counters
only), a host whose QP creation is slow (its good traces over 50 ms are never sampled), idle
hosts, hosts joining and leaving, a daemon restart gap, a snapshot file delivered twice, and
a window crossing UTC midnight.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl

from tracer import schema

T0 = dt.datetime(2026, 3, 14, 23, 20, tzinfo=dt.UTC)  # the window crosses midnight UTC after 40 min
SNAP_S = 5.0
WINDOW_EVERY_S, WINDOW_LEN_S = 600.0, 30.0
K_RECORDS = 3
TICK_NS = 4_000_000
GOOD_LIMIT_NS = 50_000_000
RANKS = 8

GENS = {
    "ofed": dict(vendor="mlx5", kernel="5.15.0-119-generic", upgraded="5.15.0-125-generic", peer=True, dct=True, counters=True),
    "upstream": dict(vendor="mlx5", kernel="6.8.0-49-generic", peer=False, dct=False, counters=True),
    "bnxt": dict(vendor="bnxt_re", kernel="6.17.2-1-cloud-amd64", peer=False, dct=False, counters=False),
}

ROOT_CAUSES = {
    # cause: (operation, variant, origin probe, errno)
    "spine_switch_down": ("modify_qp", "INIT->RTR", "rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT"),
    "nic_cmd_interface_dead": ("create_qp", "rc", "mlx5_cmd_exec", "EIO"),
    "memlock_rlimit": ("reg_mr", "host", "ib_umem_get", "ENOMEM"),
    "peer_client_get_pages": ("reg_mr", "gpu", "ib_peer_umem_get", "EFAULT"),
    "ofed_upgrade_lost_dct": ("create_qp", "dc", "mlx5_ib_create_qp", "EOPNOTSUPP"),
    "roce_address_removed": ("modify_qp", "INIT->RTR", "rdma_get_gid_attr", "ENODATA"),
    "dmabuf_fence_timeout": ("reg_dmabuf_mr", "gpu", "ib_umem_dmabuf_map_pages", "ETIMEDOUT"),
}
ROUTINE = {
    "gid_slot_empty": ("query_gid", "", "rdma_get_gid_attr", "ENODATA"),
    "rdmacg_retry": ("create_qp", "rc", "ib_rdmacg_try_charge", "EAGAIN"),
    "double_dereg": ("dereg_mr", "", "rdma_lookup_get_uobject", "ENOENT"),
    "counter_auto_unsupported": ("modify_qp", "RESET->INIT", "rdma_counter_bind_qp_auto", "ENOMEM"),
    "no_peer_memory": ("reg_mr", "gpu", "ib_umem_get", "EFAULT"),
    "dc_unsupported": ("create_qp", "dc", "mlx5_ib_create_qp", "EOPNOTSUPP"),
}
ERRNO_NUM = {"ETIMEDOUT": 110, "EIO": 5, "ENOMEM": 12, "EFAULT": 14, "EOPNOTSUPP": 95, "ENODATA": 61,
             "EAGAIN": 11, "ENOENT": 2}
# the first fw command of each operation a dead command interface fails
FW_ORIGIN = {"alloc_pd": "mlx5_cmd_exec", "create_cq": "mlx5_core_create_cq", "create_qp": "mlx5_cmd_exec"}


# ------------------------------------------------------------------------------ call trees
def layer_of(probe: str) -> str:
    if probe.startswith("ib_uverbs_"):
        return "uverbs"
    if probe in ("ib_peer_umem_get", "ib_umem_activate_invalidation_notifier"):
        return "peer-mem"
    if probe.startswith(("mlx5", "bnxt_re")):
        return "driver"
    return "core"


@functools.cache
def tree(op: str, gen: str, variant: str = "") -> tuple[tuple[int, str], ...]:
    return tuple(_tree(op, gen, variant))


def _tree(op: str, gen: str, variant: str) -> list[tuple[int, str]]:
    """The probed frames (depth, probe) of one successful call, in entry order: the reference's
    chains with unprobed static/inline functions left out (depth counts probed frames only)."""
    g = GENS[gen]
    v = "mlx5_ib" if g["vendor"] == "mlx5" else "bnxt_re"
    mlx = g["vendor"] == "mlx5"
    umem = "ib_umem_get_peer" if g["peer"] else "ib_umem_get"
    alloc = [(1, "rdma_alloc_begin_uobject"), (2, "ib_rdmacg_try_charge")]
    if op == "alloc_pd":
        return [(0, "ib_uverbs_alloc_pd"), *alloc, (1, f"{v}_alloc_pd")] + ([(2, "mlx5_cmd_exec")] if mlx else [])
    if op == "create_cq":
        return [(0, "ib_uverbs_create_cq"), *alloc, (1, f"{v}_create_cq"), (2, umem)] + (
            [(2, "mlx5_core_create_cq")] if mlx else [])
    if op == "create_qp":
        t = [(0, "ib_uverbs_create_qp"), *alloc, (1, "rdma_lookup_get_uobject"), (1, "rdma_lookup_get_uobject"),
             (1, "ib_create_qp_user"), (2, f"{v}_create_qp")]
        if variant == "dc":  # DCT/DCI: no user buffers to pin before the capability check
            return t + ([(3, "mlx5_qpc_create_qp"), (4, "mlx5_cmd_exec")] if mlx else [])
        return t + [(3, umem)] + ([(3, "mlx5_qpc_create_qp"), (4, "mlx5_cmd_exec")] if mlx else [])
    if op == "modify_qp":
        t = [(0, "ib_uverbs_modify_qp"), (1, "rdma_lookup_get_uobject"), (1, "_ib_modify_qp")]
        if variant == "RESET->INIT":
            t.append((2, "rdma_counter_bind_qp_auto"))
        if variant == "INIT->RTR":
            t += [(2, "rdma_get_gid_attr"), (2, "ib_resolve_eth_dmac"), (3, "rdma_addr_find_l2_eth_by_grh"),
                  (2, "rdma_lag_get_ah_roce_slave")]
        t += [(2, "ib_security_modify_qp"), (3, f"{v}_modify_qp")]
        return t + ([(4, "mlx5_core_qp_modify"), (5, "mlx5_cmd_exec")] if mlx else [])
    if op == "reg_mr":
        t = [(0, "ib_uverbs_reg_mr"), *alloc, (1, "rdma_lookup_get_uobject"), (1, f"{v}_reg_user_mr"), (2, umem)]
        if variant == "gpu" and g["peer"]:  # GUP fails on device memory; the peer client takes it
            t += [(3, "ib_peer_umem_get")]
        if mlx:
            t += [(2, "mlx5r_umr_update_mr_pas")]
        if variant == "gpu" and g["peer"]:
            t += [(2, "ib_umem_activate_invalidation_notifier")]
        return t
    if op == "reg_dmabuf_mr":
        t = [(0, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR"), (1, f"{v}_reg_user_mr_dmabuf")]
        if mlx:
            return t + [(2, "ib_umem_dmabuf_get"), (2, "mlx5_ib_init_dmabuf_mr"), (3, "ib_umem_dmabuf_map_pages")]
        return t + [(2, "ib_umem_dmabuf_get_pinned")]
    if op == "query_gid":
        return [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"), (1, "rdma_get_gid_attr")]
    if op == "query_port":
        return [(0, "ib_uverbs_query_port"), (1, "ib_query_port"), (2, f"{v}_query_port")]
    if op == "dereg_mr":
        return [(0, "ib_uverbs_dereg_mr"), (1, "__uobj_perform_destroy"), (2, "__uobj_get_destroy"),
                (3, "rdma_lookup_get_uobject"), (3, "ib_dereg_mr_user"), (4, f"{v}_dereg_mr")]
    if op == "destroy_qp":
        return [(0, "ib_uverbs_destroy_qp"), (1, "__uobj_get_destroy"), (2, "rdma_lookup_get_uobject"),
                (2, "ib_destroy_qp_user"), (3, f"{v}_destroy_qp")]
    if op == "dealloc_pd":
        return [(0, "ib_uverbs_dealloc_pd"), (1, "__uobj_perform_destroy"), (2, "__uobj_get_destroy"),
                (3, "rdma_lookup_get_uobject"), (3, "ib_dealloc_pd_user"), (4, f"{v}_dealloc_pd")]
    raise ValueError(op)


OPS = ("alloc_pd", "create_cq", "create_qp", "modify_qp", "reg_mr", "reg_dmabuf_mr", "query_gid", "query_port",
       "dereg_mr", "destroy_qp", "dealloc_pd")
# steady-state call mix of a rank (op, variant, share); reg/dereg churn from the registration cache
MIX = [("reg_mr", "host", 0.22), ("reg_mr", "gpu", 0.08), ("reg_dmabuf_mr", "gpu", 0.06), ("dereg_mr", "", 0.3),
       ("query_port", "", 0.06), ("create_qp", "rc", 0.05), ("modify_qp", "RESET->INIT", 0.05),
       ("modify_qp", "INIT->RTR", 0.05), ("modify_qp", "RTR->RTS", 0.05), ("destroy_qp", "", 0.05),
       ("create_cq", "", 0.015), ("alloc_pd", "", 0.005)]
RANK_CALLS_PER_S = 2.0
MIX_P = np.array([m[2] for m in MIX]) / sum(m[2] for m in MIX)


def probes_of(gen: str) -> list[str]:
    seen: dict[str, None] = {}
    for op in OPS:
        for var in ("", "rc", "dc", "host", "gpu", "RESET->INIT", "INIT->RTR", "RTR->RTS"):
            if op == "reg_dmabuf_mr" or gen_allows(gen, op, var):
                for _, p in tree(op, gen, var):
                    seen.setdefault(p, None)
    return list(seen)


def gen_allows(gen: str, op: str, variant: str) -> bool:
    return not (op == "reg_mr" and variant == "gpu" and gen == "bnxt")


@functools.cache
def failed(frames: tuple[tuple[int, str], ...], origin: str, errno: str, *, swallowed: bool = False,
           after: str | None = None) -> tuple[tuple[int, str, str | None], ...]:
    """A failing call: frames up to the origin (the first `origin` frame, after the first
    `after` frame when given); the origin's ancestors return its errno and run nothing more,
    unless the error is `swallowed` (ignored by its caller: the call goes on and succeeds)."""
    start = next(i for i, (_, p) in enumerate(frames) if p == after) if after else 0
    k = next(i for i in range(start, len(frames)) if frames[i][1] == origin)
    if swallowed:
        return tuple((d, p, errno if i == k else None) for i, (d, p) in enumerate(frames))
    out: list[tuple[int, str, str | None]] = []
    depth = frames[k][0]
    for i in range(k, -1, -1):  # walk back: ancestors are the nearest shallower frames
        d, p = frames[i]
        if i == k or d < depth:
            out.append((d, p, errno))
            depth = min(depth, d)
        else:
            out.append((d, p, None))
    return tuple(out[::-1])


SELF_US = defaultdict(lambda: 8.0, {
    "mlx5_cmd_exec": 180.0, "mlx5_core_create_cq": 220.0, "ib_umem_get": 60.0, "ib_umem_get_peer": 70.0,
    "ib_peer_umem_get": 900.0, "mlx5r_umr_update_mr_pas": 120.0, "ib_umem_dmabuf_map_pages": 400.0,
    "rdma_addr_find_l2_eth_by_grh": 40.0, "bnxt_re_create_qp": 600.0, "bnxt_re_modify_qp": 300.0,
    "bnxt_re_reg_user_mr": 300.0, "bnxt_re_alloc_pd": 150.0, "bnxt_re_create_cq": 250.0,
})


# ------------------------------------------------------------------------------ the fleet
@dataclasses.dataclass
class Host:
    idx: int
    name: str
    gen: str
    pod: int
    join: float
    leave: float
    phase: float  # snapshot phase (s)
    wphase: float  # capture-window phase (s)
    boot: float  # wall time of boot, seconds before T0
    gaps: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    reboot: float | None = None  # time of the upgrade reboot (kernel release changes)
    idle: bool = False
    noisy: bool = False
    lost_all: bool = False
    slow_qp: bool = False
    faults: list[tuple] = dataclasses.field(default_factory=list)  # (cause, start, end, restart_s, kill_op)

    def up(self, t: float) -> bool:
        return self.join <= t < self.leave and not any(a <= t < b for a, b in self.gaps)

    def kernel(self, t: float) -> str:
        g = GENS[self.gen]
        return g["upgraded"] if self.reboot is not None and t >= self.reboot else g["kernel"]

    def mono_ns(self, t: float) -> int:
        boot = self.boot if self.reboot is None or t < self.reboot else -self.reboot
        return int((t + boot) * 1e9)

    def in_window(self, t: float) -> bool:
        return ((t - self.wphase) % WINDOW_EVERY_S) < WINDOW_LEN_S


@dataclasses.dataclass
class Life:
    pid: int
    comm: str
    job: str
    jtype: str
    start: float
    end: float
    init: bool  # started inside the window: its initialisation is traced
    fate: str  # done | killed | fault | cut
    cause: str | None = None  # fault: the root cause that ended it
    at_init: bool = False  # the fault hit during initialisation


class Fleet:
    def __init__(self, hosts: int, hours: float, seed: int):
        self.rng = np.random.default_rng(seed)
        self.horizon = hours * 3600.0
        self.hosts: list[Host] = []
        self.next_pid = 4000
        self.jobs = 0
        self.fault_hosts: dict[str, set[str]] = defaultdict(set)
        self._layout(hosts)

    # -- who is where
    def _layout(self, n: int) -> None:
        rng, H = self.rng, self.horizon
        gens = ["ofed"] * round(n * 0.4) + ["upstream"] * round(n * 0.35)
        gens += ["bnxt"] * (n - len(gens))
        pods = []
        for g in GENS:  # pods of 8 hosts of one generation
            members = [i for i, x in enumerate(gens) if x == g]
            pods += [members[i:i + 8] for i in range(0, len(members), 8)]
        pod_of = {h: p for p, m in enumerate(pods) for h in m}
        for i, g in enumerate(gens):
            rack, slot = divmod(i, 16)
            self.hosts.append(Host(i, f"r{rack:02d}-gpu{slot:02d}.{g[:2]}", g, pod_of[i], 0.0, H,
                                   float(rng.uniform(0, SNAP_S)), float(rng.uniform(0, WINDOW_EVERY_S)),
                                   float(rng.uniform(2e5, 2e6))))
        self.pods = pods
        by_gen = {g: [h for h in self.hosts if h.gen == g] for g in GENS}
        order = [int(i) for i in rng.permutation(n)]
        pod_order = [int(p) for p in rng.permutation(len(pods))]
        # the spine: 5 pods (about 40 hosts) lose neighbour resolution at once, and requeued
        # jobs fail in the same way until it is back
        self.spine_pods = pod_order[: max(1, min(5, len(pods) // 3))]
        self.memlock_pod = next(p for p in pod_order[len(self.spine_pods):] if self.hosts[pods[p][0]].gen != "ofed")
        reserved = {i for p in [*self.spine_pods, self.memlock_pod] for i in pods[p]}

        def special(pred=lambda h: True, any_gen: bool = False) -> Host:
            free = [i for i in order if i not in reserved]
            i = next((i for i in free if pred(self.hosts[i])), free[0] if any_gen else None)
            if i is None:
                raise ValueError(f"{n} hosts leave no free host for every role: use 64 or more")
            reserved.add(i)
            return self.hosts[i]

        for _ in range(max(1, n // 20)):
            special().idle = True
        special().join = H * 0.3
        special().leave = H * 0.7
        special().gaps.append((H * 0.45, H * 0.45 + 600))
        for _ in range(max(1, n // 12)):
            special().noisy = True
        special(lambda h: h.gen == "upstream").slow_qp = True
        fw = special(lambda h: h.gen == "ofed")
        fw.faults.append(("nic_cmd_interface_dead", H * 0.25, H, 30.0, ("create_qp", "rc")))
        lost = special(lambda h: h.gen == "upstream")
        lost.faults.append(("nic_cmd_interface_dead", H * 0.35, H, 30.0, ("create_qp", "rc")))
        lost.lost_all = True
        for h in (special(lambda h: h.gen == "upstream", True), special(lambda h: h.gen == "bnxt", True)):
            t = float(rng.uniform(0.2, 0.6)) * H
            h.faults.append(("roce_address_removed", t, H, 45.0, None))
        for _ in range(min(3, len(by_gen["upstream"]) // 6)):
            t = float(rng.uniform(0.1, 0.5)) * H
            special(lambda h: h.gen == "upstream").faults.append(
                ("dmabuf_fence_timeout", t, t + 2400.0, 30.0, ("reg_dmabuf_mr", "gpu")))
        for _ in range(max(1, round(len(by_gen["ofed"]) * 0.25))):  # a rolling OFED upgrade
            h = special(lambda h: h.gen == "ofed")
            h.reboot = float(rng.uniform(0.3, 0.5)) * H
            h.gaps.append((h.reboot - 240.0, h.reboot))
            h.faults.append(("ofed_upgrade_lost_dct", h.reboot, H, 60.0, None))
        for _ in range(max(1, round(len(by_gen["ofed"]) * 0.05))):  # once a day on 5 % of hosts
            t = float(rng.uniform(0.1, 0.9)) * H
            special(lambda h: h.gen == "ofed").faults.append(("peer_client_get_pages", t, t, 60.0, ("reg_mr", "gpu")))
        t = float(rng.uniform(0.5, 0.6)) * H
        for p in self.spine_pods:
            for i in pods[p]:
                self.hosts[i].faults.append(("spine_switch_down", t, t + 1500.0, 180.0, None))
        for h in self.hosts:
            for f in h.faults:
                self.fault_hosts[f[0]].add(h.name)

    # -- jobs and processes
    def pod_jobs(self, pod: int) -> list[tuple[str, str, float, float]]:
        rng, out = self.rng, []
        t = -float(rng.uniform(0, 6000))
        while t < self.horizon:
            length = max(1200.0, float(rng.exponential(6000)))
            self.jobs += 1
            jtype = str(rng.choice(["torch", "ray", "mpi"], p=[0.6, 0.25, 0.15]))
            out.append((f"{880000 + self.jobs}", jtype, t, t + length))
            t += length + float(rng.uniform(60, 240))
        return out

    def lives(self, h: Host, jobs: list[tuple[str, str, float, float]]) -> list[Life]:
        if h.idle:
            return []
        rng, H = self.rng, self.horizon
        comm = {"torch": "pt_main_thread", "ray": "ray::Worker", "mpi": "osu_mbw_mr"}
        lives: list[Life] = []
        for job, jtype, a, b in jobs:
            for _ in range(RANKS):
                s = a + float(rng.uniform(0, 3))
                lives.append(Life(self._pid(), comm[jtype], job, jtype, s, b, s >= 0, "done" if b < H else "cut"))
        for cause, fs, fe, restart, kill_op in sorted(h.faults, key=lambda f: f[1]):
            out: list[Life] = []
            one_shot = fe <= fs
            for life in lives:
                # a lasting fault also takes the ranks that start while it lasts (at start-up)
                starts_in = not one_shot and fs <= life.start < fe and life.fate != "fault"
                if not (life.start < fs < life.end or starts_in) or life.fate == "fault":
                    out.append(life)
                    continue
                orig_end, orig_fate = life.end, life.fate
                # a one-shot fault takes one rank; a lasting one every rank of the host
                if one_shot and any(x.fate == "fault" and x.cause == cause for x in out + lives):
                    out.append(life)
                    continue
                if starts_in:
                    t = life.start
                else:
                    life.end, life.fate = fs, ("fault" if kill_op else "killed")
                    life.cause = cause if kill_op else None
                    out.append(life)
                    t = fs + restart
                while t < min(fe, orig_end) and not one_shot:
                    end = t + 0.5
                    out.append(Life(self._pid(), life.comm, life.job, life.jtype, t, end, True, "fault", cause, True))
                    t += restart * float(rng.uniform(0.8, 1.2))
                resume = max(t, fe + restart) if not one_shot else fs + restart
                if resume < orig_end:
                    out.append(Life(self._pid(), life.comm, life.job, life.jtype, resume, orig_end, True, orig_fate))
            lives = out
        return [life for life in lives if life.end > 0]

    def _pid(self) -> int:
        self.next_pid += int(self.rng.integers(1, 40))
        return self.next_pid


# ------------------------------------------------------------------------------ recording
class Recorder:
    """What the fleet tracer would have written: trees, snapshot counters, and the truth."""

    def __init__(self, fleet: Fleet):
        self.fleet = fleet
        self.rng = fleet.rng
        self.cols: dict[str, list] = defaultdict(list)
        self.truth: list[dict] = []
        # (host, snapshot index, signature) -> [(t, life, frames, timed, truth)]
        self.pending: dict[tuple, list] = defaultdict(list)
        # host -> (snapshot index, probe) -> {errno: count}
        self.fails_by_host: dict[int, dict] = {}
        # host -> (snapshot index, probe) -> calls made outside the steady-state base rate
        self.calls_by_host: dict[int, dict] = {}
        self.lost: dict[tuple[int, int], int] = defaultdict(int)
        self.seq = 0

    def snap(self, h: Host, t: float) -> int:
        return int((t - h.phase) // SNAP_S)

    def call(self, h: Host, life: Life, t: float, op: str, variant: str = "",
             fail: tuple[str, str, str | None, bool] | None = None, count: int = 1, sampled: bool = False) -> None:
        """One call of `op` by `life` at `t`; `fail` = (origin, errno, root cause or None for a
        routine error, swallowed). Successful calls are recorded inside capture windows only;
        every call counts in the counters, except `sampled` ones (a draw from the steady-state
        mix, whose calls the counters' base rate already holds)."""
        if not h.up(t):
            return
        frames = tree(op, h.gen, variant)
        timed = h.in_window(t)
        ff = None
        if fail is not None:
            origin, errno, cause, swallowed = fail
            after = "mlx5_qpc_create_qp" if origin == "mlx5_cmd_exec" and op == "create_qp" else None
            ff = failed(frames, origin, errno, swallowed=swallowed, after=after)
        if not sampled:  # the frames that ran
            mine = self.calls_by_host.setdefault(h.idx, defaultdict(int))
            sn = self.snap(h, t)
            for _, p, *_ in (ff or frames):
                mine[(sn, p)] += count
        if fail is None:
            if timed and self.rng.random() < 0.5:
                self._emit(h, life, t, op, variant, [(d, p, None) for d, p in frames], True, None, 1)
            return
        key = (h.idx, self.snap(h, t), tuple((p, e) for _, p, e in ff))
        self.pending[key].append((t, life, op, variant, ff, timed, (cause, origin, errno), count))

    def flush_failures(self) -> None:
        """Per snapshot and signature: K records, the last standing for the rest; counters see all."""
        hosts = self.fleet.hosts
        for (hi, sn, _), items in self.pending.items():
            mine = self.fails_by_host.setdefault(hi, defaultdict(lambda: defaultdict(int)))
            h = hosts[hi]
            for _, _, _, _, ff, _, _, count in items:
                for _d, p, e in ff:
                    if e is not None:
                        mine[(sn, p)][e] += count
            if h.lost_all:
                self.lost[(hi, sn)] += min(len(items), K_RECORDS)
                continue
            head, rest = items[: K_RECORDS - 1], items[K_RECORDS - 1:]
            for t, life, op, variant, ff, timed, cause, count in head:
                self._emit(h, life, t, op, variant, ff, timed, cause, count)
            if rest:
                t, life, op, variant, ff, timed, cause, _ = rest[0]
                self._emit(h, life, t, op, variant, ff, timed, cause, sum(x[-1] for x in rest))

    def _emit(self, h: Host, life: Life, t: float, op: str, variant: str, ff: list, timed: bool,
              cause: tuple | None, repeat: int) -> None:
        if h.lost_all:
            return  # the ring buffer lost every record of this host
        rng = self.rng
        n = len(ff)
        if timed:
            scale = np.array([SELF_US[p] * (40.0 if h.slow_qp and p in ("mlx5_cmd_exec", "mlx5_qpc_create_qp")
                                             and op == "create_qp" else 1.0) for _, p, _ in ff])
            selfs = scale * rng.lognormal(0.0, 0.35, n) * 1000.0
            lat = selfs.copy()
            for i in range(n - 1, -1, -1):  # a frame's latency holds its children's
                d = ff[i][0]
                j = i + 1
                while j < n and ff[j][0] > d:
                    if ff[j][0] == d + 1:
                        lat[i] += lat[j]
                    j += 1
            if cause is None and lat[0] >= GOOD_LIMIT_NS:
                return  # good trees over 50 ms are not sampled
            ts = np.zeros(n)
            stack: list[list[float]] = []  # open frames: [depth, where the next child enters]
            for i, (d, _, _) in enumerate(ff):
                while stack and stack[-1][0] >= d:
                    stack.pop()
                ts[i] = stack[-1][1] if stack else float(h.mono_ns(t))
                if stack:
                    stack[-1][1] = ts[i] + lat[i] + 300.0
                stack.append([d, ts[i] + 500.0])
            ts_ns = ts.astype(np.int64)
            lat_ns: list[int | None] = [int(x) for x in lat]
            t_start = T0 + dt.timedelta(seconds=t)
            t_end = t_start + dt.timedelta(microseconds=float(lat[0]) / 1000.0)
        else:
            tick = (h.mono_ns(t) // TICK_NS) * TICK_NS
            ts_ns = np.full(n, tick, dtype=np.int64)
            lat_ns = [None] * n
            t_start = t_end = T0 + dt.timedelta(seconds=t) - dt.timedelta(microseconds=(h.mono_ns(t) - tick) / 1000.0)
        self.seq += 1
        lost = 0
        if cause is not None and cause[0] == "dmabuf_fence_timeout" and rng.random() < 0.3:
            ff, ts_ns, lat_ns, lost = ff[:-1], ts_ns[:-1], lat_ns[:-1], 1  # the record ran out of room
            n -= 1
        tid = life.pid + (0 if rng.random() < 0.7 else int(rng.integers(1, 60)))
        trace_id = f"{h.name}/{h.mono_ns(0) & 0xFFFFFF:06x}-{self.seq:07d}"
        root_err = ff[0][2]
        c = self.cols
        for i, (d, p, e) in enumerate(ff):
            c["trace_id"].append(trace_id)
            c["seq"].append(i)
            c["ts_ns"].append(int(ts_ns[i]))
            c["pid"].append(life.pid)
            c["tid"].append(tid)
            c["ppid"].append(1 if life.comm == "rdma-exporter" else 3000 + h.idx)
            c["comm"].append(life.comm)
            c["probe"].append(p)
            c["layer"].append(layer_of(p))
            c["depth"].append(d)
            c["ret"].append(-ERRNO_NUM[e] if e else 0)
            c["errno"].append(e)
            c["latency_ns"].append(lat_ns[i])
            c["arg"].append(variant if (i == 0 and op == "modify_qp") else None)
            c["kind"].append("good" if cause is None else "failure")
            c["command"].append(op)
            c["exit_status"].append(-ERRNO_NUM[root_err] if root_err else 0)
            c["start_time"].append(t_start)
            c["end_time"].append(t_end)
            c["host"].append(h.name)
            c["kernel_release"].append(h.kernel(t))
            c["lost_events"].append(lost)
            c["job_id"].append(None if life.comm == "rdma-exporter" else life.job)
            c["repeat_count"].append(None if repeat == 1 else repeat)
        if cause is None:
            self.truth.append(dict(trace_id=trace_id, host=h.name, kind="good", root_cause=None, bifurcation_probe=None,
                                   bifurcation_errno=None, origin_layer=None, expected_error=False,
                                   held_out=False))
        else:
            rc, origin, errno = cause
            self.truth.append(dict(trace_id=trace_id, host=h.name, kind="failure", root_cause=rc,
                                   bifurcation_probe=origin, bifurcation_errno=errno, origin_layer=layer_of(origin),
                                   expected_error=rc is None, held_out=False))


# ------------------------------------------------------------------------------ behaviour
def run_life(rec: Recorder, h: Host, life: Life, memlock: bool) -> None:
    rng, H, g = rec.rng, rec.fleet.horizon, GENS[h.gen]
    t = max(life.start, 0.0)
    fault = ROOT_CAUSES.get(life.cause or "")

    def fail_of(cause: str) -> tuple:
        return (ROOT_CAUSES[cause][2], ROOT_CAUSES[cause][3], cause, False)

    def routine(name: str, swallowed: bool = False) -> tuple:
        return (ROUTINE[name][2], ROUTINE[name][3], None, swallowed)

    # initialisation, a few ms per call; a fault at init ends the life at its failing call
    if life.init:
        steps: list[tuple[str, str, tuple | None]] = [("query_port", "", None)]
        steps += [("query_gid", "", None)] * 4 + [("query_gid", "", routine("gid_slot_empty"))] * 12
        steps += [("alloc_pd", "", None), ("reg_mr", "host", None), ("reg_mr", "host", None)]
        if memlock:
            steps += [("reg_mr", "host", fail_of("memlock_rlimit"))]
        if h.gen == "ofed":
            steps += [("reg_mr", "gpu", None)]
        elif h.gen == "upstream":
            steps += [("reg_mr", "gpu", routine("no_peer_memory")), ("reg_dmabuf_mr", "gpu", None)]
        else:
            steps += [("reg_dmabuf_mr", "gpu", None)]
        steps += [("create_cq", "", None)] * 2
        if life.jtype != "torch" and g["vendor"] == "mlx5":  # UCX asks mlx5 devices for DC first
            steps += [("create_qp", "dc", routine("dc_unsupported") if not g["dct"] else None)]
        for _ in range(4):
            if life.jtype == "ray" and rng.random() < 0.3:
                steps += [("create_qp", "rc", routine("rdmacg_retry"))] * int(rng.integers(1, 4))
            steps += [("create_qp", "rc", None),
                      ("modify_qp", "RESET->INIT", None if g["counters"] else routine("counter_auto_unsupported", True)),
                      ("modify_qp", "INIT->RTR", None), ("modify_qp", "RTR->RTS", None)]
        if life.at_init and fault is not None:
            cause = life.cause
            if cause == "nic_cmd_interface_dead":
                op = str(rng.choice(["alloc_pd", "create_cq", "create_qp"]))
                k = next(i for i, s in enumerate(steps) if s[0] == op)
                steps = steps[:k] + [(op, "rc" if op == "create_qp" else "", (FW_ORIGIN[op], "EIO", cause, False))]
            elif cause == "ofed_upgrade_lost_dct" and life.jtype == "torch":
                k = next(i for i, s in enumerate(steps) if s[0] == "create_qp")
                steps = steps[:k] + [("create_qp", "dc", fail_of(cause))]  # NCCL's UCX plugin set to DC here
            else:
                k = next(i for i, s in enumerate(steps) if (s[0], s[1]) == fault[:2])
                steps = steps[:k] + [(fault[0], fault[1], fail_of(cause))]
        for op, var, f in steps:
            rec.call(h, life, t, op, var, f)
            t += float(rng.uniform(0.0005, 0.004))
            if f is not None and f[2] is not None:  # a fault: the rank exits
                return
        if memlock:
            return
    if life.at_init:
        return
    end = min(life.end, H)
    # steady state: routine errors (Poisson), and sampled good calls inside capture windows
    if end <= t:
        return
    per_hour = (end - t) / 3600.0
    if life.jtype in ("ray", "mpi"):
        for x in rng.uniform(t, end, rng.poisson(1.0 * per_hour)):
            rec.call(h, life, float(x), "dereg_mr", "", routine("double_dereg"))
    if life.jtype == "ray":
        for x in rng.uniform(t, end, rng.poisson(2.0 * per_hour)):
            for j in range(int(rng.integers(1, 4))):
                rec.call(h, life, float(x) + j * 0.05, "create_qp", "rc", routine("rdmacg_retry"))
    if not g["counters"]:
        for x in rng.uniform(t, end, rng.poisson(3.0 * per_hour)):
            rec.call(h, life, float(x), "modify_qp", "RESET->INIT", routine("counter_auto_unsupported", True))
    first = np.ceil((t - h.wphase) / WINDOW_EVERY_S)
    w = h.wphase + first * WINDOW_EVERY_S
    while w < end:
        for x in np.sort(rng.uniform(w, min(w + WINDOW_LEN_S, end), rng.poisson(1.5))):
            op, var, _ = MIX[int(rng.choice(len(MIX), p=MIX_P))]
            if op == "reg_mr" and var == "gpu" and not g["peer"]:
                op = "reg_dmabuf_mr"
            rec.call(h, life, float(x), op, var, sampled=True)
        w += WINDOW_EVERY_S
    if life.fate == "fault" and fault is not None:
        rec.call(h, life, life.end, fault[0], fault[1], fail_of(life.cause))
    elif life.fate == "done":
        for op in ("destroy_qp", "destroy_qp", "dereg_mr", "dereg_mr", "dealloc_pd"):
            rec.call(h, life, life.end, op)
            life.end += 0.002
        if life.jtype in ("ray", "mpi") and rng.random() < 0.2:
            rec.call(h, life, life.end, "dereg_mr", "", routine("double_dereg"))


def exporter(rec: Recorder, h: Host) -> None:
    """The GID-table exporter: a full scan a minute (12 of 16 slots empty), or ~100k empty-slot
    hits an hour on a noisy host."""
    life = Life(rec.fleet._pid(), "rdma-exporter", "", "daemon", -1e5, 1e9, False, "cut")
    H, rng = rec.fleet.horizon, rec.rng
    if h.noisy:  # per snapshot, aggregated: the tracer keeps K trees per signature anyway
        for s in np.arange(h.phase, H, SNAP_S):
            n = int(rng.poisson(100_000 / 3600 * SNAP_S))
            rec.call(h, life, float(s) + 1.0, "query_gid", "", ROUTINE_FAIL, count=n)
            if h.in_window(float(s) + 1.0):
                rec.call(h, life, float(s) + 1.2, "query_gid", sampled=True)
        return
    for s in np.arange(float(rng.uniform(0, 60)), H, 60.0):
        for j in range(16):
            rec.call(h, life, float(s) + j * 0.001, "query_gid", "", ROUTINE_FAIL if j >= 4 else None)


ROUTINE_FAIL = (ROUTINE["gid_slot_empty"][2], ROUTINE["gid_slot_empty"][3], None, False)


# ------------------------------------------------------------------------------ counters
def counters(rec: Recorder, h: Host, lives: list[Life]) -> pl.DataFrame:
    """5 s snapshot counters of one host: every call counted (recorded or not), the failures of
    every failing frame, ring-buffer losses; idle hosts report zeros."""
    rng, H = rec.rng, rec.fleet.horizon
    times = np.arange(h.phase + SNAP_S, H + SNAP_S, SNAP_S)
    keep = np.array([h.up(t - SNAP_S / 2) for t in times])
    idx = np.nonzero(keep)[0]
    times = times[idx]
    probes = probes_of(h.gen)
    # ranks alive per snapshot
    alive = np.zeros(len(times))
    for life in lives:
        a, b = np.searchsorted(times, [max(life.start, 0), min(life.end, H)])
        alive[a:b] += 1
    per_call = defaultdict(float)
    for op, var, share in MIX:
        if op == "reg_mr" and var == "gpu" and not GENS[h.gen]["peer"]:
            op = "reg_dmabuf_mr"
        for _, p in tree(op, h.gen, var):
            per_call[p] += share
    gid_rate = 100_000 / 3600 / 3 if h.noisy else 0.0  # the noisy exporter's populated-slot reads
    pos = {p: j for j, p in enumerate(probes)}
    row_of = np.full(int(idx.max()) + 1 if len(idx) else 0, -1, dtype=np.int64)
    row_of[idx] = np.arange(len(idx))
    fails = np.zeros((len(probes), len(times)), dtype=np.int64)
    sparse: dict[str, list] = defaultdict(list)  # (row, errno, count) of the errno histograms
    for (sn, p), hist in rec.fails_by_host.get(h.idx, {}).items():
        if sn >= len(row_of) or row_of[sn] < 0:
            continue  # (a snapshot the host did not write: down, or in a gap)
        k = int(row_of[sn])
        fails[pos[p], k] += sum(hist.values())
        for e, c in hist.items():
            sparse["row"].append(pos[p] * len(times) + k)
            sparse["errno"].append(e)
            sparse["count"].append(c)
    lam = np.outer([per_call.get(p, 0.0) for p in probes], alive * RANK_CALLS_PER_S * SNAP_S)
    gid = np.array([p in ("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "rdma_get_gid_attr") for p in probes])
    lam[gid] += gid_rate * SNAP_S
    explicit = np.zeros_like(fails)
    for (sn, p), c in rec.calls_by_host.get(h.idx, {}).items():
        if sn < len(row_of) and row_of[sn] >= 0:
            explicit[pos[p], int(row_of[sn])] += c
    inv = rng.poisson(lam) + explicit
    n = len(times) * len(probes)
    lost = np.array([rec.lost.get((h.idx, int(sn)), 0) for sn in idx], dtype=np.int64)
    ts = np.tile(times, len(probes))
    upgraded = GENS[h.gen].get("upgraded", "")
    df = pl.DataFrame({
        "snapshot_time": pl.Series(int(T0.timestamp()) * 10**9 + np.round(ts * 1e9).astype(np.int64))
        .cast(pl.Datetime("ns", "UTC")),
        "kernel_release": np.where(ts >= (h.reboot if h.reboot is not None else np.inf), upgraded,
                                   GENS[h.gen]["kernel"]),
        "probe": np.repeat(np.array(probes, dtype=object), len(times)),
        "layer": np.repeat(np.array([layer_of(p) for p in probes], dtype=object), len(times)),
        "invocations": inv.reshape(-1),
        "failures": fails.reshape(-1),
        "lost_records": np.tile(lost, len(probes)),
    }).with_row_index("row")
    hist = (pl.DataFrame(sparse, schema={"row": pl.UInt32, "errno": pl.String, "count": pl.Int64})
            .sort("row", "errno").group_by("row", maintain_order=True)
            .agg(pl.struct("errno", "count").alias("errno_counts")))
    df = df.join(hist, on="row", how="left").drop("row")
    return df.with_columns(host=pl.lit(h.name), interval_s=pl.lit(SNAP_S), vendor=pl.lit(GENS[h.gen]["vendor"]),
                           probe_set=pl.lit("rdma"), live=pl.lit(True))[:n]


# ------------------------------------------------------------------------------ entry point
def generate(out_dir: str | Path, hosts: int = 80, hours: float = 2.0, seed: int = 6) -> dict:
    """Write the dataset under `out_dir` and return a summary: counts, and per root cause the
    hosts it was put on (`fault_hosts`; `lost_host` has the firmware fault in its counters only)."""
    out = Path(out_dir)
    fleet = Fleet(hosts, hours, seed)
    rec = Recorder(fleet)
    memlock_job = None
    all_lives: dict[int, list[Life]] = {}
    for p, members in enumerate(fleet.pods):
        jobs = fleet.pod_jobs(p)
        H = fleet.horizon
        if p == fleet.memlock_pod and not any(0.1 * H < j[2] < 0.8 * H for j in jobs):
            # a job long enough to span the window: it ends at 40 % and the next one starts then
            k = next(i for i, j in enumerate(jobs) if j[2] <= 0.4 * H < j[3])
            job, jtype, a, b = jobs[k]
            fleet.jobs += 1
            jobs[k:k + 1] = [(job, jtype, a, 0.4 * H), (f"{880000 + fleet.jobs}", jtype, 0.4 * H + 120, b)]
        if p == fleet.memlock_pod:  # the pod's first job that starts inside the window
            memlock_job = next((j[0] for j in jobs if 0.1 * fleet.horizon < j[2] < 0.8 * fleet.horizon), None)
        for i in members:
            h = fleet.hosts[i]
            lives = fleet.lives(h, jobs)
            if memlock_job is not None and p == fleet.memlock_pod:
                extra = []
                for life in lives:  # the rank dies at init; the scheduler requeues it twice
                    if life.job == memlock_job and life.init:
                        life.fate, life.cause, life.at_init = "fault", "memlock_rlimit", True
                        for r in (1, 2):
                            extra.append(Life(fleet._pid(), life.comm, life.job, life.jtype, life.start + 120 * r,
                                              life.start + 120 * r + 1, True, "fault", "memlock_rlimit", True))
                lives += extra
                if any(x.cause == "memlock_rlimit" for x in lives):
                    fleet.fault_hosts["memlock_rlimit"].add(h.name)
            all_lives[i] = lives
            for life in lives:
                run_life(rec, h, life, life.cause == "memlock_rlimit")
    for h in fleet.hosts:
        if not h.idle:
            exporter(rec, h)
    rec.flush_failures()
    events = pl.DataFrame(dict(rec.cols), schema_overrides={"start_time": pl.Datetime("ns", "UTC"),
                                                            "end_time": pl.Datetime("ns", "UTC")}, strict=False)
    events = events.with_columns(pl.col("depth").cast(pl.Int16), pl.col("pid").cast(pl.Int32),
                                 pl.col("tid").cast(pl.Int32), pl.col("ppid").cast(pl.Int32),
                                 pl.col("exit_status").cast(pl.Int32))
    truth = pl.DataFrame(rec.truth, schema=schema.polars_schema("truth"))
    for h in fleet.hosts:
        c = counters(rec, h, all_lives.get(h.idx, []))
        c = c.with_columns(pl.col("snapshot_time").dt.date().cast(pl.String).alias("_d"))
        for (day,), part in c.group_by("_d"):
            part = part.drop("_d")
            f = schema.write_partition(part, out, "counters", day, h.name, "part-0.parquet", durable=False)
            if h.idx % 2 == 0:  # half the hosts get their writer's 15-minute summaries
                schema.write_counter_buckets(f, part, durable=False)
            if h.idx == 1:  # a spool re-sent after a crash: the last 10 minutes arrive twice
                dup = part.filter(pl.col("snapshot_time") > part["snapshot_time"].max() - dt.timedelta(minutes=10))
                schema.write_partition(dup, out, "counters", day, h.name, "part-1-resent.parquet", durable=False)
    if events.height:
        events = events.with_columns(pl.col("start_time").dt.date().cast(pl.String).alias("_d"))
        for (day, host), part in events.group_by("_d", "host"):
            schema.write_partition(part.drop("_d"), out, "events", day, host, "part-0.parquet", durable=False)
        days = events.group_by("trace_id").agg(pl.col("_d").first(), pl.col("host").first())
        for (day, host), part in truth.join(days.drop("host"), on="trace_id").group_by("_d", "host"):
            schema.write_partition(part.drop("_d"), out, "truth", day, host, "part-0.parquet", durable=False)
    lost = next((h.name for h in fleet.hosts if h.lost_all), None)
    # hosts with a real problem and the errnos it shows: an alert anywhere else is a false one
    alert_hosts: dict[str, list[str]] = defaultdict(list)
    for cause, names in fleet.fault_hosts.items():
        for name in names:
            alert_hosts[name].append(ROOT_CAUSES[cause][3])
    summary = {
        "hosts": len(fleet.hosts),
        "traces": truth.height,
        "failure_traces": truth.filter(pl.col("kind") == "failure").height,
        "routine_traces": truth.filter(pl.col("expected_error")).height,
        "fault_traces": {k: v for k, v in truth.filter(pl.col("root_cause").is_not_null())
                         .group_by("root_cause").len().iter_rows()},
        "fault_hosts": {k: sorted(v - {lost}) for k, v in fleet.fault_hosts.items()},
        "lost_host": lost,
        "noisy_hosts": sorted(h.name for h in fleet.hosts if h.noisy),
        "idle_hosts": sorted(h.name for h in fleet.hosts if h.idle),
        "slow_host": next(h.name for h in fleet.hosts if h.slow_qp),
        "events": events.height,
        # acceptable: an alert on a host with a fault naming its errno is no false one ...
        "alert_hosts": {k: sorted(set(v)) for k, v in sorted(alert_hosts.items())},
        # ... required: the dead command interfaces, down on every create_qp to the window's end
        # (the lost host's seen in its counters only). The spine switch and the OFED upgrade
        # fail many hosts alike (their clusters' cause), the fence timeouts pass within the
        # hour, the peer client's get_pages is one failure: an alert there is welcome, no miss
        "required_alert_hosts": {name: ["EIO"] for name in sorted(fleet.fault_hosts["nic_cmd_interface_dead"])},
    }
    (out / "fleetgen6.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


if __name__ == "__main__":  # python -m tests.fleetgen6.generator OUT [hosts hours seed]
    import sys

    args = sys.argv[1:]
    print(json.dumps(generate(args[0], *(int(a) for a in args[1:2]), *(float(a) for a in args[2:3]),
                              *(int(a) for a in args[3:4])), indent=1))

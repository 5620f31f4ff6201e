"""fleetgen29's fleet, written as another team's collector ("argus") writes it. See __init__.py.

Everything here comes from reference/rdma_control_path.yaml (call chains, which function returns
which errno), tracer/schema.py (the tables, the layout and the freedoms it leaves) and the docs.
The only tracebase module imported is tracer.schema.

The simulation is per host and in true time (ns since the epoch); what a host writes is in its
own clocks: wall times (start_time, end_time, snapshot_time, the date partitions) run `skew_s`
seconds off true time, ts_ns is the host's monotonic clock since its boot.

The truth: a record of a family is labelled with it, its bifurcation is its origin (the failing
leaf: every edge of the failing chain down to it is an edge of the same operation's good calls
under the same probe set, and each probe set's hosts record good calls of every operation in
their capture windows), its origin layer the leaf's. Root causes kill the rank (no later record of
its pid; the launcher kills the job's other ranks without a kernel error of their own), routine
families never do (expected_error). Only recorded traces have truth rows; a good call outside a
capture window is only counted. argus neither aggregates nor loses records, so each family's
records are exactly the failures the counters count at its origin probe.
"""

from __future__ import annotations

import bisect
import datetime as dt
import random
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tracer.schema import COUNTERS, EVENTS, TRUTH, partition_path, write_partition, write_table

# --------------------------------------------------------------------------------------------
# the families: (origin probe, errno, origin layer)
# --------------------------------------------------------------------------------------------
ROOT_CAUSES = {
    # INIT->RTR of a RoCEv2 QP on a bonded port: the bond was re-created under the GID table by
    # NetworkManager, and for a few minutes the GID entry has no netdev, so the LAG slave lookup
    # fails (rdma_read_gid_attr_ndev_rcu -> ERR_PTR(-ENODEV), returned by
    # rdma_lag_get_ah_roce_slave, passed up by _ib_modify_qp). Fatal to the rank; 4 hosts.
    "bond_gid_ndev_gone": ("rdma_read_gid_attr_ndev_rcu", "ENODEV", "core"),
    # one host's VF: after a PF driver update the PF no longer allows the ALLOC_PD opcode for
    # this VF; the command returns -ENXIO (cmd_status_to_err: "opcode not allowed"). From 50
    # minutes into the window every new rank dies at its first ibv_alloc_pd; the scheduler
    # requeues the job every one to two minutes (a crash loop on one host).
    "vf_alloc_pd_opcode_refused": ("mlx5_cmd_exec", "ENXIO", "driver"),
}
ROUTINE = {
    # rdma-core enumerating GID entries 0..7 (QUERY_GID_ENTRY) at each rank's first connect;
    # the empty slots answer -ENODATA and the scan goes on. Every host, every rank.
    "gid_scan_empty_slot": ("rdma_get_gid_attr", "ENODATA", "core"),
    # NCCL's dma-buf support test at init: the fleet's kernel is built without
    # CONFIG_INFINIBAND_ON_DEMAND_PAGING, so mlx5_ib_reg_user_mr_dmabuf answers -EOPNOTSUPP and
    # NCCL registers with ibv_reg_mr instead. Every rank of every host, once.
    "nccl_dmabuf_probe_no_odp": ("mlx5_ib_reg_user_mr_dmabuf", "EOPNOTSUPP", "driver"),
    # the node health agent, built against old rdma-core headers, asks ibv_query_device_ex with a
    # response buffer shorter than comp_mask + response_length: -EINVAL from
    # mlx5_ib_query_device, then it asks the legacy ibv_query_device. Every host, every minute.
    "health_agent_short_udata": ("mlx5_ib_query_device", "EINVAL", "driver"),
}
ERRNO = {"ENODEV": 19, "ENXIO": 6, "ENODATA": 61, "EOPNOTSUPP": 95, "EINVAL": 22}
KERNEL = "6.8.12-argus.4.el9.x86_64"
VENDOR = "mlx5"
HZ_TICK_NS = 4_000_000
T0 = dt.datetime(2026, 4, 18, 22, 40, tzinfo=dt.UTC)  # the window crosses midnight
WINDOW_PERIOD_S, WINDOW_LEN_S = 180, 30  # argus: a 30 s capture window every 3 minutes
RANKS = 4
GID_SLOTS = 8

# --------------------------------------------------------------------------------------------
# call trees from the reference (entry order). A node: (fn, layer, children, key)
# --------------------------------------------------------------------------------------------


def N(fn: str, layer: str, *children, key: str | None = None):  # noqa: N802 (a tree literal)
    return (fn, layer, tuple(children), key or fn)


UMEM = N("ib_umem_get", "core", N("pin_user_pages_fast", "core"), N("sg_alloc_append_table_from_pages", "core"))
UOBJ = N("rdma_alloc_begin_uobject", "core", N("ib_rdmacg_try_charge", "core"))
IOCTL = ("ib_uverbs_ioctl", "ib_uverbs_cmd_verbs", "ib_uverbs_run_method")


def _ioctl(*inner):
    """The RDMA_VERBS_IOCTL dispatch chain around a method's handler (common.dispatch_ioctl)."""
    return N("ib_uverbs_ioctl", "uverbs", N("ib_uverbs_cmd_verbs", "uverbs", N("ib_uverbs_run_method", "uverbs",
                                                                                 *inner)))


def _modify(transition: str):
    core = []
    if transition == "RTR":
        core = [
            N("rdma_fill_sgid_attr", "core", N("rdma_get_gid_attr", "core")),
            N("ib_resolve_eth_dmac", "core", N("rdma_check_gid_user_access", "core"),
              N("ib_resolve_unicast_gid_dmac", "core", N("rdma_addr_find_l2_eth_by_grh", "core"))),
            N("rdma_lag_get_ah_roce_slave", "core", N("rdma_read_gid_attr_ndev_rcu", "core"),
              N("rdma_get_xmit_slave_udp", "core")),
        ]
    elif transition == "INIT":
        core = [N("rdma_counter_bind_qp_auto", "core")]  # default counter mode: returns 0 at once
    inner = [N("mlx5_set_path", "driver")] if transition == "RTR" else []
    driver = N("mlx5_ib_modify_qp", "driver", N("ib_modify_qp_is_ok", "core"),
               N("__mlx5_ib_modify_qp", "driver", *inner, N("mlx5_core_qp_modify", "driver", N("mlx5_cmd_exec", "driver"))))
    return N("ib_uverbs_modify_qp", "uverbs", N("uverbs_request", "uverbs"),
             N("modify_qp", "uverbs", N("rdma_lookup_get_uobject", "core"),
               N("ib_modify_qp_with_udata", "core", N("_ib_modify_qp", "core", *core, driver))))


OPS = {
    "query_port": ("ibv_query_port", N(
        "ib_uverbs_query_port", "uverbs", N("ib_query_port", "core", N("__ib_query_port", "core", N(
            "mlx5_ib_query_port", "driver", N("mlx5_query_port_roce", "driver")))))),
    "query_device": ("ibv_query_device", N(
        "ib_uverbs_query_device", "uverbs", N("ib_uverbs_get_ucontext_file", "uverbs"),
        N("copy_query_dev_fields", "uverbs"))),
    "query_device_ex": ("ibv_query_device_ex", N(
        "ib_uverbs_ex_query_device", "uverbs", N("mlx5_ib_query_device", "driver"))),
    "query_gid": ("ibv_query_gid_ex", _ioctl(N(
        "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "uverbs", N("rdma_get_gid_attr", "core"),
        N("rdma_read_gid_attr_ndev_rcu", "core")))),
    "alloc_pd": ("ibv_alloc_pd", N(
        "ib_uverbs_alloc_pd", "uverbs", N("uverbs_request", "uverbs"), UOBJ,
        N("mlx5_ib_alloc_pd", "driver", N("mlx5_cmd_exec", "driver")), N("rdma_restrack_add", "core"),
        N("uverbs_response", "uverbs"))),
    "reg_dmabuf_mr": ("ibv_reg_dmabuf_mr", _ioctl(
        UOBJ, N("rdma_lookup_get_uobject", "core"),
        N("ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "uverbs", N("mlx5_ib_reg_user_mr_dmabuf", "driver")),
        N("uverbs_finalize_object", "core"))),
    "reg_mr": ("ibv_reg_mr", N(
        "ib_uverbs_reg_mr", "uverbs", N("uverbs_request", "uverbs"), UOBJ, N("rdma_lookup_get_uobject", "core"),
        N("mlx5_ib_reg_user_mr", "driver", N("mlx5r_umr_resource_init", "driver"), UMEM,
          N("create_real_mr", "driver", N("alloc_cacheable_mr", "driver", N("mkey_cache_ent_from_rb_key", "driver")),
            N("mlx5r_umr_update_mr_pas", "driver"))),
        N("rdma_restrack_add", "core"), N("uverbs_response", "uverbs"))),
    "create_cq": ("ibv_create_cq", N(
        "ib_uverbs_create_cq", "uverbs", N("uverbs_request", "uverbs"),
        N("create_cq", "uverbs", UOBJ,
          N("mlx5_ib_create_cq", "driver", N("create_cq_user", "driver", UMEM, N("mlx5_ib_db_map_user", "driver")),
            N("mlx5_comp_eqn_get", "driver"), N("mlx5_core_create_cq", "driver")),
          N("rdma_restrack_add", "core"), N("uverbs_response", "uverbs")))),
    "create_qp": ("ibv_create_qp", N(
        "ib_uverbs_create_qp", "uverbs", N("uverbs_request", "uverbs"),
        N("create_qp", "uverbs", UOBJ, N("rdma_lookup_get_uobject", "core"), N("rdma_lookup_get_uobject", "core"),
          N("ib_create_qp_user", "core", N("create_qp", "core", N(
              "mlx5_ib_create_qp", "driver", N("check_qp_type", "driver"), N("process_create_flags", "driver"),
              N("create_qp", "driver", N("create_user_qp", "driver", N("set_rq_size", "driver"),
                                         N("_create_user_qp", "driver", UMEM, N("mlx5_ib_db_map_user", "driver")),
                                         N("mlx5_qpc_create_qp", "driver", N("mlx5_cmd_exec", "driver"))))),
              N("ib_create_qp_security", "core"), N("rdma_restrack_add", "core"))),
          N("ib_qp_usecnt_inc", "core"), N("uverbs_response", "uverbs")))),
    "modify_init": ("ibv_modify_qp", _modify("INIT")),
    "modify_rtr": ("ibv_modify_qp", _modify("RTR")),
    "modify_rts": ("ibv_modify_qp", _modify("RTS")),
}
ARG = {"modify_init": "IBV_QPS_INIT", "modify_rtr": "IBV_QPS_RTR", "modify_rts": "IBV_QPS_RTS"}
# (family) -> (operation, the failing leaf's fn, errno)
FAILURES = {
    "bond_gid_ndev_gone": ("modify_rtr", "rdma_read_gid_attr_ndev_rcu", "ENODEV"),
    "vf_alloc_pd_opcode_refused": ("alloc_pd", "mlx5_cmd_exec", "ENXIO"),
    "gid_scan_empty_slot": ("query_gid", "rdma_get_gid_attr", "ENODATA"),
    "nccl_dmabuf_probe_no_odp": ("reg_dmabuf_mr", "mlx5_ib_reg_user_mr_dmabuf", "EOPNOTSUPP"),
    "health_agent_short_udata": ("query_device_ex", "mlx5_ib_query_device", "EINVAL"),
}

# probe sets: the collector runs three, by host. Cleanup paths are never probed (RDMATracer's
# rule), nor are functions outside these call chains.
def _fns(node) -> list[str]:
    fn, _, children, _ = node
    return [fn] + [f for c in children for f in _fns(c)]


EVERY_FN = sorted({fn for _, tree in OPS.values() for fn in _fns(tree)})
# "std": the read-only static helpers are not probed (they may be inlined)
STD_DROPS = {"uverbs_request", "uverbs_response", "check_qp_type", "process_create_flags", "set_rq_size",
             "mkey_cache_ent_from_rb_key", "copy_query_dev_fields", "mlx5_query_port_roce", "ib_uverbs_cmd_verbs"}
# "lean": exported/global symbols and the uverbs handlers only (fentry on exported symbols)
LEAN_DROPS = STD_DROPS | {
    "create_qp", "create_cq", "modify_qp", "_ib_modify_qp", "rdma_fill_sgid_attr", "ib_resolve_eth_dmac",
    "ib_resolve_unicast_gid_dmac", "__ib_query_port", "create_cq_user", "create_user_qp", "_create_user_qp",
    "create_real_mr", "alloc_cacheable_mr", "__mlx5_ib_modify_qp", "mlx5_set_path", "rdma_get_xmit_slave_udp",
    "ib_uverbs_run_method", "uverbs_finalize_object"}
PROBE_SETS = {
    "argus-full": frozenset(EVERY_FN),
    "argus-std": frozenset(EVERY_FN) - STD_DROPS,
    "argus-lean": frozenset(EVERY_FN) - LEAN_DROPS,
}
for _name, _probes in PROBE_SETS.items():  # every family's origin is probed everywhere
    assert all(probe in _probes for probe, _, _ in {**ROOT_CAUSES, **ROUTINE}.values()), _name
LAYER = {}
for _, _tree in OPS.values():
    _stack = [_tree]
    while _stack:
        _fn, _layer, _children, _ = _stack.pop()
        LAYER.setdefault(_fn, _layer)
        _stack.extend(_children)

# base latency of a function's own work (ns), inside a capture window
OWN_NS = {"mlx5_cmd_exec": 38_000, "pin_user_pages_fast": 21_000, "mlx5_core_create_cq": 30_000,
          "mlx5r_umr_update_mr_pas": 14_000, "rdma_addr_find_l2_eth_by_grh": 6_000, "ib_uverbs_ioctl": 1_500}


def _flatten(tree, fail_fn: str | None):
    """Entry-order frames of a call: [(depth, fn, layer, failed, path-index)]; with a failure the
    first `fail_fn` leaf fails, its callers pass the errno up, nothing is entered after it."""
    out = []
    state = {"failed": False}

    def walk(node, depth):
        fn, layer, children, _ = node
        i = len(out)
        out.append([depth, fn, layer, False])
        if fail_fn is not None and not children and fn == fail_fn and not state["failed"]:
            state["failed"] = True
            out[i][3] = True
            return True
        for c in children:
            if walk(c, depth + 1):
                out[i][3] = True
                return True
        return False

    walk(tree, 0)
    return out


def _variant(op: str, family: str | None):
    fail_fn, errno = (FAILURES[family][1], FAILURES[family][2]) if family else (None, None)
    frames = _flatten(OPS[op][1], fail_fn)
    if family:
        assert any(f[3] for f in frames) and frames[0][3], (op, family)
    return frames, errno


TREES = {}  # (operation[/family]) -> [(depth, fn, layer, errno)] as the full probe set records it
for _op in OPS:
    TREES[_op] = [(d, fn, layer, None) for d, fn, layer, _ in _variant(_op, None)[0]]
for _family, (_op, _, _errno) in FAILURES.items():
    TREES[f"{_op}/{_family}"] = [(d, fn, layer, _errno if failed else None)
                                 for d, fn, layer, failed in _variant(_op, _family)[0]]


def _filtered(frames, probes):
    """The frames a probe set records: unprobed functions vanish, their callees move up."""
    kept, stack = [], []  # stack: (full depth, recorded depth) of kept ancestors
    for idx, (d, fn, layer, failed) in enumerate(frames):
        while stack and stack[-1][0] >= d:
            stack.pop()
        if fn in probes:
            rec_depth = stack[-1][1] + 1 if stack else 0
            kept.append((idx, rec_depth, fn, layer, failed))
            stack.append((d, rec_depth))
    return kept


# per (op, family, probe set): the recorded frames and the counters' increments
_SHAPES: dict = {}


def _shape(op: str, family: str | None, pset: str):
    key = (op, family, pset)
    if key not in _SHAPES:
        frames, errno = _variant(op, family)
        kept = _filtered(frames, PROBE_SETS[pset])
        assert kept and kept[0][1] == 0 and sum(1 for k in kept if k[1] == 0) == 1, key
        calls = Counter(fn for _, _, fn, _, _ in kept)
        fails = Counter(fn for _, _, fn, _, failed in kept if failed)
        _SHAPES[key] = (frames, kept, errno, calls, fails)
    return _SHAPES[key]


def _timing(frames, rng: random.Random):
    """Entry offsets and latencies (ns) of every frame of the full tree (unprobed ones take
    time too): a frame's own work before its first callee, its callees, a little after."""
    n = len(frames)
    own = [int(OWN_NS.get(fn, 900) * rng.uniform(0.6, 1.5)) for _, fn, _, _ in frames]
    entry, lat = [0] * n, [0] * n
    children = defaultdict(list)
    stack = []
    for i, (d, *_rest) in enumerate(frames):
        while stack and frames[stack[-1]][0] >= d:
            stack.pop()
        if stack:
            children[stack[-1]].append(i)
        stack.append(i)

    def place(i, at):
        entry[i] = at
        t = at + own[i] // 2
        for c in children[i]:
            t = place(c, t)
        lat[i] = t + own[i] - own[i] // 2 - at
        return at + lat[i]

    place(0, 0)
    return entry, lat


# --------------------------------------------------------------------------------------------
# hosts
# --------------------------------------------------------------------------------------------
def _ns(t: dt.datetime) -> int:
    return int(t.timestamp()) * 1_000_000_000


class Host:
    def __init__(self, i: int, rng: random.Random):
        rack, slot = divmod(i, 8)
        self.name = f"gpu{rack + 1:02d}-{slot + 1:02d}.fra4.hpc.example.net"
        self.i = i
        self.pset = ("argus-full", "argus-std", "argus-lean")[i % 3]
        self.interval_s = (15, 30, 60, 10)[(i // 3) % 4]  # not 5 s
        self.skew_ns = int(rng.uniform(-45, 45) * 1e9)  # wall clock seconds off true time
        self.boot_ns = _ns(T0) - int(rng.uniform(2, 40) * 86400e9)
        self.phase_ns = int(rng.uniform(0, self.interval_s) * 1e9)
        self.window_off_ns = int(rng.uniform(0, WINDOW_PERIOD_S) * 1e9)
        self.postorder = (i // 2) % 3 == 1  # collector v2: frames written as they return
        self.store_host = i % 4 == 0  # the host column stored in its files too
        self.lite = i % 5 == 2  # lite mode: no job metadata, no kernel release on events
        self.empty_slots = set(range(4, GID_SLOTS)) if i % 2 else {3, 5, 6, 7}
        self.metadata = None if self.lite else [
            {"key": "nic_fw", "value": "28.41.1000"}, {"key": "rack", "value": f"gpu{rack + 1:02d}"},
            {"key": "site", "value": "fra4"}]
        self.compression = ("zstd", "snappy", "lz4")[i % 3]
        self.resends = i % 10 == 3

    def wall(self, t_ns: int) -> int:
        return t_ns + self.skew_ns

    def mono(self, t_ns: int) -> int:
        return t_ns - self.boot_ns

    def timed(self, t_ns: int) -> bool:
        k = (t_ns - _ns(T0) - self.window_off_ns) % (WINDOW_PERIOD_S * 1_000_000_000)
        return k < WINDOW_LEN_S * 1_000_000_000


class Sim:
    """One host's calls in true time: (t, op, family or None, pid, comm, job)."""

    def __init__(self, host: Host, rng: random.Random, end_ns: int, *, bond_flaps=(), vf_onset=None,
                 job_ids=None):
        self.h, self.rng, self.end = host, rng, end_ns
        self.calls: list[tuple] = []
        self.flaps = list(bond_flaps)
        self.vf_onset = vf_onset
        self.pid = rng.randrange(20_000, 60_000)
        self.job_ids = job_ids
        self.deaths: list[tuple] = []  # (t, family, pid)

    def new_pid(self) -> int:
        self.pid += self.rng.randrange(3, 60)
        return self.pid

    def run(self):
        rng = self.rng
        agent = self.new_pid()
        t = _ns(T0) + int(rng.uniform(0, 60e9))
        while t < self.end:  # the health agent, every minute
            self.calls.append((t, "query_device_ex", "health_agent_short_udata", agent, "fabric-healthd", None))
            self.calls.append((t + 1_800_000, "query_device", None, agent, "fabric-healthd", None))
            self.calls.append((t + 3_900_000, "query_port", None, agent, "fabric-healthd", None))
            t += int(rng.uniform(59.5, 60.5) * 1e9)
        # jobs: one already running at T0 (its start unseen), then one after another
        t = _ns(T0)
        first = True
        while t < self.end:
            if first:
                t_end = t + int(rng.uniform(5, 30) * 60e9)
            else:
                t_end = t + int(rng.uniform(20, 45) * 60e9)
            t = self.job(t, min(t_end, self.end), started=not first)
            first = False
            t += int(rng.uniform(60, 180) * 1e9)  # the scheduler's gap / requeue delay

    def job(self, start: int, end: int, *, started: bool) -> int:
        """A single-host job of RANKS ranks from `start` to `end`; returns when it ended (earlier
        when a rank died: the launcher then kills the others)."""
        rng = self.rng
        job = str(next(self.job_ids))  # a Slurm job id
        planned: list[tuple] = []
        for r in range(RANKS):
            pid = self.new_pid()
            t = start + int((r * 0.3 + rng.uniform(0, 0.4)) * 1e9)
            if started:
                seq = [("query_device_ex", 0), ("query_port", 1_000_000), ("alloc_pd", 2_500_000),
                       ("reg_dmabuf_mr", 4_000_000), ("alloc_pd", 5_500_000), ("reg_mr", 8_000_000),
                       ("reg_mr", 21_000_000)]
                planned += [(t + dt_, op, pid, r) for op, dt_ in seq]
                planned += self.connect(t + int(rng.uniform(1.5, 3.0) * 1e9), pid, r, scan=True)
            # steady state: registrations every minute or so, a new communicator now and then
            s = t + int(rng.uniform(20, 60) * 1e9)
            while s < end:
                planned.append((s, "reg_mr", pid, r))
                s += int(rng.uniform(40, 80) * 1e9)
            c = t + int(rng.uniform(3, 9) * 60e9)
            while c < end:
                planned += self.connect(c, pid, r, scan=False)
                c += int(rng.uniform(6, 12) * 60e9)
        planned.sort()
        died = None  # when the launcher killed what was left of the job
        dead: set[int] = set()
        for t, op, pid, _r in planned:
            if t >= end or (died is not None and t >= died):
                break
            if pid in dead:
                continue
            family = None
            if op == "alloc_pd" and self.vf_onset is not None and t >= self.vf_onset:
                family = "vf_alloc_pd_opcode_refused"
            elif op == "modify_rtr" and any(a <= t < b for a, b in self.flaps):
                family = "bond_gid_ndev_gone"
            elif op == "reg_dmabuf_mr":
                family = "nccl_dmabuf_probe_no_odp"
            elif op.startswith("query_gid/"):
                slot = int(op.split("/")[1])
                op = "query_gid"
                family = "gid_scan_empty_slot" if slot in self.h.empty_slots else None
            self.calls.append((t, op, family, pid, "pt_main_thread", job))
            if family in ROOT_CAUSES:  # the rank dies of it; the launcher kills the others soon after
                self.deaths.append((t, family, pid))
                dead.add(pid)
                if died is None:
                    died = t + int(rng.uniform(1.5, 3) * 1e9)
        return min(end, died) if died is not None else end

    def connect(self, t: int, pid: int, r: int, *, scan: bool) -> list[tuple]:
        """A communicator's connections: (the GID scan at the first), a CQ, two RC QPs to
        peers brought to RTS."""
        out = []
        if scan:
            for slot in range(GID_SLOTS):
                out.append((t, f"query_gid/{slot}", pid, r))
                t += 700_000
        out.append((t, "create_cq", pid, r))
        t += 3_000_000
        for _peer in range(2):
            for op in ("create_qp", "modify_init", "modify_rtr", "modify_rts"):
                out.append((t, op, pid, r))
                t += int(self.rng.uniform(1.5, 4) * 1e6)
        return out


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------
EVENT_TYPES = {f.name: f.type for f in EVENTS}


def _date(wall_ns: int) -> str:
    return dt.datetime.fromtimestamp(wall_ns / 1e9, dt.UTC).strftime("%Y-%m-%d")


def _postorder(depths: list[int]) -> list[int]:
    """Indexes of frames (entry order, with depths) in the order they returned."""
    order, stack = [], []
    for i, d in enumerate(depths):
        while stack and depths[stack[-1]] >= d:
            order.append(stack.pop())
        stack.append(i)
    while stack:
        order.append(stack.pop())
    return order


def _write_host(root: Path, h: Host, sim: Sim, rng: random.Random, counts: Counter, records: Counter,
                end_ns: int) -> dict:
    traces = []  # (date, rows dict-of-lists fragment, truth row)
    n = 0
    per_probe_snap: dict = defaultdict(lambda: [0, 0, {}])
    interval_ns = h.interval_s * 1_000_000_000
    first_close = _ns(T0) + h.phase_ns
    n_snaps = -(-(end_ns + 60_000_000_000 - first_close) // interval_ns) + 1
    # argus polls on a timer of its own: on the 15 s hosts each poll lands up to 0.3 s early or
    # late, and interval_s says how long that interval really was
    true_closes = [first_close + k * interval_ns + (int(rng.uniform(-0.3, 0.3) * 1e9) if h.interval_s == 15 and k
                                                    else 0) for k in range(n_snaps)]
    probes = sorted(PROBE_SETS[h.pset])
    for t, op, family, pid, comm, job in sorted(sim.calls, key=lambda c: c[0]):
        frames, kept, errno, calls, fails = _shape(op, family, h.pset)
        # the counters: every call, by the snapshot interval it returned in
        snap = bisect.bisect_left(true_closes, t)
        for fn, c in calls.items():
            per_probe_snap[(snap, fn)][0] += c
        for fn, c in fails.items():
            cell = per_probe_snap[(snap, fn)]
            cell[1] += c
            cell[2][errno] = cell[2].get(errno, 0) + c
        timed = h.timed(t)
        if family is None and not timed:
            continue  # a good call outside a capture window: counted only
        if family is not None:
            counts[family] += 1
            records[family] += 1
        n += 1
        trace_id = f"t{n}"  # argus numbers records per host, from 1
        entry, lat = _timing(frames, rng)
        root_lat = lat[0]
        mono0 = h.mono(t)
        if timed:
            ts = [mono0 + entry[idx] for idx, *_ in kept]
            lats = [lat[idx] for idx, *_ in kept]
            start, stop = h.wall(t), h.wall(t + root_lat)
        else:
            tick = (mono0 + root_lat) // HZ_TICK_NS * HZ_TICK_NS
            ts = [tick] * len(kept)
            lats = [None] * len(kept)
            start = stop = tick + h.boot_ns + h.skew_ns
        depths = [d for _, d, _, _, _ in kept]
        order = _postorder(depths) if h.postorder else list(range(len(kept)))
        code = ERRNO[errno] if errno else 0
        rows = {
            "seq": order, "ts_ns": [ts[i] for i in order], "probe": [kept[i][2] for i in order],
            "layer": [kept[i][3] for i in order], "depth": [depths[i] for i in order],
            "ret": [(-code if kept[i][4] else (512 if kept[i][2] == "pin_user_pages_fast" else 0)) for i in order],
            "errno": [(errno if kept[i][4] else None) for i in order], "latency_ns": [lats[i] for i in order],
        }
        kind = "failure" if family else "good"
        trace = {"trace_id": trace_id, "pid": pid, "comm": comm, "arg": ARG.get(op), "kind": kind,
                 "command": OPS[op][0], "exit_status": -code, "start_time": start, "end_time": stop,
                 "job_id": job, "n": len(kept)}
        origin = ROOT_CAUSES.get(family) or ROUTINE.get(family)
        truth = {"trace_id": trace_id, "host": h.name, "kind": kind, "root_cause": family,
                 "bifurcation_probe": origin[0] if origin else None, "bifurcation_errno": origin[1] if origin else None,
                 "origin_layer": origin[2] if origin else None, "expected_error": family in ROUTINE,
                 "held_out": False}
        traces.append((_date(start), rows, trace, truth))
    # rows not in time order: each date's records shuffled, then cut into uneven part files
    by_date = defaultdict(list)
    for item in traces:
        by_date[item[0]].append(item)
    files = 0
    for date, items in sorted(by_date.items()):
        rng.shuffle(items)
        # three uploads of uneven sizes: most of the records, a quarter or so, the rest
        first = int(len(items) * rng.uniform(0.55, 0.7))
        second = first + int(len(items) * rng.uniform(0.2, 0.3))
        bounds = [0, first, second, len(items)]
        for part, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False)):
            chunk = items[a:b]
            if not chunk:
                continue
            cols = defaultdict(list)
            for _, rows, trace, _ in chunk:
                k = trace["n"]
                cols["trace_id"] += [trace["trace_id"]] * k
                for name, values in rows.items():
                    cols[name] += values
                cols["pid"] += [trace["pid"]] * k
                cols["tid"] += [None] * k
                cols["ppid"] += [None] * k
                cols["comm"] += [trace["comm"]] * k
                cols["path"] += [None] * k
                cols["arg"] += [trace["arg"]] * k
                cols["kind"] += [trace["kind"]] * k
                cols["command"] += [trace["command"]] * k
                cols["exit_status"] += [trace["exit_status"]] * k
                cols["start_time"] += [trace["start_time"]] * k
                cols["end_time"] += [trace["end_time"]] * k
                cols["host"] += [h.name] * k
                cols["kernel_release"] += [None if h.lite else KERNEL] * k
                cols["lost_events"] += [None] * k
                cols["job_id"] += [trace["job_id"]] * k
                cols["metadata"] += [h.metadata] * k
            table = pa.table({name: pa.array(cols[name], type=EVENT_TYPES[name]) for name in EVENT_TYPES
                              if name in cols})
            name = f"part-argus-{part:04d}-{rng.getrandbits(32):08x}.parquet"
            options = {"row_group_size": rng.choice((2_000, 5_000, 50_000))}
            if h.store_host:
                write_table(table, partition_path(root, "events", date, h.name, name), "events",
                            compression=h.compression, durable=False, parquet_options=options)
            else:
                write_partition(table, root, "events", date, h.name, name, compression=h.compression,
                                durable=False, parquet_options=options)
            if h.resends and part == 0:  # at-least-once shipping: this part uploaded twice
                write_partition(table, root, "events", date, h.name, name.replace("part-argus", "part-argus-resent"),
                                compression=h.compression, durable=False, parquet_options=options)
            truth = [item[3] for item in chunk]
            write_partition(pa.Table.from_pylist(truth, schema=TRUTH), root, "truth", date, h.name,
                            name.replace("part-argus", "part-truth"), durable=False)
            files += 1
    # the counters: one row per probe of the set per snapshot, every snapshot to the window's end
    closes = [h.wall(c) for c in true_closes]
    lengths = [h.interval_s] + [(b - a) / 1e9 for a, b in zip(true_closes, true_closes[1:], strict=False)]
    column = {fn: j for j, fn in enumerate(probes)}
    inv = np.zeros((n_snaps, len(probes)), np.int64)
    fail = np.zeros((n_snaps, len(probes)), np.int64)
    errs: list = [None] * (n_snaps * len(probes))
    for (k, fn), (i_, f_, e_) in per_probe_snap.items():
        inv[k, column[fn]] = i_
        fail[k, column[fn]] = f_
        if e_:
            errs[k * len(probes) + column[fn]] = [{"errno": e, "count": c} for e, c in sorted(e_.items())]
    dates = [_date(w) for w in closes]
    for date in sorted(set(dates)):
        ks = [k for k in range(n_snaps) if dates[k] == date]
        a, b = ks[0], ks[-1] + 1
        m = (b - a) * len(probes)
        cols = {
            "host": pa.array([h.name] * m), "snapshot_time": pa.array(np.repeat(closes[a:b], len(probes)),
                                                                        type=COUNTERS.field("snapshot_time").type),
            "interval_s": pa.array(np.repeat(lengths[a:b], len(probes)), pa.float64()), "kernel_release": pa.array([KERNEL] * m),
            "vendor": pa.array([VENDOR] * m), "probe_set": pa.array([h.pset] * m),
            "probe": pa.array(probes * (b - a)), "layer": pa.array([LAYER[fn] for fn in probes] * (b - a)),
            "live": pa.array(np.ones(m, bool)), "invocations": pa.array(inv[a:b].ravel()),
            "failures": pa.array(fail[a:b].ravel()),
            "errno_counts": pa.array(errs[a * len(probes):b * len(probes)], type=COUNTERS.field("errno_counts").type),
            "lost_records": pa.nulls(m, pa.int64()),
        }
        table = pa.table(cols)
        if h.interval_s == 60:
            # the 60 s hosts run argus' sparse exporter: no row for a probe not called in the
            # interval, and no interval length (interval_s null)
            table = table.filter(pc.greater(table["invocations"], 0))
            table = table.set_column(table.schema.get_field_index("interval_s"), "interval_s",
                                     pa.nulls(table.num_rows, pa.float64()))
        name = f"part-argus-c-{rng.getrandbits(32):08x}.parquet"
        write_partition(table, root, "counters", date, h.name, name, compression=h.compression, durable=False)
        if h.resends:  # at-least-once shipping: the same counters uploaded twice
            write_partition(table, root, "counters", date, h.name, name.replace("-c-", "-c-resent-"),
                            compression=h.compression, durable=False)
    return {"records": n, "files": files}


def generate(root, *, hosts: int = 30, hours: float = 3, seed: int = 29, faults: bool = True) -> dict:
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    end_ns = _ns(T0) + int(hours * 3600e9)
    fleet = [Host(i, random.Random(rng.getrandbits(64))) for i in range(hosts)]
    # the faults: 4 bond hosts across the three probe sets; one VF host (a "std" one)
    bond = [fleet[i] for i in (1, 5, 9, 12) if i < hosts] if faults else []
    vf = [fleet[min(7, hosts - 1)]] if faults else []
    job_counter = iter(range(810_000 + seed * 1000, 10**9))
    counts, records = Counter(), Counter()
    roles = {"all": [h.name for h in fleet], "bond": [h.name for h in bond], "vf": [h.name for h in vf],
             "postorder": [h.name for h in fleet if h.postorder], "host_stored": [h.name for h in fleet if h.store_host],
             "lite": [h.name for h in fleet if h.lite], "resends": [h.name for h in fleet if h.resends],
             "probe_sets": {p: [h.name for h in fleet if h.pset == p] for p in PROBE_SETS}}
    times = {}
    deaths = []
    for h in fleet:
        hrng = random.Random(rng.getrandbits(64))
        flaps = []
        if h in bond:
            for _ in range(hrng.choice((1, 2))):
                a = _ns(T0) + int(hrng.uniform(0.2, hours - 0.3) * 3600e9)
                flaps.append((a, a + int(hrng.uniform(150, 240) * 1e9)))
        onset = _ns(T0) + int(50 * 60e9) if h in vf else None
        if onset:
            times["vf_onset"] = dt.datetime.fromtimestamp(onset / 1e9, dt.UTC).isoformat()
        sim = Sim(h, hrng, end_ns, bond_flaps=flaps, vf_onset=onset, job_ids=job_counter)
        sim.run()
        deaths += [(h.name, f, p) for _, f, p in sim.deaths]
        _write_host(root, h, sim, hrng, counts, records, end_ns)
    times["from"] = T0.isoformat()
    times["to"] = dt.datetime.fromtimestamp(end_ns / 1e9, dt.UTC).isoformat()
    alert_hosts = {h.name: ["ENODEV"] for h in bond}
    for h in vf:
        alert_hosts[h.name] = ["ENXIO"]
    return {"roles": roles, "counts": dict(counts), "records": dict(records), "times": times,
            "alert_hosts": alert_hosts, "skew_s": {h.name: h.skew_ns / 1e9 for h in fleet},
            "interval_s": {h.name: h.interval_s for h in fleet}, "deaths": len(deaths)}

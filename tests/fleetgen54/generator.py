"""Blind fleet generator 54: correlated fleet events.

Written from tracer/schema.py (spool layout, tables), docs/architecture.md and the RDMA reference
(../shared/reference/rdma_control_path.yaml: call chains, layers, errno meanings) only; it shares
no code with the project's simulator or the earlier generators.

The fleet: 56 mlx5 GPU hosts in four racks (rA: gpu01-16, rB: gpu17-28, rC: gpu29-42, rD:
gpu43-56), 08:00-18:00 UTC, `tracer run -i 15m` (see INTERVAL). Every host runs training jobs (one
rank, `python3`, a process per job) one after another; the job's prolog opens a capture window
(SIGUSR1) so its start-up is timed: GID query, PD, two CQs, four registrations (two of GPU memory),
then one RC QP per peer (4) taken INIT -> RTR -> RTS. While it runs it registers more GPU and host
memory now and then (outside windows: failures only, untimed).

Routine errors on every host, every job (the process goes on):
* the start-up enumerates the GID table: entries 2 and 3 are empty, so
  ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY -> rdma_get_gid_attr fails ENODATA
  (reference: "-ENODATA: empty GID slot");
* registering GPU memory: pin_user_pages_fast fails EFAULT under __ib_umem_get and the OFED
  peer-memory client takes the range (ib_peer_umem_get): the registration succeeds
  (reference: ofed_peer_memory.gpu_direct_trace_shape).

Correlated events:
1. ToR switch of rack rA down 09:15-10:45: every INIT->RTR of the rack's 16 hosts fails ETIMEDOUT at
   rdma_addr_find_l2_eth_by_grh (the neighbour never resolves), up through ib_resolve_eth_dmac to
   ib_uverbs_modify_qp; the rank dies, the scheduler restarts it (a crash loop on 16 hosts at once).
2. Kernel rollout 10:00 to half of the fleet (racks rC and rD, RELEASE -> NEW_RELEASE; drained from
   09:45, rebooted one every 20 s from 10:00): its mlx5 no longer offers the CQE-compression
   capability libmlx5 asks for, so create_cq_user fails EOPNOTSUPP on every create_cq (reference: "CQE compression ... requested without HW cap"); the rank dies.
   Rolled back (reboot onto RELEASE) in the maintenance window.
3. NIC firmware FW_BAD on gpu17 and gpu18 (all day): 8 % of their registrations fail EFAULT at
   mlx5r_umr_update_mr_pas (reference: "UMR QP in error state or UMR completion error"), the MR
   unwound with mlx5_ib_dereg_mr; the rank dies.
4. Quiet: maintenance 14:00-15:00, every job drained and none started (the counters go on, zero);
   gpu19 is drained at 11:45 and decommissioned: its last snapshot closes at 12:00.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tracer import schema

SEED = 54
T0 = dt.datetime(2026, 11, 17, 8, 0, tzinfo=dt.UTC)
END = dt.datetime(2026, 11, 17, 18, 0, tzinfo=dt.UTC)
# `tracer run -i 15m`: the daemon's default is 5 s, but 2,000 snapshots already cost ingest most of
# this module's time; the interval is one audit bucket, so each snapshot fills exactly one bucket
# (the one its close time names: the counters of 09:15-09:30 land in the 09:30 bucket)
INTERVAL = dt.timedelta(minutes=15)
RELEASE = "6.8.0-45-generic"
NEW_RELEASE = "6.8.0-52-generic"
FW_OK = "28.39.1002"
FW_BAD = "28.41.1000"

HOSTS = [f"gpu{i:02d}" for i in range(1, 57)]
RACK = {h: "rA" if i <= 16 else "rB" if i <= 28 else "rC" if i <= 42 else "rD" for i, h in enumerate(HOSTS, 1)}
RACK_HOSTS = [h for h in HOSTS if RACK[h] == "rA"]
UPGRADED = HOSTS[28:]  # gpu29-56: racks rC and rD, half of the fleet
FIRMWARE_HOSTS = ["gpu17", "gpu18"]
DECOMMISSIONED = "gpu19"

OUTAGE_START = dt.datetime(2026, 11, 17, 9, 15, tzinfo=dt.UTC)
OUTAGE_END = dt.datetime(2026, 11, 17, 10, 45, tzinfo=dt.UTC)
UPGRADE_AT = dt.datetime(2026, 11, 17, 10, 0, tzinfo=dt.UTC)  # + 20 s per host, a rolling reboot
UPGRADE_DRAIN = dt.datetime(2026, 11, 17, 9, 45, tzinfo=dt.UTC)  # no job on an upgraded host from here to its reboot
DRAIN_AT = dt.datetime(2026, 11, 17, 11, 45, tzinfo=dt.UTC)
DECOMMISSION_AT = dt.datetime(2026, 11, 17, 12, 0, tzinfo=dt.UTC)
MAINT_START = dt.datetime(2026, 11, 17, 14, 0, tzinfo=dt.UTC)
MAINT_END = dt.datetime(2026, 11, 17, 15, 0, tzinfo=dt.UTC)
ROLLBACK_AT = dt.datetime(2026, 11, 17, 14, 20, tzinfo=dt.UTC)
FW_FAIL_P = 0.08
PEERS = 4

OUTAGE_CAUSE = "tor_switch_rA_down"
ROLLOUT_CAUSE = "mlx5_cqe_compression_dropped"
FIRMWARE_CAUSE = "nic_fw_umr_completion_error"
CAUSES = (OUTAGE_CAUSE, ROLLOUT_CAUSE, FIRMWARE_CAUSE)

MODIFY_QP_PROBES = {"ib_uverbs_modify_qp", "modify_qp", "ib_modify_qp_with_udata", "_ib_modify_qp",
                    "ib_resolve_eth_dmac", "ib_resolve_unicast_gid_dmac", "rdma_addr_find_l2_eth_by_grh"}
CREATE_CQ_PROBES = {"ib_uverbs_create_cq", "create_cq", "mlx5_ib_create_cq", "create_cq_user"}
REG_MR_FAULT_PROBES = {"ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "create_real_mr", "mlx5r_umr_update_mr_pas"}
ROUTINE_PROBES = {"pin_user_pages_fast", "__ib_umem_get", "rdma_get_gid_attr",
                  "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"}

ERRNO = {"ENODATA": 61, "EFAULT": 14, "ETIMEDOUT": 110, "EOPNOTSUPP": 95}

LAYER = {
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs", "ib_uverbs_alloc_pd": "uverbs",
    "ib_uverbs_create_cq": "uverbs", "ib_uverbs_create_qp": "uverbs", "ib_uverbs_reg_mr": "uverbs",
    "ib_uverbs_modify_qp": "uverbs", "create_cq": "uverbs", "create_qp": "uverbs", "modify_qp": "uverbs",
    "rdma_get_gid_attr": "core", "rdma_read_gid_attr_ndev_rcu": "core", "rdma_put_gid_attr": "core",
    "rdma_alloc_begin_uobject": "core", "ib_rdmacg_try_charge": "core", "rdma_restrack_add": "core",
    "rdma_alloc_abort_uobject": "core", "rdma_lookup_get_uobject": "core", "rdma_lookup_put_uobject": "core",
    "ib_create_qp_user": "core", "ib_create_qp_security": "core", "__ib_umem_get": "core",
    "pin_user_pages_fast": "core", "ib_modify_qp_with_udata": "core", "_ib_modify_qp": "core",
    "rdma_counter_bind_qp_auto": "core", "ib_security_modify_qp": "core", "rdma_fill_sgid_attr": "core",
    "ib_resolve_eth_dmac": "core", "rdma_check_gid_user_access": "core", "ib_resolve_unicast_gid_dmac": "core",
    "rdma_addr_find_l2_eth_by_grh": "core", "rdma_lag_get_ah_roce_slave": "core",
    "rdma_lag_put_ah_roce_slave": "core", "rdma_unfill_sgid_attr": "core", "ib_modify_qp_is_ok": "core",
    "mlx5_ib_alloc_pd": "driver", "mlx5_cmd_exec": "driver", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "mlx5_ib_db_map_user": "driver", "mlx5_comp_eqn_get": "driver",
    "mlx5_core_create_cq": "driver", "mlx5_ib_create_qp": "driver", "_create_user_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "mlx5_ib_reg_user_mr": "driver", "create_real_mr": "driver",
    "alloc_cacheable_mr": "driver", "reg_create": "driver", "mlx5r_umr_update_mr_pas": "driver",
    "mlx5_ib_dereg_mr": "driver", "mlx5_ib_modify_qp": "driver", "__mlx5_ib_modify_qp": "driver",
    "mlx5_set_path": "driver", "mlx5_core_qp_modify": "driver",
    "ib_peer_umem_get": "peer-mem", "ib_get_peer_client": "peer-mem",
    "ib_umem_activate_invalidation_notifier": "peer-mem",
}
PROBES = sorted(LAYER)


# ----------------------------------------------------------------------------- call trees
def F(probe, errno=None, *kids, arg=None, own_ns=4_000):
    """One frame: (probe, errno, children, arg, own time in ns)."""
    return (probe, errno, kids, arg, own_ns)


def query_gid(index: int, empty: bool):
    if empty:
        return F("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "ENODATA",
                 F("rdma_get_gid_attr", "ENODATA"), arg=f"port=1 index={index}")
    return F("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", None,
             F("rdma_get_gid_attr"), F("rdma_read_gid_attr_ndev_rcu"), F("rdma_put_gid_attr"),
             arg=f"port=1 index={index}")


def alloc_pd():
    return F("ib_uverbs_alloc_pd", None,
             F("rdma_alloc_begin_uobject", None, F("ib_rdmacg_try_charge")),
             F("mlx5_ib_alloc_pd", None, F("mlx5_cmd_exec", own_ns=60_000)),
             F("rdma_restrack_add"))


def pin(gpu: bool):
    if gpu:  # GUP refuses device memory; the peer client (nvidia-peermem) takes the range
        return F("__ib_umem_get", None, F("pin_user_pages_fast", "EFAULT"),
                 F("ib_peer_umem_get", None, F("ib_get_peer_client"), own_ns=30_000))
    return F("__ib_umem_get", None, F("pin_user_pages_fast", own_ns=20_000))


def create_cq(refused: bool):
    if refused:
        return F("ib_uverbs_create_cq", "EOPNOTSUPP",
                 F("create_cq", "EOPNOTSUPP",
                   F("rdma_alloc_begin_uobject", None, F("ib_rdmacg_try_charge")),
                   F("mlx5_ib_create_cq", "EOPNOTSUPP", F("create_cq_user", "EOPNOTSUPP")),
                   F("rdma_alloc_abort_uobject")))
    return F("ib_uverbs_create_cq", None,
             F("create_cq", None,
               F("rdma_alloc_begin_uobject", None, F("ib_rdmacg_try_charge")),
               F("mlx5_ib_create_cq", None,
                 F("create_cq_user", None, pin(False), F("mlx5_ib_db_map_user")),
                 F("mlx5_comp_eqn_get"),
                 F("mlx5_core_create_cq", None, F("mlx5_cmd_exec", own_ns=80_000))),
               F("rdma_restrack_add")))


def create_qp():
    return F("ib_uverbs_create_qp", None,
             F("create_qp", None,
               F("rdma_alloc_begin_uobject", None, F("ib_rdmacg_try_charge")),
               F("rdma_lookup_get_uobject"),
               F("ib_create_qp_user", None,
                 F("mlx5_ib_create_qp", None,
                   F("_create_user_qp", None, pin(False), F("mlx5_ib_db_map_user")),
                   F("mlx5_qpc_create_qp", None, F("mlx5_cmd_exec", own_ns=150_000))),
                 F("ib_create_qp_security"), F("rdma_restrack_add")),
               F("rdma_lookup_put_uobject")))


def reg_mr(gpu: bool, umr_fails: bool):
    mkey = F("reg_create", None, F("mlx5_cmd_exec", own_ns=90_000)) if gpu else F("alloc_cacheable_mr")
    if umr_fails:
        real = F("create_real_mr", "EFAULT", mkey, F("mlx5r_umr_update_mr_pas", "EFAULT", own_ns=200_000),
                 F("mlx5_ib_dereg_mr"))
        return F("ib_uverbs_reg_mr", "EFAULT",
                 F("rdma_alloc_begin_uobject", None, F("ib_rdmacg_try_charge")),
                 F("rdma_lookup_get_uobject"),
                 F("mlx5_ib_reg_user_mr", "EFAULT", pin(gpu), real),
                 F("rdma_alloc_abort_uobject"), arg="gpu" if gpu else "host")
    tail = (F("ib_umem_activate_invalidation_notifier"),) if gpu else ()
    real = F("create_real_mr", None, mkey, F("mlx5r_umr_update_mr_pas", own_ns=40_000), *tail)
    return F("ib_uverbs_reg_mr", None,
             F("rdma_alloc_begin_uobject", None, F("ib_rdmacg_try_charge")),
             F("rdma_lookup_get_uobject"),
             F("mlx5_ib_reg_user_mr", None, pin(gpu), real),
             F("rdma_restrack_add"), F("rdma_lookup_put_uobject"), arg="gpu" if gpu else "host")


def _driver_modify():
    return F("ib_security_modify_qp", None,
             F("mlx5_ib_modify_qp", None, F("ib_modify_qp_is_ok"),
               F("__mlx5_ib_modify_qp", None, F("mlx5_set_path"),
                 F("mlx5_core_qp_modify", None, F("mlx5_cmd_exec", own_ns=70_000)))))


def modify_qp(transition: str, neighbour_times_out: bool = False):
    if transition == "RESET->INIT":
        inner = (F("rdma_counter_bind_qp_auto"), _driver_modify())
        err = None
    elif transition == "RTR->RTS":
        inner = (_driver_modify(),)
        err = None
    elif neighbour_times_out:  # INIT->RTR, ARP through a dead switch: 1000 ms, then -ETIMEDOUT
        err = "ETIMEDOUT"
        inner = (F("rdma_fill_sgid_attr", None, F("rdma_get_gid_attr")),
                 F("ib_resolve_eth_dmac", err, F("rdma_check_gid_user_access"),
                   F("ib_resolve_unicast_gid_dmac", err,
                     F("rdma_addr_find_l2_eth_by_grh", err, own_ns=1_000_000_000))),
                 F("rdma_unfill_sgid_attr"))
    else:
        err = None
        inner = (F("rdma_fill_sgid_attr", None, F("rdma_get_gid_attr")),
                 F("ib_resolve_eth_dmac", None, F("rdma_check_gid_user_access"),
                   F("ib_resolve_unicast_gid_dmac", None, F("rdma_addr_find_l2_eth_by_grh", own_ns=30_000))),
                 F("rdma_lag_get_ah_roce_slave"), _driver_modify(), F("rdma_lag_put_ah_roce_slave"),
                 F("rdma_unfill_sgid_attr"))
    return F("ib_uverbs_modify_qp", err,
             F("modify_qp", err, F("rdma_lookup_get_uobject"),
               F("ib_modify_qp_with_udata", err, F("_ib_modify_qp", err, *inner)),
               F("rdma_lookup_put_uobject")),
             arg=transition)


@functools.cache
def tree_of(operation: str, *variant) -> tuple:
    """The flattened tree of one kind of call (built once: every call of a kind is alike)."""
    return tuple(flatten(BUILDERS[operation](*variant)))


def flatten(tree) -> list[tuple]:
    """Pre-order frames: (probe, depth, errno, arg, entry offset ns, latency ns)."""
    rows: list[list] = []

    def walk(node, depth, start):
        probe, errno, kids, arg, own = node
        row = [probe, depth, errno, arg, start, 0]
        rows.append(row)
        t = start + own // 2
        for kid in kids:
            t = walk(kid, depth + 1, t) + 500
        end = t + own - own // 2
        row[5] = end - start
        return end

    walk(tree, 0, 0)
    return [tuple(r) for r in rows]


BUILDERS = {"query_gid": query_gid, "alloc_pd": alloc_pd, "create_cq": create_cq, "create_qp": create_qp,
            "reg_mr": reg_mr, "modify_qp": modify_qp}


# ----------------------------------------------------------------------------- the fleet
@dataclasses.dataclass
class Trace:
    trace_id: str
    host: str
    kind: str
    operation: str
    start: dt.datetime
    pid: int
    cause: str | None
    expected: bool
    bif_probe: str | None
    bif_errno: str | None
    origin_layer: str | None
    arg: str | None = None  # the root's argument: the transition, or gpu/host memory


def release_at(host: str, t: dt.datetime) -> str:
    if host in UPGRADED and upgrade_time(host) <= t < ROLLBACK_AT:
        return NEW_RELEASE
    return RELEASE


def upgrade_time(host: str) -> dt.datetime:
    return UPGRADE_AT + dt.timedelta(seconds=20 * UPGRADED.index(host))


def boot_of(host: str, t: dt.datetime) -> tuple[int, dt.datetime]:
    """(boot number, boot time): upgraded hosts reboot at their upgrade and at the rollback."""
    boots = [(0, T0 - dt.timedelta(days=3, hours=HOSTS.index(host)))]
    if host in UPGRADED:
        boots.append((1, upgrade_time(host)))
        boots.append((2, ROLLBACK_AT))
    return [b for b in boots if b[1] <= t][-1]


def snapshot_closes(host: str | None = None) -> list[dt.datetime]:
    last = DECOMMISSION_AT if host == DECOMMISSIONED else END
    out, t = [], T0 + INTERVAL
    while t <= last:
        out.append(t)
        t += INTERVAL
    return out


class _HostLog:
    def __init__(self, host: str):
        self.host = host
        self.cols: dict[str, list] = defaultdict(list)
        self.count = 0
        self.calls: dict[tuple[int, str], int] = defaultdict(int)  # (snapshot index, probe)
        self.errs: dict[tuple[int, str, str], int] = defaultdict(int)

    def snap_index(self, t: dt.datetime) -> int:
        # interval (close - INTERVAL, close]: a call at exactly a close belongs to that snapshot
        k = (t - T0) // INTERVAL
        return k - 1 if T0 + k * INTERVAL == t else k


def _ns(t: dt.datetime) -> int:
    return int(t.timestamp()) * 1_000_000_000 + t.microsecond * 1000


class Fleet:
    def __init__(self, seed: int = SEED):
        self.rng = random.Random(seed)
        self.logs = {h: _HostLog(h) for h in HOSTS}
        self.traces: list[Trace] = []
        self.job_seq = 7_310_000

    # one call of an operation: count every frame, emit the tree when it failed or is timed good
    def call(self, host: str, t: dt.datetime, pid: int, job: str, tree, *, timed: bool,
             cause: str | None = None, bif: tuple[str, str, str] | None = None) -> bool:
        log = self.logs[host]
        frames = tree
        k = log.snap_index(t)
        failed = any(f[2] for f in frames)
        for probe, _d, errno, _a, _s, _l in frames:
            log.calls[(k, probe)] += 1
            if errno:
                log.errs[(k, probe, errno)] += 1
        if not failed and not timed:
            return True  # counted only: the tracer emits no good tree outside a capture window
        root_err = frames[0][2]
        kind = "failure" if failed else "good"
        log.count += 1
        boot, booted = boot_of(host, t)
        tid = pid
        trace_id = f"{host}:{boot}:{tid}:{log.count}"
        base = _ns(t) - _ns(booted)
        tick = base - base % 4_000_000  # untimed: every frame at the tick the root returned in
        start = t
        end = t + dt.timedelta(microseconds=frames[0][5] // 1000) if timed else t
        md = schema.metadata_list({"rack": RACK[host], "nic_fw": FW_BAD if host in FIRMWARE_HOSTS else FW_OK})
        c = log.cols
        op = frames[0][0]
        n = len(frames)
        c["seq"].extend(range(n))
        c["ts_ns"].extend([base + f[4] for f in frames] if timed else [tick] * n)
        c["probe"].extend(f[0] for f in frames)
        c["layer"].extend(LAYER[f[0]] for f in frames)
        c["depth"].extend(f[1] for f in frames)
        c["ret"].extend(-ERRNO[f[2]] if f[2] else 0 for f in frames)
        c["errno"].extend(f[2] for f in frames)
        c["latency_ns"].extend([f[5] for f in frames] if timed else [None] * n)
        c["arg"].extend(f[3] for f in frames)
        for name, value in (("trace_id", trace_id), ("pid", pid), ("tid", tid), ("ppid", 1000),
                            ("comm", "python3"), ("path", None), ("path2", None), ("output", None),
                            ("kind", kind), ("command", OPERATION[op]),
                            ("exit_status", -ERRNO[root_err] if root_err else 0), ("start_time", start),
                            ("end_time", end), ("host", host), ("kernel_release", release_at(host, t)),
                            ("lost_events", 0), ("job_id", job), ("metadata", md), ("repeat_count", None)):
            c[name].extend([value] * n)
        expected = failed and cause is None
        self.traces.append(Trace(trace_id, host, kind, OPERATION[op], start, pid, cause, expected,
                                 *(bif or (None, None, None)), arg=frames[0][3]))
        return cause is None  # routine errors: the process goes on; a fault kills the rank

    def run_host(self, host: str) -> None:
        rng = self.rng
        pid = 20_000 + 100 * HOSTS.index(host)
        t = T0 + dt.timedelta(seconds=rng.uniform(5, 600))
        job = None
        restarts = 0
        while t < END:
            if host == DECOMMISSIONED and t >= DRAIN_AT:
                return
            if MAINT_START <= t < MAINT_END:
                t = MAINT_END + dt.timedelta(seconds=rng.uniform(5, 300))
                job = None
                continue
            if host in UPGRADED and UPGRADE_DRAIN <= t < upgrade_time(host) + dt.timedelta(minutes=3):
                t = upgrade_time(host) + dt.timedelta(minutes=3, seconds=rng.uniform(0, 60))  # rebooting
                continue
            if job is None or restarts == 0:
                self.job_seq += 1
                job = str(self.job_seq)
            pid += rng.randint(3, 40)
            alive, t_end = self.start_job(host, t, pid, job)
            if not alive:  # the rank died: the scheduler requeues it after a back-off
                restarts += 1
                t = t_end + dt.timedelta(seconds=rng.uniform(150, 270))
                continue
            restarts = 0
            t = self.run_job(host, t_end, pid, job)
            job = None
            t += dt.timedelta(seconds=rng.uniform(60, 180))

    def start_job(self, host: str, t: dt.datetime, pid: int, job: str) -> tuple[bool, dt.datetime]:
        """The rank's start-up inside the prolog's capture window; (alive, time of its last call)."""
        rng = self.rng
        step = dt.timedelta(milliseconds=40)
        for i in range(4):
            if not self.call(host, t, pid, job, tree_of('query_gid', i, i >= 2), timed=True):
                return False, t
            t += step
        self.call(host, t, pid, job, tree_of('alloc_pd'), timed=True)
        t += step
        refused = release_at(host, t) == NEW_RELEASE
        for _ in range(2):
            if refused:
                self.call(host, t, pid, job, tree_of('create_cq', True), timed=True, cause=ROLLOUT_CAUSE,
                          bif=("create_cq_user", "EOPNOTSUPP", "driver"))
                return False, t
            self.call(host, t, pid, job, tree_of('create_cq', False), timed=True)
            t += step
        for gpu in (True, True, False, False):
            if not self.register(host, t, pid, job, gpu, timed=True):
                return False, t
            t += step
        for _peer in range(PEERS):  # one RC QP per peer rank, connected INIT -> RTR -> RTS
            self.call(host, t, pid, job, tree_of('create_qp'), timed=True)
            t += step
            self.call(host, t, pid, job, tree_of('modify_qp', 'RESET->INIT'), timed=True)
            t += step
            if host in RACK_HOSTS and OUTAGE_START <= t < OUTAGE_END:
                self.call(host, t, pid, job, tree_of('modify_qp', 'INIT->RTR', True), timed=True,
                          cause=OUTAGE_CAUSE, bif=("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"))
                return False, t + dt.timedelta(seconds=1)
            self.call(host, t, pid, job, tree_of('modify_qp', 'INIT->RTR'), timed=True)
            t += step
            self.call(host, t, pid, job, tree_of('modify_qp', 'RTR->RTS'), timed=True)
            t += step
        return True, t + dt.timedelta(milliseconds=rng.uniform(1, 30))

    def register(self, host, t, pid, job, gpu: bool, timed: bool) -> bool:
        if host in FIRMWARE_HOSTS and self.rng.random() < FW_FAIL_P:
            # written as: "the good registrations the model knows pin host memory: a GPU buffer's
            # failing tree leaves them first at the peer-memory fallback". Since round forty-eight
            # the docs count the rescued registrations (kind failure, root succeeded: every GPU
            # registration here, the pin's EFAULT absorbed) as known-good structure too
            # (architecture.md, tests/fleetgen62), so both leave it at the UMR itself
            bif = ("mlx5r_umr_update_mr_pas", "EFAULT", "driver")
            self.call(host, t, pid, job, tree_of('reg_mr', gpu, True), timed=timed, cause=FIRMWARE_CAUSE, bif=bif)
            return False
        self.call(host, t, pid, job, tree_of('reg_mr', gpu, False), timed=timed)
        return True

    def run_job(self, host: str, t: dt.datetime, pid: int, job: str) -> dt.datetime:
        """The job runs 20-40 minutes, registering a GPU and a host buffer every 4-6 minutes
        (untimed: outside any capture window). A dead switch, the maintenance drain, the
        decommission drain or the end of the day ends it (no kernel error)."""
        rng = self.rng
        stop = t + dt.timedelta(minutes=rng.uniform(20, 40))
        for limit in (MAINT_START, END):
            if t < limit < stop:
                stop = limit
        if host == DECOMMISSIONED and t < DRAIN_AT < stop:
            stop = DRAIN_AT
        if host in RACK_HOSTS and t < OUTAGE_START < stop:
            stop = OUTAGE_START  # NCCL's collectives time out: the job dies in user space
        if host in UPGRADED and t < UPGRADE_DRAIN < stop:
            stop = UPGRADE_DRAIN  # drained for the reboot
        while True:
            t += dt.timedelta(seconds=rng.uniform(240, 360))
            if t >= stop:
                return stop
            for gpu in (True, False):
                if not self.register(host, t, pid, job, gpu, timed=False):
                    return t
                t += dt.timedelta(milliseconds=5)

    # ------------------------------------------------------------------------- the spool
    def write_spool(self, spool: Path) -> dict:
        events_schema = schema.EVENTS
        counted: dict[tuple[str, str], list] = {}
        for host in HOSTS:
            log = self.logs[host]
            closes = snapshot_closes(host)
            table = pa.Table.from_pydict({f.name: log.cols.get(f.name, []) for f in events_schema},
                                         schema=events_schema)
            starts = log.cols.get("start_time", [])
            by_snap: dict[int, list[int]] = defaultdict(list)
            for row, st in enumerate(starts):
                by_snap[log.snap_index(st)].append(row)
            hdir = spool / host
            hdir.mkdir(parents=True)
            for k, close in enumerate(closes):
                name = f"snap-{close.strftime('%Y%m%dT%H%M%S')}.000Z-{k + 1}"
                sdir = hdir / name
                sdir.mkdir()
                rows = by_snap.get(k, [])
                ev = table.take(pa.array(rows, pa.int64())) if rows else table.slice(0, 0)
                _write(ev, sdir / "events.parquet", "events")
                release = release_at(host, close - dt.timedelta(seconds=1))
                n = len(PROBES)
                inv = [log.calls.get((k, p), 0) for p in PROBES]
                per_errno = [[{"errno": e, "count": log.errs[(k, p, e)]} for e in sorted(ERRNO)
                              if log.errs.get((k, p, e))] for p in PROBES]
                fails = [sum(x["count"] for x in pe) for pe in per_errno]
                counters = pa.Table.from_pydict({
                    "host": [host] * n, "snapshot_time": [close] * n,
                    "interval_s": [INTERVAL.total_seconds()] * n, "kernel_release": [release] * n,
                    "vendor": ["mlx5"] * n, "probe_set": ["rdma-full"] * n, "probe": PROBES,
                    "layer": [LAYER[p] for p in PROBES], "live": [True] * n, "invocations": inv,
                    "failures": fails, "errno_counts": per_errno, "lost_records": [0] * n,
                }, schema=schema.COUNTERS)
                _write(counters, sdir / "counters.parquet", "counters")
                for p, v, pe in zip(PROBES, inv, per_errno, strict=True):
                    cell = counted.setdefault((host, p), [0, defaultdict(int)])
                    cell[0] += v
                    for x in pe:
                        cell[1][x["errno"]] += x["count"]
        return counted


def _write(data: pa.Table, path: Path, table: str) -> None:
    """A spool file as the daemon writes it, on pyarrow alone: the table's schema with the two
    footer entries every tracebase file carries (tracer/schema.py)."""
    meta = {schema.META_TABLE: table.encode(), schema.META_VERSION: str(schema.SCHEMA_VERSION).encode()}
    pq.write_table(data.replace_schema_metadata(meta), path, compression="none")


OPERATION = {
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "query_gid", "ib_uverbs_alloc_pd": "alloc_pd",
    "ib_uverbs_create_cq": "create_cq", "ib_uverbs_create_qp": "create_qp", "ib_uverbs_reg_mr": "reg_mr",
    "ib_uverbs_modify_qp": "modify_qp",
}


def generate(root: str | Path, seed: int = SEED) -> dict:
    """Write the spool under root/spool; return what was made (spool, traces, counted calls)."""
    root = Path(root)
    fleet = Fleet(seed)
    for host in HOSTS:
        fleet.run_host(host)
    # the day ends: a call after the last snapshot's close is in no snapshot
    spool = root / "spool"
    counted = fleet.write_spool(spool)
    last = {h: snapshot_closes(h)[-1] for h in HOSTS}
    traces = [t for t in fleet.traces if t.start <= last[t.host]]
    return {"spool": spool, "traces": traces, "counted": counted}


def write_truth(dataset: str | Path, traces: list[Trace]) -> None:
    """The ground truth `baseline evaluate` reads: DATASET/truth/date=D/host=H/ (tracer/schema.py)."""
    by_host: dict[str, list[Trace]] = defaultdict(list)
    for t in traces:
        by_host[t.host].append(t)
    for host, ts in by_host.items():
        data = pa.Table.from_pydict({
            "trace_id": [t.trace_id for t in ts], "host": [host] * len(ts), "kind": [t.kind for t in ts],
            "root_cause": [t.cause for t in ts], "bifurcation_probe": [t.bif_probe for t in ts],
            "bifurcation_errno": [t.bif_errno for t in ts], "origin_layer": [t.origin_layer for t in ts],
            "expected_error": [t.expected for t in ts], "held_out": [False] * len(ts),
        }, schema=schema.TRUTH)
        schema.write_partition(data, dataset, "truth", T0.date().isoformat(), host, "part-0.parquet",
                               durable=False)

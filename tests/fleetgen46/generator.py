"""fleetgen46's fleet: a learning day D and an audit day D+1 of 16 mlx5 RoCE hosts (see the package
docstring for the theme and the truth).

Process model
-------------
* Hosts g01..g16 run in fixed pairs (g01+g02, g03+g04, ...); each pair runs Slurm jobs back to back,
  4 ranks per host (comm ``python3``), one job at a time. A rank's start-up: a GID-table scan
  (8 QUERY_GID_ENTRY calls, slots 3..7 empty: ENODATA at rdma_get_gid_attr), alloc_pd, a CQ asked
  with 128-byte CQE padding (refused: EOPNOTSUPP at create_cq_user) and two CQs without it, one QP
  per peer (create_qp and RESET->INIT, INIT->RTR, RTR->RTS), four MRs. While it runs: a buffer
  registration every 3-7 minutes and a reconnect (create_qp + three modify_qp) every 10-20
  minutes. A rank that dies aborts its job: every rank of the job (both hosts) stops there, and
  Slurm requeues the job under a new id 1-3 minutes later.
* Every host runs an agent, ``rdma-healthd`` (one process the whole day), whose loopback check
  every ~2 minutes scans the GID table, allocates a PD, a CQ, a QP (three transitions) and an MR.
  The agent logs a failed check and goes on (it never dies).
* Tenant kestrel's sweeps run under an rdma cgroup hca_object limit: their ranks' create_qp meets
  EAGAIN at ib_rdmacg_try_charge now and then and retries 20-80 ms later (the process goes on).
* The tracer: per-host capture windows of 150 s every 10 minutes (phase per host). Every call of a
  window is timed; its successful calls are emitted as good traces. Failures are always emitted;
  identical failing trees of one process within one 60 s snapshot interval are one record with
  ``repeat_count`` (the GID scan's empty slots), never across processes. Counters: every probe of
  the trees, every 60 s snapshot, every call counted (recorded or not).

Faults (``faults=True``)
-------------------------
* g05's NIC (a1, ``nic_cmd_eio``): CREATE_QP firmware commands fail with EIO (INT_ERR) at
  mlx5_cmd_exec under mlx5_qpc_create_qp: ~2 % of create_qp on D, 6 % rising to 24 % on D+1.
  A rank dies of it (its job aborts); the agent logs it and goes on.
* g11's pinned-memory leak (a2, ``pinned_leak_enomem``): a checkpoint-offload daemon pins host
  buffers and never unpins them; from the last 90 minutes of D, ib_umem_get's page-list allocation
  fails with ENOMEM for reg_mr (4 % then, 5 % rising to 30 % on D+1). Ranks die of it, the agent goes on.
* On D each contaminated host loses at least one rank to its fault (where chance has not done it
  by FORCED_FROM, the next rank call of the fault's operation fails): D shows the fault killing.
* g09's driver restart (d, ``reload_wave_eio``), D only: a devlink reload 100 minutes into D kills
  the running job; for 90 s every QP creation fails with EIO at rdma_alloc_begin_uobject
  (disassociate in progress): the requeued job crash-loops (a wave of restarts) and the agent's
  check fails once and goes on. It never recurs.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import polars as pl
import pyarrow as pa

from tracer.schema import COUNTERS, EVENTS, metadata_list, write_counter_buckets, write_partition

HOSTS = [f"g{i:02d}" for i in range(1, 17)]
PAIRS = [(HOSTS[i], HOSTS[i + 1]) for i in range(0, 16, 2)]
NIC_HOST = "g05"  # a1: the slowly failing NIC
TWIN_HOST = "g13"  # a1's second NIC of the same lot (twin=True)
LEAK_HOST = "g11"  # a2: the pinned-memory leak
RELOAD_HOST = "g09"  # d: the one-off restart wave of D
RARE_HOST = "g03"  # c: kestrel's one small job of D
KESTREL_PAIRS = PAIRS[:6]  # kestrel's sweeps run on g01..g12 on D+1
DAYS = {"learning": dt.date(2026, 11, 9), "audited": dt.date(2026, 11, 10)}
START_HOUR = 6
RELEASE = "6.8.0-51-generic"
RANKS = 4
PEERS = 4
SNAP_S = 60
WINDOW_EVERY_S = 600
WINDOW_S = 150

ERRNO = {"EIO": 5, "ENOMEM": 12, "EAGAIN": 11, "ENODATA": 61, "EOPNOTSUPP": 95}

# the layer of every function the trees use (probe sets where they name it; else by source file:
# drivers/infiniband/core and mm -> core, hw/mlx5 and the mlx5 core driver -> driver)
LAYER = {
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs", "ib_uverbs_alloc_pd": "uverbs",
    "ib_uverbs_create_cq": "uverbs", "ib_uverbs_create_qp": "uverbs", "ib_uverbs_modify_qp": "uverbs",
    "ib_uverbs_reg_mr": "uverbs",
    "rdma_get_gid_attr": "core", "rdma_read_gid_attr_ndev_rcu": "core", "rdma_put_gid_attr": "core",
    "rdma_alloc_begin_uobject": "core", "ib_rdmacg_try_charge": "core", "rdma_restrack_add": "core",
    "create_cq": "core", "create_qp": "core", "rdma_lookup_get_uobject": "core", "ib_create_qp_user": "core",
    "modify_qp": "core", "_ib_modify_qp": "core", "rdma_counter_bind_qp_auto": "core",
    "ib_security_modify_qp": "core", "ib_umem_get": "core", "pin_user_pages_fast": "core",
    "sg_alloc_append_table_from_pages": "core",
    "mlx5_ib_alloc_pd": "driver", "mlx5_cmd_exec": "driver", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "mlx5_ib_db_map_user": "driver", "mlx5_comp_eqn_get": "driver",
    "mlx5_core_create_cq": "driver", "mlx5_ib_create_qp": "driver", "create_user_qp": "driver",
    "_create_user_qp": "driver", "mlx5_qpc_create_qp": "driver", "mlx5_ib_modify_qp": "driver",
    "__mlx5_ib_modify_qp": "driver", "mlx5_set_path": "driver", "mlx5_core_qp_modify": "driver",
    "mlx5_ib_reg_user_mr": "driver", "create_real_mr": "driver", "alloc_cacheable_mr": "driver",
    "mlx5r_umr_update_mr_pas": "driver",
}
QUERY_PROBES = {"ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "rdma_get_gid_attr",
                "rdma_read_gid_attr_ndev_rcu", "rdma_put_gid_attr", "rdma_lookup_get_uobject"}
PROBES = list(LAYER)

# families: key -> (origin probe, errno, origin layer)
FAMILIES = {
    "gid_slot_empty": ("rdma_get_gid_attr", "ENODATA", "core"),
    "cqe_pad_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
    "cgroup_eagain_retried": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "nic_cmd_eio": ("mlx5_cmd_exec", "EIO", "driver"),
    "pinned_leak_enomem": ("ib_umem_get", "ENOMEM", "core"),
    "reload_wave_eio": ("rdma_alloc_begin_uobject", "EIO", "core"),
}
ROUTINE = ("gid_slot_empty", "cqe_pad_refused", "cgroup_eagain_retried")
EVERYWHERE = ("gid_slot_empty", "cqe_pad_refused")  # (b): every host, both days
RARE_THEN_COMMON = "cgroup_eagain_retried"  # (c)
CONTAMINATING = ("nic_cmd_eio", "pinned_leak_enomem")  # (a): the audited day's root causes
ONE_OFF = "reload_wave_eio"  # (d): the learning day only
ROOT_CAUSES = (*CONTAMINATING, ONE_OFF)
CAUSE_HOST = {"nic_cmd_eio": NIC_HOST, "pinned_leak_enomem": LEAK_HOST, "reload_wave_eio": RELOAD_HOST}


def _qp_tree(fail: str | None) -> list[tuple[int, str, str | None]]:
    e = FAMILIES[fail][1] if fail else None
    if fail == "cgroup_eagain_retried":
        return [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), (2, "rdma_alloc_begin_uobject", e),
                (3, "ib_rdmacg_try_charge", e)]
    if fail == "reload_wave_eio":
        return [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), (2, "rdma_alloc_begin_uobject", e)]
    top = [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), (2, "rdma_alloc_begin_uobject", None),
           (3, "ib_rdmacg_try_charge", None), (2, "rdma_lookup_get_uobject", None), (2, "ib_create_qp_user", e),
           (3, "mlx5_ib_create_qp", e), (4, "create_user_qp", e), (5, "_create_user_qp", None),
           (6, "ib_umem_get", None), (6, "mlx5_ib_db_map_user", None), (5, "mlx5_qpc_create_qp", e),
           (6, "mlx5_cmd_exec", e)]
    return top if fail else [*top, (2, "rdma_restrack_add", None)]


def _mr_tree(fail: str | None) -> list[tuple[int, str, str | None]]:
    head = [(0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
            (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", None), (2, "ib_umem_get", None)]
    if fail:
        e = FAMILIES[fail][1]
        return [(d, fn, e if fn in ("ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "ib_umem_get") else None)
                for d, fn, _ in head]
    return [*head, (3, "pin_user_pages_fast", None), (3, "sg_alloc_append_table_from_pages", None),
            (2, "create_real_mr", None), (3, "alloc_cacheable_mr", None), (3, "mlx5r_umr_update_mr_pas", None),
            (1, "rdma_restrack_add", None)]


def _cq_tree(refused: bool) -> list[tuple[int, str, str | None]]:
    e = "EOPNOTSUPP" if refused else None
    frames = [(0, "ib_uverbs_create_cq", e), (1, "create_cq", e), (2, "rdma_alloc_begin_uobject", None),
              (3, "ib_rdmacg_try_charge", None), (2, "mlx5_ib_create_cq", e), (3, "create_cq_user", e),
              (4, "ib_umem_get", None), (4, "mlx5_ib_db_map_user", None)]
    if refused:
        return frames
    return [*frames, (3, "mlx5_comp_eqn_get", None), (3, "mlx5_core_create_cq", None), (2, "rdma_restrack_add", None)]


def _modify_tree(transition: str) -> list[tuple[int, str, str | None]]:
    frames = [(0, "ib_uverbs_modify_qp", None), (1, "modify_qp", None), (2, "rdma_lookup_get_uobject", None),
              (2, "_ib_modify_qp", None)]
    if transition == "INIT->RTR":
        frames.append((3, "rdma_get_gid_attr", None))
    if transition == "RESET->INIT":
        frames.append((3, "rdma_counter_bind_qp_auto", None))
    frames += [(3, "ib_security_modify_qp", None), (4, "mlx5_ib_modify_qp", None), (5, "__mlx5_ib_modify_qp", None)]
    if transition == "INIT->RTR":
        frames.append((6, "mlx5_set_path", None))
    return [*frames, (6, "mlx5_core_qp_modify", None), (7, "mlx5_cmd_exec", None)]


# name -> (operation, argument, frames)
TREES = {
    "query_gid": ("query_gid", None, [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", None),
                                      (1, "rdma_get_gid_attr", None), (1, "rdma_read_gid_attr_ndev_rcu", None),
                                      (1, "rdma_put_gid_attr", None)]),
    "query_gid_empty": ("query_gid", None, [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "ENODATA"),
                                            (1, "rdma_get_gid_attr", "ENODATA")]),
    "alloc_pd": ("alloc_pd", None, [(0, "ib_uverbs_alloc_pd", None), (1, "rdma_alloc_begin_uobject", None),
                                    (2, "ib_rdmacg_try_charge", None), (1, "mlx5_ib_alloc_pd", None),
                                    (2, "mlx5_cmd_exec", None), (1, "rdma_restrack_add", None)]),
    "create_cq": ("create_cq", None, _cq_tree(False)),
    "create_cq_padded": ("create_cq", None, _cq_tree(True)),
    "create_qp": ("create_qp", None, _qp_tree(None)),
    "create_qp_eagain": ("create_qp", None, _qp_tree("cgroup_eagain_retried")),
    "create_qp_fw_eio": ("create_qp", None, _qp_tree("nic_cmd_eio")),
    "create_qp_reload_eio": ("create_qp", None, _qp_tree("reload_wave_eio")),
    "modify_init": ("modify_qp", "RESET->INIT", _modify_tree("RESET->INIT")),
    "modify_rtr": ("modify_qp", "INIT->RTR", _modify_tree("INIT->RTR")),
    "modify_rts": ("modify_qp", "RTR->RTS", _modify_tree("RTR->RTS")),
    "reg_mr": ("reg_mr", None, _mr_tree(None)),
    "reg_mr_enomem": ("reg_mr", None, _mr_tree("pinned_leak_enomem")),
}
TREE_FAMILY = {"query_gid_empty": "gid_slot_empty", "create_cq_padded": "cqe_pad_refused",
               "create_qp_eagain": "cgroup_eagain_retried", "create_qp_fw_eio": "nic_cmd_eio",
               "create_qp_reload_eio": "reload_wave_eio", "reg_mr_enomem": "pinned_leak_enomem"}
FATAL_TO_RANKS = {"nic_cmd_eio", "pinned_leak_enomem", "reload_wave_eio"}

# base latency of a frame's own work (us), by function
_OWN_US = {"mlx5_cmd_exec": 90, "pin_user_pages_fast": 60, "mlx5_core_create_cq": 70, "ib_umem_get": 15}


def _fault_rate(fault: str, h: _Host, frac: float) -> float:
    """Probability that one call of the fault's operation on host `h` fails, at fraction `frac` of
    the day's window (`h.dense`: the learning day's contamination four times denser)."""
    if h.name not in h.cause_hosts[fault]:
        return 0.0
    if fault == "nic_cmd_eio":
        if h.day == "learning":
            return 0.06 if h.dense else 0.02
        return 0.06 + 0.18 * frac
    if fault == "pinned_leak_enomem":
        if h.day == "learning":
            return (0.05 if frac >= 0.25 else 0.0) if h.dense else (0.04 if frac >= 0.625 else 0.0)
        return 0.05 + 0.25 * frac
    return 0.0


class _Host:
    def __init__(self, name: str, day: str, date: dt.date, t0: int, t1: int, rng: random.Random, dense: bool,
                 cause_hosts: dict[str, list[str]]):
        self.name, self.day, self.date, self.t0, self.t1, self.dense = name, day, date, t0, t1, dense
        self.cause_hosts = cause_hosts
        self.rank_deaths: set[str] = set()  # the faults a rank of this host died of
        self.calls: list[tuple] = []  # (t_ns, pid, comm, job, meta, tree, family)
        self.phase = rng.randrange(WINDOW_EVERY_S) * 10**9
        self.next_pid = 4000 + rng.randrange(1000)
        self.boot = f"b{rng.randrange(16**6):06x}"
        self.uptime_ns = rng.randrange(3, 40) * 86400 * 10**9 + rng.randrange(10**12)

    def pid(self) -> int:
        self.next_pid += 1 + (self.next_pid % 7)
        return self.next_pid

    def in_window(self, t: int) -> bool:
        return (t - self.t0 - self.phase) % (WINDOW_EVERY_S * 10**9) < WINDOW_S * 10**9


NIC_META = {"nic": "ConnectX-7", "nic_fw": "28.41.1000", "gpu_driver": "560.35.03"}


def _agent(h: _Host, rng: random.Random, faults: bool) -> None:
    pid = 1200 + rng.randrange(300)
    meta = {**NIC_META, "service": "rdma-healthd"}
    t = h.t0 + rng.randrange(120) * 10**9
    reload_at = h.t0 + 100 * 60 * 10**9
    forced = faults and h.day == "learning" and h.name == RELOAD_HOST
    if forced:  # one check falls inside the reload
        t_force = reload_at + 40 * 10**9
    while t < h.t1:
        if forced and t <= t_force < t + 130 * 10**9:
            t = t_force
            forced = False
        frac = (t - h.t0) / (h.t1 - h.t0)
        seq = [("query_gid", None)] * 3 + [("query_gid_empty", None)] * 5 + [("alloc_pd", None), ("create_cq", None)]
        qp = "create_qp"
        if faults and rng.random() < _fault_rate("nic_cmd_eio", h, frac):
            qp = "create_qp_fw_eio"
        if faults and h.day == "learning" and h.name == RELOAD_HOST and reload_at <= t < reload_at + 90 * 10**9:
            qp = "create_qp_reload_eio"
        seq.append((qp, None))
        if qp == "create_qp":
            seq += [("modify_init", None), ("modify_rtr", None), ("modify_rts", None)]
        mr = "reg_mr"
        if faults and rng.random() < _fault_rate("pinned_leak_enomem", h, frac):
            mr = "reg_mr_enomem"
        seq.append((mr, None))
        tc = t
        for tree, _ in seq:
            h.calls.append((tc, pid, "rdma-healthd", None, meta, tree))
            tc += rng.randrange(200, 3000) * 1000
        t += rng.randrange(105, 135) * 10**9


def _job_calls(h: _Host, start: int, end: int, rng: random.Random, kestrel: bool, eagain_p: float):
    """Per rank of one host: (pid, [(t, tree)]) of a job from `start` to `end` (no faults yet)."""
    ranks = []
    for _ in range(RANKS):
        pid = h.pid()
        t = start + rng.randrange(0, 15 * 10**9)
        calls: list[tuple[int, str]] = []

        def at(tree, gap_us=(100, 2000), calls=calls):
            nonlocal t
            calls.append((t, tree))
            t += rng.randrange(*gap_us) * 1000

        for slot in range(8):
            at("query_gid" if slot < 3 else "query_gid_empty", (20, 80))
        at("alloc_pd")
        at("create_cq_padded")
        at("create_cq")
        at("create_cq")

        def connect():
            if kestrel and rng.random() < eagain_p:
                at("create_qp_eagain", (20_000, 80_000))
            at("create_qp")
            for tr in ("modify_init", "modify_rtr", "modify_rts"):
                at(tr)

        for _ in range(PEERS):
            connect()
        for _ in range(4):
            at("reg_mr")
        next_mr = t + rng.randrange(180, 420) * 10**9
        next_conn = t + rng.randrange(600, 1200) * 10**9
        while True:
            t = min(next_mr, next_conn)
            if t >= end:
                break
            if t == next_mr:
                at("reg_mr")
                next_mr = t + rng.randrange(180, 420) * 10**9
            else:
                connect()
                next_conn = t + rng.randrange(600, 1200) * 10**9
        ranks.append((pid, calls))
    return ranks


# the learning day's contamination kills at least one rank on each of its hosts: where chance has
# not done it by this fraction of the window, the fault's operation's next rank call fails
FORCED_FROM = {"nic_cmd_eio": 0.5, "pinned_leak_enomem": 0.85}


def _forced(h: _Host, fault: str, frac: float) -> bool:
    return (h.day == "learning" and h.name in h.cause_hosts[fault] and fault not in h.rank_deaths
            and frac >= FORCED_FROM[fault])


def _pair_jobs(hosts: tuple[_Host, _Host], rng: random.Random, faults: bool, counter: list[int]) -> None:
    a, b = hosts
    day = a.day
    t = a.t0 + rng.randrange(0, 240) * 10**9
    reload_host = next((h for h in hosts if faults and day == "learning" and h.name == RELOAD_HOST), None)
    reload_at = a.t0 + 100 * 60 * 10**9
    wave = []  # the requeues during the reload: (start) times
    if reload_host is not None:
        wave = [reload_at + (5 + 14 * k) * 10**9 for k in range(6)]
    rare_job_done = False
    while t < a.t1:
        interrupted_at = None
        wave_job = False
        if wave and t >= wave[0] - 10**9:
            t = max(t, wave.pop(0))
            wave_job = True
        duration = rng.randrange(35, 100) * 60 * 10**9
        end = min(t + duration, a.t1)
        if reload_host is not None and not wave_job and t < reload_at < end:
            end = reload_at  # the reload kills the running job (no record: the processes get a fatal event)
            interrupted_at = reload_at
        kestrel = False
        eagain_p = 0.0
        if day == "audited" and (a.name, b.name) in KESTREL_PAIRS:
            kestrel = rng.random() < 0.5
            eagain_p = 0.3
        forced_rare = (day == "learning" and a.name == RARE_HOST and not rare_job_done
                       and t >= a.t0 + 60 * 60 * 10**9)
        if forced_rare:
            kestrel, rare_job_done = True, True
        counter[0] += 1
        job = f"{(7_310_000 if day == 'learning' else 7_420_000) + counter[0]}"
        tenant = "kestrel" if kestrel else "orca"
        meta = {**NIC_META, "tenant": tenant, "partition": "train", "job_name": f"{tenant}-{counter[0] % 97}"}
        per_host = []
        for h in hosts:
            p = 0.0 if forced_rare else eagain_p
            ranks = _job_calls(h, t, end, rng, kestrel, p)
            if forced_rare and h.name == RARE_HOST:
                # kestrel's one small job of D: two of g03's QP creations meet the cgroup limit
                # (inserted before a start-up create_qp of ranks 0 and 2, retried 50 ms later)
                for r in (0, 2):
                    pid, calls = ranks[r]
                    i = next(i for i, (_, tr) in enumerate(calls) if tr == "create_qp")
                    tq = calls[i][0]
                    calls[i:] = [(tc + 50_000_000, tr) for tc, tr in calls[i:]]
                    calls.insert(i, (tq, "create_qp_eagain"))
            per_host.append([(tc, h, pid, tree) for pid, calls in ranks for tc, tree in calls])
        merged = sorted([c for calls in per_host for c in calls], key=lambda c: (c[0], c[1].name, c[2]))
        died = None
        for tc, h, pid, tree in merged:
            if tc >= end:
                continue
            frac = (tc - h.t0) / (h.t1 - h.t0)
            if faults and tree == "create_qp":
                if h is reload_host and reload_at <= tc < reload_at + 90 * 10**9:
                    tree = "create_qp_reload_eio"
                elif rng.random() < _fault_rate("nic_cmd_eio", h, frac) or _forced(h, "nic_cmd_eio", frac):
                    tree = "create_qp_fw_eio"
            if faults and tree == "reg_mr" and (rng.random() < _fault_rate("pinned_leak_enomem", h, frac)
                                                or _forced(h, "pinned_leak_enomem", frac)):
                tree = "reg_mr_enomem"
            h.calls.append((tc, pid, "python3", job, meta, tree))
            if TREE_FAMILY.get(tree) in FATAL_TO_RANKS:
                h.rank_deaths.add(TREE_FAMILY[tree])
                died = tc
                break
        if died is not None and wave_job:
            t = wave[0] if wave else reload_at + 100 * 10**9
        elif died is not None:
            t = died + rng.randrange(60, 180) * 10**9
        elif interrupted_at is not None:
            t = wave[0] if wave else interrupted_at + 100 * 10**9
        else:
            t = end + rng.randrange(60, 240) * 10**9
        if wave_job and not wave:
            t = max(t, reload_at + 100 * 10**9)


def _frames_timing(frames, rng: random.Random):
    """(entry offset ns, latency ns) per frame of a timed tree: children inside their parent."""
    n = len(frames)
    lat = [0] * n
    for i in range(n - 1, -1, -1):
        d = frames[i][0]
        own = int(_OWN_US.get(frames[i][1], 4) * 1000 * rng.uniform(0.6, 1.6))
        kids = 0
        for j in range(i + 1, n):
            if frames[j][0] <= d:
                break
            if frames[j][0] == d + 1:
                kids += lat[j] + 300
        lat[i] = own + kids
    entry = [0] * n
    stack: list[tuple[int, int]] = []  # (depth, next child offset)
    for i in range(n):
        d = frames[i][0]
        while stack and stack[-1][0] >= d:
            stack.pop()
        if stack:
            entry[i] = stack[-1][1]
            stack[-1] = (stack[-1][0], entry[i] + lat[i] + 300)
        stack.append((d, entry[i] + 1500))
    return entry, lat


EVENT_COLS = EVENTS.names


def _write_day(root: Path, h: _Host, rng: random.Random, summary: dict) -> None:
    date = h.date.isoformat()
    h.calls.sort(key=lambda c: (c[0], c[1]))
    snap_ns = SNAP_S * 10**9
    n_snaps = (h.t1 - h.t0) // snap_ns
    inv = {}  # (snap, probe) -> [calls, failures, {errno: n}]
    # failing calls: aggregate per (pid, tree, snapshot)
    groups: dict[tuple, list] = {}
    goods = []
    for c in h.calls:
        tc, pid, comm, job, meta, tree = c
        snap = (tc - h.t0) // snap_ns
        for _, fn, e in TREES[tree][2]:
            cell = inv.setdefault((snap, fn), [0, 0, {}])
            cell[0] += 1
            if e:
                cell[1] += 1
                cell[2][e] = cell[2].get(e, 0) + 1
        if tree in TREE_FAMILY:
            groups.setdefault((pid, tree, snap), []).append(c)
        elif h.in_window(tc):
            goods.append(c)
    records = [(cs[0], len(cs)) for cs in groups.values()] + [(c, 1) for c in goods]
    records.sort(key=lambda r: (r[0][0], r[0][1]))
    rows = {k: [] for k in EVENT_COLS if k != "host"}
    truth = {k: [] for k in ("trace_id", "host", "kind", "root_cause", "bifurcation_probe", "bifurcation_errno",
                             "origin_layer", "expected_error", "held_out")}
    tick = 4_000_000
    for n, ((tc, pid, comm, job, meta, tree), count) in enumerate(records):
        op, arg, frames = TREES[tree]
        family = TREE_FAMILY.get(tree)
        kind = "failure" if family else "good"
        tid = pid + (3 if comm == "python3" else 0)
        trace_id = f"{h.name}:{h.boot}:{tid}:{n}"
        mono = h.uptime_ns + (tc - h.t0)
        timed = h.in_window(tc)
        if timed:
            entry, lat = _frames_timing(frames, rng)
            root_lat = lat[0]
        else:
            mono = mono - mono % tick + tick
            entry, lat, root_lat = [0] * len(frames), [None] * len(frames), 0
        start = tc if timed else h.t0 + (mono - h.uptime_ns)
        end_t = start + root_lat
        root_err = frames[0][2]
        for seq, ((depth, fn, e), off, lt) in enumerate(zip(frames, entry, lat, strict=True)):
            rows["trace_id"].append(trace_id)
            rows["seq"].append(seq)
            rows["ts_ns"].append(mono + off)
            rows["pid"].append(pid)
            rows["tid"].append(tid)
            rows["ppid"].append(1 if comm == "rdma-healthd" else pid - 1 - (pid % 3))
            rows["comm"].append(comm)
            rows["probe"].append(fn)
            rows["layer"].append(LAYER[fn])
            rows["depth"].append(depth)
            rows["ret"].append(-ERRNO[e] if e else 0)
            rows["errno"].append(e)
            rows["latency_ns"].append(lt)
            rows["path"].append(None)
            rows["arg"].append(arg if seq == 0 else None)
            rows["path2"].append(None)
            rows["output"].append(None)
            rows["kind"].append(kind)
            rows["command"].append(op)
            rows["exit_status"].append(-ERRNO[root_err] if root_err else 0)
            rows["start_time"].append(start)
            rows["end_time"].append(end_t)
            rows["kernel_release"].append(RELEASE)
            rows["lost_events"].append(0)
            rows["job_id"].append(job)
            rows["metadata"].append(metadata_list(meta))
            rows["repeat_count"].append(count if count > 1 else None)
        truth["trace_id"].append(trace_id)
        truth["host"].append(h.name)
        truth["kind"].append(kind)
        truth["root_cause"].append(family)
        probe, errno, layer = FAMILIES[family] if family else (None, None, None)
        truth["bifurcation_probe"].append(probe)
        truth["bifurcation_errno"].append(errno)
        truth["origin_layer"].append(layer)
        truth["expected_error"].append(family in ROUTINE if family else False)
        truth["held_out"].append(False)
        summary["records"] += 1
    rows["host"] = [h.name] * len(rows["trace_id"])
    ev = pa.table({f.name: pa.array(rows[f.name], type=pa.int64() if f.name in ("start_time", "end_time") else f.type)
                   .cast(f.type) for f in EVENTS})
    write_partition(ev, root, "events", date, h.name, "part-0000.parquet", durable=False)
    write_partition(pl.DataFrame(truth), root, "truth", date, h.name, "part-0000.parquet", durable=False)
    # counters: every probe, every snapshot
    crow = {k: [] for k in ("snapshot_time", "interval_s", "kernel_release", "vendor", "probe_set", "probe", "layer",
                            "live", "invocations", "failures", "errno_counts", "lost_records")}
    for s in range(n_snaps):
        when = h.t0 + (s + 1) * snap_ns
        for fn in PROBES:
            calls, fails, errs = inv.get((s, fn), (0, 0, {}))
            crow["snapshot_time"].append(when)
            crow["interval_s"].append(float(SNAP_S))
            crow["kernel_release"].append(RELEASE)
            crow["vendor"].append("mlx5")
            crow["probe_set"].append("rdma-queries" if fn in QUERY_PROBES else "rdma")
            crow["probe"].append(fn)
            crow["layer"].append(LAYER[fn])
            crow["live"].append(True)
            crow["invocations"].append(calls)
            crow["failures"].append(fails)
            crow["errno_counts"].append([{"errno": e, "count": k} for e, k in sorted(errs.items())])
            crow["lost_records"].append(0)
    crow["host"] = [h.name] * len(crow["probe"])
    counters = pa.table({f.name: pa.array(crow[f.name], type=pa.int64() if f.name == "snapshot_time" else f.type)
                         .cast(f.type) for f in COUNTERS})
    path = write_partition(counters, root, "counters", date, h.name, "part-0000.parquet", durable=False)
    write_counter_buckets(path, counters, durable=False)


def _epoch_ns(date: dt.date, hour: float) -> int:
    base = dt.datetime(date.year, date.month, date.day, tzinfo=dt.UTC) + dt.timedelta(hours=hour)
    return int(base.timestamp()) * 10**9


def generate(root, *, hours: float = 4.0, seed: int = 46, faults: bool = True, contamination: str = "low",
             twin: bool = False) -> dict:
    """Write the learning day (`root`/learning, date D) and the audited day (`root`/audited, D+1);
    return a summary (hosts, times, counts). `contamination`: "low" (the faults' learning-day
    rates as in the module docstring) or "dense" (g05's EIO at 6 % of D's create_qp, g11's
    ENOMEM at 5 % of reg_mr from D's first hour on). `twin`: a second NIC of g05's bad lot, in
    g13, fails alike (same rates, both days)."""
    if contamination not in ("low", "dense"):
        raise ValueError(f"contamination: expected 'low' or 'dense', found {contamination!r}")
    root = Path(root)
    cause_hosts = {c: [h] for c, h in CAUSE_HOST.items()}
    if twin:
        cause_hosts["nic_cmd_eio"] = [NIC_HOST, TWIN_HOST]
    summary: dict = {"hosts": HOSTS, "faults": list(ROOT_CAUSES) if faults else [], "days": {}, "records": 0,
                     "contamination": contamination, "cause_hosts": cause_hosts}
    for d_i, (day, date) in enumerate(DAYS.items()):
        rng = random.Random(seed * 1000 + d_i)
        t0 = _epoch_ns(date, START_HOUR)
        t1 = t0 + int(hours * 3600) * 10**9
        hosts = {n: _Host(n, day, date, t0, t1, rng, contamination == "dense", cause_hosts) for n in HOSTS}
        for n in HOSTS:
            _agent(hosts[n], rng, faults)
        counter = [0]
        for first, second in PAIRS:
            _pair_jobs((hosts[first], hosts[second]), rng, faults, counter)
        out = root / day
        for n in HOSTS:
            _write_day(out, hosts[n], rng, summary)
        summary["days"][day] = {"date": date.isoformat(),
                                "start": dt.datetime.fromtimestamp(t0 / 1e9, dt.UTC).isoformat(),
                                "end": dt.datetime.fromtimestamp(t1 / 1e9, dt.UTC).isoformat(),
                                "jobs": counter[0]}
    summary["reload_at"] = dt.datetime.fromtimestamp(_epoch_ns(DAYS["learning"], START_HOUR) / 1e9 + 6000,
                                                     dt.UTC).isoformat()
    return summary

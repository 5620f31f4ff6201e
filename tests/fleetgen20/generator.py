"""fleetgen20: a twentieth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings), aimed at the edges of two
rules the expected-error learner gained in round twenty-one: (a) an error a driver/kernel update
brought is routine once shown harmless (enough occurrences timed in capture windows, the failure
rate it adds bounded within 5 %), and (b) a caller surviving an error on fewer than 3 hosts is
routine use, its repeated runs standing in for hosts, unless another program dies of it there.
Each case below survives in the sense those rules test and still costs something an SRE must see.

The fleet: mlx5 RoCE GPU hosts in racks of 8 (`fg20-r<RR>-h<H>`), on the upstream kernel
6.8.0-60-generic (no peer memory). NIC model ConnectX-7 (firmware 28.41.1000) except two hosts,
`r01-h6` and `r01-h7`, older ConnectX-6 Dx nodes (firmware 22.39.1002) pinned to an older
container image (`ngc-23.10`, its rdma-core provider from before CQE-compression fallback); the
model, firmware and image are in each trace's metadata only (the counters say `mlx5` for all).
One job slot a host: jobs of 8 ranks (comm python3), 12-25 minutes, 1-3 minutes apart. A rank
reads the 4 GID slots of its port (slot 3 empty), allocates a PD, registers two buffers, creates a
CQ (asking for CQE compression), creates 2 RC QPs and moves each RESET->INIT->RTR->RTS, then
re-registers a buffer every 4-6 minutes. A rank that fails fatally ends its job (the launcher kills
the others 0.5 s later, no kernel error of theirs); the next job starts 1-3 minutes later. A node
agent `rdma-nodeagent` on every host, once a minute, reads the 4 GID slots and registers a 64 MiB
probe buffer (Slurm's HealthCheckProgram uses its result); it never exits.

The daemon (`tracer run rdma -i 60s`, fexit on every traceable function of the trees below): 60 s
snapshots at a per-host phase, every call of every probe counted; a tree is emitted when any of its
probes fails, the first 3 of a signature (frames and errnos, whatever the process) per snapshot as
records and the rest in the third's repeat_count; good trees only when the root entered a capture
window (the first 30 s of every 5 minutes at a per-host phase), timed there; outside, a failure's
frames all carry the 4 ms tick its root returned in, latency null.

Fleet dynamics: a kernel update to 6.8.0-65-generic (its in-tree mlx5 driver) on two thirds of the
hosts (index mod 3 != 2, the two ConnectX-6 Dx hosts included) between 25 and 35 % of the window,
each at its own minute: a reboot, 3 minutes with nothing counted, a new boot (monotonic clock
restarts), the running job gone without a trace.

Routine families (truth expected_error, no root cause; the process goes on, at no cost):
  gid_empty_slot       query_gid ENODATA at rdma_get_gid_attr (empty slot 3), every host, ranks and
                       agent skip it.
  cq_compression_fallback  on 6.8.0-65 the driver refuses CQE compression it used to ignore:
                       create_cq EOPNOTSUPP at create_cq_user ("CQE compression or 128B padding
                       requested without HW cap"); on the ConnectX-7 hosts' image the provider
                       creates the CQ again without it at once (microseconds) and the rank goes on.
  memtest_memlock      ONE host runs `rdma-memtest` every 10 minutes: registers doubling buffers
                       until reg_mr ENOMEM at ib_umem_get (memlock limit), bisects (4 ENOMEM, 7
                       successes a run) and exits 0: how the tool finds the limit.
  pingmesh_stale_peer  TWO hosts run `rdma-pingmesh`, a daemon that every 2 minutes moves a QP per
                       peer RESET->INIT->RTR->RTS; its peer list still holds two decommissioned
                       hosts, whose INIT->RTR fails ETIMEDOUT at rdma_addr_find_l2_eth_by_grh after
                       the 1 s neighbour timeout, every round. It goes on; nothing depends on it.

Root causes (truth root_cause; ROOT_CAUSES: origin probe, errno, operation), with the reasons:
  update_create_qp_busy  on the ConnectX-7 hosts the update's driver serialises QP-context
                       firmware commands: CREATE_QP answers RES_BUSY (errno_conventions: -EBUSY at
                       mlx5_cmd_exec under mlx5_qpc_create_qp) on 30 % of calls after 0.4-1.2 s,
                       and the provider retries after 1-3 s until it passes; every rank survives,
                       but the good create_qp traces there take 150-600 ms instead of 1.5-4 ms and
                       a job's start-up grows by seconds a QP. Survived, timed in windows, no
                       process dies: exactly what rule (a) calls harmless. Decision: a root cause:
                       the update costs every upgraded host real time, an SRE wants it found and
                       rolled back; one cluster. No host alert required (two thirds of the fleet
                       alike: the cluster is the page), one naming EBUSY on an upgraded ConnectX-7
                       host is tolerated.
  cx6_cq_compression_refused  the same create_cq EOPNOTSUPP at create_cq_user on the two
                       ConnectX-6 Dx hosts after their update: their pinned image's provider does
                       not fall back, every rank dies. The scheduler requeues; after 3 jobs failed
                       at start it drains the host (Slurm's node failure limit), so the fatal
                       occurrences are few (2 hosts x 3 jobs x 8 ranks) beside thousands survived on
                       the ConnectX-7 hosts: fleet-wide the family "adds" ~2 % failures. Decision:
                       a root cause on those hosts (two nodes out of service after the update, a
                       fix for that model needed): one cluster; an alert naming EOPNOTSUPP on either
                       host tolerated, none required.
  nic_mkey_eio         ONE ConnectX-7 host (never upgraded) from 40 % of the window: its NIC's
                       firmware answers CREATE_MKEY with BAD_SYS_STATE (-EIO at mlx5_cmd_exec under
                       mlx5_core_create_mkey, create_real_mr, mlx5_ib_reg_user_mr). The fault comes
                       at the end of a job; the agent's health check fails at once, Slurm drains the
                       host, no job runs there again, so nothing dies of it: only the agent, a daemon
                       that logs and retries (3 tries 2 s apart, every minute), meets it, on one
                       host, with every run the same: exactly rule (b)'s "routine use". Decision: a
                       root cause; the host MUST alert (EIO, or a persistent bad state on a reg_mr
                       frame): a broken NIC that the agent's retries hide is what an SRE pages for.
  rare_rtr_arp_flap    once in the window on each of 8 hosts (fewer at small shapes), one rank's
                       INIT->RTR meets a neighbour-table flap: ETIMEDOUT at
                       rdma_addr_find_l2_eth_by_grh after 1 s, the rank dies with its job. Same
                       (operation, probe, errno) as pingmesh_stale_peer, which survives on fewer
                       than 3 hosts. One failure a host: no alert required and none may name it;
                       the cluster across the fleet is what an SRE wants.

Decided before the first audit, for what an SRE would want: one page (the broken-NIC host); the
update's busy retries, the ConnectX-6 refusal and the rare RTR timeouts found as clusters; the
ConnectX-7 fallback, memtest's ENOMEM, pingmesh's ETIMEDOUT and the empty GID slot set aside; no
alert on the memtest host, the pingmesh hosts, a rare-fault host or for the update's routine errno.

`generate(out_dir, hosts, hours, seed) -> summary` writes events, counters, counter_buckets and
truth in the dataset layout and `<out_dir>/fleetgen20.json`: `required_alert_hosts` (host -> errnos
an alert must name), `alert_hosts` (host -> errnos an alert may name), `broken_host`, `broken_at`,
`cx6_hosts`, `memtest_host`, `pingmesh_hosts`, `rare_hosts`, `upgrades` (host -> ISO time),
`busy_hosts`, `latency_ms` (operation create_qp good-trace median before/after on busy hosts),
`routine` and `causes` (label -> traces).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa

from tracer.schema import write_counter_buckets, write_partition

START = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
OLD_RELEASE, NEW_RELEASE = "6.8.0-60-generic", "6.8.0-65-generic"
SNAP_S, WINDOW_EVERY_S, WINDOW_S, TICK_S = 60.0, 300.0, 30.0, 0.004
ERRNO_NUM = {"ENODATA": 61, "ENOMEM": 12, "EIO": 5, "EBUSY": 16, "ETIMEDOUT": 110, "EOPNOTSUPP": 95}

ROOT_CAUSES = {
    "update_create_qp_busy": ("mlx5_cmd_exec", "EBUSY", "create_qp"),
    "cx6_cq_compression_refused": ("create_cq_user", "EOPNOTSUPP", "create_cq"),
    "nic_mkey_eio": ("mlx5_cmd_exec", "EIO", "reg_mr"),
    "rare_rtr_arp_flap": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "modify_qp"),
}
ROUTINE = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "query_gid"),
    "cq_compression_fallback": ("create_cq_user", "EOPNOTSUPP", "create_cq"),
    "memtest_memlock": ("ib_umem_get", "ENOMEM", "reg_mr"),
    "pingmesh_stale_peer": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "modify_qp"),
}

LAYER = {"uverbs": "uverbs", "core": "core", "driver": "driver"}


def _f(depth: int, fn: str, layer: str, errno: str | None = None) -> tuple[int, str, str, str | None]:
    return (depth, fn, layer, errno)


def _reg_mr(fail: str | None) -> list:
    e_top = {"ENOMEM": "ENOMEM", "EIO": "EIO"}.get(fail or "")
    tree = [_f(0, "ib_uverbs_reg_mr", "uverbs", e_top), _f(1, "rdma_alloc_begin_uobject", "core"),
            _f(1, "rdma_lookup_get_uobject", "core"), _f(1, "mlx5_ib_reg_user_mr", "driver", e_top),
            _f(2, "ib_umem_get", "core", "ENOMEM" if fail == "ENOMEM" else None),
            _f(3, "pin_user_pages_fast", "core")]
    if fail != "ENOMEM":
        tree.append(_f(3, "sg_alloc_append_table_from_pages", "core"))
        tree += [_f(2, "create_real_mr", "driver", e_top), _f(3, "alloc_cacheable_mr", "driver", e_top),
                 _f(4, "_mlx5_mr_cache_alloc", "driver", e_top), _f(5, "mlx5_core_create_mkey", "driver", e_top),
                 _f(6, "mlx5_cmd_exec", "driver", e_top)]
    if fail == "EIO":  # the umem pinned above is released as the error unwinds
        tree.append(_f(3, "__ib_umem_release", "core"))
    if fail:
        tree += [_f(1, "rdma_lookup_put_uobject", "core"), _f(1, "rdma_alloc_abort_uobject", "core")]
    else:
        tree += [_f(1, "rdma_restrack_add", "core"), _f(1, "rdma_lookup_put_uobject", "core"),
                 _f(1, "uverbs_response", "uverbs")]
    return tree


def _create_cq(fail: bool) -> list:
    e = "EOPNOTSUPP" if fail else None
    tree = [_f(0, "ib_uverbs_create_cq", "uverbs", e), _f(1, "create_cq", "uverbs", e),
            _f(2, "rdma_alloc_begin_uobject", "core"), _f(2, "mlx5_ib_create_cq", "driver", e),
            _f(3, "create_cq_user", "driver", e)]
    if fail:  # the flags are checked before anything is pinned
        return tree + [_f(2, "rdma_alloc_abort_uobject", "core")]
    return tree + [_f(4, "ib_umem_get", "core"), _f(4, "mlx5_ib_db_map_user", "driver"),
                   _f(3, "mlx5_comp_eqn_get", "driver"), _f(3, "mlx5_core_create_cq", "driver"),
                   _f(2, "rdma_restrack_add", "core"), _f(2, "uverbs_response", "uverbs")]


def _create_qp(fail: bool) -> list:
    e = "EBUSY" if fail else None
    tree = [_f(0, "ib_uverbs_create_qp", "uverbs", e), _f(1, "create_qp", "uverbs", e),
            _f(2, "rdma_alloc_begin_uobject", "core"), _f(2, "rdma_lookup_get_uobject", "core"),
            _f(2, "ib_create_qp_user", "core", e), _f(3, "create_qp", "core", e),
            _f(4, "mlx5_ib_create_qp", "driver", e), _f(5, "create_qp", "driver", e),
            _f(6, "create_user_qp", "driver", e), _f(7, "_create_user_qp", "driver"),
            _f(8, "ib_umem_get", "core"), _f(8, "mlx5_ib_db_map_user", "driver"),
            _f(7, "mlx5_qpc_create_qp", "driver", e), _f(8, "mlx5_cmd_exec", "driver", e)]
    if fail:  # the driver unwinds the user buffers; the core aborts the uobject
        return tree + [_f(7, "destroy_qp", "driver"), _f(2, "rdma_lookup_put_uobject", "core"),
                       _f(2, "rdma_alloc_abort_uobject", "core")]
    return tree + [_f(3, "ib_create_qp_security", "core"), _f(3, "rdma_restrack_add", "core"),
                   _f(2, "ib_qp_usecnt_inc", "core"), _f(2, "rdma_lookup_put_uobject", "core"),
                   _f(2, "uverbs_response", "uverbs")]


def _modify_qp(step: str, fail: bool = False) -> list:
    e = "ETIMEDOUT" if fail else None
    tree = [_f(0, "ib_uverbs_modify_qp", "uverbs", e), _f(1, "modify_qp", "uverbs", e),
            _f(2, "rdma_lookup_get_uobject", "core"), _f(2, "ib_modify_qp_with_udata", "core", e),
            _f(3, "_ib_modify_qp", "core", e)]
    if step == "init":
        tree.append(_f(4, "rdma_counter_bind_qp_auto", "core"))
    if step == "rtr":
        tree += [_f(4, "rdma_fill_sgid_attr", "core"), _f(5, "rdma_get_gid_attr", "core"),
                 _f(4, "ib_resolve_eth_dmac", "core", e), _f(5, "rdma_check_gid_user_access", "core"),
                 _f(5, "ib_resolve_unicast_gid_dmac", "core", e), _f(6, "rdma_addr_find_l2_eth_by_grh", "core", e)]
    if fail:  # the AV is released again; the driver is never called
        return tree + [_f(4, "rdma_unfill_sgid_attr", "core"), _f(2, "rdma_lookup_put_uobject", "core")]
    if step == "rtr":
        tree.append(_f(4, "rdma_lag_get_ah_roce_slave", "core"))
    tree += [_f(4, "ib_security_modify_qp", "core"), _f(5, "mlx5_ib_modify_qp", "driver"),
             _f(6, "__mlx5_ib_modify_qp", "driver"), _f(7, "mlx5_core_qp_modify", "driver"),
             _f(8, "mlx5_cmd_exec", "driver")]
    if step == "rtr":
        tree += [_f(4, "rdma_lag_put_ah_roce_slave", "core"), _f(4, "rdma_unfill_sgid_attr", "core")]
    return tree + [_f(2, "rdma_lookup_put_uobject", "core")]


def _query_gid(empty: bool) -> list:
    e = "ENODATA" if empty else None
    tree = [_f(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "uverbs", e), _f(1, "rdma_get_gid_attr", "core", e)]
    return tree if empty else tree + [_f(1, "rdma_read_gid_attr_ndev_rcu", "core"), _f(1, "rdma_put_gid_attr", "core")]


# (operation, variant) -> frames (depth, function, layer, errno or None), in call order
TREES: dict[tuple[str, str], list] = {
    ("query_gid", "ok"): _query_gid(False), ("query_gid", "empty"): _query_gid(True),
    ("alloc_pd", "ok"): [_f(0, "ib_uverbs_alloc_pd", "uverbs"), _f(1, "uverbs_request", "uverbs"),
                         _f(1, "rdma_alloc_begin_uobject", "core"), _f(1, "mlx5_ib_alloc_pd", "driver"),
                         _f(2, "mlx5_cmd_exec", "driver"), _f(1, "rdma_restrack_add", "core"),
                         _f(1, "uverbs_response", "uverbs")],
    ("reg_mr", "ok"): _reg_mr(None), ("reg_mr", "memlock"): _reg_mr("ENOMEM"), ("reg_mr", "eio"): _reg_mr("EIO"),
    ("create_cq", "ok"): _create_cq(False), ("create_cq", "refused"): _create_cq(True),
    ("create_qp", "ok"): _create_qp(False), ("create_qp", "busy"): _create_qp(True),
    ("modify_qp", "init"): _modify_qp("init"), ("modify_qp", "rtr"): _modify_qp("rtr"),
    ("modify_qp", "rts"): _modify_qp("rts"), ("modify_qp", "rtr_timeout"): _modify_qp("rtr", fail=True),
}
ARG = {"init": "RESET->INIT", "rtr": "INIT->RTR", "rts": "RTR->RTS", "rtr_timeout": "INIT->RTR"}
PROBES = sorted({(fn, layer) for tree in TREES.values() for _, fn, layer, _ in tree})


class _Call:
    """One root call: when it entered (s from START), who made it, which tree, what truth."""

    __slots__ = ("t", "dur", "pid", "tid", "ppid", "comm", "op", "variant", "job", "label", "fatal")

    def __init__(self, t, dur, pid, comm, op, variant, job=None, label=None, fatal=False, ppid=1):
        self.t, self.dur, self.pid, self.tid, self.ppid = t, dur, pid, pid, ppid
        self.comm, self.op, self.variant, self.job, self.label, self.fatal = comm, op, variant, job, label, fatal


class _Host:
    def __init__(self, name: str, index: int, rng: random.Random, span: float):
        self.name, self.index, self.span = name, index, span
        self.snap_phase = rng.uniform(0, SNAP_S)
        self.window_phase = rng.uniform(0, WINDOW_EVERY_S)
        self.cx6 = False
        self.upgrade_at: float | None = None  # reboot start; new boot 180 s later
        self.calls: list[_Call] = []
        self.next_pid = rng.randrange(20_000, 40_000)

    def pid(self) -> int:
        self.next_pid += 1 + (self.next_pid % 3)
        return self.next_pid

    def release(self, t: float) -> str:
        return NEW_RELEASE if self.upgrade_at is not None and t >= self.upgrade_at else OLD_RELEASE

    def down(self, t: float) -> bool:
        return self.upgrade_at is not None and self.upgrade_at <= t < self.upgrade_at + 180.0

    def in_window(self, t: float) -> bool:
        return (t - self.window_phase) % WINDOW_EVERY_S < WINDOW_S


def _job(host: _Host, rng: random.Random, t0: float, job: str, fates: dict) -> tuple[float, bool]:
    """One job of 8 ranks from t0; returns (when it ended, whether a rank died)."""
    new = host.release(t0) == NEW_RELEASE
    busy = new and not host.cx6
    ranks = [host.pid() for _ in range(8)]
    launcher = ranks[0] - 1
    length = rng.uniform(12 * 60, 25 * 60)
    death = None
    per_rank: list[list[_Call]] = []
    rare_rank = fates.get("rare_rank")
    for r, pid in enumerate(ranks):
        t = t0 + rng.uniform(0.2, 2.0)
        calls: list[_Call] = []

        def add(op, variant, dur, label=None, fatal=False, calls=calls, pid=pid):
            nonlocal t
            calls.append(_Call(t, dur, pid, "python3", op, variant, job, label, fatal, ppid=launcher))
            t += dur + rng.uniform(0.002, 0.02)
        for slot in range(4):
            add("query_gid", "empty" if slot == 3 else "ok", rng.uniform(8e-6, 3e-5),
                "routine:gid_empty_slot" if slot == 3 else None)
        add("alloc_pd", "ok", rng.uniform(2e-4, 6e-4))
        add("reg_mr", "ok", rng.uniform(2e-3, 9e-3))
        add("reg_mr", "ok", rng.uniform(2e-3, 9e-3))
        if new:
            if host.cx6:  # the pinned image's provider does not fall back: the rank dies
                add("create_cq", "refused", rng.uniform(1e-5, 4e-5), "cause:cx6_cq_compression_refused", True)
                per_rank.append(calls)
                death = t if death is None else min(death, t)
                continue
            add("create_cq", "refused", rng.uniform(1e-5, 4e-5), "routine:cq_compression_fallback")
        add("create_cq", "ok", rng.uniform(3e-4, 9e-4))
        for qp in range(2):
            if busy:
                while rng.random() < 0.30:
                    add("create_qp", "busy", rng.uniform(0.4, 1.2), "cause:update_create_qp_busy")
                    t += rng.uniform(1.0, 3.0)  # the provider's back-off before it asks again
                add("create_qp", "ok", rng.uniform(0.15, 0.6))
            else:
                add("create_qp", "ok", rng.uniform(1.5e-3, 4e-3))
            add("modify_qp", "init", rng.uniform(2e-4, 8e-4))
            if rare_rank == r and qp == 1:
                add("modify_qp", "rtr_timeout", rng.uniform(1.0, 1.02), "cause:rare_rtr_arp_flap", True)
                death = t if death is None else min(death, t)
                break
            add("modify_qp", "rtr", rng.uniform(3e-4, 1.2e-3))
            add("modify_qp", "rts", rng.uniform(2e-4, 8e-4))
        else:
            t_train = t + rng.uniform(240, 360)
            while t_train < t0 + length:
                calls.append(_Call(t_train, rng.uniform(2e-3, 9e-3), pid, "python3", "reg_mr", "ok", job, ppid=launcher))
                t_train += rng.uniform(240, 360)
        per_rank.append(calls)
    end = t0 + length if death is None else death + 0.5
    for calls in per_rank:  # the launcher's kill cuts every rank's later calls
        host.calls.extend(c for c in calls if c.t < end or c.fatal)
    return end, death is not None


def _build_fleet(hosts: int, hours: float, seed: int) -> tuple[list[_Host], dict]:
    rng = random.Random(seed)
    span = hours * 3600.0
    fleet = [_Host(f"fg20-r{i // 8:02d}-h{i % 8}", i, random.Random(seed * 1000 + i), span) for i in range(hosts)]
    by_name = {h.name: h for h in fleet}
    cx6 = [n for n in ("fg20-r01-h6", "fg20-r01-h7") if n in by_name]
    for n in cx6:
        by_name[n].cx6 = True
    for h in fleet:
        if h.index % 3 != 2 or h.cx6:
            h.upgrade_at = rng.uniform(0.25, 0.35) * span
    # special hosts: never upgraded (index mod 3 == 2), distinct
    plain = [h for h in fleet if h.upgrade_at is None]
    broken = plain[len(plain) // 2]
    memtest = plain[0]
    pingmesh = [plain[-1], plain[-2]]
    specials = {broken.name, memtest.name, *(p.name for p in pingmesh), *cx6}
    rare_pool = [h for h in fleet if h.name not in specials]
    rare = rng.sample(rare_pool, min(8, len(rare_pool)))
    broken_at = 0.40 * span
    for h in fleet:
        r = random.Random(seed * 7919 + h.index)
        rare_time = r.uniform(0.1, 0.9) * span if h in rare else None
        t = r.uniform(-600, 60)
        failed_in_row = 0
        while t < span:
            if h.down(t):
                t = h.upgrade_at + 180.0 + r.uniform(60, 180)
                continue
            if h is broken and t >= broken_at:
                break  # drained by Slurm at the end of the job the fault came after
            if failed_in_row >= 3:
                break  # Slurm's node failure limit: the host is drained
            fates = {}
            if rare_time is not None and t <= rare_time < t + 1500:
                fates["rare_rank"] = r.randrange(8)
                rare_time = None
            job = f"{700000 + h.index * 1000 + r.randrange(1000)}"
            end, died = _job(h, r, t, job, fates)
            if h.upgrade_at is not None and t < h.upgrade_at < end:  # the reboot takes the job
                h.calls = [c for c in h.calls if c.t < h.upgrade_at]
                end = h.upgrade_at
            if h is broken and t < broken_at < end:  # the job in progress ends at the fault
                h.calls = [c for c in h.calls if not (c.job == job and c.t >= broken_at)]
                end = broken_at
            failed_in_row = failed_in_row + 1 if died else 0
            t = end + r.uniform(60, 180)
        # the node agent, once a minute
        agent = h.pid()
        t = r.uniform(0, 60)
        while t < span:
            if not h.down(t):
                for slot in range(4):
                    h.calls.append(_Call(t + slot * 1e-4, r.uniform(8e-6, 3e-5), agent, "rdma-nodeagent", "query_gid",
                                         "empty" if slot == 3 else "ok", label="routine:gid_empty_slot" if slot == 3 else None))
                if h is broken and t >= broken_at:
                    for k in range(3):  # logs, waits 2 s, tries again; then waits for the next minute
                        h.calls.append(_Call(t + 0.01 + 2.0 * k, r.uniform(0.05, 0.2), agent, "rdma-nodeagent", "reg_mr",
                                             "eio", label="cause:nic_mkey_eio"))
                else:
                    h.calls.append(_Call(t + 0.01, r.uniform(3e-3, 9e-3), agent, "rdma-nodeagent", "reg_mr", "ok"))
            t += 60.0 + r.uniform(-0.5, 0.5)
        if h is memtest:
            t = r.uniform(0, 600)
            while t < span:
                if not h.down(t):
                    pid = h.pid()
                    for k in range(11):
                        fail = k in (3, 5, 7, 9)
                        h.calls.append(_Call(t + k * 0.05, r.uniform(2e-3, 2e-2), pid, "rdma-memtest", "reg_mr",
                                             "memlock" if fail else "ok", label="routine:memtest_memlock" if fail else None))
                t += 600.0
        if h in pingmesh:
            mesh = h.pid()
            t = r.uniform(0, 120)
            while t < span:
                u = t
                for peer in range(6):
                    stale = peer >= 4
                    h.calls.append(_Call(u, r.uniform(2e-4, 8e-4), mesh, "rdma-pingmesh", "modify_qp", "init"))
                    u += 0.01
                    if stale:
                        h.calls.append(_Call(u, r.uniform(1.0, 1.02), mesh, "rdma-pingmesh", "modify_qp", "rtr_timeout",
                                             label="routine:pingmesh_stale_peer"))
                        u += 1.05
                    else:
                        h.calls.append(_Call(u, r.uniform(3e-4, 1.2e-3), mesh, "rdma-pingmesh", "modify_qp", "rtr"))
                        h.calls.append(_Call(u + 0.01, r.uniform(2e-4, 8e-4), mesh, "rdma-pingmesh", "modify_qp", "rts"))
                        u += 0.02
                t += 120.0
        h.calls = [c for c in h.calls if 0 <= c.t < span and not h.down(c.t)]
        h.calls.sort(key=lambda c: c.t)
    rare_hosts = sorted({h.name for h in fleet for c in h.calls if c.label == "cause:rare_rtr_arp_flap"})
    info = {"broken": broken.name, "broken_at": broken_at, "memtest": memtest.name,
            "pingmesh": [p.name for p in pingmesh], "cx6": cx6, "rare": rare_hosts}
    return fleet, info


def _iso(s: float) -> str:
    return (START + timedelta(seconds=s)).isoformat()


def _ts(s: float) -> datetime:
    return START + timedelta(seconds=s)


def _write_host(out: Path, h: _Host, info: dict) -> dict[str, int]:
    """Emit the host's records, counters and truth; returns label -> traces written."""
    date = START.strftime("%Y-%m-%d")
    events: dict[str, list] = defaultdict(list)
    truth: dict[str, list] = defaultdict(list)
    labels: dict[str, int] = defaultdict(int)
    counts: dict[tuple[int, tuple[str, str]], int] = defaultdict(int)  # (snapshot, tree) -> calls
    emitted: dict[tuple[int, tuple[str, str]], list] = {}  # per snapshot signature: its records
    seq_no = 0
    good_no = 0
    model = "ConnectX-6 Dx" if h.cx6 else "ConnectX-7"
    fw = "22.39.1002" if h.cx6 else "28.41.1000"
    image = "ngc-23.10" if h.cx6 else "ngc-24.09"
    # a snapshot due while the host reboots is never written: the daemon died with the calls it held
    dropped = {s for s in range(int((h.span - h.snap_phase) // SNAP_S) + 2) if h.down(h.snap_phase + s * SNAP_S)}
    for c in h.calls:
        end = c.t + c.dur
        snap = int((end - h.snap_phase) // SNAP_S) + 1  # the snapshot closing at phase + snap * 60
        if snap in dropped:
            continue
        key = (c.op, c.variant)
        counts[(snap, key)] += 1
        tree = TREES[key]
        failed = tree[0][3] is not None or any(f[3] for f in tree)
        timed = h.in_window(c.t)
        if not failed and not timed:
            continue
        if failed:
            recs = emitted.setdefault((snap, key), [])
            if len(recs) >= 3:
                recs[2]["repeat"] += 1
                continue
        boot = 1 if h.upgrade_at is not None and c.t >= h.upgrade_at else 0
        boot_at = (h.upgrade_at + 180.0) if boot else -3 * 86400.0 - h.index * 61.0
        seq_no += 1
        rec = {"trace_id": f"{h.name}:{boot}:{c.tid}:{seq_no}", "call": c, "timed": timed, "repeat": 1,
               "boot_at": boot_at}
        if failed:
            emitted[(snap, key)].append(rec)
        if failed:
            events["rows"].append(rec)
        else:
            good_no += 1
            rec["held_out"] = good_no % 5 == 0
            events["rows"].append(rec)
    rows: list[dict] = []
    for rec in events["rows"]:
        c: _Call = rec["call"]
        tree = TREES[(c.op, c.variant)]
        failed = any(f[3] for f in tree)
        n = len(tree)
        end = c.t + c.dur
        tick_end = (end // TICK_S + 1) * TICK_S
        meta = [{"key": "device", "value": "mlx5_0"}, {"key": "nic_model", "value": model},
                {"key": "fw_version", "value": fw}, {"key": "image", "value": image}]
        for i, (depth, fn, layer, errno) in enumerate(tree):
            if rec["timed"]:
                eps = c.dur / (4 * n)
                start_s, lat = c.t + i * eps, c.dur - 2 * i * eps
                ts = int((start_s - rec["boot_at"]) * 1e9)
                latency = int(lat * 1e9)
            else:
                ts, latency = int((tick_end - rec["boot_at"]) * 1e9), None
            rows.append({
                "trace_id": rec["trace_id"], "seq": i, "ts_ns": ts, "pid": c.pid, "tid": c.tid, "ppid": c.ppid,
                "comm": c.comm, "probe": fn, "layer": layer, "depth": depth,
                "ret": -ERRNO_NUM[errno] if errno else 0, "errno": errno, "latency_ns": latency,
                "arg": ARG.get(c.variant) if c.op == "modify_qp" else None,
                "kind": "failure" if failed else "good", "command": c.op,
                "exit_status": -ERRNO_NUM[tree[0][3]] if tree[0][3] else 0,
                "start_time": _ts(c.t if rec["timed"] else tick_end), "end_time": _ts(end if rec["timed"] else tick_end),
                "kernel_release": h.release(c.t), "lost_events": 0, "job_id": c.job, "metadata": meta,
                "repeat_count": rec["repeat"] if rec["repeat"] > 1 else None,
            })
        cause = routine = None
        if c.label:
            kind_, _, name = c.label.partition(":")
            # a routine family is named too (expected_error true): evaluate scores each family apart
            cause, routine = name, (name if kind_ == "routine" else None)
            labels[name] += 1
        origin = next(((fn, layer, errno) for _, fn, layer, errno in reversed(tree) if errno), None)
        truth["rows"].append({
            "trace_id": rec["trace_id"], "kind": "failure" if failed else "good", "root_cause": cause,
            "bifurcation_probe": origin[0] if origin else None, "bifurcation_errno": origin[2] if origin else None,
            "origin_layer": origin[1] if origin else None, "expected_error": routine is not None,
            "held_out": bool(rec.get("held_out", False)),
        })
    write_partition(pa.Table.from_pylist(rows), out, "events", date, h.name, "part-0000.parquet")
    write_partition(pa.Table.from_pylist(truth["rows"]), out, "truth", date, h.name, "part-0000.parquet")
    # counters: every probe, every snapshot the host was up for
    per_snap: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(lambda: [0, 0, defaultdict(int)]))
    for (snap, key), n in counts.items():
        for _, fn, _, errno in TREES[key]:
            cell = per_snap[snap][fn]
            cell[0] += n
            if errno:
                cell[1] += n
                cell[2][errno] += n
    crows = []
    last = int((h.span - h.snap_phase) // SNAP_S)
    for snap in range(1, last + 1):
        when = h.snap_phase + snap * SNAP_S
        if snap in dropped:
            continue
        cells = per_snap.get(snap, {})
        for fn, layer in PROBES:
            inv, fails, hist = cells.get(fn, (0, 0, {}))
            crows.append({"snapshot_time": _ts(when), "interval_s": SNAP_S, "kernel_release": h.release(when),
                          "vendor": "mlx5", "probe_set": "rdma", "probe": fn, "layer": layer, "live": True,
                          "invocations": inv, "failures": fails,
                          "errno_counts": [{"errno": e, "count": k} for e, k in sorted(hist.items())] or None,
                          "lost_records": 0, "host": h.name})
    path = write_partition(pa.Table.from_pylist(crows), out, "counters", date, h.name, "part-0000.parquet")
    write_counter_buckets(path)
    return labels


def generate(out_dir, hosts: int = 48, hours: float = 2.0, seed: int = 20) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fleet, info = _build_fleet(hosts, hours, seed)
    routine: dict[str, int] = defaultdict(int)
    causes: dict[str, int] = defaultdict(int)
    for h in fleet:
        for name, n in _write_host(out, h, info).items():
            (routine if name in ROUTINE else causes)[name] += n
    busy_hosts = sorted(h.name for h in fleet if h.upgrade_at is not None and not h.cx6)
    before = sorted(c.dur for h in fleet if h.name in busy_hosts for c in h.calls
                    if c.op == "create_qp" and c.variant == "ok" and c.t < h.upgrade_at)
    after = sorted(c.dur for h in fleet if h.name in busy_hosts for c in h.calls
                   if c.op == "create_qp" and c.variant == "ok" and c.t >= h.upgrade_at)
    alert_hosts = {info["broken"]: ["EIO"]}
    alert_hosts.update({n: ["EOPNOTSUPP"] for n in info["cx6"]})
    alert_hosts.update({n: ["EBUSY"] for n in busy_hosts})
    summary = {
        "required_alert_hosts": {info["broken"]: ["EIO"]}, "alert_hosts": alert_hosts,
        "broken_host": info["broken"], "broken_at": _iso(info["broken_at"]), "cx6_hosts": info["cx6"],
        "memtest_host": info["memtest"], "pingmesh_hosts": info["pingmesh"], "rare_hosts": info["rare"],
        "upgrades": {h.name: _iso(h.upgrade_at) for h in fleet if h.upgrade_at is not None},
        "busy_hosts": busy_hosts,
        "latency_ms": {"before": 1000 * before[len(before) // 2] if before else None,
                       "after": 1000 * after[len(after) // 2] if after else None},
        "routine": dict(routine), "causes": dict(causes),
    }
    (out / "fleetgen20.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

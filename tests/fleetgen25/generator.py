"""fleetgen25: a twenty-fifth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings only), aimed at judgements that
are hard in time and in the counters rather than in the call trees: a routine errno whose rate on
one host climbs for two hours (a neighbour leaking objects into a shared rdma cgroup) until the
processes there die of it, a link that flaps in bursts of a few minutes on one host, an intermittent
firmware fault whose failures mostly fall outside the capture windows, and the clock and daemon
artefacts a real fleet has beside them (a rack's wall clocks minutes ahead, tracer daemons
restarting and a snapshot lost, a counter reset shipped as a negative delta, a host rebooted with a
new boot id, a maintenance drain killing every process of a host with no fault at all).

The fleet: mlx5 (ConnectX-7, RoCEv2) training hosts in racks of 8 (`fg25-r<RR>-h<H>`), all on the
upstream kernel 6.8.0-60-generic (no peer memory). Every host runs 3 worker slots under a
supervisor; a worker (comm python3, one process) lives 8-20 minutes, and the supervisor starts the
next one 20-60 s after it exits (15-45 s after it died). A worker starts with six GID reads
(query_gid of slots 0-5 of its port: 0/1 the link-local GIDs, 2/3 the IPv4 ones it uses, RoCEv2 at
index 3; 4/5 would hold a global IPv6 address, which no host has, so they are empty and rdma-core
skips them), alloc_pd, two reg_mr, create_cq, create_qp, and RESET->INIT->RTR->RTS; it then
registers a new buffer every 1-2.5 minutes (its MR cache), and exits. Each worker's processes belong to
one pod cgroup with an rdma hca_object limit the MR cache is tuned against: when a registration
meets the limit (EAGAIN at ib_rdmacg_try_charge), the cache evicts cold entries and tries again
(5 s, 15 s, 30 s later); only a fourth refusal is given up on, and the worker exits.

The daemon (`tracer run rdma -i 60s`, fexit on the functions of the trees below; a name that
resolves to several kernel symbols -- the static create_qp/create_cq of uverbs_cmd.c, verbs.c and
mlx5 -- cannot be attached by name and is not in the probe set): 60 s snapshots at a per-host
phase, every call counted per probe (invocations, failures, errno histogram), a tree emitted when
any probe of it fails (per snapshot the first 3 of a signature as records, the rest in the third's
repeat_count), good trees only inside capture windows (the first 30 s of every 5 minutes, per-host
phase), where every tree is timed; outside them failure records carry the 4 ms tick of their
root's return (latency null).

What happens (truth; a trace is routine, expected_error=True, when its process goes on after it,
and a root cause when the process dies of it):
  ROUTINE
  - gid_slot_empty_skipped: query_gid ENODATA at rdma_get_gid_attr, slots 4 and 5 on every host at
    every worker start (and 2, 3 as well on the flapping host while its link is down): rdma-core
    skips an empty slot, the worker goes on. Same origin frame and errno as port_flap_gid_gone.
  - mr_cache_cgroup_retry: reg_mr EAGAIN at ib_rdmacg_try_charge, ~5 % of registrations on every
    host; the cache evicts and retries, the worker goes on. On the noisy-neighbour host too, while
    a retry can still get through (before the cgroup is full): a refusal the worker retried after
    is routine there even in a loop that later ends in a fourth refusal.
  ROOT CAUSES
  - neighbour_leak_cgroup_full (subtle, in time and counters): on one host a neighbour's leaking
    agent fills the pod's rdma cgroup from 20 % of the window on; the share of refused
    registrations climbs from 5 % to 85 % at 75 % of the window, more and more retry loops end in
    a fourth refusal and the worker dies (that last refusal is the root cause; same chain as the
    routine family), and from 75 % of the window the cgroup is full: every charge fails, every
    refusal is the root cause (no retry can get through), and new workers crash-loop at alloc_pd
    (EAGAIN at ib_rdmacg_try_charge under alloc_pd). The host's counters show EAGAIN rising for
    two hours before anything dies.
  - port_flap_gid_gone: on one host the port flaps: 7 bursts of 2-5 minutes in which the IPv4
    address is gone and with it GID slots 2 and 3. At a burst's start the running workers' QPs go
    to the error state (an async event, no traced call) and their NCCL aborts; the supervisor
    restarts them into the burst, and a worker starting then fails INIT->RTR with ENODATA at
    rdma_get_gid_attr (rdma_fill_sgid_attr, sgid index 3) and dies, again and again until the
    link is back. Between bursts the host is healthy. The same frame and errno are routine in
    query_gid on every host (and in the dying workers' own GID reads just before).
  - fw_qp_create_eio: on one host (in the skewed rack) the firmware refuses ~30 % of CREATE_QP
    with an internal error (EIO at mlx5_cmd_exec under mlx5_qpc_create_qp), a worker dies each
    time; a few an hour, at any time, so nine in ten fall outside a capture window: untimed
    records and the counters show them.
  A record standing for others (repeat_count) carries its own tree's truth: the kernel aggregates
  identical trees over every process, so on the neighbour's host a routine refusal's record may
  stand for a fatal one too, and the reverse (the summary's family_failures counts each tree).
  NO FAULT (nothing to find; no alert)
  - rack 3's wall clocks are 4 minutes ahead (start/end times and snapshot times alike);
  - two hosts' daemons restart once (90 s down, the snapshot in progress lost, the calls of that
    time neither counted nor recorded; on one the exporter ships the restart as a negative delta
    of the counts so far);
  - one host reboots (kernel unchanged): every worker killed, 6 minutes dark, a new boot id in the
    trace ids, the monotonic clock and pids starting again;
  - one host is drained for maintenance: every worker killed (no error), none started for 12
    minutes, its daemon reporting on.

What a correct audit shows: both routine families set aside on every host (the neighbour's and the
flapping host's included: their workers went on); three clusters, one per root cause, each over
its one host (the leak's reg_mr and alloc_pd refusals one host-local fault: same errno, same
origin); host alerts on exactly the three faulty hosts with their errno (or a persistent bad
state), the neighbour's beginning before its cgroup is full (its EAGAIN out of the fleet's band
for over an hour by then), and none on the restarted, rebooted, drained or skewed hosts.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
from fleet_tables import frame

from tracer.schema import metadata_list, polars_schema, write_counter_buckets, write_partition

KERNEL = "6.8.0-60-generic"
START = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
SNAP_S = 60
WINDOW_EVERY_S = 300
WINDOW_S = 30
K_RECORDS = 3
TICK_NS = 4_000_000
SLOTS = 3
COMM = "python3"
SKEW_RACK = 3
SKEW_S = 240.0
METADATA = {"image": "trainer:2026.11.3", "nic_fw": "28.41.1000"}

ERRNO_NUM = {"ENODATA": 61, "EAGAIN": 11, "EIO": 5}

# (depth, function, layer, errno) -- every function from reference/rdma_control_path.yaml
_U, _C, _D = "uverbs", "core", "driver"


def _tree(frames: list[tuple], fail: dict[str, str] | None = None) -> tuple:
    """The frames with `fail` {function: errno} set on those that fail."""
    fail = fail or {}
    return tuple((d, fn, layer, fail.get(fn)) for d, fn, layer in frames)


_QUERY_GID = [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", _U), (1, "rdma_get_gid_attr", _C),
              (1, "rdma_read_gid_attr_ndev_rcu", _C), (1, "rdma_put_gid_attr", _C)]
_ALLOC_PD = [(0, "ib_uverbs_alloc_pd", _U), (1, "rdma_alloc_begin_uobject", _C), (2, "ib_rdmacg_try_charge", _C),
             (1, "mlx5_ib_alloc_pd", _D), (2, "mlx5_cmd_exec", _D), (1, "rdma_restrack_add", _C)]
_REG_MR = [(0, "ib_uverbs_reg_mr", _U), (1, "rdma_alloc_begin_uobject", _C), (2, "ib_rdmacg_try_charge", _C),
           (1, "rdma_lookup_get_uobject", _C), (1, "mlx5_ib_reg_user_mr", _D), (2, "mlx5r_umr_resource_init", _D),
           (2, "ib_umem_get", _C), (3, "pin_user_pages_fast", _C), (3, "sg_alloc_append_table_from_pages", _C),
           (2, "create_real_mr", _D), (3, "alloc_cacheable_mr", _D), (3, "mlx5r_umr_update_mr_pas", _D),
           (1, "rdma_restrack_add", _C), (1, "rdma_lookup_put_uobject", _C)]
_CREATE_CQ = [(0, "ib_uverbs_create_cq", _U), (1, "rdma_alloc_begin_uobject", _C), (2, "ib_rdmacg_try_charge", _C),
              (1, "mlx5_ib_create_cq", _D), (2, "create_cq_user", _D), (3, "ib_umem_get", _C),
              (3, "mlx5_ib_db_map_user", _D), (2, "mlx5_comp_eqn_get", _D), (2, "mlx5_core_create_cq", _D),
              (1, "rdma_restrack_add", _C)]
_CREATE_QP = [(0, "ib_uverbs_create_qp", _U), (1, "rdma_alloc_begin_uobject", _C), (2, "ib_rdmacg_try_charge", _C),
              (1, "rdma_lookup_get_uobject", _C), (1, "rdma_lookup_get_uobject", _C), (1, "ib_create_qp_user", _C),
              (2, "mlx5_ib_create_qp", _D), (3, "create_user_qp", _D), (4, "_create_user_qp", _D),
              (5, "ib_umem_get", _C), (5, "mlx5_ib_db_map_user", _D), (4, "mlx5_qpc_create_qp", _D),
              (5, "mlx5_cmd_exec", _D), (2, "ib_create_qp_security", _C), (2, "rdma_restrack_add", _C),
              (1, "ib_qp_usecnt_inc", _C), (1, "rdma_lookup_put_uobject", _C)]
# a firmware refusal: the error unwinds from mlx5_qpc_create_qp (no security/restrack after it)
_CREATE_QP_EIO = _CREATE_QP[:13] + [(1, "rdma_lookup_put_uobject", _C), (1, "rdma_alloc_abort_uobject", _C)]
_MODIFY_HEAD = [(0, "ib_uverbs_modify_qp", _U), (1, "modify_qp", _U), (2, "rdma_lookup_get_uobject", _C),
                (2, "ib_modify_qp_with_udata", _C), (3, "_ib_modify_qp", _C)]
_MODIFY_DRIVER = [(4, "mlx5_ib_modify_qp", _D), (5, "ib_modify_qp_is_ok", _C), (5, "__mlx5_ib_modify_qp", _D)]
_MODIFY_INIT = (_MODIFY_HEAD + [(4, "rdma_counter_bind_qp_auto", _C)] + _MODIFY_DRIVER
                + [(6, "mlx5_core_qp_modify", _D), (7, "mlx5_cmd_exec", _D), (2, "rdma_lookup_put_uobject", _C)])
_MODIFY_RTR = (_MODIFY_HEAD + [(4, "rdma_fill_sgid_attr", _C), (5, "rdma_get_gid_attr", _C),
                               (4, "ib_resolve_eth_dmac", _C), (5, "rdma_check_gid_user_access", _C),
                               (5, "ib_resolve_unicast_gid_dmac", _C), (6, "rdma_addr_find_l2_eth_by_grh", _C),
                               (4, "rdma_lag_get_ah_roce_slave", _C)] + _MODIFY_DRIVER
               + [(6, "mlx5_set_path", _D), (6, "mlx5_core_qp_modify", _D), (7, "mlx5_cmd_exec", _D),
                  (4, "rdma_lag_put_ah_roce_slave", _C), (4, "rdma_unfill_sgid_attr", _C),
                  (2, "rdma_lookup_put_uobject", _C)])
# the source GID is gone: the sgid fill fails before the driver is asked
_MODIFY_RTR_NOGID = _MODIFY_HEAD + [(4, "rdma_fill_sgid_attr", _C), (5, "rdma_get_gid_attr", _C),
                                    (2, "rdma_lookup_put_uobject", _C)]
_MODIFY_RTS = _MODIFY_HEAD + _MODIFY_DRIVER + [(6, "mlx5_core_qp_modify", _D), (7, "mlx5_cmd_exec", _D),
                                               (2, "rdma_lookup_put_uobject", _C)]

_CHARGE_PATH = ("ib_rdmacg_try_charge", "rdma_alloc_begin_uobject")
TREES: dict[str, tuple] = {
    "query_gid": _tree(_QUERY_GID),
    "query_gid_empty": _tree(_QUERY_GID[:2], {f: "ENODATA" for f in ("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY",
                                                                     "rdma_get_gid_attr")}),
    "alloc_pd": _tree(_ALLOC_PD),
    "alloc_pd_eagain": _tree(_ALLOC_PD[:3], {f: "EAGAIN" for f in ("ib_uverbs_alloc_pd", *_CHARGE_PATH)}),
    "reg_mr": _tree(_REG_MR),
    "reg_mr_eagain": _tree(_REG_MR[:3], {f: "EAGAIN" for f in ("ib_uverbs_reg_mr", *_CHARGE_PATH)}),
    "create_cq": _tree(_CREATE_CQ),
    "create_qp": _tree(_CREATE_QP),
    "create_qp_eio": _tree(_CREATE_QP_EIO, {f: "EIO" for f in (
        "ib_uverbs_create_qp", "ib_create_qp_user", "mlx5_ib_create_qp", "create_user_qp", "mlx5_qpc_create_qp",
        "mlx5_cmd_exec")}),
    "modify_init": _tree(_MODIFY_INIT),
    "modify_rtr": _tree(_MODIFY_RTR),
    "modify_rtr_nogid": _tree(_MODIFY_RTR_NOGID, {f: "ENODATA" for f in (
        "ib_uverbs_modify_qp", "modify_qp", "ib_modify_qp_with_udata", "_ib_modify_qp", "rdma_fill_sgid_attr",
        "rdma_get_gid_attr")}),
    "modify_rts": _tree(_MODIFY_RTS),
}
OPERATION = {"query_gid": "query_gid", "query_gid_empty": "query_gid", "alloc_pd": "alloc_pd",
             "alloc_pd_eagain": "alloc_pd", "reg_mr": "reg_mr", "reg_mr_eagain": "reg_mr", "create_cq": "create_cq",
             "create_qp": "create_qp", "create_qp_eio": "create_qp", "modify_init": "modify_qp",
             "modify_rtr": "modify_qp", "modify_rtr_nogid": "modify_qp", "modify_rts": "modify_qp"}
ARG = {"modify_init": "RESET->INIT", "modify_rtr": "INIT->RTR", "modify_rtr_nogid": "INIT->RTR",
       "modify_rts": "RTR->RTS"}
PROBES: dict[str, str] = {}
for _frames in TREES.values():
    for _d, _fn, _layer, _e in _frames:
        PROBES.setdefault(_fn, _layer)

# family -> (origin probe, errno, origin layer)
ROUTINE = {
    "gid_slot_empty_skipped": ("rdma_get_gid_attr", "ENODATA", "core"),
    "mr_cache_cgroup_retry": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
}
ROOT_CAUSES = {
    "neighbour_leak_cgroup_full": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "port_flap_gid_gone": ("rdma_get_gid_attr", "ENODATA", "core"),
    "fw_qp_create_eio": ("mlx5_cmd_exec", "EIO", "driver"),
}

BASE_REFUSAL = 0.05  # share of MR registrations meeting the cgroup limit on any host
LEAK_PEAK = 0.85  # on the neighbour's host just before the cgroup is full
EIO_SHARE = 0.30
RETRY_BACKOFF_S = (5.0, 15.0, 30.0)


def _hosts(n: int) -> list[dict]:
    if n < 32:
        raise ValueError("fleetgen25 needs 32 hosts or more (its roles sit in racks 0-3)")
    hosts = []
    for i in range(n):
        rack, h = divmod(i, 8)
        hosts.append({"i": i, "name": f"fg25-r{rack:02d}-h{h}", "rack": rack,
                      "skew_s": SKEW_S if rack == SKEW_RACK else 0.0})
    return hosts


ROLE_INDEX = {"leak": 11, "flap": 21, "fw_eio": 30, "daemon_restart": 6, "exporter_reset": 26, "reboot": 15,
              "drain": 16}


def _frame_times(frames: tuple, t0_ns: int, rng: random.Random) -> tuple[list[int], list[int]]:
    """Entry times and latencies (ns) of a timed tree's frames, nested by depth."""
    entries: list[int] = []
    exits: list[int | None] = [None] * len(frames)
    stack: list[int] = []
    t = t0_ns
    for i, (depth, fn, _layer, errno) in enumerate(frames):
        while stack and frames[stack[-1]][0] >= depth:
            t += rng.randint(80, 400)
            exits[stack.pop()] = t
        t += rng.randint(100, 600)
        entries.append(t)
        if fn == "mlx5_cmd_exec":
            t += rng.randint(40_000, 400_000) if errno is None else rng.randint(200_000, 2_000_000)
        elif fn == "pin_user_pages_fast":
            t += rng.randint(30_000, 300_000)
        else:
            t += rng.randint(300, 3_000)
        stack.append(i)
    while stack:
        t += rng.randint(80, 400)
        exits[stack.pop()] = t
    return entries, [e - s for s, e in zip(entries, exits, strict=True)]


class _Host:
    """One host's calls: (time s since START, tree, pid, job, family or None, expected)."""

    def __init__(self, host: dict, duration: float, rng: random.Random, roles: dict):
        self.h = host
        self.D = duration
        self.rng = rng
        self.calls: list[tuple] = []
        self.name = host["name"]
        self.role = {r for r, ix in ROLE_INDEX.items() if ix == host["i"]}
        self.next_pid = rng.randint(20_000, 60_000)
        self.kill_at: list[tuple[float, float]] = []  # (kill time, resume time)
        if "reboot" in self.role:
            self.kill_at.append((roles["reboot_at"], roles["reboot_at"] + 360 + 60))
        if "drain" in self.role:
            self.kill_at.append((roles["drain_at"], roles["drain_at"] + 720))
        self.bursts = roles["bursts"] if "flap" in self.role else []
        # a burst's first seconds: the running workers' QPs go to the error state (an async event,
        # not a traced call) and NCCL aborts them; the supervisor restarts them into the burst
        self.kill_at += [(a, a) for a, _b in self.bursts]
        self.leak_start, self.saturation = roles["leak_start"], roles["saturation"]

    def refusal(self, t: float, op: str) -> float:
        """Share of this op's cgroup charges refused at t."""
        if "leak" not in self.role:
            return BASE_REFUSAL if op == "reg_mr" else 0.0
        if t >= self.saturation:
            return 1.0
        if op != "reg_mr":
            return 0.0
        if t < self.leak_start:
            return BASE_REFUSAL
        x = (t - self.leak_start) / (self.saturation - self.leak_start)
        return BASE_REFUSAL + (LEAK_PEAK - BASE_REFUSAL) * x ** 1.5

    def link_down(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.bursts)

    def killed(self, start: float, t: float) -> float | None:
        """The time a process started at `start` is killed by a drain/reboot before `t`, if it is."""
        for k, _ in self.kill_at:
            if start < k <= t:
                return k
        return None

    def down(self, t: float) -> float | None:
        """The resume time when no worker may start at t (rebooting/draining)."""
        for k, resume in self.kill_at:
            if k <= t < resume:
                return resume
        return None

    def simulate(self) -> None:
        for slot in range(SLOTS):
            t = self.rng.uniform(0, 60)
            n = 0
            while t < self.D:
                if (resume := self.down(t)) is not None:
                    t = resume + self.rng.uniform(0, 30)
                    continue
                self.next_pid += self.rng.randint(3, 60)
                pid, n = self.next_pid, n + 1
                if "reboot" in self.role and t >= self.kill_at[0][1] - 60:
                    pid = 1_200 + (pid % 3_000)
                job = f"{self.name}-s{slot}-{n}"
                died, end = self._worker(t, pid, job)
                aborted = any(k == end for k, _ in self.kill_at)
                t = end + (self.rng.uniform(15, 45) if died or aborted else self.rng.uniform(20, 60))

    def _worker(self, t0: float, pid: int, job: str) -> tuple[bool, float]:
        life = self.rng.uniform(480, 1200)
        rng = self.rng
        out: list[tuple] = []
        t = t0

        def call(tree: str, family: str | None = None, expected: bool = False) -> bool:
            """Emit a call at t unless the process was killed before; False when it was."""
            nonlocal t
            if (k := self.killed(t0, t)) is not None or t >= self.D:
                t = min(k or t, self.D)
                return False
            out.append((t, tree, pid, job, family, expected))
            t += rng.uniform(0.002, 0.03)
            return True

        def reg_mr() -> bool | None:
            """The cache's registration with its retries: True done, False died, None killed."""
            nonlocal t
            for attempt in range(len(RETRY_BACKOFF_S) + 1):
                if rng.random() >= self.refusal(t, "reg_mr"):
                    return True if call("reg_mr") else None
                last = attempt == len(RETRY_BACKOFF_S)
                # the cgroup full, no retry can get through: the worker is dying of it
                fatal = last or ("leak" in self.role and t >= self.saturation)
                fam = "neighbour_leak_cgroup_full" if fatal else "mr_cache_cgroup_retry"
                if not call("reg_mr_eagain", fam, not fatal):
                    return None
                if last:
                    return False
                t += RETRY_BACKOFF_S[attempt] * rng.uniform(0.9, 1.2)
            return False  # (not reached)

        def finish(died: bool) -> tuple[bool, float]:
            self.calls.extend(out)
            return died, t

        down = self.link_down(t)
        for slot in range(6):
            empty = slot >= 4 or (down and slot in (2, 3))
            if not call("query_gid_empty" if empty else "query_gid",
                        "gid_slot_empty_skipped" if empty else None, empty):
                return finish(False)
        if rng.random() < self.refusal(t, "alloc_pd"):
            call("alloc_pd_eagain", "neighbour_leak_cgroup_full", False)
            return finish(True)
        if not call("alloc_pd"):
            return finish(False)
        for _ in range(2):
            ok = reg_mr()
            if ok is None:
                return finish(False)
            if not ok:
                return finish(True)
        if not call("create_cq"):
            return finish(False)
        if "fw_eio" in self.role and rng.random() < EIO_SHARE:
            call("create_qp_eio", "fw_qp_create_eio", False)
            return finish(True)
        if not call("create_qp") or not call("modify_init"):
            return finish(False)
        if self.link_down(t):
            call("modify_rtr_nogid", "port_flap_gid_gone", False)
            return finish(True)
        if not call("modify_rtr") or not call("modify_rts"):
            return finish(False)
        end = t0 + life
        while True:
            t += rng.uniform(60, 150)
            if t >= end:
                t = end
                if (k := self.killed(t0, t)) is not None:
                    t = k
                return finish(False)
            ok = reg_mr()
            if ok is None:
                return finish(False)
            if not ok:
                return finish(True)


def _roles(rng: random.Random, duration: float) -> dict:
    bursts = []
    while len(bursts) < 7:
        a = rng.uniform(600, duration - 600)
        b = a + rng.uniform(120, 300)
        if all(b + 300 < x or a > y + 300 for x, y in bursts):
            bursts.append((a, b))
    bursts.sort()
    return {"bursts": bursts, "leak_start": 0.2 * duration, "saturation": 0.75 * duration,
            "reboot_at": 0.45 * duration, "drain_at": 0.52 * duration,
            "restart_at": {ROLE_INDEX["daemon_restart"]: 0.38 * duration,
                           ROLE_INDEX["exporter_reset"]: 0.61 * duration}}


def _emit_host(root: Path, host: dict, roles: dict, duration: float, seed: int, stats: dict) -> None:
    """Simulate one host and write its events, truth and counters (and the counters' summary)."""
    date = START.strftime("%Y-%m-%d")
    event_types = polars_schema("events")
    counter_types = polars_schema("counters")
    truth_types = polars_schema("truth")
    family_hosts, family_traces, family_failures, deaths = (
        stats["family_hosts"], stats["family_traces"], stats["family_failures"], stats["deaths"])
    hrng = random.Random(f"{seed}-{host['name']}")
    sim = _Host(host, duration, hrng, roles)
    sim.simulate()
    calls = sorted(sim.calls, key=lambda c: c[0])
    snap_phase = hrng.uniform(0, SNAP_S)
    win_phase = hrng.uniform(0, WINDOW_EVERY_S)
    boot_up_ns = hrng.randint(3, 60) * 86_400 * 10**9  # uptime at START
    boot = f"{hrng.getrandbits(32):08x}"
    # daemon gaps: (lost from, counting again at); the snapshot in progress is lost
    gaps: list[tuple[float, float]] = []
    reboot = None
    if "reboot" in sim.role:
        k, resume = sim.kill_at[0]
        reboot = (k, k + 360)  # dark; the daemon is back 20 s after boot
        gaps.append((k, k + 380))
    restart = roles["restart_at"].get(host["i"])
    if restart is not None:
        gaps.append((restart, restart + 90))
    snaps = [snap_phase + SNAP_S * k for k in range(1, int(duration // SNAP_S) + 2) if
             snap_phase + SNAP_S * k <= duration]
    lost: list[tuple[float, float]] = []
    missing: set[int] = set()
    for a, b in gaps:
        before = max([s for s in snaps if s <= a], default=0.0)
        lost.append((before, b))
        missing |= {k for k, s in enumerate(snaps) if before < s < b}

    def in_lost(t: float) -> bool:
        return any(a < t < b for a, b in lost)

    def snap_of(t: float) -> int | None:
        k = math.ceil((t - snap_phase) / SNAP_S) - 1
        return k if 0 <= k < len(snaps) else None

    def in_window(t: float) -> bool:
        return ((t - win_phase) % WINDOW_EVERY_S) < WINDOW_S

    def mono_ns(t: float) -> int:
        if reboot is not None and t >= reboot[1]:
            return int((25.0 + t - reboot[1]) * 1e9)
        return boot_up_ns + int(t * 1e9)

    def boot_of(t: float) -> str:
        if reboot is not None and t >= reboot[1]:
            return f"{(int(boot, 16) ^ 0x5a5a5a5a):08x}"
        return boot

    counts: dict[int, dict[str, list]] = defaultdict(dict)
    rec_no = hrng.randint(1_000, 10**6)
    sig_seen: dict[tuple, list] = {}
    records: list[dict] = []
    for t, tree_name, pid, job, family, expected in calls:
        if in_lost(t):
            continue
        frames = TREES[tree_name]
        k = snap_of(t)
        if k is None:
            continue
        cell = counts[k]
        for _d, fn, _layer, errno in frames:
            c = cell.setdefault(fn, [0, 0, defaultdict(int)])
            c[0] += 1
            if errno:
                c[1] += 1
                c[2][errno] += 1
        failed = any(f[3] for f in frames)
        timed = in_window(t)
        if not failed and not timed:
            continue
        if failed:
            sig = (k, tree_name)
            seen = sig_seen.setdefault(sig, [])
            if len(seen) >= K_RECORDS:
                seen[-1]["repeat"] += 1
                family_failures[family] += 1
                continue
        rec_no += 1
        rec = {"t": t, "tree": tree_name, "pid": pid, "job": job, "family": family, "expected": expected,
               "timed": timed, "repeat": 1, "id": f"{host['name']}:{boot_of(t)}:{pid}:{rec_no}"}
        if failed:
            seen.append(rec)
            family_hosts[family].add(host["name"])
            family_traces[family] += 1
            family_failures[family] += 1
            if not expected:
                deaths[family] += 1
        records.append(rec)
    # events and truth
    ev: dict[str, list] = defaultdict(list)
    truth: dict[str, list] = defaultdict(list)
    ppid = 1_000 + host["i"]
    for rec in records:
        frames = TREES[rec["tree"]]
        mono0 = mono_ns(rec["t"])
        if rec["timed"]:
            ts, lat = _frame_times(frames, mono0, hrng)
            start_ns, end_ns = ts[0], ts[0] + lat[0]
        else:
            tick = (mono0 + hrng.randint(0, 3_000_000)) // TICK_NS * TICK_NS
            ts, lat = [tick] * len(frames), [None] * len(frames)
            start_ns = end_ns = tick
        wall = START + timedelta(seconds=rec["t"] + host["skew_s"])
        start_time = wall + timedelta(microseconds=(start_ns - mono0) / 1000)
        end_time = wall + timedelta(microseconds=(end_ns - mono0) / 1000)
        root_errno = frames[0][3]
        failed = any(f[3] for f in frames)
        for seq, ((depth, fn, layer, errno), t_ns, latency) in enumerate(zip(frames, ts, lat, strict=True)):
            ev["trace_id"].append(rec["id"])
            ev["seq"].append(seq)
            ev["ts_ns"].append(t_ns)
            ev["pid"].append(rec["pid"])
            ev["tid"].append(rec["pid"])
            ev["ppid"].append(ppid)
            ev["comm"].append(COMM)
            ev["probe"].append(fn)
            ev["layer"].append(layer)
            ev["depth"].append(depth)
            ev["ret"].append(-ERRNO_NUM[errno] if errno else 0)
            ev["errno"].append(errno)
            ev["latency_ns"].append(latency)
            ev["arg"].append(ARG.get(rec["tree"]) if seq == 0 else None)
            ev["kind"].append("failure" if failed else "good")
            ev["command"].append(OPERATION[rec["tree"]])
            ev["exit_status"].append(-ERRNO_NUM[root_errno] if root_errno else 0)
            ev["start_time"].append(start_time)
            ev["end_time"].append(end_time)
            ev["host"].append(host["name"])
            ev["kernel_release"].append(KERNEL)
            ev["lost_events"].append(0)
            ev["job_id"].append(rec["job"])
            ev["metadata"].append(metadata_list(METADATA))
            ev["repeat_count"].append(rec["repeat"] if rec["repeat"] > 1 else None)
        fam = rec["family"]
        truth["trace_id"].append(rec["id"])
        truth["host"].append(host["name"])
        truth["kind"].append("failure" if failed else "good")
        truth["root_cause"].append(fam)
        if fam is None:
            truth["bifurcation_probe"].append(None)
            truth["bifurcation_errno"].append(None)
            truth["origin_layer"].append(None)
        else:
            probe, errno, layer = {**ROUTINE, **ROOT_CAUSES}[fam]
            truth["bifurcation_probe"].append(probe)
            truth["bifurcation_errno"].append(errno)
            truth["origin_layer"].append(layer)
        truth["expected_error"].append(bool(rec["expected"]))
        truth["held_out"].append(fam is None and hrng.random() < 0.1)
    events = frame({c: ev[c] for c in ev}, {c: event_types[c] for c in ev})
    write_partition(events, root, "events", date, host["name"], "part-00000.parquet", durable=False)
    truth_df = pl.DataFrame({c: truth[c] for c in truth}, schema={c: truth_types[c] for c in truth})
    write_partition(truth_df, root, "truth", date, host["name"], "part-00000.parquet", durable=False)
    # counters: every probe in every snapshot the daemon shipped
    cnt: dict[str, list] = defaultdict(list)
    cumulative: dict[str, list] = {}
    reset_done = False
    prev = snaps[0] - SNAP_S
    for k, s in enumerate(snaps):
        if k in missing:
            continue
        ended = [b for _a, b in lost if prev < b <= s]  # a gap ended in this interval
        interval, after_gap, prev = s - max([prev, *ended]), bool(ended), s
        negative = "exporter_reset" in sim.role and after_gap and not reset_done
        for probe, layer in PROBES.items():
            inv, fail, errnos = counts.get(k, {}).get(probe, [0, 0, {}])
            cum = cumulative.setdefault(probe, [0, 0, defaultdict(int)])
            if negative:
                inv, fail = -cum[0], -cum[1]
                errnos = {e: -n for e, n in cum[2].items()}
                cumulative[probe] = [0, 0, defaultdict(int)]
            else:
                cum[0] += inv
                cum[1] += fail
                for e, n in errnos.items():
                    cum[2][e] += n
            cnt["host"].append(host["name"])
            cnt["snapshot_time"].append(START + timedelta(seconds=s + host["skew_s"]))
            cnt["interval_s"].append(float(interval))
            cnt["kernel_release"].append(KERNEL)
            cnt["vendor"].append("mlx5")
            cnt["probe_set"].append("rdma")
            cnt["probe"].append(probe)
            cnt["layer"].append(layer)
            cnt["live"].append(True)
            cnt["invocations"].append(inv)
            cnt["failures"].append(fail)
            cnt["errno_counts"].append([{"errno": e, "count": n} for e, n in sorted(errnos.items())] or None)
            cnt["lost_records"].append(0)
        if negative:
            reset_done = True
    counters = frame({c: cnt[c] for c in cnt}, {c: counter_types[c] for c in cnt})
    path = write_partition(counters, root, "counters", date, host["name"], "part-00000.parquet", durable=False)
    write_counter_buckets(path, durable=False)


def generate(root: str | Path, hosts: int = 40, hours: float = 3, seed: int = 25) -> dict:
    root = Path(root)
    duration = hours * 3600.0
    rng = random.Random(seed)
    roles = _roles(rng, duration)
    fleet = _hosts(hosts)
    stats = {"family_hosts": defaultdict(set), "family_traces": defaultdict(int),
             "family_failures": defaultdict(int), "deaths": defaultdict(int)}
    for host in fleet:
        _emit_host(root, host, roles, duration, seed, stats)
    family_hosts, family_traces = stats["family_hosts"], stats["family_traces"]
    family_failures, deaths = stats["family_failures"], stats["deaths"]
    name = {h["i"]: h["name"] for h in fleet}
    role_hosts = {r: [name[i]] for r, i in ROLE_INDEX.items()}
    role_hosts["skewed_rack"] = [h["name"] for h in fleet if h["rack"] == SKEW_RACK]
    role_hosts["all"] = [h["name"] for h in fleet]
    at = {k: (START + timedelta(seconds=v)).isoformat() for k, v in roles.items() if isinstance(v, float)}
    required = {name[ROLE_INDEX["leak"]]: ["EAGAIN"], name[ROLE_INDEX["flap"]]: ["ENODATA"],
                name[ROLE_INDEX["fw_eio"]]: ["EIO"]}
    return {
        "roles": role_hosts,
        "times": at,
        "bursts": [[(START + timedelta(seconds=a)).isoformat(), (START + timedelta(seconds=b)).isoformat()]
                   for a, b in roles["bursts"]],
        "family_hosts": {f: sorted(h) for f, h in family_hosts.items()},
        "family_traces": dict(family_traces),
        "family_failures": dict(family_failures),
        "root_cause_records": dict(deaths),
        "required_alert_hosts": required,
        "alert_hosts": required,
    }

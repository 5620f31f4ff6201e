"""fleetgen14: a fourteenth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings), aimed at what the thirteen
before it leave out: one NIC port of a multi-NIC host, an errno routine at one call site and fatal
at another, a whole rack's tracers restarted in a maintenance window, a rate doubling every hour,
and one errno at one call site retried through by one tenant and fatal to the other.

The fleet: mlx5 RoCE hosts on an upstream kernel (6.8.0-60-generic, no peer memory), racks of 8
(`fg14-r<RR>-h<H>`), four NICs a host (mlx5_0..mlx5_3), one GPU behind each. Every device runs its
own single-GPU jobs back to back (fine-tuning and inference: one rank, one process, 8-20
minutes), so one device's trouble leaves the host's other three alone. A rank reads the 4 GID slots of its
port, allocates a PD, registers a buffer, creates a CQ and an RC QP, moves it
RESET->INIT->RTR->RTS, and every ~4 minutes rebuilds its communicator: registers a new buffer,
deregisters the old one, creates a CQ and a QP and moves it to RTS again; at the end it
deregisters its buffer. Two tenants alternate jobs: "aria" (ordinary buffers, the mkey cache:
alloc_cacheable_mr) and "brisk" (very large buffers: reg_create, the firmware's CREATE_MKEY
through mlx5_cmd_exec). The device and tenant are in each trace's metadata only: no column says
them. A rank that fails fatally ends its job; the scheduler resubmits it on the same device 1-3
minutes later (a crash loop where the device stays broken), as it starts the next job after one
that ended. An `rdma-healthd` agent on every host reads the
4 GID slots of one device a minute (round robin) and goes on whatever it finds.

The daemon: 60 s snapshots at a per-host phase; every call counted per probe (every frame of
the trees below is a probe); a tree emitted when any of its probes fails (the first 3 of a
signature per snapshot as records, the rest in the third's repeat_count), good trees only in
capture windows (the first 30 s of every 5 minutes at a per-host phase), timed there only;
outside them a failure tree's frames all carry the 4 ms tick its root returned in, latency null.

Routine families (truth expected_error, no root cause; the process goes on):
  gid_empty_slot      query_gid ENODATA at rdma_get_gid_attr: slot 3 of every port is empty
                      (reference: "-ENODATA: empty GID slot"); ranks and the agent skip it.
  cgroup_charge_retry reg_mr EAGAIN at ib_rdmacg_try_charge (under rdma_alloc_begin_uobject):
                      the rdma cgroup's hca_object limit, 2 % of registrations on every host,
                      retried 1-3 ms later and passing.
  double_dereg        dereg_mr ENOENT at rdma_lookup_get_uobject (under __uobj_perform_destroy):
                      a registration cache freeing an old handle twice at 10 % of rebuilds.
  neighbour_retry     tenant aria on rack 5: INIT->RTR ETIMEDOUT at rdma_addr_find_l2_eth_by_grh
                      (the rack's top-of-rack switch drops ARP under load: 8 % of INIT->RTR);
                      aria's launcher (comm python3) retries every failed call up to 3 times,
                      and a retry passes: the process goes on.

Root causes (truth root_cause):
  port_route_gone  ONE port of one host (fg14-r02-h3, device mlx5_2) loses its route from 40
                   minutes on: INIT->RTR on that device fails EADDRNOTAVAIL at
                   rdma_addr_find_l2_eth_by_grh (ib_resolve_unicast_gid_dmac, ib_resolve_eth_dmac,
                   _ib_modify_qp, modify_qp, the handler pass it up) and the rank dies; that
                   device's jobs crash-loop. The host's three other devices stay healthy, so the
                   host's counters show part of its INIT->RTR failing, never most. Decision: that
                   host MUST alert with EADDRNOTAVAIL (none anywhere else in the fleet).
  mkey_no_res      on three hosts of rack 7 a leaking co-located service has exhausted the NIC's
                   mkeys from 30 minutes on: half of brisk's very large registrations get NO_RES
                   from CREATE_MKEY, EAGAIN at mlx5_cmd_exec under reg_create under create_real_mr
                   (reference: NO_RES -> -EAGAIN), and the rank dies. The same operation and
                   errno as the cgroup family, at another call site that is never routine there.
                   Decision: an alert on those hosts is acceptable (EAGAIN), none is required.
  cq_alloc_leak    one host (fg14-r06-h5) leaks kernel memory: create_cq fails ENOMEM at
                   create_cq_user (kvzalloc) with a probability that doubles every hour, 4 %
                   at the start, 32 % after three hours; the rank dies. Decision: that host MUST
                   alert with ENOMEM (a rise over its own past, not a level).
  neighbour_timeout_fatal  the same ETIMEDOUT at the same frames on the same rack, in tenant
                   brisk's jobs (comm brisk-worker), whose library does not retry: the rank dies.
                   Decision: a root cause (the switch, fatal to a tenant that cannot retry),
                   while aria's are routine: the audit must tell callers apart by what their
                   processes do after the error, not by (operation, probe, errno) alone. An
                   alert on rack 5's hosts is acceptable (ETIMEDOUT), none is required.

Not faults (no alert may fire on them):
  maintenance      every host of rack 4 restarts its tracer 75-78 minutes into the window: a gap
                   of 60-150 s with no snapshot, no record and no count (the calls in it are
                   unseen), then a first interval counted from the restart; on the rack's even
                   hosts a cumulative exporter (another writer) ships that first snapshot as new
                   minus old: deltas below zero. Jobs run on through it.

Truth per trace: root_cause for the fatal failures above, expected_error for the routine ones,
the bifurcation probe and errno = the deepest failing frame (the origin) and its layer. The
summary (`<out>/fleetgen14.json` and the return value) names `alert_hosts` (acceptable: host ->
errnos), `required_alert_hosts` (must alert) and the hosts of each shape.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from tracer.schema import write_partition

START = dt.datetime(2026, 11, 20, 6, 0, tzinfo=dt.UTC)
KERNEL = "6.8.0-60-generic"
DEVICES = 4
SNAP_S = 60
WINDOW_EVERY_S, WINDOW_S = 300, 30
K = 3  # records per failure signature and snapshot
TICK_NS = 4_000_000
ERRNO = {"ENODATA": 61, "EAGAIN": 11, "ENOENT": 2, "ENOMEM": 12, "EADDRNOTAVAIL": 99, "ETIMEDOUT": 110}

ROOT_CAUSES = {
    "port_route_gone": ("rdma_addr_find_l2_eth_by_grh", "EADDRNOTAVAIL", "core"),
    "mkey_no_res": ("mlx5_cmd_exec", "EAGAIN", "driver"),
    "cq_alloc_leak": ("create_cq_user", "ENOMEM", "driver"),
    "neighbour_timeout_fatal": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
}
ROUTINE = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "core"),
    "cgroup_charge_retry": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "double_dereg": ("rdma_lookup_get_uobject", "ENOENT", "core"),
    "neighbour_retry": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
}
# the two tenants' containers run different launchers
COMMS = {"aria": "python3", "brisk": "brisk-worker"}

# ---- call trees: (depth, function, layer); a variant's failing frames carry its errno -------
_QG = [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "uverbs"), (1, "rdma_get_gid_attr", "core"),
       (1, "rdma_read_gid_attr_ndev_rcu", "core"), (1, "rdma_put_gid_attr", "core")]
_PD = [(0, "ib_uverbs_alloc_pd", "uverbs"), (1, "rdma_alloc_begin_uobject", "core"), (1, "mlx5_ib_alloc_pd", "driver"),
       (2, "mlx5_cmd_exec", "driver"), (1, "rdma_restrack_add", "core")]
_REG_HEAD = [(0, "ib_uverbs_reg_mr", "uverbs"), (1, "rdma_alloc_begin_uobject", "core"),
             (2, "ib_rdmacg_try_charge", "core"), (1, "rdma_lookup_get_uobject", "core"),
             (1, "mlx5_ib_reg_user_mr", "driver"), (2, "ib_umem_get", "core"), (3, "pin_user_pages_fast", "core"),
             (2, "create_real_mr", "driver")]
_REG_CACHE = [(3, "alloc_cacheable_mr", "driver"), (3, "mlx5r_umr_update_mr_pas", "driver")]
_REG_BIG = [(3, "reg_create", "driver"), (4, "mlx5_cmd_exec", "driver")]
_REG_TAIL = [(1, "rdma_restrack_add", "core"), (1, "rdma_lookup_put_uobject", "core")]
_CQ = [(0, "ib_uverbs_create_cq", "uverbs"), (1, "create_cq", "core"), (2, "rdma_alloc_begin_uobject", "core"),
       (2, "mlx5_ib_create_cq", "driver"), (3, "create_cq_user", "driver"), (4, "ib_umem_get", "core"),
       (4, "mlx5_ib_db_map_user", "driver"), (3, "mlx5_comp_eqn_get", "driver"), (3, "mlx5_core_create_cq", "driver"),
       (2, "rdma_restrack_add", "core")]
_QP = [(0, "ib_uverbs_create_qp", "uverbs"), (1, "create_qp", "core"), (2, "rdma_alloc_begin_uobject", "core"),
       (3, "ib_rdmacg_try_charge", "core"), (2, "rdma_lookup_get_uobject", "core"), (2, "ib_create_qp_user", "core"),
       (3, "create_qp", "core"), (4, "mlx5_ib_create_qp", "driver"), (5, "create_qp", "driver"),
       (6, "create_user_qp", "driver"), (7, "_create_user_qp", "driver"), (8, "ib_umem_get", "core"),
       (7, "mlx5_qpc_create_qp", "driver"), (8, "mlx5_cmd_exec", "driver"), (3, "ib_create_qp_security", "core"),
       (2, "rdma_lookup_put_uobject", "core")]
_MQ_HEAD = [(0, "ib_uverbs_modify_qp", "uverbs"), (1, "modify_qp", "core"), (2, "rdma_lookup_get_uobject", "core"),
            (2, "ib_modify_qp_with_udata", "core"), (3, "_ib_modify_qp", "core")]
_MQ_RTR = [(4, "rdma_fill_sgid_attr", "core"), (5, "rdma_get_gid_attr", "core"), (4, "ib_resolve_eth_dmac", "core"),
           (5, "rdma_check_gid_user_access", "core"), (5, "ib_resolve_unicast_gid_dmac", "core"),
           (6, "rdma_addr_find_l2_eth_by_grh", "core"), (4, "rdma_lag_get_ah_roce_slave", "core")]
_MQ_DRV = [(4, "ib_security_modify_qp", "core"), (5, "mlx5_ib_modify_qp", "driver"),
           (6, "__mlx5_ib_modify_qp", "driver"), (7, "mlx5_core_qp_modify", "driver"), (8, "mlx5_cmd_exec", "driver")]
_DEREG = [(0, "ib_uverbs_dereg_mr", "uverbs"), (1, "__uobj_perform_destroy", "core"),
          (2, "rdma_lookup_get_uobject", "core"), (2, "ib_dereg_mr_user", "core"), (3, "mlx5_ib_dereg_mr", "driver"),
          (4, "mlx5_revoke_mr", "driver"), (4, "ib_umem_release", "core"), (2, "ib_rdmacg_uncharge", "core"),
          (1, "rdma_lookup_put_uobject", "core")]

OPS = [("query_gid", "good"), ("query_gid", "gid_empty_slot"), ("alloc_pd", "good"), ("reg_mr", "good"),
       ("reg_mr", "big"), ("reg_mr", "cgroup_charge_retry"), ("reg_mr", "mkey_no_res"), ("create_cq", "good"),
       ("create_cq", "cq_alloc_leak"), ("create_qp", "good"), ("modify_qp:RESET_to_INIT", "good"),
       ("modify_qp:INIT_to_RTR", "good"), ("modify_qp:INIT_to_RTR", "port_route_gone"),
       ("modify_qp:INIT_to_RTR", "neighbour_retry"), ("modify_qp:INIT_to_RTR", "neighbour_timeout_fatal"),
       ("modify_qp:RTR_to_RTS", "good"), ("dereg_mr", "good"), ("dereg_mr", "double_dereg")]


def _fail(frames: list, chain: list[str], errno: str, cut_after: str | None = None) -> list:
    """`frames` with errno on the frames named in `chain` (the path from the origin up), cut
    after the origin's subtree when the call unwinds there (`cut_after`: the origin)."""
    out = []
    for d, fn, layer in frames:
        out.append((d, fn, layer, errno if fn in chain else None))
        if fn == cut_after:
            break
    return out


def frames_of(op: str, variant: str) -> list[tuple[int, str, str, str | None]]:
    """The call tree of one operation (`op`, `modify_qp:<transition>` for modify_qp) in `variant`:
    "good", "big" (a very large registration), or a routine family / root cause."""
    if op == "query_gid":
        if variant == "gid_empty_slot":
            return [(0, _QG[0][1], "uverbs", "ENODATA"), (1, "rdma_get_gid_attr", "core", "ENODATA")]
        return [(*f, None) for f in _QG]
    if op == "alloc_pd":
        return [(*f, None) for f in _PD]
    if op == "reg_mr":
        if variant == "cgroup_charge_retry":
            return [(0, "ib_uverbs_reg_mr", "uverbs", "EAGAIN"), (1, "rdma_alloc_begin_uobject", "core", "EAGAIN"),
                    (2, "ib_rdmacg_try_charge", "core", "EAGAIN")]
        if variant == "mkey_no_res":
            return [*_fail(_REG_HEAD + _REG_BIG, ["ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "create_real_mr",
                                                  "reg_create", "mlx5_cmd_exec"], "EAGAIN"),
                    (1, "rdma_alloc_abort_uobject", "core", None)]
        return [(*f, None) for f in _REG_HEAD + (_REG_BIG if variant == "big" else _REG_CACHE) + _REG_TAIL]
    if op == "create_cq":
        if variant == "cq_alloc_leak":
            return _fail(_CQ, ["ib_uverbs_create_cq", "create_cq", "mlx5_ib_create_cq", "create_cq_user"], "ENOMEM",
                         cut_after="create_cq_user")
        return [(*f, None) for f in _CQ]
    if op == "create_qp":
        return [(*f, None) for f in _QP]
    if op.startswith("modify_qp:"):
        transition = op.split(":", 1)[1]
        if transition == "INIT_to_RTR":
            if variant == "port_route_gone":
                chain = ["ib_uverbs_modify_qp", "modify_qp", "ib_modify_qp_with_udata", "_ib_modify_qp",
                         "ib_resolve_eth_dmac", "ib_resolve_unicast_gid_dmac", "rdma_addr_find_l2_eth_by_grh"]
                return _fail(_MQ_HEAD + _MQ_RTR, chain, "EADDRNOTAVAIL", cut_after="rdma_addr_find_l2_eth_by_grh")
            if variant in ("neighbour_retry", "neighbour_timeout_fatal"):
                chain = ["ib_uverbs_modify_qp", "modify_qp", "ib_modify_qp_with_udata", "_ib_modify_qp",
                         "ib_resolve_eth_dmac", "ib_resolve_unicast_gid_dmac", "rdma_addr_find_l2_eth_by_grh"]
                return _fail(_MQ_HEAD + _MQ_RTR, chain, "ETIMEDOUT", cut_after="rdma_addr_find_l2_eth_by_grh")
            middle = _MQ_RTR
        elif transition == "RESET_to_INIT":
            middle = [(4, "rdma_counter_bind_qp_auto", "core")]
        else:
            middle = []
        return [(*f, None) for f in _MQ_HEAD + middle + _MQ_DRV + [(2, "rdma_lookup_put_uobject", "core")]]
    if op == "dereg_mr":
        if variant == "double_dereg":
            return [(0, "ib_uverbs_dereg_mr", "uverbs", "ENOENT"), (1, "__uobj_perform_destroy", "core", "ENOENT"),
                    (2, "rdma_lookup_get_uobject", "core", "ENOENT")]
        return [(*f, None) for f in _DEREG]
    raise ValueError(op)


_TREES = {(op, v): frames_of(op, v) for op, v in OPS}
PROBES: dict[str, str] = {}
for _tree in _TREES.values():
    for _d, _fn, _layer, _e in _tree:
        PROBES.setdefault(_fn, _layer)


def _origin(tree) -> tuple[str, str, str] | None:
    failing = [(d, fn, layer, e) for d, fn, layer, e in tree if e]
    if not failing:
        return None
    d, fn, layer, e = max(failing, key=lambda f: f[0])
    return fn, e, layer


def host_name(i: int) -> str:
    return f"fg14-r{i // 8:02d}-h{i % 8}"


def _shape(hosts: int) -> dict:
    """Which hosts carry which shape (a fleet smaller than 64 hosts folds the racks it lacks)."""
    names = [host_name(i) for i in range(hosts)]
    pick = lambda rack, h: names[(rack * 8 + h) % hosts]  # noqa: E731
    maint_rack = 4 if hosts > 40 else 1
    return {
        "port_host": pick(2, 3), "bad_device": "mlx5_2",
        "trend_host": pick(6, 5),
        "mkey_hosts": sorted({pick(7, 0), pick(7, 1), pick(7, 2)}),
        "maintenance": [n for n in names if n.startswith(f"fg14-r{maint_rack:02d}-")],
        "arp_rack": [n for n in names if n.startswith(f"fg14-r{5 if hosts > 48 else 0:02d}-")],
    }


class _Host:
    """One host's calls, then what its tracer wrote of them."""

    def __init__(self, name: str, rng: random.Random, hours: float, shape: dict):
        self.name, self.rng, self.end_s, self.shape = name, rng, hours * 3600, shape
        self.calls: list[tuple] = []  # (t_s, pid, comm, op, variant, job, tenant, device, fatal)
        self.next_pid = rng.randrange(20_000, 90_000)

    def pid(self) -> int:
        self.next_pid += self.rng.randrange(1, 40)
        return self.next_pid

    # -- what happens ----------------------------------------------------------------------
    def _variant(self, t: float, op: str, tenant: str, device: str) -> str:
        rng, sh = self.rng, self.shape
        if op == "reg_mr":
            if tenant == "brisk" and self.name in sh["mkey_hosts"] and t >= 1800 and rng.random() < 0.5:
                return "mkey_no_res"
            if rng.random() < 0.02:
                return "cgroup_charge_retry"
            return "big" if tenant == "brisk" else "good"
        if op == "create_cq" and self.name == sh["trend_host"] and rng.random() < 0.04 * 2 ** (t / 3600):
            return "cq_alloc_leak"
        if op == "modify_qp:INIT_to_RTR" and self.name in sh["arp_rack"] and rng.random() < 0.08:
            return "neighbour_retry" if tenant == "aria" else "neighbour_timeout_fatal"
        if (op == "modify_qp:INIT_to_RTR" and self.name == sh["port_host"] and device == sh["bad_device"]
                and t >= 2400):
            return "port_route_gone"
        return "good"

    def _rank(self, t: float, stop: float, pid: int, job: str, tenant: str, device: str) -> list[tuple]:
        """A rank's calls until `stop` or its first fatal error (the last call then)."""
        out: list[tuple] = []
        rng = self.rng

        def call(op: str, variant: str | None = None) -> bool:
            nonlocal t
            t += rng.uniform(0.0005, 0.004)
            v = variant or self._variant(t, op, tenant, device)
            fatal = v in ROOT_CAUSES
            comm = COMMS[tenant]
            out.append((t, pid, comm, op, v, job, tenant, device, fatal))
            if v == "cgroup_charge_retry":  # the library waits 1-3 ms and tries again: it passes
                t += rng.uniform(0.001, 0.003)
                out.append((t, pid, comm, op, "big" if tenant == "brisk" else "good", job, tenant, device, False))
            if v == "neighbour_retry":  # aria's launcher retries a failed call up to 3 times
                for attempt in range(3):
                    t += rng.uniform(0.05, 0.3)
                    again = attempt < 2 and rng.random() < 0.3
                    out.append((t, pid, comm, op, "neighbour_retry" if again else "good", job, tenant, device, False))
                    if not again:
                        break
            return not fatal

        def connect() -> bool:
            return (call("create_cq") and call("create_qp") and call("modify_qp:RESET_to_INIT")
                    and call("modify_qp:INIT_to_RTR") and call("modify_qp:RTR_to_RTS"))

        for slot in range(4):
            call("query_gid", "gid_empty_slot" if slot == 3 else "good")
        if not (call("alloc_pd", "good") and call("reg_mr") and connect()):
            return out
        while True:
            t += rng.uniform(200, 280)
            if t >= stop:
                break
            if not call("reg_mr"):
                return out
            call("dereg_mr", "good")
            if rng.random() < 0.10:
                call("dereg_mr", "double_dereg")
            if not connect():
                return out
        t = stop
        call("dereg_mr", "good")
        return out

    def simulate(self) -> None:
        rng = self.rng
        n = 0
        for dev in range(DEVICES):  # each device runs its own one-rank jobs, back to back
            device = f"mlx5_{dev}"
            t = rng.uniform(0, 120)
            while t < self.end_s:
                n += 1
                job, tenant = f"{self.name}-j{n}", ("brisk" if n % 2 == 0 else "aria")
                stop = min(t + rng.uniform(480, 1200), self.end_s)
                rank = self._rank(t, stop, self.pid(), job, tenant, device)
                self.calls.extend(rank)
                # a failed job is resubmitted on the same device 1-3 minutes later
                t = (rank[-1][0] if rank[-1][8] else stop) + rng.uniform(60, 180)
        agent = self.pid()
        for k in range(int(self.end_s // 60)):
            ta = k * 60 + rng.uniform(0, 59)
            device = f"mlx5_{k % DEVICES}"
            for slot in range(4):
                self.calls.append((ta + slot * 0.001, agent, "rdma-healthd", "query_gid",
                                   "gid_empty_slot" if slot == 3 else "good", None, None, device, False))
        self.calls.sort(key=lambda c: c[0])


def generate(out_dir: str | Path, hosts: int = 96, hours: float = 3.0, seed: int = 14) -> dict:
    """Write the fleet (events, counters, truth under the documented dataset layout) into
    `out_dir` and return its summary (also written to `out_dir`/fleetgen14.json)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    shape = _shape(hosts)
    date = START.date().isoformat()
    cause_hosts: dict[str, set] = defaultdict(set)
    routine_traces = 0
    for i in range(hosts):
        name = host_name(i)
        h = _Host(name, random.Random(rng.random()), hours, shape)
        h.simulate()
        ev, tr, ct = _emit(h, shape)
        for key in tr.pop("_causes"):
            cause_hosts[key].add(name)
        routine_traces += tr.pop("_routine")
        write_partition(pa.table(ev), out, "events", date, name, "part-0.parquet", durable=False)
        write_partition(pa.table(tr), out, "truth", date, name, "part-0.parquet", durable=False)
        write_partition(pa.table(ct), out, "counters", date, name, "part-0.parquet", durable=False)
    summary = {
        "hosts": hosts, "hours": hours, "seed": seed,
        "port_host": shape["port_host"], "bad_device": shape["bad_device"], "trend_host": shape["trend_host"],
        "mkey_hosts": shape["mkey_hosts"], "maintenance": shape["maintenance"], "arp_rack": shape["arp_rack"],
        "cause_hosts": {k: sorted(v) for k, v in cause_hosts.items()},
        "routine_traces": routine_traces,
        "required_alert_hosts": {shape["port_host"]: ["EADDRNOTAVAIL"], shape["trend_host"]: ["ENOMEM"]},
        "alert_hosts": {shape["port_host"]: ["EADDRNOTAVAIL"], shape["trend_host"]: ["ENOMEM"],
                        **{m: ["EAGAIN"] for m in shape["mkey_hosts"]},
                        **{m: ["ETIMEDOUT"] for m in shape["arp_rack"]}},
    }
    (out / "fleetgen14.json").write_text(json.dumps(summary, indent=1))
    return summary


def _emit(h: _Host, shape: dict) -> tuple[dict, dict, dict]:
    """What the tracer on host `h` wrote of its calls: events, truth and counters columns."""
    rng = h.rng
    snap_phase = rng.uniform(0, SNAP_S)
    win_phase = rng.uniform(0, WINDOW_EVERY_S)
    boot_ns = rng.randrange(10**12, 10**14)
    maint = None
    if h.name in shape["maintenance"]:
        r0 = 75 * 60 + rng.uniform(0, 180)
        maint = (r0, r0 + rng.uniform(60, 150), int(h.name[-1]) % 2 == 0)
    rec = rng.randrange(1, 1 << 20)
    ev: dict[str, list] = defaultdict(list)
    tr: dict[str, list] = defaultdict(list)
    counts: dict[tuple[int, str, str], int] = defaultdict(int)  # (snapshot, op, variant) -> calls
    sig_records: dict[tuple, list] = {}  # (snapshot, op, variant, comm) -> [n, index of the K-th record's trace]
    causes: dict[str, int] = defaultdict(int)
    routine = 0
    last_repeat_row: dict[str, list[int]] = {}

    def snap_of(t: float) -> int:
        return int((t - snap_phase) // SNAP_S) + 1  # snapshot k ends at snap_phase + k*SNAP_S

    for t, pid, comm, op, variant, job, tenant, device, _fatal in h.calls:
        if maint and maint[0] <= t < maint[1]:
            continue  # the tracer is down: nothing counted, nothing recorded
        k = snap_of(t)
        counts[(k, op, variant)] += 1
        tree = _TREES[(op, variant)]
        failed = any(e for *_, e in tree)
        timed = ((t - win_phase) % WINDOW_EVERY_S) < WINDOW_S
        if not failed and not timed:
            continue
        if failed:
            key = (k, op, variant, comm)
            seen = sig_records.setdefault(key, [0, None])
            seen[0] += 1
            if seen[0] > K:  # the kernel counts it into the K-th record's repeat_count
                trace_id = seen[1]
                for row in last_repeat_row[trace_id]:
                    ev["repeat_count"][row] += 1
                continue
        rec += 1
        trace_id = f"{h.name}:b1:{pid}:{rec}"
        wall = START + dt.timedelta(seconds=t)
        mono = boot_ns + int(t * 1e9)
        origin = _origin(tree)
        root_errno = tree[0][3]
        rows = []
        step = 0
        for seq, (d, fn, layer, e) in enumerate(tree):
            rows.append(len(ev["trace_id"]))
            if timed:
                ts, lat = mono + step, 1500 + 400 * (len(tree) - seq)
                step += rng.randrange(300, 1200)
            else:
                ts, lat = (mono // TICK_NS) * TICK_NS, None
            ev["trace_id"].append(trace_id)
            ev["seq"].append(seq)
            ev["ts_ns"].append(ts)
            ev["pid"].append(pid)
            ev["tid"].append(pid)
            ev["ppid"].append(1 if comm == "rdma-healthd" else pid - 7)
            ev["comm"].append(comm)
            ev["probe"].append(fn)
            ev["layer"].append(layer)
            ev["depth"].append(d)
            ev["ret"].append(-ERRNO[e] if e else 0)
            ev["errno"].append(e)
            ev["latency_ns"].append(lat)
            ev["arg"].append(op.split(":", 1)[1] if ":" in op else None)
        end = wall + dt.timedelta(microseconds=50 if timed else 0)
        if not timed:
            wall = end = START + dt.timedelta(microseconds=((t * 1e6) // 4000) * 4000)
        n = len(tree)
        meta = [{"key": "device", "value": device}] + ([{"key": "tenant", "value": tenant}] if tenant else [])
        for col, val in (("kind", "failure" if failed else "good"), ("command", op.split(":", 1)[0]),
                         ("exit_status", -ERRNO[root_errno] if root_errno else 0), ("start_time", wall),
                         ("end_time", end), ("kernel_release", KERNEL), ("lost_events", 0), ("job_id", job),
                         ("metadata", meta), ("repeat_count", None)):
            ev[col].extend([val] * n)
        if failed:
            seen[1] = trace_id
            last_repeat_row[trace_id] = rows
            for row in rows:
                ev["repeat_count"][row] = 1
        tr["trace_id"].append(trace_id)
        tr["host"].append(h.name)
        tr["kind"].append("failure" if failed else "good")
        cause = variant if variant in ROOT_CAUSES else None
        tr["root_cause"].append(cause)
        tr["bifurcation_probe"].append(origin[0] if origin else None)
        tr["bifurcation_errno"].append(origin[1] if origin else None)
        tr["origin_layer"].append(origin[2] if origin else None)
        tr["expected_error"].append(variant in ROUTINE)
        tr["held_out"].append(False)
        if cause:
            causes[cause] += 1
        routine += variant in ROUTINE
    # repeat_count 1 is written null ("null = 1")
    ev["repeat_count"] = [None if r == 1 else r for r in ev["repeat_count"]]
    tr["_causes"], tr["_routine"] = causes, routine
    return ev, tr, _counters(h, counts, snap_phase, maint)


def _counters(h: _Host, counts: dict, snap_phase: float, maint) -> dict:
    per: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(lambda: [0, 0, defaultdict(int)]))
    for (k, op, variant), n in counts.items():
        for _d, fn, _layer, e in _TREES[(op, variant)]:
            cell = per[k][fn]
            cell[0] += n
            if e:
                cell[1] += n
                cell[2][e] += n
    ct: dict[str, list] = defaultdict(list)
    last = int((h.end_s - snap_phase) // SNAP_S) + 1
    cumulative: dict[str, list] = defaultdict(lambda: [0, 0, defaultdict(int)])
    prev_t = 0.0
    restarted = False
    for k in range(1, last + 1):
        t = snap_phase + k * SNAP_S
        if t > h.end_s:
            break
        if maint and maint[0] <= t < maint[1]:
            continue  # the daemon is down: no snapshot
        first_after = maint is not None and t >= maint[1] and not restarted
        interval = SNAP_S
        if first_after:
            restarted = True
            interval = t - maint[1]
        elif k == 1:
            interval = t - prev_t
        for fn, layer in PROBES.items():
            inv, fail, hist = per[k].get(fn, (0, 0, {}))
            c_inv, c_fail, c_hist = inv, fail, dict(hist)
            if first_after and maint[2]:  # the exporter ships new cumulative minus old
                old = cumulative[fn]
                c_inv, c_fail = inv - old[0], fail - old[1]
                c_hist = {e: hist.get(e, 0) - old[2].get(e, 0) for e in set(hist) | set(old[2])}
            if not (maint and t >= maint[1]):
                cum = cumulative[fn]
                cum[0] += inv
                cum[1] += fail
                for e, c in hist.items():
                    cum[2][e] += c
            ct["host"].append(h.name)
            ct["snapshot_time"].append(START + dt.timedelta(seconds=t))
            ct["interval_s"].append(float(interval))
            ct["kernel_release"].append(KERNEL)
            ct["vendor"].append("mlx5")
            ct["probe_set"].append("rdma")
            ct["probe"].append(fn)
            ct["layer"].append(layer)
            ct["live"].append(True)
            ct["invocations"].append(c_inv)
            ct["failures"].append(c_fail)
            ct["errno_counts"].append([{"errno": e, "count": c} for e, c in sorted(c_hist.items()) if c != 0])
            ct["lost_records"].append(0)
        prev_t = t
    return ct

"""fleetgen61's fleet: errors returned to the caller beside the same errors absorbed by the operation.

Written blind (reference/rdma_control_path.yaml, tracer/schema.py, README.md,
docs/architecture.md, tests/fleet_harness.py, tests/fleetgen60 as the brief's model, the other
generators' docstrings); it imports only tracer.schema's writers.

The reference behind it
-----------------------
* Every create (create_cq, create_qp, reg_mr) begins its uobject with rdma_alloc_begin_uobject:
  alloc_uobj, then alloc_begin_idr_uobject -> idr_add_uobj, ib_rdmacg_try_charge. The rdma
  cgroup's hca_object limit reached is -EAGAIN there (confirmed_upstream), returned through
  rdma_alloc_begin_uobject and the handler to the caller.
* query_gid: UVERBS_METHOD_QUERY_GID_ENTRY (ib_uverbs_ioctl -> ib_uverbs_run_method ->
  ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY -> rdma_get_gid_attr): an empty GID slot is
  -ENODATA, returned to the caller (rdma-core's per-entry scan skips the slot). The alternative
  UVERBS_METHOD_QUERY_GID_TABLE -> rdma_query_gid_table reads the whole table.
* reg_mr (upstream mlx5, no peer memory): ib_umem_get -> pin_user_pages_fast; "other GUP errors
  pass through unchanged (e.g. ... -EINTR on fatal signal)", then __ib_umem_release and
  rdma_alloc_abort_uobject on the error path.

MODELLING ASSUMPTIONS beyond the reference (the reference shows neither absorption; the brief asks
for the same (operation, origin probe, errno) absorbed on some calls and returned on others):
  - the hosts' kernel (a distribution's 6.8.0-60-generic) retries a refused rdma cgroup charge
    once, in alloc_begin_idr_uobject, after the ucontext's pending uncharges (objects of a
    finished process of the pod being torn down) land: the second ib_rdmacg_try_charge succeeds
    (ABSORBED: the create succeeds, no caller saw the EAGAIN) or fails too (RETURNED: the create
    fails EAGAIN);
  - rdma_query_gid_table looks each slot up with rdma_get_gid_attr and skips the empty ones
    (ABSORBED: the table read succeeds with the valid entries).

The process model
-----------------
24 mlx5 RoCE GPU hosts (gpu-01 .. gpu-24, one kernel release) over 00:00-06:00 UTC. The tracer
snapshots every 30 s at hh:mm:07 and hh:mm:37 (a row counts the calls of the 30 s before its
snapshot_time); every call tree with an error frame is recorded and every good tree too, all
timed (a capture window open the whole run). Every process is `python3`.

* Every host starts a job every 30 minutes (its own offset, +-20 s): 4 ranks, tenants heron,
  osprey, wren; each job's container image is rdma-core 39 (`image=rdma-core-39`: the per-entry
  GID scan) or rdma-core 50 (`image=rdma-core-50`: one GID table read), at random. A rank: the GID
  scan, create_cq, two create_qp, two reg_mr, then per QP RESET->INIT, INIT->RTR, RTR->RTS.
* gid_slot_empty (ROUTINE, both ways, every host): each port's GID table holds 4 valid entries
  (link-local and IPv4 address, RoCE v1 and v2) and 2 empty slots (a removed IPv6 address's).
  rdma-core 39 queries slots 0..5 one by one: the two empty ones fail ENODATA
  (RETURNED, root ENODATA), the rank skips them and goes on. rdma-core 50 reads the table at
  once: rdma_get_gid_attr fails ENODATA twice inside a read that succeeds (ABSORBED).
* qp_charge_retried (ROUTINE, both ways): gpu-01 .. gpu-16 (CGROUP_HOSTS) run their jobs in
  Kubernetes pods under a tight rdma cgroup. 12 % of create_qp meet a refused charge; 60 % of those
  are absorbed by the re-charge, the rest RETURNED (root EAGAIN): the rank backs off 300-800 ms
  and calls create_qp again (until it succeeds).
* cq_charge_absorbed (ROUTINE, absorbed only, CGROUP_HOSTS): 10 % of create_cq there meet a
  refused first charge that the re-charge absorbs.
* cq_charge_refused (ROOT CAUSE, returned only, FAULT_HOSTS gpu-18, gpu-21, gpu-23, never the
  routine's hosts): a cgroup config push set the pods' hca_object limit to the ranks' exact need
  during FAULT_WINDOW (01:30-04:30): 20 % of the ranks' create_cq find both charges refused
  (root EAGAIN) and the rank dies (the framework does not retry a CQ); its job's launcher
  relaunches the 4 ranks 2 minutes later, up to 5 attempts. The operation keeps succeeding there.
* job_preempted (ROOT CAUSE: what killed the ranks): tenant kite's backfill jobs
  (job_name kite-backfill) on PREEMPT_HOSTS (gpu-05 .. gpu-12, cgroup hosts), two each, are
  preempted by the scheduler seconds after their start: ranks 2 and 3 (launched first) are in
  reg_mr when the SIGKILL lands (EINTR at pin_user_pages_fast, their last trace); ranks 0 and 1
  had just met a RETURNED create_qp EAGAIN (qp_charge_retried) and were killed in their back-off:
  that EAGAIN is their last trace, fatal only because the job was killed (docs: "a process
  killed with its job: another rank of the same run, alive at its last trace, ended later with a
  failure of another chain").

The truth: every occurrence of a routine family is routine (expected_error true), the preempted
ranks' EAGAIN included; every record of a root cause is the cause's (expected_error false); the
bifurcation is the origin (every edge above it is on the operation's good path).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from tracer.schema import metadata_list, polars_schema, write_counter_buckets, write_partition

DAY = dt.datetime(2026, 11, 12, tzinfo=dt.UTC)
DATE = DAY.date().isoformat()
START = DAY
END = DAY + dt.timedelta(hours=6)
RELEASE = "6.8.0-60-generic"
HOSTS = [f"gpu-{i:02d}" for i in range(1, 25)]
CGROUP_HOSTS = HOSTS[:16]
FAULT_HOSTS = ["gpu-18", "gpu-21", "gpu-23"]
FAULT_WINDOW = (DAY + dt.timedelta(hours=1, minutes=30), DAY + dt.timedelta(hours=4, minutes=30))
FAULT_P = 0.20  # of a fault host's ranks in the window: both CQ charges refused
PREEMPT_HOSTS = HOSTS[4:12]
PREEMPT_NAME = "kite-backfill"
QP_CHARGE_P, QP_ABSORB_P = 0.12, 0.60
CQ_CHARGE_P = 0.10
TENANTS = {"heron": ["heron-pretrain", "heron-eval"], "osprey": ["osprey-rl"], "wren": ["wren-ckpt", "wren-infer"]}
IMAGES = ("rdma-core-39", "rdma-core-50")
GID_SLOTS, GID_VALID = 6, 4  # per port: link-local and IPv4 address, RoCE v1 and v2; a removed IPv6 address's two

FAMILIES = {  # key -> (origin probe, errno, origin layer)
    "gid_slot_empty": ("rdma_get_gid_attr", "ENODATA", "core"),
    "qp_charge_retried": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "cq_charge_absorbed": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "cq_charge_refused": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "job_preempted": ("pin_user_pages_fast", "EINTR", "core"),
}
ROOT_CAUSES = ("cq_charge_refused", "job_preempted")
ROUTINE = ("gid_slot_empty", "qp_charge_retried", "cq_charge_absorbed")

LAYER = {
    "ib_uverbs_ioctl": "uverbs", "ib_uverbs_run_method": "uverbs",
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs", "rdma_query_gid_table": "core",
    "rdma_get_gid_attr": "core", "rdma_read_gid_attr_ndev_rcu": "core", "rdma_put_gid_attr": "core",
    "rdma_alloc_begin_uobject": "core", "alloc_uobj": "core", "alloc_begin_idr_uobject": "core",
    "idr_add_uobj": "core", "ib_rdmacg_try_charge": "core", "rdma_alloc_abort_uobject": "core",
    "rdma_lookup_get_uobject": "core", "rdma_restrack_add": "core",
    "ib_uverbs_create_cq": "uverbs", "create_cq": "uverbs", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "ib_umem_get": "core", "mlx5_ib_db_map_user": "driver",
    "mlx5_comp_eqn_get": "driver", "mlx5_core_create_cq": "driver", "mlx5_cmd_do": "driver",
    "ib_uverbs_create_qp": "uverbs", "create_qp": "uverbs", "ib_create_qp_user": "core",
    "mlx5_ib_create_qp": "driver", "create_user_qp": "driver", "_create_user_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "mlx5_cmd_exec": "driver",
    "ib_uverbs_reg_mr": "uverbs", "mlx5_ib_reg_user_mr": "driver", "mlx5r_umr_resource_init": "driver",
    "pin_user_pages_fast": "core", "sg_alloc_append_table_from_pages": "core", "__ib_umem_release": "core",
    "ib_uverbs_modify_qp": "uverbs", "modify_qp": "uverbs", "ib_modify_qp_with_udata": "core",
    "_ib_modify_qp": "core", "rdma_fill_sgid_attr": "core", "ib_resolve_eth_dmac": "core",
    "ib_resolve_unicast_gid_dmac": "core", "rdma_addr_find_l2_eth_by_grh": "core",
    "ib_security_modify_qp": "core", "mlx5_ib_modify_qp": "driver", "__mlx5_ib_modify_qp": "driver",
    "mlx5_set_path": "driver", "mlx5_core_qp_modify": "driver", "rdma_counter_bind_qp_auto": "core",
}
PROBES = sorted(LAYER)

_A, _N, _I = "EAGAIN", "ENODATA", "EINTR"


def _ok(frames):
    return [(d, fn, None) for d, fn in frames]


def _uobj(d: int, charge=(None,)):
    """rdma_alloc_begin_uobject at depth d; `charge`: the errno of each ib_rdmacg_try_charge call
    (one: charged; EAGAIN then None: absorbed by the re-charge; EAGAIN twice: returned)."""
    failed = charge[-1]
    return [(d, "rdma_alloc_begin_uobject", failed), (d + 1, "alloc_uobj", None),
            (d + 1, "alloc_begin_idr_uobject", failed), (d + 2, "idr_add_uobj", None)] + \
        [(d + 2, "ib_rdmacg_try_charge", e) for e in charge]


_GID_TOP = [(0, "ib_uverbs_ioctl"), (1, "ib_uverbs_run_method")]
_GID_ENTRY_OK = _ok(_GID_TOP + [(2, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"), (3, "rdma_get_gid_attr"),
                                (3, "rdma_read_gid_attr_ndev_rcu"), (3, "rdma_put_gid_attr")])
_GID_ENTRY_EMPTY = [(0, "ib_uverbs_ioctl", _N), (1, "ib_uverbs_run_method", _N),
                    (2, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", _N), (3, "rdma_get_gid_attr", _N)]
_GID_VALID = [(3, "rdma_get_gid_attr", None), (3, "rdma_read_gid_attr_ndev_rcu", None), (3, "rdma_put_gid_attr", None)]
_GID_TABLE = _ok(_GID_TOP + [(2, "rdma_query_gid_table")]) + _GID_VALID * 4 + \
    [(3, "rdma_get_gid_attr", _N), (3, "rdma_get_gid_attr", _N)]


def _cq(charge=(None,)):
    failed = charge[-1]
    head = [(0, "ib_uverbs_create_cq", failed), (1, "create_cq", failed)] + _uobj(2, charge)
    if failed:
        return head
    return head + _ok([(2, "mlx5_ib_create_cq"), (3, "create_cq_user"), (4, "ib_umem_get"), (4, "mlx5_ib_db_map_user"),
                       (3, "mlx5_comp_eqn_get"), (3, "mlx5_core_create_cq"), (4, "mlx5_cmd_do"),
                       (2, "rdma_restrack_add")])


def _qp(charge=(None,)):
    failed = charge[-1]
    head = [(0, "ib_uverbs_create_qp", failed), (1, "create_qp", failed)] + _uobj(2, charge)
    if failed:
        return head
    return head + _ok([(2, "rdma_lookup_get_uobject"), (2, "ib_create_qp_user"), (3, "create_qp"),
                       (4, "mlx5_ib_create_qp"), (5, "create_qp"), (6, "create_user_qp"), (7, "_create_user_qp"),
                       (8, "ib_umem_get"), (8, "mlx5_ib_db_map_user"), (7, "mlx5_qpc_create_qp"), (8, "mlx5_cmd_exec")])


_MR_HEAD = _ok([(0, "ib_uverbs_reg_mr")]) + _uobj(1) + _ok([(1, "rdma_lookup_get_uobject"), (1, "mlx5_ib_reg_user_mr"),
                                                              (2, "mlx5r_umr_resource_init")])
_MR = _MR_HEAD + _ok([(2, "ib_umem_get"), (3, "pin_user_pages_fast"), (3, "sg_alloc_append_table_from_pages")])
_MR_EINTR = [(0, "ib_uverbs_reg_mr", _I)] + _MR_HEAD[1:-2] + [(1, "mlx5_ib_reg_user_mr", _I),
                                                               (2, "mlx5r_umr_resource_init", None),
                                                               (2, "ib_umem_get", _I), (3, "pin_user_pages_fast", _I),
                                                               (3, "__ib_umem_release", None),
                                                               (1, "rdma_alloc_abort_uobject", None)]
_TOP = [(0, "ib_uverbs_modify_qp"), (1, "modify_qp"), (2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp")]
_DRIVER = [(4, "ib_security_modify_qp"), (5, "mlx5_ib_modify_qp"), (6, "__mlx5_ib_modify_qp"),
           (7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec")]
_RTR = [(4, "rdma_fill_sgid_attr"), (5, "rdma_get_gid_attr"), (4, "ib_resolve_eth_dmac"),
        (5, "ib_resolve_unicast_gid_dmac"), (6, "rdma_addr_find_l2_eth_by_grh"), (4, "ib_security_modify_qp"),
        (5, "mlx5_ib_modify_qp"), (6, "__mlx5_ib_modify_qp"), (7, "mlx5_set_path"), (7, "mlx5_core_qp_modify"),
        (8, "mlx5_cmd_exec")]

# name -> (operation, argument, frames of (depth, function, errno))
TREES = {
    "gid_entry": ("query_gid", None, _GID_ENTRY_OK),
    "gid_entry_empty": ("query_gid", None, _GID_ENTRY_EMPTY),
    "gid_table": ("query_gid", None, _GID_TABLE),
    "create_cq": ("create_cq", None, _ok([(d, fn) for d, fn, _ in _cq()])),
    "create_cq_recharged": ("create_cq", None, _cq((_A, None))),
    "create_cq_refused": ("create_cq", None, _cq((_A, _A))),
    "create_qp": ("create_qp", "RC", _ok([(d, fn) for d, fn, _ in _qp()])),
    "create_qp_recharged": ("create_qp", "RC", _qp((_A, None))),
    "create_qp_refused": ("create_qp", "RC", _qp((_A, _A))),
    "reg_mr": ("reg_mr", None, _MR),
    "reg_mr_eintr": ("reg_mr", None, _MR_EINTR),
    "reset_init": ("modify_qp", "RESET->INIT", _ok(_TOP + [(4, "rdma_counter_bind_qp_auto")] + _DRIVER)),
    "init_rtr": ("modify_qp", "INIT->RTR", _ok(_TOP + _RTR)),
    "rtr_rts": ("modify_qp", "RTR->RTS", _ok(_TOP + _DRIVER)),
}
TREE_FAMILY = {"gid_entry_empty": "gid_slot_empty", "gid_table": "gid_slot_empty",
               "create_qp_recharged": "qp_charge_retried", "create_qp_refused": "qp_charge_retried",
               "create_cq_recharged": "cq_charge_absorbed", "create_cq_refused": "cq_charge_refused",
               "reg_mr_eintr": "job_preempted"}
ABSORBED_TREES = ("gid_table", "create_qp_recharged", "create_cq_recharged")
RETURNED_TREES = ("gid_entry_empty", "create_qp_refused", "create_cq_refused", "reg_mr_eintr")

SNAPSHOT_S = 30


def _snapshots() -> list[dt.datetime]:
    out, t = [], START + dt.timedelta(seconds=7)
    while t < END:
        out.append(t)
        t += dt.timedelta(seconds=SNAPSHOT_S)
    return out


class _Host:
    def __init__(self, host: str, rng: np.random.Generator):
        self.host, self.rng = host, rng
        self.cgroup = host in CGROUP_HOSTS
        self.boot = DAY - dt.timedelta(days=3, seconds=int(rng.integers(0, 86400)))
        self.boot_id = f"{int(rng.integers(1 << 30)):08x}"
        self.next_pid = int(rng.integers(20000, 40000))
        self.n = 0
        self.events: dict[str, list] = {k: [] for k in (
            "trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret", "errno",
            "latency_ns", "arg", "kind", "command", "exit_status", "start_time", "end_time", "job_id", "metadata")}
        self.truth: list[dict] = []
        self.calls: list[tuple[dt.datetime, str]] = []  # (time, tree) for the counters

    def pid(self) -> int:
        self.next_pid += int(self.rng.integers(3, 40))
        return self.next_pid

    def call(self, t: dt.datetime, tree: str, pid: int, ppid: int, job: str, meta: dict) -> None:
        op, arg, frames = TREES[tree]
        rng = self.rng
        self.n += 1
        tid = f"{self.host}:{self.boot_id}:{pid}:{self.n}"
        root_ns = int(rng.integers(40_000, 400_000))
        failing = any(e for _, _, e in frames)
        root_errno = frames[0][2]
        base = int((t - self.boot).total_seconds() * 1e9)
        end = t + dt.timedelta(microseconds=root_ns // 1000)
        md = metadata_list(meta)
        ev = self.events
        for i, (depth, fn, errno) in enumerate(frames):
            ev["trace_id"].append(tid)
            ev["seq"].append(i)
            ev["ts_ns"].append(base + i * 2000)
            ev["pid"].append(pid)
            ev["tid"].append(pid)
            ev["ppid"].append(ppid)
            ev["comm"].append("python3")
            ev["probe"].append(fn)
            ev["layer"].append(LAYER[fn])
            ev["depth"].append(depth)
            ev["ret"].append(-1 if errno else 0)
            ev["errno"].append(errno)
            ev["latency_ns"].append(max(1000, root_ns // (depth + 1) - i * 300))
            ev["arg"].append(arg if depth == 0 else None)
            ev["kind"].append("failure" if failing else "good")
            ev["command"].append(op)
            ev["exit_status"].append(-1 if root_errno else 0)
            ev["start_time"].append(t)
            ev["end_time"].append(end)
            ev["job_id"].append(job)
            ev["metadata"].append(md)
        family = TREE_FAMILY.get(tree)
        origin = FAMILIES[family] if family else None
        self.truth.append({
            "trace_id": tid, "kind": "failure" if failing else "good", "root_cause": family,
            "bifurcation_probe": origin[0] if origin else None, "bifurcation_errno": origin[1] if origin else None,
            "origin_layer": origin[2] if origin else None,
            "expected_error": (family in ROUTINE) if family else None,
            "held_out": (not failing) and bool(rng.random() < 0.15),
        })
        self.calls.append((t, tree))

    def gid_scan(self, t: dt.datetime, pid: int, ppid: int, job: str, meta: dict, step) -> dt.datetime:
        if meta["image"] == "rdma-core-50":
            t += step()
            self.call(t, "gid_table", pid, ppid, job, meta)
            return t
        for slot in range(GID_SLOTS):  # slots 0-3 valid; 4, 5 empty (skipped)
            t += dt.timedelta(milliseconds=int(self.rng.integers(2, 12)))
            self.call(t, "gid_entry" if slot < GID_VALID else "gid_entry_empty", pid, ppid, job, meta)
        return t

    def create_qp(self, t: dt.datetime, pid: int, ppid: int, job: str, meta: dict, step) -> dt.datetime:
        """create_qp until it succeeds: on a cgroup host a refused charge is absorbed or returned;
        a returned one is retried after 300-800 ms."""
        rng = self.rng
        while True:
            t += step()
            if self.cgroup and rng.random() < QP_CHARGE_P:
                if rng.random() < QP_ABSORB_P:
                    self.call(t, "create_qp_recharged", pid, ppid, job, meta)
                    return t
                self.call(t, "create_qp_refused", pid, ppid, job, meta)
                t += dt.timedelta(milliseconds=int(rng.integers(300, 800)))
                continue
            self.call(t, "create_qp", pid, ppid, job, meta)
            return t

    def process(self, t: dt.datetime, job: str, meta: dict, ppid: int, *, cq_fail_p: float = 0.0) -> bool:
        """A rank: GID scan, create_cq, two create_qp, two reg_mr, then each QP to RTS. `cq_fail_p`:
        the chance its create_cq finds both charges refused (the rank dies: False)."""
        pid, rng = self.pid(), self.rng
        step = lambda: dt.timedelta(milliseconds=int(rng.integers(80, 300)))  # noqa: E731
        t = self.gid_scan(t, pid, ppid, job, meta, step)
        t += step()
        if cq_fail_p and rng.random() < cq_fail_p:
            self.call(t, "create_cq_refused", pid, ppid, job, meta)
            return False
        self.call(t, "create_cq_recharged" if self.cgroup and rng.random() < CQ_CHARGE_P else "create_cq",
                  pid, ppid, job, meta)
        for _ in range(2):
            t = self.create_qp(t, pid, ppid, job, meta, step)
        for _ in range(2):
            t += step()
            self.call(t, "reg_mr", pid, ppid, job, meta)
        for _ in range(2):
            for tree in ("reset_init", "init_rtr", "rtr_rts"):
                t += step()
                self.call(t, tree, pid, ppid, job, meta)
        return True

    def preempted(self, t0: dt.datetime, job: str, meta: dict) -> dict:
        """A kite backfill job preempted seconds after its start. Ranks 2, 3 (launched first) reach
        reg_mr; ranks 0, 1 meet a returned create_qp EAGAIN just before the kill and die in their
        back-off; the SIGKILL makes ranks 2, 3's pins fail EINTR. Returns the job's times."""
        rng, launcher = self.rng, self.pid()
        step = lambda: dt.timedelta(milliseconds=int(rng.integers(60, 120)))  # noqa: E731
        late: list[tuple[int, dt.datetime]] = []
        t_first = t0
        for r in (2, 3):
            pid = self.pid()
            t = self.gid_scan(t0 + dt.timedelta(milliseconds=50 * (r - 2)), pid, launcher, job, meta, step)
            t += step()
            self.call(t, "create_cq", pid, launcher, job, meta)
            for _ in range(2):
                t += step()
                self.call(t, "create_qp", pid, launcher, job, meta)
            t += step()
            self.call(t, "reg_mr", pid, launcher, job, meta)
            late.append((pid, t))
        ready = max(t for _, t in late)
        kill = ready + dt.timedelta(milliseconds=int(rng.integers(900, 1200)))
        for r in (0, 1):
            pid = self.pid()
            eagain = kill - dt.timedelta(milliseconds=int(rng.integers(50, 250)))
            t = t0 + dt.timedelta(milliseconds=200 + 50 * r)
            t = self.gid_scan(t, pid, launcher, job, meta, step)
            t = min(t + step(), eagain - dt.timedelta(milliseconds=100))
            self.call(t, "create_cq", pid, launcher, job, meta)
            self.call(eagain, "create_qp_refused", pid, launcher, job, meta)
        for i, (pid, _) in enumerate(late):
            self.call(kill + dt.timedelta(milliseconds=2 + 3 * i), "reg_mr_eintr", pid, launcher, job, meta)
        return {"start": t_first, "kill": kill}


def _meta(tenant: str, name: str, image: str) -> dict:
    return {"tenant": tenant, "job_name": name, "image": image, "slurm_restart_count": "0"}


def generate(root, seed: int = 61, preempt: bool = True, **_shape) -> dict:
    """The fleet into `root`; `preempt=False`: the same fleet, draw for draw, whose kite backfill
    jobs are not preempted (they set up and run like any job)."""
    from pathlib import Path

    root = Path(root)
    rng = np.random.default_rng(seed)
    hosts = {h: _Host(h, np.random.default_rng([seed, i])) for i, h in enumerate(HOSTS)}
    job_counter = [9_300_000]

    def new_job() -> str:
        job_counter[0] += int(rng.integers(1, 30))
        return str(job_counter[0])

    def launch(h: _Host, t: dt.datetime, job: str, meta: dict, cq_fail_p: float = 0.0) -> bool:
        launcher, ok = h.pid(), True
        for r in range(4):
            ok &= h.process(t + dt.timedelta(milliseconds=300 * r + int(h.rng.integers(0, 200))), job, meta, launcher,
                            cq_fail_p=cq_fail_p)
        return ok

    fault_jobs: list[tuple[str, str, int]] = []
    preempted: list[tuple[str, str, str]] = []
    offsets = {h: int(rng.integers(60, 29 * 60)) for h in HOSTS}
    for name, h in hosts.items():
        for k in range(12):
            t = START + dt.timedelta(seconds=offsets[name] + k * 1800 + int(rng.integers(-20, 21)))
            if t >= END - dt.timedelta(minutes=12):
                break
            tenant = str(rng.choice(list(TENANTS)))
            job = new_job()
            meta = _meta(tenant, str(rng.choice(TENANTS[tenant])), str(rng.choice(IMAGES)))
            if name in FAULT_HOSTS and FAULT_WINDOW[0] <= t < FAULT_WINDOW[1]:
                attempts, ok = 0, False
                while not ok and attempts < 5:
                    attempts += 1
                    ok = launch(h, t, job, meta, cq_fail_p=FAULT_P)
                    t += dt.timedelta(minutes=2)
                fault_jobs.append((name, job, attempts))
            else:
                launch(h, t, job, meta)
        if name in PREEMPT_HOSTS:  # two backfill jobs, in gaps between the host's own jobs
            for hour in (1, 3):
                t = START + dt.timedelta(hours=hour, seconds=offsets[name] % 1800 + 900 + int(rng.integers(-60, 60)))
                job = new_job()
                meta = _meta("kite", PREEMPT_NAME, str(rng.choice(IMAGES)))
                if preempt:
                    times = h.preempted(t, job, meta)
                    preempted.append((name, job, str(times["kill"])))
                else:
                    launch(h, t, job, meta)

    snaps = _snapshots()
    snap_ns = np.array([int(s.timestamp() * 1e9) for s in snaps], dtype=np.int64)
    records = 0
    ev_schema = polars_schema("events")
    for name, h in hosts.items():
        ev = pl.DataFrame(h.events, schema_overrides={
            "start_time": pl.Datetime("us", "UTC"), "end_time": pl.Datetime("us", "UTC")}, strict=False)
        ev = ev.with_columns(pl.lit(name).alias("host"), pl.lit(RELEASE).alias("kernel_release"),
                             pl.lit(0, pl.Int64).alias("lost_events"), pl.lit(None, pl.Int64).alias("repeat_count"),
                             pl.lit(None, pl.String).alias("path"), pl.lit(None, pl.String).alias("path2"),
                             pl.lit(None, pl.String).alias("output"))
        ev = ev.select([pl.col(c).cast(ev_schema[c]) for c in ev_schema.names()]).sort("start_time", "trace_id", "seq")
        write_partition(ev, root, "events", DATE, name, "part-00000.parquet", durable=False)
        truth = pl.DataFrame(h.truth, infer_schema_length=None).with_columns(pl.lit(name).alias("host"))
        truth = truth.select([pl.col(c).cast(t) for c, t in polars_schema("truth").items()])
        write_partition(truth, root, "truth", DATE, name, "part-00000.parquet", durable=False)
        records += truth.height
        _write_counters(root, name, h, snaps, snap_ns)
    return {"hosts": list(HOSTS), "records": records, "fault_jobs": fault_jobs, "preempted": preempted}


def _write_counters(root, name: str, h: _Host, snaps, snap_ns) -> None:
    times = np.array([int(t.timestamp() * 1e9) for t, _ in h.calls], dtype=np.int64)
    idx = np.searchsorted(snap_ns, times, side="left")  # the first snapshot at or after the call
    rows = []
    for i, (_, tree) in zip(idx, h.calls, strict=True):
        for _, fn, errno in TREES[tree][2]:
            rows.append((int(i), fn, errno))
    calls = pl.DataFrame(rows, schema={"i": pl.Int64, "probe": pl.String, "errno": pl.String}, orient="row")
    calls = calls.filter(pl.col("i") < len(snaps))
    inv = calls.group_by("i", "probe").agg(pl.len().cast(pl.Int64).alias("invocations"),
                                           pl.col("errno").is_not_null().sum().cast(pl.Int64).alias("failures"))
    errs = (calls.filter(pl.col("errno").is_not_null()).group_by("i", "probe", "errno")
            .agg(pl.len().cast(pl.Int64).alias("count"))
            .sort("errno").group_by("i", "probe").agg(pl.struct("errno", "count").alias("errno_counts")))
    grid = pl.DataFrame({"i": np.repeat(np.arange(len(snaps)), len(PROBES)), "probe": PROBES * len(snaps)})
    c = (grid.join(inv, on=["i", "probe"], how="left").join(errs, on=["i", "probe"], how="left")
         .with_columns(pl.col("invocations").fill_null(0), pl.col("failures").fill_null(0)))
    c = c.with_columns(
        pl.lit(name).alias("host"),
        pl.Series("snapshot_time", snaps, dtype=pl.Datetime("us", "UTC"))[c["i"]].alias("snapshot_time"),
        pl.lit(float(SNAPSHOT_S)).alias("interval_s"), pl.lit(RELEASE).alias("kernel_release"),
        pl.lit("mlx5").alias("vendor"), pl.lit("rdma").alias("probe_set"),
        pl.col("probe").replace_strict(LAYER).alias("layer"), pl.lit(True).alias("live"),
        pl.lit(0, pl.Int64).alias("lost_records"))
    schema = polars_schema("counters")
    c = c.select([pl.col(col).cast(t) for col, t in schema.items()]).sort("snapshot_time", "probe")
    path = write_partition(c, root, "counters", DATE, name, "part-00000.parquet", durable=False)
    write_counter_buckets(path, durable=False)

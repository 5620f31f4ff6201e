"""fleetgen63's fleet: storms seen mostly through counts -- the tracer's in-kernel aggregation and
its ring buffer.

Written blind (reference/rdma_control_path.yaml, tracer/schema.py, README.md,
docs/architecture.md, tests/fleet_harness.py, tests/fleetgen61 as the brief's model, the other
generators' docstrings); it imports only tracer.schema's writers.

What the documents say the tracer does (the model this generator imitates)
--------------------------------------------------------------------------
* docs/architecture.md, "Aggregation": "per snapshot interval the first K trees of a failure
  signature are records, the rest are counted in `sigs`"; the data flow: "emit call tree on
  failure (first K per signature per interval, the rest counted in-kernel -> repeat_count)".
  tracer/schema.py: a row's trace "is one full example standing for `repeat_count` of them
  (null = 1)"; docs/benchmarks.md ("tracer run under failure storms"): "per signature the
  `repeat_count`s of its examples add up to the failed calls the drivers themselves counted, and
  over the storm repeat counts + failing trees without an example (`lost_records`) = the drivers'
  count = the counters". Here K = 2 (the tracer's `--examples`): in each 30 s interval a host's
  first two trees of a signature (the call tree's shape: its tree here) are records; when more
  happened, the second carries repeat_count = n - 1 (n - K + 1). The kernel aggregates over every
  process of the host (docs: "the kernel aggregates over every process").
* Counters (schema: "counters never drop") are exact: every call, recorded or not.
* `lost_records` (schema: "ring-buffer loss; counters never drop", snapshot-wide, the same on each
  row): MODELLING ASSUMPTION -- the number of trees of the interval whose records did not reach the
  ring (each lost failure example counts the trees it stood for; a lost good tree counts 1), so
  that repeat counts + lost trees = the counters.
* A capture window is open the whole run on every host: every tree is timed (latency_ns set) and
  every good tree (every root < 50 ms) is a record. The `windows` variant: 20 s windows every 5
  minutes (its own phase a host): a good tree is a record only in one; a failure record outside
  one carries no latency and its frames' ts_ns, start and end are the 4 ms tick the root returned
  in (tracer/schema.py, Clocks) -- the same failure records and counters as the main fleet.

The reference behind the trees
------------------------------
* create_qp/create_cq/reg_mr/alloc_pd begin their uobject with rdma_alloc_begin_uobject ->
  alloc_uobj, alloc_begin_idr_uobject -> idr_add_uobj, ib_rdmacg_try_charge; the rdma cgroup's
  hca_object limit reached is -EAGAIN there (confirmed_upstream), returned to the caller.
* alloc_pd: ib_uverbs_alloc_pd -> uverbs_request, rdma_alloc_begin_uobject, mlx5_ib_alloc_pd ->
  mlx5_cmd_exec (ALLOC_PD; "-ENOMEM on LIM_ERR"), rdma_restrack_add, uverbs_response;
  rdma_alloc_abort_uobject on the error path.
* reg_mr: ib_umem_get -ENOMEM "pinned_vm + npages > RLIMIT_MEMLOCK without CAP_IPC_LOCK" (the
  check comes before pin_user_pages_fast: nothing pinned), rdma_alloc_abort_uobject after.
* query_gid: UVERBS_METHOD_QUERY_GID_ENTRY -> rdma_get_gid_attr, -ENODATA on an empty slot.

The process model
-----------------
24 mlx5 RoCE GPU hosts (gpu-01 .. gpu-24, one kernel) over 00:00-06:00 UTC, snapshots every 30 s
at hh:mm:07 and hh:mm:37 (a row counts the calls of the 30 s before its snapshot_time).

* rdma-healthd (every host, one long-lived process): every 2 minutes it reads GID slots 0..4 one
  by one; 0-3 are valid, slot 4 is empty (a removed IPv6 address): ENODATA at rdma_get_gid_attr,
  returned, the agent goes on. gid_slot_empty (ROUTINE): one failure an interval at most: MANY
  ROWS, each standing for itself (repeat_count null).
* Jobs (every host, every 30 minutes, its own offset; BUSY_HOST gpu-09 every 10 minutes, three
  times the storms of any other host): 4 ranks (python3), each alloc_pd,
  create_cq, two create_qp, two reg_mr, then per QP RESET->INIT, INIT->RTR, RTR->RTS.
  qp_charge_storm (ROUTINE, a crash-loop-free retry storm): the pods' rdma cgroup still holds the
  previous job's QP charges while its teardown completes, so every rank's first create_qp is
  refused (EAGAIN at ib_rdmacg_try_charge, returned) and the rank (its framework) retries every
  8-12 ms until the uncharge lands, 25-70 s after the job's start, then its create_qp succeeds and
  the rank goes on: ~400 refusals a second per host, thousands per interval, of which only two a
  interval are records (the second with a repeat count in the thousands).
* pd_fw_quota (ROOT CAUSE, FEW ROWS, LARGE COUNTS): the KV-transfer service `kvxfer` (systemd,
  ppid 1) on FAULT_HOSTS, whose VF's firmware PD quota was cut (ALLOC_PD LIM_ERR: ENOMEM at
  mlx5_cmd_exec under mlx5_ib_alloc_pd) for 65 minutes each (CRASH_SPANS, one host after the
  other, never two within an hour of each other's span): every start's alloc_pd fails and the
  process exits. For the first 20 minutes (SLOW_S) the unit runs its old config (job metadata
  svc_config=r41, RestartSec 10 s): ~3 deaths an interval, two records (weights 1 and 2); then
  the configuration management pushes r42 (RestartSec 100 ms, to recover faster): ~250 deaths an
  interval, two records. So the crash loop's records carry r41 on ~30 % of its rows but under
  1 % of its weight. Before its span (and on every other host) kvxfer starts once with r41 and
  sets up fine; after it, once with r42.
* ckpt_memlock (ROOT CAUSE, MANY ROWS, SMALL COUNTS): tenant wren's checkpoint jobs
  (job_name wren-ckpt) on CKPT_HOSTS, launched every 4 minutes by a requeueing scheduler into a
  container whose RLIMIT_MEMLOCK is 64 MiB: 2 ranks set up (alloc_pd, create_cq, create_qp, a small
  reg_mr); rank 0's reg_mr of the checkpoint staging buffer fails ENOMEM at ib_umem_get and the
  job ends (rank 1 is killed with it, no trace): one failure an interval, each record itself.
* RING LOSS (LOST_HOST = gpu-15 and SILENT_HOST = gpu-11, fault hosts): their tracer daemons are
  starved while kvxfer crash-loops (every restart forks a large process): in LOST_SHARE of the
  snapshots of the crash span (80 % on gpu-15, every one on gpu-11) the ring was full when the
  interval's records were written, and every record of such an interval -- failure examples and
  good trees -- was lost (lost_records as above); the counters count every call. gpu-11's crash
  loop has no record at all: only its counters show it. STALLED_HOST gpu-12 (no fault, not a
  memlock host) lost every record of 01:00-03:00 the same way (its daemon stalled): four storms and
  sixty empty-slot reads there are in its counters only.

The truth: every record of a routine family is routine (expected_error true); every record of a
root cause is the cause's (expected_error false); the bifurcation is the origin (every edge
above it is on the operation's good path).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from tracer.schema import metadata_list, polars_schema, write_counter_buckets, write_partition

DAY = dt.datetime(2026, 11, 19, tzinfo=dt.UTC)
DATE = DAY.date().isoformat()
START = DAY
END = DAY + dt.timedelta(hours=6)
RELEASE = "6.8.0-60-generic"
HOSTS = [f"gpu-{i:02d}" for i in range(1, 25)]
FAULT_HOSTS = ["gpu-07", "gpu-15", "gpu-22", "gpu-11"]
LOST_HOST = "gpu-15"  # the ring lost most of its crash span's records
SILENT_HOST = "gpu-11"  # the ring lost every record of its crash span: the counters alone show it
CRASH_SPANS = {  # host -> (start, end) of kvxfer's crash loop, one host after the other
    "gpu-07": (DAY + dt.timedelta(minutes=20), DAY + dt.timedelta(hours=1, minutes=25)),
    "gpu-15": (DAY + dt.timedelta(hours=1, minutes=40), DAY + dt.timedelta(hours=2, minutes=45)),
    "gpu-22": (DAY + dt.timedelta(hours=3), DAY + dt.timedelta(hours=4, minutes=5)),
    "gpu-11": (DAY + dt.timedelta(hours=4, minutes=20), DAY + dt.timedelta(hours=5, minutes=25)),
}
STALLED_HOST = "gpu-12"  # no fault: its daemon stalled two hours, every record of them lost
LOST_SPANS = {**CRASH_SPANS, STALLED_HOST: (DAY + dt.timedelta(hours=1), DAY + dt.timedelta(hours=3))}
LOST_SHARE = {LOST_HOST: 0.8, SILENT_HOST: 1.0, STALLED_HOST: 1.0}  # of the span's snapshots: the ring full
CKPT_HOSTS = HOSTS[:6] + HOSTS[15:21]  # gpu-01..06, gpu-16..21 (no fault host)
assert not set(CKPT_HOSTS) & set(FAULT_HOSTS)
CKPT_NAME = "wren-ckpt"
BUSY_HOST = "gpu-09"  # a job every 10 minutes instead of 30: three times the storms
assert BUSY_HOST not in CKPT_HOSTS + FAULT_HOSTS
K = 2  # records per failure signature per snapshot interval per host
SNAPSHOT_S = 30
WINDOW_EVERY_S, WINDOW_S = 300, 20  # capture windows of the `windows` variant
TICK_NS = 4_000_000  # HZ=250: an untimed record's clock
RESTART_S = 0.100  # systemd RestartSec under the pushed config
SLOW_RESTART_S, SLOW_S = 10, 20 * 60  # RestartSec under the old config; how long until the push
OLD_CONFIG, NEW_CONFIG = "r41", "r42"  # kvxfer's metadata svc_config
STORM_S = (25, 70)  # how long a job's ranks are refused their first QP
RETRY_MS = (8, 12)
TENANTS = {"heron": ["heron-pretrain", "heron-eval"], "osprey": ["osprey-rl"]}

FAMILIES = {  # key -> (origin probe, errno, origin layer)
    "gid_slot_empty": ("rdma_get_gid_attr", "ENODATA", "core"),
    "qp_charge_storm": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "pd_fw_quota": ("mlx5_cmd_exec", "ENOMEM", "driver"),
    "ckpt_memlock": ("ib_umem_get", "ENOMEM", "core"),
}
ROOT_CAUSES = ("pd_fw_quota", "ckpt_memlock")
ROUTINE = ("gid_slot_empty", "qp_charge_storm")
OPERATION = {"gid_slot_empty": "query_gid", "qp_charge_storm": "create_qp", "pd_fw_quota": "alloc_pd",
             "ckpt_memlock": "reg_mr"}

LAYER = {
    "ib_uverbs_ioctl": "uverbs", "ib_uverbs_run_method": "uverbs",
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs",
    "rdma_get_gid_attr": "core", "rdma_read_gid_attr_ndev_rcu": "core", "rdma_put_gid_attr": "core",
    "rdma_alloc_begin_uobject": "core", "alloc_uobj": "core", "alloc_begin_idr_uobject": "core",
    "idr_add_uobj": "core", "ib_rdmacg_try_charge": "core", "rdma_alloc_abort_uobject": "core",
    "rdma_lookup_get_uobject": "core", "rdma_restrack_add": "core",
    "ib_uverbs_alloc_pd": "uverbs", "uverbs_request": "uverbs", "uverbs_response": "uverbs",
    "mlx5_ib_alloc_pd": "driver",
    "ib_uverbs_create_cq": "uverbs", "create_cq": "uverbs", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "ib_umem_get": "core", "mlx5_ib_db_map_user": "driver",
    "mlx5_comp_eqn_get": "driver", "mlx5_core_create_cq": "driver", "mlx5_cmd_do": "driver",
    "ib_uverbs_create_qp": "uverbs", "create_qp": "uverbs", "ib_create_qp_user": "core",
    "mlx5_ib_create_qp": "driver", "create_user_qp": "driver", "_create_user_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "mlx5_cmd_exec": "driver",
    "ib_uverbs_reg_mr": "uverbs", "mlx5_ib_reg_user_mr": "driver", "mlx5r_umr_resource_init": "driver",
    "pin_user_pages_fast": "core", "sg_alloc_append_table_from_pages": "core",
    "ib_uverbs_modify_qp": "uverbs", "modify_qp": "uverbs", "ib_modify_qp_with_udata": "core",
    "_ib_modify_qp": "core", "rdma_fill_sgid_attr": "core", "ib_resolve_eth_dmac": "core",
    "ib_resolve_unicast_gid_dmac": "core", "rdma_addr_find_l2_eth_by_grh": "core",
    "ib_security_modify_qp": "core", "mlx5_ib_modify_qp": "driver", "__mlx5_ib_modify_qp": "driver",
    "mlx5_set_path": "driver", "mlx5_core_qp_modify": "driver", "rdma_counter_bind_qp_auto": "core",
}
PROBES = sorted(LAYER)
ERRNO_VALUE = {"EAGAIN": 11, "ENOMEM": 12, "ENODATA": 61}

_A, _M, _N = "EAGAIN", "ENOMEM", "ENODATA"


def _ok(frames):
    return [(d, fn, None) for d, fn in frames]


def _uobj(d: int, charge: str | None = None):
    """rdma_alloc_begin_uobject at depth d; `charge`: the errno of its ib_rdmacg_try_charge."""
    return [(d, "rdma_alloc_begin_uobject", charge), (d + 1, "alloc_uobj", None),
            (d + 1, "alloc_begin_idr_uobject", charge), (d + 2, "idr_add_uobj", None),
            (d + 2, "ib_rdmacg_try_charge", charge)]


_GID_TOP = [(0, "ib_uverbs_ioctl"), (1, "ib_uverbs_run_method"), (2, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY")]
_GID_OK = _ok(_GID_TOP + [(3, "rdma_get_gid_attr"), (3, "rdma_read_gid_attr_ndev_rcu"), (3, "rdma_put_gid_attr")])
_GID_EMPTY = [(d, fn, _N) for d, fn in _GID_TOP] + [(3, "rdma_get_gid_attr", _N)]

_PD_OK = _ok([(0, "ib_uverbs_alloc_pd"), (1, "uverbs_request")]) + _uobj(1) + \
    _ok([(1, "mlx5_ib_alloc_pd"), (2, "mlx5_cmd_exec"), (1, "rdma_restrack_add"), (1, "uverbs_response")])
_PD_QUOTA = [(0, "ib_uverbs_alloc_pd", _M), (1, "uverbs_request", None)] + _uobj(1) + \
    [(1, "mlx5_ib_alloc_pd", _M), (2, "mlx5_cmd_exec", _M), (1, "rdma_alloc_abort_uobject", None)]

_CQ_OK = _ok([(0, "ib_uverbs_create_cq"), (1, "create_cq")]) + _uobj(2) + \
    _ok([(2, "mlx5_ib_create_cq"), (3, "create_cq_user"), (4, "ib_umem_get"), (4, "mlx5_ib_db_map_user"),
         (3, "mlx5_comp_eqn_get"), (3, "mlx5_core_create_cq"), (4, "mlx5_cmd_do"), (2, "rdma_restrack_add")])

_QP_OK = _ok([(0, "ib_uverbs_create_qp"), (1, "create_qp")]) + _uobj(2) + \
    _ok([(2, "rdma_lookup_get_uobject"), (2, "ib_create_qp_user"), (3, "create_qp"), (4, "mlx5_ib_create_qp"),
         (5, "create_qp"), (6, "create_user_qp"), (7, "_create_user_qp"), (8, "ib_umem_get"),
         (8, "mlx5_ib_db_map_user"), (7, "mlx5_qpc_create_qp"), (8, "mlx5_cmd_exec")])
_QP_REFUSED = [(0, "ib_uverbs_create_qp", _A), (1, "create_qp", _A)] + _uobj(2, _A)

_MR_HEAD = _ok([(0, "ib_uverbs_reg_mr")]) + _uobj(1) + _ok([(1, "rdma_lookup_get_uobject"), (1, "mlx5_ib_reg_user_mr"),
                                                            (2, "mlx5r_umr_resource_init")])
_MR_OK = _MR_HEAD + _ok([(2, "ib_umem_get"), (3, "pin_user_pages_fast"), (3, "sg_alloc_append_table_from_pages")])
_MR_MEMLOCK = [(0, "ib_uverbs_reg_mr", _M)] + _MR_HEAD[1:-2] + [(1, "mlx5_ib_reg_user_mr", _M),
                                                                (2, "mlx5r_umr_resource_init", None),
                                                                (2, "ib_umem_get", _M),
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
    "gid_entry": ("query_gid", None, _GID_OK),
    "gid_entry_empty": ("query_gid", None, _GID_EMPTY),
    "alloc_pd": ("alloc_pd", None, _PD_OK),
    "alloc_pd_quota": ("alloc_pd", None, _PD_QUOTA),
    "create_cq": ("create_cq", None, _CQ_OK),
    "create_qp": ("create_qp", "RC", _QP_OK),
    "create_qp_refused": ("create_qp", "RC", _QP_REFUSED),
    "reg_mr": ("reg_mr", None, _MR_OK),
    "reg_mr_memlock": ("reg_mr", None, _MR_MEMLOCK),
    "reset_init": ("modify_qp", "RESET->INIT", _ok(_TOP + [(4, "rdma_counter_bind_qp_auto")] + _DRIVER)),
    "init_rtr": ("modify_qp", "INIT->RTR", _ok(_TOP + _RTR)),
    "rtr_rts": ("modify_qp", "RTR->RTS", _ok(_TOP + _DRIVER)),
}
TREE_NAMES = list(TREES)
TREE_FAMILY = {"gid_entry_empty": "gid_slot_empty", "create_qp_refused": "qp_charge_storm",
               "alloc_pd_quota": "pd_fw_quota", "reg_mr_memlock": "ckpt_memlock"}
FAILING = np.array([any(e for _, _, e in TREES[n][2]) for n in TREE_NAMES])


def _snapshots() -> list[dt.datetime]:
    out, t = [], START + dt.timedelta(seconds=7)
    while t < END:
        out.append(t)
        t += dt.timedelta(seconds=SNAPSHOT_S)
    return out


def _ns(t: dt.datetime) -> int:
    return int(t.timestamp() * 1e9)


class _Host:
    """A host's calls: (time ns, tree index, pid, context index); contexts hold (ppid, comm, job, meta)."""

    def __init__(self, host: str, rng: np.random.Generator):
        self.host, self.rng = host, rng
        self.boot = DAY - dt.timedelta(days=2, seconds=int(rng.integers(0, 86400)))
        self.boot_id = f"{int(rng.integers(1 << 30)):08x}"
        self.next_pid = int(rng.integers(20000, 40000))
        self.t: list[np.ndarray] = []
        self.tree: list[np.ndarray] = []
        self.pid: list[np.ndarray] = []
        self.ctx: list[np.ndarray] = []
        self.contexts: list[tuple] = []

    def new_pid(self) -> int:
        self.next_pid += int(self.rng.integers(3, 40))
        return self.next_pid

    def context(self, ppid: int, comm: str, job: str | None, meta: dict) -> int:
        self.contexts.append((ppid, comm, job, metadata_list(meta)))
        return len(self.contexts) - 1

    def calls(self, times_ns, tree: str, pid, ctx: int) -> None:
        times_ns = np.asarray(times_ns, dtype=np.int64)
        n = times_ns.size
        self.t.append(times_ns)
        self.tree.append(np.full(n, TREE_NAMES.index(tree), dtype=np.int16))
        self.pid.append(np.broadcast_to(np.asarray(pid, dtype=np.int32), (n,)).copy())
        self.ctx.append(np.full(n, ctx, dtype=np.int32))

    def call(self, t: dt.datetime | int, tree: str, pid: int, ctx: int) -> None:
        self.calls([t if isinstance(t, int) else _ns(t)], tree, pid, ctx)

    # -- processes -------------------------------------------------------------------------------
    def gid_agent(self) -> None:
        pid, rng = self.new_pid(), self.rng
        ctx = self.context(1, "rdma-healthd", None, {"service": "rdma-healthd"})
        t = _ns(START) + int(rng.integers(1, 119)) * 1_000_000_000
        end = _ns(END) - 60 * 1_000_000_000
        while t < end:
            for slot in range(5):
                t_slot = t + slot * int(rng.integers(2, 6)) * 1_000_000
                self.call(t_slot, "gid_entry" if slot < 4 else "gid_entry_empty", pid, ctx)
            t += 120 * 1_000_000_000

    def rank(self, t0: int, ctx: int, pid: int, storm_end: int | None) -> int:
        """A job's rank from t0 (ns): returns the time of its last call."""
        rng = self.rng

        def step() -> int:
            return int(rng.integers(80, 300)) * 1_000_000

        t = t0 + step()
        self.call(t, "alloc_pd", pid, ctx)
        t += step()
        self.call(t, "create_cq", pid, ctx)
        t += step()
        if storm_end is not None and t < storm_end:  # refused until the uncharge lands
            gaps = rng.integers(RETRY_MS[0], RETRY_MS[1] + 1, size=int((storm_end - t) / 8e6) + 2) * 1_000_000
            times = t + np.concatenate([[0], np.cumsum(gaps)])
            times = times[times < storm_end]
            self.calls(times, "create_qp_refused", pid, ctx)
            t = int(times[-1]) + int(gaps[0])
        self.call(t, "create_qp", pid, ctx)
        t += step()
        self.call(t, "create_qp", pid, ctx)
        for _ in range(2):
            t += step()
            self.call(t, "reg_mr", pid, ctx)
        for _ in range(2):
            for tree in ("reset_init", "init_rtr", "rtr_rts"):
                t += step()
                self.call(t, tree, pid, ctx)
        return t

    def job(self, t0: dt.datetime, job: str, meta: dict) -> None:
        launcher = self.new_pid()
        storm_end = _ns(t0) + int(self.rng.integers(STORM_S[0] * 1000, STORM_S[1] * 1000)) * 1_000_000
        for r in range(4):
            pid = self.new_pid()
            ctx = self.context(launcher, "python3", job, meta)
            self.rank(_ns(t0) + 300_000_000 * r + int(self.rng.integers(0, 200)) * 1_000_000, ctx, pid, storm_end)

    def kvxfer_setup(self, t: int, ctx: int, pid: int) -> None:
        for tree in ("alloc_pd", "create_cq", "create_qp", "create_qp", "reg_mr", "reset_init", "init_rtr", "rtr_rts"):
            t += int(self.rng.integers(5, 40)) * 1_000_000
            self.call(t, tree, pid, ctx)

    def kvxfer(self) -> dict:
        """The service: one good start (config OLD_CONFIG); on a fault host its crash loop -- slow
        (RestartSec 10 s, still OLD_CONFIG) for SLOW_S, then fast (the pushed NEW_CONFIG: 100 ms)
        -- then one good start (NEW_CONFIG)."""
        old = self.context(1, "kvxfer", None, {"service": "kvxfer", "svc_config": OLD_CONFIG})
        self.kvxfer_setup(_ns(START) + int(self.rng.integers(20, 60)) * 1_000_000_000, old, self.new_pid())
        span = CRASH_SPANS.get(self.host)
        if not span:
            return {"deaths": 0}
        new = self.context(1, "kvxfer", None, {"service": "kvxfer", "svc_config": NEW_CONFIG})
        t, end, push = _ns(span[0]), _ns(span[1]), _ns(span[0]) + SLOW_S * 1_000_000_000
        deaths = 0
        for ctx, until, restart_ns in ((old, push, SLOW_RESTART_S * 1_000_000_000), (new, end, int(RESTART_S * 1e9))):
            pids, times = [], []
            while t < until:
                times.append(t + int(self.rng.integers(15, 30)) * 1_000_000)  # exec, open the device, alloc_pd
                pids.append(self.new_pid())
                t = times[-1] + restart_ns + int(self.rng.integers(0, 10)) * 1_000_000
            self.calls(times, "alloc_pd_quota", np.array(pids, dtype=np.int32), ctx)
            deaths += len(times)
        self.kvxfer_setup(t, new, self.new_pid())
        return {"deaths": deaths}

    def ckpt_jobs(self, new_job) -> int:
        rng, n = self.rng, 0
        t = START + dt.timedelta(minutes=10, seconds=int(rng.integers(0, 240)))
        while t < END - dt.timedelta(minutes=8):
            job, launcher = new_job(), self.new_pid()
            meta = {"tenant": "wren", "job_name": CKPT_NAME}
            for r in range(2):
                pid = self.new_pid()
                ctx = self.context(launcher, "python3", job, meta)
                s = _ns(t) + r * 150_000_000
                for tree in ("alloc_pd", "create_cq", "create_qp", "reg_mr"):
                    s += int(rng.integers(60, 200)) * 1_000_000
                    self.call(s, tree, pid, ctx)
                if r == 0:
                    self.call(s + int(rng.integers(200, 900)) * 1_000_000, "reg_mr_memlock", pid, ctx)
            n += 1
            t += dt.timedelta(minutes=4, seconds=int(rng.integers(-20, 21)))
        return n


def generate(root, seed: int = 63, ring_loss: bool = True, windows: bool = False, **_shape) -> dict:
    """The fleet into `root`; `ring_loss=False`: the same fleet, draw for draw, whose rings never
    overflowed (every example delivered; identical counters); `windows=True`: the same calls under
    a tracer whose capture windows are WINDOW_S every WINDOW_EVERY_S (each host its own phase):
    good trees outside them are no records, failure records outside them untimed (latency_ns
    null, every ts_ns and start = end the 4 ms tick the root returned in); the same failure
    records, the same counters."""
    from pathlib import Path

    root = Path(root)
    rng = np.random.default_rng(seed)
    hosts = {h: _Host(h, np.random.default_rng([seed, i])) for i, h in enumerate(HOSTS)}
    job_counter = [7_700_000]

    def new_job() -> str:
        job_counter[0] += int(rng.integers(1, 30))
        return str(job_counter[0])

    offsets = {h: int(rng.integers(60, 29 * 60)) for h in HOSTS}
    summary = {"hosts": list(HOSTS), "records": 0, "deaths": {}, "ckpt_jobs": {}, "lost_trees": {},
               "lost_intervals": 0}
    snaps = _snapshots()
    snap_ns = np.array([_ns(s) for s in snaps], dtype=np.int64)
    lost_rng = np.random.default_rng([seed, 999])
    lost_draw = lost_rng.random(len(snaps))
    for name, h in hosts.items():
        h.gid_agent()
        summary["deaths"][name] = h.kvxfer()["deaths"]
        period = 600 if name == BUSY_HOST else 1800
        for k in range(6 * 3600 // period):
            t = START + dt.timedelta(seconds=offsets[name] % period + k * period + int(rng.integers(-20, 21)))
            if t >= END - dt.timedelta(minutes=5):
                break
            tenant = str(rng.choice(list(TENANTS)))
            h.job(t, new_job(), {"tenant": tenant, "job_name": str(rng.choice(TENANTS[tenant]))})
        if name in CKPT_HOSTS:
            summary["ckpt_jobs"][name] = h.ckpt_jobs(new_job)
    for name, h in hosts.items():
        lost = set()
        if name in LOST_SHARE and ring_loss:
            span = LOST_SPANS[name]
            lost = {i for i in range(len(snaps)) if span[0] < snaps[i] and (i == 0 or snaps[i - 1] < span[1])
                    and lost_draw[i] < LOST_SHARE[name]}
        phase = int(np.random.default_rng([seed, 500, HOSTS.index(name)]).integers(0, WINDOW_EVERY_S * 1000)) \
            * 1_000_000 if windows else None
        rec, counters, lost_trees = _aggregate(h, snap_ns, lost, phase)
        summary["lost_trees"][name] = lost_trees
        summary["lost_intervals"] += len(lost)
        summary["records"] += _write_events(root, h, rec)
        _write_counters(root, name, counters, snaps)
    return summary


def _aggregate(h: _Host, snap_ns: np.ndarray, lost: set[int], window_phase: int | None = None):
    """Every call to its interval; per (interval, tree) of a failing tree the first K calls are
    records, the K-th standing for the rest; good trees are all records (`window_phase`: only
    those in a capture window, WINDOW_S every WINDOW_EVERY_S from that phase, ns). Records of a
    `lost` interval are dropped (their trees counted in lost_records)."""
    t = np.concatenate(h.t)
    tree = np.concatenate(h.tree)
    pid = np.concatenate(h.pid)
    ctx = np.concatenate(h.ctx)
    order = np.argsort(t, kind="stable")
    t, tree, pid, ctx = t[order], tree[order], pid[order], ctx[order]
    iv = np.searchsorted(snap_ns, t, side="left")
    assert (iv < snap_ns.size).all(), "a call after the last snapshot"
    timed = np.ones(t.size, dtype=bool) if window_phase is None else \
        ((t - window_phase) % (WINDOW_EVERY_S * 1_000_000_000)) < WINDOW_S * 1_000_000_000
    calls = pl.DataFrame({"t": t, "tree": tree, "pid": pid, "ctx": ctx, "i": iv, "failing": FAILING[tree],
                          "timed": timed})
    calls = calls.with_columns(
        pl.int_range(pl.len()).over("i", "tree").alias("rank"),
        pl.len().over("i", "tree").alias("n"))
    rec = calls.filter((~pl.col("failing") & pl.col("timed")) | (pl.col("failing") & (pl.col("rank") < K))).with_columns(
        pl.when(pl.col("failing") & (pl.col("rank") == K - 1) & (pl.col("n") > K))
        .then(pl.col("n") - K + 1).otherwise(None).cast(pl.Int64).alias("repeat_count"))
    lost_trees: dict[str, int] = {}
    lost_per_i = {}
    if lost:
        gone = rec.filter(pl.col("i").is_in(list(lost)))
        w = gone.with_columns(pl.col("repeat_count").fill_null(1).alias("w"))
        lost_per_i = dict(w.group_by("i").agg(pl.col("w").sum()).iter_rows())
        for tr, n in w.group_by("tree").agg(pl.col("w").sum()).iter_rows():
            lost_trees[TREE_NAMES[tr]] = int(n)
        rec = rec.filter(~pl.col("i").is_in(list(lost)))
    per_tree = calls.group_by("i", "tree").agg(pl.len().alias("n"))
    return rec, (per_tree, lost_per_i), lost_trees


def _write_events(root, h: _Host, rec: pl.DataFrame) -> int:
    rng = h.rng
    n = rec.height
    timed = rec["timed"].to_numpy()
    ctx = rec["ctx"].to_numpy()
    root_ns = rng.integers(40_000, 400_000, size=n)
    boot_ns = _ns(h.boot)
    trace_ids = [f"{h.host}:{h.boot_id}:{p}:{k}" for k, p in enumerate(rec["pid"].to_list())]
    md_type = pl.List(pl.Struct({"key": pl.String, "value": pl.String}))
    records = pl.DataFrame({
        "trace_id": trace_ids, "tree": rec["tree"].cast(pl.Int64), "t": rec["t"], "pid": rec["pid"],
        "ppid": [h.contexts[c][0] for c in ctx], "comm": [h.contexts[c][1] for c in ctx],
        "job_id": [h.contexts[c][2] for c in ctx],
        "metadata": pl.Series([h.contexts[c][3] for c in ctx], dtype=md_type),
        "root_ns": root_ns, "repeat_count": rec["repeat_count"], "timed": timed})
    frames = []
    for k, name in enumerate(TREE_NAMES):
        op, arg, fr = TREES[name]
        root_errno = fr[0][2]
        failing = bool(FAILING[k])
        for seq, (depth, fn, errno) in enumerate(fr):
            frames.append({"tree": k, "seq": seq, "probe": fn, "layer": LAYER[fn], "depth": depth, "errno": errno,
                           "ret": -ERRNO_VALUE[errno] if errno else 0, "arg": arg if depth == 0 else None,
                           "kind": "failure" if failing else "good", "command": op,
                           "exit_status": -ERRNO_VALUE[root_errno] if root_errno else 0})
    frames_df = pl.DataFrame(frames, schema_overrides={"errno": pl.String, "arg": pl.String})
    tick = (pl.col("t") + pl.col("root_ns")) // TICK_NS * TICK_NS  # the tick the root returned in
    ev = records.join(frames_df, on="tree").with_columns(
        pl.when(pl.col("timed")).then(pl.col("t") - boot_ns + pl.col("seq") * 2000).otherwise(tick - boot_ns)
        .alias("ts_ns"),
        pl.col("pid").alias("tid"),
        pl.when(pl.col("timed")).then(
            pl.max_horizontal(pl.lit(1000), pl.col("root_ns") // (pl.col("depth") + 1) - pl.col("seq") * 300))
        .otherwise(None).alias("latency_ns"),
        pl.from_epoch(pl.when(pl.col("timed")).then(pl.col("t")).otherwise(tick), "ns")
        .dt.replace_time_zone("UTC").alias("start_time"),
        pl.from_epoch(pl.when(pl.col("timed")).then(pl.col("t") + pl.col("root_ns")).otherwise(tick), "ns")
        .dt.replace_time_zone("UTC").alias("end_time"),
        pl.lit(h.host).alias("host"), pl.lit(RELEASE).alias("kernel_release"),
        pl.lit(0, pl.Int64).alias("lost_events"),
        pl.lit(None, pl.String).alias("path"), pl.lit(None, pl.String).alias("path2"),
        pl.lit(None, pl.String).alias("output"))
    schema = polars_schema("events")
    ev = ev.sort("t", "trace_id", "seq").select([pl.col(c).cast(schema[c]) for c in schema.names()])
    write_partition(ev, root, "events", DATE, h.host, "part-00000.parquet", durable=False)
    fam = [TREE_FAMILY.get(TREE_NAMES[k]) for k in records["tree"].to_list()]
    origin = [FAMILIES[f] if f else (None, None, None) for f in fam]
    held = rng.random(n) < 0.15
    truth = pl.DataFrame({
        "trace_id": trace_ids, "host": [h.host] * n,
        "kind": ["failure" if f else "good" for f in fam], "root_cause": fam,
        "bifurcation_probe": [o[0] for o in origin], "bifurcation_errno": [o[1] for o in origin],
        "origin_layer": [o[2] for o in origin],
        "expected_error": [(f in ROUTINE) if f else None for f in fam],
        "held_out": [bool(held[k]) and not fam[k] for k in range(n)]})
    truth = truth.select([pl.col(c).cast(t) for c, t in polars_schema("truth").items()])
    write_partition(truth, root, "truth", DATE, h.host, "part-00000.parquet", durable=False)
    return n


def _write_counters(root, name: str, counters, snaps) -> None:
    per_tree, lost_per_i = counters
    rows = []  # (tree, probe, errno, frames of that probe with that errno in one tree)
    for k, tree in enumerate(TREE_NAMES):
        seen: dict[tuple, int] = {}
        for _, fn, errno in TREES[tree][2]:
            seen[(fn, errno)] = seen.get((fn, errno), 0) + 1
        rows += [(k, fn, errno, c) for (fn, errno), c in seen.items()]
    tp = pl.DataFrame(rows, schema={"tree": pl.Int16, "probe": pl.String, "errno": pl.String, "c": pl.Int64},
                      orient="row")
    cells = per_tree.join(tp, on="tree").with_columns((pl.col("n") * pl.col("c")).alias("calls"))
    inv = cells.group_by("i", "probe").agg(
        pl.col("calls").sum().cast(pl.Int64).alias("invocations"),
        pl.col("calls").filter(pl.col("errno").is_not_null()).sum().cast(pl.Int64).alias("failures"))
    errs = (cells.filter(pl.col("errno").is_not_null()).group_by("i", "probe", "errno")
            .agg(pl.col("calls").sum().cast(pl.Int64).alias("count"))
            .sort("errno").group_by("i", "probe").agg(pl.struct("errno", "count").alias("errno_counts")))
    grid = pl.DataFrame({"i": np.repeat(np.arange(len(snaps)), len(PROBES)).astype(np.uint32),
                         "probe": PROBES * len(snaps)})
    lost = pl.DataFrame({"i": list(lost_per_i), "lost_records": list(lost_per_i.values())},
                        schema={"i": pl.UInt32, "lost_records": pl.Int64})
    c = (grid.join(inv.with_columns(pl.col("i").cast(pl.UInt32)), on=["i", "probe"], how="left")
         .join(errs.with_columns(pl.col("i").cast(pl.UInt32)), on=["i", "probe"], how="left")
         .join(lost, on="i", how="left")
         .with_columns(pl.col("invocations").fill_null(0), pl.col("failures").fill_null(0),
                       pl.col("lost_records").fill_null(0)))
    c = c.with_columns(
        pl.lit(name).alias("host"),
        pl.Series("snapshot_time", snaps, dtype=pl.Datetime("us", "UTC"))[c["i"].cast(pl.Int64)].alias("snapshot_time"),
        pl.lit(float(SNAPSHOT_S)).alias("interval_s"), pl.lit(RELEASE).alias("kernel_release"),
        pl.lit("mlx5").alias("vendor"), pl.lit("rdma").alias("probe_set"),
        pl.col("probe").replace_strict(LAYER).alias("layer"), pl.lit(True).alias("live"))
    schema = polars_schema("counters")
    c = c.select([pl.col(col).cast(t) for col, t in schema.items()]).sort("snapshot_time", "probe")
    path = write_partition(c, root, "counters", DATE, name, "part-00000.parquet", durable=False)
    write_counter_buckets(path, durable=False)

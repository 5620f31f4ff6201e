"""fleetgen49: a fleet of 20 mlx5 hosts over 8 hours with a mid-window configuration rollout.

Written blind, from docs/architecture.md, README.md, the CLI's --help, tracer/schema.py (the data
model, whose writers this uses) and the RDMA control-path reference
(/work/shared/reference/rdma_control_path.yaml).

The world
---------
* 20 hosts, one date (2026-11-20, 00:00-08:00 UTC), one kernel release, one vendor (mlx5),
  one tenant. Every host starts a job about every five minutes. The job prolog opens the fleet
  tracer's capture window (SIGUSR1, README) for 10 s, so a job's setup calls are timed and its
  good traces are sampled; the job's teardown half an hour later falls outside every window
  and shows in the counters only (as the tracer counts every call, emit-on-failure aside).
* A job's setup (one call tree per verb, each rooted at its uverbs handler): query_device,
  query_port, query_gid of GID index 3 (the RoCEv2 GID of an optional secondary address),
  then of index 1 and 0, alloc_pd, reg_mr twice, create_cq, create_qp, and modify_qp
  RESET->INIT, INIT->RTR, RTR->RTS.
* The rollout: from 04:00 a configuration change that removes the optional secondary address
  reaches the hosts one a minute (04:00 ... 04:19). From its host's rollout on, every job's
  query of GID index 3 fails ENODATA at rdma_get_gid_attr ("GID table entry empty/invalid (e.g.
  IP removed)", the reference's query_gid and modify_qp trees); the job falls back to index 1,
  which answers, and goes on through its whole setup. Before the rollout that query always
  succeeds: there is no ENODATA anywhere before 04:00.
* Fault A (real, from 04:07 / 04:12, two hosts): CREATE_QP firmware command failing with
  LIM_ERR -> -ENOMEM (cmd_status_to_err) at mlx5_qpc_create_qp; the error goes up through
  create_user_qp, mlx5_ib_create_qp and ib_create_qp_user to ib_uverbs_create_qp, the abort path
  frees the uobject, and the job dies (70 % of the jobs on those hosts after the onset).
* Fault B (real, the whole window, one host): the INIT2RTR firmware command timing out
  (-ETIMEDOUT, a transport-level failure of mlx5_cmd_exec) at mlx5_core_qp_modify, up through
  mlx5_ib_modify_qp, ib_security_modify_qp, _ib_modify_qp and ib_modify_qp_with_udata to
  ib_uverbs_modify_qp; the job dies (40 % of that host's jobs).
* Ground truth (the `truth` table, one row per trace) for `baseline evaluate`.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from tracer import schema

DATE = "2026-11-20"
DAY0 = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
BOOT = dt.datetime(2026, 11, 19, 6, 0, tzinfo=dt.UTC)  # every host's boot (monotonic clock origin)
HOURS = 8
WINDOW_S = HOURS * 3600
HOSTS = [f"gpu49-{i:02d}" for i in range(1, 21)]
RELEASE = "6.8.0-49-generic"
VENDOR = "mlx5"
COMM = "all_reduce_perf"
METADATA = [{"key": "fw", "value": "28.39.1002"}, {"key": "nic", "value": "ConnectX-7"},
            {"key": "tenant", "value": "aurora"}]

ROLLOUT_S = 4 * 3600  # the configuration reaches HOSTS[i] at ROLLOUT_S + 60 * i
FAULT_A_ONSET = {"gpu49-05": ROLLOUT_S + 7 * 60, "gpu49-14": ROLLOUT_S + 12 * 60}
FAULT_A_RATE = 0.7
FAULT_B_HOST = "gpu49-09"
FAULT_B_RATE = 0.4
JOB_EVERY_S = 300
CAPTURE_S = 10.0
SNAPSHOT_S = 60  # tracer run -i 1m
SPLIT_S = ROLLOUT_S  # the first half: 00:00-04:00

ROUTINE = ("query_gid", "rdma_get_gid_attr", "ENODATA", "core")
FAULT_A = ("create_qp", "mlx5_qpc_create_qp", "ENOMEM", "driver", "create_qp_fw_lim_enomem")
FAULT_B = ("modify_qp", "mlx5_core_qp_modify", "ETIMEDOUT", "driver", "modify_qp_fw_cmd_timeout")

ERRNO_VALUE = {"ENODATA": -61, "ENOMEM": -12, "ETIMEDOUT": -110}

# ---------------------------------------------------------------------------------------------
# call trees (depth, probe, layer), from the reference; static helpers a stack-based tracer
# would not see (the three functions named create_qp, uverbs_request, ...) left out
# ---------------------------------------------------------------------------------------------
QUERY_DEVICE = [(0, "ib_uverbs_ex_query_device", "uverbs"), (1, "mlx5_ib_query_device", "driver")]
QUERY_PORT = [
    (0, "ib_uverbs_query_port", "uverbs"),
    (1, "ib_query_port", "core"),
    (2, "__ib_query_port", "core"),
    (3, "mlx5_ib_query_port", "driver"),
    (4, "mlx5_query_port_roce", "driver"),
    (1, "copy_port_attr_to_resp", "uverbs"),
]
QUERY_GID_ROOT = (0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "uverbs")
QUERY_GID = [
    QUERY_GID_ROOT,
    (1, "rdma_get_gid_attr", "core"),
    (1, "rdma_read_gid_attr_ndev_rcu", "core"),
    (1, "rdma_put_gid_attr", "core"),
]
ALLOC_PD = [
    (0, "ib_uverbs_alloc_pd", "uverbs"),
    (1, "rdma_alloc_begin_uobject", "core"),
    (1, "mlx5_ib_alloc_pd", "driver"),
    (1, "rdma_restrack_add", "core"),
    (1, "uverbs_response", "uverbs"),
]
REG_MR = [
    (0, "ib_uverbs_reg_mr", "uverbs"),
    (1, "rdma_alloc_begin_uobject", "core"),
    (1, "rdma_lookup_get_uobject", "core"),
    (1, "mlx5_ib_reg_user_mr", "driver"),
    (2, "mlx5r_umr_resource_init", "driver"),
    (2, "ib_umem_get", "core"),
    (3, "pin_user_pages_fast", "core"),
    (3, "sg_alloc_append_table_from_pages", "core"),
    (2, "create_real_mr", "driver"),
    (3, "alloc_cacheable_mr", "driver"),
    (3, "mlx5r_umr_update_mr_pas", "driver"),
    (1, "rdma_restrack_add", "core"),
    (1, "rdma_lookup_put_uobject", "core"),
    (1, "uverbs_response", "uverbs"),
]
CREATE_CQ = [
    (0, "ib_uverbs_create_cq", "uverbs"),
    (1, "rdma_alloc_begin_uobject", "core"),
    (1, "mlx5_ib_create_cq", "driver"),
    (2, "create_cq_user", "driver"),
    (3, "ib_umem_get", "core"),
    (4, "pin_user_pages_fast", "core"),
    (3, "mlx5_ib_db_map_user", "driver"),
    (2, "mlx5_comp_eqn_get", "driver"),
    (2, "mlx5_core_create_cq", "driver"),
    (1, "rdma_restrack_add", "core"),
    (1, "uverbs_response", "uverbs"),
]
_CREATE_QP_HEAD = [
    (0, "ib_uverbs_create_qp", "uverbs"),
    (1, "rdma_alloc_begin_uobject", "core"),
    (1, "rdma_lookup_get_uobject", "core"),
    (1, "rdma_lookup_get_uobject", "core"),
    (1, "ib_create_qp_user", "core"),
    (2, "mlx5_ib_create_qp", "driver"),
    (3, "mlx5_ib_dev_res_srq_init", "driver"),
    (3, "create_user_qp", "driver"),
    (4, "_create_user_qp", "driver"),
    (5, "ib_umem_get", "core"),
    (6, "pin_user_pages_fast", "core"),
    (5, "mlx5_ib_db_map_user", "driver"),
    (4, "mlx5_qpc_create_qp", "driver"),
]
CREATE_QP = _CREATE_QP_HEAD + [
    (2, "ib_create_qp_security", "core"),
    (2, "rdma_restrack_add", "core"),
    (1, "ib_qp_usecnt_inc", "core"),
    (1, "rdma_lookup_put_uobject", "core"),
    (1, "uverbs_response", "uverbs"),
]
# fault A: mlx5_qpc_create_qp fails, the error unwinds; the handler drops its read references and
# aborts the new uobject (uobj_alloc_abort)
CREATE_QP_FAILED = _CREATE_QP_HEAD + [
    (1, "rdma_lookup_put_uobject", "core"),
    (1, "rdma_alloc_abort_uobject", "core"),
]
CREATE_QP_FAILING = {"mlx5_qpc_create_qp", "create_user_qp", "mlx5_ib_create_qp", "ib_create_qp_user",
                     "ib_uverbs_create_qp"}

MODIFY_INIT = [
    (0, "ib_uverbs_modify_qp", "uverbs"),
    (1, "rdma_lookup_get_uobject", "core"),
    (1, "ib_modify_qp_with_udata", "core"),
    (2, "_ib_modify_qp", "core"),
    (3, "rdma_counter_bind_qp_auto", "core"),
    (3, "ib_security_modify_qp", "core"),
    (4, "mlx5_ib_modify_qp", "driver"),
    (5, "ib_modify_qp_is_ok", "core"),
    (5, "mlx5_core_qp_modify", "driver"),
    (1, "rdma_lookup_put_uobject", "core"),
]
MODIFY_RTR = [
    (0, "ib_uverbs_modify_qp", "uverbs"),
    (1, "rdma_lookup_get_uobject", "core"),
    (1, "ib_modify_qp_with_udata", "core"),
    (2, "_ib_modify_qp", "core"),
    (3, "rdma_get_gid_attr", "core"),
    (3, "ib_resolve_eth_dmac", "core"),
    (4, "rdma_check_gid_user_access", "core"),
    (4, "rdma_addr_find_l2_eth_by_grh", "core"),
    (3, "rdma_lag_get_ah_roce_slave", "core"),
    (3, "ib_security_modify_qp", "core"),
    (4, "mlx5_ib_modify_qp", "driver"),
    (5, "ib_modify_qp_is_ok", "core"),
    (5, "mlx5_set_path", "driver"),
    (5, "mlx5_core_qp_modify", "driver"),
    (3, "rdma_lag_put_ah_roce_slave", "core"),
    (1, "rdma_lookup_put_uobject", "core"),
]
MODIFY_RTR_FAILING = {"mlx5_core_qp_modify", "mlx5_ib_modify_qp", "ib_security_modify_qp", "_ib_modify_qp",
                      "ib_modify_qp_with_udata", "ib_uverbs_modify_qp"}
MODIFY_RTS = [
    (0, "ib_uverbs_modify_qp", "uverbs"),
    (1, "rdma_lookup_get_uobject", "core"),
    (1, "ib_modify_qp_with_udata", "core"),
    (2, "_ib_modify_qp", "core"),
    (3, "ib_security_modify_qp", "core"),
    (4, "mlx5_ib_modify_qp", "driver"),
    (5, "ib_modify_qp_is_ok", "core"),
    (5, "mlx5_core_qp_modify", "driver"),
    (1, "rdma_lookup_put_uobject", "core"),
]
# teardown (outside every capture window: counted, never recorded)
TEARDOWN = [
    [(0, "ib_uverbs_destroy_qp", "uverbs"), (1, "mlx5_ib_destroy_qp", "driver")],
    [(0, "ib_uverbs_destroy_cq", "uverbs"), (1, "mlx5_ib_destroy_cq", "driver")],
    [(0, "ib_uverbs_dereg_mr", "uverbs"), (1, "mlx5_ib_dereg_mr", "driver")],
    [(0, "ib_uverbs_dereg_mr", "uverbs"), (1, "mlx5_ib_dereg_mr", "driver")],
    [(0, "ib_uverbs_dealloc_pd", "uverbs"), (1, "mlx5_ib_dealloc_pd", "driver")],
]

ALL_TREES = [QUERY_DEVICE, QUERY_PORT, QUERY_GID, ALLOC_PD, REG_MR, CREATE_CQ, CREATE_QP, CREATE_QP_FAILED,
             MODIFY_INIT, MODIFY_RTR, MODIFY_RTS, *TEARDOWN]
PROBE_LAYER: dict[str, str] = {}
for _tree in ALL_TREES:
    for _d, _p, _layer in _tree:
        PROBE_LAYER.setdefault(_p, _layer)
PROBES = sorted(PROBE_LAYER)

STEP_NS = 2_000  # one frame's entry after the previous one's (timed traces)
TICK_NS = 4_000_000  # HZ=250: an untimed failure record's time resolution
# capture="periodic": `tracer run --good-every 15m --good-window 60s`, each host's windows at its
# own phase, the jobs' prologs opening none (good traces only sampled)
PERIODIC_EVERY_S = 900
PERIODIC_WINDOW_S = 60.0


@dataclass
class Fleet:
    events: dict[str, tuple[dict[str, list], dict[str, list]]] = field(default_factory=dict)  # host -> frames, traces
    counters: dict[str, dict[tuple[int, str], list]] = field(default_factory=dict)  # host -> (snap, probe) -> cell
    truth: dict[str, dict[str, list]] = field(default_factory=dict)
    # (host, trace_id) -> start second, per kind of trace
    routine: dict[tuple[str, str], float] = field(default_factory=dict)
    fault_a: dict[tuple[str, str], float] = field(default_factory=dict)
    fault_b: dict[tuple[str, str], float] = field(default_factory=dict)
    good: int = 0
    jobs: int = 0
    rollout: dict[str, int] = field(default_factory=dict)


FRAME_COLUMNS = ("trace_id", "seq", "ts_ns", "probe", "layer", "depth", "ret", "errno", "latency_ns", "arg")
TRACE_COLUMNS = ("trace_id", "pid", "kind", "command", "exit_status", "start_time", "end_time", "job_id", "frames")
TRUTH_COLUMNS = ("trace_id", "host", "kind", "root_cause", "bifurcation_probe", "bifurcation_errno",
                 "origin_layer", "expected_error", "held_out")


def _ns(second: float) -> int:
    return int((DAY0 - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).total_seconds()) * 1_000_000_000 + int(second * 1e9)


BOOT_NS = int((BOOT - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).total_seconds()) * 1_000_000_000


def _emit(fleet: Fleet, host: str, trace_id: str, second: float, tree: list, failing: dict[str, str],
          *, command: str, arg: str | None, pid: int, job_id: str, timed: bool = True) -> bool:
    """One call tree: frames in entry order, each nested in the one above it. A probe name that
    appears twice in a tree (rdma_lookup_get_uobject, ...) never fails here: each failing chain
    holds each of its names once. Every call is counted; the tree is recorded when it is timed
    (its root entered in a capture window) or failed. An untimed failure record carries the
    tick its root returned in (4 ms) as every frame's ts_ns and as start = end, latency null
    (the data model's Clocks). Returns whether the tree was recorded."""
    frames, traces = fleet.events[host]
    start_ns = _ns(second)
    n = len(tree)
    root_errno = failing.get(tree[0][1])
    if not timed and not root_errno:
        for _depth, probe, _layer in tree:
            _count(fleet, host, second, probe, None)
        return False
    root_latency = (n - 1) * STEP_NS + STEP_NS // 2
    if not timed:
        tick = (start_ns + root_latency) // TICK_NS * TICK_NS + TICK_NS
        start_ns = tick
    mono_ns = start_ns - BOOT_NS
    for seq, (depth, probe, layer) in enumerate(tree):
        j = seq
        while j + 1 < n and tree[j + 1][0] > depth:
            j += 1
        errno = failing.get(probe)
        frames["trace_id"].append(trace_id)
        frames["seq"].append(seq)
        frames["ts_ns"].append(mono_ns + seq * STEP_NS if timed else mono_ns)
        frames["probe"].append(probe)
        frames["layer"].append(layer)
        frames["depth"].append(depth)
        frames["ret"].append(ERRNO_VALUE[errno] if errno else 0)
        frames["errno"].append(errno)
        frames["latency_ns"].append((j - seq) * STEP_NS + STEP_NS // 2 if timed else None)
        frames["arg"].append(arg if depth == 0 else None)
        _count(fleet, host, second, probe, errno)
    kind = "failure" if root_errno else "good"
    for k, v in zip(TRACE_COLUMNS, (trace_id, pid, kind, command, ERRNO_VALUE[root_errno] if root_errno else 0,
                                    start_ns, start_ns + (root_latency if timed else 0), job_id, n), strict=True):
        traces[k].append(v)
    if kind == "good":
        fleet.good += 1
    return True


def _count(fleet: Fleet, host: str, second: float, probe: str, errno: str | None) -> None:
    snap = int(second // SNAPSHOT_S)  # the snapshot closing at (snap + 1) * SNAPSHOT_S
    cell = fleet.counters[host].setdefault((snap, probe), [0, 0, defaultdict(int)])
    cell[0] += 1
    if errno:
        cell[1] += 1
        cell[2][errno] += 1


def _truth(fleet: Fleet, host: str, trace_id: str, kind: str, cause: str | None, probe: str | None,
           errno: str | None, layer: str | None, expected: bool) -> None:
    cols = fleet.truth[host]
    for k, v in zip(TRUTH_COLUMNS, (trace_id, host, kind, cause, probe, errno, layer, expected, False), strict=True):
        cols[k].append(v)


def build(seed: int = 49, capture: str = "prolog") -> Fleet:
    """capture "prolog": each job's prolog opens a 10 s capture window (SIGUSR1) around its
    setup; "periodic": fixed windows (PERIODIC_*), so most setups are untimed and only their
    failures are recorded."""
    if capture not in ("prolog", "periodic"):
        raise ValueError(capture)
    rng = random.Random(seed)
    fleet = Fleet()
    for index, host in enumerate(HOSTS):
        fleet.events[host] = ({k: [] for k in FRAME_COLUMNS}, {k: [] for k in TRACE_COLUMNS})
        fleet.truth[host] = {k: [] for k in TRUTH_COLUMNS}
        fleet.counters[host] = {}
        fleet.rollout[host] = ROLLOUT_S + 60 * index
    for index, host in enumerate(HOSTS):
        starts = [k * JOB_EVERY_S + rng.uniform(0, 200) for k in range(WINDOW_S // JOB_EVERY_S)]
        if capture == "prolog":
            windows = [(s, s + CAPTURE_S) for s in starts]
        else:
            phase = (index * 41) % PERIODIC_EVERY_S
            windows = [(w, w + PERIODIC_WINDOW_S) for w in range(phase, WINDOW_S, PERIODIC_EVERY_S)]
        record_no = 0
        for k, start in enumerate(starts):
            fleet.jobs += 1
            pid = 20_000 + 37 * k + index
            job_id = f"{host}-j{k:03d}"
            rolled = start >= fleet.rollout[host]
            dies_a = host in FAULT_A_ONSET and start >= FAULT_A_ONSET[host] and rng.random() < FAULT_A_RATE
            dies_b = host == FAULT_B_HOST and rng.random() < FAULT_B_RATE
            t = start + 0.5
            steps: list[tuple[str, str | None, list, dict[str, str], str]] = [
                ("query_device", None, QUERY_DEVICE, {}, "good"),
                ("query_port", None, QUERY_PORT, {}, "good"),
                ("query_gid", None, QUERY_GID[:2] if rolled else QUERY_GID,
                 {QUERY_GID_ROOT[1]: "ENODATA", "rdma_get_gid_attr": "ENODATA"} if rolled else {},
                 "routine" if rolled else "good"),
                ("query_gid", None, QUERY_GID, {}, "good"),
                ("query_gid", None, QUERY_GID, {}, "good"),
                ("alloc_pd", None, ALLOC_PD, {}, "good"),
                ("reg_mr", None, REG_MR, {}, "good"),
                ("reg_mr", None, REG_MR, {}, "good"),
                ("create_cq", None, CREATE_CQ, {}, "good"),
            ]
            if dies_a:
                steps.append(("create_qp", None, CREATE_QP_FAILED, dict.fromkeys(CREATE_QP_FAILING, "ENOMEM"), "a"))
            else:
                steps += [
                    ("create_qp", None, CREATE_QP, {}, "good"),
                    ("modify_qp", "RESET->INIT", MODIFY_INIT, {}, "good"),
                ]
                if dies_b:
                    steps.append(("modify_qp", "INIT->RTR", MODIFY_RTR, dict.fromkeys(MODIFY_RTR_FAILING, "ETIMEDOUT"),
                                  "b"))
                else:
                    steps += [
                        ("modify_qp", "INIT->RTR", MODIFY_RTR, {}, "good"),
                        ("modify_qp", "RTR->RTS", MODIFY_RTS, {}, "good"),
                    ]
            for command, arg, tree, failing, what in steps:
                record_no += 1
                trace_id = f"{host}:1:{pid}:{record_no}"
                timed = any(a <= t < b for a, b in windows)
                if not _emit(fleet, host, trace_id, t, tree, failing, command=command, arg=arg, pid=pid,
                             job_id=job_id, timed=timed):
                    t += 0.02 + rng.uniform(0, 0.01)
                    continue
                key = (host, trace_id)
                if what == "good":
                    _truth(fleet, host, trace_id, "good", None, None, None, None, False)
                elif what == "routine":
                    fleet.routine[key] = t
                    _truth(fleet, host, trace_id, "failure", None, ROUTINE[1], ROUTINE[2], ROUTINE[3], True)
                elif what == "a":
                    fleet.fault_a[key] = t
                    _truth(fleet, host, trace_id, "failure", FAULT_A[4], FAULT_A[1], FAULT_A[2], FAULT_A[3], False)
                else:
                    fleet.fault_b[key] = t
                    _truth(fleet, host, trace_id, "failure", FAULT_B[4], FAULT_B[1], FAULT_B[2], FAULT_B[3], False)
                t += 0.02 + rng.uniform(0, 0.01)
            if dies_a or dies_b:
                continue  # the process died: the kernel frees its objects at close, no verb is called
            end = start + rng.uniform(600, 2400)
            while any(a - 1 <= end < b + 1 for a, b in windows):
                end += 20
            if end >= WINDOW_S:
                continue  # still running at the window's end
            for tree in TEARDOWN:
                for _depth, probe, _layer in tree:
                    _count(fleet, host, end, probe, None)
                end += 0.005
    return fleet


def _events_table(host: str, frames: dict[str, list], traces: dict[str, list], until_ns: int | None) -> pa.Table:
    keep = [i for i, s in enumerate(traces["start_time"]) if until_ns is None or s < until_ns]
    counts = traces["frames"]
    offsets = [0]
    for c in counts:
        offsets.append(offsets[-1] + c)
    rows = [r for i in keep for r in range(offsets[i], offsets[i + 1])]
    n = len(rows)
    cols: dict[str, object] = {k: [frames[k][r] for r in rows] for k in FRAME_COLUMNS}
    for k in ("pid", "kind", "command", "exit_status", "start_time", "end_time", "job_id"):
        cols[k] = [v for i in keep for v in [traces[k][i]] * counts[i]]
    cols["tid"] = cols["pid"]
    cols["ppid"] = [900] * n
    cols["comm"] = [COMM] * n
    cols["host"] = [host] * n
    cols["kernel_release"] = [RELEASE] * n
    cols["lost_events"] = [0] * n
    cols["metadata"] = [METADATA] * n
    for k in ("path", "path2", "output", "repeat_count"):
        cols[k] = [None] * n
    return pa.table({f.name: pa.array(cols[f.name], type=f.type) for f in schema.EVENTS}, schema=schema.EVENTS)


def _counters_table(host: str, cells: dict[tuple[int, str], list], snapshots: int) -> pa.Table:
    """One row per snapshot and probe (the daemon writes every live probe, zero or not)."""
    import numpy as np

    width = len(PROBES)
    n = snapshots * width
    position = {p: i for i, p in enumerate(PROBES)}
    invocations = np.zeros(n, dtype=np.int64)
    failures = np.zeros(n, dtype=np.int64)
    errno_rows: dict[int, list[dict]] = {}
    for (snap, probe), (inv, fail, errnos) in cells.items():
        if snap >= snapshots:
            continue
        i = snap * width + position[probe]
        invocations[i] = inv
        failures[i] = fail
        if errnos:
            errno_rows[i] = [{"errno": e, "count": c} for e, c in sorted(errnos.items())]
    lengths = np.zeros(n + 1, dtype=np.int32)
    values: list[dict] = []
    for i in sorted(errno_rows):
        lengths[i + 1] = len(errno_rows[i])
        values += errno_rows[i]
    errno_counts = pa.ListArray.from_arrays(pa.array(np.cumsum(lengths, dtype=np.int32)),
                                            pa.array(values, type=schema.ERRNO_COUNTS_TYPE.value_type))
    times = np.repeat(np.array([_ns((s + 1) * SNAPSHOT_S) for s in range(snapshots)], dtype=np.int64), width)
    cols = {
        "host": pa.array([host] * n),
        "snapshot_time": pa.array(times, type=pa.timestamp("ns", tz="UTC")),
        "interval_s": pa.array(np.full(n, float(SNAPSHOT_S))),
        "kernel_release": pa.array([RELEASE] * n),
        "vendor": pa.array([VENDOR] * n),
        "probe_set": pa.array(["rdma"] * n),
        "probe": pa.array(PROBES * snapshots),
        "layer": pa.array([PROBE_LAYER[p] for p in PROBES] * snapshots),
        "live": pa.array(np.ones(n, dtype=bool)),
        "invocations": pa.array(invocations),
        "failures": pa.array(failures),
        "errno_counts": errno_counts.cast(schema.ERRNO_COUNTS_TYPE),
        "lost_records": pa.array(np.zeros(n, dtype=np.int64)),
    }
    return pa.table(cols, schema=schema.COUNTERS)


def write(fleet: Fleet, root: str | Path, until_s: int | None = None) -> Path:
    """Write the dataset (events, counters + their 15-minute summaries, truth); `until_s`: only
    traces starting before it and snapshots closing at or before it (the first half)."""
    root = Path(root)
    snapshots = (until_s or WINDOW_S) // SNAPSHOT_S
    cutoff_ns = _ns(until_s) if until_s is not None else None
    for host in HOSTS:
        frames, traces = fleet.events[host]
        kept_ids = None
        if cutoff_ns is not None:
            kept_ids = {t for t, s in zip(traces["trace_id"], traces["start_time"], strict=True) if s < cutoff_ns}
        events = _events_table(host, frames, traces, cutoff_ns)
        schema.write_partition(events, root, "events", DATE, host, "part-00000.parquet", durable=False,
                               summarise=True)
        counters = _counters_table(host, fleet.counters[host], snapshots)
        path = schema.write_partition(counters, root, "counters", DATE, host, "part-00000.parquet", durable=False)
        schema.write_counter_buckets(path, durable=False)
        tcols = fleet.truth[host]
        if kept_ids is not None:
            idx = [i for i, t in enumerate(tcols["trace_id"]) if t in kept_ids]
            tcols = {k: [v[i] for i in idx] for k, v in tcols.items()}
        truth = pa.table({f.name: pa.array(tcols[f.name], type=f.type) for f in schema.TRUTH}, schema=schema.TRUTH)
        schema.write_partition(truth, root, "truth", DATE, host, "part-00000.parquet", durable=False)
    return root


def main() -> None:  # pragma: no cover (by hand: python -m tests.fleetgen49.generator OUT)
    import sys

    fleet = build(capture=sys.argv[3] if len(sys.argv) > 3 else "prolog")
    write(fleet, sys.argv[1])
    if len(sys.argv) > 2:
        write(fleet, sys.argv[2], until_s=SPLIT_S)
    print(f"jobs {fleet.jobs} good {fleet.good} routine {len(fleet.routine)} fault_a {len(fleet.fault_a)} "
          f"fault_b {len(fleet.fault_b)}")


if __name__ == "__main__":  # pragma: no cover
    main()

"""fleetgen57's fleet and process model (see __init__.py for the story and the truth's decisions).

Written blind: from reference/rdma_control_path.yaml (the call trees and errnos),
tracer/schema.py (the tables, BUCKET_OF, the writers), README.md and docs/architecture.md.

The counters are made the way a fleet tracer makes them: every call of every rank is counted at
each probe its call tree entered, in the snapshot interval (previous snapshot, this snapshot]
that holds the call's time; each host's tracer closes its intervals on its own schedule
(interval, phase, a few ms of jitter), and a host whose tracer restarted has no snapshots (and no
records) for the time it was down. The records are every failing call tree and a sample of the
good ones; a call the tracer did not see (in the restart gap, or after the host's last snapshot)
is neither recorded nor counted.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import write_counter_buckets, write_partition

DATE = "2026-11-03"
T0 = dt.datetime(2026, 11, 3, 0, 0, tzinfo=dt.UTC)
HOURS = 6
T_END = T0 + dt.timedelta(hours=HOURS)
BUCKET = dt.timedelta(minutes=15)
KERNEL = "6.8.0-60-generic"
VENDOR = "mlx5"
PROBE_SET = "rdma"

S = dt.timedelta(seconds=1)

# host -> tracer schedule segments: (interval, phase of its snapshots within the interval, from,
# until); a snapshot at phase + k * interval (plus jitter), the first of a segment ending one
# interval after the tracer (re)started. Most phases are not on 15-minute boundaries.
_ALL = (T0, T_END)
SCHEDULES: dict[str, list[tuple[float, float, dt.datetime, dt.datetime]]] = {
    "gpu-a01": [(5.0, 2.4, *_ALL)],
    "gpu-a03": [(5.0, 0.8, *_ALL)],
    "gpu-a05": [(30.0, 13.0, *_ALL)],
    "gpu-a09": [(300.0, 157.0, *_ALL)],  # snapshots at :02:37, :07:37, ...
    "gpu-b02": [(60.0, 37.0, *_ALL)],
    "gpu-b04": [(30.0, 13.0, *_ALL)],
    "gpu-b06": [(300.0, 0.0, *_ALL)],  # the one tracer on the quarter hours (for contrast)
    "gpu-b08": [(60.0, 21.5, *_ALL)],
    # the tracer died after its 03:41:37 snapshot and was restarted at 04:03:11: no snapshot
    # ends in bucket 03:45, and the new phase is :11
    "gpu-c02": [(60.0, 37.0, T0, T0 + dt.timedelta(hours=3, minutes=41, seconds=37)),
                (60.0, 11.0, T0 + dt.timedelta(hours=4, minutes=3, seconds=11), T_END)],
    "gpu-c05": [(300.0, 271.0, *_ALL)],  # :04:31, :09:31, ...
    "gpu-c07": [(30.0, 29.5, *_ALL)],
    "gpu-c11": [(5.0, 4.9, *_ALL)],
}
HOSTS = tuple(SCHEDULES)
RESTART_HOST = "gpu-c02"
RESTART_GAP = (T0 + dt.timedelta(hours=3, minutes=41, seconds=37), T0 + dt.timedelta(hours=4, minutes=3, seconds=11))

# layer of each probe (the reference's files: uverbs_cmd.c -> uverbs, core/ -> core, hw/mlx5 ->
# driver; mm/gup.c, under ib_umem_get, is counted with the core)
LAYER = {
    "ib_uverbs_create_qp": "uverbs", "ib_create_qp_user": "core", "mlx5_ib_create_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "mlx5_cmd_exec": "driver",
    "ib_uverbs_reg_mr": "uverbs", "mlx5_ib_reg_user_mr": "driver", "ib_umem_get": "core",
    "pin_user_pages_fast": "core", "create_real_mr": "driver", "alloc_cacheable_mr": "driver",
}
PROBES = tuple(LAYER)
ERRNO = {"ETIMEDOUT": 110, "EFAULT": 14, "ENOMEM": 12}

# call trees: name -> (operation, argument, frames of (depth, function, errno))
_QP = ["ib_uverbs_create_qp", "ib_create_qp_user", "mlx5_ib_create_qp", "mlx5_qpc_create_qp", "mlx5_cmd_exec"]
TREES: dict[str, tuple[str, str | None, list[tuple[int, str, str | None]]]] = {
    "qp_good": ("create_qp", None, [(d, fn, None) for d, fn in enumerate(_QP)]),
    # CREATE_QP's firmware command timed out (mlx5_cmd_exec -ETIMEDOUT), passed up unchanged
    "qp_timeout": ("create_qp", None, [(d, fn, "ETIMEDOUT") for d, fn in enumerate(_QP)]),
    "mr_good": ("reg_mr", None, [(0, "ib_uverbs_reg_mr", None), (1, "mlx5_ib_reg_user_mr", None),
                                 (2, "ib_umem_get", None), (3, "pin_user_pages_fast", None),
                                 (2, "create_real_mr", None), (3, "alloc_cacheable_mr", None)]),
    # pin_user_pages_fast fails -EFAULT, ib_umem_get returns it as-is
    "mr_efault": ("reg_mr", None, [(0, "ib_uverbs_reg_mr", "EFAULT"), (1, "mlx5_ib_reg_user_mr", "EFAULT"),
                                   (2, "ib_umem_get", "EFAULT"), (3, "pin_user_pages_fast", "EFAULT")]),
    # pinned_vm + npages > RLIMIT_MEMLOCK: ib_umem_get -ENOMEM before pinning
    "mr_memlock": ("reg_mr", None, [(0, "ib_uverbs_reg_mr", "ENOMEM"), (1, "mlx5_ib_reg_user_mr", "ENOMEM"),
                                    (2, "ib_umem_get", "ENOMEM")]),
}

# failure families: key -> (origin probe, errno, origin layer)
ROUTINE = {"routine_cmd_timeout": ("mlx5_cmd_exec", "ETIMEDOUT", "driver")}
ROOT_CAUSES = {
    "cmdq_hang_after_power_event": ("mlx5_cmd_exec", "ETIMEDOUT", "driver"),
    "gpu_buffer_unpinnable": ("pin_user_pages_fast", "EFAULT", "core"),
    "memlock_limit_lowered": ("ib_umem_get", "ENOMEM", "core"),
}
FAMILIES = {**ROUTINE, **ROOT_CAUSES}
TREE_FAMILY = {"qp_timeout": "routine_cmd_timeout", "mr_efault": "gpu_buffer_unpinnable",
               "mr_memlock": "memlock_limit_lowered"}

# the faults: cause -> (hosts, operation, tree, from, until)
CMDQ_FROM = T0 + dt.timedelta(hours=2, seconds=20)  # 02:00:20
CMDQ_UNTIL = CMDQ_FROM + dt.timedelta(minutes=70)  # 03:10:20
EFAULT_FROM = T0 + dt.timedelta(hours=3, minutes=14, seconds=50)  # 03:14:50
EFAULT_UNTIL = EFAULT_FROM + dt.timedelta(minutes=25)  # 03:39:50, then recovered
MEMLOCK_FROM = T0 + dt.timedelta(hours=4, minutes=7, seconds=3)  # 04:07:03, to the window's end
MEMLOCK_UNTIL = T_END
FAULTS = {
    "cmdq_hang_after_power_event": (("gpu-a03", "gpu-a09"), "create_qp", "qp_timeout", CMDQ_FROM, CMDQ_UNTIL),
    "gpu_buffer_unpinnable": (("gpu-b04",), "reg_mr", "mr_efault", EFAULT_FROM, EFAULT_UNTIL),
    "memlock_limit_lowered": ((RESTART_HOST,), "reg_mr", "mr_memlock", MEMLOCK_FROM, MEMLOCK_UNTIL),
}
CAUSE_HOSTS = {cause: hosts for cause, (hosts, *_) in FAULTS.items()}

RANKS = 2
STEP_MEAN_S = 10.0  # a rank's registration + QP creation, every ~10 s
ROUTINE_RATE = 0.02  # of create_qp calls: a transient firmware timeout, retried through
RETRY_S = 0.25
TRIES = 3  # a rank gives up after three failed tries and dies; the job relaunches it
RELAUNCH_S = (60.0, 120.0)  # the launcher's restart back-off
# capture windows (`tracer run --good-every 10m --good-window 60s`), at a phase of each host's
# own: inside one every call tree is timed and good ones are sampled; outside, failures only,
# untimed (latency null, every frame at the root's return tick)
WINDOW_EVERY_S = 600.0
WINDOW_S = 60.0
GOOD_SAMPLE = 0.5
HELD_OUT = 0.1
METADATA = [{"key": "nic", "value": "ConnectX-7"}, {"key": "nic_fw", "value": "28.39.1002"},
            {"key": "tenant", "value": "orca"}]


def _ns(t: dt.datetime) -> int:
    return int(t.timestamp()) * 1_000_000_000 + t.microsecond * 1000


def snapshot_schedule(host: str, seed: int = 57) -> tuple[np.ndarray, np.ndarray]:
    """(end times in ns, interval start times in ns) of `host`'s snapshots inside the window."""
    rng = np.random.default_rng([seed, HOSTS.index(host)])
    ends: list[int] = []
    starts: list[int] = []
    for interval, phase, since, until in SCHEDULES[host]:
        step = int(interval * 1e9)
        # (a tracer on the quarter hours closes its first interval one interval in)
        first = _ns(since) + step if since > T0 else _ns(T0) + int((phase or interval) * 1e9)
        prev = _ns(since) if since > T0 else first - step  # restarted: the first interval begins at the restart
        k_end = (_ns(until) - first) // step
        nominal = first + step * np.arange(k_end + 1, dtype=np.int64)
        jitter = rng.integers(0, 40_000_000, nominal.size)  # a few ms late, never early
        seg = np.minimum(nominal + jitter, _ns(until))
        ends.extend(seg.tolist())
        starts.extend([prev, *seg[:-1].tolist()])
    return np.array(ends, dtype=np.int64), np.array(starts, dtype=np.int64)


def _fault_at(host: str, op: str, t: dt.datetime) -> tuple[str, str] | None:
    for cause, (hosts, fop, tree, since, until) in FAULTS.items():
        if host in hosts and fop == op and since <= t < until:
            return cause, tree
    return None


def _calls(host: str, rng: random.Random) -> list[dict]:
    """Every call of the host's ranks over the window: time, pid, tree, family, cause."""
    calls: list[dict] = []
    hi = HOSTS.index(host)
    next_pid = 41_000 + 1000 * hi
    for _ in range(RANKS):
        pid = next_pid
        next_pid += 7
        t = T0 + dt.timedelta(seconds=rng.uniform(0.5, 5.0))
        while t < T_END:
            died = False
            for op, good in (("reg_mr", "mr_good"), ("create_qp", "qp_good")):
                tries = 0
                while True:
                    fault = _fault_at(host, op, t)
                    if fault:
                        cause, tree = fault
                        calls.append({"t": t, "pid": pid, "tree": tree, "cause": cause})
                    elif op == "create_qp" and rng.random() < ROUTINE_RATE * (0.25 if tries else 1.0):
                        calls.append({"t": t, "pid": pid, "tree": "qp_timeout", "cause": "routine_cmd_timeout"})
                    else:
                        calls.append({"t": t, "pid": pid, "tree": good, "cause": None})
                        t += dt.timedelta(milliseconds=rng.uniform(30, 80))
                        break
                    tries += 1
                    t += dt.timedelta(seconds=RETRY_S)
                    if tries >= TRIES and fault:
                        died = True
                        break
                    if tries >= TRIES:  # a transient three times in a row: give up the step, go on
                        break
                if died:
                    break
            if died:  # the rank dies; the job relaunches it as a new process
                pid = next_pid
                next_pid += 7
                t += dt.timedelta(seconds=rng.uniform(*RELAUNCH_S))
            else:
                t += dt.timedelta(seconds=rng.expovariate(1.0 / STEP_MEAN_S))
    calls.sort(key=lambda c: c["t"])
    return calls


def in_capture_window(host: str, t: dt.datetime, phase: float | None = None) -> bool:
    """Whether `host`'s tracer had a capture window open at `t`."""
    phase = (HOSTS.index(host) * 173.0) % WINDOW_EVERY_S if phase is None else phase
    return ((t - T0).total_seconds() - phase) % WINDOW_EVERY_S < WINDOW_S


def _events_rows(host: str, calls: list[dict], rng: random.Random) -> tuple[dict, list[dict]]:
    cols: dict[str, list] = defaultdict(list)
    truth: list[dict] = []
    boot_ns = _ns(T0) - 3 * 86_400 * 1_000_000_000 - HOSTS.index(host) * 977_000_000_000
    seq = 0
    job = f"{88_000 + HOSTS.index(host)}"
    window_phase = (HOSTS.index(host) * 173.0) % WINDOW_EVERY_S
    for c in calls:
        failed = c["tree"] not in ("qp_good", "mr_good")
        timed = in_capture_window(host, c["t"], window_phase)
        if not failed and (not timed or rng.random() >= GOOD_SAMPLE):
            continue
        op, arg, frames = TREES[c["tree"]]
        seq += 1
        trace_id = f"{host}:b{HOSTS.index(host):02d}:{c['pid']}:{seq}"
        t_ns = _ns(c["t"])
        mono = t_ns - boot_ns
        if failed and not timed:  # no timing, every frame at the root's return tick
            tick = mono - mono % 4_000_000
            ts = [tick] * len(frames)
            lat = [None] * len(frames)
            start = end = c["t"]
        else:
            ts = [mono + 3_000 * i for i in range(len(frames))]
            lat = [max(2_000, 40_000 - 6_000 * d) + rng.randrange(500) for d, _, _ in frames]
            start = c["t"]
            end = c["t"] + dt.timedelta(microseconds=lat[0] // 1000)
        root_errno = frames[0][2]
        for i, ((depth, fn, errno), t, lt) in enumerate(zip(frames, ts, lat, strict=True)):
            cols["trace_id"].append(trace_id)
            cols["seq"].append(i)
            cols["ts_ns"].append(t)
            cols["pid"].append(c["pid"])
            cols["tid"].append(c["pid"])
            cols["ppid"].append(40_000 + HOSTS.index(host))
            cols["comm"].append("python3")
            cols["probe"].append(fn)
            cols["layer"].append(LAYER[fn])
            cols["depth"].append(depth)
            cols["ret"].append(-ERRNO[errno] if errno else 0)
            cols["errno"].append(errno)
            cols["latency_ns"].append(lt)
            cols["path"].append(None)
            cols["arg"].append(arg)
            cols["path2"].append(None)
            cols["output"].append(None)
            cols["kind"].append("failure" if failed else "good")
            cols["command"].append(op)
            cols["exit_status"].append(-ERRNO[root_errno] if root_errno else 0)
            cols["start_time"].append(start)
            cols["end_time"].append(end)
            cols["host"].append(host)
            cols["kernel_release"].append(KERNEL)
            cols["lost_events"].append(0)
            cols["job_id"].append(job)
            cols["metadata"].append(METADATA)
            cols["repeat_count"].append(None)
        if failed:
            probe, errno, layer = FAMILIES[c["cause"]]
            truth.append({"trace_id": trace_id, "host": host, "kind": "failure", "root_cause": c["cause"],
                          "bifurcation_probe": probe, "bifurcation_errno": errno, "origin_layer": layer,
                          "expected_error": c["cause"] in ROUTINE, "held_out": False})
        else:
            truth.append({"trace_id": trace_id, "host": host, "kind": "good", "root_cause": None,
                          "bifurcation_probe": None, "bifurcation_errno": None, "origin_layer": None,
                          "expected_error": False, "held_out": rng.random() < HELD_OUT})
    return cols, truth


def _counters(host: str, calls: list[dict], ends: np.ndarray, starts: np.ndarray) -> pa.Table:
    """The host's counters: per snapshot and probe, the calls of (previous snapshot, snapshot]."""
    n = ends.size
    inv = {p: np.zeros(n, dtype=np.int64) for p in PROBES}
    err: dict[tuple[str, str], np.ndarray] = {}
    times = np.array([_ns(c["t"]) for c in calls], dtype=np.int64)
    idx = np.searchsorted(ends, times, side="left")
    by_tree: dict[str, list[int]] = defaultdict(list)
    for i, c in zip(idx.tolist(), calls, strict=True):
        by_tree[c["tree"]].append(i)
    for tree, where in by_tree.items():
        counts = np.bincount(np.array(where, dtype=np.int64), minlength=n)
        for _, fn, errno in TREES[tree][2]:
            inv[fn] += counts
            if errno:
                err.setdefault((fn, errno), np.zeros(n, dtype=np.int64))
                err[(fn, errno)] += counts
    rows: dict[str, list] = defaultdict(list)
    snap_times = [dt.datetime.fromtimestamp(e // 1_000_000_000, dt.UTC) + dt.timedelta(microseconds=(e % 1_000_000_000) // 1000)
                  for e in ends.tolist()]
    intervals = ((ends - starts) / 1e9).tolist()
    for k in range(n):
        for p in PROBES:
            hist = [{"errno": e, "count": int(a[k])} for (fn, e), a in sorted(err.items()) if fn == p and a[k] > 0]
            rows["host"].append(host)
            rows["snapshot_time"].append(snap_times[k])
            rows["interval_s"].append(intervals[k])
            rows["kernel_release"].append(KERNEL)
            rows["vendor"].append(VENDOR)
            rows["probe_set"].append(PROBE_SET)
            rows["probe"].append(p)
            rows["layer"].append(LAYER[p])
            rows["live"].append(True)
            rows["invocations"].append(int(inv[p][k]))
            rows["failures"].append(sum(h["count"] for h in hist))
            rows["errno_counts"].append(hist)
            rows["lost_records"].append(0)
    from tracer.schema import COUNTERS

    return pa.table(rows, schema=COUNTERS)


def generate(root, seed: int = 57, **_shape) -> dict:
    """Write the fleet under `root` (events, counters + their summaries, truth); the summary."""
    from tracer.schema import EVENTS, TRUTH

    root = Path(root)
    rng = random.Random(seed)
    summary = {"hosts": list(HOSTS), "records": 0, "calls": 0, "first_failure": {}, "snapshots": {}}
    for host in HOSTS:
        ends, starts = snapshot_schedule(host, seed)
        calls = _calls(host, random.Random(rng.random()))
        # what the tracer saw: calls inside one of its intervals (not in a restart gap, not after
        # its last snapshot)
        times = np.array([_ns(c["t"]) for c in calls], dtype=np.int64)
        idx = np.searchsorted(ends, times, side="left")
        seen = (idx < ends.size) & (times > starts[np.minimum(idx, ends.size - 1)])
        calls = [c for c, ok in zip(calls, seen.tolist(), strict=True) if ok]
        cols, truth = _events_rows(host, calls, random.Random(rng.random()))
        write_partition(pa.table(dict(cols), schema=EVENTS), root, "events", DATE, host, "part-0.parquet",
                        durable=False)
        counters = _counters(host, calls, ends, starts)
        cfile = write_partition(counters, root, "counters", DATE, host, "part-0.parquet", durable=False)
        write_counter_buckets(cfile, counters, durable=False)
        write_partition(pa.Table.from_pylist(truth, schema=TRUTH), root, "truth", DATE, host, "part-0.parquet",
                        durable=False)
        summary["records"] += len(truth)
        summary["calls"] += len(calls)
        summary["snapshots"][host] = int(ends.size)
        for c in calls:
            if c["cause"] in ROOT_CAUSES:
                summary["first_failure"].setdefault(f"{c['cause']}@{host}", c["t"].isoformat())
    return summary

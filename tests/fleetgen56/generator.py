"""fleetgen56's fleet (see __init__.py): 24 mlx5 hosts x 6 h, one job a host, transient
control-path failures retried through by the same process, and two hosts where retries stop
helping."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import polars as pl

from tracer.schema import write_counter_buckets, write_partition

DATE = "2026-05-12"
START = dt.datetime(2026, 5, 12, 0, 0, tzinfo=dt.UTC)
HOURS = 6
SNAP = dt.timedelta(minutes=5)
KERNEL = "6.8.0-60-generic"
HOSTS = [f"gpu-a{i:02d}" for i in range(1, 25)]
FW_OK, FW_BAD = "28.39.2048", "28.41.1000"
FW_HOSTS = ("gpu-a10", "gpu-a11", "gpu-a12")  # the firmware whose command queue times out 30x more
STUCK_HOST, STUCK_FROM, STUCK_TO = "gpu-a05", START + dt.timedelta(hours=2), START + dt.timedelta(hours=3)
MEMLOCK_HOST = "gpu-a17"
MEMLOCK_FROM, MEMLOCK_TO = START + dt.timedelta(hours=3, minutes=30), START + dt.timedelta(hours=5)
FLEET_RATE = 0.01  # transient rate a call, fleet-wide
FW_FACTOR = 30

LAYER = {
    "ib_uverbs_create_qp": "uverbs", "create_qp": "core", "ib_create_qp_user": "core",
    "mlx5_ib_create_qp": "driver", "create_user_qp": "driver", "mlx5_qpc_create_qp": "driver",
    "mlx5_cmd_exec": "driver", "ib_uverbs_modify_qp": "uverbs", "modify_qp": "core",
    "ib_modify_qp_with_udata": "core", "_ib_modify_qp": "core", "ib_security_modify_qp": "core",
    "mlx5_ib_modify_qp": "driver", "__mlx5_ib_modify_qp": "driver", "mlx5_core_qp_modify": "driver",
    "ib_uverbs_reg_mr": "uverbs", "mlx5_ib_reg_user_mr": "driver", "ib_umem_get": "core",
    "pin_user_pages_fast": "core",
}


def _create_qp(fail: str | None):
    e = fail
    return ("create_qp", "RC", [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), (2, "ib_create_qp_user", e),
                                (3, "create_qp", e), (4, "mlx5_ib_create_qp", e), (5, "create_qp", e),
                                (6, "create_user_qp", e), (7, "mlx5_qpc_create_qp", e), (8, "mlx5_cmd_exec", e)])


def _modify_qp(fail: str | None):
    e = fail
    return ("modify_qp", "RTR->RTS", [(0, "ib_uverbs_modify_qp", e), (1, "modify_qp", e),
                                      (2, "ib_modify_qp_with_udata", e), (3, "_ib_modify_qp", e),
                                      (4, "ib_security_modify_qp", e), (5, "mlx5_ib_modify_qp", e),
                                      (6, "__mlx5_ib_modify_qp", e), (7, "mlx5_core_qp_modify", e),
                                      (8, "mlx5_cmd_exec", e)])


TREES = {
    "create_qp_ok": _create_qp(None),
    "create_qp_fw_timeout": _create_qp("ETIMEDOUT"),
    "modify_qp_ok": _modify_qp(None),
    "modify_qp_busy": _modify_qp("EBUSY"),
    "reg_mr_ok": ("reg_mr", "VA", [(0, "ib_uverbs_reg_mr", None), (1, "mlx5_ib_reg_user_mr", None),
                                   (2, "ib_umem_get", None), (3, "pin_user_pages_fast", None)]),
    "reg_mr_memlock": ("reg_mr", "VA", [(0, "ib_uverbs_reg_mr", "ENOMEM"), (1, "mlx5_ib_reg_user_mr", "ENOMEM"),
                                        (2, "ib_umem_get", "ENOMEM")]),
}

# family -> (origin probe, errno, origin layer)
FAMILIES = {
    "transient_fw_cmd_timeout": ("mlx5_cmd_exec", "ETIMEDOUT", "driver"),
    "transient_modify_qp_busy": ("mlx5_cmd_exec", "EBUSY", "driver"),
    "transient_memlock_squeeze": ("ib_umem_get", "ENOMEM", "core"),
    "fw_cmd_queue_stuck": ("mlx5_cmd_exec", "ETIMEDOUT", "driver"),
    "memlock_limit_lowered": ("ib_umem_get", "ENOMEM", "core"),
}
ROUTINE = ("transient_fw_cmd_timeout", "transient_modify_qp_busy", "transient_memlock_squeeze")
ROOT_CAUSES = {
    "fw_cmd_queue_stuck": f"{STUCK_HOST}: every CREATE_QP times out 02:00-03:00, every retry too; ranks die",
    "memlock_limit_lowered": f"{MEMLOCK_HOST}: every reg_mr ENOMEM 03:30-05:00 (memlock limit pushed too low)",
}
CAUSE_HOSTS = {"fw_cmd_queue_stuck": (STUCK_HOST,), "memlock_limit_lowered": (MEMLOCK_HOST,)}
# the tree's family where not a root cause's (the cause trees share the routine trees' shape)
TREE_FAMILY = {"create_qp_fw_timeout": "transient_fw_cmd_timeout", "modify_qp_busy": "transient_modify_qp_busy",
               "reg_mr_memlock": "transient_memlock_squeeze"}
ERRNO_RET = {"ETIMEDOUT": -110, "EBUSY": -16, "ENOMEM": -12}
LATENCY = {"create_qp": 400_000, "modify_qp": 150_000, "reg_mr": 900_000}
RETRY_GAP = dt.timedelta(milliseconds=250)


class _Host:
    def __init__(self, host: str, index: int):
        self.host, self.boot = host, f"b{index:02d}7f"
        self.fw = FW_BAD if host in FW_HOSTS else FW_OK
        self.next_pid = 4100 + index * 37
        self.seq = 0
        self.rows: dict[str, list] = {c: [] for c in _COLS}
        self.truth: list[dict] = []
        self.job = f"{880000 + index * 10}"

    def pid(self) -> int:
        self.next_pid += 1
        return self.next_pid


_COLS = ("trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret", "errno",
         "latency_ns", "path", "arg", "path2", "output", "kind", "command", "exit_status", "start_time", "end_time",
         "kernel_release", "lost_events", "job_id", "metadata", "repeat_count")


def _record(h: _Host, tree: str, pid: int, when: dt.datetime, cause: str | None, repeat: int | None = None) -> None:
    op, arg, frames = TREES[tree]
    h.seq += 1
    tid = pid
    trace_id = f"{h.host}:{h.boot}:{tid}:{h.seq}"
    failing = frames[0][2]
    kind = "failure" if failing else "good"
    lat = LATENCY[op]
    t0 = int((when - START).total_seconds() * 1e9) + 10_000_000_000
    meta = [{"key": "nic_fw", "value": h.fw}, {"key": "nic", "value": "ConnectX-7"}, {"key": "tenant", "value": "lumen"}]
    end = when + dt.timedelta(microseconds=lat // 1000)
    for seq, (depth, fn, e) in enumerate(frames):
        r = h.rows
        r["trace_id"].append(trace_id)
        r["seq"].append(seq)
        r["ts_ns"].append(t0 + seq * 1000)
        r["pid"].append(pid)
        r["tid"].append(tid)
        r["ppid"].append(pid - 1)
        r["comm"].append("python3")
        r["probe"].append(fn)
        r["layer"].append(LAYER[fn])
        r["depth"].append(depth)
        r["ret"].append(ERRNO_RET[e] if e else 0)
        r["errno"].append(e)
        r["latency_ns"].append(max(1000, lat // (depth + 1)))
        r["path"].append(None)
        r["arg"].append(arg if depth == 0 else None)
        r["path2"].append(None)
        r["output"].append(None)
        r["kind"].append(kind)
        r["command"].append(op)
        r["exit_status"].append(ERRNO_RET[failing] if failing else 0)
        r["start_time"].append(when)
        r["end_time"].append(end)
        r["kernel_release"].append(KERNEL)
        r["lost_events"].append(0)
        r["job_id"].append(h.job)
        r["metadata"].append(meta)
        r["repeat_count"].append(repeat)
    if failing:
        label = cause or TREE_FAMILY[tree]
        probe, errno, layer = FAMILIES[label]
    else:
        label = probe = errno = layer = None
    h.truth.append({"trace_id": trace_id, "host": h.host, "kind": kind, "root_cause": label,
                    "bifurcation_probe": probe, "bifurcation_errno": errno, "origin_layer": layer,
                    "expected_error": None if label is None else label in ROUTINE, "held_out": False})


def _call(h: _Host, rng: random.Random, pid: int, when: dt.datetime, ok: str, bad: str, rate: float,
          summary: dict) -> None:
    """One call of an operation: a transient failure now and then, retried by the same process a
    moment later (once or twice), then the success."""
    t = when
    if rng.random() < rate:
        tries = 1 if rng.random() < 0.7 else 2
        for _ in range(tries):
            _record(h, bad, pid, t, None)
            t += RETRY_GAP
        summary["transients"][TREE_FAMILY[bad]] += tries
    _record(h, ok, pid, t, None)


def _stuck(h: _Host, when: dt.datetime, bad: str, cause: str) -> None:
    """A fresh rank (the job restarted) whose every try fails: three tries, then it dies."""
    pid = h.pid()
    for k in range(3):
        _record(h, bad, pid, when + k * RETRY_GAP, cause)


def generate(root, *, seed: int = 56, ranks: int = 2) -> dict:
    root = Path(root)
    rng = random.Random(seed)
    summary = {"hosts": list(HOSTS), "fw_hosts": list(FW_HOSTS), "transients": dict.fromkeys(ROUTINE, 0),
               "records": 0}
    for index, host in enumerate(HOSTS):
        h = _Host(host, index)
        pids = [h.pid() for _ in range(ranks)]
        t = START
        while t < START + dt.timedelta(hours=HOURS):
            stuck = host == STUCK_HOST and STUCK_FROM <= t < STUCK_TO
            squeezed = host == MEMLOCK_HOST and MEMLOCK_FROM <= t < MEMLOCK_TO
            if stuck or squeezed:
                for r in range(ranks):
                    if stuck:
                        _stuck(h, t + dt.timedelta(seconds=20 + 60 * r), "create_qp_fw_timeout", "fw_cmd_queue_stuck")
                    else:
                        _stuck(h, t + dt.timedelta(seconds=20 + 60 * r), "reg_mr_memlock", "memlock_limit_lowered")
                pids = [h.pid() for _ in range(ranks)]  # the job's ranks after the fault are new processes
            else:
                qp_rate = FLEET_RATE * (FW_FACTOR if h.fw == FW_BAD else 1)
                for r, pid in enumerate(pids):
                    base = t + dt.timedelta(seconds=30 + 40 * r + rng.randint(0, 20))
                    _call(h, rng, pid, base, "reg_mr_ok", "reg_mr_memlock", FLEET_RATE, summary)
                    for q in range(2):
                        at = base + dt.timedelta(seconds=5 + 5 * q)
                        _call(h, rng, pid, at, "create_qp_ok", "create_qp_fw_timeout", qp_rate, summary)
                        _call(h, rng, pid, at + dt.timedelta(seconds=2), "modify_qp_ok", "modify_qp_busy",
                              FLEET_RATE, summary)
            t += SNAP
        _write_host(root, h, summary)
    return summary


def _write_host(root: Path, h: _Host, summary: dict) -> None:
    ev = pl.DataFrame(h.rows, schema_overrides={
        "seq": pl.Int64, "ts_ns": pl.Int64, "pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16,
        "ret": pl.Int64, "latency_ns": pl.Int64, "exit_status": pl.Int32, "lost_events": pl.Int64,
        "repeat_count": pl.Int64, "path": pl.String, "path2": pl.String, "output": pl.String, "errno": pl.String,
        "arg": pl.String, "start_time": pl.Datetime("ns", "UTC"), "end_time": pl.Datetime("ns", "UTC")})
    ev = ev.with_columns(pl.lit(h.host).alias("host"))
    write_partition(ev, root, "events", DATE, h.host, "part-0000.parquet")
    truth = pl.DataFrame(h.truth, schema={"trace_id": pl.String, "host": pl.String, "kind": pl.String,
                                         "root_cause": pl.String, "bifurcation_probe": pl.String,
                                         "bifurcation_errno": pl.String, "origin_layer": pl.String,
                                         "expected_error": pl.Boolean, "held_out": pl.Boolean})
    write_partition(truth, root, "truth", DATE, h.host, "part-0000.parquet")
    summary["records"] += truth.height
    # counters: every call a frame recorded, per 5-minute snapshot and probe
    snaps = (ev.with_columns(pl.col("start_time").dt.truncate("5m").alias("snap"))
             .with_columns((pl.col("snap") + pl.duration(minutes=5)).cast(pl.Datetime("ns", "UTC")).alias("snapshot_time")))
    fails = (snaps.filter(pl.col("errno").is_not_null()).group_by("snapshot_time", "probe", "errno").len()
             .group_by("snapshot_time", "probe")
             .agg(pl.struct(pl.col("errno"), pl.col("len").cast(pl.Int64).alias("count")).alias("errno_counts")))
    calls = snaps.group_by("snapshot_time", "probe").agg(pl.len().cast(pl.Int64).alias("invocations"),
                                                         pl.col("errno").is_not_null().sum().cast(pl.Int64)
                                                         .alias("failures"))
    grid = pl.DataFrame({"snapshot_time": [START + SNAP * (i + 1) for i in range(HOURS * 12)]},
                        schema={"snapshot_time": pl.Datetime("ns", "UTC")}).join(
        pl.DataFrame({"probe": sorted(LAYER)}), how="cross")
    counters = (grid.join(calls, on=["snapshot_time", "probe"], how="left")
                .join(fails, on=["snapshot_time", "probe"], how="left")
                .with_columns(pl.col("invocations").fill_null(0), pl.col("failures").fill_null(0),
                              pl.lit(h.host).alias("host"), pl.lit(300.0).alias("interval_s"),
                              pl.lit(KERNEL).alias("kernel_release"), pl.lit("mlx5").alias("vendor"),
                              pl.lit("rdma").alias("probe_set"),
                              pl.col("probe").replace_strict(LAYER, return_dtype=pl.String).alias("layer"),
                              pl.lit(True).alias("live"), pl.lit(0, dtype=pl.Int64).alias("lost_records"))
                .sort("snapshot_time", "probe"))
    path = write_partition(counters, root, "counters", DATE, h.host, "part-0000.parquet")
    write_counter_buckets(path)

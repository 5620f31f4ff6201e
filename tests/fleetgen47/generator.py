"""The fleet of tests/fleetgen47 (a stale good-trace model): 16 mlx5 RoCE hosts running short
Slurm training jobs and a GID monitor, written day by day to the letter of tracer/schema.py.

`generate(root, day="d0"|"d", update="kernel"|"dkms", faults=True)` writes one dataset: the old
day D0 (before the update: the good-trace model is learned there) or the audited day D (after
it, with the faults unless `faults=False`). See __init__.py for the decisions.

Process model (every call of a probed function is counted in the counters; a call tree is
recorded when it fails, or when it succeeds inside a capture window):
  * the tracer runs with `-i 30s --good-every 10m --good-window 30s`, and the Slurm prolog sends
    it SIGUSR1 at each job start (a 30 s capture window over the ranks' initialisation);
  * a job runs 4 ranks (python3), each: alloc_pd; create_cq asking 128-byte CQE padding
    (EOPNOTSUPP at create_cq_user, asked again without), a second create_cq; 3 reg_mr; 4
    create_qp, each QP then RESET->INIT, INIT->RTR, RTR->RTS; during the job a reg_mr every 4-6
    minutes (checkpoint buffers). A rank meeting an unexpected error dies and its job is killed
    half a second later (the other ranks stop) and requeued;
  * the GID monitor (ibgidmon, one long-lived process a host) scans port 1's GID table, indices
    0-7, every 5 minutes: 0-3 are populated, 4-7 empty (ENODATA at rdma_get_gid_attr; the scan
    goes on to the next index).
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from tracer.schema import (
    ERRNO_COUNTS_TYPE,
    EVENTS,
    TRUTH,
    metadata_list,
    write_counter_buckets,
    write_partition,
)

HOSTS = [f"g{i:02d}" for i in range(1, 17)]
DAYS = {"d0": "2026-11-07", "d": "2026-12-05"}  # four weeks apart
WINDOW_START = dt.time(6, 0)
OLD_RELEASE = "5.15.0-122-generic"
NEW_RELEASE = {"kernel": "6.8.0-49-generic", "dkms": OLD_RELEASE}
IMAGE = {"d0": "gpu-node-2611", "d": "gpu-node-2612"}
DRIVER = {("d0", "kernel"): "inbox-5.15", ("d0", "dkms"): "inbox-5.15",
          ("d", "kernel"): "inbox-6.8", ("d", "dkms"): "mlnx-ofed-24.07-0.6.0.1"}
INTERVAL_S = 30
CAPTURE_EVERY_S, CAPTURE_LEN_S = 600, 30
ERRNO_NUMBER = {"EIO": 5, "ENOMEM": 12, "ENODATA": 61, "EOPNOTSUPP": 95}

# probe -> layer (the reference's files: uverbs_cmd.c/uverbs_std_types_device.c handlers are
# uverbs, drivers/infiniband/core the core, hw/mlx5 and mlx5/core the driver)
LAYER = {
    "ib_uverbs_alloc_pd": "uverbs", "ib_uverbs_create_cq": "uverbs", "ib_uverbs_create_qp": "uverbs",
    "ib_uverbs_modify_qp": "uverbs", "ib_uverbs_reg_mr": "uverbs",
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs",
    "create_cq": "uverbs", "create_qp": "uverbs", "modify_qp": "uverbs",
    "rdma_alloc_begin_uobject": "core", "rdma_alloc_abort_uobject": "core", "rdma_lookup_get_uobject": "core",
    "ib_create_qp_user": "core", "ib_modify_qp_with_udata": "core", "_ib_modify_qp": "core",
    "rdma_fill_sgid_attr": "core", "rdma_get_gid_attr": "core", "ib_security_modify_qp": "core",
    "rdma_read_gid_attr_ndev_rcu": "core", "rdma_put_gid_attr": "core",
    "mlx5_ib_alloc_pd": "driver", "mlx5_cmd_exec": "driver", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "mlx5_comp_eqn_get": "driver", "mlx5_core_create_cq": "driver",
    "mlx5_cmd_do": "driver", "mlx5_cmd_check": "driver", "mlx5_ib_create_qp": "driver",
    "mlx5_ib_dev_res_srq_init": "driver", "create_user_qp": "driver", "mlx5_qpc_create_qp": "driver",
    "mlx5_ib_modify_qp": "driver", "mlx5_core_qp_modify": "driver", "mlx5_ib_reg_user_mr": "driver",
    "create_real_mr": "driver", "alloc_cacheable_mr": "driver",
}
PROBES = sorted(LAYER)

# ----------------------------------------------------------------------------------- trees
# name -> (operation, argument, [(depth, function, errno)]); "old"/"new": before/after the update


def _alloc_pd():
    return [(0, "ib_uverbs_alloc_pd", None), (1, "rdma_alloc_begin_uobject", None),
            (1, "mlx5_ib_alloc_pd", None), (2, "mlx5_cmd_exec", None)]


def _create_cq(new: bool, fail: str | None = None):
    """fail: None, "padding" (EOPNOTSUPP at create_cq_user) or "fw_lim" (ENOMEM at mlx5_cmd_check)."""
    e_root = {"padding": "EOPNOTSUPP", "fw_lim": "ENOMEM"}.get(fail)
    frames = [(0, "ib_uverbs_create_cq", e_root), (1, "create_cq", e_root), (2, "rdma_alloc_begin_uobject", None),
              (2, "mlx5_ib_create_cq", e_root)]
    if fail == "padding":
        frames.append((3, "create_cq_user", "EOPNOTSUPP"))
    else:
        frames += [(3, "create_cq_user", None), (3, "mlx5_comp_eqn_get", None), (3, "mlx5_core_create_cq", e_root)]
        if new:  # the driver's command sequence after the update: status checked apart
            frames += [(4, "mlx5_cmd_do", None), (4, "mlx5_cmd_check", e_root)]
        else:
            frames.append((4, "mlx5_cmd_exec", None))
    if fail:
        frames.append((2, "rdma_alloc_abort_uobject", None))  # uobj_alloc_abort on the handler's error
    return frames


def _create_qp(new: bool, fail: bool = False):
    e = "EIO" if fail else None
    frames = [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), (2, "rdma_alloc_begin_uobject", None),
              (2, "rdma_lookup_get_uobject", None), (2, "rdma_lookup_get_uobject", None),
              (2, "ib_create_qp_user", e), (3, "mlx5_ib_create_qp", e)]
    if new:  # lazy creation of the device's default SRQs/CQ, first thing in mlx5_ib_create_qp
        frames.append((4, "mlx5_ib_dev_res_srq_init", None))
    frames += [(4, "create_user_qp", e), (5, "mlx5_qpc_create_qp", e), (6, "mlx5_cmd_exec", e)]
    if fail:
        frames.append((2, "rdma_alloc_abort_uobject", None))
    return frames


def _modify_qp(transition: str):
    frames = [(0, "ib_uverbs_modify_qp", None), (1, "modify_qp", None), (2, "rdma_lookup_get_uobject", None),
              (2, "ib_modify_qp_with_udata", None), (3, "_ib_modify_qp", None)]
    if transition == "INIT->RTR":
        frames += [(4, "rdma_fill_sgid_attr", None), (5, "rdma_get_gid_attr", None)]
    frames += [(4, "ib_security_modify_qp", None), (5, "mlx5_ib_modify_qp", None),
               (6, "mlx5_core_qp_modify", None), (7, "mlx5_cmd_exec", None)]
    return frames


def _reg_mr():
    return [(0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None), (1, "rdma_lookup_get_uobject", None),
            (1, "mlx5_ib_reg_user_mr", None), (2, "create_real_mr", None), (3, "alloc_cacheable_mr", None)]


def _query_gid(empty: bool):
    if empty:
        return [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "ENODATA"), (1, "rdma_get_gid_attr", "ENODATA")]
    return [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", None), (1, "rdma_get_gid_attr", None),
            (1, "rdma_read_gid_attr_ndev_rcu", None), (1, "rdma_put_gid_attr", None)]


TREES: dict[str, tuple[str, str | None, list]] = {
    "alloc_pd": ("alloc_pd", None, _alloc_pd()),
    "create_cq_old": ("create_cq", None, _create_cq(False)),
    "create_cq_new": ("create_cq", None, _create_cq(True)),
    "create_cq_padding": ("create_cq", None, _create_cq(False, "padding")),
    "create_cq_fw_lim": ("create_cq", None, _create_cq(True, "fw_lim")),
    "create_qp_old": ("create_qp", None, _create_qp(False)),
    "create_qp_new": ("create_qp", None, _create_qp(True)),
    "create_qp_fw_eio": ("create_qp", None, _create_qp(True, True)),
    "modify_init": ("modify_qp", "RESET->INIT", _modify_qp("RESET->INIT")),
    "modify_rtr": ("modify_qp", "INIT->RTR", _modify_qp("INIT->RTR")),
    "modify_rts": ("modify_qp", "RTR->RTS", _modify_qp("RTR->RTS")),
    "reg_mr": ("reg_mr", None, _reg_mr()),
    "query_gid": ("query_gid", None, _query_gid(False)),
    "query_gid_empty": ("query_gid", None, _query_gid(True)),
}

# family -> (origin probe, errno, origin layer); root causes and routine families
FAMILIES = {
    "qp_fw_int_err": ("mlx5_cmd_exec", "EIO", "driver"),
    "cq_fw_lim_err": ("mlx5_cmd_check", "ENOMEM", "driver"),
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "core"),
    "cqe_padding_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
}
TREE_FAMILY = {"create_qp_fw_eio": "qp_fw_int_err", "create_cq_fw_lim": "cq_fw_lim_err",
               "query_gid_empty": "gid_empty_slot", "create_cq_padding": "cqe_padding_refused"}
ROOT_CAUSES = ("qp_fw_int_err", "cq_fw_lim_err")
ROUTINE = ("gid_empty_slot", "cqe_padding_refused")
FAULT_HOSTS = {"qp_fw_int_err": ("g04",), "cq_fw_lim_err": ("g09",)}
# the frames of the update's new success paths (edges no good trace of D0 has)
NEW_FRAMES = ("mlx5_ib_dev_res_srq_init", "mlx5_cmd_do", "mlx5_cmd_check")

QP_EIO_RATE = 0.08  # g04: a CREATE_QP firmware command fails INT_ERR, all day
CQ_LIM_FROM_S = 40 * 60  # g09: from 40 minutes in, every CREATE_CQ fails LIM_ERR


def _own_cost(fn: str) -> int:
    if fn in ("mlx5_cmd_exec", "mlx5_cmd_do"):
        return 90_000  # a firmware command round trip
    if fn == "mlx5_ib_dev_res_srq_init":
        return 2_000
    return 3_000


def _timing(frames: list) -> list[tuple[int, int]]:
    """(entry offset, latency) in ns of each frame of a tree, nested: a frame's children run one
    after the other inside it."""
    n = len(frames)
    lat = [0] * n
    for i in range(n - 1, -1, -1):
        d = frames[i][0]
        kids, j = 0, i + 1
        while j < n and frames[j][0] > d:
            if frames[j][0] == d + 1:
                kids += lat[j]
            j += 1
        lat[i] = _own_cost(frames[i][1]) + kids + 1_000 * sum(1 for k in range(i + 1, j) if frames[k][0] == d + 1)
    entry = [0] * n
    for i in range(n):
        d = frames[i][0]
        parent = next((k for k in range(i - 1, -1, -1) if frames[k][0] == d - 1), None)
        if parent is None:
            entry[i] = 0
            continue
        prev = next((k for k in range(i - 1, parent, -1) if frames[k][0] == d), None)
        entry[i] = (entry[prev] + lat[prev] + 1_000) if prev is not None else entry[parent] + 1_000
    return list(zip(entry, lat, strict=True))


TIMING = {name: _timing(frames) for name, (_, _, frames) in TREES.items()}


def _truth_of(name: str) -> dict:
    family = TREE_FAMILY.get(name)
    if family is None:
        return {"root_cause": None, "bifurcation_probe": None, "bifurcation_errno": None, "origin_layer": None,
                "expected_error": False}
    probe, errno, layer = FAMILIES[family]
    return {"root_cause": family if family in ROOT_CAUSES else None, "bifurcation_probe": probe,
            "bifurcation_errno": errno, "origin_layer": layer, "expected_error": family in ROUTINE}


class _Host:
    """One host's day: its calls counted, its recorded call trees as rows."""

    def __init__(self, name: str, date: str, release: str, metadata: dict, t0: dt.datetime, rng: random.Random):
        self.name, self.date, self.release, self.metadata, self.t0, self.rng = name, date, release, metadata, t0, rng
        self.boot = t0 - dt.timedelta(days=3, seconds=rng.randrange(86_400))
        self.boot_id = rng.randrange(1 << 16)
        self.windows: list[tuple[float, float]] = []
        offset = rng.uniform(0, CAPTURE_EVERY_S)
        while offset < 2 * 3600 + CAPTURE_EVERY_S:
            self.windows.append((offset, offset + CAPTURE_LEN_S))
            offset += CAPTURE_EVERY_S
        self.counts: dict[tuple[int, str], list] = defaultdict(lambda: [0, 0, defaultdict(int)])
        self.rows: list[dict] = []
        self.truth: list[dict] = []
        self.n = 0

    def open_window(self, at: float) -> None:
        self.windows.append((at, at + CAPTURE_LEN_S))

    def timed(self, at: float) -> bool:
        return any(a <= at < b for a, b in self.windows)

    def call(self, at: float, name: str, *, pid: int, comm: str, job: str | None, meta: dict | None = None) -> bool:
        """One call of tree `name` at `at` seconds into the window; True when it failed."""
        operation, arg, frames = TREES[name]
        snap = int(at // INTERVAL_S)
        for _, fn, errno in frames:
            cell = self.counts[(snap, fn)]
            cell[0] += 1
            if errno:
                cell[1] += 1
                cell[2][errno] += 1
        failed = frames[0][2] is not None
        timed = self.timed(at)
        if not failed and not timed:
            return False
        self.n += 1
        trace_id = f"{self.name}:{self.boot_id}:{pid}:{self.n}"
        start = self.t0 + dt.timedelta(seconds=at)
        mono0 = int((start - self.boot).total_seconds() * 1e9)
        scale = self.rng.uniform(0.8, 1.3)
        timing = [(int(e * scale), int(lat * scale)) for e, lat in TIMING[name]]
        root_lat = timing[0][1]
        if timed:
            end = start + dt.timedelta(microseconds=root_lat / 1000)
        else:  # no per-call timing: every frame is the tick (4 ms) the root returned in
            tick = (mono0 + root_lat) // 4_000_000 * 4_000_000
            start = end = self.boot + dt.timedelta(microseconds=tick / 1000)
        exit_status = -ERRNO_NUMBER[frames[0][2]] if failed else 0
        md = metadata_list({**self.metadata, **(meta or {})})
        for seq, ((depth, fn, errno), (e, lat)) in enumerate(zip(frames, timing, strict=True)):
            self.rows.append({
                "trace_id": trace_id, "seq": seq,
                "ts_ns": mono0 + e if timed else tick,
                "pid": pid, "tid": pid, "ppid": pid - 1 if comm == "python3" else 1, "comm": comm,
                "probe": fn, "layer": LAYER[fn], "depth": depth,
                "ret": -ERRNO_NUMBER[errno] if errno else 0, "errno": errno,
                "latency_ns": lat if timed else None, "arg": arg,
                "kind": "failure" if failed else "good", "command": operation, "exit_status": exit_status,
                "start_time": start, "end_time": end, "kernel_release": self.release, "lost_events": 0,
                "job_id": job, "metadata": md,
            })
        truth = _truth_of(name) if failed else _truth_of("")
        self.truth.append({"trace_id": trace_id, "kind": "failure" if failed else "good", "held_out": False, **truth})
        return failed

    def write(self, root: Path) -> None:
        events = pa.Table.from_pylist(self.rows, schema=pa.schema([EVENTS.field(c) for c in self.rows[0]]))
        events = events.append_column("host", pa.array([self.name] * events.num_rows, pa.string()))
        write_partition(events, root, "events", self.date, self.name, "part-0000.parquet", durable=False)
        truth = pa.Table.from_pylist(self.truth, schema=pa.schema([TRUTH.field(c) for c in self.truth[0]]))
        truth = truth.append_column("host", pa.array([self.name] * truth.num_rows, pa.string()))
        write_partition(truth, root, "truth", self.date, self.name, "part-0000.parquet", durable=False)
        snaps = int(2 * 3600 // INTERVAL_S)
        cols: dict[str, list] = defaultdict(list)
        for snap in range(snaps):
            when = self.t0 + dt.timedelta(seconds=(snap + 1) * INTERVAL_S)
            for probe in PROBES:
                calls, fails, errnos = self.counts.get((snap, probe), (0, 0, {}))
                cols["snapshot_time"].append(when)
                cols["probe"].append(probe)
                cols["layer"].append(LAYER[probe])
                cols["invocations"].append(calls)
                cols["failures"].append(fails)
                cols["errno_counts"].append([{"errno": k, "count": v} for k, v in sorted(errnos.items())])
        n = len(cols["probe"])
        counters = pa.table({
            "host": [self.name] * n, "snapshot_time": pa.array(cols["snapshot_time"], pa.timestamp("ns", tz="UTC")),
            "interval_s": [float(INTERVAL_S)] * n, "kernel_release": [self.release] * n, "vendor": ["mlx5"] * n,
            "probe_set": ["rdma-fentry"] * n, "probe": cols["probe"], "layer": cols["layer"], "live": [True] * n,
            "invocations": pa.array(cols["invocations"], pa.int64()), "failures": pa.array(cols["failures"], pa.int64()),
            "errno_counts": pa.array(cols["errno_counts"], ERRNO_COUNTS_TYPE), "lost_records": pa.array([0] * n, pa.int64()),
        })
        path = write_partition(counters, root, "counters", self.date, self.name, "part-0000.parquet", durable=False)
        write_counter_buckets(path, durable=False)


def _run_job(h: _Host, start: float, job: str, attempt: int, *, new: bool, qp_eio: bool, cq_lim_from: float | None,
             end: float, pids: list[int]) -> tuple[bool, float]:
    """One attempt of a job on `h`: (died, when). The ranks' initialisation, then a reg_mr every
    4-6 minutes per rank until `end`."""
    rng = h.rng
    h.open_window(start)  # the Slurm prolog's SIGUSR1
    meta = {"slurm_job": job, "requeue": str(attempt)}
    plan: list[tuple[float, int, str]] = []
    for rank in range(4):
        pid = pids[0] + rank
        t = start + 0.02 * rank + rng.uniform(0.0, 0.01)
        seq = ["alloc_pd", "cq_padded", "cq", "cq", "reg_mr", "reg_mr", "reg_mr"]
        seq += ["qp"] * 4 + ["modify_init", "modify_rtr", "modify_rts"] * 4
        for step in seq:
            t += rng.uniform(0.0005, 0.003)
            plan.append((t, pid, step))
        t += rng.uniform(240, 360)
        while t < end:
            plan.append((t, pid, "reg_mr"))
            t += rng.uniform(240, 360)
    plan.sort()
    killed_at: float | None = None
    dead: set[int] = set()
    for t, pid, step in plan:
        if killed_at is not None and t >= killed_at:
            break
        if pid in dead:
            continue
        if step == "cq_padded":
            name = "create_cq_padding"
        elif step == "cq":
            name = "create_cq_fw_lim" if (cq_lim_from is not None and t >= cq_lim_from) else (
                "create_cq_new" if new else "create_cq_old")
        elif step == "qp":
            name = "create_qp_fw_eio" if (qp_eio and rng.random() < QP_EIO_RATE) else (
                "create_qp_new" if new else "create_qp_old")
        else:
            name = step
        failed = h.call(t, name, pid=pid, comm="python3", job=job, meta=meta)
        if failed and name in TREE_FAMILY and TREE_FAMILY[name] in ROOT_CAUSES:
            dead.add(pid)
            if killed_at is None:
                killed_at = t + 0.5  # NCCL aborts, Slurm kills the job's other ranks
    return killed_at is not None, killed_at if killed_at is not None else end


def generate(root, *, day: str = "d", update: str = "kernel", faults: bool = True, seed: int = 47) -> dict:
    """Write one day's dataset under `root` (see the module docstring); the summary names what
    it holds."""
    root = Path(root)
    date = DAYS[day]
    new = day == "d"
    release = NEW_RELEASE[update] if new else OLD_RELEASE
    t0 = dt.datetime.combine(dt.date.fromisoformat(date), WINDOW_START, tzinfo=dt.UTC)
    horizon = 2 * 3600.0
    records: dict[str, int] = defaultdict(int)
    for i, name in enumerate(HOSTS):
        rng = random.Random(f"{seed}:{day}:{update}:{faults}:{name}")
        meta = {"image": IMAGE[day], "mlx5_driver": DRIVER[(day, update)], "partition": "train"}
        h = _Host(name, date, release, meta, t0, rng)
        # the jobs
        qp_eio = faults and new and name in FAULT_HOSTS["qp_fw_int_err"]
        cq_lim_from = CQ_LIM_FROM_S if (faults and new and name in FAULT_HOSTS["cq_fw_lim_err"]) else None
        t = rng.uniform(0, 600)
        job_no = 40_000 + 1_000 * i
        pid = 20_000
        while t < horizon - 60:
            job_no += 1
            job = str(job_no)
            length = rng.uniform(600, 1200)
            attempt = 0
            start = t
            while True:
                end = min(start + length, horizon)
                died, when = _run_job(h, start, job, attempt, new=new, qp_eio=qp_eio, cq_lim_from=cq_lim_from,
                                      end=end, pids=[pid])
                pid += 10
                if not died:
                    t = end + rng.uniform(30, 120)
                    break
                attempt += 1
                start = when + rng.uniform(60, 120)  # requeued
                if (attempt >= 4 and cq_lim_from is None) or start >= horizon - 30:
                    t = start  # given up (or the window ends): the next job
                    break
        # the GID monitor (after the jobs: their prologs' capture windows are known)
        agent_pid = 1200 + i
        t = rng.uniform(0, 300)
        while t < horizon:
            for index in range(8):
                h.call(t + index * 0.001, "query_gid_empty" if index >= 4 else "query_gid", pid=agent_pid,
                       comm="ibgidmon", job=None)
            t += 300
        h.write(root)
        for row in h.truth:
            key = row["root_cause"] or ("routine" if row["expected_error"] else row["kind"])
            records[key] += 1
    return {"day": day, "date": date, "update": update, "faults": faults, "release": release,
            "hosts": list(HOSTS), "records": dict(records)}

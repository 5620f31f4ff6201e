"""fleetgen12: a twelfth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md, tests/fleet_harness.py and the other generators' docstrings).

The fleet: mlx5 GPU hosts in racks of 6 (`g12-r<RR>-n<N>`), one platform per rack (rack mod 6):
0, 2, 5 MLNX_OFED on firmware 22.39 (GPU memory through the peer-memory client), 3 MLNX_OFED on
firmware 28.41 (same kernel, same driver, newer NIC firmware), 1, 4 mlx5 upstream (GPU memory
as dma-buf). The firmware is in each trace's metadata (`fw_version`) only: no column says it.
Every job runs 16 ranks on one host (one process a rank, started within a second): a rank opens
PD, registers a host and a GPU buffer, creates a CQ and an RC QP, moves it RESET->INIT->RTR->RTS,
re-registers its GPU buffer every ~5 minutes while it trains (dereg_mr + reg), and tears down at
the end. A rank that dies ends its job (the launcher kills the other 15 within a second); the
scheduler starts the next job 1-3 minutes later.

The daemon (`tracer run --good-every 1h --good-window 10s -i 60s`): 60 s snapshots; every call
counted per probe; a tree emitted when any of its probes fails, the first 2 of a failure
signature per snapshot as records and the rest in the second's repeat_count, untimed (every
frame's ts_ns and the start/end are the 4 ms tick the root returned in, latency null); good
trees only from the 10 s capture window each host opens once an hour (at its own phase), timed.
So the good-trace baseline is thin: a job's set-up lands in a window rarely.

Data-delivery shapes (no fault, nothing to alert on):
  - counters reset by a daemon restart: on four hosts the daemon restarts once; the exporter that
    turns its cumulative counts into deltas (another writer) ships the first snapshot after the
    restart as new - old: every probe's invocations, failures and errno counts go backwards
    (negative) for that one snapshot, and the snapshot of the restart is missing;
  - at-least-once shipping: on three hosts a half hour of snapshots (counters and call trees)
    is delivered twice, the second copy in its own part file (`part-resent-*.parquet`), same
    trace ids, same snapshot times;
  - three hosts' wall clocks are minutes off (events and counters alike).

Routine families (truth expected_error, no root cause; the process goes on):
  R1 peer_gup_efault: OFED GPU reg_mr: pin_user_pages_fast EFAULT under __ib_umem_get, then
     ib_peer_umem_get claims the range (reference: "OFED with a peer client then retries in
     ib_peer_umem_get"); the root returns 0. Every GPU registration on OFED hosts;
  R2 fw22_no_res_retried: firmware 22.39 answers CREATE_QP with NO_RES now and then (6 % of
     create_qp): mlx5_cmd_exec EAGAIN (errno_conventions: NO_RES -> -EAGAIN) up to the handler;
     the library waits 50-200 ms and retries, which succeeds;
  R3 counter_unbind_no_counter: destroy_qp -> rdma_counter_unbind_qp EINVAL ("returns -EINVAL
     when the QP has no counter (ignored)"), every destroy_qp; the root returns 0.

Root causes (truth root_cause; ROOT_CAUSES: origin probe, errno, operation, must the hosts alert):
  F1 dmabuf_attach_enomem_pressure: on two upstream hosts, in episodes of 8-15 minutes (a
     co-located inference service grabbing GPU memory), 35 % of dma-buf registrations fail
     ENOMEM at dma_buf_dynamic_attach ("exporter attach fails (e.g. -ENOMEM)"), up through
     ib_umem_dmabuf_get and mlx5_ib_reg_user_mr_dmabuf; the rank dies, its job crash-loops until
     the episode ends. Host-specific and recurring: both hosts must alert (ENOMEM). One of them
     is a counter-reset host, the other an at-least-once host.
  F2 fw28_no_res_persistent: firmware 28.41 leaks QP contexts: once CREATE_QP answers NO_RES
     (the same 6 %, the same EAGAIN at the same probe, kernel and driver as R2), it keeps
     answering it; the library's three attempts fail and the rank dies. Decision: a root cause
     on the 28.41 hosts although the same family is routine on 22.39: the process dies here
     every time, and an SRE wants the firmware named. No host alert required (every host of the
     firmware alike: the cluster is the page); one naming EAGAIN on a 28.41 host is tolerated.
  F3 rack_fw_flash_eio: one OFED rack's NIC firmware is flashed for 20 minutes (at 60 % of the
     window, inside two 15-minute buckets): the scheduler drained the running jobs cleanly before
     but keeps starting new ones there, whose alloc_pd fails EIO at mlx5_cmd_exec (INT_ERR /
     BAD_SYS_STATE -> -EIO) -- a crash loop on all six hosts at once, then the rack recovers.
     A root cause (jobs did fail; one cluster), but a planned, recovered rack-wide window: no
     host alert may name it.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from tracer.schema import TABLES, write_partition

# cause -> (origin probe, errno, operation, every host of it must alert)
ROOT_CAUSES: dict[str, tuple[str, str, str, bool]] = {
    "dmabuf_attach_enomem_pressure": ("dma_buf_dynamic_attach", "ENOMEM", "reg_dmabuf_mr", True),
    "fw28_no_res_persistent": ("mlx5_cmd_exec", "EAGAIN", "create_qp", False),
    "rack_fw_flash_eio": ("mlx5_cmd_exec", "EIO", "alloc_pd", False),
}
ROUTINE = ("peer_gup_efault", "fw22_no_res_retried", "counter_unbind_no_counter")
ERRNO = {"EIO": 5, "EAGAIN": 11, "ENOMEM": 12, "EFAULT": 14, "EINVAL": 22}

# platform -> (kernel release, firmware)
PLATFORMS = {
    "ofed22": ("5.15.0-1063-nvidia", "22.39.1002"),
    "ofed28": ("5.15.0-1063-nvidia", "28.41.1000"),
    "upstream": ("6.8.0-49-generic", "22.39.1002"),
}
RACK_PLATFORM = ("ofed22", "upstream", "ofed22", "ofed28", "upstream", "ofed22")
RANKS = 16
SNAP_S = 60
CAPTURE_EVERY_S, CAPTURE_S = 3600, 10
BUCKET_S = 900
START = dt.datetime(2026, 11, 30, 21, 30, tzinfo=dt.UTC)  # crosses midnight UTC
TICK_NS = 4_000_000


def _pin(platform: str, depth: int, gpu_fault: bool = False) -> list[tuple]:
    """The pinning frames under a driver call: OFED's ib_umem_get_peer -> __ib_umem_get, upstream's
    ib_umem_get; pin_user_pages_fast below."""
    efault = "EFAULT" if gpu_fault else None
    if platform.startswith("ofed"):
        out = [(depth, "ib_umem_get_peer", "core", None), (depth + 1, "__ib_umem_get", "core", None),
               (depth + 2, "pin_user_pages_fast", "core", efault)]
        if gpu_fault:  # the peer client claims what GUP refused (reference gpu_direct_trace_shape)
            out += [(depth + 2, "ib_peer_umem_get", "peer-mem", None), (depth + 3, "ib_get_peer_client", "peer-mem", None)]
        return out
    return [(depth, "ib_umem_get", "core", None), (depth + 1, "pin_user_pages_fast", "core", efault)]


def frames_of(platform: str, op: str, arg: str | None, label: str) -> list[tuple[int, str, str, str | None]]:
    """The probed frames (depth, function, layer, errno or None) of one call tree, in entry order."""
    if op == "alloc_pd":
        e = "EIO" if label == "rack_fw_flash_eio" else None
        return [(0, "ib_uverbs_alloc_pd", "uverbs", e), (1, "mlx5_ib_alloc_pd", "driver", e), (2, "mlx5_cmd_exec", "driver", e)]
    if op == "reg_mr" and arg == "host":
        return [(0, "ib_uverbs_reg_mr", "uverbs", None), (1, "mlx5_ib_reg_user_mr", "driver", None), *_pin(platform, 2),
                (2, "create_real_mr", "driver", None)]
    if op == "reg_mr":  # GPU memory on OFED: always through the peer client (R1)
        return [(0, "ib_uverbs_reg_mr", "uverbs", None), (1, "mlx5_ib_reg_user_mr", "driver", None),
                *_pin(platform, 2, gpu_fault=True), (2, "create_real_mr", "driver", None), (3, "reg_create", "driver", None),
                (4, "mlx5_cmd_exec", "driver", None), (3, "ib_umem_activate_invalidation_notifier", "peer-mem", None)]
    if op == "reg_dmabuf_mr":
        if label == "dmabuf_attach_enomem_pressure":
            e = "ENOMEM"
            return [(0, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "uverbs", e),
                    (1, "mlx5_ib_reg_user_mr_dmabuf", "driver", e), (2, "ib_umem_dmabuf_get", "core", e),
                    (3, "dma_buf_get", "core", None), (3, "dma_buf_dynamic_attach", "core", e)]
        return [(0, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "uverbs", None),
                (1, "mlx5_ib_reg_user_mr_dmabuf", "driver", None), (2, "ib_umem_dmabuf_get", "core", None),
                (3, "dma_buf_get", "core", None), (3, "dma_buf_dynamic_attach", "core", None),
                (2, "mlx5_ib_init_dmabuf_mr", "driver", None), (3, "ib_umem_dmabuf_map_pages", "core", None)]
    if op == "create_cq":
        return [(0, "ib_uverbs_create_cq", "uverbs", None), (1, "mlx5_ib_create_cq", "driver", None), *_pin(platform, 2),
                (2, "mlx5_core_create_cq", "driver", None)]
    if op == "create_qp":
        e = "EAGAIN" if label in ("fw22_no_res_retried", "fw28_no_res_persistent") else None
        return [(0, "ib_uverbs_create_qp", "uverbs", e), (1, "ib_create_qp_user", "core", e),
                (2, "mlx5_ib_create_qp", "driver", e), *_pin(platform, 3), (3, "mlx5_qpc_create_qp", "driver", e),
                (4, "mlx5_cmd_exec", "driver", e)]
    if op == "modify_qp":
        bind = [(2, "rdma_counter_bind_qp_auto", "core", None)] if arg == "RESET->INIT" else []
        return [(0, "ib_uverbs_modify_qp", "uverbs", None), (1, "_ib_modify_qp", "core", None), *bind,
                (2, "mlx5_ib_modify_qp", "driver", None), (3, "mlx5_cmd_exec", "driver", None)]
    if op == "destroy_qp":  # R3 on every destroy: no counter bound, the EINVAL is ignored
        return [(0, "ib_uverbs_destroy_qp", "uverbs", None), (1, "ib_destroy_qp_user", "core", None),
                (2, "rdma_counter_unbind_qp", "core", "EINVAL"), (2, "mlx5_ib_destroy_qp", "driver", None)]
    if op == "dereg_mr":
        return [(0, "ib_uverbs_dereg_mr", "uverbs", None), (1, "ib_dereg_mr_user", "core", None),
                (2, "mlx5_ib_dereg_mr", "driver", None)]
    if op == "dealloc_pd":
        return [(0, "ib_uverbs_dealloc_pd", "uverbs", None), (1, "ib_dealloc_pd_user", "core", None),
                (2, "mlx5_ib_dealloc_pd", "driver", None), (3, "mlx5_cmd_exec", "driver", None)]
    raise ValueError(op)


class _Host:
    def __init__(self, name: str, rack: int, platform: str, rng: random.Random):
        self.name, self.rack, self.platform = name, rack, platform
        self.release, self.fw = PLATFORMS[platform]
        self.rng = random.Random(rng.random())
        self.capture_phase = self.rng.uniform(0, CAPTURE_EVERY_S - CAPTURE_S)
        self.boot_ns = self.rng.randrange(10**12, 10**14)
        self.skew_s = 0.0
        self.episodes: list[tuple[float, float]] = []  # F1 memory pressure
        self.flash: tuple[float, float] | None = None  # F3
        self.reset_at: float | None = None  # daemon restart, counters reset
        self.resent: tuple[float, float] | None = None  # snapshots shipped twice
        self.calls: list[tuple] = []  # (t, pid, ppid, job, op, arg, label)

    def in_capture(self, t: float) -> bool:
        return (t - self.capture_phase) % CAPTURE_EVERY_S < CAPTURE_S

    def gpu_op(self) -> tuple[str, str]:
        return ("reg_mr", "gpu") if self.platform.startswith("ofed") else ("reg_dmabuf_mr", "gpu")


def _run_jobs(h: _Host, horizon: float) -> None:
    """Jobs back to back on one host until the horizon: each call (time, pid, ppid, job, op, arg,
    label); a fatal call ends the job a second later."""
    rng = h.rng
    pid = rng.randrange(20_000, 200_000)
    t = rng.uniform(0, 150)
    job_no = 0
    while t < horizon:
        job_no += 1
        job = f"slurm-{h.rack:02d}{h.name[-1]}{job_no:04d}"
        ppid = pid
        pid += 1
        end = t + rng.uniform(20, 60) * 60
        if h.flash and t < h.flash[0] < end:  # drained cleanly before the firmware flash
            end = h.flash[0] - rng.uniform(5, 30)
        ranks = []
        for r in range(RANKS):
            pid += rng.randrange(1, 4)
            ranks.append((pid, _rank_calls(h, t + r * 0.04 + rng.uniform(0, 0.3), end, rng)))
        fatal_at = min((c[0] for _, calls in ranks for c in calls if c[4]), default=None)
        stop = end if fatal_at is None else fatal_at + rng.uniform(0.2, 1.0)
        for rpid, calls in ranks:
            for ct, op, arg, label, fatal, _last in calls:
                if ct > stop:
                    break
                h.calls.append((ct, rpid, ppid, job, op, arg, label))
                if fatal:
                    break
        t = stop + (rng.uniform(60, 180) if fatal_at is not None else rng.uniform(30, 120))


def _rank_calls(h: _Host, t: float, end: float, rng: random.Random) -> list[tuple]:
    """One rank's calls: (time, op, arg, label, fatal here, unused)."""
    out: list[tuple] = []

    def call(op: str, arg: str | None, label: str = "good", fatal: bool = False) -> None:
        nonlocal t
        out.append((t, op, arg, label, fatal, None))
        t += rng.uniform(0.002, 0.02)

    def gpu_reg() -> bool:
        op, arg = h.gpu_op()
        if op == "reg_dmabuf_mr":
            if any(a <= t < b for a, b in h.episodes) and rng.random() < 0.35:
                call(op, arg, "dmabuf_attach_enomem_pressure", fatal=True)
                return False
            call(op, arg)
        else:
            call(op, arg, "peer_gup_efault")
        return True

    if h.flash and h.flash[0] <= t < h.flash[1]:
        call("alloc_pd", None, "rack_fw_flash_eio", fatal=True)
        return out
    call("alloc_pd", None)
    call("reg_mr", "host")
    if not gpu_reg():
        return out
    call("create_cq", None)
    if rng.random() < 0.06:
        if h.platform == "ofed28":  # NO_RES for good: three attempts, then the rank gives up
            for attempt in range(3):
                call("create_qp", None, "fw28_no_res_persistent", fatal=attempt == 2)
                t += rng.uniform(0.05, 0.2)
            return out
        call("create_qp", None, "fw22_no_res_retried")
        t += rng.uniform(0.05, 0.2)
    call("create_qp", None)
    for transition in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
        call("modify_qp", transition)
    t += rng.uniform(200, 400)
    while t < end - 5:
        call("dereg_mr", None)
        if not gpu_reg():
            return out
        t += rng.uniform(240, 360)
    t = max(t, end - rng.uniform(0.5, 3))
    call("destroy_qp", None, "counter_unbind_no_counter")
    for op in ("dereg_mr", "dereg_mr", "dealloc_pd"):
        call(op, None)
    return out


def _fleet(hosts: int, hours: float, seed: int) -> list[_Host]:
    if hosts < 36:
        raise ValueError("fleetgen12 needs at least 36 hosts (six racks: every platform, the flashed rack)")
    rng = random.Random(seed)
    horizon = hours * 3600
    fleet = [_Host(f"g12-r{i // 6:02d}-n{i % 6}", i // 6, RACK_PLATFORM[(i // 6) % 6], rng) for i in range(hosts)]
    by_name = {h.name: h for h in fleet}
    # F1: two upstream hosts, in two racks; episodes spread over the window
    for name in ("g12-r01-n2", "g12-r04-n4"):
        h = by_name[name]
        n = max(4, round(hours * 1.7))
        slots = sorted(rng.sample(range(int(horizon // 1200)), min(n, int(horizon // 1200))))
        h.episodes = [(s * 1200 + rng.uniform(0, 200), s * 1200 + rng.uniform(0, 200) + rng.uniform(8, 15) * 60) for s in slots]
    # F3: rack 5 flashed for 20 minutes from 4 minutes into the bucket at 60 % of the window
    first_bucket = (BUCKET_S - (START.minute * 60 + START.second) % BUCKET_S) % BUCKET_S
    at = first_bucket + (int(0.6 * horizon - first_bucket) // BUCKET_S) * BUCKET_S + 240
    for h in fleet:
        if h.rack == 5:
            h.flash = (at, at + 1200)
    for name, frac in (("g12-r01-n2", 0.45), ("g12-r00-n1", 0.3), ("g12-r03-n0", 0.55), ("g12-r02-n5", 0.7)):
        by_name[name].reset_at = frac * horizon + rng.uniform(0, 50)
    for name, frac in (("g12-r04-n4", 0.35), ("g12-r00-n3", 0.5), ("g12-r05-n1", 0.2)):
        by_name[name].resent = (frac * horizon, frac * horizon + 1800)
    for name, skew in (("g12-r02-n0", 190.0), ("g12-r04-n1", -240.0), ("g12-r01-n2", 150.0)):
        by_name[name].skew_s = skew
    for h in fleet:
        _run_jobs(h, horizon)
        h.calls.sort()
    return fleet


def generate(out_dir: str | Path, hosts: int = 36, hours: float = 3.0, seed: int = 12) -> dict:
    """Write the dataset (events, counters, truth) under `out_dir` and `fleetgen12.json`; return the summary."""
    out = Path(out_dir)
    horizon = hours * 3600
    fleet = _fleet(hosts, hours, seed)
    totals: dict[str, int] = defaultdict(int)
    for h in fleet:
        _write_host(out, h, horizon, totals)
    alert_hosts = {h.name: ["ENOMEM"] for h in fleet if h.episodes}
    summary = {
        "start": START.isoformat(), "hosts": hosts, "hours": hours, "seed": seed,
        "platforms": {h.name: h.platform for h in fleet},
        "fault_hosts": {
            "dmabuf_attach_enomem_pressure": sorted(h.name for h in fleet if h.episodes),
            "fw28_no_res_persistent": sorted(h.name for h in fleet if h.platform == "ofed28"),
            "rack_fw_flash_eio": sorted(h.name for h in fleet if h.flash),
        },
        "alert_hosts": alert_hosts,
        # a 28.41 host's alert naming EAGAIN is tolerated (see F2); nothing else is
        "tolerated_alerts": {h.name: ["EAGAIN"] for h in fleet if h.platform == "ofed28"},
        "episodes_s": {h.name: h.episodes for h in fleet if h.episodes},
        "flash_s": next(h.flash for h in fleet if h.flash),
        "counter_reset_s": {h.name: h.reset_at for h in fleet if h.reset_at is not None},
        "resent_s": {h.name: h.resent for h in fleet if h.resent},
        "skew_s": {h.name: h.skew_s for h in fleet if h.skew_s},
        "capture_phase_s": {h.name: h.capture_phase for h in fleet},
        "totals": dict(totals),
    }
    (out / "fleetgen12.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


def _write_host(out: Path, h: _Host, horizon: float, totals: dict[str, int]) -> None:
    ev: dict[str, list] = defaultdict(list)
    truth: dict[str, list] = defaultdict(list)
    counts: dict[tuple[int, str], list] = {}  # (snapshot, probe) -> [calls, failures, {errno: n}, layer]
    emitted: dict[tuple[int, tuple], list] = {}  # (snapshot, signature) -> trace rows' repeat slots
    meta = [{"key": "fw_version", "value": h.fw}, {"key": "ranks", "value": str(RANKS)}]
    trace_no = 0
    trace_snap: dict[str, int] = {}
    for t, pid, ppid, job, op, arg, label in h.calls:
        if t >= horizon:
            continue
        frames = frames_of(h.platform, op, arg, label)
        snap = int(t // SNAP_S)
        for _, fn, layer, errno in frames:
            c = counts.setdefault((snap, fn), [0, 0, defaultdict(int), layer])
            c[0] += 1
            if errno:
                c[1] += 1
                c[2][errno] += 1
        failed = any(f[3] for f in frames)
        timed = h.in_capture(t)
        if not failed and not timed:
            continue
        sig = (op, arg, tuple((f[1], f[3]) for f in frames))
        if not timed:
            slot = emitted.setdefault((snap, sig), [])
            if len(slot) >= 2:  # counted in the kernel: the second record stands for it
                slot[1][0] += 1
                continue
        trace_no += 1
        tid = f"{h.name}-{trace_no:07x}"
        n = len(frames)
        durations = [h.rng.uniform(20e3, 400e3) * (10 if op in ("reg_mr", "reg_dmabuf_mr") and arg == "gpu" else 1)
                     for _ in frames]
        root_ret = -ERRNO[frames[0][3]] if frames[0][3] else 0
        wall = START + dt.timedelta(seconds=t + h.skew_s)
        mono = h.boot_ns + int(t * 1e9)
        if timed:
            ts = [mono + int(sum(durations[:i]) * 0.3) for i in range(n)]
            lat = [int(d * (n - i) / n) for i, d in enumerate(durations)]
            end_wall = wall + dt.timedelta(microseconds=lat[0] / 1000)
        else:
            tick = (mono + int(durations[0])) // TICK_NS * TICK_NS
            ts, lat, end_wall = [tick] * n, [None] * n, wall
            wall = START + dt.timedelta(seconds=h.skew_s) + dt.timedelta(microseconds=(tick - h.boot_ns) / 1000)
            end_wall = wall
        repeat = [1]
        if not timed:
            emitted[(snap, sig)].append(repeat)
        for i, (depth, fn, layer, errno) in enumerate(frames):
            ev["trace_id"].append(tid)
            ev["seq"].append(i)
            ev["ts_ns"].append(ts[i])
            ev["pid"].append(pid)
            ev["tid"].append(pid)
            ev["ppid"].append(ppid)
            ev["comm"].append("python3")
            ev["probe"].append(fn)
            ev["layer"].append(layer)
            ev["depth"].append(depth)
            ev["ret"].append(-ERRNO[errno] if errno else 0)
            ev["errno"].append(errno)
            ev["latency_ns"].append(lat[i])
            ev["arg"].append(arg)
            ev["kind"].append("failure" if failed else "good")
            ev["command"].append(op)
            ev["exit_status"].append(root_ret)
            ev["start_time"].append(wall)
            ev["end_time"].append(end_wall)
            ev["kernel_release"].append(h.release)
            ev["lost_events"].append(0)
            ev["job_id"].append(job)
            ev["metadata"].append(meta)
            ev["_repeat"].append(repeat)
            ev["_snap"].append(snap)
        trace_snap[tid] = snap
        cause = label if label in ROOT_CAUSES else None
        origin = next(((fn, e, layer) for _, fn, layer, e in reversed(frames) if e), None) if cause else None
        truth["trace_id"].append(tid)
        truth["host"].append(h.name)
        truth["kind"].append("failure" if failed else "good")
        truth["root_cause"].append(cause)
        truth["bifurcation_probe"].append(origin[0] if origin else None)
        truth["bifurcation_errno"].append(origin[1] if origin else None)
        truth["origin_layer"].append(origin[2] if origin else None)
        truth["expected_error"].append(failed and label in ROUTINE)
        truth["held_out"].append(False)
        truth["_date"].append(wall.date().isoformat())
        totals["traces"] += 1
        totals[f"label:{label}"] += 1
    ev["repeat_count"] = [None if r[0] == 1 else r[0] for r in ev.pop("_repeat")]
    snaps = ev.pop("_snap")
    _write_events(out, h, ev, snaps)
    dates = truth.pop("_date")
    _write_by_date(out, "truth", h.name, truth, dates, "part-0.parquet")
    _write_counters(out, h, counts, horizon)
    totals["events"] += len(ev["trace_id"])


def _write_by_date(out: Path, table: str, host: str, cols: dict[str, list], dates: list[str], name: str,
                   keep: list[bool] | None = None) -> None:
    data = _arrow(cols, table)
    for date in sorted(set(dates)):
        mask = pa.array([d == date and (keep is None or keep[i]) for i, d in enumerate(dates)])
        write_partition(data.filter(mask), out, table, date, host, name, durable=False)


def _write_events(out: Path, h: _Host, ev: dict[str, list], snaps: list[int]) -> None:
    data = _arrow(ev, "events")
    dates = [d.date().isoformat() for d in ev["start_time"]]
    for date in sorted(set(dates)):
        write_partition(data.filter(pa.array([d == date for d in dates])), out, "events", date, h.name,
                        "part-0.parquet", durable=False)
        if h.resent:  # the same snapshots' trees shipped again, in a file of their own
            a, b = int(h.resent[0] // SNAP_S), int(h.resent[1] // SNAP_S)
            again = data.filter(pa.array([d == date and a <= s < b for s, d in zip(snaps, dates, strict=True)]))
            if again.num_rows:
                write_partition(again, out, "events", date, h.name, "part-resent-0.parquet", durable=False)


def _write_counters(out: Path, h: _Host, counts: dict, horizon: float) -> None:
    cols: dict[str, list] = defaultdict(list)
    cumulative: dict[str, list] = {}  # probe -> [calls, failures, {errno: n}] since the daemon (re)started
    exported: dict[str, list] = {}  # what the exporter last shipped, cumulative
    reset_snap = int(h.reset_at // SNAP_S) if h.reset_at is not None else None
    by_snap: dict[int, list] = defaultdict(list)
    for (snap, probe), c in counts.items():
        by_snap[snap].append((probe, c))
    for snap in range(int(horizon // SNAP_S)):
        if snap == reset_snap:
            # the daemon restarts inside this interval: its counts so far are lost with it, and no
            # snapshot is shipped for it; the calls after the restart start a new cumulative count
            cumulative = {}
            for probe, c in by_snap.get(snap, []):
                share = (snap + 1) - h.reset_at / SNAP_S
                cum = cumulative.setdefault(probe, [0, 0, defaultdict(int), c[3]])
                cum[0] += int(c[0] * share)
                cum[1] += int(c[1] * share)
                for e, n in c[2].items():
                    cum[2][e] += int(n * share)
            continue
        for probe, c in by_snap.get(snap, []):
            cum = cumulative.setdefault(probe, [0, 0, defaultdict(int), c[3]])
            cum[0] += c[0]
            cum[1] += c[1]
            for e, n in c[2].items():
                cum[2][e] += n
        time = START + dt.timedelta(seconds=(snap + 1) * SNAP_S + h.skew_s)
        for probe, cum in cumulative.items():
            last = exported.get(probe, [0, 0, {}])
            d_calls, d_fail = cum[0] - last[0], cum[1] - last[1]
            d_errno = {e: cum[2].get(e, 0) - last[2].get(e, 0) for e in sorted(set(cum[2]) | set(last[2]))}
            d_errno = {e: n for e, n in d_errno.items() if n}
            exported[probe] = [cum[0], cum[1], dict(cum[2])]
            if not d_calls and not d_fail and not d_errno:
                continue
            cols["host"].append(h.name)
            cols["snapshot_time"].append(time)
            cols["interval_s"].append(float(SNAP_S))
            cols["kernel_release"].append(h.release)
            cols["vendor"].append("mlx5")
            cols["probe_set"].append("rdma")
            cols["probe"].append(probe)
            cols["layer"].append(cum[3])
            cols["live"].append(True)
            cols["invocations"].append(d_calls)
            cols["failures"].append(d_fail)
            cols["errno_counts"].append([{"errno": e, "count": n} for e, n in d_errno.items()])
            cols["lost_records"].append(0)
    data = _arrow(cols, "counters")
    dates = [d.date().isoformat() for d in cols["snapshot_time"]]
    for date in sorted(set(dates)):
        write_partition(data.filter(pa.array([d == date for d in dates])), out, "counters", date, h.name,
                        "part-0.parquet", durable=False)
        if h.resent:
            lo = START + dt.timedelta(seconds=h.resent[0] + h.skew_s)
            hi = START + dt.timedelta(seconds=h.resent[1] + h.skew_s)
            again = data.filter(pa.array([d == date and lo <= t < hi for d, t in zip(dates, cols["snapshot_time"], strict=True)]))
            if again.num_rows:
                write_partition(again, out, "counters", date, h.name, "part-resent-0.parquet", durable=False)


def _arrow(cols: dict[str, list], table: str) -> pa.Table:
    """Columns of the data model's `table` (only those given; the writer fills the rest) as Arrow."""
    schema = TABLES[table]
    return pa.Table.from_pydict(cols, schema=pa.schema([schema.field(k) for k in cols]))

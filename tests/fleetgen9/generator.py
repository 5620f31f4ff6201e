"""fleetgen9: a ninth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md), aimed at what round ten's audit was noted to get wrong.

The fleet: GPU hosts with 8 NICs each (mlx5_0..7 / bnxt_re0..7), two job slots of 4 GPUs
(ranks on devices 4*slot+rank), jobs of 20-90 minutes back to back. Groups: mlx5 MLNX_OFED
(peer memory for GPU buffers), mlx5 upstream 6.8, bnxt_re on 6.8, bnxt_re on 6.17. Counters
every 60 s (the daemon run with -i 60s), every attached probe in every snapshot; failure trees
always emitted, good trees only inside capture windows (the first 60 s of every 5 minutes).
A job dies when one of its ranks fails fatally (the launcher kills the others), and is
resubmitted a few minutes later.

Routine (expected) errors, with what the process does:
  - query_gid -ENODATA at rdma_get_gid_attr: each host has 1-2 empty GID slots among the 4 a
    process reads; rdma-core skips them (every host);
  - OFED GPU reg_mr: pin_user_pages_fast -EFAULT, rescued by ib_peer_umem_get (root succeeds);
  - bnxt_re RESET->INIT in AUTO counter mode: rdma_counter_bind_qp_auto -ENOMEM (no counter ops),
    ignored by _ib_modify_qp (root succeeds);
  - create_qp -EAGAIN at ib_rdmacg_try_charge, retried until it passes, ~1 % of create_qp on
    every host; on two hosts its RATE jumps ~50x from a third of the window on (a tenant's
    cgroup tightened). Decision: still routine. Every process retries through it and goes on,
    the errno is the cgroup's signal to wait, and nothing on those hosts fails otherwise; it
    is how the host is set up (host configuration), not a broken component. Truth marks the
    traces expected_error, no root cause; a rising-rate host alert there is tolerated (an SRE
    may want to know a limit tightened) but not required; a persistent-bad-state one is false.

Root causes (one cluster each):
  - peer_mem_intermittent_one_host: on ONE OFED host, ~30 % of GPU reg_mr in about half of the
    15-minute buckets (scattered, ~15 % overall) fail -ENOMEM at ib_peer_umem_get
    (kzalloc(ib_umem_peer)) after the routine GUP -EFAULT. Host alert expected (ENOMEM).
  - bnxt_re_qp_limits_release: every create_qp on every bnxt_re host running 6.17 fails -EINVAL
    at bnxt_re_test_qp_limits (the driver version's limit check). Decision: one cluster naming
    the driver and release; NO per-host alerts: the SRE's action is one (roll the driver
    back), and N identical host pages would bury it; the hosts are like their whole group.
  - gid_entry_flap_one_host: on ONE upstream host, 30 % of INIT->RTR fail -ENODATA at
    rdma_get_gid_attr (the GID's IP flaps); processes retry (1 s, 3 attempts) and nearly all
    go on. A retry errno, survived, but confined to this host and absent from modify_qp
    elsewhere: a fault. Host alert expected (ENODATA).
  - tenant_job_memlock_limit: one multi-node job of tenant "nebula" (upstream mlx5 and bnxt_re
    6.8 hosts), configured past RLIMIT_MEMLOCK: its first reg_mr fails -ENOMEM at ib_umem_get
    (pinned_vm + npages > limit), restarted every 5-10 minutes, healthy jobs on the other slot.
    One cluster; no host alert (the hosts are fine: the job's config is the cause).
  - nic_port2_fw_cmd_timeout: on ONE OFED host, from a quarter of the window on, every INIT->RTR
    on device mlx5_2 (port 2 of 8) fails -ETIMEDOUT at mlx5_cmd_exec (firmware command
    timeout, errno_conventions). Host alert expected (ETIMEDOUT).
Robustness (no fault): a healthy OFED host re-imaged mid-window comes back under another name
(`<name>-ri`, new boot) after 10 minutes down; the probe on rdma_lag_get_ah_roce_slave is
removed from the set at 60 % of the window (its child then hangs under _ib_modify_qp).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

import polars as pl

from fleetgen9.chains import ERRNO_NUM, all_trees
from tracer.schema import polars_schema, write_counter_buckets, write_partition

ROOT_CAUSES = ("peer_mem_intermittent_one_host", "bnxt_re_qp_limits_release", "gid_entry_flap_one_host",
               "tenant_job_memlock_limit", "nic_port2_fw_cmd_timeout")
T0 = dt.datetime(2026, 11, 30, 6, 0, tzinfo=dt.UTC)
SNAP_S = 60
WINDOW_EVERY_S, WINDOW_S = 300, 60
RELEASES = {"ofed": "5.15.0-122-generic", "up": "6.8.0-49-generic", "bnxt68": "6.8.0-49-generic",
            "bnxt617": "6.17.0-5-generic"}
TENANTS = ("vision", "llm", "speech", "recsys")
LAG = "rdma_lag_get_ah_roce_slave"


class _Host:
    def __init__(self, name: str, group: str, rng: random.Random):
        self.name, self.group = name, group
        self.flavor = {"ofed": "ofed", "up": "up"}.get(group, "bnxt")
        self.vendor = "bnxt_re" if self.flavor == "bnxt" else "mlx5"
        self.release = RELEASES[group]
        self.empty_gids = rng.choice((1, 2))
        self.boot_ns = rng.randrange(10**12, 10**14)


def _flavor_keys(trees: dict, flavor: str) -> list[str]:
    vendor = "bnxt_re" if flavor == "bnxt" else "mlx5"
    return [k for k in trees if f"/{vendor}" in k or k.startswith((f"reg_mr/{flavor}/", f"dereg_mr/{flavor}", "query_gid"))]


def generate(out_dir: str | Path, hosts: int = 24, hours: float = 14, seed: int = 9) -> dict:
    if hosts < 16:
        raise ValueError(f"hosts: expected 16 or more (every group needs 3 hosts), found {hosts}")
    rng = random.Random(seed)
    out = Path(out_dir)
    trees = all_trees()
    end = hours * 3600.0
    n617, n68, nup = max(3, hosts // 8), max(3, hosts // 8), max(4, hosts // 4)
    groups = ["ofed"] * (hosts - n617 - n68 - nup) + ["up"] * nup + ["bnxt68"] * n68 + ["bnxt617"] * n617
    fleet = [_Host(f"r{i // 4:02d}-n{i % 4}", g, rng) for i, g in enumerate(groups)]
    by = {g: [h for h in fleet if h.group == g] for g in RELEASES}
    peer_host, nic_host, jump_hosts, renamed = by["ofed"][1], by["ofed"][2], by["ofed"][3:5], by["ofed"][5]
    gid_host = by["up"][1]
    memlock_hosts = by["up"][2:] + by["bnxt68"]
    t_nic, t_jump, t_rename, t_rm = 0.25 * end, 0.35 * end, 0.5 * end, 0.6 * end
    peer_active = {b for b in range(int(end // 900) + 1) if rng.random() < 0.5}
    memlock_span = (0.1 * end, 0.9 * end)
    new_name = f"{renamed.name}-ri"

    calls: list[tuple] = []  # (host, t, key, pid, job, tenant, device)
    pid_next: dict[str, int] = {}
    job_no = [0]

    def rank(h: _Host, t0: float, t_end: float, dev: int, memlock: bool) -> tuple[list, float | None]:
        out_calls: list[tuple[float, str]] = []
        c = t0 + rng.uniform(0, 2)
        v, fl = h.vendor, h.flavor

        def emit(key: str) -> None:
            nonlocal c
            out_calls.append((c, key))
            c += rng.uniform(0.005, 0.05)

        def gpu_reg() -> bool:
            if h is peer_host and int(c // 900) in peer_active and rng.random() < 0.3:
                emit("reg_mr/ofed/gpu_peer_nomem")
                return False
            emit("reg_mr/ofed/gpu")
            return True

        emit(f"alloc_pd/{v}")
        for i in range(4):
            emit("query_gid/empty" if i >= 4 - h.empty_gids else "query_gid/ok")
        emit(f"create_cq/{v}")
        emit(f"create_cq/{v}")
        if memlock:
            t = c
            emit(f"reg_mr/{fl}/memlock")
            return out_calls, t
        for i in range(4):
            if fl == "ofed" and i < 2:
                t = c
                if not gpu_reg():
                    return out_calls, t
            else:
                emit(f"reg_mr/{fl}/host")
        for _ in range(4):
            if h.group == "bnxt617":
                t = c
                emit("create_qp/bnxt_re/qp_limits")
                return out_calls, t
            p = 0.5 if h in jump_hosts and c >= t_jump else 0.01
            tries = 0
            while rng.random() < p and tries < 30:
                emit(f"create_qp/{v}/rdmacg")
                c += rng.uniform(0.1, 0.3)
                tries += 1
            emit(f"create_qp/{v}")
        for _ in range(4):
            emit(f"modify_qp/{v}/RESET->INIT")
            nolag = "" if c < t_rm else "/nolag"
            if h is nic_host and dev == 2 and c >= t_nic:
                t = c
                emit(f"modify_qp/mlx5/INIT->RTR/fw_timeout{nolag}")
                return out_calls, t
            if h is gid_host:
                fails = 0
                while fails < 3 and rng.random() < 0.3:
                    t = c
                    emit("modify_qp/mlx5/INIT->RTR/gid_empty")
                    c += 1.0
                    fails += 1
                if fails == 3:
                    return out_calls, t
            emit(f"modify_qp/{v}/INIT->RTR{'' if c < t_rm else '/nolag'}")
            emit(f"modify_qp/{v}/RTR->RTS")
        c += rng.uniform(180, 420)
        n = 0
        while c < t_end:
            gpu = fl == "ofed" and n % 2 == 0
            t = c
            if gpu:
                if not gpu_reg():
                    return out_calls, t
            else:
                emit(f"reg_mr/{fl}/host")
            c += rng.uniform(1, 30)
            emit(f"dereg_mr/{fl}" + ("/peer" if gpu else ""))
            c += rng.uniform(180, 420)
            n += 1
        c = max(c - 420, t_end) if c > t_end else c
        for _ in range(4):
            emit(f"destroy_qp/{v}")
        for i in range(4):
            emit(f"dereg_mr/{fl}" + ("/peer" if fl == "ofed" and i < 2 else ""))
        emit(f"dealloc_pd/{v}")
        return out_calls, None

    for h in fleet:
        for slot in (0, 1):
            t = rng.uniform(0, 600)
            while t < end:
                memlock = h in memlock_hosts and slot == 0 and memlock_span[0] <= t < memlock_span[1]
                if memlock:
                    job, tenant, t_end = "nebula-ft-77310", "nebula", t + 3600
                else:
                    job_no[0] += 1
                    tenant = rng.choice(TENANTS)
                    job, t_end = f"{tenant}-{job_no[0]:05d}", t + rng.uniform(20, 90) * 60
                    if h in memlock_hosts and slot == 0 and t < memlock_span[0]:
                        t_end = min(t_end, memlock_span[0])
                if h is renamed and t < t_rename:
                    t_end = min(t_end, t_rename)  # re-imaged: the job is killed with the host
                results = [rank(h, t, t_end, 4 * slot + r, memlock) for r in range(4)]
                deaths = [d for _, d in results if d is not None]
                death = min(deaths) if deaths else None
                name = h.name if not (h is renamed and t >= t_rename) else new_name
                base = pid_next.setdefault(name, 20000)
                for r, (cl, _) in enumerate(results):
                    pid = base + r
                    for tc, key in cl:
                        if (death is None or tc <= death) and tc < end:
                            if h is renamed and t < t_rename and tc >= t_rename:
                                continue
                            calls.append((name, tc, key, pid, job, tenant, 4 * slot + r))
                pid_next[name] = base + 7
                if death is not None:
                    t = death + rng.uniform(120, 600)
                else:
                    t = max(t_end, max((c[-1][0] for c, _ in results if c), default=t_end)) + rng.uniform(30, 300)
                if h is renamed and t_rename <= t < t_rename + 600:
                    t = t_rename + 600 + rng.uniform(0, 60)
    return _write(out, fleet, trees, calls, end, {
        "peer_host": peer_host.name, "nic_host": nic_host.name, "gid_host": gid_host.name,
        "jump_hosts": [h.name for h in jump_hosts], "renamed": [renamed.name, new_name], "t_rename": t_rename,
        "t_rm": t_rm, "t_nic": t_nic, "t_jump": t_jump, "memlock_hosts": [h.name for h in memlock_hosts],
        "bnxt617_hosts": [h.name for h in by["bnxt617"]], "renamed_host": renamed,
    })


def _frames_table(trees: dict) -> pl.DataFrame:
    rows = []
    for t in trees.values():
        n = len(t.frames)
        for seq, (depth, fn, layer, errno) in enumerate(t.frames):
            # subtree size: frames after this one deeper than it
            size = 1
            for d2, *_ in t.frames[seq + 1:]:
                if d2 <= depth:
                    break
                size += 1
            if errno:
                ret = -ERRNO_NUM[errno]
            elif seq == 0 and fn == "ib_uverbs_write":
                ret = 24  # write() returns the command's size
            else:
                ret = 0
            rows.append({"key": t.key, "seq": seq, "probe": fn, "layer": layer, "depth": depth, "errno": errno,
                         "ret": ret, "size": size, "n_frames": n, "arg": t.arg if depth == 1 else None,
                         "command": t.operation, "root_cause": t.root_cause, "routine": t.routine,
                         "bif_probe": t.bif[0] if t.bif else None, "bif_errno": t.bif[1] if t.bif else None,
                         "bif_layer": t.bif[2] if t.bif else None, "failed": t.failed,
                         "exit_status": -ERRNO_NUM[t.root_errno] if t.root_errno else (24 if t.frames[0][1] == "ib_uverbs_write" else 0)})
    return pl.DataFrame(rows, schema_overrides={"depth": pl.Int16}, infer_schema_length=None)


def _write(out: Path, fleet: list[_Host], trees: dict, calls: list[tuple], end: float, info: dict) -> dict:
    renamed: _Host = info.pop("renamed_host")
    host_info = {h.name: h for h in fleet}
    host_info[info["renamed"][1]] = renamed
    frames = _frames_table(trees)
    df = pl.DataFrame(calls, schema=["host", "t", "key", "pid", "job_id", "tenant", "device"], orient="row")
    df = df.sort("host", "t").with_row_index("n")
    attrs = pl.DataFrame({
        "host": list(host_info), "vendor": [h.vendor for h in host_info.values()],
        "kernel_release": [h.release for h in host_info.values()], "flavor": [h.flavor for h in host_info.values()],
        "boot_ns": [h.boot_ns + (10**12 if name.endswith("-ri") else 0) for name, h in host_info.items()],
    })
    df = df.join(attrs, on="host").with_columns(
        (pl.col("host") + "-" + pl.col("n").cast(pl.String)).alias("trace_id"),
        (pl.col("t") % WINDOW_EVERY_S < WINDOW_S).alias("timed"),
        (pl.col("t") // SNAP_S * SNAP_S).alias("snap"),
    )
    failed_keys = set(frames.filter(pl.col("failed"))["key"].unique())
    date = T0.date().isoformat()
    summary: dict = {"hosts": sorted(host_info), "root_causes": list(ROOT_CAUSES), **info}

    # hosts a few at a time: a 300-host fleet's counters grid and events at once took ~9 GiB
    truths = []
    names = list(host_info)
    for i in range(0, len(names), 16):
        chunk = names[i:i + 16]
        truths.append(_write_chunk(out, df.filter(pl.col("host").is_in(chunk)), {n: host_info[n] for n in chunk},
                                   frames, trees, failed_keys, attrs, date, end, info))
    truth = pl.concat(truths)
    alert = {info["peer_host"]: ["ENOMEM"], info["nic_host"]: ["ETIMEDOUT"], info["gid_host"]: ["ENODATA"]}
    summary.update({
        "alert_hosts": alert,
        "tolerated_alerts": {h: ["EAGAIN"] for h in info["jump_hosts"]},  # rising_errno_rate only
        "traces": truth.height, "calls": df.height,
        "failures_by_cause": dict(truth.filter(pl.col("root_cause").is_not_null()).group_by("root_cause").len().iter_rows()),
        "routine_traces": int(truth["expected_error"].sum()),
    })
    # beside the tables, as the other generators do (bench/bench_audit.py --quality reads it)
    (out / "fleetgen9.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return summary


def _write_chunk(out: Path, df: pl.DataFrame, host_info: dict, frames: pl.DataFrame, trees: dict, failed_keys: set,
                 attrs: pl.DataFrame, date: str, end: float, info: dict) -> pl.DataFrame:
    """Write the counters (+ summaries), events and truth of some hosts; their truth rows."""
    # ---- counters: every attached probe of the host, every snapshot
    per_snap = df.group_by("host", "snap", "key").agg(pl.len().alias("c"))
    fr = frames.select("key", "probe", "layer", "errno")
    cells = per_snap.join(fr, on="key").group_by("host", "snap", "probe", "errno").agg(pl.col("c").sum())
    agg = cells.group_by("host", "snap", "probe").agg(
        pl.col("c").sum().alias("invocations"),
        pl.col("c").filter(pl.col("errno").is_not_null()).sum().alias("failures"),
        pl.struct(pl.col("errno"), pl.col("c").alias("count")).filter(pl.col("errno").is_not_null()).alias("errno_counts"),
    )
    layers = dict(zip(frames["probe"], frames["layer"], strict=False))
    flavor_probes = {fl: sorted({p for p in frames.filter(pl.col("key").is_in(_fk(trees, fl)))["probe"]})
                     for fl in ("ofed", "up", "bnxt")}
    t_rm = info["t_rm"]
    counter_rows = []
    for name, h in host_info.items():
        if name == info["renamed"][0]:
            lo, hi = 0.0, info["t_rename"]
        elif name == info["renamed"][1]:
            lo, hi = info["t_rename"] + 600, end
        else:
            lo, hi = 0.0, end
        snaps = [s * SNAP_S for s in range(int(lo // SNAP_S), int(hi // SNAP_S) + (1 if hi < end else 0))
                 if s * SNAP_S < end]
        for p in flavor_probes[h.flavor]:
            counter_rows.append((name, p, snaps))
    grid = (pl.DataFrame(counter_rows, schema=["host", "probe", "snap"], orient="row").explode("snap")
            .with_columns(pl.col("snap").cast(pl.Float64)))
    counters = (grid.join(agg, on=["host", "snap", "probe"], how="left")
                .with_columns(pl.col("invocations").fill_null(0), pl.col("failures").fill_null(0),
                              pl.col("errno_counts").fill_null([]),
                              ((pl.col("probe") != LAG) | (pl.col("snap") + SNAP_S <= t_rm)).alias("live"))
                .join(attrs.select("host", "vendor", "kernel_release"), on="host")
                .with_columns(
                    (pl.lit(T0) + pl.duration(seconds=pl.col("snap") + SNAP_S)).dt.cast_time_unit("ns").alias("snapshot_time"),
                    pl.lit(float(SNAP_S)).alias("interval_s"), pl.lit("rdma").alias("probe_set"),
                    pl.col("probe").replace_strict(layers, default="core").alias("layer"),
                    pl.lit(0, pl.Int64).alias("lost_records"))
                .sort("host", "snapshot_time", "probe"))

    # ---- events: failure trees always, good trees inside capture windows
    emitted = df.filter(pl.col("key").is_in(failed_keys) | pl.col("timed"))
    ev = emitted.join(frames, on="key").sort("host", "n", "seq")
    start = (pl.lit(T0) + pl.duration(microseconds=(pl.col("t") * 1e6).cast(pl.Int64))).dt.cast_time_unit("ns")
    total_ns = pl.col("n_frames") * 2000
    ev = ev.with_columns(
        pl.when(pl.col("timed")).then(pl.col("boot_ns") + (pl.col("t") * 1e9).cast(pl.Int64) + pl.col("seq") * 2000)
        .otherwise(pl.col("boot_ns") + (pl.col("t") * 1e9).cast(pl.Int64) // 4_000_000 * 4_000_000 + total_ns)
        .alias("ts_ns"),
        pl.when(pl.col("timed")).then(pl.col("size") * 2000 - 500).otherwise(None).alias("latency_ns"),
        pl.col("pid").alias("tid"), pl.lit(20000 - 1).alias("ppid"), pl.lit("python3").alias("comm"),
        pl.when(pl.col("seq") == 0).then(pl.lit("/dev/infiniband/uverbs") + pl.col("device").cast(pl.String))
        .alias("path"),
        pl.when(pl.col("key").is_in(failed_keys)).then(pl.lit("failure")).otherwise(pl.lit("good")).alias("kind"),
        pl.when(pl.col("timed")).then(start).otherwise(start + pl.duration(nanoseconds=total_ns)).alias("start_time"),
        (start + pl.duration(nanoseconds=total_ns)).alias("end_time"),
        pl.lit(0, pl.Int64).alias("lost_events"),
        pl.concat_list(pl.struct(pl.lit("device").alias("key"),
                                 (pl.when(pl.col("vendor") == "mlx5").then(pl.lit("mlx5_")).otherwise(pl.lit("bnxt_re"))
                                  + pl.col("device").cast(pl.String)).alias("value")),
                       pl.struct(pl.lit("tenant").alias("key"), pl.col("tenant").alias("value"))).alias("metadata"),
    )
    truth = ev.filter(pl.col("seq") == 0).select(
        "host", "trace_id", "kind", "root_cause", pl.col("bif_probe").alias("bifurcation_probe"),
        pl.col("bif_errno").alias("bifurcation_errno"), pl.col("bif_layer").alias("origin_layer"),
        (pl.col("routine") & pl.col("root_cause").is_null()).alias("expected_error"), pl.lit(False).alias("held_out"))
    ev_cols = polars_schema("events").names()
    ev = ev.select([c for c in ev_cols if c in ev.columns])
    for name in host_info:
        c = counters.filter(pl.col("host") == name)
        if c.height:
            path = write_partition(c, out, "counters", date, name, "part-00000.parquet", durable=False)
            write_counter_buckets(path, c.drop("host"), durable=False)
        e = ev.filter(pl.col("host") == name)
        if e.height:
            write_partition(e, out, "events", date, name, "part-00000.parquet", durable=False)
            write_partition(truth.filter(pl.col("host") == name), out, "truth", date, name, "part-00000.parquet",
                            durable=False)
    return truth


def _fk(trees: dict, flavor: str) -> list[str]:
    return _flavor_keys(trees, flavor)

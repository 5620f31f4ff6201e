"""fleetgen7: a seventh fleet generator, written blind (from reference/rdma_control_path.yaml,
tracer/schema.py, README.md and docs/architecture.md only).

Its shape, chosen to differ from a uniform fleet of small hosts:
- a tracer probing *every* traceable function of the reference chains (trees of 15-30 frames
  rooted at ib_uverbs_write / ib_uverbs_ioctl; three functions named create_qp in one tree);
- a vendor mix (mlx5 with MLNX_OFED, mlx5 upstream, bnxt_re, irdma RoCE) where the same slot
  has another name (the namespace gate);
- one host in eight has 16 NICs and runs 16 processes per job, the others 2; jobs are bursty
  (all processes initialise within seconds), fail together, and are restarted by the scheduler
  with new pids (a crash loop) until they give up;
- hosts join late and leave early, clocks are skewed (a few by tens of seconds), daemons
  restart (gaps with neither counters nor records), the OFED hosts roll to a new kernel during
  the window (a reboot: a gap, a new monotonic clock, new pids);
- per-snapshot in-kernel aggregation (first 3 trees of a shape, the rest one example with
  repeat_count), ring loss on 16-NIC hosts' start-up bursts, truncated records;
- routine errors inside successful calls (pin_user_pages_fast's EFAULT the peer path rescues,
  the auto counter bind's ENOMEM, rdma_counter_unbind_qp's EINVAL on every QP destroy) and
  failing ones the process goes on from (an empty GID slot's ENODATA, the rdma cgroup's EAGAIN
  retried, irdma's query_device_ex EINVAL with a fallback), rare on most hosts, dense on a few;
- seven root causes: a growing one, two overlapping on the same hosts, two with the errno of a
  routine one elsewhere (EINVAL, EFAULT) and three sharing ETIMEDOUT.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from tracer import schema

from .templates import ROOT_CAUSES, Template, build

T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)  # a window that crosses midnight
SNAP_S = 5.0
WINDOW_EVERY_S, WINDOW_LEN_S = 600.0, 20.0  # capture windows: timed trees, good samples
KEEP_PER_SHAPE = 3  # records per (snapshot, tree shape); the rest one example with repeat_count
RING_RECORDS = 40  # records a snapshot of a 16-NIC host delivers before the ring overflows
KERNELS = {"ofed": "5.15.0-119-generic", "upstream": "6.8.0-49-generic", "bnxt_re": "6.8.0-49-generic",
           "irdma": "6.5.0-45-generic"}
OFED_NEW_KERNEL = "5.15.0-126-generic"
NIC_NAME = {"ofed": "mlx5_{}", "upstream": "mlx5_{}", "bnxt_re": "bnxt_re{}", "irdma": "irdma{}"}


@dataclass
class Host:
    name: str
    idx: int
    variant: str
    nics: int
    start: float
    end: float
    skew: float
    phase: float
    boot_ns: int
    upgrade_at: float | None = None  # reboot into OFED_NEW_KERNEL
    down_s: float = 0.0
    gaps: list[tuple[float, float]] = field(default_factory=list)  # daemon restarts
    counter_auto: bool = False
    p_gid_empty: float = 0.03
    p_cgroup: float = 0.01
    faults: dict[str, object] = field(default_factory=dict)

    def kernel(self, t: float) -> str:
        if self.upgrade_at is not None and t >= self.upgrade_at:
            return OFED_NEW_KERNEL
        return KERNELS[self.variant]

    def up(self, t: float) -> bool:
        if not self.start <= t < self.end:
            return False
        return not (self.upgrade_at is not None and self.upgrade_at <= t < self.upgrade_at + self.down_s)

    def traced(self, t: float) -> bool:
        return self.up(t) and not any(a <= t < b for a, b in self.gaps)

    def mono_ns(self, t: float) -> int:
        """The host's monotonic clock: a new boot after the upgrade's reboot starts near 0."""
        if self.upgrade_at is not None and t >= self.upgrade_at + self.down_s:
            return int((t - self.upgrade_at - self.down_s + 25.0) * 1e9)
        return self.boot_ns + int(t * 1e9)


def _roster(hosts: int, span: float, rng: random.Random) -> list[Host]:
    variants = ["ofed"] * 8 + ["upstream"] * 5 + ["bnxt_re"] * 4 + ["irdma"] * 3
    out = []
    for i in range(hosts):
        v = variants[(i * 7) % len(variants)] if hosts >= 8 else ("ofed", "upstream", "bnxt_re", "irdma")[i % 4]
        nics = 16 if i % 8 == 0 else 2
        start, end = 0.0, span
        if i % 10 == 3:
            start = rng.uniform(0.1, 0.35) * span  # joins late
        if i % 12 == 7:
            end = rng.uniform(0.65, 0.9) * span  # drained and leaves early
        skew = rng.uniform(-45, 45) if i % 7 == 2 else rng.uniform(-0.3, 0.3)
        h = Host(f"{'gpux' if nics == 16 else 'gpu'}-{i:04d}", i, v, nics, start, end, skew,
                 rng.uniform(0, SNAP_S), rng.randrange(10**12, 9 * 10**14))
        if v == "ofed" and i % 10 < 7:
            h.upgrade_at = rng.uniform(0.25, 0.7) * span
            h.down_s = rng.uniform(180, 360)
        for _ in range(rng.choice((0, 0, 1, 2))):
            a = rng.uniform(0.05, 0.95) * span
            h.gaps.append((a, a + rng.uniform(60, 400)))
        out.append(h)
    # expected errors dense on a few hosts, rare elsewhere
    by = {v: [h for h in out if h.variant == v] for v in ("ofed", "upstream", "bnxt_re", "irdma")}
    for h in by["bnxt_re"][:2] + by["irdma"][:1] + by["ofed"][1:2]:
        h.counter_auto = True
    for h in out[3::11][:3]:
        h.p_gid_empty = 0.6  # a sparse GID table (addresses on few ports)
    for h in out[5::13][:2]:
        h.p_cgroup = 0.5  # a tight rdma cgroup: creates retried
    return out


def _assign_faults(hosts: list[Host], span: float, rng: random.Random) -> dict[str, list[str]]:
    by = {v: [h for h in hosts if h.variant == v and h.start == 0.0 and h.end == span]
          for v in ("ofed", "upstream", "bnxt_re", "irdma")}
    faults: dict[str, list[Host]] = {}
    upgraded = [h for h in by["ofed"] if h.upgrade_at is not None]
    faults["peer_client_missing_after_upgrade"] = upgraded[1::3][:max(1, len(upgraded) // 3)] or upgraded[:1]
    huge = [h for h in by["ofed"] if h.nics == 16 and h.upgrade_at is None and not h.gaps] or \
        [h for h in by["ofed"] if h.nics == 16] or by["ofed"]
    faults["nic_fw_cmd_timeout"] = huge[:1]
    for h in faults["nic_fw_cmd_timeout"]:
        h.faults["nic_fw_cmd_timeout"] = (5 % h.nics, 0.1 * span)  # NIC 5 from 10 % of the window
    # one rack: consecutive hosts; the netns pods overlap it on two hosts
    plain = [h for h in hosts if h.start == 0.0 and h.end == span and h.variant != "ofed" and h.nics == 2]
    rack = plain[2:8] if len(plain) >= 8 else plain[:4]
    faults["tor_neighbour_timeout"] = rack
    w4 = (0.45 * span, 0.45 * span + min(4200.0, 0.3 * span))
    for h in rack:
        h.faults["tor_neighbour_timeout"] = w4
    pods = rack[:2] + [h for h in plain if h not in rack][-2:]
    faults["netns_gid_denied"] = pods
    for h in pods:
        h.faults["netns_gid_denied"] = (0.3 * span, 0.6 * span)
    faults["bnxt_qp_limit"] = [h for h in by["bnxt_re"] if h not in rack][-2:] or by["bnxt_re"][-1:]
    for h in faults["bnxt_qp_limit"]:
        h.faults["bnxt_qp_limit"] = (0.2 * span, 0.2 * span + max(1800.0, 0.2 * span))
    ups = [h for h in by["upstream"] if h not in rack and h not in pods]
    ups += [h for h in by["upstream"] if h not in ups]
    # (hosts outside the rack and the pods first; a small fleet shares them)
    n_dmabuf = min(3, max(1, len(ups) - 1))
    faults["dmabuf_fence_timeout"] = ups[:n_dmabuf]
    for h in faults["dmabuf_fence_timeout"]:
        h.faults["dmabuf_fence_timeout"] = 0.35 * span
    faults["huge_mr_mkey_limit"] = ups[n_dmabuf:n_dmabuf + 1] or ups[-1:]
    for h in faults["huge_mr_mkey_limit"]:
        h.faults["huge_mr_mkey_limit"] = (0.4 * span, 0.4 * span + max(1800.0, 0.25 * span))
    for h in faults["peer_client_missing_after_upgrade"]:
        h.faults["peer_client_missing_after_upgrade"] = True
    return {k: [h.name for h in v] for k, v in faults.items()}


# -- processes -----------------------------------------------------------------------------------
@dataclass
class Op:
    t: float
    pid: int
    ppid: int
    comm: str
    job: str
    attempt: int
    nic: int
    key: str


class _Proc:
    def __init__(self, host: Host, job: str, attempt: int, nic: int, pid: int, ppid: int, t: float,
                 rng: random.Random, tmpl: dict[str, Template], job_flags: set[str]):
        self.h, self.job, self.attempt, self.nic, self.pid, self.ppid = host, job, attempt, nic, pid, ppid
        self.t, self.rng, self.tmpl, self.flags = t, rng, tmpl, job_flags
        self.ops: list[Op] = []
        self.dead_at: float | None = None
        self.qps = 0
        self.comm = "pt_main_thread" if host.nics == 16 else ("python3" if nic % 2 else "nccl-proxy")

    def call(self, key: str, gap: tuple[float, float] = (0.0005, 0.004)) -> bool:
        """Make one call; False once the process has died (a fatal template)."""
        if self.dead_at is not None:
            return False
        self.t += self.rng.uniform(*gap)
        key = self._fault(key)
        self.ops.append(Op(self.t, self.pid, self.ppid, self.comm, self.job, self.attempt, self.nic, key))
        if self.tmpl[key].fatal:
            self.dead_at = self.t
            return False
        return True

    def _fault(self, key: str) -> str:
        h, t, v = self.h, self.t, self.h.variant
        f = h.faults
        if "nic_fw_cmd_timeout" in f:
            nic, since = f["nic_fw_cmd_timeout"]
            if self.nic == nic and t >= since and v == "ofed":
                # starts small and grows: 0.3 % of firmware commands at first, 30 % at the end
                p = 0.003 + 0.3 * min(1.0, (t - since) / max(1.0, h.end - since)) ** 2
                if self.rng.random() < p:
                    if key == "create_qp/ofed":
                        return "create_qp/ofed/fwtimeout"
                    if key == "create_cq/ofed":
                        return "create_cq/ofed/fwtimeout"
                    if key in ("modify_qp/ofed/INIT->RTR", "modify_qp/ofed/RTR->RTS"):
                        return key + "/fwtimeout"
        if key.startswith("modify_qp/") and key.endswith("INIT->RTR"):
            if "netns_gid_denied" in self.flags:
                return key + "/netns"
            if "tor_neighbour_timeout" in f:
                a, b = f["tor_neighbour_timeout"]
                if a <= t < b and self.rng.random() < 0.7:
                    return key + "/neigh"
        if key == "create_qp/bnxt_re" and "bnxt_qp_limit" in self.flags and self.qps >= 40:
            return "create_qp/bnxt_re/limit"
        if (key == "reg_dmabuf_mr/upstream" and "dmabuf_fence_timeout" in f and t >= f["dmabuf_fence_timeout"]
                and self.rng.random() < 0.5):
            return "reg_dmabuf_mr/upstream/fence"
        if key == "reg_mr/ofed/gpu" and "peer_client_missing_after_upgrade" in f and h.upgrade_at is not None \
                and t >= h.upgrade_at:
            return "reg_mr/ofed/gpu/nopeer"
        return key

    # -- phases --------------------------------------------------------------------------------
    def init(self) -> None:
        v, h = self.h.variant, self.h
        if v == "irdma":
            self.call(f"query_device_ex/{v}")  # EINVAL, then the legacy query
            self.call(f"query_device/{v}")
        else:
            self.call(f"query_device_ex/{v}")
        self.call(f"query_port/{v}")
        for _ in range(self.rng.randint(2, 6)):
            self.call("query_gid/empty" if self.rng.random() < h.p_gid_empty else "query_gid")
        self._create("alloc_pd")
        for _ in range(2):
            self.call(f"create_cq/{v}")
        for _ in range(3):
            self.call(f"reg_mr/{v}")
        if "huge_mr_mkey_limit" in self.flags:
            self.call("reg_mr/upstream/huge")
        if v == "ofed":
            for _ in range(2):
                self.call("reg_mr/ofed/gpu")
        elif v == "upstream":
            for _ in range(2):
                self.call("reg_dmabuf_mr/upstream")
        n_qp = 64 if "bnxt_qp_limit" in self.flags else self.rng.randint(4, 8)
        for _ in range(n_qp):
            self.connect()

    def _create(self, op: str) -> None:
        v = self.h.variant
        for _ in range(6):  # the library retries a charge the cgroup refused
            if self.rng.random() < self.h.p_cgroup:
                self.call(f"{op}/{v}/rdmacg", gap=(0.01, 0.05))
                continue
            self.call(f"{op}/{v}")
            return

    def connect(self) -> None:
        v = self.h.variant
        self._create("create_qp")
        self.qps += 1
        auto = "/auto" if self.h.counter_auto else ""
        self.call(f"modify_qp/{v}/RESET->INIT{auto}")
        self.call(f"modify_qp/{v}/INIT->RTR")
        self.call(f"modify_qp/{v}/RTR->RTS")

    def disconnect(self) -> None:
        v = self.h.variant
        bound = "/bound" if self.h.counter_auto and v in ("ofed", "upstream") else ""
        self.call(f"destroy_qp/{v}{bound}")
        self.qps -= 1

    def teardown(self) -> None:
        v = self.h.variant
        while self.qps > 0 and self.dead_at is None:
            self.disconnect()
        for _ in range(3 + (2 if v in ("ofed",) else 0)):
            self.call(f"dereg_mr/{v}")
        self.call(f"dealloc_pd/{v}")


def _host_ops(h: Host, span: float, rng: random.Random, tmpl: dict[str, Template]) -> list[Op]:
    ops: list[Op] = []
    t = h.start + rng.uniform(0, 600)
    pid = rng.randrange(2000, 9000)
    n_job = 0
    while t < h.end:
        n_job += 1
        job = f"{h.name}-j{n_job}"
        dur = rng.uniform(1200, 5400)
        f = h.faults
        job_end = min(t + dur, h.end)
        attempt = 0
        while t < job_end:
            attempt += 1
            # what the job's (re)start meets: its pod's namespace, the job's own QP and MR needs
            flags = {name for name in ("netns_gid_denied", "bnxt_qp_limit", "huge_mr_mkey_limit")
                     if name in f and f[name][0] <= t < f[name][1]}
            if h.upgrade_at is not None and h.upgrade_at <= t < h.upgrade_at + h.down_s:
                t = h.upgrade_at + h.down_s + rng.uniform(30, 120)
                pid = rng.randrange(1500, 4000)  # a new boot
                continue
            launcher = pid
            pid += 1
            procs = []
            for nic in range(h.nics):
                pid += rng.randint(1, 3)
                procs.append(_Proc(h, job, attempt, nic, pid, launcher, t + rng.uniform(0.2, 3.0), rng, tmpl, flags))
            for p in procs:
                p.init()
            # steady state: every process reconnects now and then
            stop = job_end
            died = [p.dead_at for p in procs if p.dead_at is not None]
            if not died:
                for p in procs:
                    while p.dead_at is None:
                        p.t += rng.uniform(180, 720)
                        if p.t >= stop:
                            break
                        if rng.random() < 0.3:
                            p.call("query_gid/empty" if rng.random() < h.p_gid_empty else "query_gid")
                        p.disconnect()
                        p.connect()
                died = [p.dead_at for p in procs if p.dead_at is not None]
            # the reboot ends everything running on the host
            if h.upgrade_at is not None and t < h.upgrade_at:
                died.append(h.upgrade_at)
            abort = min(died) if died else None
            if abort is None:
                for p in procs:
                    p.t = max(p.t, stop)
                    p.teardown()
            for p in procs:
                # the job fails together: the launcher kills the rest (the kernel cleans up
                # their objects when their uverbs fd closes; no traced handler runs)
                ops.extend(o for o in p.ops if abort is None or o.t <= abort + 0.001)
            if abort is None:
                t = max(p.t for p in procs)
                break
            t = abort + rng.uniform(30, 120)  # the scheduler requeues the job
            if attempt >= 6:
                break
        t += rng.uniform(120, 1800) if h.nics == 2 else rng.uniform(60, 600)
    return [o for o in ops if h.up(o.t)]


# -- tables ------------------------------------------------------------------------------------
def _frames_table(tmpl: dict[str, Template]) -> pl.DataFrame:
    rows = []
    for key, tm in tmpl.items():
        for seq, f in enumerate(tm.frames()):
            rows.append({"key": key, "seq": seq, "probe": f["probe"], "layer": f["layer"], "depth": f["depth"],
                         "ret": f["ret"], "errno": f["errno"], "rel": f["t"], "lat": f["lat"],
                         "arg": tm.arg if f["depth"] == 1 else None})
    return pl.DataFrame(rows, schema={"key": pl.String, "seq": pl.Int64, "probe": pl.String, "layer": pl.String,
                                      "depth": pl.Int16, "ret": pl.Int64, "errno": pl.String, "rel": pl.Int64,
                                      "lat": pl.Int64, "arg": pl.String})


def _templates_table(tmpl: dict[str, Template]) -> pl.DataFrame:
    return pl.DataFrame([{"key": k, "operation": t.operation, "failed": t.failed, "root_cause": t.root_cause,
                          "bif": t.bif, "bif_errno": t.bif_errno, "origin": t.origin, "expected": t.expected,
                          "nframes": len(t.frames())} for k, t in tmpl.items()])


def generate(out_dir: str | Path, hosts: int = 24, hours: float = 2.0, seed: int = 7) -> dict:
    """Write a dataset (events, counters, counter_buckets, truth) under `out_dir`; return a
    summary of what it holds (hosts per cause, hosts an alert may name, quiet hosts)."""
    out = Path(out_dir)
    rng = random.Random(seed)
    span = hours * 3600.0
    tmpl = build()
    roster = _roster(hosts, span, rng)
    fault_hosts = _assign_faults(roster, span, rng)
    ops_rows = []
    for h in roster:
        hr = random.Random(f"{seed}/{h.name}")
        for o in _host_ops(h, span, hr, tmpl):
            ops_rows.append((h.idx, o.t, o.pid, o.ppid, o.comm, o.job, o.attempt, o.nic, o.key, h.traced(o.t)))
    ops = pl.DataFrame(ops_rows, schema={"hidx": pl.Int32, "t": pl.Float64, "pid": pl.Int32, "ppid": pl.Int32,
                                         "comm": pl.String, "job": pl.String, "attempt": pl.Int32, "nic": pl.Int32,
                                         "key": pl.String, "traced": pl.Boolean}, orient="row")
    hosts_df = pl.DataFrame({
        "hidx": [h.idx for h in roster], "host": [h.name for h in roster], "variant": [h.variant for h in roster],
        "phase": [h.phase for h in roster], "skew": [h.skew for h in roster],
        "huge": [h.nics == 16 for h in roster],
    }, schema_overrides={"hidx": pl.Int32})
    kinds = _templates_table(tmpl)
    ops = (ops.filter("traced").sort("hidx", "t")
           .join(hosts_df, on="hidx").join(kinds, on="key")
           .with_columns(((pl.col("t") - pl.col("phase")) / SNAP_S).floor().cast(pl.Int64).alias("snap"),
                         (pl.col("t") / WINDOW_EVERY_S).floor().cast(pl.Int64).alias("window"),
                         ((pl.col("t") % WINDOW_EVERY_S) < WINDOW_LEN_S).alias("timed")))
    # --- which trees become records ---
    fails = ops.filter("failed").with_columns(
        pl.int_range(pl.len()).over("hidx", "snap", "key").alias("rank"),
        pl.len().over("hidx", "snap", "key").alias("n_shape"))
    fails = fails.filter(pl.col("rank") <= KEEP_PER_SHAPE).with_columns(
        pl.when(pl.col("rank") == KEEP_PER_SHAPE).then((pl.col("n_shape") - KEEP_PER_SHAPE).cast(pl.Int64))
        .otherwise(None).alias("repeat_count"))
    # a 16-NIC host's start-up burst overflows the ring: records past RING_RECORDS are lost
    fails = fails.with_columns(pl.int_range(pl.len()).over("hidx", "snap").alias("ring_pos"))
    lost = (fails.filter(pl.col("huge") & (pl.col("ring_pos") >= RING_RECORDS))
            .group_by("hidx", "snap").agg(pl.len().alias("lost_records")))
    fails = fails.filter(~(pl.col("huge") & (pl.col("ring_pos") >= RING_RECORDS)))
    goods = (ops.filter(~pl.col("failed") & pl.col("timed"))
             .filter(pl.int_range(pl.len()).over("hidx", "window", "key") < 2)
             .with_columns(pl.lit(None, pl.Int64).alias("repeat_count")))
    cols = ["hidx", "host", "t", "pid", "ppid", "comm", "job", "attempt", "nic", "key", "snap", "timed", "repeat_count",
            "failed", "root_cause", "bif", "bif_errno", "origin", "expected", "nframes", "operation", "variant", "skew"]
    traces = pl.concat([fails.select(cols), goods.select(cols)]).sort("hidx", "t")
    traces = traces.with_columns(
        (pl.col("host") + "-" + pl.int_range(pl.len()).over("hidx").cast(pl.String).str.zfill(7)).alias("trace_id"))
    # truncated records: 4 % of failure trees over 20 frames keep only their first frames
    trng = random.Random(seed + 1)
    cut = [(trng.random() < 0.04 and f and n > 20) for f, n in zip(traces["failed"], traces["nframes"], strict=False)]
    keep = [trng.randint(12, n - 2) if c else n for c, n in zip(cut, traces["nframes"], strict=False)]
    traces = traces.with_columns(pl.Series("keep", keep, pl.Int64),
                                 pl.Series("lost_events", [n - k for n, k in zip(traces["nframes"], keep, strict=False)], pl.Int64))
    _write(out, roster, tmpl, ops, traces, lost, span)
    truth_hosts: dict[str, set[str]] = {}
    errno_of = {t.root_cause: t.bif_errno for t in tmpl.values() if t.root_cause}
    for cause, names in fault_hosts.items():
        for n in names:
            truth_hosts.setdefault(n, set()).add(errno_of[cause])
    dense = sorted({h.name for h in roster if h.p_gid_empty > 0.5 or h.p_cgroup > 0.4 or h.counter_auto}
                   - set(truth_hosts))
    summary = {"root_causes": list(ROOT_CAUSES), "fault_hosts": fault_hosts,
               "alert_hosts": {k: sorted(v) for k, v in truth_hosts.items()}, "dense_routine_hosts": dense,
               "hosts": [h.name for h in roster], "traces": traces.height, "operations": ops.height,
               "variants": {h.name: h.variant for h in roster}}
    # beside the tables, as the other generators do (bench_audit --quality reads alert_hosts)
    (out / "fleetgen7.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _write(out: Path, roster: list[Host], tmpl: dict[str, Template], ops: pl.DataFrame, traces: pl.DataFrame,
           lost: pl.DataFrame, span: float) -> None:
    frames = _frames_table(tmpl)
    by_idx = {h.idx: h for h in roster}
    t0_ns = int(T0.timestamp() * 1e9)
    # per-trace clock values (host clocks: the wall clock skewed, the monotonic clock per boot)
    mono = [by_idx[i].mono_ns(t) for i, t in zip(traces["hidx"], traces["t"], strict=False)]
    krel = [by_idx[i].kernel(t) for i, t in zip(traces["hidx"], traces["t"], strict=False)]
    traces = traces.with_columns(
        pl.Series("mono", mono, pl.Int64), pl.Series("kernel_release", krel, pl.String),
        ((pl.col("t") + pl.col("skew")) * 1e9).cast(pl.Int64).alias("wall_rel"))
    ev = (traces.join(frames, on="key").filter(pl.col("seq") < pl.col("keep"))
          .sort("hidx", "trace_id", "seq"))
    root_lat = pl.col("lat").first().over("trace_id")
    tick = 4_000_000
    ev = ev.with_columns(
        pl.when("timed").then(pl.col("mono") + pl.col("rel"))
        .otherwise(((pl.col("mono") + root_lat) // tick) * tick).alias("ts_ns"),
        pl.when("timed").then(pl.col("lat")).otherwise(None).alias("latency_ns"),
        pl.when("timed").then(pl.col("wall_rel")).otherwise(((pl.col("wall_rel") + root_lat) // tick) * tick)
        .alias("start_rel"),
        pl.when("timed").then(pl.col("wall_rel") + root_lat).otherwise(((pl.col("wall_rel") + root_lat) // tick) * tick)
        .alias("end_rel"),
        pl.col("ret").first().over("trace_id").cast(pl.Int32).alias("exit_status"),
    )
    nic_name = pl.concat_str(pl.col("variant").replace_strict(
        {"ofed": "mlx5_", "upstream": "mlx5_", "bnxt_re": "bnxt_re", "irdma": "irdma"}), pl.col("nic").cast(pl.String))
    ev = ev.select(
        "trace_id", "seq", "ts_ns", "pid", pl.col("pid").alias("tid"), "ppid", "comm", "probe", "layer", "depth", "ret",
        "errno", "latency_ns", pl.lit(None, pl.String).alias("path"), "arg", pl.lit(None, pl.String).alias("path2"),
        pl.lit(None, pl.String).alias("output"),
        pl.when("failed").then(pl.lit("failure")).otherwise(pl.lit("good")).alias("kind"),
        pl.col("operation").alias("command"), "exit_status",
        (pl.lit(t0_ns) + pl.col("start_rel")).cast(pl.Datetime("ns", "UTC")).alias("start_time"),
        (pl.lit(t0_ns) + pl.col("end_rel")).cast(pl.Datetime("ns", "UTC")).alias("end_time"),
        "host", "kernel_release", "lost_events", pl.col("job").alias("job_id"),
        pl.concat_list(pl.struct(pl.lit("attempt").alias("key"), pl.col("attempt").cast(pl.String).alias("value")),
                       pl.struct(pl.lit("device").alias("key"), nic_name.alias("value"))).alias("metadata"),
        "repeat_count")
    truth = traces.select(
        "trace_id", "host", pl.when("failed").then(pl.lit("failure")).otherwise(pl.lit("good")).alias("kind"),
        "root_cause", pl.col("bif").alias("bifurcation_probe"), pl.col("bif_errno").alias("bifurcation_errno"),
        pl.col("origin").alias("origin_layer"), pl.col("expected").alias("expected_error"),
        # every fifth good trace of a host is reserved for false-finding checks
        (~pl.col("failed") & (pl.int_range(pl.len()).over("host", "failed") % 5 == 4)).alias("held_out"),
        ((pl.lit(t0_ns) + pl.col("wall_rel")).cast(pl.Datetime("ns", "UTC")).dt.date().cast(pl.String)).alias("date"))
    # --- counters: every traced call, successful or not, per 5 s snapshot and probe ---
    per_key = (frames.group_by("key", "probe").agg(
        pl.len().alias("calls"), pl.col("layer").first(),
        pl.col("errno").drop_nulls().alias("errnos")))
    cells = ops.group_by("hidx", "snap", "key").agg(pl.len().alias("n"))
    cnt = cells.join(per_key, on="key")
    inv = cnt.group_by("hidx", "snap", "probe").agg((pl.col("n") * pl.col("calls")).sum().alias("invocations"),
                                                    pl.col("layer").first())
    errs = (cnt.explode("errnos").filter(pl.col("errnos").is_not_null())
            .group_by("hidx", "snap", "probe", "errnos").agg(pl.col("n").sum().alias("count")))
    fail_n = errs.group_by("hidx", "snap", "probe").agg(
        pl.col("count").sum().alias("failures"),
        pl.struct(pl.col("errnos").alias("errno"), pl.col("count")).sort_by("errnos").alias("errno_counts"))
    counters = (inv.join(fail_n, on=["hidx", "snap", "probe"], how="left")
                .join(lost, on=["hidx", "snap"], how="left")
                .with_columns(pl.col("failures").fill_null(0), pl.col("lost_records").fill_null(0).cast(pl.Int64)))
    hinfo = pl.DataFrame({"hidx": [h.idx for h in roster], "host": [h.name for h in roster],
                          "phase": [h.phase for h in roster], "skew": [h.skew for h in roster],
                          "vendor": [{"ofed": "mlx5", "upstream": "mlx5"}.get(h.variant, h.variant) for h in roster]},
                         schema_overrides={"hidx": pl.Int32})
    counters = counters.join(hinfo, on="hidx").with_columns(
        ((pl.col("snap") + 1) * SNAP_S + pl.col("phase")).alias("t_end"))
    krel = [by_idx[i].kernel(t) for i, t in zip(counters["hidx"], counters["t_end"], strict=False)]
    counters = counters.with_columns(pl.Series("kernel_release", krel, pl.String)).select(
        "host", (pl.lit(t0_ns) + ((pl.col("t_end") + pl.col("skew")) * 1e9).cast(pl.Int64))
        .cast(pl.Datetime("ns", "UTC")).alias("snapshot_time"),
        pl.lit(SNAP_S).alias("interval_s"), "kernel_release", "vendor", pl.lit("rdma-all").alias("probe_set"),
        "probe", "layer", pl.lit(True).alias("live"), "invocations", "failures", "errno_counts", "lost_records")
    # --- partitions ---
    ev = ev.with_columns(pl.col("start_time").dt.date().cast(pl.String).alias("date"))
    counters = counters.sort("host", "snapshot_time", "probe").with_columns(
        pl.col("snapshot_time").dt.date().cast(pl.String).alias("date"))
    for (date, host), part in ev.group_by("date", "host"):
        schema.write_partition(part.drop("date"), out, "events", date, host, "part-0.parquet", durable=False)
    for (date, host), part in truth.group_by("date", "host"):
        schema.write_partition(part.drop("date"), out, "truth", date, host, "part-0.parquet", durable=False)
    for i, ((date, host), part) in enumerate(sorted(counters.group_by("date", "host"), key=lambda g: g[0])):
        path = schema.write_partition(part.drop("date"), out, "counters", date, host, "part-0.parquet", durable=False)
        if i % 5 != 1:  # most hosts have their 15-minute summary; the others are read raw
            schema.write_counter_buckets(path, part.drop("date"), durable=False)

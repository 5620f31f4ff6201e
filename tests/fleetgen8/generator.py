"""fleetgen8: an eighth fleet generator, written blind (from reference/rdma_control_path.yaml,
tracer/schema.py, README.md and docs/architecture.md only).

The fleet:
  - hosts named by rack (`r03-h5`); racks of 6 (small fleets) or 8 hosts. Most racks run mlx5
    with MLNX_OFED (GPU memory registered through the peer-memory client), every fourth rack
    mlx5 on an upstream kernel (GPU memory as dma-buf), one rack irdma (RoCE).
  - two low-volume service hosts: a handful of setups a day beside hosts making thousands.
  - jobs of three types with their own shapes: `train` (8 ranks, one per GPU, each a process),
    `infer` (2 ranks on 2 of the GPUs), `ckpt` (one process; on mlx5 it first asks for CQE
    compression, which the HCA lacks: create_cq_user EOPNOTSUPP every start, then it creates the
    CQ without). ckpt jobs are dense on the first rack and rare elsewhere. Jobs start in waves.
  - the daemon: 5 s snapshots, capture windows of 20 s every 10 minutes (timed good traces),
    the first 2 trees of a failure signature per snapshot as records and the rest in the last
    record's repeat_count; one or two daemon restarts a host (a gap of 15-45 s with nothing
    counted, then snapshots at another phase).
  - a probe-set change: pin_user_pages_fast is added to every host's set during one hour from
    the middle of the window. From then on every OFED GPU registration is a failure record (the
    pin fails EFAULT and the peer client takes over): new errors, no regression.

Routine errors (truth expected_error):
  R1 OFED GPU memory: pin_user_pages_fast EFAULT, rescued by ib_peer_umem_get (root succeeds).
  R2 ckpt jobs' CQE-compression probe: create_cq_user EOPNOTSUPP, the process goes on.
  R3 the rdma cgroup's hca_object limit on two hosts only (fewer than a learner's usual
     min_hosts): ib_rdmacg_try_charge EAGAIN on create_qp, retried successfully.
Root causes:
  F1 peermem_gpu_unclaimed: on a few OFED hosts no peer client claims GPUs 6 and 7 (their BAR
     range): ib_peer_umem_get returns the pin's EFAULT and the rank dies. All day.
  F2 rack_tor_neighbour_timeout: one rack's top-of-rack switch stops answering neighbour
     resolution late in the window and is still down at its end: INIT->RTR fails ETIMEDOUT at
     rdma_addr_find_l2_eth_by_grh, on a growing share of calls (20 % -> 100 % in an hour).
  F3 irdma_without_dmabuf_op: infer jobs register GPU memory as dma-buf; the irdma release has
     no reg_user_mr_dmabuf op: the handler fails EOPNOTSUPP (R2's errno), the job dies.
  F4 qp_fw_resource_exhausted: two hosts (one also an F1 host: two faults overlapping) run out
     of firmware QP contexts for two hours: CREATE_QP LIM_ERR -> ENOMEM at mlx5_cmd_exec.
A dying rank ends its job: the other ranks are killed, the job is retried up to 3 times on the
same host after 60-180 s, then the host gets another job type.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import defaultdict
from pathlib import Path

import polars as pl

from tracer import schema

from .chains import ERRNO_CODES, ROOT_CAUSES, WRITE_SIZES, Tree, all_trees

T0 = dt.datetime(2026, 11, 30, 18, 0, tzinfo=dt.UTC)
SNAP_S = 5.0
WINDOW_EVERY_S, WINDOW_S = 600.0, 20.0
K_RECORDS = 2
TOR_PROBE = "rdma_addr_find_l2_eth_by_grh"  # where F2's INIT->RTR fails (ETIMEDOUT)
PIN = frozenset({"pin_user_pages_fast"})
RELEASES = {"ofed": "5.15.0-122-generic", "upstream": "6.8.0-49-generic", "irdma": "6.1.0-27-amd64"}


class _Host:
    def __init__(self, name: str, rack: int, vendor: str, flavor: str, rng: random.Random, hours: float) -> None:
        self.name, self.rack, self.vendor, self.flavor = name, rack, vendor, flavor
        self.release = RELEASES["irdma" if vendor == "irdma" else flavor]
        self.boot_ns = rng.randrange(10**12, 10**15)
        self.window_phase = rng.uniform(0, WINDOW_EVERY_S)
        # daemon segments: (start s, first snapshot phase); nothing is counted in a gap
        self.gaps: list[tuple[float, float]] = []
        for _ in range(rng.choice((1, 1, 2))):
            g0 = rng.uniform(0.05, 0.95) * hours * 3600
            self.gaps.append((g0, g0 + rng.uniform(15, 45)))
        self.gaps.sort()
        self.pin_from = 0.0
        self.pid = 3000 + rng.randrange(1000)
        self.low_volume = False
        self.faults: set[str] = set()
        self.routine_rdmacg = False

    def in_gap(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.gaps)

    def snapshot(self, t: float) -> tuple[float, float]:
        """(end of the 5 s snapshot holding t, its interval length): after a restart the
        snapshots run at the restart's phase."""
        start = 0.0
        for _a, b in self.gaps:
            if t >= b:
                start = b
        k = int((t - start) // SNAP_S) + 1
        return start + k * SNAP_S, SNAP_S

    def in_window(self, t: float) -> bool:
        return ((t - self.window_phase) % WINDOW_EVERY_S) < WINDOW_S and t >= self.window_phase

    def next_pid(self) -> int:
        self.pid += self.pid % 7 + 1
        return self.pid


def _fleet(hosts: int, hours: float, rng: random.Random) -> list[_Host]:
    size = 6 if hosts < 60 else 8
    n_racks = max(1, -(-hosts // size))
    irdma_rack = 2 if n_racks > 2 else None
    out = []
    for i in range(hosts):
        rack, slot = divmod(i, size)
        if rack == irdma_rack:
            vendor, flavor = "irdma", "upstream"
        elif rack % 4 == 3:
            vendor, flavor = "mlx5", "upstream"
        else:
            vendor, flavor = "mlx5", "ofed"
        out.append(_Host(f"r{rack:02d}-h{slot}", rack, vendor, flavor, rng, hours))
    # the two service hosts: the last two of the last OFED rack
    ofed = [h for h in out if h.flavor == "ofed"]
    for h in ofed[-2:]:
        h.low_volume = True
        h.name = h.name.replace("-h", "-svc")
    busy_ofed = [h for h in ofed if not h.low_volume]
    mid = hours * 3600 / 2
    for h in out:
        h.pin_from = mid + rng.uniform(0, 3600)
    # F1 on a sixth of the busy OFED hosts (at least 2), spread over racks; F2 on rack 1
    f1 = busy_ofed[1::6][: max(2, len(busy_ofed) // 6)]
    for h in f1:
        h.faults.add("peermem_gpu_unclaimed")
    f2_rack = 1 if n_racks > 1 else 0
    for h in out:
        if h.rack == f2_rack and not h.low_volume and h.vendor == "mlx5":
            h.faults.add("rack_tor_neighbour_timeout")
    others = [h for h in busy_ofed if not h.faults]
    f4 = [f1[0], others[0]]
    for h in f4:
        h.faults.add("qp_fw_resource_exhausted")
    for h in others[1:3]:
        h.routine_rdmacg = True
    return out


class _Run:
    """Trees of one fleet in time order, per host."""

    def __init__(self, hours: float, rng: random.Random) -> None:
        self.hours, self.rng, self.end = hours, rng, hours * 3600
        self.trees = all_trees()
        self.calls: list[tuple] = []  # (host, t, tree key, pid, ppid, comm, job, job_type, gpu)
        self.f2_start = self.end * 0.72
        self.f4_window = (self.end * 0.35, self.end * 0.35 + min(7200, self.end * 0.2))
        self._unpinned: dict[str, Tree] = {}

    def tree(self, key: str, pinned: bool) -> Tree:
        """The tree of `key` as the host's probe set of the moment sees it."""
        if pinned:
            return self.trees[key]
        if key not in self._unpinned:
            self._unpinned[key] = self.trees[key].without(PIN)
        return self._unpinned[key]

    def job(self, h: _Host, t: float, jtype: str, job_id: str) -> tuple[float, bool]:
        """One job on host h from t: setup of every rank, then steady registrations until its
        end. Returns (end time, died)."""
        rng = self.rng
        ranks = {"train": list(range(8)), "infer": sorted(rng.sample(range(8), 2)), "ckpt": [None],
                 "svc": [None]}[jtype]
        comm = {"train": "python3", "infer": "tritonserver", "ckpt": "ckpt-agent", "svc": "rdma-health"}[jtype]
        launcher = h.next_pid()
        duration = rng.uniform(1200, 5400) if jtype != "svc" else 30.0
        procs = []
        death: float | None = None
        for gpu in ranks:
            pid = h.next_pid()
            tt = t + rng.uniform(0.5, 2.0)
            seq = self._setup(h, jtype, gpu, tt)
            events = []
            for key, dt_ in seq:
                tt += dt_
                events.append((tt, key))
            procs.append((pid, gpu, events))
            first_fatal = next((e for e in events if self.trees[e[1]].root_cause), None)
            if first_fatal and (death is None or first_fatal[0] < death):
                death = first_fatal[0]
        end = min(t + duration, self.end)
        if death is not None:
            end = death + rng.uniform(0.2, 1.5)  # the launcher kills the other ranks
        for pid, gpu, events in procs:
            steady = []
            if death is None:
                tt = max(e[0] for e in events) + rng.uniform(30, 150)
                while tt < end:
                    steady.append((tt, self._reg(h, jtype, gpu, tt)))
                    tt += rng.uniform(60, 240) if jtype != "svc" else 1e9
            for tt, key in events + steady:
                if tt > end and death is not None:
                    break
                if tt >= self.end:
                    break
                self.calls.append((h, tt, key, pid, launcher, comm, job_id, jtype, gpu))
                if death is not None and tt >= death - 1e-9 and self.trees[key].root_cause:
                    break  # this rank died here
        return end, death is not None

    def _reg(self, h: _Host, jtype: str, gpu: int | None, t: float) -> str:
        v, fl = h.vendor, h.flavor
        if gpu is None or jtype == "ckpt":
            return f"reg_mr/{v}/{fl}/host"
        if fl == "ofed":
            if "peermem_gpu_unclaimed" in h.faults and gpu >= 6:
                return f"reg_mr/{v}/{fl}/gpu/unclaimed"
            return f"reg_mr/{v}/{fl}/gpu"
        return "reg_dmabuf_mr/irdma/no-op" if v == "irdma" else f"reg_dmabuf_mr/{v}"

    def _setup(self, h: _Host, jtype: str, gpu: int | None, t: float) -> list[tuple[str, float]]:
        rng, v, fl = self.rng, h.vendor, h.flavor
        seq: list[tuple[str, float]] = [(f"alloc_pd/{v}", 0.01)]
        if gpu is not None:
            seq += [(self._reg(h, jtype, gpu, t), 0.02), (self._reg(h, jtype, gpu, t), 0.02)]
        seq.append((f"reg_mr/{v}/{fl}/host", 0.02))
        if jtype == "ckpt" and v == "mlx5":
            seq += [(f"create_cq/{v}/{fl}/cqe-compression", 0.01), (f"reg_mr/{v}/{fl}/gpu", 0.02)
                    if fl == "ofed" else (f"reg_mr/{v}/{fl}/host", 0.02)]
        seq += [(f"create_cq/{v}/{fl}", 0.01)] * (2 if jtype == "train" else 1)
        n_qp = {"train": 4, "infer": 2, "ckpt": 2, "svc": 1}[jtype]
        f4 = "qp_fw_resource_exhausted" in h.faults and self.f4_window[0] <= t < self.f4_window[1]
        for q in range(n_qp):
            if h.routine_rdmacg and q == n_qp - 1:
                seq += [(f"create_qp/{v}/{fl}/rdmacg", 0.01), (f"create_qp/{v}/{fl}", 0.05)]
            elif f4 and rng.random() < 0.5:
                seq.append((f"create_qp/{v}/{fl}/fw_lim", 0.01))
            else:
                seq.append((f"create_qp/{v}/{fl}", 0.01))
        for _ in range(n_qp):
            seq.append((f"modify_qp/{v}/RESET->INIT", 0.005))
            share = 0.0
            if "rack_tor_neighbour_timeout" in h.faults and t >= self.f2_start:
                share = min(1.0, 0.2 + 0.8 * (t - self.f2_start) / 3600)
            seq.append((f"modify_qp/{v}/INIT->RTR/neigh" if rng.random() < share else f"modify_qp/{v}/INIT->RTR", 0.01))
            seq.append((f"modify_qp/{v}/RTR->RTS", 0.005))
        return seq

    def host_jobs(self, h: _Host) -> None:
        rng = self.rng
        t = rng.uniform(0, 600)
        n = 0
        if h.low_volume:
            for _ in range(max(1, round(self.hours / 3))):
                t0 = rng.uniform(0, self.end - 60)
                self.job(h, t0, "svc", f"{h.name}-svc{n}")
                n += 1
            return
        dense_ckpt = h.rack == 0
        retries, jtype = 0, None
        while t < self.end:
            if jtype is None or retries == 0:
                r = rng.random()
                ckpt_p = 0.6 if dense_ckpt else 0.03
                jtype = "ckpt" if r < ckpt_p else ("infer" if r < ckpt_p + (1 - ckpt_p) * 0.3 else "train")
            job_id = f"{h.name}-{n}"
            n += 1
            end, died = self.job(h, t, jtype, job_id)
            if died and retries < 3:
                retries += 1
                t = end + rng.uniform(60, 180)
            else:
                retries = 0
                jtype = None
                # waves: the scheduler starts jobs on the 5-minute mark
                t = (end // 300 + 1) * 300 + rng.uniform(0, 20)


EVENT_COLUMNS = ("trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret", "errno",
                 "latency_ns", "arg", "kind", "command", "exit_status", "start_time", "end_time", "kernel_release",
                 "lost_events", "job_id", "metadata", "repeat_count")
T0_NS = int(T0.timestamp()) * 10**9


def _frames_rows(cols: dict[str, list], tree: Tree, *, trace_id: str, h: _Host, t: float, pid: int, ppid: int,
                 comm: str, job: str, jtype: str, gpu: int | None, timed: bool, repeat: int | None) -> None:
    """Append the event rows of one call tree to `cols` (column lists; times as ns since the epoch)."""
    n = len(tree.frames)
    base = h.boot_ns + int(t * 1e9)
    # entry times 1.5 us apart; a frame returns after its subtree (plus any slow frame's wait)
    entry = [base + i * 1500 for i in range(n)]
    extra = [tree.timed_latency_ns.get(i, 0) for i in range(n)]
    shift = 0
    for i in range(n):
        entry[i] += shift
        shift += extra[i]
    exit_ = [0] * n
    for i in range(n - 1, -1, -1):
        d = tree.frames[i][0]
        j = i + 1
        while j < n and tree.frames[j][0] > d:
            j += 1
        exit_[i] = (exit_[j - 1] if j - 1 > i else entry[i] + extra[i]) + 800
    start = T0_NS + int(t * 1e9)
    end = start + (exit_[0] - entry[0]) if timed else start
    rets = [-ERRNO_CODES[e] if e else (WRITE_SIZES[tree.operation] if fn == "ib_uverbs_write" else 0)
            for _, fn, _, e in tree.frames]
    meta = [{"key": "job_type", "value": jtype}] + ([{"key": "gpu", "value": str(gpu)}] if gpu is not None else [])
    kind = "failure" if tree.failed else "good"
    for seq, (depth, fn, layer, errno) in enumerate(tree.frames):
        for c, v in (("trace_id", trace_id), ("seq", seq), ("ts_ns", entry[seq] if timed else exit_[0]), ("pid", pid),
                     ("tid", pid), ("ppid", ppid), ("comm", comm), ("probe", fn), ("layer", layer), ("depth", depth),
                     ("ret", rets[seq]), ("errno", errno), ("latency_ns", exit_[seq] - entry[seq] if timed else None),
                     ("arg", tree.arg if fn == "ib_uverbs_modify_qp" else None), ("kind", kind),
                     ("command", tree.operation), ("exit_status", rets[0]), ("start_time", start), ("end_time", end),
                     ("kernel_release", h.release), ("lost_events", 0), ("job_id", job), ("metadata", meta),
                     ("repeat_count", repeat)):
            cols[c].append(v)


def generate(out_dir: str | Path, hosts: int = 24, hours: float = 14, seed: int = 8) -> dict:
    """Write events, counters (+ counter_buckets) and truth partitions under out_dir; return a
    summary of what was injected (hosts, their expected alerts, routine hosts, counts)."""
    rng = random.Random(seed)
    out = Path(out_dir)
    fleet = _fleet(hosts, hours, rng)
    run = _Run(hours, rng)
    for h in fleet:
        run.host_jobs(h)
    by_host: dict[str, list[tuple]] = defaultdict(list)
    for c in run.calls:
        by_host[c[0].name].append(c)
    ev_schema = schema.polars_schema("events")
    n_traces = defaultdict(int)
    alert_hosts: dict[str, set[str]] = defaultdict(set)
    required: dict[str, list[str]] = {}
    for h in fleet:
        calls = sorted(by_host.get(h.name, []), key=lambda c: c[1])
        counts: dict[tuple[float, str], int] = defaultdict(int)  # (snapshot end, tree key) -> calls
        emitted: dict[tuple[float, str], list[tuple]] = defaultdict(list)
        goods: list[tuple] = []
        for c in calls:
            _, t, key, *_rest = c
            if h.in_gap(t):
                continue  # the daemon was down: nothing counted, nothing recorded
            probed = key if t >= h.pin_from else key + "#nopin"
            snap, _ = h.snapshot(t)
            counts[(snap, probed)] += 1
            tree = run.tree(key, t >= h.pin_from)
            if tree.failed:
                emitted[(snap, probed)].append(c)
            elif h.in_window(t):
                goods.append(c)
        ev_rows: dict[str, list] = {c: [] for c in EVENT_COLUMNS}
        truth_rows: list[dict] = []
        seqno = 0

        def emit(c: tuple, tree: Tree, repeat: int | None, h: _Host = h, ev_rows: dict = ev_rows,
                 truth_rows: list = truth_rows) -> None:
            nonlocal seqno
            _, t, key, pid, ppid, comm, job, jtype, gpu = c
            seqno += 1
            tid = f"{h.name}-{seqno:07x}"
            _frames_rows(ev_rows, tree, trace_id=tid, h=h, t=t, pid=pid, ppid=ppid, comm=comm, job=job,
                         jtype=jtype, gpu=gpu, timed=h.in_window(t), repeat=repeat)
            failed = tree.failed
            bif = tree.bif if failed else None
            truth_rows.append({"trace_id": tid, "host": h.name, "kind": "failure" if failed else "good",
                               "root_cause": tree.root_cause if failed else None,
                               "bifurcation_probe": bif[0] if bif else None, "bifurcation_errno": bif[1] if bif else None,
                               "origin_layer": bif[2] if bif else None,
                               "expected_error": bool(failed and tree.routine and not tree.root_cause),
                               "held_out": False})
            n_traces["failure" if failed else "good"] += 1
            if tree.root_cause:
                alert_hosts[h.name].add(tree.bif[1])

        records = sorted(((cs[0][1], k, cs) for k, cs in emitted.items()), key=lambda x: x[0])
        items = [(c[1], 0, c, None) for c in goods]
        for _, (_snap, probed), cs in records:
            tree = run.tree(probed.removesuffix("#nopin"), not probed.endswith("#nopin"))
            for i, c in enumerate(cs[:K_RECORDS]):
                rep = len(cs) - K_RECORDS + 1 if i == K_RECORDS - 1 and len(cs) > K_RECORDS else None
                items.append((c[1], 1, c, (tree, rep)))
        for t, kind, c, extra in sorted(items, key=lambda x: x[0]):
            if kind == 0:
                key = c[2]
                emit(c, run.tree(key, t >= h.pin_from), None)
            else:
                emit(c, extra[0], extra[1])
        # counters: per snapshot and probe, the frames of every tree counted
        crow: dict[tuple[float, str], list] = {}
        for (snap, probed), n in counts.items():
            tree = run.tree(probed.removesuffix("#nopin"), not probed.endswith("#nopin"))
            for _depth, fn, layer, errno in tree.frames:
                cell = crow.setdefault((snap, fn), [layer, 0, 0, defaultdict(int)])
                cell[1] += n
                if errno:
                    cell[2] += n
                    cell[3][errno] += n
        # the rack's hosts whose INIT->RTR failed at the switch's probe in two 15-minute buckets
        # or more: down on it, each to be drained (the one fault an alert is required for)
        tor = {int(snap // 900) for (snap, fn), cell in crow.items() if fn == TOR_PROBE and cell[2]}
        if "rack_tor_neighbour_timeout" in h.faults and len(tor) >= 2:
            required[h.name] = ["ETIMEDOUT"]
        keys = sorted(crow)
        c_rows = {"snapshot_time": [T0_NS + int(snap * 1e9) for snap, _ in keys], "probe": [fn for _, fn in keys],
                  "layer": [crow[k][0] for k in keys], "invocations": [crow[k][1] for k in keys],
                  "failures": [crow[k][2] for k in keys],
                  "errno_counts": [[{"errno": e, "count": v} for e, v in sorted(crow[k][3].items())] for k in keys]}
        _write(out, h, ev_rows, truth_rows, c_rows, ev_schema)
    summary = {
        "hosts": [h.name for h in fleet],
        "vendors": {h.name: f"{h.vendor}/{h.flavor}" for h in fleet},
        # acceptable: a host alert on a host with a root cause's failures naming its errno is no
        # false one (F1's unclaimed GPUs, F3's platform, F4's two hours of QP-context exhaustion:
        # welcome, not required) ...
        "alert_hosts": {k: sorted(v) for k, v in alert_hosts.items()},
        # ... required: the hosts of the rack down on the switch's neighbour resolution
        "required_alert_hosts": required,
        "fault_hosts": {h.name: sorted(h.faults) for h in fleet if h.faults},
        "routine_rdmacg_hosts": [h.name for h in fleet if h.routine_rdmacg],
        "dense_ckpt_hosts": [h.name for h in fleet if h.rack == 0 and not h.low_volume],
        "low_volume_hosts": [h.name for h in fleet if h.low_volume],
        "root_causes": list(ROOT_CAUSES),
        "traces": dict(n_traces),
        "calls": len(run.calls),
    }
    # beside the dataset, as the other generators leave theirs (bench_audit --quality reads it)
    (out / "fleetgen8.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _write(out: Path, h: _Host, ev_rows: dict[str, list], truth_rows: list[dict], c_rows: dict[str, list],
           ev_schema: pl.Schema) -> None:
    utc = [pl.from_epoch(c, "ns").dt.replace_time_zone("UTC") for c in ("start_time", "end_time")]
    if ev_rows["trace_id"]:
        ev = pl.DataFrame(ev_rows, schema={k: (pl.Int64 if k in ("start_time", "end_time") else v)
                                           for k, v in ev_schema.items() if k in ev_rows})
        ev = ev.with_columns(*utc, pl.lit(h.name).alias("host"))
        dates = ev["start_time"].dt.date().cast(pl.String)
        tdate = dict(zip(ev["trace_id"], dates, strict=True))
        for d in dates.unique().sort():
            schema.write_partition(ev.filter(dates == d), out, "events", d, h.name, "part-0.parquet", durable=False)
        truth = pl.DataFrame(truth_rows, schema=schema.polars_schema("truth"))
        tdates = truth["trace_id"].replace_strict(tdate, return_dtype=pl.String)
        for d in tdates.unique().sort():
            schema.write_partition(truth.filter(tdates == d), out, "truth", d, h.name, "part-0.parquet", durable=False)
    if c_rows["probe"]:
        cs = schema.polars_schema("counters")
        c = pl.DataFrame(c_rows, schema={k: (pl.Int64 if k == "snapshot_time" else cs[k]) for k in c_rows})
        c = c.with_columns(pl.from_epoch("snapshot_time", "ns").dt.replace_time_zone("UTC"), pl.lit(h.name).alias("host"),
                           pl.lit(SNAP_S).alias("interval_s"), pl.lit(h.release).alias("kernel_release"),
                           pl.lit(h.vendor).alias("vendor"), pl.lit("rdma").alias("probe_set"), pl.lit(True).alias("live"),
                           pl.lit(0, pl.Int64).alias("lost_records"))
        dates = c["snapshot_time"].dt.date().cast(pl.String)
        for d in dates.unique().sort():
            f = schema.write_partition(c.filter(dates == d), out, "counters", d, h.name, "part-0.parquet", durable=False)
            schema.write_counter_buckets(f, durable=False)

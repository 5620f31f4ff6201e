"""fleetgen4: a fourth, blind generator of RDMA fleet data with ground truth.

Written from reference/rdma_control_path.yaml, tracer/schema.py, README.md and
docs/architecture.md only, before reading the simulator, tests/fleetgen*, or the learn/audit
code: data shaped by someone who did not tune the audit. Shapes it stresses:

- SMALL fleets (16-48 hosts): per-family statistics are thin.
- Routine errors retried many times per call: a library probing 5-20 GID table slots per
  process start (ENODATA from rdma_get_gid_attr), with in-kernel aggregation (repeat_count).
- Diurnal load: in-job operation rates vary ~10x over the day with no fault.
- Tracer daemon restarts (a snapshot gap, the calls in it unseen, a short first interval after)
  and a host down for hours (no snapshots at all).
- Probe sets that differ per host: vendor namespace gate (mlx5 / bnxt_re / irdma) and kernel
  release (no mlx5_ib_dev_res_srq_init on the old upstream kernel; ib_umem_get_peer and peer
  memory only on MLNX_OFED; ioctl REG_MR only on ~6.17+): a probe absent never has counters.
- Expected errors on one vendor only (irdma refusing ibv_query_device_ex's udata) and on one
  kernel release only (rdma-core's ioctl REG_MR refused by the 5.15 kernel, then write()).
- A fault on one host (firmware commands time out: persistent, a crash loop) and one
  widespread fault (the peer-memory client gone on half the OFED hosts after a rollout).
- A fault with a routine family's errno at another depth and caller: ENOENT from
  rdma_lookup_get_uobject under modify_qp (a QP handle gone under a running job, fatal) beside
  the routine ENOENT of a second dereg_mr at teardown (depth 3, under __uobj_get_destroy).
- Errors inside successful trees (rdma_counter_unbind_qp's ignored EINVAL on every destroy_qp):
  counted, never a failure.
- A call that fails once and succeeds on retry. Decided by what an SRE wants: when the errno
  tells the caller to retry (EAGAIN: firmware out of resources, mlx5 NO_RES) and the retry
  succeeds, it is routine (`fw_no_res_retried`); a firmware command TIMEOUT that a retry got
  past is still a fault (`fw_cmd_timeout_retried`): the job survived, the firmware did not
  answer, and that is what an SRE wants to see before it becomes the wedged host.

`generate(out_dir, hosts, hours, seed) -> summary`; the truth table has one row per trace in
the events (schema TRUTH); `<out_dir>/fleetgen4.json` holds the summary: `roles` per host and
`alert_hosts` (host -> the errnos a host alert may name: hosts with a host-level fault)."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import metadata_list, write_partition

from .trees import PLATFORMS, Frame, N, Platform, frames_fail, frames_ok, layer_of, operation, trees

# label -> (tree, path below the root, errno, ancestors' mapped errno, cleanup frames under a probe)
ROUTINE: dict[str, tuple] = {
    "gid_probe_empty_slot": ("query_gid", ["ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "rdma_get_gid_attr"], "ENODATA", {}, {}),
    "irdma_query_device_ex_udata": ("query_device_ex", ["irdma_query_device"], "EINVAL", {}, {}),
    "reg_mr_ioctl_unsupported": ("ioctl_only", [], "EPROTONOSUPPORT", {}, {}),
    "dereg_mr_already_gone": ("dereg_mr", ["__uobj_perform_destroy", "__uobj_get_destroy", "rdma_lookup_get_uobject"], "ENOENT", {}, {}),
    "fw_no_res_retried": ("create_cq", ["create_cq", "mlx5_ib_create_cq", "mlx5_core_create_cq", "mlx5_cmd_exec"], "EAGAIN", {},
                          {"create_cq": ["rdma_alloc_abort_uobject"]}),
    "dealloc_pd_busy_at_teardown": ("dealloc_pd", ["__uobj_perform_destroy", "__uobj_get_destroy", "uobj_destroy"], "EBUSY", {}, {}),
}
FAULTS: dict[str, tuple] = {
    "peer_client_missing": ("reg_mr_gpu", ["mlx5_ib_reg_user_mr", "ib_umem_get_peer", "ib_peer_umem_get"], "EFAULT", {},
                            {"ib_uverbs_reg_mr": ["rdma_alloc_abort_uobject"]}),
    "fw_cmd_timeout_wedged": ("alloc_pd", ["mlx5_ib_alloc_pd", "mlx5_cmd_exec"], "ETIMEDOUT", {},
                              {"ib_uverbs_alloc_pd": ["rdma_alloc_abort_uobject"]}),
    "fw_cmd_timeout_retried": ("create_qp", ["create_qp", "ib_create_qp_user", "mlx5_ib_create_qp", "mlx5_qpc_create_qp", "mlx5_cmd_exec"],
                               "ETIMEDOUT", {}, {"create_qp": ["rdma_alloc_abort_uobject"]}),
    "qp_handle_gone": ("modify_qp:RTR->RTS", ["modify_qp", "rdma_lookup_get_uobject"], "ENOENT",
                       {"modify_qp": "EINVAL", "ib_uverbs_modify_qp": "EINVAL"}, {}),
}
# routine errors inside successful trees (the caller ignores them): the trace is good, and holds
# only an expected error (the truth's expected_error)
IGNORED: dict[str, str] = {"rdma_counter_unbind_qp": "counter_unbind_without_counter"}
START = datetime(2026, 3, 2, 3, 0, tzinfo=UTC)  # 03:00 UTC: the day's trough, load rises after
SNAP_S = 5.0
WINDOW_EVERY_S, WINDOW_S = 300.0, 10.0  # capture windows: every good trace in them is kept, timed
EMIT_K = 4  # trees emitted per failure signature per snapshot interval; the rest in repeat_count
TICK_NS = 4_000_000


class Template:
    """One concrete tree: frames, the per-probe counts it adds, and its truth."""

    def __init__(self, name: str, frames: list[Frame], label: str | None = None, expected: bool = False,
                 origin: tuple[str, str, str] | None = None):
        self.name, self.frames, self.label, self.expected, self.origin = name, frames, label, expected, origin
        self.failed = frames[0][4] is not None
        self.op = operation(name)
        inner = [f for f in frames if f[4]]
        if not self.failed and inner:
            self.label, self.expected = IGNORED[inner[0][0]], True
            self.origin = (inner[0][0], inner[0][4], inner[0][1])


def templates_for(p: Platform) -> dict[str, Template]:
    t = trees(p)
    out = {name: Template(name, frames_ok(tree)) for name, tree in t.items()}
    for labels, expected in ((ROUTINE, True), (FAULTS, False)):
        for label, (tree, path, errno, mask, cleanup) in labels.items():
            if tree == "ioctl_only":
                frames, origin, layer = frames_fail(N("ib_uverbs_ioctl"), [], errno)
            elif tree not in t:
                continue
            else:
                try:
                    frames, origin, layer = frames_fail(t[tree], path, errno, mask, cleanup)
                except KeyError:
                    continue  # this platform has no such frame (another vendor's driver)
            # a peer client that is not there: ib_get_peer_client returned NULL
            frames = [(pr, ly, d, 0 if pr == "ib_get_peer_client" else r, e) for pr, ly, d, r, e in frames]
            name = "reg_mr" if tree in ("ioctl_only", "reg_mr_gpu") else tree
            out[label] = Template(name, frames, label, expected, (origin, errno, layer))
    return out


def load(t_s: float) -> float:
    """Diurnal load 0.1 .. 1.0: trough at 03:00 UTC, peak at 13:00."""
    h = (START.hour + t_s / 3600.0) % 24
    return 0.1 + 0.9 * np.sin(np.pi * (h - 3) / 20) ** 2 if 3 <= h <= 23 else 0.1


class Host:
    def __init__(self, name: str, platform: str, rng: np.random.Generator, hours: float):
        self.name, self.pname, self.p = name, platform, PLATFORMS[platform]
        self.rng, self.end = rng, hours * 3600.0
        self.tmpl = templates_for(self.p)
        self.calls: list[tuple[float, str, int, int, str, str]] = []  # t, template, pid, tid, job, comm
        self.roles: list[str] = []
        self.down: tuple[float, float] | None = None
        self.restarts: list[tuple[float, float]] = []
        self.peer_from = self.wedge_from = None
        self.retry_timeouts: list[float] = []
        self.next_pid = int(rng.integers(20_000, 60_000))

    def alive(self, t: float) -> bool:
        return t < self.end and not (self.down and self.down[0] <= t < self.down[1])


class Job:
    """One job's processes on a host: init, steady state, teardown (or death at a fault)."""

    def __init__(self, host: Host, t0: float, jid: str, comm: str, buggy: bool):
        self.h, self.t, self.jid, self.comm, self.buggy = host, t0, jid, comm, buggy
        self.pid = host.next_pid
        host.next_pid += int(host.rng.integers(3, 40))
        self.dead = False

    def call(self, name: str, tid_off: int = 0, gap: float = 0.05) -> None:
        r = self.h.rng
        self.t += float(r.exponential(gap))
        if not self.h.alive(self.t):
            self.dead = True
            return
        self.h.calls.append((self.t, name, self.pid, self.pid + tid_off, self.jid, self.comm))

    def fails(self, label: str, tid_off: int = 0) -> None:
        self.call(label, tid_off)
        self.dead = True

    def run(self, duration: float) -> float:
        h, r, p = self.h, self.h.rng, self.h.p
        wedged = h.wedge_from is not None and self.t >= h.wedge_from
        peer_bad = h.peer_from is not None
        self.call("query_device_ex" if p.vendor != "irdma" else "irdma_query_device_ex_udata")
        if p.vendor == "irdma":
            self.call("query_device", gap=0.002)  # rdma-core's fallback to the legacy command
        for _ in range(int(r.integers(1, 3))):
            self.call("query_port")
        # GID table walk: a few populated slots, then 5-20 empty ones probed one by one
        for _ in range(int(r.integers(2, 5))):
            self.call("query_gid", gap=0.001)
        for _ in range(int(r.integers(5, 21))):
            self.call("gid_probe_empty_slot", gap=0.001)
        if wedged and p.vendor == "mlx5":
            self.fails("fw_cmd_timeout_wedged")
            return self.t
        self.call("alloc_pd")
        nq, nmr = int(r.integers(2, 7)), int(r.integers(4, 13))
        for _ in range(nq):
            if p.vendor == "mlx5" and r.random() < 0.04:
                self.call("fw_no_res_retried")
                self.t += 0.01  # retried after a short back-off
            self.call("create_cq")
        if not p.ofed and not p.reg_mr_ioctl:
            self.call("reg_mr_ioctl_unsupported")  # rdma-core probes the ioctl once, falls back to write()
        for i in range(nmr):
            gpu = p.ofed and i >= nmr // 2
            if gpu and peer_bad and self.t >= h.peer_from:
                self.fails("peer_client_missing")
                return self.t
            self.call("reg_mr_gpu" if gpu else "reg_mr")
        for _ in range(nq):
            if p.vendor == "irdma":
                self.call("reg_mr")  # irdma: user QP buffers are registered first (reg_type QP)
            if h.retry_timeouts and self.t >= h.retry_timeouts[0]:
                h.retry_timeouts.pop(0)
                self.call("fw_cmd_timeout_retried")
                self.t += 0.5
            self.call("create_qp")
        bug_at = int(r.integers(0, nq)) if self.buggy and r.random() < 0.5 else -1
        for q in range(nq):
            for tr in ("RESET->INIT", "INIT->RTR"):
                self.call(f"modify_qp:{tr}", gap=0.02)
            if q == bug_at:
                self.fails("qp_handle_gone")
                return self.t
            self.call("modify_qp:RTR->RTS", gap=0.02)
        if self.dead:
            return self.t
        # steady state: MR churn from a worker thread, its rate following the load
        stop = self.t + duration
        while not self.dead:
            rate = 8.0 * load(self.t) / 60.0
            self.t += float(r.exponential(1.0 / rate))
            if self.t >= stop:
                break
            gpu = p.ofed and r.random() < 0.3
            if gpu and peer_bad and self.t >= h.peer_from:
                self.fails("peer_client_missing", tid_off=1)
                return self.t
            if h.wedge_from is not None and self.t >= h.wedge_from and p.vendor == "mlx5":
                self.dead = True  # the firmware stopped answering: the job hangs and is killed
                return h.wedge_from
            self.call("reg_mr_gpu" if gpu else "reg_mr", tid_off=1, gap=0.0)
            self.call("dereg_mr", tid_off=1, gap=0.3)
        if self.dead:
            return self.t
        self.t = max(self.t, stop)
        for _ in range(nq):
            self.call("destroy_qp", gap=0.01)
        busy = self.comm == "python3" and r.random() < 0.5
        if busy:
            self.call("dealloc_pd_busy_at_teardown")  # the framework frees the PD before its MRs
        for _ in range(nmr + (nq if p.vendor == "irdma" else 0)):
            self.call("dereg_mr", gap=0.005)
        if r.random() < 0.6:
            for _ in range(int(r.integers(1, 4))):
                self.call("dereg_mr_already_gone", gap=0.002)  # a second cleanup pass
        self.call("dealloc_pd")
        return self.t


def plan(hosts: int, hours: float, rng: np.random.Generator) -> list[Host]:
    n = max(hosts, 8)
    shares = {"mlx5-ofed": 0.5, "mlx5-old": 0.2, "bnxt": 0.15}
    counts = {k: max(2, round(v * n)) for k, v in shares.items()}
    counts["irdma"] = max(2, n - sum(counts.values()))
    names = [p for p, c in counts.items() for _ in range(c)][:n]
    rng.shuffle(names)
    out = [Host(f"gpu{i:03d}", pn, np.random.default_rng(rng.integers(2**63)), hours) for i, pn in enumerate(names)]
    end = hours * 3600
    ofed = [h for h in out if h.pname == "mlx5-ofed"]
    mlx5 = [h for h in out if h.p.vendor == "mlx5"]
    # the widespread fault: a rollout removes the peer-memory client from half the OFED hosts
    roll = end * float(rng.uniform(0.25, 0.4))
    for h in list(rng.permutation(ofed))[: max(2, len(ofed) // 2)]:
        h.peer_from = roll + float(rng.uniform(0, 0.15 * end))
        h.roles.append("peer_client_missing")
    others = [h for h in mlx5 if h.peer_from is None]
    wedged = others[0]
    wedged.wedge_from = end * float(rng.uniform(0.3, 0.5))
    wedged.roles.append("fw_cmd_timeout_wedged")
    for h in others[1:3]:
        h.retry_timeouts = sorted(float(x) for x in rng.uniform(0.1 * end, 0.9 * end, int(rng.integers(1, 3))))
        h.roles.append("fw_cmd_timeout_retried")
    rest = [h for h in out if not h.roles]
    down = rest[0]
    down.down = (end * 0.2, end * 0.2 + min(4 * 3600.0, end * 0.5))
    down.roles.append("down")
    for h in rest[1:4]:
        ts = sorted(float(x) for x in rng.uniform(0.05 * end, 0.95 * end, int(rng.integers(1, 4))))
        h.restarts = [(t, t + float(rng.uniform(30, 300))) for t in ts]
        h.roles.append("daemon_restarts")
    return out


def simulate_host(h: Host) -> None:
    r = h.rng
    t, k = float(r.uniform(0, 120)), 0
    trainer = r.random() < 0.35  # hosts that also run the buggy trainer build
    while t < h.end:
        if not h.alive(t):
            t = h.down[1] if h.down and t < h.down[1] else h.end
            continue
        comm = "trainer_v2" if trainer and r.random() < 0.4 else str(r.choice(["python3", "all_reduce_perf"]))
        job = Job(h, t, f"{h.name}-j{k}", comm, buggy=comm == "trainer_v2")
        k += 1
        end = job.run(float(r.uniform(5, 40)) * 60)
        # crashed: the scheduler restarts it in 1-3 min; else the next job after an idle gap
        t = end + (float(r.uniform(60, 180)) if job.dead else float(r.exponential(90 / load(end))))
    # an exporter polls the port state every ~30 s, whatever the load
    t = float(r.uniform(0, 30))
    while t < h.end:
        if h.alive(t):
            h.calls.append((t, "query_port", 900 + int(t // 86400), 900, "", "rdma-exporter"))
        t += float(r.uniform(25, 35))
    h.calls.sort(key=lambda c: c[0])


def snapshots(h: Host) -> tuple[np.ndarray, np.ndarray]:
    """Snapshot times and each one's interval start: daemon segments between restarts/downtime."""
    segs, a = [], float(h.rng.uniform(0, SNAP_S))
    cuts = sorted(h.restarts + ([h.down] if h.down else []))
    for g0, g1 in cuts:
        segs.append((a, g0))
        a = g1
    segs.append((a, h.end))
    times, starts = [], []
    for a, b in segs:
        s = np.arange(a + SNAP_S, b + 1e-9, SNAP_S)
        if len(s):
            times.append(s)
            starts.append(np.concatenate([[a], s[:-1]]))
    return np.concatenate(times), np.concatenate(starts)


def generate(out_dir: str | os.PathLike, hosts: int = 32, hours: float = 6.0, seed: int = 0) -> dict:
    root = Path(out_dir)
    rng = np.random.default_rng(seed)
    fleet = plan(hosts, hours, rng)
    summary: dict = {"hosts": len(fleet), "hours": hours, "seed": seed, "roles": {}, "alert_hosts": {},
                     "traces": 0, "truth": defaultdict(int), "calls": 0}
    for h in fleet:
        simulate_host(h)
        summary["roles"][h.name] = h.roles + [h.pname]
        if "peer_client_missing" in h.roles:
            summary["alert_hosts"][h.name] = ["EFAULT"]
        if {"fw_cmd_timeout_wedged", "fw_cmd_timeout_retried"} & set(h.roles):
            summary["alert_hosts"][h.name] = ["ETIMEDOUT"]
        write_host(root, h, summary)
    summary["truth"] = dict(summary["truth"])
    (root / "fleetgen4.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


def write_host(root: Path, h: Host, summary: dict) -> None:
    r = h.rng
    snap_t, snap_a = snapshots(h)
    names = list(h.tmpl)
    idx = {n: i for i, n in enumerate(names)}
    times = np.array([c[0] for c in h.calls])
    si = np.searchsorted(snap_t, times)  # the snapshot whose interval holds the call
    ok = (si < len(snap_t))
    ok[ok] &= times[ok] > snap_a[si[ok]]  # calls while the daemon was down are not seen
    summary["calls"] += int(ok.sum())
    # the probe set attached here: every probe of this platform's trees (another vendor's driver
    # or a function this kernel lacks is not attached: it never has counters)
    probes = list(dict.fromkeys(f[0] for t in h.tmpl.values() for f in t.frames))
    pidx = {p: i for i, p in enumerate(probes)}
    errnos = sorted({f[4] for t in h.tmpl.values() for f in t.frames if f[4]})
    eidx = {e: i for i, e in enumerate(errnos)}
    inc = np.zeros((len(names), len(probes)), np.int64)
    err = np.zeros((len(names), len(probes), len(errnos)), np.int64)
    for n, tm in h.tmpl.items():
        for pr, _ly, _d, _ret, e in tm.frames:
            inc[idx[n], pidx[pr]] += 1
            if e:
                err[idx[n], pidx[pr], eidx[e]] += 1
    per = np.zeros((len(snap_t), len(names)), np.int64)
    ti = np.array([idx[c[1]] for c in h.calls], np.int64)
    np.add.at(per, (si[ok], ti[ok]), 1)
    calls = per @ inc
    fails = np.einsum("st,tpe->spe", per, err)
    write_counters(root, h, snap_t, snap_a, probes, errnos, calls, fails)
    # events: every failure (first EMIT_K per signature per interval) and good trees in windows
    phase = float(r.uniform(0, WINDOW_EVERY_S))
    boot = int(r.integers(10**12, 10**14))
    emitted: dict[tuple[int, int], int] = {}
    last: dict[tuple[int, int], int] = {}
    traces: list[tuple] = []  # (call index, timed, repeat)
    for i in np.flatnonzero(ok):
        t, name = h.calls[i][0], h.calls[i][1]
        tm = h.tmpl[name]
        timed = ((t - phase) % WINDOW_EVERY_S) < WINDOW_S
        if not tm.failed:
            if timed:
                traces.append([i, True, 1])
            continue
        key = (int(si[i]), int(ti[i]))
        seen = emitted.get(key, 0)
        emitted[key] = seen + 1
        if seen >= EMIT_K:
            traces[last[key]][2] += 1  # counted in-kernel: the last example stands for it
            continue
        last[key] = len(traces)
        traces.append([i, timed, 1])
    cols: dict[str, list] = defaultdict(list)
    truth: dict[str, list] = defaultdict(list)
    for n, (i, timed, rep) in enumerate(traces):
        t, name, pid, tid, job, comm = h.calls[i]
        tm = h.tmpl[name]
        tid_s = f"{h.name}:{boot % 997}:{n}"
        t_ns = boot + int(t * 1e9)
        wall = START + timedelta(seconds=t)
        nf = len(tm.frames)
        if timed:
            steps = r.integers(800, 4000, nf) + np.array([40_000 if f[0] == "mlx5_cmd_exec" else 0 for f in tm.frames])
            ts = t_ns + np.concatenate([[0], np.cumsum(steps[:-1])])
            last = int(ts[-1] + 2000)
            lat = []
            for j, f in enumerate(tm.frames):
                nxt = next((k for k in range(j + 1, nf) if tm.frames[k][2] <= f[2]), None)
                lat.append(int((ts[nxt] - 300 if nxt is not None else last + 300 * (nf - j)) - ts[j]))
            start, end = wall, wall + timedelta(microseconds=(max(lat) // 1000))
            ts_l = [int(x) for x in ts]
        else:
            tick = (t_ns // TICK_NS) * TICK_NS
            ts_l, lat = [tick] * nf, [None] * nf
            start = end = START + timedelta(microseconds=((tick - boot) // 1000))
        for j, (pr, ly, d, ret, e) in enumerate(tm.frames):
            cols["trace_id"].append(tid_s)
            cols["seq"].append(j)
            cols["ts_ns"].append(ts_l[j])
            cols["pid"].append(pid)
            cols["tid"].append(tid)
            cols["ppid"].append(1 if comm == "rdma-exporter" else pid - 1)
            cols["comm"].append(comm)
            cols["probe"].append(pr)
            cols["layer"].append(ly)
            cols["depth"].append(d)
            cols["ret"].append(ret)
            cols["errno"].append(e)
            cols["latency_ns"].append(lat[j])
            cols["arg"].append(name.split(":")[1] if pr == "ib_uverbs_modify_qp" and ":" in name else None)
            cols["kind"].append("failure" if tm.failed else "good")
            cols["command"].append(tm.op)
            cols["exit_status"].append(tm.frames[0][3] if tm.failed else 0)
            cols["start_time"].append(start)
            cols["end_time"].append(end)
            cols["kernel_release"].append(h.p.kernel)
            cols["lost_events"].append(0)
            cols["job_id"].append(job or None)
            cols["metadata"].append(metadata_list({"vendor": h.p.vendor}))
            cols["repeat_count"].append(rep if rep > 1 else None)
        truth["trace_id"].append(tid_s)
        truth["kind"].append("failure" if tm.failed else "good")
        truth["root_cause"].append(tm.label)
        truth["bifurcation_probe"].append(tm.origin[0] if tm.origin else None)
        truth["bifurcation_errno"].append(tm.origin[1] if tm.origin else None)
        truth["origin_layer"].append(tm.origin[2] if tm.origin else None)
        truth["expected_error"].append(tm.expected)
        truth["held_out"].append(bool(not tm.failed and r.random() < 0.1))
        summary["truth"][tm.label or "good"] += 1
    summary["traces"] += len(traces)
    if not traces:
        return
    date = START.date().isoformat()  # hours <= 21: one day (03:00 + hours)
    write_partition(pa.table(dict(cols)), root, "events", date, h.name, "part-0.parquet", durable=False)
    truth["host"] = [h.name] * len(truth["trace_id"])
    write_partition(pa.table(dict(truth)), root, "truth", date, h.name, "part-0.parquet", durable=False)


def write_counters(root: Path, h: Host, snap_t, snap_a, probes, errnos, calls, fails) -> None:
    """One row per (snapshot, probe) with calls in the interval; an idle snapshot still reports
    one (all-zero) row, so that a snapshot never goes missing for lack of calls."""
    n_p = len(probes)
    s_idx, p_idx = np.nonzero(calls)
    idle = np.setdiff1d(np.arange(len(snap_t)), s_idx)
    root0 = next(i for i, p in enumerate(probes) if p.startswith("ib_uverbs_"))
    key = np.concatenate([s_idx * n_p + p_idx, idle * n_p + root0])
    key.sort()
    s_idx, p_idx = key // n_p, key % n_p
    fs, fp, fe = np.nonzero(fails)
    row = np.searchsorted(key, fs * n_p + fp)  # every failing (snapshot, probe) had calls
    counts = fails[fs, fp, fe]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=len(key)))]).astype(np.int32)
    ec = pa.ListArray.from_arrays(pa.array(offsets), pa.StructArray.from_arrays(
        [pa.array(np.array(errnos, dtype=object)[fe] if len(fe) else [], pa.string()), pa.array(counts, pa.int64())],
        names=["errno", "count"]))
    n = len(key)
    layers = np.array([layer_of(p) for p in probes], dtype=object)
    when = pa.array((START.timestamp() + snap_t[s_idx]) * 1e9, pa.float64()).cast(pa.int64()).cast(pa.timestamp("ns", "UTC"))
    rows = {
        "host": [h.name] * n, "snapshot_time": when,
        "interval_s": np.round(snap_t[s_idx] - snap_a[s_idx], 3), "kernel_release": [h.p.kernel] * n,
        "vendor": [h.p.vendor] * n, "probe_set": ["rdma"] * n,
        "probe": pa.array(np.array(probes, dtype=object)[p_idx], pa.string()),
        "layer": pa.array(layers[p_idx], pa.string()), "live": [True] * n,
        "invocations": calls[s_idx, p_idx], "failures": np.bincount(row, weights=counts, minlength=n).astype(np.int64),
        "errno_counts": ec, "lost_records": [0] * n,
    }
    date = START.date().isoformat()
    write_partition(pa.table(rows), root, "counters", date, h.name, "part-0.parquet", durable=False)

"""What the fleet tracer on each host writes about those calls: events, counters, truth.

- Counters: every call, exact, in 5-second snapshots on the host's own grid (its clock skewed,
  each snapshot's time jittered, some snapshots delivered twice, rows not in time order); all
  attached probes report a zero row every half hour even when idle.
- Events: emit on failure, the first two trees of a signature per snapshot interval, the
  second standing for the rest (repeat_count); successful trees only inside capture windows
  (60 s every 15 min, staggered per host). Inside a window frames carry entry times and
  latencies; outside, every frame's ts_ns is the kernel tick the root returned in (4 ms) and
  latency_ns is null.
- A host whose spool disk was full loses its call trees (the counters stay): their truth rows
  are marked unobserved.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa

from . import calls as C
from .fleet import Call, Host

SNAP = 5.0
K_PER_INTERVAL = 2
WINDOW_EVERY, WINDOW_LEN = 900.0, 60.0
TICK_NS = 4_000_000


def _errno_of(frames, errnos):
    return tuple((f.probe, e) for f, e in zip(frames, errnos, strict=True))


class HostTracer:
    def __init__(self, h: Host, start: datetime, span: float, rng: np.random.Generator):
        self.h, self.start, self.span, self.rng = h, start, span, rng
        self.phase = float(rng.uniform(0, SNAP))
        self.window_phase = float(rng.uniform(0, WINDOW_EVERY))
        self.counts: dict[tuple[int, str], list] = {}
        self.events: dict[str, list] = defaultdict(list)
        self.truth: list[dict] = []
        self.sig_seen: dict[tuple, list] = {}
        self.boots = [(0.0, uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | int(rng.integers(0, 2**63))).hex)]
        if h.reboot is not None:
            self.boots.append((h.reboot, uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | 7).hex))
        self.recno = int(rng.integers(0, 2**40))
        self.unobserved = 0
        self.attached: set[str] = set()

    # clocks ------------------------------------------------------------------------------
    def mono_ns(self, t: float) -> int:
        h = self.h
        if h.reboot is not None and t >= h.reboot:
            return int((t - h.reboot - 20.0) * 1e9)  # booted 20 s before the reboot instant + gap
        return int((h.boot_mono + t) * 1e9)

    def wall(self, t: float) -> datetime:
        return self.start + timedelta(seconds=t + self.h.skew + 2e-6 * t)

    def interval(self, t: float) -> int:
        return int((t - self.h.appear - self.phase) // SNAP)

    def in_window(self, t: float) -> bool:
        return (t - self.window_phase) % WINDOW_EVERY < WINDOW_LEN

    def boot_of(self, t: float) -> str:
        return self.boots[-1][1] if len(self.boots) > 1 and t >= self.boots[1][0] else self.boots[0][1]

    # one call ------------------------------------------------------------------------------
    def record(self, c: Call) -> None:
        h = self.h
        stack = h.stack
        frames = C.tree(c.op, h.vendor, stack, c.variant)
        errnos: list[str | None] = [None] * len(frames)
        if c.fail is not None:
            origin, errno, nth, rewrite = c.fail
            frames, errnos = C.fail(frames, origin, errno, nth=nth, rewrite=rewrite)
        k = self.interval(c.t)
        for f, e in zip(frames, errnos, strict=True):
            cell = self.counts.get((k, f.probe))
            if cell is None:
                cell = self.counts[(k, f.probe)] = [0, 0, {}]
            cell[0] += 1
            if e is not None:
                cell[1] += 1
                cell[2][e] = cell[2].get(e, 0) + 1
        timed = self.in_window(c.t)
        if c.fail is None:
            if timed:
                self.emit(c, frames, errnos, timed, "good")
            return
        sig = (k, c.op, c.variant, _errno_of(frames, errnos))
        seen = self.sig_seen.get(sig)
        if seen is None:
            self.sig_seen[sig] = [1, None]
            self.emit(c, frames, errnos, timed, "failure")
        elif seen[0] == 1:
            seen[0] = 2
            seen[1] = self.emit(c, frames, errnos, timed, "failure")
        else:  # counted in the kernel; the second example stands for it
            seen[0] += 1
            if seen[1] is not None:
                self.events["repeat_count"][seen[1][0]:seen[1][1]] = [seen[0] - 1] * (seen[1][1] - seen[1][0])

    def emit(self, c: Call, frames, errnos, timed: bool, kind: str) -> tuple[int, int] | None:
        h, rng = self.h, self.rng
        fail = c.fail
        truth = {
            "host": h.name, "kind": kind, "root_cause": c.label,
            "bifurcation_probe": fail[0] if fail else None, "bifurcation_errno": fail[1] if fail else None,
            "origin_layer": C.layer_of(fail[0]) if fail else None, "expected_error": bool(c.routine) if fail else False,
            "held_out": bool(kind == "good" and rng.random() < 0.15),
        }
        if h.spool_full and h.spool_full[0] <= c.t < h.spool_full[1]:
            if kind == "good":
                return None  # a good tree that never reached the dataset is nobody's truth
            self.unobserved += 1
            truth["trace_id"] = f"{h.name}:unobserved-{self.unobserved}"
            self.truth.append(truth)
            return None
        self.recno += int(rng.integers(1, 9))
        cpu = int(rng.integers(0, 96))
        trace_id = f"{self.boot_of(c.t)[:12]}.{cpu:02x}{self.recno:011x}"
        truth["trace_id"] = trace_id
        self.truth.append(truth)
        n = len(frames)
        t_mono = self.mono_ns(c.t)
        if timed:
            ts, lat = self._timing(frames, errnos, t_mono)
            start = self.wall(c.t)
            end = start + timedelta(microseconds=lat[0] / 1000)
        else:
            tick = (t_mono // TICK_NS + 1) * TICK_NS
            ts, lat = [tick] * n, [None] * n
            start = end = self.wall(c.t + (tick - t_mono) / 1e9)
        rets = []
        for f, e in zip(frames, errnos, strict=True):
            if e is not None:
                rets.append(-C.ERRNO_VALUE[e])
            elif f.probe in C.POINTER_RETURNING:
                rets.append(int(0xFFFF888100000000 + int(rng.integers(0, 2**30)) * 64) - 2**64)
            else:
                rets.append(0)
        ev = self.events
        first = len(ev["trace_id"])
        ev["trace_id"] += [trace_id] * n
        ev["seq"] += range(n)
        ev["ts_ns"] += ts
        ev["pid"] += [c.pid] * n
        ev["tid"] += [c.tid] * n
        ev["ppid"] += [c.ppid] * n
        ev["comm"] += [c.comm] * n
        ev["probe"] += [f.probe for f in frames]
        ev["layer"] += [f.layer for f in frames]
        ev["depth"] += [f.depth for f in frames]
        ev["ret"] += rets
        ev["errno"] += list(errnos)
        ev["latency_ns"] += lat
        ev["path"] += [c.path] + [None] * (n - 1)
        ev["arg"] += [c.variant or None] + [None] * (n - 1)
        ev["kind"] += [kind] * n
        ev["command"] += [c.op] * n
        ev["exit_status"] += [max(-(2**31), min(2**31 - 1, rets[0]))] * n
        ev["start_time"] += [start] * n
        ev["end_time"] += [end] * n
        ev["kernel_release"] += [h.kernel_at(c.t)] * n
        ev["lost_events"] += [0] * n
        ev["job_id"] += [c.job] * n
        meta = None if c.meta is None else [{"key": k2, "value": str(v)} for k2, v in sorted(c.meta.items())]
        ev["metadata"] += [meta] * n
        ev["repeat_count"] += [None] * n
        return first, first + n

    def _timing(self, frames, errnos, t0: int) -> tuple[list[int], list[int]]:
        rng = self.rng
        n = len(frames)
        ts, lat = [0] * n, [0] * n
        cur, stack = t0, []
        for i, f in enumerate(frames):
            while stack and frames[stack[-1]].depth >= f.depth:
                j = stack.pop()
                cur += int(rng.integers(150, 900))
                lat[j] = cur - ts[j]
            cur += int(rng.integers(80, 600))
            ts[i] = cur
            stack.append(i)
            if f.probe == "mlx5_cmd_exec":
                cur += 60_000_000_000 if errnos[i] == "ETIMEDOUT" else int(rng.integers(25_000, 400_000))
            elif f.probe in ("ib_umem_get", "__ib_umem_get", "ib_peer_umem_get", "ib_umem_dmabuf_map_pages"):
                cur += int(rng.integers(20_000, 2_500_000))
            else:
                cur += int(rng.integers(300, 6_000))
        while stack:
            j = stack.pop()
            cur += int(rng.integers(150, 900))
            lat[j] = cur - ts[j]
        return ts, lat

    # counters --------------------------------------------------------------------------------
    def counter_rows(self) -> list[dict]:
        h, rng = self.h, self.rng
        probes = set()
        for op, variants in (("alloc_pd", [""]), ("dealloc_pd", [""]), ("create_cq", [""]), ("create_qp", [""]),
                             ("modify_qp", ["RESET->INIT", "INIT->RTR"]), ("destroy_qp", [""]),
                             ("reg_mr", ["", "gpu", "qpbuf"]), ("reg_dmabuf_mr", [""]), ("dereg_mr", [""]),
                             ("query_device_ex", [""]), ("query_device", [""]), ("query_port", [""]),
                             ("query_gid", [""]), ("openat", [""])):
            for v in variants:
                probes.update(f.probe for f in C.tree(op, h.vendor, h.stack, v))
        last = self.interval(self.span)
        idle = {k: {} for k in range(0, last + 1, 360)}
        by_k: dict[int, dict[str, list]] = defaultdict(dict)
        for (k, probe), cell in self.counts.items():
            by_k[k][probe] = cell
        for k in idle:
            for p in probes:
                by_k[k].setdefault(p, [0, 0, {}])
        rows = []
        for k in sorted(by_k):
            t_end = h.appear + self.phase + SNAP * (k + 1)
            if h.reboot is not None and h.reboot <= t_end < h.reboot + 200:
                continue  # the host is rebooting: the tracer is down
            if t_end > self.span:
                continue
            snap = self.wall(t_end) + timedelta(seconds=float(rng.normal(0, 0.03)))
            interval_s = SNAP + float(rng.normal(0, 0.02))
            kernel = h.kernel_at(t_end)
            for p, (inv, fails, hist) in sorted(by_k[k].items()):
                rows.append({
                    "snapshot_time": snap, "interval_s": interval_s, "kernel_release": kernel, "vendor": h.vendor,
                    "probe_set": "syscalls" if p == "openat" else "rdma", "probe": p, "layer": C.layer_of(p),
                    "live": True, "invocations": inv, "failures": fails,
                    "errno_counts": [{"errno": e, "count": n} for e, n in sorted(hist.items())] or None,
                    "lost_records": 0,
                })
        return rows


def events_table(ev: dict[str, list]) -> pa.Table:
    from tracer import schema

    cols = {name: ev[name] for name in schema.EVENTS.names if name in ev}
    fields = [f for f in schema.EVENTS if f.name in cols]
    return pa.Table.from_pydict(cols, schema=pa.schema(fields))

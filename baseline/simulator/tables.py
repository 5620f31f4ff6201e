"""Turn hosts' calls into the tracer's tables: events (emitted traces), counters, truth.

What the fleet tracer records, and so what is written here:
- a failure of a top-level probed call emits its whole probed call tree (every frame with its
  own return value), always;
- a success emits only when it is sampled inside a capture window (rate `good_rate`) and took
  less than 50 ms: a good trace;
- counters count every invocation of every probe per 5-second interval, emitted or not.

Two steps, so that fleet-scale runs pay per row, not per host:
1. `host_part` (per host, numpy only): every row of the host's three tables as numpy arrays,
   strings as indices into one static vocabulary (`VOCAB`: probe names of every platform,
   layers, errnos, commands, labels...). This step draws from the host's random generator.
2. `assemble` (per batch of hosts): concatenates the parts and builds ONE Arrow table per table
   for the whole batch, in the exact schema; strings are gathered from the vocabulary once.
   Each host's rows stay contiguous (`Batch.rows`), so a writer slices them zero-copy.
A host's rows do not depend on which batch it is in, so files are identical whatever the batching.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from baseline.simulator import catalog as cat
from baseline.simulator.host import (
    GOOD_LATENCY_BOUND_NS,
    INTERVAL_NS,
    IS_FAILURE,
    NS,
    FleetPlan,
    HostProfile,
    HostResult,
    Job,
)
from tracer.schema import TABLES

ERRNOS: list[str] = sorted({e for o in cat.OUTCOMES for _, _, e in o.frames if e})
DAY_NS = 86400 * NS


# --------------------------------------------------------------------------------------------
# one static vocabulary of every string a simulated row can hold (except host, job and trace ids)
# --------------------------------------------------------------------------------------------
def _all_platforms() -> list[cat.Platform]:
    return [cat.Platform(v, release, ofed) for v, kernels in cat.KERNELS.items() for release, ofed, _ in kernels] + [
        cat.Platform(v, cat.NEW_DRIVER_KERNEL, False) for v in cat.VENDORS
    ]


def _vocabulary() -> list[str]:
    words: list[str] = []
    for p in _all_platforms():
        words += [p.probe_name(k) for k in cat.PROBE_KEYS] + [p.kernel_release, p.vendor]
    words += [cat.probe_layer(k) for k in cat.PROBE_KEYS] + ERRNOS + ["good", "failure"]
    words += [cat.OPERATIONS[op][0] for op in cat.OP_NAMES] + [a for _, a, _ in cat.OPERATIONS.values() if a]
    words += [o.root_cause for o in cat.OUTCOMES if o.root_cause] + list(cat.UNPROBED_CLEANUP.values())
    words += ["pt_main_thread", "python3", cat.PROBE_SET]
    return list(dict.fromkeys(words))  # unique, in a fixed order


VOCAB: list[str] = _vocabulary()
_VID: dict[str, int] = {w: i for i, w in enumerate(VOCAB)}
_VOCAB_ARROW = pa.array(VOCAB, pa.string())


def vid(word: str | None) -> int:
    """Vocabulary index of a string; -1 for null."""
    return -1 if word is None else _VID[word]


def _strings(ids: np.ndarray) -> pa.Array:
    """Vocabulary indices -> Arrow strings (-1 -> null)."""
    ids = np.asarray(ids, dtype=np.int32)
    mask = ids < 0
    return pc.take(_VOCAB_ARROW, pa.array(ids, mask=mask if mask.any() else None))


# --------------------------------------------------------------------------------------------
# per-platform resolved outcomes, flattened for numpy gathers
# --------------------------------------------------------------------------------------------
@dataclass
class Flat:
    n_frames: np.ndarray  # per outcome
    first: np.ndarray  # per outcome: index of its first frame in the flat arrays
    probe: np.ndarray  # per flat frame: index into PROBE_KEYS
    depth: np.ndarray
    ret: np.ndarray
    errno: np.ndarray  # index into ERRNOS, -1 for success
    offset: np.ndarray
    latency: np.ndarray
    has_arg: np.ndarray  # frame carries the operation's path-selecting argument
    probe_names: list[str]
    probe_layers: list[str]
    truth: list[dict]
    # vocabulary ids
    probe_vid: np.ndarray  # per probe key
    layer_vid: np.ndarray  # per probe key
    live: np.ndarray  # per probe key
    truth_vid: np.ndarray  # per outcome: root_cause, bifurcation_probe, bifurcation_errno, origin_layer
    expected: np.ndarray  # per outcome
    frame_probe_vid: np.ndarray = field(default=None)  # per flat frame
    frame_layer_vid: np.ndarray = field(default=None)
    frame_errno_vid: np.ndarray = field(default=None)


COMMANDS = [cat.OPERATIONS[o.op][0] for o in cat.OUTCOMES]
ARGS = [cat.OPERATIONS[o.op][1] for o in cat.OUTCOMES]
COMMAND_VID = np.array([vid(c) for c in COMMANDS], dtype=np.int32)
ARG_VID = np.array([vid(a) for a in ARGS], dtype=np.int32)
ERRNO_VID = np.array([vid(e) for e in ERRNOS] + [-1], dtype=np.int32)  # index -1 -> null
KIND_VID = np.array([vid("good"), vid("failure")], dtype=np.int32)


@lru_cache(maxsize=64)
def flat(platform: cat.Platform) -> Flat:
    resolved = cat.resolve(platform)
    n = np.array([len(r.probe_idx) for r in resolved], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(n)[:-1]])

    def cat_(attr):
        return np.concatenate([np.asarray(getattr(r, attr), dtype=np.int64) for r in resolved])

    errno = np.array([ERRNOS.index(e) if e else -1 for r in resolved for e in r.errno], dtype=np.int64)
    keys = [cat.PROBE_KEYS[i] for r in resolved for i in r.probe_idx]
    has_arg = np.array([k.startswith(("uv_", "drv_")) for k in keys])
    names = [platform.probe_name(k) for k in cat.PROBE_KEYS]
    layers = [cat.probe_layer(k) for k in cat.PROBE_KEYS]
    truth = [r.truth for r in resolved]
    f = Flat(
        n_frames=n, first=first, probe=cat_("probe_idx"), depth=cat_("depth"), ret=cat_("ret"),
        errno=errno, offset=cat_("offset_ns"), latency=cat_("latency_ns"), has_arg=has_arg,
        probe_names=names, probe_layers=layers, truth=truth,
        probe_vid=np.array([vid(x) for x in names], dtype=np.int32),
        layer_vid=np.array([vid(x) for x in layers], dtype=np.int32),
        live=np.array([platform.live(k) for k in cat.PROBE_KEYS]),
        truth_vid=np.array([[vid(t[c]) for c in ("root_cause", "bifurcation_probe", "bifurcation_errno", "origin_layer")]
                            for t in truth], dtype=np.int32),
        expected=np.array([bool(t["expected_error"]) for t in truth]),
    )
    f.frame_probe_vid = f.probe_vid[f.probe]
    f.frame_layer_vid = f.layer_vid[f.probe]
    f.frame_errno_vid = ERRNO_VID[f.errno]
    return f


# --------------------------------------------------------------------------------------------
# step 1: one host -> numpy rows
# --------------------------------------------------------------------------------------------
@dataclass
class HostPart:
    """One host's rows, numpy only (strings as VOCAB ids, -1 = null)."""

    index: int
    name: str
    start_ns: int  # the fleet window's start (counter intervals count from it)
    kernel_vid: int
    vendor_vid: int
    jobs: list[Job]
    job_meta: list[tuple[tuple[str, str], ...]]  # per job: sorted metadata pairs
    events: dict[str, np.ndarray]
    counters: dict[str, np.ndarray]
    errno_counts: tuple[np.ndarray, np.ndarray]  # flattened (errno vid, count) of the counter rows
    truth: dict[str, np.ndarray]
    successes: int
    success_frames: int
    stats: dict[str, int]


def _job_meta(prof: HostProfile, jobs: list[Job]) -> list[tuple[tuple[str, str], ...]]:
    host_meta = [("vendor", prof.platform.vendor), ("scheduler", "slurm")]
    if prof.firmware:
        host_meta.append(("nic_fw", prof.firmware))
    return [tuple(sorted([*host_meta, ("image", job.image), ("team", job.team), ("restart", str(job.restart))]))
            for job in jobs]


def host_part(
    prof: HostProfile, plan: FleetPlan, rng: np.random.Generator,
    t: np.ndarray, o: np.ndarray, j: np.ndarray, jobs: list[Job], unprobed: list[tuple[int, int]],
) -> HostPart:
    fl = flat(prof.platform)
    o = o.astype(np.int64)
    failure = IS_FAILURE[o]
    # latency scale per call: lognormal jitter with a slow tail; good traces must stay < 50 ms
    scale = rng.lognormal(0.0, 0.5, t.size)
    root_latency = (fl.latency[fl.first[o]] * scale).astype(np.int64)
    sampled = ~failure & (rng.random(t.size) < plan.good_rate) & (root_latency < GOOD_LATENCY_BOUND_NS)
    sel = np.flatnonzero(failure | sampled)

    # ---------------- events: one row per frame of each emitted trace
    os_, nfr = o[sel], fl.n_frames[o[sel]]
    rep = np.repeat(np.arange(sel.size), nfr)
    starts = np.cumsum(nfr) - nfr
    seq = np.arange(rep.size) - starts[rep]
    fi = fl.first[os_][rep] + seq
    t_sel = t[sel]
    sc = scale[sel]
    pids = np.array([job.pid for job in jobs], dtype=np.int64)
    jsel = j[sel]
    tid = pids[jsel] + rng.integers(1, 64, sel.size)
    fail_sel = failure[sel]
    root_ret = fl.ret[fl.first[os_]]
    events = {
        "trace_no": rep.astype(np.int64),
        "seq": seq.astype(np.int64),
        "ts_ns": (t_sel - prof.boot_ns)[rep] + (fl.offset[fi] * sc[rep]).astype(np.int64),
        "job": jsel[rep].astype(np.int64),
        "tid": tid[rep].astype(np.int32),
        "probe": fl.frame_probe_vid[fi],
        "layer": fl.frame_layer_vid[fi],
        "depth": fl.depth[fi].astype(np.int16),
        "ret": fl.ret[fi],
        "errno": fl.frame_errno_vid[fi],
        "latency_ns": (fl.latency[fi] * sc[rep]).astype(np.int64),
        "arg": np.where(fl.has_arg[fi], ARG_VID[os_][rep], -1).astype(np.int32),
        "kind": KIND_VID[fail_sel.astype(np.int64)][rep],
        "command": COMMAND_VID[os_][rep],
        "exit_status": np.clip(root_ret, -(2**31), 2**31 - 1).astype(np.int32)[rep],
        "start_time": t_sel[rep],
        "end_time": (t_sel + root_latency[sel])[rep],
    }

    # ---------------- truth: one row per emitted trace, then one per unobservable failure
    held = ~fail_sel & (rng.random(sel.size) < plan.held_out_fraction)
    tv = fl.truth_vid[os_]
    n_un = len(unprobed)
    f = cat.UNPROBED_CLEANUP
    un_vid = np.array([[vid(f["root_cause"]), vid(f["bifurcation_probe"]), vid(f["bifurcation_errno"]),
                        vid(f["origin_layer"])]], dtype=np.int32)
    truth = {
        "trace_no": np.concatenate([np.arange(sel.size), -1 - np.arange(n_un)]).astype(np.int64),  # < 0: unobserved
        "kind": np.concatenate([KIND_VID[fail_sel.astype(np.int64)], np.full(n_un, KIND_VID[1], np.int32)]),
        "root_cause": np.concatenate([tv[:, 0], np.repeat(un_vid[:, 0], n_un)]),
        "bifurcation_probe": np.concatenate([tv[:, 1], np.repeat(un_vid[:, 1], n_un)]),
        "bifurcation_errno": np.concatenate([tv[:, 2], np.repeat(un_vid[:, 2], n_un)]),
        "origin_layer": np.concatenate([tv[:, 3], np.repeat(un_vid[:, 3], n_un)]),
        "expected_error": np.concatenate([fl.expected[os_], np.zeros(n_un, bool)]),
        "held_out": np.concatenate([held, np.zeros(n_un, bool)]),
        "time": np.concatenate([t_sel, np.array([tt for tt, _ in unprobed], dtype=np.int64)]),
    }

    counters, errno_counts = _counters(prof, plan, fl, t, o)
    n_fail = int(failure.sum())
    return HostPart(
        index=prof.index, name=prof.name, start_ns=plan.start_ns, kernel_vid=vid(prof.platform.kernel_release),
        vendor_vid=vid(prof.platform.vendor), jobs=jobs, job_meta=_job_meta(prof, jobs),
        events=events, counters=counters, errno_counts=errno_counts, truth=truth,
        successes=int(t.size - n_fail), success_frames=int(fl.n_frames[o[~failure]].sum()),
        stats={"calls": int(t.size), "failures": n_fail, "good": int(sampled.sum()), "jobs": len(jobs)},
    )


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys -> (start index of each run of equal keys, run keys)."""
    if keys.size == 0:
        return np.empty(0, np.int64), keys
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    return starts, keys[starts]


def _counters(prof: HostProfile, plan: FleetPlan, fl: Flat, t: np.ndarray, o: np.ndarray):
    """Per 5 s interval and probe: invocations, failures, errno histogram (sorted by errno name)."""
    n_out = len(cat.OUTCOMES)
    n_probe = len(cat.PROBE_KEYS)
    n_err = len(ERRNOS) + 1  # slot 0 = success
    interval = (t - plan.start_ns) // INTERVAL_NS
    key = np.sort(interval * n_out + o, kind="stable")  # t is time-sorted: nearly sorted already
    starts, keys = _runs(key)
    counts = np.diff(np.append(starts, key.size))
    iv, oc = keys // n_out, keys % n_out
    # every frame of every (interval, outcome) counts once per call
    nfr = fl.n_frames[oc]
    rep = np.repeat(np.arange(keys.size), nfr)
    fi = fl.first[oc][rep] + (np.arange(rep.size) - (np.cumsum(nfr) - nfr)[rep])
    # the first snapshot lists every probe of the set (with its live flag), even idle ones
    k_iv = np.concatenate([np.zeros(n_probe, np.int64), iv[rep]])
    k_probe = np.concatenate([np.arange(n_probe), fl.probe[fi]])
    k_err = np.concatenate([np.zeros(n_probe, np.int64), fl.errno[fi] + 1])
    k_count = np.concatenate([np.zeros(n_probe, np.int64), counts[rep]])
    k = (k_iv * n_probe + k_probe) * n_err + k_err
    order = np.argsort(k, kind="stable")
    k, k_count = k[order], k_count[order]
    e_starts, e_keys = _runs(k)
    e_count = np.add.reduceat(k_count, e_starts) if k.size else k_count
    e_err = e_keys % n_err  # 0 = success
    row_key = e_keys // n_err
    r_starts, r_keys = _runs(row_key)
    invocations = np.add.reduceat(e_count, r_starts) if e_count.size else e_count
    fail_count = np.where(e_err > 0, e_count, 0)
    failures = np.add.reduceat(fail_count, r_starts) if e_count.size else fail_count
    # errno histogram entries: the failing (interval, probe, errno) groups, already in errno order
    is_err = e_err > 0
    row_of = np.repeat(np.arange(r_keys.size), np.diff(np.append(r_starts, e_keys.size)))
    n_hist = np.bincount(row_of[is_err], minlength=r_keys.size).astype(np.int32)
    r_iv, r_probe = r_keys // n_probe, r_keys % n_probe
    counters = {
        "interval": r_iv,
        "probe": fl.probe_vid[r_probe],
        "layer": fl.layer_vid[r_probe],
        "live": fl.live[r_probe],
        "invocations": invocations.astype(np.int64),
        "failures": failures.astype(np.int64),
        "n_hist": n_hist,
    }
    return counters, (ERRNO_VID[e_err[is_err] - 1], e_count[is_err].astype(np.int64))


# --------------------------------------------------------------------------------------------
# step 2: a batch of hosts -> one Arrow table per table
# --------------------------------------------------------------------------------------------
@dataclass
class Batch:
    hosts: list[str]
    events: pa.Table
    counters: pa.Table
    truth: pa.Table
    rows: dict[str, np.ndarray]  # table -> row offsets of each host (len hosts + 1)
    day: dict[str, np.ndarray]  # table -> UTC day number of each row (partition date)


def _ts(values: np.ndarray) -> pa.Array:
    return pa.array(np.asarray(values, dtype=np.int64), pa.int64()).view(pa.timestamp("ns", tz="UTC"))


def _cat(parts: list[HostPart], table: str, column: str) -> np.ndarray:
    return np.concatenate([getattr(p, table)[column] for p in parts])


def _host_rows(parts: list[HostPart], table: str) -> tuple[np.ndarray, np.ndarray]:
    """(row offsets per host, batch host position of each row)."""
    n = np.array([getattr(p, table)[next(iter(getattr(p, table)))].size for p in parts], dtype=np.int64)
    return np.concatenate([[0], np.cumsum(n)]), np.repeat(np.arange(len(parts)), n)


def _trace_ids(host_names: pa.Array, host_of_row: np.ndarray, trace_no: np.ndarray) -> pa.Array:
    hosts = pc.take(host_names, pa.array(host_of_row.astype(np.int32)))
    unobserved = trace_no < 0
    suffix = pc.cast(pa.array(np.where(unobserved, -1 - trace_no, trace_no)), pa.string())
    if unobserved.any():
        suffix = pc.binary_join_element_wise(
            pc.if_else(pa.array(unobserved), "unobserved", ""), suffix, "-")
        suffix = pc.if_else(pa.array(unobserved), suffix, pc.cast(pa.array(trace_no), pa.string()))
    return pc.binary_join_element_wise(hosts, suffix, ":")


def assemble(parts: list[HostPart]) -> Batch:
    """One Arrow table per table for a batch of hosts, each host's rows contiguous."""
    host_names = pa.array([p.name for p in parts], pa.string())
    kernel = np.array([p.kernel_vid for p in parts], dtype=np.int32)
    vendor = np.array([p.vendor_vid for p in parts], dtype=np.int32)
    rows, day = {}, {}

    # ---------------- events
    rows["events"], ev_host = _host_rows(parts, "events")
    job_base = np.cumsum([0] + [len(p.jobs) for p in parts])[:-1]
    job = _cat(parts, "events", "job") + job_base[ev_host]
    all_jobs = [jb for p in parts for jb in p.jobs]
    metas: dict[tuple, int] = {}
    job_meta = np.array([metas.setdefault(m, len(metas)) for p in parts for m in p.job_meta], dtype=np.int32)
    meta_values = pa.array([[{"key": k, "value": v} for k, v in m] for m in metas], TABLES["events"].field("metadata").type)
    pid = np.array([jb.pid for jb in all_jobs], dtype=np.int32)
    comm = np.array([vid(jb.comm) for jb in all_jobs], dtype=np.int32)
    job_ids = pa.array([jb.job_id for jb in all_jobs], pa.string())
    job_idx = pa.array(job.astype(np.int32))
    n_ev = job.size
    start = _cat(parts, "events", "start_time")
    ev = {
        "trace_id": _trace_ids(host_names, ev_host, _cat(parts, "events", "trace_no")),
        "seq": pa.array(_cat(parts, "events", "seq")),
        "ts_ns": pa.array(_cat(parts, "events", "ts_ns")),
        "pid": pa.array(pid[job]),
        "tid": pa.array(_cat(parts, "events", "tid")),
        "ppid": pa.array(np.ones(n_ev, np.int32)),
        "comm": _strings(comm[job]),
        "probe": _strings(_cat(parts, "events", "probe")),
        "layer": _strings(_cat(parts, "events", "layer")),
        "depth": pa.array(_cat(parts, "events", "depth")),
        "ret": pa.array(_cat(parts, "events", "ret")),
        "errno": _strings(_cat(parts, "events", "errno")),
        "latency_ns": pa.array(_cat(parts, "events", "latency_ns")),
        "path": pa.nulls(n_ev, pa.string()),
        "arg": _strings(_cat(parts, "events", "arg")),
        "path2": pa.nulls(n_ev, pa.string()),
        "output": pa.nulls(n_ev, pa.string()),
        "kind": _strings(_cat(parts, "events", "kind")),
        "command": _strings(_cat(parts, "events", "command")),
        "exit_status": pa.array(_cat(parts, "events", "exit_status")),
        "start_time": _ts(start),
        "end_time": _ts(_cat(parts, "events", "end_time")),
        "host": pc.take(host_names, pa.array(ev_host.astype(np.int32))),
        "kernel_release": _strings(kernel[ev_host]),
        "lost_events": pa.array(np.zeros(n_ev, np.int64)),
        "job_id": pc.take(job_ids, job_idx),
        "metadata": pc.take(meta_values, pa.array(job_meta[job])),
        "repeat_count": pa.nulls(n_ev, pa.int64()),
    }
    day["events"] = start // DAY_NS
    events = pa.Table.from_arrays([ev[f.name] for f in TABLES["events"]], schema=TABLES["events"])

    # ---------------- counters
    rows["counters"], co_host = _host_rows(parts, "counters")
    n_co = co_host.size
    start_ns = np.array([p.start_ns for p in parts], dtype=np.int64)[co_host] if n_co else np.empty(0, np.int64)
    snap = start_ns + (_cat(parts, "counters", "interval") + 1) * INTERVAL_NS
    n_hist = _cat(parts, "counters", "n_hist")
    offsets = np.concatenate([[0], np.cumsum(n_hist)]).astype(np.int32)
    hist_errno = np.concatenate([p.errno_counts[0] for p in parts])
    hist_count = np.concatenate([p.errno_counts[1] for p in parts])
    hist = pa.StructArray.from_arrays([_strings(hist_errno), pa.array(hist_count, pa.int64())], names=["errno", "count"])
    co = {
        "host": pc.take(host_names, pa.array(co_host.astype(np.int32))),
        "snapshot_time": _ts(snap),
        "interval_s": pa.array(np.full(n_co, INTERVAL_NS / NS)),
        "kernel_release": _strings(kernel[co_host]),
        "vendor": _strings(vendor[co_host]),
        "probe_set": _strings(np.full(n_co, vid(cat.PROBE_SET), np.int32)),
        "probe": _strings(_cat(parts, "counters", "probe")),
        "layer": _strings(_cat(parts, "counters", "layer")),
        "live": pa.array(_cat(parts, "counters", "live")),
        "invocations": pa.array(_cat(parts, "counters", "invocations")),
        "failures": pa.array(_cat(parts, "counters", "failures")),
        "errno_counts": pa.ListArray.from_arrays(pa.array(offsets), hist).cast(TABLES["counters"].field("errno_counts").type),
        "lost_records": pa.array(np.zeros(n_co, np.int64)),
    }
    day["counters"] = snap // DAY_NS
    counters = pa.Table.from_arrays([co[f.name] for f in TABLES["counters"]], schema=TABLES["counters"])

    # ---------------- truth
    rows["truth"], tr_host = _host_rows(parts, "truth")
    tr = {
        "trace_id": _trace_ids(host_names, tr_host, _cat(parts, "truth", "trace_no")),
        "host": pc.take(host_names, pa.array(tr_host.astype(np.int32))),
        **{c: _strings(_cat(parts, "truth", c)) for c in
           ("kind", "root_cause", "bifurcation_probe", "bifurcation_errno", "origin_layer")},
        "expected_error": pa.array(_cat(parts, "truth", "expected_error")),
        "held_out": pa.array(_cat(parts, "truth", "held_out")),
    }
    day["truth"] = _cat(parts, "truth", "time") // DAY_NS
    truth = pa.Table.from_arrays([tr[f.name] for f in TABLES["truth"]], schema=TABLES["truth"])
    return Batch(hosts=[p.name for p in parts], events=events, counters=counters, truth=truth, rows=rows, day=day)


def host_result(batch: Batch, b: int, part: HostPart) -> HostResult:
    """Host `b` of a batch as polars frames (truth keeps its `time` column for partitioning)."""
    def rows(table: str) -> pa.Table:
        lo, hi = batch.rows[table][b], batch.rows[table][b + 1]
        return getattr(batch, table).slice(lo, hi - lo)

    truth = pl.from_arrow(rows("truth")).with_columns(
        time=pl.Series(part.truth["time"]).cast(pl.Datetime("ns")).dt.replace_time_zone("UTC"))
    return HostResult(
        host=part.name,
        events=pl.from_arrow(rows("events")),
        counters=pl.from_arrow(rows("counters")),
        truth=truth, successes=part.successes, success_frames=part.success_frames, stats=part.stats,
    )


def build(
    prof: HostProfile, plan: FleetPlan, rng: np.random.Generator,
    t: np.ndarray, o: np.ndarray, j: np.ndarray, jobs: list[Job], unprobed: list[tuple[int, int]],
) -> HostResult:
    """One host's tables as polars frames (tests, spool layout, small runs)."""
    part = host_part(prof, plan, rng, t, o, j, jobs, unprobed)
    return host_result(assemble([part]), 0, part)

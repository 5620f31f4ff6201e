"""A messy RDMA fleet, written from reference/rdma_control_path.yaml (no code shared with
baseline.simulator; tracer.schema only writes the tables).

What makes it messy (each property is what a real fleet does and the project's simulator does not):

* Probes where errors *originate*, not only at the root: rdma_alloc_begin_uobject and
  ib_rdmacg_try_charge under every create handler, rdma_get_gid_attr under GID queries and
  INIT->RTR, rdma_counter_bind_qp_auto / alloc_and_bind under RESET->INIT.
* Routine families (truth expected_error = true):
    - rdmacg EAGAIN: the rdma cgroup's hca_object limit is reached on most hosts; create_qp and
      reg_mr fail EAGAIN at ib_rdmacg_try_charge (propagated up), the library retries 1-3 ms
      later and succeeds (the success is only recorded when sampled);
    - empty GID slot: GID-table queries of empty slots return ENODATA at rdma_get_gid_attr
      (ENOENT from irdma's iWARP query path);
    - counter bind ENOMEM: on bnxt_re hosts in AUTO counter mode alloc_and_bind returns NULL and
      rdma_counter_bind_qp_auto -ENOMEM, which _ib_modify_qp ignores: the root returns 0.
* A non-fatal cause on many hosts whose errno is masked on the way up (a stale QP handle:
  ENOENT in rdma_lookup_get_uobject, EINVAL at modify_qp, the job goes on).
* Root causes with several signatures each (vendor twins, OFED vs upstream, timeouts vs EIO),
  truncated call trees (deepest frames lost, lost_events > 0), a cause that starts after a
  kernel update on some hosts (kernel_release changes mid-window), a rare cause in heavy routine
  noise on the same probe as a routine family, a host seen only through its counters, a
  pointer-returning root probe (rdma_lookup_get_uobject: a success is a kernel pointer, so
  exit_status is clipped to -2147483648), and roots that return no errno.
* Good traces sampled 1-in-N inside capture windows only; counters exact (every call).

Truth (`truth` table) as the project defines it; host-level truth (hosts with a real problem)
in <out>/fleetgen.json.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import yaml

from tracer.schema import partition_path, write_table

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "rdma_control_path.yaml"
PTR = -0x0000777F12345000  # a kernel pointer as the int64 register value (top bits set)
PTR_CLIPPED = -(2**31)  # what an int32 exit_status of a pointer-returning root becomes

# ------------------------------------------------------------------------------------ reference
_LAYER_OF_FILE = (("uverbs_", "uverbs"), ("hw/", "driver"), ("peer_mem", "peer-mem"), ("core/", "core"))


def _walk(node, out: dict) -> None:
    if isinstance(node, dict):
        fn = node.get("fn")
        if isinstance(fn, str) and fn.isidentifier():
            entry = out.setdefault(fn, {"errnos": set(), "file": None})
            entry["file"] = entry["file"] or node.get("file")
            for e in node.get("errors") or []:
                for name in str(e.get("errno", "")).split("|"):
                    if name.startswith("-E"):
                        entry["errnos"].add(name[1:])
        for v in node.values():
            _walk(v, out)
    elif isinstance(node, list):
        for v in node:
            _walk(v, out)


def load_reference(path: Path = REFERENCE) -> dict:
    """Functions (with file and errnos) and the vendor ops table from the reference document."""
    doc = yaml.safe_load(path.read_text())
    fns: dict = {}
    _walk(doc, fns)
    ops = doc["vendor_equivalents"]["ops"]
    return {"functions": fns, "ops": ops, "peer": [s["fn"] for s in doc["ofed_peer_memory"]["symbols"]]}


REF = load_reference()


def _vendor_fn(slot: str, vendor: str) -> str:
    name = str(REF["ops"][slot][vendor]).split()[0]
    assert name.isidentifier(), (slot, vendor, name)
    return name


def _errno_ok(fn: str, errno: str) -> None:
    """Every errno we make a function return must be one the reference lists for it."""
    known = REF["functions"].get(fn, {}).get("errnos", set())
    assert errno in known, f"{fn} {errno} not in reference ({sorted(known)})"


def layer_of(fn: str) -> str:
    if fn in REF["peer"] and fn.startswith("ib_peer"):
        return "peer-mem"
    if fn.startswith(("ib_uverbs_",)):
        return "uverbs"
    if fn.startswith(("mlx5_", "bnxt_re_", "irdma_")):
        return "driver"
    f = (REF["functions"].get(fn, {}).get("file") or "")
    for key, layer in _LAYER_OF_FILE:
        if key in f:
            return layer
    return "core"


# how each probed function returns (bpf/probes ret kinds: int / err_ptr / null_ptr)
RET_KIND = {
    "rdma_alloc_begin_uobject": "err_ptr", "rdma_lookup_get_uobject": "err_ptr", "ib_create_qp_user": "err_ptr",
    "rdma_get_gid_attr": "err_ptr", "ib_umem_get": "err_ptr", "ib_umem_get_peer": "err_ptr",
    "ib_peer_umem_get": "err_ptr", "alloc_and_bind": "null_ptr",
}
for _v in ("mlx5", "bnxt_re", "irdma"):
    RET_KIND[_vendor_fn("reg_user_mr", _v)] = "err_ptr"


# ------------------------------------------------------------------------------------ call trees
@dataclass
class Frame:
    fn: str
    depth: int
    errno: str | None = None  # failing with this errno; None = success
    null: bool = False  # null_ptr failure (no errno visible)

    def ret(self) -> int:
        if self.errno is not None:
            return -ERRNO_NUM[self.errno]
        if self.null:
            return 0
        return PTR if RET_KIND.get(self.fn) == "err_ptr" else 0


ERRNO_NUM = {"EPERM": 1, "ENOENT": 2, "EIO": 5, "EAGAIN": 11, "ENOMEM": 12, "EFAULT": 14, "EBUSY": 16,
             "EINVAL": 22, "ENODATA": 61, "ETIMEDOUT": 110, "EOPNOTSUPP": 95}


def _uobj(depth: int, charge: str | None = None) -> list[Frame]:
    return [Frame("rdma_alloc_begin_uobject", depth, charge), Frame("ib_rdmacg_try_charge", depth + 1, charge)]


@dataclass
class Host:
    name: str
    vendor: str
    ofed: bool
    kernel: str
    new_kernel: str | None  # kernel after an update mid-window
    update_at: float | None  # hours into the window
    cg_tight: float  # rdmacg EAGAIN probability per create
    empty_gid_slots: int  # of 8 queried
    counter_auto: bool
    events: bool = True  # False: only counters reach the dataset
    crash_from: float | None = None  # hours: firmware bad state from then on
    crash_errno: str = "EIO"


def chain(op: str, h: Host, kernel: str, fail: str | None = None, **kw) -> tuple[list[Frame], dict | None]:
    """Frames of one call of `op` on host h, optionally with a failure mode; returns (frames, truth)."""
    v = h.vendor
    drv = {s: _vendor_fn(s, v) for s in ("create_qp", "modify_qp", "reg_user_mr", "alloc_pd", "create_cq")}
    umem = "ib_umem_get_peer" if h.ofed else "ib_umem_get"
    t = None
    if op == "alloc_pd":
        err = fail == "fw_bad_state" and kw.get("errno", "EIO")
        f = [Frame("ib_uverbs_alloc_pd", 0, err or None), *_uobj(1), Frame(drv["alloc_pd"], 1, err or None)]
        if err:
            t = _t("fw_bad_state", drv["alloc_pd"], err, "driver")
    elif op == "create_cq":
        f = [Frame("ib_uverbs_create_cq", 0), Frame("create_cq", 1), *_uobj(2), Frame(drv["create_cq"], 2)]
        if v != "irdma":
            f.append(Frame(umem, 3))
    elif op == "create_qp":
        cg = "EAGAIN" if fail == "rdmacg" else None
        if cg:
            _errno_ok("ib_rdmacg_try_charge", cg)
            f = [Frame("ib_uverbs_create_qp", 0, cg), Frame("create_qp", 1, cg), *_uobj(2, cg)]
            t = _t("expected:rdmacg_eagain", "ib_rdmacg_try_charge", cg, "core", expected=True)
        else:
            bad = "ENOMEM" if fail == "qp_enomem_after_update" else None
            f = [Frame("ib_uverbs_create_qp", 0, bad), Frame("create_qp", 1, bad), *_uobj(2),
                 Frame("rdma_lookup_get_uobject", 2), Frame("rdma_lookup_get_uobject", 2),
                 Frame("ib_create_qp_user", 2, bad), Frame(drv["create_qp"], 3, bad)]
            if v != "irdma":
                f.append(Frame(umem, 4))
            if bad:
                _errno_ok("mlx5_ib_create_qp", bad)
                t = _t("qp_enomem_after_update", drv["create_qp"], bad, "driver")
    elif op.startswith("modify_qp") and fail == "stale_qp":
        # a QP handle already destroyed: ENOENT in the lookup, which modify_qp reports as EINVAL
        # (uobj_get_obj_read masks every lookup error); the job goes on
        _errno_ok("rdma_lookup_get_uobject", "ENOENT")
        _errno_ok("modify_qp", "EINVAL")
        f = [Frame("ib_uverbs_modify_qp", 0, "EINVAL"), Frame("modify_qp", 1, "EINVAL"),
             Frame("rdma_lookup_get_uobject", 2, "ENOENT")]
        t = _t("stale_qp_modify", "rdma_lookup_get_uobject", "ENOENT", "core")
    elif op.startswith("modify_qp"):
        arg = op.split(" ", 1)[1]
        bad = "EINVAL" if fail == "gid_index_invalid" else None
        f = [Frame("ib_uverbs_modify_qp", 0, bad), Frame("modify_qp", 1, bad), Frame("rdma_lookup_get_uobject", 2),
             Frame("_ib_modify_qp", 2, bad)]
        if arg == "RESET->INIT":
            if fail == "counter_enomem":
                _errno_ok("rdma_counter_bind_qp_auto", "ENOMEM")
                f += [Frame("rdma_counter_bind_qp_auto", 3, "ENOMEM"), Frame("alloc_and_bind", 4, null=True)]
                t = _t("expected:counter_bind_enomem", "rdma_counter_bind_qp_auto", "ENOMEM", "core", expected=True)
            else:
                f.append(Frame("rdma_counter_bind_qp_auto", 3))
                if h.counter_auto:
                    f.append(Frame("alloc_and_bind", 4))
        if arg == "INIT->RTR":
            f.append(Frame("rdma_get_gid_attr", 3, bad))
            if bad:
                _errno_ok("rdma_get_gid_attr", bad)
                t = _t("gid_index_invalid", "rdma_get_gid_attr", bad, "core")
        if not bad:
            f.append(Frame(drv["modify_qp"], 3))
    elif op == "reg_mr":
        if fail == "rdmacg":
            f = [Frame("ib_uverbs_reg_mr", 0, "EAGAIN"), *_uobj(1, "EAGAIN")]
            t = _t("expected:rdmacg_eagain", "ib_rdmacg_try_charge", "EAGAIN", "core", expected=True)
        elif fail == "peer_efault":
            _errno_ok("ib_umem_get", "EFAULT")
            f = [Frame("ib_uverbs_reg_mr", 0, "EFAULT"), *_uobj(1), Frame("rdma_lookup_get_uobject", 1),
                 Frame(drv["reg_user_mr"], 1, "EFAULT"), Frame(umem, 2, "EFAULT")]
            if h.ofed:  # OFED: GUP failure falls back to the peer client, which claims nothing
                f.append(Frame("ib_peer_umem_get", 3, "EFAULT"))
                t = _t("peer_efault", "ib_peer_umem_get", "EFAULT", "peer-mem")
            else:
                t = _t("peer_efault", umem, "EFAULT", "core")
        else:
            f = [Frame("ib_uverbs_reg_mr", 0), *_uobj(1), Frame("rdma_lookup_get_uobject", 1),
                 Frame(drv["reg_user_mr"], 1), Frame(umem, 2)]
    elif op == "query_gid":
        err = None
        if fail == "empty_gid":
            err = "ENOENT" if v == "irdma" else "ENODATA"
            t = _t("expected:gid_empty_slot", "rdma_get_gid_attr", err, "core", expected=True)
        f = [Frame("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", 0, err), Frame("rdma_get_gid_attr", 1, err)]
    elif op == "lookup":  # destroy-time handle lookups: a pointer-returning root
        err = "ENOENT" if fail == "stale_handle" else None
        f = [Frame("rdma_lookup_get_uobject", 0, err)]
        if err:
            t = _t("stale_handle_destroy", "rdma_lookup_get_uobject", err, "core")
    else:
        raise ValueError(op)
    return f, t


def _t(cause, probe, errno, origin, expected=False) -> dict:
    return {"root_cause": cause, "bifurcation_probe": probe, "bifurcation_errno": errno,
            "origin_layer": origin, "expected_error": expected}


# ------------------------------------------------------------------------------------ the fleet
@dataclass
class Writer:
    start: datetime
    rows: list = field(default_factory=list)
    truth: list = field(default_factory=list)
    counters: dict = field(default_factory=lambda: defaultdict(lambda: [0, 0, defaultdict(int)]))
    vendor_by_host: dict = field(default_factory=dict)
    n: int = 0

    def call(self, h: Host, kernel: str, t_s: float, op: str, frames: list[Frame], truth: dict | None,
             job: str, pid: int, restart: int, record: bool, truncate: bool = False, held_out: bool = False) -> None:
        minute = int(t_s // 60)
        self.vendor_by_host[h.name] = h.vendor
        for fr in frames:
            c = self.counters[(h.name, minute, fr.fn, kernel)]
            c[0] += 1
            if fr.errno or fr.null:
                c[1] += 1
                if fr.errno:
                    c[2][fr.errno] += 1
        if not record or not h.events:
            return
        self.n += 1
        tid = f"{h.name}/{pid}/{self.n:07d}"
        lost = 0
        if truncate:
            keep = max(fr.depth for fr in frames) - 1
            lost = sum(fr.depth > keep for fr in frames)
            frames = [fr for fr in frames if fr.depth <= keep]
        failed = truth is not None
        ts = self.start + timedelta(seconds=t_s)
        root = frames[0]
        mono = int(t_s * 1e9) + 10**12
        meta = [{"key": "vendor", "value": h.vendor}, {"key": "restart", "value": str(restart)}]
        for seq, fr in enumerate(frames):
            self.rows.append({
                "trace_id": tid, "seq": seq, "ts_ns": mono + seq * 1500, "pid": pid, "tid": pid + 1, "ppid": 1,
                "comm": "python3", "probe": fr.fn, "layer": layer_of(fr.fn), "depth": fr.depth, "ret": fr.ret(),
                "errno": fr.errno, "latency_ns": 40_000 - seq * 1000, "path": None,
                "arg": op.split(" ", 1)[1] if " " in op else None,
                "kind": "failure" if failed else "good", "command": op,
                "exit_status": max(-(2**31), min(2**31 - 1, root.ret())), "start_time": ts,
                "end_time": ts + timedelta(microseconds=40), "host": h.name, "kernel_release": kernel,
                "lost_events": lost, "job_id": job, "metadata": meta,
            })
        tr = {"trace_id": tid, "host": h.name, "kind": "failure" if failed else "good", "time": ts,
              "root_cause": None, "bifurcation_probe": None, "bifurcation_errno": None, "origin_layer": None,
              "expected_error": False, "held_out": held_out}
        if truth:
            tr.update(truth)
        self.truth.append(tr)


def make_hosts(n: int, rnd: random.Random) -> list[Host]:
    hosts = []
    for i in range(n):
        r = rnd.random()
        vendor = "mlx5" if r < 0.65 else ("bnxt_re" if r < 0.85 else "irdma")
        ofed = vendor == "mlx5" and rnd.random() < 0.6
        kernel = "5.15.0-1071-nvidia" if ofed else "6.8.0-57-generic"
        upd = rnd.random() < 0.4
        hosts.append(Host(
            name=f"node-{i:04d}", vendor=vendor, ofed=ofed, kernel=kernel,
            new_kernel=(kernel.replace("1071", "1074") if ofed else "6.8.0-60-generic") if upd else None,
            update_at=rnd.uniform(1.0, 4.0) if upd else None,
            cg_tight=rnd.choice([0.0, 0.02, 0.04, 0.06, 0.08]) if rnd.random() < 0.85 else 0.0,
            empty_gid_slots=rnd.choice([0, 2, 4]),
            counter_auto=vendor == "bnxt_re" and rnd.random() < 0.7,
        ))
    # a host whose firmware goes bad (mlx5, EIO) and one (bnxt_re) whose commands time out
    mlx = [h for h in hosts if h.vendor == "mlx5"]
    bnx = [h for h in hosts if h.vendor == "bnxt_re"]
    if mlx:
        mlx[-1].crash_from = 2.0
    if bnx:
        bnx[0].crash_from, bnx[0].crash_errno = 3.0, "ETIMEDOUT"
    # a host seen only through its counters (events never shipped): routine errors only
    quiet = [h for h in bnx if h.crash_from is None and h.counter_auto]
    if quiet:
        quiet[-1].events = False
    return hosts


def generate(out: str | Path, hosts: int = 40, hours: float = 6.0, seed: int = 0,
             good_one_in: int = 25, truncate_rate: float = 0.15) -> dict:
    """Write <out>/{events,counters,truth}/date=D/host=H/part-00000.parquet; return a summary."""
    out = Path(out)
    rnd = random.Random(seed)
    start = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
    w = Writer(start)
    fleet = make_hosts(hosts, rnd)
    # rare cause in routine noise: 2 hosts, INIT->RTR with a GID index outside the table
    rare_hosts = {h.name for h in rnd.sample(fleet, min(2, len(fleet)))}
    horizon = hours * 3600
    for h in fleet:
        pid = rnd.randrange(2000, 60000)
        t = rnd.uniform(0, 600)
        job_no = 0
        while t < horizon:
            job_no += 1
            job = f"{h.name}-j{job_no}"
            restart = 0
            peer_job = h.vendor == "mlx5" and rnd.random() < 0.12  # an image that registers unmapped GPU memory
            qps = rnd.randint(8, 48)
            length = rnd.uniform(1800, 4800)
            while True:
                t, died = _run_job(w, h, t, job, pid, restart, qps, length, peer_job, rare_hosts, rnd,
                                   horizon, good_one_in, truncate_rate)
                pid += rnd.randint(3, 40)
                if not died or restart >= 3 or t >= horizon:
                    break
                restart += 1
                t += rnd.uniform(60, 240)  # requeued
            t += rnd.uniform(30, 300)
    _write(out, w)
    summary = {
        "hosts": hosts, "hours": hours, "seed": seed, "traces": len(w.truth), "events": len(w.rows),
        "alert_hosts": sorted(h.name for h in fleet if h.crash_from is not None and h.events),
        "counter_only_hosts": sorted(h.name for h in fleet if not h.events),
        "updated_hosts": sorted(h.name for h in fleet if h.new_kernel),
    }
    (out / "fleetgen.json").write_text(json.dumps(summary, indent=1))
    return summary


def _run_job(w: Writer, h: Host, t: float, job: str, pid: int, restart: int, qps: int, length: float,
             peer_job: bool, rare_hosts: set, rnd: random.Random, horizon: float, good_one_in: int,
             truncate_rate: float) -> tuple[float, bool]:
    """One job (or requeued attempt): init, steady state, teardown. Returns (end time, died)."""
    end = t + length

    def kernel_at(ts: float) -> str:
        return h.new_kernel if h.new_kernel and ts >= h.update_at * 3600 else h.kernel

    def sampled(ts: float) -> bool:  # 30 s capture windows every 10 min, 1-in-N successes
        return (ts % 600) < 30 and rnd.random() < 1.0 / good_one_in

    def do(op: str, fail: str | None = None, **kw) -> dict | None:
        nonlocal t
        k = kernel_at(t)
        frames, truth = chain(op, h, k, fail, **kw)
        failed = truth is not None
        deep = max(fr.depth for fr in frames)
        trunc = failed and deep >= 2 and rnd.random() < truncate_rate
        w.call(h, k, t, op, frames, truth, job, pid, restart, record=failed or sampled(t), truncate=trunc,
               held_out=not failed and rnd.random() < 0.2)
        t += rnd.uniform(0.0005, 0.004)
        return truth

    if h.crash_from is not None and t >= h.crash_from * 3600:
        do("alloc_pd", "fw_bad_state", errno=h.crash_errno)
        return t, True
    for slot in range(8):
        do("query_gid", "empty_gid" if slot >= 8 - h.empty_gid_slots else None)
    do("alloc_pd")

    def with_retry(op: str) -> None:
        while rnd.random() < h.cg_tight:  # rdmacg limit: EAGAIN, retried a few ms later
            do(op, "rdmacg")
        do(op)

    for _ in range(rnd.randint(4, 16)):
        with_retry("reg_mr")
    if peer_job and rnd.random() < 0.8:
        do("reg_mr", "peer_efault")
        return t, True
    for _ in range(max(1, qps // 8)):
        do("create_cq")
    updated = h.new_kernel is not None and kernel_at(t) == h.new_kernel and h.vendor == "mlx5"
    for _ in range(qps):
        if updated and rnd.random() < 0.05:
            do("create_qp", "qp_enomem_after_update")  # not fatal: the library falls back to fewer QPs
            continue
        with_retry("create_qp")
        do("modify_qp RESET->INIT", "counter_enomem" if h.counter_auto else None)
        if h.name in rare_hosts and rnd.random() < 0.03:
            do("modify_qp INIT->RTR", "gid_index_invalid")
            return t, True
        do("modify_qp INIT->RTR")
        do("modify_qp RTR->RTS")
    # steady state: re-registration bursts every ~5 min; some jobs touch a QP they destroyed
    stale = rnd.random() < 0.2
    while t < min(end, horizon):
        t += rnd.uniform(200, 400)
        if stale:
            do("modify_qp RTR->RTS", "stale_qp")
            stale = False
        for _ in range(rnd.randint(1, 4)):
            with_retry("reg_mr")
    # teardown: handle lookups (pointer-returning root); a stale handle on some jobs
    for i in range(rnd.randint(3, 8)):
        do("lookup", "stale_handle" if i == 0 and rnd.random() < 0.08 else None)
    return t, False


def _write(out: Path, w: Writer) -> None:
    ev = pl.DataFrame(w.rows, infer_schema_length=None)
    tr = pl.DataFrame(w.truth, infer_schema_length=None)
    crow = [
        {
            "host": host, "snapshot_time": w.start + timedelta(seconds=60 * (minute + 1)), "interval_s": 60.0,
            "kernel_release": kernel, "vendor": w.vendor_by_host[host], "probe_set": "fleetgen", "probe": fn,
            "layer": layer_of(fn), "live": True, "invocations": n, "failures": f,
            "errno_counts": [{"errno": e, "count": c} for e, c in sorted(hist.items())], "lost_records": 0,
        }
        for (host, minute, fn, kernel), (n, f, hist) in w.counters.items()
    ]
    co = pl.DataFrame(crow, infer_schema_length=None)
    for table, df, col in (("events", ev, "start_time"), ("truth", tr, "time"), ("counters", co, "snapshot_time")):
        df = df.with_columns(pl.col(col).dt.strftime("%Y-%m-%d").alias("_date"))
        for (date, host), part in df.group_by("_date", "host"):
            write_table(part.drop("_date"), partition_path(out, table, date, host, "part-00000.parquet"), table,
                        durable=False)

"""Blind fleet generator 48: a MIXED fleet on two kernel/driver releases.

Built only from docs/architecture.md, README.md, the `baseline` help texts, tracer/schema.py
(the data model, whose writers are used here) and reference/rdma_control_path.yaml (the call
chains and their error codes).

The fleet: 24 mlx5 hosts over 6 hours, every host runs a job of 3 ranks (one process each) about
every 15 minutes; each rank opens the device, then runs the RDMA control path once (query the
device, alloc_pd, reg_mr, create_cq, create_qp, modify_qp RESET->INIT->RTR->RTS). A capture
window is open the whole time, so every successful call is a good trace (timed, under 50 ms) and
every failing call tree a timed failure record; the counters count every call.

Two releases, 12 hosts each (odd host numbers on A, even on B):

* A = 6.8.0-1015-nvidia with MLNX_OFED 24.07: umem pinning goes ib_umem_get_peer -> __ib_umem_get
  (reg_mr, create_cq, create_qp); create_qp runs mlx5_ib_dev_res_srq_init first; the ports are in
  AUTO counter mode, so RESET->INIT binds a counter (alloc_and_bind -> ... -> mlx5_ib_counter_bind_qp
  -> mlx5_cmd_exec ALLOC_Q_COUNTER: one firmware command more than B). Each rank also registers
  GPU memory: pin_user_pages_fast fails EFAULT and the peer-memory client takes the range
  (ib_peer_umem_get): the root succeeds, the EFAULT is absorbed -- release A's routine error.
* B = 5.15.0-1063-nvidia, inbox upstream driver: ib_umem_get, no peer memory, no SRQ init frame,
  counter mode NONE (rdma_counter_bind_qp_auto returns 0 with nothing below it). Its kernel
  refuses rdma-core's extended query_device request (uverbs_request: trailing request bytes not
  zero -> EOPNOTSUPP) on every call, and the library falls back to the plain query_device --
  release B's routine error (every process goes on).

Three real faults (each victim process dies: its failing trace is its last):

* peer_mem_enomem: 2 release-A hosts, ~40 % of the GPU registrations: pin EFAULT, then
  ib_peer_umem_get fails ENOMEM (peer-mem layer); reg_mr returns ENOMEM.
* fw_cmd_timeout: 1 release-B host, ~40 % of the INIT->RTR transitions: the INIT2RTR_QP firmware
  command times out (mlx5_cmd_exec ETIMEDOUT after 60 s), propagated up to modify_qp.
* cq_bad_page_size: 3 hosts (1 of A, 2 of B), ~40 % of create_cq: create_cq_user pins the CQ
  buffer (each release its own way: A's failing chain holds ib_umem_get_peer -> __ib_umem_get
  before the origin, B's ib_umem_get), finds no usable page size and returns EINVAL after
  releasing the umem -- one cause, two releases' chains.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa

from tracer import schema

U, C, D, P = "uverbs", "core", "driver", "peer-mem"
ERRNO = {"EOPNOTSUPP": 95, "EFAULT": 14, "ENOMEM": 12, "ETIMEDOUT": 110, "EINVAL": 22}

RELEASE_A = "6.8.0-1015-nvidia"
RELEASE_B = "5.15.0-1063-nvidia"
HOSTS = [f"gpu{i:02d}" for i in range(1, 25)]
RELEASE = {h: (RELEASE_A if i % 2 == 1 else RELEASE_B) for i, h in enumerate(HOSTS, start=1)}
START = dt.datetime(2026, 11, 28, 6, 0, tzinfo=dt.UTC)
HOURS = 6
JOB_EVERY_S = 15 * 60
RANKS = 3
SNAPSHOT_S = 300
COMM = "python3"

# The planted faults: what the audit must report, written before the first run.
FAULTS = {
    "peer_mem_enomem": {
        "hosts": ("gpu03", "gpu07"),  # release A
        "operation": "reg_mr",
        "probe": "ib_peer_umem_get",
        "errno": "ENOMEM",
        "origin_layer": P,
    },
    "fw_cmd_timeout": {
        "hosts": ("gpu10",),  # release B
        "operation": "modify_qp",
        "probe": "mlx5_cmd_exec",
        "errno": "ETIMEDOUT",
        "origin_layer": D,
    },
    "cq_bad_page_size": {
        "hosts": ("gpu13", "gpu16", "gpu22"),  # A, B, B
        "operation": "create_cq",
        "probe": "create_cq_user",
        "errno": "EINVAL",
        "origin_layer": D,
    },
}
# The routine per-release errors: no finding left open, no alert.
ROUTINE = {
    "b_ex_query_refused": {"operation": "query_device", "probe": "uverbs_request", "errno": "EOPNOTSUPP",
                           "origin_layer": U, "release": RELEASE_B},
    "a_gpu_pin_absorbed": {"operation": "reg_mr", "probe": "pin_user_pages_fast", "errno": "EFAULT",
                           "origin_layer": C, "release": RELEASE_A},
}
# Frames only one release's SUCCESS paths have: never where a fault leaves good behaviour.
RELEASE_OWN_FRAMES = frozenset({
    "ib_umem_get_peer", "__ib_umem_get", "mlx5_ib_dev_res_srq_init", "alloc_and_bind",
    "mlx5_ib_counter_alloc_stats", "__rdma_counter_bind_qp", "mlx5_ib_counter_bind_qp",
    "mlx5_ib_qp_set_counter", "ib_uverbs_query_device", "copy_query_dev_fields", "ib_uverbs_ex_query_device",
    "mlx5_ib_query_device", "ib_umem_get",
})
# On a fault host, rank slots 1 and 3 of every 5 meet the fault (deterministic, 40 %)
FAULT_SLOTS = (1, 3)


def n(probe, layer, *children, err=None, lat=None):
    return (probe, layer, children, err, lat)


# ------------------------------------------------------------------------------ call trees
def umem_pin(release, pin_err=None):
    """The umem pin of a user buffer: OFED's ib_umem_get_peer -> __ib_umem_get, upstream's ib_umem_get."""
    pin = n("pin_user_pages_fast", C, err=pin_err, lat=60_000)
    sg = n("sg_alloc_append_table_from_pages", C)
    if release == RELEASE_A:
        return n("ib_umem_get_peer", C, n("__ib_umem_get", C, pin, sg))
    return n("ib_umem_get", C, pin, sg)


def alloc_uobj():
    return n("rdma_alloc_begin_uobject", C, n("ib_rdmacg_try_charge", C))


def fw(err=None, lat=250_000):
    return n("mlx5_cmd_exec", D, err=err, lat=lat)


def query_device_ex_ok():
    return n("ib_uverbs_ex_query_device", U, n("uverbs_request", U), n("ib_uverbs_get_ucontext_file", U),
             n("mlx5_ib_query_device", D, fw(lat=40_000)), n("uverbs_response", U))


def query_device_ex_refused():
    return n("ib_uverbs_ex_query_device", U, n("uverbs_request", U, err="EOPNOTSUPP"), err="EOPNOTSUPP")


def query_device_plain_ok():
    return n("ib_uverbs_query_device", U, n("uverbs_request", U), n("ib_uverbs_get_ucontext_file", U),
             n("copy_query_dev_fields", U), n("uverbs_response", U))


def alloc_pd():
    return n("ib_uverbs_alloc_pd", U, n("uverbs_request", U), alloc_uobj(),
             n("mlx5_ib_alloc_pd", D, fw()), n("rdma_restrack_add", C), n("uverbs_response", U))


def reg_mr_host(release):
    return n("ib_uverbs_reg_mr", U, alloc_uobj(), n("rdma_lookup_get_uobject", C),
             n("mlx5_ib_reg_user_mr", D, n("mlx5r_umr_resource_init", D), umem_pin(release),
               n("create_real_mr", D, n("alloc_cacheable_mr", D, n("mkey_cache_ent_from_rb_key", D)),
                 n("mlx5r_umr_update_mr_pas", D, lat=30_000))),
             n("rdma_restrack_add", C), n("rdma_lookup_put_uobject", C), n("uverbs_response", U))


def reg_mr_gpu_ok():
    """Release A, GPU memory: the pin fails EFAULT, the peer client takes it, the MR is made."""
    return n("ib_uverbs_reg_mr", U, alloc_uobj(), n("rdma_lookup_get_uobject", C),
             n("mlx5_ib_reg_user_mr", D, n("mlx5r_umr_resource_init", D),
               n("ib_umem_get_peer", C, n("__ib_umem_get", C,
                                          n("pin_user_pages_fast", C, err="EFAULT", lat=5_000),
                                          n("ib_peer_umem_get", P, n("ib_get_peer_client", P), lat=120_000))),
               n("create_real_mr", D, n("reg_create", D, fw()), n("ib_umem_activate_invalidation_notifier", P))),
             n("rdma_restrack_add", C), n("rdma_lookup_put_uobject", C), n("uverbs_response", U))


def reg_mr_gpu_enomem():
    """Fault peer_mem_enomem: the peer client found, then ib_peer_umem_get fails ENOMEM."""
    return n("ib_uverbs_reg_mr", U, alloc_uobj(), n("rdma_lookup_get_uobject", C),
             n("mlx5_ib_reg_user_mr", D, n("mlx5r_umr_resource_init", D),
               n("ib_umem_get_peer", C, n("__ib_umem_get", C,
                                          n("pin_user_pages_fast", C, err="EFAULT", lat=5_000),
                                          n("ib_peer_umem_get", P, n("ib_get_peer_client", P), err="ENOMEM",
                                            lat=80_000),
                                          err="ENOMEM"), err="ENOMEM"),
               err="ENOMEM"),
             n("rdma_lookup_put_uobject", C), n("rdma_alloc_abort_uobject", C), err="ENOMEM")


def create_cq(release, fault=False):
    if fault:  # the buffer pinned (each release its own way), then no usable page size: released
        return n("ib_uverbs_create_cq", U, n("uverbs_request", U),
                 n("create_cq", U, alloc_uobj(),
                   n("mlx5_ib_create_cq", D,
                     n("create_cq_user", D, umem_pin(release), n("ib_umem_release", C), err="EINVAL"),
                     err="EINVAL"),
                   n("rdma_alloc_abort_uobject", C), err="EINVAL"),
                 err="EINVAL")
    return n("ib_uverbs_create_cq", U, n("uverbs_request", U),
             n("create_cq", U, alloc_uobj(),
               n("mlx5_ib_create_cq", D,
                 n("create_cq_user", D, umem_pin(release), n("mlx5_ib_db_map_user", D)),
                 n("mlx5_comp_eqn_get", D),
                 n("mlx5_core_create_cq", D, n("mlx5_cmd_do", D, lat=300_000), n("mlx5_eq_add_cq", D))),
               n("rdma_restrack_add", C), n("uverbs_response", U)))


def create_qp(release):
    drv = [n("create_user_qp", D, n("set_rq_size", D),
             n("_create_user_qp", D, umem_pin(release), n("mlx5_ib_db_map_user", D)),
             n("mlx5_qpc_create_qp", D, fw(lat=400_000)))]
    if release == RELEASE_A:
        drv.insert(0, n("mlx5_ib_dev_res_srq_init", D))
    return n("ib_uverbs_create_qp", U, n("uverbs_request", U),
             n("create_qp", U, alloc_uobj(), n("rdma_lookup_get_uobject", C), n("rdma_lookup_get_uobject", C),
               n("ib_create_qp_user", C, n("mlx5_ib_create_qp", D, *drv), n("ib_create_qp_security", C),
                 n("rdma_restrack_add", C)),
               n("ib_qp_usecnt_inc", C), n("rdma_lookup_put_uobject", C), n("rdma_lookup_put_uobject", C),
               n("uverbs_response", U)))


def _driver_modify(err=None, path=False, atomic=False):
    inner = []
    if path:
        inner.append(n("mlx5_set_path", D))
    if atomic:
        inner.append(n("set_qpc_atomic_flags", D))
    lat = 60_000_000_000 if err == "ETIMEDOUT" else 300_000
    inner.append(n("mlx5_core_qp_modify", D, fw(err=err, lat=lat), err=err))
    return n("ib_security_modify_qp", C,
             n("mlx5_ib_modify_qp", D, n("ib_modify_qp_is_ok", C), n("__mlx5_ib_modify_qp", D, *inner, err=err),
               err=err),
             err=err)


def modify_qp(release, transition, err=None):
    core = []
    if transition == "RESET->INIT":
        if release == RELEASE_A:  # AUTO counter mode: a counter allocated and bound (ALLOC_Q_COUNTER)
            core.append(n("rdma_counter_bind_qp_auto", C,
                          n("alloc_and_bind", C, n("mlx5_ib_counter_alloc_stats", D),
                            n("__rdma_counter_bind_qp", C, n("mlx5_ib_counter_bind_qp", D, fw(lat=150_000),
                                                             n("mlx5_ib_qp_set_counter", D))),
                            n("rdma_restrack_add", C))))
        else:  # counter mode NONE: returns 0 at once
            core.append(n("rdma_counter_bind_qp_auto", C))
        core.append(_driver_modify(atomic=True))
    elif transition == "INIT->RTR":
        core.append(n("rdma_fill_sgid_attr", C, n("rdma_get_gid_attr", C)))
        core.append(n("ib_resolve_eth_dmac", C, n("rdma_check_gid_user_access", C),
                      n("rdma_addr_find_l2_eth_by_grh", C, lat=20_000)))
        core.append(n("rdma_lag_get_ah_roce_slave", C, n("rdma_read_gid_attr_ndev_rcu", C)))
        core.append(_driver_modify(err=err, path=True))
        core.append(n("rdma_lag_put_ah_roce_slave", C))
        core.append(n("rdma_unfill_sgid_attr", C))
    else:
        core.append(_driver_modify())
    mod = [n("rdma_lookup_get_uobject", C)]
    if transition == "INIT->RTR":
        mod.append(n("copy_ah_attr_from_uverbs", U))
    mod.append(n("ib_modify_qp_with_udata", C, n("_ib_modify_qp", C, *core, err=err), err=err))
    mod.append(n("rdma_lookup_put_uobject", C))
    return n("ib_uverbs_modify_qp", U, n("uverbs_request", U), n("modify_qp", U, *mod, err=err), err=err)


# ------------------------------------------------------------------------------ frames
def _frames(node, t, depth, rng, out):
    """Append the frames of `node` entered at host-monotonic time t (pre-order); return its end."""
    probe, layer, children, err, lat = node
    idx = len(out)
    out.append(None)
    cursor = t + rng.randint(800, 3_000)
    for child in children:
        cursor = _frames(child, cursor, depth + 1, rng, out) + rng.randint(300, 1_500)
    if lat:
        cursor += int(lat * rng.uniform(0.7, 1.3)) if lat < 10**9 else lat
    end = cursor + rng.randint(500, 2_000)
    out[idx] = (probe, layer, depth, -ERRNO[err] if err else 0, err, t, end - t)
    return end


def _errors(node):
    probe, _layer, children, err, _lat = node
    found = [(probe, err)] if err else []
    for c in children:
        found += _errors(c)
    return found


def ns(when: dt.datetime) -> int:
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def _host(root, hi, host, rng, manifest, start_ns, date, fault):
    """Write one host's events, counters (+ summary) and truth; record its traces in the manifest."""
    truth_rows = defaultdict(list)
    release = RELEASE[host]
    boot_ns = start_ns - rng.randint(2, 40) * 86_400 * 1_000_000_000  # monotonic 0 at boot
    cols = defaultdict(list)
    counts = Counter()  # (snapshot index, probe) -> calls
    errs = defaultdict(Counter)  # (snapshot index, probe) -> errno -> count
    probes_seen = {}
    record = 0
    pid = 20_000 + hi * 7

    def emit(op, tree, t_wall, proc, job, slot, arg=None, truth=None):
        nonlocal record
        frames = []
        end_mono = _frames(tree, t_wall - boot_ns, 0, rng, frames)
        root_ret = frames[0][3]
        has_err = any(f[4] for f in frames)
        kind = "failure" if has_err else "good"
        record += 1
        tid = f"{host}:b{hi}:{proc}:{record}"
        start_w = t_wall
        end_w = end_mono + boot_ns
        for seq, (probe, layer, depth, ret, err, ts, lat) in enumerate(frames):
            cols["trace_id"].append(tid)
            cols["seq"].append(seq)
            cols["ts_ns"].append(ts)
            cols["pid"].append(proc)
            cols["tid"].append(proc)
            cols["ppid"].append(proc - 1 - slot % RANKS)
            cols["comm"].append(COMM)
            cols["probe"].append(probe)
            cols["layer"].append(layer)
            cols["depth"].append(depth)
            cols["ret"].append(ret)
            cols["errno"].append(err)
            cols["latency_ns"].append(lat)
            cols["arg"].append(arg if seq == 0 else None)
            cols["kind"].append(kind)
            cols["command"].append(op)
            cols["exit_status"].append(root_ret)
            cols["start_time"].append(start_w)
            cols["end_time"].append(end_w)
            cols["host"].append(host)
            cols["kernel_release"].append(release)
            cols["lost_events"].append(0)
            cols["job_id"].append(job)
            snap = min((ts + boot_ns - start_ns) // (SNAPSHOT_S * 1_000_000_000), HOURS * 3600 // SNAPSHOT_S - 1)
            counts[(snap, probe)] += 1
            probes_seen.setdefault(probe, layer)
            if err:
                errs[(snap, probe)][err] += 1
        manifest["traces"] += 1
        manifest["events"] += len(frames)
        if kind == "good":
            manifest["good"] += 1
            assert end_w - start_w < 50_000_000, (op, end_w - start_w)
        t = truth or {}
        if t.get("root_cause"):
            manifest["bifurcation_seq"][tid] = next(
                i for i, f in enumerate(frames) if f[0] == t["probe"] and f[4] == t["errno"])
        held_out = kind == "good" and record % 20 == 0  # good traces reserved for false-finding checks
        manifest["held_out"] += held_out
        truth_rows["trace_id"].append(tid)
        truth_rows["host"].append(host)
        truth_rows["kind"].append(kind)
        truth_rows["root_cause"].append(t.get("root_cause"))
        truth_rows["bifurcation_probe"].append(t.get("probe"))
        truth_rows["bifurcation_errno"].append(t.get("errno"))
        truth_rows["origin_layer"].append(t.get("origin_layer"))
        truth_rows["expected_error"].append(bool(t.get("expected", False)))
        truth_rows["held_out"].append(held_out)
        return tid, end_w

    def routine(name):
        r = ROUTINE[name]
        return {"probe": r["probe"], "errno": r["errno"], "origin_layer": r["origin_layer"], "expected": True}

    def faulty(name):
        f = FAULTS[name]
        return {"root_cause": name, "probe": f["probe"], "errno": f["errno"], "origin_layer": f["origin_layer"]}

    jobs = HOURS * 3600 // JOB_EVERY_S
    for j in range(jobs):
        job_t = start_ns + j * JOB_EVERY_S * 1_000_000_000 + rng.randint(20, 480) * 1_000_000_000
        job = f"{host}-{40_000 + j}"
        for r in range(RANKS):
            slot = j * RANKS + r
            pid += 1 + RANKS  # the launcher's pid is below its ranks'
            proc = pid
            victim = fault is not None and slot % 5 in FAULT_SLOTS
            t = job_t + r * rng.randint(5, 40) * 1_000_000

            def step(t, gap=(1, 25)):
                return t + rng.randint(*gap) * 1_000_000

            if release == RELEASE_B:
                tid, t = emit("query_device", query_device_ex_refused(), t, proc, job, slot,
                              truth=routine("b_ex_query_refused"))
                manifest["routine"]["b_ex_query_refused"]["trace_ids"].add(tid)
                manifest["routine"]["b_ex_query_refused"]["hosts"].add(host)
                _, t = emit("query_device", query_device_plain_ok(), step(t, (0, 1)), proc, job, slot)
            else:
                _, t = emit("query_device", query_device_ex_ok(), t, proc, job, slot)
            _, t = emit("alloc_pd", alloc_pd(), step(t), proc, job, slot)
            _, t = emit("reg_mr", reg_mr_host(release), step(t), proc, job, slot)
            if release == RELEASE_A:
                if victim and fault == "peer_mem_enomem":
                    tid, _ = emit("reg_mr", reg_mr_gpu_enomem(), step(t), proc, job, slot,
                                  truth=faulty("peer_mem_enomem"))
                    manifest["faults"]["peer_mem_enomem"]["trace_ids"].add(tid)
                    continue  # the rank dies
                tid, t = emit("reg_mr", reg_mr_gpu_ok(), step(t), proc, job, slot,
                              truth=routine("a_gpu_pin_absorbed"))
                manifest["routine"]["a_gpu_pin_absorbed"]["trace_ids"].add(tid)
                manifest["routine"]["a_gpu_pin_absorbed"]["hosts"].add(host)
            if victim and fault == "cq_bad_page_size":
                tid, _ = emit("create_cq", create_cq(release, fault=True), step(t), proc, job, slot,
                              truth=faulty("cq_bad_page_size"))
                manifest["faults"]["cq_bad_page_size"]["trace_ids"].add(tid)
                continue
            _, t = emit("create_cq", create_cq(release), step(t), proc, job, slot)
            _, t = emit("create_qp", create_qp(release), step(t), proc, job, slot)
            _, t = emit("modify_qp", modify_qp(release, "RESET->INIT"), step(t), proc, job, slot,
                        arg="RESET->INIT")
            if victim and fault == "fw_cmd_timeout":
                tid, _ = emit("modify_qp", modify_qp(release, "INIT->RTR", err="ETIMEDOUT"), step(t), proc,
                              job, slot, arg="INIT->RTR", truth=faulty("fw_cmd_timeout"))
                manifest["faults"]["fw_cmd_timeout"]["trace_ids"].add(tid)
                continue
            _, t = emit("modify_qp", modify_qp(release, "INIT->RTR"), step(t), proc, job, slot, arg="INIT->RTR")
            _, t = emit("modify_qp", modify_qp(release, "RTR->RTS"), step(t), proc, job, slot, arg="RTR->RTS")

    # events: one part file per host-day, as ingest leaves it
    rows = len(cols["trace_id"])
    for name in ("path", "path2", "output", "metadata", "repeat_count"):
        cols.setdefault(name, [None] * rows)
    events = pa.Table.from_pydict({f.name: cols[f.name] for f in schema.EVENTS}, schema=schema.EVENTS)
    schema.write_partition(events, root, "events", date, host, "part-00000.parquet", durable=False,
                           summarise=True)

    # counters: every probe of the host's set in every 5-minute snapshot
    probe_set = dict(probes_seen)  # the probes this release has, called or not
    probe_set.setdefault("ib_umem_release", C)
    probe_set.setdefault("ib_uverbs_query_device", U)
    if release == RELEASE_A:
        probe_set.setdefault("ib_umem_get", C)
    crows = defaultdict(list)
    for s in range(HOURS * 3600 // SNAPSHOT_S):
        snap_ns = start_ns + (s + 1) * SNAPSHOT_S * 1_000_000_000
        for probe, layer in sorted(probe_set.items()):
            e = errs.get((s, probe), {})
            crows["host"].append(host)
            crows["snapshot_time"].append(snap_ns)
            crows["interval_s"].append(float(SNAPSHOT_S))
            crows["kernel_release"].append(release)
            crows["vendor"].append("mlx5")
            crows["probe_set"].append("rdma")
            crows["probe"].append(probe)
            crows["layer"].append(layer)
            crows["live"].append(True)
            crows["invocations"].append(counts.get((s, probe), 0))
            crows["failures"].append(sum(e.values()))
            crows["errno_counts"].append([{"errno": k, "count": v} for k, v in sorted(e.items())])
            crows["lost_records"].append(0)
    counters = pa.Table.from_pydict(dict(crows), schema=schema.COUNTERS)
    cpath = schema.write_partition(counters, root, "counters", date, host, "part-00000.parquet", durable=False)
    schema.write_counter_buckets(cpath, counters.drop_columns(["host"]), durable=False)

    truth = pa.Table.from_pydict(dict(truth_rows), schema=schema.TRUTH)
    schema.write_partition(truth, root, "truth", date, host, "part-00000.parquet", durable=False)


def generate(root: str | Path, seed: int = 48) -> dict:
    """Write the dataset under `root` (events, counters, counter_buckets, truth); return the manifest."""
    root = Path(root)
    rng = random.Random(seed)
    start_ns = ns(START)
    end_ns = start_ns + HOURS * 3600 * 1_000_000_000
    date = START.strftime("%Y-%m-%d")
    manifest = {
        "faults": {k: dict(v, trace_ids=set(), hosts=set(v["hosts"])) for k, v in FAULTS.items()},
        "routine": {k: dict(v, trace_ids=set(), hosts=set()) for k, v in ROUTINE.items()},
        "good": 0, "traces": 0, "events": 0, "held_out": 0,
        "bifurcation_seq": {},  # fault trace id -> seq of its fault frame
    }
    fault_of_host = {h: name for name, f in FAULTS.items() for h in f["hosts"]}
    for hi, host in enumerate(HOSTS):
        _host(root, hi, host, rng, manifest, start_ns, date, fault_of_host.get(host))
    assert end_ns > start_ns
    return manifest


if __name__ == "__main__":  # pragma: no cover - by hand: python -m tests.fleetgen48.generator DIR
    import sys

    m = generate(sys.argv[1])
    print({k: m[k] for k in ("good", "traces", "events")},
          {k: len(v["trace_ids"]) for k, v in m["faults"].items()},
          {k: len(v["trace_ids"]) for k, v in m["routine"].items()})

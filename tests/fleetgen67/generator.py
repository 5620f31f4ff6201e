"""fleetgen67's fleet: written blind from reference/rdma_control_path.yaml (call trees, errnos),
tracer/schema.py (tables), README.md / docs/architecture.md (what the audit promises) and
bpf/calltree.c's record model as the other generators' docstrings describe it.

Tracer model imitated: every call counted in the host's 5-minute counters (invocations, failures
and errno histogram per probe, every failing frame counted, absorbed ones included); a call tree
with a failing frame sent as kind 'failure', the first K per (signature, 30 s interval) of a host,
the first standing for the rest (repeat_count); a call with no failing frame sent as kind 'good'
only when its root entered in a capture window (60 s every 7 minutes), latency measured there.

Workload mixes (per host, changing over the day, nothing wrong):
  gpu-heavy  : host-memory registrations plus GPU registrations, 10x more GPU ones from 14:00;
  host-only  : host memory only (pin never fails);
  mixed      : GPU registrations changing hour by hour (0 .. 40 per 5 minutes);
  converted  : two host-only hosts taken by a GPU-only tenant from 15:30 (40-60 GPU registrations and
               0-2 host-memory ones per 5 minutes: pin_user_pages_fast fails on ~97 % of its calls).
Every GPU registration's pin_user_pages_fast fails EFAULT and ib_peer_umem_get takes the range
(R1, root succeeds). Job launches meet the rdma cgroup limit: alloc_pd's ib_rdmacg_try_charge
EAGAIN, the launcher retrying at once and succeeding (R2), launches several times more often on
gpu-heavy hosts in the afternoon.
Faults (faults=True):
  F1 peer client gone on one gpu-heavy host from 14:30: every GPU registration fails,
     ib_peer_umem_get EFAULT returned by reg_mr (the absorbed error's fallback failing);
  F2 a host-local errno rising on one host-only host from 15:00: ALLOC_PD refused LIM_ERR,
     mlx5_cmd_exec ENOMEM, a quarter of the calls at first, nine tenths from 16:00;
  F3 past the absorbed error, on a gpu-heavy host from 16:00: CREATE_MKEY refused LIM_ERR under
     reg_create for 15 % of the GPU registrations (mlx5_cmd_exec ENOMEM, the pin's EFAULT absorbed
     before it): a host-local errno among the absorbed ones at their afternoon peak;
  F4 intermittent from the window's start on a mixed host: the peer client's get_pages failing
     ENOMEM on 15 % of its GPU registrations (ib_peer_umem_get ENOMEM returned), following the
     host's hourly mix (none in the hours it registers no GPU memory);
  F5 the absorbed EAGAIN becoming fatal: one mixed host's rdma cgroup limit at zero from 15:15, every
     alloc_pd refused at ib_rdmacg_try_charge, each launcher giving up (a process of its own that
     makes no later call), no registration after it -- the errno every host retries through.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import polars as pl

from tracer.schema import partition_path, write_counter_buckets, write_table

DATE = "2026-03-10"
T0 = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)
HOURS = 6
SNAPSHOT_S = 300
K = 4
HOSTS = [f"gx-{i:02d}" for i in range(20)]
MIX = {h: ("gpu-heavy" if i % 5 in (0, 3) else "mixed" if i % 5 == 1 else "host-only") for i, h in enumerate(HOSTS)}
# a new tenant whose jobs register GPU memory only, from 15:30 on two host-only hosts: pin_user_pages_fast
# then fails (absorbed) on nearly every call there, a rate no other host shows -- still nothing wrong
CONVERTED, CONVERTED_SINCE = ("gx-14", "gx-17"), T0 + dt.timedelta(hours=3, minutes=30)
F1_HOST, F1_SINCE = "gx-03", T0 + dt.timedelta(hours=2, minutes=30)
F2_HOST, F2_SINCE = "gx-07", T0 + dt.timedelta(hours=3)
F3_HOST, F3_SINCE = "gx-10", T0 + dt.timedelta(hours=4)
F4_HOST, F4_SINCE = "gx-06", T0
F5_HOST, F5_SINCE = "gx-11", T0 + dt.timedelta(hours=3, minutes=15)
LAYER = {"ib_uverbs_reg_mr": "uverbs", "ib_uverbs_alloc_pd": "uverbs", "uverbs_request": "uverbs",
         "uverbs_response": "uverbs", "rdma_alloc_begin_uobject": "core", "rdma_lookup_get_uobject": "core",
         "rdma_lookup_put_uobject": "core", "rdma_alloc_abort_uobject": "core", "rdma_restrack_add": "core",
         "ib_rdmacg_try_charge": "core", "ib_umem_get": "core", "pin_user_pages_fast": "core",
         "sg_alloc_append_table_from_pages": "core", "__ib_umem_release": "core",
         "ib_peer_umem_get": "peer-mem", "ib_get_peer_client": "peer-mem",
         "ib_umem_activate_invalidation_notifier": "peer-mem", "mlx5_ib_reg_user_mr": "driver",
         "create_real_mr": "driver", "alloc_cacheable_mr": "driver", "reg_create": "driver",
         "mlx5_cmd_exec": "driver", "mlx5_ib_alloc_pd": "driver"}
# family -> (operation, origin probe, errno, origin layer)
FAMILIES = {
    "gpu_pin_peer_rescue": ("reg_mr", "pin_user_pages_fast", "EFAULT", "core"),
    "rdmacg_charge_retried": ("alloc_pd", "ib_rdmacg_try_charge", "EAGAIN", "core"),
    "peer_client_gone": ("reg_mr", "ib_peer_umem_get", "EFAULT", "peer-mem"),
    "alloc_pd_lim_err": ("alloc_pd", "mlx5_cmd_exec", "ENOMEM", "driver"),
    "gpu_mkey_lim_err": ("reg_mr", "mlx5_cmd_exec", "ENOMEM", "driver"),
    "peer_get_pages_enomem": ("reg_mr", "ib_peer_umem_get", "ENOMEM", "peer-mem"),
    "rdmacg_limit_zero": ("alloc_pd", "ib_rdmacg_try_charge", "EAGAIN", "core"),
}
ROUTINE = ("gpu_pin_peer_rescue", "rdmacg_charge_retried")
ROOT_CAUSES = {"peer_client_gone": {F1_HOST: F1_SINCE}, "alloc_pd_lim_err": {F2_HOST: F2_SINCE},
               "gpu_mkey_lim_err": {F3_HOST: F3_SINCE}, "peer_get_pages_enomem": {F4_HOST: F4_SINCE},
               "rdmacg_limit_zero": {F5_HOST: F5_SINCE}}

_REG_HEAD = [(0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None),
             (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", None), (2, "ib_umem_get", None)]
_REG_TAIL = [(1, "rdma_restrack_add", None), (1, "rdma_lookup_put_uobject", None), (1, "uverbs_response", None)]
# name -> (operation, argument, frames of (depth, function, errno))
TREES = {
    "mr_host": ("reg_mr", "host", _REG_HEAD + [
        (3, "pin_user_pages_fast", None), (3, "sg_alloc_append_table_from_pages", None),
        (2, "create_real_mr", None), (3, "alloc_cacheable_mr", None)] + _REG_TAIL),
    "mr_gpu": ("reg_mr", "gpu", _REG_HEAD + [
        (3, "pin_user_pages_fast", "EFAULT"), (3, "__ib_umem_release", None), (3, "ib_peer_umem_get", None),
        (4, "ib_get_peer_client", None), (2, "create_real_mr", None), (3, "reg_create", None),
        (4, "mlx5_cmd_exec", None),
        (3, "ib_umem_activate_invalidation_notifier", None)] + _REG_TAIL),
    "mr_gpu_noclient": ("reg_mr", "gpu", [
        (0, "ib_uverbs_reg_mr", "EFAULT"), (1, "rdma_alloc_begin_uobject", None),
        (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", "EFAULT"), (2, "ib_umem_get", "EFAULT"),
        (3, "pin_user_pages_fast", "EFAULT"), (3, "__ib_umem_release", None), (3, "ib_peer_umem_get", "EFAULT"),
        (4, "ib_get_peer_client", None), (1, "rdma_lookup_put_uobject", None),
        (1, "rdma_alloc_abort_uobject", None)]),
    "mr_gpu_mkey": ("reg_mr", "gpu", [
        (0, "ib_uverbs_reg_mr", "ENOMEM"), (1, "rdma_alloc_begin_uobject", None),
        (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", "ENOMEM"), (2, "ib_umem_get", None),
        (3, "pin_user_pages_fast", "EFAULT"), (3, "__ib_umem_release", None), (3, "ib_peer_umem_get", None),
        (4, "ib_get_peer_client", None), (2, "create_real_mr", "ENOMEM"), (3, "reg_create", "ENOMEM"),
        (4, "mlx5_cmd_exec", "ENOMEM"), (1, "rdma_lookup_put_uobject", None),
        (1, "rdma_alloc_abort_uobject", None)]),
    "mr_gpu_peer_enomem": ("reg_mr", "gpu", [
        (0, "ib_uverbs_reg_mr", "ENOMEM"), (1, "rdma_alloc_begin_uobject", None),
        (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", "ENOMEM"), (2, "ib_umem_get", "ENOMEM"),
        (3, "pin_user_pages_fast", "EFAULT"), (3, "__ib_umem_release", None), (3, "ib_peer_umem_get", "ENOMEM"),
        (4, "ib_get_peer_client", None), (1, "rdma_lookup_put_uobject", None),
        (1, "rdma_alloc_abort_uobject", None)]),
    "pd": ("alloc_pd", None, [
        (0, "ib_uverbs_alloc_pd", None), (1, "uverbs_request", None), (1, "rdma_alloc_begin_uobject", None),
        (2, "ib_rdmacg_try_charge", None), (1, "mlx5_ib_alloc_pd", None), (2, "mlx5_cmd_exec", None),
        (1, "rdma_restrack_add", None), (1, "uverbs_response", None)]),
    "pd_cgroup": ("alloc_pd", None, [
        (0, "ib_uverbs_alloc_pd", "EAGAIN"), (1, "uverbs_request", None),
        (1, "rdma_alloc_begin_uobject", "EAGAIN"), (2, "ib_rdmacg_try_charge", "EAGAIN")]),
    "pd_cgroup_zero": ("alloc_pd", None, [
        (0, "ib_uverbs_alloc_pd", "EAGAIN"), (1, "uverbs_request", None),
        (1, "rdma_alloc_begin_uobject", "EAGAIN"), (2, "ib_rdmacg_try_charge", "EAGAIN")]),
    "pd_lim_err": ("alloc_pd", None, [
        (0, "ib_uverbs_alloc_pd", "ENOMEM"), (1, "uverbs_request", None), (1, "rdma_alloc_begin_uobject", None),
        (2, "ib_rdmacg_try_charge", None), (1, "mlx5_ib_alloc_pd", "ENOMEM"), (2, "mlx5_cmd_exec", "ENOMEM"),
        (1, "rdma_alloc_abort_uobject", None)]),
}
TREE_FAMILY = {"mr_gpu": "gpu_pin_peer_rescue", "pd_cgroup": "rdmacg_charge_retried",
               "mr_gpu_noclient": "peer_client_gone", "pd_lim_err": "alloc_pd_lim_err",
               "mr_gpu_mkey": "gpu_mkey_lim_err", "mr_gpu_peer_enomem": "peer_get_pages_enomem",
               "pd_cgroup_zero": "rdmacg_limit_zero"}
ERRNO_NUM = {"EFAULT": 14, "EAGAIN": 11, "ENOMEM": 12}
PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})


def _gpu_regs(rng: random.Random, host: str, t: dt.datetime, flat: bool) -> int:
    """GPU registrations in the 5 minutes from t: the workload mix, nothing wrong."""
    mix, hour = MIX[host], (t - T0).seconds // 3600
    if host in CONVERTED and t >= CONVERTED_SINCE and not flat:
        return rng.randint(40, 60)
    if mix == "gpu-heavy":
        return rng.randint(4, 8) * (10 if t.hour >= 14 and not flat else 1)
    if mix == "mixed" and flat:
        return rng.randint(0, 3)
    if mix == "mixed":
        level = random.Random(f"{host}-{hour}").choice([0, 0, 3, 10, 25, 40])
        return max(0, level + rng.randint(-2, 2)) if level else 0
    return 0


def _calls(rng: random.Random, host: str, t: dt.datetime, faults: bool,
           flat: bool = False) -> list[tuple[dt.datetime, str]]:
    """(entry time, tree) of every call of the host in the 5 minutes from t."""
    out = []

    def at():
        return t + dt.timedelta(microseconds=rng.randrange(SNAPSHOT_S * 1_000_000))

    converted = host in CONVERTED and t >= CONVERTED_SINCE and not flat
    for _ in range(rng.randint(0, 2) if converted else rng.randint(24, 36)):
        out.append((at(), "mr_host"))
    f1 = faults and host == F1_HOST and t >= F1_SINCE
    f3 = faults and host == F3_HOST and t >= F3_SINCE
    f4 = faults and host == F4_HOST
    for _ in range(_gpu_regs(rng, host, t, flat)):
        out.append((at(), "mr_gpu_noclient" if f1 else "mr_gpu_mkey" if f3 and rng.random() < 0.15
                    else "mr_gpu_peer_enomem" if f4 and rng.random() < 0.15 else "mr_gpu"))
    busy = MIX[host] == "gpu-heavy" and t.hour >= 14 and not flat
    for _ in range(rng.randint(8, 14)):
        out.append((at(), "pd"))
    # job launches meeting the cgroup limit: each refused charge retried at once, succeeding
    for _ in range(sum(rng.random() < (0.5 if busy else 0.08) for _ in range(8))):
        s = at()
        out.append((s, "pd_cgroup"))
        out.append((s + dt.timedelta(milliseconds=2), "pd"))
    if faults and host == F5_HOST and t >= F5_SINCE:
        # the host's rdma cgroup limit at zero: every launch's alloc_pd refused, the launcher gives up
        # (its process makes no later call), so no registration follows either
        return sorted((s, "pd_cgroup_zero") for s, name in out if name == "pd")
    if faults and host == F2_HOST and t >= F2_SINCE:
        p = 0.25 if t < F2_SINCE + dt.timedelta(hours=1) else 0.9
        out = [(s, "pd_lim_err" if name == "pd" and rng.random() < p else name) for s, name in out]
    return sorted(out)


def _in_window(s: dt.datetime) -> bool:
    return (s - T0).total_seconds() % 420 < 60


def generate(root, *, seed: int = 67, faults: bool = True, flat: bool = False) -> dict:
    """The fleet into `root`. `flat`: a quieter day (with faults=False) -- every host at its
    morning mix all day, no afternoon ramp, no GPU-only tenant, mixed hosts at 0-3 GPU
    registrations per 5 minutes: the absorbed errors at far lower rates than the faulted day's."""
    root = Path(root)
    rng = random.Random(seed)
    n_records = 0
    for hi, host in enumerate(HOSTS):
        ev_rows, truth_rows, counter_rows = [], [], []
        seen: dict[tuple, list] = {}
        rec = 0
        for step in range(HOURS * 3600 // SNAPSHOT_S):
            t = T0 + dt.timedelta(seconds=step * SNAPSHOT_S)
            inv: dict[str, int] = dict.fromkeys(PROBES, 0)
            errs: dict[str, dict[str, int]] = {p: {} for p in PROBES}
            for s, name in _calls(rng, host, t, faults, flat):
                op, arg, frames = TREES[name]
                for _, fn, e in frames:
                    inv[fn] += 1
                    if e:
                        errs[fn][e] = errs[fn].get(e, 0) + 1
                failing = any(e for _, _, e in frames)
                if not failing and not _in_window(s):
                    continue
                if failing:
                    key = (name, int((s - T0).total_seconds() // 30))
                    if key in seen:
                        first = seen[key]
                        if len(first) >= K:
                            first[0]["repeat_count"] = (first[0]["repeat_count"] or 1) + 1
                            continue
                rec += 1
                tid = f"{host}:b0:{4000 + hi}:{rec}"
                pid = 10_000 + (int((s - T0).total_seconds()) // 900) % 50
                if name == "pd_cgroup_zero":  # a launcher of its own, dying of the refusal
                    pid = 20_000 + rec
                root_row = None
                ts = int(s.timestamp() * 1e9)
                for seq, (depth, fn, e) in enumerate(frames):
                    row = {"trace_id": tid, "seq": seq, "ts_ns": ts + seq * 1000, "pid": pid, "tid": pid,
                           "ppid": 1, "comm": "trainer" if op == "reg_mr" else "launcher", "probe": fn,
                           "layer": LAYER[fn], "depth": depth, "ret": -ERRNO_NUM[e] if e else 0, "errno": e,
                           "latency_ns": None if failing else 40_000 // (depth + 1), "path": None,
                           "arg": arg if seq == 0 else None, "path2": None, "output": None,
                           "kind": "failure" if failing else "good", "command": op,
                           "exit_status": -ERRNO_NUM[frames[0][2]] if frames[0][2] else 0,
                           "start_time": s, "end_time": s + dt.timedelta(microseconds=50), "host": host,
                           "kernel_release": "5.15.0-mlnx", "lost_events": 0, "job_id": None,
                           "metadata": None, "repeat_count": None}
                    if seq == 0:
                        root_row = row
                    ev_rows.append(row)
                if failing:
                    seen.setdefault(key, []).append(root_row)
                fam = TREE_FAMILY.get(name)
                if fam:
                    _, probe, errno, layer = FAMILIES[fam]
                else:
                    probe = errno = layer = None
                truth_rows.append({"trace_id": tid, "host": host, "kind": "failure" if failing else "good",
                                   "root_cause": fam, "bifurcation_probe": probe, "bifurcation_errno": errno,
                                   "origin_layer": layer, "expected_error": fam in ROUTINE if fam else False,
                                   "held_out": (not failing) and rec % 5 == 0})
            snap = t + dt.timedelta(seconds=SNAPSHOT_S)
            for p in PROBES:
                counter_rows.append({"host": host, "snapshot_time": snap, "interval_s": float(SNAPSHOT_S),
                                     "kernel_release": "5.15.0-mlnx", "vendor": "mlx5", "probe_set": "fleet",
                                     "probe": p, "layer": LAYER[p], "live": True, "invocations": inv[p],
                                     "failures": sum(errs[p].values()),
                                     "errno_counts": [{"errno": e, "count": c} for e, c in sorted(errs[p].items())],
                                     "lost_records": 0})
        n_records += rec
        name = "part-0000.parquet"
        write_table(pl.DataFrame(ev_rows, infer_schema_length=None), partition_path(root, "events", DATE, host, name),
                    "events", durable=False, omit_columns=["host"])
        write_table(pl.DataFrame(truth_rows), partition_path(root, "truth", DATE, host, name), "truth",
                    durable=False, omit_columns=["host"])
        cpath = partition_path(root, "counters", DATE, host, name)
        write_table(pl.DataFrame(counter_rows), cpath, "counters", durable=False, omit_columns=["host"])
        write_counter_buckets(cpath, durable=False)
    return {"records": n_records, "hosts": len(HOSTS)}

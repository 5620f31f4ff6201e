"""Heterogeneous fleet, one routine family per generation: a blind fleet generator (see
__init__.py for the angle).

Written from reference/rdma_control_path.yaml (the operations' trees, the errno lists, the
vendor_equivalents and ofed_peer_memory sections), tracer/schema.py (tables, written through its
writers in the dataset layout the ingest produces: <root>/<table>/date=D/host=H/part-*.parquet, a
counter_buckets summary beside every counters file), README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' module docstrings. It imports only tracer.schema
of the project.

The fleet
---------
`hosts` (12 by default, a multiple of 3, at least 9) RoCE hosts in three generations, a third each,
named by generation (`fg42-a01`, `fg42-b01`, `fg42-c01`, ...):

  A  ConnectX-6 Dx (firmware 22.39.2048), the in-tree mlx5 of 6.8.0-60-generic: umem pinned by
     ib_umem_get directly; no peer memory (GPU buffers are staged through host memory).
  B  ConnectX-7 (firmware 28.42.1000), MLNX_OFED 24.07 with nvidia-peermem on 5.15.0-119-generic:
     every mlx5 umem goes through ib_umem_get_peer -> __ib_umem_get (the reference: "mlx5 calls it
     for MR, CQ buffer, QP buffer and doorbell page"); GPU buffers are registered directly.
  C  Broadcom BCM57608 (bnxt_re, in-tree) on 6.8.0-60-generic: the vendor_equivalents' bnxt_re_*
     ops and the driver_internals' qplib callees.

Two datasets (decision: `baseline learn` has --since but no end, so the good window is a dataset
of its own, as an operator would extract it): `<root>/good` holds the good window, `good_days` (2)
mornings, and `<root>/day` the audited morning, the day after. Each morning is observed from 06:00
to 06:00 + `hours` (2) UTC; the tracer's snapshots cover exactly that span. One job slot a host,
4 ranks a job (comm python3, started 0.2 s apart under one launcher), 15-30 minutes, the next job 1-3
minutes after one ends (the first within 2 minutes of 06:00). A rank's start-up, 30 ms a call:
alloc_pd; create_cq; reg_mr twice (B: a host staging buffer, then a GPU buffer); per QP (2)
create_qp, then modify_qp RESET->INIT, INIT->RTR, RTR->RTS (arg the transition); then a reg_mr every
60-120 s until the job's end (B: GPU memory). A rank that dies of a call ends its job: the launcher
kills the other ranks 0.5 s after that call returned (a call entered after that never happens; one
in flight then completes in the kernel, counted and recorded, and the rank dies on its way out), and the scheduler requeues the job as a new one 60-120 s later.

The routine, one family per generation (expected_error = True, root_cause = the family)
---------------------------------------------------------------------------------------------
  cx6_cqe_pad_probe   A: the framework asks each CQ for 128-byte CQE padding first (its build
                      probes the capability) and this firmware has no such cap: create_cq_user
                      returns EOPNOTSUPP ("CQE compression or 128B padding requested without HW
                      cap"), up through mlx5_ib_create_cq, create_cq and ib_uverbs_create_cq (the
                      uobject aborted, the CQ buffer's umem released on the unwind); 30 ms later
                      the rank creates the CQ without the flag and goes on. Every rank start.
  peermem_pin_fallback B: a GPU buffer cannot be pinned by GUP: pin_user_pages_fast EFAULT under
                      __ib_umem_get, which then asks ib_peer_umem_get (ib_get_peer_client finds
                      nvidia-peermem) and succeeds; reg_create (peer umems skip the mkey cache),
                      mlx5r_umr_update_mr_pas, ib_umem_activate_invalidation_notifier: the
                      reference's gpu_direct_trace_shape. Absorbed: the root succeeds. Every GPU
                      registration (a start-up's second reg_mr, every periodic one).
  bnxt_counter_auto   C: the port counter mode is AUTO on these hosts (the vendor's tuning profile
                      sets `rdma statistic qp set link ... auto`), and bnxt_re has no counter ops:
                      rdma_counter_bind_qp_auto returns ENOMEM on every RESET->INIT, which
                      _ib_modify_qp ignores (the reference's "consequence"). Absorbed.
On the mlx5 hosts the counter mode is the default: rdma_counter_bind_qp_auto returns 0, nothing
below it.

The fault (faults=True; the audited day only; expected_error = False)
---------------------------------------------------------------------
  cx7_fw_flash_cqe_pad  B hosts 1 and 2 (`fg42-b01`, `fg42-b02`) get firmware 28.43.1014 at
                      `fault_at` (07:00): the flash resets the NIC's NV configuration and the
                      128-byte CQE padding capability is gone. Generation B's image REQUIRES the
                      padding (its NICs always had it: no fallback in that build), so from the
                      first job started after the flash every rank's create_cq fails with the
                      very probe and errno of A's routine -- create_cq_user EOPNOTSUPP, up to
                      ib_uverbs_create_cq -- and the rank dies; the job crash-loops until the
                      window's end. The flash waits for the job running at 07:00 to end (the
                      host is drained for it); the jobs after it carry the new firmware in their
                      metadata. On good days generation B never fails a create_cq.
The truth of a failure record: the family (routine or fault) as root_cause; bifurcation = origin
= the deepest failing frame (create_cq_user / pin_user_pages_fast / rdma_counter_bind_qp_auto):
every edge before it is one the operation's good traces of that generation take.

The tracer (probe set "rdma", fexit on every function of the generation's trees; statics the
reference marks usually inlined -- rdma_fill_sgid_attr, ib_resolve_unicast_gid_dmac, alloc_and_bind,
verbs.c's and mlx5's create_qp, _create_user_qp -- are no frames): 5-second snapshots at a per-host
phase; counters for every probe of the host's set in every snapshot, exact (every frame counted in
the snapshot holding its own return, recorded or not; lost_records 0); a tree is a record attempt
when a frame fails: the first K=3 of a tree shape in a snapshot are records, the rest counted in
the kernel and carried by the snapshot's last record of that shape as its repeat_count (null = 1);
good trees only when their root entered a capture window, at most 12 of a tree shape a window.
Capture windows: the first 30 s of every 10 minutes at a per-host phase, and 10 s opened by the
job prolog's SIGUSR1 at each job start (so every start-up is timed). A tree whose root entered a
window is timed (ts_ns and latency_ns per frame); outside, every frame carries the 4 ms tick its
root returned in and latency null. A record belongs to the snapshot holding its root's return; no
tree exceeds the slot (lost_events 0).
"""

from __future__ import annotations

import bisect
import datetime as dt
import errno as errno_mod
import random
from pathlib import Path

import numpy as np
import polars as pl

from tracer.schema import metadata_list, write_counter_buckets, write_partition

UTC = dt.UTC
K_RECORDS = 3  # records per tree shape and snapshot
WINDOW_CAP = 12  # good trees per shape and capture window
SNAP_S = 5.0
TICK_S = 0.004
CALL_GAP_S = 0.03
RANKS = 4
DAY = dt.date(2027, 1, 12)  # the audited day; the good window is the days before it
FIRST_HOUR = 6

GENERATIONS = {
    "A": {"vendor": "mlx5", "release": "6.8.0-60-generic", "umem": "inbox",
          "metadata": {"generation": "A", "nic": "ConnectX-6 Dx", "firmware": "22.39.2048",
                       "driver": "mlx5_ib inbox 6.8", "peermem": "none", "image": "u2404-nccl2.21-probe"}},
    "B": {"vendor": "mlx5", "release": "5.15.0-119-generic", "umem": "peer",
          "metadata": {"generation": "B", "nic": "ConnectX-7", "firmware": "28.42.1000",
                       "driver": "MLNX_OFED 24.07", "peermem": "nvidia-peermem 560.35.03",
                       "image": "u2204-ofed-nccl2.21-pad"}},
    "C": {"vendor": "bnxt_re", "release": "6.8.0-60-generic", "umem": "inbox",
          "metadata": {"generation": "C", "nic": "BCM57608", "firmware": "230.2.49.0",
                       "driver": "bnxt_re inbox 6.8", "peermem": "none", "image": "u2404-nccl2.21-probe"}},
}
FLASHED_FIRMWARE = "28.43.1014"

# probe -> layer
LAYER: dict[str, str] = {}
for _fn in ("ib_uverbs_alloc_pd", "ib_uverbs_create_cq", "ib_uverbs_create_qp", "ib_uverbs_modify_qp",
            "ib_uverbs_reg_mr", "uverbs_request", "uverbs_response", "create_cq", "create_qp", "modify_qp"):
    LAYER[_fn] = "uverbs"
for _fn in ("rdma_alloc_begin_uobject", "rdma_alloc_abort_uobject", "rdma_restrack_add", "rdma_lookup_get_uobject",
            "rdma_lookup_put_uobject", "ib_create_qp_user", "ib_create_qp_security", "ib_qp_usecnt_inc",
            "ib_modify_qp_with_udata", "_ib_modify_qp", "rdma_counter_bind_qp_auto", "ib_security_modify_qp",
            "ib_modify_qp_is_ok", "rdma_get_gid_attr", "ib_resolve_eth_dmac", "rdma_check_gid_user_access",
            "rdma_addr_find_l2_eth_by_grh", "rdma_lag_get_ah_roce_slave", "rdma_lag_put_ah_roce_slave",
            "ib_umem_get", "ib_umem_get_peer", "__ib_umem_get", "pin_user_pages_fast",
            "sg_alloc_append_table_from_pages", "ib_umem_release"):
    LAYER[_fn] = "core"
for _fn in ("ib_peer_umem_get", "ib_get_peer_client", "ib_umem_activate_invalidation_notifier"):
    LAYER[_fn] = "peer-mem"
for _fn in ("mlx5_ib_alloc_pd", "mlx5_cmd_exec", "mlx5_ib_create_cq", "create_cq_user", "mlx5_ib_db_map_user",
            "mlx5_comp_eqn_get", "mlx5_core_create_cq", "mlx5_ib_create_qp", "create_user_qp", "mlx5_qpc_create_qp",
            "mlx5_ib_modify_qp", "__mlx5_ib_modify_qp", "mlx5_set_path", "mlx5_core_qp_modify", "mlx5_ib_reg_user_mr",
            "mlx5r_umr_resource_init", "create_real_mr", "alloc_cacheable_mr", "reg_create", "mlx5r_umr_update_mr_pas",
            "bnxt_re_alloc_pd", "bnxt_qplib_alloc_pd", "bnxt_re_create_cq", "bnxt_qplib_create_cq", "bnxt_re_create_qp",
            "bnxt_re_test_qp_limits", "bnxt_re_init_user_qp", "bnxt_qplib_create_qp", "bnxt_re_modify_qp",
            "bnxt_qplib_modify_qp", "bnxt_re_reg_user_mr", "__bnxt_re_user_reg_mr"):
    LAYER[_fn] = "driver"

EOPNOTSUPP, EFAULT, ENOMEM = "EOPNOTSUPP", "EFAULT", "ENOMEM"

# family -> (origin probe, errno, origin layer)
FAMILIES = {
    "cx6_cqe_pad_probe": ("create_cq_user", EOPNOTSUPP, "driver"),
    "peermem_pin_fallback": ("pin_user_pages_fast", EFAULT, "core"),
    "bnxt_counter_auto": ("rdma_counter_bind_qp_auto", ENOMEM, "core"),
    "cx7_fw_flash_cqe_pad": ("create_cq_user", EOPNOTSUPP, "driver"),
}
ROUTINE = ("cx6_cqe_pad_probe", "peermem_pin_fallback", "bnxt_counter_auto")
ROOT_CAUSES = ("cx7_fw_flash_cqe_pad",)
# the routine family of each generation
GENERATION_ROUTINE = {"A": "cx6_cqe_pad_probe", "B": "peermem_pin_fallback", "C": "bnxt_counter_auto"}


def _umem(gen: str, d: int, *, gpu: bool = False, sg: bool = False) -> list[tuple[int, str, str | None]]:
    """Pinning a user buffer at depth d: in-tree ib_umem_get, or OFED's ib_umem_get_peer ->
    __ib_umem_get (a GPU buffer: the pin fails with EFAULT and the peer client takes it)."""
    if GENERATIONS[gen]["umem"] == "inbox":
        out = [(d, "ib_umem_get", None), (d + 1, "pin_user_pages_fast", None)]
        return out + ([(d + 1, "sg_alloc_append_table_from_pages", None)] if sg else [])
    out = [(d, "ib_umem_get_peer", None), (d + 1, "__ib_umem_get", None)]
    if gpu:
        return out + [(d + 2, "pin_user_pages_fast", EFAULT), (d + 2, "ib_peer_umem_get", None),
                      (d + 3, "ib_get_peer_client", None)]
    out.append((d + 2, "pin_user_pages_fast", None))
    return out + ([(d + 2, "sg_alloc_append_table_from_pages", None)] if sg else [])


def _alloc_pd(gen: str):
    drv = ([(1, "bnxt_re_alloc_pd", None), (2, "bnxt_qplib_alloc_pd", None)] if gen == "C"
           else [(1, "mlx5_ib_alloc_pd", None), (2, "mlx5_cmd_exec", None)])
    return [(0, "ib_uverbs_alloc_pd", None), (1, "uverbs_request", None), (1, "rdma_alloc_begin_uobject", None),
            *drv, (1, "rdma_restrack_add", None), (1, "uverbs_response", None)]


def _create_cq(gen: str, *, pad_refused: bool = False):
    if gen == "C":
        return [(0, "ib_uverbs_create_cq", None), (1, "create_cq", None), (2, "rdma_alloc_begin_uobject", None),
                (2, "bnxt_re_create_cq", None), *_umem(gen, 3), (3, "bnxt_qplib_create_cq", None),
                (2, "rdma_restrack_add", None), (2, "uverbs_response", None)]
    e = EOPNOTSUPP if pad_refused else None
    head = [(0, "ib_uverbs_create_cq", e), (1, "create_cq", e), (2, "rdma_alloc_begin_uobject", None),
            (2, "mlx5_ib_create_cq", e), (3, "create_cq_user", e), *_umem(gen, 4), (4, "mlx5_ib_db_map_user", None)]
    if pad_refused:  # the flag is checked after the buffer and doorbell are mapped: unwound
        return head + [(4, "ib_umem_release", None), (2, "rdma_alloc_abort_uobject", None)]
    return head + [(3, "mlx5_comp_eqn_get", None), (3, "mlx5_core_create_cq", None), (2, "rdma_restrack_add", None),
                   (2, "uverbs_response", None)]


def _create_qp(gen: str):
    if gen == "C":
        drv = [(3, "bnxt_re_create_qp", None), (4, "bnxt_re_test_qp_limits", None), (4, "bnxt_re_init_user_qp", None),
               *_umem(gen, 4), (4, "bnxt_qplib_create_qp", None)]
    else:
        drv = [(3, "mlx5_ib_create_qp", None), (4, "create_user_qp", None), *_umem(gen, 5),
               (5, "mlx5_ib_db_map_user", None), (5, "mlx5_qpc_create_qp", None), (6, "mlx5_cmd_exec", None)]
    return [(0, "ib_uverbs_create_qp", None), (1, "create_qp", None), (2, "rdma_alloc_begin_uobject", None),
            (2, "rdma_lookup_get_uobject", None), (2, "ib_create_qp_user", None), *drv,
            (3, "ib_create_qp_security", None), (3, "rdma_restrack_add", None), (2, "ib_qp_usecnt_inc", None),
            (2, "rdma_lookup_put_uobject", None), (2, "uverbs_response", None)]


def _modify_qp(gen: str, transition: str):
    if gen == "C":
        drv = [(5, "bnxt_re_modify_qp", None), (6, "bnxt_qplib_modify_qp", None)]
    else:
        path = [(7, "mlx5_set_path", None)] if transition == "INIT->RTR" else []
        drv = [(5, "mlx5_ib_modify_qp", None), (6, "ib_modify_qp_is_ok", None), (6, "__mlx5_ib_modify_qp", None),
               *path, (7, "mlx5_core_qp_modify", None)]
    core: list = []
    if transition == "RESET->INIT":
        core = [(4, "rdma_counter_bind_qp_auto", ENOMEM if gen == "C" else None)]
    elif transition == "INIT->RTR":
        core = [(4, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", None),
                (5, "rdma_check_gid_user_access", None), (5, "rdma_addr_find_l2_eth_by_grh", None),
                (4, "rdma_lag_get_ah_roce_slave", None)]
    tail = [(4, "rdma_lag_put_ah_roce_slave", None)] if transition == "INIT->RTR" else []
    return [(0, "ib_uverbs_modify_qp", None), (1, "modify_qp", None), (2, "rdma_lookup_get_uobject", None),
            (2, "ib_modify_qp_with_udata", None), (3, "_ib_modify_qp", None), *core,
            (4, "ib_security_modify_qp", None), *drv, *tail, (2, "rdma_lookup_put_uobject", None)]


def _reg_mr(gen: str, *, gpu: bool = False):
    if gen == "C":
        drv = [(1, "bnxt_re_reg_user_mr", None), *_umem(gen, 2, sg=True), (2, "__bnxt_re_user_reg_mr", None)]
    elif gpu:  # B only: the reference's gpu_direct_trace_shape
        drv = [(1, "mlx5_ib_reg_user_mr", None), (2, "mlx5r_umr_resource_init", None), *_umem(gen, 2, gpu=True),
               (2, "create_real_mr", None), (3, "reg_create", None), (3, "mlx5r_umr_update_mr_pas", None),
               (3, "ib_umem_activate_invalidation_notifier", None)]
    else:
        drv = [(1, "mlx5_ib_reg_user_mr", None), (2, "mlx5r_umr_resource_init", None), *_umem(gen, 2, sg=True),
               (2, "create_real_mr", None), (3, "alloc_cacheable_mr", None), (3, "mlx5r_umr_update_mr_pas", None)]
    return [(0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None), (1, "rdma_lookup_get_uobject", None),
            *drv, (1, "rdma_restrack_add", None), (1, "rdma_lookup_put_uobject", None), (1, "uverbs_response", None)]


# tree name -> (operation, argument, frames of (depth, function, errno))
TREES: dict[str, tuple[str, str | None, list]] = {}
TREE_FAMILY: dict[str, str] = {}
for _g in GENERATIONS:
    TREES[f"{_g}.alloc_pd"] = ("alloc_pd", None, _alloc_pd(_g))
    TREES[f"{_g}.create_cq"] = ("create_cq", None, _create_cq(_g))
    TREES[f"{_g}.create_qp"] = ("create_qp", None, _create_qp(_g))
    TREES[f"{_g}.reg_mr"] = ("reg_mr", None, _reg_mr(_g))
    for _t in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
        TREES[f"{_g}.modify_qp.{_t}"] = ("modify_qp", _t, _modify_qp(_g, _t))
TREES["A.create_cq.pad_refused"] = ("create_cq", None, _create_cq("A", pad_refused=True))
TREES["B.create_cq.pad_refused"] = ("create_cq", None, _create_cq("B", pad_refused=True))
TREES["B.reg_mr.gpu"] = ("reg_mr", None, _reg_mr("B", gpu=True))
TREE_FAMILY["A.create_cq.pad_refused"] = "cx6_cqe_pad_probe"
TREE_FAMILY["B.create_cq.pad_refused"] = "cx7_fw_flash_cqe_pad"
TREE_FAMILY["B.reg_mr.gpu"] = "peermem_pin_fallback"
TREE_FAMILY["C.modify_qp.RESET->INIT"] = "bnxt_counter_auto"

# the probe set of a generation: every function of its trees
PROBES = {g: sorted({fn for name, (_, _, frames) in TREES.items() if name.startswith(g + ".") for _, fn, _ in frames})
          for g in GENERATIONS}
# root latency of a call (seconds): a firmware command or a pin costs more
ROOT_LATENCY = {"alloc_pd": 0.00025, "create_cq": 0.0009, "create_qp": 0.0011, "modify_qp": 0.0004, "reg_mr": 0.0030}


def _errno_number(name: str) -> int:
    return getattr(errno_mod, name)


def _frame_fractions(frames: list) -> tuple[list[float], list[float]]:
    """Entry and exit of each frame of a tree as fractions of its root's latency: frames entered
    in order, each exiting after its last descendant and before its next sibling."""
    n = len(frames)
    step = 1.0 / (n + 1)
    entries = [i * step for i in range(n)]
    exits = [0.0] * n
    for i, (d, _, _) in enumerate(frames):
        j = i + 1
        deepest = d
        while j < n and frames[j][0] > d:
            deepest = max(deepest, frames[j][0])
            j += 1
        exits[i] = entries[j - 1] + step * (1 - 0.5 ** (deepest - d + 1))
    exits[0] = 1.0
    return entries, exits


FRACTIONS = {name: _frame_fractions(frames) for name, (_, _, frames) in TREES.items()}
# one row per frame of every tree: what the events rows of a record repeat
TREE_FRAMES = pl.DataFrame(
    [{"tree": name, "seq": i, "probe": fn, "layer": LAYER[fn], "depth": d, "errno": e,
      "ret": -getattr(errno_mod, e) if e else 0, "entry_frac": FRACTIONS[name][0][i], "exit_frac": FRACTIONS[name][1][i],
      "arg": arg if i == 0 else None}
     for name, (_, arg, frames) in TREES.items() for i, (d, fn, e) in enumerate(frames)],
    schema={"tree": pl.String, "seq": pl.Int64, "probe": pl.String, "layer": pl.String, "depth": pl.Int16,
            "errno": pl.String, "ret": pl.Int64, "entry_frac": pl.Float64, "exit_frac": pl.Float64, "arg": pl.String})


class _Host:
    def __init__(self, name: str, gen: str, index: int, rng: random.Random):
        self.name, self.gen, self.index = name, gen, index
        self.boot = dt.datetime(2027, 1, 3, 4, 0, tzinfo=UTC) + dt.timedelta(minutes=37 * index)
        self.boot_id = f"b{index:02d}{rng.randrange(16 ** 4):04x}"
        self.next_pid = 20_000 + 1_000 * index
        self.record_seq = 0
        self.snap_phase = round(rng.uniform(0.0, SNAP_S), 3)


def _ns(t: dt.datetime) -> int:
    return (t - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1) * 1000


def _simulate_morning(host: _Host, date: dt.date, hours: float, rng: random.Random, *, fault_at: float | None):
    """Calls of one host's morning: a list of dicts (one a call that returned), and the job starts
    (capture windows). Times in seconds from the window's start."""
    span = hours * 3600.0
    calls: list[dict] = []
    job_starts: list[float] = []
    t = rng.uniform(5.0, 120.0)
    job_n = 0
    flashed = False
    while t < span - 60.0:
        job_n += 1
        job_id = f"{host.name[5:]}-{date:%m%d}-{job_n:03d}"
        if fault_at is not None and t >= fault_at:
            flashed = True
        launcher = host.next_pid
        host.next_pid += 1
        duration = rng.uniform(15 * 60, 30 * 60)
        end = min(t + duration, span - 15.0)
        job_starts.append(t)
        meta = dict(GENERATIONS[host.gen]["metadata"])
        if flashed:
            meta["firmware"] = FLASHED_FIRMWARE
        meta["job_name"] = f"pretrain-{host.gen.lower()}"
        died_at = None
        ranks = []
        for r in range(RANKS):
            pid = host.next_pid
            host.next_pid += 1
            ranks.append((r, pid))
        job_calls: list[dict] = []
        for r, pid in ranks:
            start = t + 0.2 * r
            seq: list[str] = [f"{host.gen}.alloc_pd"]
            fatal = None
            if host.gen == "A":
                seq += ["A.create_cq.pad_refused", "A.create_cq"]
            elif host.gen == "B" and flashed:
                seq += ["B.create_cq.pad_refused"]
                fatal = len(seq) - 1
            else:
                seq += [f"{host.gen}.create_cq"]
            if fatal is None:
                seq += [f"{host.gen}.reg_mr", "B.reg_mr.gpu" if host.gen == "B" else f"{host.gen}.reg_mr"]
                seq += [f"{host.gen}.create_qp"] * 2
                for _ in range(2):
                    seq += [f"{host.gen}.modify_qp.{x}" for x in ("RESET->INIT", "INIT->RTR", "RTR->RTS")]
            for k, name in enumerate(seq):
                job_calls.append({"t": start + CALL_GAP_S * k, "tree": name, "pid": pid, "ppid": launcher,
                                  "job": job_id, "meta": meta, "fatal": k == fatal})
            if fatal is None:
                p = start + CALL_GAP_S * len(seq) + rng.uniform(60, 120)
                while p < end:
                    job_calls.append({"t": p, "tree": "B.reg_mr.gpu" if host.gen == "B" else f"{host.gen}.reg_mr",
                                      "pid": pid, "ppid": launcher, "job": job_id, "meta": meta, "fatal": False})
                    p += rng.uniform(60, 120)
        job_calls.sort(key=lambda c: c["t"])
        for c in job_calls:
            op = TREES[c["tree"]][0]
            c["latency"] = ROOT_LATENCY[op] * rng.uniform(0.8, 1.3)
            c["end"] = c["t"] + c["latency"]
        fatal_ends = [c["end"] for c in job_calls if c["fatal"]]
        if fatal_ends:
            died_at = min(fatal_ends)
            kill = died_at + 0.5
            # a call entered after the kill never happens; one in flight at the kill completes (the
            # kernel finishes it, the process dies on its way back to user space)
            job_calls = [c for c in job_calls if c["t"] < kill]
            end = kill
        calls.extend(job_calls)
        gap = rng.uniform(60, 120) if died_at is not None else rng.uniform(60, 180)
        t = end + gap
    return calls, job_starts


def _windows(host_phase: float, job_starts: list[float], span: float) -> list[tuple[float, float]]:
    out = []
    w = host_phase
    while w < span:
        out.append((w, w + 30.0))
        w += 600.0
    out += [(s - 0.1, s + 10.0) for s in job_starts]
    return sorted(out)


def _morning(host: _Host, date: dt.date, hours: float, rng: random.Random, *, fault_at: float | None):
    """Events, counters and truth rows of one host's morning."""
    gen = host.gen
    g = GENERATIONS[gen]
    t0 = dt.datetime(date.year, date.month, date.day, FIRST_HOUR, tzinfo=UTC)
    span = hours * 3600.0
    calls, job_starts = _simulate_morning(host, date, hours, rng, fault_at=fault_at)
    snap_phase = host.snap_phase  # the daemon runs on: the same phase every morning
    boundaries = [snap_phase + SNAP_S * k for k in range(int((span - snap_phase) // SNAP_S) + 1)]
    windows = _windows(rng.uniform(0.0, 600.0), job_starts, span)
    window_counts: list[dict] = [dict() for _ in windows]
    mono0 = (t0 - host.boot).total_seconds()

    def snapshot_of(x: float) -> int:
        return bisect.bisect_left(boundaries, x)

    def window_of(x: float) -> int | None:
        for i, (a, b) in enumerate(windows):
            if a <= x < b:
                return i
        return None

    # counters: every frame, in the snapshot of its own return
    probes = PROBES[gen]
    pidx = {p: i for i, p in enumerate(probes)}
    n_s, n_p = len(boundaries), len(probes)
    inv = np.zeros((n_s, n_p), dtype=np.int64)
    errs: dict[tuple[int, int, str], int] = {}
    # failure trees by (snapshot, shape) in return order; good ones recorded straight away
    attempts: dict[tuple[int, str], list[dict]] = {}
    records: list[tuple[dict, int | None]] = []  # (call, repeat_count)
    for c in calls:
        frames = TREES[c["tree"]][2]
        first, last = snapshot_of(c["t"]), snapshot_of(c["end"])
        exit_fracs = FRACTIONS[c["tree"]][1]
        for (_, fn, e), f in zip(frames, exit_fracs, strict=True):
            s = first if first == last else snapshot_of(c["t"] + f * c["latency"])
            j = pidx[fn]
            inv[s, j] += 1
            if e:
                errs[(s, j, e)] = errs.get((s, j, e), 0) + 1
        c["snap"] = last
        c["window"] = window_of(c["t"])
        if c["tree"] in TREE_FAMILY:
            attempts.setdefault((c["snap"], c["tree"]), []).append(c)
        elif c["window"] is not None:
            seen = window_counts[c["window"]].get(c["tree"], 0)
            if seen < WINDOW_CAP:
                window_counts[c["window"]][c["tree"]] = seen + 1
                records.append((c, None))
    for group in attempts.values():
        for i, c in enumerate(group[:K_RECORDS]):
            repeat = len(group) - (K_RECORDS - 1) if (i == K_RECORDS - 1 and len(group) > K_RECORDS) else None
            records.append((c, repeat))
    records.sort(key=lambda r: (r[0]["snap"], r[0]["end"]))

    rec: dict[str, list] = {k: [] for k in (
        "trace_id", "tree", "t", "latency", "timed", "pid", "ppid", "job_id", "repeat_count", "snap")}
    job_meta: dict[str, dict] = {}
    for c, repeat in records:
        host.record_seq += 1
        rec["trace_id"].append(f"{host.name}:{host.boot_id}:{c['pid']}:{host.record_seq}")
        for k in ("tree", "t", "latency", "pid", "ppid", "snap"):
            rec[k].append(c[k])
        rec["timed"].append(c["window"] is not None)
        rec["job_id"].append(c["job"])
        rec["repeat_count"].append(repeat)
        job_meta[c["job"]] = c["meta"]
    t0_ns = _ns(t0)
    mono0_ns = round(mono0 * 1e9)
    tick_ns = round(TICK_S * 1e9)
    trees = pl.DataFrame({"tree": list(TREES), "command": [TREES[n][0] for n in TREES],
                          "failing": [n in TREE_FAMILY for n in TREES],
                          "exit_status": [-getattr(errno_mod, TREES[n][2][0][2]) if TREES[n][2][0][2] else 0
                                          for n in TREES]},
                         schema_overrides={"exit_status": pl.Int32})
    roots = (pl.DataFrame(rec, schema_overrides={"repeat_count": pl.Int64, "t": pl.Float64, "latency": pl.Float64,
                                                 "pid": pl.Int32, "ppid": pl.Int32, "snap": pl.Int64})
             .join(trees, on="tree", how="left", maintain_order="left")
             .with_columns(
                 (pl.col("t") * 1e9).round().cast(pl.Int64).alias("t_ns"),
                 (pl.col("latency") * 1e9).round().cast(pl.Int64).alias("lat_ns"))
             .with_columns(((pl.col("t_ns") + pl.col("lat_ns") + tick_ns - 1) // tick_ns * tick_ns).alias("tick_ns"))
             .with_columns(
                 pl.when(pl.col("timed")).then(pl.col("t_ns")).otherwise(pl.col("tick_ns")).alias("start_ns"),
                 pl.when(pl.col("timed")).then(pl.col("t_ns") + pl.col("lat_ns")).otherwise(pl.col("tick_ns"))
                 .alias("end_ns")))
    snap_ns_all = pl.Series([t0_ns + round(b * 1e9) for b in boundaries], dtype=pl.Int64)
    roots = roots.with_columns(snap_ns_all.gather(roots["snap"]).alias("snap_ns"))
    roots = roots.with_columns(pl.from_epoch("snap_ns", "ns").dt.date().cast(pl.String).alias("_date"))
    frames = roots.join(TREE_FRAMES, on="tree", how="left", maintain_order="left")
    frames = frames.with_columns(
        pl.when(pl.col("timed"))
        .then(mono0_ns + pl.col("t_ns") + (pl.col("entry_frac") * pl.col("lat_ns")).round().cast(pl.Int64))
        .otherwise(mono0_ns + pl.col("tick_ns")).alias("ts_ns"),
        pl.when(pl.col("timed"))
        .then((((pl.col("exit_frac") - pl.col("entry_frac")) * pl.col("lat_ns")).round().cast(pl.Int64)).clip(1))
        .otherwise(None).alias("latency_ns"),
        pl.col("pid").alias("tid"), pl.lit("python3").alias("comm"),
        pl.when(pl.col("failing")).then(pl.lit("failure")).otherwise(pl.lit("good")).alias("kind"),
        (t0_ns + pl.col("start_ns")).cast(pl.Datetime("ns", "UTC")).alias("start_time"),
        (t0_ns + pl.col("end_ns")).cast(pl.Datetime("ns", "UTC")).alias("end_time"),
        pl.lit(g["release"]).alias("kernel_release"), pl.lit(0, pl.Int64).alias("lost_events"),
    )
    jobs = pl.DataFrame({"job_id": list(job_meta), "metadata": [metadata_list(m) for m in job_meta.values()]},
                        schema_overrides={"job_id": pl.String})
    events = frames.join(jobs, on="job_id", how="left", maintain_order="left").select(
        "trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret", "errno",
        "latency_ns", "arg", "kind", "command", "exit_status", "start_time", "end_time", "kernel_release",
        "lost_events", "job_id", "metadata", "repeat_count", "_date")
    fam = pl.DataFrame({"tree": list(TREE_FAMILY), "root_cause": list(TREE_FAMILY.values())})
    fam = fam.with_columns(
        pl.col("root_cause").replace_strict({k: v[0] for k, v in FAMILIES.items()}).alias("bifurcation_probe"),
        pl.col("root_cause").replace_strict({k: v[1] for k, v in FAMILIES.items()}).alias("bifurcation_errno"),
        pl.col("root_cause").replace_strict({k: v[2] for k, v in FAMILIES.items()}).alias("origin_layer"),
        pl.col("root_cause").is_in(list(ROUTINE)).alias("expected_error"))
    truth = (roots.join(fam, on="tree", how="left", maintain_order="left")
             .with_columns(pl.when(pl.col("failing")).then(pl.lit("failure")).otherwise(pl.lit("good")).alias("kind"),
                           pl.col("expected_error").fill_null(False), pl.lit(False).alias("held_out"))
             .select("trace_id", "kind", "root_cause", "bifurcation_probe", "bifurcation_errno", "origin_layer",
                     "expected_error", "held_out", "_date"))

    snap_ns = np.array([t0_ns + round(b * 1e9) for b in boundaries], dtype=np.int64)
    s_idx, p_idx = np.repeat(np.arange(n_s), n_p), np.tile(np.arange(n_p), n_s)
    fail = np.zeros((n_s, n_p), dtype=np.int64)
    for (s_, j, _), n in errs.items():
        fail[s_, j] += n
    base = pl.DataFrame({
        "s": s_idx, "p": p_idx,
        "snapshot_time": pl.Series(snap_ns[s_idx]).cast(pl.Datetime("ns", "UTC")),
        "probe": pl.Series(probes, dtype=pl.String).gather(p_idx),
        "layer": pl.Series([LAYER[p] for p in probes], dtype=pl.String).gather(p_idx),
        "invocations": inv.ravel(), "failures": fail.ravel(),
    })
    errno_df = pl.DataFrame({"s": [k[0] for k in errs], "p": [k[1] for k in errs], "errno": [k[2] for k in errs],
                             "count": list(errs.values())}, schema={"s": pl.Int64, "p": pl.Int64, "errno": pl.String,
                                                                    "count": pl.Int64})
    errno_df = errno_df.sort("s", "p", "errno").group_by("s", "p", maintain_order=True).agg(
        pl.struct("errno", "count").alias("errno_counts"))
    counters = base.join(errno_df, on=["s", "p"], how="left", maintain_order="left")
    counters = counters.with_columns(
        pl.lit(host.name).alias("host"), pl.lit(SNAP_S).alias("interval_s"), pl.lit(g["release"]).alias("kernel_release"),
        pl.lit(g["vendor"]).alias("vendor"), pl.lit("rdma").alias("probe_set"), pl.lit(True).alias("live"),
        pl.lit(0, pl.Int64).alias("lost_records"),
    ).drop("s", "p")
    counters = counters.with_columns(pl.col("snapshot_time").dt.date().cast(pl.String).alias("_date"))
    return events, counters, truth


def _write_dataset(root: Path, per_host: dict[str, list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]]]) -> None:
    for host, parts in per_host.items():
        events = pl.concat([p[0] for p in parts], how="vertical_relaxed")
        counters = pl.concat([p[1] for p in parts], how="vertical_relaxed")
        truth = pl.concat([p[2] for p in parts], how="vertical_relaxed")
        for date in sorted(set(counters["_date"].to_list())):
            ev = events.filter(pl.col("_date") == date).drop("_date")
            if ev.height:
                write_partition(ev, root, "events", date, host, "part-0000.parquet", durable=False)
                write_partition(truth.filter(pl.col("_date") == date).drop("_date").with_columns(pl.lit(host).alias("host")),
                                root, "truth", date, host, "part-0000.parquet", durable=False)
            cn = counters.filter(pl.col("_date") == date).drop("_date")
            path = write_partition(cn, root, "counters", date, host, "part-0000.parquet", durable=False)
            write_counter_buckets(path, cn.drop("host"), durable=False)


def generate(root, *, hosts: int = 12, hours: float = 2.0, good_days: int = 2, seed: int = 42,
             faults: bool = True, fault_at_hour: float = 1.0) -> dict:
    """Write <root>/good (the good window: `good_days` mornings before DAY) and <root>/day (DAY's
    morning, with the fault when `faults`). Returns a summary: hosts by generation, the fault
    hosts, record counts by root cause per dataset."""
    if hosts < 9 or hosts % 3:
        raise ValueError("hosts: a multiple of 3, at least 9")
    root = Path(root)
    rng = random.Random(seed)
    per_gen = hosts // 3
    fleet = [_Host(f"fg42-{g.lower()}{i + 1:02d}", g, gi * per_gen + i, rng)
             for gi, g in enumerate(GENERATIONS) for i in range(per_gen)]
    fault_hosts = [h.name for h in fleet if h.gen == "B"][:2] if faults else []
    summary: dict = {"hosts": {g: [h.name for h in fleet if h.gen == g] for g in GENERATIONS},
                     "fault_hosts": fault_hosts, "day": DAY.isoformat(),
                     "good_days": [(DAY - dt.timedelta(days=k)).isoformat() for k in range(good_days, 0, -1)],
                     "fault_at": (dt.datetime(DAY.year, DAY.month, DAY.day, FIRST_HOUR, tzinfo=UTC)
                                  + dt.timedelta(hours=fault_at_hour)).isoformat() if faults else None,
                     "records": {}}
    for name, dates in (("good", [DAY - dt.timedelta(days=k) for k in range(good_days, 0, -1)]), ("day", [DAY])):
        per_host: dict[str, list] = {}
        for h in fleet:
            for date in dates:
                fault_at = fault_at_hour * 3600.0 if (name == "day" and h.name in fault_hosts) else None
                per_host.setdefault(h.name, []).append(_morning(h, date, hours, rng, fault_at=fault_at))
        _write_dataset(root / name, per_host)
        counts: dict[str, int] = {}
        for parts in per_host.values():
            for _, _, truth in parts:
                for cause, n in truth.group_by("root_cause").len().iter_rows():
                    counts[cause or "good"] = counts.get(cause or "good", 0) + n
        summary["records"][name] = counts
    return summary

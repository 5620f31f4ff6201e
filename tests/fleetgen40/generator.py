"""Many tenants on shared hosts: a blind fleet generator (see __init__.py for the angle).

Written from reference/rdma_control_path.yaml (the operations' trees, the errno lists),
tracer/schema.py (tables, written through its writers in the dataset layout the ingest produces:
<root>/<table>/date=D/host=H/part-*.parquet, a counter_buckets summary beside every counters
file), README.md, docs/architecture.md, tests/fleet_harness.py and the other generators' module
docstrings; tests/fleetgen38/generator.py read as a model of writing through tracer.schema. It
imports only tracer.schema of the project.

The fleet
---------
`hosts` (10 by default, at least 8) mlx5 RoCE hosts `fg40-hNN` on 6.8.0-60-generic (in-tree mlx5:
ib_umem_get directly, no OFED peer memory), one port each, for `hours` (3) from 2026-12-21T00:00Z.
Each host runs 2-4 job slots at once (SLOTS: slot 0 is always tenant atlas; the others are
borealis, cinder and dune as the table gives). A slot runs its tenant's jobs back to back (15-30
minutes, the next 1-3 minutes after one ends; a job that died is requeued the same way, so a job
that cannot start crash-loops). Decision: the tenant is in each trace's metadata (`tenant`,
`framework`) and the job in `job_id` (`<tenant>-<host index><slot><n>`), never in the process name
alone; but the processes' names differ as the tenants' software does:

  hydra_pmi_proxy  the MPI launcher helper (every tenant): queries the port once (query_port,
                   good) and starts the job's driver.
  python3          the job's driver (every tenant, child of the helper): alloc_pd, one reg_mr of
                   its staging buffer, then a reg_mr every 60-120 s.
  worker x2        children of the driver, 0.2 s apart: atlas's `atlas-trainer` (C++), cinder's
                   `cinder_srv` (C++), borealis's and dune's ranks are `python3` (torch, NCCL in
                   process). A worker: alloc_pd, create_cq, 2 reg_mr, its QP pool (create_qp each),
                   then RESET->INIT, INIT->RTR, RTR->RTS per QP (modify_qp, arg the transition),
                   30 ms a call; then a reg_mr every 30-60 s and a communicator rebuild every 4-6
                   minutes (destroy_qp of one QP, create_qp of a new one, its three transitions).
A worker that dies ends its job: the launcher kills the job's other processes 0.5 s after its fatal
call returned (a call not returned by then never returns: neither counted nor recorded).

The rdma cgroup (decision, from the reference: rdma_alloc_begin_uobject charges the hca_object
limit through ib_rdmacg_try_charge, "-EAGAIN rdma cgroup hca_object limit reached"): each tenant
has its own cgroup per host (a pod's); every uobject a process makes (PD, CQ, MR, QP) is charged
there and destroy uncharges it (ib_rdmacg_uncharge in the destroy path). Only create_qp reaches a
limit in this fleet; its failing tree is ib_uverbs_create_qp -> create_qp (uverbs_cmd.c) ->
rdma_alloc_begin_uobject -> ib_rdmacg_try_charge, every frame EAGAIN, nothing else run (the charge
fails before any lookup or driver call; the uobject is freed inside rdma_alloc_begin_uobject).

The tracer (probe set "rdma", fexit on every function of TREES; statics the reference marks usually
inlined are not frames; rdma_counter_unbind_qp is NOT in the probe set: it returns -EINVAL for every
QP without a counter, ignored by its caller, and this tracer's set leaves it out): 5-second
snapshots at a per-host phase; counters for every probe in every snapshot, exact; a tree is a
record attempt when a frame fails: the first K=3 of a signature in a snapshot as records, the rest
counted in the kernel and carried by the last delivered one as repeat_count (null = 1); good trees
only when their root entered a capture window (the first 30 s of every 5 minutes at a per-host
phase, at most 12 of a tree a window). A tree whose root entered a window is timed (ts_ns and
latency_ns per frame); outside, every frame carries the 4 ms tick its root returned in and latency
null. No tree here is longer than the slot (no lost_events), the ring buffer never overflows
(lost_records 0): this generator is about callers, not the collection path. Aggregation is by
signature over every process, so an aggregated example could stand for another caller's tree
(atlas's probe beside a borealis failure in one snapshot): the summary counts such mixed aggregates
(`mixed_aggregates`, none in the tests' shapes, which they check), so each record's truth and weight
are its callers' alone.

Routine (expected_error = True, root_cause = the family; the process goes on each time)
---------------------------------------------------------------------------------------
  atlas_qp_probe   every host (atlas runs on each), every atlas-trainer at its start: atlas's
                   framework sizes its QP pool by probing the maximum first. Its cgroup's hca_object
                   limit admits 8 QPs a trainer beside what else it holds: 8 create_qp pass, the 9th
                   fails EAGAIN at ib_rdmacg_try_charge (decision: the errno the reference gives for
                   an rdma cgroup charge failure); the framework backs off: it destroys 4 of its QPs
                   (destroy_qp, good) and runs with the other 4 (their transitions, and later
                   create_qp at rebuilds, all pass). EAGAIN tells the caller to try again with less,
                   and the process goes on; routine FOR atlas-trainer only: the learned entry should
                   carry comm atlas-trainer (README: `comm:` where the same errno at the same call
                   site is retried through by one program and kills another).

  cinder_memlock_probe  every host running cinder (6 of 10), every cinder_srv at its start: the
                   other per-tenant limit, memlock. cinder's server sizes its registered cache by
                   asking for all of the GPU host buffer first; its pods' RLIMIT_MEMLOCK (no
                   CAP_IPC_LOCK) is below that, so ib_umem_get refuses it before pinning anything:
                   ENOMEM ("pinned_vm + npages > RLIMIT_MEMLOCK without CAP_IPC_LOCK", reference
                   reg_mr ib_umem_get), up through mlx5_ib_reg_user_mr and ib_uverbs_reg_mr (PD read
                   reference dropped, uobject aborted); it registers half as much at once (passes)
                   and goes on. Decision: routine for cinder_srv; no other tenant meets its memlock
                   limit (their buffers fit), so ENOMEM at ib_umem_get is cinder's alone.
                   memlock_probe=False leaves it out.

Root causes (expected_error = False; fatal to the process)
----------------------------------------------------------
  borealis_cgroup_too_low  two hosts (indices 2 and 7, both running borealis): from 30 % of the
                   window a bad config push set borealis's rdma cgroup hca_object limit too low: a
                   borealis rank's third create_qp fails EAGAIN at ib_rdmacg_try_charge -- the very
                   tree of atlas's probe (same operation, frames, errno) -- and the rank (comm
                   python3) exits: borealis's NCCL does not probe, a refused QP is fatal. Its job
                   dies and crash-loops there until the end. Borealis's jobs on the other hosts, and
                   before the push on these, pass. Decision: a root cause that must be found, NOT
                   set aside as atlas's routine; one cluster holding only it. An alert on those two
                   hosts naming EAGAIN at its frames is acceptable, none is required.
  bad_cable_rtr_timeout  one host (index 5): from 40 % of the window its port's cable is bad
                   (frames dropped): the neighbour of every INIT->RTR's destination never resolves,
                   "-ETIMEDOUT neighbour never resolved within 1000 ms" at
                   rdma_addr_find_l2_eth_by_grh (reference: modify_qp's ib_resolve_eth_dmac ->
                   ib_resolve_unicast_gid_dmac -> rdma_addr_find_l2_eth_by_grh), passed up through
                   ib_resolve_eth_dmac, _ib_modify_qp, ib_modify_qp_with_udata, modify_qp and
                   ib_uverbs_modify_qp; 1 s into the call. Decision: ETIMEDOUT rather than
                   EADDRNOTAVAIL (no route) since the route and address stay, only the link drops
                   frames. Every tenant's worker there dies at its first INIT->RTR after the onset;
                   every job on the host crash-loops. Decision: one cluster naming that host only;
                   an alert on it naming ETIMEDOUT at its frames (or a bad state of them) is
                   acceptable, none is required.

Truth: one row per record, keyed (host, trace_id). root_cause the family (ROOT_CAUSES or ROUTINE),
null for good records; bifurcation = origin (the deepest failing frame none of whose callees
failed); origin_layer its layer (ib_rdmacg_try_charge and rdma_addr_find_l2_eth_by_grh: core).
Good records: kind good, no cause, expected_error False, held_out False. faults=False (the
control): neither fault (no bad push, a good cable); tenants, jobs and the routine the same.
`faults` may also be a list of cause names to keep.

atlas_comm="python3" (the same-name variant): atlas's workers are python3 too (its framework a
Python package with a C++ extension, as many are), so the routine and the cgroup fault share
operation, frames, errno AND process name; only the tenant (metadata), the job and the hosts tell
them apart: on the 2 cgroup hosts, after the push, every borealis python3 that meets the EAGAIN dies
while every atlas python3 there, and everywhere, goes on. Decision: the fault must still be found
(routine is a property of a caller's behaviour, and the data shows two behaviours: the fatal one
confined to 2 hosts and one tenant's jobs, every one of its processes dying); kept as a separate
fixture so the main fleet's results do not depend on it.

borealis_retries=N (the retrying variant): borealis's library retries a refused create_qp N times,
50 ms apart, before giving up: each retry is refused again (EAGAIN, the same tree) and the rank
dies after the last. Decision: every one of those records is the cause (the process did go on
after the first EAGAIN, but only to fail the same call again and die: no success follows).
abort_cleanup=True: after giving up, the rank's abort path destroys the two QPs it had made
(destroy_qp, good, 30 ms apart) and then exits: cleanup only, the reference's class, then death.
Decision: still the cause, and the fault must still be found.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
from fleet_tables import extend_rows, frame

from tracer.schema import metadata_list, write_counter_buckets, write_partition

START = dt.datetime(2026, 12, 21, tzinfo=dt.UTC)
KERNEL = "6.8.0-60-generic"
K = 3
SNAP_S = 5.0
WINDOW_EVERY, WINDOW_LEN, WINDOW_CAP = 300.0, 30.0, 12
ERRNO_NUM = {"EAGAIN": 11, "ETIMEDOUT": 110, "ENOMEM": 12}

# host index -> tenants of its slots (slot 0 atlas everywhere)
SLOTS = [
    ("atlas", "borealis"),
    ("atlas", "cinder", "dune"),
    ("atlas", "borealis", "cinder", "dune"),
    ("atlas", "dune"),
    ("atlas", "borealis", "cinder"),
    ("atlas", "cinder", "dune", "borealis"),
    ("atlas", "borealis"),
    ("atlas", "borealis", "dune"),
    ("atlas", "cinder", "borealis", "dune"),
    ("atlas", "cinder"),
]
WORKER_COMM = {"atlas": "atlas-trainer", "borealis": "python3", "cinder": "cinder_srv", "dune": "python3"}
FRAMEWORK = {"atlas": "atlas-1.9", "borealis": "torch-2.5", "cinder": "cinder-serve-3.2", "dune": "torch-2.4"}
CGROUP_HOSTS = (2, 7)
CABLE_HOST = 5

_UVERBS = {"create_qp", "modify_qp", "create_cq", "uverbs_request", "uverbs_response"}
_DRIVER = {"create_user_qp", "create_cq_user", "destroy_qp", "destroy_qp_common", "create_real_mr",
           "alloc_cacheable_mr", "__mlx5_ib_modify_qp"}


def _layer(fn: str) -> str:
    if fn.startswith("ib_uverbs_") or fn in _UVERBS:
        return "uverbs"
    if fn.startswith("mlx5") or fn in _DRIVER:
        return "driver"
    return "core"


def _create_qp() -> list:
    return [(0, "ib_uverbs_create_qp", None), (1, "create_qp", None), (2, "rdma_alloc_begin_uobject", None),
            (3, "ib_rdmacg_try_charge", None), (2, "rdma_lookup_get_uobject", None),
            (2, "rdma_lookup_get_uobject", None), (2, "ib_create_qp_user", None), (3, "mlx5_ib_create_qp", None),
            (4, "create_user_qp", None), (5, "ib_umem_get", None), (6, "pin_user_pages_fast", None),
            (5, "mlx5_ib_db_map_user", None), (5, "mlx5_qpc_create_qp", None), (6, "mlx5_cmd_exec", None),
            (3, "ib_create_qp_security", None), (3, "rdma_restrack_add", None), (2, "ib_qp_usecnt_inc", None),
            (2, "rdma_lookup_put_uobject", None), (2, "uverbs_response", None)]


def _create_qp_cgroup() -> list:
    e = "EAGAIN"
    return [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), (2, "rdma_alloc_begin_uobject", e),
            (3, "ib_rdmacg_try_charge", e)]


def _destroy_qp() -> list:
    return [(0, "ib_uverbs_destroy_qp", None), (1, "__uobj_get_destroy", None), (2, "rdma_lookup_get_uobject", None),
            (2, "uobj_destroy", None), (3, "uverbs_destroy_uobject", None), (4, "destroy_hw_idr_uobject", None),
            (5, "uverbs_free_qp", None), (6, "ib_destroy_qp_user", None), (7, "mlx5_ib_destroy_qp", None),
            (8, "destroy_qp_common", None), (9, "mlx5_core_qp_modify", None), (9, "mlx5_core_destroy_qp", None),
            (9, "destroy_qp", None), (7, "ib_qp_usecnt_dec", None), (7, "rdma_restrack_del", None),
            (5, "ib_rdmacg_uncharge", None), (1, "rdma_lookup_put_uobject", None)]


def _modify(transition: str, fail: str | None = None) -> list:
    e = fail
    head = [(0, "ib_uverbs_modify_qp", e), (1, "modify_qp", e), (2, "rdma_lookup_get_uobject", None),
            (2, "ib_modify_qp_with_udata", e), (3, "_ib_modify_qp", e)]
    if transition == "RESET->INIT":
        mid = [(4, "rdma_counter_bind_qp_auto", None)]
    elif transition == "INIT->RTR":
        mid = [(4, "rdma_get_gid_attr", None), (4, "ib_resolve_eth_dmac", e), (5, "ib_resolve_unicast_gid_dmac", e),
               (6, "rdma_addr_find_l2_eth_by_grh", e)]
        if fail:
            return head + mid + [(4, "rdma_lag_put_ah_roce_slave", None), (2, "rdma_lookup_put_uobject", None)]
        mid += [(4, "rdma_lag_get_ah_roce_slave", None)]
    else:
        mid = []
    tail = [(4, "rdma_lag_put_ah_roce_slave", None)] if transition == "INIT->RTR" else []
    return head + mid + [(4, "ib_security_modify_qp", None), (5, "mlx5_ib_modify_qp", None),
                         (6, "ib_modify_qp_is_ok", None), (6, "__mlx5_ib_modify_qp", None),
                         (7, "mlx5_core_qp_modify", None), (8, "mlx5_cmd_exec", None), *tail,
                         (2, "rdma_lookup_put_uobject", None)]


TREES: dict[str, tuple[str, str | None, list]] = {
    "query_port": ("query_port", None, [
        (0, "ib_uverbs_query_port", None), (1, "ib_query_port", None), (2, "__ib_query_port", None),
        (3, "mlx5_ib_query_port", None), (4, "mlx5_query_port_roce", None), (1, "copy_port_attr_to_resp", None)]),
    "alloc_pd": ("alloc_pd", None, [
        (0, "ib_uverbs_alloc_pd", None), (1, "uverbs_request", None), (1, "rdma_alloc_begin_uobject", None),
        (2, "ib_rdmacg_try_charge", None), (1, "mlx5_ib_alloc_pd", None), (2, "mlx5_cmd_exec", None),
        (1, "rdma_restrack_add", None), (1, "uverbs_response", None)]),
    "create_cq": ("create_cq", None, [
        (0, "ib_uverbs_create_cq", None), (1, "create_cq", None), (2, "rdma_alloc_begin_uobject", None),
        (3, "ib_rdmacg_try_charge", None), (2, "mlx5_ib_create_cq", None), (3, "create_cq_user", None),
        (4, "ib_umem_get", None), (5, "pin_user_pages_fast", None), (4, "mlx5_ib_db_map_user", None),
        (3, "mlx5_comp_eqn_get", None), (3, "mlx5_core_create_cq", None), (2, "rdma_restrack_add", None),
        (2, "uverbs_response", None)]),
    "reg_mr": ("reg_mr", None, [
        (0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
        (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", None), (2, "mlx5r_umr_resource_init", None),
        (2, "ib_umem_get", None), (3, "pin_user_pages_fast", None), (3, "pin_user_pages_fast", None),
        (3, "sg_alloc_append_table_from_pages", None), (2, "create_real_mr", None), (3, "alloc_cacheable_mr", None),
        (3, "mlx5r_umr_update_mr_pas", None), (1, "rdma_restrack_add", None), (1, "rdma_lookup_put_uobject", None),
        (1, "uverbs_response", None)]),
    "reg_mr_memlock": ("reg_mr", None, [
        (0, "ib_uverbs_reg_mr", "ENOMEM"), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
        (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", "ENOMEM"),
        (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get", "ENOMEM"), (1, "rdma_lookup_put_uobject", None),
        (1, "rdma_alloc_abort_uobject", None)]),
    "create_qp": ("create_qp", None, _create_qp()),
    "create_qp_cgroup": ("create_qp", None, _create_qp_cgroup()),
    "destroy_qp": ("destroy_qp", None, _destroy_qp()),
    "modify_init": ("modify_qp", "RESET->INIT", _modify("RESET->INIT")),
    "modify_rtr": ("modify_qp", "INIT->RTR", _modify("INIT->RTR")),
    "modify_rtr_timeout": ("modify_qp", "INIT->RTR", _modify("INIT->RTR", "ETIMEDOUT")),
    "modify_rts": ("modify_qp", "RTR->RTS", _modify("RTR->RTS")),
}

# family -> (origin probe, errno, origin layer)
ROOT_CAUSES = {
    "borealis_cgroup_too_low": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "bad_cable_rtr_timeout": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
}
ROUTINE = {
    "atlas_qp_probe": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "cinder_memlock_probe": ("ib_umem_get", "ENOMEM", "core"),
}
FAMILIES = {**ROOT_CAUSES, **ROUTINE}
# the failing trees' family by tree name: create_qp_cgroup is atlas's routine or borealis's cause by
# who calls it (resolved per call in generate; both families have the same origin, errno and layer),
# the harness's check of the trees takes the routine's
TREE_FAMILY = {"create_qp_cgroup": "atlas_qp_probe", "modify_rtr_timeout": "bad_cable_rtr_timeout",
               "reg_mr_memlock": "cinder_memlock_probe"}
PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
LAYER = {fn: _layer(fn) for fn in PROBES}
DURATION = {"modify_rtr_timeout": 1.0}


def _iso(t: float) -> str:
    return (START + dt.timedelta(seconds=t)).isoformat()


def _intervals(rng, end: float) -> list[tuple[float, float]]:
    phase = rng.uniform(0.01, SNAP_S)
    out, a, b = [], phase - SNAP_S, phase
    while b <= end:
        out.append((a, b))
        a, b = b, b + SNAP_S
    return out


def _windows(rng, end: float) -> list[tuple[float, float]]:
    phase = rng.uniform(0, WINDOW_EVERY)
    out, w = [], phase - WINDOW_EVERY
    while w < end:
        if w + WINDOW_LEN > 0:
            out.append((max(w, 0.0), w + WINDOW_LEN))
        w += WINDOW_EVERY
    return out


def _worker_plan(hr, tenant: str, c: float, planned: float, *, cgroup_low: bool, cable_bad_from: float | None,
                 retries: int = 0, abort_cleanup: bool = False, memlock_probe: bool = True):
    """One worker's calls [(t, tree)] from `c`, and the time its fatal call returns (or None)."""
    seq = []

    def add(tree):
        nonlocal c
        seq.append((c, tree))
        c += 0.03

    def rtr_fails() -> bool:
        return cable_bad_from is not None and c >= cable_bad_from

    if tenant == "cinder" and memlock_probe:
        add("alloc_pd")
        add("create_cq")
        add("reg_mr_memlock")  # its cache asks for all of the GPU's memory first: over the memlock limit
        add("reg_mr")  # half of it: passes
        add("reg_mr")
    else:
        for tree in ("alloc_pd", "create_cq", "reg_mr", "reg_mr"):
            add(tree)
    if tenant == "atlas":
        for _ in range(8):
            add("create_qp")
        add("create_qp_cgroup")  # the probe: the maximum first, refused by the tenant's cgroup
        for _ in range(4):
            add("destroy_qp")  # back off: run with 4
        nqp = 4
    elif cgroup_low:
        add("create_qp")
        add("create_qp")
        add("create_qp_cgroup")
        for _ in range(retries):
            c += 0.05  # the library's retries of EAGAIN: refused again, the limit is not coming back
            add("create_qp_cgroup")
        if abort_cleanup:
            add("destroy_qp")  # its abort path frees the two QPs it made, then the rank exits
            add("destroy_qp")
        return seq, c
    else:
        nqp = 4
        for _ in range(nqp):
            add("create_qp")
    for _ in range(nqp):
        add("modify_init")
        if rtr_fails():
            t = c
            add("modify_rtr_timeout")
            return seq, t + DURATION["modify_rtr_timeout"]
        add("modify_rtr")
        add("modify_rts")
    nxt_mr = c + hr.uniform(30, 60)
    nxt_rebuild = c + hr.uniform(240, 360)
    while True:
        if nxt_mr <= nxt_rebuild:
            c = nxt_mr
            if c >= planned:
                return seq, None
            add("reg_mr")
            nxt_mr = c + hr.uniform(30, 60)
        else:
            c = nxt_rebuild
            if c >= planned:
                return seq, None
            add("destroy_qp")
            add("create_qp")
            add("modify_init")
            if rtr_fails():
                t = c
                add("modify_rtr_timeout")
                return seq, t + DURATION["modify_rtr_timeout"]
            add("modify_rtr")
            add("modify_rts")
            nxt_rebuild = c + hr.uniform(240, 360)


# the events columns the generator fills (host, kernel_release and the null columns added after)
EVENT_COLUMNS = {
    "trace_id": pl.String, "seq": pl.Int64, "ts_ns": pl.Int64, "pid": pl.Int32, "tid": pl.Int32,
    "ppid": pl.Int32, "comm": pl.String, "probe": pl.String, "layer": pl.String, "depth": pl.Int16,
    "ret": pl.Int64, "errno": pl.String, "latency_ns": pl.Int64, "arg": pl.String, "kind": pl.String,
    "command": pl.String, "exit_status": pl.Int32, "start_time": pl.Datetime("ns", "UTC"),
    "end_time": pl.Datetime("ns", "UTC"), "lost_events": pl.Int64, "job_id": pl.String,
    "metadata": pl.List(pl.Struct({"key": pl.String, "value": pl.String})),
    "repeat_count": pl.Int64}


def generate(out_dir, hosts: int = 10, hours: float = 3, seed: int = 40, faults=True,
             atlas_comm: str = "atlas-trainer", borealis_retries: int = 0, abort_cleanup: bool = False,
             memlock_probe: bool = True) -> dict:
    if hosts < 8:
        raise ValueError("fleetgen40 needs at least 8 hosts")
    root = Path(out_dir)
    end = hours * 3600.0
    names = [f"fg40-h{i:02d}" for i in range(hosts)]
    keep = set(ROOT_CAUSES) if faults is True else set() if not faults else set(faults)
    cgroup_from = 0.3 * end
    cable_from = 0.4 * end
    cgroup_hosts = [names[i] for i in CGROUP_HOSTS] if "borealis_cgroup_too_low" in keep else []
    cable_host = names[CABLE_HOST] if "bad_cable_rtr_timeout" in keep else None
    date = START.date().isoformat()
    counts: dict[str, int] = defaultdict(int)
    family_hosts: dict[str, set] = defaultdict(set)
    comms: dict[str, set] = defaultdict(set)
    jobs_of: dict[str, set] = defaultdict(set)
    mixed: dict[str, int] = defaultdict(int)
    for h_i, host in enumerate(names):
        hr = random.Random(f"{seed}:{host}")
        boot = hr.randrange(10**9, 9 * 10**9)
        boot_offset = 3 * 86400 + hr.uniform(0, 3600)
        intervals = _intervals(hr, end)
        ends = [b for _, b in intervals]
        windows = _windows(hr, end)
        wstarts = [a for a, _ in windows]
        # calls: (t, tree, pid, ppid, comm, job_id, metadata, family or None)
        calls = []
        pid = hr.randrange(3000, 9000)
        slots = SLOTS[h_i % len(SLOTS)]
        for s_i, tenant in enumerate(slots):
            t = hr.uniform(0, 180)
            job_n = 0
            while t < end:
                job_n += 1
                job_id = f"{tenant}-{h_i:02d}{s_i}{job_n:03d}"
                meta = {"tenant": tenant, "framework": FRAMEWORK[tenant]}
                planned = t + hr.uniform(900, 1800)
                helper, driver = pid, pid + 1
                pid += 2
                procs = [(helper, 1, "hydra_pmi_proxy", [(t, "query_port")])]
                dseq, c = [(t + 0.05, "alloc_pd"), (t + 0.08, "reg_mr")], t + 0.08 + hr.uniform(60, 120)
                while c < planned:
                    dseq.append((c, "reg_mr"))
                    c += hr.uniform(60, 120)
                procs.append((driver, helper, "python3", dseq))
                deaths = []
                for r in range(2):
                    c0 = t + 0.2 + 0.2 * r
                    low = host in cgroup_hosts and tenant == "borealis" and c0 >= cgroup_from
                    bad = cable_from if host == cable_host else None
                    wseq, death = _worker_plan(hr, tenant, c0, planned, cgroup_low=low, cable_bad_from=bad,
                                               retries=borealis_retries, abort_cleanup=abort_cleanup,
                                               memlock_probe=memlock_probe)
                    procs.append((pid, driver, atlas_comm if tenant == "atlas" else WORKER_COMM[tenant], wseq))
                    pid += 1
                    if death is not None:
                        deaths.append(death)
                stop = min(deaths) + 0.5 if deaths else planned
                for p, pp, comm, seq in procs:
                    for ct, tree in seq:
                        back = ct + DURATION.get(tree, 0.002)
                        if back >= end or back >= stop:
                            continue  # killed inside (or before) the call: never returns
                        fam = None
                        if tree == "create_qp_cgroup":
                            fam = "atlas_qp_probe" if tenant == "atlas" else "borealis_cgroup_too_low"
                        elif tree == "reg_mr_memlock":
                            fam = "cinder_memlock_probe"
                        elif tree == "modify_rtr_timeout":
                            fam = "bad_cable_rtr_timeout"
                        calls.append((ct, tree, p, pp, comm, job_id, meta, fam))
                t = stop + hr.uniform(60, 180)
        calls.sort(key=lambda c: c[0])

        # pass 1: snapshot, timing, counters, record attempts
        cnt: dict[tuple[int, str], int] = defaultdict(int)
        groups: dict[tuple[int, str, str], list[int]] = defaultdict(list)
        wgood: dict[tuple[int, str], int] = defaultdict(int)
        status = [None] * len(calls)
        timed = [False] * len(calls)
        snap = [None] * len(calls)
        for i, (ct, tree, *_rest) in enumerate(calls):
            back = ct + DURATION.get(tree, 0.002)
            j = bisect.bisect_left(ends, back)
            if j >= len(intervals) or not (intervals[j][0] <= back < intervals[j][1]):
                continue
            snap[i] = j
            cnt[(j, tree)] += 1
            w = bisect.bisect_right(wstarts, ct) - 1
            inwin = w >= 0 and windows[w][0] <= ct < windows[w][1]
            timed[i] = inwin
            if any(e for _, _, e in TREES[tree][2]):
                # the kernel aggregates identical trees: the signature is the tree's shape and errnos
                groups[(j, tree)].append(i)
            elif inwin and wgood[(w, tree)] < WINDOW_CAP:
                wgood[(w, tree)] += 1
                status[i] = "record"
        repeat = {}
        for _key, idx in groups.items():
            attempts, rest = idx[:K], idx[K:]
            for a in attempts:
                status[a] = "record"
            if rest:
                repeat[attempts[-1]] = 1 + len(rest)
                # the kernel aggregates over every process: an example may stand for another
                # caller's tree (atlas's probe beside a borealis failure); counted for the tests
                if len({calls[a][7] for a in [attempts[-1], *rest]}) > 1:
                    mixed[host] += 1

        # pass 2: records
        recno = hr.randrange(1, 2**31)
        ev: dict[int, dict[str, list]] = defaultdict(dict)  # snapshot -> its records' rows, column by column
        truth = defaultdict(list)
        for i, (ct, tree, rp, ppid, comm, job_id, meta, fam) in enumerate(calls):
            if status[i] is None:
                continue
            recno += 1
            op, arg, frames = TREES[tree]
            weight = repeat.get(i, 1)
            tid = f"{host}:{boot}:{rp}:{recno}"
            mono0 = int((boot_offset + ct) * 1e9)
            back = ct + DURATION.get(tree, 0.002)
            root_err = frames[0][2]
            if timed[i]:
                entries, at = [], mono0
                for _d, fn, e in frames:
                    entries.append(at)
                    at += 1500 + (int(1e9) if (fn == "rdma_addr_find_l2_eth_by_grh" and e == "ETIMEDOUT") else 0)
                root_end = at + 1000
                lat = []
                for k, (d, _fn, _e) in enumerate(frames):
                    nxt = next((entries[m] for m in range(k + 1, len(frames)) if frames[m][0] <= d), root_end)
                    lat.append(nxt - 100 - entries[k])
                ts, lats = entries, lat
                st = START + dt.timedelta(seconds=ct)
                en = st + dt.timedelta(microseconds=lat[0] / 1000)
            else:
                tick = int((boot_offset + back) * 1e9) // 4_000_000 * 4_000_000
                ts = [tick] * len(frames)
                lats = [None] * len(frames)
                st = en = START + dt.timedelta(microseconds=(tick - int(boot_offset * 1e9)) // 1000)
            if len(ts) != len(frames) or len(lats) != len(frames):
                raise ValueError(f"{tid}: a time for every frame")
            extend_rows(ev[snap[i]], {
                "seq": range(len(frames)), "ts_ns": ts, "probe": [fn for _, fn, _ in frames],
                "layer": [LAYER[fn] for _, fn, _ in frames], "depth": [d for d, _, _ in frames],
                "ret": [-ERRNO_NUM[e] if e else 0 for _, _, e in frames], "errno": [e for _, _, e in frames],
                "latency_ns": lats}, {
                "trace_id": tid, "pid": rp, "tid": rp, "ppid": ppid, "comm": comm, "arg": arg,
                "kind": "failure" if root_err else "good", "command": op,
                "exit_status": -ERRNO_NUM[root_err] if root_err else 0, "start_time": st, "end_time": en,
                "lost_events": 0, "job_id": job_id, "metadata": metadata_list(meta),
                "repeat_count": weight if weight > 1 else None})
            if fam:
                counts[fam] += 1
                family_hosts[fam].add(host)
                comms[fam].add(comm)
                jobs_of[fam].add(job_id)
                probe, errno, layer = FAMILIES[fam]
                truth[snap[i]].append((tid, host, "failure", fam, probe, errno, layer, fam in ROUTINE, False))
            else:
                truth[snap[i]].append((tid, host, "good", None, None, None, None, False, False))

        # counters: every probe in every snapshot
        pidx = {fn: k for k, fn in enumerate(PROBES)}
        inv = np.zeros((len(intervals), len(PROBES)), np.int64)
        fail = np.zeros_like(inv)
        errs: dict[tuple[int, int, str], int] = defaultdict(int)
        for (j, tree), c in cnt.items():
            for _, fn, e in TREES[tree][2]:
                inv[j, pidx[fn]] += c
                if e:
                    fail[j, pidx[fn]] += c
                    errs[(j, pidx[fn], e)] += c
        n = len(intervals)
        snap_end = np.array([b for _, b in intervals])
        snap_len = np.array([b - a for a, b in intervals])
        base_ns = int(START.timestamp() * 1e9)
        counters = pl.DataFrame({
            "row_j": np.repeat(np.arange(n), len(PROBES)),
            "row_p": np.tile(np.arange(len(PROBES)), n),
            "snapshot_time": np.repeat((snap_end * 1e9).round().astype(np.int64) + base_ns, len(PROBES)),
            "interval_s": np.repeat(snap_len.round(6), len(PROBES)),
            "probe": PROBES * n,  # (Python strings: polars converts a numpy string array slowly)
            "layer": [LAYER[fn] for fn in PROBES] * n,
            "invocations": inv.ravel(), "failures": fail.ravel(),
            "lost_records": np.zeros(n * len(PROBES), np.int64),
        }).with_columns(pl.col("snapshot_time").cast(pl.Datetime("ns", "UTC")))
        ecells = pl.DataFrame([(j, p, e, c) for (j, p, e), c in errs.items()], orient="row",
                              schema={"row_j": pl.Int64, "row_p": pl.Int64, "errno": pl.String, "count": pl.Int64})
        ecells = ecells.sort("row_j", "row_p", "errno").group_by("row_j", "row_p").agg(
            pl.struct("errno", "count").alias("errno_counts"))
        counters = (counters.join(ecells, on=["row_j", "row_p"], how="left", maintain_order="left")
                    .with_columns(pl.col("errno_counts").fill_null([]))
                    .drop("row_j", "row_p")
                    .with_columns(
            pl.lit(host).alias("host"), pl.lit(KERNEL).alias("kernel_release"), pl.lit("mlx5").alias("vendor"),
            pl.lit("rdma").alias("probe_set"), pl.lit(True).alias("live")))

        cols: dict[str, list] = {column: [] for column in EVENT_COLUMNS}
        for j in range(n):  # the records in snapshot order
            for column, values in ev.get(j, {}).items():
                cols[column] += values
        events = frame(cols, schema=EVENT_COLUMNS).with_columns(
            pl.lit(host).alias("host"), pl.lit(KERNEL).alias("kernel_release"),
            pl.lit(None, pl.String).alias("path"), pl.lit(None, pl.String).alias("path2"),
            pl.lit(None, pl.String).alias("output"))
        write_partition(events, root, "events", date, host, "part-0000.parquet", durable=False)
        tr = pl.DataFrame([r for j in range(n) for r in truth.get(j, [])], orient="row", schema={
            "trace_id": pl.String, "host": pl.String, "kind": pl.String, "root_cause": pl.String,
            "bifurcation_probe": pl.String, "bifurcation_errno": pl.String, "origin_layer": pl.String,
            "expected_error": pl.Boolean, "held_out": pl.Boolean})
        write_partition(tr, root, "truth", date, host, "part-0000.parquet", durable=False)
        cpath = write_partition(counters, root, "counters", date, host, "part-0000.parquet", durable=False)
        write_counter_buckets(cpath, durable=False)

    summary = {
        "hosts": names, "atlas_comm": atlas_comm,
        "slots": {h: list(SLOTS[i % len(SLOTS)]) for i, h in enumerate(names)},
        "cgroup_hosts": cgroup_hosts, "cable_host": cable_host,
        "cgroup_from": _iso(cgroup_from), "cable_from": _iso(cable_from),
        "counts": dict(counts), "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
        "family_comms": {k: sorted(v) for k, v in comms.items()},
        "family_jobs": {k: len(v) for k, v in jobs_of.items()},
        "mixed_aggregates": dict(mixed),
    }
    (root / "fleetgen40.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary

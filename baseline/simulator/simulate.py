"""Fleet simulator: RDMA control-path traces of N hosts, in the fleet tracer's exact schema.

No RDMA fleet is reachable here, so this module writes what `tracer run` would have written on
one: failure records, sampled good traces and counters, plus a ground-truth table of what was
injected. `simulate(out_dir, hosts=..., hours=..., seed=..., start=...)` is the entry point.

Layout
------
Default (dataset layout, see tracer.schema)::

    <out>/events/date=YYYY-MM-DD/host=<host>/part-00000.parquet
    <out>/counters/date=YYYY-MM-DD/host=<host>/part-00000.parquet
    <out>/truth/date=YYYY-MM-DD/host=<host>/part-00000.parquet

With ``spool=True`` events and counters go to the tracer's spool layout instead, one directory
per non-idle 5 s snapshot, renamed into place atomically (truth stays in the dataset layout)::

    <out>/spool/<host>/snap-<UTC YYYYmmddTHHMMSS.fffZ>-<seq>/{events,counters}.parquet

Every host-day is one partition file per table. Hosts are generated in contiguous ranges (one
worker task each, optionally in worker processes): each host's rows are built with numpy alone,
then a batch of hosts (up to FLUSH_ROWS rows) becomes one Arrow table per table and every host's
slice of it is written to its own file (no fsync: the data is regenerable; renames stay atomic).
Memory is bounded by the batch, never by the fleet. Hosts are named gpu00000, gpu00001, ...

The fleet
---------
Hosts: vendor mlx5 (80 %; MLNX_OFED kernels 5.15.0-1063-nvidia / 6.8.0-1017-nvidia, or upstream
6.8.0-49-generic), bnxt_re (12 %) and irdma (8 %) on 6.8.0-49-generic or the new
6.11.0-29-generic. mlx5 NIC firmware 28.39.2048 / 28.40.1000 / 28.41.1000 (5 %).

Probe set ``rdma`` (15 probes, see baseline.simulator.catalog): 5 uverbs handlers
(ib_uverbs_create_cq, ib_uverbs_create_qp, ib_uverbs_modify_qp, ib_uverbs_reg_mr,
ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR), 5 driver callbacks (mlx5_ib_alloc_pd,
mlx5_ib_create_qp, mlx5_ib_modify_qp, mlx5_ib_reg_user_mr, mlx5_ib_reg_user_mr_dmabuf, renamed
by the vendor namespace gate to bnxt_re_* / irdma_*), 1 core helper (__ib_umem_get; ib_umem_get
on upstream kernels), 2 OFED peer-memory helpers (ib_peer_umem_get,
ib_umem_activate_invalidation_notifier; not live on upstream kernels) = RDMATracer's 13, plus 2
read-only probes (ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY, rdma_lookup_get_uobject) that
make routine errors and errno masking visible. Only probed functions produce frames; `depth` is the
nesting among probed frames (an unprobed caller in between does not count).

Call chains (good, mlx5 OFED; frames in entry order, depth in brackets):
  query_gid            QUERY_GID_ENTRY[0]
  alloc_pd             mlx5_ib_alloc_pd[0]                       (the uverbs handler is not probed)
  create_cq            ib_uverbs_create_cq[0] rdma_lookup_get_uobject[1] __ib_umem_get[1]
  create_qp            ib_uverbs_create_qp[0] lookup[1] lookup[1] mlx5_ib_create_qp[1] __ib_umem_get[2]
  modify_qp X->Y       ib_uverbs_modify_qp[0] lookup[1] mlx5_ib_modify_qp[1]   (arg = "RESET->INIT" ...)
  reg_mr               ib_uverbs_reg_mr[0] lookup[1] mlx5_ib_reg_user_mr[1] __ib_umem_get[2]
  reg_dmabuf_mr        REG_DMABUF_MR handler[0] mlx5_ib_reg_user_mr_dmabuf[1]
  lookup_uobject       rdma_lookup_get_uobject[0]   (dealloc/destroy/dereg: handlers unprobed)

Jobs: each host runs jobs back to back (3 h median). A job's initialisation (20-90 s) scans the
GID tables (32 queries), allocates a PD, registers 16-64 GPU buffers (dmabuf) and 16-128 host
buffers, creates ~QP/16 CQs and ~600 QPs (lognormal, 32..6000) and moves each QP
RESET->INIT->RTR->RTS; then every ~5 min a burst of re-registrations (reg_mr + dereg); at the end
one DESTROY lookup per object. A failure that kills the job (fatal) ends it; the scheduler
requeues it (same job_id, metadata restart=N) up to 3 times. So failures cluster at init.

What is recorded (as the fleet tracer would): every failure of a top-level probed call emits its
whole probed call tree with every frame's own return value (kind ``failure``); successful calls
are emitted only when sampled in a capture window, with probability `good_rate`, and only if they
took < 50 ms (kind ``good``); counters count every invocation per host per 5 s interval per probe
(zero-delta rows are omitted, except that the first interval lists all 15 probes with their live
flag). Counter failures and errno histograms equal the failure frames of the events exactly (no
ring-buffer loss is simulated; lost_events = lost_records = 0). trace_id = "<host>:<n>".
Event metadata: vendor, nic_fw (mlx5), image, team, restart, scheduler.

Good-call variants: every 64th CQ/QP also pins a new doorbell page (one more __ib_umem_get); on
irdma, create_qp/create_cq pin nothing (buffers were registered beforehand).

Volume (defaults, good_rate=0.005, measured on 40 host-days): ~23,000 calls, ~1,100 event rows
(~130 good traces, ~500 routine expected failures, plus the injected ones), ~2,100 counter rows
per host-day; on a 10,000-host day ~28,500 calls and ~970 event rows per host, ~25 B per event
row on disk, ~44 B per event row for all three tables.
`events_target` raises good_rate (capture-heavy) to reach a total event count, e.g. 100 million
(good_rate estimated from 128 pilot hosts); such runs take ~12 B per event row.

Ground truth (table ``truth``, one row per emitted trace plus one per unobservable failure)
-------------------------------------------------------------------------------------------
root_cause: null for good traces, else one of
  (a) dmabuf_peer_fallback     image trainer:24.11-nodmabuf (3 % of jobs on mlx5 OFED hosts) was
      built without the dmabuf flag: GPU buffers go through ib_uverbs_reg_mr, pinning fails over
      to the peer-memory path, legacy nv_peer_mem claims the pages but lacks invalidation support:
      reg_mr EOPNOTSUPP / lookup 0 / mlx5_ib_reg_user_mr EOPNOTSUPP / __ib_umem_get 0 /
      ib_peer_umem_get 0 [3] / ib_umem_activate_invalidation_notifier EOPNOTSUPP [2]. A path
      divergence: bifurcation = ib_peer_umem_get with errno null; origin peer-mem. Fatal.
  (b) efault_peer_cascade      a library rollout (35 % of mlx5 OFED hosts, from 25-45 % into the
      window) registers unmapped buffers: EFAULT at all four reg_mr layers (ib_uverbs_reg_mr,
      mlx5_ib_reg_user_mr, __ib_umem_get, ib_peer_umem_get): deeper than the deepest probe.
      bifurcation ib_peer_umem_get/EFAULT, origin peer-mem. 30 % of init registrations fail.
      Thousands of hosts in a 10,000-host day.
  (c) dmabuf_eperm_new_driver  bnxt_re on the new 6.11 kernel: 20 % of dmabuf registrations
      (large ones, a size overflow) fail EPERM in bnxt_re_reg_user_mr_dmabuf; origin driver.
  (d) mkey_cache_enomem        mlx5 firmware 28.41.1000: reg_mr ENOMEM from the driver (mkey
      cache exhaustion), __ib_umem_get succeeded (not memory pressure); rises with job age; not
      fatal. origin driver. Contrast: memlock_limit below.
  (e) crash_loop_fw_bad_state  0.1 % of hosts (>= 1): from some time on (the running job dies
      then), every job dies at its first firmware command, mlx5_ib_alloc_pd EIO (firmware in a bad
      state), and is requeued every 1-5 min all day. origin driver.
  (f) cleanup_ebusy_unprobed   5 % of jobs end with ibv_dealloc_pd -EBUSY (uverbs_free_pd, MRs
      leaked): no probe covers it, so it has NO events; truth rows "<host>:unobserved-<k>" only.
Background (real but not injected): memlock_limit (1 % of jobs: reg_mr ENOMEM from __ib_umem_get,
origin core), neigh_resolve_timeout (2 % of jobs: 1 % of INIT->RTR fail ETIMEDOUT at the handler,
the driver is never called; origin uverbs as far as probes can tell), stale_qp_handle (10 % of jobs at teardown: modify_qp EINVAL at the handler over
rdma_lookup_get_uobject ENOENT: errno masking, origin core), and the routine expected errors
expected:gid_query_empty_slot (ENODATA from GID queries of empty/disabled slots; hosts have 0, 25
or 50 % such slots) and expected:rdmacg_eagain_retry (create_qp EAGAIN from the rdma cgroup charge,
retried successfully 2 ms later), both with expected_error = true.

bifurcation_probe / bifurcation_errno: the first frame (in seq order) whose probe leaves the good
call chain of the same operation on the same platform; if the chain is the good one, the origin
frame. origin_layer: layer of the deepest failing frame on the failing path (follow failing
children from the root). held_out: a random 20 % of good traces, reserved for false-finding checks.
Truth rows are partitioned by the trace's start time (an extra `time` column is used for that and
is not written).

Determinism: host i is generated from numpy Generator seeded with (seed, i) only (the fleet plan
uses (seed, fleet-size)); a host's rows do not depend on the batch it is written from, so the same
arguments give byte-identical files whatever `workers` is.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

import numpy as np

from baseline.simulator import catalog as cat
from baseline.simulator.host import NS, FleetPlan, HostResult, generate_calls, host_name, profile
from baseline.simulator.joblogs import write_joblog
from baseline.simulator.plan import (  # the checks: light, the CLI makes them before importing this module
    DEFAULT_GOOD_RATE,
    DEFAULT_START,
    SCENARIOS,
    check_plan,
    check_simulate,
)
from baseline.simulator.tables import VOCAB, HostPart, assemble, build, host_part, host_result
from baseline.simulator.writers import write_batch, write_spool
from tracer import units
from tracer.atomic import DATASET_LOCK_NAME, dataset_lock, remove_lone_dataset_lock, staged_merge
from tracer.pools import process_pool, results_in_order

__all__ = ["simulate", "simulate_host", "plan_fleet", "SCENARIOS", "DEFAULT_START"]


def plan_fleet(hosts: int, hours: float, seed: int, start: str | datetime | None = None,
               good_rate: float = DEFAULT_GOOD_RATE, held_out_fraction: float = 0.2,
               scenarios: str | Iterable[str] | None = None) -> FleetPlan:
    sc, start_ns = check_plan(hosts, hours, seed, start, good_rate, scenarios)
    # Each enabled injected cause surely shows on one host (distinct hosts when the fleet allows).
    rng = np.random.default_rng([seed, hosts])
    order = rng.permutation(hosts)
    forced = {c: int(order[i % hosts]) for i, c in enumerate(cat.INJECTED_CAUSES) if c in sc}
    return FleetPlan(
        n_hosts=hosts, seed=seed, start_ns=start_ns, end_ns=start_ns + int(hours * 3600 * NS),
        good_rate=float(good_rate), held_out_fraction=held_out_fraction, scenarios=sc, forced=forced,
    )


def simulate_host(plan: FleetPlan, index: int) -> HostResult:
    """Generate one host's tables in memory (deterministic in (plan, index))."""
    rng = np.random.default_rng([plan.seed, index])
    prof = profile(plan, index, rng)
    t, o, j, jobs, unprobed = generate_calls(prof, plan, rng)
    return build(prof, plan, rng, t, o, j, jobs, unprobed)


def _host_part(plan: FleetPlan, index: int) -> HostPart:
    rng = np.random.default_rng([plan.seed, index])
    prof = profile(plan, index, rng)
    t, o, j, jobs, unprobed = generate_calls(prof, plan, rng)
    return host_part(prof, plan, rng, t, o, j, jobs, unprobed)


def _host_summary(part: HostPart, sizes: dict[str, int]) -> dict:
    rc = part.truth["root_cause"]
    causes, counts = np.unique(rc[rc >= 0], return_counts=True)
    return {
        "host": part.name, "events": int(part.events["trace_no"].size),
        "traces": int((part.truth["trace_no"] >= 0).sum()), "counters": int(part.counters["interval"].size),
        "truth": int(part.truth["trace_no"].size), "bytes": sizes,
        "causes": {VOCAB[c]: int(n) for c, n in zip(causes, counts, strict=True)}, **part.stats,
    }


# A batch is flushed (one Arrow table per table, then one file per host and table) once it holds
# this many event + counter rows: big enough to amortise per-batch work, small enough to bound memory.
FLUSH_ROWS = 400_000


def _write_hosts(args: tuple[FleetPlan, range, str, bool]) -> list[dict]:
    """Generate and write a contiguous range of hosts (one worker task)."""
    plan, indices, out, spool = args
    root = Path(out)
    summaries: list[dict] = []
    pending: list[HostPart] = []

    def flush() -> None:
        batch = assemble(pending)
        if spool:
            sizes = [write_spool(root, host_result(batch, b, part), plan.start_ns) for b, part in enumerate(pending)]
        else:
            sizes = write_batch(root, batch)
        for part, size in zip(pending, sizes, strict=True):
            size["joblogs"] = write_joblog(root, part)
        summaries.extend(_host_summary(part, size) for part, size in zip(pending, sizes, strict=True))
        pending.clear()

    rows = 0
    for index in indices:
        part = _host_part(plan, index)
        pending.append(part)
        rows += part.events["trace_no"].size + part.counters["interval"].size
        if rows >= FLUSH_ROWS or spool:
            flush()
            rows = 0
    if pending:
        flush()
    return summaries


def estimate_good_rate(plan: FleetPlan, events_target: int, pilot_hosts: int = 128) -> float:
    """good_rate that makes the fleet emit about `events_target` event rows (capture-heavy runs)."""
    probe_plan = FleetPlan(**{**plan.__dict__, "good_rate": 0.0})
    fail_ev = succ_frames = 0
    n = min(pilot_hosts, plan.n_hosts)
    picks = np.linspace(0, plan.n_hosts - 1, n).astype(int)
    for i in picks:
        part = _host_part(probe_plan, int(i))
        fail_ev += part.events["trace_no"].size
        succ_frames += part.success_frames
    per_host_needed = events_target / plan.n_hosts - fail_ev / n
    return float(np.clip(per_host_needed / max(succ_frames / n, 1), 0.0, 1.0))


def simulate(
    out_dir: str | os.PathLike,
    hosts: int = 10,
    hours: float = 24.0,
    seed: int = 0,
    start: str | datetime | None = None,
    *,
    spool: bool = False,
    scenarios: str | Iterable[str] | None = None,
    good_rate: float = DEFAULT_GOOD_RATE,
    events_target: int | None = None,
    held_out_fraction: float = 0.2,
    workers: int = 1,
    progress=None,
) -> dict:
    """Simulate `hosts` hosts for `hours` from `start` and write them under `out_dir`.

    Returns a summary: hosts, events, traces, counters and truth rows, bytes per table,
    traces and hosts per root cause, the good_rate used, wall seconds.
    """
    t0 = time.perf_counter()
    check_simulate(out_dir, hosts, hours, seed, start, spool=spool, scenarios=scenarios, good_rate=good_rate,
                   events_target=events_target, workers=workers)  # what `baseline simulate` checks first
    plan = plan_fleet(hosts, hours, seed, start, good_rate, held_out_fraction, scenarios)
    workers = units.positive_int(workers, "--workers")
    if events_target is not None:
        plan = FleetPlan(**{**plan.__dict__, "good_rate": estimate_good_rate(plan, events_target)})
    # a dataset that appears whole or not at all; written into an existing dataset, staged
    # inside it and moved into place at the end, under its lock, so an audit (coverage,
    # export) reading it meanwhile sees it before or after, not half of each (its shared lock
    # waits), and a stop half-way leaves it as it was
    existing = Path(out_dir).is_dir()
    lock_made_here = existing and not (Path(out_dir) / DATASET_LOCK_NAME).exists()
    with dataset_lock(out_dir, exclusive=True) if existing else contextlib.nullcontext():
        try:
            with staged_merge(out_dir) as out:
                return _simulate_into(out, plan, hosts, hours, seed, spool, workers, progress, t0)
        except BaseException:
            if lock_made_here:  # an empty directory given stays empty
                remove_lone_dataset_lock(out_dir)
            raise


def _simulate_into(out: Path, plan: FleetPlan, hosts: int, hours: float, seed: int, spool: bool,
                   workers: int, progress, t0: float) -> dict:
    summary: dict = {"hosts": hosts, "hours": hours, "seed": seed, "good_rate": plan.good_rate,
                     "events": 0, "traces": 0, "counters": 0, "truth": 0, "calls": 0, "failures": 0,
                     "good": 0, "jobs": 0, "bytes": {}, "root_causes": {}}
    # tasks are contiguous host ranges: small enough to balance the workers, big enough to batch
    per_task = max(1, min(64, -(-hosts // (workers * 4))))
    tasks = [(plan, range(i, min(i + per_task, hosts)), str(out), spool) for i in range(0, hosts, per_task)]
    if workers > 1 and len(tasks) > 1:
        # spawn: fork after polars threads start can deadlock
        with process_pool(min(workers, len(tasks)), "spawn", "simulate --workers") as pool:
            _collect(summary, (r for rs in results_in_order(pool, _write_hosts, tasks) for r in rs), progress)
    else:
        _collect(summary, (r for task in tasks for r in _write_hosts(task)), progress)
    summary["wall_s"] = round(time.perf_counter() - t0, 3)
    summary["forced_hosts"] = {c: host_name(i) for c, i in plan.forced.items()}
    return summary


def _collect(summary: dict, results: Iterable[dict], progress) -> None:
    for n, r in enumerate(results, 1):
        for key in ("events", "traces", "counters", "truth", "calls", "failures", "good", "jobs"):
            summary[key] += r[key]
        for table, size in r["bytes"].items():
            summary["bytes"][table] = summary["bytes"].get(table, 0) + size
        for cause, count in r["causes"].items():
            entry = summary["root_causes"].setdefault(cause, {"traces": 0, "hosts": 0})
            entry["traces"] += count
            entry["hosts"] += 1
        if progress:
            progress(n, r)

"""fleetgen15: a fifteenth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings), aimed at what the fourteen
before it leave out: a fault announced by the latency of successful calls, a peer-memory
regression that arrives with a kernel/OFED upgrade on the hosts that took it, failures confined to
the teardown path, and a wall clock running minutes ahead.

The fleet: mlx5 RoCE GPU hosts in racks of 8 (`fg15-r<RR>-h<H>`). Three racks in four (rack mod 4
!= 3) run MLNX_OFED on 5.15.0-122-generic (GPU memory registered through the peer-memory client,
nvidia-peermem); the others run upstream 6.8.0-60-generic and register host memory only. Two job slots a host, jobs of
10-30 minutes of 4 ranks (one process a rank). A rank reads the 4 GID slots of its port, allocates
a PD, registers a host buffer (and on OFED a GPU buffer), creates a CQ and an RC QP, moves it
RESET->INIT->RTR->RTS, re-registers its (GPU) buffer every 3-5 minutes while it trains (register
the new one, deregister the old), and at the end tears down: destroy_qp, dereg_mr of each buffer,
dealloc_pd, exit 0. A rank that fails fatally ends its job (the launcher kills the other ranks at
once: no teardown); the slot's next job starts 1-3 minutes later.

The daemon (`tracer run -i 60s`): 60 s snapshots at a per-host phase, every call counted per
probe (every frame below is a probe); a tree is emitted when any probe in it fails, the first 3 of
a signature (shape and errnos) per snapshot as records and the rest in the third's repeat_count;
good trees only in capture windows (the first 30 s of every 5 minutes at a per-host phase) and only
under 50 ms, timed there; outside them a failure tree's frames carry the 4 ms tick its root
returned in, latency null.

Not faults (nothing may alert on them):
  - clock_ahead: one host's wall clock runs 7 minutes ahead (its snapshot times and trace times
    alike); its monotonic ts_ns is unaffected;
  - the two canary hosts reboot into the new release (4 minutes with nothing counted, a new boot,
    a new monotonic clock): the reboot itself is no fault.

Routine families (truth expected_error, no root cause; the process goes on):
  gid_empty_slot     query_gid ENODATA at rdma_get_gid_attr ("-ENODATA empty GID slot"): slot 3 of
                     every port is empty; rdma-core skips it. Every host, every rank.
  peer_gup_rescued   OFED GPU reg_mr: pin_user_pages_fast EFAULT under __ib_umem_get, then
                     ib_peer_umem_get claims the range (reference: "OFED with a peer client then
                     retries in ib_peer_umem_get"); the root returns 0.
  exit_double_dereg  teardown only: a registration cache deregisters the rank's last buffer a
                     second time: dereg_mr ENOENT at rdma_lookup_get_uobject under
                     __uobj_get_destroy ("-ENOENT for a missing handle on dereg_mr"); the rank then
                     deallocates its PD and exits 0. 30 % of ranks, every host. It is a rank's
                     last failure, and outside a capture window its last record at all (the
                     dealloc_pd after it succeeds unseen): a teardown error, not a death.

Root causes (truth root_cause; ROOT_CAUSES: origin probe, errno, operation):
  fw_slow_then_timeout  one OFED host's NIC firmware degrades: from 20 % of the window every
                     firmware command (mlx5_cmd_exec) takes longer, linearly to 60x at the end
                     (INIT->RTR's ~0.8 ms becomes ~50 ms: its good trees stop being sampled);
                     from 55 % INIT->RTR fails ETIMEDOUT at mlx5_cmd_exec (errno_conventions:
                     command timeout) on a share rising from 5 % to 45 %; the rank dies.
                     Decision: that host MUST alert with ETIMEDOUT.
  peermem_enomem_after_upgrade  two hosts of rack 2 (the canaries) take a kernel/OFED upgrade to
                     5.15.0-126-generic at 35 % and 50 % of the window; after it 35 % of their GPU
                     registrations fail ENOMEM at ib_peer_umem_get (the peer client cannot map
                     the GPU's BAR: "<peer get_pages/dma_map errno>"), after the routine GUP
                     EFAULT; host-memory registrations on the same hosts pass, and so do the GPU
                     registrations of the rack's other hosts (old release). The rank dies.
                     Decision: both hosts MUST alert with ENOMEM (two hosts: their own release).
  destroy_qp_usecnt_leak  one host gets a library build at 25 % of the window that leaks a flow
                     on every QP: destroy_qp fails EBUSY at ib_destroy_qp_user ("qp->usecnt != 0")
                     at every teardown, and the rank exits 1 (its job is marked failed, the QP
                     and PD leak until the context closes). Teardown only: setup is healthy.
                     Decision: that host MUST alert with EBUSY.

Truth per trace: root_cause for the fatal failures above, expected_error for the routine ones,
the bifurcation probe and errno = the deepest failing frame the root's errno comes from (the
origin) and its layer. The summary (`<out>/fleetgen15.json` and the return value) names
`alert_hosts` (acceptable: host -> errnos), `required_alert_hosts` (must alert) and the hosts of
each shape.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import random
from collections import defaultdict
from pathlib import Path

import polars as pl
import pyarrow as pa

from tracer.schema import COUNTERS, EVENTS, TRUTH, write_counter_buckets, write_partition

START = dt.datetime(2026, 11, 3, 6, 0, tzinfo=dt.UTC)
SNAP_NS = 60_000_000_000
TICK_NS = 4_000_000
WINDOW_EVERY_NS = 300_000_000_000
WINDOW_LEN_NS = 30_000_000_000
GOOD_MAX_NS = 50_000_000
OFED_RELEASE, NEW_RELEASE, UPSTREAM_RELEASE = "5.15.0-122-generic", "5.15.0-126-generic", "6.8.0-60-generic"
ERRNO = {"ENODATA": 61, "EFAULT": 14, "ENOENT": 2, "ENOMEM": 12, "ETIMEDOUT": 110, "EBUSY": 16}

# (origin probe, errno, operation)
ROOT_CAUSES = {
    "fw_slow_then_timeout": ("mlx5_cmd_exec", "ETIMEDOUT", "modify_qp"),
    "peermem_enomem_after_upgrade": ("ib_peer_umem_get", "ENOMEM", "reg_mr"),
    "destroy_qp_usecnt_leak": ("ib_destroy_qp_user", "EBUSY", "destroy_qp"),
}
ROUTINE = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "query_gid"),
    "peer_gup_rescued": ("pin_user_pages_fast", "EFAULT", "reg_mr"),
    "exit_double_dereg": ("rdma_lookup_get_uobject", "ENOENT", "dereg_mr"),
}

LAYER = {"ib_uverbs_": "uverbs", "mlx5": "driver", "__mlx5": "driver", "_create_user_qp": "driver",
         "create_user_qp": "driver", "destroy_qp_common": "driver", "ib_peer_umem_get": "peer-mem",
         "ib_get_peer_client": "peer-mem", "ib_umem_activate_invalidation_notifier": "peer-mem"}


def layer_of(fn: str, depth: int, op: str) -> str:
    if fn.startswith("ib_uverbs_"):
        return "uverbs"
    if fn in LAYER:
        return LAYER[fn]
    if fn.startswith(("mlx5", "__mlx5", "create_cq_user", "alloc_cacheable_mr", "reg_create", "create_real_mr")):
        return "driver"
    if fn == "create_qp" and depth == 5:
        return "driver"  # mlx5/qp.c's create_qp, the third of that name in the tree
    return "core"


# Call trees from the reference (pre-order: depth, function). `umem` is the pinning frame:
# ib_umem_get_peer on OFED (MLNX_OFED's export, then the static __ib_umem_get), ib_umem_get upstream.
def _umem(ofed: bool, d: int, gpu: bool = False) -> list[tuple[int, str]]:
    if not ofed:
        return [(d, "ib_umem_get"), (d + 1, "pin_user_pages_fast")]
    out = [(d, "ib_umem_get_peer"), (d + 1, "__ib_umem_get"), (d + 2, "pin_user_pages_fast")]
    if gpu:
        out += [(d + 2, "ib_peer_umem_get"), (d + 3, "ib_get_peer_client")]
    return out


def frames_of(op: str, ofed: bool, variant: str = "") -> list[tuple[int, str]]:
    if op == "query_gid":
        return [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"), (1, "rdma_get_gid_attr"),
                (1, "rdma_read_gid_attr_ndev_rcu"), (1, "rdma_put_gid_attr")]
    if op == "alloc_pd":
        return [(0, "ib_uverbs_alloc_pd"), (1, "rdma_alloc_begin_uobject"), (1, "mlx5_ib_alloc_pd"),
                (2, "mlx5_cmd_exec"), (1, "rdma_restrack_add")]
    if op == "reg_mr":
        gpu = variant == "gpu"
        tail = ([(2, "create_real_mr"), (3, "reg_create"), (4, "mlx5_cmd_exec"), (3, "ib_umem_activate_invalidation_notifier")]
                if gpu else [(2, "create_real_mr"), (3, "alloc_cacheable_mr")])
        return [(0, "ib_uverbs_reg_mr"), (1, "rdma_alloc_begin_uobject"), (1, "rdma_lookup_get_uobject"),
                (1, "mlx5_ib_reg_user_mr"), *_umem(ofed, 2, gpu), *tail, (1, "rdma_restrack_add")]
    if op == "create_cq":
        return [(0, "ib_uverbs_create_cq"), (1, "create_cq"), (2, "rdma_alloc_begin_uobject"), (2, "mlx5_ib_create_cq"),
                (3, "create_cq_user"), *_umem(ofed, 4), (4, "mlx5_ib_db_map_user"), (3, "mlx5_comp_eqn_get"),
                (3, "mlx5_core_create_cq"), (2, "rdma_restrack_add")]
    if op == "create_qp":
        return [(0, "ib_uverbs_create_qp"), (1, "create_qp"), (2, "rdma_alloc_begin_uobject"),
                (2, "rdma_lookup_get_uobject"), (2, "ib_create_qp_user"), (3, "create_qp"), (4, "mlx5_ib_create_qp"),
                (5, "create_qp"), (6, "create_user_qp"), (7, "_create_user_qp"), (7, "mlx5_qpc_create_qp"),
                (8, "mlx5_cmd_exec"), (3, "ib_create_qp_security"), (2, "ib_qp_usecnt_inc"), (2, "uverbs_response")]
    if op == "modify_qp":
        mid = {"RESET->INIT": [(4, "rdma_counter_bind_qp_auto")],
               "INIT->RTR": [(4, "rdma_fill_sgid_attr"), (5, "rdma_get_gid_attr"), (4, "ib_resolve_eth_dmac"),
                             (5, "ib_resolve_unicast_gid_dmac"), (6, "rdma_addr_find_l2_eth_by_grh")],
               "RTR->RTS": []}[variant]
        return [(0, "ib_uverbs_modify_qp"), (1, "modify_qp"), (2, "rdma_lookup_get_uobject"),
                (2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp"), *mid, (4, "ib_security_modify_qp"),
                (5, "mlx5_ib_modify_qp"), (6, "__mlx5_ib_modify_qp"), (7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec"),
                (2, "rdma_lookup_put_uobject")]
    if op == "destroy_qp":
        return [(0, "ib_uverbs_destroy_qp"), (1, "__uobj_get_destroy"), (2, "rdma_lookup_get_uobject"), (2, "uobj_destroy"),
                (3, "uverbs_destroy_uobject"), (4, "destroy_hw_idr_uobject"), (5, "uverbs_free_qp"),
                (6, "ib_destroy_qp_user"), (7, "mlx5_ib_destroy_qp"), (8, "destroy_qp_common"),
                (9, "mlx5_core_destroy_qp"), (10, "mlx5_cmd_exec"), (7, "ib_qp_usecnt_dec"), (1, "rdma_lookup_put_uobject")]
    if op == "dereg_mr":
        return [(0, "ib_uverbs_dereg_mr"), (1, "__uobj_perform_destroy"), (2, "__uobj_get_destroy"),
                (3, "rdma_lookup_get_uobject"), (3, "uobj_destroy"), (4, "uverbs_destroy_uobject"),
                (5, "destroy_hw_idr_uobject"), (6, "uverbs_free_mr"), (7, "ib_dereg_mr_user"), (8, "mlx5_ib_dereg_mr"),
                (9, "mlx5_revoke_mr"), (9, "ib_umem_release"), (6, "ib_rdmacg_uncharge"), (1, "rdma_lookup_put_uobject")]
    if op == "dealloc_pd":
        return [(0, "ib_uverbs_dealloc_pd"), (1, "__uobj_perform_destroy"), (2, "__uobj_get_destroy"),
                (3, "rdma_lookup_get_uobject"), (3, "uobj_destroy"), (4, "uverbs_destroy_uobject"),
                (5, "destroy_hw_idr_uobject"), (6, "uverbs_free_pd"), (7, "ib_dealloc_pd_user"), (8, "mlx5_ib_dealloc_pd"),
                (9, "mlx5_cmd_dealloc_pd"), (10, "mlx5_cmd_exec"), (6, "ib_rdmacg_uncharge"), (2, "rdma_lookup_put_uobject")]
    raise ValueError(op)


OPS = [("query_gid", ""), ("alloc_pd", ""), ("reg_mr", "host"), ("reg_mr", "gpu"), ("create_cq", ""), ("create_qp", ""),
       ("modify_qp", "RESET->INIT"), ("modify_qp", "INIT->RTR"), ("modify_qp", "RTR->RTS"), ("destroy_qp", ""),
       ("dereg_mr", ""), ("dealloc_pd", "")]


@functools.cache
def failing_tree(op: str, ofed: bool, variant: str, fail: str | None, absorbed: str | None = None,
                 origin_children: bool = False):
    """The frames of one call as (depth, fn, layer, errno): `fail` names the origin frame
    ("fn:ERRNO" at its first occurrence, or "fn@depth:ERRNO"); the frames after the origin inside
    its parent are not run (its own children run first, and pass, when `origin_children`), and
    every ancestor returns the errno (the reference's propagation).
    `absorbed` is an error that the code went on from (GUP's EFAULT the peer client rescues)."""
    frames = frames_of(op, ofed, variant)
    out = []
    origin_i = None
    if fail:
        where, errno = fail.split(":")
        fn, _, depth = where.partition("@")
        origin_i = next(i for i, (d, f) in enumerate(frames) if f == fn and (not depth or d == int(depth)))
    chain = set()
    if origin_i is not None:
        d0 = frames[origin_i][0]
        chain.add(origin_i)
        for i in range(origin_i - 1, -1, -1):
            if frames[i][0] < d0:
                chain.add(i)
                d0 = frames[i][0]
    last = origin_i
    if origin_i is not None and origin_children:
        while last + 1 < len(frames) and frames[last + 1][0] > frames[origin_i][0]:
            last += 1
    for i, (d, f) in enumerate(frames):
        if last is not None and i > last:
            break  # the origin's failure unwinds: nothing after it runs
        err = errno if i in chain else None
        if absorbed and err is None and f == absorbed.split(":")[0]:
            err = absorbed.split(":")[1]
        out.append((d, f, layer_of(f, d, op), err))
    return tuple(out)


def _probes(ofed: bool) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for op, v in OPS:
        if v == "gpu" and not ofed:
            continue
        for d, f in frames_of(op, ofed, v):
            seen.setdefault(f, layer_of(f, d, op))
    return sorted(seen.items())


class Host:
    def __init__(self, name: str, rack: int, h: int, rng: random.Random):
        self.name, self.rack, self.h = name, rack, h
        self.ofed = rack % 4 != 3
        self.release = OFED_RELEASE if self.ofed else UPSTREAM_RELEASE
        self.snap_phase = rng.randrange(SNAP_NS)
        self.win_phase = rng.randrange(WINDOW_EVERY_NS)
        self.boot_ns = rng.randrange(3_600, 40 * 86_400) * 1_000_000_000  # monotonic at the window start
        self.skew_ns = 0
        self.upgrade_at: int | None = None  # window offset (ns) of the reboot into NEW_RELEASE
        self.slow = self.leak = False

    def in_window(self, t: int) -> bool:
        return (t - self.win_phase) % WINDOW_EVERY_NS < WINDOW_LEN_NS

    def release_at(self, t: int) -> str:
        return NEW_RELEASE if self.upgrade_at is not None and t >= self.upgrade_at else self.release

    def boot_at(self, t: int) -> tuple[int, int]:
        """(boot number, monotonic ns at window offset t)."""
        if self.upgrade_at is not None and t >= self.upgrade_at:
            return 2, t - self.upgrade_at + 25_000_000_000
        return 1, self.boot_ns + t


def generate(out_dir, hosts: int = 64, hours: float = 3.0, seed: int = 15) -> dict:
    rng = random.Random(seed)
    out = Path(out_dir)
    span = int(hours * 3600e9)
    fleet = [Host(f"fg15-r{i // 8:02d}-h{i % 8}", i // 8, i % 8, rng) for i in range(hosts)]
    by_name = {h.name: h for h in fleet}
    ofed_hosts = [h for h in fleet if h.ofed]
    slow = by_name.get("fg15-r04-h2") or ofed_hosts[-1]
    canaries = [h for h in ofed_hosts if h.rack == 2][:6:5] or ofed_hosts[1:3]
    leak = by_name.get("fg15-r05-h6") or fleet[-2]
    clock = by_name.get("fg15-r03-h6") or fleet[3]
    slow.slow, leak.leak = True, True
    clock.skew_ns = 7 * 60 * 1_000_000_000
    for host, at in zip(canaries, (0.35, 0.50), strict=False):
        host.upgrade_at = int(at * span)

    calls = []  # (host, t_ns, key, root_errno) per call: the counters' source
    records = []  # emitted trees
    counts: dict = defaultdict(lambda: defaultdict(int))

    for host in fleet:
        tid = 1000 + rng.randrange(1000)
        for slot in range(2):
            t = rng.randrange(0, 300_000_000_000)
            job_n = 0
            while t < span:
                job_n += 1
                job = f"{host.name}-s{slot}-j{job_n}"
                duration = rng.randrange(600, 1800) * 1_000_000_000
                end_planned = t + duration
                down = host.upgrade_at
                if down is not None and t < down + 240_000_000_000 and end_planned > down:
                    # the reboot into the new release: jobs end before it, none run in its 4 minutes
                    if t >= down:
                        t = down + 240_000_000_000 + rng.randrange(10_000_000_000)
                        continue
                    end_planned = min(end_planned, down - 30_000_000_000)
                ranks = []
                for r in range(4):
                    tid += rng.randrange(3, 40)
                    ranks.append(_rank(host, job, r, tid, t + rng.randrange(2_000_000_000), end_planned, span, rng))
                death = min((rk["died"] for rk in ranks if rk["died"] is not None), default=None)
                for rk in ranks:
                    for c in rk["calls"]:
                        if death is not None and c["t"] > death and c["pid"] != rk_pid(ranks, death):
                            break  # killed by the launcher when a peer rank died
                        calls.append(c)
                t = (death if death is not None else end_planned) + rng.randrange(60, 180) * 1_000_000_000
    # per host and snapshot: counters from every call, records with in-kernel aggregation
    calls.sort(key=lambda c: (c["host"].name, c["t"]))
    ev_rows: dict[str, list] = defaultdict(list)
    truth_rows: list[dict] = []
    sig_seen: dict = {}
    for c in calls:
        host = c["host"]
        end_t = c["t"] + c["lat"]
        snap = (end_t - host.snap_phase) // SNAP_NS
        counts[(host.name, snap)][c["frames"]] += 1
        timed = host.in_window(c["t"])
        failed = any(fr[3] for fr in c["frames"])
        if not failed:
            if timed and c["lat"] < GOOD_MAX_NS:
                records.append((c, 1, True))
            continue
        key = (host.name, snap, c["sig"])
        n = sig_seen.get(key)
        if n is None or n[0] < 3:
            sig_seen[key] = [(n[0] if n else 0) + 1, len(records)]
            records.append((c, 1, timed))
        else:
            ci, rep, tm = records[n[1]]
            records[n[1]] = (ci, rep + 1, tm)
            n[0] += 1
    for c, rep, timed in records:
        _emit(c, rep, timed, ev_rows, truth_rows)
    # counters: every probe of the host's set in every snapshot it was up
    tally: dict[str, list] = defaultdict(list)
    for (name, snap), per_tree in counts.items():
        for frames, n in per_tree.items():
            for _d, f, _l, err in frames:
                for key, value in (("host", name), ("snap", snap), ("probe", f), ("errno", err), ("n", n)):
                    tally[key].append(value)
    tally_df = pl.DataFrame(tally, schema={"host": pl.String, "snap": pl.Int64, "probe": pl.String, "errno": pl.String,
                                           "n": pl.Int64})
    per_cell = tally_df.group_by("host", "snap", "probe").agg(pl.col("n").sum().alias("invocations"))
    per_errno = (tally_df.drop_nulls("errno").group_by("host", "snap", "probe", "errno").agg(pl.col("n").sum().alias("count"))
                 .sort("errno").group_by("host", "snap", "probe")
                 .agg(pl.struct("errno", "count").alias("errno_counts"), pl.col("count").sum().alias("failures")))
    grid: dict[str, list] = defaultdict(list)
    for host in fleet:
        first, last = (0 - host.snap_phase) // SNAP_NS + 1, (span - host.snap_phase) // SNAP_NS
        for s in range(first, last + 1):
            t_end = host.snap_phase + s * SNAP_NS
            if host.upgrade_at is not None and host.upgrade_at <= t_end < host.upgrade_at + 240_000_000_000:
                continue  # rebooting: no daemon
            for key, value in (("host", host.name), ("snap", s), ("snapshot_time", _wall(host, t_end)),
                               ("kernel_release", host.release_at(t_end)), ("ofed", host.ofed)):
                grid[key].append(value)
    probes = pl.concat([pl.DataFrame(_probes(o), schema=["probe", "layer"], orient="row").with_columns(ofed=pl.lit(o))
                        for o in (True, False)])
    counter_rows = (
        pl.DataFrame(grid).with_columns(pl.col("snapshot_time").dt.cast_time_unit("ns"))
        .join(probes, on="ofed").drop("ofed")
        .join(per_cell, on=["host", "snap", "probe"], how="left").join(per_errno, on=["host", "snap", "probe"], how="left")
        .with_columns(pl.col("invocations", "failures").fill_null(0), interval_s=pl.lit(60.0), vendor=pl.lit("mlx5"),
                      probe_set=pl.lit("rdma"), live=pl.lit(True), lost_records=pl.lit(0))
        .sort("host", "snap", "probe").drop("snap")
        .select([pl.col(f.name) for f in COUNTERS])
    )
    counter_rows = pl.from_arrow(pa.Table.from_batches(counter_rows.to_arrow().cast(COUNTERS).to_batches(), COUNTERS))
    _write(out, ev_rows, truth_rows, counter_rows)
    routine = defaultdict(int)
    causes = defaultdict(int)
    for row in truth_rows:
        if row["root_cause"]:
            causes[row["root_cause"]] += 1
        elif row["expected_error"]:
            routine[row["bifurcation_probe"]] += 1
    summary = {
        "hosts": hosts, "hours": hours, "seed": seed,
        "slow_host": slow.name, "canary_hosts": [h.name for h in canaries], "leak_host": leak.name,
        "clock_ahead_host": clock.name,
        "required_alert_hosts": {slow.name: ["ETIMEDOUT"], **{h.name: ["ENOMEM"] for h in canaries},
                                 leak.name: ["EBUSY"]},
        "alert_hosts": {slow.name: ["ETIMEDOUT"], **{h.name: ["ENOMEM"] for h in canaries}, leak.name: ["EBUSY"]},
        "roles": {h.name: ("slow_firmware" if h.slow else "canary_upgrade" if h.upgrade_at is not None else
                           "qp_leak" if h.leak else "clock_ahead" if h.skew_ns else "ofed" if h.ofed else "upstream")
                  for h in fleet},
        "routine": dict(routine), "causes": dict(causes),
    }
    (out / "fleetgen15.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


def rk_pid(ranks, death):
    return next(rk["pid"] for rk in ranks if rk["died"] == death)


def _rank(host: Host, job: str, r: int, pid: int, t: int, end: int, span: int, rng: random.Random) -> dict:
    """The calls of one rank: setup, buffer rotations, teardown; stops at its first fatal failure."""
    out = {"pid": pid, "died": None, "calls": []}
    frac = lambda x: x / span  # noqa: E731

    def call(op: str, variant: str = "", fail: str | None = None, absorbed: str | None = None,
             cause: str | None = None, routine: bool = False) -> bool:
        nonlocal t
        # the peer client's get_pages fails after ib_get_peer_client found it
        frames = failing_tree(op, host.ofed, variant, fail, absorbed, origin_children=fail is not None
                              and fail.startswith("ib_peer_umem_get"))
        slow, jitter = _slowdown(host, frac(t)), 0.5 + rng.random()
        other, commands, timeout = _costs(frames)
        total = int((other + commands * _own_cost("mlx5_cmd_exec", None, slow)) * jitter) + timeout
        c = {"host": host, "t": t, "lat": int(total), "frames": frames, "slow": slow, "jitter": jitter, "op": op,
             "variant": variant, "pid": pid, "job": job, "rank": r, "cause": cause, "routine": routine,
             "sig": (op, variant, frames)}
        out["calls"].append(c)
        t += c["lat"] + rng.randrange(200_000, 8_000_000)
        if frames[0][3] and not routine:
            out["died"] = c["t"]
            return False
        return True

    for slot in range(4):
        if slot == 3:
            call("query_gid", fail="rdma_get_gid_attr:ENODATA", routine=True)
        else:
            call("query_gid")
    call("alloc_pd")
    call("reg_mr", "host", absorbed=None)
    if host.ofed and not _gpu_reg(host, t, call, rng):
        return out
    call("create_cq")
    call("create_qp")
    call("modify_qp", "RESET->INIT")
    if host.slow and frac(t) >= 0.55 and rng.random() < 0.05 + 0.40 * (frac(t) - 0.55) / 0.45:
        call("modify_qp", "INIT->RTR", fail="mlx5_cmd_exec@8:ETIMEDOUT", cause="fw_slow_then_timeout")
        return out
    call("modify_qp", "INIT->RTR")
    call("modify_qp", "RTR->RTS")
    # training: re-register the buffer every 3-5 minutes
    while True:
        t_next = t + rng.randrange(180, 300) * 1_000_000_000
        if t_next >= min(end, span):
            break
        t = t_next
        if host.ofed:
            if not _gpu_reg(host, t, call, rng):
                return out
        else:
            call("reg_mr", "host")
        call("dereg_mr")
    t = max(t, end)
    if t >= span:
        return out
    if host.leak and frac(t) >= 0.25:
        call("destroy_qp", fail="ib_destroy_qp_user:EBUSY", cause="destroy_qp_usecnt_leak")
        return out
    call("destroy_qp")
    call("dereg_mr")
    if host.ofed:
        call("dereg_mr")
    if rng.random() < 0.30:
        call("dereg_mr", fail="rdma_lookup_get_uobject@3:ENOENT", routine=True)
    call("dealloc_pd")
    return out


def _gpu_reg(host: Host, t: int, call, rng: random.Random) -> bool:
    if host.upgrade_at is not None and t >= host.upgrade_at and rng.random() < 0.35:
        return call("reg_mr", "gpu", fail="ib_peer_umem_get:ENOMEM", absorbed="pin_user_pages_fast:EFAULT",
                    cause="peermem_enomem_after_upgrade")
    return call("reg_mr", "gpu", absorbed="pin_user_pages_fast:EFAULT", routine=True)


def _own_cost(f: str, err: str | None, slow: float) -> int:
    """A frame's own cost (ns) before the call's jitter: firmware commands dominate."""
    if f == "mlx5_cmd_exec":
        return 60_000_000_000 if err == "ETIMEDOUT" else int(600_000 * slow)  # the firmware command timeout
    if f in ("pin_user_pages_fast", "ib_peer_umem_get"):
        return 200_000
    return 8_000


@functools.cache
def _costs(frames) -> tuple[int, int, int]:
    """(own cost of the frames that are not firmware commands, firmware commands, timeouts' cost)."""
    other = sum(_own_cost(f, err, 1.0) for _d, f, _l, err in frames if f != "mlx5_cmd_exec")
    commands = sum(1 for _d, f, _l, err in frames if f == "mlx5_cmd_exec" and err != "ETIMEDOUT")
    timeout = sum(_own_cost(f, err, 1.0) for _d, f, _l, err in frames if err == "ETIMEDOUT")
    return other, commands, timeout


def _slowdown(host: Host, frac: float) -> float:
    return 1 + 59 * (frac - 0.20) / 0.80 if host.slow and frac > 0.20 else 1.0


def _latencies(frames, slow: float, jitter: float) -> list[tuple[int, int]]:
    """(start offset, latency) per frame, pre-order; a frame's latency covers its subtree."""
    own = [int(_own_cost(f, err, slow) * (jitter if err != "ETIMEDOUT" else 1)) for _d, f, _l, err in frames]
    starts, lats = [0] * len(frames), [0] * len(frames)
    cursor, stack = 0, []
    for i, (d, *_rest) in enumerate(frames):
        while stack and frames[stack[-1]][0] >= d:
            j = stack.pop()
            lats[j] = cursor - starts[j]
        starts[i] = cursor
        cursor += own[i]
        stack.append(i)
    while stack:
        j = stack.pop()
        lats[j] = cursor - starts[j]
    return list(zip(starts, lats, strict=True))


def _wall(host: Host, t: int) -> dt.datetime:
    return START + dt.timedelta(microseconds=(t + host.skew_ns) // 1000)


def _emit(c: dict, rep: int, timed: bool, ev_rows: list, truth_rows: list) -> None:
    host, frames = c["host"], c["frames"]
    boot, mono = host.boot_at(c["t"])
    end_t = c["t"] + c["lat"]
    trace_id = f"{host.name}:{boot}:{c['pid']}:{mono}"
    root_err = frames[0][3]
    failed = any(fr[3] for fr in frames)
    if timed:
        start, end = _wall(host, c["t"]), _wall(host, end_t)
    else:
        tick = (end_t // TICK_NS) * TICK_NS
        start = end = _wall(host, tick)
    meta = [{"key": "rank", "value": str(c["rank"])}, {"key": "tenant", "value": "atlas"}]
    n = len(frames)
    lats = _latencies(frames, c["slow"], c["jitter"]) if timed else None
    tick_ns = (host.boot_at(end_t)[1] // TICK_NS) * TICK_NS
    cols = ev_rows
    cols["trace_id"] += [trace_id] * n
    cols["seq"] += range(n)
    cols["ts_ns"] += [mono + off for off, _ in lats] if timed else [tick_ns] * n
    cols["probe"] += [f for _d, f, _l, _e in frames]
    cols["layer"] += [lay for _d, _f, lay, _e in frames]
    cols["depth"] += [d for d, _f, _l, _e in frames]
    cols["errno"] += [e for _d, _f, _l, e in frames]
    cols["ret"] += [-ERRNO[e] if e else 0 for _d, _f, _l, e in frames]
    cols["latency_ns"] += [lat for _, lat in lats] if timed else [None] * n
    for name, value in (("pid", c["pid"]), ("tid", c["pid"]), ("ppid", 1), ("comm", "python3"), ("path", None),
                        ("arg", c["variant"] or None), ("path2", None), ("output", None),
                        ("kind", "failure" if failed else "good"), ("command", c["op"]),
                        ("exit_status", -ERRNO[root_err] if root_err else 0), ("start_time", start), ("end_time", end),
                        ("host", host.name), ("kernel_release", host.release_at(c["t"])), ("lost_events", 0),
                        ("job_id", c["job"]), ("metadata", meta), ("repeat_count", rep if rep > 1 else None)):
        cols[name] += [value] * n
    origin = None
    if root_err:
        # the deepest frame on the root's error chain: the last failing frame with the root's errno
        origin = [fr for fr in frames if fr[3] == root_err][-1]
    elif failed:
        origin = [fr for fr in frames if fr[3]][-1]
    truth_rows.append({
        "trace_id": trace_id, "host": host.name, "kind": "failure" if failed else "good",
        "root_cause": c["cause"] if failed else None,
        "bifurcation_probe": origin[1] if origin else None, "bifurcation_errno": origin[3] if origin else None,
        "origin_layer": origin[2] if origin else None, "expected_error": bool(failed and c["cause"] is None),
        "held_out": False})


def _write(out: Path, ev_rows: dict, truth_rows: list, counters: pl.DataFrame) -> None:
    # pyarrow builds the list-of-struct columns from Python objects far faster than polars does
    events = pl.from_arrow(pa.Table.from_pydict(ev_rows, schema=EVENTS))
    truth = pl.from_arrow(pa.Table.from_pylist(truth_rows, schema=TRUTH))
    for table, df, time_col in (("events", events, "start_time"), ("truth", truth, None),
                                ("counters", counters, "snapshot_time")):
        if table == "truth":
            df = df.join(events.select("trace_id", "start_time").unique("trace_id"), on="trace_id", how="left")
            time_col = "start_time"
        for (host, date), part in df.with_columns(pl.col(time_col).dt.date().alias("__date")).group_by(
                "host", "__date", maintain_order=True):
            part = part.drop("__date")
            if table == "truth":
                part = part.drop("start_time")
            if table == "events":
                part = part.sort("start_time", "trace_id", "seq")
            path = write_partition(part, out, table, str(date), host, "part-0.parquet", durable=False)
            if table == "counters":
                write_counter_buckets(path, part, durable=False)

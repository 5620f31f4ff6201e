"""fleetgen28's fleet: what a real eBPF failure tracer keeps, aggregates, cuts and loses under
storms, on an mlx5 RoCE inference fleet. Written from reference/rdma_control_path.yaml (every
function and errno below), tracer/schema.py (the tables, written through its writers) and
docs/architecture.md (the tracer's kernel side and the meaning of lost_events, repeat_count and
lost_records) only.

The tracer modelled (docs/architecture.md, "The fleet tracer's kernel side"):
- per-CPU counters count EVERY call of every probe and its errno, whatever happens to records;
- a call tree is built in a slot of fixed size and emitted on failure. A frame outside a capture
  window is a probe id, a depth and a return value; inside one it also carries its entry time
  and latency. The slot holds ROOM_UNTIMED frames untimed and ROOM_TIMED timed; a tree with more
  keeps the frames it entered first (their return values included: a frame's return is written
  into its own entry) and counts the others in lost_events. "A record that ran out of room loses
  the frames entered last": a failing pin entered after 30 successful pins is lost, while a
  frame entered early that returned the error (create_cq_user after its pin loop) is kept;
- per snapshot interval, the first K trees of a failure signature (the whole chain, every frame
  entered, kept or not) are record attempts; the rest are counted in the kernel and carried, at
  the snapshot, by the last delivered example of that signature as its repeat_count. When no
  example of the signature was delivered in the interval, those failures are in the counters only;
- a record attempt while the ring is full is lost: counted in the snapshot's lost_records (the
  same on each counters row of the snapshot); record numbers are taken before the output, so the
  trace ids of lost records are gaps;
- a daemon killed mid-interval loses that interval (nothing was written), and the calls until it
  is back are unseen (probes detached); its first snapshot after covers a short interval and its
  record numbers restart from a new random start. The host's boot id is unchanged.

Reasons for the truth:
- `vf_qp_quota_crash_loop` (root cause, host `storm`): CREATE_QP answered LIM_ERR (ENOMEM, the
  reference's cmd_status_to_err) for every QP past the VF's quota; the service's connection
  manager retries the same QP with no back-off until its watchdog aborts it (~3 s, ~6,000
  failures), systemd restarts it a second later. The origin is mlx5_cmd_exec (the deepest frame
  of the failing chain; destroy_qp, the puts and the abort after it are the unwind). Its trees
  of a 16-pin SQ keep the origin when cut (the slot ends at destroy_qp), those of a 24-pin SQ
  lose it; an 8-pin SQ's tree fits. Every record of it, cut or not, is this root cause.
- `srq_destroyed_under_create_qp` (root cause, 4 hosts): the pool's shrinker destroys the SRQ a
  peer reconnect is attaching a new QP to; create_qp's first lookup ([SRQ]) finds no object
  (ENOENT inside rdma_lookup_get_uobject, EINVAL at the handler: uobj_get_obj_read collapses any
  lookup error). The rank asserts and dies; the launcher kills its job; the job is requeued.
  Five frames: never cut.
- `rcache_guard_hole_pin_efault` (routine): UCX's registration cache registers the whole aligned
  region (2 to 200 MiB: 1 to 100 pin calls); when it crosses a PROT_NONE guard page of the
  allocator, pin_user_pages_fast fails EFAULT after k successful calls (ib_umem_get returns it as is, then __ib_umem_release), and
  UCX registers the exact buffer (success) and goes on. Every host, every job. Its tree is 10 + k
  frames: cut at 32 in a window (k > 22) and at 64 outside one (k > 54); from k = 58 on the kept
  64 frames end inside the pin loop, the failing pin lost, and no record of the family is ever
  complete that begins with them (its complete records hold at most 55 successful pins). Such a
  record is still this routine family: the frames it kept are the family's chain, same caller,
  and the process went on; a real tracer with a fixed slot produces exactly this for any
  registration over ~116 MiB, which ML jobs make all the time.
- `cq_128b_padding_refused` (routine): the serving runtime asks 128-byte CQE padding, which this
  firmware lacks (EOPNOTSUPP at create_cq_user, after it pinned the CQ buffer and mapped the
  doorbell); it creates the CQ again without padding and goes on. Every host, every rank start.
The daemon stall, the restarts and the lost records are artefacts: nothing is wrong with those
hosts (the stall host's counters are exact, its records of routine families partly lost).
"""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
from fleet_tables import frame

from tracer.schema import polars_schema, write_partition

T0 = datetime(2026, 2, 17, 8, 0, tzinfo=UTC)
INTERVAL = 60.0  # tracer run -i 60s
WINDOW = 20.0  # capture window opened on every second snapshot tick, 20 s long
ROOM_UNTIMED = 64  # frames a slot holds outside capture windows
ROOM_TIMED = 32  # frames a slot holds inside them (entry time and latency per frame)
K = 4  # records per failure signature per snapshot interval
GOOD_SAMPLE = 0.5  # share of successful trees in a window kept as good traces
RELEASE = "6.8.0-49-generic"
METADATA = [{"key": "fw", "value": "22.41.1000"}, {"key": "nic", "value": "ConnectX-6 Dx"}]
ERRNO = {"ENOMEM": 12, "EFAULT": 14, "EOPNOTSUPP": 95, "ENOENT": 2, "EINVAL": 22}

# family -> (origin probe, errno, origin layer)
ROOT_CAUSES = {
    "vf_qp_quota_crash_loop": ("mlx5_cmd_exec", "ENOMEM", "driver"),
    "srq_destroyed_under_create_qp": ("rdma_lookup_get_uobject", "ENOENT", "core"),
}
ROUTINE = {
    "rcache_guard_hole_pin_efault": ("pin_user_pages_fast", "EFAULT", "core"),
    "cq_128b_padding_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
}

LAYERS = {
    "ib_uverbs_alloc_pd": "uverbs", "ib_uverbs_create_cq": "uverbs", "ib_uverbs_create_qp": "uverbs",
    "ib_uverbs_modify_qp": "uverbs", "ib_uverbs_reg_mr": "uverbs",
}


def _layer(probe: str) -> str:
    if probe in LAYERS:
        return LAYERS[probe]
    if probe.startswith("mlx5") or probe in ("create_user_qp", "_create_user_qp", "destroy_qp", "create_cq_user",
                                              "create_real_mr", "alloc_cacheable_mr", "__mlx5_ib_modify_qp"):
        return "driver"
    return "core"


# ------------------------------------------------------------------------------------------------
# call trees (entry order; depth; errno; return value), from the reference's operations
# ------------------------------------------------------------------------------------------------
def _f(probe, depth, errno=None, ret=None, arg=None):
    return (probe, depth, errno, (-ERRNO[errno] if errno else 0) if ret is None else ret, arg)


def _pins(n: int, depth: int) -> list:
    return [_f("pin_user_pages_fast", depth, ret=512) for _ in range(n)]


def alloc_pd() -> list:
    return [_f("ib_uverbs_alloc_pd", 0), _f("rdma_alloc_begin_uobject", 1), _f("mlx5_ib_alloc_pd", 1),
            _f("mlx5_cmd_exec", 2), _f("rdma_restrack_add", 1), _f("uverbs_response", 1)]


def create_cq(pins: int, padding_refused: bool = False) -> list:
    """ib_uverbs_create_cq -> create_cq -> mlx5_ib_create_cq -> create_cq_user (pins the CQ buffer,
    maps the doorbell; refuses 128-byte padding without the cap after both, then unwinds)."""
    e = "EOPNOTSUPP" if padding_refused else None
    head = [_f("ib_uverbs_create_cq", 0, e), _f("create_cq", 1, e), _f("rdma_alloc_begin_uobject", 2),
            _f("mlx5_ib_create_cq", 2, e), _f("create_cq_user", 3, e), _f("ib_umem_get", 4), *_pins(pins, 5),
            _f("sg_alloc_append_table_from_pages", 5), _f("mlx5_ib_db_map_user", 4)]
    if padding_refused:
        return head + [_f("mlx5_ib_db_unmap_user", 4), _f("ib_umem_release", 4), _f("rdma_alloc_abort_uobject", 2)]
    return head + [_f("mlx5_comp_eqn_get", 3), _f("mlx5_core_create_cq", 3), _f("rdma_restrack_add", 2),
                   _f("uverbs_response", 2)]


def reg_mr(pins: int, fails_after: bool = False) -> list:
    """ib_uverbs_reg_mr -> mlx5_ib_reg_user_mr -> ib_umem_get -> pin_user_pages_fast x pins (512
    pages a call); with `fails_after` one more pin fails EFAULT and the umem is released."""
    e = "EFAULT" if fails_after else None
    head = [_f("ib_uverbs_reg_mr", 0, e), _f("rdma_alloc_begin_uobject", 1), _f("rdma_lookup_get_uobject", 1),
            _f("mlx5_ib_reg_user_mr", 1, e), _f("mlx5r_umr_resource_init", 2), _f("ib_umem_get", 2, e),
            *_pins(pins, 3)]
    if fails_after:
        return head + [_f("pin_user_pages_fast", 3, "EFAULT"), _f("__ib_umem_release", 3),
                       _f("rdma_lookup_put_uobject", 1), _f("rdma_alloc_abort_uobject", 1)]
    return head + [_f("sg_alloc_append_table_from_pages", 3), _f("create_real_mr", 2), _f("alloc_cacheable_mr", 3),
                   _f("mlx5r_umr_update_mr_pas", 3), _f("rdma_restrack_add", 1), _f("rdma_lookup_put_uobject", 1),
                   _f("uverbs_response", 1)]


def create_qp(pins: int, srq: bool = False, fail: str | None = None) -> list:
    """ib_uverbs_create_qp -> create_qp (uverbs_cmd.c) -> lookups ([SRQ], recv CQ, send CQ, PD) ->
    ib_create_qp_user -> mlx5_ib_create_qp -> create_user_qp -> _create_user_qp (SQ/RQ buffer pinned,
    doorbell) -> mlx5_qpc_create_qp -> mlx5_cmd_exec. verbs.c's and mlx5's static create_qp and
    mlx5's tiny check helpers are inlined on this build (one caller each): no frames of their own.
    fail: "srq_enoent" (the first lookup finds no SRQ) or "fw_enomem" (CREATE_QP LIM_ERR)."""
    lookups = 4 if srq else 3
    if fail == "srq_enoent":
        return [_f("ib_uverbs_create_qp", 0, "EINVAL"), _f("create_qp", 1, "EINVAL"),
                _f("rdma_alloc_begin_uobject", 2), _f("rdma_lookup_get_uobject", 2, "ENOENT"),
                _f("rdma_alloc_abort_uobject", 2)]
    e = "ENOMEM" if fail == "fw_enomem" else None
    frames = [_f("ib_uverbs_create_qp", 0, e), _f("create_qp", 1, e), _f("rdma_alloc_begin_uobject", 2),
              *[_f("rdma_lookup_get_uobject", 2) for _ in range(lookups)], _f("ib_create_qp_user", 2, e),
              _f("mlx5_ib_create_qp", 3, e), _f("create_user_qp", 4, e), _f("_create_user_qp", 5),
              _f("ib_umem_get", 6), *_pins(pins, 7), _f("sg_alloc_append_table_from_pages", 7),
              _f("mlx5_ib_db_map_user", 6), _f("mlx5_qpc_create_qp", 5, e), _f("mlx5_cmd_exec", 6, e)]
    if e:
        return frames + [_f("destroy_qp", 5), *[_f("rdma_lookup_put_uobject", 2) for _ in range(lookups)],
                         _f("rdma_alloc_abort_uobject", 2)]
    return frames + [_f("ib_create_qp_security", 3), _f("rdma_restrack_add", 3), _f("ib_qp_usecnt_inc", 2),
                     *[_f("rdma_lookup_put_uobject", 2) for _ in range(lookups)], _f("uverbs_response", 2)]


def modify_qp(transition: str) -> list:
    """ib_uverbs_modify_qp -> modify_qp -> ib_modify_qp_with_udata -> _ib_modify_qp -> (RoCE, no
    qp_sec) mlx5_ib_modify_qp -> __mlx5_ib_modify_qp -> mlx5_core_qp_modify -> mlx5_cmd_exec."""
    mid = []
    if transition == "RESET->INIT":
        mid = [_f("rdma_counter_bind_qp_auto", 4)]
    elif transition == "INIT->RTR":
        mid = [_f("rdma_get_gid_attr", 4), _f("ib_resolve_eth_dmac", 4), _f("rdma_lag_get_ah_roce_slave", 4)]
    path = [_f("mlx5_set_path", 6)] if transition == "INIT->RTR" else []
    tail = [_f("rdma_lag_put_ah_roce_slave", 4)] if transition == "INIT->RTR" else []
    return [_f("ib_uverbs_modify_qp", 0, arg=transition), _f("modify_qp", 1), _f("rdma_lookup_get_uobject", 2),
            _f("ib_modify_qp_with_udata", 2), _f("_ib_modify_qp", 3), *mid, _f("mlx5_ib_modify_qp", 4),
            _f("ib_modify_qp_is_ok", 5), _f("__mlx5_ib_modify_qp", 5), *path, _f("mlx5_core_qp_modify", 6),
            _f("mlx5_cmd_exec", 7), *tail, _f("rdma_lookup_put_uobject", 2)]


OPERATION = {"alloc_pd": alloc_pd, "create_cq": create_cq, "reg_mr": reg_mr, "create_qp": create_qp,
             "modify_qp": modify_qp}

# one example tree of each family: (depth, function, errno, layer)
TREES = {
    "vf_qp_quota_crash_loop": create_qp(16, fail="fw_enomem"),
    "srq_destroyed_under_create_qp": create_qp(1, srq=True, fail="srq_enoent"),
    "rcache_guard_hole_pin_efault": reg_mr(30, fails_after=True),
    "cq_128b_padding_refused": create_cq(30, padding_refused=True),
    "good_alloc_pd": alloc_pd(), "good_create_cq": create_cq(4), "good_reg_mr": reg_mr(8),
    "good_create_qp_srq": create_qp(4, srq=True), "good_modify_rtr": modify_qp("INIT->RTR"),
    "good_modify_init": modify_qp("RESET->INIT"), "good_modify_rts": modify_qp("RTR->RTS"),
}
TREES = {k: [(d, p, e, _layer(p)) for p, d, e, _, _ in v] for k, v in TREES.items()}


class _Chains:
    """Chains built once per key, with their per-probe counts (calls, failures, errno)."""

    def __init__(self):
        self.frames: dict[tuple, list] = {}
        self.counts: dict[tuple, list] = {}

    def get(self, key: tuple) -> list:
        if key not in self.frames:
            op, args, kw = key
            frames = OPERATION[op](*args, **dict(kw))
            self.frames[key] = frames
            per: dict[str, list] = {}
            for probe, _, errno, _, _ in frames:
                c = per.setdefault(probe, [0, 0, defaultdict(int)])
                c[0] += 1
                if errno:
                    c[1] += 1
                    c[2][errno] += 1
            self.counts[key] = [(p, n, f, dict(e)) for p, (n, f, e) in per.items()]
        return self.frames[key]


def _key(op: str, *args, **kw) -> tuple:
    """A chain's key: (operation, positional arguments, keyword arguments as sorted pairs)."""
    return (op, args, tuple(sorted(kw.items())))


# ------------------------------------------------------------------------------------------------
# the fleet
# ------------------------------------------------------------------------------------------------
def generate(out_dir, hosts: int = 24, hours: int = 3, seed: int = 28, faults: bool = True) -> dict:
    if hosts < 16:
        raise ValueError(f"hosts: expected 16 or more (the roles' hosts are 5, 11, 17 % hosts), found {hosts}")
    out = Path(out_dir)
    rng = random.Random(seed)
    names = [f"inf-{i // 8:02d}-{i % 8:02d}" for i in range(hosts)]
    span = hours * 3600.0
    storm, stall = names[5], names[11 % hosts]
    restart_hosts = [names[17 % hosts]]
    rare = [names[i % hosts] for i in (2, 9, 14, 20)] if faults else []
    storm_from, storm_to = 50 * 60.0, 140 * 60.0
    # daemon restarts: (host, died at, back at); the storm host's OOM kills happen in both fleets
    gaps = {storm: [(80 * 60 + 7.5, 83 * 60 + 12.3), (110 * 60 + 41.0, 112 * 60 + 30.7)],
            restart_hosts[0]: [(125 * 60 + 22.0, 129 * 60 + 18.4)]}
    chains = _Chains()
    summary = {"roles": {"all": names, "storm": [storm] if faults else [], "rare": rare, "stall": [stall],
                         "restarts": sorted(gaps)},
               "times": {"t0": T0.isoformat(), "storm_from": (T0 + timedelta(seconds=storm_from)).isoformat(),
                         "storm_to": (T0 + timedelta(seconds=storm_to)).isoformat(),
                         "stall_from": (T0 + timedelta(minutes=60)).isoformat(),
                         "stall_to": (T0 + timedelta(minutes=75)).isoformat()},
               "room": {"untimed": ROOM_UNTIMED, "timed": ROOM_TIMED}, "k": K,
               "counts": defaultdict(int), "records": defaultdict(int), "stands": defaultdict(int),
               "truncated": defaultdict(int), "origin_lost": defaultdict(int), "attempts_lost": 0,
               "unrecorded": defaultdict(int),
               "alert_hosts": {**({storm: ["ENOMEM"]} if faults else {}), **{h: ["ENOENT", "EINVAL"] for h in rare}}}
    rare_times = {h: sorted(rng.uniform(20 * 60, span - 20 * 60) for _ in range(1 + (i % 2)))
                  for i, h in enumerate(rare)}
    for hi, host in enumerate(names):
        hrng = random.Random(f"{seed}:{host}")
        calls = _host_calls(host, hrng, span, faults and host == storm, storm_from, storm_to, rare_times.get(host, []))
        _emit_host(out, host, hi, hrng, calls, chains, span, gaps.get(host, []),
                   _loss(host, storm if faults else None, stall, storm_from, storm_to), summary)
    for k in ("counts", "records", "stands", "truncated", "origin_lost", "unrecorded"):
        summary[k] = dict(summary[k])
    (out / "fleetgen28.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


def _loss(host, storm, stall, storm_from, storm_to):
    """Probability that a record attempt at time t finds the ring full."""
    if host == storm:
        return lambda t: 0.9 if storm_from <= t < storm_to else 0.0
    if host == stall:
        return lambda t: 0.8 if 3600 <= t < 4500 else 0.0
    return lambda t: 0.0


def _nudge(t: float) -> float:
    """Keep a call clear of a snapshot boundary: it is counted in the interval it returns in, and
    a tree's tick is its root's return; a call entering 100 ms before a boundary enters after it."""
    return t + 0.15 if (t % INTERVAL) > INTERVAL - 0.1 else t


def _host_calls(host, rng, span, storm_here, storm_from, storm_to, rare_times):
    """Every call of the host: (t, key, pid, comm, job, n, rate, family). n > 1: a burst of n
    identical failures at `rate` a second from t (one interval's share of a crash loop's burst)."""
    calls = []
    pid = [rng.randrange(20_000, 90_000)]

    def new_pid():
        pid[0] += rng.randrange(3, 40)
        return pid[0]

    def op(t, key, p, comm, job, family=None):
        calls.append((_nudge(t), key, p, comm, job, 1, None, family))

    def qp_bringup(t, p, comm, job, qps, srq):
        for pins in qps:
            op(t, _key("create_qp", pins, srq), p, comm, job)
            t += rng.uniform(0.002, 0.01)
        for _ in qps:
            for tr in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
                op(t, _key("modify_qp", tr), p, comm, job)
                t += rng.uniform(0.001, 0.004)
        return t

    # the KV-transfer service (comm kv-xfer): a deploy early in the window and a config push
    # restart 90 minutes later; a control QP and five data QPs of 8/16/24-pin send queues
    def kv_start(t, data_pins=None):
        p = new_pid()
        job = f"kvx-{host}"
        op(t, _key("alloc_pd"), p, "kv-xfer", job)
        t += 0.003
        op(t, _key("create_cq", 4), p, "kv-xfer", job)
        t += 0.004
        for _ in range(2):
            op(t, _key("reg_mr", 8), p, "kv-xfer", job)
            t += 0.006
        qps = [1] + [rng.choice((8, 16, 24)) for _ in range(5)]
        if data_pins is None:
            return qp_bringup(t, p, "kv-xfer", job, qps, False), p
        for pins in qps:  # the quota's room: these pass, the next data QP does not
            op(t, _key("create_qp", pins, False), p, "kv-xfer", job)
            t += rng.uniform(0.002, 0.006)
        return t, p

    for start in (rng.uniform(30, 600), rng.uniform(30, 600) + 90 * 60):
        if storm_here and storm_from - 60 <= start < storm_to + 60:
            continue
        kv_start(start)
    if storm_here:
        t = storm_from
        while t < storm_to:
            pins = rng.choice((8, 16, 24))
            t, p = kv_start(t, data_pins=pins)
            dur = rng.uniform(2.5, 3.5)
            rate = rng.uniform(1800, 2400)
            key = _key("create_qp", pins, False, fail="fw_enomem")
            a, end = t, t + dur
            while a < end:  # one burst a snapshot interval (the kernel aggregates per interval)
                boundary = (math.floor(a / INTERVAL) + 1) * INTERVAL
                b = min(end, boundary - 0.1)
                if b > a:
                    calls.append((a, key, p, "kv-xfer", f"kvx-{host}", max(1, int((b - a) * rate)), rate,
                                  "vf_qp_quota_crash_loop"))
                a = boundary + 0.05 if b < end else end
            t = end + 1.0 + rng.uniform(0, 0.2)  # systemd RestartSec=1
        kv_start(storm_to + 2.0)

    # inference jobs (comm python3): 8 ranks, 25-45 minutes, back to back; half on an SRQ
    t = rng.uniform(0, 120)
    rare_left = list(rare_times)
    jobno = 0
    while t < span:
        jobno += 1
        job = f"{host[-5:]}-{jobno:03d}-{rng.randrange(10**5):05d}"
        end = t + rng.uniform(25, 45) * 60
        fatal_at = None
        if rare_left and rare_left[0] < end:
            fatal_at = max(rare_left.pop(0), t + 300)
            end = fatal_at + 0.5
        srq = fatal_at is not None or rng.random() < 0.5
        cq_pins = rng.randint(2, 64)  # 4K to 1M CQEs of 128 bytes: 1 to 64 pin calls of 512 pages
        victim = rng.randrange(8)
        for rank in range(8):
            p = new_pid()
            r = t + rng.uniform(0, 3)
            op(r, _key("alloc_pd"), p, "python3", job)
            r += 0.002
            for _ in range(2):
                op(r, _key("create_cq", cq_pins, padding_refused=True), p, "python3", job,
                   "cq_128b_padding_refused")
                r += rng.uniform(0.001, 0.003)
                op(r, _key("create_cq", cq_pins), p, "python3", job)
                r += rng.uniform(0.002, 0.006)

            def registration(r, p=p, job=job):
                k = rng.randint(1, 100)  # an aligned region of 2 to 200 MiB: 512 pages a pin call
                if rng.random() < 0.3:
                    op(r, _key("reg_mr", k, fails_after=True), p, "python3", job, "rcache_guard_hole_pin_efault")
                    r += rng.uniform(0.002, 0.008)
                    op(r, _key("reg_mr", max(1, k - rng.randint(0, k // 2))), p, "python3", job)
                else:
                    op(r, _key("reg_mr", k), p, "python3", job)
                return r + rng.uniform(0.003, 0.02)

            for _ in range(4):
                r = registration(r)
            r = qp_bringup(r, p, "python3", job, [rng.randint(1, 6) for _ in range(4)], srq)
            stop = end if fatal_at is None else fatal_at  # the victim dies there, the launcher kills the rest
            r += rng.uniform(60, 240)
            while r < min(stop, span):
                r = registration(r) + rng.uniform(90, 240)
            if fatal_at is not None and rank == victim:
                op(fatal_at, _key("create_qp", 1, True, fail="srq_enoent"), p, "python3", job,
                   "srq_destroyed_under_create_qp")
        t = end + rng.uniform(20, 90)
    return sorted((c for c in calls if 0 <= c[0] < span - 0.5), key=lambda c: c[0])


def _family(key: tuple) -> str | None:
    op, _, kw = key
    kw = dict(kw)
    if op == "create_qp" and kw.get("fail") == "fw_enomem":
        return "vf_qp_quota_crash_loop"
    if op == "create_qp" and kw.get("fail") == "srq_enoent":
        return "srq_destroyed_under_create_qp"
    if op == "reg_mr" and kw.get("fails_after"):
        return "rcache_guard_hole_pin_efault"
    if op == "create_cq" and kw.get("padding_refused"):
        return "cq_128b_padding_refused"
    return None


def _in_window(t: float) -> bool:
    i = math.floor(t / INTERVAL)
    return i % 2 == 0 and (t - i * INTERVAL) < WINDOW


_SELF_NS = {"pin_user_pages_fast": (60_000, 140_000), "mlx5_cmd_exec": (150_000, 600_000),
            "sg_alloc_append_table_from_pages": (20_000, 60_000)}


def _timing(frames, start_ns, rng):
    """Entry times and latencies of a timed tree, from per-frame self times."""
    entries, lat = [], [0] * len(frames)
    stack = []
    cursor = start_ns
    for i, (probe, depth, *_rest) in enumerate(frames):
        while stack and frames[stack[-1]][1] >= depth:
            j = stack.pop()
            cursor += rng.randrange(100, 400)
            lat[j] = cursor - entries[j]
        entries.append(cursor)
        lo, hi = _SELF_NS.get(probe, (800, 6_000))
        cursor += rng.randrange(lo, hi)
        stack.append(i)
    while stack:
        j = stack.pop()
        cursor += rng.randrange(100, 400)
        lat[j] = cursor - entries[j]
    return entries, lat


def _emit_host(out, host, hi, rng, calls, chains, span, gaps, loss, summary):
    boot_wall = T0 - timedelta(days=3 + hi % 5, hours=hi % 7)  # on the 4 ms grid: whole hours
    boot_id = f"{rng.getrandbits(32):08x}"
    dead = [(math.floor(g0 / INTERVAL) * INTERVAL, g1) for g0, g1 in gaps]
    restarts = sorted(g1 for _, g1 in gaps)
    recno = [rng.getrandbits(40)]
    next_restart = [0]

    def observed(t):
        return not any(a <= t < b for a, b in dead)

    counts: dict[int, dict] = defaultdict(lambda: defaultdict(int))  # interval -> key -> n
    lost_records: dict[int, int] = defaultdict(int)
    sig: dict[tuple, dict] = {}
    records: list[dict] = []

    def take_recno(t):
        while next_restart[0] < len(restarts) and t >= restarts[next_restart[0]]:
            recno[0] = rng.getrandbits(40)  # the restarted daemon's record numbers: a new random start
            next_restart[0] += 1
        recno[0] += 1
        return recno[0]

    def attempt(t, key, pid, comm, job, family, kind):
        no = take_recno(t)
        if rng.random() < loss(t):
            lost_records[math.floor(t / INTERVAL)] += 1
            return None
        rec = {"t": t, "key": key, "pid": pid, "comm": comm, "job": job, "family": family, "kind": kind,
               "id": f"{host}:{boot_id}:{pid}:{no}", "repeat": None, "timed": _in_window(t)}
        records.append(rec)
        return rec

    for t, key, pid, comm, job, n, rate, _label in calls:
        if not observed(t):
            continue
        chains.get(key)
        i = math.floor(t / INTERVAL)
        counts[i][key] += n
        fam = _family(key)
        if fam is None:
            if _in_window(t) and rng.random() < GOOD_SAMPLE:
                attempt(t, key, pid, comm, job, None, "good")
            continue
        st = sig.setdefault((i, key), {"attempts": 0, "total": 0, "last": None, "family": fam})
        st["total"] += n
        m = min(K - st["attempts"], n)
        for j in range(m):
            rec = attempt(t + (j / rate if rate else 0.0), key, pid, comm, job, fam, "failure")
            if rec is not None:
                st["last"] = rec
        st["attempts"] += max(m, 0)
    for st in sig.values():
        rest = st["total"] - st["attempts"]
        if rest > 0:
            if st["last"] is not None:
                st["last"]["repeat"] = 1 + rest
            else:
                summary["unrecorded"][st["family"]] += rest
    # ---------------------------------------------------------------- events + truth
    ev = defaultdict(list)
    truth = defaultdict(list)
    schema = polars_schema("events")
    for rec in records:
        frames = chains.get(rec["key"])
        room = ROOM_TIMED if rec["timed"] else ROOM_UNTIMED
        kept = frames[:room]
        lost = len(frames) - len(kept)
        root_ret = frames[0][3]
        start_ns = int((T0 + timedelta(seconds=rec["t"]) - boot_wall).total_seconds() * 1e9)
        if rec["timed"]:
            entries, lat = _timing(frames, start_ns, rng)
            entries, lat = entries[:len(kept)], lat[:len(kept)]
            wall0 = boot_wall + timedelta(microseconds=entries[0] / 1000)
            start_time, end_time = wall0, boot_wall + timedelta(microseconds=(entries[0] + lat[0]) / 1000)
        else:
            dur = 30_000 * len(frames) + 2_000_000 * (rec["key"][0] in ("reg_mr", "create_qp"))
            tick = (start_ns + dur) // 4_000_000 * 4_000_000
            entries, lat = [tick] * len(kept), [None] * len(kept)
            start_time = end_time = boot_wall + timedelta(microseconds=tick // 1000)
        tid = rec["pid"]  # the verbs calls are made on the process's main thread
        fam = rec["family"]
        for s, (probe, depth, errno, ret, arg) in enumerate(kept):
            ev["trace_id"].append(rec["id"])
            ev["seq"].append(s)
            ev["ts_ns"].append(entries[s])
            ev["pid"].append(rec["pid"])
            ev["tid"].append(tid)
            ev["ppid"].append(1)
            ev["comm"].append(rec["comm"])
            ev["probe"].append(probe)
            ev["layer"].append(_layer(probe))
            ev["depth"].append(depth)
            ev["ret"].append(ret)
            ev["errno"].append(errno)
            ev["latency_ns"].append(lat[s])
            ev["arg"].append(arg)
            ev["kind"].append(rec["kind"])
            ev["command"].append(rec["key"][0])
            ev["exit_status"].append(root_ret)
            ev["start_time"].append(start_time)
            ev["end_time"].append(end_time)
            ev["host"].append(host)
            ev["kernel_release"].append(RELEASE)
            ev["lost_events"].append(lost)
            ev["job_id"].append(rec["job"])
            ev["metadata"].append(METADATA)
            ev["repeat_count"].append(rec["repeat"])
        truth["trace_id"].append(rec["id"])
        truth["host"].append(host)
        truth["kind"].append(rec["kind"])
        truth["root_cause"].append(fam)
        if fam:
            probe, errno, layer = {**ROOT_CAUSES, **ROUTINE}[fam]
            truth["bifurcation_probe"].append(probe)
            truth["bifurcation_errno"].append(errno)
            truth["origin_layer"].append(layer)
            truth["expected_error"].append(fam in ROUTINE)
            truth["held_out"].append(False)
            summary["records"][fam] += 1
            summary["stands"][fam] += rec["repeat"] or 1
            if lost:
                summary["truncated"][fam] += 1
                if not any(p == probe and e == errno for p, _, e, _, _ in kept):
                    summary["origin_lost"][fam] += 1
        else:
            for c in ("bifurcation_probe", "bifurcation_errno", "origin_layer"):
                truth[c].append(None)
            truth["expected_error"].append(False)
            truth["held_out"].append(rng.random() < 0.1)
    date = T0.strftime("%Y-%m-%d")
    if ev["trace_id"]:
        events = frame({c: ev[c] for c in ev}, {c: schema[c] for c in ev})
        write_partition(events, out, "events", date, host, "part-0000.parquet", durable=False)
        tschema = polars_schema("truth")
        write_partition(pl.DataFrame(dict(truth), schema={c: tschema[c] for c in truth}), out, "truth", date, host,
                        "part-0000.parquet", durable=False)
    # ---------------------------------------------------------------- counters
    probes: list[str] = []
    for key in chains.frames:
        for p, *_ in chains.counts[key]:
            if p not in probes:
                probes.append(p)
    rows = defaultdict(list)
    for i in range(math.ceil(span / INTERVAL)):
        a, b = i * INTERVAL, (i + 1) * INTERVAL
        if any(d0 <= a and b <= d1 for d0, d1 in dead):
            continue  # the daemon died in it, or was down all of it: no snapshot
        begin = max([a] + [d1 for d0, d1 in dead if a < d1 < b])
        tally = {p: [0, 0, defaultdict(int)] for p in probes}
        for key, n in counts.get(i, {}).items():
            for p, c, f, errs in chains.counts[key]:
                cell = tally[p]
                cell[0] += c * n
                cell[1] += f * n
                for e, k in errs.items():
                    cell[2][e] += k * n
        fam_keys = [k for k in counts.get(i, {}) if _family(k)]
        for key in fam_keys:
            probe, errno, _ = {**ROOT_CAUSES, **ROUTINE}[_family(key)]
            for p, _, _, errs in chains.counts[key]:
                if p == probe:
                    summary["counts"][_family(key)] += errs.get(errno, 0) * counts[i][key]
        for p in probes:
            calls_n, fails, errs = tally[p]
            rows["host"].append(host)
            rows["snapshot_time"].append(T0 + timedelta(seconds=b))
            rows["interval_s"].append(b - begin)
            rows["kernel_release"].append(RELEASE)
            rows["vendor"].append("mlx5")
            rows["probe_set"].append("rdma")
            rows["probe"].append(p)
            rows["layer"].append(_layer(p))
            rows["live"].append(True)
            rows["invocations"].append(calls_n)
            rows["failures"].append(fails)
            rows["errno_counts"].append([{"errno": e, "count": k} for e, k in sorted(errs.items())] or None)
            rows["lost_records"].append(lost_records.get(i, 0))
    cschema = polars_schema("counters")
    counters = frame(dict(rows), {c: cschema[c] for c in rows})
    write_partition(counters, out, "counters", date, host, "part-0000.parquet", durable=False)
    summary["attempts_lost"] += sum(lost_records.values())

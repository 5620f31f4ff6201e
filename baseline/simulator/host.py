"""One simulated host: its platform, its jobs, every control-path call, and what the tracer saw.

A host is generated from its own `numpy.random.Generator` seeded with (seed, host index), so hosts
are independent: any subset can be generated in any order or in parallel with identical results.
Calls are numpy arrays (time, outcome, job); nothing loops per call or per event in Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from baseline.simulator import catalog as cat
from baseline.simulator.plan import NS

INTERVAL_NS = 5 * NS  # snapshot interval of the fleet tracer
GOOD_LATENCY_BOUND_NS = 50_000_000  # good traces are captured only under 50 ms

IMAGES = [("trainer:24.10", 0.55), ("trainer:24.11", 0.35), ("inference:3.2", 0.10)]
NODMABUF_IMAGE = "trainer:24.11-nodmabuf"  # built without the dmabuf flag (root cause a)
TEAMS = ["llm-pretrain", "ranking", "vision", "speech", "infra-eval"]


@dataclass(frozen=True)
class FleetPlan:
    """Fleet-wide parameters shared by every host (cheap to pickle to workers)."""

    n_hosts: int
    seed: int
    start_ns: int
    end_ns: int
    good_rate: float
    held_out_fraction: float
    scenarios: frozenset[str]
    forced: dict[str, int]  # root cause -> host index that surely shows it


@dataclass
class HostResult:
    host: str
    events: pl.DataFrame
    counters: pl.DataFrame
    truth: pl.DataFrame
    successes: int = 0  # successful top-level calls (for --events-target estimates)
    success_frames: int = 0
    stats: dict[str, int] = field(default_factory=dict)


def host_name(index: int) -> str:
    return f"gpu{index:05d}"


def _pick(rng: np.random.Generator, choices: list[tuple[str, float]]) -> str:
    """A weighted choice (one uniform draw; cheaper than Generator.choice with p=)."""
    total = sum(w for _, w in choices)
    u = rng.random() * total
    for name, w in choices:
        u -= w
        if u < 0:
            return name
    return choices[-1][0]


@dataclass
class HostProfile:
    index: int
    name: str
    platform: cat.Platform
    firmware: str | None
    gid_empty_fraction: float
    efault_rollout_ns: int | None  # (b) from when reg_mr hits EFAULT
    crash_loop_since_ns: int | None  # (e)
    new_driver_eperm: bool  # (c)
    mkey_exhaustion: bool  # (d)
    nodmabuf_job_rate: float  # (a)
    boot_ns: int  # wall-clock time of boot (ts_ns = wall - boot)


def profile(plan: FleetPlan, index: int, rng: np.random.Generator) -> HostProfile:
    forced = {cause for cause, h in plan.forced.items() if h == index}
    sc = plan.scenarios
    span = plan.end_ns - plan.start_ns
    vendor = _pick(rng, list(cat.VENDOR_WEIGHTS.items()))
    if forced & {"dmabuf_peer_fallback", "efault_peer_cascade", "mkey_cache_enomem"}:
        vendor = "mlx5"
    if "dmabuf_eperm_new_driver" in forced:
        vendor = "bnxt_re"
    kernels = cat.KERNELS[vendor]
    k = int(rng.choice(len(kernels), p=np.array([w for *_, w in kernels]) / sum(w for *_, w in kernels)))
    release, ofed, _ = kernels[k]
    if forced & {"dmabuf_peer_fallback", "efault_peer_cascade"} and not ofed:
        release, ofed = kernels[0][0], True
    if "dmabuf_eperm_new_driver" in forced:
        release, ofed = cat.NEW_DRIVER_KERNEL, False
    firmware = _pick(rng, cat.MLX5_FIRMWARE) if vendor == "mlx5" else None
    if "mkey_cache_enomem" in forced:
        firmware = cat.BAD_FIRMWARE
    gid_empty = float(rng.choice([0.0, 0.25, 0.5]))
    u_b, u_b_t, u_e, u_e_t = rng.random(4)
    efault = None
    if "efault_peer_cascade" in sc and vendor == "mlx5" and ofed and (
        u_b < 0.35 or "efault_peer_cascade" in forced
    ):
        efault = plan.start_ns + int((0.25 + 0.2 * u_b_t) * span)  # a rollout in the first half
    crash = None
    if "crash_loop_fw_bad_state" in sc and (u_e < 0.001 or "crash_loop_fw_bad_state" in forced):
        crash = plan.start_ns + int(0.4 * u_e_t * span)
    return HostProfile(
        index=index,
        name=host_name(index),
        platform=cat.Platform(vendor, release, ofed),
        firmware=firmware,
        gid_empty_fraction=gid_empty if "gid_query_empty_slot" in sc else 0.0,
        efault_rollout_ns=efault,
        crash_loop_since_ns=crash,
        new_driver_eperm="dmabuf_eperm_new_driver" in sc and vendor == "bnxt_re" and release == cat.NEW_DRIVER_KERNEL,
        mkey_exhaustion="mkey_cache_enomem" in sc and firmware == cat.BAD_FIRMWARE,
        nodmabuf_job_rate=0.03 if ("dmabuf_peer_fallback" in sc and vendor == "mlx5" and ofed) else 0.0,
        boot_ns=plan.start_ns - int(rng.uniform(2, 40) * 86400 * NS),
    )


# --------------------------------------------------------------------------------------------
# jobs -> calls
# --------------------------------------------------------------------------------------------
@dataclass
class Job:
    job_id: str
    image: str
    team: str
    restart: int
    pid: int
    comm: str


class CallBuffer:
    """Accumulates (time, outcome) arrays of one job attempt, phase by phase.

    `fatal_time` is the earliest call whose outcome kills the job; phases run in time order, so
    once a phase holds a fatal call the attempt can stop generating (the job is gone).
    """

    def __init__(self) -> None:
        self.t: list[np.ndarray] = []
        self.o: list[np.ndarray] = []
        self.fatal_time: int | None = None

    def add(self, t: np.ndarray, outcome: np.ndarray | int) -> None:
        t = np.asarray(t, dtype=np.int64)
        if isinstance(outcome, (int, np.integer)):
            o = np.full(t.shape, outcome, np.int16)
            fatal = FATAL[outcome] and t.size > 0
            first = int(t.min()) if fatal else None
        else:
            o = np.asarray(outcome, np.int16)
            mask = FATAL[o]
            first = int(t[mask].min()) if mask.any() else None
        self.t.append(t)
        self.o.append(o)
        if first is not None:
            self.fatal_time = first if self.fatal_time is None else min(first, self.fatal_time)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Unsorted arrays, cut after the first fatal call."""
        if not self.t:
            return np.empty(0, np.int64), np.empty(0, np.int16)
        t = np.concatenate(self.t)
        o = np.concatenate(self.o)
        if self.fatal_time is not None:
            keep = t <= self.fatal_time
            t, o = t[keep], o[keep]
        return t, o


def _outcome(rng: np.random.Generator, n: int, p: float | np.ndarray, bad: int, ok: int) -> np.ndarray:
    return np.where(rng.random(n) < p, bad, ok).astype(np.int16)


def _attempt(
    prof: HostProfile, plan: FleetPlan, rng: np.random.Generator, t0: int, duration: int, nodmabuf: bool, memlock: bool,
    neigh_timeouts: bool = False,
) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """Calls of one job attempt. Returns (t, outcome, failed_fatally, end time)."""
    buf = CallBuffer()
    end = _init_and_run(prof, plan, rng, t0, duration, nodmabuf, memlock, neigh_timeouts, buf)
    t, o = buf.arrays()
    if buf.fatal_time is not None:
        return t, o, True, buf.fatal_time
    return t, o, False, end + 2 * NS


def _init_and_run(prof, plan, rng, t0, duration, nodmabuf, memlock, neigh_timeouts, buf: CallBuffer) -> int:
    OUT, OK = cat.OUTCOME, cat.OK
    sc = plan.scenarios
    init = int(rng.uniform(20, 90) * NS)
    crash = prof.crash_loop_since_ns is not None and t0 >= prof.crash_loop_since_ns
    efault = prof.efault_rollout_ns is not None and t0 >= prof.efault_rollout_ns

    def times(n: int, a: float, b: float) -> np.ndarray:
        return t0 + (rng.uniform(a, b, n) * init).astype(np.int64)

    # GID table scan of every port (empty/disabled slots answer ENODATA: routine)
    n_gid = 8 * 4
    buf.add(times(n_gid, 0.0, 0.05), _outcome(rng, n_gid, prof.gid_empty_fraction, OUT["gid_query_empty_slot"], OK["query_gid"]))
    buf.add(np.array([t0 + int(0.05 * init)]), OUT["crash_loop_fw_bad_state"] if crash else OK["alloc_pd"])
    if buf.fatal_time is not None:
        return t0
    # GPU buffers via dmabuf (or, in an image built without the dmabuf flag, via reg_mr -> peer path)
    n_dmabuf = 8 * int(rng.integers(2, 9))
    t = times(n_dmabuf, 0.06, 0.3)
    if nodmabuf:
        buf.add(t, OUT["dmabuf_peer_fallback"])
    elif prof.new_driver_eperm:
        buf.add(t, _outcome(rng, n_dmabuf, 0.2, OUT["dmabuf_eperm_new_driver"], OK["reg_dmabuf_mr"]))
    else:
        buf.add(t, OK["reg_dmabuf_mr"])
    # host buffers
    n_mr = int(rng.integers(16, 129))
    t = times(n_mr, 0.06, 0.3)
    if efault:
        buf.add(t, _outcome(rng, n_mr, 0.3, OUT["efault_peer_cascade"], OK["reg_mr"]))
    elif memlock:
        buf.add(t, _outcome(rng, n_mr, 0.5, OUT["memlock_limit"], OK["reg_mr"]))
    else:
        buf.add(t, OK["reg_mr"])
    if buf.fatal_time is not None:
        return t0
    n_qp = int(np.clip(rng.lognormal(np.log(600), 0.7), 32, 6000))
    n_cq = -(-n_qp // 16)
    # a doorbell record page holds 64 records: every 64th CQ/QP pins a new page
    buf.add(times(n_cq, 0.3, 0.35), _outcome(rng, n_cq, 1 / 64, OUT["ok_doorbell:create_cq"], OK["create_cq"]))
    tq = times(n_qp, 0.35, 1.0)
    p_eagain = 0.002 if "rdmacg_eagain_retry" in sc else 0.0
    first = _outcome(rng, n_qp, p_eagain, OUT["rdmacg_eagain_retry"], OK["create_qp"])
    first = np.where((first == OK["create_qp"]) & (rng.random(n_qp) < 1 / 64), OUT["ok_doorbell:create_qp"], first)
    buf.add(tq, first)
    retried = tq[first == OUT["rdmacg_eagain_retry"]]
    buf.add(retried + 2_000_000, OK["create_qp"])  # the library retries and succeeds
    step = rng.integers(200_000, 3_000_000, (3, n_qp)).cumsum(axis=0)
    for k, transition in enumerate(cat.QP_TRANSITIONS):
        if transition == "INIT->RTR" and neigh_timeouts:
            buf.add(tq + step[k], _outcome(rng, n_qp, 0.01, OUT["neigh_resolve_timeout"], OK[f"modify_qp {transition}"]))
        else:
            buf.add(tq + step[k], OK[f"modify_qp {transition}"])
    # steady state: bursts of re-registration (reg_mr + dereg) every few minutes
    steady_start, end = t0 + init, t0 + duration
    n_burst = max(0, int((end - steady_start) / (300 * NS)))
    if n_burst:
        tb = np.sort(rng.uniform(steady_start, end - 10 * NS, n_burst)).astype(np.int64)
        per = rng.integers(4, 17, n_burst)
        tr = np.repeat(tb, per) + rng.integers(0, 2 * NS, per.sum())
        if prof.mkey_exhaustion:
            # mkey cache exhaustion: grows with the job's age, not with memory pressure
            age = (tr - t0) / max(duration, 1)
            p = np.clip(0.5 * (age - 0.2), 0.0, 0.4)
            buf.add(tr, _outcome(rng, tr.size, p, OUT["mkey_cache_enomem"], OK["reg_mr"]))
        elif efault:
            buf.add(tr, _outcome(rng, tr.size, 0.05, OUT["efault_peer_cascade"], OK["reg_mr"]))
        else:
            buf.add(tr, OK["reg_mr"])
        buf.add(tr + 50 * NS, OK["destroy"])
    if buf.fatal_time is not None:
        return t0
    # teardown: one DESTROY lookup per object; sometimes a racing modify on a stale QP handle
    n_obj = n_qp + n_cq + n_mr + n_dmabuf + 1
    buf.add(end + rng.integers(0, 2 * NS, n_obj), OK["destroy"])
    if "stale_qp_handle" in sc and rng.random() < 0.1:
        n_stale = int(rng.integers(1, 5))
        buf.add(end + rng.integers(0, NS, n_stale), OUT["stale_qp_handle"])
    return end


FATAL = np.array([o.fatal for o in cat.OUTCOMES])
IS_FAILURE = np.array([o.root_cause is not None for o in cat.OUTCOMES])


def generate_calls(prof: HostProfile, plan: FleetPlan, rng: np.random.Generator):
    """All calls of a host over the window: (t, outcome, job index), jobs, (f) truth times."""
    ts, os_, js = [], [], []
    jobs: list[Job] = []
    unprobed: list[tuple[int, int]] = []  # (time, job index) of cleanup EBUSY (cause f)
    t = plan.start_ns + int(rng.uniform(0, 1800) * NS)
    forced_a = plan.forced.get("dmabuf_peer_fallback") == prof.index
    forced_f = plan.forced.get("cleanup_ebusy_unprobed") == prof.index
    n_job = 0
    while t < plan.end_ns:
        n_job += 1
        job_id = f"{prof.index * 1000 + n_job:08d}"
        image = _pick(rng, IMAGES)
        nodmabuf = rng.random() < prof.nodmabuf_job_rate or (forced_a and n_job == 1)
        if nodmabuf:
            image = NODMABUF_IMAGE
        memlock = "memlock_limit" in plan.scenarios and rng.random() < 0.01
        neigh = "neigh_resolve_timeout" in plan.scenarios and rng.random() < 0.02
        team = TEAMS[int(rng.integers(len(TEAMS)))]
        duration = int(np.clip(rng.lognormal(np.log(3 * 3600), 0.6), 1200, 12 * 3600) * NS)
        restart = 0
        crash_host = prof.crash_loop_since_ns is not None
        while True:
            pid = int(rng.integers(3000, 4_000_000))
            jobs.append(Job(job_id, image, team, restart, pid, "pt_main_thread" if image.startswith("trainer") else "python3"))
            if crash_host and t < prof.crash_loop_since_ns < t + duration:
                duration = max(prof.crash_loop_since_ns - t, 600 * NS)  # the node goes bad under the job
            jt, jo, failed, t_end = _attempt(prof, plan, rng, t, duration, nodmabuf, memlock, neigh)
            ts.append(jt)
            os_.append(jo)
            js.append(np.full(jt.size, len(jobs) - 1, np.int32))
            t = t_end
            if not failed:
                if "cleanup_ebusy_unprobed" in plan.scenarios and (rng.random() < 0.05 or (forced_f and n_job == 1)):
                    unprobed.append((t_end - NS, len(jobs) - 1))
                break
            restart += 1
            t += int(rng.uniform(60, 300) * NS)  # scheduler requeues the job
            if t >= plan.end_ns or (restart > 3 and not crash_host):
                break
        t += int(rng.uniform(120, 1800) * NS)
    if ts:
        t_all, o_all, j_all = np.concatenate(ts), np.concatenate(os_), np.concatenate(js)
    else:
        t_all, o_all, j_all = np.empty(0, np.int64), np.empty(0, np.int16), np.empty(0, np.int32)
    order = np.argsort(t_all, kind="stable")
    t_all, o_all, j_all = t_all[order], o_all[order], j_all[order]
    keep = (t_all >= plan.start_ns) & (t_all < plan.end_ns)
    unprobed = [(tt, j) for tt, j in unprobed if plan.start_ns <= tt < plan.end_ns]
    return t_all[keep], o_all[keep], j_all[keep], jobs, unprobed

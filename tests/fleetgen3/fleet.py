"""Hosts, processes and the calls they make: what happens on the fleet, before any tracing.

A host runs an RDMA health agent (a short-lived process every ~2 minutes doing the whole
object lifecycle on a loopback QP) and training jobs (arrivals follow the time of day; each job
scans the GID table, opens NCCL's optional config files, creates CQs/QPs, moves them to RTS,
registers GPU and host buffers, churns registrations while it runs and tears down at the end).
Routine errors come from how libraries really behave; the faults from broken hosts, drivers
and memory pressure. Each call carries its outcome and a ground-truth label.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SITES = {  # site -> (scheduler, share of hosts)
    "osl1": ("slurm", 0.45), "yul3": ("k8s", 0.35), "nrt2": ("slurm", 0.20),
}
KERNELS = {
    ("mlx5", "ofed"): ["5.15.0-1071-nvidia"],
    ("mlx5", "upstream"): ["6.8.0-51-generic", "6.11.0-1008-gcp"],
    ("bnxt_re", "upstream"): ["6.8.0-51-generic", "6.12.9+bpo-amd64"],
    ("irdma", "upstream"): ["6.1.0-28-amd64", "6.8.0-51-generic"],
}
UPDATED_KERNEL = "5.15.0-1074-nvidia"  # the OFED driver update that breaks GPU registration


@dataclass
class Call:
    t: float  # seconds since fleet start, true time
    pid: int
    tid: int
    ppid: int
    comm: str
    job: str | None
    op: str
    variant: str = ""
    # failure: (origin probe, errno, nth occurrence, {depth: errno} rewrite) else None
    fail: tuple | None = None
    label: str | None = None  # truth root cause / routine family
    routine: bool = False
    meta: dict | None = None
    path: str | None = None


@dataclass
class Host:
    name: str
    site: str
    vendor: str
    stack: str
    kernel: str
    fw: str
    gids: int  # populated GID slots; queries beyond them hit empty slots
    nccl_conf: bool
    cg_limited: bool
    appear: float  # seconds after the fleet start when the host's tracer first reports
    skew: float  # host clock minus true time, seconds
    boot_mono: float  # monotonic clock at fleet start, seconds (uptime)
    roles: dict = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    reboot: float | None = None  # time of the reboot into UPDATED_KERNEL
    spool_full: tuple[float, float] | None = None  # events lost, counters kept

    def kernel_at(self, t: float) -> str:
        return UPDATED_KERNEL if self.reboot is not None and t >= self.reboot else self.kernel


def make_hosts(n: int, span: float, rng: np.random.Generator) -> list[Host]:
    hosts = []
    sites = list(SITES)
    shares = np.array([SITES[s][1] for s in sites])
    for i in range(n):
        site = sites[int(rng.choice(len(sites), p=shares))]
        vendor = str(rng.choice(["mlx5", "bnxt_re", "irdma"], p=[0.62, 0.24, 0.14]))
        stack = "ofed" if vendor == "mlx5" and rng.random() < 0.55 else "upstream"
        kernel = str(rng.choice(KERNELS[(vendor, stack)]))
        fw = {"mlx5": str(rng.choice(["28.41.1000", "28.39.2048", "16.35.4030"], p=[0.6, 0.3, 0.1])),
              "bnxt_re": "227.1.111.0", "irdma": "1.3.77"}[vendor]
        row, slot = divmod(i, 16)
        name = f"{site}-{chr(ord('c') + row % 20)}{row // 20:02d}u{slot * 2 + 3:02d}"
        appear = 0.0 if rng.random() > 0.06 else float(rng.uniform(0.15, 0.7) * span)
        hosts.append(Host(
            name=name, site=site, vendor=vendor, stack=stack, kernel=kernel, fw=fw,
            gids=int(rng.integers(2, 7)), nccl_conf=bool(rng.random() < 0.2),
            cg_limited=SITES[site][0] == "k8s" and rng.random() < 0.8,
            appear=appear, skew=float(rng.normal(0, 0.15)), boot_mono=float(rng.uniform(3600, 80 * 86400)),
        ))
    return hosts


def assign_faults(hosts: list[Host], span: float, rng: np.random.Generator) -> None:
    """Decide which hosts are broken how (and when)."""
    ofed = [h for h in hosts if h.vendor == "mlx5" and h.stack == "ofed" and h.appear == 0]
    mlx5 = [h for h in hosts if h.vendor == "mlx5" and h.appear == 0]
    irdma = [h for h in hosts if h.vendor == "irdma" and h.appear == 0]
    pressured = [h for h in hosts if h.stack == "upstream" and h.vendor in ("mlx5", "bnxt_re")]
    # F1: a batch of adapters flashed with a bad firmware image, two racks of one site
    bad_fw_racks = {h.name.rsplit("u", 1)[0] for h in mlx5[: max(2, len(mlx5) // 25)]}
    for h in mlx5:
        if h.name.rsplit("u", 1)[0] in bad_fw_racks and rng.random() < 0.7:
            h.fw = "28.41.0666"
            h.roles["bad_fw"] = True
    # F2: the OFED driver update rolls out over a few hours; GPU memory registration breaks after it
    for h in rng.permutation(ofed)[: max(2, len(ofed) // 5)]:
        h.reboot = float(rng.uniform(0.25, 0.75) * span)
        h.roles["peer_efault"] = True
    # F3: one or two irdma hosts whose job crash-loops after a user-space library upgrade
    for h in rng.permutation(irdma)[: max(1, len(irdma) // 15)]:
        h.roles["crash_loop"] = float(rng.uniform(0.1, 0.5) * span)
    # F4: rare: an IP removed under a running job empties the GID slot its QPs use
    for h in rng.permutation(mlx5)[: max(3, len(mlx5) // 40)]:
        h.roles["gid_vanished"] = sorted(float(x) for x in rng.uniform(0.05, 0.7, int(rng.integers(1, 4))) * span)
    # F5: memory pressure episodes (pinned memory over RLIMIT_MEMLOCK) on upstream hosts
    for h in rng.permutation(pressured)[: max(2, len(pressured) // 12)]:
        start = float(rng.uniform(0.05, 0.8) * span)
        h.roles["mem_pressure"] = (start, start + float(rng.uniform(1500, 3000)))
    # F6: a device stuck in a bad state while the host's spool disk was full: counters only
    victims = [h for h in mlx5 if not h.roles]
    if victims:
        h = victims[int(rng.integers(len(victims)))]
        start = float(rng.uniform(0.2, 0.6) * span)
        h.roles["bad_state"] = (start, start + 3000.0)
        h.spool_full = (start - 300.0, start + 3300.0)


def diurnal(t_wall_hour: float) -> float:
    """Relative job arrival rate by UTC hour: busy 07-19, quiet at night."""
    return 0.35 + 0.65 * max(0.0, math.sin(math.pi * ((t_wall_hour - 5.0) % 24.0) / 16.0))


class Pids:
    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.next = int(rng.integers(2000, 60000))

    def new(self) -> int:
        self.next += int(self.rng.integers(1, 60))
        if self.next > 4_000_000:
            self.next = 300
        return self.next


def plan_host(h: Host, span: float, start_hour: float, rng: np.random.Generator) -> None:
    """Fill h.calls: health agent runs, jobs, and the faults' effects on them."""
    pids = Pids(rng)
    calls = h.calls
    pids_after_reboot = None
    # --- health agent
    t = h.appear + float(rng.uniform(0, 120))
    n_run = 0
    while t < span:
        if h.reboot is not None and h.reboot <= t < h.reboot + 200:
            t = h.reboot + 200 + float(rng.uniform(0, 30))
            pids_after_reboot = pids_after_reboot or Pids(rng)
        p = (pids_after_reboot if h.reboot is not None and t >= h.reboot else pids)
        pid = p.new()
        health_run(h, t, pid, n_run, rng)
        n_run += 1
        t += float(rng.uniform(95, 145))
    # --- jobs
    t = h.appear + float(rng.exponential(1800))
    jobno = int(rng.integers(100000, 999999))
    while t < span:
        hour = start_hour + t / 3600.0
        if rng.random() > diurnal(hour):
            t += float(rng.exponential(900))
            continue
        jobno += int(rng.integers(1, 500))
        p = (pids_after_reboot or pids) if h.reboot is not None and t >= h.reboot else pids
        t = run_job(h, t, span, p, jobno, rng)
        t += float(rng.exponential(1500))
    # --- F3: a job that crash-loops (restarted by its supervisor every 15-45 s)
    if "crash_loop" in h.roles:
        t = h.roles["crash_loop"]
        end = min(span, t + float(rng.uniform(3600, 7200)))
        while t < end:
            crash_loop_run(h, t, pids.new(), rng)
            t += float(rng.uniform(15, 45))
    calls.sort(key=lambda c: c.t)


def _gap(rng: np.random.Generator, lo: float = 0.0004, hi: float = 0.02) -> float:
    return float(rng.uniform(lo, hi))


def health_run(h: Host, t: float, pid: int, n: int, rng: np.random.Generator) -> None:
    comm, job = "ibhealthd", None
    calls = h.calls

    def add(op: str, variant: str = "", **kw) -> None:
        nonlocal t
        calls.append(Call(t, pid, pid, 1, comm, job, op, variant, **kw))
        t += _gap(rng)

    opening(h, add, t, rng)
    if n % 4 == 0:
        gid_scan(h, add, 8)
    bad = h.roles.get("bad_state")
    if bad and bad[0] <= t < bad[1]:
        add("alloc_pd", fail=("mlx5_cmd_exec", "EIO", 0, None), label="device_bad_state")
        return
    add("alloc_pd")
    add("create_cq")
    add("create_qp")
    for tr in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
        add("modify_qp", tr)
    add("reg_mr")
    add("dereg_mr")
    add("destroy_qp")
    add("dealloc_pd")


def opening(h: Host, add, t: float, rng: np.random.Generator) -> None:
    """ibv_open_device + capability probing: the ex query first, the legacy one as fallback."""
    if h.vendor == "irdma":
        # irdma's query_device refuses any udata (the version read): libirdma falls back
        add("query_device_ex", fail=("irdma_query_device", "EINVAL", 0, None),
            label="irdma_query_device_ex_udata", routine=True)
        add("query_device")
    else:
        add("query_device_ex")
    add("query_port")


def gid_scan(h: Host, add, slots: int) -> None:
    """Look for the RoCEv2 GID: every slot up to `slots`; empty ones return ENODATA."""
    for i in range(slots):
        if i < h.gids:
            add("query_gid")
        else:
            add("query_gid", fail=("rdma_get_gid_attr", "ENODATA", 0, None), label="gid_empty_slot", routine=True)


def run_job(h: Host, t: float, span: float, pids: Pids, jobno: int, rng: np.random.Generator) -> float:
    """One training job (and its restarts when it crashes); returns when it ended."""
    sched = SITES[h.site][0]
    user = f"u{int(rng.integers(1000, 1300))}" if rng.random() < 0.8 else "root"
    home = "/root" if user == "root" else f"/home/{user}"
    job = str(jobno) if sched == "slurm" else f"trn-{jobno:x}-{int(rng.integers(0, 8))}"
    meta = {"user": user, "image": str(rng.choice(["pytorch:24.10", "pytorch:25.01", "jax:0.4.35"])),
            "scheduler": sched}
    duration = float(rng.uniform(1200, 4 * 3600))
    end = min(span, t + duration)
    restarts = 0
    while t < end and restarts < 12:
        crashed_at = job_attempt(h, t, end, pids.new(), job, meta, home, rng)
        if crashed_at is None:
            return end
        restarts += 1
        t = crashed_at + float(rng.uniform(40, 300))  # the scheduler requeues it
    return t


def job_attempt(h: Host, t0: float, end: float, pid: int, job: str, meta: dict, home: str,
                rng: np.random.Generator) -> float | None:
    """One process of a job; returns the time it crashed, or None when it ran to the end."""
    comm = str(rng.choice(["python3", "pt_main_thread", "python3.11"]))
    t = t0
    calls = h.calls
    threads = [pid + k for k in range(int(rng.integers(1, 5)))]

    def add(op: str, variant: str = "", tid: int | None = None, **kw) -> Call:
        nonlocal t
        c = Call(t, pid, tid if tid is not None else int(rng.choice(threads)), 1, comm, job, op, variant,
                 meta=meta, **kw)
        calls.append(c)
        t += _gap(rng)
        return c

    opening(h, add, t, rng)
    if not h.nccl_conf:  # NCCL reads its optional config files; most hosts have none
        add("openat", fail=("openat", "ENOENT", 0, None), label="nccl_conf_absent", routine=True,
            path="/etc/nccl.conf")
    add("openat", fail=("openat", "ENOENT", 0, None), label="nccl_conf_absent", routine=True,
        path=f"{home}/.nccl.conf")
    gid_scan(h, add, int(rng.integers(h.gids + 2, 17)))
    bad = h.roles.get("bad_state")
    if bad and bad[0] <= t < bad[1]:
        add("alloc_pd", fail=("mlx5_cmd_exec", "EIO", 0, None), label="device_bad_state")
        return t
    add("alloc_pd")
    nqp = int(rng.choice([2, 4, 8, 16]))
    for i in range(max(1, nqp // 4)):
        if i == 0 and h.fw.startswith("16.") and h.stack == "ofed":
            # ConnectX-5: CQE compression is not supported; rdma-core asks, then asks without it
            add("create_cq", fail=("mlx5_ib_create_cq", "EOPNOTSUPP", 0, None), label="cqe_compression_unsupported",
                routine=True)
        if h.cg_limited and rng.random() < 0.08:
            add("create_cq", fail=("ib_rdmacg_try_charge", "EAGAIN", 0, None), label="rdmacg_eagain", routine=True)
            t += float(rng.uniform(0.002, 0.03))
        add("create_cq")
    for _ in range(nqp):
        tid = int(rng.choice(threads))
        if h.cg_limited and rng.random() < 0.15:
            add("create_qp", tid=tid, fail=("ib_rdmacg_try_charge", "EAGAIN", 0, None), label="rdmacg_eagain",
                routine=True)
            t += float(rng.uniform(0.002, 0.03))
        if h.vendor == "irdma":
            add("reg_mr", "qpbuf", tid=tid)
        add("create_qp", tid=tid)
    for _ in range(nqp):
        add("modify_qp", "RESET->INIT")
        if h.roles.get("bad_fw") and rng.random() < 0.3:
            errno = "ETIMEDOUT" if rng.random() < 0.75 else "EIO"
            add("modify_qp", "INIT->RTR", fail=("mlx5_cmd_exec", errno, 0, None), label="bad_firmware_modify_qp")
            return t
        vanish = [x for x in h.roles.get("gid_vanished", []) if x <= t]
        if vanish:
            h.roles["gid_vanished"] = [x for x in h.roles["gid_vanished"] if x not in vanish[:1]]
            add("modify_qp", "INIT->RTR", fail=("rdma_get_gid_attr", "ENODATA", 0, None), label="gid_vanished_under_qp")
            return t
        add("modify_qp", "INIT->RTR")
        add("modify_qp", "RTR->RTS")
    # GPU buffers
    t_nomem = h.roles.get("mem_pressure")
    if not register_gpu(h, add, t, int(rng.integers(2, 6)), rng):
        return t
    # host staging buffers, then churn while training
    while t < end:
        under_pressure = t_nomem is not None and t_nomem[0] <= t < t_nomem[1]
        if under_pressure and rng.random() < 0.6:
            add("reg_mr", fail=("ib_umem_get", "ENOMEM", 0, None), label="memlock_pressure_enomem")
            return t
        add("reg_mr")
        if rng.random() < 0.7:
            add("dereg_mr")
        t += float(rng.exponential(400 if under_pressure else 900))
    t = end
    for _ in range(int(rng.integers(2, 5))):
        add("dereg_mr")
    for _ in range(nqp):
        add("destroy_qp")
    add("dealloc_pd")
    return None


def register_gpu(h: Host, add, t: float, n: int, rng: np.random.Generator) -> bool:
    if h.vendor == "mlx5" and h.stack == "ofed":
        # NCCL tries DMA-BUF first; this OFED build has no ODP support for it, so it falls back
        add("reg_dmabuf_mr", fail=("mlx5_ib_reg_user_mr_dmabuf", "EOPNOTSUPP", 0, None),
            label="dmabuf_unsupported_fallback", routine=True)
        broken = h.roles.get("peer_efault") and h.reboot is not None and t >= h.reboot
        for _ in range(n):
            if broken:
                add("reg_mr", "gpu", fail=("ib_peer_umem_get", "EFAULT", 0, None), label="peer_mem_efault_after_update")
                return False
            add("reg_mr", "gpu")
        return True
    for _ in range(n):
        add("reg_dmabuf_mr")
    return True


def crash_loop_run(h: Host, t: float, pid: int, rng: np.random.Generator) -> None:
    comm = "trainer"
    calls = h.calls

    def add(op: str, variant: str = "", **kw) -> None:
        nonlocal t
        calls.append(Call(t, pid, pid, int(pid - rng.integers(1, 50)), comm, "svc-embed-indexer", op, variant, **kw))
        t += _gap(rng)

    opening(h, add, t, rng)
    add("alloc_pd")
    add("create_cq")
    add("reg_mr", "qpbuf")
    # the new libirdma no longer registers the QP buffer in the layout the driver expects
    add("create_qp", fail=("irdma_create_qp", "ENODATA", 0, None), label="irdma_qp_buffer_unregistered")

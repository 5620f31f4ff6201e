"""Fleet generator 52 (written blind: README, docs, `--help`, tracer/schema.py, bpf/probes and the
RDMA reference only). Theme: the weekly probe-coverage report's edge cases.

It writes a *spool* as `tracer run -i 1m` leaves it,
``<spool>/<host>/snap-<YYYYmmddTHHMMSS.fffZ>-<seq>/{events,counters}.parquet`` (tests go through
`baseline ingest`), plus the application-labelled failures twice: as an ``app_failures`` table
(tracer.schema.APP_FAILURES, `baseline coverage --nccl-logs app_failures.parquet`) and as NCCL
job logs in NCCL's own line format (``host:pid:tid [dev] NCCL WARN Call to ibv_X failed ...``).

Fleet: h01-h06 mlx5 hosts running bpf/probes/rdma.yaml, 2026-11-29 23:40 -> 2026-11-30 01:00 UTC
(the end of ISO week 2026-W48 and the start of 2026-W49), 60 s snapshots. Every live probe
is called a little in every snapshot except ib_umem_activate_invalidation_notifier, which is never
called (never fires under any reading). The snapshot closing at exactly 00:00:00 (its interval in
W48, its stamp in W49) carries no calls, so no count depends on which week it is given to.

Edge cases (APP list below; `seen` = a live counterpart probe counted a failure on the same host in
the snapshot interval holding the application's timestamp -- schema.COVERAGE_APP's definition):
  * job j100 spans h01 and h02; failures on both.
  * h01 ibv_create_qp EINVAL from a user-space check (libmlx5 refuses the caps before any verb
    reaches the kernel): probed verb, no kernel counterpart -> not seen. A kernel reg_mr failure
    on h01 10 s later (no application logged it) is not its counterpart.
  * h03 ibv_modify_qp ETIMEDOUT logged 15 s after the kernel failure (clock offset), same interval.
  * h04 runs a reduced probe set: its create_qp probes are not attached (live=false, no counts);
    its ibv_create_qp ENOMEM is not seen, though h06's kernel create_qp failed in the same minute.
  * h05's tracer is down from 00:20 (no snapshots after): its ibv_reg_mr EFAULT at 00:40 is not seen.
  * h07 never ran a tracer: its ibv_alloc_pd EAGAIN is not seen.
  * cleanup (ibv_dealloc_pd EBUSY) and read-only (ibv_query_gid) failures: not probed by rdma.yaml.
  * week boundary: h01 ibv_reg_mr EFAULT at 23:58:40 (W48, seen in W48) and 00:01:20 (W49, seen).
  * kernel-only failures (no application logged them): h06 create_cq EINVAL, h02 absorbed GPU pin
    EFAULT at __ib_umem_get, h01 reg_mr EFAULT, h06 create_qp ENOMEM.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from tracer import schema

SEED = 52
START = dt.datetime(2026, 11, 29, 23, 40, tzinfo=dt.UTC)
END = dt.datetime(2026, 11, 30, 1, 0, tzinfo=dt.UTC)
WEEK_START = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
WEEK, PREV_WEEK = "2026-W49", "2026-W48"
INTERVAL = dt.timedelta(seconds=60)
RELEASE = "6.8.0-1015-nvidia"
HOSTS = ["h01", "h02", "h03", "h04", "h05", "h06"]
TRACER_DOWN = {"h05": dt.datetime(2026, 11, 30, 0, 20, tzinfo=dt.UTC)}  # last snapshot closes then
REDUCED = {"h04": frozenset({"ib_uverbs_create_qp", "mlx5_ib_create_qp"})}  # not attached there
NEVER_CALLED = "ib_umem_activate_invalidation_notifier"

# bpf/probes/rdma.yaml: symbol -> (layer, operation)
PROBES = {
    "ib_uverbs_reg_mr": ("uverbs", "reg_mr"),
    "ib_uverbs_create_qp": ("uverbs", "create_qp"),
    "ib_uverbs_modify_qp": ("uverbs", "modify_qp"),
    "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR": ("uverbs", "reg_dmabuf_mr"),
    "ib_uverbs_create_cq": ("uverbs", "create_cq"),
    "mlx5_ib_reg_user_mr": ("driver", "reg_mr"),
    "mlx5_ib_reg_user_mr_dmabuf": ("driver", "reg_dmabuf_mr"),
    "mlx5_ib_create_qp": ("driver", "create_qp"),
    "mlx5_ib_modify_qp": ("driver", "modify_qp"),
    "mlx5_ib_alloc_pd": ("driver", "alloc_pd"),
    "__ib_umem_get": ("core", "umem_get"),
    "ib_peer_umem_get": ("peer-mem", "peer_umem_get"),
    "ib_umem_activate_invalidation_notifier": ("peer-mem", "peer_notifier"),
}

# kernel failure chains (outermost first), per the reference's operation trees
CHAINS = {
    "reg_mr_efault": ("reg_mr", ["ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "__ib_umem_get", "ib_peer_umem_get"], "EFAULT"),
    "create_qp_enomem": ("create_qp", ["ib_uverbs_create_qp", "mlx5_ib_create_qp"], "ENOMEM"),
    "modify_qp_etimedout": ("modify_qp", ["ib_uverbs_modify_qp", "mlx5_ib_modify_qp"], "ETIMEDOUT"),
    "alloc_pd_eagain": ("alloc_pd", ["mlx5_ib_alloc_pd"], "EAGAIN"),
    "create_cq_einval": ("create_cq", ["ib_uverbs_create_cq"], "EINVAL"),
    # GPU pin refused, peer memory takes over: only __ib_umem_get fails, the call succeeds
    "gpu_pin_absorbed": ("reg_mr", ["__ib_umem_get"], "EFAULT"),
}


def t(h: int, m: int, s: int, day: int = 30) -> dt.datetime:
    return dt.datetime(2026, 11, day, h, m, s, tzinfo=dt.UTC)


@dataclass(frozen=True)
class KernelFailure:
    host: str
    time: dt.datetime
    chain: str


@dataclass(frozen=True)
class AppFailure:
    key: str
    host: str
    time: dt.datetime
    job: str
    verb: str
    errno: str
    category: str  # probed | cleanup | read-only (rdma.yaml, anchors.md's exclusions)
    seen: bool  # truth: a live counterpart probe counted it on that host in that interval
    pid: int = 4242
    dev: int = 0


KERNEL = [
    KernelFailure("h01", t(23, 58, 35, day=29), "reg_mr_efault"),  # W48, logged (B0)
    KernelFailure("h01", t(0, 1, 15), "reg_mr_efault"),  # logged (B1)
    KernelFailure("h02", t(0, 5, 25), "create_qp_enomem"),  # logged (A)
    KernelFailure("h01", t(0, 10, 20), "reg_mr_efault"),  # logged (B2)
    KernelFailure("h01", t(0, 12, 40), "reg_mr_efault"),  # kernel only, beside h01's user-space EINVAL
    KernelFailure("h03", t(0, 15, 30), "modify_qp_etimedout"),  # logged 15 s later (D)
    KernelFailure("h06", t(0, 20, 40), "create_qp_enomem"),  # kernel only, same minute as h04's app failure
    KernelFailure("h06", t(0, 35, 25), "alloc_pd_eagain"),  # logged (K)
    KernelFailure("h06", t(0, 45, 30), "create_cq_einval"),  # kernel only
    KernelFailure("h02", t(0, 50, 10), "gpu_pin_absorbed"),  # kernel only, routine
]

APP = [
    AppFailure("B0", "h01", t(23, 58, 40, day=29), "j100", "ibv_reg_mr", "EFAULT", "probed", True, dev=1),
    AppFailure("B1", "h01", t(0, 1, 20), "j100", "ibv_reg_mr", "EFAULT", "probed", True, dev=1),
    AppFailure("A", "h02", t(0, 5, 30), "j100", "ibv_create_qp", "ENOMEM", "probed", True, pid=5151, dev=3),
    AppFailure("B2", "h01", t(0, 10, 25), "j100", "ibv_reg_mr", "EFAULT", "probed", True, dev=2),
    AppFailure("U", "h01", t(0, 12, 30), "j101", "ibv_create_qp", "EINVAL", "probed", False, pid=4343),
    AppFailure("D", "h03", t(0, 15, 45), "j102", "ibv_modify_qp", "ETIMEDOUT", "probed", True, pid=6161),
    AppFailure("R", "h04", t(0, 20, 30), "j103", "ibv_create_qp", "ENOMEM", "probed", False, pid=7171),
    AppFailure("C", "h02", t(0, 25, 30), "j100", "ibv_dealloc_pd", "EBUSY", "cleanup", False, pid=5151),
    AppFailure("Q", "h03", t(0, 26, 30), "j102", "ibv_query_gid", "EINVAL", "read-only", False, pid=6161),
    AppFailure("N", "h07", t(0, 30, 30), "j104", "ibv_alloc_pd", "EAGAIN", "probed", False, pid=8181),
    AppFailure("K", "h06", t(0, 35, 30), "j105", "ibv_alloc_pd", "EAGAIN", "probed", True, pid=9191),
    AppFailure("F", "h05", t(0, 40, 20), "j106", "ibv_reg_mr", "EFAULT", "probed", False, pid=3131),
]

STRERROR = {"EFAULT": "Bad address", "ENOMEM": "Cannot allocate memory", "EINVAL": "Invalid argument",
            "ETIMEDOUT": "Connection timed out", "EBUSY": "Device or resource busy",
            "EAGAIN": "Resource temporarily unavailable"}
ERRNO_NUM = {"EFAULT": 14, "ENOMEM": 12, "EINVAL": 22, "ETIMEDOUT": 110, "EBUSY": 16, "EAGAIN": 11}


def week_of(when: dt.datetime) -> str:
    y, w, _ = when.isocalendar()
    return f"{y}-W{w:02d}"


def snapshot_times(host: str) -> list[dt.datetime]:
    last = TRACER_DOWN.get(host, END)
    out, when = [], START + INTERVAL
    while when <= last:
        out.append(when)
        when += INTERVAL
    return out


def _interval_of(when: dt.datetime) -> dt.datetime:
    """The snapshot (its closing time) whose interval (close - 60 s, close] holds `when`."""
    close = when.replace(second=0, microsecond=0)
    return close if close == when else close + INTERVAL


def live(host: str, probe: str) -> bool:
    return probe not in REDUCED.get(host, frozenset())


def build_counts(rng: random.Random) -> dict:
    """(host, snapshot close, probe) -> [invocations, failures, {errno: count}]."""
    counts: dict = {}
    for host in HOSTS:
        for close in snapshot_times(host):
            for probe in PROBES:
                calls = 0 if (probe == NEVER_CALLED or not live(host, probe) or close == WEEK_START) \
                    else rng.randint(1, 4)
                counts[(host, close, probe)] = [calls, 0, defaultdict(int)]
    for k in KERNEL:
        close = _interval_of(k.time)
        assert close != WEEK_START
        _, chain, errno = CHAINS[k.chain]
        for probe in chain:
            cell = counts[(k.host, close, probe)]
            assert live(k.host, probe)
            cell[0] += 1
            cell[1] += 1
            cell[2][errno] += 1
    return counts


def truth(counts: dict) -> dict:
    """Expected per-probe week totals (invocations, failures, errno mix, hosts live) per week."""
    out: dict = defaultdict(lambda: defaultdict(lambda: {"invocations": 0, "failures": 0,
                                                          "errnos": defaultdict(int), "hosts_live": set()}))
    for (host, close, probe), (calls, fails, errnos) in counts.items():
        cell = out[week_of(close)][probe]
        cell["invocations"] += calls
        cell["failures"] += fails
        for e, c in errnos.items():
            cell["errnos"][e] += c
        if live(host, probe):
            cell["hosts_live"].add(host)
    return out


def _counters_table(host: str, close: dt.datetime, counts: dict) -> pa.Table:
    rows = []
    for probe, (layer, _) in PROBES.items():
        calls, fails, errnos = counts[(host, close, probe)]
        rows.append({
            "host": host, "snapshot_time": close, "interval_s": 60.0, "kernel_release": RELEASE,
            "vendor": "mlx5", "probe_set": "rdma" if host not in REDUCED else "rdma-reduced",
            "probe": probe, "layer": layer, "live": live(host, probe), "invocations": calls,
            "failures": fails,
            "errno_counts": [{"errno": e, "count": c} for e, c in sorted(errnos.items())] or None,
            "lost_records": 0,
        })
    return pa.Table.from_pylist(rows, schema=schema.COUNTERS)


def _events_table(host: str, failures: list[KernelFailure], boot: dt.datetime) -> pa.Table:
    rows = []
    for n, k in enumerate(failures):
        op, chain, errno = CHAINS[k.chain]
        root_fails = k.chain != "gpu_pin_absorbed"
        tid = 20000 + n
        mono = int((k.time - boot).total_seconds() * 1e9)
        frames = chain if root_fails else ["ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "__ib_umem_get", "ib_peer_umem_get"]
        for seq, probe in enumerate(frames):
            failed = probe in chain
            rows.append({
                "trace_id": f"{host}:1:{tid}:{n}", "seq": seq, "ts_ns": mono + seq * 1000, "pid": 4242,
                "tid": tid, "ppid": 1, "comm": "python3", "probe": probe, "layer": PROBES[probe][0],
                "depth": seq, "ret": -ERRNO_NUM[errno] if failed else 0, "errno": errno if failed else None,
                "latency_ns": None, "path": None, "arg": None, "path2": None, "output": None,
                "kind": "failure", "command": op, "exit_status": -ERRNO_NUM[errno] if root_fails else 0,
                "start_time": k.time, "end_time": k.time + dt.timedelta(microseconds=50), "host": host,
                "kernel_release": RELEASE, "lost_events": 0, "job_id": None, "metadata": None,
                "repeat_count": None,
            })
    return pa.Table.from_pylist(rows, schema=schema.EVENTS)


def write_spool(spool: Path, counts: dict) -> int:
    boot = START - dt.timedelta(days=3)
    n = 0
    for host in HOSTS:
        for seq, close in enumerate(snapshot_times(host)):
            d = spool / host / f"snap-{close:%Y%m%dT%H%M%S}.000Z-{seq}"
            d.mkdir(parents=True)
            fails = [k for k in KERNEL if k.host == host and _interval_of(k.time) == close]
            schema.write_table(_events_table(host, fails, boot), d / "events.parquet", "events", durable=False)
            schema.write_table(_counters_table(host, close, counts), d / "counters.parquet", "counters", durable=False)
            n += 1
    return n


def write_app_failures(path: Path) -> Path:
    rows = [{"time": a.time, "host": a.host, "pid": a.pid, "tid": a.pid + 7, "device": str(a.dev),
             "job_id": a.job, "verb": a.verb, "errno": a.errno,
             "message": f"Call to {a.verb} failed with error {STRERROR[a.errno]}",
             "source": f"{a.job}.log:{i + 1}"} for i, a in enumerate(APP)]
    schema.write_table(pa.Table.from_pylist(rows, schema=schema.APP_FAILURES), path, "app_failures", durable=False)
    return path


def write_nccl_logs(directory: Path) -> list[Path]:
    """One log per job in NCCL's line format (host:pid:tid [cudaDev] NCCL LEVEL msg), the WARN
    lines in two NCCL generations' wording (with and without `errno N`), each line preceded by the
    launcher's ISO timestamp; plus lines no verb failed in (a user-space timeout, a
    misconfiguration caught before any verb), which are no application-labelled verb failure."""
    directory.mkdir(parents=True, exist_ok=True)
    by_job: dict[str, list[str]] = defaultdict(list)
    for i, a in enumerate(APP):
        stamp = a.time.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        prefix = f"{a.host}:{a.pid}:{a.pid + 7} [{a.dev}]"
        tail = f" errno {ERRNO_NUM[a.errno]}" if i % 2 else ""
        by_job[a.job].append(f"{stamp} {prefix} NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0")
        by_job[a.job].append(f"{stamp} {prefix} NCCL WARN Call to {a.verb} failed with error {STRERROR[a.errno]}{tail}")
    by_job["j107"] += [
        "2026-11-30T00:33:00.000Z h02:7777:7790 [0] NCCL WARN NET/IB : No device found.",
        "2026-11-30T00:33:30.000Z h03:7878:7891 [1] NCCL INFO Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600015 milliseconds before timing out.",
    ]
    paths = []
    for job, lines in sorted(by_job.items()):
        p = directory / f"{job}.log"
        p.write_text("\n".join(lines) + "\n")
        paths.append(p)
    return paths


def generate(root: Path) -> dict:
    rng = random.Random(SEED)
    counts = build_counts(rng)
    spool = root / "spool"
    snaps = write_spool(spool, counts)
    app = write_app_failures(root / "app_failures.parquet")
    logs = write_nccl_logs(root / "logs")
    return {"spool": spool, "snapshots": snaps, "app_failures": app, "logs": logs, "truth": truth(counts)}

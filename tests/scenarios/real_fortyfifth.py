"""A forty-fifth set of real programs with one real fault each: **the tuning and introspection
calls of a GPU job runtime, its profilers and its health agent** -- the set's own C "runtime probe"
``tb45-probe`` (tests/scenarios/programs/fortyfifth/tb45-probe.c: one mode per tuning or
introspection call, each after a walk of the job's input shards), ``chrt`` and ``renice`` run by
the job's launcher. The fault is one the node gives the job:

- **the profilers**: ``perf stat -a`` of the job as the job (system-wide counters: perf_event_open
  EACCES, its fallback too); a profile asking for kernel time too (``exclude_kernel=0``) under the host's
  ``kernel.perf_event_paranoid`` 2 for a job that is not root (perf_event_open EACCES; the case is
  skipped where the sysctl is below 2); the health agent, dropped to the job's account, sampling a
  worker's heartbeat that the bad node's runtime started under another account (process_vm_readv
  EPERM), and the stack sampler attaching to a worker the bad node left running as root
  (ptrace EPERM);
- **memory and NUMA**: the staging buffer put on a hugetlbfs mount with no huge pages reserved (the
  mount made inside the recorded command's own mount namespace, ``unshare -m``: mmap ENOMEM; skipped
  where the host has free huge pages), the job bound to NUMA node 1 on a one-node host
  (set_mempolicy EINVAL), a pinned staging buffer of 16 MiB under the host's 8 MiB RLIMIT_MEMLOCK as
  the job (mlock ENOMEM);
- **queues and CPUs**: an io_uring queue depth of 65536, beyond the kernel's 32768 (io_uring_setup
  EINVAL; no sysctl is touched: the case is skipped where ``kernel.io_uring_disabled`` is missing or
  set), a rank's CPU map from a dual-socket node naming CPU 48 (a pinning thread's
  sched_setaffinity EINVAL);
- **scheduling**: the launcher of a rootless (user-namespace) node running the job's progress loop
  under ``chrt -f 10`` (sched_setscheduler EPERM: root of a user namespace has no CAP_SYS_NICE of
  the host), the launcher's profile asking ``renice -n -5`` for the loader as the job
  (setpriority EACCES);
- **devices and /proc**: the scratch device named as the NVMe controller's character node instead
  of its namespace's block node (ioctl BLKGETSIZE64 ENOTTY), and the health agent reading
  /proc/PID/stat of a worker that already exited (openat ENOENT).

Faults (``t45_`` cases): perf's perf_event_open EACCES; tb45-probe's perf_event_open EACCES, process_vm_readv EPERM, ptrace EPERM,
io_uring_setup EINVAL, mmap ENOMEM, set_mempolicy EINVAL, sched_setaffinity EINVAL, mlock ENOMEM,
ioctl ENOTTY, openat ENOENT; chrt's sched_setscheduler EPERM; renice's setpriority EACCES. The
expectations are what ``strace -f`` shows a person looking for the fault. The host is never changed:
no sysctl is written (the perf, io_uring and huge-page cases read theirs and skip), mounts are made
only inside the recorded command's mount namespace, limits are per process (the environment cannot
raise RLIMIT_RTPRIO or RLIMIT_NICE: no CAP_SYS_RESOURCE, so the good runs never need them).

Good runs vary naturally: random shard sizes and contents (counts fixed), random staging-file
names, pids, worker heartbeats, the order the pinning threads run, random positive niceness and
NUMA-free queue depths. Noise cases (``QUIET_FORTYFIFTH``) are good runs alone: a user-only
task-clock profile, heartbeat sampling of a worker of the job's own account, the staging buffer
on a private tmpfs, pinning threads on the host's CPUs, the health agent over live workers,
a FIFO progress loop on a rootful node, the scratch device's size of a block node.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
from pathlib import Path

from .files import run_quiet, shell_argv, write_file
from .harness import NOBODY, PROGRAMS, ROOT, NoAnomalyCase, Scenario

PROBE_SRC = PROGRAMS / "fortyfifth" / "tb45-probe.c"
JOB_UID = 45045  # another account of the node (the bad node's worker runs under it)
NSHARDS = 5


def probe_bin() -> str:
    """tb45-probe, compiled once per session at a fixed path (the same in every run)."""
    out = ROOT / "_cc45" / "tb45-probe"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.parent.chmod(0o755)
        tmp = out.parent / f".tb45-probe.{os.getpid()}.tmp"
        run_quiet("gcc", "-O1", "-pthread", "-o", str(tmp), str(PROBE_SRC))
        tmp.chmod(0o755)
        tmp.rename(out)
    return str(out)


def _shards(base: Path) -> None:
    """NSHARDS input shards of random sizes and contents (names fixed)."""
    (base / "shards").mkdir(parents=True, exist_ok=True)
    (base / "shards").chmod(0o755)
    for i in range(NSHARDS):
        write_file(base / "shards" / f"shard-{i:04d}.bin", os.urandom(random.randrange(2048, 96 * 1024)))


def _conf(base: Path, mode: str, value: str) -> None:
    probe_bin()
    _shards(base)
    write_file(base / f"{mode}.conf", f"{value}\n")


def _probe(mode: str):
    return lambda b: [probe_bin(), mode, str(b)]


def _sysctl(name: str) -> int | None:
    try:
        return int(Path("/proc/sys", *name.split(".")).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _huge_pages_free() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("HugePages_Free:"):
            return int(line.split()[1])
    return 0


def host_lacks(name: str) -> str | None:
    """Why the host cannot show case `name`'s fault (None: it can). No sysctl is ever written."""
    if name.startswith("t45_perf_") and (_sysctl("kernel.perf_event_paranoid") or 0) < 2:
        return "kernel.perf_event_paranoid < 2: a job's kernel-time profile is allowed here"
    if name.startswith("t45_io_uring_") and _sysctl("kernel.io_uring_disabled") != 0:
        return "kernel.io_uring_disabled missing or set: io_uring refused for every depth"
    if name == "t45_staging_hugetlbfs_no_pages" and _huge_pages_free():
        return "the host has free huge pages: a hugetlbfs staging buffer succeeds"
    if name == "t45_numa_bind_missing_node" and Path("/sys/devices/system/node/node1").exists():
        return "the host has a NUMA node 1"
    if name.startswith("t45_affinity_") and Path("/sys/devices/system/cpu/cpu48").exists():
        return "the host has a CPU 48"
    return None


# --- perf_event_open: a kernel-time profile as the job under perf_event_paranoid 2 ------------------------------
def perf_kernel_profile(base: Path, bad: bool) -> None:
    # the profiler's setting: user time only (exclude_kernel=1); the bad node's profile wants the kernel too
    _conf(base, "perf", "0" if bad else "1")


# --- process_vm_readv: the health agent (as nobody) samples a worker of another account -----------------------
def heartbeat_other_account(base: Path, bad: bool) -> None:
    _conf(base, "heartbeat", str(JOB_UID if bad else 65534))


# --- ptrace: the stack sampler (as nobody) attaches to a worker left running as root ---------------------------
def stack_worker_root(base: Path, bad: bool) -> None:
    _conf(base, "stack", "0" if bad else "65534")


# --- io_uring_setup: a queue depth beyond the kernel's maximum -------------------------------------------------
def uring_depth_too_deep(base: Path, bad: bool) -> None:
    _conf(base, "uring", "65536" if bad else str(random.choice([256, 1024, 4096])))


# --- mmap: the staging buffer on a hugetlbfs with no huge pages reserved (mounts in the run's namespace) -------
STAGE_SH = ('mount -t tmpfs -o size=32m,mode=1777 tb45-staging "$1/staging" && '
            'mount -t hugetlbfs -o mode=1777 tb45-huge "$1/huge" && exec "$2" stage "$1"')


def _stage_argv(b: Path) -> list[str]:
    return ["unshare", "-m", *shell_argv(STAGE_SH, str(b), probe_bin())]


def staging_hugetlbfs(base: Path, bad: bool) -> None:
    for d in ("staging", "huge"):
        (base / d).mkdir(parents=True, exist_ok=True)
    # the runtime's staging directory: a tmpfs; the bad node's config points it at its hugetlbfs mount
    _conf(base, "stage", str(base / ("huge" if bad else "staging")))


# --- set_mempolicy: the job bound to NUMA node 1 on a one-node host --------------------------------------------
def numa_missing_node(base: Path, bad: bool) -> None:
    _conf(base, "numa", "1" if bad else "0")


# --- sched_setaffinity: a rank's CPU map from a dual-socket node ------------------------------------------------
def affinity_cpu_map(base: Path, bad: bool) -> None:
    cpus = [random.choice([0, 1]) for _ in range(4)]
    if bad:
        cpus[2] = 48
    _conf(base, "affinity", " ".join(map(str, cpus)))


# --- mlock: a pinned staging buffer over the host's 8 MiB RLIMIT_MEMLOCK, as the job -----------------------------
def _pin_argv(b: Path) -> list[str]:
    return ["prlimit", "--memlock=8388608", *NOBODY, probe_bin(), "pin", str(b)]


def pin_over_memlock(base: Path, bad: bool) -> None:
    _conf(base, "pin", "16" if bad else str(random.choice([2, 4, 6])))


# --- ioctl: the scratch device named as the NVMe controller's char node ---------------------------------------
def scratch_device_node(base: Path, bad: bool) -> None:
    dev = base / "dev"
    dev.mkdir(parents=True, exist_ok=True)
    run_quiet("mknod", "-m", "0444", str(dev / "nvme0n1"), "b", "7", "0")  # a namespace's block node
    run_quiet("mknod", "-m", "0444", str(dev / "nvme0"), "c", "1", "3")  # the controller's character node
    _conf(base, "devsize", str(dev / ("nvme0" if bad else "nvme0n1")))


# --- /proc/PID/stat of a worker that already exited --------------------------------------------------------------
_WORKERS: dict[str, list[subprocess.Popen]] = {}


def _start_workers(base: Path, n: int) -> list[int]:
    procs = [subprocess.Popen(["sleep", "120"], start_new_session=True, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(n)]
    _WORKERS.setdefault(base.name, []).extend(procs)
    return [p.pid for p in procs]


def _stop_workers(base: Path) -> None:
    for p in _WORKERS.pop(base.name, []):
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def health_worker_gone(base: Path, bad: bool) -> None:
    pids = _start_workers(base, 3)
    if bad:  # the runtime's worker 1 died at start-up; its pid stayed in the runtime's list
        gone = subprocess.Popen(["true"])
        gone.wait()
        pids[1] = gone.pid
    _conf(base, "health", " ".join(map(str, pids)))


# --- chrt -f: the progress loop on a rootless (user-namespace) node -----------------------------------------------
LAUNCH_SH = ('read -r mode < "$1/launch.conf" && case "$mode" in '
             'rootless) exec unshare -U -r chrt -f 10 "$2" work "$1" ;; '
             '*) exec chrt -f 10 "$2" work "$1" ;; esac')


def _launch_argv(b: Path) -> list[str]:
    return shell_argv(LAUNCH_SH, str(b), probe_bin())


def launch_rootless(base: Path, bad: bool) -> None:
    _conf(base, "launch", "rootless" if bad else "rootful")


# --- renice -n -5 of the loader, as the job -----------------------------------------------------------------------
RENICE_SH = 'read -r n < "$1/nice.conf" && renice -n "$n" -p $$ && exec "$2" work "$1"'


def _renice_argv(b: Path) -> list[str]:
    return shell_argv(RENICE_SH, str(b), probe_bin())


def renice_negative(base: Path, bad: bool) -> None:
    # the launch profile's niceness for the loader: background (positive); the bad node's asks -5
    _conf(base, "nice", "-5" if bad else str(random.choice([2, 5, 10])))


# --- perf stat of the job as the job: the bad node's profile counts system-wide (-a) ---------------------------
PERF_SH = 'read -r opts < "$1/perfstat.conf" && exec perf stat $opts -- "$2" work "$1"'


def _perf_stat_argv(b: Path) -> list[str]:
    return shell_argv(PERF_SH, str(b), probe_bin())


def perf_stat_system_wide(base: Path, bad: bool) -> None:
    # the profiling wrapper's counters: per task (perf falls back to user-only counting under paranoid
    # 2: a first perf_event_open EACCES in every good run); the bad node's profile adds -a (every CPU)
    _conf(base, "perfstat", ("-a " if bad else "") + "-e task-clock,context-switches")


PROBE = "tb45-probe"
REAL_FORTYFIFTH: list[Scenario] = [
    Scenario("t45_perf_kernel_time_paranoid", f"{PROBE} perf (task-clock profile, as the job)", _probe("perf"),
             perf_kernel_profile, frozenset({"perf_event_open"}), "EACCES", lambda b: "*", unprivileged=True,
             description="a task-clock profile of the job with exclude_kernel=0 under perf_event_paranoid 2, "
                         "as nobody (perf_event_open EACCES)"),
    Scenario("t45_perf_stat_system_wide_as_job", "perf stat $(cat perfstat.conf) -- tb45-probe work (as the job)",
             _perf_stat_argv, perf_stat_system_wide, frozenset({"perf_event_open"}), "EACCES", lambda b: "*",
             unprivileged=True,
             description="perf stat -a as nobody under perf_event_paranoid 2: the per-CPU perf_event_open "
                         "fails EACCES, and so does perf's user-only fallback (the good runs' per-task "
                         "counters have a first EACCES too, then the fallback succeeds)"),
    Scenario("t45_heartbeat_worker_other_account", f"{PROBE} heartbeat (process_vm_readv of a worker)",
             _probe("heartbeat"), heartbeat_other_account, frozenset({"process_vm_readv"}), "EPERM",
             lambda b: "*",
             description="the health agent, dropped to nobody, reads the heartbeat of a worker running as "
                         "another account (process_vm_readv EPERM)"),
    Scenario("t45_stack_sampler_worker_root", f"{PROBE} stack (ptrace attach of a worker)", _probe("stack"),
             stack_worker_root, frozenset({"ptrace"}), "EPERM", lambda b: "*",
             description="the stack sampler, dropped to nobody, attaches to a worker left running as root "
                         "(ptrace PTRACE_ATTACH EPERM)"),
    Scenario("t45_io_uring_depth_too_deep", f"{PROBE} uring (io_uring_setup)", _probe("uring"),
             uring_depth_too_deep, frozenset({"io_uring_setup"}), "EINVAL", lambda b: "*",
             description="io_uring_setup with 65536 entries, beyond the kernel's 32768 (EINVAL)"),
    Scenario("t45_staging_hugetlbfs_no_pages", f"{PROBE} stage (staging buffer, unshare -m)", _stage_argv,
             staging_hugetlbfs, frozenset({"mmap"}), "ENOMEM", lambda b: "*",
             description="the staging buffer on a hugetlbfs mount with no huge pages reserved: open and "
                         "ftruncate succeed, mmap MAP_SHARED ENOMEM"),
    Scenario("t45_numa_bind_missing_node", f"{PROBE} numa (set_mempolicy MPOL_BIND)", _probe("numa"),
             numa_missing_node, frozenset({"set_mempolicy"}), "EINVAL", lambda b: "*",
             description="set_mempolicy(MPOL_BIND) to node 1 on a one-node host (EINVAL)"),
    Scenario("t45_affinity_cpu_not_present", f"{PROBE} affinity (pinning threads)", _probe("affinity"),
             affinity_cpu_map, frozenset({"sched_setaffinity"}), "EINVAL", lambda b: "*",
             description="a pinning thread's sched_setaffinity to CPU 48 of a dual-socket map on a 2-CPU "
                         "host (EINVAL)"),
    Scenario("t45_pin_staging_over_memlock", f"{PROBE} pin (mlock, as the job)", _pin_argv, pin_over_memlock,
             frozenset({"mlock", "mlock2"}), "ENOMEM", lambda b: "*",
             description="mlock of a 16 MiB staging buffer under RLIMIT_MEMLOCK 8 MiB as nobody (ENOMEM)"),
    Scenario("t45_scratch_device_is_controller", f"{PROBE} devsize (ioctl BLKGETSIZE64)", _probe("devsize"),
             scratch_device_node, frozenset({"ioctl"}), "ENOTTY", lambda b: f"{b}/dev/nvme0",
             description="BLKGETSIZE64 of the scratch device named as a character node (ioctl ENOTTY)"),
    Scenario("t45_health_proc_of_exited_worker", f"{PROBE} health (/proc/PID/stat of the workers)",
             _probe("health"), health_worker_gone, frozenset({"openat", "open"}), "ENOENT",
             lambda b: "/proc/*/stat", teardown=_stop_workers,
             description="the health agent opens /proc/PID/stat of a worker that already exited "
                         "(openat ENOENT)"),
    Scenario("t45_chrt_fifo_rootless_node", "chrt -f 10 (launcher: unshare -U -r on the bad node)",
             _launch_argv, launch_rootless, frozenset({"sched_setscheduler", "sched_setattr"}), "EPERM",
             lambda b: "*",
             description="chrt -f 10 as root of a user namespace (a rootless node): sched_setscheduler EPERM"),
    Scenario("t45_renice_loader_negative", "renice -n $(cat nice.conf) -p $$ (as the job)", _renice_argv,
             renice_negative, frozenset({"setpriority"}), "EACCES", lambda b: "*", unprivileged=True,
             description="renice -n -5 of the loader's shell as nobody (setpriority EACCES)"),
]


# --- good-vs-good noise -------------------------------------------------------------------------------------------
def _noise(setup):
    return lambda base, run: setup(base, False)  # noqa: ARG005


def _health_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _stop_workers(base)  # the last run's workers
    health_worker_gone(base, False)


QUIET_FORTYFIFTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t45_perf_user_only_profile", lambda b: [*NOBODY, probe_bin(), "perf", str(b)],
                  _noise(perf_kernel_profile), description="a user-only task-clock profile of the walk, as nobody"),
    NoAnomalyCase("t45_perf_stat_per_task", lambda b: [*NOBODY, *_perf_stat_argv(b)], _noise(perf_stat_system_wide),
                  description="perf stat of the walk's task-clock and context switches as nobody (its "
                              "kernel-time attempt refused, the user-only fallback taken, every run)"),
    NoAnomalyCase("t45_heartbeat_own_account", _probe("heartbeat"), _noise(heartbeat_other_account),
                  description="heartbeat sampling (process_vm_readv) of a worker of the agent's own account"),
    NoAnomalyCase("t45_staging_private_tmpfs", _stage_argv, _noise(staging_hugetlbfs),
                  description="unshare -m: the staging buffer of a random name on a private tmpfs"),
    NoAnomalyCase("t45_affinity_host_cpus", _probe("affinity"), _noise(affinity_cpu_map),
                  description="four pinning threads on random host CPUs, in any order"),
    NoAnomalyCase("t45_health_live_workers", _probe("health"), _health_noise,
                  description="/proc/PID/stat and status of three live workers of new pids each run"),
    NoAnomalyCase("t45_chrt_fifo_rootful", _launch_argv, _noise(launch_rootless),
                  description="chrt -f 10 of the progress loop on a rootful node"),
    NoAnomalyCase("t45_scratch_block_node", _probe("devsize"), _noise(scratch_device_node),
                  description="BLKGETSIZE64 of the scratch namespace's block node"),
]


def quiet_teardown() -> None:
    """Stop any worker a case left (a failed teardown); mounts live only in the runs' namespaces."""
    for name in list(_WORKERS):
        _stop_workers(ROOT / name)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()

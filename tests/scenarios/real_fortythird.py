"""A forty-third set of real programs with one real fault each: **a GPU/RDMA training job's
multi-process data side on one host** -- the data loader that feeds the GPUs: Python
``multiprocessing`` workers of the three start methods (fork, spawn, forkserver), a
``multiprocessing.Queue`` (SemLock: POSIX named semaphores in /dev/shm), ``shared_memory``
segments, a ``concurrent.futures.ProcessPoolExecutor``, a ``multiprocessing`` Pool, POSIX message
queues (ctypes), a record-by-record ``os.pread`` walk of indexed shards
(tests/scenarios/programs/fortythird/loader.py), and the set's own C loader ``tb43-ring``
(programs/fortythird/tb43-ring.c: a ``shm_open`` ring, two ``sem_open`` semaphores, pthread
producers, optionally pinned with ``mlockall(MCL_CURRENT | MCL_FUTURE)``). The fault is one the host
gives the job:

- **/dev/shm** (the host's /dev/shm untouched: the recorded command binds a tmpfs of the case's over
  it in a mount namespace of its own, ``unshare -m``): mounted read-only (the Queue's SemLock: glibc
  sem_open's temporary file, openat EROFS), out of inodes from a crashed job's leftover segments (a
  worker's ``SharedMemory(create=True)``: openat ENOSPC), mounted ``mode=0755`` by a container
  runtime, not 1777 (tb43-ring's shm_open as the job: openat EACCES), full (tb43-ring's sem_open
  writing its semaphore into the temporary file: write ENOSPC);
- **limits**: a job script's ``ulimit -f`` (RLIMIT_FSIZE) in 512-byte blocks (SharedMemory's
  ftruncate EFBIG), RLIMIT_NPROC reached by the forkserver's fork of the first pool worker (clone
  EAGAIN, in the forkserver), a pinned loader's mlockall(MCL_FUTURE) under a 3 MiB RLIMIT_MEMLOCK
  (the first worker thread's stack: mmap EAGAIN, from pthread_create);
- **the launcher and the scratch space**: a launcher whose service umask is 077 on the bad host
  making the workers' result queue 0600 (a worker, dropped to the job's uid, mq_open EACCES); the
  forkserver's listener socket in a TMPDIR on a scratch tmpfs out of inodes (bind ENOSPC, after
  tempfile's check and mkdtemp took the last ones);
- **descriptors**: memfd batches passed to the main process over SCM_RIGHTS (torch's
  file_descriptor sharing strategy) under ``ulimit -n 20``: the kernel cannot install the passed
  descriptor, recvmsg returns with MSG_CTRUNC and none, no errno ("received 0 items of ancdata");
- **the dataset**: a shard a root re-shard step left 0600 (a spawned Pool worker, as the job:
  openat EACCES), a shard truncated mid-record (a pread returning short: no errno).

Faults (``t43_`` cases): loader.py's openat EROFS, openat ENOSPC, ftruncate EFBIG, mq_open EACCES,
clone EAGAIN, openat EACCES, pread64 short, recvmsg MSG_CTRUNC (no errno), bind ENOSPC; tb43-ring's
openat EACCES, write ENOSPC, mmap EAGAIN. The expectations are what ``strace -f`` shows a person
looking for the fault (a POSIX queue is ``mqueue:/NAME``, a bound socket ``unix:PATH``). The job's
account is a uid of this set's own (43043): RLIMIT_NPROC counts every process of it, so the NPROC
case's setup waits until the last run's processes (and zombies) of it are gone.

Good runs vary naturally: random shard sizes and contents (counts fixed), random segment,
semaphore, queue and temp-directory names, pids, the order workers take and finish their shards
and interleave their calls. Noise cases (``QUIET_FORTYTHIRD``) are good runs alone, every mount
inside the recorded command: Queue workers forked and spawned, a forkserver ProcessPoolExecutor, a
spawned Pool's imap_unordered, shared-memory batches in a private /dev/shm, message-queue workers in
an IPC namespace of their own, tb43-ring in a private /dev/shm and pinned under the host's 8 MiB
memlock limit.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path

from .files import run_quiet, shell_argv
from .harness import PROGRAMS, ROOT, NoAnomalyCase, Scenario

OPEN = frozenset({"openat", "open", "openat2", "creat"})
WRITE = frozenset({"write", "writev", "pwrite64", "pwritev"})
TRUNCATE = frozenset({"ftruncate", "truncate"})
CLONE = frozenset({"clone", "clone3", "fork", "vfork"})
MMAP = frozenset({"mmap"})
MQ_OPEN = frozenset({"mq_open"})
BIND = frozenset({"bind"})
PREAD = frozenset({"pread64", "preadv", "preadv2"})

PY = "/usr/bin/python3"
LOADER = str(PROGRAMS / "fortythird" / "loader.py")
RING_SRC = PROGRAMS / "fortythird" / "tb43-ring.c"
JOB_UID = 43043  # the job's account: a uid of this set alone (RLIMIT_NPROC counts every process of it)
JOB = ["/usr/bin/setpriv", f"--reuid={JOB_UID}", f"--regid={JOB_UID}", "--clear-groups"]
NSHARDS = 6
# the node's scratch tmpfs, at a short path: the listener's address (scratch/pymp-*/listener-*) must fit
# in sun_path's 108 bytes, or python refuses it before any bind
SCRATCH = ROOT / "t43-scratch"


def _loader(*args: str) -> list[str]:
    return [PY, "-S", "-B", LOADER, *args]


def _write(path: Path, data: str | bytes, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o755)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    path.chmod(mode)
    return path


def _shards(base: Path, lo_kib: int = 4, hi_kib: int = 48, n: int = NSHARDS) -> None:
    """n dataset shards of random sizes and contents (names fixed)."""
    for i in range(n):
        _write(base / "shards" / f"shard-{i:04d}.bin", os.urandom(random.randrange(lo_kib * 1024, hi_kib * 1024)))


def ring_bin() -> str:
    """tb43-ring, compiled once per session at a fixed path (the same in every run)."""
    out = ROOT / "_cc43" / "tb43-ring"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.parent.chmod(0o755)
        tmp = out.parent / ".tb43-ring.tmp"
        run_quiet("gcc", "-O1", "-pthread", "-o", str(tmp), str(RING_SRC))
        tmp.rename(out)
    return str(out)


def _tmpfs(target: Path, opts: str) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    run_quiet("mount", "-t", "tmpfs", "-o", opts, "tracebase-test", str(target))
    return target


def _fill_inodes(mnt: Path, leave: int, prefix: str = "f") -> None:
    """Leave `leave` free inodes on the tmpfs mnt (files of a crashed job in mnt)."""
    for i in range(max(0, os.statvfs(mnt).f_ffree - leave)):
        try:
            (mnt / f"{prefix}{os.urandom(4).hex()}{i}").touch()
        except OSError:
            break


def _unmount(target: Path) -> None:
    for _ in range(8):
        if subprocess.run(["mountpoint", "-q", str(target)], capture_output=True).returncode != 0:
            return
        if subprocess.run(["umount", "-R", str(target)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-R", "-l", str(target)], capture_output=True)


def _unmount_all(base: Path) -> None:
    _unmount(base / "shm")
    _unmount(SCRATCH)
    if SCRATCH.is_dir() and not os.path.ismount(SCRATCH):
        SCRATCH.rmdir()


# the host's /dev/shm as the job sees it: the case's tmpfs at $1/shm bound over /dev/shm in a mount
# namespace of the recorded command's own (the host's /dev/shm is never touched)
SHM_SH = 'mount --bind "$1/shm" /dev/shm && shift && exec "$@"'


def _in_shm(b: Path, *argv: str) -> list[str]:
    return ["unshare", "-m", *shell_argv(SHM_SH, str(b), *argv)]


# --- multiprocessing.Queue (fork workers): its SemLock in a /dev/shm mounted read-only ------------------------
def _queue_ro_argv(b: Path) -> list[str]:
    return _in_shm(b, *_loader("queue", str(b), "fork", "2"))


def queue_devshm_read_only(base: Path, bad: bool) -> None:
    _shards(base)
    # the bad node's container runtime mounted the job's /dev/shm ro (a hardening profile's readOnly)
    _tmpfs(base / "shm", "size=16m,mode=1777" + (",ro" if bad else ""))


# --- shared_memory segments of forked workers: /dev/shm out of inodes ------------------------------------------
def _shm_argv(b: Path) -> list[str]:
    return _in_shm(b, *_loader("shm", str(b), "2"))


def shared_memory_devshm_out_of_inodes(base: Path, bad: bool) -> None:
    _shards(base)
    shm = _tmpfs(base / "shm", "size=16m,mode=1777,nr_inodes=64")
    # a crashed job's leftover segments (psm_*): the bad node's took every inode
    _fill_inodes(shm, 0 if bad else random.randrange(30, 50), prefix="psm_")


# --- shared_memory's ftruncate under a job script's `ulimit -f` ---------------------------------------------
FSIZE_SH = ('mount --bind "$1/shm" /dev/shm && read -r blocks < "$1/fsize.conf" && ulimit -f "$blocks" && '
            f'exec {PY} -S -B {LOADER} shm "$1" 2')


def _fsize_argv(b: Path) -> list[str]:
    return ["unshare", "-m", *shell_argv(FSIZE_SH, str(b))]


def shared_memory_ftruncate_fsize(base: Path, bad: bool) -> None:
    _shards(base, 40, 96)
    _tmpfs(base / "shm", "size=16m,mode=1777")
    # the bad node's job script: `ulimit -f 64` meant as 64 MiB of core... 64 blocks of 512 bytes
    _write(base / "fsize.conf", "64\n" if bad else "unlimited\n")


# --- POSIX message queue made under the launcher's umask 077 ------------------------------------------------
def _mq_argv(b: Path) -> list[str]:
    return ["unshare", "--ipc", *_loader("mq", str(b), "2")]


def mq_launcher_umask(base: Path, bad: bool) -> None:
    _shards(base)
    # the launcher service's UMask=: 0007 (group-shared queues); the bad node's hardened unit: 0077
    _write(base / "umask.conf", "077\n" if bad else random.choice(["007\n", "002\n"]))


# --- ProcessPoolExecutor (forkserver) as the job under RLIMIT_NPROC -----------------------------------------
NPROC_SH = ('read -r n < "$1/nproc.conf" && exec prlimit --nproc="$n" ' + " ".join(JOB)
            + f' {PY} -S -B {LOADER} pool "$1" forkserver 2')


def _nproc_argv(b: Path) -> list[str]:
    return shell_argv(NPROC_SH, str(b))


def _account_idle(uid: int, timeout: float = 20.0) -> None:
    """Wait until no process of `uid` is left (the last run's forkserver, tracker and workers, and
    their zombies until pid 1 reaps them): RLIMIT_NPROC counts them all."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/status") as fh:
                    uids = next(line for line in fh if line.startswith("Uid:"))
            except (OSError, StopIteration):
                continue
            left += int(uids.split()[1]) == uid
        if not left:
            return
        time.sleep(0.1)


def pool_forkserver_over_nproc(base: Path, bad: bool) -> None:
    _shards(base)
    _account_idle(JOB_UID)
    # the bad node's limits.conf: nproc 3 for the job's account (the main process, its resource
    # tracker and its forkserver: the forkserver's fork of the first worker is the fourth)
    _write(base / "nproc.conf", "3\n" if bad else "64\n")


# --- a spawned Pool's worker as the job: a shard a root re-shard step left 0600 ------------------------------
def _spawnpool_argv(b: Path) -> list[str]:
    return [*JOB, *_loader("spawnpool", str(b), "2")]


def spawn_pool_shard_root_only(base: Path, bad: bool) -> None:
    _shards(base)
    if bad:  # re-sharded as root under umask 077
        (base / "shards" / "shard-0003.bin").chmod(0o600)


# --- pread walk of an indexed shard truncated mid-record ----------------------------------------------------
def _pread_argv(b: Path) -> list[str]:
    return _loader("pread", str(b), "2")


def _indexed_shards(base: Path, truncate: int | None = None) -> None:
    size = 1024
    for i in range(NSHARDS):
        count = 24
        data = b"TB43" + count.to_bytes(4, "little") + size.to_bytes(4, "little") + os.urandom(count * size)
        if i == truncate:  # an interrupted copy: cut in the middle of record 17
            data = data[: 12 + 17 * size + random.randrange(100, 900)]
        _write(base / "shards" / f"shard-{i:04d}.bin", data)


def pread_shard_truncated(base: Path, bad: bool) -> None:
    _indexed_shards(base, 2 if bad else None)


# --- memfd batches passed over SCM_RIGHTS (torch's file_descriptor strategy) under a low RLIMIT_NOFILE ------
NOFILE_SH = ('read -r n < "$1/nofile.conf" && ulimit -n "$n" && '
             f'exec {PY} -S -B {LOADER} fdpass "$1" 2')


def _fdpass_argv(b: Path) -> list[str]:
    return shell_argv(NOFILE_SH, str(b))


def fdpass_batches_over_nofile(base: Path, bad: bool) -> None:
    _shards(base, 1, 8, n=24)
    # the bad node's limits.conf: nofile 20 for the job (the main process holds every batch's memfd
    # of the step: 24 of them, after its own ten). The kernel cannot install a passed descriptor:
    # recvmsg succeeds with MSG_CTRUNC and no descriptor -- "received 0 items of ancdata"
    _write(base / "nofile.conf", "20\n" if bad else "1024\n")


# --- forkserver's listener in a TMPDIR on a scratch tmpfs out of inodes -------------------------------------
def _listener_argv(b: Path) -> list[str]:
    return ["env", f"TMPDIR={SCRATCH}", *_loader("queue", str(b), "forkserver", "2")]


def forkserver_listener_scratch_inodes(base: Path, bad: bool) -> None:
    _shards(base)
    scratch = _tmpfs(SCRATCH, "size=16m,mode=1777,nr_inodes=64")
    # another job's cache files: the bad node's leave one inode -- tempfile's check file takes and
    # frees it, mkdtemp's pymp-* takes it, the listener socket finds none
    _fill_inodes(scratch, 1 if bad else random.randrange(20, 40), prefix="cache-")


# --- tb43-ring as the job: /dev/shm mounted 0755 by a container runtime --------------------------------------
def _ring_job_argv(b: Path) -> list[str]:
    return _in_shm(b, *JOB, ring_bin(), str(b), "3")


def ring_devshm_not_world_writable(base: Path, bad: bool) -> None:
    ring_bin()
    _shards(base)
    _tmpfs(base / "shm", "size=16m," + ("mode=0755" if bad else "mode=1777"))


# --- tb43-ring: /dev/shm full at its semaphores -----------------------------------------------------------------
def _ring_argv(b: Path) -> list[str]:
    return _in_shm(b, ring_bin(), str(b), "3")


def ring_semaphore_devshm_full(base: Path, bad: bool) -> None:
    ring_bin()
    _shards(base)
    shm = _tmpfs(base / "shm", "size=1m,mode=1777")
    # a crashed job's leftover segment: the bad node's fills the tmpfs to its last page (the ring's
    # 512 KiB are sparse until written: shm_open and ftruncate succeed)
    _write(shm / f"psm_{os.urandom(4).hex()}", b"\0" * (1024 if bad else random.randrange(32, 256)) * 1024)


# --- tb43-ring pinned (mlockall MCL_FUTURE) under a 3 MiB RLIMIT_MEMLOCK ----------------------------------------
MEMLOCK_SH = 'read -r l < "$1/memlock.conf" && exec prlimit --memlock="$l" ' + " ".join(JOB) + ' "$2" "$1" 3 --pin'


def _pinned_argv(b: Path) -> list[str]:
    return shell_argv(MEMLOCK_SH, str(b), ring_bin())


def ring_pinned_over_memlock(base: Path, bad: bool) -> None:
    ring_bin()
    _shards(base)
    # the host's 8 MiB (Debian's default); the bad node's container spec: 3 MiB
    _write(base / "memlock.conf", "3145728\n" if bad else "8388608\n")


REAL_FORTYTHIRD: list[Scenario] = [
    Scenario("t43_mp_queue_devshm_read_only", "python3 loader.py queue fork (multiprocessing.Queue in /dev/shm)",
             _queue_ro_argv, queue_devshm_read_only, OPEN, "EROFS", lambda b: "/dev/shm/sem.*",
             teardown=_unmount_all,
             description="multiprocessing.Queue of forked loader workers, /dev/shm mounted ro: SemLock's "
                         "sem_open, its temporary file (openat EROFS)"),
    Scenario("t43_shared_memory_devshm_out_of_inodes", "python3 loader.py shm (shared_memory per shard)",
             _shm_argv, shared_memory_devshm_out_of_inodes, OPEN, "ENOSPC", lambda b: "/dev/shm/psm_*",
             teardown=_unmount_all,
             description="forked workers' SharedMemory(create=True) on a /dev/shm whose inodes a crashed "
                         "job's segments took (openat ENOSPC)"),
    Scenario("t43_shared_memory_ftruncate_fsize", "python3 loader.py shm (under the job script's ulimit -f)",
             _fsize_argv, shared_memory_ftruncate_fsize, TRUNCATE, "EFBIG", lambda b: "/dev/shm/psm_*",
             teardown=_unmount_all,
             description="SharedMemory(create=True) of a 40-96 KiB shard under ulimit -f 64 (512-byte blocks): "
                         "its ftruncate (EFBIG)"),
    Scenario("t43_mq_results_queue_launcher_umask", "python3 loader.py mq (workers dropped to the job's uid)",
             _mq_argv, mq_launcher_umask, MQ_OPEN, "EACCES", lambda b: "mqueue:/tb43-done-*",
             description="the workers' results queue made 0660 under the launcher's umask 077 (0600): a worker "
                         "dropped to the job's uid opens it for writing (mq_open EACCES)"),
    Scenario("t43_pool_forkserver_worker_over_nproc", "python3 loader.py pool forkserver (ProcessPoolExecutor)",
             _nproc_argv, pool_forkserver_over_nproc, CLONE, "EAGAIN", lambda b: "*",
             description="ProcessPoolExecutor(forkserver) as the job under RLIMIT_NPROC 3: the forkserver's "
                         "fork of the first worker (clone EAGAIN)"),
    Scenario("t43_spawn_pool_shard_root_only", "python3 loader.py spawnpool (multiprocessing spawn Pool)",
             _spawnpool_argv, spawn_pool_shard_root_only, OPEN, "EACCES", lambda b: f"{b}/shards/shard-0003.bin",
             description="a spawned Pool worker, as the job, opens a shard a root re-shard left 0600 "
                         "(openat EACCES)"),
    Scenario("t43_pread_index_shard_truncated", "python3 loader.py pread (record-by-record os.pread)",
             _pread_argv, pread_shard_truncated, PREAD, None, lambda b: f"{b}/shards/shard-0002.bin",
             description="a forked Pool worker's pread of record 17 of a shard an interrupted copy cut "
                         "mid-record: a short read (no errno)"),
    Scenario("t43_fdpass_memfd_batches_over_nofile", "python3 loader.py fdpass (memfd batches over SCM_RIGHTS)",
             _fdpass_argv, fdpass_batches_over_nofile, frozenset({"recvmsg"}), None, lambda b: "socketpair:*",
             description="forked workers pass each batch's memfd to the main process over a socketpair under "
                         "ulimit -n 20: recvmsg returns with MSG_CTRUNC and no descriptor, no errno (torch's "
                         "'received 0 items of ancdata')"),
    Scenario("t43_forkserver_listener_scratch_inodes", "python3 loader.py queue forkserver (TMPDIR on scratch)",
             _listener_argv, forkserver_listener_scratch_inodes, BIND, "ENOSPC",
             lambda b: f"unix:{SCRATCH}/pymp-*/listener-*", teardown=_unmount_all,
             description="the forkserver's listener socket in TMPDIR, a scratch tmpfs out of inodes once "
                         "mkdtemp's pymp-* took the last (bind ENOSPC)"),
    Scenario("t43_ring_devshm_not_world_writable", "tb43-ring (C: shm_open ring, as the job)",
             _ring_job_argv, ring_devshm_not_world_writable, OPEN, "EACCES", lambda b: "/dev/shm/tb43-ring-*",
             teardown=_unmount_all,
             description="tb43-ring as the job on a /dev/shm a container runtime mounted mode=0755 "
                         "(shm_open: openat EACCES)"),
    Scenario("t43_ring_semaphore_devshm_full", "tb43-ring (C: sem_open after its ring)",
             _ring_argv, ring_semaphore_devshm_full, WRITE, "ENOSPC", lambda b: "/dev/shm/sem.*",
             teardown=_unmount_all,
             description="tb43-ring's sem_open on a full /dev/shm: glibc's write of the semaphore into its "
                         "temporary file (write ENOSPC)"),
    Scenario("t43_ring_pinned_stack_over_memlock", "tb43-ring --pin (C: mlockall MCL_FUTURE, as the job)",
             _pinned_argv, ring_pinned_over_memlock, MMAP, "EAGAIN", lambda b: "*",
             description="tb43-ring pinned with mlockall(MCL_CURRENT|MCL_FUTURE) under RLIMIT_MEMLOCK 3 MiB: the "
                         "first worker's 1 MiB stack, locked (pthread_create's mmap EAGAIN)"),
]


# --- good-vs-good noise: every mount inside the recorded command -----------------------------------------------
PRIVATE_SHM = 'mount -t tmpfs -o size=32m,mode=1777 tracebase-shm /dev/shm && shift && exec "$@"'


def _private_shm(b: Path, *argv: str) -> list[str]:
    return ["unshare", "-m", *shell_argv(PRIVATE_SHM, str(b), *argv)]


def _shards_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _shards(base)


def _mq_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _shards(base)
    _write(base / "umask.conf", "007\n")


def _ring_noise(base: Path, run: int) -> None:  # noqa: ARG001
    ring_bin()
    _shards(base)


QUIET_FORTYTHIRD: list[NoAnomalyCase] = [
    NoAnomalyCase("t43_queue_fork_workers", lambda b: _loader("queue", str(b), "fork", "3"), _shards_noise,
                  description="three forked workers put shards of random sizes on a multiprocessing.Queue"),
    NoAnomalyCase("t43_queue_spawn_workers", lambda b: _loader("queue", str(b), "spawn", "2"), _shards_noise,
                  description="two spawned workers and a Queue (named semaphores, a resource tracker)"),
    NoAnomalyCase("t43_pool_forkserver_workers", lambda b: _loader("pool", str(b), "forkserver", "2"),
                  _shards_noise,
                  description="ProcessPoolExecutor(forkserver): a pymp-* temp directory of a random name, its "
                              "listener, two workers"),
    NoAnomalyCase("t43_spawn_pool_imap_unordered", lambda b: [*JOB, *_loader("spawnpool", str(b), "2")],
                  _shards_noise, description="a spawned Pool's imap_unordered as the job, shards in any order"),
    NoAnomalyCase("t43_shared_memory_batches_private_shm", lambda b: _private_shm(b, *_loader("shm", str(b), "2")),
                  _shards_noise,
                  description="unshare -m: a private /dev/shm, forked workers' SharedMemory segments of random "
                              "names and sizes"),
    NoAnomalyCase("t43_mq_workers_ipc_namespace", lambda b: ["unshare", "--ipc", *_loader("mq", str(b), "3")],
                  _mq_noise, description="unshare --ipc: a results queue of a random name, three workers dropped "
                                         "to the job's uid"),
    NoAnomalyCase("t43_ring_private_shm", lambda b: _private_shm(b, *JOB, ring_bin(), str(b), "3"), _ring_noise,
                  description="unshare -m: tb43-ring as the job in a private /dev/shm, random segment names, "
                              "three pthread producers"),
    NoAnomalyCase("t43_ring_pinned_host_memlock",
                  lambda b: ["prlimit", "--memlock=8388608", *JOB, ring_bin(), str(b), "3", "--pin"], _ring_noise,
                  description="tb43-ring pinned (mlockall) as the job under the host's 8 MiB memlock limit"),
]


def quiet_teardown() -> None:
    """Unmount what any case may have left mounted (a failed teardown)."""
    for sc in [*REAL_FORTYTHIRD, *QUIET_FORTYTHIRD]:
        _unmount_all(ROOT / sc.name)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()

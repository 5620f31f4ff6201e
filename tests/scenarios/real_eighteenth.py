"""An eighteenth set of real programs with one real fault each: the limits and kernel-object
quotas a long-running job runs into after a long good prefix -- descriptors, file sizes,
queued signals, IPC objects, AIO contexts and cgroups -- in (call, errno) pairs or mechanisms
the first seventeen sets do not have.

- **the descriptor table** (RLIMIT_NOFILE from the job's spec): a pool keeping a pipe pair
  per worker, the 121st worker's pipe past a limit of 256 (pipe2 EMFILE); a daemon moving its
  log descriptor above 1000 to keep it clear of the low numbers, under a limit of 512 (fcntl
  F_DUPFD_CLOEXEC EINVAL); bash's ``exec 300>log`` under ``ulimit -n 256`` (dup2 EBADF: bash's
  message, the job writes its log to nowhere); a job raising its own descriptor limit to 2^21,
  above ``fs.nr_open`` -- refused even to root (prlimit64 EPERM);
- **file size** (RLIMIT_FSIZE, SIGXFSZ ignored as python does): a job preallocating its
  output's size with ftruncate (EFBIG), util-linux ``fallocate -l 64M`` under ``ulimit -f``
  (fallocate EFBIG);
- **queued signals** (RLIMIT_SIGPENDING, the job as an account of its own so the per-user
  count is the job's alone): progress notifications queued with sigqueue to a worker that
  blocks them (rt_sigqueueinfo EAGAIN at the 17th);
- **IPC objects** (each run in an IPC namespace of its own, ``unshare --ipc``, its limits set
  by the job's container runtime step): a POSIX queue per worker past ``fs.mqueue.queues_max``
  (mq_open ENOSPC, as the job's account: root is exempt), a SysV segment per rank past
  ``kernel.shmmni`` (shmget ENOSPC), a SysV queue per rank past ``kernel.msgmni`` (msgget
  ENOSPC), one semop releasing 64 semaphores past ``semopm`` 32 (semtimedop E2BIG), a set of 128
  semaphores past ``semmsl`` 64 (semget EINVAL);
- **asynchronous I/O**: a storage engine's AIO context of 131,072 events past ``fs.aio-max-nr``
  (io_setup EAGAIN);
- **cgroups**: a supervisor making a cgroup v2 child per worker under a parent whose
  ``cgroup.max.descendants`` is 4 (mkdir EAGAIN at the 5th);
- **a limit every run meets and gets past, turned fatal**: an fd cache evicting on EMFILE whose
  first open finds every descriptor taken by the job's eventfds (openat EMFILE, nothing to
  evict), sigqueue retried after a drain under RLIMIT_SIGPENDING 0 (rt_sigqueueinfo EAGAIN,
  nothing to drain: given up), an AIO context halved on EAGAIN down to a floor still past
  ``fs.aio-max-nr`` (io_setup EAGAIN: given up).

Most faults go through one python3 program, ``quota.py``, a long-running job as a plan of
steps (a long prefix of file reads first, then limits, sysctls, workers, pipes, signals, IPC
objects, contexts, cgroups), so each fault sits after many successful calls; the rest are bash
and fallocate under a start script. Same types and harness as real.py (`Scenario`,
`NoAnomalyCase`); the expectations are what ``strace -f`` shows a person looking for the fault
(calls without a path: ``*``; a POSIX queue is ``mqueue:/NAME``).

The good-vs-good cases (`QUIET_EIGHTEENTH`) carry the routine noise of such jobs: an fd cache
that meets EMFILE a varying number of times and evicts its oldest entry and retries (every
run), worker pools of varying size, sigqueue refused EAGAIN a varying number of times and
retried after the worker drains, SysV objects and POSIX queues of varying count, an AIO
context asked too deep and halved until the kernel takes it (every run, 1 to 3 refusals),
polls timing out a varying number of times, inotify events read through epoll in varying
number, cgroup children of varying count, and a descriptor soft limit that varies; and an fd
cache meeting EMFILE at whichever kind of descriptor it opens next (a file, a pipe, an eventfd).
"""

from __future__ import annotations

import json
import os
import random
import resource
from pathlib import Path

from .catalog import write
from .harness import NoAnomalyCase, Scenario

PY3 = "/usr/bin/python3"
NO_PATH = "*"
CGROUP2 = Path("/sys/fs/cgroup/unified")
# an account of the job's own (no passwd entry needed): per-user counts (queued signals, POSIX
# queues) are then the job's alone, whatever else runs as nobody on the host
JOB_UID = 60000 + os.getpid() % 5000
INFINITY = -1  # resource.RLIM_INFINITY

QUOTA_PY = r'''
import ctypes, json, os, resource, select, signal, sys

libc = ctypes.CDLL(None, use_errno=True)
plan = json.load(open(sys.argv[1]))
IPC_CREAT, IPC_RMID = 0o1000, 0


def die(what):
    err = ctypes.get_errno()
    print(f"quota: {what}: {os.strerror(err)}", file=sys.stderr)
    sys.exit(1)


def read(s):  # the job's long good prefix: its inputs, one by one
    for name in sorted(os.listdir(s["dir"])):
        with open(os.path.join(s["dir"], name), "rb") as f:
            f.read()


def limits(s):  # the job spec's limits, applied by the job's launcher code
    for name, (soft, hard) in s["limits"].items():
        resource.setrlimit(getattr(resource, "RLIMIT_" + name.upper()), (soft, hard))


def raise_nofile(s):
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (s["n"], s["n"]))
    except (OSError, ValueError) as e:
        sys.exit(f"quota: cannot raise the descriptor limit to {s['n']}: {e}")


def sysctl(s):  # the container runtime's step: the IPC namespace's limits
    for key, value in s["set"].items():
        with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
            f.write(value)


def drop(s):
    os.setgroups([])
    os.setresgid(s["uid"], s["uid"], s["uid"])
    os.setresuid(s["uid"], s["uid"], s["uid"])


def pipes(s):
    held = []
    for i in range(s["n"]):
        try:
            held.append(os.pipe())
        except OSError as e:
            sys.exit(f"quota: worker {i}: pipe: {e}")
    for r, w in held:
        os.close(r)
        os.close(w)


def cache(s):  # an fd cache of the inputs: on EMFILE it evicts its oldest entry and retries
    names = sorted(os.listdir(s["dir"]))[: s["n"]]
    pinned = []
    if "leave" in s:  # progress threads (an eventfd each) take all but `leave` free descriptors
        top = resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 1 - s["leave"]
        while not pinned or pinned[-1] < top:  # the lowest free number first: gaps fill first
            pinned.append(os.eventfd(0))
    held = []
    for name in names:
        while True:
            try:
                held.append(os.open(os.path.join(s["dir"], name), os.O_RDONLY))
                break
            except OSError as e:
                if e.errno != 24 or not held:
                    raise
                os.close(held.pop(0))
    for fd in held + pinned:
        os.close(fd)


def mixed(s):  # an fd cache whose entries are files, pipes and eventfds: on EMFILE at any of
    # them it evicts its oldest entry and retries
    names = sorted(os.listdir(s["dir"]))
    held = []
    for i, kind in enumerate(s["kinds"]):
        while True:
            try:
                if kind == "f":
                    held.append((os.open(os.path.join(s["dir"], names[i % len(names)]), os.O_RDONLY),))
                elif kind == "p":
                    held.append(os.pipe())
                else:
                    held.append((os.eventfd(0),))
                break
            except OSError as e:
                if e.errno != 24 or not held:
                    raise
                for fd in held.pop(0):
                    os.close(fd)
    for fds in held:
        for fd in fds:
            os.close(fd)


def dupfd(s):
    import fcntl
    fd = os.open(s["path"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, s["min"])
    except OSError as e:
        sys.exit(f"quota: cannot move the log above {s['min']}: {e}")
    os.close(fd)
    os.write(high, b"started\n")
    os.close(high)


def truncate(s):
    fd = os.open(s["path"], os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, s["size"])
    except OSError as e:
        sys.exit(f"quota: preallocate {s['path']}: {e}")
    os.close(fd)


def sigqueue(s):  # progress notifications to a worker that blocks them and drains later
    sig = signal.SIGRTMIN + 1
    signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
    pid = os.getpid()
    for i in range(s["n"]):
        tries = 0
        while libc.sigqueue(pid, sig, ctypes.c_void_p(i + 1)) != 0:
            tries += 1
            if ctypes.get_errno() != 11 or not s.get("retry") or tries > 3:
                die(f"sigqueue {i}")
            while signal.sigtimedwait([sig], 0) is not None:
                pass
    while signal.sigtimedwait([sig], 0) is not None:
        pass


class MqAttr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]


def mqueues(s):
    attr = MqAttr(0, 4, 256, 0)
    libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(MqAttr)]
    names = []
    for i in range(s["n"]):
        name = f"/job-q{i}".encode()
        if libc.mq_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, ctypes.byref(attr)) < 0:
            die(f"worker {i}: mq_open")
        names.append(name)
    for name in names:
        libc.mq_unlink(name)


def shm(s):
    ids = []
    for i in range(s["n"]):
        ident = libc.shmget(0, s.get("size", 65536), IPC_CREAT | 0o600)
        if ident < 0:
            die(f"rank {i}: shmget")
        ids.append(ident)
    for ident in ids:
        libc.shmctl(ident, IPC_RMID, None)


def msgq(s):
    ids = []
    for i in range(s["n"]):
        ident = libc.msgget(0, IPC_CREAT | 0o600)
        if ident < 0:
            die(f"rank {i}: msgget")
        ids.append(ident)
    for ident in ids:
        libc.msgctl(ident, IPC_RMID, None)


class SemBuf(ctypes.Structure):
    _fields_ = [("num", ctypes.c_ushort), ("op", ctypes.c_short), ("flg", ctypes.c_short)]


def sem(s):
    ident = libc.semget(0, s["nsems"], IPC_CREAT | 0o600)
    if ident < 0:
        die(f"semget of {s['nsems']}")
    ops = (SemBuf * s["nops"])(*[SemBuf(i, 1, 0) for i in range(s["nops"])])
    rc = libc.semop(ident, ops, s["nops"])
    if rc < 0:
        die(f"semop of {s['nops']}")
    libc.semctl(ident, 0, IPC_RMID)


def aio(s):  # io_setup(2) is not in libc: the raw call, as libaio makes it
    depth = s["depth"]
    while True:
        ctx = ctypes.c_ulong(0)
        if libc.syscall(206, depth, ctypes.byref(ctx)) == 0:
            break
        if ctypes.get_errno() != 11 or not s.get("fallback") or depth // 2 < s.get("floor", 1):
            die(f"io_setup({depth})")
        depth //= 2
    libc.syscall(207, ctx)


def cgroups(s):
    made = []
    try:
        for i in range(s["n"]):
            path = os.path.join(s["parent"], f"worker{i}")
            try:
                os.mkdir(path)
            except OSError as e:
                sys.exit(f"quota: worker {i}: {e}")
            made.append(path)
    finally:
        for path in made:
            os.rmdir(path)


def polls(s):  # a worker waiting on its control pipe, with a short timeout
    r, w = os.pipe()
    p = select.poll()
    p.register(r, select.POLLIN)
    for _ in range(s["n"]):
        p.poll(1)
    os.write(w, b"go")
    p.poll(1000)
    os.read(r, 2)


def watch(s):  # a spool watcher: inotify through epoll, drained until a poll times out
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, s["dir"].encode(), 0x100 | 0x8) < 0:  # IN_CREATE | IN_CLOSE_WRITE
        die("inotify")
    ep = select.epoll()
    ep.register(fd, select.EPOLLIN)
    for i in range(s["n"]):
        with open(os.path.join(s["dir"], f"part{i:03d}"), "w") as f:
            f.write("x" * i)
        if i % s["every"] == 0:
            ep.poll(0)
    while ep.poll(0.01):
        try:
            os.read(fd, 65536)
        except BlockingIOError:
            break
    ep.close()
    os.close(fd)


for step in plan:
    globals()[step["op"]](step)
print("quota: done")
'''


def _data(base: Path, n: int = 300) -> None:
    """The job's inputs: the long good prefix every plan starts with."""
    (base / "data").mkdir()
    for i in range(n):
        write(base / "data" / f"in{i:04d}.rec", f"record {i}\n" * 4)


def _plan(base: Path, *steps: dict) -> None:
    _data(base)
    (base / "out").mkdir()
    write(base / "quota.py", QUOTA_PY)
    write(base / "plan.json", json.dumps([{"op": "read", "dir": f"{base}/data"}, *steps]))


def _quota(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/quota.py", f"{b}/plan.json"]


def _quota_ipc(b: Path) -> list[str]:
    # the container runtime's IPC namespace: its limits are the job's own, none leak
    return ["/usr/bin/unshare", "--ipc", *_quota(b)]


def _quota_as_job(b: Path) -> list[str]:
    return ["/usr/bin/setpriv", f"--reuid={JOB_UID}", f"--regid={JOB_UID}", "--clear-groups", *_quota(b)]


def _nofile(n: int) -> dict:
    return {"op": "limits", "limits": {"nofile": [n, n]}}


# --- the descriptor table -------------------------------------------------------------------
def pipes_per_worker(base: Path, bad: bool) -> None:
    # 120 workers at two descriptors each; the bad host's container runtime gives 256, not 1024
    _plan(base, _nofile(256 if bad else 1024), {"op": "pipes", "n": 160})


def log_fd_moved_high(base: Path, bad: bool) -> None:
    _plan(base, _nofile(512 if bad else 4096),
          {"op": "dupfd", "path": f"{base}/out/job.log", "min": 1000})


BASH_LOG_SH = "ulimit -n \"$(cat {b}/nofile)\"\nexec 300>>{b}/out/job.log\necho started >&300\necho done\n"


def bash_log_fd_300(base: Path, bad: bool) -> None:
    _data(base)
    (base / "out").mkdir()
    write(base / "nofile", "256\n" if bad else "1024\n")
    write(base / "start.sh", BASH_LOG_SH.format(b=base))


def nofile_above_nr_open(base: Path, bad: bool) -> None:
    # the job raises its soft limit to the hard one it was given; the bad host's spec asks for
    # twice fs.nr_open (2^21), which no account may have, root included
    nr_open = int(Path("/proc/sys/fs/nr_open").read_text())
    _plan(base, {"op": "raise_nofile", "n": 2 * nr_open if bad else resource.getrlimit(resource.RLIMIT_NOFILE)[1]})


# --- file size ------------------------------------------------------------------------------
def preallocate_past_fsize(base: Path, bad: bool) -> None:
    fsize = 16 << 20 if bad else INFINITY
    _plan(base, {"op": "limits", "limits": {"fsize": [fsize, fsize]}},
          {"op": "truncate", "path": f"{base}/out/shard.bin", "size": 64 << 20})


FALLOCATE_SH = "trap '' XFSZ\nulimit -f \"$(cat {b}/fsize)\"\nexec fallocate -l 64M {b}/out/prealloc.bin\n"


def fallocate_past_fsize(base: Path, bad: bool) -> None:
    (base / "out").mkdir()
    write(base / "fsize", "32768\n" if bad else "unlimited\n")  # dash's ulimit -f: 512-byte blocks
    write(base / "start.sh", FALLOCATE_SH.format(b=base))


# --- queued signals -------------------------------------------------------------------------
def sigpending_limit(base: Path, bad: bool) -> None:
    n = 16 if bad else 256
    _plan(base, {"op": "limits", "limits": {"sigpending": [n, n]}}, {"op": "sigqueue", "n": 40})


# --- IPC objects ----------------------------------------------------------------------------
def _in_ns(base: Path, sysctls: dict, *steps: dict) -> None:
    _plan(base, {"op": "sysctl", "set": sysctls}, *steps)


def mq_queues_max(base: Path, bad: bool) -> None:
    _in_ns(base, {"fs.mqueue.queues_max": "4" if bad else "64"},
           {"op": "drop", "uid": JOB_UID}, {"op": "mqueues", "n": 8})


def shm_segments_max(base: Path, bad: bool) -> None:
    _in_ns(base, {"kernel.shmmni": "8" if bad else "4096"}, {"op": "shm", "n": 12})


def msg_queues_max(base: Path, bad: bool) -> None:
    _in_ns(base, {"kernel.msgmni": "8" if bad else "32000"}, {"op": "msgq", "n": 12})


def semop_too_many_ops(base: Path, bad: bool) -> None:
    _in_ns(base, {"kernel.sem": "250 32000 32 128" if bad else "250 32000 500 128"},
           {"op": "sem", "nsems": 64, "nops": 64})


def semget_too_many_sems(base: Path, bad: bool) -> None:
    _in_ns(base, {"kernel.sem": "64 32000 500 128" if bad else "250 32000 500 128"},
           {"op": "sem", "nsems": 128, "nops": 1})


# --- asynchronous I/O and cgroups -----------------------------------------------------------
def aio_depth_past_max(base: Path, bad: bool) -> None:
    # the storage engine's queue depth from its config: 131072 on the bad host (a tuning copied
    # from a host with fs.aio-max-nr raised), 256 on the good ones
    _plan(base, {"op": "aio", "depth": 131072 if bad else 256})


def cgroup_dir(base: Path) -> Path:
    return CGROUP2 / f"tracebase-{base.name}-{os.getpid()}"


def remove_cgroup(base: Path) -> None:
    parent = cgroup_dir(base)
    if parent.exists():
        for child in parent.iterdir():
            if child.is_dir():
                child.rmdir()
        parent.rmdir()


def _cgroup_parent(base: Path, descendants: str) -> Path:
    remove_cgroup(base)
    parent = cgroup_dir(base)
    parent.mkdir()
    (parent / "cgroup.max.descendants").write_text(descendants)
    return parent


def cgroup_descendants_max(base: Path, bad: bool) -> None:
    parent = _cgroup_parent(base, "4" if bad else "max")
    _plan(base, {"op": "cgroups", "parent": str(parent), "n": 6})


# --- routine refusals the good runs get past, turned fatal -----------------------------------
def cache_with_pinned_fds(base: Path, bad: bool) -> None:
    # the fd cache evicts on EMFILE in every run; the bad host's spec gives the job as many
    # progress threads (an eventfd each) as leave no descriptor free under its limit of 64, so
    # the cache's first open has nothing to evict
    _plan(base, _nofile(64), {"op": "cache", "dir": f"{base}/data", "n": 90, "leave": 0 if bad else 24})


def sigqueue_limit_zero(base: Path, bad: bool) -> None:
    # the job's notifications meet the limit and are retried after a drain in every run; the bad
    # host's spec sets RLIMIT_SIGPENDING to 0: nothing to drain, the job gives up after 3 tries
    n = 0 if bad else 8
    _plan(base, {"op": "limits", "limits": {"sigpending": [n, n]}}, {"op": "sigqueue", "n": 20, "retry": True})


def aio_floor_above_max_nr(base: Path, bad: bool) -> None:
    # the engine asks 2^18 events and halves on EAGAIN down to its floor: 65536 is taken on the
    # good hosts; the bad host's config raised the floor to 2^17 (copied from a tuned host)
    _plan(base, {"op": "aio", "depth": 1 << 18, "fallback": True, "floor": 1 << 17 if bad else 1024})


REAL_EIGHTEENTH: list[Scenario] = [
    Scenario("pipe_per_worker_past_nofile", "python3 worker pool (pipe pair per worker)", _quota, pipes_per_worker,
             frozenset({"pipe2", "pipe"}), "EMFILE", lambda b: NO_PATH,
             description="a pipe pair per worker, 160 workers under RLIMIT_NOFILE 256: pipe2 EMFILE"),
    Scenario("log_fd_moved_above_limit", "python3 daemon (F_DUPFD_CLOEXEC 1000)", _quota, log_fd_moved_high,
             frozenset({"fcntl"}), "EINVAL", lambda b: f"{b}/out/job.log",
             description="the log moved to a descriptor >= 1000 under RLIMIT_NOFILE 512: fcntl EINVAL"),
    Scenario("bash_exec_fd_300_past_nofile", "bash exec 300>>log under ulimit -n",
             lambda b: ["/bin/bash", f"{b}/start.sh"], bash_log_fd_300,
             frozenset({"dup2", "dup3"}), "EBADF", lambda b: f"{b}/out/job.log",
             description="bash's exec 300>>log under ulimit -n 256: dup2 EBADF, the log goes nowhere"),
    Scenario("nofile_raised_above_nr_open", "python3 setrlimit(NOFILE, 2^21) as root", _quota, nofile_above_nr_open,
             frozenset({"prlimit64", "setrlimit"}), "EPERM", lambda b: NO_PATH,
             description="the descriptor limit raised above fs.nr_open: EPERM even for root"),
    Scenario("ftruncate_past_fsize", "python3 preallocating with ftruncate", _quota, preallocate_past_fsize,
             frozenset({"ftruncate"}), "EFBIG", lambda b: f"{b}/out/shard.bin",
             description="a 64 MiB shard preallocated with ftruncate under RLIMIT_FSIZE 16 MiB: EFBIG"),
    Scenario("fallocate_past_fsize", "fallocate -l 64M under ulimit -f (SIGXFSZ ignored)",
             lambda b: ["/bin/sh", f"{b}/start.sh"], fallocate_past_fsize,
             frozenset({"fallocate"}), "EFBIG", lambda b: f"{b}/out/prealloc.bin",
             description="util-linux fallocate of 64 MiB under ulimit -f 16 MiB: fallocate EFBIG"),
    Scenario("sigqueue_past_sigpending", "python3 sigqueue to a blocked worker", _quota_as_job, sigpending_limit,
             frozenset({"rt_sigqueueinfo"}), "EAGAIN", lambda b: NO_PATH,
             description="40 queued notifications under RLIMIT_SIGPENDING 16: rt_sigqueueinfo EAGAIN"),
    Scenario("mq_open_past_queues_max", "unshare --ipc: python3 mq_open per worker (as the job)", _quota_ipc,
             mq_queues_max, frozenset({"mq_open"}), "ENOSPC", lambda b: "mqueue:/job-q4",
             description="a POSIX queue per worker past fs.mqueue.queues_max 4: mq_open ENOSPC"),
    Scenario("shmget_past_shmmni", "unshare --ipc: python3 shmget per rank", _quota_ipc, shm_segments_max,
             frozenset({"shmget"}), "ENOSPC", lambda b: NO_PATH,
             description="a SysV segment per rank past kernel.shmmni 8: shmget ENOSPC"),
    Scenario("msgget_past_msgmni", "unshare --ipc: python3 msgget per rank", _quota_ipc, msg_queues_max,
             frozenset({"msgget"}), "ENOSPC", lambda b: NO_PATH,
             description="a SysV message queue per rank past kernel.msgmni 8: msgget ENOSPC"),
    Scenario("semop_past_semopm", "unshare --ipc: python3 one semop of 64 ops", _quota_ipc, semop_too_many_ops,
             frozenset({"semop", "semtimedop"}), "E2BIG", lambda b: NO_PATH,
             description="one semop releasing 64 semaphores past semopm 32: E2BIG"),
    Scenario("semget_past_semmsl", "unshare --ipc: python3 semget of 128", _quota_ipc, semget_too_many_sems,
             frozenset({"semget"}), "EINVAL", lambda b: NO_PATH,
             description="a set of 128 semaphores past semmsl 64: semget EINVAL"),
    Scenario("aio_context_past_max_nr", "python3 io_setup(131072)", _quota, aio_depth_past_max,
             frozenset({"io_setup"}), "EAGAIN", lambda b: NO_PATH,
             description="an AIO context of 131072 events past fs.aio-max-nr 65536: io_setup EAGAIN"),
    Scenario("cgroup_child_past_max_descendants", "python3 supervisor mkdir per worker cgroup", _quota,
             cgroup_descendants_max, frozenset({"mkdir", "mkdirat"}), "EAGAIN",
             lambda b: f"{cgroup_dir(b)}/worker4", teardown=remove_cgroup,
             description="a cgroup v2 child per worker under cgroup.max.descendants 4: mkdir EAGAIN"),
    Scenario("fd_cache_nothing_to_evict", "python3 fd cache (evicts on EMFILE) with pinned eventfds", _quota,
             cache_with_pinned_fds, frozenset({"openat", "open"}), "EMFILE", lambda b: f"{b}/data/in0000.rec",
             description="eventfds leave no descriptor free: the fd cache's first open EMFILE, nothing to evict"),
    Scenario("sigqueue_refused_from_the_first", "python3 sigqueue retried after a drain", _quota_as_job,
             sigqueue_limit_zero, frozenset({"rt_sigqueueinfo"}), "EAGAIN", lambda b: NO_PATH,
             description="RLIMIT_SIGPENDING 0: the first sigqueue EAGAIN, nothing to drain, given up"),
    Scenario("aio_fallback_floor_too_high", "python3 io_setup halved down to a floor", _quota,
             aio_floor_above_max_nr, frozenset({"io_setup"}), "EAGAIN", lambda b: NO_PATH,
             description="io_setup halved on EAGAIN down to a floor of 2^17, still past fs.aio-max-nr"),
]


# --- good-vs-good noise -----------------------------------------------------------------------
def _fd_cache_evicts(base: Path, run: int) -> None:
    _plan(base, _nofile(32), {"op": "cache", "dir": f"{base}/data", "n": random.randint(40, 90)})


def _workers_vary(base: Path, run: int) -> None:
    _plan(base, _nofile(1024), {"op": "pipes", "n": random.randint(8, 40)})


def _sigqueue_retried(base: Path, run: int) -> None:
    _plan(base, {"op": "limits", "limits": {"sigpending": [8, 8]}},
          {"op": "sigqueue", "n": random.randint(12, 30), "retry": True})


def _sysv_vary(base: Path, run: int) -> None:
    _in_ns(base, {"kernel.shmmni": "64", "kernel.msgmni": "64"},
           {"op": "shm", "n": random.randint(2, 12), "size": random.choice([4096, 65536, 1 << 20])},
           {"op": "msgq", "n": random.randint(2, 12)},
           {"op": "sem", "nsems": random.randint(4, 32), "nops": 4})


def _mq_vary(base: Path, run: int) -> None:
    _in_ns(base, {"fs.mqueue.queues_max": "16"}, {"op": "drop", "uid": JOB_UID},
           {"op": "mqueues", "n": random.randint(2, 10)})


def _aio_halved(base: Path, run: int) -> None:
    _plan(base, {"op": "aio", "depth": random.choice([131072, 262144, 524288]), "fallback": True})


def _polls_vary(base: Path, run: int) -> None:
    _plan(base, {"op": "polls", "n": random.randint(1, 8)})


def _cgroups_vary(base: Path, run: int) -> None:
    parent = _cgroup_parent(base, "16")
    _plan(base, {"op": "cgroups", "parent": str(parent), "n": random.randint(2, 8)})


def _emfile_at_any_kind(base: Path, run: int) -> None:
    kinds = random.choices("fpe", k=random.randint(30, 60))
    _plan(base, _nofile(24), {"op": "mixed", "dir": f"{base}/data", "kinds": "".join(kinds)})


def _watch_events_vary(base: Path, run: int) -> None:
    _plan(base, {"op": "watch", "dir": f"{base}/out", "n": random.randint(5, 40), "every": random.randint(1, 6)})


def _soft_limit_varies(base: Path, run: int) -> None:
    n = random.choice([1024, 2048, 4096, 8192])
    _plan(base, {"op": "limits", "limits": {"nofile": [n, 1 << 16]}}, {"op": "pipes", "n": 16})


QUIET_EIGHTEENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("fd_cache_evicts_on_emfile", _quota, _fd_cache_evicts,
                  description="an fd cache of 40 to 90 inputs under a limit of 32: EMFILE, evict, retry"),
    NoAnomalyCase("worker_pipes_vary", _quota, _workers_vary,
                  description="8 to 40 workers with a pipe pair each, under the limit"),
    NoAnomalyCase("sigqueue_eagain_drained_and_retried", _quota_as_job, _sigqueue_retried,
                  description="12 to 30 notifications under RLIMIT_SIGPENDING 8: EAGAIN, drain, retry"),
    NoAnomalyCase("sysv_objects_vary", _quota_ipc, _sysv_vary,
                  description="2 to 12 SysV segments and queues and a semaphore set of varying size"),
    NoAnomalyCase("posix_queues_vary", _quota_ipc, _mq_vary,
                  description="2 to 10 POSIX queues under fs.mqueue.queues_max 16, as the job"),
    NoAnomalyCase("aio_depth_halved_until_taken", _quota, _aio_halved,
                  description="io_setup asked 2^17 to 2^19 events: EAGAIN 1 to 3 times, halved until taken"),
    NoAnomalyCase("poll_timeouts_vary", _quota, _polls_vary,
                  description="a control pipe polled with a 1 ms timeout 1 to 8 times before data comes"),
    NoAnomalyCase("cgroup_children_vary", _quota, _cgroups_vary,
                  description="2 to 8 worker cgroups under cgroup.max.descendants 16"),
    NoAnomalyCase("emfile_recovered_at_varying_calls", _quota, _emfile_at_any_kind,
                  description="an fd cache of files, pipes and eventfds under a limit of 24: EMFILE at "
                              "whichever kind comes next, evict, retry"),
    NoAnomalyCase("inotify_events_through_epoll_vary", _quota, _watch_events_vary,
                  description="a spool watcher's inotify events read through epoll: 5 to 40 files, "
                              "varying reads and polls"),
    NoAnomalyCase("nofile_soft_limit_varies", _quota, _soft_limit_varies,
                  description="a soft descriptor limit of 1024 to 8192 set at start"),
]


def quiet_teardown() -> None:
    """The noise cases' cgroup parents (the fault case removes its own)."""
    for c in QUIET_EIGHTEENTH:
        remove_cgroup(Path(c.name))


# Cases repeating a tested case's kind of fault, left to the benchmark.
BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()

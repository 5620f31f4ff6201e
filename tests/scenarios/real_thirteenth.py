"""A thirteenth set of real programs with one real fault each: the kernel facilities a job's
runtime leans on once it is running -- shared buffers, IPC, timers, memory placement, zero-copy
and event loops -- in (call, errno) pairs the first twelve sets do not have.

- **restartable sequences**: an allocator registering its own rseq area where glibc already
  registered one, its tunable ``glibc.pthread.rseq=0`` dropped from the job's environment (rseq
  EINVAL; tcmalloc's conflict with glibc 2.35+);
- **SysV IPC** (each run in an IPC namespace of its own, ``unshare --ipc``, so nothing is left
  between runs or shared with another session): a token semaphore taken with IPC_NOWAIT when
  no token is left (semop EAGAIN), a set created IPC_EXCL over a crashed rank's leftover
  (semget EEXIST), a token count past SEMVMX (semctl SETVAL ERANGE), a segment id from a state
  file whose segment is gone (shmat EINVAL), a huge-page segment with no huge pages reserved
  (shmget SHM_HUGETLB ENOMEM), a message past msgmax (msgsnd EINVAL);
- **POSIX message queues**: a non-blocking queue that is full (mq_timedsend EAGAIN), a receive
  buffer smaller than the queue's message size (mq_timedreceive EMSGSIZE), a queue created
  O_EXCL over a leftover (mq_open EEXIST);
- **record locks**: two ranks taking their regions of a lock file in opposite order
  (fcntl F_SETLKW EDEADLK);
- **memory placement and code**: a page moved to a NUMA node this host does not have
  (move_pages ENODEV), a JIT's code cache on a noexec mount (mprotect PROT_EXEC EACCES), an
  expedited membarrier without registering first (EPERM);
- **timers**: a period of 1,000,000,000 ns given as nanoseconds (timerfd_settime EINVAL,
  clock_nanosleep EINVAL);
- **zero-copy and preallocation**: splice between two regular files (EINVAL), copy_file_range
  from a staging directory on another file system with no fallback (EXDEV), a collapse-range
  fallocate on tmpfs (EOPNOTSUPP);
- **event loops**: a runtime that requires io_uring under a container profile that refuses it
  (io_uring_setup EPERM from a seccomp filter), an fd registered with epoll twice (epoll_ctl
  EEXIST), a file-access monitor asking for content events as nobody (fanotify_init EPERM).

Every fault goes through one python3 program, ``rt.py``, a runtime's start-up as a plan of
steps (ctypes for what the standard library lacks), so each fault sits among the other steps'
successful calls. Same types and harness as real.py (`Scenario`, `NoAnomalyCase`); the
expectations are what `strace -f` shows a person looking for the fault (the SysV, rseq, NUMA
and timer calls have no path: ``*``; a POSIX queue is ``mqueue:/NAME``).

The good-vs-good cases (`QUIET_THIRTEENTH`) carry the noise of such runtimes: io_uring refused
in one run and the runtime falling back to epoll, copy_file_range EXDEV and the read/write
fallback in every run, non-blocking polls of empty message queues and taken semaphores
(ENOMSG/EAGAIN) a varying number of times, a queue created O_EXCL by whichever rank is first
(EEXIST and a join in one run), memfd and NUMA sizes that vary, timer periods that vary. Three
more put a fallback only in the last run, the one diffed against the others (a different-but-
good run: io_uring_setup EPERM, mq_open EEXIST, copy_file_range EXDEV, each recovered from);
the differ passes over them as recovered fallbacks (baseline/run/rules/retries.py, `_recovered_fallbacks`).
"""

from __future__ import annotations

import atexit
import os
import random
import shutil
import subprocess
from pathlib import Path

from .catalog import mount_tmpfs, umount, write
from .harness import NoAnomalyCase, Scenario

PY3 = "/usr/bin/python3"
NO_PATH = "*"
# the job's IPC objects: one name per session (the runs' IPC namespaces keep them apart from
# other sessions anyway; the name only has to be one the good and bad runs share)
MQ = "/tb13-jobq"

RT_PY = r'''
import ctypes, fcntl, os, select, sys, time
base = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
NR = {"seccomp": 317, "io_uring_setup": 425, "membarrier": 324, "move_pages": 279, "rseq": 334}
IPC_CREAT, IPC_EXCL, IPC_NOWAIT, IPC_RMID, SETVAL, SHM_HUGETLB = 0o1000, 0o2000, 0o4000, 0, 16, 0o4000
libc.shmat.restype = ctypes.c_void_p
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
libc.mq_send.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint]
libc.mq_receive.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
libc.mq_receive.restype = ctypes.c_ssize_t


def die(msg):
    sys.stderr.write(f"rt: {msg}\n")
    sys.exit(1)


def check(ret, what):
    if ret == -1 or ret is None:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), what)
    return ret


class SemBuf(ctypes.Structure):
    _fields_ = [("num", ctypes.c_ushort), ("op", ctypes.c_short), ("flg", ctypes.c_short)]


class MqAttr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]


class Itimerspec(ctypes.Structure):
    _fields_ = [("isec", ctypes.c_long), ("insec", ctypes.c_long), ("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def ring_or_none():
    """An io_uring of 64 entries, or None when the kernel or a profile refuses it."""
    params = ctypes.create_string_buffer(120)
    fd = libc.syscall(NR["io_uring_setup"], 64, params)
    if fd < 0:
        e = ctypes.get_errno()
        return None, e
    return fd, 0


def sem_set(key, flags=IPC_CREAT | 0o600):
    return check(libc.semget(key, 1, flags), "semget")


held = []
for line in open(os.path.join(base, "plan")):
    op, *a = line.split()
    try:
        if op == "probe":  # an optional file: missing is fine
            try:
                with open(a[0]) as fh:
                    fh.read()
            except OSError:
                pass
        elif op == "read":
            with open(a[0]) as fh:
                fh.read()
        # --- sealed memory
        elif op == "memfd":  # size seal_write: the ring buffer, sealed, then its header written
            fd = os.memfd_create("ring", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, int(a[0]))
            seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
            if a[1] == "1":  # the producer's release seals writes before the header is in
                seals |= fcntl.F_SEAL_WRITE
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
            os.write(fd, b"RING0001")  # the header, at offset 0
            fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            held.append(fd)
        # --- SysV IPC
        elif op == "sem_tokens":  # key value: the job's token semaphore, made with its count
            sid = sem_set(int(a[0]))
            check(libc.semctl(sid, 0, SETVAL, int(a[1])), "semctl")
        elif op == "sem_take":  # key: a token, without waiting
            sid = sem_set(int(a[0]))
            check(libc.semop(sid, ctypes.byref(SemBuf(0, -1, IPC_NOWAIT)), 1), "semop")
        elif op == "sem_take_retry":  # key tries: a token, polled (a helper gives one back)
            sid = sem_set(int(a[0]))
            for _ in range(int(a[1])):
                if libc.semop(sid, ctypes.byref(SemBuf(0, -1, IPC_NOWAIT)), 1) == 0:
                    break
                check(-1 if ctypes.get_errno() != 11 else 0, "semop")
                time.sleep(0.002)
            else:
                die("no token")
        elif op == "sem_give_later":  # key delay: a helper process gives a token back later
            if os.fork() == 0:
                time.sleep(float(a[1]))
                libc.semop(sem_set(int(a[0])), ctypes.byref(SemBuf(0, 1, 0)), 1)
                os._exit(0)
        elif op == "sem_leftover":  # key: a crashed rank's set, never removed
            sem_set(int(a[0]))
        elif op == "sem_excl":  # key: the job's own set, which must be new
            held.append(sem_set(int(a[0]), IPC_CREAT | IPC_EXCL | 0o600))
        elif op == "shm_state":  # file: a segment made now, its id written for the next rank
            sid = check(libc.shmget(0, 65536, IPC_CREAT | 0o600), "shmget")
            with open(a[0], "w") as fh:
                fh.write(f"{sid}\n")
        elif op == "shm_rm":  # file: the segment named there removed (a rank's clean-up)
            libc.shmctl(int(open(a[0]).read()), IPC_RMID, None)
        elif op == "shm_attach":  # file: attach the segment named there
            addr = libc.shmat(int(open(a[0]).read()), None, 0)
            if addr in (None, 2**64 - 1):
                check(-1, "shmat")
            libc.shmdt(ctypes.c_void_p(addr))
        elif op == "shm_huge":  # size huge: the job's pinned buffer, huge pages when asked
            flags = IPC_CREAT | 0o600 | (SHM_HUGETLB if a[1] == "1" else 0)
            sid = check(libc.shmget(0, int(a[0]), flags), "shmget")
            libc.shmctl(sid, IPC_RMID, None)
        elif op == "msg_send":  # size: one message of size bytes on the job's queue
            qid = check(libc.msgget(0, IPC_CREAT | 0o600), "msgget")
            buf = ctypes.create_string_buffer(8 + int(a[0]))
            ctypes.c_long.from_buffer(buf).value = 1
            check(libc.msgsnd(qid, buf, int(a[0]), IPC_NOWAIT), "msgsnd")
            check(libc.msgrcv(qid, buf, int(a[0]), 0, IPC_NOWAIT), "msgrcv")
            libc.msgctl(qid, IPC_RMID, None)
        elif op == "msg_poll":  # delay: poll an empty queue until a helper's message comes
            qid = check(libc.msgget(0, IPC_CREAT | 0o600), "msgget")
            buf = ctypes.create_string_buffer(72)
            if os.fork() == 0:
                time.sleep(float(a[0]))
                ctypes.c_long.from_buffer(buf).value = 1
                libc.msgsnd(qid, buf, 64, 0)
                os._exit(0)
            while libc.msgrcv(qid, buf, 64, 0, IPC_NOWAIT) < 0:
                check(-1 if ctypes.get_errno() != 42 else 0, "msgrcv")  # ENOMSG: not yet
                time.sleep(0.002)
            os.wait()
            libc.msgctl(qid, IPC_RMID, None)
        # --- POSIX message queues
        elif op in ("mq_make", "mq_excl", "mq_join"):  # name maxmsg msgsize
            attr = MqAttr(0, int(a[1]), int(a[2]), 0)
            flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | (os.O_EXCL if op != "mq_make" else 0)
            q = libc.mq_open(a[0].encode(), flags, 0o600, ctypes.byref(attr))
            if q == -1 and op == "mq_join" and ctypes.get_errno() == 17:
                q = libc.mq_open(a[0].encode(), os.O_RDWR | os.O_NONBLOCK, 0, None)  # another rank made it
            held.append(check(q, "mq_open"))
        elif op == "mq_send":  # n: n messages on the last queue opened, none read
            for i in range(int(a[0])):
                check(libc.mq_send(held[-1], b"tick", 4, 0), "mq_send")
        elif op == "mq_recv":  # bufsize: one message back
            buf = ctypes.create_string_buffer(int(a[0]))
            check(libc.mq_receive(held[-1], buf, int(a[0]), None), "mq_receive")
        elif op == "mq_unlink":
            libc.mq_unlink(a[0].encode())
        # --- record locks
        elif op == "lock_pair":  # file region: the rank's worker takes `region` and then region 0,
            # which this process holds while it takes region 1
            fd = os.open(a[0], os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                cfd = os.open(a[0], os.O_RDWR)
                try:
                    fcntl.lockf(cfd, fcntl.LOCK_EX, 1, int(a[1]))
                    os.write(w, b"x")
                    fcntl.lockf(cfd, fcntl.LOCK_EX, 1, 0)
                except OSError as e:
                    sys.stderr.write(f"rt: worker lock: {e.strerror}\n")
                    os._exit(1)
                os._exit(0)
            os.read(r, 1)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX, 1, 1)
            finally:
                os.close(fd)  # the worker gets region 0 when this process lets go
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                die("worker failed to lock")
        # --- memory placement and code
        elif op == "move_page":  # node npages: the job's buffer pages moved to `node`
            n = int(a[1])
            addr = libc.mmap(None, n * 4096, 3, 0x22, -1, 0)
            ctypes.memset(addr, 1, n * 4096)
            pages = (ctypes.c_void_p * n)(*[addr + i * 4096 for i in range(n)])
            nodes = (ctypes.c_int * n)(*[int(a[0])] * n)
            status = (ctypes.c_int * n)()
            check(libc.syscall(NR["move_pages"], 0, n, pages, nodes, status, 2), "move_pages")
        elif op == "jit":  # dir: the code cache file mapped, then made executable
            path = os.path.join(a[0], "code.cache")
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o700)
            os.write(fd, b"\xc3" * 4096)
            addr = libc.mmap(None, 4096, 1, 1, fd, 0)
            check(libc.mprotect(addr, 4096, 5), "mprotect")
            os.close(fd)
        elif op == "rseq":  # the allocator's per-CPU caches register their own rseq area
            area = libc.mmap(None, 4096, 3, 0x22, -1, 0)  # never freed: the kernel writes to it
            check(libc.syscall(NR["rseq"], ctypes.c_void_p(area), 32, 0, 0x53053053), "rseq")
        elif op == "membarrier":  # register: 1 registers for expedited barriers first
            if a[0] == "1":
                check(libc.syscall(NR["membarrier"], 16, 0, 0), "membarrier")  # REGISTER_PRIVATE_EXPEDITED
            check(libc.syscall(NR["membarrier"], 8, 0, 0), "membarrier")  # PRIVATE_EXPEDITED
        # --- timers
        elif op == "timerfd":  # period_ns: the progress tick, as sec/nsec from the config's ns
            fd = check(libc.timerfd_create(1, 0o2000000), "timerfd_create")
            ns = int(a[0])
            spec = Itimerspec(0, ns, 0, ns) if a[1:] == ["raw"] else Itimerspec(ns // 10**9, ns % 10**9,
                                                                               ns // 10**9, ns % 10**9)
            check(libc.timerfd_settime(fd, 0, ctypes.byref(spec), None), "timerfd_settime")
            os.close(fd)
        elif op == "nap":  # ns raw: a backoff sleep on the monotonic clock
            ns = int(a[0])
            ts = (ctypes.c_long * 2)(0, ns) if a[1:] == ["raw"] else (ctypes.c_long * 2)(ns // 10**9, ns % 10**9)
            err = libc.clock_nanosleep(1, 0, ts, None)
            if err:
                raise OSError(err, os.strerror(err), "clock_nanosleep")
        # --- zero-copy and preallocation
        elif op == "splice_out":  # src dst: the log shipper's zero-copy hop, no fallback
            src = os.open(a[0], os.O_RDONLY)
            dst = os.open(a[1], os.O_WRONLY | os.O_CREAT, 0o644)
            if a[2:] == ["pipe"]:  # through a pipe, as splice wants
                r, w = os.pipe()
                n = os.splice(src, w, 65536)
                os.splice(r, dst, n)
            else:
                os.splice(src, dst, 65536)
        elif op == "cfr":  # src dst fallback: copy_file_range; fallback 1: read/write on EXDEV
            src = os.open(a[0], os.O_RDONLY)
            dst = os.open(a[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                while os.copy_file_range(src, dst, 1 << 20):
                    pass
            except OSError as e:
                if e.errno != 18 or a[2] != "1":
                    raise
                while chunk := os.read(src, 65536):
                    os.write(dst, chunk)
            os.close(src)
            os.close(dst)
        elif op == "falloc":  # file mode: the log's head dropped (3 punch, 8 collapse)
            fd = os.open(a[0], os.O_RDWR)
            check(libc.fallocate(fd, int(a[1]), 0, 4096), "fallocate")
            os.close(fd)
        elif op == "write_file":  # file kib
            with open(a[0], "wb") as fh:
                fh.write(b"x" * (1024 * int(a[1])))
        # --- event loops
        elif op == "profile":  # the container's seccomp profile: io_uring_setup refused EPERM
            prog = (SockFilter * 4)(SockFilter(0x20, 0, 0, 0), SockFilter(0x15, 0, 1, NR["io_uring_setup"]),
                                    SockFilter(0x06, 0, 0, 0x00050000 | 1), SockFilter(0x06, 0, 0, 0x7FFF0000))
            check(libc.prctl(38, 1, 0, 0, 0), "prctl")
            check(libc.syscall(NR["seccomp"], 1, 0, ctypes.byref(SockFprog(4, prog))), "seccomp")
        elif op == "ring":  # the runtime's I/O ring, required
            fd, e = ring_or_none()
            if fd is None:
                raise OSError(e, os.strerror(e), "io_uring_setup")
            held.append(fd)
        elif op == "ring_or_epoll":  # the runtime's I/O ring, or epoll when it is refused
            fd, e = ring_or_none()
            if fd is None:
                ep = select.epoll()
                ep.register(os.eventfd(0), select.EPOLLIN)
                held.append(ep)
            else:
                held.append(fd)
        elif op == "epoll_fds":  # names...: the loop's fds registered; a name twice is registered twice
            ep = select.epoll()
            fds = {}
            for name in a:
                if name not in fds:
                    fds[name] = os.eventfd(0)
                ep.register(fds[name], select.EPOLLIN)
            held.append(ep)
        elif op == "fanotify":  # class: the monitor's notification class (0 notif, 4 content)
            fd = check(libc.fanotify_init(int(a[0]), 0), "fanotify_init")
            os.close(fd)
        elif op == "pause":
            time.sleep(float(a[0]))
        else:
            die(f"unknown step {op}")
    except OSError as e:
        die(f"{op} {a[0] if a else ''}: {e.strerror}")
print("rt: ready")
'''


def _rt(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/rt.py", str(b)]


def _rt_ipc(b: Path) -> list[str]:
    """rt.py in an IPC namespace of its own: SysV objects and POSIX queues start empty each run
    and vanish with it."""
    return ["/usr/bin/unshare", "--ipc", *_rt(b)]


def _usual(base: Path, *mid: str) -> None:
    """What every start does around its own steps: an optional host file probed (missing in
    every run), the job's config read."""
    write(base / "rt.py", RT_PY)
    write(base / "job.conf", "ranks 2\n")
    write(base / "plan", "\n".join(["probe /etc/tracebase-rt.conf", f"probe {base}/rt.local",
                                    f"read {base}/job.conf", *mid]) + "\n")


# --- restartable sequences ------------------------------------------------------------------
def rseq_owner(base: Path, bad: bool) -> None:
    # an allocator with per-CPU caches registers the thread's rseq area itself, which it may
    # only when glibc does not (GLIBC_TUNABLES=glibc.pthread.rseq=0 in the job's environment);
    # the bad run's environment file lost the tunable
    write(base / "env", ("RT_PROFILE=1" if bad else "GLIBC_TUNABLES=glibc.pthread.rseq=0") + "\n")
    _usual(base, "rseq")


def _rt_env(b: Path) -> list[str]:
    return ["/bin/sh", "-c", f"exec env $(cat {b}/env) {PY3} -S {b}/rt.py {b}"]


# --- SysV IPC --------------------------------------------------------------------------------
KEY = 0x7B13


def sem_no_token(base: Path, bad: bool) -> None:
    # the job's token count comes from the config: the bad run's says 0 (a typo for 10)
    _usual(base, f"sem_tokens {KEY} {0 if bad else 10}", f"sem_take {KEY}")


def sem_leftover(base: Path, bad: bool) -> None:
    _usual(base, *([f"sem_leftover {KEY}"] if bad else []), f"sem_excl {KEY}")


def sem_value_range(base: Path, bad: bool) -> None:
    _usual(base, f"sem_tokens {KEY} {40000 if bad else 4000}", f"sem_take {KEY}")


def shm_gone(base: Path, bad: bool) -> None:
    _usual(base, f"shm_state {base}/shm.id", *([f"shm_rm {base}/shm.id"] if bad else []), f"shm_attach {base}/shm.id")


def shm_hugetlb(base: Path, bad: bool) -> None:
    _usual(base, f"shm_huge 4194304 {int(bad)}")


def msg_too_big(base: Path, bad: bool) -> None:
    _usual(base, f"msg_send {16384 if bad else 4096}")


# --- POSIX message queues --------------------------------------------------------------------
def mq_full(base: Path, bad: bool) -> None:
    _usual(base, f"mq_make {MQ} 8 64", f"mq_send {9 if bad else 6}")


def mq_small_buffer(base: Path, bad: bool) -> None:
    _usual(base, f"mq_make {MQ} 8 256", "mq_send 1", f"mq_recv {128 if bad else 256}")


def mq_leftover(base: Path, bad: bool) -> None:
    _usual(base, *([f"mq_make {MQ} 8 64"] if bad else []), f"mq_excl {MQ} 8 64")


# --- record locks ----------------------------------------------------------------------------
def lock_order(base: Path, bad: bool) -> None:
    # the worker's region comes from the rank table: its own region 2 in the good runs, the
    # launcher's region 1 in the bad run's (taken before region 0, the opposite order)
    _usual(base, f"lock_pair {base}/job.lock {1 if bad else 2}")


# --- memory placement and code ---------------------------------------------------------------
def numa_node_missing(base: Path, bad: bool) -> None:
    # the placement comes from a topology file copied from a two-socket host in the bad run
    _usual(base, f"move_page {1 if bad else 0} 4")


def jit_noexec(base: Path, bad: bool) -> None:
    # the runtime's code cache lives on the job's scratch tmpfs, mounted noexec in the bad run
    mount_tmpfs(base / "scratch", "4m")
    if bad:
        subprocess.run(["mount", "-o", "remount,noexec", str(base / "scratch")], check=True)
    _usual(base, f"jit {base}/scratch")


def membarrier_unregistered(base: Path, bad: bool) -> None:
    _usual(base, f"membarrier {0 if bad else 1}")


# --- timers ----------------------------------------------------------------------------------
def timerfd_raw_ns(base: Path, bad: bool) -> None:
    # the tick's period, 1 s, goes into tv_nsec as it is in the bad run's build
    _usual(base, "timerfd 1000000000" + (" raw" if bad else ""))


def nap_raw_ns(base: Path, bad: bool) -> None:
    # the backoff's 1 s (written as nanoseconds) goes into tv_nsec unsplit in the bad run;
    # the good runs sleep 1 ms
    _usual(base, "nap 1000000000 raw" if bad else "nap 1000000")


# --- zero-copy and preallocation -------------------------------------------------------------
def splice_files(base: Path, bad: bool) -> None:
    write(base / "app.log", "line\n" * 200)
    _usual(base, f"splice_out {base}/app.log {base}/ship.out" + ("" if bad else " pipe"))


def cfr_cross_fs(base: Path, bad: bool) -> None:
    # the checkpoint is staged under stage/ and copied into ckpt/; the bad run's host mounts
    # stage/ as a tmpfs of its own, and the copier has no fallback
    (base / "ckpt").mkdir()
    if bad:
        mount_tmpfs(base / "stage", "4m")
    else:
        (base / "stage").mkdir()
    _usual(base, f"write_file {base}/stage/shard0 64", f"cfr {base}/stage/shard0 {base}/ckpt/shard0 0")


def falloc_collapse(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "logs", "4m")
    _usual(base, f"write_file {base}/logs/trace.log 16", f"falloc {base}/logs/trace.log {8 if bad else 3}")


# --- event loops -----------------------------------------------------------------------------
def ring_refused(base: Path, bad: bool) -> None:
    _usual(base, *(["profile"] if bad else []), "ring")


def epoll_twice(base: Path, bad: bool) -> None:
    # a reconnect path registers the control fd again in the bad run's version
    _usual(base, "epoll_fds wake ctl data" + (" ctl" if bad else ""))


def fanotify_content(base: Path, bad: bool) -> None:
    # unprivileged groups must report file ids (FAN_REPORT_FID, 0x200); the bad run's monitor
    # also asks for the content class (4), which needs CAP_SYS_ADMIN
    _usual(base, f"fanotify {0x204 if bad else 0x200}")


def _umount_all(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


REAL_THIRTEENTH: list[Scenario] = [
    Scenario("rseq_registered_twice", "sh: env (tunables from a file) python3 rt: registers its rseq area",
             _rt_env, rseq_owner, frozenset({"rseq"}), "EINVAL", lambda b: NO_PATH,
             description="glibc already registered the thread's rseq (its tunable glibc.pthread.rseq=0 "
             "dropped from the job's environment): the allocator's own registration fails EINVAL"),
    Scenario("sysv_token_semaphore_empty", "python3 rt (unshare --ipc): semop IPC_NOWAIT on the token set",
             _rt_ipc, sem_no_token, frozenset({"semop", "semtimedop"}), "EAGAIN", lambda b: NO_PATH,
             description="the config's token count is 0: semop IPC_NOWAIT EAGAIN"),
    Scenario("sysv_semaphore_leftover_excl", "python3 rt (unshare --ipc): semget IPC_CREAT|IPC_EXCL",
             _rt_ipc, sem_leftover, frozenset({"semget"}), "EEXIST", lambda b: NO_PATH,
             description="a crashed rank's set under the job's key: semget EEXIST"),
    Scenario("sysv_semaphore_value_past_semvmx", "python3 rt (unshare --ipc): semctl SETVAL 40000",
             _rt_ipc, sem_value_range, frozenset({"semctl"}), "ERANGE", lambda b: NO_PATH,
             description="a token count past SEMVMX (32767): semctl ERANGE"),
    Scenario("sysv_shm_id_of_removed_segment", "python3 rt (unshare --ipc): shmat of the id in shm.id",
             _rt_ipc, shm_gone, frozenset({"shmat"}), "EINVAL", lambda b: NO_PATH,
             description="the segment in the state file was removed: shmat EINVAL"),
    Scenario("sysv_shm_hugetlb_none_reserved", "python3 rt (unshare --ipc): shmget SHM_HUGETLB 4 MiB",
             _rt_ipc, shm_hugetlb, frozenset({"shmget"}), "ENOMEM", lambda b: NO_PATH,
             description="huge pages asked for, none reserved (vm.nr_hugepages 0): shmget ENOMEM"),
    Scenario("sysv_message_past_msgmax", "python3 rt (unshare --ipc): msgsnd of 16 KiB",
             _rt_ipc, msg_too_big, frozenset({"msgsnd"}), "EINVAL", lambda b: NO_PATH,
             description="a message past kernel.msgmax (8192): msgsnd EINVAL"),
    Scenario("mqueue_full_nonblocking", "python3 rt (unshare --ipc): 9 mq_send on a queue of 8",
             _rt_ipc, mq_full, frozenset({"mq_timedsend"}), "EAGAIN", lambda b: f"mqueue:{MQ}",
             description="the consumer is not draining: mq_timedsend EAGAIN on the full O_NONBLOCK queue"),
    Scenario("mqueue_receive_buffer_small", "python3 rt (unshare --ipc): mq_receive into 128 bytes",
             _rt_ipc, mq_small_buffer, frozenset({"mq_timedreceive"}), "EMSGSIZE", lambda b: f"mqueue:{MQ}",
             description="a buffer smaller than the queue's mq_msgsize (256): mq_timedreceive EMSGSIZE"),
    Scenario("mqueue_excl_leftover", "python3 rt (unshare --ipc): mq_open O_CREAT|O_EXCL",
             _rt_ipc, mq_leftover, frozenset({"mq_open"}), "EEXIST", lambda b: f"mqueue:{MQ}",
             description="a leftover queue under the job's name: mq_open EEXIST"),
    Scenario("record_locks_opposite_order", "python3 rt: launcher and worker lock regions of job.lock",
             _rt, lock_order, frozenset({"fcntl"}), "EDEADLK", lambda b: f"{b}/job.lock",
             description="the worker takes region 1 then 0 while the launcher holds 0 and asks for 1: "
             "F_SETLKW EDEADLK (for whichever closes the cycle)"),
    Scenario("move_pages_to_missing_node", "python3 rt: move_pages of the buffer to node 1",
             _rt, numa_node_missing, frozenset({"move_pages"}), "ENODEV", lambda b: NO_PATH,
             description="a topology file from a two-socket host on a one-node host: move_pages ENODEV"),
    Scenario("jit_code_cache_noexec", "python3 rt: mmap code.cache, mprotect PROT_EXEC",
             _rt, jit_noexec, frozenset({"mprotect"}), "EACCES", lambda b: NO_PATH,
             teardown=_umount_all("scratch"),
             description="the scratch tmpfs is mounted noexec: mprotect PROT_EXEC EACCES"),
    Scenario("membarrier_expedited_unregistered", "python3 rt: membarrier PRIVATE_EXPEDITED",
             _rt, membarrier_unregistered, frozenset({"membarrier"}), "EPERM", lambda b: NO_PATH,
             description="the expedited barrier without REGISTER_PRIVATE_EXPEDITED: membarrier EPERM"),
    Scenario("timerfd_period_nsec_unsplit", "python3 rt: timerfd_settime of 1e9 ns in tv_nsec",
             _rt, timerfd_raw_ns, frozenset({"timerfd_settime"}), "EINVAL", lambda b: NO_PATH,
             description="tv_nsec 1,000,000,000: timerfd_settime EINVAL"),
    Scenario("backoff_sleep_nsec_unsplit", "python3 rt: clock_nanosleep of 1e9 ns in tv_nsec",
             _rt, nap_raw_ns, frozenset({"clock_nanosleep"}), "EINVAL", lambda b: NO_PATH,
             description="tv_nsec 1,000,000,000: clock_nanosleep EINVAL"),
    Scenario("splice_file_to_file", "python3 rt: splice app.log -> ship.out without a pipe",
             _rt, splice_files, frozenset({"splice"}), "EINVAL", lambda b: NO_PATH,
             description="neither end a pipe: splice EINVAL"),
    Scenario("copy_file_range_staging_other_fs", "python3 rt: copy_file_range stage/shard0 -> ckpt/shard0",
             _rt, cfr_cross_fs, frozenset({"copy_file_range"}), "EXDEV", lambda b: f"{b}/stage/shard0",
             teardown=_umount_all("stage"),
             description="stage/ is a tmpfs of its own and the copier has no fallback: copy_file_range EXDEV"),
    Scenario("fallocate_collapse_on_tmpfs", "python3 rt: fallocate(COLLAPSE_RANGE) of the log's head",
             _rt, falloc_collapse, frozenset({"fallocate"}), "EOPNOTSUPP", lambda b: f"{b}/logs/trace.log",
             teardown=_umount_all("logs"),
             description="tmpfs punches holes but does not collapse ranges: fallocate EOPNOTSUPP"),
    Scenario("io_uring_refused_by_profile", "python3 rt: seccomp profile, then io_uring_setup (required)",
             _rt, ring_refused, frozenset({"io_uring_setup"}), "EPERM", lambda b: NO_PATH,
             description="the container's profile refuses io_uring_setup EPERM; the runtime has no fallback"),
    Scenario("epoll_fd_registered_twice", "python3 rt: epoll_ctl ADD of the control fd twice",
             _rt, epoll_twice, frozenset({"epoll_ctl"}), "EEXIST", lambda b: NO_PATH,
             description="a reconnect path registers the control eventfd again: epoll_ctl EEXIST"),
    Scenario("fanotify_content_class_nobody", "python3 rt (nobody): fanotify_init(FAN_CLASS_CONTENT)",
             _rt, fanotify_content, frozenset({"fanotify_init"}), "EPERM", lambda b: NO_PATH, unprivileged=True,
             description="content-class notifications need CAP_SYS_ADMIN: fanotify_init EPERM"),
]


# --- good-vs-good noise ------------------------------------------------------------------------
def _ring_fallback(base: Path, run: int) -> None:
    # one host's container profile refuses io_uring (pinned to one run): the runtime uses epoll
    _usual(base, *(["profile"] if run == 1 else []), "ring_or_epoll")


# the noise case's staging directory: on /dev/shm (a tmpfs), the checkpoint beside the case's
# directory (the root file system), so copy_file_range crosses file systems in every run; a
# mount of the case's own would outlive the harness's clean-up of a noise case's directory
STAGE = Path(f"/dev/shm/tracebase-stage.{os.getpid()}")


def _copy_fallback(base: Path, run: int) -> None:
    shutil.rmtree(STAGE, ignore_errors=True)
    STAGE.mkdir()
    (base / "ckpt").mkdir()
    _usual(base, f"write_file {STAGE}/shard0 {random.choice([16, 64, 256])}",
           f"cfr {STAGE}/shard0 {base}/ckpt/shard0 1")


def _msg_polls(base: Path, run: int) -> None:
    _usual(base, f"msg_poll {random.choice(['0.01', '0.03', '0.06'])}")


def _sem_retries(base: Path, run: int) -> None:
    _usual(base, f"sem_tokens {KEY} 0", f"sem_give_later {KEY} {random.choice(['0.01', '0.03', '0.06'])}",
           f"sem_take_retry {KEY} 20000")  # ~40 s of polls at most: a loaded host


def _mq_first_rank(base: Path, run: int) -> None:
    # whichever rank comes first makes the queue; in one run another rank was first (EEXIST)
    _usual(base, *([f"mq_make {MQ} 8 64"] if run == 1 else []), f"mq_join {MQ} 8 64", "mq_send 2", "mq_recv 64")


def _memfd_sizes(base: Path, run: int) -> None:
    _usual(base, f"memfd {random.choice([4096, 65536, 1048576])} 0")


def _numa_sizes(base: Path, run: int) -> None:
    _usual(base, f"move_page 0 {random.choice([1, 4, 16])}")


def _timer_periods(base: Path, run: int) -> None:
    _usual(base, f"timerfd {random.choice([1000000, 5000000, 2000000000])}",
           f"nap {random.choice([100000, 1000000, 2000000])}")


# The same fallbacks met only in the last run, the one diffed against the others: a
# different-but-good run (recovered fallbacks: quiet).
def _ring_fallback_last(base: Path, run: int) -> None:
    _usual(base, *(["profile"] if run == 2 else []), "ring_or_epoll")


def _mq_joined_last(base: Path, run: int) -> None:
    _usual(base, *([f"mq_make {MQ} 8 64"] if run == 2 else []), f"mq_join {MQ} 8 64", "mq_send 2", "mq_recv 64")


def _copy_fallback_last(base: Path, run: int) -> None:
    shutil.rmtree(STAGE, ignore_errors=True)
    STAGE.mkdir()
    src = STAGE if run == 2 else base  # the last host stages on /dev/shm
    (base / "ckpt").mkdir()
    _usual(base, f"write_file {src}/shard0 64", f"cfr {src}/shard0 {base}/ckpt/shard0 1")


QUIET_THIRTEENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("io_uring_refused_epoll_fallback", _rt, _ring_fallback,
                  description="io_uring_setup EPERM under one host's profile; the runtime falls back to epoll"),
    NoAnomalyCase("copy_file_range_exdev_fallback", _rt, _copy_fallback,
                  description="copy_file_range EXDEV across tmpfs mounts in every run, then read/write; sizes vary"),
    NoAnomalyCase("msgrcv_nowait_polls_vary", _rt_ipc, _msg_polls,
                  description="msgrcv IPC_NOWAIT ENOMSG until a helper's message arrives, a varying number of times"),
    NoAnomalyCase("semop_nowait_retries_vary", _rt_ipc, _sem_retries,
                  description="semop IPC_NOWAIT EAGAIN until a helper gives a token back"),
    NoAnomalyCase("mqueue_made_by_another_rank", _rt_ipc, _mq_first_rank,
                  description="mq_open O_EXCL EEXIST and a join in one run, a create in the others"),
    NoAnomalyCase("memfd_ring_sizes_vary", _rt, _memfd_sizes, description="the sealed ring's size varies"),
    NoAnomalyCase("numa_pages_moved_vary", _rt, _numa_sizes, description="1 to 16 pages moved to node 0"),
    NoAnomalyCase("timer_periods_vary", _rt, _timer_periods, description="tick periods and backoffs vary"),
    NoAnomalyCase("io_uring_refused_only_in_last_run", _rt, _ring_fallback_last,
                  description="io_uring_setup EPERM and the epoll fallback in the diffed run only"),
    NoAnomalyCase("mqueue_joined_only_in_last_run", _rt_ipc, _mq_joined_last,
                  description="mq_open O_EXCL EEXIST, then the join, in the diffed run only"),
    NoAnomalyCase("copy_exdev_fallback_only_in_last_run", _rt, _copy_fallback_last,
                  description="copy_file_range EXDEV and the read/write fallback in the diffed run only"),
]


def quiet_teardown() -> None:
    """Remove the noise case's staging directory (mounts go with a case's teardown, IPC
    objects with the run's namespace)."""
    shutil.rmtree(STAGE, ignore_errors=True)


atexit.register(quiet_teardown)


# Cases repeating a tested case's kind of fault, left to the benchmark (the CI subset stays
# under ~90 s).
TESTED_HERE = frozenset({s.name for s in REAL_THIRTEENTH})
QUIET_TESTED_HERE = frozenset({c.name for c in QUIET_THIRTEENTH})
BENCH_ONLY = frozenset(s.name for s in REAL_THIRTEENTH) - TESTED_HERE
QUIET_BENCH_ONLY = frozenset(c.name for c in QUIET_THIRTEENTH) - QUIET_TESTED_HERE

"""A fifty-second set of real programs with one real fault each: **a GPU/RDMA job's prolog and
memory-side preflight on a compute node** -- what runs before an RDMA job starts: the locked-memory
limit the job's memory registrations (ibv_reg_mr pins its buffers) will meet, the job's hugetlbfs
mount and its quota, the NCCL segments in the job's /dev/shm, the per-user shared ring a root
health check may have left, the I/O class of the data stager, the device nodes of the HCA, the
SysV segment and the pod's IPC sysctls in the job's IPC namespace, the binding of the job's NCCL
proxy daemon, the memlock check and the rank-per-CPU check of the prolog -- with the tools a prolog
uses for that on this Debian host (python3 with ctypes/mmap for the pinned buffers, truncate, ionice,
stat, unshare + sysctl + ipcmk, taskset, prlimit, nproc).

Earlier sets touched RLIMIT_MEMLOCK (fifth: a plain ``ulimit -l`` before mlock; forty-fifth: a
compiled probe's mlock) and the CPU map (forty-fifth); none ran a job's prolog. Each case's good runs
are jobs of other shapes (other buffer sizes, other segment counts, other HCA counts, other limits
that suffice), and the bad run is yet another job plus one real fault:

- the pinned-buffer registration (python3, ctypes ``mlock``) as the job's user after the prolog
  sources the node's limits (``ulimit -l``); the bad node's limits file lost the RDMA line (the
  distribution's 1 MiB default): mlock ENOMEM;
- the NCCL-style ``mlockall(MCL_FUTURE)`` of the job's launcher (python3, ctypes) under ``prlimit
  --memlock`` from the node's prolog config, which on the bad node says 0 (a container default):
  mlockall EPERM;
- the job's ring buffer in its hugetlbfs mount (python3: ftruncate + mmap of a hugetlbfs file); the
  bad job's mount got a quota (``size=2M``) smaller than its buffer: mmap ENOMEM;
- the NCCL segment in the job's /dev/shm (python3: open O_EXCL + ``posix_fallocate``, as NCCL
  extends its segments); the bad job's container got the 16 MiB shm default: fallocate ENOSPC;
- ``truncate -s`` of the job user's shared ring in the shm directory (sticky, 1777) as the job's
  user (nobody); a root health check left a 0600 root ring of that name: openat EACCES;
- ``ionice -c $IO_CLASS -n $IO_LEVEL`` of the data stager as the job's user; the bad node's prolog
  config asks for the realtime class (meant for root's daemon): ioprio_set EPERM;
- ``stat`` of the HCA's device nodes (a fake /dev/infiniband tree in the case's directory); the bad
  node did not load ib_uverbs: ``uverbs0`` absent, statx ENOENT;
- ``unshare --ipc`` + ``sysctl -p`` of the pod's IPC sysctls + ``ipcmk -M`` of the job's SysV
  segment; the bad pod spec caps kernel.shmmax at 32 MiB: shmget EINVAL;
- ``taskset -p -c`` of the job's NCCL proxy daemon (from its pid file) as the job's user; on the bad
  node the daemon was restarted by root's unit and runs as root: sched_setaffinity EPERM;
- the prolog's memlock check (``prlimit --memlock -o SOFT``), the bad node's limit too low for the
  job's registrations: no call fails, the prolog's message on stderr, exit 1;
- the prolog's rank-per-CPU check (``taskset -c $CPUS nproc``), the bad node's job cpuset one CPU
  for two ranks: no call fails, the message, exit 1;
- the python3 preflight of the pod's IPC sysctls (kernel.shmmax/shmall/shmmni read from /proc/sys in
  the job's IPC namespace), the bad pod spec's kernel.shmall too small: no call fails, the message,
  exit 1.

The expectations are what ``strace -f`` shows for the bad run. Every run of a case has the same
command line; its data is picked by the run (the setup counts the good runs; the bad run has its
own job).

Noise cases (``QUIET_FIFTYSECOND``): good runs alone, no fault -- pinned buffers of 1 to 4 MiB under
limits that suffice, NCCL segments of random names and sizes among other jobs' leftovers, hugetlbfs
rings of 2 to 8 MiB, the device tree of 1 to 4 HCAs, ipcmk of SysV segments of other sizes, the
stager's best-effort and idle I/O classes, the proxy daemon bound to other CPU lists.

No loopback service: the set takes no ports. The hugetlbfs cases need a pool of 8 huge pages: the
tests raise the 2 MiB pool (vm.nr_hugepages) to 8 for those cases, other test processes kept out of
it (the fifth and thirteenth sets' faults need it empty: files.huge_page_pool), and put the old
value back after each; run otherwise (bench/scenario_accuracy.py), the case's setup raises it and the
set's teardown puts it back.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
from pathlib import Path

from .files import HUGE_PAGE_POOL, chown_nobody, mounted_tmpfs, token, write_file
from .harness import (
    ROOT,
    NoAnomalyCase,
    RunTurns,
    Scenario,
    argv_in,
    sh_argv,
    unmount_under,
)

STDERR = "/dev/null"  # the runs' stdout and stderr: where a message without an errno goes
NO_PATH = "*"  # the fault's call has no path of its own (mlock, ioprio_set, shmget, sched_setaffinity)
OPEN = frozenset({"openat", "open"})
WRITE = frozenset({"write", "writev", "pwrite64"})
STAT = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})
NOBODY_ARGV = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups"

_TURNS = RunTurns()  # which good run of each case is being set up


def _job_id(base: Path) -> str:
    job = str(random.randrange(10**6, 10**7))
    write_file(base / "job" / "id", job + "\n")
    return job


# --- the pinned-buffer registration (mlock) under the node's limits file ----------------------------------------
PIN_PY = """\
import ctypes, mmap, os, sys

libc = ctypes.CDLL(None, use_errno=True)
mib = int(open(sys.argv[1]).read())
size = mib << 20
buf = mmap.mmap(-1, size)
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
if libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(size)) != 0:
    err = ctypes.get_errno()
    sys.exit(f"ibv_reg_mr: cannot pin {size} bytes: {os.strerror(err)} (check ulimit -l)")
buf[:8] = b"reg-ok\\n\\0"
print(f"registered {mib} MiB")
"""
PIN_SH = (f'. "$1/conf/limits.sh" && exec {NOBODY_ARGV} /usr/bin/python3 -S "$1/bin/pin-buffer.py" '
          '"$1/job/buffer-mib"')


def _pin_inputs(base: Path, limit_kib: int, buffer_mib: int) -> None:
    write_file(base / "bin" / "pin-buffer.py", PIN_PY)
    write_file(base / "conf" / "limits.sh", f"ulimit -n 4096\nulimit -l {limit_kib}\n")
    write_file(base / "job" / "buffer-mib", f"{buffer_mib}\n")
    _job_id(base)


def pin_build(base: Path, bad: bool) -> None:
    # the good nodes' limits.d/rdma.conf gives 8 MiB (6 MiB on the older image); the bad node's
    # image lost it: the distribution's 1 MiB default
    limit, mib = _TURNS.pick(base, bad, [(8192, 2), (6144, 4), (8192, 1)], (1024, 2))
    _pin_inputs(base, limit, mib)


# --- mlockall(MCL_FUTURE) of the launcher under prlimit --memlock from the prolog config -------------------------
LOCKALL_PY = """\
import ctypes, mmap, os, sys

MCL_FUTURE = 2
libc = ctypes.CDLL(None, use_errno=True)
if libc.mlockall(MCL_FUTURE) != 0:
    sys.exit(f"launcher: mlockall(MCL_FUTURE): {os.strerror(ctypes.get_errno())}")
ring = mmap.mmap(-1, int(open(sys.argv[1]).read()) << 20)
ring[:4] = b"ring"
print("launcher: memory locked")
"""
LOCKALL_SH = ('exec /usr/bin/prlimit --memlock="$(/usr/bin/cat "$1/conf/memlock")" '
              f'{NOBODY_ARGV} /usr/bin/python3 -S "$1/bin/launcher-lock.py" "$1/job/ring-mib"')


def lockall_build(base: Path, bad: bool) -> None:
    memlock, ring = _TURNS.pick(base, bad, [("8388608", 2), ("4194304:8388608", 1), ("6291456", 3)], ("0", 2))
    write_file(base / "bin" / "launcher-lock.py", LOCKALL_PY)
    write_file(base / "conf" / "memlock", memlock + "\n")
    write_file(base / "job" / "ring-mib", f"{ring}\n")
    _job_id(base)


# --- the job's ring buffer in its hugetlbfs mount; the bad job's quota too small --------------------------------
HUGE_PY = """\
import mmap, os, sys

mount, mib = sys.argv[1], int(open(sys.argv[2]).read())
size = mib << 20
path = os.path.join(mount, "rdma-ring.buf")
fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
os.ftruncate(fd, size)
try:
    ring = mmap.mmap(fd, size)
except OSError as exc:
    sys.exit(f"hugetlb ring: cannot map {size} bytes of {path}: {exc.strerror}")
ring[:4] = b"ring"
ring.close()
os.close(fd)
print(f"hugetlb ring: {mib} MiB")
"""
HUGE_ARGV = ["/usr/bin/python3", "-S", "{b}/bin/hugetlb-ring.py", "{b}/hugepages", "{b}/job/ring-mib"]
POOL_PAGES = 8  # 2 MiB pages: 16 MiB, more than any case maps
# the 2 MiB pool, whatever the default huge page size (the tests raise it with
# files.huge_page_pool, which keeps other test processes out of it: this is for other callers)
POOL_KNOB = HUGE_PAGE_POOL
_POOL: dict[str, int] = {}  # "orig": the pool's size before the set raised it


def _ensure_pool() -> None:
    """The 2 MiB pool (vm.nr_hugepages on x86) at least POOL_PAGES (the old value kept to put back): the
    job's mount (pagesize=2M) maps them."""
    import pytest

    knob = POOL_KNOB
    now = int(knob.read_text())
    if now >= POOL_PAGES:
        return
    _POOL.setdefault("orig", now)
    knob.write_text(f"{POOL_PAGES}\n")
    if int(knob.read_text()) < POOL_PAGES:
        _restore_pool()
        pytest.skip(f"the kernel could not reserve {POOL_PAGES} huge pages of 2 MiB ({knob})")


def _restore_pool() -> None:
    if "orig" in _POOL:
        POOL_KNOB.write_text(f"{_POOL.pop('orig')}\n")


def _hugetlbfs(base: Path, quota_mib: int, ring_mib: int) -> None:
    _ensure_pool()
    write_file(base / "bin" / "hugetlb-ring.py", HUGE_PY)
    write_file(base / "job" / "ring-mib", f"{ring_mib}\n")
    _job_id(base)
    mnt = base / "hugepages"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "hugetlbfs", "-o", f"mode=0755,pagesize=2M,size={quota_mib}M", "tracebase-test",
                    str(mnt)], check=True, capture_output=True)


def huge_build(base: Path, bad: bool) -> None:
    # the prolog sizes the mount's quota from the job's request; the bad job's request was read per
    # task (2 MiB) instead of per node
    quota, ring = _TURNS.pick(base, bad, [(8, 4), (16, 8), (4, 2)], (2, 8))
    _hugetlbfs(base, quota, ring)


# --- the NCCL segment in the job's /dev/shm: posix_fallocate on a small shm tmpfs -------------------------------
SEG_PY = """\
import os, secrets, sys

shm, mib = sys.argv[1], int(open(sys.argv[2]).read())
size = mib << 20
path = os.path.join(shm, f"nccl-{secrets.token_hex(3)}")
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
try:
    os.posix_fallocate(fd, 0, size)
except OSError as exc:
    os.unlink(path)
    sys.exit(f"NCCL WARN Error: failed to extend {path} to {size} bytes: {exc.strerror}")
os.close(fd)
print(path)
"""
SEG_ARGV = ["/usr/bin/python3", "-S", "{b}/bin/nccl-shm.py", "{b}/shm", "{b}/job/segment-mib"]


def _shm(base: Path, size_mib: int, segment_mib: int, leftovers: int = 0) -> None:
    write_file(base / "bin" / "nccl-shm.py", SEG_PY)
    write_file(base / "job" / "segment-mib", f"{segment_mib}\n")
    _job_id(base)
    shm = mounted_tmpfs(base / "shm", f"{size_mib}m")
    shm.chmod(0o1777)
    for _ in range(leftovers):  # other jobs' segments on the shared node (small ones)
        write_file(shm / f"nccl-{token(3)}", random.randbytes(random.randrange(1, 64) * 1024), mode=0o600)


def shm_build(base: Path, bad: bool) -> None:
    # the good jobs' containers had a 64 MiB /dev/shm; the bad job's the 16 MiB runtime default
    size, seg = _TURNS.pick(base, bad, [(64, 24), (64, 8), (64, 16)], (16, 24))
    _shm(base, size, seg, leftovers=random.randrange(0, 3))


# --- truncate -s of the user's shared ring as the job's user; a root health check left it 0600 -----------------
RING_SH = ('exec /usr/bin/truncate -s "$(/usr/bin/cat "$1/job/ring-bytes")" "$1/shm/rdma-prolog-ring.65534"')


def ring_build(base: Path, bad: bool) -> None:
    state = _TURNS.pick(base, bad, ["absent", "nobody", "absent"], "root")
    write_file(base / "job" / "ring-bytes", f"{random.choice([4, 8, 16]) << 20}\n")
    _job_id(base)
    shm = base / "shm"
    shm.mkdir()
    shm.chmod(0o1777)
    ring = shm / "rdma-prolog-ring.65534"
    if state == "nobody":  # the previous job's ring, the user's own
        write_file(ring, b"", mode=0o600)
        chown_nobody(ring)
    elif state == "root":  # the root health check ran the preflight "for" the user and left its ring
        write_file(ring, b"", mode=0o600)
    for _ in range(random.randrange(0, 3)):
        write_file(shm / f"nccl-{token(3)}", random.randbytes(1024), mode=0o600)


# --- ionice of the data stager as the job's user; the bad config asks for the realtime class --------------------
IONICE_SH = ('. "$1/conf/stager.env" && exec /usr/bin/ionice -c "$IO_CLASS" -n "$IO_LEVEL" '
             '/usr/bin/cat "$1/job/manifest"')


def _stager(base: Path, io_class: int, level: int) -> None:
    write_file(base / "conf" / "stager.env", f"IO_CLASS={io_class}\nIO_LEVEL={level}\nSTAGE_THREADS=4\n")
    lines = [f"s3://datasets/shard-{random.randrange(10**5):05d}.tar {random.randrange(10**6, 10**9)}\n"
             for _ in range(random.randrange(3, 30))]
    write_file(base / "job" / "manifest", "".join(lines), mode=0o644)
    _job_id(base)


def ionice_build(base: Path, bad: bool) -> None:
    io_class, level = _TURNS.pick(base, bad, [(2, 4), (2, 0), (3, 0)], (1, 4))
    _stager(base, io_class, level)


# --- stat of the HCA's device nodes; ib_uverbs not loaded on the bad node --------------------------------------
STAT_SH = ('exec /usr/bin/stat -c "%n %F %t:%T" "$1/dev/infiniband/rdma_cm" "$1/dev/infiniband/uverbs0"')


def _ib_tree(base: Path, hcas: int, uverbs: bool = True) -> None:
    """dev/infiniband/ of a node with `hcas` HCAs: rdma_cm, umadN, issmN and (ib_uverbs loaded) uverbsN."""
    ib = base / "dev" / "infiniband"
    ib.mkdir(parents=True)
    os.mknod(ib / "rdma_cm", 0o666 | 0o020000, os.makedev(10, 58))
    for n in range(hcas):
        os.mknod(ib / f"umad{n}", 0o600 | 0o020000, os.makedev(231, n))
        os.mknod(ib / f"issm{n}", 0o600 | 0o020000, os.makedev(231, 64 + n))
        if uverbs:
            os.mknod(ib / f"uverbs{n}", 0o666 | 0o020000, os.makedev(231, 192 + n))
    _job_id(base)


def stat_build(base: Path, bad: bool) -> None:
    _ib_tree(base, _TURNS.pick(base, bad, [1, 4, 2], 2), uverbs=not bad)


# --- unshare --ipc + sysctl -p of the pod's IPC sysctls + ipcmk -M; the bad pod caps shmmax ---------------------
IPC_SH = 'exec /usr/bin/unshare --ipc /bin/sh "$1/bin/job-ipc.sh" "$1"'
IPC_SCRIPT = """\
/usr/sbin/sysctl -q -p "$1/conf/pod-sysctl.conf" || exit 1
exec /usr/bin/ipcmk -M "$(/usr/bin/cat "$1/job/segment-bytes")"
"""


def _pod_sysctls(base: Path, shmmax: int, shmall: int, shmmni: int = 4096) -> None:
    write_file(base / "conf" / "pod-sysctl.conf",
               f"kernel.shmmax = {shmmax}\nkernel.shmall = {shmall}\nkernel.shmmni = {shmmni}\n")


def ipc_build(base: Path, bad: bool) -> None:
    seg = _TURNS.pick(base, bad, [32, 64, 16], 64)
    write_file(base / "bin" / "job-ipc.sh", IPC_SCRIPT)
    write_file(base / "job" / "segment-bytes", f"{seg << 20}\n")
    _job_id(base)
    # the good pods' spec: shmmax 128 or 256 MiB; the bad pod's spec a stale 32 MiB
    shmmax = 32 << 20 if bad else random.choice([128, 256]) << 20
    _pod_sysctls(base, shmmax, 1 << 20)


# --- taskset -p -c of the job's NCCL proxy daemon as the job's user; restarted as root on the bad node -----------
TASKSET_SH = ('exec /usr/bin/taskset -p -c "$(/usr/bin/cat "$1/conf/proxy-cpus")" '
              '"$(/usr/bin/cat "$1/run/nccl-proxy.pid")"')
_DAEMONS: dict[str, subprocess.Popen] = {}  # case (its base's name) -> the proxy daemon of the current run


def _proxy(base: Path, cpus: str, as_root: bool = False) -> None:
    write_file(base / "conf" / "proxy-cpus", cpus + "\n")
    _job_id(base)
    (base / "run").mkdir()
    argv = ["/usr/bin/sleep", "300"] if as_root else [*NOBODY_ARGV.split(), "/usr/bin/sleep", "300"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _DAEMONS[base.name] = proc
    write_file(base / "run" / "nccl-proxy.pid", f"{proc.pid}\n")


def _stop_proxy(base: Path) -> None:
    proc = _DAEMONS.pop(base.name, None)
    if proc is not None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def taskset_build(base: Path, bad: bool) -> None:
    cpus = _TURNS.pick(base, bad, ["1", "0", "0,1"], "1")
    _proxy(base, cpus, as_root=bad)


# --- the prolog's memlock check (prlimit); no call fails ---------------------------------------------------------
MEMLOCK_CHECK_SH = """\
. "$1/conf/limits.sh" || exit 1
lim=$(/usr/bin/prlimit --memlock --output SOFT --noheadings --raw) || exit 1
need=$(/usr/bin/cat "$1/job/memlock-kib")
if [ "$lim" != unlimited ] && [ $((lim / 1024)) -lt "$need" ]; then
  echo "prolog: RLIMIT_MEMLOCK is $((lim / 1024)) KiB, the job registers $need KiB: fix limits.d/rdma.conf" >&2
  exit 1
fi
echo "prolog: memlock $lim ok"
"""


def memlock_check_build(base: Path, bad: bool) -> None:
    limit, need = _TURNS.pick(base, bad, [(8192, 4096), (6144, 6144), (8192, 2048)], (1024, 4096))
    write_file(base / "conf" / "limits.sh", f"ulimit -n 4096\nulimit -l {limit}\n")
    write_file(base / "job" / "memlock-kib", f"{need}\n")
    _job_id(base)


# --- the prolog's rank-per-CPU check (taskset -c CPUS nproc); no call fails --------------------------------------
NPROC_SH = """\
n=$(/usr/bin/taskset -c "$(/usr/bin/cat "$1/conf/job-cpus")" /usr/bin/nproc) || exit 1
r=$(/usr/bin/cat "$1/job/ranks-per-node")
if [ "$n" -lt "$r" ]; then
  echo "prolog: the job's cpuset has $n CPUs for $r ranks per node" >&2
  exit 1
fi
echo "prolog: $r ranks on $n CPUs"
"""


def nproc_build(base: Path, bad: bool) -> None:
    # the bad node's gres.conf lost the other socket's cores: one CPU for the job's two ranks
    cpus, ranks = _TURNS.pick(base, bad, [("0-1", 2), ("0,1", 1), ("0", 1)], ("1", 2))
    write_file(base / "conf" / "job-cpus", cpus + "\n")
    write_file(base / "job" / "ranks-per-node", f"{ranks}\n")
    _job_id(base)


# --- the python3 preflight of the pod's IPC sysctls in the job's IPC namespace; no call fails --------------------
SYSCTL_PY = """\
import json, sys

need = json.load(open(sys.argv[1]))
page = 4096
have = {}
for knob in ("shmmax", "shmall", "shmmni"):
    with open(f"/proc/sys/kernel/{knob}") as fh:
        have[knob] = int(fh.read())
segment = need["segment_bytes"]
if have["shmmax"] < segment:
    sys.exit(f"preflight: kernel.shmmax {have['shmmax']} < the job's segment {segment}")
if have["shmall"] * page < segment * need["segments"]:
    sys.exit(f"preflight: kernel.shmall {have['shmall']} pages < {need['segments']} segments of {segment}")
if have["shmmni"] < need["segments"]:
    sys.exit(f"preflight: kernel.shmmni {have['shmmni']} < {need['segments']}")
print("preflight: IPC limits ok", json.dumps(have))
"""
SYSCTL_SH = 'exec /usr/bin/unshare --ipc /bin/sh "$1/bin/job-preflight.sh" "$1"'
SYSCTL_SCRIPT = """\
/usr/sbin/sysctl -q -p "$1/conf/pod-sysctl.conf" || exit 1
exec /usr/bin/python3 -S "$1/bin/ipc-preflight.py" "$1/job/ipc-needs.json"
"""


def sysctl_build(base: Path, bad: bool) -> None:
    segments, seg_mib = _TURNS.pick(base, bad, [(8, 16), (4, 32), (2, 8)], (8, 32))
    write_file(base / "bin" / "job-preflight.sh", SYSCTL_SCRIPT)
    write_file(base / "bin" / "ipc-preflight.py", SYSCTL_PY)
    write_file(base / "job" / "ipc-needs.json", json.dumps({"segments": segments, "segment_bytes": seg_mib << 20}))
    _job_id(base)
    # the bad pod spec's kernel.shmall: 16384 pages (64 MiB) for eight 32 MiB segments
    shmall = 16384 if bad else random.choice([1 << 20, 1 << 21])
    _pod_sysctls(base, 512 << 20, shmall)


def _teardown(base: Path) -> None:
    _stop_proxy(base)
    unmount_under(base)


def _sc(name, program, argv, build, probe, errno, path, *, unprivileged=False, description=""):
    """A Scenario of the set with its teardown (the proxy daemon stopped, mounts unmounted)."""
    return Scenario(name, program, argv, build, probe, errno, path, teardown=_teardown, unprivileged=unprivileged,
                    description=description)


REAL_FIFTYSECOND: list[Scenario] = [
    _sc("t52_python3_pin_buffer_memlock_default", "python3 pin-buffer.py (ctypes mlock) after ulimit -l, as nobody",
        sh_argv(PIN_SH), pin_build, frozenset({"mlock", "mlock2"}), "ENOMEM", lambda b: NO_PATH,
        description="the prolog sources conf/limits.sh (ulimit -l) and runs the job's registration of a pinned "
                    "buffer as nobody (mmap + ctypes mlock, as ibv_reg_mr pins); the bad node's limits lost the "
                    "RDMA line (1 MiB) for a 2 MiB buffer: mlock ENOMEM, exit 1"),
    _sc("t52_python3_launcher_mlockall_memlock_zero", "python3 launcher-lock.py (mlockall) under prlimit --memlock",
        sh_argv(LOCKALL_SH), lockall_build, frozenset({"mlockall"}), "EPERM", lambda b: NO_PATH,
        description="prlimit --memlock=$(cat conf/memlock) setpriv nobody python3: the launcher's "
                    "mlockall(MCL_FUTURE); the bad node's prolog config says 0 (a container default): without "
                    "CAP_IPC_LOCK and with RLIMIT_MEMLOCK 0, mlockall fails EPERM, exit 1"),
    _sc("t52_python3_hugetlbfs_ring_over_quota", "python3 hugetlb-ring.py (ftruncate + mmap in the job's hugetlbfs)",
        argv_in(HUGE_ARGV), huge_build, frozenset({"mmap"}), "ENOMEM", lambda b: f"{b}/hugepages/rdma-ring.buf",
        description="the job's ring buffer in its hugetlbfs mount (open, ftruncate, mmap MAP_SHARED); the bad "
                    "job's mount got size=2M for an 8 MiB ring: the mmap's huge page reservation exceeds the "
                    "mount's quota, mmap ENOMEM, exit 1"),
    _sc("t52_python3_nccl_shm_fallocate_small", "python3 nccl-shm.py (posix_fallocate in the job's /dev/shm)",
        argv_in(SEG_ARGV), shm_build, frozenset({"fallocate"}), "ENOSPC", lambda b: f"{b}/shm/nccl-*",
        description="an NCCL-style segment shm/nccl-XXXXXX created O_EXCL and extended with posix_fallocate; the "
                    "bad job's container got the 16 MiB shm default for a 24 MiB segment: fallocate ENOSPC, the "
                    "segment unlinked, 'failed to extend', exit 1"),
    _sc("t52_truncate_shm_ring_root_owned", "truncate -s of the user's shared ring in shm (as nobody)",
        sh_argv(RING_SH), ring_build, OPEN, "EACCES", lambda b: f"{b}/shm/rdma-prolog-ring.65534",
        unprivileged=True,
        description="truncate -s $(cat job/ring-bytes) shm/rdma-prolog-ring.65534 as the job's user; the good "
                    "runs create it or find the user's own; on the bad node a root health check left a 0600 "
                    "root ring of that name: openat O_WRONLY|O_CREAT fails EACCES, exit 1"),
    _sc("t52_ionice_stager_realtime_class", "ionice -c $IO_CLASS of the data stager (as nobody)",
        sh_argv(IONICE_SH), ionice_build, frozenset({"ioprio_set"}), "EPERM", lambda b: NO_PATH,
        unprivileged=True,
        description="the prolog sources conf/stager.env and runs the stager under ionice as the job's user; the "
                    "bad node's config asks for class 1 (realtime, meant for root's daemon): ioprio_set EPERM, "
                    "'ioprio_set failed', exit 1"),
    _sc("t52_stat_uverbs0_module_not_loaded", "stat -c of dev/infiniband/{rdma_cm,uverbs0} (1, 4, 2 HCAs)",
        sh_argv(STAT_SH), stat_build, STAT, "ENOENT", lambda b: f"{b}/dev/infiniband/uverbs0",
        description="stat of the HCA's device nodes in the node's dev/infiniband tree; ib_uverbs did not load on "
                    "the bad node (rdma_cm, umad, issm there, no uverbsN): statx ENOENT, exit 1"),
    _sc("t52_ipcmk_segment_over_pod_shmmax", "ipcmk -M in the job's IPC namespace after sysctl -p (unshare --ipc)",
        sh_argv(IPC_SH), ipc_build, frozenset({"shmget"}), "EINVAL", lambda b: NO_PATH,
        description="unshare --ipc, sysctl -p of the pod's IPC sysctls, ipcmk -M of the job's SysV segment; the "
                    "bad pod spec caps kernel.shmmax at 32 MiB for a 64 MiB segment: shmget EINVAL, exit 1"),
    _sc("t52_taskset_proxy_daemon_root", "taskset -p -c of the NCCL proxy daemon (as nobody)",
        sh_argv(TASKSET_SH), taskset_build, frozenset({"sched_setaffinity"}), "EPERM", lambda b: NO_PATH,
        unprivileged=True,
        description="taskset -p -c $(cat conf/proxy-cpus) $(cat run/nccl-proxy.pid) as the job's user; on the "
                    "bad node the proxy daemon was restarted by root's unit and runs as root: "
                    "sched_setaffinity EPERM, exit 1"),
    _sc("t52_prlimit_memlock_check_low", "prlimit --memlock -o SOFT in the prolog's memlock check",
        sh_argv(MEMLOCK_CHECK_SH), memlock_check_build, WRITE, None, lambda b: STDERR,
        description="the prolog sources conf/limits.sh and compares prlimit's soft RLIMIT_MEMLOCK with the job's "
                    "registrations; the bad node's limit is 1 MiB for 4 MiB: no call fails, the prolog's "
                    "message on stderr, exit 1"),
    _sc("t52_nproc_job_cpuset_one_cpu", "nproc under taskset -c $(cat conf/job-cpus) in the rank check",
        sh_argv(NPROC_SH), nproc_build, WRITE, None, lambda b: STDERR,
        description="taskset -c $(cat conf/job-cpus) nproc against job/ranks-per-node; the bad node's job cpuset "
                    "is CPU 1 alone for two ranks: no call fails, nproc prints 1, the prolog's message, exit 1"),
    _sc("t52_python3_ipc_preflight_pod_shmall", "python3 ipc-preflight.py of /proc/sys/kernel/shm* (unshare --ipc)",
        sh_argv(SYSCTL_SH), sysctl_build, WRITE, None, lambda b: STDERR,
        description="unshare --ipc, sysctl -p of the pod's sysctls, then the python3 preflight reads "
                    "kernel.shmmax/shmall/shmmni from /proc/sys; the bad pod spec's kernel.shmall (64 MiB) is "
                    "less than eight 32 MiB segments: no call fails, the preflight's message, exit 1"),
]


# --- good-vs-good noise ------------------------------------------------------------------------------------------
def pin_noise(base: Path, run: int) -> None:
    limit, mib = [(8192, 1), (8192, 4), (6144, 2), (4096, 3)][run % 4]
    _pin_inputs(base, limit, mib)


def shm_noise(base: Path, run: int) -> None:
    seg, leftovers = [(8, 0), (24, 2), (16, 1), (32, 3)][run % 4]
    _shm(base, 64, seg, leftovers)


def huge_noise(base: Path, run: int) -> None:
    quota, ring = [(16, 2), (8, 8), (16, 4), (4, 4)][run % 4]
    _hugetlbfs(base, quota, ring)


def stat_noise(base: Path, run: int) -> None:
    _ib_tree(base, [1, 4, 2, 3][run % 4])


def ipc_noise(base: Path, run: int) -> None:
    write_file(base / "bin" / "job-ipc.sh", IPC_SCRIPT)
    write_file(base / "job" / "segment-bytes", f"{[4, 64, 16, 32][run % 4] << 20}\n")
    _job_id(base)
    _pod_sysctls(base, [128, 256, 64, 128][run % 4] << 20, random.choice([1 << 20, 1 << 21]))


def ionice_noise(base: Path, run: int) -> None:
    io_class, level = [(2, 7), (3, 0), (2, 0), (2, 4)][run % 4]
    _stager(base, io_class, level)


_PROXY_NOISE = "t52_taskset_proxy_cpu_lists"


def taskset_noise(base: Path, run: int) -> None:
    _stop_proxy(base)  # the daemon of the run before (a noise case has no teardown between runs)
    _proxy(base, ["0", "0,1", "1", "0-1"][run % 4])


QUIET_FIFTYSECOND: list[NoAnomalyCase] = [
    NoAnomalyCase("t52_python3_pin_buffer_sizes", sh_argv(PIN_SH), pin_noise, runs=4,
                  description="the pinned-buffer registration of 1, 4, 2, 3 MiB under ulimit -l 8192, 8192, "
                              "6144, 4096 KiB"),
    NoAnomalyCase("t52_python3_nccl_shm_segment_sizes", argv_in(SEG_ARGV), shm_noise, runs=4,
                  description="NCCL segments of 8, 24, 16, 32 MiB (random names) in a 64 MiB shm tmpfs with 0 to "
                              "3 other jobs' segments"),
    NoAnomalyCase("t52_python3_hugetlbfs_ring_sizes", argv_in(HUGE_ARGV), huge_noise, runs=4,
                  description="hugetlbfs rings of 2, 8, 4, 4 MiB under quotas of 16, 8, 16, 4 MiB"),
    NoAnomalyCase("t52_stat_infiniband_hca_counts", sh_argv(STAT_SH), stat_noise, runs=4,
                  description="stat of rdma_cm and uverbs0 in the device trees of 1, 4, 2, 3 HCAs"),
    NoAnomalyCase("t52_ipcmk_pod_segment_sizes", sh_argv(IPC_SH), ipc_noise, runs=4,
                  description="unshare --ipc, sysctl -p, ipcmk -M of 4, 64, 16, 32 MiB under shmmax 128, 256, "
                              "64, 128 MiB"),
    NoAnomalyCase("t52_ionice_stager_classes", sh_argv(IONICE_SH), ionice_noise, runs=4,
                  description="the stager under ionice best-effort 7, idle, best-effort 0, best-effort 4 (root), "
                              "manifests of 3 to 29 lines"),
    NoAnomalyCase(_PROXY_NOISE, sh_argv(TASKSET_SH), taskset_noise, runs=4,
                  description="taskset -p -c 0, 0,1, 1, 0-1 of a proxy daemon (nobody) of another pid each run"),
]


def quiet_teardown() -> None:
    """Stop the proxy daemons, unmount anything a case of this set left mounted (a failed teardown),
    put the huge page pool back, and forget the runs' counts."""
    for name in [*_TURNS.good_runs, *_DAEMONS, *(s.name for s in REAL_FIFTYSECOND),
                 *(c.name for c in QUIET_FIFTYSECOND)]:
        base = ROOT / name
        _stop_proxy(base)
        if base.exists():
            unmount_under(base)
    _restore_pool()
    _TURNS.good_runs.clear()

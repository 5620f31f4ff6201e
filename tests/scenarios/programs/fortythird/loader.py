"""A training job's data-loader side on one host, the forty-third set's python3 program.

    python3 -S -B loader.py MODE BASE [START] [WORKERS]

Every mode reads the dataset shards BASE/shards/shard-*.bin with worker processes, as a
PyTorch-style DataLoader does, and prints a checksum per shard:

- ``queue START N``: N ``multiprocessing`` workers of the START method (fork, spawn,
  forkserver) put their shards' checksums on a ``multiprocessing.Queue`` (SemLock semaphores in
  /dev/shm; forkserver: its listener socket in the temp directory);
- ``shm N``: N forked workers copy each shard into a ``multiprocessing.shared_memory`` segment of
  its size (shm_open + ftruncate in /dev/shm) and send its name down a Pipe; the main process
  attaches, checksums and unlinks it;
- ``pool START N``: a ``concurrent.futures.ProcessPoolExecutor`` of N workers of the START method;
- ``spawnpool N``: a ``multiprocessing`` Pool of N spawned workers, ``imap_unordered``;
- ``mq N``: the launcher (root) makes a POSIX message queue of a random name under the umask of
  its service config (BASE/umask.conf), forks N workers that drop to the job's uid (keeping the
  launcher's group) and send their results on it;
- ``fdpass N``: N forked workers put each shard in a memfd and pass its descriptor to the main
  process over a SOCK_SEQPACKET socketpair (SCM_RIGHTS), torch's ``file_descriptor`` sharing
  strategy; the main process keeps every batch's descriptor open until the step is done;
- ``pread N``: shards with a header (magic, record count, record size) read record by record
  with ``os.pread`` by a forked Pool of N (a memory-mapped dataset's index walk).
"""

import ctypes
import multiprocessing as mp
import os
import signal
import socket
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import resource_tracker, shared_memory

JOB_UID = 43043
MAGIC = b"TB43"


def shard_files(base):
    d = os.path.join(base, "shards")
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.startswith("shard-"))


def checksum(data):
    s = 0
    for k in range(0, len(data), 512):
        s = (s * 31 + data[k]) & 0xFFFFFFFF
    return s


def read_shard(path):
    with open(path, "rb") as fh:
        data = fh.read()
    return os.path.basename(path), checksum(data)


def worker_queue(paths, q):
    for p in paths:
        q.put(read_shard(p))


def run_queue(base, start, n):
    ctx = mp.get_context(start)
    files = shard_files(base)
    q = ctx.Queue()
    procs = [ctx.Process(target=worker_queue, args=(files[i::n], q)) for i in range(n)]
    for p in procs:
        p.start()
    out = [q.get() for _ in files]
    for p in procs:
        p.join()
    return out


def worker_shm(paths, conn):
    for p in paths:
        with open(p, "rb") as fh:
            data = fh.read()
        seg = shared_memory.SharedMemory(create=True, size=len(data))
        seg.buf[: len(data)] = data
        conn.send((os.path.basename(p), seg.name, len(data)))
        seg.close()
    conn.send(None)
    conn.close()


def run_shm(base, n):
    ctx = mp.get_context("fork")
    resource_tracker.ensure_running()  # one tracker for the job, before the workers fork
    files = shard_files(base)
    conns, procs = [], []
    for i in range(n):
        parent, child = ctx.Pipe()
        procs.append(ctx.Process(target=worker_shm, args=(files[i::n], child)))
        conns.append(parent)
    for p in procs:
        p.start()
    out = []
    for c in conns:
        while (msg := c.recv()) is not None:
            name, seg_name, size = msg
            seg = shared_memory.SharedMemory(name=seg_name)
            out.append((name, checksum(bytes(seg.buf[:size]))))
            seg.close()
            seg.unlink()
    for p in procs:
        p.join()
    return out


def run_pool(base, start, n):
    with ProcessPoolExecutor(max_workers=n, mp_context=mp.get_context(start)) as ex:
        return list(ex.map(read_shard, shard_files(base)))


def run_spawnpool(base, n):
    with mp.get_context("spawn").Pool(n) as pool:
        return list(pool.imap_unordered(read_shard, shard_files(base)))


class MqAttr(ctypes.Structure):
    _fields_ = [("mq_flags", ctypes.c_long), ("mq_maxmsg", ctypes.c_long), ("mq_msgsize", ctypes.c_long),
                ("mq_curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(MqAttr)]
    libc.mq_send.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint]
    libc.mq_receive.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.mq_receive.restype = ctypes.c_ssize_t
    libc.mq_unlink.argtypes = [ctypes.c_char_p]
    return libc


def _check(rc, what):
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")
    return rc


def worker_mq(paths, qname):
    os.setgroups([])
    os.setresuid(JOB_UID, JOB_UID, JOB_UID)  # the job's uid; the launcher's group stays
    libc = _libc()
    qd = _check(libc.mq_open(qname, os.O_WRONLY, 0, None), f"mq_open {qname.decode()}")
    for p in paths:
        name, s = read_shard(p)
        msg = f"{name} {s}".encode()
        _check(libc.mq_send(qd, msg, len(msg), 0), "mq_send")


def run_mq(base, n):
    with open(os.path.join(base, "umask.conf")) as fh:  # the launcher service's UMask=
        os.umask(int(fh.read().strip(), 8))
    libc = _libc()
    qname = f"/tb43-done-{os.urandom(4).hex()}".encode()
    attr = MqAttr(0, 8, 128, 0)
    qd = _check(libc.mq_open(qname, os.O_CREAT | os.O_EXCL | os.O_RDONLY, 0o660, ctypes.byref(attr)),
                f"mq_open {qname.decode()}")
    ctx = mp.get_context("fork")
    files = shard_files(base)
    procs = [ctx.Process(target=worker_mq, args=(files[i::n], qname)) for i in range(n)]
    for p in procs:
        p.start()
    try:
        for p in procs:  # the queue holds every result (8 messages, at most 8 shards): join first
            p.join()
        if any(p.exitcode for p in procs):
            raise SystemExit("a worker failed")
        buf = ctypes.create_string_buffer(128)
        out = []
        for _ in files:
            k = _check(libc.mq_receive(qd, buf, 128, None), "mq_receive")
            out.append(tuple(buf.raw[:k].decode().split()))
    finally:
        libc.mq_unlink(qname)
    return out


def read_records(path):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        head = os.pread(fd, 12, 0)
        if head[:4] != MAGIC:
            raise ValueError(f"{path}: not a shard")
        count, size = int.from_bytes(head[4:8], "little"), int.from_bytes(head[8:12], "little")
        s = 0
        for i in range(count):
            rec = os.pread(fd, size, 12 + i * size)
            if len(rec) != size:
                raise ValueError(f"{path}: record {i} of {count}: {len(rec)} of {size} bytes")
            s = (s * 31 + checksum(rec)) & 0xFFFFFFFF
        return os.path.basename(path), s
    finally:
        os.close(fd)


def run_pread(base, n):
    with mp.get_context("fork").Pool(n) as pool:
        return list(pool.imap_unordered(read_records, shard_files(base)))


def worker_fdpass(paths, sock):
    for p in paths:
        with open(p, "rb") as fh:
            data = fh.read()
        fd = os.memfd_create(os.path.basename(p), os.MFD_CLOEXEC)
        os.write(fd, data)
        socket.send_fds(sock, [f"{os.path.basename(p)} {len(data)}".encode()], [fd])
        os.close(fd)
    sock.close()


def run_fdpass(base, n):
    ctx = mp.get_context("fork")
    files = shard_files(base)
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(n)]
    procs = [ctx.Process(target=worker_fdpass, args=(files[i::n], pairs[i][1])) for i in range(n)]
    for p in procs:
        p.start()
    for _, child in pairs:
        child.close()
    held, out = [], []  # every batch's storage stays open until the step is done, as torch's do
    for parent, _ in pairs:
        while True:
            msg, fds, flags, _ = socket.recv_fds(parent, 256, 1)
            if not msg:
                break
            if not fds or flags & socket.MSG_CTRUNC:
                raise RuntimeError(f"received {len(fds)} items of ancdata")
            held.append(fds[0])
            name, size = msg.decode().split()
            out.append((name, checksum(os.pread(fds[0], int(size), 0))))
    for fd in held:
        os.close(fd)
    for p in procs:
        p.join()
    return out


def main(argv):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past RLIMIT_FSIZE: EFBIG, not a kill
    mode, base = argv[1], argv[2]
    if mode == "queue":
        out = run_queue(base, argv[3], int(argv[4]))
    elif mode == "pool":
        out = run_pool(base, argv[3], int(argv[4]))
    elif mode == "shm":
        out = run_shm(base, int(argv[3]))
    elif mode == "spawnpool":
        out = run_spawnpool(base, int(argv[3]))
    elif mode == "mq":
        out = run_mq(base, int(argv[3]))
    elif mode == "fdpass":
        out = run_fdpass(base, int(argv[3]))
    elif mode == "pread":
        out = run_pread(base, int(argv[3]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    for name, s in sorted(out):
        print(name, s)


if __name__ == "__main__":
    main(sys.argv)

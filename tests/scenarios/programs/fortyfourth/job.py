"""A GPU/RDMA training job's start-up and step around its work, the forty-fourth set's python3 program.

    python3 -S -B job.py MODE BASE [ARG]

Every mode reads the job's config BASE/job/job.conf and its dataset shards
BASE/datasets/shard-*.bin, checksums them the way a data step does, and does the one thing
around the work the mode names:

- ``pin``: a pinned host staging buffer: an anonymous mapping bound to the GPU's NUMA node 0
  (``mbind`` MPOL_BIND), filled with the shards (NCCL/UCX do this for their bounce buffers);
- ``stage``: the step's checkpoint written to BASE/job/stage/ckpt-RANDOM.tmp, then published
  atomically with ``os.replace`` into BASE/job/ckpt/ (another directory), then the epoch's
  output directory BASE/job/out/epoch-ARG made;
- ``serve PORT``: the rendezvous store: binds 127.0.0.1:PORT, a forked worker connects and sends
  its shard checksums;
- ``chown UID``: writes the step's outputs to BASE/job/out/ and gives them to the service
  account UID (the collector reads them);
- ``affinity CPU``: pins itself to CPU (the GPU's local core, ``os.sched_setaffinity``), then works;
- ``tool``: copies the job's staged tool BASE/tools/ibprobe into the scratch directory
  BASE/scratch/ (as launchers stage binaries onto the node) and runs it;
- ``grant [HELPER]``: runs the site's set-uid helper BASE/bin/HELPER (tb44-grant by default) on
  BASE/etc/rdma-limits.conf to learn its locked-memory budget;
- ``workers N``: forks N workers (os.fork), each checksums its shards and writes its result.
"""

import ctypes
import mmap
import os
import shutil
import socket
import subprocess
import sys


def shards(base):
    d = os.path.join(base, "datasets")
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.startswith("shard-"))


def checksum(data):
    s = 0
    for k in range(0, len(data), 256):
        s = (s * 31 + data[k]) & 0xFFFFFFFF
    return s


def work(base, paths=None):
    out = []
    for p in paths if paths is not None else shards(base):
        with open(p, "rb") as fh:
            out.append((os.path.basename(p), checksum(fh.read())))
    return out


def config(base):
    with open(os.path.join(base, "job", "job.conf")) as fh:
        return dict(line.strip().split("=", 1) for line in fh if "=" in line)


def run_pin(base):
    libc = ctypes.CDLL(None, use_errno=True)
    files = shards(base)
    size = sum(os.path.getsize(p) for p in files)
    size = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
    buf = mmap.mmap(-1, size)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    mask = ctypes.c_ulong(1)  # node 0: the GPU's NUMA node
    if libc.syscall(237, ctypes.c_void_p(addr), ctypes.c_ulong(size), 2, ctypes.byref(mask), 64, 0) != 0:  # mbind, MPOL_BIND
        e = ctypes.get_errno()
        raise OSError(e, f"mbind staging buffer: {os.strerror(e)}")
    off, out = 0, []
    for p in files:
        with open(p, "rb") as fh:
            data = fh.read()
        buf[off:off + len(data)] = data
        out.append((os.path.basename(p), checksum(buf[off:off + len(data)])))
        off += len(data)
    return out


def run_stage(base, epoch):
    out = work(base)
    stage = os.path.join(base, "job", "stage", f"ckpt-{os.urandom(4).hex()}.tmp")
    with open(stage, "w") as fh:
        for name, s in out:
            fh.write(f"{name} {s}\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(stage, os.path.join(base, "job", "ckpt", "ckpt-latest.txt"))
    os.makedirs(os.path.join(base, "job", "out", f"epoch-{epoch}"), exist_ok=True)
    return out


def run_serve(base, port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(4)
    pid = os.fork()
    if pid == 0:
        srv.close()
        c = socket.create_connection(("127.0.0.1", port))
        c.sendall("".join(f"{n} {s}\n" for n, s in work(base)).encode())
        c.close()
        os._exit(0)
    conn, _ = srv.accept()
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    conn.close()
    srv.close()
    os.waitpid(pid, 0)
    return [tuple(line.split()) for line in data.decode().splitlines()]


def run_chown(base, uid):
    out = work(base)
    d = os.path.join(base, "job", "out")
    os.makedirs(d, exist_ok=True)
    for name, s in out:
        path = os.path.join(d, name + ".sum")
        with open(path, "w") as fh:
            fh.write(f"{s}\n")
        os.chown(path, uid, uid)
    return out


def run_affinity(base, cpu):
    os.sched_setaffinity(0, {cpu})
    return work(base)


def run_tool(base):
    scratch = os.path.join(base, "scratch")
    tool = shutil.copy2(os.path.join(base, "tools", "ibprobe"), os.path.join(scratch, "ibprobe"))
    res = subprocess.run([tool, base], capture_output=True, text=True, check=True)
    return [tuple(line.split()) for line in res.stdout.splitlines()] + work(base)


def run_grant(base, helper):
    res = subprocess.run([os.path.join(base, "bin", helper), os.path.join(base, "etc", "rdma-limits.conf")],
                         capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"{helper} failed: {res.stderr.strip()}")
    return work(base)


def run_workers(base, n):
    files = shards(base)
    pids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            res = work(base, files[i::n])
            with open(os.path.join(base, "job", f"worker-{i}.sum"), "w") as fh:
                fh.write("".join(f"{a} {b}\n" for a, b in res))
            os._exit(0)
        pids.append(pid)
    bad = 0
    for pid in pids:
        bad |= os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if bad:
        raise SystemExit("a worker failed")
    return work(base)


def main(argv):
    mode, base = argv[1], argv[2]
    config(base)
    if mode == "pin":
        out = run_pin(base)
    elif mode == "stage":
        out = run_stage(base, argv[3])
    elif mode == "serve":
        out = run_serve(base, int(argv[3]))
    elif mode == "chown":
        out = run_chown(base, int(argv[3]))
    elif mode == "affinity":
        out = run_affinity(base, int(argv[3]))
    elif mode == "tool":
        out = run_tool(base)
    elif mode == "grant":
        out = run_grant(base, argv[3] if len(argv) > 3 else "tb44-grant")
    elif mode == "workers":
        out = run_workers(base, int(argv[3]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    for name, s in sorted(out):
        print(name, s)


if __name__ == "__main__":
    main(sys.argv)

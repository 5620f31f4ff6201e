"""A descriptor given out while another thread's close of the same number is in progress, made
to happen every run: a worker's open enters and blocks copying its path (the path's page is
missing, registered with userfaultfd) before the kernel picks the lowest free fd; the main
thread then reads that fd (still its own file), closes it, and only then lets the copy finish. In entry order the main
thread's close comes after the worker's open, which returns the number the close freed.

usage: fd_race.py DIR   (DIR/a.cfg is opened and closed by the main thread, DIR/b.cfg by the
worker: open, fstat, read, close). Needs userfaultfd (root, or vm.unprivileged_userfaultfd=1).
Prints "<closed fd> <worker's fd>".
"""

import ctypes
import fcntl
import mmap
import os
import select
import struct
import sys
import threading

SYS_USERFAULTFD = {"x86_64": 323, "aarch64": 282}[os.uname().machine]
UFFDIO_API, UFFDIO_REGISTER, UFFDIO_COPY = 0xC018AA3F, 0xC020AA00, 0xC028AA03
UFFDIO_REGISTER_MODE_MISSING = 1
AT_FDCWD = -100

d = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.openat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
uffd = libc.syscall(SYS_USERFAULTFD, os.O_CLOEXEC | os.O_NONBLOCK)
if uffd < 0:
    sys.exit(f"userfaultfd: {os.strerror(ctypes.get_errno())}")
fcntl.ioctl(uffd, UFFDIO_API, bytearray(struct.pack("QQQ", 0xAA, 0, 0)))
page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
addr = ctypes.addressof(ctypes.c_char.from_buffer(page))  # not touched: the page stays missing
fcntl.ioctl(uffd, UFFDIO_REGISTER, bytearray(struct.pack("QQQQ", addr, mmap.PAGESIZE, UFFDIO_REGISTER_MODE_MISSING, 0)))
keep = os.open(os.path.join(d, "a.cfg"), os.O_RDONLY)  # the lowest free descriptor
got = {}


def worker() -> None:
    fd = libc.openat(AT_FDCWD, addr, os.O_RDONLY)  # ctypes lets the GIL go while it blocks
    got["fd"] = fd
    os.fstat(fd)
    os.read(fd, 64)
    os.close(fd)


t = threading.Thread(target=worker)
t.start()
select.select([uffd], [], [])
os.read(uffd, 32)  # the fault message: the worker is blocked in its open's path copy
os.pread(keep, 8, 0)  # still a.cfg: the worker's open, which entered first, has no number yet
os.close(keep)
src = ctypes.create_string_buffer(os.path.join(d, "b.cfg").encode(), mmap.PAGESIZE)
fcntl.ioctl(uffd, UFFDIO_COPY, bytearray(struct.pack("QQQQq", addr, ctypes.addressof(src), mmap.PAGESIZE, 0, 0)))
t.join()
print(keep, got["fd"])

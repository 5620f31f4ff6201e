"""The other side of a sixty-fifth-set case (tests/scenarios/real_sixtyfifth.py), never recorded:
a server, a lock holder, a reader, started by a case's setup before the recorded run. It prints
`ready` once its side is in place. With `--after MARKER` it makes the fault transient: it keeps
the fault until the recorded program is seen in its backoff -- a process whose command line (or
its parent's) holds MARKER sleeping in nanosleep/clock_nanosleep or in a poll of no descriptors,
or (flock) queued behind the lock in /proc/locks -- so the program's first attempt has failed,
and then removes it (opens the socket, releases the lock). Polled, never a guessed sleep."""

from __future__ import annotations

import argparse
import fcntl
import os
import socket
import sqlite3
import struct
import sys
import time

SLEEPS = {35, 230}  # nanosleep, clock_nanosleep
POLLS = {7, 271}  # poll, ppoll
SELECTS = {23, 270}  # select, pselect6
REPLY = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"state\":\"ready\"}"


def ready() -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()


def _cmdline(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _ppid(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[1].decode()
    except (OSError, IndexError):
        return ""


def _in_backoff(pid: str) -> bool:
    """The process is blocked in a sleep: nanosleep, or poll/select of no descriptors."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            fields = f.read().split()
    except OSError:
        return False
    if not fields or not fields[0].isdigit():
        return False
    nr = int(fields[0])
    args = [int(a, 16) for a in fields[1:7]]
    if nr in SLEEPS:
        return True
    if nr in POLLS:
        return args[1] == 0  # no descriptors: a timed wait
    if nr in SELECTS:
        return args[0] == 0
    return False


def wait_backoff(marker: str) -> None:
    """Until a process whose command line (or its parent's) holds `marker` sleeps in a backoff."""
    want = marker.encode()
    me = str(os.getpid())
    while True:
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid == me:
                continue
            cmd = _cmdline(pid)
            if b"t65-helper" in cmd:
                continue
            if (want in cmd or want in _cmdline(_ppid(pid))) and _in_backoff(pid):
                return
        time.sleep(0.002)


def wait_flock_waiter(path: str) -> None:
    """Until /proc/locks shows a request queued behind the FLOCK on `path` (a blocked waiter)."""
    ino = os.stat(path).st_ino
    while True:
        with open("/proc/locks") as f:
            for line in f:
                if "->" in line and "FLOCK" in line and line.split()[-3].endswith(f":{ino}"):
                    return
        time.sleep(0.002)


def serve(sock: socket.socket, reset_first: bool = False, reset_all: bool = False) -> None:
    """Answer each request with REPLY; reset (RST: SO_LINGER 0) the first or every connection."""
    sock.listen(16)
    ready_sent = False
    n = 0
    while True:
        if not ready_sent:
            ready()
            ready_sent = True
        conn, _ = sock.accept()
        n += 1
        try:
            conn.recv(65536)
            if reset_all or (reset_first and n == 1):
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                conn.sendall(REPLY)
                conn.shutdown(socket.SHUT_WR)
                conn.recv(65536)
        except OSError:
            pass
        finally:
            conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("target")
    ap.add_argument("--after", help="keep the fault until a process with this marker is in its backoff")
    ap.add_argument("--reset", action="store_true", help="tcp: reset every connection")
    ap.add_argument("--reset-first", action="store_true", help="tcp: reset the first connection only")
    a = ap.parse_args()

    if a.mode == "tcp":  # an HTTP server on 127.0.0.1:PORT
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", int(a.target)))
        serve(s, reset_first=a.reset_first, reset_all=a.reset)
    elif a.mode == "unix-http":  # an HTTP server on a Unix socket, after --after if given
        if a.after:
            # a stale socket file of a server that died: connects are refused until it is back
            stale = socket.socket(socket.AF_UNIX)
            stale.bind(a.target)
            stale.close()
            ready()
            wait_backoff(a.after)
            os.unlink(a.target)
        s = socket.socket(socket.AF_UNIX)
        s.bind(a.target)
        if a.after:
            s.listen(16)
            serve_quiet(s)
        else:
            serve(s)
    elif a.mode == "unix-dgram":  # the path taken by a datagram socket: stream connects EPROTOTYPE
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(a.target)
        ready()
        while True:
            s.recv(65536)
    elif a.mode == "unix-echo":  # a Unix stream server that sends a line, appearing after --after
        if a.after:
            ready()
            wait_backoff(a.after)
        s = socket.socket(socket.AF_UNIX)
        s.bind(a.target + ".tmp")
        os.rename(a.target + ".tmp", a.target)
        s.listen(16)
        if not a.after:
            ready()
        while True:
            conn, _ = s.accept()
            try:
                conn.sendall(b"token=t65 ok\n")
            finally:
                conn.close()
    elif a.mode == "fcntl":  # a write lock held, released after --after (or never)
        fd = os.open(a.target, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.lockf(fd, fcntl.LOCK_EX)
        ready()
        if a.after:
            wait_backoff(a.after)
            fcntl.lockf(fd, fcntl.LOCK_UN)
        while True:
            time.sleep(3600)
    elif a.mode == "flock":  # an flock held until a waiter queues (with --after) or for good
        fd = os.open(a.target, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        ready()
        if a.after:
            wait_flock_waiter(a.target)
            fcntl.flock(fd, fcntl.LOCK_UN)
        while True:
            time.sleep(3600)
    elif a.mode == "sqlite":  # an exclusive transaction held until --after
        db = sqlite3.connect(a.target, isolation_level=None)
        db.execute("BEGIN EXCLUSIVE")
        db.execute("INSERT INTO jobs VALUES ('t65-holder', 'running')")
        ready()
        wait_backoff(a.after)
        db.execute("ROLLBACK")
        db.close()
        while True:
            time.sleep(3600)
    elif a.mode == "fifo-reader":  # a reader of the FIFO (O_RDWR: the open never waits), after --after if given
        if a.after:
            ready()
            wait_backoff(a.after)
        fd = os.open(a.target, os.O_RDWR)
        if not a.after:
            ready()
        while os.read(fd, 65536):
            pass
        while True:
            time.sleep(3600)
    elif a.mode == "fifo-writer":  # a writer that sends a record after --after
        fd = os.open(a.target, os.O_RDWR)
        if a.after:
            ready()
            wait_backoff(a.after)
        os.write(fd, b"job=t65 state=ready\n")
        if not a.after:
            ready()
        while True:
            time.sleep(3600)
    elif a.mode == "rmdir":  # a stale lock directory removed after --after
        ready()
        wait_backoff(a.after)
        os.rmdir(a.target)
    elif a.mode == "unmount":  # a mount over the target lifted after --after
        ready()
        wait_backoff(a.after)
        os.system(f"umount {a.target}")
    else:
        sys.exit(f"t65-helper: unknown mode {a.mode}")


def serve_quiet(s: socket.socket) -> None:
    """serve() for a socket whose `ready` was already said."""
    while True:
        conn, _ = s.accept()
        try:
            conn.recv(65536)
            conn.sendall(REPLY)
        except OSError:
            pass
        finally:
            conn.close()


if __name__ == "__main__":
    main()

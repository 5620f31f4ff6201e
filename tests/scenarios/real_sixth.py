"""A sixth set of real programs with one real fault each, in territory the first five sets
barely touch:

- **threads racing**: a C program whose pthreads each read one shard (the fault in one
  worker: a shard missing, a shard unreadable), a Python thread pool pinging three backends
  (one down: a blocking connect refused), perl ithreads writing parts (one part's name taken
  by a directory), a thread pool writing to a read-only bind mount;
- **servers, signals and retries**: a Python HTTP server (its own threads, stopped with
  SIGTERM) started by a bash coproc and fetched by curl, whose docroot symlink points at a
  release that is not there or whose page is root's; a systemd-style restart loop in sh
  around a service whose config it may not read; retry loops that give up where the good
  runs retry the same call and get past it (lockf never freed, a dependency never ready);
- **IPC**: a unix socket whose file a crashed server left (bind EADDRINUSE), an agent socket
  that was never created (connect ENOENT), logger against a syslog socket whose reader died
  (ECONNREFUSED on a datagram socket), an abstract-namespace singleton guard, a POSIX message
  queue larger than ``fs.mqueue.msg_max`` (EINVAL), SysV shared memory over ``kernel.shmmax``
  (EINVAL), semaphore sets over ``semmni`` (ENOSPC), a message queue over ``msgmnb`` (msgsnd
  IPC_NOWAIT EAGAIN) -- the SysV limits set in a private IPC namespace; a server whose own
  subshell lowers ``ulimit -n`` (accept4 EMFILE in the child only, ECONNRESET in its clients);
- **devices**: a verbs-style device node copied from another host, whose major no loaded
  driver owns (open ENXIO), stty on a console path that is a log file (ioctl ENOTTY);
- **file locks and file systems**: lockf held by another process (fcntl EAGAIN), xattrs on
  a ramfs scratch directory (EOPNOTSUPP where tmpfs says ENODATA), O_DIRECT on ramfs (EINVAL),
  an atomic writer's rename across mounts (EXDEV), O_NOFOLLOW meeting a planted symlink
  (ELOOP), ``ln -sfn`` on a read-only bind mount (EROFS), tar into a tmpfs out of inodes
  (ENOSPC), mv of a log directory that is a mount point (EBUSY), ln of root's file under
  ``fs.protected_hardlinks`` (EPERM, the source's fault);
- **other languages**: awk's ``print > file`` into a removed directory, make's ``include`` of
  an unreadable fragment, sqlite3 reading a WAL database in a directory it cannot write.

Same types and harness as real.py (`Scenario`, `NoAnomalyCase`). The expectations are what
`strace -f` shows a person looking for the fault, never what the differ prints. The
good-vs-good cases (`QUIET_SIXTH`) carry run-to-run noise: pthreads and thread pools finishing
in any order, a bash coproc server's threads and its SIGTERM, a restart loop polling for a
dependency that appears after a varying delay, a lock retried until its holder lets go (EAGAIN
a varying number of times), xattr cache misses (ENODATA), SysV and POSIX IPC, a stale socket
file cleaned up in one run only, make's optional dependency files, awk's outputs opened in
input order, a server killed at a varying moment, logger.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .catalog import umount_after, write
from .harness import PORTS, NoAnomalyCase, Scenario
from .real import NOBODY_UID, own
from .real_fifth import _cc, _root_only
from .real_third import BACKGROUND

PY3 = "/usr/bin/python3"
NO_PATH = ""  # the fault's call has no path (a SysV IPC object; a POSIX queue is mqueue:/NAME)
BACKEND_PORTS = (PORTS[7], PORTS[8], PORTS[9])  # the thread pool's backends; PORTS[9] is down in the bad run
HTTP6_PORT = PORTS[10]
MQ_NAME = f"/tracebase6-jobq-{os.getpid()}"  # per session: two sessions never share a queue

PROBES_OPEN = frozenset({"openat", "open"})
PROBES_STAT = frozenset({"openat", "newfstatat", "stat", "statx", "access", "faccessat", "faccessat2"})


def _wait_for(path: Path) -> None:
    for _ in range(400):
        if path.exists():
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"{path} never appeared")


class _Sockets:
    """Listening sockets held by this process (a backend, an agent): connections complete in
    the kernel's backlog, no accept needed. stop() closes them all (socket files stay)."""

    def __init__(self) -> None:
        self.socks: list[socket.socket] = []

    def tcp(self, port: int) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(64)
        self.socks.append(s)

    def unix(self, path: Path, kind: int = socket.SOCK_STREAM) -> None:
        s = socket.socket(socket.AF_UNIX, kind)
        s.bind(str(path))
        if kind == socket.SOCK_STREAM:
            s.listen(64)
        self.socks.append(s)

    def stop(self, base: Path | None = None) -> None:  # noqa: ARG002 - a teardown
        while self.socks:
            self.socks.pop().close()


SOCKETS = _Sockets()


def _stop_all(base: Path | None = None) -> None:  # noqa: ARG001 - a teardown
    SOCKETS.stop()
    BACKGROUND.stop()


# --- threads: pthreads reading shards -------------------------------------------------------
SHARDS_C = r"""#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static const char *dir;
static long sums[16];
static int fails[16];
static void *work(void *arg) {
    long i = (long)arg;
    char p[4096];
    snprintf(p, sizeof p, "%s/shard-%ld.dat", dir, i);
    FILE *f = fopen(p, "r");
    if (!f) { perror(p); fails[i] = 1; return NULL; }
    int c;
    while ((c = fgetc(f)) != EOF) sums[i] += c;
    fclose(f);
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    dir = argv[1];
    int n = atoi(argv[2]), bad = 0;
    pthread_t t[16];
    for (long i = 0; i < n; i++) pthread_create(&t[i], NULL, work, (void *)i);
    long total = 0;
    for (int i = 0; i < n; i++) { pthread_join(t[i], NULL); bad |= fails[i]; total += sums[i]; }
    printf("%ld\n", total);
    return bad;
}
"""


def _shards(base: Path) -> None:
    (base / "shards").mkdir()
    for i in range(4):
        write(base / "shards" / f"shard-{i}.dat", f"{i}\n" * (200 + 50 * i))
    _cc(base, "bin/shards", SHARDS_C, "-pthread")


def shard_missing(base: Path, bad: bool) -> None:
    _shards(base)
    if bad:  # the producer of shard 2 failed upstream: its file was never published
        (base / "shards" / "shard-2.dat").unlink()


def shard_unreadable(base: Path, bad: bool) -> None:
    _shards(base)
    own(base)
    if bad:  # shard 3 was re-published by root with a umask of 077
        _root_only(base / "shards" / "shard-3.dat")


# --- threads: a pool pinging backends -------------------------------------------------------
PING_PY = ("import socket, sys\n"
           "from concurrent.futures import ThreadPoolExecutor\n"
           "ports = [int(p) for p in open(sys.argv[1]).read().split()]\n"
           "def ping(port):\n"
           "    s = socket.socket()\n"
           "    try:\n"
           "        s.connect(('127.0.0.1', port))\n"
           "        s.sendall(b'ping\\n')\n"
           "        return None\n"
           "    except OSError as e:\n"
           "        return f'backend {port}: {e}'\n"
           "    finally:\n"
           "        s.close()\n"
           "with ThreadPoolExecutor(len(ports)) as ex:\n"
           "    errors = [e for e in ex.map(ping, ports) if e]\n"
           "for e in errors:\n"
           "    print(e, file=sys.stderr)\n"
           "sys.exit(1 if errors else 0)\n")


def backend_down(base: Path, bad: bool) -> None:
    SOCKETS.stop()
    write(base / "ping.py", PING_PY)
    write(base / "backends", " ".join(map(str, BACKEND_PORTS)) + "\n")
    for port in BACKEND_PORTS[:-1] if bad else BACKEND_PORTS:  # the third backend crashed
        SOCKETS.tcp(port)


# --- threads: perl ithreads writing parts ---------------------------------------------------
PARTS_PL = ('use strict; use threads;\n'
            'my $dir = shift;\n'
            'my @t = map { my $i = $_; threads->create(sub {\n'
            '    open(my $fh, ">", "$dir/part-$i.txt") or return "part-$i: $!";\n'
            '    print $fh "row $_\\n" for 1 .. 200; close($fh) or return "part-$i: $!"; return "" }) } 0 .. 3;\n'
            'my @err = grep { length } map { $_->join } @t;\n'
            'print STDERR "$_\\n" for @err; exit(@err ? 1 : 0);\n')


def part_is_dir(base: Path, bad: bool) -> None:
    write(base / "parts.pl", PARTS_PL)
    (base / "out").mkdir()
    if bad:  # an earlier tool unpacked a directory where part 1 goes
        (base / "out" / "part-1.txt").mkdir()


# --- threads: a pool writing to a read-only bind mount --------------------------------------
WRITERS_PY = ("import os, sys\n"
              "from concurrent.futures import ThreadPoolExecutor\n"
              "out = sys.argv[1]\n"
              "def write(i):\n"
              "    with open(os.path.join(out, f'report-{i}.csv'), 'w') as fh:\n"
              "        fh.write('x,y\\n' * 100)\n"
              "with ThreadPoolExecutor(3) as ex:\n"
              "    list(ex.map(write, range(3)))\n")


def writers_readonly_bind(base: Path, bad: bool) -> None:
    write(base / "writers.py", WRITERS_PY)
    (base / "reports").mkdir()
    if bad:  # the reports directory is a read-only bind mount in this container
        subprocess.run(["mount", "--bind", str(base / "reports"), str(base / "reports")], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(base / "reports")], check=True)


# --- a server with threads and signals, started by a bash coproc ----------------------------
# SIGTERM stops it gracefully: server_close() joins the handler threads (not daemons), so a
# request in flight is finished, not cut short at a moment that varies run to run.
SERVER_PY = ("import functools, http.server, signal, sys\n"
             "root, port = sys.argv[1], int(sys.argv[2])\n"
             "class Quiet(http.server.SimpleHTTPRequestHandler):\n"
             "    def log_message(self, *args):\n"
             "        pass\n"
             "class Server(http.server.ThreadingHTTPServer):\n"
             "    allow_reuse_address = True\n"
             "    daemon_threads = False\n"
             "srv = Server(('127.0.0.1', port), functools.partial(Quiet, directory=root))\n"
             "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
             "print('ready', flush=True)\n"
             "try:\n"
             "    srv.serve_forever()\n"
             "finally:\n"
             "    srv.server_close()\n")
SERVE_SH = ('coproc SRV {{ exec {py} -S {b}/server.py {b}/www/current {port}; }}\n'
            'read -r line <&"${{SRV[0]}}"\n'
            '/usr/bin/curl -sf -o {b}/page.html http://127.0.0.1:{port}/index.html\n'
            'rc=$?\n'
            'kill $SRV_PID; wait $SRV_PID\n'
            'exit $rc\n')


# The same server with daemon handler threads (ThreadingHTTPServer's default) and no join: the
# exit cuts the handler wherever it is (a thread its run's teardown cut off: baseline/run/diff.py).
DAEMON_SERVER_PY = ("import functools, http.server, signal, sys\n"
                    "root, port = sys.argv[1], int(sys.argv[2])\n"
                    "class Quiet(http.server.SimpleHTTPRequestHandler):\n"
                    "    def log_message(self, *args):\n"
                    "        pass\n"
                    "http.server.ThreadingHTTPServer.allow_reuse_address = True\n"
                    "srv = http.server.ThreadingHTTPServer(('127.0.0.1', port), functools.partial(Quiet, directory=root))\n"
                    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
                    "print('ready', flush=True)\n"
                    "srv.serve_forever()\n")


def _site_daemon_threads(base: Path, run: int) -> None:
    _site(base)
    write(base / "server.py", DAEMON_SERVER_PY)


def _site(base: Path) -> None:
    write(base / "server.py", SERVER_PY)
    write(base / "serve.sh", SERVE_SH.format(py=PY3, b=base, port=HTTP6_PORT))
    (base / "www" / "releases" / "r1").mkdir(parents=True)
    write(base / "www" / "releases" / "r1" / "index.html", "<html><body>build 41</body></html>\n")
    (base / "www" / "current").symlink_to("releases/r1")


def docroot_release_missing(base: Path, bad: bool) -> None:
    _site(base)
    if bad:  # the deploy flipped the symlink before the release was unpacked
        (base / "www" / "current").unlink()
        (base / "www" / "current").symlink_to("releases/r2")


def docroot_page_unreadable(base: Path, bad: bool) -> None:
    _site(base)
    own(base)
    if bad:  # the release was unpacked by root with a umask of 077
        _root_only(base / "www" / "releases" / "r1" / "index.html")


# --- a systemd-style restart loop -----------------------------------------------------------
SVC_PY = ("import sys\n"
          "conf = dict(line.split('=', 1) for line in open(sys.argv[1]).read().split())\n"
          "print('listening on', conf['port'])\n")
RESTART_SH = ('i=0\n'
              'while [ $i -lt 3 ]; do\n'
              '    {py} -S {b}/svc.py {b}/etc/svc.conf && exit 0\n'
              '    i=$((i + 1))\n'
              'done\n'
              'echo "svc: giving up after $i attempts" >&2\n'
              'exit 1\n')


def restart_config_unreadable(base: Path, bad: bool) -> None:
    write(base / "svc.py", SVC_PY)
    write(base / "restart.sh", RESTART_SH.format(py=PY3, b=base))
    (base / "etc").mkdir()
    write(base / "etc" / "svc.conf", "port=8080\nworkers=4\n")
    own(base)
    if bad:  # the config management wrote the file as root, mode 0600
        _root_only(base / "etc" / "svc.conf")


# --- IPC: unix sockets ----------------------------------------------------------------------
UNIX_SERVER_PY = ("import os, socket, sys\n"
                  "s = socket.socket(socket.AF_UNIX)\n"
                  "s.bind(sys.argv[1])\n"
                  "s.listen(8)\n"
                  "print('serving', sys.argv[1])\n"
                  "s.close()\n"
                  "os.unlink(sys.argv[1])\n")


def _stale_socket(path: Path) -> None:
    """What a crashed server leaves: its socket file, nobody listening."""
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()


def unix_stale_socket_bind(base: Path, bad: bool) -> None:
    write(base / "server.py", UNIX_SERVER_PY)
    (base / "run").mkdir()
    if bad:  # the previous server was killed with SIGKILL: its socket file stayed
        _stale_socket(base / "run" / "app.sock")


AGENT_PL = ('use strict; use IO::Socket::UNIX;\n'
            'my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $ARGV[0])\n'
            '    or die "cannot reach the agent at $ARGV[0]: $!\\n";\n'
            'print $s "status\\n"; close($s); print "agent ok\\n";\n')


def agent_never_started(base: Path, bad: bool) -> None:
    SOCKETS.stop()
    write(base / "agent.pl", AGENT_PL)
    (base / "run").mkdir()
    if not bad:  # the bad run: the agent's unit failed before it created its socket
        SOCKETS.unix(base / "run" / "agent.sock")


def syslog_reader_died(base: Path, bad: bool) -> None:
    SOCKETS.stop()
    if bad:  # the log daemon died; its datagram socket's file stayed
        _stale_socket_dgram(base / "log.sock")
    else:
        SOCKETS.unix(base / "log.sock", socket.SOCK_DGRAM)


def _stale_socket_dgram(path: Path) -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(str(path))
    s.close()


ABSTRACT_PY = ("import socket, sys\n"
               "guard = socket.socket(socket.AF_UNIX)\n"
               "try:\n"
               "    guard.bind('\\0' + sys.argv[1])\n"
               "except OSError as e:\n"
               "    sys.exit(f'another instance is running ({e})')\n"
               "print('single instance')\n")
HOLD_ABSTRACT_PY = ("import socket, sys, time\n"
                    "s = socket.socket(socket.AF_UNIX)\n"
                    "s.bind('\\0' + sys.argv[1])\n"
                    "open(sys.argv[2], 'w').close()\n"
                    "time.sleep(60)\n")


def _abstract_name(base: Path) -> str:
    return f"tracebase6-{base.name}-{os.getpid()}"


def abstract_guard_taken(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    write(base / "guard.py", ABSTRACT_PY)
    if bad:  # a hung instance of the job still holds the name
        BACKGROUND.start([PY3, "-S", "-c", HOLD_ABSTRACT_PY, _abstract_name(base), str(base / "held")])
        _wait_for(base / "held")


# --- IPC: POSIX and SysV limits -------------------------------------------------------------
MQ_C = r"""#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    FILE *f = fopen(argv[1], "r");
    long maxmsg = 0, msgsize = 0;
    if (!f || fscanf(f, "%ld %ld", &maxmsg, &msgsize) != 2) return 2;
    fclose(f);
    struct mq_attr a = {0};
    a.mq_maxmsg = maxmsg;
    a.mq_msgsize = msgsize;
    mqd_t q = mq_open(argv[2], O_CREAT | O_RDWR, 0600, &a);
    if (q == (mqd_t)-1) { perror("mq_open"); return 1; }
    char buf[65536];
    mq_send(q, "job", 3, 0);
    mq_receive(q, buf, sizeof buf, NULL);
    mq_close(q);
    mq_unlink(argv[2]);
    puts("queue ok");
    return 0;
}
"""


def mq_too_deep(base: Path, bad: bool) -> None:
    _cc(base, "bin/mq", MQ_C, "-lrt")
    # the bad config asks for 64 messages: fs.mqueue.msg_max is 10 for an unprivileged user
    write(base / "queue.conf", "64 256\n" if bad else "8 256\n")
    own(base)


SHM_PL = ('use strict; use IPC::SysV qw(IPC_PRIVATE IPC_CREAT IPC_RMID);\n'
          'my $id = shmget(IPC_PRIVATE, 4 * 1024 * 1024, IPC_CREAT | 0600) // die "shmget: $!\\n";\n'
          'shmwrite($id, "job", 0, 3) or die "shmwrite: $!\\n";\n'
          'shmctl($id, IPC_RMID, 0); print "segment ok\\n";\n')
SEM_PL = ('use strict; use IPC::SysV qw(IPC_PRIVATE IPC_CREAT IPC_RMID);\n'
          'my @ids;\n'
          'for (1 .. 4) { my $id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600) // die "semget: $!\\n"; push @ids, $id }\n'
          'semctl($_, 0, IPC_RMID, 0) for @ids; print "semaphores ok\\n";\n')
MSG_PL = ('use strict; use IPC::SysV qw(IPC_PRIVATE IPC_CREAT IPC_NOWAIT IPC_RMID);\n'
          'my $id = msgget(IPC_PRIVATE, IPC_CREAT | 0600) // die "msgget: $!\\n";\n'
          'for my $i (1 .. 8) { msgsnd($id, pack("l! a*", 1, "x" x 500), IPC_NOWAIT) or die "msgsnd $i: $!\\n" }\n'
          'my $buf; msgrcv($id, $buf, 600, 0, 0) for 1 .. 8;\n'
          'msgctl($id, IPC_RMID, 0); print "queue ok\\n";\n')


def _ipc_ns(sysctl: str, script: str) -> Callable[[Path], list[str]]:
    """argv: a private IPC namespace whose limit (a /proc/sys/kernel file) comes from the
    file `limit`, then perl runs the script (what a container runtime's sysctl does)."""
    return lambda b: ["/usr/bin/unshare", "-i", "/bin/sh", "-c",
                      f"/usr/bin/cat {b}/limit > /proc/sys/kernel/{sysctl} && exec /usr/bin/perl {b}/{script}"]


def _ipc_limit(script_name: str, script: str, good: str, bad_value: str):
    def setup(base: Path, bad: bool) -> None:
        write(base / script_name, script)
        write(base / "limit", (bad_value if bad else good) + "\n")
    return setup


# --- devices ----------------------------------------------------------------------------------
VERBS_OPEN_PY = ("import os, sys\n"
                 "dev = open(sys.argv[1]).read().strip()\n"
                 "fd = os.open(dev, os.O_RDWR | os.O_CLOEXEC)\n"
                 "os.close(fd)\n"
                 "print('opened', dev)\n")


def device_no_driver(base: Path, bad: bool) -> None:
    write(base / "open_dev.py", VERBS_OPEN_PY)
    (base / "dev" / "infiniband").mkdir(parents=True)
    node = base / "dev" / "infiniband" / "uverbs0"
    # good: a node whose driver is loaded (mem's 1:3 stands in for the RDMA device this host
    # lacks); bad: the node copied from another host, 231:192 (ib_uverbs), no driver here
    os.mknod(node, 0o666 | 0o020000, os.makedev(231, 192) if bad else os.makedev(1, 3))
    write(base / "device.conf", f"{node}\n")


def console_not_tty(base: Path, bad: bool) -> None:
    write(base / "console.log", "boot ok\n")
    write(base / "console.conf", f"{base}/console.log\n" if bad else "/dev/ptmx\n")


# --- file locks -------------------------------------------------------------------------------
LOCKF_PY = ("import fcntl, os, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
            "try:\n"
            "    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
            "except OSError as e:\n"
            "    sys.exit(f'another instance holds {sys.argv[1]}: {e}')\n"
            "print('running')\n")
HOLD_LOCKF_PY = ("import fcntl, os, sys, time\n"
                 "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
                 "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
                 "open(sys.argv[2], 'w').close()\n"
                 "time.sleep(float(sys.argv[3]))\n")


def lockf_held(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    write(base / "job.py", LOCKF_PY)
    (base / "run").mkdir()
    write(base / "run" / "job.lock", "")
    if bad:  # the previous night's run hangs and still holds the lock
        BACKGROUND.start([PY3, "-S", "-c", HOLD_LOCKF_PY, f"{base}/run/job.lock", f"{base}/held", "60"])
        _wait_for(base / "held")


# --- file systems: xattrs, O_DIRECT, EXDEV, O_NOFOLLOW, EROFS, inodes --------------------------
XATTR_PY = ("import errno, hashlib, os, sys\n"
            "d = sys.argv[1]\n"
            "for name in sorted(os.listdir(d)):\n"
            "    p = os.path.join(d, name)\n"
            "    try:\n"
            "        cached = os.getxattr(p, 'user.sha256')\n"
            "    except OSError as e:\n"
            "        if e.errno != errno.ENODATA:\n"
            "            raise\n"
            "        cached = None\n"
            "    if cached is None:\n"
            "        with open(p, 'rb') as fh:\n"
            "            os.setxattr(p, 'user.sha256', hashlib.sha256(fh.read()).hexdigest().encode())\n"
            "print('checksums cached')\n")


def _scratch(base: Path, bad: bool) -> None:
    """good: scratch is a tmpfs; bad: the host's scratch is a ramfs (no xattrs, no O_DIRECT)."""
    (base / "scratch").mkdir()
    if bad:
        subprocess.run(["mount", "-t", "ramfs", "-o", "mode=0755", "tracebase-test", str(base / "scratch")], check=True)
    else:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tracebase-test", str(base / "scratch")],
                       check=True)


def xattr_unsupported(base: Path, bad: bool) -> None:
    write(base / "cache.py", XATTR_PY)
    _scratch(base, bad)
    for i in range(3):
        write(base / "scratch" / f"blob-{i}.bin", f"blob {i}\n" * 100)


ODIRECT_PY = ("import mmap, os, sys\n"
              "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)\n"
              "buf = mmap.mmap(-1, 1 << 16)\n"
              "buf.write(b'x' * (1 << 16))\n"
              "os.write(fd, buf)\n"
              "os.close(fd)\n"
              "print('checkpoint written')\n")


def odirect_unsupported(base: Path, bad: bool) -> None:
    write(base / "ckpt.py", ODIRECT_PY)
    _scratch(base, bad)


REPLACE_PY = ("import os, sys, tempfile\n"
              "fd, tmp = tempfile.mkstemp(dir=sys.argv[1], suffix='.json')\n"
              "os.write(fd, b'{\"epoch\": 7}\\n')\n"
              "os.fsync(fd)\n"
              "os.close(fd)\n"
              "os.replace(tmp, sys.argv[2])\n")


def replace_across_mounts(base: Path, bad: bool) -> None:
    write(base / "save.py", REPLACE_PY)
    (base / "tmp").mkdir()
    (base / "srv").mkdir()
    if bad:  # the state directory became a file system of its own
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tracebase-test", str(base / "srv")],
                       check=True)


NOFOLLOW_PY = ("import os, sys\n"
               "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o640)\n"
               "os.write(fd, b'job started\\n')\n"
               "os.close(fd)\n")


def log_is_symlink(base: Path, bad: bool) -> None:
    write(base / "log.py", NOFOLLOW_PY)
    (base / "log").mkdir()
    write(base / "target", "")
    if bad:  # someone planted a symlink where the log goes
        (base / "log" / "job.log").symlink_to(base / "target")
    else:
        write(base / "log" / "job.log", "previous run\n")


def ln_readonly_bind(base: Path, bad: bool) -> None:
    (base / "app" / "releases" / "r1").mkdir(parents=True)
    (base / "app" / "releases" / "r2").mkdir()
    (base / "app" / "current").symlink_to("releases/r1")
    if bad:  # the deploy runs in a container where the app directory is mounted read-only
        subprocess.run(["mount", "--bind", str(base / "app"), str(base / "app")], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(base / "app")], check=True)


def tar_inodes(base: Path, bad: bool) -> None:
    (base / "src" / "data").mkdir(parents=True)
    for i in range(40):
        write(base / "src" / "data" / f"f{i:02d}.txt", f"{i}\n")
    subprocess.run(["tar", "-C", str(base / "src"), "-cf", str(base / "data.tar"), "data"], check=True)
    (base / "mnt").mkdir()
    # bad: the scratch tmpfs was mounted with nr_inodes=20 (meant for a few big files)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=8m,mode=0755,nr_inodes={20 if bad else 400}",
                    "tracebase-test", str(base / "mnt")], check=True)


# --- other languages: awk, make ---------------------------------------------------------------
AWK = '{ print $2 > (dir "/" $1 ".tsv") }'


def _awk_input(base: Path, run: int = 0) -> None:
    rows = [f"{k}\t{i}" for i in range(60) for k in ("eu", "us", "ap")]
    if run:  # the upstream export's row order varies run to run
        random.Random(run).shuffle(rows)
    write(base / "in.tsv", "\n".join(rows) + "\n")


def awk_outdir_removed(base: Path, bad: bool) -> None:
    _awk_input(base)
    if not bad:  # bad: a cleanup job removed the output directory
        (base / "out").mkdir()


MAKEFILE = ("include config.mk\n"
            "OBJS = a.o b.o\n"
            "-include $(OBJS:.o=.d)\n"
            "all: out.txt\n"
            "out.txt: in.txt\n"
            "\tcp in.txt out.txt\n")


def make_include_unreadable(base: Path, bad: bool) -> None:
    write(base / "Makefile", MAKEFILE)
    write(base / "config.mk", "CFLAGS = -O2\n")
    write(base / "in.txt", "data\n")
    own(base)
    if bad:  # the fragment was regenerated by root's configure with a umask of 077
        _root_only(base / "config.mk")


# --- a server whose limit is set in its own subshell: EMFILE in the child only ----------------
ACCEPT_SERVER_PY = ("import socket, sys\n"
                    "port, n = int(sys.argv[1]), int(sys.argv[2])\n"
                    "lsn = socket.socket()\n"
                    "lsn.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                    "lsn.bind(('127.0.0.1', port))\n"
                    "lsn.listen(32)\n"
                    "print('ready', flush=True)\n"
                    "conns = [lsn.accept()[0] for _ in range(n)]\n"
                    "for c in conns:\n"
                    "    c.sendall(b'ok')\n"
                    "    c.close()\n")
ACCEPT_CLIENTS_PY = ("import socket, sys\n"
                     "port, n = int(sys.argv[1]), int(sys.argv[2])\n"
                     "socks = [socket.create_connection(('127.0.0.1', port)) for _ in range(n)]\n"
                     "got = 0\n"
                     "for s in socks:\n"
                     "    try:\n"
                     "        got += len(s.recv(2))\n"
                     "    except OSError:\n"
                     "        pass\n"
                     "sys.exit(0 if got == 2 * n else 1)\n")
ACCEPT_SH = ('coproc SRV {{ ulimit -n $(/usr/bin/cat {b}/limit); exec {py} -S {b}/server.py {port} 12; }}\n'
             'read -r line <&"${{SRV[0]}}"\n'
             '{py} -S {b}/clients.py {port} 12\n'
             'rc=$?\n'
             'wait $SRV_PID\n'
             'exit $rc\n')
ACCEPT_PORT = PORTS[5]


def server_child_nofile(base: Path, bad: bool) -> None:
    write(base / "server.py", ACCEPT_SERVER_PY)
    write(base / "clients.py", ACCEPT_CLIENTS_PY)
    write(base / "serve.sh", ACCEPT_SH.format(py=PY3, b=base, port=ACCEPT_PORT))
    # bad: the unit's LimitNOFILE copied from a tiny service, 10 descriptors for 12 clients
    write(base / "limit", "10\n" if bad else "64\n")


# --- sqlite3 in WAL mode, a directory the reader cannot write ---------------------------------
def sqlite_wal_dir(base: Path, bad: bool) -> None:
    (base / "db").mkdir()
    subprocess.run(["/usr/bin/sqlite3", str(base / "db" / "jobs.db"),
                    "pragma journal_mode=wal; create table t(x); insert into t values (1), (2);"],
                   check=True, capture_output=True)
    if not bad:  # bad: restored from backup by root: the directory and database are root's
        own(base)


# --- log rotation: the directory is a mount point now -------------------------------------------
def rotate_mountpoint(base: Path, bad: bool) -> None:
    (base / "logs").mkdir()
    if bad:  # the logs directory became a tmpfs of its own (a container volume)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tracebase-test", str(base / "logs")],
                       check=True)
    write(base / "logs" / "job.log", "line\n")


# --- hard-link archiving under fs.protected_hardlinks -------------------------------------------
def hardlink_not_owner(base: Path, bad: bool) -> None:
    (base / "spool").mkdir()
    (base / "archive").mkdir()
    write(base / "spool" / "report.csv", "a,b\n1,2\n")
    own(base)
    if bad:  # the report was produced by root's cron job: nobody may read it, not link it
        os.chown(base / "spool" / "report.csv", 0, 0)


# --- retries that give up: the good runs retry the same call and get past it ---------------------
LOCK_RETRY_PY_ARGS = "25"  # attempts, 20 ms apart: half a second


def lockf_retry_gives_up(base: Path, bad: bool) -> None:
    """good: the previous run lets go of the lock after 0.1 s (retried a few times); bad: it
    hangs holding it, the job's 25 attempts all fail EAGAIN and it gives up."""
    BACKGROUND.stop()
    write(base / "job.py", LOCK_RETRY_PY)
    (base / "run").mkdir()
    BACKGROUND.start([PY3, "-S", "-c", HOLD_LOCKF_PY, f"{base}/run/job.lock", f"{base}/held", "60" if bad else "0.1"])
    _wait_for(base / "held")


def dependency_never_ready(base: Path, bad: bool) -> None:
    """good: the dependency is ready after 0.05 s (polled a few times); bad: its unit failed,
    the file never appears, the start script gives up after 100 polls."""
    write(base / "svc.py", SVC_PY)
    (base / "etc").mkdir()
    write(base / "etc" / "svc.conf", "port=8080\nworkers=4\n")
    write(base / "wait.sh", WAIT_DEP_SH.format(py=PY3, b=base))
    if not bad:
        _ready_after_start(base, 0.05)


def _ready_after_start(base: Path, delay: float) -> None:
    """dep.ready appears `delay` s after the start script began waiting (it creates `waiting`
    first), not after this setup: a timer started here fired before the script's first check
    when the recorder took longer than the delay to start it (under load), and that good run
    polled no time at all -- no sleep child, a process the other good runs had."""
    def later() -> None:
        deadline = time.monotonic() + 60
        while not (base / "waiting").exists() and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(delay)
        with contextlib.suppress(OSError):  # the case is over, its directory gone (the script never ran)
            (base / "dep.ready").touch()

    threading.Thread(target=later, daemon=True).start()


# --- the set ------------------------------------------------------------------------------------
def _restart_argv(b: Path) -> list[str]:
    return ["/bin/sh", f"{b}/restart.sh"]


REAL_SIXTH: list[Scenario] = [
    # threads racing
    Scenario("pthreads_shard_missing", "C pthreads, one worker per shard",
             lambda b: [f"{b}/bin/shards", f"{b}/shards", "4"],
             shard_missing, PROBES_OPEN, "ENOENT", lambda b: f"{b}/shards/shard-2.dat",
             description="four threads open their shards in any order; shard 2 was never published"),
    Scenario("pthreads_shard_unreadable", "C pthreads, one worker per shard (nobody)",
             lambda b: [f"{b}/bin/shards", f"{b}/shards", "4"],
             shard_unreadable, PROBES_OPEN, "EACCES", lambda b: f"{b}/shards/shard-3.dat",
             unprivileged=True, description="shard 3 is root's 0600: one worker's fopen fails EACCES"),
    Scenario("threadpool_backend_down", "python3 ThreadPoolExecutor pings three backends",
             lambda b: [PY3, "-S", f"{b}/ping.py", f"{b}/backends"],
             backend_down, frozenset({"connect"}), "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{BACKEND_PORTS[-1]}",
             teardown=SOCKETS.stop, description="three threads connect at once; the third backend crashed: its "
             "blocking connect is refused"),
    Scenario("perl_threads_part_is_dir", "perl ithreads write four parts",
             lambda b: ["/usr/bin/perl", f"{b}/parts.pl", f"{b}/out"],
             part_is_dir, PROBES_OPEN, "EISDIR", lambda b: f"{b}/out/part-1.txt",
             description="a directory stands where part 1 goes: that thread's open fails EISDIR"),
    Scenario("threadpool_readonly_bind", "python3 ThreadPoolExecutor(3) writes reports",
             lambda b: [PY3, "-S", f"{b}/writers.py", f"{b}/reports"],
             writers_readonly_bind, PROBES_OPEN, "EROFS", lambda b: f"{b}/reports/report-*.csv",
             teardown=umount_after("reports"), description="the reports directory is a read-only bind mount: "
             "every writer's open fails EROFS"),
    # a server with threads and signals, a restart loop
    Scenario("http_docroot_release_missing", "bash coproc python3 http.server; curl; kill",
             lambda b: ["/bin/bash", f"{b}/serve.sh"],
             docroot_release_missing, PROBES_STAT, "ENOENT", lambda b: f"{b}/www/current/index.html",
             description="the docroot symlink points at a release not unpacked: the server's stat and open of "
                         "the page fail ENOENT, 404, curl -f exits 22"),
    Scenario("http_page_unreadable", "bash coproc python3 http.server; curl; kill (nobody)",
             lambda b: ["/bin/bash", f"{b}/serve.sh"],
             docroot_page_unreadable, PROBES_OPEN, "EACCES", lambda b: f"{b}/www/current/index.html",
             unprivileged=True, description="the page is root's 0600: the server thread's open fails EACCES, 404"),
    Scenario("restart_loop_config_unreadable", "sh restart loop around python3 svc.py (nobody)",
             _restart_argv, restart_config_unreadable, PROBES_OPEN, "EACCES", lambda b: f"{b}/etc/svc.conf",
             unprivileged=True, description="the service's config is root's 0600: three starts, three EACCES, "
             "the loop gives up"),
    # IPC
    Scenario("unix_socket_stale_file_bind", "python3 unix-socket server",
             lambda b: [PY3, "-S", f"{b}/server.py", f"{b}/run/app.sock"],
             unix_stale_socket_bind, frozenset({"bind"}), "EADDRINUSE", lambda b: f"unix:{b}/run/app.sock",
             description="a killed server's socket file is still there: bind fails EADDRINUSE"),
    Scenario("perl_agent_socket_missing", "perl IO::Socket::UNIX client of an agent",
             lambda b: ["/usr/bin/perl", f"{b}/agent.pl", f"{b}/run/agent.sock"],
             agent_never_started, frozenset({"connect"}), "ENOENT", lambda b: f"unix:{b}/run/agent.sock",
             teardown=SOCKETS.stop, description="the agent never started: no socket file, connect fails ENOENT"),
    Scenario("logger_syslog_reader_died", "logger -d -u log.sock",
             lambda b: ["/usr/bin/logger", "-d", "-u", f"{b}/log.sock", "--socket-errors=on", "job done"],
             syslog_reader_died, frozenset({"connect", "sendto", "sendmsg"}), "ECONNREFUSED",
             lambda b: f"unix:{b}/log.sock", teardown=SOCKETS.stop,
             description="the log daemon died, its datagram socket file stayed: connect fails ECONNREFUSED"),
    Scenario("abstract_singleton_taken", "python3 job with an abstract-socket singleton guard",
             lambda b: [PY3, "-S", f"{b}/guard.py", _abstract_name(b)],
             abstract_guard_taken, frozenset({"bind"}), "EADDRINUSE", lambda b: "unix:*tracebase6-*",
             teardown=BACKGROUND.stop, description="a hung instance holds the abstract name: bind EADDRINUSE"),
    Scenario("mq_open_over_msg_max", "C mq_open with the config's queue depth (nobody)",
             lambda b: [f"{b}/bin/mq", f"{b}/queue.conf", MQ_NAME],
             mq_too_deep, frozenset({"mq_open"}), "EINVAL", lambda b: f"mqueue:{MQ_NAME}", unprivileged=True,
             description="64 messages asked, fs.mqueue.msg_max is 10: mq_open fails EINVAL"),
    Scenario("perl_shmget_over_shmmax", "unshare -i: kernel.shmmax from a file; perl shmget 4 MiB",
             _ipc_ns("shmmax", "shm.pl"), _ipc_limit("shm.pl", SHM_PL, "67108864", "1048576"),
             frozenset({"shmget"}), "EINVAL", lambda b: NO_PATH,
             description="the container's kernel.shmmax is 1 MiB: shmget of 4 MiB fails EINVAL"),
    Scenario("perl_semget_over_semmni", "unshare -i: kernel.sem from a file; perl semget x4",
             _ipc_ns("sem", "sem.pl"), _ipc_limit("sem.pl", SEM_PL, "250 32000 32 16", "250 32000 32 2"),
             frozenset({"semget"}), "ENOSPC", lambda b: NO_PATH,
             description="semmni is 2 in the container: the third semaphore set fails ENOSPC"),
    Scenario("perl_msgsnd_over_msgmnb", "unshare -i: kernel.msgmnb from a file; perl msgsnd IPC_NOWAIT",
             _ipc_ns("msgmnb", "msg.pl"), _ipc_limit("msg.pl", MSG_PL, "16384", "2048"),
             frozenset({"msgsnd"}), "EAGAIN", lambda b: NO_PATH,
             description="a 2 KiB queue: the fifth 500-byte message finds it full, msgsnd(IPC_NOWAIT) EAGAIN"),
    # devices
    Scenario("device_node_no_driver", "python3 opens the verbs device node from its config",
             lambda b: [PY3, "-S", f"{b}/open_dev.py", f"{b}/device.conf"],
             device_no_driver, PROBES_OPEN, "ENXIO", lambda b: f"{b}/dev/infiniband/uverbs0",
             description="uverbs0 is 231:192, ib_uverbs is not loaded: open fails ENXIO"),
    Scenario("stty_console_is_a_file", "sh: stty -F $(cat console.conf)",
             lambda b: ["/bin/sh", "-c", f"exec /usr/bin/stty -F $(/usr/bin/cat {b}/console.conf) -a"],
             console_not_tty, frozenset({"ioctl"}), "ENOTTY", lambda b: f"{b}/console.log",
             description="the console path is a log file: stty's TCGETS ioctl fails ENOTTY"),
    # file locks
    Scenario("lockf_held_by_hung_run", "python3 job with fcntl.lockf(LOCK_NB)",
             lambda b: [PY3, "-S", f"{b}/job.py", f"{b}/run/job.lock"],
             lockf_held, frozenset({"fcntl"}), "EAGAIN", lambda b: f"{b}/run/job.lock",
             teardown=BACKGROUND.stop, description="last night's run hangs holding the lock: F_SETLK fails EAGAIN"),
    # file systems
    Scenario("xattr_on_ramfs", "python3 caches checksums in user xattrs",
             lambda b: [PY3, "-S", f"{b}/cache.py", f"{b}/scratch"],
             xattr_unsupported, frozenset({"getxattr", "lgetxattr", "setxattr", "lsetxattr"}), "EOPNOTSUPP",
             lambda b: f"{b}/scratch/blob-*", teardown=umount_after("scratch"),
             description="scratch is a ramfs: getxattr fails EOPNOTSUPP where tmpfs said ENODATA"),
    Scenario("odirect_on_ramfs", "python3 writes a checkpoint with O_DIRECT",
             lambda b: [PY3, "-S", f"{b}/ckpt.py", f"{b}/scratch/ckpt.bin"],
             odirect_unsupported, PROBES_OPEN, "EINVAL", lambda b: f"{b}/scratch/ckpt.bin",
             teardown=umount_after("scratch"), description="ramfs has no O_DIRECT: open fails EINVAL"),
    Scenario("atomic_replace_exdev", "python3 mkstemp + os.replace into the state directory",
             lambda b: [PY3, "-S", f"{b}/save.py", f"{b}/tmp", f"{b}/srv/state.json"],
             replace_across_mounts, frozenset({"rename", "renameat", "renameat2"}), "EXDEV",
             lambda b: f"{b}/tmp/tmp*.json", teardown=umount_after("srv"),
             description="the state directory is its own file system: rename fails EXDEV"),
    Scenario("nofollow_log_symlink", "python3 opens its log with O_NOFOLLOW",
             lambda b: [PY3, "-S", f"{b}/log.py", f"{b}/log/job.log"],
             log_is_symlink, PROBES_OPEN, "ELOOP", lambda b: f"{b}/log/job.log",
             description="a symlink was planted where the log goes: open(O_NOFOLLOW) fails ELOOP"),
    Scenario("ln_sfn_readonly_bind", "ln -sfn releases/r2 current",
             lambda b: ["/usr/bin/ln", "-sfn", "releases/r2", f"{b}/app/current"],
             ln_readonly_bind, frozenset({"symlink", "symlinkat", "renameat", "renameat2", "rename"}), "EROFS",
             lambda b: f"{b}/app/*", teardown=umount_after("app"),
             description="the app directory is mounted read-only: ln's symlink fails EROFS"),
    Scenario("tar_x_out_of_inodes", "tar -xf into a tmpfs with nr_inodes=20",
             lambda b: ["/usr/bin/tar", "-C", f"{b}/mnt", "-xf", f"{b}/data.tar"],
             tar_inodes, frozenset({"openat", "mkdirat", "mkdir"}), "ENOSPC", lambda b: f"{b}/mnt/data/*",
             teardown=umount_after("mnt"), description="the tmpfs runs out of inodes: an open fails ENOSPC"),
    # other languages
    Scenario("awk_outdir_removed", "awk '{print > (dir \"/\" $1 \".tsv\")}'",
             lambda b: ["/usr/bin/awk", "-v", f"dir={b}/out", AWK, f"{b}/in.tsv"],
             awk_outdir_removed, PROBES_OPEN, "ENOENT", lambda b: f"{b}/out/eu.tsv",
             description="a cleanup job removed the output directory: awk's first output fails ENOENT"),
    Scenario("server_child_nofile", "bash coproc: (ulimit -n; python3 server); python3 clients",
             lambda b: ["/bin/bash", f"{b}/serve.sh"],
             server_child_nofile, frozenset({"accept", "accept4"}), "EMFILE", lambda b: NO_PATH,
             description="the server's subshell lowers its own limit to 10: its seventh accept fails EMFILE "
             "(the clients, in the parent's limit, see the connections reset)"),
    Scenario("sqlite_wal_dir_not_writable", "sqlite3 query of a WAL database (nobody)",
             lambda b: ["/usr/bin/sqlite3", f"{b}/db/jobs.db", "select count(*) from t"],
             sqlite_wal_dir, PROBES_OPEN, "EACCES", lambda b: f"{b}/db/jobs.db-wal",
             unprivileged=True, description="a WAL database needs its -wal and -shm files even to read: the "
             "directory is root's, the open(O_CREAT) of jobs.db-wal fails EACCES"),
    Scenario("mv_rotate_mountpoint", "mv logs logs.1 (rotation)",
             lambda b: ["/usr/bin/mv", f"{b}/logs", f"{b}/logs.1"],
             rotate_mountpoint, frozenset({"rename", "renameat", "renameat2"}), "EBUSY", lambda b: f"{b}/logs",
             teardown=umount_after("logs"), description="the logs directory is a mount point: rename fails EBUSY"),
    Scenario("ln_protected_hardlink", "ln spool/report.csv archive/ (nobody)",
             lambda b: ["/usr/bin/ln", f"{b}/spool/report.csv", f"{b}/archive/report.csv"],
             hardlink_not_owner, frozenset({"link", "linkat"}), "EPERM", lambda b: f"{b}/spool/report.csv",
             unprivileged=True, description="fs.protected_hardlinks: the report is root's and not writable by the "
             "job, linkat fails EPERM (the source's ownership is the fault)"),
    # retries that give up
    Scenario("lockf_retry_gives_up", "python3 job retrying lockf(LOCK_NB) 25 times",
             lambda b: [PY3, "-S", f"{b}/job.py", f"{b}/run/job.lock", LOCK_RETRY_PY_ARGS],
             lockf_retry_gives_up, frozenset({"fcntl"}), "EAGAIN", lambda b: f"{b}/run/job.lock",
             teardown=BACKGROUND.stop, description="the good runs' lock is let go after 0.1 s (EAGAIN a few "
             "times, then the lock); the hung holder never lets go: EAGAIN every time, 'lock never free'"),
    Scenario("wait_dependency_never_ready", "sh start script polls for its dependency",
             lambda b: ["/bin/sh", f"{b}/wait.sh"],
             dependency_never_ready, PROBES_STAT, "ENOENT", lambda b: f"{b}/dep.ready",
             description="the good runs' dependency appears after 0.05 s (polled with stat ENOENT a few times); "
             "its unit failed: the file never appears, the script gives up after 100 polls"),
    Scenario("make_include_unreadable", "make with include config.mk (nobody)",
             lambda b: ["/usr/bin/make", "-C", str(b)],
             make_include_unreadable, PROBES_OPEN, "EACCES", lambda b: f"{b}/config.mk",
             unprivileged=True, description="config.mk is root's 0600: make's include fails EACCES"),
]

# Scored by `bench.scenario_accuracy --real` only: each repeats the call, errno and kind of
# fault of a case the tests run (tests/test_real_programs_sixth.py keeps to about a minute).
BENCH_ONLY = frozenset({"pthreads_shard_unreadable", "http_page_unreadable"})


# --- good vs good: run-to-run noise -------------------------------------------------------------
WAIT_DEP_SH = (': > {b}/waiting\n'
               'i=0\n'
               'until [ -e {b}/dep.ready ]; do\n'
               '    i=$((i + 1)); [ $i -gt 100 ] && exit 1\n'
               '    /usr/bin/sleep 0.02\n'
               'done\n'
               'exec {py} -S {b}/svc.py {b}/etc/svc.conf\n')


def _dep_later(base: Path, run: int) -> None:
    """A dependency that becomes ready 0.05-0.25 s after the start, a different delay per run:
    the loop polls it a varying number of times (stat ENOENT, sleep children)."""
    write(base / "svc.py", SVC_PY)
    (base / "etc").mkdir()
    write(base / "etc" / "svc.conf", "port=8080\nworkers=4\n")
    write(base / "wait.sh", WAIT_DEP_SH.format(py=PY3, b=base))
    _ready_after_start(base, (0.05, 0.25, 0.12)[run % 3])


LOCK_RETRY_PY = ("import fcntl, os, sys, time\n"
                 "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
                 "for attempt in range(int(sys.argv[2]) if len(sys.argv) > 2 else 200):\n"
                 "    try:\n"
                 "        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
                 "        break\n"
                 "    except OSError:\n"
                 "        time.sleep(0.02)\n"
                 "else:\n"
                 "    sys.exit('lock never free')\n"
                 "print('got the lock after', attempt, 'retries')\n")


def _lock_contended(base: Path, run: int) -> None:
    """The lock's holder (the previous job, finishing) lets go after 0.1-0.3 s: retried with
    EAGAIN a varying number of times, every run."""
    BACKGROUND.stop()
    write(base / "job.py", LOCK_RETRY_PY)
    (base / "run").mkdir()
    hold = (0.1, 0.3, 0.2)[run % 3]
    BACKGROUND.start([PY3, "-S", "-c", HOLD_LOCKF_PY, f"{base}/run/job.lock", f"{base}/held", str(hold)])
    _wait_for(base / "held")


CLEANUP_SERVER_PY = ("import os, socket, sys\n"
                     "try:\n"
                     "    os.unlink(sys.argv[1])\n"
                     "except FileNotFoundError:\n"
                     "    pass\n"
                     "s = socket.socket(socket.AF_UNIX)\n"
                     "s.bind(sys.argv[1])\n"
                     "s.listen(8)\n"
                     "s.close()\n")


def _maybe_stale(base: Path, run: int) -> None:
    """A server that removes a stale socket file before binding: the last run finds one."""
    write(base / "server.py", CLEANUP_SERVER_PY)
    (base / "run").mkdir()
    if run == 2:
        _stale_socket(base / "run" / "app.sock")


KILLED_SERVER_PY = ("import signal, socket, sys, time\n"
                    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
                    "s = socket.socket(socket.AF_UNIX)\n"
                    "s.bind(sys.argv[1])\n"
                    "s.listen(8)\n"
                    "s.settimeout(0.05)\n"
                    "print('ready', flush=True)\n"
                    "while True:\n"
                    "    try:\n"
                    "        s.accept()[0].close()\n"
                    "    except TimeoutError:\n"
                    "        pass\n")
KILL_SH = ('coproc SRV {{ exec {py} -S {b}/srv.py {b}/srv.sock; }}\n'
           'read -r line <&"${{SRV[0]}}"\n'
           '/usr/bin/sleep $(/usr/bin/cat {b}/uptime)\n'
           'kill $SRV_PID; wait $SRV_PID\n')


def _killed_later(base: Path, run: int) -> None:
    write(base / "srv.py", KILLED_SERVER_PY)
    write(base / "kill.sh", KILL_SH.format(py=PY3, b=base))
    write(base / "uptime", ("0.07", "0.21", "0.13")[run % 3] + "\n")


def _backends_up(base: Path, run: int) -> None:
    backend_down(base, False)


def _make_quiet(base: Path, run: int) -> None:
    make_include_unreadable(base, False)


def _ipc_quiet(base: Path, run: int) -> None:
    write(base / "shm.pl", SHM_PL)
    write(base / "sem.pl", SEM_PL)
    write(base / "msg.pl", MSG_PL)


def _xattr_quiet(base: Path, run: int) -> None:
    """A plain directory (no mount: a good-vs-good case has no teardown to unmount it)."""
    write(base / "cache.py", XATTR_PY)
    (base / "scratch").mkdir()
    for i in range(3):
        write(base / "scratch" / f"blob-{i}.bin", f"blob {i}\n" * 100)


def _mq_quiet(base: Path, run: int) -> None:
    mq_too_deep(base, False)


QUIET_SIXTH: list[NoAnomalyCase] = [
    NoAnomalyCase(
        "pthreads_shards_any_order",
        lambda b: [f"{b}/bin/shards", f"{b}/shards", "4"],
        lambda b, i: _shards(b), description="four pthreads read their shards; which finishes first varies"),
    NoAnomalyCase(
        "threadpool_backends_up",
        lambda b: [PY3, "-S", f"{b}/ping.py", f"{b}/backends"],
        _backends_up, description="three threads connect to three backends at once"),
    NoAnomalyCase(
        "http_coproc_server_roundtrip",
        lambda b: ["/bin/bash", f"{b}/serve.sh"],
        lambda b, i: _site(b), description="a threaded http.server started by a bash coproc, fetched by curl, "
        "stopped with SIGTERM"),
    NoAnomalyCase(
        "http_daemon_threads_killed",
        lambda b: ["/bin/bash", f"{b}/serve.sh"],
        _site_daemon_threads, description="the coproc server with daemon handler threads: SIGTERM's exit cuts "
        "the handler at a varying point (before or after it closed the page and shut the connection down)"),
    NoAnomalyCase(
        "wait_for_dependency_poll",
        lambda b: ["/bin/sh", f"{b}/wait.sh"],
        _dep_later, description="a start script polls for a dependency that becomes ready after 0.05-0.25 s"),
    NoAnomalyCase(
        "lockf_retry_until_free",
        lambda b: [PY3, "-S", f"{b}/job.py", f"{b}/run/job.lock"],
        _lock_contended, description="the lock is held 0.1-0.3 s by a finishing run: lockf(LOCK_NB) EAGAIN "
        "retried a varying number of times"),
    NoAnomalyCase(
        "xattr_cache_misses",
        lambda b: [PY3, "-S", f"{b}/cache.py", f"{b}/scratch"],
        _xattr_quiet, description="getxattr ENODATA (nothing cached yet), then setxattr (the root file "
        "system's scratch directory)"),
    NoAnomalyCase(
        "sysv_ipc_perl",
        lambda b: ["/usr/bin/unshare", "-i", "/bin/sh", "-c",
                   f"/usr/bin/perl {b}/shm.pl && /usr/bin/perl {b}/sem.pl && /usr/bin/perl {b}/msg.pl"],
        _ipc_quiet, description="SysV shared memory, semaphores and a message queue in a private IPC namespace"),
    NoAnomalyCase(
        "posix_mq_roundtrip",
        lambda b: ["/usr/bin/setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups",
                   f"{b}/bin/mq", f"{b}/queue.conf", MQ_NAME],
        _mq_quiet, description="a POSIX message queue within the limits"),
    NoAnomalyCase(
        "unix_socket_stale_cleaned",
        lambda b: [PY3, "-S", f"{b}/server.py", f"{b}/run/app.sock"],
        _maybe_stale, description="a server unlinks its socket path before bind: ENOENT in two runs, a stale "
        "file removed in the third"),
    NoAnomalyCase(
        "server_killed_varying_uptime",
        lambda b: ["/bin/bash", f"{b}/kill.sh"],
        _killed_later, description="a unix-socket server whose accept times out every 50 ms, killed with "
        "SIGTERM after 0.07-0.21 s"),
    NoAnomalyCase(
        "make_optional_deps",
        lambda b: ["/usr/bin/make", "-C", str(b)],
        _make_quiet, description="make's -include of dependency files not generated yet (ENOENT, every run)"),
    NoAnomalyCase(
        "awk_outputs_input_order",
        lambda b: ["/usr/bin/awk", "-v", f"dir={b}/out", AWK, f"{b}/in.tsv"],
        lambda b, i: (_awk_input(b, i), (b / "out").mkdir()), description="awk opens its outputs in the order "
        "the keys come, which varies with the export"),
    NoAnomalyCase(
        "logger_to_socket",
        lambda b: ["/usr/bin/logger", "-d", "-u", f"{b}/log.sock", "--socket-errors=on", "job done"],
        lambda b, i: syslog_reader_died(b, False), description="logger to a datagram socket with a reader"),
    NoAnomalyCase(
        "stty_pty",
        lambda b: ["/bin/sh", "-c", f"exec /usr/bin/stty -F $(/usr/bin/cat {b}/console.conf) -a"],
        lambda b, i: console_not_tty(b, False), description="stty on a pseudo-terminal master"),
]


def quiet_teardown() -> None:
    """Stop what the cases started."""
    _stop_all()

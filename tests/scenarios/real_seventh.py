"""A seventh set of real programs with one real fault each, in territory the first six sets
do not touch:

- **datagrams and addresses**: a UDP metrics client whose collector is down (the ICMP port
  unreachable comes back as recvfrom ECONNREFUSED on the connected socket), a statsd-style
  batch grown past the 64 KiB datagram limit (sendto EMSGSIZE), a send to the loopback
  broadcast address without SO_BROADCAST (sendto EACCES), a listen address copied from
  another host (bind EADDRNOTAVAIL, python and curl ``--interface``);
- **network namespaces**: a container-style network namespace whose setup forgot to bring
  ``lo`` up (connect ENETUNREACH), one with IPv6 disabled where the service binds ``[::1]``
  (bind EADDRNOTAVAIL);
- **capabilities dropped from root** (``setpriv --bounding-set`` from a config, as a
  container runtime does): a raw ICMP socket without CAP_NET_RAW (socket EPERM), a root job
  reading another user's 0600 file without CAP_DAC_OVERRIDE (EACCES), mount without
  CAP_SYS_ADMIN, chroot without CAP_SYS_CHROOT, mknod without CAP_MKNOD, a daemon dropping
  to nobody without CAP_SETGID (setgroups EPERM), tar restoring ownership without CAP_CHOWN;
- **per-user-namespace limits** (``/proc/sys/user/*`` set inside ``unshare -U``): node's
  fs.watch over ``max_inotify_watches`` (inotify_add_watch ENOSPC, node's famous "System limit
  for number of file watchers reached"), ``max_inotify_instances`` (inotify_init1 EMFILE),
  ``max_mnt_namespaces`` (unshare ENOSPC);
- **resource limits not yet covered**: RLIMIT_MSGQUEUE (mq_open EMFILE), RLIMIT_STACK
  shrinking execve's argument space (E2BIG for a command line that fits the default);
- **execution**: a hook deployed without its x bit (execve EACCES), a script without a
  shebang run by a launcher that does not fall back to sh (execve ENOEXEC), asyncio watching a
  control FIFO that is a regular file (epoll_ctl EPERM);
- git's config.lock left by a killed ``git config`` (EEXIST);
- **timeouts**: a stopped UDP collector, a service whose accept queue is full (the SYN is
  dropped), servers that read the request and never answer (curl ``--max-time``, perl
  IO::Select, python asyncio, node http.get's timeout): the strace shows a poll, pselect6 or
  epoll_wait returning 0 after blocking -- no errno anywhere; and a regenerated /etc/hosts that
  lost the service's name, which sends the resolver to the nameserver (a new UDP socket).

Same types and harness as real.py (`Scenario`, `NoAnomalyCase`). The expectations are what
`strace -f` shows a person looking for the fault, never what the differ prints. The
good-vs-good cases (`QUIET_SEVENTH`) carry run-to-run noise: datagrams to a collector that
answers with a varying delay (in one case late enough for the client to time out and resend),
interpreter and loader probing over long search paths
(PYTHONPATH, perl -I, LD_LIBRARY_PATH of six directories), namespaces set up and torn down,
capabilities dropped that the job does not need, inotify watches seeing a varying number of
events, a FIFO fed in varying chunks, long command lines.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from .catalog import write
from .harness import PORTS, NoAnomalyCase, Scenario
from .real import NOBODY_UID
from .real_fifth import _cc
from .real_third import BACKGROUND, HTTP

PY3 = "/usr/bin/python3"
NODE = "/usr/bin/node"
NO_PATH = ""  # the fault's call has no path (a socket, a namespace, an epoll set; a queue is mqueue:/NAME)
UDP_PORT = PORTS[11]  # the metrics collector (UDP: nothing else of the sets uses UDP)
NS_PORT = 8080  # inside a private network namespace: no other listener can be there
FOREIGN_ADDR = "198.51.100.7"  # TEST-NET-2: never an address of this host
MQ_NAME = f"/tracebase7-jobq-{os.getpid()}"  # per session: two sessions never share a queue

PROBES_OPEN = frozenset({"openat", "open"})
PROBES_EXEC = frozenset({"execve", "execveat"})


def _sh(b: Path, script: str) -> list[str]:
    """argv of `sh -c script`, the script's {b} filled in."""
    return ["/bin/sh", "-c", script.format(b=b, py=PY3)]


# --- datagrams ---------------------------------------------------------------------------------
UDP_ECHO_PY = ("import socket, sys, time\n"
               "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
               "s.bind(('127.0.0.1', int(sys.argv[1])))\n"
               "open(sys.argv[2], 'w').close()\n"
               "delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0\n"
               "while True:\n"
               "    data, peer = s.recvfrom(65535)\n"
               "    time.sleep(delay)\n"
               "    s.sendto(b'ack ' + data[:32], peer)\n")
UDP_CLIENT_PY = ("import socket, sys\n"
                 "host, port = open(sys.argv[1]).read().split()\n"
                 "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                 "s.settimeout(2)\n"
                 "s.connect((host, int(port)))\n"
                 "for line in open(sys.argv[2]):\n"
                 "    s.send(line.encode())\n"
                 "    print(s.recv(100).decode())\n")
UDP_CLIENT_PL = ('use strict; use IO::Socket::INET;\n'
                 'open(my $c, "<", $ARGV[0]) or die; my ($h, $p) = split " ", <$c>;\n'
                 'my $s = IO::Socket::INET->new(PeerAddr => $h, PeerPort => $p, Proto => "udp") or die "socket: $!";\n'
                 'open(my $m, "<", $ARGV[1]) or die;\n'
                 'while (my $line = <$m>) { $s->send($line) or die "send: $!"; my $r; '
                 'defined($s->recv($r, 100)) or die "recv: $!"; print $r, "\\n"; }\n')


def _wait_for(path: Path) -> None:
    for _ in range(400):
        if path.exists():
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"{path} never appeared")


def _collector(base: Path, up: bool, delay: float = 0.0) -> None:
    BACKGROUND.stop()
    write(base / "client.py", UDP_CLIENT_PY)
    write(base / "client.pl", UDP_CLIENT_PL)
    write(base / "collector.conf", f"127.0.0.1 {UDP_PORT}\n")
    write(base / "metrics.txt", "".join(f"job.step{i}.seconds:{i * 0.25:.2f}|g\n" for i in range(4)))
    if up:
        BACKGROUND.start([PY3, "-S", "-c", UDP_ECHO_PY, str(UDP_PORT), f"{base}/up", str(delay)])
        _wait_for(base / "up")


def collector_down(base: Path, bad: bool) -> None:
    _collector(base, up=not bad)  # the collector crashed: nothing is bound to its port


STATSD_PY = ("import socket, sys\n"
             "host, port = open(sys.argv[1]).read().split()\n"
             "batch = open(sys.argv[2], 'rb').read()\n"
             "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
             "s.sendto(batch, (host, int(port)))\n"
             "print('sent', len(batch), 'bytes')\n")


def batch_too_big(base: Path, bad: bool) -> None:
    write(base / "statsd.py", STATSD_PY)
    write(base / "statsd.conf", f"127.0.0.1 {UDP_PORT}\n")
    n = 3000 if bad else 80  # the job grew to thousands of metrics: one batch of ~70 KB
    write(base / "batch.txt", "".join(f"job.worker{i:05d}.bytes:{i}|c\n" for i in range(n)))


def broadcast_target(base: Path, bad: bool) -> None:
    write(base / "statsd.py", STATSD_PY)
    # the bad config names the subnet's broadcast address (a copy from a LAN-discovery setup)
    write(base / "statsd.conf", f"{'127.255.255.255' if bad else '127.0.0.1'} {UDP_PORT}\n")
    write(base / "batch.txt", "job.done:1|c\n")


LISTEN_PY = ("import socket, sys\n"
             "host, port = open(sys.argv[1]).read().split()\n"
             "s = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET)\n"
             "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
             "s.bind((host, int(port)))\n"
             "s.listen(8)\n"
             "c = socket.create_connection((host, int(port)), timeout=2)\n"
             "peer, _ = s.accept()\n"
             "c.sendall(b'health')\n"
             "print(peer.recv(16).decode())\n")


def listen_addr_foreign(base: Path, bad: bool) -> None:
    write(base / "server.py", LISTEN_PY)
    # the config was copied from another host: its address is not one of ours
    write(base / "listen.conf", f"{FOREIGN_ADDR if bad else '127.0.0.1'} {PORTS[11]}\n")


def curl_interface_foreign(base: Path, bad: bool) -> None:
    (base / "www").mkdir()
    write(base / "www" / "status.txt", "ok\n")
    HTTP.start(base / "www", PORTS[11])
    write(base / "curl.conf", f"interface = {FOREIGN_ADDR if bad else '127.0.0.1'}\n"
                              f"url = http://127.0.0.1:{PORTS[11]}/status.txt\n")


def _http_stop(base: Path | None = None) -> None:  # noqa: ARG001 - a teardown
    HTTP.stop()


UDP_TIMEOUT_PY = ("import socket, sys\n"
                  "host, port = open(sys.argv[1]).read().split()\n"
                  "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                  "s.settimeout(0.5)\n"
                  "s.connect((host, int(port)))\n"
                  "for line in open(sys.argv[2]):\n"
                  "    s.send(line.encode())\n"
                  "    try:\n"
                  "        print(s.recv(100).decode())\n"
                  "    except TimeoutError:\n"
                  "        sys.exit('collector did not answer')\n")


def collector_hung(base: Path, bad: bool) -> None:
    _collector(base, up=True)
    write(base / "client_timeout.py", UDP_TIMEOUT_PY)
    if bad:  # the collector is stopped (SIGSTOP: a debugger, a frozen cgroup): bound, never answering
        BACKGROUND.procs[-1].send_signal(signal.SIGSTOP)


BACKLOG_SERVER_PY = ("import socket, sys, time\n"
                     "s = socket.socket()\n"
                     "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                     "s.bind(('127.0.0.1', int(sys.argv[1])))\n"
                     "s.listen(int(sys.argv[3]))\n"
                     "hung = sys.argv[4] == 'hung'\n"
                     "if hung:  # the accept loop is stuck: earlier clients fill the queue\n"
                     "    fillers = [socket.create_connection(('127.0.0.1', int(sys.argv[1]))) for _ in range(2)]\n"
                     "open(sys.argv[2], 'w').close()\n"
                     "while True:\n"
                     "    if hung:\n"
                     "        time.sleep(60)\n"
                     "    c, _ = s.accept()\n"
                     "    c.sendall(b'hello\\n')\n"
                     "    c.close()\n")
HEALTH_PY = ("import socket, sys\n"
             "host, port = open(sys.argv[1]).read().split()\n"
             "try:\n"
             "    c = socket.create_connection((host, int(port)), timeout=0.5)\n"
             "except TimeoutError:\n"
             "    sys.exit('service not answering')\n"
             "print(c.recv(16).decode().strip())\n")


def accept_queue_full(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    write(base / "health.py", HEALTH_PY)
    write(base / "service.conf", f"127.0.0.1 {UDP_PORT}\n")
    BACKGROUND.start([PY3, "-S", "-c", BACKLOG_SERVER_PY, str(UDP_PORT), f"{base}/up", "1" if bad else "16",
                      "hung" if bad else "ok"])
    _wait_for(base / "up")


HUNG_HTTP_PY = ("import socket, sys, time\n"
                "s = socket.socket()\n"
                "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                "s.bind(('127.0.0.1', int(sys.argv[1])))\n"
                "s.listen(16)\n"
                "open(sys.argv[2], 'w').close()\n"
                "conns = []\n"
                "while True:\n"
                "    c, _ = s.accept()\n"
                "    c.recv(4096)\n"
                "    if sys.argv[3] == 'hung':  # stuck on its backend: reads the request, never answers\n"
                "        conns.append(c)\n"
                "        continue\n"
                "    c.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Length: 3\\r\\n\\r\\nok\\n')\n"
                "    c.close()\n")


def http_server_hung(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    BACKGROUND.start([PY3, "-S", "-c", HUNG_HTTP_PY, str(UDP_PORT), f"{base}/up", "hung" if bad else "ok"])
    _wait_for(base / "up")


PERL_SELECT_PL = ('use strict; use IO::Socket::INET; use IO::Select;\n'
                  'my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0], Proto => "tcp") '
                  'or die "connect: $!";\n'
                  'print $s "GET / HTTP/1.0\\r\\n\\r\\n";\n'
                  'my $sel = IO::Select->new($s);\n'
                  '$sel->can_read(0.5) or die "no answer within 0.5 s\\n";\n'
                  'my $r; sysread($s, $r, 4096); print $r;\n')


def perl_server_hung(base: Path, bad: bool) -> None:
    write(base / "get.pl", PERL_SELECT_PL)
    http_server_hung(base, bad)


ASYNCIO_GET_PY = ("import asyncio, sys\n"
                  "async def main():\n"
                  "    reader, writer = await asyncio.open_connection('127.0.0.1', int(sys.argv[1]))\n"
                  "    writer.write(b'GET / HTTP/1.0\\r\\n\\r\\n')\n"
                  "    try:\n"
                  "        print((await asyncio.wait_for(reader.read(), 0.5)).decode())\n"
                  "    except TimeoutError:\n"
                  "        sys.exit('no answer within 0.5 s')\n"
                  "asyncio.run(main())\n")
NODE_GET_JS = ("const http = require('http');\n"
               "const req = http.get({host: '127.0.0.1', port: Number(process.argv[2]), path: '/', timeout: 500}, (res) => {\n"
               "  res.resume();\n"
               "  res.on('end', () => console.log('status', res.statusCode));\n"
               "});\n"
               "req.on('timeout', () => { console.error('no answer within 0.5 s'); process.exit(1); });\n"
               "req.on('error', (e) => { console.error(e.message); process.exit(1); });\n")


def client_server_hung(base: Path, bad: bool) -> None:
    write(base / "get.py", ASYNCIO_GET_PY)
    write(base / "get.js", NODE_GET_JS)
    http_server_hung(base, bad)


def hosts_entry_missing(base: Path, bad: bool) -> None:
    write(base / "resolve.py", "import socket, sys\n"
          "print(socket.getaddrinfo(sys.argv[1], 5432, socket.AF_INET, socket.SOCK_STREAM)[0][4])\n")
    entries = "127.0.0.1 localhost\n" + ("" if bad else "127.0.0.1 db.internal\n")  # a regenerated hosts file
    write(base / "hosts", entries)
    write(base / "resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")


RESOLVE_SH = ("/usr/bin/mount --bind {b}/hosts /etc/hosts && /usr/bin/mount --bind {b}/resolv.conf /etc/resolv.conf "
              "&& exec {py} -S {b}/resolve.py db.internal")


# --- network namespaces ------------------------------------------------------------------------
NETNS_SH = ('. {b}/net.conf\n'
            'exec {py} -S {b}/server.py {b}/listen.conf\n')


def loopback_down(base: Path, bad: bool) -> None:
    write(base / "server.py", LISTEN_PY)
    write(base / "listen.conf", f"127.0.0.1 {NS_PORT}\n")
    write(base / "start.sh", NETNS_SH.format(b=base, py=PY3))
    # the namespace's setup script: the bad one lost the line bringing lo up
    write(base / "net.conf", ": no interfaces to configure\n" if bad else "/usr/sbin/ip link set lo up\n")


def ipv6_disabled(base: Path, bad: bool) -> None:
    write(base / "server.py", LISTEN_PY)
    write(base / "listen.conf", f"::1 {NS_PORT}\n")
    write(base / "start.sh", NETNS_SH.format(b=base, py=PY3))
    write(base / "net.conf", "/usr/sbin/ip link set lo up\n"
          f"/usr/sbin/sysctl -qw net.ipv6.conf.lo.disable_ipv6={1 if bad else 0}\n")


def _netns_argv(b: Path) -> list[str]:
    return ["/usr/bin/unshare", "-n", "/bin/sh", f"{b}/start.sh"]


# --- capabilities dropped from root ------------------------------------------------------------
HARMLESS_DROP = "-sys_module"  # what the good runs' runtime drops: nothing these jobs use


def _caps_argv(tail: str) -> Callable[[Path], list[str]]:
    """The job run under the bounding set its runtime's config says (setpriv)."""
    return lambda b: _sh(b, "exec /usr/bin/setpriv --bounding-set=$(/usr/bin/cat {b}/caps.conf) " + tail)


def _caps(base: Path, bad: bool, dropped: str) -> None:
    write(base / "caps.conf", (dropped if bad else HARMLESS_DROP) + "\n")


RAW_PY = ("import os, socket, struct\n"
          "s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\n"
          "s.settimeout(1)\n"
          "body = struct.pack('!BBHHH', 8, 0, 0, os.getpid() & 0xffff, 1) + b'tracebase'\n"
          "words = sum(struct.unpack('!%dH' % (len(body) // 2), body[:len(body) // 2 * 2])) + (body[-1] << 8)\n"
          "words = (words >> 16) + (words & 0xffff)\n"
          "csum = ~(words + (words >> 16)) & 0xffff\n"
          "s.sendto(body[:2] + struct.pack('!H', csum) + body[4:], ('127.0.0.1', 0))\n"
          "print(len(s.recv(128)), 'bytes back')\n")


def raw_socket_no_cap(base: Path, bad: bool) -> None:
    write(base / "probe.py", RAW_PY)
    _caps(base, bad, "-net_raw")


def dac_override_dropped(base: Path, bad: bool) -> None:
    (base / "spool").mkdir()
    for name in ("a", "b"):
        p = write(base / "spool" / f"{name}.json", f'{{"job": "{name}"}}\n', 0o600)
        os.chown(p, NOBODY_UID, NOBODY_UID)  # the workers' own files: root reads them by capability
    _caps(base, bad, "-dac_override,-dac_read_search")


def mount_no_cap(base: Path, bad: bool) -> None:
    (base / "scratch").mkdir()
    _caps(base, bad, "-sys_admin")


def _umount_scratch(base: Path) -> None:
    subprocess.run(["umount", str(base / "scratch")], capture_output=True)


def chroot_no_cap(base: Path, bad: bool) -> None:
    (base / "jail" / "bin").mkdir(parents=True)
    _cc(base, "jail/bin/hello", '#include <unistd.h>\nint main(void){return write(1,"hi\\n",3)!=3;}\n', "-static")
    _caps(base, bad, "-sys_chroot")


def mknod_no_cap(base: Path, bad: bool) -> None:
    (base / "rootfs" / "dev").mkdir(parents=True)
    _caps(base, bad, "-mknod")


SETUID_PY = ("import os\n"
             "os.setgroups([])\n"
             "os.setgid(65534)\n"
             "os.setuid(65534)\n"
             "print(open(os.path.join(os.path.dirname(__file__), 'work.txt')).read())\n")


def setuid_no_cap(base: Path, bad: bool) -> None:
    write(base / "daemon.py", SETUID_PY)
    write(base / "work.txt", "queue drained\n")
    _caps(base, bad, "-setuid,-setgid")


def tar_chown_no_cap(base: Path, bad: bool) -> None:
    src = base / "src"
    (src / "app").mkdir(parents=True)
    for i in range(3):
        os.chown(write(src / "app" / f"part{i}.txt", f"part {i}\n"), NOBODY_UID, NOBODY_UID)
    os.chown(src / "app", NOBODY_UID, NOBODY_UID)
    subprocess.run(["tar", "-C", str(src), "-cf", str(base / "app.tar"), "app"], check=True)
    (base / "dst").mkdir()
    _caps(base, bad, "-chown")


# --- per-user-namespace limits -----------------------------------------------------------------
def _userns_argv(limit: str, tail: str) -> Callable[[Path], list[str]]:
    """Inside a new user namespace (root mapped to root), the limit from the config, then the job."""
    return lambda b: ["/usr/bin/unshare", "-U", "-r", "/bin/sh", "-c",
                      f"echo $(/usr/bin/cat {b}/limit.conf) > /proc/sys/user/{limit} && exec " + tail.format(b=b, py=PY3)]


WATCH_JS = ("const fs = require('fs');\n"
            "const path = require('path');\n"
            "const dirs = fs.readdirSync(process.argv[2]).map((d) => path.join(process.argv[2], d));\n"
            "const watchers = dirs.map((d) => fs.watch(d, () => {}));\n"
            "console.log('watching', watchers.length, 'directories');\n"
            "watchers.forEach((w) => w.close());\n")


def node_watch_limit(base: Path, bad: bool) -> None:
    write(base / "watch.js", WATCH_JS)
    for d in ("src", "lib", "conf", "assets"):
        (base / "tree" / d).mkdir(parents=True)
    write(base / "limit.conf", "2\n" if bad else "8192\n")  # watches allowed in the namespace


INOTIFY_PY = ("import ctypes, os, sys\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "fd = libc.inotify_init1(os.O_CLOEXEC)\n"
              "if fd < 0:\n"
              "    sys.exit('inotify_init1: ' + os.strerror(ctypes.get_errno()))\n"
              "wd = libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x100)\n"
              "print('watching', sys.argv[1], wd)\n")


def inotify_instances_limit(base: Path, bad: bool) -> None:
    write(base / "watch.py", INOTIFY_PY)
    (base / "incoming").mkdir()
    write(base / "limit.conf", "0\n" if bad else "128\n")


def mnt_ns_limit(base: Path, bad: bool) -> None:
    write(base / "limit.conf", "0\n" if bad else "64\n")
    write(base / "job.txt", "built\n")


# --- resource limits -----------------------------------------------------------------------------
MQ_PY = ("import ctypes, os, sys\n"
         "libc = ctypes.CDLL(None, use_errno=True)\n"
         "class Attr(ctypes.Structure):\n"
         "    _fields_ = [('flags', ctypes.c_long), ('maxmsg', ctypes.c_long), ('msgsize', ctypes.c_long),\n"
         "                ('curmsgs', ctypes.c_long), ('pad', ctypes.c_long * 4)]\n"
         "attr = Attr(0, 10, 8192, 0)\n"
         "q = libc.mq_open(sys.argv[1].encode(), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600, ctypes.byref(attr))\n"
         "if q < 0:\n"
         "    sys.exit('mq_open: ' + os.strerror(ctypes.get_errno()))\n"
         "libc.mq_send(q, b'job 1', 5, 0)\n"
         "libc.mq_unlink(sys.argv[1].encode())\n"
         "print('queued')\n")


def msgqueue_rlimit(base: Path, bad: bool) -> None:
    write(base / "mq.py", MQ_PY)
    write(base / "limit", "65536\n" if bad else "819200\n")  # bytes of queues: 10 x 8 KiB need ~82 KB


def _long_names(base: Path) -> None:
    write(base / "names.txt", "".join(f"shard-{i:05d}-of-06000.parquet\n" for i in range(6000)))


def stack_shrinks_args(base: Path, bad: bool) -> None:
    _long_names(base)
    # execve allows a quarter of RLIMIT_STACK for arguments, but never less than ARG_MAX (128 KiB):
    # under 256 KiB that floor is the limit; the list is ~220 KB with its pointers
    write(base / "stack.conf", "256\n" if bad else "8192\n")


# --- execution -------------------------------------------------------------------------------------
HOOKS_PY = ("import os, subprocess, sys\n"
            "d = sys.argv[1]\n"
            "for name in sorted(os.listdir(d)):\n"
            "    subprocess.run([os.path.join(d, name)], check=True)\n"
            "print('hooks done')\n")


def hook_not_executable(base: Path, bad: bool) -> None:
    write(base / "run_hooks.py", HOOKS_PY)
    (base / "hooks").mkdir()
    write(base / "hooks" / "10-check", "#!/bin/sh\necho check\n", 0o755)
    # the second hook was deployed by a copy that dropped its mode bits
    write(base / "hooks" / "20-notify", "#!/bin/sh\necho notify\n", 0o644 if bad else 0o755)


def hook_without_shebang(base: Path, bad: bool) -> None:
    write(base / "run_hooks.py", HOOKS_PY)
    (base / "hooks").mkdir()
    write(base / "hooks" / "10-check", "#!/bin/sh\necho check\n", 0o755)
    # an editor's save stripped the first line: sh would guess, execve does not
    write(base / "hooks" / "20-notify", ("" if bad else "#!/bin/sh\n") + "echo notify\n", 0o755)


FIFO_PY = ("import asyncio, os, sys\n"
           "async def main():\n"
           "    loop = asyncio.get_running_loop()\n"
           "    fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)\n"
           "    done = loop.create_future()\n"
           "    chunks = []\n"
           "    def readable():\n"
           "        data = os.read(fd, 4096)\n"
           "        chunks.append(data)\n"
           "        if not data or b'stop' in data:\n"
           "            loop.remove_reader(fd)\n"
           "            done.set_result(b''.join(chunks))\n"
           "    loop.add_reader(fd, readable)\n"
           "    print((await asyncio.wait_for(done, 5)).decode().split())\n"
           "asyncio.run(main())\n")
FIFO_SH = '{py} -S {b}/control.py {b}/run/control & /usr/bin/sleep 0.05; echo "reload stop" > {b}/run/control; wait $!\n'


def control_not_fifo(base: Path, bad: bool) -> None:
    write(base / "control.py", FIFO_PY)
    write(base / "control.sh", FIFO_SH.format(b=base, py=PY3))
    (base / "run").mkdir()
    if bad:  # a careless `touch run/control` before the service made its FIFO
        write(base / "run" / "control", "")
    else:
        os.mkfifo(base / "run" / "control")


def git_config_lock(base: Path, bad: bool) -> None:
    repo = base / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    if bad:  # a `git config` killed mid-write left its lock
        write(repo / ".git" / "config.lock", "")


GIT_ENV_ARGV = ["/usr/bin/env", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1"]


# --- the set ------------------------------------------------------------------------------------
REAL_SEVENTH: list[Scenario] = [
    # datagrams and addresses
    Scenario("udp_collector_down", "python3 UDP metrics client (connected socket)",
             lambda b: [PY3, "-S", f"{b}/client.py", f"{b}/collector.conf", f"{b}/metrics.txt"],
             collector_down, frozenset({"recvfrom", "recvmsg", "read"}), "ECONNREFUSED",
             lambda b: f"inet:127.0.0.1:{UDP_PORT}", teardown=BACKGROUND.stop,
             description="the collector crashed: the first datagram draws an ICMP port unreachable, the next "
             "recv on the connected socket fails ECONNREFUSED"),
    Scenario("perl_udp_collector_down", "perl IO::Socket::INET udp client",
             lambda b: ["/usr/bin/perl", f"{b}/client.pl", f"{b}/collector.conf", f"{b}/metrics.txt"],
             collector_down, frozenset({"recvfrom", "recvmsg", "read"}), "ECONNREFUSED",
             lambda b: f"inet:127.0.0.1:{UDP_PORT}", teardown=BACKGROUND.stop,
             description="the same in perl: recv fails ECONNREFUSED"),
    Scenario("udp_batch_too_big", "python3 statsd-style batch in one datagram",
             lambda b: [PY3, "-S", f"{b}/statsd.py", f"{b}/statsd.conf", f"{b}/batch.txt"],
             batch_too_big, frozenset({"sendto"}), "EMSGSIZE", lambda b: f"inet:127.0.0.1:{UDP_PORT}",
             description="the job grew to 3000 metrics: one ~90 KB datagram, sendto fails EMSGSIZE"),
    Scenario("udp_broadcast_denied", "python3 statsd-style client, target from its config",
             lambda b: [PY3, "-S", f"{b}/statsd.py", f"{b}/statsd.conf", f"{b}/batch.txt"],
             broadcast_target, frozenset({"sendto"}), "EACCES", lambda b: f"inet:127.255.255.255:{UDP_PORT}",
             description="the config names a broadcast address and the socket has no SO_BROADCAST: EACCES"),
    Scenario("listen_addr_not_local", "python3 service binds the address in its config",
             lambda b: [PY3, "-S", f"{b}/server.py", f"{b}/listen.conf"],
             listen_addr_foreign, frozenset({"bind"}), "EADDRNOTAVAIL", lambda b: f"inet:{FOREIGN_ADDR}:*",
             description="the config came from another host: bind to its address fails EADDRNOTAVAIL"),
    Scenario("curl_interface_not_local", "curl -K curl.conf (interface = ...)",
             lambda b: ["/usr/bin/curl", "-sf", "-K", f"{b}/curl.conf", "-o", "/dev/null"],
             curl_interface_foreign, frozenset({"bind"}), "EADDRNOTAVAIL", lambda b: f"inet:{FOREIGN_ADDR}:*",
             teardown=_http_stop, description="curl's source address is another host's: bind EADDRNOTAVAIL"),
    # timeouts: a wait that timed out
    Scenario("udp_collector_hung", "python3 UDP client, recv timeout 0.5 s",
             lambda b: [PY3, "-S", f"{b}/client_timeout.py", f"{b}/collector.conf", f"{b}/metrics.txt"],
             collector_hung, frozenset({"poll", "ppoll", "select"}), None, lambda b: "",
             teardown=BACKGROUND.stop, description="the collector is stopped: the datagram is queued, no answer; "
             "the client's poll returns 0 (timeout) after 0.5 s"),
    Scenario("connect_accept_queue_full", "python3 health check: create_connection(timeout=0.5)",
             lambda b: [PY3, "-S", f"{b}/health.py", f"{b}/service.conf"],
             accept_queue_full, frozenset({"poll", "ppoll", "select"}), None, lambda b: "",
             teardown=BACKGROUND.stop, description="the service's accept loop is stuck and its queue full: the "
             "SYN is dropped, connect EINPROGRESS, poll returns 0 (timeout)"),
    Scenario("curl_max_time_server_hung", "curl -sf --max-time 1",
             lambda b: ["/usr/bin/curl", "-sf", "--max-time", "1", "-o", "/dev/null", f"http://127.0.0.1:{UDP_PORT}/"],
             http_server_hung, frozenset({"poll", "ppoll", "select"}), None, lambda b: "",
             teardown=BACKGROUND.stop, description="the server reads the request and never answers: curl's "
             "polls time out, exit 28"),
    Scenario("perl_select_server_hung", "perl IO::Select can_read(0.5)",
             lambda b: ["/usr/bin/perl", f"{b}/get.pl", str(UDP_PORT)],
             perl_server_hung, frozenset({"poll", "ppoll", "select", "pselect6"}), None, lambda b: "",
             teardown=BACKGROUND.stop, description="the server never answers: select returns 0 after 0.5 s"),
    Scenario("asyncio_read_timeout_server_hung", "python3 asyncio wait_for(reader.read(), 0.5)",
             lambda b: [PY3, "-S", f"{b}/get.py", str(UDP_PORT)],
             client_server_hung, frozenset({"epoll_wait", "epoll_pwait", "epoll_pwait2"}), None, lambda b: "",
             teardown=BACKGROUND.stop, description="the server never answers: the event loop's epoll_wait "
             "returns 0 after 0.5 s"),
    Scenario("node_http_timeout_server_hung", "node http.get({timeout: 500})",
             lambda b: [NODE, f"{b}/get.js", str(UDP_PORT)],
             client_server_hung, frozenset({"epoll_wait", "epoll_pwait", "epoll_pwait2"}), None, lambda b: "",
             teardown=BACKGROUND.stop, description="the server never answers: libuv's epoll_pwait returns 0 "
             "after 0.5 s, the request's timeout fires"),
    Scenario("resolver_hosts_entry_missing", "unshare -m: private /etc/hosts; python3 getaddrinfo",
             lambda b: ["/usr/bin/unshare", "-m", "/bin/sh", "-c", RESOLVE_SH.format(b=b, py=PY3)],
             hosts_entry_missing, frozenset({"socket", "connect"}), None, lambda b: "*",
             description="the regenerated /etc/hosts lost db.internal: the resolver goes to the nameserver "
             "(a UDP socket to 127.0.0.1:53, which nothing answers)"),
    # network namespaces
    Scenario("netns_loopback_down", "unshare -n sh: net setup; python3 self-check over 127.0.0.1",
             _netns_argv, loopback_down, frozenset({"connect"}), "ENETUNREACH",
             lambda b: f"inet:127.0.0.1:{NS_PORT}",
             description="the namespace's setup lost `ip link set lo up`: bind works, connect fails ENETUNREACH"),
    Scenario("netns_ipv6_disabled", "unshare -n sh: net setup; python3 service on [::1]",
             _netns_argv, ipv6_disabled, frozenset({"bind"}), "EADDRNOTAVAIL", lambda b: f"inet6:[[]::1]:{NS_PORT}",
             description="the setup disables IPv6 on lo: bind to [::1] fails EADDRNOTAVAIL"),
    # capabilities dropped from root
    Scenario("raw_icmp_no_cap_net_raw", "setpriv --bounding-set=$(cat caps.conf) python3 ICMP probe",
             _caps_argv("{py} -S {b}/probe.py"), raw_socket_no_cap, frozenset({"socket"}), "EPERM",
             lambda b: NO_PATH, description="CAP_NET_RAW dropped: socket(AF_INET, SOCK_RAW) fails EPERM"),
    Scenario("root_no_dac_override", "setpriv --bounding-set=$(cat caps.conf) cat spool/*.json",
             _caps_argv("/usr/bin/cat {b}/spool/a.json {b}/spool/b.json"), dac_override_dropped, PROBES_OPEN,
             "EACCES", lambda b: f"{b}/spool/a.json",
             description="CAP_DAC_OVERRIDE dropped: root's open of nobody's 0600 file fails EACCES"),
    Scenario("mount_no_cap_sys_admin", "setpriv --bounding-set=$(cat caps.conf) mount -t tmpfs",
             _caps_argv("/usr/bin/mount -t tmpfs -o size=1m scratch {b}/scratch"), mount_no_cap,
             frozenset({"mount", "fsopen", "fsconfig", "fsmount", "move_mount"}), "EPERM", lambda b: "*",
             teardown=_umount_scratch, description="CAP_SYS_ADMIN dropped: mount fails EPERM"),
    Scenario("chroot_no_cap", "setpriv --bounding-set=$(cat caps.conf) chroot jail /bin/hello",
             _caps_argv("/usr/sbin/chroot {b}/jail /bin/hello"), chroot_no_cap, frozenset({"chroot"}), "EPERM",
             lambda b: f"{b}/jail", description="CAP_SYS_CHROOT dropped: chroot fails EPERM"),
    Scenario("mknod_no_cap", "setpriv --bounding-set=$(cat caps.conf) mknod rootfs/dev/null c 1 3",
             _caps_argv("/usr/bin/mknod -m 666 {b}/rootfs/dev/null c 1 3"), mknod_no_cap,
             frozenset({"mknod", "mknodat"}), "EPERM", lambda b: f"{b}/rootfs/dev/null",
             description="CAP_MKNOD dropped: mknodat of a character device fails EPERM"),
    Scenario("setuid_drop_no_cap", "setpriv --bounding-set=$(cat caps.conf) python3 daemon drops to nobody",
             _caps_argv("{py} -S {b}/daemon.py"), setuid_no_cap,
             frozenset({"setgroups", "setgid", "setuid", "setresuid", "setresgid"}), "EPERM", lambda b: NO_PATH,
             description="CAP_SETGID/CAP_SETUID dropped: the daemon's setgroups fails EPERM"),
    Scenario("tar_same_owner_no_cap", "setpriv --bounding-set=$(cat caps.conf) tar -xf (as root)",
             _caps_argv("/usr/bin/tar -C {b}/dst -xf {b}/app.tar"), tar_chown_no_cap,
             frozenset({"fchownat", "fchown", "lchown", "chown"}), "EPERM", lambda b: f"{b}/dst/app/*",
             description="CAP_CHOWN dropped: tar restoring the files' owner (nobody) fails EPERM"),
    # per-user-namespace limits
    Scenario("node_watch_limit", "unshare -U: max_inotify_watches from a file; node fs.watch",
             _userns_argv("max_inotify_watches", NODE + " {b}/watch.js {b}/tree"), node_watch_limit,
             frozenset({"inotify_add_watch"}), "ENOSPC", lambda b: f"{b}/tree/*",
             description="two watches allowed, four directories: the third inotify_add_watch fails ENOSPC"),
    Scenario("inotify_instances_limit", "unshare -U: max_inotify_instances from a file; python3 watcher",
             _userns_argv("max_inotify_instances", "{py} -S {b}/watch.py {b}/incoming"), inotify_instances_limit,
             frozenset({"inotify_init1", "inotify_init"}), "EMFILE", lambda b: NO_PATH,
             description="no inotify instance allowed: inotify_init1 fails EMFILE"),
    Scenario("mnt_namespace_limit", "unshare -U: max_mnt_namespaces from a file; unshare -m cat",
             _userns_argv("max_mnt_namespaces", "/usr/bin/unshare -m /usr/bin/cat {b}/job.txt"), mnt_ns_limit,
             frozenset({"unshare"}), "ENOSPC", lambda b: NO_PATH,
             description="no mount namespace allowed: unshare(CLONE_NEWNS) fails ENOSPC"),
    # resource limits
    Scenario("mq_open_rlimit_msgqueue", "sh: prlimit --msgqueue=$(cat limit) python3 mq_open",
             lambda b: _sh(b, "exec /usr/bin/prlimit --msgqueue=$(/usr/bin/cat {b}/limit) {py} -S {b}/mq.py "
                           + MQ_NAME),
             msgqueue_rlimit, frozenset({"mq_open"}), "EMFILE", lambda b: f"mqueue:{MQ_NAME}",
             description="RLIMIT_MSGQUEUE of 64 KiB, a queue of 10 x 8 KiB: mq_open fails EMFILE"),
    Scenario("execve_args_over_stack_limit", "sh: ulimit -s $(cat stack.conf); printf $(cat names.txt)",
             lambda b: _sh(b, "ulimit -s $(/usr/bin/cat {b}/stack.conf); "
                           "exec /usr/bin/printf '%s\\n' $(/usr/bin/cat {b}/names.txt)"),
             stack_shrinks_args, PROBES_EXEC, "E2BIG", lambda b: "/usr/bin/printf",
             description="a 256 KiB stack limit leaves 128 KiB (ARG_MAX) for arguments, the list needs ~220 KB: execve fails E2BIG"),
    # execution
    Scenario("hook_not_executable", "python3 runs hooks/* with subprocess",
             lambda b: [PY3, "-S", f"{b}/run_hooks.py", f"{b}/hooks"], hook_not_executable, PROBES_EXEC,
             "EACCES", lambda b: f"{b}/hooks/20-notify",
             description="the second hook lost its x bit: execve fails EACCES"),
    Scenario("hook_without_shebang", "python3 runs hooks/* with subprocess",
             lambda b: [PY3, "-S", f"{b}/run_hooks.py", f"{b}/hooks"], hook_without_shebang, PROBES_EXEC,
             "ENOEXEC", lambda b: f"{b}/hooks/20-notify",
             description="the second hook has no #! line: execve fails ENOEXEC"),
    Scenario("asyncio_control_not_fifo", "sh: python3 asyncio reader of run/control; echo > run/control",
             lambda b: ["/bin/sh", f"{b}/control.sh"], control_not_fifo, frozenset({"epoll_ctl"}), "EPERM",
             lambda b: NO_PATH, description="run/control is a regular file, not a FIFO: epoll_ctl(ADD) fails EPERM"),
    Scenario("git_config_lock_left", "git config user.name",
             lambda b: [*GIT_ENV_ARGV, "/usr/bin/git", "-C", f"{b}/repo", "config", "user.name", "CI"],
             git_config_lock, PROBES_OPEN, "EEXIST", lambda b: f"{b}/repo/.git/config.lock",
             description="a killed git config left .git/config.lock: open(O_EXCL) fails EEXIST"),
]

# Scored by `bench.scenario_accuracy --real` only: each repeats the call, errno and kind of
# fault of a case the tests run (tests/test_real_programs_seventh.py keeps to about a minute).
BENCH_ONLY = frozenset({"perl_udp_collector_down", "curl_interface_not_local"})


# --- good vs good: run-to-run noise -------------------------------------------------------------
def _collector_slow(base: Path, run: int) -> None:
    _collector(base, up=True, delay=(0.0, 0.03, 0.01)[run % 3])


UDP_RESEND_PY = ("import socket, sys\n"
                 "host, port = open(sys.argv[1]).read().split()\n"
                 "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                 "s.settimeout(0.1)\n"
                 "s.connect((host, int(port)))\n"
                 "for line in open(sys.argv[2]):\n"
                 "    for attempt in range(5):\n"
                 "        s.send(line.encode())\n"
                 "        try:\n"
                 "            print(s.recv(100).decode())\n"
                 "            break\n"
                 "        except TimeoutError:\n"
                 "            continue\n"
                 "    else:\n"
                 "        sys.exit('collector did not answer')\n")


def _collector_late(base: Path, run: int) -> None:
    """The last run's collector answers after 0.15 s: the client's 0.1 s wait times out and it
    sends again (the first answer then arrives): a retry the other runs did not need."""
    _collector(base, up=True, delay=(0.0, 0.01, 0.15)[run % 3])
    write(base / "resend.py", UDP_RESEND_PY)


PYPATH_DIRS = ("site-a", "site-b", "vendor", "plugins", "lib", "app")


def _pythonpath(base: Path, run: int) -> None:
    for d in PYPATH_DIRS:
        (base / d).mkdir()
    write(base / "app" / "jobmain.py", "import jobutil, jobplug\nprint(jobutil.VALUE + jobplug.VALUE)\n")
    write(base / "lib" / "jobutil.py", "VALUE = 1\n")
    write(base / "plugins" / "jobplug.py", f"VALUE = {random.randint(1, 9)}\n")


def _pythonpath_argv(b: Path) -> list[str]:
    return ["/usr/bin/env", "PYTHONPATH=" + ":".join(str(b / d) for d in PYPATH_DIRS),
            "PYTHONDONTWRITEBYTECODE=1", PY3, "-S", "-c", "import jobmain"]


def _perl_inc(base: Path, run: int) -> None:
    for d in PYPATH_DIRS:
        (base / d / "Job").mkdir(parents=True)
    write(base / "app" / "Job" / "Util.pm", "package Job::Util; sub v { 3 } 1;\n")
    write(base / "plugins" / "Job" / "Plug.pm", "package Job::Plug; sub v { 4 } 1;\n")


def _perl_inc_argv(b: Path) -> list[str]:
    return ["/usr/bin/perl", *(f"-I{b}/{d}" for d in PYPATH_DIRS), "-MJob::Util", "-MJob::Plug",
            "-e", "print Job::Util::v() + Job::Plug::v(), qq{\\n}"]


LIB_C = "int job_value(void) { return 7; }\n"
MAIN_C = "#include <stdio.h>\nint job_value(void);\nint main(void) { printf(\"%d\\n\", job_value()); return 0; }\n"


def _ld_path(base: Path, run: int) -> None:
    for d in PYPATH_DIRS:
        (base / d).mkdir()
    _cc(base, "app/libjob.so", LIB_C, "-shared")
    lib = base / "app" / "libjob.so"
    src = base / "main.c"
    write(src, MAIN_C)
    subprocess.run(["gcc", "-O1", "-o", str(base / "main"), str(src), f"-L{base}/app", "-ljob"], check=True)
    assert lib.exists()


def _ld_path_argv(b: Path) -> list[str]:
    return ["/usr/bin/env", "LD_LIBRARY_PATH=" + ":".join(str(b / d) for d in PYPATH_DIRS), f"{b}/main"]


def _netns_ok(base: Path, run: int) -> None:
    loopback_down(base, False)


def _ipv6_ok(base: Path, run: int) -> None:
    ipv6_disabled(base, False)


def _caps_unneeded(base: Path, run: int) -> None:
    dac_override_dropped(base, False)


def _watch_events(base: Path, run: int) -> None:
    node_watch_limit(base, False)


INOTIFY_EVENTS_PY = ("import ctypes, os, struct, sys\n"
                     "libc = ctypes.CDLL(None, use_errno=True)\n"
                     "fd = libc.inotify_init1(os.O_CLOEXEC)\n"
                     "libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x100 | 0x8)\n"
                     "with open(sys.argv[3], 'w') as fh:\n"
                     "    fh.write('watching\\n')\n"
                     "seen = 0\n"
                     "while seen < int(sys.argv[2]):\n"
                     "    buf = os.read(fd, 4096)\n"
                     "    off = 0\n"
                     "    while off < len(buf):\n"
                     "        wd, mask, cookie, n = struct.unpack_from('iIII', buf, off)\n"
                     "        off += 16 + n\n"
                     "        seen += mask & 0x8 != 0\n"
                     "print('closed', seen)\n")
# the files are written once the reader says it watches (a FIFO: `sleep 0.1` was too short under
# load -- the watch came after the files, the reader waited for events that never came)
INOTIFY_SH = ('{py} -S {b}/events.py {b}/incoming 3 {b}/ready &\n'
              'read -r _ < {b}/ready\n'
              'for i in 1 2 3; do echo $i > {b}/incoming/part$i; /usr/bin/sleep $(/usr/bin/cat {b}/gap); done\n'
              'wait\n')


def _inotify_stream(base: Path, run: int) -> None:
    write(base / "events.py", INOTIFY_EVENTS_PY)
    write(base / "events.sh", INOTIFY_SH.format(b=base, py=PY3))
    (base / "incoming").mkdir()
    os.mkfifo(base / "ready")
    write(base / "gap", ("0", "0.02", "0.01")[run % 3] + "\n")


def _fifo_chunks(base: Path, run: int) -> None:
    control_not_fifo(base, False)
    # how the writer's words arrive varies: one write, or several with pauses
    script = ('{py} -S {b}/control.py {b}/run/control & /usr/bin/sleep 0.05\n'
              + ('echo "reload stop" > {b}/run/control\n' if run % 2 == 0 else
                 '( echo reload; /usr/bin/sleep 0.02; echo rotate; /usr/bin/sleep 0.02; echo stop ) > {b}/run/control\n')
              + 'wait $!\n')
    write(base / "control.sh", script.format(b=base, py=PY3))


def _mq_ok(base: Path, run: int) -> None:
    msgqueue_rlimit(base, False)


def _args_ok(base: Path, run: int) -> None:
    _long_names(base)
    write(base / "stack.conf", "8192\n")


QUIET_SEVENTH: list[NoAnomalyCase] = [
    NoAnomalyCase(
        "udp_collector_slow_acks",
        lambda b: [PY3, "-S", f"{b}/client.py", f"{b}/collector.conf", f"{b}/metrics.txt"],
        _collector_slow, description="datagrams acknowledged after 0-30 ms"),
    NoAnomalyCase(
        "udp_resend_after_timeout",
        lambda b: [PY3, "-S", f"{b}/resend.py", f"{b}/collector.conf", f"{b}/metrics.txt"],
        _collector_late, description="a client resending after a 0.1 s timeout; in the last run the collector "
        "answers after 0.15 s: timeouts and resends the other runs did not have"),
    NoAnomalyCase(
        "pythonpath_six_dirs",
        _pythonpath_argv, _pythonpath, description="imports found in the 4th and 5th of six PYTHONPATH "
        "directories (the FileFinder's misses elsewhere)"),
    NoAnomalyCase(
        "perl_inc_six_dirs",
        _perl_inc_argv, _perl_inc, description="perl -I x6: modules in the 4th and 6th directories (stat ENOENT "
        "in the others)"),
    NoAnomalyCase(
        "ld_library_path_six_dirs",
        _ld_path_argv, _ld_path, description="ld.so searches six LD_LIBRARY_PATH directories (openat ENOENT, "
        "hwcaps subdirectories) and finds libjob.so in the last"),
    NoAnomalyCase(
        "netns_loopback_selfcheck",
        _netns_argv, _netns_ok, description="a private network namespace with lo up: bind, connect, accept"),
    NoAnomalyCase(
        "netns_ipv6_loopback",
        _netns_argv, _ipv6_ok, description="the same on [::1] with IPv6 enabled"),
    NoAnomalyCase(
        "caps_dropped_unneeded",
        _caps_argv("/usr/bin/cat {b}/spool/a.json {b}/spool/b.json"), _caps_unneeded,
        description="setpriv drops CAP_SYS_MODULE, which cat never needs"),
    NoAnomalyCase(
        "node_watch_in_userns",
        _userns_argv("max_inotify_watches", NODE + " {b}/watch.js {b}/tree"), _watch_events,
        description="node fs.watch of four directories in a user namespace with room for 8192 watches"),
    NoAnomalyCase(
        "inotify_events_varying_gaps",
        lambda b: ["/bin/sh", f"{b}/events.sh"], _inotify_stream,
        description="an inotify reader sees three files closed 0-20 ms apart (events batched differently)"),
    NoAnomalyCase(
        "asyncio_fifo_chunks",
        lambda b: ["/bin/sh", f"{b}/control.sh"], _fifo_chunks,
        description="an asyncio FIFO reader gets its words in one write or three"),
    NoAnomalyCase(
        "mq_within_rlimit",
        lambda b: _sh(b, "exec /usr/bin/prlimit --msgqueue=$(/usr/bin/cat {b}/limit) {py} -S {b}/mq.py " + MQ_NAME),
        _mq_ok, description="a POSIX queue within RLIMIT_MSGQUEUE"),
    NoAnomalyCase(
        "execve_long_args",
        lambda b: _sh(b, "ulimit -s $(/usr/bin/cat {b}/stack.conf); "
                      "exec /usr/bin/printf '%s\\n' $(/usr/bin/cat {b}/names.txt)"),
        _args_ok, description="a ~220 KB command line under the default stack limit (2 MiB for arguments)"),
]


def quiet_teardown() -> None:
    """Stop what the cases started."""
    BACKGROUND.stop()
    HTTP.stop()

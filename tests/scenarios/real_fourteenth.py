"""A fourteenth set of real programs with one real fault each: the host's network and system
configuration a GPU/RDMA job meets at start-up -- interfaces, addresses, routes, socket
options, sysctls, mounts and namespaces -- in (call, errno) pairs the first thirteen sets do not
have.

Each run happens in a network namespace of its own (``ip netns add``, made by the case's setup
and removed by its teardown, so nothing is shared with the host or another session): the
setup is the host's configuration (interfaces, addresses, MTUs, routes, the ephemeral port
range), made outside the recording as an administrator would have; the job enters it with
``nsenter --net`` and meets it.

- **interfaces**: ``ip link set dev ib0 mtu 9000`` on a host whose driver did not create ib0
  (ioctl SIOCGIFINDEX ENODEV, iproute2's name lookup); the interface up but its address never
  configured (ioctl SIOCGIFADDR EADDRNOTAVAIL); an MTU past the driver's maximum (ioctl
  SIOCSIFMTU EINVAL); an MTU the job must raise as its own account (ioctl SIOCSIFMTU EPERM);
- **socket options**: a receive buffer past net.core.rmem_max forced as nobody (setsockopt
  SO_RCVBUFFORCE EPERM), a congestion control this kernel does not have (setsockopt
  TCP_CONGESTION ENOENT), a multicast group joined twice (setsockopt IP_ADD_MEMBERSHIP
  EADDRINUSE), a discovery interface address the host no longer has (setsockopt
  IP_MULTICAST_IF EADDRNOTAVAIL);
- **routes and ports**: the rendezvous address behind an ``unreachable`` route (connect
  EHOSTUNREACH), a ``blackhole`` route (connect EINVAL), a heartbeat's UDP datagram behind an
  unreachable route (sendto EHOSTUNREACH), the ephemeral port range narrowed to two ports
  (connect EADDRNOTAVAIL);
- **transports**: RDS and SCTP named by the job's config on a host without the modules (socket
  EAFNOSUPPORT, EPROTONOSUPPORT);
- **real tools**: ``sysctl -p`` of a congestion control from a newer kernel (write ENOENT),
  ``mount -t hugetlbfs -o pagesize=16M`` on a host without that page size (mount EINVAL), a
  launcher that drops to the job's account before ``nsenter --net`` (setns EPERM);
- **scheduling**: a helper's CPU affinity set through a stale pid file naming root's process,
  as nobody (sched_setaffinity EPERM).

Most faults go through one python3 program, ``net.py``, a job's network start-up as a plan of
steps (interfaces, socket options, transports, connections), so each fault sits among the
other steps' successful calls; the rest are ip, sysctl, mount and nsenter in a start script.
Same types and harness as real.py (`Scenario`, `NoAnomalyCase`); the expectations are what
`strace -f` shows a person looking for the fault (socket calls have no path: ``*``).

The good-vs-good cases (`QUIET_FOURTEENTH`) carry the noise of such start-ups: optional
interfaces probed (ENODEV in every run), a preferred congestion control missing in every run
and a fallback taken, SO_RCVBUFFORCE refused to nobody and SO_RCVBUF used instead, connects
refused a varying number of times while rank 0 starts, interface and multicast-group counts
that vary, an MTU already right on some hosts and set on another, ``ip``, ``ss`` and ``sysctl
-a`` listing what the host has, CPU sets and connection counts that vary.
"""

from __future__ import annotations

import atexit
import os
import random
import subprocess
from pathlib import Path

from .catalog import write
from .harness import NoAnomalyCase, Scenario

PY3 = "/usr/bin/python3"
NO_PATH = "*"
SETPRIV_NOBODY = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# one prefix per session: the namespaces of two sessions never meet
NETNS_PREFIX = f"tb14.{os.getpid()}."

NET_PY = r'''
import fcntl, os, socket, struct, subprocess, sys, threading, time
base = sys.argv[1]
SIOCGIFADDR, SIOCGIFMTU, SIOCSIFMTU = 0x8915, 0x8921, 0x8922
SO_RCVBUFFORCE = 33


def die(msg):
    sys.stderr.write(f"net: {msg}\n")
    sys.exit(1)


def ifreq(name, value=0):
    return struct.pack("16si12x", name.encode(), value)


def serve(port, delay):
    """rank 0's rendezvous listener, started after `delay` seconds, accepting for ever"""
    def run():
        time.sleep(delay)
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", port))
        srv.listen(64)
        ready.set()
        while True:  # each rank is acknowledged, so the job goes on only once it is accepted
            conn, _ = srv.accept()
            conn.sendall(b"ok")
            held.append(conn)
    threading.Thread(target=run, daemon=True).start()


ready = threading.Event()
held = []
ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # the job's ioctl socket
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
        # --- interfaces
        elif op == "ifindex":  # names...: the job's interfaces, required
            for name in a:
                socket.if_nametoindex(name)
        elif op == "ifindex_opt":  # names...: optional interfaces, missing is fine
            for name in a:
                try:
                    socket.if_nametoindex(name)
                except OSError:
                    pass
        elif op == "ifaddr":  # name: the interface's IPv4 address, for the job's endpoint
            addr = fcntl.ioctl(ctl, SIOCGIFADDR, ifreq(a[0]))
            socket.inet_ntoa(addr[20:24])
        elif op == "mtu":  # name mtu: the MTU the job wants, set when the host's differs
            have = struct.unpack("16si12x", fcntl.ioctl(ctl, SIOCGIFMTU, ifreq(a[0])))[1]
            if have != int(a[1]):
                fcntl.ioctl(ctl, SIOCSIFMTU, ifreq(a[0], int(a[1])))
        # --- socket options
        elif op == "rcvbuf":  # bytes fallback: past rmem_max the job forces it (fallback 1: SO_RCVBUF on EPERM)
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            with open("/proc/sys/net/core/rmem_max") as fh:
                limit = int(fh.read())
            want = int(a[0])
            if want > limit:
                try:
                    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, want)
                except PermissionError:
                    if a[1] != "1":
                        raise
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, want)
            else:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, want)
            held.append(s)
        elif op == "cc":  # names...: the first congestion control the kernel has; the last is required
            s = socket.socket()
            for i, name in enumerate(a):
                try:
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, name.encode())
                    break
                except FileNotFoundError:
                    if i == len(a) - 1:
                        raise
            held.append(s)
        elif op == "prio":  # n: the traffic class of the job's data socket (SO_PRIORITY)
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, int(a[0]))
            held.append(s)
        elif op == "mcast_join":  # groups...: the discovery groups, joined on lo
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for group in a:
                mreq = struct.pack("4s4s", socket.inet_aton(group), socket.inet_aton("127.0.0.1"))
                s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
            held.append(s)
        elif op == "mcast_if":  # addr: the discovery datagrams leave from this address
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(a[0]))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
            s.sendto(b"hello", ("239.14.0.1", 7400))
            held.append(s)
        # --- routes, ports, transports
        elif op == "serve":  # port [delay]
            serve(int(a[0]), float(a[1]) if a[1:] else 0.0)
            if not a[1:]:
                ready.wait(30)
        elif op == "connect":  # addr port n: n connections to rank 0
            for _ in range(int(a[2])):
                c = socket.socket()
                c.connect((a[0], int(a[1])))
                c.recv(2)  # rank 0's acknowledgement
                held.append(c)
        elif op == "connect_retry":  # addr port tries: until rank 0 listens
            for _ in range(int(a[2])):
                c = socket.socket()
                try:
                    c.connect((a[0], int(a[1])))
                    c.recv(2)  # rank 0's acknowledgement
                    held.append(c)
                    break
                except ConnectionRefusedError:
                    c.close()
                    time.sleep(0.005)
            else:
                die("rank 0 never listened")
        elif op == "heartbeat":  # addr port: one datagram to the collector
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(b"alive", (a[0], int(a[1])))
            s.close()
        elif op == "transport":  # kind: the control channel's socket
            family, kind, proto = {"tcp": (socket.AF_INET, socket.SOCK_STREAM, 0),
                                   "rds": (21, socket.SOCK_SEQPACKET, 0),
                                   "sctp": (socket.AF_INET, socket.SOCK_STREAM, 132)}[a[0]]
            held.append(socket.socket(family, kind, proto))
        # --- scheduling
        elif op == "helper":  # file: a helper process started, its pid written to file
            # it waits for the job's end of a pipe to close and exits by itself: killed, it was
            # cut at a varying point (before its first call under load: a good run without it)
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(w)
                for x in held:
                    if isinstance(x, tuple):
                        os.close(x[1])
                os.read(r, 1)
                os._exit(0)
            os.close(r)
            held.append((pid, w))
            with open(a[0], "w") as fh:
                fh.write(f"{pid}\n")
        elif op == "affinity":  # pidfile|self cpus: a process pinned
            pid = 0 if a[0] == "self" else int(open(a[0]).read())
            os.sched_setaffinity(pid, {int(c) for c in a[1].split(",")})
        elif op == "run":  # argv...: a tool the job runs
            subprocess.run(a, stdout=subprocess.DEVNULL, check=True)
        else:
            die(f"unknown step {op}")
    except OSError as e:
        die(f"{op} {a[0] if a else ''}: {e.strerror}")
for x in held:
    if isinstance(x, tuple):
        os.close(x[1])
        os.waitpid(x[0], 0)
print("net: ready")
'''


# --- the host's network configuration ---------------------------------------------------------
def netns(base: Path) -> str:
    return NETNS_PREFIX + base.name


def ns_ip(base: Path, *args: str) -> None:
    subprocess.run(["ip", "-n", netns(base), *args], check=True, capture_output=True)


def make_netns(base: Path, *, ib0: bool = True, addr: str | None = "10.20.0.1/24", mtu: int = 1500,
               extra: int = 0, extra_names: list[str] | None = None) -> None:
    """The host's network as its administrator left it: lo up; ib0 (a veth, its peer ib0p)
    up with `addr` and `mtu` when the driver made it; `extra` more interfaces."""
    drop_netns(base)
    subprocess.run(["ip", "netns", "add", netns(base)], check=True, capture_output=True)
    ns_ip(base, "link", "set", "lo", "up")
    if ib0:
        ns_ip(base, "link", "add", "ib0", "type", "veth", "peer", "name", "ib0p")
        ns_ip(base, "link", "set", "ib0", "mtu", str(mtu))
        ns_ip(base, "link", "set", "ib0p", "up")
        ns_ip(base, "link", "set", "ib0", "up")
        if addr:
            ns_ip(base, "addr", "add", addr, "dev", "ib0")
    for name in [f"eth{i + 1}" for i in range(extra)] + (extra_names or []):
        ns_ip(base, "link", "add", name, "type", "veth", "peer", "name", f"{name}p")


def drop_netns(base: Path) -> None:
    subprocess.run(["ip", "netns", "del", netns(base)], capture_output=True)


def _in_ns(base: Path, *argv: str) -> list[str]:
    return ["/usr/bin/nsenter", f"--net=/run/netns/{netns(base)}", *argv]


def _net(b: Path) -> list[str]:
    return _in_ns(b, PY3, "-S", f"{b}/net.py", str(b))


def _net_nobody(b: Path) -> list[str]:
    return _in_ns(b, *SETPRIV_NOBODY, PY3, "-S", f"{b}/net.py", str(b))


def _start(b: Path) -> list[str]:
    """The job's start script, in the host's namespace of the case."""
    return _in_ns(b, "/bin/sh", f"{b}/start.sh")


def _launch(b: Path) -> list[str]:
    """The launcher's script (it enters the namespace itself)."""
    return ["/bin/sh", f"{b}/launch.sh"]


def _usual(base: Path, *mid: str) -> None:
    """What every start does around its own steps: an optional host file probed (missing in
    every run), the job's config read, its interface looked up."""
    write(base / "net.py", NET_PY)
    write(base / "job.conf", "ranks 2\n")
    write(base / "plan", "\n".join(["probe /etc/tracebase-net.conf", f"probe {base}/net.local",
                                    f"read {base}/job.conf", *mid]) + "\n")


def _script(base: Path, name: str, *lines: str) -> None:
    write(base / name, "set -e\n" + "\n".join(lines) + f"\nexec {PY3} -S {base}/net.py {base}\n")


# --- interfaces -------------------------------------------------------------------------------
def ip_mtu_missing(base: Path, bad: bool) -> None:
    # the bad host's driver did not create ib0; the start script sets its MTU with ip
    make_netns(base, ib0=not bad)
    _usual(base)
    _script(base, "start.sh", "/usr/sbin/ip link set dev ib0 mtu 4000")


def addr_missing(base: Path, bad: bool) -> None:
    # ib0 is up on the bad host but its address was never configured
    make_netns(base, addr=None if bad else "10.20.0.1/24")
    _usual(base, "ifindex ib0", "ifaddr ib0")


def mtu_past_max(base: Path, bad: bool) -> None:
    # the bad run's config has 90000 (a 9000 with a 0 too many); a veth's maximum is 65535
    make_netns(base)
    _usual(base, "ifindex ib0", f"mtu ib0 {90000 if bad else 9000}")


def mtu_raise_nobody(base: Path, bad: bool) -> None:
    # the good hosts have ib0 at 9000 already; the bad host's is 1500 and the job (its own
    # account) must raise it
    make_netns(base, mtu=1500 if bad else 9000)
    _usual(base, "ifindex ib0", "mtu ib0 9000")


# --- socket options ---------------------------------------------------------------------------
def _rmem_max() -> int:
    return int(Path("/proc/sys/net/core/rmem_max").read_text())


def rcvbuf_force_nobody(base: Path, bad: bool) -> None:
    # the bad run's config asks for more than net.core.rmem_max: the job forces it
    make_netns(base)
    _usual(base, "ifindex ib0", f"rcvbuf {_rmem_max() * 4 if bad else 65536} 0")


def cc_unknown(base: Path, bad: bool) -> None:
    make_netns(base)
    _usual(base, "ifindex ib0", f"cc {'bbr2' if bad else 'reno'}")


def mcast_twice(base: Path, bad: bool) -> None:
    # the bad config lists a group twice
    make_netns(base)
    groups = "239.14.0.1 239.14.0.2" + (" 239.14.0.1" if bad else " 239.14.0.3")
    _usual(base, "ifindex ib0", f"mcast_join {groups}")


def mcast_if_gone(base: Path, bad: bool) -> None:
    # the bad host's ib0 has another address than the one the job's config names
    make_netns(base, addr="10.21.0.1/24" if bad else "10.20.0.1/24")
    ns_ip(base, "route", "add", "239.0.0.0/8", "dev", "ib0")
    _usual(base, "ifindex ib0", "mcast_if 10.20.0.1")


# --- routes and ports -------------------------------------------------------------------------
RDV = "10.30.0.1"  # the rendezvous address in the job's config


def _rendezvous(base: Path, route: str | None) -> None:
    """The good hosts have the rendezvous address (on lo); the bad host has a route of the
    given type to it instead."""
    make_netns(base)
    if route is None:
        ns_ip(base, "addr", "add", f"{RDV}/32", "dev", "lo")
    else:
        ns_ip(base, "route", "add", route, f"{RDV}/32")


def route_unreachable(base: Path, bad: bool) -> None:
    _rendezvous(base, "unreachable" if bad else None)
    _usual(base, "ifindex ib0", "serve 29500", f"connect {RDV} 29500 2")


def route_blackhole(base: Path, bad: bool) -> None:
    _rendezvous(base, "blackhole" if bad else None)
    _usual(base, "ifindex ib0", "serve 29500", f"connect {RDV} 29500 2")


def heartbeat_unreachable(base: Path, bad: bool) -> None:
    _rendezvous(base, "unreachable" if bad else None)
    _usual(base, "ifindex ib0", f"heartbeat {RDV} 8125")


def ports_exhausted(base: Path, bad: bool) -> None:
    # the bad host's ephemeral range was narrowed to two ports; the job opens four connections
    make_netns(base)
    if bad:
        subprocess.run(["ip", "netns", "exec", netns(base), "sysctl", "-q", "-w",
                        "net.ipv4.ip_local_port_range=40000 40001"], check=True, capture_output=True)
    _usual(base, "ifindex ib0", "serve 29500", "connect 127.0.0.1 29500 4")


# --- transports -------------------------------------------------------------------------------
def transport_rds(base: Path, bad: bool) -> None:
    make_netns(base)
    _usual(base, "ifindex ib0", f"transport {'rds' if bad else 'tcp'}")


def transport_sctp(base: Path, bad: bool) -> None:
    make_netns(base)
    _usual(base, "ifindex ib0", f"transport {'sctp' if bad else 'tcp'}")


# --- real tools -------------------------------------------------------------------------------
def sysctl_cc(base: Path, bad: bool) -> None:
    # the job's sysctl fragment, copied from a host with a newer kernel in the bad run
    make_netns(base)
    write(base / "job-sysctl.conf", "net.ipv4.tcp_ecn = 1\n"
          f"net.ipv4.tcp_congestion_control = {'bbr2' if bad else 'reno'}\n")
    _usual(base, "ifindex ib0")
    _script(base, "start.sh", f"/usr/sbin/sysctl -q -p {base}/job-sysctl.conf")


def hugetlbfs_pagesize(base: Path, bad: bool) -> None:
    # the job's mount of its huge-page pool; the bad run's page size is a POWER host's
    make_netns(base)
    (base / "huge").mkdir()
    write(base / "pagesize", "16M" if bad else "2M")
    _usual(base, "ifindex ib0")
    _script(base, "start.sh", f"/usr/bin/mount -t hugetlbfs -o pagesize=$(cat {base}/pagesize) none {base}/huge")


def _unshare_mount(b: Path) -> list[str]:
    return ["/usr/bin/unshare", "-m", "--propagation", "private", *_start(b)]


def nsenter_nobody(base: Path, bad: bool) -> None:
    # the bad launcher drops to the job's account first and enters the namespace after
    make_netns(base)
    _usual(base, "ifindex ib0")
    enter = ["/usr/bin/nsenter", f"--net=/run/netns/{netns(base)}"]
    job = [PY3, "-S", f"{base}/net.py", str(base)]
    argv = [*SETPRIV_NOBODY, *enter, *job] if bad else [*enter, *SETPRIV_NOBODY, *job]
    write(base / "launch.sh", "exec " + " ".join(argv) + "\n")


def affinity_stale_pid(base: Path, bad: bool) -> None:
    # the helper's pid file is a stale one in the bad run, naming a process of root's
    make_netns(base)
    run = base / "run"  # the job's runtime directory, its own
    run.mkdir()
    os.chown(run, 65534, 65534)
    pidfile = run / "helper.pid"
    if bad:
        pidfile = write(run / "stale.pid", f"{os.getpid()}\n")  # this test process: root's, alive
    _usual(base, "ifindex ib0", f"helper {run}/helper.pid", f"affinity {pidfile} 0")


# --- faults among routine errors of the same call and errno ------------------------------------
def iface_missing_among_optional(base: Path, bad: bool) -> None:
    # the optional HCAs are missing on every host (ENODEV each); the bad host's ib0 is too
    make_netns(base, ib0=not bad)
    _usual(base, "ifindex_opt mlx5_0 ib1 roce0", "ifindex ib0", "transport tcp")


def prio_after_force_fallback(base: Path, bad: bool) -> None:
    # SO_RCVBUFFORCE is refused to nobody in every run and SO_RCVBUF taken; the bad config's
    # traffic class 7 needs CAP_NET_ADMIN (SO_PRIORITY EPERM)
    make_netns(base)
    _usual(base, "ifindex ib0", f"rcvbuf {_rmem_max() * 4} 1", f"prio {7 if bad else 3}", "transport tcp")


def cc_required_after_fallback(base: Path, bad: bool) -> None:
    # the control socket's bbr2 is missing in every run and reno taken; the bulk socket's
    # algorithm is required, bbr3 in the bad config
    make_netns(base)
    _usual(base, "ifindex ib0", "cc bbr2 reno", f"cc {'bbr3' if bad else 'reno'}", "transport tcp")


def _drop(base: Path) -> None:
    drop_netns(base)


REAL_FOURTEENTH: list[Scenario] = [
    Scenario("ip_link_mtu_missing_device", "ip link set dev ib0 mtu 4000 (start.sh in the host's netns)",
             _start, ip_mtu_missing, frozenset({"ioctl"}), "ENODEV", lambda b: NO_PATH, teardown=_drop,
             description="the driver did not create ib0: iproute2's name lookup SIOCGIFINDEX ENODEV"),
    Scenario("interface_address_missing", "python3 net: ioctl SIOCGIFADDR ib0",
             _net, addr_missing, frozenset({"ioctl"}), "EADDRNOTAVAIL", lambda b: NO_PATH, teardown=_drop,
             description="ib0 is up without an IPv4 address: SIOCGIFADDR EADDRNOTAVAIL"),
    Scenario("mtu_past_driver_max", "python3 net: ioctl SIOCSIFMTU ib0 90000",
             _net, mtu_past_max, frozenset({"ioctl"}), "EINVAL", lambda b: NO_PATH, teardown=_drop,
             description="an MTU past the veth's 65535: SIOCSIFMTU EINVAL"),
    Scenario("mtu_raise_as_nobody", "python3 net (nobody): ioctl SIOCSIFMTU ib0 9000",
             _net_nobody, mtu_raise_nobody, frozenset({"ioctl"}), "EPERM", lambda b: NO_PATH, teardown=_drop,
             description="the host's ib0 is at 1500 and the job has no CAP_NET_ADMIN: SIOCSIFMTU EPERM"),
    Scenario("rcvbuf_force_as_nobody", "python3 net (nobody): setsockopt SO_RCVBUFFORCE",
             _net_nobody, rcvbuf_force_nobody, frozenset({"setsockopt"}), "EPERM", lambda b: NO_PATH,
             teardown=_drop,
             description="a buffer past net.core.rmem_max forced without CAP_NET_ADMIN: setsockopt EPERM"),
    Scenario("congestion_control_missing", "python3 net: setsockopt TCP_CONGESTION bbr2",
             _net, cc_unknown, frozenset({"setsockopt"}), "ENOENT", lambda b: NO_PATH, teardown=_drop,
             description="a congestion control this kernel does not have: setsockopt ENOENT"),
    Scenario("multicast_group_joined_twice", "python3 net: IP_ADD_MEMBERSHIP of 239.14.0.1 twice",
             _net, mcast_twice, frozenset({"setsockopt"}), "EADDRINUSE", lambda b: NO_PATH, teardown=_drop,
             description="the config lists a discovery group twice: setsockopt EADDRINUSE"),
    Scenario("multicast_if_address_gone", "python3 net: IP_MULTICAST_IF 10.20.0.1",
             _net, mcast_if_gone, frozenset({"setsockopt"}), "EADDRNOTAVAIL", lambda b: NO_PATH, teardown=_drop,
             description="the host's ib0 was renumbered: setsockopt IP_MULTICAST_IF EADDRNOTAVAIL"),
    Scenario("rendezvous_route_unreachable", "python3 net: connect 10.30.0.1:29500",
             _net, route_unreachable, frozenset({"connect"}), "EHOSTUNREACH", lambda b: NO_PATH, teardown=_drop,
             description="an 'unreachable' route to the rendezvous address: connect EHOSTUNREACH"),
    Scenario("rendezvous_route_blackhole", "python3 net: connect 10.30.0.1:29500",
             _net, route_blackhole, frozenset({"connect"}), "EINVAL", lambda b: NO_PATH, teardown=_drop,
             description="a 'blackhole' route to the rendezvous address: connect EINVAL"),
    Scenario("heartbeat_route_unreachable", "python3 net: sendto 10.30.0.1:8125",
             _net, heartbeat_unreachable, frozenset({"sendto", "sendmsg"}), "EHOSTUNREACH", lambda b: NO_PATH,
             teardown=_drop,
             description="an 'unreachable' route to the collector: the heartbeat's sendto EHOSTUNREACH"),
    Scenario("ephemeral_ports_exhausted", "python3 net: 4 connects, ip_local_port_range of 2 ports",
             _net, ports_exhausted, frozenset({"connect"}), "EADDRNOTAVAIL", lambda b: NO_PATH, teardown=_drop,
             description="net.ipv4.ip_local_port_range narrowed to 40000-40001: the third connect EADDRNOTAVAIL"),
    Scenario("rds_transport_missing", "python3 net: socket(AF_RDS)",
             _net, transport_rds, frozenset({"socket"}), "EAFNOSUPPORT", lambda b: NO_PATH, teardown=_drop,
             description="the config selects RDS on a host without the rds module: socket EAFNOSUPPORT"),
    Scenario("sctp_transport_missing", "python3 net: socket(AF_INET, IPPROTO_SCTP)",
             _net, transport_sctp, frozenset({"socket"}), "EPROTONOSUPPORT", lambda b: NO_PATH, teardown=_drop,
             description="the config selects SCTP on a host without the sctp module: socket EPROTONOSUPPORT"),
    Scenario("sysctl_congestion_control_unknown", "sysctl -p job-sysctl.conf (start.sh in the host's netns)",
             _start, sysctl_cc, frozenset({"write"}), "ENOENT",
             lambda b: "/proc/sys/net/ipv4/tcp_congestion_control", teardown=_drop,
             description="a fragment from a newer kernel's host names bbr2: the sysctl write ENOENT"),
    Scenario("hugetlbfs_pagesize_unsupported", "mount -t hugetlbfs -o pagesize=16M (unshare -m, start.sh)",
             _unshare_mount, hugetlbfs_pagesize, frozenset({"mount", "fsconfig"}), "EINVAL",
             lambda b: f"{b}/huge", teardown=_drop,
             description="a page size this host does not have: mount EINVAL"),
    Scenario("nsenter_after_dropping_root", "setpriv (nobody) nsenter --net (launch.sh)",
             _launch, nsenter_nobody, frozenset({"setns"}), "EPERM", lambda b: "*", teardown=_drop,
             description="the launcher drops to nobody before entering the job's netns: setns EPERM"),
    Scenario("affinity_of_stale_pid_as_nobody", "python3 net (nobody): sched_setaffinity(pid from helper.pid)",
             _net_nobody, affinity_stale_pid, frozenset({"sched_setaffinity"}), "EPERM", lambda b: NO_PATH,
             teardown=_drop,
             description="a stale pid file names root's process: sched_setaffinity EPERM"),
    Scenario("required_interface_missing_among_optional", "python3 net: if_nametoindex mlx5_0 ib1 roce0, then ib0",
             _net, iface_missing_among_optional, frozenset({"ioctl"}), "ENODEV", lambda b: NO_PATH, teardown=_drop,
             description="three optional HCAs are missing in every run (SIOCGIFINDEX ENODEV); the required ib0 "
             "is missing in the bad run: a fourth SIOCGIFINDEX ENODEV, fatal"),
    Scenario("traffic_class_refused_after_force_fallback", "python3 net (nobody): SO_RCVBUFFORCE, then SO_PRIORITY 7",
             _net_nobody, prio_after_force_fallback, frozenset({"setsockopt"}), "EPERM", lambda b: NO_PATH,
             teardown=_drop,
             description="SO_RCVBUFFORCE EPERM and the SO_RCVBUF fallback in every run; SO_PRIORITY 7 without "
             "CAP_NET_ADMIN: setsockopt EPERM, fatal"),
    Scenario("congestion_control_required_after_fallback", "python3 net: TCP_CONGESTION bbr2 (then reno), then bbr3",
             _net, cc_required_after_fallback, frozenset({"setsockopt"}), "ENOENT", lambda b: NO_PATH,
             teardown=_drop,
             description="bbr2 ENOENT and reno taken in every run; the bulk socket's bbr3 is required: "
             "setsockopt ENOENT, fatal"),
]


# --- good-vs-good noise ------------------------------------------------------------------------
def _optional_ifaces(base: Path, run: int) -> None:
    make_netns(base)
    _usual(base, "ifindex_opt mlx5_0 ib1 roce0", "ifindex ib0")


def _cc_fallback(base: Path, run: int) -> None:
    make_netns(base)
    _usual(base, "ifindex ib0", "cc bbr2 reno")


def _rcvbuf_fallback(base: Path, run: int) -> None:
    make_netns(base)
    _usual(base, "ifindex ib0", f"rcvbuf {_rmem_max() * random.choice([2, 4, 8])} 1")


def _connect_retries(base: Path, run: int) -> None:
    make_netns(base)
    ns_ip(base, "addr", "add", f"{RDV}/32", "dev", "lo")
    _usual(base, "ifindex ib0", f"serve 29500 {random.choice(['0.01', '0.04', '0.1'])}",
           f"connect_retry {RDV} 29500 8000")  # ~40 s of retries at most: a loaded host


def _ifaces_vary(base: Path, run: int) -> None:
    make_netns(base, extra=random.choice([0, 1, 3]))
    _usual(base, "ifindex ib0")
    _script(base, "start.sh", "/usr/sbin/ip -br addr show", "/usr/sbin/ip route show")


def _mcast_vary(base: Path, run: int) -> None:
    make_netns(base)
    groups = [f"239.14.1.{i}" for i in range(1, random.choice([2, 3, 5]))]
    _usual(base, "ifindex ib0", f"mcast_join {' '.join(groups)}")


def _mtu_set_once(base: Path, run: int) -> None:
    # one host's ib0 came up at 1500 and the job (root) raises it; the others were at 9000
    make_netns(base, mtu=1500 if run == 1 else 9000)
    _usual(base, "ifindex ib0", "mtu ib0 9000")


def _ss_vary(base: Path, run: int) -> None:
    make_netns(base)
    _usual(base, "ifindex ib0", "serve 29500", f"connect 127.0.0.1 29500 {random.choice([1, 3, 6])}",
           "run /usr/bin/ss -tan")


def _sysctl_listing(base: Path, run: int) -> None:
    # the last run's interfaces are among the first run's (a name only it has is the next case)
    make_netns(base, extra=[2, 0, 1][run])
    _usual(base, "ifindex ib0")
    _script(base, "start.sh", "/usr/sbin/sysctl -a -r '^net\\.ipv4\\.conf\\.' >/dev/null 2>&1")


def _sysctl_listing_names(base: Path, run: int) -> None:
    # each host names its second NIC after its own PCI slot: the last run's name is new
    make_netns(base, extra_names=[f"enp{run + 1}s0"])
    _usual(base, "ifindex ib0")
    _script(base, "start.sh", "/usr/sbin/sysctl -a -r '^net\\.ipv4\\.conf\\.' >/dev/null 2>&1")


def _affinity_vary(base: Path, run: int) -> None:
    make_netns(base)
    cpus = random.choice(["0", "0,1", "1"]) if os.cpu_count() and os.cpu_count() > 1 else "0"
    _usual(base, "ifindex ib0", f"helper {base}/helper.pid", f"affinity {base}/helper.pid {cpus}",
           f"affinity self {cpus}")


QUIET_FOURTEENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("optional_interfaces_probed", _net, _optional_ifaces,
                  description="mlx5_0, ib1, roce0 looked up and missing (SIOCGIFINDEX ENODEV) in every run"),
    NoAnomalyCase("congestion_control_fallback", _net, _cc_fallback,
                  description="bbr2 refused ENOENT in every run, reno taken"),
    NoAnomalyCase("rcvbuf_force_refused_fallback", _net_nobody, _rcvbuf_fallback,
                  description="SO_RCVBUFFORCE EPERM as nobody in every run, SO_RCVBUF used; sizes vary"),
    NoAnomalyCase("rendezvous_connect_retries_vary", _net, _connect_retries,
                  description="connect ECONNREFUSED a varying number of times until rank 0 listens"),
    NoAnomalyCase("interface_count_varies", _start, _ifaces_vary,
                  description="ip -br addr / ip route over 1 to 4 interfaces"),
    NoAnomalyCase("multicast_groups_vary", _net, _mcast_vary, description="1 to 4 discovery groups joined"),
    NoAnomalyCase("mtu_already_right_or_set", _net, _mtu_set_once,
                  description="ib0 at 9000 in two runs; at 1500 in one, and the job (root) raises it"),
    NoAnomalyCase("ss_connection_count_varies", _net, _ss_vary, description="1 to 6 connections, ss -tan lists them"),
    NoAnomalyCase("sysctl_listing_interfaces_vary", _start, _sysctl_listing,
                  description="sysctl -a of net.ipv4.conf over 3, 1 and 2 interfaces"),
    NoAnomalyCase("sysctl_listing_interface_names_vary", _start, _sysctl_listing_names,
                  description="sysctl -a of net.ipv4.conf on hosts whose second NIC is enp1s0, enp2s0, enp3s0"),
    NoAnomalyCase("affinity_cpu_sets_vary", _net, _affinity_vary, description="the helper and the job pinned to varying CPUs"),
]


def quiet_teardown() -> None:
    """Remove every network namespace this session made (the noise cases have no teardown of
    their own; a fault case's removes its own)."""
    try:
        names = os.listdir("/run/netns")
    except OSError:
        return
    for name in names:
        if name.startswith(NETNS_PREFIX):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


atexit.register(quiet_teardown)


# Cases repeating a tested case's kind of fault, left to the benchmark (the CI subset stays
# under ~90 s).
TESTED_HERE = frozenset({s.name for s in REAL_FOURTEENTH})
QUIET_TESTED_HERE = frozenset({c.name for c in QUIET_FOURTEENTH})
BENCH_ONLY = frozenset(s.name for s in REAL_FOURTEENTH) - TESTED_HERE
QUIET_BENCH_ONLY = frozenset(c.name for c in QUIET_FOURTEENTH) - QUIET_TESTED_HERE

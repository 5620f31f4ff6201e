"""A sixty-fourth set of real programs with one real fault each: **device and driver discovery at
a GPU/RDMA job's start-up**, on the files the machine really has -- what a job's runtime does
before its first verb: walking /sys/class and /sys/devices/system, reading attributes, opening
device nodes under /dev, reading /proc files. Each run happens in a private mount namespace of its
own (``unshare --mount=FILE --propagation private``, kept by a bind mount of its nsfs file under
the case's directory) and, for the network cases, a private network namespace (``--net=FILE``)
whose sysfs is mounted afresh (so /sys/class/net shows that namespace's links). The setup builds
the namespace from outside the recording; every run's command line is the same
``nsenter --mount=B/ns/mnt [--net=B/ns/net] TOOL ...``; the bad run's namespace carries the fault:

- ``lscpu`` with /sys/devices/system/cpu hidden under an empty tmpfs: its first read there, the
  optional kernel_max (openat at the directory's fd), fails: openat ENOENT
  /sys/devices/system/cpu/kernel_max (then ``possible``, and it stops: exit 1);
- ``lsmem`` with /sys/devices/system/memory hidden under an empty tmpfs: faccessat2 ENOENT of
  block_size_bytes at the directory's fd ("This system does not support memory blocks");
- ``free`` with /proc/meminfo bind-mounted over (read-only) by a write-only sysfs attribute
  (/sys/bus/platform/uevent, mode 0200: sysfs refuses a read open even to root): openat EACCES;
- ``lsirq`` with /proc/interrupts masked the same way: openat EACCES;
- ``ifconfig t64ib0`` in a network namespace where the driver did not create t64ib0 (another
  link, t64ib1, is there): ioctl SIOCGIFFLAGS ENODEV;
- ``ip tuntap add`` with /dev/net/tun replaced by a regular file (a tmpfs over /dev/net holding an
  empty file ``tun``): open succeeds, ioctl TUNSETIFF ENOTTY;
- ``tb64-devscan`` (the set's own C program: a verbs library's readdir of /sys/class/net, each
  link's attributes, the optional device/numa_node, then its control node /dev/net/tun) with
  t64ib0's mtu bind-mounted over by the write-only attribute: openat EACCES
  /sys/class/net/t64ib0/mtu;
- ``cat /sys/class/net/t64ib0/carrier`` (a start script's link check) with t64ib0 left down (its
  peer up): the open succeeds, read EINVAL (sysfs has no carrier of a link that is down);
- ``t64-topo.py`` (the set's own python3 script: mountinfo, NUMA nodes, net devices' numa_node,
  /dev/cpu/0/cpuid) with /sys/devices/system hidden under an empty tmpfs: openat ENOENT
  /sys/devices/system/node (its listdir);
- the same script with /dev/cpu hidden (the cpuid driver's nodes gone): openat ENOENT
  /dev/cpu/0/cpuid.

The expectations are what ``strace -f`` shows for the bad run. No dummy links here (this kernel
has no ``dummy`` driver): the links are veth pairs and ifb devices.

Noise cases (``QUIET_SIXTYFOURTH``): tb64-devscan over links created in other orders and other
counts (readdir order, number of devices), ``ifconfig -a`` over counters that change, ``lscpu``
with its binary and libraries cold (evicted from the page cache) or cached, ``free`` while the page
cache changes size, ``t64-topo.py`` over other counts of virtual links (each one's optional
numa_node ENOENT), ``lsirq`` over interrupt counts that change.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .files import run_quiet, token, write_file
from .harness import PROGRAMS, PY, ROOT, NoAnomalyCase, RunTurns, Scenario, unmount_under

SRC = PROGRAMS / "t64_discovery"
TOPO = str(SRC / "t64-topo.py")
OPEN = frozenset({"openat", "open", "openat2"})
ACCESS = frozenset({"faccessat2", "faccessat", "access"})
IOCTL = frozenset({"ioctl"})
WRITE_ONLY = "/sys/bus/platform/uevent"  # mode 0200: sysfs refuses to open it for reading, root too

_TURNS = RunTurns()


def devscan_bin() -> str:
    """tb64-devscan, compiled once per session at a fixed path (the same in every run)."""
    out = ROOT / "_cc64" / "tb64-devscan"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.parent.chmod(0o755)
        tmp = out.parent / f".tb64-devscan.{os.getpid()}.tmp"
        run_quiet("gcc", "-O1", "-o", str(tmp), str(SRC / "tb64-devscan.c"))
        tmp.chmod(0o755)
        tmp.rename(out)
    return str(out)


# --- the run's namespaces -------------------------------------------------------------------------------------------
def _namespaces(base: Path, net: bool) -> None:
    """A private mount namespace (and a network namespace) kept by bind mounts of their nsfs files
    under base/ns (itself a private bind mount: an nsfs file may not sit on a shared mount)."""
    nsd = base / "ns"
    nsd.mkdir()
    run_quiet("mount", "--bind", str(nsd), str(nsd))
    run_quiet("mount", "--make-private", str(nsd))
    (nsd / "mnt").touch()
    args = ["unshare", f"--mount={nsd}/mnt", "--propagation", "private"]
    if net:
        (nsd / "net").touch()
        args.append(f"--net={nsd}/net")
    run_quiet(*args, "true")
    if net:  # a sysfs of the network namespace's own: /sys/class/net lists its links only
        _inside(base, "mount -t sysfs sysfs /sys && ip link set lo up", net=True)


def _inside(base: Path, script: str, net: bool = False) -> None:
    """Run a setup script inside the case's namespaces (never recorded)."""
    run_quiet("nsenter", f"--mount={base}/ns/mnt", *([f"--net={base}/ns/net"] if net else []), "sh", "-c", script)


def _argv(cmd: list[str], net: bool = False):
    """The recorded command line: `nsenter` into the case's namespaces, then the tool (the same line every run)."""
    return lambda b: ["/usr/bin/nsenter", f"--mount={b}/ns/mnt", *([f"--net={b}/ns/net"] if net else []),
                      *[c.replace("{b}", str(b)) for c in cmd]]


def _hide(target: str) -> str:
    return f"mount -t tmpfs -o size=64k,mode=0755 tb64-hidden {target}"


def _mask(target: str) -> str:
    """`target` bind-mounted over, read-only, by the write-only sysfs attribute."""
    return f"mount --bind {WRITE_ONLY} {target} && mount -o remount,bind,ro {target}"


def _veths(names: list[str]) -> str:
    """Shell lines creating veth pairs (name, name+'p') and setting them up, in `names`' order."""
    return " && ".join(f"ip link add {n} type veth peer name {n}p && ip link set {n} up && ip link set {n}p up"
                       for n in names)


# --- fault setups ---------------------------------------------------------------------------------------------------
def lscpu_build(base: Path, bad: bool) -> None:
    _namespaces(base, net=False)
    if bad:  # the bad node's container runtime left /sys/devices/system/cpu empty
        _inside(base, _hide("/sys/devices/system/cpu"))


def lsmem_build(base: Path, bad: bool) -> None:
    _namespaces(base, net=False)
    if bad:
        _inside(base, _hide("/sys/devices/system/memory"))


def free_build(base: Path, bad: bool) -> None:
    _namespaces(base, net=False)
    if bad:  # a sandbox profile masks /proc/meminfo with an unreadable file
        _inside(base, _mask("/proc/meminfo"))


def lsirq_build(base: Path, bad: bool) -> None:
    _namespaces(base, net=False)
    if bad:
        _inside(base, _mask("/proc/interrupts"))


def ifconfig_build(base: Path, bad: bool) -> None:
    _namespaces(base, net=True)
    # the good node's driver creates t64ib0 (and its peer); the bad node's only another port, t64ib1
    _inside(base, "ip link add t64ib1 type ifb && ip link set t64ib1 up" if bad else _veths(["t64ib0"]), net=True)


def tun_build(base: Path, bad: bool) -> None:
    _namespaces(base, net=True)
    if bad:  # an image build left a regular file where the tun control node should be
        _inside(base, f"{_hide('/dev/net')} && : > /dev/net/tun", net=True)


def devscan_build(base: Path, bad: bool) -> None:
    devscan_bin()
    _namespaces(base, net=True)
    links = _TURNS.pick(base, bad, [["t64ib0", "t64ib1"], ["t64ib1", "t64ib0"], ["t64ib0", "t64ib1"]],
                        ["t64ib0", "t64ib1"])
    script = _veths(links)
    if bad:
        script += " && " + _mask("/sys/class/net/t64ib0/mtu")
    _inside(base, script, net=True)


def carrier_build(base: Path, bad: bool) -> None:
    _namespaces(base, net=True)
    script = _veths(["t64ib0"])
    if bad:  # the port came up administratively down on the bad node: no carrier to report
        script += " && ip link set t64ib0 down"
    _inside(base, script, net=True)


def topo_node_build(base: Path, bad: bool) -> None:
    _namespaces(base, net=False)
    if bad:
        _inside(base, _hide("/sys/devices/system"))


def topo_cpuid_build(base: Path, bad: bool) -> None:
    _namespaces(base, net=False)
    if bad:  # the cpuid driver's nodes are gone
        _inside(base, _hide("/dev/cpu"))


def _sc(name, program, argv, build, probe, errno, path, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, description=description)


REAL_SIXTYFOURTH: list[Scenario] = [
    _sc("t64_lscpu_cpu_dir_hidden", "lscpu (in the job's mount namespace)", _argv(["/usr/bin/lscpu"]), lscpu_build,
        OPEN, "ENOENT", lambda b: "/sys/devices/system/cpu/kernel_max",
        description="/sys/devices/system/cpu is an empty tmpfs: openat(dirfd, kernel_max) ENOENT, then possible"),
    _sc("t64_lsmem_memory_dir_hidden", "lsmem (in the job's mount namespace)", _argv(["/usr/bin/lsmem"]),
        lsmem_build, ACCESS, "ENOENT", lambda b: "/sys/devices/system/memory/block_size_bytes",
        description="/sys/devices/system/memory is an empty tmpfs: faccessat2(dirfd, block_size_bytes) ENOENT"),
    _sc("t64_free_meminfo_masked", "free (in the job's mount namespace)", _argv(["/usr/bin/free", "-m"]),
        free_build, OPEN, "EACCES", lambda b: "/proc/meminfo",
        description="/proc/meminfo masked by a write-only sysfs attribute: openat EACCES (root too)"),
    _sc("t64_lsirq_interrupts_masked", "lsirq (in the job's mount namespace)", _argv(["/usr/bin/lsirq"]),
        lsirq_build, OPEN, "EACCES", lambda b: "/proc/interrupts",
        description="/proc/interrupts masked by a write-only sysfs attribute: openat EACCES"),
    _sc("t64_ifconfig_port_not_created", "ifconfig t64ib0 (in the job's network namespace)",
        _argv(["/usr/sbin/ifconfig", "t64ib0"], net=True), ifconfig_build, IOCTL, "ENODEV", lambda b: "*",
        description="the driver did not create t64ib0: ioctl SIOCGIFFLAGS ENODEV"),
    _sc("t64_ip_tun_node_regular_file", "ip tuntap add dev t64tap mode tap (in the job's namespaces)",
        _argv(["/usr/sbin/ip", "tuntap", "add", "dev", "t64tap", "mode", "tap"], net=True), tun_build, IOCTL,
        "ENOTTY", lambda b: "/dev/net/tun",
        description="/dev/net/tun is a regular file: the open succeeds, ioctl TUNSETIFF ENOTTY"),
    _sc("t64_devscan_mtu_attribute_masked", "tb64-devscan net /dev/net/tun (in the job's namespaces)",
        _argv([str(ROOT / "_cc64" / "tb64-devscan"), "net", "/dev/net/tun"], net=True), devscan_build, OPEN,
        "EACCES", lambda b: "/sys/class/net/t64ib0/mtu",
        description="t64ib0's mtu masked by a write-only sysfs attribute: openat EACCES"),
    _sc("t64_cat_carrier_of_link_down", "cat /sys/class/net/t64ib0/carrier (in the job's namespaces)",
        _argv(["/usr/bin/cat", "/sys/class/net/t64ib0/carrier"], net=True), carrier_build, frozenset({"read"}),
        "EINVAL", lambda b: "/sys/class/net/t64ib0/carrier",
        description="t64ib0 is down: its carrier attribute opens, the read is EINVAL"),
    _sc("t64_topo_node_dir_hidden", "python3 t64-topo.py (in the job's mount namespace)", _argv([*PY, TOPO]),
        topo_node_build, OPEN, "ENOENT", lambda b: "/sys/devices/system/node",
        description="/sys/devices/system is an empty tmpfs: the listdir of node/ is openat ENOENT"),
    _sc("t64_topo_cpuid_nodes_gone", "python3 t64-topo.py /dev/cpu (in the job's mount namespace)",
        _argv([*PY, TOPO]), topo_cpuid_build, OPEN, "ENOENT", lambda b: "/dev/cpu/0/cpuid",
        description="/dev/cpu is an empty tmpfs: openat /dev/cpu/0/cpuid ENOENT"),
]


# --- good-vs-good noise --------------------------------------------------------------------------------------------
def devscan_links_noise(base: Path, run: int) -> None:
    devscan_bin()
    _namespaces(base, net=True)
    links = [["t64ib0"], ["t64ib2", "t64ib0", "t64ib1"], ["t64ib1", "t64ib0"]][run % 3]
    script = _veths(links)
    if run % 3 == 1:
        script += " && ip link add t64eth9 type ifb"  # a down link too: no carrier read
    _inside(base, script, net=True)


def ifconfig_counters_noise(base: Path, run: int) -> None:
    _namespaces(base, net=True)
    _inside(base, _veths(["t64ib0"]), net=True)
    n = [1, 40, 7][run % 3]
    send = ("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"for i in range({n}):\n    s.sendto(b'x' * (i + 1), ('127.0.0.1', 9))\n")
    run_quiet("nsenter", f"--net={base}/ns/net", "/usr/bin/python3", "-S", "-c", send)


def _libraries(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    return [binary] + [w for line in out.splitlines() for w in line.split() if w.startswith("/")]


def lscpu_cold_noise(base: Path, run: int) -> None:
    _namespaces(base, net=False)
    for path in _libraries("/usr/bin/lscpu"):
        fd = os.open(path, os.O_RDONLY)
        try:
            if run % 3 == 0:  # cold: out of the page cache
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            else:  # cached
                while os.read(fd, 1 << 20):
                    pass
        finally:
            os.close(fd)


def free_cache_noise(base: Path, run: int) -> None:
    _namespaces(base, net=False)
    write_file(base / "cache.bin", os.urandom([64, 4096, 512][run % 3] * 1024))
    write_file(base / "note", token(4))


def topo_links_noise(base: Path, run: int) -> None:
    _namespaces(base, net=True)
    _inside(base, _veths([["t64ib0"], ["t64ib0", "t64ib1", "t64ib2"], ["t64ib1", "t64ib0"]][run % 3]), net=True)


def lsirq_noise(base: Path, run: int) -> None:
    _namespaces(base, net=False)
    write_file(base / "io.bin", os.urandom([16, 256, 64][run % 3] * 1024))
    fd = os.open(base / "io.bin", os.O_RDONLY)
    try:
        os.fsync(fd)  # a disk interrupt or two more in some runs
    finally:
        os.close(fd)


QUIET_SIXTYFOURTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t64_devscan_links_other_order_and_count",
                  _argv([str(ROOT / "_cc64" / "tb64-devscan"), "net", "/dev/net/tun"], net=True), devscan_links_noise,
                  description="1, 3+1 or 2 links (6, 7 or 4 devices with the peers), created in other orders"),
    NoAnomalyCase("t64_ifconfig_counters_change", _argv(["/usr/sbin/ifconfig", "-a"], net=True),
                  ifconfig_counters_noise, description="lo's packet counters differ: 1, 40 or 7 datagrams sent"),
    NoAnomalyCase("t64_lscpu_cold_or_cached", _argv(["/usr/bin/lscpu"]), lscpu_cold_noise,
                  description="lscpu and its libraries evicted from the page cache, or read in first"),
    NoAnomalyCase("t64_free_page_cache_changes", _argv(["/usr/bin/free", "-m", "-w"]), free_cache_noise,
                  description="the page cache grows by 64 KiB, 4 MiB or 512 KiB between runs"),
    NoAnomalyCase("t64_topo_virtual_links_without_numa_node", _argv([*PY, TOPO], net=True), topo_links_noise,
                  description="1, 3 or 2 veth pairs: each link's optional device/numa_node ENOENT, other counts"),
    NoAnomalyCase("t64_lsirq_counts_change", _argv(["/usr/bin/lsirq"]), lsirq_noise,
                  description="interrupt counts change between runs"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the namespaces' nsfs bind mounts (and with them the namespaces and
    their links) under a case's directory are undone."""
    if ROOT.exists():
        for base in ROOT.glob("t64_*"):
            unmount_under(base)
